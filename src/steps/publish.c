/*
 * publish: write the new routing — the `to` map with its epoch, one more
 * than the routing file held before — atomically (a temporary file,
 * fsync, rename, fsync of the folder), then run the plan's hook command
 * with RESHARD_EPOCH set and no secret in its environment.  The epoch is
 * recorded in the journal, and the shards' markers say "published", before
 * the file is written, so a repeated publish writes the same epoch again
 * and a lost journal cannot hide live routing.  Before that too, the
 * delete logs of the new owners' tables are emptied (pre-verify started
 * them; the sources' keep theirs, for final-check) or every log is
 * started: from here on they hold every delete, for purge.
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
#include "engine/marker.h"
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

/* KEY (LEN bytes) as a libconfig string: in double quotes, with \\, \"
 * and control bytes escaped (\xHH). */
static void
publish_string(FILE *f, const char *key, size_t len)
{
	putc('"', f);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)key[i];

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\x%02x", c);
		else
			putc(c, f);
	}
	putc('"', f);
}

/* The keys the map pins, so that routers apply them before the map. */
static void
publish_overrides(FILE *f, const struct rs_plan *plan,
                  const struct rs_map_def *def)
{
	if (def->n_overrides == 0)
		return;
	fputs(" overrides = (", f);
	for (int i = 0; i < def->n_overrides; i++) {
		fputs(i ? ",\n    { key = " : "\n    { key = ", f);
		publish_string(f, def->overrides[i].key, def->overrides[i].len);
		fprintf(f, "; node = \"%s\"; }",
		        plan->shards[def->overrides[i].shard].name);
	}
	fputs(" );", f);
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
	if (def->kind == RS_MAP_LOGICAL) {
		if (def->bits > 0)
			fprintf(f, " shift = %d; bits = %d;", def->shift,
			        def->bits);
		else
			fprintf(f, " logical_shards = %lluL;",
			        (unsigned long long)def->logical_shards);
		fputs(" assign = (", f);
		for (int i = 0; i < def->n_ranges; i++)
			fprintf(f, "%s{ last = %lluL; node = \"%s\"; }",
			        i ? ", " : "",
			        (unsigned long long)def->ranges[i].end,
			        plan->shards[def->ranges[i].shard].name);
		fputs(");", f);
	} else if (def->n_ranges > 0) {
		fputs(" ranges = (", f);
		for (int i = 0; i < def->n_ranges; i++)
			fprintf(f, "%s{ end = \"0x%016llx\"; node = \"%s\"; }",
			        i ? ", " : "",
			        (unsigned long long)def->ranges[i].end,
			        plan->shards[def->ranges[i].shard].name);
		fputs(");", f);
	}
	publish_overrides(f, plan, def);
	fputs(" };\n", f);
}

/* Write the routing file for EPOCH atomically.  Returns 0 or RS_EIO. */
static int
publish_write(const struct rs_run *run, long long epoch, struct rs_err *err)
{
	const struct rs_plan *plan = run->plan;
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
	/* The run and plan let a later run with a lost journal see that
	 * this routing is live (the shard markers say whether it ended). */
	fprintf(f, "epoch = %lldL;\nrun_id = \"%s\";\nplan = \"%s\";\n", epoch,
	        run->run_id, plan->name);
	fprintf(f, "hash = \"%s\";\n", hash_name(plan->hash));
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
	/* The rename is durable only with its folder: purge must never
	 * run on a routing a power cut can take back. */
	snprintf(dir, sizeof(dir), "%s", plan->publish_file);
	fd = open(dirname(dir), O_RDONLY | O_DIRECTORY);
	if (fd < 0 || fsync(fd) != 0) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		snprintf(dir, sizeof(dir), "%s", plan->publish_file);
		return rs_err_set(err, RS_EIO,
		                  "cannot make the rename of %s durable (fsync "
		                  "of its folder %s): %s",
		                  plan->publish_file, dirname(dir),
		                  strerror(e));
	}
	close(fd);
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

/* Whether the environment entry ENTRY ("NAME=value") holds a secret the
 * hook must not see: a variable a shard's password_env names, or one the
 * database clients read passwords from. */
static int
publish_secret(const struct rs_plan *plan, const char *entry)
{
	static const char *const dropped[] = {
		"PGPASSWORD",
		"MYSQL_PWD",
		"MARIADB_PWD",
		/* set by publish_hook_env itself: */
		"RESHARD_EPOCH",
		"RESHARD_ROUTING_FILE",
		"RESHARD_PLAN",
	};
	size_t len = strcspn(entry, "=");

	for (size_t i = 0; i < sizeof(dropped) / sizeof(*dropped); i++)
		if (strlen(dropped[i]) == len &&
		    strncmp(entry, dropped[i], len) == 0)
			return 1;
	for (int i = 0; i < plan->n_shards; i++) {
		const char *name = plan->shards[i].password_env;

		if (name != NULL && strlen(name) == len &&
		    strncmp(entry, name, len) == 0)
			return 1;
	}
	return 0;
}

/* The hook's environment: this process's, less every secret, plus
 * RESHARD_EPOCH, RESHARD_ROUTING_FILE and RESHARD_PLAN (malloc'd array of
 * the entries, the three new ones in ADDED; NULL when out of memory). */
static char **
publish_hook_env(const struct rs_plan *plan, long long epoch,
                 char added[3][4200])
{
	extern char **environ;
	size_t n = 0, at = 0;
	char **env;

	while (environ[n] != NULL)
		n++;
	env = malloc(sizeof(*env) * (n + 4));
	if (env == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!publish_secret(plan, environ[i]))
			env[at++] = environ[i];
	snprintf(added[0], sizeof(added[0]), "RESHARD_EPOCH=%lld", epoch);
	snprintf(added[1], sizeof(added[1]), "RESHARD_ROUTING_FILE=%s",
	         plan->publish_file);
	snprintf(added[2], sizeof(added[2]), "RESHARD_PLAN=%s", plan->name);
	for (int i = 0; i < 3; i++)
		env[at++] = added[i];
	env[at] = NULL;
	return env;
}

/* Run the hook command with RESHARD_EPOCH set and no secret in its
 * environment, in a session of its own; wait for it. */
static int
publish_hook(struct rs_run *run, long long epoch, struct rs_err *err)
{
	const struct rs_plan *plan = run->plan;
	static char added[3][4200];
	char *args[] = {"/bin/sh", "-c", plan->publish_command, NULL};
	char **env = publish_hook_env(plan, epoch, added);
	uv_process_options_t options = {0};
	uv_stdio_container_t stdio[3];
	uv_process_t process;
	struct hook h = {0};
	int rc;

	if (env == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
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
	options.env = env;
	/* A session of its own: a Ctrl-C at the terminal, sent to
	 * reshard's process group, asks reshard to stop and must not kill
	 * the hook halfway (the run stops once it has ended). */
	options.flags = UV_PROCESS_DETACHED;
	options.exit_cb = hook_exited;
	process.data = &h;
	rc = uv_spawn(&run->loop, &process, &options);
	free(env);
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

/* Do OP (RS_DELETE_LOG_…) to the delete log of PHYSICAL on SHARD, where
 * the engine keeps one.  A source table's log is not emptied: purge reads
 * it only for rows the source owned throughout (steps_is_source_table),
 * and what it holds since pre-verify, the deletes the applications made
 * there, final-check counts. */
static int
delete_log_table(struct rs_run *run, int shard, int table, int slot,
                 const char *physical, void *arg, struct rs_err *err)
{
	const int *op = arg;
	struct rs_backend *backend;
	const struct rs_table_def *def;
	int rc;

	(void)table;
	(void)slot;
	if (*op == RS_DELETE_LOG_EMPTY &&
	    steps_is_source_table(run->plan, shard, physical))
		return 0;
	rc = engine_shard(run, shard, &backend, err);
	if (rc != 0 || !backend_supports(backend, RS_CAP_DELETE_LOG))
		return rc;
	rc = engine_table(run, shard, physical, &def, err);
	return rc != 0 ? rc
	               : await_delete_log(&run->loop, backend, def, *op, err);
}

/* OP on the delete logs of SHARD's tables.  A doubling's replica gets
 * its logs from its primary (by replication, or in the copy reshard makes
 * of its file), and loses them with it while it still replicates: it is
 * sent OFF only once promoted, and ON never. */
static int
delete_log_shard(struct rs_run *run, int shard, void *arg, struct rs_err *err)
{
	const int *op = arg;
	int promoted = 0, rc = 0;

	if (*op != RS_DELETE_LOG_EMPTY && run->strategy->promotes_replicas &&
	    plan_primary_of(run->plan, shard) >= 0) {
		if (*op == RS_DELETE_LOG_OFF)
			rc = steps_replica_promoted(run, shard, &promoted, err);
		if (rc != 0 || !promoted)
			return rc;
	}
	return steps_each_table(run, run->plan->to, shard, delete_log_table,
	                        arg, err);
}

int
steps_delete_logs(struct rs_run *run, int op, struct rs_err *err)
{
	return steps_each_shard_of(run, run->plan->to, 1, delete_log_shard, &op,
	                           err);
}

static int
publish_run(struct rs_run *run, struct rs_err *err)
{
	const struct rs_plan *plan = run->plan;
	char value[32];
	long long epoch;
	int rc;

	rc = journal_fact_get(run->journal, "epoch", value, sizeof(value), err);
	if (rc < 0)
		return rc;
	if (rc == 1) { /* a repeated publish: the same epoch */
		epoch = strtoll(value, NULL, 10);
	} else {
		epoch = publish_previous_epoch(plan->publish_file) + 1;
		snprintf(value, sizeof(value), "%lld", epoch);
		rc = journal_fact_set_lazy(run->journal, "epoch", value, err);
		if (rc != 0)
			return rc;
	}
	/* Started before the fence by pre-verify (out of the fenced time:
	 * trigger DDL waits for any lock on the table, an autovacuum's
	 * included), the new owners' logs are emptied now, once, so that
	 * they hold the deletes made from here on only: a repeated publish
	 * must not drop what the applications deleted since the routing
	 * went out.  (The sources' keep theirs, for final-check.)  Else
	 * (pre-verify was skipped) they start now. */
	rc = journal_fact_get(run->journal, "delete_logs", value, sizeof(value),
	                      err);
	if (rc == 0)
		rc = steps_delete_logs(run, RS_DELETE_LOG_ON, err);
	else if (rc == 1 && strcmp(value, "emptied") != 0) {
		rc = steps_delete_logs(run, RS_DELETE_LOG_EMPTY, err);
		if (rc == 0)
			rc = journal_fact_set_lazy(run->journal, "delete_logs",
			                           "emptied", err);
	} else if (rc == 1)
		rc = 0;
	/* The step's begin, the epoch and the emptied logs reach the disk
	 * together, in one write: the writers wait for each one in the
	 * fenced window.  Until here a power cut only makes publish start
	 * over, nothing having gone out (the logs it empties again hold
	 * only the run's own replay); from here the shards learn the
	 * epoch, and a repeated publish keeps it. */
	if (rc == 0)
		rc = journal_sync(run->journal, err);
	/* A crash here: the delete logs emptied, the journal says so, no
	 * shard says "published" yet. */
	if (rc == 0)
		engine_fault("mid-step:publish");
	/* The shards say "published" before the routing file does, so
	 * that no crash leaves live routing that no shard knows of. */
	if (rc == 0)
		rc = marker_set_all(run, "published", epoch, err);
	if (rc == 0)
		rc = publish_write(run, epoch, err);
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
	.no_return = 1,
	.lazy_begin = 1, /* durable, with its facts, before the markers */
	.run = publish_run,
};
