/*
 * The demo: two SQLite shards of orders (one customer much hotter than the
 * rest), a plan that doubles them to four by promoting replicas that
 * reshard makes itself, then the dry-run, the run and the status — the
 * same code paths an operator uses, on files in DIR.
 *
 * The shards are written through the backend interface like any shard:
 * the files start empty (an empty file is a valid SQLite database) and
 * rows go in with upserts, each on the shard and slot table that owns it.
 */
#include "demo/demo.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dryrun/dryrun.h"
#include "engine/await.h"
#include "engine/engine.h"
#include "strategy/strategy.h"

#define DEMO_TABLES   4 /* slot tables per shard */
#define DEMO_BATCH    5000
#define DEMO_ROW_TEXT 128 /* bytes of text per row */

static const char demo_plan[] =
	"# A planned doubling: two SQLite shards become four by promoting a\n"
	"# replica of each (reshard makes SQLite replicas itself with the\n"
	"# online backup API).  Slot maps keep every table index, so a key of\n"
	"# database i stays in i or moves to i + 2.  Written by reshard demo.\n"
	"version = 1;\n"
	"name = \"demo-2x\";\n"
	"hash = \"sha256_64\";\n"
	"tables = ( { name = \"orders\"; key = \"customer_id\"; } );\n"
	"shards = (\n"
	"  { name = \"db0\"; url = \"sqlite://%s/db0.db\"; replica = \"db2\"; "
	"},\n"
	"  { name = \"db1\"; url = \"sqlite://%s/db1.db\"; replica = \"db3\"; "
	"},\n"
	"  { name = \"db2\"; url = \"sqlite://%s/db2.db\"; },\n"
	"  { name = \"db3\"; url = \"sqlite://%s/db3.db\"; }\n"
	");\n"
	"from = { map = \"slots\"; databases = 2; tables_per_db = 4; "
	"nodes = [\"db0\", \"db1\"]; };\n"
	"to   = { map = \"slots\"; databases = 4; tables_per_db = 4; "
	"nodes = [\"db0\", \"db1\", \"db2\", \"db3\"]; };\n"
	"strategy = \"doubling\";\n"
	"options = { batch_rows = 5000; };\n"
	"publish = { file = \"routing.cfg\"; "
	"command = \"echo routing epoch $RESHARD_EPOCH is live\"; };\n";

/* Every file the demo writes in its folder. */
static const char *const demo_files[] = {
	"demo.cfg",
	"db0.db",
	"db1.db",
	"db2.db",
	"db3.db",
	"db0.db-journal",
	"db1.db-journal",
	"db2.db-journal",
	"db3.db-journal",
	"demo-2x.journal",
	"demo-2x.journal-wal",
	"demo-2x.journal-shm",
	"routing.cfg",
};

/* Rows waiting for one (shard, slot table). */
struct demo_table {
	struct rs_table_def *def;
	struct rs_value *values; /* DEMO_BATCH × 4 */
	char *text;              /* DEMO_BATCH × DEMO_ROW_TEXT */
	int n;
};

struct demo {
	uv_loop_t loop;
	const struct rs_plan *plan;
	struct rs_backend *shards[2];
	struct demo_table tables[2][DEMO_TABLES];
};

static int
demo_flush(struct demo *d, int shard, int slot, struct rs_err *err)
{
	struct demo_table *t = &d->tables[shard][slot];
	struct rs_rows rows = {t->n, 4, t->values};
	int rc = 0;

	if (t->n > 0)
		rc = await_upsert(&d->loop, d->shards[shard], t->def, &rows,
		                  err);
	t->n = 0;
	return rc;
}

/* Put one order on the shard and table that own it under `from`. */
static int
demo_add(struct demo *d, long id, const char *customer, long cents, int day,
         struct rs_err *err)
{
	uint64_t point = hash_sha256_64(customer, strlen(customer));
	struct rs_owner owner = map_owner_key(d->plan->from, customer,
	                                      strlen(customer), point, NULL);
	struct demo_table *t = &d->tables[owner.shard][owner.table];
	char *text = t->text + (size_t)t->n * DEMO_ROW_TEXT;
	struct rs_value *v = t->values + (size_t)t->n * 4;
	int a, b, c, e;

	/* Four fields of 32 bytes: id, customer, amount, date. */
	a = snprintf(text, 32, "%ld", id);
	b = snprintf(text + 32, 32, "%s", customer);
	c = snprintf(text + 64, 32, "%ld.%02ld", cents / 100, cents % 100);
	e = snprintf(text + 96, 32, "2026-%02d-%02d", 1 + day / 28 % 12,
	             1 + day % 28);
	v[0] = (struct rs_value){text, (size_t)a};
	v[1] = (struct rs_value){text + 32, (size_t)b};
	v[2] = (struct rs_value){text + 64, (size_t)c};
	v[3] = (struct rs_value){text + 96, (size_t)e};
	if (++t->n == DEMO_BATCH)
		return demo_flush(d, owner.shard, owner.table, err);
	return 0;
}

static int
demo_make_shards(struct demo *d, int rows, struct rs_err *err)
{
	char sql[512], physical[64];
	unsigned long long seed = 42;
	int rc = 0;

	for (int s = 0; s < 2 && rc == 0; s++) {
		struct rs_backend_config config =
			engine_shard_config(d->plan, s);

		rc = backend_new(&d->loop, &config, &d->shards[s], err);
		if (rc == 0)
			rc = backend_create(d->shards[s], err);
		if (rc != 0)
			return rc;
		rc = await_connect(&d->loop, d->shards[s], err);
		for (int slot = 0; slot < DEMO_TABLES && rc == 0; slot++) {
			struct demo_table *t = &d->tables[s][slot];

			engine_physical(d->plan->from, "orders", slot, physical,
			                sizeof(physical));
			snprintf(sql, sizeof(sql),
			         "CREATE TABLE %s (id INTEGER PRIMARY KEY, "
			         "customer_id TEXT NOT NULL, amount "
			         "DECIMAL(12,2) NOT NULL, ordered_on DATE NOT "
			         "NULL)",
			         physical);
			rc = await_exec(&d->loop, d->shards[s], sql, err);
			if (rc == 0)
				rc = await_describe(&d->loop, d->shards[s],
				                    physical, &t->def, err);
			t->values = malloc(sizeof(struct rs_value) *
			                   DEMO_BATCH * 4);
			t->text = malloc((size_t)DEMO_BATCH * DEMO_ROW_TEXT);
			if (rc == 0 && (t->values == NULL || t->text == NULL))
				rc = rs_err_set(err, RS_ENOMEM,
				                "out of memory");
		}
	}
	/* Customers drawn with a skew (small ids are busier), one of them
	 * (customer-1001) placing 3% of all orders. */
	for (long id = 1; id <= rows && rc == 0; id++) {
		char customer[24];
		long who;

		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		if ((seed >> 33) % 100 < 3)
			who = 1001;
		else
			who = (long)(((seed >> 20) % 1000) *
			             ((seed >> 40) % 60));
		snprintf(customer, sizeof(customer), "customer-%ld", who);
		rc = demo_add(d, id, customer, (long)((seed >> 11) % 50000),
		              (int)((seed >> 5) % 336), err);
	}
	for (int s = 0; s < 2 && rc == 0; s++)
		for (int slot = 0; slot < DEMO_TABLES && rc == 0; slot++)
			rc = demo_flush(d, s, slot, err);
	return rc;
}

static void
demo_free(struct demo *d)
{
	struct rs_err err = {0};

	for (int s = 0; s < 2; s++) {
		for (int slot = 0; slot < DEMO_TABLES; slot++) {
			backend_table_free(d->tables[s][slot].def);
			free(d->tables[s][slot].values);
			free(d->tables[s][slot].text);
		}
		await_close(&d->loop, d->shards[s]);
	}
	if (await_loop_close(&d->loop, &err) != 0)
		fprintf(stderr, "reshard: %s\n", err.message);
}

int
demo_run(const char *dir_arg, int rows, struct rs_err *err)
{
	char dir[4096], path[4200];
	struct rs_plan_diags diags;
	struct rs_plan *plan = NULL;
	struct rs_dryrun_options dry = {.summary_only = 1};
	struct rs_run_options run = {.yes = 1};
	struct demo d = {0};
	struct stat st;
	FILE *f;
	int rc;

	if (mkdir(dir_arg, 0755) != 0 && errno != EEXIST)
		return rs_err_set(err, RS_EIO, "cannot create %s: %s", dir_arg,
		                  strerror(errno));
	if (realpath(dir_arg, dir) == NULL)
		return rs_err_set(err, RS_EIO, "cannot resolve %s: %s", dir_arg,
		                  strerror(errno));
	/* Never overwrite an operator's file: refuse a folder holding any
	 * file the demo would write. */
	for (size_t i = 0; i < sizeof(demo_files) / sizeof(*demo_files); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, demo_files[i]);
		if (lstat(path, &st) == 0)
			return rs_err_set(
				err, RS_EUSAGE,
				"%s already holds %s, which the demo would "
				"write; give an empty or new folder (nothing "
				"was changed)",
				dir, demo_files[i]);
	}
	snprintf(path, sizeof(path), "%s/demo.cfg", dir);
	f = fopen(path, "wx");
	if (f == NULL)
		return rs_err_set(err, RS_EIO, "cannot write %s: %s", path,
		                  strerror(errno));
	fprintf(f, demo_plan, dir, dir, dir, dir);
	fclose(f);
	rc = plan_load(path, &plan, &diags, err);
	plan_diags_clear(&diags);
	if (rc != 0)
		return rc;

	printf("== making two SQLite shards with %d orders in %s\n", rows, dir);
	fflush(stdout);
	rc = await_loop_init(&d.loop, err);
	if (rc != 0)
		return rc;
	d.plan = plan;
	rc = demo_make_shards(&d, rows, err);
	demo_free(&d);
	if (rc == 0) {
		printf("\n== reshard dry-run %s --summary --top 3\n", path);
		fflush(stdout);
		dry.top = 3;
		dry.progress = 0;
		rc = dryrun_run_live(plan, &dry, stdout, stderr, err);
	}
	if (rc == 0) {
		printf("\n== reshard run %s --yes\n", path);
		fflush(stdout);
		rc = engine_run(plan, strategy_for(plan), &run, err);
	}
	if (rc == 0) {
		printf("\n== reshard status %s\n", path);
		fflush(stdout);
		rc = engine_status(plan, strategy_for(plan), 0, stdout, err);
	}
	plan_free(plan);
	return rc;
}
