/*
 * The inside of a backend, for the engine files (pg.c, mysql.c, sqlite.c)
 * and backend.c only: the table of an engine's operations and the part of
 * a backend every engine shares.  Everything else holds a struct
 * rs_backend by pointer and goes through backend.h.
 */
#ifndef RS_BACKEND_ENGINE_H
#define RS_BACKEND_ENGINE_H

#include "backend/backend.h"
#include "common/strbuf.h"
#include "shardmap/pairmap.h"

struct rs_sql_list;

/* What an engine file implements; see the functions below for contracts. */
struct rs_backend_ops {
	const char *engine; /* "postgresql", "mysql", "sqlite" */
	/* 1 when read_batch returns the primary key columns in canonical
	 * form itself (SQLite, which must check each key's storage on its
	 * worker); 0 when they come in the engine's text and backend.c
	 * converts them (backend_read_batch). */
	int keys_canonical;
	int (*connect)(struct rs_backend *backend, rs_backend_cb cb, void *arg,
	               struct rs_err *err);
	int (*describe)(struct rs_backend *backend, const char *table,
	                rs_describe_cb cb, void *arg, struct rs_err *err);
	int (*read_batch)(struct rs_backend *backend,
	                  const struct rs_read_request *request, rs_rows_cb cb,
	                  void *arg, struct rs_err *err);
	int (*exec)(struct rs_backend *backend, const char *sql,
	            rs_backend_cb cb, void *arg, struct rs_err *err);
	int (*upsert)(struct rs_backend *backend,
	              const struct rs_table_def *table,
	              const struct rs_rows *rows, rs_backend_cb cb, void *arg,
	              struct rs_err *err);
	/* NULL: backend_load is upsert (no faster path for new rows). */
	int (*load)(struct rs_backend *backend,
	            const struct rs_table_def *table,
	            const struct rs_rows *rows, rs_backend_cb cb, void *arg,
	            struct rs_err *err);
	int (*delete_keys)(struct rs_backend *backend,
	                   const struct rs_table_def *table,
	                   const struct rs_rows *keys, rs_backend_cb cb,
	                   void *arg, struct rs_err *err);
	/* NULL: backend_purge_keys is delete_keys (no delete log). */
	int (*purge_keys)(struct rs_backend *backend,
	                  const struct rs_table_def *table,
	                  const struct rs_rows *keys, rs_backend_cb cb,
	                  void *arg, struct rs_err *err);
	/* The operations below may be NULL for an engine that does not
	 * support them yet; backend.c then fails with RS_EUSAGE. */
	int (*count)(struct rs_backend *backend, const char *table,
	             rs_count_cb cb, void *arg, struct rs_err *err);
	int (*fence)(struct rs_backend *backend, const char *const *tables,
	             int n_tables, const char *message, int on,
	             const struct rs_marker *marker,
	             const struct rs_fence_rows *rows, rs_backend_cb cb,
	             void *arg, struct rs_err *err);
	int fence_rows; /* fence takes ROWS (RS_CAP_FENCE_ROWS) */
	/* Bit 1 << HASH (enum rs_hash) for each hash whose point the
	 * server computes in SQL (pg_sql_point, mysql_sql_point_set), for a
	 * fence of rows and the guard. */
	unsigned point_hashes;
	/* backend_guard_sql, after backend.c's checks: append each
	 * statement to LIST (backend_sql_list_add). */
	int (*guard_sql)(struct rs_backend *backend, const char *const *tables,
	                 int n_tables, const struct rs_guard *guard,
	                 struct rs_sql_list *list, struct rs_err *err);
	int (*markers)(struct rs_backend *backend, rs_markers_cb cb, void *arg,
	               struct rs_err *err);
	int (*mark)(struct rs_backend *backend, const struct rs_marker *marker,
	            rs_backend_cb cb, void *arg, struct rs_err *err);
	int (*delete_log)(struct rs_backend *backend,
	                  const struct rs_table_def *table, int on,
	                  rs_backend_cb cb, void *arg, struct rs_err *err);
	int (*fenced)(struct rs_backend *backend, const char *table,
	              rs_count_cb cb, void *arg, struct rs_err *err);
	/* Change capture (a split): both or none. */
	int (*capture)(struct rs_backend *backend,
	               const struct rs_table_def *table, int key_column, int on,
	               rs_backend_cb cb, void *arg, struct rs_err *err);
	int (*read_keys)(struct rs_backend *backend,
	                 const struct rs_keys_request *request, rs_rows_cb cb,
	                 void *arg, struct rs_err *err);
	/* Making a table again (backend_table_sql): both or none.
	 * table_sql reads what the engine's catalog says of TABLE, as rows
	 * of its own choosing; table_sql_build, a pure function, turns
	 * those rows into the statements (OUT zeroed by the caller; on
	 * failure backend.c frees what it filled). */
	int (*table_sql)(struct rs_backend *backend, const char *table,
	                 const char *as, rs_rows_cb cb, void *arg,
	                 struct rs_err *err);
	int (*table_sql_build)(const struct rs_rows *rows, const char *table,
	                       const char *as, struct rs_table_sql *out,
	                       struct rs_err *err);
	/* Replication (a doubling): all five or none. */
	int (*replica_check)(struct rs_backend *primary,
	                     struct rs_backend *replica, int max_lag_ms,
	                     rs_backend_cb cb, void *arg, struct rs_err *err);
	int (*position)(struct rs_backend *primary, rs_position_cb cb,
	                void *arg, struct rs_err *err);
	int (*catch_up)(struct rs_backend *primary, struct rs_backend *replica,
	                const char *position, int slice_ms,
	                rs_replication_cb cb, void *arg, struct rs_err *err);
	int (*promote)(struct rs_backend *replica, rs_backend_cb cb, void *arg,
	               struct rs_err *err);
	int (*promoted)(struct rs_backend *replica, rs_count_cb cb, void *arg,
	                struct rs_err *err);
	/* Optional (RS_CAP_DOWNSTREAM_LAG). */
	int (*source_check)(struct rs_backend *backend, rs_count_cb cb,
	                    void *arg, struct rs_err *err);
	/* NULL, or whether source_check works on this connection's server
	 * (MariaDB, not MySQL). */
	int (*source_check_ok)(const struct rs_backend *backend);
	int (*downstream_lag)(struct rs_backend *backend, rs_count_cb cb,
	                      void *arg, struct rs_err *err);
	/* Optional (RS_CAP_PROMOTE_READY). */
	int (*promote_ready)(struct rs_backend *replica, rs_backend_cb cb,
	                     void *arg, struct rs_err *err);
	/* Optional (RS_CAP_RELEASE_REPLICA). */
	int (*release)(struct rs_backend *primary, struct rs_backend *replica,
	               rs_position_cb cb, void *arg, struct rs_err *err);
	/* Optional (RS_CAP_RESUME_REPLICATION). */
	int (*resume_replication)(struct rs_backend *replica, rs_backend_cb cb,
	                          void *arg, struct rs_err *err);
	/* The unordered snapshot scan (backend_scan_begin …): all three or
	 * none. */
	int (*scan_begin)(struct rs_backend *backend,
	                  const struct rs_table_def *table, const int *columns,
	                  int n_columns, rs_backend_cb cb, void *arg,
	                  struct rs_err *err);
	int (*scan_next)(struct rs_backend *backend, int limit, rs_rows_cb cb,
	                 void *arg, struct rs_err *err);
	int (*scan_end)(struct rs_backend *backend, rs_backend_cb cb, void *arg,
	                struct rs_err *err);
	/* Start closing; call done(backend) from the last close callback
	 * (possibly at once when nothing is open).  Called once, with no
	 * operation running, also on a backend that never connected. */
	void (*close)(struct rs_backend *backend,
	              void (*done)(struct rs_backend *backend));
};

/* The part every engine shares.  Engines keep their own state in
 * `engine`; nobody else looks inside it. */
struct rs_backend {
	const struct rs_backend_ops *ops;
	uv_loop_t *loop;
	char *shard;            /* shard name, for every message */
	struct rs_url url;      /* parsed; url.masked is safe to print */
	char *password;         /* resolved secret or NULL; wiped on free */
	int connect_timeout_ms; /* default 10,000 */
	int op_timeout_ms;      /* bound of each operation started from now */
	int op_timeout_plan_ms; /* the configured bound, op_timeout_ms's
	                           default (BACKEND_OP_TIMEOUT_MS) */
	int busy;               /* an operation is running */
	void *engine;           /* engine-private state */
	rs_backend_cb close_cb; /* set by backend_close */
	void *close_arg;
	/* A read that backend.c reshapes (backend_read_on_rows): the
	 * caller's callback, the columns the engine is asked for, and the
	 * batch handed to the caller. */
	struct {
		rs_rows_cb cb;
		void *arg;
		const struct rs_table_def *table;
		int convert;  /* key columns to turn canonical */
		int width;    /* values in a row of the caller's */
		int *columns; /* the columns the engine reads … */
		int n_columns;
		int *from;       /* … and, per value of the caller's row, its
		                    index in the engine's */
		int cap_columns; /* of columns and from */
		/* The engine's request, which lives until its callback. */
		struct rs_read_request batch;
		struct rs_keys_request by_key;
		struct rs_canon_buf text; /* the converted key texts */
		struct rs_value *values;  /* the batch, reshaped */
		size_t *offsets;          /* per key value, into text */
		size_t cap;               /* of values and offsets */
	} read;
	/* backend_table_sql: the caller's callback and the names. */
	struct {
		rs_table_sql_cb cb;
		void *arg;
		char *table;
		char *as;
	} made;
};

/* Fill ERR for an operation that did not finish within its bound of
 * BOUND_MS: "shard NAME (MASKED-URL): WHAT: did not finish within N s;
 * AFTERWARDS (…)", the parenthesis naming options.operation_timeout_seconds
 * when BOUND_MS is the configured bound.  Code RS_ECONNECT, returned; the
 * engine adds its SQLSTATE or errno.  For the engine files. */
int backend_fail_deadline(const struct rs_backend *backend, struct rs_err *err,
                          const char *what, int bound_ms,
                          const char *afterwards);

/* For the engines' table_sql_build: where a statement goes. */
enum rs_table_sql_part {
	RS_SQL_CREATE,
	RS_SQL_UNIQUE,
	RS_SQL_INDEX,
	RS_SQL_LEFT_OUT,
	RS_SQL_DROP,
};

/* Put a copy of TEXT (LEN bytes) into OUT at PART: CREATE and DROP are
 * set, UNIQUE, INDEX and LEFT_OUT appended.  Returns 0 or RS_ENOMEM (ERR
 * filled). */
int backend_table_sql_put(struct rs_table_sql *out, enum rs_table_sql_part part,
                          const char *text, size_t len, struct rs_err *err);

/* A growing list of statements (backend_guard_sql). */
struct rs_sql_list {
	char **stmts;
	int n, cap;
};

/* Append a copy of the text of B (cleared here) to LIST.  0, or RS_ENOMEM
 * (also when B had failed). */
int backend_sql_list_add(struct rs_sql_list *list, struct rs_strbuf *b);

/* Append to B a condition, true when the point in POINT (an SQL
 * expression or variable holding a point as an unsigned number: see
 * pg_sql_point, mysql_sql_point) is one of M's (shardmap/pairmap.h):
 * "(POINT BETWEEN lo AND hi OR …)" or "(MOD(POINT, period) IN (…))";
 * false when nothing moves.  NULL when POINT is NULL: the caller decides
 * what an unknown point means.  The same SQL for PostgreSQL and
 * MariaDB. */
void backend_sql_moves(struct rs_strbuf *b, const struct rs_moving *m,
                       const char *point);

extern const struct rs_backend_ops backend_pg_ops;
extern const struct rs_backend_ops backend_mysql_ops;
extern const struct rs_backend_ops backend_sqlite_ops;

#endif
