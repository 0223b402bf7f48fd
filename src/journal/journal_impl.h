/*
 * What the pieces of the journal share, behind journal.h: journal.c (open,
 * close, schema, runs, steps, chunks, facts, events, kept rows),
 * journal_diff.c (the differences verify found),
 * journal_lock.c (the run lock) and journal_plan.c (the pinned plan).  Not
 * for use outside src/journal/: the rest of reshard goes through journal.h.
 *
 * The functions taking a journal return 0 or a negative RS_E… code with ERR
 * filled, as journal.h's do; ERR may be NULL where a failure is ignored
 * (journal_close, journal_event).  They never close or free the journal,
 * and a statement handed to journal_finish is finalized by it, whatever
 * the outcome (a kept one, journal_prepare_kept, is reset instead).
 * Strings passed in stay the caller's; the one string handed out
 * (journal_column_dup) is malloc'd, for the caller to free.
 */
#ifndef RS_JOURNAL_IMPL_H
#define RS_JOURNAL_IMPL_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/* The statements run once a chunk (its start and end, forgetting its
 * differences): parsed once a handle, not once a chunk, which on a
 * million-row walk was a tenth of the loop thread's time.  Prepared by
 * journal_prepare_kept, reset by journal_done, finalized by journal_free.
 * (The lazy write's PRAGMA synchronous is not among them: SQLite
 * prepares a PRAGMA again at every run anyway.) */
enum journal_kept {
	JOURNAL_KEPT_CHUNK_BEGIN,
	JOURNAL_KEPT_CHUNK_DONE,
	JOURNAL_KEPT_FORGET_CHUNK,
	JOURNAL_KEPT_MAX
};

struct rs_journal {
	sqlite3 *db;
	sqlite3_stmt *kept[JOURNAL_KEPT_MAX]; /* NULL until first used */
	char *path;     /* the journal file, for messages */
	int lock_fd;    /* the flock'd journal file, -1 when read-only */
	int readonly;   /* opened by journal_open_readonly */
	int64_t run_id; /* this process's row in runs, 0 when read-only */
	int version;    /* the schema version read (older ones read-only) */
	int lazy;       /* within journal_finish_lazy's lazy commit */
	/* journal_durable_writes; atomic: journal_sync_wal counts from a
	 * worker thread. */
	_Atomic int64_t durable_writes;
	int wal_fd; /* the WAL file, for journal_sync_wal; -1: none */
};

/* The current time in Unix milliseconds. */
int64_t journal_now_ms(void);

/* Format MS (Unix milliseconds) as "2026-12-02 10:04:32" in UTC into BUF
 * (SIZE bytes); a time gmtime cannot represent gives "?".  Never fails. */
void journal_format_time(int64_t ms, char *buf, size_t size);

/* Record in ERR that the SQLite call described by WHAT (and SUBJECT, may be
 * NULL) failed with RC; returns the code: RS_ENOMEM when SQLite ran out of
 * memory, RS_EINTERNAL for a chunk of a step never begun (the one foreign
 * key), else RS_EIO, with SQLite's message, the journal's path and whether
 * a retry may help (SQLITE_BUSY). */
int journal_fail(struct rs_journal *journal, int rc, const char *what,
                 const char *subject, struct rs_err *err);

/* Prepare SQL on JOURNAL into *STMT (finalize it, or hand it to
 * journal_finish); on error *STMT is NULL and the code of journal_fail is
 * returned. */
int journal_prepare(struct rs_journal *journal, const char *sql,
                    sqlite3_stmt **stmt, struct rs_err *err);

/* Finalize STMT after its last SQLite call returned RC (a bind failure or
 * the last sqlite3_step); SQLITE_OK, SQLITE_ROW and SQLITE_DONE mean
 * success.  On error the code of journal_fail (WHAT and SUBJECT describe
 * the statement). */
int journal_done(struct rs_journal *journal, sqlite3_stmt *stmt, int rc,
                 const char *what, const char *subject, struct rs_err *err);

/* Run SQL (constant text, no values) with sqlite3_exec; on error the code
 * of journal_fail (WHAT describes it). */
int journal_exec(struct rs_journal *journal, const char *sql, const char *what,
                 struct rs_err *err);

/* As journal_prepare, for a statement that writes: a read-only journal
 * refuses it with RS_EINTERNAL (writing through status is a bug). */
int journal_prepare_write(struct rs_journal *journal, const char *sql,
                          sqlite3_stmt **stmt, struct rs_err *err);

/* As journal_prepare_write, for the kept statement WHICH, whose text is
 * always SQL: prepared at its first use, then handed out again.  It is
 * used up the same way (journal_finish, journal_done), which reset it and
 * clear its bindings instead of finalizing it.  Not reentrant: one use at
 * a time of each (the journal runs on the loop's thread). */
int journal_prepare_kept(struct rs_journal *journal, enum journal_kept which,
                         const char *sql, sqlite3_stmt **stmt,
                         struct rs_err *err);

/* Bind TEXT (NULL binds SQL NULL; not copied, so it must outlive the
 * statement's run) unless an earlier bind failed: RC is the earlier
 * result, and the first failure is what comes back. */
int journal_bind_text(sqlite3_stmt *stmt, int index, const char *text, int rc);

/* As journal_bind_text, for an integer. */
int journal_bind_int64(sqlite3_stmt *stmt, int index, int64_t value, int rc);

/* Run STMT, a statement returning no rows, to completion and finalize it;
 * BIND_RC is the outcome of binding its parameters.  On error the code of
 * journal_fail (WHAT and SUBJECT describe the statement) is returned and
 * nothing was changed. */
int journal_finish(struct rs_journal *journal, sqlite3_stmt *stmt, int bind_rc,
                   const char *what, const char *subject, struct rs_err *err);

/* journal_finish as a lazy write when LAZY: in the WAL at once, on disk
 * with the next durable write (journal.h). */
int journal_finish_lazy(struct rs_journal *journal, int lazy,
                        sqlite3_stmt *stmt, int rc, const char *what,
                        const char *name, struct rs_err *err);

/* A malloc'd copy of column COL of STMT's current row (NULL stays NULL);
 * on failure to allocate returns NULL and sets *FAILED. */
char *journal_column_dup(sqlite3_stmt *stmt, int col, int *failed);

/* Pin FINGERPRINT and PLAN_TEXT (NULL: empty) in the setup row of the new
 * JOURNAL, inside the transaction that creates its schema; on error the
 * code of journal_fail (the caller rolls back). */
int journal_pin_plan(struct rs_journal *journal, const char *fingerprint,
                     const char *plan_text, struct rs_err *err);

#endif
