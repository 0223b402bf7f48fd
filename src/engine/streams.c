/*
 * The scheduler of a step's streams (see streams.h): fibers that take
 * tasks from a shared list, and a loop in the main context that resumes
 * every fiber whose wait is over and otherwise runs libuv until a
 * callback ends one.
 */
#include "engine/streams.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/fiber.h"
#include "common/progress.h"
#include "engine/await.h"
#include "journal/journal.h"

struct stream;

/* Connections kept between groups (streams.h), per shard and role. */
#define STREAMS_IDLE_MAX 16
#define STREAMS_IDLE_MS  30000 /* older than this, closed, not used */

struct streams_idle {
	struct rs_backend *conn[STREAMS_IDLE_MAX];
	uint64_t since[STREAMS_IDLE_MAX]; /* loop time it was put back */
	int n;
};

/* One streams_run. */
struct streams_group {
	struct rs_run *run;
	const struct rs_streams_spec *spec;
	int next;          /* the next task to hand out */
	int failed;        /* a task failed: hand out no more */
	int rc;            /* the first failure */
	struct rs_err err; /* its message */
};

struct stream {
	struct streams_group *group;
	struct fiber *fiber;
	struct rs_backend **own; /* when own_connections: [n_shards] the
	                            stream's connections, then [n_shards]
	                            its second ones (engine_second) */
	int failed;              /* one of its tasks did not succeed */
};

static struct stream *
stream_current(const struct rs_run *run)
{
	struct fiber *f = fiber_current();
	struct stream *s = f != NULL ? fiber_data(f) : NULL;

	return s != NULL && s->group == run->streams ? s : NULL;
}

/* Record task I's outcome RC (ERR) in the group. */
static void
group_note(struct streams_group *g, int rc, const struct rs_err *err)
{
	if (rc == 0)
		return;
	if (!g->failed) {
		g->failed = 1;
		g->rc = rc;
		g->err = *err;
		return;
	}
	/* A stream told to stop because another failed says nothing new. */
	if (rc != RS_ECANCELED) {
		progress_clear();
		fprintf(stderr, "  also: %s\n", err->message);
	}
}

/* Keep CONN, the stream connection of SLOT (a shard, or n_shards + a
 * shard for a second one), idle for the next group, or close it. */
static void
idle_put(struct rs_run *run, int slot, struct rs_backend *conn, int keep)
{
	struct streams_idle *idle;

	if (conn == NULL)
		return;
	keep = keep && backend_supports(conn, RS_CAP_KEEP_IDLE);
	if (keep && run->idle == NULL)
		run->idle = calloc(2 * (size_t)run->plan->n_shards,
		                   sizeof(*run->idle));
	idle = run->idle != NULL ? &run->idle[slot] : NULL;
	if (!keep || idle == NULL || idle->n == STREAMS_IDLE_MAX) {
		await_close(&run->loop, conn);
		return;
	}
	idle->since[idle->n] = uv_now(&run->loop);
	idle->conn[idle->n++] = conn;
}

/* The most recently kept connection of SLOT, or NULL; those idle too
 * long are closed on the way. */
static struct rs_backend *
idle_take(struct rs_run *run, int slot)
{
	struct streams_idle *idle = run->idle != NULL ? &run->idle[slot] : NULL;

	while (idle != NULL && idle->n > 0) {
		struct rs_backend *conn = idle->conn[--idle->n];

		if (uv_now(&run->loop) - idle->since[idle->n] <=
		    STREAMS_IDLE_MS)
			return conn;
		await_close(&run->loop, conn);
	}
	return NULL;
}

void
streams_close_idle(struct rs_run *run, int shard)
{
	int n = run->plan->n_shards;

	for (int slot = 0; run->idle != NULL && slot < 2 * n; slot++)
		if (shard < 0 || slot % n == shard)
			while (run->idle[slot].n > 0)
				await_close(&run->loop,
				            run->idle[slot]
				                    .conn[--run->idle[slot].n]);
	if (shard < 0) {
		free(run->idle);
		run->idle = NULL;
	}
}

static void
stream_main(void *arg)
{
	struct stream *s = arg;
	struct streams_group *g = s->group;
	struct rs_run *run = g->run;

	while (!g->failed && !run->stop_requested && g->next < g->spec->n) {
		struct rs_err err = {0};
		int i = g->next++;
		int rc = g->spec->task(run, i, g->spec->arg, &err);

		s->failed |= rc != 0;
		group_note(g, rc, &err);
	}
	/* A task that failed may leave its connection mid-statement or in
	 * a transaction: only a stream that succeeded gives its back. */
	if (s->own != NULL)
		for (int i = 0; i < 2 * run->plan->n_shards; i++)
			idle_put(run, i, s->own[i], !s->failed);
}

/* Tasks one after another in the calling stream (a nested group). */
static int
streams_inline(struct rs_run *run, const struct rs_streams_spec *spec,
               struct rs_err *err)
{
	for (int i = 0; i < spec->n; i++) {
		int rc = engine_checkpoint(run, err);

		if (rc == 0)
			rc = spec->task(run, i, spec->arg, err);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* Resume every stream that can run; returns how many ran. */
static int
streams_turn(struct stream *streams, int n)
{
	int ran = 0;

	for (int i = 0; i < n; i++)
		if (fiber_ready(streams[i].fiber)) {
			fiber_resume(streams[i].fiber);
			ran++;
		}
	return ran;
}

static int
streams_all_done(const struct stream *streams, int n)
{
	for (int i = 0; i < n; i++)
		if (!fiber_done(streams[i].fiber))
			return 0;
	return 1;
}

int
streams_run(struct rs_run *run, const struct rs_streams_spec *spec,
            struct rs_err *err)
{
	struct streams_group group = {.run = run, .spec = spec};
	struct streams_group *outer = run->streams;
	int n = spec->parallel < 1 ? 1 : spec->parallel;
	struct stream *streams;
	int rc = 0;

	if (spec->n <= 0)
		return 0;
	if (fiber_current() != NULL)
		return streams_inline(run, spec, err);
	if (n > spec->n)
		n = spec->n;
	streams = calloc((size_t)n, sizeof(*streams));
	if (streams == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	for (int i = 0; i < n && rc == 0; i++) {
		streams[i].group = &group;
		if (spec->own_connections) {
			streams[i].own = calloc(2 * (size_t)run->plan->n_shards,
			                        sizeof(*streams[i].own));
			if (streams[i].own == NULL)
				rc = RS_ENOMEM;
		}
		if (rc == 0)
			rc = fiber_new(stream_main, &streams[i], &streams[i],
			               &streams[i].fiber);
	}
	if (rc != 0) {
		for (int i = 0; i < n; i++) {
			fiber_free(streams[i].fiber);
			free(streams[i].own);
		}
		free(streams);
		return rs_err_set(err, rc, "out of memory for %d streams", n);
	}
	/* The group lives as long as this call: run->streams is set back
	 * to OUTER before every return below. */
	// cppcheck-suppress autoVariables
	run->streams = &group;
	while (!streams_all_done(streams, n)) {
		if (streams_turn(streams, n) > 0)
			continue;
		/* Every stream waits: for a callback, which stops the loop
		 * (a journal sync's among them). */
		uv_run(&run->loop, UV_RUN_DEFAULT);
		if (streams_turn(streams, n) == 0 &&
		    !uv_loop_alive(&run->loop) &&
		    !streams_all_done(streams, n)) {
			/* Nothing can ever wake them: a bug, not a state to
			 * wait in for ever. */
			fprintf(stderr, "reshard: streams wait for nothing\n");
			abort();
		}
	}
	/* A sync still on a worker thread (asked for by a chunk that then
	 * wrote nothing) ends before the group: the loop may close next. */
	while (run->journal_syncing)
		uv_run(&run->loop, UV_RUN_ONCE);
	run->streams = outer;
	for (int i = 0; i < n; i++) {
		fiber_free(streams[i].fiber);
		free(streams[i].own);
	}
	free(streams);
	if (group.failed) {
		*err = group.err;
		return group.rc;
	}
	if (run->stop_requested)
		return engine_checkpoint(run, err);
	return 0;
}

int
streams_connection(struct rs_run *run, int shard, int second, int *mine,
                   struct rs_backend **out, struct rs_err *err)
{
	struct stream *s = stream_current(run);
	struct rs_backend **slot;
	int rc = 0;

	*mine = s != NULL && s->own != NULL;
	*out = NULL;
	if (!*mine)
		return 0;
	slot = &s->own[second ? run->plan->n_shards + shard : shard];
	if (*slot == NULL)
		*slot = idle_take(run,
		                  second ? run->plan->n_shards + shard : shard);
	if (*slot == NULL)
		rc = engine_connect(run, shard, slot, err);
	*out = *slot;
	return rc;
}

/* One journal_sync_wal on libuv's thread pool, covering every sync asked
 * for up to GENERATION. */
struct journal_sync_job {
	uv_work_t req;
	struct rs_run *run;
	int generation;
	int rc;
	struct rs_err err;
};

static void sync_start(struct rs_run *run);

static void
sync_work(uv_work_t *req)
{
	struct journal_sync_job *job = req->data;

	job->rc = journal_sync_wal(job->run->journal, &job->err);
}

/* On the loop thread: the sync is done.  Its generations are covered, or,
 * when it failed, every wait from now on fails (a journal that could not
 * be made durable is trusted no further). */
static void
sync_done(uv_work_t *req, int status)
{
	struct journal_sync_job *job = req->data;
	struct rs_run *run = job->run;

	if (status != 0 && job->rc == 0)
		job->rc = rs_err_set(&job->err, RS_EINTERNAL,
		                     "journal sync cancelled (%s)",
		                     uv_strerror(status));
	if (job->rc != 0 && run->journal_sync_rc == 0) {
		run->journal_sync_rc = job->rc;
		run->journal_sync_err = job->err;
	}
	if (job->generation > run->journal_synced)
		run->journal_synced = job->generation;
	/* After a failure no sync is started again: every ticket handed out
	 * is answered now, with the error. */
	if (run->journal_sync_rc != 0)
		run->journal_synced = run->journal_wanted;
	run->journal_syncing = 0;
	free(job);
	if (run->journal_wanted > run->journal_synced &&
	    run->journal_sync_rc == 0)
		sync_start(run);
	uv_stop(&run->loop);
}

/* Start a sync covering every generation asked for so far.  When it
 * cannot be queued, it is made here, on the loop thread. */
static void
sync_start(struct rs_run *run)
{
	struct journal_sync_job *job = calloc(1, sizeof(*job));
	int rc;

	if (job != NULL) {
		job->req.data = job;
		job->run = run;
		job->generation = run->journal_wanted;
		if (uv_queue_work(&run->loop, &job->req, sync_work,
		                  sync_done) == 0) {
			run->journal_syncing = 1;
			return;
		}
		free(job);
	}
	rc = journal_sync(run->journal, &run->journal_sync_err);
	if (rc != 0 && run->journal_sync_rc == 0)
		run->journal_sync_rc = rc;
	run->journal_synced = run->journal_wanted;
}

int
streams_sync_journal_begin(struct rs_run *run)
{
	if (stream_current(run) == NULL || !journal_can_sync_wal(run->journal))
		return 0;
	++run->journal_wanted;
	if (run->journal_sync_rc != 0) /* failed: answered at once, so */
		run->journal_synced = run->journal_wanted;
	else if (!run->journal_syncing)
		sync_start(run);
	return run->journal_wanted;
}

int
streams_sync_journal_wait(struct rs_run *run, int ticket, struct rs_err *err)
{
	if (ticket <= 0)
		return journal_sync(run->journal, err);
	fiber_wait(&run->journal_synced, ticket);
	if (run->journal_sync_rc != 0)
		*err = run->journal_sync_err;
	return run->journal_sync_rc;
}

int
streams_sync_journal(struct rs_run *run, struct rs_err *err)
{
	return streams_sync_journal_wait(run, streams_sync_journal_begin(run),
	                                 err);
}

int
streams_failed(const struct rs_run *run)
{
	return stream_current(run) != NULL && run->streams->failed;
}

void
streams_throttle(struct rs_run *run, int64_t rows)
{
	long rate = run->plan->options.max_rows_per_second;
	uint64_t now, start;

	if (rate <= 0 || rows <= 0)
		return;
	uv_update_time(&run->loop);
	now = uv_now(&run->loop);
	start = run->throttle_at > now ? run->throttle_at : now;
	run->throttle_at = start + (uint64_t)rows * 1000 / (uint64_t)rate;
	await_sleep(&run->loop, start - now);
}
