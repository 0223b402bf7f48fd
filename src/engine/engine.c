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
#include <unistd.h>

#include "engine/await.h"
#include "engine/plan_text.h"

extern const struct rs_strategy_def strategy_doubling;

const struct rs_strategy_def *
engine_strategy(const struct rs_plan *plan)
{
	/* The split strategy's copy and capture steps are not built yet. */
	return plan->strategy == RS_STRATEGY_DOUBLING ? &strategy_doubling
	                                              : NULL;
}

void
engine_fault(const char *point)
{
	const char *want = getenv("RESHARD_FAULT");

	if (want != NULL && strcmp(want, point) == 0) {
		fprintf(stderr, "reshard: fault point %s: exiting now\n",
		        point);
		_exit(99);
	}
}

void
engine_fault_chunk(const char *step, int64_t n)
{
	char point[96];

	snprintf(point, sizeof(point), "after-chunk:%s:%lld", step,
	         (long long)n);
	engine_fault(point);
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

struct rs_backend *
engine_shard(struct rs_run *run, int shard, struct rs_err *err)
{
	const struct rs_plan_shard *s = &run->plan->shards[shard];
	struct rs_backend_config config = {
		.shard = s->name,
		.url = s->url,
		.password_env = s->password_env,
		.base_dir = run->plan->dir,
		.op_timeout_ms =
			run->plan->options.operation_timeout_seconds * 1000,
	};
	struct rs_backend *backend;

	if (run->shards[shard] != NULL)
		return run->shards[shard];
	if (backend_new(&run->loop, &config, &backend, err) != 0)
		return NULL;
	if (await_connect(&run->loop, backend, err) != 0) {
		await_close(&run->loop, backend);
		return NULL;
	}
	run->shards[shard] = backend;
	return backend;
}

const struct rs_table_def *
engine_table(struct rs_run *run, int shard, const char *physical,
             struct rs_err *err)
{
	struct rs_backend *backend;
	struct engine_table *grown, *t;
	struct rs_table_def *def;

	for (int i = 0; i < run->n_tables; i++)
		if (run->tables[i].shard == shard &&
		    strcmp(run->tables[i].physical, physical) == 0)
			return run->tables[i].def;
	backend = engine_shard(run, shard, err);
	if (backend == NULL ||
	    await_describe(&run->loop, backend, physical, &def, err) != 0)
		return NULL;
	grown = realloc(run->tables,
	                sizeof(*grown) * (size_t)(run->n_tables + 1));
	if (grown == NULL) {
		backend_table_free(def);
		rs_err_set(err, RS_ENOMEM, "out of memory");
		return NULL;
	}
	run->tables = grown;
	t = &run->tables[run->n_tables];
	t->shard = shard;
	t->physical = strdup(physical);
	t->def = def;
	if (t->physical == NULL) {
		backend_table_free(def);
		rs_err_set(err, RS_ENOMEM, "out of memory");
		return NULL;
	}
	run->n_tables++;
	return def;
}

/* Forget the tables engine_table described. */
static void
engine_tables_free(struct rs_run *run)
{
	for (int i = 0; i < run->n_tables; i++) {
		free(run->tables[i].physical);
		backend_table_free(run->tables[i].def);
	}
	free(run->tables);
	run->tables = NULL;
	run->n_tables = 0;
}

void
engine_shard_close(struct rs_run *run, int shard)
{
	await_close(&run->loop, run->shards[shard]);
	run->shards[shard] = NULL;
}

int
engine_checkpoint(struct rs_run *run, struct rs_err *err)
{
	uv_run(&run->loop, UV_RUN_NOWAIT); /* deliver pending signals */
	if (run->stop_requested)
		return rs_err_set(
			err, RS_ECANCELED,
			"stopped at a checkpoint of step %s on request; "
			"`reshard run %s` resumes from here",
			run->step != NULL ? run->step->name : "-",
			run->plan->path);
	return 0;
}

static void
on_signal(uv_signal_t *handle, int signum)
{
	struct rs_run *run = handle->data;

	if (run->stop_requested) /* a second ^C: leave now */
		_exit(130);
	run->stop_requested = 1;
	fprintf(stderr,
	        "\nreshard: %s received; stopping at the next checkpoint "
	        "(again to quit at once)\n",
	        signum == SIGINT ? "SIGINT" : "SIGTERM");
}

/* Ask before STEP on a terminal.  Returns 0 to go on, RS_EUSAGE not to. */
static int
engine_confirm(struct rs_run *run, const struct rs_step_def *step,
               struct rs_err *err)
{
	char answer[16];

	if (run->options->yes)
		return 0;
	if (!isatty(STDIN_FILENO))
		return rs_err_set(
			err, RS_EUSAGE,
			"step %s cannot be undone (%s) and there is no "
			"terminal to ask; run again with --yes",
			step->name, step->summary);
	fprintf(stderr, "step %s cannot be undone: %s.\nGo on? [y/N] ",
	        step->name, step->summary);
	fflush(stderr);
	if (fgets(answer, sizeof(answer), stdin) == NULL ||
	    (answer[0] != 'y' && answer[0] != 'Y'))
		return rs_err_set(err, RS_EUSAGE,
		                  "stopped before step %s; nothing was changed "
		                  "by it.  `reshard run` asks again",
		                  step->name);
	return 0;
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
	if (step->irreversible && (rc = engine_confirm(run, step, err)) != 0)
		return rc;
	char point[64];
	snprintf(point, sizeof(point), "before-step:%s", step->name);
	engine_fault(point);
	rc = journal_step_begin(run->journal, step->name, err);
	if (rc != 0)
		return rc;
	fprintf(stderr, "step %-14s %s%s\n", step->name,
	        rec.state == RS_STEP_PENDING ? "starting" : "resuming",
	        rec.state == RS_STEP_PENDING ? "" : " (it was interrupted)");
	run->step = step;
	run->progress.done = 0;
	run->step_chunks = 0;
	rc = step->run(run, err);
	if (rc != 0) {
		struct rs_err ignored;

		journal_step_failed(run->journal, step->name,
		                    err != NULL ? err->message : "failed",
		                    &ignored);
		journal_event(run->journal, "error", "step %s: %s", step->name,
		              err != NULL ? err->message : "failed");
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
engine_run(const struct rs_plan *plan, const struct rs_strategy_def *strategy,
           const struct rs_run_options *options, struct rs_err *err)
{
	struct rs_run run = {0};
	int rc, until = -1;

	run.plan = plan;
	run.strategy = strategy;
	run.options = options;
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
	snprintf(run.fence_message, sizeof(run.fence_message),
	         "writes paused by reshard: run %s, step fence", plan->name);
	run.shards = calloc((size_t)plan->n_shards, sizeof(*run.shards));
	if (run.shards == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	rc = engine_open_journal(plan, &run.journal, err);
	if (rc != 0) {
		free(run.shards);
		return rc;
	}
	uv_loop_init(&run.loop);
	uv_signal_init(&run.loop, &run.sigint);
	uv_signal_init(&run.loop, &run.sigterm);
	run.sigint.data = run.sigterm.data = &run;
	uv_signal_start(&run.sigint, on_signal, SIGINT);
	uv_signal_start(&run.sigterm, on_signal, SIGTERM);

	for (int i = 0; i < strategy->n_steps && rc == 0; i++) {
		rc = engine_step(&run, strategy->steps[i], err);
		if (rc == 0 && i == until) {
			fprintf(stderr,
			        "stopped after step %s as asked (--until); "
			        "`reshard run %s` goes on from here\n",
			        strategy->steps[i]->name, plan->path);
			break;
		}
	}

	for (int i = 0; i < plan->n_shards; i++)
		await_close(&run.loop, run.shards[i]);
	uv_close((uv_handle_t *)&run.sigint, NULL);
	uv_close((uv_handle_t *)&run.sigterm, NULL);
	uv_run(&run.loop, UV_RUN_DEFAULT);
	if (uv_loop_close(&run.loop) != 0 && rc == 0)
		rc = rs_err_set(err, RS_EINTERNAL,
		                "handles left open on the loop (a bug)");
	engine_tables_free(&run);
	journal_close(run.journal, rc == 0              ? "done"
	                           : rc == RS_ECANCELED ? "interrupted"
	                                                : "failed");
	free(run.shards);
	return rc;
}
