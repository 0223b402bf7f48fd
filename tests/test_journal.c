/*
 * The journal: what a resumed run relies on.  State survives a reopen and a
 * crash (a child process that dies without closing), the run lock refuses a
 * second opener naming the holder and is gone once the holder closes or
 * dies, hook commands do not inherit it, a changed plan or schema is
 * refused with a message naming what changed.  Every test works in its own
 * temporary directory.
 */
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "journal/journal.h"

#define FINGERPRINT                                                            \
	"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
#define OTHER_FINGERPRINT                                                      \
	"60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752"
#define PLAN                                                                   \
	"name = orders-2x\n"                                                   \
	"strategy = split\n"                                                   \
	"to.nodes = db0, db1, db2, db3\n"                                      \
	"options.batch_rows = 5000\n"                                          \
	"options.parallel = 4\n"

static char dir[64];
static char path[128];

static int
setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "%s", "/tmp/reshard-test-journal-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(path, sizeof(path), "%s/orders-2x.journal", dir);
	return 0;
}

static int
teardown(void **state)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char file[512];

	(void)state;
	while (d != NULL && (e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(file, sizeof(file), "%s/%s", dir, e->d_name);
		unlink(file);
	}
	if (d != NULL)
		closedir(d);
	rmdir(dir);
	return 0;
}

/* Open the journal at PATH with the usual plan; the test fails otherwise. */
static struct rs_journal *
open_ok(void)
{
	struct rs_journal *journal = NULL;
	struct rs_err err = {0};
	int rc = journal_open(path, FINGERPRINT, PLAN, &journal, &err);

	if (rc != 0)
		fail_msg("journal_open: %d %s", rc, err.message);
	assert_non_null(journal);
	return journal;
}

/* Fail unless HAYSTACK contains NEEDLE. */
static void
assert_contains(const char *haystack, const char *needle)
{
	if (haystack == NULL || strstr(haystack, needle) == NULL)
		fail_msg("'%s' lacks '%s'", haystack ? haystack : "(null)",
		         needle);
}

/* A chunk of step STEP on db0, table orders_0. */
static struct rs_chunk_record
chunk(const char *step, int64_t number, const char *after, const char *upto)
{
	struct rs_chunk_record rec;

	memset(&rec, 0, sizeof(rec));
	snprintf(rec.step, sizeof(rec.step), "%s", step);
	snprintf(rec.shard, sizeof(rec.shard), "db0");
	snprintf(rec.table, sizeof(rec.table), "orders_0");
	rec.number = number;
	rec.after_key = (char *)after;
	rec.upto_key = (char *)upto;
	return rec;
}

static void
test_reopen_keeps_steps_chunks_facts(void **state)
{
	struct rs_journal *journal = open_ok();
	struct rs_chunk_record rec = chunk("copy", 0, NULL, "[100]");
	struct rs_step_record step;
	struct rs_err err = {0};
	char value[32];
	char *plan;
	sqlite3_stmt *stmt;
	sqlite3 *db;

	(void)state;
	assert_int_equal(journal_step_begin(journal, "preflight", &err), 0);
	assert_int_equal(journal_step_done(journal, "preflight", 0, &err), 0);
	assert_int_equal(journal_step_begin(journal, "copy", &err), 0);
	rec.rows = 100;
	assert_int_equal(journal_chunk_begin(journal, &rec, &err), 0);
	assert_int_equal(journal_chunk_done(journal, &rec, &err), 0);
	assert_int_equal(
		journal_fact_set(journal, "rows_before", "12345", &err), 0);
	journal_close(journal, "interrupted");

	/* Rule 3: the file stays in WAL mode for every later connection. */
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(
		sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &stmt, NULL),
		SQLITE_OK);
	assert_int_equal(sqlite3_step(stmt), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(stmt, 0), "wal");
	sqlite3_finalize(stmt);
	sqlite3_close(db);

	journal = open_ok();
	assert_int_equal(journal_step_get(journal, "preflight", &step, &err),
	                 0);
	assert_int_equal(step.state, RS_STEP_DONE);
	assert_int_equal(journal_step_get(journal, "copy", &step, &err), 0);
	assert_int_equal(step.state, RS_STEP_RUNNING);
	assert_int_equal(step.attempts, 1);
	assert_int_equal(step.chunks_done, 1);
	assert_int_equal(journal_chunk_get(journal, "copy", "db0", "orders_0",
	                                   0, &rec, &err),
	                 0);
	assert_int_equal(rec.state, RS_CHUNK_DONE);
	assert_int_equal(rec.rows, 100);
	assert_null(rec.after_key);
	assert_string_equal(rec.upto_key, "[100]");
	journal_chunk_free(&rec);
	assert_int_equal(journal_fact_get(journal, "rows_before", value,
	                                  sizeof(value), &err),
	                 1);
	assert_string_equal(value, "12345");
	plan = journal_plan_text(journal);
	assert_string_equal(plan, PLAN);
	free(plan);
	journal_close(journal, "done");
}

static void
test_step_lifecycle(void **state)
{
	struct rs_journal *journal = open_ok();
	struct rs_step_record step, *steps;
	struct rs_err err = {0};
	int n;

	(void)state;
	assert_int_equal(journal_step_get(journal, "fence", &step, &err), 0);
	assert_int_equal(step.state, RS_STEP_PENDING);
	assert_string_equal(step.name, "fence");
	assert_int_equal(step.attempts, 0);
	assert_int_equal(step.started_at, 0);

	assert_int_equal(journal_step_begin(journal, "preflight", &err), 0);
	assert_int_equal(journal_step_begin(journal, "fence", &err), 0);
	assert_int_equal(journal_step_get(journal, "fence", &step, &err), 0);
	assert_int_equal(step.state, RS_STEP_RUNNING);
	assert_int_equal(step.attempts, 1);
	assert_true(step.started_at > 1700000000000LL);
	assert_int_equal(step.finished_at, 0);

	assert_int_equal(journal_step_failed(journal, "fence",
	                                     "db1: lock timeout on orders_3",
	                                     &err),
	                 0);
	assert_int_equal(journal_step_get(journal, "fence", &step, &err), 0);
	assert_int_equal(step.state, RS_STEP_FAILED);
	assert_string_equal(step.error, "db1: lock timeout on orders_3");
	assert_true(step.finished_at >= step.started_at);

	assert_int_equal(journal_step_begin(journal, "fence", &err), 0);
	assert_int_equal(journal_step_get(journal, "fence", &step, &err), 0);
	assert_int_equal(step.state, RS_STEP_RUNNING);
	assert_int_equal(step.attempts, 2);
	assert_int_equal(step.finished_at, 0);
	assert_int_equal(journal_step_done(journal, "fence", 8, &err), 0);
	assert_int_equal(journal_step_get(journal, "fence", &step, &err), 0);
	assert_int_equal(step.state, RS_STEP_DONE);
	assert_int_equal(step.attempts, 2);
	assert_int_equal(step.rows, 8);
	assert_string_equal(step.error, "");

	/* Order of first begin, however often a step was begun again. */
	assert_int_equal(journal_step_begin(journal, "preflight", &err), 0);
	assert_int_equal(journal_step_begin(journal, "catch-up", &err), 0);
	assert_int_equal(journal_steps(journal, &steps, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_string_equal(steps[0].name, "preflight");
	assert_int_equal(steps[0].attempts, 2);
	assert_string_equal(steps[1].name, "fence");
	assert_int_equal(steps[1].state, RS_STEP_DONE);
	assert_string_equal(steps[2].name, "catch-up");
	free(steps);

	/* Ending a step that never began is a bug in the caller. */
	assert_int_equal(journal_step_done(journal, "purge", 0, &err),
	                 RS_EINTERNAL);
	assert_contains(err.message, "purge");
	assert_int_equal(
		journal_step_begin(journal,
	                           "a-step-name-longer-than-the-record", &err),
		RS_EINTERNAL);
	journal_close(journal, "done");
}

static void
test_chunks(void **state)
{
	struct rs_journal *journal = open_ok();
	struct rs_chunk_record rec, got;
	struct rs_err err = {0};
	/* >= 2^63, with more significant bits than a double holds */
	const uint64_t big = 0xfedcba9876543211ULL;

	(void)state;
	assert_int_equal(journal_step_begin(journal, "copy", &err), 0);
	assert_int_equal(journal_chunk_get(journal, "copy", "db0", "orders_0",
	                                   0, &got, &err),
	                 0);
	assert_true((int)got.state == -1);
	assert_null(got.after_key);
	assert_int_equal(journal_chunk_last_done(journal, "copy", "db0",
	                                         "orders_0", &got, &err),
	                 0);

	/* Chunk 0: from the table's start, intent then result. */
	rec = chunk("copy", 0, NULL, "[\"o'brien\", 20]");
	rec.rows = 500;
	assert_int_equal(journal_chunk_begin(journal, &rec, &err), 0);
	assert_int_equal(journal_chunk_get(journal, "copy", "db0", "orders_0",
	                                   0, &got, &err),
	                 0);
	assert_int_equal(got.state, RS_CHUNK_STARTED);
	assert_null(got.after_key);
	assert_string_equal(got.upto_key, "[\"o'brien\", 20]");
	journal_chunk_free(&got);
	assert_int_equal(journal_chunk_last_done(journal, "copy", "db0",
	                                         "orders_0", &got, &err),
	                 0);
	rec.checksum = big;
	rec.affected = 123;
	assert_int_equal(journal_chunk_done(journal, &rec, &err), 0);
	assert_int_equal(journal_chunk_get(journal, "copy", "db0", "orders_0",
	                                   0, &got, &err),
	                 0);
	assert_int_equal(got.state, RS_CHUNK_DONE);
	assert_true(got.checksum == big);
	assert_int_equal(got.rows, 500);
	assert_int_equal(got.affected, 123);
	assert_string_equal(got.step, "copy");
	assert_string_equal(got.shard, "db0");
	assert_string_equal(got.table, "orders_0");
	journal_chunk_free(&got);

	/* Chunk 1 done with the largest checksum, chunk 2 only begun. */
	rec = chunk("copy", 1, "[\"o'brien\", 20]", "[\"zed\", 1]");
	rec.checksum = UINT64_MAX;
	assert_int_equal(journal_chunk_begin(journal, &rec, &err), 0);
	assert_int_equal(journal_chunk_done(journal, &rec, &err), 0);
	rec = chunk("copy", 2, "[\"zed\", 1]", NULL);
	assert_int_equal(journal_chunk_begin(journal, &rec, &err), 0);

	assert_int_equal(journal_chunk_last_done(journal, "copy", "db0",
	                                         "orders_0", &got, &err),
	                 1);
	assert_int_equal(got.number, 1);
	assert_true(got.checksum == UINT64_MAX);
	assert_string_equal(got.after_key, "[\"o'brien\", 20]");
	assert_string_equal(got.upto_key, "[\"zed\", 1]");
	journal_chunk_free(&got);
	assert_int_equal(journal_chunk_get(journal, "copy", "db0", "orders_0",
	                                   2, &got, &err),
	                 0);
	assert_int_equal(got.state, RS_CHUNK_STARTED);
	assert_null(got.upto_key);
	journal_chunk_free(&got);
	/* Another table of the same shard has no chunk done. */
	assert_int_equal(journal_chunk_last_done(journal, "copy", "db0",
	                                         "orders_1", &got, &err),
	                 0);

	/* A result without its intent, or a chunk of an unbegun step. */
	rec = chunk("copy", 7, NULL, NULL);
	assert_int_equal(journal_chunk_done(journal, &rec, &err), RS_EINTERNAL);
	assert_contains(err.message, "never begun");
	rec = chunk("verify", 0, NULL, NULL);
	assert_int_equal(journal_chunk_begin(journal, &rec, &err),
	                 RS_EINTERNAL);
	journal_close(journal, "done");
}

static void
test_facts(void **state)
{
	struct rs_journal *journal = open_ok();
	struct rs_err err = {0};
	char value[8];

	(void)state;
	assert_int_equal(
		journal_fact_get(journal, "epoch", value, sizeof(value), &err),
		0);
	assert_int_equal(journal_fact_set(journal, "epoch", "7", &err), 0);
	assert_int_equal(journal_fact_set(journal, "epoch", "8", &err), 0);
	assert_int_equal(
		journal_fact_get(journal, "epoch", value, sizeof(value), &err),
		1);
	assert_string_equal(value, "8");
	/* A value that does not fit is refused, not cut. */
	assert_int_equal(
		journal_fact_set(journal, "fenced_at", "1764670000000", &err),
		0);
	assert_int_equal(journal_fact_get(journal, "fenced_at", value,
	                                  sizeof(value), &err),
	                 RS_EINTERNAL);
	assert_non_null(strstr(err.message, "fenced_at"));
	assert_string_equal(value, "");
	/* A lazy fact reads back at once (the WAL has it). */
	assert_int_equal(journal_fact_set_lazy(journal, "kind", "1", &err), 0);
	assert_int_equal(
		journal_fact_get(journal, "kind", value, sizeof(value), &err),
		1);
	assert_string_equal(value, "1");
	assert_int_equal(journal_fact_delete(journal, "epoch", &err), 0);
	assert_int_equal(
		journal_fact_get(journal, "epoch", value, sizeof(value), &err),
		0);
	journal_close(journal, "done");
}

/* The size of the journal's WAL file. */
static off_t
wal_size(void)
{
	char wal[sizeof(path) + 8];
	struct stat st;

	snprintf(wal, sizeof(wal), "%s-wal", path);
	assert_int_equal(stat(wal, &st), 0);
	return st.st_size;
}

/* journal_sync commits something every time, also twice in one second:
 * a commit that changes no byte writes nothing and syncs nothing, and the
 * lazy records before it would stay off the disk. */
static void
test_sync_writes_every_time(void **state)
{
	struct rs_journal *journal = open_ok();
	struct rs_err err = {0};
	off_t before;

	(void)state;
	for (int i = 0; i < 3; i++) {
		before = wal_size();
		assert_int_equal(journal_sync(journal, &err), 0);
		assert_true(wal_size() > before);
	}
	journal_close(journal, "done");
}

/* A lazy begin or fact is no durable write, yet another connection reads
 * it at once (a killed process loses nothing); a durable begin and a sync
 * are one each: the account unfence gives of the fenced window. */
static void
test_durable_writes_are_counted(void **state)
{
	struct rs_journal *journal = open_ok(), *reader = NULL;
	struct rs_step_record step;
	struct rs_err err = {0};
	int64_t n;

	(void)state;
	n = journal_durable_writes(journal);
	assert_int_equal(journal_step_begin_lazy(journal, "verify", &err), 0);
	assert_int_equal(journal_fact_set_lazy(journal, "epoch", "3", &err), 0);
	assert_int_equal(journal_durable_writes(journal), n);
	assert_int_equal(journal_open_readonly(path, &reader, &err), 0);
	assert_int_equal(journal_step_get(reader, "verify", &step, &err), 0);
	assert_int_equal(step.state, RS_STEP_RUNNING);
	journal_close(reader, NULL);
	assert_int_equal(journal_sync(journal, &err), 0);
	assert_int_equal(journal_durable_writes(journal), n + 1);
	assert_int_equal(journal_step_begin(journal, "publish", &err), 0);
	assert_int_equal(journal_fact_set(journal, "epoch", "4", &err), 0);
	assert_int_equal(journal_durable_writes(journal), n + 3);
	journal_close(journal, "done");
}

/* journal_sync_wal: a journal of journal_open has its WAL file open; a
 * lazy write is in that file (the sync has something to make durable),
 * the sync succeeds and counts as a durable write; a read-only journal
 * has none and says so. */
static void
test_sync_wal(void **state)
{
	struct rs_journal *journal = open_ok(), *reader = NULL;
	struct rs_err err = {0};
	char wal[160];
	struct stat before, after;
	int64_t n;

	(void)state;
	snprintf(wal, sizeof(wal), "%s-wal", path);
	assert_true(journal_can_sync_wal(journal));
	assert_int_equal(stat(wal, &before), 0);
	n = journal_durable_writes(journal);
	assert_int_equal(journal_fact_set_lazy(journal, "epoch", "5", &err), 0);
	assert_int_equal(stat(wal, &after), 0);
	assert_true(after.st_size > before.st_size);
	assert_int_equal(journal_sync_wal(journal, &err), 0);
	assert_int_equal(journal_durable_writes(journal), n + 1);
	assert_int_equal(journal_open_readonly(path, &reader, &err), 0);
	assert_false(journal_can_sync_wal(reader));
	assert_int_equal(journal_sync_wal(reader, &err), RS_EUSAGE);
	journal_close(reader, NULL);
	journal_close(journal, "done");
}

static void
test_second_open_in_same_process_is_busy(void **state)
{
	struct rs_journal *journal = open_ok(), *second = NULL;
	struct rs_err err = {0};
	char holder[256], pid[32];

	(void)state;
	snprintf(pid, sizeof(pid), "pid %ld on host ", (long)getpid());
	assert_int_equal(journal_open(path, FINGERPRINT, PLAN, &second, &err),
	                 RS_EBUSY);
	assert_null(second);
	assert_int_equal(err.code, RS_EBUSY);
	assert_contains(err.message, path);
	assert_contains(err.message, pid);
	assert_contains(err.message, " UTC");
	assert_contains(err.message, "wait for it to finish or stop it");
	assert_int_equal(journal_lock_holder(path, holder, sizeof(holder)), 1);
	assert_contains(holder, pid);

	journal_close(journal, "done");
	assert_int_equal(journal_lock_holder(path, holder, sizeof(holder)), 0);
	journal = open_ok();
	journal_close(journal, "done");
}

static void
test_other_process_is_named(void **state)
{
	int ready[2], release[2];
	struct rs_journal *journal = NULL;
	struct rs_err err = {0};
	char byte, holder[256], pid_text[32];
	int status;
	pid_t pid;

	(void)state;
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(release), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rs_journal *held = NULL;

		/* Dies on its own if the parent fails before releasing it. */
		alarm(10);
		close(ready[0]);
		close(release[1]);
		if (journal_open(path, FINGERPRINT, PLAN, &held, NULL) != 0)
			_exit(2);
		if (write(ready[1], "r", 1) != 1 ||
		    read(release[0], &byte, 1) != 1)
			_exit(3);
		journal_close(held, "done");
		_exit(0);
	}
	close(ready[1]);
	close(release[0]);
	assert_int_equal(read(ready[0], &byte, 1), 1);
	snprintf(pid_text, sizeof(pid_text), "pid %ld on", (long)pid);
	assert_int_equal(journal_open(path, FINGERPRINT, PLAN, &journal, &err),
	                 RS_EBUSY);
	assert_contains(err.message, pid_text);
	assert_int_equal(journal_lock_holder(path, holder, sizeof(holder)), 1);
	assert_contains(holder, pid_text);

	assert_int_equal(write(release[1], "g", 1), 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	journal = open_ok();
	journal_close(journal, "done");
	close(ready[0]);
	close(release[1]);
}

/* A hook command started while the journal is open must not keep the run
 * lock after reshard closes the journal. */
static void
test_hook_commands_do_not_inherit_the_lock(void **state)
{
	struct rs_journal *journal = open_ok();
	char holder[256], byte;
	int exec_done[2], status;
	pid_t pid;

	(void)state;
	assert_int_equal(pipe2(exec_done, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(exec_done[0]);
		execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	/* The write end closes when the child's exec succeeds. */
	close(exec_done[1]);
	if (read(exec_done[0], &byte, 1) != 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		fail_msg("the child could not run /bin/sleep");
	}
	close(exec_done[0]);

	journal_close(journal, "done");
	int held = journal_lock_holder(path, holder, sizeof(holder));
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (held)
		fail_msg("the hook process still holds the lock: %s", holder);
}

static void
test_changed_plan_is_refused(void **state)
{
	struct rs_journal *journal = open_ok();
	struct rs_err err = {0};

	(void)state;
	journal_close(journal, "interrupted");
	assert_int_equal(journal_open(path, OTHER_FINGERPRINT,
	                              "name = orders-2x\n"
	                              "strategy = split\n"
	                              "to.nodes = db0, db1, db2, db3\n"
	                              "options.batch_rows = 1000\n"
	                              "options.parallel = 4\n",
	                              &journal, &err),
	                 RS_EPLAN);
	assert_null(journal);
	assert_contains(err.message, path);
	assert_contains(err.message, "was: \"options.batch_rows = 5000\", "
	                             "now: \"options.batch_rows = 1000\"");
	assert_contains(err.message, "restore the plan that started this run, "
	                             "or move the journal");
	assert_contains(err.message, "aside to start a new run");
	assert_true(strstr(err.message, "parallel") == NULL);

	/* Lines removed and added, more than are named. */
	assert_int_equal(journal_open(path, OTHER_FINGERPRINT,
	                              "name = orders-3x\n"
	                              "strategy = split\n"
	                              "to.nodes = db0, db1, db2\n"
	                              "options.batch_rows = 1000\n"
	                              "options.throttle = 10\n",
	                              &journal, &err),
	                 RS_EPLAN);
	assert_contains(err.message, "was: \"name = orders-2x\", now: "
	                             "\"name = orders-3x\"");
	assert_contains(err.message, "and 2 more");

	/* A long line is named by its first 90 bytes. */
	char long_plan[512], named[128];
	char line[201];

	memset(line, 'y', sizeof(line) - 1);
	memcpy(line, "options.note = ", strlen("options.note = "));
	line[sizeof(line) - 1] = '\0';
	snprintf(long_plan, sizeof(long_plan), "%s%s\n", PLAN, line);
	assert_int_equal(journal_open(path, OTHER_FINGERPRINT, long_plan,
	                              &journal, &err),
	                 RS_EPLAN);
	snprintf(named, sizeof(named), "was: (not set), now: \"%.90s\"; ",
	         line);
	assert_contains(err.message, named);

	assert_int_equal(
		journal_open(path, OTHER_FINGERPRINT, PLAN, &journal, &err),
		RS_EPLAN);
	assert_contains(err.message, "secret");

	/* A refusal leaves the lock free and the journal unchanged. */
	journal = open_ok();
	journal_close(journal, "done");
}

/* A long line changed past the bytes a refusal shows of it (a pinned key
 * of 300 bytes with its last byte changed) is named from a little before
 * its first difference, so that the two lines named differ. */
static void
test_changed_long_line_is_named(void **state)
{
	struct rs_journal *journal = NULL;
	struct rs_err err = {0};
	char key[301], was[512], now[512], named[256];

	(void)state;
	memset(key, 'k', sizeof(key) - 1);
	key[sizeof(key) - 1] = '\0';
	snprintf(was, sizeof(was), "%sto.overrides[0] = key '%sa' node db3\n",
	         PLAN, key);
	snprintf(now, sizeof(now), "%sto.overrides[0] = key '%sb' node db3\n",
	         PLAN, key);
	assert_int_equal(journal_open(path, FINGERPRINT, was, &journal, &err),
	                 0);
	journal_close(journal, "done");
	assert_int_equal(
		journal_open(path, OTHER_FINGERPRINT, now, &journal, &err),
		RS_EPLAN);
	snprintf(named, sizeof(named),
	         "was: \"to.overrides[0] = …%.30sa' node db3\", "
	         "now: \"to.overrides[0] = …%.30sb' node db3\"",
	         key, key);
	assert_contains(err.message, named);
}

static void
test_readonly(void **state)
{
	struct rs_journal *journal = NULL, *reader = NULL;
	struct rs_step_record step;
	struct rs_err err = {0};
	char holder[256];

	(void)state;
	assert_int_equal(journal_open_readonly(path, &reader, &err), RS_EIO);
	assert_null(reader);
	assert_contains(err.message, "no journal at ");
	assert_contains(err.message, path);
	assert_contains(err.message, "this plan has not been run yet");

	/* Status reads while a run writes; it takes no lock and cannot
	 * write. */
	journal = open_ok();
	assert_int_equal(journal_step_begin(journal, "copy", &err), 0);
	assert_int_equal(journal_open_readonly(path, &reader, &err), 0);
	assert_int_equal(journal_step_get(reader, "copy", &step, &err), 0);
	assert_int_equal(step.state, RS_STEP_RUNNING);
	assert_int_equal(journal_step_done(journal, "copy", 5, &err), 0);
	assert_int_equal(journal_step_get(reader, "copy", &step, &err), 0);
	assert_int_equal(step.state, RS_STEP_DONE);
	assert_int_equal(journal_fact_set(reader, "epoch", "2", &err),
	                 RS_EINTERNAL);
	journal_close(reader, NULL);
	assert_int_equal(journal_lock_holder(path, holder, sizeof(holder)), 1);
	journal_close(journal, "done");
}

/* Parse "YYYY-MM-DD HH:MM:SS" as UTC. */
static time_t
parse_utc(const char *text)
{
	struct tm tm;

	memset(&tm, 0, sizeof(tm));
	if (sscanf(text, "%d-%d-%d %d:%d:%d", &tm.tm_year, &tm.tm_mon,
	           &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 6)
		return (time_t)-1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return timegm(&tm);
}

static void
test_events_tail(void **state)
{
	struct rs_journal *journal = open_ok();
	char *tail;
	time_t at;

	(void)state;
	/* Far from UTC, so that local time would show. */
	setenv("TZ", "Pacific/Kiritimati", 1);
	tzset();
	tail = journal_events_tail(journal, 5);
	assert_string_equal(tail, "");
	free(tail);
	journal_event(journal, "info", "step %s begun", "preflight");
	journal_event(journal, "warn", "db%d: lag %d s", 2, 12);
	journal_event(journal, "error", "fence failed:\nlock timeout");

	tail = journal_events_tail(journal, 2);
	assert_non_null(tail);
	/* "YYYY-MM-DD HH:MM:SS " is 20 bytes; newest last, one line each. */
	char *second = strchr(tail, '\n');
	assert_non_null(second);
	second++;
	assert_true(second - tail ==
	            20 + (ptrdiff_t)strlen("warn db2: lag 12 s\n"));
	assert_memory_equal(tail + 20, "warn db2: lag 12 s\n",
	                    strlen("warn db2: lag 12 s\n"));
	assert_string_equal(second + 20, "error fence failed: lock timeout\n");
	assert_true(tail[4] == '-' && tail[10] == ' ' && tail[13] == ':');
	at = parse_utc(second);
	assert_true(at != (time_t)-1);
	if (labs((long)(at - time(NULL))) > 120)
		fail_msg("event time %.19s is not UTC now", second);
	free(tail);
	tail = journal_events_tail(journal, 10);
	assert_contains(tail, " info step preflight begun\n");
	free(tail);
	unsetenv("TZ");
	tzset();
	journal_close(journal, "done");
}

/* A tail far past any first allocation, and an event longer than one:
 * every line is there, whole and in order. */
static void
test_events_tail_grows(void **state)
{
	struct rs_journal *journal = open_ok();
	char long_message[3001], *tail;
	const char *p;
	size_t expect = 0;

	(void)state;
	memset(long_message, 'x', sizeof(long_message) - 1);
	long_message[sizeof(long_message) - 1] = '\0';
	for (int i = 0; i < 40; i++) {
		journal_event(journal, "info",
		              "event %02d of the tail, padded "
		              "to be longer than a short line",
		              i);
		/* "YYYY-MM-DD HH:MM:SS " and "info " and the newline. */
		expect += 20 + 5 +
		          strlen("event 00 of the tail, padded to be "
		                 "longer than a short line") +
		          1;
	}
	journal_event(journal, "warn", "%s", long_message);
	expect += 20 + 5 + strlen(long_message) + 1;

	tail = journal_events_tail(journal, 41);
	assert_non_null(tail);
	assert_int_equal(strlen(tail), expect);
	p = tail;
	for (int i = 0; i < 40; i++) {
		char line[80];

		snprintf(line, sizeof(line),
		         " info event %02d of the tail, padded to be longer "
		         "than a short line\n",
		         i);
		assert_memory_equal(p + 19, line, strlen(line));
		p += 19 + strlen(line);
	}
	assert_memory_equal(p + 19, " warn ", 6);
	assert_memory_equal(p + 25, long_message, strlen(long_message));
	assert_string_equal(p + 25 + strlen(long_message), "\n");
	free(tail);
	journal_close(journal, "done");
}

static void
test_other_schema_version_is_refused(void **state)
{
	struct rs_journal *journal = open_ok();
	struct rs_err err = {0};
	sqlite3 *db;

	(void)state;
	journal_close(journal, "done");
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(
		sqlite3_exec(db, "PRAGMA user_version = 4", NULL, NULL, NULL),
		SQLITE_OK);
	sqlite3_close(db);

	assert_int_equal(journal_open(path, FINGERPRINT, PLAN, &journal, &err),
	                 RS_EIO);
	assert_null(journal);
	assert_contains(err.message, "schema version 4");
	assert_int_equal(journal_open_readonly(path, &journal, &err), RS_EIO);
	assert_contains(err.message, "schema version 4");
}

static void
test_other_database_is_refused(void **state)
{
	struct rs_journal *journal = NULL;
	struct rs_err err = {0};
	sqlite3 *db;

	(void)state;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "CREATE TABLE orders (id INTEGER)",
	                              NULL, NULL, NULL),
	                 SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(journal_open(path, FINGERPRINT, PLAN, &journal, &err),
	                 RS_EIO);
	assert_contains(err.message, "is not a reshard journal");
}

/* A run killed between intent and result: the next run may open the
 * journal at once and sees what may have happened. */
static void
test_crash_keeps_intent_and_frees_lock(void **state)
{
	struct rs_journal *journal;
	struct rs_chunk_record rec;
	struct rs_step_record step;
	struct rs_err err = {0};
	char holder[256];
	int status;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rs_journal *dying = NULL;
		struct rs_chunk_record intent =
			chunk("copy", 4, "[40]", "[50]");

		if (journal_open(path, FINGERPRINT, PLAN, &dying, NULL) != 0)
			_exit(2);
		if (journal_step_begin(dying, "copy", NULL) != 0)
			_exit(3);
		if (journal_chunk_begin(dying, &intent, NULL) != 0)
			_exit(4);
		_exit(1); /* no journal_close */
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 1);

	assert_int_equal(journal_lock_holder(path, holder, sizeof(holder)), 0);
	journal = open_ok();
	assert_int_equal(journal_step_get(journal, "copy", &step, &err), 0);
	assert_int_equal(step.state, RS_STEP_RUNNING);
	assert_int_equal(step.chunks_done, 0);
	assert_int_equal(journal_chunk_get(journal, "copy", "db0", "orders_0",
	                                   4, &rec, &err),
	                 0);
	assert_int_equal(rec.state, RS_CHUNK_STARTED);
	assert_string_equal(rec.after_key, "[40]");
	assert_string_equal(rec.upto_key, "[50]");
	journal_chunk_free(&rec);
	journal_close(journal, "done");
}

/* The lock is on the journal itself: no side file is made, so none can
 * be deleted to let a second run in. */
static void
test_lock_is_the_journal_itself(void **state)
{
	struct rs_journal *journal = open_ok(), *second = NULL;
	struct rs_err err = {0};
	char lock[160];
	int fd;

	(void)state;
	snprintf(lock, sizeof(lock), "%s.lock", path);
	assert_int_equal(access(lock, F_OK), -1);
	assert_int_equal(journal_open(path, FINGERPRINT, PLAN, &second, &err),
	                 RS_EBUSY);
	assert_contains(err.message, "pid ");
	assert_int_equal(journal_lock_file(path, &fd, &err), RS_EBUSY);
	journal_close(journal, "done");
	assert_int_equal(journal_lock_file(path, &fd, &err), 0);
	close(fd);
}

/* Stopped steps and kept rows: recorded, read back, cleared. */
static void
test_stopped_and_kept(void **state)
{
	struct rs_journal *journal = open_ok();
	struct rs_err err = {0};
	struct rs_step_record rec;
	struct rs_kept_row *rows;
	struct rs_kept_row row = {"db0", "orders_1", "[\"920\"]", NULL,
	                          "db2.orders_1"};
	int n;

	(void)state;
	assert_int_equal(journal_step_begin(journal, "purge", &err), 0);
	assert_int_equal(
		journal_step_stopped(journal, "purge", "on request", &err), 0);
	assert_int_equal(journal_step_get(journal, "purge", &rec, &err), 0);
	assert_int_equal(rec.state, RS_STEP_STOPPED);
	assert_string_equal(rec.error, "on request");
	assert_int_equal(journal_kept_add(journal, &row, &err), 0);
	row.shard_key = "cust-7";
	assert_int_equal(journal_kept_add(journal, &row, &err), 0);
	assert_int_equal(journal_kept_list(journal, &rows, &n, &err), 0);
	assert_int_equal(n, 1); /* the same row, updated */
	assert_string_equal(rows[0].shard_key, "cust-7");
	assert_string_equal(rows[0].owner, "db2.orders_1");
	journal_kept_free(rows, n);
	assert_int_equal(journal_kept_clear(journal, &err), 0);
	assert_int_equal(journal_kept_list(journal, &rows, &n, &err), 0);
	assert_int_equal(n, 0);
	journal_close(journal, "done");
}

/* What status reads: a new attempt drops a stop's message and keeps a
 * failure's; the rows of done chunks, forgotten for a walk that starts
 * over; the last run, with or without the aborts. */
static void
test_status_reads(void **state)
{
	struct rs_journal *journal = open_ok();
	struct rs_err err = {0};
	struct rs_step_record rec;
	struct rs_run_record run;
	struct rs_chunk_record c;
	int64_t rows;

	(void)state;
	assert_int_equal(journal_step_begin(journal, "purge", &err), 0);
	assert_int_equal(journal_step_stopped(journal, "purge",
	                                      "stopped on request", &err),
	                 0);
	assert_int_equal(journal_step_begin(journal, "purge", &err), 0);
	assert_int_equal(journal_step_get(journal, "purge", &rec, &err), 0);
	assert_string_equal(rec.error, "");
	assert_int_equal(
		journal_step_failed(journal, "purge", "db1 is gone", &err), 0);
	assert_int_equal(journal_step_begin(journal, "purge", &err), 0);
	assert_int_equal(journal_step_get(journal, "purge", &rec, &err), 0);
	assert_int_equal(rec.state, RS_STEP_RUNNING);
	assert_string_equal(rec.error, "db1 is gone");

	for (int i = 0; i < 3; i++) {
		c = chunk("purge", i, NULL, "[1]");
		c.rows = 10 * (i + 1);
		assert_int_equal(journal_chunk_begin(journal, &c, &err), 0);
		if (i < 2) /* the third is only begun */
			assert_int_equal(journal_chunk_done(journal, &c, &err),
			                 0);
	}
	assert_int_equal(journal_step_rows_done(journal, "purge", &rows, &err),
	                 0);
	assert_int_equal(rows, 30);
	assert_int_equal(journal_step_rows_done(journal, "copy", &rows, &err),
	                 0);
	assert_int_equal(rows, 0);
	assert_int_equal(journal_chunks_forget(journal, "purge", &err), 0);
	assert_int_equal(journal_step_rows_done(journal, "purge", &rows, &err),
	                 0);
	assert_int_equal(rows, 0);
	assert_int_equal(journal_step_get(journal, "purge", &rec, &err), 0);
	assert_int_equal(rec.chunks_done, 0);

	/* This process is the last run, not ended yet. */
	assert_int_equal(journal_last_run(journal, 1, &run, &err), 1);
	assert_int_equal(run.pid, getpid());
	assert_int_equal(run.ended_at, 0);
	assert_string_equal(run.outcome, "");
	journal_close(journal, "stopped");
	/* An abort after it is the last process, not the last run. */
	journal = open_ok();
	journal_close(journal, "abort failed");
	journal = open_ok();
	assert_int_equal(journal_last_run(journal, 0, &run, &err), 1);
	assert_int_equal(run.ended_at, 0); /* this one */
	journal_close(journal, "aborted");
	/* So is a verify, whatever its outcome. */
	assert_int_equal(journal_open_as(path, FINGERPRINT, PLAN, "verify",
	                                 &journal, &err),
	                 0);
	journal_close(journal, "done");
	assert_int_equal(journal_open_readonly(path, &journal, &err), 0);
	assert_int_equal(journal_last_run(journal, 0, &run, &err), 1);
	assert_string_equal(run.outcome, "done");
	assert_int_equal(journal_last_run(journal, 1, &run, &err), 1);
	assert_string_equal(run.outcome, "stopped");
	assert_true(run.ended_at >= run.started_at);
	journal_close(journal, NULL);
}

/* A journal of schema version 1 (steps could not be stopped, no kept
 * rows) is upgraded when opened for a run, keeping its steps and chunks. */
static void
test_version_1_is_upgraded(void **state)
{
	struct rs_journal *journal = open_ok();
	struct rs_chunk_record chunk = {.step = "verify",
	                                .shard = "db0",
	                                .table = "orders_0",
	                                .upto_key = "[\"5\"]",
	                                .rows = 5};
	struct rs_err err = {0};
	struct rs_step_record rec;
	sqlite3 *db;

	(void)state;
	assert_int_equal(journal_step_begin(journal, "verify", &err), 0);
	assert_int_equal(journal_chunk_begin(journal, &chunk, &err), 0);
	journal_close(journal, "done");
	/* Back to version 1's shape. */
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(
		sqlite3_exec(
			db,
			"PRAGMA foreign_keys = OFF; DROP TABLE kept_rows;"
			"DROP TABLE differences;"
			"ALTER TABLE runs DROP COLUMN command;"
			"CREATE TABLE s1 (name TEXT PRIMARY KEY, state TEXT "
			"NOT "
			"NULL CHECK (state IN ('pending', 'running', 'done', "
			"'failed')), attempts INTEGER NOT NULL, started_at "
			"INTEGER, finished_at INTEGER, rows INTEGER NOT NULL "
			"DEFAULT 0, error TEXT NOT NULL DEFAULT '', "
			"first_begun "
			"INTEGER NOT NULL UNIQUE);"
			"INSERT INTO s1 SELECT * FROM steps; DROP TABLE steps;"
			"ALTER TABLE s1 RENAME TO steps;"
			"PRAGMA user_version = 1",
			NULL, NULL, NULL),
		SQLITE_OK);
	sqlite3_close(db);

	journal = open_ok();
	assert_int_equal(journal_step_get(journal, "verify", &rec, &err), 0);
	assert_int_equal(rec.state, RS_STEP_RUNNING);
	assert_int_equal(
		journal_step_stopped(journal, "verify", "on request", &err), 0);
	assert_int_equal(journal_chunk_get(journal, "verify", "db0", "orders_0",
	                                   0, &chunk, &err),
	                 0);
	assert_int_equal(chunk.rows, 5);
	journal_chunk_free(&chunk);
	journal_close(journal, "done");
}

/* Differences are kept per pass; a chunk done again forgets its own, a
 * new pass all of its pass's, and a read names every field. */
static void
test_differences(void **state)
{
	struct rs_journal *journal = open_ok();
	struct rs_difference d = {.pass = "verify-on-demand",
	                          .shard = "db0",
	                          .table = "orders_0",
	                          .chunk = 0,
	                          .pk = "[\"1\"]",
	                          .shard_key = "cust-1",
	                          .owner = "db2.orders_0",
	                          .kind = "differs",
	                          .columns = "[\"total\"]"};
	struct rs_difference *list;
	struct rs_err err = {0};
	int64_t total;
	int n;

	(void)state;
	assert_int_equal(journal_difference_add(journal, &d, &err), 0);
	d.pk = "[\"2\"]";
	d.kind = "missing";
	d.columns = NULL;
	d.shard_key = NULL;
	assert_int_equal(journal_difference_add(journal, &d, &err), 0);
	d.chunk = 1;
	d.pk = "[\"9\"]";
	d.kind = "extra";
	assert_int_equal(journal_difference_add(journal, &d, &err), 0);
	d.pass = "verify";
	assert_int_equal(journal_difference_add(journal, &d, &err), 0);

	assert_int_equal(journal_differences(journal, "verify-on-demand", 2,
	                                     &list, &n, &total, &err),
	                 0);
	assert_int_equal(n, 2);
	assert_int_equal(total, 3);
	assert_string_equal(list[0].pk, "[\"1\"]");
	assert_string_equal(list[0].kind, "differs");
	assert_string_equal(list[0].columns, "[\"total\"]");
	assert_string_equal(list[0].shard_key, "cust-1");
	assert_string_equal(list[0].owner, "db2.orders_0");
	assert_true(list[0].found_at > 0);
	assert_null(list[1].shard_key);
	assert_null(list[1].columns);
	journal_differences_free(list, n);

	/* Chunk 0 done again: its two go, chunk 1's stays. */
	assert_int_equal(journal_differences_forget(journal, "verify-on-demand",
	                                            "db0", "orders_0", 0, &err),
	                 0);
	assert_int_equal(journal_differences(journal, "verify-on-demand", 0,
	                                     &list, &n, &total, &err),
	                 0);
	assert_int_equal(n, 1);
	assert_string_equal(list[0].kind, "extra");
	journal_differences_free(list, n);
	/* A new pass forgets its own only. */
	assert_int_equal(journal_differences_forget(journal, "verify-on-demand",
	                                            NULL, NULL, 0, &err),
	                 0);
	assert_int_equal(journal_differences(journal, "verify-on-demand", 0,
	                                     &list, &n, NULL, &err),
	                 0);
	assert_int_equal(n, 0);
	assert_int_equal(journal_differences(journal, "verify", 0, &list, &n,
	                                     NULL, &err),
	                 0);
	assert_int_equal(n, 1);
	journal_differences_free(list, n);
	journal_close(journal, "done");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_reopen_keeps_steps_chunks_facts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_step_lifecycle, setup,
	                                        teardown),
		cmocka_unit_test_setup_teardown(test_chunks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_facts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sync_writes_every_time,
	                                        setup, teardown),
		cmocka_unit_test_setup_teardown(test_sync_wal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_durable_writes_are_counted,
	                                        setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_second_open_in_same_process_is_busy, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_other_process_is_named,
	                                        setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_hook_commands_do_not_inherit_the_lock, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_changed_plan_is_refused,
	                                        setup, teardown),
		cmocka_unit_test_setup_teardown(test_changed_long_line_is_named,
	                                        setup, teardown),
		cmocka_unit_test_setup_teardown(test_readonly, setup, teardown),
		cmocka_unit_test_setup_teardown(test_events_tail, setup,
	                                        teardown),
		cmocka_unit_test_setup_teardown(test_events_tail_grows, setup,
	                                        teardown),
		cmocka_unit_test_setup_teardown(
			test_other_schema_version_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_other_database_is_refused,
	                                        setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_crash_keeps_intent_and_frees_lock, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_lock_is_the_journal_itself,
	                                        setup, teardown),
		cmocka_unit_test_setup_teardown(test_status_reads, setup,
	                                        teardown),
		cmocka_unit_test_setup_teardown(test_stopped_and_kept, setup,
	                                        teardown),
		cmocka_unit_test_setup_teardown(test_version_1_is_upgraded,
	                                        setup, teardown),
		cmocka_unit_test_setup_teardown(test_differences, setup,
	                                        teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
