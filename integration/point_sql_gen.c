/*
 * point_sql_gen: the keys and expected points that
 * integration/scenario_point_sql.sh gives PostgreSQL and MariaDB, to check
 * that the servers compute a key's point (pg_sql_point, mysql_sql_point)
 * exactly as reshard does.  Usage: point_sql_gen DIR.  Writes:
 *
 *   DIR/text.tsv   n, the key's bytes in hex, its sha256_64 point, its
 *                  identity point (\N where hash_identity refuses it), its
 *                  fnv1a_64 and its java point, for the UTF-8 keys of
 *                  tests/vectors/hash_vectors.h without a NUL (PostgreSQL
 *                  text holds none), whose sha256_64 points come from
 *                  Python's hashlib, fnv1a_64 from a Python FNV-1a and
 *                  java from a JVM, not from reshard;
 *                  then 100,000 keys of a fixed pseudo-random sequence
 *                  (customer ids, UTF-8 text of one to four bytes a
 *                  character, digit strings with leading zeros and past
 *                  2^64), expected from hash_point;
 *   DIR/int.tsv    n, a 64-bit integer key (the vectors' integer keys,
 *                  then 20,000 pseudo-random ones, negatives included),
 *                  and its four points as above;
 *   DIR/pg.sql, DIR/my.sql
 *                  the SELECTs that compute the same columns on each
 *                  server from the tables tk (n, hex, k text) and ti (n,
 *                  k bigint), in the same order: all four points on
 *                  PostgreSQL, the first two on MariaDB (which computes
 *                  no other);
 *   DIR/moves.tsv  one line a pair of maps: NAME, the hash, the key
 *                  table (km: text keys, ki: integer keys), the two maps
 *                  as tests/oracle.py spells them, and the engines that
 *                  compute that hash ("pg my" or "pg");
 *   DIR/moves-NAME.pg.sql, DIR/moves-NAME.my.sql
 *                  a SELECT of n and "moves" or "stays" for every key of
 *                  that table, ordered by n, by the point in SQL and the
 *                  moving set of the two maps (pairmap_moving,
 *                  backend_sql_moves), for tests/oracle.py to confirm.
 *
 * Points are printed in decimal.  Exit status 0, or 1 on an I/O error.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_engine.h" /* backend_sql_moves */
#include "backend/mysql_sql.h"
#include "backend/pg_sql.h"
#include "common/text.h"
#include "shardmap/hash.h"
#include "shardmap/map.h"
#include "shardmap/pairmap.h"
#include "../tests/vectors/hash_vectors.h"

static uint64_t seed = 0x9e3779b97f4a7c15u;

static uint64_t
next(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

/* One UTF-8 character of 1 to 4 bytes into OUT; returns its length. */
static int
utf8_char(char *out)
{
	static const uint32_t starts[] = {0x20, 0xa0, 0x400, 0x4e00, 0x1f600};
	static const uint32_t spans[] = {0x5f, 0x60, 0x100, 0x5000, 0x50};
	int which = (int)(next() % 5);
	uint32_t c = starts[which] + (uint32_t)(next() % spans[which]);

	if (c < 0x80) {
		out[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		out[0] = (char)(0xc0 | c >> 6);
		out[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		out[0] = (char)(0xe0 | c >> 12);
		out[1] = (char)(0x80 | (c >> 6 & 0x3f));
		out[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | c >> 18);
	out[1] = (char)(0x80 | (c >> 12 & 0x3f));
	out[2] = (char)(0x80 | (c >> 6 & 0x3f));
	out[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

/* Key number I of the pseudo-random sequence into KEY (at least 100
 * bytes: 20 characters of at most 4 bytes); returns its length. */
static size_t
random_key(int i, char *key)
{
	size_t n = 0;

	switch (i % 3) {
	case 0:
		return (size_t)snprintf(key, 100, "cliente:%d", i);
	case 1:
		for (int c = 1 + (int)(next() % 20); c > 0; c--)
			n += (size_t)utf8_char(key + n);
		return n;
	default:
		for (int z = (int)(next() % 4); z > 0; z--)
			key[n++] = '0';
		for (int d = 1 + (int)(next() % 22); d > 0; d--)
			key[n++] = (char)('0' + next() % 10);
		return n;
	}
}

/* The points after n and the key: sha256_64 SHA, identity (\N where
 * refused), fnv1a_64 FNV, java JAVA (\N: not UTF-8, never here). */
static void
print_points(FILE *f, const char *key, size_t len, uint64_t sha, uint64_t fnv,
             int java_ok, uint64_t java)
{
	uint64_t point;

	fprintf(f, "\t%llu", (unsigned long long)sha);
	if (hash_identity(key, len, &point) == 0)
		fprintf(f, "\t%llu", (unsigned long long)point);
	else
		fprintf(f, "\t\\N");
	fprintf(f, "\t%llu", (unsigned long long)fnv);
	if (java_ok)
		fprintf(f, "\t%llu\n", (unsigned long long)java);
	else
		fprintf(f, "\t\\N\n");
}

/* A key whose points reshard's C code gives. */
static void
print_points_c(FILE *f, const char *key, size_t len)
{
	uint64_t java = 0;
	int java_ok = hash_java(key, len, &java) == 0;

	print_points(f, key, len, hash_sha256_64(key, len),
	             hash_fnv1a_64(key, len), java_ok, java);
}

static void
print_text(FILE *f, int n, const char *key, size_t len)
{
	char hex[200];

	text_hex_encode(key, len, hex)[2 * len] = '\0';
	fprintf(f, "%d\t%s", n, hex);
}

static void
print_int(FILE *f, int n, long long value)
{
	char key[32];
	int len = snprintf(key, sizeof(key), "%lld", value);

	fprintf(f, "%d\t%lld", n, value);
	print_points_c(f, key, (size_t)len);
}

/* The SELECT of one engine over tk or ti. */
static int
write_sql(const char *path, int pg)
{
	FILE *f = fopen(path, "w");
	struct rs_strbuf b = {0};

	if (f == NULL)
		return -1;
	for (int t = 0; t < 2; t++) {
		enum rs_col_kind kind = t == 0 ? RS_COL_TEXT : RS_COL_INTEGER;

		strbuf_str(&b, t == 0 ? "SELECT n, hex, " : "SELECT n, k, ");
		if (pg) {
			pg_sql_point(&b, RS_HASH_SHA256_64, kind, "k");
			strbuf_str(&b, ", ");
			pg_sql_point(&b, RS_HASH_IDENTITY, kind, "k");
			strbuf_str(&b, ", ");
			pg_sql_point(&b, RS_HASH_FNV1A_64, kind, "k");
			strbuf_str(&b, ", ");
			pg_sql_point(&b, RS_HASH_JAVA, kind, "k");
		} else {
			mysql_sql_point(&b, RS_HASH_SHA256_64, kind, "k");
			strbuf_str(&b, ", ");
			mysql_sql_point(&b, RS_HASH_IDENTITY, kind, "k");
		}
		strbuf_str(&b, t == 0 ? " FROM tk ORDER BY n;\n"
		                      : " FROM ti ORDER BY n;\n");
	}
	fputs(b.text, f);
	strbuf_clear(&b);
	return fclose(f);
}

/* A pair of maps over the shards n0 … n4. */
struct map_pair {
	const char *name;
	enum rs_hash hash;
	const char *keys; /* km or ki */
	struct rs_map_def from, to;
	const char *oracle_from, *oracle_to;
	int pg_only; /* a hash MariaDB does not compute in SQL */
};

static int four[] = {0, 1, 2, 3}, five[] = {0, 1, 2, 3, 4}, two[] = {0, 1};
static struct rs_map_range quarters[] = {{UINT64_C(0x3fffffffffffffff), 0},
                                         {UINT64_C(0x7fffffffffffffff), 1},
                                         {UINT64_C(0xbfffffffffffffff), 2},
                                         {UINT64_MAX, 3}};
static struct rs_map_range fifths[] = {{UINT64_C(0x1fffffffffffffff), 0},
                                       {UINT64_C(0x3fffffffffffffff), 4},
                                       {UINT64_C(0x7fffffffffffffff), 1},
                                       {UINT64_C(0xbfffffffffffffff), 2},
                                       {UINT64_MAX, 3}};
static struct rs_map_range by_value[] = {{1000, 0}, {UINT64_MAX, 1}};
static struct rs_map_range by_value_split[] = {
	{500, 0}, {1000, 2}, {UINT64_MAX, 1}};

static const struct map_pair pairs[] = {
	{"ring",
         RS_HASH_SHA256_64,
         "km",
         {.kind = RS_MAP_RING, .nodes = four, .n_nodes = 4, .vnodes = 100},
         {.kind = RS_MAP_RING, .nodes = five, .n_nodes = 5, .vnodes = 100},
         "ring:100:n0,n1,n2,n3",
         "ring:100:n0,n1,n2,n3,n4",
         0},
	{"ranges",
         RS_HASH_SHA256_64,
         "km",
         {.kind = RS_MAP_RANGES, .ranges = quarters, .n_ranges = 4},
         {.kind = RS_MAP_RANGES, .ranges = fifths, .n_ranges = 5},
         "ranges:0x3fffffffffffffff=n0,0x7fffffffffffffff=n1,"
         "0xbfffffffffffffff=n2,max=n3",
         "ranges:0x1fffffffffffffff=n0,0x3fffffffffffffff=n4,"
         "0x7fffffffffffffff=n1,0xbfffffffffffffff=n2,max=n3",
         0},
	{"modulo",
         RS_HASH_SHA256_64,
         "km",
         {.kind = RS_MAP_MODULO, .nodes = four, .n_nodes = 4},
         {.kind = RS_MAP_MODULO, .nodes = five, .n_nodes = 5},
         "modulo:n0,n1,n2,n3",
         "modulo:n0,n1,n2,n3,n4",
         0},
	{"slots",
         RS_HASH_SHA256_64,
         "km",
         {.kind = RS_MAP_SLOTS,
          .nodes = two,
          .n_nodes = 2,
          .databases = 2,
          .tables_per_db = 4},
         {.kind = RS_MAP_SLOTS,
          .nodes = four,
          .n_nodes = 4,
          .databases = 4,
          .tables_per_db = 4},
         "slots:2:4:n0,n1",
         "slots:4:4:n0,n1,n2,n3",
         0},
	{"identity",
         RS_HASH_IDENTITY,
         "ki",
         {.kind = RS_MAP_RANGES, .ranges = by_value, .n_ranges = 2},
         {.kind = RS_MAP_RANGES, .ranges = by_value_split, .n_ranges = 3},
         "ranges:1000=n0,max=n1",
         "ranges:500=n0,1000=n2,max=n1",
         0},
	{"ring-fnv1a",
         RS_HASH_FNV1A_64,
         "km",
         {.kind = RS_MAP_RING, .nodes = four, .n_nodes = 4, .vnodes = 100},
         {.kind = RS_MAP_RING, .nodes = five, .n_nodes = 5, .vnodes = 100},
         "ring:100:n0,n1,n2,n3",
         "ring:100:n0,n1,n2,n3,n4",
         1},
	{"modulo-java",
         RS_HASH_JAVA,
         "km",
         {.kind = RS_MAP_MODULO, .nodes = four, .n_nodes = 4},
         {.kind = RS_MAP_MODULO, .nodes = five, .n_nodes = 5},
         "modulo:n0,n1,n2,n3",
         "modulo:n0,n1,n2,n3,n4",
         1},
};

static const char *const shard_names[] = {"n0", "n1", "n2", "n3", "n4"};

/* moves-NAME.ENGINE.sql for one pair of maps. */
static int
write_moves(const char *dir, const struct map_pair *pair, int pg)
{
	struct rs_err err = {0};
	struct rs_map *from =
		map_new(&pair->from, pair->hash, shard_names, &err);
	struct rs_map *to = map_new(&pair->to, pair->hash, shard_names, &err);
	enum rs_col_kind kind =
		pair->keys[1] == 'm' ? RS_COL_TEXT : RS_COL_INTEGER;
	struct rs_moving moving;
	struct rs_strbuf b = {0};
	char path[4096];
	FILE *f;
	int rc;

	if (from == NULL || to == NULL ||
	    pairmap_moving(from, to, -1, &moving, &err) != 0) {
		fprintf(stderr, "point_sql_gen: %s: no moving set %s\n",
		        pair->name, err.message);
		return -1;
	}
	strbuf_str(&b, "SELECT n, CASE WHEN ");
	backend_sql_moves(&b, &moving, "p");
	strbuf_str(&b, " THEN 'moves' ELSE 'stays' END FROM (SELECT n, ");
	if (pg)
		pg_sql_point(&b, pair->hash, kind, "k");
	else
		mysql_sql_point(&b, pair->hash, kind, "k");
	strbuf_printf(&b, " AS p FROM %s) AS t ORDER BY n;\n", pair->keys);
	snprintf(path, sizeof(path), "%s/moves-%s.%s.sql", dir, pair->name,
	         pg ? "pg" : "my");
	f = fopen(path, "w");
	rc = f == NULL || b.failed ? -1 : 0;
	if (f != NULL) {
		fputs(b.text, f);
		rc |= fclose(f);
	}
	strbuf_clear(&b);
	pairmap_moving_free(&moving);
	map_free(from);
	map_free(to);
	return rc;
}

static int
write_pairs(const char *dir)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/moves.tsv", dir);
	f = fopen(path, "w");
	if (f == NULL)
		return -1;
	for (size_t i = 0; i < sizeof(pairs) / sizeof(*pairs); i++) {
		fprintf(f, "%s\t%s\t%s\t%s\t%s\t%s\n", pairs[i].name,
		        hash_name(pairs[i].hash), pairs[i].keys,
		        pairs[i].oracle_from, pairs[i].oracle_to,
		        pairs[i].pg_only ? "pg" : "pg my");
		if (write_moves(dir, &pairs[i], 1) != 0 ||
		    (!pairs[i].pg_only &&
		     write_moves(dir, &pairs[i], 0) != 0)) {
			fclose(f);
			return -1;
		}
	}
	return fclose(f);
}

int
main(int argc, char **argv)
{
	char path[4096], key[200];
	FILE *text, *ints;
	int n = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: point_sql_gen DIR\n");
		return 2;
	}
	snprintf(path, sizeof(path), "%s/text.tsv", argv[1]);
	text = fopen(path, "w");
	snprintf(path, sizeof(path), "%s/int.tsv", argv[1]);
	ints = fopen(path, "w");
	if (text == NULL || ints == NULL)
		return 1;
	for (size_t i = 0; i < sizeof(hash_vectors) / sizeof(*hash_vectors);
	     i++) {
		const struct hash_vector *v = &hash_vectors[i];
		char *end;
		long long value;

		if (memchr(v->key, '\0', v->len) != NULL || v->len > 90)
			continue;
		print_text(text, n++, v->key, v->len);
		print_points(text, v->key, v->len, v->sha256_64, v->fnv1a_64, 1,
		             v->java);
		value = strtoll(v->key, &end, 10);
		if (v->len > 0 && end == v->key + v->len &&
		    (value != 0 || v->key[0] == '0') && value > INT64_MIN &&
		    value < INT64_MAX)
			print_int(ints, n++, value);
	}
	for (int i = 0; i < 100000; i++) {
		size_t len = random_key(i, key);

		print_text(text, n++, key, len);
		print_points_c(text, key, len);
	}
	for (int i = 0; i < 20000; i++)
		print_int(ints, n++,
		          i % 2 ? (long long)(next() >> 1)
		                : (long long)(next() % 2000001) - 1000000);
	if (fclose(text) != 0 || fclose(ints) != 0)
		return 1;
	snprintf(path, sizeof(path), "%s/pg.sql", argv[1]);
	if (write_sql(path, 1) != 0)
		return 1;
	snprintf(path, sizeof(path), "%s/my.sql", argv[1]);
	if (write_sql(path, 0) != 0)
		return 1;
	return write_pairs(argv[1]) != 0;
}
