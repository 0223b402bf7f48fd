/*
 * final-check: no shard holds a row it does not own under the new map, and
 * no row is missing.
 *
 * Applications write throughout the run, so the total changes; it is
 * reported, and a difference is an error only when no write can explain
 * it: fewer rows than were counted when the delete logs began, less the
 * deletes they recorded since.  The logs began in pre-verify, before its
 * walk read every source row (the walk's chunks in the journal give the
 * count; a row deleted after the logs began and before its chunk was read
 * is both uncounted and logged, which can only make the check more
 * lenient); publish emptied the new owners' logs only (their entries
 * before it were reshard's own replay), so the sources' hold every delete
 * since the count and the new owners' every one since publish, when rows
 * first could be deleted there.  Only the shards the run touches have
 * logs: the others neither give nor take rows, and are left out of the
 * sum.  When pre-verify could not run, the logs began in publish and the
 * count is preflight's, over every shard: deletes made in between are not
 * known, a limit the documentation states.
 *
 * The logs are counted after the walk, while they still run, and end
 * only once the check has passed (purge is done): an attempt that fails
 * (rows purge kept, say) leaves them recording, and the next attempt
 * counts again.  The shards' markers say "done" when the check passes.
 * Rows purge kept stay misplaced, so the step fails naming them until
 * they are dealt with; run again, it checks again.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"
#include "engine/walk.h"
#include "engine/marker.h"
#include "steps/steps.h"

struct final_count {
	int64_t rows;    /* over every shard */
	int64_t touched; /* over the shards the run touches */
	int64_t misplaced;
};

static int
final_chunk(struct rs_walk *walk, const struct rs_rowbuf *rows,
            const struct rs_value *after, const struct rs_value *upto,
            int64_t *affected, uint64_t *checksum, struct rs_err *err)
{
	struct final_count *count = walk->arg;
	struct rs_owner *owners;
	int rc = steps_owners(walk, rows, &owners, err);

	(void)after;
	(void)upto;
	(void)checksum;
	*affected = 0;
	if (rc != 0)
		return rc;
	for (int r = 0; r < rows->n_rows; r++) {
		const struct rs_value *row = rowbuf_row(rows, r);
		struct rs_owner owner = owners[r];

		if (owner.shard == walk->shard && owner.table == walk->slot)
			continue;
		if (++count->misplaced <= 10) {
			char shown[TEXT_KEY_SHOWN_SIZE];

			walk_describe_row(walk, row, shown, sizeof(shown));
			fprintf(stderr, "  %s on %s: %s belongs to %s\n",
			        walk->physical,
			        walk->run->plan->shards[walk->shard].name,
			        shown,
			        walk->run->plan->shards[owner.shard].name);
		}
		(*affected)++;
	}
	free(owners);
	count->rows += rows->n_rows;
	if (engine_touches(walk->run, walk->shard))
		count->touched += rows->n_rows;
	return 0;
}

/* The delete logs' entries (the applications' deletes: purge's own are
 * not logged) are counted while the logs still run, after the walk (a
 * row deleted during the walk is then missing from the count and in a
 * log, which can only make the check more lenient); once the check has
 * passed they are removed, purge being done. */
struct log_count {
	int64_t rows;
	int remove; /* 0: count, 1: remove */
};

static int
final_delete_log(struct rs_run *run, int shard, int table, int slot,
                 const char *physical, void *arg, struct rs_err *err)
{
	struct log_count *count = arg;
	struct rs_backend *backend;
	const struct rs_table_def *def;
	char log[300];
	int64_t n = 0;
	int rc = engine_shard(run, shard, &backend, err);

	(void)table;
	(void)slot;
	if (rc != 0 || !backend_supports(backend, RS_CAP_DELETE_LOG))
		return rc;
	rc = engine_table(run, shard, physical, &def, err);
	if (rc != 0)
		return rc;
	if (count->remove)
		return await_delete_log(&run->loop, backend, def, 0, err);
	backend_delete_log_name(physical, log, sizeof(log));
	rc = await_count(&run->loop, backend, log, &n, err);
	if (rc == RS_ESCHEMA)
		return 0; /* no log: nothing deleted was recorded */
	count->rows += n;
	return rc;
}

/* Count (or remove) the delete logs of SHARD's tables under `to`. */
static int
final_delete_logs(struct rs_run *run, int shard, void *arg, struct rs_err *err)
{
	return steps_each_table(run, run->plan->to, shard, final_delete_log,
	                        arg, err);
}

/* Count (REMOVE 0) or remove (1) the delete logs.  Only the shards the
 * run touches have one; the others are not sent a statement. */
static int
final_app_deletes(struct rs_run *run, int remove, int64_t *deletes,
                  struct rs_err *err)
{
	struct log_count count = {0, remove};
	int rc = steps_each_shard_of(run, run->plan->to, 1, final_delete_logs,
	                             &count, err);

	if (deletes != NULL)
		*deletes = count.rows;
	return rc;
}

/* The row count against the count the delete logs started from (see
 * the top of the file), the logs counted now: RS_EVERIFY when rows are
 * missing that no logged delete explains.  A check that passed once is
 * not made again (fact rows_checked): its logs may be gone. */
static int
final_totals(struct rs_run *run, const struct final_count *count,
             struct rs_err *err)
{
	char value[32], now[32], then[32], done[80];
	const char *since = "pre-verify", *logged = "since";
	int64_t rows = count->touched, before = 0, deletes = 0;
	int rc = journal_fact_get(run->journal, "rows_checked", done,
	                          sizeof(done), err);

	if (rc == 1)
		fprintf(stderr,
		        "  every row on its owner; the row count passed in an "
		        "earlier attempt (now, counted, deleted: %s)\n",
		        done);
	if (rc != 0)
		return rc < 0 ? rc : 0;
	rc = journal_fact_get(run->journal, "pre_verify", value, sizeof(value),
	                      err);
	if (rc < 0)
		return rc;
	if (rc == 1 && strcmp(value, "done") == 0) {
		/* The rows pre-verify's walk read, its delete logs on. */
		rc = journal_step_rows_done(run->journal, "pre-verify", &before,
		                            err);
	} else { /* no pre-verify: the logs began in publish */
		since = "preflight";
		logged = "since publish";
		rows = count->rows;
		rc = journal_fact_get(run->journal, "rows_before", value,
		                      sizeof(value), err);
		if (rc == 0)
			return rs_err_set(
				err, RS_EINTERNAL,
				"the journal has no row count from preflight");
		if (rc == 1) {
			before = strtoll(value, NULL, 10);
			rc = 0;
		}
	}
	if (rc == 0)
		rc = final_app_deletes(run, 0, &deletes, err);
	if (rc != 0)
		return rc;
	text_thousands((uint64_t)rows, now, sizeof(now));
	text_thousands((uint64_t)before, then, sizeof(then));
	if (rows < before - deletes)
		return rs_err_set(
			err, RS_EVERIFY,
			"%s rows now, fewer than "
			"the %s counted in %s less the %lld deleted %s "
			"(the delete logs): rows are missing; investigate "
			"before anything else",
			now, then, since, (long long)deletes, logged);
	fprintf(stderr,
	        "  every row on its owner; %s rows now, %s counted in %s, "
	        "%lld deleted %s\n",
	        now, then, since, (long long)deletes, logged);
	snprintf(done, sizeof(done), "%s %s %lld", now, then,
	         (long long)deletes);
	return journal_fact_set(run->journal, "rows_checked", done, err);
}

static int
final_run(struct rs_run *run, struct rs_err *err)
{
	struct final_count count = {0};
	const struct steps_walk_spec spec = {
		.step = "final-check",
		.no_effect = 1,
		.map = run->plan->to,
		.chunk = final_chunk,
		.copies = 1,
		.restart = 1, /* counts start over in a resumed check */
		.arg = &count,
	};
	char epoch[32] = "0";
	struct rs_kept_row *kept;
	int n_kept;
	int rc = steps_walk_all(run, &spec, err);

	if (rc == 0)
		rc = journal_kept_list(run->journal, &kept, &n_kept, err);
	if (rc != 0)
		return rc;
	journal_kept_free(kept, n_kept);
	if (count.misplaced > 0 && n_kept > 0)
		return rs_err_set(
			err, RS_EVERIFY,
			"%lld rows sit on shards that do not own them (above); "
			"purge kept %d of them because their owner never saw "
			"them (written to the old owner after unfence?), "
			"`reshard status %s` lists them.  Copy each to its "
			"owner or delete it, then `reshard run %s` checks "
			"again; every other row is purged",
			(long long)count.misplaced, n_kept, run->plan->path,
			run->plan->path);
	if (count.misplaced > 0)
		return rs_err_set(
			err, RS_EVERIFY,
			"%lld rows sit on shards that do not own them "
			"(above)",
			(long long)count.misplaced);
	rc = journal_kept_clear(run->journal, err);
	if (rc == 0)
		rc = final_totals(run, &count, err);
	/* The logs end here, the check passed: purge is done. */
	if (rc == 0)
		rc = final_app_deletes(run, 1, NULL, err);
	if (rc == 0)
		rc = journal_fact_get(run->journal, "epoch", epoch,
		                      sizeof(epoch), err);
	if (rc < 0)
		return rc;
	return marker_set_all(run, "done", strtoll(epoch, NULL, 10), err);
}

const struct rs_step_def step_final_check = {
	.name = "final-check",
	.summary = "every row on its owner, no row lost",
	.run = final_run,
};
