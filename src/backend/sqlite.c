/*
 * The SQLite engine behind backend.h.
 *
 * SQLite has no sockets to poll, so every call that touches the database
 * runs on libuv's thread pool (uv_queue_work): the work function does the
 * SQLite calls and records the outcome in the engine state, the after-work
 * function runs on the loop thread and calls the operation's callback.  A
 * backend runs one operation at a time, so its connection is used by one
 * thread at a time, as SQLite's multi-thread mode requires.
 *
 * Shard files must exist: a missing file is an unreachable shard, not an
 * empty one to be created.  Rows read are copied into one buffer per batch
 * before the statement is reset, so the values handed to the callback stay
 * valid for the whole call.  REAL values are read through
 * canonical_double (sqlite3_column_text would round to 15 digits).
 *
 * Writes (upsert, delete) take canonical values (backend/canonical.h) and
 * store them the way SQLite applications usually do: integers and reals as
 * numbers, booleans as 0/1, bytes as BLOBs, timestamps as
 * "YYYY-MM-DD HH:MM:SS[.ffffff]" text in UTC.  Each batch is one
 * transaction (BEGIN IMMEDIATE … COMMIT, rolled back on any error).
 *
 * A worker cannot be stopped from outside, so every operation bounds
 * itself: the loop thread gives it a deadline when it queues it (connect:
 * connect_timeout_ms; the others: backend->op_timeout_ms), and on the
 * worker a progress handler (every SQLITE_PROGRESS_OPS virtual machine
 * steps), the busy handler and the replica copy's loop look at the clock.
 * Past the deadline the progress handler interrupts the statement
 * (SQLITE_INTERRUPT, which rolls back its transaction) and the busy
 * handler stops waiting for the lock; the operation then fails with
 * RS_ECONNECT naming its bound.  The connection stays open and usable.
 * Waiting for another connection's lock is bounded on its own by
 * SQLITE_LOCK_TIMEOUT_MS, like the lock timeouts of the other engines.
 *
 * A file has one writer at a time, and a run's streams often write to the
 * same file from several connections (every source sending movers to one
 * new shard).  Left to SQLite's busy handler they poll for the lock, and
 * one of them can lose every round for the whole SQLITE_LOCK_TIMEOUT_MS
 * while the others take turns; so the process's own writers queue for a
 * file on a mutex (sqlite_writer_lock), and a connection that finds the
 * file locked while one of them holds the mutex (a reader, starting its
 * read) waits for that writer's transaction to end on the mutex, then
 * tries again at once: polling, it could lose every round to writers that
 * take turns.  Only other processes' locks are polled for.
 * Only a worker stuck inside one system call (a hung disk) is beyond
 * reach.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend_engine.h"
#include "common/strbuf.h"
#include "common/text.h"

/* What SQLite may keep in memory in one process, all connections
 * together (sqlite3_soft_heap_limit64): past it, caches shrink. */
#define SQLITE_HEAP_LIMIT (16LL * 1024 * 1024)

/* A connection's page cache, in KiB: small while it reads (walks read
 * in key order from the OS's cache, and need little more than a table's
 * interior pages), larger during a write transaction, which keeps a
 * batch's dirty pages (a purge chunk: about 150) without spilling them
 * to the file before the commit; after the commit they are released
 * (sqlite_cache_read).  Measured with bench/doubling-sqlite:
 * with 1 MiB kept by every connection, the caches of a 3,000,000-row
 * purge filled SQLITE_HEAP_LIMIT (a stream keeps its connections to
 * every shard it walked) and it peaked at 57-60 MB; with these, 33-34
 * MB, at the same speed (at 1,000,000 rows too). */
#define SQLITE_CACHE_READ_KIB  64
#define SQLITE_CACHE_WRITE_KIB 1024

#define SQLITE_LOCK_TIMEOUT_MS 2000 /* the longest wait for a lock */
#define SQLITE_PROGRESS_OPS    1000 /* VM steps between looks at the clock */
#define SQLITE_WRITER_LOCKS    64   /* mutexes the files' writers share */
#define SQLITE_DELETE_GROUP                                                    \
	100 /* keys a DELETE statement (sqlite_work_write) */

/* Statements a connection keeps prepared (sqlite_prepare_kept). */
#define SQLITE_KEPT 8

/* Replica files a process gives an early write-back (sqlite_flush_fd). */
#define SQLITE_FLUSH_FILES 64

enum sqlite_op {
	SQLITE_OP_CONNECT,
	SQLITE_OP_DESCRIBE,
	SQLITE_OP_READ,
	SQLITE_OP_EXEC,
	SQLITE_OP_UPSERT,
	SQLITE_OP_DELETE,
	SQLITE_OP_COUNT,
	SQLITE_OP_SCRIPT, /* sql, as one transaction: fence, mark, delete log */
	SQLITE_OP_MARKERS,
	SQLITE_OP_FENCED,
	SQLITE_OP_REPLICA_CHECK,
	SQLITE_OP_POSITION,
	SQLITE_OP_REPLICATE, /* one slice of the catch-up copy */
	SQLITE_OP_PROMOTE,
	SQLITE_OP_PROMOTED,
	SQLITE_OP_SCHEMA, /* table_sql: the table's rows of sqlite_schema */
	SQLITE_OP_CLOSE,
};

struct sqlite_engine {
	sqlite3 *db;
	uv_work_t work;
	enum sqlite_op op;
	int status;             /* outcome of the work function */
	struct rs_err err;      /* filled by the work function on failure */
	uint64_t deadline_ns;   /* uv_hrtime() when the operation gives up, or
	                           0: no bound (set by the loop thread before
	                           queueing, read by the worker) */
	int bound_ms;           /* the bound, for the message */
	int timed_out;          /* the worker passed the deadline */
	uint64_t busy_since_ns; /* when the current lock wait began */
	uv_mutex_t *writer;     /* the file's writers queue here (connect) */
	int writing;            /* this connection holds *writer now */
	union {
		rs_backend_cb done; /* connect, exec */
		rs_describe_cb describe;
		rs_rows_cb rows;
		rs_count_cb count;
		rs_markers_cb markers;
		rs_position_cb position;
		rs_replication_cb replication;
	} cb;
	void *arg;
	/* The statements this connection ran last (sqlite_prepare_kept):
	 * walks and purge run the same few a chunk, and preparing them
	 * again was a tenth of a purge's CPU.  Worker's only. */
	struct sqlite_kept {
		char *sql;
		sqlite3_stmt *stmt; /* reset after each use */
		uint64_t used;      /* e->kept_clock at its last use */
	} kept[SQLITE_KEPT];
	uint64_t kept_clock;
	int triggers_off;  /* SQLITE_DBCONFIG_ENABLE_TRIGGER is 0: purge */
	size_t arena_hint; /* bytes the next read's arena starts with */
	/* Operation inputs. */
	char *sql;                                  /* exec */
	char *table_name;                           /* describe */
	const struct rs_read_request *request;      /* read */
	const struct rs_keys_request *keys_request; /* read_keys, with a
	                                               request of its own */
	struct rs_read_request keys_read;           /* … that is this */
	const struct rs_table_def *write_table;     /* upsert, delete */
	const struct rs_rows *write_rows;           /* upsert, delete */
	int unlogged;     /* delete: past the table's delete log (purge_keys) */
	const char *what; /* script: what it does, for its error */
	char *replica_path; /* replica check, replicate: its file */
	int slice_ms;       /* replicate: how long one slice copies */
	/* The catch-up copy between slices (primary's engine): NULL when
	 * none is under way. */
	sqlite3 *backup_dest;
	sqlite3_backup *backup;
	int backup_fd;    /* sqlite_flush_fd's for the replica (not ours); -1 */
	int backup_left;  /* pages left after the last step, -1: none yet */
	int backup_whole; /* the rest in one step: a writer restarted it */
	struct rs_replication replication; /* replicate: how far it is */
	char position[RS_POSITION_SIZE];   /* position: the answer */
	struct rs_marker *markers;         /* markers: what was read */
	int n_markers;
	int64_t value; /* count, fenced: the answer */
	/* Operation outputs. */
	struct rs_table_def *table; /* describe */
	char *arena;                /* read: the bytes of every value */
	size_t arena_len, arena_cap;
	size_t *offsets; /* read: per value, or (size_t)-1: NULL */
	size_t *lens;
	struct rs_value *values;
	size_t values_cap;
	int n_rows, n_cols;
	void (*closed)(struct rs_backend *backend);
};

static struct sqlite_engine *
sqlite_engine(struct rs_backend *backend)
{
	return backend->engine;
}

/* Record SQLite's error for DB after a failing call. */
static int
sqlite_fail(struct rs_backend *backend, int code, const char *what)
{
	struct sqlite_engine *e = sqlite_engine(backend);
	int rc = e->db != NULL ? sqlite3_extended_errcode(e->db) : SQLITE_ERROR;

	backend_fail(backend, &e->err, code, "%s: %s", what,
	             e->db != NULL ? sqlite3_errmsg(e->db) : "no connection");
	e->err.server_errno = rc & 0xff;
	e->err.retryable = rs_err_retryable(NULL, rc & 0xff);
	return code;
}

/* Worker: whether the running operation is past its deadline (noted in
 * e->timed_out). */
static int
sqlite_past_deadline(struct sqlite_engine *e)
{
	if (e->deadline_ns == 0 || uv_hrtime() < e->deadline_ns)
		return 0;
	e->timed_out = 1;
	return 1;
}

/* Worker, SQLite's progress handler: a non-zero return interrupts the
 * running statement. */
static int
sqlite_on_progress(void *arg)
{
	return sqlite_past_deadline(arg);
}

/* Worker, SQLite's busy handler for attempt N (from 0) to take a lock
 * another connection holds: sleep a little and try again (1 = retry),
 * up to SQLITE_LOCK_TIMEOUT_MS or the deadline, whichever comes first (0:
 * SQLITE_BUSY).  The sleeps grow like those of sqlite3_busy_timeout, from
 * a tenth of a millisecond: the usual holder is one of the run's own
 * readers, whose read of a page of keys takes about a millisecond, and a
 * purge's delete that slept 1, then 2 ms for it left its stream idle
 * (80 such waits in a million-row purge). */
static int
sqlite_on_busy(void *arg, int n)
{
	static const int delays_us[] = {100,   200,   500,   1000,  2000,
	                                5000,  10000, 15000, 20000, 25000,
	                                25000, 25000, 50000, 50000};
	struct sqlite_engine *e = arg;
	uint64_t now = uv_hrtime(), waited_us, left_us;
	int n_delays = (int)(sizeof(delays_us) / sizeof(delays_us[0]));
	int delay = n < n_delays ? delays_us[n] : 100000;
	struct timespec ts;

	if (n == 0)
		e->busy_since_ns = now;
	waited_us = (now - e->busy_since_ns) / 1000;
	if (sqlite_past_deadline(e) ||
	    waited_us >= (uint64_t)SQLITE_LOCK_TIMEOUT_MS * 1000)
		return 0;
	left_us = (uint64_t)SQLITE_LOCK_TIMEOUT_MS * 1000 - waited_us;
	if (e->deadline_ns != 0 && (e->deadline_ns - now) / 1000 < left_us)
		left_us = (e->deadline_ns - now) / 1000 + 1;
	if ((uint64_t)delay > left_us)
		delay = (int)left_us;
	/* The process's own writer holds the file: wait for its
	 * transaction, then try again before the next one commits. */
	if (e->writer != NULL && !e->writing) {
		int ours = uv_mutex_trylock(e->writer) != 0;

		if (ours)
			uv_mutex_lock(e->writer);
		uv_mutex_unlock(e->writer);
		if (ours)
			return 1;
	}
	ts.tv_sec = delay / 1000000;
	ts.tv_nsec = (long)(delay % 1000000) * 1000;
	nanosleep(&ts, NULL);
	return 1;
}

/* Take (enter) or give back (leave) the file's writer mutex around a
 * write transaction (see the top of the file). */
static void
sqlite_writer_enter(struct sqlite_engine *e)
{
	if (e->writer != NULL) {
		uv_mutex_lock(e->writer);
		e->writing = 1;
	}
}

static void
sqlite_writer_leave(struct sqlite_engine *e)
{
	if (e->writer != NULL) {
		e->writing = 0;
		uv_mutex_unlock(e->writer);
	}
}

/* Worker: roll back after a failure.  Never interrupted: the deadline is
 * dropped first. */
static void
sqlite_rollback(struct sqlite_engine *e)
{
	e->deadline_ns = 0;
	sqlite3_exec(e->db, "ROLLBACK", NULL, NULL, NULL);
}

/* Worker: the prepared statement for SQL (which stays the caller's), kept
 * on the connection: prepared at its first use, else the one prepared
 * before, reset.  The least recently used of SQLITE_KEPT makes room.
 * Give it back with sqlite_release, never sqlite3_finalize.  Returns an
 * SQLite result code; on error *STMT is NULL. */
static int
sqlite_prepare_kept(struct sqlite_engine *e, const char *sql,
                    sqlite3_stmt **stmt)
{
	struct sqlite_kept *slot = &e->kept[0];
	int rc;

	*stmt = NULL;
	for (int i = 0; i < SQLITE_KEPT; i++) {
		struct sqlite_kept *k = &e->kept[i];

		if (k->sql != NULL && strcmp(k->sql, sql) == 0) {
			k->used = ++e->kept_clock;
			*stmt = k->stmt;
			return SQLITE_OK;
		}
		if (k->used < slot->used)
			slot = k;
	}
	sqlite3_finalize(slot->stmt);
	free(slot->sql);
	slot->stmt = NULL;
	slot->used = 0;
	if ((slot->sql = strdup(sql)) == NULL)
		return SQLITE_NOMEM;
	rc = sqlite3_prepare_v3(e->db, sql, -1, SQLITE_PREPARE_PERSISTENT,
	                        &slot->stmt, NULL);
	if (rc != SQLITE_OK) {
		sqlite3_finalize(slot->stmt);
		free(slot->sql);
		slot->sql = NULL;
		slot->stmt = NULL;
		return rc;
	}
	slot->used = ++e->kept_clock;
	*stmt = slot->stmt;
	return SQLITE_OK;
}

/* Worker: done with STMT of sqlite_prepare_kept (NULL: nothing), reset
 * and its values unbound, so that nothing points into a request. */
static void
sqlite_release(sqlite3_stmt *stmt)
{
	if (stmt != NULL) {
		sqlite3_reset(stmt);
		sqlite3_clear_bindings(stmt);
	}
}

/* Run the kept statement SQL (no values, no rows), as sqlite3_exec. */
static int
sqlite_exec_kept(struct sqlite_engine *e, const char *sql)
{
	sqlite3_stmt *stmt;
	int rc = sqlite_prepare_kept(e, sql, &stmt);

	if (rc == SQLITE_OK && (rc = sqlite3_step(stmt)) == SQLITE_DONE)
		rc = SQLITE_OK;
	sqlite_release(stmt);
	return rc;
}

/* Set E's page cache to KIB KiB.  Should SQLite refuse, the cache stays
 * as it was: only slower or larger. */
static void
sqlite_cache_size(struct sqlite_engine *e, int kib)
{
	char sql[64];

	snprintf(sql, sizeof(sql), "PRAGMA cache_size = -%d", kib);
	sqlite3_exec(e->db, sql, NULL, NULL, NULL);
}

/* A write transaction is over: its pages are in the file, and they go
 * (the next batch has its own), back to a reader's cache, so that a
 * stream's connections to the shards it has left hold next to
 * nothing. */
static void
sqlite_cache_read(struct sqlite_engine *e)
{
	sqlite_cache_size(e, SQLITE_CACHE_READ_KIB);
	sqlite3_db_release_memory(e->db);
}

/* Finalize the kept statements, before the connection closes. */
static void
sqlite_kept_drop(struct sqlite_engine *e)
{
	for (int i = 0; i < SQLITE_KEPT; i++) {
		sqlite3_finalize(e->kept[i].stmt);
		free(e->kept[i].sql);
		e->kept[i] = (struct sqlite_kept){0};
	}
}

/* Worker: fire triggers on this connection (ON) or not (SQLite's
 * SQLITE_DBCONFIG_ENABLE_TRIGGER, this connection's only).  Changing it
 * makes the connection's statements prepare again at their next step, so
 * it is changed only when it must be.  Returns 0 when triggers are now as
 * asked, -1 when SQLite did not change them. */
static int
sqlite_triggers(struct sqlite_engine *e, int on)
{
	int now;

	if (e->triggers_off == !on)
		return 0;
	if (sqlite3_db_config(e->db, SQLITE_DBCONFIG_ENABLE_TRIGGER, on,
	                      &now) != SQLITE_OK)
		return -1;
	e->triggers_off = !now;
	return now == on ? 0 : -1;
}

/* Append NAME as a quoted identifier: "a""b". */
static void
sql_ident(struct rs_strbuf *q, const char *name)
{
	strbuf_quoted(q, name, '"');
}

/* Append the quoted names of N columns of T (indexes COLS), with SEP
 * between them and PREFIX before each ("excluded."). */
static void
sql_columns(struct rs_strbuf *q, const struct rs_table_def *t, const int *cols,
            int n, const char *sep)
{
	for (int i = 0; i < n; i++) {
		if (i > 0)
			strbuf_str(q, sep);
		sql_ident(q, t->columns[cols[i]].name);
	}
}

/* Append N placeholders: "?, ?, ?". */
static void
sql_params(struct rs_strbuf *q, int n)
{
	for (int i = 0; i < n; i++)
		strbuf_str(q, i ? ", ?" : "?");
}

/* The process's writers of one file take turns on one of these, chosen
 * by the file's device and inode (two files may share one: they then
 * only take turns needlessly). */
static uv_mutex_t sqlite_writer_locks[SQLITE_WRITER_LOCKS];
static uv_once_t sqlite_writer_once = UV_ONCE_INIT;
static int sqlite_writer_ready; /* every mutex initialised */

/* The replica files given an early write-back (sqlite_flush_fd). */
static struct sqlite_flush_file {
	dev_t dev;
	ino_t ino;
	int fd;
} sqlite_flush_files[SQLITE_FLUSH_FILES];
static int sqlite_n_flush_files;
static uv_mutex_t sqlite_flush_lock; /* the two above */

static void
sqlite_writer_init(void)
{
	int i = 0;

	while (i < SQLITE_WRITER_LOCKS &&
	       uv_mutex_init(&sqlite_writer_locks[i]) == 0)
		i++;
	sqlite_writer_ready = i == SQLITE_WRITER_LOCKS &&
	                      uv_mutex_init(&sqlite_flush_lock) == 0;
}

/* Worker: the writer mutex of the file at PATH, or NULL (the file cannot
 * be looked at, or no mutex could be made: its writers then fall back on
 * SQLite's busy handler alone). */
static uv_mutex_t *
sqlite_writer_lock(const char *path)
{
	struct stat st;
	uint64_t id;

	uv_once(&sqlite_writer_once, sqlite_writer_init);
	if (!sqlite_writer_ready || stat(path, &st) != 0)
		return NULL;
	id = (uint64_t)st.st_dev * 0x9e3779b97f4a7c15ULL ^ (uint64_t)st.st_ino;
	return &sqlite_writer_locks[id % SQLITE_WRITER_LOCKS];
}

static void
sqlite_work_connect(struct rs_backend *backend)
{
	struct sqlite_engine *e = sqlite_engine(backend);
	const char *path = backend->url.database;
	int rc = sqlite3_open_v2(path, &e->db,
	                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
	                         NULL);

	if (rc != SQLITE_OK) {
		e->status = sqlite_fail(backend, RS_ECONNECT,
		                        "cannot open the database file");
		sqlite3_close_v2(e->db);
		e->db = NULL;
		return;
	}
	e->writer = sqlite_writer_lock(path);
	sqlite3_busy_handler(e->db, sqlite_on_busy, e);
	sqlite3_progress_handler(e->db, SQLITE_PROGRESS_OPS, sqlite_on_progress,
	                         e);
	sqlite3_extended_result_codes(e->db, 1);
	/* A run opens several connections a stream: each reads with a
	 * small page cache (sqlite_cache_size), all together held under
	 * SQLITE_HEAP_LIMIT.  Connection-local: the database itself is not
	 * changed. */
	sqlite_cache_size(e, SQLITE_CACHE_READ_KIB);
	/* Fail now, not at the first read, on a file that is not SQLite. */
	rc = sqlite3_exec(e->db, "SELECT count(*) FROM sqlite_schema", NULL,
	                  NULL, NULL);
	if (rc != SQLITE_OK) {
		e->status = sqlite_fail(backend, RS_ECONNECT,
		                        "cannot read the database file");
		sqlite3_close_v2(e->db);
		e->db = NULL;
	}
}

static void
sqlite_work_describe(struct rs_backend *backend)
{
	struct sqlite_engine *e = sqlite_engine(backend);
	struct rs_table_def *t = calloc(1, sizeof(*t));
	sqlite3_stmt *stmt = NULL;
	char **uniques = NULL;
	int n = 0, cap = 16, rc;

	if (t == NULL || (t->name = strdup(e->table_name)) == NULL ||
	    (t->columns = calloc((size_t)cap, sizeof(*t->columns))) == NULL ||
	    (uniques = calloc((size_t)cap, sizeof(*uniques))) == NULL)
		goto nomem;
	t->estimated_rows = -1;
	/* With, for each column, the unique indexes (other than the primary
	 * key, without a WHERE) it is part of, as backend_table_uniques
	 * reads them: index_list's seq, the position, the key parts (an
	 * expression part has cid -2 and matches no column). */
	rc = sqlite3_prepare_v2(
		e->db,
		"SELECT c.name, c.type, c.pk, (SELECT group_concat(l.seq || "
		"':' || (x.seqno + 1) || ':' || (SELECT count(*) FROM "
		"pragma_index_info(l.name)), ',') FROM pragma_index_list(?1) "
		"AS l, pragma_index_info(l.name) AS x WHERE l.\"unique\" AND "
		"l.origin <> 'pk' AND NOT l.partial AND x.cid = c.cid) "
		"FROM pragma_table_info(?1) AS c ORDER BY c.cid",
		-1, &stmt, NULL);
	if (rc != SQLITE_OK)
		goto fail;
	sqlite3_bind_text(stmt, 1, e->table_name, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct rs_column *c;
		const char *type = (const char *)sqlite3_column_text(stmt, 1);

		if (n == cap) {
			struct rs_column *more = realloc(
				t->columns, sizeof(*more) * (size_t)cap * 2);
			char **more_uniques =
				more == NULL ? NULL
					     : realloc(uniques,
			                               sizeof(*more_uniques) *
			                                       (size_t)cap * 2);

			if (more != NULL)
				t->columns = more;
			if (more_uniques == NULL)
				goto nomem;
			uniques = more_uniques;
			cap *= 2;
		}
		uniques[n] = NULL;
		if (sqlite3_column_type(stmt, 3) != SQLITE_NULL &&
		    (uniques[n] = strdup((const char *)sqlite3_column_text(
			     stmt, 3))) == NULL) {
			n++; /* freed with the others */
			goto nomem;
		}
		c = &t->columns[n];
		memset(c, 0, sizeof(*c));
		t->n_columns = ++n;
		c->name = strdup((const char *)sqlite3_column_text(stmt, 0));
		c->type = strdup(type != NULL ? type : "");
		if (c->name == NULL || c->type == NULL)
			goto nomem;
		c->kind = canonical_kind_sqlite(c->type);
		if (sqlite3_column_int(stmt, 2) > t->n_pk)
			t->n_pk = sqlite3_column_int(stmt, 2);
	}
	if (rc != SQLITE_DONE)
		goto fail;
	if (n == 0) {
		e->status =
			backend_fail(backend, &e->err, RS_ESCHEMA,
		                     "table %s does not exist", e->table_name);
		goto out;
	}
	if (t->n_pk == 0) {
		e->status = backend_fail(
			backend, &e->err, RS_ESCHEMA,
			"table %s has no primary key; reshard needs one to "
			"read in key order and to resume",
			e->table_name);
		goto out;
	}
	t->pk = calloc((size_t)t->n_pk, sizeof(int));
	if (t->pk == NULL)
		goto nomem;
	sqlite3_reset(stmt);
	while (sqlite3_step(stmt) == SQLITE_ROW) {
		int position = sqlite3_column_int(stmt, 2);
		const char *name = (const char *)sqlite3_column_text(stmt, 0);

		for (int i = 0; position > 0 && i < t->n_columns; i++)
			if (strcmp(t->columns[i].name, name) == 0)
				t->pk[position - 1] = i;
	}
	sqlite3_finalize(stmt);
	stmt = NULL;
	if (backend_table_uniques(t, (const char *const *)uniques) != 0)
		goto nomem;
	/* estimated_rows stays -1: SQLite keeps no count, and counting is a
	 * scan of the table (RS_CAP_CHEAP_COUNT), which a run does not need
	 * at each describe (a tenth of a million-row doubling's time). */
	e->table = t;
	t = NULL;
	goto out;
nomem:
	e->status = backend_fail(backend, &e->err, RS_ENOMEM, "out of memory");
	goto out;
fail:
	e->status = sqlite_fail(backend, RS_EQUERY, "describe failed");
out:
	sqlite3_finalize(stmt);
	backend_table_free(t);
	for (int i = 0; uniques != NULL && i < n; i++)
		free(uniques[i]);
	free(uniques);
}

/* SELECT pk…, cols… FROM t [WHERE (pk…) > (?…)] [AND (pk…) <= (?…)]
 * ORDER BY pk… LIMIT ?; with KEYS, SELECT … FROM t WHERE (pk…) = (?…). */
static char *
sqlite_read_sql(const struct rs_read_request *r, int keys)
{
	const struct rs_table_def *t = r->table;
	struct rs_strbuf q = {0};
	const char *where = " WHERE (";

	strbuf_str(&q, "SELECT ");
	sql_columns(&q, t, t->pk, t->n_pk, ", ");
	if (r->n_columns > 0) {
		strbuf_str(&q, ", ");
		sql_columns(&q, t, r->columns, r->n_columns, ", ");
	}
	strbuf_str(&q, " FROM ");
	sql_ident(&q, t->name);
	if (keys) {
		strbuf_str(&q, " WHERE (");
		sql_columns(&q, t, t->pk, t->n_pk, ", ");
		strbuf_str(&q, ") = (");
		sql_params(&q, t->n_pk);
		strbuf_str(&q, ")");
		return strbuf_finish(&q);
	}
	if (r->after != NULL) {
		strbuf_str(&q, where);
		sql_columns(&q, t, t->pk, t->n_pk, ", ");
		strbuf_str(&q, ") > (");
		sql_params(&q, t->n_pk);
		strbuf_str(&q, ")");
		where = " AND (";
	}
	if (r->upto != NULL) {
		strbuf_str(&q, where);
		sql_columns(&q, t, t->pk, t->n_pk, ", ");
		strbuf_str(&q, ") <= (");
		sql_params(&q, t->n_pk);
		strbuf_str(&q, ")");
	}
	strbuf_str(&q, " ORDER BY ");
	sql_columns(&q, t, t->pk, t->n_pk, ", ");
	strbuf_str(&q, " LIMIT ?");
	return strbuf_finish(&q);
}

/* Canonical timestamp / time text in SQLite's usual form: "T" becomes a
 * space, a trailing "Z" goes (values are UTC) and so does a zero fraction.
 * Writes at most SIZE bytes into BUF; returns the length. */
static size_t
sqlite_time_text(const struct rs_value *v, char *buf, size_t size)
{
	size_t n = v->len < size - 1 ? v->len : size - 1;

	memcpy(buf, v->text, n);
	buf[n] = '\0';
	if (n > 0 && buf[n - 1] == 'Z')
		buf[--n] = '\0';
	if (n >= 7 && strcmp(buf + n - 7, ".000000") == 0)
		buf[n -= 7] = '\0';
	if (n > 10 && buf[10] == 'T')
		buf[10] = ' ';
	return n;
}

/* SQLite's affinity of a column declared TYPE (datatype3.html §3.1), as
 * far as binding a canonical value needs it: whether SQLite keeps a
 * value as given (no type, BLOB, or a STRICT table's ANY), makes text of
 * it (TEXT), or compares and stores text that reads as a number as that
 * number (INTEGER, REAL, NUMERIC). */
enum sqlite_affinity { SQLITE_AS_GIVEN, SQLITE_AS_TEXT, SQLITE_AS_NUMBER };

static enum sqlite_affinity
sqlite_affinity(const char *type)
{
	if (type == NULL || type[0] == '\0' || strcasecmp(type, "any") == 0)
		return SQLITE_AS_GIVEN;
	if (strcasestr(type, "int") != NULL)
		return SQLITE_AS_NUMBER;
	if (strcasestr(type, "char") != NULL ||
	    strcasestr(type, "clob") != NULL ||
	    strcasestr(type, "text") != NULL)
		return SQLITE_AS_TEXT;
	if (strcasestr(type, "blob") != NULL)
		return SQLITE_AS_GIVEN;
	return SQLITE_AS_NUMBER;
}

/* A canonical decimal V of COL, a DECIMAL column of NUMERIC affinity, as
 * the number SQLite would make of its text: an integer as one, a value a
 * double holds exactly as that text (its shortest form is V) as that
 * double.  SQLite's own conversion of the text is not always the nearest
 * double (3.40: 0.656028 became 0.6560280000000001, one value in about
 * ten thousand), and the copy then differed from its source.  Returns 0
 * when bound, 1 to bind the text as it is (a DECIMAL TEXT column, which
 * keeps it; a value no double holds exactly, which SQLite converts with
 * the digits it can keep, as docs/split.md says), or RS_ENOMEM. */
static int
sqlite_bind_decimal(sqlite3_stmt *stmt, int index, const struct rs_column *col,
                    const struct rs_value *v)
{
	struct rs_canon_buf shortest = RS_CANON_BUF_INIT;
	char text[64], *end;
	long long n;
	double d;
	int same, rc;

	if (v->len >= sizeof(text) ||
	    sqlite_affinity(col->type) != SQLITE_AS_NUMBER)
		return 1;
	memcpy(text, v->text, v->len);
	text[v->len] = '\0';
	errno = 0;
	n = strtoll(text, &end, 10);
	if (*end == '\0' && end != text && errno == 0)
		return sqlite3_bind_int64(stmt, index, n) == SQLITE_OK
		               ? 0
		               : RS_ENOMEM;
	d = strtod(text, &end);
	if (*end != '\0' || end == text || !isfinite(d))
		return 1;
	if (canonical_double(d, &shortest, NULL) != 0) {
		canonical_buf_free(&shortest);
		return RS_ENOMEM;
	}
	same = shortest.len == v->len &&
	       memcmp(shortest.data, v->text, v->len) == 0;
	canonical_buf_free(&shortest);
	if (!same)
		return 1;
	rc = sqlite3_bind_double(stmt, index, d);
	return rc == SQLITE_OK ? 0 : RS_ENOMEM;
}

/* Bind canonical value V of column COL as SQLite stores it.  Returns 0, or
 * RS_EVALUE / RS_ENOMEM with the engine's error filled. */
static int
sqlite_bind_canonical(struct rs_backend *backend, sqlite3_stmt *stmt, int index,
                      const struct rs_column *col, const struct rs_value *v)
{
	struct sqlite_engine *e = sqlite_engine(backend);
	char text[64];

	if (v->text == NULL)
		return sqlite3_bind_null(stmt, index) == SQLITE_OK ? 0
		                                                   : RS_ENOMEM;
	switch (col->kind) {
	case RS_COL_INTEGER:
	case RS_COL_FLOAT:
	case RS_COL_FLOAT4:
		if (v->len < sizeof(text)) {
			char *end;

			memcpy(text, v->text, v->len);
			text[v->len] = '\0';
			if (col->kind == RS_COL_INTEGER) {
				long long n = strtoll(text, &end, 10);

				if (*end == '\0' && n != LLONG_MAX &&
				    n != LLONG_MIN)
					return sqlite3_bind_int64(stmt, index,
					                          n);
			} else {
				double d = strcmp(text, "Infinity") == 0
				                   ? HUGE_VAL
				           : strcmp(text, "-Infinity") == 0
				                   ? -HUGE_VAL
				                   : strtod(text, &end);

				if (strcmp(text, "NaN") != 0)
					return sqlite3_bind_double(stmt, index,
					                           d);
			}
		}
		break; /* out of range: kept as text */
	case RS_COL_DECIMAL: {
		int rc = sqlite_bind_decimal(stmt, index, col, v);

		if (rc <= 0)
			return rc;
		break; /* as text */
	}
	case RS_COL_BOOL:
		if (v->len == 1 && (v->text[0] == 't' || v->text[0] == 'f'))
			return sqlite3_bind_int(stmt, index, v->text[0] == 't');
		return backend_fail(backend, &e->err, RS_EVALUE,
		                    "column %s: '%.*s' is not a canonical "
		                    "boolean (t or f)",
		                    col->name, (int)(v->len > 16 ? 16 : v->len),
		                    v->text);
	case RS_COL_BYTES: {
		unsigned char *bytes = malloc(v->len / 2 + 1);
		int rc;

		if (bytes == NULL)
			return RS_ENOMEM;
		for (size_t i = 0; i < v->len; i += 2) {
			int hi = text_hex_digit(v->text[i]);
			int lo = i + 1 < v->len ? text_hex_digit(v->text[i + 1])
			                        : -1;

			if (hi < 0 || lo < 0) {
				free(bytes);
				return backend_fail(
					backend, &e->err, RS_EVALUE,
					"column %s: bytes must be given as "
					"hex pairs",
					col->name);
			}
			bytes[i / 2] = (unsigned char)(hi << 4 | lo);
		}
		rc = sqlite3_bind_blob(stmt, index, bytes, (int)(v->len / 2),
		                       SQLITE_TRANSIENT);
		free(bytes);
		return rc == SQLITE_OK ? 0 : RS_ENOMEM;
	}
	case RS_COL_TIMESTAMP:
	case RS_COL_TIMESTAMPTZ:
	case RS_COL_TIME: {
		size_t n = sqlite_time_text(v, text, sizeof(text));

		return sqlite3_bind_text(stmt, index, text, (int)n,
		                         SQLITE_TRANSIENT) == SQLITE_OK
		               ? 0
		               : RS_ENOMEM;
	}
	default:
		break;
	}
	return sqlite3_bind_text(stmt, index, v->text, (int)v->len,
	                         SQLITE_TRANSIENT) == SQLITE_OK
	               ? 0
	               : RS_ENOMEM;
}

/* Key value C of a row just read, of column T->columns[T->pk[C]], stored
 * as TYPE (SQLITE_INTEGER …) with the text *BYTES (*N bytes, as the read
 * takes it), turned canonical: *BYTES and *N are replaced by the canonical
 * text in OUT, or left alone when the text is canonical already.
 *
 * SQLite keeps whatever a column was given, so a key is taken only when
 * its canonical form binds back (sqlite_bind_canonical) to exactly the
 * value stored: a range bounded by the key must start exactly where the
 * read that returned it stopped.  A key that does not (a BLOB column
 * holding text, a timestamp written with a 'T', an uppercase uuid) fails
 * the read with RS_EKEY (e->err filled, naming table, column and both
 * forms), never a read that skips rows.  RS_ENOMEM when out of memory. */
static int
sqlite_key_canonical(struct rs_backend *backend, const struct rs_table_def *t,
                     int c, int type, const void **bytes, int *n,
                     struct rs_canon_buf *out)
{
	struct sqlite_engine *e = sqlite_engine(backend);
	const struct rs_column *col = &t->columns[t->pk[c]];
	struct rs_value canon;
	char image[64];
	size_t image_len;
	int exact;
	int rc;

	switch (col->kind) {
	case RS_COL_INTEGER:
	case RS_COL_FLOAT: /* a REAL is read as canonical_double already */
	case RS_COL_FLOAT4:
		return 0;
	case RS_COL_TEXT:
	case RS_COL_OTHER:
		/* Bound back as text: exact for a key stored as text.  A
		 * column that keeps values as given (no type, a STRICT
		 * table's ANY) keeps an integer as one (a TEXT column a
		 * BLOB), and SQLite sorts every integer below every text:
		 * bound as text '100', the range after it held no integer,
		 * and the walk ended there.  A column of NUMERIC affinity
		 * compares '100' as the number. */
		if (type == SQLITE_TEXT || type == SQLITE_NULL ||
		    (sqlite_affinity(col->type) == SQLITE_AS_NUMBER &&
		     type != SQLITE_BLOB))
			return 0;
		break;
	default:
		break;
	}
	if (type == SQLITE_NULL ||
	    (col->kind == RS_COL_DECIMAL && type == SQLITE_INTEGER))
		return 0;
	canonical_buf_clear(out);
	rc = canonical_value(col->kind, RS_SRC_SQLITE, *bytes, (size_t)*n, out,
	                     &e->err);
	if (rc == RS_ENOMEM)
		return rc;
	canon = (struct rs_value){out->data, out->len};
	switch (col->kind) {
	case RS_COL_TEXT:
	case RS_COL_OTHER:
		exact = 0; /* stored so that text does not bind it: above */
		break;
	case RS_COL_BYTES:
		exact = rc == 0 && type == SQLITE_BLOB;
		break;
	case RS_COL_BOOL:
		exact = rc == 0 && type == SQLITE_INTEGER && *n == 1;
		break;
	case RS_COL_TIME:
	case RS_COL_TIMESTAMP:
	case RS_COL_TIMESTAMPTZ:
		image_len =
			rc == 0 ? sqlite_time_text(&canon, image, sizeof(image))
				: 0;
		exact = rc == 0 && type == SQLITE_TEXT &&
		        image_len == (size_t)*n &&
		        memcmp(image, *bytes, image_len) == 0;
		break;
	default: /* bound as the text it is */
		exact = rc == 0 &&
		        (type == SQLITE_TEXT || type == SQLITE_FLOAT) &&
		        canon.len == (size_t)*n &&
		        memcmp(canon.text, *bytes, canon.len) == 0;
		break;
	}
	if (!exact) {
		static const char *const storage[] = {"?", "INTEGER", "REAL",
		                                      "TEXT", "BLOB"};
		char shown[TEXT_KEY_SHOWN_SIZE];

		text_key_shown(*bytes, (size_t)*n, shown, sizeof(shown));
		return backend_fail(
			backend, &e->err, RS_EKEY,
			"table %s: primary key column %s (%s) holds %s '%s', "
			"whose canonical %s form %s%s%s: keys travel between "
			"engines and bound key ranges in that form, so this "
			"table cannot be walked exactly; %s",
			t->name, col->name, col->type != NULL ? col->type : "",
			type >= 1 && type <= 4 ? storage[type] : "?", shown,
			canonical_kind_name(col->kind),
			rc == 0 ? "is '" : "does not exist",
			rc == 0 ? out->data : "", rc == 0 ? "'" : "",
			(col->kind == RS_COL_TEXT ||
		         col->kind == RS_COL_OTHER) &&
					type == SQLITE_INTEGER
				? "declare the column INTEGER (a table made "
				  "again) or store its keys as text"
				: "rewrite the keys in that form or declare "
				  "the "
				  "column TEXT");
	}
	*bytes = out->data;
	*n = (int)out->len;
	return 0;
}

/* Room for CAP bytes in E's arena, or for CAP values in its offsets and
 * lens: 0, or RS_ENOMEM with what E had left as it was. */
static int
sqlite_arena_room(struct sqlite_engine *e, size_t cap)
{
	char *a;

	if (cap <= e->arena_cap)
		return 0;
	if ((a = realloc(e->arena, cap)) == NULL)
		return RS_ENOMEM;
	e->arena = a;
	e->arena_cap = cap;
	return 0;
}

static int
sqlite_values_room(struct sqlite_engine *e, size_t cap)
{
	size_t *o;

	if (cap <= e->values_cap)
		return 0;
	if ((o = realloc(e->offsets, cap * sizeof(size_t))) == NULL)
		return RS_ENOMEM;
	e->offsets = o;
	if ((o = realloc(e->lens, cap * sizeof(size_t))) == NULL)
		return RS_ENOMEM;
	e->lens = o;
	e->values_cap = cap;
	return 0;
}

static int
sqlite_arena_put(struct sqlite_engine *e, const void *bytes, size_t len)
{
	if (e->arena_len + len + 1 > e->arena_cap &&
	    sqlite_arena_room(e, (e->arena_len + len + 1) * 2) != 0)
		return RS_ENOMEM;
	if (len > 0)
		memcpy(e->arena + e->arena_len, bytes, len);
	e->arena[e->arena_len + len] = '\0';
	e->arena_len += len + 1;
	return 0;
}

/* Loop thread, before a read is queued: make room in E for up to ROWS
 * rows of N_COLS values, in one allocation each.  The buffers are freed
 * after every read (sqlite_after_work); grown anew by doubling, read
 * after read, on whichever thread of the pool ran it (each has a heap
 * of its own, which keeps what is freed to it), they left those heaps
 * fragmented and each as large as the largest reads it had seen.  Made
 * here, in the loop thread's heap, what one read frees serves the next,
 * on any connection: bench/doubling-sqlite's `run --until unfence` at
 * 3,000,000 rows peaked at 44 MB with buffers grown on the pool's
 * threads, 38 MB reserved there, 33 MB reserved here.  The bytes are
 * sized from the connection's last read; on no memory nothing is
 * reserved, and the read grows its buffers as it goes (and reports the
 * error, if any). */
static void
sqlite_read_reserve(struct sqlite_engine *e, int n_cols, int rows)
{
	if (rows > 0)
		(void)sqlite_values_room(e, (size_t)rows * (size_t)n_cols);
	(void)sqlite_arena_room(e, e->arena_hint);
}

/* Worker: step STMT to its end, appending each row (the key columns of T
 * canonical, as sqlite_key_canonical takes them, then the others) to the
 * batch being read, which counts *K values so far.  Returns 0, RS_ENOMEM /
 * RS_EKEY with e->err filled, or RS_EQUERY when a step fails (SQLite's
 * error still on the connection: sqlite_fail). */
static int
sqlite_collect(struct rs_backend *backend, sqlite3_stmt *stmt,
               const struct rs_table_def *t, size_t *k,
               struct rs_canon_buf *real, struct rs_canon_buf *key)
{
	struct sqlite_engine *e = sqlite_engine(backend);
	int rc;

	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		if (*k + (size_t)e->n_cols > e->values_cap &&
		    sqlite_values_room(e, (*k + (size_t)e->n_cols) * 2) != 0)
			goto nomem;
		for (int c = 0; c < e->n_cols; c++, (*k)++) {
			char digits[TEXT_INT64_SIZE];
			const void *bytes = NULL;
			int n = 0;

			switch (sqlite3_column_type(stmt, c)) {
			case SQLITE_NULL:
				e->offsets[*k] = (size_t)-1;
				e->lens[*k] = 0;
				continue;
			case SQLITE_FLOAT:
				canonical_buf_clear(real);
				if (canonical_double(
					    sqlite3_column_double(stmt, c),
					    real, NULL) != 0)
					goto nomem;
				bytes = real->data;
				n = (int)real->len;
				break;
			case SQLITE_BLOB:
				bytes = sqlite3_column_blob(stmt, c);
				n = sqlite3_column_bytes(stmt, c);
				break;
			case SQLITE_INTEGER: /* the text sqlite3_column_text
			                      * makes, without its malloc */
				n = (int)text_int64(
					sqlite3_column_int64(stmt, c), digits);
				bytes = digits;
				break;
			default:
				bytes = sqlite3_column_text(stmt, c);
				n = sqlite3_column_bytes(stmt, c);
				break;
			}
			if (c < t->n_pk) {
				rc = sqlite_key_canonical(
					backend, t, c,
					sqlite3_column_type(stmt, c), &bytes,
					&n, key);
				if (rc != 0)
					return rc;
			}
			e->offsets[*k] = e->arena_len;
			e->lens[*k] = (size_t)n;
			if (sqlite_arena_put(e, bytes, (size_t)n) != 0)
				goto nomem;
		}
		e->n_rows++;
	}
	return rc == SQLITE_DONE ? 0 : RS_EQUERY;
nomem:
	return backend_fail(backend, &e->err, RS_ENOMEM, "out of memory");
}

/* Worker: read a batch (e->request), or the rows of some keys
 * (e->keys_request: one lookup a key, all in one read transaction). */
static void
sqlite_work_read(struct rs_backend *backend)
{
	struct sqlite_engine *e = sqlite_engine(backend);
	const struct rs_keys_request *kr = e->keys_request;
	const struct rs_read_request *r = e->request;
	const struct rs_table_def *t = r->table;
	char *sql = sqlite_read_sql(r, kr != NULL);
	sqlite3_stmt *stmt = NULL;
	struct rs_canon_buf real, key;
	int in_txn = 0;
	size_t k = 0;
	int rc;

	canonical_buf_init(&real);
	canonical_buf_init(&key);
	e->n_rows = 0;
	e->n_cols = t->n_pk + r->n_columns;
	e->arena_len = 0;
	if (sql == NULL) {
		rc = backend_fail(backend, &e->err, RS_ENOMEM, "out of memory");
		goto done;
	}
	rc = sqlite_prepare_kept(e, sql, &stmt);
	free(sql);
	if (rc != SQLITE_OK) {
		rc = rc == SQLITE_NOMEM ? RS_ENOMEM : RS_EQUERY;
		goto done;
	}
	if (kr == NULL) {
		int index = 1;

		for (int b = 0; b < 2; b++) {
			const struct rs_value *bound = b ? r->upto : r->after;

			for (int i = 0; bound != NULL && i < t->n_pk; i++) {
				rc = sqlite_bind_canonical(
					backend, stmt, index++,
					&t->columns[t->pk[i]], &bound[i]);
				if (rc != 0)
					goto done;
			}
		}
		sqlite3_bind_int(stmt, index, r->limit);
		rc = sqlite_collect(backend, stmt, t, &k, &real, &key);
		goto done;
	}
	if (sqlite3_exec(e->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
		rc = RS_EQUERY;
		goto done;
	}
	in_txn = 1;
	for (int q = 0; rc == 0 && q < kr->keys->n_rows; q++) {
		const struct rs_value *v =
			kr->keys->values + (size_t)q * (size_t)t->n_pk;

		for (int i = 0; rc == 0 && i < t->n_pk; i++)
			rc = sqlite_bind_canonical(backend, stmt, i + 1,
			                           &t->columns[t->pk[i]],
			                           &v[i]);
		if (rc == 0)
			rc = sqlite_collect(backend, stmt, t, &k, &real, &key);
		sqlite3_reset(stmt);
	}
done:
	if (rc == RS_EQUERY)
		rc = sqlite_fail(backend, RS_EQUERY, "reading rows failed");
	else if (rc == RS_ENOMEM && e->err.code != RS_ENOMEM)
		rc = backend_fail(backend, &e->err, RS_ENOMEM, "out of memory");
	sqlite_release(stmt);
	if (in_txn)
		sqlite3_exec(e->db, "COMMIT", NULL, NULL, NULL);
	canonical_buf_free(&real);
	canonical_buf_free(&key);
	e->status = rc;
}

static void
sqlite_work_exec(struct rs_backend *backend)
{
	struct sqlite_engine *e = sqlite_engine(backend);

	if (sqlite3_exec(e->db, e->sql, NULL, NULL, NULL) != SQLITE_OK)
		e->status = sqlite_fail(backend, RS_EQUERY, "statement failed");
}

/* INSERT INTO t (c…) VALUES (?…) ON CONFLICT (pk…) DO UPDATE SET c =
 * excluded.c, … (DO NOTHING when every column is in the key). */
static char *
sqlite_upsert_sql(const struct rs_table_def *t)
{
	struct rs_strbuf q = {0};
	int first = 1;

	strbuf_str(&q, "INSERT INTO ");
	sql_ident(&q, t->name);
	strbuf_str(&q, " (");
	for (int i = 0; i < t->n_columns; i++) {
		if (i > 0)
			strbuf_str(&q, ", ");
		sql_ident(&q, t->columns[i].name);
	}
	strbuf_str(&q, ") VALUES (");
	sql_params(&q, t->n_columns);
	strbuf_str(&q, ") ON CONFLICT (");
	sql_columns(&q, t, t->pk, t->n_pk, ", ");
	strbuf_str(&q, ") DO ");
	for (int i = 0; i < t->n_columns; i++) {
		int in_key = 0;

		for (int k = 0; k < t->n_pk; k++)
			in_key |= t->pk[k] == i;
		if (in_key)
			continue;
		strbuf_str(&q, first ? "UPDATE SET " : ", ");
		sql_ident(&q, t->columns[i].name);
		strbuf_str(&q, " = excluded.");
		sql_ident(&q, t->columns[i].name);
		first = 0;
	}
	if (first)
		strbuf_str(&q, "NOTHING");
	return strbuf_finish(&q);
}

/* DELETE FROM t WHERE (pk…) = (?…), or for N keys of a one-column key
 * DELETE FROM t WHERE pk IN (?, … N of them). */
static char *
sqlite_delete_sql(const struct rs_table_def *t, int n)
{
	struct rs_strbuf q = {0};

	strbuf_str(&q, "DELETE FROM ");
	sql_ident(&q, t->name);
	strbuf_str(&q, " WHERE (");
	sql_columns(&q, t, t->pk, t->n_pk, ", ");
	strbuf_str(&q, n > 1 ? ") IN (" : ") = (");
	sql_params(&q, n > 1 ? n : t->n_pk);
	strbuf_str(&q, ")");
	return strbuf_finish(&q);
}

/* The name of TABLE's delete-log trigger (sqlite_delete_log): the one
 * after a delete, or with UPDATE the one after an update of the key. */
static void
sqlite_dellog_trigger(const char *table, int update, char *buf, size_t size)
{
	snprintf(buf, size, "reshard_dellog_%s%s", update ? "u_" : "", table);
}

/* Inside the write transaction of an unlogged delete from T: keep T's
 * delete-log triggers (reshard_dellog_…, sqlite_delete_log) from firing.
 * When they are T's only triggers, triggers are turned off on this
 * connection (sqlite_triggers): no DDL, so the other connections to the
 * file keep their parsed schema and statements.  Else, so that the
 * application's own triggers still fire, the two are dropped and *LOGGED
 * set to the statements that create them again (sqlite3_free it; NULL
 * when not needed), to run before COMMIT.  In one transaction nobody else
 * can write to T or its schema meanwhile, so no other delete goes
 * unrecorded, and a failure or a crash rolls the triggers back with the
 * deletes.  Returns 0, or -1 with SQLite's error on the connection. */
static int
sqlite_log_triggers(struct sqlite_engine *e, const struct rs_table_def *t,
                    char **logged)
{
	char log[2][300];
	struct rs_strbuf drop = {0}, create = {0};
	sqlite3_stmt *stmt = NULL;
	int others = 0, dropping;
	int rc = sqlite_prepare_kept(e,
	                             "SELECT name, sql FROM sqlite_master "
	                             "WHERE type = 'trigger' AND tbl_name = ?1 "
	                             "COLLATE NOCASE ORDER BY name",
	                             &stmt);

	*logged = NULL;
	sqlite_dellog_trigger(t->name, 0, log[0], sizeof(log[0]));
	sqlite_dellog_trigger(t->name, 1, log[1], sizeof(log[1]));
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_text(stmt, 1, t->name, -1, SQLITE_STATIC);
	while (rc == SQLITE_OK && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(stmt, 0);

		rc = SQLITE_OK;
		/* Names are case-blind in SQLite, as ON T is. */
		if (name == NULL || (sqlite3_stricmp(name, log[0]) != 0 &&
		                     sqlite3_stricmp(name, log[1]) != 0)) {
			others++;
			continue;
		}
		strbuf_str(&drop, "DROP TRIGGER ");
		strbuf_quoted(&drop, name, '"');
		strbuf_str(&drop, ";");
		strbuf_str(&create, (const char *)sqlite3_column_text(stmt, 1));
		strbuf_str(&create, ";");
	}
	sqlite_release(stmt);
	if (rc == SQLITE_DONE)
		rc = drop.failed || create.failed ? SQLITE_NOMEM : SQLITE_OK;
	/* Triggers off only when the log's are all there are and SQLite
	 * says they are off; else the log's two go for this transaction. */
	dropping = rc != SQLITE_OK || others > 0 || sqlite_triggers(e, 0) != 0;
	if (dropping)
		sqlite_triggers(e, 1);
	if (rc == SQLITE_OK && dropping && drop.text != NULL)
		rc = sqlite3_exec(e->db, drop.text, NULL, NULL, NULL);
	if (rc == SQLITE_OK && dropping && create.text != NULL &&
	    (*logged = sqlite3_mprintf("%s", create.text)) == NULL)
		rc = SQLITE_NOMEM;
	strbuf_clear(&drop);
	strbuf_clear(&create);
	return rc == SQLITE_OK ? 0 : -1;
}

/* Upsert or delete a batch in one transaction.  A delete of a one-column
 * key takes SQLITE_DELETE_GROUP keys a statement: run once a row, the
 * statement costs SQLite a cursor opened and closed a row, a malloc and
 * a free under its process-wide memory mutex, which the streams' threads
 * then queue on (a fifth of a million-row purge's time).  A composite key
 * keeps one a statement: (a, b) IN (VALUES …) is a scan of the table. */
static void
sqlite_work_write(struct rs_backend *backend)
{
	struct sqlite_engine *e = sqlite_engine(backend);
	const struct rs_table_def *t = e->write_table;
	const struct rs_rows *rows = e->write_rows;
	int upsert = e->op == SQLITE_OP_UPSERT;
	int width = upsert ? t->n_columns : t->n_pk;
	int group = !upsert && t->n_pk == 1 ? SQLITE_DELETE_GROUP : 1;
	sqlite3_stmt *stmt = NULL;
	int stmt_rows = 0;   /* the rows STMT takes */
	char *logged = NULL; /* the delete log's triggers, to put back */
	int rc;

	if (rows->n_cols != width) {
		e->status = backend_fail(backend, &e->err, RS_EINTERNAL,
		                         "%s of %d values per row into %s, "
		                         "which needs %d (a bug)",
		                         upsert ? "upsert" : "delete",
		                         rows->n_cols, t->name, width);
		return;
	}
	sqlite_cache_size(e, SQLITE_CACHE_WRITE_KIB);
	rc = sqlite_exec_kept(e, "BEGIN IMMEDIATE");
	if (rc != SQLITE_OK) {
		e->status = sqlite_fail(backend, RS_EQUERY,
		                        "cannot start a transaction");
		return;
	}
	if (!upsert && e->unlogged && sqlite_log_triggers(e, t, &logged) != 0)
		goto fail;
	for (int r = 0; r < rows->n_rows; r += stmt_rows) {
		int n = rows->n_rows - r < group ? rows->n_rows - r : group;

		if (stmt == NULL || n != stmt_rows) {
			char *sql = upsert ? sqlite_upsert_sql(t)
			                   : sqlite_delete_sql(t, n);

			sqlite_release(stmt);
			stmt = NULL;
			if (sql == NULL) {
				e->status = backend_fail(backend, &e->err,
				                         RS_ENOMEM,
				                         "out of memory");
				goto rollback;
			}
			rc = sqlite_prepare_kept(e, sql, &stmt);
			free(sql);
			if (rc == SQLITE_NOMEM) {
				e->status = backend_fail(backend, &e->err,
				                         RS_ENOMEM,
				                         "out of memory");
				goto rollback;
			}
			if (rc != SQLITE_OK)
				goto fail;
			stmt_rows = n;
		}
		for (int i = 0; i < n; i++) {
			const struct rs_value *row =
				rows->values +
				(size_t)(r + i) * (size_t)rows->n_cols;

			for (int c = 0; c < width; c++) {
				const struct rs_column *col =
					&t->columns[upsert ? c : t->pk[c]];
				int brc = sqlite_bind_canonical(
					backend, stmt, i * width + c + 1, col,
					&row[c]);

				if (brc != 0) {
					if (brc == RS_ENOMEM)
						backend_fail(backend, &e->err,
						             RS_ENOMEM,
						             "out of memory");
					e->status = brc;
					goto rollback;
				}
			}
		}
		if (sqlite3_step(stmt) != SQLITE_DONE)
			goto fail;
		sqlite3_reset(stmt);
	}
	sqlite_release(stmt);
	stmt = NULL;
	if (logged != NULL &&
	    sqlite3_exec(e->db, logged, NULL, NULL, NULL) != SQLITE_OK)
		goto fail;
	if (sqlite_exec_kept(e, "COMMIT") != SQLITE_OK)
		goto fail;
	sqlite3_free(logged);
	sqlite_cache_read(e);
	return;
fail:
	e->status = sqlite_fail(backend, RS_EQUERY,
	                        upsert ? "upsert failed" : "delete failed");
rollback:
	sqlite_release(stmt);
	sqlite3_free(logged);
	sqlite_rollback(e);
	sqlite_cache_read(e);
}

/* Whether DB certainly has no table or view NAME (1), as its schema
 * says; 0 when it has one or the schema could not be read. */
static int
sqlite_table_missing(sqlite3 *db, const char *name)
{
	sqlite3_stmt *stmt = NULL;
	int missing =
		sqlite3_prepare_v2(db,
	                           "SELECT count(*) FROM sqlite_schema WHERE "
	                           "type IN ('table', 'view') AND name = ?1 "
	                           "COLLATE NOCASE",
	                           -1, &stmt, NULL) == SQLITE_OK &&
		sqlite3_bind_text(stmt, 1, name, -1, SQLITE_STATIC) ==
			SQLITE_OK &&
		sqlite3_step(stmt) == SQLITE_ROW &&
		sqlite3_column_int(stmt, 0) == 0;

	sqlite3_finalize(stmt);
	return missing;
}

static void
sqlite_work_count(struct rs_backend *backend)
{
	struct sqlite_engine *e = sqlite_engine(backend);
	struct rs_strbuf q = {0};
	sqlite3_stmt *stmt = NULL;
	char *sql;

	strbuf_str(&q, "SELECT count(*) FROM ");
	sql_ident(&q, e->table_name);
	if ((sql = strbuf_finish(&q)) == NULL) {
		e->status = backend_fail(backend, &e->err, RS_ENOMEM,
		                         "out of memory");
		return;
	}
	if (sqlite3_prepare_v2(e->db, sql, -1, &stmt, NULL) != SQLITE_OK) {
		e->status =
			sqlite_fail(backend, RS_EQUERY, "counting rows failed");
		/* As on the servers, a missing table is told apart from a
		 * count that failed (final-check: a delete log that is not
		 * there recorded nothing); not when the lookup is what
		 * failed (SQLITE_BUSY …).  sqlite_fail has the error's text
		 * already: the lookup may change the connection's. */
		if (sqlite_table_missing(e->db, e->table_name))
			e->status = e->err.code = RS_ESCHEMA;
	} else if (sqlite3_step(stmt) != SQLITE_ROW)
		e->status =
			sqlite_fail(backend, RS_EQUERY, "counting rows failed");
	else
		e->value = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	free(sql);
}

/* The fence is three triggers per table, named reshard_fence_<op>_<table>:
 * RAISE(ABORT) keeps the writer's transaction intact and gives it the
 * message.  The marker is one row per plan in reshard_marker.  Fence,
 * marker and delete log are built as one script (sqlite_script_…) run as
 * one transaction; identifiers are quoted and values escaped by
 * sqlite3_mprintf (%w, %Q, %lld): DDL takes no bound parameters. */
static const char *const sqlite_fence_ops[] = {"INSERT", "UPDATE", "DELETE"};

#define SQLITE_MARKER_TABLE                                                    \
	"CREATE TABLE IF NOT EXISTS reshard_marker ("                          \
	" plan TEXT PRIMARY KEY, run_id TEXT NOT NULL, state TEXT NOT NULL,"   \
	" epoch INTEGER NOT NULL, updated_at TEXT NOT NULL);"

/* Run the script e->sql as one transaction. */
static void
sqlite_work_script(struct rs_backend *backend)
{
	struct sqlite_engine *e = sqlite_engine(backend);
	int rc = sqlite3_exec(e->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);

	if (rc == SQLITE_OK)
		rc = sqlite3_exec(e->db, e->sql, NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(e->db, "COMMIT", NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		e->status = sqlite_fail(backend, RS_EQUERY, e->what);
		sqlite_rollback(e);
	}
}

/* Read every row of reshard_marker (none when the table is missing). */
static void
sqlite_work_markers(struct rs_backend *backend)
{
	struct sqlite_engine *e = sqlite_engine(backend);
	sqlite3_stmt *stmt = NULL;
	int rc;

	e->n_markers = 0;
	if (sqlite_table_missing(e->db, "reshard_marker"))
		return;
	/* There, or the lookup failed: this read fails the same way. */
	rc = sqlite3_prepare_v2(e->db,
	                        "SELECT plan, run_id, state, epoch, "
	                        "updated_at FROM reshard_marker ORDER BY plan",
	                        -1, &stmt, NULL);
	while (rc == SQLITE_OK || rc == SQLITE_ROW) {
		struct rs_marker *m, *grown;

		rc = sqlite3_step(stmt);
		if (rc != SQLITE_ROW)
			break;
		grown = realloc(e->markers,
		                sizeof(*grown) * (size_t)(e->n_markers + 1));
		if (grown == NULL) {
			rc = SQLITE_NOMEM;
			break;
		}
		e->markers = grown;
		m = &e->markers[e->n_markers++];
		memset(m, 0, sizeof(*m));
#define SQLITE_MARKER_COPY(field, col)                                         \
	snprintf(m->field, sizeof(m->field), "%s",                             \
	         sqlite3_column_text(stmt, col)                                \
	                 ? (const char *)sqlite3_column_text(stmt, col)        \
	                 : "")
		SQLITE_MARKER_COPY(plan, 0);
		SQLITE_MARKER_COPY(run_id, 1);
		SQLITE_MARKER_COPY(state, 2);
		m->epoch = sqlite3_column_int64(stmt, 3);
		SQLITE_MARKER_COPY(updated_at, 4);
#undef SQLITE_MARKER_COPY
	}
	if (rc != SQLITE_DONE)
		e->status = sqlite_fail(backend, RS_EQUERY,
		                        "reading the shard marker failed");
	sqlite3_finalize(stmt);
}

static void
sqlite_work_fenced(struct rs_backend *backend)
{
	struct sqlite_engine *e = sqlite_engine(backend);
	sqlite3_stmt *stmt = NULL;

	if (sqlite3_prepare_v2(
		    e->db,
		    "SELECT count(*) FROM sqlite_schema WHERE type = "
		    "'trigger' AND tbl_name = ?1 AND name IN "
		    "('reshard_fence_INSERT_' || ?1, "
		    "'reshard_fence_UPDATE_' || ?1, "
		    "'reshard_fence_DELETE_' || ?1)",
		    -1, &stmt, NULL) != SQLITE_OK) {
		e->status = sqlite_fail(backend, RS_EQUERY,
		                        "reading the fence failed");
		return;
	}
	sqlite3_bind_text(stmt, 1, e->table_name, -1, SQLITE_STATIC);
	if (sqlite3_step(stmt) == SQLITE_ROW)
		e->value = sqlite3_column_int64(stmt, 0) == 3;
	else
		e->status = sqlite_fail(backend, RS_EQUERY,
		                        "reading the fence failed");
	sqlite3_finalize(stmt);
}

/* Worker: drop the catch-up copy under way, if any. */
static void
sqlite_backup_drop(struct sqlite_engine *e)
{
	if (e->backup != NULL)
		sqlite3_backup_finish(e->backup);
	if (e->backup_dest != NULL)
		sqlite3_close_v2(e->backup_dest);
	e->backup = NULL;
	e->backup_dest = NULL;
	e->backup_fd = -1;
}

/* A read-only descriptor of the file at PATH, for sqlite_backup_flush's
 * hint, or -1.  Opened once a file (by device and inode) and never
 * closed: closing any descriptor of a file drops every POSIX lock the
 * process holds on it, SQLite's own included (another connection of the
 * run to that replica would lose its lock).  So they stay open until the
 * process exits, SQLITE_FLUSH_FILES at most. */
static int
sqlite_flush_fd(const char *path)
{
	struct stat st, fst;
	int fd = -1;

	uv_once(&sqlite_writer_once, sqlite_writer_init);
	if (!sqlite_writer_ready || stat(path, &st) != 0)
		return -1;
	uv_mutex_lock(&sqlite_flush_lock);
	for (int i = 0; i < sqlite_n_flush_files && fd < 0; i++)
		if (sqlite_flush_files[i].dev == st.st_dev &&
		    sqlite_flush_files[i].ino == st.st_ino)
			fd = sqlite_flush_files[i].fd;
	if (fd < 0 && sqlite_n_flush_files < SQLITE_FLUSH_FILES &&
	    (fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
		struct sqlite_flush_file *f =
			&sqlite_flush_files[sqlite_n_flush_files++];

		/* Kept whatever it is; used only if it is the file looked
		 * at (not one that replaced it meanwhile). */
		if (fstat(fd, &fst) != 0)
			fst = (struct stat){0};
		f->fd = fd;
		f->dev = fst.st_dev;
		f->ino = fst.st_ino;
		if (f->dev != st.st_dev || f->ino != st.st_ino)
			fd = -1;
	}
	uv_mutex_unlock(&sqlite_flush_lock);
	return fd;
}

/* Worker: have the kernel start writing out the replica's pages copied so
 * far, without waiting for them (Linux's sync_file_range; elsewhere
 * nothing).  The copy's commit syncs the file; started early, most of the
 * writing overlaps the copy instead of stalling at the end, as
 * PostgreSQL's checkpoint_flush_after does for its checkpoints.  A hint:
 * its failure changes nothing. */
static void
sqlite_backup_flush(struct sqlite_engine *e)
{
#ifdef SYNC_FILE_RANGE_WRITE
	if (e->backup_fd < 0)
		e->backup_fd = sqlite_flush_fd(e->replica_path);
	if (e->backup_fd >= 0)
		(void)sync_file_range(e->backup_fd, 0, 0,
		                      SYNC_FILE_RANGE_WRITE);
#else
	(void)e;
	(void)sqlite_flush_fd;
#endif
}

/* Worker: start the copy of the whole database into replica_path with the
 * online backup API.  Returns 0 or fills the error. */
static int
sqlite_backup_start(struct rs_backend *backend)
{
	struct sqlite_engine *e = sqlite_engine(backend);
	int rc = sqlite3_open_v2(e->replica_path, &e->backup_dest,
	                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
	                                 SQLITE_OPEN_NOMUTEX,
	                         NULL);

	if (rc != SQLITE_OK) {
		e->status = backend_fail(
			backend, &e->err, RS_EQUERY,
			"cannot create the replica %s: %s", e->replica_path,
			e->backup_dest != NULL ? sqlite3_errmsg(e->backup_dest)
					       : "out of memory");
		sqlite_backup_drop(e);
		return e->status;
	}
	sqlite3_busy_timeout(e->backup_dest, SQLITE_LOCK_TIMEOUT_MS);
	e->backup = sqlite3_backup_init(e->backup_dest, "main", e->db, "main");
	if (e->backup == NULL) {
		e->status = backend_fail(backend, &e->err, RS_EQUERY,
		                         "cannot copy to the replica %s: %s",
		                         e->replica_path,
		                         sqlite3_errmsg(e->backup_dest));
		sqlite_backup_drop(e);
	}
	return e->status;
}

/* Worker: one slice of the catch-up copy, 1,000 pages a step for about
 * slice_ms.  The copy stays open in the engine between slices; done, it
 * is closed.
 *
 * Under the fence nothing writes the primary and the slices go on where
 * they stopped.  Before it (a doubling's pre-verify makes its replicas
 * while the application writes), a write through another connection
 * makes SQLite start the copy over at the next step: the first time that
 * is seen (more pages left than before), the rest is copied in one step,
 * which holds a read lock for the whole copy.  That copy is consistent;
 * in a rollback-journal database writers wait for it to end (about a
 * second per GB), in a WAL database they do not. */
static void
sqlite_work_replicate(struct rs_backend *backend)
{
	struct sqlite_engine *e = sqlite_engine(backend);
	uint64_t until = uv_hrtime() + (uint64_t)e->slice_ms * 1000000;
	int rc;

	e->replication = (struct rs_replication){0, -1, -1, "pages", ""};
	if (e->backup == NULL) {
		if (sqlite_backup_start(backend) != 0)
			return;
		e->backup_left = -1;
		e->backup_whole = 0;
	}
	do {
		rc = sqlite3_backup_step(e->backup,
		                         e->backup_whole ? -1 : 1000);
		if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
			sqlite3_sleep(50);
		if (rc == SQLITE_OK) {
			int left = sqlite3_backup_remaining(e->backup);

			sqlite_backup_flush(e);
			e->backup_whole |=
				e->backup_left >= 0 && left >= e->backup_left;
			e->backup_left = left;
		}
	} while (
		(rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED) &&
		uv_hrtime() < until && !sqlite_past_deadline(e));
	e->replication.behind = sqlite3_backup_remaining(e->backup);
	e->replication.total = sqlite3_backup_pagecount(e->backup);
	if (rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
		return; /* the next slice goes on */
	e->replication.reached = rc == SQLITE_DONE;
	if (rc != SQLITE_DONE)
		e->status = backend_fail(backend, &e->err, RS_EQUERY,
		                         "copying to the replica %s failed: %s",
		                         e->replica_path, sqlite3_errstr(rc));
	sqlite3_backup_finish(e->backup);
	e->backup = NULL;
	if (sqlite3_close_v2(e->backup_dest) != SQLITE_OK && e->status == 0)
		e->status = backend_fail(backend, &e->err, RS_EIO,
		                         "closing the replica %s failed",
		                         e->replica_path);
	e->backup_dest = NULL;
	e->backup_fd = -1; /* sqlite_flush_fd's, looked up again next copy */
	if (e->status != 0)
		e->replication.reached = 0;
}

/* Worker: a SQLite replica is a file reshard makes: it must not hold
 * data yet. */
static void
sqlite_work_replica_check(struct rs_backend *backend)
{
	struct sqlite_engine *e = sqlite_engine(backend);
	struct stat st;

	if (stat(e->replica_path, &st) == 0 && st.st_size > 0)
		e->status = backend_fail(
			backend, &e->err, RS_EUSAGE,
			"replica file %s already exists; reshard makes "
			"SQLite replicas itself (online backup) — move "
			"it aside",
			e->replica_path);
}

/* Worker: the primary's position, its size in pages. */
static void
sqlite_work_position(struct rs_backend *backend)
{
	struct sqlite_engine *e = sqlite_engine(backend);
	sqlite3_stmt *stmt = NULL;

	if (sqlite3_prepare_v2(e->db, "PRAGMA page_count", -1, &stmt, NULL) !=
	            SQLITE_OK ||
	    sqlite3_step(stmt) != SQLITE_ROW)
		e->status = sqlite_fail(backend, RS_EQUERY,
		                        "reading the position failed");
	else
		snprintf(e->position, sizeof(e->position), "%lld pages",
		         (long long)sqlite3_column_int64(stmt, 0));
	sqlite3_finalize(stmt);
}

/* What operation OP was doing, for the deadline's message. */
static const char *
sqlite_what(const struct sqlite_engine *e)
{
	switch (e->op) {
	case SQLITE_OP_DESCRIBE:
		return "reading the catalog failed";
	case SQLITE_OP_READ:
		return "reading rows failed";
	case SQLITE_OP_UPSERT:
		return "upsert failed";
	case SQLITE_OP_DELETE:
		return "delete failed";
	case SQLITE_OP_COUNT:
		return "counting rows failed";
	case SQLITE_OP_SCRIPT:
		return e->what;
	case SQLITE_OP_MARKERS:
		return "reading the run markers failed";
	case SQLITE_OP_FENCED:
		return "reading the fence failed";
	case SQLITE_OP_REPLICATE:
		return "copying to the replica failed";
	case SQLITE_OP_POSITION:
		return "reading the position failed";
	default:
		return "statement failed";
	}
}

/* Worker: the operation failed because its deadline passed: say so
 * instead of SQLite's "interrupted" or "database is locked", keeping
 * SQLite's result code. */
static void
sqlite_timed_out(struct rs_backend *backend)
{
	struct sqlite_engine *e = sqlite_engine(backend);
	int code = e->err.server_errno;

	if (e->op == SQLITE_OP_CONNECT)
		e->status = backend_fail(backend, &e->err, RS_ECONNECT,
		                         "could not connect within %d ms",
		                         e->bound_ms);
	else
		e->status = backend_fail_deadline(
			backend, &e->err, sqlite_what(e), e->bound_ms,
			"the statement was stopped and rolled back");
	e->err.server_errno = code;
	e->err.retryable = rs_err_retryable(NULL, code);
}

/* Worker: the rows (type, name, sql) of sqlite_schema for the table
 * e->table_name and its indexes and triggers, the table first (table_sql;
 * handed over as a read's rows). */
static void
sqlite_work_schema(struct rs_backend *backend)
{
	struct sqlite_engine *e = sqlite_engine(backend);
	const struct rs_table_def none = {0}; /* no key columns */
	struct rs_canon_buf real, key;
	sqlite3_stmt *stmt = NULL;
	size_t k = 0;
	int rc;

	canonical_buf_init(&real);
	canonical_buf_init(&key);
	e->n_rows = 0;
	e->n_cols = 3;
	e->arena_len = 0;
	rc = sqlite3_prepare_v2(e->db,
	                        "SELECT type, name, sql FROM sqlite_schema "
	                        "WHERE tbl_name = ?1 AND sql IS NOT NULL "
	                        "AND type IN ('table', 'index', 'trigger') "
	                        "ORDER BY type <> 'table', name",
	                        -1, &stmt, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(stmt, 1, e->table_name, -1, SQLITE_STATIC);
		rc = sqlite_collect(backend, stmt, &none, &k, &real, &key);
	} else {
		rc = RS_EQUERY;
	}
	if (rc == RS_EQUERY)
		rc = sqlite_fail(backend, RS_EQUERY,
		                 "reading the table's definition failed");
	sqlite3_finalize(stmt);
	canonical_buf_free(&real);
	canonical_buf_free(&key);
	e->status = rc;
}

static void
sqlite_work(uv_work_t *work)
{
	struct rs_backend *backend = work->data;
	struct sqlite_engine *e = sqlite_engine(backend);

	e->status = 0;
	/* Triggers fire for everything but purge's deletes, which turn them
	 * off when they may (sqlite_log_triggers). */
	if (e->db != NULL && (e->op != SQLITE_OP_DELETE || !e->unlogged))
		sqlite_triggers(e, 1);
	switch (e->op) {
	case SQLITE_OP_CONNECT:
		sqlite_work_connect(backend);
		break;
	case SQLITE_OP_DESCRIBE:
		sqlite_work_describe(backend);
		break;
	case SQLITE_OP_READ:
		sqlite_work_read(backend);
		break;
	case SQLITE_OP_EXEC:
		sqlite_work_exec(backend);
		break;
	case SQLITE_OP_UPSERT:
	case SQLITE_OP_DELETE:
		sqlite_writer_enter(e);
		sqlite_work_write(backend);
		sqlite_writer_leave(e);
		break;
	case SQLITE_OP_COUNT:
		sqlite_work_count(backend);
		break;
	case SQLITE_OP_SCRIPT:
		sqlite_writer_enter(e);
		sqlite_work_script(backend);
		sqlite_writer_leave(e);
		break;
	case SQLITE_OP_MARKERS:
		sqlite_work_markers(backend);
		break;
	case SQLITE_OP_FENCED:
		sqlite_work_fenced(backend);
		break;
	case SQLITE_OP_REPLICATE:
		sqlite_work_replicate(backend);
		break;
	case SQLITE_OP_REPLICA_CHECK:
		sqlite_work_replica_check(backend);
		break;
	case SQLITE_OP_POSITION:
		sqlite_work_position(backend);
		break;
	case SQLITE_OP_PROMOTE: /* a copy reshard made is writable */
		break;
	case SQLITE_OP_PROMOTED:
		e->value = 1;
		break;
	case SQLITE_OP_SCHEMA:
		sqlite_work_schema(backend);
		break;
	case SQLITE_OP_CLOSE:
		sqlite_backup_drop(e);
		sqlite_kept_drop(e);
		sqlite3_close_v2(e->db);
		e->db = NULL;
		break;
	}
	if (e->status != 0 && e->timed_out)
		sqlite_timed_out(backend);
}

static void
sqlite_engine_free(struct sqlite_engine *e)
{
	free(e->markers);
	free(e->replica_path);
	free(e->sql);
	free(e->table_name);
	free(e->arena);
	free(e->offsets);
	free(e->lens);
	free(e->values);
	free(e);
}

/* Loop thread: hand the outcome to the operation's callback. */
static void
sqlite_after_work(uv_work_t *work, int uv_status)
{
	struct rs_backend *backend = work->data;
	struct sqlite_engine *e = sqlite_engine(backend);
	const struct rs_err *err = e->status != 0 ? &e->err : NULL;
	void *arg = e->arg;

	if (uv_status != 0 && e->status == 0) {
		e->status = backend_fail(backend, &e->err, RS_EINTERNAL,
		                         "work cancelled: %s",
		                         uv_strerror(uv_status));
		err = &e->err;
	}
	free(e->sql);
	e->sql = NULL;
	free(e->table_name);
	e->table_name = NULL;
	free(e->replica_path);
	e->replica_path = NULL;
	backend->busy = 0;
	switch (e->op) {
	case SQLITE_OP_CONNECT:
	case SQLITE_OP_EXEC:
	case SQLITE_OP_UPSERT:
	case SQLITE_OP_DELETE:
	case SQLITE_OP_SCRIPT:
	case SQLITE_OP_REPLICA_CHECK:
	case SQLITE_OP_PROMOTE:
		e->cb.done(backend, e->status, err, arg);
		break;
	case SQLITE_OP_REPLICATE:
		e->cb.replication(backend, e->status, err,
		                  e->status == 0 ? &e->replication : NULL, arg);
		break;
	case SQLITE_OP_POSITION:
		e->cb.position(backend, e->status, err,
		               e->status == 0 ? e->position : NULL, arg);
		break;
	case SQLITE_OP_MARKERS:
		e->cb.markers(backend, e->status, err, e->markers,
		              e->status ? 0 : e->n_markers, arg);
		break;
	case SQLITE_OP_COUNT:
	case SQLITE_OP_FENCED:
	case SQLITE_OP_PROMOTED:
		e->cb.count(backend, e->status, err, e->status ? 0 : e->value,
		            arg);
		break;
	case SQLITE_OP_DESCRIBE: {
		struct rs_table_def *t = e->table;

		e->table = NULL;
		e->cb.describe(backend, e->status, err,
		               e->status == 0 ? t : NULL, arg);
		break;
	}
	case SQLITE_OP_SCHEMA:
	case SQLITE_OP_READ: {
		struct rs_rows rows = {0, 0, NULL};
		size_t n = (size_t)e->n_rows * (size_t)e->n_cols;

		if (e->status == 0 && n > 0) {
			struct rs_value *v = realloc(e->values, sizeof(*v) * n);

			if (v == NULL) {
				e->status = backend_fail(backend, &e->err,
				                         RS_ENOMEM,
				                         "out of memory");
				err = &e->err;
			} else {
				e->values = v;
				for (size_t i = 0; i < n; i++) {
					v[i].text =
						e->offsets[i] == (size_t)-1
							? NULL
							: e->arena +
								  e->offsets[i];
					v[i].len = e->lens[i];
				}
				rows.values = v;
			}
		}
		if (e->status == 0) {
			rows.n_rows = e->n_rows;
			rows.n_cols = e->n_cols;
		}
		/* The read's buffers go with it, freed once the callback
		 * (which may start the next read) has taken the rows: a
		 * stream keeps connections to every shard it walked, and
		 * buffers kept a connection would add up to the largest
		 * read of each.  Freed, they go back to the heap, where
		 * the next read, on any connection, finds them (main.c
		 * keeps that heap mapped). */
		void *held[4] = {e->arena, e->offsets, e->lens, e->values};

		e->arena_hint = e->arena_len + e->arena_len / 8 + 64;
		e->arena = NULL;
		e->offsets = e->lens = NULL;
		e->values = NULL;
		e->arena_len = e->arena_cap = e->values_cap = 0;
		e->cb.rows(backend, e->status, err,
		           e->status == 0 ? &rows : NULL, arg);
		for (int i = 0; i < 4; i++)
			free(held[i]);
		break;
	}
	case SQLITE_OP_CLOSE: {
		void (*closed)(struct rs_backend *) = e->closed;

		sqlite_engine_free(e);
		backend->engine = NULL;
		closed(backend);
		break;
	}
	}
}

/* The engine state, made on first use.  NULL on no memory. */
static struct sqlite_engine *
sqlite_engine_get(struct rs_backend *backend, struct rs_err *err)
{
	if (backend->engine == NULL) {
		/* The process's SQLite heap, page caches of every connection
		 * (journal included) together: the run's memory stays flat
		 * however many streams and tables it has.  Idempotent. */
		sqlite3_soft_heap_limit64(SQLITE_HEAP_LIMIT);
		struct sqlite_engine *e = calloc(1, sizeof(*e));

		if (e == NULL)
			rs_err_set(err, RS_ENOMEM, "out of memory");
		else
			e->backup_fd = -1;
		backend->engine = e;
	}
	return backend->engine;
}

/* Queue the operation whose inputs are already in the engine state.
 * Returns 0, or RS_EINTERNAL when libuv refuses (no callback then). */
static int
sqlite_queue(struct rs_backend *backend, enum sqlite_op op, void *arg,
             struct rs_err *err)
{
	struct sqlite_engine *e = sqlite_engine(backend);
	int rc;

	e->op = op;
	e->arg = arg;
	e->work.data = backend;
	e->timed_out = 0;
	e->bound_ms = op == SQLITE_OP_CONNECT ? backend->connect_timeout_ms
	              : op == SQLITE_OP_CLOSE ? 0
	                                      : backend->op_timeout_ms;
	e->deadline_ns = e->bound_ms > 0
	                         ? uv_hrtime() + (uint64_t)e->bound_ms * 1000000
	                         : 0;
	backend->busy = op != SQLITE_OP_CLOSE;
	rc = uv_queue_work(backend->loop, &e->work, sqlite_work,
	                   sqlite_after_work);
	if (rc != 0) {
		backend->busy = 0;
		return backend_fail(backend, err, RS_EINTERNAL,
		                    "cannot queue work: %s", uv_strerror(rc));
	}
	return 0;
}

static int
sqlite_connect(struct rs_backend *backend, rs_backend_cb cb, void *arg,
               struct rs_err *err)
{
	struct sqlite_engine *e = sqlite_engine_get(backend, err);

	if (e == NULL)
		return RS_ENOMEM;
	e->cb.done = cb;
	return sqlite_queue(backend, SQLITE_OP_CONNECT, arg, err);
}

/* The operations below need a connection. */
static int
sqlite_check_open(struct rs_backend *backend, struct rs_err *err)
{
	struct sqlite_engine *e = sqlite_engine(backend);

	if (e == NULL || e->db == NULL)
		return backend_fail(backend, err, RS_EINTERNAL,
		                    "not connected (a bug in the caller)");
	return 0;
}

/* Point *E at the connected engine with TABLE copied as the operation's
 * table.  Returns 0, or the error (not connected, out of memory). */
static int
sqlite_on_table(struct rs_backend *backend, const char *table,
                struct sqlite_engine **e, struct rs_err *err)
{
	int rc = sqlite_check_open(backend, err);

	if (rc != 0)
		return rc;
	*e = sqlite_engine(backend);
	(*e)->table_name = strdup(table);
	if ((*e)->table_name == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	return 0;
}

static int
sqlite_describe(struct rs_backend *backend, const char *table,
                rs_describe_cb cb, void *arg, struct rs_err *err)
{
	struct sqlite_engine *e;
	int rc = sqlite_on_table(backend, table, &e, err);

	if (rc != 0)
		return rc;
	e->cb.describe = cb;
	return sqlite_queue(backend, SQLITE_OP_DESCRIBE, arg, err);
}

static int
sqlite_read_batch(struct rs_backend *backend,
                  const struct rs_read_request *request, rs_rows_cb cb,
                  void *arg, struct rs_err *err)
{
	int rc = sqlite_check_open(backend, err);
	struct sqlite_engine *e = sqlite_engine(backend);

	if (rc != 0)
		return rc;
	e->request = request;
	e->keys_request = NULL;
	e->cb.rows = cb;
	sqlite_read_reserve(e, request->table->n_pk + request->n_columns,
	                    request->limit);
	return sqlite_queue(backend, SQLITE_OP_READ, arg, err);
}

static int
sqlite_read_keys(struct rs_backend *backend,
                 const struct rs_keys_request *request, rs_rows_cb cb,
                 void *arg, struct rs_err *err)
{
	int rc = sqlite_check_open(backend, err);
	struct sqlite_engine *e = sqlite_engine(backend);

	if (rc != 0)
		return rc;
	e->keys_read = (struct rs_read_request){
		.table = request->table,
		.columns = request->columns,
		.n_columns = request->n_columns,
	};
	e->request = &e->keys_read;
	e->keys_request = request;
	e->cb.rows = cb;
	sqlite_read_reserve(e, request->table->n_pk + request->n_columns,
	                    request->keys->n_rows);
	return sqlite_queue(backend, SQLITE_OP_READ, arg, err);
}

/* What makes TABLE again (see backend_table_sql): its rows of
 * sqlite_schema, which sqlite_table_sql_build rewrites. */
static int
sqlite_table_sql(struct rs_backend *backend, const char *table, const char *as,
                 rs_rows_cb cb, void *arg, struct rs_err *err)
{
	struct sqlite_engine *e;
	int rc = sqlite_on_table(backend, table, &e, err);

	(void)as;
	if (rc != 0)
		return rc;
	e->cb.rows = cb;
	return sqlite_queue(backend, SQLITE_OP_SCHEMA, arg, err);
}

/* Past the blanks at S (before END). */
static const char *
sqlite_blanks(const char *s, const char *end)
{
	while (s < end && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r'))
		s++;
	return s;
}

/* Past the keyword WORD at S (any case, then a blank), or NULL. */
static const char *
sqlite_word(const char *s, const char *end, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(end - s) <= n || strncasecmp(s, word, n) != 0 ||
	    !(s[n] == ' ' || s[n] == '\t' || s[n] == '\n' || s[n] == '\r'))
		return NULL;
	return sqlite_blanks(s + n, end);
}

/* Past the name at S: "…", […], `…` or '…' (a doubled quote inside), or
 * a bare word; NULL when there is none. */
static const char *
sqlite_name_end(const char *s, const char *end)
{
	char close = *s == '"' || *s == '`' || *s == '\'' ? *s
	             : *s == '['                          ? ']'
	                                                  : 0;
	const char *p = s;

	if (s >= end)
		return NULL;
	if (close == 0) {
		while (p < end && (isalnum((unsigned char)*p) || *p == '_' ||
		                   *p == '$' || (unsigned char)*p >= 0x80))
			p++;
		return p > s ? p : NULL;
	}
	for (p = s + 1; p < end; p++)
		if (*p == close) {
			if (close != ']' && p + 1 < end && p[1] == close)
				p++;
			else
				return p + 1;
		}
	return NULL;
}

/* Past "CREATE [UNIQUE] INDEX|TABLE [IF NOT EXISTS] name" at S, with
 * *UNIQUE set for a unique index; NULL when S does not start so. */
static const char *
sqlite_past_name(const char *s, const char *end, const char *what, int *unique)
{
	const char *p = sqlite_word(s, end, "CREATE"), *q;

	*unique = 0;
	if (p != NULL && (q = sqlite_word(p, end, "UNIQUE")) != NULL) {
		*unique = 1;
		p = q;
	}
	p = p != NULL ? sqlite_word(p, end, what) : NULL;
	if (p != NULL && (q = sqlite_word(p, end, "IF")) != NULL &&
	    (q = sqlite_word(q, end, "NOT")) != NULL &&
	    (q = sqlite_word(q, end, "EXISTS")) != NULL)
		p = q;
	return p != NULL ? sqlite_name_end(p, end) : NULL;
}

/* The name of an index of table TABLE (source) on AS: its own when AS is
 * TABLE; else TABLE at its start becomes AS (orders_created →
 * orders_2_created), or AS_ goes before it. */
static void
sqlite_index_name(struct rs_strbuf *q, const char *index, const char *table,
                  const char *as)
{
	size_t n = strlen(table);

	if (strcmp(table, as) == 0) {
		strbuf_str(q, index);
	} else if (strncmp(index, table, n) == 0) {
		strbuf_str(q, as);
		strbuf_str(q, index + n);
	} else {
		strbuf_str(q, as);
		strbuf_str(q, "_");
		strbuf_str(q, index);
	}
}

/* Rewrite one row of sqlite_work_schema into OUT: the table's CREATE
 * under AS; an index as CREATE [UNIQUE] INDEX IF NOT EXISTS on AS; a
 * trigger (not reshard's) left out. */
static int
sqlite_schema_row(const struct rs_value *v, const char *table, const char *as,
                  struct rs_table_sql *out, struct rs_err *err)
{
	const char *sql = v[2].text, *end = sql + v[2].len, *p;
	struct rs_strbuf q = {0}, name = {0};
	int unique, rc = 0;
	int index = v[0].len == 5 && memcmp(v[0].text, "index", 5) == 0;

	if (v[0].len == 7 && memcmp(v[0].text, "trigger", 7) == 0) {
		if (strncmp(v[1].text, "reshard_", 8) == 0)
			return 0;
		strbuf_str(&q, "trigger ");
		strbuf_add(&q, v[1].text, v[1].len);
		rc = q.failed ? rs_err_set(err, RS_ENOMEM, "out of memory")
		              : backend_table_sql_put(out, RS_SQL_LEFT_OUT,
		                                      q.text, q.len, err);
		strbuf_clear(&q);
		return rc;
	}
	p = sqlite_past_name(sql, end, index ? "INDEX" : "TABLE", &unique);
	if (p != NULL && index) {
		p = sqlite_word(sqlite_blanks(p, end), end, "ON");
		p = p != NULL ? sqlite_name_end(p, end) : NULL;
	}
	if (p == NULL)
		return rs_err_set(err, RS_ESCHEMA,
		                  "table %s: cannot read the definition of %s "
		                  "%.*s: %.80s",
		                  table, index ? "index" : "table",
		                  (int)v[1].len, v[1].text, sql);
	if (index) {
		strbuf_str(&q, unique ? "CREATE UNIQUE INDEX IF NOT EXISTS "
		                      : "CREATE INDEX IF NOT EXISTS ");
		strbuf_add(&name, v[1].text, v[1].len);
		if (!name.failed) {
			struct rs_strbuf made = {0};

			sqlite_index_name(&made, name.text, table, as);
			if (!made.failed)
				sql_ident(&q, made.text);
			q.failed |= made.failed;
			strbuf_clear(&made);
		}
		strbuf_str(&q, " ON ");
	} else {
		strbuf_str(&q, "CREATE TABLE ");
	}
	sql_ident(&q, as);
	strbuf_add(&q, p, (size_t)(end - p));
	rc = q.failed || name.failed
	             ? rs_err_set(err, RS_ENOMEM, "out of memory")
	             : backend_table_sql_put(out,
	                                     !index   ? RS_SQL_CREATE
	                                     : unique ? RS_SQL_UNIQUE
	                                              : RS_SQL_INDEX,
	                                     q.text, q.len, err);
	strbuf_clear(&q);
	strbuf_clear(&name);
	return rc;
}

static int
sqlite_table_sql_build(const struct rs_rows *rows, const char *table,
                       const char *as, struct rs_table_sql *out,
                       struct rs_err *err)
{
	struct rs_strbuf drop = {0};
	int rc = 0;

	if (rows->n_rows == 0 || rows->n_cols != 3 ||
	    rows->values[0].len != 5 ||
	    memcmp(rows->values[0].text, "table", 5) != 0)
		return rs_err_set(err, RS_ESCHEMA, "table %s does not exist",
		                  table);
	for (int r = 0; r < rows->n_rows && rc == 0; r++)
		rc = sqlite_schema_row(&rows->values[(size_t)r * 3], table, as,
		                       out, err);
	strbuf_str(&drop, "DROP TABLE ");
	sql_ident(&drop, as);
	if (rc == 0)
		rc = drop.failed
		             ? rs_err_set(err, RS_ENOMEM, "out of memory")
		             : backend_table_sql_put(out, RS_SQL_DROP,
		                                     drop.text, drop.len, err);
	strbuf_clear(&drop);
	return rc;
}

static int
sqlite_exec(struct rs_backend *backend, const char *sql, rs_backend_cb cb,
            void *arg, struct rs_err *err)
{
	int rc = sqlite_check_open(backend, err);
	struct sqlite_engine *e = sqlite_engine(backend);

	if (rc != 0)
		return rc;
	e->sql = strdup(sql);
	if (e->sql == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	e->cb.done = cb;
	return sqlite_queue(backend, SQLITE_OP_EXEC, arg, err);
}

static int
sqlite_write(struct rs_backend *backend, enum sqlite_op op,
             const struct rs_table_def *table, const struct rs_rows *rows,
             rs_backend_cb cb, void *arg, struct rs_err *err)
{
	int rc = sqlite_check_open(backend, err);
	struct sqlite_engine *e = sqlite_engine(backend);

	if (rc != 0)
		return rc;
	e->write_table = table;
	e->write_rows = rows;
	e->cb.done = cb;
	return sqlite_queue(backend, op, arg, err);
}

static int
sqlite_upsert(struct rs_backend *backend, const struct rs_table_def *table,
              const struct rs_rows *rows, rs_backend_cb cb, void *arg,
              struct rs_err *err)
{
	return sqlite_write(backend, SQLITE_OP_UPSERT, table, rows, cb, arg,
	                    err);
}

static int
sqlite_delete_keys(struct rs_backend *backend, const struct rs_table_def *table,
                   const struct rs_rows *keys, rs_backend_cb cb, void *arg,
                   struct rs_err *err)
{
	sqlite_engine(backend)->unlogged = 0;
	return sqlite_write(backend, SQLITE_OP_DELETE, table, keys, cb, arg,
	                    err);
}

static int
sqlite_purge_keys(struct rs_backend *backend, const struct rs_table_def *table,
                  const struct rs_rows *keys, rs_backend_cb cb, void *arg,
                  struct rs_err *err)
{
	sqlite_engine(backend)->unlogged = 1;
	return sqlite_write(backend, SQLITE_OP_DELETE, table, keys, cb, arg,
	                    err);
}

/* Start OP on TABLE (copied); CB gets the value it finds. */
static int
sqlite_value_op(struct rs_backend *backend, enum sqlite_op op,
                const char *table, rs_count_cb cb, void *arg,
                struct rs_err *err)
{
	struct sqlite_engine *e;
	int rc = sqlite_on_table(backend, table, &e, err);

	if (rc != 0)
		return rc;
	e->cb.count = cb;
	return sqlite_queue(backend, op, arg, err);
}

static int
sqlite_count(struct rs_backend *backend, const char *table, rs_count_cb cb,
             void *arg, struct rs_err *err)
{
	return sqlite_value_op(backend, SQLITE_OP_COUNT, table, cb, arg, err);
}

static int
sqlite_fenced(struct rs_backend *backend, const char *table, rs_count_cb cb,
              void *arg, struct rs_err *err)
{
	return sqlite_value_op(backend, SQLITE_OP_FENCED, table, cb, arg, err);
}

/* Append to *SQL (sqlite3_mprintf'd, freed here) the text of FMT, a
 * sqlite3_mprintf format (%w, %Q: not printf's, so not checked as one);
 * *SQL becomes NULL when out of memory and stays so. */
static void
sqlite_script_add(char **sql, const char *fmt, ...)
{
	va_list ap;
	char *part, *joined;

	if (*sql == NULL)
		return;
	va_start(ap, fmt);
	part = sqlite3_vmprintf(fmt, ap);
	va_end(ap);
	joined = part != NULL ? sqlite3_mprintf("%s%s", *sql, part) : NULL;
	sqlite3_free(part);
	sqlite3_free(*sql);
	*sql = joined;
}

/* Upsert MARKER into reshard_marker. */
static void
sqlite_script_marker(char **sql, const struct rs_marker *marker)
{
	sqlite_script_add(
		sql,
		SQLITE_MARKER_TABLE
		"INSERT INTO reshard_marker (plan, run_id, state, epoch, "
		"updated_at) VALUES (%Q, %Q, %Q, %lld, "
		"strftime('%%Y-%%m-%%d %%H:%%M:%%S', 'now')) "
		"ON CONFLICT (plan) DO UPDATE SET run_id = excluded.run_id, "
		"state = excluded.state, epoch = excluded.epoch, "
		"updated_at = excluded.updated_at;",
		marker->plan, marker->run_id, marker->state,
		(long long)marker->epoch);
}

/* Queue SQL (sqlite3_mprintf'd; NULL for out of memory) as one
 * transaction; WHAT names it in an error. */
static int
sqlite_script(struct rs_backend *backend, char *sql, const char *what,
              rs_backend_cb cb, void *arg, struct rs_err *err)
{
	int rc = sqlite_check_open(backend, err);
	struct sqlite_engine *e = sqlite_engine(backend);

	if (rc == 0 && sql == NULL)
		rc = rs_err_set(err, RS_ENOMEM, "out of memory");
	if (rc == 0) {
		e->sql = strdup(sql);
		if (e->sql == NULL)
			rc = rs_err_set(err, RS_ENOMEM, "out of memory");
	}
	sqlite3_free(sql);
	if (rc != 0)
		return rc;
	e->what = what;
	e->cb.done = cb;
	return sqlite_queue(backend, SQLITE_OP_SCRIPT, arg, err);
}

static int
sqlite_fence(struct rs_backend *backend, const char *const *tables,
             int n_tables, const char *message, int on,
             const struct rs_marker *marker, const struct rs_fence_rows *rows,
             rs_backend_cb cb, void *arg, struct rs_err *err)
{
	char *sql = sqlite3_mprintf("%s", "");

	(void)rows; /* no RS_CAP_FENCE_ROWS: backend.c never passes any */

	for (int t = 0; t < n_tables; t++)
		for (int i = 0; i < 3; i++) {
			if (on)
				sqlite_script_add(
					&sql,
					"CREATE TRIGGER IF NOT EXISTS "
					"\"reshard_fence_%w_%w\" BEFORE %s ON "
					"\"%w\" BEGIN SELECT RAISE(ABORT, %Q); "
					"END;",
					sqlite_fence_ops[i], tables[t],
					sqlite_fence_ops[i], tables[t],
					message != NULL ? message : "");
			else
				sqlite_script_add(&sql,
				                  "DROP TRIGGER IF EXISTS "
				                  "\"reshard_fence_%w_%w\";",
				                  sqlite_fence_ops[i],
				                  tables[t]);
		}
	if (marker != NULL)
		sqlite_script_marker(&sql, marker);
	return sqlite_script(backend, sql,
	                     on ? "installing the fence failed"
	                        : "removing the fence failed",
	                     cb, arg, err);
}

static int
sqlite_markers(struct rs_backend *backend, rs_markers_cb cb, void *arg,
               struct rs_err *err)
{
	int rc = sqlite_check_open(backend, err);
	struct sqlite_engine *e = sqlite_engine(backend);

	if (rc != 0)
		return rc;
	e->cb.markers = cb;
	return sqlite_queue(backend, SQLITE_OP_MARKERS, arg, err);
}

static int
sqlite_mark(struct rs_backend *backend, const struct rs_marker *marker,
            rs_backend_cb cb, void *arg, struct rs_err *err)
{
	char *sql = sqlite3_mprintf("%s", "");

	sqlite_script_marker(&sql, marker);
	return sqlite_script(backend, sql, "writing the shard marker failed",
	                     cb, arg, err);
}

/* The delete log: reshard_del_<table> with the key columns (declared as
 * in the table, so keys compare as they do there) and two triggers,
 * reshard_dellog_<table> (after delete) and reshard_dellog_u_<table>
 * (after an update that changes the key). */
static int
sqlite_delete_log(struct rs_backend *backend, const struct rs_table_def *table,
                  int on, rs_backend_cb cb, void *arg, struct rs_err *err)
{
	char log[300], trigger[2][300];
	char *sql = sqlite3_mprintf("%s", "");

	backend_delete_log_name(table->name, log, sizeof(log));
	sqlite_dellog_trigger(table->name, 0, trigger[0], sizeof(trigger[0]));
	sqlite_dellog_trigger(table->name, 1, trigger[1], sizeof(trigger[1]));
	if (on == RS_DELETE_LOG_EMPTY) {
		sqlite_script_add(&sql, "DELETE FROM \"%w\";", log);
		return sqlite_script(backend, sql,
		                     "emptying the delete log failed", cb, arg,
		                     err);
	}
	if (!on) {
		sqlite_script_add(&sql,
		                  "DROP TRIGGER IF EXISTS \"%w\";"
		                  "DROP TRIGGER IF EXISTS \"%w\";"
		                  "DROP TABLE IF EXISTS \"%w\";",
		                  trigger[0], trigger[1], log);
		return sqlite_script(backend, sql,
		                     "removing the delete log failed", cb, arg,
		                     err);
	}
	sqlite_script_add(&sql, "CREATE TABLE IF NOT EXISTS \"%w\" (", log);
	for (int k = 0; k < table->n_pk; k++) {
		const struct rs_column *c = &table->columns[table->pk[k]];

		sqlite_script_add(&sql, "%s\"%w\" %s", k ? ", " : "", c->name,
		                  c->type != NULL ? c->type : "");
	}
	sqlite_script_add(&sql, ", PRIMARY KEY (");
	for (int k = 0; k < table->n_pk; k++)
		sqlite_script_add(&sql, "%s\"%w\"", k ? ", " : "",
		                  table->columns[table->pk[k]].name);
	sqlite_script_add(&sql, "));");
	for (int u = 0; u < 2; u++) {
		if (u == 0)
			sqlite_script_add(
				&sql,
				"CREATE TRIGGER IF NOT EXISTS "
				"\"%w\" AFTER DELETE ON \"%w\" BEGIN ",
				trigger[0], table->name);
		else {
			sqlite_script_add(&sql,
			                  "CREATE TRIGGER IF NOT EXISTS "
			                  "\"%w\" AFTER UPDATE ON \"%w\" WHEN ",
			                  trigger[1], table->name);
			for (int k = 0; k < table->n_pk; k++)
				sqlite_script_add(
					&sql, "%sOLD.\"%w\" IS NOT NEW.\"%w\"",
					k ? " OR " : "",
					table->columns[table->pk[k]].name,
					table->columns[table->pk[k]].name);
			sqlite_script_add(&sql, " BEGIN ");
		}
		sqlite_script_add(
			&sql, "INSERT OR REPLACE INTO \"%w\" VALUES (", log);
		for (int k = 0; k < table->n_pk; k++)
			sqlite_script_add(&sql, "%sOLD.\"%w\"", k ? ", " : "",
			                  table->columns[table->pk[k]].name);
		sqlite_script_add(&sql, "); END;");
	}
	return sqlite_script(backend, sql, "installing the delete log failed",
	                     cb, arg, err);
}

/* The columns a change log keeps of TABLE: its key columns, then the
 * shard key column KEY_COLUMN unless it is one of them.  Into COLS (room
 * for n_pk + 1); returns how many. */
static int
sqlite_change_columns(const struct rs_table_def *table, int key_column,
                      int *cols)
{
	int n = 0, in_pk = 0;

	for (int k = 0; k < table->n_pk; k++) {
		cols[n++] = table->pk[k];
		in_pk |= table->pk[k] == key_column;
	}
	if (!in_pk)
		cols[n++] = key_column;
	return n;
}

/* Append "INSERT INTO log (cols…) VALUES (ROWcols…);" to *SQL, ROW
 * "NEW." or "OLD."; with SELECT, "INSERT INTO log (cols…) SELECT
 * ROWcols…" for the caller to end (ROW "": the columns of a FROM). */
static void
sqlite_change_insert(char **sql, const char *log,
                     const struct rs_table_def *table, const int *cols, int n,
                     const char *row, int select)
{
	sqlite_script_add(sql, "INSERT INTO \"%w\" (", log);
	for (int i = 0; i < n; i++)
		sqlite_script_add(sql, "%s\"%w\"", i ? ", " : "",
		                  table->columns[cols[i]].name);
	sqlite_script_add(sql, select ? ") SELECT " : ") VALUES (");
	for (int i = 0; i < n; i++)
		sqlite_script_add(sql, "%s%s\"%w\"", i ? ", " : "", row,
		                  table->columns[cols[i]].name);
	if (!select)
		sqlite_script_add(sql, ");");
}

/* Change capture (backend_capture): the log reshard_chg_<table>, and the
 * triggers reshard_capture_{i,u,d}_<table> after insert, update and
 * delete and reshard_capture_r_<table> before insert (the row a REPLACE
 * removes), all made or dropped in one transaction.  The log's columns are
 * declared as in the table, so its keys bind back as the table's do. */
static int
sqlite_capture(struct rs_backend *backend, const struct rs_table_def *table,
               int key_column, int on, rs_backend_cb cb, void *arg,
               struct rs_err *err)
{
	static const char *const events[] = {"INSERT", "UPDATE", "DELETE"};
	static const char tags[] = "iudr";
	char log[300];
	char *sql = sqlite3_mprintf("%s", "");
	int *cols = malloc(sizeof(int) * (size_t)(table->n_pk + 1));
	int n;

	if (cols == NULL) {
		sqlite3_free(sql);
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	}
	n = sqlite_change_columns(table, key_column, cols);
	backend_change_log_name(table->name, log, sizeof(log));
	for (int i = 0; i < 4 && !on; i++)
		sqlite_script_add(&sql,
		                  "DROP TRIGGER IF EXISTS "
		                  "\"reshard_capture_%c_%w\";",
		                  tags[i], table->name);
	if (!on) {
		sqlite_script_add(&sql, "DROP TABLE IF EXISTS \"%w\";", log);
		free(cols);
		return sqlite_script(backend, sql,
		                     "removing change capture failed", cb, arg,
		                     err);
	}
	sqlite_script_add(&sql,
	                  "CREATE TABLE IF NOT EXISTS \"%w\" (reshard_pos "
	                  "INTEGER PRIMARY KEY AUTOINCREMENT",
	                  log);
	for (int i = 0; i < n; i++) {
		const struct rs_column *c = &table->columns[cols[i]];

		sqlite_script_add(&sql, ", \"%w\" %s", c->name,
		                  c->type != NULL ? c->type : "");
	}
	sqlite_script_add(&sql, ");");
	for (int i = 0; i < 3; i++) {
		sqlite_script_add(
			&sql,
			"CREATE TRIGGER IF NOT EXISTS "
			"\"reshard_capture_%c_%w\" AFTER %s ON \"%w\" "
			"BEGIN ",
			tags[i], table->name, events[i], table->name);
		if (i == 1) { /* OLD when a key changes, then NEW */
			sqlite_change_insert(&sql, log, table, cols, n, "OLD.",
			                     1);
			/* Byte for byte: a column's NOCASE would call a
			 * key changed only in case unchanged, and its old
			 * value (another owner's) would go unlogged. */
			sqlite_script_add(&sql, " WHERE NOT (");
			for (int c = 0; c < n; c++)
				sqlite_script_add(
					&sql,
					"%sOLD.\"%w\" COLLATE BINARY IS "
					"NEW.\"%w\"",
					c ? " AND " : "",
					table->columns[cols[c]].name,
					table->columns[cols[c]].name);
			sqlite_script_add(&sql, ");");
		}
		sqlite_change_insert(&sql, log, table, cols, n,
		                     i == 2 ? "OLD." : "NEW.", 0);
		sqlite_script_add(&sql, "END;");
	}
	/* INSERT OR REPLACE deletes the row with the same key without its
	 * delete trigger (unless the writer's connection has
	 * recursive_triggers on): the row it replaces is logged before,
	 * so that its old shard key's owner loses the copy.  An insert that
	 * then fails takes the entry with it; one that replaces nothing
	 * logs nothing; INSERT OR IGNORE logs an unchanged row, which the
	 * replay reads again to no effect. */
	sqlite_script_add(&sql,
	                  "CREATE TRIGGER IF NOT EXISTS "
	                  "\"reshard_capture_r_%w\" BEFORE INSERT ON \"%w\" "
	                  "BEGIN ",
	                  table->name, table->name);
	sqlite_change_insert(&sql, log, table, cols, n, "", 1);
	sqlite_script_add(&sql, " FROM \"%w\" WHERE ", table->name);
	for (int k = 0; k < table->n_pk; k++)
		sqlite_script_add(&sql, "%s\"%w\" IS NEW.\"%w\"",
		                  k ? " AND " : "",
		                  table->columns[table->pk[k]].name,
		                  table->columns[table->pk[k]].name);
	sqlite_script_add(&sql, "; END;");
	free(cols);
	return sqlite_script(backend, sql, "installing change capture failed",
	                     cb, arg, err);
}

/* Queue replication operation OP on BACKEND (connected, its callback
 * set), REPLICA's file as its replica_path when REPLICA is given. */
static int
sqlite_queue_replication(struct rs_backend *backend,
                         const struct rs_backend *replica, enum sqlite_op op,
                         void *arg, struct rs_err *err)
{
	struct sqlite_engine *e = sqlite_engine(backend);

	if (replica != NULL) {
		e->replica_path = strdup(replica->url.database);
		if (e->replica_path == NULL)
			return rs_err_set(err, RS_ENOMEM, "out of memory");
	}
	return sqlite_queue(backend, op, arg, err);
}

static int
sqlite_replica_check(struct rs_backend *primary, struct rs_backend *replica,
                     int max_lag_ms, rs_backend_cb cb, void *arg,
                     struct rs_err *err)
{
	(void)max_lag_ms; /* the replica is a copy made under the fence */
	if (sqlite_check_open(primary, err) != 0)
		return RS_EINTERNAL;
	sqlite_engine(primary)->cb.done = cb;
	return sqlite_queue_replication(primary, replica,
	                                SQLITE_OP_REPLICA_CHECK, arg, err);
}

static int
sqlite_position(struct rs_backend *primary, rs_position_cb cb, void *arg,
                struct rs_err *err)
{
	if (sqlite_check_open(primary, err) != 0)
		return RS_EINTERNAL;
	sqlite_engine(primary)->cb.position = cb;
	return sqlite_queue_replication(primary, NULL, SQLITE_OP_POSITION, arg,
	                                err);
}

/* The position is not needed: the copy is consistent at one instant, and
 * what is written after it reaches the replica another way (a doubling's
 * change log, replayed by catch-up; or the fence, when the copy is made
 * under it). */
static int
sqlite_catch_up(struct rs_backend *primary, struct rs_backend *replica,
                const char *position, int slice_ms, rs_replication_cb cb,
                void *arg, struct rs_err *err)
{
	struct sqlite_engine *e = sqlite_engine(primary);

	(void)position;
	if (sqlite_check_open(primary, err) != 0)
		return RS_EINTERNAL;
	e->cb.replication = cb;
	e->slice_ms = slice_ms > 0 ? slice_ms : 1;
	return sqlite_queue_replication(primary, replica, SQLITE_OP_REPLICATE,
	                                arg, err);
}

/* A SQLite replica is a file reshard made: it is writable already. */
static int
sqlite_promote(struct rs_backend *replica, rs_backend_cb cb, void *arg,
               struct rs_err *err)
{
	if (sqlite_check_open(replica, err) != 0)
		return RS_EINTERNAL;
	sqlite_engine(replica)->cb.done = cb;
	return sqlite_queue_replication(replica, NULL, SQLITE_OP_PROMOTE, arg,
	                                err);
}

static int
sqlite_promoted(struct rs_backend *replica, rs_count_cb cb, void *arg,
                struct rs_err *err)
{
	if (sqlite_check_open(replica, err) != 0)
		return RS_EINTERNAL;
	sqlite_engine(replica)->cb.count = cb;
	return sqlite_queue_replication(replica, NULL, SQLITE_OP_PROMOTED, arg,
	                                err);
}

static void
sqlite_close(struct rs_backend *backend,
             void (*done)(struct rs_backend *backend))
{
	struct sqlite_engine *e = sqlite_engine(backend);

	if (e == NULL) {
		done(backend);
		return;
	}
	e->closed = done;
	if (e->db == NULL ||
	    sqlite_queue(backend, SQLITE_OP_CLOSE, NULL, NULL) != 0) {
		sqlite_backup_drop(e);
		sqlite_kept_drop(e);
		sqlite3_close_v2(e->db); /* nothing else can be done */
		sqlite_engine_free(e);
		backend->engine = NULL;
		done(backend);
	}
}

const struct rs_backend_ops backend_sqlite_ops = {
	.engine = "sqlite",
	.keys_canonical = 1,
	.connect = sqlite_connect,
	.describe = sqlite_describe,
	.read_batch = sqlite_read_batch,
	.exec = sqlite_exec,
	.upsert = sqlite_upsert,
	.delete_keys = sqlite_delete_keys,
	.purge_keys = sqlite_purge_keys,
	.count = sqlite_count,
	.fence = sqlite_fence,
	.markers = sqlite_markers,
	.mark = sqlite_mark,
	.delete_log = sqlite_delete_log,
	.capture = sqlite_capture,
	.read_keys = sqlite_read_keys,
	.table_sql = sqlite_table_sql,
	.table_sql_build = sqlite_table_sql_build,
	.fenced = sqlite_fenced,
	.replica_check = sqlite_replica_check,
	.position = sqlite_position,
	.catch_up = sqlite_catch_up,
	.promote = sqlite_promote,
	.promoted = sqlite_promoted,
	.close = sqlite_close,
};
