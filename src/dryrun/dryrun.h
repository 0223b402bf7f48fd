/*
 * The dry-run (DESIGN §5): which keys a plan moves, from where to where,
 * and how even the result is, without writing anything anywhere.
 *
 * Keys come from a key file or standard input (one per line); each key
 * read is one row.  Movers are written as `key<TAB>from<TAB>to` as they are
 * found; the summary (report.c) is printed once all keys are read.
 */
#ifndef RS_DRYRUN_H
#define RS_DRYRUN_H

#include <stdio.h>

#include "common/err.h"
#include "plan/plan.h"
#include "shardmap/stats.h"

struct rs_dryrun_options {
	const char *keys_path; /* key file, "-" for standard input */
	const char *table;     /* logical table the keys belong to; NULL: the
	                          plan's first table */
	int summary_only;      /* print only the summary, on MOVERS_OUT */
	int json;              /* the summary as one JSON object */
	int top;               /* report the N keys with most rows; 0: no */
};

/* What a dry-run found, for the report. */
struct rs_dryrun_result {
	const struct rs_plan *plan;
	int table; /* index into plan->tables */
	struct rs_stats stats;
	struct rs_topkeys top; /* filled only when options.top > 0 */
	int n_top;             /* options.top */
};

/*
 * Run a dry-run of PLAN over the keys named in OPTIONS.  Movers go to
 * MOVERS_OUT (unless summary_only), the summary to SUMMARY_OUT (or to
 * MOVERS_OUT with summary_only).  Returns 0; RS_EUSAGE for an unknown
 * table; RS_EIO when the key file cannot be read or output cannot be
 * written; RS_EKEY naming the key and its line when the plan's hash cannot
 * take a key (nothing more is printed then); RS_ENOMEM.
 */
int dryrun_run(const struct rs_plan *plan,
               const struct rs_dryrun_options *options, FILE *movers_out,
               FILE *summary_out, struct rs_err *err);

/* Print the summary of RESULT as text (with bars) or as one JSON object.
 * Returns 0 or RS_EIO / RS_ENOMEM. */
int dryrun_report(const struct rs_dryrun_result *result, int json, FILE *out,
                  struct rs_err *err);

#endif
