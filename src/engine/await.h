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
/* Read one batch into OUT (replacing what it held). */
int await_read(uv_loop_t *loop, struct rs_backend *backend,
               const struct rs_read_request *request, struct rs_rowbuf *out,
               struct rs_err *err);
int await_upsert(uv_loop_t *loop, struct rs_backend *backend,
                 const struct rs_table_def *table, const struct rs_rows *rows,
                 struct rs_err *err);
int await_delete(uv_loop_t *loop, struct rs_backend *backend,
                 const struct rs_table_def *table, const struct rs_rows *keys,
                 struct rs_err *err);
int await_exec(uv_loop_t *loop, struct rs_backend *backend, const char *sql,
               struct rs_err *err);
int await_count(uv_loop_t *loop, struct rs_backend *backend, const char *table,
                int64_t *count, struct rs_err *err);
int await_fence(uv_loop_t *loop, struct rs_backend *backend,
                const char *const *tables, int n_tables, const char *message,
                int on, const struct rs_marker *marker, struct rs_err *err);
/* The shard's markers: *MARKERS malloc'd (free it; NULL when none). */
int await_markers(uv_loop_t *loop, struct rs_backend *backend,
                  struct rs_marker **markers, int *n, struct rs_err *err);
int await_mark(uv_loop_t *loop, struct rs_backend *backend,
               const struct rs_marker *marker, struct rs_err *err);
int await_delete_log(uv_loop_t *loop, struct rs_backend *backend,
                     const struct rs_table_def *table, int on,
                     struct rs_err *err);
int await_fenced(uv_loop_t *loop, struct rs_backend *backend, const char *table,
                 int *fenced, struct rs_err *err);
int await_replicate(uv_loop_t *loop, struct rs_backend *primary,
                    struct rs_backend *replica, struct rs_err *err);
int await_promote(uv_loop_t *loop, struct rs_backend *backend,
                  struct rs_err *err);
/* Wait MS milliseconds, serving the loop meanwhile (throttles). */
void await_sleep(uv_loop_t *loop, uint64_t ms);

/* Close BACKEND and wait until it is released. */
void await_close(uv_loop_t *loop, struct rs_backend *backend);

#endif
