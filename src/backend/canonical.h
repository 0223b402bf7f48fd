/*
 * The canonical form of DESIGN §9: one engine-neutral text per column
 * value, the row hash built from those texts and the chunk checksum built
 * from row hashes.  Backends read each value in its engine's text form and
 * pass it here with the column's kind; two shards, of the same engine or
 * not, hold the same row exactly when the row hashes are equal.  Nothing
 * here does I/O or knows an engine's client library.
 *
 * Canonical text of a non-NULL value, by kind:
 *
 *   integer    decimal digits, '-' for negatives, no '+', no leading
 *              zeros, "-0" is "0".  MariaDB ZEROFILL "00042" is "42".
 *   decimal    plain decimal, never an exponent: no '+', no leading zeros
 *              before the point, no trailing zeros after it, no point when
 *              nothing follows it, "0" for every zero ("1.500" → "1.5",
 *              "2.000" → "2", "-0.00" → "0", "0.10" → "0.1").  Done on the
 *              text, never through a double, so 30-digit values stay
 *              exact.  Exponents are expanded ("1.5e3" → "1500"): SQLite
 *              keeps a NUMERIC/DECIMAL value as a REAL whenever the text
 *              looks like one, and writes large REALs as "1.0e+20".  Values
 *              needing more than 131072 digits before the point or 16383
 *              after it (PostgreSQL numeric's limits, beyond every engine)
 *              are refused.  An integer's canonical text equals its
 *              decimal's, so integer and numeric(p,0) columns compare
 *              equal.  "NaN", "Infinity", "-Infinity" as for floats.
 *   float      the shortest decimal that reads back as the same double
 *              (exactly: the double rounded to the fewest significant
 *              digits that read back, dtoa_rounded of common/dtoa.h, a
 *              digit longer than the shortest at 46 powers of two),
 *              written as a decimal above ("0.1", "100", "1e+20" →
 *              "100000000000000000000"), so a float and a decimal holding
 *              the same number agree.  -0 is "0": SQLite stores -0.0 as
 *              the integer 0, and all three engines compare -0 = 0.
 *              Infinities and NaN are "Infinity", "-Infinity" and "NaN"
 *              (PostgreSQL's spelling; SQLite writes "Inf"; MariaDB has
 *              none).
 *   float4     single precision: the value rounded to a float, written
 *              with the fewest digits that read back as that float (read
 *              as a double, then rounded to a float:
 *              ftoa_rounded_via_double of common/dtoa.h), as a
 *              decimal above (a real 3.1415927 is "3.1415927", a real
 *              0.1 is "0.1", equal to a double 0.1).  MariaDB prints a
 *              FLOAT with 6 digits only, so mysql.c reads FLOAT columns
 *              as CAST(… AS DOUBLE), their exact value.
 *   bool       "t" or "f".  Read from t/f/true/false (any case) or an
 *              integer: 0 is "f", any other is "t" (MariaDB's and
 *              SQLite's truth, and what a PostgreSQL boolean receives).
 *   text       the bytes as they are (UTF-8 expected, not checked).
 *   char       blank-padded CHAR(n): the bytes without trailing spaces.
 *              PostgreSQL pads character(n) on output, MariaDB strips.
 *   bytes      lowercase hex, two digits a byte, no prefix.  PostgreSQL
 *              gives bytea's text output: hex ("\x0aff", any case) or the
 *              escape format; MariaDB and SQLite give the raw bytes.
 *   date       "YYYY-MM-DD".
 *   time       "HH:MM:SS.ffffff", hours at least two digits and '-' for a
 *              negative MariaDB TIME ("-838:59:59"), "03:04:05.5" →
 *              "03:04:05.500000".  PostgreSQL's "24:00:00" is kept.
 *   timestamp  "YYYY-MM-DDTHH:MM:SS.ffffff", no zone suffix: the value has
 *              no zone, and the missing 'Z' keeps it apart from a
 *              timestamptz with the same digits.  ' ' or 'T' is read as
 *              the separator.
 *   timestamptz  the instant in UTC, "YYYY-MM-DDTHH:MM:SS.ffffffZ".
 *              Offsets are read as Z, ±HH, ±HHMM, ±HH:MM or ±HH:MM:SS
 *              (PostgreSQL prints historic offsets like "+00:19:32").
 *   json       no insignificant whitespace, object keys sorted by their
 *              UTF-8 bytes with the last of duplicate keys kept (jsonb's
 *              rule), strings with escapes decoded and only '"', '\' and
 *              control characters escaped (\b \f \n \r \t, else \u00xx),
 *              numbers as decimals ("1.0" → "1", "1e2" → "100": jsonb
 *              compares numbers as numeric), at most 1000 nested
 *              arrays and objects.  Needed because jsonb and MySQL's JSON
 *              reformat what they store while MariaDB's JSON (LONGTEXT)
 *              and SQLite keep the text as written, so the same document
 *              has different texts.
 *   uuid       lowercase "8-4-4-4-12" hex.  Read as 32 hex digits in any
 *              case, hyphens between groups of four, optional braces;
 *              from SQLite also as 16 raw bytes (a BLOB).
 *   other      the bytes as they are.
 *
 * Dates and timestamps are proleptic Gregorian with astronomical years:
 * PostgreSQL's "0044-03-15 BC" is "-0043-03-15"; years have at least four
 * digits.  PostgreSQL's "infinity" and "-infinity" are kept as such.
 * MariaDB's zero date "0000-00-00" (and the zero DATETIME/TIMESTAMP) is
 * kept as zeros; other dates with zero parts are refused.  Fractions
 * longer than microseconds are refused unless the extra digits are 0.
 *
 * What each source must send:
 *   PostgreSQL  text output with DateStyle=ISO, IntervalStyle and
 *               TimeZone anything (offsets are read), extra_float_digits
 *               >= 1 (the default since 12: shortest exact floats).
 *   MariaDB     the text protocol with the session's time_zone='+00:00':
 *               TIMESTAMP values carry no offset and are read as UTC.
 *   SQLite      sqlite3_column_text, except for BLOBs (sqlite3_column_blob)
 *               and REAL values (sqlite3_column_type() == SQLITE_FLOAT):
 *               SQLite's own text keeps only 15 digits, so pass those
 *               through canonical_double.  Timestamps must be ISO-8601
 *               text; an offset or 'Z' is converted to UTC and dropped for
 *               a timestamp column (as SQLite's datetime() does), a
 *               missing one means UTC for timestamptz; a date alone means
 *               midnight; "HH:MM" without seconds is accepted.
 *
 * Every function that reads a number uses the C library's strtod and
 * snprintf, which follow LC_NUMERIC: the program must stay in the "C"
 * locale for numbers (reshard never calls setlocale).
 */
#ifndef RS_CANONICAL_H
#define RS_CANONICAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/sha.h>

#include "common/err.h"

enum rs_col_kind {
	RS_COL_INTEGER,     /* any integer type, of any width and sign */
	RS_COL_DECIMAL,     /* numeric/decimal, exact */
	RS_COL_FLOAT,       /* double precision */
	RS_COL_FLOAT4,      /* single precision: PostgreSQL real, MariaDB
	                       FLOAT, SQLite "FLOAT4" */
	RS_COL_BOOL,        /* boolean, MariaDB tinyint(1) */
	RS_COL_TEXT,        /* varchar, text, enum and set as text */
	RS_COL_CHAR,        /* blank-padded char(n): trailing spaces dropped */
	RS_COL_BYTES,       /* bytea, blob, binary, varbinary */
	RS_COL_DATE,        /* a calendar date */
	RS_COL_TIME,        /* time of day (MariaDB: a signed duration) */
	RS_COL_TIMESTAMP,   /* date and time without time zone */
	RS_COL_TIMESTAMPTZ, /* an instant: PostgreSQL timestamptz, MariaDB
	                       TIMESTAMP */
	RS_COL_JSON,        /* json, jsonb */
	RS_COL_UUID,        /* uuid */
	RS_COL_OTHER,       /* anything else: compared as text */
};

/* How the engine that produced a value writes it. */
enum rs_canon_src {
	RS_SRC_PG,
	RS_SRC_MYSQL, /* MariaDB and MySQL */
	RS_SRC_SQLITE,
};

/* A growable byte buffer that canonical texts are appended to.  DATA is
 * NUL-terminated once anything has been appended (even nothing, by a
 * successful canonical_value of a non-NULL value), and may hold NULs
 * before LEN.  Initialise with RS_CANON_BUF_INIT or canonical_buf_init;
 * the owner calls canonical_buf_free. */
struct rs_canon_buf {
	char *data; /* LEN bytes and a NUL, or NULL before the first append */
	size_t len; /* bytes used, not counting the NUL */
	size_t cap; /* bytes allocated */
};

#define RS_CANON_BUF_INIT                                                      \
	{                                                                      \
		NULL, 0, 0                                                     \
	}

/* The state of one row's hash.  Lives on the caller's stack: nothing to
 * free. */
struct rs_row_hasher {
	SHA256_CTX sha; /* over the row's encoding, see canonical_row_add */
	/* The encoding gathered here and hashed a bufferful at a time: one
	 * SHA256_Update a usual row instead of two a column. */
	size_t used;
	unsigned char pending[256];
};

/* A chunk's checksum (DESIGN §9): how many rows and the sum of their
 * hashes mod 2^64.  Start from {0, 0}.  The sum does not depend on the
 * order rows are read in, and two chunks' sums add up to their union's. */
struct rs_chunk_sum {
	uint64_t rows; /* rows added */
	uint64_t sum;  /* sum of their row hashes, mod 2^64 */
};

/* The kind's name as in messages ("integer", "timestamptz", …); "?" for a
 * value that is not an enum rs_col_kind. */
const char *canonical_kind_name(enum rs_col_kind kind);

/* Whether every engine's text of a value of KIND is its canonical text
 * already (integers as decimal digits, text as it is, and what is
 * compared as text), so that it needs no canonical_value. */
int canonical_kind_as_is(enum rs_col_kind kind);

/* The source's name as in messages ("PostgreSQL", "MariaDB", "SQLite"). */
const char *canonical_src_name(enum rs_canon_src src);

/* The kind of a PostgreSQL column from format_type(atttypid, atttypmod),
 * e.g. "integer", "numeric(30,0)", "character varying(20)",
 * "timestamp(3) with time zone".  Matching ignores case and surrounding
 * blanks and also takes the internal names (int4, float8, bpchar,
 * timestamptz, …).  Arrays, intervals, enums, domains and other types
 * not listed are RS_COL_OTHER; "time with time zone" too (it names no
 * instant).  Never fails: unknown names are RS_COL_OTHER. */
enum rs_col_kind canonical_kind_pg(const char *format_type);

/* The kind of a MariaDB/MySQL column from information_schema COLUMNS.
 * COLUMN_TYPE, e.g. "int(11)", "bigint(20) unsigned", "tinyint(1)"
 * (boolean; "tinyint(1) unsigned" is an integer), "decimal(30,0)",
 * "datetime(6)" (timestamp), "timestamp(6)" (timestamptz), "enum('a')"
 * and "set('a')" (text), "bit(8)" and "binary(16)" (bytes, raw).
 * MariaDB reports a JSON column as "longtext": pass "json" instead when
 * the column has a json_valid() check.  Never fails: unknown names are
 * RS_COL_OTHER. */
enum rs_col_kind canonical_kind_mysql(const char *column_type);

/* The kind of a SQLite column from its declared type.  Names with a
 * meaning SQLite's affinity does not capture come first: BOOLEAN/BOOL,
 * DATE, TIME, DATETIME and TIMESTAMP (timestamp), TIMESTAMPTZ and
 * "TIMESTAMP WITH TIME ZONE", NUMERIC/DECIMAL (decimal), CHAR(n) and
 * CHARACTER(n) and NCHAR(n) (char), JSON/JSONB, UUID.  Then SQLite's
 * affinity rules, in their order: "INT" anywhere is an integer;
 * "CHAR", "CLOB" or "TEXT" text; "BLOB" bytes; "REAL", "FLOA" or "DOUB"
 * float; any other name, or none, RS_COL_OTHER (such a column holds
 * whatever was written).  Never fails. */
enum rs_col_kind canonical_kind_sqlite(const char *declared_type);

/* Set up BUF empty, owning no memory (same as RS_CANON_BUF_INIT). */
void canonical_buf_init(struct rs_canon_buf *buf);

/* Empty BUF but keep its memory for the next value. */
void canonical_buf_clear(struct rs_canon_buf *buf);

/* Release BUF's memory and leave it empty and reusable. */
void canonical_buf_free(struct rs_canon_buf *buf);

/* Make room in BUF for N more bytes and the NUL (a batch's worth at once,
 * for a caller that then appends value by value).  Returns 0, or
 * RS_ENOMEM with BUF unchanged. */
int canonical_buf_reserve(struct rs_canon_buf *buf, size_t n,
                          struct rs_err *err);

/* Append N bytes to BUF.  Returns 0, or RS_ENOMEM with BUF unchanged. */
int canonical_buf_append(struct rs_canon_buf *buf, const void *bytes, size_t n,
                         struct rs_err *err);

/* Append to OUT the canonical text of one value of KIND that SRC wrote as
 * TEXT (LEN bytes; need not be NUL-terminated; may hold NULs for bytes
 * and text).  A NULL TEXT is SQL NULL: it has no canonical text, nothing
 * is appended and 0 is returned; canonical_row_add marks it in the row.
 * Returns 0, RS_ENOMEM, or RS_EVALUE when TEXT is not a value of KIND
 * as SRC writes it (the message names the value, its kind and source;
 * the caller may add the column).  On error OUT's length and bytes are
 * as they were (its memory may have grown). */
int canonical_value(enum rs_col_kind kind, enum rs_canon_src src,
                    const char *text, size_t len, struct rs_canon_buf *out,
                    struct rs_err *err);

/* Append to OUT the canonical text of the double V as a float or decimal
 * column holds it: the shortest decimal that reads back as V.  For values
 * a backend has as a double (SQLite REALs).  Returns 0 or RS_ENOMEM; on
 * error OUT's length and bytes are as they were. */
int canonical_double(double v, struct rs_canon_buf *out, struct rs_err *err);

/* Start a row's hash. */
void canonical_row_init(struct rs_row_hasher *hasher);

/* Add the next column's canonical text (LEN bytes), or SQL NULL when TEXT
 * is NULL.  The hash is over an encoding that tells every row apart: per
 * column 'N' for NULL, or 'V', the length as 8 bytes big-endian and the
 * bytes.  Columns go in the table's order.  Cannot fail. */
void canonical_row_add(struct rs_row_hasher *hasher, const char *text,
                       size_t len);

/* canonical_value into SCRATCH (cleared first), then canonical_row_add of
 * the result: one call per column for a backend.  Returns what
 * canonical_value returns; on error the row's hash must be abandoned. */
int canonical_row_value(struct rs_row_hasher *hasher, enum rs_col_kind kind,
                        enum rs_canon_src src, const char *text, size_t len,
                        struct rs_canon_buf *scratch, struct rs_err *err);

/* The row's hash: the first 8 bytes of the SHA-256 of its encoding, read
 * big-endian.  HASHER must be initialised again before its next row.
 * Cannot fail. */
uint64_t canonical_row_finish(struct rs_row_hasher *hasher);

/* Count ROW_HASH into SUM. */
void canonical_chunk_add(struct rs_chunk_sum *sum, uint64_t row_hash);

/* Add PART (a checksum of other rows) into SUM. */
void canonical_chunk_merge(struct rs_chunk_sum *sum,
                           const struct rs_chunk_sum *part);

/* Whether two chunk checksums agree in both count and sum. */
bool canonical_chunk_equal(const struct rs_chunk_sum *a,
                           const struct rs_chunk_sum *b);

#endif
