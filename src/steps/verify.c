/*
 * verify: the rows that move have the same canonical checksums on their
 * old and new owner (DESIGN §9), chunk by chunk.
 *
 * Each source table is walked in key chunks with every column; the movers
 * of a chunk (rows whose owner under `to` is another shard) are looked up
 * by key in the same key range on their new owner and compared row by row.
 * The first chunk that differs stops the step with the differing keys
 * listed (exit 3, nothing purged); it stays unrecorded, so a run after the
 * fix verifies it again.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/canonical.h"
#include "engine/walk.h"
#include "steps/steps.h"

#define SHOW_KEYS 20

/* What one chunk's comparison gathers. */
struct verify_chunk {
	const struct rs_value *after, *upto; /* the chunk's key range */
	struct rs_chunk_sum sum;             /* of the movers, source side */
	int differ;                          /* movers missing or different */
};

/* Compare the movers of ROWS that go to OWNER with their copy there. */
static int
verify_owner(struct rs_walk *walk, const struct rs_rowbuf *rows,
             const struct rs_owner *owners, struct rs_owner owner, void *ctx,
             struct rs_err *err)
{
	struct verify_chunk *vc = ctx;
	struct rs_run *run = walk->run;
	const struct rs_plan *plan = run->plan;
	struct rs_backend *target = engine_shard(run, owner.shard, err);
	const struct rs_table_def *def;
	struct rs_rowbuf there = {0};
	struct steps_keyset set = {0};
	char physical[256];
	int n_pk = walk->def->n_pk, rc;

	if (target == NULL)
		return err->code;
	engine_physical(plan->to, plan->tables[walk->table].name, owner.table,
	                physical, sizeof(physical));
	def = engine_table(run, owner.shard, physical, err);
	rc = def != NULL ? 0 : err->code;
	if (rc == 0)
		rc = walk_read_range(run, target, def, vc->after, vc->upto, 0,
		                     &there, err);
	if (rc == 0 && steps_keyset_init(&set, &there, def->n_pk) != 0)
		rc = rs_err_set(err, RS_ENOMEM, "out of memory");
	for (int r = 0; rc == 0 && r < rows->n_rows; r++) {
		const struct rs_value *row = rowbuf_row(rows, r);
		uint64_t mine, theirs;
		int at;

		if (owners[r].shard != owner.shard ||
		    owners[r].table != owner.table)
			continue;
		rc = walk_row_hash(walk->backend, walk->def, row + n_pk, &mine,
		                   err);
		if (rc != 0)
			break;
		canonical_chunk_add(&vc->sum, mine);
		at = steps_keyset_find(&set, row);
		if (at >= 0) {
			rc = walk_row_hash(target, def,
			                   rowbuf_row(&there, at) + def->n_pk,
			                   &theirs, err);
			if (rc != 0 || theirs == mine)
				continue;
		}
		if (++vc->differ <= SHOW_KEYS) {
			char shown[300];

			walk_describe_row(walk, row, shown, sizeof(shown));
			fprintf(stderr, "  %s on %s: %s %s on %s.%s\n",
			        walk->physical, plan->shards[walk->shard].name,
			        shown, at < 0 ? "missing" : "differs",
			        plan->shards[owner.shard].name, physical);
		}
	}
	steps_keyset_free(&set);
	rowbuf_free(&there);
	return rc;
}

static int
verify_chunk(struct rs_walk *walk, const struct rs_rowbuf *rows,
             const struct rs_value *after, const struct rs_value *upto,
             int64_t *affected, uint64_t *checksum, struct rs_err *err)
{
	struct verify_chunk vc = {after, upto, {0, 0}, 0};
	struct rs_owner *owners;
	int rc = steps_owners(walk, rows, &owners, err);

	if (rc != 0)
		return rc;
	rc = steps_each_new_owner(walk, rows, owners, verify_owner, &vc, err);
	free(owners);
	if (rc != 0)
		return rc;
	if (vc.differ > 0)
		return backend_fail(
			walk->backend, err, RS_EVERIFY,
			"table %s: %d moving rows differ from their "
			"copy on the new owner (keys above); nothing "
			"was purged",
			walk->physical, vc.differ);
	*affected = (int64_t)vc.sum.rows;
	*checksum = vc.sum.sum;
	return 0;
}

static int
verify_run(struct rs_run *run, struct rs_err *err)
{
	const struct steps_walk_spec spec = {
		.step = "verify",
		.map = run->plan->from,
		.chunk = verify_chunk,
		.copies = 1,
		.all_columns = 1,
	};

	return steps_walk_all(run, &spec, err);
}

const struct rs_step_def step_verify = {
	.name = "verify",
	.summary = "compare the moving rows on old and new owner",
	.run = verify_run,
};
