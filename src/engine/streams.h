/*
 * Streams: one step's work on many shards or tables at once, on the run's
 * one libuv loop.
 *
 * A step hands streams_run a numbered list of tasks — "fence shard i",
 * "walk physical table i" — and a function that does one task top to
 * bottom with the await_… wrappers, exactly as if it were alone.
 * streams_run starts up to SPEC->parallel streams, each a fiber
 * (common/fiber.h) that takes the next task from the list when it has
 * finished one; while a stream waits for a backend operation the others
 * run, and the loop runs when all of them wait.  So a step over 64 shards
 * waits about as long as its slowest shard, not as the sum of all.
 *
 * Connections.  Per-shard tasks (own_connections 0) each touch their own
 * shards, so they share the run's control connections (engine_shard).  A
 * walk may meet any shard as a row's owner, so walk tasks (own_connections
 * 1) get connections of their own: inside such a stream engine_shard
 * returns the stream's connection to that shard, made on first use.  A
 * backend runs one operation at a time; this is what keeps two streams
 * from ever sharing one.  When a stream ends, its connections to servers
 * (RS_CAP_KEEP_IDLE) are kept idle for the next group, so that a step's
 * streams do not each pay a connection (a server process and an
 * authentication: 20-40 ms on a busy machine) when the step before just
 * closed one; only those of a stream whose every task succeeded, at most
 * STREAMS_IDLE_MAX per shard, and not past STREAMS_IDLE_MS idle (a
 * server may have dropped it).  The others are closed; streams_close_idle
 * closes the rest.
 *
 * Errors and stops.  The first task that fails makes the group fail: no
 * new task starts, and the running ones end at their next checkpoint
 * (engine_checkpoint returns RS_ECANCELED in them).  streams_run returns
 * that first error; every other real failure is printed as an "also"
 * line, so that two unreachable shards are both named.  A stop request
 * (SIGINT/SIGTERM) likewise starts no new task and the step returns
 * RS_ECANCELED.  Tasks must be independent of their order: journal
 * records are per shard and table, never "the previous task".
 *
 * Called from inside a stream (a task that itself runs a group), the
 * tasks run one after another in that stream.
 */
#ifndef RS_STREAMS_H
#define RS_STREAMS_H

#include "engine/engine.h"

struct rs_streams_spec {
	int n;               /* tasks 0 … n-1 */
	int parallel;        /* at most this many at once; < 1 means 1 */
	int own_connections; /* walks: each stream connects for itself */
	/* Do task I.  Returns 0 or an RS_E… code with ERR filled. */
	int (*task)(struct rs_run *run, int i, void *arg, struct rs_err *err);
	void *arg;
};

/* Run SPEC's tasks (see above).  Returns 0, the first task's error, or
 * RS_ECANCELED when a stop was requested. */
int streams_run(struct rs_run *run, const struct rs_streams_spec *spec,
                struct rs_err *err);

/* For engine_shard and engine_second: the running stream's own connection
 * to SHARD (its second one when SECOND) into *OUT,
 * connected on first use; *MINE 0 (and 0 returned) when the caller is not
 * in a stream with connections of its own.  Returns 0 or the error of
 * connecting. */
int streams_connection(struct rs_run *run, int shard, int second, int *mine,
                       struct rs_backend **out, struct rs_err *err);

/* Close the connections kept idle to SHARD (-1: to every shard): at the
 * end of a run, and when the shard's database is replaced or goes. */
void streams_close_idle(struct rs_run *run, int shard);

/* Whether the running stream should stop: its group has failed. */
int streams_failed(const struct rs_run *run);

/* Make the run's journal writes so far durable before a side effect.
 * streams_sync_journal_begin asks for it and returns at once with a
 * ticket; streams_sync_journal_wait(TICKET) returns once every write made
 * before the ask is durable (0), or the journal's error.  Between the two
 * the caller may work, but must not start the side effect.  In a stream
 * the sync is an fdatasync of the journal's WAL file on libuv's thread
 * pool (journal_sync_wal), shared by every stream that asks while one is
 * running and the next one after it; a failed sync fails every later wait.
 * Outside a stream (or without a WAL file) the ticket is 0 and the wait
 * is a journal_sync on this thread.  streams_sync_journal is the two in
 * a row. */
int streams_sync_journal_begin(struct rs_run *run);
int streams_sync_journal_wait(struct rs_run *run, int ticket,
                              struct rs_err *err);
int streams_sync_journal(struct rs_run *run, struct rs_err *err);

/* Spend ROWS of options.max_rows_per_second, the one budget every stream
 * of the run shares: waits (letting the other streams run) until the rows
 * written so far fit the rate.  No wait when the plan sets no rate. */
void streams_throttle(struct rs_run *run, int64_t rows);

#endif
