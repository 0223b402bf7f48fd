/*
 * catch-up and promote for a doubling: each replica gets everything its
 * primary wrote before the fence, then becomes a primary of its own.
 * SQLite: the replica file is made now, under the fence, with the online
 * backup API (a consistent copy, fence triggers included) — repeating it
 * after a crash makes the same copy again.
 */
#include <stdio.h>

#include "engine/await.h"
#include "steps/steps.h"

static int
catch_up_run(struct rs_run *run, struct rs_err *err)
{
	const struct rs_plan *plan = run->plan;
	int shards[RS_PLAN_MAX_SHARDS];
	int n = steps_map_shards(plan->from, shards);

	for (int i = 0; i < n; i++) {
		int r = plan->shards[shards[i]].replica;
		const struct rs_plan_shard *rs;
		struct rs_backend *primary, *replica = NULL;
		int rc;

		if (r < 0)
			continue;
		rs = &plan->shards[r];
		primary = engine_shard(run, shards[i], err);
		if (primary == NULL)
			return err->code;
		engine_shard_close(run, r); /* its file is about to change */
		struct rs_backend_config config = {
			.shard = rs->name,
			.url = rs->url,
			.password_env = rs->password_env,
			.base_dir = plan->dir,
		};
		rc = backend_new(&run->loop, &config, &replica, err);
		if (rc == 0)
			rc = await_replicate(&run->loop, primary, replica, err);
		await_close(&run->loop, replica);
		if (rc != 0)
			return rc;
		fprintf(stderr, "  %s: replica %s is up to date\n",
		        plan->shards[shards[i]].name, rs->name);
	}
	return 0;
}

static int
promote_run(struct rs_run *run, struct rs_err *err)
{
	const struct rs_plan *plan = run->plan;
	int shards[RS_PLAN_MAX_SHARDS];
	int n = steps_map_shards(plan->from, shards);

	for (int i = 0; i < n; i++) {
		int r = plan->shards[shards[i]].replica;
		struct rs_backend *replica;
		int rc;

		if (r < 0)
			continue;
		replica = engine_shard(run, r, err);
		if (replica == NULL)
			return err->code;
		rc = await_promote(&run->loop, replica, err);
		if (rc != 0)
			return rc;
		fprintf(stderr, "  %s: promoted to a primary\n",
		        plan->shards[r].name);
	}
	return 0;
}

const struct rs_step_def step_catch_up = {
	.name = "catch-up",
	.summary = "bring every replica up to date with its fenced primary",
	.run = catch_up_run,
};

const struct rs_step_def step_promote = {
	.name = "promote",
	.summary = "make every replica a primary of its own",
	.irreversible = 1,
	.run = promote_run,
};
