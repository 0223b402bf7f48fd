/*
 * Unit tests of src/common/strbuf.c: appends that grow the buffer, bytes
 * with NULs, quoting of identifiers (quotes doubled, names that look like
 * SQL), printf-style appends, and handing the text over.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/strbuf.h"

static void printf_to(struct rs_strbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
printf_to(struct rs_strbuf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	strbuf_vprintf(b, fmt, ap);
	va_end(ap);
}

static void
test_appends_grow(void **state)
{
	struct rs_strbuf b = {0};
	char *text;

	(void)state;
	strbuf_str(&b, "SELECT ");
	for (int i = 0; i < 1000; i++) /* past several reallocations */
		strbuf_add(&b, "x, ", 3);
	strbuf_add(&b, "a\0b", 3);
	assert_int_equal(b.len, 7 + 3000 + 3);
	assert_memory_equal(b.text + b.len - 3, "a\0b", 3);
	assert_int_equal(b.text[b.len], '\0');
	assert_true(b.cap > b.len);
	assert_false(b.failed);
	text = strbuf_finish(&b);
	assert_non_null(text);
	assert_memory_equal(text, "SELECT x, x, ", 13);
	assert_null(b.text);
	assert_int_equal(b.len, 0);
	free(text);
}

static void
test_quoted(void **state)
{
	struct rs_strbuf b = {0};

	(void)state;
	strbuf_quoted(&b, "orders", '"');
	strbuf_str(&b, " ");
	strbuf_quoted(&b, "a\"b", '"');
	strbuf_str(&b, " ");
	strbuf_quoted(&b, "\"\"", '"');
	strbuf_str(&b, " ");
	strbuf_quoted(&b, "x`y", '`');
	strbuf_str(&b, " ");
	strbuf_quoted(&b, "t; drop table z", '`');
	strbuf_str(&b, " ");
	strbuf_quoted(&b, "", '"');
	assert_string_equal(b.text, "\"orders\" \"a\"\"b\" \"\"\"\"\"\" "
	                            "`x``y` `t; drop table z` \"\"");
	strbuf_clear(&b);
	assert_null(b.text);
	strbuf_clear(&b); /* an empty buffer: nothing to do */
}

static void
test_vprintf(void **state)
{
	struct rs_strbuf b = {0};
	char big[600];

	(void)state;
	memset(big, 'q', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	printf_to(&b, "%s.map = %s", "from", "ring");
	printf_to(&b, "[%d]", 42);
	assert_string_equal(b.text, "from.map = ring[42]");
	printf_to(&b, "%s", big); /* longer than the first allocation */
	assert_int_equal(b.len, strlen("from.map = ring[42]") + 599);
	assert_int_equal(b.text[b.len], '\0');
	strbuf_clear(&b);
}

static void
test_reserve_for_a_driver(void **state)
{
	struct rs_strbuf b = {0};

	(void)state;
	strbuf_str(&b, "'");
	assert_int_equal(strbuf_reserve(&b, 500), 0);
	assert_true(b.cap >= b.len + 501);
	memset(b.text + b.len, 'e', 500); /* as an escaping function would */
	b.len += 500;
	b.text[b.len] = '\0';
	strbuf_str(&b, "'");
	assert_int_equal(b.len, 502);
	assert_int_equal(b.text[501], '\'');
	strbuf_clear(&b);
}

static void
test_finish_empty(void **state)
{
	struct rs_strbuf b = {0};
	char *text;

	(void)state;
	text = strbuf_finish(&b); /* nothing appended: "", not a failure */
	assert_non_null(text);
	assert_string_equal(text, "");
	free(text);
}

static void
test_failure_is_sticky(void **state)
{
	struct rs_strbuf b = {0};

	(void)state;
	strbuf_str(&b, "kept");
	b.failed = 1; /* as after an allocation failure */
	strbuf_str(&b, " dropped");
	printf_to(&b, "%d", 7);
	assert_int_equal(strbuf_reserve(&b, 1), -1);
	assert_int_equal(b.len, 4);
	b.failed = 0;
	assert_int_equal(strbuf_reserve(&b, SIZE_MAX - 2), -1); /* no wrap */
	assert_true(b.failed);
	assert_null(strbuf_finish(&b)); /* the text is freed */
	assert_null(b.text);
	assert_false(b.failed);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_appends_grow),
		cmocka_unit_test(test_quoted),
		cmocka_unit_test(test_vprintf),
		cmocka_unit_test(test_reserve_for_a_driver),
		cmocka_unit_test(test_finish_empty),
		cmocka_unit_test(test_failure_is_sticky),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
