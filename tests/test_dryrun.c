/*
 * The dry-run end to end on key files: movers and the JSON summary must
 * equal what an independent Python implementation of DESIGN §2–§3 computed
 * (tests/data/gen_dryrun_expected.py), for a slot doubling, a ring split,
 * a range split by value and logical shards moved between nodes; a key the
 * hash cannot take names its line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "dryrun/dryrun.h"

static const char *
data_path(const char *name)
{
	static char path[4096];
	const char *dir = getenv("RESHARD_TEST_DATA");

	snprintf(path, sizeof(path), "%s/%s", dir ? dir : "tests/data", name);
	return path;
}

static char *
slurp(FILE *f, size_t *len)
{
	char *buf;
	long n;

	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	*len = (size_t)n;
	return buf;
}

static struct rs_plan *
load(const char *name)
{
	struct rs_plan *plan = NULL;
	struct rs_plan_diags diags;
	struct rs_err err = {0};

	if (plan_load(data_path(name), &plan, &diags, &err) != 0) {
		plan_diags_print(&diags, name, stderr);
		fail_msg("%s", err.message);
	}
	return plan;
}

/* The flows as a set: order is not part of the contract. */
static int
flows_equal(json_t *a, json_t *b)
{
	size_t i, j;
	json_t *x, *y;

	if (json_array_size(a) != json_array_size(b))
		return 0;
	json_array_foreach(a, i, x)
	{
		int found = 0;

		json_array_foreach(b, j, y) found |= json_equal(x, y);
		if (!found)
			return 0;
	}
	return 1;
}

static void
check_skew(json_t *got, json_t *want)
{
	if (json_is_null(want)) {
		assert_true(json_is_null(got));
		return;
	}
	assert_float_equal(json_number_value(got), json_number_value(want),
	                   1e-5);
}

/* physical_before / physical_after: rows per slot table under the map
 * and under db = point % N, table = point % T, as the oracle counted. */
static void
check_physical(json_t *got, json_t *want)
{
	if (want == NULL) {
		assert_null(got);
		return;
	}
	assert_non_null(got);
	assert_true(json_equal(json_object_get(got, "databases"),
	                       json_object_get(want, "databases")));
	assert_true(json_equal(json_object_get(got, "tables_per_db"),
	                       json_object_get(want, "tables_per_db")));
	assert_true(json_equal(json_object_get(got, "rows"),
	                       json_object_get(want, "rows")));
	assert_true(json_equal(json_object_get(got, "empty"),
	                       json_object_get(want, "empty")));
	check_skew(json_object_get(got, "skew"), json_object_get(want, "skew"));
	got = json_object_get(got, "independent");
	want = json_object_get(want, "independent");
	assert_true(json_equal(json_object_get(got, "rows"),
	                       json_object_get(want, "rows")));
	assert_true(json_equal(json_object_get(got, "empty"),
	                       json_object_get(want, "empty")));
	check_skew(json_object_get(got, "skew"), json_object_get(want, "skew"));
}

static void
run_case(const char *name, const char *keys)
{
	char cfg[64], movers[64], expected_json[64];
	struct rs_plan *plan;
	struct rs_dryrun_options options = {0};
	struct rs_err err = {0};
	FILE *out = tmpfile(), *summary = tmpfile(), *want;
	char *got_movers, *want_movers, *got_summary;
	size_t got_len, want_len;
	json_t *got, *expect;
	json_error_t jerr;

	snprintf(cfg, sizeof(cfg), "%s.cfg", name);
	snprintf(movers, sizeof(movers), "%s.movers", name);
	snprintf(expected_json, sizeof(expected_json), "%s.json", name);
	plan = load(cfg);
	options.keys_path = data_path(keys);
	options.json = 1;
	if (dryrun_run_keyfile(plan, &options, out, summary, &err) != 0)
		fail_msg("dryrun_run: %s", err.message);

	got_movers = slurp(out, &got_len);
	want = fopen(data_path(movers), "rb");
	assert_non_null(want);
	want_movers = slurp(want, &want_len);
	fclose(want);
	assert_true(want_len > 1000); /* the case does move keys */
	assert_int_equal(got_len, want_len);
	assert_memory_equal(got_movers, want_movers, want_len);

	got_summary = slurp(summary, &got_len);
	got = json_loads(got_summary, 0, &jerr);
	assert_non_null(got);
	expect = json_load_file(data_path(expected_json), 0, &jerr);
	assert_non_null(expect);
	assert_true(json_equal(json_object_get(got, "keys"),
	                       json_object_get(expect, "keys")));
	assert_true(json_equal(json_object_get(got, "moved"),
	                       json_object_get(expect, "moved")));
	assert_true(json_equal(json_object_get(got, "before"),
	                       json_object_get(expect, "before")));
	assert_true(json_equal(json_object_get(got, "after"),
	                       json_object_get(expect, "after")));
	assert_true(flows_equal(json_object_get(got, "flows"),
	                        json_object_get(expect, "flows")));
	check_skew(json_object_get(got, "skew_before"),
	           json_object_get(expect, "skew_before"));
	check_skew(json_object_get(got, "skew_after"),
	           json_object_get(expect, "skew_after"));
	assert_null(json_object_get(got, "top")); /* not asked for */
	assert_null(json_object_get(got, "hot"));
	check_physical(json_object_get(got, "physical_before"),
	               json_object_get(expect, "physical_before"));
	check_physical(json_object_get(got, "physical_after"),
	               json_object_get(expect, "physical_after"));

	json_decref(got);
	json_decref(expect);
	free(got_movers);
	free(want_movers);
	free(got_summary);
	fclose(out);
	fclose(summary);
	plan_free(plan);
}

static void
test_slots_doubling(void **state)
{
	(void)state;
	run_case("slots-2x", "keys.txt");
}

static void
test_ring_split(void **state)
{
	(void)state;
	run_case("ring-4to5", "keys.txt");
}

static void
test_slots_10x100_tables(void **state)
{
	(void)state;
	run_case("slots-10x100", "keys.txt");
}

/* The summary of NAME.cfg over KEYS with --top 1, as JSON or text. */
static char *
summary_of(const char *name, const char *keys, int json)
{
	char cfg[64];
	struct rs_plan *plan;
	struct rs_dryrun_options options = {0};
	struct rs_err err = {0};
	FILE *out = tmpfile();
	char *text;
	size_t len;

	snprintf(cfg, sizeof(cfg), "%s.cfg", name);
	plan = load(cfg);
	options.keys_path = data_path(keys);
	options.json = json;
	options.summary_only = 1;
	options.top = 1;
	if (dryrun_run_keyfile(plan, &options, out, stderr, &err) != 0)
		fail_msg("dryrun_run: %s", err.message);
	text = slurp(out, &len);
	fclose(out);
	plan_free(plan);
	return text;
}

/* "hot" lists every key above 5% of its shard under to, not only the
 * --top ones, as the oracle found them. */
static void
check_hot(const char *name, const char *keys)
{
	char expected_json[64];
	char *text = summary_of(name, keys, 1);
	json_error_t jerr;
	json_t *got = json_loads(text, 0, &jerr), *root, *expect, *g, *w;
	size_t i;

	snprintf(expected_json, sizeof(expected_json), "%s.json", name);
	root = json_load_file(data_path(expected_json), 0, &jerr);
	assert_non_null(got);
	assert_non_null(root);
	g = json_object_get(got, "hot");
	w = json_object_get(root, "hot");
	assert_int_equal(json_array_size(g), json_array_size(w));
	json_array_foreach(w, i, expect)
	{
		json_t *one = json_array_get(g, i);

		assert_true(json_equal(json_object_get(one, "key"),
		                       json_object_get(expect, "key")));
		assert_true(json_equal(json_object_get(one, "rows"),
		                       json_object_get(expect, "rows")));
		assert_true(json_equal(json_object_get(one, "shard"),
		                       json_object_get(expect, "shard")));
		assert_float_equal(
			json_number_value(json_object_get(one, "share")),
			json_number_value(json_object_get(expect, "share")),
			1e-5);
	}
	json_decref(got);
	json_decref(root);
	free(text);
}

static void
test_hot_keys_flagged(void **state)
{
	char *text;

	(void)state;
	/* Two hot keys, one of them outside --top 1. */
	check_hot("slots-10x100", "keys.txt");
	text = summary_of("slots-10x100", "keys.txt", 0);
	assert_non_null(strstr(text, "hot keys (one key alone holds more "
	                             "than 5% of its shard's rows under to)"));
	assert_non_null(strstr(text, "customer-hot                       "
	                             "250 rows  37.2% of db3 (672 rows)"));
	assert_non_null(strstr(text, "customer-warm"));
	assert_non_null(strstr(text, "directory override (overrides in "
	                             "the map)"));
	assert_non_null(strstr(text, "computed suffix"));
	/* The oracle's figures: 900 of 1,000 tables empty under from. */
	assert_non_null(strstr(text, "would leave 900 of the 1,000 tables "
	                             "under from empty, as 10 and 100 share "
	                             "the factor 10"));
	assert_non_null(strstr(text, "would leave 1,900 of the 2,000 tables "
	                             "under to empty"));
	free(text);
}

static void
test_no_hot_key(void **state)
{
	char *text;

	(void)state;
	check_hot("ranges-ids", "ids.txt"); /* the oracle finds none */
	text = summary_of("ranges-ids", "ids.txt", 0);
	assert_non_null(strstr(text, "top 1 keys by rows"));
	assert_null(strstr(text, "hot keys"));
	assert_null(strstr(text, "rows per physical table")); /* no slots */
	free(text);
}

static void
test_ranges_by_value(void **state)
{
	(void)state;
	run_case("ranges-ids", "ids.txt");
}

/* Logical shards 0-4095 taken from ids' bits, moved in ranges between
 * four nodes; a doubling of logical shards onto replicas; the modulo
 * form over hashed keys. */
static void
test_logical_ranges_move(void **state)
{
	(void)state;
	run_case("logical-4096", "logical-ids.txt");
}

static void
test_logical_doubling(void **state)
{
	(void)state;
	run_case("logical-2x", "logical-ids.txt");
}

static void
test_logical_modulo(void **state)
{
	(void)state;
	run_case("logical-mod", "keys.txt");
}

static void
test_summary_only_with_top(void **state)
{
	struct rs_plan *plan = load("ring-4to5.cfg");
	struct rs_dryrun_options options = {0};
	struct rs_err err = {0};
	FILE *out = tmpfile(), *summary = tmpfile();
	char *text;
	size_t len;
	json_t *got, *top;
	json_error_t jerr;

	(void)state;
	options.keys_path = data_path("keys.txt");
	options.json = 1;
	options.summary_only = 1;
	options.top = 2;
	assert_int_equal(dryrun_run_keyfile(plan, &options, out, summary, &err),
	                 0);
	text = slurp(summary, &len);
	assert_int_equal(len, 0); /* everything went to OUT */
	free(text);
	text = slurp(out, &len);
	got = json_loads(text, 0, &jerr); /* only one JSON object */
	assert_non_null(got);
	top = json_object_get(got, "top");
	assert_int_equal(json_array_size(top), 2);
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(top, 0), "key")),
	                    "customer-hot");
	assert_int_equal(json_integer_value(json_object_get(
				 json_array_get(top, 0), "rows")),
	                 250);
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(top, 1), "key")),
	                    "customer-warm");
	json_decref(got);
	free(text);
	fclose(out);
	fclose(summary);
	plan_free(plan);
}

static void
test_identity_rejects_text_key_with_line(void **state)
{
	struct rs_plan *plan = load("ranges-ids.cfg");
	struct rs_dryrun_options options = {0};
	struct rs_err err = {0};
	FILE *keys = fopen("/tmp/reshard-test-ids.txt", "w");
	FILE *out = tmpfile(), *summary = tmpfile();

	(void)state;
	fputs("12\n\n7\ncustomer-9\n3\n", keys);
	fclose(keys);
	options.keys_path = "/tmp/reshard-test-ids.txt";
	assert_int_equal(dryrun_run_keyfile(plan, &options, out, summary, &err),
	                 RS_EKEY);
	assert_non_null(strstr(err.message, ":4: key 'customer-9'"));
	assert_non_null(strstr(err.message, "identity"));
	remove("/tmp/reshard-test-ids.txt");
	fclose(out);
	fclose(summary);
	plan_free(plan);
}

static void
test_unknown_table(void **state)
{
	struct rs_plan *plan = load("slots-2x.cfg");
	struct rs_dryrun_options options = {0};
	struct rs_err err = {0};

	(void)state;
	options.keys_path = data_path("keys.txt");
	options.table = "invoices";
	assert_int_equal(
		dryrun_run_keyfile(plan, &options, stdout, stderr, &err),
		RS_EUSAGE);
	assert_non_null(strstr(err.message, "invoices"));
	plan_free(plan);
}

/* Mover lines name each owner by its shard (and slot table): with maps that
 * name their shards in another order than `shards`, and skip some, each
 * line must still name the owners map_owner finds.  The shape is also the
 * one that took 46 s and 5.8 GB when names were made for every shard of
 * the plan times every slot table: 1024 shards, and a slots map of one
 * database with 65,536 tables (to one of 1024 databases with one table
 * each: both maps name index 0 t_0). */
static void
test_owner_names_follow_the_maps(void **state)
{
	const char *cfg_path = "/tmp/reshard-test-names.cfg";
	const char *keys_path = "/tmp/reshard-test-names.txt";
	FILE *cfg = fopen(cfg_path, "w"), *keys = fopen(keys_path, "w");
	FILE *out = tmpfile(), *summary = tmpfile();
	struct rs_plan *plan = NULL;
	struct rs_plan_diags diags;
	struct rs_dryrun_options options = {0};
	struct rs_err err = {0};
	char *got, *want, *at;
	size_t got_len;

	(void)state;
	assert_non_null(cfg);
	assert_non_null(keys);
	fputs("version = 1; name = \"names\";\n"
	      "tables = ( { name = \"t\"; key = \"k\"; } );\nshards = (\n",
	      cfg);
	for (int i = 0; i < 1024; i++)
		fprintf(cfg,
		        "{ name = \"s%d\"; url = \"sqlite:///tmp/s.db\"; }%s\n",
		        i, i < 1023 ? "," : "");
	fputs(");\nfrom = { map = \"slots\"; databases = 1; tables_per_db = "
	      "65536; nodes = [\"s7\"]; };\nto = { map = \"slots\"; "
	      "databases = 1024; tables_per_db = 1; nodes = [",
	      cfg);
	for (int i = 1023; i >= 0; i--)
		fprintf(cfg, "\"s%d\"%s", i, i > 0 ? ", " : "");
	fputs("]; };\nstrategy = \"split\";\n", cfg);
	fclose(cfg);
	for (int i = 0; i < 3000; i++)
		fprintf(keys, "key-%d\n", i);
	fclose(keys);
	if (plan_load(cfg_path, &plan, &diags, &err) != 0) {
		plan_diags_print(&diags, cfg_path, stderr);
		fail_msg("%s", err.message);
	}

	options.keys_path = keys_path;
	if (dryrun_run_keyfile(plan, &options, out, summary, &err) != 0)
		fail_msg("dryrun_run: %s", err.message);
	got = slurp(out, &got_len);
	size_t size = 3000 * 64;

	want = malloc(size);
	assert_non_null(want);
	at = want;
	for (int i = 0; i < 3000; i++) {
		char key[32];
		uint64_t point;
		struct rs_owner from, to;

		snprintf(key, sizeof(key), "key-%d", i);
		assert_int_equal(
			hash_point(plan->hash, key, strlen(key), &point), 0);
		from = map_owner(plan->from, point);
		to = map_owner(plan->to, point);
		assert_int_equal(from.shard, 7);
		int len = snprintf(at, size - (size_t)(at - want),
		                   "%s\ts7.t_%d\t%s.t_%d\n", key, from.table,
		                   plan->shards[to.shard].name, to.table);

		assert_true(len > 0 &&
		            (size_t)len < size - (size_t)(at - want));
		at += len;
	}
	assert_int_equal(got_len, (size_t)(at - want));
	assert_memory_equal(got, want, got_len);
	free(got);
	free(want);
	fclose(out);
	fclose(summary);
	plan_free(plan);
	remove(cfg_path);
	remove(keys_path);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slots_doubling),
		cmocka_unit_test(test_ring_split),
		cmocka_unit_test(test_slots_10x100_tables),
		cmocka_unit_test(test_hot_keys_flagged),
		cmocka_unit_test(test_no_hot_key),
		cmocka_unit_test(test_ranges_by_value),
		cmocka_unit_test(test_logical_ranges_move),
		cmocka_unit_test(test_logical_doubling),
		cmocka_unit_test(test_logical_modulo),
		cmocka_unit_test(test_summary_only_with_top),
		cmocka_unit_test(test_identity_rejects_text_key_with_line),
		cmocka_unit_test(test_unknown_table),
		cmocka_unit_test(test_owner_names_follow_the_maps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
