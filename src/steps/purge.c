/*
 * purge: on every shard of the new map, delete in batches the rows it no
 * longer owns — each batch only after confirming, by key, that every one
 * of its rows exists on its new owner (DESIGN §7 rule 1) — throttled by
 * options.max_rows_per_second.
 *
 * Each table is walked in key chunks (primary key and shard key only); a
 * chunk's rows owned elsewhere are looked up in the same key range on
 * their owner.  If any is missing there, nothing of the chunk is deleted
 * and the step stops, naming the keys.  The journal records each chunk's
 * intent before the delete and its result after, so a resumed purge skips
 * finished chunks and repeats a cut one harmlessly (deleting a key twice
 * deletes nothing the second time).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/canonical.h"
#include "engine/walk.h"
#include "steps/steps.h"

/* The chunk's key range, for confirming it on the new owners. */
struct purge_range {
	const struct rs_value *after, *upto;
};

/* Confirm that every row of ROWS owned by OWNER exists there.  Returns 0,
 * RS_EVERIFY naming the first missing keys, or another error. */
static int
purge_confirm(struct rs_walk *walk, const struct rs_rowbuf *rows,
              const struct rs_owner *owners, struct rs_owner owner, void *ctx,
              struct rs_err *err)
{
	const struct purge_range *range = ctx;
	struct rs_run *run = walk->run;
	const struct rs_plan *plan = run->plan;
	struct rs_backend *target = engine_shard(run, owner.shard, err);
	const struct rs_table_def *def;
	struct rs_rowbuf there = {0};
	struct steps_keyset set = {0};
	char physical[256];
	int missing = 0, rc;

	if (target == NULL)
		return err->code;
	engine_physical(plan->to, plan->tables[walk->table].name, owner.table,
	                physical, sizeof(physical));
	def = engine_table(run, owner.shard, physical, err);
	rc = def != NULL ? 0 : err->code;
	if (rc == 0)
		rc = walk_read_range(run, target, def, range->after,
		                     range->upto, 1, &there, err);
	if (rc == 0 && steps_keyset_init(&set, &there, def->n_pk) != 0)
		rc = rs_err_set(err, RS_ENOMEM, "out of memory");
	for (int r = 0; rc == 0 && r < rows->n_rows; r++) {
		const struct rs_value *row = rowbuf_row(rows, r);

		if (owners[r].shard != owner.shard ||
		    owners[r].table != owner.table ||
		    steps_keyset_find(&set, row) >= 0)
			continue;
		if (++missing <= 10)
			fprintf(stderr, "  %s key %.*s: not on its owner %s\n",
			        walk->physical, (int)row[0].len, row[0].text,
			        plan->shards[owner.shard].name);
	}
	steps_keyset_free(&set);
	rowbuf_free(&there);
	if (rc == 0 && missing > 0)
		rc = backend_fail(walk->backend, err, RS_EVERIFY,
		                  "table %s: %d rows it no longer owns are "
		                  "missing on their owner %s; nothing of this "
		                  "chunk was deleted",
		                  walk->physical, missing,
		                  plan->shards[owner.shard].name);
	return rc;
}

/* The canonical primary keys of the rows to delete, for delete_keys. */
static int
purge_keys(struct rs_walk *walk, const struct rs_rowbuf *rows,
           const struct rs_owner *owners, struct rs_rowbuf *keys,
           struct rs_canon_buf *text, struct rs_err *err)
{
	int n_pk = walk->def->n_pk, n = 0, rc = 0;
	size_t *offsets;

	keys->n_cols = n_pk;
	keys->values = malloc(sizeof(struct rs_value) *
	                      (size_t)(rows->n_rows * n_pk + 1));
	offsets = malloc(sizeof(size_t) * (size_t)(rows->n_rows * n_pk + 1));
	if (keys->values == NULL || offsets == NULL) {
		free(offsets);
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	}
	canonical_buf_clear(text);
	for (int r = 0; r < rows->n_rows && rc == 0; r++) {
		const struct rs_value *row = rowbuf_row(rows, r);

		if (owners[r].shard == walk->shard &&
		    owners[r].table == walk->slot)
			continue;
		for (int k = 0; k < n_pk && rc == 0; k++) {
			offsets[n * n_pk + k] = text->len;
			rc = canonical_value(
				walk->def->columns[walk->def->pk[k]].kind,
				backend_canon_src(walk->backend), row[k].text,
				row[k].len, text, err);
			keys->values[n * n_pk + k].len =
				text->len - offsets[n * n_pk + k];
		}
		n++;
	}
	for (int i = 0; i < n * n_pk; i++)
		keys->values[i].text = text->data + offsets[i];
	keys->n_rows = n;
	free(offsets);
	return rc;
}

static int
purge_chunk(struct rs_walk *walk, const struct rs_rowbuf *rows,
            const struct rs_value *after, const struct rs_value *upto,
            int64_t *affected, uint64_t *checksum, struct rs_err *err)
{
	struct rs_run *run = walk->run;
	const struct rs_plan *plan = run->plan;
	struct purge_range range = {after, upto};
	struct rs_rowbuf keys = {0};
	struct rs_owner *owners;
	struct rs_canon_buf text;
	int rc;

	(void)checksum;
	*affected = 0;
	rc = steps_owners(walk, rows, &owners, err);
	if (rc != 0)
		return rc;
	canonical_buf_init(&text);
	/* Every new owner confirms its rows before anything is deleted. */
	rc = steps_each_new_owner(walk, rows, owners, purge_confirm, &range,
	                          err);
	if (rc == 0)
		rc = purge_keys(walk, rows, owners, &keys, &text, err);
	if (rc == 0 && keys.n_rows > 0) {
		struct rs_rows del = {keys.n_rows, keys.n_cols, keys.values};

		rc = await_delete(&run->loop, walk->backend, walk->def, &del,
		                  err);
		if (rc == 0 && plan->options.max_rows_per_second > 0)
			await_sleep(&run->loop,
			            (uint64_t)keys.n_rows * 1000 /
			                    (uint64_t)plan->options
			                            .max_rows_per_second);
	}
	*affected = keys.n_rows;
	free(keys.values);
	canonical_buf_free(&text);
	free(owners);
	return rc;
}

static int
purge_run(struct rs_run *run, struct rs_err *err)
{
	const struct steps_walk_spec spec = {
		.step = "purge",
		.map = run->plan->to,
		.chunk = purge_chunk,
		/* A doubling's replicas hold a full copy until purged. */
		.copies = run->plan->strategy == RS_STRATEGY_DOUBLING ? 2 : 1,
	};

	return steps_walk_all(run, &spec, err);
}

const struct rs_step_def step_purge = {
	.name = "purge",
	.summary = "delete from each shard the rows it no longer owns",
	.irreversible = 1,
	.run = purge_run,
};
