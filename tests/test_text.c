/*
 * Unit tests of the key escaping in src/common/text.c: the quick test of
 * whether a key needs escaping against a byte-by-byte reference at every
 * length and position (its word-at-a-time loads have edges at 3, 4, 8 and
 * every multiple of 8), the escaped form of every byte, keys cut for
 * messages, times in ISO-8601, and integers in decimal against printf.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/text.h"

/* The documented rule, byte by byte. */
static int
needs_escape_reference(const char *key, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)key[i];

		if (c < 0x20 || c == '\\' || c == 0x7f)
			return 1;
	}
	return 0;
}

static void
test_needs_escape_every_byte_at_every_position(void **state)
{
	char key[48];

	(void)state;
	/* A key of plain bytes around the byte under test, near every edge
	 * of the word loads; the byte itself takes every value. */
	for (size_t len = 0; len <= 40; len++) {
		memset(key, 'a', sizeof(key));
		assert_int_equal(text_key_needs_escape(key, len), 0);
		for (size_t at = 0; at < len; at++)
			for (int c = 0; c < 256; c++) {
				key[at] = (char)c;
				if (text_key_needs_escape(key, len) !=
				    needs_escape_reference(key, len))
					fail_msg("byte 0x%02x at %zu of %zu", c,
					         at, len);
				key[at] = 'a';
			}
	}
}

static void
test_needs_escape_looks_only_at_the_key(void **state)
{
	/* Bytes that need escaping just past the key do not count. */
	const char text[] = "abcdefghijklmnopq\t\\\x01";

	(void)state;
	for (size_t len = 0; len <= 17; len++)
		assert_int_equal(text_key_needs_escape(text, len), 0);
	assert_int_equal(text_key_needs_escape(text, 18), 1);
}

static void
test_needs_escape_high_bytes_are_plain(void **state)
{
	/* UTF-8 and any byte from 0x80 stays as it is, also when many are
	 * in one word (a borrow in the word test must not leak). */
	const char utf8[] = "K\xc3\xb6ln-\xe2\x82\xac-\xf0\x9f\x98\x80-"
			    "\x80\x81\x9f\xa0\xff\xfe";
	char mixed[16];

	(void)state;
	assert_int_equal(text_key_needs_escape(utf8, strlen(utf8)), 0);
	for (int c = 0x80; c < 256; c++) {
		memset(mixed, c, sizeof(mixed));
		assert_int_equal(text_key_needs_escape(mixed, sizeof(mixed)),
		                 0);
		mixed[7] = 0x1f;
		assert_int_equal(text_key_needs_escape(mixed, sizeof(mixed)),
		                 1);
	}
}

static void
test_needs_escape_random_keys(void **state)
{
	uint64_t x = 0x9e3779b97f4a7c15u;
	char key[64];

	(void)state;
	/* Mostly plain bytes either side of the ones that need escaping
	 * (0x5b, 0x5d, 0x7e, 0x80, 0x20), now and then one that does. */
	for (int round = 0; round < 200000; round++) {
		size_t len = (size_t)(round % 65);

		for (size_t i = 0; i < len; i++) {
			static const unsigned char pick[] = {
				0x20, 0x21, 0x5b, 0x5d, 0x7e, 0x80,
				0x81, 0xff, 0x30, 0x61, 0xa0, 0xdf};

			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			key[i] = (char)((x >> 32) % 1000 == 0
			                        ? (unsigned char)(x % 0x20)
			                        : pick[x % sizeof(pick)]);
		}
		if (text_key_needs_escape(key, len) !=
		    needs_escape_reference(key, len))
			fail_msg("round %d, length %zu", round, len);
	}
}

/* text_escape_key of KEY (LEN bytes) must be WANT. */
static void
expect_escaped(const char *key, size_t len, const char *want)
{
	char out[256];
	size_t n = text_escape_key(key, len, out);

	assert_true(n <= TEXT_ESCAPE_GROWTH * len);
	out[n] = '\0';
	assert_string_equal(out, want);
}

static void
test_escape_forms(void **state)
{
	(void)state;
	expect_escaped("plain-key_42", 12, "plain-key_42");
	expect_escaped("a\tb", 3, "a\\tb");
	expect_escaped("a\nb\rc", 5, "a\\nb\\rc");
	expect_escaped("back\\slash", 10, "back\\\\slash");
	expect_escaped("\b\f\v", 3, "\\b\\f\\v");
	expect_escaped("nul\0end", 7, "nul\\x00end");
	expect_escaped("esc\x1b[31m", 8, "esc\\x1b[31m");
	expect_escaped("del\x7f", 4, "del\\x7f");
	expect_escaped("\x1f\x01", 2, "\\x1f\\x01");
	expect_escaped("K\xc3\xb6ln", 5, "K\xc3\xb6ln");
	expect_escaped("", 0, "");
}

static void
test_escape_every_byte(void **state)
{
	(void)state;
	for (int c = 0; c < 256; c++) {
		char key = (char)c, out[8], want[8];
		size_t n = text_escape_key(&key, 1, out);

		out[n] = '\0';
		switch (c) {
		case '\t':
			snprintf(want, sizeof(want), "%s", "\\t");
			break;
		case '\n':
			snprintf(want, sizeof(want), "%s", "\\n");
			break;
		case '\r':
			snprintf(want, sizeof(want), "%s", "\\r");
			break;
		case '\b':
			snprintf(want, sizeof(want), "%s", "\\b");
			break;
		case '\f':
			snprintf(want, sizeof(want), "%s", "\\f");
			break;
		case '\v':
			snprintf(want, sizeof(want), "%s", "\\v");
			break;
		case '\\':
			snprintf(want, sizeof(want), "%s", "\\\\");
			break;
		default:
			if (c < 0x20 || c == 0x7f)
				snprintf(want, sizeof(want), "\\x%02x", c);
			else
				snprintf(want, sizeof(want), "%c", c);
		}
		assert_string_equal(out, want);
		/* Escaped iff the quick test says so. */
		assert_int_equal(n != 1, text_key_needs_escape(&key, 1));
	}
}

static void
test_key_shown_fits_or_is_cut_after_a_whole_escape(void **state)
{
	char buf[12];
	char big[1000];

	(void)state;
	/* Fits exactly: 11 bytes and the NUL. */
	assert_string_equal(text_key_shown("0123456789a", 11, buf, sizeof(buf)),
	                    "0123456789a");
	/* One more byte: cut to 8 and "...". */
	assert_string_equal(
		text_key_shown("0123456789ab", 12, buf, sizeof(buf)),
		"01234567...");
	/* An escape is never cut in half. */
	assert_string_equal(
		text_key_shown("0123456\x01xyz", 11, buf, sizeof(buf)),
		"0123456...");
	assert_string_equal(text_key_shown("a\tb", 3, buf, sizeof(buf)),
	                    "a\\tb");
	assert_string_equal(text_key_shown("", 0, buf, sizeof(buf)), "");
	memset(big, '\n', sizeof(big));
	text_key_shown(big, sizeof(big), buf, sizeof(buf));
	assert_string_equal(buf, "\\n\\n\\n\\n...");
	{
		char shown[TEXT_KEY_SHOWN_SIZE];

		text_key_shown(big, sizeof(big), shown, sizeof(shown));
		assert_int_equal(strlen(shown), TEXT_KEY_SHOWN_SIZE - 1);
		assert_string_equal(shown + strlen(shown) - 5, "\\n...");
	}
}

/* Every byte value, as two lowercase hex digits that read back. */
static void
test_hex_encode_every_byte(void **state)
{
	unsigned char bytes[256];
	char hex[513];

	(void)state;
	for (int i = 0; i < 256; i++)
		bytes[i] = (unsigned char)i;
	memset(hex, '#', sizeof(hex));
	assert_ptr_equal(text_hex_encode(bytes, 256, hex), hex);
	assert_int_equal(hex[512], '#'); /* no NUL written */
	assert_memory_equal(hex, "00010203", 8);
	assert_memory_equal(hex + 2 * 0xab, "ab", 2);
	assert_memory_equal(hex + 510, "ff", 2);
	for (int i = 0; i < 256; i++)
		assert_int_equal(text_hex_digit(hex[2 * i]) * 16 +
		                         text_hex_digit(hex[2 * i + 1]),
		                 i);
}

/* Times as status prints them in JSON. */
static void
test_iso_time(void **state)
{
	char buf[TEXT_ISO_TIME_SIZE];

	(void)state;
	assert_string_equal(text_iso_time(0, buf, sizeof(buf)),
	                    "1970-01-01T00:00:00.000Z");
	assert_string_equal(text_iso_time(1796396725102LL, buf, sizeof(buf)),
	                    "2026-12-04T15:05:25.102Z");
	assert_string_equal(text_iso_time(999, buf, sizeof(buf)),
	                    "1970-01-01T00:00:00.999Z");
	assert_string_equal(text_iso_time(-1, buf, sizeof(buf)),
	                    "1969-12-31T23:59:59.999Z");
	/* Too small a buffer gives no time rather than a cut one. */
	assert_string_equal(text_iso_time(0, buf, 20), "");
}

/* Integers as printf's %lld writes them: the edges of every digit count,
 * both ends of the range, and a million pseudo-random values of every
 * magnitude. */
static void
test_int64_as_printf(void **state)
{
	const int64_t edges[] = {0,
	                         1,
	                         -1,
	                         9,
	                         10,
	                         99,
	                         100,
	                         INT64_MAX,
	                         INT64_MIN,
	                         INT64_MIN + 1,
	                         INT64_MAX - 1};
	char mine[TEXT_INT64_SIZE + 1], theirs[32];
	uint64_t x = 0x9e3779b97f4a7c15ULL, p = 1;

	(void)state;
	for (int i = 0; i < 19; i++, p *= 10)
		for (int d = -1; d <= 0; d++)
			for (int sign = -1; sign <= 1; sign += 2) {
				int64_t v = sign * ((int64_t)p + d);
				size_t n = text_int64(v, mine);

				mine[n] = '\0';
				snprintf(theirs, sizeof(theirs), "%lld",
				         (long long)v);
				assert_string_equal(mine, theirs);
			}
	for (size_t i = 0; i < sizeof(edges) / sizeof(*edges); i++) {
		size_t n = text_int64(edges[i], mine);

		mine[n] = '\0';
		snprintf(theirs, sizeof(theirs), "%lld", (long long)edges[i]);
		assert_string_equal(mine, theirs);
	}
	for (int i = 0; i < 1000000; i++) {
		int64_t v;
		size_t n;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		v = (int64_t)(x >> (x % 64)); /* every magnitude */
		if ((x & 1) && v != INT64_MIN)
			v = -v;
		n = text_int64(v, mine);
		mine[n] = '\0';
		snprintf(theirs, sizeof(theirs), "%lld", (long long)v);
		assert_string_equal(mine, theirs);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
			test_needs_escape_every_byte_at_every_position),
		cmocka_unit_test(test_needs_escape_looks_only_at_the_key),
		cmocka_unit_test(test_needs_escape_high_bytes_are_plain),
		cmocka_unit_test(test_needs_escape_random_keys),
		cmocka_unit_test(test_escape_forms),
		cmocka_unit_test(test_escape_every_byte),
		cmocka_unit_test(test_hex_encode_every_byte),
		cmocka_unit_test(
			test_key_shown_fits_or_is_cut_after_a_whole_escape),
		cmocka_unit_test(test_iso_time),
		cmocka_unit_test(test_int64_as_printf),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
