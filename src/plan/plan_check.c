/*
 * Plan rules that span several settings: every shard is used, maps compile
 * under the plan's hash, and a doubling moves rows only from a shard to its
 * declared replica — proven over the whole point space by
 * map_prove_doubling, never sampled.
 *
 * Each rule runs when the settings it looks at were read well enough, even
 * if other settings have mistakes, so that one run reports them all.
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

	/* A shard that is not a group, has no name or one taken already
	 * cannot be in a map: that mistake is reported already. */
	for (int i = 0; i < plan->n_shards; i++)
		if (plan->shards[i].name != NULL &&
		    plan->shards[i].name[0] != '\0' &&
		    plan_shard_index(plan, plan->shards[i].name) == i &&
		    !map_uses(&plan->from_def, i) &&
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

/* Prove the doubling rule over every point. */
static void
check_doubling_moves(struct plan_loader *ld)
{
	struct rs_plan *plan = ld->plan;
	const char *const *names = (const char *const *)plan->shard_names;
	struct rs_err err = {0};
	int *replica_of = malloc(sizeof(int) * (size_t)plan->n_shards);

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

void
plan_check(struct plan_loader *ld)
{
	struct rs_plan *plan = ld->plan;
	const char *const *names = (const char *const *)plan->shard_names;
	int doubling =
		ld->strategy_ok && plan->strategy == RS_STRATEGY_DOUBLING;
	struct rs_err err = {0};
	int n_before;

	/* A map whose nodes are not all known could use any shard. */
	if (ld->from_state != PLAN_MAP_UNREAD &&
	    ld->to_state != PLAN_MAP_UNREAD)
		check_shards_used(ld);
	n_before = ld->diags->n;
	if (doubling && ld->from_state != PLAN_MAP_UNREAD)
		check_doubling_shapes(ld);

	/* A map compiles when it was read without a mistake under a known
	 * hash, whatever else the plan gets wrong. */
	if (ld->hash_ok && ld->from_state == PLAN_MAP_OK) {
		plan->from = map_new(&plan->from_def, plan->hash, names, &err);
		if (plan->from == NULL && err.code == RS_ENOMEM)
			ld->nomem = 1;
		else if (plan->from == NULL)
			plan_diag(ld, ld->from_line, "%s", err.message);
	}
	if (ld->hash_ok && ld->to_state == PLAN_MAP_OK) {
		plan->to = map_new(&plan->to_def, plan->hash, names, &err);
		if (plan->to == NULL && err.code == RS_ENOMEM)
			ld->nomem = 1;
		else if (plan->to == NULL)
			plan_diag(ld, ld->to_line, "%s", err.message);
	}
	if (doubling && plan->from != NULL && plan->to != NULL &&
	    ld->shards_ok && ld->diags->n == n_before)
		check_doubling_moves(ld);
}
