/*
 * Unit tests of src/backend/mysql_sql.c, the SQL text of the MariaDB
 * engine, without a server: the exact statements of describe, read_batch
 * (with and without AFTER and UPTO), upsert, delete_keys and the scan for
 * a table with a composite key and a backtick in its names; NULLs, bytes,
 * values with quotes, backslashes and NUL escaped by Connector/C's own
 * mysql_real_escape_string (on a handle that never connects), and by an
 * escape function of the test to show that the builders leave escaping to
 * it; values MariaDB cannot take refused with their row and column; and
 * the packing of rows into statements of at most MYSQL_SQL_STMT_BYTES (a
 * statement exactly at the limit, one byte over it split in two, a row
 * longer than the limit alone in its statement) and of keys into DELETEs
 * of at most MYSQL_SQL_DELETE_KEYS.  Then the statements of count, the
 * fence (its triggers, the query of those that exist), the shard marker,
 * the delete log (its table, both triggers), change capture (the change
 * log, its three triggers), reads by key (split by MYSQL_SQL_READ_VALUES,
 * a key MariaDB cannot take refused with RS_EKEY) and catch-up, escaped
 * both ways; names counted in characters; GTID lists compared domain by
 * domain; every refusal of mysql_sql_replica_verdict, each naming both
 * shards and its fix (among them a replica whose rows can differ from its
 * primary's: a filter, skipped errors, writable; and a primary that is
 * read-only or a replica itself); what a replica is for promote and
 * abort (following, stopped, detached, promoted); SHOW CREATE TABLE taken
 * apart to make a table again; and which points mysql_sql_point computes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <mysql.h>

#include "backend/mysql_sql.h"

#define V(s)                                                                   \
	{                                                                      \
		s, sizeof(s) - 1                                               \
	}
#define VNULL                                                                  \
	{                                                                      \
		NULL, 0                                                        \
	}

/* Connector/C's escaping, as the driver does it, on a handle that never
 * connects (default character set, backslash escapes). */
static MYSQL *handle;

static size_t
driver_escape(void *ctx, char *to, const char *from, size_t len)
{
	return (size_t)mysql_real_escape_string(ctx, to, from,
	                                        (unsigned long)len);
}

/* What mysql_real_escape_string does under NO_BACKSLASH_ESCAPES: only
 * quotes doubled. */
static size_t
doubling_escape(void *ctx, char *to, const char *from, size_t len)
{
	size_t n = 0;

	(void)ctx;
	for (size_t i = 0; i < len; i++) {
		if (from[i] == '\'')
			to[n++] = '\'';
		to[n++] = from[i];
	}
	to[n] = '\0';
	return n;
}

static size_t
refusing_escape(void *ctx, char *to, const char *from, size_t len)
{
	(void)ctx;
	(void)to;
	(void)from;
	(void)len;
	return (size_t)-1;
}

static struct mysql_sql_escape esc = {driver_escape, NULL};
static const char *why, *bad_column; /* mysql_sql_read's answers */

static int
setup(void **state)
{
	(void)state;
	handle = mysql_init(NULL);
	esc.ctx = handle;
	return handle != NULL ? 0 : -1;
}

static int
teardown(void **state)
{
	(void)state;
	mysql_close(handle);
	mysql_library_end();
	return 0;
}

/* `or``ders`: key (`re``gion`, `id`), the reverse of the columns'. */
static struct rs_column columns[] = {
	{"id", "bigint(20)", RS_COL_INTEGER, 0},
	{"re`gion", "varchar(10)", RS_COL_TEXT, 0},
	{"data", "blob", RS_COL_BYTES, 0},
	{"note", "varchar(20)", RS_COL_TEXT, 0},
	{"born", "date", RS_COL_DATE, 0},
	{"at", "timestamp(6)", RS_COL_TIMESTAMPTZ, 0},
	{"f", "float", RS_COL_FLOAT4, 0},
	{"d", "double", RS_COL_FLOAT, 0},
	{"n", "decimal(10,2)", RS_COL_DECIMAL, 0},
	{"ok", "tinyint(1)", RS_COL_BOOL, 0},
	{"t", "time", RS_COL_TIME, 0},
	{"ts", "datetime", RS_COL_TIMESTAMP, 0},
};
static int key[] = {1, 0};
static struct rs_table_def orders = {"or`ders", columns, 12,   key, 2,
                                     -1,        NULL,    NULL, 0};

static void
test_ident(void **state)
{
	struct rs_strbuf b = {0};

	(void)state;
	mysql_sql_ident(&b, "or`ders");
	strbuf_str(&b, " ");
	mysql_sql_ident(&b, "t; drop table z");
	strbuf_str(&b, " ");
	mysql_sql_column(&b, &columns[6]);
	assert_string_equal(b.text,
	                    "`or``ders` `t; drop table z` CAST(`f` AS DOUBLE)");
	strbuf_clear(&b);
}

static struct rs_value after[] = {{"eu'\\\0x", 6}, V("42")};
static struct rs_value upto[] = {V("us"), V("-9000")};
static int read_columns[] = {2, 3, 6, 7};

static const char select_orders[] =
	"SELECT `re``gion`, `id`, `data`, `note`, CAST(`f` AS DOUBLE), `d` "
	"FROM `or``ders`";
static const char after_orders[] =
	"`re``gion` >= 'eu\\'\\\\\\0x' AND ((`re``gion` > 'eu\\'\\\\\\0x') OR "
	"(`re``gion` = 'eu\\'\\\\\\0x' AND `id` > 42))";
static const char upto_orders[] =
	"`re``gion` <= 'us' AND ((`re``gion` < 'us') OR (`re``gion` = 'us' "
	"AND `id` <= -9000))";
static const char order_orders[] = " ORDER BY `re``gion`, `id` LIMIT ";

static void
check_read(const struct rs_read_request *r, const char *select,
           const char *lower, const char *upper, const char *limit)
{
	struct rs_strbuf b = {0}, want = {0};

	strbuf_str(&want, select);
	if (lower != NULL) {
		strbuf_str(&want, " WHERE ");
		strbuf_str(&want, lower);
	}
	if (upper != NULL) {
		strbuf_str(&want, lower != NULL ? " AND " : " WHERE ");
		strbuf_str(&want, upper);
	}
	strbuf_str(&want, order_orders);
	strbuf_str(&want, limit);
	assert_int_equal(mysql_sql_read(&b, &esc, r, &why, &bad_column), 0);
	assert_string_equal(b.text, want.text);
	strbuf_clear(&b);
	strbuf_clear(&want);
}

static void
test_read(void **state)
{
	struct rs_read_request r[] = {
		{&orders, read_columns, 4, NULL, NULL, 100},
		{&orders, read_columns, 4, after, NULL, 100},
		{&orders, read_columns, 4, NULL, upto, 7},
		{&orders, read_columns, 4, after, upto, 1000},
		{&orders, NULL, 0, after, upto, 1},
	};

	(void)state;
	check_read(&r[0], select_orders, NULL, NULL, "100");
	check_read(&r[1], select_orders, after_orders, NULL, "100");
	check_read(&r[2], select_orders, NULL, upto_orders, "7");
	check_read(&r[3], select_orders, after_orders, upto_orders, "1000");
	check_read(&r[4], "SELECT `re``gion`, `id` FROM `or``ders`",
	           after_orders, upto_orders, "1");
}

/* One key column: the bound is the comparison alone. */
static void
test_read_one_key(void **state)
{
	int pk[] = {0};
	struct rs_table_def t = {"or`ders", columns, 12,   pk, 1,
	                         -1,        NULL,    NULL, 0};
	struct rs_value a = V("5"), u = V("77");
	struct rs_read_request r = {&t, NULL, 0, &a, &u, 10};
	struct rs_strbuf b = {0};

	(void)state;
	assert_int_equal(mysql_sql_read(&b, &esc, &r, &why, &bad_column), 0);
	assert_string_equal(b.text,
	                    "SELECT `id` FROM `or``ders` WHERE (`id` > "
	                    "5) AND (`id` <= 77) ORDER BY `id` LIMIT 10");
	strbuf_clear(&b);
}

/* Bounds are canonical keys, turned into literals as upserts' values are:
 * bytes from lowercase hex to X'…', a boolean t to 1, a timestamp with a
 * space for its 'T' and no 'Z'.  A bound not in its kind's canonical form
 * fails the read. */
static void
test_read_canonical_bounds(void **state)
{
	int pk[] = {2, 9, 11};
	struct rs_table_def t = {"or`ders", columns, 12,   pk, 3,
	                         -1,        NULL,    NULL, 0};
	struct rs_value a[] = {V("00ff"), V("t"), V("2024-01-02T03:04:05.5")};
	struct rs_value bad[] = {V("00ff"), V("1"), V("2024-01-02T03:04:05")};
	struct rs_read_request r = {&t, NULL, 0, a, NULL, 10};
	struct rs_strbuf b = {0};

	(void)state;
	assert_int_equal(mysql_sql_read(&b, &esc, &r, &why, &bad_column), 0);
	assert_string_equal(
		b.text,
		"SELECT `data`, `ok`, `ts` FROM `or``ders` WHERE `data` >= "
		"X'00ff' AND ((`data` > X'00ff') OR (`data` = X'00ff' AND "
		"`ok` > 1) OR (`data` = X'00ff' AND `ok` = 1 AND `ts` > "
		"'2024-01-02 03:04:05.5')) ORDER BY `data`, `ok`, `ts` LIMIT "
		"10");
	strbuf_clear(&b);
	r.after = bad;
	assert_int_equal(mysql_sql_read(&b, &esc, &r, &why, &bad_column), 1);
	assert_string_equal(bad_column, "ok");
	assert_non_null(why);
	strbuf_clear(&b);
}

/* A value the escape function refuses fails the read, memory intact. */
static void
test_read_refused(void **state)
{
	struct mysql_sql_escape refuse = {refusing_escape, NULL};
	struct rs_read_request r = {&orders, NULL, 0, after, NULL, 1};
	struct rs_strbuf b = {0};

	(void)state;
	assert_int_equal(mysql_sql_read(&b, &refuse, &r, &why, &bad_column),
	                 -1);
	assert_false(b.failed);
	strbuf_clear(&b);
}

/* Two rows of every kind: NULLs, bytes as X'hex', quotes, backslashes,
 * NUL and control characters escaped, floats made double literals,
 * booleans 1/0, timestamps with a space and no Z. */
static struct rs_value rows_v[] = {
	V("1"),
	V("eu"),
	V("00ff10"),
	V("it's \\ \"q\" \n\r\032"),
	V("2024-01-02"),
	V("2024-01-02T03:04:05.123456Z"),
	V("1.5"),
	V("-2e10"),
	V("12.50"),
	V("t"),
	V("-838:59:59.5"),
	V("2024-01-02T03:04:05"),
	V("2"),
	V("us"),
	VNULL,
	{"a\0b", 3},
	VNULL,
	VNULL,
	VNULL,
	VNULL,
	VNULL,
	V("f"),
	V("00:00:00"),
	V("0000-01-01 00:00:00"),
};

static const char insert_orders[] =
	"INSERT INTO `or``ders` (`id`, `re``gion`, `data`, `note`, `born`, "
	"`at`, `f`, `d`, `n`, `ok`, `t`, `ts`) VALUES ";
static const char update_orders[] =
	" ON DUPLICATE KEY UPDATE `data` = VALUES(`data`), `note` = "
	"VALUES(`note`), `born` = VALUES(`born`), `at` = VALUES(`at`), `f` = "
	"VALUES(`f`), `d` = VALUES(`d`), `n` = VALUES(`n`), `ok` = "
	"VALUES(`ok`), `t` = VALUES(`t`), `ts` = VALUES(`ts`)";

static void
check_upsert(const struct mysql_sql_escape *e, const char *note)
{
	struct rs_rows rows = {2, 12, rows_v};
	struct mysql_sql_stmts s = {0};
	struct rs_strbuf want = {0};

	strbuf_str(&want, insert_orders);
	strbuf_str(&want, "(1, 'eu', X'00ff10', ");
	strbuf_str(&want, note);
	strbuf_str(&want, ", '2024-01-02', '2024-01-02 03:04:05.123456', "
	                  "1.5e0, -2e10, 12.50, 1, '-838:59:59.5', "
	                  "'2024-01-02 03:04:05'), (2, 'us', NULL, ");
	strbuf_add(&want, e->fn == driver_escape ? "'a\\0b'" : "'a\0b'",
	           e->fn == driver_escape ? 6 : 5);
	strbuf_str(&want, ", NULL, NULL, NULL, NULL, NULL, 0, '00:00:00', "
	                  "'0000-01-01 00:00:00')");
	strbuf_str(&want, update_orders);
	assert_int_equal(mysql_sql_upsert(&s, e, &orders, &rows, NULL), 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.v[0].len, want.len);
	assert_memory_equal(s.v[0].sql, want.text, want.len);
	assert_int_equal(s.v[0].sql[s.v[0].len], '\0');
	assert_int_equal(s.v[0].first_row, 0);
	assert_int_equal(s.v[0].n_rows, 2);
	mysql_sql_stmts_free(&s);
	assert_null(s.v);
	assert_int_equal(s.n, 0);
	strbuf_clear(&want);
}

static void
test_upsert(void **state)
{
	struct mysql_sql_escape doubling = {doubling_escape, NULL};

	(void)state;
	check_upsert(&esc, "'it\\'s \\\\ \\\"q\\\" \\n\\r\\Z'");
	/* The builder leaves the escaping to its escape function. */
	check_upsert(&doubling, "'it''s \\ \"q\" \n\r\032'");
}

/* The same two rows for LOAD DATA: one statement naming every column (the
 * bytes column through a variable the SET unhexes), and the rows as text,
 * tab-separated, NULL as \\N, backslash, tab, newline and NUL escaped, the
 * rest as in the upsert but bare; an empty text is an empty field. */
static void
test_load(void **state)
{
	struct rs_value row3[12];
	struct rs_rows rows = {3, 12, NULL};
	struct rs_value all[36];
	struct rs_strbuf sql = {0}, data = {0}, want = {0};

	(void)state;
	memcpy(all, rows_v, sizeof(rows_v));
	memcpy(row3, rows_v, sizeof(row3));
	row3[0] = (struct rs_value)V("3");
	row3[2] = (struct rs_value)V("");
	row3[3] = (struct rs_value){"tab\there\\N", 10};
	memcpy(all + 24, row3, sizeof(row3));
	rows.values = all;
	assert_int_equal(mysql_sql_load(&sql, &data, &orders, &rows, NULL), 0);
	assert_string_equal(
		sql.text,
		"LOAD DATA LOCAL INFILE 'reshard' INTO TABLE `or``ders` "
		"CHARACTER SET utf8mb4 FIELDS TERMINATED BY X'09' ESCAPED BY "
		"X'5C' LINES TERMINATED BY X'0A' (`id`, `re``gion`, "
		"@reshard_2, `note`, `born`, `at`, `f`, `d`, `n`, `ok`, `t`, "
		"`ts`) SET `data` = UNHEX(@reshard_2)");
	strbuf_str(&want, "1\teu\t00ff10\tit's \\\\ \"q\" \\n\r\032\t"
	                  "2024-01-02\t2024-01-02 03:04:05.123456\t1.5e0\t"
	                  "-2e10\t12.50\t1\t-838:59:59.5\t2024-01-02 "
	                  "03:04:05\n");
	strbuf_str(&want, "2\tus\t\\N\ta\\0b\t\\N\t\\N\t\\N\t\\N\t\\N\t0\t"
	                  "00:00:00\t0000-01-01 00:00:00\n");
	strbuf_str(&want, "3\teu\t\ttab\\there\\\\N\t2024-01-02\t"
	                  "2024-01-02 03:04:05.123456\t1.5e0\t-2e10\t12.50\t"
	                  "1\t-838:59:59.5\t2024-01-02 03:04:05\n");
	assert_int_equal(data.len, want.len);
	assert_memory_equal(data.text, want.text, want.len);
	strbuf_clear(&sql);
	strbuf_clear(&data);
	strbuf_clear(&want);
}

/* A YEAR of 0 goes as 0000: LOAD DATA takes a shorter field as a
 * two-digit year (0 became 2000 on MariaDB 10.11); 1999 as it is. */
static void
test_load_year(void **state)
{
	static struct rs_column year_cols[] = {
		{"id", "int(11)", RS_COL_INTEGER, 0},
		{"y", "year(4)", RS_COL_INTEGER, 0},
		{"n", "int(11)", RS_COL_INTEGER, 0},
	};
	static int year_key[] = {0};
	static struct rs_table_def years = {
		"years", year_cols, 3, year_key, 1, -1, NULL, NULL, 0};
	struct rs_value v[] = {V("1"), V("0"), V("0"),    V("2"), V("1999"),
	                       V("0"), V("3"), {NULL, 0}, V("0")};
	struct rs_rows rows = {3, 3, v};
	struct rs_strbuf sql = {0}, data = {0};

	(void)state;
	assert_int_equal(mysql_sql_load(&sql, &data, &years, &rows, NULL), 0);
	assert_string_equal(data.text, "1\t0000\t0\n2\t1999\t0\n3\t\\N\t0\n");
	strbuf_clear(&sql);
	strbuf_clear(&data);
}

/* A generated column is read like any other and never written: LOAD
 * DATA warns of a value for it (and the load is then upserted), INSERT
 * refuses one. */
static void
test_generated_not_written(void **state)
{
	static struct rs_column gc[] = {
		{"id", "int(11)", RS_COL_INTEGER, 0},
		{"twice", "int(11)", RS_COL_INTEGER, 1},
		{"n", "int(11)", RS_COL_INTEGER, 0},
		{"h", "varbinary(32)", RS_COL_BYTES, 1},
	};
	static int gpk[] = {0};
	static struct rs_table_def g = {"g", gc, 4, gpk, 1, -1, NULL, NULL, 0};
	struct rs_value v[] = {V("1"), V("14"), V("7"), V("00ff")};
	struct rs_rows rows = {1, 4, v};
	struct mysql_sql_stmts stmts = {0};
	struct rs_strbuf sql = {0}, data = {0};

	(void)state;
	assert_int_equal(mysql_sql_load(&sql, &data, &g, &rows, NULL), 0);
	assert_non_null(strstr(sql.text, " (`id`, `n`)"));
	assert_null(strstr(sql.text, "UNHEX")); /* no SET for h */
	assert_string_equal(data.text, "1\t7\n");
	assert_int_equal(mysql_sql_upsert(&stmts, &esc, &g, &rows, NULL), 0);
	assert_int_equal(stmts.n, 1);
	assert_string_equal(stmts.v[0].sql,
	                    "INSERT INTO `g` (`id`, `n`) VALUES (1, 7) ON "
	                    "DUPLICATE KEY UPDATE `n` = VALUES(`n`)");
	mysql_sql_stmts_free(&stmts);
	strbuf_clear(&sql);
	strbuf_clear(&data);
}

/* Every column in the key: an update that changes nothing. */
static void
test_upsert_keys_only(void **state)
{
	struct rs_column kc[] = {{"a", "int", RS_COL_INTEGER, 0},
	                         {"b", "text", RS_COL_TEXT, 0}};
	int kpk[] = {0, 1};
	struct rs_table_def t = {"k`o", kc, 2, kpk, 2, -1, NULL, NULL, 0};
	struct rs_value v[] = {V("1"), V("a"), V("2"), V("b")};
	struct rs_rows rows = {2, 2, v};
	struct mysql_sql_stmts s = {0};

	(void)state;
	assert_int_equal(mysql_sql_upsert(&s, &esc, &t, &rows, NULL), 0);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.v[0].sql, "INSERT INTO `k``o` (`a`, `b`) VALUES "
	                                "(1, 'a'), (2, 'b') ON DUPLICATE KEY "
	                                "UPDATE `a` = `a`");
	mysql_sql_stmts_free(&s);
}

/* A table with a unique index besides its primary key: the update's first
 * assignment keeps the key only where it is the incoming row's, else
 * fails the statement (a subquery of two rows), so that a clash on the
 * other index never updates a row of another key. */
static void
test_upsert_other_unique(void **state)
{
	struct rs_column uc[] = {{"a", "int", RS_COL_INTEGER, 0},
	                         {"b", "int", RS_COL_INTEGER, 0},
	                         {"email", "text", RS_COL_TEXT, 0}};
	int upk[] = {0, 1}, email[] = {2};
	struct rs_unique u = {email, 1};
	struct rs_table_def t = {"u", uc, 3, upk, 2, -1, NULL, &u, 1};
	struct rs_value v[] = {V("1"), V("2"), V("x@y")};
	struct rs_rows rows = {1, 3, v};
	struct mysql_sql_stmts s = {0};

	(void)state;
	assert_int_equal(mysql_sql_upsert(&s, &esc, &t, &rows, NULL), 0);
	assert_int_equal(s.n, 1);
	assert_string_equal(
		s.v[0].sql,
		"INSERT INTO `u` (`a`, `b`, `email`) VALUES (1, 2, 'x@y') ON "
		"DUPLICATE KEY UPDATE `a` = IF(`a` <=> VALUES(`a`) AND `b` <=> "
		"VALUES(`b`), `a`, (SELECT 1 UNION ALL SELECT 1)), `email` = "
		"VALUES(`email`)");
	mysql_sql_stmts_free(&s);
}

/* A value MariaDB cannot take is refused before anything is built, naming
 * the row, the column, its type and kind, and the value (40 bytes of
 * it). */
static void
check_refused(int column, const char *value, const char *message)
{
	struct rs_value row[12];
	struct rs_rows rows = {1, 12, row};
	struct mysql_sql_stmts s = {0};
	struct rs_err err;

	memcpy(row, rows_v, sizeof(row));
	row[column].text = value;
	row[column].len = strlen(value);
	assert_int_equal(mysql_sql_upsert(&s, &esc, &orders, &rows, &err),
	                 RS_EVALUE);
	assert_int_equal(err.code, RS_EVALUE);
	assert_string_equal(err.message, message);
	assert_int_equal(s.n, 0);
	assert_null(s.v);
}

static void
test_upsert_refused(void **state)
{
	struct mysql_sql_escape refuse = {refusing_escape, NULL};
	struct rs_rows rows = {2, 12, rows_v};
	struct mysql_sql_stmts s = {0};
	struct rs_err err;

	(void)state;
	check_refused(6, "NaN",
	              "upsert into table or`ders: row 1, column f (float, "
	              "float4): value 'NaN' is not finite: MariaDB stores no "
	              "NaN or infinity");
	check_refused(4, "-0043-03-15",
	              "upsert into table or`ders: row 1, column born (date, "
	              "date): value '-0043-03-15' is not a date MariaDB can "
	              "store (YYYY-MM-DD, years 0000 to 9999)");
	check_refused(
		5, "2024-01-02T03:04:05",
		"upsert into table or`ders: row 1, column at "
		"(timestamp(6), timestamptz): value '2024-01-02T03:04:05' "
		"is not a timestamp in UTC (YYYY-MM-DDTHH:MM:SS.ffffffZ, "
		"years 0000 to 9999)");
	check_refused(0, "0123456789012345678901234567890123456789-and-more",
	              "upsert into table or`ders: row 1, column id "
	              "(bigint(20), integer): value "
	              "'0123456789012345678901234567890123456789'… is not an "
	              "integer");
	/* The escaping refused: the first quoted value, row 1's region. */
	assert_int_equal(mysql_sql_upsert(&s, &refuse, &orders, &rows, &err),
	                 RS_EVALUE);
	assert_string_equal(
		err.message,
		"upsert into table or`ders: row 1, column re`gion "
		"(varchar(10), text): value 'eu' was refused by the "
		"MariaDB driver's escaping");
	assert_int_equal(s.n, 0);
}

/* The limits the packing tests are written for: changing one is a
 * decision about the servers (see mysql_sql.h), to be made here too. */
static void
test_limits(void **state)
{
	(void)state;
	assert_int_equal(MYSQL_SQL_STMT_BYTES, 1048576);
	assert_int_equal(MYSQL_SQL_DELETE_KEYS, 1000);
}

/*
 * Packing by size, on `p` (`id` int key, `v` text): a row (N, 'x…') of
 * one-digit N and L x's is L + 7 bytes, and a statement is HEAD, its rows
 * joined by ", ", then TAIL.
 */
static struct rs_column pack_columns[] = {{"id", "int", RS_COL_INTEGER, 0},
                                          {"v", "longtext", RS_COL_TEXT, 0}};
static int pack_key[] = {0};
static struct rs_table_def pack_table = {"p", pack_columns, 2,    pack_key, 1,
                                         -1,  NULL,         NULL, 0};
static const char pack_head[] = "INSERT INTO `p` (`id`, `v`) VALUES ";
static const char pack_tail[] = " ON DUPLICATE KEY UPDATE `v` = VALUES(`v`)";
#define PACK_FIXED   (sizeof(pack_head) - 1 + sizeof(pack_tail) - 1)
#define ROW_BYTES(l) ((l) + 7)

static char *xs; /* 3 × MYSQL_SQL_STMT_BYTES x's */

static int
setup_xs(void **state)
{
	(void)state;
	xs = malloc(3 * (size_t)MYSQL_SQL_STMT_BYTES);
	if (xs == NULL)
		return -1;
	memset(xs, 'x', 3 * (size_t)MYSQL_SQL_STMT_BYTES);
	return 0;
}

static int
teardown_xs(void **state)
{
	(void)state;
	free(xs);
	return 0;
}

/* Upsert rows 1…N_ROWS whose values are LENS[i] x's into *S. */
static void
pack(struct mysql_sql_stmts *s, const size_t *lens, int n_rows)
{
	struct rs_value v[16];
	char ids[8][2];
	struct rs_rows rows = {n_rows, 2, v};

	assert_true(n_rows <= 8);
	for (int r = 0; r < n_rows; r++) {
		ids[r][0] = (char)('1' + r);
		ids[r][1] = '\0';
		v[2 * r] = (struct rs_value){ids[r], 1};
		v[2 * r + 1] = (struct rs_value){xs, lens[r]};
	}
	*s = (struct mysql_sql_stmts){0};
	assert_int_equal(mysql_sql_upsert(s, &esc, &pack_table, &rows, NULL),
	                 0);
}

/* Check that statement I of S holds rows FIRST… (from 0) of the lengths
 * LENS, N of them, and is exactly HEAD, the rows, TAIL. */
static void
check_stmt(const struct mysql_sql_stmts *s, int i, const size_t *lens,
           int first, int n)
{
	const struct mysql_sql_stmt *st = &s->v[i];
	size_t want = PACK_FIXED + 2 * (size_t)(n - 1);
	const char *p;

	assert_true(i < s->n);
	assert_int_equal(st->first_row, first);
	assert_int_equal(st->n_rows, n);
	for (int r = first; r < first + n; r++)
		want += ROW_BYTES(lens[r]);
	assert_int_equal(st->len, want);
	assert_int_equal(strlen(st->sql), st->len);
	assert_memory_equal(st->sql, pack_head, sizeof(pack_head) - 1);
	p = st->sql + sizeof(pack_head) - 1;
	for (int r = first; r < first + n; r++) {
		char open[32];

		snprintf(open, sizeof(open), "%s(%d, '", r > first ? ", " : "",
		         r + 1);
		assert_memory_equal(p, open, strlen(open));
		p += strlen(open);
		assert_memory_equal(p, xs, lens[r]);
		p += lens[r];
		assert_memory_equal(p, "')", 2);
		p += 2;
	}
	assert_string_equal(p, pack_tail);
}

/* Two rows that make a statement of exactly MYSQL_SQL_STMT_BYTES stay
 * together; one byte more and the second row starts the next
 * statement. */
static void
test_pack_at_limit(void **state)
{
	size_t second = 10;
	size_t first = MYSQL_SQL_STMT_BYTES - PACK_FIXED - 2 -
	               ROW_BYTES(second) - ROW_BYTES(0);
	size_t lens[2] = {first, second};
	struct mysql_sql_stmts s;

	(void)state;
	pack(&s, lens, 2);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.v[0].len, MYSQL_SQL_STMT_BYTES);
	check_stmt(&s, 0, lens, 0, 2);
	mysql_sql_stmts_free(&s);

	lens[0] = first + 1;
	pack(&s, lens, 2);
	assert_int_equal(s.n, 2);
	check_stmt(&s, 0, lens, 0, 1);
	check_stmt(&s, 1, lens, 1, 1);
	mysql_sql_stmts_free(&s);

	/* The same boundary for the second row's size. */
	lens[0] = first;
	lens[1] = second + 1;
	pack(&s, lens, 2);
	assert_int_equal(s.n, 2);
	mysql_sql_stmts_free(&s);
}

/* A row longer than the limit on its own is no error here: it gets a
 * statement of its own (the server refuses one past its
 * max_allowed_packet, error 1153), and the rows around it are packed as
 * usual. */
static void
test_pack_row_over_limit(void **state)
{
	size_t big = 2 * (size_t)MYSQL_SQL_STMT_BYTES;
	size_t lens[4] = {10, big, 20, 30};
	size_t alone[2] = {MYSQL_SQL_STMT_BYTES - PACK_FIXED - ROW_BYTES(0), 5};
	struct mysql_sql_stmts s;

	(void)state;
	pack(&s, lens, 4);
	assert_int_equal(s.n, 3);
	check_stmt(&s, 0, lens, 0, 1);
	check_stmt(&s, 1, lens, 1, 1);
	assert_true(s.v[1].len > MYSQL_SQL_STMT_BYTES);
	check_stmt(&s, 2, lens, 2, 2);
	mysql_sql_stmts_free(&s);

	lens[0] = big;
	lens[1] = 10;
	pack(&s, lens, 2);
	assert_int_equal(s.n, 2);
	check_stmt(&s, 0, lens, 0, 1);
	check_stmt(&s, 1, lens, 1, 1);
	mysql_sql_stmts_free(&s);

	/* A row that fills a statement to the byte on its own. */
	pack(&s, alone, 2);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.v[0].len, MYSQL_SQL_STMT_BYTES);
	check_stmt(&s, 0, alone, 0, 1);
	check_stmt(&s, 1, alone, 1, 1);
	mysql_sql_stmts_free(&s);
}

/* Many rows of assorted sizes: the statements cover the rows in order,
 * none of several rows passes the limit, and each is as full as it can
 * be (the next statement's first row would not have fitted). */
static void
test_pack_greedy(void **state)
{
	size_t lens[8] = {300000, 700000, 48000,  1048000,
	                  5,      600000, 448500, 90};
	struct mysql_sql_stmts s;
	int row = 0;

	(void)state;
	pack(&s, lens, 8);
	for (int i = 0; i < s.n; i++) {
		const struct mysql_sql_stmt *st = &s.v[i];

		check_stmt(&s, i, lens, row, st->n_rows);
		if (st->n_rows > 1)
			assert_true(st->len <= MYSQL_SQL_STMT_BYTES);
		if (i + 1 < s.n)
			assert_true(st->len + 2 +
			                    ROW_BYTES(lens[row + st->n_rows]) >
			            MYSQL_SQL_STMT_BYTES);
		row += st->n_rows;
	}
	assert_int_equal(row, 8);
	assert_true(s.n >= 4);
	mysql_sql_stmts_free(&s);
}

static void
test_delete(void **state)
{
	struct rs_value k[] = {V("eu'\\"), V("1"), V("us"),
	                       V("-2"),    V("x"), VNULL};
	struct rs_rows keys = {2, 2, k};
	struct mysql_sql_stmts s = {0};
	struct rs_err err;

	(void)state;
	assert_int_equal(mysql_sql_delete(&s, &esc, &orders, &keys, NULL), 0);
	assert_int_equal(s.n, 1);
	assert_string_equal(
		s.v[0].sql,
		"DELETE FROM `or``ders` WHERE (`re``gion`, `id`) IN "
		"(('eu\\'\\\\', 1), ('us', -2))");
	mysql_sql_stmts_free(&s);
	keys.n_rows = 3;
	assert_int_equal(mysql_sql_delete(&s, &esc, &orders, &keys, &err),
	                 RS_EINTERNAL);
	assert_string_equal(err.message, "delete from table or`ders: key 3 has "
	                                 "a NULL in column id (a bug in the "
	                                 "caller)");
	assert_int_equal(s.n, 0);
}

/* Keys per DELETE: 1,000 (MYSQL_SQL_DELETE_KEYS) in one, one more in a
 * second. */
static void
check_delete_keys(int n, int n_stmts)
{
	struct rs_column c[] = {{"id", "int", RS_COL_INTEGER, 0}};
	int pk[] = {0};
	struct rs_table_def t = {"d", c, 1, pk, 1, -1, NULL, NULL, 0};
	struct rs_value *v = calloc((size_t)n, sizeof(*v));
	char(*text)[12] = calloc((size_t)n, sizeof(*text));
	struct rs_rows keys = {n, 1, v};
	struct mysql_sql_stmts s = {0};
	int row = 0;

	assert_non_null(v);
	assert_non_null(text);
	for (int i = 0; i < n; i++) {
		snprintf(text[i], sizeof(text[i]), "%d", i);
		v[i] = (struct rs_value){text[i], strlen(text[i])};
	}
	assert_int_equal(mysql_sql_delete(&s, &esc, &t, &keys, NULL), 0);
	assert_int_equal(s.n, n_stmts);
	for (int i = 0; i < s.n; i++) {
		int want = n - row < MYSQL_SQL_DELETE_KEYS
		                   ? n - row
		                   : MYSQL_SQL_DELETE_KEYS;
		char open[48];

		assert_int_equal(s.v[i].first_row, row);
		assert_int_equal(s.v[i].n_rows, want);
		snprintf(open, sizeof(open),
		         "DELETE FROM `d` WHERE `id` IN (%d%s", row,
		         want > 1 ? ", " : ")");
		assert_memory_equal(s.v[i].sql, open, strlen(open));
		row += want;
	}
	assert_int_equal(row, n);
	mysql_sql_stmts_free(&s);
	free(v);
	free(text);
}

static void
test_delete_keys_limit(void **state)
{
	(void)state;
	check_delete_keys(2, 1);
	check_delete_keys(1000, 1);
	check_delete_keys(1001, 2);
	check_delete_keys(2000, 2);
	check_delete_keys(2001, 3);
}

/* Deletes are packed by size too: 'k' keys of L x's are L + 2 bytes. */
static void
test_delete_bytes_limit(void **state)
{
	struct rs_column c[] = {{"k", "varchar(2000000)", RS_COL_TEXT, 0}};
	int pk[] = {0};
	struct rs_table_def t = {"t", c, 1, pk, 1, -1, NULL, NULL, 0};
	const char head[] = "DELETE FROM `t` WHERE `k` IN (";
	size_t first =
		MYSQL_SQL_STMT_BYTES - (sizeof(head) - 1) - 2 - 2 - (3 + 2) - 1;
	struct rs_value v[] = {{xs, first}, {xs, 3}};
	struct rs_rows keys = {2, 1, v};
	struct mysql_sql_stmts s = {0};

	(void)state;
	assert_int_equal(mysql_sql_delete(&s, &esc, &t, &keys, NULL), 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.v[0].len, MYSQL_SQL_STMT_BYTES);
	assert_string_equal(s.v[0].sql + s.v[0].len - 9, "', 'xxx')");
	mysql_sql_stmts_free(&s);
	v[0].len = first + 1;
	assert_int_equal(mysql_sql_delete(&s, &esc, &t, &keys, NULL), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.v[0].n_rows, 1);
	assert_string_equal(s.v[1].sql, "DELETE FROM `t` WHERE `k` IN ('xxx')");
	mysql_sql_stmts_free(&s);
}

static const char describe_head[] =
	"SELECT c.COLUMN_NAME, c.COLUMN_TYPE, s.SEQ_IN_INDEX, (SELECT "
	"t.TABLE_ROWS FROM information_schema.TABLES t WHERE t.TABLE_SCHEMA = "
	"DATABASE() AND t.TABLE_NAME = 'or`d\\'ers\\\\'), ";
static const char describe_cascades[] =
	", (SELECT GROUP_CONCAT(CONCAT(r.CONSTRAINT_NAME, ' (references ', "
	"r.REFERENCED_TABLE_NAME, ': ON DELETE ', r.DELETE_RULE, ', ON "
	"UPDATE ', r.UPDATE_RULE, ')') ORDER BY r.CONSTRAINT_NAME SEPARATOR "
	"', ') FROM information_schema.REFERENTIAL_CONSTRAINTS r WHERE "
	"r.CONSTRAINT_SCHEMA = DATABASE() AND r.TABLE_NAME = "
	"'or`d\\'ers\\\\' AND (r.DELETE_RULE IN ('CASCADE', 'SET NULL', "
	"'SET DEFAULT') OR r.UPDATE_RULE IN ('CASCADE', 'SET NULL', 'SET "
	"DEFAULT')))";
static const char describe_columns[] =
	", c.EXTRA REGEXP '(VIRTUAL|STORED|PERSISTENT) GENERATED'"
	", (SELECT GROUP_CONCAT(CONCAT(CRC32(u.INDEX_NAME), ':', "
	"IF(u.SUB_PART IS NULL, u.SEQ_IN_INDEX, 0), ':', (SELECT COUNT(*) "
	"FROM information_schema.STATISTICS v WHERE v.TABLE_SCHEMA = "
	"DATABASE() AND v.TABLE_NAME = 'or`d\\'ers\\\\' AND v.INDEX_NAME = "
	"u.INDEX_NAME)) SEPARATOR ',') FROM information_schema.STATISTICS u "
	"WHERE u.TABLE_SCHEMA = DATABASE() AND u.TABLE_NAME = "
	"'or`d\\'ers\\\\' AND u.NON_UNIQUE = 0 AND u.INDEX_NAME <> "
	"'PRIMARY' AND u.COLUMN_NAME = c.COLUMN_NAME)"
	" FROM information_schema.COLUMNS c LEFT JOIN (SELECT DISTINCT "
	"s.COLUMN_NAME, s.SEQ_IN_INDEX FROM information_schema.STATISTICS s "
	"WHERE s.TABLE_SCHEMA = DATABASE() AND s.TABLE_NAME = "
	"'or`d\\'ers\\\\' AND s.INDEX_NAME = 'PRIMARY') s ON s.COLUMN_NAME = "
	"c.COLUMN_NAME";
static const char describe_json[] =
	" LEFT JOIN (SELECT DISTINCT k.CONSTRAINT_NAME FROM "
	"information_schema.CHECK_CONSTRAINTS k WHERE k.CONSTRAINT_SCHEMA = "
	"DATABASE() AND k.TABLE_NAME = 'or`d\\'ers\\\\' AND k.CHECK_CLAUSE = "
	"CONCAT('json_valid(`', REPLACE(k.CONSTRAINT_NAME, '`', '``'), "
	"'`)')) k ON k.CONSTRAINT_NAME = c.COLUMN_NAME";
static const char describe_tail[] =
	" WHERE c.TABLE_SCHEMA = DATABASE() AND c.TABLE_NAME = "
	"'or`d\\'ers\\\\' ORDER BY c.ORDINAL_POSITION";

static void
test_describe(void **state)
{
	struct rs_strbuf b = {0}, want = {0};

	(void)state;
	for (int json = 0; json <= 1; json++) {
		strbuf_str(&want, describe_head);
		strbuf_str(&want, json ? "k.CONSTRAINT_NAME IS NOT NULL" : "0");
		strbuf_str(&want, describe_cascades);
		strbuf_str(&want, describe_columns);
		if (json)
			strbuf_str(&want, describe_json);
		strbuf_str(&want, describe_tail);
		assert_int_equal(
			mysql_sql_describe(&b, &esc, "or`d'ers\\", json), 0);
		assert_string_equal(b.text, want.text);
		b.len = 0;
		want.len = 0;
	}
	strbuf_clear(&b);
	strbuf_clear(&want);
}

static void
test_json_checks(void **state)
{
	(void)state;
	assert_false(mysql_sql_json_checks("10.2.21-MariaDB", 100221));
	assert_true(mysql_sql_json_checks("10.2.22-MariaDB", 100222));
	assert_false(mysql_sql_json_checks("10.3.9-MariaDB", 100309));
	assert_true(mysql_sql_json_checks("10.3.10-MariaDB", 100310));
	assert_true(mysql_sql_json_checks("10.11.6-MariaDB-log", 101106));
	assert_false(mysql_sql_json_checks("8.0.36", 80036));
	assert_false(mysql_sql_json_checks(NULL, 101106));
}

static void
test_scan(void **state)
{
	int cols[] = {0, 6, 1};
	struct rs_strbuf b = {0};

	(void)state;
	mysql_sql_scan(&b, &orders, cols, 3);
	assert_string_equal(b.text, "SELECT `id`, CAST(`f` AS DOUBLE), "
	                            "`re``gion` FROM `or``ders`");
	strbuf_clear(&b);
}

/* ---- count, the fence, the marker, the delete log ---- */

static void
test_name_fits(void **state)
{
	char name[300];

	(void)state;
	memset(name, 'a', 64);
	name[64] = '\0';
	assert_true(mysql_sql_name_fits(name));
	name[64] = 'a';
	name[65] = '\0';
	assert_false(mysql_sql_name_fits(name));
	/* Characters, not bytes: 64 two-byte characters fit. */
	for (int i = 0; i < 64; i++)
		memcpy(name + 2 * i, "\xc3\xa9", 2);
	name[128] = '\0';
	assert_true(mysql_sql_name_fits(name));
	memcpy(name + 128, "\xc3\xa9", 3);
	assert_false(mysql_sql_name_fits(name));
}

static void
test_count(void **state)
{
	struct rs_strbuf b = {0};

	(void)state;
	mysql_sql_count(&b, "or`ders");
	assert_string_equal(b.text, "SELECT COUNT(*) FROM `or``ders`");
	strbuf_clear(&b);
}

/* The ownership guard's trigger: skipped while purge deletes, the point
 * placed among the owners, each with its message. */
static void
test_guard(void **state)
{
	uint64_t a[1][2] = {{0, 99}}, c[1][2] = {{200, 299}};
	struct rs_moving owned[2] = {{0, a, NULL, 1}, {0, c, NULL, 1}};
	const char *keys[1] = {"k"}, *messages[2] = {"to a", "to 'b'"};
	enum rs_col_kind kinds[1] = {RS_COL_INTEGER};
	struct rs_guard guard = {RS_HASH_IDENTITY, keys, kinds, 2, owned,
	                         messages};
	struct rs_strbuf b = {0};
	char name[MYSQL_SQL_NAME_SIZE];

	(void)state;
	mysql_sql_guard_trigger(name, sizeof(name), 2, "t");
	assert_string_equal(name, "reshard_guard_DELETE_t");
	assert_int_equal(mysql_sql_guard_create(&b, &esc, 2, "t", &guard, 0),
	                 0);
	assert_string_equal(
		b.text,
		"CREATE TRIGGER IF NOT EXISTS `reshard_guard_DELETE_t` BEFORE "
		"DELETE ON `t` FOR EACH ROW BEGIN DECLARE p DECIMAL(65,0); IF "
		"@reshard_purging IS NULL THEN SET p = (CASE WHEN OLD.`k` >= 0 "
		"THEN CAST(OLD.`k` AS UNSIGNED) END); IF (p BETWEEN 0 AND 99) "
		"THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'to a'; "
		"ELSEIF "
		"(p BETWEEN 200 AND 299) THEN SIGNAL SQLSTATE '45000' SET "
		"MESSAGE_TEXT = 'to \\'b\\''; END IF; END IF; END");
	strbuf_clear(&b);
	assert_int_equal(mysql_sql_guard_create(&b, &esc, 1, "t", &guard, 0),
	                 0);
	assert_non_null(strstr(b.text, "OLD.`k`"));
	assert_non_null(strstr(b.text, "NEW.`k`"));
	strbuf_clear(&b);
}

/* The fence of the rows that move: the point of OLD's or NEW's key (the
 * ones the statement has) computed once into p and tested; a key with no
 * point is rejected too (IS NOT FALSE). */
static void
test_fence_rows(void **state)
{
	uint64_t residues[2] = {1, 3};
	struct rs_moving moving = {4, NULL, residues, 2};
	const char *keys[1] = {"cu`st"};
	enum rs_col_kind kinds[1] = {RS_COL_INTEGER};
	struct rs_fence_rows rows = {RS_HASH_IDENTITY, &moving, keys, kinds};
	struct rs_strbuf b = {0};

	(void)state;
	assert_int_equal(
		mysql_sql_fence_create(&b, &esc, 1, "t", "m", &rows, 0), 0);
	assert_string_equal(
		b.text,
		"CREATE TRIGGER IF NOT EXISTS `reshard_fence_UPDATE_t` BEFORE "
		"UPDATE ON `t` FOR EACH ROW BEGIN DECLARE p DECIMAL(65,0); "
		"SET p = (CASE WHEN OLD.`cu``st` >= 0 THEN CAST(OLD.`cu``st` "
		"AS UNSIGNED) END); IF (MOD(p, 4) IN (1, 3)) IS NOT FALSE "
		"THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'm'; END IF; "
		"SET p = (CASE WHEN NEW.`cu``st` >= 0 THEN CAST(NEW.`cu``st` "
		"AS UNSIGNED) END); IF (MOD(p, 4) IN (1, 3)) IS NOT FALSE "
		"THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'm'; END IF; "
		"END");
	b.len = 0;
	/* INSERT has only NEW, DELETE only OLD. */
	assert_int_equal(
		mysql_sql_fence_create(&b, &esc, 0, "t", "m", &rows, 0), 0);
	assert_null(strstr(b.text, "OLD."));
	assert_non_null(strstr(b.text, "NEW."));
	b.len = 0;
	assert_int_equal(
		mysql_sql_fence_create(&b, &esc, 2, "t", "m", &rows, 0), 0);
	assert_non_null(strstr(b.text, "OLD."));
	assert_null(strstr(b.text, "NEW."));
	b.len = 0;
	/* fnv1a_64: the loop's variables declared, its point left in p. */
	rows.hash = RS_HASH_FNV1A_64;
	assert_int_equal(
		mysql_sql_fence_create(&b, &esc, 0, "t", "m", &rows, 0), 0);
	assert_non_null(strstr(b.text, "BEGIN DECLARE p DECIMAL(65,0); "
	                               "DECLARE reshard_b LONGBLOB; "));
	assert_non_null(strstr(b.text, "CAST(NEW.`cu``st` + 0 AS CHAR) USING "
	                               "utf8mb4"));
	assert_non_null(strstr(b.text, "END WHILE; SET p = IF(reshard_b IS "
	                               "NULL, NULL, reshard_h); IF (MOD(p, "
	                               "4) IN (1, 3)) IS NOT FALSE"));
	b.len = 0;
	kinds[0] = RS_COL_DECIMAL;
	assert_int_equal(
		mysql_sql_fence_create(&b, &esc, 0, "t", "m", &rows, 0), -1);
	strbuf_clear(&b);
}

static void
test_fence(void **state)
{
	const char *tables[] = {"or`ders", "it'em"};
	struct rs_strbuf b = {0};
	char name[MYSQL_SQL_NAME_SIZE];

	(void)state;
	mysql_sql_fence_trigger(name, sizeof(name), 0, "or`ders");
	assert_string_equal(name, "reshard_fence_INSERT_or`ders");
	mysql_sql_fence_trigger(name, sizeof(name), 2, "t");
	assert_string_equal(name, "reshard_fence_DELETE_t");

	assert_int_equal(mysql_sql_fence_existing(&b, &esc, tables, 2), 0);
	assert_string_equal(
		b.text,
		"SELECT TRIGGER_NAME FROM information_schema.TRIGGERS WHERE "
		"EVENT_OBJECT_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = "
		"'or`ders' AND TRIGGER_NAME IN "
		"('reshard_fence_INSERT_or`ders', "
		"'reshard_fence_UPDATE_or`ders', "
		"'reshard_fence_DELETE_or`ders') UNION ALL "
		"SELECT TRIGGER_NAME FROM information_schema.TRIGGERS WHERE "
		"EVENT_OBJECT_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = "
		"'it\\'em' AND TRIGGER_NAME IN "
		"('reshard_fence_INSERT_it\\'em', "
		"'reshard_fence_UPDATE_it\\'em', "
		"'reshard_fence_DELETE_it\\'em')");
	b.len = 0;

	assert_int_equal(mysql_sql_fence_create(&b, &esc, 1, "or`ders",
	                                        "run 'x\\2x', step fence", NULL,
	                                        0),
	                 0);
	assert_string_equal(b.text,
	                    "CREATE TRIGGER IF NOT EXISTS "
	                    "`reshard_fence_UPDATE_or``ders` BEFORE UPDATE ON "
	                    "`or``ders` FOR EACH ROW SIGNAL SQLSTATE '45000' "
	                    "SET MESSAGE_TEXT = 'run \\'x\\\\2x\\', step "
	                    "fence'");
	b.len = 0;
	/* Under NO_BACKSLASH_ESCAPES the driver only doubles quotes. */
	{
		struct mysql_sql_escape doubling = {doubling_escape, NULL};

		assert_int_equal(mysql_sql_fence_create(&b, &doubling, 0, "t",
		                                        "it's\\", NULL, 0),
		                 0);
		assert_string_equal(b.text,
		                    "CREATE TRIGGER IF NOT EXISTS "
		                    "`reshard_fence_INSERT_t` BEFORE INSERT ON "
		                    "`t` FOR EACH ROW SIGNAL SQLSTATE '45000' "
		                    "SET MESSAGE_TEXT = 'it''s\\'");
		b.len = 0;
	}
	mysql_sql_drop_trigger(&b, "reshard_fence_DELETE_or`ders");
	assert_string_equal(b.text, "DROP TRIGGER IF EXISTS "
	                            "`reshard_fence_DELETE_or``ders`");
	b.len = 0;
	{
		struct mysql_sql_escape refusing = {refusing_escape, NULL};

		assert_int_equal(mysql_sql_fence_create(&b, &refusing, 0, "t",
		                                        "m", NULL, 0),
		                 -1);
		assert_false(b.failed);
		b.len = 0;
		assert_int_equal(
			mysql_sql_fence_existing(&b, &refusing, tables, 1), -1);
	}
	strbuf_clear(&b);
}

static void
test_marker(void **state)
{
	struct rs_marker m = {"or'ders-2x", "0123abcd", "fenced", -42, ""};
	struct rs_strbuf b = {0};

	(void)state;
	assert_int_equal(mysql_sql_mark(&b, &esc, &m), 0);
	assert_string_equal(
		b.text,
		"INSERT INTO `reshard_marker` (`plan`, `run_id`, `state`, "
		"`epoch`, `updated_at`) VALUES ('or\\'ders-2x', '0123abcd', "
		"'fenced', -42, UTC_TIMESTAMP()) ON DUPLICATE KEY UPDATE "
		"`run_id` = VALUES(`run_id`), `state` = VALUES(`state`), "
		"`epoch` = VALUES(`epoch`), `updated_at` = "
		"VALUES(`updated_at`)");
	assert_string_equal(
		mysql_sql_marker_table,
		"CREATE TABLE IF NOT EXISTS `reshard_marker` (`plan` "
		"varchar(127) NOT NULL, `run_id` varchar(39) NOT NULL, `state` "
		"varchar(15) NOT NULL, `epoch` bigint NOT NULL, `updated_at` "
		"datetime NOT NULL, PRIMARY KEY (`plan`)) "
		"DEFAULT CHARSET=utf8mb4");
	assert_string_equal(mysql_sql_markers,
	                    "SELECT `plan`, `run_id`, `state`, `epoch`, "
	                    "`updated_at` FROM `reshard_marker` ORDER BY "
	                    "`plan`");
	strbuf_clear(&b);
}

static void
test_delete_log(void **state)
{
	const char *keys[] = {"re`gion", "id"};
	const char *types[] = {"varchar(10)", "bigint(20) unsigned"};
	const char *collations[] = {"utf8mb4_bin", NULL};
	struct rs_strbuf b = {0};
	char name[MYSQL_SQL_NAME_SIZE];

	(void)state;
	mysql_sql_log_trigger_name(name, sizeof(name), "or`ders", 0);
	assert_string_equal(name, "reshard_dellog_or`ders");
	mysql_sql_log_trigger_name(name, sizeof(name), "or`ders", 1);
	assert_string_equal(name, "reshard_dellog_u_or`ders");

	assert_int_equal(mysql_sql_log_columns(&b, &esc, "it'em"), 0);
	assert_string_equal(b.text,
	                    "SELECT COLUMN_NAME, COLUMN_TYPE, COLLATION_NAME "
	                    "FROM information_schema.COLUMNS WHERE "
	                    "TABLE_SCHEMA = DATABASE() AND TABLE_NAME = "
	                    "'it\\'em' ORDER BY ORDINAL_POSITION");
	b.len = 0;
	mysql_sql_log_table(&b, "reshard_del_or`ders", keys, types, collations,
	                    2);
	assert_string_equal(b.text,
	                    "CREATE TABLE IF NOT EXISTS "
	                    "`reshard_del_or``ders` (`re``gion` varchar(10) "
	                    "COLLATE utf8mb4_bin NOT NULL, `id` bigint(20) "
	                    "unsigned NOT NULL, PRIMARY KEY (`re``gion`, "
	                    "`id`))");
	b.len = 0;
	mysql_sql_log_trigger(&b, "or`ders", "reshard_del_or`ders", keys, 2, 0);
	assert_string_equal(b.text,
	                    "CREATE TRIGGER IF NOT EXISTS "
	                    "`reshard_dellog_or``ders` AFTER DELETE ON "
	                    "`or``ders` FOR EACH ROW IF @reshard_purging IS "
	                    "NULL THEN INSERT IGNORE INTO "
	                    "`reshard_del_or``ders` (`re``gion`, `id`) "
	                    "VALUES (OLD.`re``gion`, OLD.`id`); END IF");
	b.len = 0;
	mysql_sql_log_trigger(&b, "or`ders", "reshard_del_or`ders", keys, 2, 1);
	assert_string_equal(
		b.text,
		"CREATE TRIGGER IF NOT EXISTS `reshard_dellog_u_or``ders` "
		"AFTER UPDATE ON `or``ders` FOR EACH ROW IF @reshard_purging "
		"IS NULL AND NOT (CAST(OLD.`re``gion` AS BINARY) <=> "
		"CAST(NEW.`re``gion` AS BINARY) AND CAST(OLD.`id` AS BINARY) "
		"<=> CAST(NEW.`id` AS BINARY)) THEN INSERT IGNORE INTO "
		"`reshard_del_or``ders` (`re``gion`, `id`) VALUES "
		"(OLD.`re``gion`, OLD.`id`); END IF");
	assert_string_equal(mysql_sql_purging_on, "SET @reshard_purging = 1");
	assert_string_equal(mysql_sql_purging_off,
	                    "SET @reshard_purging = NULL");
	strbuf_clear(&b);
}

/* ---- change capture and reads by key ---- */

static void
test_capture(void **state)
{
	const char *names[] = {"re`gion", "id", "ts"};
	const char *types[] = {"varchar(10)", "bigint(20) unsigned",
	                       "timestamp"};
	const char *collations[] = {"utf8mb4_bin", NULL, NULL};
	const char *log = "reshard_chg_or`ders";
	struct rs_strbuf b = {0};
	char name[MYSQL_SQL_NAME_SIZE];

	(void)state;
	mysql_sql_capture_trigger(name, sizeof(name), 0, "or`ders");
	assert_string_equal(name, "reshard_capture_i_or`ders");
	mysql_sql_capture_trigger(name, sizeof(name), 1, "or`ders");
	assert_string_equal(name, "reshard_capture_u_or`ders");
	mysql_sql_capture_trigger(name, sizeof(name), 2, "or`ders");
	assert_string_equal(name, "reshard_capture_d_or`ders");

	/* The key NOT NULL, the shard key NULL (a TIMESTAMP says so). */
	mysql_sql_change_table(&b, log, names, types, collations, 3, 2);
	assert_string_equal(b.text,
	                    "CREATE TABLE IF NOT EXISTS "
	                    "`reshard_chg_or``ders` (`reshard_pos` bigint "
	                    "NOT NULL AUTO_INCREMENT, `re``gion` varchar(10) "
	                    "COLLATE utf8mb4_bin NOT NULL, `id` bigint(20) "
	                    "unsigned NOT NULL, `ts` timestamp NULL, "
	                    "PRIMARY KEY (`reshard_pos`)) ENGINE=InnoDB");
	b.len = 0;
	/* The shard key in the primary key: no column of its own. */
	mysql_sql_change_table(&b, log, names, types, collations, 2, 2);
	assert_string_equal(b.text,
	                    "CREATE TABLE IF NOT EXISTS "
	                    "`reshard_chg_or``ders` (`reshard_pos` bigint "
	                    "NOT NULL AUTO_INCREMENT, `re``gion` varchar(10) "
	                    "COLLATE utf8mb4_bin NOT NULL, `id` bigint(20) "
	                    "unsigned NOT NULL, PRIMARY KEY (`reshard_pos`)) "
	                    "ENGINE=InnoDB");

	b.len = 0;
	mysql_sql_capture_create(&b, 0, "or`ders", log, names, 3);
	assert_string_equal(b.text,
	                    "CREATE TRIGGER IF NOT EXISTS "
	                    "`reshard_capture_i_or``ders` AFTER INSERT ON "
	                    "`or``ders` FOR EACH ROW INSERT INTO "
	                    "`reshard_chg_or``ders` (`re``gion`, `id`, `ts`) "
	                    "VALUES (NEW.`re``gion`, NEW.`id`, NEW.`ts`)");
	b.len = 0;
	mysql_sql_capture_create(&b, 2, "or`ders", log, names, 3);
	assert_string_equal(b.text,
	                    "CREATE TRIGGER IF NOT EXISTS "
	                    "`reshard_capture_d_or``ders` AFTER DELETE ON "
	                    "`or``ders` FOR EACH ROW INSERT INTO "
	                    "`reshard_chg_or``ders` (`re``gion`, `id`, `ts`) "
	                    "VALUES (OLD.`re``gion`, OLD.`id`, OLD.`ts`)");
	/* OLD first, when a column changed as it compares or in bytes. */
	b.len = 0;
	mysql_sql_capture_create(&b, 1, "or`ders", log, names, 2);
	assert_string_equal(
		b.text,
		"CREATE TRIGGER IF NOT EXISTS `reshard_capture_u_or``ders` "
		"AFTER UPDATE ON `or``ders` FOR EACH ROW BEGIN IF NOT "
		"(OLD.`re``gion` <=> NEW.`re``gion` AND CAST(OLD.`re``gion` "
		"AS BINARY) <=> CAST(NEW.`re``gion` AS BINARY) AND OLD.`id` "
		"<=> NEW.`id` AND CAST(OLD.`id` AS BINARY) <=> CAST(NEW.`id` "
		"AS BINARY)) THEN INSERT INTO `reshard_chg_or``ders` "
		"(`re``gion`, `id`) VALUES (OLD.`re``gion`, OLD.`id`); END "
		"IF; INSERT INTO `reshard_chg_or``ders` (`re``gion`, `id`) "
		"VALUES (NEW.`re``gion`, NEW.`id`); END");
	strbuf_clear(&b);
}

static void
test_read_keys(void **state)
{
	struct rs_value k[] = {V("eu'\\"), V("1"), V("us"),
	                       V("-2"),    V("x"), VNULL};
	struct rs_rows keys = {2, 2, k};
	struct rs_keys_request r = {&orders, read_columns, 4, &keys};
	struct mysql_sql_stmts s = {0};
	struct rs_err err;

	(void)state;
	assert_int_equal(mysql_sql_read_keys(&s, &esc, &r, NULL), 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.v[0].first_row, 0);
	assert_int_equal(s.v[0].n_rows, 2);
	assert_string_equal(
		s.v[0].sql,
		"SELECT `re``gion`, `id`, `data`, `note`, CAST(`f` AS DOUBLE), "
		"`d` FROM `or``ders` WHERE (`re``gion`, `id`) IN "
		"(('eu\\'\\\\', 1), ('us', -2))");
	mysql_sql_stmts_free(&s);

	/* Key columns only; the escaping is the caller's. */
	{
		struct mysql_sql_escape doubling = {doubling_escape, NULL};
		struct rs_keys_request only = {&orders, NULL, 0, &keys};

		assert_int_equal(
			mysql_sql_read_keys(&s, &doubling, &only, NULL), 0);
		assert_string_equal(s.v[0].sql,
		                    "SELECT `re``gion`, `id` FROM `or``ders` "
		                    "WHERE (`re``gion`, `id`) IN (('eu''\\', "
		                    "1), ('us', -2))");
		mysql_sql_stmts_free(&s);
	}

	/* No keys: no statement. */
	keys.n_rows = 0;
	assert_int_equal(mysql_sql_read_keys(&s, &esc, &r, NULL), 0);
	assert_int_equal(s.n, 0);

	/* A NULL key is a bug; a key MariaDB cannot take is RS_EKEY. */
	keys.n_rows = 3;
	assert_int_equal(mysql_sql_read_keys(&s, &esc, &r, &err), RS_EINTERNAL);
	assert_string_equal(err.message,
	                    "read by key from table or`ders: key 3 has a NULL "
	                    "in column id (a bug in the caller)");
	assert_int_equal(s.n, 0);
	k[5] = (struct rs_value)V("12x");
	assert_int_equal(mysql_sql_read_keys(&s, &esc, &r, &err), RS_EKEY);
	assert_int_equal(err.code, RS_EKEY);
	assert_string_equal(err.message,
	                    "read by key from table or`ders: row 3, column id "
	                    "(bigint(20), integer): value '12x' is not an "
	                    "integer");
	assert_int_equal(s.n, 0);
}

/* One key column: 999 keys a statement (MYSQL_SQL_READ_VALUES); two: 499;
 * a table of more key columns than that still one key a statement. */
static void
check_read_keys_split(int n_pk, int n, int per, int n_stmts)
{
	struct rs_column c[] = {{"a", "int", RS_COL_INTEGER, 0},
	                        {"b", "int", RS_COL_INTEGER, 0}};
	int pk[] = {0, 1};
	struct rs_table_def t = {"k", c, 2, pk, n_pk, -1, NULL, NULL, 0};
	struct rs_value *v = calloc((size_t)n * (size_t)n_pk, sizeof(*v));
	struct rs_rows keys = {n, n_pk, v};
	struct rs_keys_request r = {&t, NULL, 0, &keys};
	struct mysql_sql_stmts s = {0};
	int row = 0;

	assert_non_null(v);
	for (int i = 0; i < n * n_pk; i++)
		v[i] = (struct rs_value)V("7");
	assert_int_equal(mysql_sql_read_keys(&s, &esc, &r, NULL), 0);
	assert_int_equal(s.n, n_stmts);
	for (int i = 0; i < s.n; i++) {
		int want = n - row < per ? n - row : per;

		assert_int_equal(s.v[i].first_row, row);
		assert_int_equal(s.v[i].n_rows, want);
		row += want;
	}
	assert_int_equal(row, n);
	mysql_sql_stmts_free(&s);
	free(v);
}

static void
test_read_keys_limit(void **state)
{
	(void)state;
	check_read_keys_split(1, 999, 999, 1);
	check_read_keys_split(1, 1000, 999, 2);
	check_read_keys_split(2, 499, 499, 1);
	check_read_keys_split(2, 500, 499, 2);
	check_read_keys_split(2, 10000, 499, 21);
}

/* ---- replication ---- */

static void
test_gtid_wait(void **state)
{
	struct rs_strbuf b = {0};

	(void)state;
	assert_int_equal(mysql_sql_gtid_wait(&b, &esc, "0-1-42,1-2-7", 500), 0);
	assert_string_equal(b.text,
	                    "SELECT MASTER_GTID_WAIT('0-1-42,1-2-7', 0.500)");
	b.len = 0;
	assert_int_equal(mysql_sql_gtid_wait(&b, &esc, "", 0), 0);
	assert_string_equal(b.text, "SELECT MASTER_GTID_WAIT('', 0.000)");
	b.len = 0;
	assert_int_equal(mysql_sql_gtid_wait(&b, &esc, "x'y", 61234), 0);
	assert_string_equal(b.text, "SELECT MASTER_GTID_WAIT('x\\'y', 61.234)");
	b.len = 0;
	assert_int_equal(mysql_sql_gtid_wait(&b, &esc, "0-1-1", -5), 0);
	assert_string_equal(b.text, "SELECT MASTER_GTID_WAIT('0-1-1', 0.000)");
	strbuf_clear(&b);
	assert_string_equal(mysql_sql_position, "SELECT @@gtid_binlog_pos");
	assert_string_equal(mysql_sql_slave_pos, "SELECT @@gtid_slave_pos");
	assert_string_equal(mysql_sql_promote[0], "STOP SLAVE");
	assert_string_equal(mysql_sql_promote[1], "RESET SLAVE ALL");
	assert_string_equal(mysql_sql_promote[2], "SET GLOBAL read_only = 0");
}

static void
test_gtid_behind(void **state)
{
	(void)state;
	assert_int_equal(mysql_sql_gtid_behind("0-1-100", "0-1-100"), 0);
	assert_int_equal(mysql_sql_gtid_behind("0-1-100", "0-1-90"), 10);
	assert_int_equal(mysql_sql_gtid_behind("0-1-90", "0-1-100"), 0);
	/* Domains count apart; the server id is not part of the order. */
	assert_int_equal(mysql_sql_gtid_behind("0-1-100,1-2-50", "0-1-100"),
	                 50);
	assert_int_equal(
		mysql_sql_gtid_behind("0-1-100,1-2-50", "1-2-45, 0-3-99"), 6);
	assert_int_equal(mysql_sql_gtid_behind("0-1-100", ""), 100);
	assert_int_equal(mysql_sql_gtid_behind("", "0-1-5"), 0);
	assert_int_equal(mysql_sql_gtid_behind("", ""), 0);
	assert_int_equal(mysql_sql_gtid_behind("not a gtid", "0-1-5"), -1);
	assert_int_equal(mysql_sql_gtid_behind("0-1-5", "0-1"), -1);
	assert_int_equal(mysql_sql_gtid_behind("0-1-5x", "0-1-1"), -1);
	assert_int_equal(
		mysql_sql_gtid_behind("0-1-99999999999999999999", "0-1-1"), -1);
	assert_int_equal(mysql_sql_gtid_behind(NULL, "0-1-1"), -1);
}

/* A replica that may be promoted: every refusal below changes one
 * thing. */
static void
good_replica(struct mysql_sql_replica *r)
{
	memset(r, 0, sizeof(*r));
	r->primary = "p1";
	r->primary_url = "mysql://u:****@10.0.0.1:3307/app";
	r->replica = "p1-replica";
	r->replica_url = "mysql://u:****@10.0.0.2/app";
	r->host = "10.0.0.1";
	r->port = 3307;
	r->max_lag_ms = 30000;
	r->primary_id = 1;
	r->n_sources = 1;
	snprintf(r->io_running, sizeof(r->io_running), "Yes");
	snprintf(r->sql_running, sizeof(r->sql_running), "Yes");
	snprintf(r->master_host, sizeof(r->master_host), "10.0.0.1");
	r->master_port = 3307;
	r->master_id = 1;
	snprintf(r->using_gtid, sizeof(r->using_gtid), "Slave_Pos");
	r->behind_s = 30;
	r->replica_id = 2;
	r->read_only = 1;
	snprintf(r->skip_errors, sizeof(r->skip_errors), "OFF");
	snprintf(r->exec_mode, sizeof(r->exec_mode), "STRICT");
}

/* Check that R is refused with a message naming both shards and holding
 * every one of the NEEDLES (NULL-terminated). */
static void
refused(const struct mysql_sql_replica *r, ...)
{
	char reason[900];
	const char *needle;
	va_list ap;

	assert_int_equal(mysql_sql_replica_verdict(r, reason, sizeof(reason)),
	                 1);
	assert_non_null(strstr(reason, "replica p1-replica "));
	assert_non_null(strstr(reason, "primary p1"));
	/* Whole within backend_fail's 768 bytes, with its shard prefix. */
	if (strlen(reason) > 700)
		fail_msg("\"%s\" is %zu bytes long", reason, strlen(reason));
	va_start(ap, r);
	while ((needle = va_arg(ap, const char *)) != NULL) {
		if (strstr(reason, needle) == NULL)
			fail_msg("\"%s\" lacks \"%s\"", reason, needle);
	}
	va_end(ap);
}

static void
test_replica_verdict(void **state)
{
	struct mysql_sql_replica r;
	char reason[900];

	(void)state;
	good_replica(&r);
	assert_int_equal(mysql_sql_replica_verdict(&r, reason, sizeof(reason)),
	                 0);
	/* A socket or option-file primary: no host to compare. */
	r.host = NULL;
	snprintf(r.master_host, sizeof(r.master_host), "db1.example");
	assert_int_equal(mysql_sql_replica_verdict(&r, reason, sizeof(reason)),
	                 0);
	/* The host's case does not matter; port 0 is 3306. */
	good_replica(&r);
	r.host = "DB1.example";
	r.port = 0;
	snprintf(r.master_host, sizeof(r.master_host), "db1.EXAMPLE");
	r.master_port = 3306;
	assert_int_equal(mysql_sql_replica_verdict(&r, reason, sizeof(reason)),
	                 0);

	good_replica(&r);
	r.n_sources = 0;
	refused(&r, "does not replicate at all", "CHANGE MASTER TO",
	        "MASTER_HOST = '10.0.0.1', MASTER_PORT = 3307", NULL);
	good_replica(&r);
	r.n_sources = 2;
	refused(&r, "2 connections", "RESET SLAVE 'name' ALL", NULL);
	good_replica(&r);
	snprintf(r.connection, sizeof(r.connection), "east");
	refused(&r, "'east'", NULL);
	good_replica(&r);
	snprintf(r.io_running, sizeof(r.io_running), "Connecting");
	snprintf(r.last_error, sizeof(r.last_error),
	         "error connecting to master");
	refused(&r, "Slave_IO_Running: Connecting, Slave_SQL_Running: Yes",
	        "last error: error connecting to master", "START SLAVE", NULL);
	good_replica(&r);
	snprintf(r.sql_running, sizeof(r.sql_running), "No");
	refused(&r, "Slave_SQL_Running: No", NULL);
	good_replica(&r);
	r.master_port = 3306;
	refused(&r, "streams from 10.0.0.1:3306",
	        "the primary's URL says 10.0.0.1:3307", "MASTER_PORT = 3307",
	        NULL);
	good_replica(&r);
	snprintf(r.master_host, sizeof(r.master_host), "10.0.0.9");
	refused(&r, "streams from 10.0.0.9:3307",
	        "the primary's URL says 10.0.0.1:3307", NULL);
	good_replica(&r);
	snprintf(r.using_gtid, sizeof(r.using_gtid), "No");
	refused(&r, "Using_Gtid: No", "MASTER_USE_GTID = slave_pos", NULL);
	good_replica(&r);
	r.replica_id = 1;
	refused(&r, "the primary's server_id 1", "server_id of its own", NULL);
	good_replica(&r);
	r.master_id = 7;
	refused(&r, "server_id 7 (Master_Server_Id)", "has server_id 1", NULL);
	good_replica(&r);
	r.behind_s = -1;
	refused(&r, "Seconds_Behind_Master is NULL", NULL);
	good_replica(&r);
	r.behind_s = 31;
	refused(&r, "31 s behind", "the 30 s allowed",
	        "options.max_replica_lag_seconds", NULL);
	good_replica(&r);
	r.max_lag_ms = 1500;
	r.behind_s = 2;
	refused(&r, "the 1500 ms allowed", NULL);
	good_replica(&r);
	r.n_replicas = 2;
	snprintf(r.first_replica, sizeof(r.first_replica),
	         "server_id 3 at 10.0.0.3:3306");
	refused(&r, "2 replicas of its own",
	        "SHOW SLAVE HOSTS: server_id 3 at 10.0.0.3:3306",
	        "point them at the primary", NULL);
	good_replica(&r);
	r.semi_sync = 1;
	refused(&r, "rpl_semi_sync_master_enabled = ON",
	        "SET GLOBAL rpl_semi_sync_master_enabled = OFF", NULL);
}

/* A replica whose rows can differ from its primary's though its GTID
 * position says it has everything: a replication filter (each of the
 * eight, named with its value and how to clear it, a long value cut),
 * errors it skips, writes of its own (read_only off); and a primary
 * that is none: read-only, or applying another server's writes (said
 * first, whatever the replica). */
static void
test_replica_verdict_differs(void **state)
{
	static const char *const clear[MYSQL_SQL_N_FILTERS] = {
		"SET GLOBAL replicate_do_db = ''",
		"SET GLOBAL replicate_ignore_db = ''",
		"SET GLOBAL replicate_do_table = ''",
		"SET GLOBAL replicate_ignore_table = ''",
		"SET GLOBAL replicate_wild_do_table = ''",
		"SET GLOBAL replicate_wild_ignore_table = ''",
		"CHANGE MASTER TO DO_DOMAIN_IDS = ()",
		"CHANGE MASTER TO IGNORE_DOMAIN_IDS = ()",
		"CHANGE MASTER TO IGNORE_SERVER_IDS = ()",
	};
	struct mysql_sql_replica r;
	char reason[900], named[300];

	(void)state;
	assert_string_equal(mysql_sql_replica_filters[0], "Replicate_Do_DB");
	assert_string_equal(mysql_sql_replica_filters[7],
	                    "Replicate_Ignore_Domain_Ids");
	assert_string_equal(mysql_sql_replica_filters[8],
	                    "Replicate_Ignore_Server_Ids");
	for (int i = 0; i < MYSQL_SQL_N_FILTERS; i++) {
		good_replica(&r);
		snprintf(r.filters[i], sizeof(r.filters[i]), "app.audit_%d", i);
		snprintf(named, sizeof(named), "%s is 'app.audit_%d'",
		         mysql_sql_replica_filters[i], i);
		refused(&r, named, clear[i], "make it again from p1", NULL);
	}
	good_replica(&r);
	memset(r.filters[5], 'x', sizeof(r.filters[5]) - 1);
	r.filters[5][sizeof(r.filters[5]) - 1] = '\0';
	refused(&r, "Replicate_Wild_Ignore_Table is 'xxxx", "without filters",
	        NULL);

	good_replica(&r);
	snprintf(r.skip_errors, sizeof(r.skip_errors), "1062,1032");
	refused(&r, "@@slave_skip_errors = '1062,1032'",
	        "slave_skip_errors = OFF in its option file", NULL);
	snprintf(r.skip_errors, sizeof(r.skip_errors), "ALL");
	refused(&r, "@@slave_skip_errors = 'ALL'", NULL);
	snprintf(r.skip_errors, sizeof(r.skip_errors), "off");
	assert_int_equal(mysql_sql_replica_verdict(&r, reason, sizeof(reason)),
	                 0);
	r.skip_errors[0] = '\0';
	assert_int_equal(mysql_sql_replica_verdict(&r, reason, sizeof(reason)),
	                 0);

	good_replica(&r);
	snprintf(r.exec_mode, sizeof(r.exec_mode), "IDEMPOTENT");
	refused(&r, "@@slave_exec_mode = IDEMPOTENT",
	        "SET GLOBAL slave_exec_mode = 'STRICT'", NULL);

	good_replica(&r);
	r.read_only = 0;
	refused(&r, "is writable (@@read_only = 0)",
	        "SET GLOBAL read_only = 1 on it", NULL);

	good_replica(&r);
	r.primary_read_only = 1;
	refused(&r, "primary p1 (mysql://u:****@10.0.0.1:3307/app)",
	        "is read-only (@@read_only = 1)",
	        "point shard p1's url at the server that takes the writes",
	        "SET GLOBAL read_only = 0", NULL);
	good_replica(&r);
	r.primary_applying = 1;
	refused(&r, "is itself a replica: 1 replication SQL thread runs on it",
	        "the fence does not stop", "STOP ALL SLAVES on p1", NULL);
	/* The primary is said first, whatever its replica. */
	r.primary_applying = 2;
	r.n_sources = 0;
	r.read_only = 0;
	refused(&r, "2 replication SQL threads run on it", NULL);
	r.primary_applying = 0;
	r.primary_read_only = 1;
	refused(&r, "is read-only (@@read_only = 1)", NULL);

	assert_non_null(strstr(mysql_sql_primary_facts, "@@read_only"));
	assert_non_null(strstr(mysql_sql_primary_facts,
	                       "information_schema.GLOBAL_STATUS WHERE "
	                       "VARIABLE_NAME = 'SLAVES_RUNNING'"));
	assert_string_equal(
		mysql_sql_replica_facts,
		"SELECT @@server_id, @@read_only, @@slave_skip_errors, "
		"@@slave_exec_mode");
}

/* What a replica is, for promote and abort: one following its primary
 * (an I/O thread reconnecting included), one whose replication a promote
 * cut short stopped (or an error), one it left with no replication but
 * read-only, and one promoted; read_only read as MariaDB gives it. */
static void
test_replica_state(void **state)
{
	struct mysql_sql_replica r;

	(void)state;
	good_replica(&r);
	assert_int_equal(mysql_sql_replica_state(&r), RS_REPLICA_FOLLOWS);
	snprintf(r.io_running, sizeof(r.io_running), "Connecting");
	assert_int_equal(mysql_sql_replica_state(&r), RS_REPLICA_FOLLOWS);
	/* STOP SLAVE, the first statement of promote. */
	snprintf(r.io_running, sizeof(r.io_running), "No");
	snprintf(r.sql_running, sizeof(r.sql_running), "No");
	assert_int_equal(mysql_sql_replica_state(&r), RS_REPLICA_STOPPED);
	/* One thread stopped, by an error or by hand. */
	snprintf(r.io_running, sizeof(r.io_running), "Yes");
	assert_int_equal(mysql_sql_replica_state(&r), RS_REPLICA_STOPPED);
	good_replica(&r);
	snprintf(r.io_running, sizeof(r.io_running), "No");
	assert_int_equal(mysql_sql_replica_state(&r), RS_REPLICA_STOPPED);
	/* A replica read-only or not, its replication decides. */
	good_replica(&r);
	r.read_only = 0;
	assert_int_equal(mysql_sql_replica_state(&r), RS_REPLICA_FOLLOWS);
	/* RESET SLAVE ALL, the second: no replication, read-only still. */
	r.n_sources = 0;
	r.read_only = 1;
	assert_int_equal(mysql_sql_replica_state(&r), RS_REPLICA_DETACHED);
	/* SET GLOBAL read_only = 0, the last. */
	r.read_only = 0;
	assert_int_equal(mysql_sql_replica_state(&r), RS_REPLICA_PROMOTED);

	assert_true(mysql_sql_off("0"));
	assert_true(mysql_sql_off("OFF"));
	assert_true(mysql_sql_off("off"));
	assert_true(mysql_sql_off(""));
	assert_true(mysql_sql_off(NULL));
	assert_false(mysql_sql_off("1"));
	assert_false(mysql_sql_off("ON"));
	assert_false(mysql_sql_off("1062,1032"));
	assert_false(mysql_sql_off("ALL"));
	assert_string_equal(mysql_sql_resume, "START SLAVE");
}

/* catch-up: a replica that stopped replicating fails at once, one that
 * is reconnecting is noted, a lagging one that replicates is fine. */
static void
test_catch_up_verdict(void **state)
{
	struct mysql_sql_replica r;
	char note[900];

	(void)state;
	good_replica(&r);
	r.behind_s = 3600; /* lag alone is no reason to stop waiting */
	assert_int_equal(mysql_sql_catch_up_verdict(&r, note, sizeof(note)), 0);
	assert_string_equal(note, "");

	snprintf(r.io_running, sizeof(r.io_running), "Connecting");
	snprintf(r.last_error, sizeof(r.last_error), "error reconnecting");
	assert_int_equal(mysql_sql_catch_up_verdict(&r, note, sizeof(note)), 1);
	assert_string_equal(note, "it is not receiving from p1 "
	                          "(Slave_IO_Running: Connecting; last "
	                          "error: error reconnecting)");

	good_replica(&r);
	snprintf(r.sql_running, sizeof(r.sql_running), "No");
	snprintf(r.last_error, sizeof(r.last_error), "Duplicate entry '7'");
	assert_int_equal(mysql_sql_catch_up_verdict(&r, note, sizeof(note)),
	                 -1);
	assert_non_null(strstr(note, "replica p1-replica stopped replicating "
	                             "from p1 (Slave_IO_Running: Yes, "
	                             "Slave_SQL_Running: No; last error: "
	                             "Duplicate entry '7')"));
	assert_non_null(strstr(note, "START SLAVE on it, then `reshard run`"));
	assert_non_null(strstr(note, "`reshard abort` lifts the fence"));

	good_replica(&r);
	snprintf(r.io_running, sizeof(r.io_running), "No");
	assert_int_equal(mysql_sql_catch_up_verdict(&r, note, sizeof(note)),
	                 -1);
	assert_non_null(strstr(note, "Slave_IO_Running: No, "
	                             "Slave_SQL_Running: Yes)"));

	good_replica(&r);
	r.n_sources = 0;
	assert_int_equal(mysql_sql_catch_up_verdict(&r, note, sizeof(note)),
	                 -1);
	assert_non_null(strstr(note, "no longer replicates from p1"));
	assert_non_null(strstr(note, "MASTER_USE_GTID = slave_pos"));
}

/* SHOW CREATE TABLE taken apart: the table without its secondary
 * indexes but the one leading with the AUTO_INCREMENT column, the trailing
 * comma before ")" gone, the foreign key left out, each index an ALTER
 * TABLE … ADD … IF NOT EXISTS under the new name (the UNIQUE KEY among
 * the uniques, run before the copy), the DROP of that name;
 * something that is not a CREATE TABLE is refused. */
static void
test_table_sql(void **state)
{
	static const char show[] =
		"CREATE TABLE `orders` (\n"
		"  `id` bigint(20) NOT NULL AUTO_INCREMENT,\n"
		"  `c` varchar(20) COLLATE utf8mb4_bin NOT NULL,\n"
		"  `note` text DEFAULT 'x\\'y',\n"
		"  PRIMARY KEY (`c`,`id`),\n"
		"  UNIQUE KEY `nk` (`note`(20)),\n"
		"  KEY `id` (`id`),\n"
		"  KEY `idc` (`id_c`),\n"
		"  FULLTEXT KEY `ft` (`note`),\n"
		"  CONSTRAINT `fk` FOREIGN KEY (`id`) REFERENCES `p` (`id`),\n"
		"  CONSTRAINT `ck` CHECK (`id` > 0)\n"
		") ENGINE=InnoDB AUTO_INCREMENT=7 COMMENT='a\\nb'";
	struct rs_value v[2] = {{"orders", 6}, {show, sizeof(show) - 1}};
	struct rs_rows rows = {1, 2, v};
	struct rs_table_sql out = {0};
	struct rs_err err;

	(void)state;
	assert_int_equal(
		mysql_sql_table_sql_build(&rows, "orders", "o`2", &out, &err),
		0);
	assert_string_equal(out.create,
	                    "CREATE TABLE `o``2` (\n"
	                    "  `id` bigint(20) NOT NULL AUTO_INCREMENT,\n"
	                    "  `c` varchar(20) COLLATE utf8mb4_bin NOT NULL,\n"
	                    "  `note` text DEFAULT 'x\\'y',\n"
	                    "  PRIMARY KEY (`c`,`id`),\n"
	                    "  KEY `id` (`id`),\n"
	                    "  CONSTRAINT `ck` CHECK (`id` > 0)\n"
	                    ") ENGINE=InnoDB AUTO_INCREMENT=7 COMMENT='a\\nb'");
	assert_int_equal(out.n_uniques, 1);
	assert_string_equal(out.uniques[0],
	                    "ALTER TABLE `o``2` ADD UNIQUE KEY IF NOT EXISTS "
	                    "`nk` (`note`(20))");
	assert_int_equal(out.n_indexes, 2);
	assert_string_equal(out.indexes[0], "ALTER TABLE `o``2` ADD KEY IF NOT "
	                                    "EXISTS `idc` (`id_c`)");
	assert_string_equal(out.indexes[1], "ALTER TABLE `o``2` ADD FULLTEXT "
	                                    "KEY IF NOT EXISTS `ft` (`note`)");
	assert_int_equal(out.n_left_out, 1);
	assert_string_equal(out.left_out[0], "CONSTRAINT `fk` FOREIGN KEY "
	                                     "(`id`) REFERENCES `p` (`id`)");
	assert_string_equal(out.drop, "DROP TABLE `o``2`");
	free(out.uniques[0]);
	free(out.uniques);
	for (int i = 0; i < out.n_indexes; i++)
		free(out.indexes[i]);
	free(out.indexes);
	free(out.left_out[0]);
	free(out.left_out);
	free(out.create);
	free(out.drop);

	memset(&out, 0, sizeof(out));
	v[1] = (struct rs_value){"CREATE VIEW `v` AS select 1", 27};
	assert_int_equal(mysql_sql_table_sql_build(&rows, "v", "v", &out, &err),
	                 RS_ESCHEMA);
	assert_non_null(strstr(err.message, "not a plain table"));
	assert_null(out.create);
}

/* The point in SQL: sha256_64 and identity of text and integer keys
 * (integration/scenario_point_sql.sh runs them on a server); any other
 * hash or key kind refused with nothing appended. */
static void
test_point(void **state)
{
	struct rs_strbuf b = {0};

	(void)state;
	assert_int_equal(
		mysql_sql_point(&b, RS_HASH_SHA256_64, RS_COL_TEXT, "k"), 0);
	assert_non_null(strstr(b.text, "k"));
	strbuf_clear(&b);
	assert_int_equal(
		mysql_sql_point(&b, RS_HASH_IDENTITY, RS_COL_INTEGER, "k"), 0);
	strbuf_clear(&b);
	assert_int_equal(mysql_sql_point(&b, RS_HASH_JAVA, RS_COL_TEXT, "k"),
	                 RS_EUSAGE);
	assert_int_equal(
		mysql_sql_point(&b, RS_HASH_FNV1A_64, RS_COL_TEXT, "k"),
		RS_EUSAGE);
	assert_int_equal(
		mysql_sql_point(&b, RS_HASH_SHA256_64, RS_COL_DECIMAL, "k"),
		RS_EUSAGE);
	assert_int_equal(
		mysql_sql_point(&b, RS_HASH_SHA256_64, RS_COL_UUID, "k"),
		RS_EUSAGE);
	assert_int_equal((int)b.len, 0);
	strbuf_clear(&b);
}

/* The point in a trigger's body: "SET p = <mysql_sql_point>" for the
 * hashes it computes, a loop for fnv1a_64 (UTF-8 bytes) and java (UTF-16
 * code units), whose variables mysql_sql_point_declare adds; nothing
 * appended for a key kind no hash takes.  (Their results are checked on
 * a server by integration/scenario_point_sql.sh.) */
static void
test_point_set(void **state)
{
	struct rs_strbuf b = {0};

	(void)state;
	mysql_sql_point_declare(&b, RS_HASH_SHA256_64);
	assert_string_equal(b.text, "DECLARE p DECIMAL(65,0); ");
	b.len = 0;
	mysql_sql_point_declare(&b, RS_HASH_JAVA);
	assert_string_equal(b.text, "DECLARE p DECIMAL(65,0); DECLARE "
	                            "reshard_b LONGBLOB; DECLARE reshard_i "
	                            "INT; DECLARE reshard_h DECIMAL(65,0); ");
	b.len = 0;
	assert_int_equal(
		mysql_sql_point_set(&b, RS_HASH_IDENTITY, RS_COL_INTEGER, "k"),
		0);
	assert_string_equal(b.text, "SET p = (CASE WHEN k >= 0 THEN "
	                            "CAST(k AS UNSIGNED) END)");
	b.len = 0;
	assert_int_equal(
		mysql_sql_point_set(&b, RS_HASH_FNV1A_64, RS_COL_TEXT, "k"), 0);
	assert_string_equal(
		b.text,
		"SET reshard_b = CAST(CONVERT(k USING utf8mb4) AS BINARY), "
		"reshard_h = 14695981039346656037, reshard_i = 1; WHILE "
		"reshard_i <= LENGTH(reshard_b) DO SET reshard_h = "
		"MOD(CAST(reshard_h ^ ASCII(SUBSTRING(reshard_b, reshard_i, "
		"1)) AS DECIMAL(65,0)) * 1099511628211, "
		"18446744073709551616), reshard_i = reshard_i + 1; END WHILE; "
		"SET p = IF(reshard_b IS NULL, NULL, reshard_h)");
	b.len = 0;
	assert_int_equal(
		mysql_sql_point_set(&b, RS_HASH_JAVA, RS_COL_INTEGER, "k"), 0);
	assert_non_null(strstr(b.text, "CONVERT(CAST(k + 0 AS CHAR) USING "
	                               "utf16) AS BINARY)"));
	assert_non_null(strstr(b.text, "reshard_i = reshard_i + 2"));
	b.len = 0;
	assert_int_equal(
		mysql_sql_point_set(&b, RS_HASH_JAVA, RS_COL_DECIMAL, "k"),
		RS_EUSAGE);
	assert_int_equal(
		mysql_sql_point_set(&b, RS_HASH_SHA256_64, RS_COL_UUID, "k"),
		RS_EUSAGE);
	assert_int_equal((int)b.len, 0);
	strbuf_clear(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ident),
		cmocka_unit_test(test_read),
		cmocka_unit_test(test_read_one_key),
		cmocka_unit_test(test_read_canonical_bounds),
		cmocka_unit_test(test_read_refused),
		cmocka_unit_test(test_upsert),
		cmocka_unit_test(test_upsert_keys_only),
		cmocka_unit_test(test_upsert_other_unique),
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_load_year),
		cmocka_unit_test(test_generated_not_written),
		cmocka_unit_test(test_upsert_refused),
		cmocka_unit_test(test_limits),
		cmocka_unit_test_setup_teardown(test_pack_at_limit, setup_xs,
	                                        teardown_xs),
		cmocka_unit_test_setup_teardown(test_pack_row_over_limit,
	                                        setup_xs, teardown_xs),
		cmocka_unit_test_setup_teardown(test_pack_greedy, setup_xs,
	                                        teardown_xs),
		cmocka_unit_test(test_delete),
		cmocka_unit_test(test_delete_keys_limit),
		cmocka_unit_test_setup_teardown(test_delete_bytes_limit,
	                                        setup_xs, teardown_xs),
		cmocka_unit_test(test_describe),
		cmocka_unit_test(test_json_checks),
		cmocka_unit_test(test_scan),
		cmocka_unit_test(test_name_fits),
		cmocka_unit_test(test_count),
		cmocka_unit_test(test_fence),
		cmocka_unit_test(test_fence_rows),
		cmocka_unit_test(test_guard),
		cmocka_unit_test(test_marker),
		cmocka_unit_test(test_delete_log),
		cmocka_unit_test(test_capture),
		cmocka_unit_test(test_read_keys),
		cmocka_unit_test(test_read_keys_limit),
		cmocka_unit_test(test_gtid_wait),
		cmocka_unit_test(test_gtid_behind),
		cmocka_unit_test(test_replica_verdict),
		cmocka_unit_test(test_replica_verdict_differs),
		cmocka_unit_test(test_replica_state),
		cmocka_unit_test(test_catch_up_verdict),
		cmocka_unit_test(test_table_sql),
		cmocka_unit_test(test_point),
		cmocka_unit_test(test_point_set),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
