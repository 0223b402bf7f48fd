/*
 * The scheduler of a step's streams (see streams.h): fibers that take
 * tasks from a shared list, and a loop in the main context that resumes
 * every fiber whose wait is over and otherwise runs libuv until a
 * callback ends one.
 */
#include "engine/streams.h"

#include <stdio.h>
#include <stdlib.h>

#include "common/fiber.h"
#include "common/progress.h"
#include "engine/await.h"

struct stream;

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
	                            its readers */
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

		group_note(g, rc, &err);
	}
	if (s->own != NULL)
		for (int i = 0; i < 2 * run->plan->n_shards; i++)
			await_close(&run->loop, s->own[i]);
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
		/* Every stream waits; those waiting for the journal share
		 * one fsync. */
		if (run->journal_wanted > run->journal_synced) {
			run->journal_sync_rc = journal_sync(
				run->journal, &run->journal_sync_err);
			run->journal_synced = run->journal_wanted;
			continue;
		}
		/* Every stream waits: for a callback, which stops the loop. */
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
streams_connection(struct rs_run *run, int shard, int reader, int *mine,
                   struct rs_backend **out, struct rs_err *err)
{
	struct stream *s = stream_current(run);
	struct rs_backend **slot;
	int rc = 0;

	*mine = s != NULL && s->own != NULL;
	*out = NULL;
	if (!*mine)
		return 0;
	slot = &s->own[reader ? run->plan->n_shards + shard : shard];
	if (*slot == NULL)
		rc = engine_connect(run, shard, slot, err);
	*out = *slot;
	return rc;
}

int
streams_sync_journal(struct rs_run *run, struct rs_err *err)
{
	int generation;

	if (stream_current(run) == NULL)
		return journal_sync(run->journal, err);
	generation = ++run->journal_wanted;
	fiber_wait(&run->journal_synced, generation);
	if (run->journal_sync_rc != 0)
		*err = run->journal_sync_err;
	return run->journal_sync_rc;
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
