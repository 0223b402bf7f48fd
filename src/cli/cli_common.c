/*
 * What every command shares: loading a plan with its diagnostics, help
 * text, and the message for a bad option.
 */
#include <getopt.h>
#include <stdio.h>

#include "cli/cli.h"

int
cli_load_plan(const char *path, struct rs_plan **plan, struct rs_err *err)
{
	struct rs_plan_diags diags;
	int rc = plan_load(path, plan, &diags, err);

	if (rc == RS_EPLAN && diags.n > 0)
		plan_diags_print(&diags, path, stderr);
	plan_diags_clear(&diags);
	return rc;
}

void
cli_print_help(const struct rs_command *command, FILE *out)
{
	fprintf(out, "usage: reshard %s %s\n\n%s\n", command->name,
	        command->usage, command->summary);
	if (command->help != NULL && command->help[0] != '\0')
		fprintf(out, "\n%s", command->help);
}

int
cli_bad_option(const struct rs_command *command, int argc, char **argv,
               struct rs_err *err)
{
	const char *arg =
		optind - 1 < argc && optind > 0 ? argv[optind - 1] : "";

	return rs_err_set(err, RS_EUSAGE,
	                  "%s: bad option or missing value near '%s'; see "
	                  "`reshard %s --help`",
	                  command->name, arg, command->name);
}
