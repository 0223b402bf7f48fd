/*
 * `reshard status`: the state of a plan's run in one word — never run,
 * running, stopped, interrupted (no process), failed, done, aborted,
 * aborting — told from the journal, its run lock and the journals abort
 * set aside; every step with its state, timings and rows; the published
 * epoch; and whether writes are fenced right now, asked of the shards
 * themselves (the journal can only say what was intended).  As text for
 * people or as one JSON object (tests/status.schema.json describes it:
 * shard lists are arrays, every time an ISO-8601 UTC string).
 *
 * What the journal says holds only for the plan it was started with and
 * for the run the shards carry: status checks both as `run` does before
 * it begins (the plan's fingerprint, journal_check_plan; the shard
 * markers, marker_guard), and when either would make `run` refuse it says
 * so, with run's advice, instead of advising `run`.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/text.h"
#include "engine/await.h"
#include "engine/engine.h"
#include "engine/marker.h"
#include "engine/plan_text.h"
#include "shardmap/stats.h"

/* The state of the run as a whole. */
enum status_state {
	STATUS_NEVER_RUN,   /* no step ever began, nothing set aside */
	STATUS_RUNNING,     /* a process holds the run lock */
	STATUS_STOPPED,     /* stopped on request, or by --until */
	STATUS_INTERRUPTED, /* its process ended without a word: killed */
	STATUS_FAILED,      /* a step (or the run before one) failed */
	STATUS_DONE,        /* every step done */
	STATUS_ABORTED,     /* abort undid it and set its journal aside */
	STATUS_ABORTING,    /* an abort began and did not finish */
};

/* The state words, as text and as JSON (status.schema.json's enum). */
static const char *const status_words[] = {
	[STATUS_NEVER_RUN] = "never run",
	[STATUS_RUNNING] = "running",
	[STATUS_STOPPED] = "stopped",
	[STATUS_INTERRUPTED] = "interrupted (no process)",
	[STATUS_FAILED] = "failed",
	[STATUS_DONE] = "done",
	[STATUS_ABORTED] = "aborted",
	[STATUS_ABORTING] = "aborting",
};
static const char *const status_json_words[] = {
	[STATUS_NEVER_RUN] = "never_run", [STATUS_RUNNING] = "running",
	[STATUS_STOPPED] = "stopped",     [STATUS_INTERRUPTED] = "interrupted",
	[STATUS_FAILED] = "failed",       [STATUS_DONE] = "done",
	[STATUS_ABORTED] = "aborted",     [STATUS_ABORTING] = "aborting",
};

static const char *const step_words[] = {"pending", "running", "done", "failed",
                                         "stopped"};

/* What a source shard (or its replica) answered about its fence. */
struct status_fence {
	int shard;    /* index in the plan */
	int fenced;   /* 1 fenced, -1 no answer */
	char kind[8]; /* the fence_rows fact of its primary: "1" rows that
	                 move, "0" whole tables, "" not recorded */
};

/* The marker, on one shard, of a run that has not ended and is not the
 * journal's run: `run` refuses while it is there (marker_guard). */
struct status_other {
	int shard;               /* index in the plan */
	struct rs_marker marker; /* as the shard keeps it */
};

/* Everything status found, before it is printed. */
struct status {
	const struct rs_plan *plan;
	int json;                        /* printed as JSON */
	struct rs_journal *journal;      /* NULL: there is none */
	int held;                        /* a process holds the run lock */
	char holder[256];                /* who, as journal_lock_holder says */
	struct rs_run_record holder_run; /* its runs row, when it has one */
	int holder_known;
	struct rs_run_record last; /* the last run (not an abort) */
	int has_last;
	struct rs_step_record *steps; /* in the strategy's order */
	int n_steps;
	int n_begun; /* steps that have a record */
	enum status_state state;
	int at;           /* the step the state speaks of, -1 for none */
	char aside[4200]; /* the newest journal abort set aside, "" none */
	int64_t aside_at; /* when, Unix ms */
	char abort[32], since[32], epoch[32], guarded[32]; /* facts, "" */
	struct rs_kept_row *kept;
	int n_kept;
	struct rs_difference *diffs; /* recorded by verify, every pass */
	int n_diffs;
	int64_t diffs_total;
	struct status_fence *fences; /* shards fenced or not answering */
	int n_fences;
	int fenced;      /* 1 some fenced, 0 none, -1 a shard did not answer (or
	                    the plan changed: its tables are not the run's) */
	char run_id[40]; /* the journal's run (fact run_id), "" */
	struct rs_err plan_change; /* RS_EPLAN when the journal was started
	                              with another plan: the refusal `run`
	                              gives (journal_check_plan); else 0 */
	/* marker_guard's refusal by the markers and the routing file (a
	 * journal behind the shards, or not the routed run's): RS_EUSAGE
	 * with `run`'s message; 0 when none (or a marker was unread). */
	struct rs_err markers_refusal;
	struct status_other *others; /* markers of other runs not ended */
	int n_others;
	int unread[RS_PLAN_MAX_SHARDS]; /* shards whose markers could not be
	                                   read */
	int n_unread;
};

/* MS as "2026-12-04 15:05:18" (UTC) into BUF, "-" for none. */
static void
status_time(int64_t ms, char *buf, size_t size)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (ms <= 0 || gmtime_r(&t, &tm) == NULL ||
	    strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm) == 0)
		snprintf(buf, size, "-");
}

/* MS as an ISO-8601 UTC JSON string, null for none (0).  NULL when out
 * of memory. */
static json_t *
status_json_time(int64_t ms)
{
	char iso[TEXT_ISO_TIME_SIZE];

	if (ms <= 0 || text_iso_time(ms, iso, sizeof(iso))[0] == '\0')
		return json_null();
	return json_string(iso);
}

/* Read the markers of every shard of the plan that exists (a shard in
 * DOWN could not be reached: its markers are unread), keeping in
 * ST->others those of runs that have not ended and are not the journal's
 * run, and in ST->markers_refusal what else marker_guard would refuse
 * (PUBLISHED: the journal has begun publish).  Returns 0 or RS_ENOMEM. */
static int
status_markers(struct status *st, struct rs_run *run, const int *down,
               int published, struct rs_err *err)
{
	struct marker_verdict v;

	marker_verdict_start(st->plan, st->run_id, published, &v);
	for (int s = 0; s < st->plan->n_shards; s++) {
		struct rs_err shard_err = {0};
		struct rs_marker *markers = NULL;
		int n = 0;

		if (down[s] ||
		    marker_read(run, s, &markers, &n, &shard_err) != 0) {
			st->unread[st->n_unread++] = s;
			free(markers);
			continue;
		}
		for (int i = 0; i < n; i++) {
			struct status_other *grown;

			marker_verdict_note(st->plan, &v, s, &markers[i]);
			if (marker_ended(markers[i].state) ||
			    strcmp(markers[i].run_id, st->run_id) == 0)
				continue;
			grown = realloc(st->others,
			                sizeof(*st->others) *
			                        (size_t)(st->n_others + 1));
			if (grown == NULL) {
				free(markers);
				return rs_err_set(err, RS_ENOMEM,
				                  "out of memory");
			}
			st->others = grown;
			st->others[st->n_others].shard = s;
			st->others[st->n_others++].marker = markers[i];
		}
		free(markers);
	}
	/* With a shard unread, nothing is proven either way (the unread
	 * shards are listed). */
	if (st->n_unread == 0)
		marker_verdict_refusal(st->plan, &v, &st->markers_refusal);
	return 0;
}

/* Ask the source shards (and replicas) whether their tables are fenced:
 * ST->fences gets every shard fenced (with the kind of fence the journal
 * recorded for its primary) or not answering (it could not be reached, or
 * a question failed), ST->fenced 1 when some are fenced, else -1 when one
 * did not answer, else 0; then read every shard's markers
 * (status_markers).  Returns 0 or RS_ENOMEM. */
static int
status_ask_shards(struct status *st, const struct rs_strategy_def *strategy,
                  struct rs_err *err)
{
	const struct rs_plan *plan = st->plan;
	struct rs_run run = {0};
	int shards[2 * RS_PLAN_MAX_SHARDS];  /* from's shards, then replicas */
	int primary[2 * RS_PLAN_MAX_SHARDS]; /* whose fence each one has */
	int down[RS_PLAN_MAX_SHARDS] = {0};  /* could not be reached */
	struct rs_err loop_err = {0};
	int n, n_from, unknown = 0, published = 0, rc;

	st->fenced = 0;
	st->fences =
		calloc((size_t)2 * RS_PLAN_MAX_SHARDS, sizeof(*st->fences));
	run.plan = plan;
	run.shards = calloc((size_t)plan->n_shards, sizeof(*run.shards));
	if (st->fences == NULL || run.shards == NULL) {
		free(run.shards);
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	}
	if (await_loop_init(&run.loop, NULL) != 0) {
		free(run.shards);
		st->fenced = -1;
		for (int s = 0; s < plan->n_shards; s++)
			st->unread[st->n_unread++] = s;
		return 0;
	}
	n = n_from = stats_map_shards(plan->from, shards, RS_PLAN_MAX_SHARDS);
	for (int i = 0, k = n; i < k; i++) {
		primary[i] = shards[i];
		if (strategy != NULL && strategy->promotes_replicas &&
		    plan->shards[shards[i]].replica >= 0) {
			primary[n] = shards[i];
			shards[n++] = plan->shards[shards[i]].replica;
		}
	}
	for (int i = 0; i < n; i++) {
		struct status_fence *f = &st->fences[st->n_fences];
		struct rs_err shard_err = {0};
		struct rs_backend *b;
		int any = 0, failed = 0;
		char physical[RS_PLAN_MAX_NAME + 1];
		char fact[RS_PLAN_MAX_NAME + 32];
		char fault[RS_PLAN_MAX_NAME + 32];

		if (engine_shard(&run, shards[i], &b, &shard_err) != 0) {
			/* A replica reshard has not made yet is not fenced. */
			if (i >= n_from)
				continue;
			down[shards[i]] = 1;
			unknown = 1;
			f->shard = shards[i];
			f->fenced = -1;
			st->n_fences++;
			continue;
		}
		/* A test's stand-in for a question that fails once
		 * connected (a lock wait cut short, a server gone). */
		snprintf(fault, sizeof(fault), "status-fenced-fails:%s",
		         plan->shards[shards[i]].name);
		failed = engine_fault_at(fault);
		for (int t = 0; t < plan->n_tables && !any && !failed; t++)
			for (int s = 0; s < engine_tables_per_shard(plan->from);
			     s++) {
				int on = 0;

				engine_physical(plan->from,
				                plan->tables[t].name, s,
				                physical, sizeof(physical));
				if (await_fenced(&run.loop, b, physical, &on,
				                 &shard_err) != 0)
					failed = 1; /* no answer is no "no" */
				else if (on)
					any = 1;
			}
		if (!any && failed) {
			unknown = 1;
			f->shard = shards[i];
			f->fenced = -1;
			st->n_fences++;
			continue;
		}
		if (!any)
			continue;
		/* A replica carries its primary's fence. */
		snprintf(fact, sizeof(fact), "fence_rows:%s",
		         plan->shards[primary[i]].name);
		if (st->journal == NULL ||
		    journal_fact_get(st->journal, fact, f->kind,
		                     sizeof(f->kind), NULL) != 1)
			f->kind[0] = '\0';
		f->shard = shards[i];
		f->fenced = 1;
		st->n_fences++;
		st->fenced = 1;
	}
	for (int i = 0; i < strategy->n_steps && i < st->n_steps; i++)
		published |= strategy->steps[i]->no_return &&
		             st->steps[i].state != RS_STEP_PENDING;
	rc = status_markers(st, &run, down, published, err);
	engine_shards_close(&run);
	if (await_loop_close(&run.loop, &loop_err) != 0)
		fprintf(stderr, "reshard: %s\n", loop_err.message);
	free(run.shards);
	/* No fence on this plan's tables says nothing of the tables of the
	 * plan the run was started with. */
	if (st->fenced == 0 && (unknown || st->plan_change.code != 0))
		st->fenced = -1;
	return rc;
}

/* Read the steps: the strategy's in its order (every step recorded when
 * this version cannot run the strategy).  Returns 0 or the journal's
 * error. */
static int
status_read_steps(struct status *st, const struct rs_strategy_def *strategy,
                  struct rs_err *err)
{
	int n = strategy != NULL ? strategy->n_steps : 0;

	if (strategy == NULL && st->journal != NULL)
		return journal_steps(st->journal, &st->steps, &st->n_steps,
		                     err);
	st->steps = calloc((size_t)n + 1, sizeof(*st->steps));
	if (st->steps == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	for (int i = 0; i < n; i++) {
		struct rs_step_record *rec = &st->steps[i];
		int rc;

		snprintf(rec->name, sizeof(rec->name), "%s",
		         strategy->steps[i]->name);
		rec->state = RS_STEP_PENDING;
		if (st->journal == NULL)
			continue;
		rc = journal_step_get(st->journal, strategy->steps[i]->name,
		                      rec, err);
		if (rc != 0)
			return rc;
	}
	st->n_steps = n;
	return 0;
}

/* Decide ST->state and ST->at from what was read. */
static void
status_decide(struct status *st)
{
	int i;

	st->at = -1;
	for (i = 0; i < st->n_steps; i++)
		st->n_begun += st->steps[i].state != RS_STEP_PENDING;
	/* The first step not done: where the run is, or stopped. */
	for (i = 0; i < st->n_steps && st->steps[i].state == RS_STEP_DONE; i++)
		;
	if (st->held) {
		st->state = STATUS_RUNNING;
		st->at = st->n_begun > 0 && i < st->n_steps ? i : -1;
		return;
	}
	if (st->n_begun == 0) {
		st->state = st->aside[0] ? STATUS_ABORTED : STATUS_NEVER_RUN;
		return;
	}
	if (strcmp(st->abort, "begun") == 0) {
		st->state = STATUS_ABORTING;
		return;
	}
	if (st->abort[0]) { /* done, but the journal was not set aside */
		st->state = STATUS_ABORTED;
		return;
	}
	if (i == st->n_steps) {
		st->state = STATUS_DONE;
		return;
	}
	st->at = i;
	switch (st->steps[i].state) {
	case RS_STEP_RUNNING:
		st->state = STATUS_INTERRUPTED;
		return;
	case RS_STEP_FAILED:
		st->state = STATUS_FAILED;
		return;
	case RS_STEP_STOPPED:
		st->state = STATUS_STOPPED;
		return;
	default:
		break;
	}
	/* Between two steps: the last run's outcome says why it ended
	 * there ("done" with steps left: --until). */
	if (st->has_last && (strcmp(st->last.outcome, "stopped") == 0 ||
	                     strcmp(st->last.outcome, "done") == 0))
		st->state = STATUS_STOPPED;
	else if (st->has_last && strcmp(st->last.outcome, "failed") == 0)
		st->state = STATUS_FAILED;
	else
		st->state = STATUS_INTERRUPTED;
}

/* Why `reshard run` will refuse, for the state line: the plan changed,
 * or a shard carries another run's marker (the lines below say more). */
static void
status_refusal_text(FILE *out, const struct status *st)
{
	const char *path = st->plan->path;
	const struct rs_marker *m;
	int ours;

	if (st->plan_change.code != 0) {
		fprintf(out,
		        "; but the plan changed since its journal was started, "
		        "so `reshard run %s` and `reshard abort %s` refuse "
		        "(plan: below)",
		        path, path);
		return;
	}
	if (st->n_others == 0) {
		fprintf(out,
		        "; but the shards or the routing file are ahead of "
		        "this journal, so `reshard run %s` refuses (markers: "
		        "below)",
		        path);
		return;
	}
	m = &st->others[0].marker;
	ours = strcmp(m->plan, st->plan->name) == 0;
	fprintf(out,
	        "; but the shards carry the marker of run %s%s%s%s, which has "
	        "not ended%s, so `reshard run %s` refuses (markers: below)",
	        m->run_id, ours ? "" : " of plan \"", ours ? "" : m->plan,
	        ours ? "" : "\"",
	        !ours                 ? ""
	        : st->journal == NULL ? " and whose journal is not here"
	                              : " and is not this journal's run",
	        path);
}

/* The state line of the text: the state, and what `reshard run` does
 * next, or why it will refuse. */
static void
status_state_text(FILE *out, const struct status *st)
{
	const char *path = st->plan->path;
	const char *step = st->at >= 0 ? st->steps[st->at].name : NULL;
	const char *before = st->at > 0 ? st->steps[st->at - 1].name : NULL;
	int in_step =
		step != NULL && st->steps[st->at].state != RS_STEP_PENDING;
	int refused = st->plan_change.code != 0 || st->n_others > 0 ||
	              st->markers_refusal.code != 0;
	char when[32];

	fprintf(out, "state:   %s", status_words[st->state]);
	switch (st->state) {
	case STATUS_NEVER_RUN:
		fprintf(out, ": %sno step has begun",
		        st->journal == NULL ? "there is no journal, " : "");
		if (!refused)
			fprintf(out,
			        "; `reshard run %s` starts it; `reshard "
			        "explain %s` shows what it would do, `reshard "
			        "dry-run %s` which keys move",
			        path, path, path);
		break;
	case STATUS_RUNNING:
		if (step != NULL)
			fprintf(out, ", step %s", step);
		break;
	case STATUS_STOPPED:
		if (in_step) {
			fprintf(out, " on request in step %s", step);
			if (!refused)
				fprintf(out, "; `reshard run %s` resumes it",
				        path);
		} else if (strcmp(st->last.outcome, "done") == 0 && before) {
			fprintf(out, " after step %s as asked (--until)",
			        before);
			if (!refused)
				fprintf(out,
				        "; `reshard run %s` goes on with step "
				        "%s",
				        path, step);
		} else {
			fprintf(out, " on request before step %s", step);
			if (!refused)
				fprintf(out,
				        "; `reshard run %s` goes on from there",
				        path);
		}
		break;
	case STATUS_INTERRUPTED:
		if (in_step) {
			fprintf(out,
			        ": step %s was running when its process ended "
			        "(killed or crashed)",
			        step);
			if (!refused)
				fprintf(out, "; `reshard run %s` resumes it",
				        path);
		} else {
			fprintf(out,
			        ": its process ended%s%s, before step %s began",
			        before ? " after step " : "",
			        before ? before : "", step);
			if (!refused)
				fprintf(out,
				        "; `reshard run %s` goes on from there",
				        path);
		}
		break;
	case STATUS_FAILED:
		if (in_step)
			fprintf(out, " in step %s (its error is below)", step);
		else
			fprintf(out,
			        " before step %s began (see the recent "
			        "events)",
			        step);
		if (!refused)
			fprintf(out, "; `reshard run %s` tries %sagain", path,
			        in_step ? "it " : "");
		break;
	case STATUS_DONE:
		fprintf(out, ": every step is done");
		break;
	case STATUS_ABORTED:
		if (st->aside[0]) {
			status_time(st->aside_at, when, sizeof(when));
			fprintf(out,
			        " at %s UTC; the journal of that run is kept "
			        "as %s",
			        when, st->aside);
			if (!refused)
				fprintf(out,
				        "; `reshard run %s` starts a new run",
				        path);
		} else {
			fprintf(out,
			        ", but its journal %s was not set aside; move "
			        "it away before `reshard run %s`",
			        st->plan->journal, path);
		}
		break;
	case STATUS_ABORTING:
		fprintf(out, ": an abort began and did not finish");
		if (!refused)
			fprintf(out,
			        "; `reshard abort %s` finishes it (`reshard "
			        "run` refuses until then)",
			        path);
		break;
	}
	if (refused)
		status_refusal_text(out, st);
	fputc('\n', out);
}

/* The rows purge kept, as a JSON array. */
static json_t *
status_kept_json(const struct rs_kept_row *kept, int n)
{
	json_t *array = json_array();
	int failed = array == NULL;

	for (int i = 0; i < n; i++)
		failed |= json_array_append_new(
				  array,
				  json_pack("{s:s, s:s, s:o, s:s, s:s}",
		                            "shard", kept[i].shard, "table",
		                            kept[i].table, "shard_key",
		                            kept[i].shard_key
		                                    ? json_string(
							      kept[i].shard_key)
		                                    : json_null(),
		                            "primary_key", kept[i].pk, "owner",
		                            kept[i].owner)) != 0;
	if (failed) {
		json_decref(array);
		return NULL;
	}
	return array;
}

/* The rows purge kept, as text (at most 20 named). */
static void
status_kept_text(FILE *out, const struct rs_plan *plan,
                 const struct rs_kept_row *kept, int n)
{
	if (n == 0)
		return;
	fprintf(out,
	        "kept:    %d rows on shards that no longer own them: their "
	        "owner has no copy\n"
	        "         and no record of deleting them (written after "
	        "unfence by a stale\n"
	        "         router?).  Copy each to its owner or delete it, "
	        "then `reshard run %s`:\n",
	        n, plan->path);
	for (int i = 0; i < n && i < 20; i++)
		fprintf(out,
		        "           %s.%s: shard key %s%s%s, primary key %s; "
		        "owner %s\n",
		        kept[i].shard, kept[i].table,
		        kept[i].shard_key ? "'" : "",
		        kept[i].shard_key ? kept[i].shard_key : "NULL",
		        kept[i].shard_key ? "'" : "", kept[i].pk,
		        kept[i].owner);
	if (n > 20)
		fprintf(out, "           … and %d more (--format json)\n",
		        n - 20);
}

/* The word of step REC: "interrupted" for one recorded running that no
 * process runs. */
static const char *
status_step_word(const struct status *st, const struct rs_step_record *rec,
                 int json)
{
	if (rec->state == RS_STEP_RUNNING && !st->held)
		return json ? "interrupted" : "interrupted (no process)";
	return step_words[rec->state];
}

/* REC's error column is a failure of this attempt (1), a stop's message
 * (2), or an earlier attempt's error (3); 0 when empty. */
static int
status_error_kind(const struct rs_step_record *rec)
{
	if (rec->error[0] == '\0')
		return 0;
	if (rec->state == RS_STEP_FAILED)
		return 1;
	if (rec->state == RS_STEP_STOPPED)
		return 2;
	return 3;
}

/* One step as a JSON object; NULL when out of memory. */
static json_t *
status_step_json(const struct status *st, const struct rs_step_record *rec)
{
	int kind = status_error_kind(rec);

	return json_pack(
		"{s:s, s:s, s:i, s:o, s:o, s:I, s:I, s:o, s:o, s:o}", "name",
		rec->name, "state", status_step_word(st, rec, 1), "attempts",
		rec->attempts, "started_at", status_json_time(rec->started_at),
		"finished_at", status_json_time(rec->finished_at), "rows",
		(json_int_t)rec->rows, "chunks", (json_int_t)rec->chunks_done,
		"error", kind == 1 ? json_string(rec->error) : json_null(),
		"stop_message",
		kind == 2 ? json_string(rec->error) : json_null(),
		"earlier_error",
		kind == 3 ? json_string(rec->error) : json_null());
}

/* One step as text lines. */
static void
status_step_text(FILE *out, const struct status *st,
                 const struct rs_step_record *rec)
{
	char started[32], finished[32], rows[32];
	int kind = status_error_kind(rec);

	fprintf(out, "  %-14s %-8s", rec->name, status_step_word(st, rec, 0));
	if (rec->state != RS_STEP_PENDING) {
		status_time(rec->started_at, started, sizeof(started));
		status_time(rec->finished_at, finished, sizeof(finished));
		fprintf(out, " %s -> %s, %d attempt%s, %s rows, %lld chunks",
		        started, finished, rec->attempts,
		        rec->attempts == 1 ? "" : "s",
		        text_thousands((uint64_t)rec->rows, rows, sizeof(rows)),
		        (long long)rec->chunks_done);
	}
	fputc('\n', out);
	if (rec->state != RS_STEP_PENDING && rec->state != RS_STEP_DONE) {
		struct rs_chunk_record chunk;

		if (journal_chunk_latest(st->journal, rec->name, &chunk,
		                         NULL) == 1) {
			fprintf(out,
			        "               last chunk: %s.%s #%lld, keys "
			        "up to %s, %s\n",
			        chunk.shard, chunk.table,
			        (long long)chunk.number,
			        chunk.upto_key ? chunk.upto_key : "-",
			        chunk.state == RS_CHUNK_DONE
			                ? "done"
			                : "started, not finished");
			journal_chunk_free(&chunk);
		}
	}
	if (kind == 1)
		fprintf(out, "               error: %s\n", rec->error);
	else if (kind == 2)
		fprintf(out, "               %s\n", rec->error);
	else if (kind == 3)
		/* A journal of an older release kept a stop's message. */
		fprintf(out, "               earlier attempt %s: %s\n",
		        strncmp(rec->error, "stopped", 7) == 0 ? "stopped"
		                                               : "failed",
		        rec->error);
}

/* A JSON array of the names of the shards of ST->fences whose answer is
 * FENCED; NULL when out of memory. */
static json_t *
status_fences_json(const struct status *st, int fenced)
{
	json_t *array = json_array();
	int failed = array == NULL;

	for (int i = 0; !failed && i < st->n_fences; i++) {
		const struct status_fence *f = &st->fences[i];

		if (f->fenced == fenced)
			failed |= json_array_append_new(
					  array,
					  json_string(st->plan->shards[f->shard]
			                                      .name)) != 0;
	}
	if (failed) {
		json_decref(array);
		return NULL;
	}
	return array;
}

/* A fact holding an integer as JSON: the integer, or null when unset. */
static json_t *
status_json_int(const char *value)
{
	return value[0] ? json_integer(strtoll(value, NULL, 10)) : json_null();
}

/* The run lock's holder as JSON: {pid, host, since}, each null when the
 * holder has not recorded itself yet; null when no process holds it. */
static json_t *
status_running_json(const struct status *st)
{
	const struct rs_run_record *r = &st->holder_run;

	if (!st->held)
		return json_null();
	if (!st->holder_known)
		return json_pack("{s:n, s:n, s:n}", "pid", "host", "since");
	return json_pack("{s:I, s:s, s:o}", "pid", (json_int_t)r->pid, "host",
	                 r->host, "since", status_json_time(r->started_at));
}

/* A marker's updated_at, "2026-12-04 15:05:18" (UTC), as an ISO-8601
 * JSON string; null when it is not in that form. */
static json_t *
status_json_marker_time(const char *at)
{
	int y, mo, d, h, mi, sec;
	char iso[TEXT_ISO_TIME_SIZE];

	if (sscanf(at, "%4d-%2d-%2d %2d:%2d:%2d", &y, &mo, &d, &h, &mi, &sec) !=
	    6)
		return json_null();
	snprintf(iso, sizeof(iso), "%04d-%02d-%02dT%02d:%02d:%02d.000Z", y, mo,
	         d, h, mi, sec);
	return json_string(iso);
}

/* ST->others as a JSON array, one object a shard and run; NULL when out
 * of memory. */
static json_t *
status_others_json(const struct status *st)
{
	json_t *array = json_array();
	int failed = array == NULL;

	for (int i = 0; !failed && i < st->n_others; i++) {
		const struct rs_marker *m = &st->others[i].marker;

		failed |=
			json_array_append_new(
				array,
				json_pack("{s:s, s:s, s:s, s:s, s:I, s:o}",
		                          "shard",
		                          st->plan->shards[st->others[i].shard]
		                                  .name,
		                          "run", m->run_id, "plan", m->plan,
		                          "state", m->state, "epoch",
		                          (json_int_t)m->epoch, "since",
		                          status_json_marker_time(
						  m->updated_at))) != 0;
	}
	if (failed) {
		json_decref(array);
		return NULL;
	}
	return array;
}

/* The names of the shards of INDEXES (N of them) as a JSON array; NULL
 * when out of memory. */
static json_t *
status_shards_json(const struct status *st, const int *indexes, int n)
{
	json_t *array = json_array();
	int failed = array == NULL;

	for (int i = 0; !failed && i < n; i++)
		failed |= json_array_append_new(
				  array,
				  json_string(
					  st->plan->shards[indexes[i]].name)) !=
		          0;
	if (failed) {
		json_decref(array);
		return NULL;
	}
	return array;
}

/* Print ST as one JSON object.  Returns 0, RS_ENOMEM or RS_EIO. */
static int
status_print_json(FILE *out, const struct status *st, struct rs_err *err)
{
	const struct rs_plan *plan = st->plan;
	json_t *root = json_object(), *steps = json_array();
	int failed = root == NULL || steps == NULL, rc = 0;

#define STATUS_SET(key, value)                                                 \
	(failed |= json_object_set_new(root, key, value) != 0)
	STATUS_SET("plan", json_string(plan->name));
	STATUS_SET("strategy", json_string(plan_strategy_name(plan->strategy)));
	STATUS_SET("journal", json_string(plan->journal));
	STATUS_SET("state", json_string(status_json_words[st->state]));
	STATUS_SET("step", st->at >= 0 ? json_string(st->steps[st->at].name)
	                               : json_null());
	STATUS_SET("running", status_running_json(st));
	STATUS_SET("fenced",
	           st->fenced < 0 ? json_null() : json_boolean(st->fenced));
	STATUS_SET("fenced_shards", status_fences_json(st, 1));
	STATUS_SET("unanswered_shards", status_fences_json(st, -1));
	STATUS_SET("fenced_since",
	           status_json_time(
			   st->since[0] ? strtoll(st->since, NULL, 10) * 1000
					: 0));
	STATUS_SET("epoch", status_json_int(st->epoch));
	STATUS_SET("guard_epoch", status_json_int(st->guarded));
	STATUS_SET("guard_kept",
	           json_boolean(st->guarded[0] && plan->options.keep_guard));
	STATUS_SET("abort",
	           st->abort[0] ? json_string(st->abort) : json_null());
	STATUS_SET("last_abort",
	           st->aside[0] ? json_pack("{s:o, s:s}", "at",
	                                    status_json_time(st->aside_at),
	                                    "journal", st->aside)
	                        : json_null());
	STATUS_SET("kept_rows", status_kept_json(st->kept, st->n_kept));
	STATUS_SET("differences_total", json_integer(st->diffs_total));
	STATUS_SET("differences",
	           engine_differences_json(st->diffs, st->n_diffs));
	STATUS_SET("plan_change", st->plan_change.code != 0
	                                  ? json_string(st->plan_change.message)
	                                  : json_null());
	STATUS_SET("other_runs", status_others_json(st));
	STATUS_SET("markers_refusal",
	           st->markers_refusal.code != 0
	                   ? json_string(st->markers_refusal.message)
	                   : json_null());
	STATUS_SET("unread_marker_shards",
	           status_shards_json(st, st->unread, st->n_unread));
	for (int i = 0; !failed && i < st->n_steps; i++)
		failed |= json_array_append_new(
				  steps, status_step_json(st, &st->steps[i])) !=
		          0;
	STATUS_SET("steps", steps);
#undef STATUS_SET
	if (failed || json_dumpf(root, out, JSON_PRESERVE_ORDER) != 0)
		rc = rs_err_set(err, failed ? RS_ENOMEM : RS_EIO,
		                failed ? "out of memory building the status"
		                       : "cannot write the status");
	else
		fputc('\n', out);
	json_decref(root);
	return rc;
}

/* ST->since, the time the journal says the fence went up, as
 * "2026-12-04 15:05:18 UTC" into WHEN ("?" when it says none). */
static void
status_since_text(const struct status *st, char *when, size_t size)
{
	time_t t = (time_t)strtoll(st->since, NULL, 10);
	struct tm tm;

	snprintf(when, size, "?");
	if (st->since[0] && gmtime_r(&t, &tm) != NULL)
		strftime(when, size, "%Y-%m-%d %H:%M:%S UTC", &tm);
}

/* The writes: line. */
static void
status_writes_text(FILE *out, const struct status *st)
{
	const char *sep = "";
	char when[32];

	status_since_text(st, when, sizeof(when));
	if (st->fenced < 0 && st->n_fences == 0 && st->plan_change.code != 0) {
		fprintf(out,
		        "writes:  unknown: no fence on the tables this plan "
		        "names, but the run was started with another plan "
		        "(plan: below)%s%s\n",
		        st->since[0] ? ", and its journal says its fence is up "
		                       "since "
		                     : "",
		        st->since[0] ? when : "");
		return;
	}
	if (st->fenced == 0) {
		fprintf(out, "writes:  open (no fence on any source table)\n");
		return;
	}
	if (st->fenced < 0 && st->n_fences == 0) {
		fprintf(out,
		        "writes:  unknown: the shards could not be asked\n");
		return;
	}
	if (st->fenced < 0)
		fprintf(out, "writes:  unknown: no answer from");
	else
		fprintf(out, "writes:  FENCED since %s on", when);
	for (int i = 0; i < st->n_fences; i++) {
		const struct status_fence *f = &st->fences[i];

		fprintf(out, "%s %s%s", sep, st->plan->shards[f->shard].name,
		        f->fenced < 0               ? "?"
		        : strcmp(f->kind, "1") == 0 ? " (rows that move)"
		        : strcmp(f->kind, "0") == 0 ? " (whole tables)"
		                                    : "");
		sep = ",";
	}
	fputc('\n', out);
}

/* Whether the markers of others I and J are one run's. */
static int
status_same_run(const struct status *st, int i, int j)
{
	return strcmp(st->others[i].marker.run_id,
	              st->others[j].marker.run_id) == 0 &&
	       strcmp(st->others[i].marker.plan, st->others[j].marker.plan) ==
	               0;
}

/* Print " in state S" for marker M, with its epoch past publish. */
static void
status_marker_state_text(FILE *out, const struct rs_marker *m)
{
	fprintf(out, " in state %s", m->state);
	if (marker_past_publish(m))
		fprintf(out, " at epoch %lld", (long long)m->epoch);
}

/* The shards of ST->others that carry the run of other I, each group of
 * them in one state followed by it: " db0, db1 in state fenced, db2 in
 * state copying".  Returns the marker of that run furthest on: the first
 * past publish (its routing may be live), else other I's. */
static const struct rs_marker *
status_run_shards_text(FILE *out, const struct status *st, int i)
{
	const struct rs_marker *last = NULL, *furthest = &st->others[i].marker;

	for (int j = i; j < st->n_others; j++) {
		const struct rs_marker *m = &st->others[j].marker;

		if (!status_same_run(st, i, j))
			continue;
		if (last != NULL && (strcmp(last->state, m->state) != 0 ||
		                     last->epoch != m->epoch)) {
			status_marker_state_text(out, last);
			fputc(',', out);
		} else if (last != NULL) {
			fputc(',', out);
		}
		fprintf(out, " %s", st->plan->shards[st->others[j].shard].name);
		if (marker_past_publish(m) && !marker_past_publish(furthest))
			furthest = m;
		last = m;
	}
	if (last != NULL) /* other I itself is of its run: always */
		status_marker_state_text(out, last);
	return furthest;
}

/* The markers: lines: one a run that has not ended and is not the
 * journal's, with the shards that carry it, what it means and what to do
 * (marker_guard's words); then the shards whose markers status could not
 * read. */
static void
status_others_text(FILE *out, const struct status *st)
{
	const struct rs_plan *plan = st->plan;

	for (int i = 0; i < st->n_others; i++) {
		const struct rs_marker *m = &st->others[i].marker, *furthest;
		int seen = 0, ours = strcmp(m->plan, plan->name) == 0;

		for (int j = 0; j < i && !seen; j++)
			seen = status_same_run(st, i, j);
		if (seen)
			continue;
		fprintf(out, "markers: run %s of %s\"%s\"%s on", m->run_id,
		        ours ? "plan " : "another plan, ", m->plan,
		        ours ? "" : ",");
		furthest = status_run_shards_text(out, st, i);
		fprintf(out, " (since %s UTC)", m->updated_at);
		if (!ours)
			fprintf(out, ": that run has not ended");
		else if (st->journal == NULL)
			fprintf(out,
			        ", and there is no journal %s: its journal "
			        "was lost, moved or replaced",
			        plan->journal);
		else
			fprintf(out,
			        ", but journal %s is not that run's: its "
			        "journal was lost, moved or replaced",
			        plan->journal);
		fprintf(out, ", so `reshard run %s` refuses%s.  %s\n",
		        plan->path,
		        ours ? " (starting over could copy stale rows over "
		               "live ones)"
		             : "",
		        marker_advice(plan, furthest));
	}
	if (st->n_unread > 0) {
		fprintf(out, "markers: could not be read from");
		for (int i = 0; i < st->n_unread; i++)
			fprintf(out, "%s %s", i > 0 ? "," : "",
			        plan->shards[st->unread[i]].name);
		fputc('\n', out);
	}
}

/* Print ST as text. */
static void
status_print_text(FILE *out, const struct status *st)
{
	const struct rs_plan *plan = st->plan;

	fprintf(out, "plan %s (%s), journal %s\n", plan->name,
	        plan_strategy_name(plan->strategy), plan->journal);
	status_state_text(out, st);
	fprintf(out, "run:     %s\n",
	        st->held ? st->holder : "no process is running it now");
	status_writes_text(out, st);
	if (st->plan_change.code != 0)
		fprintf(out,
		        "plan:    `reshard run` and `reshard abort` refuse: "
		        "%s\n",
		        st->plan_change.message);
	status_others_text(out, st);
	if (st->markers_refusal.code != 0)
		fprintf(out, "markers: `reshard run` refuses: %s\n",
		        st->markers_refusal.message);
	fprintf(out, "routing: %s%s\n",
	        st->epoch[0] ? "epoch " : "not published yet",
	        st->epoch[0] ? st->epoch : "");
	if (st->guarded[0] && !plan->options.keep_guard)
		fprintf(out,
		        "guard:   the old owners refuse writes to rows they "
		        "gave away (routing epoch %s) until purge is done\n",
		        st->guarded);
	else if (st->guarded[0])
		fprintf(out,
		        "guard:   the old owners refuse writes to rows they "
		        "gave away (routing epoch %s), also after purge "
		        "(options.keep_guard); to take it off, on each old "
		        "owner's tables: PostgreSQL `DROP TRIGGER "
		        "reshard_guard "
		        "ON t`, MariaDB `DROP TRIGGER reshard_guard_INSERT_t` "
		        "(and _UPDATE_t, _DELETE_t)\n",
		        st->guarded);
	status_kept_text(out, plan, st->kept, st->n_kept);
	if (st->diffs_total > 0) {
		fprintf(out,
		        "differ:  %lld rows that move differ from their copy, "
		        "as verify last found them (purge waits until the "
		        "run's verify finds none):\n",
		        (long long)st->diffs_total);
		engine_differences_text(out, st->diffs, st->n_diffs,
		                        st->diffs_total, 1);
	}
	fprintf(out, "steps:\n");
	for (int i = 0; i < st->n_steps; i++)
		status_step_text(out, st, &st->steps[i]);
	if (st->journal != NULL) {
		char *events = journal_events_tail(st->journal, 5);

		if (events != NULL && events[0] != '\0')
			fprintf(out, "recent events:\n%s", events);
		free(events);
	}
}

/* Whether the journal was started with ST's plan: ST->plan_change gets
 * the refusal `run` gives when it was not.  Returns 0, or the journal's
 * error when it cannot say (RS_EIO, RS_ENOMEM). */
static int
status_check_plan(struct status *st, struct rs_err *err)
{
	char *text = engine_plan_text(st->plan);
	char hex[65];
	int rc;

	if (text == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	engine_plan_fingerprint(text, hex);
	rc = journal_check_plan(st->journal, hex, text, &st->plan_change);
	free(text);
	if (rc == RS_EPLAN)
		return 0;
	if (rc != 0 && err != NULL)
		*err = st->plan_change;
	memset(&st->plan_change, 0, sizeof(st->plan_change));
	return rc;
}

/* Read the journal's part of ST: facts, kept rows, the last runs.
 * Returns 0 or the journal's error. */
static int
status_read_journal(struct status *st, struct rs_err *err)
{
	struct rs_journal *j = st->journal;
	int rc;

	/* "Not fenced" must not stand for "cannot read the journal". */
	const struct {
		const char *name;
		char *value;
		size_t size;
	} facts[] = {
		{"abort", st->abort, sizeof(st->abort)},
		{"fenced_since", st->since, sizeof(st->since)},
		{"epoch", st->epoch, sizeof(st->epoch)},
		{"guarded", st->guarded, sizeof(st->guarded)},
		{"run_id", st->run_id, sizeof(st->run_id)},
	};

	for (size_t i = 0; i < sizeof(facts) / sizeof(facts[0]); i++) {
		rc = journal_fact_get(j, facts[i].name, facts[i].value,
		                      facts[i].size, err);
		if (rc < 0)
			return rc;
	}
	rc = journal_kept_list(j, &st->kept, &st->n_kept, err);
	if (rc == 0)
		rc = engine_differences_read(j, NULL, !st->json, &st->diffs,
		                             &st->n_diffs, &st->diffs_total,
		                             err);
	if (rc == 0)
		rc = journal_last_run(j, 1, &st->last, err);
	if (rc >= 0)
		st->has_last = rc == 1;
	if (rc >= 0 && st->held) {
		/* The holder's row is the last one, once it has written it
		 * (it has not ended). */
		rc = journal_last_run(j, 0, &st->holder_run, err);
		st->holder_known = rc == 1 && st->holder_run.ended_at == 0;
	}
	return rc < 0 ? rc : 0;
}

int
engine_status(const struct rs_plan *plan,
              const struct rs_strategy_def *strategy, int json, FILE *out,
              struct rs_err *err)
{
	struct status st = {.plan = plan, .json = json};
	struct stat sb;
	int rc;

	/* Before the journal is open here (see journal_lock_holder). */
	st.held = journal_lock_holder(plan->journal, st.holder,
	                              sizeof(st.holder));
	engine_aside_latest(plan->journal, st.aside, sizeof(st.aside),
	                    &st.aside_at);
	rc = journal_open_readonly(plan->journal, &st.journal, err);
	/* No journal: never run (or aborted); the journal a starting
	 * process has just made is empty until it writes it. */
	if (rc != 0 &&
	    (st.held || (stat(plan->journal, &sb) != 0 && errno == ENOENT))) {
		rc = 0;
		if (err != NULL)
			memset(err, 0, sizeof(*err));
	}
	if (rc != 0)
		return rc;
	if (st.journal != NULL)
		rc = status_read_journal(&st, err);
	if (rc == 0 && st.journal != NULL)
		rc = status_check_plan(&st, err);
	if (rc == 0)
		rc = status_read_steps(&st, strategy, err);
	if (rc == 0)
		rc = status_ask_shards(&st, strategy, err);
	if (rc == 0) {
		status_decide(&st);
		if (json)
			rc = status_print_json(out, &st, err);
		else
			status_print_text(out, &st);
	}
	free(st.steps);
	free(st.fences);
	free(st.others);
	journal_kept_free(st.kept, st.n_kept);
	journal_differences_free(st.diffs, st.n_diffs);
	journal_close(st.journal, NULL);
	return rc;
}
