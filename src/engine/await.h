/*
 * Waiting for one backend operation from a step: start it, run the loop
 * until its callback has fired, hand back its outcome.  The loop keeps
 * serving signals and other handles meanwhile.  Must not be called from a
 * libuv callback (uv_run is not reentrant); steps are not.
 *
 * Each function returns what the operation reported: 0, or its RS_E…
 * code with ERR filled.
 */
#ifndef RS_AWAIT_H
#define RS_AWAIT_H

#include "backend/backend.h"

/* Rows copied out of a read callback, owned by the caller. */
struct rs_rowbuf {
	int n_rows;
	int n_cols;
	struct rs_value *values; /* n_rows × n_cols, pointing into bytes */
	char *bytes;
	size_t cap_values, cap_bytes;
};

void rowbuf_free(struct rs_rowbuf *buf);

/* The values of row R. */
static inline const struct rs_value *
rowbuf_row(const struct rs_rowbuf *buf, int r)
{
	return buf->values + (size_t)r * (size_t)buf->n_cols;
}

int await_connect(uv_loop_t *loop, struct rs_backend *backend,
                  struct rs_err *err);
int await_describe(uv_loop_t *loop, struct rs_backend *backend,
                   const char *table, struct rs_table_def **def,
                   struct rs_err *err);
/* The statements that make TABLE again as AS (backend_table_sql): *SQL
 * is the caller's (backend_table_sql_free), NULL on error. */
int await_table_sql(uv_loop_t *loop, struct rs_backend *backend,
                    const char *table, const char *as,
                    struct rs_table_sql **sql, struct rs_err *err);
/* Read one batch into OUT (replacing what it held). */
int await_read(uv_loop_t *loop, struct rs_backend *backend,
               const struct rs_read_request *request, struct rs_rowbuf *out,
               struct rs_err *err);
/* The outcome of one operation, filled by its callback. */
struct await_waiter {
	uv_loop_t *loop;
	int started; /* what starting it returned (0: a callback will come) */
	int done;
	int status;
	struct rs_err err;
	int64_t value;
	struct rs_table_def *def;
	struct rs_rowbuf *rows;
	struct rs_table_sql *sql;
};

/* A read in two halves, for reading ahead: await_read_start starts the
 * read into OUT and returns at once (0, or the error that kept it from
 * starting, ERR filled); await_read_finish waits for it and returns what
 * await_read would have.  Between the two, REQUEST (and the key values it
 * points to), OUT and W must stay as they are, and BACKEND does nothing
 * else.  Every started read must be finished, on error paths too. */
int await_read_start(uv_loop_t *loop, struct rs_backend *backend,
                     const struct rs_read_request *request,
                     struct rs_rowbuf *out, struct await_waiter *w,
                     struct rs_err *err);
int await_read_finish(struct await_waiter *w, struct rs_err *err);
/* backend_load in two halves, the same way: for a write left in flight
 * while the next chunk is prepared (walk_defer).  TABLE and ROWS (and
 * the bytes they point to) must stay until await_load_finish returns. */
int await_load_start(uv_loop_t *loop, struct rs_backend *backend,
                     const struct rs_table_def *table,
                     const struct rs_rows *rows, struct await_waiter *w,
                     struct rs_err *err);
int await_load_finish(struct await_waiter *w, struct rs_err *err);
/* backend_load, waited for. */
int await_load(uv_loop_t *loop, struct rs_backend *backend,
               const struct rs_table_def *table, const struct rs_rows *rows,
               struct rs_err *err);
int await_upsert(uv_loop_t *loop, struct rs_backend *backend,
                 const struct rs_table_def *table, const struct rs_rows *rows,
                 struct rs_err *err);
int await_delete(uv_loop_t *loop, struct rs_backend *backend,
                 const struct rs_table_def *table, const struct rs_rows *keys,
                 struct rs_err *err);
int await_purge(uv_loop_t *loop, struct rs_backend *backend,
                const struct rs_table_def *table, const struct rs_rows *keys,
                struct rs_err *err);
int await_exec(uv_loop_t *loop, struct rs_backend *backend, const char *sql,
               struct rs_err *err);
int await_count(uv_loop_t *loop, struct rs_backend *backend, const char *table,
                int64_t *count, struct rs_err *err);
int await_fence(uv_loop_t *loop, struct rs_backend *backend,
                const char *const *tables, int n_tables, const char *message,
                int on, const struct rs_marker *marker,
                const struct rs_fence_rows *rows, struct rs_err *err);
/* The shard's markers: *MARKERS malloc'd (free it; NULL when none). */
int await_markers(uv_loop_t *loop, struct rs_backend *backend,
                  struct rs_marker **markers, int *n, struct rs_err *err);
int await_mark(uv_loop_t *loop, struct rs_backend *backend,
               const struct rs_marker *marker, struct rs_err *err);
int await_delete_log(uv_loop_t *loop, struct rs_backend *backend,
                     const struct rs_table_def *table, int on,
                     struct rs_err *err);
int await_capture(uv_loop_t *loop, struct rs_backend *backend,
                  const struct rs_table_def *table, int key_column, int on,
                  struct rs_err *err);
/* The rows found by key into OUT (replacing what it held). */
int await_read_keys(uv_loop_t *loop, struct rs_backend *backend,
                    const struct rs_keys_request *request,
                    struct rs_rowbuf *out, struct rs_err *err);
int await_fenced(uv_loop_t *loop, struct rs_backend *backend, const char *table,
                 int *fenced, struct rs_err *err);
int await_replica_check(uv_loop_t *loop, struct rs_backend *primary,
                        struct rs_backend *replica, int max_lag_ms,
                        struct rs_err *err);
/* PRIMARY's position into POSITION (SIZE bytes). */
int await_position(uv_loop_t *loop, struct rs_backend *primary, char *position,
                   size_t size, struct rs_err *err);
/* One slice of the catch-up; *STATE says how far it is. */
int await_catch_up(uv_loop_t *loop, struct rs_backend *primary,
                   struct rs_backend *replica, const char *position,
                   int slice_ms, struct rs_replication *state,
                   struct rs_err *err);
/* *PROMOTED: whether REPLICA is a primary of its own already
 * (RS_REPLICA_PROMOTED); await_replica_state gives the whole enum
 * rs_replica_state. */
int await_promoted(uv_loop_t *loop, struct rs_backend *replica, int *promoted,
                   struct rs_err *err);
int await_replica_state(uv_loop_t *loop, struct rs_backend *replica, int *state,
                        struct rs_err *err);
int await_resume_replication(uv_loop_t *loop, struct rs_backend *replica,
                             struct rs_err *err);
/* backend_source_check: *STATE an enum rs_source_state. */
int await_source_check(uv_loop_t *loop, struct rs_backend *backend, int *state,
                       struct rs_err *err);
int await_downstream_lag(uv_loop_t *loop, struct rs_backend *backend,
                         int64_t *lag_ms, struct rs_err *err);
int await_release(uv_loop_t *loop, struct rs_backend *primary,
                  struct rs_backend *replica, char *note, size_t size,
                  struct rs_err *err);
int await_promote_ready(uv_loop_t *loop, struct rs_backend *replica,
                        struct rs_err *err);
int await_promote(uv_loop_t *loop, struct rs_backend *backend,
                  struct rs_err *err);
/* Wait MS milliseconds, serving the loop meanwhile (throttles). */
void await_sleep(uv_loop_t *loop, uint64_t ms);

/* Close BACKEND and wait until it is released. */
void await_close(uv_loop_t *loop, struct rs_backend *backend);

/* A loop of its own for a command: 0, or RS_EIO (ERR filled) when the
 * system refuses one (no file descriptors left for epoll). */
int await_loop_init(uv_loop_t *loop, struct rs_err *err);

/* Run LOOP until its closing handles are gone and close it.  Returns 0,
 * or RS_EINTERNAL (ERR filled, when not NULL) when a handle is still
 * open, which is a bug in reshard. */
int await_loop_close(uv_loop_t *loop, struct rs_err *err);

#endif
