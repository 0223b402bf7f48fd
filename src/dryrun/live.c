/*
 * The live dry-run: shard keys streamed from every source shard at once.
 *
 * One stream per (source shard, table, slot table index), each with its own
 * connection, at most options.parallel running at a time on one libuv loop.
 * A stream connects, describes its table (finding the primary key and the
 * shard key column), then reads the shard key in batches of
 * options.batch_rows, asking for the next batch before hashing the current
 * one: memory stays bounded by batch_rows × parallel whatever the table
 * sizes.  Nothing is written.  Where the engine has the unordered snapshot
 * scan (RS_CAP_SCAN: PostgreSQL) only the shard key column is read,
 * in no particular order (a sequential scan in one snapshot); elsewhere
 * the primary key and the shard key are read in key order with keyset
 * pagination (read_batch).
 *
 * The first failure stops new streams; running ones finish their current
 * call and close.  Progress (rows read of the catalogs' estimates, or of
 * an exact count where counting is cheap (RS_CAP_CHEAP_COUNT: SQLite),
 * rate, time left) goes through common/progress.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "backend/backend.h"
#include "common/progress.h"
#include "dryrun/dryrun.h"
#include "engine/engine.h"
#include "engine/walk.h"

struct live;

struct live_stream {
	struct live *live;
	int shard;             /* plan shard index */
	int table;             /* plan table index */
	struct rs_owner where; /* shard and slot table index, for misplaced */
	char physical[RS_PLAN_MAX_NAME + 1]; /* the table's name on the shard */
	struct rs_backend *backend;
	struct rs_table_def *def;
	int key_column; /* index into def->columns */
	struct rs_read_request request;
	struct rs_value *after; /* last key read: n_pk values in after_buf */
	char *after_buf;
	uint64_t rows;
	int started, done;
	int scan;     /* reading with scan_next, not read_batch */
	int scanning; /* the scan began and has not ended or failed */
	int reading;  /* a read_batch or scan_next is in flight */
	int closing;  /* backend_close was called */
};

struct live {
	uv_loop_t loop;
	const struct rs_plan *plan;
	const struct rs_dryrun_options *options;
	struct rs_dryrun *dr;
	struct live_stream *streams;
	int n_streams;
	int next;    /* next stream to start */
	int running; /* streams started and not yet closed */
	int failed;
	struct rs_err err; /* the first failure */
	struct rs_progress progress;
	const char **keys; /* per batch, reused: point into key_text */
	size_t *lens;
	struct rs_canon_buf key_text; /* the keys of the batch being hashed */
};

static void live_start_next(struct live *live);

static void
live_fail(struct live *live, const struct rs_err *err)
{
	if (!live->failed) {
		live->failed = 1;
		live->err = *err;
	}
}

static void
live_stream_closed(struct rs_backend *backend, int status,
                   const struct rs_err *err, void *arg)
{
	struct live_stream *s = arg;

	(void)backend;
	(void)status;
	(void)err;
	s->backend = NULL;
	s->done = 1;
	s->live->running--;
	live_start_next(s->live);
}

static void
live_stream_finish(struct live_stream *s)
{
	s->closing = 1;
	backend_table_free(s->def);
	s->def = NULL;
	free(s->after);
	s->after = NULL;
	free(s->after_buf);
	s->after_buf = NULL;
	backend_close(s->backend, live_stream_closed, s);
}

/* Remember the last row's primary key for the next batch.  Returns 0 or
 * RS_ENOMEM. */
static int
live_stream_remember(struct live_stream *s, const struct rs_rows *rows)
{
	const struct rs_value *last =
		rows->values +
		(size_t)(rows->n_rows - 1) * (size_t)rows->n_cols;
	int n_pk = s->def->n_pk;
	size_t total = 0, at = 0;

	for (int i = 0; i < n_pk; i++)
		total += last[i].len + 1;
	free(s->after_buf);
	s->after_buf = malloc(total + 1); /* + 1: never malloc(0) */
	if (s->after == NULL)
		s->after = calloc((size_t)n_pk, sizeof(*s->after));
	if (s->after_buf == NULL || s->after == NULL)
		return RS_ENOMEM;
	for (int i = 0; i < n_pk; i++) {
		if (last[i].text == NULL) {
			s->after[i].text = NULL;
			s->after[i].len = 0;
			continue;
		}
		memcpy(s->after_buf + at, last[i].text, last[i].len);
		s->after_buf[at + last[i].len] = '\0';
		s->after[i].text = s->after_buf + at;
		s->after[i].len = last[i].len;
		at += last[i].len + 1;
	}
	s->request.after = s->after;
	return 0;
}

static void live_stream_read(struct live_stream *s);

static void
live_stream_scan_ended(struct rs_backend *backend, int status,
                       const struct rs_err *err, void *arg)
{
	struct live_stream *s = arg;

	(void)backend;
	if (status != 0)
		live_fail(s->live, err);
	live_stream_finish(s);
}

/* The stream read its last batch: end the scan (if any), then close. */
static void
live_stream_end(struct live_stream *s)
{
	struct rs_err err = {0};

	if (s->scanning && !s->live->failed) {
		s->scanning = 0;
		if (backend_scan_end(s->backend, live_stream_scan_ended, s,
		                     &err) == 0)
			return;
		live_fail(s->live, &err);
	}
	live_stream_finish(s);
}

/* Copy the shard keys of ROWS into the loop's key buffer, in canonical
 * form as the run hashes them (walk_key_canonical), so that the next
 * batch can be asked for before these are hashed.  Returns 0, or RS_EKEY
 * (a NULL shard key, one with no canonical form) / RS_ENOMEM with ERR
 * filled. */
static int
live_copy_keys(struct live_stream *s, const struct rs_rows *rows,
               struct rs_err *err)
{
	struct live *live = s->live;
	int n_pk = s->scan ? 0 : s->def->n_pk; /* the key's column in ROWS */
	struct rs_canon_buf *canon = &live->key_text;
	size_t at = 0;
	int rc = 0;

	canonical_buf_clear(canon);
	for (int r = 0; r < rows->n_rows && rc == 0; r++) {
		const struct rs_value *key =
			&rows->values[(size_t)r * (size_t)rows->n_cols +
		                      (size_t)n_pk];
		size_t start = SIZE_MAX;

		if (key->text == NULL)
			rc = backend_fail(s->backend, err, RS_EKEY,
			                  "table %s has a row whose shard key "
			                  "%s is NULL; such a row has no owner",
			                  s->physical,
			                  live->plan->tables[s->table].key);
		else
			rc = walk_key_canonical(s->backend, s->def,
			                        s->key_column, key, canon,
			                        &start, err);
		if (rc == 0 && start == SIZE_MAX) {
			start = canon->len;
			rc = canonical_buf_append(canon, key->text, key->len,
			                          err);
		}
		if (rc == 0)
			live->lens[r] = canon->len - start;
	}
	/* CANON stops moving once every key is in. */
	for (int r = 0; rc == 0 && r < rows->n_rows; r++) {
		live->keys[r] = canon->data + at;
		at += live->lens[r];
	}
	return rc;
}

/* A batch arrived: copy its keys, ask for the next batch at once (the
 * server works on it while this one is hashed), then hash these. */
static void
live_stream_rows(struct rs_backend *backend, int status,
                 const struct rs_err *err, const struct rs_rows *rows,
                 void *arg)
{
	struct live_stream *s = arg;
	struct live *live = s->live;
	struct rs_err local = {0};
	size_t bad = 0, n;
	int more;

	(void)backend;
	s->reading = 0;
	if (status != 0 || live->failed) {
		if (status != 0) {
			live_fail(live, err);
			s->scanning = 0; /* a failed scan_next ended it */
		}
		live_stream_finish(s);
		return;
	}
	n = (size_t)rows->n_rows;
	status = live_copy_keys(s, rows, &local);
	if (status == 0 && n > 0 && !s->scan)
		status = live_stream_remember(s, rows);
	if (status != 0) {
		if (local.code == 0)
			rs_err_set(&local, status, "out of memory");
		live_fail(live, &local);
		live_stream_finish(s);
		return;
	}
	/* A scan batch may be short before the end; only empty ends it. */
	more = s->scan ? n > 0 : rows->n_rows == s->request.limit;
	if (more)
		live_stream_read(s); /* ROWS is not used after this */
	status = dryrun_add_keys(live->dr, s->table, &s->where, live->keys,
	                         live->lens, n, &bad, &local);
	if (status == RS_EKEY) {
		char where[512];

		snprintf(where, sizeof(where), "shard %s, table %s",
		         live->plan->shards[s->shard].name, s->physical);
		dryrun_key_error(live->plan, where, live->keys[bad],
		                 live->lens[bad], &local);
	}
	if (status != 0)
		live_fail(live, &local);
	s->rows += n;
	progress_add(&live->progress, n);
	/* A read in flight finishes the stream from its own callback. */
	if (!s->reading && s->backend != NULL && !s->closing)
		live_stream_end(s);
}

static void
live_stream_read(struct live_stream *s)
{
	struct rs_err err = {0};

	int rc = s->scan ? backend_scan_next(s->backend, s->request.limit,
	                                     live_stream_rows, s, &err)
	                 : backend_read_batch(s->backend, &s->request,
	                                      live_stream_rows, s, &err);

	if (rc != 0) {
		live_fail(s->live, &err);
		live_stream_finish(s);
		return;
	}
	s->reading = 1;
}

/* The snapshot scan began: read its first batch. */
static void
live_stream_scan_begun(struct rs_backend *backend, int status,
                       const struct rs_err *err, void *arg)
{
	struct live_stream *s = arg;

	(void)backend;
	if (status != 0 || s->live->failed) {
		if (status != 0)
			live_fail(s->live, err);
		live_stream_finish(s);
		return;
	}
	s->scanning = 1;
	live_stream_read(s);
}

static void live_stream_counted(struct rs_backend *backend, int status,
                                const struct rs_err *err, int64_t rows,
                                void *arg);

static void
live_stream_described(struct rs_backend *backend, int status,
                      const struct rs_err *err, struct rs_table_def *def,
                      void *arg)
{
	struct live_stream *s = arg;
	struct live *live = s->live;
	const char *key = live->plan->tables[s->table].key;
	struct rs_err local = {0};

	if (status != 0 || live->failed) {
		if (status != 0)
			live_fail(live, err);
		backend_table_free(def);
		live_stream_finish(s);
		return;
	}
	s->def = def;
	s->key_column = -1;
	for (int i = 0; i < def->n_columns; i++)
		if (strcmp(def->columns[i].name, key) == 0)
			s->key_column = i;
	if (s->key_column < 0) {
		backend_fail(backend, &local, RS_ESCHEMA,
		             "table %s has no column %s, the plan's shard key "
		             "for it; fix key in the plan or the table",
		             s->physical, key);
		live_fail(live, &local);
		live_stream_finish(s);
		return;
	}
	if (def->estimated_rows < 0 &&
	    backend_supports(backend, RS_CAP_CHEAP_COUNT)) {
		if (backend_count(backend, s->physical, live_stream_counted, s,
		                  &local) != 0) {
			live_fail(live, &local);
			live_stream_finish(s);
		}
		return;
	}
	live_stream_counted(backend, 0, NULL, def->estimated_rows, s);
}

/* The table's rows are known (ROWS; -1 not known): read them. */
static void
live_stream_counted(struct rs_backend *backend, int status,
                    const struct rs_err *err, int64_t rows, void *arg)
{
	struct live_stream *s = arg;
	struct live *live = s->live;
	struct rs_err local = {0};

	if (status != 0 || live->failed) {
		if (status != 0)
			live_fail(live, err);
		live_stream_finish(s);
		return;
	}
	if (rows > 0)
		progress_expect(&live->progress, (uint64_t)rows);
	s->request.table = s->def;
	s->request.columns = &s->key_column;
	s->request.n_columns = 1;
	s->request.after = NULL;
	s->request.limit = live->plan->options.batch_rows;
	if (backend_supports(backend, RS_CAP_SCAN)) {
		s->scan = 1;
		if (backend_scan_begin(backend, s->def, &s->key_column, 1,
		                       live_stream_scan_begun, s,
		                       &local) != 0) {
			live_fail(live, &local);
			live_stream_finish(s);
		}
		return;
	}
	live_stream_read(s);
}

static void
live_stream_connected(struct rs_backend *backend, int status,
                      const struct rs_err *err, void *arg)
{
	struct live_stream *s = arg;
	struct rs_err local = {0};

	if (status != 0 || s->live->failed) {
		if (status != 0)
			live_fail(s->live, err);
		live_stream_finish(s);
		return;
	}
	if (backend_describe(backend, s->physical, live_stream_described, s,
	                     &local) != 0) {
		live_fail(s->live, &local);
		live_stream_finish(s);
	}
}

/* Start streams until options.parallel run, or none is left. */
static void
live_start_next(struct live *live)
{
	while (!live->failed && live->next < live->n_streams &&
	       live->running < live->plan->options.parallel) {
		struct live_stream *s = &live->streams[live->next++];
		struct rs_backend_config config =
			engine_shard_config(live->plan, s->shard);
		struct rs_err err = {0};

		s->started = 1;
		if (backend_new(&live->loop, &config, &s->backend, &err) != 0) {
			live_fail(live, &err);
			s->done = 1;
			break;
		}
		live->running++;
		if (backend_connect(s->backend, live_stream_connected, s,
		                    &err) != 0) {
			live_fail(live, &err);
			live_stream_finish(s);
		}
	}
}

/* One stream per source shard × table (× slot table index). */
static int
live_plan_streams(struct live *live, struct rs_err *err)
{
	const struct rs_plan *plan = live->plan;
	const struct rs_map *from = plan->from;
	int tables = map_has_tables(from) ? map_def(from)->tables_per_db : 1;
	int shards[RS_PLAN_MAX_SHARDS]; /* plan_load allows no more */
	int n_shards = stats_map_shards(from, shards, RS_PLAN_MAX_SHARDS);
	int only = live->options->table != NULL
	                   ? plan_table_index(plan, live->options->table)
	                   : -1;
	int k = 0;

	live->streams = calloc((size_t)n_shards * (size_t)plan->n_tables *
	                               (size_t)tables,
	                       sizeof(*live->streams));
	if (live->streams == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	for (int t = 0; t < plan->n_tables; t++) {
		if (only >= 0 && t != only)
			continue;
		for (int i = 0; i < n_shards; i++)
			for (int x = 0; x < tables; x++) {
				struct live_stream *s = &live->streams[k++];

				s->live = live;
				s->shard = shards[i];
				s->table = t;
				s->where.shard = shards[i];
				s->where.table = x;
				map_table_name(from, plan->tables[t].name, x,
				               s->physical,
				               sizeof(s->physical));
			}
	}
	live->n_streams = k;
	return 0;
}

int
dryrun_run_live(const struct rs_plan *plan,
                const struct rs_dryrun_options *options, FILE *movers_out,
                FILE *summary_out, struct rs_err *err)
{
	struct live live = {0};
	size_t batch = (size_t)plan->options.batch_rows;
	int rc;

	live.plan = plan;
	live.options = options;
	rc = dryrun_begin(plan, options, movers_out, &live.dr, err);
	if (rc != 0)
		return rc;
	live.keys = malloc(batch * sizeof(*live.keys));
	live.lens = malloc(batch * sizeof(*live.lens));
	if (live.keys == NULL || live.lens == NULL) {
		rc = rs_err_set(err, RS_ENOMEM, "out of memory");
		goto out;
	}
	rc = live_plan_streams(&live, err);
	if (rc != 0)
		goto out;
	rc = uv_loop_init(&live.loop);
	if (rc != 0) {
		rc = rs_err_set(err, RS_EINTERNAL, "uv_loop_init: %s",
		                uv_strerror(rc));
		goto out;
	}
	live.progress.quiet = !options->progress;
	progress_start(&live.progress, "dry-run", 0);
	live_start_next(&live);
	uv_run(&live.loop, UV_RUN_DEFAULT);
	if (uv_loop_close(&live.loop) != 0 && !live.failed) {
		rs_err_set(&live.err, RS_EINTERNAL,
		           "handles left open on the loop (a bug)");
		live.failed = 1;
	}
	progress_finish(&live.progress);
	if (live.failed) {
		rc = live.err.code != 0 ? live.err.code : RS_EINTERNAL;
		if (err != NULL)
			*err = live.err;
		goto out;
	}
	rc = dryrun_finish(live.dr, summary_out, err);
out:
	free(live.keys);
	free(live.lens);
	canonical_buf_free(&live.key_text);
	free(live.streams);
	dryrun_free(live.dr);
	return rc;
}
