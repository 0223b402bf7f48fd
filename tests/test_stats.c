/*
 * Dry-run bookkeeping: per-shard counts, flows, skew, distinct shards of a
 * map, and the hottest keys.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

/* 2 databases of 4 tables: slot s holds the points p % 8 == s, so the
 * independent scheme puts slot s in db s % 2, table s % 4, and leaves
 * the four tables with db % 2 != table % 2 empty. */
static void
test_slot_rows_independent(void **state)
{
	struct rs_map_def def = {.kind = RS_MAP_SLOTS,
	                         .nodes = (int[]){2, 0},
	                         .n_nodes = 2,
	                         .databases = 2,
	                         .tables_per_db = 4};
	static const char *const names[] = {"a", "b", "c"};
	struct rs_map *map = map_new(&def, RS_HASH_SHA256_64, names, NULL);
	struct rs_slot_rows sr;
	struct rs_spread spread;
	uint64_t out[8];
	const uint64_t want[8] = {1 + 5, 0, 3 + 7, 0, 0, 2 + 6, 0, 4 + 8};

	(void)state;
	assert_non_null(map);
	assert_int_equal(slot_rows_init(&sr, map, 3), 0);
	for (uint64_t p = 0; p < 8; p++) {
		struct rs_owner o = map_owner(map, p);

		/* Slot p gets p + 1 rows. */
		for (uint64_t i = 0; i <= p; i++)
			slot_rows_add_batch(&sr, &o, 1);
	}
	for (int s = 0; s < 8; s++)
		assert_int_equal(sr.rows[s], s + 1);
	slot_rows_independent(&sr, out);
	assert_memory_equal(out, want, sizeof(want));
	stats_spread(out, 8, &spread);
	assert_int_equal(spread.empty, 4);
	assert_int_equal(spread.max, 12);
	assert_int_equal(spread.max_at, 7);
	assert_float_equal(spread.skew, -1, 0);
	stats_spread(sr.rows, 8, &spread);
	assert_int_equal(spread.min_at, 0);
	assert_float_equal(spread.skew, 7.0, 1e-12);
	slot_rows_clear(&sr);
	/* Other maps count nothing. */
	def.kind = RS_MAP_MODULO;
	map_free(map);
	map = map_new(&def, RS_HASH_SHA256_64, names, NULL);
	assert_int_equal(slot_rows_init(&sr, map, 3), 0);
	assert_int_equal(sr.databases, 0);
	slot_rows_clear(&sr);
	map_free(map);
}

/* A key is hot above 5% of its shard's rows under to, not at 5%. */
static void
test_topkeys_hot_threshold(void **state)
{
	struct rs_topkeys top;
	const struct rs_keycount **hot;
	struct rs_owner s0 = {0, 0}, s1 = {1, 0};
	uint64_t after[2] = {100, 200};

	(void)state;
	assert_int_equal(topkeys_init(&top), 0);
	for (int i = 0; i < 5; i++) /* 5 of 100: not hot */
		topkeys_add(&top, "five", 4, 5, s0, s0);
	for (int i = 0; i < 11; i++) /* 11 of 200: hot */
		topkeys_add(&top, "eleven", 6, 11, s1, s1);
	for (int i = 0; i < 6; i++) /* 6 of 100: hot */
		topkeys_add(&top, "six", 3, 6, s1, s0);
	assert_int_equal(topkeys_hot(&top, after, &hot), 2);
	assert_string_equal(hot[0]->key, "eleven");
	assert_string_equal(hot[1]->key, "six");
	free(hot);
	after[0] = 120; /* 6 of 120 is 5% */
	assert_int_equal(topkeys_hot(&top, after, &hot), 1);
	free(hot);
	after[1] = 220;
	assert_int_equal(topkeys_hot(&top, after, &hot), 0);
	assert_null(hot);
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
		cmocka_unit_test(test_slot_rows_independent),
		cmocka_unit_test(test_topkeys_hot_threshold),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
