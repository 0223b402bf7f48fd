/*
 * What the pieces of the journal share, behind journal.h: journal.c (open,
 * close, schema, runs, steps, chunks, facts, events, kept rows) and
 * journal_lock.c (the run lock).  Not for use outside src/journal/: the
 * rest of reshard goes through journal.h.
 *
 * Nothing here allocates or frees: the buffers are the caller's.
 */
#ifndef RS_JOURNAL_IMPL_H
#define RS_JOURNAL_IMPL_H

#include <stddef.h>
#include <stdint.h>

/* Format MS (Unix milliseconds) as "2026-12-02 10:04:32" in UTC into BUF
 * (SIZE bytes); a time gmtime cannot represent gives "?".  Never fails. */
void journal_format_time(int64_t ms, char *buf, size_t size);

#endif
