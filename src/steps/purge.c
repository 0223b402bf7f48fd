/*
 * purge: on every shard of the new map, delete in batches the rows it no
 * longer owns — each batch only after confirming, by key, that every one
 * of its rows exists on its new owner (DESIGN §7 rule 1) — throttled by
 * options.max_rows_per_second and, where a shard has replicas of its own
 * streaming from it, by their replay lag (max_replica_lag_seconds).
 *
 * Each table is walked in key chunks (primary key and shard key only); a
 * chunk's rows owned elsewhere are looked up in the same key range on
 * their owner.  A row missing there is deleted only when the owner's
 * delete log (emptied by publish, or, for a source that owned the row
 * throughout, running since pre-verify) records that the application deleted
 * it; any other missing row — one its owner never saw, written to the old
 * owner after unfence by a router with stale routing — is kept, recorded
 * in the journal (status lists it) and named by shard key and primary
 * key, and the rest of the chunk is purged.  The journal records each chunk's
 * intent before the delete and its result after, so a resumed purge skips
 * finished chunks and repeats a cut one harmlessly (deleting a key twice
 * deletes nothing the second time).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"
#include "engine/walk.h"
#include "engine/marker.h"
#include "engine/streams.h"
#include "steps/steps.h"

/* What confirming one chunk on its new owners gathers. */
struct purge_range {
	const struct rs_value *after, *upto; /* the chunk's key range */
	char *keep;                          /* per row: 1 to keep it */
	int kept;                            /* rows kept in this chunk */
};

/* Keep row R of ROWS: record it in the journal and say so. */
static int
purge_keep(struct rs_walk *walk, const struct rs_value *row,
           struct rs_owner owner, const char *physical, struct rs_err *err)
{
	const struct rs_plan *plan = walk->run->plan;
	const struct rs_value *key = &row[walk->key_at];
	char *pk = walk_key_json(row, walk->def->n_pk);
	char *shard_key =
		key->text != NULL ? strndup(key->text, key->len) : NULL;
	char owner_name[400], shown[300];
	struct rs_kept_row kept = {
		.shard = plan->shards[walk->shard].name,
		.table = walk->physical,
		.pk = pk,
		.shard_key = shard_key,
		.owner = owner_name,
	};
	int rc;

	snprintf(owner_name, sizeof(owner_name), "%s.%s",
	         plan->shards[owner.shard].name, physical);
	if (pk == NULL || (key->text != NULL && shard_key == NULL))
		rc = rs_err_set(err, RS_ENOMEM, "out of memory");
	else
		rc = journal_kept_add(walk->run->journal, &kept, err);
	if (rc == 0) {
		walk_describe_row(walk, row, shown, sizeof(shown));
		fprintf(stderr,
		        "  %s on %s: %s kept: its owner %s has no copy of it "
		        "and no record of deleting it\n",
		        walk->physical, plan->shards[walk->shard].name, shown,
		        owner_name);
	}
	free(pk);
	free(shard_key);
	return rc;
}

/* One owner's side of a chunk: which of the chunk's rows it has, or has
 * a record of deleting. */
struct purge_owner {
	const struct rs_owner *owners;
	struct rs_owner owner;
	struct steps_keyset set; /* over the chunk's rows */
	char *seen;              /* per row: 1 when accounted for */
};

/* A page of the owner's keys (of its table or its delete log) in the
 * chunk's range: mark the chunk's rows it accounts for. */
static int
purge_page(const struct rs_rowbuf *page, void *ctx, struct rs_err *err)
{
	struct purge_owner *po = ctx;

	(void)err;
	for (int p = 0; p < page->n_rows; p++) {
		int r = steps_keyset_find(&po->set, rowbuf_row(page, p));

		if (r >= 0 && po->owners[r].shard == po->owner.shard &&
		    po->owners[r].table == po->owner.table)
			po->seen[r] = 1;
	}
	return 0;
}

/* How many rows of ROWS that OWNER owns are not accounted for yet. */
static int
purge_unseen(const struct rs_rowbuf *rows, const struct purge_owner *po)
{
	int n = 0;

	for (int r = 0; r < rows->n_rows; r++)
		n += po->owners[r].shard == po->owner.shard &&
		     po->owners[r].table == po->owner.table && !po->seen[r];
	return n;
}

/* The rows of ROWS owned by PO's owner and not accounted for yet,
 * looked up by primary key in DEF (its table or its delete log) on
 * TARGET (steps_read_unseen): a key range of the source may hold other
 * keys on an owner of another collation.  Marks those found.  Returns 0
 * or the error of reading. */
static int
purge_by_keys(struct rs_run *run, struct rs_backend *target,
              const struct rs_table_def *def, const struct rs_rowbuf *rows,
              struct purge_owner *po, struct rs_err *err)
{
	struct rs_rowbuf there = {0};
	int rc = steps_read_unseen(run, target, def, rows, po->owners,
	                           po->owner, po->seen, &there, err);

	if (rc == 0)
		rc = purge_page(&there, po, err);
	rowbuf_free(&there);
	return rc;
}

/* Check every row of ROWS owned by OWNER: it exists there, or the owner's
 * delete log says the application deleted it there (see the top); any other is
 * marked to keep (and recorded).  The owner's side is read a page at a
 * time, then, for rows that range did not show, by key (purge_by_keys).
 * Returns 0 or an error. */
static int
purge_confirm(struct rs_walk *walk, const struct rs_rowbuf *rows,
              const struct rs_owner *owners, struct rs_owner owner, void *ctx,
              struct rs_err *err)
{
	struct purge_range *range = ctx;
	struct rs_run *run = walk->run;
	const struct rs_plan *plan = run->plan;
	struct rs_backend *target;
	struct purge_owner po = {
		.owners = owners,
		.owner = owner,
		.seen = calloc((size_t)rows->n_rows + 1, 1),
	};
	const struct rs_table_def *def;
	char physical[256], log[300];
	int rc = engine_shard(run, owner.shard, &target, err);

	if (rc == 0 && (po.seen == NULL ||
	                steps_keyset_init(&po.set, rows, walk->def->n_pk) != 0))
		rc = rs_err_set(err, RS_ENOMEM, "out of memory");
	engine_physical(plan->to, plan->tables[walk->table].name, owner.table,
	                physical, sizeof(physical));
	if (rc == 0)
		rc = engine_table(run, owner.shard, physical, &def, err);
	if (rc == 0)
		rc = walk_range_pages(run, target, def, range->after,
		                      range->upto, 1, purge_page, &po, err);
	if (rc == 0 && purge_unseen(rows, &po) > 0)
		rc = purge_by_keys(run, target, def, rows, &po, err);
	/* Missing on their owner: deleted there by the application? */
	if (rc == 0 && purge_unseen(rows, &po) > 0 &&
	    backend_supports(target, RS_CAP_DELETE_LOG)) {
		backend_delete_log_name(physical, log, sizeof(log));
		rc = engine_table(run, owner.shard, log, &def, err);
		if (rc == 0)
			rc = walk_range_pages(run, target, def, range->after,
			                      range->upto, 1, purge_page, &po,
			                      err);
		if (rc == 0 && purge_unseen(rows, &po) > 0)
			rc = purge_by_keys(run, target, def, rows, &po, err);
	}
	for (int r = 0; rc == 0 && r < rows->n_rows; r++) {
		if (owners[r].shard != owner.shard ||
		    owners[r].table != owner.table || po.seen[r])
			continue;
		range->keep[r] = 1;
		range->kept++;
		rc = purge_keep(walk, rowbuf_row(rows, r), owner, physical,
		                err);
	}
	steps_keyset_free(&po.set);
	free(po.seen);
	return rc;
}

/* The primary keys of the rows to delete, for delete_keys: the rows'
 * first n_pk values, canonical as every read returns them.  KEYS->values
 * is the caller's to free; the texts stay ROWS'. */
static int
purge_keys(struct rs_walk *walk, const struct rs_rowbuf *rows,
           const struct rs_owner *owners, const char *keep,
           struct rs_rowbuf *keys, struct rs_err *err)
{
	int n_pk = walk->def->n_pk, n = 0;

	keys->n_cols = n_pk;
	keys->values = malloc(sizeof(struct rs_value) *
	                      ((size_t)rows->n_rows * (size_t)n_pk + 1));
	if (keys->values == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	for (int r = 0; r < rows->n_rows; r++) {
		if ((owners[r].shard == walk->shard &&
		     owners[r].table == walk->slot) ||
		    keep[r])
			continue;
		memcpy(&keys->values[(size_t)n * (size_t)n_pk],
		       rowbuf_row(rows, r),
		       sizeof(struct rs_value) * (size_t)n_pk);
		n++;
	}
	keys->n_rows = n;
	return 0;
}

static int
purge_chunk(struct rs_walk *walk, const struct rs_rowbuf *rows,
            const struct rs_value *after, const struct rs_value *upto,
            int64_t *affected, uint64_t *checksum, struct rs_err *err)
{
	struct rs_run *run = walk->run;
	struct purge_range range = {after, upto, NULL, 0};
	struct rs_rowbuf keys = {0};
	struct rs_owner *owners;
	int rc;

	(void)checksum;
	*affected = 0;
	rc = steps_owners(walk, rows, &owners, err);
	if (rc != 0)
		return rc;
	range.keep = calloc((size_t)rows->n_rows + 1, 1);
	if (range.keep == NULL)
		rc = rs_err_set(err, RS_ENOMEM, "out of memory");
	/* Every new owner confirms its rows before anything is deleted. */
	if (rc == 0)
		rc = steps_each_new_owner(walk, rows, owners, purge_confirm,
		                          &range, err);
	if (rc == 0)
		rc = purge_keys(walk, rows, owners, range.keep, &keys, err);
	/* The chunk's intent on disk before the delete (intent_async: its
	 * fsync ran while the owners confirmed). */
	if (rc == 0 && keys.n_rows > 0)
		rc = walk_settle(walk, err);
	if (rc == 0 && keys.n_rows > 0)
		rc = steps_wait_downstream(run, walk->backend, walk->shard,
		                           "purge", err);
	if (rc == 0 && keys.n_rows > 0) {
		struct rs_rows del = {keys.n_rows, keys.n_cols, keys.values};

		/* Past this shard's delete log: these keys are not this
		 * shard's, so no purge looks them up in its log. */
		rc = await_purge(&run->loop, walk->backend, walk->def, &del,
		                 err);
		if (rc == 0)
			streams_throttle(run, keys.n_rows);
	}
	*affected = keys.n_rows;
	*(int64_t *)walk->arg += range.kept;
	free(range.keep);
	free(keys.values);
	free(owners);
	return rc;
}

/* The rows purge kept (journal_kept_list), for purge_report_shard. */
struct purge_kept {
	struct rs_kept_row *rows;
	int n;
};

/* Say what purge did on SHARD, from the journal (so a resumed purge
 * counts every attempt): the rows it deleted and the rows it kept. */
static int
purge_report_shard(struct rs_run *run, int shard, void *arg, struct rs_err *err)
{
	const struct purge_kept *list = arg;
	int here = 0;
	const char *name = run->plan->shards[shard].name;
	char deleted_text[32], kept_text[32];
	int64_t deleted = 0;
	int rc = journal_shard_affected(run->journal, "purge", name, &deleted,
	                                err);

	for (int i = 0; i < list->n; i++)
		here += strcmp(list->rows[i].shard, name) == 0;
	if (rc != 0)
		return rc;
	text_thousands((uint64_t)deleted, deleted_text, sizeof(deleted_text));
	text_thousands((uint64_t)here, kept_text, sizeof(kept_text));
	fprintf(stderr, "  %s: %s rows deleted, %s kept\n", name, deleted_text,
	        kept_text);
	journal_event(run->journal, "info",
	              "purge: %s: %s rows deleted, %s kept", name, deleted_text,
	              kept_text);
	return 0;
}

/* Purge is done on SHARD: the guard goes (steps_guard_shard). */
static int
purge_unguard(struct rs_run *run, int shard, void *arg, struct rs_err *err)
{
	int replica = run->plan->shards[shard].replica;
	int rc = steps_guard_shard(run, shard, 0, err);

	(void)arg;
	if (rc == 0 && run->strategy->promotes_replicas && replica >= 0)
		rc = steps_guard_shard(run, replica, 0, err);
	return rc;
}

static int
purge_uncapture(struct rs_run *run, int shard, void *arg, struct rs_err *err)
{
	(void)arg;
	return steps_capture_shard(run, shard, 0, err);
}

/* A shard deletes only the rows that moved away: chunks that read more of
 * them (fill_affected) keep each delete transaction near batch_rows rows,
 * and their number (each costs the shard a few fsyncs) near rows deleted /
 * batch_rows. */
static int
purge_run(struct rs_run *run, struct rs_err *err)
{
	int64_t kept = 0;
	const struct steps_walk_spec spec = {
		.step = "purge",
		.map = run->plan->to,
		.chunk = purge_chunk,
		.fill_affected = 1,
		.intent_async = 1, /* purge_chunk settles before it deletes */
		.touched_only = 1, /* the others keep every row */
		/* A doubling's replicas hold a full copy until purged. */
		.copies = run->strategy->copies_before_purge,
		.arg = &kept,
	};
	char epoch[32] = "0";
	int rc = 0;

	/* The change capture has served: the last change was replayed and
	 * verified under the fence, and the routing is published.  First
	 * what pre-verify put up (a doubling's sources and promoted
	 * replicas, a split's targets), then a split's own on its sources;
	 * here, not in unfence, so that its trigger DDL never waits inside
	 * the fence. */
	rc = steps_pre_verify_off(run, err);
	if (rc == 0 && run->strategy->copies_movers)
		rc = steps_each_shard(run, run->plan->from, purge_uncapture,
		                      NULL, err);
	if (rc == 0)
		rc = steps_walk_all(run, &spec, err);

	if (rc == 0) {
		struct purge_kept list = {NULL, 0};

		rc = journal_kept_list(run->journal, &list.rows, &list.n, err);
		/* Every shard purge walked: the sources, and a doubling's
		 * replicas with their copies. */
		if (rc == 0)
			rc = steps_each_shard_of(run, run->plan->to, 1,
			                         purge_report_shard, &list,
			                         err);
		journal_kept_free(list.rows, list.n);
	}
	if (rc == 0 && kept > 0)
		fprintf(stderr,
		        "  %lld rows kept on shards that no longer own them "
		        "(above; `reshard status %s` lists them); every other "
		        "row they no longer own is purged\n",
		        (long long)kept, run->plan->path);
	if (rc == 0 && (rc = journal_fact_get(run->journal, "epoch", epoch,
	                                      sizeof(epoch), err)) == 1)
		rc = 0;
	/* The guard has served, unless the plan keeps it for routers that
	 * are slow to learn the new routing. */
	if (rc == 0 && !run->plan->options.keep_guard)
		rc = steps_each_shard_of(run, run->plan->from, 1, purge_unguard,
		                         NULL, err);
	if (rc == 0 && !run->plan->options.keep_guard)
		rc = journal_fact_delete(run->journal, "guarded", err);
	if (rc == 0 && run->plan->options.keep_guard)
		fprintf(stderr,
		        "  the ownership guard stays on the old owners "
		        "(options.keep_guard); `reshard status %s` says how "
		        "to take it off\n",
		        run->plan->path);
	if (rc == 0)
		rc = marker_set_all(run, "purged", strtoll(epoch, NULL, 10),
		                    err);
	return rc;
}

const struct rs_step_def step_purge = {
	.name = "purge",
	.summary = "delete from each shard the rows it no longer owns",
	.irreversible = 1,
	.removes_moved = 1,
	.run = purge_run,
};
