/*
 * verify: the rows that move have the same row checksums on their
 * old and new owner (DESIGN §9), chunk by chunk.
 *
 * Each source table is walked in key chunks with every column; the movers
 * of a chunk (rows whose owner under `to` is another shard) are looked up
 * by key in the same key range on their new owner and compared row by row:
 * in the engine's own text when both sides are the same engine with the
 * same columns (a promoted replica), a row whose texts differ being looked
 * at again in canonical form; in canonical form otherwise.
 * The first chunk that differs stops the step with the differing keys
 * listed (exit 3, nothing purged); it stays unrecorded, so a run after the
 * fix verifies it again.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/canonical.h"
#include "common/progress.h"
#include "engine/walk.h"
#include "steps/steps.h"

#define SHOW_KEYS 20

/* What one chunk's comparison gathers. */
struct verify_chunk {
	const struct rs_value *after, *upto; /* the chunk's key range */
	struct rs_chunk_sum sum;             /* of the movers, source side */
	int differ;                          /* movers missing or different */
};

/* One owner's side of a chunk: its movers, indexed by key, and what the
 * owner's pages said of each. */
struct verify_owner {
	struct rs_walk *walk;
	const struct rs_owner *owners;
	struct rs_owner owner;
	struct rs_backend *target;
	const struct rs_table_def *def; /* the table on the owner */
	const struct rs_rowbuf *rows;   /* the chunk's rows, source side */
	struct steps_keyset set;        /* over the chunk's rows */
	int native;                     /* hashes over the engine's text */
	uint64_t *hashes;               /* per row: its hash, source side */
	char *seen; /* per row: 0 not on the owner, 1 same, 2 differs */
};

/* Whether source row R and the owner's row THERE differ in canonical
 * form: the second look at a row whose native texts differ, which may
 * still be the same value written another way. */
static int
verify_differs_canonically(const struct verify_owner *vo, int r,
                           const struct rs_value *there, int *differs,
                           struct rs_err *err)
{
	const struct rs_walk *walk = vo->walk;
	uint64_t mine = 0, theirs = 0;
	int rc = walk_row_hash(walk->backend, 0, walk->def,
	                       rowbuf_row(vo->rows, r) + walk->def->n_pk, &mine,
	                       err);

	if (rc == 0)
		rc = walk_row_hash(vo->target, 0, vo->def,
		                   there + vo->def->n_pk, &theirs, err);
	*differs = mine != theirs;
	return rc;
}

/* A page of the owner's rows in the chunk's range: compare each that is a
 * mover of the chunk to this owner with its source row. */
static int
verify_page(const struct rs_rowbuf *page, void *ctx, struct rs_err *err)
{
	struct verify_owner *vo = ctx;

	for (int p = 0; p < page->n_rows; p++) {
		const struct rs_value *there = rowbuf_row(page, p);
		int r = steps_keyset_find(&vo->set, there);
		uint64_t theirs;
		int rc;

		if (r < 0 || vo->owners[r].shard != vo->owner.shard ||
		    vo->owners[r].table != vo->owner.table)
			continue;
		rc = walk_row_hash(vo->target, vo->native, vo->def,
		                   there + vo->def->n_pk, &theirs, err);
		if (rc == 0 && theirs != vo->hashes[r] && vo->native) {
			int differs;

			rc = verify_differs_canonically(vo, r, there, &differs,
			                                err);
			if (rc == 0 && !differs)
				theirs = vo->hashes[r];
		}
		if (rc != 0)
			return rc;
		vo->seen[r] = theirs == vo->hashes[r] ? 1 : 2;
	}
	return 0;
}

/* Compare the movers of ROWS that go to OWNER with their copy there,
 * reading the owner's side of the range a page at a time. */
static int
verify_owner(struct rs_walk *walk, const struct rs_rowbuf *rows,
             const struct rs_owner *owners, struct rs_owner owner, void *ctx,
             struct rs_err *err)
{
	struct verify_chunk *vc = ctx;
	struct rs_run *run = walk->run;
	const struct rs_plan *plan = run->plan;
	struct verify_owner vo = {
		.walk = walk,
		.owners = owners,
		.owner = owner,
		.rows = rows,
		.hashes = malloc(sizeof(uint64_t) * (size_t)(rows->n_rows + 1)),
		.seen = calloc((size_t)rows->n_rows + 1, 1),
	};
	char physical[256];
	int n_pk = walk->def->n_pk;
	int rc = engine_shard(run, owner.shard, &vo.target, err);

	if (rc == 0 && (vo.hashes == NULL || vo.seen == NULL ||
	                steps_keyset_init(&vo.set, rows, n_pk) != 0))
		rc = rs_err_set(err, RS_ENOMEM, "out of memory");
	engine_physical(plan->to, plan->tables[walk->table].name, owner.table,
	                physical, sizeof(physical));
	if (rc == 0)
		rc = engine_table(run, owner.shard, physical, &vo.def, err);
	/* The same engine and columns on both sides (a promoted replica):
	 * compare the engine's own texts, with no conversion, and look at
	 * a row again in canonical form only when they differ. */
	if (rc == 0)
		vo.native = walk_same_layout(walk->backend, walk->def,
		                             vo.target, vo.def);
	for (int r = 0; rc == 0 && r < rows->n_rows; r++) {
		if (owners[r].shard != owner.shard ||
		    owners[r].table != owner.table)
			continue;
		rc = walk_row_hash(walk->backend, vo.native, walk->def,
		                   rowbuf_row(rows, r) + n_pk, &vo.hashes[r],
		                   err);
		if (rc == 0)
			canonical_chunk_add(&vc->sum, vo.hashes[r]);
	}
	if (rc == 0)
		rc = walk_range_pages(run, vo.target, vo.def, vc->after,
		                      vc->upto, 0, verify_page, &vo, err);
	for (int r = 0; rc == 0 && r < rows->n_rows; r++) {
		char shown[300];

		if (owners[r].shard != owner.shard ||
		    owners[r].table != owner.table || vo.seen[r] == 1)
			continue;
		if (++vc->differ > SHOW_KEYS)
			continue;
		walk_describe_row(walk, rowbuf_row(rows, r), shown,
		                  sizeof(shown));
		progress_clear();
		fprintf(stderr, "  %s on %s: %s %s on %s.%s\n", walk->physical,
		        plan->shards[walk->shard].name, shown,
		        vo.seen[r] == 0 ? "missing" : "differs",
		        plan->shards[owner.shard].name, physical);
		journal_event(run->journal, "error",
		              "verify: %s on %s: %s %s on %s.%s",
		              walk->physical, plan->shards[walk->shard].name,
		              shown, vo.seen[r] == 0 ? "missing" : "differs",
		              plan->shards[owner.shard].name, physical);
	}
	steps_keyset_free(&vo.set);
	free(vo.hashes);
	free(vo.seen);
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
		.no_effect = 1,
		.map = run->plan->from,
		.chunk = verify_chunk,
		.copies = 1,
		.all_columns = 1,
		.touched_only = 1, /* no row moves from the others */
	};

	return steps_walk_all(run, &spec, err);
}

const struct rs_step_def step_verify = {
	.name = "verify",
	.summary = "compare the moving rows on old and new owner",
	.run = verify_run,
};
