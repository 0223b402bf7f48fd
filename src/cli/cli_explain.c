/*
 * `reshard explain PLAN [--format text|json]`
 */
#include <stdio.h>

#include "cli/cli.h"
#include "strategy/explain.h"
#include "strategy/strategy.h"

static int
cli_explain(int argc, char **argv, struct rs_err *err)
{
	struct rs_plan *plan = NULL;
	int json, rc = cli_plan_format(&cli_explain_command, argc, argv, &plan,
	                               &json, err);

	if (rc == 0 && plan != NULL)
		rc = strategy_explain(plan, strategy_for(plan), json, stdout,
		                      err);
	plan_free(plan);
	return rc;
}

const struct rs_command cli_explain_command = {
	.name = "explain",
	.usage = "PLAN [--format text|json]",
	.summary = "Show what `reshard run PLAN` would do, writing nothing: "
		   "each step, on which\nshards and tables, its rows, what "
		   "cannot be undone, the fence of each shard,\nand the "
		   "expected time of each step and of the fence, from rates "
		   "measured now.",
	.help = "  --format FORMAT  text (default) or json\n"
		"\n"
		"It reads every source shard key (as `reshard dry-run PLAN` "
		"does), times one\nchunk read of each source table, and asks "
		"server replicas how far behind they\nare. It never makes the "
		"journal nor a SQLite replica file, and sends no shard\na "
		"statement that writes.\n",
	.run = cli_explain,
};
