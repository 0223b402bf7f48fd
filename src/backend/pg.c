/*
 * The PostgreSQL engine behind backend.h: libpq in non-blocking mode,
 * driven by the backend's libuv loop.
 *
 * Each connection owns one uv_poll_t on PQsocket() and one uv_timer_t for
 * its whole life, and moves through an explicit state (enum pg_state).
 * Connecting is PQconnectStartParams + PQconnectPoll steps, each waiting on
 * the poll handle for what libpq asked for, bounded by the timer; then the
 * session is set up (UTC, lock and statement timeouts, the client check,
 * application name) by one simple query.  A host name is first resolved
 * with uv_getaddrinfo and handed to libpq as hostaddr, because libpq's own
 * lookup would block the loop.  Queries are sent with PQsendQueryParams
 * (text in, text out); the poll handle keeps UV_WRITABLE armed while
 * PQflush() has more to send, and on UV_READABLE the input is consumed and
 * results collected until PQgetResult() returns NULL.  Results never leave this
 * file: rows handed to a callback point into a PGresult that is cleared when
 * the callback returns.
 *
 * The poll handle must never outlive its socket in the loop: libuv removes
 * a watched descriptor from epoll by number when the handle stops, so a
 * handle stopped after libpq closed its socket could unregister another
 * connection that reused the number.  So the socket is checked after every
 * libpq call that may close or replace it (a connection attempt moving to
 * the next address, a lost connection), and a handle watching a stale
 * socket is closed at once; it is initialised again on the new socket from
 * its close callback.
 *
 * A connection that fails or is lost is dropped at once (PQfinish) and the
 * backend stays usable only for connect (again) and close.
 *
 * The timer bounds connecting by connect_timeout_ms and every other
 * operation, from its first statement sent to its callback, by the bound
 * it started with (backend->op_timeout_ms).  An operation still waiting
 * when that passes fails with RS_ECONNECT and its connection is dropped:
 * PQfinish without waiting for the server, since PQcancel would block the
 * loop on a server that does not answer, and a connection left in the
 * middle of a query is of no more use.  Closing the socket ends the
 * server's side too: a server process that was only stopped sees it as
 * soon as it runs again, and on PostgreSQL 14+ the session's
 * client_connection_check_interval makes a running statement notice
 * within a second and stop (statement_timeout stays 0: a statement
 * bounded by the server as well would fail on a live server with another
 * message, at the same moment, and a longer bound set for one operation
 * would need the session changed first).
 *
 * The SQL text of every operation but the session setup and transaction
 * control is built by pg_sql.c (pg_sql.h), which knows no libpq; this file
 * checks the requests, sends the statements and reads their results.
 *
 * Writes take canonical values (backend/canonical.h), which pg_sql_input
 * turns into PostgreSQL input text.  An upsert and a delete of keys are
 * one statement each whatever the number of rows: the rows (or keys)
 * travel as one JSON parameter that json_to_recordset reads with the
 * columns' types (pg_sql.h), so each is atomic on its own.
 *
 * count, the fence, the marker, the delete log, purge_keys and the
 * replication operations are tasks (struct pg_task, see "tasks" below):
 * lists of statements run one after another, on this connection or, for
 * an operation between a primary and its replica, on the other backend's
 * too.  docs/postgresql.md says what each one runs.
 */
#include <arpa/inet.h>
#include <libpq-fe.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "backend/backend_engine.h"
#include "backend/pg_sql.h"
#include "common/strbuf.h"

#define PG_LOCK_TIMEOUT_MS    2000 /* how long a statement waits for a lock */
#define PG_MAX_ADDRESSES      8  /* addresses of a host name handed to libpq */
#define PG_MAX_POLL_ERRORS    8  /* poll errors in a row before giving up */
#define PG_TEXT_OID           25 /* pg_type.oid of text */
#define PG_CHECK_CLIENT_MS    1000    /* client_connection_check_interval */
#define PG_LOCK_NOT_AVAILABLE "55P03" /* SQLSTATE of a lock timeout */

enum pg_state {
	PG_NEW,        /* never connected: only connect or close */
	PG_RESOLVING,  /* connect: waiting for uv_getaddrinfo */
	PG_CONNECTING, /* connect: between PQconnectPoll steps */
	PG_SETUP,      /* connect: the session setup query runs */
	PG_READY,      /* connected, no operation running */
	PG_QUERY,      /* describe, read_batch, exec, upsert or delete runs */
	PG_FAILED,     /* the connection failed or was lost and is gone */
	PG_CLOSING,    /* close started; freed from the last close callback */
};

enum pg_op {
	PG_OP_NONE,
	PG_OP_CONNECT,
	PG_OP_DESCRIBE,
	PG_OP_READ,
	PG_OP_EXEC,
	PG_OP_UPSERT,
	PG_OP_DELETE,
	PG_OP_SCAN_BEGIN, /* BEGIN …; DECLARE reshard_scan … */
	PG_OP_SCAN_NEXT,  /* FETCH FORWARD n FROM reshard_scan */
	PG_OP_SCAN_END,   /* CLOSE reshard_scan; COMMIT */
	PG_OP_TASK,       /* a statement of a task (struct pg_task) */
};

/* What the armed timer is for. */
enum pg_timer_role {
	PG_TIMER_IDLE,     /* not armed */
	PG_TIMER_CONNECT,  /* the connect timeout */
	PG_TIMER_DEADLINE, /* the running operation's bound */
	PG_TIMER_DEFER,    /* ends an operation with nothing to send */
	PG_TIMER_PAUSE,    /* a task waits before its next statement */
};

/* Where the poll handle is in its own life. */
enum pg_poll_state {
	PG_POLL_NONE,    /* not initialised (no socket yet, or closed) */
	PG_POLL_OPEN,    /* initialised on poll_fd */
	PG_POLL_CLOSING, /* uv_close called, its callback not yet run */
};

struct pg_engine {
	struct rs_backend *backend;
	PGconn *conn; /* NULL when not connected */
	enum pg_state state;
	enum pg_op op;  /* the running operation */
	uv_poll_t poll; /* on PQsocket(conn) */
	enum pg_poll_state poll_state;
	int poll_fd;              /* the socket poll was initialised on */
	int poll_events;          /* what the current step waits for */
	int poll_errors;          /* poll callbacks in a row with an error */
	uv_timer_t timer;         /* connect timeout, operation deadline */
	struct pg_lookup *lookup; /* the host name lookup in flight */
	int pending;              /* close callbacks still to come */
	const char **keywords;    /* connect: url_pg_conninfo's arrays */
	const char **values;
	const char **all_keywords; /* connect: the same plus host/hostaddr */
	const char **all_values;
	char *host_list;          /* "name,name,…" for hostaddr_list */
	char *hostaddr_list;      /* the resolved addresses, "a,b,…" */
	const char *resolve_host; /* the host name being resolved */
	int flushing;     /* PQflush() returned 1: UV_WRITABLE stays on */
	PGresult *result; /* the query's result so far (an error wins) */
	union {
		rs_backend_cb done; /* connect, exec, upsert, delete */
		rs_describe_cb describe;
		rs_rows_cb rows;
		rs_count_cb count;
		rs_markers_cb markers;
		rs_position_cb position;
		rs_replication_cb replication;
	} cb;
	void *arg;
	char *table_name;           /* describe: the table asked for */
	struct rs_strbuf copy_data; /* load: COPY's rows, until sent; the
	                               room stays for the next load */
	struct rs_value *cells;     /* read: the values of the last batch */
	size_t cells_cap;
	struct pg_task *task; /* the task this connection works for */
	struct rs_err err;    /* the failure handed to a callback */
	int scanning;         /* the scan's transaction and cursor are open */
	int scan_rollback;    /* a scan op failed: its ROLLBACK runs */
	struct rs_err scan_failure;    /* what to report after that ROLLBACK */
	enum pg_timer_role timer_role; /* what the timer is armed for */
	int op_bound_ms;               /* the running operation's bound */
	void (*closed)(struct rs_backend *backend); /* close's DONE */
};

/* A host name lookup.  It lives on its own so that a connect that timed
 * out, or a close, can walk away from it: its callback then only frees
 * it. */
struct pg_lookup {
	uv_getaddrinfo_t req;
	struct pg_engine *pg; /* NULL once abandoned */
};

static void pg_on_poll(uv_poll_t *handle, int status, int events);
static void pg_connect_step(struct pg_engine *pg);
static void pg_query_io(struct pg_engine *pg, int events);
static void pg_task_report(struct rs_backend *backend, struct pg_task *task,
                           int status, const struct rs_err *err, void *arg);
static void pg_task_lost(struct pg_task *t, struct pg_engine *pg);
static void pg_task_timer(struct pg_engine *pg, enum pg_timer_role role);
static void pg_task_result(struct pg_task *t, struct pg_engine *pg,
                           PGresult *result);
static void pg_task_failed(struct pg_task *t, struct pg_engine *pg, int code);
static const char *pg_task_what(const struct pg_engine *pg);

/* ---- small helpers ---- */

/* Copy TEXT (libpq's multi-line messages) into OUT as one line: runs of
 * white space become one space, none at either end. */
static void
pg_one_line(char *out, size_t size, const char *text)
{
	size_t n = 0;
	int space = 0;

	if (text == NULL)
		text = "";
	for (const char *p = text; *p != '\0' && n + 1 < size; p++) {
		if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') {
			space = n > 0;
			continue;
		}
		if (space && n + 2 < size)
			out[n++] = ' ';
		space = 0;
		out[n++] = *p;
	}
	out[n] = '\0';
}

/* Drop the server's notices and warnings ("table does not exist,
 * skipping"): libpq would print them on stderr, and only main() prints. */
static void
pg_ignore_notice(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

/* Record in ERR the SQLSTATE of a failure and whether it is worth retrying;
 * after backend_fail, which resets both. */
static void
pg_err_state(struct rs_err *err, const char *sqlstate)
{
	if (err == NULL)
		return;
	snprintf(err->sqlstate, sizeof(err->sqlstate), "%s",
	         sqlstate != NULL ? sqlstate : "");
	err->retryable = rs_err_retryable(err->sqlstate, 0);
	/* A lock timeout ends once the transaction holding the lock does. */
	if (strcmp(err->sqlstate, PG_LOCK_NOT_AVAILABLE) == 0)
		err->retryable = 1;
}

/* Hand to ERR the failure (code RC, message in LOCAL) of a builder of
 * pg_sql.h: out of memory as it is, a value PostgreSQL cannot hold with
 * the shard named and its SQLSTATE kept.  Returns RC. */
static int
pg_sql_failed(const struct rs_backend *backend, struct rs_err *err, int rc,
              const struct rs_err *local)
{
	if (rc == RS_ENOMEM) {
		if (err != NULL)
			*err = *local;
		return rc;
	}
	backend_fail(backend, err, rc, "%s", local->message);
	pg_err_state(err, local->sqlstate);
	return rc;
}

/* Fill pg->err from RESULT (may be NULL: libpq's connection message is
 * used then) with CODE, or RS_ECONNECT when an established connection is
 * gone.  WHAT says what failed.  A failed connection attempt has no
 * SQLSTATE: libpq keeps the server's to itself.  Returns the code used. */
static int
pg_fail_result(struct pg_engine *pg, int code, const char *what,
               const PGresult *result)
{
	const char *sqlstate = NULL, *message = NULL;
	char line[640];
	int lost = pg->op != PG_OP_CONNECT &&
	           (pg->conn == NULL || PQstatus(pg->conn) == CONNECTION_BAD);

	if (result != NULL) {
		sqlstate = PQresultErrorField(result, PG_DIAG_SQLSTATE);
		message = PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY);
		if (message == NULL || message[0] == '\0')
			message = PQresultErrorMessage(result);
	}
	if ((message == NULL || message[0] == '\0') && pg->conn != NULL)
		message = PQerrorMessage(pg->conn);
	if (message == NULL || message[0] == '\0')
		message = "no message from the server";
	pg_one_line(line, sizeof(line), message);
	if (lost) {
		code = RS_ECONNECT;
		/* libpq's own "server closed the connection" has no SQLSTATE:
		 * call it a connection failure, as the server would. */
		if (sqlstate == NULL || sqlstate[0] == '\0')
			sqlstate = "08006";
		backend_fail(pg->backend, &pg->err, code,
		             "%s: connection lost: %s", what, line);
	} else {
		backend_fail(pg->backend, &pg->err, code, "%s: %s", what, line);
	}
	pg_err_state(&pg->err, sqlstate);
	return code;
}

/* ---- handles and their lives ---- */

/* Free the engine once close has started and nothing is pending. */
static void
pg_maybe_free(struct pg_engine *pg)
{
	struct rs_backend *backend = pg->backend;
	void (*closed)(struct rs_backend *) = pg->closed;

	if (pg->state != PG_CLOSING || pg->pending > 0)
		return;
	url_pg_conninfo_free(pg->keywords);
	free(pg->all_keywords);
	free(pg->all_values);
	free(pg->host_list);
	free(pg->hostaddr_list);
	free(pg->table_name);
	free(pg->cells);
	strbuf_clear(&pg->copy_data);
	free(pg);
	backend->engine = NULL;
	closed(backend);
}

/* The timer is closed: the last handle, usually. */
static void
pg_on_timer_closed(uv_handle_t *handle)
{
	struct pg_engine *pg = handle->data;

	pg->pending--;
	pg_maybe_free(pg);
}

static void pg_on_poll_closed(uv_handle_t *handle);

/* Close the poll handle now if it is open: its socket is about to go, or
 * already went, away. */
static void
pg_poll_release(struct pg_engine *pg)
{
	if (pg->poll_state != PG_POLL_OPEN)
		return;
	pg->poll_state = PG_POLL_CLOSING;
	pg->pending++;
	uv_close((uv_handle_t *)&pg->poll, pg_on_poll_closed);
}

/* Close the poll handle if libpq closed or replaced the socket it watches.
 * Called right after every libpq call that may do so. */
static void
pg_poll_check(struct pg_engine *pg)
{
	if (pg->poll_state == PG_POLL_OPEN &&
	    (pg->conn == NULL || PQsocket(pg->conn) != pg->poll_fd))
		pg_poll_release(pg);
}

/* Wait for EVENTS on the connection's current socket, initialising the
 * poll handle on it when needed.  When the handle is still closing, it is
 * initialised from its close callback.  Returns 0 or a negative libuv
 * code (UV_EBADF: the connection has no socket). */
static int
pg_poll_watch(struct pg_engine *pg, int events)
{
	int sock = pg->conn != NULL ? PQsocket(pg->conn) : -1;

	pg->poll_events = events;
	pg_poll_check(pg);
	if (sock < 0)
		return UV_EBADF;
	if (pg->poll_state == PG_POLL_CLOSING)
		return 0;
	if (pg->poll_state == PG_POLL_NONE) {
		int rc = uv_poll_init(pg->backend->loop, &pg->poll, sock);
		if (rc != 0)
			return rc;
		pg->poll.data = pg;
		pg->poll_fd = sock;
		pg->poll_state = PG_POLL_OPEN;
	}
	/* Always start again, even with the same events: uv_poll_start
	 * re-registers the descriptor, which matters when libpq closed the
	 * socket and opened the next one under the same number. */
	return uv_poll_start(&pg->poll, events, pg_on_poll);
}

/* Drop the connection: poll handle first (its socket is still open),
 * then the connection itself. */
static void
pg_drop(struct pg_engine *pg)
{
	pg_poll_release(pg);
	pg->poll_events = 0;
	if (pg->result != NULL) {
		PQclear(pg->result);
		pg->result = NULL;
	}
	if (pg->conn != NULL) {
		PQfinish(pg->conn);
		pg->conn = NULL;
	}
	pg->flushing = 0;
	pg->scanning = 0; /* the server rolls the scan back */
}

/* Release what only connecting needs. */
static void
pg_connect_clear(struct pg_engine *pg)
{
	url_pg_conninfo_free(pg->keywords);
	pg->keywords = NULL;
	pg->values = NULL;
	free(pg->all_keywords);
	free(pg->all_values);
	free(pg->host_list);
	free(pg->hostaddr_list);
	pg->all_keywords = NULL;
	pg->all_values = NULL;
	pg->host_list = NULL;
	pg->hostaddr_list = NULL;
	pg->resolve_host = NULL;
}

/* Walk away from a host name lookup in flight, if any. */
static void
pg_lookup_abandon(struct pg_engine *pg)
{
	if (pg->lookup == NULL)
		return;
	pg->lookup->pg = NULL;
	uv_cancel((uv_req_t *)&pg->lookup->req);
	pg->lookup = NULL;
}

/* ---- ending operations ---- */

/* End the running operation with STATUS (pg->err filled when negative)
 * and call its callback.  Nothing of PG is touched after the callback,
 * which may start the next operation or close the backend. */
static void
pg_op_finish(struct pg_engine *pg, int status, struct rs_table_def *table,
             const struct rs_rows *rows)
{
	struct rs_backend *backend = pg->backend;
	const struct rs_err *err = status != 0 ? &pg->err : NULL;
	enum pg_op op = pg->op;
	void *arg = pg->arg;
	struct pg_task *task = pg->task;

	pg->op = PG_OP_NONE;
	pg->task = NULL;
	pg->copy_data.len = 0; /* its room is kept for the next load */
	if (pg->state != PG_FAILED)
		pg->state = pg->conn != NULL ? PG_READY : PG_FAILED;
	uv_timer_stop(&pg->timer);
	pg->timer_role = PG_TIMER_IDLE;
	backend->busy = 0;
	switch (op) {
	case PG_OP_CONNECT:
	case PG_OP_EXEC:
	case PG_OP_UPSERT:
	case PG_OP_DELETE:
	case PG_OP_SCAN_BEGIN:
	case PG_OP_SCAN_END:
		pg->cb.done(backend, status, err, arg);
		break;
	case PG_OP_DESCRIBE:
		pg->cb.describe(backend, status, err, table, arg);
		break;
	case PG_OP_READ:
	case PG_OP_SCAN_NEXT:
		pg->cb.rows(backend, status, err, rows, arg);
		break;
	case PG_OP_TASK:
		pg_task_report(backend, task, status, err, arg);
		break;
	case PG_OP_NONE:
		break;
	}
}

/* Fail the running operation with pg->err (already filled) and CODE, and
 * drop the connection: it failed, was lost, or is stuck in the middle of
 * a query.  (A statement that merely failed ends in pg_query_done.) */
static void
pg_op_fail(struct pg_engine *pg, int code)
{
	if (pg->op == PG_OP_TASK && pg->task != NULL) {
		pg_drop(pg);
		pg->state = PG_FAILED;
		pg->err.code = code;
		pg_task_lost(pg->task, pg);
		return;
	}
	if (pg->op == PG_OP_CONNECT) {
		pg_lookup_abandon(pg);
		pg_connect_clear(pg);
	}
	pg_drop(pg);
	pg->state = PG_FAILED;
	pg_op_finish(pg, code, NULL, NULL);
}

/* Fail the running operation because the loop refused to watch the
 * socket (libuv code RC) or the socket is gone. */
static void
pg_op_fail_watch(struct pg_engine *pg, int rc)
{
	if (pg->conn == NULL || PQstatus(pg->conn) == CONNECTION_BAD ||
	    rc == UV_EBADF) {
		pg_fail_result(pg, RS_ECONNECT,
		               pg->op == PG_OP_CONNECT ? "could not connect"
		                                       : "query failed",
		               NULL);
	} else {
		backend_fail(pg->backend, &pg->err, RS_EINTERNAL,
		             "cannot watch the connection's socket: %s",
		             uv_strerror(rc));
	}
	pg_op_fail(pg, pg->err.code);
}

/* ---- the poll and timer callbacks ---- */

/* The poll handle is closed: free the engine when closing, or watch the
 * connection's new socket.  Failing that, the operation fails. */
static void
pg_on_poll_closed(uv_handle_t *handle)
{
	struct pg_engine *pg = handle->data;

	pg->pending--;
	pg->poll_state = PG_POLL_NONE;
	pg->poll_fd = -1;
	if (pg->state == PG_CLOSING) {
		pg_maybe_free(pg);
		return;
	}
	/* Closed because libpq moved to a new socket mid-step: watch it. */
	if (pg->poll_events != 0 && pg->conn != NULL &&
	    (pg->state == PG_CONNECTING || pg->state == PG_SETUP ||
	     pg->state == PG_QUERY)) {
		int rc = pg_poll_watch(pg, pg->poll_events);

		if (rc != 0)
			pg_op_fail_watch(pg, rc);
	}
}

/* The socket is ready (or failed): advance the connect or the query.
 * Errors end the running operation through its callback. */
static void
pg_on_poll(uv_poll_t *handle, int status, int events)
{
	struct pg_engine *pg = handle->data;

	if (status < 0) {
		/* libuv stopped the handle (POLLERR, e.g. a refused connect):
		 * let libpq find out what happened on the socket. */
		if (++pg->poll_errors > PG_MAX_POLL_ERRORS) {
			backend_fail(pg->backend, &pg->err, RS_ECONNECT,
			             "the connection's socket failed: %s",
			             uv_strerror(status));
			pg_err_state(&pg->err, "08006");
			pg_op_fail(pg, RS_ECONNECT);
			return;
		}
		events = UV_READABLE | UV_WRITABLE;
	} else {
		pg->poll_errors = 0;
	}
	switch (pg->state) {
	case PG_CONNECTING:
		pg_connect_step(pg);
		break;
	case PG_SETUP:
	case PG_QUERY:
		pg_query_io(pg, events);
		break;
	default:
		uv_poll_stop(handle);
		break;
	}
}

/* What the operation running on PG was doing, for its error messages. */
static const char *
pg_what(const struct pg_engine *pg)
{
	switch (pg->op) {
	case PG_OP_TASK:
		return pg_task_what(pg);
	case PG_OP_CONNECT:
		return "could not set up the session";
	case PG_OP_DESCRIBE:
		return "could not read the catalog";
	case PG_OP_READ:
	case PG_OP_SCAN_BEGIN:
	case PG_OP_SCAN_NEXT:
		return "could not read rows";
	case PG_OP_SCAN_END:
		return "could not end the scan";
	case PG_OP_UPSERT:
		return "could not write rows";
	case PG_OP_DELETE:
		return "could not delete rows";
	default:
		return "statement failed";
	}
}

/* The timer fired.  A connect that took too long fails with RS_ECONNECT
 * (SQLSTATE 08001, retryable) and the attempt is dropped; an operation
 * past its bound fails with RS_ECONNECT (08006) and its connection is
 * dropped (see the top of the file); an upsert or delete of no rows, which
 * has nothing to send, ends (see pg_write_nothing). */
static void
pg_on_timer(uv_timer_t *timer)
{
	struct pg_engine *pg = timer->data;
	enum pg_timer_role role = pg->timer_role;

	pg->timer_role = PG_TIMER_IDLE;
	if (pg->op == PG_OP_TASK && pg->task != NULL &&
	    role != PG_TIMER_CONNECT) {
		pg_task_timer(pg, role);
		return;
	}
	switch (role) {
	case PG_TIMER_DEFER:
		pg_op_finish(pg, 0, NULL, NULL);
		return;
	case PG_TIMER_CONNECT:
		backend_fail(pg->backend, &pg->err, RS_ECONNECT,
		             "could not connect within %d ms",
		             pg->backend->connect_timeout_ms);
		pg_err_state(&pg->err, "08001");
		pg_op_fail(pg, RS_ECONNECT);
		return;
	case PG_TIMER_DEADLINE:
		backend_fail_deadline(pg->backend, &pg->err, pg_what(pg),
		                      pg->op_bound_ms,
		                      "the connection was closed");
		pg_err_state(&pg->err, "08006");
		pg_op_fail(pg, RS_ECONNECT);
		return;
	case PG_TIMER_PAUSE:
	case PG_TIMER_IDLE:
		return;
	}
}

/* ---- queries ---- */

/* Keep RESULT as the query's result: the last one, but the first error
 * wins over everything after it. */
static void
pg_keep_result(struct pg_engine *pg, PGresult *result)
{
	ExecStatusType old = pg->result != NULL ? PQresultStatus(pg->result)
	                                        : PGRES_COMMAND_OK;

	if (pg->result != NULL &&
	    (old == PGRES_FATAL_ERROR || old == PGRES_BAD_RESPONSE)) {
		PQclear(result);
		return;
	}
	PQclear(pg->result);
	pg->result = result;
}

static void pg_query_done(struct pg_engine *pg);

/* The server waits for a load's rows (COPY FROM STDIN): queue them all
 * and the end of the copy (libpq grows its buffer, so in non-blocking
 * mode both are taken at once), then flush what the socket takes; the
 * rest goes as it becomes writable.  The rows are freed once queued.
 * Returns 0, or -1 with the operation failed (the connection is of no
 * more use). */
static int
pg_copy_send(struct pg_engine *pg)
{
	/* A message of CopyData each slice: its length is an int to libpq
	 * (2 GiB and more would go as nothing, or cut short) and at most
	 * 1 GB to the server; messages need not end at a row's end.  Small
	 * enough that an ordinary chunk (5,000 rows of 100 bytes) is sent
	 * in pieces too, so that this loop is what every load runs, and
	 * psql's own pieces are smaller. */
	const size_t slice = (size_t)256 << 10;
	int rc = 1, flushed;

	for (size_t at = 0; rc == 1 && at < pg->copy_data.len; at += slice) {
		size_t n = pg->copy_data.len - at;

		rc = PQputCopyData(pg->conn, pg->copy_data.text + at,
		                   (int)(n < slice ? n : slice));
	}
	if (rc == 1)
		rc = PQputCopyEnd(pg->conn, NULL);
	pg->copy_data.len = 0;
	flushed = rc == 1 ? PQflush(pg->conn) : -1;
	pg_poll_check(pg);
	if (flushed < 0) {
		pg_fail_result(pg, RS_ECONNECT, "could not send the rows",
		               NULL);
		pg_op_fail(pg, pg->err.code);
		return -1;
	}
	pg->flushing = flushed == 1;
	return 0;
}

/* The socket is ready for EVENTS: send what is left, read what came,
 * collect results until PQgetResult returns NULL. */
static void
pg_query_io(struct pg_engine *pg, int events)
{
	int rc;

	if (events & UV_READABLE) {
		/* On failure the reason is in the connection; the results
		 * below, or the connection's status, tell what it was. */
		(void)PQconsumeInput(pg->conn);
		pg_poll_check(pg);
	}
	/* While PQflush has more to send, call it on either event: reading
	 * may have made room on the server's side. */
	if (pg->flushing) {
		int flushed = PQflush(pg->conn);

		pg_poll_check(pg);
		if (flushed < 0) {
			pg_fail_result(pg, RS_ECONNECT,
			               "could not send the query", NULL);
			pg_op_fail(pg, pg->err.code);
			return;
		}
		pg->flushing = flushed == 1;
	}
	while (!PQisBusy(pg->conn)) {
		PGresult *result = PQgetResult(pg->conn);

		if (result == NULL) {
			pg_poll_check(pg);
			pg_query_done(pg);
			return;
		}
		if (PQresultStatus(result) == PGRES_COPY_IN) {
			PQclear(result);
			if (pg_copy_send(pg) != 0)
				return;
			continue;
		}
		pg_keep_result(pg, result);
	}
	pg_poll_check(pg);
	if (PQstatus(pg->conn) == CONNECTION_BAD) {
		pg_fail_result(pg, RS_ECONNECT, "query failed", pg->result);
		pg_op_fail(pg, pg->err.code);
		return;
	}
	rc = pg_poll_watch(pg, UV_READABLE | (pg->flushing ? UV_WRITABLE : 0));
	if (rc != 0)
		pg_op_fail_watch(pg, rc);
}

/* Whether RESULT is a success. */
static int
pg_result_ok(const PGresult *result)
{
	ExecStatusType status =
		result != NULL ? PQresultStatus(result) : PGRES_FATAL_ERROR;

	return status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK ||
	       status == PGRES_EMPTY_QUERY;
}

static void pg_connected(struct pg_engine *pg, PGresult *result);
static void pg_described(struct pg_engine *pg, PGresult *result);
static void pg_rows_read(struct pg_engine *pg, PGresult *result);
static void pg_scan_step(struct pg_engine *pg, PGresult *result);
static void pg_scan_failed(struct pg_engine *pg, int code);

/* The query finished: hand its result to the operation. */
static void
pg_query_done(struct pg_engine *pg)
{
	PGresult *result = pg->result;

	pg->result = NULL;
	pg->flushing = 0;
	pg->poll_events = 0;
	if (pg->poll_state == PG_POLL_OPEN)
		uv_poll_stop(&pg->poll);
	if (!pg_result_ok(result) || PQstatus(pg->conn) == CONNECTION_BAD) {
		const char *what = pg_what(pg);
		int code = pg->op == PG_OP_CONNECT ? RS_ECONNECT : RS_EQUERY;

		code = pg_fail_result(pg, code, what, result);
		PQclear(result);
		if (pg->op == PG_OP_TASK &&
		    PQstatus(pg->conn) != CONNECTION_BAD)
			pg_task_failed(pg->task, pg, code);
		else if (pg->op == PG_OP_SCAN_BEGIN ||
		         pg->op == PG_OP_SCAN_NEXT || pg->op == PG_OP_SCAN_END)
			pg_scan_failed(pg, code);
		else if (pg->op == PG_OP_CONNECT ||
		         PQstatus(pg->conn) == CONNECTION_BAD)
			pg_op_fail(pg, code);
		else /* the connection is fine and idle again */
			pg_op_finish(pg, code, NULL, NULL);
		return;
	}
	switch (pg->op) {
	case PG_OP_CONNECT:
		pg_connected(pg, result);
		break;
	case PG_OP_DESCRIBE:
		pg_described(pg, result);
		break;
	case PG_OP_READ:
		pg_rows_read(pg, result);
		break;
	case PG_OP_EXEC:
	case PG_OP_UPSERT:
	case PG_OP_DELETE:
		PQclear(result);
		pg_op_finish(pg, 0, NULL, NULL);
		break;
	case PG_OP_SCAN_BEGIN:
	case PG_OP_SCAN_NEXT:
	case PG_OP_SCAN_END:
		pg_scan_step(pg, result);
		break;
	case PG_OP_TASK:
		pg_task_result(pg->task, pg, result);
		break;
	case PG_OP_NONE:
		PQclear(result);
		break;
	}
}

/* Check that an operation may start now.  Returns 0, or RS_EINTERNAL (no
 * connection yet, or a connect still running: a bug in the caller) or
 * RS_ECONNECT (the connection failed or was lost) with ERR filled. */
static int
pg_check_ready(struct rs_backend *backend, struct rs_err *err)
{
	struct pg_engine *pg = backend->engine;

	if (pg != NULL && pg->state == PG_READY &&
	    PQstatus(pg->conn) == CONNECTION_OK)
		return 0;
	if (pg != NULL && (pg->state == PG_FAILED || pg->state == PG_READY)) {
		backend_fail(backend, err, RS_ECONNECT,
		             "not connected: the connection failed or was "
		             "lost; connect again");
		pg_err_state(err, "08003");
		return RS_ECONNECT;
	}
	return backend_fail(backend, err, RS_EINTERNAL,
	                    "not connected (a bug in the caller)");
}

/* Start the bound of an operation that begins now: its first statement
 * is on its way.  Returns 0 or a negative libuv code. */
static int
pg_deadline_start(struct pg_engine *pg)
{
	uv_loop_t *loop = pg->backend->loop;

	/* The loop's clock is as old as its last turn; a step may have
	 * worked for a while since. */
	uv_update_time(loop);
	pg->op_bound_ms = pg->backend->op_timeout_ms;
	pg->timer_role = PG_TIMER_DEADLINE;
	return uv_timer_start(&pg->timer, pg_on_timer,
	                      (uint64_t)pg->op_bound_ms, 0);
}

/* Send SQL and run it as operation OP: a simple query for connect's
 * session setup and for exec (several statements allowed), else one
 * statement with N text PARAMS (TYPES may be NULL).  Returns 0, or
 * RS_ECONNECT (the connection is gone, and dropped) / RS_EQUERY /
 * RS_EINTERNAL with ERR filled and nothing started. */
static int
pg_send(struct pg_engine *pg, enum pg_op op, const char *sql, int n,
        const unsigned int *types, const char *const *params,
        struct rs_err *err)
{
	enum pg_state before = pg->state;
	char line[640];
	int sent, flushed = 0, rc = 0, code;

	if (op == PG_OP_EXEC || op == PG_OP_CONNECT || op == PG_OP_SCAN_BEGIN ||
	    op == PG_OP_SCAN_NEXT || op == PG_OP_SCAN_END ||
	    (op == PG_OP_TASK && n == 0))
		sent = PQsendQuery(pg->conn, sql);
	else
		sent = PQsendQueryParams(pg->conn, sql, n, types, params, NULL,
		                         NULL, 0);
	if (sent)
		flushed = PQflush(pg->conn);
	pg_poll_check(pg);
	if (sent && flushed >= 0) {
		pg->state = op == PG_OP_CONNECT ? PG_SETUP : PG_QUERY;
		pg->flushing = flushed == 1;
		rc = pg_poll_watch(
			pg, UV_READABLE | (pg->flushing ? UV_WRITABLE : 0));
		/* A task's bound is its owner's, armed when it starts. */
		if (rc == 0 && before == PG_READY && op != PG_OP_TASK)
			rc = pg_deadline_start(pg);
		if (rc == 0) {
			pg->op = op;
			pg->backend->busy = 1;
			return 0;
		}
		pg->state = before;
		pg->flushing = 0;
	}
	if (!sent && PQstatus(pg->conn) != CONNECTION_BAD) {
		pg_one_line(line, sizeof(line), PQerrorMessage(pg->conn));
		code = backend_fail(pg->backend, err, RS_EQUERY,
		                    "could not send the query: %s", line);
		pg_err_state(err, NULL);
		return code;
	}
	/* Lost, or half sent: the connection is of no more use. */
	if (rc != 0 && rc != UV_EBADF && PQstatus(pg->conn) != CONNECTION_BAD)
		snprintf(line, sizeof(line), "cannot watch the socket: %s",
		         uv_strerror(rc));
	else
		pg_one_line(line, sizeof(line), PQerrorMessage(pg->conn));
	code = backend_fail(pg->backend, err, RS_ECONNECT,
	                    "could not send the query: connection lost: %s",
	                    line);
	pg_err_state(err, "08006");
	pg_drop(pg);
	pg->state = PG_FAILED;
	return code;
}

/* ---- connect ---- */

/* The session setup, one simple query.  Besides the time zone and the
 * timeouts, the output settings the canonical form reads (canonical.h),
 * whatever the role, the database or PGOPTIONS set: every float digit
 * (with extra_float_digits 0, 0.30000000000000004 would read as 0.3 and
 * copy and compare as such), ISO dates and intervals, UTF-8 text (what
 * reshard hashes, as the fence's SQL does).  And commits that are on disk
 * when they return: synchronous_commit off (from the role, the database,
 * PGOPTIONS) becomes local.  The journal records a chunk done once its
 * commit returns; and the fence's commit must flush every commit before
 * it, since a replica is caught up to the flush position read after the
 * fence: with off, writes acknowledged before the fence could sit above
 * it, and a replica be promoted without them. */
static void
pg_setup_session(struct pg_engine *pg)
{
	char sql[768], check[64] = "";
	int named = 0;
	struct rs_err err;

	for (int i = 0; i < pg->backend->url.n_params; i++)
		if (strcmp(pg->backend->url.params[i].name,
		           "application_name") == 0)
			named = 1;
	/* client_connection_check_interval: see the top of the file. */
	if (PQserverVersion(pg->conn) >= 140000)
		snprintf(check, sizeof(check),
		         "; SET client_connection_check_interval = %d",
		         PG_CHECK_CLIENT_MS);
	snprintf(sql, sizeof(sql),
	         "SET TimeZone = 'UTC'; SET extra_float_digits = 3; "
	         "SET DateStyle = 'ISO, MDY'; SET IntervalStyle = 'postgres'; "
	         "SET client_encoding = 'UTF8'; SET lock_timeout = %d; "
	         "SET statement_timeout = 0; DO $$BEGIN IF "
	         "current_setting('synchronous_commit') = 'off' THEN "
	         "PERFORM set_config('synchronous_commit', 'local', false); "
	         "END IF; END$$%s%s",
	         PG_LOCK_TIMEOUT_MS, check,
	         named ? "" : "; SET application_name = 'reshard'");
	if (PQsetnonblocking(pg->conn, 1) != 0) {
		pg_fail_result(pg, RS_ECONNECT,
		               "could not make the connection non-blocking",
		               NULL);
		pg_op_fail(pg, RS_ECONNECT);
		return;
	}
	if (pg_send(pg, PG_OP_CONNECT, sql, 0, NULL, NULL, &err) != 0) {
		pg->err = err;
		pg_op_fail(pg, err.code);
	}
}

/* One PQconnectPoll step; then wait for what libpq asks for, or set up
 * the session, or fail the connect. */
static void
pg_connect_step(struct pg_engine *pg)
{
	PostgresPollingStatusType polled = PQconnectPoll(pg->conn);
	int rc;

	pg_poll_check(pg);
	switch (polled) {
	case PGRES_POLLING_READING:
		rc = pg_poll_watch(pg, UV_READABLE);
		break;
	case PGRES_POLLING_WRITING:
		rc = pg_poll_watch(pg, UV_WRITABLE);
		break;
	case PGRES_POLLING_OK:
		pg_setup_session(pg);
		return;
	default:
		pg_fail_result(pg, RS_ECONNECT, "could not connect", NULL);
		pg_op_fail(pg, RS_ECONNECT);
		return;
	}
	if (rc != 0)
		pg_op_fail_watch(pg, rc);
}

/* Start libpq's connection attempt with the connect arrays.  Returns 0,
 * or RS_ENOMEM / RS_ECONNECT (libpq refused at once, e.g. a bad option)
 * / RS_EINTERNAL (libuv refused) with pg->err filled; the caller fails
 * the connect. */
static int
pg_connect_start(struct pg_engine *pg)
{
	const char *const *keywords =
		pg->all_keywords != NULL ? pg->all_keywords : pg->keywords;
	const char *const *values =
		pg->all_values != NULL ? pg->all_values : pg->values;
	int rc;

	pg->conn = PQconnectStartParams(keywords, values, 0);
	if (pg->conn == NULL)
		return backend_fail(pg->backend, &pg->err, RS_ENOMEM,
		                    "out of memory");
	PQsetNoticeProcessor(pg->conn, pg_ignore_notice, NULL);
	if (PQstatus(pg->conn) == CONNECTION_BAD)
		return pg_fail_result(pg, RS_ECONNECT, "could not connect",
		                      NULL);
	pg->state = PG_CONNECTING;
	/* As if PQconnectPoll had answered PGRES_POLLING_WRITING. */
	rc = pg_poll_watch(pg, UV_WRITABLE);
	if (rc == UV_EBADF)
		return pg_fail_result(pg, RS_ECONNECT, "could not connect",
		                      NULL);
	if (rc != 0)
		return backend_fail(pg->backend, &pg->err, RS_EINTERNAL,
		                    "cannot watch the connection's socket: %s",
		                    uv_strerror(rc));
	return 0;
}

/* The host name libpq would look up itself, blocking: the last host
 * keyword when it is one name (not an address, a list or a socket
 * directory) and no hostaddr or port list is given; else NULL. */
static const char *
pg_host_to_resolve(const struct pg_engine *pg)
{
	const char *host = NULL, *port = NULL;
	unsigned char addr[sizeof(struct in6_addr)];

	for (int i = 0; pg->keywords[i] != NULL; i++) {
		if (strcmp(pg->keywords[i], "hostaddr") == 0 &&
		    pg->values[i] != NULL && pg->values[i][0] != '\0')
			return NULL;
		if (strcmp(pg->keywords[i], "host") == 0)
			host = pg->values[i];
		if (strcmp(pg->keywords[i], "port") == 0)
			port = pg->values[i];
	}
	if (host == NULL || host[0] == '\0' || host[0] == '/' ||
	    host[0] == '@' || strchr(host, ',') != NULL ||
	    (port != NULL && strchr(port, ',') != NULL) ||
	    inet_pton(AF_INET, host, addr) == 1 ||
	    inet_pton(AF_INET6, host, addr) == 1)
		return NULL;
	return host;
}

/* Add "host=NAME,NAME,…" and "hostaddr=A,B,…" for the resolved addresses
 * at the end of copies of the connect arrays (later keywords win).
 * Returns 0, RS_ENOMEM, or RS_ECONNECT when no address is usable. */
static int
pg_use_addresses(struct pg_engine *pg, const struct addrinfo *list)
{
	struct rs_strbuf hosts = {0}, addrs = {0};
	int n = 0, n_keywords = 0;

	for (const struct addrinfo *a = list; a != NULL && n < PG_MAX_ADDRESSES;
	     a = a->ai_next) {
		char text[INET6_ADDRSTRLEN];
		const void *where;

		if (a->ai_family == AF_INET)
			where = &((const struct sockaddr_in *)(const void *)
			                  a->ai_addr)
			                 ->sin_addr;
		else if (a->ai_family == AF_INET6)
			where = &((const struct sockaddr_in6 *)(const void *)
			                  a->ai_addr)
			                 ->sin6_addr;
		else
			continue;
		if (inet_ntop(a->ai_family, where, text, sizeof(text)) == NULL)
			continue;
		if (n > 0) {
			strbuf_add(&hosts, ",", 1);
			strbuf_add(&addrs, ",", 1);
		}
		strbuf_str(&hosts, pg->resolve_host);
		strbuf_str(&addrs, text);
		n++;
	}
	if (n == 0 || hosts.failed || addrs.failed) {
		free(hosts.text);
		free(addrs.text);
		if (n == 0)
			return backend_fail(
				pg->backend, &pg->err, RS_ECONNECT,
				"could not connect: host \"%s\" has "
				"no IPv4 or IPv6 address",
				pg->resolve_host);
		return backend_fail(pg->backend, &pg->err, RS_ENOMEM,
		                    "out of memory");
	}
	pg->host_list = hosts.text;
	pg->hostaddr_list = addrs.text;
	while (pg->keywords[n_keywords] != NULL)
		n_keywords++;
	pg->all_keywords = calloc((size_t)n_keywords + 3, sizeof(char *));
	pg->all_values = calloc((size_t)n_keywords + 3, sizeof(char *));
	if (pg->all_keywords == NULL || pg->all_values == NULL)
		return backend_fail(pg->backend, &pg->err, RS_ENOMEM,
		                    "out of memory");
	for (int i = 0; i < n_keywords; i++) {
		pg->all_keywords[i] = pg->keywords[i];
		pg->all_values[i] = pg->values[i];
	}
	pg->all_keywords[n_keywords] = "host";
	pg->all_values[n_keywords] = pg->host_list;
	pg->all_keywords[n_keywords + 1] = "hostaddr";
	pg->all_values[n_keywords + 1] = pg->hostaddr_list;
	return 0;
}

/* The host name lookup ended: start connecting to its addresses, or fail
 * the connect with RS_ECONNECT (unknown host) / RS_ENOMEM. */
static void
pg_on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *list)
{
	struct pg_lookup *lookup = (struct pg_lookup *)(void *)req;
	struct pg_engine *pg = lookup->pg;
	int rc;

	free(lookup);
	if (pg == NULL) {
		/* Timed out, or closed: nobody waits for this any more. */
		uv_freeaddrinfo(list);
		return;
	}
	pg->lookup = NULL;
	if (status < 0) {
		backend_fail(pg->backend, &pg->err, RS_ECONNECT,
		             "could not connect: could not resolve host "
		             "\"%s\": %s",
		             pg->resolve_host, uv_strerror(status));
		uv_freeaddrinfo(list);
		pg_op_fail(pg, RS_ECONNECT);
		return;
	}
	rc = pg_use_addresses(pg, list);
	uv_freeaddrinfo(list);
	if (rc == 0)
		rc = pg_connect_start(pg);
	if (rc != 0)
		pg_op_fail(pg, rc);
}

/* Connect (see backend_connect).  Works on a new backend and again after a
 * failed or lost connection.  Returns 0 and calls CB later, or a negative
 * code with ERR filled and CB never called: RS_ENOMEM, RS_ECONNECT when
 * libpq refuses the connection options at once, RS_EINTERNAL when already
 * connected or when libuv refuses. */
static int
pg_connect(struct rs_backend *backend, rs_backend_cb cb, void *arg,
           struct rs_err *err)
{
	struct pg_engine *pg = backend->engine;
	struct addrinfo hints;
	int rc;

	if (pg == NULL) {
		pg = calloc(1, sizeof(*pg));
		if (pg == NULL)
			return rs_err_set(err, RS_ENOMEM, "out of memory");
		pg->backend = backend;
		pg->poll_fd = -1;
		pg->state = PG_NEW;
		rc = uv_timer_init(backend->loop, &pg->timer);
		if (rc != 0) {
			free(pg);
			return backend_fail(backend, err, RS_EINTERNAL,
			                    "cannot start a timer: %s",
			                    uv_strerror(rc));
		}
		pg->timer.data = pg;
		backend->engine = pg;
	}
	if (pg->state != PG_NEW && pg->state != PG_FAILED)
		return backend_fail(backend, err, RS_EINTERNAL,
		                    "already connected (a bug in the caller)");
	rc = url_pg_conninfo(&backend->url, backend->password, &pg->keywords,
	                     &pg->values, err);
	if (rc != 0)
		return rc;
	pg->poll_errors = 0;
	pg->cb.done = cb;
	pg->arg = arg;
	pg->op = PG_OP_CONNECT;
	pg->resolve_host = pg_host_to_resolve(pg);
	if (pg->resolve_host != NULL) {
		pg->lookup = calloc(1, sizeof(*pg->lookup));
		if (pg->lookup == NULL) {
			pg->op = PG_OP_NONE;
			pg_connect_clear(pg);
			return rs_err_set(err, RS_ENOMEM, "out of memory");
		}
		memset(&hints, 0, sizeof(hints));
		hints.ai_family = AF_UNSPEC;
		hints.ai_socktype = SOCK_STREAM;
		pg->lookup->pg = pg;
		rc = uv_getaddrinfo(backend->loop, &pg->lookup->req,
		                    pg_on_resolved, pg->resolve_host, NULL,
		                    &hints);
		if (rc != 0) {
			free(pg->lookup);
			pg->lookup = NULL;
			pg->op = PG_OP_NONE;
			pg_connect_clear(pg);
			return backend_fail(backend, err, RS_EINTERNAL,
			                    "cannot look up a host name: %s",
			                    uv_strerror(rc));
		}
		pg->state = PG_RESOLVING;
	} else {
		rc = pg_connect_start(pg);
		if (rc != 0) {
			if (err != NULL)
				*err = pg->err;
			pg->op = PG_OP_NONE;
			pg_connect_clear(pg);
			pg_drop(pg);
			pg->state = PG_FAILED;
			return rc;
		}
	}
	pg->timer_role = PG_TIMER_CONNECT;
	uv_timer_start(&pg->timer, pg_on_timer,
	               (uint64_t)backend->connect_timeout_ms, 0);
	backend->busy = 1;
	return 0;
}

/* The session is set up: the connect succeeded. */
static void
pg_connected(struct pg_engine *pg, PGresult *result)
{
	PQclear(result);
	uv_timer_stop(&pg->timer);
	pg->timer_role = PG_TIMER_IDLE;
	pg_connect_clear(pg);
	pg_op_finish(pg, 0, NULL, NULL);
}

/* ---- describe ---- */

/* What a pg_class.relkind that is not a table is, for messages. */
static const char *
pg_relkind_name(char relkind)
{
	switch (relkind) {
	case 'v':
		return "a view";
	case 'm':
		return "a materialized view";
	case 'f':
		return "a foreign table";
	case 'S':
		return "a sequence";
	case 'i':
	case 'I':
		return "an index";
	case 'c':
		return "a composite type";
	case 't':
		return "a TOAST table";
	default:
		return "not a table";
	}
}

/* Build the table description from the catalog query's RESULT (the rows
 * of pg_sql_describe, which is cleared here) and end the describe. */
static void
pg_described(struct pg_engine *pg, PGresult *result)
{
	struct rs_backend *backend = pg->backend;
	struct rs_table_def *table = NULL;
	const char **uniques = NULL;
	int rows = PQntuples(result), code;
	char relkind;

	if (rows == 0) {
		code = backend_fail(backend, &pg->err, RS_ESCHEMA,
		                    "table %s does not exist", pg->table_name);
		goto fail;
	}
	relkind = PQgetvalue(result, 0, 0)[0];
	if (relkind != 'r' && relkind != 'p') {
		code = backend_fail(backend, &pg->err, RS_ESCHEMA,
		                    "table %s does not exist (%s has that "
		                    "name)",
		                    pg->table_name, pg_relkind_name(relkind));
		goto fail;
	}
	table = calloc(1, sizeof(*table));
	if (table == NULL || (table->name = strdup(pg->table_name)) == NULL ||
	    (table->columns = calloc((size_t)rows, sizeof(*table->columns))) ==
	            NULL ||
	    (table->pk = calloc((size_t)rows, sizeof(*table->pk))) == NULL ||
	    (uniques = calloc((size_t)rows, sizeof(*uniques))) == NULL)
		goto nomem;
	table->estimated_rows =
		PQgetisnull(result, 0, 1)
			? -1
			: strtoll(PQgetvalue(result, 0, 1), NULL, 10);
	for (int i = 0; i < rows; i++) {
		struct rs_column *column = &table->columns[i];

		if (PQgetisnull(result, i, 2))
			break; /* a table without columns */
		table->n_columns = i + 1;
		column->name = strdup(PQgetvalue(result, i, 2));
		column->type = strdup(PQgetvalue(result, i, 3));
		if (column->name == NULL || column->type == NULL)
			goto nomem;
		column->kind = canonical_kind_pg(column->type);
		column->generated = !PQgetisnull(result, i, 5) &&
		                    PQgetvalue(result, i, 5)[0] == 't';
		if (!PQgetisnull(result, i, 6))
			uniques[i] = PQgetvalue(result, i, 6);
		if (!PQgetisnull(result, i, 4)) {
			long ord = strtol(PQgetvalue(result, i, 4), NULL, 10);

			if (ord < 1 || ord > rows) {
				code = backend_fail(
					backend, &pg->err, RS_EINTERNAL,
					"table %s: unexpected primary key "
					"position %ld",
					pg->table_name, ord);
				goto fail;
			}
			table->pk[ord - 1] = i;
			if (ord > table->n_pk)
				table->n_pk = (int)ord;
		}
	}
	if (table->n_pk == 0) {
		code = backend_fail(backend, &pg->err, RS_ESCHEMA,
		                    "table %s has no primary key; reshard "
		                    "needs one to read in key order and to "
		                    "resume",
		                    pg->table_name);
		goto fail;
	}
	if (backend_table_uniques(table, uniques) != 0)
		goto nomem;
	free(uniques);
	PQclear(result);
	free(pg->table_name);
	pg->table_name = NULL;
	pg_op_finish(pg, 0, table, NULL);
	return;
nomem:
	code = backend_fail(backend, &pg->err, RS_ENOMEM, "out of memory");
fail:
	free(uniques);
	backend_table_free(table);
	PQclear(result);
	free(pg->table_name);
	pg->table_name = NULL;
	pg_op_finish(pg, code, NULL, NULL);
}

/* Describe TABLE (see backend_describe).  Returns 0 and calls CB later, or
 * RS_ENOMEM / RS_EINTERNAL (not connected) / RS_ECONNECT (connection lost)
 * with ERR filled and CB never called. */
static int
pg_describe(struct rs_backend *backend, const char *table, rs_describe_cb cb,
            void *arg, struct rs_err *err)
{
	struct pg_engine *pg = backend->engine;
	const unsigned int types[1] = {PG_TEXT_OID};
	const char *params[1] = {table};
	int rc = pg_check_ready(backend, err);

	if (rc != 0)
		return rc;
	free(pg->table_name);
	pg->table_name = strdup(table);
	if (pg->table_name == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	pg->cb.describe = cb;
	pg->arg = arg;
	rc = pg_send(pg, PG_OP_DESCRIBE, pg_sql_describe, 1, types, params,
	             err);
	if (rc != 0) {
		free(pg->table_name);
		pg->table_name = NULL;
	}
	return rc;
}

/* ---- read_batch ---- */

/* Hand the rows of RESULT to the callback, then clear RESULT. */
static void
pg_rows_read(struct pg_engine *pg, PGresult *result)
{
	int n_rows = PQntuples(result), n_cols = PQnfields(result);
	size_t n = (size_t)n_rows * (size_t)n_cols;
	struct rs_rows rows;

	if (n > pg->cells_cap) {
		struct rs_value *more = realloc(pg->cells, n * sizeof(*more));

		if (more == NULL) {
			PQclear(result);
			backend_fail(pg->backend, &pg->err, RS_ENOMEM,
			             "out of memory");
			pg_op_finish(pg, RS_ENOMEM, NULL, NULL);
			return;
		}
		pg->cells = more;
		pg->cells_cap = n;
	}
	for (int r = 0; r < n_rows; r++) {
		for (int c = 0; c < n_cols; c++) {
			struct rs_value *v = &pg->cells[(size_t)r * n_cols + c];

			if (PQgetisnull(result, r, c)) {
				v->text = NULL;
				v->len = 0;
			} else {
				v->text = PQgetvalue(result, r, c);
				v->len = (size_t)PQgetlength(result, r, c);
			}
		}
	}
	rows.n_rows = n_rows;
	rows.n_cols = n_cols;
	rows.values = pg->cells;
	pg_op_finish(pg, 0, NULL, &rows);
	PQclear(result);
}

/* Read one batch in key order (see backend_read_batch): the key columns
 * and the columns asked for, of the rows whose key is above AFTER and at
 * most UPTO (row comparisons, which follow the primary key's index).
 * Returns 0 and calls CB later, or RS_ENOMEM / RS_EINTERNAL (not
 * connected, bad request) / RS_ECONNECT with ERR filled and CB never
 * called. */
static int
pg_read_batch(struct rs_backend *backend, const struct rs_read_request *request,
              rs_rows_cb cb, void *arg, struct rs_err *err)
{
	struct pg_engine *pg = backend->engine;
	const struct rs_table_def *t = request->table;
	struct pg_sql_query query;
	int rc = pg_check_ready(backend, err);

	if (rc != 0)
		return rc;
	if (t == NULL || t->n_pk <= 0 || request->limit <= 0 ||
	    request->n_columns < 0 ||
	    (request->n_columns > 0 && request->columns == NULL))
		return backend_fail(backend, err, RS_EINTERNAL,
		                    "bad read request (a bug in the caller)");
	for (int i = 0; i < request->n_columns; i++)
		if (request->columns[i] < 0 ||
		    request->columns[i] >= t->n_columns)
			return backend_fail(backend, err, RS_EINTERNAL,
			                    "bad read request: no column %d in "
			                    "table %s (a bug in the caller)",
			                    request->columns[i], t->name);
	rc = pg_sql_read(request, &query, err);
	if (rc != 0)
		return rc;
	pg->cb.rows = cb;
	pg->arg = arg;
	rc = pg_send(pg, PG_OP_READ, query.sql, query.n_params, NULL,
	             query.params, err);
	pg_sql_query_free(&query);
	return rc;
}

/* ---- upsert and delete_keys ---- */

/* Check a write request: TABLE with a valid primary key, ROWS of N_COLS
 * values a row.  Returns 0 or RS_EINTERNAL (a bug in the caller) with ERR
 * filled. */
static int
pg_check_rows(const struct rs_backend *backend, const struct rs_table_def *t,
              const struct rs_rows *rows, int n_cols, struct rs_err *err)
{
	if (t == NULL || rows == NULL || t->n_columns <= 0 || t->n_pk <= 0 ||
	    t->n_pk > t->n_columns || rows->n_rows < 0 ||
	    rows->n_cols != n_cols ||
	    (rows->n_rows > 0 && rows->values == NULL))
		return backend_fail(backend, err, RS_EINTERNAL,
		                    "bad rows for table %s (a bug in the "
		                    "caller)",
		                    t != NULL ? t->name : "(none)");
	for (int i = 0; i < t->n_pk; i++)
		if (t->pk[i] < 0 || t->pk[i] >= t->n_columns)
			return backend_fail(backend, err, RS_EINTERNAL,
			                    "table %s: bad primary key column "
			                    "%d (a bug in the caller)",
			                    t->name, t->pk[i]);
	return 0;
}

/* Run OP on no rows: nothing to send, but the callback must come from the
 * loop, after this returns; the timer's does it (pg_on_timer). */
static int
pg_write_nothing(struct pg_engine *pg, enum pg_op op, rs_backend_cb cb,
                 void *arg, struct rs_err *err)
{
	int rc = uv_timer_start(&pg->timer, pg_on_timer, 0, 0);

	pg->timer_role = rc == 0 ? PG_TIMER_DEFER : PG_TIMER_IDLE;
	if (rc != 0)
		return backend_fail(pg->backend, err, RS_EINTERNAL,
		                    "cannot start a timer: %s",
		                    uv_strerror(rc));
	pg->cb.done = cb;
	pg->arg = arg;
	pg->op = op;
	pg->state = PG_QUERY;
	pg->backend->busy = 1;
	return 0;
}

/* Send a write built by pg_sql.c: SQL with its one JSON parameter (none
 * when JSON is NULL), both freed here, CB called when it ends.  Returns
 * what pg_send returns. */
static int
pg_send_write(struct pg_engine *pg, enum pg_op op, char *sql, char *json,
              rs_backend_cb cb, void *arg, struct rs_err *err)
{
	const char *params[1] = {json};
	int rc;

	pg->cb.done = cb;
	pg->arg = arg;
	rc = pg_send(pg, op, sql, json != NULL ? 1 : 0, NULL,
	             json != NULL ? params : NULL, err);
	free(sql);
	free(json);
	return rc;
}

/* Upsert ROWS into TABLE (see backend_upsert): the values are checked and
 * converted to PostgreSQL input first, then sent as one statement
 * (pg_sql_upsert), atomic on its own, inside the caller's transaction
 * when one is open.  Returns 0 and calls CB later (RS_EQUERY with the
 * server's SQLSTATE when it fails; RS_ECONNECT when the connection is
 * lost: the server rolls back), or RS_ENOMEM / RS_EINTERNAL /
 * RS_ECONNECT / RS_EQUERY (a value PostgreSQL cannot hold) with ERR
 * filled and CB never called. */
static int
pg_upsert(struct rs_backend *backend, const struct rs_table_def *t,
          const struct rs_rows *rows, rs_backend_cb cb, void *arg,
          struct rs_err *err)
{
	struct pg_engine *pg = backend->engine;
	struct rs_err local;
	char *sql, *json;
	int rc = pg_check_ready(backend, err);

	if (rc != 0)
		return rc;
	if (t == NULL)
		return backend_fail(backend, err, RS_EINTERNAL,
		                    "upsert without a table (a bug)");
	rc = pg_check_rows(backend, t, rows, t->n_columns, err);
	if (rc != 0)
		return rc;
	if (rows->n_rows == 0)
		return pg_write_nothing(pg, PG_OP_UPSERT, cb, arg, err);
	rc = pg_sql_upsert(t, rows, &sql, &json, &local);
	if (rc != 0)
		return pg_sql_failed(backend, err, rc, &local);
	return pg_send_write(pg, PG_OP_UPSERT, sql, json, cb, arg, err);
}

/* Load ROWS into TABLE (see backend_load): COPY FROM STDIN of the rows
 * in COPY's text format (pg_sql_load), which pg_copy_send hands over when
 * the server asks for them.  One statement, atomic on its own.  Returns
 * as pg_upsert; a key that exists fails it with RS_EQUERY and SQLSTATE
 * 23505, nothing written. */
static int
pg_load(struct rs_backend *backend, const struct rs_table_def *t,
        const struct rs_rows *rows, rs_backend_cb cb, void *arg,
        struct rs_err *err)
{
	struct pg_engine *pg = backend->engine;
	struct rs_err local;
	char *sql;
	int rc = pg_check_ready(backend, err);

	if (rc != 0)
		return rc;
	if (t == NULL)
		return backend_fail(backend, err, RS_EINTERNAL,
		                    "load without a table (a bug)");
	rc = pg_check_rows(backend, t, rows, t->n_columns, err);
	if (rc != 0)
		return rc;
	if (rows->n_rows == 0)
		return pg_write_nothing(pg, PG_OP_UPSERT, cb, arg, err);
	rc = pg_sql_load(t, rows, &sql, &pg->copy_data, &local);
	if (rc != 0)
		return pg_sql_failed(backend, err, rc, &local);
	rc = pg_send_write(pg, PG_OP_UPSERT, sql, NULL, cb, arg, err);
	if (rc != 0)
		pg->copy_data.len = 0;
	return rc;
}

/* Check a delete of KEYS from T before anything is sent: a table, n_pk
 * values a row (pg_check_rows), and key columns with a name and a type.
 * Returns 0 or RS_EINTERNAL / RS_EQUERY with ERR filled. */
static int
pg_check_delete(struct rs_backend *backend, const struct rs_table_def *t,
                const struct rs_rows *keys, struct rs_err *err)
{
	int rc;

	if (t == NULL)
		return backend_fail(backend, err, RS_EINTERNAL,
		                    "delete without a table (a bug)");
	rc = pg_check_rows(backend, t, keys, t->n_pk, err);
	if (rc != 0)
		return rc;
	for (int i = 0; i < t->n_pk; i++) {
		const struct rs_column *column = &t->columns[t->pk[i]];

		if (column->name == NULL || column->type == NULL ||
		    column->type[0] == '\0')
			return backend_fail(
				backend, err, RS_EINTERNAL,
				"table %s: key column %d has no "
				"name or type (a bug in the caller)",
				t->name, t->pk[i]);
	}
	return 0;
}

/* Delete the rows of TABLE whose keys are KEYS (see backend_delete_keys),
 * with one statement, atomic on its own, whatever the number of keys:
 *
 *   DELETE FROM "t" WHERE ("k1", …) IN (SELECT "k"."k1", …
 *     FROM pg_catalog.json_to_recordset($1::pg_catalog.json)
 *       AS "k" ("k1" TYPE1, …))
 *
 * with $1 = [{"k1": "input text", …}, …].  A row IN-list of bound
 * parameters would need one statement per 65535 parameters and fails
 * with "stack depth limit exceeded" around 8000 composite keys; here the
 * server reads each key with its column's input function and type
 * modifier (format_type() of struct rs_column.type), exactly like an
 * INSERT, and joins on the primary key's index.  Returns 0 and calls CB
 * later (RS_EQUERY with the server's SQLSTATE, RS_ECONNECT), or RS_ENOMEM
 * / RS_EINTERNAL / RS_ECONNECT / RS_EQUERY (a key PostgreSQL cannot hold)
 * with ERR filled and CB never called. */
static int
pg_delete_keys(struct rs_backend *backend, const struct rs_table_def *t,
               const struct rs_rows *keys, rs_backend_cb cb, void *arg,
               struct rs_err *err)
{
	struct pg_engine *pg = backend->engine;
	struct rs_err local;
	char *sql, *json;
	int rc = pg_check_ready(backend, err);

	if (rc != 0)
		return rc;
	rc = pg_check_delete(backend, t, keys, err);
	if (rc != 0)
		return rc;
	if (keys->n_rows == 0)
		return pg_write_nothing(pg, PG_OP_DELETE, cb, arg, err);
	rc = pg_sql_delete(t, keys, &sql, &json, &local);
	if (rc != 0)
		return pg_sql_failed(backend, err, rc, &local);
	return pg_send_write(pg, PG_OP_DELETE, sql, json, cb, arg, err);
}

/* ---- the snapshot scan ---- */

/*
 * One cursor in a REPEATABLE READ READ ONLY transaction: a sequential scan
 * (no ORDER BY, no key columns) fetched in batches.  Each step is a simple
 * query, text results.  A step that fails with the connection still up
 * rolls the transaction back (pg->scan_rollback) before its callback
 * reports the first failure; a lost connection is dropped (RS_ECONNECT)
 * and the server rolls back.
 */

/* A scan step succeeded (RESULT, cleared here or by pg_rows_read). */
static void
pg_scan_step(struct pg_engine *pg, PGresult *result)
{
	if (pg->scan_rollback) { /* the ROLLBACK after a failure is done */
		PQclear(result);
		pg->scanning = 0;
		pg->err = pg->scan_failure;
		pg_op_finish(pg, pg->err.code, NULL, NULL);
		return;
	}
	switch (pg->op) {
	case PG_OP_SCAN_BEGIN:
		PQclear(result);
		pg->scanning = 1;
		pg_op_finish(pg, 0, NULL, NULL);
		break;
	case PG_OP_SCAN_NEXT:
		pg_rows_read(pg, result);
		break;
	default: /* PG_OP_SCAN_END */
		PQclear(result);
		pg->scanning = 0;
		pg_op_finish(pg, 0, NULL, NULL);
		break;
	}
}

/* A scan step failed with CODE, pg->err filled: roll the transaction back
 * (or drop the connection, which does it) and fail the step with the
 * first failure. */
static void
pg_scan_failed(struct pg_engine *pg, int code)
{
	struct rs_err err;

	if (pg->scan_rollback) {
		pg->err = pg->scan_failure;
		pg_op_fail(pg, pg->scan_failure.code);
		return;
	}
	if (PQstatus(pg->conn) == CONNECTION_BAD) {
		pg_op_fail(pg, code);
		return;
	}
	if (PQtransactionStatus(pg->conn) == PQTRANS_IDLE) {
		pg->scanning = 0;
		pg_op_finish(pg, code, NULL, NULL);
		return;
	}
	pg->scan_failure = pg->err;
	pg->scan_rollback = 1;
	if (pg_send(pg, pg->op, "ROLLBACK", 0, NULL, NULL, &err) != 0) {
		pg->err = pg->scan_failure;
		pg_op_fail(pg, pg->scan_failure.code);
	}
}

/* Start the scan (see backend_scan_begin).  Returns 0 and calls CB later,
 * or RS_EINTERNAL (not connected, a scan already open, bad columns) /
 * RS_ENOMEM / RS_ECONNECT with ERR filled and CB never called. */
static int
pg_scan_begin(struct rs_backend *backend, const struct rs_table_def *t,
              const int *columns, int n_columns, rs_backend_cb cb, void *arg,
              struct rs_err *err)
{
	struct pg_engine *pg = backend->engine;
	char *sql;
	int rc = pg_check_ready(backend, err);

	if (rc != 0)
		return rc;
	if (pg->scanning)
		return backend_fail(backend, err, RS_EINTERNAL,
		                    "a scan is already open on this connection "
		                    "(a bug in the caller)");
	if (t == NULL || n_columns <= 0 || columns == NULL)
		return backend_fail(backend, err, RS_EINTERNAL,
		                    "bad scan request (a bug in the caller)");
	for (int i = 0; i < n_columns; i++)
		if (columns[i] < 0 || columns[i] >= t->n_columns)
			return backend_fail(backend, err, RS_EINTERNAL,
			                    "bad scan request: no column %d in "
			                    "table %s (a bug in the caller)",
			                    columns[i], t->name);
	sql = pg_sql_scan_begin(t, columns, n_columns);
	if (sql == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	pg->cb.done = cb;
	pg->arg = arg;
	pg->scan_rollback = 0;
	rc = pg_send(pg, PG_OP_SCAN_BEGIN, sql, 0, NULL, NULL, err);
	free(sql);
	return rc;
}

/* The next batch of the scan (see backend_scan_next). */
static int
pg_scan_next(struct rs_backend *backend, int limit, rs_rows_cb cb, void *arg,
             struct rs_err *err)
{
	struct pg_engine *pg = backend->engine;
	char sql[64];
	int rc = pg_check_ready(backend, err);

	if (rc != 0)
		return rc;
	if (!pg->scanning || limit <= 0)
		return backend_fail(backend, err, RS_EINTERNAL,
		                    "no scan open, or a bad batch size (a bug "
		                    "in the caller)");
	pg_sql_scan_fetch(sql, sizeof(sql), limit);
	pg->cb.rows = cb;
	pg->arg = arg;
	pg->scan_rollback = 0;
	return pg_send(pg, PG_OP_SCAN_NEXT, sql, 0, NULL, NULL, err);
}

/* End the scan (see backend_scan_end): CLOSE and COMMIT, or nothing when
 * no scan is open (it failed, or never began). */
static int
pg_scan_end(struct rs_backend *backend, rs_backend_cb cb, void *arg,
            struct rs_err *err)
{
	struct pg_engine *pg = backend->engine;
	int rc;

	if (pg != NULL && !pg->scanning &&
	    (pg->state == PG_READY || pg->state == PG_FAILED))
		return pg_write_nothing(pg, PG_OP_SCAN_END, cb, arg, err);
	rc = pg_check_ready(backend, err);
	if (rc != 0)
		return rc;
	pg->cb.done = cb;
	pg->arg = arg;
	pg->scan_rollback = 0;
	return pg_send(pg, PG_OP_SCAN_END, PG_SQL_SCAN_END, 0, NULL, NULL, err);
}

/* ---- tasks: the operations of several statements ----
 *
 * count, fence, markers, mark, delete_log, fenced, purge_keys and the
 * replication operations are tasks: a list of statements (struct
 * pg_stmt) run one after another, each result handed to the task's hook,
 * which may read it, fill the parameters of a later statement, skip or
 * repeat statements, pause, or end the task.  A statement without
 * parameters is a simple query (several statements in one text run as one
 * implicit transaction); one with parameters goes by PQsendQueryParams.
 *
 * Two backends.  backend.h's replication operations take a primary and a
 * replica, each with its own connection, and are started on one of them,
 * the owner (the primary for replica_check, catch_up and release; the
 * replica for promote and promoted): its callback reports, its op bound
 * applies, its timer keeps it.  A statement marked peer runs on the other
 * backend's connection instead: the task is attached to both engines
 * (pg->task), both are busy from start to end so that nobody else starts
 * anything on either, and a statement runs on one connection at a time
 * (t->active), in the order of the list, so there is never more than one
 * query in flight and each result comes back through the same
 * pg_query_done as any other, on the engine it ran on.  The peer's own
 * timer stays idle; the owner's timer alone bounds and paces the task:
 * armed for the owner's bound when the task starts (PG_TIMER_DEADLINE),
 * re-armed for a pause (PG_TIMER_PAUSE, never past the deadline).  When
 * the bound passes, the connection with a statement in flight, owner's or
 * peer's, is dropped (it is stuck in the middle of a query) and the task
 * fails with RS_ECONNECT; a task caught between statements (a pause)
 * drops nothing.  A lost connection on either side fails the task; the
 * other connection stays as it was.
 *
 * A failed statement on a connection that is still up fails the task
 * after a ROLLBACK of the owner's transaction, if one is open (fence,
 * purge_keys).  A lock timeout (55P03) on a statement that locks a table
 * says which table a long transaction holds, and is retryable.
 */

#define PG_STMT_PARAMS     4     /* parameters of one statement, at most */
#define PG_TASK_POLL_MS    50    /* catch_up: between two looks */
#define PG_RELEASE_WAIT_MS 10000 /* release: for the slot to go idle */

/* One statement of a task. */
struct pg_stmt {
	char *sql;
	char *params[PG_STMT_PARAMS]; /* owned, NULL for SQL NULL */
	int n_params;                 /* 0: a simple query */
	int peer;                     /* runs on the peer's connection */
	const char *table;            /* the table it locks, for a lock
	                                 timeout's message, or NULL */
};

enum pg_task_kind {
	PG_TASK_COUNT,
	PG_TASK_FENCE,
	PG_TASK_FENCED,
	PG_TASK_MARKERS,
	PG_TASK_MARK,
	PG_TASK_DELETE_LOG,
	PG_TASK_CAPTURE,
	PG_TASK_PURGE,
	PG_TASK_REPLICA_CHECK,
	PG_TASK_POSITION,
	PG_TASK_CATCH_UP,
	PG_TASK_PROMOTE,
	PG_TASK_PROMOTED,
	PG_TASK_RELEASE,
	PG_TASK_DOWNSTREAM_LAG,
};

/* What replica_check learns from both servers. */
struct pg_facts {
	int r_recovery, r_receiver, r_sender_port;
	int r_version, p_version;
	char r_sysid[32], p_sysid[32];
	char r_status[32];
	char r_sender_host[256];
	char r_slot[PG_SQL_NAME_MAX + 1];
	char r_app[PG_SQL_NAME_MAX + 1];
	int64_t r_standbys;
	char r_standby_list[256];
	int p_recovery, p_sync;
	char p_lsn[64];
	char p_ssn[512];
	int64_t p_found;
	char p_app[PG_SQL_NAME_MAX + 1];
};

/* The fence's inputs, kept from the call until the inventory is back. */
struct pg_fence_args {
	char **tables;
	int n_tables;
	char *message;
	int on;
	int has_marker;
	struct rs_marker marker;
	const struct rs_fence_rows *rows; /* NULL: every row (borrowed) */
};

struct pg_task;
/* The hook of a task: statement I gave RESULT (the hook clears it).
 * Returns 0 to go on, 1 when it paused the task or ended it, or a
 * negative code with t->failure filled. */
typedef int (*pg_task_hook)(struct pg_task *t, int i, PGresult *result);

struct pg_task {
	enum pg_task_kind kind;
	struct pg_engine *owner, *peer;
	struct pg_engine *active; /* a statement of the task runs there */
	struct pg_stmt *stmts;
	int n_stmts, cap_stmts;
	int next;            /* the statement to send next */
	int running;         /* the statement in flight (index) */
	pg_task_hook hook;   /* NULL: results are dropped */
	char what[512];      /* what the owner does, for messages */
	char peer_what[512]; /* what the peer does */
	int starting;        /* inside the call that starts it */
	int status;          /* for an end deferred to the loop */
	int rolling_back;    /* the owner's ROLLBACK after a failure runs */
	struct rs_err failure;
	uint64_t deadline_at; /* owner's loop time at which the bound passes */
	uint64_t until;       /* catch_up: end of the slice; release: of the
	                         wait for the slot */
	int max_lag_ms;
	/* what it finds */
	int64_t value;
	char text[RS_POSITION_SIZE]; /* position, release's note */
	char slot[PG_SQL_NAME_MAX + 1];
	struct rs_replication repl;
	struct rs_marker *markers;
	int n_markers;
	struct pg_facts facts;
	struct pg_fence_args *fence; /* fence: its inputs */
};

static void
pg_fence_args_free(struct pg_fence_args *a)
{
	if (a == NULL)
		return;
	for (int i = 0; i < a->n_tables; i++)
		free(a->tables[i]);
	free(a->tables);
	free(a->message);
	free(a);
}

static void
pg_task_free(struct pg_task *t)
{
	if (t == NULL)
		return;
	for (int i = 0; i < t->n_stmts; i++) {
		free(t->stmts[i].sql);
		for (int k = 0; k < PG_STMT_PARAMS; k++)
			free(t->stmts[i].params[k]);
	}
	free(t->stmts);
	free(t->markers);
	pg_fence_args_free(t->fence);
	free(t);
}

/* A new task of KIND on OWNER (and PEER, may be NULL), WHAT saying what it
 * does.  NULL when out of memory. */
static struct pg_task *
pg_task_new(enum pg_task_kind kind, struct pg_engine *owner,
            struct pg_engine *peer, const char *what)
{
	struct pg_task *t = calloc(1, sizeof(*t));

	if (t == NULL)
		return NULL;
	t->kind = kind;
	t->owner = owner;
	t->peer = peer;
	t->running = -1;
	snprintf(t->what, sizeof(t->what), "%s", what);
	snprintf(t->peer_what, sizeof(t->peer_what), "%s", what);
	t->repl = (struct rs_replication){0, -1, -1, "bytes", ""};
	return t;
}

/* Add a statement: SQL (copied; NULL: out of memory), then N_PARAMS text
 * parameters (copied, NULL for SQL NULL).  Returns its index, or -1 when
 * out of memory (the task then fails to start). */
static int
pg_task_add(struct pg_task *t, const char *sql, int peer, int n_params, ...)
{
	struct pg_stmt *s;
	va_list ap;
	int failed = sql == NULL;

	if (n_params > PG_STMT_PARAMS)
		return -1;
	if (t->n_stmts == t->cap_stmts) {
		int cap = t->cap_stmts > 0 ? 2 * t->cap_stmts : 8;
		struct pg_stmt *more =
			realloc(t->stmts, (size_t)cap * sizeof(*more));

		if (more == NULL)
			return -1;
		memset(more + t->n_stmts, 0,
		       (size_t)(cap - t->n_stmts) * sizeof(*more));
		t->stmts = more;
		t->cap_stmts = cap;
	}
	s = &t->stmts[t->n_stmts];
	s->sql = sql != NULL ? strdup(sql) : NULL;
	s->peer = peer;
	s->n_params = n_params;
	va_start(ap, n_params);
	for (int k = 0; k < n_params; k++) {
		const char *p = va_arg(ap, const char *);

		if (p != NULL && (s->params[k] = strdup(p)) == NULL)
			failed = 1;
	}
	va_end(ap);
	t->n_stmts++;
	return failed || s->sql == NULL ? -1 : t->n_stmts - 1;
}

/* Set parameter K of statement I to TEXT (copied).  Returns 0, or
 * RS_ENOMEM with t->failure filled. */
static int
pg_task_param(struct pg_task *t, int i, int k, const char *text)
{
	char *copy = text != NULL ? strdup(text) : NULL;

	if (text != NULL && copy == NULL)
		return rs_err_set(&t->failure, RS_ENOMEM, "out of memory");
	free(t->stmts[i].params[k]);
	t->stmts[i].params[k] = copy;
	return 0;
}

static const char *
pg_task_what(const struct pg_engine *pg)
{
	const struct pg_task *t = pg->task;

	if (t == NULL)
		return "statement failed";
	return pg == t->peer ? t->peer_what : t->what;
}

/* Hand the task's outcome to the owner's callback (from pg_op_finish,
 * which has detached the task); then the task is freed. */
static void
pg_task_report(struct rs_backend *backend, struct pg_task *t, int status,
               const struct rs_err *err, void *arg)
{
	struct pg_engine *pg = backend->engine;

	switch (t->kind) {
	case PG_TASK_COUNT:
	case PG_TASK_FENCED:
	case PG_TASK_PROMOTED:
	case PG_TASK_DOWNSTREAM_LAG:
		pg->cb.count(backend, status, err, status == 0 ? t->value : 0,
		             arg);
		break;
	case PG_TASK_MARKERS:
		pg->cb.markers(backend, status, err,
		               status == 0 ? t->markers : NULL,
		               status == 0 ? t->n_markers : 0, arg);
		break;
	case PG_TASK_POSITION:
	case PG_TASK_RELEASE:
		pg->cb.position(backend, status, err,
		                status == 0 ? t->text : "", arg);
		break;
	case PG_TASK_CATCH_UP:
		pg->cb.replication(backend, status, err, &t->repl, arg);
		break;
	case PG_TASK_FENCE:
	case PG_TASK_MARK:
	case PG_TASK_DELETE_LOG:
	case PG_TASK_CAPTURE:
	case PG_TASK_PURGE:
	case PG_TASK_REPLICA_CHECK:
	case PG_TASK_PROMOTE:
		pg->cb.done(backend, status, err, arg);
		break;
	}
	pg_task_free(t);
}

/* Let go of the peer: it is idle again (or failed). */
static void
pg_task_release_peer(struct pg_task *t)
{
	struct pg_engine *peer = t->peer;

	if (peer == NULL || peer->task != t)
		return;
	peer->task = NULL;
	peer->op = PG_OP_NONE;
	if (peer->state != PG_FAILED && peer->state != PG_CLOSING)
		peer->state = peer->conn != NULL ? PG_READY : PG_FAILED;
	peer->backend->busy = 0;
}

/* End the task with STATUS (t->failure holding the failure): now, or from
 * the loop when still inside the call that starts it.  Returns 1 (for a
 * hook: the task ended). */
static int
pg_task_end(struct pg_task *t, int status)
{
	struct pg_engine *owner = t->owner;

	if (t->starting) {
		t->status = status;
		uv_timer_stop(&owner->timer);
		owner->timer_role = PG_TIMER_DEFER;
		if (uv_timer_start(&owner->timer, pg_on_timer, 0, 0) != 0)
			owner->timer_role = PG_TIMER_IDLE; /* cannot happen */
		return 1;
	}
	t->active = NULL;
	pg_task_release_peer(t);
	if (status != 0) {
		owner->err = t->failure;
		if (owner->err.code == 0)
			owner->err.code = status;
	}
	pg_op_finish(owner, status, NULL, NULL);
	return 1;
}

/* Send statement I.  Returns 0, or the failure of pg_send (t->failure
 * filled; a lost connection is dropped). */
static int
pg_task_send(struct pg_task *t, int i)
{
	struct pg_stmt *s = &t->stmts[i];
	struct pg_engine *on = s->peer ? t->peer : t->owner;
	int rc = pg_send(on, PG_OP_TASK, s->sql, s->n_params, NULL,
	                 (const char *const *)s->params, &t->failure);

	if (rc == 0) {
		t->active = on;
		t->running = i;
	}
	return rc;
}

/* Fail the task with CODE (t->failure filled): after a ROLLBACK when the
 * owner's connection has a transaction open. */
static void
pg_task_fail(struct pg_task *t, int code)
{
	struct pg_engine *owner = t->owner;
	struct rs_err ignored;

	if (t->failure.code == 0)
		t->failure.code = code;
	if (!t->rolling_back && !t->starting && owner->conn != NULL &&
	    PQstatus(owner->conn) == CONNECTION_OK &&
	    PQtransactionStatus(owner->conn) != PQTRANS_IDLE) {
		t->rolling_back = 1;
		if (pg_send(owner, PG_OP_TASK, "ROLLBACK", 0, NULL, NULL,
		            &ignored) == 0) {
			t->active = owner;
			return;
		}
	}
	pg_task_end(t, t->failure.code);
}

/* Run the task on from statement t->next: send it, or end the task when
 * none is left.  Returns 0, or a failure to send (t->failure filled). */
static int
pg_task_go(struct pg_task *t)
{
	if (t->next >= t->n_stmts) {
		pg_task_end(t, 0);
		return 0;
	}
	return pg_task_send(t, t->next++);
}

/* A statement of the task succeeded on PG with RESULT. */
static void
pg_task_result(struct pg_task *t, struct pg_engine *pg, PGresult *result)
{
	int rc = 0, i = t->running;

	t->active = NULL;
	t->running = -1;
	pg->state = PG_READY;
	if (t->rolling_back) { /* the ROLLBACK after a failure is done */
		PQclear(result);
		pg_task_end(t, t->failure.code);
		return;
	}
	if (t->hook != NULL)
		rc = t->hook(t, i, result);
	else
		PQclear(result);
	if (rc == 0)
		rc = pg_task_go(t);
	if (rc < 0)
		pg_task_fail(t, rc);
}

/* A statement of the task failed on PG with CODE, pg->err filled, the
 * connection still up. */
static void
pg_task_failed(struct pg_task *t, struct pg_engine *pg, int code)
{
	const struct pg_stmt *s =
		t->running >= 0 ? &t->stmts[t->running] : NULL;

	t->active = NULL;
	t->running = -1;
	pg->state = PG_READY;
	if (t->rolling_back) { /* the ROLLBACK failed: report the failure */
		pg_task_end(t, t->failure.code);
		return;
	}
	t->failure = pg->err;
	if (strcmp(pg->err.sqlstate, PG_LOCK_NOT_AVAILABLE) == 0 && s != NULL &&
	    s->table != NULL) {
		backend_fail(pg->backend, &t->failure, RS_EQUERY,
		             "%s: a long transaction holds a lock on table %s "
		             "(waited the lock timeout, %d ms, for it); try "
		             "again once that transaction ends "
		             "(pg_stat_activity shows it)",
		             pg_task_what(pg), s->table, PG_LOCK_TIMEOUT_MS);
		pg_err_state(&t->failure, PG_LOCK_NOT_AVAILABLE);
		code = RS_EQUERY;
	} else if (t->kind == PG_TASK_COUNT &&
	           strcmp(pg->err.sqlstate, "42P01") == 0) {
		backend_fail(pg->backend, &t->failure, RS_ESCHEMA,
		             "%s: the table does not exist", t->what);
		pg_err_state(&t->failure, "42P01");
		code = RS_ESCHEMA;
	}
	pg_task_fail(t, code);
}

/* PG, working for task T, lost its connection (pg->err filled, the
 * connection dropped). */
static void
pg_task_lost(struct pg_task *t, struct pg_engine *pg)
{
	t->active = NULL;
	t->running = -1;
	if (!t->rolling_back)
		t->failure = pg->err;
	pg_task_end(t, t->failure.code != 0 ? t->failure.code : RS_ECONNECT);
}

/* Wait MS (never past the bound), then run the task on from t->next.
 * Returns 1 (for a hook). */
static int
pg_task_pause(struct pg_task *t, uint64_t ms)
{
	struct pg_engine *owner = t->owner;
	uint64_t now = uv_now(owner->backend->loop);
	uint64_t left = t->deadline_at > now ? t->deadline_at - now : 0;

	uv_timer_stop(&owner->timer);
	owner->timer_role = ms < left ? PG_TIMER_PAUSE : PG_TIMER_DEADLINE;
	uv_timer_start(&owner->timer, pg_on_timer, ms < left ? ms : left, 0);
	return 1;
}

/* The owner's timer fired in ROLE for its task. */
static void
pg_task_timer(struct pg_engine *pg, enum pg_timer_role role)
{
	struct pg_task *t = pg->task;
	struct pg_engine *active = t->active;
	char afterwards[200];
	int rc;

	switch (role) {
	case PG_TIMER_DEFER:
		t->starting = 0;
		pg_task_end(t, t->status);
		return;
	case PG_TIMER_PAUSE:
		uv_update_time(pg->backend->loop);
		if (uv_now(pg->backend->loop) < t->deadline_at) {
			pg->timer_role = PG_TIMER_DEADLINE;
			uv_timer_start(
				&pg->timer, pg_on_timer,
				t->deadline_at - uv_now(pg->backend->loop), 0);
			rc = pg_task_go(t);
			if (rc < 0)
				pg_task_fail(t, rc);
			return;
		}
		break; /* the bound passed */
	default:
		break;
	}
	if (active == NULL)
		snprintf(afterwards, sizeof(afterwards),
		         "it was between two statements, nothing was left "
		         "running");
	else if (active == pg)
		snprintf(afterwards, sizeof(afterwards),
		         "the connection was closed");
	else
		snprintf(afterwards, sizeof(afterwards),
		         "the connection to shard %s was closed",
		         active->backend->shard);
	backend_fail_deadline(pg->backend, &t->failure, t->what,
	                      pg->op_bound_ms, afterwards);
	pg_err_state(&t->failure, "08006");
	if (active != NULL) {
		pg_drop(active);
		active->state = PG_FAILED;
	}
	t->rolling_back = 1; /* no ROLLBACK: the bound has passed */
	pg_task_end(t, RS_ECONNECT);
}

/* Check that PEER (may be NULL) can work for a task of OWNER. */
static int
pg_check_peer(struct rs_backend *owner, struct rs_backend *peer,
              struct rs_err *err)
{
	int rc;

	if (peer == NULL)
		return 0;
	if (peer == owner || peer->ops != owner->ops)
		return backend_fail(owner, err, RS_EINTERNAL,
		                    "a replication operation between shard %s "
		                    "and itself, or another engine (a bug in "
		                    "the caller)",
		                    peer->shard);
	if (peer->busy)
		return backend_fail(peer, err, RS_EBUSY,
		                    "an operation is already running on this "
		                    "connection (a bug in the caller)");
	rc = pg_check_ready(peer, err);
	return rc;
}

/* Start task T (its statements and hook set) for the caller's CB and ARG
 * (already in owner->cb and owner->arg): attach it, arm the bound, send
 * its first statement.  Returns 0 (the callback comes later), or a
 * failure with ERR filled and T freed. */
static int
pg_task_start(struct pg_task *t, struct rs_err *err)
{
	struct pg_engine *owner = t->owner, *peer = t->peer;
	uv_loop_t *loop = owner->backend->loop;
	int rc;

	owner->task = t;
	owner->op = PG_OP_TASK;
	owner->backend->busy = 1;
	if (peer != NULL) {
		peer->task = t;
		peer->op = PG_OP_TASK;
		peer->backend->busy = 1;
	}
	uv_update_time(loop);
	owner->op_bound_ms = owner->backend->op_timeout_ms;
	t->deadline_at = uv_now(loop) + (uint64_t)owner->op_bound_ms;
	owner->timer_role = PG_TIMER_DEADLINE;
	rc = uv_timer_start(&owner->timer, pg_on_timer,
	                    (uint64_t)owner->op_bound_ms, 0);
	if (rc != 0)
		rc = backend_fail(owner->backend, &t->failure, RS_EINTERNAL,
		                  "cannot start a timer: %s", uv_strerror(rc));
	t->starting = 1;
	if (rc == 0)
		rc = pg_task_go(t);
	t->starting = 0;
	if (rc == 0)
		return 0;
	uv_timer_stop(&owner->timer);
	owner->timer_role = PG_TIMER_IDLE;
	pg_task_release_peer(t);
	owner->task = NULL;
	owner->op = PG_OP_NONE;
	owner->backend->busy = 0;
	if (owner->state != PG_FAILED)
		owner->state = owner->conn != NULL ? PG_READY : PG_FAILED;
	if (err != NULL)
		*err = t->failure;
	pg_task_free(t);
	return rc;
}

/* Make a task of KIND on BACKEND (and PEER) into *OUT, after the usual
 * checks.  Returns 0, or the code with ERR filled. */
static int
pg_task_make(struct rs_backend *backend, struct rs_backend *peer,
             enum pg_task_kind kind, const char *what, struct pg_task **out,
             struct rs_err *err)
{
	int rc = pg_check_ready(backend, err);

	*out = NULL;
	if (rc == 0)
		rc = pg_check_peer(backend, peer, err);
	if (rc != 0)
		return rc;
	*out = pg_task_new(kind, backend->engine,
	                   peer != NULL ? peer->engine : NULL, what);
	return *out != NULL ? 0 : rs_err_set(err, RS_ENOMEM, "out of memory");
}

/* Start T after its statements were added (ADDED: 0, or -1 when one could
 * not be: out of memory). */
static int
pg_task_launch(struct pg_task *t, int added, struct rs_err *err)
{
	if (added < 0) {
		pg_task_free(t);
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	}
	return pg_task_start(t, err);
}

/* Whether column C of row R of RESULT is true; NULL is false. */
static int
pg_bool(const PGresult *result, int r, int c)
{
	return r < PQntuples(result) && !PQgetisnull(result, r, c) &&
	       PQgetvalue(result, r, c)[0] == 't';
}

/* Column C of row R as a number; DEFAULT_VALUE when NULL or missing. */
static int64_t
pg_number(const PGresult *result, int r, int c, int64_t default_value)
{
	if (r >= PQntuples(result) || PQgetisnull(result, r, c))
		return default_value;
	return strtoll(PQgetvalue(result, r, c), NULL, 10);
}

/* Column C of row R into BUF; "" when NULL or missing.  Returns whether
 * it was not NULL. */
static int
pg_text(const PGresult *result, int r, int c, char *buf, size_t size)
{
	int there = r < PQntuples(result) && !PQgetisnull(result, r, c);

	snprintf(buf, size, "%s", there ? PQgetvalue(result, r, c) : "");
	return there;
}

/* ---- count, fenced, position, promoted: one query, one value ---- */

static int
pg_value_hook(struct pg_task *t, int i, PGresult *result)
{
	(void)i;
	switch (t->kind) {
	case PG_TASK_COUNT:
		t->value = pg_number(result, 0, 0, 0);
		break;
	case PG_TASK_FENCED:
		t->value = pg_number(result, 0, 0, 0) == 2;
		break;
	case PG_TASK_PROMOTED:
		t->value = !pg_bool(result, 0, 0);
		break;
	case PG_TASK_DOWNSTREAM_LAG:
		t->value = pg_number(result, 0, 0, -1);
		break;
	default: /* PG_TASK_POSITION */
		pg_text(result, 0, 0, t->text, sizeof(t->text));
		break;
	}
	PQclear(result);
	return 0;
}

/* A task of one statement SQL, without parameters, on BACKEND, whose one
 * value (pg_value_hook) goes to COUNT_CB or POSITION_CB (the other NULL),
 * as KIND says. */
static int
pg_value_op(struct rs_backend *backend, enum pg_task_kind kind,
            const char *what, const char *sql, rs_count_cb count_cb,
            rs_position_cb position_cb, void *arg, struct rs_err *err)
{
	struct pg_task *t;
	int rc = pg_task_make(backend, NULL, kind, what, &t, err);

	if (rc != 0)
		return rc;
	t->hook = pg_value_hook;
	if (count_cb != NULL)
		t->owner->cb.count = count_cb;
	else
		t->owner->cb.position = position_cb;
	t->owner->arg = arg;
	return pg_task_launch(t, pg_task_add(t, sql, 0, 0), err);
}

/* The exact number of rows of TABLE: SELECT count(*) (see backend_count).
 * A missing table is RS_ESCHEMA. */
static int
pg_count(struct rs_backend *backend, const char *table, rs_count_cb cb,
         void *arg, struct rs_err *err)
{
	char what[400];
	struct pg_task *t;
	char *sql;
	int added, rc;

	snprintf(what, sizeof(what), "counting the rows of %s", table);
	rc = pg_task_make(backend, NULL, PG_TASK_COUNT, what, &t, err);
	if (rc != 0)
		return rc;
	sql = pg_sql_count(table);
	added = pg_task_add(t, sql, 0, 0);
	free(sql);
	t->hook = pg_value_hook;
	t->owner->cb.count = cb;
	t->owner->arg = arg;
	return pg_task_launch(t, added, err);
}

/* Whether TABLE carries both fence triggers (see backend_fenced): 0 for
 * a table that does not exist. */
static int
pg_fenced(struct rs_backend *backend, const char *table, rs_count_cb cb,
          void *arg, struct rs_err *err)
{
	struct pg_task *t;
	int rc = pg_task_make(backend, NULL, PG_TASK_FENCED,
	                      "reading the fence", &t, err);

	if (rc != 0)
		return rc;
	t->hook = pg_value_hook;
	t->owner->cb.count = cb;
	t->owner->arg = arg;
	return pg_task_launch(t, pg_task_add(t, pg_sql_fenced, 0, 1, table),
	                      err);
}

/* ---- the fence ---- */

/* PQescapeLiteral on the owner's connection, for pg_sql_fence_table. */
static int
pg_literal(void *ctx, struct rs_strbuf *buf, const char *text, char *why,
           size_t why_size)
{
	struct pg_engine *pg = ctx;
	char *lit = PQescapeLiteral(pg->conn, text, strlen(text));

	if (lit == NULL) {
		pg_one_line(why, why_size, PQerrorMessage(pg->conn));
		return -1;
	}
	strbuf_str(buf, lit);
	PQfreemem(lit);
	return buf->failed ? -1 : 0;
}

static int pg_fence_build(struct pg_task *t, PGresult *inventory);

static int
pg_fence_hook(struct pg_task *t, int i, PGresult *result)
{
	if (i == 0)
		return pg_fence_build(t, result);
	PQclear(result);
	return 0;
}

/* Build the fence's transaction from the inventory (cleared here): BEGIN,
 * the function (on), each table's triggers, the function's drop when no
 * table uses it any more (off), the marker, COMMIT.  A standby is left
 * alone when the fence comes off: its triggers are its primary's and go
 * when the primary's do; it cannot take one (it is read-only). */
static int
pg_fence_build(struct pg_task *t, PGresult *inventory)
{
	struct pg_fence_args *a = t->fence;
	const struct pg_sql_literal literal = {pg_literal, t->owner};
	int recovery = pg_bool(inventory, 0, 0), rc = 0, added = 0;

	if (recovery && a->on) {
		PQclear(inventory);
		return backend_fail(
			t->owner->backend, &t->failure, RS_EUSAGE,
			"is a standby (in recovery): the fence goes "
			"up on its primary and reaches it by "
			"replication");
	}
	if (recovery) {
		PQclear(inventory);
		return pg_task_end(t, 0);
	}
	for (int r = 0; a->on && r < PQntuples(inventory); r++)
		if (!PQgetisnull(inventory, r, 1) &&
		    !pg_bool(inventory, r, 2)) {
			int k = (int)pg_number(inventory, r, 1, 1) - 1;

			PQclear(inventory);
			return backend_fail(t->owner->backend, &t->failure,
			                    RS_ESCHEMA,
			                    "%s: table %s does not exist",
			                    t->what, a->tables[k]);
		}
	/* The statements go where the inventory's was: it is done. */
	t->next = t->n_stmts;
	added |= pg_task_add(t, "BEGIN", 0, 0);
	if (a->on)
		added |= pg_task_add(t, pg_sql_fence_function, 0, 0);
	if (a->on && a->rows != NULL) {
		struct rs_strbuf functions = {0};

		rc = pg_sql_fence_rows_functions(&functions, a->rows->hash,
		                                 a->rows->moving);
		if (rc == 0 && functions.failed)
			rc = rs_err_set(&t->failure, RS_ENOMEM,
			                "out of memory");
		else if (rc != 0)
			rs_err_set(&t->failure, rc,
			           "cannot fence only the rows that move with "
			           "hash %s (a bug in the caller)",
			           hash_name(a->rows->hash));
		if (rc == 0)
			added |= pg_task_add(t, functions.text, 0, 0);
		strbuf_clear(&functions);
	}
	for (int r = 0; rc == 0 && r < PQntuples(inventory); r++) {
		int k = (int)pg_number(inventory, r, 1, 1) - 1;
		char *sql = NULL;
		int at;

		if (PQgetisnull(inventory, r, 1) || !pg_bool(inventory, r, 2))
			continue; /* no table: no fence to lift */
		rc = pg_sql_fence_table(
			a->tables[k], a->on, a->message,
			a->on && a->rows != NULL ? a->rows->keys[k] : NULL,
			&literal, &sql, &t->failure);
		if (rc != 0)
			break;
		at = pg_task_add(t, sql, 0, 0);
		free(sql);
		if (at >= 0)
			t->stmts[at].table = a->tables[k];
		added |= at;
	}
	PQclear(inventory);
	if (rc != 0) {
		backend_fail(t->owner->backend, &t->failure, rc, "%s",
		             t->failure.message);
		return rc;
	}
	if (!a->on)
		added |= pg_task_add(t, pg_sql_fence_function_drop, 0, 0);
	if (a->has_marker) {
		char epoch[32];

		snprintf(epoch, sizeof(epoch), "%lld",
		         (long long)a->marker.epoch);
		added |= pg_task_add(t, pg_sql_marker_table, 0, 0);
		added |= pg_task_add(t, pg_sql_marker_upsert, 0, 4,
		                     a->marker.plan, a->marker.run_id,
		                     a->marker.state, epoch);
	}
	added |= pg_task_add(t, "COMMIT", 0, 0);
	if (added < 0)
		return rs_err_set(&t->failure, RS_ENOMEM,
		                  "out of memory (or too many tables for one "
		                  "fence)");
	return 0;
}

/* The fence (see backend_fence): the inventory (is the server a standby,
 * which tables exist), then one transaction: BEGIN; CREATE OR REPLACE
 * FUNCTION reshard_fence(); per table DROP TRIGGER IF EXISTS + CREATE
 * TRIGGER + ENABLE ALWAYS of reshard_fence and reshard_fence_truncate
 * (off: the DROPs, then the function's when unused); the marker's upsert;
 * COMMIT.  MESSAGE reaches the SQL only as PQescapeLiteral made it. */
static int
pg_fence(struct rs_backend *backend, const char *const *tables, int n_tables,
         const char *message, int on, const struct rs_marker *marker,
         const struct rs_fence_rows *rows, rs_backend_cb cb, void *arg,
         struct rs_err *err)
{
	struct pg_task *t;
	struct pg_fence_args *a;
	struct rs_strbuf json = {0};
	int added, rc;

	if (n_tables < 0 || (n_tables > 0 && tables == NULL))
		return backend_fail(backend, err, RS_EINTERNAL,
		                    "bad fence request (a bug in the caller)");
	rc = pg_task_make(backend, NULL, PG_TASK_FENCE,
	                  on ? "installing the fence" : "removing the fence",
	                  &t, err);
	if (rc != 0)
		return rc;
	a = t->fence = calloc(1, sizeof(*a));
	if (a == NULL ||
	    (a->tables = calloc((size_t)n_tables + 1, sizeof(char *))) ==
	            NULL ||
	    (a->message = strdup(message != NULL ? message : "")) == NULL) {
		pg_task_free(t);
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	}
	a->on = on;
	a->rows = rows;
	if (marker != NULL) {
		a->has_marker = 1;
		a->marker = *marker;
	}
	strbuf_str(&json, "[");
	for (int i = 0; i < n_tables; i++) {
		if ((a->tables[i] = strdup(tables[i])) == NULL)
			json.failed = 1;
		a->n_tables = i + 1;
		if (i > 0)
			strbuf_str(&json, ",");
		pg_sql_json(&json, tables[i], strlen(tables[i]));
	}
	strbuf_str(&json, "]");
	added = json.failed ? -1
	                    : pg_task_add(t, pg_sql_fence_inventory, 0, 1,
	                                  json.text);
	strbuf_clear(&json);
	t->hook = pg_fence_hook;
	t->owner->cb.done = cb;
	t->owner->arg = arg;
	return pg_task_launch(t, added, err);
}

/* ---- the ownership guard ---- */

/* The guard's statements (see backend_guard_sql): one text, run as one
 * implicit transaction by backend_exec (pg_sql_guard). */
static int
pg_guard_sql(struct rs_backend *backend, const char *const *tables,
             int n_tables, const struct rs_guard *guard,
             struct rs_sql_list *list, struct rs_err *err)
{
	struct pg_engine *pg = backend->engine;
	const struct pg_sql_literal literal = {pg_literal, pg};
	struct rs_strbuf b = {0};
	char *sql = NULL;
	int rc = pg_check_ready(backend, err);

	if (rc != 0)
		return rc;
	rc = pg_sql_guard(tables, n_tables, guard, &literal, &sql, err);
	if (rc != 0) {
		char why[sizeof(err->message)];

		snprintf(why, sizeof(why), "%s", err->message);
		return backend_fail(backend, err, rc, "%s", why);
	}
	strbuf_str(&b, sql);
	free(sql);
	return backend_sql_list_add(list, &b) != 0
	               ? backend_fail(backend, err, RS_ENOMEM, "out of memory")
	               : 0;
}

/* ---- markers ---- */

static int
pg_markers_hook(struct pg_task *t, int i, PGresult *result)
{
	int n = PQntuples(result);

	if (i == 0) { /* does reshard_marker exist? */
		if (!pg_bool(result, 0, 0))
			t->next = t->n_stmts;
		PQclear(result);
		return 0;
	}
	if (n > 0 &&
	    (t->markers = calloc((size_t)n, sizeof(*t->markers))) == NULL) {
		PQclear(result);
		return rs_err_set(&t->failure, RS_ENOMEM, "out of memory");
	}
	for (int r = 0; r < n; r++) {
		struct rs_marker *m = &t->markers[r];

		pg_text(result, r, 0, m->plan, sizeof(m->plan));
		pg_text(result, r, 1, m->run_id, sizeof(m->run_id));
		pg_text(result, r, 2, m->state, sizeof(m->state));
		m->epoch = pg_number(result, r, 3, 0);
		pg_text(result, r, 4, m->updated_at, sizeof(m->updated_at));
	}
	t->n_markers = n;
	PQclear(result);
	return 0;
}

/* Every row of reshard_marker, none when it does not exist (see
 * backend_markers). */
static int
pg_markers(struct rs_backend *backend, rs_markers_cb cb, void *arg,
           struct rs_err *err)
{
	struct pg_task *t;
	int added, rc = pg_task_make(backend, NULL, PG_TASK_MARKERS,
	                             "reading the shard marker", &t, err);

	if (rc != 0)
		return rc;
	added = pg_task_add(t, pg_sql_marker_exists, 0, 0);
	added |= pg_task_add(t, pg_sql_markers, 0, 0);
	t->hook = pg_markers_hook;
	t->owner->cb.markers = cb;
	t->owner->arg = arg;
	return pg_task_launch(t, added, err);
}

/* CREATE TABLE IF NOT EXISTS reshard_marker, then the upsert of MARKER,
 * its values bound, updated_at the server's UTC time (see
 * backend_mark). */
static int
pg_mark(struct rs_backend *backend, const struct rs_marker *marker,
        rs_backend_cb cb, void *arg, struct rs_err *err)
{
	struct pg_task *t;
	char epoch[32];
	int added, rc;

	if (marker == NULL)
		return backend_fail(backend, err, RS_EINTERNAL,
		                    "no marker to write (a bug in the caller)");
	rc = pg_task_make(backend, NULL, PG_TASK_MARK,
	                  "writing the shard marker", &t, err);
	if (rc != 0)
		return rc;
	snprintf(epoch, sizeof(epoch), "%lld", (long long)marker->epoch);
	added = pg_task_add(t, pg_sql_marker_table, 0, 0);
	added |= pg_task_add(t, pg_sql_marker_upsert, 0, 4, marker->plan,
	                     marker->run_id, marker->state, epoch);
	t->owner->cb.done = cb;
	t->owner->arg = arg;
	return pg_task_launch(t, added, err);
}

/* ---- the delete log and change capture ---- */

/* Run SQL, one simple-query text built for TABLE (pg_sql.h: one implicit
 * transaction, all or nothing), as a task of kind KIND doing WHAT; SQL is
 * freed here.  BUILT is what building SQL returned: its failure, LOCAL,
 * is reported as such.  Returns as any task. */
static int
pg_ddl_task(struct rs_backend *backend, const struct rs_table_def *table,
            enum pg_task_kind kind, const char *what, int built, char *sql,
            const struct rs_err *local, rs_backend_cb cb, void *arg,
            struct rs_err *err)
{
	struct pg_task *t;
	int rc, at;

	if (built != 0)
		return pg_sql_failed(backend, err, built, local);
	rc = pg_task_make(backend, NULL, kind, what, &t, err);
	if (rc != 0) {
		free(sql);
		return rc;
	}
	at = pg_task_add(t, sql, 0, 0);
	free(sql);
	/* The table's name outlives the task: the caller keeps it. */
	if (at >= 0)
		t->stmts[at].table = table->name;
	t->owner->cb.done = cb;
	t->owner->arg = arg;
	return pg_task_launch(t, at, err);
}

/* The delete log of TABLE on or off (see backend_delete_log and
 * pg_sql.h). */
static int
pg_delete_log(struct rs_backend *backend, const struct rs_table_def *table,
              int on, rs_backend_cb cb, void *arg, struct rs_err *err)
{
	struct rs_err local;
	char *sql = NULL;
	int rc;

	if (table == NULL || table->n_pk <= 0)
		return backend_fail(backend, err, RS_EINTERNAL,
		                    "delete log of a table without a primary "
		                    "key (a bug in the caller)");
	rc = pg_sql_delete_log(table, on, &sql, &local);
	return pg_ddl_task(backend, table, PG_TASK_DELETE_LOG,
	                   on == RS_DELETE_LOG_EMPTY ? "emptying the delete log"
	                   : on ? "installing the delete log"
	                        : "removing the delete log",
	                   rc, sql, &local, cb, arg, err);
}

/* Change capture of TABLE on or off (see backend_capture and pg_sql.h). */
static int
pg_capture(struct rs_backend *backend, const struct rs_table_def *table,
           int key_column, int on, rs_backend_cb cb, void *arg,
           struct rs_err *err)
{
	struct rs_err local;
	char *sql = NULL;
	int rc;

	if (table == NULL || table->n_pk <= 0)
		return backend_fail(backend, err, RS_EINTERNAL,
		                    "change capture of a table without a "
		                    "primary key (a bug in the caller)");
	rc = pg_sql_capture(table, key_column, on, &sql, &local);
	return pg_ddl_task(backend, table, PG_TASK_CAPTURE,
	                   on ? "installing change capture"
	                      : "removing change capture",
	                   rc, sql, &local, cb, arg, err);
}

/* Read the rows of REQUEST->table whose keys are REQUEST->keys (see
 * backend_read_keys): one SELECT joining the keys, sent as one JSON
 * parameter (pg_sql_read_keys), so one snapshot.  No keys still asks the
 * server, which returns no rows.  Returns 0 and calls CB later, or
 * RS_ENOMEM / RS_EINTERNAL / RS_ECONNECT / RS_EQUERY (a key PostgreSQL
 * cannot hold) with ERR filled and CB never called. */
static int
pg_read_keys(struct rs_backend *backend, const struct rs_keys_request *request,
             rs_rows_cb cb, void *arg, struct rs_err *err)
{
	struct pg_engine *pg = backend->engine;
	const struct rs_table_def *t = request->table;
	struct rs_err local;
	char *sql, *json;
	int rc = pg_check_ready(backend, err);

	if (rc != 0)
		return rc;
	/* backend.c checked the request; the key columns need a type. */
	rc = pg_check_delete(backend, t, request->keys, err);
	if (rc != 0)
		return rc;
	rc = pg_sql_read_keys(request, &sql, &json, &local);
	if (rc != 0)
		return pg_sql_failed(backend, err, rc, &local);
	pg->cb.rows = cb;
	pg->arg = arg;
	rc = pg_send(pg, PG_OP_READ, sql, 1, NULL, (const char *const[]){json},
	             err);
	free(sql);
	free(json);
	return rc;
}

/* What makes TABLE again as AS (see backend_table_sql): the rows of
 * pg_sql_table_sql, one catalog query; pg_sql_table_sql_build makes the
 * statements of them. */
static int
pg_table_sql(struct rs_backend *backend, const char *table, const char *as,
             rs_rows_cb cb, void *arg, struct rs_err *err)
{
	struct pg_engine *pg = backend->engine;
	int rc = pg_check_ready(backend, err);
	char *sql;

	if (rc != 0)
		return rc;
	sql = pg_sql_table_sql();
	if (sql == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	pg->cb.rows = cb;
	pg->arg = arg;
	rc = pg_send(pg, PG_OP_READ, sql, 2, NULL,
	             (const char *const[]){table, as}, err);
	free(sql);
	return rc;
}

/* delete_keys with the delete log's triggers skipped (see
 * backend_purge_keys): BEGIN; SET LOCAL reshard.purging = 'on' (which
 * the triggers' WHEN reads), the DELETE of pg_delete_keys, COMMIT.  Only
 * this transaction sees the setting: other sessions' deletes, and this
 * one's after COMMIT, are logged. */
static int
pg_purge_keys(struct rs_backend *backend, const struct rs_table_def *t,
              const struct rs_rows *keys, rs_backend_cb cb, void *arg,
              struct rs_err *err)
{
	struct pg_engine *pg = backend->engine;
	struct pg_task *task;
	struct rs_err local;
	char *sql, *json;
	int rc = pg_check_ready(backend, err), at;

	if (rc != 0)
		return rc;
	rc = pg_check_delete(backend, t, keys, err);
	if (rc != 0)
		return rc;
	if (PQtransactionStatus(pg->conn) != PQTRANS_IDLE)
		return backend_fail(backend, err, RS_EINTERNAL,
		                    "purge inside an open transaction (a bug "
		                    "in the caller)");
	if (keys->n_rows == 0)
		return pg_write_nothing(pg, PG_OP_DELETE, cb, arg, err);
	rc = pg_sql_delete(t, keys, &sql, &json, &local);
	if (rc != 0)
		return pg_sql_failed(backend, err, rc, &local);
	rc = pg_task_make(backend, NULL, PG_TASK_PURGE, "could not delete rows",
	                  &task, err);
	if (rc != 0) {
		free(sql);
		free(json);
		return rc;
	}
	at = pg_task_add(task, PG_SQL_PURGE_BEGIN, 0, 0);
	rc = pg_task_add(task, sql, 0, 1, json);
	if (rc >= 0)
		task->stmts[rc].table = t->name;
	at |= rc;
	at |= pg_task_add(task, "COMMIT", 0, 0);
	free(sql);
	free(json);
	task->owner->cb.done = cb;
	task->owner->arg = arg;
	return pg_task_launch(task, at, err);
}

/* ---- replication ---- */

/* Where PG's connection went, as libpq says ("" for the default). */
static const char *
pg_conn_host(const struct pg_engine *pg)
{
	const char *host = pg->conn != NULL ? PQhost(pg->conn) : NULL;

	return host != NULL ? host : "";
}

static int
pg_conn_port(const struct pg_engine *pg)
{
	const char *port = pg->conn != NULL ? PQport(pg->conn) : NULL;
	long n = port != NULL ? strtol(port, NULL, 10) : 0;

	return n > 0 && n <= 65535 ? (int)n : 5432;
}

/* replica_check, after the replica's facts (statement 0): keep them and
 * ask the primary about the walsender of that replica. */
static int
pg_check_replica_facts(struct pg_task *t, PGresult *result)
{
	struct pg_facts *f = &t->facts;
	char conninfo[2048];

	f->r_recovery = pg_bool(result, 0, 0);
	pg_text(result, 0, 1, f->r_sysid, sizeof(f->r_sysid));
	f->r_version = (int)pg_number(result, 0, 2, 0);
	pg_text(result, 0, 3, f->r_status, sizeof(f->r_status));
	pg_text(result, 0, 4, f->r_sender_host, sizeof(f->r_sender_host));
	f->r_sender_port = (int)pg_number(result, 0, 5, 0);
	pg_text(result, 0, 6, f->r_slot, sizeof(f->r_slot));
	pg_text(result, 0, 7, conninfo, sizeof(conninfo));
	f->r_standbys = pg_number(result, 0, 8, 0);
	pg_text(result, 0, 9, f->r_standby_list, sizeof(f->r_standby_list));
	f->r_receiver = pg_bool(result, 0, 10);
	PQclear(result);
	/* The name it gives its primary: application_name, else the
	 * fallback the WAL receiver sets (cluster_name or "walreceiver"). */
	if (!pg_sql_conninfo_value(conninfo, "application_name", f->r_app,
	                           sizeof(f->r_app)) &&
	    !pg_sql_conninfo_value(conninfo, "fallback_application_name",
	                           f->r_app, sizeof(f->r_app)))
		snprintf(f->r_app, sizeof(f->r_app), "walreceiver");
	if (pg_task_param(t, 1, 0, f->r_slot) != 0 ||
	    pg_task_param(t, 1, 1, f->r_app) != 0)
		return RS_ENOMEM;
	return 0;
}

/* replica_check, after the primary's facts (statement 1): everything but
 * the lag.  Each refusal names both shards and the fix. */
static int
pg_check_primary_facts(struct pg_task *t, PGresult *result)
{
	struct pg_facts *f = &t->facts;
	struct rs_backend *p = t->owner->backend, *r = t->peer->backend;
	const char *app;

	f->p_recovery = pg_bool(result, 0, 0);
	pg_text(result, 0, 1, f->p_sysid, sizeof(f->p_sysid));
	f->p_version = (int)pg_number(result, 0, 2, 0);
	pg_text(result, 0, 3, f->p_lsn, sizeof(f->p_lsn));
	pg_text(result, 0, 4, f->p_ssn, sizeof(f->p_ssn));
	f->p_found = pg_number(result, 0, 5, 0);
	f->p_sync = pg_bool(result, 0, 6);
	pg_text(result, 0, 7, f->p_app, sizeof(f->p_app));
	PQclear(result);
	if (f->p_recovery)
		return backend_fail(
			p, &t->failure, RS_EUSAGE,
			"is a standby itself (in recovery), not a primary "
			"whose replica %s (%s) could be promoted; point "
			"shard %s's url at the primary",
			r->shard, r->url.masked, p->shard);
	if (!f->r_recovery)
		return backend_fail(
			r, &t->failure, RS_EUSAGE,
			"is not a replica of shard %s (%s): it is not in "
			"recovery (a primary of its own, or promoted "
			"already); point its url at %s's streaming replica",
			p->shard, p->url.masked, p->shard);
	if (strcmp(f->r_sysid, f->p_sysid) != 0)
		return backend_fail(
			r, &t->failure, RS_EUSAGE,
			"is not a copy of shard %s (%s): their database "
			"system identifiers differ (%s here, %s there); "
			"make it a replica of %s with pg_basebackup",
			p->shard, p->url.masked, f->r_sysid, f->p_sysid,
			p->shard);
	if (f->r_version / 10000 != f->p_version / 10000)
		return backend_fail(
			r, &t->failure, RS_EUSAGE,
			"runs PostgreSQL %d and shard %s (%s) runs %d: a "
			"replica promoted in its primary's place must be of "
			"its major version; make it again with pg_basebackup "
			"from %s",
			f->r_version / 10000, p->shard, p->url.masked,
			f->p_version / 10000, p->shard);
	if (!f->r_receiver)
		return backend_fail(
			r, &t->failure, RS_EUSAGE,
			"is in recovery but receives no WAL from shard %s "
			"(%s): no WAL receiver runs (archive recovery only, "
			"or it cannot connect); set its primary_conninfo to "
			"%s:%d and check pg_stat_wal_receiver",
			p->shard, p->url.masked, pg_conn_host(t->owner),
			pg_conn_port(t->owner));
	if (f->r_status[0] == '\0')
		return backend_fail(
			r, &t->failure, RS_EUSAGE,
			"cannot tell whether it streams from shard %s (%s): "
			"pg_stat_wal_receiver hides its columns from user %s; "
			"grant it pg_read_all_stats",
			p->shard, p->url.masked,
			r->url.user != NULL ? r->url.user : "(default)");
	if (strcmp(f->r_status, "streaming") != 0)
		return backend_fail(
			r, &t->failure, RS_EUSAGE,
			"does not stream from shard %s (%s): its WAL receiver "
			"is %s; wait until pg_stat_wal_receiver says "
			"streaming, or fix its primary_conninfo",
			p->shard, p->url.masked, f->r_status);
	if (!pg_sql_same_host(f->r_sender_host, pg_conn_host(t->peer),
	                      pg_conn_host(t->owner)) ||
	    f->r_sender_port != pg_conn_port(t->owner))
		return backend_fail(
			r, &t->failure, RS_EUSAGE,
			"streams from %s:%d, but shard %s's url (%s) says "
			"%s:%d: it may replicate another server; point %s's "
			"url at the server it streams from, or its "
			"primary_conninfo at %s",
			f->r_sender_host, f->r_sender_port, p->shard,
			p->url.masked, pg_conn_host(t->owner),
			pg_conn_port(t->owner), p->shard, p->shard);
	app = f->p_app[0] != '\0' ? f->p_app : f->r_app;
	if (f->p_sync || pg_sql_sync_listed(f->p_ssn, app))
		return backend_fail(
			r, &t->failure, RS_EUSAGE,
			"is a synchronous standby of shard %s (%s) (%s as "
			"'%s', synchronous_standby_names '%s'): once it is "
			"promoted every commit on %s would wait for it; "
			"remove it from synchronous_standby_names on %s "
			"(ALTER SYSTEM SET synchronous_standby_names, then "
			"SELECT pg_reload_conf())",
			p->shard, p->url.masked,
			f->p_sync ? "its walsender is sync" : "listed", app,
			f->p_ssn, p->shard, p->shard);
	if (f->r_standbys > 0)
		return backend_fail(
			r, &t->failure, RS_EUSAGE,
			"has %lld standbys of its own streaming from it (%s): "
			"promoting it would take them along to a new "
			"timeline; point them at shard %s (%s) or stop them "
			"first",
			(long long)f->r_standbys, f->r_standby_list, p->shard,
			p->url.masked);
	return pg_task_param(t, 2, 0, f->p_lsn);
}

/* replica_check, after the replica's lag (statement 2): replay paused,
 * or further behind than MAX_LAG_MS.  The replica must replay the
 * primary's flush position, read first, within MAX_LAG_MS: statement 2
 * is asked again every PG_TASK_POLL_MS until it has, or the bound (or
 * the operation's, less a second) has passed.  The primary's replay_lag
 * cannot be trusted for this: a standby stuck behind (an apply delay, a
 * long conflict) reports it only every wal_receiver_status_interval, and
 * until then replay_lag keeps the last, small, figure.  The age of the
 * last transaction replayed is said in the refusal, not judged: after an
 * idle hour it is an hour even for a replica a millisecond behind. */
static int
pg_check_lag(struct pg_task *t, PGresult *result)
{
	struct pg_facts *f = &t->facts;
	struct rs_backend *p = t->owner->backend, *r = t->peer->backend;
	uv_loop_t *loop = p->loop;
	int64_t bytes = pg_number(result, 0, 0, -1);
	int64_t age_ms = pg_number(result, 0, 1, -1);
	int paused = pg_bool(result, 0, 2);
	uint64_t now;

	PQclear(result);
	if (paused)
		return backend_fail(
			r, &t->failure, RS_EUSAGE,
			"replays no WAL from shard %s (%s): replay is paused; "
			"resume it with SELECT pg_wal_replay_resume()",
			p->shard, p->url.masked);
	if (bytes <= 0)
		return 0;
	uv_update_time(loop);
	now = uv_now(loop);
	if (t->until == 0) {
		t->until = now + (uint64_t)t->max_lag_ms;
		if (t->deadline_at < t->until + 1000)
			t->until = t->deadline_at > now + 1000
			                   ? t->deadline_at - 1000
			                   : now;
	}
	if (now < t->until) {
		t->next = 2;
		return pg_task_pause(t, t->until - now < PG_TASK_POLL_MS
		                                ? t->until - now
		                                : PG_TASK_POLL_MS);
	}
	return backend_fail(
		r, &t->failure, RS_EUSAGE,
		"did not replay shard %s's position %s within %d.%03d s: it "
		"is %lld bytes behind (its last replayed transaction is "
		"%lld.%03lld s old), more than "
		"options.max_replica_lag_seconds (%d s) allows; wait until "
		"it catches up (pg_stat_replication on %s) or raise the "
		"option",
		p->shard, f->p_lsn, t->max_lag_ms / 1000, t->max_lag_ms % 1000,
		(long long)bytes, (long long)(age_ms / 1000),
		(long long)(age_ms % 1000), t->max_lag_ms / 1000, p->shard);
}

static int
pg_replica_check_hook(struct pg_task *t, int i, PGresult *result)
{
	switch (i) {
	case 0:
		return pg_check_replica_facts(t, result);
	case 1:
		return pg_check_primary_facts(t, result);
	default:
		return pg_check_lag(t, result);
	}
}

/* Whether REPLICA streams from PRIMARY and can be promoted in its place
 * (see backend_replica_check): the replica's facts, the primary's, the
 * replica's lag behind the primary's flush position. */
static int
pg_replica_check(struct rs_backend *primary, struct rs_backend *replica,
                 int max_lag_ms, rs_backend_cb cb, void *arg,
                 struct rs_err *err)
{
	char what[300];
	struct pg_task *t;
	int added, rc;

	snprintf(what, sizeof(what), "checking replica %s", replica->shard);
	rc = pg_task_make(primary, replica, PG_TASK_REPLICA_CHECK, what, &t,
	                  err);
	if (rc != 0)
		return rc;
	snprintf(t->peer_what, sizeof(t->peer_what),
	         "checking it as the replica of %s", primary->shard);
	t->max_lag_ms = max_lag_ms > 0 ? max_lag_ms : 0;
	added = pg_task_add(t, pg_sql_replica_facts, 1, 0);
	added |= pg_task_add(t, pg_sql_primary_facts, 0, 2, "", "");
	added |= pg_task_add(t, pg_sql_replica_lag, 1, 1, "0/0");
	t->hook = pg_replica_check_hook;
	t->owner->cb.done = cb;
	t->owner->arg = arg;
	return pg_task_launch(t, added, err);
}

/* PRIMARY's WAL flush position (see backend_position). */
static int
pg_position(struct rs_backend *primary, rs_position_cb cb, void *arg,
            struct rs_err *err)
{
	return pg_value_op(primary, PG_TASK_POSITION,
	                   "reading the WAL position", pg_sql_position, NULL,
	                   cb, arg, err);
}

static int
pg_catch_up_hook(struct pg_task *t, int i, PGresult *result)
{
	uv_loop_t *loop = t->owner->backend->loop;
	int never = pg_bool(result, 0, 0), reached = pg_bool(result, 0, 1);
	int64_t behind = pg_number(result, 0, 2, -1);
	int paused = pg_bool(result, 0, 3), receiving = pg_bool(result, 0, 4);

	(void)i;
	PQclear(result);
	if (never)
		return backend_fail(
			t->peer->backend, &t->failure, RS_EUSAGE,
			"has no WAL replay position: it never was a standby; "
			"the replica of shard %s must be its streaming "
			"replica",
			t->owner->backend->shard);
	t->repl.reached = reached;
	t->repl.behind = reached ? 0 : behind;
	/* Neither stops the wait: an operator may resume the replay, and a
	 * standby reconnects by itself, or restores from the archive. */
	t->repl.note[0] = '\0';
	if (!reached && paused)
		snprintf(t->repl.note, sizeof(t->repl.note),
		         "its WAL replay is paused (SELECT "
		         "pg_wal_replay_resume() on it)");
	else if (!reached && !receiving)
		snprintf(t->repl.note, sizeof(t->repl.note),
		         "it is not streaming from %s (no WAL receiver: see "
		         "its primary_conninfo and its log)",
		         t->owner->backend->shard);
	uv_update_time(loop);
	if (reached || uv_now(loop) >= t->until) {
		t->next = t->n_stmts; /* the slice ends */
		return 0;
	}
	t->next = 0;
	return pg_task_pause(t, t->until - uv_now(loop) < PG_TASK_POLL_MS
	                                ? t->until - uv_now(loop)
	                                : PG_TASK_POLL_MS);
}

/* One slice of REPLICA's catch-up to POSITION (see backend_catch_up):
 * whether it replayed that far, looked at every PG_TASK_POLL_MS for up to
 * SLICE_MS, all within PRIMARY's op bound. */
static int
pg_catch_up(struct rs_backend *primary, struct rs_backend *replica,
            const char *position, int slice_ms, rs_replication_cb cb, void *arg,
            struct rs_err *err)
{
	char what[300];
	struct pg_task *t;
	int rc;

	if (position == NULL || position[0] == '\0' ||
	    strlen(position) >= RS_POSITION_SIZE)
		return backend_fail(primary, err, RS_EINTERNAL,
		                    "catch-up without a position (a bug in "
		                    "the caller)");
	snprintf(what, sizeof(what), "catching up replica %s", replica->shard);
	rc = pg_task_make(primary, replica, PG_TASK_CATCH_UP, what, &t, err);
	if (rc != 0)
		return rc;
	snprintf(t->peer_what, sizeof(t->peer_what), "catching up with %s",
	         primary->shard);
	uv_update_time(primary->loop);
	t->until =
		uv_now(primary->loop) + (uint64_t)(slice_ms > 0 ? slice_ms : 0);
	t->hook = pg_catch_up_hook;
	t->owner->cb.replication = cb;
	t->owner->arg = arg;
	return pg_task_launch(
		t, pg_task_add(t, pg_sql_catch_up, 1, 1, position), err);
}

static int
pg_promote_hook(struct pg_task *t, int i, PGresult *result)
{
	int yes = pg_bool(result, 0, 0);

	PQclear(result);
	if (i == 0 && !yes) /* not in recovery: a primary already */
		t->next = t->n_stmts;
	else if (i == 1 && !yes)
		return backend_fail(t->owner->backend, &t->failure, RS_EQUERY,
		                    "%s: pg_promote did not see the promotion "
		                    "finish in time; see the server's log, "
		                    "then try again",
		                    t->what);
	else if (i == 2 && yes)
		return backend_fail(t->owner->backend, &t->failure, RS_EQUERY,
		                    "%s: still in recovery after pg_promote; "
		                    "see the server's log",
		                    t->what);
	return 0;
}

/* Promote REPLICA (see backend_promote): nothing when it is not in
 * recovery any more; else pg_promote and a wait of up to N seconds, a
 * little under the op bound, for it to finish (pg_sql_promote), then
 * pg_is_in_recovery() must be false. */
static int
pg_promote(struct rs_backend *replica, rs_backend_cb cb, void *arg,
           struct rs_err *err)
{
	struct pg_task *t;
	char sql[PG_SQL_PROMOTE_SIZE];
	int rc = pg_task_make(replica, NULL, PG_TASK_PROMOTE, "promoting", &t,
	                      err),
	    added;

	if (rc != 0)
		return rc;
	pg_sql_promote(sql, sizeof(sql), replica->op_timeout_ms / 1000 - 2);
	added = pg_task_add(t, pg_sql_in_recovery, 0, 0);
	added |= pg_task_add(t, sql, 0, 0);
	added |= pg_task_add(t, pg_sql_in_recovery, 0, 0);
	t->hook = pg_promote_hook;
	t->owner->cb.done = cb;
	t->owner->arg = arg;
	return pg_task_launch(t, added, err);
}

/* Whether REPLICA is out of recovery (see backend_promoted). */
static int
pg_promoted(struct rs_backend *replica, rs_count_cb cb, void *arg,
            struct rs_err *err)
{
	return pg_value_op(replica, PG_TASK_PROMOTED,
	                   "reading whether it is promoted", pg_sql_in_recovery,
	                   cb, NULL, arg, err);
}

/* Whether BACKEND can be a split's source (see backend_source_check). */
static int
pg_source_check(struct rs_backend *backend, rs_count_cb cb, void *arg,
                struct rs_err *err)
{
	return pg_value_op(backend, PG_TASK_COUNT,
	                   "reading whether it is a primary",
	                   pg_sql_source_check, cb, NULL, arg, err);
}

/* The replay lag of the standbys streaming from BACKEND (see
 * backend_downstream_lag). */
static int
pg_downstream_lag(struct rs_backend *backend, rs_count_cb cb, void *arg,
                  struct rs_err *err)
{
	return pg_value_op(backend, PG_TASK_DOWNSTREAM_LAG,
	                   "reading its standbys' replay lag",
	                   pg_sql_downstream_lag, cb, NULL, arg, err);
}

static int
pg_release_hook(struct pg_task *t, int i, PGresult *result)
{
	struct rs_backend *p = t->owner->backend, *r = t->peer->backend;
	uv_loop_t *loop = p->loop;
	int rows = PQntuples(result);

	uv_update_time(loop);
	if (i == 0) { /* the replica: promoted? which slot? */
		int recovery = pg_bool(result, 0, 0);

		pg_text(result, 0, 1, t->slot, sizeof(t->slot));
		PQclear(result);
		if (recovery)
			return backend_fail(
				r, &t->failure, RS_EUSAGE,
				"is not promoted yet (still in recovery): the "
				"replication slot it streams from on shard %s "
				"(%s) still serves it; promote it first",
				p->shard, p->url.masked);
		if (t->slot[0] == '\0') {
			t->next = t->n_stmts; /* no slot: nothing held */
			return 0;
		}
		return pg_task_param(t, 1, 0, t->slot) != 0 ||
		                       pg_task_param(t, 2, 0, t->slot) != 0
		               ? RS_ENOMEM
		               : 0;
	}
	if (i == 1) { /* the primary: is the slot there, and idle? */
		int active = pg_bool(result, 0, 0);
		char pid[32];

		pg_text(result, 0, 1, pid, sizeof(pid));
		PQclear(result);
		if (rows == 0) {
			t->next = t->n_stmts; /* gone already */
			return 0;
		}
		if (!active)
			return 0;
		if (uv_now(loop) < t->until) {
			t->next = 1;
			return pg_task_pause(t, (uint64_t)2 * PG_TASK_POLL_MS);
		}
		return backend_fail(
			p, &t->failure, RS_EQUERY,
			"replication slot %s is still in use (by process %s) "
			"%d s after shard %s's promotion; find out who "
			"streams from it (pg_stat_replication) before "
			"dropping it with pg_drop_replication_slot('%s')",
			t->slot, pid, PG_RELEASE_WAIT_MS / 1000, r->shard,
			t->slot);
	}
	PQclear(result);
	if (rows == 0) { /* taken, or dropped, meanwhile: look again */
		t->next = 1;
		return pg_task_pause(t, PG_TASK_POLL_MS);
	}
	snprintf(t->text, sizeof(t->text),
	         "dropped replication slot %s (it held WAL for %s)", t->slot,
	         r->shard);
	return 0;
}

/* After REPLICA's promotion, drop on PRIMARY the physical slot it
 * streamed from (see backend_release): its primary_slot_name, read from
 * the replica (the setting stays after promotion); dropped when it
 * exists and is idle (waiting up to PG_RELEASE_WAIT_MS for the old
 * walsender to go), so a repeat finds nothing and notes "". */
static int
pg_release(struct rs_backend *primary, struct rs_backend *replica,
           rs_position_cb cb, void *arg, struct rs_err *err)
{
	char what[300];
	struct pg_task *t;
	int rc, added;

	snprintf(what, sizeof(what), "releasing promoted replica %s",
	         replica->shard);
	rc = pg_task_make(primary, replica, PG_TASK_RELEASE, what, &t, err);
	if (rc != 0)
		return rc;
	snprintf(t->peer_what, sizeof(t->peer_what),
	         "reading the slot it streamed from on %s", primary->shard);
	uv_update_time(primary->loop);
	t->until = uv_now(primary->loop) + PG_RELEASE_WAIT_MS;
	added = pg_task_add(t, pg_sql_slot_name, 1, 0);
	added |= pg_task_add(t, pg_sql_slot_state, 0, 1, "");
	added |= pg_task_add(t, pg_sql_slot_drop, 0, 1, "");
	t->hook = pg_release_hook;
	t->owner->cb.position = cb;
	t->owner->arg = arg;
	return pg_task_launch(t, added, err);
}

/* ---- exec and close ---- */

/* Run SQL as one simple query (see backend_exec).  Returns 0 and calls CB
 * later (a failing statement: RS_EQUERY with the server's message and
 * SQLSTATE; a lost connection: RS_ECONNECT), or RS_EINTERNAL /
 * RS_ECONNECT / RS_EQUERY with ERR filled and CB never called. */
static int
pg_exec(struct rs_backend *backend, const char *sql, rs_backend_cb cb,
        void *arg, struct rs_err *err)
{
	struct pg_engine *pg = backend->engine;
	int rc = pg_check_ready(backend, err);

	if (rc != 0)
		return rc;
	pg->cb.done = cb;
	pg->arg = arg;
	return pg_send(pg, PG_OP_EXEC, sql, 0, NULL, NULL, err);
}

/* Close (see struct rs_backend_ops): poll handle first, while its socket
 * is still open, then the connection, then the timer; DONE is called from
 * the last close callback, or at once for a backend that never tried to
 * connect.  Cannot fail. */
static void
pg_close(struct rs_backend *backend, void (*done)(struct rs_backend *backend))
{
	struct pg_engine *pg = backend->engine;

	if (pg == NULL) {
		done(backend);
		return;
	}
	pg->closed = done;
	pg->state = PG_CLOSING;
	pg_lookup_abandon(pg);
	pg_drop(pg);
	pg->pending++;
	uv_close((uv_handle_t *)&pg->timer, pg_on_timer_closed);
}

const struct rs_backend_ops backend_pg_ops = {
	.engine = "postgresql",
	.connect = pg_connect,
	.describe = pg_describe,
	.read_batch = pg_read_batch,
	.exec = pg_exec,
	.upsert = pg_upsert,
	.load = pg_load,
	.delete_keys = pg_delete_keys,
	.purge_keys = pg_purge_keys,
	.count = pg_count,
	.fence = pg_fence,
	.fence_rows = 1,
	.point_hashes = 1u << RS_HASH_SHA256_64 | 1u << RS_HASH_IDENTITY |
                        1u << RS_HASH_FNV1A_64 | 1u << RS_HASH_JAVA,
	.guard_sql = pg_guard_sql,
	.markers = pg_markers,
	.mark = pg_mark,
	.delete_log = pg_delete_log,
	.capture = pg_capture,
	.read_keys = pg_read_keys,
	.table_sql = pg_table_sql,
	.table_sql_build = pg_sql_table_sql_build,
	.fenced = pg_fenced,
	.replica_check = pg_replica_check,
	.position = pg_position,
	.catch_up = pg_catch_up,
	.promote = pg_promote,
	.promoted = pg_promoted,
	.downstream_lag = pg_downstream_lag,
	.source_check = pg_source_check,
	.release = pg_release,
	.scan_begin = pg_scan_begin,
	.scan_next = pg_scan_next,
	.scan_end = pg_scan_end,
	.close = pg_close,
};
