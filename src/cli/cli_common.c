/*
 * What every command shares: loading a plan with its diagnostics, help
 * text, and the message for a bad option, with the closest option of
 * that command ("did you mean '--keys'?").
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "common/text.h"

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

/* The length of the name in ARG, an option without its dashes: up to an
 * '=' (--keys=FILE) or the end. */
static size_t
cli_option_name_length(const char *arg)
{
	const char *eq = strchr(arg, '=');

	return eq != NULL ? (size_t)(eq - arg) : strlen(arg);
}

const char *
cli_closest_option(const char *arg, const struct option *longopts)
{
	const char *names[64];
	char name[128];
	size_t n = 0, len;

	while (arg[0] == '-')
		arg++;
	len = cli_option_name_length(arg);
	if (len == 0 || len >= sizeof(name))
		return NULL;
	memcpy(name, arg, len);
	name[len] = '\0';
	for (; n < sizeof(names) / sizeof(*names) && longopts[n].name != NULL;
	     n++)
		names[n] = longopts[n].name;
	return text_closest(name, names, n);
}

/* The option of LONGOPTS whose short form is C, or NULL. */
static const struct option *
cli_option_by_val(const struct option *longopts, int c)
{
	for (; c != 0 && longopts->name != NULL; longopts++)
		if (longopts->flag == NULL && longopts->val == c)
			return longopts;
	return NULL;
}

/* LONGOPTS as "--keys, --table, …" into BUF; those whose name starts with
 * the LEN bytes of PREFIX only.  Returns how many. */
static int
cli_option_list(const struct option *longopts, const char *prefix, size_t len,
                char *buf, size_t size)
{
	size_t k = 0;
	int n = 0;

	buf[0] = '\0';
	for (; longopts->name != NULL; longopts++) {
		if (strncmp(longopts->name, prefix, len) != 0)
			continue;
		if (k < size)
			k += (size_t)snprintf(buf + k, size - k, "%s--%s",
			                      n > 0 ? ", " : "",
			                      longopts->name);
		n++;
	}
	return n;
}

/* The argument getopt_long refused.  It has stepped past a long option
 * (optopt 0, or a known option without its value) and past a short one
 * that ends its cluster; an unknown short option inside a cluster ("-abc"
 * at a) leaves it at argv[optind]. */
static const char *
cli_refused_arg(const struct option *longopts, int argc, char **argv)
{
	const char *next = optind < argc ? argv[optind] : NULL;

	if (optopt != 0 && cli_option_by_val(longopts, optopt) == NULL &&
	    next != NULL && next[0] == '-' && next[1] != '-' &&
	    strchr(next + 1, optopt) != NULL)
		return next;
	return optind > 0 && optind - 1 < argc ? argv[optind - 1] : "";
}

int
cli_bad_option(const struct rs_command *command, const struct option *longopts,
               int argc, char **argv, struct rs_err *err)
{
	const char *arg = cli_refused_arg(longopts, argc, argv);
	const char *name = command->name;
	const struct option *opt = NULL;
	const char *close = NULL;
	char shown[TEXT_KEY_SHOWN_SIZE], list[256];
	size_t len = 0;
	int n_prefix = 0;

	text_key_shown(arg, strlen(arg), shown, sizeof(shown));
	if (arg[0] == '-' && arg[1] == '-') {
		const char *word = arg + 2;

		len = cli_option_name_length(word);
		/* getopt_long takes any unambiguous start of a name. */
		for (const struct option *o = longopts; o->name != NULL; o++)
			if (strncmp(o->name, word, len) == 0) {
				if (opt == NULL || strlen(o->name) == len)
					opt = o;
				n_prefix++;
			}
		if (n_prefix > 1 && strlen(opt->name) != len) {
			cli_option_list(longopts, word, len, list,
			                sizeof(list));
			return rs_err_set(err, RS_EUSAGE,
			                  "%s: option '%s' is the start of "
			                  "%s; write more of it",
			                  name, shown, list);
		}
		if (opt != NULL && word[len] == '=' &&
		    opt->has_arg == no_argument)
			return rs_err_set(err, RS_EUSAGE,
			                  "%s: option '--%s' takes no value; "
			                  "write it alone",
			                  name, opt->name);
		if (opt == NULL)
			close = cli_closest_option(arg, longopts);
	} else {
		opt = cli_option_by_val(longopts, optopt);
	}
	if (opt != NULL)
		return rs_err_set(err, RS_EUSAGE,
		                  "%s: option '--%s' needs a value; see "
		                  "`reshard %s --help`",
		                  name, opt->name, name);
	if (close != NULL)
		return rs_err_set(err, RS_EUSAGE,
		                  "%s: unknown option '%s' (did you mean "
		                  "'--%s'?); see `reshard %s --help`",
		                  name, shown, close, name);
	cli_option_list(longopts, "", 0, list, sizeof(list));
	/* A command whose operands may start with -: one that is not an
	 * option is most likely meant as an operand. */
	if (command->operand != NULL && arg[0] == '-' &&
	    ((arg[1] >= '0' && arg[1] <= '9') || arg[1] == '.'))
		return rs_err_set(err, RS_EUSAGE,
		                  "%s: %s '%s' looks like an option; put -- "
		                  "before the %ss: reshard %s PLAN -- %s",
		                  name, command->operand, shown,
		                  command->operand, name, shown);
	if (command->operand != NULL)
		return rs_err_set(err, RS_EUSAGE,
		                  "%s: unknown option '%s'; the options are "
		                  "%s; if it is a %s, put -- before the %ss: "
		                  "reshard %s PLAN -- %s",
		                  name, shown, list, command->operand,
		                  command->operand, name, shown);
	return rs_err_set(err, RS_EUSAGE,
	                  "%s: unknown option '%s'; the options are %s", name,
	                  shown, list);
}

int
cli_plan_format(const struct rs_command *command, int argc, char **argv,
                struct rs_plan **plan, int *json, struct rs_err *err)
{
	static const struct option longopts[] = {
		{"format", required_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;

	*plan = NULL;
	*json = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "f:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (strcmp(optarg, "json") == 0)
				*json = 1;
			else if (strcmp(optarg, "text") != 0)
				return rs_err_set(err, RS_EUSAGE,
				                  "%s: --format %s is not "
				                  "known; use text or json",
				                  command->name, optarg);
			break;
		case 'h':
			cli_print_help(command, stdout);
			return 0;
		default:
			return cli_bad_option(command, longopts, argc, argv,
			                      err);
		}
	}
	if (optind != argc - 1)
		return rs_err_set(err, RS_EUSAGE,
		                  "%s needs exactly one plan file; see "
		                  "`reshard %s --help`",
		                  command->name, command->name);
	return cli_load_plan(argv[optind], plan, err);
}
