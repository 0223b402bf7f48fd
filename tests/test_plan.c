/*
 * Plan loading and validation: one test per kind of mistake, each checking
 * the message and the line it points at, plus plans that must load.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "plan/plan.h"

static char plan_path[64];

/* Write TEXT to a fresh plan file and load it. */
static int
load_text(const char *text, struct rs_plan **plan, struct rs_plan_diags *diags)
{
	struct rs_err err = {0};
	FILE *f;
	int fd;

	snprintf(plan_path, sizeof(plan_path), "%s",
	         "/tmp/reshard-test-plan-XXXXXX");
	fd = mkstemp(plan_path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fputs(text, f);
	fclose(f);
	int rc = plan_load(plan_path, plan, diags, &err);
	unlink(plan_path);
	return rc;
}

/* The common head of a valid slots doubling plan, lines 1–9. */
#define HEAD                                                                   \
	"version = 1;\n"                                                       \
	"name = \"t\";\n"                                                      \
	"tables = ( { name = \"orders\"; key = \"customer_id\"; } );\n"        \
	"shards = (\n"                                                         \
	"  { name = \"db0\"; url = \"sqlite:///tmp/db0.db\"; replica = "       \
	"\"db2\"; },\n"                                                        \
	"  { name = \"db1\"; url = \"sqlite:///tmp/db1.db\"; replica = "       \
	"\"db3\"; },\n"                                                        \
	"  { name = \"db2\"; url = \"sqlite:///tmp/db2.db\"; },\n"             \
	"  { name = \"db3\"; url = \"sqlite:///tmp/db3.db\"; }\n"              \
	");\n"

#define FROM_SLOTS                                                             \
	"from = { map = \"slots\"; databases = 2; tables_per_db = 4; nodes = " \
	"[\"db0\", \"db1\"]; };\n"
#define TO_SLOTS                                                               \
	"to = { map = \"slots\"; databases = 4; tables_per_db = 4; nodes = "   \
	"[\"db0\", \"db1\", \"db2\", \"db3\"]; };\n"

/* Expect exactly one mistake, at LINE, whose message contains NEEDLE. */
static void
expect_one(const char *text, int line, const char *needle)
{
	struct rs_plan *plan = NULL;
	struct rs_plan_diags diags;
	int rc = load_text(text, &plan, &diags);

	assert_int_equal(rc, RS_EPLAN);
	assert_null(plan);
	if (diags.n != 1) {
		plan_diags_print(&diags, "plan", stderr);
		fail_msg("expected one mistake, got %d", diags.n);
	}
	if (strstr(diags.items[0].message, needle) == NULL)
		fail_msg("message '%s' lacks '%s'", diags.items[0].message,
		         needle);
	assert_int_equal(diags.items[0].line, line);
	plan_diags_clear(&diags);
}

/* One mistake a test expects: its line and its whole message. */
struct want {
	int line;
	const char *message;
};

/* Expect exactly the mistakes WANT (N of them), in the order reported. */
static void
expect_all(const char *text, const struct want *want, int n)
{
	struct rs_plan *plan = NULL;
	struct rs_plan_diags diags;
	int rc = load_text(text, &plan, &diags);
	int same = rc == RS_EPLAN && diags.n == n;

	for (int i = 0; same && i < n; i++)
		same = diags.items[i].line == want[i].line &&
		       strcmp(diags.items[i].message, want[i].message) == 0;
	if (!same) {
		fprintf(stderr, "expected:\n");
		for (int i = 0; i < n; i++)
			fprintf(stderr, "plan:%d: %s\n", want[i].line,
			        want[i].message);
		fprintf(stderr, "got (rc %d):\n", rc);
		plan_diags_print(&diags, "plan", stderr);
		plan_free(plan);
		plan_diags_clear(&diags);
		fail_msg("the mistakes differ");
	}
	assert_null(plan);
	plan_diags_clear(&diags);
}

#define EXPECT_ALL(text, ...)                                                  \
	expect_all((text), (const struct want[]){__VA_ARGS__},                 \
	           (int)(sizeof((const struct want[]){__VA_ARGS__}) /          \
	                 sizeof(struct want)))

/* TEXT must load; returns the plan (free it). */
static struct rs_plan *
expect_loads(const char *text)
{
	struct rs_plan *plan = NULL;
	struct rs_plan_diags diags;
	int rc = load_text(text, &plan, &diags);

	if (rc != 0) {
		plan_diags_print(&diags, "plan", stderr);
		fail_msg("the plan was refused (%d mistakes)", diags.n);
	}
	assert_non_null(plan);
	return plan;
}

/* TEXT must load: a plan with a suggestion applied. */
static void
expect_valid(const char *text)
{
	plan_free(expect_loads(text));
}

static void
test_valid_doubling_loads_with_defaults(void **state)
{
	struct rs_plan *plan = NULL;
	struct rs_plan_diags diags;

	(void)state;
	assert_int_equal(load_text(HEAD FROM_SLOTS TO_SLOTS
	                           "strategy = \"doubling\";\n",
	                           &plan, &diags),
	                 0);
	assert_int_equal(diags.n, 0);
	assert_non_null(plan);
	assert_string_equal(plan->name, "t");
	assert_int_equal(plan->hash, RS_HASH_SHA256_64);
	assert_int_equal(plan->n_shards, 4);
	assert_int_equal(plan->shards[0].replica, 2);
	assert_int_equal(plan->shards[2].replica, -1);
	assert_int_equal(plan->options.batch_rows, 5000);
	assert_int_equal(plan->options.parallel, 4);
	assert_int_equal(plan->options.lock_timeout_ms, 2000);
	assert_int_equal(plan->options.operation_timeout_seconds, 60);
	assert_string_equal(plan->journal, "/tmp/t.journal");
	assert_string_equal(plan->publish_file, "/tmp/t.routing.cfg");
	assert_int_equal(plan->strategy, RS_STRATEGY_DOUBLING);
	plan_free(plan);
}

static void
test_syntax_error_has_line(void **state)
{
	(void)state;
	expect_one("version = 1;\nname = \"t\";\ntables = ( { name = ; } );\n",
	           3, "syntax");
}

static void
test_unknown_setting_suggests(void **state)
{
	(void)state;
	expect_one(HEAD FROM_SLOTS TO_SLOTS
	           "strategy = \"doubling\";\n"
	           "options = {\n  batch_row = 100;\n};\n",
	           14, "did you mean 'batch_rows'");
}

static void
test_wrong_type_names_expected_type(void **state)
{
	(void)state;
	expect_one(HEAD FROM_SLOTS TO_SLOTS
	           "strategy = \"doubling\";\n"
	           "options = { parallel = \"4\"; };\n",
	           13, "'parallel' must be an integer");
}

static void
test_out_of_range(void **state)
{
	(void)state;
	expect_one(HEAD FROM_SLOTS TO_SLOTS "strategy = \"doubling\";\n"
	                                    "options = { parallel = 0; };\n",
	           13, "between 1 and");
}

/* create_tables, keep_guard, allow_cascades: false unless set, true or
 * false without quotes. */
static void
test_create_tables(void **state)
{
	struct rs_plan *plan = NULL;
	struct rs_plan_diags diags;

	(void)state;
	assert_int_equal(load_text(HEAD FROM_SLOTS TO_SLOTS
	                           "strategy = \"split\";\n"
	                           "options = { create_tables = true; };\n",
	                           &plan, &diags),
	                 0);
	assert_int_equal(plan->options.create_tables, 1);
	plan_free(plan);
	assert_int_equal(load_text(HEAD FROM_SLOTS TO_SLOTS
	                           "strategy = \"split\";\n",
	                           &plan, &diags),
	                 0);
	assert_int_equal(plan->options.create_tables, 0);
	assert_int_equal(plan->options.keep_guard, 0);
	assert_int_equal(plan->options.allow_cascades, 0);
	plan_free(plan);
	assert_int_equal(load_text(HEAD FROM_SLOTS TO_SLOTS
	                           "strategy = \"split\";\n"
	                           "options = { allow_cascades = true; };\n",
	                           &plan, &diags),
	                 0);
	assert_int_equal(plan->options.allow_cascades, 1);
	plan_free(plan);
	assert_int_equal(load_text(HEAD FROM_SLOTS TO_SLOTS
	                           "strategy = \"doubling\";\n"
	                           "options = { keep_guard = true; };\n",
	                           &plan, &diags),
	                 0);
	assert_int_equal(plan->options.keep_guard, 1);
	plan_free(plan);
	expect_one(HEAD FROM_SLOTS TO_SLOTS
	           "strategy = \"split\";\n"
	           "options = { create_tables = \"yes\"; };\n",
	           13, "'create_tables' must be true or false without quotes");
}

/* The operation bound: whole seconds from 1 to a day, the line named. */
static void
test_operation_timeout(void **state)
{
	struct rs_plan *plan = NULL;
	struct rs_plan_diags diags;

	(void)state;
	assert_int_equal(load_text(HEAD FROM_SLOTS TO_SLOTS
	                           "strategy = \"doubling\";\n"
	                           "options = { operation_timeout_seconds = "
	                           "5; };\n",
	                           &plan, &diags),
	                 0);
	assert_int_equal(plan->options.operation_timeout_seconds, 5);
	plan_free(plan);
	expect_one(HEAD FROM_SLOTS TO_SLOTS
	           "strategy = \"doubling\";\n"
	           "options = {\n  operation_timeout_seconds = 0;\n};\n",
	           14,
	           "'operation_timeout_seconds' is 0; it must be between 1 "
	           "and 86400");
	expect_one(HEAD FROM_SLOTS TO_SLOTS
	           "strategy = \"doubling\";\n"
	           "options = { operation_timeout_seconds = 86401; };\n",
	           13, "between 1 and 86400");
	expect_one(HEAD FROM_SLOTS TO_SLOTS
	           "strategy = \"doubling\";\n"
	           "options = { operation_timeout_seconds = \"60\"; };\n",
	           13, "'operation_timeout_seconds' must be an integer");
	expect_one(HEAD FROM_SLOTS TO_SLOTS
	           "strategy = \"doubling\";\n"
	           "options = { operation_timeout = 60; };\n",
	           13, "did you mean 'operation_timeout_seconds'");
}

static void
test_missing_required(void **state)
{
	(void)state;
	expect_one(HEAD FROM_SLOTS TO_SLOTS, 1, "has no 'strategy'");
}

static void
test_unknown_hash_suggests(void **state)
{
	(void)state;
	expect_one(HEAD "hash = \"sha256\";\n" FROM_SLOTS TO_SLOTS
	                "strategy = \"doubling\";\n",
	           10, "did you mean 'sha256_64'");
}

static void
test_unknown_map_kind(void **state)
{
	(void)state;
	expect_one(HEAD "from = { map = \"rng\"; vnodes = 10; nodes = "
	                "[\"db0\", \"db1\"]; };\n" TO_SLOTS
	                "strategy = \"split\";\n",
	           10, "did you mean 'ring'");
}

/* The unused shard is reported with the map's mistakes, and the shard
 * suggested for the typo is one the list does not hold yet (db0 would be
 * listed twice). */
static void
test_node_not_a_shard(void **state)
{
	(void)state;
	EXPECT_ALL(HEAD FROM_SLOTS
	           "to = { map = \"slots\"; databases = 4; tables_per_db = 4; "
	           "nodes = [\"db0\", \"db1\", \"db2\", \"db4\"]; };\n"
	           "strategy = \"split\";\n",
	           {8, "shard 'db3' is in neither the from nor the to map; "
	               "add it to a map or remove it"},
	           {11, "node 'db4' is not a shard; did you mean 'db3'?"});
	expect_valid(HEAD FROM_SLOTS TO_SLOTS "strategy = \"split\";\n");
}

/* A shard that is not a group has no name: a typo elsewhere is matched
 * against the others (this crashed), and it is not called unused. */
static void
test_shard_not_a_group_with_a_typo(void **state)
{
	(void)state;
	EXPECT_ALL("version = 1;\nname = \"t\";\n"
	           "tables = ( { name = \"orders\"; key = \"id\"; } );\n"
	           "shards = ( { name = \"a\"; url = \"sqlite:///tmp/a.db\"; "
	           "},\n  5 );\n"
	           "from = { map = \"modulo\"; nodes = [\"a\"]; };\n"
	           "to = { map = \"modulo\"; nodes = [\"a\", \"bb\"]; };\n"
	           "strategy = \"split\";\n",
	           {5, "each shard must be a group, e.g. { name = \"db0\"; url "
	               "= \"sqlite:///srv/db0.db\"; }"},
	           {7, "node 'bb' is not a shard; the shards are a"});
}

/* A map's mistakes and the unused-shard check in one run. */
static void
test_unused_shard_with_map_mistakes(void **state)
{
	(void)state;
	EXPECT_ALL(HEAD FROM_SLOTS
	           "to = { map = \"modulo\"; vnodes = 10; nodes = [\"db0\", "
	           "\"db1\", \"db2\"]; };\n"
	           "strategy = \"split\";\n",
	           {8, "shard 'db3' is in neither the from nor the to map; "
	               "add it to a map or remove it"},
	           {11, "'vnodes' is not a setting of a modulo map; remove "
	                "it"});
	/* A map that cannot compile, a misspelt option and an unused shard:
	 * each once, in one run. */
	EXPECT_ALL("version = 1;\nname = \"t\";\nhash = \"identity\";\n"
	           "tables = ( { name = \"orders\"; key = \"id\"; } );\n"
	           "shards = (\n"
	           "  { name = \"a\"; url = \"sqlite:///tmp/a.db\"; },\n"
	           "  { name = \"b\"; url = \"sqlite:///tmp/b.db\"; },\n"
	           "  { name = \"c\"; url = \"sqlite:///tmp/c.db\"; }\n"
	           ");\n"
	           "from = { map = \"modulo\"; nodes = [\"a\"]; };\n"
	           "to = { map = \"ring\"; vnodes = 5; nodes = [\"a\", "
	           "\"b\"]; };\n"
	           "strategy = \"split\";\n"
	           "options = { batch_row = 100; };\n",
	           {8, "shard 'c' is in neither the from nor the to map; add "
	               "it to a map or remove it"},
	           {11, "the ring cannot place node a: hash identity cannot "
	                "take its point name \"a#0\""},
	           {13, "unknown setting 'batch_row' in options; did you mean "
	                "'batch_rows'?"});
}

/* A plan without `from`, `to` or both says so, suggesting a map of the
 * other's kind with the plan's own shards; each suggestion loads. */
static void
test_missing_from_or_to(void **state)
{
	(void)state;
	EXPECT_ALL(HEAD TO_SLOTS "strategy = \"doubling\";\n",
	           {1, "the plan has no 'from', the map that places rows now; "
	               "add from = { map = \"slots\"; databases = 2; "
	               "tables_per_db = 4; nodes = [\"db0\", \"db1\"]; };"});
	expect_valid(
		HEAD
		"from = { map = \"slots\"; databases = 2; "
		"tables_per_db = 4; nodes = [\"db0\", \"db1\"]; };\n" TO_SLOTS
		"strategy = \"doubling\";\n");
	EXPECT_ALL(HEAD FROM_SLOTS "strategy = \"doubling\";\n",
	           {1, "the plan has no 'to', the map that places rows once "
	               "resharded; add to = { map = \"slots\"; databases = 4; "
	               "tables_per_db = 4; nodes = [\"db0\", \"db1\", "
	               "\"db2\", \"db3\"]; };"});
	expect_valid(
		HEAD FROM_SLOTS
		"to = { map = \"slots\"; databases = 4; tables_per_db = 4; "
		"nodes = [\"db0\", \"db1\", \"db2\", \"db3\"]; };\n"
		"strategy = \"doubling\";\n");
	EXPECT_ALL(HEAD "strategy = \"doubling\";\n",
	           {1, "the plan has no 'from', the map that places rows now; "
	               "add from = { map = \"modulo\"; nodes = [\"db0\", "
	               "\"db1\"]; };"},
	           {1, "the plan has no 'to', the map that places rows once "
	               "resharded; add to = { map = \"modulo\"; nodes = "
	               "[\"db0\", \"db1\", \"db2\", \"db3\"]; };"});
	expect_valid(
		HEAD
		"from = { map = \"modulo\"; nodes = [\"db0\", \"db1\"]; };\n"
		"to = { map = \"modulo\"; nodes = [\"db0\", \"db1\", "
		"\"db2\", \"db3\"]; };\n"
		"strategy = \"doubling\";\n");
	/* Without shards too. */
	EXPECT_ALL("version = 1;\nname = \"t\";\n"
	           "tables = ( { name = \"orders\"; key = \"id\"; } );\n"
	           "to = { map = \"modulo\"; nodes = [\"db0\", \"db1\"]; };\n"
	           "strategy = \"split\";\n",
	           {1, "the plan has no 'shards'; add shards = ( { name = "
	               "\"db0\"; url = \"postgresql://app@host:5432/app\"; } "
	               ");"},
	           {1, "the plan has no 'from', the map that places rows now; "
	               "add from = { map = \"modulo\"; nodes = [\"db0\", "
	               "\"db1\"]; };"});
}

/* A suggested value is one the plan takes. */
static void
test_suggested_values_are_valid(void **state)
{
	(void)state;
	EXPECT_ALL(HEAD
	           "from = { map = \"slots\"; databases = \"2\"; "
	           "tables_per_db = 4; nodes = [\"db0\", \"db1\"]; };\n"
	           "to = { map = \"ring\"; vnodes = \"10\"; nodes = [\"db0\", "
	           "\"db1\", \"db2\", \"db3\"]; };\n"
	           "strategy = \"split\";\n",
	           {10, "'databases' must be an integer without quotes, e.g. "
	                "databases = 2;"},
	           {11, "'vnodes' must be an integer without quotes, e.g. "
	                "vnodes = 100;"});
	expect_valid(HEAD FROM_SLOTS TO_SLOTS "strategy = \"split\";\n");
	expect_valid(HEAD
	             "from = { map = \"ring\"; vnodes = 100; nodes = [\"db0\", "
	             "\"db1\"]; };\n"
	             "to = { map = \"ring\"; vnodes = 100; nodes = [\"db0\", "
	             "\"db1\", \"db2\", \"db3\"]; };\n"
	             "strategy = \"split\";\n");
	EXPECT_ALL(HEAD "from = { map = \"slots\"; tables_per_db = 4; nodes = "
	                "[\"db0\", \"db1\"]; };\n" TO_SLOTS
	                "strategy = \"doubling\";\n",
	           {10,
	            "a slots map needs 'databases'; add databases = 2; (one "
	            "per node)"});
}

static void
test_setting_of_other_map_kind(void **state)
{
	(void)state;
	expect_one(HEAD FROM_SLOTS
	           "to = { map = \"slots\"; databases = 4; tables_per_db = 4;\n"
	           "  vnodes = 10; nodes = [\"db0\", \"db1\", \"db2\", "
	           "\"db3\"]; };\n"
	           "strategy = \"doubling\";\n",
	           12, "'vnodes' is not a setting of a slots map");
}

static void
test_slots_node_count(void **state)
{
	(void)state;
	expect_one(HEAD FROM_SLOTS
	           "to = { map = \"slots\"; databases = 3; tables_per_db = 4; "
	           "nodes = [\"db0\", \"db1\", \"db2\", \"db3\"]; };\n"
	           "strategy = \"split\";\n",
	           11, "needs 3 nodes");
}

static void
test_ranges_must_increase_and_end_at_max(void **state)
{
	struct rs_plan *plan = NULL;
	struct rs_plan_diags diags;

	(void)state;
	assert_int_equal(load_text(HEAD FROM_SLOTS
	                           "to = { map = \"ranges\"; ranges = (\n"
	                           "  { end = \"0x8000\"; node = \"db0\"; },\n"
	                           "  { end = \"0x7000\"; node = \"db1\"; },\n"
	                           "  { end = \"0x9000\"; node = \"db2\"; },\n"
	                           "  { end = \"12q\"; node = \"db3\"; }\n"
	                           "); };\n"
	                           "strategy = \"split\";\n",
	                           &plan, &diags),
	                 RS_EPLAN);
	assert_int_equal(diags.n, 2);
	assert_int_equal(diags.items[0].line, 13);
	assert_non_null(strstr(diags.items[0].message, "strictly increasing"));
	assert_int_equal(diags.items[1].line, 15);
	assert_non_null(strstr(diags.items[1].message, "\"max\""));
	plan_diags_clear(&diags);

	expect_one(HEAD FROM_SLOTS "to = { map = \"ranges\"; ranges = (\n"
	                           "  { end = \"0x8000\"; node = \"db0\"; },\n"
	                           "  { end = \"0x9000\"; node = \"db1\"; },\n"
	                           "  { end = 50000; node = \"db2\"; },\n"
	                           "  { end = \"0xffff\"; node = \"db3\"; }\n"
	                           "); };\n"
	                           "strategy = \"split\";\n",
	           15, "must end at \"max\"");
}

static void
test_bad_table_format(void **state)
{
	(void)state;
	expect_one(HEAD FROM_SLOTS
	           "to = { map = \"slots\"; databases = 4; tables_per_db = 4; "
	           "table_format = \"%s_%x\";\n"
	           "  nodes = [\"db0\", \"db1\", \"db2\", \"db3\"]; };\n"
	           "strategy = \"doubling\";\n",
	           11, "table_format");
}

static void
test_duplicate_shard(void **state)
{
	(void)state;
	expect_one("version = 1;\nname = \"t\";\n"
	           "tables = ( { name = \"orders\"; key = \"id\"; } );\n"
	           "shards = (\n"
	           "  { name = \"a\"; url = \"sqlite:///tmp/a.db\"; },\n"
	           "  { name = \"a\"; url = \"sqlite:///tmp/b.db\"; }\n"
	           ");\n"
	           "from = { map = \"modulo\"; nodes = [\"a\"]; };\n"
	           "to = { map = \"modulo\"; nodes = [\"a\"]; };\n"
	           "strategy = \"split\";\n",
	           6, "listed twice (first on line 5)");
}

static void
test_unknown_replica(void **state)
{
	(void)state;
	expect_one("version = 1;\nname = \"t\";\n"
	           "tables = ( { name = \"orders\"; key = \"id\"; } );\n"
	           "shards = (\n"
	           "  { name = \"a\"; url = \"sqlite:///tmp/a.db\"; replica = "
	           "\"bb\"; },\n"
	           "  { name = \"b\"; url = \"sqlite:///tmp/b.db\"; }\n"
	           ");\n"
	           "from = { map = \"modulo\"; nodes = [\"a\"]; };\n"
	           "to = { map = \"modulo\"; nodes = [\"a\", \"b\"]; };\n"
	           "strategy = \"split\";\n",
	           5, "replica 'bb' is not a shard; did you mean 'b'");
}

static void
test_bad_url_scheme(void **state)
{
	(void)state;
	expect_one("version = 1;\nname = \"t\";\n"
	           "tables = ( { name = \"orders\"; key = \"id\"; } );\n"
	           "shards = (\n"
	           "  { name = \"a\";\n    url = \"http://x\"; }\n"
	           ");\n"
	           "from = { map = \"modulo\"; nodes = [\"a\"]; };\n"
	           "to = { map = \"modulo\"; nodes = [\"a\"]; };\n"
	           "strategy = \"split\";\n",
	           6, "must start with postgresql://");
}

static void
test_unused_shard(void **state)
{
	(void)state;
	expect_one(HEAD FROM_SLOTS
	           "to = { map = \"slots\"; databases = 3; tables_per_db = 4; "
	           "nodes = [\"db0\", \"db1\", \"db2\"]; };\n"
	           "strategy = \"split\";\n",
	           8, "shard 'db3' is in neither");
}

static void
test_doubling_to_a_non_replica(void **state)
{
	(void)state;
	/* db0's keys that move go to db3, but db0's replica is db2, and
	 * db1's go to db2: both named, each at its shard, with the nodes
	 * that would be right. */
	EXPECT_ALL(
		HEAD FROM_SLOTS
		"to = { map = \"slots\"; databases = 4; tables_per_db = 4; "
		"nodes = [\"db0\", \"db1\", \"db3\", \"db2\"]; };\n"
		"strategy = \"doubling\";\n",
		{5, "strategy \"doubling\" (line 12): point 8 moves from db0 "
	            "to db3, but db0's replica is db2; a doubling moves a "
	            "shard's rows only to its replica: list to's nodes as "
	            "[\"db0\", \"db1\", \"db2\", \"db3\"] with databases = "
	            "4, from's nodes and then their replicas in the same "
	            "order"},
		{6, "strategy \"doubling\" (line 12): point 12 moves from "
	            "db1 to db2, but db1's replica is db3; a doubling moves a "
	            "shard's rows only to its replica: list to's nodes as "
	            "[\"db0\", \"db1\", \"db2\", \"db3\"] with databases = "
	            "4, from's nodes and then their replicas in the same "
	            "order"});
	expect_valid(HEAD FROM_SLOTS TO_SLOTS "strategy = \"doubling\";\n");
}

/* Three shards without a replica: all three named, each with the replica
 * that would be right, and that plan loads. */
#define NO_REPLICAS(replica0, replica1, replica2)                              \
	"version = 1;\nname = \"t\";\n"                                        \
	"tables = ( { name = \"orders\"; key = \"id\"; } );\n"                 \
	"shards = (\n"                                                         \
	"  { name = \"db0\"; url = \"sqlite:///tmp/db0.db\";" replica0 " },\n" \
	"  { name = \"db1\"; url = \"sqlite:///tmp/db1.db\";" replica1 " },\n" \
	"  { name = \"db2\"; url = \"sqlite:///tmp/db2.db\";" replica2 " },\n" \
	"  { name = \"db3\"; url = \"sqlite:///tmp/db3.db\"; },\n"             \
	"  { name = \"db4\"; url = \"sqlite:///tmp/db4.db\"; },\n"             \
	"  { name = \"db5\"; url = \"sqlite:///tmp/db5.db\"; }\n"              \
	");\n"                                                                 \
	"from = { map = \"modulo\"; nodes = [\"db0\", \"db1\", \"db2\"]; };\n" \
	"to = { map = \"modulo\"; nodes = [\"db0\", \"db1\", \"db2\", "        \
	"\"db3\", \"db4\", \"db5\"]; };\n"                                     \
	"strategy = \"doubling\";\n"

static void
test_doubling_names_every_shard_without_replica(void **state)
{
	(void)state;
	EXPECT_ALL(
		NO_REPLICAS("", "", ""),
		{5, "strategy \"doubling\" (line 14): point 3 moves from db0 "
	            "to db3, but db0 declares no replica; a doubling moves a "
	            "shard's rows only to its replica: add replica = "
	            "\"db3\"; to shard 'db0'"},
		{6, "strategy \"doubling\" (line 14): point 4 moves from db1 "
	            "to db4, but db1 declares no replica; a doubling moves a "
	            "shard's rows only to its replica: add replica = "
	            "\"db4\"; to shard 'db1'"},
		{7, "strategy \"doubling\" (line 14): point 5 moves from db2 "
	            "to db5, but db2 declares no replica; a doubling moves a "
	            "shard's rows only to its replica: add replica = "
	            "\"db5\"; to shard 'db2'"});
	/* With one replica declared, the other two are still both named. */
	EXPECT_ALL(
		NO_REPLICAS(" replica = \"db3\";", "", ""),
		{6, "strategy \"doubling\" (line 14): point 4 moves from db1 "
	            "to db4, but db1 declares no replica; a doubling moves a "
	            "shard's rows only to its replica: add replica = "
	            "\"db4\"; to shard 'db1'"},
		{7, "strategy \"doubling\" (line 14): point 5 moves from db2 "
	            "to db5, but db2 declares no replica; a doubling moves a "
	            "shard's rows only to its replica: add replica = "
	            "\"db5\"; to shard 'db2'"});
	expect_valid(NO_REPLICAS(" replica = \"db3\";", " replica = \"db4\";",
	                         " replica = \"db5\";"));
}

static void
test_doubling_changing_table_index(void **state)
{
	(void)state;
	expect_one(HEAD FROM_SLOTS
	           "to = { map = \"slots\"; databases = 4; tables_per_db = 2; "
	           "nodes = [\"db0\", \"db1\", \"db2\", \"db3\"]; };\n"
	           "strategy = \"doubling\";\n",
	           11, "keeps every table index");
}

static void
test_doubling_ring_growth_refused(void **state)
{
	(void)state;
	/* A new ring node takes keys from every old node; only one of them
	 * can have it as replica. */
	/* replica = "c" for b would be refused (c follows a): the advice is
	 * a split, with no word of ranges. */
	EXPECT_ALL("version = 1;\nname = \"t\";\n"
	           "tables = ( { name = \"orders\"; key = \"id\"; } );\n"
	           "shards = (\n"
	           "  { name = \"a\"; url = \"sqlite:///tmp/a.db\"; replica = "
	           "\"c\"; },\n"
	           "  { name = \"b\"; url = \"sqlite:///tmp/b.db\"; },\n"
	           "  { name = \"c\"; url = \"sqlite:///tmp/c.db\"; }\n"
	           ");\n"
	           "from = { map = \"ring\"; vnodes = 50; nodes = [\"a\", "
	           "\"b\"]; };\n"
	           "to = { map = \"ring\"; vnodes = 50; nodes = [\"a\", \"b\", "
	           "\"c\"]; };\n"
	           "strategy = \"doubling\";\n",
	           {6,
	            "strategy \"doubling\" (line 11): point "
	            "576922718972366743 moves from b to c, but b declares no "
	            "replica; a doubling moves a shard's rows only to its "
	            "replica: use strategy = \"split\" (a new ring node takes "
	            "points from several nodes, which one replica cannot "
	            "follow)"});
}

/* Ring, ranges: each shard named, with advice that fits the map. */
static void
test_doubling_advice_fits_the_map(void **state)
{
	(void)state;
	EXPECT_ALL(
		HEAD "from = { map = \"ring\"; vnodes = 10; nodes = [\"db0\", "
		     "\"db1\"]; };\n"
		     "to = { map = \"ring\"; vnodes = 10; nodes = [\"db0\", "
		     "\"db1\", \"db2\", \"db3\"]; };\n"
		     "strategy = \"doubling\";\n",
		{5, "strategy \"doubling\" (line 12): point "
	            "2318885038692426757 moves from db0 to db3, but db0's "
	            "replica is db2; a doubling moves a shard's rows only to "
	            "its replica: use strategy = \"split\" (a new ring node "
	            "takes points from several nodes, which one replica "
	            "cannot follow)"},
		{6, "strategy \"doubling\" (line 12): point 0 moves from db1 "
	            "to db2, but db1's replica is db3; a doubling moves a "
	            "shard's rows only to its replica: use strategy = "
	            "\"split\" (a new ring node takes points from several "
	            "nodes, which one replica cannot follow)"});
	/* A ring of one node doubles onto its replica. */
	EXPECT_ALL("version = 1;\nname = \"t\";\n"
	           "tables = ( { name = \"orders\"; key = \"id\"; } );\n"
	           "shards = (\n"
	           "  { name = \"a\"; url = \"sqlite:///tmp/a.db\"; },\n"
	           "  { name = \"c\"; url = \"sqlite:///tmp/c.db\"; }\n"
	           ");\n"
	           "from = { map = \"ring\"; vnodes = 50; nodes = [\"a\"]; };\n"
	           "to = { map = \"ring\"; vnodes = 50; nodes = [\"a\", "
	           "\"c\"]; };\n"
	           "strategy = \"doubling\";\n",
	           {5,
	            "strategy \"doubling\" (line 10): point 0 moves from a to "
	            "c, but a declares no replica; a doubling moves a shard's "
	            "rows only to its replica: add replica = \"c\"; to shard "
	            "'a'"});
	/* Ranges: a range given to another shard than the replica. */
	EXPECT_ALL("version = 1;\nname = \"t\";\nhash = \"identity\";\n"
	           "tables = ( { name = \"orders\"; key = \"id\"; } );\n"
	           "shards = (\n"
	           "  { name = \"a\"; url = \"sqlite:///tmp/a.db\"; replica = "
	           "\"c\"; },\n"
	           "  { name = \"b\"; url = \"sqlite:///tmp/b.db\"; replica = "
	           "\"d\"; },\n"
	           "  { name = \"c\"; url = \"sqlite:///tmp/c.db\"; },\n"
	           "  { name = \"d\"; url = \"sqlite:///tmp/d.db\"; }\n"
	           ");\n"
	           "from = { map = \"ranges\"; ranges = ( { end = 999; node = "
	           "\"a\"; }, { end = \"max\"; node = \"b\"; } ); };\n"
	           "to = { map = \"ranges\"; ranges = ( { end = 499; node = "
	           "\"a\"; }, { end = 999; node = \"c\"; }, { end = 5000; "
	           "node = \"b\"; }, { end = 6000; node = \"c\"; }, { end = "
	           "\"max\"; node = \"d\"; } ); };\n"
	           "strategy = \"doubling\";\n",
	           {7,
	            "strategy \"doubling\" (line 13): point 5001 moves from b "
	            "to c, but b's replica is d; a doubling moves a shard's "
	            "rows only to its replica: give every range that b loses "
	            "to d in to, or use strategy = \"split\""});
}

static void
test_doubling_range_split_proven(void **state)
{
	struct rs_plan *plan = NULL;
	struct rs_plan_diags diags;

	(void)state;
	assert_int_equal(
		load_text("version = 1;\nname = \"t\";\nhash = \"identity\";\n"
	                  "tables = ( { name = \"orders\"; key = \"id\"; } );\n"
	                  "shards = (\n"
	                  "  { name = \"a\"; url = \"sqlite:///tmp/a.db\"; "
	                  "replica = \"c\"; },\n"
	                  "  { name = \"b\"; url = \"sqlite:///tmp/b.db\"; "
	                  "replica = \"d\"; },\n"
	                  "  { name = \"c\"; url = \"sqlite:///tmp/c.db\"; },\n"
	                  "  { name = \"d\"; url = \"sqlite:///tmp/d.db\"; }\n"
	                  ");\n"
	                  "from = { map = \"ranges\"; ranges = ( { end = "
	                  "999999; node = \"a\"; }, { end = \"max\"; node = "
	                  "\"b\"; } ); };\n"
	                  "to = { map = \"ranges\"; ranges = ( { end = 499999; "
	                  "node = \"a\"; }, { end = 999999; node = \"c\"; }, "
	                  "{ end = \"0x8000000000000000\"; node = \"b\"; }, "
	                  "{ end = \"max\"; node = \"d\"; } ); };\n"
	                  "strategy = \"doubling\";\n",
	                  &plan, &diags),
		0);
	assert_non_null(plan);
	plan_free(plan);
}

/* Shard a gives every row to its replica c: a doubling keeps every shard
 * (its purge and final-check go over `to`, so a would keep a stale copy of
 * every row), and says so at the to map. */
static void
test_doubling_cannot_retire_a_shard(void **state)
{
	(void)state;
	EXPECT_ALL("version = 1;\nname = \"t\";\nhash = \"identity\";\n"
	           "tables = ( { name = \"orders\"; key = \"id\"; } );\n"
	           "shards = (\n"
	           "  { name = \"a\"; url = \"sqlite:///tmp/a.db\"; "
	           "replica = \"c\"; },\n"
	           "  { name = \"b\"; url = \"sqlite:///tmp/b.db\"; },\n"
	           "  { name = \"c\"; url = \"sqlite:///tmp/c.db\"; }\n"
	           ");\n"
	           "from = { map = \"ranges\"; ranges = ( { end = "
	           "999999; node = \"a\"; }, { end = \"max\"; node = "
	           "\"b\"; } ); };\n"
	           "to = { map = \"ranges\"; ranges = ( { end = 999999; "
	           "node = \"c\"; }, { end = \"max\"; node = \"b\"; } ); "
	           "};\n"
	           "strategy = \"doubling\";\n",
	           {11, "strategy \"doubling\" (line 12): shard 'a' is a "
	                "node of the from map but not of the to map; a "
	                "doubling keeps every shard and hands part of its rows "
	                "to its replica, it cannot retire one: add 'a' to the "
	                "to map"});
}

static void
test_doubling_modulo_vs_slots_refused(void **state)
{
	(void)state;
	/* slots 2×1 → slots 4×1: key 1 is db1 under both, key 2 moves db0 →
	 * db2 (fine), key 5 goes db1 → db1, key 6: db0 → db2; but `from`'s
	 * nodes in the other order break it. */
	EXPECT_ALL(
		HEAD "from = { map = \"slots\"; databases = 2; tables_per_db "
		     "= 1; nodes = [\"db1\", \"db0\"]; };\n"
		     "to = { map = \"slots\"; databases = 4; tables_per_db "
		     "= 1; nodes = [\"db0\", \"db1\", \"db2\", \"db3\"]; "
		     "};\n"
		     "strategy = \"doubling\";\n",
		{5, "strategy \"doubling\" (line 12): point 1 moves from db0 "
	            "to db1, but db0's replica is db2; a doubling moves a "
	            "shard's rows only to its replica: list to's nodes as "
	            "[\"db1\", \"db0\", \"db3\", \"db2\"] with databases = "
	            "4, from's nodes and then their replicas in the same "
	            "order"},
		{6, "strategy \"doubling\" (line 12): point 0 moves from db1 "
	            "to db0, but db1's replica is db3; a doubling moves a "
	            "shard's rows only to its replica: list to's nodes as "
	            "[\"db1\", \"db0\", \"db3\", \"db2\"] with databases = "
	            "4, from's nodes and then their replicas in the same "
	            "order"});
	expect_valid(HEAD
	             "from = { map = \"slots\"; databases = 2; tables_per_db "
	             "= 1; nodes = [\"db1\", \"db0\"]; };\n"
	             "to = { map = \"slots\"; databases = 4; tables_per_db "
	             "= 1; nodes = [\"db1\", \"db0\", \"db3\", \"db2\"]; "
	             "};\n"
	             "strategy = \"doubling\";\n");
	/* modulo → slots places the rows alike, but a slots map names its
	 * tables orders_0 …: every row would have to change table. */
	EXPECT_ALL(HEAD "from = { map = \"modulo\"; nodes = [\"db1\", "
	                "\"db0\"]; };\n"
	                "to = { map = \"slots\"; databases = 4; tables_per_db "
	                "= 1; nodes = [\"db1\", \"db0\", \"db3\", \"db2\"]; "
	                "};\n"
	                "strategy = \"doubling\";\n",
	           {11,
	            "table 'orders' index 0 is 'orders' under the from map "
	            "and 'orders_0' under the to map; a row that stays on its "
	            "shard stays in its table, so both maps must name the "
	            "table alike: give them the same table_format, both or "
	            "neither a slots map, or rename the tables before the "
	            "run"});
}

/* A ranges split by id: lines 1-8, then the maps with ends FROM_END and
 * TO_END (lines 9 and 10). */
#define RANGES_BY_ID(from_end, to_end)                                         \
	"version = 1;\nname = \"t\";\nhash = \"identity\";\n"                  \
	"tables = ( { name = \"orders\"; key = \"id\"; } ); # 9999999999\n"    \
	"shards = ( { name = \"a\"; url = \"sqlite:///tmp/a.db\"; },\n"        \
	"  { name = \"b\"; url = \"sqlite:///tmp/b.db\"; },\n"                 \
	"  { name = \"c\"; url = \"sqlite:///tmp/c.db#8888888888\"; } );\n"    \
	"/* 7777777777 */\n"                                                   \
	"from = { map = \"ranges\"; ranges = ( { end = " from_end              \
	"; node = \"a\"; }, { end = \"max\"; node = \"b\"; } ); };\n"          \
	"to = { map = \"ranges\"; ranges = ( { end = " to_end                  \
	"; node = \"a\"; }, { end = \"max\"; node = \"c\"; } ); };\n"          \
	"strategy = \"split\";\n"

/* libconfig reads an integer without L in 32 bits: 5000000000 would be
 * 705032704, silently.  Such integers are refused, each at its line (not
 * in strings or comments); with L they are read whole.  A range end in
 * text is decimal or 0x hex, never octal. */
static void
test_integers_beyond_32_bits(void **state)
{
	struct rs_plan *plan;

	(void)state;
	EXPECT_ALL(RANGES_BY_ID("5000000000", "0x100000000"),
	           {9, "integer 5000000000 does not fit in 32 bits, and the "
	               "plan reader takes an integer written without L in 32 "
	               "bits (a larger one would silently become another "
	               "number): write it 5000000000L"},
	           {10, "integer 0x100000000 does not fit in 32 bits, and the "
	                "plan reader takes an integer written without L in 32 "
	                "bits (a larger one would silently become another "
	                "number): write it 0x100000000L"});
	plan = expect_loads(RANGES_BY_ID("5000000000L", "2147483647"));
	assert_int_equal(plan->from_def.ranges[0].end, 5000000000ULL);
	assert_int_equal(plan->to_def.ranges[0].end, 2147483647ULL);
	plan_free(plan);
	plan = expect_loads(RANGES_BY_ID("\"010\"", "\"0x10\""));
	assert_int_equal(plan->from_def.ranges[0].end, 10);
	assert_int_equal(plan->to_def.ranges[0].end, 16);
	plan_free(plan);
	expect_one(RANGES_BY_ID("\"08\"", "\"0x\""), 10, "range end must be");
	expect_one(RANGES_BY_ID("\"0x0x5\"", "\"0x10\""), 9,
	           "range end must be");
}

/* An included file's integers are looked through too, its mistakes named
 * by its path and line. */
static void
test_integers_in_an_included_file(void **state)
{
	const char *inc = "/tmp/reshard-test-plan-ranges.inc";
	FILE *f = fopen(inc, "w");
	struct rs_plan *plan = NULL;
	struct rs_plan_diags diags;

	(void)state;
	assert_non_null(f);
	fputs("# the ranges\n{ end = 4294968296; node = \"a\"; },\n"
	      "{ end = \"max\"; node = \"b\"; }\n",
	      f);
	fclose(f);
	assert_int_equal(
		load_text(
			"version = 1;\nname = \"t\";\nhash = \"identity\";\n"
			"tables = ( { name = \"orders\"; key = \"id\"; } );\n"
			"shards = ( { name = \"a\"; url = "
			"\"sqlite:///tmp/a.db\"; "
			"}, { name = \"b\"; url = \"sqlite:///tmp/b.db\"; } "
			");\n"
			"from = { map = \"ranges\"; ranges = (\n"
			"@include \"/tmp/reshard-test-plan-ranges.inc\"\n"
			"); };\n"
			"to = { map = \"ranges\"; ranges = ( { end = \"max\"; "
			"node = \"a\"; } ); };\n"
			"strategy = \"split\";\n",
			&plan, &diags),
		RS_EPLAN);
	assert_int_equal(diags.n, 1);
	assert_int_equal(diags.items[0].line, 2);
	assert_non_null(diags.items[0].file);
	assert_string_equal(diags.items[0].file, inc);
	assert_non_null(strstr(diags.items[0].message, "integer 4294968296"));
	plan_diags_clear(&diags);
	unlink(inc);
}

/* The routing file named as the plan itself, the plan given without a
 * folder (`reshard run plan.cfg`): refused. */
static void
test_routing_file_is_the_plan(void **state)
{
	char here[4096];
	FILE *f;
	struct rs_plan *plan = NULL;
	struct rs_plan_diags diags;
	struct rs_err err = {0};

	(void)state;
	assert_non_null(getcwd(here, sizeof(here)));
	assert_int_equal(chdir("/tmp"), 0);
	f = fopen("reshard-test-self.cfg", "w");
	assert_non_null(f);
	fputs(HEAD FROM_SLOTS TO_SLOTS
	      "strategy = \"doubling\";\n"
	      "publish = { file = \"reshard-test-self.cfg\"; };\n",
	      f);
	fclose(f);
	assert_int_equal(
		plan_load("reshard-test-self.cfg", &plan, &diags, &err),
		RS_EPLAN);
	assert_int_equal(diags.n, 1);
	assert_non_null(strstr(diags.items[0].message, "is the plan itself"));
	plan_diags_clear(&diags);
	unlink("reshard-test-self.cfg");
	assert_int_equal(chdir(here), 0);
}

/* The files reshard writes are not the plan's other files: publish wrote
 * the routing text over a SQLite shard named as publish.file. */
static void
test_written_files_apart(void **state)
{
	(void)state;
	EXPECT_ALL(HEAD FROM_SLOTS TO_SLOTS
	           "strategy = \"doubling\";\n"
	           "publish = { file = \"/tmp/../tmp/db0.db\"; };\n"
	           "journal = \"/tmp/db1.db\";\n",
	           {13, "the routing file /tmp/../tmp/db0.db is the database "
	                "file of shard 'db0'; give publish.file a name of its "
	                "own"},
	           {14, "the journal /tmp/db1.db is the database file of shard "
	                "'db1'; give journal a name of its own"});
	expect_one(HEAD FROM_SLOTS TO_SLOTS
	           "strategy = \"doubling\";\n"
	           "publish = { file = \"/tmp/x.journal\"; };\n"
	           "journal = \"/tmp/x.journal\";\n",
	           13, "the routing file /tmp/x.journal is also the journal");
}

/* Two plan tables, or two indices, one physical name: refused at the
 * map that makes it. */
static void
test_physical_names_collide(void **state)
{
	(void)state;
	EXPECT_ALL(
		"version = 1;\nname = \"t\";\n"
		"tables = ( { name = \"o\"; key = \"k\"; }, { name = \"o1\"; "
		"key = \"k\"; } );\n"
		"shards = (\n"
		"  { name = \"db0\"; url = \"sqlite:///tmp/db0.db\"; },\n"
		"  { name = \"db1\"; url = \"sqlite:///tmp/db1.db\"; }\n"
		");\n"
		"from = { map = \"slots\"; databases = 1; tables_per_db = 11; "
		"table_format = \"%s%d\"; nodes = [\"db0\"]; };\n"
		"to = { map = \"slots\"; databases = 2; tables_per_db = 11; "
		"table_format = \"%s%d\"; nodes = [\"db0\", \"db1\"]; };\n"
		"strategy = \"split\";\n",
		{8,
	         "the from map names two tables 'o10': table 'o' index 10 "
	         "and table 'o1' index 0; a physical table holds the rows of "
	         "one table index of one plan table: give table_format a %s "
	         "and a %d that cannot run into each other (the default is "
	         "\"%s_%d\")"},
		{9,
	         "the to map names two tables 'o10': table 'o' index 10 "
	         "and table 'o1' index 0; a physical table holds the rows of "
	         "one table index of one plan table: give table_format a %s "
	         "and a %d that cannot run into each other (the default is "
	         "\"%s_%d\")"});
}

static void
test_ring_with_identity_hash(void **state)
{
	(void)state;
	expect_one("version = 1;\nname = \"t\";\nhash = \"identity\";\n"
	           "tables = ( { name = \"orders\"; key = \"id\"; } );\n"
	           "shards = ( { name = \"a\"; url = \"sqlite:///tmp/a.db\"; } "
	           ");\n"
	           "from = { map = \"modulo\"; nodes = [\"a\"]; };\n"
	           "to = { map = \"ring\"; vnodes = 5; nodes = [\"a\"]; };\n"
	           "strategy = \"split\";\n",
	           7, "cannot take its point name");
}

static void
test_all_mistakes_at_once_sorted(void **state)
{
	struct rs_plan *plan = NULL;
	struct rs_plan_diags diags;

	(void)state;
	assert_int_equal(
		load_text("version = 2;\n"
	                  "name = \"bad name\";\n"
	                  "tables = ( { name = \"orders\"; kye = \"id\"; } );\n"
	                  "shards = ( { name = \"a\"; url = "
	                  "\"sqlite:///tmp/a.db\"; } );\n"
	                  "from = { map = \"modulo\"; nodes = [\"a\"]; };\n"
	                  "to = { map = \"modulo\"; nodes = [\"a\"]; };\n"
	                  "strategy = \"teleport\";\n",
	                  &plan, &diags),
		RS_EPLAN);
	assert_null(plan);
	assert_int_equal(diags.n, 5);
	assert_int_equal(diags.items[0].line, 1); /* version */
	assert_int_equal(diags.items[1].line, 2); /* name */
	assert_int_equal(diags.items[2].line, 3); /* kye unknown */
	assert_int_equal(diags.items[3].line, 3); /* key missing */
	assert_int_equal(diags.items[4].line, 7); /* strategy */
	plan_diags_clear(&diags);
}

static void
test_missing_file(void **state)
{
	struct rs_plan *plan = NULL;
	struct rs_plan_diags diags;
	struct rs_err err = {0};

	(void)state;
	assert_int_equal(
		plan_load("/nonexistent/plan.cfg", &plan, &diags, &err),
		RS_EPLAN);
	assert_non_null(strstr(err.message, "cannot read plan"));
	assert_int_equal(diags.n, 0);
}

/* A growing plan text for the limit tests. */
struct plan_text {
	char *s;
	size_t len, cap;
};

static void add(struct plan_text *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
add(struct plan_text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
		va_end(ap);
		assert_true(n >= 0);
		if ((size_t)n < t->cap - t->len)
			break;
		t->cap = 2 * t->cap + (size_t)n + 1024;
		t->s = realloc(t->s, t->cap);
		assert_non_null(t->s);
	}
	t->len += (size_t)n;
}

/* ["s0", …, "s(N-1)"] */
static void
add_nodes(struct plan_text *t, int n)
{
	add(t, "[");
	for (int i = 0; i < n; i++)
		add(t, "%s\"s%d\"", i ? ", " : "", i);
	add(t, "]");
}

/* A split plan with SHARDS shards s0…, one a line, and TABLES tables t0…
 * (or the one table TABLE_LINE gives): line 1 version, 2 name, 3 tables,
 * 4 `shards = (`, then one a shard, `);`, and on lines SHARDS + 6 and
 * SHARDS + 7 the maps FROM_SETTINGS over nodes s0…s(N_FROM-1) and
 * TO_SETTINGS over s0…s(N_TO-1).  Free the text. */
static char *
limits_plan(int shards, int tables, const char *table_line,
            const char *from_settings, int n_from, const char *to_settings,
            int n_to)
{
	struct plan_text t = {0};

	add(&t, "version = 1;\nname = \"limits\";\n");
	if (table_line != NULL) {
		add(&t, "%s\n", table_line);
	} else {
		add(&t, "tables = (");
		for (int i = 0; i < tables; i++)
			add(&t, "%s{ name = \"t%d\"; key = \"k\"; }",
			    i ? ", " : " ", i);
		add(&t, " );\n");
	}
	add(&t, "shards = (\n");
	for (int i = 0; i < shards; i++)
		add(&t,
		    "  { name = \"s%d\"; url = \"sqlite:///tmp/s%d.db\"; }%s\n",
		    i, i, i + 1 < shards ? "," : "");
	add(&t, ");\nfrom = { %s nodes = ", from_settings);
	add_nodes(&t, n_from);
	add(&t, "; };\nto = { %s nodes = ", to_settings);
	add_nodes(&t, n_to);
	add(&t, "; };\nstrategy = \"split\";\n");
	return t.s;
}

static void
test_limit_shards(void **state)
{
	struct rs_plan *plan;
	char *text;

	(void)state;
	text = limits_plan(RS_PLAN_MAX_SHARDS, 1, NULL, "map = \"modulo\";",
	                   RS_PLAN_MAX_SHARDS - 1, "map = \"modulo\";",
	                   RS_PLAN_MAX_SHARDS);
	plan = expect_loads(text);
	assert_int_equal(plan->n_shards, 1024);
	plan_free(plan);
	free(text);

	text = limits_plan(RS_PLAN_MAX_SHARDS + 1, 1, NULL, "map = \"modulo\";",
	                   RS_PLAN_MAX_SHARDS, "map = \"modulo\";",
	                   RS_PLAN_MAX_SHARDS + 1);
	expect_one(text, 4,
	           "the plan lists 1025 shards; a plan may have at most 1024");
	free(text);
}

static void
test_limit_ring_points(void **state)
{
	struct rs_plan *plan;
	char *text;

	(void)state;
	/* 4 × 65536 = 262,144 points. */
	text = limits_plan(5, 1, NULL, "map = \"modulo\";", 5,
	                   "map = \"ring\"; vnodes = 65536;", 4);
	plan = expect_loads(text);
	assert_int_equal(map_n_pieces(plan->to), 262144 + 1);
	plan_free(plan);
	free(text);

	/* 5 × 52429 = 262,145. */
	text = limits_plan(5, 1, NULL, "map = \"modulo\";", 5,
	                   "map = \"ring\"; vnodes = 52429;", 5);
	expect_one(text, 12,
	           "ring map 'to' has 5 nodes x 52429 vnodes = 262,145 "
	           "points; a ring may have at most 262,144: use vnodes = "
	           "52428 or fewer");
	free(text);
}

/* A plan whose `to` is a ranges map of N ranges (ends 0, 1, …, "max"),
 * all owned by "a"; its ranges list starts on line 7. */
static char *
ranges_plan(int n)
{
	struct plan_text t = {0};

	add(&t,
	    "version = 1;\nname = \"limits\";\n"
	    "tables = ( { name = \"t\"; key = \"k\"; } );\n"
	    "shards = ( { name = \"a\"; url = \"sqlite:///tmp/a.db\"; } );\n"
	    "from = { map = \"modulo\"; nodes = [\"a\"]; };\n"
	    "to = { map = \"ranges\";\n  ranges = (\n");
	for (int i = 0; i + 1 < n; i++)
		add(&t, "{ end = %d; node = \"a\"; },\n", i);
	add(&t, "{ end = \"max\"; node = \"a\"; } ); };\n"
	        "strategy = \"split\";\n");
	return t.s;
}

static void
test_limit_ranges(void **state)
{
	struct rs_plan *plan;
	char *text;

	(void)state;
	text = ranges_plan(RS_PLAN_MAX_RANGES);
	plan = expect_loads(text);
	assert_int_equal(map_n_pieces(plan->to), 65536);
	plan_free(plan);
	free(text);

	text = ranges_plan(RS_PLAN_MAX_RANGES + 1);
	expect_one(text, 7,
	           "the map lists 65,537 ranges; a ranges map may have at "
	           "most 65,536");
	free(text);
}

static void
test_limit_slot_tables(void **state)
{
	struct rs_plan *plan;
	char *text;

	(void)state;
	text = limits_plan(
		2, 1, NULL,
		"map = \"slots\"; databases = 2; tables_per_db = 1;", 2,
		"map = \"slots\"; databases = 2; tables_per_db = 32768;", 2);
	plan = expect_loads(text);
	assert_int_equal(map_period(plan->to), 65536);
	plan_free(plan);
	free(text);

	text = limits_plan(
		2, 1, NULL,
		"map = \"slots\"; databases = 2; tables_per_db = 1;", 2,
		"map = \"slots\"; databases = 2; tables_per_db = 32769;", 2);
	expect_one(text, 9,
	           "slots map 'to' has 2 databases x 32769 tables_per_db = "
	           "65,538 slot tables; a slots map may have at most 65,536: "
	           "use tables_per_db = 32768 or fewer");
	free(text);

	/* 1 × 65537, the one product just past: tables_per_db's range. */
	text = limits_plan(
		1, 1, NULL,
		"map = \"slots\"; databases = 1; tables_per_db = 1;", 1,
		"map = \"slots\"; databases = 1; tables_per_db = 65537;", 1);
	expect_one(text, 8,
	           "'tables_per_db' is 65537; it must be between 1 and 65536");
	free(text);
}

static void
test_limit_physical_tables(void **state)
{
	struct rs_plan *plan;
	char *text;

	(void)state;
	/* 16 tables × 65536 slot tables = 1,048,576. */
	text = limits_plan(
		1, 16, NULL,
		"map = \"slots\"; databases = 1; tables_per_db = 1;", 1,
		"map = \"slots\"; databases = 1; tables_per_db = 65536;", 1);
	plan = expect_loads(text);
	assert_int_equal(plan->n_tables, 16);
	plan_free(plan);
	free(text);

	/* 17 × 61681 = 1,048,577. */
	text = limits_plan(
		1, 17, NULL,
		"map = \"slots\"; databases = 1; tables_per_db = 1;", 1,
		"map = \"slots\"; databases = 1; tables_per_db = 61681;", 1);
	expect_one(text, 8,
	           "map 'to' makes 17 tables x 61,681 slot tables = 1,048,577 "
	           "physical tables; a map may make at most 1,048,576");
	free(text);
}

/* The table line `tables = ( { name = "NAME"; key = "KEY"; } );` with
 * NAME and KEY of the given lengths (letters). */
static char *
table_line(size_t name_len, size_t key_len)
{
	char name[128], key[128];
	struct plan_text t = {0};

	memset(name, 'n', name_len);
	name[name_len] = '\0';
	memset(key, 'k', key_len);
	key[key_len] = '\0';
	add(&t, "tables = ( { name = \"%s\"; key = \"%s\"; } );", name, key);
	return t.s;
}

static void
test_limit_names(void **state)
{
	struct rs_plan *plan;
	char *line, *text;

	(void)state;
	/* Table name and key column of 63 bytes. */
	line = table_line(63, 63);
	text = limits_plan(2, 1, line, "map = \"modulo\";", 1,
	                   "map = \"modulo\";", 2);
	plan = expect_loads(text);
	assert_int_equal(strlen(plan->tables[0].name), 63);
	plan_free(plan);
	free(text);
	free(line);

	line = table_line(64, 3);
	text = limits_plan(2, 1, line, "map = \"modulo\";", 1,
	                   "map = \"modulo\";", 2);
	expect_one(
		text, 3,
		"table name 'nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"
		"nnnnnnnnnnnnnnn' is 64 bytes; at most 63 are allowed");
	free(text);
	free(line);

	line = table_line(3, 64);
	text = limits_plan(2, 1, line, "map = \"modulo\";", 1,
	                   "map = \"modulo\";", 2);
	expect_one(text, 3, "shard key column 'kkkkkkkkkk");
	expect_one(text, 3, "is 64 bytes; at most 63 are allowed");
	free(text);
	free(line);
}

static void
test_limit_physical_names(void **state)
{
	struct rs_plan *plan;
	char *line, *text;

	(void)state;
	/* A 61-byte table name, "%s_%d" and index 9: 63 bytes. */
	line = table_line(61, 1);
	text = limits_plan(
		2, 1, line,
		"map = \"slots\"; databases = 2; tables_per_db = 1;", 2,
		"map = \"slots\"; databases = 2; tables_per_db = 10;", 2);
	plan = expect_loads(text);
	plan_free(plan);
	free(text);

	/* Index 10 makes it 64. */
	text = limits_plan(
		2, 1, line,
		"map = \"slots\"; databases = 2; tables_per_db = 1;", 2,
		"map = \"slots\"; databases = 2; tables_per_db = 11;", 2);
	expect_one(text, 9,
	           "names a table 'nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"
	           "nnnnnnnnnnnnnnnnnnn_10' (64 bytes) with table_format "
	           "\"%s_%d\"; a physical table name may have at most 63 "
	           "bytes");
	free(text);
	free(line);

	/* A long table_format, on its own line. */
	text = limits_plan(
		2, 1, NULL,
		"map = \"slots\"; databases = 2; tables_per_db = 1;", 2,
		"map = \"slots\"; databases = 2; tables_per_db = 4;\n"
		"  table_format = "
		"\"%s_archived_rows_kept_for_the_auditors_and_the_lawyers_of_"
		"the_year_%d\";",
		2);
	expect_one(text, 10,
	           "slots map 'to' names a table "
	           "'t0_archived_rows_kept_for_the_auditors_and_the_lawyers_of_"
	           "the_year_3'");
	free(text);
}

/* Logical maps, lines 10-11 (from) and 12-14 (to) after HEAD. */
#define FROM_LOGICAL                                                           \
	"from = { map = \"logical\"; shift = 10; bits = 13;\n"                 \
	"  assign = ( { last = 4095; node = \"db0\"; }, { last = 8191; node "  \
	"= \"db1\"; } ); };\n"

static void
test_logical_loads(void **state)
{
	struct rs_plan *plan;
	const struct rs_map_def *to;

	(void)state;
	plan = expect_loads(
		HEAD
		"hash = \"identity\";\n" FROM_LOGICAL
		"to = { map = \"logical\"; shift = 10; bits = 13;\n"
		"  assign = ( { last = 2047; node = \"db0\"; }, { last = "
		"4095; node = \"db2\"; },\n"
		"    { last = 6143; node = \"db1\"; }, { last = 8191; node "
		"= \"db3\"; } ); };\n"
		"strategy = \"doubling\";\n");
	to = &plan->to_def;
	assert_int_equal(to->kind, RS_MAP_LOGICAL);
	assert_int_equal(to->shift, 10);
	assert_int_equal(to->bits, 13);
	assert_int_equal(to->logical_shards, 8192);
	assert_int_equal(to->n_ranges, 4);
	assert_int_equal(to->ranges[1].end, 4095);
	assert_int_equal(to->ranges[1].shard, 2);
	/* Logical shard 2048 (points 2^21 …) is db0's, now db2's. */
	assert_int_equal(map_owner(plan->from, 2048 << 10).shard, 0);
	assert_int_equal(map_owner(plan->to, 2048 << 10).shard, 2);
	plan_free(plan);

	/* The modulo form, any hash, and a last logical shard above 2^31. */
	plan = expect_loads(
		HEAD "from = { map = \"logical\"; logical_shards = 4096;\n"
		     "  assign = ( { last = 4095; node = \"db0\"; } ); };\n"
		     "to = { map = \"logical\"; logical_shards = 4294967296L;\n"
		     "  assign = ( { last = 3000000000L; node = \"db1\"; }, "
		     "{ last = 3999999999L; node = \"db2\"; },\n"
		     "    { last = \"4294967295\"; node = \"db3\"; } ); };\n"
		     "strategy = \"split\";\n");
	assert_int_equal(plan->from_def.logical_shards, 4096);
	assert_int_equal(plan->from_def.bits, 0);
	assert_int_equal(plan->to_def.logical_shards, UINT64_C(1) << 32);
	assert_int_equal(plan->to_def.ranges[0].end, 3000000000U);
	assert_int_equal(map_owner(plan->to, 3000000001).shard, 2);
	plan_free(plan);
}

static void
test_logical_mistakes_all_at_once(void **state)
{
	(void)state;
	EXPECT_ALL(
		HEAD "from = { map = \"logical\"; bits = 13; logical_shards = "
		     "8192;\n"
		     "  assign = ( { last = 8191; node = \"db0\"; } ); };\n"
		     "to = { map = \"logical\"; shift = 60; bits = 12; nodes = "
		     "[\"db1\"];\n"
		     "  assign = ( { last = 99; node = \"db1\"; },\n"
		     "    { last = 50; node = \"dbx\"; },\n"
		     "    { last = -4; node = \"db2\"; },\n"
		     "    { node = \"db3\"; } ); };\n"
		     "strategy = \"split\";\n",
		{10, "a logical map takes its logical shard either from the "
	             "point's bits (bits, shift) or as the point modulo "
	             "logical_shards, not both; remove one"},
		{12, "'nodes' is not a setting of a logical map; remove it"},
		{12, "shift + bits is 72; the logical shard must lie within "
	             "the point's 64 bits: use shift = 52 or less"},
		{14, "assigned node 'dbx' is not a shard; did you mean "
	             "'db0'?"},
		{14, "the assigned ranges' last logical shards must be "
	             "strictly increasing: this one is not above the previous "
	             "one"},
		{15, "'last' must be a logical shard: a non-negative integer, "
	             "e.g. last = 1023; (above 2147483647 write it with an L, "
	             "last = 4294967295L;)"},
		{16, "an assigned range has no 'last'; add last = 1023; (its "
	             "last logical shard)"});
	EXPECT_ALL(HEAD FROM_LOGICAL
	           "to = { map = \"logical\"; logical_shards = 100;\n"
	           "  assign = ( { last = 49; node = \"db2\"; },\n"
	           "    { last = 98; node = \"db3\"; } ); };\n"
	           "strategy = \"split\";\n",
	           {14, "the last assigned range must end at the last logical "
	                "shard (last = 99;) so that every logical shard has a "
	                "node"});
	EXPECT_ALL(HEAD FROM_LOGICAL
	           "to = { map = \"logical\"; bits = 2;\n"
	           "  assign = ( { last = 1; node = \"db2\"; },\n"
	           "    { last = 4; node = \"db3\"; } ); };\n"
	           "strategy = \"split\";\n",
	           {14, "last = 4 is past the last logical shard, 3; the "
	                "logical shards are 0 to 3"});
	EXPECT_ALL(HEAD FROM_LOGICAL "to = { map = \"logical\";\n"
	                             "  assign = ( { last = 1; node = "
	                             "\"db2\"; } ); };\n"
	                             "strategy = \"split\";\n",
	           {8, "shard 'db3' is in neither the from nor the to map; "
	               "add it to a map or remove it"},
	           {12, "a logical map needs bits = 13; (with shift = 10; for "
	                "the bits below them) to take the logical shard from "
	                "the point's bits, or logical_shards = 4096; to take "
	                "it as the point modulo 4096"});
}

static void
test_logical_doubling_proven(void **state)
{
	(void)state;
	/* Logical shards 6144 … 8191 of db1 go to db0's replica. */
	EXPECT_ALL(
		HEAD FROM_LOGICAL
		"to = { map = \"logical\"; shift = 10; bits = 13;\n"
		"  assign = ( { last = 2047; node = \"db0\"; }, { last = "
		"4095; node = \"db2\"; },\n"
		"    { last = 6143; node = \"db1\"; }, { last = 8191; node "
		"= \"db2\"; } ); };\n"
		"strategy = \"doubling\";\n",
		{6, "strategy \"doubling\" (line 15): point 6291456 (logical "
	            "shard 6144) moves from db1 to db2, but db1's replica is "
	            "db3; a doubling moves a shard's rows only to its replica: "
	            "assign those logical shards to db3 in to, or use strategy "
	            "= \"split\""},
		{8, "shard 'db3' is in neither the from nor the to map; add it "
	            "to a map or remove it"});
}

/* A modulo plan of db0, db1 growing to four (identity hash: key K's point
 * is K, so its owner is K mod the nodes), TO_EXTRA inside `to`; lines
 * 1–12, `to` on line 11. */
static char *
modulo_plan(const char *strategy, const char *to_extra)
{
	static char text[2048];

	snprintf(text, sizeof(text),
	         "version = 1;\nname = \"t\";\nhash = \"identity\";\n"
	         "tables = ( { name = \"orders\"; key = \"id\"; } );\n"
	         "shards = (\n"
	         "  { name = \"db0\"; url = \"sqlite:///tmp/db0.db\"; replica "
	         "= \"db2\"; },\n"
	         "  { name = \"db1\"; url = \"sqlite:///tmp/db1.db\"; replica "
	         "= \"db3\"; },\n"
	         "  { name = \"db2\"; url = \"sqlite:///tmp/db2.db\"; },\n"
	         "  { name = \"db3\"; url = \"sqlite:///tmp/db3.db\"; } );\n"
	         "from = { map = \"modulo\"; nodes = [\"db0\", \"db1\"]; };\n"
	         "to = { map = \"modulo\"; nodes = [\"db0\", \"db1\", \"db2\", "
	         "\"db3\"];%s };\n"
	         "strategy = \"%s\";\n",
	         to_extra, strategy);
	return text;
}

/* Overrides written in the plan pin their keys before the map; the
 * others keep the map's owner. */
static void
test_overrides_inline(void **state)
{
	struct rs_plan *plan;
	int pinned = -1;
	struct rs_owner o;

	(void)state;
	plan = expect_loads(modulo_plan(
		"split", " overrides = ( { key = \"10\"; node = \"db3\"; },\n"
			 "{ key = 12; node = \"db1\"; } );"));
	assert_true(map_has_overrides(plan->to));
	assert_false(map_has_overrides(plan->from));
	assert_int_equal(map_override(plan->to, "10", 2), 3);
	assert_int_equal(map_override(plan->to, "12", 2), 1);
	assert_int_equal(map_override(plan->to, "1", 1), -1);
	assert_int_equal(map_override(plan->to, "100", 3), -1);
	o = map_owner_key(plan->to, "10", 2, 10, &pinned);
	assert_int_equal(o.shard, 3);
	assert_int_equal(pinned, 1);
	o = map_owner_key(plan->to, "14", 2, 14, &pinned);
	assert_int_equal(o.shard, 2); /* 14 mod 4 */
	assert_int_equal(pinned, 0);
	assert_int_equal(map_def(plan->to)->overrides[1].line, 12);
	plan_free(plan);
}

/* An overrides file: every mistake at its own line of that file, after
 * the plan's; the header and comments skipped; a key listed twice names
 * both lines. */
static void
test_overrides_file_mistakes(void **state)
{
	char csv[64] = "/tmp/reshard-test-overrides-XXXXXX", extra[160];
	struct rs_plan *plan = NULL;
	struct rs_plan_diags diags;
	int fd = mkstemp(csv);
	FILE *f;

	(void)state;
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fputs("key,node\n"        /* 1: the header */
	      "# big customers\n" /* 2 */
	      "10,db9\n"          /* 3: not a shard */
	      "11,db3\n"          /* 4 */
	      "no comma here\n"   /* 5 */
	      "\"11\",db2\n"      /* 6: 11 again */
	      "\n"                /* 7 */
	      "\"a,b\",db1\n",    /* 8: a quoted comma */
	      f);
	fclose(f);
	snprintf(extra, sizeof(extra), " overrides = \"%s\"; vnodes = 2;", csv);
	assert_int_equal(load_text(modulo_plan("split", extra), &plan, &diags),
	                 RS_EPLAN);
	unlink(csv);
	assert_int_equal(diags.n, 4);
	/* The plan's own mistake first. */
	assert_null(diags.items[0].file);
	assert_int_equal(diags.items[0].line, 11);
	assert_non_null(strstr(diags.items[0].message, "'vnodes'"));
	for (int i = 1; i < 4; i++)
		assert_string_equal(diags.items[i].file, csv);
	assert_int_equal(diags.items[1].line, 3);
	assert_string_equal(diags.items[1].message,
	                    "override node 'db9' is not a shard; did you "
	                    "mean 'db0'?");
	assert_int_equal(diags.items[2].line, 5);
	assert_non_null(strstr(diags.items[2].message, "expected key,node"));
	assert_int_equal(diags.items[3].line, 6);
	assert_string_equal(diags.items[3].message,
	                    "key '11' is overridden twice, at lines 4 and 6; "
	                    "keep one of them");
	plan_diags_clear(&diags);
}

/* A file that cannot be read is the plan's mistake, at its line. */
static void
test_overrides_file_missing(void **state)
{
	(void)state;
	expect_one(modulo_plan("split", " overrides = "
	                                "\"/nonexistent/big.csv\";"),
	           11, "cannot read overrides file /nonexistent/big.csv");
}

/* Inline, a key twice names both lines too. */
static void
test_overrides_inline_twice(void **state)
{
	(void)state;
	expect_one(modulo_plan("split",
	                       " overrides = ( { key = \"x\"; node = \"db1\"; "
	                       "},\n{ key = \"x\"; node = \"db2\"; } );"),
	           12, "key 'x' is overridden twice, at lines 11 and 12");
}

/* A doubling holds for pinned keys too: a key may stay or go to its
 * shard's replica, nowhere else. */
static void
test_overrides_doubling(void **state)
{
	(void)state;
	/* 6: db0 under from, db2 (db0's replica) under to; 7: db1, db3. */
	expect_valid(modulo_plan("doubling",
	                         " overrides = ( { key = 6; node = \"db0\"; "
	                         "}, { key = 7; node = \"db1\"; } );"));
	EXPECT_ALL(modulo_plan("doubling",
	                       " overrides = (\n{ key = 6; node = \"db3\"; "
	                       "} );"),
	           {12, "strategy \"doubling\" (line 13): key '6' moves from "
	                "db0 to db3, but a doubling moves a shard's rows only "
	                "to its replica (db2); pin it to db0 or db2 in to, or "
	                "use strategy = \"split\""});
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid_doubling_loads_with_defaults),
		cmocka_unit_test(test_syntax_error_has_line),
		cmocka_unit_test(test_unknown_setting_suggests),
		cmocka_unit_test(test_wrong_type_names_expected_type),
		cmocka_unit_test(test_out_of_range),
		cmocka_unit_test(test_operation_timeout),
		cmocka_unit_test(test_create_tables),
		cmocka_unit_test(test_missing_required),
		cmocka_unit_test(test_unknown_hash_suggests),
		cmocka_unit_test(test_unknown_map_kind),
		cmocka_unit_test(test_node_not_a_shard),
		cmocka_unit_test(test_shard_not_a_group_with_a_typo),
		cmocka_unit_test(test_unused_shard_with_map_mistakes),
		cmocka_unit_test(test_missing_from_or_to),
		cmocka_unit_test(test_suggested_values_are_valid),
		cmocka_unit_test(test_setting_of_other_map_kind),
		cmocka_unit_test(test_slots_node_count),
		cmocka_unit_test(test_ranges_must_increase_and_end_at_max),
		cmocka_unit_test(test_bad_table_format),
		cmocka_unit_test(test_duplicate_shard),
		cmocka_unit_test(test_unknown_replica),
		cmocka_unit_test(test_bad_url_scheme),
		cmocka_unit_test(test_unused_shard),
		cmocka_unit_test(test_doubling_to_a_non_replica),
		cmocka_unit_test(
			test_doubling_names_every_shard_without_replica),
		cmocka_unit_test(test_doubling_changing_table_index),
		cmocka_unit_test(test_doubling_ring_growth_refused),
		cmocka_unit_test(test_doubling_advice_fits_the_map),
		cmocka_unit_test(test_logical_loads),
		cmocka_unit_test(test_logical_mistakes_all_at_once),
		cmocka_unit_test(test_logical_doubling_proven),
		cmocka_unit_test(test_doubling_range_split_proven),
		cmocka_unit_test(test_doubling_cannot_retire_a_shard),
		cmocka_unit_test(test_doubling_modulo_vs_slots_refused),
		cmocka_unit_test(test_physical_names_collide),
		cmocka_unit_test(test_integers_beyond_32_bits),
		cmocka_unit_test(test_integers_in_an_included_file),
		cmocka_unit_test(test_routing_file_is_the_plan),
		cmocka_unit_test(test_written_files_apart),
		cmocka_unit_test(test_ring_with_identity_hash),
		cmocka_unit_test(test_all_mistakes_at_once_sorted),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_limit_shards),
		cmocka_unit_test(test_limit_ring_points),
		cmocka_unit_test(test_limit_ranges),
		cmocka_unit_test(test_limit_slot_tables),
		cmocka_unit_test(test_limit_physical_tables),
		cmocka_unit_test(test_limit_names),
		cmocka_unit_test(test_limit_physical_names),
		cmocka_unit_test(test_overrides_inline),
		cmocka_unit_test(test_overrides_file_mistakes),
		cmocka_unit_test(test_overrides_file_missing),
		cmocka_unit_test(test_overrides_inline_twice),
		cmocka_unit_test(test_overrides_doubling),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
