/*
 * The step executor (DESIGN §6, §8): runs a strategy's steps in order on one
 * libuv loop, recording each in the journal before and after, so that a run
 * killed at any instant continues where it stopped.
 *
 * A step is a plain function that reads top to bottom: it calls the await_…
 * wrappers (await.h), which start one asynchronous backend operation and
 * run the loop until it completes, so signals, timers and progress keep
 * being served while a step waits.  Step functions are never called from
 * inside a libuv callback (uv_run is not reentrant).
 *
 * Steps must be idempotent: each checks what is already done (journal
 * chunks, triggers present, files made) and converges when run again.
 */
#ifndef RS_ENGINE_H
#define RS_ENGINE_H

#include <stdint.h>
#include <stdio.h>
#include <uv.h>

#include "backend/backend.h"
#include "common/err.h"
#include "common/progress.h"
#include "journal/journal.h"
#include "plan/plan.h"

struct rs_run;
struct streams_group;
struct streams_idle;

/* One described table, cached by engine_table. */
struct engine_table {
	int shard;
	char *physical;
	struct rs_table_def *def;
	int stale; /* engine_table_forget: kept only for its borrowers */
};

struct rs_step_def {
	const char *name;    /* as in DESIGN §6 and the journal */
	const char *summary; /* one line, for status */
	int irreversible;    /* ask for confirmation on a terminal */
	int no_return;       /* once begun, abort refuses (publish) */
	int removes_moved;   /* deletes the rows that moved from their old
	                        owners (purge): once it has begun, they
	                        cannot be compared with their copies */
	int lazy_begin;      /* its begin need not reach the disk before
	                        it runs (journal_step_begin_lazy): a step
	                        in the fenced window whose side effects
	                        are safe to repeat.  Never one with an
	                        undo: abort undoes the steps the journal
	                        says began */
	/* Do the step.  Returns 0 or a negative RS_E… code with ERR filled;
	 * RS_ECANCELED when the run was asked to stop at a checkpoint. */
	int (*run)(struct rs_run *run, struct rs_err *err);
	/* Undo what the step may have done, for abort (NULL: nothing to
	 * undo).  Idempotent, and acting only where the shard markers or
	 * the shards themselves show the run's work, so that it also serves
	 * an abort without a journal (run->journal NULL). */
	int (*undo)(struct rs_run *run, struct rs_err *err);
	/* The step that begins the cutover (fence): lift what it put up so
	 * that writes resume, keeping the run's markers, when a later step
	 * gives the cutover back (RS_EGIVEBACK).  Idempotent. */
	int (*give_back)(struct rs_run *run, struct rs_err *err);
};

/* A strategy (src/strategy/): its steps, and what they need to know of
 * it — no step asks which strategy runs. */
struct rs_strategy_def {
	const char *name;
	const struct rs_step_def *const *steps;
	int n_steps;
	/* Replicas become owners (doubling): they carry their primary's
	 * fence, are checked in preflight and unfenced with it. */
	int promotes_replicas;
	/* Copies the rows that move onto shards new in `to` (split):
	 * preflight checks those targets and refuses rows that would move
	 * between two sources; purge first removes the change capture. */
	int copies_movers;
	/* The step after which the rows that move have their copy on their
	 * new owner (split: copy), for a verify outside the run; NULL when
	 * they always have (a doubling's replicas). */
	const struct rs_step_def *copies_after;
	/* How many copies of each row exist before purge (for purge's
	 * progress): 2 after a promotion, 1 after a copy of the movers. */
	int copies_before_purge;
	/* Whether the run changes SHARD at all (fence, marker, purge); NULL:
	 * every shard.  A doubling leaves alone a shard that has no replica
	 * and is no one's replica: a range split of one node onto its
	 * replica fences, promotes and purges that pair only. */
	int (*touches)(const struct rs_plan *plan, int shard);
};

struct rs_run_options {
	const char *until; /* stop after this step (NULL: run to the end) */
	int yes;           /* do not ask before irreversible steps */
	/* Ask whether to begin irreversible STEP (the command line's
	 * question to its user): 1 go on, 0 no, -1 nobody to ask.  NULL:
	 * nobody to ask.  Not asked when YES. */
	int (*confirm)(const struct rs_step_def *step, void *arg);
	void *confirm_arg;
};

/* One run of a plan, shared by the executor and the steps. */
struct rs_run {
	const struct rs_plan *plan;
	const struct rs_strategy_def *strategy;
	const struct rs_run_options *options;
	struct rs_journal *journal;
	uv_loop_t loop;
	uv_signal_t sigint, sigterm;
	int stop_requested; /* SIGINT/SIGTERM: stop at a checkpoint */
	const struct rs_step_def *step; /* the step running now */
	struct rs_backend **shards;     /* per shard: the control connection,
	                                   NULL until engine_shard connects it */
	struct rs_progress progress;    /* of the running step */
	int64_t step_chunks;         /* chunks the running step finished in this
	                                process, for the after-chunk fault points */
	char fence_message[256];     /* what fenced writers are told */
	char run_id[40];             /* the run's id, in the journal and the
	                                shard markers (marker_run_id) */
	char replaced_run[40];       /* the earlier run of this plan name whose
	                                done markers this run's replace, or "":
	                                abort gives them back (marker.h) */
	int64_t replaced_epoch;      /* ... and the epoch it published */
	struct engine_table *tables; /* described tables: engine_table */
	signed char *sole_source;    /* movers.c's, for each shard and table
	                                index of `to`: -1 not asked yet, else
	                                whether every row that moves there
	                                comes from one source table; NULL
	                                until asked (freed with tables) */
	int n_tables;
	struct streams_group *streams; /* the step's streams running now
	                                  (streams.h), NULL between them */
	struct streams_idle *idle;     /* streams' server connections kept for
	                                  the next group (streams.c), or NULL */
	uint64_t throttle_at; /* loop time when max_rows_per_second lets the
	                         next rows go (streams_throttle) */
	/* Per shard: loop time when its replicas were last found within
	 * max_replica_lag_seconds (steps_wait_downstream), 0 never. */
	uint64_t lag_ok_at[RS_PLAN_MAX_SHARDS];
	int journal_wanted;  /* journal syncs asked for by streams … */
	int journal_synced;  /* … and made (streams_sync_journal) */
	int journal_syncing; /* a sync runs on libuv's thread pool */
	int journal_sync_rc; /* the first failed sync's, 0 while none */
	struct rs_err journal_sync_err;
	/* time() past which engine_checkpoint gives the cutover back
	 * (RS_EGIVEBACK): the fence's start plus fence_timeout_seconds
	 * while no irreversible step has begun; 0: never. */
	int64_t give_back_at;
	/* journal_durable_writes when this process put the fence up, plus
	 * one; 0: it did not (unfence then reports no count). */
	int64_t fenced_writes_at;
};

/* Whether RUN changes SHARD (rs_strategy_def.touches). */
int engine_touches(const struct rs_run *run, int shard);

/*
 * Run STRATEGY for PLAN: open (or resume) the journal, run every step not
 * yet done, in order, until the end or OPTIONS->until.  Returns 0 when the
 * run (or the part asked for) is done; RS_ECANCELED when stopped by a
 * signal (the journal says where; run again to resume); RS_EBUSY when
 * another process holds the journal; RS_EPLAN for a changed plan;
 * RS_EVERIFY when verification found differences; else the failing step's
 * error.  Every failure is in the journal too.
 */
int engine_run(const struct rs_plan *plan,
               const struct rs_strategy_def *strategy,
               const struct rs_run_options *options, struct rs_err *err);

/*
 * Run STEP alone, outside STRATEGY's sequence, for COMMAND ("verify": the
 * verify command's pass), with the run's journal (opened for COMMAND, so
 * that status does not take it for a run of the steps), loop, signals
 * and connections.  A STEP done before starts over (its chunks
 * forgotten); one interrupted, stopped or failed resumes.  Refused while
 * an abort is unfinished.  Returns 0, RS_EBUSY when another process holds
 * the journal (a run in progress), RS_ECANCELED on a stop request, or
 * the step's error.
 */
int engine_run_one(const struct rs_plan *plan,
                   const struct rs_strategy_def *strategy, const char *command,
                   const struct rs_step_def *step, struct rs_err *err);

/* The backend configuration of PLAN's shard SHARD (its strings are the
 * plan's). */
struct rs_backend_config engine_shard_config(const struct rs_plan *plan,
                                             int shard);

/* Whether shard SHARD exists yet (backend_exists): a SQLite replica file
 * reshard has not made does not, and is not created by asking. */
int engine_shard_exists(struct rs_run *run, int shard);

/* The connected backend of shard SHARD for the caller, into *OUT: inside
 * a stream with connections of its own (streams.h) the stream's, else the
 * run's control connection, connecting it on first use.  Borrowed (the
 * run or the stream closes it).  Returns 0 or the error of connecting. */
int engine_shard(struct rs_run *run, int shard, struct rs_backend **out,
                 struct rs_err *err);

/* Inside a stream with connections of its own (streams.h): a second
 * connection of the stream to SHARD into *OUT: a walk reads ahead on it
 * from the shard it walks while the first one writes, and a copy loads
 * every other chunk on it into a shard it writes to (movers_send).
 * Elsewhere *OUT is NULL (use engine_shard's).  Returns 0 or the error of
 * connecting. */
int engine_second(struct rs_run *run, int shard, struct rs_backend **out,
                  struct rs_err *err);

/* A new connection to shard SHARD into *OUT, the caller's to close
 * (await_close).  Returns 0 or the error of connecting (*OUT NULL). */
int engine_connect(struct rs_run *run, int shard, struct rs_backend **out,
                   struct rs_err *err);

/*
 * Abort PLAN's run of STRATEGY before publish: undo every step that began,
 * in reverse (fences released on sources and replicas, the SQLite replica
 * files the run made deleted), and set the journal aside so that a new run
 * starts from the beginning.  Journaled: once begun, `run` refuses until
 * an abort has finished, and abort again finishes it.  Without a readable
 * journal it goes by the shard markers.  Once a no_return step (publish)
 * may have happened it refuses with RS_EUSAGE: the old routing is gone
 * and the run can only go forward.
 */
int engine_abort(const struct rs_plan *plan,
                 const struct rs_strategy_def *strategy, struct rs_err *err);

/* The newest journal that abort set aside for the journal at PATH
 * (PATH.aborted-20261204T151500Z, or PATH.damaged-… for one abort could
 * not read; the epoch-seconds names of older releases are read too):
 * fills ASIDE (SIZE bytes) with its path and *AT_MS with when it was set
 * aside (Unix ms, from its name) and returns 1, or returns 0 when there is
 * none or the folder cannot be read. */
int engine_aside_latest(const char *path, char *aside, size_t size,
                        int64_t *at_ms);

/* Whether the journal records a no_return step (publish) as begun, into
 * *PAST. */
int engine_past_no_return(struct rs_run *run, int *past, struct rs_err *err);

/* Remove the journal at PATH and its -wal and -shm files (one this process
 * made and that holds no work). */
void engine_journal_remove(const char *path);

/* Forget the tables engine_table described (at the end of a run). */
void engine_tables_release(struct rs_run *run);

/* Print the events of every run of PLAN kept in its journal, oldest
 * first (engine/log.c): a line each, or (JSON) one JSON object a line.
 * A plan never run prints nothing and says so on stderr.  0, or RS_EIO
 * (journal unreadable, output failed), RS_ENOMEM. */
int engine_log(const struct rs_plan *plan, int json, FILE *out,
               struct rs_err *err);

/* Print the state of PLAN's run (its state word — never run, running,
 * stopped, interrupted, failed, done, aborted, aborting —, steps, fence
 * right now, epoch, the last abort) as text or one JSON object (described
 * by tests/status.schema.json).  A plan without a journal is "never run",
 * or "aborted" when abort set its journal aside.  When `run` would refuse
 * (the journal was started with another plan, a shard carries the marker
 * of a run that has not ended and is not the journal's) it says so with
 * run's advice.  RS_EIO when the journal cannot be read, RS_ENOMEM. */
int engine_status(const struct rs_plan *plan,
                  const struct rs_strategy_def *strategy, int json, FILE *out,
                  struct rs_err *err);

/* Differences verify recorded (engine/differences.c). */

/* Read the differences of PASS (NULL: every pass) from JOURNAL as
 * journal_differences does, as many as are listed in TEXT or in JSON. */
int engine_differences_read(struct rs_journal *journal, const char *pass,
                            int text, struct rs_difference **diffs, int *n,
                            int64_t *total, struct rs_err *err);
/* D[0] … D[N-1] as a JSON array (jansson json_t *, the caller's
 * reference), NULL when out of memory. */
struct json_t *engine_differences_json(const struct rs_difference *d, int n);
/* D[0] … D[N-1] as text lines, one a difference, and how many more of
 * TOTAL there are; with PASSES, a line naming each pass before its own. */
void engine_differences_text(FILE *out, const struct rs_difference *d, int n,
                             int64_t total, int passes);
/* After a pass of the verify command (PASS, the step run by
 * engine_run_one): print what it found, as text or one JSON object
 * {plan, result ("same" or "differences"), finished_at, rows_read (on
 * the old owners), movers_compared, differences_total, differences}.  Returns 0
 * when it found none, RS_EVERIFY when it found some, or RS_EIO / RS_ENOMEM. */
int engine_verify_report(const struct rs_plan *plan, const char *pass, int json,
                         FILE *out, struct rs_err *err);

/* The description of table PHYSICAL on shard SHARD into *OUT, described
 * once per run and kept (a table's columns and key do not change under a
 * run, nor its unique indexes but by engine_table_forget; the row
 * estimate is the one of the first call).  Borrowed: valid
 * until the run ends.  Returns 0, or the error when the shard cannot be
 * reached or the table is missing or has no primary key. */
int engine_table(struct rs_run *run, int shard, const char *physical,
                 const struct rs_table_def **out, struct rs_err *err);

/* Describe PHYSICAL on SHARD again at its next engine_table: for the run's
 * own change to it (a unique index create.c adds to a table it made).
 * Descriptions handed out before stay valid, as they were, until the run
 * ends. */
void engine_table_forget(struct rs_run *run, int shard, const char *physical);

/* Close shard SHARD's connections: the control connection and those the
 * streams keep idle (so a file can be replaced). */
void engine_shard_close(struct rs_run *run, int shard);

/* Close every shard's connections (engine_shard_close), before the
 * run's loop closes. */
void engine_shards_close(struct rs_run *run);

/* 0, or RS_ECANCELED with ERR filled when a signal asked the run to stop
 * or, inside a stream, when another stream of the step failed, or
 * RS_EGIVEBACK when the fence has been up for fence_timeout_seconds and
 * no irreversible step has begun (engine_run then gives the fence back
 * and tries the cutover again): steps call it between chunks and slices. */
int engine_checkpoint(struct rs_run *run, struct rs_err *err);

/*
 * Fault points, for tests only: when RESHARD_FAULT names this point, the
 * process exits at once with status 99, as if killed, without closing
 * anything.  Points are "after-step:NAME", "before-step:NAME" and
 * "after-chunk:STEP:N" (after the Nth chunk, counted from 1, that the step
 * finished in this process) and "after-effect:STEP:N" (after that chunk's
 * side effect, before the journal records it done).  See
 * docs/testing.md.
 */
void engine_fault(const char *point);
/* Whether RESHARD_FAULT names POINT: for a fault the caller simulates
 * instead of exiting, "quiet-fail:STEP" (the step fails, saying
 * nothing, as a bug would) and "status-fenced-fails:SHARD" (status's
 * question whether SHARD is fenced fails once connected). */
int engine_fault_at(const char *point);
void engine_fault_chunk(const char *step, int64_t n);
void engine_fault_effect(const char *step, int64_t n);

/* The physical name of logical table TABLE, table index INDEX, under MAP
 * into BUF (slot maps: orders_3). */
void engine_physical(const struct rs_map *map, const char *table, int index,
                     char *buf, size_t size);

/* How many physical tables a logical table has per shard under MAP. */
int engine_tables_per_shard(const struct rs_map *map);

#endif
