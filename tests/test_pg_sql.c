/*
 * Unit tests of src/backend/pg_sql.c, the SQL text of the PostgreSQL
 * engine, without a server: the exact statements and parameters of
 * read_batch (with and without AFTER and UPTO), upsert, delete_keys and
 * the scan for a table with a composite key and a quote in its names;
 * NULLs, bytes, years before 1, values with quotes, backslashes and
 * control characters; a NUL byte refused; and the packing of an upsert
 * into INSERTs of at most 65,535 parameters, at the limit and one row
 * past it.  Then the statements of count, the fence (its message only as
 * the escaper made it), the marker, the delete log (a name too long for
 * PostgreSQL refused) and replication, and the readers of
 * synchronous_standby_names, libpq connection strings and host names
 * that replica_check relies on; and which points pg_sql_point computes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/pg_sql.h"

#define V(s)                                                                   \
	{                                                                      \
		s, sizeof(s) - 1                                               \
	}
#define VNULL                                                                  \
	{                                                                      \
		NULL, 0                                                        \
	}

/* "or""ders": key ("re""gion", "id"), in that order, the reverse of the
 * columns'. */
static struct rs_column columns[] = {
	{"id", "bigint", RS_COL_INTEGER, 0},
	{"re\"gion", "text", RS_COL_TEXT, 0},
	{"data", "bytea", RS_COL_BYTES, 0},
	{"note", "character varying(20)", RS_COL_TEXT, 0},
	{"born", "date", RS_COL_DATE, 0},
	{"at", "timestamp with time zone", RS_COL_TIMESTAMPTZ, 0},
};
static int key[] = {1, 0};
static struct rs_table_def orders = {"or\"ders", columns, 6,    key, 2,
                                     -1,         NULL,    NULL, 0};

static const char orders_upsert[] =
	"INSERT INTO \"or\"\"ders\" AS \"target\" (\"id\", \"re\"\"gion\", "
	"\"data\", \"note\", \"born\", \"at\") OVERRIDING SYSTEM VALUE SELECT "
	"\"r\".\"id\", \"r\".\"re\"\"gion\", \"r\".\"data\", \"r\".\"note\", "
	"\"r\".\"born\", \"r\".\"at\" FROM pg_catalog.json_to_recordset("
	"$1::pg_catalog.json) AS \"r\" (\"id\" bigint, \"re\"\"gion\" text, "
	"\"data\" bytea, \"note\" character varying(20), \"born\" date, "
	"\"at\" timestamp with time zone) ON CONFLICT (\"re\"\"gion\", \"id\") "
	"DO UPDATE SET \"data\" = EXCLUDED.\"data\", \"note\" = "
	"EXCLUDED.\"note\", \"born\" = EXCLUDED.\"born\", \"at\" = "
	"EXCLUDED.\"at\"";

static void
test_ident(void **state)
{
	struct rs_strbuf b = {0};

	(void)state;
	pg_sql_ident(&b, "or\"ders");
	strbuf_str(&b, " ");
	pg_sql_ident(&b, "t; drop table z");
	strbuf_str(&b, " ");
	pg_sql_ident(&b, "\"");
	assert_string_equal(b.text,
	                    "\"or\"\"ders\" \"t; drop table z\" \"\"\"\"");
	strbuf_clear(&b);
}

/* The input text of canonical values: bytes get "\x", years before 1
 * " BC" (astronomical -43 is 44 BC, 0 is 1 BC), everything else stays. */
static void
test_input(void **state)
{
	static const struct {
		enum rs_col_kind kind;
		const char *canonical, *input;
	} cases[] = {
		{RS_COL_BYTES, "00ff10", "\\x00ff10"},
		{RS_COL_BYTES, "", "\\x"},
		{RS_COL_DATE, "2024-02-29", "2024-02-29"},
		{RS_COL_DATE, "-0043-03-15", "0044-03-15 BC"},
		{RS_COL_DATE, "0000-01-01", "0001-01-01 BC"},
		{RS_COL_TIMESTAMPTZ, "-0001-12-31T23:59:59Z",
	         "0002-12-31T23:59:59Z BC"},
		{RS_COL_TIMESTAMP, "0000-06-01T00:00:00",
	         "0001-06-01T00:00:00 BC"},
		{RS_COL_TIMESTAMPTZ, "infinity", "infinity"},
		{RS_COL_TEXT, "-0043-03-15", "-0043-03-15"}, /* not a date */
		{RS_COL_TEXT, "it's \\ \"q\"", "it's \\ \"q\""},
		{RS_COL_BOOL, "t", "t"},
		{RS_COL_FLOAT, "NaN", "NaN"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rs_strbuf b = {0};

		pg_sql_input(&b, cases[i].kind, cases[i].canonical,
		             strlen(cases[i].canonical));
		assert_string_equal(b.text, cases[i].input);
		strbuf_clear(&b);
	}
}

static void
test_json(void **state)
{
	struct rs_strbuf b = {0};

	(void)state;
	pg_sql_json(&b, "a\"b\\c\n\x01\x1f\x7f\0z", 11);
	assert_string_equal(b.text,
	                    "\"a\\\"b\\\\c\\u000a\\u0001\\u001f\x7f\\u0000z\"");
	strbuf_clear(&b);
}

static void
check_params(const struct pg_sql_query *q, const char *const *want, int n)
{
	assert_int_equal(q->n_params, n);
	for (int i = 0; i < n; i++) {
		if (want[i] == NULL)
			assert_null(q->params[i]);
		else
			assert_string_equal(q->params[i], want[i]);
	}
}

/* The key values travel as parameters: a quote or backslash in one stays
 * out of the SQL text. */
static struct rs_value after[] = {V("eu'\\"), V("42")};
static struct rs_value upto[] = {V("us"), V("9000")};
static int read_columns[] = {2, 3, 5};

static void
test_read_unbounded(void **state)
{
	struct rs_read_request r = {&orders, read_columns, 3, NULL, NULL, 100};
	struct pg_sql_query q;

	(void)state;
	assert_int_equal(pg_sql_read(&r, &q, NULL), 0);
	assert_string_equal(q.sql, "SELECT \"re\"\"gion\", \"id\", \"data\", "
	                           "\"note\", \"at\" FROM \"or\"\"ders\" "
	                           "ORDER BY \"re\"\"gion\", \"id\" LIMIT 100");
	assert_int_equal(q.n_params, 0);
	assert_null(q.params);
	pg_sql_query_free(&q);
}

static void
test_read_after(void **state)
{
	struct rs_read_request r = {&orders, read_columns, 3, after, NULL, 100};
	const char *want[] = {"eu'\\", "42"};
	struct pg_sql_query q;

	(void)state;
	assert_int_equal(pg_sql_read(&r, &q, NULL), 0);
	assert_string_equal(
		q.sql, "SELECT \"re\"\"gion\", \"id\", \"data\", \"note\", "
		       "\"at\" FROM \"or\"\"ders\" WHERE (\"re\"\"gion\", "
		       "\"id\") > ($1, $2) ORDER BY \"re\"\"gion\", \"id\" "
		       "LIMIT 100");
	check_params(&q, want, 2);
	pg_sql_query_free(&q);
}

static void
test_read_upto(void **state)
{
	struct rs_read_request r = {&orders, read_columns, 3, NULL, upto, 7};
	const char *want[] = {"us", "9000"};
	struct pg_sql_query q;

	(void)state;
	assert_int_equal(pg_sql_read(&r, &q, NULL), 0);
	assert_string_equal(
		q.sql, "SELECT \"re\"\"gion\", \"id\", \"data\", \"note\", "
		       "\"at\" FROM \"or\"\"ders\" WHERE (\"re\"\"gion\", "
		       "\"id\") <= ($1, $2) ORDER BY \"re\"\"gion\", "
		       "\"id\" LIMIT 7");
	check_params(&q, want, 2);
	pg_sql_query_free(&q);
}

/* Both bounds, key columns only: the bounds are numbered on, $3 and $4.
 * A value need not end in NUL; the parameter does. */
static void
test_read_after_upto(void **state)
{
	struct rs_value upto_cut[] = {{"usa", 2}, {"90001", 4}};
	struct rs_read_request r = {&orders, NULL, 0, after, upto_cut, 1};
	const char *want[] = {"eu'\\", "42", "us", "9000"};
	struct pg_sql_query q;

	(void)state;
	assert_int_equal(pg_sql_read(&r, &q, NULL), 0);
	assert_string_equal(q.sql,
	                    "SELECT \"re\"\"gion\", \"id\" FROM \"or\"\"ders\" "
	                    "WHERE (\"re\"\"gion\", \"id\") > ($1, $2) AND "
	                    "(\"re\"\"gion\", \"id\") <= ($3, $4) ORDER BY "
	                    "\"re\"\"gion\", \"id\" LIMIT 1");
	check_params(&q, want, 4);
	pg_sql_query_free(&q);
}

/* Two rows: bytes as \x, years before 1 as BC, a NULL as a NULL
 * parameter, quotes and backslashes as they are (parameters). */
/* Bounds are canonical keys, turned into PostgreSQL input as upserts'
 * values are: bytes get their "\\x", a year before 1 its " BC"; the
 * parameters are numbered and cut right although the inputs are longer
 * than the canonical texts. */
static void
test_read_canonical_bounds(void **state)
{
	static struct rs_column kc[] = {
		{"k", "bytea", RS_COL_BYTES, 0},
		{"at", "timestamp with time zone", RS_COL_TIMESTAMPTZ, 0},
	};
	static int kk[] = {0, 1};
	static struct rs_table_def blobs = {"blobs", kc,   2,    kk, 2,
	                                    -1,      NULL, NULL, 0};
	struct rs_value lo[] = {V("ff00"), V("-0043-03-15T12:00:00Z")};
	struct rs_value hi[] = {V(""), V("2026-12-03T10:00:00.5Z")};
	struct rs_read_request r = {&blobs, NULL, 0, lo, hi, 10};
	const char *want[] = {"\\xff00", "0044-03-15T12:00:00Z BC", "\\x",
	                      "2026-12-03T10:00:00.5Z"};
	struct pg_sql_query q;

	(void)state;
	assert_int_equal(pg_sql_read(&r, &q, NULL), 0);
	assert_string_equal(q.sql, "SELECT \"k\", \"at\" FROM \"blobs\" "
	                           "WHERE (\"k\", \"at\") > ($1, $2) AND "
	                           "(\"k\", \"at\") <= ($3, $4) ORDER BY "
	                           "\"k\", \"at\" LIMIT 10");
	check_params(&q, want, 4);
	pg_sql_query_free(&q);
}

/* The rows as one JSON parameter, each value in PostgreSQL's input text
 * (bytes as hex, years before 1 as BC), a NULL as null. */
static void
test_upsert(void **state)
{
	struct rs_value rows_v[] = {
		V("1"),
		V("eu"),
		V("00ff10"),
		V("it's \\ \"q\""),
		V("-0043-03-15"),
		V("2024-01-02T03:04:05.123456Z"),
		V("2"),
		V("us"),
		VNULL,
		VNULL,
		V("0000-01-01"),
		V("infinity"),
	};
	struct rs_rows rows = {2, 6, rows_v};
	char *sql, *json;

	(void)state;
	assert_int_equal(pg_sql_upsert(&orders, &rows, &sql, &json, NULL), 0);
	assert_string_equal(sql, orders_upsert);
	assert_string_equal(json,
	                    "[{\"id\":\"1\",\"re\\\"gion\":\"eu\",\"data\":"
	                    "\"\\\\x00ff10\",\"note\":\"it's \\\\ \\\"q\\\"\","
	                    "\"born\":\"0044-03-15 BC\",\"at\":"
	                    "\"2024-01-02T03:04:05.123456Z\"},{\"id\":\"2\","
	                    "\"re\\\"gion\":\"us\",\"data\":null,\"note\":null,"
	                    "\"born\":\"0001-01-01 BC\",\"at\":\"infinity\"}]");
	free(sql);
	free(json);
}

/* Every column in the key: nothing to update.  A json column is read as
 * text and cast: json_to_recordset would keep a JSON string as one. */
static void
test_upsert_keys_only(void **state)
{
	struct rs_column kc[] = {{"a", "integer", RS_COL_INTEGER, 0},
	                         {"b", "jsonb", RS_COL_JSON, 0}};
	int kpk[] = {0, 1};
	struct rs_table_def t = {"keys only", kc, 2, kpk, 2, -1, NULL, NULL, 0};
	struct rs_value v[] = {V("1"), V("{\"x\": 1}")};
	struct rs_rows rows = {1, 2, v};
	char *sql, *json;

	(void)state;
	assert_int_equal(pg_sql_upsert(&t, &rows, &sql, &json, NULL), 0);
	assert_string_equal(
		sql, "INSERT INTO \"keys only\" AS \"target\" (\"a\", \"b\") "
		     "OVERRIDING SYSTEM VALUE SELECT \"r\".\"a\", "
		     "\"r\".\"b\"::jsonb FROM pg_catalog.json_to_recordset("
		     "$1::pg_catalog.json) AS \"r\" (\"a\" integer, \"b\" "
		     "text) ON CONFLICT (\"a\", \"b\") DO NOTHING");
	assert_string_equal(json, "[{\"a\":\"1\",\"b\":\"{\\\"x\\\": 1}\"}]");
	free(sql);
	free(json);
}

/* A generated column is read like any other and never written: the
 * server refuses a value for it (COPY and INSERT alike). */
static void
test_generated_not_written(void **state)
{
	struct rs_column gc[] = {{"id", "bigint", RS_COL_INTEGER, 0},
	                         {"twice", "bigint", RS_COL_INTEGER, 1},
	                         {"n", "bigint", RS_COL_INTEGER, 0}};
	int gpk[] = {0};
	struct rs_table_def t = {"g", gc, 3, gpk, 1, -1, NULL, NULL, 0};
	struct rs_value v[] = {V("1"), V("14"), V("7")};
	struct rs_rows rows = {1, 3, v};
	struct rs_strbuf data = {0};
	char *sql, *json;

	(void)state;
	assert_int_equal(pg_sql_upsert(&t, &rows, &sql, &json, NULL), 0);
	assert_string_equal(
		sql, "INSERT INTO \"g\" AS \"target\" (\"id\", \"n\") "
		     "OVERRIDING SYSTEM VALUE SELECT \"r\".\"id\", "
		     "\"r\".\"n\" FROM pg_catalog.json_to_recordset("
		     "$1::pg_catalog.json) AS \"r\" (\"id\" bigint, "
		     "\"twice\" bigint, \"n\" bigint) ON CONFLICT (\"id\") DO "
		     "UPDATE SET \"n\" = EXCLUDED.\"n\"");
	free(sql);
	free(json);
	assert_int_equal(pg_sql_load(&t, &rows, &sql, &data, NULL), 0);
	assert_string_equal(sql, "COPY \"g\" (\"id\", \"n\") FROM STDIN");
	assert_string_equal(data.text, "1\t7\n");
	free(sql);
	strbuf_clear(&data);
}

/* COPY's text format: tab, newline, carriage return and backslash
 * escaped in any kind, NULL as \N, bytes as \x and their hex, a year
 * before 1 as BC; a NUL byte refused as in an upsert, naming its row. */
static void
test_load_copy_text(void **state)
{
	struct rs_column lc[] = {{"id", "bigint", RS_COL_INTEGER, 0},
	                         {"note", "text", RS_COL_TEXT, 0},
	                         {"b", "bytea", RS_COL_BYTES, 0},
	                         {"d", "date", RS_COL_DATE, 0}};
	int lpk[] = {0};
	struct rs_table_def t = {"l", lc, 4, lpk, 1, -1, NULL, NULL, 0};
	struct rs_value v[] = {V("1"),    V("a\tb\nc\rd\\e"),
	                       V("0a0b"), V("-0043-03-15"),
	                       V("2"),    VNULL,
	                       V(""),     V("2026-12-07"),
	                       V("3"),    {"x\0\\", 3},
	                       VNULL,     VNULL};
	struct rs_rows rows = {2, 4, v};
	struct rs_strbuf data = {0};
	struct rs_err err;
	char *sql;

	(void)state;
	assert_int_equal(pg_sql_load(&t, &rows, &sql, &data, NULL), 0);
	assert_string_equal(data.text, "1\ta\\tb\\nc\\rd\\\\e\t\\\\x0a0b\t"
	                               "0044-03-15 BC\n"
	                               "2\t\\N\t\\\\x\t2026-12-07\n");
	free(sql);
	strbuf_clear(&data);
	rows.n_rows = 3;
	assert_int_equal(pg_sql_load(&t, &rows, &sql, &data, &err), RS_EQUERY);
	assert_string_equal(err.sqlstate, "22021");
	assert_non_null(strstr(err.message, "row 3 of the batch: column note"));
	assert_null(sql);
	assert_null(data.text);
}

/* The escaping of COPY's text format, whatever the byte's place in a
 * value (the encoder skips eight bytes at a time that hold none): each
 * of backslash, tab, newline and carriage return at every offset of a
 * 24-byte value is escaped; other control bytes and UTF-8 go as they
 * are; a NUL at any offset is refused.  The expected text comes from a
 * byte-by-byte reference written here. */
static void
test_load_copy_escape_offsets(void **state)
{
	static const char specials[] = {'\\', '\t', '\n', '\r', '\0'};
	struct rs_column ec[] = {{"id", "bigint", RS_COL_INTEGER, 0},
	                         {"note", "text", RS_COL_TEXT, 0}};
	int epk[] = {0};
	struct rs_table_def t = {"e", ec, 2, epk, 1, -1, NULL, NULL, 0};

	(void)state;
	for (size_t k = 0; k < sizeof(specials); k++) {
		for (size_t at = 0; at < 24; at++) {
			char value[24], want[64];
			size_t w = 0;
			struct rs_value v[] = {V("7"), {value, sizeof(value)}};
			struct rs_rows rows = {1, 2, v};
			struct rs_strbuf data = {0};
			struct rs_err err;
			char *sql;

			/* Plain bytes around it: letters, UTF-8 (é), and
			 * at the end a byte below 0x0e that COPY takes as it
			 * is. */
			for (size_t i = 0; i < sizeof(value); i++)
				value[i] = i % 5 == 3   ? '\xc3'
				           : i % 5 == 4 ? '\xa9'
				                        : (char)('a' + i);
			value[sizeof(value) - 1] = '\x01';
			value[at] = specials[k];
			want[w++] = '7';
			want[w++] = '\t';
			for (size_t i = 0; i < sizeof(value); i++) {
				char c = value[i];

				if (c == '\\' || c == '\t' || c == '\n' ||
				    c == '\r') {
					want[w++] = '\\';
					c = c == '\\'   ? '\\'
					    : c == '\t' ? 't'
					    : c == '\n' ? 'n'
					                : 'r';
				}
				want[w++] = c;
			}
			want[w++] = '\n';
			want[w] = '\0';
			if (specials[k] == '\0') {
				assert_int_equal(pg_sql_load(&t, &rows, &sql,
				                             &data, &err),
				                 RS_EQUERY);
				assert_string_equal(err.sqlstate, "22021");
				continue;
			}
			assert_int_equal(
				pg_sql_load(&t, &rows, &sql, &data, NULL), 0);
			assert_int_equal(data.len, w);
			assert_memory_equal(data.text, want, w);
			free(sql);
			strbuf_clear(&data);
		}
	}
}

/* A NUL byte in any value is refused before anything is built, naming the
 * row, the column and its type, with the server's SQLSTATE. */
static void
test_upsert_nul(void **state)
{
	struct rs_value v[] = {V("1"),  V("eu"),   V("00"), VNULL,
	                       VNULL,   VNULL,     V("2"),  V("eu"),
	                       V("00"), V("a\0b"), VNULL,   VNULL};
	struct rs_rows rows = {2, 6, v};
	struct rs_err err;
	char *sql, *json;

	(void)state;
	assert_int_equal(pg_sql_upsert(&orders, &rows, &sql, &json, &err),
	                 RS_EQUERY);
	assert_int_equal(err.code, RS_EQUERY);
	assert_string_equal(
		err.message,
		"table or\"ders, row 2 of the batch: column note "
		"holds a NUL byte, which PostgreSQL cannot store in "
		"character varying(20)");
	assert_string_equal(err.sqlstate, "22021");
	assert_null(sql);
	assert_null(json);
}

/* 70,000 rows, more than a statement could bind as parameters, are one
 * statement: the JSON holds every row, first and last. */
static void
test_upsert_many(void **state)
{
	static struct rs_column kv[] = {{"k", "integer", RS_COL_INTEGER, 0},
	                                {"v", "text", RS_COL_TEXT, 0}};
	static int kv_key[] = {0};
	struct rs_table_def t = {"big", kv, 2, kv_key, 1, -1, NULL, NULL, 0};
	int n_rows = 70000;
	struct rs_value *v = calloc((size_t)n_rows * 2, sizeof(*v));
	char(*text)[12] = calloc((size_t)n_rows, sizeof(*text));
	struct rs_rows rows = {n_rows, 2, v};
	char *sql, *json;
	size_t objects = 0;

	(void)state;
	assert_non_null(v);
	assert_non_null(text);
	for (int r = 0; r < n_rows; r++) {
		snprintf(text[r], sizeof(text[r]), "%d", r);
		v[2 * r] = v[2 * r + 1] =
			(struct rs_value){text[r], strlen(text[r])};
	}
	assert_int_equal(pg_sql_upsert(&t, &rows, &sql, &json, NULL), 0);
	assert_null(strstr(sql, "$2"));
	for (const char *p = json; (p = strchr(p, '{')) != NULL; p++)
		objects++;
	assert_int_equal(objects, (size_t)n_rows);
	assert_non_null(strstr(json, "[{\"k\":\"0\",\"v\":\"0\"},"));
	assert_non_null(strstr(json, ",{\"k\":\"69999\",\"v\":\"69999\"}]"));
	free(sql);
	free(json);
	free(v);
	free(text);
}

static const char orders_delete[] =
	"DELETE FROM \"or\"\"ders\" WHERE (\"re\"\"gion\", \"id\") IN (SELECT "
	"\"k\".\"re\"\"gion\", \"k\".\"id\" FROM "
	"pg_catalog.json_to_recordset($1::pg_catalog.json) AS \"k\" "
	"(\"re\"\"gion\" text, \"id\" bigint))";

/* The keys as JSON: names and values escaped, a NULL as null, key values
 * in key order. */
static void
test_delete(void **state)
{
	struct rs_value k[] = {V("eu\"\\\n\x01"), V("1"), V("us"),
	                       V("-2"),           VNULL,  V("3")};
	struct rs_rows keys = {3, 2, k};
	char *sql, *json;

	(void)state;
	assert_int_equal(pg_sql_delete(&orders, &keys, &sql, &json, NULL), 0);
	assert_string_equal(sql, orders_delete);
	assert_string_equal(json,
	                    "[{\"re\\\"gion\":\"eu\\\"\\\\\\u000a\\u0001\","
	                    "\"id\":\"1\"},{\"re\\\"gion\":\"us\",\"id\":"
	                    "\"-2\"},{\"re\\\"gion\":null,\"id\":\"3\"}]");
	free(sql);
	free(json);
}

/* Key values in their input text: a date before 1, bytes. */
static void
test_delete_input(void **state)
{
	struct rs_column c[] = {{"d", "date", RS_COL_DATE, 0},
	                        {"b", "bytea", RS_COL_BYTES, 0},
	                        {"x", "integer", RS_COL_INTEGER, 0}};
	int pk[] = {0, 1};
	struct rs_table_def t = {"dd", c, 3, pk, 2, -1, NULL, NULL, 0};
	struct rs_value k[] = {V("-0100-01-01"), V("cafe")};
	struct rs_rows keys = {1, 2, k};
	char *sql, *json;

	(void)state;
	assert_int_equal(pg_sql_delete(&t, &keys, &sql, &json, NULL), 0);
	assert_string_equal(sql, "DELETE FROM \"dd\" WHERE (\"d\", \"b\") IN "
	                         "(SELECT \"k\".\"d\", \"k\".\"b\" FROM "
	                         "pg_catalog.json_to_recordset($1::pg_catalog."
	                         "json) AS \"k\" (\"d\" date, \"b\" bytea))");
	assert_string_equal(json,
	                    "[{\"d\":\"0101-01-01 BC\",\"b\":\"\\\\xcafe\"}]");
	free(sql);
	free(json);
}

static void
test_delete_nul(void **state)
{
	struct rs_value k[] = {V("eu"), V("1"), {"e\0u", 3}, V("5")};
	struct rs_rows keys = {2, 2, k};
	struct rs_err err;
	char *sql, *json;

	(void)state;
	assert_int_equal(pg_sql_delete(&orders, &keys, &sql, &json, &err),
	                 RS_EQUERY);
	assert_string_equal(
		err.message,
		"table or\"ders, row 2 of the batch: column re\"gion "
		"holds a NUL byte, which PostgreSQL cannot store in "
		"text");
	assert_string_equal(err.sqlstate, "22021");
	assert_null(sql);
	assert_null(json);
}

static void
test_scan(void **state)
{
	int cols[] = {0, 1, 5};
	char *sql = pg_sql_scan_begin(&orders, cols, 3);
	char fetch[64];

	(void)state;
	assert_string_equal(sql,
	                    "BEGIN ISOLATION LEVEL REPEATABLE READ READ "
	                    "ONLY; DECLARE reshard_scan NO SCROLL CURSOR "
	                    "FOR SELECT \"id\", \"re\"\"gion\", \"at\" FROM "
	                    "\"or\"\"ders\"");
	free(sql);
	pg_sql_scan_fetch(fetch, sizeof(fetch), 500);
	assert_string_equal(fetch, "FETCH FORWARD 500 FROM reshard_scan");
	assert_string_equal(PG_SQL_SCAN_END, "CLOSE reshard_scan; COMMIT");
}

/* The catalog query looks the name up as one identifier, from its one
 * parameter. */
static void
test_describe(void **state)
{
	(void)state;
	assert_non_null(strstr(pg_sql_describe,
	                       "pg_catalog.to_regclass(pg_catalog.quote_ident("
	                       "$1))"));
	assert_null(strstr(pg_sql_describe, "$2"));
	assert_int_equal(strncmp(pg_sql_describe, "SELECT c.relkind, ", 18), 0);
}

static void
test_count(void **state)
{
	char *sql = pg_sql_count("or\"ders");

	(void)state;
	assert_string_equal(sql, "SELECT count(*) FROM \"or\"\"ders\"");
	free(sql);
}

/* A stand-in for PQescapeLiteral: '…' with quotes doubled, E'…' with
 * backslashes doubled when there are any; "refuse" is refused. */
static int
fake_literal(void *ctx, struct rs_strbuf *buf, const char *text, char *why,
             size_t size)
{
	(void)ctx;
	if (strcmp(text, "refuse") == 0) {
		snprintf(why, size, "invalid byte sequence");
		return -1;
	}
	strbuf_str(buf, strchr(text, '\\') != NULL ? " E'" : "'");
	for (const char *p = text; *p != '\0'; p++) {
		if (*p == '\'' || *p == '\\')
			strbuf_add(buf, p, 1);
		strbuf_add(buf, p, 1);
	}
	strbuf_str(buf, "'");
	return 0;
}

static const struct pg_sql_literal literal = {fake_literal, NULL};

/* The fence of one table: both triggers replaced, the message only as the
 * escaper made it; off drops them; a refused message fails. */
static void
test_fence_table(void **state)
{
	struct rs_err err;
	char *sql;

	(void)state;
	assert_int_equal(pg_sql_fence_table("or\"ders", 1, "run x's \\ fence",
	                                    NULL, &literal, &sql, &err),
	                 0);
	assert_string_equal(
		sql,
		"DROP TRIGGER IF EXISTS reshard_fence ON \"or\"\"ders\"; "
		"CREATE TRIGGER reshard_fence BEFORE INSERT OR UPDATE OR "
		"DELETE ON \"or\"\"ders\" FOR EACH STATEMENT EXECUTE FUNCTION "
		"reshard_fence( E'run x''s \\\\ fence'); ALTER TABLE "
		"\"or\"\"ders\" ENABLE ALWAYS TRIGGER reshard_fence; "
		"DROP TRIGGER IF EXISTS reshard_fence_truncate ON "
		"\"or\"\"ders\"; CREATE TRIGGER reshard_fence_truncate BEFORE "
		"TRUNCATE ON \"or\"\"ders\" FOR EACH STATEMENT EXECUTE "
		"FUNCTION reshard_fence( E'run x''s \\\\ fence'); ALTER TABLE "
		"\"or\"\"ders\" ENABLE ALWAYS TRIGGER reshard_fence_truncate");
	free(sql);
	assert_int_equal(
		pg_sql_fence_table("t", 0, NULL, NULL, &literal, &sql, &err),
		0);
	assert_string_equal(sql, "DROP TRIGGER IF EXISTS reshard_fence ON "
	                         "\"t\"; DROP TRIGGER IF EXISTS "
	                         "reshard_fence_truncate ON \"t\"");
	free(sql);
	assert_int_equal(pg_sql_fence_table("t", 1, "refuse", NULL, &literal,
	                                    &sql, &err),
	                 RS_EQUERY);
	assert_null(sql);
	assert_non_null(strstr(err.message, "invalid byte sequence"));
}

/* The fence of the rows that move: reshard_fence is a row trigger of
 * reshard_fence_rows with the message and the key column's name, the
 * TRUNCATE trigger stays whole; a refused key name fails. */
static void
test_fence_table_rows(void **state)
{
	struct rs_err err;
	char *sql;

	(void)state;
	assert_int_equal(pg_sql_fence_table("t", 1, "m", "cust'id", &literal,
	                                    &sql, &err),
	                 0);
	assert_string_equal(
		sql,
		"DROP TRIGGER IF EXISTS reshard_fence ON \"t\"; "
		"CREATE TRIGGER reshard_fence BEFORE INSERT OR UPDATE OR "
		"DELETE ON \"t\" FOR EACH ROW EXECUTE FUNCTION "
		"reshard_fence_rows('m', 'cust''id'); ALTER TABLE \"t\" "
		"ENABLE ALWAYS TRIGGER reshard_fence; "
		"DROP TRIGGER IF EXISTS reshard_fence_truncate ON \"t\"; "
		"CREATE TRIGGER reshard_fence_truncate BEFORE TRUNCATE ON "
		"\"t\" FOR EACH STATEMENT EXECUTE FUNCTION reshard_fence('m'); "
		"ALTER TABLE \"t\" ENABLE ALWAYS TRIGGER "
		"reshard_fence_truncate");
	free(sql);
	assert_int_equal(
		pg_sql_fence_table("t", 1, "m", "refuse", &literal, &sql, &err),
		RS_EQUERY);
	assert_null(sql);
	assert_non_null(strstr(err.message, "shard key's name"));
}

/* The functions of a fence of rows: the point computed once from the
 * key's text, tested against the spans; NULL keys and refused hashes. */
static void
test_fence_rows_functions(void **state)
{
	uint64_t spans[2][2] = {{10, 20}, {100, 18446744073709551615ULL}};
	struct rs_moving moving = {0, spans, NULL, 2};
	struct rs_strbuf b = {0};

	(void)state;
	assert_int_equal(
		pg_sql_fence_rows_functions(&b, RS_HASH_IDENTITY, &moving), 0);
	assert_non_null(strstr(
		b.text, "CREATE OR REPLACE FUNCTION reshard_moves(k text) "
			"RETURNS boolean LANGUAGE sql IMMUTABLE AS $reshard$"
			"SELECT (s.p BETWEEN 10 AND 20 OR s.p BETWEEN 100 AND "
			"18446744073709551615) FROM (SELECT (CASE WHEN k ~ "));
	assert_non_null(strstr(b.text, " AS p) AS s$reshard$; "));
	assert_non_null(strstr(b.text, "IF reshard_moves(pg_catalog.to_jsonb("
	                               "OLD) ->> TG_ARGV[1]) IS NOT FALSE "
	                               "THEN RAISE EXCEPTION"));
	assert_non_null(strstr(b.text, "IF reshard_moves(pg_catalog.to_jsonb("
	                               "NEW) ->> TG_ARGV[1]) IS NOT FALSE"));
	assert_non_null(strstr(b.text, "ERRCODE = 'RS001'"));
	strbuf_clear(&b);
	assert_int_equal(
		pg_sql_fence_rows_functions(&b, RS_HASH_FNV1A_64, &moving), 0);
	assert_non_null(strstr(b.text, "(WITH RECURSIVE \"f\"(i, h, b) AS "
	                               "(SELECT 0, 14695981039346656037::"
	                               "numeric, pg_catalog.convert_to(k, "
	                               "'UTF8') UNION ALL"));
	strbuf_clear(&b);
	assert_non_null(strstr(pg_sql_fence_function_drop,
	                       "DROP FUNCTION reshard_fence_rows(); "
	                       "DROP FUNCTION IF EXISTS reshard_moves(text)"));
}

/* The ownership guard: reshard_owner places the point among the owners'
 * sets, the trigger raises RS002 with that owner's message unless purge
 * is deleting, the triggers take the key and the messages as literals;
 * off drops the triggers, then the functions once unused. */
static void
test_guard(void **state)
{
	uint64_t a[1][2] = {{0, 99}}, c[1][2] = {{200, 299}};
	struct rs_moving owned[2] = {{0, a, NULL, 1}, {0, c, NULL, 1}};
	const char *keys[2] = {"k", "k2"}, *messages[2] = {"to a", "to b"};
	enum rs_col_kind kinds[2] = {RS_COL_TEXT, RS_COL_INTEGER};
	struct rs_guard guard = {RS_HASH_IDENTITY, keys, kinds, 2, owned,
	                         messages};
	const char *tables[2] = {"t", "u"};
	struct rs_err err;
	char *sql;

	(void)state;
	assert_int_equal(pg_sql_guard(tables, 2, &guard, &literal, &sql, &err),
	                 0);
	assert_non_null(strstr(
		sql,
		"CREATE OR REPLACE FUNCTION reshard_owner(k text) RETURNS "
		"integer LANGUAGE sql IMMUTABLE AS $reshard$SELECT CASE "
		"WHEN (s.p BETWEEN 0 AND 99) THEN 1 WHEN (s.p BETWEEN 200 "
		"AND 299) THEN 2 ELSE 0 END FROM (SELECT (CASE WHEN k ~ "));
	assert_non_null(strstr(sql, "current_setting('reshard.purging', "
	                            "true) IS NOT DISTINCT FROM 'on'"));
	assert_non_null(strstr(sql, "RAISE EXCEPTION USING MESSAGE = "
	                            "TG_ARGV[i], ERRCODE = 'RS002'"));
	assert_non_null(strstr(
		sql,
		"; DROP TRIGGER IF EXISTS reshard_guard ON \"u\"; CREATE "
		"TRIGGER reshard_guard BEFORE INSERT OR UPDATE OR DELETE ON "
		"\"u\" FOR EACH ROW EXECUTE FUNCTION reshard_guard_rows("
		"'k2', 'to a', 'to b'); ALTER TABLE \"u\" ENABLE ALWAYS "
		"TRIGGER reshard_guard"));
	free(sql);
	assert_int_equal(pg_sql_guard(tables, 2, NULL, &literal, &sql, &err),
	                 0);
	assert_non_null(strstr(sql, "DROP TRIGGER IF EXISTS reshard_guard ON "
	                            "\"t\"; DROP TRIGGER IF EXISTS "
	                            "reshard_guard ON \"u\"; DO $reshard$"));
	assert_non_null(strstr(sql, "DROP FUNCTION reshard_guard_rows(); "
	                            "DROP FUNCTION IF EXISTS "
	                            "reshard_owner(text)"));
	free(sql);
	/* java's point is a loop in SQL too. */
	guard.hash = RS_HASH_JAVA;
	assert_int_equal(pg_sql_guard(tables, 2, &guard, &literal, &sql, &err),
	                 0);
	assert_non_null(strstr(sql, "FROM (SELECT (WITH RECURSIVE \"j\"(i, h, "
	                            "s) AS (SELECT 1, 0::numeric, k UNION"));
	free(sql);
	messages[1] = "refuse";
	assert_int_equal(pg_sql_guard(tables, 2, &guard, &literal, &sql, &err),
	                 RS_EQUERY);
	assert_null(sql);
}

/* The function raises the fence's SQLSTATE with its argument as the
 * message; the other statements keep to the catalog and parameters. */
static void
test_fence_sql(void **state)
{
	(void)state;
	assert_non_null(strstr(pg_sql_fence_function,
	                       "RAISE EXCEPTION USING MESSAGE = TG_ARGV[0], "
	                       "ERRCODE = 'RS001'"));
	assert_string_equal(PG_SQL_FENCE_SQLSTATE, "RS001");
	assert_non_null(strstr(pg_sql_fence_function_drop,
	                       "NOT EXISTS (SELECT 1 FROM pg_catalog."
	                       "pg_trigger WHERE tgfoid = "));
	assert_non_null(
		strstr(pg_sql_fence_inventory,
	               "json_array_elements_text(  $1::pg_catalog.json)"));
	assert_non_null(strstr(pg_sql_fenced, "quote_ident($1)"));
	assert_non_null(strstr(pg_sql_marker_upsert,
	                       "VALUES ($1, $2, $3, $4::bigint, "
	                       "pg_catalog.to_char(pg_catalog.now() AT TIME "
	                       "ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'))"));
	assert_non_null(strstr(pg_sql_marker_table, "plan text PRIMARY KEY"));
	assert_string_equal(PG_SQL_PURGE_BEGIN,
	                    "BEGIN; SET LOCAL reshard.purging = 'on'");
}

static void
test_dollar_quote(void **state)
{
	struct rs_strbuf b = {0};

	(void)state;
	pg_sql_dollar_quote(&b, "plain");
	strbuf_str(&b, " ");
	pg_sql_dollar_quote(&b, "a $reshard$ b");
	strbuf_str(&b, " ");
	pg_sql_dollar_quote(&b, "$reshard$$reshard1$");
	assert_string_equal(b.text, "$reshard$plain$reshard$ $reshard1$a "
	                            "$reshard$ b$reshard1$ $reshard2$$reshard$"
	                            "$reshard1$$reshard2$");
	strbuf_clear(&b);
}

/* The delete log of or"ders keyed ("re""gion", "id"): the log's columns
 * with their types, its function, the two triggers; off drops them. */
static void
test_delete_log(void **state)
{
	char *sql;

	(void)state;
	assert_int_equal(pg_sql_delete_log(&orders, 1, &sql, NULL), 0);
	assert_string_equal(
		sql,
		"CREATE TABLE IF NOT EXISTS \"reshard_del_or\"\"ders\" "
		"(\"re\"\"gion\" text, \"id\" bigint, PRIMARY KEY "
		"(\"re\"\"gion\", \"id\")); CREATE OR REPLACE FUNCTION "
		"\"reshard_del_or\"\"ders\"() RETURNS trigger LANGUAGE plpgsql "
		"SET search_path FROM CURRENT AS $reshard$BEGIN INSERT INTO "
		"\"reshard_del_or\"\"ders\" (\"re\"\"gion\", \"id\") VALUES "
		"(OLD.\"re\"\"gion\", OLD.\"id\") ON CONFLICT DO NOTHING; "
		"RETURN NULL; END$reshard$; DO $reshard1$BEGIN EXECUTE "
		"pg_catalog.format('ALTER FUNCTION %1$s() SECURITY DEFINER "
		"SET search_path = pg_catalog, %2$I, pg_temp; REVOKE ALL ON "
		"FUNCTION %1$s() FROM PUBLIC', "
		"$reshard$\"reshard_del_or\"\"ders\"$reshard$, "
		"pg_catalog.current_schema()); END$reshard1$; DROP TRIGGER "
		"IF EXISTS reshard_dellog ON \"or\"\"ders\"; CREATE TRIGGER "
		"reshard_dellog AFTER DELETE ON \"or\"\"ders\" FOR EACH ROW "
		"WHEN (pg_catalog.current_setting('reshard.purging', true) IS "
		"DISTINCT FROM 'on') EXECUTE FUNCTION "
		"\"reshard_del_or\"\"ders\"(); DROP TRIGGER IF EXISTS "
		"reshard_dellog_u ON \"or\"\"ders\"; CREATE TRIGGER "
		"reshard_dellog_u AFTER UPDATE OF \"re\"\"gion\", \"id\" ON "
		"\"or\"\"ders\" FOR EACH ROW WHEN ((OLD.\"re\"\"gion\", "
		"OLD.\"id\") IS DISTINCT FROM (NEW.\"re\"\"gion\", NEW.\"id\") "
		"AND pg_catalog.current_setting('reshard.purging', true) IS "
		"DISTINCT FROM 'on') EXECUTE FUNCTION "
		"\"reshard_del_or\"\"ders\"(); ALTER TABLE \"or\"\"ders\" "
		"ENABLE ALWAYS TRIGGER reshard_dellog, ENABLE ALWAYS TRIGGER "
		"reshard_dellog_u");
	free(sql);
	assert_int_equal(pg_sql_delete_log(&orders, 0, &sql, NULL), 0);
	assert_string_equal(sql,
	                    "DROP TRIGGER IF EXISTS reshard_dellog ON "
	                    "\"or\"\"ders\"; DROP TRIGGER IF EXISTS "
	                    "reshard_dellog_u ON \"or\"\"ders\"; DROP "
	                    "FUNCTION IF EXISTS \"reshard_del_or\"\"ders\"(); "
	                    "DROP TABLE IF EXISTS \"reshard_del_or\"\"ders\"");
	free(sql);
}

/* Builds a log of T (on) into *SQL: pg_sql_delete_log or pg_sql_capture. */
typedef int (*log_builder)(const struct rs_table_def *t, char **sql,
                           struct rs_err *err);

/* A log name over 63 bytes would be cut by the server: refused, saying
 * WHAT and the longest table name that fits.  51 bytes of table name still
 * fit (both logs' prefixes are 12 bytes). */
static void
check_log_name_limit(log_builder build, const char *what)
{
	char name[64];
	struct rs_table_def t = orders;
	struct rs_err err;
	char *sql;

	memset(name, 'n', 51);
	name[51] = '\0';
	t.name = name;
	assert_int_equal(build(&t, &sql, &err), 0);
	free(sql);
	name[51] = 'n';
	name[52] = '\0';
	assert_int_equal(build(&t, &sql, &err), RS_ESCHEMA);
	assert_null(sql);
	assert_non_null(strstr(err.message, what));
	assert_non_null(strstr(err.message, "longer than PostgreSQL's 63 "
	                                    "bytes; rename the table (at most "
	                                    "51 bytes)"));
}

static int
build_delete_log(const struct rs_table_def *t, char **sql, struct rs_err *err)
{
	return pg_sql_delete_log(t, 1, sql, err);
}

static int
build_capture(const struct rs_table_def *t, char **sql, struct rs_err *err)
{
	return pg_sql_capture(t, 3, 1, sql, err);
}

static void
test_delete_log_long(void **state)
{
	(void)state;
	check_log_name_limit(build_delete_log, "its delete log, reshard_del_");
}

/* Reads by key: the key columns then the columns asked for, the keys as
 * pg_sql_delete takes them. */
static void
test_read_keys(void **state)
{
	struct rs_value k[] = {V("eu"), V("1")};
	struct rs_rows keys = {1, 2, k};
	int cols[] = {3, 2};
	struct rs_keys_request r = {&orders, cols, 2, &keys};
	char *sql, *json;

	(void)state;
	assert_int_equal(pg_sql_read_keys(&r, &sql, &json, NULL), 0);
	assert_string_equal(
		sql, "SELECT \"re\"\"gion\", \"id\", \"note\", \"data\" FROM "
		     "\"or\"\"ders\" WHERE (\"re\"\"gion\", \"id\") IN (SELECT "
		     "\"k\".\"re\"\"gion\", \"k\".\"id\" FROM "
		     "pg_catalog.json_to_recordset($1::pg_catalog.json) AS "
		     "\"k\" (\"re\"\"gion\" text, \"id\" bigint))");
	assert_string_equal(json, "[{\"re\\\"gion\":\"eu\",\"id\":\"1\"}]");
	free(sql);
	free(json);
}

/* Change capture of or"ders sharded on "note" (not in its key): the log
 * keeps the key and "note"; the function logs OLD on delete and on an
 * update that changes one of them, NEW on insert and update. */
static void
test_capture(void **state)
{
	char *sql;

	(void)state;
	assert_int_equal(pg_sql_capture(&orders, 3, 1, &sql, NULL), 0);
	assert_string_equal(
		sql,
		"CREATE TABLE IF NOT EXISTS \"reshard_chg_or\"\"ders\" "
		"(reshard_pos bigint GENERATED ALWAYS AS IDENTITY PRIMARY "
		"KEY, \"re\"\"gion\" text, \"id\" bigint, \"note\" character "
		"varying(20)); CREATE OR REPLACE FUNCTION "
		"\"reshard_chg_or\"\"ders\"() RETURNS trigger LANGUAGE plpgsql "
		"SET search_path FROM CURRENT AS $reshard$BEGIN IF TG_OP = "
		"'TRUNCATE' THEN RAISE EXCEPTION 'TRUNCATE of % refused: "
		"reshard is capturing the changes of this table for a run in "
		"progress, and a TRUNCATE would not reach the copies of its "
		"rows; delete the rows instead, or truncate once the run has "
		"ended', TG_TABLE_NAME USING ERRCODE = '55000'; END IF; IF "
		"TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND "
		"(OLD.\"re\"\"gion\", "
		"OLD.\"id\", OLD.\"note\")::text COLLATE \"C\" IS DISTINCT "
		"FROM (NEW.\"re\"\"gion\", NEW.\"id\", NEW.\"note\")::text "
		"COLLATE \"C\") THEN INSERT "
		"INTO \"reshard_chg_or\"\"ders\" (\"re\"\"gion\", \"id\", "
		"\"note\") VALUES (OLD.\"re\"\"gion\", OLD.\"id\", "
		"OLD.\"note\"); END IF; IF TG_OP <> 'DELETE' THEN INSERT INTO "
		"\"reshard_chg_or\"\"ders\" (\"re\"\"gion\", \"id\", \"note\") "
		"VALUES (NEW.\"re\"\"gion\", NEW.\"id\", NEW.\"note\"); END "
		"IF; RETURN NULL; END$reshard$; DO $reshard1$BEGIN EXECUTE "
		"pg_catalog.format('ALTER FUNCTION %1$s() SECURITY DEFINER "
		"SET search_path = pg_catalog, %2$I, pg_temp; REVOKE ALL ON "
		"FUNCTION %1$s() FROM PUBLIC', "
		"$reshard$\"reshard_chg_or\"\"ders\"$reshard$, "
		"pg_catalog.current_schema()); END$reshard1$; DROP TRIGGER "
		"IF EXISTS reshard_capture ON \"or\"\"ders\"; CREATE TRIGGER "
		"reshard_capture AFTER INSERT OR UPDATE OR DELETE ON "
		"\"or\"\"ders\" FOR EACH ROW EXECUTE FUNCTION "
		"\"reshard_chg_or\"\"ders\"(); DROP TRIGGER IF EXISTS "
		"reshard_capture_truncate ON \"or\"\"ders\"; CREATE TRIGGER "
		"reshard_capture_truncate BEFORE TRUNCATE ON \"or\"\"ders\" "
		"FOR EACH STATEMENT EXECUTE FUNCTION "
		"\"reshard_chg_or\"\"ders\"(); ALTER TABLE \"or\"\"ders\" "
		"ENABLE ALWAYS TRIGGER reshard_capture, ENABLE ALWAYS TRIGGER "
		"reshard_capture_truncate");
	free(sql);
	/* Sharded on a key column: the log keeps the key alone. */
	assert_int_equal(pg_sql_capture(&orders, 0, 1, &sql, NULL), 0);
	assert_non_null(strstr(sql, "(reshard_pos bigint GENERATED ALWAYS AS "
	                            "IDENTITY PRIMARY KEY, \"re\"\"gion\" "
	                            "text, \"id\" bigint); "));
	free(sql);
	assert_int_equal(pg_sql_capture(&orders, 3, 0, &sql, NULL), 0);
	assert_string_equal(sql, "DROP TRIGGER IF EXISTS reshard_capture ON "
	                         "\"or\"\"ders\"; DROP TRIGGER IF EXISTS "
	                         "reshard_capture_truncate ON "
	                         "\"or\"\"ders\"; DROP FUNCTION IF EXISTS "
	                         "\"reshard_chg_or\"\"ders\"(); DROP TABLE IF "
	                         "EXISTS \"reshard_chg_or\"\"ders\"");
	free(sql);
}

/* The change log's name must fit in 63 bytes too. */
static void
test_capture_long(void **state)
{
	(void)state;
	check_log_name_limit(build_capture, "its change log, reshard_chg_");
}

static void
test_replication_sql(void **state)
{
	char buf[PG_SQL_PROMOTE_SIZE];

	(void)state;
	pg_sql_promote(buf, sizeof(buf), 58);
	assert_string_equal(
		buf, "WITH RECURSIVE \"w\"(i, r) AS (SELECT 0, "
		     "pg_catalog.pg_promote(false) UNION ALL SELECT i + 1, "
		     "pg_catalog.pg_is_in_recovery() FROM \"w\" WHERE r AND "
		     "i < 11600 AND pg_catalog.pg_sleep(0.005)::text = '') "
		     "SELECT coalesce(bool_or(NOT r), false) FROM \"w\" WHERE "
		     "i > 0");
	pg_sql_promote(buf, sizeof(buf), -1);
	assert_non_null(strstr(buf, "i < 200 AND"));
	assert_non_null(strstr(pg_sql_catch_up, "pg_last_wal_replay_lsn() >= "
	                                        "$1::pg_catalog.pg_lsn"));
	assert_non_null(strstr(pg_sql_replica_lag, "pg_wal_lsn_diff("));
	assert_non_null(
		strstr(pg_sql_primary_facts, "pg_current_wal_flush_lsn()"));
	assert_non_null(strstr(pg_sql_replica_facts,
	                       "pg_catalog.pg_stat_wal_receiver"));
	assert_non_null(strstr(pg_sql_slot_drop, "AND NOT active"));
	assert_non_null(strstr(pg_sql_slot_name,
	                       "current_setting('primary_slot_name', true)"));
	assert_string_equal(pg_sql_position,
	                    "SELECT pg_catalog.pg_current_wal_flush_lsn()"
	                    "::text");
}

/* synchronous_standby_names as the server reads it. */
static void
test_sync_listed(void **state)
{
	(void)state;
	assert_int_equal(pg_sql_sync_listed("", "walreceiver"), 0);
	assert_int_equal(pg_sql_sync_listed(NULL, "walreceiver"), 0);
	assert_int_equal(pg_sql_sync_listed("walreceiver", "walreceiver"), 1);
	assert_int_equal(pg_sql_sync_listed("a, WalReceiver", "walreceiver"),
	                 1);
	assert_int_equal(pg_sql_sync_listed("a, b", "walreceiver"), 0);
	assert_int_equal(pg_sql_sync_listed("*", "x"), 1);
	assert_int_equal(pg_sql_sync_listed("FIRST 2 (a, \"B c\")", "b c"), 1);
	assert_int_equal(pg_sql_sync_listed("FIRST 2 (a, \"B c\")", "first"),
	                 0);
	assert_int_equal(pg_sql_sync_listed("ANY 1 (s1,s2)", "s2"), 1);
	assert_int_equal(pg_sql_sync_listed("ANY 1 (s1,s2)", "any"), 0);
	assert_int_equal(pg_sql_sync_listed("2 (s1, s2)", "2"), 0);
	assert_int_equal(pg_sql_sync_listed("first", "first"), 1);
	assert_int_equal(pg_sql_sync_listed("\"*\"", "x"), 0);
	assert_int_equal(pg_sql_sync_listed("\"a\"\"b\"", "a\"b"), 1);
}

static void
test_conninfo_value(void **state)
{
	const char *ci = "user=replicator password=******** host=127.0.0.1 "
			 "port=55431 application_name='my \\'app\\'' "
			 "fallback_application_name=walreceiver";
	char buf[64];

	(void)state;
	assert_int_equal(
		pg_sql_conninfo_value(ci, "application_name", buf, sizeof(buf)),
		1);
	assert_string_equal(buf, "my 'app'");
	assert_int_equal(pg_sql_conninfo_value(ci, "fallback_application_name",
	                                       buf, sizeof(buf)),
	                 1);
	assert_string_equal(buf, "walreceiver");
	assert_int_equal(pg_sql_conninfo_value(ci, "port", buf, sizeof(buf)),
	                 1);
	assert_string_equal(buf, "55431");
	assert_int_equal(pg_sql_conninfo_value(ci, "name", buf, sizeof(buf)),
	                 0);
	assert_string_equal(buf, "");
	assert_int_equal(pg_sql_conninfo_value(NULL, "host", buf, sizeof(buf)),
	                 0);
}

/* Loopback is "this machine": the replica's, or reshard's. */
static void
test_same_host(void **state)
{
	(void)state;
	assert_int_equal(
		pg_sql_same_host("127.0.0.1", "127.0.0.1", "localhost"), 1);
	assert_int_equal(pg_sql_same_host("localhost", "::1", "127.0.0.1"), 1);
	assert_int_equal(pg_sql_same_host("/var/run/postgresql", "localhost",
	                                  "127.0.0.1"),
	                 1);
	/* The replica's loopback is its own machine, db2. */
	assert_int_equal(pg_sql_same_host("127.0.0.1", "db2", "db2"), 1);
	assert_int_equal(pg_sql_same_host("127.0.0.1", "db2", "127.0.0.1"), 0);
	assert_int_equal(pg_sql_same_host("127.0.0.1", "db2", "db1"), 0);
	assert_int_equal(pg_sql_same_host("DB1.example", "db2", "db1.example"),
	                 1);
	assert_int_equal(pg_sql_same_host("10.0.0.1", "db2", "db1"), 0);
	assert_int_equal(pg_sql_same_host("10.0.0.1", "127.0.0.1", "127.0.0.1"),
	                 0);
}

/* The point in SQL: every hash of text and integer keys
 * (integration/scenario_point_sql.sh runs them on a server); any other
 * key kind refused with nothing appended. */
static void
test_point(void **state)
{
	struct rs_strbuf b = {0};

	(void)state;
	assert_int_equal(pg_sql_point(&b, RS_HASH_SHA256_64, RS_COL_TEXT, "k"),
	                 0);
	assert_non_null(strstr(b.text, "k"));
	strbuf_clear(&b);
	assert_int_equal(
		pg_sql_point(&b, RS_HASH_IDENTITY, RS_COL_INTEGER, "k"), 0);
	strbuf_clear(&b);
	/* java and fnv1a_64 of an integer key: of its decimal text. */
	assert_int_equal(pg_sql_point(&b, RS_HASH_JAVA, RS_COL_INTEGER, "k"),
	                 0);
	assert_non_null(strstr(b.text, "SELECT 1, 0::numeric, k::text UNION"));
	strbuf_clear(&b);
	assert_int_equal(
		pg_sql_point(&b, RS_HASH_FNV1A_64, RS_COL_INTEGER, "k"), 0);
	assert_non_null(
		strstr(b.text, "pg_catalog.convert_to(k::text, 'UTF8')"));
	strbuf_clear(&b);
	assert_int_equal(
		pg_sql_point(&b, RS_HASH_SHA256_64, RS_COL_DECIMAL, "k"),
		RS_EUSAGE);
	assert_int_equal(pg_sql_point(&b, RS_HASH_SHA256_64, RS_COL_UUID, "k"),
	                 RS_EUSAGE);
	assert_int_equal((int)b.len, 0);
	strbuf_clear(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ident),
		cmocka_unit_test(test_input),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_read_unbounded),
		cmocka_unit_test(test_read_after),
		cmocka_unit_test(test_read_upto),
		cmocka_unit_test(test_read_after_upto),
		cmocka_unit_test(test_read_canonical_bounds),
		cmocka_unit_test(test_upsert),
		cmocka_unit_test(test_upsert_keys_only),
		cmocka_unit_test(test_generated_not_written),
		cmocka_unit_test(test_load_copy_text),
		cmocka_unit_test(test_load_copy_escape_offsets),
		cmocka_unit_test(test_upsert_nul),
		cmocka_unit_test(test_upsert_many),
		cmocka_unit_test(test_delete),
		cmocka_unit_test(test_delete_input),
		cmocka_unit_test(test_delete_nul),
		cmocka_unit_test(test_read_keys),
		cmocka_unit_test(test_scan),
		cmocka_unit_test(test_describe),
		cmocka_unit_test(test_count),
		cmocka_unit_test(test_fence_table),
		cmocka_unit_test(test_fence_table_rows),
		cmocka_unit_test(test_fence_rows_functions),
		cmocka_unit_test(test_fence_sql),
		cmocka_unit_test(test_guard),
		cmocka_unit_test(test_dollar_quote),
		cmocka_unit_test(test_delete_log),
		cmocka_unit_test(test_delete_log_long),
		cmocka_unit_test(test_capture),
		cmocka_unit_test(test_capture_long),
		cmocka_unit_test(test_replication_sql),
		cmocka_unit_test(test_sync_listed),
		cmocka_unit_test(test_conninfo_value),
		cmocka_unit_test(test_same_host),
		cmocka_unit_test(test_point),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
