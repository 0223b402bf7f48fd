/*
 * publish: write the new routing — the `to` map with its epoch, one more
 * than the routing file held before — atomically (a temporary file,
 * fsync, rename, fsync of the folder), then run the plan's hook command
 * with RESHARD_EPOCH set.  The epoch is recorded in the journal before the
 * file is written, so a repeated publish writes the same epoch again.
 */
#include <errno.h>
#include <fcntl.h>
#include <libconfig.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/url.h"
#include "steps/steps.h"

/* The epoch of the routing file at PATH, or 0 when there is none. */
static long long
publish_previous_epoch(const char *path)
{
	config_t cfg;
	long long epoch = 0;

	config_init(&cfg);
	if (config_read_file(&cfg, path) == CONFIG_TRUE)
		config_lookup_int64(&cfg, "epoch", &epoch);
	config_destroy(&cfg);
	return epoch;
}

static void
publish_map(FILE *f, const struct rs_plan *plan)
{
	const struct rs_map_def *def = map_def(plan->to);

	fprintf(f, "map = { map = \"%s\";", map_kind_name(def->kind));
	if (def->kind == RS_MAP_SLOTS)
		fprintf(f,
		        " databases = %d; tables_per_db = %d; "
		        "table_format = \"%s\";",
		        def->databases, def->tables_per_db, def->table_format);
	if (def->kind == RS_MAP_RING)
		fprintf(f, " vnodes = %d;", def->vnodes);
	if (def->n_nodes > 0) {
		fputs(" nodes = [", f);
		for (int i = 0; i < def->n_nodes; i++)
			fprintf(f, "%s\"%s\"", i ? ", " : "",
			        plan->shards[def->nodes[i]].name);
		fputs("];", f);
	}
	if (def->n_ranges > 0) {
		fputs(" ranges = (", f);
		for (int i = 0; i < def->n_ranges; i++)
			fprintf(f, "%s{ end = \"0x%016llx\"; node = \"%s\"; }",
			        i ? ", " : "",
			        (unsigned long long)def->ranges[i].end,
			        plan->shards[def->ranges[i].shard].name);
		fputs(");", f);
	}
	fputs(" };\n", f);
}

/* Write the routing file for EPOCH atomically.  Returns 0 or RS_EIO. */
static int
publish_write(const struct rs_plan *plan, long long epoch, struct rs_err *err)
{
	char tmp[4096], dir[4096];
	time_t now = time(NULL);
	struct tm tm;
	char stamp[32];
	FILE *f;
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", plan->publish_file,
	         (int)getpid());
	f = fopen(tmp, "w");
	if (f == NULL)
		return rs_err_set(err, RS_EIO, "cannot write %s: %s", tmp,
		                  strerror(errno));
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S UTC", &tm);
	fprintf(f, "# Routing published by reshard, run %s, at %s.\n",
	        plan->name, stamp);
	fprintf(f, "epoch = %lldL;\nhash = \"%s\";\n", epoch,
	        hash_name(plan->hash));
	publish_map(f, plan);
	fputs("shards = (\n", f);
	for (int i = 0; i < plan->n_shards; i++) {
		char *masked = url_mask_text(plan->shards[i].url);

		fprintf(f, "  { name = \"%s\"; url = \"%s\"; }%s\n",
		        plan->shards[i].name, masked ? masked : "",
		        i + 1 < plan->n_shards ? "," : "");
		free(masked);
	}
	fputs(");\n", f);
	if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
		fclose(f);
		unlink(tmp);
		return rs_err_set(err, RS_EIO, "cannot write %s: %s", tmp,
		                  strerror(errno));
	}
	fclose(f);
	if (rename(tmp, plan->publish_file) != 0) {
		unlink(tmp);
		return rs_err_set(err, RS_EIO, "cannot replace %s: %s",
		                  plan->publish_file, strerror(errno));
	}
	snprintf(dir, sizeof(dir), "%s", plan->publish_file);
	fd = open(dirname(dir), O_RDONLY | O_DIRECTORY);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	return 0;
}

struct hook {
	int done;
	int64_t status;
	int term_signal;
};

static void
hook_exited(uv_process_t *process, int64_t status, int term_signal)
{
	struct hook *h = process->data;

	h->status = status;
	h->term_signal = term_signal;
	uv_close((uv_handle_t *)process, NULL);
	h->done = 1;
	uv_stop(process->loop);
}

/* Run the hook command with RESHARD_EPOCH set; wait for it. */
static int
publish_hook(struct rs_run *run, long long epoch, struct rs_err *err)
{
	const struct rs_plan *plan = run->plan;
	char env_epoch[64];
	char *args[] = {"/bin/sh", "-c", plan->publish_command, NULL};
	uv_process_options_t options = {0};
	uv_stdio_container_t stdio[3];
	uv_process_t process;
	struct hook h = {0};
	int rc;

	snprintf(env_epoch, sizeof(env_epoch), "%lld", epoch);
	setenv("RESHARD_EPOCH", env_epoch, 1);
	setenv("RESHARD_ROUTING_FILE", plan->publish_file, 1);
	stdio[0].flags = UV_IGNORE;
	stdio[1].flags = UV_INHERIT_FD;
	stdio[1].data.fd = STDERR_FILENO;
	stdio[2].flags = UV_INHERIT_FD;
	stdio[2].data.fd = STDERR_FILENO;
	options.file = args[0];
	options.args = args;
	options.cwd = plan->dir;
	options.stdio = stdio;
	options.stdio_count = 3;
	options.exit_cb = hook_exited;
	process.data = &h;
	rc = uv_spawn(&run->loop, &process, &options);
	if (rc != 0)
		return rs_err_set(err, RS_EIO, "cannot run the hook %s: %s",
		                  plan->publish_command, uv_strerror(rc));
	while (!h.done)
		uv_run(&run->loop, UV_RUN_DEFAULT);
	uv_run(&run->loop, UV_RUN_NOWAIT); /* the close callback */
	if (h.status != 0 || h.term_signal != 0)
		return rs_err_set(
			err, RS_EIO,
			"the hook `%s` failed (exit %lld, signal %d); "
			"routing file %s holds epoch %lld; fix the hook "
			"and run again to repeat it",
			plan->publish_command, (long long)h.status,
			h.term_signal, plan->publish_file, epoch);
	return 0;
}

static int
publish_run(struct rs_run *run, struct rs_err *err)
{
	const struct rs_plan *plan = run->plan;
	char value[32];
	long long epoch;
	int rc;

	rc = journal_fact_get(run->journal, "epoch", value, sizeof(value));
	if (rc < 0)
		return rs_err_set(err, rc,
		                  "cannot read the epoch from the "
		                  "journal %s",
		                  plan->journal);
	if (rc == 1) {
		epoch = strtoll(value, NULL, 10);
	} else {
		epoch = publish_previous_epoch(plan->publish_file) + 1;
		snprintf(value, sizeof(value), "%lld", epoch);
		rc = journal_fact_set(run->journal, "epoch", value, err);
		if (rc != 0)
			return rc;
	}
	rc = publish_write(plan, epoch, err);
	if (rc == 0 && plan->publish_command != NULL)
		rc = publish_hook(run, epoch, err);
	if (rc == 0)
		fprintf(stderr, "  routing epoch %lld published to %s\n", epoch,
		        plan->publish_file);
	return rc;
}

const struct rs_step_def step_publish = {
	.name = "publish",
	.summary = "write the new routing with its epoch; run the hook",
	.run = publish_run,
};
