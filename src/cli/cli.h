/*
 * The commands of the command line (DESIGN §5).  Each cli_<verb>.c only
 * parses its options and calls the modules below; main.c dispatches through
 * the table of struct rs_command.
 *
 * A command's run function returns 0 or a negative RS_E… code with ERR
 * filled (or RS_EPLAN after printing the plan's mistakes itself); main()
 * prints ERR and turns the code into the exit status.
 */
#ifndef RS_CLI_H
#define RS_CLI_H

#include <getopt.h>

#include "common/err.h"
#include "plan/plan.h"

struct rs_command {
	const char *name;
	const char *usage;   /* one line: arguments and options */
	const char *summary; /* one line: what it does */
	const char *help;    /* the options, for `reshard COMMAND --help` */
	/* What the arguments after the plan are, when they may start with -
	 * (route: "key"), so that an unknown option is told to go after --;
	 * NULL when none may. */
	const char *operand;
	int (*run)(int argc, char **argv, struct rs_err *err);
};

/* How `route` and `dry-run` write keys (common/text.h), for their help. */
#define CLI_ESCAPING_HELP                                                      \
	"Keys and owner names are written as in PostgreSQL's COPY text "       \
	"format, so that\n"                                                    \
	"no key can break a line: a backslash as \\\\, TAB as \\t, newline "   \
	"as \\n, carriage\n"                                                   \
	"return as \\r, backspace \\b, form feed \\f, vertical tab \\v, any "  \
	"other byte\n"                                                         \
	"below 0x20 and 0x7f as \\xHH; all other bytes as they are.\n"

extern const struct rs_command cli_dryrun_command;
extern const struct rs_command cli_explain_command;
extern const struct rs_command cli_log_command;
extern const struct rs_command cli_route_command;
extern const struct rs_command cli_run_command;
extern const struct rs_command cli_status_command;
extern const struct rs_command cli_verify_command;
extern const struct rs_command cli_abort_command;
extern const struct rs_command cli_demo_command;

/* Load the plan at PATH.  On an invalid plan, prints every mistake to
 * stderr as `PATH:LINE: message` and returns RS_EPLAN with ERR saying how
 * many; other failures return their code with ERR filled. */
int cli_load_plan(const char *path, struct rs_plan **plan, struct rs_err *err);

/* The command line of a command that takes one PLAN and `--format
 * text|json` (status, log, explain): *JSON set from --format, *PLAN loaded
 * (plan_free it; NULL when --help was printed, which returns 0).  Bad
 * usage is RS_EUSAGE naming COMMAND; a bad plan as cli_load_plan. */
int cli_plan_format(const struct rs_command *command, int argc, char **argv,
                    struct rs_plan **plan, int *json, struct rs_err *err);

/* Print `usage: reshard USAGE` and the help text of COMMAND to OUT. */
void cli_print_help(const struct rs_command *command, FILE *out);

/*
 * For getopt_long loops (opterr = 0): the error for the argument
 * getopt_long refused, named as written.  An unknown long option gets the
 * closest of the command's LONGOPTS ("did you mean '--keys'?") or the list
 * of them; the start of several names says which; an option without its
 * value or with one it does not take says so.  For a command with an
 * operand (route's keys), an unknown option is told to go after --.
 */
int cli_bad_option(const struct rs_command *command,
                   const struct option *longopts, int argc, char **argv,
                   struct rs_err *err);

/* The option of LONGOPTS closest to ARG ("--kyes" or "--kyes=x" for
 * keys), or NULL when none is close. */
const char *cli_closest_option(const char *arg, const struct option *longopts);

#endif
