/*
 * verify: the rows that move have the same values on their old and new
 * owner (DESIGN §9), chunk by chunk; the run's step, and the verify
 * command's pass (step_verify_on_demand), which is the same comparison
 * outside the run.
 *
 * Each source table is walked in key chunks with every column.  For each
 * new owner that can receive rows from it (the pairs of the two maps,
 * steps_each_owner_pair), the same key range is read there, a page at a time,
 * and
 *   - a mover of the chunk to that owner that is not there is "missing";
 *   - one whose values differ "differs", with the columns that do;
 *   - a row there that maps from this source to that owner by its own
 *     shard key but is not on the source is "extra", also when the
 *     source has its primary key under a shard key that sends it
 *     elsewhere (the last chunk's range runs to the table's end, walk.h
 *     open_end, so that rows past the source's last key are seen too).
 * Columns are matched by name, as the copy writes them: the owner's row
 * is compared in the source's column order.  Values are compared in the
 * engine's own text when both sides are the same engine with the same
 * columns (a promoted replica), a row whose texts differ being looked at
 * again in canonical form; in canonical form otherwise.
 *
 * Every difference is recorded in the journal (journal_difference_add)
 * under the pass and the chunk that found it, and the first VERIFY_SHOWN
 * are printed.  The run's step stops at the first chunk with differences
 * (exit 3, nothing purged); the chunk stays unrecorded, so a run after
 * the fix verifies it again.  The command's pass goes through every chunk
 * and is done all the same: its caller reads what it recorded.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/canonical.h"
#include "common/progress.h"
#include "engine/walk.h"
#include "steps/steps.h"

/* Differences printed on stderr in one process; all are recorded. */
#define VERIFY_SHOWN 20

/* What a settling recheck records its differences under, until it has
 * compared every key: then they replace pre-verify's, in one transaction
 * (journal_differences_replace).  Cut short, it leaves pre-verify's as
 * they were: a difference no change log holds is never lost. */
#define VERIFY_SETTLING "pre-verify-settling"

/* The new owners a source table (a shard of `from` and a slot) can send
 * rows to. */
struct verify_targets {
	int n; /* -1: the maps' pairs cannot be listed; each chunk's owners */
	struct rs_owner *owners;
	int cap;
};

/* What a pass shares across its streams (all on one loop: no locks). */
struct verify_pass {
	const char *name;               /* journal step and pass */
	int keep_going;                 /* record and go on (the command) */
	int settle;                     /* the recheck before the fence
	                                   (steps_verify_settle) */
	const char *record_as;          /* the pass differences are recorded
	                                   under, when not NAME (settling:
	                                   VERIFY_SETTLING, then NAME's) */
	int64_t rechecked;              /* keys a recheck compared */
	int64_t shown;                  /* differences printed so far */
	int per_shard;                  /* tables per shard under `from` */
	struct verify_targets *targets; /* [shard * per_shard + slot] */
};

/* One chunk's comparison with one new owner. */
struct verify_owner {
	struct rs_walk *walk;
	struct verify_pass *pass;
	const struct rs_rowbuf *rows;  /* the chunk's rows, source side */
	const struct rs_owner *owners; /* per row: its owner under `to` */
	struct rs_owner owner;         /* the new owner compared */
	struct rs_backend *target;
	const struct rs_table_def *def; /* the table on the owner */
	char physical[RS_PLAN_MAX_NAME + 1];
	int key_at;   /* the shard key in the owner's rows */
	int *columns; /* per source column, the owner's column of its name,
	                 -1 for none (movers_columns, as the copy maps) */
	int lacks;    /* source columns the owner lacks */
	struct rs_value *ordered; /* an owner's row in the source's column
	                             order (verify_in_source_order) */
	struct steps_keyset set;  /* over the chunk's rows */
	int native;               /* compare the engine's own text */
	uint64_t *hashes;         /* per row: its hash, source side */
	char *seen; /* per row: 0 not on the owner, 1 same, 2 differs */
	int differ; /* differences found in this chunk */
};

/* Whether values A and B are the same text, NULL only as NULL. */
static int
verify_same_text(const struct rs_value *a, const struct rs_value *b)
{
	if (a->text == NULL || b->text == NULL)
		return a->text == b->text;
	return a->len == b->len && memcmp(a->text, b->text, a->len) == 0;
}

/* Whether VALUE A (kind KIND, written by source SA) and B (by SB) hold the
 * same value: the same bytes, or the same canonical text. */
static int
verify_same_value(enum rs_col_kind kind, enum rs_canon_src sa,
                  const struct rs_value *a, enum rs_canon_src sb,
                  const struct rs_value *b)
{
	struct rs_canon_buf ca, cb;
	int same;

	if (verify_same_text(a, b))
		return 1;
	if (a->text == NULL || b->text == NULL)
		return 0;
	canonical_buf_init(&ca);
	canonical_buf_init(&cb);
	same = canonical_value(kind, sa, a->text, a->len, &ca, NULL) == 0 &&
	       canonical_value(kind, sb, b->text, b->len, &cb, NULL) == 0 &&
	       ca.len == cb.len &&
	       (ca.len == 0 || memcmp(ca.data, cb.data, ca.len) == 0);
	canonical_buf_free(&ca);
	canonical_buf_free(&cb);
	return same;
}

/* Map the owner's table VO->def onto the source's columns by name, as
 * the copy does (movers_columns), and make room for one owner's row in
 * the source's order.  Returns 0 or RS_ENOMEM (ERR filled); what was
 * allocated is the caller's to free either way. */
static int
verify_owner_columns(struct verify_owner *vo, struct rs_err *err)
{
	size_t n = (size_t)vo->walk->def->n_columns + 1;

	vo->columns = malloc(sizeof(*vo->columns) * n);
	vo->ordered = malloc(sizeof(*vo->ordered) * n);
	if (vo->columns == NULL || vo->ordered == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	vo->lacks = movers_columns(vo->walk->def, vo->def, vo->columns);
	return 0;
}

/* The values of the owner's row THERE (key columns first) in the
 * source's column order, in VO->ordered (valid until the next call): a
 * target may hold the columns in another order.  A column the owner
 * lacks is NULL there (VO->lacks says the rows differ). */
static const struct rs_value *
verify_in_source_order(struct verify_owner *vo, const struct rs_value *there)
{
	for (int c = 0; c < vo->walk->def->n_columns; c++)
		vo->ordered[c] = vo->columns[c] >= 0
		                         ? there[vo->def->n_pk + vo->columns[c]]
		                         : (struct rs_value){NULL, 0};
	return vo->ordered;
}

/* The names of the columns whose values differ between source row MINE
 * and the owner's row THERE, as a JSON array (malloc'd, NULL when out of
 * memory).  Columns are matched by name; one the owner lacks differs. */
static char *
verify_columns(const struct verify_owner *vo, const struct rs_value *mine,
               const struct rs_value *there)
{
	const struct rs_table_def *def = vo->walk->def;
	json_t *names = json_array();
	char *out;

	for (int c = 0; names != NULL && c < def->n_columns; c++) {
		int tc = vo->columns[c];

		if (tc >= 0 &&
		    verify_same_value(def->columns[c].kind,
		                      backend_canon_src(vo->walk->backend),
		                      &mine[def->n_pk + c],
		                      backend_canon_src(vo->target),
		                      &there[vo->def->n_pk + tc]))
			continue;
		json_array_append_new(names, json_string(def->columns[c].name));
	}
	out = names != NULL ? json_dumps(names, JSON_COMPACT) : NULL;
	json_decref(names);
	return out;
}

/* The shard key KEY of a row of DEF (the source's table or the owner's)
 * in canonical form, as the journal keeps it (the recheck hashes it):
 * allocated, NULL for a NULL key; *RC an error (ERR filled). */
static char *
verify_shard_key(const struct verify_owner *vo, const struct rs_table_def *def,
                 const struct rs_value *key, int *rc, struct rs_err *err)
{
	const struct rs_walk *walk = vo->walk;
	const struct rs_backend *writer =
		def == walk->def ? walk->backend : vo->target;
	struct rs_canon_buf buf = RS_CANON_BUF_INIT;
	char *text = NULL;
	size_t at;

	*rc = 0;
	if (key->text == NULL)
		return NULL;
	*rc = walk_key_canonical(
		writer, def,
		steps_column(def, walk->run->plan->tables[walk->table].key),
		key, &buf, &at, err);
	if (*rc == 0)
		text = at == SIZE_MAX ? strndup(key->text, key->len)
		                      : strndup(buf.data + at, buf.len - at);
	if (*rc == 0 && text == NULL)
		*rc = rs_err_set(err, RS_ENOMEM, "out of memory");
	canonical_buf_free(&buf);
	return text;
}

/* Record a difference of KIND ("missing", "extra", "differs" with
 * COLUMNS) for the row ROW (the key columns first) of table DEF, whose
 * shard key is its value KEY_AT, and print it while few have been. */
static int
verify_record(struct verify_owner *vo, const char *kind,
              const struct rs_table_def *def, int key_at,
              const struct rs_value *row, const char *columns,
              struct rs_err *err)
{
	struct rs_walk *walk = vo->walk;
	const struct rs_plan *plan = walk->run->plan;
	const char *shard = plan->shards[walk->shard].name;
	char owner[2 * RS_PLAN_MAX_NAME + 2];
	int rc;
	char *shard_key = verify_shard_key(vo, def, &row[key_at], &rc, err);
	char *pk = rc == 0 ? walk_key_json(row, def->n_pk) : NULL;
	struct rs_difference d = {
		.pass = vo->pass->record_as != NULL ? vo->pass->record_as
	                                            : vo->pass->name,
		.shard = shard,
		.table = walk->physical,
		.chunk = walk->number,
		.pk = pk,
		.shard_key = shard_key,
		.owner = owner,
		.kind = kind,
		.columns = columns,
	};

	snprintf(owner, sizeof(owner), "%s.%s",
	         plan->shards[vo->owner.shard].name, vo->physical);
	if (rc == 0 && pk == NULL)
		rc = rs_err_set(err, RS_ENOMEM, "out of memory");
	if (rc != 0) {
		free(pk);
		free(shard_key);
		return rc;
	}
	rc = journal_difference_add(walk->run->journal, &d, err);
	vo->differ++;
	if (rc == 0 && vo->pass->shown++ < VERIFY_SHOWN) {
		char shown[300];

		walk_describe_row_of(plan->tables[walk->table].key, def, key_at,
		                     row, shown, sizeof(shown));
		progress_clear();
		fprintf(stderr, "  %s on %s: %s %s on %s%s%s\n", walk->physical,
		        shard, shown,
		        strcmp(kind, "extra") == 0 ? "is extra" : kind, owner,
		        columns != NULL ? ": columns " : "",
		        columns != NULL ? columns : "");
		journal_event(walk->run->journal, "error",
		              "verify: %s on %s: %s %s on %s%s%s",
		              walk->physical, shard, shown, kind, owner,
		              columns != NULL ? ": columns " : "",
		              columns != NULL ? columns : "");
	}
	free(pk);
	free(shard_key);
	return rc;
}

/* Whether the owner's row THERE, which the source chunk lacks, is one the
 * source should have: it maps from this source to this owner. */
static int
verify_is_extra(const struct verify_owner *vo, const struct rs_value *there,
                int *extra, struct rs_err *err)
{
	const struct rs_walk *walk = vo->walk;
	struct rs_owner from = {-1, -1}, to = {-1, -1};
	struct rs_canon_buf buf = RS_CANON_BUF_INIT;
	struct rs_value key = there[vo->key_at];
	size_t at;
	int rc;

	*extra = 0;
	if (key.text == NULL)
		return 0; /* no owner: final-check's concern */
	/* The owner's engine wrote it: hashed in canonical form. */
	rc = walk_key_canonical(vo->target, vo->def, vo->key_at - vo->def->n_pk,
	                        &key, &buf, &at, err);
	if (rc == 0 && at != SIZE_MAX)
		key = (struct rs_value){buf.data + at, buf.len - at};
	if (rc == 0)
		rc = walk_owner_canonical(walk, walk->run->plan->from, &key,
		                          &from, err);
	if (rc == 0)
		rc = walk_owner_canonical(walk, walk->run->plan->to, &key, &to,
		                          err);
	canonical_buf_free(&buf);
	*extra = rc == 0 && from.shard == walk->shard &&
	         from.table == walk->slot && to.shard == vo->owner.shard &&
	         to.table == vo->owner.table;
	return rc;
}

/* Whether the N values A and B are the same texts, NULL only as NULL. */
static int
verify_same_texts(const struct rs_value *a, const struct rs_value *b, int n)
{
	for (int c = 0; c < n; c++)
		if (!verify_same_text(&a[c], &b[c]))
			return 0;
	return 1;
}

/* Compare the source row MINE (whose hash is MINE_HASH, native or not as
 * VO->native) with the owner's row THERE: 0 when they hold the same
 * values, 1 when they differ (recorded), or the error.  THERE is hashed
 * in the source's column order, its columns found by name as the copy
 * wrote them (each with the source column's kind, which preflight found
 * the same).  The same engine and columns on both sides: the same texts
 * are the same row, which hashing THERE could only confirm. */
static int
verify_compare(struct verify_owner *vo, const struct rs_value *mine,
               uint64_t mine_hash, const struct rs_value *there,
               struct rs_err *err)
{
	const struct rs_walk *walk = vo->walk;
	const struct rs_table_def *def = walk->def;
	const struct rs_value *row = verify_in_source_order(vo, there);
	uint64_t theirs = 0;
	char *columns;
	int rc = 0, same = 0;

	if (vo->native &&
	    verify_same_texts(mine + def->n_pk, row, def->n_columns))
		return 0;
	/* A column the owner lacks differs, whatever the others hold. */
	if (vo->lacks == 0) {
		rc = walk_row_hash(vo->target, vo->native, def, row, &theirs,
		                   err);
		same = rc == 0 && theirs == mine_hash;
	}

	/* Native texts that differ may be one value written two ways: a
	 * second look in canonical form. */
	if (rc == 0 && !same && vo->native) {
		uint64_t canon = 0;

		rc = walk_row_hash(walk->backend, 0, def, mine + def->n_pk,
		                   &canon, err);
		if (rc == 0)
			rc = walk_row_hash(vo->target, 0, def, row, &theirs,
			                   err);
		same = rc == 0 && canon == theirs;
	}
	if (rc != 0 || same)
		return rc;
	columns = verify_columns(vo, mine, there);
	rc = columns == NULL ? rs_err_set(err, RS_ENOMEM, "out of memory")
	                     : verify_record(vo, "differs", walk->def,
	                                     walk->key_at, mine, columns, err);
	free(columns);
	return rc != 0 ? rc : 1;
}

/* Whether the source holds the row whose primary key (canonical) THERE
 * starts with, this very key byte for byte: *HELD 1 or 0.  A key the
 * owner's collation puts in this chunk's range that the source's puts in
 * another chunk is there, and no extra. */
static int
verify_source_holds(const struct verify_owner *vo, const struct rs_value *there,
                    int *held, struct rs_err *err)
{
	const struct rs_walk *walk = vo->walk;
	int n_pk = walk->def->n_pk;
	struct rs_rowbuf src = {0};
	int rc = steps_read_keys(walk->run, walk->backend, walk->def, there, 1,
	                         n_pk, &src, err);

	*held = 0;
	for (int r = 0; rc == 0 && r < src.n_rows && !*held; r++)
		*held = verify_same_texts(rowbuf_row(&src, r), there, n_pk);
	rowbuf_free(&src);
	return rc;
}

/* Whether the owner's row THERE has the shard key of the source row
 * MINE as the same engine writes it, of the same kind: then it has that
 * row's owner, found without hashing it again. */
static int
verify_same_key(const struct verify_owner *vo, const struct rs_value *mine,
                const struct rs_value *there)
{
	const struct rs_walk *walk = vo->walk;

	return backend_canon_src(walk->backend) ==
	               backend_canon_src(vo->target) &&
	       walk->def->columns[walk->key_at - walk->def->n_pk].kind ==
	               vo->def->columns[vo->key_at - vo->def->n_pk].kind &&
	       verify_same_text(&mine[walk->key_at], &there[vo->key_at]);
}

/* A page of the owner's rows in the chunk's range: compare each mover of
 * the chunk to this owner with its source row; note the extra ones. */
static int
verify_page(const struct rs_rowbuf *page, void *ctx, struct rs_err *err)
{
	struct verify_owner *vo = ctx;

	for (int p = 0; p < page->n_rows; p++) {
		const struct rs_value *there = rowbuf_row(page, p);
		int r = steps_keyset_find(&vo->set, there);
		int rc, extra, held = 0;

		if (r < 0) {
			rc = verify_is_extra(vo, there, &extra, err);
			if (rc == 0 && extra)
				rc = verify_source_holds(vo, there, &held, err);
			if (rc == 0 && extra && !held)
				rc = verify_record(vo, "extra", vo->def,
				                   vo->key_at, there, NULL,
				                   err);
			if (rc != 0)
				return rc;
			continue;
		}
		/* The source's row of this key is not this owner's.  The
		 * owner's row is still extra when its own shard key sends
		 * it here from this source, which holds no row of that key
		 * and shard key to copy.  One whose shard key sends it
		 * elsewhere is not verify's: a doubling's replica holds the
		 * staying rows until purge, and final-check finds any
		 * other. */
		if (vo->owners[r].shard != vo->owner.shard ||
		    vo->owners[r].table != vo->owner.table) {
			if (verify_same_key(vo, rowbuf_row(vo->rows, r), there))
				continue; /* the source row's owner */
			rc = verify_is_extra(vo, there, &extra, err);
			if (rc == 0 && extra)
				rc = verify_record(vo, "extra", vo->def,
				                   vo->key_at, there, NULL,
				                   err);
			if (rc != 0)
				return rc;
			continue;
		}
		rc = verify_compare(vo, rowbuf_row(vo->rows, r), vo->hashes[r],
		                    there, err);
		if (rc < 0)
			return rc;
		vo->seen[r] = rc == 0 ? 1 : 2;
	}
	return 0;
}

/* The movers to VO's owner its range did not show, looked up there by
 * key and compared (verify_page's work for each found): the owner's
 * collation may order text keys otherwise than the source's, and put
 * some of the chunk's keys in another range.  Nothing is read when every
 * mover was seen. */
static int
verify_by_keys(struct verify_owner *vo, struct rs_err *err)
{
	const struct rs_rowbuf *rows = vo->rows;
	struct rs_rowbuf there = {0};
	int rc =
		steps_read_unseen(vo->walk->run, vo->target, vo->def, rows,
	                          vo->owners, vo->owner, vo->seen, &there, err);

	for (int t = 0; rc == 0 && t < there.n_rows; t++) {
		const struct rs_value *row = rowbuf_row(&there, t);
		int r = steps_keyset_find(&vo->set, row);

		if (r < 0 || vo->seen[r] != 0)
			continue;
		rc = verify_compare(vo, rowbuf_row(rows, r), vo->hashes[r], row,
		                    err);
		if (rc >= 0) {
			vo->seen[r] = rc == 0 ? 1 : 2;
			rc = 0;
		}
	}
	rowbuf_free(&there);
	return rc;
}

/* Compare the chunk ROWS (range AFTER … UPTO, UPTO NULL to the table's
 * end) with what OWNER holds in the same range.  *DIFFER grows by the
 * differences found, *SUM by the hashes of the movers compared. */
static int
verify_owner(struct rs_walk *walk, struct verify_pass *pass,
             const struct rs_rowbuf *rows, const struct rs_owner *owners,
             struct rs_owner owner, const struct rs_value *after,
             const struct rs_value *upto, struct rs_chunk_sum *sum, int *differ,
             struct rs_err *err)
{
	struct rs_run *run = walk->run;
	const struct rs_plan *plan = run->plan;
	struct verify_owner vo = {
		.walk = walk,
		.pass = pass,
		.rows = rows,
		.owners = owners,
		.owner = owner,
		.hashes = malloc(sizeof(uint64_t) * (size_t)(rows->n_rows + 1)),
		.seen = calloc((size_t)rows->n_rows + 1, 1),
	};
	int n_pk = walk->def->n_pk;
	int rc = engine_shard(run, owner.shard, &vo.target, err);

	if (rc == 0 && (vo.hashes == NULL || vo.seen == NULL ||
	                steps_keyset_init(&vo.set, rows, n_pk) != 0))
		rc = rs_err_set(err, RS_ENOMEM, "out of memory");
	engine_physical(plan->to, plan->tables[walk->table].name, owner.table,
	                vo.physical, sizeof(vo.physical));
	if (rc == 0)
		rc = engine_table(run, owner.shard, vo.physical, &vo.def, err);
	if (rc == 0) {
		int key = steps_column(vo.def, plan->tables[walk->table].key);

		if (key < 0)
			rc = backend_fail(vo.target, err, RS_ESCHEMA,
			                  "table %s has no column %s, the "
			                  "plan's shard key",
			                  vo.physical,
			                  plan->tables[walk->table].key);
		vo.key_at = vo.def->n_pk + key;
	}
	if (rc == 0)
		rc = verify_owner_columns(&vo, err);
	/* The same engine and columns on both sides (a promoted replica):
	 * compare the engine's own texts, with no conversion. */
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
			canonical_chunk_add(sum, vo.hashes[r]);
	}
	if (rc == 0)
		rc = walk_range_pages(run, vo.target, vo.def, after, upto, 0,
		                      verify_page, &vo, err);
	if (rc == 0)
		rc = verify_by_keys(&vo, err);
	for (int r = 0; rc == 0 && r < rows->n_rows; r++)
		if (owners[r].shard == owner.shard &&
		    owners[r].table == owner.table && vo.seen[r] == 0)
			rc = verify_record(&vo, "missing", walk->def,
			                   walk->key_at, rowbuf_row(rows, r),
			                   NULL, err);
	*differ += vo.differ;
	steps_keyset_free(&vo.set);
	free(vo.hashes);
	free(vo.seen);
	free(vo.columns);
	free(vo.ordered);
	return rc;
}

/* verify_owner for steps_each_new_owner. */
struct verify_chunk_ctx {
	struct verify_pass *pass;
	const struct rs_value *after, *upto;
	struct rs_chunk_sum *sum;
	int *differ;
};

static int
verify_chunk_owner(struct rs_walk *walk, const struct rs_rowbuf *rows,
                   const struct rs_owner *owners, struct rs_owner owner,
                   void *arg, struct rs_err *err)
{
	struct verify_chunk_ctx *c = arg;

	return verify_owner(walk, c->pass, rows, owners, owner, c->after,
	                    c->upto, c->sum, c->differ, err);
}

static int
verify_chunk(struct rs_walk *walk, const struct rs_rowbuf *rows,
             const struct rs_value *after, const struct rs_value *upto,
             int64_t *affected, uint64_t *checksum, struct rs_err *err)
{
	struct verify_pass *pass = walk->arg;
	const struct verify_targets *targets =
		&pass->targets[walk->shard * pass->per_shard + walk->slot];
	struct rs_chunk_sum sum = {0, 0};
	struct rs_owner *owners;
	int differ = 0;
	int rc = journal_differences_forget(
		walk->run->journal, pass->name,
		walk->run->plan->shards[walk->shard].name, walk->physical,
		walk->number, err);

	if (rc == 0)
		rc = steps_owners(walk, rows, &owners, err);
	if (rc != 0)
		return rc;
	for (int t = 0; rc == 0 && t < targets->n; t++)
		rc = verify_owner(walk, pass, rows, owners, targets->owners[t],
		                  after, upto, &sum, &differ, err);
	/* Maps whose pairs cannot be listed: the owners this chunk has. */
	if (rc == 0 && targets->n < 0) {
		struct verify_chunk_ctx ctx = {pass, after, upto, &sum,
		                               &differ};

		rc = steps_each_new_owner(walk, rows, owners,
		                          verify_chunk_owner, &ctx, err);
	}
	free(owners);
	if (rc != 0)
		return rc;
	if (differ > 0 && !pass->keep_going)
		return backend_fail(
			walk->backend, err, RS_EVERIFY,
			"table %s: %d moving rows differ from their copy on "
			"the new owner (`reshard status %s` lists them); "
			"nothing was purged",
			walk->physical, differ, walk->run->plan->path);
	*affected = (int64_t)sum.rows; /* the movers compared */
	*checksum = sum.sum;
	return 0;
}

/* Context of verify_pair: the new owners of every source table. */
struct verify_pair_ctx {
	struct verify_pass *pass;
	int failed;
};

/* steps_each_owner_pair's callback: note TO among the new owners of FROM
 * when it is another owner. */
static void
verify_pair(struct rs_owner from, struct rs_owner to, void *arg)
{
	struct verify_pair_ctx *ctx = arg;
	struct verify_targets *t;

	if (to.shard == from.shard && to.table == from.table)
		return;
	t = &ctx->pass->targets[from.shard * ctx->pass->per_shard + from.table];
	for (int i = 0; i < t->n; i++)
		if (t->owners[i].shard == to.shard &&
		    t->owners[i].table == to.table)
			return;
	if (t->n == t->cap) {
		int cap = t->cap ? 2 * t->cap : 4;
		struct rs_owner *grown =
			realloc(t->owners, sizeof(*grown) * (size_t)cap);

		if (grown == NULL) {
			ctx->failed = 1;
			return;
		}
		t->owners = grown;
		t->cap = cap;
	}
	t->owners[t->n++] = to;
}

/* Fill PASS->targets for every source table of the plan (the pinned
 * keys' owners included: the plan checked that a doubling's pinned keys
 * hash; any other key that does not is one no row can have).  Unlisted
 * (n -1) where the pairs of owners cannot be listed. */
static int
verify_targets_init(struct rs_run *run, struct verify_pass *pass,
                    struct rs_err *err)
{
	const struct rs_plan *plan = run->plan;
	int n = plan->n_shards * pass->per_shard;
	struct verify_pair_ctx ctx = {pass, 0};
	int rc;

	pass->targets = calloc((size_t)n + 1, sizeof(*pass->targets));
	if (pass->targets == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	rc = steps_each_owner_pair(plan, verify_pair, &ctx, err);
	if (rc == RS_EUSAGE) {
		for (int i = 0; i < n; i++)
			if (steps_in_map(plan->from, i / pass->per_shard))
				pass->targets[i].n = -1;
		return 0;
	}
	if (rc == 0 && ctx.failed)
		rc = rs_err_set(err, RS_ENOMEM, "out of memory");
	return rc;
}

static void
verify_targets_free(struct verify_pass *pass, int n)
{
	if (pass->targets == NULL)
		return;
	for (int i = 0; i < n; i++)
		free(pass->targets[i].owners);
	free(pass->targets);
}

/* Walk every source table with PASS. */
static int
verify_walk(struct rs_run *run, struct verify_pass *pass, struct rs_err *err)
{
	const struct steps_walk_spec spec = {
		.step = pass->name,
		.no_effect = 1,
		.map = run->plan->from,
		.chunk = verify_chunk,
		.copies = 1,
		.all_columns = 1,
		.open_end = 1,
		.touched_only = 1, /* no row moves from the others */
		.arg = pass,
	};
	int rc;

	int own = pass->targets == NULL; /* else the caller's */

	pass->per_shard = engine_tables_per_shard(run->plan->from);
	rc = own ? verify_targets_init(run, pass, err) : 0;
	if (rc == 0)
		rc = steps_walk_all(run, &spec, err);
	if (own) {
		verify_targets_free(pass,
		                    run->plan->n_shards * pass->per_shard);
		pass->targets = NULL;
	}
	return rc;
}

/*
 * The recheck under the fence, after a pre-verify (pre_verify.c): only the
 * keys that may have changed since pre-verify compared them are compared
 * again, by key: those in the change logs of the source and of its new
 * owners (a doubling's promoted replica, a split's targets), and those
 * pre-verify found different.  A key is compared on every owner it may
 * have: where its row belongs now, and where its shard key in the log
 * sent it (so a copy left behind by a move or a delete shows as extra).
 */

/* The keys of one source table to compare again: N_PK values and the
 * shard key a key, each key's texts in one malloc'd block. */
struct recheck_keys {
	int width;               /* n_pk + 1 */
	struct rs_value *values; /* n × width */
	char **blocks;           /* n */
	int n, cap;
};

/* Add the key VALUES (n_pk values, then the shard key) to K. */
static int
recheck_add(struct recheck_keys *k, const struct rs_value *values)
{
	size_t total = 1, at = 0;
	char *block;

	if (k->n == k->cap) {
		int cap = k->cap ? 2 * k->cap : 256;
		struct rs_value *v = realloc(
			k->values, sizeof(*v) * (size_t)cap * (size_t)k->width);
		char **b;

		if (v == NULL)
			return RS_ENOMEM;
		k->values = v;
		b = realloc(k->blocks, sizeof(*b) * (size_t)cap);
		if (b == NULL)
			return RS_ENOMEM;
		k->blocks = b;
		k->cap = cap;
	}
	for (int i = 0; i < k->width; i++)
		total += values[i].len + 1;
	block = malloc(total);
	if (block == NULL)
		return RS_ENOMEM;
	for (int i = 0; i < k->width; i++) {
		struct rs_value *v = &k->values[(size_t)k->n * k->width + i];

		v->len = values[i].len;
		v->text = NULL;
		if (values[i].text != NULL) {
			memcpy(block + at, values[i].text, values[i].len);
			block[at + values[i].len] = '\0';
			v->text = block + at;
			at += values[i].len + 1;
		}
	}
	k->blocks[k->n++] = block;
	return 0;
}

static void
recheck_keys_free(struct recheck_keys *k)
{
	for (int i = 0; i < k->n; i++)
		free(k->blocks[i]);
	free(k->blocks);
	free(k->values);
}

/* One source table's recheck. */
struct recheck {
	struct rs_walk walk;
	struct verify_pass *pass;
	struct recheck_keys keys;
	int log_key_at; /* the shard key in an entry of the log's view */
	int differ;
	/* Settling: the positions of the entries taken from the target log
	 * being read (their keys are compared, then they are trimmed). */
	int64_t *taken;
	int n_taken, cap_taken, taking;
};

/* Whether OWNER is the source table of RC. */
static int
recheck_is_source(const struct recheck *rc, struct rs_owner owner)
{
	return owner.shard == rc->walk.shard && owner.table == rc->walk.slot;
}

/* Note the position POS (canonical integer text) of an entry taken. */
static int
recheck_take(struct recheck *rc, const struct rs_value *pos)
{
	if (rc->n_taken == rc->cap_taken) {
		int cap = rc->cap_taken ? 2 * rc->cap_taken : 256;
		int64_t *grown =
			realloc(rc->taken, sizeof(*grown) * (size_t)cap);

		if (grown == NULL)
			return -1;
		rc->taken = grown;
		rc->cap_taken = cap;
	}
	rc->taken[rc->n_taken++] =
		pos->text != NULL ? strtoll(pos->text, NULL, 10) : 0;
	return 0;
}

/* A page of the change log's view (position, primary key, shard key, all
 * canonical): every key into the set. */
static int
recheck_log_page(const struct rs_rowbuf *page, void *ctx, struct rs_err *err)
{
	struct recheck *rc = ctx;
	int n_pk = rc->walk.def->n_pk;

	for (int e = 0; e < page->n_rows; e++) {
		const struct rs_value *entry = rowbuf_row(page, e);
		struct rs_value key[17];
		struct rs_owner from;

		/* A new owner's log holds the keys of every source that sends
		 * it rows: this source's only.  A shard key that stays on the
		 * source names no row to compare (a row that took it from a
		 * key that moves has an entry with that key too). */
		if (entry[rc->log_key_at].text != NULL) {
			struct rs_owner to;
			int r = walk_owner_canonical(
				&rc->walk, rc->walk.run->plan->from,
				&entry[rc->log_key_at], &from, err);

			if (r == 0)
				r = walk_owner_canonical(
					&rc->walk, rc->walk.run->plan->to,
					&entry[rc->log_key_at], &to, err);
			if (r != 0)
				return r;
			if (!recheck_is_source(rc, from) ||
			    recheck_is_source(rc, to))
				continue;
		}
		memcpy(key, entry + 1, sizeof(*key) * (size_t)n_pk);
		key[n_pk] = entry[rc->log_key_at];
		if (recheck_add(&rc->keys, key) != 0 ||
		    (rc->taking && recheck_take(rc, &entry[0]) != 0))
			return rs_err_set(err, RS_ENOMEM, "out of memory");
	}
	return 0;
}

/* Every key of the change log of table PHYSICAL on SHARD into RC->keys:
 * each change made there since the capture went on, before pre-verify's
 * walk began.  SHARD is the source, or a new owner (a doubling's replica,
 * which got the capture by replication and also logs what is written on
 * it directly; a split's target, which pre-verify gave it).  A missing
 * log is an error: what was written there could not be told. */
static int
recheck_read_log(struct rs_run *run, struct recheck *rc, int shard,
                 const char *physical, struct rs_err *err)
{
	const struct rs_table_def *src = rc->walk.def;
	const char *key = run->plan->tables[rc->walk.table].key;
	const struct rs_table_def *log;
	struct rs_table_def view;
	struct rs_backend *backend;
	char name[300];
	int pk[18], n = 0, key_in_pk = -1, r;

	backend_change_log_name(physical, name, sizeof(name));
	r = engine_shard(run, shard, &backend, err);
	if (r == 0)
		r = engine_table(run, shard, name, &log, err);
	if (r != 0)
		return r;
	/* Read keyed on (position, primary key[, shard key]): every value
	 * canonical, in position order. */
	pk[n++] = steps_column(log, "reshard_pos");
	for (int k = 0; k < src->n_pk; k++) {
		const char *col = src->columns[src->pk[k]].name;

		pk[n++] = steps_column(log, col);
		if (strcmp(col, key) == 0)
			key_in_pk = n - 1;
	}
	if (key_in_pk < 0) {
		key_in_pk = n;
		pk[n++] = steps_column(log, key);
	}
	for (int i = 0; i < n; i++)
		if (pk[i] < 0)
			return backend_fail(backend, err, RS_ESCHEMA,
			                    "change log %s lacks a column of "
			                    "%s's key or shard key",
			                    name, physical);
	view = *log;
	view.pk = pk;
	view.n_pk = n;
	rc->log_key_at = key_in_pk;
	return walk_range_pages(run, backend, &view, NULL, NULL, 1,
	                        recheck_log_page, rc, err);
}

/* The keys pre-verify found different on this table into RC->keys. */
static int
recheck_read_differences(struct rs_run *run, struct recheck *rc,
                         struct rs_err *err)
{
	const char *shard = run->plan->shards[rc->walk.shard].name;
	int n_pk = rc->walk.def->n_pk, n = 0;
	struct rs_difference *d;
	int r = journal_differences(run->journal, "pre-verify", 0, &d, &n, NULL,
	                            err);

	for (int i = 0; r == 0 && i < n; i++) {
		struct rs_value key[17];
		char *bytes;

		if (strcmp(d[i].shard, shard) != 0 ||
		    strcmp(d[i].table, rc->walk.physical) != 0)
			continue;
		r = walk_key_from_json(d[i].pk, n_pk, key, &bytes, err);
		if (r != 0)
			break;
		key[n_pk].text = d[i].shard_key;
		key[n_pk].len = d[i].shard_key ? strlen(d[i].shard_key) : 0;
		if (recheck_add(&rc->keys, key) != 0)
			r = rs_err_set(err, RS_ENOMEM, "out of memory");
		free(bytes);
	}
	journal_differences_free(d, n);
	return r;
}

/* Compare the keys IDX[0] … IDX[N-1] of the batch (KEYS, width W; their
 * source rows CURRENT, indexed by FOUND, and owners under `to` NOW) with
 * what OWNER holds. */
static int
recheck_owner(struct rs_run *run, struct recheck *rc, struct rs_owner owner,
              const struct rs_value *keys, int w, const int *idx, int n,
              const struct rs_rowbuf *current, const struct steps_keyset *found,
              const struct rs_owner *now, struct rs_err *err)
{
	const struct rs_plan *plan = run->plan;
	struct verify_owner vo = {
		.walk = &rc->walk,
		.pass = rc->pass,
		.owner = owner,
	};
	struct rs_value *asked = malloc(sizeof(*asked) * ((size_t)n * w + 1));
	struct rs_rowbuf there = {0};
	struct steps_keyset held = {0};
	int r = engine_shard(run, owner.shard, &vo.target, err);

	if (r == 0 && asked == NULL)
		r = rs_err_set(err, RS_ENOMEM, "out of memory");
	engine_physical(plan->to, plan->tables[rc->walk.table].name,
	                owner.table, vo.physical, sizeof(vo.physical));
	if (r == 0)
		r = engine_table(run, owner.shard, vo.physical, &vo.def, err);
	if (r == 0) {
		int key =
			steps_column(vo.def, plan->tables[rc->walk.table].key);

		if (key < 0)
			r = backend_fail(
				vo.target, err, RS_ESCHEMA,
				"table %s has no column %s, the plan's "
				"shard key",
				vo.physical, plan->tables[rc->walk.table].key);
		vo.key_at = vo.def->n_pk + key;
		vo.native = walk_same_layout(rc->walk.backend, rc->walk.def,
		                             vo.target, vo.def);
	}
	if (r == 0)
		r = verify_owner_columns(&vo, err);
	for (int i = 0; r == 0 && i < n; i++)
		memcpy(&asked[(size_t)i * w], &keys[(size_t)idx[i] * w],
		       sizeof(*asked) * (size_t)w);
	if (r == 0)
		r = steps_read_keys(run, vo.target, vo.def, asked, n, w, &there,
		                    err);
	if (r == 0 && steps_keyset_init(&held, &there, vo.def->n_pk) != 0)
		r = rs_err_set(err, RS_ENOMEM, "out of memory");
	for (int i = 0; r == 0 && i < n; i++) {
		const struct rs_value *key = &keys[(size_t)idx[i] * w];
		int c = steps_keyset_find(found, key);
		int t = steps_keyset_find(&held, key);
		int extra;

		if (c >= 0 && now[c].shard == owner.shard &&
		    now[c].table == owner.table) {
			const struct rs_value *mine = rowbuf_row(current, c);
			uint64_t hash;

			if (t < 0) {
				r = verify_record(&vo, "missing", rc->walk.def,
				                  rc->walk.key_at, mine, NULL,
				                  err);
				continue;
			}
			r = walk_row_hash(
				rc->walk.backend, vo.native, rc->walk.def,
				mine + rc->walk.def->n_pk, &hash, err);
			if (r == 0)
				r = verify_compare(&vo, mine, hash,
				                   rowbuf_row(&there, t), err);
			if (r > 0)
				r = 0;
			continue;
		}
		/* Not a mover to OWNER now: its row there, if any, must not
		 * be one that would move there from the source. */
		if (t < 0)
			continue;
		r = verify_is_extra(&vo, rowbuf_row(&there, t), &extra, err);
		if (r == 0 && extra)
			r = verify_record(&vo, "extra", vo.def, vo.key_at,
			                  rowbuf_row(&there, t), NULL, err);
	}
	rc->differ += vo.differ;
	steps_keyset_free(&held);
	rowbuf_free(&there);
	free(asked);
	free(vo.columns);
	free(vo.ordered);
	return r;
}

/* Compare again the keys BEGIN … BEGIN + N - 1 of RC->keys. */
static int
recheck_batch(struct rs_run *run, struct recheck *rc, int begin, int n,
              struct rs_err *err)
{
	const struct rs_plan *plan = run->plan;
	int w = rc->keys.width;
	const struct rs_value *keys = &rc->keys.values[(size_t)begin * w];
	struct rs_rowbuf current = {0};
	struct steps_keyset found = {0};
	struct rs_owner *now = NULL, *cand = NULL;
	int *idx = malloc(sizeof(int) * ((size_t)n + 1));
	int r = idx == NULL
	                ? rs_err_set(err, RS_ENOMEM, "out of memory")
	                : steps_read_keys(run, rc->walk.backend, rc->walk.def,
	                                  keys, n, w, &current, err);

	if (r == 0 &&
	    (steps_keyset_init(&found, &current, rc->walk.def->n_pk) != 0 ||
	     (now = calloc((size_t)current.n_rows + 1, sizeof(*now))) == NULL ||
	     (cand = calloc(2 * (size_t)n + 1, sizeof(*cand))) == NULL))
		r = rs_err_set(err, RS_ENOMEM, "out of memory");
	for (int c = 0; r == 0 && c < current.n_rows; c++)
		r = walk_owner(&rc->walk, plan->to,
		               &rowbuf_row(&current, c)[rc->walk.key_at],
		               &now[c], err);
	/* Each key's candidate owners: where its row belongs now, and
	 * where its shard key in the log (or in the difference) sent it. */
	for (int i = 0; r == 0 && i < n; i++) {
		const struct rs_value *key = &keys[(size_t)i * w];
		int c = steps_keyset_find(&found, key);

		struct rs_owner *pair = &cand[(size_t)2 * (size_t)i];

		pair[0] = pair[1] = (struct rs_owner){-1, -1};
		if (c >= 0 && !recheck_is_source(rc, now[c]))
			pair[0] = now[c];
		if (key[w - 1].text != NULL) {
			struct rs_owner o;

			r = walk_owner_canonical(&rc->walk, plan->to,
			                         &key[w - 1], &o, err);
			if (r == 0 && !recheck_is_source(rc, o) &&
			    (o.shard != pair[0].shard ||
			     o.table != pair[0].table))
				pair[1] = o;
		}
	}
	/* Owner by owner, in the order first named. */
	for (int j = 0; r == 0 && j < 2 * n; j++) {
		struct rs_owner o = cand[j];
		int m = 0, first = o.shard >= 0;

		for (int q = 0; q < j && first; q++)
			first = cand[q].shard != o.shard ||
			        cand[q].table != o.table;
		if (!first)
			continue;
		for (int q = j; q < 2 * n; q++)
			if (cand[q].shard == o.shard &&
			    cand[q].table == o.table &&
			    (m == 0 || idx[m - 1] != q / 2))
				idx[m++] = q / 2;
		r = recheck_owner(run, rc, o, keys, w, idx, m, &current, &found,
		                  now, err);
	}
	/* KEYS points into RC->keys.values, which recheck_table frees (the
	 * analyzer loses it through the struct and reports a leak here). */
	// NOLINTNEXTLINE(clang-analyzer-unix.Malloc)
	steps_keyset_free(&found);
	rowbuf_free(&current);
	free(now);
	free(cand);
	free(idx);
	return r;
}

/* Delete from the change log of PHYSICAL on SHARD its N entries at the
 * positions POS, a batch at a time. */
static int
recheck_trim(struct rs_run *run, int shard, const char *physical,
             const int64_t *pos, int n, struct rs_err *err)
{
	int batch = run->plan->options.batch_rows, column[1];
	const struct rs_table_def *log;
	struct rs_table_def view;
	struct rs_backend *backend;
	char name[300], (*text)[24] = malloc(sizeof(*text) * (size_t)batch);
	struct rs_value *values = malloc(sizeof(*values) * (size_t)batch);
	int r = text == NULL || values == NULL
	                ? rs_err_set(err, RS_ENOMEM, "out of memory")
	                : engine_shard(run, shard, &backend, err);

	backend_change_log_name(physical, name, sizeof(name));
	if (r == 0)
		r = engine_table(run, shard, name, &log, err);
	if (r == 0) {
		column[0] = steps_column(log, "reshard_pos");
		view = *log;
		view.pk = column;
		view.n_pk = 1;
	}
	for (int b = 0; r == 0 && b < n; b += batch) {
		int m = n - b < batch ? n - b : batch;
		struct rs_rows keys = {m, 1, values};

		for (int i = 0; i < m; i++) {
			snprintf(text[i], sizeof(text[i]), "%lld",
			         (long long)pos[b + i]);
			values[i] = (struct rs_value){text[i], strlen(text[i])};
		}
		r = await_delete(&run->loop, backend, &view, &keys, err);
	}
	free(text);
	free(values);
	return r;
}

/* Recheck one source table: its change log's keys and pre-verify's
 * differences, a batch at a time, each key once.  Settling (before the
 * fence, a split): only the targets' logs and the differences; what still
 * differs is recorded as pre-verify's again, and the targets' entries
 * compared are trimmed from their logs. */
static int
recheck_table(struct rs_run *run, int shard, int table, int slot,
              const char *physical, void *arg, struct rs_err *err)
{
	struct recheck rc = {
		.walk = {.run = run,
	                 .step = "verify",
	                 .shard = shard,
	                 .table = table,
	                 .slot = slot,
	                 .all_columns = 1,
	                 .number = -1},
		.pass = arg,
	};
	const struct verify_targets *targets =
		&rc.pass->targets[shard * rc.pass->per_shard + slot];
	struct rs_rowbuf view = {0};
	struct steps_keyset unique = {0};
	struct rs_value *uniq;
	struct {
		int64_t *pos;
		int n;
	} *trims = calloc((size_t)targets->n + 1, sizeof(*trims));
	int batch = run->plan->options.batch_rows, r, n = 0;

	if (trims == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	if (!engine_touches(run, shard)) {
		free(trims);
		return 0;
	}
	snprintf(rc.walk.physical, sizeof(rc.walk.physical), "%s", physical);
	r = engine_shard(run, shard, &rc.walk.backend, err);
	if (r == 0)
		r = engine_table(run, shard, physical, &rc.walk.def, err);
	if (r == 0) {
		int key =
			steps_column(rc.walk.def, run->plan->tables[table].key);

		if (key < 0) {
			free(trims);
			return backend_fail(rc.walk.backend, err, RS_ESCHEMA,
			                    "table %s has no column %s, the "
			                    "plan's shard key",
			                    physical,
			                    run->plan->tables[table].key);
		}
		rc.walk.key_at = rc.walk.def->n_pk + key;
		rc.keys.width = rc.walk.def->n_pk + 1;
	}
	/* The source's log holds what is not replayed yet: settling leaves
	 * it to the replay, and to the recheck under the fence. */
	if (r == 0 && !rc.pass->settle)
		r = recheck_read_log(run, &rc, shard, physical, err);
	for (int t = 0; r == 0 && t < targets->n; t++) {
		char there[RS_PLAN_MAX_NAME + 1];

		engine_physical(run->plan->to, run->plan->tables[table].name,
		                targets->owners[t].table, there, sizeof(there));
		rc.taking = rc.pass->settle;
		r = recheck_read_log(run, &rc, targets->owners[t].shard, there,
		                     err);
		trims[t].pos = rc.taken;
		trims[t].n = rc.n_taken;
		rc.taken = NULL;
		rc.n_taken = rc.cap_taken = rc.taking = 0;
	}
	if (r == 0)
		r = recheck_read_differences(run, &rc, err);
	/* Read: what this pass finds now replaces it.  Settling records
	 * under VERIFY_SETTLING (what an earlier one cut short left there
	 * goes) and replaces pre-verify's once every key is compared. */
	if (r == 0)
		r = journal_differences_forget(
			run->journal,
			rc.pass->settle ? VERIFY_SETTLING : rc.pass->name,
			run->plan->shards[shard].name, physical,
			rc.pass->settle ? JOURNAL_ALL_CHUNKS : -1, err);
	/* Each (primary key, shard key) once, in the order first seen: a
	 * key logged with several shard keys has as many owners to ask. */
	view = (struct rs_rowbuf){.n_rows = rc.keys.n,
	                          .n_cols = rc.keys.width,
	                          .values = rc.keys.values};
	uniq = malloc(sizeof(*uniq) *
	              ((size_t)rc.keys.n * (size_t)rc.keys.width + 1));
	if (r == 0 && (uniq == NULL ||
	               steps_keyset_init(&unique, &view, rc.keys.width) != 0))
		r = rs_err_set(err, RS_ENOMEM, "out of memory");
	for (int i = 0; r == 0 && i < rc.keys.n; i++)
		if (steps_keyset_find(&unique, rowbuf_row(&view, i)) == i)
			memcpy(&uniq[(size_t)n++ * (size_t)rc.keys.width],
			       rowbuf_row(&view, i),
			       sizeof(*uniq) * (size_t)rc.keys.width);
	steps_keyset_free(&unique);
	free(rc.keys.values); /* the texts stay in rc.keys.blocks */
	rc.keys.values = uniq;
	if (r == 0 && rc.pass->settle && n > 0)
		engine_fault("mid-settle:pre-verify");
	for (int b = 0; r == 0 && b < n; b += batch) {
		int m = n - b < batch ? n - b : batch;

		r = recheck_batch(run, &rc, b, m, err);
		if (r == 0) {
			progress_add(&run->progress, (uint64_t)m);
			r = engine_checkpoint(run, err);
		}
	}
	/* Compared (and what differs recorded): the entries may go — once
	 * the differences are on disk (they are recorded lazily), or a power
	 * cut could take a difference whose log entry is gone, and the
	 * recheck under the fence would not look at that key again.  The
	 * replace is a durable transaction. */
	if (r == 0 && rc.pass->settle)
		r = journal_differences_replace(
			run->journal, rc.pass->name, VERIFY_SETTLING,
			run->plan->shards[shard].name, physical, err);
	else if (r == 0 && rc.differ > 0)
		r = journal_sync(run->journal, err);
	for (int t = 0; t < targets->n; t++) {
		char there[RS_PLAN_MAX_NAME + 1];

		engine_physical(run->plan->to, run->plan->tables[table].name,
		                targets->owners[t].table, there, sizeof(there));
		if (r == 0 && trims[t].n > 0)
			r = recheck_trim(run, targets->owners[t].shard, there,
			                 trims[t].pos, trims[t].n, err);
		free(trims[t].pos);
	}
	free(trims);
	free(rc.taken);
	if (r == 0)
		rc.pass->rechecked += n;
	recheck_keys_free(&rc.keys);
	if (r == 0 && rc.differ > 0 && !rc.pass->keep_going)
		r = backend_fail(rc.walk.backend, err, RS_EVERIFY,
		                 "table %s: %d moving rows differ from their "
		                 "copy on the new owner (`reshard status %s` "
		                 "lists them); nothing was purged",
		                 physical, rc.differ, run->plan->path);
	return r;
}

/* Whether a pre-verify happened: the fact its step leaves.  A journal
 * that cannot say gets the whole comparison, which is never wrong. */
static int
verify_pre_verified(struct rs_run *run)
{
	char state[16];

	return journal_fact_get(run->journal, "pre_verify", state,
	                        sizeof(state), NULL) == 1 &&
	       strcmp(state, "done") == 0;
}

static int
verify_run(struct rs_run *run, struct rs_err *err)
{
	struct verify_pass pass = {.name = "verify"};
	int rc;

	int listed = 1;

	pass.per_shard = engine_tables_per_shard(run->plan->from);
	rc = verify_targets_init(run, &pass, err);
	/* The recheck reads the new owners' logs: it needs to know them
	 * (else every row is compared again). */
	for (int i = 0; rc == 0 && i < run->plan->n_shards * pass.per_shard;
	     i++)
		listed &= pass.targets[i].n >= 0;
	if (rc == 0 && verify_pre_verified(run) && listed) {
		fprintf(stderr, "  verify: compares again only the rows "
		                "changed since pre-verify and those it found "
		                "different\n");
		progress_start(&run->progress, "verify", 0);
		rc = steps_each_table_stream(run, run->plan->from,
		                             recheck_table, &pass, err);
		if (rc == 0)
			progress_finish(&run->progress);
	} else if (rc == 0) {
		rc = verify_walk(run, &pass, err);
	}
	verify_targets_free(&pass, run->plan->n_shards * pass.per_shard);
	pass.targets = NULL;
	/* What the command and pre-verify found before is superseded. */
	if (rc == 0)
		rc = journal_differences_forget(run->journal, STEPS_VERIFY_PASS,
		                                NULL, NULL, 0, err);
	return rc != 0 ? rc
	               : journal_differences_forget(run->journal, "pre-verify",
	                                            NULL, NULL, 0, err);
}

const struct rs_step_def step_verify = {
	.name = "verify",
	.summary = "compare the moving rows on old and new owner",
	.lazy_begin = 1, /* it reads, and records what it found */
	.run = verify_run,
};

int
steps_verify_settle(struct rs_run *run, int64_t *rechecked, struct rs_err *err)
{
	/* What differs now is the replay's lag, not news: not printed. */
	struct verify_pass pass = {.name = "pre-verify",
	                           .keep_going = 1,
	                           .settle = 1,
	                           .record_as = VERIFY_SETTLING,
	                           .shown = VERIFY_SHOWN};
	int n = run->plan->n_shards, listed = 1, rc;

	*rechecked = -1;
	pass.per_shard = engine_tables_per_shard(run->plan->from);
	n *= pass.per_shard;
	rc = verify_targets_init(run, &pass, err);
	for (int i = 0; rc == 0 && i < n; i++)
		listed &= pass.targets[i].n >= 0;
	if (rc == 0 && listed)
		rc = steps_each_table_stream(run, run->plan->from,
		                             recheck_table, &pass, err);
	if (rc == 0 && listed)
		*rechecked = pass.rechecked;
	verify_targets_free(&pass, n);
	return rc;
}

int
steps_verify_pass(struct rs_run *run, const char *pass, int keep_going,
                  struct rs_err *err)
{
	struct verify_pass vp = {.name = pass, .keep_going = keep_going};

	return verify_walk(run, &vp, err);
}

/* Whether the run is where the new owners hold a copy of the rows that
 * move and the old owners still own them: after the strategy's
 * copies_after step, before publish (no_return) or purge
 * (removes_moved) has begun.  RS_EUSAGE saying why
 * not, else 0. */
static int
verify_can_compare(struct rs_run *run, struct rs_err *err)
{
	const struct rs_strategy_def *strategy = run->strategy;
	const struct rs_plan *plan = run->plan;
	struct rs_step_record rec;
	int rc;

	for (int i = 0; i < strategy->n_steps; i++) {
		const struct rs_step_def *s = strategy->steps[i];

		if (!s->removes_moved && !s->no_return)
			continue;
		rc = journal_step_get(run->journal, s->name, &rec, err);
		if (rc != 0)
			return rc;
		if (rec.state != RS_STEP_PENDING)
			return rs_err_set(
				err, RS_EUSAGE,
				"step %s of run %s has begun: the rows that "
				"moved are their new owners' now (the old "
				"copies only wait for purge), so there is "
				"nothing to compare; `reshard status %s` "
				"tells what the run's verify found",
				s->name, plan->name, plan->path);
	}
	if (strategy->copies_after != NULL) {
		rc = journal_step_get(run->journal,
		                      strategy->copies_after->name, &rec, err);
		if (rc != 0)
			return rc;
		if (rec.state != RS_STEP_DONE)
			return rs_err_set(
				err, RS_EUSAGE,
				"the rows that move have no copy to compare "
				"with until step %s is done; `reshard run %s "
				"--until %s` makes it",
				strategy->copies_after->name, plan->path,
				strategy->copies_after->name);
	}
	for (int i = 0; i < plan->n_shards; i++)
		if (steps_in_map(plan->to, i) && !steps_in_map(plan->from, i) &&
		    !engine_shard_exists(run, i))
			return rs_err_set(
				err, RS_EUSAGE,
				"shard %s does not exist yet: the run has not "
				"made its copy; `reshard status %s` tells "
				"where the run is",
				plan->shards[i].name, plan->path);
	return 0;
}

static int
verify_on_demand_run(struct rs_run *run, struct rs_err *err)
{
	struct verify_pass pass = {.name = STEPS_VERIFY_PASS, .keep_going = 1};
	struct rs_chunk_record latest;
	char fenced[32];
	int rc = verify_can_compare(run, err);

	/* A pass from the start forgets what the last one found. */
	if (rc == 0) {
		int found = journal_chunk_latest(run->journal, pass.name,
		                                 &latest, err);

		if (found == 1)
			journal_chunk_free(&latest);
		else
			rc = found < 0 ? found
			               : journal_differences_forget(
						 run->journal, pass.name, NULL,
						 NULL, 0, err);
	}
	if (rc == 0 && journal_fact_get(run->journal, "fenced_since", fenced,
	                                sizeof(fenced), NULL) != 1)
		fprintf(stderr,
		        "  writes are not fenced: a row written since its "
		        "copy was made differs until the run catches up\n");
	return rc != 0 ? rc : verify_walk(run, &pass, err);
}

const struct rs_step_def step_verify_on_demand = {
	.name = STEPS_VERIFY_PASS,
	.summary = "compare the moving rows on old and new owner, now",
	.run = verify_on_demand_run,
};
