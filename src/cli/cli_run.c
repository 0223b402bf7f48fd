/*
 * `reshard run PLAN [--until STEP] [--yes]`
 */
#include <getopt.h>
#include <stdio.h>
#include <unistd.h>

#include "cli/cli.h"
#include "engine/engine.h"
#include "strategy/strategy.h"

/* Ask on the terminal before an irreversible step: 1 yes, 0 no, -1 no
 * terminal (cron, CI: they must say --yes). */
static int
cli_confirm(const struct rs_step_def *step, void *arg)
{
	char answer[16];

	(void)arg;
	if (!isatty(STDIN_FILENO))
		return -1;
	fprintf(stderr, "step %s cannot be undone: %s.\nGo on? [y/N] ",
	        step->name, step->summary);
	fflush(stderr);
	return fgets(answer, sizeof(answer), stdin) != NULL &&
	       (answer[0] == 'y' || answer[0] == 'Y');
}

static int
cli_run(int argc, char **argv, struct rs_err *err)
{
	static const struct option longopts[] = {
		{"until", required_argument, NULL, 'u'},
		{"yes", no_argument, NULL, 'y'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct rs_run_options options = {.confirm = cli_confirm};
	const struct rs_strategy_def *strategy;
	struct rs_plan *plan = NULL;
	int c, rc;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "u:yh", longopts, NULL)) != -1) {
		switch (c) {
		case 'u':
			options.until = optarg;
			break;
		case 'y':
			options.yes = 1;
			break;
		case 'h':
			cli_print_help(&cli_run_command, stdout);
			return 0;
		default:
			return cli_bad_option(&cli_run_command, longopts, argc,
			                      argv, err);
		}
	}
	if (optind != argc - 1)
		return rs_err_set(
			err, RS_EUSAGE,
			"run needs exactly one plan file; see `reshard "
			"run --help`");
	rc = cli_load_plan(argv[optind], &plan, err);
	if (rc != 0)
		return rc;
	strategy = strategy_for(plan);
	if (strategy == NULL)
		rc = rs_err_set(
			err, RS_EUSAGE,
			"%s: strategy \"%s\" cannot be run by this version "
			"yet (its copy and change-capture steps are not "
			"built); `reshard dry-run` works for it",
			plan->path, plan_strategy_name(plan->strategy));
	else
		rc = engine_run(plan, strategy, &options, err);
	plan_free(plan);
	return rc;
}

const struct rs_command cli_run_command = {
	.name = "run",
	.usage = "PLAN [--until STEP] [--yes]",
	.summary = "Execute the plan's steps, recording each in the journal. "
		   "Run it again after\nany interruption: it resumes where it "
		   "stopped.",
	.help = "  --until STEP     stop after STEP (see `reshard status PLAN` "
		"for the steps)\n"
		"  --yes            do not ask before steps that cannot be "
		"undone (promote,\n"
		"                   purge); without a terminal they need it\n",
	.run = cli_run,
};
