/*
 * The doubling strategy: N shards become 2N by promoting a replica of
 * each; then each side deletes the half it no longer owns.  Server
 * replicas are compared before the fence (pre-verify), so that under it
 * verify compares only what changed since.
 */
#include "steps/steps.h"
#include "strategy/strategy.h"

static const struct rs_step_def *const doubling_steps[] = {
	&step_preflight, &step_pre_verify,  &step_fence,   &step_catch_up,
	&step_promote,   &step_verify,      &step_publish, &step_unfence,
	&step_purge,     &step_final_check,
};

/* A primary with a replica, or a replica: the rest keep every row. */
static int
doubling_touches(const struct rs_plan *plan, int shard)
{
	return plan->shards[shard].replica >= 0 ||
	       plan_primary_of(plan, shard) >= 0;
}

const struct rs_strategy_def strategy_doubling = {
	.name = "doubling",
	.steps = doubling_steps,
	.n_steps = sizeof(doubling_steps) / sizeof(*doubling_steps),
	.promotes_replicas = 1,
	.copies_before_purge = 2,
	.touches = doubling_touches,
};
