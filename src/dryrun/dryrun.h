/*
 * The dry-run (DESIGN §5): which keys a plan moves, from where to where,
 * and how even the result is, without writing anything anywhere.
 *
 * A dry-run is a sink for shard keys: dryrun_begin, then dryrun_add_keys for
 * each batch of keys read (one key per row), then dryrun_finish prints the
 * summary.  Movers are written as `key<TAB>from<TAB>to` as they are found,
 * with a fourth column, the logical table, when several tables are read
 * (a live dry-run of a plan of several tables without --table); a key
 * (or owner or table name) with a TAB, a newline, a backslash or another
 * control byte escaped as common/text.h describes.
 * Keys come from a key file (keyfile.c: dryrun_run_keyfile) or from the
 * live source shards (live.c: dryrun_run_live).
 */
#ifndef RS_DRYRUN_H
#define RS_DRYRUN_H

#include <stdio.h>

#include "common/err.h"
#include "plan/plan.h"
#include "shardmap/stats.h"

struct rs_dryrun_options {
	const char *keys_path; /* key file, "-" for standard input; NULL:
	                          read the live source shards */
	const char *table;     /* with keys_path: the logical table the keys
	                          belong to (NULL: the plan's first); live:
	                          only this table (NULL: all) */
	int summary_only;      /* print only the summary, on MOVERS_OUT */
	int json;              /* the summary as one JSON object (the CLI
	                          sets summary_only with it) */
	int top;               /* report the N keys with most rows; 0: no */
	int progress;          /* live: draw progress on stderr */
	/* Not NULL: dryrun_finish prints nothing and hands over what it
	 * counted here instead (explain); the caller stats_clear's
	 * counts->stats. */
	struct rs_dryrun_counts *counts;
};

/* What a dry-run counted, handed over (rs_dryrun_options.counts). */
struct rs_dryrun_counts {
	struct rs_stats stats; /* finished (stats_finish) */
	uint64_t misplaced;    /* live: rows on a shard not their owner */
};

/* What a dry-run found, for the report. */
struct rs_dryrun_result {
	const struct rs_plan *plan;
	int table; /* the table reported on, or -1: several */
	struct rs_stats stats;
	struct rs_topkeys top; /* filled only when options.top > 0 */
	int n_top;             /* options.top */
	uint64_t misplaced;    /* live: rows found on a shard that does not
	                          own them under `from` */
	uint64_t *table_keys;  /* [plan->n_tables] rows read of each table,
	                          and of them movers: only when table is -1 */
	uint64_t *table_moved;
	/* Rows per physical table of `from` and `to` when the map is a
	 * slots map and one table is read (databases 0 otherwise). */
	struct rs_slot_rows slots_before, slots_after;
};

struct rs_dryrun;

/* Start a dry-run of PLAN.  Movers go to MOVERS_OUT unless summary_only.
 * Returns 0 and *DR (free with dryrun_free), RS_EUSAGE for an unknown
 * --table, or RS_ENOMEM. */
int dryrun_begin(const struct rs_plan *plan,
                 const struct rs_dryrun_options *options, FILE *movers_out,
                 struct rs_dryrun **dr, struct rs_err *err);

/* Account for N keys (one row each) of logical table TABLE.  FOUND_ON, when
 * not NULL, is where the rows were read (shard and table index): rows that
 * the `from` map puts elsewhere are counted as misplaced.  Returns 0;
 * RS_EKEY with *BAD set to the index of the first key the plan's hash
 * cannot take (the keys before it are counted, ERR is not filled: the
 * caller knows where the key came from); RS_ENOMEM with ERR filled. */
int dryrun_add_keys(struct rs_dryrun *dr, int table,
                    const struct rs_owner *found_on, const char *const *keys,
                    const size_t *lens, size_t n, size_t *bad,
                    struct rs_err *err);

/* Flush the movers and print the summary to SUMMARY_OUT (or to the movers'
 * stream with summary_only), or with options.counts hand the counts over
 * and print nothing.  Returns 0 or RS_EIO / RS_ENOMEM. */
int dryrun_finish(struct rs_dryrun *dr, FILE *summary_out, struct rs_err *err);
void dryrun_free(struct rs_dryrun *dr);

/* The message for a key the plan's hash cannot take, at WHERE. */
int dryrun_key_error(const struct rs_plan *plan, const char *where,
                     const char *key, size_t len, struct rs_err *err);

/* A whole dry-run over a key file (keyfile.c).  Returns 0; RS_EUSAGE,
 * RS_EIO when the key file cannot be read or output written, RS_EKEY naming
 * the key and its line; RS_ENOMEM. */
int dryrun_run_keyfile(const struct rs_plan *plan,
                       const struct rs_dryrun_options *options,
                       FILE *movers_out, FILE *summary_out, struct rs_err *err);

/* A whole dry-run over the live source shards (live.c): every table (or
 * options->table) of every shard of `from`, streamed concurrently
 * (options.parallel streams) in primary-key order with bounded memory.
 * Returns 0 or the first failure (RS_ECONNECT, RS_ESCHEMA, RS_EQUERY …)
 * naming the shard. */
int dryrun_run_live(const struct rs_plan *plan,
                    const struct rs_dryrun_options *options, FILE *movers_out,
                    FILE *summary_out, struct rs_err *err);

/* Print the summary of RESULT as text (with bars) or as one JSON object.
 * Returns 0 or RS_EIO / RS_ENOMEM. */
int dryrun_report(const struct rs_dryrun_result *result, int json, FILE *out,
                  struct rs_err *err);

#endif
