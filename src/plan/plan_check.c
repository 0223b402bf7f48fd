/*
 * Plan rules that span several settings: every shard is used, maps compile
 * under the plan's hash, and a doubling moves rows only from a shard to its
 * declared replica — proven over the whole point space by
 * map_prove_doubling, never sampled.
 */
#include "plan/plan_internal.h"

#include <stdlib.h>

static int
map_uses(const struct rs_map_def *def, int shard)
{
	for (int i = 0; i < def->n_nodes; i++)
		if (def->nodes[i] == shard)
			return 1;
	for (int i = 0; i < def->n_ranges; i++)
		if (def->ranges[i].shard == shard)
			return 1;
	return 0;
}

static void
check_shards_used(struct plan_loader *ld)
{
	const struct rs_plan *plan = ld->plan;

	for (int i = 0; i < plan->n_shards; i++)
		if (!map_uses(&plan->from_def, i) &&
		    !map_uses(&plan->to_def, i))
			plan_diag(ld, plan->shards[i].line,
			          "shard '%s' is in neither the from nor the "
			          "to map; add it to a map or remove it",
			          plan->shards[i].name);
}

static void
check_doubling_shapes(struct plan_loader *ld)
{
	const struct rs_plan *plan = ld->plan;

	for (int i = 0; i < plan->n_shards; i++) {
		int replica = plan->shards[i].replica;

		if (replica >= 0 && map_uses(&plan->from_def, replica))
			plan_diag(ld, plan->shards[i].line,
			          "replica '%s' of shard '%s' is also a node "
			          "of the from map; a doubling promotes a "
			          "replica that owns nothing yet",
			          plan->shards[replica].name,
			          plan->shards[i].name);
	}
}

void
plan_check(struct plan_loader *ld)
{
	struct rs_plan *plan = ld->plan;
	const char *const *names = (const char *const *)plan->shard_names;
	struct rs_err err = {0};
	int *replica_of;
	int n_before;

	check_shards_used(ld);
	if (plan->strategy == RS_STRATEGY_DOUBLING)
		check_doubling_shapes(ld);

	plan->from = map_new(&plan->from_def, plan->hash, names, &err);
	if (plan->from == NULL)
		plan_diag(ld, ld->from_line, "%s", err.message);
	plan->to = map_new(&plan->to_def, plan->hash, names, &err);
	if (plan->to == NULL)
		plan_diag(ld, ld->to_line, "%s", err.message);
	if (plan->from == NULL || plan->to == NULL)
		return;

	n_before = ld->diags->n;
	if (plan->strategy != RS_STRATEGY_DOUBLING || n_before > 0)
		return;
	replica_of = malloc(sizeof(int) * (size_t)plan->n_shards);
	if (replica_of == NULL) {
		ld->nomem = 1;
		return;
	}
	for (int i = 0; i < plan->n_shards; i++)
		replica_of[i] = plan->shards[i].replica;
	if (map_prove_doubling(plan->from, plan->to, replica_of, names, NULL,
	                       &err) != 0)
		plan_diag(ld, ld->to_line,
		          "strategy \"doubling\" (line %d): %s",
		          ld->strategy_line, err.message);
	free(replica_of);
}
