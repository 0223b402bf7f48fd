/*
 * `reshard demo [DIR] [--rows N]`
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "demo/demo.h"

static int
cli_demo(int argc, char **argv, struct rs_err *err)
{
	static const struct option longopts[] = {
		{"rows", required_argument, NULL, 'r'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	long rows = 300000;
	char *end;
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "r:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'r':
			errno = 0;
			rows = strtol(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || rows < 1 ||
			    rows > 100000000)
				return rs_err_set(err, RS_EUSAGE,
				                  "demo: --rows %s must be a "
				                  "number from 1 to 100000000",
				                  optarg);
			break;
		case 'h':
			cli_print_help(&cli_demo_command, stdout);
			return 0;
		default:
			return cli_bad_option(&cli_demo_command, longopts, argc,
			                      argv, err);
		}
	}
	if (argc - optind > 1)
		return rs_err_set(err, RS_EUSAGE,
		                  "demo takes at most one folder; see `reshard "
		                  "demo --help`");
	return demo_run(optind < argc ? argv[optind] : "reshard-demo",
	                (int)rows, err);
}

const struct rs_command cli_demo_command = {
	.name = "demo",
	.usage = "[DIR] [--rows N]",
	.summary = "Make two SQLite shards of orders in DIR (default "
		   "./reshard-demo), write a\nplan that doubles them to four, "
		   "dry-run it, run it, and show its status.",
	.help = "  --rows N         how many orders (default 300,000)\n",
	.run = cli_demo,
};
