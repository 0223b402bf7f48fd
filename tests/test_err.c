/*
 * Unit tests of src/common/err.c: rs_err_append keeps what it appends
 * whole, cutting the message before it at the start of a character with
 * an ellipsis when both do not fit, and appends nothing that would leave
 * less than half the message to the cause.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"

#define ELLIPSIS "\u2026"

static const char hint[] = "; once that is fixed, `reshard run p.cfg` "
			   "resumes at step copy";

/* Whether TEXT is valid UTF-8 (no sequence cut, none overlong checked). */
static int
utf8_whole(const char *text)
{
	const unsigned char *p = (const unsigned char *)text;

	while (*p != 0) {
		int more = *p < 0x80             ? 0
		           : (*p & 0xE0) == 0xC0 ? 1
		           : (*p & 0xF0) == 0xE0 ? 2
		           : (*p & 0xF8) == 0xF0 ? 3
		                                 : -1;

		if (more < 0)
			return 0;
		for (p++; more > 0; more--, p++)
			if ((*p & 0xC0) != 0x80)
				return 0;
	}
	return 1;
}

static void
test_append_fits(void **state)
{
	struct rs_err err;

	(void)state;
	rs_err_set(&err, RS_EQUERY, "could not write rows: disk full");
	assert_int_equal(rs_err_append(&err, hint), 1);
	assert_string_equal(err.message,
	                    "could not write rows: disk full; once that is "
	                    "fixed, `reshard run p.cfg` resumes at step copy");
	assert_int_equal(err.code, RS_EQUERY);
	assert_int_equal(rs_err_append(NULL, hint), 0);
}

/* A cause of every length up to the full message, of one-, two-, three-
 * and four-byte characters: the result always ends with the hint whole,
 * fits, is valid UTF-8, and keeps the cause's start (all of it when it
 * fits, else up to an ellipsis). */
static void
test_append_cuts_the_cause_at_a_character(void **state)
{
	static const char *const chars[] = {"a", "\xc3\xa9", "\xe2\x82\xac",
	                                    "\xf0\x9f\x98\x80"};
	struct rs_err err;
	char cause[sizeof(err.message)];

	(void)state;
	for (size_t c = 0; c < sizeof(chars) / sizeof(chars[0]); c++)
		for (size_t len = 0; len < sizeof(cause) - 4; len++) {
			size_t n = 0, got, kept;

			while (n + strlen(chars[c]) <= len) {
				memcpy(cause + n, chars[c], strlen(chars[c]));
				n += strlen(chars[c]);
			}
			cause[n] = '\0';
			rs_err_set(&err, RS_EQUERY, "%s", cause);
			assert_int_equal(rs_err_append(&err, hint), 1);
			got = strlen(err.message);
			assert_true(got < sizeof(err.message));
			assert_true(got >= sizeof(hint) - 1);
			assert_string_equal(
				err.message + got - (sizeof(hint) - 1), hint);
			if (!utf8_whole(err.message))
				fail_msg("char %zu, cause of %zu bytes: cut "
				         "inside a character",
				         c, n);
			kept = got - (sizeof(hint) - 1);
			if (n + sizeof(hint) - 1 < sizeof(err.message)) {
				assert_int_equal(kept, n); /* all of it */
				continue;
			}
			assert_true(kept >= sizeof(ELLIPSIS) - 1);
			kept -= sizeof(ELLIPSIS) - 1;
			assert_memory_equal(err.message + kept, ELLIPSIS,
			                    sizeof(ELLIPSIS) - 1);
			assert_memory_equal(err.message, cause, kept);
			assert_int_equal(kept % strlen(chars[c]), 0);
			/* Cut no more than one character short of the room. */
			assert_true(kept + strlen(chars[c]) + sizeof(ELLIPSIS) -
			                    1 + sizeof(hint) - 1 >=
			            sizeof(err.message) - 1);
		}
}

static void
test_append_too_long(void **state)
{
	struct rs_err err;
	char text[sizeof(err.message) / 2 + 2];

	(void)state;
	memset(text, 'x', sizeof(text) - 1);
	text[sizeof(text) - 1] = '\0';
	rs_err_set(&err, RS_EIO, "the cause");
	assert_int_equal(rs_err_append(&err, text), 0);
	assert_string_equal(err.message, "the cause");
	text[sizeof(text) - 2] = '\0'; /* exactly half */
	assert_int_equal(rs_err_append(&err, text), 1);
	assert_int_equal(strncmp(err.message, "the cause", 9), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_append_fits),
		cmocka_unit_test(test_append_cuts_the_cause_at_a_character),
		cmocka_unit_test(test_append_too_long),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
