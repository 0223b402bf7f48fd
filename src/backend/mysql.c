/*
 * The MariaDB/MySQL engine behind backend.h, on MariaDB Connector/C's
 * non-blocking API (DESIGN §8; the model is Connector/C's own
 * unittest/libmariadb/async.c).
 *
 * Every library call is a foo_start() that either finishes or returns the
 * MYSQL_WAIT_* events it is suspended on; my_drive turns that mask into
 * the connection's one uv_poll_t (on mysql_get_socket) and one uv_timer_t
 * (on mysql_get_timeout_value_ms), and when either fires, my_resume calls
 * the matching foo_cont() of the suspended call, named by the state enum.
 * The wait mask (e->wait) and the calls' results (connect_ret, query_ret,
 * result) live in separate fields.  Both watchers are stopped before each
 * _cont call, because the library may close its socket inside it (a failed
 * address during connect, a lost connection, mysql_close); when the socket
 * it reports afterwards is another one or none, the poll handle is closed
 * at once and a new one made on the next wait.  So the poll handle is made
 * when the socket first appears during connect, and normally lives as long
 * as the connection.
 *
 * The same timer bounds connect (with the session setup that follows it)
 * and close by backend->connect_timeout_ms, and every other operation by
 * the bound it started with (backend->op_timeout_ms), whatever the URL's
 * read-timeout and write-timeout say: when the deadline comes, the
 * suspended call is resumed with MYSQL_WAIT_TIMEOUT, which makes the
 * library fail its pending I/O and end the call cleanly.  A read or write
 * that fails so ends the library's connection (end_server: the socket is
 * closed, later statements fail with "server has gone away"), and the
 * operation fails with RS_ECONNECT and a message naming its bound.  The
 * server notices the closed connection when it next reads or writes on
 * it, and rolls back what the session left open.  A completion that
 * happens inside a public call (a dead connection fails at once) is
 * delivered from the timer on the next loop turn, so callbacks never run
 * inside the call that started them.
 *
 * Host names are resolved by the library with a blocking getaddrinfo
 * inside mysql_real_connect_start (Connector/C has no asynchronous
 * resolver): use IP addresses or a local resolver in plans where that
 * matters.  Option files ([client] group) are read at connect time and
 * override the URL's parameters for the same settings; they are where a
 * password comes from when the plan gives none.
 *
 * The SQL text of every operation but the fixed statements (session
 * setup, transaction control) is built by mysql_sql.c (mysql_sql.h), which
 * knows no MYSQL: this file hands it an escape function over the
 * connection (my_escaper) and sends what it built.
 *
 * Upsert and delete run as one transaction of several statements:
 * START TRANSACTION, INSERT … ON DUPLICATE KEY UPDATE (or DELETE … WHERE
 * key IN (…)) statements of about 1 MiB each (MYSQL_SQL_STMT_BYTES), all
 * built from the batch before anything is sent, then COMMIT.  A statement
 * that fails is followed by ROLLBACK before the callback gets its error; a
 * lost connection ends the operation at once (the server rolls back the
 * session's open transaction).  A value that MariaDB cannot store (NaN,
 * infinities, years outside 0000-9999, text not in its kind's canonical
 * form) is refused with RS_EVALUE before anything is sent.
 *
 * The snapshot scan (backend_scan_begin …) reads the way `mariadb --quick`
 * does: START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY, then one
 * SELECT of the columns without ORDER BY whose result is taken with
 * mysql_use_result (unbuffered: rows stay in the socket until fetched).
 * Each scan_next fetches up to its limit with mysql_fetch_row_start/_cont,
 * copying every value into a batch buffer (the library reuses a row's
 * memory for the next one); scan_end frees the result with
 * mysql_free_result_start/_cont, which reads and drops the rows not yet
 * fetched, then COMMITs.  A failed step frees what is left of the result
 * and sends ROLLBACK before its callback reports the first failure; a lost
 * connection ends at once.  Closing the backend during a scan drops the
 * result without reading it (mysql_close does not read it either).
 *
 * count, the fence, the shard marker, the delete log, purge_keys, change
 * capture, reads by key and the replication operations (replica_check,
 * position, catch_up, promote, promoted) are described where they are
 * defined below.  All but purge_keys run as stepped operations: a step
 * function gets each statement's outcome and chooses the next statement.
 * replica_check and catch_up also run statements on the replica's connection,
 * one after the other with the primary's (see "stepped operations").
 *
 * Values reach SQL only as literals escaped by mysql_real_escape_string
 * on the connection (or as validated numbers, 1/0 for booleans, X'hex'
 * for bytes); identifiers are quoted with backticks, doubled inside
 * names.  sql_mode is left as the server has it: backticks work under
 * every mode and the escaping follows NO_BACKSLASH_ESCAPES.
 */
#include <errmsg.h>
#include <limits.h>
#include <mysql.h>
#include <mysqld_error.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backend/backend_engine.h"
#include "backend/mysql_sql.h"
#include "common/strbuf.h"

/* The library call that is running or suspended. */
enum my_state {
	MY_IDLE,       /* no call in flight */
	MY_CONNECTING, /* mysql_real_connect_start/_cont */
	MY_QUERYING,   /* mysql_real_query_start/_cont */
	MY_STORING,    /* mysql_store_result_start/_cont */
	MY_NEXTING,    /* mysql_next_result_start/_cont */
	MY_FETCHING,   /* mysql_fetch_row_start/_cont (the scan) */
	MY_FREEING,    /* mysql_free_result_start/_cont (the scan's end) */
	MY_DONE,       /* no call: the operation ends with e->status */
	MY_CLOSING,    /* mysql_close_start/_cont */
	MY_CLOSED,     /* MYSQL freed, handles closing, then the engine */
};

/* The backend operation the calls belong to. */
enum my_op {
	MY_OP_NONE,
	MY_OP_CONNECT, /* connect, then the session setup statement */
	MY_OP_DESCRIBE,
	MY_OP_READ,
	MY_OP_EXEC,
	MY_OP_UPSERT,     /* a transaction: START, INSERTs, COMMIT */
	MY_OP_DELETE,     /* a transaction: START, DELETEs, COMMIT */
	MY_OP_SCAN_BEGIN, /* START … CONSISTENT SNAPSHOT, SELECT (use_result) */
	MY_OP_SCAN_NEXT, /* fetch rows of the scan's result */
	MY_OP_SCAN_END,  /* free the result (reading what is left), COMMIT */
	MY_OP_STEPS,     /* a stepped operation (struct my_steps) */
	MY_OP_PEER,      /* one statement of another engine's stepped
	                    operation, on this connection (e->owner) */
	MY_OP_CLOSE,
};

/* Where an upsert's or delete's transaction is. */
enum my_txn {
	MY_TXN_BEGIN,    /* START TRANSACTION sent */
	MY_TXN_DML,      /* e->stmts.v[e->next_stmt - 1] sent */
	MY_TXN_COMMIT,   /* COMMIT sent */
	MY_TXN_ROLLBACK, /* ROLLBACK sent after a failure kept in e->err */
	/* A purge (backend_purge_keys) sets @reshard_purging before its
	 * transaction and clears it after, also after a failure. */
	MY_TXN_PURGE_ON,  /* SET @reshard_purging = 1 sent */
	MY_TXN_PURGE_OFF, /* SET @reshard_purging = NULL sent */
};

/* Which callback ends a stepped operation. */
enum my_reply {
	MY_REPLY_DONE,        /* rs_backend_cb */
	MY_REPLY_COUNT,       /* rs_count_cb with st.value */
	MY_REPLY_MARKERS,     /* rs_markers_cb with st.markers */
	MY_REPLY_POSITION,    /* rs_position_cb with st.position */
	MY_REPLY_REPLICATION, /* rs_replication_cb with st.replication */
	MY_REPLY_ROWS,        /* rs_rows_cb with st.rows */
};

struct my_engine;

/* The next move of a stepped operation, given the outcome of its last
 * statement: STATUS 0 with its first result RES (NULL for a statement
 * without rows; freed after the call), or the statement's RS_E… code
 * with the error in e->st.err. */
typedef void (*my_step_fn)(struct my_engine *e, int status, MYSQL_RES *res);

/*
 * A stepped operation: count, fence, markers, mark, delete_log, fenced,
 * capture, read_keys and the replication operations are short programs
 * of statements, each chosen from the outcome of the one before (a
 * trigger that existed already is not made again, a missing marker table
 * is made, a failed fence is taken down again).  STEP gets every outcome and
 * sends the next statement (my_step_send) or ends the operation (my_step_end).
 * Whatever the operation owns is here, moved out of the engine whole when it
 * ends.
 */
struct my_steps {
	my_step_fn step;
	enum my_reply reply;
	struct rs_err err;      /* the last statement's failure */
	struct my_engine *peer; /* the other backend's engine, held busy */
	int stage;              /* where STEP is; its own enum */
	int index;              /* the statement of the stage */
	int64_t value;          /* count, fenced, promoted */
	char **names;           /* fence: the tables; delete log: the key
	                           columns; capture: the columns logged;
	                           all copies */
	int n_names;
	int n_keys;  /* capture: names[0 … n_keys - 1] are key columns */
	char *text;  /* fence: the message; delete log, capture: the table;
	                catch-up: the position */
	int on;      /* fence, delete log, capture: on or off */
	int marking; /* fence, mark: a marker to write */
	struct rs_marker marker;
	unsigned char *made; /* fence: per trigger, 1 made by this call, 2
	                        there before */
	const struct rs_fence_rows *fence_rows; /* fence: the rows, or NULL
	                                           (borrowed, backend_fence) */
	struct rs_err cause; /* fence: the failure being undone;
	                        read_keys: the one being rolled back */
	int undo_failed;     /* fence: a trigger could not be dropped again */
	struct rs_marker *markers; /* markers: the rows */
	int n_markers;
	char position[RS_POSITION_SIZE];   /* position */
	struct rs_replication replication; /* catch-up */
	int wait_ms;                       /* catch-up: the slice */
	struct mysql_sql_replica *facts;   /* replica_check, catch-up */
	const char *const *list; /* promote, promote_ready: the statements */
	int n_list;
	const char *doing; /* promote, promote_ready: "promote", for errors */
	const char *hint;  /* promote, promote_ready: the grants needed */
	/* read_keys: the rows found, rows.n_rows × rows.n_cols values
	 * (vals_cap of them allocated) whose bytes are in rows_text one
	 * after the other, each with a NUL, pointed at once all are in
	 * (my_point_values). */
	struct rs_rows rows;
	struct rs_value *vals;
	size_t vals_cap;
	struct rs_strbuf rows_text;
};

/* One statement sets the session up (backend_connect's contract): UTC for
 * TIMESTAMP values, utf8mb4 text, and a lock timeout short enough that a
 * blocked write is retried rather than stalling a stream: for row locks
 * (innodb_lock_wait_timeout) and for metadata locks (lock_wait_timeout, a
 * year by default), which the DDL of the fence, the delete log and change
 * capture waits for while any transaction that touched the table is
 * open. */
#define MY_LOCK_TIMEOUT_S 2 /* the 2 s of both, for messages */
static const char my_setup_sql[] = "SET NAMES utf8mb4, time_zone = '+00:00', "
				   "SESSION innodb_lock_wait_timeout = 2, "
				   "SESSION lock_wait_timeout = 2";

static const char my_begin_sql[] = "START TRANSACTION";
static const char my_commit_sql[] = "COMMIT";
static const char my_rollback_sql[] = "ROLLBACK";
static const char my_scan_begin_sql[] =
	"START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY";

struct my_engine {
	struct rs_backend *backend; /* the backend this state belongs to */
	MYSQL *mysql;               /* NULL before connect and once closed */
	struct rs_url_mysql target; /* connect arguments, borrowed */
	enum my_state state;        /* the call in flight */
	enum my_op op;              /* the operation it serves */
	int connected;              /* connect and setup succeeded */
	int require_tls;            /* ssl-mode REQUIRED or stricter */

	uv_poll_t *poll;  /* on the library's socket; NULL until one exists */
	int poll_fd;      /* the socket POLL watches, -1 without one */
	uv_timer_t timer; /* library timeouts, deadline, deferred ends */
	int open_handles; /* handles made and not yet closed */
	int wait;         /* MYSQL_WAIT_* mask the suspended call waits for */
	int in_call;      /* inside a public function: defer a completion */
	int deferred;     /* the timer delivers a completion, not a timeout */
	int uv_error;     /* libuv error that made a wait impossible, or 0 */

	int deadline_on;       /* the running operation is bounded in time */
	uint64_t deadline;     /* loop time (ms) when it gives up */
	int timeout_ms;        /* the bound of connect and close */
	int op_bound_ms;       /* the running operation's bound, for messages */
	int timer_is_deadline; /* the armed timer is the deadline */
	int timed_out;         /* the deadline passed during this operation */

	/* Results of the suspended calls, apart from the wait mask. */
	MYSQL *connect_ret;
	int query_ret;
	MYSQL_RES *result;

	/* The running operation. */
	union my_cb {
		rs_backend_cb done; /* connect, exec */
		rs_describe_cb describe;
		rs_rows_cb rows;
		rs_count_cb count;
		rs_markers_cb markers;
		rs_position_cb position;
		rs_replication_cb replication;
	} cb;
	void *arg;
	char *sql; /* the statement being sent */
	size_t sql_len;
	int sql_owned;              /* SQL is ours to free */
	int status;                 /* a failure kept while results drain */
	struct rs_err err;          /* its message */
	int result_seen;            /* the statement's first result was taken */
	char *table_name;           /* describe, read: for messages */
	struct rs_table_def *table; /* describe: what the catalog said */
	MYSQL_RES *rows_result;     /* read: kept until the callback returns */
	int n_cols;                 /* read: values per row */
	struct mysql_sql_stmts stmts; /* upsert, delete, scan: the statements */
	int next_stmt;                /* the next one to send */
	int batch_rows;  /* rows or keys in the batch, for messages */
	enum my_txn txn; /* where the transaction is */
	int purging;     /* a delete is a purge (MY_TXN_PURGE_ON …) */
	/* load: the rows in LOAD DATA's format, served to the driver by the
	 * infile handler (my_infile_*) while the statement runs; off is how
	 * far it has read.  no_load: the server refused LOAD DATA LOCAL, so
	 * this connection's loads are upserts. */
	struct rs_strbuf load_data;
	size_t load_off;
	int loading;
	int no_load;
	char detail[128];        /* appended to error messages, or "" */
	struct my_steps st;      /* MY_OP_STEPS */
	struct my_engine *owner; /* MY_OP_PEER: whose statement runs here */
	const char *what;        /* MY_OP_STEPS, MY_OP_PEER: what the
	                            statement in flight does, for its error */
	char what_buf[MYSQL_SQL_NAME_SIZE + 128]; /* room to build one */

	/* The snapshot scan: open from a successful scan_begin to the end of
	 * scan_end, or to a failed scan_begin or scan_next. */
	int scanning;                          /* the scan is open */
	MYSQL_RES *scan_res;                   /* its unbuffered result */
	const struct rs_table_def *scan_table; /* borrowed (contract) */
	int scan_cols;                         /* values per row */
	int scan_eof;                          /* every row was fetched */
	MYSQL_ROW fetch_row;        /* what the fetch call returned */
	int scan_limit;             /* scan_next: rows wanted */
	int scan_n;                 /* scan_next: rows copied */
	struct rs_value *scan_vals; /* scan_next: scan_n * scan_cols */
	struct rs_strbuf scan_text; /* scan_next: their bytes */
	size_t scan_text_hint;      /* bytes of the last batch */
	void (*closed)(struct rs_backend *backend); /* close's done */
};

static void my_drive(struct my_engine *e, int status);
static void my_scan_opened(struct my_engine *e);
static int my_scan_row(struct my_engine *e);
static void my_scan_fetch(struct my_engine *e);

/* ---- SQL text ------------------------------------------------------- */

/* Escape for mysql_sql.h with mysql_real_escape_string on the connection
 * CTX: its character set and sql_mode decide. */
static size_t
my_escape(void *ctx, char *to, const char *from, size_t len)
{
	unsigned long n =
		mysql_real_escape_string(ctx, to, from, (unsigned long)len);

	return n == (unsigned long)-1 ? (size_t)-1 : (size_t)n;
}

/* The escaping of E's connection, for the builders of mysql_sql.h. */
static struct mysql_sql_escape
my_escaper(const struct my_engine *e)
{
	return (struct mysql_sql_escape){my_escape, e->mysql};
}

/* ---- errors --------------------------------------------------------- */

/* Whether MariaDB error EN means the connection is gone (RS_ECONNECT)
 * rather than the statement failing on a live one (RS_EQUERY). */
static int
my_errno_is_lost(unsigned int en)
{
	switch (en) {
	case CR_CONNECTION_ERROR:
	case CR_CONN_HOST_ERROR:
	case CR_SERVER_GONE_ERROR:
	case CR_SERVER_LOST:
	case CR_SERVER_LOST_EXTENDED:
	case CR_ERR_NET_READ:
	case CR_ERR_NET_WRITE:
	case ER_CONNECTION_KILLED:
	case ER_SERVER_SHUTDOWN:
		return 1;
	default:
		return 0;
	}
}

/* Fill OUT with the library's error for the running operation, WHAT
 * saying what was being done, and return the code: RS_ECONNECT for
 * connect and for a lost connection, else RS_EQUERY.  SQLSTATE, errno and
 * retryable are set after backend_fail, which resets them. */
static int
my_error_to(struct my_engine *e, const char *what, struct rs_err *out)
{
	struct rs_backend *backend = e->backend;
	unsigned int en = e->mysql != NULL ? mysql_errno(e->mysql) : 0;
	const char *sqlstate = e->mysql != NULL ? mysql_sqlstate(e->mysql) : "";
	const char *message = e->mysql != NULL ? mysql_error(e->mysql) : "";
	int lost = my_errno_is_lost(en);
	int code = e->op == MY_OP_CONNECT || lost ? RS_ECONNECT : RS_EQUERY;
	char named[512];

	if (message == NULL || message[0] == '\0')
		message = "unknown error";
	if (e->table_name != NULL || e->detail[0] != '\0') {
		snprintf(named, sizeof(named), "%s%s%s%s", what,
		         e->table_name != NULL ? " " : "",
		         e->table_name != NULL ? e->table_name : "", e->detail);
		what = named;
	}
	if (e->timed_out && e->op == MY_OP_CONNECT)
		backend_fail(backend, out, code,
		             "could not connect within %d ms", e->timeout_ms);
	else if (e->timed_out)
		code = backend_fail_deadline(backend, out, what, e->op_bound_ms,
		                             "the connection was closed");
	else if (e->uv_error != 0)
		backend_fail(
			backend, out, code,
			"%s: cannot watch the connection's socket (%s): %s",
			what, uv_strerror(e->uv_error), message);
	else if (en == 1242 && e->op == MY_OP_UPSERT && !e->loading) {
		/* mysql_sql_upsert's guard: a clash on another unique
		 * index, as an INSERT reports one.  (A load has no guard;
		 * a subquery of the user's, in a trigger, would be taken
		 * for it: rare, and the rows stay unwritten either way.) */
		backend_fail(backend, out, code,
		             "%s: a row there with another primary key holds "
		             "the same value of one of the table's unique "
		             "indexes (MariaDB would have updated that row "
		             "instead; nothing was written): rows of two "
		             "sources hold one value, or the row there is a "
		             "stale copy from a source that lacks that index "
		             "(change the value on one source, or delete the "
		             "stale copy there)",
		             what);
		sqlstate = "23000";
	} else
		backend_fail(backend, out, code,
		             "%s: %s%s (MariaDB error %u, SQLSTATE %s)", what,
		             lost && e->op != MY_OP_CONNECT
		                     ? "the connection was lost: "
		                     : "",
		             message, en, sqlstate);
	if (sqlstate != NULL)
		snprintf(out->sqlstate, sizeof(out->sqlstate), "%s", sqlstate);
	out->server_errno = (int)en;
	out->retryable = rs_err_retryable(sqlstate, (int)en);
	return code;
}

/* my_error_to into e->err. */
static int
my_error(struct my_engine *e, const char *what)
{
	return my_error_to(e, what, &e->err);
}

/* ---- ending an operation -------------------------------------------- */

/* Point ROWS at the values of the stored result RES (n_cols per row).
 * Returns 0 with *VALUES to free after the callback, or RS_EINTERNAL /
 * RS_ENOMEM with e->err filled. */
static int
my_rows(struct my_engine *e, MYSQL_RES *res, struct rs_rows *rows,
        struct rs_value **values)
{
	uint64_t n = mysql_num_rows(res);
	int n_cols = e->n_cols;
	struct rs_value *v;

	*values = NULL;
	if ((int)mysql_num_fields(res) != n_cols)
		return backend_fail(e->backend, &e->err, RS_EINTERNAL,
		                    "reading table %s: %u columns came back, "
		                    "%d expected",
		                    e->table_name, mysql_num_fields(res),
		                    n_cols);
	if (n_cols > 0 && n > (uint64_t)(INT_MAX / n_cols))
		return backend_fail(e->backend, &e->err, RS_EINTERNAL,
		                    "reading table %s: batch too large",
		                    e->table_name);
	v = calloc((size_t)n * (size_t)n_cols + 1, sizeof(*v));
	if (v == NULL)
		return backend_fail(e->backend, &e->err, RS_ENOMEM,
		                    "out of memory");
	for (uint64_t i = 0; i < n; i++) {
		MYSQL_ROW row = mysql_fetch_row(res);
		unsigned long *lengths = mysql_fetch_lengths(res);

		if (row == NULL || lengths == NULL) {
			free(v);
			return backend_fail(
				e->backend, &e->err, RS_EINTERNAL,
				"reading table %s: row %llu missing "
				"from a stored result",
				e->table_name, (unsigned long long)i);
		}
		for (int j = 0; j < n_cols; j++) {
			struct rs_value *value =
				&v[i * (uint64_t)n_cols + (uint64_t)j];

			value->text = row[j];
			value->len = row[j] != NULL ? lengths[j] : 0;
		}
	}
	rows->n_rows = (int)n;
	rows->n_cols = n_cols;
	rows->values = v;
	*values = v;
	return 0;
}

/* Point the N values VALS at their bytes in TEXT, where the non-NULL
 * ones are one after the other, each followed by a NUL: while they were
 * copied, their text held only a non-NULL marker. */
static void
my_point_values(struct rs_value *vals, size_t n, char *text)
{
	size_t at = 0;

	for (size_t i = 0; i < n; i++) {
		if (vals[i].text == NULL)
			continue;
		vals[i].text = text + at;
		at += vals[i].len + 1;
	}
}

/* Point ROWS at the scan batch VALS (e->scan_n rows of e->scan_cols),
 * whose values are in TEXT (my_point_values). */
static void
my_scan_batch(struct my_engine *e, struct rs_value *vals, char *text,
              struct rs_rows *rows)
{
	my_point_values(vals, (size_t)e->scan_n * (size_t)e->scan_cols, text);
	rows->n_rows = e->scan_n;
	rows->n_cols = e->scan_cols;
	rows->values = vals;
}

/* End the scan without any I/O: its result is dropped unread (the
 * library would read the rest in mysql_free_result; clearing the
 * result's handle, as mysql_fetch_row does at the end, keeps it from
 * that), for a scan that failed or a connection about to close. */
static void
my_scan_drop(struct my_engine *e)
{
	if (e->scan_res != NULL) {
		e->scan_res->handle = NULL;
		mysql_free_result(e->scan_res);
		e->scan_res = NULL;
	}
	e->scanning = 0;
	e->scan_table = NULL;
}

/* Free the statements of an upsert, delete or scan. */
static void
my_free_stmts(struct my_engine *e)
{
	mysql_sql_stmts_free(&e->stmts);
	e->next_stmt = 0;
	strbuf_clear(&e->load_data);
	e->load_off = 0;
	e->loading = 0;
}

/* Free what a stepped operation owns and empty ST. */
static void
my_steps_free(struct my_steps *st)
{
	for (int i = 0; i < st->n_names; i++)
		free(st->names[i]);
	free(st->names);
	free(st->text);
	free(st->made);
	free(st->markers);
	free(st->facts);
	free(st->vals);
	strbuf_clear(&st->rows_text);
	*st = (struct my_steps){0};
}

/* Call the callback of the stepped operation ST (taken out of the engine)
 * with STATUS and ERR (NULL when STATUS is 0), and what ST found. */
static void
my_steps_reply(struct rs_backend *backend, const struct my_steps *st,
               const union my_cb *cb, int status, const struct rs_err *err,
               void *arg)
{
	int ok = status == 0;

	switch (st->reply) {
	case MY_REPLY_DONE:
		cb->done(backend, status, err, arg);
		break;
	case MY_REPLY_COUNT:
		cb->count(backend, status, err, ok ? st->value : 0, arg);
		break;
	case MY_REPLY_MARKERS:
		cb->markers(backend, status, err, ok ? st->markers : NULL,
		            ok ? st->n_markers : 0, arg);
		break;
	case MY_REPLY_POSITION:
		cb->position(backend, status, err, ok ? st->position : NULL,
		             arg);
		break;
	case MY_REPLY_REPLICATION:
		cb->replication(backend, status, err,
		                ok ? &st->replication : NULL, arg);
		break;
	case MY_REPLY_ROWS:
		cb->rows(backend, status, err, ok ? &st->rows : NULL, arg);
		break;
	}
}

/* End the running operation with STATUS (0, or a code whose message is in
 * e->err) and call its callback.  Everything the callback might disturb
 * is taken out of the engine first: the callback may start the next
 * operation or close the backend, and nothing here touches the engine
 * after calling it. */
static void
my_finish(struct my_engine *e, int status)
{
	struct rs_backend *backend = e->backend;
	enum my_op op = e->op;
	struct rs_table_def *table = e->table;
	MYSQL_RES *res = e->rows_result;
	struct rs_value *values = NULL;
	struct rs_rows rows = {0, 0, NULL};
	struct rs_err err;
	void *arg = e->arg;
	rs_backend_cb done = e->cb.done;
	rs_describe_cb describe = e->cb.describe;
	rs_rows_cb rows_cb = e->cb.rows;
	union my_cb cb = e->cb;
	struct my_steps st = {0};
	struct rs_value *scan_vals = NULL;
	char *scan_text = NULL;

	if (op == MY_OP_SCAN_NEXT) {
		/* The batch leaves the engine: the callback may ask for the
		 * next one, which fills new buffers. */
		scan_vals = e->scan_vals;
		scan_text = e->scan_text.text;
		e->scan_vals = NULL;
		e->scan_text = (struct rs_strbuf){0};
		if (status == 0)
			my_scan_batch(e, scan_vals, scan_text, &rows);
	}
	if (op == MY_OP_SCAN_END ||
	    (status != 0 && (op == MY_OP_SCAN_BEGIN || op == MY_OP_SCAN_NEXT)))
		my_scan_drop(e);
	if (status == 0 && op == MY_OP_READ) {
		if (res != NULL)
			status = my_rows(e, res, &rows, &values);
		else
			status = backend_fail(backend, &e->err, RS_EINTERNAL,
			                      "reading table %s: no result set",
			                      e->table_name);
	}
	if (status == 0 && op == MY_OP_CONNECT)
		e->connected = 1;
	if (op == MY_OP_STEPS) {
		/* Its results leave the engine, and the peer is free again:
		 * the callback may start the next operation on either. */
		st = e->st;
		e->st = (struct my_steps){0};
		if (st.peer != NULL)
			st.peer->backend->busy = 0;
	}
	if (status != 0) {
		err = e->err;
		backend_table_free(table);
		table = NULL;
	}
	my_free_stmts(e);
	e->detail[0] = '\0';
	e->what = NULL;
	e->purging = 0;
	e->op = MY_OP_NONE;
	e->table = NULL;
	e->rows_result = NULL;
	e->deadline_on = 0;
	e->status = 0;
	free(e->table_name);
	e->table_name = NULL;
	backend->busy = 0;
	switch (op) {
	case MY_OP_CONNECT:
	case MY_OP_EXEC:
	case MY_OP_UPSERT:
	case MY_OP_DELETE:
	case MY_OP_SCAN_BEGIN:
	case MY_OP_SCAN_END:
		done(backend, status, status != 0 ? &err : NULL, arg);
		break;
	case MY_OP_DESCRIBE:
		describe(backend, status, status != 0 ? &err : NULL, table,
		         arg);
		break;
	case MY_OP_READ:
	case MY_OP_SCAN_NEXT:
		rows_cb(backend, status, status != 0 ? &err : NULL,
		        status != 0 ? NULL : &rows, arg);
		break;
	case MY_OP_STEPS:
		my_steps_reply(backend, &st, &cb, status,
		               status != 0 ? &err : NULL, arg);
		break;
	default:
		break;
	}
	my_steps_free(&st);
	free(scan_vals);
	free(scan_text);
	free(values);
	mysql_free_result(res);
}

/* Fail the running operation with the library's error. */
static void
my_fail(struct my_engine *e, const char *what)
{
	my_finish(e, my_error(e, what));
}

/* What the running operation was doing, for its error message. */
static const char *
my_what(const struct my_engine *e)
{
	switch (e->op) {
	case MY_OP_CONNECT: /* the connect call itself is handled apart */
		return "could not set up the session";
	case MY_OP_DESCRIBE:
		return "could not describe table";
	case MY_OP_READ:
		return "could not read table";
	case MY_OP_SCAN_BEGIN:
		return e->txn == MY_TXN_BEGIN ? "could not start the snapshot "
		                                "transaction to scan table"
		                              : "could not scan table";
	case MY_OP_SCAN_NEXT:
		return "could not scan table";
	case MY_OP_SCAN_END:
		return "could not end the scan of table";
	case MY_OP_STEPS:
	case MY_OP_PEER:
		return e->what != NULL ? e->what : "statement failed";
	case MY_OP_UPSERT:
	case MY_OP_DELETE:
		switch (e->txn) {
		case MY_TXN_PURGE_ON:
			return "could not mark the session as purging (SET "
			       "@reshard_purging) for table";
		case MY_TXN_PURGE_OFF:
			return "could not clear @reshard_purging after the "
			       "purge (its deletes were committed) of table";
		case MY_TXN_BEGIN:
			return "could not start a transaction for table";
		case MY_TXN_COMMIT:
			if (e->op == MY_OP_DELETE)
				return "could not commit the delete from table";
			return e->loading ? "could not commit the load into "
			                    "table"
			                  : "could not commit the upsert into "
			                    "table";
		default:
			if (e->op == MY_OP_DELETE)
				return "could not delete from table";
			return e->loading ? "could not load rows (LOAD DATA "
			                    "LOCAL) into table"
			                  : "could not upsert into table";
		}
	default:
		return "statement failed";
	}
}

/* ---- describe ------------------------------------------------------- */

/* The columns of my_take_describe, each one's unique indexes left in
 * UNIQUES (pointers into RES). */
static int
my_take_columns(struct my_engine *e, MYSQL_RES *res, const char **uniques)
{
	struct rs_backend *backend = e->backend;
	uint64_t n = mysql_num_rows(res);
	struct rs_table_def *t;
	MYSQL_ROW row;
	int n_pk = 0;

	if (n == 0) {
		if (backend->url.database == NULL)
			return backend_fail(backend, &e->err, RS_ESCHEMA,
			                    "table %s does not exist: the URL "
			                    "names no database",
			                    e->table_name);
		return backend_fail(backend, &e->err, RS_ESCHEMA,
		                    "table %s does not exist in database %s",
		                    e->table_name, backend->url.database);
	}
	if (mysql_num_fields(res) != 8 || n > INT_MAX)
		return backend_fail(backend, &e->err, RS_EINTERNAL,
		                    "describing table %s: unexpected catalog "
		                    "result",
		                    e->table_name);
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		goto oom;
	e->table = t;
	t->estimated_rows = -1;
	if ((t->name = strdup(e->table_name)) == NULL ||
	    (t->columns = calloc((size_t)n, sizeof(*t->columns))) == NULL ||
	    (t->pk = calloc((size_t)n, sizeof(*t->pk))) == NULL)
		goto oom;
	for (int i = 0; i < (int)n; i++)
		t->pk[i] = -1;
	while ((row = mysql_fetch_row(res)) != NULL && t->n_columns < (int)n) {
		int i = t->n_columns++;
		struct rs_column *c = &t->columns[i];
		int is_json = row[4] != NULL && strcmp(row[4], "0") != 0;

		if (row[0] == NULL || row[1] == NULL)
			return backend_fail(backend, &e->err, RS_EINTERNAL,
			                    "describing table %s: a column "
			                    "without name or type",
			                    e->table_name);
		if ((c->name = strdup(row[0])) == NULL ||
		    (c->type = strdup(row[1])) == NULL)
			goto oom;
		c->kind = canonical_kind_mysql(is_json ? "json" : row[1]);
		c->generated = row[6] != NULL && strcmp(row[6], "1") == 0;
		if (row[2] != NULL) {
			long seq = strtol(row[2], NULL, 10);

			if (seq < 1 || seq > (long)n || t->pk[seq - 1] != -1)
				return backend_fail(backend, &e->err,
				                    RS_EINTERNAL,
				                    "describing table %s: "
				                    "primary key position %s "
				                    "out of order",
				                    e->table_name, row[2]);
			t->pk[seq - 1] = i;
			n_pk++;
		}
		if (row[3] != NULL)
			t->estimated_rows = strtoll(row[3], NULL, 10);
		if (row[5] != NULL && t->cascades == NULL &&
		    (t->cascades = strdup(row[5])) == NULL)
			goto oom;
		uniques[i] = row[7];
	}
	for (int i = 0; i < n_pk; i++)
		if (t->pk[i] == -1)
			return backend_fail(backend, &e->err, RS_EINTERNAL,
			                    "describing table %s: primary key "
			                    "position %d missing",
			                    e->table_name, i + 1);
	t->n_pk = n_pk;
	if (n_pk == 0)
		return backend_fail(backend, &e->err, RS_ESCHEMA,
		                    "table %s has no primary key; reshard "
		                    "needs one to read in key order and to "
		                    "resume",
		                    e->table_name);
	return 0;
oom:
	return backend_fail(backend, &e->err, RS_ENOMEM, "out of memory");
}

/* Build e->table from the describe query's result: one row per column in
 * order, with COLUMN_NAME, COLUMN_TYPE, the column's SEQ_IN_INDEX in the
 * primary key (NULL outside it), TABLE_ROWS, whether it is a MariaDB
 * JSON column, the table's cascading foreign keys, whether generated and
 * the unique indexes it is part of (backend_table_uniques).  Returns 0, or
 * RS_ESCHEMA (no such table, no primary key), RS_EINTERNAL (a broken key)
 * or RS_ENOMEM with e->err filled. */
static int
my_take_describe(struct my_engine *e, MYSQL_RES *res)
{
	const char **uniques =
		calloc((size_t)mysql_num_rows(res) + 1, sizeof(*uniques));
	int rc = uniques == NULL ? backend_fail(e->backend, &e->err, RS_ENOMEM,
	                                        "out of memory")
	                         : my_take_columns(e, res, uniques);

	if (rc == 0 && backend_table_uniques(e->table, uniques) != 0)
		rc = backend_fail(e->backend, &e->err, RS_ENOMEM,
		                  "out of memory");
	free(uniques);
	return rc;
}

/* ---- the driver ----------------------------------------------------- */

static void
my_on_closed(uv_handle_t *handle)
{
	struct my_engine *e = handle->data;

	if (handle != (uv_handle_t *)&e->timer)
		free(handle);
	if (--e->open_handles == 0 && e->state == MY_CLOSED) {
		struct rs_backend *backend = e->backend;
		void (*closed)(struct rs_backend *) = e->closed;

		backend->engine = NULL;
		free(e);
		closed(backend);
	}
}

/* Close the poll handle: its socket is gone or replaced. */
static void
my_drop_poll(struct my_engine *e)
{
	uv_close((uv_handle_t *)e->poll, my_on_closed);
	e->poll = NULL;
	e->poll_fd = -1;
}

/* The library's socket after a call returned STATUS, or -1 when it has
 * none; a poll handle on any other socket is dropped.  mysql_get_socket
 * is asked only while the connection has a transport (or a connect is
 * suspended): after a failed connect it would read freed memory. */
static int
my_track_socket(struct my_engine *e, int status)
{
	unsigned int type;
	int fd = -1;

	if (e->state == MY_CLOSING && status == 0)
		fd = -1; /* mysql_close freed everything */
	else if ((e->state == MY_CONNECTING && status != 0) ||
	         (e->mysql != NULL &&
	          mariadb_get_infov(e->mysql, MARIADB_CONNECTION_PVIO_TYPE,
	                            &type) == 0))
		fd = (int)mysql_get_socket(e->mysql);
	if (e->poll != NULL && e->poll_fd != fd)
		my_drop_poll(e);
	return fd;
}

static void my_on_poll(uv_poll_t *poll, int status, int events);
static void my_on_timer(uv_timer_t *timer);

/* Arm the watchers for the wait mask STATUS on socket FD: the poll for
 * READ/WRITE/EXCEPT (made on FD the first time one is needed), the timer
 * for the library's timeout or the operation's deadline, whichever comes
 * first.  Returns 0, or a libuv error with nothing armed. */
static int
my_wait(struct my_engine *e, int status, int fd)
{
	uv_loop_t *loop = e->backend->loop;
	int events = 0;
	int64_t ms = -1;
	int rc;

	e->wait = status;
	e->timer_is_deadline = 0;
	if (status & MYSQL_WAIT_READ)
		events |= UV_READABLE;
	if (status & MYSQL_WAIT_WRITE)
		events |= UV_WRITABLE;
	if (status & MYSQL_WAIT_EXCEPT)
		events |= UV_PRIORITIZED;
	if (events != 0) {
		if (fd < 0)
			return UV_EBADF;
		if (e->poll == NULL) {
			uv_poll_t *poll = malloc(sizeof(*poll));

			if (poll == NULL)
				return UV_ENOMEM;
			rc = uv_poll_init(loop, poll, fd);
			if (rc != 0) {
				free(poll);
				return rc;
			}
			poll->data = e;
			e->poll = poll;
			e->poll_fd = fd;
			e->open_handles++;
		}
		rc = uv_poll_start(e->poll, events, my_on_poll);
		if (rc != 0)
			return rc;
	}
	if (status & MYSQL_WAIT_TIMEOUT)
		ms = (int64_t)mysql_get_timeout_value_ms(e->mysql);
	if (e->deadline_on) {
		uint64_t now = uv_now(loop);
		int64_t left =
			e->deadline > now ? (int64_t)(e->deadline - now) : 0;

		if (ms < 0 || left <= ms) {
			ms = left;
			e->timer_is_deadline = 1;
		}
	}
	if (ms >= 0) {
		rc = uv_timer_start(&e->timer, my_on_timer, (uint64_t)ms, 0);
		if (rc != 0) {
			if (e->poll != NULL)
				uv_poll_stop(e->poll);
			return rc;
		}
	} else if (events == 0) {
		return UV_EINVAL; /* nothing we know how to wait for */
	}
	return 0;
}

/* Resume the suspended call with the events READY: the stored
 * continuation is the _cont of the call named by e->state.  Returns the
 * call's new wait mask, 0 when it finished. */
static int
my_cont(struct my_engine *e, int ready)
{
	switch (e->state) {
	case MY_CONNECTING:
		return mysql_real_connect_cont(&e->connect_ret, e->mysql,
		                               ready);
	case MY_QUERYING:
		return mysql_real_query_cont(&e->query_ret, e->mysql, ready);
	case MY_STORING:
		return mysql_store_result_cont(&e->result, e->mysql, ready);
	case MY_NEXTING:
		return mysql_next_result_cont(&e->query_ret, e->mysql, ready);
	case MY_FETCHING:
		return mysql_fetch_row_cont(&e->fetch_row, e->scan_res, ready);
	case MY_FREEING:
		return mysql_free_result_cont(e->scan_res, ready);
	case MY_CLOSING:
		return mysql_close_cont(e->mysql, ready);
	default:
		return 0;
	}
}

/* Start the library call for STATE and drive it. */
static void
my_start(struct my_engine *e, enum my_state state)
{
	int status = 0;

	e->state = state;
	switch (state) {
	case MY_CONNECTING:
		e->connect_ret = NULL;
		status = mysql_real_connect_start(
			&e->connect_ret, e->mysql, e->target.host,
			e->target.user, e->target.password, e->target.db,
			e->target.port, e->target.unix_socket,
			CLIENT_MULTI_RESULTS);
		break;
	case MY_QUERYING:
		e->query_ret = 0;
		status = mysql_real_query_start(&e->query_ret, e->mysql, e->sql,
		                                (unsigned long)e->sql_len);
		break;
	case MY_STORING:
		e->result = NULL;
		status = mysql_store_result_start(&e->result, e->mysql);
		break;
	case MY_NEXTING:
		e->query_ret = 0;
		status = mysql_next_result_start(&e->query_ret, e->mysql);
		break;
	case MY_FREEING:
		status = mysql_free_result_start(e->scan_res);
		break;
	case MY_CLOSING:
		status = mysql_close_start(e->mysql);
		break;
	default:
		break;
	}
	my_drive(e, status);
}

static void
my_free_sql(struct my_engine *e)
{
	if (e->sql_owned)
		free(e->sql);
	e->sql = NULL;
	e->sql_len = 0;
	e->sql_owned = 0;
}

/* Send SQL (OWNED: ours to free) for the running operation. */
static void
my_send(struct my_engine *e, char *sql, size_t len, int owned)
{
	my_free_sql(e);
	e->sql = sql;
	e->sql_len = len;
	e->sql_owned = owned;
	e->result_seen = 0;
	my_start(e, MY_QUERYING);
}

/* Whether the running operation is an upsert or delete transaction. */
static int
my_is_write(const struct my_engine *e)
{
	return e->op == MY_OP_UPSERT || e->op == MY_OP_DELETE;
}

/* Whether the running operation's statements go through e->txn: an
 * upsert, a delete, or a step of the scan. */
static int
my_in_txn(const struct my_engine *e)
{
	return my_is_write(e) || e->op == MY_OP_SCAN_BEGIN ||
	       e->op == MY_OP_SCAN_NEXT || e->op == MY_OP_SCAN_END;
}

/* The purge's transaction is over (committed, or rolled back after a
 * failure kept in e->status): clear @reshard_purging. */
static void
my_purge_off(struct my_engine *e)
{
	e->txn = MY_TXN_PURGE_OFF;
	my_send(e, (char *)mysql_sql_purging_off, strlen(mysql_sql_purging_off),
	        0);
}

/* A statement of an upsert's or delete's transaction succeeded: send the
 * next one (START TRANSACTION, the statements in order, COMMIT), or end
 * the operation after COMMIT, or after the ROLLBACK that followed a
 * failure (whose code is e->status). */
static void
my_write_next(struct my_engine *e)
{
	switch (e->txn) {
	case MY_TXN_PURGE_ON:
		e->txn = MY_TXN_BEGIN;
		my_send(e, (char *)my_begin_sql, sizeof(my_begin_sql) - 1, 0);
		return;
	case MY_TXN_PURGE_OFF:
		my_finish(e, e->status);
		return;
	case MY_TXN_BEGIN:
	case MY_TXN_DML:
		/* LOAD DATA LOCAL skips a key that is there already with
		 * a warning (and warns of a value it had to change): the
		 * batch is rolled back and the caller upserts it. */
		if (e->loading && e->txn == MY_TXN_DML &&
		    mysql_warning_count(e->mysql) > 0) {
			e->status = backend_fail(
				e->backend, &e->err, RS_EQUERY,
				"loading into table %s: %u warnings (a key "
				"there already, or a value changed); the "
				"batch is upserted instead",
				e->table_name, mysql_warning_count(e->mysql));
			snprintf(e->err.sqlstate, sizeof(e->err.sqlstate), "%s",
			         "23000");
			e->txn = MY_TXN_ROLLBACK;
			my_send(e, (char *)my_rollback_sql,
			        sizeof(my_rollback_sql) - 1, 0);
			return;
		}
		if (e->next_stmt < e->stmts.n) {
			struct mysql_sql_stmt *s = &e->stmts.v[e->next_stmt++];

			e->txn = MY_TXN_DML;
			my_send(e, s->sql, s->len, 0);
			return;
		}
		e->txn = MY_TXN_COMMIT;
		my_send(e, (char *)my_commit_sql, sizeof(my_commit_sql) - 1, 0);
		return;
	case MY_TXN_COMMIT:
		if (e->purging) {
			my_purge_off(e);
			return;
		}
		my_finish(e, 0);
		return;
	case MY_TXN_ROLLBACK:
		if (e->purging) {
			my_purge_off(e);
			return;
		}
		my_finish(e, e->status);
		return;
	}
}

static void my_step_result(struct my_engine *e, int status);

/* Whether the running operation is stepped, or one statement of one. */
static int
my_is_stepped(const struct my_engine *e)
{
	return e->op == MY_OP_STEPS || e->op == MY_OP_PEER;
}

/* The statement sent last has no more results: end the operation, or
 * move its transaction on. */
static void
my_statement_done(struct my_engine *e)
{
	my_free_sql(e);
	if (my_is_stepped(e))
		my_step_result(e, 0);
	else if (my_in_txn(e))
		my_write_next(e);
	else
		my_finish(e, e->status);
}

/* The statement sent last failed: fail the operation with the library's
 * error.  In an upsert's or delete's transaction the error is kept and
 * ROLLBACK sent first, so that nothing stays written and the connection is
 * ready for the next operation; a lost connection ends at once (the
 * server rolls back what the session left open), and so does a failed
 * ROLLBACK, with the error that caused it. */
static void
my_query_failed(struct my_engine *e)
{
	int code;

	my_free_sql(e);
	if (my_is_stepped(e)) {
		/* The step decides; a peer's error goes to its owner. */
		code = my_error_to(e, my_what(e),
		                   e->op == MY_OP_STEPS ? &e->st.err : &e->err);
		mysql_free_result(e->rows_result);
		e->rows_result = NULL;
		my_step_result(e, code);
		return;
	}
	if (!my_in_txn(e)) {
		my_fail(e, my_what(e));
		return;
	}
	if (e->txn == MY_TXN_PURGE_ON) {
		my_fail(e, my_what(e)); /* nothing was done yet */
		return;
	}
	if (e->txn == MY_TXN_PURGE_OFF) {
		/* The first failure is the one to report; a purge that
		 * worked reports this one.  A SET fails only with its
		 * connection (lost or timed out), and the variable ends
		 * with the session. */
		if (e->status != 0)
			my_finish(e, e->status);
		else
			my_fail(e, my_what(e));
		return;
	}
	if (e->txn == MY_TXN_ROLLBACK) {
		if (e->purging && e->mysql != NULL &&
		    !my_errno_is_lost(mysql_errno(e->mysql))) {
			my_purge_off(e);
			return;
		}
		my_finish(e, e->status);
		return;
	}
	if (!my_is_write(e)) {
		/* a scan: no rows of the caller's to name */
	} else if (e->txn == MY_TXN_DML && e->next_stmt > 0) {
		const struct mysql_sql_stmt *s = &e->stmts.v[e->next_stmt - 1];

		snprintf(e->detail, sizeof(e->detail),
		         " (%s %d to %d of %d, statement %d of %d)",
		         e->op == MY_OP_UPSERT ? "rows" : "keys",
		         s->first_row + 1, s->first_row + s->n_rows,
		         e->batch_rows, e->next_stmt, e->stmts.n);
	} else if (e->txn == MY_TXN_COMMIT && e->mysql != NULL &&
	           my_errno_is_lost(mysql_errno(e->mysql))) {
		snprintf(e->detail, sizeof(e->detail),
		         " (whether it was committed is unknown: repeat the "
		         "batch)");
	}
	code = my_error(e, my_what(e));
	if (code == RS_ECONNECT) {
		my_finish(e, code);
		return;
	}
	/* A server that takes no LOAD DATA LOCAL (MySQL's default, or
	 * local_infile off): this batch and the next ones are upserts. */
	if (e->loading && e->mysql != NULL &&
	    (mysql_errno(e->mysql) == 1148 || mysql_errno(e->mysql) == 3948 ||
	     mysql_errno(e->mysql) == 4166)) {
		e->no_load = 1;
		snprintf(e->err.sqlstate, sizeof(e->err.sqlstate), "%s",
		         "23000");
	}
	e->status = code;
	e->txn = MY_TXN_ROLLBACK;
	my_send(e, (char *)my_rollback_sql, sizeof(my_rollback_sql) - 1, 0);
}

/* One result of the statement arrived (RES, or NULL for a statement
 * without rows): the first one is the operation's, any other is read
 * and dropped so that the connection is ready for the next statement. */
static void
my_take_result(struct my_engine *e, MYSQL_RES *res)
{
	if (!e->result_seen) {
		e->result_seen = 1;
		if (e->op == MY_OP_DESCRIBE && res != NULL) {
			e->status = my_take_describe(e, res);
		} else if ((e->op == MY_OP_READ || my_is_stepped(e)) &&
		           res != NULL) {
			e->rows_result = res;
			res = NULL;
		}
	}
	mysql_free_result(res);
	if (mysql_more_results(e->mysql))
		my_start(e, MY_NEXTING);
	else
		my_statement_done(e);
}

/* Whether the new connection is encrypted, or local (a Unix socket, where
 * Connector/C 3.4 no longer uses TLS).  Connector/C 3.3 quietly connects
 * in clear text when MYSQL_OPT_SSL_ENFORCE is set without certificate
 * verification and the server has no TLS, so ssl-mode=REQUIRED is checked
 * here. */
static int
my_uses_tls(struct my_engine *e)
{
	unsigned int type;

	if (mysql_get_ssl_cipher(e->mysql) != NULL)
		return 1;
	return mariadb_get_infov(e->mysql, MARIADB_CONNECTION_PVIO_TYPE,
	                         &type) == 0 &&
	       type == MARIADB_CONNECTION_UNIXSOCKET;
}

/* The call in e->state finished: move the operation on. */
static void
my_complete(struct my_engine *e)
{
	enum my_state state = e->state;

	e->state = MY_IDLE;
	switch (state) {
	case MY_CONNECTING:
		if (e->connect_ret == NULL) {
			my_fail(e, "could not connect");
			return;
		}
		if (e->require_tls && !my_uses_tls(e)) {
			my_finish(e,
			          backend_fail(e->backend, &e->err, RS_ECONNECT,
			                       "ssl-mode requires TLS but the "
			                       "server did not agree to it"));
			return;
		}
		my_send(e, (char *)my_setup_sql, sizeof(my_setup_sql) - 1, 0);
		return;
	case MY_NEXTING:
		if (e->query_ret < 0) { /* no more results after all */
			my_statement_done(e);
			return;
		}
		/* fallthrough */
	case MY_QUERYING:
		if (e->query_ret != 0) {
			my_query_failed(e);
			return;
		}
		if (e->op == MY_OP_SCAN_BEGIN && e->txn == MY_TXN_DML) {
			my_scan_opened(e);
			return;
		}
		if (mysql_field_count(e->mysql) > 0)
			my_start(e, MY_STORING);
		else
			my_take_result(e, NULL);
		return;
	case MY_STORING:
		if (e->result == NULL) {
			my_query_failed(e);
			return;
		}
		my_take_result(e, e->result);
		return;
	case MY_FETCHING:
		if (my_scan_row(e) == 0)
			my_scan_fetch(e);
		return;
	case MY_FREEING: /* the scan's result is freed */
		e->scan_res = NULL;
		e->scanning = 0;
		e->txn = e->status != 0 ? MY_TXN_ROLLBACK : MY_TXN_COMMIT;
		if (e->status != 0)
			my_send(e, (char *)my_rollback_sql,
			        sizeof(my_rollback_sql) - 1, 0);
		else
			my_send(e, (char *)my_commit_sql,
			        sizeof(my_commit_sql) - 1, 0);
		return;
	case MY_DONE:
		my_finish(e, e->status);
		return;
	case MY_CLOSING:
		e->mysql = NULL;
		e->state = MY_CLOSED;
		uv_timer_stop(&e->timer);
		if (e->poll != NULL)
			my_drop_poll(e);
		uv_close((uv_handle_t *)&e->timer, my_on_closed);
		return;
	default:
		return;
	}
}

/* The one driver: the call in e->state returned STATUS.  0: it finished
 * (delivered from the timer when we are inside a public call).  Else arm
 * the poll and the timer for the wait mask; if that is impossible, resume
 * the call with MYSQL_WAIT_TIMEOUT so that it fails and ends. */
static void
my_drive(struct my_engine *e, int status)
{
	for (;;) {
		int fd = my_track_socket(e, status);
		int rc;

		if (status == 0) {
			if (e->in_call) {
				e->deferred = 1;
				uv_timer_start(&e->timer, my_on_timer, 0, 0);
				return;
			}
			my_complete(e);
			return;
		}
		rc = my_wait(e, status, fd);
		if (rc == 0)
			return;
		e->uv_error = rc;
		status = my_cont(e, MYSQL_WAIT_TIMEOUT);
	}
}

/* Stop both watchers and resume the suspended call with READY. */
static void
my_resume(struct my_engine *e, int ready)
{
	uv_timer_stop(&e->timer);
	if (e->poll != NULL)
		uv_poll_stop(e->poll);
	my_drive(e, my_cont(e, ready));
}

/* End the running operation with STATUS (e->err filled when not 0)
 * through the driver, so that a public call never calls back itself. */
static void
my_end_later(struct my_engine *e, int status)
{
	e->status = status;
	e->state = MY_DONE;
	my_drive(e, 0);
}

/* The scan's SELECT was sent and succeeded: take its result unbuffered
 * and end scan_begin. */
static void
my_scan_opened(struct my_engine *e)
{
	MYSQL_RES *res = mysql_use_result(e->mysql);

	my_free_sql(e);
	if (res == NULL) {
		my_query_failed(e);
		return;
	}
	if ((int)mysql_num_fields(res) != e->scan_cols) {
		/* Cannot happen with the SELECT built here; the rows are read
		 * and dropped before ROLLBACK. */
		e->scan_res = res;
		e->status = backend_fail(e->backend, &e->err, RS_EINTERNAL,
		                         "scanning table %s: %u columns came "
		                         "back, %d expected",
		                         e->table_name, mysql_num_fields(res),
		                         e->scan_cols);
		my_start(e, MY_FREEING);
		return;
	}
	e->scan_res = res;
	e->scanning = 1;
	e->scan_eof = 0;
	my_finish(e, 0);
}

/* A fetch of the scan finished (e->fetch_row): copy the row into the
 * batch, or note the end, or end the step on an error (a lost connection
 * at once, else after ROLLBACK).  Returns 0 to go on fetching, -1 when
 * the step has moved on. */
static int
my_scan_row(struct my_engine *e)
{
	MYSQL_ROW row = e->fetch_row;
	unsigned long *lengths;
	struct rs_value *v;
	int code;

	e->fetch_row = NULL;
	if (row == NULL) {
		/* The end or an error: the library has let go of the
		 * connection (the result's handle is cleared), so freeing the
		 * result reads nothing. */
		if (mysql_errno(e->mysql) == 0) {
			e->scan_eof = 1;
			return 0;
		}
		code = my_error(e, my_what(e));
		mysql_free_result(e->scan_res);
		e->scan_res = NULL;
		e->scanning = 0;
		if (code == RS_ECONNECT) {
			my_end_later(e, code);
			return -1;
		}
		e->status = code;
		e->txn = MY_TXN_ROLLBACK;
		my_send(e, (char *)my_rollback_sql, sizeof(my_rollback_sql) - 1,
		        0);
		return -1;
	}
	lengths = mysql_fetch_lengths(e->scan_res);
	v = &e->scan_vals[(size_t)e->scan_n * (size_t)e->scan_cols];
	for (int j = 0; j < e->scan_cols; j++) {
		v[j].text = NULL;
		v[j].len = 0;
		if (row[j] == NULL)
			continue;
		v[j].len = lengths != NULL ? lengths[j] : strlen(row[j]);
		strbuf_add(&e->scan_text, row[j], v[j].len);
		strbuf_add(&e->scan_text, "", 1);
		v[j].text = row[j]; /* a marker: not NULL (my_scan_batch) */
	}
	if (e->scan_text.failed) {
		/* Read the rest and roll back before failing the step. */
		e->status = backend_fail(e->backend, &e->err, RS_ENOMEM,
		                         "out of memory");
		my_start(e, MY_FREEING);
		return -1;
	}
	e->scan_n++;
	return 0;
}

/* Fetch rows of the scan until the batch is full or the result ends,
 * without returning to the loop while the library has them buffered;
 * then end scan_next. */
static void
my_scan_fetch(struct my_engine *e)
{
	while (e->scan_n < e->scan_limit && !e->scan_eof) {
		int status;

		e->state = MY_FETCHING;
		e->fetch_row = NULL;
		status = mysql_fetch_row_start(&e->fetch_row, e->scan_res);
		if (status != 0) {
			my_drive(e, status);
			return;
		}
		if (my_scan_row(e) != 0)
			return;
	}
	e->scan_text_hint = e->scan_text.len;
	my_end_later(e, 0);
}

static void
my_on_poll(uv_poll_t *poll, int status, int events)
{
	struct my_engine *e = poll->data;
	int ready = 0;

	if (status < 0) {
		/* Let the library try its I/O and meet the error itself. */
		ready = e->wait & (MYSQL_WAIT_READ | MYSQL_WAIT_WRITE |
		                   MYSQL_WAIT_EXCEPT);
	} else {
		if (events & (UV_READABLE | UV_DISCONNECT))
			ready |= MYSQL_WAIT_READ;
		if (events & UV_WRITABLE)
			ready |= MYSQL_WAIT_WRITE;
		if (events & UV_PRIORITIZED)
			ready |= MYSQL_WAIT_EXCEPT;
	}
	if (ready == 0)
		ready = e->wait & ~MYSQL_WAIT_TIMEOUT;
	my_resume(e, ready);
}

static void
my_on_timer(uv_timer_t *timer)
{
	struct my_engine *e = timer->data;

	if (e->deferred) {
		e->deferred = 0;
		my_complete(e);
		return;
	}
	if (e->timer_is_deadline)
		e->timed_out = 1;
	my_resume(e, MYSQL_WAIT_TIMEOUT);
}

/* ---- connect -------------------------------------------------------- */

enum my_param_type {
	MY_PARAM_STRING,  /* a path or name, as it is */
	MY_PARAM_BOOL,    /* 1/0, true/false, yes/no, on/off */
	MY_PARAM_SECONDS, /* a whole number of seconds */
	MY_PARAM_SSL_MODE,
	MY_PARAM_CONNECT_TIMEOUT,
};

/* The URL query parameters understood, with the mysql_optionsv option
 * each sets.  ssl-mode takes MySQL's values: DISABLED and PREFERRED leave
 * TLS to the driver's defaults and the option files, REQUIRED enforces
 * TLS (MYSQL_OPT_SSL_ENFORCE, and the connection is refused unless it is
 * encrypted or over a Unix socket), VERIFY_CA and VERIFY_IDENTITY also
 * verify the server's certificate and name
 * (MYSQL_OPT_SSL_VERIFY_SERVER_CERT; Connector/C checks both together).
 * connect-timeout (seconds) replaces the plan's connect timeout. */
static const struct my_param {
	const char *name;
	enum my_param_type type;
	enum mysql_option option;
} my_params[] = {
	{"ssl-mode", MY_PARAM_SSL_MODE, MYSQL_OPT_SSL_ENFORCE},
	{"ssl-ca", MY_PARAM_STRING, MYSQL_OPT_SSL_CA},
	{"ssl-capath", MY_PARAM_STRING, MYSQL_OPT_SSL_CAPATH},
	{"ssl-cert", MY_PARAM_STRING, MYSQL_OPT_SSL_CERT},
	{"ssl-key", MY_PARAM_STRING, MYSQL_OPT_SSL_KEY},
	{"ssl-cipher", MY_PARAM_STRING, MYSQL_OPT_SSL_CIPHER},
	{"ssl-crl", MY_PARAM_STRING, MYSQL_OPT_SSL_CRL},
	{"ssl-crlpath", MY_PARAM_STRING, MYSQL_OPT_SSL_CRLPATH},
	{"tls-version", MY_PARAM_STRING, MARIADB_OPT_TLS_VERSION},
	{"ssl-verify-server-cert", MY_PARAM_BOOL,
         MYSQL_OPT_SSL_VERIFY_SERVER_CERT},
	{"connect-timeout", MY_PARAM_CONNECT_TIMEOUT,
         MYSQL_OPT_CONNECT_TIMEOUT},
	{"read-timeout", MY_PARAM_SECONDS, MYSQL_OPT_READ_TIMEOUT},
	{"write-timeout", MY_PARAM_SECONDS, MYSQL_OPT_WRITE_TIMEOUT},
};

/* Parse TEXT as a boolean into *OUT.  Returns 0 or -1. */
static int
my_parse_bool(const char *text, my_bool *out)
{
	static const char *const yes[] = {"1", "true", "yes", "on"};
	static const char *const no[] = {"0", "false", "no", "off"};

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(text, yes[i]) == 0) {
			*out = 1;
			return 0;
		}
		if (strcasecmp(text, no[i]) == 0) {
			*out = 0;
			return 0;
		}
	}
	return -1;
}

/* Parse TEXT as seconds, 1 to 86400, into *OUT.  Returns 0 or -1. */
static int
my_parse_seconds(const char *text, unsigned int *out)
{
	char *end;
	long v = strtol(text, &end, 10);

	if (end == text || *end != '\0' || v < 1 || v > 86400)
		return -1;
	*out = (unsigned int)v;
	return 0;
}

/* Apply one URL parameter to e->mysql.  Returns 0, or RS_EUSAGE with ERR
 * naming the parameter when it is unknown, its value is malformed or the
 * driver refuses it. */
static int
my_apply_param(struct my_engine *e, const struct rs_url_param *param,
               struct rs_err *err)
{
	struct rs_backend *backend = e->backend;
	const struct my_param *p = NULL;
	my_bool flag;
	unsigned int seconds;
	int rc = 0;

	for (size_t i = 0; i < sizeof(my_params) / sizeof(my_params[0]); i++)
		if (url_param_name_is(param, my_params[i].name))
			p = &my_params[i];
	if (p == NULL)
		return backend_fail(
			backend, err, RS_EUSAGE,
			"unknown URL parameter '%s' (known: ssl-mode, ssl-ca, "
			"ssl-capath, ssl-cert, ssl-key, ssl-cipher, ssl-crl, "
			"ssl-crlpath, tls-version, ssl-verify-server-cert, "
			"connect-timeout, read-timeout, write-timeout)",
			param->name);
	switch (p->type) {
	case MY_PARAM_STRING:
		rc = mysql_optionsv(e->mysql, p->option, param->value);
		break;
	case MY_PARAM_BOOL:
		if (my_parse_bool(param->value, &flag) != 0)
			return backend_fail(backend, err, RS_EUSAGE,
			                    "URL parameter %s=%s: expected 1 "
			                    "or 0",
			                    param->name, param->value);
		rc = mysql_optionsv(e->mysql, p->option, &flag);
		break;
	case MY_PARAM_SECONDS:
	case MY_PARAM_CONNECT_TIMEOUT:
		if (my_parse_seconds(param->value, &seconds) != 0)
			return backend_fail(backend, err, RS_EUSAGE,
			                    "URL parameter %s=%s: expected "
			                    "whole seconds from 1 to 86400",
			                    param->name, param->value);
		if (p->type == MY_PARAM_CONNECT_TIMEOUT)
			e->timeout_ms = (int)seconds * 1000;
		else
			rc = mysql_optionsv(e->mysql, p->option, &seconds);
		break;
	case MY_PARAM_SSL_MODE:
		flag = 1;
		if (strcasecmp(param->value, "DISABLED") == 0 ||
		    strcasecmp(param->value, "PREFERRED") == 0)
			break;
		e->require_tls = 1;
		if (strcasecmp(param->value, "REQUIRED") == 0) {
			rc = mysql_optionsv(e->mysql, MYSQL_OPT_SSL_ENFORCE,
			                    &flag);
			break;
		}
		if (strcasecmp(param->value, "VERIFY_CA") == 0 ||
		    strcasecmp(param->value, "VERIFY_IDENTITY") == 0) {
			rc = mysql_optionsv(e->mysql, MYSQL_OPT_SSL_ENFORCE,
			                    &flag) ||
			     mysql_optionsv(e->mysql,
			                    MYSQL_OPT_SSL_VERIFY_SERVER_CERT,
			                    &flag);
			break;
		}
		return backend_fail(backend, err, RS_EUSAGE,
		                    "URL parameter ssl-mode=%s: expected "
		                    "DISABLED, PREFERRED, REQUIRED, VERIFY_CA "
		                    "or VERIFY_IDENTITY",
		                    param->value);
	}
	if (rc != 0)
		return backend_fail(backend, err, RS_EUSAGE,
		                    "URL parameter %s=%s refused by the "
		                    "MariaDB driver: %s",
		                    param->name, param->value,
		                    mysql_error(e->mysql));
	return 0;
}

/* LOAD DATA LOCAL's infile handler: whatever file the server asks for,
 * it is served the rows of the load in progress (e->load_data), and
 * nothing at all when no load is in progress: a server cannot read a
 * file of this machine. */
static int
my_infile_init(void **ptr, const char *name, void *userdata)
{
	(void)name;
	*ptr = userdata;
	return 0;
}

static int
my_infile_read(void *ptr, char *buf, unsigned int len)
{
	struct my_engine *e = ptr;
	size_t left;

	if (!e->loading)
		return -1;
	left = e->load_data.len - e->load_off;
	if (left > len)
		left = len;
	memcpy(buf, e->load_data.text + e->load_off, left);
	e->load_off += left;
	return (int)left;
}

static void
my_infile_end(void *ptr)
{
	(void)ptr;
}

static int
my_infile_error(void *ptr, char *msg, unsigned int len)
{
	const struct my_engine *e = ptr;

	snprintf(msg, len, "%s",
	         e->loading ? "reading the rows to load failed"
	                    : "reshard sends no file but its own rows");
	return 2000; /* CR_UNKNOWN_ERROR */
}

/* Set e->mysql up: non-blocking, option files of group [client], utf8mb4,
 * LOAD DATA LOCAL served only from memory (my_infile_*), the connect
 * timeout, then the URL's parameters.
 * Returns 0, or RS_ENOMEM / RS_EUSAGE with ERR filled. */
static int
my_configure(struct my_engine *e, struct rs_err *err)
{
	struct rs_backend *backend = e->backend;
	unsigned int yes = 1;
	unsigned int seconds;

	e->timeout_ms = backend->connect_timeout_ms > 0
	                        ? backend->connect_timeout_ms
	                        : 10000;
	e->require_tls = 0;
	if (mysql_options(e->mysql, MYSQL_OPT_NONBLOCK, 0) != 0 ||
	    mysql_options(e->mysql, MYSQL_READ_DEFAULT_GROUP, "client") != 0 ||
	    mysql_options(e->mysql, MYSQL_SET_CHARSET_NAME, "utf8mb4") != 0 ||
	    mysql_options(e->mysql, MYSQL_OPT_LOCAL_INFILE, &yes) != 0)
		return backend_fail(backend, err, RS_ENOMEM,
		                    "cannot set up the MariaDB driver: %s",
		                    mysql_error(e->mysql));
	for (int i = 0; i < e->target.n_options; i++) {
		int rc = my_apply_param(e, &e->target.options[i], err);
		if (rc != 0)
			return rc;
	}
	mysql_set_local_infile_handler(e->mysql, my_infile_init, my_infile_read,
	                               my_infile_end, my_infile_error, e);
	seconds = (unsigned int)((e->timeout_ms + 999) / 1000);
	if (mysql_options(e->mysql, MYSQL_OPT_CONNECT_TIMEOUT, &seconds) != 0)
		return backend_fail(backend, err, RS_ENOMEM,
		                    "cannot set up the MariaDB driver: %s",
		                    mysql_error(e->mysql));
	return 0;
}

/* Make the engine state on first use: the timer lives from here to the
 * end of close.  Returns 0, or RS_ENOMEM / RS_EINTERNAL with ERR filled
 * and nothing made. */
static int
my_engine_new(struct rs_backend *backend, struct rs_err *err)
{
	struct my_engine *e = calloc(1, sizeof(*e));
	int rc;

	if (e == NULL)
		return backend_fail(backend, err, RS_ENOMEM, "out of memory");
	rc = uv_timer_init(backend->loop, &e->timer);
	if (rc != 0) {
		free(e);
		return backend_fail(backend, err, RS_EINTERNAL,
		                    "cannot make a timer: %s", uv_strerror(rc));
	}
	e->timer.data = e;
	e->open_handles = 1;
	e->backend = backend;
	e->poll_fd = -1;
	backend->engine = e;
	return 0;
}

/* Bound the operation that starts now by MS milliseconds from now. */
static void
my_deadline_start(struct my_engine *e, int ms)
{
	uv_loop_t *loop = e->backend->loop;

	/* The loop's clock is as old as its last turn; a step may have
	 * worked for a while since. */
	uv_update_time(loop);
	e->deadline = uv_now(loop) + (uint64_t)ms;
	e->op_bound_ms = ms;
	e->deadline_on = 1;
	e->timed_out = 0;
}

/* Connect (see backend_connect).  Returns RS_EINTERNAL when already
 * connected, RS_EUSAGE for a URL parameter this engine does not take,
 * RS_ENOMEM; the callback then is not called.  The callback gets
 * RS_ECONNECT when the server cannot be reached, refuses the login, or
 * the deadline passes ("could not connect within N ms"). */
static int
my_connect(struct rs_backend *backend, rs_backend_cb cb, void *arg,
           struct rs_err *err)
{
	struct my_engine *e = backend->engine;
	unsigned int type;
	int rc;

	if (e == NULL) {
		rc = my_engine_new(backend, err);
		if (rc != 0)
			return rc;
		e = backend->engine;
	}
	if (e->mysql != NULL) {
		/* A failed connect leaves a MYSQL without a transport, which
		 * mysql_close frees without I/O; a live one must be closed
		 * through backend_close. */
		if (mariadb_get_infov(e->mysql, MARIADB_CONNECTION_PVIO_TYPE,
		                      &type) == 0)
			return backend_fail(backend, err, RS_EINTERNAL,
			                    "already connected (a bug in the "
			                    "caller)");
		mysql_close(e->mysql);
		e->mysql = NULL;
		e->connected = 0;
	}
	rc = url_mysql_target(&backend->url, backend->password, &e->target,
	                      err);
	if (rc != 0)
		return rc;
	e->mysql = mysql_init(NULL);
	if (e->mysql == NULL)
		return backend_fail(backend, err, RS_ENOMEM, "out of memory");
	rc = my_configure(e, err);
	if (rc != 0)
		return rc; /* e->mysql is freed by close */
	e->op = MY_OP_CONNECT;
	e->cb.done = cb;
	e->arg = arg;
	e->status = 0;
	e->uv_error = 0;
	my_deadline_start(e, e->timeout_ms);
	backend->busy = 1;
	e->in_call = 1;
	my_start(e, MY_CONNECTING);
	e->in_call = 0;
	return 0;
}

/* ---- describe, read, exec ------------------------------------------- */

/* The engine when it can run an operation, else NULL with ERR filled
 * (RS_EINTERNAL: not connected). */
static struct my_engine *
my_ready(struct rs_backend *backend, struct rs_err *err)
{
	struct my_engine *e = backend->engine;

	if (e == NULL || !e->connected || e->mysql == NULL) {
		backend_fail(backend, err, RS_EINTERNAL,
		             "not connected (a bug in the caller)");
		return NULL;
	}
	return e;
}

/* Start operation OP that sends SQL (ours now, whatever happens, when
 * OWNED). */
static void
my_begin(struct my_engine *e, enum my_op op, char *sql, size_t len, int owned)
{
	e->op = op;
	e->status = 0;
	e->detail[0] = '\0';
	e->uv_error = 0;
	my_deadline_start(e, e->backend->op_timeout_ms);
	e->backend->busy = 1;
	e->in_call = 1;
	my_send(e, sql, len, owned);
	e->in_call = 0;
}

/* Describe TABLE from information_schema (see backend_describe).  The
 * callback gets RS_ESCHEMA for a missing table or one without a primary
 * key, RS_EQUERY / RS_ECONNECT when the catalog query fails.  Returns
 * RS_EINTERNAL (not connected) or RS_ENOMEM, without calling back. */
static int
my_describe(struct rs_backend *backend, const char *table, rs_describe_cb cb,
            void *arg, struct rs_err *err)
{
	struct my_engine *e = my_ready(backend, err);
	struct mysql_sql_escape esc;
	struct rs_strbuf b = {NULL, 0, 0, 0};
	int json;

	if (e == NULL)
		return RS_EINTERNAL;
	esc = my_escaper(e);
	json = mysql_sql_json_checks(mysql_get_server_info(e->mysql),
	                             mysql_get_server_version(e->mysql));
	if (mysql_sql_describe(&b, &esc, table, json) != 0 ||
	    (e->table_name = strdup(table)) == NULL) {
		free(b.text);
		return backend_fail(backend, err, RS_ENOMEM, "out of memory");
	}
	e->cb.describe = cb;
	e->arg = arg;
	my_begin(e, MY_OP_DESCRIBE, b.text, b.len, 1);
	return 0;
}

/* Read one batch in key order (see backend_read_batch).  Returns
 * RS_EINTERNAL for a malformed request or when not connected, RS_EVALUE
 * for a bound MariaDB cannot take (naming its column and why), RS_ENOMEM;
 * the callback then is not called.  The callback gets RS_EQUERY or
 * RS_ECONNECT when the query fails. */
static int
my_read_batch(struct rs_backend *backend, const struct rs_read_request *request,
              rs_rows_cb cb, void *arg, struct rs_err *err)
{
	struct my_engine *e = my_ready(backend, err);
	const struct rs_table_def *t = request->table;
	struct mysql_sql_escape esc;
	struct rs_strbuf b = {NULL, 0, 0, 0};
	const char *why = "", *column = "";
	int rc;

	if (e == NULL)
		return RS_EINTERNAL;
	if (t == NULL || t->n_pk < 1 || request->limit < 1 ||
	    request->n_columns < 0 ||
	    (request->n_columns > 0 && request->columns == NULL))
		return backend_fail(backend, err, RS_EINTERNAL,
		                    "malformed read request (a bug in the "
		                    "caller)");
	for (int i = 0; i < t->n_pk + request->n_columns; i++) {
		int col =
			i < t->n_pk ? t->pk[i] : request->columns[i - t->n_pk];

		if (col < 0 || col >= t->n_columns)
			return backend_fail(backend, err, RS_EINTERNAL,
			                    "read request names column %d of "
			                    "%d (a bug in the caller)",
			                    col, t->n_columns);
		if (i < t->n_pk &&
		    ((request->after != NULL &&
		      request->after[i].text == NULL) ||
		     (request->upto != NULL && request->upto[i].text == NULL)))
			return backend_fail(
				backend, err, RS_EINTERNAL,
				"read request bounded by a NULL key "
				"(a bug in the caller)");
	}
	esc = my_escaper(e);
	rc = mysql_sql_read(&b, &esc, request, &why, &column);
	if (rc != 0) {
		int oom = b.failed;

		free(b.text);
		if (rc == 1)
			return backend_fail(backend, err, RS_EVALUE,
			                    "read of table %s bounded by key "
			                    "column %s: the value %s",
			                    t->name, column, why);
		return backend_fail(
			backend, err, oom ? RS_ENOMEM : RS_EVALUE,
			"cannot build the query for table %s: %s", t->name,
			oom ? "out of memory"
			    : "the driver's escaping refused a key bound");
	}
	if ((e->table_name = strdup(t->name)) == NULL) {
		free(b.text);
		return backend_fail(backend, err, RS_ENOMEM, "out of memory");
	}
	e->n_cols = t->n_pk + request->n_columns;
	e->cb.rows = cb;
	e->arg = arg;
	my_begin(e, MY_OP_READ, b.text, b.len, 1);
	return 0;
}

/* Run SQL, dropping any rows (see backend_exec).  Returns RS_EINTERNAL
 * (not connected) or RS_ENOMEM without calling back; the callback gets
 * RS_EQUERY when the statement fails, RS_ECONNECT when the connection is
 * lost (killed, server gone). */
static int
my_exec(struct rs_backend *backend, const char *sql, rs_backend_cb cb,
        void *arg, struct rs_err *err)
{
	struct my_engine *e = my_ready(backend, err);
	char *copy;

	if (e == NULL)
		return RS_EINTERNAL;
	if ((copy = strdup(sql)) == NULL)
		return backend_fail(backend, err, RS_ENOMEM, "out of memory");
	e->cb.done = cb;
	e->arg = arg;
	my_begin(e, MY_OP_EXEC, copy, strlen(copy), 1);
	return 0;
}

/* ---- upsert, delete ------------------------------------------------- */

/* Check that ROWS has N_COLS values a row.  Returns 0 or RS_EINTERNAL. */
static int
my_check_rows(struct rs_backend *backend, const struct rs_table_def *t,
              const struct rs_rows *rows, int n_cols, const char *what,
              struct rs_err *err)
{
	if (t == NULL || t->n_pk < 1 || t->n_columns < t->n_pk ||
	    rows == NULL || rows->n_rows < 0 || rows->n_cols != n_cols ||
	    (rows->n_rows > 0 && rows->values == NULL))
		return backend_fail(backend, err, RS_EINTERNAL,
		                    "malformed %s request (a bug in the "
		                    "caller)",
		                    what);
	for (int i = 0; i < t->n_pk; i++)
		if (t->pk[i] < 0 || t->pk[i] >= t->n_columns)
			return backend_fail(backend, err, RS_EINTERNAL,
			                    "malformed %s request: key column "
			                    "%d of %d (a bug in the caller)",
			                    what, t->pk[i], t->n_columns);
	return 0;
}

/* Start the transaction of an upsert or delete whose statements are in
 * e->stmts; a purge (PURGING) sets @reshard_purging first. */
static int
my_write_start(struct my_engine *e, enum my_op op, const char *table, int n,
               int purging, rs_backend_cb cb, void *arg, struct rs_err *err)
{
	if ((e->table_name = strdup(table)) == NULL) {
		my_free_stmts(e);
		return backend_fail(e->backend, err, RS_ENOMEM,
		                    "out of memory");
	}
	e->batch_rows = n;
	e->next_stmt = 0;
	e->cb.done = cb;
	e->arg = arg;
	e->purging = purging;
	if (purging) {
		e->txn = MY_TXN_PURGE_ON;
		my_begin(e, op, (char *)mysql_sql_purging_on,
		         strlen(mysql_sql_purging_on), 0);
		return 0;
	}
	e->txn = MY_TXN_BEGIN;
	my_begin(e, op, (char *)my_begin_sql, sizeof(my_begin_sql) - 1, 0);
	return 0;
}

/* Check ROWS, build the statements of OP (upsert: every column a row;
 * delete: the key columns) and start the transaction. */
static int
my_write(struct rs_backend *backend, enum my_op op,
         const struct rs_table_def *table, const struct rs_rows *rows,
         int purging, rs_backend_cb cb, void *arg, struct rs_err *err)
{
	struct my_engine *e = my_ready(backend, err);
	int upsert = op == MY_OP_UPSERT;
	struct mysql_sql_escape esc;
	struct rs_err local;
	int rc;

	if (e == NULL)
		return RS_EINTERNAL;
	if (table == NULL)
		return backend_fail(backend, err, RS_EINTERNAL,
		                    "%s without a table (a bug)",
		                    upsert ? "upsert" : "delete");
	rc = my_check_rows(backend, table, rows,
	                   upsert ? table->n_columns : table->n_pk,
	                   upsert ? "upsert" : "delete", err);
	if (rc != 0)
		return rc;
	esc = my_escaper(e);
	rc = upsert ? mysql_sql_upsert(&e->stmts, &esc, table, rows, &local)
	            : mysql_sql_delete(&e->stmts, &esc, table, rows, &local);
	if (rc != 0) {
		my_free_stmts(e);
		return backend_fail(backend, err, rc, "%s", local.message);
	}
	return my_write_start(e, op, table->name, rows->n_rows, purging, cb,
	                      arg, err);
}

/* Upsert ROWS (canonical values, every column in the table's order) into
 * TABLE in one transaction (see backend_upsert): START TRANSACTION, the
 * statements of mysql_sql_upsert, COMMIT; after a failed statement ROLLBACK.
 * Returns RS_EINTERNAL (malformed request, not connected), RS_EVALUE (a
 * value MariaDB cannot take, naming row and column) or RS_ENOMEM without
 * calling back and without sending anything.  The callback gets RS_EQUERY
 * when a statement fails (nothing written), RS_ECONNECT when the
 * connection is lost (nothing written, unless it was lost during COMMIT,
 * when the message says the outcome is unknown). */
static int
my_upsert(struct rs_backend *backend, const struct rs_table_def *table,
          const struct rs_rows *rows, rs_backend_cb cb, void *arg,
          struct rs_err *err)
{
	return my_write(backend, MY_OP_UPSERT, table, rows, 0, cb, arg, err);
}

/* Load ROWS, new rows, into TABLE (see backend_load): START TRANSACTION,
 * one LOAD DATA LOCAL INFILE served from memory (mysql_sql_load), COMMIT.
 * A key there already (or any other warning) rolls it back with RS_EQUERY
 * and SQLSTATE 23000, for the caller to upsert instead
 * (backend_load_conflict); so does a server that refuses LOAD DATA LOCAL,
 * after which this connection upserts at once.  Otherwise as my_upsert. */
static int
my_load(struct rs_backend *backend, const struct rs_table_def *table,
        const struct rs_rows *rows, rs_backend_cb cb, void *arg,
        struct rs_err *err)
{
	struct my_engine *e = my_ready(backend, err);
	struct rs_strbuf sql = {0};
	struct rs_err local;
	int rc;

	if (e == NULL)
		return RS_EINTERNAL;
	if (table == NULL) /* my_write says what is wrong */
		return my_upsert(backend, table, rows, cb, arg, err);
	rc = my_check_rows(backend, table, rows, table->n_columns, "load", err);
	if (rc != 0)
		return rc;
	if (e->no_load || rows->n_rows == 0)
		return my_upsert(backend, table, rows, cb, arg, err);
	my_free_stmts(e);
	rc = mysql_sql_load(&sql, &e->load_data, table, rows, &local);
	if (rc == 0 && mysql_sql_push(&e->stmts, &sql, 0, rows->n_rows) != 0)
		rc = rs_err_set(&local, RS_ENOMEM, "out of memory");
	strbuf_clear(&sql);
	if (rc != 0) {
		my_free_stmts(e);
		return backend_fail(backend, err, rc, "%s", local.message);
	}
	e->loading = 1;
	return my_write_start(e, MY_OP_UPSERT, table->name, rows->n_rows, 0, cb,
	                      arg, err);
}

/* Delete the rows of TABLE whose keys are KEYS (canonical values, n_pk a
 * row in key order) in one transaction (see backend_delete_keys), like
 * my_upsert.  Returns RS_EINTERNAL (malformed request, a NULL key, not
 * connected), RS_EVALUE or RS_ENOMEM without calling back; the callback
 * gets RS_EQUERY or RS_ECONNECT as for my_upsert. */
static int
my_delete_keys(struct rs_backend *backend, const struct rs_table_def *table,
               const struct rs_rows *keys, rs_backend_cb cb, void *arg,
               struct rs_err *err)
{
	return my_write(backend, MY_OP_DELETE, table, keys, 0, cb, arg, err);
}

/* Delete like my_delete_keys, without recording the deletes in the
 * table's delete log (see backend_purge_keys): SET @reshard_purging = 1,
 * the delete's transaction, then SET @reshard_purging = NULL, also after
 * a failed transaction (a lost connection takes the variable with it).
 * The log's triggers skip a row while the variable is set, in this
 * session only: every other writer's deletes are still recorded, and a
 * failure rolls the deletes back with nothing logged. */
static int
my_purge_keys(struct rs_backend *backend, const struct rs_table_def *table,
              const struct rs_rows *keys, rs_backend_cb cb, void *arg,
              struct rs_err *err)
{
	return my_write(backend, MY_OP_DELETE, table, keys, 1, cb, arg, err);
}

/* ---- the snapshot scan ---------------------------------------------- */

/* Start the scan (see backend_scan_begin): START TRANSACTION WITH
 * CONSISTENT SNAPSHOT, READ ONLY, then SELECT the columns, taken with
 * mysql_use_result.  Returns RS_EINTERNAL (not connected, a scan already
 * open, a bad request) or RS_ENOMEM without calling back.  The callback
 * gets RS_EQUERY when a statement fails (after ROLLBACK), RS_ECONNECT
 * when the connection is lost. */
static int
my_scan_begin(struct rs_backend *backend, const struct rs_table_def *t,
              const int *columns, int n_columns, rs_backend_cb cb, void *arg,
              struct rs_err *err)
{
	struct my_engine *e = my_ready(backend, err);
	struct rs_strbuf b = {NULL, 0, 0, 0};

	if (e == NULL)
		return RS_EINTERNAL;
	if (e->scanning)
		return backend_fail(backend, err, RS_EINTERNAL,
		                    "a scan is already open on this connection "
		                    "(a bug in the caller)");
	if (t == NULL || t->name == NULL || n_columns <= 0 || columns == NULL)
		return backend_fail(backend, err, RS_EINTERNAL,
		                    "bad scan request (a bug in the caller)");
	for (int i = 0; i < n_columns; i++)
		if (columns[i] < 0 || columns[i] >= t->n_columns)
			return backend_fail(backend, err, RS_EINTERNAL,
			                    "bad scan request: no column %d in "
			                    "table %s (a bug in the caller)",
			                    columns[i], t->name);
	mysql_sql_scan(&b, t, columns, n_columns);
	if (mysql_sql_push(&e->stmts, &b, 0, 0) != 0 ||
	    (e->table_name = strdup(t->name)) == NULL) {
		my_free_stmts(e);
		return backend_fail(backend, err, RS_ENOMEM, "out of memory");
	}
	e->scan_table = t;
	e->scan_cols = n_columns;
	e->scan_eof = 0;
	e->scan_text_hint = 0;
	e->next_stmt = 0;
	e->txn = MY_TXN_BEGIN;
	e->cb.done = cb;
	e->arg = arg;
	my_begin(e, MY_OP_SCAN_BEGIN, (char *)my_scan_begin_sql,
	         sizeof(my_scan_begin_sql) - 1, 0);
	return 0;
}

/* The next batch of the scan (see backend_scan_next): up to LIMIT rows
 * fetched from the unbuffered result and copied.  Returns RS_EINTERNAL
 * (not connected, no scan open, a bad limit) or RS_ENOMEM without calling
 * back.  The callback gets RS_EQUERY (after ROLLBACK), RS_ECONNECT or
 * RS_ENOMEM when the step fails, which ends the scan. */
static int
my_scan_next(struct rs_backend *backend, int limit, rs_rows_cb cb, void *arg,
             struct rs_err *err)
{
	struct my_engine *e = my_ready(backend, err);

	if (e == NULL)
		return RS_EINTERNAL;
	if (!e->scanning || e->scan_res == NULL || limit <= 0)
		return backend_fail(backend, err, RS_EINTERNAL,
		                    "no scan open, or a bad batch size (a bug "
		                    "in the caller)");
	e->scan_vals = malloc((size_t)limit * (size_t)e->scan_cols *
	                      sizeof(*e->scan_vals));
	e->scan_text = (struct rs_strbuf){0};
	if (e->scan_vals == NULL ||
	    (e->scan_text_hint > 0 &&
	     strbuf_reserve(&e->scan_text, e->scan_text_hint) != 0) ||
	    (e->table_name = strdup(e->scan_table->name)) == NULL) {
		free(e->scan_vals);
		e->scan_vals = NULL;
		free(e->scan_text.text);
		e->scan_text = (struct rs_strbuf){0};
		return backend_fail(backend, err, RS_ENOMEM, "out of memory");
	}
	e->op = MY_OP_SCAN_NEXT;
	e->status = 0;
	e->detail[0] = '\0';
	e->uv_error = 0;
	my_deadline_start(e, backend->op_timeout_ms);
	e->scan_limit = limit;
	e->scan_n = 0;
	e->cb.rows = cb;
	e->arg = arg;
	backend->busy = 1;
	e->in_call = 1;
	my_scan_fetch(e);
	e->in_call = 0;
	return 0;
}

/* End the scan (see backend_scan_end): free the result, reading the rows
 * not fetched yet (mysql_free_result_start/_cont), then COMMIT; nothing
 * but the callback when no scan is open (it failed, or never began).
 * Returns RS_EINTERNAL (not connected) or RS_ENOMEM without calling back.
 * The callback gets RS_EQUERY or RS_ECONNECT when that fails; the scan is
 * over either way. */
static int
my_scan_end(struct rs_backend *backend, rs_backend_cb cb, void *arg,
            struct rs_err *err)
{
	struct my_engine *e = backend->engine;

	if (e == NULL || (e->scanning && my_ready(backend, err) == NULL))
		return e == NULL ? backend_fail(backend, err, RS_EINTERNAL,
		                                "not connected (a bug in the "
		                                "caller)")
		                 : RS_EINTERNAL;
	if (e->scanning &&
	    (e->table_name = strdup(e->scan_table->name)) == NULL)
		return backend_fail(backend, err, RS_ENOMEM, "out of memory");
	e->op = MY_OP_SCAN_END;
	e->status = 0;
	e->detail[0] = '\0';
	e->uv_error = 0;
	my_deadline_start(e, backend->op_timeout_ms);
	e->txn = MY_TXN_COMMIT;
	e->cb.done = cb;
	e->arg = arg;
	backend->busy = 1;
	e->in_call = 1;
	if (e->scanning)
		my_start(e, MY_FREEING);
	else
		my_end_later(e, 0);
	e->in_call = 0;
	return 0;
}

/* ---- stepped operations ---------------------------------------------- */

/*
 * count, fence, markers, mark, delete_log, fenced, capture, read_keys and
 * the replication operations run as stepped operations (struct
 * my_steps): a step function sees each statement's outcome and sends the
 * next one or ends.
 *
 * replica_check and catch_up are given two backends, the primary (the one
 * the operation is started on, its owner) and the replica, each with its
 * own connection, and need statements on both.  They run one after the
 * other, never two at once: a statement for the replica runs as an
 * operation of its own on the replica's engine (MY_OP_PEER, driven by its
 * poll and timer like any other), whose outcome goes back to the owner's
 * step function (my_step_result); the owner's connection is idle
 * meanwhile.  So each engine still has at most one library call in
 * flight, and the owner's step function is the only place where the
 * operation's state lives.  The replica's backend is busy for the whole
 * operation (a caller's operation on it gets RS_EBUSY), and its
 * statements have the owner's deadline, so the operation as a whole is
 * bounded by the owner's op_timeout_ms.  A replica statement that fails
 * names the replica's shard; one that passes the deadline closes the
 * replica's connection, as its own operation would.
 */

/* Take the stepped operation of E (started by my_steps_begin) on: send
 * SQL (LEN bytes; E's to free when OWNED) on ON's connection, E's own or
 * its peer's; WHAT names the statement in an error. */
static void
my_step_send(struct my_engine *e, struct my_engine *on, char *sql, size_t len,
             int owned, const char *what)
{
	on->what = what;
	if (on == e) {
		my_send(e, sql, len, owned);
		return;
	}
	on->op = MY_OP_PEER;
	on->owner = e;
	on->status = 0;
	on->detail[0] = '\0';
	on->uv_error = 0;
	on->deadline = e->deadline;
	on->op_bound_ms = e->op_bound_ms;
	on->deadline_on = 1;
	on->timed_out = 0;
	/* Its outcome comes from the loop, even when the statement fails at
	 * once: never inside E's starting call. */
	on->in_call = 1;
	my_send(on, sql, len, owned);
	on->in_call = 0;
}

/* End the stepped operation of E with STATUS (0, or a code whose message
 * is in e->err), from the loop (never inside the starting call). */
static void
my_step_end(struct my_engine *e, int status)
{
	my_end_later(e, status);
}

/* End the stepped operation of E with the last statement's failure. */
static void
my_step_fail(struct my_engine *e, int status)
{
	e->err = e->st.err;
	my_step_end(e, status);
}

/* my_step_send of the statement built in B (taken over); out of memory
 * ends the operation. */
static void
my_step_sendb(struct my_engine *e, struct my_engine *on, struct rs_strbuf *b,
              const char *what)
{
	char *sql = b->text;
	size_t len = b->len;

	if (b->failed || sql == NULL) {
		strbuf_clear(b);
		my_step_end(e, backend_fail(e->backend, &e->err, RS_ENOMEM,
		                            "out of memory"));
		return;
	}
	*b = (struct rs_strbuf){0};
	my_step_send(e, on, sql, len, 1, what);
}

/* my_step_send of the fixed statement SQL. */
static void
my_step_sendc(struct my_engine *e, struct my_engine *on, const char *sql,
              const char *what)
{
	my_step_send(e, on, (char *)sql, strlen(sql), 0, what);
}

/* The statement sent last for a stepped operation has its outcome: STATUS
 * 0 with its first result in e->rows_result, or its code with the error
 * in e->st.err (E's own statement) or e->err (a peer's).  A peer hands
 * the outcome to its owner, becoming idle first (its backend stays busy
 * until the owner's operation ends). */
static void
my_step_result(struct my_engine *e, int status)
{
	MYSQL_RES *res = e->rows_result;

	e->rows_result = NULL;
	if (e->op == MY_OP_PEER) {
		struct my_engine *owner = e->owner;

		e->op = MY_OP_NONE;
		e->owner = NULL;
		e->what = NULL;
		e->deadline_on = 0;
		e->status = 0;
		if (status != 0)
			owner->st.err = e->err;
		e = owner;
	}
	e->st.step(e, status, res);
	mysql_free_result(res);
}

/* The engine of BACKEND (*E) and, for an operation on two backends, of
 * PEER (*PEER_ENGINE, when PEER is not NULL), when both can run it.
 * Returns 0, or RS_EINTERNAL (not connected, a bad pair) or RS_EBUSY (the
 * peer runs an operation) with ERR filled. */
static int
my_steps_ready(struct rs_backend *backend, struct rs_backend *peer,
               struct my_engine **e, struct my_engine **peer_engine,
               struct rs_err *err)
{
	*e = my_ready(backend, err);
	*peer_engine = NULL;
	if (*e == NULL)
		return RS_EINTERNAL;
	if (peer == NULL)
		return 0;
	*e = NULL;
	if (peer == backend || peer->ops != backend->ops)
		return backend_fail(backend, err, RS_EINTERNAL,
		                    "a replication operation needs two MariaDB "
		                    "backends (a bug in the caller)");
	if (peer->busy)
		return backend_fail(peer, err, RS_EBUSY,
		                    "an operation is already running on this "
		                    "connection (a bug in the caller)");
	if ((*peer_engine = my_ready(peer, err)) == NULL)
		return RS_EINTERNAL;
	*e = backend->engine;
	return 0;
}

/* Start a stepped operation on E (its st filled by the caller), PEER
 * (may be NULL) held busy until it ends, bounded by the backend's
 * operation bound.  The caller then sends the first statement between
 * e->in_call = 1 and e->in_call = 0. */
static void
my_steps_begin(struct my_engine *e, struct my_engine *peer, enum my_reply reply,
               my_step_fn step, void *arg)
{
	e->op = MY_OP_STEPS;
	e->status = 0;
	e->detail[0] = '\0';
	e->uv_error = 0;
	e->st.step = step;
	e->st.reply = reply;
	e->st.peer = peer;
	e->arg = arg;
	my_deadline_start(e, e->backend->op_timeout_ms);
	e->backend->busy = 1;
	if (peer != NULL)
		peer->backend->busy = 1;
}

/* A stepped operation on E alone that answers CB with a count: STEP
 * gets the replies, the first to SQL, or to B's statement when B is not
 * NULL (my_step_sendb), WHAT saying what failed. */
static void
my_count_begin(struct my_engine *e, my_step_fn step, rs_count_cb cb, void *arg,
               const char *sql, struct rs_strbuf *b, const char *what)
{
	e->cb.count = cb;
	my_steps_begin(e, NULL, MY_REPLY_COUNT, step, arg);
	e->in_call = 1;
	if (b != NULL)
		my_step_sendb(e, e, b, what);
	else
		my_step_sendc(e, e, sql, what);
	e->in_call = 0;
}

/* The first row of RES (NULL when it has none). */
static MYSQL_ROW
my_row(MYSQL_RES *res)
{
	return res != NULL ? mysql_fetch_row(res) : NULL;
}

/* The value of column NAME in ROW of RES: NULL when RES has no such
 * column or the value is NULL. */
static const char *
my_field(MYSQL_RES *res, MYSQL_ROW row, const char *name)
{
	MYSQL_FIELD *fields = mysql_fetch_fields(res);
	unsigned int n = mysql_num_fields(res);

	for (unsigned int i = 0; row != NULL && i < n; i++)
		if (strcasecmp(fields[i].name, name) == 0)
			return row[i];
	return NULL;
}

/* Copy column NAME of ROW of RES into BUF ("" for NULL). */
static void
my_field_copy(MYSQL_RES *res, MYSQL_ROW row, const char *name, char *buf,
              size_t size)
{
	const char *v = my_field(res, row, name);

	snprintf(buf, size, "%s", v != NULL ? v : "");
}

/* Column NAME of ROW of RES as a number; NONE when it is NULL. */
static long long
my_field_number(MYSQL_RES *res, MYSQL_ROW row, const char *name, long long none)
{
	const char *v = my_field(res, row, name);

	return v != NULL ? strtoll(v, NULL, 10) : none;
}

/* End E's operation with RS_EINTERNAL: a result not as expected. */
static void
my_step_odd(struct my_engine *e, const char *what)
{
	my_step_end(e, backend_fail(e->backend, &e->err, RS_EINTERNAL,
	                            "%s: unexpected result", what));
}

/* Add to ERR's message why a DDL statement met error 1205: a metadata
 * lock (lock_wait_timeout); the error stays retryable. */
static void
my_lock_hint(struct rs_err *err)
{
	size_t len = strlen(err->message);

	if (err->server_errno != ER_LOCK_WAIT_TIMEOUT)
		return;
	snprintf(err->message + len, sizeof(err->message) - len,
	         "; a long transaction holds the table (a transaction that "
	         "read or wrote it is still open, keeping its metadata "
	         "lock for longer than lock_wait_timeout, %d s): end it "
	         "and try again",
	         MY_LOCK_TIMEOUT_S);
}

/* Add to ERR's message, for an access denied (error 1227), what NEEDS. */
static void
my_grant_hint(struct rs_err *err, const char *needs)
{
	size_t len = strlen(err->message);

	if (err->server_errno == ER_SPECIFIC_ACCESS_DENIED_ERROR)
		snprintf(err->message + len, sizeof(err->message) - len,
		         "; %s (docs/mariadb.md)", needs);
}

/* ---- count ---------------------------------------------------------- */

static void
my_count_step(struct my_engine *e, int status, MYSQL_RES *res)
{
	MYSQL_ROW row;

	if (status != 0) {
		if (e->st.err.server_errno == ER_NO_SUCH_TABLE)
			status = e->st.err.code = RS_ESCHEMA;
		my_step_fail(e, status);
		return;
	}
	row = my_row(res);
	if (row == NULL || row[0] == NULL) {
		my_step_odd(e, "counting rows");
		return;
	}
	e->st.value = strtoll(row[0], NULL, 10);
	my_step_end(e, 0);
}

/* The exact number of rows of TABLE (see backend_count): SELECT COUNT(*).
 * The callback gets RS_ESCHEMA for a missing table, RS_EQUERY or
 * RS_ECONNECT when the query fails.  Returns RS_EINTERNAL (not
 * connected) or RS_ENOMEM without calling back. */
static int
my_count(struct rs_backend *backend, const char *table, rs_count_cb cb,
         void *arg, struct rs_err *err)
{
	struct my_engine *e = my_ready(backend, err);
	struct rs_strbuf b = {0};

	if (e == NULL)
		return RS_EINTERNAL;
	mysql_sql_count(&b, table);
	if (b.failed || (e->table_name = strdup(table)) == NULL) {
		strbuf_clear(&b);
		return backend_fail(backend, err, RS_ENOMEM, "out of memory");
	}
	my_count_begin(e, my_count_step, cb, arg, NULL, &b,
	               "could not count the rows of table");
	return 0;
}

/* ---- the fence and the shard marker --------------------------------- */

/*
 * The fence is three BEFORE triggers per table, named as SQLite names
 * them (reshard_fence_INSERT_<table> …), each SIGNALling SQLSTATE 45000
 * with the message: the writer's statement fails (error 1644) and
 * changes nothing, its transaction stays open.  MariaDB (10.2.3+) keeps
 * several triggers per event and table, so an application's own
 * triggers stay as they are.  The triggers reach a replica through the
 * binary log like any DDL.
 *
 * MariaDB's DDL is not transactional: each CREATE TRIGGER commits on its
 * own.  So the fence goes up as: which of its triggers exist already (one
 * catalog query), CREATE TRIGGER IF NOT EXISTS for the others one by one,
 * then the marker; when a statement fails, the triggers this call made
 * are dropped again, newest first, and the first failure is reported:
 * the shard is as it was before the call.  A lost connection leaves the
 * triggers made so far (the message says so); a repeat converges.  The
 * fence comes down with DROP TRIGGER IF EXISTS for each, then the marker.
 * The marker goes in after the triggers in both directions: an INSERT …
 * ON DUPLICATE KEY UPDATE, and when its table is missing (error 1146)
 * CREATE TABLE IF NOT EXISTS and the INSERT again.  mark is the fence of
 * no tables.
 *
 * Every CREATE TRIGGER and DROP TRIGGER waits for the table's metadata
 * lock, which any open transaction that used the table holds: the
 * session's lock_wait_timeout (MY_LOCK_TIMEOUT_S) ends the wait with error
 * 1205, which comes back RS_EQUERY, retryable, saying so.
 */
enum {
	MY_FENCE_EXISTING,  /* which triggers exist */
	MY_FENCE_CREATE,    /* st.index: the trigger being made */
	MY_FENCE_DROP,      /* st.index: the trigger being dropped */
	MY_FENCE_MARK,      /* the marker's upsert */
	MY_FENCE_MARK_MAKE, /* its table, missing */
	MY_FENCE_MARK_AGAIN,
	MY_FENCE_UNDO, /* st.index: a trigger this call made, dropped */
};

/* The number of triggers of the fence of E's tables. */
static int
my_fence_n(const struct my_engine *e)
{
	return e->st.n_names * MYSQL_SQL_FENCE_OPS;
}

/* Trigger I of the fence into BUF. */
static void
my_fence_name(const struct my_engine *e, int i, char *buf, size_t size)
{
	mysql_sql_fence_trigger(buf, size, i % MYSQL_SQL_FENCE_OPS,
	                        e->st.names[i / MYSQL_SQL_FENCE_OPS]);
}

/* Send the marker's upsert (stage MY_FENCE_MARK or MY_FENCE_MARK_AGAIN),
 * or end when there is no marker to write. */
static void
my_fence_mark(struct my_engine *e, int stage)
{
	struct mysql_sql_escape esc = my_escaper(e);
	struct rs_strbuf b = {0};

	if (!e->st.marking) {
		my_step_end(e, 0);
		return;
	}
	e->st.stage = stage;
	if (mysql_sql_mark(&b, &esc, &e->st.marker) != 0 && !b.failed) {
		strbuf_clear(&b);
		my_step_end(e, backend_fail(e->backend, &e->err, RS_EVALUE,
		                            "the MariaDB driver's escaping "
		                            "refused the shard marker"));
		return;
	}
	my_step_sendb(e, e, &b, "could not write the shard marker");
}

/* Send the next statement of the fence from st.stage and st.index on. */
static void
my_fence_next(struct my_engine *e)
{
	struct mysql_sql_escape esc = my_escaper(e);
	struct rs_strbuf b = {0};
	char name[MYSQL_SQL_NAME_SIZE];
	int i = e->st.index, n = my_fence_n(e);
	const char *table;

	if (e->st.stage == MY_FENCE_CREATE)
		while (i < n && e->st.made[i] == 2)
			i++;
	e->st.index = i;
	if (i >= n) {
		my_fence_mark(e, MY_FENCE_MARK);
		return;
	}
	table = e->st.names[i / MYSQL_SQL_FENCE_OPS];
	my_fence_name(e, i, name, sizeof(name));
	if (e->st.stage == MY_FENCE_CREATE) {
		if (mysql_sql_fence_create(&b, &esc, i % MYSQL_SQL_FENCE_OPS,
		                           table, e->st.text, e->st.fence_rows,
		                           i / MYSQL_SQL_FENCE_OPS) != 0 &&
		    !b.failed) {
			strbuf_clear(&b);
			my_step_end(e,
			            backend_fail(e->backend, &e->err, RS_EVALUE,
			                         "the MariaDB driver's "
			                         "escaping refused the "
			                         "fence's message"));
			return;
		}
		snprintf(e->what_buf, sizeof(e->what_buf),
		         "could not fence table %s (trigger %s)", table, name);
	} else {
		mysql_sql_drop_trigger(&b, name);
		snprintf(e->what_buf, sizeof(e->what_buf),
		         "could not lift the fence from table %s (trigger %s)",
		         table, name);
	}
	my_step_sendb(e, e, &b, e->what_buf);
}

/* Drop the next trigger this call made (newest first), or end with the
 * failure being undone. */
static void
my_fence_undo_next(struct my_engine *e)
{
	struct rs_strbuf b = {0};
	char name[MYSQL_SQL_NAME_SIZE];
	int i = e->st.index;

	while (--i >= 0 && e->st.made[i] != 1)
		;
	e->st.index = i;
	if (i < 0) {
		e->err = e->st.cause;
		if (e->st.undo_failed) {
			size_t len = strlen(e->err.message);

			snprintf(e->err.message + len,
			         sizeof(e->err.message) - len,
			         "; the fence is partly up (a trigger it made "
			         "could not be dropped again): fence again, or "
			         "abort");
		}
		my_step_end(e, e->err.code);
		return;
	}
	my_fence_name(e, i, name, sizeof(name));
	mysql_sql_drop_trigger(&b, name);
	snprintf(e->what_buf, sizeof(e->what_buf),
	         "could not take trigger %s down again", name);
	my_step_sendb(e, e, &b, e->what_buf);
}

/* A statement of the fence going up failed with STATUS (e->st.err): take
 * down what this call made, then fail with it. */
static void
my_fence_undo(struct my_engine *e, int status)
{
	int made = 0;

	e->st.cause = e->st.err;
	e->st.cause.code = status;
	my_lock_hint(&e->st.cause);
	for (int i = 0; i < my_fence_n(e); i++)
		made |= e->st.made[i] == 1;
	if (status == RS_ECONNECT && made) {
		/* Nothing more can be sent; a repeat converges. */
		size_t len = strlen(e->st.cause.message);

		e->err = e->st.cause;
		snprintf(e->err.message + len, sizeof(e->err.message) - len,
		         "; the fence may be partly up (the triggers made "
		         "before stay): fence again, or abort");
		my_step_end(e, status);
		return;
	}
	e->st.stage = MY_FENCE_UNDO;
	e->st.index = my_fence_n(e);
	my_fence_undo_next(e);
}

/* Note in st.made the triggers the catalog lists in RES. */
static void
my_fence_existing(struct my_engine *e, MYSQL_RES *res)
{
	char name[MYSQL_SQL_NAME_SIZE];
	MYSQL_ROW row;

	while (res != NULL && (row = mysql_fetch_row(res)) != NULL)
		for (int i = 0; row[0] != NULL && i < my_fence_n(e); i++) {
			my_fence_name(e, i, name, sizeof(name));
			if (strcmp(name, row[0]) == 0)
				e->st.made[i] = 2;
		}
}

static void
my_fence_step(struct my_engine *e, int status, MYSQL_RES *res)
{
	switch (e->st.stage) {
	case MY_FENCE_EXISTING:
		if (status != 0) {
			my_step_fail(e, status);
			return;
		}
		my_fence_existing(e, res);
		e->st.stage = MY_FENCE_CREATE;
		e->st.index = 0;
		my_fence_next(e);
		return;
	case MY_FENCE_CREATE:
		if (status != 0) {
			my_fence_undo(e, status);
			return;
		}
		e->st.made[e->st.index++] = 1;
		my_fence_next(e);
		return;
	case MY_FENCE_DROP:
		if (status != 0) {
			my_lock_hint(&e->st.err);
			my_step_fail(e, status);
			return;
		}
		e->st.index++;
		my_fence_next(e);
		return;
	case MY_FENCE_MARK:
	case MY_FENCE_MARK_MAKE:
	case MY_FENCE_MARK_AGAIN:
		if (status != 0 && e->st.stage == MY_FENCE_MARK &&
		    e->st.err.server_errno == ER_NO_SUCH_TABLE) {
			e->st.stage = MY_FENCE_MARK_MAKE;
			my_step_sendc(e, e, mysql_sql_marker_table,
			              "could not make the shard marker's table "
			              "reshard_marker");
			return;
		}
		if (status != 0 && e->st.on) {
			my_fence_undo(e, status);
			return;
		}
		if (status != 0) {
			my_step_fail(e, status);
			return;
		}
		if (e->st.stage == MY_FENCE_MARK_MAKE) {
			my_fence_mark(e, MY_FENCE_MARK_AGAIN);
			return;
		}
		my_step_end(e, 0);
		return;
	case MY_FENCE_UNDO:
		e->st.undo_failed |= status != 0;
		if (status == RS_ECONNECT) {
			e->st.index = 0; /* nothing more can be sent */
		}
		my_fence_undo_next(e);
		return;
	default:
		my_step_odd(e, "the fence");
		return;
	}
}

/* Copy the N NAMES into e->st.names.  Returns 0 or -1. */
static int
my_steps_names(struct my_engine *e, const char *const *names, int n)
{
	e->st.names = calloc((size_t)n + 1, sizeof(*e->st.names));
	if (e->st.names == NULL)
		return -1;
	for (int i = 0; i < n; i++) {
		if ((e->st.names[i] = strdup(names[i])) == NULL)
			return -1;
		e->st.n_names = i + 1;
	}
	return 0;
}

/* Put up (ON) or take down the fence on the N_TABLES TABLES, then write
 * MARKER (may be NULL), as described above (see backend_fence).  Returns
 * RS_EINTERNAL (not connected, a bad request), RS_EUSAGE (a table whose
 * name leaves no room for the triggers' names) or RS_ENOMEM without
 * calling back.  The callback gets RS_EQUERY (retryable for a metadata
 * lock wait) or RS_ECONNECT when a statement fails. */
static int
my_fence(struct rs_backend *backend, const char *const *tables, int n_tables,
         const char *message, int on, const struct rs_marker *marker,
         const struct rs_fence_rows *rows, rs_backend_cb cb, void *arg,
         struct rs_err *err)
{
	struct my_engine *e = my_ready(backend, err);
	struct mysql_sql_escape esc;
	struct rs_strbuf b = {0};
	char name[MYSQL_SQL_NAME_SIZE];

	if (e == NULL)
		return RS_EINTERNAL;
	if (n_tables < 0 || (n_tables > 0 && tables == NULL))
		return backend_fail(backend, err, RS_EINTERNAL,
		                    "malformed fence request (a bug in the "
		                    "caller)");
	for (int t = 0; t < n_tables; t++) {
		mysql_sql_fence_trigger(name, sizeof(name), 0, tables[t]);
		if (!mysql_sql_name_fits(tables[t]) ||
		    !mysql_sql_name_fits(name))
			return backend_fail(
				backend, err, RS_EUSAGE,
				"table %s: its name is too long for the "
				"fence's trigger names (%s: MariaDB takes "
				"%d characters; tables of up to %d can be "
				"fenced)",
				tables[t], name, MYSQL_SQL_NAME_MAX,
				MYSQL_SQL_NAME_MAX -
					(int)strlen("reshard_fence_INSERT_"));
	}
	esc = my_escaper(e);
	if (my_steps_names(e, tables, n_tables) != 0 ||
	    (e->st.text = strdup(message != NULL ? message : "")) == NULL ||
	    (e->st.made = calloc((size_t)n_tables * MYSQL_SQL_FENCE_OPS + 1,
	                         1)) == NULL ||
	    (on && n_tables > 0 &&
	     mysql_sql_fence_existing(&b, &esc, tables, n_tables) != 0)) {
		int oom = b.failed || e->st.made == NULL;

		strbuf_clear(&b);
		my_steps_free(&e->st);
		return backend_fail(backend, err, oom ? RS_ENOMEM : RS_EVALUE,
		                    "%s",
		                    oom ? "out of memory"
		                        : "the MariaDB driver's escaping "
		                          "refused a table name");
	}
	e->st.on = on;
	e->st.fence_rows = rows;
	if (marker != NULL) {
		e->st.marking = 1;
		e->st.marker = *marker;
	}
	e->cb.done = cb;
	my_steps_begin(e, NULL, MY_REPLY_DONE, my_fence_step, arg);
	e->in_call = 1;
	if (on && n_tables > 0) {
		e->st.stage = MY_FENCE_EXISTING;
		my_step_sendb(e, e, &b,
		              "could not read which fence triggers "
		              "exist");
	} else {
		e->st.stage = on ? MY_FENCE_CREATE : MY_FENCE_DROP;
		e->st.index = 0;
		my_fence_next(e);
	}
	e->in_call = 0;
	return 0;
}

/* The guard's statements (see backend_guard_sql): a trigger of each
 * statement kind on each table, made or dropped one at a time (MariaDB
 * DDL is not transactional; each statement is idempotent). */
static int
my_guard_sql(struct rs_backend *backend, const char *const *tables,
             int n_tables, const struct rs_guard *guard,
             struct rs_sql_list *list, struct rs_err *err)
{
	struct my_engine *e = my_ready(backend, err);
	struct mysql_sql_escape esc;

	if (e == NULL)
		return RS_EINTERNAL;
	esc = my_escaper(e);
	for (int t = 0; t < n_tables; t++) {
		char name[MYSQL_SQL_NAME_SIZE];

		mysql_sql_guard_trigger(name, sizeof(name), 0, tables[t]);
		if (!mysql_sql_name_fits(name))
			return backend_fail(
				backend, err, RS_EUSAGE,
				"table %s: its name is too long for "
				"the guard's trigger names (%s)",
				tables[t], name);
		for (int op = 0; op < MYSQL_SQL_FENCE_OPS; op++) {
			struct rs_strbuf b = {0};

			mysql_sql_guard_trigger(name, sizeof(name), op,
			                        tables[t]);
			if (guard == NULL)
				mysql_sql_drop_trigger(&b, name);
			else if (mysql_sql_guard_create(&b, &esc, op, tables[t],
			                                guard, t) != 0 &&
			         !b.failed) {
				strbuf_clear(&b);
				return backend_fail(backend, err, RS_EVALUE,
				                    "the MariaDB driver's "
				                    "escaping refused the "
				                    "guard's message");
			}
			if (backend_sql_list_add(list, &b) != 0)
				return backend_fail(backend, err, RS_ENOMEM,
				                    "out of memory");
		}
	}
	return 0;
}

/* Write MARKER (see backend_mark): the fence of no tables. */
static int
my_mark(struct rs_backend *backend, const struct rs_marker *marker,
        rs_backend_cb cb, void *arg, struct rs_err *err)
{
	if (marker == NULL)
		return backend_fail(backend, err, RS_EINTERNAL,
		                    "no marker to write (a bug in the caller)");
	return my_fence(backend, NULL, 0, "", 1, marker, NULL, cb, arg, err);
}

static void
my_markers_step(struct my_engine *e, int status, MYSQL_RES *res)
{
	uint64_t n;
	MYSQL_ROW row;

	if (status != 0 && e->st.err.server_errno == ER_NO_SUCH_TABLE) {
		my_step_end(e, 0); /* never part of a run */
		return;
	}
	if (status != 0) {
		my_step_fail(e, status);
		return;
	}
	if (res == NULL || mysql_num_fields(res) != 5) {
		my_step_odd(e, "reading the shard markers");
		return;
	}
	n = mysql_num_rows(res);
	e->st.markers = calloc((size_t)n + 1, sizeof(*e->st.markers));
	if (e->st.markers == NULL || n > INT_MAX) {
		my_step_end(e, backend_fail(e->backend, &e->err, RS_ENOMEM,
		                            "out of memory"));
		return;
	}
	while ((row = mysql_fetch_row(res)) != NULL &&
	       e->st.n_markers < (int)n) {
		struct rs_marker *m = &e->st.markers[e->st.n_markers++];

#define MY_MARKER_COPY(field, col)                                             \
	snprintf(m->field, sizeof(m->field), "%s",                             \
	         row[col] != NULL ? row[col] : "")
		MY_MARKER_COPY(plan, 0);
		MY_MARKER_COPY(run_id, 1);
		MY_MARKER_COPY(state, 2);
		m->epoch = row[3] != NULL ? strtoll(row[3], NULL, 10) : 0;
		MY_MARKER_COPY(updated_at, 4);
#undef MY_MARKER_COPY
	}
	my_step_end(e, 0);
}

/* Every marker of the shard (see backend_markers); none when the table
 * reshard_marker does not exist (error 1146).  Returns RS_EINTERNAL (not
 * connected) without calling back; the callback gets RS_EQUERY or
 * RS_ECONNECT when the query fails. */
static int
my_markers(struct rs_backend *backend, rs_markers_cb cb, void *arg,
           struct rs_err *err)
{
	struct my_engine *e = my_ready(backend, err);

	if (e == NULL)
		return RS_EINTERNAL;
	e->cb.markers = cb;
	my_steps_begin(e, NULL, MY_REPLY_MARKERS, my_markers_step, arg);
	e->in_call = 1;
	my_step_sendc(e, e, mysql_sql_markers,
	              "could not read the shard markers");
	e->in_call = 0;
	return 0;
}

static void
my_fenced_step(struct my_engine *e, int status, MYSQL_RES *res)
{
	if (status != 0) {
		my_step_fail(e, status);
		return;
	}
	e->st.value = res != NULL && mysql_num_rows(res) == MYSQL_SQL_FENCE_OPS;
	my_step_end(e, 0);
}

/* Whether TABLE carries all three of the fence's triggers (see
 * backend_fenced), from information_schema.TRIGGERS. */
static int
my_fenced(struct rs_backend *backend, const char *table, rs_count_cb cb,
          void *arg, struct rs_err *err)
{
	struct my_engine *e = my_ready(backend, err);
	struct mysql_sql_escape esc;
	struct rs_strbuf b = {0};

	if (e == NULL)
		return RS_EINTERNAL;
	esc = my_escaper(e);
	if (mysql_sql_fence_existing(&b, &esc, &table, 1) != 0) {
		int oom = b.failed;

		strbuf_clear(&b);
		return backend_fail(backend, err, oom ? RS_ENOMEM : RS_EVALUE,
		                    "%s",
		                    oom ? "out of memory"
		                        : "the MariaDB driver's escaping "
		                          "refused a table name");
	}
	snprintf(e->what_buf, sizeof(e->what_buf),
	         "could not read whether table %s is fenced", table);
	my_count_begin(e, my_fenced_step, cb, arg, NULL, &b, e->what_buf);
	return 0;
}

/* ---- the delete log ------------------------------------------------- */

/*
 * The delete log of a table t: a table reshard_del_t with t's key
 * columns, their COLUMN_TYPEs and collations read from the catalog (so
 * that a key compares there as in t), and two AFTER triggers on t,
 * reshard_dellog_t (delete) and reshard_dellog_u_t (an update that
 * changes the key), which INSERT IGNORE OLD's key, in the writer's
 * transaction, unless the session's @reshard_purging is set (a purge's
 * own deletes, my_purge_keys).  Made with IF NOT EXISTS, one statement
 * after the other (DDL commits each); taken down with DROP … IF EXISTS:
 * both repeat without harm.  A half-made log (a table without its
 * triggers) records nothing and is made whole by the next call.
 */
enum {
	MY_LOG_COLUMNS, /* the catalog's key columns */
	MY_LOG_TABLE,   /* CREATE TABLE */
	MY_LOG_DELETE,  /* the delete trigger */
	MY_LOG_UPDATE,  /* the update trigger: then done */
	MY_LOG_DROP_DELETE,
	MY_LOG_DROP_UPDATE,
	MY_LOG_DROP_TABLE, /* then done */
};

/* The catalog's COLUMN_TYPE and collation of each of e->st.names (the
 * columns of e->st.text's log WHAT, "delete log"), from RES
 * (mysql_sql_log_columns), into *TYPES and *COLLATIONS: arrays to free,
 * of RES's texts.  Returns 0, or -1 with the operation ended: RS_ESCHEMA
 * for a column the catalog does not list, RS_ENOMEM. */
static int
my_log_types(struct my_engine *e, MYSQL_RES *res, const char *what,
             const char ***types, const char ***collations)
{
	int n = e->st.n_names;
	MYSQL_ROW row;

	*types = calloc((size_t)n + 1, sizeof(**types));
	*collations = calloc((size_t)n + 1, sizeof(**collations));
	if (*types == NULL || *collations == NULL) {
		free(*types);
		free(*collations);
		my_step_end(e, backend_fail(e->backend, &e->err, RS_ENOMEM,
		                            "out of memory"));
		return -1;
	}
	while (res != NULL && mysql_num_fields(res) == 3 &&
	       (row = mysql_fetch_row(res)) != NULL)
		for (int k = 0; k < n; k++)
			if (row[0] != NULL && row[1] != NULL &&
			    strcmp(row[0], e->st.names[k]) == 0) {
				(*types)[k] = row[1];
				(*collations)[k] = row[2];
			}
	for (int k = 0; k < n; k++)
		if ((*types)[k] == NULL) {
			free(*types);
			free(*collations);
			my_step_end(
				e, backend_fail(e->backend, &e->err, RS_ESCHEMA,
			                        "could not make the %s of "
			                        "table %s: its %s %s is not "
			                        "in the catalog",
			                        what, e->st.text,
			                        k < e->st.n_keys
			                                ? "key column"
			                                : "shard key column",
			                        e->st.names[k]));
			return -1;
		}
	return 0;
}

/* Build and send the log's table from the catalog's columns in RES. */
static void
my_log_table(struct my_engine *e, MYSQL_RES *res)
{
	const char **types, **collations;
	struct rs_strbuf b = {0};
	char log[MYSQL_SQL_NAME_SIZE];

	if (my_log_types(e, res, "delete log", &types, &collations) != 0)
		return;
	backend_delete_log_name(e->st.text, log, sizeof(log));
	mysql_sql_log_table(&b, log, (const char *const *)e->st.names, types,
	                    collations, e->st.n_names);
	free(types);
	free(collations);
	e->st.stage = MY_LOG_TABLE;
	snprintf(e->what_buf, sizeof(e->what_buf),
	         "could not make the delete log %s of table %s", log,
	         e->st.text);
	my_step_sendb(e, e, &b, e->what_buf);
}

/* Send the log's trigger (UPDATE 0: after delete), stage STAGE. */
static void
my_log_trigger(struct my_engine *e, int update, int stage)
{
	struct rs_strbuf b = {0};
	char log[MYSQL_SQL_NAME_SIZE], name[MYSQL_SQL_NAME_SIZE];

	backend_delete_log_name(e->st.text, log, sizeof(log));
	mysql_sql_log_trigger_name(name, sizeof(name), e->st.text, update);
	mysql_sql_log_trigger(&b, e->st.text, log,
	                      (const char *const *)e->st.names, e->st.n_names,
	                      update);
	e->st.stage = stage;
	snprintf(e->what_buf, sizeof(e->what_buf),
	         "could not make the delete log's trigger %s on table %s", name,
	         e->st.text);
	my_step_sendb(e, e, &b, e->what_buf);
}

/* Send the drop of the log's trigger (UPDATE 0: after delete) or, with
 * UPDATE -1, of its table; stage STAGE. */
static void
my_log_drop(struct my_engine *e, int update, int stage)
{
	struct rs_strbuf b = {0};
	char name[MYSQL_SQL_NAME_SIZE];

	if (update < 0) {
		backend_delete_log_name(e->st.text, name, sizeof(name));
		strbuf_str(&b, "DROP TABLE IF EXISTS ");
		mysql_sql_ident(&b, name);
	} else {
		mysql_sql_log_trigger_name(name, sizeof(name), e->st.text,
		                           update);
		mysql_sql_drop_trigger(&b, name);
	}
	e->st.stage = stage;
	snprintf(e->what_buf, sizeof(e->what_buf),
	         "could not remove the delete log of table %s (%s)", e->st.text,
	         name);
	my_step_sendb(e, e, &b, e->what_buf);
}

static void
my_log_step(struct my_engine *e, int status, MYSQL_RES *res)
{
	if (status != 0) {
		my_lock_hint(&e->st.err);
		my_step_fail(e, status);
		return;
	}
	switch (e->st.stage) {
	case MY_LOG_COLUMNS:
		my_log_table(e, res);
		return;
	case MY_LOG_TABLE:
		my_log_trigger(e, 0, MY_LOG_DELETE);
		return;
	case MY_LOG_DELETE:
		my_log_trigger(e, 1, MY_LOG_UPDATE);
		return;
	case MY_LOG_DROP_DELETE:
		my_log_drop(e, 1, MY_LOG_DROP_UPDATE);
		return;
	case MY_LOG_DROP_UPDATE:
		my_log_drop(e, -1, MY_LOG_DROP_TABLE);
		return;
	default: /* MY_LOG_UPDATE, MY_LOG_DROP_TABLE */
		my_step_end(e, 0);
		return;
	}
}

/* Start (ON) or remove the delete log of TABLE, as described above (see
 * backend_delete_log).  Returns RS_EINTERNAL (not connected, no key),
 * RS_EUSAGE (a table name too long for the log's names) or RS_ENOMEM
 * without calling back; the callback gets RS_ESCHEMA (a key column the
 * catalog does not list), RS_EQUERY (retryable for a metadata lock wait)
 * or RS_ECONNECT. */
static int
my_delete_log(struct rs_backend *backend, const struct rs_table_def *table,
              int on, rs_backend_cb cb, void *arg, struct rs_err *err)
{
	struct my_engine *e = my_ready(backend, err);
	struct mysql_sql_escape esc;
	struct rs_strbuf b = {0};
	char log[MYSQL_SQL_NAME_SIZE], name[MYSQL_SQL_NAME_SIZE];
	const char **keys;
	int rc = 0;

	if (e == NULL)
		return RS_EINTERNAL;
	if (table == NULL || table->n_pk < 1)
		return backend_fail(backend, err, RS_EINTERNAL,
		                    "delete log of a table without a key (a "
		                    "bug in the caller)");
	backend_delete_log_name(table->name, log, sizeof(log));
	mysql_sql_log_trigger_name(name, sizeof(name), table->name, 1);
	if (on && (!mysql_sql_name_fits(log) || !mysql_sql_name_fits(name)))
		return backend_fail(
			backend, err, RS_EUSAGE,
			"table %s: its name is too long for the delete log's "
			"names (%s, %s: MariaDB takes %d characters; tables "
			"of up to %d can have one)",
			table->name, log, name, MYSQL_SQL_NAME_MAX,
			MYSQL_SQL_NAME_MAX - (int)strlen("reshard_dellog_u_"));
	keys = calloc((size_t)table->n_pk, sizeof(*keys));
	if (keys == NULL)
		return backend_fail(backend, err, RS_ENOMEM, "out of memory");
	for (int k = 0; k < table->n_pk; k++)
		keys[k] = table->columns[table->pk[k]].name;
	esc = my_escaper(e);
	if (my_steps_names(e, keys, table->n_pk) != 0 ||
	    (e->st.text = strdup(table->name)) == NULL ||
	    (on == RS_DELETE_LOG_ON &&
	     mysql_sql_log_columns(&b, &esc, table->name) != 0))
		rc = b.failed || e->st.text == NULL ? RS_ENOMEM : RS_EVALUE;
	e->st.n_keys = table->n_pk;
	free(keys);
	if (rc != 0) {
		strbuf_clear(&b);
		my_steps_free(&e->st);
		return backend_fail(backend, err, rc, "%s",
		                    rc == RS_ENOMEM
		                            ? "out of memory"
		                            : "the MariaDB driver's escaping "
		                              "refused a table name");
	}
	e->st.on = on;
	e->cb.done = cb;
	my_steps_begin(e, NULL, MY_REPLY_DONE, my_log_step, arg);
	e->in_call = 1;
	if (on == RS_DELETE_LOG_EMPTY) {
		strbuf_str(&b, "DELETE FROM ");
		mysql_sql_ident(&b, log);
		e->st.stage = MY_LOG_UPDATE; /* then done */
		snprintf(e->what_buf, sizeof(e->what_buf),
		         "could not empty the delete log %s of table %s", log,
		         table->name);
		my_step_sendb(e, e, &b, e->what_buf);
	} else if (on) {
		e->st.stage = MY_LOG_COLUMNS;
		snprintf(e->what_buf, sizeof(e->what_buf),
		         "could not read the key columns of table %s for its "
		         "delete log",
		         table->name);
		my_step_sendb(e, e, &b, e->what_buf);
	} else {
		my_log_drop(e, 0, MY_LOG_DROP_DELETE);
	}
	e->in_call = 0;
	return 0;
}

/* ---- change capture ------------------------------------------------- */

/*
 * Change capture of a table t (backend_capture): the change log
 * reshard_chg_t (mysql_sql_change_table) with reshard_pos, a BIGINT
 * AUTO_INCREMENT, then t's key columns and the shard key column when it
 * is not one of them, each with its COLUMN_TYPE and collation from the
 * catalog as in the delete log; and three AFTER triggers on t,
 * reshard_capture_i_t, _u_t and _d_t (mysql_sql_capture_create), which
 * log the row in the writer's transaction (the log is InnoDB: a write
 * rolled back leaves no entry), whoever writes, a purge too (a split
 * removes capture before it purges).  Made one statement after the
 * other with IF NOT EXISTS (DDL commits each): the catalog's columns of
 * the log (when it is there already, from this capture made before or
 * half way, they must be the ones it logs: MariaDB resolves a trigger's
 * columns only when it fires, so triggers logging into another
 * capture's log would fail every write to t), those of t, the log, the
 * insert, update and delete triggers; removed with DROP … IF EXISTS,
 * the triggers first, then the log.  Both repeat without harm: a capture
 * that stopped half way is made whole, or removed, by the next call.
 *
 * No gap: each CREATE TRIGGER takes t's metadata lock exclusively, so it
 * waits for every transaction that has written (or read) t to end, and
 * every statement on t after it runs with the trigger.  So once the call
 * has returned, every write committed to t since is in the log, and
 * every one before is in t, for the copy to read.  The wait is bounded
 * by the session's lock_wait_timeout (MY_LOCK_TIMEOUT_S): a longer
 * transaction fails the call with error 1205, RS_EQUERY, retryable,
 * saying so.  AUTO_INCREMENT values are taken at insert and become
 * visible at commit, so out of order across writers, as backend_capture
 * allows.
 */
enum {
	MY_CAP_LOG,     /* the catalog's columns of the log, if there */
	MY_CAP_COLUMNS, /* the catalog's columns of the table */
	MY_CAP_TABLE,   /* CREATE TABLE of the log */
	MY_CAP_TRIGGER, /* st.index: the trigger being made (of
	                   mysql_sql_fence_ops) */
	MY_CAP_DROP,    /* st.index: the trigger being dropped; past the
	                   last, the log */
};

/* Send the CREATE TRIGGER of change capture's trigger st.index. */
static void
my_capture_trigger(struct my_engine *e)
{
	struct rs_strbuf b = {0};
	char log[MYSQL_SQL_NAME_SIZE], name[MYSQL_SQL_NAME_SIZE];

	backend_change_log_name(e->st.text, log, sizeof(log));
	mysql_sql_capture_trigger(name, sizeof(name), e->st.index, e->st.text);
	mysql_sql_capture_create(&b, e->st.index, e->st.text, log,
	                         (const char *const *)e->st.names,
	                         e->st.n_names);
	e->st.stage = MY_CAP_TRIGGER;
	snprintf(e->what_buf, sizeof(e->what_buf),
	         "could not make change capture's trigger %s on table %s", name,
	         e->st.text);
	my_step_sendb(e, e, &b, e->what_buf);
}

/* Send the drop of change capture's trigger st.index, or past the last,
 * of the change log. */
static void
my_capture_drop(struct my_engine *e)
{
	struct rs_strbuf b = {0};
	char name[MYSQL_SQL_NAME_SIZE];

	if (e->st.index >= MYSQL_SQL_FENCE_OPS) {
		backend_change_log_name(e->st.text, name, sizeof(name));
		strbuf_str(&b, "DROP TABLE IF EXISTS ");
		mysql_sql_ident(&b, name);
	} else {
		mysql_sql_capture_trigger(name, sizeof(name), e->st.index,
		                          e->st.text);
		mysql_sql_drop_trigger(&b, name);
	}
	e->st.stage = MY_CAP_DROP;
	snprintf(e->what_buf, sizeof(e->what_buf),
	         "could not remove change capture from table %s (%s)",
	         e->st.text, name);
	my_step_sendb(e, e, &b, e->what_buf);
}

/* Check the columns of the change log in RES (none: it is not there
 * yet) against the ones this capture logs, then send the query of the
 * table's columns. */
static void
my_capture_log(struct my_engine *e, MYSQL_RES *res)
{
	struct mysql_sql_escape esc = my_escaper(e);
	uint64_t n = res != NULL ? mysql_num_rows(res) : 0;
	struct rs_strbuf b = {0};
	char log[MYSQL_SQL_NAME_SIZE];
	MYSQL_ROW row;
	int same = n == 0 || n == (uint64_t)e->st.n_names + 1;

	for (uint64_t i = 0; same && n > 0 && i < n; i++) {
		row = mysql_fetch_row(res);
		same = row != NULL && row[0] != NULL &&
		       strcmp(row[0],
		              i == 0 ? "reshard_pos" : e->st.names[i - 1]) == 0;
	}
	backend_change_log_name(e->st.text, log, sizeof(log));
	if (!same) {
		my_step_end(e, backend_fail(e->backend, &e->err, RS_ESCHEMA,
		                            "change capture of table %s: its "
		                            "change log %s is there with "
		                            "other columns than this capture "
		                            "logs (another capture's, of "
		                            "another shard key?): remove it "
		                            "(capture off, or abort the run "
		                            "that made it) first",
		                            e->st.text, log));
		return;
	}
	if (mysql_sql_log_columns(&b, &esc, e->st.text) != 0 && !b.failed) {
		strbuf_clear(&b);
		my_step_end(e, backend_fail(e->backend, &e->err, RS_EVALUE,
		                            "the MariaDB driver's escaping "
		                            "refused a table name"));
		return;
	}
	e->st.stage = MY_CAP_COLUMNS;
	snprintf(e->what_buf, sizeof(e->what_buf),
	         "could not read the columns of table %s for its change log",
	         e->st.text);
	my_step_sendb(e, e, &b, e->what_buf);
}

/* Build and send the change log from the catalog's columns in RES. */
static void
my_capture_table(struct my_engine *e, MYSQL_RES *res)
{
	const char **types, **collations;
	struct rs_strbuf b = {0};
	char log[MYSQL_SQL_NAME_SIZE];

	if (my_log_types(e, res, "change log", &types, &collations) != 0)
		return;
	backend_change_log_name(e->st.text, log, sizeof(log));
	mysql_sql_change_table(&b, log, (const char *const *)e->st.names, types,
	                       collations, e->st.n_names, e->st.n_keys);
	free(types);
	free(collations);
	e->st.stage = MY_CAP_TABLE;
	snprintf(e->what_buf, sizeof(e->what_buf),
	         "could not make the change log %s of table %s", log,
	         e->st.text);
	my_step_sendb(e, e, &b, e->what_buf);
}

static void
my_capture_step(struct my_engine *e, int status, MYSQL_RES *res)
{
	if (status != 0) {
		my_lock_hint(&e->st.err);
		my_step_fail(e, status);
		return;
	}
	switch (e->st.stage) {
	case MY_CAP_LOG:
		my_capture_log(e, res);
		return;
	case MY_CAP_COLUMNS:
		my_capture_table(e, res);
		return;
	case MY_CAP_TABLE:
		e->st.index = 0;
		my_capture_trigger(e);
		return;
	case MY_CAP_TRIGGER:
		if (++e->st.index < MYSQL_SQL_FENCE_OPS)
			my_capture_trigger(e);
		else
			my_step_end(e, 0);
		return;
	default: /* MY_CAP_DROP */
		if (++e->st.index <= MYSQL_SQL_FENCE_OPS)
			my_capture_drop(e);
		else
			my_step_end(e, 0);
		return;
	}
}

/* Start (ON) or remove change capture of TABLE, logging its key and
 * TABLE->columns[KEY_COLUMN], as described above (see backend_capture).
 * Returns RS_EINTERNAL (not connected, no key), RS_ESCHEMA (ON: a table
 * name too long for capture's names, naming the longest that fits) or
 * RS_ENOMEM without calling back and without sending anything.  Removing
 * the capture of a table whose name is too long sends nothing and
 * succeeds: there is none.  The callback gets RS_ESCHEMA (a change log
 * there with other columns; a column the catalog does not list: the
 * table changed since it was described), RS_EQUERY (retryable for a
 * metadata lock wait) or RS_ECONNECT. */
static int
my_capture(struct rs_backend *backend, const struct rs_table_def *table,
           int key_column, int on, rs_backend_cb cb, void *arg,
           struct rs_err *err)
{
	struct my_engine *e = my_ready(backend, err);
	struct mysql_sql_escape esc;
	struct rs_strbuf b = {0};
	char log[MYSQL_SQL_NAME_SIZE], name[MYSQL_SQL_NAME_SIZE];
	const char **cols;
	int n = 0, in_pk = 0, fits, rc = 0;

	if (e == NULL)
		return RS_EINTERNAL;
	if (table == NULL || table->n_pk < 1 || key_column < 0 ||
	    key_column >= table->n_columns)
		return backend_fail(backend, err, RS_EINTERNAL,
		                    "change capture of a table without a key "
		                    "or shard key (a bug in the caller)");
	/* The three triggers' names are as long as each other. */
	backend_change_log_name(table->name, log, sizeof(log));
	mysql_sql_capture_trigger(name, sizeof(name), 0, table->name);
	fits = mysql_sql_name_fits(log) && mysql_sql_name_fits(name);
	if (on && !fits)
		return backend_fail(
			backend, err, RS_ESCHEMA,
			"table %s: its name is too long for change capture's "
			"names (%s, %s: MariaDB takes %d characters; tables "
			"of up to %d can be captured)",
			table->name, log, name, MYSQL_SQL_NAME_MAX,
			MYSQL_SQL_NAME_MAX - (int)strlen("reshard_capture_i_"));
	cols = calloc((size_t)table->n_pk + 1, sizeof(*cols));
	if (cols == NULL)
		return backend_fail(backend, err, RS_ENOMEM, "out of memory");
	for (int k = 0; k < table->n_pk; k++) {
		cols[n++] = table->columns[table->pk[k]].name;
		in_pk |= table->pk[k] == key_column;
	}
	if (!in_pk)
		cols[n++] = table->columns[key_column].name;
	esc = my_escaper(e);
	if (my_steps_names(e, cols, n) != 0 ||
	    (e->st.text = strdup(table->name)) == NULL ||
	    (on && mysql_sql_log_columns(&b, &esc, log) != 0))
		rc = b.failed || e->st.text == NULL ? RS_ENOMEM : RS_EVALUE;
	free(cols);
	if (rc != 0) {
		strbuf_clear(&b);
		my_steps_free(&e->st);
		return backend_fail(backend, err, rc, "%s",
		                    rc == RS_ENOMEM
		                            ? "out of memory"
		                            : "the MariaDB driver's escaping "
		                              "refused a table name");
	}
	e->st.n_keys = table->n_pk;
	e->st.on = on;
	e->cb.done = cb;
	my_steps_begin(e, NULL, MY_REPLY_DONE, my_capture_step, arg);
	e->in_call = 1;
	if (!fits) {
		my_step_end(e, 0);
	} else if (on) {
		e->st.stage = MY_CAP_LOG;
		snprintf(e->what_buf, sizeof(e->what_buf),
		         "could not read the columns of change log %s", log);
		my_step_sendb(e, e, &b, e->what_buf);
	} else {
		e->st.index = 0;
		my_capture_drop(e);
	}
	e->in_call = 0;
	return 0;
}

/* ---- reads by key --------------------------------------------------- */

/*
 * read_keys (backend_read_keys) sends the SELECTs of mysql_sql_read_keys
 * and copies their rows into one batch (e->st.rows) as each result comes.
 * A SELECT has at most MYSQL_SQL_READ_VALUES values in its IN list (499
 * keys of two columns, 999 of one; see there why) and about
 * MYSQL_SQL_STMT_BYTES, so a batch of more keys takes several.  One
 * statement is one consistent read by itself.  Several run in one
 * read-only transaction on one snapshot: SET TRANSACTION ISOLATION LEVEL
 * REPEATABLE READ (for that transaction only: under READ COMMITTED, a
 * server's default may be that, each SELECT would read a snapshot of its
 * own), START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY, the
 * SELECTs, COMMIT.  After a failure there, ROLLBACK is sent before the
 * callback gets the failure, unless the connection is lost (the server
 * rolls back).  No keys: no statement, and the callback gets no rows.
 */
enum {
	MY_KEYS_ISOLATION, /* SET TRANSACTION ISOLATION LEVEL … */
	MY_KEYS_BEGIN,     /* START TRANSACTION … */
	MY_KEYS_SELECT,    /* e->stmts.v[e->next_stmt - 1] sent */
	MY_KEYS_COMMIT,
	MY_KEYS_ROLLBACK, /* after the failure kept in st.cause */
};

static const char my_keys_isolation_sql[] =
	"SET TRANSACTION ISOLATION LEVEL REPEATABLE READ";

/* Send the next SELECT of read_keys. */
static void
my_keys_send(struct my_engine *e)
{
	const struct mysql_sql_stmt *s = &e->stmts.v[e->next_stmt++];

	e->st.stage = MY_KEYS_SELECT;
	snprintf(e->what_buf, sizeof(e->what_buf),
	         "could not read table %s by key (keys %d to %d of %d, "
	         "statement %d of %d)",
	         e->st.text, s->first_row + 1, s->first_row + s->n_rows,
	         e->batch_rows, e->next_stmt, e->stmts.n);
	my_step_send(e, e, s->sql, s->len, 0, e->what_buf);
}

/* End read_keys with the rows copied. */
static void
my_keys_done(struct my_engine *e)
{
	struct my_steps *st = &e->st;

	my_point_values(st->vals,
	                (size_t)st->rows.n_rows * (size_t)st->rows.n_cols,
	                st->rows_text.text);
	st->rows.values = st->vals;
	my_step_end(e, 0);
}

/* Fail read_keys with STATUS, its message in st.cause: after ROLLBACK
 * when its statements run in a transaction on a live connection. */
static void
my_keys_abort(struct my_engine *e, int status)
{
	e->st.cause.code = status;
	if (e->stmts.n > 1 && status != RS_ECONNECT) {
		e->st.stage = MY_KEYS_ROLLBACK;
		my_step_sendc(e, e, my_rollback_sql,
		              "could not roll back the read by key");
		return;
	}
	e->err = e->st.cause;
	my_step_end(e, status);
}

/* Copy the rows of RES, the result of one of read_keys's SELECTs, into
 * the batch.  Returns 0, or RS_EINTERNAL / RS_ENOMEM with st.cause
 * filled. */
static int
my_keys_take(struct my_engine *e, MYSQL_RES *res)
{
	struct my_steps *st = &e->st;
	int n_cols = st->rows.n_cols;
	uint64_t n = res != NULL ? mysql_num_rows(res) : 0;
	size_t need;
	MYSQL_ROW row;

	if (res == NULL || (int)mysql_num_fields(res) != n_cols)
		return backend_fail(e->backend, &st->cause, RS_EINTERNAL,
		                    "reading table %s by key: %u columns came "
		                    "back, %d expected",
		                    st->text,
		                    res != NULL ? mysql_num_fields(res) : 0,
		                    n_cols);
	if (n > (uint64_t)(INT_MAX / n_cols - st->rows.n_rows))
		return backend_fail(e->backend, &st->cause, RS_EINTERNAL,
		                    "reading table %s by key: batch too large",
		                    st->text);
	need = ((size_t)st->rows.n_rows + (size_t)n) * (size_t)n_cols;
	if (need > st->vals_cap) {
		struct rs_value *v = realloc(st->vals, (need + 1) * sizeof(*v));

		if (v == NULL)
			return backend_fail(e->backend, &st->cause, RS_ENOMEM,
			                    "out of memory");
		st->vals = v;
		st->vals_cap = need;
	}
	while ((row = mysql_fetch_row(res)) != NULL) {
		unsigned long *lengths = mysql_fetch_lengths(res);
		struct rs_value *v =
			&st->vals[(size_t)st->rows.n_rows * (size_t)n_cols];

		if (st->rows.n_rows * n_cols >= (int)need || lengths == NULL)
			return backend_fail(e->backend, &st->cause,
			                    RS_EINTERNAL,
			                    "reading table %s by key: a stored "
			                    "result changed under it",
			                    st->text);
		for (int j = 0; j < n_cols; j++) {
			v[j].text = NULL;
			v[j].len = 0;
			if (row[j] == NULL)
				continue;
			v[j].len = lengths[j];
			strbuf_add(&st->rows_text, row[j], v[j].len);
			strbuf_add(&st->rows_text, "", 1);
			v[j].text = row[j]; /* a marker (my_point_values) */
		}
		st->rows.n_rows++;
	}
	if (st->rows_text.failed)
		return backend_fail(e->backend, &st->cause, RS_ENOMEM,
		                    "out of memory");
	return 0;
}

static void
my_keys_step(struct my_engine *e, int status, MYSQL_RES *res)
{
	int rc;

	if (e->st.stage == MY_KEYS_ROLLBACK) {
		/* The failure rolled back is the one to report. */
		e->err = e->st.cause;
		my_step_end(e, e->st.cause.code);
		return;
	}
	if (status != 0) {
		e->st.cause = e->st.err;
		my_keys_abort(e, status);
		return;
	}
	switch (e->st.stage) {
	case MY_KEYS_ISOLATION:
		e->st.stage = MY_KEYS_BEGIN;
		my_step_sendc(e, e, my_scan_begin_sql, e->what_buf);
		return;
	case MY_KEYS_BEGIN:
		break;
	case MY_KEYS_SELECT:
		rc = my_keys_take(e, res);
		if (rc != 0) {
			my_keys_abort(e, rc);
			return;
		}
		break;
	default: /* MY_KEYS_COMMIT */
		my_keys_done(e);
		return;
	}
	if (e->next_stmt < e->stmts.n) {
		my_keys_send(e);
	} else if (e->stmts.n > 1) {
		e->st.stage = MY_KEYS_COMMIT;
		snprintf(e->what_buf, sizeof(e->what_buf),
		         "could not end the read of table %s by key",
		         e->st.text);
		my_step_sendc(e, e, my_commit_sql, e->what_buf);
	} else {
		my_keys_done(e);
	}
}

/* Read the rows of REQUEST->table whose keys are REQUEST->keys, as
 * described above (see backend_read_keys): each row its key columns (in
 * MariaDB's text; backend.c makes them canonical) then REQUEST->columns,
 * as my_read_batch reads them.  Returns RS_EINTERNAL (a malformed
 * request, a NULL key, not connected), RS_EKEY (a key MariaDB cannot
 * take, naming its column and why) or RS_ENOMEM without calling back and
 * without sending anything.  The callback gets RS_EQUERY or RS_ECONNECT
 * when a statement fails. */
static int
my_read_keys(struct rs_backend *backend, const struct rs_keys_request *request,
             rs_rows_cb cb, void *arg, struct rs_err *err)
{
	struct my_engine *e = my_ready(backend, err);
	const struct rs_table_def *t = request->table;
	struct mysql_sql_escape esc;
	struct rs_err local;
	int rc;

	if (e == NULL)
		return RS_EINTERNAL;
	/* backend.c checked the request's shape; the key columns too. */
	rc = my_check_rows(backend, t, request->keys, t->n_pk, "read by key",
	                   err);
	if (rc != 0)
		return rc;
	esc = my_escaper(e);
	rc = mysql_sql_read_keys(&e->stmts, &esc, request, &local);
	if (rc == 0 && (e->st.text = strdup(t->name)) == NULL)
		rc = rs_err_set(&local, RS_ENOMEM, "out of memory");
	if (rc != 0) {
		my_free_stmts(e);
		my_steps_free(&e->st);
		return backend_fail(backend, err, rc, "%s", local.message);
	}
	e->st.rows.n_cols = t->n_pk + request->n_columns;
	e->batch_rows = request->keys->n_rows;
	e->next_stmt = 0;
	e->cb.rows = cb;
	my_steps_begin(e, NULL, MY_REPLY_ROWS, my_keys_step, arg);
	e->in_call = 1;
	if (e->stmts.n > 1) {
		e->st.stage = MY_KEYS_ISOLATION;
		snprintf(e->what_buf, sizeof(e->what_buf),
		         "could not start the read of table %s by key "
		         "(%d statements in one snapshot)",
		         t->name, e->stmts.n);
		my_step_sendc(e, e, my_keys_isolation_sql, e->what_buf);
	} else if (e->stmts.n == 1) {
		my_keys_send(e);
	} else {
		my_keys_done(e);
	}
	e->in_call = 0;
	return 0;
}

/* ---- making a table again ------------------------------------------- */

/* SHOW CREATE TABLE's one row, copied as read_keys copies its rows. */
static void
my_table_sql_step(struct my_engine *e, int status, MYSQL_RES *res)
{
	int rc;

	if (status != 0) {
		if (e->st.err.server_errno == ER_NO_SUCH_TABLE)
			status = e->st.err.code = RS_ESCHEMA;
		my_step_fail(e, status);
		return;
	}
	rc = my_keys_take(e, res);
	if (rc != 0) {
		e->err = e->st.cause;
		my_step_end(e, rc);
		return;
	}
	my_keys_done(e);
}

/* What makes TABLE again (see backend_table_sql): SHOW CREATE TABLE,
 * which mysql_sql_table_sql_build takes apart.  Returns RS_EINTERNAL (not
 * connected) or RS_ENOMEM without calling back. */
static int
my_table_sql(struct rs_backend *backend, const char *table, const char *as,
             rs_rows_cb cb, void *arg, struct rs_err *err)
{
	struct my_engine *e = my_ready(backend, err);
	struct rs_strbuf b = {0};

	(void)as;
	if (e == NULL)
		return RS_EINTERNAL;
	strbuf_str(&b, "SHOW CREATE TABLE ");
	mysql_sql_ident(&b, table);
	if (b.failed || (e->st.text = strdup(table)) == NULL) {
		strbuf_clear(&b);
		return backend_fail(backend, err, RS_ENOMEM, "out of memory");
	}
	e->st.rows.n_cols = 2;
	e->cb.rows = cb;
	my_steps_begin(e, NULL, MY_REPLY_ROWS, my_table_sql_step, arg);
	snprintf(e->what_buf, sizeof(e->what_buf),
	         "could not read the definition of table %s", table);
	e->in_call = 1;
	my_step_sendb(e, e, &b, e->what_buf);
	e->in_call = 0;
	return 0;
}

/* ---- replication ---------------------------------------------------- */

/*
 * A doubling promotes the MariaDB GTID replica of each primary: see the
 * comment of the stepped operations above for how one operation uses both
 * connections.
 *
 * replica_check: on the primary SELECT @@server_id, whether it waits
 * for semi-synchronous acknowledgements, @@read_only and Slaves_running
 * (it must take the writes, not replicate them); on the replica SHOW ALL
 * SLAVES STATUS (every replication connection: exactly the default one
 * must be there, without filters), SELECT @@server_id, @@read_only,
 * @@slave_skip_errors, @@slave_exec_mode, SHOW SLAVE HOSTS (replicas of its
 * own); then mysql_sql_replica_verdict says whether it may be promoted
 * (RS_EUSAGE with the fix when not).  position: @@gtid_binlog_pos on the
 * primary.  catch_up: SELECT MASTER_GTID_WAIT(position, slice) on the
 * replica, and when that times out its @@gtid_slave_pos, to say how many
 * transactions it lacks, and SHOW ALL SLAVES STATUS, to fail at once when
 * replication has stopped (it would wait for ever) and to say when the
 * I/O thread is reconnecting.  promote_ready (before the fence): FLUSH
 * RELAY LOGS twice, so that the SQL thread deletes the relay log it has
 * applied now rather than RESET SLAVE ALL under the fence.  promote: STOP
 * SLAVE, RESET SLAVE ALL (the replica forgets its primary, so that
 * nothing starts replication again), SET GLOBAL read_only = 0.  promoted:
 * SHOW ALL SLAVES STATUS, and when it is empty @@read_only, which
 * mysql_sql_replica_state reads as a replica following, stopped (a
 * promotion cut short after STOP SLAVE), detached (after RESET SLAVE ALL)
 * or promoted.  resume_replication: START SLAVE.  MariaDB keeps nothing on
 * the primary for a replica, so there is no release.
 */
enum {
	MY_RC_PRIMARY, /* the primary's server_id, semi-sync, read_only,
	                  Slaves_running */
	MY_RC_STATUS,  /* the replica's SHOW ALL SLAVES STATUS */
	MY_RC_ID,      /* the replica's server_id, read_only,
	                  slave_skip_errors, slave_exec_mode */
	MY_RC_HOSTS,   /* the replica's SHOW SLAVE HOSTS */
};

/* Note the columns of the replica's SHOW ALL SLAVES STATUS in RES. */
static void
my_rc_status(struct mysql_sql_replica *f, MYSQL_RES *res)
{
	MYSQL_ROW row = my_row(res);

	f->n_sources = res != NULL ? (int)mysql_num_rows(res) : 0;
	if (row == NULL)
		return;
	my_field_copy(res, row, "Connection_name", f->connection,
	              sizeof(f->connection));
	my_field_copy(res, row, "Slave_IO_Running", f->io_running,
	              sizeof(f->io_running));
	my_field_copy(res, row, "Slave_SQL_Running", f->sql_running,
	              sizeof(f->sql_running));
	my_field_copy(res, row, "Master_Host", f->master_host,
	              sizeof(f->master_host));
	f->master_port = my_field_number(res, row, "Master_Port", 0);
	f->master_id = my_field_number(res, row, "Master_Server_Id", 0);
	my_field_copy(res, row, "Using_Gtid", f->using_gtid,
	              sizeof(f->using_gtid));
	f->behind_s = my_field_number(res, row, "Seconds_Behind_Master", -1);
	my_field_copy(res, row, "Last_IO_Error", f->last_error,
	              sizeof(f->last_error));
	if (f->last_error[0] == '\0')
		my_field_copy(res, row, "Last_SQL_Error", f->last_error,
		              sizeof(f->last_error));
	for (int i = 0; i < MYSQL_SQL_N_FILTERS; i++)
		my_field_copy(res, row, mysql_sql_replica_filters[i],
		              f->filters[i], sizeof(f->filters[i]));
}

static void
my_rc_step(struct my_engine *e, int status, MYSQL_RES *res)
{
	struct mysql_sql_replica *f = e->st.facts;
	struct my_engine *r = e->st.peer;
	MYSQL_ROW row;
	char why[900];

	if (status != 0) {
		my_grant_hint(&e->st.err,
		              "checking a replica needs SLAVE MONITOR and "
		              "REPLICATION MASTER ADMIN on it");
		my_step_fail(e, status);
		return;
	}
	switch (e->st.stage) {
	case MY_RC_PRIMARY:
		if ((row = my_row(res)) == NULL || row[0] == NULL) {
			my_step_odd(e, "reading the primary's server_id");
			return;
		}
		f->primary_id = strtoll(row[0], NULL, 10);
		f->semi_sync = row[1] != NULL && strcasecmp(row[1], "ON") == 0;
		f->primary_read_only = !mysql_sql_off(row[2]);
		f->primary_applying =
			row[3] != NULL ? strtoll(row[3], NULL, 10) : 0;
		e->st.stage = MY_RC_STATUS;
		snprintf(e->what_buf, sizeof(e->what_buf),
		         "could not read the replication status of replica %s",
		         r->backend->shard);
		my_step_sendc(e, r, mysql_sql_slaves_status, e->what_buf);
		return;
	case MY_RC_STATUS:
		my_rc_status(f, res);
		e->st.stage = MY_RC_ID;
		my_step_sendc(e, r, mysql_sql_replica_facts, e->what_buf);
		return;
	case MY_RC_ID:
		if ((row = my_row(res)) == NULL || row[0] == NULL ||
		    row[1] == NULL) {
			my_step_odd(e, "reading the replica's server_id");
			return;
		}
		f->replica_id = strtoll(row[0], NULL, 10);
		f->read_only = !mysql_sql_off(row[1]);
		snprintf(f->skip_errors, sizeof(f->skip_errors), "%s",
		         row[2] != NULL ? row[2] : "OFF");
		snprintf(f->exec_mode, sizeof(f->exec_mode), "%s",
		         row[3] != NULL ? row[3] : "STRICT");
		e->st.stage = MY_RC_HOSTS;
		snprintf(e->what_buf, sizeof(e->what_buf),
		         "could not read the replicas of replica %s",
		         r->backend->shard);
		my_step_sendc(e, r, mysql_sql_slave_hosts, e->what_buf);
		return;
	default: /* MY_RC_HOSTS */
		f->n_replicas = res != NULL ? (int)mysql_num_rows(res) : 0;
		if ((row = my_row(res)) != NULL)
			snprintf(f->first_replica, sizeof(f->first_replica),
			         "server_id %s at %s:%s",
			         my_field(res, row, "Server_id") != NULL
			                 ? my_field(res, row, "Server_id")
			                 : "?",
			         my_field(res, row, "Host") != NULL
			                 ? my_field(res, row, "Host")
			                 : "?",
			         my_field(res, row, "Port") != NULL
			                 ? my_field(res, row, "Port")
			                 : "?");
		if (mysql_sql_replica_verdict(f, why, sizeof(why)) != 0) {
			my_step_end(e, backend_fail(e->backend, &e->err,
			                            RS_EUSAGE, "%s", why));
			return;
		}
		my_step_end(e, 0);
		return;
	}
}

/* Whether E's server is MariaDB (not MySQL): MariaDB's GTIDs and
 * MASTER_GTID_WAIT are what the replication operations use. */
static int
my_is_mariadb(const struct my_engine *e)
{
	const char *info = mysql_get_server_info(e->mysql);

	return info != NULL && strstr(info, "MariaDB") != NULL;
}

/* The engines of PRIMARY (*E) and, when not NULL, of REPLICA (*R) for a
 * replication operation, both MariaDB servers.  Returns 0, or
 * RS_EINTERNAL (not connected), RS_EBUSY (the replica is) or RS_EUSAGE
 * (MySQL) with ERR filled. */
static int
my_replication_ready(struct rs_backend *primary, struct rs_backend *replica,
                     struct my_engine **e, struct my_engine **r,
                     struct rs_err *err)
{
	struct my_engine *peer;
	const struct my_engine *other;
	int rc = my_steps_ready(primary, replica, e, &peer, err);

	if (r != NULL)
		*r = peer;
	if (rc != 0)
		return rc;
	if (r != NULL && peer == NULL) {
		*e = NULL;
		return backend_fail(primary, err, RS_EINTERNAL,
		                    "a replication operation without its "
		                    "replica (a bug in the caller)");
	}
	other = !my_is_mariadb(*e) ? *e : peer;
	if (other != NULL && !my_is_mariadb(other)) {
		*e = NULL;
		return backend_fail(other->backend, err, RS_EUSAGE,
		                    "doubling by replica promotion needs "
		                    "MariaDB (its GTIDs and MASTER_GTID_WAIT); "
		                    "this server is %s: use strategy \"split\"",
		                    mysql_get_server_info(other->mysql));
	}
	return 0;
}

/* Check that REPLICA can become a copy of PRIMARY (see
 * backend_replica_check and above).  Returns RS_EINTERNAL (not
 * connected), RS_EBUSY (the replica is), RS_EUSAGE (not MariaDB) or
 * RS_ENOMEM without calling back; the callback gets RS_EUSAGE naming
 * both shards and the fix, or RS_EQUERY / RS_ECONNECT (which name the
 * shard whose statement failed). */
static int
my_replica_check(struct rs_backend *primary, struct rs_backend *replica,
                 int max_lag_ms, rs_backend_cb cb, void *arg,
                 struct rs_err *err)
{
	struct my_engine *e, *r;
	struct mysql_sql_replica *f;
	int rc = my_replication_ready(primary, replica, &e, &r, err);

	if (rc != 0)
		return rc;
	f = calloc(1, sizeof(*f));
	if (f == NULL)
		return backend_fail(primary, err, RS_ENOMEM, "out of memory");
	f->primary = primary->shard;
	f->primary_url = primary->url.masked;
	f->replica = replica->shard;
	f->replica_url = replica->url.masked;
	f->host = e->target.host;
	f->port = e->target.port;
	f->max_lag_ms = max_lag_ms;
	e->st.facts = f;
	e->st.stage = MY_RC_PRIMARY;
	e->cb.done = cb;
	my_steps_begin(e, r, MY_REPLY_DONE, my_rc_step, arg);
	e->in_call = 1;
	my_step_sendc(e, e, mysql_sql_primary_facts,
	              "could not read the primary's server_id");
	e->in_call = 0;
	return 0;
}

static void
my_position_step(struct my_engine *e, int status, MYSQL_RES *res)
{
	MYSQL_ROW row;

	if (status != 0) {
		my_step_fail(e, status);
		return;
	}
	if ((row = my_row(res)) == NULL || row[0] == NULL) {
		my_step_odd(e, "reading the primary's GTID position");
		return;
	}
	if (strlen(row[0]) >= sizeof(e->st.position)) {
		my_step_end(e,
		            backend_fail(e->backend, &e->err, RS_EINTERNAL,
		                         "the primary's GTID position is "
		                         "%zu bytes long, more than reshard "
		                         "keeps (%d): too many replication "
		                         "domains",
		                         strlen(row[0]), RS_POSITION_SIZE - 1));
		return;
	}
	snprintf(e->st.position, sizeof(e->st.position), "%s", row[0]);
	my_step_end(e, 0);
}

/* PRIMARY's position now, its @@gtid_binlog_pos (see backend_position). */
static int
my_position(struct rs_backend *primary, rs_position_cb cb, void *arg,
            struct rs_err *err)
{
	struct my_engine *e;
	int rc = my_replication_ready(primary, NULL, &e, NULL, err);

	if (rc != 0)
		return rc;
	e->cb.position = cb;
	my_steps_begin(e, NULL, MY_REPLY_POSITION, my_position_step, arg);
	e->in_call = 1;
	my_step_sendc(e, e, mysql_sql_position,
	              "could not read the primary's GTID position");
	e->in_call = 0;
	return 0;
}

enum {
	MY_CU_WAIT,   /* MASTER_GTID_WAIT on the replica */
	MY_CU_POS,    /* its gtid_slave_pos, after a timeout */
	MY_CU_STATUS, /* its SHOW ALL SLAVES STATUS: still replicating? */
};

static void
my_catch_up_step(struct my_engine *e, int status, MYSQL_RES *res)
{
	struct rs_replication *state = &e->st.replication;
	MYSQL_ROW row;

	if (status != 0) {
		my_step_fail(e, status);
		return;
	}
	if (e->st.stage == MY_CU_STATUS) {
		my_rc_status(e->st.facts, res);
		if (mysql_sql_catch_up_verdict(e->st.facts, state->note,
		                               sizeof(state->note)) < 0) {
			my_step_end(e,
			            backend_fail(e->st.peer->backend, &e->err,
			                         RS_EQUERY, "%s", state->note));
			return;
		}
		my_step_end(e, 0);
		return;
	}
	row = my_row(res);
	if (row == NULL || row[0] == NULL) {
		my_step_odd(e, e->st.stage == MY_CU_WAIT
		                       ? "MASTER_GTID_WAIT on the replica"
		                       : "reading the replica's GTID position");
		return;
	}
	*state = (struct rs_replication){0, -1, -1, "transactions", ""};
	if (e->st.stage == MY_CU_WAIT && strcmp(row[0], "0") == 0) {
		state->reached = 1;
		state->behind = 0;
		my_step_end(e, 0);
		return;
	}
	if (e->st.stage == MY_CU_WAIT) {
		e->st.stage = MY_CU_POS;
		my_step_sendc(e, e->st.peer, mysql_sql_slave_pos, e->what_buf);
		return;
	}
	/* Not there after a whole slice: is it still replicating? */
	state->behind = mysql_sql_gtid_behind(e->st.text, row[0]);
	e->st.stage = MY_CU_STATUS;
	my_step_sendc(e, e->st.peer, mysql_sql_slaves_status, e->what_buf);
}

/* One slice of bringing REPLICA to POSITION (see backend_catch_up): the
 * replica waits at most SLICE_MS, and at most three quarters of the
 * operation's bound (the rest is for the round trips).  The callback's
 * state is in transactions: 0 behind when reached, else what the
 * replica's gtid_slave_pos lacks (-1 when it cannot be told). */
static int
my_catch_up(struct rs_backend *primary, struct rs_backend *replica,
            const char *position, int slice_ms, rs_replication_cb cb, void *arg,
            struct rs_err *err)
{
	struct my_engine *e, *r;
	struct mysql_sql_escape esc;
	struct rs_strbuf b = {0};
	int wait_ms = slice_ms > 0 ? slice_ms : 0;
	int rc = my_replication_ready(primary, replica, &e, &r, err);

	if (rc != 0)
		return rc;
	if (position == NULL)
		return backend_fail(primary, err, RS_EINTERNAL,
		                    "catch-up without a position (a bug in the "
		                    "caller)");
	if (wait_ms > primary->op_timeout_ms / 4 * 3)
		wait_ms = primary->op_timeout_ms / 4 * 3;
	esc = my_escaper(r);
	if (mysql_sql_gtid_wait(&b, &esc, position, wait_ms) != 0 ||
	    (e->st.text = strdup(position)) == NULL) {
		int oom = b.failed || e->st.text == NULL;

		strbuf_clear(&b);
		my_steps_free(&e->st);
		return backend_fail(primary, err, oom ? RS_ENOMEM : RS_EVALUE,
		                    "%s",
		                    oom ? "out of memory"
		                        : "the MariaDB driver's escaping "
		                          "refused the position");
	}
	e->st.facts = calloc(1, sizeof(*e->st.facts));
	if (e->st.facts == NULL) {
		strbuf_clear(&b);
		my_steps_free(&e->st);
		return backend_fail(primary, err, RS_ENOMEM, "out of memory");
	}
	e->st.facts->primary = primary->shard;
	e->st.facts->replica = replica->shard;
	e->st.wait_ms = wait_ms;
	e->st.stage = MY_CU_WAIT;
	snprintf(e->what_buf, sizeof(e->what_buf),
	         "could not wait for replica %s to reach %s", replica->shard,
	         position);
	e->cb.replication = cb;
	my_steps_begin(e, r, MY_REPLY_REPLICATION, my_catch_up_step, arg);
	e->in_call = 1;
	my_step_sendb(e, r, &b, e->what_buf);
	e->in_call = 0;
	return 0;
}

/* What promotion needs, for an access denied. */
static const char my_promote_grants[] =
	"promotion needs REPLICATION SLAVE ADMIN (STOP SLAVE), RELOAD "
	"(RESET SLAVE ALL) and READ_ONLY ADMIN (SET GLOBAL read_only) on "
	"the replica, or SUPER before MariaDB 10.5";

/* The statements of e->st.list one after another: promote and
 * promote_ready. */
static void
my_promote_step(struct my_engine *e, int status, MYSQL_RES *res)
{
	const char *const *list = e->st.list;

	(void)res;
	if (status != 0) {
		my_grant_hint(&e->st.err, e->st.hint);
		my_step_fail(e, status);
		return;
	}
	if (++e->st.index >= e->st.n_list) {
		my_step_end(e, 0);
		return;
	}
	snprintf(e->what_buf, sizeof(e->what_buf), "could not %s (%s)",
	         e->st.doing, list[e->st.index]);
	my_step_sendc(e, e, list[e->st.index], e->what_buf);
}

/* Run the N statements of LIST on REPLICA in turn, then CB; a failure
 * says "could not DOING (statement)" and, for a denied access, HINT. */
static int
my_promote_list(struct rs_backend *replica, const char *const *list, int n,
                const char *doing, const char *hint, rs_backend_cb cb,
                void *arg, struct rs_err *err)
{
	struct my_engine *e;
	int rc = my_replication_ready(replica, NULL, &e, NULL, err);

	if (rc != 0)
		return rc;
	e->cb.done = cb;
	my_steps_begin(e, NULL, MY_REPLY_DONE, my_promote_step, arg);
	e->st.list = list;
	e->st.n_list = n;
	e->st.doing = doing;
	e->st.hint = hint;
	e->st.index = 0;
	snprintf(e->what_buf, sizeof(e->what_buf), "could not %s (%s)", doing,
	         list[0]);
	e->in_call = 1;
	my_step_sendc(e, e, list[0], e->what_buf);
	e->in_call = 0;
	return 0;
}

/* Make REPLICA a primary of its own (see backend_promote and above).
 * Each statement repeats without harm, so a promotion that stopped half
 * way is finished by the next one. */
static int
my_promote(struct rs_backend *replica, rs_backend_cb cb, void *arg,
           struct rs_err *err)
{
	return my_promote_list(
		replica, mysql_sql_promote,
		(int)(sizeof(mysql_sql_promote) / sizeof(mysql_sql_promote[0])),
		"promote", my_promote_grants, cb, arg, err);
}

/* Before the fence: the relay log the replica has applied goes now, not
 * in promote's RESET SLAVE ALL (backend_promote_ready). */
static int
my_promote_ready(struct rs_backend *replica, rs_backend_cb cb, void *arg,
                 struct rs_err *err)
{
	return my_promote_list(replica, mysql_sql_promote_ready,
	                       (int)(sizeof(mysql_sql_promote_ready) /
	                             sizeof(mysql_sql_promote_ready[0])),
	                       "start the replica's relay log again",
	                       "rotating the relay log before the fence needs "
	                       "RELOAD (FLUSH RELAY LOGS) on the replica, as "
	                       "promotion does",
	                       cb, arg, err);
}

/* Start the replication of REPLICA, stopped, again (see
 * backend_resume_replication). */
static int
my_resume_replication(struct rs_backend *replica, rs_backend_cb cb, void *arg,
                      struct rs_err *err)
{
	static const char *const list[] = {mysql_sql_resume};

	return my_promote_list(replica, list, 1,
	                       "start the replica's replication again",
	                       "starting replication needs REPLICATION SLAVE "
	                       "ADMIN (START SLAVE) on the replica, or SUPER "
	                       "before MariaDB 10.5",
	                       cb, arg, err);
}

static void
my_promoted_step(struct my_engine *e, int status, MYSQL_RES *res)
{
	struct mysql_sql_replica f = {0};
	MYSQL_ROW row;

	if (status != 0) {
		my_grant_hint(&e->st.err, "reading whether a replica is "
		                          "promoted needs SLAVE MONITOR on it");
		my_step_fail(e, status);
		return;
	}
	if (e->st.stage == 0) {
		my_rc_status(&f, res);
		if (f.n_sources > 0) { /* it replicates, or is set up to */
			e->st.value = mysql_sql_replica_state(&f);
			my_step_end(e, 0);
			return;
		}
		e->st.stage = 1;
		my_step_sendc(e, e, mysql_sql_read_only,
		              "could not read whether the replica is "
		              "writable");
		return;
	}
	row = my_row(res);
	if (row == NULL || row[0] == NULL) {
		my_step_odd(e, "reading @@read_only");
		return;
	}
	f.read_only = !mysql_sql_off(row[0]);
	e->st.value = mysql_sql_replica_state(&f);
	my_step_end(e, 0);
}

/* What REPLICA is (see backend_promoted): a primary already once no
 * replication connection is left (SHOW ALL SLAVES STATUS empty) and it is
 * writable (@@read_only off); mysql_sql_replica_state tells the rest. */
static int
my_promoted(struct rs_backend *replica, rs_count_cb cb, void *arg,
            struct rs_err *err)
{
	struct my_engine *e;
	int rc = my_replication_ready(replica, NULL, &e, NULL, err);

	if (rc != 0)
		return rc;
	my_count_begin(e, my_promoted_step, cb, arg, mysql_sql_slaves_status,
	               NULL, "could not read the replica's replication status");
	return 0;
}

/* ---- source_check --------------------------------------------------- */

static void
my_source_step(struct my_engine *e, int status, MYSQL_RES *res)
{
	MYSQL_ROW row;

	if (status != 0) {
		my_step_fail(e, status);
		return;
	}
	if ((row = my_row(res)) == NULL || row[0] == NULL) {
		my_step_odd(e, "reading @@read_only");
		return;
	}
	e->st.value = row[1] != NULL && strtoll(row[1], NULL, 10) > 0
	                      ? RS_SOURCE_APPLYING
	              : !mysql_sql_off(row[0]) ? RS_SOURCE_READ_ONLY
	                                       : RS_SOURCE_WRITABLE;
	my_step_end(e, 0);
}

/* Whether BACKEND can be a split's source (see backend_source_check):
 * mysql_sql_source_facts, on MariaDB (my_source_check_ok). */
static int
my_source_check(struct rs_backend *backend, rs_count_cb cb, void *arg,
                struct rs_err *err)
{
	struct my_engine *e, *peer;
	int rc = my_steps_ready(backend, NULL, &e, &peer, err);

	if (rc != 0)
		return rc;
	my_count_begin(e, my_source_step, cb, arg, mysql_sql_source_facts, NULL,
	               "could not read whether the server is a primary");
	return 0;
}

/* MySQL keeps the status in performance_schema, not where MariaDB does. */
static int
my_source_check_ok(const struct rs_backend *backend)
{
	const struct my_engine *e = backend->engine;

	return e != NULL && e->mysql != NULL && my_is_mariadb(e);
}

/* ---- close ---------------------------------------------------------- */

/* Close the connection with mysql_close_start/_cont on the loop (bounded
 * by the connect timeout), then the poll and the timer; the engine is
 * freed from the last close callback, then DONE(backend).  Never fails;
 * works on a backend that never connected or whose connect failed. */
static void
my_close(struct rs_backend *backend, void (*done)(struct rs_backend *backend))
{
	struct my_engine *e = backend->engine;

	if (e == NULL) {
		done(backend);
		return;
	}
	e->closed = done;
	e->op = MY_OP_CLOSE;
	my_free_sql(e);
	my_free_stmts(e);
	my_scan_drop(e);
	if (e->mysql == NULL) {
		e->state = MY_CLOSED;
		uv_timer_stop(&e->timer);
		if (e->poll != NULL)
			my_drop_poll(e);
		uv_close((uv_handle_t *)&e->timer, my_on_closed);
		return;
	}
	if (e->timeout_ms <= 0)
		e->timeout_ms = backend->connect_timeout_ms > 0
		                        ? backend->connect_timeout_ms
		                        : 10000;
	my_deadline_start(e, e->timeout_ms);
	e->in_call = 1;
	my_start(e, MY_CLOSING);
	e->in_call = 0;
}

const struct rs_backend_ops backend_mysql_ops = {
	.engine = "mysql",
	.connect = my_connect,
	.describe = my_describe,
	.read_batch = my_read_batch,
	.exec = my_exec,
	.upsert = my_upsert,
	.load = my_load,
	.delete_keys = my_delete_keys,
	.purge_keys = my_purge_keys,
	.count = my_count,
	.fence = my_fence,
	.fence_rows = 1,
	/* fnv1a_64 and java as loops in the triggers' bodies. */
	.point_hashes = 1u << RS_HASH_SHA256_64 | 1u << RS_HASH_IDENTITY |
                        1u << RS_HASH_FNV1A_64 | 1u << RS_HASH_JAVA,
	.guard_sql = my_guard_sql,
	.markers = my_markers,
	.mark = my_mark,
	.delete_log = my_delete_log,
	.fenced = my_fenced,
	.capture = my_capture,
	.read_keys = my_read_keys,
	.table_sql = my_table_sql,
	.table_sql_build = mysql_sql_table_sql_build,
	.replica_check = my_replica_check,
	.position = my_position,
	.catch_up = my_catch_up,
	.promote = my_promote,
	.promoted = my_promoted,
	.source_check = my_source_check,
	.source_check_ok = my_source_check_ok,
	.promote_ready = my_promote_ready,
	.resume_replication = my_resume_replication,
	.scan_begin = my_scan_begin,
	.scan_next = my_scan_next,
	.scan_end = my_scan_end,
	.close = my_close,
};
