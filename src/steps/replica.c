/*
 * catch-up and promote for a doubling: each replica gets everything its
 * primary wrote before the fence, then becomes a primary of its own.
 * SQLite: the replica file is made now, under the fence, with the online
 * backup API (a consistent copy, fence triggers included) — repeating it
 * after a crash makes the same copy again.
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

	journal_fact_get(run->journal, "fenced_since", since, sizeof(since));
	n = strlen(since);
	snprintf(fact, sizeof(fact), "position:%s",
	         run->plan->shards[shard].name);
	if (journal_fact_get(run->journal, fact, kept, sizeof(kept)) == 1 &&
	    strncmp(kept, since, n) == 0 && kept[n] == ' ') {
		snprintf(position, size, "%s", kept + n + 1);
		return 0;
	}
	rc = await_position(&run->loop, primary, position, size, err);
	if (rc != 0)
		return rc;
	snprintf(kept, sizeof(kept), "%s %s", since, position);
	return journal_fact_set(run->journal, fact, kept, err);
}

/* Bring the replica of SHARD (if it has one) to the primary's position,
 * slice by slice, saying how far behind it is every few seconds; a stop
 * request is honoured between slices. */
static int
catch_up_shard(struct rs_run *run, int shard, void *arg, struct rs_err *err)
{
	const struct rs_plan *plan = run->plan;
	int r = plan->shards[shard].replica, rc;
	struct rs_backend *primary, *replica = NULL;
	struct rs_backend_config config;
	struct rs_replication state = {0};
	char position[RS_POSITION_SIZE], noted[sizeof(state.note)] = "";
	uint64_t started, said;

	(void)arg;
	if (r < 0)
		return 0;
	rc = engine_shard(run, shard, &primary, err);
	if (rc != 0)
		return rc;
	rc = catch_up_position(run, shard, primary, position, sizeof(position),
	                       err);
	if (rc != 0)
		return rc;
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

/* Promote the replica of SHARD (if it has one and it is not a primary
 * yet: a resumed step does not promote twice). */
static int
promote_shard(struct rs_run *run, int shard, void *arg, struct rs_err *err)
{
	int r = run->plan->shards[shard].replica, promoted, rc;
	struct rs_backend *primary, *replica;
	char note[RS_POSITION_SIZE] = "";

	(void)arg;
	if (r < 0)
		return 0;
	rc = engine_shard(run, shard, &primary, err);
	if (rc == 0)
		rc = engine_shard(run, r, &replica, err);
	if (rc == 0)
		rc = await_promoted(&run->loop, replica, &promoted, err);
	if (rc == 0 && !promoted) {
		backend_set_op_timeout(replica, REPLICA_PROMOTE_TIMEOUT_MS);
		rc = await_promote(&run->loop, replica, err);
		backend_set_op_timeout(replica, 0);
	}
	if (rc == 0)
		fprintf(stderr, "  %s: a primary of its own\n",
		        run->plan->shards[r].name);
	/* What the old primary still keeps for it (a replication slot
	 * holding WAL) goes now: nothing streams from it any more. */
	if (rc == 0 && backend_supports(primary, RS_CAP_RELEASE_REPLICA))
		rc = await_release(&run->loop, primary, replica, note,
		                   sizeof(note), err);
	if (rc == 0 && note[0] != '\0')
		fprintf(stderr, "  %s: %s\n", run->plan->shards[shard].name,
		        note);
	return rc;
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

/* Abort for the server replica R (REPLICA) of SHARD.  One still
 * replicating is read-only and loses the fence when its primary does.
 * One this run promoted is a primary of its own: it loses its fence here,
 * and the operator is told plainly what it now is. */
static int
abort_server_replica(struct rs_run *run, int shard, int r,
                     struct rs_backend *replica, const struct rs_marker *marker,
                     struct rs_err *err)
{
	const struct rs_plan *plan = run->plan;
	int promoted = 0, rc = 0;

	if (backend_supports(replica, RS_CAP_REPLICATION))
		rc = await_promoted(&run->loop, replica, &promoted, err);
	if (rc != 0)
		return rc;
	if (!promoted) {
		fprintf(stderr,
		        "  %s: still a replica of %s; it loses the fence "
		        "when %s does\n",
		        plan->shards[r].name, plan->shards[shard].name,
		        plan->shards[shard].name);
		return 0;
	}
	rc = steps_fence_shard(run, r, 0, marker, err);
	if (rc == 0)
		fprintf(stderr,
		        "  %s: promoted by this run, it is now an independent "
		        "primary holding a copy of %s as of the fence, and "
		        "no longer replicates from it.  Nothing routes to it "
		        "(the run was not published), but from now on its "
		        "rows are stale: rebuild it as a replica of %s, or "
		        "drop it\n",
		        plan->shards[r].name, plan->shards[shard].name,
		        plan->shards[shard].name);
	return rc;
}

/* Undo the catch-up of SHARD's replica (see catch_up_undo). */
static int
catch_up_undo_shard(struct rs_run *run, int shard, void *arg,
                    struct rs_err *err)
{
	const struct rs_plan *plan = run->plan;
	int r = plan->shards[shard].replica, ours, rc;
	struct rs_backend *replica;
	char point[128];

	if (r < 0 || !engine_shard_exists(run, r))
		return 0;
	rc = replica_is_ours(run, r, &ours, err);
	if (rc == 0)
		rc = engine_shard(run, r, &replica, err);
	if (rc != 0)
		return rc;
	if (!backend_supports(replica, RS_CAP_MADE_REPLICA)) {
		rc = abort_server_replica(run, shard, r, replica, arg, err);
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
	struct rs_marker marker;

	marker_fill(run, "aborted", 0, &marker);
	return steps_each_shard(run, run->plan->from, catch_up_undo_shard,
	                        &marker, err);
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
