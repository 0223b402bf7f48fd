/*
 * Target tables reshard makes (options.create_tables): a split's target
 * that lacks a table of `to` gets it from that table's definition on the
 * first source, when both are the same engine (backend_table_sql: columns,
 * primary key, checks and unique indexes first, the other secondary
 * indexes once the copy is in).
 *
 * Who does what, in run order:
 *   preflight  steps_create_check: the table can be made there (same
 *              engine, a definition reshard can make again); says what
 *              will be made and what is left out.  Changes nothing.
 *   capture    steps_create_tables: on each target, after its marker,
 *              the missing tables are made; a table whose movers all come
 *              from one source table gets its unique indexes (other than
 *              the primary key) at once.  The journal records each
 *              ("made:SHARD:TABLE", its DROP statement) before its
 *              CREATE, so that a crash in between is resumed (made then)
 *              and abort knows which tables are the run's own; a table
 *              the journal says the run made gets those unique indexes
 *              again, in case the crash came before them.
 *   copy       steps_create_indexes: once every chunk is in, the
 *              secondary indexes of the tables made but the unique ones.
 *   catch-up   steps_create_uniques: once the change log is replayed, the
 *              unique indexes (those made with the table are skipped:
 *              every index statement does nothing where its index is
 *              there; a run begun by an older release, which left them
 *              all for after the copy, gets them here).
 *
 * Why the unique indexes of a one-source table come first: the copy
 * reads its chunks at different moments, so a target can hold a stale
 * copy of a row whose source has since given a unique value up to a row
 * copied later, until catch-up copies it again.  An index built after the
 * copy fails on that pair, and fails again on every resume (the copy's
 * chunks are done, the stale row stays).  With the index there from the
 * start, the copy's write of the later row deletes the stale copy first
 * (movers_make_room), as it does on a target table that had the index
 * before the run.  Where rows of several sources meet, a clash may be two
 * right rows, which nothing may delete; there the index comes once
 * catch-up has replayed the change log, so that a stale copy is fixed
 * first, and a build that fails on two right rows names the value; once
 * they are set right on the sources, `run` resumes catch-up, which copies
 * the change and builds the index again (with it in place during the
 * copy, MariaDB's upsert would update the other source's row instead of
 * failing).
 *   abort      steps_create_undo: after the copied rows are deleted, each
 *              table the run made is dropped, if it is empty (a table
 *              holding rows is kept and named: something else wrote
 *              there).  Without a journal nothing is known to be the
 *              run's, and nothing is dropped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "journal/journal.h"
#include "steps/steps.h"

/* The journal's name for a table made on SHARD. */
static void
create_fact(const struct rs_run *run, int shard, const char *physical,
            char *buf, size_t size)
{
	snprintf(buf, size, "made:%s:%s", run->plan->shards[shard].name,
	         physical);
}

/* Whether the run made PHYSICAL on SHARD (1, its DROP statement into
 * DROP), not (0), or the journal's error (ERR filled): a table the run
 * cannot tell it made is not touched. */
static int
create_made(const struct rs_run *run, int shard, const char *physical,
            char *drop, size_t size, struct rs_err *err)
{
	char fact[400];

	if (run->journal == NULL)
		return 0;
	create_fact(run, shard, physical, fact, sizeof(fact));
	return journal_fact_get(run->journal, fact, drop, size, err);
}

/* Where a target's table comes from: the first shard of `from` and its
 * name there of logical TABLE (slot 0). */
static int
create_source(const struct rs_run *run, int table, char *name, size_t size)
{
	int shards[RS_PLAN_MAX_SHARDS];

	steps_map_shards(run->plan->from, shards);
	engine_physical(run->plan->from, run->plan->tables[table].name, 0, name,
	                size);
	return shards[0];
}

/* The statements that make PHYSICAL on SHARD like logical TABLE on the
 * first source: *SQL the caller's.  RS_EUSAGE when the engines differ. */
static int
create_sql(struct rs_run *run, int shard, int table, const char *physical,
           struct rs_table_sql **sql, struct rs_err *err)
{
	char theirs[RS_PLAN_MAX_NAME + 1];
	int source = create_source(run, table, theirs, sizeof(theirs));
	struct rs_backend *src, *dst;
	int rc = engine_shard(run, source, &src, err);

	*sql = NULL;
	if (rc == 0)
		rc = engine_shard(run, shard, &dst, err);
	if (rc != 0)
		return rc;
	if (strcmp(backend_engine(src), backend_engine(dst)) != 0 ||
	    !backend_supports(src, RS_CAP_CREATE_TABLE))
		return backend_fail(
			dst, err, RS_EUSAGE,
			"table %s is missing on %s, a target of the copy, and "
			"reshard makes a table only from a source of the same "
			"engine (%s is %s, %s is %s): create it with the "
			"columns and primary key of %s; nothing was changed",
			physical, run->plan->shards[shard].name,
			run->plan->shards[source].name, backend_engine(src),
			run->plan->shards[shard].name, backend_engine(dst),
			theirs);
	return await_table_sql(&run->loop, src, theirs, physical, sql, err);
}

int
steps_create_check(struct rs_run *run, int shard, int table, int slot,
                   const char *physical, struct rs_err *err)
{
	struct rs_table_sql *sql;
	int rc = create_sql(run, shard, table, physical, &sql, err);
	int early, late;

	if (rc == RS_ESCHEMA) {
		struct rs_err why = *err;

		rs_err_set(err, RS_ESCHEMA,
		           "%s; so %s cannot be made on %s: create it there "
		           "yourself",
		           why.message, physical,
		           run->plan->shards[shard].name);
	}
	if (rc != 0)
		return rc;
	early = steps_sole_source(run, shard, slot) ? sql->n_uniques : 0;
	late = sql->n_indexes + sql->n_uniques - early;
	fprintf(stderr, "  %s: table %s will be made in capture",
	        run->plan->shards[shard].name, physical);
	if (early > 0)
		fprintf(stderr, " with %d unique index%s", early,
		        early == 1 ? "" : "es");
	fprintf(stderr, ", and %d secondary index%s after the copy\n", late,
	        late == 1 ? "" : "es");
	for (int i = 0; i < sql->n_left_out; i++)
		fprintf(stderr, "    left out of %s: %s\n", physical,
		        sql->left_out[i]);
	backend_table_sql_free(sql);
	return 0;
}

/* Run the statements LIST (N) on BACKEND, in order. */
static int
create_exec_all(struct rs_run *run, struct rs_backend *backend,
                char *const *list, int n, struct rs_err *err)
{
	int rc = 0;

	for (int i = 0; rc == 0 && i < n; i++)
		rc = await_exec(&run->loop, backend, list[i], err);
	return rc;
}

/* Make one missing table of a target (the journal first), with its
 * unique indexes; or give a table an earlier attempt made its unique
 * indexes again. */
static int
create_table(struct rs_run *run, int shard, int table, int slot,
             const char *physical, void *arg, struct rs_err *err)
{
	const char *name = run->plan->shards[shard].name;
	const struct rs_table_def *def;
	struct rs_table_sql *sql;
	struct rs_backend *backend;
	char fact[400];
	int rc = engine_shard(run, shard, &backend, err);
	int made = rc == 0 ? create_made(run, shard, physical, fact,
	                                 sizeof(fact), err)
	                   : rc;
	int exists, early;

	(void)arg;
	if (made < 0)
		return made;
	rc = engine_table(run, shard, physical, &def, err);
	if (rc != 0 && rc != RS_ESCHEMA)
		return rc;
	exists = rc == 0;
	if (exists && !made)
		return 0; /* there before the run */
	rc = create_sql(run, shard, table, physical, &sql, err);
	if (rc != 0)
		return rc;
	create_fact(run, shard, physical, fact, sizeof(fact));
	if (!made && run->journal != NULL)
		rc = journal_fact_set(run->journal, fact, sql->drop, err);
	if (rc == 0 && !exists)
		rc = await_exec(&run->loop, backend, sql->create, err);
	/* A table of several sources: its unique indexes after the copy
	 * (above). */
	early = steps_sole_source(run, shard, slot) ? sql->n_uniques : 0;
	if (rc == 0)
		rc = create_exec_all(run, backend, sql->uniques, early, err);
	/* Described before its unique indexes (preflight, a resumed run):
	 * the copy's writes must see them. */
	engine_table_forget(run, shard, physical);
	if (rc == 0 && !exists && early > 0)
		fprintf(stderr, "  %s: table %s made, with %d unique index%s\n",
		        name, physical, early, early == 1 ? "" : "es");
	else if (rc == 0 && !exists)
		fprintf(stderr, "  %s: table %s made\n", name, physical);
	backend_table_sql_free(sql);
	return rc;
}

int
steps_create_tables(struct rs_run *run, int shard, struct rs_err *err)
{
	if (!run->plan->options.create_tables)
		return 0;
	return steps_each_table(run, run->plan->to, shard, create_table, NULL,
	                        err);
}

/* The secondary indexes of one table the run made: with *UNIQUES 0 the
 * others (after the copy), else the unique ones (after catch-up). */
static int
create_index_table(struct rs_run *run, int shard, int table, int slot,
                   const char *physical, void *arg, struct rs_err *err)
{
	const int *uniques = arg;
	struct rs_table_sql *sql;
	struct rs_backend *backend;
	char drop[400];
	int rc, n;

	rc = create_made(run, shard, physical, drop, sizeof(drop), err);
	if (rc <= 0)
		return rc;
	rc = create_sql(run, shard, table, physical, &sql, err);
	if (rc != 0)
		return rc;
	rc = engine_shard(run, shard, &backend, err);
	if (rc == 0)
		rc = *uniques ? create_exec_all(run, backend, sql->uniques,
		                                sql->n_uniques, err)
		              : create_exec_all(run, backend, sql->indexes,
		                                sql->n_indexes, err);
	/* Those made with the table are there already: not counted. */
	n = !*uniques                             ? sql->n_indexes
	    : steps_sole_source(run, shard, slot) ? 0
	                                          : sql->n_uniques;
	if (rc == 0 && n > 0)
		fprintf(stderr, "  %s: table %s: %d %sindex%s made\n",
		        run->plan->shards[shard].name, physical, n,
		        *uniques ? "unique " : "secondary ",
		        n == 1 ? "" : "es");
	/* The copy's writes from here on must see them. */
	if (rc == 0 && *uniques && n > 0)
		engine_table_forget(run, shard, physical);
	backend_table_sql_free(sql);
	return rc;
}

static int
create_index_shard(struct rs_run *run, int shard, void *arg, struct rs_err *err)
{
	if (!steps_is_target(run->plan, shard))
		return 0;
	return steps_each_table(run, run->plan->to, shard, create_index_table,
	                        arg, err);
}

/* create_index_table on every table the run made, UNIQUES as there. */
static int
create_indexes(struct rs_run *run, int uniques, struct rs_err *err)
{
	if (run->journal == NULL)
		return 0;
	return steps_each_shard(run, run->plan->to, create_index_shard,
	                        &uniques, err);
}

int
steps_create_indexes(struct rs_run *run, struct rs_err *err)
{
	return create_indexes(run, 0, err);
}

int
steps_create_uniques(struct rs_run *run, struct rs_err *err)
{
	return create_indexes(run, 1, err);
}

/* Drop one table the run made, if it is empty. */
static int
create_drop_table(struct rs_run *run, int shard, int table, int slot,
                  const char *physical, void *arg, struct rs_err *err)
{
	const char *name = run->plan->shards[shard].name;
	const struct rs_table_def *def;
	struct rs_backend *backend;
	char drop[400], fact[400];
	int64_t rows = 0;
	int rc;

	(void)table;
	(void)slot;
	(void)arg;
	rc = create_made(run, shard, physical, drop, sizeof(drop), err);
	if (rc <= 0)
		return rc;
	rc = engine_shard(run, shard, &backend, err);
	if (rc == 0)
		rc = engine_table(run, shard, physical, &def, err);
	if (rc == 0)
		rc = await_count(&run->loop, backend, physical, &rows, err);
	if (rc == 0 && rows > 0) {
		fprintf(stderr,
		        "  %s: table %s, made by this run, holds %lld rows "
		        "it did not copy: kept\n",
		        name, physical, (long long)rows);
		return 0;
	}
	if (rc == 0)
		rc = await_exec(&run->loop, backend, drop, err);
	if (rc == RS_ESCHEMA) /* never made, or dropped already */
		rc = 0;
	create_fact(run, shard, physical, fact, sizeof(fact));
	if (rc == 0)
		rc = journal_fact_delete(run->journal, fact, err);
	if (rc == 0)
		fprintf(stderr, "  %s: table %s, made by this run, dropped\n",
		        name, physical);
	return rc;
}

int
steps_create_undo(struct rs_run *run, int shard, struct rs_err *err)
{
	if (run->journal == NULL || !engine_shard_exists(run, shard))
		return 0;
	return steps_each_table(run, run->plan->to, shard, create_drop_table,
	                        NULL, err);
}
