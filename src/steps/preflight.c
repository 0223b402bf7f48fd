/*
 * preflight: every source shard reachable, every table there with its
 * primary key and shard key column, the rows counted (the count the run
 * must end with), and for a doubling, every replica one reshard can bring
 * up to date.  Changes nothing.
 */
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "common/text.h"
#include "engine/await.h"
#include "steps/steps.h"

static int
preflight_table(struct rs_run *run, int shard, int table, int slot,
                const char *physical, void *arg, struct rs_err *err)
{
	struct rs_backend *backend = engine_shard(run, shard, err);
	const char *key = run->plan->tables[table].key;
	const struct rs_table_def *def;
	int64_t count = 0;
	int rc, found = 0;

	(void)slot;
	if (backend == NULL)
		return err->code;
	def = engine_table(run, shard, physical, err);
	if (def == NULL)
		return err->code;
	for (int i = 0; i < def->n_columns; i++)
		found |= strcmp(def->columns[i].name, key) == 0;
	if (!found)
		return backend_fail(
			backend, err, RS_ESCHEMA,
			"table %s has no column %s, the plan's shard "
			"key for it; fix key in the plan or the table",
			physical, key);
	rc = await_count(&run->loop, backend, physical, &count, err);
	if (rc == 0)
		*(int64_t *)arg += count;
	return rc;
}

/* A replica reshard makes itself (SQLite) must not hold data yet. */
static int
preflight_replica(struct rs_run *run, int primary, int replica,
                  struct rs_err *err)
{
	const struct rs_plan_shard *p = &run->plan->shards[primary];
	const struct rs_plan_shard *r = &run->plan->shards[replica];
	struct rs_backend_config config = {.shard = r->name,
	                                   .url = r->url,
	                                   .password_env = r->password_env,
	                                   .base_dir = run->plan->dir};
	struct rs_backend *b = NULL, *pb = engine_shard(run, primary, err);
	struct stat st;
	int rc;

	if (pb == NULL)
		return err->code;
	rc = backend_new(&run->loop, &config, &b, err);
	if (rc != 0)
		return rc;
	if (b->url.engine != pb->url.engine)
		rc = backend_fail(
			b, err, RS_EUSAGE,
			"replica %s is not the same engine as its "
			"primary %s; a doubling promotes replicas, "
			"use strategy \"split\" to copy across engines",
			r->name, p->name);
	else if (b->ops->replicate == NULL)
		rc = backend_fail(b, err, RS_EUSAGE,
		                  "doubling by replica promotion is not "
		                  "supported on %s shards in this version; use "
		                  "strategy \"split\"",
		                  b->ops->engine);
	else if (b->url.engine == RS_ENGINE_SQLITE &&
	         stat(b->url.database, &st) == 0 && st.st_size > 0)
		rc = backend_fail(
			b, err, RS_EUSAGE,
			"replica file %s already exists; reshard makes "
			"SQLite replicas itself (online backup) — move "
			"it aside",
			b->url.database);
	await_close(&run->loop, b);
	return rc;
}

static int
preflight_run(struct rs_run *run, struct rs_err *err)
{
	const struct rs_plan *plan = run->plan;
	int shards[RS_PLAN_MAX_SHARDS];
	int n = steps_map_shards(plan->from, shards);
	int64_t rows = 0;
	char value[32], text[32];
	int rc;

	for (int i = 0; i < n; i++) {
		rc = steps_each_table(run, plan->from, shards[i],
		                      preflight_table, &rows, err);
		if (rc != 0)
			return rc;
		if (plan->strategy == RS_STRATEGY_DOUBLING &&
		    plan->shards[shards[i]].replica >= 0) {
			rc = preflight_replica(run, shards[i],
			                       plan->shards[shards[i]].replica,
			                       err);
			if (rc != 0)
				return rc;
		}
	}
	snprintf(value, sizeof(value), "%lld", (long long)rows);
	rc = journal_fact_set(run->journal, "rows_before", value, err);
	if (rc == 0)
		fprintf(stderr,
		        "  %d source shards reachable, %d tables each, %s "
		        "rows\n",
		        n, plan->n_tables * engine_tables_per_shard(plan->from),
		        text_thousands((uint64_t)rows, text, sizeof(text)));
	return rc;
}

const struct rs_step_def step_preflight = {
	.name = "preflight",
	.summary = "check shards, tables, keys and replicas; count the rows",
	.run = preflight_run,
};
