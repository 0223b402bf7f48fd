/*
 * Small text helpers shared by messages: the closest known word to a
 * misspelt one, numbers with thousands separators, times in ISO-8601, and
 * keys escaped for a line of output or a message.
 */
#ifndef RS_TEXT_H
#define RS_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* The Levenshtein distance between A and B (bytes). */
size_t text_edit_distance(const char *a, const char *b);

/* The word of WORDS (N of them) closest to WORD, or NULL when none is close
 * enough to be a plausible misspelling (distance above a third of the
 * longer word, at least 2). */
const char *text_closest(const char *word, const char *const *words, size_t n);

/* The value of hex digit C (either case), or -1 when C is not one. */
int text_hex_digit(int c);

/* BYTES (N of them) as 2 * N lowercase hex digits into OUT (no NUL is
 * written).  Returns OUT. */
char *text_hex_encode(const void *bytes, size_t n, char *out);

/* V in decimal ("-42"), as printf's "%lld" writes it, into OUT (at least
 * TEXT_INT64_SIZE bytes; no NUL is written).  Returns the length.  For
 * reads of millions of integer values, where printf or SQLite's own
 * conversion to text cost a tenth of a walk. */
#define TEXT_INT64_SIZE 20
size_t text_int64(int64_t v, char *out);

/* Format V with thousands separators ("12,345") into BUF; returns BUF. */
char *text_thousands(uint64_t v, char *buf, size_t size);

/* MS (Unix milliseconds) as an ISO-8601 UTC time with milliseconds,
 * "2026-12-04T15:15:00.123Z", into BUF (at least TEXT_ISO_TIME_SIZE
 * bytes); returns BUF.  A time gmtime cannot represent, or a BUF too
 * small, gives "" (never a cut time). */
#define TEXT_ISO_TIME_SIZE 32
char *text_iso_time(int64_t ms, char *buf, size_t size);

/*
 * Keys in output and messages are escaped as in PostgreSQL's COPY text
 * format, so that a key cannot break a TAB-separated line and control
 * bytes never reach a terminal: backslash as \\, TAB as \t, newline as
 * \n, carriage return as \r, backspace \b, form feed \f, vertical tab \v,
 * and every other byte below 0x20 and 0x7f (DEL) as \xHH (two lower-case
 * hex digits).  Other bytes, UTF-8 included, stay as they are.  A key
 * without any of these bytes is written unchanged, and COPY … FROM in text
 * format reads an escaped key back to its bytes (a NUL byte aside, which
 * PostgreSQL text cannot hold).
 */

/* At most how much longer escaping makes a key: \xHH for one byte. */
#define TEXT_ESCAPE_GROWTH 4

/* Buffer size for a key quoted in a message (text_key_shown). */
#define TEXT_KEY_SHOWN_SIZE 256

static inline int
text_escape_byte(unsigned char c)
{
	return (c < 0x20) | (c == 0x5c) | (c == 0x7f);
}

#if defined(__SSE2__)
/* 0xff in each byte of V that must be escaped. */
static inline __m128i
text_escape_bytes16(__m128i v)
{
	__m128i below = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);

	return _mm_or_si128(
		below, _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(0x5c)),
	                            _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f))));
}
#endif

/* Whether any of the LEN bytes of KEY must be escaped.  The dry-run asks
 * for every mover: with SSE2 a key of up to 16 bytes takes one 16-byte
 * test of two overlapping loads (keys of 4 to 16 bytes) and no branch on
 * its bytes, reading nothing outside the key. */
static inline int
text_key_needs_escape(const char *key, size_t len)
{
	const unsigned char *p = (const unsigned char *)key;
#if defined(__SSE2__)
	__m128i bad;

	if (len >= 16) {
		bad = text_escape_bytes16(
			_mm_loadu_si128((const __m128i *)(p + len - 16)));
		for (size_t i = 0; i + 16 < len; i += 16)
			bad = _mm_or_si128(bad,
			                   text_escape_bytes16(_mm_loadu_si128(
						   (const __m128i *)(p + i))));
		return _mm_movemask_epi8(bad) != 0;
	}
	if (len >= 8) {
		long long first, last;

		memcpy(&first, p, 8);
		memcpy(&last, p + len - 8, 8);
		bad = text_escape_bytes16(_mm_set_epi64x(first, last));
		return _mm_movemask_epi8(bad) != 0;
	}
	if (len >= 4) {
		int first, last;

		memcpy(&first, p, 4);
		memcpy(&last, p + len - 4, 4);
		bad = text_escape_bytes16(
			_mm_set_epi32(first, last, first, last));
		return _mm_movemask_epi8(bad) != 0;
	}
	if (len > 0)
		return text_escape_byte(p[0]) | text_escape_byte(p[len / 2]) |
		       text_escape_byte(p[len - 1]);
	return 0;
#else
	int bad = 0;

	for (size_t i = 0; i < len; i++)
		bad |= text_escape_byte(p[i]);
	return bad;
#endif
}

/* Write the escaped form of the LEN bytes of KEY to OUT, which has room
 * for at least TEXT_ESCAPE_GROWTH * LEN bytes (no NUL is added).  Returns
 * the bytes written. */
size_t text_escape_key(const char *key, size_t len, char *out);

/* KEY (LEN bytes) escaped for a message into BUF (SIZE bytes, at least
 * 8), NUL-terminated; a key whose escaped form does not fit is cut after a
 * whole escape and ends in "...".  Returns BUF. */
char *text_key_shown(const char *key, size_t len, char *buf, size_t size);

#endif
