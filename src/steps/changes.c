/*
 * catch-up and final-catch-up of a split: replay the change log of every
 * source table (capture.c) onto the new owners.
 *
 * A batch of the log is read from its start, in position order: each entry
 * holds a primary key and the shard key the row had then.  The rows of
 * those keys are read again at the source, all at once (backend_read_keys),
 * so what is copied is the row as it is now, whatever the entries in
 * between said.  Then, for each entry:
 *
 *   - the row is still there and its owner under `to` is another shard:
 *     it is upserted there (once a batch, however many entries name it);
 *   - the entry's shard key had an owner that is another shard, and the
 *     row is gone or now belongs elsewhere: its copy there is deleted,
 *     matched on the primary key and that shard key, so that a copy that
 *     has come back with another shard key stays.
 *
 * Rows that do not move are skipped.  Then the batch's entries are deleted
 * from the log (trimmed): a crash before the trim replays them again, which
 * changes nothing.  The log is always read from its start, never after a
 * position, since positions may become visible out of order.
 *
 * Both steps stop when a batch comes back shorter than batch_rows: that
 * read saw every entry visible then.  final-catch-up also stops once it
 * has replayed as many entries as the log held when it began (below).  For
 * catch-up the backlog is then under one batch while the application still
 * writes.  final-catch-up runs under the fence, whose DDL waited for every
 * transaction that had written the table: every change to a row that moves is
 * committed before it, so the short batch has seen them all.  A fence of the
 * rows that move lets writes to the other rows go on, and their entries keep
 * coming; waiting for an empty log would then never end, and is not
 * needed (replay skips them).
 *
 * A doubling's replica that reshard makes itself (SQLite, copied before
 * the fence) is kept a mirror of its primary the same way
 * (steps_replay_mirror): every logged key, moving or not, is upserted on
 * the replica, or deleted there by primary key when the primary no longer
 * has it, so that the replica is a whole copy of the primary when the
 * fence is up, as a streaming replica would be.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/streams.h"
#include "steps/steps.h"

/* One source table's change log, as the replay reads it. */
struct replay {
	struct rs_walk walk;            /* the source table, for walk_owner */
	const struct rs_table_def *log; /* as described */
	struct rs_table_def read;       /* the log keyed on (position, primary
	                                   key, shard key): all canonical */
	struct rs_table_def trim;       /* the log keyed on its position */
	int key_at;    /* index of the shard key in an entry read */
	int key_cur;   /* index of the shard key in a row read at the source */
	int key_extra; /* the shard key is not a primary key column */
	int n_entry;   /* values in an entry: position, key, [shard key] */
	int mirror;    /* a replica to mirror the table on, or -1 */
	int64_t applied;
};

/* Describe the log of R's table and make its two views. */
static int
replay_open(struct rs_run *run, struct replay *r, struct rs_err *err)
{
	const struct rs_table_def *src = r->walk.def;
	const char *key = run->plan->tables[r->walk.table].key;
	char name[300];
	int *pk, rc;

	backend_change_log_name(r->walk.physical, name, sizeof(name));
	rc = engine_table(run, r->walk.shard, name, &r->log, err);
	if (rc != 0)
		return rc;
	pk = malloc(sizeof(int) * (size_t)(src->n_pk + 2));
	if (pk == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	r->read = *r->log;
	r->read.pk = pk;
	r->read.n_pk = 0;
	pk[r->read.n_pk++] = steps_column(r->log, "reshard_pos");
	r->key_extra = 1;
	r->key_at = -1;
	for (int k = 0; k < src->n_pk; k++) {
		const char *name_k = src->columns[src->pk[k]].name;

		pk[r->read.n_pk++] = steps_column(r->log, name_k);
		if (strcmp(name_k, key) == 0) {
			r->key_extra = 0;
			r->key_at = 1 + k;
		}
	}
	if (r->key_extra) {
		r->key_at = r->read.n_pk;
		pk[r->read.n_pk++] = steps_column(r->log, key);
	}
	r->n_entry = r->read.n_pk;
	for (int i = 0; i < r->read.n_pk; i++)
		if (pk[i] < 0)
			return backend_fail(
				r->walk.backend, err, RS_ESCHEMA,
				"change log %s lacks a column of %s's "
				"key or shard key: remove it (abort) "
				"and capture again",
				name, r->walk.physical);
	r->trim = *r->log;
	r->trim.pk = pk; /* its first column: the position */
	r->trim.n_pk = 1;
	r->key_cur = src->n_pk + steps_column(src, key);
	return 0;
}

/* The owner under `to` of shard key KEY, and whether it is the source.
 * KEY is canonical (a log entry's key columns) or, with ROW, the source
 * engine's text (a column of a row read). */
static int
replay_owner(struct replay *r, const struct rs_value *key, int row,
             struct rs_owner *owner, int *here, struct rs_err *err)
{
	const struct rs_map *to = r->walk.run->plan->to;
	int rc = row ? walk_owner(&r->walk, to, key, owner, err)
	             : walk_owner_canonical(&r->walk, to, key, owner, err);

	*here = rc == 0 && owner->shard == r->walk.shard &&
	        owner->table == r->walk.slot;
	return rc;
}

/* What one batch sends to one owner. */
struct replay_target {
	struct rs_owner owner;
	int *upserts, n_upserts; /* rows of the source's batch */
	int *deletes, n_deletes; /* entries of the log's batch */
};

/* The target of OWNER among T (N_T of them, room for one more: a batch
 * of N entries names at most 2 N owners, each entry's old and new one),
 * made with room for N upserts and N deletes when new; NULL when out of
 * memory. */
static struct replay_target *
replay_target(struct replay_target *t, int *n_t, struct rs_owner owner, int n)
{
	for (int i = 0; i < *n_t; i++)
		if (t[i].owner.shard == owner.shard &&
		    t[i].owner.table == owner.table)
			return &t[i];
	t[*n_t].owner = owner;
	t[*n_t].upserts = malloc(sizeof(int) * (size_t)(2 * n + 1));
	if (t[*n_t].upserts == NULL)
		return NULL;
	t[*n_t].deletes = t[*n_t].upserts + n;
	return &t[(*n_t)++];
}

/* Apply the batch of ENTRIES: read their rows again at the source, send
 * and delete what moves, per owner. */
static int
replay_apply(struct rs_run *run, struct replay *r,
             const struct rs_rowbuf *entries, struct rs_err *err)
{
	const struct rs_table_def *src = r->walk.def;
	int n = entries->n_rows, n_pk = src->n_pk, n_t = 0, rc = 0;
	struct rs_rowbuf keys = {.n_rows = 0, .n_cols = n_pk};
	struct rs_value *asked_keys = NULL;
	int n_asked = 0;
	struct rs_rowbuf current = {0};
	struct steps_keyset unique = {0}, found = {0};
	struct replay_target *t = calloc(2 * (size_t)n + 1, sizeof(*t));
	char *sent = NULL;

	keys.values = malloc(sizeof(struct rs_value) * ((size_t)n * n_pk + 1));
	asked_keys = malloc(sizeof(struct rs_value) * ((size_t)n * n_pk + 1));
	if (t == NULL || asked_keys == NULL || keys.values == NULL)
		rc = rs_err_set(err, RS_ENOMEM, "out of memory");
	for (int e = 0; rc == 0 && e < n; e++)
		memcpy(&keys.values[(size_t)e * n_pk],
		       rowbuf_row(entries, e) + 1,
		       sizeof(struct rs_value) * (size_t)n_pk);
	keys.n_rows = n;
	/* Each key once: a read by key returns a row per key asked. */
	if (rc == 0 && steps_keyset_init(&unique, &keys, n_pk) != 0)
		rc = rs_err_set(err, RS_ENOMEM, "out of memory");
	for (int e = 0; rc == 0 && e < n; e++)
		if (steps_keyset_find(&unique, rowbuf_row(&keys, e)) == e)
			memcpy(&asked_keys[(size_t)n_asked++ * n_pk],
			       rowbuf_row(&keys, e),
			       sizeof(struct rs_value) * (size_t)n_pk);
	if (rc == 0)
		rc = steps_read_keys(run, r->walk.backend, src, asked_keys,
		                     n_asked, n_pk, &current, err);
	if (rc == 0 && (steps_keyset_init(&found, &current, n_pk) != 0 ||
	                (sent = calloc((size_t)current.n_rows + 1, 1)) == NULL))
		rc = rs_err_set(err, RS_ENOMEM, "out of memory");
	for (int e = 0; rc == 0 && e < n; e++) {
		const struct rs_value *entry = rowbuf_row(entries, e);
		int c = steps_keyset_find(&found, entry + 1);
		struct rs_owner was = {-1, -1}, now = {-1, -1};
		int was_here = 1, now_here = 1;

		/* A row whose shard key was NULL was never copied (the copy
		 * refuses it): nothing to delete for that entry. */
		if (entry[r->key_at].text != NULL)
			rc = replay_owner(r, &entry[r->key_at], 0, &was,
			                  &was_here, err);
		if (rc == 0 && c >= 0)
			rc = replay_owner(r,
			                  &rowbuf_row(&current, c)[r->key_cur],
			                  1, &now, &now_here, err);
		if (rc != 0)
			break;
		if (!was_here && (c < 0 || now.shard != was.shard ||
		                  now.table != was.table)) {
			struct replay_target *d =
				replay_target(t, &n_t, was, n);

			if (d == NULL)
				rc = rs_err_set(err, RS_ENOMEM,
				                "out of memory");
			else
				d->deletes[d->n_deletes++] = e;
		}
		if (rc == 0 && c >= 0 && !now_here && !sent[c]) {
			struct replay_target *u =
				replay_target(t, &n_t, now, n);

			if (u == NULL)
				rc = rs_err_set(err, RS_ENOMEM,
				                "out of memory");
			else
				u->upserts[u->n_upserts++] = c;
			sent[c] = 1;
		}
	}
	for (int i = 0; rc == 0 && i < n_t; i++) {
		char physical[RS_PLAN_MAX_NAME + 1];

		engine_physical(run->plan->to,
		                run->plan->tables[r->walk.table].name,
		                t[i].owner.table, physical, sizeof(physical));
		rc = movers_delete(
			run, entries, 1, t[i].deletes, t[i].n_deletes,
			t[i].owner.shard, physical,
			r->key_extra ? run->plan->tables[r->walk.table].key
				     : NULL,
			err);
		if (rc == 0)
			rc = movers_send(run, r->walk.backend, src, &current,
			                 t[i].upserts, t[i].n_upserts,
			                 t[i].owner.shard, t[i].owner.table,
			                 physical, 0, NULL, err);
	}
	steps_keyset_free(&unique);
	steps_keyset_free(&found);
	rowbuf_free(&current);
	free(keys.values);
	free(asked_keys);
	free(sent);
	for (int i = 0; i < n_t; i++)
		free(t[i].upserts);
	free(t);
	return rc;
}

/* Mirror the batch of ENTRIES on R's replica: the rows read again at the
 * source are upserted there, the keys the source no longer has are
 * deleted (by primary key: the replica is a copy of the same table). */
static int
replay_apply_mirror(struct rs_run *run, struct replay *r,
                    const struct rs_rowbuf *entries, struct rs_err *err)
{
	const struct rs_table_def *src = r->walk.def;
	int n = entries->n_rows, n_pk = src->n_pk, n_up = 0, n_del = 0;
	struct rs_rowbuf current = {0};
	struct steps_keyset found = {0};
	struct rs_value *keys = malloc(sizeof(*keys) * ((size_t)n * n_pk + 1));
	int *up = malloc(sizeof(int) * (size_t)(2 * n + 1)), *del = up + n;
	int rc = keys == NULL || up == NULL
	                 ? rs_err_set(err, RS_ENOMEM, "out of memory")
	                 : 0;

	for (int e = 0; rc == 0 && e < n; e++)
		memcpy(&keys[(size_t)e * n_pk], rowbuf_row(entries, e) + 1,
		       sizeof(*keys) * (size_t)n_pk);
	/* A key logged twice is read twice and written twice: harmless. */
	if (rc == 0)
		rc = steps_read_keys(run, r->walk.backend, src, keys, n, n_pk,
		                     &current, err);
	if (rc == 0 && steps_keyset_init(&found, &current, n_pk) != 0)
		rc = rs_err_set(err, RS_ENOMEM, "out of memory");
	for (int c = 0; rc == 0 && c < current.n_rows; c++)
		up[n_up++] = c;
	for (int e = 0; rc == 0 && e < n; e++)
		if (steps_keyset_find(&found, rowbuf_row(entries, e) + 1) < 0)
			del[n_del++] = e;
	if (rc == 0)
		rc = movers_delete(run, entries, 1, del, n_del, r->mirror,
		                   r->walk.physical, NULL, err);
	if (rc == 0)
		rc = movers_send(run, r->walk.backend, src, &current, up, n_up,
		                 r->mirror, -1, r->walk.physical, 0, NULL, err);
	steps_keyset_free(&found);
	rowbuf_free(&current);
	free(keys);
	free(up);
	return rc;
}

/* Delete the batch of ENTRIES from the log. */
static int
replay_trim(struct rs_run *run, struct replay *r,
            const struct rs_rowbuf *entries, struct rs_err *err)
{
	struct rs_value *pos =
		malloc(sizeof(*pos) * ((size_t)entries->n_rows + 1));
	int rc;

	if (pos == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	for (int e = 0; e < entries->n_rows; e++)
		pos[e] = rowbuf_row(entries, e)[0];
	struct rs_rows del = {entries->n_rows, 1, pos};

	rc = await_delete(&run->loop, r->walk.backend, &r->trim, &del, err);
	free(pos);
	return rc;
}

/* Replay the log of one source table (see above). */
static int
replay_table(struct rs_run *run, int shard, int table, int slot,
             const char *physical, void *arg, struct rs_err *err)
{
	const int *mirror = arg;
	struct replay r = {
		.walk = {.run = run,
	                 .shard = shard,
	                 .table = table,
	                 .slot = slot},
		.mirror = mirror != NULL ? *mirror : -1,
	};
	struct rs_rowbuf entries = {0};
	int batch = run->plan->options.batch_rows;
	int64_t held = -1;
	int rc;

	snprintf(r.walk.physical, sizeof(r.walk.physical), "%s", physical);
	rc = engine_shard(run, shard, &r.walk.backend, err);
	if (rc == 0)
		rc = engine_table(run, shard, physical, &r.walk.def, err);
	if (rc == 0)
		rc = replay_open(run, &r, err);
	/* Under a fence of the moving rows the other rows' writes go on,
	 * each logged, and could fill every batch for as long as they last.
	 * They come after every entry the fence waited for, in position
	 * order: so final-catch-up is done once it has replayed as many
	 * entries as the log held when it began (an upper bound of those). */
	if (rc == 0 && run->step == &step_final_replay && r.mirror < 0)
		rc = await_count(&run->loop, r.walk.backend, r.log->name, &held,
		                 err);
	while (rc == 0 && (rc = engine_checkpoint(run, err)) == 0) {
		struct rs_read_request request = {
			.table = &r.read,
			.limit = batch,
		};

		rc = await_read(&run->loop, r.walk.backend, &request, &entries,
		                err);
		if (rc != 0 || entries.n_rows == 0)
			break;
		rc = r.mirror >= 0 ? replay_apply_mirror(run, &r, &entries, err)
		                   : replay_apply(run, &r, &entries, err);
		if (rc == 0)
			rc = replay_trim(run, &r, &entries, err);
		if (rc == 0) {
			progress_add(&run->progress, (uint64_t)entries.n_rows);
			r.applied += entries.n_rows;
		}
		if (entries.n_rows < batch || (held >= 0 && r.applied >= held))
			break;
	}
	rowbuf_free(&entries);
	free(r.read.pk);
	return rc;
}

/* catch-up and final-catch-up alike: what tells them apart is the
 * fence between them. */
static int
replay_run(struct rs_run *run, struct rs_err *err)
{
	int rc;

	progress_start(&run->progress, run->step->name, 0);
	rc = steps_each_table_stream(run, run->plan->from, replay_table, NULL,
	                             err);
	if (rc == 0)
		progress_finish(&run->progress);
	/* The unique indexes of the tables the run made, over rows the
	 * replay has set right (create.c). */
	if (rc == 0 && run->step == &step_replay)
		rc = steps_create_uniques(run, err);
	return rc;
}

int
steps_replay_sources(struct rs_run *run, struct rs_err *err)
{
	return steps_each_table_stream(run, run->plan->from, replay_table, NULL,
	                               err);
}

int
steps_replay_mirror(struct rs_run *run, int shard, int replica,
                    struct rs_err *err)
{
	return steps_each_table(run, run->plan->from, shard, replay_table,
	                        &replica, err);
}

const struct rs_step_def step_replay = {
	.name = "catch-up",
	.summary = "copy again the rows changed since the copy read them",
	.run = replay_run,
};

const struct rs_step_def step_final_replay = {
	.name = "final-catch-up",
	.summary = "replay the last changes, under the fence",
	.lazy_begin = 1, /* a replay repeated writes the same rows */
	.run = replay_run,
};
