/*
 * The journal behind journal.h: one SQLite file per plan, written through
 * the plain synchronous C API (WAL mode, synchronous=FULL), so that a
 * function that records something returns only once it is durable.
 *
 * Schema (PRAGMA user_version = JOURNAL_SCHEMA_VERSION, also kept in the
 * setup row for people reading the file):
 *   setup   one row pinning the run's identity: fingerprint and plan text
 *           (pgcopydb's catalog setup table);
 *   runs    one row per process that opened the journal to work on it;
 *   steps   one row per step ever begun, in the order of first_begun;
 *   chunks  checkpoints: intent ("started") before the side effect, result
 *           ("done") after it (Vitess copy_state);
 *   facts   small named values that outlive a process;
 *   events  the log for people.
 * Every write is a single statement in autocommit mode (or one explicit
 * transaction when the schema is created), so it is committed before the
 * function returns.  Every value is bound, never pasted into SQL.
 *
 * The run lock is in journal_lock.c, and the plan pinned in the setup row,
 * with the comparison that refuses a changed plan, in journal_plan.c;
 * journal_impl.h declares what they share with this file.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "journal/journal.h"
#include "journal/journal_impl.h"
#include "common/strbuf.h"

#define JOURNAL_STR_(x) #x
#define JOURNAL_STR(x)  JOURNAL_STR_(x)

/* How long a statement waits for another connection (a reader's
 * checkpoint, status) before it fails with SQLITE_BUSY. */
#define JOURNAL_BUSY_TIMEOUT_MS 5000

/* The size of a step name in the records, terminator included. */
#define JOURNAL_STEP_NAME_SIZE sizeof(((struct rs_step_record *)0)->name)

/* Rows purge kept on a shard that no longer owns them: their owner has no
 * copy and no record of deleting them (written to the old owner by a
 * router with stale routing).  final-check lists them while they remain. */
#define JOURNAL_KEPT_TABLE                                                     \
	"CREATE TABLE kept_rows ("                                             \
	" shard TEXT NOT NULL,"                                                \
	" table_name TEXT NOT NULL,"                                           \
	" pk TEXT NOT NULL," /* JSON array of the primary key */               \
	" shard_key TEXT,"   /* NULL for a NULL key */                         \
	" owner TEXT NOT NULL,"                                                \
	" kept_at INTEGER NOT NULL,"                                           \
	" PRIMARY KEY (shard, table_name, pk)) WITHOUT ROWID;"

/* The differences a verify found (journal_diff.c), by pass: the run's
 * step "verify" or the command's "verify-on-demand"; CHUNK is the number of
 * the source chunk that found it, so that a chunk done again replaces
 * its own. */
#define JOURNAL_DIFF_TABLE                                                     \
	"CREATE TABLE differences ("                                           \
	" pass TEXT NOT NULL,"                                                 \
	" shard TEXT NOT NULL,"      /* the old owner */                       \
	" table_name TEXT NOT NULL," /* its physical table */                  \
	" chunk INTEGER NOT NULL,"                                             \
	" pk TEXT NOT NULL,"    /* JSON array of the primary key */            \
	" shard_key TEXT,"      /* NULL for a NULL key */                      \
	" owner TEXT NOT NULL," /* the new owner: shard.table */               \
	" kind TEXT NOT NULL CHECK (kind IN ('missing', 'extra', 'differs'))," \
	" columns TEXT," /* JSON array of names, for differs */                \
	" found_at INTEGER NOT NULL,"                                          \
	" PRIMARY KEY (pass, shard, table_name, pk, owner)) WITHOUT ROWID;"

static const char journal_schema[] =
	"CREATE TABLE setup ("
	" id INTEGER PRIMARY KEY CHECK (id = 1),"
	" schema_version INTEGER NOT NULL,"
	" fingerprint TEXT NOT NULL,"
	" plan_text TEXT NOT NULL,"
	" created_at INTEGER NOT NULL);"
	"CREATE TABLE runs ("
	" id INTEGER PRIMARY KEY,"
	" pid INTEGER NOT NULL,"
	" host TEXT NOT NULL,"
	" started_at INTEGER NOT NULL,"
	" ended_at INTEGER,"
	" outcome TEXT,"
	" command TEXT NOT NULL DEFAULT 'run');"
	"CREATE TABLE steps ("
	" name TEXT PRIMARY KEY,"
	" state TEXT NOT NULL"
	"  CHECK (state IN ('pending', 'running', 'done', 'failed',"
	"                   'stopped')),"
	" attempts INTEGER NOT NULL,"
	" started_at INTEGER,"
	" finished_at INTEGER,"
	" rows INTEGER NOT NULL DEFAULT 0,"
	" error TEXT NOT NULL DEFAULT '',"
	" first_begun INTEGER NOT NULL UNIQUE);"
	"CREATE TABLE chunks ("
	" step TEXT NOT NULL REFERENCES steps (name),"
	" shard TEXT NOT NULL,"
	" table_name TEXT NOT NULL,"
	" number INTEGER NOT NULL,"
	" after_key TEXT,"
	" upto_key TEXT,"
	" state TEXT NOT NULL CHECK (state IN ('started', 'done')),"
	" rows INTEGER NOT NULL,"
	" checksum INTEGER NOT NULL," /* the uint64's bits as int64 */
	" affected INTEGER NOT NULL,"
	" seq INTEGER NOT NULL DEFAULT 0," /* order of the last write */
	" PRIMARY KEY (step, shard, table_name, number)) WITHOUT ROWID;"
	"CREATE TABLE facts ("
	" name TEXT PRIMARY KEY,"
	" value TEXT NOT NULL);"
	"CREATE TABLE events ("
	" id INTEGER PRIMARY KEY,"
	" at INTEGER NOT NULL,"
	" level TEXT NOT NULL,"
	" message TEXT NOT NULL);" JOURNAL_KEPT_TABLE JOURNAL_DIFF_TABLE
	"PRAGMA user_version = " JOURNAL_STR(JOURNAL_SCHEMA_VERSION) ";";

/* Version 1 → 2: steps may be 'stopped'; rows kept by purge.  SQLite
 * cannot change a CHECK constraint in place, so steps is rebuilt. */
static const char journal_migrate_1[] =
	"CREATE TABLE steps_v2 ("
	" name TEXT PRIMARY KEY,"
	" state TEXT NOT NULL"
	"  CHECK (state IN ('pending', 'running', 'done', 'failed',"
	"                   'stopped')),"
	" attempts INTEGER NOT NULL,"
	" started_at INTEGER,"
	" finished_at INTEGER,"
	" rows INTEGER NOT NULL DEFAULT 0,"
	" error TEXT NOT NULL DEFAULT '',"
	" first_begun INTEGER NOT NULL UNIQUE);"
	"INSERT INTO steps_v2 SELECT name, state, attempts, started_at,"
	" finished_at, rows, error, first_begun FROM steps;"
	"DROP TABLE steps;"
	"ALTER TABLE steps_v2 RENAME TO steps;" JOURNAL_KEPT_TABLE
	"UPDATE setup SET schema_version = 2;"
	"PRAGMA user_version = 2;";

/* Version 2 → 3: which command each process ran (a verify is not a step
 * of the run); the differences verify found. */
static const char journal_migrate_2[] =
	"ALTER TABLE runs ADD COLUMN command TEXT NOT NULL DEFAULT "
	"'run';" JOURNAL_DIFF_TABLE "UPDATE setup SET schema_version = 3;"
	"PRAGMA user_version = 3;";

static const char *const journal_step_states[] = {
	[RS_STEP_PENDING] = "pending", [RS_STEP_RUNNING] = "running",
	[RS_STEP_DONE] = "done",       [RS_STEP_FAILED] = "failed",
	[RS_STEP_STOPPED] = "stopped",
};

/* The helpers of journal_impl.h (their contracts are there), with the
 * static ones only this file uses among them. */
int64_t
journal_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
journal_format_time(int64_t ms, char *buf, size_t size)
{
	time_t secs = (time_t)(ms / 1000);
	struct tm tm;

	if (gmtime_r(&secs, &tm) == NULL ||
	    strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm) == 0)
		snprintf(buf, size, "?");
}

int
journal_fail(struct rs_journal *journal, int rc, const char *what,
             const char *subject, struct rs_err *err)
{
	int code = RS_EIO;

	if ((rc & 0xff) == SQLITE_NOMEM)
		code = RS_ENOMEM;
	else if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
		return rs_err_set(err, RS_EINTERNAL,
		                  "journal %s: cannot %s%s%s: its step was "
		                  "never begun (a bug: please report it)",
		                  journal->path, what, subject ? " " : "",
		                  subject ? subject : "");
	rs_err_set(err, code, "journal %s: cannot %s%s%s: %s", journal->path,
	           what, subject ? " " : "", subject ? subject : "",
	           sqlite3_errmsg(journal->db));
	if (err != NULL) {
		err->server_errno = rc & 0xff;
		err->retryable = rs_err_retryable(NULL, rc & 0xff);
	}
	return code;
}

int
journal_prepare(struct rs_journal *journal, const char *sql,
                sqlite3_stmt **stmt, struct rs_err *err)
{
	int rc = sqlite3_prepare_v2(journal->db, sql, -1, stmt, NULL);

	if (rc != SQLITE_OK) {
		*stmt = NULL;
		return journal_fail(journal,
		                    sqlite3_extended_errcode(journal->db),
		                    "prepare", sql, err);
	}
	return 0;
}

int
journal_prepare_write(struct rs_journal *journal, const char *sql,
                      sqlite3_stmt **stmt, struct rs_err *err)
{
	*stmt = NULL;
	if (journal->readonly)
		return rs_err_set(err, RS_EINTERNAL,
		                  "journal %s was opened read-only and cannot "
		                  "be written (a bug: please report it)",
		                  journal->path);
	return journal_prepare(journal, sql, stmt, err);
}

int
journal_prepare_kept(struct rs_journal *journal, enum journal_kept which,
                     const char *sql, sqlite3_stmt **stmt, struct rs_err *err)
{
	int rc;

	*stmt = NULL;
	if (journal->kept[which] != NULL) {
		*stmt = journal->kept[which];
		return 0;
	}
	if (journal->readonly)
		return journal_prepare_write(journal, sql, stmt, err);
	rc = sqlite3_prepare_v3(journal->db, sql, -1, SQLITE_PREPARE_PERSISTENT,
	                        stmt, NULL);
	if (rc != SQLITE_OK) {
		*stmt = NULL;
		return journal_fail(journal,
		                    sqlite3_extended_errcode(journal->db),
		                    "prepare", sql, err);
	}
	journal->kept[which] = *stmt;
	return 0;
}

/* Done with STMT: finalize it, or reset a kept one for its next use. */
static void
journal_release(struct rs_journal *journal, sqlite3_stmt *stmt)
{
	for (int i = 0; i < JOURNAL_KEPT_MAX; i++)
		if (stmt != NULL && journal->kept[i] == stmt) {
			sqlite3_reset(stmt);
			sqlite3_clear_bindings(stmt);
			return;
		}
	sqlite3_finalize(stmt);
}

int
journal_bind_text(sqlite3_stmt *stmt, int index, const char *text, int rc)
{
	if (rc != SQLITE_OK)
		return rc;
	if (text == NULL)
		return sqlite3_bind_null(stmt, index);
	return sqlite3_bind_text(stmt, index, text, -1, SQLITE_STATIC);
}

int
journal_bind_int64(sqlite3_stmt *stmt, int index, int64_t value, int rc)
{
	if (rc != SQLITE_OK)
		return rc;
	return sqlite3_bind_int64(stmt, index, value);
}

int
journal_done(struct rs_journal *journal, sqlite3_stmt *stmt, int rc,
             const char *what, const char *subject, struct rs_err *err)
{
	int code = 0;

	if (rc != SQLITE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
		code = journal_fail(journal, rc, what, subject, err);
	journal_release(journal, stmt);
	return code;
}

int
journal_finish(struct rs_journal *journal, sqlite3_stmt *stmt, int bind_rc,
               const char *what, const char *subject, struct rs_err *err)
{
	int rc = bind_rc != SQLITE_OK ? bind_rc : sqlite3_step(stmt);

	/* A commit of its own that wrote, with synchronous = FULL: an
	 * fsync of the WAL. */
	if (rc == SQLITE_DONE && !journal->lazy &&
	    !sqlite3_stmt_readonly(stmt) &&
	    sqlite3_get_autocommit(journal->db) &&
	    sqlite3_changes(journal->db) > 0)
		journal->durable_writes++;
	return journal_done(journal, stmt, rc, what, subject, err);
}

int64_t
journal_durable_writes(const struct rs_journal *journal)
{
	return journal != NULL ? journal->durable_writes : 0;
}

/* Open J's WAL file for journal_sync_wal, now that a write (the run's
 * row) has made it.  SQLite keeps the file, the same inode, while a
 * connection is open: a checkpoint writes it again from its start, but
 * only after copying its frames into the database file and syncing that.
 * Without it (an odd VFS), journal_sync_wal says so and its callers sync
 * on their own thread. */
static void
journal_open_wal(struct rs_journal *j)
{
	const char *wal =
		sqlite3_filename_wal(sqlite3_db_filename(j->db, "main"));

	if (wal != NULL)
		j->wal_fd = open(wal, O_RDWR | O_CLOEXEC);
}

int
journal_can_sync_wal(const struct rs_journal *journal)
{
	return journal != NULL && journal->wal_fd >= 0;
}

int
journal_sync_wal(struct rs_journal *journal, struct rs_err *err)
{
	if (!journal_can_sync_wal(journal))
		return rs_err_set(err, RS_EUSAGE,
		                  "journal: no WAL file to sync (a bug: please "
		                  "report it)");
	if (fdatasync(journal->wal_fd) != 0) {
		char why[128];

		/* Off the loop thread: strerror_r, GNU's (the build sets
		 * _GNU_SOURCE), which returns the text. */
		return rs_err_set(err, RS_EIO,
		                  "journal %s: could not make it durable "
		                  "(fdatasync of its WAL file: %s); nothing "
		                  "more is done without it",
		                  journal->path,
		                  strerror_r(errno, why, sizeof(why)));
	}
	journal->durable_writes++;
	return 0;
}

int
journal_exec(struct rs_journal *journal, const char *sql, const char *what,
             struct rs_err *err)
{
	if (sqlite3_exec(journal->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return journal_fail(journal,
		                    sqlite3_extended_errcode(journal->db), what,
		                    NULL, err);
	return 0;
}

/* Read one integer from SQL (a PRAGMA or a SELECT with one column) into
 * *VALUE (0 when it returns no row); on error the code of journal_fail. */
static int
journal_query_int(struct rs_journal *journal, const char *sql, int64_t *value,
                  struct rs_err *err)
{
	sqlite3_stmt *stmt;
	int rc = journal_prepare(journal, sql, &stmt, err);

	if (rc != 0)
		return rc;
	*value = 0;
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW)
		*value = sqlite3_column_int64(stmt, 0);
	return journal_done(journal, stmt, rc, "read", sql, err);
}

char *
journal_column_dup(sqlite3_stmt *stmt, int col, int *failed)
{
	const unsigned char *text = sqlite3_column_text(stmt, col);
	char *copy;

	if (text == NULL)
		return NULL;
	copy = strdup((const char *)text);
	if (copy == NULL)
		*failed = 1;
	return copy;
}

/* Copy column COL of STMT's current row into BUF (SIZE bytes), cut if
 * longer; NULL gives "". */
static void
journal_column_copy(sqlite3_stmt *stmt, int col, char *buf, size_t size)
{
	const unsigned char *text = sqlite3_column_text(stmt, col);

	snprintf(buf, size, "%s", text != NULL ? (const char *)text : "");
}

/* Free JOURNAL's memory and handles without recording anything (the lock,
 * if any, is released). */
static void
journal_free(struct rs_journal *journal)
{
	if (journal == NULL)
		return;
	for (int i = 0; i < JOURNAL_KEPT_MAX; i++)
		sqlite3_finalize(journal->kept[i]);
	sqlite3_close(journal->db);
	if (journal->wal_fd >= 0)
		close(journal->wal_fd);
	if (journal->lock_fd >= 0)
		close(journal->lock_fd);
	free(journal->path);
	free(journal);
}

/* Open a journal handle for PATH with FLAGS (sqlite3_open_v2) and the
 * connection settings every use needs into *JOURNAL; on error *JOURNAL is
 * NULL and RS_ENOMEM or RS_EIO (naming the path) is returned. */
static int
journal_connect(const char *path, int flags, struct rs_journal **journal,
                struct rs_err *err)
{
	struct rs_journal *j = calloc(1, sizeof(*j));
	int rc;

	*journal = NULL;
	if (j == NULL || (j->path = strdup(path)) == NULL) {
		free(j);
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	}
	j->lock_fd = -1;
	j->wal_fd = -1;
	rc = sqlite3_open_v2(path, &j->db, flags, NULL);
	if (rc != SQLITE_OK) {
		rc = j->db == NULL
		             ? rs_err_set(err, RS_ENOMEM, "out of memory")
		             : journal_fail(j, sqlite3_extended_errcode(j->db),
		                            "open", NULL, err);
		journal_free(j);
		return rc != 0 ? rc : RS_EIO; /* never 0 here */
	}
	sqlite3_extended_result_codes(j->db, 1);
	sqlite3_busy_timeout(j->db, JOURNAL_BUSY_TIMEOUT_MS);
	*journal = j;
	return 0;
}

/* Check that JOURNAL has this build's schema; RS_EIO naming the version
 * found when it has another one, or when the file is not a journal
 * (CREATED_EMPTY, when not NULL, is set instead for a file with no tables
 * at all, which journal_open turns into a new journal). */
static int
journal_check_schema(struct rs_journal *journal, int *created_empty,
                     struct rs_err *err)
{
	int64_t version, tables = 0;
	int rc = journal_query_int(journal, "PRAGMA user_version", &version,
	                           err);

	if (rc == 0 && version == 0)
		rc = journal_query_int(journal,
		                       "SELECT count(*) FROM sqlite_master",
		                       &tables, err);
	if (rc != 0)
		return rc;
	if (version == 0 && tables == 0 && created_empty != NULL) {
		*created_empty = 1;
		return 0;
	}
	if (version == 0)
		return rs_err_set(err, RS_EIO, "%s is not a reshard journal%s",
		                  journal->path,
		                  tables == 0 ? " (it is empty)" : "");
	journal->version = (int)version;
	if (version < JOURNAL_SCHEMA_VERSION && version >= 1 &&
	    journal->readonly)
		return 0; /* read as it is: no kept rows (1), no
		             differences (1, 2) */
	if (version == 1 || version == 2) {
		/* Foreign keys cannot be switched inside a transaction, and
		 * dropping the old steps table must not cascade to chunks. */
		rc = journal_exec(journal,
		                  "PRAGMA foreign_keys = OFF; BEGIN IMMEDIATE",
		                  "begin the schema upgrade", err);
		if (rc == 0 && version == 1)
			rc = journal_exec(journal, journal_migrate_1,
			                  "upgrade the schema to version 2",
			                  err);
		if (rc == 0)
			rc = journal_exec(journal, journal_migrate_2,
			                  "upgrade the schema to version 3",
			                  err);
		if (rc == 0)
			rc = journal_exec(journal, "COMMIT",
			                  "commit the schema upgrade", err);
		if (rc != 0)
			sqlite3_exec(journal->db, "ROLLBACK", NULL, NULL, NULL);
		sqlite3_exec(journal->db, "PRAGMA foreign_keys = ON", NULL,
		             NULL, NULL);
		journal->version = JOURNAL_SCHEMA_VERSION;
		return rc;
	}
	if (version != JOURNAL_SCHEMA_VERSION)
		return rs_err_set(
			err, RS_EIO,
			"journal %s has schema version %" PRId64
			", this reshard reads version %d; use the reshard "
			"release that wrote it to finish or abort its run",
			journal->path, version, JOURNAL_SCHEMA_VERSION);
	return 0;
}

/* Create the schema in the empty JOURNAL and pin FINGERPRINT and PLAN_TEXT,
 * in one transaction; on error nothing was created and the code of
 * journal_fail is returned. */
static int
journal_create(struct rs_journal *journal, const char *fingerprint,
               const char *plan_text, struct rs_err *err)
{
	int rc = journal_exec(journal, "BEGIN IMMEDIATE", "begin", err);

	journal->version = JOURNAL_SCHEMA_VERSION;
	if (rc == 0)
		rc = journal_exec(journal, journal_schema, "create the schema",
		                  err);
	if (rc == 0)
		rc = journal_pin_plan(journal, fingerprint, plan_text, err);
	if (rc == 0)
		rc = journal_exec(journal, "COMMIT", "commit the new journal",
		                  err);
	if (rc != 0)
		sqlite3_exec(journal->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

/* Record this process as a new run; on error the code of journal_fail. */
static int
journal_add_run(struct rs_journal *journal, int64_t started_at,
                const char *command, struct rs_err *err)
{
	char host[256];
	sqlite3_stmt *stmt;
	int rc = journal_prepare(journal,
	                         "INSERT INTO runs (pid, host, started_at, "
	                         "command) VALUES (?1, ?2, ?3, ?4)",
	                         &stmt, err);

	if (rc != 0)
		return rc;
	if (gethostname(host, sizeof(host)) != 0)
		snprintf(host, sizeof(host), "unknown");
	host[sizeof(host) - 1] = '\0';
	rc = journal_bind_int64(stmt, 1, (int64_t)getpid(), SQLITE_OK);
	rc = journal_bind_text(stmt, 2, host, rc);
	rc = journal_bind_int64(stmt, 3, started_at, rc);
	rc = journal_bind_text(stmt, 4, command, rc);
	rc = journal_finish(journal, stmt, rc, "record", "the new run", err);
	if (rc == 0)
		journal->run_id = sqlite3_last_insert_rowid(journal->db);
	return rc;
}

int
journal_open(const char *path, const char *fingerprint, const char *plan_text,
             struct rs_journal **journal, struct rs_err *err)
{
	return journal_open_as(path, fingerprint, plan_text, "run", journal,
	                       err);
}

/* On error nothing is left open or locked, and *JOURNAL is NULL. */
int
journal_open_as(const char *path, const char *fingerprint,
                const char *plan_text, const char *command,
                struct rs_journal **journal, struct rs_err *err)
{
	int64_t started_at = journal_now_ms(), on;
	int lock_fd, created_empty = 0, rc;
	struct rs_journal *j;
	sqlite3_stmt *stmt;

	*journal = NULL;
	if (fingerprint == NULL || fingerprint[0] == '\0')
		return rs_err_set(
			err, RS_EINTERNAL,
			"journal %s opened without a plan fingerprint "
			"(a bug: please report it)",
			path);
	rc = journal_lock_file(path, &lock_fd, err);
	if (rc != 0)
		return rc;
	rc = journal_connect(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
	                     &j, err);
	if (rc != 0) {
		close(lock_fd);
		return rc;
	}
	j->lock_fd = lock_fd;

	/* journal_mode answers with the mode it got: a file system without
	 * shared memory keeps "delete", which rule 3 does not allow. */
	rc = journal_prepare(j, "PRAGMA journal_mode = WAL", &stmt, err);
	if (rc == 0) {
		const unsigned char *mode = NULL;

		if (sqlite3_step(stmt) == SQLITE_ROW)
			mode = sqlite3_column_text(stmt, 0);
		if (mode == NULL || strcmp((const char *)mode, "wal") != 0)
			rc = mode == NULL
			             ? journal_fail(
					       j,
					       sqlite3_extended_errcode(j->db),
					       "switch to WAL mode", NULL, err)
			             : rs_err_set(
					       err, RS_EIO,
					       "journal %s cannot use WAL mode "
					       "(it stays in %s mode); put it "
					       "on "
					       "a local file system",
					       path, (const char *)mode);
		sqlite3_finalize(stmt);
	}
	if (rc == 0)
		rc = journal_exec(j,
		                  "PRAGMA synchronous = FULL;"
		                  "PRAGMA foreign_keys = ON",
		                  "configure", err);
	if (rc == 0)
		rc = journal_query_int(j, "PRAGMA foreign_keys", &on, err);
	if (rc == 0 && on != 1)
		rc = rs_err_set(
			err, RS_EIO,
			"journal %s: this SQLite cannot enforce foreign "
			"keys",
			path);
	if (rc == 0)
		rc = journal_check_schema(j, &created_empty, err);
	if (rc == 0 && created_empty)
		rc = journal_create(j, fingerprint, plan_text, err);
	if (rc == 0 && !created_empty)
		rc = journal_check_plan(j, fingerprint, plan_text, err);
	if (rc == 0)
		rc = journal_add_run(j, started_at, command, err);
	if (rc != 0) {
		journal_free(j);
		return rc;
	}
	journal_open_wal(j);
	*journal = j;
	return 0;
}

/* On error (missing file, not a journal, another schema version) *JOURNAL
 * is NULL. */
int
journal_open_readonly(const char *path, struct rs_journal **journal,
                      struct rs_err *err)
{
	struct rs_journal *j;
	struct stat st;
	int rc;

	*journal = NULL;
	if (stat(path, &st) != 0) {
		if (errno == ENOENT)
			return rs_err_set(
				err, RS_EIO,
				"no journal at %s: this plan has not been "
				"run yet",
				path);
		return rs_err_set(err, RS_EIO, "cannot read the journal %s: %s",
		                  path, strerror(errno));
	}
	rc = journal_connect(path, SQLITE_OPEN_READONLY, &j, err);
	if (rc != 0)
		return rc;
	j->readonly = 1;
	rc = journal_check_schema(j, NULL, err);
	if (rc != 0) {
		journal_free(j);
		return rc;
	}
	*journal = j;
	return 0;
}

/* Recording the outcome is best effort: a run that cannot record its end
 * looks interrupted, which is what it is to whoever reads next. */
void
journal_close(struct rs_journal *journal, const char *outcome)
{
	sqlite3_stmt *stmt;

	if (journal == NULL)
		return;
	if (!journal->readonly && journal->run_id != 0 &&
	    journal_prepare(journal,
	                    "UPDATE runs SET ended_at = ?1, outcome = ?2 "
	                    "WHERE id = ?3",
	                    &stmt, NULL) == 0) {
		int rc = journal_bind_int64(stmt, 1, journal_now_ms(),
		                            SQLITE_OK);
		rc = journal_bind_text(stmt, 2, outcome, rc);
		rc = journal_bind_int64(stmt, 3, journal->run_id, rc);
		journal_finish(journal, stmt, rc, "record",
		               "the end of the run", NULL);
	}
	/* The database is closed (and checkpointed) before the lock is
	 * released, so the next holder finds it quiet. */
	journal_free(journal);
}

/* Check that NAME fits a step record's name; RS_EINTERNAL otherwise (step
 * names are the program's own). */
static int
journal_check_step_name(const char *name, struct rs_err *err)
{
	size_t len = strnlen(name, JOURNAL_STEP_NAME_SIZE);

	if (len == 0 || len >= JOURNAL_STEP_NAME_SIZE)
		return rs_err_set(err, RS_EINTERNAL,
		                  "step name \"%.40s\" is empty or too long (a "
		                  "bug: please report it)",
		                  name);
	return 0;
}

/* The columns of a step record, in the order journal_step_fill reads them;
 * the steps table is s. */
#define JOURNAL_STEP_COLUMNS                                                   \
	"s.name, s.state, s.attempts, s.started_at, s.finished_at, "           \
	"COALESCE((SELECT sum(c.rows) FROM chunks c WHERE c.step = s.name "    \
	"AND c.state = 'done'), s.rows), "                                     \
	"(SELECT count(*) FROM chunks c WHERE c.step = s.name AND "            \
	"c.state = 'done'), s.error"

/* Fill REC from STMT's current row (JOURNAL_STEP_COLUMNS). */
static void
journal_step_fill(sqlite3_stmt *stmt, struct rs_step_record *rec)
{
	const char *state = (const char *)sqlite3_column_text(stmt, 1);

	memset(rec, 0, sizeof(*rec));
	journal_column_copy(stmt, 0, rec->name, sizeof(rec->name));
	rec->state = RS_STEP_PENDING;
	for (int i = RS_STEP_PENDING; state != NULL && i <= RS_STEP_STOPPED;
	     i++)
		if (strcmp(state, journal_step_states[i]) == 0)
			rec->state = (enum rs_step_state)i;
	rec->attempts = sqlite3_column_int(stmt, 2);
	rec->started_at = sqlite3_column_int64(stmt, 3);
	rec->finished_at = sqlite3_column_int64(stmt, 4);
	rec->rows = sqlite3_column_int64(stmt, 5);
	rec->chunks_done = sqlite3_column_int64(stmt, 6);
	journal_column_copy(stmt, 7, rec->error, sizeof(rec->error));
}

/* On error REC is the PENDING record of NAME and the code of journal_fail
 * is returned. */
int
journal_step_get(struct rs_journal *journal, const char *name,
                 struct rs_step_record *rec, struct rs_err *err)
{
	sqlite3_stmt *stmt;
	int rc;

	memset(rec, 0, sizeof(*rec));
	snprintf(rec->name, sizeof(rec->name), "%s", name);
	rec->state = RS_STEP_PENDING;
	rc = journal_prepare(journal,
	                     "SELECT " JOURNAL_STEP_COLUMNS " FROM steps s "
	                     "WHERE s.name = ?1",
	                     &stmt, err);
	if (rc != 0)
		return rc;
	rc = journal_bind_text(stmt, 1, name, SQLITE_OK);
	if (rc == SQLITE_OK && (rc = sqlite3_step(stmt)) == SQLITE_ROW)
		journal_step_fill(stmt, rec);
	return journal_done(journal, stmt, rc, "read step", name, err);
}

/* Record a new attempt of step NAME, lazily with LAZY.  RS_EINTERNAL for
 * a name that does not fit a record, else on error the code of
 * journal_fail and nothing was recorded. */
static int
journal_step_start(struct rs_journal *journal, const char *name, int lazy,
                   struct rs_err *err)
{
	sqlite3_stmt *stmt;
	int rc = journal_check_step_name(name, err);

	/* A new attempt keeps the last attempt's error (status shows why the
	 * step is being tried again) and rows; it has not finished.  A stop's
	 * message is no error: it goes. */
	if (rc == 0)
		rc = journal_prepare_write(
			journal,
			"INSERT INTO steps (name, state, attempts, started_at, "
			"first_begun) VALUES (?1, 'running', 1, ?2, "
			"(SELECT coalesce(max(first_begun), 0) + 1 FROM "
			"steps)) "
			"ON CONFLICT (name) DO UPDATE SET state = 'running', "
			"attempts = attempts + 1, started_at = "
			"excluded.started_at, "
			"finished_at = NULL, error = CASE WHEN state = "
			"'stopped' THEN '' ELSE error END",
			&stmt, err);
	if (rc != 0)
		return rc;
	rc = journal_bind_text(stmt, 1, name, SQLITE_OK);
	rc = journal_bind_int64(stmt, 2, journal_now_ms(), rc);
	return journal_finish_lazy(journal, lazy, stmt, rc,
	                           "record the start of step", name, err);
}

int
journal_step_begin(struct rs_journal *journal, const char *name,
                   struct rs_err *err)
{
	return journal_step_start(journal, name, 0, err);
}

int
journal_step_begin_lazy(struct rs_journal *journal, const char *name,
                        struct rs_err *err)
{
	return journal_step_start(journal, name, 1, err);
}

/* Set the end of step NAME to STATE with ROWS (negative: keep them) and
 * ERROR, lazily with LAZY (journal_finish_lazy); RS_EINTERNAL when the
 * step was never begun, else as journal_finish. */
static int
journal_step_end(struct rs_journal *journal, const char *name,
                 const char *state, int64_t rows, const char *error, int lazy,
                 struct rs_err *err)
{
	sqlite3_stmt *stmt;
	int rc = journal_prepare_write(
		journal,
		"UPDATE steps SET state = ?2, finished_at = ?3, "
		"rows = CASE WHEN ?4 < 0 THEN rows ELSE ?4 END, error = ?5 "
		"WHERE name = ?1",
		&stmt, err);

	if (rc != 0)
		return rc;
	rc = journal_bind_text(stmt, 1, name, SQLITE_OK);
	rc = journal_bind_text(stmt, 2, state, rc);
	rc = journal_bind_int64(stmt, 3, journal_now_ms(), rc);
	rc = journal_bind_int64(stmt, 4, rows, rc);
	rc = journal_bind_text(stmt, 5, error, rc);
	rc = journal_finish_lazy(journal, lazy, stmt, rc,
	                         "record the end of step", name, err);
	if (rc == 0 && sqlite3_changes(journal->db) == 0)
		rc = rs_err_set(err, RS_EINTERNAL,
		                "journal %s: step %s ended but was never begun "
		                "(a bug: please report it)",
		                journal->path, name);
	return rc;
}

/* RS_EINTERNAL for a step never begun; else as journal_step_end. */
int
journal_step_done(struct rs_journal *journal, const char *name, int64_t rows,
                  struct rs_err *err)
{
	/* A finished step has no error left to show.  Lazy (journal.h):
	 * losing it to a power cut leaves the step to be run again, as a
	 * crash just before it would. */
	return journal_step_end(journal, name, "done", rows < 0 ? 0 : rows, "",
	                        1, err);
}

/* As journal_step_done; rows handled so far are kept. */
int
journal_step_failed(struct rs_journal *journal, const char *name,
                    const char *message, struct rs_err *err)
{
	return journal_step_end(journal, name, "failed", -1,
	                        message != NULL ? message : "", 0, err);
}

/* As journal_step_failed, in the state of a deliberate stop. */
int
journal_step_stopped(struct rs_journal *journal, const char *name,
                     const char *message, struct rs_err *err)
{
	return journal_step_end(journal, name, "stopped", -1,
	                        message != NULL ? message : "", 0, err);
}

int
journal_step_reset(struct rs_journal *journal, const char *name,
                   struct rs_err *err)
{
	sqlite3_stmt *stmt;
	int rc = journal_check_step_name(name, err);

	if (rc == 0)
		rc = journal_chunks_forget(journal, name, err);
	if (rc == 0)
		rc = journal_prepare_write(journal,
		                           "UPDATE steps SET state = "
		                           "'pending', finished_at = NULL "
		                           "WHERE name = ?1",
		                           &stmt, err);
	if (rc != 0)
		return rc;
	rc = journal_bind_text(stmt, 1, name, SQLITE_OK);
	return journal_finish(journal, stmt, rc, "make pending again step",
	                      name, err);
}

/* On error *RECS is NULL and *N is 0; no step at all gives the same with
 * 0 returned. */
int
journal_steps(struct rs_journal *journal, struct rs_step_record **recs, int *n,
              struct rs_err *err)
{
	struct rs_step_record *all = NULL;
	int64_t count;
	sqlite3_stmt *stmt;
	int rc, i = 0;

	*recs = NULL;
	*n = 0;
	/* One read transaction, so the count and the rows agree even if
	 * status reads while a run writes. */
	rc = journal_exec(journal, "BEGIN", "begin", err);
	if (rc != 0)
		return rc;
	rc = journal_query_int(journal, "SELECT count(*) FROM steps", &count,
	                       err);
	if (rc == 0 && count > 0 &&
	    (all = calloc((size_t)count, sizeof(*all))) == NULL)
		rc = rs_err_set(err, RS_ENOMEM, "out of memory");
	if (rc == 0)
		rc = journal_prepare(journal,
		                     "SELECT " JOURNAL_STEP_COLUMNS
		                     " FROM steps s "
		                     "ORDER BY s.first_begun",
		                     &stmt, err);
	if (rc == 0) {
		int src;

		while ((src = sqlite3_step(stmt)) == SQLITE_ROW && i < count)
			journal_step_fill(stmt, &all[i++]);
		rc = journal_done(journal, stmt, src, "read", "the steps", err);
	}
	sqlite3_exec(journal->db, "COMMIT", NULL, NULL, NULL);
	if (rc != 0) {
		free(all);
		return rc;
	}
	*recs = all;
	*n = i;
	return 0;
}

/* Check that REC's identity strings are terminated within their fields
 * and the step name is valid; RS_EINTERNAL otherwise. */
static int
journal_check_chunk(const struct rs_chunk_record *rec, struct rs_err *err)
{
	if (strnlen(rec->shard, sizeof(rec->shard)) == sizeof(rec->shard) ||
	    strnlen(rec->table, sizeof(rec->table)) == sizeof(rec->table) ||
	    strnlen(rec->step, sizeof(rec->step)) == sizeof(rec->step))
		return rs_err_set(err, RS_EINTERNAL,
		                  "chunk record with an unterminated name (a "
		                  "bug: please report it)");
	return journal_check_step_name(rec->step, err);
}

/* The checksum's bits as SQLite's int64, and back: SQLite has no unsigned
 * integers, and the conversion must not depend on the implementation. */
static int64_t
journal_checksum_to_db(uint64_t checksum)
{
	int64_t bits;

	memcpy(&bits, &checksum, sizeof(bits));
	return bits;
}

static uint64_t
journal_checksum_from_db(int64_t bits)
{
	uint64_t checksum;

	memcpy(&checksum, &bits, sizeof(checksum));
	return checksum;
}

/* "step/shard/table#number" for messages into BUF. */
static const char *
journal_chunk_name(const struct rs_chunk_record *rec, char *buf, size_t size)
{
	snprintf(buf, size, "%s/%s/%s#%" PRId64, rec->step, rec->shard,
	         rec->table, rec->number);
	return buf;
}

/* RS_EINTERNAL for a chunk of a step never begun (foreign key), else on
 * error the code of journal_fail and nothing was recorded. */
int
journal_finish_lazy(struct rs_journal *journal, int lazy, sqlite3_stmt *stmt,
                    int rc, const char *what, const char *name,
                    struct rs_err *err)
{
	/* Not lazy when the switch fails: slower, never less safe. */
	if (lazy && sqlite3_exec(journal->db, "PRAGMA synchronous = NORMAL",
	                         NULL, NULL, NULL) != SQLITE_OK)
		lazy = 0;
	journal->lazy = lazy;
	rc = journal_finish(journal, stmt, rc, what, name, err);
	journal->lazy = 0;
	/* Every later write would be lazy without the switch back: the
	 * caller stops on the error. */
	if (lazy &&
	    sqlite3_exec(journal->db, "PRAGMA synchronous = FULL", NULL, NULL,
	                 NULL) != SQLITE_OK &&
	    rc == 0)
		rc = journal_fail(journal,
		                  sqlite3_extended_errcode(journal->db),
		                  "make its writes durable again", NULL, err);
	return rc;
}

int
journal_chunk_begin(struct rs_journal *journal,
                    const struct rs_chunk_record *rec, struct rs_err *err)
{
	char name[400];
	sqlite3_stmt *stmt;
	int rc = journal_check_chunk(rec, err);

	/* Beginning a chunk again (a resumed step redoing a chunk whose
	 * outcome is unknown) records the new intent over the old one. */
	if (rc == 0)
		rc = journal_prepare_kept(
			journal, JOURNAL_KEPT_CHUNK_BEGIN,
			"INSERT INTO chunks (step, shard, table_name, number, "
			"after_key, upto_key, state, rows, checksum, affected, "
			"seq) "
			"VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'started', ?7, ?8, "
			"?9, (SELECT coalesce(max(seq), 0) + 1 FROM chunks)) "
			"ON CONFLICT (step, shard, table_name, number) DO "
			"UPDATE "
			"SET after_key = excluded.after_key, "
			"upto_key = excluded.upto_key, state = 'started', "
			"rows = excluded.rows, checksum = excluded.checksum, "
			"affected = excluded.affected, seq = excluded.seq",
			&stmt, err);
	if (rc != 0)
		return rc;
	rc = journal_bind_text(stmt, 1, rec->step, SQLITE_OK);
	rc = journal_bind_text(stmt, 2, rec->shard, rc);
	rc = journal_bind_text(stmt, 3, rec->table, rc);
	rc = journal_bind_int64(stmt, 4, rec->number, rc);
	rc = journal_bind_text(stmt, 5, rec->after_key, rc);
	rc = journal_bind_text(stmt, 6, rec->upto_key, rc);
	rc = journal_bind_int64(stmt, 7, rec->rows, rc);
	rc = journal_bind_int64(stmt, 8, journal_checksum_to_db(rec->checksum),
	                        rc);
	rc = journal_bind_int64(stmt, 9, rec->affected, rc);
	return journal_finish_lazy(
		journal, rec->lazy, stmt, rc, "record the start of chunk",
		journal_chunk_name(rec, name, sizeof(name)), err);
}

/* RS_EINTERNAL for a chunk whose intent was never recorded, else on error
 * the code of journal_fail and the chunk stays STARTED. */
int
journal_chunk_done(struct rs_journal *journal,
                   const struct rs_chunk_record *rec, struct rs_err *err)
{
	char name[400];
	sqlite3_stmt *stmt;
	int rc = journal_check_chunk(rec, err);

	/* The range's end may only be known once the side effect ran (the
	 * last key read), so a non-NULL UPTO replaces the one begun with. */
	if (rc == 0)
		rc = journal_prepare_kept(
			journal, JOURNAL_KEPT_CHUNK_DONE,
			"UPDATE chunks SET state = 'done', "
			"upto_key = coalesce(?5, upto_key), rows = ?6, "
			"checksum = ?7, affected = ?8, seq = (SELECT "
			"coalesce(max(seq), 0) + 1 FROM chunks) WHERE step = "
			"?1 AND "
			"shard = ?2 AND table_name = ?3 AND number = ?4",
			&stmt, err);
	if (rc != 0)
		return rc;
	journal_chunk_name(rec, name, sizeof(name));
	rc = journal_bind_text(stmt, 1, rec->step, SQLITE_OK);
	rc = journal_bind_text(stmt, 2, rec->shard, rc);
	rc = journal_bind_text(stmt, 3, rec->table, rc);
	rc = journal_bind_int64(stmt, 4, rec->number, rc);
	rc = journal_bind_text(stmt, 5, rec->upto_key, rc);
	rc = journal_bind_int64(stmt, 6, rec->rows, rc);
	rc = journal_bind_int64(stmt, 7, journal_checksum_to_db(rec->checksum),
	                        rc);
	rc = journal_bind_int64(stmt, 8, rec->affected, rc);
	rc = journal_finish_lazy(journal, 1, stmt, rc,
	                         "record the end of chunk", name, err);
	if (rc == 0 && sqlite3_changes(journal->db) == 0)
		rc = rs_err_set(
			err, RS_EINTERNAL,
			"journal %s: chunk %s done but never begun: its "
			"intent was not recorded before the side effect "
			"(a bug: please report it)",
			journal->path, name);
	return rc;
}

/* Fill REC from STMT's current row: step, shard, table_name, number,
 * after_key, upto_key, state, rows, checksum, affected.  RS_ENOMEM when a
 * key cannot be copied (REC's keys are then NULL). */
static int
journal_chunk_fill(sqlite3_stmt *stmt, struct rs_chunk_record *rec,
                   struct rs_err *err)
{
	const unsigned char *state = sqlite3_column_text(stmt, 6);
	int failed = 0;

	journal_column_copy(stmt, 0, rec->step, sizeof(rec->step));
	journal_column_copy(stmt, 1, rec->shard, sizeof(rec->shard));
	journal_column_copy(stmt, 2, rec->table, sizeof(rec->table));
	rec->number = sqlite3_column_int64(stmt, 3);
	rec->after_key = journal_column_dup(stmt, 4, &failed);
	rec->upto_key = journal_column_dup(stmt, 5, &failed);
	rec->state = state != NULL && strcmp((const char *)state, "done") == 0
	                     ? RS_CHUNK_DONE
	                     : RS_CHUNK_STARTED;
	rec->rows = sqlite3_column_int64(stmt, 7);
	rec->checksum = journal_checksum_from_db(sqlite3_column_int64(stmt, 8));
	rec->affected = sqlite3_column_int64(stmt, 9);
	if (failed) {
		journal_chunk_free(rec);
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	}
	return 0;
}

/* Run STMT, a chunk query with bound parameters, and fill REC from its
 * first row: returns 1 when there was one, 0 when none, else the code of
 * journal_fail or RS_ENOMEM; STMT is finalized. */
static int
journal_chunk_query(struct rs_journal *journal, sqlite3_stmt *stmt, int bind_rc,
                    struct rs_chunk_record *rec, const char *subject,
                    struct rs_err *err)
{
	int rc = bind_rc != SQLITE_OK ? bind_rc : sqlite3_step(stmt);
	int found = rc == SQLITE_ROW, fill_rc = 0;

	if (found)
		fill_rc = journal_chunk_fill(stmt, rec, err);
	rc = journal_done(journal, stmt, rc, "read chunk", subject, err);
	if (fill_rc != 0 || rc != 0) {
		journal_chunk_free(rec);
		memset(rec, 0, sizeof(*rec));
		return fill_rc != 0 ? fill_rc : rc;
	}
	return found;
}

#define JOURNAL_CHUNK_COLUMNS                                                  \
	"step, shard, table_name, number, after_key, upto_key, state, rows, "  \
	"checksum, affected"

/* On error REC is as for a chunk not recorded (state -1, keys NULL). */
int
journal_chunk_get(struct rs_journal *journal, const char *step,
                  const char *shard, const char *table, int64_t number,
                  struct rs_chunk_record *rec, struct rs_err *err)
{
	sqlite3_stmt *stmt;
	int rc;

	memset(rec, 0, sizeof(*rec));
	rec->state = (enum rs_chunk_state) - 1;
	rc = journal_prepare(journal,
	                     "SELECT " JOURNAL_CHUNK_COLUMNS " FROM chunks "
	                     "WHERE step = ?1 AND shard = ?2 AND "
	                     "table_name = ?3 AND number = ?4",
	                     &stmt, err);
	if (rc != 0)
		return rc;
	rc = journal_bind_text(stmt, 1, step, SQLITE_OK);
	rc = journal_bind_text(stmt, 2, shard, rc);
	rc = journal_bind_text(stmt, 3, table, rc);
	rc = journal_bind_int64(stmt, 4, number, rc);
	rc = journal_chunk_query(journal, stmt, rc, rec, table, err);
	if (rc <= 0) {
		memset(rec, 0, sizeof(*rec));
		rec->state = (enum rs_chunk_state) - 1;
	}
	return rc < 0 ? rc : 0;
}

/* On error REC is zeroed (keys NULL) and a negative code returned. */
int
journal_chunk_last_done(struct rs_journal *journal, const char *step,
                        const char *shard, const char *table,
                        struct rs_chunk_record *rec, struct rs_err *err)
{
	sqlite3_stmt *stmt;
	int rc;

	memset(rec, 0, sizeof(*rec));
	rc = journal_prepare(journal,
	                     "SELECT " JOURNAL_CHUNK_COLUMNS " FROM chunks "
	                     "WHERE step = ?1 AND shard = ?2 AND "
	                     "table_name = ?3 AND state = 'done' "
	                     "ORDER BY number DESC LIMIT 1",
	                     &stmt, err);
	if (rc != 0)
		return rc;
	rc = journal_bind_text(stmt, 1, step, SQLITE_OK);
	rc = journal_bind_text(stmt, 2, shard, rc);
	rc = journal_bind_text(stmt, 3, table, rc);
	return journal_chunk_query(journal, stmt, rc, rec, table, err);
}

int
journal_chunk_latest(struct rs_journal *journal, const char *step,
                     struct rs_chunk_record *rec, struct rs_err *err)
{
	sqlite3_stmt *stmt;
	int rc;

	memset(rec, 0, sizeof(*rec));
	rc = journal_prepare(journal,
	                     "SELECT " JOURNAL_CHUNK_COLUMNS " FROM chunks "
	                     "WHERE step = ?1 ORDER BY seq DESC LIMIT 1",
	                     &stmt, err);
	if (rc != 0)
		return rc;
	rc = journal_bind_text(stmt, 1, step, SQLITE_OK);
	return journal_chunk_query(journal, stmt, rc, rec, step, err);
}

void
journal_chunk_free(struct rs_chunk_record *rec)
{
	if (rec == NULL)
		return;
	free(rec->after_key);
	free(rec->upto_key);
	rec->after_key = NULL;
	rec->upto_key = NULL;
}

/* On error the code of journal_fail and nothing was written. */
int
journal_sync(struct rs_journal *journal, struct rs_err *err)
{
	/* A commit with synchronous = FULL syncs the WAL, and with it every
	 * commit before it.  The counter changes on every call: a write of
	 * the same bytes as before leaves no page dirty, and SQLite commits
	 * such a transaction without writing (or syncing) anything. */
	sqlite3_stmt *stmt;
	int rc = journal_prepare_write(journal,
	                               "INSERT INTO facts (name, value) "
	                               "VALUES ('syncs', 1) ON CONFLICT (name) "
	                               "DO UPDATE SET value = value + 1",
	                               &stmt, err);

	if (rc != 0)
		return rc;
	return journal_finish(journal, stmt, SQLITE_OK, "record fact", "syncs",
	                      err);
}

/* journal_fact_set, durable or (LAZY) with the next durable write. */
static int
journal_fact_write(struct rs_journal *journal, int lazy, const char *name,
                   const char *value, struct rs_err *err)
{
	sqlite3_stmt *stmt;
	int rc = journal_prepare_write(journal,
	                               "INSERT INTO facts (name, value) "
	                               "VALUES (?1, ?2) ON CONFLICT (name) "
	                               "DO UPDATE SET value = excluded.value",
	                               &stmt, err);

	if (rc != 0)
		return rc;
	rc = journal_bind_text(stmt, 1, name, SQLITE_OK);
	rc = journal_bind_text(stmt, 2, value != NULL ? value : "", rc);
	return journal_finish_lazy(journal, lazy, stmt, rc, "record fact", name,
	                           err);
}

int
journal_fact_set(struct rs_journal *journal, const char *name,
                 const char *value, struct rs_err *err)
{
	return journal_fact_write(journal, 0, name, value, err);
}

int
journal_fact_set_lazy(struct rs_journal *journal, const char *name,
                      const char *value, struct rs_err *err)
{
	return journal_fact_write(journal, 1, name, value, err);
}

/* On error ERR (may be NULL) says why; VALUE is "" then. */
int
journal_fact_get(struct rs_journal *journal, const char *name, char *value,
                 size_t size, struct rs_err *err)
{
	sqlite3_stmt *stmt;
	int rc, found = 0;

	if (size > 0)
		value[0] = '\0';
	rc = journal_prepare(journal, "SELECT value FROM facts WHERE name = ?1",
	                     &stmt, err);
	if (rc != 0)
		return rc;
	rc = journal_bind_text(stmt, 1, name, SQLITE_OK);
	if (rc == SQLITE_OK && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		const unsigned char *text = sqlite3_column_text(stmt, 0);
		size_t len = (size_t)sqlite3_column_bytes(stmt, 0);

		/* A cut value would be a wrong value (an epoch, a count). */
		if (text == NULL || len >= size)
			found = rs_err_set(
				err, RS_EINTERNAL,
				"journal %s: fact %s does not fit in "
				"%zu bytes (a bug: please report it)",
				journal->path, name, size);
		else {
			memcpy(value, text, len + 1);
			found = 1;
		}
		rc = SQLITE_DONE;
	}
	if (rc != SQLITE_DONE)
		found = journal_fail(journal,
		                     sqlite3_extended_errcode(journal->db),
		                     "read fact", name, err);
	sqlite3_finalize(stmt);
	return found;
}

/* Deleting a fact that is not set succeeds; on error the code of
 * journal_fail and the fact stays. */
int
journal_fact_delete(struct rs_journal *journal, const char *name,
                    struct rs_err *err)
{
	sqlite3_stmt *stmt;
	int rc = journal_prepare_write(
		journal, "DELETE FROM facts WHERE name = ?1", &stmt, err);

	if (rc != 0)
		return rc;
	rc = journal_bind_text(stmt, 1, name, SQLITE_OK);
	return journal_finish(journal, stmt, rc, "delete fact", name, err);
}

/* Failures (read-only journal, disk, memory) are ignored, as the header
 * says. */
void
journal_event(struct rs_journal *journal, const char *level, const char *fmt,
              ...)
{
	struct rs_strbuf text = {0};
	sqlite3_stmt *stmt;
	va_list ap;
	char *message;

	if (journal == NULL || journal->readonly)
		return;
	va_start(ap, fmt);
	strbuf_vprintf(&text, fmt, ap);
	va_end(ap);
	if ((message = strbuf_finish(&text)) == NULL)
		return;
	/* One event, one line of the tail. */
	for (char *p = message; *p != '\0'; p++)
		if (*p == '\n' || *p == '\r' || *p == '\t')
			*p = ' ';
	if (journal_prepare(journal,
	                    "INSERT INTO events (at, level, message) "
	                    "VALUES (?1, ?2, ?3)",
	                    &stmt, NULL) == 0) {
		int rc = journal_bind_int64(stmt, 1, journal_now_ms(),
		                            SQLITE_OK);

		rc = journal_bind_text(stmt, 2, level != NULL ? level : "info",
		                       rc);
		rc = journal_bind_text(stmt, 3, message, rc);
		journal_finish_lazy(journal, 1, stmt, rc, "record", "an event",
		                    NULL);
	}
	free(message);
}

/* NULL on any error; "" when there is no event yet. */
char *
journal_events_tail(struct rs_journal *journal, int n)
{
	struct rs_strbuf out = {0};
	sqlite3_stmt *stmt;
	char when[32];
	int rc;

	if (journal == NULL || n < 0 ||
	    journal_prepare(journal,
	                    "SELECT at, level, message FROM (SELECT id, at, "
	                    "level, message FROM events ORDER BY id DESC "
	                    "LIMIT ?1) ORDER BY id",
	                    &stmt, NULL) != 0)
		return NULL;
	if (journal_bind_int64(stmt, 1, n, SQLITE_OK) != SQLITE_OK) {
		sqlite3_finalize(stmt);
		return NULL;
	}
	/* Running out of memory is sticky: strbuf_finish gives NULL then. */
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		const unsigned char *level = sqlite3_column_text(stmt, 1);
		const unsigned char *message = sqlite3_column_text(stmt, 2);

		journal_format_time(sqlite3_column_int64(stmt, 0), when,
		                    sizeof(when));
		strbuf_str(&out, when);
		strbuf_str(&out, " ");
		strbuf_str(&out, level != NULL ? (const char *)level : "");
		strbuf_str(&out, " ");
		strbuf_str(&out, message != NULL ? (const char *)message : "");
		strbuf_str(&out, "\n");
	}
	sqlite3_finalize(stmt);
	if (rc != SQLITE_DONE) {
		strbuf_clear(&out);
		return NULL;
	}
	return strbuf_finish(&out);
}

int
journal_events_each(struct rs_journal *journal,
                    int (*fn)(int64_t at_ms, const char *level,
                              const char *message, void *arg),
                    void *arg, struct rs_err *err)
{
	sqlite3_stmt *stmt;
	int rc = journal_prepare(
		journal, "SELECT at, level, message FROM events ORDER BY id",
		&stmt, err);

	if (rc != 0)
		return rc;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		const unsigned char *level = sqlite3_column_text(stmt, 1);
		const unsigned char *message = sqlite3_column_text(stmt, 2);
		int stop =
			fn(sqlite3_column_int64(stmt, 0),
		           level != NULL ? (const char *)level : "",
		           message != NULL ? (const char *)message : "", arg);

		if (stop != 0) {
			sqlite3_finalize(stmt);
			return stop;
		}
	}
	sqlite3_finalize(stmt);
	if (rc != SQLITE_DONE)
		return rs_err_set(err, RS_EIO,
		                  "cannot read the journal's "
		                  "events");
	return 0;
}

/* On error nothing is recorded and the code of journal_fail is returned. */
int
journal_kept_add(struct rs_journal *journal, const struct rs_kept_row *row,
                 struct rs_err *err)
{
	sqlite3_stmt *stmt;
	int rc = journal_prepare_write(
		journal,
		"INSERT INTO kept_rows (shard, table_name, pk, shard_key, "
		"owner, kept_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6) "
		"ON CONFLICT DO UPDATE SET shard_key = excluded.shard_key, "
		"owner = excluded.owner",
		&stmt, err);

	if (rc != 0)
		return rc;
	rc = journal_bind_text(stmt, 1, row->shard, SQLITE_OK);
	rc = journal_bind_text(stmt, 2, row->table, rc);
	rc = journal_bind_text(stmt, 3, row->pk, rc);
	if (rc == SQLITE_OK)
		rc = row->shard_key != NULL
		             ? sqlite3_bind_text(stmt, 4, row->shard_key, -1,
		                                 SQLITE_TRANSIENT)
		             : sqlite3_bind_null(stmt, 4);
	rc = journal_bind_text(stmt, 5, row->owner, rc);
	rc = journal_bind_int64(stmt, 6, journal_now_ms(), rc);
	return journal_finish(journal, stmt, rc, "record a kept row",
	                      row->table, err);
}

/* A journal of schema version 1 (read-only) has no kept rows. */
int
journal_kept_list(struct rs_journal *journal, struct rs_kept_row **rows, int *n,
                  struct rs_err *err)
{
	struct rs_kept_row *all = NULL;
	sqlite3_stmt *stmt;
	int rc, count = 0, cap = 0, failed = 0;

	*rows = NULL;
	*n = 0;
	if (sqlite3_prepare_v2(journal->db,
	                       "SELECT shard, table_name, pk, shard_key, owner "
	                       "FROM kept_rows ORDER BY shard, table_name, pk",
	                       -1, &stmt, NULL) != SQLITE_OK) {
		sqlite3_finalize(stmt);
		return 0; /* no such table: an older journal */
	}
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct rs_kept_row *r;

		if (count == cap) {
			struct rs_kept_row *grown;

			cap = cap ? 2 * cap : 16;
			grown = realloc(all, sizeof(*all) * (size_t)cap);
			if (grown == NULL) {
				failed = 1;
				break;
			}
			all = grown;
		}
		r = &all[count++];
		r->shard = journal_column_dup(stmt, 0, &failed);
		r->table = journal_column_dup(stmt, 1, &failed);
		r->pk = journal_column_dup(stmt, 2, &failed);
		r->shard_key = sqlite3_column_type(stmt, 3) == SQLITE_NULL
		                       ? NULL
		                       : journal_column_dup(stmt, 3, &failed);
		r->owner = journal_column_dup(stmt, 4, &failed);
	}
	if (failed) {
		sqlite3_finalize(stmt);
		journal_kept_free(all, count);
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	}
	rc = journal_done(journal, stmt, rc, "read", "the kept rows", err);
	if (rc != 0) {
		journal_kept_free(all, count);
		return rc;
	}
	*rows = all;
	*n = count;
	return 0;
}

int
journal_kept_clear(struct rs_journal *journal, struct rs_err *err)
{
	return journal_exec(journal, "DELETE FROM kept_rows",
	                    "forget the kept rows", err);
}

void
journal_kept_free(struct rs_kept_row *rows, int n)
{
	for (int i = 0; i < n; i++) {
		free((char *)rows[i].shard);
		free((char *)rows[i].table);
		free((char *)rows[i].pk);
		free((char *)rows[i].shard_key);
		free((char *)rows[i].owner);
	}
	free(rows);
}

/* Sum COLUMN (rows or affected: the program's own text, never a value)
 * over the done chunks of STEP into *SUM; on error *SUM is 0 and the code
 * of journal_fail is returned. */
static int
journal_chunk_sum(struct rs_journal *journal, const char *step,
                  const char *shard, const char *column, int64_t *sum,
                  struct rs_err *err)
{
	char sql[160];
	sqlite3_stmt *stmt;
	int rc;

	*sum = 0;
	snprintf(sql, sizeof(sql),
	         "SELECT coalesce(sum(%s), 0) FROM chunks "
	         "WHERE step = ?1 AND state = 'done'%s",
	         column, shard != NULL ? " AND shard = ?2" : "");
	rc = journal_prepare(journal, sql, &stmt, err);
	if (rc != 0)
		return rc;
	rc = journal_bind_text(stmt, 1, step, SQLITE_OK);
	if (shard != NULL)
		rc = journal_bind_text(stmt, 2, shard, rc);
	if (rc == SQLITE_OK && (rc = sqlite3_step(stmt)) == SQLITE_ROW)
		*sum = sqlite3_column_int64(stmt, 0);
	return journal_done(journal, stmt, rc, "read chunks of", step, err);
}

int
journal_step_affected(struct rs_journal *journal, const char *step,
                      int64_t *affected, struct rs_err *err)
{
	return journal_chunk_sum(journal, step, NULL, "affected", affected,
	                         err);
}

int
journal_shard_affected(struct rs_journal *journal, const char *step,
                       const char *shard, int64_t *affected, struct rs_err *err)
{
	return journal_chunk_sum(journal, step, shard, "affected", affected,
	                         err);
}

int
journal_step_rows_done(struct rs_journal *journal, const char *step,
                       int64_t *rows, struct rs_err *err)
{
	return journal_chunk_sum(journal, step, NULL, "rows", rows, err);
}

int
journal_chunks_forget(struct rs_journal *journal, const char *step,
                      struct rs_err *err)
{
	sqlite3_stmt *stmt;
	int rc = journal_prepare_write(
		journal, "DELETE FROM chunks WHERE step = ?1", &stmt, err);

	if (rc != 0)
		return rc;
	rc = journal_bind_text(stmt, 1, step, SQLITE_OK);
	return journal_finish(journal, stmt, rc, "forget the chunks of", step,
	                      err);
}

int
journal_last_run(struct rs_journal *journal, int work_only,
                 struct rs_run_record *rec, struct rs_err *err)
{
	sqlite3_stmt *stmt;
	int rc, found = 0;

	memset(rec, 0, sizeof(*rec));
	/* Before version 3 every process was a run or an abort. */
	rc = journal_prepare(
		journal,
		journal->version >= 3
			? "SELECT pid, host, started_at, ended_at, "
			  "outcome FROM runs WHERE ?1 = 0 OR "
			  "(command = 'run' AND (outcome IS NULL "
			  "OR outcome NOT IN ('aborted', "
			  "'abort failed'))) "
			  "ORDER BY id DESC LIMIT 1"
			: "SELECT pid, host, started_at, ended_at, "
			  "outcome FROM runs WHERE ?1 = 0 OR "
			  "outcome IS NULL OR outcome NOT IN "
			  "('aborted', 'abort failed') "
			  "ORDER BY id DESC LIMIT 1",
		&stmt, err);
	if (rc != 0)
		return rc;
	rc = journal_bind_int64(stmt, 1, work_only != 0, SQLITE_OK);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW) {
		rec->pid = sqlite3_column_int64(stmt, 0);
		journal_column_copy(stmt, 1, rec->host, sizeof(rec->host));
		rec->started_at = sqlite3_column_int64(stmt, 2);
		rec->ended_at = sqlite3_column_int64(stmt, 3);
		journal_column_copy(stmt, 4, rec->outcome,
		                    sizeof(rec->outcome));
		found = 1;
	}
	rc = journal_done(journal, stmt, rc, "read", "the runs", err);
	if (rc != 0) {
		memset(rec, 0, sizeof(*rec));
		return rc;
	}
	return found;
}
