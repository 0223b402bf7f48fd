/*
 * `reshard log PLAN [--format text|json]`
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "engine/engine.h"

static int
cli_log(int argc, char **argv, struct rs_err *err)
{
	static const struct option longopts[] = {
		{"format", required_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct rs_plan *plan = NULL;
	int c, rc, json = 0;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "f:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (strcmp(optarg, "json") == 0)
				json = 1;
			else if (strcmp(optarg, "text") != 0)
				return rs_err_set(err, RS_EUSAGE,
				                  "log: --format %s is not "
				                  "known; use text or json",
				                  optarg);
			break;
		case 'h':
			cli_print_help(&cli_log_command, stdout);
			return 0;
		default:
			return cli_bad_option(&cli_log_command, longopts, argc,
			                      argv, err);
		}
	}
	if (optind != argc - 1)
		return rs_err_set(err, RS_EUSAGE,
		                  "log needs exactly one plan file; see "
		                  "`reshard log --help`");
	rc = cli_load_plan(argv[optind], &plan, err);
	if (rc == 0)
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
