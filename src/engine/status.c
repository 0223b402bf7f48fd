/*
 * `reshard status`: the state of a plan's run from its journal — every
 * step with its state, timings and rows, whether a process is running it
 * now, the published epoch — and whether writes are fenced right now,
 * asked of the shards themselves (the journal can only say what was
 * intended).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/text.h"
#include "engine/await.h"
#include "engine/engine.h"
#include "shardmap/stats.h"

static const char *const state_names[] = {"pending", "running", "done",
                                          "failed", "stopped"};

static void
status_time(int64_t ms, char *buf, size_t size)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (ms <= 0) {
		snprintf(buf, size, "-");
		return;
	}
	gmtime_r(&t, &tm);
	strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm);
}

/* Ask the source shards (and replicas) whether their tables are fenced:
 * 1 yes (all or some, named in WHICH, and in KINDS with the kind of fence
 * the journal recorded for them: "db0 (rows that move)"), 0 no, -1
 * unknown (a shard did not answer; WHICH says which).  KINDS has SIZE
 * bytes too. */
static int
status_fenced(const struct rs_plan *plan,
              const struct rs_strategy_def *strategy,
              struct rs_journal *journal, char *which, char *kinds, size_t size)
{
	struct rs_run run = {0};
	int shards[2 * RS_PLAN_MAX_SHARDS];  /* from's shards, then replicas */
	int primary[2 * RS_PLAN_MAX_SHARDS]; /* whose fence each one has */
	struct rs_err loop_err = {0};
	int n, n_from, fenced = 0, unknown = 0;
	size_t at = 0, kat = 0;

	which[0] = kinds[0] = '\0';
	run.plan = plan;
	run.shards = calloc((size_t)plan->n_shards, sizeof(*run.shards));
	if (run.shards == NULL)
		return -1;
	if (await_loop_init(&run.loop, NULL) != 0) {
		free(run.shards);
		return -1;
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
		struct rs_err err = {0};
		struct rs_backend *b;
		int any = 0;
		char physical[RS_PLAN_MAX_NAME + 1];

		if (engine_shard(&run, shards[i], &b, &err) != 0) {
			/* A replica reshard has not made yet is not fenced. */
			if (i >= n_from)
				continue;
			unknown = 1;
			at += (size_t)snprintf(which + at, size - at, "%s%s?",
			                       at ? ", " : "",
			                       plan->shards[shards[i]].name);
			snprintf(kinds, size, "%s", which);
			kat = strlen(kinds);
			continue;
		}
		for (int t = 0; t < plan->n_tables && !any; t++)
			for (int s = 0; s < engine_tables_per_shard(plan->from);
			     s++) {
				int on = 0;

				engine_physical(plan->from,
				                plan->tables[t].name, s,
				                physical, sizeof(physical));
				if (await_fenced(&run.loop, b, physical, &on,
				                 &err) == 0 &&
				    on)
					any = 1;
			}
		if (any && at < size) {
			/* A replica carries its primary's fence. */
			int owner = primary[i];
			char fact[RS_PLAN_MAX_NAME + 32], kind[8] = "";

			snprintf(fact, sizeof(fact), "fence_rows:%s",
			         plan->shards[owner].name);
			if (journal_fact_get(journal, fact, kind,
			                     sizeof(kind)) != 1)
				kind[0] = '\0';
			fenced = 1;
			at += (size_t)snprintf(which + at, size - at, "%s%s",
			                       at ? ", " : "",
			                       plan->shards[shards[i]].name);
			if (kat < size)
				kat += (size_t)snprintf(
					kinds + kat, size - kat, "%s%s%s",
					kat ? ", " : "",
					plan->shards[shards[i]].name,
					strcmp(kind, "1") == 0
						? " (rows that move)"
					: strcmp(kind, "0") == 0
						? " (whole tables)"
						: "");
		}
	}
	for (int i = 0; i < plan->n_shards; i++)
		await_close(&run.loop, run.shards[i]);
	if (await_loop_close(&run.loop, &loop_err) != 0)
		fprintf(stderr, "reshard: %s\n", loop_err.message);
	free(run.shards);
	return fenced ? 1 : unknown ? -1 : 0;
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

int
engine_status(const struct rs_plan *plan,
              const struct rs_strategy_def *strategy, int json, FILE *out,
              struct rs_err *err)
{
	struct rs_journal *journal = NULL;
	struct rs_step_record rec;
	char holder[256] = "", since[32] = "", epoch[32] = "", which[512];
	char kinds[512], guarded[32];
	char started[32], finished[32], rows[32], aborting[32];
	struct rs_kept_row *kept = NULL;
	int running, fenced, rc, n_kept = 0;
	json_t *root = NULL, *steps = NULL;
	int failed = 0;

	/* Before the journal is open here (see journal_lock_holder). */
	running = journal_lock_holder(plan->journal, holder, sizeof(holder));
	rc = journal_open_readonly(plan->journal, &journal, err);
	if (rc != 0)
		return rc;
	if (journal_fact_get(journal, "abort", aborting, sizeof(aborting)) != 1)
		aborting[0] = '\0';
	rc = journal_kept_list(journal, &kept, &n_kept, err);
	if (rc != 0) {
		journal_close(journal, NULL);
		return rc;
	}
	if (journal_fact_get(journal, "fenced_since", since, sizeof(since)) !=
	    1)
		since[0] = '\0';
	if (journal_fact_get(journal, "epoch", epoch, sizeof(epoch)) != 1)
		epoch[0] = '\0';
	if (journal_fact_get(journal, "guarded", guarded, sizeof(guarded)) != 1)
		guarded[0] = '\0';
	fenced = status_fenced(plan, strategy, journal, which, kinds,
	                       sizeof(which));

	if (json) {
		root = json_object();
		steps = json_array();
		failed |= json_object_set_new(root, "plan",
		                              json_string(plan->name)) != 0;
		failed |= json_object_set_new(root, "strategy",
		                              json_string(plan_strategy_name(
						      plan->strategy))) != 0;
		failed |= json_object_set_new(root, "journal",
		                              json_string(plan->journal)) != 0;
		failed |= json_object_set_new(root, "running",
		                              running ? json_string(holder)
		                                      : json_null()) != 0;
		failed |= json_object_set_new(
				  root, "fenced",
				  fenced < 0 ? json_null()
					     : json_boolean(fenced)) != 0;
		failed |= json_object_set_new(root, "fenced_shards",
		                              json_string(which)) != 0;
		failed |=
			json_object_set_new(root, "fenced_since",
		                            since[0] ? json_integer(strtoll(
							       since, NULL, 10))
		                                     : json_null()) != 0;
		failed |=
			json_object_set_new(root, "epoch",
		                            epoch[0] ? json_integer(strtoll(
							       epoch, NULL, 10))
		                                     : json_null()) != 0;
		failed |=
			json_object_set_new(root, "abort",
		                            aborting[0] ? json_string(aborting)
		                                        : json_null()) != 0;
		failed |= json_object_set_new(
				  root, "guard_epoch",
				  guarded[0] ? json_integer(strtoll(guarded,
		                                                    NULL, 10))
					     : json_null()) != 0;
		failed |= json_object_set_new(root, "kept_rows",
		                              status_kept_json(kept, n_kept)) !=
		          0;
	} else {
		fprintf(out, "plan %s (%s), journal %s\n", plan->name,
		        plan_strategy_name(plan->strategy), plan->journal);
		fprintf(out, "run:     %s\n",
		        running ? holder : "no process is running it now");
		if (fenced > 0) {
			time_t t = (time_t)strtoll(since, NULL, 10);
			struct tm tm;
			char when[32] = "?";

			if (since[0]) {
				gmtime_r(&t, &tm);
				strftime(when, sizeof(when),
				         "%Y-%m-%d %H:%M:%S UTC", &tm);
			}
			fprintf(out, "writes:  FENCED since %s on %s\n", when,
			        kinds);
		} else {
			fprintf(out, "writes:  %s\n",
			        fenced == 0
			                ? "open (no fence on any source table)"
			                : "unknown: no answer from a shard");
		}
		fprintf(out, "routing: %s%s\n",
		        epoch[0] ? "epoch " : "not published yet",
		        epoch[0] ? epoch : "");
		if (guarded[0])
			fprintf(out,
			        "guard:   the old owners refuse writes to rows "
			        "they gave away (routing epoch %s) until purge "
			        "is done\n",
			        guarded);
		if (strcmp(aborting, "begun") == 0)
			fprintf(out,
			        "abort:   begun and not finished: `reshard "
			        "abort "
			        "%s` finishes it; `reshard run` refuses\n",
			        plan->path);
		else if (aborting[0])
			fprintf(out, "abort:   %s\n", aborting);
		status_kept_text(out, plan, kept, n_kept);
		fprintf(out, "steps:\n");
	}
	for (int i = 0; strategy != NULL && i < strategy->n_steps; i++) {
		const char *name = strategy->steps[i]->name;

		if (journal_step_get(journal, name, &rec, err) != 0)
			break;
		if (json) {
			failed |=
				json_array_append_new(
					steps,
					json_pack("{s:s, s:s, s:i, s:I, s:I, "
			                          "s:I, s:I, "
			                          "s:s}",
			                          "name", name, "state",
			                          state_names[rec.state],
			                          "attempts", rec.attempts,
			                          "started_at",
			                          (json_int_t)rec.started_at,
			                          "finished_at",
			                          (json_int_t)rec.finished_at,
			                          "rows", (json_int_t)rec.rows,
			                          "chunks",
			                          (json_int_t)rec.chunks_done,
			                          "error", rec.error)) != 0;
			continue;
		}
		status_time(rec.started_at, started, sizeof(started));
		status_time(rec.finished_at, finished, sizeof(finished));
		fprintf(out, "  %-14s %-8s", name, state_names[rec.state]);
		if (rec.state != RS_STEP_PENDING)
			fprintf(out,
			        " %s -> %s, %d attempt%s, %s rows, %lld chunks",
			        started, finished, rec.attempts,
			        rec.attempts == 1 ? "" : "s",
			        text_thousands((uint64_t)rec.rows, rows,
			                       sizeof(rows)),
			        (long long)rec.chunks_done);
		fputc('\n', out);
		if (rec.state == RS_STEP_RUNNING ||
		    rec.state == RS_STEP_FAILED) {
			struct rs_chunk_record chunk;

			if (journal_chunk_latest(journal, name, &chunk, NULL) ==
			    1) {
				fprintf(out,
				        "               last chunk: %s.%s "
				        "#%lld, "
				        "keys up to %s, %s\n",
				        chunk.shard, chunk.table,
				        (long long)chunk.number,
				        chunk.upto_key ? chunk.upto_key : "-",
				        chunk.state == RS_CHUNK_DONE
				                ? "done"
				                : "started, not finished");
				journal_chunk_free(&chunk);
			}
		}
		if (rec.error[0])
			fprintf(out, "               error: %s\n", rec.error);
	}
	if (json) {
		failed |= json_object_set_new(root, "steps", steps) != 0;
		if (failed || json_dumpf(root, out, JSON_PRESERVE_ORDER) != 0)
			rc = rs_err_set(err, failed ? RS_ENOMEM : RS_EIO,
			                failed ? "out of memory building the "
			                         "status"
			                       : "cannot write the status");
		else
			fputc('\n', out);
		json_decref(root);
	} else {
		char *events = journal_events_tail(journal, 5);

		if (events != NULL) {
			fprintf(out, "recent events:\n%s", events);
			free(events);
		}
	}
	journal_kept_free(kept, n_kept);
	journal_close(journal, NULL);
	return rc;
}
