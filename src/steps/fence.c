/*
 * fence and unfence: triggers on every source table that reject writes
 * with a message naming the run, persistent until unfence (or abort)
 * removes them — from the sources and, in a doubling, from the replicas,
 * which carry their primary's triggers.  The fence goes up in one
 * transaction with the shard's marker.  (The delete logs purge reads,
 * to tell a row the application deleted on its new owner from one that
 * owner never saw, start in pre-verify and publish.)  Where the server can
 * compute a row's owner (PostgreSQL, MariaDB), unfence puts up the ownership
 * guard on each source before lifting its fence: until purge is done, a write
 * there to a row the shard no longer owns (a router still on the old routing)
 * is refused with a message naming the row's owner and the routing epoch.
 */
#include <stdio.h>
#include <time.h>

#include "engine/marker.h"
#include "steps/steps.h"

/* Fence SHARD, its marker going up in the same transaction. */
static int
fence_shard(struct rs_run *run, int shard, void *arg, struct rs_err *err)
{
	int rc;

	/* Another run's marker (one whose journal is not ours) may have
	 * come since the run began: never fence over it. */
	rc = marker_check_shard(run, shard, err);
	return rc != 0 ? rc : steps_fence_shard(run, shard, 1, arg, err);
}

static int
fence_run(struct rs_run *run, struct rs_err *err)
{
	char since[32], now[32];
	struct rs_marker marker;
	int rc;

	/* The intent first: status says "fenced" from here on.  A fence
	 * already up keeps its start (the give-back clock runs from it).
	 * Lazy: the step's begin, durable, already says a fence may be up
	 * (abort lifts it by that), and an fsync here, on a disk busy with
	 * the servers' writes, grew what final-catch-up replays under the
	 * fence (0.35 s of writes once at 5 M rows). */
	rc = journal_fact_get(run->journal, "fenced_since", since,
	                      sizeof(since), err);
	if (rc < 0)
		return rc;
	if (rc == 0) {
		snprintf(now, sizeof(now), "%lld", (long long)time(NULL));
		rc = journal_fact_set_lazy(run->journal, "fenced_since", now,
		                           err);
		if (rc != 0)
			return rc;
	}
	marker_fill(run, "fenced", 0, &marker);
	rc = steps_each_shard_of(run, run->plan->from, 1, fence_shard, &marker,
	                         err);
	if (rc == 0)
		run->fenced_writes_at =
			journal_durable_writes(run->journal) + 1;
	return rc;
}

/* Lift the fence from SHARD and, in a doubling, from its replica. */
static int
unfence_shard(struct rs_run *run, int shard, void *arg, struct rs_err *err)
{
	int replica = run->plan->shards[shard].replica;
	int rc;

	(void)arg;
	if (!run->strategy->promotes_replicas)
		replica = -1;
	/* The guard goes up before the fence comes down: the rows SHARD
	 * gave away are never open to a write there in between.  A
	 * promoted replica holds copies of its primary's rows until purge:
	 * a write of one of those there would be purged unseen, so it is
	 * guarded too. */
	rc = steps_guard_shard(run, shard, 1, err);
	if (rc == 0 && replica >= 0)
		rc = steps_guard_shard(run, replica, 1, err);
	if (rc == 0)
		rc = steps_fence_shard(run, shard, 0, NULL, err);
	if (rc == 0 && replica >= 0)
		rc = steps_fence_shard(run, replica, 0, NULL, err);
	return rc;
}

static int
unfence_run(struct rs_run *run, struct rs_err *err)
{
	/* Only what must change under the fence: pre-verify's change
	 * capture, no longer needed, comes off in purge, writes open
	 * (trigger DDL waits for any lock on a table: an autovacuum of a
	 * freshly copied target held it 1.08 s at 5 M rows). */
	int rc = steps_each_shard_of(run, run->plan->from, 1, unfence_shard,
	                             NULL, err);

	/* Each durable journal write between the fence's commit and here
	 * was an fsync the writers of the movers waited for: say how many,
	 * when this process saw the whole window. */
	if (rc == 0 && run->fenced_writes_at > 0) {
		int64_t writes = journal_durable_writes(run->journal) -
		                 run->fenced_writes_at + 1;

		journal_event(run->journal, "info",
		              "durable journal writes while writes were "
		              "fenced: %lld",
		              (long long)writes);
	}
	return rc != 0 ? rc
	               : journal_fact_delete(run->journal, "fenced_since", err);
}

/* Abort: lift the fence from every source, marking it aborted in the same
 * transaction — unless another run's marker is there (its fence is not
 * ours to lift). */
/* Lift the fence from SHARD, its marker saying aborted. */
static int
fence_undo_shard(struct rs_run *run, int shard, void *arg, struct rs_err *err)
{
	char point[128];
	int rc = marker_check_shard(run, shard, err);

	if (rc == 0)
		rc = steps_fence_shard(run, shard, 0, arg, err);
	if (rc != 0)
		return rc;
	snprintf(point, sizeof(point), "after-abort:unfence:%s",
	         run->plan->shards[shard].name);
	engine_fault(point);
	return 0;
}

static int
fence_undo(struct rs_run *run, struct rs_err *err)
{
	struct rs_marker marker;
	int rc;

	marker_fill_aborted(run, &marker);
	rc = steps_each_shard_of(run, run->plan->from, 1, fence_undo_shard,
	                         &marker, err);
	if (rc != 0 || run->journal == NULL)
		return rc;
	return journal_fact_delete(run->journal, "fenced_since", err);
}

/* The cutover is given back (engine.c): the fence comes off every source
 * (a replica not yet promoted loses it by replication), the markers stay
 * as they are, and the next fence starts a new clock. */
static int
fence_give_back_shard(struct rs_run *run, int shard, void *arg,
                      struct rs_err *err)
{
	(void)arg;
	return steps_fence_shard(run, shard, 0, NULL, err);
}

static int
fence_give_back(struct rs_run *run, struct rs_err *err)
{
	int rc = steps_each_shard_of(run, run->plan->from, 1,
	                             fence_give_back_shard, NULL, err);

	run->fenced_writes_at = 0;

	return rc != 0 ? rc
	               : journal_fact_delete(run->journal, "fenced_since", err);
}

const struct rs_step_def step_fence = {
	.name = "fence",
	.summary = "block writes on the source tables",
	.run = fence_run,
	.undo = fence_undo,
	.give_back = fence_give_back,
};

const struct rs_step_def step_unfence = {
	.name = "unfence",
	.summary = "let writes resume, routed by the new map",
	.lazy_begin = 1, /* guard up and fence down, again if need be */
	.run = unfence_run,
};
