/*
 * fence and unfence (DESIGN §7 rule 2): triggers on every source table
 * that reject writes with a message naming the run, persistent until
 * unfence (or abort) removes them — from the sources and, in a doubling,
 * from the replicas, which carry their primary's triggers.
 */
#include <stdio.h>
#include <time.h>

#include "steps/steps.h"

static int
fence_run(struct rs_run *run, struct rs_err *err)
{
	int shards[RS_PLAN_MAX_SHARDS];
	int n = steps_map_shards(run->plan->from, shards);
	char since[32], now[32];
	int rc;

	/* The intent first: status says "fenced" from here on. */
	if (journal_fact_get(run->journal, "fenced_since", since,
	                     sizeof(since)) != 1) {
		snprintf(now, sizeof(now), "%lld", (long long)time(NULL));
		rc = journal_fact_set(run->journal, "fenced_since", now, err);
		if (rc != 0)
			return rc;
	}
	for (int i = 0; i < n; i++) {
		rc = steps_fence_shard(run, shards[i], 1, err);
		if (rc != 0)
			return rc;
	}
	return 0;
}

static int
unfence_run(struct rs_run *run, struct rs_err *err)
{
	const struct rs_plan *plan = run->plan;
	int shards[RS_PLAN_MAX_SHARDS];
	int n = steps_map_shards(plan->from, shards);
	int rc;

	for (int i = 0; i < n; i++) {
		int replica = plan->shards[shards[i]].replica;

		rc = steps_fence_shard(run, shards[i], 0, err);
		if (rc == 0 && plan->strategy == RS_STRATEGY_DOUBLING &&
		    replica >= 0)
			rc = steps_fence_shard(run, replica, 0, err);
		if (rc != 0)
			return rc;
	}
	return journal_fact_delete(run->journal, "fenced_since", err);
}

const struct rs_step_def step_fence = {
	.name = "fence",
	.summary = "block writes on the source tables",
	.run = fence_run,
};

const struct rs_step_def step_unfence = {
	.name = "unfence",
	.summary = "let writes resume, routed by the new map",
	.run = unfence_run,
};
