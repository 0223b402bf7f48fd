/*
 * copy: every source table of a split is walked in primary-key chunks with
 * every column, over options.parallel streams; the rows of a chunk that
 * move (their owner under `to` is another shard) are written to their new
 * owner, canonical values in that table's column order (movers_send), so
 * the target may be another engine.  The rows go with the target's bulk
 * path for new rows (backend_load: PostgreSQL's COPY), since preflight
 * found the targets empty.  The journal records each chunk before and
 * after (walk.h): a resumed copy skips finished chunks and repeats a cut
 * one, whose load then meets rows it wrote and is upserted instead.  A
 * chunk's load is left in flight behind the walk (walk_defer) while the
 * next chunk is hashed and converted: the target, which is what a copy
 * waits for, is then never idle between chunks.  Memory:
 * one chunk per stream and its converted movers, batch_rows × parallel rows
 * whatever the table.
 *
 * Rows the application changes after their chunk was read are in the
 * change log (capture) and copied again by catch-up.
 *
 * Undo (abort): every row on a target is a copy (preflight found the
 * targets empty, and before publish nobody routes there), so each target
 * that carries this run's marker is emptied again, batch by batch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/marker.h"
#include "steps/steps.h"

/* Send the rows of a chunk that go to OWNER. */
static int
copy_owner(struct rs_walk *walk, const struct rs_rowbuf *rows,
           const struct rs_owner *owners, struct rs_owner owner, void *ctx,
           struct rs_err *err)
{
	const struct rs_plan *plan = walk->run->plan;
	int *idx = ctx, n = 0;
	char physical[RS_PLAN_MAX_NAME + 1];

	for (int r = 0; r < rows->n_rows; r++)
		if (owners[r].shard == owner.shard &&
		    owners[r].table == owner.table)
			idx[n++] = r;
	engine_physical(plan->to, plan->tables[walk->table].name, owner.table,
	                physical, sizeof(physical));
	return movers_send(walk->run, walk->backend, walk->def, rows, idx, n,
	                   owner.shard, owner.table, physical, 1, walk, err);
}

static int
copy_chunk(struct rs_walk *walk, const struct rs_rowbuf *rows,
           const struct rs_value *after, const struct rs_value *upto,
           int64_t *affected, uint64_t *checksum, struct rs_err *err)
{
	struct rs_owner *owners;
	int *idx = malloc(sizeof(int) * (size_t)(rows->n_rows + 1));
	int rc = idx != NULL ? steps_owners(walk, rows, &owners, err)
	                     : rs_err_set(err, RS_ENOMEM, "out of memory");

	(void)after;
	(void)upto;
	(void)checksum;
	*affected = 0;
	if (rc == 0) {
		rc = steps_each_new_owner(walk, rows, owners, copy_owner, idx,
		                          err);
		for (int r = 0; rc == 0 && r < rows->n_rows; r++)
			*affected += owners[r].shard != walk->shard ||
			             owners[r].table != walk->slot;
		free(owners);
	}
	free(idx);
	return rc;
}

static int
copy_run(struct rs_run *run, struct rs_err *err)
{
	const struct steps_walk_spec spec = {
		.step = "copy",
		.map = run->plan->from,
		.chunk = copy_chunk,
		.all_columns = 1,
		.copies = 1,
		.intent_async = 1, /* movers_send settles before it writes */
	};
	int rc = steps_walk_all(run, &spec, err);

	return rc != 0 ? rc : steps_create_indexes(run, err);
}

/* Whether SHARD carries this run's marker (its work is there to undo). */
static int
copy_marked(struct rs_run *run, int shard, int *ours, struct rs_err *err)
{
	struct rs_marker *markers;
	int n, rc = marker_read(run, shard, &markers, &n, err);

	*ours = 0;
	for (int i = 0; rc == 0 && i < n; i++)
		*ours |= strcmp(markers[i].run_id, run->run_id) == 0 &&
		         strcmp(markers[i].plan, run->plan->name) == 0;
	free(markers);
	return rc;
}

/* Empty one table of a target, a batch of keys at a time. */
static int
copy_undo_table(struct rs_run *run, int shard, int table, int slot,
                const char *physical, void *arg, struct rs_err *err)
{
	const struct rs_table_def *def;
	struct rs_backend *backend;
	struct rs_rowbuf keys = {0};
	int64_t *deleted = arg;
	int rc = engine_shard(run, shard, &backend, err);

	(void)table;
	(void)slot;
	if (rc == 0)
		rc = engine_table(run, shard, physical, &def, err);
	if (rc == RS_ESCHEMA) /* never made: nothing was copied there */
		return 0;
	while (rc == 0 && (rc = engine_checkpoint(run, err)) == 0) {
		struct rs_read_request request = {
			.table = def,
			.limit = run->plan->options.batch_rows,
		};
		struct rs_rows del;

		rc = await_read(&run->loop, backend, &request, &keys, err);
		if (rc != 0 || keys.n_rows == 0)
			break;
		del = (struct rs_rows){keys.n_rows, keys.n_cols, keys.values};
		rc = await_delete(&run->loop, backend, def, &del, err);
		*deleted += keys.n_rows;
	}
	rowbuf_free(&keys);
	return rc;
}

static int
copy_undo_shard(struct rs_run *run, int shard, void *arg, struct rs_err *err)
{
	int64_t deleted = 0;
	int ours = 0, rc;

	(void)arg;
	if (!steps_is_target(run->plan, shard) ||
	    !engine_shard_exists(run, shard))
		return 0;
	rc = copy_marked(run, shard, &ours, err);
	if (rc != 0 || !ours)
		return rc;
	rc = steps_each_table(run, run->plan->to, shard, copy_undo_table,
	                      &deleted, err);
	if (rc == 0)
		fprintf(stderr, "  %s: %lld copied rows deleted\n",
		        run->plan->shards[shard].name, (long long)deleted);
	return rc;
}

static int
copy_undo(struct rs_run *run, struct rs_err *err)
{
	return steps_each_shard(run, run->plan->to, copy_undo_shard, NULL, err);
}

const struct rs_step_def step_copy = {
	.name = "copy",
	.summary = "copy the rows that move to their new owners",
	.run = copy_run,
	.undo = copy_undo,
};
