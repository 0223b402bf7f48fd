/*
 * The engine-neutral half of the backend interface: choosing the engine
 * from the URL, resolving the password, checking that one operation runs
 * at a time, the operation bound, error messages that name the shard with
 * its masked URL, and freeing table descriptions.  The engine halves are pg.c,
 * mysql.c and sqlite.c.
 */
#include "backend/backend.h"

#include "backend/backend_engine.h"

#include <errno.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#undef backend_fail /* the analyzer's view of it, in the header */

int
backend_fail(const struct rs_backend *backend, struct rs_err *err, int code,
             const char *fmt, ...)
{
	char detail[768];
	char *masked;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	masked = url_mask_text(detail);
	rs_err_set(err, code, "shard %s (%s): %s", backend->shard,
	           backend->url.masked,
	           masked != NULL ? masked : "(no memory)");
	free(masked);
	return code;
}

int
backend_fail_deadline(const struct rs_backend *backend, struct rs_err *err,
                      const char *what, int ms, const char *afterwards)
{
	char bound[32];

	if (ms % 1000 == 0)
		snprintf(bound, sizeof(bound), "%d s", ms / 1000);
	else
		snprintf(bound, sizeof(bound), "%d ms", ms);
	if (ms == backend->op_timeout_plan_ms)
		return backend_fail(
			backend, err, RS_ECONNECT,
			"%s: did not finish within %s; %s (the bound is "
			"options.operation_timeout_seconds: raise "
			"it if the shard is only slow)",
			what, bound, afterwards);
	return backend_fail(backend, err, RS_ECONNECT,
	                    "%s: did not finish within %s; %s (the bound this "
	                    "step sets for itself)",
	                    what, bound, afterwards);
}

void
backend_set_op_timeout(struct rs_backend *backend, int ms)
{
	backend->op_timeout_ms = ms > 0 ? ms : backend->op_timeout_plan_ms;
}

static void
backend_free(struct rs_backend *backend)
{
	if (backend->password != NULL) {
		/* Not memset: it may be optimised away. */
		volatile char *p = backend->password;

		while (*p != '\0')
			*p++ = '\0';
		free(backend->password);
	}
	url_clear(&backend->url);
	canonical_buf_free(&backend->read.text);
	free(backend->read.values);
	free(backend->read.offsets);
	free(backend->read.columns);
	free(backend->read.from);
	free(backend->shard);
	free(backend);
}

/* The operations of ENGINE. */
static const struct rs_backend_ops *
backend_ops_of(enum rs_engine engine)
{
	switch (engine) {
	case RS_ENGINE_POSTGRES:
		return &backend_pg_ops;
	case RS_ENGINE_MYSQL:
		return &backend_mysql_ops;
	case RS_ENGINE_SQLITE:
		break;
	}
	return &backend_sqlite_ops;
}

int
backend_new(uv_loop_t *loop, const struct rs_backend_config *config,
            struct rs_backend **out, struct rs_err *err)
{
	struct rs_backend *backend = calloc(1, sizeof(*backend));
	const char *password = NULL;
	int rc;

	*out = NULL;
	if (backend == NULL ||
	    (backend->shard = strdup(config->shard)) == NULL) {
		free(backend);
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	}
	backend->loop = loop;
	backend->connect_timeout_ms = config->connect_timeout_ms > 0
	                                      ? config->connect_timeout_ms
	                                      : 10000;
	backend->op_timeout_plan_ms = config->op_timeout_ms > 0
	                                      ? config->op_timeout_ms
	                                      : BACKEND_OP_TIMEOUT_MS;
	backend->op_timeout_ms = backend->op_timeout_plan_ms;
	rc = url_parse(config->url, config->base_dir, &backend->url, err);
	if (rc != 0) {
		char message[sizeof(err->message)];

		if (err != NULL) {
			snprintf(message, sizeof(message), "%s", err->message);
			rs_err_set(err, rc, "shard %s: %s", config->shard,
			           message);
		}
		backend_free(backend);
		return rc;
	}
	rc = url_password(&backend->url, config->password_env, &password, err);
	if (rc != 0) {
		backend_free(backend);
		return rc;
	}
	if (password != NULL &&
	    (backend->password = strdup(password)) == NULL) {
		backend_free(backend);
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	}
	backend->ops = backend_ops_of(backend->url.engine);
	*out = backend;
	return 0;
}

/* Whether OPS's server computes the point of HASH in SQL. */
static int
backend_ops_point_sql(const struct rs_backend_ops *ops, enum rs_hash hash)
{
	return (ops->point_hashes >> hash & 1u) != 0;
}

int
backend_engine_fences_rows(enum rs_engine engine, enum rs_hash hash)
{
	const struct rs_backend_ops *ops = backend_ops_of(engine);

	return ops->fence != NULL && ops->fence_rows &&
	       backend_ops_point_sql(ops, hash);
}

/* Refuse a second concurrent operation: engines drive one at a time. */
static int
backend_enter(struct rs_backend *backend, struct rs_err *err)
{
	if (backend->busy)
		return backend_fail(backend, err, RS_EBUSY,
		                    "an operation is already running on this "
		                    "connection (a bug in the caller)");
	return 0;
}

int
backend_connect(struct rs_backend *backend, rs_backend_cb cb, void *arg,
                struct rs_err *err)
{
	int rc = backend_enter(backend, err);

	return rc != 0 ? rc : backend->ops->connect(backend, cb, arg, err);
}

int
backend_describe(struct rs_backend *backend, const char *table,
                 rs_describe_cb cb, void *arg, struct rs_err *err)
{
	int rc = backend_enter(backend, err);

	return rc != 0 ? rc
	               : backend->ops->describe(backend, table, cb, arg, err);
}

/* Whether value I of a batch of N_COLS columns is a key value that
 * backend_read_on_rows converts. */
static int
backend_key_converted(const struct rs_table_def *t, const struct rs_value *v,
                      size_t i, int n_cols)
{
	int k = (int)(i % (size_t)n_cols);

	return k < t->n_pk && v[i].text != NULL &&
	       !canonical_kind_as_is(t->columns[t->pk[k]].kind);
}

/* Make BACKEND's reshaped batch room for N values.  0 or RS_ENOMEM. */
static int
backend_read_room(struct rs_backend *backend, size_t n)
{
	struct rs_value *v;
	size_t *o;

	if (n <= backend->read.cap)
		return 0;
	v = realloc(backend->read.values, n * sizeof(*v));
	if (v == NULL)
		return RS_ENOMEM;
	backend->read.values = v;
	o = realloc(backend->read.offsets, n * sizeof(*o));
	if (o == NULL)
		return RS_ENOMEM;
	backend->read.offsets = o;
	backend->read.cap = n;
	return 0;
}

/* The engine's batch ROWS as the caller asked for it, then the caller's
 * callback: each key value read once but asked for twice (a key column
 * among the columns) handed back at both places, and the key columns
 * (the first n_pk of each row) turned canonical into BACKEND's text
 * buffer.  A key that has no canonical form fails the read (RS_EKEY). */
static void
backend_read_on_rows(struct rs_backend *backend, int status,
                     const struct rs_err *err, const struct rs_rows *rows,
                     void *arg)
{
	const struct rs_table_def *t = backend->read.table;
	rs_rows_cb cb = backend->read.cb;
	int width = backend->read.width;
	size_t n = rows != NULL ? (size_t)rows->n_rows * (size_t)width : 0;
	struct rs_value *v;
	struct rs_rows out;
	struct rs_err local = {0};
	int rc = 0;

	(void)arg;
	arg = backend->read.arg;
	backend->read.cb = NULL;
	if (status != 0 || rows == NULL) {
		cb(backend, status, err, rows, arg);
		return;
	}
	out = *rows;
	out.n_cols = width;
	if (rows->n_rows == 0) {
		cb(backend, 0, NULL, &out, arg);
		return;
	}
	if (rows->n_cols != t->n_pk + backend->read.n_columns) {
		rc = backend_fail(backend, &local, RS_EINTERNAL,
		                  "table %s: a read returned %d columns, not "
		                  "%d (a bug)",
		                  t->name, rows->n_cols,
		                  t->n_pk + backend->read.n_columns);
		cb(backend, rc, &local, NULL, arg);
		return;
	}
	if (backend_read_room(backend, n) != 0) {
		rs_err_set(&local, RS_ENOMEM, "out of memory");
		cb(backend, RS_ENOMEM, &local, NULL, arg);
		return;
	}
	v = backend->read.values;
	if (width == rows->n_cols)
		memcpy(v, rows->values, n * sizeof(*v));
	else
		for (int r = 0; r < rows->n_rows; r++) {
			const struct rs_value *in =
				rows->values + (size_t)r * (size_t)rows->n_cols;
			struct rs_value *to = v + (size_t)r * (size_t)width;

			for (int j = 0; j < width; j++)
				to[j] = in[backend->read.from[j]];
		}
	canonical_buf_clear(&backend->read.text);
	for (size_t i = 0; backend->read.convert && i < n && rc == 0; i++) {
		const struct rs_column *c;
		size_t start = backend->read.text.len;

		if (!backend_key_converted(t, v, i, width))
			continue;
		c = &t->columns[t->pk[i % (size_t)width]];
		rc = canonical_value(c->kind, backend_canon_src(backend),
		                     v[i].text, v[i].len, &backend->read.text,
		                     &local);
		if (rc == RS_EVALUE) {
			char why[sizeof(local.message)];

			snprintf(why, sizeof(why), "%s", local.message);
			rc = backend_fail(backend, &local, RS_EKEY,
			                  "table %s: primary key column %s: %s",
			                  t->name, c->name, why);
		}
		backend->read.offsets[i] = start;
		v[i].len = backend->read.text.len - start;
	}
	if (rc != 0) {
		cb(backend, rc, &local, NULL, arg);
		return;
	}
	/* The texts' buffer stops moving once every key is in. */
	for (size_t i = 0; backend->read.convert && i < n; i++)
		if (backend_key_converted(t, v, i, width))
			v[i].text = backend->read.text.data +
			            backend->read.offsets[i];
	out.values = v;
	cb(backend, 0, NULL, &out, arg);
}

/* An optional operation the engine lacks. */
static int
backend_unsupported(const struct rs_backend *backend, const char *what,
                    struct rs_err *err)
{
	return backend_fail(backend, err, RS_EUSAGE,
	                    "%s is not supported on %s shards in this version",
	                    what, backend->ops->engine);
}

/* Whether the key columns of T come from BACKEND's reads in another form
 * than canonical, so that backend_read_on_rows must convert them. */
static int
backend_keys_need_converting(const struct rs_backend *backend,
                             const struct rs_table_def *t)
{
	int convert = 0;

	for (int k = 0;
	     !backend->ops->keys_canonical && t != NULL && k < t->n_pk; k++)
		convert |= !canonical_kind_as_is(t->columns[t->pk[k]].kind);
	return convert;
}

/* Plan a read of T's key columns then COLUMNS, for CB(ARG): which columns
 * the engine reads, and whether backend_read_on_rows must reshape what it
 * returns.  A caller that wants every column (a copy, a verify) asks for
 * the key columns twice; a key column whose text is the same either way
 * (canonical_kind_as_is) is read once and handed back at both places.
 * A million-row copy's source then sends a million fewer values (its
 * server's CPU time 0.70 s -> 0.57 s, bench/split).  Returns 1 (the
 * engine reads BACKEND->read.columns, and backend_read_on_rows hands its
 * rows to CB), 0 (the engine reads COLUMNS, its rows straight to CB) or
 * RS_ENOMEM. */
static int
backend_read_plan(struct rs_backend *backend, const struct rs_table_def *t,
                  const int *columns, int n_columns, rs_rows_cb cb, void *arg)
{
	int width = t->n_pk + n_columns, n = 0;

	if (width > backend->read.cap_columns) {
		int *c = realloc(backend->read.columns,
		                 (size_t)width * sizeof(*c));

		if (c != NULL)
			backend->read.columns = c;
		int *f = c != NULL ? realloc(backend->read.from,
		                             (size_t)width * sizeof(*f))
		                   : NULL;
		if (f == NULL)
			return RS_ENOMEM;
		backend->read.from = f;
		backend->read.cap_columns = width;
	}
	for (int k = 0; k < t->n_pk; k++)
		backend->read.from[k] = k;
	for (int i = 0; i < n_columns; i++) {
		int key = -1;

		for (int k = 0; k < t->n_pk; k++)
			if (t->pk[k] == columns[i] &&
			    canonical_kind_as_is(t->columns[columns[i]].kind))
				key = k;
		if (key < 0) {
			backend->read.columns[n] = columns[i];
			key = t->n_pk + n++;
		}
		backend->read.from[t->n_pk + i] = key;
	}
	backend->read.convert = backend_keys_need_converting(backend, t);
	if (!backend->read.convert && n == n_columns)
		return 0;
	backend->read.cb = cb;
	backend->read.arg = arg;
	backend->read.table = t;
	backend->read.width = width;
	backend->read.n_columns = n;
	return 1;
}

int
backend_read_batch(struct rs_backend *backend,
                   const struct rs_read_request *request, rs_rows_cb cb,
                   void *arg, struct rs_err *err)
{
	const struct rs_table_def *t = request->table;
	struct rs_read_request *engine = &backend->read.batch;
	int rc = backend_enter(backend, err);

	if (rc != 0)
		return rc;
	/* A malformed request goes as it is, for the engine to refuse. */
	if (t != NULL && t->n_pk > 0 && request->n_columns >= 0 &&
	    (request->n_columns == 0 || request->columns != NULL))
		rc = backend_read_plan(backend, t, request->columns,
		                       request->n_columns, cb, arg);
	if (rc < 0)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	if (rc == 0)
		return backend->ops->read_batch(backend, request, cb, arg, err);
	*engine = *request;
	engine->columns =
		backend->read.n_columns > 0 ? backend->read.columns : NULL;
	engine->n_columns = backend->read.n_columns;
	rc = backend->ops->read_batch(backend, engine, backend_read_on_rows,
	                              NULL, err);
	if (rc != 0)
		backend->read.cb = NULL;
	return rc;
}

/* Check a read by key before any engine sees it: a table with a primary
 * key, keys of n_pk values a row, columns of the table.  Returns 0 or
 * RS_EINTERNAL (a bug in the caller) with ERR filled. */
static int
backend_check_keys_request(struct rs_backend *backend,
                           const struct rs_keys_request *request,
                           struct rs_err *err)
{
	const struct rs_table_def *t = request->table;
	const struct rs_rows *keys = request->keys;

	if (t == NULL || t->n_pk <= 0 || keys == NULL ||
	    keys->n_cols != t->n_pk || keys->n_rows < 0 ||
	    (keys->n_rows > 0 && keys->values == NULL) ||
	    request->n_columns < 0 ||
	    (request->n_columns > 0 && request->columns == NULL))
		return backend_fail(backend, err, RS_EINTERNAL,
		                    "malformed read by key (a bug in the "
		                    "caller)");
	for (int i = 0; i < request->n_columns; i++)
		if (request->columns[i] < 0 ||
		    request->columns[i] >= t->n_columns)
			return backend_fail(backend, err, RS_EINTERNAL,
			                    "read by key of column %d of table "
			                    "%s, which has %d (a bug in the "
			                    "caller)",
			                    request->columns[i], t->name,
			                    t->n_columns);
	return 0;
}

int
backend_read_keys(struct rs_backend *backend,
                  const struct rs_keys_request *request, rs_rows_cb cb,
                  void *arg, struct rs_err *err)
{
	const struct rs_table_def *t = request->table;
	struct rs_keys_request *engine = &backend->read.by_key;
	int rc = backend_enter(backend, err);

	if (rc == 0 && !backend_supports(backend, RS_CAP_CAPTURE))
		rc = backend_unsupported(backend, "reading rows by key", err);
	if (rc == 0)
		rc = backend_check_keys_request(backend, request, err);
	if (rc != 0)
		return rc;
	rc = backend_read_plan(backend, t, request->columns, request->n_columns,
	                       cb, arg);
	if (rc < 0)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	if (rc == 0)
		return backend->ops->read_keys(backend, request, cb, arg, err);
	*engine = *request;
	engine->columns =
		backend->read.n_columns > 0 ? backend->read.columns : NULL;
	engine->n_columns = backend->read.n_columns;
	rc = backend->ops->read_keys(backend, engine, backend_read_on_rows,
	                             NULL, err);
	if (rc != 0)
		backend->read.cb = NULL;
	return rc;
}

int
backend_capture(struct rs_backend *backend, const struct rs_table_def *table,
                int key_column, int on, rs_backend_cb cb, void *arg,
                struct rs_err *err)
{
	int rc = backend_enter(backend, err);

	if (rc == 0 && !backend_supports(backend, RS_CAP_CAPTURE))
		rc = backend_unsupported(backend, "change capture", err);
	if (rc == 0 &&
	    (table == NULL || key_column < 0 || key_column >= table->n_columns))
		rc = backend_fail(backend, err, RS_EINTERNAL,
		                  "change capture: bad shard key column (a bug "
		                  "in the caller)");
	return rc != 0 ? rc
	               : backend->ops->capture(backend, table, key_column, on,
	                                       cb, arg, err);
}

void
backend_change_log_name(const char *table, char *buf, size_t size)
{
	snprintf(buf, size, "reshard_chg_%s", table);
}

int
backend_exec(struct rs_backend *backend, const char *sql, rs_backend_cb cb,
             void *arg, struct rs_err *err)
{
	int rc = backend_enter(backend, err);

	return rc != 0 ? rc : backend->ops->exec(backend, sql, cb, arg, err);
}

int
backend_upsert(struct rs_backend *backend, const struct rs_table_def *table,
               const struct rs_rows *rows, rs_backend_cb cb, void *arg,
               struct rs_err *err)
{
	int rc = backend_enter(backend, err);

	return rc != 0 ? rc
	               : backend->ops->upsert(backend, table, rows, cb, arg,
	                                      err);
}

int
backend_load(struct rs_backend *backend, const struct rs_table_def *table,
             const struct rs_rows *rows, rs_backend_cb cb, void *arg,
             struct rs_err *err)
{
	int rc = backend_enter(backend, err);

	if (rc != 0)
		return rc;
	return backend->ops->load != NULL
	               ? backend->ops->load(backend, table, rows, cb, arg, err)
	               : backend->ops->upsert(backend, table, rows, cb, arg,
	                                      err);
}

int
backend_load_conflict(const struct rs_err *err)
{
	/* PostgreSQL's unique violation; MariaDB's integrity class, which
	 * its load also reports when the server takes no LOAD DATA LOCAL
	 * (my_load). */
	return err != NULL && err->code == RS_EQUERY &&
	       (strcmp(err->sqlstate, "23505") == 0 ||
	        strcmp(err->sqlstate, "23000") == 0);
}

int
backend_delete_keys(struct rs_backend *backend,
                    const struct rs_table_def *table,
                    const struct rs_rows *keys, rs_backend_cb cb, void *arg,
                    struct rs_err *err)
{
	int rc = backend_enter(backend, err);

	return rc != 0 ? rc
	               : backend->ops->delete_keys(backend, table, keys, cb,
	                                           arg, err);
}

int
backend_purge_keys(struct rs_backend *backend, const struct rs_table_def *table,
                   const struct rs_rows *keys, rs_backend_cb cb, void *arg,
                   struct rs_err *err)
{
	int rc = backend_enter(backend, err);

	if (rc != 0)
		return rc;
	return backend->ops->purge_keys != NULL
	               ? backend->ops->purge_keys(backend, table, keys, cb, arg,
	                                          err)
	               : backend->ops->delete_keys(backend, table, keys, cb,
	                                           arg, err);
}

int
backend_count(struct rs_backend *backend, const char *table, rs_count_cb cb,
              void *arg, struct rs_err *err)
{
	int rc = backend_enter(backend, err);

	if (rc == 0 && backend->ops->count == NULL)
		rc = backend_unsupported(backend, "counting rows", err);
	return rc != 0 ? rc : backend->ops->count(backend, table, cb, arg, err);
}

/* 0 when the server computes the point of HASH for the key of each of
 * the N TABLES (KINDS: their kinds), else RS_EUSAGE: the caller (a fence
 * of rows, the guard) should not have asked, and cannot WHAT them. */
static int
backend_points_computable(struct rs_backend *backend, const char *what,
                          const char *const *tables, int n, enum rs_hash hash,
                          const enum rs_col_kind *kinds, struct rs_err *err)
{
	for (int i = 0; i < n; i++)
		if (!backend_fence_rows_hash(backend, hash, kinds[i]))
			return backend_fail(backend, err, RS_EUSAGE,
			                    "cannot %s %s: the server cannot "
			                    "compute its key's point (a bug in "
			                    "the caller)",
			                    what, tables[i]);
	return 0;
}

int
backend_fence(struct rs_backend *backend, const char *const *tables,
              int n_tables, const char *message, int on,
              const struct rs_marker *marker, const struct rs_fence_rows *rows,
              rs_backend_cb cb, void *arg, struct rs_err *err)
{
	int rc = backend_enter(backend, err);

	if (rc == 0 && backend->ops->fence == NULL)
		rc = backend_unsupported(backend, "the write fence", err);
	if (rc == 0 && on && rows != NULL &&
	    !backend_supports(backend, RS_CAP_FENCE_ROWS))
		rc = backend_unsupported(backend,
		                         "a fence of the rows that move", err);
	if (rc == 0 && on && rows != NULL)
		rc = backend_points_computable(backend,
		                               "fence only the rows "
		                               "that move of",
		                               tables, n_tables, rows->hash,
		                               rows->kinds, err);
	return rc != 0 ? rc
	               : backend->ops->fence(backend, tables, n_tables, message,
	                                     on, marker, on ? rows : NULL, cb,
	                                     arg, err);
}

int
backend_guard_sql(struct rs_backend *backend, const char *const *tables,
                  int n_tables, const struct rs_guard *guard, char ***stmts,
                  int *n_stmts, struct rs_err *err)
{
	struct rs_sql_list list = {0};
	int rc = 0;

	*stmts = NULL;
	*n_stmts = 0;
	if (!backend_supports(backend, RS_CAP_GUARD))
		return backend_unsupported(backend, "the ownership guard", err);
	if (guard != NULL && (rc = backend_points_computable(
				      backend, "guard", tables, n_tables,
				      guard->hash, guard->kinds, err)) != 0)
		return rc;
	rc = backend->ops->guard_sql(backend, tables, n_tables, guard, &list,
	                             err);
	if (rc != 0) {
		backend_guard_sql_free(list.stmts, list.n);
		return rc;
	}
	*stmts = list.stmts;
	*n_stmts = list.n;
	return 0;
}

void
backend_guard_sql_free(char **stmts, int n_stmts)
{
	for (int i = 0; i < n_stmts; i++)
		free(stmts[i]);
	free(stmts);
}

int
backend_sql_list_add(struct rs_sql_list *list, struct rs_strbuf *b)
{
	char *text = b->failed ? NULL : strbuf_finish(b);

	strbuf_clear(b);
	if (text == NULL)
		return RS_ENOMEM;
	if (list->n == list->cap) {
		int cap = list->cap * 2 + 8;
		char **more =
			realloc(list->stmts, sizeof(char *) * (size_t)cap);

		if (more == NULL) {
			free(text);
			return RS_ENOMEM;
		}
		list->stmts = more;
		list->cap = cap;
	}
	list->stmts[list->n++] = text;
	return 0;
}

int
backend_fence_rows_hash(const struct rs_backend *backend, enum rs_hash hash,
                        enum rs_col_kind kind)
{
	return backend_ops_point_sql(backend->ops, hash) &&
	       (kind == RS_COL_TEXT || kind == RS_COL_INTEGER);
}

int
backend_markers(struct rs_backend *backend, rs_markers_cb cb, void *arg,
                struct rs_err *err)
{
	int rc = backend_enter(backend, err);

	if (rc == 0 && backend->ops->markers == NULL)
		rc = backend_unsupported(backend, "the shard marker", err);
	return rc != 0 ? rc : backend->ops->markers(backend, cb, arg, err);
}

int
backend_mark(struct rs_backend *backend, const struct rs_marker *marker,
             rs_backend_cb cb, void *arg, struct rs_err *err)
{
	int rc = backend_enter(backend, err);

	if (rc == 0 && backend->ops->mark == NULL)
		rc = backend_unsupported(backend, "the shard marker", err);
	return rc != 0 ? rc : backend->ops->mark(backend, marker, cb, arg, err);
}

int
backend_exists(const struct rs_backend *backend)
{
	struct stat st;

	if (backend->url.engine != RS_ENGINE_SQLITE)
		return 1;
	return stat(backend->url.database, &st) == 0 && st.st_size > 0;
}

int
backend_delete_log(struct rs_backend *backend, const struct rs_table_def *table,
                   int on, rs_backend_cb cb, void *arg, struct rs_err *err)
{
	int rc = backend_enter(backend, err);

	if (rc == 0 && backend->ops->delete_log == NULL)
		rc = backend_unsupported(backend, "the delete log", err);
	return rc != 0 ? rc
	               : backend->ops->delete_log(backend, table, on, cb, arg,
	                                          err);
}

void
backend_delete_log_name(const char *table, char *buf, size_t size)
{
	snprintf(buf, size, "reshard_del_%s", table);
}

int
backend_fenced(struct rs_backend *backend, const char *table, rs_count_cb cb,
               void *arg, struct rs_err *err)
{
	int rc = backend_enter(backend, err);

	if (rc == 0 && backend->ops->fenced == NULL)
		rc = backend_unsupported(backend, "the write fence", err);
	return rc != 0 ? rc
	               : backend->ops->fenced(backend, table, cb, arg, err);
}

/* Enter PRIMARY for a replication operation on REPLICA. */
static int
backend_enter_replication(struct rs_backend *primary,
                          const struct rs_backend *replica, const char *what,
                          struct rs_err *err)
{
	int rc = backend_enter(primary, err);

	if (rc == 0 && (!backend_supports(primary, RS_CAP_REPLICATION) ||
	                (replica != NULL && primary->ops != replica->ops)))
		rc = backend_unsupported(primary, what, err);
	return rc;
}

int
backend_replica_check(struct rs_backend *primary, struct rs_backend *replica,
                      int max_lag_ms, rs_backend_cb cb, void *arg,
                      struct rs_err *err)
{
	int rc = backend_enter_replication(
		primary, replica, "doubling by replica promotion", err);

	return rc != 0 ? rc
	               : primary->ops->replica_check(primary, replica,
	                                             max_lag_ms, cb, arg, err);
}

int
backend_position(struct rs_backend *primary, rs_position_cb cb, void *arg,
                 struct rs_err *err)
{
	int rc = backend_enter_replication(primary, NULL, "replica catch-up",
	                                   err);

	return rc != 0 ? rc : primary->ops->position(primary, cb, arg, err);
}

int
backend_catch_up(struct rs_backend *primary, struct rs_backend *replica,
                 const char *position, int slice_ms, rs_replication_cb cb,
                 void *arg, struct rs_err *err)
{
	int rc = backend_enter_replication(primary, replica, "replica catch-up",
	                                   err);

	return rc != 0 ? rc
	               : primary->ops->catch_up(primary, replica, position,
	                                        slice_ms, cb, arg, err);
}

int
backend_promote(struct rs_backend *replica, rs_backend_cb cb, void *arg,
                struct rs_err *err)
{
	int rc = backend_enter_replication(replica, NULL, "replica promotion",
	                                   err);

	return rc != 0 ? rc : replica->ops->promote(replica, cb, arg, err);
}

int
backend_promoted(struct rs_backend *replica, rs_count_cb cb, void *arg,
                 struct rs_err *err)
{
	int rc = backend_enter_replication(replica, NULL, "replica promotion",
	                                   err);

	return rc != 0 ? rc : replica->ops->promoted(replica, cb, arg, err);
}

int
backend_resume_replication(struct rs_backend *replica, rs_backend_cb cb,
                           void *arg, struct rs_err *err)
{
	int rc = backend_enter_replication(
		replica, NULL, "starting a replica's replication again", err);

	if (rc == 0 && !backend_supports(replica, RS_CAP_RESUME_REPLICATION))
		rc = backend_unsupported(
			replica, "starting a replica's replication again", err);
	return rc != 0 ? rc
	               : replica->ops->resume_replication(replica, cb, arg,
	                                                  err);
}

int
backend_promote_ready(struct rs_backend *replica, rs_backend_cb cb, void *arg,
                      struct rs_err *err)
{
	int rc = backend_enter_replication(
		replica, NULL, "preparing a replica's promotion", err);

	if (rc == 0 && !backend_supports(replica, RS_CAP_PROMOTE_READY))
		rc = backend_unsupported(
			replica, "preparing a replica's promotion", err);
	return rc != 0 ? rc
	               : replica->ops->promote_ready(replica, cb, arg, err);
}

int
backend_downstream_lag(struct rs_backend *backend, rs_count_cb cb, void *arg,
                       struct rs_err *err)
{
	int rc = backend_enter(backend, err);

	if (rc == 0 && !backend_supports(backend, RS_CAP_DOWNSTREAM_LAG))
		rc = backend_unsupported(backend, "measuring replica lag", err);
	return rc != 0 ? rc
	               : backend->ops->downstream_lag(backend, cb, arg, err);
}

int
backend_source_check(struct rs_backend *backend, rs_count_cb cb, void *arg,
                     struct rs_err *err)
{
	int rc = backend_enter(backend, err);

	if (rc == 0 && !backend_supports(backend, RS_CAP_SOURCE_CHECK))
		rc = backend_unsupported(backend, "checking a source", err);
	return rc != 0 ? rc : backend->ops->source_check(backend, cb, arg, err);
}

int
backend_release(struct rs_backend *primary, struct rs_backend *replica,
                rs_position_cb cb, void *arg, struct rs_err *err)
{
	int rc = backend_enter_replication(primary, replica,
	                                   "releasing a promoted replica", err);

	if (rc == 0 && !backend_supports(primary, RS_CAP_RELEASE_REPLICA))
		rc = backend_unsupported(primary,
		                         "releasing a promoted replica", err);
	return rc != 0 ? rc
	               : primary->ops->release(primary, replica, cb, arg, err);
}

int
backend_remove(struct rs_backend *backend, struct rs_err *err)
{
	char side[4200];

	if (!backend_supports(backend, RS_CAP_MADE_REPLICA))
		return backend_fail(backend, err, RS_EUSAGE,
		                    "not a database reshard made; not removed");
	if (unlink(backend->url.database) != 0 && errno != ENOENT)
		return backend_fail(backend, err, RS_EIO,
		                    "cannot remove %s: %s",
		                    backend->url.database, strerror(errno));
	for (int i = 0; i < 2; i++) {
		snprintf(side, sizeof(side), "%s-%s", backend->url.database,
		         i ? "shm" : "wal");
		unlink(side);
	}
	return 0;
}

const char *
backend_engine(const struct rs_backend *backend)
{
	return backend->ops->engine;
}

int
backend_create(struct rs_backend *backend, struct rs_err *err)
{
	FILE *f;

	if (!backend_supports(backend, RS_CAP_MADE_REPLICA))
		return backend_fail(backend, err, RS_EUSAGE,
		                    "reshard cannot make this database");
	f = fopen(backend->url.database, "w");
	if (f == NULL || fclose(f) != 0)
		return backend_fail(backend, err, RS_EIO,
		                    "cannot create %s: %s",
		                    backend->url.database, strerror(errno));
	return 0;
}

/* The rows of the engine's table_sql: made into statements for the
 * caller of backend_table_sql. */
static void
backend_on_table_sql(struct rs_backend *backend, int status,
                     const struct rs_err *err, const struct rs_rows *rows,
                     void *arg)
{
	rs_table_sql_cb cb = backend->made.cb;
	void *cb_arg = backend->made.arg;
	struct rs_table_sql *sql = NULL;
	struct rs_err local;

	(void)arg;
	if (status == 0) {
		sql = calloc(1, sizeof(*sql));
		status = sql == NULL ? backend_fail(backend, &local, RS_ENOMEM,
		                                    "out of memory")
		                     : backend->ops->table_sql_build(
					       rows, backend->made.table,
					       backend->made.as, sql, &local);
		if (status != 0 && sql != NULL) {
			backend_fail(backend, &local, local.code, "%s",
			             local.message);
			backend_table_sql_free(sql);
			sql = NULL;
		}
		err = status != 0 ? &local : NULL;
	}
	free(backend->made.table);
	free(backend->made.as);
	backend->made.table = backend->made.as = NULL;
	backend->made.cb = NULL;
	cb(backend, status, err, sql, cb_arg);
}

int
backend_table_sql(struct rs_backend *backend, const char *table, const char *as,
                  rs_table_sql_cb cb, void *arg, struct rs_err *err)
{
	int rc = backend_enter(backend, err);

	if (rc == 0 && !backend_supports(backend, RS_CAP_CREATE_TABLE))
		rc = backend_unsupported(backend, "making a table again", err);
	if (rc != 0)
		return rc;
	backend->made.table = strdup(table);
	backend->made.as = strdup(as);
	if (backend->made.table == NULL || backend->made.as == NULL)
		rc = backend_fail(backend, err, RS_ENOMEM, "out of memory");
	backend->made.cb = cb;
	backend->made.arg = arg;
	if (rc == 0)
		rc = backend->ops->table_sql(backend, table, as,
		                             backend_on_table_sql, NULL, err);
	if (rc != 0) {
		free(backend->made.table);
		free(backend->made.as);
		backend->made.table = backend->made.as = NULL;
		backend->made.cb = NULL;
	}
	return rc;
}

int
backend_table_sql_put(struct rs_table_sql *out, enum rs_table_sql_part part,
                      const char *text, size_t len, struct rs_err *err)
{
	char *copy = malloc(len + 1), **list = NULL, ***at = NULL;
	int *n = NULL;

	if (copy == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	memcpy(copy, text, len);
	copy[len] = '\0';
	switch (part) {
	case RS_SQL_CREATE:
		free(out->create);
		out->create = copy;
		return 0;
	case RS_SQL_DROP:
		free(out->drop);
		out->drop = copy;
		return 0;
	case RS_SQL_UNIQUE:
		at = &out->uniques;
		n = &out->n_uniques;
		break;
	case RS_SQL_INDEX:
		at = &out->indexes;
		n = &out->n_indexes;
		break;
	case RS_SQL_LEFT_OUT:
		at = &out->left_out;
		n = &out->n_left_out;
		break;
	}
	list = realloc(*at, (size_t)(*n + 1) * sizeof(*list));
	if (list == NULL) {
		free(copy);
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	}
	list[(*n)++] = copy;
	*at = list;
	return 0;
}

void
backend_table_sql_free(struct rs_table_sql *sql)
{
	if (sql == NULL)
		return;
	for (int i = 0; i < sql->n_uniques; i++)
		free(sql->uniques[i]);
	for (int i = 0; i < sql->n_indexes; i++)
		free(sql->indexes[i]);
	for (int i = 0; i < sql->n_left_out; i++)
		free(sql->left_out[i]);
	free(sql->uniques);
	free(sql->indexes);
	free(sql->left_out);
	free(sql->create);
	free(sql->drop);
	free(sql);
}

int
backend_supports(const struct rs_backend *backend, enum rs_capability cap)
{
	const struct rs_backend_ops *ops = backend->ops;

	switch (cap) {
	case RS_CAP_REPLICATION:
		return ops->catch_up != NULL;
	case RS_CAP_MARKERS:
		return ops->markers != NULL && ops->mark != NULL;
	case RS_CAP_DELETE_LOG:
		return ops->delete_log != NULL;
	case RS_CAP_SCAN:
		return ops->scan_begin != NULL && ops->scan_next != NULL &&
		       ops->scan_end != NULL;
	case RS_CAP_MADE_REPLICA:
		return backend->url.engine == RS_ENGINE_SQLITE;
	case RS_CAP_RELEASE_REPLICA:
		return ops->release != NULL;
	case RS_CAP_RESUME_REPLICATION:
		return ops->resume_replication != NULL;
	case RS_CAP_PROMOTE_READY:
		return ops->promote_ready != NULL;
	case RS_CAP_DOWNSTREAM_LAG:
		return ops->downstream_lag != NULL;
	case RS_CAP_SOURCE_CHECK:
		return ops->source_check != NULL &&
		       (ops->source_check_ok == NULL ||
		        ops->source_check_ok(backend));
	case RS_CAP_CAPTURE:
		return ops->capture != NULL && ops->read_keys != NULL;
	case RS_CAP_CREATE_TABLE:
		return ops->table_sql != NULL && ops->table_sql_build != NULL;
	case RS_CAP_FENCE_ROWS:
		return ops->fence != NULL && ops->fence_rows;
	case RS_CAP_GUARD:
		return ops->guard_sql != NULL;
	case RS_CAP_KEEP_IDLE:
		return backend->url.engine != RS_ENGINE_SQLITE;
	case RS_CAP_CONCURRENT_LOADS:
		return backend->url.engine == RS_ENGINE_POSTGRES;
	case RS_CAP_CHEAP_COUNT:
		return backend->url.engine == RS_ENGINE_SQLITE;
	}
	return 0;
}

int
backend_scan_begin(struct rs_backend *backend, const struct rs_table_def *table,
                   const int *columns, int n_columns, rs_backend_cb cb,
                   void *arg, struct rs_err *err)
{
	int rc = backend_enter(backend, err);

	if (rc == 0 && !backend_supports(backend, RS_CAP_SCAN))
		rc = backend_unsupported(backend, "the snapshot scan", err);
	return rc != 0 ? rc
	               : backend->ops->scan_begin(backend, table, columns,
	                                          n_columns, cb, arg, err);
}

int
backend_scan_next(struct rs_backend *backend, int limit, rs_rows_cb cb,
                  void *arg, struct rs_err *err)
{
	int rc = backend_enter(backend, err);

	if (rc == 0 && !backend_supports(backend, RS_CAP_SCAN))
		rc = backend_unsupported(backend, "the snapshot scan", err);
	return rc != 0 ? rc
	               : backend->ops->scan_next(backend, limit, cb, arg, err);
}

int
backend_scan_end(struct rs_backend *backend, rs_backend_cb cb, void *arg,
                 struct rs_err *err)
{
	int rc = backend_enter(backend, err);

	if (rc == 0 && !backend_supports(backend, RS_CAP_SCAN))
		rc = backend_unsupported(backend, "the snapshot scan", err);
	return rc != 0 ? rc : backend->ops->scan_end(backend, cb, arg, err);
}

enum rs_canon_src
backend_canon_src(const struct rs_backend *backend)
{
	switch (backend->url.engine) {
	case RS_ENGINE_POSTGRES:
		return RS_SRC_PG;
	case RS_ENGINE_MYSQL:
		return RS_SRC_MYSQL;
	default:
		return RS_SRC_SQLITE;
	}
}

static void
backend_closed(struct rs_backend *backend)
{
	rs_backend_cb cb = backend->close_cb;
	void *arg = backend->close_arg;

	backend_free(backend);
	if (cb != NULL)
		cb(NULL, 0, NULL, arg);
}

void
backend_close(struct rs_backend *backend, rs_backend_cb cb, void *arg)
{
	if (backend == NULL)
		return;
	backend->close_cb = cb;
	backend->close_arg = arg;
	backend->ops->close(backend, backend_closed);
}

void
backend_table_free(struct rs_table_def *table)
{
	if (table == NULL)
		return;
	for (int i = 0; i < table->n_columns; i++) {
		free(table->columns[i].name);
		free(table->columns[i].type);
	}
	free(table->columns);
	free(table->pk);
	free(table->name);
	free(table->cascades);
	for (int i = 0; i < table->n_uniques; i++)
		free(table->uniques[i].columns);
	free(table->uniques);
	free(table);
}

/* One entry of backend_table_uniques's lists. */
struct unique_part {
	unsigned long long id;
	int position, parts, column;
};

static int
unique_part_cmp(const void *a, const void *b)
{
	const struct unique_part *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return (x->position > y->position) - (x->position < y->position);
}

int
backend_table_uniques(struct rs_table_def *table, const char *const *lists)
{
	struct unique_part *parts = NULL;
	size_t n = 0, cap = 0;

	for (int c = 0; c < table->n_columns; c++)
		for (const char *s = lists[c]; s != NULL && *s != '\0';) {
			struct unique_part p = {.column = c};
			char *end;

			p.id = strtoull(s, &end, 10);
			if (*end == ':')
				p.position = (int)strtol(end + 1, &end, 10);
			if (*end == ':')
				p.parts = (int)strtol(end + 1, &end, 10);
			if (n == cap) {
				struct unique_part *more = realloc(
					parts, sizeof(*more) * (cap * 2 + 8));

				if (more == NULL) {
					free(parts);
					return RS_ENOMEM;
				}
				parts = more;
				cap = cap * 2 + 8;
			}
			parts[n++] = p;
			s = *end == ',' ? end + 1 : end + strlen(end);
		}
	if (n > 0)
		qsort(parts, n, sizeof(*parts), unique_part_cmp);
	for (size_t i = 0, j; i < n; i = j) {
		int whole = parts[i].parts > 0, m = 0;
		struct rs_unique *more;

		for (j = i; j < n && parts[j].id == parts[i].id; j++, m++)
			whole &= parts[j].parts == parts[i].parts &&
			         parts[j].position == m + 1;
		if (!whole || m != parts[i].parts)
			continue;
		more = realloc(table->uniques,
		               sizeof(*more) * (size_t)(table->n_uniques + 1));
		if (more != NULL) {
			table->uniques = more;
			more = &table->uniques[table->n_uniques];
			more->columns = malloc(sizeof(int) * (size_t)m);
		}
		if (more == NULL || more->columns == NULL) {
			free(parts);
			return RS_ENOMEM;
		}
		more->n_columns = m;
		for (int k = 0; k < m; k++)
			more->columns[k] = parts[i + (size_t)k].column;
		table->n_uniques++;
	}
	free(parts);
	return 0;
}

void
backend_sql_moves(struct rs_strbuf *b, const struct rs_moving *m,
                  const char *point)
{
	if (m->n == 0) {
		strbuf_printf(b, "(%s IS NOT NULL AND 1 = 0)", point);
		return;
	}
	strbuf_str(b, "(");
	if (m->period != 0) {
		strbuf_printf(b, "MOD(%s, %llu) IN (", point,
		              (unsigned long long)m->period);
		for (size_t i = 0; i < m->n; i++)
			strbuf_printf(b, "%s%llu", i > 0 ? ", " : "",
			              (unsigned long long)m->residues[i]);
		strbuf_str(b, "))");
		return;
	}
	for (size_t i = 0; i < m->n; i++)
		strbuf_printf(b, "%s%s BETWEEN %llu AND %llu",
		              i > 0 ? " OR " : "", point,
		              (unsigned long long)m->spans[i][0],
		              (unsigned long long)m->spans[i][1]);
	strbuf_str(b, ")");
}
