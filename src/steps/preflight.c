/*
 * preflight: every source shard reachable, every table there with its
 * primary key and shard key column, the rows counted (the count the run
 * must end with) in one walk that also refuses rows sitting on a shard or
 * table that does not own them under `from`, and for a doubling, every
 * replica one reshard can bring up to date.  Changes nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"
#include "engine/await.h"
#include "shardmap/pairmap.h"
#include "steps/steps.h"

static int
preflight_table(struct rs_run *run, int shard, int table, int slot,
                const char *physical, void *arg, struct rs_err *err)
{
	const char *key = run->plan->tables[table].key;
	const struct rs_table_def *def;
	struct rs_backend *backend;
	int found = 0, rc = engine_shard(run, shard, &backend, err);

	(void)slot;
	if (rc == 0)
		rc = engine_table(run, shard, physical, &def, err);
	if (rc != 0)
		return rc;
	for (int i = 0; i < def->n_columns; i++)
		found |= strcmp(def->columns[i].name, key) == 0;
	if (!found)
		return backend_fail(
			backend, err, RS_ESCHEMA,
			"table %s has no column %s, the plan's shard "
			"key for it; fix key in the plan or the table",
			physical, key);
	/* A split's change log puts its own column first. */
	if (run->strategy->copies_movers &&
	    steps_column(def, "reshard_pos") >= 0)
		return backend_fail(
			backend, err, RS_ESCHEMA,
			"table %s has a column reshard_pos, the name its "
			"change log needs for the log's own position: rename "
			"the column to split the table; nothing was changed",
			physical);
	/* A row a foreign key's action changes without a trigger is not in
	 * the change log: catch-up never carries that change to the row's
	 * copy (a cascaded delete would come back on the new owner). */
	if (run->strategy->copies_movers && def->cascades != NULL) {
		const char *name = run->plan->shards[shard].name;

		if (!run->plan->options.allow_cascades)
			return backend_fail(
				backend, err, RS_ESCHEMA,
				"table %s has foreign keys whose actions "
				"change its rows without firing triggers: %s; "
				"the split's change capture would not see "
				"those changes: a row they delete would stay "
				"on its new owner, a key they change would not "
				"move its row.  Make them RESTRICT or "
				"NO ACTION for the run, or set "
				"options.allow_cascades = true and keep the "
				"referenced rows from being deleted or their "
				"keys changed until purge ends; nothing was "
				"changed",
				physical, def->cascades);
		fprintf(stderr,
		        "  %s: table %s: foreign keys %s change its rows "
		        "without triggers, which the change capture does not "
		        "see (options.allow_cascades): keep the referenced "
		        "rows from being deleted or their keys changed until "
		        "purge ends\n",
		        name, physical, def->cascades);
		journal_event(run->journal, "warn",
		              "%s: table %s: foreign keys %s change its rows "
		              "without triggers (options.allow_cascades)",
		              name, physical, def->cascades);
	}
	(void)arg;
	return 0;
}

/* What the walk over the sources finds. */
struct preflight_count {
	int64_t rows;
	int64_t misplaced; /* over every table */
	char first[400];   /* "db0.orders_1" of the first misplaced */
	int64_t crossed;   /* split: rows that would move to a source */
};

/* A split copies only onto shards that are not sources: a source's
 * tables carry its fence and capture, which the copy's writes would meet,
 * and their delete logs run from pre-verify to final-check (publish
 * leaves them, steps_is_source_table), which purge must never take for
 * the log of a row's new owner.  Count ROW when its owner under `to`, TO,
 * is on a source: another, or its own (another table). */
static void
preflight_crossing(struct rs_walk *walk, const struct rs_value *row,
                   struct rs_owner to, struct preflight_count *count)
{
	const struct rs_plan *plan = walk->run->plan;
	char shown[300], physical[256];

	if ((to.shard == walk->shard && to.table == walk->slot) ||
	    !steps_in_map(plan->from, to.shard))
		return;
	if (count->crossed++ >= 5)
		return;
	walk_describe_row(walk, row, shown, sizeof(shown));
	if (to.shard != walk->shard) {
		fprintf(stderr, "  %s on %s: %s would move to %s, a source\n",
		        walk->physical, plan->shards[walk->shard].name, shown,
		        plan->shards[to.shard].name);
		return;
	}
	engine_physical(plan->to, plan->tables[walk->table].name, to.table,
	                physical, sizeof(physical));
	fprintf(stderr, "  %s on %s: %s would move to %s on the same source\n",
	        walk->physical, plan->shards[walk->shard].name, shown,
	        physical);
}

/* A point whose owner changes to one on a source shard. */
static int
preflight_onto_source(struct rs_owner from, struct rs_owner to, const void *arg)
{
	const struct rs_plan *plan = arg;

	return (from.shard != to.shard || from.table != to.table) &&
	       steps_in_map(plan->from, to.shard);
}

/* What preflight_pin_crosses needs: the plan, and where to say why. */
struct pin_check {
	const struct rs_plan *plan;
	struct rs_err *err;
};

/* steps_each_pin's question, ARG the struct pin_check: RS_EUSAGE naming a
 * pinned key (in `from` or `to`) whose owner changes onto a source,
 * whether or not a row has it yet. */
static int
preflight_pin_crosses(struct rs_owner from, struct rs_owner to,
                      const struct rs_map_override *o, void *arg)
{
	const struct pin_check *c = arg;

	if (!preflight_onto_source(from, to, c->plan))
		return 0;
	return rs_err_set(c->err, RS_EUSAGE,
	                  "the key '%.*s', pinned by an override, would move "
	                  "from %s onto %s, a source shard: a split copies "
	                  "only onto shards that are not in `from` in this "
	                  "version; nothing was changed",
	                  o->len > 80 ? 80 : (int)o->len, o->key,
	                  c->plan->shards[from.shard].name,
	                  c->plan->shards[to.shard].name);
}

/* A split: the maps themselves move no point onto a source, whether or
 * not a row has it yet (a range with no rows today, a key written during
 * the copy), and no pinned key moves onto one.  The rows were checked by
 * the walk (preflight_crossing); maps with no description of their
 * points (pairmap_points_unpinned) are left to it. */
static int
preflight_maps_cross(struct rs_run *run, struct rs_err *err)
{
	const struct rs_plan *plan = run->plan;
	struct rs_moving m;
	struct rs_owner from, to;
	uint64_t point;
	char a[256], b[256];
	struct pin_check pins = {plan, err};
	int rc = steps_each_pin(plan, preflight_pin_crosses, &pins);

	if (rc != 0)
		return rc;
	rc = pairmap_points_unpinned(plan->from, plan->to,
	                             preflight_onto_source, plan, &m, err);
	if (rc == RS_EUSAGE)
		return 0;
	if (rc != 0 || m.n == 0) {
		pairmap_moving_free(&m);
		return rc;
	}
	point = m.period != 0 ? m.residues[0] : m.spans[0][0];
	pairmap_moving_free(&m);
	from = map_owner(plan->from, point);
	to = map_owner(plan->to, point);
	engine_physical(plan->from, plan->tables[0].name, from.table, a,
	                sizeof(a));
	engine_physical(plan->to, plan->tables[0].name, to.table, b, sizeof(b));
	return rs_err_set(
		err, RS_EUSAGE,
		"the maps move points onto a source shard although no row "
		"has them yet (point 0x%016llx: %s on %s under from, %s on "
		"%s under to): a split copies only onto shards that are not "
		"in `from` in this version (a ring or range growing onto "
		"new nodes); nothing was changed",
		(unsigned long long)point, a, plan->shards[from.shard].name, b,
		plan->shards[to.shard].name);
}

/* A split's target: every table of `to` there, able to take the source's
 * rows (movers_layout_check against the first source's) and empty. */
static int
preflight_target_table(struct rs_run *run, int shard, int table, int slot,
                       const char *physical, void *arg, struct rs_err *err)
{
	const int *source = arg;
	char theirs[RS_PLAN_MAX_NAME + 1];
	const struct rs_table_def *def, *src;
	struct rs_backend *backend;
	int64_t rows = 0;
	int rc = engine_shard(run, shard, &backend, err);

	engine_physical(run->plan->from, run->plan->tables[table].name, 0,
	                theirs, sizeof(theirs));
	if (rc == 0)
		rc = engine_table(run, *source, theirs, &src, err);
	if (rc == 0)
		rc = engine_table(run, shard, physical, &def, err);
	if (rc == RS_ESCHEMA && run->plan->options.create_tables)
		return steps_create_check(run, shard, table, slot, physical,
		                          err);
	if (rc == RS_ESCHEMA)
		return backend_fail(
			backend, err, RS_ESCHEMA,
			"table %s is missing on %s, a target of the "
			"copy: create it with the columns and "
			"primary key of %s on %s, or let reshard make it "
			"from there (options.create_tables = true, the "
			"same engine only)",
			physical, run->plan->shards[shard].name, theirs,
			run->plan->shards[*source].name);
	if (rc == 0)
		rc = movers_layout_check(run, *source, src, shard, def, err);
	if (rc == 0)
		rc = await_count(&run->loop, backend, physical, &rows, err);
	if (rc == 0 && rows > 0)
		return backend_fail(
			backend, err, RS_EDATA,
			"table %s on %s, a target of the copy, already holds "
			"%lld rows: a target must start empty, or the copy "
			"would overwrite them.  Empty it (rows of an earlier "
			"attempt: `reshard abort` removes what it copied), "
			"then run again; nothing was changed",
			physical, run->plan->shards[shard].name,
			(long long)rows);
	return rc;
}

/* A split: every shard of `from` stays in `to`, and every target is
 * ready. */
static int
preflight_target(struct rs_run *run, int shard, void *arg, struct rs_err *err)
{
	if (!steps_is_target(run->plan, shard))
		return 0;
	return steps_each_table(run, run->plan->to, shard,
	                        preflight_target_table, arg, err);
}

static int
preflight_targets(struct rs_run *run, struct rs_err *err)
{
	const struct rs_plan *plan = run->plan;
	int shards[RS_PLAN_MAX_SHARDS];
	int n = steps_map_shards(plan->from, shards);

	for (int i = 0; i < n; i++)
		if (!steps_in_map(plan->to, shards[i]))
			return rs_err_set(
				err, RS_EUSAGE,
				"shard %s is in `from` but not in `to`: a "
				"split adds shards, it does not remove them "
				"in this version; keep it in `to`",
				plan->shards[shards[i]].name);
	return steps_each_shard(run, plan->to, preflight_target, &shards[0],
	                        err);
}

/* Count the rows of a chunk and those that sit on a shard or table that
 * does not own them under `from` (they would be missing after the run:
 * verify looks for them on the owner `to` names, from the owner `from`
 * names). */
static int
preflight_chunk(struct rs_walk *walk, const struct rs_rowbuf *rows,
                const struct rs_value *after, const struct rs_value *upto,
                int64_t *affected, uint64_t *checksum, struct rs_err *err)
{
	struct preflight_count *count = walk->arg;
	const struct rs_plan *plan = walk->run->plan;
	struct rs_owner *owners, *to = NULL;
	int rc = steps_owners_under(walk, plan->from, rows, &owners, err);

	if (rc == 0 && walk->run->strategy->copies_movers)
		rc = steps_owners(walk, rows, &to, err);
	(void)after;
	(void)upto;
	(void)checksum;
	*affected = 0; /* the misplaced rows of the chunk */
	for (int r = 0; r < rows->n_rows && rc == 0; r++) {
		const struct rs_value *row = rowbuf_row(rows, r);
		struct rs_owner owner = owners[r];
		char shown[300], physical[256];

		if (owner.shard == walk->shard && owner.table == walk->slot) {
			if (to != NULL)
				preflight_crossing(walk, row, to[r], count);
			continue;
		}
		if (count->misplaced++ == 0)
			snprintf(count->first, sizeof(count->first), "%s.%s",
			         plan->shards[walk->shard].name,
			         walk->physical);
		/* Five examples a table (walk->affected: its earlier
		 * chunks'). */
		if (walk->affected + (*affected)++ >= 5)
			continue;
		walk_describe_row(walk, row, shown, sizeof(shown));
		engine_physical(plan->from, plan->tables[walk->table].name,
		                owner.table, physical, sizeof(physical));
		fprintf(stderr, "  %s on %s: %s belongs to %s.%s under from\n",
		        walk->physical, plan->shards[walk->shard].name, shown,
		        plan->shards[owner.shard].name, physical);
	}
	free(owners);
	free(to);
	if (rc == 0)
		count->rows += rows->n_rows;
	return rc;
}

/* A replica reshard makes itself (SQLite) must not hold data yet. */
static int
preflight_replica(struct rs_run *run, int primary, int replica,
                  struct rs_err *err)
{
	const struct rs_plan_shard *p = &run->plan->shards[primary];
	const struct rs_plan_shard *r = &run->plan->shards[replica];
	struct rs_backend_config config =
		engine_shard_config(run->plan, replica);
	struct rs_backend *b = NULL, *pb;
	int rc = engine_shard(run, primary, &pb, err);

	if (rc != 0)
		return rc;
	rc = backend_new(&run->loop, &config, &b, err);
	if (rc != 0)
		return rc;
	if (strcmp(backend_engine(b), backend_engine(pb)) != 0)
		rc = backend_fail(
			b, err, RS_EUSAGE,
			"replica %s is not the same engine as its "
			"primary %s; a doubling promotes replicas, "
			"use strategy \"split\" to copy across engines",
			r->name, p->name);
	else if (!backend_supports(b, RS_CAP_REPLICATION))
		rc = backend_fail(b, err, RS_EUSAGE,
		                  "doubling by replica promotion is not "
		                  "supported on %s shards in this version; use "
		                  "strategy \"split\"",
		                  backend_engine(b));
	else if (!backend_supports(b, RS_CAP_MADE_REPLICA))
		rc = await_connect(&run->loop, b, err);
	if (rc == 0)
		rc = await_replica_check(
			&run->loop, pb, b,
			run->plan->options.max_replica_lag_seconds * 1000, err);
	await_close(&run->loop, b);
	return rc;
}

/* A split's source SHARD is a server the applications write to: on one
 * that applies another server's writes (a standby, a MariaDB replica),
 * those rows fire no trigger, so neither the fence nor the change capture
 * would see them, and a change the copy missed could be purged unseen. */
static int
preflight_source(struct rs_run *run, int shard, struct rs_err *err)
{
	const char *name = run->plan->shards[shard].name;
	struct rs_backend *backend;
	int state, rc = engine_shard(run, shard, &backend, err);

	if (rc != 0 || !backend_supports(backend, RS_CAP_SOURCE_CHECK))
		return rc;
	rc = await_source_check(&run->loop, backend, &state, err);
	if (rc != 0 || state == RS_SOURCE_WRITABLE)
		return rc;
	return backend_fail(
		backend, err, RS_EUSAGE,
		state == RS_SOURCE_APPLYING
			? "source %s applies another server's writes (a "
			  "standby, or a replica whose replication runs): "
			  "replicated rows fire no trigger, so the fence and "
			  "the change capture would miss them; point shard "
			  "%s's url at the primary the applications write to; "
			  "nothing was changed"
			: "source %s is read-only, so it is not where the "
			  "applications write: point shard %s's url at the "
			  "primary they write to; nothing was changed",
		name, name);
}

/* The tables of SHARD, its replica in a doubling, what it is in a split. */
static int
preflight_shard(struct rs_run *run, int shard, void *arg, struct rs_err *err)
{
	const struct rs_plan *plan = run->plan;
	int rc = run->strategy->copies_movers
	                 ? preflight_source(run, shard, err)
	                 : 0;

	if (rc == 0)
		rc = steps_each_table(run, plan->from, shard, preflight_table,
		                      arg, err);

	if (rc == 0 && run->strategy->promotes_replicas &&
	    plan->shards[shard].replica >= 0)
		rc = preflight_replica(run, shard, plan->shards[shard].replica,
		                       err);
	return rc;
}

static int
preflight_run(struct rs_run *run, struct rs_err *err)
{
	const struct rs_plan *plan = run->plan;
	int shards[RS_PLAN_MAX_SHARDS];
	int n = steps_map_shards(plan->from, shards);
	struct preflight_count count = {0};
	const struct steps_walk_spec spec = {
		.step = "preflight",
		.no_effect = 1,
		.map = plan->from,
		.chunk = preflight_chunk,
		.copies = 1,
		.restart = 1, /* counts start over in a resumed preflight */
		.arg = &count,
	};
	char value[32], text[32];
	int rc;

	rc = steps_each_shard(run, plan->from, preflight_shard, NULL, err);
	if (rc == 0 && run->strategy->copies_movers)
		rc = preflight_targets(run, err);
	if (rc != 0)
		return rc;
	rc = steps_walk_all(run, &spec, err);
	if (rc != 0)
		return rc;
	if (count.crossed > 0)
		return rs_err_set(
			err, RS_EUSAGE,
			"%lld rows would move onto a source shard (examples "
			"above): a split copies only onto shards "
			"that are not in `from` in this version (a ring or "
			"range growing onto new nodes); nothing was changed",
			(long long)count.crossed);
	if (run->strategy->copies_movers) {
		rc = preflight_maps_cross(run, err);
		if (rc != 0)
			return rc;
	}
	if (count.misplaced > 0)
		return rs_err_set(
			err, RS_EDATA,
			"%lld rows sit on a shard or table that does not own "
			"them under `from` (the first in %s; examples above, "
			"by shard key and primary key): the run would lose "
			"track of them.  Check that `from` and `hash` describe "
			"how the application routes today; if they do, move "
			"each row to its owner or delete it, then run again.  "
			"Nothing was changed",
			(long long)count.misplaced, count.first);
	snprintf(value, sizeof(value), "%lld", (long long)count.rows);
	rc = journal_fact_set(run->journal, "rows_before", value, err);
	if (rc == 0)
		fprintf(stderr,
		        "  %d source shards reachable, %d tables each, %s "
		        "rows, every one on its owner under from\n",
		        n, plan->n_tables * engine_tables_per_shard(plan->from),
		        text_thousands((uint64_t)count.rows, text,
		                       sizeof(text)));
	return rc;
}

const struct rs_step_def step_preflight = {
	.name = "preflight",
	.summary = "check shards, tables, keys and replicas; count the rows",
	.run = preflight_run,
};
