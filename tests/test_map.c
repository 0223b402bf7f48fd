/*
 * The maps of DESIGN §3 and the doubling proof: owners at exact boundaries,
 * ring wrap-around and ties, the indexed ring lookup against a plain linear
 * search, and the slot-map doubling property over many random points.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "shardmap/map.h"

static const char *const names[] = {"db0", "db1", "db2", "db3",
                                    "db4", "db5", "db6", "db7"};

/* xorshift64*: deterministic pseudo-random points. */
static uint64_t
next_point(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1DULL;
}

static struct rs_map *
compile(struct rs_map_def *def, enum rs_hash hash, const char *const *n)
{
	struct rs_err err = {0};
	struct rs_map *map = map_new(def, hash, n, &err);

	if (map == NULL)
		fail_msg("map_new: %s", err.message);
	return map;
}

static void
test_modulo(void **state)
{
	int nodes[] = {2, 0, 1};
	struct rs_map_def def = {
		.kind = RS_MAP_MODULO, .nodes = nodes, .n_nodes = 3};
	struct rs_map *map = compile(&def, RS_HASH_IDENTITY, names);

	(void)state;
	assert_int_equal(map_owner(map, 0).shard, 2);
	assert_int_equal(map_owner(map, 4).shard, 0);
	assert_int_equal(map_owner(map, 5).shard, 1);
	assert_int_equal(map_owner(map, UINT64_MAX).shard, 2); /* 2^64-1 ≡ 0 */
	assert_int_equal(map_owner(map, 5).table, 0);
	map_free(map);
}

static void
test_slots_owner_and_table_names(void **state)
{
	int nodes[] = {0, 1};
	struct rs_map_def def = {.kind = RS_MAP_SLOTS,
	                         .nodes = nodes,
	                         .n_nodes = 2,
	                         .databases = 2,
	                         .tables_per_db = 4};
	struct rs_map *map = compile(&def, RS_HASH_SHA256_64, names);
	char buf[64];

	(void)state;
	/* slot = p % 8; db = slot / 4; table = slot % 4 */
	assert_int_equal(map_owner(map, 13).shard, 1);
	assert_int_equal(map_owner(map, 13).table, 1);
	assert_int_equal(map_owner(map, 3).shard, 0);
	assert_int_equal(map_owner(map, 3).table, 3);
	assert_true(map_has_tables(map));
	assert_int_equal(map_table_name(map, "orders", 3, buf, sizeof(buf)), 8);
	assert_string_equal(buf, "orders_3");
	assert_int_equal(map_table_name(map, "orders", 3, buf, 8), -1);
	map_free(map);

	def.table_format = "t%%_%s_p%d";
	map = compile(&def, RS_HASH_SHA256_64, names);
	map_table_name(map, "orders", 12, buf, sizeof(buf));
	assert_string_equal(buf, "t%_orders_p12");
	map_free(map);
}

static void
test_table_format_check(void **state)
{
	const char *why;

	(void)state;
	assert_int_equal(map_check_table_format("%s_%d", &why), 0);
	assert_int_equal(map_check_table_format("p%d", &why), 0);
	assert_int_equal(map_check_table_format("%s", &why), -1);
	assert_int_equal(map_check_table_format("%d_%s", &why), -1);
	assert_int_equal(map_check_table_format("%s_%d_%d", &why), -1);
	assert_int_equal(map_check_table_format("%s_%x", &why), -1);
}

static void
test_slots_doubling_property(void **state)
{
	int from_nodes[] = {0, 1, 2}, to_nodes[] = {0, 1, 2, 3, 4, 5};
	struct rs_map_def from_def = {.kind = RS_MAP_SLOTS,
	                              .nodes = from_nodes,
	                              .n_nodes = 3,
	                              .databases = 3,
	                              .tables_per_db = 8};
	struct rs_map_def to_def = from_def;
	uint64_t s = 0x9e3779b97f4a7c15ULL;

	(void)state;
	to_def.nodes = to_nodes;
	to_def.n_nodes = to_def.databases = 6;
	struct rs_map *from = compile(&from_def, RS_HASH_SHA256_64, names);
	struct rs_map *to = compile(&to_def, RS_HASH_SHA256_64, names);
	int moved = 0;

	for (int i = 0; i < 200000; i++) {
		uint64_t p = next_point(&s);
		struct rs_owner f = map_owner(from, p), t = map_owner(to, p);

		assert_int_equal(f.table, t.table);
		assert_true(t.shard == f.shard || t.shard == f.shard + 3);
		moved += t.shard != f.shard;
	}
	/* About half the keys move: not none, not all. */
	assert_in_range(moved, 90000, 110000);
	map_free(from);
	map_free(to);
}

static void
test_ranges_exact_boundaries(void **state)
{
	int unused[] = {0};
	struct rs_map_range ranges[] = {
		{10, 0}, {0x3fffffffffffffffULL, 1}, {UINT64_MAX, 2}};
	struct rs_map_def def = {.kind = RS_MAP_RANGES,
	                         .nodes = unused,
	                         .n_nodes = 0,
	                         .ranges = ranges,
	                         .n_ranges = 3};
	struct rs_map *map = compile(&def, RS_HASH_IDENTITY, names);

	(void)state;
	assert_int_equal(map_owner(map, 0).shard, 0);
	assert_int_equal(map_owner(map, 10).shard, 0);
	assert_int_equal(map_owner(map, 11).shard, 1);
	assert_int_equal(map_owner(map, 0x3fffffffffffffffULL).shard, 1);
	assert_int_equal(map_owner(map, 0x4000000000000000ULL).shard, 2);
	assert_int_equal(map_owner(map, UINT64_MAX).shard, 2);
	map_free(map);
}

static void
test_ring_wraps_and_matches_linear_search(void **state)
{
	int nodes[] = {0, 1, 2, 3, 4};
	struct rs_map_def def = {.kind = RS_MAP_RING,
	                         .nodes = nodes,
	                         .n_nodes = 5,
	                         .vnodes = 100};
	struct rs_map *map = compile(&def, RS_HASH_SHA256_64, names);
	uint64_t pos[500];
	int owner[500], n = 0;
	uint64_t first = UINT64_MAX, last = 0;
	int first_owner = -1, last_owner = -1;
	char label[32];
	uint64_t s = 12345;

	(void)state;
	/* The ring's points, computed here independently of map.c. */
	for (int i = 0; i < 5; i++)
		for (int v = 0; v < 100; v++) {
			int len = snprintf(label, sizeof(label), "%s#%d",
			                   names[i], v);

			pos[n] = hash_sha256_64(label, (size_t)len);
			owner[n] = i;
			if (pos[n] < first) {
				first = pos[n];
				first_owner = i;
			}
			if (pos[n] >= last) {
				last = pos[n];
				last_owner = i;
			}
			n++;
		}
	/* Exactly on a point, just past the last point (wraps to the first),
	 * and at zero. */
	assert_int_equal(map_owner(map, last).shard, last_owner);
	assert_int_equal(map_owner(map, first).shard, first_owner);
	assert_int_equal(map_owner(map, 0).shard, first_owner);
	if (last < UINT64_MAX)
		assert_int_equal(map_owner(map, last + 1).shard, first_owner);
	assert_int_equal(map_owner(map, UINT64_MAX).shard, first_owner);
	for (int k = 0; k < n; k++) {
		assert_int_equal(map_owner(map, pos[k]).shard, owner[k]);
		if (pos[k] > 0 && pos[k] - 1 != last)
			assert_true(map_owner(map, pos[k] - 1).shard >= 0);
	}
	/* Random points against a linear scan for the smallest position ≥ p. */
	for (int i = 0; i < 20000; i++) {
		uint64_t p = next_point(&s), best = UINT64_MAX;
		int expect = first_owner, found = 0;

		for (int k = 0; k < n; k++)
			if (pos[k] >= p && (!found || pos[k] < best)) {
				best = pos[k];
				expect = owner[k];
				found = 1;
			}
		assert_int_equal(map_owner(map, p).shard, expect);
	}
	map_free(map);
}

/* map_owner against a plain walk over the map's pieces (the first piece
 * whose end is ≥ the point), at every end, one below and one above, and at
 * random points both over the whole space and below 2^SMALL_BITS, where
 * small ends crowd. */
static void
expect_owner_matches_pieces(const struct rs_map *map, int small_bits)
{
	int n = map_n_pieces(map);
	uint64_t s = 4242;

	for (int k = 0; k < 3 * n + 40000; k++) {
		uint64_t p, end;
		struct rs_owner want = {-1, 0}, piece;

		if (k < 3 * n) {
			map_piece(map, k / 3, &end, &piece);
			p = end + (uint64_t)(int64_t)(k % 3 - 1);
		} else {
			p = next_point(&s);
			if (k % 2 == 0)
				p >>= 64 - small_bits;
		}
		for (int i = 0; i < n; i++) {
			map_piece(map, i, &end, &piece);
			if (end >= p) {
				want = piece;
				break;
			}
		}
		assert_int_equal(map_owner(map, p).shard, want.shard);
	}
}

/* Rings and range tables whose ends crowd a few buckets: a java-hashed ring
 * ("db0#10" … "db0#19" within a few hundred), identity ranges at small
 * values and in a tight cluster; and the sha256 ring for comparison. */
static void
test_crowded_ends_match_linear_search(void **state)
{
	int nodes[] = {0, 1, 2, 3, 4};
	struct rs_map_def ring = {.kind = RS_MAP_RING,
	                          .nodes = nodes,
	                          .n_nodes = 5,
	                          .vnodes = 100};
	struct rs_map_range ranges[64];
	struct rs_map_def table = {.kind = RS_MAP_RANGES, .ranges = ranges};
	struct rs_map *map;

	(void)state;
	map = compile(&ring, RS_HASH_JAVA, names);
	expect_owner_matches_pieces(map, 32);
	map_free(map);
	map = compile(&ring, RS_HASH_SHA256_64, names);
	expect_owner_matches_pieces(map, 64);
	map_free(map);
	/* 63 ends 1000 apart, up to 63,000, then "max". */
	for (int i = 0; i < 63; i++)
		ranges[i] =
			(struct rs_map_range){(uint64_t)(i + 1) * 1000, i % 5};
	ranges[63] = (struct rs_map_range){UINT64_MAX, 4};
	table.n_ranges = 64;
	map = compile(&table, RS_HASH_IDENTITY, names);
	expect_owner_matches_pieces(map, 16);
	map_free(map);
	/* 40 ends within 40 of each other, far apart from one more. */
	for (int i = 0; i < 40; i++)
		ranges[i] = (struct rs_map_range){
			UINT64_C(5000000) + (uint64_t)i, i % 3};
	ranges[40] = (struct rs_map_range){UINT64_C(1) << 40, 3};
	ranges[41] = (struct rs_map_range){UINT64_MAX, 4};
	table.n_ranges = 42;
	map = compile(&table, RS_HASH_IDENTITY, names);
	expect_owner_matches_pieces(map, 23);
	map_free(map);
}

static void
test_ring_equal_positions_ordered_by_name(void **state)
{
	/* Java's hashCode makes "Aa" and "BB" collide, and so do "Aa#0" and
	 * "BB#0": two ring points at one position.  The first by name wins,
	 * whatever order the nodes are listed in. */
	static const char *const collide[] = {"BB", "Aa"};
	int nodes[] = {0, 1};
	struct rs_map_def def = {
		.kind = RS_MAP_RING, .nodes = nodes, .n_nodes = 2, .vnodes = 1};
	struct rs_map *map = compile(&def, RS_HASH_JAVA, collide);
	uint64_t s = 99;

	(void)state;
	for (int i = 0; i < 1000; i++)
		assert_string_equal(
			collide[map_owner(map, next_point(&s)).shard], "Aa");
	map_free(map);
}

static void
test_ring_needs_text_hash(void **state)
{
	int nodes[] = {0};
	struct rs_map_def def = {
		.kind = RS_MAP_RING, .nodes = nodes, .n_nodes = 1, .vnodes = 3};
	struct rs_err err = {0};

	(void)state;
	assert_null(map_new(&def, RS_HASH_IDENTITY, names, &err));
	assert_int_equal(err.code, RS_EPLAN);
	assert_non_null(strstr(err.message, "db0#0"));
}

static void
test_prove_doubling(void **state)
{
	int from_nodes[] = {0, 1}, to_nodes[] = {0, 1, 2, 3},
	    swapped[] = {0, 1, 3, 2};
	int replica_of[] = {2, 3, -1, -1};
	struct rs_map_def from_def = {.kind = RS_MAP_SLOTS,
	                              .nodes = from_nodes,
	                              .n_nodes = 2,
	                              .databases = 2,
	                              .tables_per_db = 4};
	struct rs_map_def to_def = from_def;
	struct rs_err err = {0};

	(void)state;
	to_def.nodes = to_nodes;
	to_def.n_nodes = to_def.databases = 4;
	struct rs_map *from = compile(&from_def, RS_HASH_SHA256_64, names);
	struct rs_map *to = compile(&to_def, RS_HASH_SHA256_64, names);
	assert_int_equal(
		map_prove_doubling(from, to, replica_of, names, NULL, &err), 0);
	map_free(to);

	to_def.nodes = swapped;
	to = compile(&to_def, RS_HASH_SHA256_64, names);
	assert_int_equal(
		map_prove_doubling(from, to, replica_of, names, NULL, &err),
		RS_EPLAN);
	assert_non_null(strstr(err.message, "db0's replica is db2"));
	map_free(to);
	map_free(from);
}

/* Asked to, the proof goes on past the first break and notes, for each
 * shard, its first wrong point and whether its points go to several. */
static void
test_prove_doubling_every_shard(void **state)
{
	int from_nodes[] = {0, 1}, to_nodes[] = {0, 1, 3, 2, 2, 3};
	int replica_of[] = {2, 3, -1, -1};
	struct rs_map_def from_def = {
		.kind = RS_MAP_MODULO, .nodes = from_nodes, .n_nodes = 2};
	struct rs_map_def to_def = {
		.kind = RS_MAP_MODULO, .nodes = to_nodes, .n_nodes = 4};
	struct rs_doubling_found found[4];
	struct rs_err err = {0};
	struct rs_map *from, *to;

	(void)state;
	for (int i = 0; i < 4; i++)
		found[i] = (struct rs_doubling_found){-1, 0, -1, 0};
	from = compile(&from_def, RS_HASH_SHA256_64, names);
	to = compile(&to_def, RS_HASH_SHA256_64, names);
	assert_int_equal(
		map_prove_doubling(from, to, replica_of, names, found, &err),
		RS_EPLAN);
	assert_int_equal(err.code, 0); /* breaks are in FOUND */
	assert_int_equal(found[0].bad_to, 3);
	assert_true(found[0].bad_point == 2);
	assert_int_equal(found[0].spread, 0);
	assert_int_equal(found[1].bad_to, 2);
	assert_true(found[1].bad_point == 3);
	assert_int_equal(found[2].moves_to, -1);
	map_free(to);

	/* modulo 2 -> 6: each shard's points go to two others. */
	to_def.n_nodes = 6;
	to = compile(&to_def, RS_HASH_SHA256_64, names);
	for (int i = 0; i < 4; i++)
		found[i] = (struct rs_doubling_found){-1, 0, -1, 0};
	assert_int_equal(
		map_prove_doubling(from, to, replica_of, names, found, &err),
		RS_EPLAN);
	assert_int_equal(found[0].spread, 1);
	assert_int_equal(found[1].spread, 1);
	map_free(to);
	map_free(from);
}

static void
test_prove_doubling_ranges_thin_slice(void **state)
{
	/* The to map gives a single point to the wrong shard: sampling would
	 * miss it, the proof does not. */
	struct rs_map_range from_r[] = {{UINT64_MAX, 0}};
	struct rs_map_range to_r[] = {{1000, 0},
	                              {0x7fffffffffffffffULL, 1},
	                              {0x8000000000000000ULL, 2},
	                              {UINT64_MAX, 1}};
	int replica_of[] = {1, -1, -1};
	struct rs_map_def from_def = {
		.kind = RS_MAP_RANGES, .ranges = from_r, .n_ranges = 1};
	struct rs_map_def to_def = {
		.kind = RS_MAP_RANGES, .ranges = to_r, .n_ranges = 4};
	struct rs_err err = {0};
	struct rs_map *from = compile(&from_def, RS_HASH_IDENTITY, names);
	struct rs_map *to = compile(&to_def, RS_HASH_IDENTITY, names);

	(void)state;
	assert_int_equal(
		map_prove_doubling(from, to, replica_of, names, NULL, &err),
		RS_EPLAN);
	assert_non_null(strstr(err.message, "point 9223372036854775808 moves "
	                                    "from db0 to db2"));
	map_free(to);
	map_free(from);
}

static void
test_prove_doubling_mixed_kinds(void **state)
{
	/* modulo 2 → ranges: [0, 9] stays with its modulo owner only if each
	 * point's owner under modulo is db0 or its replica db2; odd points are
	 * db1's and may not go to db2. */
	int mod_nodes[] = {0, 1};
	struct rs_map_range to_r[] = {{9, 2}, {UINT64_MAX, 0}};
	int replica_of[] = {2, 3, -1, -1};
	struct rs_map_def from_def = {
		.kind = RS_MAP_MODULO, .nodes = mod_nodes, .n_nodes = 2};
	struct rs_map_def to_def = {
		.kind = RS_MAP_RANGES, .ranges = to_r, .n_ranges = 2};
	struct rs_err err = {0};
	struct rs_map *from = compile(&from_def, RS_HASH_IDENTITY, names);
	struct rs_map *to = compile(&to_def, RS_HASH_IDENTITY, names);

	(void)state;
	assert_int_equal(
		map_prove_doubling(from, to, replica_of, names, NULL, &err),
		RS_EPLAN);
	assert_non_null(strstr(err.message, "point 1 moves from db1 to db2"));
	map_free(to);
	map_free(from);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_modulo),
		cmocka_unit_test(test_slots_owner_and_table_names),
		cmocka_unit_test(test_table_format_check),
		cmocka_unit_test(test_slots_doubling_property),
		cmocka_unit_test(test_ranges_exact_boundaries),
		cmocka_unit_test(test_ring_wraps_and_matches_linear_search),
		cmocka_unit_test(test_crowded_ends_match_linear_search),
		cmocka_unit_test(test_ring_equal_positions_ordered_by_name),
		cmocka_unit_test(test_ring_needs_text_hash),
		cmocka_unit_test(test_prove_doubling),
		cmocka_unit_test(test_prove_doubling_every_shard),
		cmocka_unit_test(test_prove_doubling_ranges_thin_slice),
		cmocka_unit_test(test_prove_doubling_mixed_kinds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
