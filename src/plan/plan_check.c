/*
 * Plan rules that span several settings: every shard is used, maps compile
 * under the plan's hash, and a doubling moves rows only from a shard to its
 * declared replica — proven over the whole point space by
 * map_prove_doubling, never sampled.
 *
 * Each rule runs when the settings it looks at were read well enough, even
 * if other settings have mistakes, so that one run reports them all.  A
 * doubling that breaks its rule is reported once for each shard whose
 * points go astray, with advice that fits the kind of the `to` map.
 */
#include "plan/plan_internal.h"

#include <inttypes.h>
#include <stdlib.h>

#include "common/text.h"

static int
map_uses(const struct rs_map_def *def, int shard)
{
	for (int i = 0; i < def->n_nodes; i++)
		if (def->nodes[i] == shard)
			return 1;
	for (int i = 0; i < def->n_ranges; i++)
		if (def->ranges[i].shard == shard)
			return 1;
	for (int i = 0; i < def->n_overrides; i++)
		if (def->overrides[i].shard == shard)
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

/* A doubling keeps every shard of `from`: its delete logs, purge and
 * final-check go over the shards of `to`, so a shard left out would keep
 * a stale copy of every row, fenced for good. */
static void
check_doubling_keeps(struct plan_loader *ld)
{
	const struct rs_plan *plan = ld->plan;

	for (int i = 0; i < plan->n_shards; i++)
		if (map_uses(&plan->from_def, i) && !map_uses(&plan->to_def, i))
			plan_diag(ld, ld->to_line,
			          "strategy \"doubling\" (line %d): shard '%s' "
			          "is a node of the from map but not of the to "
			          "map; a doubling keeps every shard and hands "
			          "part of its rows to its replica, it cannot "
			          "retire one: add '%s' to the to map",
			          ld->strategy_line, plan->shards[i].name,
			          plan->shards[i].name);
}

/*
 * Whether `replica = "T";` on shard F is a suggestion the plan would take
 * and that fixes F: F's points all move to T, F has no replica yet, T is
 * not a node of `from`, no shard names T as its replica, and no other
 * shard would be told to take T too.
 */
static int
replica_fits(const struct rs_plan *plan, const struct rs_doubling_found *found,
             int f)
{
	int t = found[f].bad_to;

	if (found[f].spread || plan->shards[f].replica >= 0 ||
	    map_uses(&plan->from_def, t))
		return 0;
	for (int g = 0; g < plan->n_shards; g++) {
		if (plan->shards[g].replica == t)
			return 0;
		if (g != f && found[g].bad_to == t && !found[g].spread &&
		    plan->shards[g].replica < 0)
			return 0;
	}
	return 1;
}

/* Whether shard S is a node of the nodes list of DEF. */
static int
nodes_hold(const struct rs_map_def *def, int s)
{
	for (int i = 0; i < def->n_nodes; i++)
		if (def->nodes[i] == s)
			return 1;
	return 0;
}

/* What would make shard F's points follow the doubling rule, into BUF,
 * fitting the kind of the `to` map. */
static void
doubling_advice(const struct rs_plan *plan,
                const struct rs_doubling_found *found, int f, char *buf,
                size_t size)
{
	const char *name = plan->shards[f].name;
	const char *t = plan->shards[found[f].bad_to].name;
	int replica = plan->shards[f].replica;
	const char *r = replica >= 0 ? plan->shards[replica].name : NULL;
	const struct rs_map_def *from = &plan->from_def, *to = &plan->to_def;
	int periodic_from =
		from->kind == RS_MAP_MODULO || from->kind == RS_MAP_SLOTS;
	char list[400], databases[48];

	snprintf(databases, sizeof(databases), " with databases = %d",
	         2 * from->n_nodes);

	if (replica_fits(plan, found, f)) {
		snprintf(buf, size, "add replica = \"%s\"; to shard '%s'", t,
		         name);
		return;
	}
	switch (to->kind) {
	case RS_MAP_RING:
		snprintf(buf, size,
		         "use strategy = \"split\" (a new ring node takes "
		         "points from several nodes, which one replica cannot "
		         "follow)");
		return;
	case RS_MAP_RANGES:
		if (r != NULL && !found[f].spread)
			snprintf(buf, size,
			         "give that range to %s in to, or use strategy "
			         "= \"split\"",
			         r);
		else if (r != NULL)
			snprintf(buf, size,
			         "give every range that %s loses to %s in to, "
			         "or use strategy = \"split\"",
			         name, r);
		else
			snprintf(buf, size,
			         "give every range that %s loses to one shard "
			         "that is not in from and name that shard as "
			         "its replica, or use strategy = \"split\"",
			         name);
		return;
	case RS_MAP_LOGICAL:
		if (r != NULL && !found[f].spread)
			snprintf(buf, size,
			         "assign those logical shards to %s in to, or "
			         "use strategy = \"split\"",
			         r);
		else if (r != NULL)
			snprintf(buf, size,
			         "assign every logical shard that %s loses to "
			         "%s in to, or use strategy = \"split\"",
			         name, r);
		else
			snprintf(buf, size,
			         "assign every logical shard that %s loses to "
			         "one shard that is not in from and name that "
			         "shard as its replica, or use strategy = "
			         "\"split\"",
			         name);
		return;
	case RS_MAP_MODULO:
	case RS_MAP_SLOTS:
		/* A periodic map doubles by listing from's nodes and then
		 * their replicas: the whole answer, when every node has one. */
		if (periodic_from &&
		    plan_doubled_nodes(plan, list, sizeof(list)) > 0)
			snprintf(buf, size,
			         "list to's nodes as [%s]%s, from's nodes and "
			         "then their replicas in the same order",
			         list,
			         to->kind == RS_MAP_SLOTS ? databases : "");
		else if (r != NULL && !found[f].spread &&
		         nodes_hold(to, replica))
			snprintf(buf, size, "swap %s and %s in to's nodes", r,
			         t);
		else if (r != NULL && !found[f].spread)
			snprintf(buf, size,
			         "put %s in %s's place in to's nodes", r, t);
		else if (periodic_from)
			snprintf(buf, size,
			         "give every node of from a replica, then list "
			         "from's nodes in to and their replicas after "
			         "them in the same order; or use strategy = "
			         "\"split\"");
		else
			snprintf(buf, size, "use strategy = \"split\"");
		return;
	}
}

/* The doubling rule for the keys either map pins (the proof of the maps
 * covers every other key): each key's owner under to is its owner under
 * from or that shard's replica.  Each key that breaks it is reported at
 * its override's line. */
static void
check_doubling_overrides(struct plan_loader *ld)
{
	const struct rs_plan *plan = ld->plan;

	for (int m = 0; m < 2; m++) {
		const struct rs_map_def *def =
			m == 0 ? map_def(plan->from) : map_def(plan->to);

		ld->diag_file = def->overrides_file;
		for (int i = 0; i < def->n_overrides; i++) {
			const struct rs_map_override *o = &def->overrides[i];
			char key[TEXT_KEY_SHOWN_SIZE];
			struct rs_owner f, t;
			uint64_t point;
			int replica;

			if (hash_point(plan->hash, o->key, o->len, &point) !=
			    0) {
				plan_diag(ld, o->line,
				          "key '%s' cannot be hashed with %s; "
				          "an override's key is a shard key's "
				          "value",
				          text_key_shown(o->key, o->len, key,
				                         sizeof(key)),
				          hash_name(plan->hash));
				continue;
			}
			f = map_owner_key(plan->from, o->key, o->len, point,
			                  NULL);
			t = map_owner_key(plan->to, o->key, o->len, point,
			                  NULL);
			replica = plan->shards[f.shard].replica;
			if (t.shard == f.shard || t.shard == replica)
				continue;
			plan_diag(ld, o->line,
			          "strategy \"doubling\" (line %d): key '%s' "
			          "moves from %s to %s, but a doubling moves a "
			          "shard's rows only to its replica (%s); pin "
			          "it to %s%s%s in to, or use strategy = "
			          "\"split\"",
			          ld->strategy_line,
			          text_key_shown(o->key, o->len, key,
			                         sizeof(key)),
			          plan->shards[f.shard].name,
			          plan->shards[t.shard].name,
			          replica >= 0 ? plan->shards[replica].name
			                       : "none declared",
			          plan->shards[f.shard].name,
			          replica >= 0 ? " or " : "",
			          replica >= 0 ? plan->shards[replica].name
			                       : "");
		}
		ld->diag_file = NULL;
	}
}

/* Prove the doubling rule and report every shard that breaks it. */
static void
check_doubling_moves(struct plan_loader *ld)
{
	struct rs_plan *plan = ld->plan;
	const char *const *names = (const char *const *)plan->shard_names;
	struct rs_doubling_found *found;
	struct rs_err err = {0};
	int *replica_of;

	replica_of = malloc(sizeof(int) * (size_t)plan->n_shards);
	found = malloc(sizeof(*found) * (size_t)plan->n_shards);
	if (replica_of == NULL || found == NULL) {
		free(replica_of);
		free(found);
		ld->nomem = 1;
		return;
	}
	for (int i = 0; i < plan->n_shards; i++) {
		replica_of[i] = plan->shards[i].replica;
		found[i].moves_to = found[i].bad_to = -1;
		found[i].spread = 0;
		found[i].bad_point = 0;
	}
	if (map_prove_doubling(plan->from, plan->to, replica_of, names, found,
	                       &err) == 0)
		goto done;
	/* A table index that changes or a proof too long stops the proof:
	 * then ERR says it all, and what FOUND holds is not the whole. */
	if (err.code != 0) {
		plan_diag(ld, ld->to_line,
		          "strategy \"doubling\" (line %d): %s",
		          ld->strategy_line, err.message);
		goto done;
	}
	for (int f = 0; f < plan->n_shards; f++) {
		const char *t;
		char advice[768], whose[512], logical[48] = "";

		if (found[f].bad_to < 0)
			continue;
		t = plan->shards[found[f].bad_to].name;
		doubling_advice(plan, found, f, advice, sizeof(advice));
		if (plan->shards[f].replica < 0)
			snprintf(whose, sizeof(whose), "%s declares no replica",
			         plan->shards[f].name);
		else
			snprintf(whose, sizeof(whose), "%s's replica is %s",
			         plan->shards[f].name,
			         plan->shards[plan->shards[f].replica].name);
		if (map_def(plan->from)->kind == RS_MAP_LOGICAL)
			snprintf(logical, sizeof(logical),
			         " (logical shard %" PRIu64 ")",
			         map_logical_shard(plan->from,
			                           found[f].bad_point));
		plan_diag(ld, plan->shards[f].line,
		          "strategy \"doubling\" (line %d): point %" PRIu64
		          "%s moves from %s to %s, but %s; a doubling moves a "
		          "shard's rows only to its replica: %s",
		          ld->strategy_line, found[f].bad_point, logical,
		          plan->shards[f].name, t, whose, advice);
	}
done:
	free(replica_of);
	free(found);
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
	if (doubling && ld->from_state != PLAN_MAP_UNREAD &&
	    ld->to_state != PLAN_MAP_UNREAD)
		check_doubling_keeps(ld);

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
	    ld->shards_ok && ld->diags->n == n_before) {
		check_doubling_moves(ld);
		check_doubling_overrides(ld);
	}
}
