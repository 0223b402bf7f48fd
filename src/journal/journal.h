/*
 * The journal (DESIGN §7 rules 3–5): one SQLite file per plan in which
 * reshard records its runs, the state of every step, chunk checkpoints and
 * an event log, so that a run killed at any instant continues where it
 * stopped.
 *
 * The journal is written before and after every side effect.  Its writes
 * are synchronous on purpose: a side effect must not start until its intent
 * is durable, so the caller waits for the journal either way (WAL mode,
 * synchronous=FULL; a write costs one fsync).  Records no side effect
 * waits for (a chunk's end, a step's end "done", an event) are lazy: in
 * the WAL at once, so a killed process loses nothing, and on disk with the
 * next durable write.  A power cut may lose them only with every record
 * after them; the work they end is then done again, as after a crash just
 * before them.  Between two steps that leaves one fsync: the next step's
 * begin (none for a step that begins lazily: journal_step_begin_lazy).
 * Nothing here talks to a shard.
 *
 * One run per journal at a time: journal_open takes an exclusive lock
 * (flock on the journal file itself, released by the kernel if the process
 * dies) and refuses a second process with a message naming the holder's
 * pid, host and start time.  The plan's fingerprint is pinned in the journal
 * when it is created; opening with a different plan is refused, naming what
 * changed.
 *
 * Every function returns 0 or a negative RS_E… code with ERR filled
 * (RS_EIO for a journal that cannot be read or written, RS_EBUSY for a
 * journal held by another process, RS_EPLAN for a changed plan).
 */
#ifndef RS_JOURNAL_H
#define RS_JOURNAL_H

#include <stdint.h>

#include "common/err.h"

#define JOURNAL_SCHEMA_VERSION 3

struct rs_journal; /* an open journal; journal_close frees it */

enum rs_step_state {
	RS_STEP_PENDING, /* never started */
	RS_STEP_RUNNING, /* started, not finished: a crash may have cut it */
	RS_STEP_DONE,
	RS_STEP_FAILED,  /* finished with an error; run resumes it */
	RS_STEP_STOPPED, /* stopped on request at a checkpoint; run resumes */
};

struct rs_step_record {
	char name[32]; /* "preflight", "fence", … */
	enum rs_step_state state;
	int attempts;        /* how many times it was started */
	int64_t started_at;  /* Unix ms of the last start, 0 if never */
	int64_t finished_at; /* Unix ms of the end, 0 if not ended */
	int64_t rows;        /* rows the step handled: for a chunked
	                        step, the rows of its done chunks over
	                        every attempt */
	int64_t chunks_done; /* chunk checkpoints recorded for it */
	char error[512];     /* last error message, "" if none */
};

enum rs_chunk_state {
	RS_CHUNK_STARTED, /* intent recorded, side effect may have happened */
	RS_CHUNK_DONE,    /* side effect finished and recorded */
};

/* One checkpoint: a primary-key range (AFTER, UPTO] of one physical table
 * on one shard, processed by one step. */
struct rs_chunk_record {
	char step[32];
	char shard[64];
	char table[256]; /* physical table name */
	int64_t number;  /* 0, 1, 2 … in key order */
	char *after_key; /* JSON array of the key values, or NULL: the
	                    table's start (malloc'd; journal_chunk_free) */
	char *upto_key;  /* JSON array, inclusive end of the range */
	enum rs_chunk_state state;
	int64_t rows;      /* rows in the range */
	uint64_t checksum; /* chunk checksum sum (DESIGN §9), 0 if none */
	int64_t affected;  /* rows changed by the step in this chunk */
	int lazy; /* journal_chunk_begin need not wait for the disk: the chunk
	             has no side effect, or the caller makes its start
	             durable (journal_sync) before the side effect */
};

/*
 * Open (creating if needed) the journal at PATH for the plan whose
 * fingerprint (hex SHA-256) is FINGERPRINT and whose canonical text, with
 * secrets removed, is PLAN_TEXT (one setting per line).  A new journal pins
 * both; an existing one must have the same fingerprint, else RS_EPLAN with
 * a message naming the lines that differ (at most a few) and how to go on
 * (restore the plan, or start over with a new journal).  A journal of
 * another schema version is refused (RS_EIO).  Takes the run lock: RS_EBUSY
 * naming the process that holds it.  Records a new run (this process, now).
 */
int journal_open(const char *path, const char *fingerprint,
                 const char *plan_text, struct rs_journal **journal,
                 struct rs_err *err);

/* journal_open for COMMAND, recorded with the new run: "run" (what
 * journal_open records), "abort" or "verify".  Status speaks of the last
 * run of the steps (journal_last_run), not of a verify made since. */
int journal_open_as(const char *path, const char *fingerprint,
                    const char *plan_text, const char *command,
                    struct rs_journal **journal, struct rs_err *err);

/* Open an existing journal to read it (status): no lock, no new run, no
 * fingerprint check.  RS_EIO when PATH does not exist. */
int journal_open_readonly(const char *path, struct rs_journal **journal,
                          struct rs_err *err);

/* Record the end of this run (OUTCOME: "done", "failed", "stopped" for a
 * run, "aborted" or "abort failed" for an abort), release the lock,
 * close.  NULL does nothing. */
void journal_close(struct rs_journal *journal, const char *outcome);

/* Who holds the run lock right now, for status: fills HOLDER ("pid 123 on
 * host db-admin since 2026-12-02 10:04:32 UTC") and returns 1, or returns 0
 * when no process holds it.  It opens and closes the file, which drops any
 * POSIX lock this process's SQLite holds on it: call it while this process
 * has no connection to the journal open. */
int journal_lock_holder(const char *path, char *holder, size_t size);

/* One process that opened the journal to work on it (a row of runs). */
struct rs_run_record {
	int64_t pid;
	char host[256];
	int64_t started_at; /* Unix ms */
	int64_t ended_at;   /* Unix ms, 0 while it runs or after it died */
	char outcome[32];   /* journal_close's OUTCOME, "" when not ended */
};

/* The process recorded last (with WORK_ONLY, the last that ran the steps:
 * neither an abort nor a verify), for status: fills REC and
 * returns 1, or returns 0 when there is none; RS_EIO or RS_ENOMEM (ERR
 * filled) when the journal cannot be read, REC then zeroed. */
int journal_last_run(struct rs_journal *journal, int work_only,
                     struct rs_run_record *rec, struct rs_err *err);

/* Take the run lock on PATH without opening it as a journal (creating an
 * empty file if there is none), for abort when the journal cannot be read:
 * *FD is the locked descriptor; close(*FD) releases it.  RS_EBUSY naming
 * the holder, RS_EIO. */
int journal_lock_file(const char *path, int *fd, struct rs_err *err);

/* Steps.  journal_step_get fills REC for NAME (state PENDING with zeros if
 * the step never started).  journal_step_begin starts a new attempt: the
 * error of a failed attempt stays (status shows it as the earlier
 * attempt's), the message of a stopped one goes (a stop is no error).
 * journal_step_done is lazy (above); a step's begin, failure and stop are
 * durable when the call returns.  journal_step_begin_lazy is
 * journal_step_begin, lazy: for a step whose side effects are all safe to
 * repeat whatever the journal says when it is resumed (none, an
 * idempotent replay, a fence lifted), or that calls journal_sync before
 * any that is not.  A killed process loses nothing; a power cut that takes
 * the begin takes everything after it, and the step runs again from its
 * start.  The steps in the fenced window begin so, each durable write
 * there being time the writers wait. */
int journal_step_get(struct rs_journal *journal, const char *name,
                     struct rs_step_record *rec, struct rs_err *err);
int journal_step_begin(struct rs_journal *journal, const char *name,
                       struct rs_err *err);
int journal_step_begin_lazy(struct rs_journal *journal, const char *name,
                            struct rs_err *err);
int journal_step_done(struct rs_journal *journal, const char *name,
                      int64_t rows, struct rs_err *err);
int journal_step_failed(struct rs_journal *journal, const char *name,
                        const char *message, struct rs_err *err);
int journal_step_stopped(struct rs_journal *journal, const char *name,
                         const char *message, struct rs_err *err);
/* Make step NAME pending again and forget its chunk checkpoints, for a
 * cutover given back (engine.c): the step's next run starts over.  The
 * chunks go first, so a crash in between leaves a step that is not done
 * and has nothing to skip. */
int journal_step_reset(struct rs_journal *journal, const char *name,
                       struct rs_err *err);
/* Every step ever recorded, in the order they were first begun.  *RECS is
 * malloc'd (free it); *N is its length. */
int journal_steps(struct rs_journal *journal, struct rs_step_record **recs,
                  int *n, struct rs_err *err);

/* Chunk checkpoints.  journal_chunk_begin records the intent (state
 * STARTED) before the side effect, journal_chunk_done the result after it
 * (same identity: step, shard, table, number).
 *
 * What must be on disk when: the start of a chunk with a side effect is
 * durable (fsync) before the side effect: journal_chunk_begin waits for
 * it, or with REC->lazy the caller calls journal_sync (so that streams
 * share one fsync).  The end of a chunk, and the start of one with no
 * side effect (REC->lazy), are written to the WAL at once — a killed process
 * loses nothing, the kernel has them — but reach the disk with the next durable
 * write (the next chunk's start, the step's end), one fsync instead of two or
 * three a chunk. After a power loss the WAL is cut at a commit, so such a
 * record is lost only with everything after it: the chunk is then "started" or
 * absent and is done again, as chunks are idempotent.  journal_chunk_get
 * returns 0 and fills REC when the chunk is recorded, RS_OK with REC->state =
 * -1 when it is not. */
int journal_chunk_begin(struct rs_journal *journal,
                        const struct rs_chunk_record *rec, struct rs_err *err);
int journal_chunk_done(struct rs_journal *journal,
                       const struct rs_chunk_record *rec, struct rs_err *err);
int journal_chunk_get(struct rs_journal *journal, const char *step,
                      const char *shard, const char *table, int64_t number,
                      struct rs_chunk_record *rec, struct rs_err *err);
/* The last DONE chunk of (STEP, SHARD, TABLE), to resume after it: fills
 * REC and returns 1, or returns 0 when none is done. */
int journal_chunk_last_done(struct rs_journal *journal, const char *step,
                            const char *shard, const char *table,
                            struct rs_chunk_record *rec, struct rs_err *err);
/* The chunk of STEP recorded last (on any shard and table), for status:
 * fills REC and returns 1, or returns 0 when STEP has none. */
int journal_chunk_latest(struct rs_journal *journal, const char *step,
                         struct rs_chunk_record *rec, struct rs_err *err);
void journal_chunk_free(struct rs_chunk_record *rec); /* the key strings */
/* The rows STEP's done chunks changed (their affected counts), summed. */
int journal_step_affected(struct rs_journal *journal, const char *step,
                          int64_t *affected, struct rs_err *err);
/* The same for SHARD's chunks only. */
int journal_shard_affected(struct rs_journal *journal, const char *step,
                           const char *shard, int64_t *affected,
                           struct rs_err *err);
/* The rows in STEP's done chunks (their row counts), summed: what a
 * resumed step did before.  *ROWS is 0 on error. */
int journal_step_rows_done(struct rs_journal *journal, const char *step,
                           int64_t *rows, struct rs_err *err);
/* Forget every chunk of STEP, for a step that starts its walk over when
 * resumed (its counts would otherwise mix two attempts).  On error the
 * chunks stay. */
int journal_chunks_forget(struct rs_journal *journal, const char *step,
                          struct rs_err *err);

/* Run facts: small named values that outlive a process (the row count
 * before the run, the published epoch, when the fence went up …).
 * journal_fact_get returns 1 and copies the value into VALUE, 0 when it
 * is not set, or an error with ERR (may be NULL) filled and VALUE "":
 * RS_EIO or RS_ENOMEM when the journal cannot be read, RS_EINTERNAL when
 * the value does not fit in SIZE bytes.  "Not set" and "cannot read" call
 * for different actions: a caller that decides anything from a fact
 * stops on an error (only what is shown to people may take it as unset). */
/* Make every write so far durable (the lazy ones of chunks, journal.h
 * above): one durable write, one fsync.  Several streams that each need
 * their chunk's start on disk share one (engine/streams.c). */
int journal_sync(struct rs_journal *journal, struct rs_err *err);

/* journal_sync for another thread: an fdatasync of the journal's WAL
 * file, which holds every write so far (the lazy ones too) that a
 * checkpoint has not copied into the database file, and a checkpoint
 * syncs what it copies.  It touches only that file's descriptor, so it
 * may run on a worker thread while this one goes on using the journal
 * (engine/streams.c): every write made before the call is durable when it
 * returns 0; a write made while it runs may or may not be.  Counts as a
 * durable write.  journal_can_sync_wal says whether there is such a file
 * (a journal of journal_open: yes); without it journal_sync_wal returns
 * RS_EUSAGE and the caller uses journal_sync.  RS_EIO when the sync fails:
 * nothing that needs it may go on. */
int journal_can_sync_wal(const struct rs_journal *journal);
int journal_sync_wal(struct rs_journal *journal, struct rs_err *err);

/* How many durable writes (each an fsync of the journal) this process has
 * made on JOURNAL so far: for the fenced window's account (fence.c), where
 * the writers wait for each.  0 for NULL. */
int64_t journal_durable_writes(const struct rs_journal *journal);

int journal_fact_set(struct rs_journal *journal, const char *name,
                     const char *value, struct rs_err *err);
/* The same, lazy (above): for a fact that only describes a side effect
 * already made, in a step whose end comes after it, so that a power cut
 * that takes the fact takes the step's end too and the step runs again. */
int journal_fact_set_lazy(struct rs_journal *journal, const char *name,
                          const char *value, struct rs_err *err);
int journal_fact_get(struct rs_journal *journal, const char *name, char *value,
                     size_t size, struct rs_err *err);
int journal_fact_delete(struct rs_journal *journal, const char *name,
                        struct rs_err *err);

/* Append to the event log (LEVEL "info", "warn", "error"); best effort:
 * failures are ignored (the event log is for people, not for resume).
 * Lazy (above): durable with the next durable write. */
void journal_event(struct rs_journal *journal, const char *level,
                   const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Call FN with every event, oldest first: its time (Unix ms), level and
 * message, borrowed for the call.  A non-zero return of FN stops the
 * walk and is returned; else 0, or RS_EIO when the journal cannot be
 * read (ERR filled). */
int journal_events_each(struct rs_journal *journal,
                        int (*fn)(int64_t at_ms, const char *level,
                                  const char *message, void *arg),
                        void *arg, struct rs_err *err);

/* The last N events, newest last, as "TIME LEVEL message" lines in a
 * malloc'd string (free it), or NULL. */
char *journal_events_tail(struct rs_journal *journal, int n);

/* A row purge kept on a shard that no longer owns it, because its owner
 * has neither a copy of it nor a record of deleting it.  Strings are the
 * caller's for journal_kept_add; malloc'd by journal_kept_list (free the
 * array with journal_kept_free). */
struct rs_kept_row {
	const char *shard;     /* where the row is */
	const char *table;     /* physical table there */
	const char *pk;        /* JSON array of the primary key values */
	const char *shard_key; /* the shard key value, NULL for NULL */
	const char *owner;     /* its owner under `to`: shard.table */
};

int journal_kept_add(struct rs_journal *journal, const struct rs_kept_row *row,
                     struct rs_err *err);
/* Every kept row, by shard, table and key: *ROWS malloc'd, *N its length. */
int journal_kept_list(struct rs_journal *journal, struct rs_kept_row **rows,
                      int *n, struct rs_err *err);
/* Forget every kept row (final-check found none left). */
int journal_kept_clear(struct rs_journal *journal, struct rs_err *err);
void journal_kept_free(struct rs_kept_row *rows, int n);

/* A difference verify found between a row that moves and its copy on its
 * new owner.  PASS is "verify" (the run's step) or "verify-on-demand" (the
 * `verify` command); CHUNK the number of the source chunk whose range
 * holds the key.  KIND is "missing" (not on the new owner), "extra" (on
 * the new owner, not on the old one) or "differs" (COLUMNS: a JSON array
 * of the names of the columns whose values differ).  Strings are the
 * caller's for journal_difference_add; malloc'd by journal_differences
 * (free the array with journal_differences_free). */
struct rs_difference {
	const char *pass;
	const char *shard; /* the old owner (a shard of `from`) */
	const char *table; /* its physical table */
	int64_t chunk;
	const char *pk;        /* JSON array of the primary key values */
	const char *shard_key; /* the shard key value, NULL for NULL */
	const char *owner;     /* the new owner: shard.table */
	const char *kind;
	const char *columns; /* NULL unless KIND is "differs" */
	int64_t found_at;    /* Unix ms (set by journal_difference_add) */
};

/* Record D (replacing what was recorded for its key in its pass).  The
 * write is lazy, as a chunk's end: durable with the chunk's record. */
int journal_difference_add(struct rs_journal *journal,
                           const struct rs_difference *d, struct rs_err *err);
/* Forget the differences of PASS: all of them (SHARD NULL), or those
 * that chunk CHUNK of SHARD's TABLE found (before it is done again), or
 * with CHUNK JOURNAL_ALL_CHUNKS all of SHARD's TABLE. */
#define JOURNAL_ALL_CHUNKS INT64_MIN
int journal_differences_forget(struct rs_journal *journal, const char *pass,
                               const char *shard, const char *table,
                               int64_t chunk, struct rs_err *err);
/* In one durable transaction, the differences of PASS for SHARD's TABLE
 * become those recorded under NEXT (which then has none): a pass that
 * compares every recorded key again records under NEXT, and drops the old
 * ones only once it has them all; cut short, it leaves the old ones. */
int journal_differences_replace(struct rs_journal *journal, const char *pass,
                                const char *next, const char *shard,
                                const char *table, struct rs_err *err);
/* The differences of PASS (NULL: of every pass, by pass) by shard, table
 * and key, at most LIMIT (<= 0:
 * all): *DIFFS malloc'd, *N its length, *TOTAL (may be NULL) how many
 * are recorded.  A journal older than version 3 has none. */
int journal_differences(struct rs_journal *journal, const char *pass, int limit,
                        struct rs_difference **diffs, int *n, int64_t *total,
                        struct rs_err *err);
void journal_differences_free(struct rs_difference *diffs, int n);

/* The plan text pinned in the journal (malloc'd, free it), or NULL. */
char *journal_plan_text(struct rs_journal *journal);

/* Compare the plan pinned in JOURNAL with FINGERPRINT, as journal_open
 * does (status asks it of a journal opened read-only): RS_EPLAN with the
 * refusal journal_open gives, naming the settings of PLAN_TEXT that
 * differ from the pinned text (at most a few) and how to go on, when they
 * differ; RS_EIO when the setup row cannot be read, RS_ENOMEM. */
int journal_check_plan(struct rs_journal *journal, const char *fingerprint,
                       const char *plan_text, struct rs_err *err);

#endif
