/*
 * The canonical form of DESIGN §9: each engine's text of a value → one
 * engine-neutral text (the rules are in canonical.h), the row hash over
 * those texts and the chunk checksum over row hashes.  Everything is text
 * processing, exact for decimals of any length; only floats go through a
 * double, and come back as the shortest decimal that reads as the same
 * double.  No I/O and no global state: every function is reentrant.
 *
 * This file holds the value dispatch (canonical_value, read_value), the
 * readers of numbers, booleans, bytes and uuids, the buffer, and the row
 * hasher and chunk sums.  Kind names and type names → kinds are in
 * canonical_kind.c, dates and times in canonical_time.c, JSON in
 * canonical_json.c; canonical_impl.h joins them.
 *
 * Readers follow the contract of canonical_impl.h: 0, RS_ENOMEM (with ERR
 * filled) or RS_EVALUE with *WHY naming what is wrong; canonical_value
 * turns the latter into the one message, quoting the value, and truncates
 * OUT back to where it was.
 */

/*
 * Row hashes use OpenSSL's low-level SHA256_Init/Update/Final, deprecated
 * in OpenSSL 3 but allocation-free: the context lives in the caller's
 * struct rs_row_hasher and nothing can fail (see src/shardmap/hash.c for
 * the measurements against EVP).  Hence this define, in this file only.
 */
#define OPENSSL_SUPPRESS_DEPRECATED

#include "backend/canonical_impl.h"
#include "common/dtoa.h"
#include "common/strbuf.h"
#include "common/text.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

/* PostgreSQL numeric's limits: digits before and after the point. */
#define DECIMAL_MAX_INT_DIGITS  131072
#define DECIMAL_MAX_FRAC_DIGITS 16383

/* How much of a bad value an error message quotes. */
#define SHOW_MAX 64

/* ---- The buffer ------------------------------------------------------- */

void
canonical_buf_init(struct rs_canon_buf *buf)
{
	buf->data = NULL;
	buf->len = 0;
	buf->cap = 0;
}

void
canonical_buf_clear(struct rs_canon_buf *buf)
{
	buf->len = 0;
	if (buf->data != NULL)
		buf->data[0] = '\0';
}

void
canonical_buf_free(struct rs_canon_buf *buf)
{
	free(buf->data);
	canonical_buf_init(buf);
}

/* Make room for N more bytes and the NUL, and terminate BUF even before
 * any byte goes in.  Returns 0 or RS_ENOMEM with BUF unchanged.
 *
 * BUF grows as the rs_strbuf SB: struct rs_canon_buf keeps its own
 * fields, which backends read by name (data, not strbuf's text), and its
 * own failure rule: an append that fails reports it in ERR and leaves BUF
 * as it was and usable, where strbuf's FAILED is sticky.  SB's FAILED goes
 * with SB. */
static int
buf_reserve(struct rs_canon_buf *buf, size_t n, struct rs_err *err)
{
	struct rs_strbuf sb = {buf->data, buf->len, buf->cap, 0};

	/* Room already: the common case, a value into a batch's buffer. */
	if (buf->data != NULL && n < buf->cap - buf->len) {
		buf->data[buf->len] = '\0';
		return 0;
	}
	if (n > SIZE_MAX - 1 - buf->len)
		return rs_err_set(err, RS_ENOMEM,
		                  "a canonical value is too long");
	if (strbuf_reserve(&sb, n) != 0)
		return rs_err_set(err, RS_ENOMEM,
		                  "out of memory for a canonical value of %zu "
		                  "bytes",
		                  buf->len + n + 1);
	buf->data = sb.text;
	buf->cap = sb.cap;
	buf->data[buf->len] = '\0';
	return 0;
}

int
canonical_buf_reserve(struct rs_canon_buf *buf, size_t n, struct rs_err *err)
{
	return buf_reserve(buf, n, err);
}

int
canonical_buf_append(struct rs_canon_buf *buf, const void *bytes, size_t n,
                     struct rs_err *err)
{
	int rc = buf_reserve(buf, n, err);

	if (rc != 0)
		return rc;
	if (n > 0)
		memcpy(buf->data + buf->len, bytes, n);
	buf->len += n;
	buf->data[buf->len] = '\0';
	return 0;
}

/* Append the bytes as lowercase hex. */
static int
buf_hex(struct rs_canon_buf *buf, const unsigned char *bytes, size_t n,
        struct rs_err *err)
{
	int rc;

	if (n > SIZE_MAX / 2)
		return rs_err_set(err, RS_ENOMEM,
		                  "a canonical value is too long");
	rc = buf_reserve(buf, 2 * n, err);
	if (rc != 0)
		return rc;
	text_hex_encode(bytes, n, buf->data + buf->len);
	buf->len += 2 * n;
	buf->data[buf->len] = '\0';
	return 0;
}

/* ---- Small readers ---------------------------------------------------- */

bool
canon_equals_word(const char *s, size_t len, const char *word)
{
	size_t n = strlen(word);

	if (len != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c != word[i])
			return false;
	}
	return true;
}

/* "NaN", "Infinity" or "-Infinity" when S is one of the spellings the
 * engines use for them (with an optional sign; any case), else NULL. */
static const char *
special_number(const char *s, size_t len)
{
	bool negative = false;

	if (len > 0 && (s[0] == '-' || s[0] == '+')) {
		negative = s[0] == '-';
		s++;
		len--;
	}
	if (canon_equals_word(s, len, "nan"))
		return "NaN";
	if (canon_equals_word(s, len, "inf") ||
	    canon_equals_word(s, len, "infinity"))
		return negative ? "-Infinity" : "Infinity";
	return NULL;
}

/* ---- Integers and decimals -------------------------------------------- */

static int
read_integer(const char *s, size_t len, struct rs_canon_buf *out,
             struct rs_err *err, const char **why)
{
	size_t i = 0;
	bool negative = false;
	int rc;

	if (i < len && (s[i] == '-' || s[i] == '+')) {
		negative = s[i] == '-';
		i++;
	}
	if (i == len) {
		*why = "no digits";
		return RS_EVALUE;
	}
	for (size_t j = i; j < len; j++) {
		if (!is_digit(s[j])) {
			*why = "not a decimal integer";
			return RS_EVALUE;
		}
	}
	while (i + 1 < len && s[i] == '0')
		i++;
	if (len - i == 1 && s[i] == '0')
		negative = false;
	if (negative && (rc = buf_putc(out, '-', err)) != 0)
		return rc;
	return canonical_buf_append(out, s + i, len - i, err);
}

bool
canon_decimal_parse(const char *s, size_t len, struct decimal_text *d)
{
	size_t i = 0;

	memset(d, 0, sizeof(*d));
	if (i < len && (s[i] == '-' || s[i] == '+')) {
		d->negative = s[i] == '-';
		i++;
	}
	d->int_digits = s + i;
	while (i < len && is_digit(s[i]))
		i++;
	d->n_int = (size_t)(s + i - d->int_digits);
	d->frac_digits = s + i;
	if (i < len && s[i] == '.') {
		i++;
		d->frac_digits = s + i;
		while (i < len && is_digit(s[i]))
			i++;
		d->n_frac = (size_t)(s + i - d->frac_digits);
	}
	if (d->n_int + d->n_frac == 0)
		return false;
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		bool exp_negative = false;
		size_t start;

		i++;
		if (i < len && (s[i] == '-' || s[i] == '+')) {
			exp_negative = s[i] == '-';
			i++;
		}
		start = i;
		for (; i < len && is_digit(s[i]); i++) {
			if (d->exponent < 1000000000000LL)
				d->exponent = d->exponent * 10 + (s[i] - '0');
		}
		if (i == start)
			return false;
		if (exp_negative)
			d->exponent = -d->exponent;
	}
	return i == len;
}

/* The Ith significant-position digit of D: integer digits, then
 * fraction digits. */
static char
decimal_digit(const struct decimal_text *d, size_t i)
{
	return i < d->n_int ? d->int_digits[i] : d->frac_digits[i - d->n_int];
}

int
canon_decimal_write(const struct decimal_text *d, struct rs_canon_buf *out,
                    struct rs_err *err, const char **why)
{
	size_t n = d->n_int + d->n_frac, first = 0, last = n, n_sig;
	long long point; /* digits of the significant run before the point */
	int rc;

	while (first < n && decimal_digit(d, first) == '0')
		first++;
	if (first == n)
		return buf_putc(out, '0', err);
	while (decimal_digit(d, last - 1) == '0')
		last--;
	n_sig = last - first;
	point = (long long)d->n_int + d->exponent - (long long)first;
	if (point > DECIMAL_MAX_INT_DIGITS ||
	    (long long)n_sig - point > DECIMAL_MAX_FRAC_DIGITS) {
		*why = "beyond the range of every engine's decimals";
		return RS_EVALUE;
	}
	/* Reserve the worst case once, then write byte by byte. */
	rc = buf_reserve(out, n_sig + 3 + (size_t)(point < 0 ? -point : point),
	                 err);
	if (rc != 0)
		return rc;
	if (d->negative)
		out->data[out->len++] = '-';
	if (point <= 0) {
		out->data[out->len++] = '0';
		out->data[out->len++] = '.';
		for (long long k = point; k < 0; k++)
			out->data[out->len++] = '0';
	}
	for (size_t k = 0; k < n_sig; k++) {
		if (point > 0 && (long long)k == point)
			out->data[out->len++] = '.';
		out->data[out->len++] = decimal_digit(d, first + k);
	}
	for (long long k = (long long)n_sig; k < point; k++)
		out->data[out->len++] = '0';
	out->data[out->len] = '\0';
	return 0;
}

static int
read_decimal(const char *s, size_t len, struct rs_canon_buf *out,
             struct rs_err *err, const char **why)
{
	struct decimal_text d;
	const char *special = special_number(s, len);

	if (special != NULL)
		return buf_puts(out, special, err);
	if (!canon_decimal_parse(s, len, &d)) {
		*why = "not a decimal number";
		return RS_EVALUE;
	}
	return canon_decimal_write(&d, out, err, why);
}

/* ---- Floats ----------------------------------------------------------- */

/* Append DIGITS × 10^EXPONENT (dtoa.h: no trailing zero), negative when
 * NEGATIVE: the bytes canon_decimal_write would write for that decimal, without
 * its range check (a double's is far inside the limits) and with memcpy
 * and memset rather than a byte at a time. */
static int
write_digits(bool negative, uint64_t digits, int exponent,
             struct rs_canon_buf *out, struct rs_err *err)
{
	char text[20], *p;
	size_t first = sizeof(text), n, zeros;
	long point; /* digits before the point */
	int rc;

	do {
		text[--first] = (char)('0' + digits % 10);
		digits /= 10;
	} while (digits != 0);
	n = sizeof(text) - first;
	point = (long)n + exponent;
	zeros = (size_t)(point < 0 ? -point : point);
	rc = buf_reserve(out, n + 3 + zeros, err);
	if (rc != 0)
		return rc;
	p = out->data + out->len;
	if (negative)
		*p++ = '-';
	if (point <= 0) { /* 0.000ddd */
		*p++ = '0';
		*p++ = '.';
		memset(p, '0', zeros);
		p += zeros;
		memcpy(p, text + first, n);
		p += n;
	} else if ((size_t)point >= n) { /* ddd000 */
		memcpy(p, text + first, n);
		p += n;
		memset(p, '0', zeros - n);
		p += zeros - n;
	} else { /* dd.d */
		memcpy(p, text + first, zeros);
		p += zeros;
		*p++ = '.';
		memcpy(p, text + first + zeros, n - zeros);
		p += n - zeros;
	}
	*p = '\0';
	out->len = (size_t)(p - out->data);
	return 0;
}

int
canonical_double(double v, struct rs_canon_buf *out, struct rs_err *err)
{
	uint64_t digits;
	int exponent;

	if (isnan(v))
		return buf_puts(out, "NaN", err);
	if (isinf(v))
		return buf_puts(out, v < 0 ? "-Infinity" : "Infinity", err);
	if (v == 0)
		return buf_putc(out, '0', err); /* -0 too */
	/* The fewest significant digits that read back as V, V rounded to
	 * them: what printf("%.*e") and strtod find digit count by digit
	 * count, the way this text has always been made.  Ryu's shortest
	 * (dtoa_shortest) would be a digit shorter at 46 powers of two. */
	dtoa_rounded(v, &digits, &exponent);
	return write_digits(signbit(v) != 0, digits, exponent, out, err);
}

static int
read_float(const char *s, size_t len, struct rs_canon_buf *out,
           struct rs_err *err, const char **why)
{
	struct decimal_text d;
	const char *special = special_number(s, len);
	char local[128], *copy = local, *end;
	double v;
	int saved_errno = errno, range;

	if (special != NULL)
		return buf_puts(out, special, err);
	/* Check the syntax ourselves: strtod also takes blanks, hex and
	 * "infinity(…)". */
	if (!canon_decimal_parse(s, len, &d)) {
		*why = "not a floating-point number";
		return RS_EVALUE;
	}
	if (len >= sizeof(local)) {
		copy = malloc(len + 1);
		if (copy == NULL)
			return rs_err_set(err, RS_ENOMEM,
			                  "out of memory reading a float");
	}
	memcpy(copy, s, len);
	copy[len] = '\0';
	errno = 0;
	v = strtod(copy, &end);
	range = errno;
	errno = saved_errno;
	if (copy != local)
		free(copy);
	if (range == ERANGE && isinf(v)) {
		*why = "out of the range of a double";
		return RS_EVALUE;
	}
	return canonical_double(v, out, err);
}

/* A single-precision value: read as a double (the text may hold its exact
 * value, from MariaDB's CAST, or its shortest form, from PostgreSQL), then
 * rounded to a float and written with the fewest digits that read back as
 * that float. */
static int
read_float4(const char *s, size_t len, struct rs_canon_buf *out,
            struct rs_err *err, const char **why)
{
	struct rs_canon_buf wide;
	uint32_t digits;
	int exponent;
	float f;
	int rc;

	canonical_buf_init(&wide);
	rc = read_float(s, len, &wide, err, why);
	if (rc != 0 || special_number(wide.data, wide.len) != NULL) {
		if (rc == 0)
			rc = canonical_buf_append(out, wide.data, wide.len,
			                          err);
		canonical_buf_free(&wide);
		return rc;
	}
	f = (float)strtod(wide.data, NULL);
	canonical_buf_free(&wide);
	if (isinf(f)) {
		*why = "out of the range of a float";
		return RS_EVALUE;
	}
	if (f == 0)
		return buf_putc(out, '0', err);
	/* The fewest digits that read back as F the way F was just read, as
	 * a double rounded to a float. */
	ftoa_rounded_via_double(f, &digits, &exponent);
	return write_digits(signbit(f) != 0, digits, exponent, out, err);
}

/* ---- Booleans, text, bytes, uuids ------------------------------------- */

/* A boolean: t, true, f, false, or the integers 0 and 1 (MariaDB's
 * TINYINT(1), SQLite's 0 and 1).  Any other integer is refused, not taken
 * as true: a TINYINT(1) may hold -128 … 127, and 2 copied as true would
 * reach the target as 1, a changed row no comparison of canonical values
 * could see. */
static int
read_bool(const char *s, size_t len, struct rs_canon_buf *out,
          struct rs_err *err, const char **why)
{
	size_t i = 0;
	int negative = 0;
	char last = '0';

	if (canon_equals_word(s, len, "t") || canon_equals_word(s, len, "true"))
		return buf_putc(out, 't', err);
	if (canon_equals_word(s, len, "f") ||
	    canon_equals_word(s, len, "false"))
		return buf_putc(out, 'f', err);
	if (i < len && (s[i] == '-' || s[i] == '+'))
		negative = s[i++] == '-';
	if (i == len) {
		*why = "not t, f, true, false or an integer";
		return RS_EVALUE;
	}
	for (; i < len; i++) {
		if (!is_digit(s[i])) {
			*why = "not t, f, true, false or an integer";
			return RS_EVALUE;
		}
		if (last != '0') {
			last = 'x'; /* a digit after a nonzero one */
			continue;
		}
		last = s[i];
	}
	if (last == '0')
		return buf_putc(out, 'f', err);
	if (last == '1' && !negative)
		return buf_putc(out, 't', err);
	*why = "an integer other than 0 and 1 in a boolean column (a "
	       "MariaDB TINYINT(1) holds -128 … 127): copied as a boolean "
	       "it would become 1; declare the column a wider integer "
	       "(TINYINT(4)) on source and target";
	return RS_EVALUE;
}

/* PostgreSQL's bytea text output: "\x" and hex digits, or the escape
 * format (bytes as they are, "\\" for a backslash, "\ooo" octal). */
static int
read_pg_bytea(const char *s, size_t len, struct rs_canon_buf *out,
              struct rs_err *err, const char **why)
{
	static const char digits[] = "0123456789abcdef";
	int rc;

	if (len >= 2 && s[0] == '\\' && (s[1] == 'x' || s[1] == 'X')) {
		if ((len - 2) % 2 != 0) {
			*why = "an odd number of hex digits";
			return RS_EVALUE;
		}
		for (size_t i = 2; i < len; i++) {
			if (text_hex_digit(s[i]) < 0) {
				*why = "not a hex digit after \\x";
				return RS_EVALUE;
			}
		}
		rc = buf_reserve(out, len - 2, err);
		if (rc != 0)
			return rc;
		for (size_t i = 2; i < len; i++)
			out->data[out->len++] = digits[text_hex_digit(s[i])];
		out->data[out->len] = '\0';
		return 0;
	}
	for (size_t i = 0; i < len;) {
		unsigned char byte = (unsigned char)s[i];

		if (byte != '\\') {
			i++;
		} else if (i + 1 < len && s[i + 1] == '\\') {
			i += 2;
		} else if (i + 3 < len && s[i + 1] >= '0' && s[i + 1] <= '3' &&
		           s[i + 2] >= '0' && s[i + 2] <= '7' &&
		           s[i + 3] >= '0' && s[i + 3] <= '7') {
			byte = (unsigned char)((s[i + 1] - '0') * 64 +
			                       (s[i + 2] - '0') * 8 +
			                       (s[i + 3] - '0'));
			i += 4;
		} else {
			*why = "a backslash not followed by \\, x or three "
			       "octal digits";
			return RS_EVALUE;
		}
		if ((rc = buf_hex(out, &byte, 1, err)) != 0)
			return rc;
	}
	return 0;
}

static int
read_uuid(enum rs_canon_src src, const char *s, size_t len,
          struct rs_canon_buf *out, struct rs_err *err, const char **why)
{
	static const char digits[] = "0123456789abcdef";
	char hex[32];
	size_t n = 0;
	int rc;

	if (src == RS_SRC_SQLITE && len == 16) {
		const unsigned char *raw = (const unsigned char *)s;

		for (size_t i = 0; i < 16; i++) {
			hex[n++] = digits[raw[i] >> 4];
			hex[n++] = digits[raw[i] & 15];
		}
	} else {
		if (len >= 2 && s[0] == '{' && s[len - 1] == '}') {
			s++;
			len -= 2;
		}
		for (size_t i = 0; i < len; i++) {
			int v = text_hex_digit(s[i]);

			if (v >= 0 && n < 32) {
				hex[n++] = digits[v];
			} else if (!(s[i] == '-' && n > 0 && n % 4 == 0 &&
			             i + 1 < len && s[i + 1] != '-')) {
				*why = "not 32 hex digits in groups";
				return RS_EVALUE;
			}
		}
		if (n != 32) {
			*why = "not 32 hex digits";
			return RS_EVALUE;
		}
	}
	rc = buf_reserve(out, 36, err);
	if (rc != 0)
		return rc;
	for (size_t i = 0; i < 32; i++) {
		if (i == 8 || i == 12 || i == 16 || i == 20)
			out->data[out->len++] = '-';
		out->data[out->len++] = hex[i];
	}
	out->data[out->len] = '\0';
	return 0;
}

/* ---- One value -------------------------------------------------------- */

/* TEXT (LEN bytes) quoted for a message: at most SHOW_MAX bytes, with
 * non-printable bytes, '"' and '\' escaped. */
static void
show_value(const char *text, size_t len, char *buf, size_t size)
{
	size_t used = 0, i;

	for (i = 0; i < len && i < SHOW_MAX && used + 5 < size; i++) {
		unsigned char c = (unsigned char)text[i];

		if (c == '"' || c == '\\')
			used += (size_t)snprintf(buf + used, size - used,
			                         "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			used += (size_t)snprintf(buf + used, size - used,
			                         "\\x%02x", c);
		else
			buf[used++] = (char)c;
	}
	if (i < len && used + 4 < size) {
		memcpy(buf + used, "...", 3);
		used += 3;
	}
	buf[used] = '\0';
}

static int
read_value(enum rs_col_kind kind, enum rs_canon_src src, const char *text,
           size_t len, struct rs_canon_buf *out, struct rs_err *err,
           const char **why)
{
	switch (kind) {
	case RS_COL_INTEGER:
		return read_integer(text, len, out, err, why);
	case RS_COL_DECIMAL:
		return read_decimal(text, len, out, err, why);
	case RS_COL_FLOAT:
		return read_float(text, len, out, err, why);
	case RS_COL_FLOAT4:
		return read_float4(text, len, out, err, why);
	case RS_COL_BOOL:
		return read_bool(text, len, out, err, why);
	case RS_COL_TEXT:
	case RS_COL_OTHER:
		return canonical_buf_append(out, text, len, err);
	case RS_COL_CHAR:
		while (len > 0 && text[len - 1] == ' ')
			len--;
		return canonical_buf_append(out, text, len, err);
	case RS_COL_BYTES:
		if (src == RS_SRC_PG)
			return read_pg_bytea(text, len, out, err, why);
		return buf_hex(out, (const unsigned char *)text, len, err);
	case RS_COL_DATE:
		return canon_read_date(src, text, len, out, err, why);
	case RS_COL_TIME:
		return canon_read_time(src, text, len, out, err, why);
	case RS_COL_TIMESTAMP:
		return canon_read_timestamp(src, false, text, len, out, err,
		                            why);
	case RS_COL_TIMESTAMPTZ:
		return canon_read_timestamp(src, true, text, len, out, err,
		                            why);
	case RS_COL_JSON:
		return canon_read_json(text, len, out, err, why);
	case RS_COL_UUID:
		return read_uuid(src, text, len, out, err, why);
	}
	return rs_err_set(err, RS_EINTERNAL, "unknown column kind %d",
	                  (int)kind);
}

int
canonical_value(enum rs_col_kind kind, enum rs_canon_src src, const char *text,
                size_t len, struct rs_canon_buf *out, struct rs_err *err)
{
	size_t start = out->len;
	const char *why = "malformed";
	int rc;

	if (text == NULL)
		return 0;
	/* Text is its own canonical form, from every engine: appended
	 * straight away (most of a copy's bytes are text, and the calls
	 * below cost more than the bytes).  canonical_buf_append leaves an
	 * empty value non-NULL and terminated too, and fails only out of
	 * memory, with OUT as it was. */
	if (kind == RS_COL_TEXT || kind == RS_COL_OTHER)
		return canonical_buf_append(out, text, len, err);
	/* Even an empty value leaves DATA non-NULL and terminated. */
	rc = buf_reserve(out, 0, err);
	if (rc == 0)
		rc = read_value(kind, src, text, len, out, err, &why);
	if (rc == 0)
		return 0;
	out->len = start;
	if (out->data != NULL)
		out->data[start] = '\0';
	if (rc == RS_EVALUE) {
		char shown[SHOW_MAX * 4 + 8];

		show_value(text, len, shown, sizeof(shown));
		rs_err_set(err, RS_EVALUE,
		           "invalid %s value \"%s\" from %s: %s",
		           canonical_kind_name(kind), shown,
		           canonical_src_name(src), why);
	}
	return rc;
}

/* ---- Rows and chunks -------------------------------------------------- */

void
canonical_row_init(struct rs_row_hasher *hasher)
{
	SHA256_Init(&hasher->sha);
	hasher->used = 0;
}

/* Append LEN bytes to the row's encoding. */
static void
row_hasher_put(struct rs_row_hasher *hasher, const void *bytes, size_t len)
{
	if (hasher->used + len > sizeof(hasher->pending)) {
		SHA256_Update(&hasher->sha, hasher->pending, hasher->used);
		hasher->used = 0;
	}
	if (len > sizeof(hasher->pending)) {
		SHA256_Update(&hasher->sha, bytes, len);
		return;
	}
	memcpy(hasher->pending + hasher->used, bytes, len);
	hasher->used += len;
}

void
canonical_row_add(struct rs_row_hasher *hasher, const char *text, size_t len)
{
	unsigned char head[9];

	if (text == NULL) {
		row_hasher_put(hasher, "N", 1);
		return;
	}
	head[0] = 'V';
	for (int k = 0; k < 8; k++)
		head[1 + k] = (unsigned char)((uint64_t)len >> (56 - 8 * k));
	row_hasher_put(hasher, head, sizeof(head));
	if (len > 0)
		row_hasher_put(hasher, text, len);
}

int
canonical_row_value(struct rs_row_hasher *hasher, enum rs_col_kind kind,
                    enum rs_canon_src src, const char *text, size_t len,
                    struct rs_canon_buf *scratch, struct rs_err *err)
{
	int rc;

	canonical_buf_clear(scratch);
	if (text == NULL) {
		canonical_row_add(hasher, NULL, 0);
		return 0;
	}
	rc = canonical_value(kind, src, text, len, scratch, err);
	if (rc != 0)
		return rc;
	canonical_row_add(hasher, scratch->data, scratch->len);
	return 0;
}

uint64_t
canonical_row_finish(struct rs_row_hasher *hasher)
{
	unsigned char digest[SHA256_DIGEST_LENGTH];
	uint64_t hash = 0;

	if (hasher->used > 0)
		SHA256_Update(&hasher->sha, hasher->pending, hasher->used);
	SHA256_Final(digest, &hasher->sha);
	for (int k = 0; k < 8; k++)
		hash = hash << 8 | digest[k];
	return hash;
}

void
canonical_chunk_add(struct rs_chunk_sum *sum, uint64_t row_hash)
{
	sum->rows++;
	sum->sum += row_hash; /* unsigned: wraps mod 2^64 */
}

void
canonical_chunk_merge(struct rs_chunk_sum *sum, const struct rs_chunk_sum *part)
{
	sum->rows += part->rows;
	sum->sum += part->sum;
}

bool
canonical_chunk_equal(const struct rs_chunk_sum *a,
                      const struct rs_chunk_sum *b)
{
	return a->rows == b->rows && a->sum == b->sum;
}
