/*
 * Sending rows to their new owner (steps.h, "movers.c"): the copy and the
 * change-log replay of a split write the rows that move into tables that
 * may be of another engine, with other column orders.  Every value goes
 * through its canonical form (backend/canonical.h), which every engine's
 * upsert takes, so PostgreSQL rows land on MariaDB or SQLite exactly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/canonical.h"
#include "engine/streams.h"
#include "steps/steps.h"

int
movers_layout_check(struct rs_run *run, int from_shard,
                    const struct rs_table_def *from_def, int to_shard,
                    const struct rs_table_def *to_def, struct rs_err *err)
{
	const char *from = run->plan->shards[from_shard].name;
	const char *to = run->plan->shards[to_shard].name;
	int differ = 0;

	for (int c = 0; c < from_def->n_columns; c++) {
		const struct rs_column *mine = &from_def->columns[c];
		int there = steps_column(to_def, mine->name);
		const struct rs_column *theirs;

		if (there < 0) {
			fprintf(stderr,
			        "  %s on %s has no column %s (%s on %s): add "
			        "it\n",
			        to_def->name, to, mine->name, mine->type, from);
			differ++;
			continue;
		}
		theirs = &to_def->columns[there];
		if (theirs->kind != mine->kind)
			fprintf(stderr,
			        "  %s.%s is %s (%s) on %s but %s (%s) on %s: "
			        "give it a type of the same kind\n",
			        to_def->name, mine->name, theirs->type,
			        canonical_kind_name(theirs->kind), to,
			        mine->type, canonical_kind_name(mine->kind),
			        from);
		differ += theirs->kind != mine->kind;
	}
	for (int c = 0; c < to_def->n_columns; c++)
		if (steps_column(from_def, to_def->columns[c].name) < 0) {
			fprintf(stderr,
			        "  %s on %s has a column %s that %s on %s "
			        "lacks: drop it or add it there\n",
			        to_def->name, to, to_def->columns[c].name,
			        from_def->name, from);
			differ++;
		}
	int same_pk = from_def->n_pk == to_def->n_pk;

	for (int k = 0; same_pk && k < from_def->n_pk; k++)
		same_pk = strcmp(from_def->columns[from_def->pk[k]].name,
		                 to_def->columns[to_def->pk[k]].name) == 0;
	if (!same_pk) {
		fprintf(stderr,
		        "  %s on %s: the primary key differs from that of %s "
		        "on %s: make them the same columns in the same "
		        "order\n",
		        to_def->name, to, from_def->name, from);
		differ++;
	}
	if (differ > 0)
		return rs_err_set(
			err, RS_ESCHEMA,
			"table %s on %s cannot receive the rows of %s "
			"on %s: %d difference%s (above); nothing was "
			"changed",
			to_def->name, to, from_def->name, from, differ,
			differ == 1 ? "" : "s");
	return 0;
}

int
movers_columns(const struct rs_table_def *of, const struct rs_table_def *in,
               int *map)
{
	int lacks = 0;

	for (int c = 0; c < of->n_columns; c++) {
		map[c] = steps_column(in, of->columns[c].name);
		lacks += map[c] < 0;
	}
	return lacks;
}

/* The canonical rows of a movers_send, in the owner's column order. */
struct movers_batch {
	struct rs_canon_buf text;
	size_t *offsets; /* per value, into text; (size_t)-1 for NULL */
	struct rs_value *values;
};

static void
movers_batch_free(struct movers_batch *b)
{
	canonical_buf_free(&b->text);
	free(b->offsets);
	free(b->values);
}

/* Fill B with the chosen rows of ROWS in DST's column order, canonical.
 * Returns 0 or RS_ENOMEM / RS_EVALUE / RS_ESCHEMA with ERR filled. */
static int
movers_convert(struct rs_backend *src, const struct rs_table_def *src_def,
               const struct rs_rowbuf *rows, const int *idx, int n,
               const struct rs_table_def *dst, struct movers_batch *b,
               struct rs_err *err)
{
	size_t cells = (size_t)n * (size_t)dst->n_columns, bytes = 0;
	int *map = malloc(sizeof(int) * (size_t)(dst->n_columns + 1));
	int rc = 0;

	canonical_buf_init(&b->text);
	b->offsets = malloc(sizeof(size_t) * (cells + 1));
	b->values = malloc(sizeof(struct rs_value) * (cells + 1));
	if (map == NULL || b->offsets == NULL || b->values == NULL)
		rc = rs_err_set(err, RS_ENOMEM, "out of memory");
	for (size_t i = 0; rc == 0 && i < cells; i++)
		b->offsets[i] = (size_t)-1; /* NULL until a value is in */
	if (rc == 0)
		movers_columns(dst, src_def, map);
	for (int c = 0; rc == 0 && c < dst->n_columns; c++)
		if (map[c] < 0)
			rc = backend_fail(src, err, RS_ESCHEMA,
			                  "table %s has no column %s, which %s "
			                  "has",
			                  src_def->name, dst->columns[c].name,
			                  dst->name);
	/* Room for the batch at once: most canonical texts are as long as
	 * the engine's. */
	for (int r = 0; rc == 0 && r < n; r++) {
		const struct rs_value *row =
			rowbuf_row(rows, idx[r]) + src_def->n_pk;

		for (int c = 0; c < dst->n_columns; c++)
			bytes += row[map[c]].len + 1;
	}
	if (rc == 0)
		rc = canonical_buf_reserve(&b->text, bytes, err);
	for (int r = 0; rc == 0 && r < n; r++) {
		const struct rs_value *row =
			rowbuf_row(rows, idx[r]) + src_def->n_pk;

		for (int c = 0; rc == 0 && c < dst->n_columns; c++) {
			const struct rs_value *v = &row[map[c]];
			enum rs_col_kind kind = src_def->columns[map[c]].kind;
			size_t at =
				(size_t)r * (size_t)dst->n_columns + (size_t)c;

			b->values[at].len = 0;
			if (v->text == NULL)
				continue;
			b->offsets[at] = b->text.len;
			rc = canonical_value(kind, backend_canon_src(src),
			                     v->text, v->len, &b->text, err);
			if (rc == RS_EVALUE) {
				char why[sizeof(err->message)];

				snprintf(why, sizeof(why), "%s", err->message);
				rc = backend_fail(src, err, RS_EVALUE,
				                  "table %s, column %s: %s",
				                  src_def->name,
				                  src_def->columns[map[c]].name,
				                  why);
			}
			b->values[at].len = b->text.len - b->offsets[at];
		}
	}
	/* The buffer stops moving once every value is in. */
	for (size_t i = 0; rc == 0 && i < cells; i++)
		b->values[i].text = b->offsets[i] == (size_t)-1
		                            ? NULL
		                            : b->text.data + b->offsets[i];
	free(map);
	return rc;
}

/* Whether a write that failed with ERR is done again as an upsert: the
 * server chose it as a deadlock's victim (serialization failure) and
 * rolled it back, as it does when two streams write rows of one unique
 * value into one table; the upsert then fails with the clash itself, or
 * goes in.  A lock wait that timed out is not: it would wait as long. */
static int
movers_deadlocked(const struct rs_err *err)
{
	return err != NULL && err->code == RS_EQUERY &&
	       (strcmp(err->sqlstate, "40001") == 0 ||
	        strcmp(err->sqlstate, "40P01") == 0);
}

/* Write ROWS into DST on BACKEND: backend_load when FRESH, then, if a key
 * was there already (a chunk repeated after a crash), backend_upsert of
 * the same rows; else backend_upsert.  A write the server rolled back as
 * a deadlock's victim is upserted once more (movers_deadlocked).  One
 * statement on the stream's connection: sending half a batch on a second
 * connection at once was tried, and measured no faster once the chunk's
 * buffers stopped being faulted in afresh every chunk (main.c); it only
 * made the server's cores, which also serve the reads, busier. */
static int
movers_write(struct rs_run *run, struct rs_backend *backend,
             const struct rs_table_def *dst, const struct rs_rows *rows,
             int fresh, struct rs_err *err)
{
	int rc = fresh ? await_load(&run->loop, backend, dst, rows, err)
	               : await_upsert(&run->loop, backend, dst, rows, err);

	if (rc != 0 &&
	    ((fresh && backend_load_conflict(err)) || movers_deadlocked(err)))
		rc = await_upsert(&run->loop, backend, dst, rows, err);
	return rc;
}

/* steps_each_owner_pair's callback for steps_sole_source: note the
 * owner under `from` of each pair whose owner under `to` is the target. */
struct sole_source {
	struct rs_owner target, source;
	int n; /* owners seen under `from`: 0, 1, or 2 for more */
};

static void
sole_source_pair(struct rs_owner from, struct rs_owner to, void *arg)
{
	struct sole_source *s = arg;

	if (to.shard != s->target.shard || to.table != s->target.table ||
	    (from.shard == to.shard && from.table == to.table))
		return;
	if (s->n == 0)
		s->source = from;
	else if (from.shard != s->source.shard || from.table != s->source.table)
		s->n = 2;
	s->n += s->n == 0;
}

int
steps_sole_source(struct rs_run *run, int shard, int table)
{
	int per_shard = engine_tables_per_shard(run->plan->to);
	int at = shard * per_shard + table, sole;
	size_t n = (size_t)run->plan->n_shards * (size_t)per_shard;
	struct sole_source s = {.target = {shard, table}};
	struct rs_err err = {0};
	signed char *known = run->sole_source;

	if (known == NULL && (known = malloc(n)) != NULL) {
		memset(known, -1, n);
		run->sole_source = known;
	}
	if (known != NULL && known[at] >= 0)
		return known[at];
	sole = steps_each_owner_pair(run->plan, sole_source_pair, &s, &err) ==
	               0 &&
	       s.n == 1;
	if (known != NULL)
		known[at] = (signed char)sole;
	return sole;
}

/* Whether SRC has a unique index on the columns of U of DST (by name, in
 * any order). */
static int
movers_source_unique(const struct rs_table_def *src,
                     const struct rs_table_def *dst, const struct rs_unique *u)
{
	for (int i = 0; i < src->n_uniques; i++) {
		const struct rs_unique *s = &src->uniques[i];
		int all = s->n_columns == u->n_columns;

		for (int c = 0; all && c < u->n_columns; c++) {
			int found = 0;

			for (int d = 0; d < s->n_columns && !found; d++)
				found = strcmp(src->columns[s->columns[d]].name,
				               dst->columns[u->columns[c]]
				                       .name) == 0;
			all = found;
		}
		if (all)
			return 1;
	}
	return 0;
}

/* Before ROWS of SRC are written to DST (table index TABLE of SHARD) on
 * TARGET, delete the rows there that hold one of their values of a unique
 * index other than the primary key (NULL values clash with nothing).
 * Every row movers_send writes to is a copy, made before publish: a
 * split's target, found empty by preflight, or a replica the run made.
 * The copy reads its chunks at different moments and catch-up replays
 * the log a batch at a time, so a row there can be a stale copy of a row
 * whose source has since given the value up to another moving row; its
 * change is in the log, and catch-up copies it again.  That is only
 * certain when the source holds the same unique index and is the only
 * one that sends rows to DST: rows of two sources may hold one value
 * legitimately, and the write must then fail as it always has, before
 * the fence, naming the value.  So this is done on exactly those indexes
 * (a replica the run made, TABLE -1, has its primary alone).  Without it
 * such a write fails on every resume (on MariaDB, whose upsert updates the
 * clashing row instead, a row goes missing).  Rows of ROWS already there
 * are deleted too, and come back with the write. */
static int
movers_make_room(struct rs_run *run, struct rs_backend *target,
                 const struct rs_table_def *src, const struct rs_table_def *dst,
                 int shard, int table, const struct rs_rows *rows,
                 struct rs_err *err)
{
	int rc = 0, sole = -1;

	for (int u = 0; rc == 0 && u < dst->n_uniques; u++) {
		const struct rs_unique *unique = &dst->uniques[u];
		int width = unique->n_columns, m = 0;
		struct rs_table_def match = *dst;
		struct rs_value *keys;

		if (!movers_source_unique(src, dst, unique))
			continue;
		if (sole < 0)
			sole = table < 0 ||
			       steps_sole_source(run, shard, table);
		if (!sole)
			break;
		keys = malloc(sizeof(*keys) *
		              ((size_t)rows->n_rows * (size_t)width + 1));
		if (keys == NULL)
			return rs_err_set(err, RS_ENOMEM, "out of memory");
		for (int r = 0; r < rows->n_rows; r++) {
			const struct rs_value *row =
				&rows->values[(size_t)r * (size_t)rows->n_cols];
			int null = 0;

			for (int c = 0; c < width; c++) {
				keys[(size_t)m * (size_t)width + (size_t)c] =
					row[unique->columns[c]];
				/* movers_convert sets every value of a batch
				 * (the analyzer does not follow it there). */
				// NOLINTNEXTLINE(clang-analyzer-core.UndefinedBinaryOperatorResult)
				null |= row[unique->columns[c]].text == NULL;
			}
			m += !null;
		}
		match.pk = unique->columns;
		match.n_pk = width;
		if (m > 0) {
			struct rs_rows del = {m, width, keys};

			rc = await_delete(&run->loop, target, &match, &del,
			                  err);
		}
		free(keys);
	}
	return rc;
}

/* A load left in flight behind a walk (walk_defer): the converted rows
 * stay here until it is in. */
struct movers_tail {
	struct rs_run *run;
	struct rs_backend *target;
	const struct rs_table_def *dst;
	struct movers_batch batch;
	struct rs_rows rows;
	struct await_waiter w;
};

static int
movers_tail_finish(void *ctx, struct rs_err *err)
{
	struct movers_tail *t = ctx;
	int rc = await_load_finish(&t->w, err);

	if (rc != 0 && (backend_load_conflict(err) || movers_deadlocked(err)))
		rc = await_upsert(&t->run->loop, t->target, t->dst, &t->rows,
		                  err);
	return rc;
}

static void
movers_tail_release(void *ctx)
{
	struct movers_tail *t = ctx;

	movers_batch_free(&t->batch);
	free(t);
}

/* The connection a write of a walk's chunk (BEHIND; NULL: not a walk's)
 * into DST on SHARD goes on, into *OUT, and whether it may go in beside
 * the walk's write in flight on the other (*BESIDE).  A copy's load
 * (FRESH) goes on the stream's connection to the shard (engine_shard) for
 * even chunks and on its second one (engine_second) for odd ones, where
 * the engine takes two loads into one table at once
 * (RS_CAP_CONCURRENT_LOADS): the target then starts a chunk's load as
 * soon as it ends one, and loads one while the other waits for its rows.
 * A million-row copy to PostgreSQL on a 2-core machine: 2.50 s instead of
 * 2.77 (median of 5), the machine 89% busy instead of 76%, the target
 * spending 8% more CPU time.  Not beside another: a table with unique
 * indexes besides its key (movers_make_room must see every row written
 * before), a write into the shard walked, any other write.  Returns 0 or
 * the error of connecting. */
static int
movers_target(struct rs_run *run, const struct rs_walk *behind, int shard,
              int fresh, const struct rs_table_def *dst,
              struct rs_backend **out, int *beside, struct rs_err *err)
{
	struct rs_backend *second = NULL;
	int rc = engine_shard(run, shard, out, err);

	*beside = rc == 0 && behind != NULL && fresh &&
	          shard != behind->shard && dst->n_uniques == 0 &&
	          backend_supports(*out, RS_CAP_CONCURRENT_LOADS);
	if (!*beside)
		return rc;
	rc = engine_second(run, shard, &second, err);
	*beside = rc == 0 && second != NULL;
	if (*beside && behind->number % 2 == 1)
		*out = second;
	return rc;
}

int
movers_send(struct rs_run *run, struct rs_backend *src,
            const struct rs_table_def *src_def, const struct rs_rowbuf *rows,
            const int *idx, int n, int shard, int table, const char *physical,
            int fresh, struct rs_walk *behind, struct rs_err *err)
{
	struct movers_tail *t = calloc(1, sizeof(*t));
	int beside = 0, rc;

	if (t == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	if (n == 0) {
		free(t);
		return 0;
	}
	t->run = run;
	rc = engine_table(run, shard, physical, &t->dst, err);
	if (rc == 0)
		rc = movers_target(run, behind, shard, fresh, t->dst,
		                   &t->target, &beside, err);
	if (rc == 0)
		rc = movers_convert(src, src_def, rows, idx, n, t->dst,
		                    &t->batch, err);
	/* The walk's earlier writes go in before this one is sent (but the
	 * one on the other connection, when it may go beside it). */
	if (rc == 0 && behind != NULL)
		rc = beside ? walk_settle_for(behind, t->target, err)
		            : walk_settle(behind, err);
	if (rc == 0)
		rc = steps_wait_downstream(run, t->target, shard, "the copy",
		                           err);
	if (rc == 0) {
		t->rows =
			(struct rs_rows){n, t->dst->n_columns, t->batch.values};
		rc = movers_make_room(run, t->target, src_def, t->dst, shard,
		                      table, &t->rows, err);
	}
	if (rc == 0 && behind != NULL && fresh) {
		rc = await_load_start(&run->loop, t->target, t->dst, &t->rows,
		                      &t->w, err);
		if (rc == 0 || backend_load_conflict(err)) {
			struct walk_tail tail = {t->target, movers_tail_finish,
			                         movers_tail_release, t};

			streams_throttle(run, n);
			return walk_defer(behind, &tail, err);
		}
	} else if (rc == 0) {
		rc = movers_write(run, t->target, t->dst, &t->rows, fresh, err);
	}
	movers_tail_release(t);
	if (rc == 0)
		streams_throttle(run, n);
	return rc;
}

int
movers_delete(struct rs_run *run, const struct rs_rowbuf *rows, int at,
              const int *idx, int n, int shard, const char *physical,
              const char *key, struct rs_err *err)
{
	const struct rs_table_def *dst;
	struct rs_table_def match;
	struct rs_backend *target;
	struct rs_value *keys = NULL;
	int *pk = NULL, width, rc;

	if (n == 0)
		return 0;
	rc = engine_shard(run, shard, &target, err);
	if (rc == 0)
		rc = engine_table(run, shard, physical, &dst, err);
	if (rc != 0)
		return rc;
	/* The rows to delete are matched on the key columns and, when it
	 * is not one of them, the shard key: a row that has come back with
	 * another shard key (copied there from elsewhere) stays. */
	match = *dst;
	pk = malloc(sizeof(int) * (size_t)(dst->n_pk + 1));
	if (pk == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	memcpy(pk, dst->pk, sizeof(int) * (size_t)dst->n_pk);
	match.pk = pk;
	if (key != NULL) {
		int k = steps_column(dst, key), in_pk = 0;

		for (int i = 0; i < dst->n_pk; i++)
			in_pk |= dst->pk[i] == k;
		if (k < 0)
			rc = backend_fail(target, err, RS_ESCHEMA,
			                  "table %s has no column %s", physical,
			                  key);
		else if (!in_pk)
			pk[match.n_pk++] = k;
	}
	width = match.n_pk;
	if (rc == 0)
		keys = malloc(sizeof(*keys) * ((size_t)n * (size_t)width + 1));
	if (rc == 0 && keys == NULL)
		rc = rs_err_set(err, RS_ENOMEM, "out of memory");
	for (int r = 0; rc == 0 && r < n; r++)
		memcpy(&keys[(size_t)r * (size_t)width],
		       rowbuf_row(rows, idx[r]) + at,
		       sizeof(*keys) * (size_t)width);
	if (rc == 0) {
		struct rs_rows del = {n, width, keys};

		rc = await_delete(&run->loop, target, &match, &del, err);
	}
	free(keys);
	free(pk);
	return rc;
}
