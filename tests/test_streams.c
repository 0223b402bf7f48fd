/*
 * Unit tests of src/engine/streams.c on a real libuv loop (timers stand in
 * for backend operations): tasks of one step run at once, each waiting
 * without holding up the others, so they end in the order of their waits,
 * not of their numbers; one stream runs them in order; at most `parallel`
 * run at once; the first failure is the step's and stops the streams that
 * reach a checkpoint; a group started inside a stream runs inline; a
 * journal sync asked for by a stream runs on a worker thread while the
 * stream works, and the streams that ask while one runs share the next.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/fiber.h"
#include "engine/await.h"
#include "engine/streams.h"
#include "journal/journal.h"
#include "journal/journal_impl.h"

struct log {
	int order[16]; /* task numbers, as they ended */
	int n;
	int running, most; /* tasks running now, the most at once */
	const int *sleep_ms;
	const int *need; /* chain_task: task i ends once need[i] have ended */
	int started;     /* chain_task: tasks started */
	int fail;        /* this task fails (-1: none) */
};

/* Task I waits until NEED[I] tasks have ended: with every task running at
 * once they end in the order the chain sets, whatever the clock says; run
 * one after another, the first would wait for ever. */
static int
chain_task(struct rs_run *run, int i, void *arg, struct rs_err *err)
{
	struct log *log = arg;

	(void)run;
	(void)err;
	if (++log->running > log->most)
		log->most = log->running;
	log->started++;
	fiber_wait(&log->started, 3); /* all three at once */
	fiber_wait(&log->n, log->need[i]);
	log->running--;
	log->order[log->n++] = i;
	return 0;
}

static int
sleepy_task(struct rs_run *run, int i, void *arg, struct rs_err *err)
{
	struct log *log = arg;
	int rc;

	if (++log->running > log->most)
		log->most = log->running;
	await_sleep(&run->loop, (uint64_t)log->sleep_ms[i]);
	log->running--;
	if (i == log->fail)
		return rs_err_set(err, RS_EQUERY, "task %d failed", i);
	rc = engine_checkpoint(run, err);
	if (rc == 0)
		log->order[log->n++] = i;
	return rc;
}

static void
run_init(struct rs_run *run, struct rs_plan *plan)
{
	memset(run, 0, sizeof(*run));
	memset(plan, 0, sizeof(*plan));
	plan->path = "test.cfg";
	run->plan = plan;
	assert_int_equal(uv_loop_init(&run->loop), 0);
}

static void
run_end(struct rs_run *run)
{
	uv_run(&run->loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&run->loop), 0);
}

static void
test_at_once_and_in_order(void **state)
{
	static const int sleep_ms[] = {60, 20, 40};
	static const int need[] = {2, 0, 1};
	struct rs_run run;
	struct rs_plan plan;
	struct log log = {.need = need, .fail = -1};
	struct rs_streams_spec spec = {
		.n = 3, .parallel = 3, .task = chain_task, .arg = &log};
	struct rs_err err = {0};

	(void)state;
	run_init(&run, &plan);
	assert_int_equal(streams_run(&run, &spec, &err), 0);
	assert_int_equal(log.n, 3);
	/* They waited side by side: each ended when its wait was over. */
	assert_int_equal(log.order[0], 1);
	assert_int_equal(log.order[1], 2);
	assert_int_equal(log.order[2], 0);
	assert_int_equal(log.most, 3);
	/* One stream: one after another, in their order. */
	log = (struct log){.sleep_ms = sleep_ms, .fail = -1};
	spec.parallel = 1;
	spec.task = sleepy_task;
	assert_int_equal(streams_run(&run, &spec, &err), 0);
	assert_int_equal(log.order[0], 0);
	assert_int_equal(log.order[1], 1);
	assert_int_equal(log.order[2], 2);
	assert_int_equal(log.most, 1);
	run_end(&run);
}

static void
test_parallel_bound(void **state)
{
	static const int sleep_ms[] = {5, 5, 5, 5, 5, 5, 5, 5, 5};
	struct rs_run run;
	struct rs_plan plan;
	struct log log = {.sleep_ms = sleep_ms, .fail = -1};
	struct rs_streams_spec spec = {
		.n = 9, .parallel = 2, .task = sleepy_task, .arg = &log};
	struct rs_err err = {0};

	(void)state;
	run_init(&run, &plan);
	assert_int_equal(streams_run(&run, &spec, &err), 0);
	assert_int_equal(log.n, 9);
	assert_int_equal(log.most, 2);
	run_end(&run);
}

static void
test_first_failure_stops_the_rest(void **state)
{
	/* Task 1 fails first (10 ms); task 0 (50 ms) is running then and
	 * stops at its checkpoint; tasks 2 and 3 never start. */
	static const int sleep_ms[] = {50, 10, 5, 5};
	struct rs_run run;
	struct rs_plan plan;
	struct log log = {.sleep_ms = sleep_ms, .fail = 1};
	struct rs_streams_spec spec = {
		.n = 4, .parallel = 2, .task = sleepy_task, .arg = &log};
	struct rs_err err = {0};

	(void)state;
	run_init(&run, &plan);
	assert_int_equal(streams_run(&run, &spec, &err), RS_EQUERY);
	assert_string_equal(err.message, "task 1 failed");
	assert_int_equal(log.n, 0);
	run_end(&run);
}

/* A task that runs a group of its own: inline, in order. */
static int
nesting_task(struct rs_run *run, int i, void *arg, struct rs_err *err)
{
	static const int sleep_ms[] = {30, 10};
	struct log *inner = arg;
	struct log mine = {.sleep_ms = sleep_ms, .fail = -1};
	struct rs_streams_spec spec = {
		.n = 2, .parallel = 2, .task = sleepy_task, .arg = &mine};
	int rc = streams_run(run, &spec, err);

	(void)i;
	if (rc == 0 && mine.order[0] == 0 && mine.order[1] == 1)
		inner->n++;
	return rc;
}

static void
test_nested_runs_inline(void **state)
{
	struct rs_run run;
	struct rs_plan plan;
	struct log log = {0};
	struct rs_streams_spec spec = {
		.n = 2, .parallel = 2, .task = nesting_task, .arg = &log};
	struct rs_err err = {0};

	(void)state;
	run_init(&run, &plan);
	assert_int_equal(streams_run(&run, &spec, &err), 0);
	assert_int_equal(log.n, 2);
	run_end(&run);
}

/* sync_task: a lazy journal write, then the sync asked for; the stream
 * works (waits of its own, up to 2 s) until the sync is done without
 * waiting for it: it was on a worker thread, not held back for the
 * wait; then the wait returns at once. */
struct sync_log {
	int asked, ok, done_before_wait;
	int64_t writes_before;
};

static int
sync_task(struct rs_run *run, int i, void *arg, struct rs_err *err)
{
	struct sync_log *log = arg;
	char name[16];
	int ticket, rc;

	snprintf(name, sizeof(name), "t%d", i);
	rc = journal_fact_set_lazy(run->journal, name, "1", err);
	if (rc != 0)
		return rc;
	ticket = streams_sync_journal_begin(run);
	log->asked += ticket > 0;
	for (int k = 0; k < 400 && run->journal_synced < ticket; k++)
		await_sleep(&run->loop, 5);
	log->done_before_wait += run->journal_synced >= ticket;
	rc = streams_sync_journal_wait(run, ticket, err);
	log->ok += rc == 0;
	return rc;
}

/* A run on a real journal in a fresh directory DIR (a mkdtemp
 * template), for the journal sync tests; journal_run_end removes it. */
static void
journal_run_init(char *dir, struct rs_run *run, struct rs_plan *plan)
{
	char path[64];
	struct rs_err err = {0};

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/s.journal", dir);
	run_init(run, plan);
	assert_int_equal(journal_open(path, "fp", "plan", &run->journal, &err),
	                 0);
}

static void
journal_run_end(const char *dir, struct rs_run *run)
{
	static const char *const files[] = {"s.journal", "s.journal-wal",
	                                    "s.journal-shm"};
	char file[96];

	journal_close(run->journal, "done");
	run_end(run);
	for (size_t i = 0; i < sizeof(files) / sizeof(*files); i++) {
		snprintf(file, sizeof(file), "%s/%s", dir, files[i]);
		unlink(file);
	}
	rmdir(dir);
}

static void
test_journal_sync_while_working(void **state)
{
	char dir[] = "/tmp/reshard-test-streams-XXXXXX";
	struct rs_run run;
	struct rs_plan plan;
	struct sync_log log = {0};
	struct rs_streams_spec spec = {
		.n = 6, .parallel = 3, .task = sync_task, .arg = &log};
	struct rs_err err = {0};
	int64_t writes;

	(void)state;
	journal_run_init(dir, &run, &plan);
	log.writes_before = journal_durable_writes(run.journal);
	assert_int_equal(streams_run(&run, &spec, &err), 0);
	assert_int_equal(log.asked, 6);
	assert_int_equal(log.done_before_wait, 6);
	assert_int_equal(log.ok, 6);
	/* Six asks, fewer syncs: those that asked while one ran shared the
	 * next; and none is left running once the group is over. */
	writes = journal_durable_writes(run.journal) - log.writes_before;
	assert_true(writes >= 1 && writes < 6);
	assert_int_equal(run.journal_syncing, 0);
	assert_int_equal(run.journal_synced, run.journal_wanted);
	/* Outside a stream the ticket is 0 and the wait syncs at once. */
	assert_int_equal(streams_sync_journal_begin(&run), 0);
	assert_int_equal(streams_sync_journal_wait(&run, 0, &err), 0);
	journal_run_end(dir, &run);
}

/* A failed sync (the WAL descriptor swapped for a pipe, which fdatasync
 * refuses): every stream that asked, the one whose ask started it and
 * those that asked while it ran, gets the journal's error, and the group
 * ends with it. */
static void
test_journal_sync_fails(void **state)
{
	char dir[] = "/tmp/reshard-test-streams-XXXXXX";
	struct rs_run run;
	struct rs_plan plan;
	struct sync_log log = {0};
	struct rs_streams_spec spec = {
		.n = 3, .parallel = 3, .task = sync_task, .arg = &log};
	struct rs_err err = {0};
	int pipe_fd[2], wal_fd;

	(void)state;
	journal_run_init(dir, &run, &plan);
	assert_int_equal(pipe(pipe_fd), 0);
	wal_fd = run.journal->wal_fd;
	run.journal->wal_fd = pipe_fd[0];
	assert_int_equal(streams_run(&run, &spec, &err), RS_EIO);
	assert_non_null(strstr(err.message, "could not make it durable"));
	assert_int_equal(log.asked, 3);
	assert_int_equal(log.ok, 0);
	assert_int_equal(run.journal_syncing, 0);
	assert_int_equal(run.journal_synced, run.journal_wanted);
	run.journal->wal_fd = wal_fd;
	close(pipe_fd[0]);
	close(pipe_fd[1]);
	journal_run_end(dir, &run);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_at_once_and_in_order),
		cmocka_unit_test(test_parallel_bound),
		cmocka_unit_test(test_first_failure_stops_the_rest),
		cmocka_unit_test(test_nested_runs_inline),
		cmocka_unit_test(test_journal_sync_while_working),
		cmocka_unit_test(test_journal_sync_fails),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
