/*
 * The growable string of strbuf.h.
 */
#include "common/strbuf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
strbuf_reserve(struct rs_strbuf *b, size_t extra)
{
	size_t need;
	char *more;

	if (b->failed)
		return -1;
	if (extra > SIZE_MAX - b->len - 1 ||
	    b->len + extra + 1 > SIZE_MAX / 2) {
		b->failed = 1;
		return -1;
	}
	need = b->len + extra + 1;
	if (need <= b->cap && b->text != NULL)
		return 0;
	if (need < b->cap * 2)
		need = b->cap * 2;
	if (need < 256)
		need = 256;
	more = realloc(b->text, need);
	if (more == NULL) {
		b->failed = 1;
		return -1;
	}
	b->text = more;
	b->cap = need;
	return 0;
}

void
strbuf_add(struct rs_strbuf *b, const char *bytes, size_t n)
{
	if (strbuf_reserve(b, n) != 0)
		return;
	if (n > 0)
		memcpy(b->text + b->len, bytes, n);
	b->len += n;
	b->text[b->len] = '\0';
}

void
strbuf_str(struct rs_strbuf *b, const char *s)
{
	strbuf_add(b, s, strlen(s));
}

void
strbuf_vprintf(struct rs_strbuf *b, const char *fmt, va_list ap)
{
	va_list again;
	int n;

	if (b->failed)
		return;
	va_copy(again, ap);
	n = vsnprintf(NULL, 0, fmt, ap);
	if (n < 0) {
		b->failed = 1;
	} else if (strbuf_reserve(b, (size_t)n) == 0) {
		/* AGAIN was va_copy'd above; clang 14's analyzer loses a
		 * va_copy of a parameter. */
		// NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized)
		vsnprintf(b->text + b->len, (size_t)n + 1, fmt, again);
		b->len += (size_t)n;
	}
	va_end(again);
}

void
strbuf_printf(struct rs_strbuf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	strbuf_vprintf(b, fmt, ap);
	va_end(ap);
}

void
strbuf_quoted(struct rs_strbuf *b, const char *name, char quote)
{
	strbuf_add(b, &quote, 1);
	for (const char *p = name; *p != '\0';) {
		const char *next = strchr(p, quote);
		size_t n = next != NULL ? (size_t)(next - p) : strlen(p);

		strbuf_add(b, p, n);
		if (next == NULL)
			break;
		strbuf_add(b, &quote, 1);
		strbuf_add(b, &quote, 1);
		p = next + 1;
	}
	strbuf_add(b, &quote, 1);
}

char *
strbuf_finish(struct rs_strbuf *b)
{
	char *text;

	if (b->text == NULL)
		strbuf_add(b, "", 0); /* nothing appended: an empty string */
	text = b->failed ? NULL : b->text;

	if (b->failed)
		free(b->text);
	*b = (struct rs_strbuf){0};
	return text;
}

void
strbuf_clear(struct rs_strbuf *b)
{
	free(b->text);
	*b = (struct rs_strbuf){0};
}
