/*
 * Aborting a run before publish: each step that began is undone by its
 * own undo function, in reverse order (catch-up's removes the replicas the
 * run made, fence's lifts the fence), and the journal is set aside so that
 * the next run starts from the beginning.  Once a step marked no_return
 * (publish) has begun, the old routing may be gone and abort refuses.
 *
 * Abort is journaled: the fact "abort" records its intent before its first
 * side effect and its end after its last, so that `run` refuses a run
 * whose abort has begun and `abort` run again finishes it from any crash
 * point (every undo is idempotent).
 *
 * When the journal is missing or cannot be read, abort goes by the shard
 * markers instead: a run of this plan that is fenced and not published is
 * undone by the same functions (they act only where the markers say the
 * run was), and the unreadable journal is set aside.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine/await.h"
#include "engine/engine.h"
#include "engine/marker.h"
#include "engine/plan_text.h"

/* Refuse when a no_return step has begun: the new routing may be live.
 * The shards are asked too: a journal that lost its latest writes could
 * say publish is pending while the markers say it happened. */
static int
abort_check_journal(struct rs_run *run, struct rs_err *err)
{
	int past, rc = engine_past_no_return(run, &past, err);

	if (rc == 0 && past)
		return rs_err_set(
			err, RS_EUSAGE,
			"run %s has passed publish, or begun it: the new "
			"routing "
			"may be live and the old one is gone, so abort cannot "
			"undo it; `reshard run %s` finishes the run",
			run->plan->name, run->plan->path);
	for (int s = 0; rc == 0 && s < run->plan->n_shards; s++) {
		struct rs_marker *markers;
		int n;

		rc = marker_read(run, s, &markers, &n, err);
		/* An earlier run of the plan that ended (done) is no
		 * reason: this one began after it. */
		for (int i = 0; rc == 0 && i < n; i++)
			if (strcmp(markers[i].plan, run->plan->name) == 0 &&
			    marker_past_publish(&markers[i]) &&
			    (strcmp(markers[i].run_id, run->run_id) == 0 ||
			     !marker_ended(markers[i].state)))
				rc = rs_err_set(
					err, RS_EUSAGE,
					"shard %s says run %s of plan %s is %s "
					"at epoch %lld: the new routing may be "
					"live, so abort cannot undo it, "
					"whatever "
					"journal %s says; `reshard run %s` "
					"finishes the run",
					run->plan->shards[s].name,
					markers[i].run_id, markers[i].plan,
					markers[i].state,
					(long long)markers[i].epoch,
					run->plan->journal, run->plan->path);
		free(markers);
	}
	return rc;
}

/* Without a journal: find the run of this plan the markers speak of, and
 * refuse when it was published.  Returns 1 when there is a run to undo
 * (RUN->run_id set), 0 when none, or an error. */
static int
abort_find_marked_run(struct rs_run *run, struct rs_err *err)
{
	const struct rs_plan *plan = run->plan;
	int found = 0;

	for (int s = 0; s < plan->n_shards; s++) {
		struct rs_marker *markers;
		int n, rc = marker_read(run, s, &markers, &n, err);

		for (int i = 0; rc == 0 && i < n; i++) {
			const struct rs_marker *m = &markers[i];

			if (strcmp(m->plan, plan->name) != 0 ||
			    marker_ended(m->state))
				continue;
			if (marker_past_publish(m))
				rc = rs_err_set(
					err, RS_EUSAGE,
					"shard %s says run %s of plan %s is %s "
					"at epoch %lld: the new routing may be "
					"live, so abort cannot undo it; "
					"restore "
					"the run's journal and `reshard run "
					"%s` "
					"finishes the run",
					plan->shards[s].name, m->run_id,
					m->plan, m->state, (long long)m->epoch,
					plan->path);
			else if (found && strcmp(run->run_id, m->run_id) != 0)
				rc = rs_err_set(err, RS_EUSAGE,
				                "the shards carry markers of "
				                "two runs of "
				                "plan %s (%s and %s); abort "
				                "each by hand",
				                plan->name, run->run_id,
				                m->run_id);
			else {
				snprintf(run->run_id, sizeof(run->run_id), "%s",
				         m->run_id);
				found = 1;
			}
		}
		free(markers);
		if (rc != 0)
			return rc;
	}
	return found;
}

/* Whether STEP, pending in the journal (REC), may still have its effect:
 * a step that gives the cutover back (the fence) is made pending before it
 * lifts the fence, so that a crash in between puts the fence up again;
 * until the fence is off, the journal keeps the fact fenced_since.  A
 * give-back that failed (a lock held the fence's triggers) or was cut
 * short leaves both.  One that lifted the fence leaves the markers saying
 * "fenced" (the run goes on): once such a step began, its undo runs, to
 * mark the shards aborted.  Returns 1, 0 or an error. */
static int
abort_pending_in_effect(struct rs_run *run, const struct rs_step_def *step,
                        const struct rs_step_record *rec, struct rs_err *err)
{
	char since[32];
	int rc;

	if (step->give_back == NULL)
		return 0;
	if (rec->attempts > 0)
		return 1;
	rc = journal_fact_get(run->journal, "fenced_since", since,
	                      sizeof(since), err);
	return rc < 0 ? rc : rc == 1;
}

/* Undo, in reverse order, every step that began, or that may still have
 * its effect (abort_pending_in_effect); every step with an undo when ALL,
 * for an abort by the markers. */
static int
abort_undo(struct rs_run *run, int all, struct rs_err *err)
{
	const struct rs_strategy_def *strategy = run->strategy;

	for (int i = strategy->n_steps - 1; i >= 0; i--) {
		const struct rs_step_def *step = strategy->steps[i];
		struct rs_step_record rec = {.state = RS_STEP_RUNNING};
		char point[64];
		int rc;

		if (step->undo == NULL)
			continue;
		if (!all) {
			rc = journal_step_get(run->journal, step->name, &rec,
			                      err);
			if (rc != 0)
				return rc;
		}
		if (rec.state == RS_STEP_PENDING) {
			rc = abort_pending_in_effect(run, step, &rec, err);
			if (rc < 0)
				return rc;
			if (rc == 0)
				continue;
		}
		run->step = step;
		rc = step->undo(run, err);
		if (rc != 0)
			return rc;
		if (!all)
			journal_event(run->journal, "info", "abort: undid %s",
			              step->name);
		snprintf(point, sizeof(point), "after-undo:%s", step->name);
		engine_fault(point);
	}
	return 0;
}

/* Move PATH (and its -wal, -shm) aside as PATH.SUFFIX-TIME, TIME the UTC
 * time as 20261204T151500Z (with -2, -3 … when that name is taken: two
 * aborts in one second); say so.  A journal that cannot be moved stays
 * where it is, and nothing is said. */
static void
abort_set_aside(const char *path, const char *suffix, const char *why)
{
	char aside[4200], side[4200], stamp[32] = "";
	time_t now = time(NULL);
	struct tm tm;
	struct stat st;

	if (gmtime_r(&now, &tm) == NULL ||
	    strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm) == 0)
		snprintf(stamp, sizeof(stamp), "%lld", (long long)now);
	snprintf(aside, sizeof(aside), "%s.%s-%s", path, suffix, stamp);
	for (int n = 2; stat(aside, &st) == 0 && n < 1000; n++)
		snprintf(aside, sizeof(aside), "%s.%s-%s-%d", path, suffix,
		         stamp, n);
	if (rename(path, aside) == 0)
		fprintf(stderr, "%s; the journal is kept as %s\n", why, aside);
	for (int i = 0; i < 2; i++) {
		char moved[4300];

		snprintf(side, sizeof(side), "%s-%s", path, i ? "shm" : "wal");
		snprintf(moved, sizeof(moved), "%s-%s", aside,
		         i ? "shm" : "wal");
		if (rename(side, moved) != 0 && errno != ENOENT)
			unlink(side);
	}
}

/* When the journal set aside under the name suffix TAIL (what follows
 * "aborted-" or "damaged-") was set aside, in Unix ms: TAIL is
 * 20261204T151500Z, maybe followed by -N, or (older releases) the epoch in
 * seconds.  Returns -1 for any other name (a -wal or -shm side file). */
static int64_t
abort_aside_time(const char *tail)
{
	struct tm tm = {0};
	int used = 0;
	const char *rest;

	if (sscanf(tail, "%4d%2d%2dT%2d%2d%2dZ%n", &tm.tm_year, &tm.tm_mon,
	           &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec,
	           &used) == 6 &&
	    used == 16) {
		rest = tail + used;
		if (rest[0] == '-' && rest[1] != '\0' &&
		    strspn(rest + 1, "0123456789") == strlen(rest + 1))
			rest = "";
		if (rest[0] != '\0')
			return -1;
		tm.tm_year -= 1900;
		tm.tm_mon -= 1;
		return (int64_t)timegm(&tm) * 1000;
	}
	if (tail[0] != '\0' && strlen(tail) < 19 &&
	    strspn(tail, "0123456789") == strlen(tail))
		return (int64_t)strtoll(tail, NULL, 10) * 1000;
	return -1;
}

/* Reading the folder is best effort: status must not fail for it. */
int
engine_aside_latest(const char *path, char *aside, size_t size, int64_t *at_ms)
{
	char folder[4096], best[256] = "";
	const char *base = strrchr(path, '/');
	size_t base_len;
	struct dirent *entry;
	DIR *dir;
	int found = 0;

	*at_ms = 0;
	if (size > 0)
		aside[0] = '\0';
	if (base == NULL) {
		snprintf(folder, sizeof(folder), ".");
		base = path;
	} else {
		snprintf(folder, sizeof(folder), "%.*s",
		         (int)(base == path ? 1 : base - path), path);
		base++;
	}
	base_len = strlen(base);
	dir = opendir(folder);
	if (dir == NULL)
		return 0;
	while ((entry = readdir(dir)) != NULL) {
		const char *name = entry->d_name, *tail;
		int64_t at;

		if (strncmp(name, base, base_len) != 0)
			continue;
		tail = name + base_len;
		if (strncmp(tail, ".aborted-", 9) == 0 ||
		    strncmp(tail, ".damaged-", 9) == 0)
			tail += 9;
		else
			continue;
		at = abort_aside_time(tail);
		/* The newest; in one second, the last name (…Z-2 after …Z). */
		if (at < 0 || (found && at < *at_ms) ||
		    (found && at == *at_ms && strcmp(name, best) < 0))
			continue;
		*at_ms = at;
		snprintf(best, sizeof(best), "%s", name);
		if (base == path)
			snprintf(aside, size, "%s", name);
		else
			snprintf(aside, size, "%s/%s",
			         strcmp(folder, "/") == 0 ? "" : folder, name);
		found = 1;
	}
	closedir(dir);
	return found;
}

/* Whether no step ever began under JOURNAL. */
static int
abort_journal_is_empty(struct rs_journal *journal)
{
	struct rs_step_record *recs;
	int n, rc = journal_steps(journal, &recs, &n, NULL);

	free(recs);
	return rc == 0 && n == 0;
}

/* Loop, signals and shards for an abort. */
static int
abort_start(struct rs_run *run, const struct rs_plan *plan,
            const struct rs_strategy_def *strategy, struct rs_err *err)
{
	int rc;

	run->plan = plan;
	run->strategy = strategy;
	snprintf(run->fence_message, sizeof(run->fence_message),
	         "writes paused by reshard: run %s, step fence", plan->name);
	run->shards = calloc((size_t)plan->n_shards, sizeof(*run->shards));
	if (run->shards == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	rc = await_loop_init(&run->loop, err);
	if (rc != 0)
		free(run->shards);
	return rc;
}

static void
abort_finish(struct rs_run *run)
{
	struct rs_err err = {0};

	engine_shards_close(run);
	if (await_loop_close(&run->loop, &err) != 0)
		fprintf(stderr, "reshard: %s\n", err.message);
	engine_tables_release(run);
	free(run->shards);
}

/* Abort by the shard markers: the journal at PLAN->journal is missing
 * (EXISTS 0) or cannot be read (its error in WHY). */
static int
abort_by_markers(const struct rs_plan *plan,
                 const struct rs_strategy_def *strategy, int exists,
                 const char *why, struct rs_err *err)
{
	struct rs_run run = {0};
	int lock_fd, rc;

	rc = journal_lock_file(plan->journal, &lock_fd, err);
	if (rc != 0)
		return rc;
	rc = abort_start(&run, plan, strategy, err);
	if (rc == 0)
		rc = abort_find_marked_run(&run, err);
	if (rc == 0)
		rc = rs_err_set(err, RS_EUSAGE,
		                "%s, and no shard carries the marker of a run "
		                "of plan %s in progress: there is nothing to "
		                "abort",
		                exists ? why : "no journal", plan->name);
	else if (rc == 1) {
		fprintf(stderr,
		        "%s; aborting run %s of plan %s by the shard markers\n",
		        exists ? why : "no journal", run.run_id, plan->name);
		marker_replaced_by_routing(&run);
		rc = abort_undo(&run, 1, err);
	}
	if (run.shards != NULL)
		abort_finish(&run);
	if (rc == 0 && exists)
		abort_set_aside(plan->journal, "damaged",
		                "the run is aborted by its shard markers");
	else if (rc == 0 || !exists) {
		if (!exists) /* the lock's file, or a journal of no work */
			engine_journal_remove(plan->journal);
		if (rc == 0)
			fprintf(stderr, "run %s aborted\n", run.run_id);
	}
	close(lock_fd);
	return rc;
}

int
engine_abort(const struct rs_plan *plan, const struct rs_strategy_def *strategy,
             struct rs_err *err)
{
	struct rs_run run = {0};
	struct stat st;
	int rc;

	if (stat(plan->journal, &st) != 0 || st.st_size == 0)
		return abort_by_markers(plan, strategy, 0, NULL, err);
	/* Take the lock (and check the plan) like a run would. */
	rc = engine_open_journal(plan, "abort", &run.journal, err);
	if (rc == RS_EIO) {
		char why[1100];

		snprintf(why, sizeof(why), "%s", err->message);
		return abort_by_markers(plan, strategy, 1, why, err);
	}
	if (rc != 0)
		return rc;
	if (abort_journal_is_empty(run.journal)) {
		/* No step ever began under this journal: the run to abort,
		 * if any, is the one the shard markers speak of. */
		journal_close(run.journal, "abort failed");
		return abort_by_markers(plan, strategy, 0, NULL, err);
	}
	rc = abort_start(&run, plan, strategy, err);
	if (rc == 0)
		rc = marker_run_id(&run, NULL, err);
	if (rc == 0)
		rc = abort_check_journal(&run, err);
	/* The intent, before the first side effect. */
	if (rc == 0)
		rc = journal_fact_set(run.journal, "abort", "begun", err);
	if (rc == 0) {
		journal_event(run.journal, "warn", "abort begun");
		engine_fault("after-abort-begun");
		rc = abort_undo(&run, 0, err);
	}
	if (rc == 0)
		rc = journal_fact_set(run.journal, "abort", "done", err);
	if (run.shards != NULL)
		abort_finish(&run);
	if (rc == 0)
		journal_event(run.journal, "info", "run aborted");
	journal_close(run.journal, rc == 0 ? "aborted" : "abort failed");
	if (rc == 0) {
		char why[256];

		snprintf(why, sizeof(why), "run %s aborted", plan->name);
		abort_set_aside(plan->journal, "aborted", why);
	}
	return rc;
}
