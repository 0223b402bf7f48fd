/*
 * One backend operation at a time, awaited: the callback records the
 * outcome in a struct await_waiter on the caller's stack and stops the loop,
 * and the caller runs the loop until the outcome is there — or, in a stream
 * (engine/streams.h), pauses its fiber until then while the scheduler runs
 * the loop for every stream.  (Running it with
 * UV_RUN_ONCE instead can block in the poll phase for an unrelated event
 * when an engine completes through a zero-delay timer.)
 */
#include "engine/await.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fiber.h"

static int
waiter_wait(uv_loop_t *loop, struct await_waiter *w, int started,
            struct rs_err *err)
{
	if (started != 0)
		return started; /* ERR is filled; no callback will come */
	if (fiber_current() != NULL)
		fiber_wait(&w->done, 1); /* the scheduler runs the loop */
	while (!w->done)
		uv_run(loop, UV_RUN_DEFAULT);
	if (w->status != 0 && err != NULL)
		*err = w->err;
	return w->status;
}

static void
waiter_note(struct await_waiter *w, int status, const struct rs_err *err)
{
	w->done = 1;
	uv_stop(w->loop);
	w->status = status;
	if (status != 0) {
		if (err != NULL)
			w->err = *err;
		else
			rs_err_set(&w->err, status, "operation failed");
	}
}

static void
on_done(struct rs_backend *backend, int status, const struct rs_err *err,
        void *arg)
{
	(void)backend;
	waiter_note(arg, status, err);
}

static void
on_count(struct rs_backend *backend, int status, const struct rs_err *err,
         int64_t value, void *arg)
{
	struct await_waiter *w = arg;

	(void)backend;
	w->value = value;
	waiter_note(w, status, err);
}

static void
on_describe(struct rs_backend *backend, int status, const struct rs_err *err,
            struct rs_table_def *def, void *arg)
{
	struct await_waiter *w = arg;

	(void)backend;
	w->def = def;
	waiter_note(w, status, err);
}

void
rowbuf_free(struct rs_rowbuf *buf)
{
	free(buf->values);
	free(buf->bytes);
	memset(buf, 0, sizeof(*buf));
}

/* Copy ROWS into BUF.  Returns 0 or RS_ENOMEM.
 *
 * Values that lie one after the other with one NUL between them, as an
 * engine's arena holds them (SQLite's batch, the values of one row in a
 * libpq result), go over in one memcpy a run and are only pointed again:
 * this copy runs on the loop thread, which every stream shares, and a
 * memcpy a value was a tenth of that thread's time in a verify.  A value
 * may also be bytes of the run seen before (a key column read once and
 * handed back twice: backend_read_batch). */
static int
rowbuf_copy(struct rs_rowbuf *buf, const struct rs_rows *rows)
{
	size_t n = (size_t)rows->n_rows * (size_t)rows->n_cols, bytes = 0;
	const char *start = NULL, *end = NULL; /* the run, in ROWS */
	size_t base = 0;                       /* and where it goes in BUF */

	for (size_t i = 0; i < n; i++)
		bytes += rows->values[i].len + 1;
	if (n > buf->cap_values) {
		struct rs_value *v = realloc(buf->values, n * sizeof(*v));

		if (v == NULL)
			return RS_ENOMEM;
		buf->values = v;
		buf->cap_values = n;
	}
	if (bytes > buf->cap_bytes) {
		char *b = realloc(buf->bytes, bytes);

		if (b == NULL)
			return RS_ENOMEM;
		buf->bytes = b;
		buf->cap_bytes = bytes;
	}
	for (size_t i = 0; i < n; i++) {
		const struct rs_value *v = &rows->values[i];
		const char *v_end;

		buf->values[i].len = v->text == NULL ? 0 : v->len;
		if (v->text == NULL) {
			buf->values[i].text = NULL;
			continue;
		}
		v_end = v->text + v->len;
		if (start == NULL || v->text < start || v_end > end ||
		    (v_end < end && *v_end != '\0')) {
			if (start != NULL && v->text == end + 1 &&
			    *end == '\0') {
				end = v_end; /* the run goes on */
			} else {
				/* A new run, after the one before. */
				if (start != NULL) {
					memcpy(buf->bytes + base, start,
					       (size_t)(end - start));
					buf->bytes[base +
					           (size_t)(end - start)] =
						'\0';
					base += (size_t)(end - start) + 1;
				}
				start = v->text;
				end = v_end;
			}
		}
		buf->values[i].text = buf->bytes + base + (v->text - start);
	}
	if (start != NULL) {
		memcpy(buf->bytes + base, start, (size_t)(end - start));
		buf->bytes[base + (size_t)(end - start)] = '\0';
	}
	buf->n_rows = rows->n_rows;
	buf->n_cols = rows->n_cols;
	return 0;
}

static void
on_rows(struct rs_backend *backend, int status, const struct rs_err *err,
        const struct rs_rows *rows, void *arg)
{
	struct await_waiter *w = arg;
	struct rs_err local = {0};

	if (status == 0 && rowbuf_copy(w->rows, rows) != 0) {
		status = backend_fail(backend, &local, RS_ENOMEM,
		                      "out of memory for a batch of rows");
		err = &local;
	}
	waiter_note(w, status, err);
}

int
await_connect(uv_loop_t *loop, struct rs_backend *backend, struct rs_err *err)
{
	struct await_waiter w = {.loop = loop};

	return waiter_wait(loop, &w, backend_connect(backend, on_done, &w, err),
	                   err);
}

int
await_describe(uv_loop_t *loop, struct rs_backend *backend, const char *table,
               struct rs_table_def **def, struct rs_err *err)
{
	struct await_waiter w = {.loop = loop};
	int rc = waiter_wait(
		loop, &w,
		backend_describe(backend, table, on_describe, &w, err), err);

	*def = rc == 0 ? w.def : NULL;
	return rc;
}

static void
on_table_sql(struct rs_backend *backend, int status, const struct rs_err *err,
             struct rs_table_sql *sql, void *arg)
{
	struct await_waiter *w = arg;

	(void)backend;
	w->sql = sql;
	waiter_note(w, status, err);
}

int
await_table_sql(uv_loop_t *loop, struct rs_backend *backend, const char *table,
                const char *as, struct rs_table_sql **sql, struct rs_err *err)
{
	struct await_waiter w = {.loop = loop};
	int rc = waiter_wait(
		loop, &w,
		backend_table_sql(backend, table, as, on_table_sql, &w, err),
		err);

	*sql = rc == 0 ? w.sql : NULL;
	return rc;
}

int
await_read(uv_loop_t *loop, struct rs_backend *backend,
           const struct rs_read_request *request, struct rs_rowbuf *out,
           struct rs_err *err)
{
	struct await_waiter w = {.loop = loop};

	w.rows = out;
	return waiter_wait(
		loop, &w,
		backend_read_batch(backend, request, on_rows, &w, err), err);
}

/* Note what starting W's operation returned (STARTED, ERR filled when it
 * is not 0): a failure to start is W's outcome at once. */
static int
waiter_started(struct await_waiter *w, int started, const struct rs_err *err)
{
	w->started = started;
	if (started != 0) {
		w->done = 1;
		w->status = started;
		if (err != NULL)
			w->err = *err;
	}
	return started;
}

int
await_read_start(uv_loop_t *loop, struct rs_backend *backend,
                 const struct rs_read_request *request, struct rs_rowbuf *out,
                 struct await_waiter *w, struct rs_err *err)
{
	*w = (struct await_waiter){.loop = loop, .rows = out};
	return waiter_started(
		w, backend_read_batch(backend, request, on_rows, w, err), err);
}

int
await_read_finish(struct await_waiter *w, struct rs_err *err)
{
	if (w->started != 0) {
		if (err != NULL)
			*err = w->err;
		return w->started;
	}
	return waiter_wait(w->loop, w, 0, err);
}

int
await_load(uv_loop_t *loop, struct rs_backend *backend,
           const struct rs_table_def *table, const struct rs_rows *rows,
           struct rs_err *err)
{
	struct await_waiter w = {.loop = loop};

	return waiter_wait(loop, &w,
	                   backend_load(backend, table, rows, on_done, &w, err),
	                   err);
}

int
await_load_start(uv_loop_t *loop, struct rs_backend *backend,
                 const struct rs_table_def *table, const struct rs_rows *rows,
                 struct await_waiter *w, struct rs_err *err)
{
	*w = (struct await_waiter){.loop = loop};
	return waiter_started(
		w, backend_load(backend, table, rows, on_done, w, err), err);
}

int
await_load_finish(struct await_waiter *w, struct rs_err *err)
{
	return await_read_finish(w, err); /* the same wait */
}

int
await_read_keys(uv_loop_t *loop, struct rs_backend *backend,
                const struct rs_keys_request *request, struct rs_rowbuf *out,
                struct rs_err *err)
{
	struct await_waiter w = {.loop = loop};

	w.rows = out;
	return waiter_wait(
		loop, &w, backend_read_keys(backend, request, on_rows, &w, err),
		err);
}

int
await_capture(uv_loop_t *loop, struct rs_backend *backend,
              const struct rs_table_def *table, int key_column, int on,
              struct rs_err *err)
{
	struct await_waiter w = {.loop = loop};

	return waiter_wait(loop, &w,
	                   backend_capture(backend, table, key_column, on,
	                                   on_done, &w, err),
	                   err);
}

int
await_upsert(uv_loop_t *loop, struct rs_backend *backend,
             const struct rs_table_def *table, const struct rs_rows *rows,
             struct rs_err *err)
{
	struct await_waiter w = {.loop = loop};

	return waiter_wait(
		loop, &w,
		backend_upsert(backend, table, rows, on_done, &w, err), err);
}

int
await_delete(uv_loop_t *loop, struct rs_backend *backend,
             const struct rs_table_def *table, const struct rs_rows *keys,
             struct rs_err *err)
{
	struct await_waiter w = {.loop = loop};

	return waiter_wait(
		loop, &w,
		backend_delete_keys(backend, table, keys, on_done, &w, err),
		err);
}

int
await_purge(uv_loop_t *loop, struct rs_backend *backend,
            const struct rs_table_def *table, const struct rs_rows *keys,
            struct rs_err *err)
{
	struct await_waiter w = {.loop = loop};

	return waiter_wait(
		loop, &w,
		backend_purge_keys(backend, table, keys, on_done, &w, err),
		err);
}

int
await_exec(uv_loop_t *loop, struct rs_backend *backend, const char *sql,
           struct rs_err *err)
{
	struct await_waiter w = {.loop = loop};

	return waiter_wait(loop, &w,
	                   backend_exec(backend, sql, on_done, &w, err), err);
}

int
await_count(uv_loop_t *loop, struct rs_backend *backend, const char *table,
            int64_t *count, struct rs_err *err)
{
	struct await_waiter w = {.loop = loop};
	int rc = waiter_wait(loop, &w,
	                     backend_count(backend, table, on_count, &w, err),
	                     err);

	*count = w.value;
	return rc;
}

int
await_fence(uv_loop_t *loop, struct rs_backend *backend,
            const char *const *tables, int n_tables, const char *message,
            int on, const struct rs_marker *marker,
            const struct rs_fence_rows *rows, struct rs_err *err)
{
	struct await_waiter w = {.loop = loop};

	return waiter_wait(loop, &w,
	                   backend_fence(backend, tables, n_tables, message, on,
	                                 marker, rows, on_done, &w, err),
	                   err);
}

/* The markers of one read, copied for the caller. */
struct marker_copy {
	struct await_waiter w;
	struct rs_marker *markers;
	int n;
};

static void
on_markers(struct rs_backend *backend, int status, const struct rs_err *err,
           const struct rs_marker *markers, int n, void *arg)
{
	struct marker_copy *c = arg;
	struct rs_err local = {0};

	if (status == 0 && n > 0) {
		c->markers = malloc(sizeof(*markers) * (size_t)n);
		if (c->markers == NULL) {
			status = backend_fail(backend, &local, RS_ENOMEM,
			                      "out of memory");
			err = &local;
		} else {
			memcpy(c->markers, markers,
			       sizeof(*markers) * (size_t)n);
			c->n = n;
		}
	}
	waiter_note(&c->w, status, err);
}

int
await_markers(uv_loop_t *loop, struct rs_backend *backend,
              struct rs_marker **markers, int *n, struct rs_err *err)
{
	struct marker_copy c = {.w = {.loop = loop}};
	int rc = waiter_wait(
		loop, &c.w, backend_markers(backend, on_markers, &c, err), err);

	if (rc != 0) {
		free(c.markers);
		c.markers = NULL;
		c.n = 0;
	}
	*markers = c.markers;
	*n = c.n;
	return rc;
}

int
await_mark(uv_loop_t *loop, struct rs_backend *backend,
           const struct rs_marker *marker, struct rs_err *err)
{
	struct await_waiter w = {.loop = loop};

	return waiter_wait(
		loop, &w, backend_mark(backend, marker, on_done, &w, err), err);
}

int
await_delete_log(uv_loop_t *loop, struct rs_backend *backend,
                 const struct rs_table_def *table, int on, struct rs_err *err)
{
	struct await_waiter w = {.loop = loop};

	return waiter_wait(
		loop, &w,
		backend_delete_log(backend, table, on, on_done, &w, err), err);
}

int
await_fenced(uv_loop_t *loop, struct rs_backend *backend, const char *table,
             int *fenced, struct rs_err *err)
{
	struct await_waiter w = {.loop = loop};
	int rc = waiter_wait(loop, &w,
	                     backend_fenced(backend, table, on_count, &w, err),
	                     err);

	*fenced = w.value != 0;
	return rc;
}

int
await_replica_check(uv_loop_t *loop, struct rs_backend *primary,
                    struct rs_backend *replica, int max_lag_ms,
                    struct rs_err *err)
{
	struct await_waiter w = {.loop = loop};

	return waiter_wait(loop, &w,
	                   backend_replica_check(primary, replica, max_lag_ms,
	                                         on_done, &w, err),
	                   err);
}

/* Where await_position and await_catch_up copy their answer. */
struct replication_out {
	struct await_waiter w;
	char *position;
	size_t size;
	struct rs_replication *state;
};

static void
on_position(struct rs_backend *backend, int status, const struct rs_err *err,
            const char *position, void *arg)
{
	struct replication_out *out = arg;

	(void)backend;
	if (status == 0)
		snprintf(out->position, out->size, "%s", position);
	waiter_note(&out->w, status, err);
}

static void
on_replication(struct rs_backend *backend, int status, const struct rs_err *err,
               const struct rs_replication *state, void *arg)
{
	struct replication_out *out = arg;

	(void)backend;
	if (status == 0)
		*out->state = *state;
	waiter_note(&out->w, status, err);
}

int
await_position(uv_loop_t *loop, struct rs_backend *primary, char *position,
               size_t size, struct rs_err *err)
{
	struct replication_out out = {{.loop = loop}, position, size, NULL};

	return waiter_wait(loop, &out.w,
	                   backend_position(primary, on_position, &out, err),
	                   err);
}

int
await_catch_up(uv_loop_t *loop, struct rs_backend *primary,
               struct rs_backend *replica, const char *position, int slice_ms,
               struct rs_replication *state, struct rs_err *err)
{
	struct replication_out out = {{.loop = loop}, NULL, 0, state};

	return waiter_wait(loop, &out.w,
	                   backend_catch_up(primary, replica, position,
	                                    slice_ms, on_replication, &out,
	                                    err),
	                   err);
}

int
await_replica_state(uv_loop_t *loop, struct rs_backend *replica, int *state,
                    struct rs_err *err)
{
	struct await_waiter w = {.loop = loop};
	int rc = waiter_wait(loop, &w,
	                     backend_promoted(replica, on_count, &w, err), err);

	*state = rc == 0 ? (int)w.value : RS_REPLICA_FOLLOWS;
	return rc;
}

int
await_promoted(uv_loop_t *loop, struct rs_backend *replica, int *promoted,
               struct rs_err *err)
{
	int state, rc = await_replica_state(loop, replica, &state, err);

	*promoted = state == RS_REPLICA_PROMOTED;
	return rc;
}

int
await_resume_replication(uv_loop_t *loop, struct rs_backend *replica,
                         struct rs_err *err)
{
	struct await_waiter w = {.loop = loop};

	return waiter_wait(
		loop, &w, backend_resume_replication(replica, on_done, &w, err),
		err);
}

int
await_source_check(uv_loop_t *loop, struct rs_backend *backend, int *state,
                   struct rs_err *err)
{
	struct await_waiter w = {.loop = loop};
	int rc = waiter_wait(loop, &w,
	                     backend_source_check(backend, on_count, &w, err),
	                     err);

	*state = rc == 0 ? (int)w.value : RS_SOURCE_WRITABLE;
	return rc;
}

int
await_downstream_lag(uv_loop_t *loop, struct rs_backend *backend,
                     int64_t *lag_ms, struct rs_err *err)
{
	struct await_waiter w = {.loop = loop};
	int rc = waiter_wait(loop, &w,
	                     backend_downstream_lag(backend, on_count, &w, err),
	                     err);

	*lag_ms = rc == 0 ? w.value : -1;
	return rc;
}

int
await_release(uv_loop_t *loop, struct rs_backend *primary,
              struct rs_backend *replica, char *note, size_t size,
              struct rs_err *err)
{
	struct replication_out out = {{.loop = loop}, note, size, NULL};

	return waiter_wait(
		loop, &out.w,
		backend_release(primary, replica, on_position, &out, err), err);
}

int
await_promote(uv_loop_t *loop, struct rs_backend *backend, struct rs_err *err)
{
	struct await_waiter w = {.loop = loop};

	return waiter_wait(loop, &w, backend_promote(backend, on_done, &w, err),
	                   err);
}

int
await_promote_ready(uv_loop_t *loop, struct rs_backend *replica,
                    struct rs_err *err)
{
	struct await_waiter w = {.loop = loop};

	return waiter_wait(loop, &w,
	                   backend_promote_ready(replica, on_done, &w, err),
	                   err);
}

struct closing {
	uv_loop_t *loop;
	int closed;
};

static void
on_closed(struct rs_backend *backend, int status, const struct rs_err *err,
          void *arg)
{
	struct closing *c = arg;

	(void)backend;
	(void)status;
	(void)err;
	c->closed = 1;
	uv_stop(c->loop);
}

/* Run LOOP until *FLAG reaches VALUE (set by a callback that stops it). */
static void
await_flag(uv_loop_t *loop, const int *flag, int value)
{
	if (fiber_current() != NULL)
		fiber_wait(flag, value);
	while (*flag != value)
		uv_run(loop, UV_RUN_DEFAULT);
}

void
await_close(uv_loop_t *loop, struct rs_backend *backend)
{
	struct closing c = {loop, 0};

	if (backend == NULL)
		return;
	backend_close(backend, on_closed, &c);
	await_flag(loop, &c.closed, 1);
}

static void
on_timer(uv_timer_t *timer)
{
	*(int *)timer->data = 1;
	uv_stop(timer->loop);
}

static void
on_timer_closed(uv_handle_t *handle)
{
	*(int *)handle->data = 2;
	uv_stop(handle->loop);
}

int
await_loop_init(uv_loop_t *loop, struct rs_err *err)
{
	int rc = uv_loop_init(loop);

	if (rc != 0)
		return rs_err_set(err, RS_EIO, "cannot start an event loop: %s",
		                  uv_strerror(rc));
	return 0;
}

int
await_loop_close(uv_loop_t *loop, struct rs_err *err)
{
	/* A uv_stop left over from the last wait ends the first run before
	 * it begins: the second one then closes what is closing. */
	if (uv_run(loop, UV_RUN_DEFAULT) != 0)
		uv_run(loop, UV_RUN_DEFAULT);
	if (uv_loop_close(loop) != 0)
		return rs_err_set(err, RS_EINTERNAL,
		                  "handles left open on the loop (a bug: "
		                  "please report it)");
	return 0;
}

void
await_sleep(uv_loop_t *loop, uint64_t ms)
{
	uv_timer_t timer;
	int state = 0;

	/* uv_timer_init cannot fail on a live loop; if it ever did, the
	 * sleep is skipped, which only shortens a wait between tries. */
	if (ms == 0 || uv_timer_init(loop, &timer) != 0)
		return;
	timer.data = &state;
	uv_timer_start(&timer, on_timer, ms, 0);
	await_flag(loop, &state, 1);
	uv_close((uv_handle_t *)&timer, on_timer_closed);
	await_flag(loop, &state, 2);
}
