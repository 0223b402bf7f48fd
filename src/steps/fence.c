/*
 * fence and unfence: triggers on every source table that reject writes
 * with a message naming the run, persistent until unfence (or abort)
 * removes them — from the sources and, in a doubling, from the replicas,
 * which carry their primary's triggers.  The fence goes up in one
 * transaction with the shard's marker.  Before the fence comes down,
 * unfence starts the delete log on every table of the new map, so that
 * purge can tell a row the application deleted on its new owner from one
 * that owner never saw.
 */
#include <stdio.h>
#include <time.h>

#include "engine/marker.h"
#include "steps/steps.h"

static int
fence_run(struct rs_run *run, struct rs_err *err)
{
	int shards[RS_PLAN_MAX_SHARDS];
	int n = steps_map_shards(run->plan->from, shards);
	char since[32], now[32];
	struct rs_marker marker;
	int rc;

	/* The intent first: status says "fenced" from here on. */
	if (journal_fact_get(run->journal, "fenced_since", since,
	                     sizeof(since)) != 1) {
		snprintf(now, sizeof(now), "%lld", (long long)time(NULL));
		rc = journal_fact_set(run->journal, "fenced_since", now, err);
		if (rc != 0)
			return rc;
	}
	marker_fill(run, "fenced", 0, &marker);
	for (int i = 0; i < n; i++) {
		/* Another run's marker (one whose journal is not ours) may
		 * have come since the run began: never fence over it. */
		rc = marker_check_shard(run, shards[i], err);
		if (rc == 0)
			rc = steps_fence_shard(run, shards[i], 1, &marker, err);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* Start the delete log of every table of SHARD under `to`, where the
 * engine keeps one (purge's proof of deletes made after unfence). */
static int
delete_log_table(struct rs_run *run, int shard, int table, int slot,
                 const char *physical, void *arg, struct rs_err *err)
{
	struct rs_backend *backend = engine_shard(run, shard, err);
	const struct rs_table_def *def;

	(void)table;
	(void)slot;
	(void)arg;
	if (backend == NULL)
		return err->code;
	if (!backend_can_log_deletes(backend))
		return 0;
	def = engine_table(run, shard, physical, err);
	if (def == NULL)
		return err->code;
	return await_delete_log(&run->loop, backend, def, 1, err);
}

static int
unfence_run(struct rs_run *run, struct rs_err *err)
{
	const struct rs_plan *plan = run->plan;
	int shards[RS_PLAN_MAX_SHARDS], to[RS_PLAN_MAX_SHARDS];
	int n = steps_map_shards(plan->from, shards);
	int n_to = steps_map_shards(plan->to, to);
	int rc;

	/* Under the fence, so that no delete after it goes unrecorded. */
	for (int i = 0; i < n_to; i++) {
		rc = steps_each_table(run, plan->to, to[i], delete_log_table,
		                      NULL, err);
		if (rc != 0)
			return rc;
	}
	for (int i = 0; i < n; i++) {
		int replica = plan->shards[shards[i]].replica;

		rc = steps_fence_shard(run, shards[i], 0, NULL, err);
		if (rc == 0 && plan->strategy == RS_STRATEGY_DOUBLING &&
		    replica >= 0)
			rc = steps_fence_shard(run, replica, 0, NULL, err);
		if (rc != 0)
			return rc;
	}
	return journal_fact_delete(run->journal, "fenced_since", err);
}

/* Abort: lift the fence from every source, marking it aborted in the same
 * transaction — unless another run's marker is there (its fence is not
 * ours to lift). */
static int
fence_undo(struct rs_run *run, struct rs_err *err)
{
	int shards[RS_PLAN_MAX_SHARDS];
	int n = steps_map_shards(run->plan->from, shards);
	struct rs_marker marker;

	marker_fill(run, "aborted", 0, &marker);
	for (int i = 0; i < n; i++) {
		char point[128];
		int rc = marker_check_shard(run, shards[i], err);

		if (rc == 0)
			rc = steps_fence_shard(run, shards[i], 0, &marker, err);
		if (rc != 0)
			return rc;
		snprintf(point, sizeof(point), "after-abort:unfence:%s",
		         run->plan->shards[shards[i]].name);
		engine_fault(point);
	}
	return run->journal != NULL
	               ? journal_fact_delete(run->journal, "fenced_since", err)
	               : 0;
}

const struct rs_step_def step_fence = {
	.name = "fence",
	.summary = "block writes on the source tables",
	.run = fence_run,
	.undo = fence_undo,
};

const struct rs_step_def step_unfence = {
	.name = "unfence",
	.summary = "let writes resume, routed by the new map",
	.run = unfence_run,
};
