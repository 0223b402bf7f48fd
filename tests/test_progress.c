/*
 * Unit tests of src/common/progress.c: a message printed while a bar is
 * drawn on a terminal starts on a clean line (progress_clear erases the
 * bar, which comes back below the message at the next progress_add), and
 * progress_clear writes nothing when no bar is drawn.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/progress.h"

#define CLEAR "\r\033[K"

/* Run FN with standard error sent to a file; its bytes into OUT. */
static void
capture_stderr(void (*fn)(void), char *out, size_t size)
{
	char path[] = "/tmp/test_progress_XXXXXX";
	int fd = mkstemp(path);
	int saved = dup(STDERR_FILENO);
	FILE *f;
	size_t n;

	assert_true(fd >= 0 && saved >= 0);
	fflush(stderr);
	assert_true(dup2(fd, STDERR_FILENO) >= 0);
	fn();
	fflush(stderr);
	assert_true(dup2(saved, STDERR_FILENO) >= 0);
	close(saved);
	close(fd);
	f = fopen(path, "rb");
	assert_non_null(f);
	n = fread(out, 1, size - 1, f);
	out[n] = '\0';
	fclose(f);
	unlink(path);
}

static size_t
count(const char *haystack, const char *needle)
{
	size_t n = 0;

	for (const char *p = strstr(haystack, needle); p != NULL;
	     p = strstr(p + 1, needle))
		n++;
	return n;
}

static void
bar_then_message(void)
{
	struct rs_progress p = {0};

	progress_start(&p, "copy", 100);
	p.tty = 1;        /* as on a terminal */
	p.printed_ns = 0; /* draw at the first add */
	progress_add(&p, 10);
	progress_clear();
	fputs("  s0: copy waits\n", stderr);
	progress_clear(); /* no bar now: nothing to erase */
	progress_add(&p, 10);
	progress_finish(&p);
}

static void
test_clear_before_a_message(void **state)
{
	char out[4096];
	const char *message;

	(void)state;
	capture_stderr(bar_then_message, out, sizeof(out));
	/* The bar, erased before the message; drawn again after it. */
	assert_true(strncmp(out, CLEAR "copy [", strlen(CLEAR "copy [")) == 0);
	message = strstr(out, "left" CLEAR "  s0: copy waits\n");
	assert_non_null(message);
	message += strlen("left" CLEAR "  s0: copy waits\n");
	assert_true(strncmp(message, CLEAR "copy [", strlen(CLEAR "copy [")) ==
	            0);
	/* Drawn twice, cleared once between, and once by finish. */
	assert_int_equal(count(out, CLEAR), 4);
	assert_non_null(strstr(out, CLEAR "copy: 20 rows in "));
}

static void
no_bar(void)
{
	struct rs_progress p = {0};

	progress_start(&p, "copy", 100);
	p.tty = 0; /* lines, not a bar: nothing to erase */
	p.printed_ns = 0;
	progress_add(&p, 10);
	progress_clear();
	fputs("message\n", stderr);
}

static void
test_nothing_to_clear(void **state)
{
	char out[4096];

	(void)state;
	capture_stderr(no_bar, out, sizeof(out));
	assert_null(strstr(out, CLEAR));
	assert_non_null(strstr(out, " left\nmessage\n"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clear_before_a_message),
		cmocka_unit_test(test_nothing_to_clear),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
