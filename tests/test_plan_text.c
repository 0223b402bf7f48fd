/*
 * The plan text the journal pins and its fingerprint: every byte of a
 * pinned key counts, and the text of a plan a journal of an earlier
 * release pinned does not change (else that journal would not resume).
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

#include "engine/plan_text.h"
#include "plan/plan.h"

/* A split of two shards to four whose `to` pins the keys of OVERRIDES (a
 * libconfig list's items); loaded, or the test fails. */
static struct rs_plan *
load_plan(const char *overrides)
{
	char path[64] = "/tmp/reshard-test-plan-text-XXXXXX";
	struct rs_plan_diags diags = {0};
	struct rs_plan *plan = NULL;
	struct rs_err err = {0};
	int fd = mkstemp(path);
	FILE *f;

	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fprintf(f,
	        "version = 1;\nname = \"t\";\nhash = \"sha256_64\";\n"
	        "tables = ( { name = \"orders\"; key = \"customer_id\"; } );\n"
	        "shards = (\n"
	        "  { name = \"db0\"; url = \"sqlite:///tmp/db0.db\"; },\n"
	        "  { name = \"db1\"; url = \"sqlite:///tmp/db1.db\"; },\n"
	        "  { name = \"db2\"; url = \"sqlite:///tmp/db2.db\"; },\n"
	        "  { name = \"db3\"; url = \"sqlite:///tmp/db3.db\"; } );\n"
	        "from = { map = \"modulo\"; nodes = [\"db0\", \"db1\"]; };\n"
	        "to = { map = \"modulo\"; nodes = [\"db0\", \"db1\", \"db2\", "
	        "\"db3\"]; overrides = ( %s ); };\n"
	        "strategy = \"split\";\n",
	        overrides);
	fclose(f);
	if (plan_load(path, &plan, &diags, &err) != 0) {
		plan_diags_print(&diags, path, stderr);
		unlink(path);
		fail_msg("the plan does not load: %s", err.message);
	}
	unlink(path);
	return plan;
}

/* The fingerprint of PLAN into HEX. */
static void
fingerprint(const struct rs_plan *plan, char hex[65])
{
	char *text = engine_plan_text(plan);

	assert_non_null(text);
	engine_plan_fingerprint(text, hex);
	free(text);
}

/* N times byte C, then TAIL, as a libconfig string's contents. */
static char *
key_of(size_t n, char c, const char *tail)
{
	size_t rest = strlen(tail) + 1;
	char *key = malloc(n + rest);

	assert_non_null(key);
	memset(key, c, n);
	memcpy(key + n, tail, rest);
	return key;
}

/* Keys as earlier releases wrote them (none cut in a message): the same
 * lines, the same fingerprint, so their journals resume.  The longest is
 * 255 bytes once escaped, the most a message shows whole. */
static void
test_short_keys_unchanged(void **state)
{
	char *long_key = key_of(253, 'k', ""), overrides[512], hex[65];
	struct rs_plan *plan;
	char *text;

	(void)state;
	/* 253 bytes, and "\t" escaped as two: 255. */
	snprintf(overrides, sizeof(overrides),
	         "{ key = \"cust-42\"; node = \"db3\"; }, "
	         "{ key = \"a\\tb\"; node = \"db2\"; }, "
	         "{ key = \"\\t%s\"; node = \"db1\"; }",
	         long_key);
	plan = load_plan(overrides);
	text = engine_plan_text(plan);
	assert_non_null(text);
	assert_non_null(strstr(text, "to.overrides[0] = key 'cust-42' node "
	                             "db3\n"));
	assert_non_null(
		strstr(text, "to.overrides[1] = key 'a\\tb' node db2\n"));
	assert_non_null(strstr(text, long_key));
	free(text);
	fingerprint(plan, hex);
	/* What the release before this one pinned for this plan. */
	assert_string_equal(hex, "5d15ae6bc72b675ef2e837d0646125df578899b8e28ef"
	                         "a50b0cd15ee679b64c6");
	plan_free(plan);
	free(long_key);
}

/* Two plans whose one pinned key differs only in its last byte, past what
 * a message shows of a key, have two fingerprints: a run started with one
 * is refused with the other. */
static void
test_long_key_every_byte(void **state)
{
	char *a = key_of(299, 'k', "a"), *b = key_of(299, 'k', "b");
	char overrides[512], hex_a[65], hex_b[65];
	struct rs_plan *plan_a, *plan_b;
	char *text;

	(void)state;
	snprintf(overrides, sizeof(overrides),
	         "{ key = \"%s\"; node = \"db3\"; }", a);
	plan_a = load_plan(overrides);
	snprintf(overrides, sizeof(overrides),
	         "{ key = \"%s\"; node = \"db3\"; }", b);
	plan_b = load_plan(overrides);
	fingerprint(plan_a, hex_a);
	fingerprint(plan_b, hex_b);
	assert_string_not_equal(hex_a, hex_b);
	text = engine_plan_text(plan_a);
	assert_non_null(text);
	assert_non_null(strstr(text, a)); /* the key whole, not cut */
	free(text);
	plan_free(plan_a);
	plan_free(plan_b);
	free(a);
	free(b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_short_keys_unchanged),
		cmocka_unit_test(test_long_key_every_byte),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
