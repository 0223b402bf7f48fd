/*
 * The step executor: journal, steps in order, confirmation before what
 * cannot be undone, --until, signals, fault points, and the control
 * connection of every shard.
 *
 * For each step of the strategy, in order: a step the journal records as
 * done is skipped; any other is begun in the journal (state running,
 * attempts + 1), run, and recorded as done or failed.  A step that was
 * running when the process died is simply run again: steps are idempotent
 * and skip the chunks the journal records as done.
 */
#include "engine/engine.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/fiber.h"
#include "common/progress.h"
#include "engine/await.h"
#include "engine/marker.h"
#include "engine/streams.h"
#include "shardmap/stats.h"
#include "engine/plan_text.h"

int
engine_fault_at(const char *point)
{
	const char *want = getenv("RESHARD_FAULT");

	return want != NULL && strcmp(want, point) == 0;
}

void
engine_fault(const char *point)
{
	if (engine_fault_at(point)) {
		fprintf(stderr, "reshard: fault point %s: exiting now\n",
		        point);
		_exit(99);
	}
}

/* The fault point "WHEN:STEP:N". */
static void
engine_fault_numbered(const char *when, const char *step, int64_t n)
{
	char point[96];

	snprintf(point, sizeof(point), "%s:%s:%lld", when, step, (long long)n);
	engine_fault(point);
}

void
engine_fault_chunk(const char *step, int64_t n)
{
	engine_fault_numbered("after-chunk", step, n);
}

void
engine_fault_effect(const char *step, int64_t n)
{
	engine_fault_numbered("after-effect", step, n);
}

void
engine_physical(const struct rs_map *map, const char *table, int index,
                char *buf, size_t size)
{
	if (map_table_name(map, table, index, buf, size) < 0)
		snprintf(buf, size, "%s", table);
}

int
engine_tables_per_shard(const struct rs_map *map)
{
	return map_has_tables(map) ? map_def(map)->tables_per_db : 1;
}

struct rs_backend_config
engine_shard_config(const struct rs_plan *plan, int shard)
{
	const struct rs_plan_shard *s = &plan->shards[shard];

	return (struct rs_backend_config){
		.shard = s->name,
		.url = s->url,
		.password_env = s->password_env,
		.base_dir = plan->dir,
		.op_timeout_ms = plan->options.operation_timeout_seconds * 1000,
	};
}

int
engine_shard_exists(struct rs_run *run, int shard)
{
	struct rs_backend_config config = engine_shard_config(run->plan, shard);
	struct rs_backend *probe;
	int exists;

	if (run->shards[shard] != NULL)
		return 1;
	if (backend_new(&run->loop, &config, &probe, NULL) != 0)
		return 1; /* a bad URL: let connecting say what is wrong */
	exists = backend_exists(probe);
	await_close(&run->loop, probe);
	return exists;
}

int
engine_connect(struct rs_run *run, int shard, struct rs_backend **out,
               struct rs_err *err)
{
	struct rs_backend_config config = engine_shard_config(run->plan, shard);
	int rc;

	*out = NULL;
	rc = backend_new(&run->loop, &config, out, err);

	if (rc == 0)
		rc = await_connect(&run->loop, *out, err);
	if (rc != 0 && *out != NULL) {
		await_close(&run->loop, *out);
		*out = NULL;
	}
	return rc;
}

int
engine_shard(struct rs_run *run, int shard, struct rs_backend **out,
             struct rs_err *err)
{
	struct rs_backend *backend;
	int mine, rc = streams_connection(run, shard, 0, &mine, out, err);

	if (mine)
		return rc;
	*out = run->shards[shard];
	if (*out != NULL)
		return 0;
	rc = engine_connect(run, shard, &backend, err);
	if (rc != 0)
		return rc;
	if (run->shards[shard] != NULL) {
		/* Another stream connected it while this one waited. */
		await_close(&run->loop, backend);
		backend = run->shards[shard];
	}
	run->shards[shard] = *out = backend;
	return 0;
}

int
engine_second(struct rs_run *run, int shard, struct rs_backend **out,
              struct rs_err *err)
{
	int mine, rc = streams_connection(run, shard, 1, &mine, out, err);

	if (!mine)
		*out = NULL;
	return mine ? rc : 0;
}

/* The description of PHYSICAL on SHARD in the run's cache, or NULL. */
static const struct rs_table_def *
engine_table_cached(const struct rs_run *run, int shard, const char *physical)
{
	for (int i = 0; i < run->n_tables; i++)
		if (run->tables[i].shard == shard && !run->tables[i].stale &&
		    strcmp(run->tables[i].physical, physical) == 0)
			return run->tables[i].def;
	return NULL;
}

void
engine_table_forget(struct rs_run *run, int shard, const char *physical)
{
	for (int i = 0; i < run->n_tables; i++)
		if (run->tables[i].shard == shard &&
		    strcmp(run->tables[i].physical, physical) == 0)
			run->tables[i].stale = 1;
}

int
engine_table(struct rs_run *run, int shard, const char *physical,
             const struct rs_table_def **out, struct rs_err *err)
{
	struct rs_backend *backend;
	struct engine_table *grown, *t;
	struct rs_table_def *def;
	int rc;

	*out = engine_table_cached(run, shard, physical);
	if (*out != NULL)
		return 0;
	rc = engine_shard(run, shard, &backend, err);
	if (rc == 0)
		rc = await_describe(&run->loop, backend, physical, &def, err);
	if (rc != 0)
		return rc;
	/* Another stream may have described it while this one waited. */
	*out = engine_table_cached(run, shard, physical);
	if (*out != NULL) {
		backend_table_free(def);
		return 0;
	}
	grown = realloc(run->tables,
	                sizeof(*grown) * (size_t)(run->n_tables + 1));
	if (grown == NULL) {
		backend_table_free(def);
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	}
	run->tables = grown;
	t = &run->tables[run->n_tables];
	t->shard = shard;
	t->physical = strdup(physical);
	t->def = def;
	t->stale = 0;
	if (t->physical == NULL) {
		backend_table_free(def);
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	}
	run->n_tables++;
	*out = def;
	return 0;
}

void
engine_tables_release(struct rs_run *run)
{
	for (int i = 0; i < run->n_tables; i++) {
		free(run->tables[i].physical);
		backend_table_free(run->tables[i].def);
	}
	free(run->tables);
	run->tables = NULL;
	run->n_tables = 0;
	free(run->sole_source);
	run->sole_source = NULL;
}

void
engine_shard_close(struct rs_run *run, int shard)
{
	await_close(&run->loop, run->shards[shard]);
	run->shards[shard] = NULL;
	streams_close_idle(run, shard);
}

void
engine_shards_close(struct rs_run *run)
{
	for (int i = 0; run->shards != NULL && i < run->plan->n_shards; i++)
		engine_shard_close(run, i);
	streams_close_idle(run, -1);
}

int
engine_checkpoint(struct rs_run *run, struct rs_err *err)
{
	if (fiber_current() == NULL)
		uv_run(&run->loop, UV_RUN_NOWAIT); /* deliver pending signals */
	else
		fiber_yield(); /* the scheduler runs the loop */
	if (streams_failed(run))
		return rs_err_set(err, RS_ECANCELED,
		                  "stopped: another stream of step %s failed",
		                  run->step != NULL ? run->step->name : "-");
	if (run->stop_requested)
		return rs_err_set(
			err, RS_ECANCELED,
			"stopped at a checkpoint of step %s on request; "
			"`reshard run %s` resumes from here",
			run->step != NULL ? run->step->name : "-",
			run->plan->path);
	if (run->give_back_at != 0 && (int64_t)time(NULL) >= run->give_back_at)
		return rs_err_set(
			err, RS_EGIVEBACK,
			"step %s: the fence has been up for "
			"options.fence_timeout_seconds (%d s) and the "
			"cutover is not done",
			run->step != NULL ? run->step->name : "-",
			run->plan->options.fence_timeout_seconds);
	return 0;
}

static void
on_signal(uv_signal_t *handle, int signum)
{
	struct rs_run *run = handle->data;

	if (run->stop_requested) /* a second ^C: leave now */
		_exit(130);
	run->stop_requested = 1;
	progress_clear();
	fprintf(stderr,
	        "\nreshard: %s received; stopping at the next checkpoint "
	        "(again to quit at once)\n",
	        signum == SIGINT ? "SIGINT" : "SIGTERM");
}

/* What a stop before a step leaves behind, for its message: the shards
 * whose writes stay fenced, into BUF ("" when none). */
static void
engine_fence_note(struct rs_run *run, char *buf, size_t size)
{
	const struct rs_plan *plan = run->plan;
	char since[32];
	int shards[RS_PLAN_MAX_SHARDS];
	int n = stats_map_shards(plan->from, shards, RS_PLAN_MAX_SHARDS);
	size_t at;

	buf[0] = '\0';
	if (journal_fact_get(run->journal, "fenced_since", since, sizeof(since),
	                     NULL) != 1)
		return;
	at = (size_t)snprintf(buf, size, "; writes stay fenced on");
	for (int i = 0; i < n && at < size; i++)
		at += (size_t)snprintf(buf + at, size - at, "%s %s",
		                       i ? "," : "",
		                       plan->shards[shards[i]].name);
	if (at < size)
		snprintf(buf + at, size - at,
		         " until `reshard run %s` goes on or `reshard abort "
		         "%s` lifts the fence",
		         plan->path, plan->path);
}

/* The run's log: a progress line every few seconds of a step. */
static void
engine_progress_note(void *arg, const char *line)
{
	struct rs_run *run = arg;

	journal_event(run->journal, "info", "progress %s", line);
}

/* Ask before STEP (options->confirm).  Returns 0 to go on, RS_EUSAGE
 * with nobody to ask, RS_ECANCELED for a "no". */
static int
engine_confirm(struct rs_run *run, const struct rs_step_def *step,
               struct rs_err *err)
{
	const struct rs_run_options *o = run->options;
	char note[512];
	int answer;

	if (o->yes) {
		journal_event(run->journal, "info",
		              "step %s cannot be undone: confirmed by --yes",
		              step->name);
		return 0;
	}
	answer = o->confirm != NULL ? o->confirm(step, o->confirm_arg) : -1;
	journal_event(run->journal, answer > 0 ? "info" : "warn",
	              "step %s cannot be undone: %s", step->name,
	              answer > 0    ? "confirmed at the prompt"
	              : answer == 0 ? "declined at the prompt"
	                            : "no terminal to ask and no --yes");
	if (answer < 0)
		return rs_err_set(
			err, RS_EUSAGE,
			"step %s cannot be undone (%s) and there is no "
			"terminal to ask; run again with --yes",
			step->name, step->summary);
	if (answer > 0)
		return 0;
	engine_fence_note(run, note, sizeof(note));
	return rs_err_set(err, RS_ECANCELED,
	                  "stopped before step %s as answered; step %s was not "
	                  "begun%s%s",
	                  step->name, step->name, note,
	                  note[0] ? "" : "; `reshard run` asks again");
}

void
engine_journal_remove(const char *path)
{
	char side[4200];

	unlink(path);
	snprintf(side, sizeof(side), "%s-wal", path);
	unlink(side);
	snprintf(side, sizeof(side), "%s-shm", path);
	unlink(side);
}

int
engine_past_no_return(struct rs_run *run, int *past, struct rs_err *err)
{
	*past = 0;
	for (int i = 0; i < run->strategy->n_steps; i++) {
		struct rs_step_record rec;
		int rc;

		if (!run->strategy->steps[i]->no_return)
			continue;
		rc = journal_step_get(run->journal,
		                      run->strategy->steps[i]->name, &rec, err);
		if (rc != 0)
			return rc;
		*past |= rec.state != RS_STEP_PENDING;
	}
	return 0;
}

/* Once an abort has begun, only abort may go on (it finishes itself). */
static int
engine_refuse_aborting(struct rs_run *run, struct rs_err *err)
{
	char state[32];
	int rc = journal_fact_get(run->journal, "abort", state, sizeof(state),
	                          err);

	if (rc <= 0) /* no abort, or the journal cannot say */
		return rc;
	return rs_err_set(err, RS_EUSAGE,
	                  "an abort of run %s has begun and not finished: the "
	                  "run cannot go on after it; `reshard abort %s` "
	                  "finishes the abort",
	                  run->plan->name, run->plan->path);
}

/* Set run->give_back_at for STEP: when STEP is a step of the strategy
 * after the one that begins the cutover (give_back), the fence is up (the
 * fact fenced_since) and neither STEP nor a step before it that cannot be
 * undone (irreversible, no_return) has begun, the fence's start plus
 * fence_timeout_seconds; else 0. */
static int
engine_arm_give_back(struct rs_run *run, const struct rs_step_def *step,
                     struct rs_err *err)
{
	char since[32];
	int cutover = 0; /* a step that can give the fence back came first */
	int fenced;

	run->give_back_at = 0;
	fenced = journal_fact_get(run->journal, "fenced_since", since,
	                          sizeof(since), err);
	if (fenced <= 0)
		return fenced;
	for (int i = 0; i < run->strategy->n_steps; i++) {
		const struct rs_step_def *s = run->strategy->steps[i];
		struct rs_step_record rec;
		int rc;

		cutover |= s->give_back != NULL;
		if (!s->irreversible && !s->no_return) {
			if (s != step)
				continue;
			/* Only a step of the cutover, after the one that
			 * begins it, gives it back. */
			if (cutover)
				run->give_back_at =
					strtoll(since, NULL, 10) +
					run->plan->options
						.fence_timeout_seconds;
			return 0;
		}
		if (s == step)
			return 0;
		rc = journal_step_get(run->journal, s->name, &rec, err);
		if (rc != 0)
			return rc;
		if (rec.state != RS_STEP_PENDING)
			return 0;
	}
	/* A step outside the strategy's list (a verify run alone): it is
	 * not part of the cutover and never gives it back. */
	return 0;
}

/* The most attempts at a cutover (fence … first irreversible step) that
 * give the fence back before the run fails with writes open. */
#define ENGINE_CUTOVER_TRIES 3

/* STEPS[FAILED] gave the cutover back (RS_EGIVEBACK): make the steps from
 * the one that begins the cutover (give_back) up to it pending again — in
 * the journal first, so that a crash from here on resumes with the fence
 * put up again — then give the fence back, and wait a little more each
 * time.  *FROM is where the run goes on.  Returns 0 to try again, or the
 * error (RS_EGIVEBACK with the last attempt's cause after
 * ENGINE_CUTOVER_TRIES attempts; writes are open then). */
static int
engine_give_back(struct rs_run *run, int failed, int *from, struct rs_err *err)
{
	const struct rs_step_def *const *steps = run->strategy->steps;
	char tries[16] = "0", cause[sizeof(err->message)];
	int first = failed, n, rc;

	while (first >= 0 && steps[first]->give_back == NULL)
		first--;
	if (first < 0)
		return rs_err_set(err, RS_EINTERNAL,
		                  "step %s gave the cutover back, but no step "
		                  "before it can (a bug)",
		                  steps[failed]->name);
	snprintf(cause, sizeof(cause), "%s", err->message);
	rc = journal_fact_get(run->journal, "cutover_tries", tries,
	                      sizeof(tries), err);
	if (rc < 0)
		return rc;
	n = (int)strtol(tries, NULL, 10) + 1;
	snprintf(tries, sizeof(tries), "%d", n);
	rc = journal_fact_set(run->journal, "cutover_tries", tries, err);
	for (int i = failed; rc == 0 && i >= first; i--)
		rc = journal_step_reset(run->journal, steps[i]->name, err);
	if (rc == 0)
		rc = steps[first]->give_back(run, err);
	if (rc != 0)
		return rc;
	journal_event(run->journal, "warn",
	              "cutover attempt %d of %d given back: %s", n,
	              ENGINE_CUTOVER_TRIES, cause);
	engine_fault("after-give-back");
	if (n >= ENGINE_CUTOVER_TRIES)
		return rs_err_set(
			err, RS_EGIVEBACK,
			"%s; the fence was given back %d times (writes "
			"are open): raise options.fence_timeout_seconds "
			"or make the cutover's work smaller, then "
			"`reshard run %s` tries again",
			cause, n, run->plan->path);
	fprintf(stderr,
	        "  %s\n  the fence was given back (attempt %d of %d): writes "
	        "resume, the cutover is tried again in %d s\n",
	        cause, n, ENGINE_CUTOVER_TRIES, 2 * n);
	await_sleep(&run->loop, (uint64_t)2000 * (uint64_t)n);
	if (run->stop_requested)
		return rs_err_set(
			err, RS_ECANCELED,
			"stopped on request after the fence was given "
			"back; `reshard run %s` tries the cutover again",
			run->plan->path);
	*from = first;
	return 0;
}

/* After STEP of `run` failed with RC, tell the operator in ERR's message
 * (the journal has the cause alone) that resuming is the way on, when
 * what failed is outside the run: a statement a server refused (a full
 * disk, a lock wait, a constraint), a lost connection, a local file or
 * memory.  Every step is idempotent, so the same `run` goes on from the
 * first step not done once the cause is gone.  Other failures say what to
 * do themselves (a verify that found differences, a refusal, a stop, a
 * give-back), as do messages that name a command or say to try again.  A
 * message too long for both keeps its start and the hint whole
 * (rs_err_append). */
static void
engine_resume_hint(const struct rs_run *run, const struct rs_step_def *step,
                   int rc, struct rs_err *err)
{
	static const char *const advised[] = {"`reshard ", "again"};
	char hint[sizeof(err->message)];
	const char *at = step->name;

	if (err == NULL || (rc != RS_EQUERY && rc != RS_ECONNECT &&
	                    rc != RS_EIO && rc != RS_ENOMEM))
		return;
	for (size_t i = 0; i < sizeof(advised) / sizeof(advised[0]); i++)
		if (strstr(err->message, advised[i]) != NULL)
			return;
	/* The first step not done: STEP, unless a give-back that failed
	 * had made the steps from the fence on pending again. */
	for (int i = 0; i < run->strategy->n_steps; i++) {
		struct rs_step_record rec;

		if (journal_step_get(run->journal,
		                     run->strategy->steps[i]->name, &rec,
		                     NULL) != 0)
			break;
		if (rec.state != RS_STEP_DONE) {
			at = run->strategy->steps[i]->name;
			break;
		}
	}
	/* A hint cut short by a very long plan path is longer than
	 * rs_err_append takes: no hint then. */
	if (snprintf(
		    hint, sizeof(hint),
		    "; once that is fixed, `reshard run %s` resumes at step %s",
		    run->plan->path, at) >= 0)
		rs_err_append(err, hint);
}

/* Run one step with its journal records around it. */
static int
engine_step(struct rs_run *run, const struct rs_step_def *step,
            struct rs_err *err)
{
	struct rs_step_record rec;
	int rc = journal_step_get(run->journal, step->name, &rec, err);

	if (rc != 0)
		return rc;
	if (rec.state == RS_STEP_DONE) {
		fprintf(stderr, "step %-14s done earlier\n", step->name);
		return 0;
	}
	/* A stop asked for during the last step never carries the run
	 * into this one. */
	uv_run(&run->loop, UV_RUN_NOWAIT);
	if (run->stop_requested) {
		char note[512];

		engine_fence_note(run, note, sizeof(note));
		rc = rs_err_set(err, RS_ECANCELED,
		                "stopped before step %s on request; "
		                "`reshard run %s` goes on from there%s",
		                step->name, run->plan->path, note);
		journal_event(run->journal, "warn", "before step %s: %s",
		              step->name,
		              err != NULL ? err->message : "stopped");
		return rc;
	}
	/* Status tells a stop or a refusal here from a crash by this event
	 * and the run's outcome: no step records it. */
	if (step->irreversible && (rc = engine_confirm(run, step, err)) != 0) {
		journal_event(run->journal,
		              rc == RS_ECANCELED ? "warn" : "error",
		              "before step %s: %s", step->name,
		              err != NULL ? err->message : "not begun");
		return rc;
	}
	char point[64];
	snprintf(point, sizeof(point), "before-step:%s", step->name);
	engine_fault(point);
	rc = step->lazy_begin && step->undo == NULL
	             ? journal_step_begin_lazy(run->journal, step->name, err)
	             : journal_step_begin(run->journal, step->name, err);
	if (rc != 0)
		return rc;
	{
		const char *how = rec.state == RS_STEP_PENDING ? "starting"
		                  : rec.state == RS_STEP_FAILED
		                          ? "resuming (it failed)"
		                  : rec.state == RS_STEP_STOPPED
		                          ? "resuming (it was stopped)"
		                          : "resuming (it was interrupted)";

		fprintf(stderr, "step %-14s %s\n", step->name, how);
		journal_event(run->journal, "info", "step %s %s", step->name,
		              how);
	}
	run->step = step;
	run->progress.done = 0;
	run->step_chunks = 0;
	rc = engine_arm_give_back(run, step, err);
	if (rc == 0)
		rc = step->run(run, err);
	snprintf(point, sizeof(point), "quiet-fail:%s", step->name);
	if (rc == 0 && engine_fault_at(point)) {
		rc = 1; /* a step's failure that says nothing: a bug */
		if (err != NULL)
			err->message[0] = '\0';
	}
	run->give_back_at = 0;
	/* A failure with no message is a bug of the step's; still, the
	 * operator must learn which step, and that resuming is safe. */
	if (rc != 0 && err != NULL && err->message[0] == '\0')
		rc = rs_err_set(err, rc < 0 ? rc : RS_EINTERNAL,
		                "step %s failed without saying why (code %d: "
		                "a bug in reshard, please report it); every "
		                "step can be run again: `reshard run %s` "
		                "resumes it",
		                step->name, rc, run->plan->path);
	if (rc != 0) {
		const char *message = err != NULL ? err->message : "failed";
		struct rs_err ignored;

		if (rc == RS_ECANCELED)
			journal_step_stopped(run->journal, step->name, message,
			                     &ignored);
		else
			journal_step_failed(run->journal, step->name, message,
			                    &ignored);
		journal_event(run->journal,
		              rc == RS_ECANCELED ? "warn" : "error",
		              "step %s: %s", step->name, message);
		return rc;
	}
	rc = journal_step_done(run->journal, step->name,
	                       (int64_t)run->progress.done, err);
	if (rc != 0)
		return rc;
	journal_event(run->journal, "info", "step %s done", step->name);
	fprintf(stderr, "step %-14s done\n", step->name);
	snprintf(point, sizeof(point), "after-step:%s", step->name);
	engine_fault(point);
	return 0;
}

int
engine_touches(const struct rs_run *run, int shard)
{
	return run->strategy == NULL || run->strategy->touches == NULL ||
	       run->strategy->touches(run->plan, shard);
}

/* Close what engine_open opened, recording the outcome of RC in the
 * journal; returns RC, or RS_EINTERNAL when RC was 0 and the loop did
 * not close cleanly. */
static int
engine_close(struct rs_run *run, int rc, struct rs_err *err)
{
	engine_shards_close(run);
	uv_close((uv_handle_t *)&run->sigint, NULL);
	uv_close((uv_handle_t *)&run->sigterm, NULL);
	if (await_loop_close(&run->loop, rc == 0 ? err : NULL) != 0 && rc == 0)
		rc = RS_EINTERNAL;
	engine_tables_release(run);
	journal_close(run->journal, rc == 0              ? "done"
	                            : rc == RS_ECANCELED ? "stopped"
	                                                 : "failed");
	free(run->shards);
	run->shards = NULL;
	return rc;
}

/* Set up RUN for PLAN and STRATEGY: its journal opened for COMMAND (the
 * run lock taken), its loop, and SIGINT and SIGTERM asking it to stop.
 * Returns 0, or the error with nothing left open. */
static int
engine_open(struct rs_run *run, const struct rs_plan *plan,
            const struct rs_strategy_def *strategy,
            const struct rs_run_options *options, const char *command,
            struct rs_err *err)
{
	int rc;

	memset(run, 0, sizeof(*run));
	run->plan = plan;
	run->strategy = strategy;
	run->options = options;
	snprintf(run->fence_message, sizeof(run->fence_message),
	         "writes paused by reshard: run %s, step fence", plan->name);
	run->shards = calloc((size_t)plan->n_shards, sizeof(*run->shards));
	if (run->shards == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	rc = engine_open_journal(plan, command, &run->journal, err);
	if (rc != 0) {
		free(run->shards);
		return rc;
	}
	run->progress.note = engine_progress_note;
	run->progress.note_arg = run;
	rc = await_loop_init(&run->loop, err);
	if (rc != 0) {
		journal_close(run->journal, "failed");
		free(run->shards);
		return rc;
	}
	/* A run that could not be stopped by a signal does not start.  The
	 * first signal handle of a loop makes its signal pipe: only it can
	 * fail for want of file descriptors. */
	rc = uv_signal_init(&run->loop, &run->sigint);
	if (rc != 0) {
		await_loop_close(&run->loop, NULL);
		journal_close(run->journal, "failed");
		free(run->shards);
		return rs_err_set(err, RS_EIO, "cannot watch signals: %s",
		                  uv_strerror(rc));
	}
	uv_signal_init(&run->loop, &run->sigterm); /* the pipe is there */
	run->sigint.data = run->sigterm.data = run;
	if (uv_signal_start(&run->sigint, on_signal, SIGINT) != 0 ||
	    uv_signal_start(&run->sigterm, on_signal, SIGTERM) != 0)
		return engine_close(run,
		                    rs_err_set(err, RS_EINTERNAL,
		                               "cannot watch SIGINT and "
		                               "SIGTERM"),
		                    NULL);
	return 0;
}

int
engine_run(const struct rs_plan *plan, const struct rs_strategy_def *strategy,
           const struct rs_run_options *options, struct rs_err *err)
{
	struct rs_run run;
	int rc, until = -1, created = 0, discard = 0, published = 0;
	int existed = access(plan->journal, F_OK) == 0;

	if (options->until != NULL) {
		for (int i = 0; i < strategy->n_steps; i++)
			if (strcmp(strategy->steps[i]->name, options->until) ==
			    0)
				until = i;
		if (until < 0)
			return rs_err_set(err, RS_EUSAGE,
			                  "--until %s: strategy %s has no such "
			                  "step; see `reshard status %s`",
			                  options->until, strategy->name,
			                  plan->path);
	}
	rc = engine_open(&run, plan, strategy, options, "run", err);
	if (rc != 0)
		return rc;
	rc = marker_run_id(&run, &created, err);
	if (rc == 0)
		rc = engine_refuse_aborting(&run, err);
	if (rc == 0)
		rc = engine_past_no_return(&run, &published, err);
	if (rc == 0) {
		rc = marker_guard(&run, published, err);
		/* A journal made only to be refused would look like a run
		 * of its own to the next command: it goes.  Not one that was
		 * there (one of a release before run ids has steps done). */
		discard = rc != 0 && created && !existed;
	}
	if (rc != 0 && !discard)
		journal_event(run.journal, "error", "run refused: %s",
		              err != NULL ? err->message : "before any step");
	/* Each `reshard run` has its own attempts at the cutover (the
	 * operator may have raised fence_timeout_seconds since). */
	if (rc == 0)
		rc = journal_fact_delete(run.journal, "cutover_tries", err);
	for (int i = 0; i < strategy->n_steps && rc == 0; i++) {
		int from = i;

		rc = engine_step(&run, strategy->steps[i], err);
		if (rc == RS_EGIVEBACK &&
		    (rc = engine_give_back(&run, i, &from, err)) == 0) {
			i = from - 1; /* the loop's i++ makes it FROM */
			continue;
		}
		if (rc != 0)
			engine_resume_hint(&run, strategy->steps[i], rc, err);
		if (rc == 0 && i == until) {
			fprintf(stderr,
			        "stopped after step %s as asked (--until); "
			        "`reshard run %s` goes on from here\n",
			        strategy->steps[i]->name, plan->path);
			break;
		}
	}
	rc = engine_close(&run, rc, err);
	if (discard)
		engine_journal_remove(plan->journal);
	return rc;
}

int
engine_run_one(const struct rs_plan *plan,
               const struct rs_strategy_def *strategy, const char *command,
               const struct rs_step_def *step, struct rs_err *err)
{
	static const struct rs_run_options options = {.yes = 1};
	struct rs_step_record rec;
	struct rs_run run;
	int existed = access(plan->journal, F_OK) == 0;
	int rc = engine_open(&run, plan, strategy, &options, command, err);

	if (rc != 0)
		return rc;
	rc = engine_refuse_aborting(&run, err);
	/* Done before: this is a new pass, from the start. */
	if (rc == 0)
		rc = journal_step_get(run.journal, step->name, &rec, err);
	if (rc == 0 && rec.state == RS_STEP_DONE)
		rc = journal_step_reset(run.journal, step->name, err);
	if (rc == 0)
		rc = engine_step(&run, step, err);
	rc = engine_close(&run, rc, err);
	/* A journal made only to be refused would stand for a run. */
	if (!existed && rc == RS_EUSAGE)
		engine_journal_remove(plan->journal);
	return rc;
}
