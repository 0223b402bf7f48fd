/*
 * What the files of the canonical form share with one another, and with
 * nobody else: canonical.c (the value dispatch, numbers, booleans, bytes,
 * uuids, the buffer, row hashes and chunk sums), canonical_kind.c (kind
 * names, type names → kinds), canonical_time.c (dates, times, timestamps)
 * and canonical_json.c (JSON).  Code outside src/backend/canonical*.c
 * uses backend/canonical.h, whose rules these functions implement.
 *
 * A reader (canon_read_… here, read_… in canonical.c) appends to OUT the
 * canonical text of one value S of LEN bytes (need not be NUL-terminated;
 * may hold NULs) and returns 0; or RS_ENOMEM with ERR filled; or RS_EVALUE
 * with *WHY set to a static phrase saying what is wrong ("month out of
 * range") and ERR untouched.  On error a reader may leave part of its text
 * appended: canonical_value, the only caller from outside, truncates OUT
 * back to where it was and turns RS_EVALUE into the one message that
 * quotes the value, its kind and its source.  Readers allocate nothing
 * that outlives the call but OUT's growth, which OUT's owner frees with
 * canonical_buf_free; *WHY is never freed.  No reader keeps state between
 * calls: all are reentrant.
 *
 * Functions with external linkage are prefixed canon_ so that they cannot
 * clash with the rest of reshard_core; the static inline ones keep the
 * short names they had when all of this was one file.
 */
#ifndef RS_CANONICAL_IMPL_H
#define RS_CANONICAL_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "backend/canonical.h"
#include "common/err.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- Shared by all: small readers and the buffer ---------------------- */

/* A cursor over one value's text: S[I, LEN) is what is left to read. */
struct cursor {
	const char *s;
	size_t len;
	size_t i;
};

static inline bool
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Step over CH when it is the next byte. */
static inline bool
cursor_take(struct cursor *c, char ch)
{
	if (c->i < c->len && c->s[c->i] == ch) {
		c->i++;
		return true;
	}
	return false;
}

/* Append the byte C to BUF.  Returns 0, or RS_ENOMEM with BUF unchanged. */
static inline int
buf_putc(struct rs_canon_buf *buf, char c, struct rs_err *err)
{
	return canonical_buf_append(buf, &c, 1, err);
}

/* Append the string S to BUF.  Returns 0, or RS_ENOMEM with BUF
 * unchanged. */
static inline int
buf_puts(struct rs_canon_buf *buf, const char *s, struct rs_err *err)
{
	return canonical_buf_append(buf, s, strlen(s), err);
}

/* ---- canonical.c ------------------------------------------------------ */

/* Whether S (LEN bytes) is WORD, ignoring ASCII case.  WORD is lower
 * case. */
bool canon_equals_word(const char *s, size_t len, const char *word);

/* A number as written: sign, digits around the point, exponent.  The
 * digits point into the text read, which must outlive the struct. */
struct decimal_text {
	bool negative;
	const char *int_digits; /* before the point */
	size_t n_int;
	const char *frac_digits; /* after the point */
	size_t n_frac;
	long long exponent; /* clamped to ±10^12 */
};

/* Read [+-] digits [. digits] [(e|E) [+-] digits], at least one digit
 * before the exponent ("5." and ".5" are numbers), into *D.  Returns false
 * when S (LEN bytes) is not such a number.  Allocates nothing. */
bool canon_decimal_parse(const char *s, size_t len, struct decimal_text *d);

/* Append D in the canonical decimal form (canonical.h): a reader, with
 * RS_EVALUE when D is beyond PostgreSQL numeric's range. */
int canon_decimal_write(const struct decimal_text *d, struct rs_canon_buf *out,
                        struct rs_err *err, const char **why);

/* ---- canonical_time.c ------------------------------------------------- */

/* Readers of a date, a time of day, and a timestamp with (WITH_ZONE) or
 * without time zone, as SRC writes them (canonical.h). */
int canon_read_date(enum rs_canon_src src, const char *s, size_t len,
                    struct rs_canon_buf *out, struct rs_err *err,
                    const char **why);
int canon_read_time(enum rs_canon_src src, const char *s, size_t len,
                    struct rs_canon_buf *out, struct rs_err *err,
                    const char **why);
int canon_read_timestamp(enum rs_canon_src src, bool with_zone, const char *s,
                         size_t len, struct rs_canon_buf *out,
                         struct rs_err *err, const char **why);

/* ---- canonical_json.c ------------------------------------------------- */

/* The reader of a JSON document (any source: the text as stored). */
int canon_read_json(const char *s, size_t len, struct rs_canon_buf *out,
                    struct rs_err *err, const char **why);

#endif
