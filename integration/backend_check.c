/*
 * backend_check: the engines behind backend/backend.h checked against real
 * servers, through the public interface only (backend_new, connect, exec,
 * describe, read_batch, upsert, delete_keys, close and canonical_*), on one
 * libuv loop.  Usage: backend_check URL_PG URL_MY SQLITE_DIR.
 *
 * Ten groups of checks, each printed as "ok - …" or "not ok - …", then
 * "N passed, M failed" (exit 1 when anything failed):
 *
 *   1. The same logical rows, inserted on PostgreSQL, MariaDB and SQLite
 *      with each engine's own SQL, read back in small batches and put in
 *      canonical form, give equal row hashes and chunk sums; changing one
 *      value on one engine makes them differ.
 *   2. Rows read from PostgreSQL and upserted (canonical values) into fresh
 *      tables on every engine read back equal; upserting again changes
 *      nothing, a changed row is overwritten, reads bounded by after and
 *      upto return exactly their range, and delete_keys removes exactly
 *      the keys given.
 *   3. Names that need quoting (a table `a"b`, columns ``x`y`` and
 *      `t; drop table z`) are written, read and deleted exactly, and the
 *      sentinel table z survives on every engine.
 *   4. Errors name the shard and its masked URL and never the password: a
 *      closed port, a listener that never answers (connect timeout), a
 *      wrong password, a missing table, a table without a primary key.
 *   5. A connection killed by its server in the middle of a query fails
 *      that query within two seconds, without crashing, and the server
 *      takes new connections.
 *   6. The operation bound (1 s here) ends what would otherwise wait:
 *      a read from a PostgreSQL server process stopped with SIGSTOP, a
 *      MariaDB SLEEP(5) and an upsert behind FLUSH TABLES WITH READ LOCK,
 *      a SQLite insert behind another connection's exclusive lock and a
 *      count to a billion; each with RS_ECONNECT and a message naming the
 *      shard, the bound and how to raise it.  A longer bound set for one
 *      operation lets it finish; the server processes behind connections
 *      the bound closed end; the SQLite connection stays usable.
 *   7. Keys are engine-neutral: a table xkeys keyed on (bytes, instant,
 *      boolean), with the same 50 rows written by each engine's own SQL,
 *      reads back in batches of 7 the same canonical keys, byte for byte,
 *      on all three, none skipped or repeated; ranges bounded by
 *      PostgreSQL's keys return exactly PostgreSQL's keys between them on
 *      every engine; 10 of PostgreSQL's keys given to delete_keys on
 *      MariaDB and SQLite remove exactly those rows, and again nothing;
 *      a SQLite key stored otherwise than its canonical form binds back
 *      (text in the BLOB column, a timestamp with a 'T') fails the read
 *      with RS_EKEY naming the table and column.
 *   PG. PostgreSQL's fence, markers, delete log and replication (check_pg_ops).
 *   8. MariaDB: fence, markers, delete log, replication (check_my_ops).
 *   9. Change capture and reads by key on every engine that has them
 *      (check_capture): the rows of the keys asked, none of the keys
 *      missing; every kind of write logged in position order; capture
 *      on, off, and again; MariaDB's name limits and lock wait.
 *
 * Operations are started and then awaited by running the loop until their
 * callback has run, each bounded by a timer, so that a hanging engine
 * fails a check instead of hanging the program.  The loop must close
 * cleanly at the end: every handle the engines opened was released.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <glob.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <limits.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "backend/backend_engine.h"
#include "backend/canonical.h"
#include "backend/url.h"

#define CHECK_OP_TIMEOUT_MS  30000 /* any one operation, before bailing out */
#define CHECK_CONNECT_MS     5000  /* connect timeout of the working shards */
#define CHECK_BATCH_ROWS     3     /* small batches: several per table */
#define CHECK_MAX_ROWS       1000  /* more means a read that never ends */
#define CHECK_SHORT_TIMEOUT  500   /* connect_timeout_ms against a mute port */
#define CHECK_KILL_DEADLINE  2000  /* a killed query must fail this fast */
#define CHECK_KILL_DELAY_MS  300   /* let the long query start first */
#define CHECK_WRONG_PASSWORD "Wr0ng-pw-7f3a9c"
#define CHECK_SQLITE_FILE    "backend_check.db"
#define CHECK_DEADLINE_MS    1000  /* the short operation bound checked */
#define CHECK_GONE_MS        10000 /* a server process must end this fast */

/* ---- results ---- */

static uv_loop_t check_loop;
static uv_timer_t wait_timer; /* bounds every wait_until */
static int n_passed, n_failed;

static int check(int ok, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int check_status(int status, const struct rs_err *err, const char *fmt,
                        ...) __attribute__((format(printf, 3, 4)));
static void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void bail_out(const char *what) __attribute__((noreturn));
static char *xprintf(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/* Print "ok - WHAT" or "not ok - WHAT" and count it.  Returns OK. */
static int
check(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s - ", ok ? "ok" : "not ok");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	if (ok)
		n_passed++;
	else
		n_failed++;
	return ok;
}

/* A check that an operation worked: STATUS 0.  A failure adds ERR's
 * message to the line.  Returns whether it worked. */
static int
check_status(int status, const struct rs_err *err, const char *fmt, ...)
{
	char what[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (status == 0)
		return check(1, "%s", what);
	return check(0, "%s: %s", what,
	             err->message[0] != '\0' ? err->message : "(no message)");
}

/* A diagnostic line under a check. */
static void
diag(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* Give up: an operation never called back, so nothing can be closed. */
static void
bail_out(const char *what)
{
	check(0, "%s: no callback within %d ms (bailing out)", what,
	      CHECK_OP_TIMEOUT_MS);
	printf("%d passed, %d failed\n", n_passed, n_failed);
	exit(1);
}

static void *
xcalloc(size_t n, size_t size)
{
	void *p = calloc(n == 0 ? 1 : n, size == 0 ? 1 : size);

	if (p == NULL) {
		fputs("backend_check: out of memory\n", stderr);
		exit(1);
	}
	return p;
}

static char *
xprintf(const char *fmt, ...)
{
	va_list ap;
	int n;
	char *text;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	text = xcalloc((size_t)n + 1, 1);
	va_start(ap, fmt);
	vsnprintf(text, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return text;
}

/* TEMPLATE with its one "%s" replaced by VALUE: for SQL templates, which
 * are not printf formats (no other '%' in them is read). */
static char *
sql_fill(const char *template, const char *value)
{
	const char *at = strstr(template, "%s");
	size_t head = at != NULL ? (size_t)(at - template) : strlen(template);
	const char *tail = at != NULL ? at + 2 : "";
	size_t n_value = at != NULL ? strlen(value) : 0, n_tail = strlen(tail);
	char *text = xcalloc(head + n_value + n_tail + 1, 1);

	memcpy(text, template, head);
	memcpy(text + head, value, n_value);
	memcpy(text + head + n_value, tail, n_tail + 1);
	return text;
}

/* ---- owned copies of rows ---- */

struct cell {
	char *text; /* NULL: SQL NULL; else LEN bytes and a NUL */
	size_t len;
};

/* Rows of N_COLS cells each, row-major, owned. */
struct grid {
	int n_cols;
	int n_rows;
	int cap_rows;
	struct cell *cells;
};

static void
grid_init(struct grid *grid, int n_cols)
{
	memset(grid, 0, sizeof(*grid));
	grid->n_cols = n_cols;
}

static struct cell *
grid_row(const struct grid *grid, int row)
{
	return &grid->cells[(size_t)row * (size_t)grid->n_cols];
}

/* Append a row of NULLs and return its cells. */
static struct cell *
grid_add_row(struct grid *grid)
{
	if (grid->n_rows == grid->cap_rows) {
		int cap = grid->cap_rows > 0 ? grid->cap_rows * 2 : 8;
		struct cell *more = realloc(grid->cells,
		                            (size_t)cap * (size_t)grid->n_cols *
		                                    sizeof(*more));

		if (more == NULL) {
			fputs("backend_check: out of memory\n", stderr);
			exit(1);
		}
		grid->cells = more;
		grid->cap_rows = cap;
	}
	memset(grid_row(grid, grid->n_rows), 0,
	       (size_t)grid->n_cols * sizeof(struct cell));
	return grid_row(grid, grid->n_rows++);
}

/* Copy TEXT (LEN bytes; NULL for SQL NULL) into CELL. */
static void
cell_set(struct cell *cell, const char *text, size_t len)
{
	free(cell->text);
	cell->text = NULL;
	cell->len = 0;
	if (text == NULL)
		return;
	cell->text = xcalloc(len + 1, 1);
	memcpy(cell->text, text, len);
	cell->len = len;
}

static void
grid_free(struct grid *grid)
{
	for (size_t i = 0; i < (size_t)grid->n_rows * (size_t)grid->n_cols; i++)
		free(grid->cells[i].text);
	free(grid->cells);
	grid_init(grid, 0);
}

/* The values of rows FIRST .. FIRST+N-1 of GRID as rs_values pointing into
 * it; free the array, not the texts. */
static struct rs_value *
grid_values(const struct grid *grid, int first, int n)
{
	struct rs_value *values =
		xcalloc((size_t)n * (size_t)grid->n_cols, sizeof(*values));

	for (int r = 0; r < n; r++) {
		const struct cell *row = grid_row(grid, first + r);

		for (int c = 0; c < grid->n_cols; c++) {
			values[(size_t)r * grid->n_cols + c].text = row[c].text;
			values[(size_t)r * grid->n_cols + c].len = row[c].len;
		}
	}
	return values;
}

/* Append to OUT a printable form of CELL: NULL, or '…' with bytes outside
 * printable ASCII as \xNN. */
static void
cell_print(char *out, size_t size, const struct cell *cell)
{
	size_t n = strlen(out);

	if (cell->text == NULL) {
		snprintf(out + n, size - n, "NULL");
		return;
	}
	if (n + 1 < size)
		out[n++] = '\'';
	for (size_t i = 0; i < cell->len && n + 5 < size; i++) {
		unsigned char c = (unsigned char)cell->text[i];

		if (c >= 0x20 && c < 0x7f && c != '\\')
			out[n++] = (char)c;
		else
			n += (size_t)snprintf(out + n, size - n, "\\x%02x", c);
	}
	if (n + 1 < size)
		out[n++] = '\'';
	out[n] = '\0';
}

/* A row of GRID as "(v1, v2, …)" for diagnostics. */
static void
row_print(char *out, size_t size, const struct grid *grid, int row)
{
	snprintf(out, size, "(");
	for (int c = 0; c < grid->n_cols; c++) {
		if (c > 0)
			strncat(out, ", ", size - strlen(out) - 1);
		cell_print(out, size, &grid_row(grid, row)[c]);
	}
	strncat(out, ")", size - strlen(out) - 1);
}

/* ---- a table's rows as read, in canonical form, and their sums ---- */

struct snapshot {
	const struct rs_table_def *table; /* for the key positions */
	struct grid raw;   /* as read: the key columns, then every column */
	struct grid canon; /* canonical: every column, in the table's order */
	uint64_t *hashes;  /* one per row of canon */
	struct rs_chunk_sum sum;
};

static void
snapshot_init(struct snapshot *snap, const struct rs_table_def *table)
{
	memset(snap, 0, sizeof(*snap));
	snap->table = table;
	grid_init(&snap->raw, table->n_pk + table->n_columns);
	grid_init(&snap->canon, table->n_columns);
}

static void
snapshot_free(struct snapshot *snap)
{
	grid_free(&snap->raw);
	grid_free(&snap->canon);
	free(snap->hashes);
	snap->hashes = NULL;
}

/* Hash every row of snap->canon and sum them. */
static void
snapshot_hash(struct snapshot *snap)
{
	free(snap->hashes);
	snap->hashes = xcalloc((size_t)snap->canon.n_rows, sizeof(uint64_t));
	snap->sum.rows = 0;
	snap->sum.sum = 0;
	for (int r = 0; r < snap->canon.n_rows; r++) {
		const struct cell *row = grid_row(&snap->canon, r);
		struct rs_row_hasher hasher;

		canonical_row_init(&hasher);
		for (int c = 0; c < snap->canon.n_cols; c++)
			canonical_row_add(&hasher, row[c].text, row[c].len);
		snap->hashes[r] = canonical_row_finish(&hasher);
		canonical_chunk_add(&snap->sum, snap->hashes[r]);
	}
}

/* Fill snap->canon from snap->raw, values written by SRC, and hash the
 * rows.  Returns 0, or -1 after a "not ok" line naming WHAT, the column
 * and the value that is not in its kind's form. */
static int
snapshot_canonicalise(struct snapshot *snap, enum rs_canon_src src,
                      const char *what)
{
	const struct rs_table_def *table = snap->table;
	struct rs_canon_buf buf = RS_CANON_BUF_INIT;
	struct rs_err err;
	int rc = 0;

	for (int r = 0; r < snap->raw.n_rows && rc == 0; r++) {
		const struct cell *raw = grid_row(&snap->raw, r);
		struct cell *canon = grid_add_row(&snap->canon);

		for (int c = 0; c < table->n_columns; c++) {
			const struct cell *value = &raw[table->n_pk + c];

			if (value->text == NULL)
				continue;
			canonical_buf_clear(&buf);
			memset(&err, 0, sizeof(err));
			if (canonical_value(table->columns[c].kind, src,
			                    value->text, value->len, &buf,
			                    &err) != 0) {
				check(0, "%s: column %s in canonical form: %s",
				      what, table->columns[c].name,
				      err.message);
				rc = -1;
				break;
			}
			cell_set(&canon[c], buf.len > 0 ? buf.data : "",
			         buf.len);
		}
		/* A key column comes twice in a read of every column: as the
		 * key (canonical) and as a column (the engine's text; for a
		 * kind whose text is canonical, the one value read once and
		 * handed back at both places).  Both say the same. */
		for (int k = 0; k < table->n_pk && rc == 0; k++) {
			const struct cell *key = &raw[k];
			const struct cell *col = &canon[table->pk[k]];

			if (key->text == NULL || col->text == NULL ||
			    key->len != col->len ||
			    memcmp(key->text, col->text, key->len) != 0) {
				check(0,
				      "%s: row %d: key column %s read as the "
				      "key \"%.*s\" and as a column \"%.*s\"",
				      what, r,
				      table->columns[table->pk[k]].name,
				      key->text != NULL ? (int)key->len : 4,
				      key->text != NULL ? key->text : "NULL",
				      col->text != NULL ? (int)col->len : 4,
				      col->text != NULL ? col->text : "NULL");
				rc = -1;
			}
		}
	}
	canonical_buf_free(&buf);
	if (rc == 0)
		snapshot_hash(snap);
	return rc;
}

/* A snapshot of TABLE holding rows ROWS of SOURCE's canonical grid (all
 * when ROWS is NULL; N of them otherwise), for expected contents. */
static void
snapshot_subset(struct snapshot *out, const struct snapshot *source,
                const int *rows, int n)
{
	snapshot_init(out, source->table);
	if (rows == NULL)
		n = source->canon.n_rows;
	for (int i = 0; i < n; i++) {
		int r = rows != NULL ? rows[i] : i;
		struct cell *to = grid_add_row(&out->canon);
		const struct cell *from = grid_row(&source->canon, r);

		for (int c = 0; c < out->canon.n_cols; c++)
			cell_set(&to[c], from[c].text, from[c].len);
	}
	snapshot_hash(out);
}

/* One row's canonical key, for matching rows across engines. */
struct row_ref {
	char *key; /* the key columns' canonical texts, length-prefixed */
	size_t key_len;
	int row;
};

static int
row_ref_cmp(const void *a, const void *b)
{
	const struct row_ref *x = a, *y = b;
	size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
	int c = memcmp(x->key, y->key, n);

	if (c != 0)
		return c;
	return x->key_len < y->key_len ? -1 : x->key_len > y->key_len;
}

/* SNAP's rows sorted by canonical key (free each key and the array). */
static struct row_ref *
snapshot_refs(const struct snapshot *snap)
{
	struct row_ref *refs =
		xcalloc((size_t)snap->canon.n_rows, sizeof(*refs));

	for (int r = 0; r < snap->canon.n_rows; r++) {
		const struct cell *row = grid_row(&snap->canon, r);
		size_t len = 0;

		for (int k = 0; k < snap->table->n_pk; k++)
			len += 1 + sizeof(size_t) + row[snap->table->pk[k]].len;
		refs[r].key = xcalloc(len, 1);
		refs[r].key_len = len;
		refs[r].row = r;
		len = 0;
		for (int k = 0; k < snap->table->n_pk; k++) {
			const struct cell *cell = &row[snap->table->pk[k]];
			/* Big-endian length, so that memcmp orders by it. */
			for (int b = (int)sizeof(size_t) - 1; b >= 0; b--)
				refs[r].key[len++] =
					(char)((cell->len >> (8 * b)) & 0xff);
			refs[r].key[len++] = cell->text == NULL ? 'N' : 'V';
			if (cell->len > 0)
				memcpy(refs[r].key + len, cell->text,
				       cell->len);
			len += cell->len;
		}
	}
	qsort(refs, (size_t)snap->canon.n_rows, sizeof(*refs), row_ref_cmp);
	return refs;
}

static void
refs_free(struct row_ref *refs, int n)
{
	for (int i = 0; i < n; i++)
		free(refs[i].key);
	free(refs);
}

/* Check that GOT holds exactly WANT's rows: equal chunk sums (count and
 * sum) and, row by row matched on the canonical key, equal row hashes.
 * The first differences are printed.  Returns 1 when both checks pass. */
static int
compare_snapshots(const char *what, const struct snapshot *want,
                  const struct snapshot *got)
{
	struct row_ref *a = snapshot_refs(want), *b = snapshot_refs(got);
	int i = 0, j = 0, shown = 0, rows_ok = 1, sums_ok;
	char line[2048];

	sums_ok = canonical_chunk_equal(&want->sum, &got->sum);
	check(sums_ok, "%s: chunk sums equal (%" PRIu64 " rows)", what,
	      want->sum.rows);
	if (!sums_ok)
		diag("want %" PRIu64 " rows sum %016" PRIx64 ", got %" PRIu64
		     " rows sum %016" PRIx64,
		     want->sum.rows, want->sum.sum, got->sum.rows,
		     got->sum.sum);
	while (i < want->canon.n_rows || j < got->canon.n_rows) {
		int c = i >= want->canon.n_rows  ? 1
		        : j >= got->canon.n_rows ? -1
		                                 : row_ref_cmp(&a[i], &b[j]);

		if (c == 0 && want->hashes[a[i].row] == got->hashes[b[j].row]) {
			i++;
			j++;
			continue;
		}
		rows_ok = 0;
		if (shown++ < 4) {
			if (c <= 0) {
				row_print(line, sizeof(line), &want->canon,
				          a[i].row);
				diag("want %s", line);
			}
			if (c >= 0) {
				row_print(line, sizeof(line), &got->canon,
				          b[j].row);
				diag("got  %s", line);
			}
		}
		i += c <= 0;
		j += c >= 0;
	}
	check(rows_ok, "%s: per-row hashes equal", what);
	refs_free(a, want->canon.n_rows);
	refs_free(b, got->canon.n_rows);
	return sums_ok && rows_ok;
}

/* ---- awaiting operations ---- */

/* One operation's outcome, filled by its callback. */
struct call {
	int done;
	int status;
	struct rs_err err;
	struct rs_table_def *table; /* describe */
	struct grid *rows;          /* read: batches are appended here */
	int batch_rows;             /* read: rows in the last batch */
	int64_t value;              /* count */
	uint64_t ended_ms;          /* uv_now when the callback ran */
};

/* Record the outcome of CALL (ERR may be NULL) and stop the loop. */
static void
call_end(struct call *call, int status, const struct rs_err *err)
{
	call->done = 1;
	call->status = status;
	call->ended_ms = uv_now(&check_loop);
	/* Return from uv_run so that wait_until sees the flag.  (With
	 * UV_RUN_ONCE instead, libuv 1.44 runs due timers first and then
	 * still blocks in poll: a completion delivered from a timer would
	 * wait for the next unrelated event.) */
	uv_stop(&check_loop);
	if (status != 0 && err != NULL)
		call->err = *err;
	else if (status != 0)
		snprintf(call->err.message, sizeof(call->err.message),
		         "(failed with code %d and no error record)", status);
}

static void
on_done(struct rs_backend *backend, int status, const struct rs_err *err,
        void *arg)
{
	(void)backend;
	call_end(arg, status, err);
}

static void
on_described(struct rs_backend *backend, int status, const struct rs_err *err,
             struct rs_table_def *table, void *arg)
{
	struct call *call = arg;

	(void)backend;
	call->table = table;
	call_end(call, status, err);
}

/* Copy a batch: the values are borrowed for the call only. */
static void
on_rows(struct rs_backend *backend, int status, const struct rs_err *err,
        const struct rs_rows *rows, void *arg)
{
	struct call *call = arg;

	(void)backend;
	call->batch_rows = 0;
	if (status == 0 && rows->n_rows > 0 &&
	    rows->n_cols != call->rows->n_cols) {
		call_end(call, RS_EINTERNAL, NULL);
		snprintf(call->err.message, sizeof(call->err.message),
		         "batch has %d columns, %d expected", rows->n_cols,
		         call->rows->n_cols);
		return;
	}
	if (status == 0) {
		for (int r = 0; r < rows->n_rows; r++) {
			struct cell *row = grid_add_row(call->rows);

			for (int c = 0; c < rows->n_cols; c++) {
				const struct rs_value *v =
					&rows->values[(size_t)r * rows->n_cols +
				                      c];
				cell_set(&row[c], v->text, v->len);
			}
		}
		call->batch_rows = rows->n_rows;
	}
	call_end(call, status, err);
}

static void
on_wait_timer(uv_timer_t *timer)
{
	*(int *)timer->data = 1;
	uv_stop(&check_loop);
}

/* Run the loop until *FLAG is set or TIMEOUT_MS pass.  Every callback
 * that may set a flag stops the loop, which returns to look at it.
 * Returns whether the flag was set. */
static int
wait_until(const int *flag, uint64_t timeout_ms)
{
	int expired = 0;

	wait_timer.data = &expired;
	uv_timer_start(&wait_timer, on_wait_timer, timeout_ms, 0);
	while (!*flag && !expired)
		uv_run(&check_loop, UV_RUN_DEFAULT);
	uv_timer_stop(&wait_timer);
	return *flag;
}

/* Finish an operation started with return code RC: when it started, wait
 * for its callback (bailing out after CHECK_OP_TIMEOUT_MS).  Returns its
 * status; call->err holds the failure either way. */
static int
await(struct call *call, int rc, const char *what)
{
	if (rc != 0) {
		call->done = 1;
		call->status = rc;
		return rc;
	}
	if (!wait_until(&call->done, CHECK_OP_TIMEOUT_MS))
		bail_out(what);
	return call->status;
}

/* ---- synchronous wrappers ---- */

/* Make a backend for SHARD at URL, each operation bounded by OP_MS (0:
 * the default bound), and connect it within TIMEOUT_MS.  Returns the
 * connect status with ERR filled; *BACKEND is set whenever backend_new
 * worked (close it even after a failed connect), else NULL. */
static int
open_bounded(const char *shard, const char *url, int timeout_ms, int op_ms,
             struct rs_backend **backend, struct rs_err *err)
{
	struct rs_backend_config config = {
		.shard = shard,
		.url = url,
		.connect_timeout_ms = timeout_ms,
		.op_timeout_ms = op_ms,
	};
	struct call call = {0};
	int rc;

	memset(err, 0, sizeof(*err));
	rc = backend_new(&check_loop, &config, backend, err);
	if (rc != 0)
		return rc;
	rc = await(&call, backend_connect(*backend, on_done, &call, &call.err),
	           shard);
	*err = call.err;
	return rc;
}

/* open_bounded with the default operation bound. */
static int
open_backend(const char *shard, const char *url, int timeout_ms,
             struct rs_backend **backend, struct rs_err *err)
{
	return open_bounded(shard, url, timeout_ms, 0, backend, err);
}

/* Close BACKEND (may be NULL) and wait until it is released. */
static void
close_backend(struct rs_backend *backend)
{
	struct call call = {0};

	if (backend == NULL)
		return;
	backend_close(backend, on_done, &call);
	if (!wait_until(&call.done, CHECK_OP_TIMEOUT_MS))
		bail_out("close");
}

/* Run SQL on BACKEND.  Returns its status, the failure in ERR (may be
 * NULL). */
static int
run_sql(struct rs_backend *backend, const char *sql, struct rs_err *err)
{
	struct call call = {0};
	int rc = await(&call,
	               backend_exec(backend, sql, on_done, &call, &call.err),
	               "exec");

	if (err != NULL)
		*err = call.err;
	return rc;
}

/* Run setup SQL: silent when it works, a "not ok" line when not.
 * Returns 0 or -1. */
static int
setup_sql(struct rs_backend *backend, const char *sql)
{
	struct rs_err err;

	if (run_sql(backend, sql, &err) == 0)
		return 0;
	check(0, "%s: %.60s…: %s", backend->shard, sql, err.message);
	return -1;
}

/* Describe TABLE.  Returns the status; *DEF owned by the caller. */
static int
describe(struct rs_backend *backend, const char *table,
         struct rs_table_def **def, struct rs_err *err)
{
	struct call call = {0};
	int rc = await(&call,
	               backend_describe(backend, table, on_described, &call,
	                                &call.err),
	               "describe");

	*def = call.table;
	if (err != NULL)
		*err = call.err;
	return rc;
}

static void
on_counted(struct rs_backend *backend, int status, const struct rs_err *err,
           int64_t value, void *arg)
{
	struct call *call = arg;

	(void)backend;
	call->value = value;
	call_end(call, status, err);
}

/* Count TABLE's rows into *N.  Returns the status. */
static int
count_rows(struct rs_backend *backend, const char *table, int64_t *n,
           struct rs_err *err)
{
	struct call call = {0};
	int rc = await(
		&call,
		backend_count(backend, table, on_counted, &call, &call.err),
		"count");

	*n = call.value;
	*err = call.err;
	return rc;
}

/* Upsert ROWS of canonical values (every column in TABLE's order).  An
 * engine without upsert yet fails without being called. */
static int
upsert(struct rs_backend *backend, const struct rs_table_def *table,
       const struct rs_rows *rows, struct rs_err *err)
{
	struct call call = {0};

	memset(err, 0, sizeof(*err));
	if (backend->ops->upsert == NULL) {
		snprintf(err->message, sizeof(err->message),
		         "%s: upsert (not implemented)", backend->ops->engine);
		return RS_EINTERNAL;
	}
	await(&call,
	      backend_upsert(backend, table, rows, on_done, &call, &call.err),
	      "upsert");
	*err = call.err;
	return call.status;
}

/* Delete the rows with keys KEYS (canonical, key order) from TABLE. */
static int
delete_keys(struct rs_backend *backend, const struct rs_table_def *table,
            const struct rs_rows *keys, struct rs_err *err)
{
	struct call call = {0};

	memset(err, 0, sizeof(*err));
	if (backend->ops->delete_keys == NULL) {
		snprintf(err->message, sizeof(err->message),
		         "%s: delete_keys (not implemented)",
		         backend->ops->engine);
		return RS_EINTERNAL;
	}
	await(&call,
	      backend_delete_keys(backend, table, keys, on_done, &call,
	                          &call.err),
	      "delete_keys");
	*err = call.err;
	return call.status;
}

/* Read TABLE's rows (the key, then every column) after AFTER (NULL: from
 * the first) up to UPTO (NULL: to the end), in batches of LIMIT rows,
 * each batch continuing after the last key read, until an empty batch.
 * Appends to SNAP->raw and canonicalises.  Returns 0, or -1 after a "not
 * ok" line naming WHAT. */
static int
read_rows(struct rs_backend *backend, const struct rs_value *after,
          const struct rs_value *upto, int limit, struct snapshot *snap,
          const char *what)
{
	const struct rs_table_def *table = snap->table;
	int *columns = xcalloc((size_t)table->n_columns, sizeof(int));
	struct rs_value *last = xcalloc((size_t)table->n_pk, sizeof(*last));
	int rc = 0;

	for (int c = 0; c < table->n_columns; c++)
		columns[c] = c;
	for (;;) {
		struct rs_read_request request = {
			.table = table,
			.columns = columns,
			.n_columns = table->n_columns,
			.after = after,
			.upto = upto,
			.limit = limit,
		};
		struct call call = {.rows = &snap->raw};

		if (await(&call,
		          backend_read_batch(backend, &request, on_rows, &call,
		                             &call.err),
		          what) != 0) {
			check(0, "%s: read_batch: %s", what, call.err.message);
			rc = -1;
			break;
		}
		if (call.batch_rows == 0)
			break;
		if (call.batch_rows > limit ||
		    snap->raw.n_rows > CHECK_MAX_ROWS) {
			check(0,
			      "%s: read_batch returned %d rows for a limit "
			      "of %d (%d in all)",
			      what, call.batch_rows, limit, snap->raw.n_rows);
			rc = -1;
			break;
		}
		/* Continue after the last key read, in the engine's form. */
		for (int k = 0; k < table->n_pk; k++) {
			const struct cell *cell =
				&grid_row(&snap->raw, snap->raw.n_rows - 1)[k];

			last[k].text = cell->text;
			last[k].len = cell->len;
		}
		after = last;
	}
	free(columns);
	free(last);
	if (rc == 0)
		rc = snapshot_canonicalise(snap, backend_canon_src(backend),
		                           what);
	return rc;
}

/* Describe TABLE on BACKEND and read all of it into SNAP (which keeps
 * *DEF).  Returns 0, or -1 after a "not ok" line. */
static int
read_table(struct rs_backend *backend, const char *table,
           struct rs_table_def **def, struct snapshot *snap)
{
	struct rs_err err;
	char *what = xprintf("%s: %s", backend->shard, table);
	int rc = 0;

	if (describe(backend, table, def, &err) != 0) {
		check(0, "%s: describe: %s", what, err.message);
		rc = -1;
	} else {
		snapshot_init(snap, *def);
		rc = read_rows(backend, NULL, NULL, CHECK_BATCH_ROWS, snap,
		               what);
	}
	free(what);
	return rc;
}

/* Upsert all of ROWS (canonical, TABLE's columns) in batches of
 * BATCH_ROWS.  Returns 0 or the first failure (ERR filled). */
static int
upsert_grid(struct rs_backend *backend, const struct rs_table_def *table,
            const struct grid *rows, int batch_rows, struct rs_err *err)
{
	memset(err, 0, sizeof(*err));
	for (int first = 0; first < rows->n_rows; first += batch_rows) {
		int n = rows->n_rows - first < batch_rows ? rows->n_rows - first
		                                          : batch_rows;
		struct rs_value *values = grid_values(rows, first, n);
		struct rs_rows batch = {n, rows->n_cols, values};
		int rc = upsert(backend, table, &batch, err);

		free(values);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* The canonical keys of rows ROWS (N of them) of SNAP, in key order. */
static void
snapshot_keys(const struct snapshot *snap, const int *rows, int n,
              struct grid *keys)
{
	grid_init(keys, snap->table->n_pk);
	for (int i = 0; i < n; i++) {
		struct cell *key = grid_add_row(keys);
		const struct cell *row = grid_row(&snap->canon, rows[i]);

		for (int k = 0; k < snap->table->n_pk; k++)
			cell_set(&key[k], row[snap->table->pk[k]].text,
			         row[snap->table->pk[k]].len);
	}
}

/* ---- the engines and their SQL ---- */

enum { ENG_PG, ENG_MY, ENG_LITE, N_ENGINES };

/*
 * The same 8 logical rows on every engine, each written as that engine's
 * users write it: PostgreSQL timestamptz with offsets, MariaDB TIMESTAMP
 * in the session's UTC, SQLite ISO-8601 text with, without or with 'Z'
 * for an offset; PostgreSQL E'' and standard strings, MariaDB backslash
 * escapes, SQLite char().  Values cover NULL against '' (text and bytes)
 * and against the text 'NULL', unicode with emoji and a combining accent,
 * 30-digit decimals (text in SQLite's DECIMAL TEXT), -0, the ends of
 * MariaDB TIMESTAMP and of int, an empty key, a trailing space, and bytes
 * holding a quote, a backslash and NUL.  `score` is single precision
 * (real, FLOAT, SQLite FLOAT4) and holds 3.1415927, which MariaDB's text
 * protocol alone would print as "3.14159" (mysql.c reads it as a DOUBLE).
 */
static const char pg_types_ddl[] =
	"CREATE TABLE %s (k text NOT NULL, n integer NOT NULL, note text, "
	"uni text, amount numeric(30,10), ratio double precision, "
	"score real, at_local timestamp, at_utc timestamptz, flag boolean, "
	"payload bytea, PRIMARY KEY (k, n))";

static const char pg_types_rows[] =
	"INSERT INTO %s (k, n, note, uni, amount, ratio, score, at_local, "
	"at_utc, flag, payload) VALUES "
	"('alpha', 1, NULL, 'plain ascii', 12345678901234567890.1234567890, "
	" 0.1, 0.1, '2024-02-29 13:45:10.123456', "
	" '2024-02-29 19:15:10.123456+05:30', true, '\\x00ff10'), "
	"('alpha', 2, '', 'héllo wörld — ñ', "
	" -99999999999999999999.9999999999, -1.5e-7, 3.1415927, "
	" '1999-12-31 23:59:59', '1999-12-31 19:00:00-05', false, ''), "
	"('beta', -7, 'it''s \"quoted\" \\ back\\slash', "
	" 'emoji 🦀🎉 and 日本語', 0.0000000001, 1e20, -2.5e-5, "
	" '2038-01-19 03:14:07.5', '2038-01-19 03:14:07.5+00', true, "
	" '\\x275c00'), "
	"('beta', 0, E'line1\\nline2\\ttab', 'Ωmega ∑', 0, 3.141592653589793, "
	" 0, '1970-01-01 00:00:00', '1970-01-01 00:00:01+00', false, NULL), "
	"('gamma', 2147483647, 'NULL', NULL, 1.5, '-0', NULL, NULL, NULL, "
	" NULL, '\\xdeadbeef'), "
	"('gamma', -2147483648, 'trailing space ', 'combining e\u0301', -0.5, "
	" 2.5, 1e10, '2000-02-29 12:00:00.000001', "
	" '2000-02-29 23:59:59.999999-12', true, '\\x00'), "
	"('', 0, 'empty key', '', 100, 100, 100, '2024-06-30 23:59:59.999999', "
	" '2024-07-01 01:59:59.999999+02', true, '\\xff'), "
	"('zeta', 42, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)";

static const char my_types_ddl[] =
	"CREATE TABLE %s (k varchar(64) NOT NULL, n int NOT NULL, note text, "
	"uni varchar(200), amount decimal(30,10), ratio double, score float, "
	"at_local datetime(6), at_utc timestamp(6) NULL DEFAULT NULL, "
	"flag tinyint(1), payload longblob, PRIMARY KEY (k, n)) "
	"DEFAULT CHARSET=utf8mb4";

static const char my_types_rows[] =
	"INSERT INTO %s (k, n, note, uni, amount, ratio, score, at_local, "
	"at_utc, flag, payload) VALUES "
	"('alpha', 1, NULL, 'plain ascii', 12345678901234567890.1234567890, "
	" 0.1, 0.1, '2024-02-29 13:45:10.123456', "
	" '2024-02-29 13:45:10.123456', TRUE, X'00FF10'), "
	"('alpha', 2, '', 'héllo wörld — ñ', "
	" -99999999999999999999.9999999999, -1.5e-7, 3.1415927, "
	" '1999-12-31 23:59:59', '2000-01-01 00:00:00', FALSE, X''), "
	"('beta', -7, 'it\\'s \"quoted\" \\\\ back\\\\slash', "
	" 'emoji 🦀🎉 and 日本語', 0.0000000001, 1e20, -2.5e-5, "
	" '2038-01-19 03:14:07.5', '2038-01-19 03:14:07.5', TRUE, "
	" X'275C00'), "
	"('beta', 0, 'line1\\nline2\\ttab', 'Ωmega ∑', 0, 3.141592653589793, "
	" 0, '1970-01-01 00:00:00', '1970-01-01 00:00:01', FALSE, NULL), "
	"('gamma', 2147483647, 'NULL', NULL, 1.5, -0e0, NULL, NULL, NULL, "
	" NULL, X'DEADBEEF'), "
	"('gamma', -2147483648, 'trailing space ', 'combining e\u0301', -0.5, "
	" 2.5, 1e10, '2000-02-29 12:00:00.000001', "
	" '2000-03-01 11:59:59.999999', TRUE, X'00'), "
	"('', 0, 'empty key', '', 100, 100, 100, '2024-06-30 23:59:59.999999', "
	" '2024-06-30 23:59:59.999999', TRUE, X'FF'), "
	"('zeta', 42, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)";

static const char lite_types_ddl[] =
	"CREATE TABLE %s (k TEXT NOT NULL, n INTEGER NOT NULL, note TEXT, "
	"uni TEXT, amount DECIMAL TEXT, ratio DOUBLE, score FLOAT4, "
	"at_local TIMESTAMP, at_utc TIMESTAMPTZ, flag BOOLEAN, payload BLOB, "
	"PRIMARY KEY (k, n))";

static const char lite_types_rows[] =
	"INSERT INTO %s (k, n, note, uni, amount, ratio, score, at_local, "
	"at_utc, flag, payload) VALUES "
	"('alpha', 1, NULL, 'plain ascii', '12345678901234567890.1234567890', "
	" 0.1, 0.1, '2024-02-29 13:45:10.123456', "
	" '2024-02-29T19:15:10.123456+05:30', 1, X'00ff10'), "
	"('alpha', 2, '', 'héllo wörld — ñ', "
	" '-99999999999999999999.9999999999', -1.5e-7, 3.1415927, "
	" '1999-12-31 23:59:59', '2000-01-01T00:00:00Z', 0, X''), "
	"('beta', -7, 'it''s \"quoted\" \\ back\\slash', "
	" 'emoji 🦀🎉 and 日本語', '0.0000000001', 1e20, -2.5e-5, "
	" '2038-01-19 03:14:07.5', '2038-01-19T03:14:07.5Z', TRUE, "
	" X'275c00'), "
	"('beta', 0, 'line1' || char(10) || 'line2' || char(9) || 'tab', "
	" 'Ωmega ∑', '0', 3.141592653589793, 0, '1970-01-01 00:00:00', "
	" '1970-01-01 00:00:01+00:00', FALSE, NULL), "
	"('gamma', 2147483647, 'NULL', NULL, '1.5', -0.0, NULL, NULL, NULL, "
	" NULL, X'deadbeef'), "
	"('gamma', -2147483648, 'trailing space ', 'combining e\u0301', "
	" '-0.5', 2.5, 1e10, '2000-02-29 12:00:00.000001', "
	" '2000-02-29T23:59:59.999999-12:00', 1, X'00'), "
	"('', 0, 'empty key', '', '100', 100, 100, "
	" '2024-06-30 23:59:59.999999', '2024-06-30 23:59:59.999999', 1, "
	" X'ff'), "
	"('zeta', 42, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)";

/* What one engine's users would write for the checks' tables; "%s" is
 * filled by sql_fill. */
struct dialect {
	const char *types_ddl;   /* CREATE TABLE %s: the typed table */
	const char *types_rows;  /* INSERT INTO %s: the same 8 rows */
	const char *drop;        /* DROP TABLE IF EXISTS %s (quoted name) */
	const char *quoted_ddl;  /* the table a"b with awkward columns */
	const char *quoted_name; /* a"b quoted for this engine */
	const char *nopk_ddl;    /* a table without a primary key */
	const char *pid_sql;     /* INSERT INTO rs_check_pids (who, pid) */
	const char *sleep_sql;   /* a five-second query */
	const char *kill_sql;    /* ends the connection whose id is %s */
	const char *xkeys_ddl;   /* the table xkeys of group 7 */
	const char *cap_ddl;     /* rs_check_cap of group 9 */
};

static const struct dialect pg_dialect = {
	.types_ddl = pg_types_ddl,
	.types_rows = pg_types_rows,
	.drop = "DROP TABLE IF EXISTS %s",
	.quoted_ddl = "CREATE TABLE \"a\"\"b\" "
		      "(\"x`y\" text PRIMARY KEY, \"t; drop table z\" text)",
	.quoted_name = "\"a\"\"b\"",
	.nopk_ddl = "CREATE TABLE rs_check_nopk (id integer, note text)",
	.pid_sql = "INSERT INTO rs_check_pids (who, pid) "
		   "VALUES ('pg', pg_backend_pid())",
	.sleep_sql = "SELECT pg_sleep(5)",
	.kill_sql = "SELECT pg_terminate_backend(%s)",
	.xkeys_ddl = "CREATE TABLE xkeys (k bytea NOT NULL, "
		     "at timestamptz NOT NULL, flag boolean NOT NULL, v text, "
		     "PRIMARY KEY (k, at, flag))",
	.cap_ddl = "CREATE TABLE rs_check_cap (k text NOT NULL, "
		   "n integer NOT NULL, s integer, v text, PRIMARY KEY (k, n))",
};

static const struct dialect my_dialect = {
	.types_ddl = my_types_ddl,
	.types_rows = my_types_rows,
	.drop = "DROP TABLE IF EXISTS %s",
	.quoted_ddl = "CREATE TABLE `a\"b` (`x``y` varchar(100) PRIMARY KEY, "
		      "`t; drop table z` text) DEFAULT CHARSET=utf8mb4",
	.quoted_name = "`a\"b`",
	.nopk_ddl = "CREATE TABLE rs_check_nopk (id int, note text)",
	.pid_sql = "INSERT INTO rs_check_pids (who, pid) "
		   "VALUES ('my', CONNECTION_ID())",
	.sleep_sql = "SELECT SLEEP(5)",
	.kill_sql = "KILL %s",
	/* A default, lest TIMESTAMP get ON UPDATE CURRENT_TIMESTAMP. */
	.xkeys_ddl = "CREATE TABLE xkeys (k varbinary(16) NOT NULL, "
		     "at timestamp(6) NOT NULL DEFAULT '2000-01-01 00:00:00', "
		     "flag tinyint(1) NOT NULL, v varchar(64), "
		     "PRIMARY KEY (k, at, flag))",
	/* Case-insensitive: 'd' to 'D' changes no key, but its bytes. */
	.cap_ddl = "CREATE TABLE rs_check_cap (k varchar(64) NOT NULL, "
		   "n int NOT NULL, s int, v varchar(64), PRIMARY KEY (k, n)) "
		   "DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci",
};

static const struct dialect lite_dialect = {
	.types_ddl = lite_types_ddl,
	.types_rows = lite_types_rows,
	.drop = "DROP TABLE IF EXISTS %s",
	.quoted_ddl = "CREATE TABLE \"a\"\"b\" "
		      "(\"x`y\" TEXT PRIMARY KEY, \"t; drop table z\" TEXT)",
	.quoted_name = "\"a\"\"b\"",
	.nopk_ddl = "CREATE TABLE rs_check_nopk (id INTEGER, note TEXT)",
	/* TIMESTAMPTZ: a TIMESTAMP has no zone, canonically no 'Z'. */
	.xkeys_ddl = "CREATE TABLE xkeys (k BLOB NOT NULL, "
		     "at TIMESTAMPTZ NOT NULL, flag BOOLEAN NOT NULL, v TEXT, "
		     "PRIMARY KEY (k, at, flag))",
	.cap_ddl = "CREATE TABLE rs_check_cap (k TEXT NOT NULL, "
		   "n INTEGER NOT NULL, s INTEGER, v TEXT, PRIMARY KEY (k, n))",
};

static const struct dialect *const dialects[N_ENGINES] = {
	[ENG_PG] = &pg_dialect,
	[ENG_MY] = &my_dialect,
	[ENG_LITE] = &lite_dialect,
};

/* The kinds rs_check_types must be described with, on every engine. */
static const enum rs_col_kind types_kinds[] = {
	RS_COL_TEXT,        RS_COL_INTEGER, RS_COL_TEXT,   RS_COL_TEXT,
	RS_COL_DECIMAL,     RS_COL_FLOAT,   RS_COL_FLOAT4, RS_COL_TIMESTAMP,
	RS_COL_TIMESTAMPTZ, RS_COL_BOOL,    RS_COL_BYTES,
};
#define N_TYPES_COLUMNS ((int)(sizeof(types_kinds) / sizeof(types_kinds[0])))

struct engine {
	const char *shard; /* "pg", "my", "lite" */
	const char *url;
	const struct dialect *sql;
	struct rs_backend *backend; /* NULL when it did not connect */
	struct rs_table_def *types; /* rs_check_types */
	struct snapshot types_rows; /* its rows as read */
	struct rs_table_def *copy;  /* rs_check_copy */
	struct rs_table_def *quoted, *sentinel; /* a"b and z */
	struct rs_table_def *xkeys;             /* group 7's table */
};

/* Drop and create a table: DROP_NAME quoted for DROP, DDL complete. */
static int
fresh_table(struct engine *engine, const char *drop_name, const char *ddl)
{
	char *drop = sql_fill(engine->sql->drop, drop_name);
	int rc = setup_sql(engine->backend, drop);

	free(drop);
	return rc != 0 ? rc : setup_sql(engine->backend, ddl);
}

/* Whether TABLE has the columns of rs_check_types with their kinds and
 * the key (k, n). */
static int
types_described(const struct rs_table_def *table)
{
	if (table->n_columns != N_TYPES_COLUMNS || table->n_pk != 2 ||
	    table->pk[0] != 0 || table->pk[1] != 1)
		return 0;
	for (int c = 0; c < N_TYPES_COLUMNS; c++)
		if (table->columns[c].kind != types_kinds[c]) {
			diag("column %s (%s) is %s, %s expected",
			     table->columns[c].name, table->columns[c].type,
			     canonical_kind_name(table->columns[c].kind),
			     canonical_kind_name(types_kinds[c]));
			return 0;
		}
	return 1;
}

/* ---- 1. the same rows on three engines ---- */

/* Read rs_check_types from ENGINE again into a fresh snapshot. */
static int
reread_types(struct engine *engine, struct snapshot *snap)
{
	char *what = xprintf("%s: rs_check_types", engine->shard);
	int rc;

	snapshot_init(snap, engine->types);
	rc = read_rows(engine->backend, NULL, NULL, CHECK_BATCH_ROWS, snap,
	               what);
	free(what);
	return rc;
}

/* Change one value on one engine: the sums must differ (the comparison can
 * fail), in exactly one row; then restore it and the sums agree again. */
static void
check_one_change(struct engine *pg, struct engine *engine, const char *change,
                 const char *restore, const char *what)
{
	struct snapshot changed, restored;

	if (setup_sql(engine->backend, change) != 0)
		return;
	if (reread_types(engine, &changed) == 0) {
		struct row_ref *a, *b;
		int differing = 0;

		check(!canonical_chunk_equal(&pg->types_rows.sum, &changed.sum),
		      "%s: %s changes the chunk sum", engine->shard, what);
		a = snapshot_refs(&pg->types_rows);
		b = snapshot_refs(&changed);
		for (int i = 0; i < changed.canon.n_rows &&
		                i < pg->types_rows.canon.n_rows;
		     i++)
			differing += pg->types_rows.hashes[a[i].row] !=
			             changed.hashes[b[i].row];
		check(differing == 1 && changed.canon.n_rows ==
		                                pg->types_rows.canon.n_rows,
		      "%s: %s changes exactly one row hash (%d)", engine->shard,
		      what, differing);
		refs_free(a, pg->types_rows.canon.n_rows);
		refs_free(b, changed.canon.n_rows);
	}
	snapshot_free(&changed);
	if (setup_sql(engine->backend, restore) != 0)
		return;
	if (reread_types(engine, &restored) == 0)
		check(canonical_chunk_equal(&pg->types_rows.sum, &restored.sum),
		      "%s: restored, the chunk sums agree again",
		      engine->shard);
	snapshot_free(&restored);
}

static void
check_same_rows(struct engine *engines)
{
	struct engine *pg = &engines[ENG_PG];
	int ready = 1;

	for (int i = 0; i < N_ENGINES; i++) {
		struct engine *e = &engines[i];
		char *ddl = sql_fill(e->sql->types_ddl, "rs_check_types");
		char *rows = sql_fill(e->sql->types_rows, "rs_check_types");
		struct rs_err err;
		int rc = fresh_table(e, "rs_check_types", ddl);

		if (rc == 0) {
			rc = run_sql(e->backend, rows, &err);
			check_status(
				rc, &err,
				"%s: 8 rows inserted with the engine's own "
				"SQL",
				e->shard);
		}
		if (rc != 0 || read_table(e->backend, "rs_check_types",
		                          &e->types, &e->types_rows) != 0) {
			ready = 0;
		} else {
			check(types_described(e->types),
			      "%s: rs_check_types described with the expected "
			      "kinds and key (k, n)",
			      e->shard);
			check(e->types_rows.raw.n_rows == 8,
			      "%s: 8 rows read back in batches of %d (%d)",
			      e->shard, CHECK_BATCH_ROWS,
			      e->types_rows.raw.n_rows);
		}
		free(ddl);
		free(rows);
	}
	if (!ready)
		return;
	compare_snapshots("PostgreSQL = MariaDB", &pg->types_rows,
	                  &engines[ENG_MY].types_rows);
	compare_snapshots("PostgreSQL = SQLite", &pg->types_rows,
	                  &engines[ENG_LITE].types_rows);
	/* A check that cannot fail is a defect: show that these can. */
	check_one_change(pg, &engines[ENG_MY],
	                 "UPDATE rs_check_types SET note = NULL "
	                 "WHERE k = 'alpha' AND n = 2",
	                 "UPDATE rs_check_types SET note = '' "
	                 "WHERE k = 'alpha' AND n = 2",
	                 "'' made NULL");
	check_one_change(pg, &engines[ENG_LITE],
	                 "UPDATE rs_check_types SET at_utc = "
	                 "'2000-01-01T00:00:00.000001Z' "
	                 "WHERE k = 'alpha' AND n = 2",
	                 "UPDATE rs_check_types SET at_utc = "
	                 "'2000-01-01T00:00:00Z' WHERE k = 'alpha' AND n = 2",
	                 "a timestamptz one microsecond later");
	check_one_change(pg, &engines[ENG_PG],
	                 "UPDATE rs_check_types SET payload = '\\x00ff11' "
	                 "WHERE k = 'alpha' AND n = 1",
	                 "UPDATE rs_check_types SET payload = '\\x00ff10' "
	                 "WHERE k = 'alpha' AND n = 1",
	                 "one byte of a bytea changed");
}

/* ---- 2. copying through the write path ---- */

/* Whether SNAP's raw keys are exactly rows FIRST..LAST of ALL's. */
static int
same_keys(const struct snapshot *snap, const struct snapshot *all, int first,
          int last)
{
	int n_pk = snap->table->n_pk;

	if (snap->raw.n_rows != last - first + 1)
		return 0;
	for (int r = 0; r < snap->raw.n_rows; r++)
		for (int k = 0; k < n_pk; k++) {
			const struct cell *a = &grid_row(&snap->raw, r)[k];
			const struct cell *b =
				&grid_row(&all->raw, first + r)[k];

			if ((a->text == NULL) != (b->text == NULL) ||
			    a->len != b->len ||
			    (a->len > 0 &&
			     memcmp(a->text, b->text, a->len) != 0))
				return 0;
		}
	return 1;
}

/* The key of row ROW of SNAP as read, for after/upto. */
static void
raw_key(const struct snapshot *snap, int row, struct rs_value *key)
{
	for (int k = 0; k < snap->table->n_pk; k++) {
		key[k].text = grid_row(&snap->raw, row)[k].text;
		key[k].len = grid_row(&snap->raw, row)[k].len;
	}
}

/* Bounded reads on a table of 8 rows ALL (as read in key order): after
 * and upto together, upto alone, a range of one row, an empty range, and
 * a range paged in batches smaller than itself. */
static void
check_ranges(struct engine *engine, const struct snapshot *all)
{
	struct rs_value after[2], upto[2];
	const struct {
		int after, upto, limit; /* -1: no bound */
		int first, last;        /* rows expected */
		const char *what;
	} cases[] = {
		{0, 6, 100, 1, 6, "after row 1 up to row 7"},
		{-1, 2, 100, 0, 2, "up to row 3 only"},
		{3, -1, 100, 4, 7, "after row 4 only"},
		{2, 3, 100, 3, 3, "a range of one row"},
		{4, 4, 100, 5, 4, "an empty range (after = upto)"},
		{1, 6, 2, 2, 6, "after row 2 up to row 7 in batches of 2"},
	};
	if (all->raw.n_rows != 8)
		return;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct snapshot range;
		char *what;

		if (cases[i].after >= 0)
			raw_key(all, cases[i].after, after);
		if (cases[i].upto >= 0)
			raw_key(all, cases[i].upto, upto);
		what = xprintf("%s: rs_check_copy read %s", engine->shard,
		               cases[i].what);
		snapshot_init(&range, all->table);
		if (read_rows(engine->backend,
		              cases[i].after >= 0 ? after : NULL,
		              cases[i].upto >= 0 ? upto : NULL, cases[i].limit,
		              &range, what) == 0)
			check(same_keys(&range, all, cases[i].first,
			                cases[i].last),
			      "%s: exactly %d rows (%d)", what,
			      cases[i].last - cases[i].first + 1,
			      range.raw.n_rows);
		snapshot_free(&range);
		free(what);
	}
}

/* Read rs_check_copy on ENGINE and compare it with WANT. */
static void
check_copy_rows(struct engine *engine, const struct snapshot *want,
                const char *step, struct snapshot *got)
{
	char *what = xprintf("%s: rs_check_copy %s", engine->shard, step);

	snapshot_init(got, engine->copy);
	if (read_rows(engine->backend, NULL, NULL, CHECK_BATCH_ROWS, got,
	              what) == 0)
		compare_snapshots(what, want, got);
	free(what);
}

/* Upsert SOURCE's second row with another note: the row that exists must
 * be overwritten, not kept.  Then put SOURCE back. */
static void
check_overwrite(struct engine *engine, const struct snapshot *source)
{
	struct snapshot changed, got;
	struct grid one;
	struct cell *row;
	struct rs_err err;
	int rc;

	snapshot_subset(&changed, source, NULL, 0);
	grid_init(&one, source->canon.n_cols);
	row = grid_add_row(&one);
	for (int c = 0; c < one.n_cols; c++)
		cell_set(&row[c], grid_row(&source->canon, 1)[c].text,
		         grid_row(&source->canon, 1)[c].len);
	cell_set(&row[2], "overwritten", 11); /* note */
	cell_set(&grid_row(&changed.canon, 1)[2], "overwritten", 11);
	snapshot_hash(&changed);
	rc = upsert_grid(engine->backend, engine->copy, &one, 1, &err);
	if (check_status(rc, &err, "%s: upsert of one changed row",
	                 engine->shard)) {
		check_copy_rows(engine, &changed, "with one row overwritten",
		                &got);
		snapshot_free(&got);
	}
	grid_free(&one);
	snapshot_free(&changed);
	rc = upsert_grid(engine->backend, engine->copy, &source->canon, 8,
	                 &err);
	check_status(rc, &err, "%s: upsert of the original row back",
	             engine->shard);
}

static void
check_copy(struct engine *engines)
{
	const struct snapshot *source = &engines[ENG_PG].types_rows;
	int deleted[4] = {0, 2, 4, 6}, kept[4] = {1, 3, 5, 7};
	struct snapshot want_kept;
	struct grid keys;

	if (source->canon.n_rows != 8) {
		check(0, "copy: no rows read from PostgreSQL to copy");
		return;
	}
	snapshot_subset(&want_kept, source, kept, 4);
	snapshot_keys(source, deleted, 4, &keys);
	for (int i = 0; i < N_ENGINES; i++) {
		struct engine *e = &engines[i];
		char *ddl = sql_fill(e->sql->types_ddl, "rs_check_copy");
		struct snapshot got;
		struct rs_err err;
		struct rs_value *key_values;
		struct rs_rows key_rows;
		int rc;

		rc = fresh_table(e, "rs_check_copy", ddl);
		free(ddl);
		if (rc != 0)
			continue; /* setup_sql said why */
		rc = describe(e->backend, "rs_check_copy", &e->copy, &err);
		if (!check_status(rc, &err, "%s: describe rs_check_copy",
		                  e->shard))
			continue;
		/* Batches of 3: three transactions, the last one short. */
		rc = upsert_grid(e->backend, e->copy, &source->canon, 3, &err);
		if (!check_status(rc, &err,
		                  "%s: upsert of PostgreSQL's 8 canonical rows",
		                  e->shard))
			continue;
		check_copy_rows(e, source, "after upsert", &got);
		snapshot_free(&got);

		/* The same batch again converges: nothing changes. */
		rc = upsert_grid(e->backend, e->copy, &source->canon, 8, &err);
		check_status(rc, &err, "%s: upsert of the same 8 rows again",
		             e->shard);
		check_copy_rows(e, source, "after a repeated upsert", &got);
		check_ranges(e, &got);
		snapshot_free(&got);

		check_overwrite(e, source);

		/* Delete every other key, twice: the second finds none. */
		key_values = grid_values(&keys, 0, keys.n_rows);
		key_rows =
			(struct rs_rows){keys.n_rows, keys.n_cols, key_values};
		for (int round = 0; round < 2; round++) {
			rc = delete_keys(e->backend, e->copy, &key_rows, &err);
			check_status(rc, &err,
			             "%s: delete_keys of 4 of the 8 keys%s",
			             e->shard, round > 0 ? " again" : "");
			check_copy_rows(e, &want_kept,
			                round == 0 ? "after delete_keys"
			                           : "after a repeated "
			                             "delete_keys",
			                &got);
			snapshot_free(&got);
		}
		free(key_values);
	}
	grid_free(&keys);
	snapshot_free(&want_kept);
}

/* ---- 3. identifiers that need quoting ---- */

/* Canonical rows for a"b: keys and values that break naive quoting. */
static void
quoted_rows(struct grid *rows)
{
	static const char *const values[][2] = {
		{"it's", "'); DROP TABLE z; --"},
		{"back\\slash\\", "x\\'; DROP TABLE z; -- \""},
		{"semi; drop table z", NULL},
		{"dq\"`bt`", ""},
		{"\u30e6\u30cb\U0001F980", "\n"},
	};

	grid_init(rows, 2);
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		struct cell *row = grid_add_row(rows);

		cell_set(&row[0], values[i][0], strlen(values[i][0]));
		if (values[i][1] != NULL)
			cell_set(&row[1], values[i][1], strlen(values[i][1]));
	}
}

/* Upsert the rows of quoted_rows into ENGINE's a"b, read them back,
 * delete one key and read the rest back. */
static void
check_quoted_rows(struct engine *engine)
{
	struct snapshot want, got, rest;
	struct grid rows, key;
	struct rs_value *values;
	struct rs_rows one_key;
	struct rs_err err;
	int keep[4] = {1, 2, 3, 4};
	char *what;
	int rc;

	quoted_rows(&rows);
	snapshot_init(&want, engine->quoted);
	for (int r = 0; r < rows.n_rows; r++) {
		struct cell *to = grid_add_row(&want.canon);

		for (int c = 0; c < 2; c++)
			cell_set(&to[c], grid_row(&rows, r)[c].text,
			         grid_row(&rows, r)[c].len);
	}
	snapshot_hash(&want);
	rc = upsert_grid(engine->backend, engine->quoted, &rows, 5, &err);
	grid_free(&rows);
	if (!check_status(rc, &err, "%s: upsert of 5 rows into a\"b",
	                  engine->shard)) {
		snapshot_free(&want);
		return;
	}
	what = xprintf("%s: a\"b read back", engine->shard);
	snapshot_init(&got, engine->quoted);
	if (read_rows(engine->backend, NULL, NULL, 2, &got, what) == 0)
		compare_snapshots(what, &want, &got);
	snapshot_free(&got);
	free(what);

	grid_init(&key, 1);
	cell_set(&grid_add_row(&key)[0], "it's", 4);
	values = grid_values(&key, 0, 1);
	one_key = (struct rs_rows){1, 1, values};
	rc = delete_keys(engine->backend, engine->quoted, &one_key, &err);
	check_status(rc, &err, "%s: delete_keys of key it's from a\"b",
	             engine->shard);
	free(values);
	grid_free(&key);

	what = xprintf("%s: a\"b after delete_keys", engine->shard);
	snapshot_subset(&rest, &want, keep, 4);
	snapshot_init(&got, engine->quoted);
	if (read_rows(engine->backend, NULL, NULL, 2, &got, what) == 0)
		compare_snapshots(what, &rest, &got);
	snapshot_free(&got);
	snapshot_free(&rest);
	snapshot_free(&want);
	free(what);
}

static void
check_quoting(struct engine *engines)
{
	for (int i = 0; i < N_ENGINES; i++) {
		struct engine *e = &engines[i];
		struct snapshot sentinel = {0};
		struct rs_err err;
		int rc;

		if (fresh_table(e, "z",
		                "CREATE TABLE z (id integer PRIMARY KEY, "
		                "note varchar(20))") != 0 ||
		    setup_sql(e->backend,
		              "INSERT INTO z VALUES (1, 'sentinel')") != 0 ||
		    fresh_table(e, e->sql->quoted_name, e->sql->quoted_ddl) !=
		            0)
			continue;
		rc = describe(e->backend, "a\"b", &e->quoted, &err);
		if (!check_status(rc, &err, "%s: describe a\"b", e->shard))
			continue;
		check(e->quoted->n_columns == 2 &&
		              strcmp(e->quoted->columns[0].name, "x`y") == 0 &&
		              strcmp(e->quoted->columns[1].name,
		                     "t; drop table z") == 0 &&
		              e->quoted->n_pk == 1 && e->quoted->pk[0] == 0,
		      "%s: a\"b has columns x`y (key) and 't; drop table z'",
		      e->shard);
		check_quoted_rows(e);

		/* Nothing else was touched: z is there with its row. */
		if (read_table(e->backend, "z", &e->sentinel, &sentinel) == 0) {
			const struct cell *note =
				sentinel.canon.n_rows == 1
					? &grid_row(&sentinel.canon, 0)[1]
					: NULL;

			check(note != NULL && note->text != NULL &&
			              strcmp(note->text, "sentinel") == 0,
			      "%s: table z still holds its one row (%d rows)",
			      e->shard, sentinel.canon.n_rows);
		}
		snapshot_free(&sentinel);
	}
}

/* ---- 4. errors ---- */

/* A TCP listener on 127.0.0.1 that never accepts: connections complete
 * in the kernel, and then nothing is ever said.  Returns the socket and
 * *PORT, or -1. */
static int
mute_listener(int *port)
{
	struct sockaddr_in addr = {0};
	socklen_t len = sizeof(addr);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
	    listen(fd, 16) != 0 ||
	    getsockname(fd, (struct sockaddr *)&addr, &len) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*port = ntohs(addr.sin_port);
	return fd;
}

/* Check a failure: CODE, the shard named with the masked URL MASKED, and
 * no PASSWORD (may be NULL) in the message.  NEEDLE (may be NULL) must
 * appear in the message. */
static void
check_failure(const char *what, int status, int code, const struct rs_err *err,
              const char *shard, const char *masked, const char *password,
              const char *needle)
{
	char *prefix = xprintf("shard %s (%s)", shard, masked);

	check(status == code && err->code == code, "%s: code %d (got %d)", what,
	      code, status);
	check(strstr(err->message, prefix) != NULL, "%s: message names %s",
	      what, prefix);
	if (password != NULL)
		check(strstr(err->message, password) == NULL,
		      "%s: password not in the message", what);
	if (needle != NULL)
		check(strstr(err->message, needle) != NULL,
		      "%s: message says \"%s\"", what, needle);
	diag("%s", err->message);
	free(prefix);
}

/* Connect SHARD to URL, which must fail with RS_ECONNECT as check_failure
 * checks.  A TIMEOUT_MS below the usual one must also be what ended the
 * attempt: not much sooner, not much later. */
static void
check_connect_failure(const char *shard, const char *url, const char *masked,
                      int timeout_ms, const char *password, const char *needle,
                      const char *what)
{
	struct rs_backend *backend = NULL;
	struct rs_err err;
	uint64_t started = uv_hrtime();
	int rc = open_backend(shard, url, timeout_ms, &backend, &err);
	uint64_t elapsed_ms = (uv_hrtime() - started) / 1000000;

	check_failure(what, rc, RS_ECONNECT, &err, shard, masked, password,
	              needle);
	if (timeout_ms < CHECK_CONNECT_MS)
		check(elapsed_ms + 50 >= (uint64_t)timeout_ms &&
		              elapsed_ms <= (uint64_t)timeout_ms + 500,
		      "%s: gave up after %" PRIu64 " ms (timeout %d ms)", what,
		      elapsed_ms, timeout_ms);
	close_backend(backend);
}

/* "scheme://user:PASSWORD@HOST:PORT/db" for URL's user and database. */
static char *
url_with(const struct rs_url *url, const char *password, const char *host,
         int port)
{
	return xprintf("%s://%s:%s@%s:%d/%s", url_engine_name(url->engine),
	               url->user != NULL ? url->user : "", password, host, port,
	               url->database != NULL ? url->database : "");
}

/* A foreign key whose actions change the table's rows: only InnoDB runs
 * them without the table's triggers (a split's preflight refuses a source
 * with one), so describe names it there and nowhere else. */
static void
check_cascades(struct engine *e)
{
	static const char child[] =
		"CREATE TABLE rs_check_fkc (id integer PRIMARY KEY, p integer, "
		"CONSTRAINT rs_check_fk FOREIGN KEY (p) REFERENCES "
		"rs_check_fkp (id) ON DELETE CASCADE ON UPDATE SET NULL)";
	static const char named[] = "rs_check_fk (references rs_check_fkp: "
				    "ON DELETE CASCADE, ON UPDATE SET NULL)";
	int innodb = strcmp(backend_engine(e->backend), "mysql") == 0;
	struct rs_table_def *def = NULL;
	struct rs_err err;
	int rc;

	if (setup_sql(e->backend, "DROP TABLE IF EXISTS rs_check_fkc") != 0 ||
	    setup_sql(e->backend, "DROP TABLE IF EXISTS rs_check_fkp") != 0 ||
	    setup_sql(e->backend,
	              "CREATE TABLE rs_check_fkp (id integer PRIMARY KEY)") !=
	            0 ||
	    setup_sql(e->backend, child) != 0)
		return;
	rc = describe(e->backend, "rs_check_fkc", &def, &err);
	if (check_status(rc, &err, "%s: describe a cascading foreign key",
	                 e->shard))
		check(innodb ? def->cascades != NULL &&
		                       strcmp(def->cascades, named) == 0
		             : def->cascades == NULL,
		      "%s: cascading foreign keys %s (got %s)", e->shard,
		      innodb ? "named with their actions"
		             : "not named (they fire triggers)",
		      def->cascades != NULL ? def->cascades : "NULL");
	backend_table_free(def);
	def = NULL;
	rc = describe(e->backend, "rs_check_fkp", &def, &err);
	if (check_status(rc, &err, "%s: describe the referenced table",
	                 e->shard))
		check(def->cascades == NULL,
		      "%s: the referenced table has no cascading key",
		      e->shard);
	backend_table_free(def);
	setup_sql(e->backend, "DROP TABLE rs_check_fkc");
	setup_sql(e->backend, "DROP TABLE rs_check_fkp");
}

/* The unique indexes describe reports (rs_table_def.uniques): those other
 * than the primary key whose parts are all whole columns, in index order.
 * Left out: a plain index, a partial or expression index (PostgreSQL,
 * SQLite), a prefix (MariaDB); a PostgreSQL INCLUDE column is no key
 * part.  A split's copy makes room on exactly these (steps/movers.c). */
static void
check_uniques(struct engine *e)
{
	const char *engine = backend_engine(e->backend);
	int pg = strcmp(engine, "postgresql") == 0,
	    my = strcmp(engine, "mysql") == 0;
	const char *const common[] = {
		"CREATE TABLE rs_check_uq (id integer PRIMARY KEY, a integer, "
		"b integer, c varchar(20), d varchar(20), e integer, "
		"UNIQUE (b, a))",
		"CREATE UNIQUE INDEX rs_check_uq_c ON rs_check_uq (c)",
		"CREATE INDEX rs_check_uq_e ON rs_check_uq (e)",
		pg ? "CREATE UNIQUE INDEX rs_check_uq_d ON rs_check_uq (d) "
		     "INCLUDE (e)"
		   : "CREATE UNIQUE INDEX rs_check_uq_d ON rs_check_uq (d)",
		my ? "CREATE UNIQUE INDEX rs_check_uq_p ON rs_check_uq (d(5), "
		     "e)"
		   : "CREATE UNIQUE INDEX rs_check_uq_p ON rs_check_uq (e) "
		     "WHERE e > 0",
		my ? NULL
		   : "CREATE UNIQUE INDEX rs_check_uq_x ON rs_check_uq "
		     "(lower(d))",
	};
	struct rs_table_def *def = NULL;
	struct rs_err err;
	char got[256] = "", *names[8];
	int rc, n = 0;

	if (setup_sql(e->backend, "DROP TABLE IF EXISTS rs_check_uq") != 0)
		return;
	for (size_t i = 0; i < sizeof(common) / sizeof(common[0]); i++)
		if (common[i] != NULL && setup_sql(e->backend, common[i]) != 0)
			return;
	rc = describe(e->backend, "rs_check_uq", &def, &err);
	if (check_status(rc, &err, "%s: describe a table with unique indexes",
	                 e->shard)) {
		for (int u = 0; u < def->n_uniques && n < 8; u++) {
			char one[64] = "";

			for (int c = 0; c < def->uniques[u].n_columns; c++)
				snprintf(
					one + strlen(one),
					sizeof(one) - strlen(one), "%s%s",
					c > 0 ? "," : "",
					def->columns[def->uniques[u].columns[c]]
						.name);
			names[n++] = xprintf("%s", one);
		}
		for (int i = 1; i < n;
		     i++) /* sorted: the order is the engine's */
			for (int j = i;
			     j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
				char *t = names[j];

				names[j] = names[j - 1];
				names[j - 1] = t;
			}
		for (int i = 0; i < n; i++) {
			snprintf(got + strlen(got), sizeof(got) - strlen(got),
			         "%s%s", i > 0 ? " " : "", names[i]);
			free(names[i]);
		}
		check(strcmp(got, "b,a c d") == 0,
		      "%s: describe reports the unique indexes on whole "
		      "columns, in index order: \"b,a c d\" (got \"%s\")",
		      e->shard, got);
	}
	backend_table_free(def);
	setup_sql(e->backend, "DROP TABLE rs_check_uq");
}

static void
check_errors(struct engine *engines, const char *sqlite_dir)
{
	int port = 0, listener = mute_listener(&port);

	check(listener >= 0, "a mute TCP listener on 127.0.0.1:%d", port);
	for (int i = ENG_PG; i <= ENG_MY; i++) {
		const char *name = i == ENG_PG ? "PostgreSQL" : "MariaDB";
		struct rs_url url;
		struct rs_err err;
		char *bad, *masked, *shard, *what;

		if (url_parse(engines[i].url, NULL, &url, &err) != 0) {
			check(0, "%s URL parses: %s", name, err.message);
			continue;
		}
		/* A closed port: refused at once. */
		bad = url_with(&url, CHECK_WRONG_PASSWORD, "127.0.0.1", 1);
		masked = url_with(&url, "****", "127.0.0.1", 1);
		shard = xprintf("%s-closed", engines[i].shard);
		what = xprintf("%s: connect to a closed port", name);
		check_connect_failure(shard, bad, masked, CHECK_CONNECT_MS,
		                      CHECK_WRONG_PASSWORD, NULL, what);
		free(bad), free(masked), free(shard), free(what);

		/* A listener that never answers: the timeout ends it. */
		if (listener >= 0) {
			bad = url_with(&url, CHECK_WRONG_PASSWORD, "127.0.0.1",
			               port);
			masked = url_with(&url, "****", "127.0.0.1", port);
			shard = xprintf("%s-mute", engines[i].shard);
			what = xprintf("%s: connect to a mute listener", name);
			check_connect_failure(
				shard, bad, masked, CHECK_SHORT_TIMEOUT,
				CHECK_WRONG_PASSWORD, "within", what);
			free(bad), free(masked), free(shard), free(what);
		}

		/* The real server, the wrong password. */
		bad = url_with(&url, CHECK_WRONG_PASSWORD, url.host, url.port);
		masked = url_with(&url, "****", url.host, url.port);
		shard = xprintf("%s-badpw", engines[i].shard);
		what = xprintf("%s: connect with a wrong password", name);
		check_connect_failure(shard, bad, masked, CHECK_CONNECT_MS,
		                      CHECK_WRONG_PASSWORD, NULL, what);
		free(bad), free(masked), free(shard), free(what);
		url_clear(&url);
	}
	if (listener >= 0)
		close(listener);

	/* SQLite: a missing file is an unreachable shard. */
	{
		char *missing =
			xprintf("sqlite://%s/missing/none.db", sqlite_dir);

		check_connect_failure("lite-missing", missing, missing,
		                      CHECK_CONNECT_MS, NULL, NULL,
		                      "SQLite: connect to a missing file");
		free(missing);
	}

	/* Schema errors, on every engine. */
	for (int i = 0; i < N_ENGINES; i++) {
		struct engine *e = &engines[i];
		struct rs_table_def *def = NULL;
		struct rs_err err;
		int64_t n;
		char *what;
		int rc;

		what = xprintf("%s: describe a missing table", e->shard);
		setup_sql(e->backend, "DROP TABLE IF EXISTS rs_check_missing");
		rc = describe(e->backend, "rs_check_missing", &def, &err);
		check_failure(what, rc, RS_ESCHEMA, &err, e->shard,
		              e->backend->url.masked, NULL, "rs_check_missing");
		backend_table_free(def);
		free(what);

		/* Final-check tells a delete log that is not there (nothing
		 * recorded) from one it could not count by this code. */
		what = xprintf("%s: count a missing table", e->shard);
		rc = count_rows(e->backend, "rs_check_missing", &n, &err);
		check_failure(what, rc, RS_ESCHEMA, &err, e->shard,
		              e->backend->url.masked, NULL, "rs_check_missing");
		free(what);

		what = xprintf("%s: describe a table without primary key",
		               e->shard);
		if (fresh_table(e, "rs_check_nopk", e->sql->nopk_ddl) == 0) {
			def = NULL;
			rc = describe(e->backend, "rs_check_nopk", &def, &err);
			check_failure(what, rc, RS_ESCHEMA, &err, e->shard,
			              e->backend->url.masked, NULL,
			              "rs_check_nopk");
			backend_table_free(def);
		}
		free(what);

		check_cascades(e);
		check_uniques(e);
	}
}

/* ---- 5. a connection killed mid-query ---- */

/* The process id in TEXT (a server's pid as it reported it), or -1 (no
 * process: kill and process_ends then fail the check) when it is not
 * one. */
static pid_t
pid_of(const char *text)
{
	char *end;
	long n = strtol(text, &end, 10);

	return end != text && *end == '\0' && n > 0 && n <= INT_MAX ? (pid_t)n
	                                                            : -1;
}

/* The server process id (PostgreSQL) or connection id (MariaDB) of
 * VICTIM, which writes it into a fresh table rs_check_pids that HELPER
 * reads back.  Returns the id (to free), or NULL after a "not ok" line. */
static char *
server_id(struct engine *engine, struct rs_backend *victim,
          struct rs_backend *helper)
{
	struct rs_table_def *pids = NULL;
	struct snapshot snap = {0};
	char *id = NULL;

	if (setup_sql(helper, "DROP TABLE IF EXISTS rs_check_pids") != 0 ||
	    setup_sql(helper, "CREATE TABLE rs_check_pids (who varchar(8) "
	                      "PRIMARY KEY, pid bigint)") != 0 ||
	    setup_sql(victim, engine->sql->pid_sql) != 0 ||
	    read_table(helper, "rs_check_pids", &pids, &snap) != 0) {
		backend_table_free(pids);
		return NULL;
	}
	if (check(snap.canon.n_rows == 1 &&
	                  grid_row(&snap.canon, 0)[1].text != NULL,
	          "%s: the id of %s read back", engine->shard, victim->shard))
		id = xprintf("%s", grid_row(&snap.canon, 0)[1].text);
	snapshot_free(&snap);
	backend_table_free(pids);
	return id;
}

static void
check_kill(struct engine *engine)
{
	const char *name = engine->shard;
	struct rs_backend *victim = NULL, *killer = NULL, *after = NULL;
	struct call query = {0}, kill = {0}, again = {0};
	struct rs_err err;
	char *victim_shard = xprintf("%s-victim", name);
	char *killer_shard = xprintf("%s-killer", name);
	char *kill_sql = NULL;
	char *pid = NULL;
	uint64_t kill_started;
	int never = 0, rc;

	rc = open_backend(victim_shard, engine->url, CHECK_CONNECT_MS, &victim,
	                  &err);
	if (rc == 0)
		rc = open_backend(killer_shard, engine->url, CHECK_CONNECT_MS,
		                  &killer, &err);
	if (!check_status(rc, &err, "%s: two connections for the kill", name))
		goto out;
	/* The victim writes down its own server process/connection id. */
	pid = server_id(engine, victim, killer);
	if (pid == NULL)
		goto out;
	kill_sql = sql_fill(engine->sql->kill_sql, pid);

	/* Start the long query, let it reach the server, then kill. */
	rc = backend_exec(victim, engine->sql->sleep_sql, on_done, &query,
	                  &query.err);
	if (!check(rc == 0, "%s: %s started", name, engine->sql->sleep_sql)) {
		query.done = 1;
		goto out;
	}
	wait_until(&never, CHECK_KILL_DELAY_MS);
	kill_started = uv_now(&check_loop);
	rc = backend_exec(killer, kill_sql, on_done, &kill, &kill.err);
	if (rc != 0) {
		kill.done = 1;
		kill.status = rc;
	}
	/* The watchdog: the killed query must end within the deadline. */
	wait_until(&query.done, CHECK_KILL_DEADLINE);
	check(query.done, "%s: the killed query ended within %d ms", name,
	      CHECK_KILL_DEADLINE);
	if (query.done) {
		check(query.status == RS_ECONNECT || query.status == RS_EQUERY,
		      "%s: the killed query failed with RS_ECONNECT or "
		      "RS_EQUERY (%d after %" PRIu64 " ms)",
		      name, query.status, query.ended_ms - kill_started);
		check(strstr(query.err.message, victim_shard) != NULL,
		      "%s: the failure names shard %s", name, victim_shard);
		diag("%s", query.err.message);
	} else if (!wait_until(&query.done, CHECK_OP_TIMEOUT_MS)) {
		bail_out("the killed query");
	}
	if (!wait_until(&kill.done, CHECK_OP_TIMEOUT_MS))
		bail_out(kill_sql);
	check(kill.status == 0, "%s: %s ran%s%s", name, kill_sql,
	      kill.status != 0 ? ": " : "", kill.err.message);

	/* The lost connection stays lost, cleanly. */
	rc = await(
		&again,
		backend_exec(victim, "SELECT 1", on_done, &again, &again.err),
		"exec after the kill");
	check(rc != 0, "%s: exec on the killed connection fails (%d)", name,
	      rc);

	/* And the server takes new connections. */
	rc = open_backend(name, engine->url, CHECK_CONNECT_MS, &after, &err);
	if (rc == 0)
		rc = run_sql(after, "SELECT 1", &err);
	check_status(rc, &err, "%s: a new connection works after the kill",
	             name);
out:
	if (killer != NULL && pid != NULL)
		setup_sql(killer, "DROP TABLE IF EXISTS rs_check_pids");
	close_backend(after);
	close_backend(killer);
	close_backend(victim);
	free(pid);
	free(kill_sql);
	free(victim_shard);
	free(killer_shard);
}

/* ---- 6. the operation bound ---- */

/* What check_deadline_failure expects of a failure ended by the bound. */
struct deadline_case {
	const char *what;       /* the check's name */
	const char *shard;      /* the shard the message must name */
	int bound_ms;           /* the operation's bound */
	const char *hint;       /* how the message says to raise it */
	const char *afterwards; /* what it says became of the connection */
};

/* Start timing an operation: the loop's clock, brought up to date. */
static uint64_t
op_started(void)
{
	uv_update_time(&check_loop);
	return uv_now(&check_loop);
}

/* Check that CALL, started at STARTED (op_started), was ended by its bound
 * as WANT describes: RS_ECONNECT, the shard, the bound, how to raise it,
 * not before the bound and long before CHECK_OP_TIMEOUT_MS (await bails
 * out at that point: the operation would be hanging). */
static void
check_deadline_failure(const struct deadline_case *want,
                       const struct call *call, uint64_t started)
{
	char *within =
		xprintf("did not finish within %d s", want->bound_ms / 1000);
	uint64_t elapsed = call->ended_ms - started;

	check(call->status == RS_ECONNECT && call->err.code == RS_ECONNECT,
	      "%s: RS_ECONNECT (got %d)", want->what, call->status);
	check(elapsed + 50 >= (uint64_t)want->bound_ms &&
	              elapsed < CHECK_OP_TIMEOUT_MS,
	      "%s: ended by the %d ms bound after %" PRIu64 " ms", want->what,
	      want->bound_ms, elapsed);
	check(strstr(call->err.message, want->shard) != NULL &&
	              strstr(call->err.message, within) != NULL &&
	              strstr(call->err.message, want->hint) != NULL &&
	              strstr(call->err.message, want->afterwards) != NULL,
	      "%s: the message names %s, \"%s\", \"%s\" and \"%s\"", want->what,
	      want->shard, within, want->hint, want->afterwards);
	diag("%s", call->err.message);
	free(within);
}

/* Run SQL on BACKEND, timed from *STARTED; the outcome is in CALL. */
static void
timed_sql(struct rs_backend *backend, const char *sql, struct call *call,
          uint64_t *started)
{
	*started = op_started();
	await(call, backend_exec(backend, sql, on_done, call, &call->err), sql);
}

/* Whether server process PID (PostgreSQL runs one per connection) ends
 * within CHECK_GONE_MS, serving the loop meanwhile. */
static int
process_ends(pid_t pid)
{
	int never = 0;

	for (int waited = 0; waited < CHECK_GONE_MS; waited += 100) {
		if (kill(pid, 0) != 0 && errno == ESRCH)
			return 1;
		wait_until(&never, 100);
	}
	return 0;
}

/* PostgreSQL: a server process stopped with SIGSTOP answers nothing and
 * keeps its TCP connection open, so only the bound ends a read on it; a
 * longer bound set for one operation lets a slow statement finish; a
 * statement the bound ended stops on the server too. */
static void
check_deadline_pg(struct engine *engine)
{
	const struct deadline_case stopped = {
		.what = "pg: a read from a stopped server process",
		.shard = "pg-stopped",
		.bound_ms = CHECK_DEADLINE_MS,
		.hint = "options.operation_timeout_seconds",
		.afterwards = "the connection was closed",
	};
	const struct deadline_case slow = {
		.what = "pg: pg_sleep(60) with the configured bound put back",
		.shard = "pg-slow",
		.bound_ms = CHECK_DEADLINE_MS,
		.hint = "options.operation_timeout_seconds",
		.afterwards = "the connection was closed",
	};
	struct rs_backend *victim = NULL, *helper = NULL, *slow_backend = NULL;
	struct rs_err err;
	struct call read = {0}, again = {0}, sleep = {0};
	struct grid rows;
	char *pid = NULL, *slow_pid = NULL;
	uint64_t started;
	int rc, columns[1] = {0};

	grid_init(&rows, engine->types != NULL ? engine->types->n_pk + 1 : 1);
	rc = open_bounded("pg-stopped", engine->url, CHECK_CONNECT_MS,
	                  CHECK_DEADLINE_MS, &victim, &err);
	if (rc == 0)
		rc = open_backend("pg-helper", engine->url, CHECK_CONNECT_MS,
		                  &helper, &err);
	if (!check_status(rc, &err, "pg: connections for the bound checks") ||
	    !check(engine->types != NULL, "pg: rs_check_types to read") ||
	    (pid = server_id(engine, victim, helper)) == NULL)
		goto out;

	/* The read's server process is stopped: nothing comes back. */
	if (check(kill(pid_of(pid), SIGSTOP) == 0,
	          "pg: server process %s stopped", pid)) {
		struct rs_read_request request = {
			.table = engine->types,
			.columns = columns,
			.n_columns = 1,
			.limit = CHECK_BATCH_ROWS,
		};

		read.rows = &rows;
		started = op_started();
		rc = backend_read_batch(victim, &request, on_rows, &read,
		                        &read.err);
		if (rc != 0) {
			read.done = 1;
			read.status = rc;
		}
		/* Not await: the process must continue even if the read
		 * hangs, or it would hold up the server's shutdown. */
		wait_until(&read.done, CHECK_OP_TIMEOUT_MS);
		check(kill(pid_of(pid), SIGCONT) == 0,
		      "pg: server process %s continued", pid);
		if (!read.done)
			bail_out("read from a stopped server process");
		check_deadline_failure(&stopped, &read, started);
	}
	/* The connection the bound ended is closed, and the server process
	 * behind it ends once it runs again. */
	rc = await(
		&again,
		backend_exec(victim, "SELECT 1", on_done, &again, &again.err),
		"exec after the bound");
	check(rc == RS_ECONNECT,
	      "pg: exec on the closed connection fails "
	      "with RS_ECONNECT (%d)",
	      rc);
	check(process_ends(pid_of(pid)),
	      "pg: the stopped server process ended within %d ms of "
	      "continuing",
	      CHECK_GONE_MS);

	/* A longer bound for one operation, then the configured one back. */
	rc = open_bounded("pg-slow", engine->url, CHECK_CONNECT_MS,
	                  CHECK_DEADLINE_MS, &slow_backend, &err);
	if (!check_status(rc, &err, "pg: a connection with a %d ms bound",
	                  CHECK_DEADLINE_MS) ||
	    (slow_pid = server_id(engine, slow_backend, helper)) == NULL)
		goto out;
	backend_set_op_timeout(slow_backend, 3 * CHECK_DEADLINE_MS);
	rc = run_sql(slow_backend, "SELECT pg_sleep(1.5)", &err);
	check_status(rc, &err,
	             "pg: pg_sleep(1.5) finishes under a bound of %d ms set "
	             "for it",
	             3 * CHECK_DEADLINE_MS);
	backend_set_op_timeout(slow_backend, 0);
	timed_sql(slow_backend, "SELECT pg_sleep(60)", &sleep, &started);
	check_deadline_failure(&slow, &sleep, started);
	/* client_connection_check_interval: the server sees the closed
	 * connection and stops the statement, long before its 60 s. */
	check(process_ends(pid_of(slow_pid)),
	      "pg: the server stopped pg_sleep(60) within %d ms of the "
	      "connection closing",
	      CHECK_GONE_MS);
out:
	if (helper != NULL && pid != NULL)
		setup_sql(helper, "DROP TABLE IF EXISTS rs_check_pids");
	close_backend(slow_backend);
	close_backend(helper);
	close_backend(victim);
	grid_free(&rows);
	free(pid);
	free(slow_pid);
}

/* MariaDB: a statement that runs too long, and a write that waits for a
 * global read lock (lock_wait_timeout is a year by default, and
 * innodb_lock_wait_timeout does not apply), each end at the bound, and
 * the write leaves nothing behind. */
static void
check_deadline_my(struct engine *engine)
{
	const struct deadline_case sleeping = {
		.what = "my: SELECT SLEEP(5) under a bound set for it",
		.shard = "my-sleep",
		.bound_ms = CHECK_DEADLINE_MS,
		.hint = "the bound this step sets for itself",
		.afterwards = "the connection was closed",
	};
	const struct deadline_case blocked = {
		.what = "my: an upsert behind FLUSH TABLES WITH READ LOCK",
		.shard = "my-blocked",
		.bound_ms = CHECK_DEADLINE_MS,
		.hint = "options.operation_timeout_seconds",
		.afterwards = "the connection was closed",
	};
	struct rs_backend *sleeper = NULL, *writer = NULL, *helper = NULL;
	struct rs_table_def *table = NULL, *after_def = NULL;
	struct snapshot after = {0};
	struct rs_err err;
	struct call sleep = {0}, write = {0}, again = {0};
	const struct rs_value row[2] = {{"blocked", 7}, {"1", 1}};
	struct rs_rows rows = {1, 2, row};
	uint64_t started;
	int rc, locked = 0;

	rc = open_backend("my-sleep", engine->url, CHECK_CONNECT_MS, &sleeper,
	                  &err);
	if (rc == 0)
		rc = open_bounded("my-blocked", engine->url, CHECK_CONNECT_MS,
		                  CHECK_DEADLINE_MS, &writer, &err);
	if (rc == 0)
		rc = open_backend("my-helper", engine->url, CHECK_CONNECT_MS,
		                  &helper, &err);
	if (!check_status(rc, &err, "my: connections for the bound checks"))
		goto out;

	backend_set_op_timeout(sleeper, CHECK_DEADLINE_MS);
	timed_sql(sleeper, "SELECT SLEEP(5)", &sleep, &started);
	check_deadline_failure(&sleeping, &sleep, started);
	rc = await(
		&again,
		backend_exec(sleeper, "SELECT 1", on_done, &again, &again.err),
		"exec after the bound");
	check(rc == RS_ECONNECT,
	      "my: exec on the closed connection fails "
	      "with RS_ECONNECT (%d)",
	      rc);

	if (setup_sql(helper, "DROP TABLE IF EXISTS rs_check_pids") != 0 ||
	    setup_sql(helper, "CREATE TABLE rs_check_pids (who varchar(8) "
	                      "PRIMARY KEY, pid bigint)") != 0 ||
	    describe(writer, "rs_check_pids", &table, &err) != 0 ||
	    setup_sql(helper, "FLUSH TABLES WITH READ LOCK") != 0)
		goto out;
	locked = 1;
	started = op_started();
	await(&write,
	      backend_upsert(writer, table, &rows, on_done, &write, &write.err),
	      "upsert behind a global read lock");
	check_deadline_failure(&blocked, &write, started);
	if (setup_sql(helper, "UNLOCK TABLES") != 0)
		goto out;
	locked = 0;
	if (read_table(helper, "rs_check_pids", &after_def, &after) == 0)
		check(after.canon.n_rows == 0,
		      "my: the upsert the bound ended wrote nothing (%d rows)",
		      after.canon.n_rows);
out:
	if (locked)
		setup_sql(helper, "UNLOCK TABLES");
	if (helper != NULL)
		setup_sql(helper, "DROP TABLE IF EXISTS rs_check_pids");
	if (after_def != NULL)
		snapshot_free(&after);
	backend_table_free(after_def);
	backend_table_free(table);
	close_backend(helper);
	close_backend(writer);
	close_backend(sleeper);
}

/* SQLite: a write that waits for another connection's exclusive lock ends
 * at the bound, or at the lock timeout (SQLITE_BUSY, RS_EQUERY) when that
 * comes first; a statement that runs too long is interrupted, and the
 * connection stays usable. */
static void
check_deadline_sqlite(struct engine *engine)
{
	const struct deadline_case locked = {
		.what = "lite: an insert behind another connection's lock",
		.shard = "lite-locked",
		.bound_ms = CHECK_DEADLINE_MS,
		.hint = "options.operation_timeout_seconds",
		.afterwards = "the statement was stopped",
	};
	const struct deadline_case counting = {
		.what = "lite: counting to a billion",
		.shard = "lite-locked",
		.bound_ms = CHECK_DEADLINE_MS,
		.hint = "options.operation_timeout_seconds",
		.afterwards = "the statement was stopped",
	};
	static const char insert[] = "INSERT INTO rs_check_lock VALUES (1)";
	struct rs_backend *bounded = NULL, *plain = NULL;
	struct call write = {0}, busy = {0}, count = {0};
	struct rs_err err;
	sqlite3 *holder = NULL;
	uint64_t started;
	int rc;

	rc = open_bounded("lite-locked", engine->url, CHECK_CONNECT_MS,
	                  CHECK_DEADLINE_MS, &bounded, &err);
	if (rc == 0)
		rc = open_backend("lite-busy", engine->url, CHECK_CONNECT_MS,
		                  &plain, &err);
	if (!check_status(rc, &err, "lite: connections for the bound checks") ||
	    setup_sql(plain, "DROP TABLE IF EXISTS rs_check_lock") != 0 ||
	    setup_sql(plain, "CREATE TABLE rs_check_lock (id INTEGER)") != 0)
		goto out;
	/* Another client holds the database's exclusive lock. */
	rc = sqlite3_open(bounded->url.database, &holder);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(holder, "BEGIN EXCLUSIVE", NULL, NULL, NULL);
	if (!check(rc == SQLITE_OK,
	           "lite: another connection holds the "
	           "exclusive lock%s%s",
	           rc != SQLITE_OK ? ": " : "",
	           rc != SQLITE_OK ? sqlite3_errstr(rc) : ""))
		goto out;
	timed_sql(bounded, insert, &write, &started);
	check_deadline_failure(&locked, &write, started);
	/* With the default bound the lock timeout (2 s) ends the wait. */
	timed_sql(plain, insert, &busy, &started);
	check(busy.status == RS_EQUERY &&
	              strstr(busy.err.message, "locked") != NULL &&
	              busy.ended_ms - started < CHECK_OP_TIMEOUT_MS,
	      "lite: with the default bound the lock timeout ends the wait: "
	      "RS_EQUERY after %" PRIu64 " ms (%d: %s)",
	      busy.ended_ms - started, busy.status, busy.err.message);
	sqlite3_exec(holder, "ROLLBACK", NULL, NULL, NULL);

	timed_sql(bounded,
	          "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 "
	          "FROM c WHERE x < 1000000000) SELECT count(*) FROM c",
	          &count, &started);
	check_deadline_failure(&counting, &count, started);
	rc = run_sql(bounded, insert, &err);
	check_status(rc, &err, "lite: the connection works after the bound");
out:
	sqlite3_close(holder);
	if (plain != NULL)
		setup_sql(plain, "DROP TABLE IF EXISTS rs_check_lock");
	close_backend(plain);
	close_backend(bounded);
}

/* ---- 7. keys across engines ---- */

/*
 * One logical table on every engine, xkeys (k, at, flag, v), whose key is
 * made of the kinds that are not their own canonical form: bytes
 * (bytea, VARBINARY(16), BLOB), an instant (timestamptz, TIMESTAMP(6),
 * SQLite TIMESTAMPTZ) and a boolean (boolean, tinyint(1), BOOLEAN).
 *
 * The rows are listed in key order, and that order is the same on every
 * engine: k comes first and bytea, VARBINARY and BLOB all compare
 * bytewise (memcmp, a prefix first; 0x80 above 0x7f), and k alone orders
 * every row but those of k = 01 and k = 7f.  There, at decides: an
 * instant on PostgreSQL and MariaDB, text on SQLite, which for the one
 * form sqlite.c writes ("YYYY-MM-DD HH:MM:SS", then ".ffffff" when the
 * fraction is not zero) orders as the instants do; then flag, false
 * before true and 0 before 1.  Those rows share k so that a bound whose
 * k equals the next row's must be compared on at and flag too: the
 * first batch of XKEYS_BATCH ends on (01, 2024-01-01 00:00:00, f), and
 * the next row differs from it in flag only.  MariaDB's TIMESTAMP range
 * (1970-01-01 00:00:01 to 2038-01-19 03:14:07.999999 UTC) bounds at.
 */
struct xkey {
	const char *hex;  /* k, as lowercase hex */
	const char *utc;  /* at in UTC: "YYYY-MM-DD HH:MM:SS" */
	const char *frac; /* its microseconds, six digits, or "" for none */
	int flag;
};

/* The longest k VARBINARY(16) holds, all 0xff: the last key. */
#define XKEYS_FF16 "ffffffffffffffffffffffffffffffff"

static const struct xkey xkeys_rows[] = {
	{"", "1970-01-01 00:00:01", "", 0},
	{"00", "2024-02-29 12:00:00", "", 1},
	{"0000", "2024-02-29 12:00:00", "500000", 0},
	{"000000", "2000-01-01 00:00:00", "", 1},
	{"0001", "1999-12-31 23:59:59", "999999", 0},
	{"00ff", "2010-06-15 08:30:00", "123456", 1},
	{"01", "2024-01-01 00:00:00", "", 0},
	{"01", "2024-01-01 00:00:00", "", 1},
	{"01", "2024-01-01 00:00:00", "000001", 0},
	{"01", "2024-01-01 00:00:00", "500000", 1},
	{"0100", "2021-03-14 01:59:26", "535897", 0},
	{"02", "2012-12-21 11:11:11", "", 1},
	{"0a", "2015-10-21 16:29:00", "", 0},
	{"10", "2001-09-09 01:46:40", "", 1},
	{"1f", "2009-02-13 23:31:30", "", 0},
	{"20", "1985-10-26 01:21:00", "100000", 1},
	{"2020", "1985-10-26 01:22:00", "", 0},
	{"27", "1990-01-01 00:00:00", "", 1},
	{"41", "1995-05-05 05:05:05", "050505", 0},
	{"4142", "1995-05-05 05:05:05", "", 1},
	{"414243", "1995-05-05 05:05:06", "", 0},
	{"5c", "2005-07-07 07:07:07", "000007", 1},
	{"61", "2011-11-11 11:11:11", "", 0},
	{"7e", "2016-02-29 00:00:00", "", 1},
	{"7f", "1999-12-31 23:59:59", "999999", 1},
	{"7f", "2000-01-01 00:00:00", "", 0},
	{"7f", "2000-01-01 00:00:00", "", 1},
	{"7fff", "2020-02-02 02:02:02", "", 0},
	{"80", "2020-02-02 02:02:02", "200000", 1},
	{"8000", "1977-05-25 17:00:00", "", 0},
	{"81", "1980-05-21 09:00:00", "", 1},
	{"c0", "1983-05-25 20:00:00", "000010", 0},
	{"c3a9", "2019-12-20 00:00:00", "", 1},
	{"de", "2002-02-02 20:02:02", "", 0},
	{"deadbeef", "2003-03-03 03:03:03", "300000", 1},
	{"e0", "2004-04-04 04:04:04", "", 0},
	{"f0", "2006-06-06 06:06:06", "", 1},
	{"fe", "2007-07-07 07:07:07", "700000", 0},
	{"fe00", "2008-08-08 08:08:08", "", 1},
	{"feff", "2013-01-13 13:13:13", "", 0},
	{"ff", "2014-04-14 14:14:14", "", 1},
	{"ff00", "2017-07-17 17:17:17", "170000", 0},
	{"ff01", "2018-08-18 18:18:18", "", 1},
	{"ffff", "2022-02-22 22:22:22", "", 0},
	{"ffff00", "2023-03-23 23:23:23", "230000", 1},
	{"ffffff", "2025-05-25 05:25:25", "", 0},
	{"ffffff00", "2030-03-30 03:30:30", "", 1},
	{"ffffffff", "2037-12-31 23:59:59", "999999", 0},
	{"ffffffffffffffffffffffffffffff", "2038-01-19 03:14:07", "", 1},
	{XKEYS_FF16, "2038-01-19 03:14:07", "999999", 0},
};
#define N_XKEYS     ((int)(sizeof(xkeys_rows) / sizeof(xkeys_rows[0])))
#define XKEYS_BATCH 7 /* batches of a read of xkeys */

/* The kinds xkeys must be described with, on every engine. */
static const enum rs_col_kind xkeys_kinds[] = {
	RS_COL_BYTES,
	RS_COL_TIMESTAMPTZ,
	RS_COL_BOOL,
	RS_COL_TEXT,
};

/* Whether TABLE is xkeys: its columns' kinds and the key (k, at, flag). */
static int
xkeys_described(const struct rs_table_def *table)
{
	if (table->n_columns != 4 || table->n_pk != 3 || table->pk[0] != 0 ||
	    table->pk[1] != 1 || table->pk[2] != 2)
		return 0;
	for (int c = 0; c < 4; c++)
		if (table->columns[c].kind != xkeys_kinds[c]) {
			diag("column %s (%s) is %s, %s expected",
			     table->columns[c].name, table->columns[c].type,
			     canonical_kind_name(table->columns[c].kind),
			     canonical_kind_name(xkeys_kinds[c]));
			return 0;
		}
	return 1;
}

/* ROW's at as PostgreSQL input with a UTC offset: +00, +05:30 or -08:00
 * in turn, the same instant written in another zone's clock. */
static char *
xkeys_pg_at(const struct xkey *row, int i)
{
	static const struct {
		int seconds;
		const char *suffix;
	} zones[] = {{0, "+00"}, {19800, "+05:30"}, {-28800, "-08:00"}};
	struct tm tm = {0};
	char clock[32];
	time_t t;

	sscanf(row->utc, "%d-%d-%d %d:%d:%d", &tm.tm_year, &tm.tm_mon,
	       &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec);
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	t = timegm(&tm) + zones[i % 3].seconds;
	gmtime_r(&t, &tm);
	strftime(clock, sizeof(clock), "%Y-%m-%d %H:%M:%S", &tm);
	return xprintf("%s%s%s%s", clock, row->frac[0] != '\0' ? "." : "",
	               row->frac, zones[i % 3].suffix);
}

/* ROW's microseconds without trailing zeros ("500000" → "5"), as users
 * write them, with the point; "" when there are none. */
static char *
xkeys_short_frac(const struct xkey *row)
{
	size_t n = strlen(row->frac);

	while (n > 0 && row->frac[n - 1] == '0')
		n--;
	return n == 0 ? xprintf("%s", "") : xprintf(".%.*s", (int)n, row->frac);
}

/* The INSERT of every row of xkeys_rows in ENGINE's own SQL: PostgreSQL
 * '\x…' bytea, offsets and true/false; MariaDB X'…', UTC (the session's
 * zone) and TRUE/FALSE; SQLite X'…' BLOBs, timestamps as sqlite.c writes
 * them (sqlite_time_text: a space, no 'Z', six digits or no fraction)
 * and 1/0. */
static char *
xkeys_insert(int engine)
{
	char *sql = xprintf("%s", "INSERT INTO xkeys (k, at, flag, v) VALUES ");

	for (int i = 0; i < N_XKEYS; i++) {
		const struct xkey *row = &xkeys_rows[i];
		char *at = engine == ENG_PG       ? xkeys_pg_at(row, i)
		           : engine == ENG_MY     ? xkeys_short_frac(row)
		           : row->frac[0] != '\0' ? xprintf(".%s", row->frac)
		                                  : xprintf("%s", "");
		char *more;

		if (engine == ENG_PG)
			more = xprintf("%s%s('\\x%s', '%s', %s, 'row %d')", sql,
			               i > 0 ? ", " : "", row->hex, at,
			               row->flag ? "true" : "false", i + 1);
		else
			more = xprintf("%s%s(X'%s', '%s%s', %s, 'row %d')", sql,
			               i > 0 ? ", " : "", row->hex, row->utc,
			               at,
			               engine == ENG_MY
			                       ? (row->flag ? "TRUE" : "FALSE")
			               : row->flag ? "1"
			                           : "0",
			               i + 1);
		free(at);
		free(sql);
		sql = more;
	}
	return sql;
}

/* The canonical keys of xkeys_rows, in order: hex, the instant as
 * "YYYY-MM-DDTHH:MM:SS.ffffffZ", t or f. */
static void
xkeys_expected(struct grid *keys)
{
	grid_init(keys, 3);
	for (int i = 0; i < N_XKEYS; i++) {
		const struct xkey *row = &xkeys_rows[i];
		struct cell *key = grid_add_row(keys);
		char *at = xprintf("%.10sT%s.%sZ", row->utc, row->utc + 11,
		                   row->frac[0] != '\0' ? row->frac : "000000");

		cell_set(&key[0], row->hex, strlen(row->hex));
		cell_set(&key[1], at, strlen(at));
		cell_set(&key[2], row->flag ? "t" : "f", 1);
		free(at);
	}
}

/* Rows ROWS (N of them) of FROM, in that order, into OUT. */
static void
grid_pick(const struct grid *from, const int *rows, int n, struct grid *out)
{
	grid_init(out, from->n_cols);
	for (int i = 0; i < n; i++) {
		struct cell *to = grid_add_row(out);

		for (int c = 0; c < from->n_cols; c++)
			cell_set(&to[c], grid_row(from, rows[i])[c].text,
			         grid_row(from, rows[i])[c].len);
	}
}

/* Read TABLE's keys only (no other column) after AFTER (NULL: from the
 * first) up to UPTO (NULL: to the end), in batches of LIMIT, each batch
 * continuing after the last key read, until an empty batch; append them
 * to KEYS (n_pk columns).  Returns 0, or the failure with ERR filled. */
static int
read_keys(struct rs_backend *backend, const struct rs_table_def *table,
          const struct rs_value *after, const struct rs_value *upto, int limit,
          struct grid *keys, struct rs_err *err)
{
	struct rs_value *last = xcalloc((size_t)table->n_pk, sizeof(*last));
	int rc = 0;

	memset(err, 0, sizeof(*err));
	for (;;) {
		struct rs_read_request request = {
			.table = table,
			.after = after,
			.upto = upto,
			.limit = limit,
		};
		struct call call = {.rows = keys};

		rc = await(&call,
		           backend_read_batch(backend, &request, on_rows, &call,
		                              &call.err),
		           "read_batch");
		if (rc != 0) {
			*err = call.err;
			break;
		}
		if (call.batch_rows == 0)
			break;
		if (call.batch_rows > limit || keys->n_rows > CHECK_MAX_ROWS) {
			rc = RS_EINTERNAL;
			snprintf(
				err->message, sizeof(err->message),
				"read_batch returned %d rows for a limit of %d "
				"(%d in all)",
				call.batch_rows, limit, keys->n_rows);
			break;
		}
		/* Continue after the last key read, canonical as read. */
		for (int k = 0; k < table->n_pk; k++) {
			last[k].text = grid_row(keys, keys->n_rows - 1)[k].text;
			last[k].len = grid_row(keys, keys->n_rows - 1)[k].len;
		}
		after = last;
	}
	free(last);
	return rc;
}

/* Check that GOT holds exactly WANT's keys, in WANT's order, byte for
 * byte; the first difference is printed.  Returns 1 when they do. */
static int
compare_keys(const char *what, const struct grid *want, const struct grid *got)
{
	int n = want->n_rows < got->n_rows ? want->n_rows : got->n_rows;
	int r = 0;
	char line[1024];

	for (; r < n; r++) {
		int same = 1;

		for (int c = 0; c < want->n_cols && same; c++) {
			const struct cell *a = &grid_row(want, r)[c];
			const struct cell *b = &grid_row(got, r)[c];

			same = (a->text == NULL) == (b->text == NULL) &&
			       a->len == b->len &&
			       (a->len == 0 ||
			        memcmp(a->text, b->text, a->len) == 0);
		}
		if (!same)
			break;
	}
	if (!check(r == n && want->n_rows == got->n_rows,
	           "%s: the same %d keys in the same order, byte for byte "
	           "(%d)",
	           what, want->n_rows, got->n_rows))
		for (int side = 0; side < 2; side++) {
			const struct grid *g = side == 0 ? want : got;

			if (r < g->n_rows) {
				row_print(line, sizeof(line), g, r);
				diag("%s key %d: %s",
				     side == 0 ? "want" : "got ", r + 1, line);
			} else {
				diag("%s no key %d",
				     side == 0 ? "want" : "got ", r + 1);
			}
		}
	return r == n && want->n_rows == got->n_rows;
}

/* Read all of xkeys on ENGINE and compare its keys with WANT. */
static void
check_xkeys_rows(struct engine *engine, const struct grid *want,
                 const char *step)
{
	char *what = xprintf("%s: xkeys %s", engine->shard, step);
	struct grid got;
	struct rs_err err;
	int rc;

	grid_init(&got, 3);
	rc = read_keys(engine->backend, engine->xkeys, NULL, NULL, XKEYS_BATCH,
	               &got, &err);
	if (rc != 0)
		check(0, "%s: read_batch: %s", what, err.message);
	else
		compare_keys(what, want, &got);
	grid_free(&got);
	free(what);
}

/* Ranges of PostgreSQL's keys PG read on every engine: exactly the keys
 * PostgreSQL has between them.  Keys count from 1, as in check_ranges. */
static void
check_xkeys_ranges(struct engine *engines, const struct grid *pg)
{
	const struct {
		int after, upto, limit; /* indexes into PG; batch size */
	} cases[] = {
		{9, 33, XKEYS_BATCH}, /* from one k to another */
		{6, 8, 1},            /* within k = 01: on at and flag */
		{24, N_XKEYS - 1, 2}, /* from inside k = 7f to the last */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rs_value *after = grid_values(pg, cases[i].after, 1);
		struct rs_value *upto = grid_values(pg, cases[i].upto, 1);
		int n = cases[i].upto - cases[i].after;
		int *rows = xcalloc((size_t)n, sizeof(int));
		struct grid want;

		for (int r = 0; r < n; r++)
			rows[r] = cases[i].after + 1 + r;
		grid_pick(pg, rows, n, &want);
		for (int e = 0; e < N_ENGINES; e++) {
			char *what = xprintf(
				"%s: xkeys read after key %d up to key %d of "
				"PostgreSQL's, in batches of %d",
				engines[e].shard, cases[i].after + 1,
				cases[i].upto + 1, cases[i].limit);
			struct grid got;
			struct rs_err err;
			int rc;

			grid_init(&got, 3);
			rc = read_keys(engines[e].backend, engines[e].xkeys,
			               after, upto, cases[i].limit, &got, &err);
			if (rc != 0)
				check(0, "%s: read_batch: %s", what,
				      err.message);
			else
				compare_keys(what, &want, &got);
			grid_free(&got);
			free(what);
		}
		grid_free(&want);
		free(rows);
		free(after);
		free(upto);
	}
}

/* The keys group 7 deletes from PostgreSQL's list: the empty k, both
 * ends, and keys inside k = 01 and k = 7f. */
static const int xkeys_deleted[] = {0, 1, 7, 8, 17, 25, 30, 41, 48, 49};
#define N_XKEYS_DELETED                                                        \
	((int)(sizeof(xkeys_deleted) / sizeof(xkeys_deleted[0])))

/* Delete the keys KEYS (read from PostgreSQL) on ENGINE, twice: exactly
 * those go, leaving REST, and the second time nothing goes and nothing
 * fails. */
static void
check_xkeys_delete(struct engine *engine, const struct grid *keys,
                   const struct grid *rest)
{
	struct rs_value *values = grid_values(keys, 0, keys->n_rows);
	struct rs_rows key_rows = {keys->n_rows, keys->n_cols, values};
	struct rs_err err;

	for (int round = 0; round < 2; round++) {
		int rc = delete_keys(engine->backend, engine->xkeys, &key_rows,
		                     &err);

		check_status(rc, &err,
		             "%s: xkeys: delete_keys of %d of PostgreSQL's "
		             "keys%s",
		             engine->shard, keys->n_rows,
		             round > 0 ? " again" : "");
		check_xkeys_rows(engine, rest,
		                 round == 0 ? "after delete_keys"
		                            : "after a repeated delete_keys");
	}
	free(values);
}

/* A SQLite row whose key is stored otherwise than its canonical form
 * binds back (INSERT), in COLUMN: reading xkeys fails with RS_EKEY naming
 * the table and the column, rather than bound a range inexactly; with
 * the row gone again (REMOVE), xkeys reads as before (WANT). */
static void
check_xkeys_refused(struct engine *lite, const struct grid *want,
                    const char *insert, const char *remove, const char *column,
                    const char *what)
{
	char *table = xprintf("table xkeys: primary key column %s ", column);
	struct grid got;
	struct rs_err err;
	int rc;

	if (setup_sql(lite->backend, insert) != 0) {
		free(table);
		return;
	}
	grid_init(&got, 3);
	rc = read_keys(lite->backend, lite->xkeys, NULL, NULL, XKEYS_BATCH,
	               &got, &err);
	check(rc == RS_EKEY && err.code == RS_EKEY &&
	              strstr(err.message, table) != NULL,
	      "lite: xkeys with %s: the read fails with RS_EKEY naming the "
	      "table and column %s (%d)",
	      what, column, rc);
	diag("%s", err.message);
	grid_free(&got);
	free(table);
	if (setup_sql(lite->backend, remove) == 0)
		check_xkeys_rows(lite, want, "with that row removed");
}

static void
check_keys(struct engine *engines)
{
	struct grid want, keys[N_ENGINES];
	int ready = 1, complete = 1;

	xkeys_expected(&want);
	for (int i = 0; i < N_ENGINES; i++) {
		struct engine *e = &engines[i];
		char *insert = xkeys_insert(i), *what;
		struct rs_err err;
		int rc;

		grid_init(&keys[i], 3);
		rc = fresh_table(e, "xkeys", e->sql->xkeys_ddl);
		if (rc == 0) {
			rc = run_sql(e->backend, insert, &err);
			check_status(rc, &err,
			             "%s: xkeys: %d rows inserted with the "
			             "engine's own SQL",
			             e->shard, N_XKEYS);
		}
		free(insert);
		if (rc == 0) {
			rc = describe(e->backend, "xkeys", &e->xkeys, &err);
			check_status(rc, &err, "%s: describe xkeys", e->shard);
		}
		if (rc == 0 &&
		    !check(xkeys_described(e->xkeys),
		           "%s: xkeys described as (bytes, timestamptz, bool, "
		           "text), key (k, at, flag)",
		           e->shard))
			rc = -1;
		if (rc != 0) {
			ready = complete = 0;
			continue;
		}
		/* A read that fails part way keeps the keys it read: the
		 * comparisons below say how they differ. */
		rc = read_keys(e->backend, e->xkeys, NULL, NULL, XKEYS_BATCH,
		               &keys[i], &err);
		if (rc != 0) {
			check(0, "%s: xkeys: read_batch after %d keys: %s",
			      e->shard, keys[i].n_rows, err.message);
			complete = 0;
		} else {
			check(keys[i].n_rows == N_XKEYS,
			      "%s: xkeys: %d keys read in batches of %d (%d)",
			      e->shard, N_XKEYS, XKEYS_BATCH, keys[i].n_rows);
		}
		what = xprintf("%s: xkeys keys are canonical", e->shard);
		compare_keys(what, &want, &keys[i]);
		free(what);
	}
	if (ready) {
		compare_keys("xkeys: MariaDB's keys = PostgreSQL's",
		             &keys[ENG_PG], &keys[ENG_MY]);
		compare_keys("xkeys: SQLite's keys = PostgreSQL's",
		             &keys[ENG_PG], &keys[ENG_LITE]);
	}
	if (complete && keys[ENG_PG].n_rows == N_XKEYS) {
		int kept[N_XKEYS], n_kept = 0;
		struct grid deleted, rest;

		check_xkeys_ranges(engines, &keys[ENG_PG]);
		for (int r = 0, d = 0; r < keys[ENG_PG].n_rows; r++) {
			if (d < N_XKEYS_DELETED && xkeys_deleted[d] == r)
				d++;
			else if (n_kept < N_XKEYS)
				kept[n_kept++] = r;
		}
		grid_pick(&keys[ENG_PG], xkeys_deleted, N_XKEYS_DELETED,
		          &deleted);
		grid_pick(&keys[ENG_PG], kept, n_kept, &rest);
		check_xkeys_delete(&engines[ENG_MY], &deleted, &rest);
		check_xkeys_delete(&engines[ENG_LITE], &deleted, &rest);

		check_xkeys_refused(
			&engines[ENG_LITE], &rest,
			"INSERT INTO xkeys VALUES "
			"('zz', '2024-01-01 00:00:00', 0, 'text in a BLOB')",
			"DELETE FROM xkeys WHERE typeof(k) = 'text'", "k",
			"text in its BLOB key column k");
		check_xkeys_refused(&engines[ENG_LITE], &rest,
		                    "INSERT INTO xkeys VALUES "
		                    "(X'03', '2024-01-01T00:00:00', 0, 'a T')",
		                    "DELETE FROM xkeys WHERE k = X'03'", "at",
		                    "a timestamp written with a 'T'");
		grid_free(&deleted);
		grid_free(&rest);
	}
	for (int i = 0; i < N_ENGINES; i++)
		grid_free(&keys[i]);
	grid_free(&want);
}

/* ==== PostgreSQL operations: count, fence, marker, delete log, replication
 * (check_pg_ops; promote, promoted and release: --promote-pg, pg_promote_mode)
 * ==== */

#define PGX_TABLE          "rs_check_ops"
#define PGX_TABLE2         "rs_check_ops2"
#define PGX_LOCKED         "rs_check_lock"
#define PGX_FENCE_SQLSTATE "RS001" /* pg_sql.h's PG_SQL_FENCE_SQLSTATE */
#define PGX_FENCE_MSG                                                          \
	"writes paused by reshard: run it's \"orders\" \\ 2x — step fence"

/* A check whose message shows what its condition's operations found:
 * the condition runs first (in check's arguments the order is not
 * defined). */
#define PGX_CHECK(cond, ...)                                                   \
	do {                                                                   \
		int pgx_ok_ = (cond);                                          \
		check(pgx_ok_, __VA_ARGS__);                                   \
	} while (0)

/* An operation's outcome with what the replication and marker callbacks
 * hand over, copied. */
struct pgx_call {
	struct call call;
	int64_t value;
	struct rs_marker markers[8];
	int n_markers;
	char text[RS_POSITION_SIZE];
	struct rs_replication repl;
};

static void
pgx_on_count(struct rs_backend *backend, int status, const struct rs_err *err,
             int64_t value, void *arg)
{
	struct pgx_call *x = arg;

	(void)backend;
	x->value = value;
	call_end(&x->call, status, err);
}

static void
pgx_on_markers(struct rs_backend *backend, int status, const struct rs_err *err,
               const struct rs_marker *markers, int n, void *arg)
{
	struct pgx_call *x = arg;

	(void)backend;
	x->n_markers = 0;
	for (int i = 0; status == 0 && i < n && i < 8; i++)
		x->markers[x->n_markers++] = markers[i];
	if (status == 0 && n > 8)
		x->n_markers = n; /* more than kept: the check fails */
	call_end(&x->call, status, err);
}

static void
pgx_on_position(struct rs_backend *backend, int status,
                const struct rs_err *err, const char *position, void *arg)
{
	struct pgx_call *x = arg;

	(void)backend;
	snprintf(x->text, sizeof(x->text), "%s",
	         position != NULL ? position : "(null)");
	call_end(&x->call, status, err);
}

static void
pgx_on_replication(struct rs_backend *backend, int status,
                   const struct rs_err *err, const struct rs_replication *state,
                   void *arg)
{
	struct pgx_call *x = arg;

	(void)backend;
	if (state != NULL)
		x->repl = *state;
	call_end(&x->call, status, err);
}

/* Each wrapper runs one operation and returns its status, X holding the
 * outcome (and the failure in x->call.err). */
static int
pgx_count(struct rs_backend *b, const char *table, struct pgx_call *x)
{
	*x = (struct pgx_call){0};
	return await(&x->call,
	             backend_count(b, table, pgx_on_count, x, &x->call.err),
	             "count");
}

static int
pgx_fenced(struct rs_backend *b, const char *table, struct pgx_call *x)
{
	*x = (struct pgx_call){0};
	return await(&x->call,
	             backend_fenced(b, table, pgx_on_count, x, &x->call.err),
	             "fenced");
}

static int
pgx_fence(struct rs_backend *b, const char *const *tables, int n, int on,
          const struct rs_marker *marker, struct pgx_call *x)
{
	*x = (struct pgx_call){0};
	return await(&x->call,
	             backend_fence(b, tables, n, PGX_FENCE_MSG, on, marker,
	                           NULL, on_done, &x->call, &x->call.err),
	             "fence");
}

static int
pgx_markers(struct rs_backend *b, struct pgx_call *x)
{
	*x = (struct pgx_call){0};
	return await(&x->call,
	             backend_markers(b, pgx_on_markers, x, &x->call.err),
	             "markers");
}

static int
pgx_mark(struct rs_backend *b, const struct rs_marker *m, struct pgx_call *x)
{
	*x = (struct pgx_call){0};
	return await(&x->call,
	             backend_mark(b, m, on_done, &x->call, &x->call.err),
	             "mark");
}

static int
pgx_delete_log(struct rs_backend *b, const struct rs_table_def *t, int on,
               struct pgx_call *x)
{
	*x = (struct pgx_call){0};
	return await(
		&x->call,
		backend_delete_log(b, t, on, on_done, &x->call, &x->call.err),
		"delete_log");
}

static int
pgx_purge(struct rs_backend *b, const struct rs_table_def *t,
          const struct rs_rows *keys, struct pgx_call *x)
{
	*x = (struct pgx_call){0};
	return await(
		&x->call,
		backend_purge_keys(b, t, keys, on_done, &x->call, &x->call.err),
		"purge_keys");
}

static int
pgx_replica_check(struct rs_backend *p, struct rs_backend *r, int max_lag_ms,
                  struct pgx_call *x)
{
	*x = (struct pgx_call){0};
	return await(&x->call,
	             backend_replica_check(p, r, max_lag_ms, on_done, &x->call,
	                                   &x->call.err),
	             "replica_check");
}

static int
pgx_downstream_lag(struct rs_backend *b, struct pgx_call *x)
{
	*x = (struct pgx_call){0};
	return await(&x->call,
	             backend_downstream_lag(b, pgx_on_count, x, &x->call.err),
	             "downstream_lag");
}

static int
pgx_position(struct rs_backend *p, struct pgx_call *x)
{
	*x = (struct pgx_call){0};
	return await(&x->call,
	             backend_position(p, pgx_on_position, x, &x->call.err),
	             "position");
}

static int
pgx_catch_up(struct rs_backend *p, struct rs_backend *r, const char *pos,
             int slice_ms, struct pgx_call *x)
{
	*x = (struct pgx_call){0};
	return await(&x->call,
	             backend_catch_up(p, r, pos, slice_ms, pgx_on_replication,
	                              x, &x->call.err),
	             "catch_up");
}

static int
pgx_promote(struct rs_backend *r, struct pgx_call *x)
{
	*x = (struct pgx_call){0};
	return await(&x->call,
	             backend_promote(r, on_done, &x->call, &x->call.err),
	             "promote");
}

static int
pgx_promoted(struct rs_backend *r, struct pgx_call *x)
{
	*x = (struct pgx_call){0};
	return await(&x->call,
	             backend_promoted(r, pgx_on_count, x, &x->call.err),
	             "promoted");
}

static int
pgx_release(struct rs_backend *p, struct rs_backend *r, struct pgx_call *x)
{
	*x = (struct pgx_call){0};
	return await(&x->call,
	             backend_release(p, r, pgx_on_position, x, &x->call.err),
	             "release");
}

/* Whether the SQL condition COND holds on B (asked in a DO block, which
 * a standby runs too). */
static int
pgx_holds(struct rs_backend *b, const char *cond)
{
	char *sql = xprintf("DO $check$BEGIN IF NOT (%s) THEN RAISE EXCEPTION "
	                    "'no'; END IF; END$check$",
	                    cond);
	int rc = run_sql(b, sql, NULL);

	free(sql);
	return rc == 0;
}

/* Whether MESSAGE names every one of the N strings WANT. */
static int
pgx_names(const char *message, int n, ...)
{
	va_list ap;
	int ok = 1;

	va_start(ap, n);
	for (int i = 0; i < n; i++)
		ok &= strstr(message, va_arg(ap, const char *)) != NULL;
	va_end(ap);
	return ok;
}

/* A marker of plan PLAN in STATE. */
static struct rs_marker
pgx_marker(const char *plan, const char *state, int64_t epoch)
{
	struct rs_marker m = {.epoch = epoch};

	snprintf(m.plan, sizeof(m.plan), "%s", plan);
	snprintf(m.run_id, sizeof(m.run_id), "0123456789abcdef");
	snprintf(m.state, sizeof(m.state), "%s", state);
	return m;
}

/* Whether TEXT is a UTC "YYYY-MM-DD HH:MM:SS" within two minutes of
 * now. */
static int
pgx_recent_utc(const char *text)
{
	struct tm tm = {0};
	const char *end = strptime(text, "%Y-%m-%d %H:%M:%S", &tm);
	time_t at;

	if (end == NULL || *end != '\0' || strlen(text) != 19)
		return 0;
	at = timegm(&tm);
	return llabs((long long)(at - time(NULL))) < 120;
}

/* ---- a TCP forwarder, for a primary reached on a port it does not
 * know (replica_check must refuse the replica: wrong port) ---- */

struct pgx_pipe {
	uv_tcp_t side[2]; /* 0: the client, 1: the server */
	int open;         /* handles not yet closed */
	int closing;
	struct pgx_pipe *next;
};

struct pgx_proxy {
	uv_tcp_t listener;
	struct sockaddr_in target;
	int port;
	struct pgx_pipe *pipes;
};

static struct pgx_proxy pgx_proxy;

static void
pgx_pipe_closed(uv_handle_t *h)
{
	struct pgx_pipe *p = h->data;

	if (--p->open > 0)
		return;
	for (struct pgx_pipe **at = &pgx_proxy.pipes; *at != NULL;
	     at = &(*at)->next)
		if (*at == p) {
			*at = p->next;
			break;
		}
	free(p);
}

static void
pgx_pipe_close(struct pgx_pipe *p)
{
	if (p->closing)
		return;
	p->closing = 1;
	for (int i = 0; i < 2; i++)
		uv_close((uv_handle_t *)&p->side[i], pgx_pipe_closed);
}

static void
pgx_alloc(uv_handle_t *h, size_t size, uv_buf_t *buf)
{
	(void)h;
	buf->base = malloc(size);
	buf->len = buf->base != NULL ? size : 0;
}

static void
pgx_written(uv_write_t *req, int status)
{
	(void)status;
	free(req->data);
	free(req);
}

static void
pgx_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct pgx_pipe *p = s->data;
	uv_stream_t *other =
		(uv_stream_t *)&p->side[s == (uv_stream_t *)&p->side[0]];
	uv_write_t *req;

	if (n < 0) {
		free(buf->base);
		pgx_pipe_close(p);
		return;
	}
	if (n == 0 || (req = malloc(sizeof(*req))) == NULL) {
		free(buf->base);
		return;
	}
	req->data = buf->base;
	if (uv_write(req, other, &(uv_buf_t){buf->base, (size_t)n}, 1,
	             pgx_written) != 0) {
		free(buf->base);
		free(req);
		pgx_pipe_close(p);
	}
}

static void
pgx_connected(uv_connect_t *req, int status)
{
	struct pgx_pipe *p = req->data;

	free(req);
	if (status != 0 || p->closing) {
		pgx_pipe_close(p);
		return;
	}
	uv_read_start((uv_stream_t *)&p->side[0], pgx_alloc, pgx_read);
	uv_read_start((uv_stream_t *)&p->side[1], pgx_alloc, pgx_read);
}

static void
pgx_accept(uv_stream_t *server, int status)
{
	struct pgx_pipe *p = calloc(1, sizeof(*p));
	uv_connect_t *req = malloc(sizeof(*req));

	if (status != 0 || p == NULL || req == NULL) {
		free(p);
		free(req);
		return;
	}
	for (int i = 0; i < 2; i++) {
		uv_tcp_init(&check_loop, &p->side[i]);
		p->side[i].data = p;
	}
	p->open = 2;
	p->next = pgx_proxy.pipes;
	pgx_proxy.pipes = p;
	req->data = p;
	if (uv_accept(server, (uv_stream_t *)&p->side[0]) != 0 ||
	    uv_tcp_connect(req, &p->side[1],
	                   (const struct sockaddr *)&pgx_proxy.target,
	                   pgx_connected) != 0) {
		free(req);
		pgx_pipe_close(p);
	}
}

/* Forward 127.0.0.1:(a free port) to 127.0.0.1:PORT.  Returns the port
 * listened on, or 0. */
static int
pgx_proxy_start(int port)
{
	struct sockaddr_in any;
	struct sockaddr_storage bound;
	int len = sizeof(bound);

	memset(&pgx_proxy, 0, sizeof(pgx_proxy));
	uv_ip4_addr("127.0.0.1", port, &pgx_proxy.target);
	uv_ip4_addr("127.0.0.1", 0, &any);
	uv_tcp_init(&check_loop, &pgx_proxy.listener);
	if (uv_tcp_bind(&pgx_proxy.listener, (const struct sockaddr *)&any,
	                0) != 0 ||
	    uv_listen((uv_stream_t *)&pgx_proxy.listener, 8, pgx_accept) != 0 ||
	    uv_tcp_getsockname(&pgx_proxy.listener, (struct sockaddr *)&bound,
	                       &len) != 0)
		return 0;
	pgx_proxy.port = ntohs(((struct sockaddr_in *)&bound)->sin_port);
	return pgx_proxy.port;
}

static void
pgx_proxy_stop(void)
{
	int never = 0;

	for (struct pgx_pipe *p = pgx_proxy.pipes; p != NULL; p = p->next)
		pgx_pipe_close(p);
	uv_close((uv_handle_t *)&pgx_proxy.listener, NULL);
	wait_until(&never, 50); /* let the close callbacks run */
}

/* ---- the checks ---- */

/* count: exact, and a missing table is RS_ESCHEMA. */
static void
pgx_check_count(struct rs_backend *pg)
{
	struct pgx_call x;

	PGX_CHECK(pgx_count(pg, PGX_TABLE, &x) == 0 && x.value == 10,
	          "pg ops: count is exact (%lld of 10)", (long long)x.value);
	PGX_CHECK(pgx_count(pg, "rs_check_missing", &x) == RS_ESCHEMA,
	          "pg ops: count of a missing table is RS_ESCHEMA (%d: %s)",
	          x.call.status, x.call.err.message);
}

/* A write SQL on PG the fence must reject with exactly its message. */
static void
pgx_check_rejected(struct rs_backend *pg, const char *sql)
{
	struct rs_err err = {0};
	int rc = run_sql(pg, sql, &err);
	size_t n = strlen(err.message), m = strlen(": " PGX_FENCE_MSG);

	PGX_CHECK(rc == RS_EQUERY &&
	                  strcmp(err.sqlstate, PGX_FENCE_SQLSTATE) == 0 &&
	                  n >= m &&
	                  strcmp(err.message + n - m, ": " PGX_FENCE_MSG) == 0,
	          "pg ops: fenced, %.40s is refused with SQLSTATE %s and the "
	          "message (%d %s: %s)",
	          sql, PGX_FENCE_SQLSTATE, rc, err.sqlstate, err.message);
}

/* The fence on two tables with a marker, writes refused with exactly its
 * message, the triggers on the replica; a lock held elsewhere; off. */
static void
pgx_check_fence(struct rs_backend *pg, struct rs_backend *replica,
                const char *primary_url)
{
	const char *const tables[] = {PGX_TABLE, PGX_TABLE2};
	const char *const locked[] = {PGX_LOCKED};
	struct rs_marker fenced = pgx_marker("a-plan", "fenced", 0);
	struct rs_marker locking = pgx_marker("a-plan", "locking", 0);
	struct rs_marker aborted = pgx_marker("a-plan", "aborted", 0);
	struct rs_backend *holder = NULL;
	struct rs_err err;
	struct pgx_call x;
	char *exact;
	uint64_t started;

	PGX_CHECK(pgx_fenced(pg, PGX_TABLE, &x) == 0 && x.value == 0,
	          "pg ops: not fenced before the fence");
	PGX_CHECK(pgx_markers(pg, &x) == 0 && x.n_markers == 0,
	          "pg ops: no marker before the first (%d: %s)", x.n_markers,
	          x.call.err.message);
	check_status(pgx_fence(pg, tables, 2, 1, &fenced, &x), &x.call.err,
	             "pg ops: fence on two tables, with the marker");
	PGX_CHECK(pgx_fenced(pg, PGX_TABLE, &x) == 0 && x.value == 1 &&
	                  pgx_fenced(pg, PGX_TABLE2, &x) == 0 && x.value == 1,
	          "pg ops: both tables fenced");
	PGX_CHECK(pgx_markers(pg, &x) == 0 && x.n_markers == 1 &&
	                  strcmp(x.markers[0].plan, "a-plan") == 0 &&
	                  strcmp(x.markers[0].state, "fenced") == 0 &&
	                  strcmp(x.markers[0].run_id, fenced.run_id) == 0 &&
	                  pgx_recent_utc(x.markers[0].updated_at),
	          "pg ops: the marker went up with the fence (%d, %s, %s)",
	          x.n_markers, x.n_markers > 0 ? x.markers[0].state : "",
	          x.n_markers > 0 ? x.markers[0].updated_at : "");
	pgx_check_rejected(pg, "INSERT INTO " PGX_TABLE
	                       " VALUES ('zz', 99, 'new')");
	pgx_check_rejected(pg, "UPDATE " PGX_TABLE " SET note = 'changed'");
	pgx_check_rejected(pg, "DELETE FROM " PGX_TABLE);
	pgx_check_rejected(pg, "TRUNCATE " PGX_TABLE2);
	pgx_check_rejected(pg, "INSERT INTO " PGX_TABLE2
	                       " VALUES (1) ON CONFLICT DO NOTHING");
	/* Byte for byte on the server, quotes and backslash included. */
	exact = xprintf("DO $x$BEGIN DELETE FROM " PGX_TABLE "; "
	                "EXCEPTION WHEN SQLSTATE '%s' THEN IF SQLERRM <> '%s' "
	                "THEN RAISE EXCEPTION 'got %%', SQLERRM; END IF; "
	                "END$x$",
	                PGX_FENCE_SQLSTATE,
	                "writes paused by reshard: run it''s \"orders\" \\ 2x "
	                "— step fence");
	check_status(run_sql(pg, exact, &err), &err,
	             "pg ops: the writer's SQLERRM is exactly the message");
	free(exact);
	PGX_CHECK(pgx_count(pg, PGX_TABLE, &x) == 0 && x.value == 10,
	          "pg ops: reads go on under the fence, no row changed");
	check_status(pgx_fence(pg, tables, 2, 1, &fenced, &x), &x.call.err,
	             "pg ops: fence again (idempotent)");
	PGX_CHECK(pgx_holds(pg,
	                    "(SELECT count(*) FROM pg_trigger WHERE tgrelid = "
	                    "'" PGX_TABLE "'::regclass) = 2"),
	          "pg ops: still two triggers on the table");
	/* The fence reaches the replica by replication. */
	if (pgx_position(pg, &x) == 0) {
		char position[RS_POSITION_SIZE];

		snprintf(position, sizeof(position), "%s", x.text);
		PGX_CHECK(pgx_catch_up(pg, replica, position, 5000, &x) == 0 &&
		                  x.repl.reached,
		          "pg ops: the replica reaches the fence's position %s",
		          position);
		PGX_CHECK(pgx_fenced(replica, PGX_TABLE, &x) == 0 &&
		                  x.value == 1 &&
		                  pgx_fenced(replica, PGX_TABLE2, &x) == 0 &&
		                  x.value == 1,
		          "pg ops: the fence triggers reached the replica");
	} else {
		PGX_CHECK(0, "pg ops: position: %s", x.call.err.message);
	}
	/* The primary's own standby is caught up (lag -1 or a few ms);
	 * nothing streams from the standby. */
	PGX_CHECK(pgx_downstream_lag(pg, &x) == 0 && x.value >= -1 &&
	                  x.value < 5000,
	          "pg ops: downstream_lag of the primary is small (%lld ms)",
	          (long long)x.value);
	PGX_CHECK(pgx_downstream_lag(replica, &x) == 0 && x.value == -1,
	          "pg ops: downstream_lag of the standby is -1 (%lld)",
	          (long long)x.value);
	PGX_CHECK(pgx_fence(replica, tables, 2, 1, NULL, &x) == RS_EUSAGE &&
	                  strstr(x.call.err.message, "standby") != NULL,
	          "pg ops: a standby refuses a fence of its own (%s)",
	          x.call.err.message);
	check_status(pgx_fence(replica, tables, 2, 0, NULL, &x), &x.call.err,
	             "pg ops: the fence off a standby is left to its primary");

	/* A long transaction holding a table: retryable, within about the
	 * lock timeout, rolled back (no trigger, no marker). */
	if (open_backend("pg-holder", primary_url, CHECK_CONNECT_MS, &holder,
	                 &err) == 0 &&
	    setup_sql(holder, "BEGIN; INSERT INTO " PGX_LOCKED " VALUES (1)") ==
	            0) {
		started = op_started();
		pgx_fence(pg, locked, 1, 1, &locking, &x);
		PGX_CHECK(x.call.status == RS_EQUERY && x.call.err.retryable &&
		                  strcmp(x.call.err.sqlstate, "55P03") == 0 &&
		                  pgx_names(x.call.err.message, 2,
		                            "long transaction", PGX_LOCKED),
		          "pg ops: a table locked elsewhere fails the fence, "
		          "retryable (%d, %s, retryable %d: %s)",
		          x.call.status, x.call.err.sqlstate,
		          x.call.err.retryable, x.call.err.message);
		PGX_CHECK(x.call.ended_ms - started >= 1500 &&
		                  x.call.ended_ms - started < 5000,
		          "pg ops: after about the lock timeout (%" PRIu64
		          " ms)",
		          x.call.ended_ms - started);
		PGX_CHECK(pgx_fenced(pg, PGX_LOCKED, &x) == 0 && x.value == 0 &&
		                  pgx_markers(pg, &x) == 0 &&
		                  x.n_markers == 1 &&
		                  strcmp(x.markers[0].state, "fenced") == 0,
		          "pg ops: the failed fence left no trigger and the "
		          "marker as it was");
		setup_sql(holder, "ROLLBACK");
		check_status(pgx_fence(pg, locked, 1, 1, NULL, &x), &x.call.err,
		             "pg ops: the fence goes up once the lock is gone");
		check_status(pgx_fence(pg, locked, 1, 0, NULL, &x), &x.call.err,
		             "pg ops: and comes off");
	} else {
		PGX_CHECK(0, "pg ops: a second connection holds a lock: %s",
		          err.message);
	}
	close_backend(holder);

	check_status(pgx_fence(pg, tables, 2, 0, &aborted, &x), &x.call.err,
	             "pg ops: fence off, the marker aborted");
	PGX_CHECK(pgx_fenced(pg, PGX_TABLE, &x) == 0 && x.value == 0 &&
	                  pgx_fenced(pg, PGX_TABLE2, &x) == 0 && x.value == 0 &&
	                  pgx_holds(pg, "to_regprocedure('reshard_fence()') IS "
	                                "NULL"),
	          "pg ops: no trigger left, nor the function");
	PGX_CHECK(run_sql(pg,
	                  "INSERT INTO " PGX_TABLE " VALUES ('zz', 99, 'n')",
	                  &err) == 0 &&
	                  run_sql(pg, "DELETE FROM " PGX_TABLE " WHERE id = 99",
	                          &err) == 0,
	          "pg ops: writes go through again");
	check_status(pgx_fence(pg, tables, 2, 0, NULL, &x), &x.call.err,
	             "pg ops: fence off again (idempotent)");
	PGX_CHECK(pgx_fence(pg, (const char *const[]){"rs_check_missing"}, 1, 1,
	                    NULL, &x) == RS_ESCHEMA,
	          "pg ops: a fence on a missing table is RS_ESCHEMA (%s)",
	          x.call.err.message);
	PGX_CHECK(pgx_markers(pg, &x) == 0 && x.n_markers == 1 &&
	                  strcmp(x.markers[0].state, "aborted") == 0,
	          "pg ops: the marker says aborted");
}

/* mark upserts; markers come in plan order. */
static void
pgx_check_markers(struct rs_backend *pg)
{
	struct rs_marker b = pgx_marker("b-plan", "published", 7);
	struct pgx_call x;

	check_status(pgx_mark(pg, &b, &x), &x.call.err, "pg ops: mark");
	b.epoch = 8;
	snprintf(b.state, sizeof(b.state), "done");
	check_status(pgx_mark(pg, &b, &x), &x.call.err, "pg ops: mark again");
	PGX_CHECK(pgx_markers(pg, &x) == 0 && x.n_markers == 2 &&
	                  strcmp(x.markers[0].plan, "a-plan") == 0 &&
	                  strcmp(x.markers[1].plan, "b-plan") == 0 &&
	                  strcmp(x.markers[1].state, "done") == 0 &&
	                  x.markers[1].epoch == 8 &&
	                  pgx_recent_utc(x.markers[1].updated_at),
	          "pg ops: markers round trip (%d: %s %s %lld %s)", x.n_markers,
	          x.n_markers > 1 ? x.markers[1].plan : "",
	          x.n_markers > 1 ? x.markers[1].state : "",
	          x.n_markers > 1 ? (long long)x.markers[1].epoch : 0LL,
	          x.n_markers > 1 ? x.markers[1].updated_at : "");
}

/* The delete log records the application's deletes and key changes, not
 * purge_keys'; off removes it. */
static void
pgx_check_delete_log(struct rs_backend *pg)
{
	const char *log = "reshard_del_" PGX_TABLE;
	struct rs_table_def *def = NULL;
	struct rs_err err;
	struct pgx_call x;
	struct rs_value key[2] = {{"eu", 2}, {"4", 1}};
	struct rs_value bad[2] = {{"eu", 2}, {"four", 4}};
	struct rs_rows keys = {1, 2, key}, bad_keys = {1, 2, bad};

	if (describe(pg, PGX_TABLE, &def, &err) != 0) {
		PGX_CHECK(0, "pg ops: describe: %s", err.message);
		return;
	}
	check_status(pgx_delete_log(pg, def, 1, &x), &x.call.err,
	             "pg ops: delete log on");
	check_status(pgx_delete_log(pg, def, 1, &x), &x.call.err,
	             "pg ops: delete log on again (idempotent)");
	setup_sql(pg, "DELETE FROM " PGX_TABLE " WHERE id = 1");
	PGX_CHECK(
		pgx_count(pg, log, &x) == 0 && x.value == 1 &&
			pgx_holds(pg,
	                          "EXISTS (SELECT 1 FROM reshard_del_" PGX_TABLE
	                          " WHERE region = 'eu' AND id = 1)"),
		"pg ops: an application delete is logged (%lld)",
		(long long)x.value);
	setup_sql(pg, "UPDATE " PGX_TABLE " SET id = 100 WHERE id = 2");
	setup_sql(pg, "UPDATE " PGX_TABLE " SET note = 'x' WHERE id = 3");
	PGX_CHECK(pgx_count(pg, log, &x) == 0 && x.value == 2,
	          "pg ops: a key change is logged, another update not (%lld)",
	          (long long)x.value);
	check_status(pgx_purge(pg, def, &keys, &x), &x.call.err,
	             "pg ops: purge_keys");
	PGX_CHECK(pgx_count(pg, PGX_TABLE, &x) == 0 && x.value == 8 &&
	                  pgx_count(pg, log, &x) == 0 && x.value == 2,
	          "pg ops: purge_keys deleted its row and logged nothing (log "
	          "%lld)",
	          (long long)x.value);
	PGX_CHECK(
		pgx_purge(pg, def, &bad_keys, &x) == RS_EQUERY &&
			pgx_holds(pg,
	                          "current_setting('reshard.purging', true) "
	                          "IS DISTINCT FROM 'on'"),
		"pg ops: a failed purge_keys leaves the session unmarked (%s)",
		x.call.err.message);
	setup_sql(pg, "DELETE FROM " PGX_TABLE " WHERE id = 5");
	PGX_CHECK(pgx_count(pg, log, &x) == 0 && x.value == 3,
	          "pg ops: after purge_keys, the same connection's deletes are "
	          "logged (%lld)",
	          (long long)x.value);
	/* A logical replication apply or a bulk tool deletes with the
	 * triggers of ordinary sessions off: the log's are ALWAYS. */
	setup_sql(
		pg,
		"SET session_replication_role = replica; DELETE FROM " PGX_TABLE
		" WHERE id = 6; SET session_replication_role = DEFAULT");
	PGX_CHECK(pgx_count(pg, log, &x) == 0 && x.value == 4,
	          "pg ops: a delete with session_replication_role = replica is "
	          "logged too (%lld)",
	          (long long)x.value);
	check_status(pgx_delete_log(pg, def, 0, &x), &x.call.err,
	             "pg ops: delete log off");
	PGX_CHECK(pgx_count(pg, log, &x) == RS_ESCHEMA &&
	                  pgx_holds(pg,
	                            "NOT EXISTS (SELECT 1 FROM pg_trigger "
	                            "WHERE tgname LIKE 'reshard_dellog%') AND "
	                            "to_regprocedure('reshard_del_" PGX_TABLE
	                            "()') IS NULL"),
	          "pg ops: no log, trigger or function left");
	check_status(pgx_delete_log(pg, def, 0, &x), &x.call.err,
	             "pg ops: delete log off again (idempotent)");
	backend_table_free(def);
}

/* replica_check on the real pair and its refusals; position, catch_up
 * and its bound; promoted and release before any promotion. */
static void
pgx_check_replication(struct rs_backend *pg, struct rs_backend *replica,
                      const char *primary_url)
{
	struct rs_backend *other = NULL, *proxied = NULL, *named = NULL;
	struct rs_url url;
	struct rs_err err;
	struct pgx_call x;
	char position[RS_POSITION_SIZE] = "";
	uint64_t started;
	int port;

	check_status(pgx_replica_check(pg, replica, 5000, &x), &x.call.err,
	             "pg ops: replica_check passes on the real pair");
	if (open_backend("pg-again", primary_url, CHECK_CONNECT_MS, &other,
	                 &err) == 0) {
		PGX_CHECK(pgx_replica_check(pg, other, 5000, &x) == RS_EUSAGE &&
		                  pgx_names(x.call.err.message, 3, "pg-again",
		                            "not in recovery", "shard pg "),
		          "pg ops: replica_check refuses a primary as replica "
		          "(%s)",
		          x.call.err.message);
		PGX_CHECK(pgx_catch_up(pg, other, "0/1", 100, &x) == RS_EUSAGE,
		          "pg ops: catch_up refuses a server that never was a "
		          "standby (%s)",
		          x.call.err.message);
	}
	PGX_CHECK(pgx_replica_check(replica, pg, 5000, &x) == RS_EUSAGE &&
	                  pgx_names(x.call.err.message, 2, "standby itself",
	                            "pg-replica"),
	          "pg ops: replica_check refuses a standby as the primary (%s)",
	          x.call.err.message);
	/* The primary reached through another port: the replica streams
	 * from 55431, the url says the forwarder's. */
	memset(&url, 0, sizeof(url));
	if (url_parse(primary_url, NULL, &url, &err) == 0 &&
	    (port = pgx_proxy_start(url.port)) > 0) {
		char *via = xprintf("postgresql://%s:%s@127.0.0.1:%d/%s",
		                    url.user, url.password, port, url.database);
		char want[64], got[64];

		snprintf(want, sizeof(want), "127.0.0.1:%d", url.port);
		snprintf(got, sizeof(got), "127.0.0.1:%d", port);
		if (open_backend("pg-via", via, CHECK_CONNECT_MS, &proxied,
		                 &err) == 0)
			PGX_CHECK(pgx_replica_check(proxied, replica, 5000,
			                            &x) == RS_EUSAGE &&
			                  pgx_names(x.call.err.message, 4, want,
			                            got, "pg-via",
			                            "pg-replica"),
			          "pg ops: replica_check refuses a replica of "
			          "another port, naming both (%s)",
			          x.call.err.message);
		else
			PGX_CHECK(0, "pg ops: connect through a forwarder: %s",
			          err.message);
		close_backend(proxied);
		pgx_proxy_stop();
		free(via);
		/* "localhost" in the url, 127.0.0.1 in the replica's
		 * primary_conninfo: the same machine. */
		via = xprintf("postgresql://%s:%s@localhost:%d/%s", url.user,
		              url.password, url.port, url.database);
		if (open_backend("pg-localhost", via, CHECK_CONNECT_MS, &named,
		                 &err) == 0)
			check_status(
				pgx_replica_check(named, replica, 5000, &x),
				&x.call.err,
				"pg ops: replica_check takes localhost for "
				"127.0.0.1");
		close_backend(named);
		free(via);
	}
	url_clear(&url);
	/* A synchronous standby, and one whose replay is paused. */
	if (setup_sql(pg, "ALTER SYSTEM SET synchronous_standby_names = "
	                  "'walreceiver'") == 0 &&
	    setup_sql(pg, "SELECT pg_reload_conf()") == 0) {
		int never = 0;

		wait_until(&never, 300);
		PGX_CHECK(
			pgx_replica_check(pg, replica, 5000, &x) == RS_EUSAGE &&
				pgx_names(x.call.err.message, 2, "synchronous",
		                          "remove it from "
		                          "synchronous_standby_names"),
			"pg ops: replica_check refuses a synchronous standby "
			"(%s)",
			x.call.err.message);
		setup_sql(pg, "ALTER SYSTEM RESET synchronous_standby_names");
		setup_sql(pg, "SELECT pg_reload_conf()");
		wait_until(&never, 300);
	}
	if (setup_sql(replica, "SELECT pg_wal_replay_pause()") == 0) {
		PGX_CHECK(pgx_replica_check(pg, replica, 5000, &x) ==
		                          RS_EUSAGE &&
		                  pgx_names(x.call.err.message, 2, "paused",
		                            "pg_wal_replay_resume"),
		          "pg ops: replica_check refuses a paused replay (%s)",
		          x.call.err.message);
		setup_sql(replica, "SELECT pg_wal_replay_resume()");
	}
	check_status(pgx_replica_check(pg, replica, 5000, &x), &x.call.err,
	             "pg ops: replica_check passes again");

	/* position and catch_up */
	setup_sql(pg, "INSERT INTO " PGX_TABLE2 " VALUES (42)");
	if (check_status(pgx_position(pg, &x), &x.call.err,
	                 "pg ops: position (%s)", x.text))
		snprintf(position, sizeof(position), "%s", x.text);
	PGX_CHECK(position[0] != '\0' && strchr(position, '/') != NULL,
	          "pg ops: the position is a WAL location");
	PGX_CHECK(pgx_catch_up(pg, replica, position, 5000, &x) == 0 &&
	                  x.repl.reached && x.repl.behind == 0 &&
	                  strcmp(x.repl.unit, "bytes") == 0 &&
	                  pgx_holds(replica, "EXISTS (SELECT 1 FROM " PGX_TABLE2
	                                     " WHERE id = 42)"),
	          "pg ops: catch_up reaches the position, the row is on the "
	          "replica");
	started = op_started();
	PGX_CHECK(pgx_catch_up(pg, replica, "FFFFFFFF/0", 300, &x) == 0 &&
	                  !x.repl.reached && x.repl.behind > 0 &&
	                  strcmp(x.repl.unit, "bytes") == 0 &&
	                  x.call.ended_ms - started >= 250 &&
	                  x.call.ended_ms - started < 2000,
	          "pg ops: a slice towards a position not reached ends after "
	          "it (%" PRIu64 " ms), %lld bytes behind",
	          x.call.ended_ms - started, (long long)x.repl.behind);
	backend_set_op_timeout(pg, 500);
	started = op_started();
	pgx_catch_up(pg, replica, "FFFFFFFF/0", 3000, &x);
	backend_set_op_timeout(pg, 0);
	PGX_CHECK(x.call.status == RS_ECONNECT &&
	                  x.call.ended_ms - started >= 450 &&
	                  x.call.ended_ms - started < 1500 &&
	                  pgx_names(x.call.err.message, 2, "within 500 ms",
	                            "catching up"),
	          "pg ops: the op bound ends a longer slice (%" PRIu64
	          " ms: %s)",
	          x.call.ended_ms - started, x.call.err.message);
	PGX_CHECK(pgx_count(pg, PGX_TABLE2, &x) == 0 &&
	                  pgx_fenced(replica, PGX_TABLE2, &x) == 0,
	          "pg ops: both connections still work after it");
	PGX_CHECK(pgx_promoted(replica, &x) == 0 && x.value == 0 &&
	                  pgx_promoted(pg, &x) == 0 && x.value == 1,
	          "pg ops: promoted: the replica not, the primary yes");
	PGX_CHECK(pgx_release(pg, replica, &x) == RS_EUSAGE &&
	                  strstr(x.call.err.message, "not promoted") != NULL,
	          "pg ops: release refuses a replica not promoted (%s)",
	          x.call.err.message);
	close_backend(other);
}

/* Group 8: the PostgreSQL operations behind the steps, against the
 * primary of ENGINE and its replica (RESHARD_PG_REPLICA_URL). */
static void
check_pg_ops(struct engine *engine)
{
	const char *replica_url = getenv("RESHARD_PG_REPLICA_URL");
	struct rs_backend *pg = engine->backend, *replica = NULL;
	struct rs_err err;

	if (!check(replica_url != NULL && replica_url[0] != '\0',
	           "pg ops: RESHARD_PG_REPLICA_URL names the replica"))
		return;
	if (!check_status(open_backend("pg-replica", replica_url,
	                               CHECK_CONNECT_MS, &replica, &err),
	                  &err, "pg ops: connect to the replica")) {
		close_backend(replica);
		return;
	}
	if (setup_sql(pg, "DROP TABLE IF EXISTS " PGX_TABLE ", " PGX_TABLE2
	                  ", " PGX_LOCKED ", reshard_marker, "
	                  "reshard_del_" PGX_TABLE " CASCADE") == 0 &&
	    setup_sql(pg, "DROP FUNCTION IF EXISTS reshard_fence() CASCADE") ==
	            0 &&
	    setup_sql(pg, "CREATE TABLE " PGX_TABLE " (region text, id int, "
	                  "note text, PRIMARY KEY (region, id))") == 0 &&
	    setup_sql(pg, "INSERT INTO " PGX_TABLE " SELECT 'eu', g, 'n' || g "
	                  "FROM generate_series(1, 10) AS g") == 0 &&
	    setup_sql(pg, "CREATE TABLE " PGX_TABLE2 " (id int PRIMARY KEY)") ==
	            0 &&
	    setup_sql(pg, "CREATE TABLE " PGX_LOCKED " (id int)") == 0) {
		pgx_check_count(pg);
		pgx_check_fence(pg, replica, engine->url);
		pgx_check_markers(pg);
		pgx_check_delete_log(pg);
		pgx_check_replication(pg, replica, engine->url);
	}
	setup_sql(pg, "DROP TABLE IF EXISTS " PGX_TABLE ", " PGX_TABLE2
	              ", " PGX_LOCKED ", reshard_marker");
	close_backend(replica);
}

/* backend_check --promote-pg URL_PG URL_REPLICA: promote the replica
 * (which ends the pair: integration/scenario_pg_promote.sh makes a new
 * one afterwards), with promoted before and after, promote again, and
 * release of the slot it streamed from, twice. */
static int
pg_promote_mode(int argc, char **argv)
{
	struct rs_backend *pg = NULL, *replica = NULL;
	char position[RS_POSITION_SIZE] = "";
	struct pgx_call x;
	struct rs_err err;
	int rc;

	if (argc != 4) {
		fprintf(stderr, "usage: %s --promote-pg URL_PG URL_REPLICA\n",
		        argv[0]);
		return 2;
	}
	uv_loop_init(&check_loop);
	uv_timer_init(&check_loop, &wait_timer);
	if (check_status(
		    open_backend("pg", argv[2], CHECK_CONNECT_MS, &pg, &err),
		    &err, "promote: connect to the primary") &&
	    check_status(open_backend("pg-replica", argv[3], CHECK_CONNECT_MS,
	                              &replica, &err),
	                 &err, "promote: connect to the replica") &&
	    setup_sql(pg, "DROP TABLE IF EXISTS rs_check_promote") == 0 &&
	    setup_sql(pg,
	              "CREATE TABLE rs_check_promote (id int PRIMARY KEY)") ==
	            0 &&
	    setup_sql(pg, "INSERT INTO rs_check_promote VALUES (1), (2)") ==
	            0) {
		PGX_CHECK(pgx_promoted(replica, &x) == 0 && x.value == 0,
		          "promote: not promoted before");
		if (pgx_position(pg, &x) == 0)
			snprintf(position, sizeof(position), "%s", x.text);
		PGX_CHECK(position[0] != '\0' &&
		                  pgx_catch_up(pg, replica, position, 5000,
		                               &x) == 0 &&
		                  x.repl.reached,
		          "promote: the replica has everything up to %s",
		          position);
		backend_set_op_timeout(replica, 60000);
		check_status(pgx_promote(replica, &x), &x.call.err,
		             "promote: promote");
		backend_set_op_timeout(replica, 0);
		PGX_CHECK(pgx_promoted(replica, &x) == 0 && x.value == 1,
		          "promote: promoted after");
		check_status(pgx_promote(replica, &x), &x.call.err,
		             "promote: promote again does nothing");
		PGX_CHECK(
			pgx_count(replica, "rs_check_promote", &x) == 0 &&
				x.value == 2 &&
				run_sql(replica,
		                        "INSERT INTO rs_check_promote VALUES "
		                        "(3)",
		                        &err) == 0,
			"promote: the promoted replica has the rows and takes "
			"writes");
		PGX_CHECK(
			pgx_replica_check(pg, replica, 5000, &x) == RS_EUSAGE &&
				strstr(x.call.err.message, "not in recovery") !=
					NULL,
			"promote: replica_check refuses it now (%s)",
			x.call.err.message);
		rc = pgx_release(pg, replica, &x);
		PGX_CHECK(rc == 0 &&
		                  strncmp(x.text, "dropped replication slot ",
		                          25) == 0 &&
		                  strstr(x.text,
		                         " (it held WAL for pg-replica)") !=
		                          NULL,
		          "promote: release drops the slot (%s)",
		          rc == 0 ? x.text : x.call.err.message);
		/* A downstream standby of the primary keeps its own,
		 * active slot (servers.sh RESHARD_DOWNSTREAM=1). */
		PGX_CHECK(pgx_holds(pg, "NOT EXISTS (SELECT 1 FROM "
		                        "pg_replication_slots WHERE NOT "
		                        "active)"),
		          "promote: no slot left on the primary but those "
		          "of standbys streaming from it");
		PGX_CHECK(pgx_release(pg, replica, &x) == 0 &&
		                  x.text[0] == '\0',
		          "promote: release again notes nothing (\"%s\")",
		          x.text);
		setup_sql(pg, "DROP TABLE IF EXISTS rs_check_promote");
	}
	close_backend(pg);
	close_backend(replica);
	uv_close((uv_handle_t *)&wait_timer, NULL);
	uv_run(&check_loop, UV_RUN_DEFAULT);
	rc = uv_loop_close(&check_loop);
	check(rc == 0, "loop closed cleanly%s%s", rc != 0 ? ": " : "",
	      rc != 0 ? uv_strerror(rc) : "");
	printf("%d passed, %d failed\n", n_passed, n_failed);
	return n_failed > 0 ? 1 : 0;
}

/* ==== end of the PostgreSQL operations ==== */

/* ==== 8. MariaDB: count, fence, markers, delete log, replication ==== */

/*
 * check_my_ops (after group 7) and check_my_promote (backend_check
 * --promote-my, run last by integration/scenario_my_promote.sh: it
 * destroys the replica pair).  The replica's URL is RESHARD_MY_REPLICA_URL
 * (integration/servers.sh's env).  Every table here is rs_myops_*; the
 * group drops them, the markers and the delete logs at its end.
 */

#define MYOPS_MESSAGE  "writes paused by reshard: run it's-2x, step fence"
#define MYOPS_PLAN     "myops-2x"
#define MYOPS_RUN_ID   "0123456789abcdef0123456789abcdef"
#define MYOPS_LOCK_MS  2000 /* the engine's lock timeout */
#define MYOPS_SLICE_MS 300  /* catch-up slices */

/* The outcome of one of these operations, with what its callback
 * returned. */
struct my_call {
	struct call call; /* first: the callbacks' ARG */
	int64_t value;
	struct rs_marker markers[8];
	int n_markers;
	char position[RS_POSITION_SIZE];
	struct rs_replication state;
};

static void
myops_on_count(struct rs_backend *backend, int status, const struct rs_err *err,
               int64_t value, void *arg)
{
	struct my_call *c = arg;

	(void)backend;
	c->value = value;
	call_end(&c->call, status, err);
}

static void
myops_on_markers(struct rs_backend *backend, int status,
                 const struct rs_err *err, const struct rs_marker *markers,
                 int n, void *arg)
{
	struct my_call *c = arg;

	(void)backend;
	c->n_markers = 0;
	for (int i = 0; status == 0 && i < n && i < 8; i++)
		c->markers[c->n_markers++] = markers[i];
	call_end(&c->call, status, err);
}

static void
myops_on_position(struct rs_backend *backend, int status,
                  const struct rs_err *err, const char *position, void *arg)
{
	struct my_call *c = arg;

	(void)backend;
	if (status == 0)
		snprintf(c->position, sizeof(c->position), "%s", position);
	call_end(&c->call, status, err);
}

static void
myops_on_replication(struct rs_backend *backend, int status,
                     const struct rs_err *err,
                     const struct rs_replication *state, void *arg)
{
	struct my_call *c = arg;

	(void)backend;
	if (status == 0)
		c->state = *state;
	call_end(&c->call, status, err);
}

static int
myops_fence(struct rs_backend *b, const char *const *tables, int n, int on,
            const struct rs_marker *marker, struct rs_err *err)
{
	struct call c = {0};
	int rc = await(&c,
	               backend_fence(b, tables, n, MYOPS_MESSAGE, on, marker,
	                             NULL, on_done, &c, &c.err),
	               "fence");

	*err = c.err;
	return rc;
}

/* Whether TABLE is fenced on B: 1, 0, or -1 after a "not ok" line. */
static int
myops_fenced(struct rs_backend *b, const char *table)
{
	struct my_call c = {0};

	if (await(&c.call,
	          backend_fenced(b, table, myops_on_count, &c, &c.call.err),
	          "fenced") != 0) {
		check(0, "%s: fenced %s: %s", b->shard, table,
		      c.call.err.message);
		return -1;
	}
	return c.value != 0;
}

static int
myops_markers(struct rs_backend *b, struct my_call *c)
{
	memset(c, 0, sizeof(*c));
	return await(&c->call,
	             backend_markers(b, myops_on_markers, c, &c->call.err),
	             "markers");
}

static int
myops_mark(struct rs_backend *b, const struct rs_marker *marker,
           struct rs_err *err)
{
	struct call c = {0};
	int rc =
		await(&c, backend_mark(b, marker, on_done, &c, &c.err), "mark");

	*err = c.err;
	return rc;
}

static int
myops_delete_log(struct rs_backend *b, const struct rs_table_def *t, int on,
                 struct rs_err *err)
{
	struct call c = {0};
	int rc = await(&c, backend_delete_log(b, t, on, on_done, &c, &c.err),
	               "delete_log");

	*err = c.err;
	return rc;
}

static int
myops_purge(struct rs_backend *b, const struct rs_table_def *t,
            const struct rs_rows *keys, struct rs_err *err)
{
	struct call c = {0};
	int rc = await(&c, backend_purge_keys(b, t, keys, on_done, &c, &c.err),
	               "purge_keys");

	*err = c.err;
	return rc;
}

static int
myops_replica_check(struct rs_backend *p, struct rs_backend *r, int lag_ms,
                    struct rs_err *err)
{
	struct call c = {0};
	int rc = await(&c,
	               backend_replica_check(p, r, lag_ms, on_done, &c, &c.err),
	               "replica_check");

	*err = c.err;
	return rc;
}

static int
myops_position(struct rs_backend *p, char *position, struct rs_err *err)
{
	struct my_call c = {0};
	int rc = await(&c.call,
	               backend_position(p, myops_on_position, &c, &c.call.err),
	               "position");

	snprintf(position, RS_POSITION_SIZE, "%s", c.position);
	*err = c.call.err;
	return rc;
}

static int
myops_catch_up(struct rs_backend *p, struct rs_backend *r, const char *pos,
               int slice_ms, struct rs_replication *state, struct rs_err *err)
{
	struct my_call c = {0};
	int rc = await(&c.call,
	               backend_catch_up(p, r, pos, slice_ms,
	                                myops_on_replication, &c, &c.call.err),
	               "catch_up");

	*state = c.state;
	*err = c.call.err;
	return rc;
}

/* Bring R to P's position now, in slices, for at most 20 s.  Returns 0,
 * or -1 after a "not ok" line. */
static int
myops_sync(struct rs_backend *p, struct rs_backend *r, const char *what)
{
	char position[RS_POSITION_SIZE];
	struct rs_replication state = {0};
	struct rs_err err;
	int rc = myops_position(p, position, &err);

	for (int i = 0; rc == 0 && !state.reached && i < 20000 / MYOPS_SLICE_MS;
	     i++)
		rc = myops_catch_up(p, r, position, MYOPS_SLICE_MS, &state,
		                    &err);
	if (rc != 0 || !state.reached) {
		check(0, "%s: replica reaches %s: %s", what, position,
		      rc != 0 ? err.message : "not within 20 s");
		return -1;
	}
	return 0;
}

/* The rows of TABLE on B, canonical, "a|b;c|d" in key order (to free),
 * or NULL after a "not ok" line. */
static char *
myops_rows(struct rs_backend *b, const char *table)
{
	struct rs_table_def *def = NULL;
	struct snapshot snap = {0};
	size_t cap = 1, len = 0;
	char *text;

	if (read_table(b, table, &def, &snap) != 0) {
		backend_table_free(def);
		return NULL;
	}
	for (int r = 0; r < snap.canon.n_rows; r++)
		for (int c = 0; c < snap.canon.n_cols; c++)
			cap += grid_row(&snap.canon, r)[c].len + 2;
	text = xcalloc(cap, 1);
	for (int r = 0; r < snap.canon.n_rows; r++)
		for (int c = 0; c < snap.canon.n_cols; c++) {
			const struct cell *cell = &grid_row(&snap.canon, r)[c];

			if (r > 0 && c == 0)
				text[len++] = ';';
			else if (c > 0)
				text[len++] = '|';
			memcpy(text + len, cell->text != NULL ? cell->text : "",
			       cell->len);
			len += cell->len;
		}
	snapshot_free(&snap);
	backend_table_free(def);
	return text;
}

/* Check that the rows of TABLE on B are WANT ("a|b;c|d"). */
static void
myops_rows_are(struct rs_backend *b, const char *table, const char *want,
               const char *what)
{
	char *got = myops_rows(b, table);

	if (got != NULL)
		check(strcmp(got, want) == 0,
		      "%s: %s holds \"%s\" (got \"%s\")", what, table, want,
		      got);
	free(got);
}

/* Fill MARKER. */
static void
myops_marker(struct rs_marker *m, const char *plan, const char *state,
             int64_t epoch)
{
	memset(m, 0, sizeof(*m));
	snprintf(m->plan, sizeof(m->plan), "%s", plan);
	snprintf(m->run_id, sizeof(m->run_id), "%s", MYOPS_RUN_ID);
	snprintf(m->state, sizeof(m->state), "%s", state);
	m->epoch = epoch;
}

/* The marker of PLAN in C, or NULL. */
static const struct rs_marker *
myops_find(const struct my_call *c, const char *plan)
{
	for (int i = 0; i < c->n_markers; i++)
		if (strcmp(c->markers[i].plan, plan) == 0)
			return &c->markers[i];
	return NULL;
}

/* Whether AT is "YYYY-MM-DD HH:MM:SS" within 10 minutes of now, UTC. */
static int
myops_recent_utc(const char *at)
{
	struct tm tm = {0};
	time_t t;
	const char *end = strptime(at, "%Y-%m-%d %H:%M:%S", &tm);

	if (end == NULL || *end != '\0' || strlen(at) != 19)
		return 0;
	t = timegm(&tm);
	return t > time(NULL) - 600 && t < time(NULL) + 600;
}

/* A write on B that the fence must reject with exactly MYOPS_MESSAGE. */
static void
myops_rejected(struct rs_backend *b, const char *sql, const char *what)
{
	const char *want = ": " MYOPS_MESSAGE " (MariaDB error 1644, SQLSTATE "
			   "45000)";
	struct rs_err err;
	int rc = run_sql(b, sql, &err);

	check(rc == RS_EQUERY && err.server_errno == 1644 &&
	              strstr(err.message, want) != NULL,
	      "my: fenced, %s is rejected with the fence's message (%d, %s)",
	      what, rc, rc != 0 ? err.message : "it worked");
}

/* count, and the fence with its marker (on the primary P, seen on the
 * replica R): writes rejected with exactly the message, an application's
 * own trigger kept, idempotent both ways. */
static void
myops_check_fence(struct rs_backend *p, struct rs_backend *r,
                  struct rs_backend *app)
{
	const char *tables[] = {"rs_myops_t", "rs_myops_u"};
	struct rs_marker marker;
	struct my_call c;
	struct rs_err err;
	int64_t n = -1;
	int rc;

	rc = count_rows(p, "rs_myops_t", &n, &err);
	check(rc == 0 && n == 5,
	      "my: count rs_myops_t is 5 (%d, %" PRId64 "%s%s)", rc, n,
	      rc != 0 ? ": " : "", rc != 0 ? err.message : "");
	rc = count_rows(p, "rs_myops_missing", &n, &err);
	check(rc == RS_ESCHEMA, "my: count of a missing table: RS_ESCHEMA (%d)",
	      rc);
	diag("%s", err.message);

	myops_marker(&marker, MYOPS_PLAN, "fenced", 0);
	rc = myops_fence(p, tables, 2, 1, &marker, &err);
	if (!check_status(rc, &err, "my: fence on rs_myops_t, rs_myops_u"))
		return;
	check(myops_fenced(p, "rs_myops_t") == 1 &&
	              myops_fenced(p, "rs_myops_u") == 1,
	      "my: both tables are fenced");
	check(myops_fenced(p, "rs_myops_free") == 0,
	      "my: a table not in the list is not");
	check_status(myops_fence(p, tables, 2, 1, &marker, &err), &err,
	             "my: fence on again (idempotent)");
	myops_rejected(app, "INSERT INTO rs_myops_t VALUES (9, 'nine')",
	               "INSERT");
	myops_rejected(app, "UPDATE rs_myops_t SET v = 'x' WHERE id = 1",
	               "UPDATE");
	myops_rejected(app, "DELETE FROM rs_myops_t WHERE id = 2", "DELETE");
	myops_rejected(app, "INSERT INTO rs_myops_u VALUES (9)",
	               "INSERT into the second table");
	rc = count_rows(p, "rs_myops_t", &n, &err);
	check(rc == 0 && n == 5,
	      "my: fenced, rs_myops_t still has 5 rows (%" PRId64 ")", n);
	rc = myops_markers(p, &c);
	check(rc == 0 && myops_find(&c, MYOPS_PLAN) != NULL &&
	              strcmp(myops_find(&c, MYOPS_PLAN)->state, "fenced") == 0,
	      "my: the fence wrote the marker (state fenced)");

	if (myops_sync(p, r, "my: fence") == 0) {
		check(myops_fenced(r, "rs_myops_t") == 1 &&
		              myops_fenced(r, "rs_myops_u") == 1,
		      "my: the fence's triggers reached the replica");
		rc = myops_markers(r, &c);
		check(rc == 0 && myops_find(&c, MYOPS_PLAN) != NULL,
		      "my: and so did the marker");
	}

	myops_marker(&marker, MYOPS_PLAN, "aborted", 0);
	rc = myops_fence(p, tables, 2, 0, &marker, &err);
	check_status(rc, &err, "my: fence off");
	check(myops_fenced(p, "rs_myops_t") == 0 &&
	              myops_fenced(p, "rs_myops_u") == 0,
	      "my: no table is fenced");
	check_status(myops_fence(p, tables, 2, 0, NULL, &err), &err,
	             "my: fence off again (idempotent)");
	rc = run_sql(app, "INSERT INTO rs_myops_t VALUES (6, 'six')", &err);
	check_status(rc, &err, "my: unfenced, an INSERT works");
	myops_rows_are(p, "rs_myops_t",
	               "1|ONE;2|TWO;3|THREE;4|FOUR;5|FIVE;6|SIX",
	               "my: the application's own BEFORE INSERT trigger "
	               "stayed and still works");
	rc = myops_markers(p, &c);
	check(rc == 0 && myops_find(&c, MYOPS_PLAN) != NULL &&
	              strcmp(myops_find(&c, MYOPS_PLAN)->state, "aborted") == 0,
	      "my: the marker says aborted");
}

/* Markers: none without the table, then a round trip. */
static void
myops_check_markers(struct rs_backend *p)
{
	struct rs_marker a, b;
	const struct rs_marker *got;
	struct my_call c;
	struct rs_err err;
	int rc;

	if (setup_sql(p, "DROP TABLE IF EXISTS reshard_marker") != 0)
		return;
	rc = myops_markers(p, &c);
	check(rc == 0 && c.n_markers == 0,
	      "my: no marker table: no markers (%d, %d)", rc, c.n_markers);
	myops_marker(&a, MYOPS_PLAN, "published", 7);
	myops_marker(&b, "other-plan", "done", 9000000000LL);
	rc = myops_mark(p, &a, &err);
	check_status(rc, &err, "my: mark makes the table and the marker");
	check_status(myops_mark(p, &b, &err), &err, "my: mark a second plan");
	myops_marker(&a, MYOPS_PLAN, "purged", 8);
	check_status(myops_mark(p, &a, &err), &err,
	             "my: mark again replaces the plan's marker");
	rc = myops_markers(p, &c);
	check(rc == 0 && c.n_markers == 2, "my: two markers (%d, %d)", rc,
	      c.n_markers);
	got = myops_find(&c, MYOPS_PLAN);
	check(got != NULL && strcmp(got->run_id, MYOPS_RUN_ID) == 0 &&
	              strcmp(got->state, "purged") == 0 && got->epoch == 8,
	      "my: marker %s round trip (run id, state purged, epoch 8)",
	      MYOPS_PLAN);
	check(got != NULL && myops_recent_utc(got->updated_at),
	      "my: updated_at is the server's UTC time, YYYY-MM-DD HH:MM:SS "
	      "(%s)",
	      got != NULL ? got->updated_at : "none");
	got = myops_find(&c, "other-plan");
	check(got != NULL && got->epoch == 9000000000LL &&
	              strcmp(got->state, "done") == 0,
	      "my: marker other-plan round trip (epoch 9000000000)");
}

/* The delete log of rs_myops_log (key (k varchar, n int)): an
 * application's deletes and key-changing updates are logged, a purge's
 * deletes are not, and the session is plain again after a purge, also
 * after a failed one. */
static void
myops_check_delete_log(struct rs_backend *p, struct rs_backend *app)
{
	const char *fenced[] = {"rs_myops_log"};
	const char *log = "reshard_del_rs_myops_log";
	struct rs_table_def *t = NULL;
	const struct rs_value purge_b[2] = {{"b", 1}, {"2", 1}};
	const struct rs_value purge_c[2] = {{"c", 1}, {"3", 1}};
	const struct rs_value delete_d[2] = {{"d", 1}, {"4", 1}};
	struct rs_rows keys = {1, 2, purge_b};
	struct rs_err err;
	int64_t n;
	int rc;

	if (describe(p, "rs_myops_log", &t, &err) != 0) {
		check(0, "my: describe rs_myops_log: %s", err.message);
		return;
	}
	rc = myops_delete_log(p, t, 1, &err);
	if (!check_status(rc, &err, "my: delete log on"))
		goto out;
	check_status(myops_delete_log(p, t, 1, &err), &err,
	             "my: delete log on again (idempotent)");
	myops_rows_are(p, log, "", "my: a new delete log");
	setup_sql(app, "DELETE FROM rs_myops_log WHERE n = 1");
	setup_sql(app, "UPDATE rs_myops_log SET v = 'changed' WHERE n = 5");
	setup_sql(app, "UPDATE rs_myops_log SET k = 'E' WHERE n = 5");
	myops_rows_are(p, log, "a|1;e|5",
	               "my: an application's delete and key change (e to E, "
	               "equal in the collation) are logged, a value change "
	               "is not");
	rc = myops_purge(p, t, &keys, &err);
	check_status(rc, &err, "my: purge_keys of (b, 2)");
	myops_rows_are(p, log, "a|1;e|5", "my: purge's delete is not logged");
	keys.values = delete_d;
	rc = delete_keys(p, t, &keys, &err);
	check_status(rc, &err, "my: delete_keys of (d, 4) after the purge");
	myops_rows_are(p, log, "a|1;d|4;e|5",
	               "my: the session is plain again: delete_keys is logged");
	/* A purge that fails (the table fenced) leaves the session plain. */
	keys.values = purge_c;
	if (myops_fence(p, fenced, 1, 1, NULL, &err) == 0) {
		rc = myops_purge(p, t, &keys, &err);
		check(rc == RS_EQUERY && err.server_errno == 1644,
		      "my: purge_keys on a fenced table fails (%d)", rc);
		myops_fence(p, fenced, 1, 0, NULL, &err);
		rc = delete_keys(p, t, &keys, &err);
		check_status(rc, &err,
		             "my: delete_keys of (c, 3) after the "
		             "failed purge");
		myops_rows_are(p, log, "a|1;c|3;d|4;e|5", "my: ... is logged");
	}
	rc = count_rows(p, "rs_myops_log", &n, &err);
	check(rc == 0 && n == 1,
	      "my: one row left in rs_myops_log (%" PRId64 ")", n);
	check_status(myops_delete_log(p, t, 0, &err), &err,
	             "my: delete log off");
	rc = count_rows(p, log, &n, &err);
	check(rc == RS_ESCHEMA, "my: the log's table is gone (%d)", rc);
	setup_sql(app, "DELETE FROM rs_myops_log");
	check_status(myops_delete_log(p, t, 0, &err), &err,
	             "my: delete log off again (idempotent), deletes "
	             "without a log work");
out:
	backend_table_free(t);
}

/* A metadata lock another connection holds (an open transaction that
 * read rs_myops_t) makes the fence fail within about the lock timeout,
 * RS_EQUERY, retryable, saying so; the table fenced before it in the
 * same call is unfenced again (all or nothing). */
static void
myops_check_lock(struct rs_backend *p, struct rs_backend *app)
{
	const char *tables[] = {"rs_myops_free", "rs_myops_t"};
	struct rs_marker marker;
	struct my_call c;
	struct rs_err err;
	uint64_t started, elapsed;
	int rc;

	if (setup_sql(app, "START TRANSACTION") != 0 ||
	    setup_sql(app, "SELECT COUNT(*) FROM rs_myops_t") != 0)
		return;
	myops_marker(&marker, "lock-plan", "fenced", 0);
	started = uv_hrtime();
	rc = myops_fence(p, tables, 2, 1, &marker, &err);
	elapsed = (uv_hrtime() - started) / 1000000;
	check(rc == RS_EQUERY && err.retryable && err.server_errno == 1205,
	      "my: fence behind a metadata lock: RS_EQUERY, retryable, error "
	      "1205 (%d, %d, %d)",
	      rc, err.retryable, err.server_errno);
	check(elapsed + 100 >= MYOPS_LOCK_MS && elapsed < 2 * MYOPS_LOCK_MS,
	      "my: ... after about the lock timeout (%" PRIu64 " ms)", elapsed);
	check(strstr(err.message, "a long transaction holds the table") !=
	                      NULL &&
	              strstr(err.message, "rs_myops_t") != NULL,
	      "my: ... saying a long transaction holds rs_myops_t");
	diag("%s", err.message);
	check(myops_fenced(p, "rs_myops_free") == 0,
	      "my: the table fenced before it in the call is not any more");
	rc = myops_markers(p, &c);
	check(rc == 0 && myops_find(&c, "lock-plan") == NULL,
	      "my: and no marker was written");
	setup_sql(app, "ROLLBACK");
	rc = myops_fence(p, tables, 2, 1, NULL, &err);
	check_status(rc, &err,
	             "my: with the transaction ended, the fence "
	             "goes up");
	check_status(myops_fence(p, tables, 2, 0, NULL, &err), &err,
	             "my: and down");
}

/* Check that replica_check(P, R) refuses with RS_EUSAGE naming both
 * shards and saying NEEDLE. */
static void
myops_refused(struct rs_backend *p, struct rs_backend *r, const char *needle,
              const char *what)
{
	struct rs_err err;
	int rc = myops_replica_check(p, r, 60000, &err);

	check(rc == RS_EUSAGE && strstr(err.message, p->shard) != NULL &&
	              strstr(err.message, r->shard) != NULL &&
	              strstr(err.message, needle) != NULL,
	      "my: replica_check refuses %s: RS_EUSAGE naming %s and %s, "
	      "\"%s\" (%d)",
	      what, p->shard, r->shard, needle, rc);
	diag("%s", err.message);
}

/* Wait (at most 10 s) until replica_check of R no longer refuses it for
 * its replication threads or an unknown lag, as just after a START
 * SLAVE. */
static void
myops_running(struct rs_backend *p, struct rs_backend *r)
{
	struct rs_err err;

	for (int i = 0; i < 200; i++) {
		int rc = myops_replica_check(p, r, 60000, &err);

		if (rc == 0 ||
		    (strstr(err.message, "Slave_IO_Running") == NULL &&
		     strstr(err.message, "Seconds_Behind_Master is NULL") ==
		             NULL))
			return;
		usleep(50 * 1000);
	}
}

/* replica_check on the real pair, with a replica as the primary, a
 * read-only primary, writable, with a filter, on stopped replication;
 * position and catch-up. */
static void
myops_check_replication(struct rs_backend *p, struct rs_backend *r,
                        const char *replica_url)
{
	struct rs_backend *wrong = NULL;
	char position[RS_POSITION_SIZE], ahead[RS_POSITION_SIZE + 32];
	struct rs_replication state;
	struct rs_err err;
	uint64_t started, elapsed;
	unsigned long long domain, server, seq;
	int rc;

	check_status(myops_replica_check(p, r, 60000, &err), &err,
	             "my: replica_check passes on the real pair");
	/* The replica's own URL as "the primary" (another port): a replica
	 * itself, which is said first. */
	rc = open_backend("my-not-primary", replica_url, CHECK_CONNECT_MS,
	                  &wrong, &err);
	if (check_status(rc, &err, "my: connect my-not-primary"))
		myops_refused(wrong, r,
		              "is itself a replica: 1 replication SQL thread "
		              "runs on it (Slaves_running)",
		              "a primary that is a replica itself");
	close_backend(wrong);
	if (setup_sql(p, "SET GLOBAL read_only = 1") == 0) {
		myops_refused(p, r, "is read-only (@@read_only = 1)",
		              "a read-only primary");
		setup_sql(p, "SET GLOBAL read_only = 0");
	}
	/* A replica that may differ from its primary unseen: writable, or
	 * leaving some of its events out. */
	if (setup_sql(r, "SET GLOBAL read_only = 0") == 0) {
		myops_refused(p, r, "is writable (@@read_only = 0)",
		              "a writable replica");
		setup_sql(r, "SET GLOBAL read_only = 1");
	}
	if (setup_sql(r, "STOP SLAVE") == 0 &&
	    setup_sql(r, "SET GLOBAL replicate_wild_ignore_table = "
	                 "'rs_myops.audit%'") == 0 &&
	    setup_sql(r, "START SLAVE") == 0) {
		myops_running(p, r);
		myops_refused(
			p, r,
			"Replicate_Wild_Ignore_Table is 'rs_myops.audit%'",
			"a replica with a replication filter");
	}
	setup_sql(r, "STOP SLAVE");
	setup_sql(r, "SET GLOBAL replicate_wild_ignore_table = ''");
	setup_sql(r, "START SLAVE");
	myops_running(p, r);
	check_status(myops_replica_check(p, r, 60000, &err), &err,
	             "my: replica_check passes again without them");

	if (setup_sql(r, "STOP SLAVE SQL_THREAD") == 0) {
		myops_refused(p, r, "Slave_SQL_Running: No",
		              "stopped replication");
		setup_sql(r, "START SLAVE SQL_THREAD");
	}
	check_status(myops_replica_check(p, r, 60000, &err), &err,
	             "my: replica_check passes again once it replicates");

	setup_sql(p, "INSERT INTO rs_myops_u VALUES (100)");
	rc = myops_position(p, position, &err);
	check(rc == 0 && sscanf(position, "%llu-%llu-%llu", &domain, &server,
	                        &seq) == 3,
	      "my: position is a GTID (%s)", rc == 0 ? position : err.message);
	if (rc != 0)
		return;
	rc = myops_sync(p, r, "my: catch-up");
	check(rc == 0, "my: catch_up reaches %s", position);
	myops_rows_are(r, "rs_myops_u", "1;100",
	               "my: caught up, the replica has the row");
	/* A position 1000 transactions ahead is not reached: one slice. */
	snprintf(ahead, sizeof(ahead), "%llu-%llu-%llu", domain, server,
	         seq + 1000);
	started = uv_hrtime();
	rc = myops_catch_up(p, r, ahead, MYOPS_SLICE_MS, &state, &err);
	elapsed = (uv_hrtime() - started) / 1000000;
	check(rc == 0 && !state.reached && state.behind == 1000 &&
	              strcmp(state.unit, "transactions") == 0,
	      "my: a position 1000 transactions ahead: not reached, 1000 "
	      "transactions behind (%d, %d, %" PRId64 ")",
	      rc, state.reached, state.behind);
	check(elapsed + 50 >= MYOPS_SLICE_MS && elapsed < 5 * MYOPS_SLICE_MS,
	      "my: ... after one slice of %d ms (%" PRIu64 " ms)",
	      MYOPS_SLICE_MS, elapsed);
	rc = myops_catch_up(p, r, "not a GTID", 0, &state, &err);
	check(rc == RS_EQUERY && strstr(err.message, r->shard) != NULL,
	      "my: a malformed position fails on the replica, naming it (%d)",
	      rc);
	diag("%s", err.message);
}

/* Group 8: count, fence, markers, delete log, replica_check, position,
 * catch_up on MariaDB (promotion: check_my_promote). */
static void
check_my_ops(struct engine *engine)
{
	const char *replica_url = getenv("RESHARD_MY_REPLICA_URL");
	struct rs_backend *p = engine->backend, *r = NULL, *app = NULL;
	struct rs_err err;
	int rc;

	if (!check(replica_url != NULL, "my: RESHARD_MY_REPLICA_URL is set"))
		return;
	rc = open_backend("my-replica", replica_url, CHECK_CONNECT_MS, &r,
	                  &err);
	if (rc == 0)
		rc = open_backend("my-app", engine->url, CHECK_CONNECT_MS, &app,
		                  &err);
	if (!check_status(rc, &err, "my: connections for the MariaDB ops"))
		goto out;
	if (setup_sql(p, "DROP TABLE IF EXISTS rs_myops_t, rs_myops_u, "
	                 "rs_myops_free, rs_myops_log, "
	                 "reshard_del_rs_myops_log, reshard_marker") != 0 ||
	    setup_sql(p, "CREATE TABLE rs_myops_t (id int PRIMARY KEY, "
	                 "v varchar(20))") != 0 ||
	    setup_sql(p, "CREATE TRIGGER rs_myops_app BEFORE INSERT ON "
	                 "rs_myops_t FOR EACH ROW SET NEW.v = UPPER(NEW.v)") !=
	            0 ||
	    setup_sql(p, "INSERT INTO rs_myops_t VALUES (1, 'one'), "
	                 "(2, 'two'), (3, 'three'), (4, 'four'), "
	                 "(5, 'five')") != 0 ||
	    setup_sql(p, "CREATE TABLE rs_myops_u (id int PRIMARY KEY)") != 0 ||
	    setup_sql(p, "INSERT INTO rs_myops_u VALUES (1)") != 0 ||
	    setup_sql(p, "CREATE TABLE rs_myops_free (id int PRIMARY KEY)") !=
	            0 ||
	    setup_sql(p, "CREATE TABLE rs_myops_log (k varchar(10) NOT NULL, "
	                 "n int NOT NULL, v varchar(20), PRIMARY KEY (k, n)) "
	                 "DEFAULT CHARSET=utf8mb4 "
	                 "COLLATE=utf8mb4_general_ci") != 0 ||
	    setup_sql(p, "INSERT INTO rs_myops_log VALUES ('a', 1, 'x'), "
	                 "('b', 2, 'x'), ('c', 3, 'x'), ('d', 4, 'x'), "
	                 "('e', 5, 'x')") != 0)
		goto out;
	myops_check_fence(p, r, app);
	myops_check_markers(p);
	myops_check_delete_log(p, app);
	myops_check_lock(p, app);
	myops_check_replication(p, r, replica_url);
out:
	if (app != NULL)
		setup_sql(p, "DROP TABLE IF EXISTS rs_myops_t, rs_myops_u, "
		             "rs_myops_free, rs_myops_log, "
		             "reshard_del_rs_myops_log, reshard_marker");
	close_backend(app);
	close_backend(r);
}

/* backend_promoted on R: an enum rs_replica_state, or -1 after a "not ok"
 * line. */
static int
myops_promoted(struct rs_backend *r)
{
	struct my_call c = {0};

	if (await(&c.call, backend_promoted(r, myops_on_count, &c, &c.call.err),
	          "promoted") != 0) {
		check(0, "my: promoted: %s", c.call.err.message);
		return -1;
	}
	return (int)c.value;
}

/* backend_resume_replication on R, checked as WHAT. */
static void
myops_resume(struct rs_backend *r, const char *what)
{
	struct call done = {0};
	int rc = await(&done,
	               backend_resume_replication(r, on_done, &done, &done.err),
	               "resume_replication");

	check_status(rc, &done.err, "%s", what);
}

/* backend_promoted on R, until it says WANT (at most 10 s): the state it
 * said last. */
static int
myops_promoted_becomes(struct rs_backend *r, int want)
{
	int state = myops_promoted(r);

	for (int i = 0; i < 200 && state >= 0 && state != want; i++) {
		usleep(50 * 1000);
		state = myops_promoted(r);
	}
	return state;
}

/* backend_promote on R, checked as WHAT. */
static void
myops_promote(struct rs_backend *r, const char *what)
{
	struct call done = {0};
	int rc = await(&done, backend_promote(r, on_done, &done, &done.err),
	               "promote");

	check_status(rc, &done.err, "%s", what);
}

/* The relay logs of the test replica (integration/servers.sh names them
 * after the server: my-replica-relay-bin.NNNNNN): the lowest and highest
 * number there.  Returns how many there are, -1 when the folder cannot be
 * read. */
static int
myops_relay_logs(int *lowest, int *highest)
{
	const char *dir = getenv("RESHARD_SERVERS_DIR");
	char pattern[PATH_MAX];
	glob_t g;
	int n = 0;

	*lowest = INT_MAX;
	*highest = -1;
	if (dir == NULL)
		return -1;
	snprintf(pattern, sizeof(pattern),
	         "%s/my-replica/my-replica-relay-bin.[0-9]*", dir);
	if (glob(pattern, 0, NULL, &g) != 0)
		return -1;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		const char *digits = strrchr(g.gl_pathv[i], '.') + 1;
		char *end;
		long k = strtol(digits, &end, 10);

		/* Only names that end in the number (not "….000012.tmp"). */
		if (*end != '\0' || k < 0 || k > INT_MAX)
			continue;
		n++;
		*lowest = (int)k < *lowest ? (int)k : *lowest;
		*highest = (int)k > *highest ? (int)k : *highest;
	}
	globfree(&g);
	return n;
}

/* backend_promote_ready on R, checked as WHAT. */
static void
myops_promote_ready(struct rs_backend *r, const char *what)
{
	struct call done = {0};
	int rc = await(&done,
	               backend_promote_ready(r, on_done, &done, &done.err),
	               "promote_ready");

	check_status(rc, &done.err, "%s", what);
}

/* backend_check --promote-my: promote the MariaDB replica of
 * RESHARD_MY_PRIMARY_URL / RESHARD_MY_REPLICA_URL, after it caught up
 * with a last write; promote_ready (twice) rotates its relay log, the SQL
 * thread deletes the one in use before, and it goes on replicating;
 * promoted says what it is at each point: following, stopped after STOP
 * SLAVE (resume_replication, twice, starts it again and it applies a write
 * made meanwhile), promoted by a promote run from there, detached when
 * read-only without replication (a second promote finishes it); the
 * promoted server takes writes and is no replica any more.  Destroys the
 * pair: run last, then start it again. */
static int
check_my_promote(void)
{
	const char *primary_url = getenv("RESHARD_MY_PRIMARY_URL");
	const char *replica_url = getenv("RESHARD_MY_REPLICA_URL");
	struct rs_backend *p = NULL, *r = NULL;
	int lowest, highest;
	struct rs_err err;
	int rc;

	uv_loop_init(&check_loop);
	uv_timer_init(&check_loop, &wait_timer);
	if (!check(primary_url != NULL && replica_url != NULL,
	           "RESHARD_MY_PRIMARY_URL and RESHARD_MY_REPLICA_URL are set"))
		goto out;
	rc = open_backend("my", primary_url, CHECK_CONNECT_MS, &p, &err);
	if (rc == 0)
		rc = open_backend("my-replica", replica_url, CHECK_CONNECT_MS,
		                  &r, &err);
	if (!check_status(rc, &err, "my: connect primary and replica"))
		goto out;
	if (setup_sql(p, "DROP TABLE IF EXISTS rs_myops_p") != 0 ||
	    setup_sql(p, "CREATE TABLE rs_myops_p (id int PRIMARY KEY)") != 0 ||
	    setup_sql(p, "INSERT INTO rs_myops_p VALUES (1)") != 0 ||
	    myops_sync(p, r, "my: promote") != 0)
		goto out;
	/* Before the fence: the relay log in use now is rotated away twice
	 * and deleted by the SQL thread; the replica goes on replicating. */
	if (myops_relay_logs(&lowest, &highest) > 0) {
		int before = highest, gone = 0;

		myops_promote_ready(r, "my: promote_ready");
		myops_promote_ready(r, "my: promote_ready again (idempotent)");
		if (setup_sql(p, "INSERT INTO rs_myops_p VALUES (3)") != 0 ||
		    myops_sync(p, r, "my: promote_ready") != 0)
			goto out;
		for (int i = 0; i < 40 && !gone; i++) {
			gone = myops_relay_logs(&lowest, &highest) > 0 &&
			       lowest > before;
			if (!gone)
				usleep(50 * 1000);
		}
		check(highest >= before + 4,
		      "my: promote_ready: the relay log started again twice "
		      "a call (%d, then %d)",
		      before, highest);
		check(gone,
		      "my: promote_ready: the relay log in use before "
		      "(%d) is deleted (the lowest left: %d)",
		      before, lowest);
		check(myops_promoted(r) == 0,
		      "my: promote_ready: the replica still replicates");
		myops_rows_are(r, "rs_myops_p", "1;3",
		               "my: promote_ready: the replica applies writes");
		if (setup_sql(p, "DELETE FROM rs_myops_p WHERE id = 3") != 0 ||
		    myops_sync(p, r, "my: promote_ready") != 0)
			goto out;
	} else
		check(0, "my: the replica's relay logs are in "
		         "RESHARD_SERVERS_DIR/my-replica");
	/* Read-only, as replicas should be: promotion makes it writable. */
	if (setup_sql(r, "SET GLOBAL read_only = 1") != 0)
		goto out;
	check(myops_promoted(r) == RS_REPLICA_FOLLOWS,
	      "my: a replicating replica follows its primary");
	/* A promotion cut short after STOP SLAVE: stopped, which abort
	 * starts again (and again does nothing), and it applies what the
	 * primary wrote meanwhile. */
	if (setup_sql(r, "STOP SLAVE") != 0)
		goto out;
	check(myops_promoted(r) == RS_REPLICA_STOPPED,
	      "my: after STOP SLAVE the replica is stopped, not promoted");
	if (setup_sql(p, "INSERT INTO rs_myops_p VALUES (4)") != 0)
		goto out;
	myops_resume(r, "my: resume_replication");
	myops_resume(r, "my: resume_replication again (already running)");
	check(myops_promoted_becomes(r, RS_REPLICA_FOLLOWS) ==
	              RS_REPLICA_FOLLOWS,
	      "my: resumed, the replica follows its primary again");
	if (myops_sync(p, r, "my: resume_replication") != 0)
		goto out;
	myops_rows_are(r, "rs_myops_p", "1;4",
	               "my: resumed, the replica applied the write made "
	               "while it was stopped");
	if (setup_sql(p, "DELETE FROM rs_myops_p WHERE id = 4") != 0 ||
	    myops_sync(p, r, "my: resume_replication") != 0)
		goto out;
	/* Promote converges from there (a promote run again after it was
	 * cut short). */
	if (setup_sql(r, "STOP SLAVE") != 0)
		goto out;
	myops_promote(r, "my: promote a stopped replica");
	check(myops_promoted(r) == RS_REPLICA_PROMOTED,
	      "my: promoted: no replication left, read_only off");
	/* Cut short after RESET SLAVE ALL (read-only still): detached, not
	 * promoted, and a second promotion finishes it. */
	if (setup_sql(r, "SET GLOBAL read_only = 1") != 0)
		goto out;
	check(myops_promoted(r) == RS_REPLICA_DETACHED,
	      "my: no replication but read-only: detached, not promoted");
	myops_promote(r, "my: promote again (idempotent)");
	check(myops_promoted(r) == RS_REPLICA_PROMOTED, "my: promoted again");
	check_status(run_sql(r, "INSERT INTO rs_myops_p VALUES (2)", &err),
	             &err, "my: the promoted server takes a write");
	myops_rows_are(r, "rs_myops_p", "1;2", "my: promoted");
	myops_rows_are(p, "rs_myops_p", "1",
	               "my: the write stays on the promoted server");
	myops_refused(p, r, "does not replicate at all", "a promoted replica");
out:
	if (p != NULL)
		setup_sql(p, "DROP TABLE IF EXISTS rs_myops_p");
	close_backend(r);
	close_backend(p);
	uv_close((uv_handle_t *)&wait_timer, NULL);
	uv_run(&check_loop, UV_RUN_DEFAULT);
	rc = uv_loop_close(&check_loop);
	check(rc == 0, "loop closed cleanly");
	printf("%d passed, %d failed\n", n_passed, n_failed);
	return n_failed > 0 ? 1 : 0;
}

/* ==== end of group 8 ==== */

/* ==== 9. Change capture and reads by key (check_capture) ==== */

/*
 * On every engine with RS_CAP_CAPTURE (the others are skipped, saying
 * so), on rs_check_cap, key (k text, n int), shard key s: read_keys finds
 * the rows of the keys given, canonical keys first, leaves out keys that
 * match no row (also one whose first column matches), takes a key with
 * odd characters and 1,200 keys at once (several statements on
 * MariaDB), and no keys; capture logs, in position order, an insert
 * (NEW), an update of another column (NEW), of the shard key and of the
 * key (OLD then NEW, also 'd' to 'D', one key under MariaDB's
 * case-insensitive collation), a shard key set to NULL and a delete
 * (OLD), and nothing of a rolled-back insert; capture on again changes
 * nothing; off removes the log and the triggers (a write works and the
 * log is gone), twice; with the shard key in the key the log has only
 * the key.  MariaDB: a key it cannot take is RS_EKEY, a table name of
 * 46 characters can be captured and one of 47 is RS_ESCHEMA before
 * anything is sent, a change log of another shard key left behind is
 * RS_ESCHEMA before any trigger is made, a read by key that fails (one
 * statement, or several in a transaction) leaves the connection ready
 * for writes, and capture waits for a writer's open transaction (failing
 * after the lock timeout, retryable) and logs what is written once it is
 * on.
 */

#define CAP_TABLE "rs_check_cap"
#define CAP_LOG   "reshard_chg_rs_check_cap"
#define CAP_MANY  1000 /* rows m0000 … */
#define CAP_ASKED 1200 /* keys asked of them, 200 missing */

/* The odd key: quotes of every engine, a backslash, a semicolon, a
 * newline, a tab, an accent and an emoji. */
static const char cap_odd[] = "it's \"q\" `b` \\ ; --\n\té 😀";

/* CELLS (N) as "a|b|NULL", appended to OUT (SIZE). */
static void
cap_join(char *out, size_t size, const struct cell *cells, int n)
{
	for (int c = 0; c < n; c++) {
		size_t len = strlen(out);

		snprintf(out + len, size - len, "%s%.*s", c > 0 ? "|" : "",
		         cells[c].text != NULL ? (int)cells[c].len : 4,
		         cells[c].text != NULL ? cells[c].text : "NULL");
	}
}

static int
cap_strcmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The rows of GRID as "a|b;c|d", sorted when SORT (to free). */
static char *
cap_rows(const struct grid *grid, int sort)
{
	char **rows = xcalloc((size_t)grid->n_rows + 1, sizeof(*rows));
	size_t cap = 1, len = 0;
	char *text;

	for (int r = 0; r < grid->n_rows; r++) {
		size_t n = 8;

		for (int c = 0; c < grid->n_cols; c++)
			n += grid_row(grid, r)[c].len + 5;
		rows[r] = xcalloc(n, 1);
		cap_join(rows[r], n, grid_row(grid, r), grid->n_cols);
		cap += strlen(rows[r]) + 1;
	}
	if (sort)
		qsort(rows, (size_t)grid->n_rows, sizeof(*rows), cap_strcmp);
	text = xcalloc(cap, 1);
	for (int r = 0; r < grid->n_rows; r++) {
		len += (size_t)snprintf(text + len, cap - len, "%s%s",
		                        r > 0 ? ";" : "", rows[r]);
		free(rows[r]);
	}
	free(rows);
	return text;
}

/* Read the rows of TABLE whose keys are KEYS (canonical), the key then
 * COLUMNS (N_COLUMNS), into OUT.  Returns the status, ERR filled. */
static int
cap_read_keys(struct rs_backend *b, const struct rs_table_def *table,
              const int *columns, int n_columns, const struct grid *keys,
              struct grid *out, struct rs_err *err)
{
	struct rs_value *values = grid_values(keys, 0, keys->n_rows);
	struct rs_rows key_rows = {keys->n_rows, table->n_pk, values};
	struct rs_keys_request request = {table, columns, n_columns, &key_rows};
	struct call call = {.rows = out};
	int rc;

	grid_init(out, table->n_pk + n_columns);
	rc = await(&call,
	           backend_read_keys(b, &request, on_rows, &call, &call.err),
	           "read_keys");
	*err = call.err;
	free(values);
	return rc;
}

/* Add the key (K, N) to KEYS. */
static void
cap_key(struct grid *keys, const char *k, const char *n)
{
	struct cell *key = grid_add_row(keys);

	cell_set(&key[0], k, strlen(k));
	cell_set(&key[1], n, strlen(n));
}

/* Check read_keys of KEYS on TABLE (columns v then s, or none) against
 * WANT, sorted ("k|n|v|s;…"). */
static void
cap_check_read(struct engine *e, const struct rs_table_def *t,
               const struct grid *keys, int with_columns, const char *want,
               const char *what)
{
	const int columns[] = {3, 2};
	struct grid got;
	struct rs_err err;
	int rc = cap_read_keys(e->backend, t, columns, with_columns ? 2 : 0,
	                       keys, &got, &err);

	if (check_status(rc, &err, "%s: read_keys %s", e->shard, what)) {
		char *text = cap_rows(&got, 1);

		/* The odd key has a newline: the rows only in diagnostics. */
		if (!check(strcmp(text, want) == 0,
		           "%s: read_keys %s: the rows found, each once",
		           e->shard, what)) {
			diag("want %s", want);
			diag("got  %s", text);
		}
		free(text);
	}
	grid_free(&got);
}

static void
cap_check_reads(struct engine *e, const struct rs_table_def *t)
{
	struct grid keys, many;
	struct grid got;
	struct rs_err err;
	char *want;
	int rc, exact = 1;

	grid_init(&keys, 2);
	cap_key(&keys, "a", "1");
	cap_key(&keys, "zz", "9");
	cap_key(&keys, cap_odd, "3");
	cap_key(&keys, "b", "2");
	want = xprintf("a|1|x|10;b|2|x|20;%s|3|odd|30", cap_odd);
	cap_check_read(e, t, &keys, 1, want, "of 4 keys, one missing, one odd");
	free(want);
	grid_free(&keys);

	grid_init(&keys, 2);
	cap_key(&keys, "a", "2");
	cap_key(&keys, "b", "2");
	cap_key(&keys, "c", "1");
	cap_check_read(e, t, &keys, 0, "b|2",
	               "of the key columns only, (a, 2) and (c, 1) missing");
	grid_free(&keys);

	grid_init(&keys, 2);
	cap_check_read(e, t, &keys, 1, "", "of no keys");
	grid_free(&keys);

	/* More keys than one statement takes, a few hundred missing. */
	grid_init(&many, 2);
	for (int i = 0; i < CAP_ASKED; i++) {
		char k[16], n[16];

		snprintf(k, sizeof(k), "m%04d", i);
		snprintf(n, sizeof(n), "%d", i);
		cap_key(&many, k, n);
	}
	rc = cap_read_keys(e->backend, t, NULL, 0, &many, &got, &err);
	if (check_status(rc, &err, "%s: read_keys of %d keys", e->shard,
	                 CAP_ASKED)) {
		char *text = cap_rows(&got, 1);
		char *all;
		struct grid found;

		grid_init(&found, 2);
		for (int i = 0; i < CAP_MANY; i++)
			cap_key(&found, grid_row(&many, i)[0].text,
			        grid_row(&many, i)[1].text);
		all = cap_rows(&found, 1);
		exact = strcmp(text, all) == 0;
		check(exact,
		      "%s: read_keys of %d keys: the %d found, each once",
		      e->shard, CAP_ASKED, CAP_MANY);
		if (!exact)
			diag("%d rows came back", got.n_rows);
		free(all);
		free(text);
		grid_free(&found);
	}
	grid_free(&got);
	grid_free(&many);

	if (strcmp(backend_engine(e->backend), "mysql") == 0) {
		grid_init(&keys, 2);
		cap_key(&keys, "a", "1");
		cap_key(&keys, "a", "one");
		rc = cap_read_keys(e->backend, t, NULL, 0, &keys, &got, &err);
		check(rc == RS_EKEY && strstr(err.message, "column n") != NULL,
		      "%s: read_keys of a key MariaDB cannot take (n = 'one') "
		      "fails with RS_EKEY naming the column (%d)",
		      e->shard, rc);
		diag("%s", err.message);
		grid_free(&got);
		grid_free(&keys);
	}
}

/* Check that the change log holds WANT ("k|n|s;…", positions left out),
 * with positions that increase. */
static void
cap_log_is(struct engine *e, const char *want, const char *what)
{
	struct rs_table_def *def = NULL;
	struct snapshot snap = {0};
	struct grid rest;
	char *text;
	int64_t last = INT64_MIN;
	int ordered = 1;

	if (read_table(e->backend, CAP_LOG, &def, &snap) != 0) {
		backend_table_free(def);
		return;
	}
	grid_init(&rest, snap.canon.n_cols - 1);
	for (int r = 0; r < snap.canon.n_rows; r++) {
		const struct cell *row = grid_row(&snap.canon, r);
		struct cell *to = grid_add_row(&rest);
		int64_t pos = row[0].text != NULL
		                      ? strtoll(row[0].text, NULL, 10)
		                      : INT64_MIN;

		ordered &= pos > last;
		last = pos;
		for (int c = 1; c < snap.canon.n_cols; c++)
			cell_set(&to[c - 1], row[c].text, row[c].len);
	}
	text = cap_rows(&rest, 0);
	check(ordered && strcmp(text, want) == 0,
	      "%s: %s: the change log holds \"%s\" in increasing positions "
	      "(got \"%s\"%s)",
	      e->shard, what, want, text, ordered ? "" : ", out of order");
	free(text);
	grid_free(&rest);
	snapshot_free(&snap);
	backend_table_free(def);
}

static int
cap_capture(struct rs_backend *b, const struct rs_table_def *t, int key, int on,
            struct rs_err *err)
{
	struct call c = {0};
	int rc = await(&c, backend_capture(b, t, key, on, on_done, &c, &c.err),
	               "capture");

	*err = c.err;
	return rc;
}

/* Whether the change log is gone (describe says RS_ESCHEMA). */
static int
cap_log_gone(struct engine *e)
{
	struct rs_table_def *def = NULL;
	struct rs_err err;
	int rc = describe(e->backend, CAP_LOG, &def, &err);

	backend_table_free(def);
	return rc == RS_ESCHEMA;
}

/* The SQL of an application's write, checked. */
static void
cap_write(struct engine *e, const char *sql)
{
	struct rs_err err;

	check_status(run_sql(e->backend, sql, &err), &err, "%s: %s", e->shard,
	             sql);
}

/* PostgreSQL: an application role with no right on reshard's logs
 * writes to its table while the change log and the delete log are on
 * (their functions run with reshard's rights), and a temporary table it
 * makes under the change log's name catches nothing (pg_temp is searched
 * last in them).  Before, the role's writes failed: permission denied.
 * And a TRUNCATE, which no row trigger sees, is refused. */
static void
cap_check_pg(struct engine *e, const struct rs_table_def *t)
{
	/* Its own trigger calling one of reshard's log functions would
	 * write into that log with reshard's rights. */
	static const char *const baits[] = {
		"CREATE TRIGGER rs_check_bait AFTER DELETE ON "
		"pg_temp.rs_check_bait FOR EACH ROW EXECUTE FUNCTION "
		"reshard_del_rs_check_cap()",
		"CREATE TRIGGER rs_check_bait2 AFTER INSERT ON "
		"pg_temp.rs_check_bait FOR EACH ROW EXECUTE FUNCTION "
		"reshard_chg_rs_check_cap()"};
	static const char *const bait_checks[] = {
		"another role cannot make a trigger calling the delete log's "
		"function",
		"nor one calling the change log's"};
	struct pgx_call x;
	struct rs_err err;
	int64_t n = -1, before = -1;
	int rc = cap_capture(e->backend, t, 2, 1, &err);

	if (!check_status(rc, &err, "%s: capture on, for another role",
	                  e->shard))
		return;
	rc = pgx_delete_log(e->backend, t, RS_DELETE_LOG_ON, &x);
	check_status(rc, &x.call.err, "%s: delete log on", e->shard);
	cap_write(e,
	          "DO $$BEGIN IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles "
	          "WHERE rolname = 'rs_check_app') THEN CREATE ROLE "
	          "rs_check_app NOLOGIN; END IF; END$$");
	cap_write(e, "GRANT SELECT, INSERT, UPDATE, DELETE ON rs_check_cap TO "
	             "rs_check_app");
	cap_write(e, "SET ROLE rs_check_app");
	cap_write(e, "CREATE TEMP TABLE reshard_chg_rs_check_cap "
	             "(reshard_pos bigint, k text, n int, s int)");
	cap_write(e, "INSERT INTO rs_check_cap (k, n, s, v) "
	             "VALUES ('g', 7, 70, 'x')");
	cap_write(e, "UPDATE rs_check_cap SET s = 71 WHERE k = 'g'");
	cap_write(e, "DELETE FROM rs_check_cap WHERE k = 'g'");
	/* The log functions are not its to call (baits). */
	cap_write(e, "CREATE TEMP TABLE rs_check_bait (k text, n int)");
	for (int i = 0; i < 2; i++) {
		rc = run_sql(e->backend, baits[i], &err);
		check(rc == RS_EQUERY &&
		              strstr(err.message, "permission denied") != NULL,
		      "%s: %s (%d: %s)", e->shard, bait_checks[i], rc,
		      err.message);
	}
	cap_write(e, "RESET ROLE");
	cap_write(e, "DISCARD TEMP");
	cap_log_is(e, "g|7|70;g|7|70;g|7|71;g|7|71",
	           "another role's insert, update of s and delete");
	rc = count_rows(e->backend, "reshard_del_" CAP_TABLE, &n, &err);
	check(rc == 0 && n == 1,
	      "%s: the delete log holds another role's delete (%lld rows, "
	      "%d)",
	      e->shard, (long long)n, rc);
	/* A TRUNCATE fires no row trigger: refused while capture is on. */
	rc = count_rows(e->backend, CAP_TABLE, &before, &err);
	check_status(rc, &err, "%s: count %s", e->shard, CAP_TABLE);
	rc = run_sql(e->backend, "TRUNCATE rs_check_cap", &err);
	check(rc == RS_EQUERY &&
	              strstr(err.message, "TRUNCATE of rs_check_cap refused") !=
	                      NULL &&
	              strcmp(err.sqlstate, "55000") == 0,
	      "%s: a TRUNCATE under capture is refused, SQLSTATE 55000, "
	      "naming the table (%d: %s)",
	      e->shard, rc, err.message);
	rc = count_rows(e->backend, CAP_TABLE, &n, &err);
	check(rc == 0 && n == before && n > 0,
	      "%s: the refused TRUNCATE left the %lld rows (%lld)", e->shard,
	      (long long)before, (long long)n);
	check_status(pgx_delete_log(e->backend, t, 0, &x), &x.call.err,
	             "%s: delete log off", e->shard);
	check_status(cap_capture(e->backend, t, 2, 0, &err), &err,
	             "%s: capture off", e->shard);
	cap_write(e, "REVOKE ALL ON rs_check_cap FROM rs_check_app");
	cap_write(e, "DROP ROLE rs_check_app");
}

/* MariaDB: names at the length limit, and capture against a writer's
 * open transaction. */
static void
cap_check_my(struct engine *e, const struct rs_table_def *t)
{
	char name46[64], name47[64];
	struct rs_table_def *def = NULL, fake;
	struct rs_backend *app = NULL;
	struct rs_err err;
	char *ddl;
	int rc;

	snprintf(name46, sizeof(name46), "rs_check_cap_%033d", 0);
	snprintf(name47, sizeof(name47), "rs_check_cap_%034d", 0);
	fake = *t;
	fake.name = name47;
	rc = cap_capture(e->backend, &fake, 2, 1, &err);
	check(rc == RS_ESCHEMA && strstr(err.message, name47) != NULL &&
	              strstr(err.message, "up to 46") != NULL,
	      "%s: capture of a table of 47 characters: RS_ESCHEMA naming it "
	      "and the 46 that fit (%d)",
	      e->shard, rc);
	diag("%s", err.message);
	check_status(cap_capture(e->backend, &fake, 2, 0, &err), &err,
	             "%s: capture off on it does nothing", e->shard);
	ddl = xprintf("CREATE TABLE %s (id int PRIMARY KEY, s int)", name46);
	if (fresh_table(e, name46, ddl) == 0 &&
	    describe(e->backend, name46, &def, &err) == 0) {
		check_status(cap_capture(e->backend, def, 1, 1, &err), &err,
		             "%s: capture of a table of 46 characters",
		             e->shard);
		check_status(cap_capture(e->backend, def, 1, 0, &err), &err,
		             "%s: and off", e->shard);
	}
	free(ddl);
	backend_table_free(def);
	ddl = xprintf("DROP TABLE IF EXISTS %s", name46);
	setup_sql(e->backend, ddl);
	free(ddl);

	/* A log of another shard key, left without its triggers, is
	 * refused before any trigger: one logging v into it would fail
	 * every write. */
	if (check_status(cap_capture(e->backend, t, 2, 1, &err), &err,
	                 "%s: capture on (shard key s)", e->shard) &&
	    setup_sql(e->backend,
	              "DROP TRIGGER reshard_capture_i_rs_check_cap") == 0 &&
	    setup_sql(e->backend,
	              "DROP TRIGGER reshard_capture_u_rs_check_cap") == 0 &&
	    setup_sql(e->backend,
	              "DROP TRIGGER reshard_capture_d_rs_check_cap") == 0) {
		rc = cap_capture(e->backend, t, 3, 1, &err);
		check(rc == RS_ESCHEMA &&
		              strstr(err.message, "other columns") != NULL,
		      "%s: capture on with shard key v while s's log is "
		      "there: RS_ESCHEMA (%d)",
		      e->shard, rc);
		diag("%s", err.message);
		cap_write(e, "INSERT INTO rs_check_cap VALUES ('h', 1, 1, "
		             "'no trigger made')");
		cap_log_is(e, "", "after the refusal");
		check_status(cap_capture(e->backend, t, 3, 0, &err), &err,
		             "%s: capture off", e->shard);
	}
	/* A failed SELECT: alone, and in the transaction of several. */
	for (int n = 1; n <= 600; n += 599) {
		struct grid keys, got;

		fake.name = "rs_check_cap_missing";
		grid_init(&keys, 2);
		for (int i = 0; i < n; i++)
			cap_key(&keys, "m", "1");
		rc = cap_read_keys(e->backend, &fake, NULL, 0, &keys, &got,
		                   &err);
		check(rc == RS_EQUERY && err.server_errno == 1146,
		      "%s: read_keys of %d keys from a missing table: "
		      "RS_EQUERY (%d, errno %d)",
		      e->shard, n, rc, err.server_errno);
		grid_free(&got);
		grid_free(&keys);
		cap_write(e, "INSERT INTO rs_check_cap VALUES ('g', 1, 1, "
		             "'connection fine')");
		cap_write(e, "DELETE FROM rs_check_cap WHERE k = 'g'");
	}

	rc = open_backend("my-app", e->url, CHECK_CONNECT_MS, &app, &err);
	if (!check_status(rc, &err, "%s: an application's connection",
	                  e->shard)) {
		close_backend(app);
		return;
	}
	if (setup_sql(app, "START TRANSACTION") == 0 &&
	    setup_sql(app, "INSERT INTO rs_check_cap VALUES ('w', 1, 1, "
	                   "'open')") == 0) {
		uint64_t start = uv_now(&check_loop);

		rc = cap_capture(e->backend, t, 2, 1, &err);
		check(rc == RS_EQUERY && err.retryable &&
		              err.server_errno == 1205 &&
		              uv_now(&check_loop) - start < 5000,
		      "%s: capture waits for a writer's open transaction, "
		      "then fails within about the lock timeout, retryable "
		      "(%d, errno %d)",
		      e->shard, rc, err.server_errno);
		diag("%s", err.message);
		setup_sql(app, "COMMIT");
		check_status(cap_capture(e->backend, t, 2, 1, &err), &err,
		             "%s: capture once the writer committed", e->shard);
		cap_write(e, "INSERT INTO rs_check_cap VALUES ('w', 2, 2, "
		             "'after')");
		cap_log_is(e, "w|2|2",
		           "the write committed before capture is not "
		           "logged, the one after it is");
		check_status(cap_capture(e->backend, t, 2, 0, &err), &err,
		             "%s: capture off", e->shard);
	}
	close_backend(app);
}

static void
cap_check_engine(struct engine *e)
{
	const char *ddl = e->sql->cap_ddl;
	char *drop = sql_fill(e->sql->drop, CAP_LOG);
	struct rs_table_def *t = NULL, *log = NULL;
	struct grid rows;
	struct rs_err err;
	int rc;

	if (!backend_supports(e->backend, RS_CAP_CAPTURE)) {
		diag("%s: change capture and reads by key: not supported by "
		     "this engine yet, skipped",
		     e->shard);
		free(drop);
		return;
	}
	rc = setup_sql(e->backend, drop);
	free(drop);
	if (rc != 0 || fresh_table(e, CAP_TABLE, ddl) != 0)
		return;
	if (describe(e->backend, CAP_TABLE, &t, &err) != 0) {
		check(0, "%s: describe %s: %s", e->shard, CAP_TABLE,
		      err.message);
		return;
	}
	/* Rows as canonical values, the odd key among them: k, n, s, v. */
	grid_init(&rows, 4);
	{
		const char *seed[][4] = {{"a", "1", "10", "x"},
		                         {"b", "2", "20", "x"},
		                         {cap_odd, "3", "30", "odd"}};

		for (size_t i = 0; i < sizeof(seed) / sizeof(seed[0]); i++) {
			struct cell *row = grid_add_row(&rows);

			for (int c = 0; c < 4; c++)
				cell_set(&row[c], seed[i][c],
				         strlen(seed[i][c]));
		}
		for (int i = 0; i < CAP_MANY; i++) {
			struct cell *row = grid_add_row(&rows);
			char k[16], n[16];

			snprintf(k, sizeof(k), "m%04d", i);
			snprintf(n, sizeof(n), "%d", i);
			cell_set(&row[0], k, strlen(k));
			cell_set(&row[1], n, strlen(n));
		}
	}
	rc = upsert_grid(e->backend, t, &rows, 500, &err);
	grid_free(&rows);
	if (!check_status(rc, &err, "%s: %s: %d rows written", e->shard,
	                  CAP_TABLE, 3 + CAP_MANY))
		goto out;
	cap_check_reads(e, t);

	rc = cap_capture(e->backend, t, 2, 1, &err);
	if (!check_status(rc, &err, "%s: capture on (shard key s)", e->shard))
		goto out;
	check_status(cap_capture(e->backend, t, 2, 1, &err), &err,
	             "%s: capture on again", e->shard);
	rc = describe(e->backend, CAP_LOG, &log, &err);
	if (check_status(rc, &err, "%s: describe the change log", e->shard))
		check(log->n_columns == 4 && log->n_pk == 1 &&
		              log->pk[0] == 0 &&
		              strcmp(log->columns[0].name, "reshard_pos") ==
		                      0 &&
		              strcmp(log->columns[1].name, "k") == 0 &&
		              strcmp(log->columns[2].name, "n") == 0 &&
		              strcmp(log->columns[3].name, "s") == 0 &&
		              log->columns[0].kind == RS_COL_INTEGER,
		      "%s: the change log is (reshard_pos, k, n, s), keyed on "
		      "reshard_pos",
		      e->shard);
	backend_table_free(log);
	cap_log_is(e, "", "a new capture");
	cap_write(e, "INSERT INTO rs_check_cap (k, n, s, v) "
	             "VALUES ('c', 3, 30, 'x')");
	cap_write(e, "UPDATE rs_check_cap SET v = 'y' WHERE k = 'a'");
	cap_write(e, "UPDATE rs_check_cap SET s = 11 WHERE k = 'a'");
	cap_write(e, "UPDATE rs_check_cap SET k = 'd' WHERE k = 'b'");
	cap_write(e, "UPDATE rs_check_cap SET k = 'D' WHERE k = 'd'");
	cap_write(e, "UPDATE rs_check_cap SET s = NULL WHERE k = 'c'");
	cap_write(e, "DELETE FROM rs_check_cap WHERE k = 'c'");
	cap_write(e, "BEGIN");
	cap_write(e, "INSERT INTO rs_check_cap (k, n, s, v) "
	             "VALUES ('e', 5, 50, 'x')");
	cap_write(e, "ROLLBACK");
	cap_log_is(e,
	           "c|3|30;a|1|10;a|1|10;a|1|11;b|2|20;d|2|20;d|2|20;D|2|20;"
	           "c|3|30;c|3|NULL;c|3|NULL",
	           "an insert, updates of v, s, k (twice) and s to NULL, a "
	           "delete, a rolled-back insert");
	check_status(cap_capture(e->backend, t, 2, 1, &err), &err,
	             "%s: capture on once more", e->shard);
	cap_log_is(e,
	           "c|3|30;a|1|10;a|1|10;a|1|11;b|2|20;d|2|20;d|2|20;D|2|20;"
	           "c|3|30;c|3|NULL;c|3|NULL",
	           "capture on once more");
	check_status(cap_capture(e->backend, t, 2, 0, &err), &err,
	             "%s: capture off", e->shard);
	check(cap_log_gone(e), "%s: the change log is gone", e->shard);
	check_status(cap_capture(e->backend, t, 2, 0, &err), &err,
	             "%s: capture off again", e->shard);
	/* A trigger left behind would fail the write: its log is gone. */
	cap_write(e, "INSERT INTO rs_check_cap (k, n, s, v) "
	             "VALUES ('f', 6, 60, 'x')");
	check(cap_log_gone(e), "%s: a write after capture off is not logged",
	      e->shard);

	/* The shard key in the primary key: the log holds the key only. */
	rc = cap_capture(e->backend, t, 0, 1, &err);
	if (check_status(rc, &err, "%s: capture on (shard key k, in the key)",
	                 e->shard)) {
		rc = describe(e->backend, CAP_LOG, &log, &err);
		if (check_status(rc, &err, "%s: describe the change log",
		                 e->shard))
			check(log->n_columns == 3,
			      "%s: the change log is (reshard_pos, k, n) (%d "
			      "columns)",
			      e->shard, log->n_columns);
		backend_table_free(log);
		cap_write(e, "UPDATE rs_check_cap SET s = 61 WHERE k = 'f'");
		cap_log_is(e, "f|6", "an update of the key's row");
		check_status(cap_capture(e->backend, t, 0, 0, &err), &err,
		             "%s: capture off", e->shard);
	}
	if (strcmp(backend_engine(e->backend), "mysql") == 0)
		cap_check_my(e, t);
	else if (strcmp(backend_engine(e->backend), "postgresql") == 0)
		cap_check_pg(e, t);
out:
	backend_table_free(t);
}

static void
check_capture(struct engine *engines)
{
	for (int i = 0; i < N_ENGINES; i++) {
		char *drop;

		cap_check_engine(&engines[i]);
		drop = sql_fill(engines[i].sql->drop, CAP_LOG);
		if (backend_supports(engines[i].backend, RS_CAP_CAPTURE))
			setup_sql(engines[i].backend, drop);
		free(drop);
	}
}

/* ==== end of group 9 ==== */

/* ---- main ---- */

int
main(int argc, char **argv)
{
	struct engine engines[N_ENGINES] = {
		[ENG_PG] = {.shard = "pg"},
		[ENG_MY] = {.shard = "my"},
		[ENG_LITE] = {.shard = "lite"},
	};
	char *sqlite_path, *sqlite_url;
	FILE *file;
	int all_connected = 1, rc;

	if (argc > 1 && strcmp(argv[1], "--promote-pg") == 0)
		return pg_promote_mode(argc, argv);
	if (argc == 2 && strcmp(argv[1], "--promote-my") == 0)
		return check_my_promote();
	if (argc != 4) {
		fprintf(stderr, "usage: %s URL_PG URL_MY SQLITE_DIR\n",
		        argv[0]);
		return 2;
	}
	/* SQLite shards must exist: an empty file is an empty database. */
	sqlite_path = xprintf("%s/%s", argv[3], CHECK_SQLITE_FILE);
	sqlite_url = xprintf("sqlite://%s", sqlite_path);
	file = fopen(sqlite_path, "w");
	if (file == NULL) {
		fprintf(stderr, "backend_check: cannot create %s\n",
		        sqlite_path);
		free(sqlite_path);
		free(sqlite_url);
		return 2;
	}
	fclose(file);
	engines[ENG_PG].url = argv[1];
	engines[ENG_MY].url = argv[2];
	engines[ENG_LITE].url = sqlite_url;
	uv_loop_init(&check_loop);
	uv_timer_init(&check_loop, &wait_timer);

	for (int i = 0; i < N_ENGINES; i++) {
		struct rs_err err;

		engines[i].sql = dialects[i];
		rc = open_backend(engines[i].shard, engines[i].url,
		                  CHECK_CONNECT_MS, &engines[i].backend, &err);
		if (!check_status(rc, &err, "%s: connect", engines[i].shard))
			all_connected = 0;
	}
	if (all_connected) {
		check_same_rows(engines);
		check_copy(engines);
		check_quoting(engines);
		check_errors(engines, argv[3]);
		check_kill(&engines[ENG_PG]);
		check_kill(&engines[ENG_MY]);
		check_deadline_pg(&engines[ENG_PG]);
		check_deadline_my(&engines[ENG_MY]);
		check_deadline_sqlite(&engines[ENG_LITE]);
		check_keys(engines);
		check_pg_ops(&engines[ENG_PG]);
		check_my_ops(&engines[ENG_MY]);
		check_capture(engines);
	}

	for (int i = 0; i < N_ENGINES; i++) {
		close_backend(engines[i].backend);
		snapshot_free(&engines[i].types_rows);
		backend_table_free(engines[i].types);
		backend_table_free(engines[i].copy);
		backend_table_free(engines[i].quoted);
		backend_table_free(engines[i].sentinel);
		backend_table_free(engines[i].xkeys);
	}
	uv_close((uv_handle_t *)&wait_timer, NULL);
	uv_run(&check_loop, UV_RUN_DEFAULT);
	rc = uv_loop_close(&check_loop);
	check(rc == 0, "loop closed cleanly%s%s", rc != 0 ? ": " : "",
	      rc != 0 ? uv_strerror(rc) : "");
	free(sqlite_path);
	free(sqlite_url);
	printf("%d passed, %d failed\n", n_passed, n_failed);
	return n_failed > 0 ? 1 : 0;
}
