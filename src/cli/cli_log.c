/*
 * `reshard log PLAN [--format text|json]`
 */
#include <stdio.h>

#include "cli/cli.h"
#include "engine/engine.h"

static int
cli_log(int argc, char **argv, struct rs_err *err)
{
	struct rs_plan *plan = NULL;
	int json, rc = cli_plan_format(&cli_log_command, argc, argv, &plan,
	                               &json, err);

	if (rc == 0 && plan != NULL)
		rc = engine_log(plan, json, stdout, err);
	plan_free(plan);
	return rc;
}

const struct rs_command cli_log_command = {
	.name = "log",
	.usage = "PLAN [--format text|json]",
	.summary = "Print every event the plan's runs recorded in the journal, "
		   "oldest first:\nsteps begun and ended, progress every few "
		   "seconds, fences, retries,\nconfirmations, cutovers given "
		   "back, verify's differences, aborts.",
	.help = "  --format FORMAT  text (default) or json (one JSON object "
		"a line)\n",
	.run = cli_log,
};
