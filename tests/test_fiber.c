/*
 * Unit tests of src/common/fiber.c: fibers run to their first wait, are
 * resumed only when what they wait for has happened, interleave in the
 * order their waits end, keep their own stack frames (deep recursion and
 * big locals), and report done.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/fiber.h"

struct worker {
	int id;
	int flag; /* what it waits for: 1 */
	int *log; /* shared: the order events happened in */
	int *n_log;
	int result;
};

static void
worker_main(void *arg)
{
	struct worker *w = arg;

	assert_ptr_not_equal(fiber_current(), NULL);
	assert_ptr_equal(fiber_data(fiber_current()), w);
	w->log[(*w->n_log)++] = w->id; /* started */
	fiber_wait(&w->flag, 1);
	w->log[(*w->n_log)++] = 10 + w->id; /* woken */
	fiber_yield();
	w->log[(*w->n_log)++] = 20 + w->id; /* after a yield */
}

static void
test_waits_and_order(void **state)
{
	int log[16], n_log = 0;
	struct worker w[3];
	struct fiber *f[3];

	(void)state;
	assert_ptr_equal(fiber_current(), NULL);
	for (int i = 0; i < 3; i++) {
		w[i] = (struct worker){.id = i, .log = log, .n_log = &n_log};
		assert_int_equal(fiber_new(worker_main, &w[i], &w[i], &f[i]),
		                 0);
		assert_true(fiber_ready(f[i]));
		fiber_resume(f[i]);
		assert_false(fiber_ready(f[i])); /* waits for its flag */
	}
	assert_int_equal(n_log, 3);
	/* Only the fibers whose flag is set may run, in that order. */
	w[2].flag = 1;
	assert_false(fiber_ready(f[0]));
	assert_true(fiber_ready(f[2]));
	fiber_resume(f[2]);
	assert_int_equal(log[3], 12);
	assert_true(fiber_ready(f[2])); /* it yielded */
	w[0].flag = 1;
	fiber_resume(f[0]);
	fiber_resume(f[2]);
	assert_true(fiber_done(f[2]));
	assert_false(fiber_ready(f[2]));
	fiber_resume(f[0]);
	assert_true(fiber_done(f[0]));
	assert_int_equal(log[4], 10);
	assert_int_equal(log[5], 22);
	assert_int_equal(log[6], 20);
	assert_false(fiber_done(f[1]));
	w[1].flag = 1;
	fiber_resume(f[1]);
	fiber_resume(f[1]);
	assert_true(fiber_done(f[1]));
	assert_int_equal(n_log, 9);
	assert_ptr_equal(fiber_current(), NULL);
	for (int i = 0; i < 3; i++)
		fiber_free(f[i]);
}

/* Recursion with a big frame at each level: the fiber's stack holds it
 * across waits, and so does the main stack's caller. */
static int
deep(int level, int *flag)
{
	char frame[2048];
	int sum;

	memset(frame, level & 0xff, sizeof(frame));
	if (level == 0) {
		fiber_wait(flag, 1);
		return frame[7];
	}
	sum = deep(level - 1, flag);
	return sum + (unsigned char)frame[sizeof(frame) - 1];
}

struct deep_arg {
	int flag;
	int result;
};

static void
deep_main(void *arg)
{
	struct deep_arg *d = arg;

	d->result = deep(100, &d->flag);
}

static void
test_deep_stacks(void **state)
{
	struct deep_arg a = {0}, b = {0};
	struct fiber *fa, *fb;
	int expected = 0;

	(void)state;
	for (int level = 1; level <= 100; level++)
		expected += level & 0xff;
	assert_int_equal(fiber_new(deep_main, &a, NULL, &fa), 0);
	assert_int_equal(fiber_new(deep_main, &b, NULL, &fb), 0);
	fiber_resume(fa);
	fiber_resume(fb); /* both paused 100 frames deep */
	b.flag = 1;
	fiber_resume(fb);
	a.flag = 1;
	fiber_resume(fa);
	assert_true(fiber_done(fa) && fiber_done(fb));
	assert_int_equal(a.result, expected);
	assert_int_equal(b.result, expected);
	fiber_free(fa);
	fiber_free(fb);
	fiber_free(NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_waits_and_order),
		cmocka_unit_test(test_deep_stacks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
