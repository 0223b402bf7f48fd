/*
 * pre-verify: verify before the fence, so that under it verify compares
 * only what changed since (verify.c, the recheck).
 *
 * With writes still flowing, change capture (backend_capture, the
 * split's triggers and change log) is put on every table that can change
 * under the comparison: a doubling's source tables (its replicas get it
 * by replication, and log what is written on them directly too); a
 * split's target tables (its sources have had it since the capture step).
 * Then verify's comparison walks every source table against the new
 * owners, recording what differs (a replica a little behind, a change the
 * split has not replayed yet) and going on.  From then on every write to
 * a row that moves is in a change log: of the source (a doubling), or of
 * the target, where the final catch-up replays it (a split).  Under the
 * fence verify compares again the logged keys and the differing ones.
 *
 * A doubling whose replicas reshard makes (SQLite) makes them here, once
 * the capture is on: a consistent copy of each file, then the changes
 * logged since replayed onto it (steps_replica_seed); catch-up replays
 * the rest under the fence.  The copy carries the capture triggers, so
 * the replica logs what is written to it as a promoted server replica
 * does.
 *
 * A split then replays what its sources logged during the comparison
 * (steps_replay_sources) and compares those rows again
 * (steps_verify_settle), writes still open, round after round until a
 * round is short (PRE_VERIFY_SETTLED_NS) or stops getting shorter: under
 * the fence, final-catch-up and the recheck have only what was written
 * during the last round, so the fenced work follows the write rate times
 * a short round, not the table's size.  A doubling onto replicas reshard
 * makes does the same, replaying onto them (steps_replay_mirror); one
 * onto server replicas does not (they replicate by themselves, and their
 * change log is a replicated copy of the primary's, which the recheck
 * under the fence reads).
 *
 * It also starts the delete logs purge reads (publish empties the new
 * owners' before the routing goes out), before its walk: the rows the
 * walk reads (its chunks' rows in the journal) are final-check's
 * starting count, the sources' logs recording every delete since.
 *
 * The capture it put up comes off in purge (steps_pre_verify_off) and
 * in abort, with a split's own on its sources.
 */
#include <stdint.h>
#include <stdio.h>
#include <uv.h>

#include "common/text.h"
#include "engine/streams.h"

#include "steps/steps.h"

/* Rounds of catch-up and compare-again before the fence, at most. */
#define PRE_VERIFY_ROUNDS 12
/* A round this short leaves the fence little to do: what the writers
 * wrote meanwhile (a tenth of a second of writes).  One more round costs
 * with writes open what the fence would spend on the same rows; with a
 * quarter of a second, the fence's final catch-up took 0.04-0.08 s,
 * depending on where the rounds happened to stop. */
#define PRE_VERIFY_SETTLED_NS 100000000ULL

/* Whether SHARD, a source the run touches, can be compared before the
 * fence: a doubling's replica exists already and streams from it; a
 * split's sources and targets can capture changes.  *MADE is set to 1
 * when SHARD's replica is one reshard makes (SQLite). */
static int
pre_verify_possible(struct rs_run *run, int shard, int *possible, int *made,
                    struct rs_err *err)
{
	int replica = run->plan->shards[shard].replica;
	struct rs_backend *p, *r;
	int rc;

	*possible = 0;
	if (!run->strategy->promotes_replicas) {
		rc = engine_shard(run, shard, &p, err);
		if (rc == 0)
			*possible = backend_supports(p, RS_CAP_CAPTURE);
		return rc;
	}
	if (replica < 0)
		return 0;
	rc = engine_shard(run, shard, &p, err);
	/* A replica reshard makes: made here, from a source that logs. */
	if (rc == 0 && backend_supports(p, RS_CAP_MADE_REPLICA)) {
		*possible = backend_supports(p, RS_CAP_CAPTURE);
		*made = 1;
		return 0;
	}
	if (rc != 0 || !engine_shard_exists(run, replica))
		return rc;
	rc = engine_shard(run, replica, &r, err);
	if (rc == 0)
		*possible = backend_supports(p, RS_CAP_CAPTURE) &&
		            backend_supports(r, RS_CAP_REPLICATION) &&
		            !backend_supports(r, RS_CAP_MADE_REPLICA);
	return rc;
}

/* Capture on (ARG: 1) or off (0) on SHARD's part: a doubling's source,
 * or a split's target. */
static int
pre_verify_capture(struct rs_run *run, int shard, void *arg, struct rs_err *err)
{
	const int *on = arg;

	if (run->strategy->promotes_replicas)
		return steps_capture_shard(run, shard, *on, err);
	/* A split: its targets only, and a SQLite target not made yet (an
	 * abort by the markers) is not made by asking. */
	if (!steps_is_target(run->plan, shard) ||
	    (!*on && !engine_shard_exists(run, shard)))
		return 0;
	return steps_capture_target(run, shard, *on, err);
}

/* The shards whose tables get the capture: the touched sources of a
 * doubling, the targets of a split. */
static int
pre_verify_each(struct rs_run *run, int on, struct rs_err *err)
{
	return steps_each_shard_of(run,
	                           run->strategy->promotes_replicas
	                                   ? run->plan->from
	                                   : run->plan->to,
	                           1, pre_verify_capture, &on, err);
}

/* Add to *ARG the entries of PHYSICAL's change log on SHARD (none when
 * it has no log). */
static int
pre_verify_count_log(struct rs_run *run, int shard, int table, int slot,
                     const char *physical, void *arg, struct rs_err *err)
{
	int64_t *sum = arg, n = 0;
	struct rs_backend *backend;
	char name[300];
	int rc = engine_shard(run, shard, &backend, err);

	(void)table;
	(void)slot;
	backend_change_log_name(physical, name, sizeof(name));
	if (rc == 0 && await_count(&run->loop, backend, name, &n, NULL) == 0)
		*sum += n;
	return rc;
}

/* Tell, from pre-verify's measured rate, what the fence will have to
 * compare again if it went up now: the changes logged so far (a split's
 * not yet replayed, too) and the rows that differed. */
static void
pre_verify_estimate(struct rs_run *run, int64_t differ)
{
	const struct rs_plan *plan = run->plan;
	uint64_t ns = uv_hrtime() - run->progress.started_ns;
	double rows = (double)(run->progress.done - run->progress.before);
	double rate = ns > 0 ? rows * 1e9 / (double)ns : 0;
	int64_t logged = 0;
	char line[400], done[32], per_s[32], again[32];

	for (int i = 0; i < plan->n_shards; i++) {
		int source =
			steps_in_map(plan->from, i) && engine_touches(run, i);
		int target = !run->strategy->promotes_replicas &&
		             steps_is_target(plan, i);

		if (source)
			steps_each_table(run, plan->from, i,
			                 pre_verify_count_log, &logged, NULL);
		if (target)
			steps_each_table(run, plan->to, i, pre_verify_count_log,
			                 &logged, NULL);
	}
	if (rate <= 0)
		return;
	text_thousands((uint64_t)rows, done, sizeof(done));
	text_thousands((uint64_t)rate, per_s, sizeof(per_s));
	text_thousands((uint64_t)(logged + differ), again, sizeof(again));
	snprintf(line, sizeof(line),
	         "pre-verify compared %s rows at %s rows/s; with the fence up "
	         "now, verify would compare again %s rows (%lld changes "
	         "logged, %lld differing): about %.2f s at that rate",
	         done, per_s, again, (long long)logged, (long long)differ,
	         (double)(logged + differ) / rate);
	fprintf(stderr, "  %s\n", line);
	journal_event(run->journal, "info", "%s", line);
}

/* A doubling's replica that reshard makes: made now (replica.c). */
static int
pre_verify_seed(struct rs_run *run, int shard, void *arg, struct rs_err *err)
{
	(void)arg;
	return steps_replica_seed(run, shard, err);
}

/* A doubling's replica that reshard made: what its primary logged since
 * the last replay, replayed onto it (steps_replay_mirror).  A server
 * replica streams by itself. */
static int
pre_verify_mirror(struct rs_run *run, int shard, void *arg, struct rs_err *err)
{
	int r = run->plan->shards[shard].replica, rc;
	struct rs_backend *primary;

	(void)arg;
	if (r < 0)
		return 0;
	rc = engine_shard(run, shard, &primary, err);
	if (rc != 0 || !backend_supports(primary, RS_CAP_MADE_REPLICA))
		return rc;
	return steps_replay_mirror(run, shard, r, err);
}

/* A split or a doubling onto replicas reshard makes, writes open: replay
 * what the sources logged while pre-verify compared onto the new owners
 * (steps_replay_sources; steps_replay_mirror), then compare those rows
 * again (steps_verify_settle), and again.  Each round has what the writers
 * wrote during the one before, so rounds shrink while reshard outpaces the
 * writers.  They stop when a round took PRE_VERIFY_SETTLED_NS or less, found
 * nothing, or was no shorter than the one before (the writers keep pace: more
 * rounds would not shrink what the fence has left), or after PRE_VERIFY_ROUNDS;
 * the recheck under the fence then has what comes after.  A rule by time, not
 * by rows: the same count of rows costs more on a table that no longer fits in
 * the servers' caches, and the fence waits for time. */
static int
pre_verify_settle(struct rs_run *run, struct rs_err *err)
{
	uint64_t before = UINT64_MAX;
	int64_t again = 0;
	int rc = 0;

	for (int round = 1; rc == 0 && round <= PRE_VERIFY_ROUNDS; round++) {
		uint64_t t0 = uv_hrtime(), took;

		rc = run->strategy->copies_movers
		             ? steps_replay_sources(run, err)
		             : steps_each_shard_of(run, run->plan->from, 1,
		                                   pre_verify_mirror, NULL,
		                                   err);
		if (rc == 0)
			rc = steps_verify_settle(run, &again, err);
		if (rc != 0 || again < 0)
			break;
		took = uv_hrtime() - t0;
		fprintf(stderr,
		        "  pre-verify: caught up and compared again %lld rows "
		        "changed meanwhile (round %d, %.2f s)\n",
		        (long long)again, round, (double)took / 1e9);
		journal_event(run->journal, "info",
		              "pre-verify: round %d compared again %lld rows "
		              "in %.2f s",
		              round, (long long)again, (double)took / 1e9);
		if (again == 0 || took <= PRE_VERIFY_SETTLED_NS ||
		    took >= before)
			break;
		before = took;
	}
	return rc;
}

/* A doubling: what the promotion of SHARD's server replica would do
 * under the fence and need not is done now, writes open
 * (backend_promote_ready: MariaDB's applied relay log goes).  Not for a
 * replica reshard makes (a SQLite file): nothing replicates into it. */
static int
pre_verify_promote_ready(struct rs_run *run, int shard, void *arg,
                         struct rs_err *err)
{
	int replica = run->plan->shards[shard].replica;
	struct rs_backend *p, *r;
	int rc;

	(void)arg;
	if (replica < 0)
		return 0;
	rc = engine_shard(run, shard, &p, err);
	if (rc != 0 || backend_supports(p, RS_CAP_MADE_REPLICA))
		return rc;
	rc = engine_shard(run, replica, &r, err);
	if (rc == 0 && backend_supports(r, RS_CAP_PROMOTE_READY))
		rc = await_promote_ready(&run->loop, r, err);
	return rc;
}

/* Every touched source's replica: pre_verify_promote_ready. */
static int
pre_verify_promote_ready_all(struct rs_run *run, struct rs_err *err)
{
	if (!run->strategy->promotes_replicas)
		return 0;
	return steps_each_shard_of(run, run->plan->from, 1,
	                           pre_verify_promote_ready, NULL, err);
}

static int
pre_verify_run(struct rs_run *run, struct rs_err *err)
{
	int shards[RS_PLAN_MAX_SHARDS], n, rc = 0, possible = 1, made = 0;
	struct rs_difference *d = NULL;
	int64_t differ = 0;
	int listed = 0;

	/* A run begun by a release without pre-verify, resumed past the
	 * fence: too late to compare before it; verify compares every
	 * row under it. */
	for (int i = 0; i < run->strategy->n_steps && possible; i++) {
		const struct rs_step_def *s = run->strategy->steps[i];
		struct rs_step_record rec;

		if (s->give_back == NULL)
			continue;
		rc = journal_step_get(run->journal, s->name, &rec, err);
		if (rc != 0)
			return rc;
		possible = rec.state == RS_STEP_PENDING;
	}
	if (!possible) {
		fprintf(stderr, "  pre-verify: the fence is up already (a run "
		                "begun by an earlier release); verify compares "
		                "every row under it\n");
		return 0;
	}
	/* First, so that the replica has long done it when the fence
	 * comes, whether or not the rows can be compared before it; again
	 * at the end, for what it received meanwhile. */
	rc = pre_verify_promote_ready_all(run, err);
	n = steps_map_shards(run->plan->from, shards);
	for (int i = 0; i < n && rc == 0 && possible; i++)
		if (engine_touches(run, shards[i]))
			rc = pre_verify_possible(run, shards[i], &possible,
			                         &made, err);
	for (int i = 0; i < run->plan->n_shards && rc == 0 && possible; i++)
		if (!run->strategy->promotes_replicas &&
		    steps_is_target(run->plan, i)) {
			struct rs_backend *t;

			rc = engine_shard(run, i, &t, err);
			possible =
				rc == 0 && backend_supports(t, RS_CAP_CAPTURE);
		}
	if (rc != 0)
		return rc;
	if (!possible) {
		fprintf(stderr, "  pre-verify: a shard cannot log its changes; "
		                "verify compares every row under the fence\n");
		return 0;
	}
	/* On record before the capture goes on, for purge and abort. */
	rc = journal_fact_set(run->journal, "pre_verify", "capture", err);
	if (rc == 0)
		rc = pre_verify_each(run, 1, err);
	/* The delete logs purge needs start here, not in the fenced
	 * publish (which empties them): their trigger DDL may wait for a
	 * lock on the table, and before the fence that wait costs no
	 * writer anything.  Before the replica files are made, which
	 * inherit them. */
	if (rc == 0)
		rc = journal_fact_set(run->journal, "delete_logs", "started",
		                      err);
	if (rc == 0)
		rc = steps_delete_logs(run, RS_DELETE_LOG_ON, err);
	if (rc == 0 && run->strategy->promotes_replicas)
		rc = steps_each_shard_of(run, run->plan->from, 1,
		                         pre_verify_seed, NULL, err);
	if (rc == 0)
		rc = steps_verify_pass(run, "pre-verify", 1, err);
	if (rc == 0)
		rc = journal_fact_set(run->journal, "pre_verify", "done", err);
	if (rc == 0)
		rc = journal_differences(run->journal, "pre-verify", 1, &d,
		                         &listed, &differ, err);
	journal_differences_free(d, listed);
	if (rc == 0) {
		fprintf(stderr,
		        "  pre-verify: %lld rows differ now (not caught up "
		        "yet); they and every row written from now on are "
		        "compared again under the fence\n",
		        (long long)differ);
		pre_verify_estimate(run, differ);
	}
	/* A split, or a doubling onto replicas reshard makes: what the
	 * sources logged while the comparison ran goes to the new owners
	 * now, writes still open, so that the replay under the fence has
	 * little left.  The new owners log what it writes, and verify
	 * compares those keys again under the fence.  Not a doubling onto
	 * server replicas: they replicate their primary's change log, and
	 * a standby's cannot be trimmed. */
	if (rc == 0 && (run->strategy->copies_movers || made))
		rc = pre_verify_settle(run, err);
	if (rc == 0)
		rc = pre_verify_promote_ready_all(run, err);
	return rc;
}

/* Capture off on a doubling's touched source (task 2 i) and on its
 * replica (task 2 i + 1), all at once: the replicas' DDL does not wait
 * for the sources'.  A promoted replica got the capture by replication
 * (or in its file) and keeps it; one still replicating loses it with its
 * primary. */
struct pre_verify_off {
	int shards[RS_PLAN_MAX_SHARDS];
};

static int
pre_verify_off_task(struct rs_run *run, int i, void *arg, struct rs_err *err)
{
	const struct pre_verify_off *off = arg;
	int shard = off->shards[i / 2];
	int replica = run->plan->shards[shard].replica, promoted = 0;
	int rc;

	if (i % 2 == 0)
		return steps_capture_shard(run, shard, 0, err);
	if (replica < 0)
		return 0;
	rc = steps_replica_promoted(run, replica, &promoted, err);
	if (rc == 0 && promoted)
		rc = steps_capture_off_replica(run, shard, replica, err);
	return rc;
}

int
steps_pre_verify_off(struct rs_run *run, struct rs_err *err)
{
	struct pre_verify_off off;
	struct rs_streams_spec spec = {.task = pre_verify_off_task,
	                               .arg = &off};
	char state[16];
	int n, m = 0;

	/* Without a journal (an abort by the markers) it is taken off
	 * wherever it may be: removing it is idempotent. */
	if (run->journal != NULL) {
		int on = journal_fact_get(run->journal, "pre_verify", state,
		                          sizeof(state), err);

		if (on <= 0)
			return on;
	}
	if (!run->strategy->promotes_replicas)
		return pre_verify_each(run, 0, err);
	n = steps_map_shards(run->plan->from, off.shards);
	for (int i = 0; i < n; i++)
		if (engine_touches(run, off.shards[i]))
			off.shards[m++] = off.shards[i];
	spec.n = 2 * m;
	spec.parallel = spec.n;
	return streams_run(run, &spec, err);
}

/* Abort: the replica files made here go (those the run marked, or the
 * journal says it began), then the capture. */
static int
pre_verify_undo(struct rs_run *run, struct rs_err *err)
{
	char state[16];
	int rc = 0, logs = 1; /* without a journal: wherever they may be */

	if (run->strategy->promotes_replicas)
		rc = steps_replica_remove_made(run, err);
	if (rc == 0 && run->journal != NULL) {
		logs = journal_fact_get(run->journal, "delete_logs", state,
		                        sizeof(state), err);
		rc = logs < 0 ? logs : 0;
	}
	if (rc == 0 && logs == 1)
		rc = steps_delete_logs(run, RS_DELETE_LOG_OFF, err);
	return rc != 0 ? rc : steps_pre_verify_off(run, err);
}

const struct rs_step_def step_pre_verify = {
	.name = "pre-verify",
	.summary = "compare the moving rows before the fence, noting what "
		   "changes after",
	.run = pre_verify_run,
	.undo = pre_verify_undo,
};
