/*
 * Shard markers for a run: its id, the guard against starting over a run
 * that lives on under a lost journal, and marking every shard.
 */
#include "engine/marker.h"

#include <fcntl.h>
#include <libconfig.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/await.h"
#include "engine/streams.h"

int
marker_ended(const char *state)
{
	return strcmp(state, "done") == 0 || strcmp(state, "aborted") == 0;
}

void
marker_fill(const struct rs_run *run, const char *state, int64_t epoch,
            struct rs_marker *m)
{
	memset(m, 0, sizeof(*m));
	snprintf(m->plan, sizeof(m->plan), "%s", run->plan->name);
	snprintf(m->run_id, sizeof(m->run_id), "%s", run->run_id);
	snprintf(m->state, sizeof(m->state), "%s", state);
	m->epoch = epoch;
}

void
marker_fill_aborted(const struct rs_run *run, struct rs_marker *m)
{
	marker_fill(run, "aborted", 0, m);
	if (run->replaced_run[0] == '\0')
		return;
	snprintf(m->run_id, sizeof(m->run_id), "%s", run->replaced_run);
	snprintf(m->state, sizeof(m->state), "done");
	m->epoch = run->replaced_epoch;
}

/* Read the fact replaced_run ("RUN EPOCH") into RUN, if the journal has
 * it. */
static int
marker_read_replaced(struct rs_run *run, struct rs_err *err)
{
	char fact[64], id[40];
	long long epoch;
	int rc = journal_fact_get(run->journal, "replaced_run", fact,
	                          sizeof(fact), err);

	if (rc != 1)
		return rc;
	if (sscanf(fact, "%39s %lld", id, &epoch) != 2)
		return rs_err_set(err, RS_EIO,
		                  "journal %s: fact replaced_run \"%s\" is not "
		                  "\"RUN EPOCH\"",
		                  run->plan->journal, fact);
	snprintf(run->replaced_run, sizeof(run->replaced_run), "%s", id);
	run->replaced_epoch = epoch;
	return 0;
}

int
marker_run_id(struct rs_run *run, int *created, struct rs_err *err)
{
	unsigned char bytes[8];
	int fd, rc;

	if (created != NULL)
		*created = 0;
	/* A journal that cannot say must not get a new run: the run it
	 * holds would look like another one's (and its journal be lost). */
	rc = journal_fact_get(run->journal, "run_id", run->run_id,
	                      sizeof(run->run_id), err);
	if (rc != 0)
		return rc == 1 ? marker_read_replaced(run, err) : rc;
	if (created != NULL)
		*created = 1;
	fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0 ||
	    read(fd, bytes, sizeof(bytes)) != (ssize_t)sizeof(bytes)) {
		if (fd >= 0)
			close(fd);
		return rs_err_set(err, RS_EIO,
		                  "cannot read /dev/urandom for a run id");
	}
	close(fd);
	for (size_t i = 0; i < sizeof(bytes); i++)
		snprintf(run->run_id + 2 * i, 3, "%02x", bytes[i]);
	return journal_fact_set(run->journal, "run_id", run->run_id, err);
}

int
marker_read(struct rs_run *run, int shard, struct rs_marker **markers, int *n,
            struct rs_err *err)
{
	struct rs_backend *backend;
	int rc;

	*markers = NULL;
	*n = 0;
	/* A shard that does not exist yet is not created by looking. */
	if (!engine_shard_exists(run, shard))
		return 0;
	rc = engine_shard(run, shard, &backend, err);
	if (rc != 0 || !backend_supports(backend, RS_CAP_MARKERS))
		return rc;
	return await_markers(&run->loop, backend, markers, n, err);
}

const char *
marker_advice(const struct rs_plan *plan, const struct rs_marker *m)
{
	if (strcmp(m->plan, plan->name) != 0)
		return "Finish or abort it with its own plan first";
	return marker_past_publish(m)
	               ? "Its new routing is live: the run can only go "
	                 "forward, with its journal; restore the journal "
	                 "and `reshard run` resumes it"
	               : "Restore the journal and `reshard run` resumes it, "
	                 "or `reshard abort PLAN` releases its fence from "
	                 "the shard markers (nothing was published yet)";
}

/* Refuse because of marker M found on SHARD. */
static int
marker_refuse(struct rs_run *run, int shard, const struct rs_marker *m,
              struct rs_err *err)
{
	const struct rs_plan *plan = run->plan;
	char epoch[48] = "";

	if (marker_past_publish(m))
		snprintf(epoch, sizeof(epoch), " at epoch %lld",
		         (long long)m->epoch);
	if (strcmp(m->plan, plan->name) != 0)
		return rs_err_set(
			err, RS_EUSAGE,
			"shard %s carries the marker of run %s of another "
			"plan, "
			"\"%s\", in state %s%s (since %s UTC): that run has "
			"not "
			"ended.  %s; nothing was done",
			plan->shards[shard].name, m->run_id, m->plan, m->state,
			epoch, m->updated_at, marker_advice(plan, m));
	return rs_err_set(
		err, RS_EUSAGE,
		"shard %s carries the marker of run %s of plan \"%s\" in state "
		"%s%s (since %s UTC), but journal %s is not that run's: its "
		"journal was lost, moved or replaced.  Starting over could "
		"copy stale rows over live ones, so nothing was done.  %s",
		plan->shards[shard].name, m->run_id, m->plan, m->state, epoch,
		m->updated_at, plan->journal, marker_advice(plan, m));
}

int
marker_check_shard(struct rs_run *run, int shard, struct rs_err *err)
{
	struct rs_marker *markers;
	int n, rc = marker_read(run, shard, &markers, &n, err);

	for (int i = 0; rc == 0 && i < n; i++)
		if (strcmp(markers[i].run_id, run->run_id) != 0 &&
		    !marker_ended(markers[i].state))
			rc = marker_refuse(run, shard, &markers[i], err);
	free(markers);
	return rc;
}

/* The run and plan that published the routing file at PATH, into RUN_ID
 * and PLAN ("" when there is no file or it does not say). */
static void
marker_routing_run(const char *path, char *run_id, size_t run_size, char *plan,
                   size_t plan_size, long long *epoch)
{
	config_t cfg;
	const char *value;

	run_id[0] = plan[0] = '\0';
	*epoch = 0;
	config_init(&cfg);
	if (config_read_file(&cfg, path) == CONFIG_TRUE) {
		if (config_lookup_string(&cfg, "run_id", &value) == CONFIG_TRUE)
			snprintf(run_id, run_size, "%s", value);
		if (config_lookup_string(&cfg, "plan", &value) == CONFIG_TRUE)
			snprintf(plan, plan_size, "%s", value);
		config_lookup_int64(&cfg, "epoch", epoch);
	}
	config_destroy(&cfg);
}

void
marker_verdict_start(const struct rs_plan *plan, const char *run_id,
                     int published, struct marker_verdict *v)
{
	memset(v, 0, sizeof(*v));
	v->run_id = run_id;
	v->published = published;
	v->behind_shard = -1;
	marker_routing_run(plan->publish_file, v->routed_run,
	                   sizeof(v->routed_run), v->routed_plan,
	                   sizeof(v->routed_plan), &v->epoch);
}

void
marker_verdict_note(const struct rs_plan *plan, struct marker_verdict *v,
                    int shard, const struct rs_marker *m)
{
	/* Done; or its marker replaced by this run's (a shard keeps one a
	 * plan name, and this run is a later one of the same name): this
	 * run marked a shard only after the guard had passed, when the
	 * routed run was done.  Another run's marker proves nothing: it may
	 * be older than the routed run. */
	if (strcmp(m->run_id, v->routed_run) == 0
	            ? strcmp(m->state, "done") == 0
	            : strcmp(m->run_id, v->run_id) == 0)
		v->routed_done = 1;
	if (strcmp(m->run_id, v->routed_run) == 0 &&
	    strcmp(m->plan, plan->name) == 0 && strcmp(m->state, "done") == 0)
		v->replaced = 1;
	if (v->behind_shard < 0 && strcmp(m->run_id, v->run_id) == 0 &&
	    marker_past_publish(m) && !v->published) {
		v->behind_shard = shard;
		v->behind = *m;
	}
}

int
marker_verdict_refusal(const struct rs_plan *plan,
                       const struct marker_verdict *v, struct rs_err *err)
{
	if (v->behind_shard >= 0)
		return rs_err_set(
			err, RS_EUSAGE,
			"shard %s says run %s is %s at epoch %lld, but journal "
			"%s has not begun publish: the journal lost its latest "
			"writes (a -wal file removed, an older copy "
			"restored?).  Going on from it would repeat steps over "
			"live data, and abort would undo live shards, so "
			"nothing was done; restore the complete journal and "
			"`reshard run` resumes",
			plan->shards[v->behind_shard].name, v->behind.run_id,
			v->behind.state, (long long)v->behind.epoch,
			plan->journal);
	if (v->routed_run[0] != '\0' && strcmp(v->routed_run, v->run_id) != 0 &&
	    !v->routed_done)
		return rs_err_set(
			err, RS_EUSAGE,
			"routing file %s holds epoch %lld, published by run %s "
			"of plan \"%s\", and no shard says that run is done, "
			"but journal %s is not that run's: its journal was "
			"lost, moved or replaced.  Its routing is live, so "
			"the run can only go forward with its journal; "
			"restore it and `reshard run` resumes.  Nothing was "
			"done",
			plan->publish_file, v->epoch, v->routed_run,
			v->routed_plan, plan->journal);
	return 0;
}

int
marker_past_publish(const struct rs_marker *m)
{
	/* Before publish a run's markers say "copying" (a split), "fenced"
	 * or "aborted"; any other state, even one a later version adds, is
	 * taken as past it, the side that refuses more. */
	return strcmp(m->state, "copying") != 0 &&
	       strcmp(m->state, "fenced") != 0 &&
	       strcmp(m->state, "aborted") != 0;
}

void
marker_replaced_by_routing(struct rs_run *run)
{
	char routed_run[40], routed_plan[128];
	long long epoch;

	marker_routing_run(run->plan->publish_file, routed_run,
	                   sizeof(routed_run), routed_plan, sizeof(routed_plan),
	                   &epoch);
	if (routed_run[0] == '\0' || strcmp(routed_run, run->run_id) == 0 ||
	    strcmp(routed_plan, run->plan->name) != 0)
		return;
	snprintf(run->replaced_run, sizeof(run->replaced_run), "%s",
	         routed_run);
	run->replaced_epoch = epoch;
}

int
marker_guard(struct rs_run *run, int published, struct rs_err *err)
{
	const struct rs_plan *plan = run->plan;
	struct marker_verdict v;
	int rc = 0;

	marker_verdict_start(plan, run->run_id, published, &v);
	for (int s = 0; s < plan->n_shards && rc == 0; s++) {
		struct rs_marker *markers;
		int n;

		rc = marker_read(run, s, &markers, &n, err);
		for (int i = 0; rc == 0 && i < n; i++) {
			marker_verdict_note(plan, &v, s, &markers[i]);
			if (strcmp(markers[i].run_id, run->run_id) != 0 &&
			    !marker_ended(markers[i].state))
				rc = marker_refuse(run, s, &markers[i], err);
		}
		free(markers);
	}
	if (rc == 0)
		rc = marker_verdict_refusal(plan, &v, err);
	if (rc == 0 && v.replaced && strcmp(v.routed_run, run->run_id) != 0 &&
	    run->replaced_run[0] == '\0') {
		char fact[64];

		snprintf(fact, sizeof(fact), "%s %lld", v.routed_run, v.epoch);
		rc = journal_fact_set(run->journal, "replaced_run", fact, err);
		snprintf(run->replaced_run, sizeof(run->replaced_run), "%s",
		         v.routed_run);
		run->replaced_epoch = v.epoch;
	}
	return rc;
}

/* Task S of marker_set_all: mark shard S (one that exists). */
static int
marker_set_one(struct rs_run *run, int s, void *arg, struct rs_err *err)
{
	struct rs_backend *backend;
	int rc;

	if (!engine_shard_exists(run, s) || !engine_touches(run, s))
		return 0;
	rc = engine_shard(run, s, &backend, err);
	if (rc != 0 || !backend_supports(backend, RS_CAP_MARKERS))
		return rc;
	return await_mark(&run->loop, backend, arg, err);
}

/* Write marker M on every shard of the plan that exists and keeps
 * markers. */
static int
marker_set_each(struct rs_run *run, struct rs_marker *m, struct rs_err *err)
{
	struct rs_streams_spec spec = {
		.n = run->plan->n_shards,
		.parallel = run->plan->n_shards,
		.task = marker_set_one,
		.arg = m,
	};

	return streams_run(run, &spec, err);
}

int
marker_set_all(struct rs_run *run, const char *state, int64_t epoch,
               struct rs_err *err)
{
	struct rs_marker m;

	marker_fill(run, state, epoch, &m);
	return marker_set_each(run, &m, err);
}

int
marker_set_aborted(struct rs_run *run, struct rs_err *err)
{
	struct rs_marker m;

	marker_fill_aborted(run, &m);
	return marker_set_each(run, &m, err);
}
