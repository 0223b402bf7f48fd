/*
 * One interface to every engine (DESIGN §8): PostgreSQL (pg.c, libpq in
 * non-blocking mode on uv_poll), MariaDB/MySQL (mysql.c, Connector/C's
 * non-blocking API on uv_poll + uv_timer) and SQLite (sqlite.c, calls on
 * libuv's thread pool).  No engine type (PGconn, MYSQL, sqlite3) leaves its
 * file: callers see struct rs_backend and the functions below.
 *
 * Every operation is asynchronous and follows libuv's rules: it returns 0
 * and later calls its callback exactly once, on the loop thread and never
 * before the starting call has returned; or it returns a negative RS_E…
 * code (ERR filled) and the callback is never called.  A backend runs one
 * operation at a time (RS_EBUSY otherwise): concurrency comes from many
 * backends, one per stream.  Results handed to a callback are borrowed for the
 * duration of the call.
 *
 * Values travel as text (struct rs_value).  Keys cross the interface in
 * one form in both directions, the engine-neutral canonical form of
 * backend/canonical.h: the primary key columns of every row read, the
 * bounds of a read, and every value written or deleted.  So a key read
 * from PostgreSQL can be looked up, compared and deleted on MariaDB or
 * SQLite.  The other columns of a row read stay in the engine's own text
 * form until someone needs them canonical (canonical_value with
 * backend_canon_src): comparing two rows of one engine needs no
 * conversion at all.
 * Identifiers are quoted by each engine for itself; values are bound as
 * parameters (libpq, SQLite) or escaped by the driver
 * (mysql_real_escape_string), never pasted raw (DESIGN §7 rule 6).  A
 * backend whose connect failed may be connected again.
 *
 * Every operation but connect and close is bounded in time by the
 * backend's operation bound (op_timeout_ms, see backend_set_op_timeout):
 * one that has not finished when it passes fails with RS_ECONNECT and a
 * message naming the shard, the operation and the bound.  PostgreSQL and
 * MariaDB then close the connection (a server that stopped answering
 * leaves it in an unknown state): later operations fail with RS_ECONNECT
 * until it is connected again, and nothing more of the dead connection
 * reaches a callback.  SQLite interrupts the running statement (which
 * rolls back) and keeps the connection.  Connect is bounded by
 * connect_timeout_ms instead.
 */
#ifndef RS_BACKEND_H
#define RS_BACKEND_H

/* struct rs_backend is opaque here: callers go through the functions
 * below and ask backend_supports what an engine can do.  The engine files
 * see inside it through backend/backend_engine.h. */

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "backend/canonical.h"
#include "backend/url.h"
#include "common/err.h"
#include "shardmap/hash.h"
#include "shardmap/pairmap.h"

struct rs_backend;

/* One value: TEXT == NULL is SQL NULL; otherwise LEN bytes (not always
 * NUL-terminated). */
struct rs_value {
	const char *text;
	size_t len;
};

struct rs_column {
	char *name;
	char *type; /* as the catalog spells it: "bigint", "varchar(20)" */
	enum rs_col_kind kind;
	/* The engine computes it (GENERATED ALWAYS AS (…)): read and
	 * compared like any column, never written (PostgreSQL and MariaDB
	 * refuse a value for it); SQLite's describe leaves such columns
	 * out. */
	int generated;
};

/* A unique index or constraint of a table other than its primary key,
 * whose parts are all whole columns (no expression, prefix or predicate).
 * A split's target may hold a stale copy of a row clashing on it with a
 * newer one (steps/movers.c makes room first). */
struct rs_unique {
	int *columns; /* indexes into the table's columns, in index order */
	int n_columns;
};

/* A table as the catalog describes it.  Free with backend_table_free. */
struct rs_table_def {
	char *name;
	struct rs_column *columns; /* in the table's order */
	int n_columns;
	int *pk; /* indexes into columns, in key order */
	int n_pk;
	int64_t estimated_rows; /* from the catalog's statistics; -1 unknown
	                           (SQLite: RS_CAP_CHEAP_COUNT) */
	/* The table's foreign keys whose actions change its rows (ON
	 * DELETE or ON UPDATE CASCADE, SET NULL, SET DEFAULT) where the
	 * engine makes those changes without firing row triggers, so that
	 * a change capture cannot see them: "fk (references parent: ON
	 * DELETE CASCADE, ON UPDATE RESTRICT)", comma-separated.  NULL when
	 * there are none, and always on PostgreSQL and SQLite, whose
	 * cascades fire triggers; MariaDB and MySQL (InnoDB) fire none. */
	char *cascades;
	struct rs_unique *uniques; /* NULL when none */
	int n_uniques;
};

/* Rows of one batch: N_ROWS × N_COLS values, row-major. */
struct rs_rows {
	int n_rows;
	int n_cols;
	const struct rs_value *values;
};

/* Read the next batch of TABLE in primary-key order.  Each row returned
 * holds the primary key columns first (in key order, canonical), then
 * COLUMNS (in the engine's text form).  Key values in AFTER and UPTO are
 * canonical, as a previous read returned them: a read bounded by the last
 * key of a read starts exactly after that row.  A key with no canonical
 * form, or (SQLite, which keeps whatever a column is given) one stored
 * otherwise than its canonical form binds back, fails the read with
 * RS_EKEY naming table, column and value, rather than bound a range
 * inexactly. */
struct rs_read_request {
	const struct rs_table_def *table;
	const int *columns; /* indexes into table->columns; NULL when
	                       n_columns is 0 (key columns only) */
	int n_columns;
	const struct rs_value *after; /* NULL: from the first row; else the
	                                 n_pk key values of the last row read */
	const struct rs_value *upto;  /* NULL: to the end; else stop after
	                                 this key (inclusive), for chunks */
	int limit;                    /* at most this many rows */
};

/*
 * A shard's marker: the small durable record every shard a run touches
 * carries of that run (table reshard_marker, one row per plan name), so
 * that the journal is not the only record.  Written in the same
 * transaction as the fence (where the engine has transactional DDL),
 * updated at publish, after purge and at the end; abort sets it to
 * "aborted".
 */
struct rs_marker {
	char plan[128];      /* the plan's name */
	char run_id[40];     /* the run's id (hex), the same on every shard */
	char state[16];      /* "fenced", "published", "purged", "done",
	                        "aborted" */
	int64_t epoch;       /* the routing epoch published, 0 before */
	char updated_at[32]; /* UTC "YYYY-MM-DD HH:MM:SS", set by the shard */
};

typedef void (*rs_backend_cb)(struct rs_backend *backend, int status,
                              const struct rs_err *err, void *arg);
typedef void (*rs_describe_cb)(struct rs_backend *backend, int status,
                               const struct rs_err *err,
                               struct rs_table_def *table, void *arg);
typedef void (*rs_rows_cb)(struct rs_backend *backend, int status,
                           const struct rs_err *err, const struct rs_rows *rows,
                           void *arg);
typedef void (*rs_count_cb)(struct rs_backend *backend, int status,
                            const struct rs_err *err, int64_t value, void *arg);
/* How far a replica is, after one slice of catch-up (backend_catch_up). */
struct rs_replication {
	int reached;      /* it has everything up to the position */
	int64_t behind;   /* how far behind, in UNIT; -1 unknown */
	int64_t total;    /* for progress: the whole, in UNIT; -1 unknown */
	const char *unit; /* "bytes", "transactions", "pages" */
	/* When not reached: why the replica may not get there by itself
	 * (its replay paused, not receiving from its primary), for the
	 * operator; "" when nothing is seen wrong.  A replica that cannot
	 * get there at all (MariaDB: a replication thread stopped) fails
	 * the slice instead. */
	char note[240];
};

/* The most a position (backend_position) takes, NUL included. */
#define RS_POSITION_SIZE 256

typedef void (*rs_position_cb)(struct rs_backend *backend, int status,
                               const struct rs_err *err, const char *position,
                               void *arg);
typedef void (*rs_replication_cb)(struct rs_backend *backend, int status,
                                  const struct rs_err *err,
                                  const struct rs_replication *state,
                                  void *arg);
typedef void (*rs_markers_cb)(struct rs_backend *backend, int status,
                              const struct rs_err *err,
                              const struct rs_marker *markers, int n,
                              void *arg);

struct rs_backend_config {
	const char *shard;        /* shard name */
	const char *url;          /* as written in the plan */
	const char *password_env; /* NULL or the variable with the password */
	const char *base_dir;     /* for relative sqlite paths */
	int connect_timeout_ms;   /* 0: 10,000 */
	int op_timeout_ms;        /* 0: BACKEND_OP_TIMEOUT_MS */
};

/*
 * The default bound of one operation: 60 s.  A batch (a few thousand
 * rows) takes milliseconds to a second on a healthy shard, and lock waits
 * end on their own after the engines' 2 s lock timeout, so 60 s is only
 * reached by a shard that stopped answering.  Without it such a shard
 * would hold an operation forever: a server process that is stopped or
 * wedged keeps its TCP connection open (the kernel still acknowledges), so
 * TCP never reports it.  The plan's options.operation_timeout_seconds
 * replaces it.
 */
#define BACKEND_OP_TIMEOUT_MS 60000

/* Make a backend for one shard on LOOP: parse the URL, resolve the
 * password, pick the engine.  No I/O yet.  Returns 0 and *BACKEND, or
 * RS_EUSAGE (bad URL, unset password variable) / RS_ENOMEM with ERR
 * filled.  Release with backend_close (even if never connected). */
int backend_new(uv_loop_t *loop, const struct rs_backend_config *config,
                struct rs_backend **backend, struct rs_err *err);

/* Connect, giving up after connect_timeout_ms (RS_ECONNECT naming the shard
 * and its masked URL).  On connection the session is set up for reshard:
 * UTC time zone, text results, the engine's lock timeout. */
int backend_connect(struct rs_backend *backend, rs_backend_cb cb, void *arg,
                    struct rs_err *err);

/*
 * Bound every operation of BACKEND started from now on by MS milliseconds
 * (MS > 0), or by the configured bound again (MS <= 0).  For a step that
 * knowingly waits longer than any batch should (a replica's catch-up, a
 * promotion, counting a whole table): set its own bound before the
 * operation and put the configured one back after it.  Cannot fail; must
 * not be called while an operation runs (the running one keeps its
 * bound either way).
 */
void backend_set_op_timeout(struct rs_backend *backend, int ms);

/* Describe TABLE: columns in order with types and kinds, primary key, row
 * estimate from the catalog (-1 where there is none: SQLite).  RS_ESCHEMA when
 * the table does not exist or has no primary key.  On success the callback owns
 * TABLE (backend_table_free). */
int backend_describe(struct rs_backend *backend, const char *table,
                     rs_describe_cb cb, void *arg, struct rs_err *err);

/* Read one batch (see struct rs_read_request).  An empty batch means the
 * table has no more rows after REQUEST->after. */
int backend_read_batch(struct rs_backend *backend,
                       const struct rs_read_request *request, rs_rows_cb cb,
                       void *arg, struct rs_err *err);

/* Run SQL (one statement, no parameters, no result rows wanted). */
int backend_exec(struct rs_backend *backend, const char *sql, rs_backend_cb cb,
                 void *arg, struct rs_err *err);

/*
 * Write ROWS into TABLE with an idempotent upsert on its primary key, all
 * in one transaction: a row that exists is overwritten, one that does not
 * is inserted, so repeating a batch after a crash converges.  ROWS holds
 * every column of TABLE in the table's order, each value in the canonical
 * form of backend/canonical.h for its column's kind (bytes as hex, booleans
 * t/f, timestamps ISO-8601 …), which the engine turns into its own input
 * form: rows read from one engine can be written to another.  Values are
 * bound or escaped by the driver.  RS_EQUERY on failure (nothing written).
 */
int backend_upsert(struct rs_backend *backend, const struct rs_table_def *table,
                   const struct rs_rows *rows, rs_backend_cb cb, void *arg,
                   struct rs_err *err);

/*
 * Write ROWS (as for backend_upsert) into TABLE when none of their keys is
 * there yet: a copy's first pass onto a target that started empty.  Where
 * the engine has a bulk path that is faster for new rows (PostgreSQL's
 * COPY FROM STDIN, MariaDB's LOAD DATA LOCAL INFILE served from memory)
 * it takes it, one statement, all or nothing, and a key that exists fails
 * it with RS_EQUERY and SQLSTATE 23505 (PostgreSQL) or 23000 (MariaDB,
 * also when the server takes no LOAD DATA LOCAL), nothing written
 * (backend_load_conflict): the caller then upserts the same rows.
 * Elsewhere it is backend_upsert, which cannot fail so.
 */
int backend_load(struct rs_backend *backend, const struct rs_table_def *table,
                 const struct rs_rows *rows, rs_backend_cb cb, void *arg,
                 struct rs_err *err);

/* Whether ERR is backend_load's failure that an upsert of the same rows
 * puts right (a key that exists). */
int backend_load_conflict(const struct rs_err *err);

/* Delete from TABLE the rows whose primary keys are KEYS (n_pk canonical
 * values per row, in key order), in one transaction.  Keys that match no
 * row are ignored (repeating a batch converges).  RS_EQUERY on failure
 * (nothing deleted). */
int backend_delete_keys(struct rs_backend *backend,
                        const struct rs_table_def *table,
                        const struct rs_rows *keys, rs_backend_cb cb, void *arg,
                        struct rs_err *err);

/* Delete like backend_delete_keys, but without recording the deletes in
 * TABLE's delete log (backend_delete_log): for purge, whose deletes are
 * of rows this shard no longer owns, keys no purge ever looks up in this
 * shard's log.  Other writers' deletes are still recorded, and a failure
 * leaves the log as it was.  Without a delete log, backend_delete_keys. */
int backend_purge_keys(struct rs_backend *backend,
                       const struct rs_table_def *table,
                       const struct rs_rows *keys, rs_backend_cb cb, void *arg,
                       struct rs_err *err);

/* The exact number of rows in TABLE (value of the callback).  The
 * callback gets RS_ESCHEMA when TABLE does not exist, on every engine,
 * and RS_EQUERY or RS_ECONNECT when it could not be counted. */
int backend_count(struct rs_backend *backend, const char *table, rs_count_cb cb,
                  void *arg, struct rs_err *err);

/*
 * The fence: with ON, install triggers on each of the N_TABLES TABLES that
 * reject every insert, update and delete with MESSAGE ("writes paused by
 * reshard: run orders-2x, step fence"); with ON = 0, remove them.  Both are
 * idempotent and persistent: the triggers live in the database, survive a
 * crash of reshard and are removed only by an explicit call.  MARKER (may
 * be NULL) is written as the shard's marker in the same transaction, so a
 * fenced shard always says which run fenced it.  All or nothing.
 *
 * ROWS (NULL: every row) narrows the fence to the rows that move, where
 * backend_supports RS_CAP_FENCE_ROWS (else RS_EUSAGE): a write is rejected
 * only when the shard key of the row, before or after it, hashes to a point
 * of ROWS->moving (or has no point: a NULL or a key the hash refuses);
 * writes to every other row go through.  TRUNCATE is rejected whole.  The
 * server computes the point itself, so ROWS->hash is one it can compute
 * (backend_fence_rows_hash) and each key column a text or integer one.
 * ROWS and what it points to are borrowed until the callback.
 */
struct rs_fence_rows {
	enum rs_hash hash;
	const struct rs_moving *moving; /* the points that move */
	const char *const *keys;        /* per table: its shard key column */
	const enum rs_col_kind *kinds;  /* per table: that column's kind */
};

int backend_fence(struct rs_backend *backend, const char *const *tables,
                  int n_tables, const char *message, int on,
                  const struct rs_marker *marker,
                  const struct rs_fence_rows *rows, rs_backend_cb cb, void *arg,
                  struct rs_err *err);

/* Whether a shard of ENGINE is fenced to the rows that move under HASH
 * (when its shard keys are text or integer columns), without a backend:
 * for the dry-run, which says what the fence will hold. */
int backend_engine_fences_rows(enum rs_engine engine, enum rs_hash hash);

/* Whether a fence of rows (RS_CAP_FENCE_ROWS) on BACKEND can use HASH on
 * a key of KIND: text and integer keys, all four hashes on PostgreSQL
 * and MariaDB.  The same holds for the ownership guard. */
int backend_fence_rows_hash(const struct rs_backend *backend, enum rs_hash hash,
                            enum rs_col_kind kind);

/*
 * The ownership guard (RS_CAP_GUARD): from unfence until purge is done, a
 * shard that gave rows away rejects writes to the rows it no longer owns,
 * so that a router still on the old routing fails loudly instead of
 * writing where the row is about to be purged.  Like the fence of rows,
 * a trigger computes the point of the row's shard key (OLD's and NEW's)
 * with HASH; when it is one of OWNED[i] the write fails with MESSAGES[i]
 * (which names that owner and the routing epoch).  Rows whose key has no
 * point, and the shard's own rows, go through.  Purge's own deletes
 * (backend_purge_keys) pass.
 */
struct rs_guard {
	enum rs_hash hash;
	const char *const *keys;       /* per table: its shard key column */
	const enum rs_col_kind *kinds; /* per table: that column's kind */
	int n_owners;
	const struct rs_moving *owned; /* [n_owners]: the points of each */
	const char *const *messages;   /* [n_owners]: what a write is told */
};

/* The statements that put GUARD on the N_TABLES TABLES, or with GUARD NULL
 * take it off, each to run in order with backend_exec: *STMTS (N_STMTS of
 * them) for backend_guard_sql_free.  Each is idempotent, so a list cut
 * short converges when run again.  Built with the connection's own
 * escaping: BACKEND must be connected.  RS_EUSAGE where the engine has no
 * guard, or a hash or key kind the server cannot compute; RS_ENOMEM, or
 * RS_EVALUE when the driver refuses to escape a message. */
int backend_guard_sql(struct rs_backend *backend, const char *const *tables,
                      int n_tables, const struct rs_guard *guard, char ***stmts,
                      int *n_stmts, struct rs_err *err);
void backend_guard_sql_free(char **stmts, int n_stmts);

/* Every marker the shard carries (none when it never took part in a
 * run): the callback's array is borrowed for the call.  RS_EUSAGE when the
 * engine has no markers (backend_supports RS_CAP_MARKERS tells beforehand). */
int backend_markers(struct rs_backend *backend, rs_markers_cb cb, void *arg,
                    struct rs_err *err);

/* Write MARKER (insert, or replace the row of its plan), durably. */
int backend_mark(struct rs_backend *backend, const struct rs_marker *marker,
                 rs_backend_cb cb, void *arg, struct rs_err *err);

/* Whether the shard exists already (1) or not (0): a SQLite shard whose
 * file is missing or empty is one reshard has yet to make (a replica);
 * servers always exist.  No I/O beyond a stat. */
int backend_exists(const struct rs_backend *backend);

/*
 * The delete log of TABLE: with ON = RS_DELETE_LOG_ON, a table named by
 * backend_delete_log_name holding TABLE's primary key columns, and
 * triggers that record there, in the writer's own transaction, the key of
 * every row deleted from TABLE (or moved away from its key by an update);
 * with RS_DELETE_LOG_OFF, both removed; with RS_DELETE_LOG_EMPTY, the
 * entries deleted and the triggers kept: a plain DELETE, no DDL, so no
 * lock on TABLE to wait for (an autovacuum, a long transaction).
 * Idempotent.  Purge reads it to tell a row the application deleted on its
 * new owner from a row the new owner never saw.
 */
#define RS_DELETE_LOG_OFF   0
#define RS_DELETE_LOG_ON    1
#define RS_DELETE_LOG_EMPTY 2
int backend_delete_log(struct rs_backend *backend,
                       const struct rs_table_def *table, int on,
                       rs_backend_cb cb, void *arg, struct rs_err *err);

/* The name of TABLE's delete log into BUF ("reshard_del_orders_1"). */
void backend_delete_log_name(const char *table, char *buf, size_t size);

/*
 * Change capture, for a split (RS_CAP_CAPTURE): the rows a copy has taken
 * may change under it; capture records which, so that catch-up can copy
 * them again.
 *
 * backend_capture with ON makes TABLE's change log, the table named by
 * backend_change_log_name ("reshard_chg_orders"), and the row-level
 * triggers that fill it in the writer's own transaction.  Its columns are
 * reshard_pos, an integer that increases with every row logged (its
 * primary key: PostgreSQL an identity column, MariaDB AUTO_INCREMENT,
 * SQLite INTEGER PRIMARY KEY AUTOINCREMENT), then TABLE's primary key
 * columns and, when it is not one of them, the shard key column
 * TABLE->columns[KEY_COLUMN], each with its name and declared type.  An
 * insert logs NEW's values, a delete OLD's, an update OLD's (when a key
 * or shard key column changes) and NEW's, OLD first.  Positions need not
 * become visible in order (PostgreSQL's identity values are taken before
 * commit): a reader reads the log from its start and trims what it has
 * applied, it never skips past a position.  With ON = 0, the triggers and
 * the change log are dropped.  Both idempotent; all or nothing where the
 * engine has transactional DDL.  Once it has returned, every write
 * committed to TABLE is in the log: the triggers wait for (PostgreSQL,
 * MariaDB: take the table's lock) or exclude (SQLite: one writer) the
 * writers under way.  RS_ESCHEMA when the log's name is too long for
 * the engine.
 *
 * The change log is read with backend_read_batch and trimmed with
 * backend_delete_keys like any table, after backend_describe of its
 * name.
 *
 * backend_read_keys reads the rows of REQUEST->table whose primary keys
 * are REQUEST->keys (n_pk canonical values a row): each row found (in no
 * promised order) holds the primary key columns (canonical) then
 * REQUEST->columns
 * in the engine's text form, as backend_read_batch returns them.  Keys
 * that match no row are left out.  One statement (or, SQLite, one read
 * transaction), so the rows are one consistent state.  RS_EKEY for a key
 * the engine cannot hold.
 */
int backend_capture(struct rs_backend *backend,
                    const struct rs_table_def *table, int key_column, int on,
                    rs_backend_cb cb, void *arg, struct rs_err *err);

/* The name of TABLE's change log into BUF ("reshard_chg_orders_1"). */
void backend_change_log_name(const char *table, char *buf, size_t size);

struct rs_keys_request {
	const struct rs_table_def *table;
	const int *columns; /* indexes into table->columns; NULL when
	                       n_columns is 0 (key columns only) */
	int n_columns;
	const struct rs_rows *keys; /* n_pk canonical values a row */
};

int backend_read_keys(struct rs_backend *backend,
                      const struct rs_keys_request *request, rs_rows_cb cb,
                      void *arg, struct rs_err *err);

/* Whether TABLE carries reshard's fence right now (value 1 or 0). */
int backend_fenced(struct rs_backend *backend, const char *table,
                   rs_count_cb cb, void *arg, struct rs_err *err);

/* What backend_promoted says a replica is. */
enum rs_replica_state {
	RS_REPLICA_FOLLOWS = 0,  /* replicates, or will by itself */
	RS_REPLICA_PROMOTED = 1, /* a primary of its own, writable */
	/* Set up to replicate, but a replication thread is stopped: by a
	 * promotion cut short after its first statement (MariaDB's STOP
	 * SLAVE), or by an error.  It applies nothing until started again
	 * (backend_resume_replication). */
	RS_REPLICA_STOPPED = 2,
	/* Replicates from nothing any more, yet read-only still: a
	 * promotion cut short after it dropped the replication settings
	 * (MariaDB's RESET SLAVE ALL). */
	RS_REPLICA_DETACHED = 3,
};

/*
 * Replication, for a doubling: the replica of each primary is brought to
 * the primary's position after the fence, then promoted.  Bounded,
 * position-based operations, so that the step can journal the position,
 * show the lag, honour a stop request between slices and resume a
 * promotion that already happened.  A position is the primary's own text
 * (PostgreSQL: a WAL location; MariaDB: a GTID list; SQLite: its size in
 * pages — a SQLite replica is a copy reshard makes, under the fence).
 * PRIMARY and REPLICA are of one engine; backend_supports(primary,
 * RS_CAP_REPLICATION) says whether the engine has them in this version.
 *
 * backend_replica_check: preflight's proof that REPLICA can become a copy
 * of PRIMARY (a server replica streams from exactly that primary, no more
 * than MAX_LAG_MS behind, and can be promoted without harm to it; a
 * SQLite replica file does not exist yet or is empty).  RS_EUSAGE with
 * the fix when not.
 *
 * backend_position: PRIMARY's position now (after the fence, every write
 * is before it), into the callback's POSITION (at most RS_POSITION_SIZE
 * bytes with its NUL, valid during the callback).
 *
 * backend_catch_up: one slice of at most about SLICE_MS of bringing REPLICA
 * to POSITION (a server replica: waiting for its replay; SQLite: copying
 * pages with the online backup API, the copy's state kept in PRIMARY
 * between slices and dropped when PRIMARY closes).  The callback says
 * whether it is reached and how far behind it is.  Call again until
 * reached.
 *
 * backend_promote: make REPLICA a primary that accepts writes (SQLite:
 * nothing to do).  backend_promoted: what it is now, an enum
 * rs_replica_state: RS_REPLICA_PROMOTED once it is a primary already, so
 * that a resumed step does not promote twice; PostgreSQL and SQLite say
 * only that or RS_REPLICA_FOLLOWS, MariaDB also what a promotion cut
 * short leaves (RS_REPLICA_STOPPED, RS_REPLICA_DETACHED), from which
 * backend_promote finishes it.
 *
 * backend_resume_replication: start the replication of REPLICA, set up
 * but stopped (RS_REPLICA_STOPPED), again (MariaDB: START SLAVE); it
 * then applies what its primary wrote meanwhile.  Repeats without harm.
 * Only where backend_supports RS_CAP_RESUME_REPLICATION, else RS_EUSAGE.
 *
 * backend_promote_ready: before the fence, do what would otherwise make
 * REPLICA's promotion slow under it, with writes still open; the replica
 * goes on replicating.  MariaDB: its relay log is started again twice,
 * so that the SQL thread, passing both rotations, deletes the log it has
 * applied (a 5 M-row load leaves about 450 MB there, which RESET SLAVE
 * ALL deleted under the fence in 0.2 s).  Repeats without harm.  Only
 * where backend_supports RS_CAP_PROMOTE_READY, else RS_EUSAGE; like every
 * replication operation, refused (RS_EUSAGE) on a MySQL server, which
 * preflight refuses as a replica first.
 *
 * backend_release: after REPLICA's promotion, free what PRIMARY still
 * keeps for it (PostgreSQL: the physical replication slot it streamed
 * from, which would otherwise hold WAL until the disk fills).  The
 * callback's POSITION argument is a note saying what was freed, "" when
 * nothing was left (a repeat does nothing).  Only where backend_supports
 * RS_CAP_RELEASE_REPLICA, else RS_EUSAGE.
 */
int backend_replica_check(struct rs_backend *primary,
                          struct rs_backend *replica, int max_lag_ms,
                          rs_backend_cb cb, void *arg, struct rs_err *err);
int backend_position(struct rs_backend *primary, rs_position_cb cb, void *arg,
                     struct rs_err *err);
int backend_catch_up(struct rs_backend *primary, struct rs_backend *replica,
                     const char *position, int slice_ms, rs_replication_cb cb,
                     void *arg, struct rs_err *err);
int backend_promote(struct rs_backend *replica, rs_backend_cb cb, void *arg,
                    struct rs_err *err);
int backend_promoted(struct rs_backend *replica, rs_count_cb cb, void *arg,
                     struct rs_err *err);
int backend_resume_replication(struct rs_backend *replica, rs_backend_cb cb,
                               void *arg, struct rs_err *err);
int backend_promote_ready(struct rs_backend *replica, rs_backend_cb cb,
                          void *arg, struct rs_err *err);
int backend_release(struct rs_backend *primary, struct rs_backend *replica,
                    rs_position_cb cb, void *arg, struct rs_err *err);

/* How far behind the replicas streaming FROM this shard are (not the
 * shard's own replica of the plan: replicas of its own, that a purge's
 * deletes flood): the callback's value is the largest replay lag in
 * milliseconds, -1 when no replica streams from it or none lags.  Only
 * where backend_supports RS_CAP_DOWNSTREAM_LAG, else RS_EUSAGE. */
int backend_downstream_lag(struct rs_backend *backend, rs_count_cb cb,
                           void *arg, struct rs_err *err);

/* What backend_source_check says of a split's source. */
enum rs_source_state {
	RS_SOURCE_WRITABLE = 0, /* a primary the applications write to */
	/* It applies another server's writes: a PostgreSQL standby, a
	 * MariaDB replica whose SQL thread runs (Slaves_running).  Those
	 * rows fire no trigger: neither the fence nor the capture sees
	 * them. */
	RS_SOURCE_APPLYING = 1,
	RS_SOURCE_READ_ONLY = 2, /* read-only: not where they write */
};

/* Whether BACKEND can be a split's source (the callback's value, an enum
 * rs_source_state).  Asked without any privilege beyond a connection;
 * where backend_supports RS_CAP_SOURCE_CHECK (not SQLite, whose file has
 * no replication; not MySQL, whose catalog differs), else RS_EUSAGE. */
int backend_source_check(struct rs_backend *backend, rs_count_cb cb, void *arg,
                         struct rs_err *err);

/*
 * A table made again elsewhere: for a split whose target lacks a table and
 * whose plan lets reshard create it (options.create_tables), from the
 * definition of the same table on a source of the same engine.
 *
 * backend_table_sql reads the definition of TABLE on BACKEND and hands the
 * callback the statements that make it under the name AS on another
 * database of the same engine.  CREATE makes the table with its columns
 * (types, collations, defaults, NOT NULL), primary key and checks;
 * UNIQUES[i] each make one unique index other than the primary key, to
 * run right after CREATE, before any row is written (the copy's writes
 * then delete a stale copy that holds a value another row now has,
 * movers_make_room, where an index built after the copy would fail on it);
 * INDEXES[i] each make one other secondary index, to run once the rows
 * are in (a bulk load is faster without them).  Both do nothing when
 * their index is there already (a step resumed), so they may run again;
 * DROP removes the
 * table AS, for an abort.  LEFT_OUT says, a line each, what is not made
 * again: foreign keys (they would point at another shard's rows) and
 * triggers.  The callback owns SQL (backend_table_sql_free).
 *
 * RS_ESCHEMA when TABLE does not exist or cannot be made again this way
 * (a PostgreSQL partitioned table; a default drawn from a sequence, which
 * lives on its own server), saying why; RS_EUSAGE where the engine cannot
 * (backend_supports RS_CAP_CREATE_TABLE tells beforehand).
 */
struct rs_table_sql {
	char *create;
	char **uniques;
	int n_uniques;
	char **indexes;
	int n_indexes;
	char **left_out;
	int n_left_out;
	char *drop;
};

typedef void (*rs_table_sql_cb)(struct rs_backend *backend, int status,
                                const struct rs_err *err,
                                struct rs_table_sql *sql, void *arg);

int backend_table_sql(struct rs_backend *backend, const char *table,
                      const char *as, rs_table_sql_cb cb, void *arg,
                      struct rs_err *err);
void backend_table_sql_free(struct rs_table_sql *sql);

/* What an engine can do in this version, for callers that must choose
 * (instead of testing engines or slots). */
enum rs_capability {
	RS_CAP_REPLICATION, /* backend_replica_check … backend_promoted */
	RS_CAP_MARKERS,     /* backend_markers, backend_mark */
	RS_CAP_DELETE_LOG,  /* backend_delete_log */
	RS_CAP_SCAN,        /* backend_scan_begin … */
	/* The replica is a database reshard makes (a SQLite file), so an
	 * abort removes it; else it is a server that only loses the
	 * fence. */
	RS_CAP_MADE_REPLICA,
	RS_CAP_RELEASE_REPLICA,    /* backend_release */
	RS_CAP_RESUME_REPLICATION, /* backend_resume_replication */
	RS_CAP_PROMOTE_READY,      /* backend_promote_ready */
	RS_CAP_DOWNSTREAM_LAG,     /* backend_downstream_lag */
	RS_CAP_SOURCE_CHECK,       /* backend_source_check */
	RS_CAP_CAPTURE,            /* backend_capture, backend_read_keys */
	RS_CAP_CREATE_TABLE,       /* backend_table_sql */
	RS_CAP_FENCE_ROWS,         /* backend_fence of the rows that move */
	RS_CAP_GUARD,              /* backend_guard_sql */
	/* A connection worth keeping idle for later work: connecting costs
	 * a server process and an authentication, and the database behind
	 * it is not replaced while it is open (a server, not a file). */
	RS_CAP_KEEP_IDLE,
	/* Two loads into one table on two connections go on at once, and
	 * faster than one after the other (PostgreSQL: a server process
	 * each; bench/split measured no gain on MariaDB, 0.80x against
	 * 0.79x of LOAD DATA, so it keeps one; a SQLite file takes one
	 * writer at a time). */
	RS_CAP_CONCURRENT_LOADS,
	/* Counting a table's rows exactly (backend_count) costs little
	 * beside reading them, and the catalog keeps no estimate (a local
	 * file): describe leaves estimated_rows at -1, and whoever wants a
	 * total before a walk (the live dry-run's progress) counts. */
	RS_CAP_CHEAP_COUNT,
};

int backend_supports(const struct rs_backend *backend, enum rs_capability cap);

/* The engine's name: "postgresql", "mysql", "sqlite". */
const char *backend_engine(const struct rs_backend *backend);

/* Remove the database of BACKEND, one reshard made (RS_CAP_MADE_REPLICA:
 * a SQLite file and its -wal and -shm), with no connection open to it.
 * Synchronous.  Returns 0, also when it is gone already; RS_EIO with the
 * reason; RS_EUSAGE for a database reshard did not make. */
int backend_remove(struct rs_backend *backend, struct rs_err *err);

/* Make the database of BACKEND, empty, where reshard can make one
 * (RS_CAP_MADE_REPLICA: a SQLite file; the demo's shards), replacing one
 * there.  Synchronous.  Returns 0, RS_EIO with the reason, RS_EUSAGE for a
 * server. */
int backend_create(struct rs_backend *backend, struct rs_err *err);

/*
 * The unordered snapshot scan: every row of a table, in no particular
 * order, without the primary key (for the live dry-run, which needs
 * neither key order nor resumability).  Cheaper than read_batch where the
 * engine supports it: a sequential scan, no key columns shipped.
 *
 * backend_scan_begin starts reading COLUMNS (N_COLUMNS >= 1 indexes into
 * TABLE->columns) of every row of TABLE as one consistent snapshot
 * (PostgreSQL: a REPEATABLE READ READ ONLY transaction holding a cursor).
 * TABLE must outlive the scan.  Then backend_scan_next, one at a time,
 * hands the next batch of at most LIMIT rows, each holding only COLUMNS in
 * their order (no key columns); a batch may be shorter than LIMIT before
 * the end, and an empty batch is the end.  backend_scan_end finishes the
 * scan, also early (before the empty batch), and the backend is then ready
 * for other operations.  Between scan_begin and scan_end only scan_next,
 * scan_end and backend_close may be called.  A failed scan_begin or
 * scan_next has already ended the scan (its transaction rolled back; a
 * lost connection is RS_ECONNECT): scan_end is then not needed, and is
 * harmless.  RS_EUSAGE when the engine lacks the scan (backend_supports
 * RS_CAP_SCAN tells beforehand); RS_EQUERY when a statement fails.
 */
int backend_scan_begin(struct rs_backend *backend,
                       const struct rs_table_def *table, const int *columns,
                       int n_columns, rs_backend_cb cb, void *arg,
                       struct rs_err *err);
int backend_scan_next(struct rs_backend *backend, int limit, rs_rows_cb cb,
                      void *arg, struct rs_err *err);
int backend_scan_end(struct rs_backend *backend, rs_backend_cb cb, void *arg,
                     struct rs_err *err);

/* The text form BACKEND's values arrive in, for canonical_value. */
enum rs_canon_src backend_canon_src(const struct rs_backend *backend);

/* Close the connection and free BACKEND; CB (may be NULL) is called once
 * everything is released, with BACKEND NULL (it is gone) and status 0.
 * Works on a backend that never connected or whose connection failed.
 * Must not be called while an operation is running. */
void backend_close(struct rs_backend *backend, rs_backend_cb cb, void *arg);

void backend_table_free(struct rs_table_def *table);

/* For an engine's describe: set TABLE->uniques from LISTS, one a column
 * (NULL for none): what the catalog says of the unique indexes (other
 * than the primary key) column I is part of, as comma-separated entries
 * "ID:POSITION:PARTS": the index's id (digits), the column's 1-based
 * position in it, its number of key parts; POSITION 0 for a part that is
 * only a prefix of the column.  An index with a prefix, a part that is no
 * column of LISTS (an expression, a column describe leaves out) or a part
 * missing is left out: making room on it could delete a row that does not
 * clash.  Returns 0 or RS_ENOMEM (TABLE then without uniques). */
int backend_table_uniques(struct rs_table_def *table, const char *const *lists);

/* Fill ERR for a failure on BACKEND: "shard NAME (MASKED-URL): MESSAGE",
 * with any secret in MESSAGE masked.  Returns CODE. */
int backend_fail(const struct rs_backend *backend, struct rs_err *err, int code,
                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
#ifdef __clang_analyzer__
/* As rs_err_set (common/err.h): the result is CODE. */
#define backend_fail(backend, err, code, ...)                                  \
	(backend_fail((backend), (err), (code), __VA_ARGS__), (code))
#endif

#endif
