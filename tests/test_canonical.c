/*
 * Unit tests of src/backend/canonical*.c, the canonical form of DESIGN §9.
 *
 * The central property: the same logical value, written the way
 * PostgreSQL, MariaDB and SQLite each write it, has byte-identical
 * canonical text, so rows hash the same on every engine.  Each kind is
 * checked that way, then whole rows, then what must differ (NULL and "",
 * column order, a changed value), malformed values, the type-name
 * mappings, and the row hash's encoding against vectors from Python's
 * hashlib.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/canonical.h"
#include "common/err.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- Helpers ---------------------------------------------------------- */

/* Fail unless KIND's TEXT (LEN bytes) from SRC canonicalises to EXPECTED
 * (EXPECTED_LEN bytes). */
static void
check_n(enum rs_col_kind kind, enum rs_canon_src src, const char *text,
        size_t len, const char *expected, size_t expected_len)
{
	struct rs_canon_buf buf = RS_CANON_BUF_INIT;
	struct rs_err err = {0};
	int rc = canonical_value(kind, src, text, len, &buf, &err);

	if (rc != 0) {
		print_error("%s \"%.*s\" from %s: error %d: %s\n",
		            canonical_kind_name(kind), (int)len, text,
		            canonical_src_name(src), rc, err.message);
		fail();
	}
	assert_non_null(buf.data);
	assert_int_equal(buf.data[buf.len], '\0');
	if (buf.len != expected_len ||
	    memcmp(buf.data, expected, expected_len) != 0) {
		print_error("%s \"%.*s\" from %s gave \"%.*s\", expected "
		            "\"%.*s\"\n",
		            canonical_kind_name(kind), (int)len, text,
		            canonical_src_name(src), (int)buf.len, buf.data,
		            (int)expected_len, expected);
		fail();
	}
	canonical_buf_free(&buf);
}

static void
check(enum rs_col_kind kind, enum rs_canon_src src, const char *text,
      const char *expected)
{
	check_n(kind, src, text, strlen(text), expected, strlen(expected));
}

/* The same value as each engine writes it gives EXPECTED. */
static void
same3(enum rs_col_kind kind, const char *pg, const char *mysql,
      const char *sqlite, const char *expected)
{
	check(kind, RS_SRC_PG, pg, expected);
	check(kind, RS_SRC_MYSQL, mysql, expected);
	check(kind, RS_SRC_SQLITE, sqlite, expected);
}

/* Fail unless TEXT (LEN bytes) is refused with RS_EVALUE, a message
 * naming the value (as SHOWN), the kind and the source, and the buffer
 * left as it was. */
static void
check_bad_n(enum rs_col_kind kind, enum rs_canon_src src, const char *text,
            size_t len, const char *shown)
{
	struct rs_canon_buf buf = RS_CANON_BUF_INIT;
	struct rs_err err = {0};
	char quoted[256];
	int rc;

	assert_int_equal(canonical_buf_append(&buf, "keep", 4, NULL), 0);
	rc = canonical_value(kind, src, text, len, &buf, &err);
	if (rc != RS_EVALUE) {
		print_error("%s \"%s\" from %s: expected RS_EVALUE, got %d "
		            "(\"%.*s\")\n",
		            canonical_kind_name(kind), shown,
		            canonical_src_name(src), rc, (int)buf.len,
		            buf.data);
		fail();
	}
	assert_int_equal(err.code, RS_EVALUE);
	snprintf(quoted, sizeof(quoted), "\"%s\"", shown);
	if (strstr(err.message, quoted) == NULL ||
	    strstr(err.message, canonical_kind_name(kind)) == NULL ||
	    strstr(err.message, canonical_src_name(src)) == NULL) {
		print_error("message \"%s\" does not name %s, %s and %s\n",
		            err.message, quoted, canonical_kind_name(kind),
		            canonical_src_name(src));
		fail();
	}
	assert_int_equal(buf.len, 4);
	assert_string_equal(buf.data, "keep");
	canonical_buf_free(&buf);
}

static void
check_bad(enum rs_col_kind kind, enum rs_canon_src src, const char *text)
{
	check_bad_n(kind, src, text, strlen(text), text);
}

/* One column of a test row: TEXT NULL is SQL NULL; LEN 0 means strlen. */
struct col {
	enum rs_col_kind kind;
	const char *text;
	size_t len;
};

static uint64_t
row_hash(enum rs_canon_src src, const struct col *cols, size_t n)
{
	struct rs_row_hasher hasher;
	struct rs_canon_buf scratch = RS_CANON_BUF_INIT;
	struct rs_err err = {0};

	canonical_row_init(&hasher);
	for (size_t i = 0; i < n; i++) {
		const char *text = cols[i].text;
		size_t len = cols[i].len != 0 || text == NULL ? cols[i].len
		                                              : strlen(text);
		int rc = canonical_row_value(&hasher, cols[i].kind, src, text,
		                             len, &scratch, &err);

		if (rc != 0) {
			print_error("column %zu from %s: %s\n", i,
			            canonical_src_name(src), err.message);
			fail();
		}
	}
	canonical_buf_free(&scratch);
	return canonical_row_finish(&hasher);
}

/* The hash of a row of canonical texts (NULL for SQL NULL). */
static uint64_t
raw_row_hash(const char *const *texts, size_t n)
{
	struct rs_row_hasher hasher;

	canonical_row_init(&hasher);
	for (size_t i = 0; i < n; i++)
		canonical_row_add(&hasher, texts[i],
		                  texts[i] != NULL ? strlen(texts[i]) : 0);
	return canonical_row_finish(&hasher);
}

/* ---- Kinds, one at a time --------------------------------------------- */

static void
test_integers(void **state)
{
	(void)state;
	same3(RS_COL_INTEGER, "42", "42", "42", "42");
	same3(RS_COL_INTEGER, "-17", "-17", "-17", "-17");
	same3(RS_COL_INTEGER, "0", "0", "0", "0");
	/* MariaDB ZEROFILL, a '+', "-0" */
	same3(RS_COL_INTEGER, "42", "00042", "+42", "42");
	check(RS_COL_INTEGER, RS_SRC_SQLITE, "-0", "0");
	check(RS_COL_INTEGER, RS_SRC_PG, "-000", "0");
	check(RS_COL_INTEGER, RS_SRC_PG, "-0012", "-12");
	/* bigint unsigned and int64 limits, beyond any double */
	same3(RS_COL_INTEGER, "18446744073709551615", "18446744073709551615",
	      "18446744073709551615", "18446744073709551615");
	same3(RS_COL_INTEGER, "-9223372036854775808", "-9223372036854775808",
	      "-9223372036854775808", "-9223372036854775808");
}

static void
test_decimals(void **state)
{
	(void)state;
	same3(RS_COL_DECIMAL, "1.500", "1.500", "1.5", "1.5");
	same3(RS_COL_DECIMAL, "2.000", "2.000", "2", "2");
	same3(RS_COL_DECIMAL, "-0.00", "-0.00", "0", "0");
	same3(RS_COL_DECIMAL, "0.10", "0.10", "0.1", "0.1");
	same3(RS_COL_DECIMAL, "-12.3400", "-12.3400", "-12.34", "-12.34");
	same3(RS_COL_DECIMAL, "0.000100", "0.000100", "0.0001", "0.0001");
	same3(RS_COL_DECIMAL, "1200", "1200.00", "1200", "1200");
	same3(RS_COL_DECIMAL, "7.50", "007.50", "+07.5", "7.5");
	check(RS_COL_DECIMAL, RS_SRC_SQLITE, "000", "0");
	/* 30 digits: exact, never through a double */
	same3(RS_COL_DECIMAL, "123456789012345678901234567890",
	      "123456789012345678901234567890",
	      "123456789012345678901234567890",
	      "123456789012345678901234567890");
	same3(RS_COL_DECIMAL, "-12345678901234567890.1234567890",
	      "-12345678901234567890.1234567890",
	      "-12345678901234567890.123456789",
	      "-12345678901234567890.123456789");
	/* SQLite keeps a DECIMAL as a REAL and writes exponents */
	check(RS_COL_DECIMAL, RS_SRC_SQLITE, "1.5e3", "1500");
	check(RS_COL_DECIMAL, RS_SRC_SQLITE, "1.0e+20",
	      "100000000000000000000");
	check(RS_COL_DECIMAL, RS_SRC_SQLITE, "2.5E-3", "0.0025");
	check(RS_COL_DECIMAL, RS_SRC_SQLITE, "-0.0e-7", "0");
	check(RS_COL_DECIMAL, RS_SRC_SQLITE, "12.5e1", "125");
	check(RS_COL_DECIMAL, RS_SRC_SQLITE, "0e999999999999999", "0");
	check(RS_COL_DECIMAL, RS_SRC_SQLITE, ".5", "0.5");
	check(RS_COL_DECIMAL, RS_SRC_SQLITE, "5.", "5");
	/* ...and so loses digits: SQLite's REAL text of the 30-digit value
	 * must not verify against the exact one */
	check(RS_COL_DECIMAL, RS_SRC_SQLITE, "1.23456789012346e+29",
	      "123456789012346000000000000000");
	/* PostgreSQL's special numerics; SQLite's infinity */
	check(RS_COL_DECIMAL, RS_SRC_PG, "NaN", "NaN");
	check(RS_COL_DECIMAL, RS_SRC_PG, "Infinity", "Infinity");
	check(RS_COL_DECIMAL, RS_SRC_SQLITE, "-Inf", "-Infinity");
	/* an integer and a numeric(p,0) holding it agree */
	check(RS_COL_INTEGER, RS_SRC_MYSQL, "000120", "120");
	check(RS_COL_DECIMAL, RS_SRC_PG, "120.000", "120");
}

static void
test_floats(void **state)
{
	/* DBL_MAX: 17 digits and 292 zeros; the smallest subnormal: 5 at
	 * the 324th place after the point */
	char huge[17 + 292 + 1], tiny[2 + 323 + 1 + 1];

	(void)state;
	memcpy(huge, "17976931348623157", 17);
	memset(huge + 17, '0', 292);
	huge[17 + 292] = '\0';
	memcpy(tiny, "0.", 2);
	memset(tiny + 2, '0', 323);
	memcpy(tiny + 2 + 323, "5", 2);
	same3(RS_COL_FLOAT, "0.1", "0.1", "0.1", "0.1");
	/* Single precision: PostgreSQL prints a real's shortest text,
	 * MariaDB's FLOAT is read as CAST(… AS DOUBLE), SQLite holds a
	 * double; all give the float's shortest text. */
	same3(RS_COL_FLOAT4, "3.1415927", "3.1415927410125732", "3.1415927",
	      "3.1415927");
	same3(RS_COL_FLOAT4, "0.1", "0.10000000149011612", "0.1", "0.1");
	same3(RS_COL_FLOAT4, "16777216", "16777216", "16777217", "16777216");
	same3(RS_COL_FLOAT4, "-1.5e-07", "-1.5000000170217602e-7", "-1.5e-7",
	      "-0.00000015");
	check(RS_COL_FLOAT4, RS_SRC_PG, "Infinity", "Infinity");
	check_bad_n(RS_COL_FLOAT4, RS_SRC_MYSQL, "1e39", 4, "1e39");
	same3(RS_COL_FLOAT, "0.30000000000000004", "0.30000000000000004",
	      "0.30000000000000004", "0.30000000000000004");
	/* digits beyond a double's: the same double, the same text */
	check(RS_COL_FLOAT, RS_SRC_SQLITE, "0.10000000000000001", "0.1");
	same3(RS_COL_FLOAT, "1e+20", "1e20", "1.0e+20",
	      "100000000000000000000");
	same3(RS_COL_FLOAT, "100", "100", "100.0", "100");
	same3(RS_COL_FLOAT, "-2.5e-05", "-2.5e-5", "-2.5e-05", "-0.000025");
	same3(RS_COL_FLOAT, "-0", "-0", "0.0", "0");
	same3(RS_COL_FLOAT, "1.7976931348623157e+308", "1.7976931348623157e308",
	      "1.7976931348623157e+308", huge);
	/* PostgreSQL spells infinities out, SQLite abbreviates */
	check(RS_COL_FLOAT, RS_SRC_PG, "Infinity", "Infinity");
	check(RS_COL_FLOAT, RS_SRC_SQLITE, "Inf", "Infinity");
	check(RS_COL_FLOAT, RS_SRC_PG, "-Infinity", "-Infinity");
	check(RS_COL_FLOAT, RS_SRC_SQLITE, "-Inf", "-Infinity");
	check(RS_COL_FLOAT, RS_SRC_PG, "NaN", "NaN");
	/* a PostgreSQL real's shortest text equals a double's */
	check(RS_COL_FLOAT, RS_SRC_PG, "3.4028235e+38",
	      "340282350000000000000000000000000000000");
	/* the underflow that strtod reports with ERANGE is still a value:
	 * SQLite's 15 digits of the smallest double read back as it */
	check(RS_COL_FLOAT, RS_SRC_SQLITE, "4.94065645841247e-324", tiny);
	check(RS_COL_FLOAT, RS_SRC_PG, "5e-324", tiny);
}

/* Random doubles: canonical_double reads back as the same double, and a
 * float column's "%.17g" text (what a SQLite backend would print) gives
 * the same canonical text, as does the canonical text itself. */
static void
test_floats_round_trip(void **state)
{
	uint64_t x = UINT64_C(0x9e3779b97f4a7c15);
	struct rs_canon_buf direct = RS_CANON_BUF_INIT;
	char printed[64];

	(void)state;
	for (int i = 0; i < 20000; i++) {
		double v;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(&v, &x, sizeof(v));
		if (v != v || v - v != 0)
			continue; /* NaN or infinite */
		if (i % 2 == 1)
			v = (double)(int64_t)(x >> 40) /
			    1000.0; /* short ones */
		canonical_buf_clear(&direct);
		assert_int_equal(canonical_double(v, &direct, NULL), 0);
		if (strtod(direct.data, NULL) != v) {
			print_error("%.17g became %s\n", v, direct.data);
			fail();
		}
		snprintf(printed, sizeof(printed), "%.17g", v);
		check(RS_COL_FLOAT, RS_SRC_SQLITE, printed, direct.data);
		check(RS_COL_FLOAT, RS_SRC_PG, direct.data, direct.data);
		check(RS_COL_DECIMAL, RS_SRC_PG, direct.data, direct.data);
	}
	canonical_buf_clear(&direct);
	assert_int_equal(canonical_double(0.1 + 0.2, &direct, NULL), 0);
	assert_string_equal(direct.data, "0.30000000000000004");
	canonical_buf_clear(&direct);
	assert_int_equal(canonical_double(-0.0, &direct, NULL), 0);
	assert_string_equal(direct.data, "0");
	canonical_buf_free(&direct);
}

static void
test_booleans(void **state)
{
	(void)state;
	same3(RS_COL_BOOL, "t", "1", "1", "t");
	same3(RS_COL_BOOL, "f", "0", "0", "f");
	check(RS_COL_BOOL, RS_SRC_SQLITE, "true", "t");
	check(RS_COL_BOOL, RS_SRC_SQLITE, "FALSE", "f");
	check(RS_COL_BOOL, RS_SRC_SQLITE, "True", "t");
	check(RS_COL_BOOL, RS_SRC_MYSQL, "00", "f");
	check(RS_COL_BOOL, RS_SRC_MYSQL, "-0", "f");
	check(RS_COL_BOOL, RS_SRC_MYSQL, "001", "t");
	check(RS_COL_BOOL, RS_SRC_MYSQL, "+1", "t");
	/* tinyint(1) holds any tinyint: taken as true, 2 would be written
	 * back as 1, so it is refused (the message says what to do) */
	check_bad(RS_COL_BOOL, RS_SRC_MYSQL, "2");
	check_bad(RS_COL_BOOL, RS_SRC_MYSQL, "-1");
	check_bad(RS_COL_BOOL, RS_SRC_MYSQL, "10");
	check_bad(RS_COL_BOOL, RS_SRC_MYSQL, "127");
	check_bad(RS_COL_BOOL, RS_SRC_SQLITE, "11");
}

static void
test_text_and_char(void **state)
{
	static const char unicode[] = "h\xc3\xa9llo \xf0\x9f\x8e\x89 "
				      "\xe4\xb8\x96\xe7\x95\x8c";

	(void)state;
	same3(RS_COL_TEXT, unicode, unicode, unicode, unicode);
	same3(RS_COL_TEXT, "", "", "", "");
	/* text keeps every byte, trailing blanks and NULs included */
	check(RS_COL_TEXT, RS_SRC_PG, "ab ", "ab ");
	check(RS_COL_OTHER, RS_SRC_PG, " x ", " x ");
	check_n(RS_COL_TEXT, RS_SRC_SQLITE, "a\0b", 3, "a\0b", 3);
	/* char(n): PostgreSQL pads, MariaDB strips, SQLite keeps */
	same3(RS_COL_CHAR, "ab  ", "ab", "ab ", "ab");
	same3(RS_COL_CHAR, "  ab  ", "  ab", "  ab", "  ab");
	same3(RS_COL_CHAR, "    ", "", "", "");
}

static void
test_bytes(void **state)
{
	(void)state;
	check(RS_COL_BYTES, RS_SRC_PG, "\\x00ff0a", "00ff0a");
	check(RS_COL_BYTES, RS_SRC_PG, "\\x00FF0A", "00ff0a");
	check_n(RS_COL_BYTES, RS_SRC_MYSQL, "\x00\xff\x0a", 3, "00ff0a", 6);
	check_n(RS_COL_BYTES, RS_SRC_SQLITE, "\x00\xff\x0a", 3, "00ff0a", 6);
	/* PostgreSQL's escape format (bytea_output = escape) */
	check(RS_COL_BYTES, RS_SRC_PG, "\\000\\377\\012ab\\\\", "00ff0a61625c");
	/* empty, which is not NULL */
	same3(RS_COL_BYTES, "\\x", "", "", "");
	check(RS_COL_BYTES, RS_SRC_PG, "", "");
	/* text in a bytes column is hex of its bytes */
	check(RS_COL_BYTES, RS_SRC_SQLITE, "\\x00", "5c783030");
}

static void
test_timestamps(void **state)
{
	(void)state;
	same3(RS_COL_TIMESTAMP, "2024-01-02 03:04:05", "2024-01-02 03:04:05",
	      "2024-01-02T03:04:05", "2024-01-02T03:04:05.000000");
	same3(RS_COL_TIMESTAMP, "2024-01-02 03:04:05.5",
	      "2024-01-02 03:04:05.500000", "2024-01-02 03:04:05.500",
	      "2024-01-02T03:04:05.500000");
	same3(RS_COL_TIMESTAMP, "2024-01-02 03:04:05.123456",
	      "2024-01-02 03:04:05.123456", "2024-01-02T03:04:05.123456",
	      "2024-01-02T03:04:05.123456");
	same3(RS_COL_TIMESTAMP, "2024-02-29 23:59:59.999999",
	      "2024-02-29 23:59:59.999999", "2024-02-29 23:59:59.9999990",
	      "2024-02-29T23:59:59.999999");
	/* SQLite: a date alone, minutes without seconds, an offset */
	check(RS_COL_TIMESTAMP, RS_SRC_SQLITE, "2024-01-02",
	      "2024-01-02T00:00:00.000000");
	check(RS_COL_TIMESTAMP, RS_SRC_SQLITE, "2024-01-02 03:04",
	      "2024-01-02T03:04:00.000000");
	check(RS_COL_TIMESTAMP, RS_SRC_SQLITE, "2024-01-02T00:30:00+01:00",
	      "2024-01-01T23:30:00.000000");
	check(RS_COL_TIMESTAMP, RS_SRC_SQLITE, "2024-01-02T03:04:05Z",
	      "2024-01-02T03:04:05.000000");
	/* PostgreSQL's far years, BC and infinities */
	check(RS_COL_TIMESTAMP, RS_SRC_PG, "0044-03-15 12:00:00 BC",
	      "-0043-03-15T12:00:00.000000");
	check(RS_COL_TIMESTAMP, RS_SRC_PG, "0001-01-01 00:00:00 BC",
	      "0000-01-01T00:00:00.000000");
	check(RS_COL_TIMESTAMP, RS_SRC_PG, "10000-01-01 00:00:00",
	      "10000-01-01T00:00:00.000000");
	check(RS_COL_TIMESTAMP, RS_SRC_PG, "infinity", "infinity");
	check(RS_COL_TIMESTAMP, RS_SRC_PG, "-infinity", "-infinity");
	/* MariaDB's zero date */
	check(RS_COL_TIMESTAMP, RS_SRC_MYSQL, "0000-00-00 00:00:00",
	      "0000-00-00T00:00:00.000000");
}

static void
test_timestamptz(void **state)
{
	(void)state;
	/* PostgreSQL in a +02 session, MariaDB and SQLite in UTC */
	same3(RS_COL_TIMESTAMPTZ, "2024-01-02 03:04:05.123+02",
	      "2024-01-02 01:04:05.123000", "2024-01-02T01:04:05.123Z",
	      "2024-01-02T01:04:05.123000Z");
	/* +05:30 crossing midnight and the year backwards */
	same3(RS_COL_TIMESTAMPTZ, "2024-01-01 01:30:00+05:30",
	      "2023-12-31 20:00:00", "2024-01-01 01:30:00+05:30",
	      "2023-12-31T20:00:00.000000Z");
	/* -08 crossing midnight forwards into a leap day, and not */
	same3(RS_COL_TIMESTAMPTZ, "2024-02-28 20:00:00-08",
	      "2024-02-29 04:00:00", "2024-02-28T20:00:00-0800",
	      "2024-02-29T04:00:00.000000Z");
	check(RS_COL_TIMESTAMPTZ, RS_SRC_PG, "2023-02-28 20:00:00-08",
	      "2023-03-01T04:00:00.000000Z");
	/* the same instant from sessions in three time zones */
	check(RS_COL_TIMESTAMPTZ, RS_SRC_PG, "2024-06-30 23:59:59.999999-07",
	      "2024-07-01T06:59:59.999999Z");
	check(RS_COL_TIMESTAMPTZ, RS_SRC_PG, "2024-07-01 06:59:59.999999+00",
	      "2024-07-01T06:59:59.999999Z");
	check(RS_COL_TIMESTAMPTZ, RS_SRC_PG, "2024-07-01 08:59:59.999999+02",
	      "2024-07-01T06:59:59.999999Z");
	/* +14 (Kiribati), historic offsets with seconds, BC */
	check(RS_COL_TIMESTAMPTZ, RS_SRC_PG, "2024-01-01 00:00:00+14",
	      "2023-12-31T10:00:00.000000Z");
	check(RS_COL_TIMESTAMPTZ, RS_SRC_PG, "1900-01-01 00:00:00+00:19:32",
	      "1899-12-31T23:40:28.000000Z");
	check(RS_COL_TIMESTAMPTZ, RS_SRC_PG, "0001-01-01 00:30:00+01 BC",
	      "-0001-12-31T23:30:00.000000Z");
	check(RS_COL_TIMESTAMPTZ, RS_SRC_PG, "1970-01-01 00:00:00-00:00:01",
	      "1970-01-01T00:00:01.000000Z");
	/* a timestamptz never equals a timestamp with the same digits */
	check(RS_COL_TIMESTAMP, RS_SRC_MYSQL, "2023-12-31 20:00:00",
	      "2023-12-31T20:00:00.000000");
}

static void
test_dates_and_times(void **state)
{
	(void)state;
	same3(RS_COL_DATE, "2024-01-02", "2024-01-02", "2024-01-02",
	      "2024-01-02");
	same3(RS_COL_DATE, "2000-02-29", "2000-02-29", "2000-02-29",
	      "2000-02-29");
	check(RS_COL_DATE, RS_SRC_PG, "0044-03-15 BC", "-0043-03-15");
	check(RS_COL_DATE, RS_SRC_PG, "infinity", "infinity");
	check(RS_COL_DATE, RS_SRC_MYSQL, "0000-00-00", "0000-00-00");

	same3(RS_COL_TIME, "03:04:05.5", "03:04:05.500000", "03:04:05.5",
	      "03:04:05.500000");
	same3(RS_COL_TIME, "00:00:00", "00:00:00", "00:00:00",
	      "00:00:00.000000");
	check(RS_COL_TIME, RS_SRC_PG, "24:00:00", "24:00:00.000000");
	check(RS_COL_TIME, RS_SRC_SQLITE, "03:04", "03:04:00.000000");
	/* MariaDB's TIME is a signed duration */
	check(RS_COL_TIME, RS_SRC_MYSQL, "-838:59:59", "-838:59:59.000000");
	check(RS_COL_TIME, RS_SRC_MYSQL, "100:00:00.000001",
	      "100:00:00.000001");
	check(RS_COL_TIME, RS_SRC_MYSQL, "-00:00:00", "00:00:00.000000");
	check(RS_COL_TIME, RS_SRC_MYSQL, "-00:00:00.5", "-00:00:00.500000");
}

static void
test_json(void **state)
{
	(void)state;
	/* jsonb's text, MariaDB's as written, SQLite's as written */
	same3(RS_COL_JSON,
	      "{\"a\": 1, \"b\": [1, 2.50, \"x\"], \"c\": {\"y\": false, "
	      "\"z\": null}}",
	      "{\"c\":{\"z\":null,\"y\":false},\"b\":[1,2.5,\"x\"],\"a\":1}",
	      " { \"b\" : [ 1 , 25e-1 , \"\\u0078\" ] ,\n\t\"a\" : 1.0, "
	      "\"c\": {\"y\": false, \"z\": null} } ",
	      "{\"a\":1,\"b\":[1,2.5,\"x\"],\"c\":{\"y\":false,\"z\":null}}");
	/* escapes decoded, including a surrogate pair */
	same3(RS_COL_JSON, "\"\xc3\xa9\xf0\x9f\x8e\x89\"",
	      "\"\\u00e9\\ud83c\\udf89\"", "\"\\u00E9\\uD83C\\uDF89\"",
	      "\"\xc3\xa9\xf0\x9f\x8e\x89\"");
	/* only '"', '\' and control characters are escaped */
	check(RS_COL_JSON, RS_SRC_MYSQL,
	      "\"a\\\"b\\\\c\\/d\\n\\u0001\\u007f\\t\"",
	      "\"a\\\"b\\\\c/d\\n\\u0001\x7f\\t\"");
	/* keys sorted by bytes; the last duplicate wins */
	check(RS_COL_JSON, RS_SRC_SQLITE,
	      "{\"b\":1,\"a\":2,\"aa\":3,\"\xc3\xa9\":4,\"Z\":5,\"\":6}",
	      "{\"\":6,\"Z\":5,\"a\":2,\"aa\":3,\"b\":1,\"\xc3\xa9\":4}");
	check(RS_COL_JSON, RS_SRC_MYSQL, "{\"a\":1,\"b\":0,\"a\":2}",
	      "{\"a\":2,\"b\":0}");
	/* numbers as decimals */
	check(RS_COL_JSON, RS_SRC_MYSQL,
	      "[-0, 1E+2, 0.0, -1.50, 123456789012345678901234567890, 1e-3]",
	      "[0,100,0,-1.5,123456789012345678901234567890,0.001]");
	check(RS_COL_JSON, RS_SRC_PG, "{}", "{}");
	check(RS_COL_JSON, RS_SRC_PG, "[ ]", "[]");
	check(RS_COL_JSON, RS_SRC_PG, "\"\"", "\"\"");
	check(RS_COL_JSON, RS_SRC_PG, "[{}, [[]], {\"a\": {}}]",
	      "[{},[[]],{\"a\":{}}]");
}

/* At most 1000 arrays and objects nested in one another. */
static void
test_json_depth(void **state)
{
	char deep[2 * 1001 + 1], shown[64 + 3 + 1];

	(void)state;
	memset(deep, '[', 1001);
	memset(deep + 1001, ']', 1001);
	deep[2002] = '\0';
	memset(shown, '[', 64);
	memcpy(shown + 64, "...", 4);
	check_bad_n(RS_COL_JSON, RS_SRC_MYSQL, deep, 2002, shown);
	deep[1000] = '{'; /* objects count too */
	deep[1001] = '}';
	check_bad_n(RS_COL_JSON, RS_SRC_MYSQL, deep, 2002, shown);
	deep[1000] = '[';
	deep[1001] = ']';
	check_n(RS_COL_JSON, RS_SRC_MYSQL, deep + 1, 2000, deep + 1, 2000);
}

static void
test_uuids(void **state)
{
	static const char canonical[] = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11";

	(void)state;
	same3(RS_COL_UUID, canonical, canonical,
	      "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11", canonical);
	check(RS_COL_UUID, RS_SRC_SQLITE, "{a0eebc999c0b4ef8bb6d6bb9bd380a11}",
	      canonical);
	check(RS_COL_UUID, RS_SRC_SQLITE,
	      "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11", canonical);
	check_n(RS_COL_UUID, RS_SRC_SQLITE,
	        "\xa0\xee\xbc\x99\x9c\x0b\x4e\xf8\xbb\x6d\x6b\xb9\xbd\x38\x0a"
	        "\x11",
	        16, canonical, strlen(canonical));
}

/* ---- Malformed values ------------------------------------------------- */

static void
test_malformed(void **state)
{
	(void)state;
	check_bad(RS_COL_INTEGER, RS_SRC_MYSQL, "12x");
	check_bad(RS_COL_INTEGER, RS_SRC_PG, "");
	check_bad(RS_COL_INTEGER, RS_SRC_PG, "-");
	check_bad(RS_COL_INTEGER, RS_SRC_SQLITE, "1.5");
	check_bad(RS_COL_INTEGER, RS_SRC_SQLITE, " 1");
	check_bad(RS_COL_DECIMAL, RS_SRC_PG, "1.2.3");
	check_bad(RS_COL_DECIMAL, RS_SRC_SQLITE, "1e");
	check_bad(RS_COL_DECIMAL, RS_SRC_SQLITE, ".");
	check_bad(RS_COL_DECIMAL, RS_SRC_SQLITE, "1e999999");
	check_bad(RS_COL_DECIMAL, RS_SRC_SQLITE, "1e-999999");
	check_bad(RS_COL_FLOAT, RS_SRC_SQLITE, "0x1p3");
	check_bad(RS_COL_FLOAT, RS_SRC_PG, "1e400");
	check_bad(RS_COL_FLOAT, RS_SRC_PG, "nan(1)");
	check_bad(RS_COL_FLOAT, RS_SRC_MYSQL, "1.5 ");
	check_bad(RS_COL_BOOL, RS_SRC_SQLITE, "maybe");
	check_bad(RS_COL_BOOL, RS_SRC_SQLITE, "");
	check_bad(RS_COL_BOOL, RS_SRC_MYSQL, "1x");
	check_bad_n(RS_COL_BYTES, RS_SRC_PG, "\\x0g", 4, "\\\\x0g");
	check_bad_n(RS_COL_BYTES, RS_SRC_PG, "\\x123", 5, "\\\\x123");
	check_bad_n(RS_COL_BYTES, RS_SRC_PG, "\\9", 2, "\\\\9");
	check_bad(RS_COL_TIMESTAMP, RS_SRC_PG, "2024-13-01 00:00:00");
	check_bad(RS_COL_TIMESTAMP, RS_SRC_MYSQL, "2024-02-30 00:00:00");
	check_bad(RS_COL_TIMESTAMP, RS_SRC_SQLITE, "2023-02-29 12:00:00");
	check_bad(RS_COL_TIMESTAMP, RS_SRC_PG, "2024-01-02 24:00:00");
	check_bad(RS_COL_TIMESTAMP, RS_SRC_PG, "2024-01-02 03:60:00");
	check_bad(RS_COL_TIMESTAMP, RS_SRC_PG, "2024-01-02 03:04:05.1234567");
	check_bad(RS_COL_TIMESTAMP, RS_SRC_PG, "2024-01-02 03:04:05+02");
	check_bad(RS_COL_TIMESTAMP, RS_SRC_PG, "2024-01-02");
	check_bad(RS_COL_TIMESTAMP, RS_SRC_PG, "2024-1-02 03:04:05");
	check_bad(RS_COL_TIMESTAMP, RS_SRC_PG, "0000-00-00 00:00:00");
	check_bad(RS_COL_TIMESTAMP, RS_SRC_MYSQL, "2024-00-10 00:00:00");
	check_bad(RS_COL_TIMESTAMPTZ, RS_SRC_PG, "2024-01-02 03:04:05");
	check_bad(RS_COL_TIMESTAMPTZ, RS_SRC_PG, "2024-01-02 03:04:05+24");
	check_bad(RS_COL_TIMESTAMPTZ, RS_SRC_PG, "2024-01-02 03:04:05+02:60");
	check_bad(RS_COL_TIMESTAMPTZ, RS_SRC_SQLITE, "2024-01-02 03:04:05+053");
	check_bad(RS_COL_TIMESTAMPTZ, RS_SRC_SQLITE, "1704164645");
	check_bad(RS_COL_DATE, RS_SRC_PG, "2024-02-30");
	check_bad(RS_COL_DATE, RS_SRC_SQLITE, "2024-01-02 00:00:00");
	check_bad(RS_COL_DATE, RS_SRC_PG, "0000-00-00");
	check_bad(RS_COL_TIME, RS_SRC_PG, "25:00:00");
	check_bad(RS_COL_TIME, RS_SRC_PG, "24:00:01");
	check_bad(RS_COL_TIME, RS_SRC_PG, "24:00:00.5");
	check_bad(RS_COL_TIME, RS_SRC_PG, "3:04:05");
	check_bad(RS_COL_TIME, RS_SRC_PG, "03:04");
	check_bad(RS_COL_TIME, RS_SRC_PG, "-01:00:00");
	check_bad(RS_COL_TIME, RS_SRC_MYSQL, "839:00:00");
	check_bad_n(RS_COL_JSON, RS_SRC_MYSQL, "{\"a\":}", 6, "{\\\"a\\\":}");
	check_bad(RS_COL_JSON, RS_SRC_MYSQL, "");
	check_bad(RS_COL_JSON, RS_SRC_MYSQL, "[1,2");
	check_bad(RS_COL_JSON, RS_SRC_MYSQL, "[1,]");
	check_bad(RS_COL_JSON, RS_SRC_MYSQL, "01");
	check_bad(RS_COL_JSON, RS_SRC_MYSQL, "1.");
	check_bad(RS_COL_JSON, RS_SRC_MYSQL, "{a:1}");
	check_bad(RS_COL_JSON, RS_SRC_MYSQL, "nul");
	check_bad_n(RS_COL_JSON, RS_SRC_MYSQL, "{\"a\":1} x", 9,
	            "{\\\"a\\\":1} x");
	check_bad_n(RS_COL_JSON, RS_SRC_MYSQL, "\"\\ud83c\"", 8,
	            "\\\"\\\\ud83c\\\"");
	check_bad_n(RS_COL_JSON, RS_SRC_MYSQL, "\"\\udc00\"", 8,
	            "\\\"\\\\udc00\\\"");
	check_bad_n(RS_COL_JSON, RS_SRC_MYSQL, "\"a\nb\"", 5,
	            "\\\"a\\x0ab\\\"");
	check_bad(RS_COL_UUID, RS_SRC_PG,
	          "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1");
	check_bad(RS_COL_UUID, RS_SRC_PG,
	          "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a111");
	check_bad(RS_COL_UUID, RS_SRC_PG,
	          "a0eebc99--9c0b-4ef8-bb6d-6bb9bd380a1");
	check_bad(RS_COL_UUID, RS_SRC_PG,
	          "-a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
	check_bad(RS_COL_UUID, RS_SRC_PG,
	          "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11-");
	check_bad(RS_COL_UUID, RS_SRC_MYSQL, "0123456789abcdef");
}

/* A message quotes at most 64 bytes, escaping what is not printable. */
static void
test_error_message(void **state)
{
	struct rs_canon_buf buf = RS_CANON_BUF_INIT;
	struct rs_err err = {0};
	char value[200];

	(void)state;
	memset(value, '7', sizeof(value));
	value[150] = 'x';
	assert_int_equal(canonical_value(RS_COL_INTEGER, RS_SRC_PG, value,
	                                 sizeof(value), &buf, &err),
	                 RS_EVALUE);
	assert_non_null(strstr(err.message, "7777777777..."));
	assert_null(strstr(err.message, "x"));
	assert_true(strlen(err.message) < 200);
	assert_int_equal(buf.len, 0);

	assert_int_equal(canonical_value(RS_COL_DATE, RS_SRC_MYSQL,
	                                 "2024\x01-01", 8, &buf, &err),
	                 RS_EVALUE);
	assert_string_equal(err.message,
	                    "invalid date value \"2024\\x01-01\" from MariaDB: "
	                    "not a date of the form YYYY-MM-DD");
	/* no error record: still refused */
	assert_int_equal(
		canonical_value(RS_COL_INTEGER, RS_SRC_PG, "x", 1, &buf, NULL),
		RS_EVALUE);
	canonical_buf_free(&buf);
}

/* ---- Canonical texts read back as themselves -------------------------- */

static void
test_idempotent(void **state)
{
	static const struct {
		enum rs_col_kind kind;
		const char *text;
	} values[] = {
		{RS_COL_INTEGER, "-42"},
		{RS_COL_DECIMAL, "-0.0025"},
		{RS_COL_FLOAT, "100000000000000000000"},
		{RS_COL_BOOL, "t"},
		{RS_COL_CHAR, "  ab"},
		{RS_COL_DATE, "2024-02-29"},
		{RS_COL_TIME, "03:04:05.500000"},
		{RS_COL_TIMESTAMP, "2024-01-02T03:04:05.500000"},
		{RS_COL_TIMESTAMPTZ, "2023-12-31T20:00:00.000000Z"},
		{RS_COL_JSON, "{\"a\":[1,\"\\u0001\"],\"b\":null}"},
		{RS_COL_UUID, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(values); i++) {
		check(values[i].kind, RS_SRC_SQLITE, values[i].text,
		      values[i].text);
		check(values[i].kind, RS_SRC_MYSQL, values[i].text,
		      values[i].text);
	}
}

/* ---- Rows ------------------------------------------------------------- */

/* A row of every kind, written as each engine writes it. */
static void
test_row_across_engines(void **state)
{
	struct col pg[] = {
		{RS_COL_INTEGER, "42", 0},
		{RS_COL_DECIMAL, "123456789012345678901234567890.500", 0},
		{RS_COL_FLOAT, "0.30000000000000004", 0},
		{RS_COL_BOOL, "t", 0},
		{RS_COL_TEXT, "h\xc3\xa9llo \xf0\x9f\x8e\x89", 0},
		{RS_COL_TEXT, "", 0},
		{RS_COL_TEXT, NULL, 0},
		{RS_COL_CHAR, "ab  ", 0},
		{RS_COL_BYTES, "\\x00ff0a", 0},
		{RS_COL_TIMESTAMP, "2024-01-02 03:04:05.5", 0},
		{RS_COL_TIMESTAMPTZ, "2024-01-01 01:30:00+05:30", 0},
		{RS_COL_DATE, "2024-02-29", 0},
		{RS_COL_TIME, "03:04:05.5", 0},
		{RS_COL_JSON, "{\"a\": 1, \"b\": [true, null, \"x\"]}", 0},
		{RS_COL_UUID, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", 0},
	};
	struct col mysql[] = {
		{RS_COL_INTEGER, "0042", 0},
		{RS_COL_DECIMAL, "123456789012345678901234567890.500", 0},
		{RS_COL_FLOAT, "0.30000000000000004", 0},
		{RS_COL_BOOL, "1", 0},
		{RS_COL_TEXT, "h\xc3\xa9llo \xf0\x9f\x8e\x89", 0},
		{RS_COL_TEXT, "", 0},
		{RS_COL_TEXT, NULL, 0},
		{RS_COL_CHAR, "ab", 0},
		{RS_COL_BYTES, "\x00\xff\x0a", 3},
		{RS_COL_TIMESTAMP, "2024-01-02 03:04:05.500000", 0},
		{RS_COL_TIMESTAMPTZ, "2023-12-31 20:00:00.000000", 0},
		{RS_COL_DATE, "2024-02-29", 0},
		{RS_COL_TIME, "03:04:05.500000", 0},
		{RS_COL_JSON, "{\"b\":[true,null,\"x\"],\"a\":1}", 0},
		{RS_COL_UUID, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", 0},
	};
	struct col sqlite[] = {
		{RS_COL_INTEGER, "42", 0},
		{RS_COL_DECIMAL, "123456789012345678901234567890.5", 0},
		{RS_COL_FLOAT, "0.30000000000000004", 0},
		{RS_COL_BOOL, "1", 0},
		{RS_COL_TEXT, "h\xc3\xa9llo \xf0\x9f\x8e\x89", 0},
		{RS_COL_TEXT, "", 0},
		{RS_COL_TEXT, NULL, 0},
		{RS_COL_CHAR, "ab", 0},
		{RS_COL_BYTES, "\x00\xff\x0a", 3},
		{RS_COL_TIMESTAMP, "2024-01-02T03:04:05.500", 0},
		{RS_COL_TIMESTAMPTZ, "2023-12-31T20:00:00Z", 0},
		{RS_COL_DATE, "2024-02-29", 0},
		{RS_COL_TIME, "03:04:05.5", 0},
		{RS_COL_JSON, "{\"b\": [true, null, \"\\u0078\"], \"a\": 1.0}",
	         0},
		{RS_COL_UUID, "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11", 0},
	};
	uint64_t h_pg, h_mysql, h_sqlite;

	(void)state;
	h_pg = row_hash(RS_SRC_PG, pg, ARRAY_LEN(pg));
	h_mysql = row_hash(RS_SRC_MYSQL, mysql, ARRAY_LEN(mysql));
	h_sqlite = row_hash(RS_SRC_SQLITE, sqlite, ARRAY_LEN(sqlite));
	assert_int_equal(h_pg, h_mysql);
	assert_int_equal(h_pg, h_sqlite);

	/* one microsecond, one byte, one NULL make another row */
	mysql[9].text = "2024-01-02 03:04:05.500001";
	assert_int_not_equal(row_hash(RS_SRC_MYSQL, mysql, ARRAY_LEN(mysql)),
	                     h_pg);
	mysql[9].text = "2024-01-02 03:04:05.500000";
	assert_int_equal(row_hash(RS_SRC_MYSQL, mysql, ARRAY_LEN(mysql)), h_pg);
	sqlite[8].text = "\x00\xff\x0b";
	assert_int_not_equal(row_hash(RS_SRC_SQLITE, sqlite, ARRAY_LEN(sqlite)),
	                     h_pg);
	pg[5].text = NULL; /* the empty string becomes NULL */
	assert_int_not_equal(row_hash(RS_SRC_PG, pg, ARRAY_LEN(pg)), h_pg);
}

static void
test_row_null_empty_order(void **state)
{
	const char *null_row[] = {NULL};
	const char *empty_row[] = {""};
	const char *null_empty[] = {NULL, ""};
	const char *empty_null[] = {"", NULL};
	const char *ab_c[] = {"ab", "c"};
	const char *a_bc[] = {"a", "bc"};
	const char *abc[] = {"abc"};
	const char *one_x[] = {"1", "x"};
	const char *x_one[] = {"x", "1"};
	const char *null_text[] = {"N"};
	struct rs_canon_buf buf = RS_CANON_BUF_INIT;

	(void)state;
	/* NULL has no canonical text; "" has an empty one */
	assert_int_equal(
		canonical_value(RS_COL_TEXT, RS_SRC_PG, NULL, 0, &buf, NULL),
		0);
	assert_null(buf.data);
	assert_int_equal(
		canonical_value(RS_COL_TEXT, RS_SRC_PG, "", 0, &buf, NULL), 0);
	assert_non_null(buf.data);
	assert_int_equal(buf.len, 0);
	canonical_buf_free(&buf);

	assert_int_not_equal(raw_row_hash(null_row, 1),
	                     raw_row_hash(empty_row, 1));
	assert_int_not_equal(raw_row_hash(null_row, 1),
	                     raw_row_hash(null_text, 1));
	assert_int_not_equal(raw_row_hash(null_empty, 2),
	                     raw_row_hash(empty_null, 2));
	assert_int_not_equal(raw_row_hash(null_row, 1), raw_row_hash(NULL, 0));
	assert_int_not_equal(raw_row_hash(ab_c, 2), raw_row_hash(a_bc, 2));
	assert_int_not_equal(raw_row_hash(ab_c, 2), raw_row_hash(abc, 1));
	assert_int_not_equal(raw_row_hash(one_x, 2), raw_row_hash(x_one, 2));
	assert_int_equal(raw_row_hash(one_x, 2), raw_row_hash(one_x, 2));
}

/* The encoding is a contract between versions: pinned by vectors from
 * Python: sha256(b'N' + b'V' + (2).to_bytes(8,'big') + b'ab' + ...),
 * the long rows with values of b'a' * 250 and so on. */
static void
test_row_hash_vectors(void **state)
{
	const char *row[] = {NULL, "ab", ""};
	struct col mixed[] = {
		{RS_COL_INTEGER, "+042", 0},
		{RS_COL_TEXT, "h\xc3\xa9llo \xf0\x9f\x8e\x89", 0},
		{RS_COL_TEXT, NULL, 0},
		{RS_COL_TIMESTAMPTZ, "2024-01-02 03:04:05.123+02", 0},
	};

	(void)state;
	assert_int_equal(raw_row_hash(row, 3), UINT64_C(0x1b5d4202db8e94d6));
	assert_int_equal(raw_row_hash(NULL, 0), UINT64_C(0xe3b0c44298fc1c14));
	assert_int_equal(row_hash(RS_SRC_PG, mixed, ARRAY_LEN(mixed)),
	                 UINT64_C(0xf97424764ef1f11e));

	/* Rows longer than the hasher gathers at once (256 bytes): one
	 * that fills it to one byte short, one with a value longer than it
	 * (588 bytes of encoding). */
	char a250[251], b10[11], c300[301], x246[247];
	const char *edge[] = {x246, "y"};
	const char *long_row[] = {a250, b10, NULL, c300};

	memset(a250, 'a', 250);
	a250[250] = '\0';
	memset(b10, 'b', 10);
	b10[10] = '\0';
	memset(c300, 'c', 300);
	c300[300] = '\0';
	memset(x246, 'x', 246);
	x246[246] = '\0';
	assert_int_equal(raw_row_hash(edge, 2), UINT64_C(0x56677c7fbf13a8b6));
	assert_int_equal(raw_row_hash(long_row, 4),
	                 UINT64_C(0xbe0d7748133e7add));
}

static void
test_row_value_error(void **state)
{
	struct col bad[] = {
		{RS_COL_INTEGER, "1", 0},
		{RS_COL_TIMESTAMP, "2024-13-01 00:00:00", 0},
	};
	struct rs_row_hasher hasher;
	struct rs_canon_buf scratch = RS_CANON_BUF_INIT;
	struct rs_err err = {0};

	(void)state;
	canonical_row_init(&hasher);
	assert_int_equal(canonical_row_value(&hasher, bad[0].kind, RS_SRC_PG,
	                                     "1", 1, &scratch, &err),
	                 0);
	assert_int_equal(canonical_row_value(&hasher, bad[1].kind, RS_SRC_PG,
	                                     bad[1].text, strlen(bad[1].text),
	                                     &scratch, &err),
	                 RS_EVALUE);
	assert_non_null(strstr(err.message, "2024-13-01 00:00:00"));
	assert_non_null(strstr(err.message, "month"));
	(void)canonical_row_finish(&hasher);
	canonical_buf_free(&scratch);
}

/* ---- Chunks and buffers ----------------------------------------------- */

static void
test_chunk_sum(void **state)
{
	struct rs_chunk_sum a = {0, 0}, b = {0, 0}, c = {0, 0}, part = {0, 0};
	uint64_t h[] = {UINT64_MAX, 2, UINT64_C(0x8000000000000000)};

	(void)state;
	canonical_chunk_add(&a, h[0]);
	canonical_chunk_add(&a, h[1]);
	assert_int_equal(a.rows, 2);
	assert_int_equal(a.sum, 1); /* mod 2^64 */
	canonical_chunk_add(&a, h[2]);
	/* the order rows come in does not matter */
	canonical_chunk_add(&b, h[2]);
	canonical_chunk_add(&b, h[0]);
	canonical_chunk_add(&b, h[1]);
	assert_true(canonical_chunk_equal(&a, &b));
	/* sub-chunks add up */
	canonical_chunk_add(&c, h[0]);
	canonical_chunk_add(&part, h[1]);
	canonical_chunk_add(&part, h[2]);
	canonical_chunk_merge(&c, &part);
	assert_true(canonical_chunk_equal(&a, &c));
	/* a missing row, a changed row, an extra zero-hash row */
	canonical_chunk_add(&b, 0);
	assert_false(canonical_chunk_equal(&a, &b));
	assert_int_equal(b.sum, a.sum);
	c.sum++;
	assert_false(canonical_chunk_equal(&a, &c));
}

static void
test_buffer(void **state)
{
	struct rs_canon_buf buf;
	size_t cap;

	(void)state;
	canonical_buf_init(&buf);
	assert_null(buf.data);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(
			canonical_buf_append(&buf, "0123456789", 10, NULL), 0);
	assert_int_equal(buf.len, 10000);
	assert_int_equal(buf.data[10000], '\0');
	assert_memory_equal(buf.data + 9990, "0123456789", 10);
	cap = buf.cap;
	/* values append */
	assert_int_equal(
		canonical_value(RS_COL_BOOL, RS_SRC_PG, "t", 1, &buf, NULL), 0);
	assert_int_equal(buf.len, 10001);
	assert_int_equal(buf.data[10000], 't');
	canonical_buf_clear(&buf);
	assert_int_equal(buf.len, 0);
	assert_string_equal(buf.data, "");
	assert_int_equal(buf.cap, cap);
	canonical_buf_free(&buf);
	assert_null(buf.data);
	assert_int_equal(buf.cap, 0);
	canonical_buf_free(&buf); /* twice is harmless */
}

/* An append too large to make room for fails with RS_ENOMEM and leaves
 * the buffer as it was and usable: unlike a strbuf's, its failure is not
 * sticky. */
static void
test_buffer_too_large(void **state)
{
	struct rs_canon_buf buf = RS_CANON_BUF_INIT;
	struct rs_err err = {0};
	char *data;

	(void)state;
	assert_int_equal(canonical_buf_append(&buf, "abc", 3, NULL), 0);
	data = buf.data;
	assert_int_equal(canonical_buf_append(&buf, "x", SIZE_MAX, &err),
	                 RS_ENOMEM);
	assert_string_equal(err.message, "a canonical value is too long");
	memset(&err, 0, sizeof(err));
	assert_int_equal(canonical_buf_append(&buf, "x", SIZE_MAX / 2, &err),
	                 RS_ENOMEM);
	assert_non_null(strstr(err.message, "out of memory for a canonical"));
	assert_ptr_equal(buf.data, data);
	assert_int_equal(buf.len, 3);
	assert_string_equal(buf.data, "abc");
	assert_int_equal(canonical_buf_append(&buf, "def", 3, NULL), 0);
	assert_string_equal(buf.data, "abcdef");
	canonical_buf_free(&buf);
}

/* ---- Type names ------------------------------------------------------- */

struct kind_case {
	const char *name;
	enum rs_col_kind kind;
};

static void
check_kinds(enum rs_col_kind (*map)(const char *), const char *engine,
            const struct kind_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		enum rs_col_kind got = map(cases[i].name);

		if (got != cases[i].kind) {
			print_error("%s type \"%s\": %s, expected %s\n", engine,
			            cases[i].name, canonical_kind_name(got),
			            canonical_kind_name(cases[i].kind));
			fail();
		}
	}
}

static void
test_kind_pg(void **state)
{
	static const struct kind_case cases[] = {
		{"smallint", RS_COL_INTEGER},
		{"integer", RS_COL_INTEGER},
		{"bigint", RS_COL_INTEGER},
		{"  Integer ", RS_COL_INTEGER},
		{"int8", RS_COL_INTEGER},
		{"oid", RS_COL_INTEGER},
		{"numeric", RS_COL_DECIMAL},
		{"numeric(30,0)", RS_COL_DECIMAL},
		{"numeric(10,2)", RS_COL_DECIMAL},
		{"double precision", RS_COL_FLOAT},
		{"real", RS_COL_FLOAT4},
		{"boolean", RS_COL_BOOL},
		{"text", RS_COL_TEXT},
		{"character varying(20)", RS_COL_TEXT},
		{"character varying", RS_COL_TEXT},
		{"\"char\"", RS_COL_TEXT},
		{"name", RS_COL_TEXT},
		{"character(4)", RS_COL_CHAR},
		{"bpchar", RS_COL_CHAR},
		{"bytea", RS_COL_BYTES},
		{"date", RS_COL_DATE},
		{"time without time zone", RS_COL_TIME},
		{"time(3) without time zone", RS_COL_TIME},
		{"time with time zone", RS_COL_OTHER},
		{"timestamp without time zone", RS_COL_TIMESTAMP},
		{"timestamp(0) without time zone", RS_COL_TIMESTAMP},
		{"timestamp with time zone", RS_COL_TIMESTAMPTZ},
		{"timestamp(6) with time zone", RS_COL_TIMESTAMPTZ},
		{"timestamptz", RS_COL_TIMESTAMPTZ},
		{"uuid", RS_COL_UUID},
		{"json", RS_COL_JSON},
		{"jsonb", RS_COL_JSON},
		{"integer[]", RS_COL_OTHER},
		{"numeric(10,2)[]", RS_COL_OTHER},
		{"interval", RS_COL_OTHER},
		{"inet", RS_COL_OTHER},
		{"mood", RS_COL_OTHER},
		{"", RS_COL_OTHER},
		{NULL, RS_COL_OTHER},
	};

	(void)state;
	check_kinds(canonical_kind_pg, "PostgreSQL", cases, ARRAY_LEN(cases));
}

static void
test_kind_mysql(void **state)
{
	static const struct kind_case cases[] = {
		{"int(11)", RS_COL_INTEGER},
		{"int", RS_COL_INTEGER},
		{"bigint(20) unsigned", RS_COL_INTEGER},
		{"BIGINT(20)", RS_COL_INTEGER},
		{"smallint(5) unsigned zerofill", RS_COL_INTEGER},
		{"mediumint(9)", RS_COL_INTEGER},
		{"tinyint(4)", RS_COL_INTEGER},
		{"tinyint(1)", RS_COL_BOOL},
		{"tinyint(1) unsigned", RS_COL_INTEGER},
		{"year(4)", RS_COL_INTEGER},
		{"decimal(30,0)", RS_COL_DECIMAL},
		{"decimal(10,2) unsigned", RS_COL_DECIMAL},
		{"double", RS_COL_FLOAT},
		{"float", RS_COL_FLOAT4},
		{"float(10,2)", RS_COL_FLOAT4},
		{"varchar(20)", RS_COL_TEXT},
		{"text", RS_COL_TEXT},
		{"longtext", RS_COL_TEXT},
		{"enum('a','b c')", RS_COL_TEXT},
		{"set('x','y')", RS_COL_TEXT},
		{"char(36)", RS_COL_CHAR},
		{"longblob", RS_COL_BYTES},
		{"varbinary(16)", RS_COL_BYTES},
		{"binary(16)", RS_COL_BYTES},
		{"bit(1)", RS_COL_BYTES},
		{"date", RS_COL_DATE},
		{"time(6)", RS_COL_TIME},
		{"datetime", RS_COL_TIMESTAMP},
		{"datetime(6)", RS_COL_TIMESTAMP},
		{"timestamp", RS_COL_TIMESTAMPTZ},
		{"timestamp(6)", RS_COL_TIMESTAMPTZ},
		{"json", RS_COL_JSON},
		{"uuid", RS_COL_UUID},
		{"inet6", RS_COL_OTHER},
		{"", RS_COL_OTHER},
	};

	(void)state;
	check_kinds(canonical_kind_mysql, "MariaDB", cases, ARRAY_LEN(cases));
}

static void
test_kind_sqlite(void **state)
{
	static const struct kind_case cases[] = {
		{"INTEGER", RS_COL_INTEGER},
		{"int", RS_COL_INTEGER},
		{"BIGINT", RS_COL_INTEGER},
		{"UNSIGNED BIG INT", RS_COL_INTEGER},
		{"TINYINT(1)", RS_COL_INTEGER},
		{"POINT", RS_COL_INTEGER}, /* SQLite's rule 1: "INT" */
		{"BOOLEAN", RS_COL_BOOL},
		{"bool", RS_COL_BOOL},
		{"NUMERIC", RS_COL_DECIMAL},
		{"DECIMAL(30,0)", RS_COL_DECIMAL},
		{"decimal(10, 5)", RS_COL_DECIMAL},
		{"REAL", RS_COL_FLOAT},
		{"DOUBLE", RS_COL_FLOAT},
		{"DOUBLE PRECISION", RS_COL_FLOAT},
		{"FLOAT", RS_COL_FLOAT},
		{"TEXT", RS_COL_TEXT},
		{"VARCHAR(255)", RS_COL_TEXT},
		{"CHARACTER VARYING(20)", RS_COL_TEXT},
		{"NVARCHAR(100)", RS_COL_TEXT},
		{"CLOB", RS_COL_TEXT},
		{"CHARACTER(20)", RS_COL_CHAR},
		{"NCHAR(55)", RS_COL_CHAR},
		{"NATIVE CHARACTER(70)", RS_COL_CHAR},
		{"BLOB", RS_COL_BYTES},
		{"DATE", RS_COL_DATE},
		{"TIME", RS_COL_TIME},
		{"DATETIME", RS_COL_TIMESTAMP},
		{"TIMESTAMP", RS_COL_TIMESTAMP},
		{"TIMESTAMPTZ", RS_COL_TIMESTAMPTZ},
		{"timestamp with  time zone", RS_COL_TIMESTAMPTZ},
		{"JSON", RS_COL_JSON},
		{"UUID", RS_COL_UUID},
		{"MONEY", RS_COL_OTHER},
		{"", RS_COL_OTHER},
		{NULL, RS_COL_OTHER},
	};

	(void)state;
	check_kinds(canonical_kind_sqlite, "SQLite", cases, ARRAY_LEN(cases));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_integers),
		cmocka_unit_test(test_decimals),
		cmocka_unit_test(test_floats),
		cmocka_unit_test(test_floats_round_trip),
		cmocka_unit_test(test_booleans),
		cmocka_unit_test(test_text_and_char),
		cmocka_unit_test(test_bytes),
		cmocka_unit_test(test_timestamps),
		cmocka_unit_test(test_timestamptz),
		cmocka_unit_test(test_dates_and_times),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_json_depth),
		cmocka_unit_test(test_uuids),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_error_message),
		cmocka_unit_test(test_idempotent),
		cmocka_unit_test(test_row_across_engines),
		cmocka_unit_test(test_row_null_empty_order),
		cmocka_unit_test(test_row_hash_vectors),
		cmocka_unit_test(test_row_value_error),
		cmocka_unit_test(test_chunk_sum),
		cmocka_unit_test(test_buffer),
		cmocka_unit_test(test_buffer_too_large),
		cmocka_unit_test(test_kind_pg),
		cmocka_unit_test(test_kind_mysql),
		cmocka_unit_test(test_kind_sqlite),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
