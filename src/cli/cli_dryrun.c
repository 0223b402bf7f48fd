/*
 * `reshard dry-run PLAN [--keys FILE|-] [--table NAME] [--summary]
 *                       [--format tsv|json] [--top N]`
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "dryrun/dryrun.h"

static int
cli_dryrun(int argc, char **argv, struct rs_err *err)
{
	static const struct option longopts[] = {
		{"keys", required_argument, NULL, 'k'},
		{"table", required_argument, NULL, 't'},
		{"summary", no_argument, NULL, 's'},
		{"format", required_argument, NULL, 'f'},
		{"top", required_argument, NULL, 'n'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct rs_dryrun_options options = {0};
	struct rs_plan *plan = NULL;
	int c, rc;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "k:t:sf:n:h", longopts, NULL)) !=
	       -1) {
		switch (c) {
		case 'k':
			options.keys_path = optarg;
			break;
		case 't':
			options.table = optarg;
			break;
		case 's':
			options.summary_only = 1;
			break;
		case 'f':
			if (strcmp(optarg, "json") == 0)
				options.json = 1;
			else if (strcmp(optarg, "tsv") != 0)
				return rs_err_set(err, RS_EUSAGE,
				                  "dry-run: --format %s is not "
				                  "known; use tsv or json",
				                  optarg);
			break;
		case 'n': {
			char *end;
			long n;

			errno = 0;
			n = strtol(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || n < 1 || n > 100000)
				return rs_err_set(err, RS_EUSAGE,
				                  "dry-run: --top %s must be a "
				                  "number from 1 to 100000",
				                  optarg);
			options.top = (int)n;
			break;
		}
		case 'h':
			cli_print_help(&cli_dryrun_command, stdout);
			return 0;
		default:
			return cli_bad_option(&cli_dryrun_command, longopts,
			                      argc, argv, err);
		}
	}
	if (optind != argc - 1)
		return rs_err_set(err, RS_EUSAGE,
		                  "dry-run needs exactly one plan file; see "
		                  "`reshard dry-run --help`");
	/* JSON is a summary: mover lines are not JSON, and a script piping
	 * the JSON wants it on standard output. */
	if (options.json)
		options.summary_only = 1;
	rc = cli_load_plan(argv[optind], &plan, err);
	if (rc != 0)
		return rc;
	static char buffer[1 << 20];
	setvbuf(stdout, buffer, _IOFBF, sizeof(buffer));
	if (options.keys_path != NULL) {
		rc = dryrun_run_keyfile(plan, &options, stdout, stderr, err);
	} else {
		options.progress = 1;
		rc = dryrun_run_live(plan, &options, stdout, stderr, err);
	}
	plan_free(plan);
	return rc;
}

const struct rs_command cli_dryrun_command = {
	.name = "dry-run",
	.usage = "PLAN [--keys FILE|-] [--table NAME] [--summary] "
		 "[--format tsv|json] [--top N]",
	.summary = "List the keys that the plan moves, from where to where, "
		   "with per-shard\ncounts, flows and skew. Writes nothing "
		   "anywhere.",
	.help = "  (no --keys)      read the shard key of every table from "
		"the source shards,\n"
		"                   read-only, with progress on standard "
		"error; with several\n"
		"                   tables, a 4th column names each mover's "
		"table and the\n"
		"                   summary counts each table\n"
		"  --keys FILE|-    read keys from FILE (one per line, - for "
		"standard input);\n"
		"                   no shard is contacted\n"
		"  --table NAME     only table NAME; with --keys the keys "
		"belong to it\n"
		"                   (default: the plan's first table)\n"
		"  --summary        print only the summary, on standard "
		"output\n"
		"  --format FORMAT  tsv (movers as key<TAB>from<TAB>to, text "
		"summary) or\n"
		"                   json (only the summary, as one JSON "
		"object on standard\n"
		"                   output, keys escaped as JSON; no movers)\n"
		"  --top N          also list the N keys with the most rows\n"
		"\n" CLI_ESCAPING_HELP,
	.run = cli_dryrun,
};
