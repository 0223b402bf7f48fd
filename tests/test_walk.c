/*
 * Unit tests of the key form the journal keeps (src/engine/walk.c,
 * walk_key_json and walk_key_from_json): every primary key a walk
 * checkpoints must come back byte for byte when a run resumes, or the
 * run cannot go on past that chunk.  Text with a NUL byte (which SQLite
 * TEXT and MariaDB VARCHAR hold), bytes that are not UTF-8, empty and
 * multi-column keys.  (A primary key holds no NULL.)
 *
 * And the writes a walk leaves in flight (walk_defer, walk_settle,
 * walk_settle_for): finished oldest first, never two on one connection,
 * never more than WALK_IN_FLIGHT.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/walk.h"

/* VALUES (N) through the journal's JSON and back: the same values. */
static void
round_trip(const struct rs_value *values, int n)
{
	struct rs_value back[16];
	struct rs_err err = {0};
	char *bytes = NULL, *json = walk_key_json(values, n);

	assert_non_null(json);
	assert_int_equal(walk_key_from_json(json, n, back, &bytes, &err), 0);
	for (int i = 0; i < n; i++) {
		assert_non_null(back[i].text);
		assert_int_equal(back[i].len, values[i].len);
		assert_memory_equal(back[i].text, values[i].text,
		                    values[i].len);
	}
	free(bytes);
	free(json);
}

static void
test_text_keys(void **state)
{
	const struct rs_value plain[] = {{"cliente:42", 10}},
			      accents[] = {{"Zo\xc3\xab \xf0\x9f\x99\x82", 8}},
			      empty[] = {{"", 0}},
			      quotes[] = {{"a\"b\\c\n", 6}};

	(void)state;
	round_trip(plain, 1);
	round_trip(accents, 1);
	round_trip(empty, 1);
	round_trip(quotes, 1);
}

/* A NUL byte is valid UTF-8: the key is a JSON string with \u0000, which
 * the journal must read back (it once refused it, and a run whose chunk
 * ended on such a key could not resume). */
static void
test_nul_in_text(void **state)
{
	const struct rs_value middle[] = {{"k04\0z", 5}}, ends[] = {{"\0", 1}},
			      composite[] = {{"eu", 2}, {"a\0b\0", 4}};
	char *json = walk_key_json(middle, 1);

	(void)state;
	assert_non_null(json);
	assert_string_equal(json, "[\"k04\\u0000z\"]");
	free(json);
	round_trip(middle, 1);
	round_trip(ends, 1);
	round_trip(composite, 2);
}

static void
test_bytes(void **state)
{
	const struct rs_value blob[] = {{"\xff\x00\xfe", 3}},
			      mixed[] = {{"\x80", 1}, {"7", 1}};
	char *json = walk_key_json(blob, 1);

	(void)state;
	assert_non_null(json);
	assert_string_equal(json, "[{\"hex\":\"ff00fe\"}]");
	free(json);
	round_trip(blob, 1);
	round_trip(mixed, 2);
}

/* A text that is not a key of N values is an error, not a guess. */
static void
test_not_a_key(void **state)
{
	struct rs_value back[16];
	struct rs_err err = {0};
	char *bytes = NULL;

	(void)state;
	assert_int_equal(walk_key_from_json("[\"a\"]", 2, back, &bytes, &err),
	                 RS_EIO);
	assert_null(bytes);
	assert_int_equal(walk_key_from_json("not json", 1, back, &bytes, &err),
	                 RS_EIO);
	assert_int_equal(
		walk_key_from_json("[{\"hex\":\"f\"}]", 1, back, &bytes, &err),
		RS_EIO);
}

/* A write in flight that notes when it is finished and released. */
struct fake_write {
	char name;
	char *log; /* the names of the writes finished, in order */
	int released;
	int fails;
};

static int
fake_finish(void *ctx, struct rs_err *err)
{
	struct fake_write *w = ctx;

	strncat(w->log, &w->name, 1);
	return w->fails ? rs_err_set(err, RS_EQUERY, "write %c failed", w->name)
	                : 0;
}

static void
fake_release(void *ctx)
{
	((struct fake_write *)ctx)->released++;
}

/* A connection, only ever compared. */
static const struct rs_backend *
conn(const void *p)
{
	return (const struct rs_backend *)p;
}

static void
defer(struct rs_walk *walk, struct fake_write *w, const void *on)
{
	struct walk_tail tail = {conn(on), fake_finish, fake_release, w};
	struct rs_err err = {0};

	assert_int_equal(walk_defer(walk, &tail, &err), 0);
}

static void
test_in_flight(void **state)
{
	static const char x = 'x', y = 'y'; /* two connections */
	char log[16] = "";
	struct fake_write a = {'a', log, 0, 0}, b = {'b', log, 0, 0},
			  c = {'c', log, 0, 0}, d = {'d', log, 0, 0};
	struct rs_walk walk = {0};
	struct rs_err err = {0};

	(void)state;
	/* One on x: a write on y goes beside it, one on x waits for it. */
	defer(&walk, &a, &x);
	assert_int_equal(walk_settle_for(&walk, conn(&y), &err), 0);
	assert_string_equal(log, "");
	defer(&walk, &b, &y);
	assert_int_equal(walk_settle_for(&walk, conn(&x), &err), 0);
	assert_string_equal(log, "a");
	assert_int_equal(a.released, 1);
	/* Two in flight: a third write waits for the older, on either. */
	defer(&walk, &c, &x);
	assert_int_equal(walk_settle_for(&walk, conn(&y), &err), 0);
	assert_string_equal(log, "ab");
	/* More than WALK_IN_FLIGHT is a bug: refused, and finished. */
	defer(&walk, &d, &y);
	{
		struct fake_write e = {'e', log, 0, 0};
		struct walk_tail tail = {conn(&x), fake_finish, fake_release,
		                         &e};

		assert_int_equal(walk_defer(&walk, &tail, &err), RS_EINTERNAL);
		assert_string_equal(log, "abe");
		assert_int_equal(e.released, 1);
	}
	/* walk_settle finishes every one, oldest first. */
	assert_int_equal(walk_settle(&walk, &err), 0);
	assert_string_equal(log, "abecd");
	assert_null(walk.pending);
	assert_int_equal(a.released + b.released + c.released + d.released, 4);
	/* One in flight, on x: another write on x waits for it, though a
	 * second one would fit. */
	{
		struct fake_write f = {'f', log, 0, 0};

		defer(&walk, &f, &x);
		assert_int_equal(walk_settle_for(&walk, conn(&x), &err), 0);
		assert_string_equal(log, "abecdf");
		assert_null(walk.pending);
	}
}

/* A write that fails fails the settle; the ones after it are still
 * waited for and released. */
static void
test_in_flight_failure(void **state)
{
	static const char x = 'x', y = 'y';
	char log[16] = "";
	struct fake_write a = {'a', log, 0, 1}, b = {'b', log, 0, 0};
	struct rs_walk walk = {0};
	struct rs_err err = {0};

	(void)state;
	defer(&walk, &a, &x);
	defer(&walk, &b, &y);
	assert_int_equal(walk_settle(&walk, &err), RS_EQUERY);
	assert_string_equal(err.message, "write a failed");
	assert_string_equal(log, "ab");
	assert_int_equal(a.released + b.released, 2);
	assert_null(walk.pending);
	/* The same through walk_settle_for: the younger write is waited for
	 * there and then, not left for a later settle that would record its
	 * chunk done after the older one failed. */
	{
		struct fake_write c = {'c', log, 0, 1}, d = {'d', log, 0, 0};

		defer(&walk, &c, &x);
		defer(&walk, &d, &y);
		assert_int_equal(walk_settle_for(&walk, conn(&x), &err),
		                 RS_EQUERY);
		assert_string_equal(err.message, "write c failed");
		assert_string_equal(log, "abcd");
		assert_null(walk.pending);
		assert_int_equal(c.released + d.released, 2);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text_keys),
		cmocka_unit_test(test_nul_in_text),
		cmocka_unit_test(test_bytes),
		cmocka_unit_test(test_not_a_key),
		cmocka_unit_test(test_in_flight),
		cmocka_unit_test(test_in_flight_failure),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
