/*
 * Unit tests of src/shardmap/pairmap.c: both owners of a point with one
 * lookup must be exactly the owners that the two maps give one at a time,
 * for merged interval maps (rings, ranges, ties, empty pieces) and for
 * period tables (modulo, slots, powers of two and not), and the maps that
 * get no pair map must be refused without an error.  The moving set of
 * the same maps (pairmap_moving) says a point moves exactly when its two
 * owners differ, at the same points and at the ends of its spans.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "shardmap/pairmap.h"

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
compile(const struct rs_map_def *def, enum rs_hash hash, const char *const *n)
{
	struct rs_err err = {0};
	struct rs_map *map = map_new(def, hash, n, &err);

	if (map == NULL)
		fail_msg("map_new: %s", err.message);
	return map;
}

static void
expect_owner(struct rs_owner got, struct rs_owner want, uint64_t p,
             const char *which)
{
	if (got.shard != want.shard || got.table != want.table)
		fail_msg("point %llu: %s owner %d.%d, the map says %d.%d",
		         (unsigned long long)p, which, got.shard, got.table,
		         want.shard, want.table);
}

/* Whether P is among the points M says move. */
static int
moving_has(const struct rs_moving *m, uint64_t p)
{
	if (m->period != 0) {
		for (size_t i = 0; i < m->n; i++)
			if (m->residues[i] == p % m->period)
				return 1;
		return 0;
	}
	for (size_t i = 0; i < m->n; i++)
		if (p >= m->spans[i][0] && p <= m->spans[i][1])
			return 1;
	return 0;
}

/* Check the pair map of FROM and TO at POINT (one at a time and in a
 * batch with others around it), and that M says it moves exactly when
 * its owners differ. */
/* As expect_point, and that NOT_ON0 (when given) holds P exactly when it
 * moves or is not shard 0's under FROM. */
static void
expect_point_on(const struct rs_pairmap *pairs, const struct rs_map *from,
                const struct rs_map *to, const struct rs_moving *m,
                const struct rs_moving *not_on0, uint64_t p)
{
	uint64_t batch[3] = {p ^ 1, p, p + 12345};
	struct rs_owner f[3], t[3];

	pairmap_owners(pairs, batch, 3, f, t);
	for (int k = 0; k < 3; k++) {
		struct rs_owner a = map_owner(from, batch[k]);
		struct rs_owner b = map_owner(to, batch[k]);
		int moves = a.shard != b.shard || a.table != b.table;

		expect_owner(f[k], a, batch[k], "from");
		expect_owner(t[k], b, batch[k], "to");
		if (moving_has(m, batch[k]) != moves)
			fail_msg("point %llu %s, but the moving set says "
			         "otherwise",
			         (unsigned long long)batch[k],
			         moves ? "moves" : "stays");
		if (not_on0 != NULL &&
		    moving_has(not_on0, batch[k]) != (moves || a.shard != 0))
			fail_msg("point %llu %s shard 0, but its set says "
			         "otherwise",
			         (unsigned long long)batch[k],
			         moves || a.shard != 0 ? "does not stay on"
			                               : "stays on");
	}
}

static void
expect_point(const struct rs_pairmap *pairs, const struct rs_map *from,
             const struct rs_map *to, const struct rs_moving *m, uint64_t p)
{
	expect_point_on(pairs, from, to, m, NULL, p);
}

/* M's spans are sorted, disjoint and not adjacent; its residues sorted
 * and below the period. */
static void
expect_moving_shape(const struct rs_moving *m)
{
	for (size_t i = 0; i < m->n; i++) {
		if (m->period != 0) {
			assert_true(m->residues[i] < m->period);
			assert_true(i == 0 ||
			            m->residues[i - 1] < m->residues[i]);
			continue;
		}
		assert_true(m->spans[i][0] <= m->spans[i][1]);
		assert_true(i == 0 || m->spans[i - 1][1] + 1 < m->spans[i][0]);
	}
}

/* The pair map exists and agrees with both maps: at every piece end of an
 * interval map, one below and one above; at every residue of a periodic
 * map's period and a little past it; at 0, UINT64_MAX and 200,000 random
 * points. */
static void
expect_pairs_agree(const struct rs_map *from, const struct rs_map *to)
{
	struct rs_err err = {0};
	struct rs_pairmap *pairs = pairmap_new(from, to, &err);
	const struct rs_map *maps[2] = {from, to};
	struct rs_moving moving, *mv = &moving, not_on0;
	uint64_t s = 99;

	assert_non_null(pairs);
	assert_int_equal(err.code, 0);
	assert_int_equal(pairmap_moving(from, to, -1, mv, &err), 0);
	expect_moving_shape(mv);
	assert_int_equal(pairmap_moving(from, to, 0, &not_on0, &err), 0);
	expect_moving_shape(&not_on0);
	for (size_t i = 0; not_on0.period == 0 && i < not_on0.n; i++)
		for (int d = -1; d <= 1; d++) {
			expect_point_on(pairs, from, to, mv, &not_on0,
			                not_on0.spans[i][0] +
			                        (uint64_t)(int64_t)d);
			expect_point_on(pairs, from, to, mv, &not_on0,
			                not_on0.spans[i][1] +
			                        (uint64_t)(int64_t)d);
		}
	/* Around every end of a span too. */
	for (size_t i = 0; mv->period == 0 && i < mv->n; i++)
		for (int d = -1; d <= 1; d++) {
			expect_point(pairs, from, to, mv,
			             mv->spans[i][0] + (uint64_t)(int64_t)d);
			expect_point(pairs, from, to, mv,
			             mv->spans[i][1] + (uint64_t)(int64_t)d);
		}
	for (int m = 0; m < 2; m++) {
		uint64_t period = map_period(maps[m]);

		for (uint64_t r = 0; r < 3 * period + 3; r++)
			expect_point(pairs, from, to, mv, r);
		for (int i = 0; i < map_n_pieces(maps[m]); i++) {
			uint64_t end;
			struct rs_owner ignored;

			map_piece(maps[m], i, &end, &ignored);
			for (int d = -1; d <= 1; d++)
				expect_point(pairs, from, to, mv,
				             end + (uint64_t)(int64_t)d);
		}
	}
	expect_point(pairs, from, to, mv, 0);
	expect_point(pairs, from, to, mv, UINT64_MAX);
	for (int i = 0; i < 200000; i++)
		expect_point_on(pairs, from, to, mv, &not_on0, next_point(&s));
	for (uint64_t r = 0; r < 3 * map_period(from) + 3; r++)
		expect_point_on(pairs, from, to, mv, &not_on0, r);
	pairmap_moving_free(&not_on0);
	pairmap_moving_free(mv);
	pairmap_free(pairs);
}

static void
expect_no_pairs(const struct rs_map *from, const struct rs_map *to)
{
	struct rs_err err = {0};

	assert_null(pairmap_new(from, to, &err));
	assert_int_equal(err.code, 0);
}

static void
test_interval_maps_merge(void **state)
{
	int four[] = {0, 1, 2, 3}, five[] = {0, 1, 2, 3, 4};
	struct rs_map_def ring4 = {.kind = RS_MAP_RING,
	                           .nodes = four,
	                           .n_nodes = 4,
	                           .vnodes = 100};
	struct rs_map_def ring5 = {.kind = RS_MAP_RING,
	                           .nodes = five,
	                           .n_nodes = 5,
	                           .vnodes = 100};
	struct rs_map_range r2[] = {{UINT64_C(0x7fffffffffffffff), 0},
	                            {UINT64_MAX, 1}};
	struct rs_map_range r3[] = {{UINT64_C(0x3fffffffffffffff), 0},
	                            {UINT64_C(0x7fffffffffffffff), 2},
	                            {UINT64_MAX, 1}};
	struct rs_map_def ranges2 = {
		.kind = RS_MAP_RANGES, .ranges = r2, .n_ranges = 2};
	struct rs_map_def ranges3 = {
		.kind = RS_MAP_RANGES, .ranges = r3, .n_ranges = 3};
	struct rs_map *a = compile(&ring4, RS_HASH_SHA256_64, names);
	struct rs_map *b = compile(&ring5, RS_HASH_SHA256_64, names);
	struct rs_map *c = compile(&ranges2, RS_HASH_SHA256_64, names);
	struct rs_map *d = compile(&ranges3, RS_HASH_SHA256_64, names);
	struct rs_map *j4 = compile(&ring4, RS_HASH_JAVA, names);
	struct rs_map *j5 = compile(&ring5, RS_HASH_JAVA, names);

	(void)state;
	expect_pairs_agree(a, b);
	expect_pairs_agree(b, a);
	expect_pairs_agree(c, d);
	expect_pairs_agree(a, d);
	expect_pairs_agree(d, b);
	expect_pairs_agree(a, a);
	expect_pairs_agree(j4, j5); /* crowded ends */
	map_free(a);
	map_free(b);
	map_free(c);
	map_free(d);
	map_free(j4);
	map_free(j5);
}

/* Java's hashCode makes "Aa#0" and "BB#0" collide: two ring points at one
 * position, an empty piece, the first by name winning. */
static void
test_ring_ties_merge(void **state)
{
	static const char *const collide[] = {"BB", "Aa"};
	int nodes[] = {0, 1}, one[] = {0};
	struct rs_map_def tie = {
		.kind = RS_MAP_RING, .nodes = nodes, .n_nodes = 2, .vnodes = 1};
	struct rs_map_def single = {
		.kind = RS_MAP_RING, .nodes = one, .n_nodes = 1, .vnodes = 1};
	struct rs_map *both = compile(&tie, RS_HASH_JAVA, collide);
	struct rs_map *bb = compile(&single, RS_HASH_JAVA, collide);

	(void)state;
	expect_pairs_agree(both, bb);
	expect_pairs_agree(bb, both);
	map_free(both);
	map_free(bb);
}

static void
test_periodic_maps_table(void **state)
{
	int nodes[] = {0, 1, 2, 3, 4, 5, 6, 7};
	struct rs_map_def mod4 = {
		.kind = RS_MAP_MODULO, .nodes = nodes, .n_nodes = 4};
	struct rs_map_def mod5 = {
		.kind = RS_MAP_MODULO, .nodes = nodes, .n_nodes = 5};
	struct rs_map_def mod1 = {
		.kind = RS_MAP_MODULO, .nodes = nodes, .n_nodes = 1};
	struct rs_map_def slots2 = {.kind = RS_MAP_SLOTS,
	                            .nodes = nodes,
	                            .n_nodes = 2,
	                            .databases = 2,
	                            .tables_per_db = 4};
	struct rs_map_def slots4 = {.kind = RS_MAP_SLOTS,
	                            .nodes = nodes,
	                            .n_nodes = 4,
	                            .databases = 4,
	                            .tables_per_db = 4};
	struct rs_map_def slots3 = {.kind = RS_MAP_SLOTS,
	                            .nodes = nodes,
	                            .n_nodes = 3,
	                            .databases = 3,
	                            .tables_per_db = 7};
	struct rs_map *m4 = compile(&mod4, RS_HASH_SHA256_64, names);
	struct rs_map *m5 = compile(&mod5, RS_HASH_SHA256_64, names);
	struct rs_map *m1 = compile(&mod1, RS_HASH_SHA256_64, names);
	struct rs_map *s2 = compile(&slots2, RS_HASH_SHA256_64, names);
	struct rs_map *s4 = compile(&slots4, RS_HASH_SHA256_64, names);
	struct rs_map *s3 = compile(&slots3, RS_HASH_SHA256_64, names);

	(void)state;
	expect_pairs_agree(m4, m5); /* period 20: a remainder */
	expect_pairs_agree(s2, s4); /* 16: a mask, with table indices */
	expect_pairs_agree(s4, s2);
	expect_pairs_agree(s3, s4); /* 21 and 16: 336 */
	expect_pairs_agree(m1, m1); /* period 1 */
	expect_pairs_agree(m1, s2);
	expect_pairs_agree(m4, s3);
	map_free(m4);
	map_free(m5);
	map_free(m1);
	map_free(s2);
	map_free(s4);
	map_free(s3);
}

static void
test_no_pair_map(void **state)
{
	int nodes[4100];
	struct rs_map_def ring = {.kind = RS_MAP_RING,
	                          .nodes = nodes,
	                          .n_nodes = 4,
	                          .vnodes = 10};
	struct rs_map_def modulo = {
		.kind = RS_MAP_MODULO, .nodes = nodes, .n_nodes = 4093};
	struct rs_map_def modulo2 = {
		.kind = RS_MAP_MODULO, .nodes = nodes, .n_nodes = 4091};
	struct rs_map_range big[] = {{UINT64_C(0x7fffffffffffffff), 0},
	                             {UINT64_MAX, 0x8000}};
	struct rs_map_range edge[] = {{UINT64_C(0x7fffffffffffffff), 0},
	                              {UINT64_MAX, 0x7fff}};
	struct rs_map_range short_end[] = {{UINT64_C(0xffff), 1}};
	struct rs_map_def big_def = {
		.kind = RS_MAP_RANGES, .ranges = big, .n_ranges = 2};
	struct rs_map_def edge_def = {
		.kind = RS_MAP_RANGES, .ranges = edge, .n_ranges = 2};
	struct rs_map_def short_def = {
		.kind = RS_MAP_RANGES, .ranges = short_end, .n_ranges = 1};
	struct rs_map *r, *m, *m2, *m_big, *m_edge, *m_short;

	(void)state;
	for (int i = 0; i < 4100; i++)
		nodes[i] = i % 4;
	r = compile(&ring, RS_HASH_SHA256_64, names);
	m = compile(&modulo, RS_HASH_SHA256_64, names);
	m2 = compile(&modulo2, RS_HASH_SHA256_64, names);
	m_big = compile(&big_def, RS_HASH_IDENTITY, NULL);
	m_edge = compile(&edge_def, RS_HASH_IDENTITY, NULL);
	m_short = compile(&short_def, RS_HASH_IDENTITY, NULL);
	/* One map of each kind. */
	expect_no_pairs(r, m);
	expect_no_pairs(m, r);
	/* lcm(4093, 4091) is past the table's limit; 4093 alone is not. */
	expect_no_pairs(m, m2);
	/* The same maps have no moving set either. */
	{
		struct rs_moving mv;
		struct rs_err err = {0};

		assert_int_equal(pairmap_moving(r, m, -1, &mv, &err),
		                 RS_EUSAGE);
		assert_int_equal(pairmap_moving(m, r, -1, &mv, &err),
		                 RS_EUSAGE);
		assert_int_equal(pairmap_moving(m, m2, -1, &mv, &err),
		                 RS_EUSAGE);
		assert_int_equal(
			pairmap_moving(m_short, m_short, -1, &mv, &err),
			RS_EUSAGE);
		assert_int_equal(err.code, 0);
	}
	expect_pairs_agree(m, m);
	/* A shard index that does not fit a pair, and a range table that
	 * stops short of UINT64_MAX; the largest index that fits works. */
	expect_no_pairs(r, m_big);
	expect_no_pairs(m_big, r);
	expect_no_pairs(r, m_short);
	expect_no_pairs(m_short, r);
	expect_pairs_agree(m_edge, r);
	expect_pairs_agree(r, m_edge);
	map_free(r);
	map_free(m);
	map_free(m2);
	map_free(m_big);
	map_free(m_edge);
	map_free(m_short);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_interval_maps_merge),
		cmocka_unit_test(test_ring_ties_merge),
		cmocka_unit_test(test_periodic_maps_table),
		cmocka_unit_test(test_no_pair_map),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
