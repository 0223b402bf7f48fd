/*
 * The logical map: owners of points against an independent Python
 * implementation kept as data (tests/data/logical-owners.txt, written by
 * tests/data/gen_logical_owners.py), one at a time and in batches; its
 * shape over the point space (periodic, or pieces when its bits reach the
 * top of the point); the pair maps and moving sets of two logical maps
 * against their owners one map at a time; and the doubling proof, which
 * must accept a logical shard range moving to its node's replica and
 * refuse one moving elsewhere, naming the least point that does.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shardmap/pairmap.h"

static const char *const names[] = {"a", "b", "c", "d", "e", "f"};

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
compile(const struct rs_map_def *def)
{
	struct rs_err err = {0};
	struct rs_map *map = map_new(def, RS_HASH_IDENTITY, names, &err);

	if (map == NULL)
		fail_msg("map_new: %s", err.message);
	return map;
}

/* A logical map of the bits form (COUNT == 0) or of the modulo form. */
static struct rs_map *
logical_map(int shift, int bits, uint64_t count,
            const struct rs_map_range *assign, int n)
{
	struct rs_map_def def = {
		.kind = RS_MAP_LOGICAL,
		.shift = shift,
		.bits = bits,
		.logical_shards = bits > 0 ? UINT64_C(1) << bits : count,
		.ranges = (struct rs_map_range *)assign,
		.n_ranges = n,
	};

	return compile(&def);
}

static const char *
data_path(const char *name)
{
	static char path[4096];
	const char *dir = getenv("RESHARD_TEST_DATA");

	snprintf(path, sizeof(path), "%s/%s", dir ? dir : "tests/data", name);
	return path;
}

/* Parse "map NAME bits S B LAST:NODE,…" or "map NAME mod L LAST:NODE,…"
 * into DEF (its ranges into ASSIGN). */
static void
parse_map_line(char *line, struct rs_map_def *def, struct rs_map_range *assign,
               int cap)
{
	char *save = NULL, *form, *list, *piece;

	memset(def, 0, sizeof(*def));
	def->kind = RS_MAP_LOGICAL;
	def->ranges = assign;
	strtok_r(line, " ", &save); /* map */
	strtok_r(NULL, " ", &save); /* NAME */
	form = strtok_r(NULL, " ", &save);
	assert_non_null(form);
	if (strcmp(form, "bits") == 0) {
		def->shift = atoi(strtok_r(NULL, " ", &save));
		def->bits = atoi(strtok_r(NULL, " ", &save));
		def->logical_shards = UINT64_C(1) << def->bits;
	} else {
		assert_string_equal(form, "mod");
		def->logical_shards =
			strtoull(strtok_r(NULL, " ", &save), NULL, 10);
	}
	list = strtok_r(NULL, " \n", &save);
	assert_non_null(list);
	for (piece = strtok_r(list, ",", &save); piece != NULL;
	     piece = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(piece, ':');

		assert_non_null(colon);
		assert_true(def->n_ranges < cap);
		assign[def->n_ranges].end = strtoull(piece, NULL, 10);
		assign[def->n_ranges].shard = atoi(colon + 1);
		def->n_ranges++;
	}
}

/* Check the points gathered for MAP one by one and in one batch. */
static void
check_points(const struct rs_map *map, const uint64_t *points, const int *want,
             size_t n)
{
	struct rs_owner *batch = calloc(n + 1, sizeof(*batch));

	assert_non_null(batch);
	map_owner_batch(map, points, n, batch);
	for (size_t i = 0; i < n; i++) {
		struct rs_owner one = map_owner(map, points[i]);

		if (one.shard != want[i] || batch[i].shard != want[i] ||
		    one.table != 0 || batch[i].table != 0)
			fail_msg("point %llu: owner %d (batch %d), the oracle "
			         "says %d",
			         (unsigned long long)points[i], one.shard,
			         batch[i].shard, want[i]);
	}
	free(batch);
}

static void
test_owners_match_oracle(void **state)
{
	FILE *f = fopen(data_path("logical-owners.txt"), "r");
	char line[4096];
	struct rs_map_def def = {0};
	struct rs_map_range assign[64];
	struct rs_map *map = NULL;
	uint64_t points[4096];
	int want[4096];
	size_t n = 0, total = 0;
	int maps = 0;

	(void)state;
	assert_non_null(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "map ", 4) == 0) {
			if (map != NULL)
				check_points(map, points, want, n);
			map_free(map);
			parse_map_line(line, &def, assign, 64);
			map = compile(&def);
			maps++;
			n = 0;
			continue;
		}
		assert_non_null(map);
		assert_true(n < 4096);
		assert_int_equal(
			sscanf(line, "%" SCNu64 " %d", &points[n], &want[n]),
			2);
		n++;
		total++;
	}
	if (map != NULL)
		check_points(map, points, want, n);
	map_free(map);
	fclose(f);
	assert_int_equal(maps, 7);
	assert_true(total > 2000);
}

static void
test_shape(void **state)
{
	struct rs_map_range insta[] = {{4095, 0}, {8191, 1}};
	struct rs_map_range top[] = {{1023, 0}, {2047, 1}, {4095, 2}};
	struct rs_map_range mod[] = {{249, 0}, {999, 1}};
	struct rs_map *m;
	uint64_t end;
	struct rs_owner owner;

	(void)state;
	m = logical_map(10, 13, 0, insta, 2);
	assert_int_equal(map_period(m), UINT64_C(1) << 23);
	assert_int_equal(map_n_pieces(m), 0);
	assert_int_equal(map_logical_shard(m, (UINT64_C(77) << 23) |
	                                              (5000 << 10) | 1023),
	                 5000);
	assert_int_equal(map_logical_first_point(m, 5000), 5000 << 10);
	map_free(m);

	m = logical_map(0, 0, 1000, mod, 2);
	assert_int_equal(map_period(m), 1000);
	assert_int_equal(map_logical_shard(m, 123456), 456);
	assert_int_equal(map_owner(m, 123249).shard, 0);
	assert_int_equal(map_owner(m, 123250).shard, 1);
	map_free(m);

	/* The top 12 bits: pieces of 2^52 points a logical shard. */
	m = logical_map(52, 12, 0, top, 3);
	assert_int_equal(map_period(m), 0);
	assert_int_equal(map_n_pieces(m), 3);
	map_piece(m, 0, &end, &owner);
	assert_int_equal(end, (UINT64_C(1024) << 52) - 1);
	assert_int_equal(owner.shard, 0);
	map_piece(m, 1, &end, &owner);
	assert_int_equal(end, (UINT64_C(2048) << 52) - 1);
	assert_int_equal(owner.shard, 1);
	assert_int_equal(map_owner(m, end).shard, 1);
	assert_int_equal(map_owner(m, end + 1).shard, 2);
	map_piece(m, 2, &end, &owner);
	assert_int_equal(end, UINT64_MAX);
	assert_int_equal(owner.shard, 2);
	map_free(m);
}

static void
test_map_new_refuses_bad_tables(void **state)
{
	struct rs_map_range short_table[] = {{4094, 0}};
	struct rs_map_def def = {.kind = RS_MAP_LOGICAL,
	                         .bits = 12,
	                         .logical_shards = 4096,
	                         .ranges = short_table,
	                         .n_ranges = 1};
	struct rs_err err = {0};

	(void)state;
	/* The last logical shard, 4095, would have no node. */
	assert_null(map_new(&def, RS_HASH_IDENTITY, names, &err));
	assert_int_equal(err.code, RS_EPLAN);
	short_table[0].end = 4095;
	def.shift = 60; /* 60 + 12 bits: past the point */
	assert_null(map_new(&def, RS_HASH_IDENTITY, names, &err));
	def.shift = 52;
	def.logical_shards = 0;
	assert_null(map_new(&def, RS_HASH_IDENTITY, names, &err));
}

/* The pair map of FROM and TO must exist and give, for many points, the
 * owners the two maps give one at a time. */
static void
check_pairs(const struct rs_map *from, const struct rs_map *to)
{
	struct rs_err err = {0};
	struct rs_pairmap *pairs = pairmap_new(from, to, &err);
	enum { N = 1000 };
	uint64_t points[N], s = 0x1234567;
	struct rs_owner f[N], t[N];

	assert_non_null(pairs);
	for (int round = 0; round < 50; round++) {
		for (int i = 0; i < N; i++) {
			uint64_t p = next_point(&s);

			/* Small ids too, and whole ranges of them. */
			points[i] = round % 2 ? p : p >> (p % 64);
		}
		pairmap_owners(pairs, points, N, f, t);
		for (int i = 0; i < N; i++) {
			struct rs_owner wf = map_owner(from, points[i]);
			struct rs_owner wt = map_owner(to, points[i]);

			if (f[i].shard != wf.shard || t[i].shard != wt.shard)
				fail_msg("point %llu: pair %d -> %d, the maps "
				         "say %d -> %d",
				         (unsigned long long)points[i],
				         f[i].shard, t[i].shard, wf.shard,
				         wt.shard);
		}
	}
	pairmap_free(pairs);
}

static void
test_pair_maps(void **state)
{
	struct rs_map_range half[] = {{4095, 0}, {8191, 1}};
	struct rs_map_range quarters[] = {
		{2047, 0}, {4095, 2}, {6143, 1}, {8191, 3}};
	struct rs_map_range top_from[] = {{2047, 0}, {4095, 1}};
	struct rs_map_range top_to[] = {{1000, 0}, {2047, 2}, {4095, 1}};
	struct rs_map_range mod_from[] = {{499, 0}, {999, 1}};
	struct rs_map_range mod_to[] = {{249, 0}, {499, 2}, {999, 1}};
	struct rs_map *from, *to;

	(void)state;
	/* Period 2^23: over logical shards. */
	from = logical_map(10, 13, 0, half, 2);
	to = logical_map(10, 13, 0, quarters, 4);
	check_pairs(from, to);
	map_free(from);
	map_free(to);
	/* The top bits: merged pieces. */
	from = logical_map(52, 12, 0, top_from, 2);
	to = logical_map(52, 12, 0, top_to, 3);
	check_pairs(from, to);
	map_free(from);
	map_free(to);
	/* Modulo 1000: one table of residues. */
	from = logical_map(0, 0, 1000, mod_from, 2);
	to = logical_map(0, 0, 1000, mod_to, 3);
	check_pairs(from, to);
	map_free(from);
	map_free(to);
}

/* Whether P is among the points M says move. */
static int
moving_has(const struct rs_moving *m, uint64_t p)
{
	for (size_t i = 0; i < m->n; i++) {
		if (m->period != 0 && m->residues[i] == p % m->period)
			return 1;
		if (m->period == 0 && m->spans[i][0] <= p &&
		    p <= m->spans[i][1])
			return 1;
	}
	return 0;
}

static void
check_moving(const struct rs_map *from, const struct rs_map *to,
             const uint64_t *edges, int n_edges)
{
	struct rs_moving moving;
	struct rs_err err = {0};
	uint64_t s = 99;

	assert_int_equal(pairmap_moving(from, to, -1, &moving, &err), 0);
	assert_true(moving.n > 0);
	for (int i = 0; i < 20000 + n_edges; i++) {
		uint64_t p = i < n_edges ? edges[i] : next_point(&s);
		int moves = map_owner(from, p).shard != map_owner(to, p).shard;

		if (moving_has(&moving, p) != moves)
			fail_msg("point %llu: moving %d, owners say %d",
			         (unsigned long long)p, moving_has(&moving, p),
			         moves);
	}
	pairmap_moving_free(&moving);
}

static void
test_moving_sets(void **state)
{
	struct rs_map_range top_from[] = {{2047, 0}, {4095, 1}};
	struct rs_map_range top_to[] = {{1000, 0}, {2047, 2}, {4095, 1}};
	struct rs_map_range mod_from[] = {{499, 0}, {999, 1}};
	struct rs_map_range mod_to[] = {{249, 0}, {499, 2}, {999, 1}};
	struct rs_map_range half[] = {{4095, 0}, {8191, 1}};
	struct rs_map_range quarters[] = {
		{2047, 0}, {4095, 2}, {6143, 1}, {8191, 3}};
	const uint64_t edges[] = {(UINT64_C(1001) << 52) - 1,
	                          UINT64_C(1001) << 52,
	                          (UINT64_C(2048) << 52) - 1,
	                          UINT64_C(2048) << 52,
	                          249,
	                          250,
	                          499,
	                          500,
	                          999,
	                          1000,
	                          0,
	                          UINT64_MAX};
	struct rs_map *from, *to;
	struct rs_moving moving;
	struct rs_err err = {0};

	(void)state;
	/* The top bits: spans of points. */
	from = logical_map(52, 12, 0, top_from, 2);
	to = logical_map(52, 12, 0, top_to, 3);
	check_moving(from, to, edges, 12);
	map_free(from);
	map_free(to);
	/* Modulo: residues. */
	from = logical_map(0, 0, 1000, mod_from, 2);
	to = logical_map(0, 0, 1000, mod_to, 3);
	check_moving(from, to, edges, 12);
	map_free(from);
	map_free(to);
	/* Period 2^23: no description; callers fence whole tables. */
	from = logical_map(10, 13, 0, half, 2);
	to = logical_map(10, 13, 0, quarters, 4);
	assert_int_equal(pairmap_moving(from, to, -1, &moving, &err),
	                 RS_EUSAGE);
	pairmap_moving_free(&moving);
	map_free(from);
	map_free(to);
}

static void
test_prove_doubling(void **state)
{
	struct rs_map_range half[] = {{4095, 0}, {8191, 1}};
	struct rs_map_range doubled[] = {
		{2047, 0}, {4095, 2}, {6143, 1}, {8191, 3}};
	struct rs_map_range wrong[] = {
		{2047, 0}, {4095, 2}, {5000, 1}, {5001, 2}, {8191, 3}};
	int replica_of[] = {2, 3, -1, -1};
	struct rs_doubling_found found[4];
	struct rs_err err = {0};
	struct rs_map *from = logical_map(10, 13, 0, half, 2);
	struct rs_map *to = logical_map(10, 13, 0, doubled, 4);
	struct rs_map *bad = logical_map(10, 13, 0, wrong, 5);

	(void)state;
	assert_int_equal(
		map_prove_doubling(from, to, replica_of, names, NULL, &err), 0);
	/* One logical shard, 5001, of b goes to a's replica. */
	assert_int_equal(
		map_prove_doubling(from, bad, replica_of, names, NULL, &err),
		RS_EPLAN);
	assert_non_null(strstr(err.message, "point 5121024 moves from b to c"));
	for (int i = 0; i < 4; i++)
		found[i] = (struct rs_doubling_found){-1, 0, -1, 0};
	assert_int_equal(
		map_prove_doubling(from, bad, replica_of, names, found, &err),
		RS_EPLAN);
	assert_int_equal(found[1].bad_to, 2);
	assert_int_equal(found[1].bad_point, UINT64_C(5001) << 10);
	assert_int_equal(found[1].spread, 1);
	assert_int_equal(found[0].bad_to, -1);
	assert_int_equal(found[0].moves_to, 2);
	map_free(from);
	map_free(to);
	map_free(bad);
}

static void
test_prove_doubling_other_shapes(void **state)
{
	/* modulo 2 → logical modulo 4: residues 2 and 3 go to the replicas
	 * of residues 0 and 1's owners; the generic periodic proof. */
	int two[] = {0, 1};
	struct rs_map_def mod2 = {
		.kind = RS_MAP_MODULO, .nodes = two, .n_nodes = 2};
	struct rs_map_range four[] = {{0, 0}, {1, 1}, {2, 2}, {3, 3}};
	struct rs_map_range swapped[] = {{0, 0}, {1, 1}, {2, 3}, {3, 2}};
	/* The top 12 bits against a range table: the interval proof. */
	struct rs_map_range top[] = {{2047, 0}, {4095, 1}};
	struct rs_map_range split[] = {{(UINT64_C(1024) << 52) - 1, 0},
	                               {(UINT64_C(2048) << 52) - 1, 2},
	                               {UINT64_MAX, 1}};
	struct rs_map_def ranges = {
		.kind = RS_MAP_RANGES, .ranges = split, .n_ranges = 3};
	int replica_of[] = {2, 3, -1, -1};
	struct rs_err err = {0};
	struct rs_map *from = compile(&mod2);
	struct rs_map *to = logical_map(0, 0, 4, four, 4);
	struct rs_map *bad = logical_map(0, 0, 4, swapped, 4);

	(void)state;
	assert_int_equal(
		map_prove_doubling(from, to, replica_of, names, NULL, &err), 0);
	assert_int_equal(
		map_prove_doubling(from, bad, replica_of, names, NULL, &err),
		RS_EPLAN);
	assert_non_null(strstr(err.message, "point 2 moves from a to d"));
	map_free(from);
	map_free(to);
	map_free(bad);

	from = logical_map(52, 12, 0, top, 2);
	to = compile(&ranges);
	assert_int_equal(
		map_prove_doubling(from, to, replica_of, names, NULL, &err), 0);
	split[1].end++; /* one point of b's to a's replica */
	map_free(to);
	to = compile(&ranges);
	assert_int_equal(
		map_prove_doubling(from, to, replica_of, names, NULL, &err),
		RS_EPLAN);
	assert_non_null(strstr(err.message, "moves from b to c"));
	map_free(from);
	map_free(to);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_owners_match_oracle),
		cmocka_unit_test(test_shape),
		cmocka_unit_test(test_map_new_refuses_bad_tables),
		cmocka_unit_test(test_pair_maps),
		cmocka_unit_test(test_moving_sets),
		cmocka_unit_test(test_prove_doubling),
		cmocka_unit_test(test_prove_doubling_other_shapes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
