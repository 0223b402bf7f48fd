/*
 * `reshard verify PLAN [--format text|json]`
 */
#include <stdio.h>

#include "cli/cli.h"
#include "engine/engine.h"
#include "steps/steps.h"
#include "strategy/strategy.h"

static int
cli_verify(int argc, char **argv, struct rs_err *err)
{
	struct rs_plan *plan = NULL;
	int json, rc = cli_plan_format(&cli_verify_command, argc, argv, &plan,
	                               &json, err);

	if (rc != 0 || plan == NULL)
		return rc;
	if (strategy_for(plan) == NULL)
		rc = rs_err_set(err, RS_EUSAGE,
		                "%s: strategy \"%s\" cannot be run by this "
		                "version, so there is nothing to verify",
		                plan->path, plan_strategy_name(plan->strategy));
	if (rc == 0)
		rc = engine_run_one(plan, strategy_for(plan), "verify",
		                    &step_verify_on_demand, err);
	if (rc == 0)
		rc = engine_verify_report(plan, step_verify_on_demand.name,
		                          json, stdout, err);
	plan_free(plan);
	return rc;
}

const struct rs_command cli_verify_command = {
	.name = "verify",
	.usage = "PLAN [--format text|json]",
	.summary = "Compare now, read-only, every row that moves with its copy "
		   "on its new owner;\nrecord each difference (missing, extra, "
		   "differing columns) in the journal.\nResumes where it "
		   "stopped; exit 3 when rows differ.",
	.help = "  --format FORMAT  text (default) or json: the differences "
		"on stdout\n",
	.run = cli_verify,
};
