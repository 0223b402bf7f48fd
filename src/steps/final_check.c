/*
 * final-check: no shard holds a row it does not own under the new map, and
 * the rows over all shards are as many as preflight counted before the run.
 *
 * Rows written by applications after unfence change the total; the count
 * is therefore reported, and a difference is an error only when no write
 * can explain it (a total below the count is never explained by inserts:
 * it is reported loudly and fails the step).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/text.h"
#include "engine/walk.h"
#include "steps/steps.h"

struct final_count {
	int64_t rows;
	int64_t misplaced;
};

static int
final_chunk(struct rs_walk *walk, const struct rs_rowbuf *rows,
            const struct rs_value *after, const struct rs_value *upto,
            int64_t *affected, uint64_t *checksum, struct rs_err *err)
{
	struct final_count *count = walk->arg;

	(void)after;
	(void)upto;
	(void)checksum;
	*affected = 0;
	for (int r = 0; r < rows->n_rows; r++) {
		const struct rs_value *row = rowbuf_row(rows, r);
		struct rs_owner owner;
		int rc = walk_owner(walk, walk->run->plan->to,
		                    &row[walk->key_at], &owner, err);

		if (rc != 0)
			return rc;
		if (owner.shard == walk->shard && owner.table == walk->slot)
			continue;
		if (++count->misplaced <= 10) {
			char shown[TEXT_KEY_SHOWN_SIZE];

			fprintf(stderr, "  %s on %s: key %s belongs to %s\n",
			        walk->physical,
			        walk->run->plan->shards[walk->shard].name,
			        text_key_shown(row[walk->key_at].text,
			                       row[walk->key_at].len, shown,
			                       sizeof(shown)),
			        walk->run->plan->shards[owner.shard].name);
		}
		(*affected)++;
	}
	count->rows += rows->n_rows;
	return 0;
}

static int
final_run(struct rs_run *run, struct rs_err *err)
{
	struct final_count count = {0, 0};
	const struct steps_walk_spec spec = {
		.step = "final-check",
		.map = run->plan->to,
		.chunk = final_chunk,
		.copies = 1,
		.restart = 1, /* counts start over in a resumed check */
		.arg = &count,
	};
	char before[32] = "", a[32], b[32];
	int64_t rows_before;
	int rc = steps_walk_all(run, &spec, err);

	if (rc != 0)
		return rc;
	if (count.misplaced > 0)
		return rs_err_set(
			err, RS_EVERIFY,
			"%lld rows sit on shards that do not own them "
			"(keys above)",
			(long long)count.misplaced);
	if (journal_fact_get(run->journal, "rows_before", before,
	                     sizeof(before)) != 1)
		return rs_err_set(
			err, RS_EINTERNAL,
			"the journal has no row count from preflight");
	rows_before = strtoll(before, NULL, 10);
	text_thousands((uint64_t)count.rows, a, sizeof(a));
	text_thousands((uint64_t)rows_before, b, sizeof(b));
	if (count.rows < rows_before)
		return rs_err_set(
			err, RS_EVERIFY,
			"%s rows over all shards, fewer than the %s "
			"counted before the run; if applications "
			"deleted rows since unfence this is expected, "
			"otherwise investigate before anything else",
			a, b);
	fprintf(stderr, "  every row on its owner; %s rows now, %s before%s\n",
	        a, b,
	        count.rows == rows_before ? "" : " (writes since unfence)");
	return 0;
}

const struct rs_step_def step_final_check = {
	.name = "final-check",
	.summary = "every row on its owner, as many rows as before",
	.run = final_run,
};
