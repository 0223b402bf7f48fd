/*
 * `reshard status PLAN [--format text|json]` and `reshard abort PLAN`
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "engine/engine.h"
#include "strategy/strategy.h"

static int
cli_status(int argc, char **argv, struct rs_err *err)
{
	struct rs_plan *plan = NULL;
	int json, rc = cli_plan_format(&cli_status_command, argc, argv, &plan,
	                               &json, err);

	if (rc == 0 && plan != NULL)
		rc = engine_status(plan, strategy_for(plan), json, stdout, err);
	plan_free(plan);
	return rc;
}

static int
cli_abort(int argc, char **argv, struct rs_err *err)
{
	static const struct option longopts[] = {
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct rs_plan *plan = NULL;
	int c, rc;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c != 'h')
			return cli_bad_option(&cli_abort_command, longopts,
			                      argc, argv, err);
		cli_print_help(&cli_abort_command, stdout);
		return 0;
	}
	if (optind != argc - 1)
		return rs_err_set(err, RS_EUSAGE,
		                  "abort needs exactly one plan file; see "
		                  "`reshard abort --help`");
	rc = cli_load_plan(argv[optind], &plan, err);
	if (rc == 0 && strategy_for(plan) == NULL)
		rc = rs_err_set(err, RS_EUSAGE,
		                "%s: strategy \"%s\" cannot be run by this "
		                "version, so there is nothing to abort",
		                plan->path, plan_strategy_name(plan->strategy));
	else if (rc == 0)
		rc = engine_abort(plan, strategy_for(plan), err);
	plan_free(plan);
	return rc;
}

const struct rs_command cli_status_command = {
	.name = "status",
	.usage = "PLAN [--format text|json]",
	.summary = "Show the state of the plan's run (never run, running, "
		   "stopped, interrupted,\nfailed, done, aborted), every step "
		   "with its state, timings and rows, whether\nwrites are "
		   "fenced right now, the epoch.",
	.help = "  --format FORMAT  text (default) or json\n",
	.run = cli_status,
};

const struct rs_command cli_abort_command = {
	.name = "abort",
	.usage = "PLAN",
	.summary = "Before publish: release the fences, remove what the run "
		   "made, set the\njournal aside. After publish it refuses: "
		   "the run can only go forward.",
	.help = "",
	.run = cli_abort,
};
