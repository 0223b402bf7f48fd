/*
 * capture: change capture on every source table of a split
 * (backend_capture), so that the rows the copy has taken and that the
 * application changes afterwards are known and copied again by catch-up.
 * Every shard the split touches gets its marker ("copying") first, so that
 * the run's work on targets is on record before anything is written there.
 *
 * The capture is complete once it has returned: each engine's trigger DDL
 * waits for the writers under way, so a change committed before a chunk of
 * the copy is read is in the chunk, and one committed after is in the log.
 * It is removed by purge (no longer needed once the routing is published
 * and the last change replayed under the fence) and by abort.
 *
 * A target lacking a table the plan lets reshard make gets it here, once
 * the target's marker is there (create.c).
 */
#include <stdio.h>

#include "engine/marker.h"
#include "steps/steps.h"

/* What capture_table does, and where. */
struct capture_how {
	int on;
	int on_shard; /* the shard whose tables these are, or its replica */
};

/* Capture on (or off) for one table of a source shard, on that shard or
 * its replica.  Off leaves alone a table that is not there (an abort
 * after a failed preflight). */
static int
capture_table(struct rs_run *run, int shard, int table, int slot,
              const char *physical, void *arg, struct rs_err *err)
{
	const struct capture_how *how = arg;
	const struct rs_table_def *def;
	struct rs_backend *backend;
	int key, rc;

	(void)slot;
	shard = how->on_shard;
	rc = engine_shard(run, shard, &backend, err);
	if (rc == 0)
		rc = engine_table(run, shard, physical, &def, err);
	if (rc == RS_ESCHEMA && !how->on)
		return 0;
	if (rc != 0)
		return rc;
	key = steps_column(def, run->plan->tables[table].key);
	if (key < 0)
		return backend_fail(
			backend, err, RS_ESCHEMA,
			"table %s has no column %s, the plan's shard "
			"key for it",
			physical, run->plan->tables[table].key);
	/* A long transaction on the table makes the trigger DDL wait: tried
	 * again a few times, as the fence is. */
	for (int attempt = 1;; attempt++) {
		rc = await_capture(&run->loop, backend, def, key, how->on, err);
		if (rc == 0 || !steps_lock_retry(run, shard, "change capture",
		                                 attempt, err))
			return rc;
	}
}

/* Capture ON or off for the tables of SHARD under MAP, on shard ON_SHARD
 * (SHARD, or its replica), and say so. */
static int
capture_tables(struct rs_run *run, const struct rs_map *map, int shard, int on,
               int on_shard, struct rs_err *err)
{
	struct capture_how how = {on, on_shard};
	int rc = steps_each_table(run, map, shard, capture_table, &how, err);

	if (rc == 0)
		fprintf(stderr, "  %s: change capture %s\n",
		        run->plan->shards[on_shard].name,
		        on ? "on" : "removed");
	return rc;
}

int
steps_capture_shard(struct rs_run *run, int shard, int on, struct rs_err *err)
{
	return capture_tables(run, run->plan->from, shard, on, shard, err);
}

int
steps_capture_off_replica(struct rs_run *run, int shard, int replica,
                          struct rs_err *err)
{
	return capture_tables(run, run->plan->from, shard, 0, replica, err);
}

int
steps_capture_target(struct rs_run *run, int shard, int on, struct rs_err *err)
{
	return capture_tables(run, run->plan->to, shard, on, shard, err);
}

/* Mark SHARD as the run's, unless another run's marker is there. */
static int
capture_mark(struct rs_run *run, int shard, const struct rs_marker *marker,
             struct rs_err *err)
{
	struct rs_backend *backend;
	int rc = marker_check_shard(run, shard, err);

	if (rc == 0)
		rc = engine_shard(run, shard, &backend, err);
	if (rc == 0 && backend_supports(backend, RS_CAP_MARKERS))
		rc = await_mark(&run->loop, backend, marker, err);
	return rc;
}

static int
capture_source(struct rs_run *run, int shard, void *arg, struct rs_err *err)
{
	int rc = capture_mark(run, shard, arg, err);

	return rc != 0 ? rc : steps_capture_shard(run, shard, 1, err);
}

static int
capture_target(struct rs_run *run, int shard, void *arg, struct rs_err *err)
{
	int rc;

	if (!steps_is_target(run->plan, shard))
		return 0;
	rc = capture_mark(run, shard, arg, err);
	return rc != 0 ? rc : steps_create_tables(run, shard, err);
}

static int
capture_run(struct rs_run *run, struct rs_err *err)
{
	struct rs_marker marker;
	int rc;

	marker_fill(run, "copying", 0, &marker);
	rc = steps_each_shard(run, run->plan->to, capture_target, &marker, err);
	if (rc == 0)
		rc = steps_each_shard(run, run->plan->from, capture_source,
		                      &marker, err);
	return rc;
}

static int
capture_undo_source(struct rs_run *run, int shard, void *arg,
                    struct rs_err *err)
{
	int rc = marker_check_shard(run, shard, err);

	(void)arg;
	return rc != 0 ? rc : steps_capture_shard(run, shard, 0, err);
}

static int
capture_undo_target(struct rs_run *run, int shard, void *arg,
                    struct rs_err *err)
{
	(void)arg;
	if (!steps_is_target(run->plan, shard))
		return 0;
	return steps_create_undo(run, shard, err);
}

/* Abort: capture removed from every source, the tables the run made on
 * targets dropped (copy's undo emptied them), and every shard's marker
 * says aborted, or is again the done one of the run this one replaced
 * (the last undo to run: nothing of the run is left). */
static int
capture_undo(struct rs_run *run, struct rs_err *err)
{
	int rc = steps_each_shard(run, run->plan->from, capture_undo_source,
	                          NULL, err);

	if (rc == 0)
		rc = steps_each_shard(run, run->plan->to, capture_undo_target,
		                      NULL, err);
	return rc != 0 ? rc : marker_set_aborted(run, err);
}

const struct rs_step_def step_capture = {
	.name = "capture",
	.summary = "log every change to the source tables",
	.run = capture_run,
	.undo = capture_undo,
};
