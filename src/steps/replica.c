/*
 * catch-up and promote for a doubling: each replica gets everything its
 * primary wrote before the fence, then becomes a primary of its own.
 *
 * SQLite, where reshard makes the replica itself: pre-verify has copied
 * the file with the online backup API before the fence, with the
 * primary's change capture on (steps_replica_seed), and catch-up replays
 * the last logged changes onto it under the fence.  A run begun by an
 * earlier release, whose fence is up before any copy, copies the file
 * under the fence instead — repeating that after a crash makes the same
 * copy again.
 *
 * Both wait longer than any batch should, so they run with bounds of their
 * own instead of options.operation_timeout_seconds (backend_set_op_timeout).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/await.h"
#include "engine/marker.h"
#include "steps/steps.h"

/* Catch-up copies a whole database (SQLite) or waits for a replica to
 * replay everything before the fence: hours for a file of a few hundred
 * GB on a slow disk, and still an end for one that never finishes.  It
 * goes in slices of REPLICA_SLICE_MS, saying how far behind the replica is
 * every REPLICA_SAY_MS. */
#define REPLICA_CATCH_UP_TIMEOUT_MS ((uint64_t)6 * 3600 * 1000)
#define REPLICA_SLICE_MS            500
#define REPLICA_SAY_MS              5000
/* Promotion waits for the server to leave recovery (pg_promote waits up
 * to 60 s by default). */
#define REPLICA_PROMOTE_TIMEOUT_MS (10 * 60 * 1000)

/* The position SHARD's replica must reach: read from the primary under
 * the fence the first time, journaled, and the journal's on a resume —
 * of the same fence: the journal keeps it as "<fenced_since> <position>",
 * and a fence given back and put up again (engine.c) is another. */
static int
catch_up_position(struct rs_run *run, int shard, struct rs_backend *primary,
                  char *position, size_t size, struct rs_err *err)
{
	char fact[200], since[32] = "", kept[RS_POSITION_SIZE + 40];
	size_t n;
	int rc;

	rc = journal_fact_get(run->journal, "fenced_since", since,
	                      sizeof(since), err);
	if (rc < 0)
		return rc;
	n = strlen(since);
	snprintf(fact, sizeof(fact), "position:%s",
	         run->plan->shards[shard].name);
	rc = journal_fact_get(run->journal, fact, kept, sizeof(kept), err);
	if (rc < 0)
		return rc;
	if (rc == 1 && strncmp(kept, since, n) == 0 && kept[n] == ' ') {
		snprintf(position, size, "%s", kept + n + 1);
		return 0;
	}
	rc = await_position(&run->loop, primary, position, size, err);
	if (rc != 0)
		return rc;
	snprintf(kept, sizeof(kept), "%s %s", since, position);
	/* Lazy, in the fenced window: it matters once a replica may be
	 * promoted, and promote's begin, durable, takes it to the disk
	 * first.  A power cut before then reads the position again. */
	return journal_fact_set_lazy(run->journal, fact, kept, err);
}

/* Bring REPLICA, the replica of SHARD (PRIMARY), to POSITION, slice by
 * slice, saying how far behind it is every few seconds; a stop request
 * is honoured between slices.  For a replica reshard makes (SQLite) this
 * is the copy of the file. */
static int
replica_follow(struct rs_run *run, int shard, struct rs_backend *primary,
               const char *position, struct rs_err *err)
{
	const struct rs_plan *plan = run->plan;
	int r = plan->shards[shard].replica, rc;
	struct rs_backend *replica = NULL;
	struct rs_backend_config config;
	struct rs_replication state = {0};
	char noted[sizeof(state.note)] = "";
	uint64_t started, said;

	engine_shard_close(run, r); /* a made replica's file is replaced */
	config = engine_shard_config(plan, r);
	rc = backend_new(&run->loop, &config, &replica, err);
	/* A server replica is asked how far it is; a made one is not
	 * there yet. */
	if (rc == 0 && !backend_supports(replica, RS_CAP_MADE_REPLICA))
		rc = await_connect(&run->loop, replica, err);
	uv_update_time(&run->loop);
	started = said = uv_now(&run->loop);
	while (rc == 0) {
		rc = await_catch_up(&run->loop, primary, replica, position,
		                    REPLICA_SLICE_MS, &state, err);
		if (rc != 0 || state.reached)
			break;
		uv_update_time(&run->loop);
		/* Said every few seconds, and at once when a reason it may
		 * never get there appears or changes. */
		if (uv_now(&run->loop) - said >= REPLICA_SAY_MS ||
		    strcmp(state.note, noted) != 0) {
			said = uv_now(&run->loop);
			snprintf(noted, sizeof(noted), "%s", state.note);
			fprintf(stderr,
			        "  %s: replica %s is %lld %s behind%s%s\n",
			        plan->shards[shard].name, plan->shards[r].name,
			        (long long)state.behind, state.unit,
			        state.note[0] != '\0' ? ": " : "", state.note);
		}
		if (uv_now(&run->loop) - started > REPLICA_CATCH_UP_TIMEOUT_MS)
			rc = backend_fail(
				replica, err, RS_ECONNECT,
				"did not catch up with %s within %d h; check "
				"that it replicates, then `reshard run` again",
				plan->shards[shard].name,
				(int)(REPLICA_CATCH_UP_TIMEOUT_MS / 3600000));
		if (rc == 0)
			rc = engine_checkpoint(run, err);
	}
	await_close(&run->loop, replica);
	return rc;
}

/* The journal's fact on how far making REPLICA's file has gone:
 * "copying" once the copy may have begun (the file is the run's to
 * replace), "made" once it is complete and marked. */
static void
replica_seed_fact(const struct rs_run *run, int replica, char *name,
                  size_t size)
{
	snprintf(name, size, "seed:%s", run->plan->shards[replica].name);
}

/* Whether SHARD's replica is a file made by pre-verify (a doubling begun
 * before the fence was made this way): 1, 0, or the journal's error. */
static int
replica_seeded(struct rs_run *run, int shard, struct rs_err *err)
{
	int r = run->plan->shards[shard].replica, rc;
	char fact[200], state[16] = "";

	if (r < 0 || run->journal == NULL)
		return 0;
	replica_seed_fact(run, r, fact, sizeof(fact));
	rc = journal_fact_get(run->journal, fact, state, sizeof(state), err);
	return rc < 0 ? rc : rc == 1 && strcmp(state, "made") == 0;
}

int
steps_replica_seed(struct rs_run *run, int shard, struct rs_err *err)
{
	const struct rs_plan *plan = run->plan;
	int r = plan->shards[shard].replica, rc;
	struct rs_backend *primary, *replica;
	struct rs_marker marker;
	char fact[200], state[16] = "";

	if (r < 0)
		return 0;
	rc = engine_shard(run, shard, &primary, err);
	if (rc != 0 || !backend_supports(primary, RS_CAP_MADE_REPLICA))
		return rc;
	replica_seed_fact(run, r, fact, sizeof(fact));
	rc = journal_fact_get(run->journal, fact, state, sizeof(state), err);
	if (rc < 0)
		return rc;
	rc = 0;
	if (strcmp(state, "made") != 0) {
		/* Not the run's yet: it must not hold data (preflight said
		 * so; said again, since time has passed). */
		if (state[0] == '\0') {
			struct rs_backend_config config =
				engine_shard_config(plan, r);
			struct rs_backend *file;

			engine_shard_close(run, r);
			rc = backend_new(&run->loop, &config, &file, err);
			if (rc == 0)
				rc = await_replica_check(&run->loop, primary,
				                         file, 0, err);
			await_close(&run->loop, file);
			if (rc == 0)
				rc = journal_fact_set(run->journal, fact,
				                      "copying", err);
		}
		if (rc == 0)
			rc = replica_follow(run, shard, primary, "", err);
		marker_fill(run, "copying", 0, &marker);
		if (rc == 0)
			rc = engine_shard(run, r, &replica, err);
		if (rc == 0)
			rc = await_mark(&run->loop, replica, &marker, err);
		if (rc == 0)
			rc = journal_fact_set(run->journal, fact, "made", err);
		if (rc == 0)
			fprintf(stderr,
			        "  %s: replica %s copied (online backup) while "
			        "writes go on; the changes since are replayed "
			        "from the change log\n",
			        plan->shards[shard].name, plan->shards[r].name);
	}
	if (rc == 0)
		rc = steps_replay_mirror(run, shard, r, err);
	return rc;
}

/* Bring the replica of SHARD (if it has one) to everything its primary
 * wrote before the fence: a server replica to the primary's position;
 * a replica file made by pre-verify by replaying the rest of the change
 * log (the fence stops every write to the tables it logs); one not made
 * yet (a run begun by an earlier release) by copying the file now. */
static int
catch_up_shard(struct rs_run *run, int shard, void *arg, struct rs_err *err)
{
	const struct rs_plan *plan = run->plan;
	int r = plan->shards[shard].replica, rc;
	struct rs_backend *primary;
	char position[RS_POSITION_SIZE];

	(void)arg;
	if (r < 0)
		return 0;
	rc = engine_shard(run, shard, &primary, err);
	if (rc == 0 && backend_supports(primary, RS_CAP_MADE_REPLICA))
		rc = replica_seeded(run, shard, err);
	if (rc == 1) {
		struct rs_marker marker;

		/* Then it carries its primary's fence, as a streaming
		 * replica does, until unfence lifts both.  One it carries
		 * from an attempt given back would refuse the replay. */
		marker_fill(run, "fenced", 0, &marker);
		rc = steps_fence_shard(run, r, 0, NULL, err);
		if (rc == 0)
			rc = steps_replay_mirror(run, shard, r, err);
		if (rc == 0)
			rc = steps_fence_shard(run, r, 1, &marker, err);
		if (rc == 0)
			fprintf(stderr,
			        "  %s: replica %s has every change up to the "
			        "fence\n",
			        plan->shards[shard].name, plan->shards[r].name);
		return rc;
	}
	if (rc == 0)
		rc = catch_up_position(run, shard, primary, position,
		                       sizeof(position), err);
	if (rc == 0)
		rc = replica_follow(run, shard, primary, position, err);
	if (rc == 0)
		fprintf(stderr, "  %s: replica %s has everything up to %s\n",
		        plan->shards[shard].name, plan->shards[r].name,
		        position);
	return rc;
}

static int
catch_up_run(struct rs_run *run, struct rs_err *err)
{
	return steps_each_shard(run, run->plan->from, catch_up_shard, NULL,
	                        err);
}

/* Free what SHARD, a primary, still keeps for REPLICA, promoted (a
 * replication slot holding WAL until the disk fills), where its engine
 * keeps anything, saying what went.  Repeats without harm: promote does
 * it, and abort again, for a promote cut short between the promotion and
 * this. */
static int
replica_release(struct rs_run *run, int shard, struct rs_backend *replica,
                struct rs_err *err)
{
	struct rs_backend *primary;
	char note[RS_POSITION_SIZE] = "";
	int rc = engine_shard(run, shard, &primary, err);

	if (rc != 0 || !backend_supports(primary, RS_CAP_RELEASE_REPLICA))
		return rc;
	rc = await_release(&run->loop, primary, replica, note, sizeof(note),
	                   err);
	if (rc == 0 && note[0] != '\0')
		fprintf(stderr, "  %s: %s\n", run->plan->shards[shard].name,
		        note);
	return rc;
}

/* Promote the replica of SHARD (if it has one and it is not a primary
 * yet: a resumed step does not promote twice). */
static int
promote_shard(struct rs_run *run, int shard, void *arg, struct rs_err *err)
{
	int r = run->plan->shards[shard].replica, promoted, rc;
	struct rs_backend *replica;
	char point[128];

	(void)arg;
	if (r < 0)
		return 0;
	rc = engine_shard(run, r, &replica, err);
	if (rc == 0)
		rc = await_promoted(&run->loop, replica, &promoted, err);
	if (rc == 0 && !promoted) {
		backend_set_op_timeout(replica, REPLICA_PROMOTE_TIMEOUT_MS);
		rc = await_promote(&run->loop, replica, err);
		backend_set_op_timeout(replica, 0);
	}
	if (rc != 0)
		return rc;
	fprintf(stderr, "  %s: a primary of its own\n",
	        run->plan->shards[r].name);
	snprintf(point, sizeof(point), "after-promote:%s",
	         run->plan->shards[r].name);
	engine_fault(point);
	/* What the old primary still keeps for it goes now: nothing
	 * streams from it any more. */
	return replica_release(run, shard, replica, err);
}

static int
promote_run(struct rs_run *run, struct rs_err *err)
{
	return steps_each_shard(run, run->plan->from, promote_shard, NULL, err);
}

/* Whether shard SHARD carries the marker of RUN. */
static int
replica_is_ours(struct rs_run *run, int shard, int *ours, struct rs_err *err)
{
	struct rs_marker *markers;
	int n, rc = marker_read(run, shard, &markers, &n, err);

	*ours = 0;
	for (int i = 0; rc == 0 && i < n; i++)
		*ours |= strcmp(markers[i].run_id, run->run_id) == 0 &&
		         strcmp(markers[i].plan, run->plan->name) == 0;
	free(markers);
	return rc;
}

/* Abort for the server replica R (REPLICA) of SHARD, by what it is now
 * (backend_promoted):
 * - still replicating: read-only, it loses the fence when its primary
 *   does;
 * - its replication stopped (a promote cut short after stopping it, or an
 *   error): started again, so that it loses the fence that way too;
 * - promoted by this run, or left replicating from nothing by a promote
 *   cut short (read-only still): it is no replica any more, so it loses
 *   its fence here, the operator is told plainly what it now is, and what
 *   its old primary still keeps for it is freed (replica_release), which
 *   a promote cut short after the promotion left there. */
static int
abort_server_replica(struct rs_run *run, int shard, int r,
                     struct rs_backend *replica, const struct rs_marker *marker,
                     struct rs_err *err)
{
	const struct rs_plan *plan = run->plan;
	const char *name = plan->shards[r].name;
	const char *primary = plan->shards[shard].name;
	int state = RS_REPLICA_FOLLOWS, rc = 0;

	if (backend_supports(replica, RS_CAP_REPLICATION))
		rc = await_replica_state(&run->loop, replica, &state, err);
	if (rc != 0)
		return rc;
	if (state == RS_REPLICA_FOLLOWS) {
		fprintf(stderr,
		        "  %s: still a replica of %s; it loses the fence "
		        "when %s does\n",
		        name, primary, primary);
		return 0;
	}
	if (state == RS_REPLICA_STOPPED) {
		rc = await_resume_replication(&run->loop, replica, err);
		if (rc == 0)
			fprintf(stderr,
			        "  %s: a replica of %s whose replication was "
			        "stopped (by a promote cut short, or an "
			        "error): started again, it loses the fence "
			        "when %s does, once it has applied what %s "
			        "wrote meanwhile.  Until then it keeps the "
			        "fence: if its replication stops again, its "
			        "status says why; fix that and start it\n",
			        name, primary, primary, primary);
		return rc;
	}
	/* First, so that a fence that will not come off (below) leaves no
	 * WAL held for it. */
	rc = replica_release(run, shard, replica, err);
	if (rc == 0)
		rc = steps_fence_shard(run, r, 0, marker, err);
	if (rc != 0)
		return rc;
	if (state == RS_REPLICA_DETACHED)
		fprintf(stderr,
		        "  %s: a promote cut short left it replicating from "
		        "nothing, read-only still: it is now an independent "
		        "server holding a copy of %s as of the fence, and no "
		        "longer a replica of it (its replication settings "
		        "are gone).  Nothing routes to it (the run was not "
		        "published), but from now on its rows are stale: "
		        "rebuild it as a replica of %s, or drop it\n",
		        name, primary, primary);
	else
		fprintf(stderr,
		        "  %s: promoted by this run, it is now an independent "
		        "primary holding a copy of %s as of the fence, and "
		        "no longer replicates from it.  Nothing routes to it "
		        "(the run was not published), but from now on its "
		        "rows are stale: rebuild it as a replica of %s, or "
		        "drop it\n",
		        name, primary, primary);
	return 0;
}

/* What catch_up_undo_shard does: to server replicas too, or only to the
 * files reshard made. */
struct replica_undo {
	struct rs_marker marker; /* "aborted", for a promoted server one */
	int made_only;
};

/* Undo the catch-up of SHARD's replica (see catch_up_undo). */
static int
catch_up_undo_shard(struct rs_run *run, int shard, void *arg,
                    struct rs_err *err)
{
	const struct rs_plan *plan = run->plan;
	const struct replica_undo *how = arg;
	int r = plan->shards[shard].replica, ours, rc;
	struct rs_backend *replica;
	char point[128], fact[200], state[16] = "";

	if (r < 0 || !engine_shard_exists(run, r))
		return 0;
	rc = replica_is_ours(run, r, &ours, err);
	/* A copy cut before it was marked is the run's by the journal. */
	replica_seed_fact(run, r, fact, sizeof(fact));
	if (rc == 0 && run->journal != NULL) {
		int made = journal_fact_get(run->journal, fact, state,
		                            sizeof(state), err);

		ours |= made == 1;
		rc = made < 0 ? made : 0;
	}
	if (rc == 0)
		rc = engine_shard(run, r, &replica, err);
	if (rc != 0)
		return rc;
	if (!backend_supports(replica, RS_CAP_MADE_REPLICA)) {
		if (how->made_only)
			return 0;
		rc = abort_server_replica(run, shard, r, replica, &how->marker,
		                          err);
		if (rc != 0)
			return rc;
	} else if (!ours) {
		fprintf(stderr,
		        "  %s: replica %s does not carry this run's "
		        "marker; left as it is\n",
		        plan->shards[r].name, plan->shards[r].url);
		return 0;
	} else {
		struct rs_backend_config config = engine_shard_config(plan, r);
		struct rs_backend *file;

		engine_shard_close(run, r);
		rc = backend_new(&run->loop, &config, &file, err);
		if (rc == 0)
			rc = backend_remove(file, err);
		await_close(&run->loop, file);
		if (rc != 0)
			return rc;
		fprintf(stderr, "  %s: replica %s removed\n",
		        plan->shards[r].name, plan->shards[r].url);
	}
	snprintf(point, sizeof(point), "after-abort:replica:%s",
	         plan->shards[r].name);
	engine_fault(point);
	return 0;
}

/* Abort: a replica file reshard made (SQLite) is deleted when it carries
 * this run's marker (it was never published, so nothing but this run ever
 * wrote to it); a server replica only loses the fence it carries from its
 * primary: through replication while it is still a replica, directly once
 * promoted (abort_server_replica). */
static int
catch_up_undo(struct rs_run *run, struct rs_err *err)
{
	struct replica_undo how = {.made_only = 0};

	marker_fill_aborted(run, &how.marker);
	return steps_each_shard(run, run->plan->from, catch_up_undo_shard, &how,
	                        err);
}

int
steps_replica_remove_made(struct rs_run *run, struct rs_err *err)
{
	struct replica_undo how = {.made_only = 1};

	marker_fill_aborted(run, &how.marker);
	return steps_each_shard(run, run->plan->from, catch_up_undo_shard, &how,
	                        err);
}

const struct rs_step_def step_catch_up = {
	.name = "catch-up",
	.summary = "bring every replica up to date with its fenced primary",
	.run = catch_up_run,
	.undo = catch_up_undo,
};

const struct rs_step_def step_promote = {
	.name = "promote",
	.summary = "make every replica a primary of its own",
	.irreversible = 1,
	.run = promote_run,
};

int
steps_replica_promoted(struct rs_run *run, int replica, int *promoted,
                       struct rs_err *err)
{
	struct rs_backend *r;
	int rc;

	*promoted = 0;
	if (!engine_shard_exists(run, replica))
		return 0;
	rc = engine_shard(run, replica, &r, err);
	return rc != 0 ? rc : await_promoted(&run->loop, r, promoted, err);
}
