/*
 * A growable NUL-terminated string, for building SQL statements and other
 * text piece by piece.
 *
 * Running out of memory is sticky: the first append that cannot grow the
 * buffer sets FAILED, and every later append does nothing, so a chain of
 * appends needs one check at the end (strbuf_finish, or FAILED itself).
 * Start from a zeroed struct ({0}); the caller frees TEXT (free, or
 * strbuf_clear).
 */
#ifndef RS_STRBUF_H
#define RS_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

struct rs_strbuf {
	char *text; /* NUL-terminated once anything was appended; may be NULL */
	size_t len; /* bytes before the NUL */
	size_t cap; /* bytes allocated */
	int failed; /* an append ran out of memory */
};

/* Make room for EXTRA more bytes and the NUL, without appending: the room
 * starts at text + len, for a driver that writes into it (and then adds to
 * LEN and terminates).  Returns 0, or -1 when out of memory (FAILED is
 * set). */
int strbuf_reserve(struct rs_strbuf *b, size_t extra);

/* Append N bytes of BYTES (which may hold NULs), or the string S. */
void strbuf_add(struct rs_strbuf *b, const char *bytes, size_t n);
void strbuf_str(struct rs_strbuf *b, const char *s);

/* Append a printf-style text (FMT with the arguments in AP). */
void strbuf_vprintf(struct rs_strbuf *b, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
void strbuf_printf(struct rs_strbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Append NAME between two QUOTE characters with every QUOTE inside it
 * doubled: how PostgreSQL and SQLite ('"') and MariaDB ('`') quote an
 * identifier, so that any name, `a"b` or `t; drop table z`, stays one
 * identifier. */
void strbuf_quoted(struct rs_strbuf *b, const char *name, char quote);

/* The text, handed over to the caller (free it): an empty string when
 * nothing was appended, NULL only when an append failed (the buffer is
 * freed then).  B is left empty. */
char *strbuf_finish(struct rs_strbuf *b);

/* Free the text and empty B.  Does nothing on an empty B. */
void strbuf_clear(struct rs_strbuf *b);

#endif
