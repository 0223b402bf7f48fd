/*
 * Dry-run bookkeeping: per-shard counts, flows, skew, distinct shards of a
 * map, and the hottest keys.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "shardmap/stats.h"

static void
test_counts_and_flows(void **state)
{
	struct rs_stats st;
	struct rs_owner a = {0, 0}, b = {1, 0}, a1 = {0, 1};

	(void)state;
	assert_int_equal(stats_init(&st, 2), 0);
	stats_add(&st, a, a);
	stats_add(&st, a, b);
	stats_add(&st, a, b);
	stats_add(&st, b, b);
	stats_add(&st, a, a1); /* same shard, other table: a mover */
	stats_finish(&st);
	assert_int_equal(st.keys, 5);
	assert_int_equal(st.moved, 3);
	assert_int_equal(st.before[0], 4);
	assert_int_equal(st.before[1], 1);
	assert_int_equal(st.after[0], 2);
	assert_int_equal(st.after[1], 3);
	assert_int_equal(st.flows[0 * 2 + 1], 2);
	assert_int_equal(st.flows[0 * 2 + 0], 1);
	assert_int_equal(st.flows[1 * 2 + 0], 0);
	/* More rows after a finish, and a finish again: counted once. */
	stats_add(&st, b, a);
	stats_finish(&st);
	stats_finish(&st);
	assert_int_equal(st.keys, 6);
	assert_int_equal(st.moved, 4);
	assert_int_equal(st.before[1], 2);
	assert_int_equal(st.after[0], 3);
	assert_int_equal(st.flows[1 * 2 + 0], 1);
	stats_clear(&st);
}

static void
test_skew(void **state)
{
	uint64_t counts[] = {100, 110, 0, 105};
	int all[] = {0, 1, 2, 3}, some[] = {0, 1, 3};

	(void)state;
	assert_float_equal(stats_skew(counts, some, 3), 0.10, 1e-12);
	assert_float_equal(stats_skew(counts, all, 4), -1, 0); /* min 0 */
	assert_float_equal(stats_skew(counts, some, 1), 0.0, 0);
	assert_float_equal(stats_skew(counts, some, 0), -1, 0);
}

static void
test_map_shards_distinct(void **state)
{
	struct rs_map_range ranges[] = {
		{10, 2}, {20, 0}, {30, 2}, {UINT64_MAX, 1}};
	struct rs_map_def def = {
		.kind = RS_MAP_RANGES, .ranges = ranges, .n_ranges = 4};
	static const char *const names[] = {"a", "b", "c"};
	struct rs_map *map = map_new(&def, RS_HASH_IDENTITY, names, NULL);
	int out[8];

	(void)state;
	assert_int_equal(stats_map_shards(map, out, 8), 3);
	assert_int_equal(out[0], 2);
	assert_int_equal(out[1], 0);
	assert_int_equal(out[2], 1);
	map_free(map);
}

static void
test_topkeys_counts_and_orders(void **state)
{
	struct rs_topkeys top;
	const struct rs_keycount *best[3];
	struct rs_owner o = {0, 0};
	char key[32];

	(void)state;
	assert_int_equal(topkeys_init(&top), 0);
	/* 5000 distinct keys (forces the table to grow), then hot ones. */
	for (int i = 0; i < 5000; i++) {
		int n = snprintf(key, sizeof(key), "k%d", i);

		assert_int_equal(
			topkeys_add(&top, key, (size_t)n,
		                    (uint64_t)i * 0x9e3779b97f4a7c15ULL, o, o),
			0);
	}
	for (int i = 0; i < 7; i++)
		topkeys_add(&top, "k42", 3, 42 * 0x9e3779b97f4a7c15ULL, o, o);
	for (int i = 0; i < 3; i++)
		topkeys_add(&top, "k7", 2, 7 * 0x9e3779b97f4a7c15ULL, o, o);
	for (int i = 0; i < 3; i++)
		topkeys_add(&top, "k10", 3, 10 * 0x9e3779b97f4a7c15ULL, o, o);
	assert_int_equal(top.used, 5000);
	assert_int_equal(topkeys_best(&top, 3, best), 3);
	assert_string_equal(best[0]->key, "k42");
	assert_int_equal(best[0]->rows, 8);
	/* Equal counts are ordered by key bytes: "k10" < "k7". */
	assert_string_equal(best[1]->key, "k10");
	assert_string_equal(best[2]->key, "k7");
	assert_int_equal(best[2]->rows, 4);
	topkeys_clear(&top);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts_and_flows),
		cmocka_unit_test(test_skew),
		cmocka_unit_test(test_map_shards_distinct),
		cmocka_unit_test(test_topkeys_counts_and_orders),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
