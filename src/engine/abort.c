/*
 * Aborting a run before publish: fences released, what the run made
 * removed, the journal set aside.  After publish the old routing is gone
 * and abort refuses: the run can only go forward.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine/await.h"
#include "engine/engine.h"
#include "engine/plan_text.h"
#include "shardmap/stats.h"

/* Remove the fence from every from-map table of SHARD; a shard that does
 * not exist (a replica never made) has nothing to release. */
static int
abort_unfence(struct rs_run *run, int shard, struct rs_err *err)
{
	const struct rs_plan *plan = run->plan;
	int slots = engine_tables_per_shard(plan->from);
	struct rs_backend *backend = engine_shard(run, shard, err);
	char physical[RS_PLAN_MAX_NAME + 1];

	if (backend == NULL)
		return err->code;
	for (int t = 0; t < plan->n_tables; t++)
		for (int slot = 0; slot < slots; slot++) {
			int rc;

			engine_physical(plan->from, plan->tables[t].name, slot,
			                physical, sizeof(physical));
			rc = await_fence(&run->loop, backend, physical, NULL, 0,
			                 err);
			if (rc != 0)
				return rc;
		}
	fprintf(stderr, "  %s: fence removed\n", plan->shards[shard].name);
	return 0;
}

static int
abort_steps(struct rs_run *run, struct rs_err *err)
{
	const struct rs_plan *plan = run->plan;
	struct rs_step_record publish, catch_up;
	int shards[RS_PLAN_MAX_SHARDS];
	int n = stats_map_shards(plan->from, shards, RS_PLAN_MAX_SHARDS), rc;

	rc = journal_step_get(run->journal, "publish", &publish, err);
	if (rc == 0)
		rc = journal_step_get(run->journal, "catch-up", &catch_up, err);
	if (rc != 0)
		return rc;
	if (publish.state != RS_STEP_PENDING)
		return rs_err_set(
			err, RS_EUSAGE,
			"run %s has %s publish: the new routing may be "
			"live and the old one is gone, so abort cannot "
			"undo it; `reshard run %s` finishes the run",
			plan->name,
			publish.state == RS_STEP_DONE ? "passed" : "started",
			plan->path);
	for (int i = 0; i < n && rc == 0; i++) {
		int r = plan->shards[shards[i]].replica;
		struct rs_backend_config config;
		struct rs_backend *replica = NULL;

		rc = abort_unfence(run, shards[i], err);
		if (rc != 0 || plan->strategy != RS_STRATEGY_DOUBLING ||
		    r < 0 || catch_up.state == RS_STEP_PENDING)
			continue;
		/* The replica reshard made (SQLite) goes; a server replica
		 * only loses the fence it carries from its primary. */
		config = (struct rs_backend_config){
			.shard = plan->shards[r].name,
			.url = plan->shards[r].url,
			.password_env = plan->shards[r].password_env,
			.base_dir = plan->dir,
		};
		rc = backend_new(&run->loop, &config, &replica, err);
		if (rc != 0)
			break;
		if (replica->url.engine == RS_ENGINE_SQLITE) {
			engine_shard_close(run, r);
			if (unlink(replica->url.database) == 0)
				fprintf(stderr,
				        "  %s: replica file %s removed\n",
				        plan->shards[r].name,
				        replica->url.database);
		} else {
			rc = abort_unfence(run, r, err);
		}
		await_close(&run->loop, replica);
	}
	return rc;
}

int
engine_abort(const struct rs_plan *plan, struct rs_err *err)
{
	struct rs_run run = {0};
	char aside[4096], wal[4200];
	struct stat st;
	int rc;

	if (stat(plan->journal, &st) != 0)
		return rs_err_set(err, RS_EUSAGE,
		                  "no journal at %s: plan %s was never run, "
		                  "there is nothing to abort",
		                  plan->journal, plan->name);
	run.plan = plan;
	run.shards = calloc((size_t)plan->n_shards, sizeof(*run.shards));
	if (run.shards == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	/* Take the lock (and check the plan) like a run would. */
	rc = engine_open_journal(plan, &run.journal, err);
	if (rc != 0) {
		free(run.shards);
		return rc;
	}
	uv_loop_init(&run.loop);
	rc = abort_steps(&run, err);
	for (int i = 0; i < plan->n_shards; i++)
		await_close(&run.loop, run.shards[i]);
	uv_run(&run.loop, UV_RUN_DEFAULT);
	uv_loop_close(&run.loop);
	if (rc == 0)
		journal_event(run.journal, "info", "run aborted");
	journal_close(run.journal, rc == 0 ? "aborted" : "failed");
	if (rc == 0) {
		snprintf(aside, sizeof(aside), "%s.aborted-%lld", plan->journal,
		         (long long)time(NULL));
		if (rename(plan->journal, aside) == 0)
			fprintf(stderr,
			        "run %s aborted; its journal is kept as %s\n",
			        plan->name, aside);
		snprintf(wal, sizeof(wal), "%s-wal", plan->journal);
		unlink(wal);
		snprintf(wal, sizeof(wal), "%s-shm", plan->journal);
		unlink(wal);
	}
	free(run.shards);
	return rc;
}
