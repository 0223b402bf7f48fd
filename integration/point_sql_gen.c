/*
 * point_sql_gen: the keys and expected points that
 * integration/scenario_point_sql.sh gives PostgreSQL and MariaDB, to check
 * that the servers compute a key's point (pg_sql_point, mysql_sql_point_set)
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
 *   DIR/pg.sql     the SELECTs that compute the same columns on
 *                  PostgreSQL from the tables tk (n, hex, k text) and ti
 *                  (n, k bigint), in the same order (pg_sql_point);
 *   DIR/my.sql     the same on MariaDB, computed as its fence and guard
 *                  triggers do (mysql_sql_point_declare and _set in a
 *                  BEFORE INSERT trigger of a copy of tk and of ti);
 *   DIR/my-latin1.sql
 *                  the same over tk's column l (latin1), text keys only;
 *   DIR/moves.tsv  one line a pair of maps: NAME, the hash, the key
 *                  table (km: text keys, ki: integer keys), the two maps
 *                  as tests/oracle.py spells them;
 *   DIR/moves-NAME.pg.sql, DIR/moves-NAME.my.sql
 *                  a SELECT of n and "moves" or "stays" for every key of
 *                  that table, ordered by n, by the point in SQL (on
 *                  MariaDB computed by a trigger, as above) and the
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

/* The columns of text.tsv and int.tsv after the key, in order. */
static const enum rs_hash hashes[] = {RS_HASH_SHA256_64, RS_HASH_IDENTITY,
                                      RS_HASH_FNV1A_64, RS_HASH_JAVA};

/* The SELECT of PostgreSQL over tk or ti. */
static int
write_pg_sql(const char *path)
{
	FILE *f = fopen(path, "w");
	struct rs_strbuf b = {0};

	if (f == NULL)
		return -1;
	for (int t = 0; t < 2; t++) {
		enum rs_col_kind kind = t == 0 ? RS_COL_TEXT : RS_COL_INTEGER;

		strbuf_str(&b, t == 0 ? "SELECT n, hex" : "SELECT n, k");
		for (size_t h = 0; h < sizeof(hashes) / sizeof(*hashes); h++) {
			strbuf_str(&b, ", ");
			pg_sql_point(&b, hashes[h], kind, "k");
		}
		strbuf_str(&b, t == 0 ? " FROM tk ORDER BY n;\n"
		                      : " FROM ti ORDER BY n;\n");
	}
	fputs(b.text, f);
	strbuf_clear(&b);
	return fclose(f);
}

/* Append to B a MariaDB table TABLE (n, NAME KEY_TYPE, p1 … pN) whose
 * BEFORE INSERT trigger sets each p to the point of NEW.`k` by one of
 * the N HASHES, as the fence and guard triggers compute it. */
static void
my_point_table(struct rs_strbuf *b, const char *table, const char *key_type,
               enum rs_col_kind kind, const enum rs_hash *hashes_of, int n)
{
	strbuf_printf(
		b,
		"DROP TABLE IF EXISTS %s;\nCREATE TABLE %s (n int PRIMARY KEY, "
		"hex text, k %s",
		table, table, key_type);
	for (int h = 0; h < n; h++)
		strbuf_printf(b, ", p%d DECIMAL(65,0)", h + 1);
	strbuf_printf(b,
	              ") DEFAULT CHARSET=utf8mb4;\nDELIMITER ;;\n"
	              "CREATE TRIGGER %s_points BEFORE INSERT ON %s FOR "
	              "EACH ROW BEGIN ",
	              table, table);
	mysql_sql_point_declare(b, RS_HASH_JAVA); /* every variable */
	for (int h = 0; h < n; h++) {
		mysql_sql_point_set(b, hashes_of[h], kind, "NEW.`k`");
		strbuf_printf(b, "; SET NEW.p%d = p; ", h + 1);
	}
	strbuf_str(b, "END;;\nDELIMITER ;\n");
}

/* The statements of MariaDB over tk and ti, or over tk's latin1 column l
 * (LATIN1). */
static int
write_my_sql(const char *path, int latin1)
{
	FILE *f = fopen(path, "w");
	struct rs_strbuf b = {0};
	int n = (int)(sizeof(hashes) / sizeof(*hashes));

	if (f == NULL)
		return -1;
	for (int t = 0; t < (latin1 ? 1 : 2); t++) {
		const char *table = t == 0 ? "pt_tk" : "pt_ti";

		my_point_table(&b, table,
		               t == 1   ? "bigint"
		               : latin1 ? "varchar(200) CHARACTER SET latin1"
		                        : "text",
		               t == 0 ? RS_COL_TEXT : RS_COL_INTEGER, hashes,
		               n);
		strbuf_printf(
			&b,
			"INSERT INTO %s (n, hex, k) SELECT n, %s FROM %s%s;\n",
			table,
			t == 1   ? "NULL, k"
			: latin1 ? "hex, l"
				 : "hex, k",
			t == 0 ? "tk" : "ti",
			latin1 ? " WHERE l IS NOT NULL" : "");
		strbuf_printf(
			&b,
			"SELECT n, %s, p1, p2, p3, p4 FROM %s ORDER BY n;\n",
			t == 0 ? "hex" : "k", table);
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
         "ring:100:n0,n1,n2,n3,n4"},
	{"ranges",
         RS_HASH_SHA256_64,
         "km",
         {.kind = RS_MAP_RANGES, .ranges = quarters, .n_ranges = 4},
         {.kind = RS_MAP_RANGES, .ranges = fifths, .n_ranges = 5},
         "ranges:0x3fffffffffffffff=n0,0x7fffffffffffffff=n1,"
         "0xbfffffffffffffff=n2,max=n3",
         "ranges:0x1fffffffffffffff=n0,0x3fffffffffffffff=n4,"
         "0x7fffffffffffffff=n1,0xbfffffffffffffff=n2,max=n3"},
	{"modulo",
         RS_HASH_SHA256_64,
         "km",
         {.kind = RS_MAP_MODULO, .nodes = four, .n_nodes = 4},
         {.kind = RS_MAP_MODULO, .nodes = five, .n_nodes = 5},
         "modulo:n0,n1,n2,n3",
         "modulo:n0,n1,n2,n3,n4"},
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
         "slots:4:4:n0,n1,n2,n3"},
	{"identity",
         RS_HASH_IDENTITY,
         "ki",
         {.kind = RS_MAP_RANGES, .ranges = by_value, .n_ranges = 2},
         {.kind = RS_MAP_RANGES, .ranges = by_value_split, .n_ranges = 3},
         "ranges:1000=n0,max=n1",
         "ranges:500=n0,1000=n2,max=n1"},
	{"ring-fnv1a",
         RS_HASH_FNV1A_64,
         "km",
         {.kind = RS_MAP_RING, .nodes = four, .n_nodes = 4, .vnodes = 100},
         {.kind = RS_MAP_RING, .nodes = five, .n_nodes = 5, .vnodes = 100},
         "ring:100:n0,n1,n2,n3",
         "ring:100:n0,n1,n2,n3,n4"},
	{"modulo-java",
         RS_HASH_JAVA,
         "km",
         {.kind = RS_MAP_MODULO, .nodes = four, .n_nodes = 4},
         {.kind = RS_MAP_MODULO, .nodes = five, .n_nodes = 5},
         "modulo:n0,n1,n2,n3",
         "modulo:n0,n1,n2,n3,n4"},
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
	if (!pg) {
		my_point_table(&b, "pt_moves",
		               kind == RS_COL_TEXT ? "text" : "bigint", kind,
		               &pair->hash, 1);
		strbuf_printf(&b,
		              "INSERT INTO pt_moves (n, k) SELECT n, k FROM "
		              "%s;\n",
		              pair->keys);
	}
	strbuf_str(&b, "SELECT n, CASE WHEN ");
	backend_sql_moves(&b, &moving, "p");
	strbuf_str(&b, " THEN 'moves' ELSE 'stays' END FROM (SELECT n, ");
	if (pg) {
		pg_sql_point(&b, pair->hash, kind, "k");
		strbuf_printf(&b, " AS p FROM %s", pair->keys);
	} else {
		strbuf_str(&b, "p1 AS p FROM pt_moves");
	}
	strbuf_str(&b, ") AS t ORDER BY n;\n");
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
		fprintf(f, "%s\t%s\t%s\t%s\t%s\n", pairs[i].name,
		        hash_name(pairs[i].hash), pairs[i].keys,
		        pairs[i].oracle_from, pairs[i].oracle_to);
		if (write_moves(dir, &pairs[i], 1) != 0 ||
		    write_moves(dir, &pairs[i], 0) != 0) {
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
	if (write_pg_sql(path) != 0)
		return 1;
	snprintf(path, sizeof(path), "%s/my.sql", argv[1]);
	if (write_my_sql(path, 0) != 0)
		return 1;
	snprintf(path, sizeof(path), "%s/my-latin1.sql", argv[1]);
	if (write_my_sql(path, 1) != 0)
		return 1;
	return write_pairs(argv[1]) != 0;
}
