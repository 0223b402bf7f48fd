/*
 * `reshard route PLAN [--table NAME] KEY…`: the owner of each key under
 * `from` and `to`, and whether it moves.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "common/text.h"

/* Print TEXT (LEN bytes) escaped like the dry-run's mover lines
 * (common/text.h). */
static void
print_escaped(const char *text, size_t len)
{
	char buf[TEXT_ESCAPE_GROWTH * 256];

	if (!text_key_needs_escape(text, len)) {
		fwrite(text, 1, len, stdout);
		return;
	}
	for (size_t at = 0; at < len; at += 256) {
		size_t n = len - at < 256 ? len - at : 256;
		size_t written = text_escape_key(text + at, n, buf);

		fwrite(buf, 1, written, stdout);
	}
}

static void
print_owner(const struct rs_plan *plan, const struct rs_map *map,
            const char *table, struct rs_owner owner)
{
	const char *shard = plan->shards[owner.shard].name;
	char physical[RS_PLAN_MAX_NAME + 1];

	print_escaped(shard, strlen(shard));
	/* The plan's limits make every physical name fit. */
	if (map_has_tables(map) &&
	    map_table_name(map, table, owner.table, physical,
	                   sizeof(physical)) >= 0) {
		putchar('.');
		print_escaped(physical, strlen(physical));
	}
}

/* Which rule of MAP decided KEY's owner: `map:KIND`, or
 * `override:FILE:LINE` for a key it pins (FILE the plan's, or the
 * overrides file's). */
static void
print_rule(const struct rs_plan *plan, const struct rs_map *map,
           const char *key, int pinned)
{
	const struct rs_map_def *def = map_def(map);
	const char *file;

	if (!pinned) {
		printf("map:%s", map_kind_name(def->kind));
		return;
	}
	file = def->overrides_file != NULL ? def->overrides_file : plan->path;
	for (int i = 0; i < def->n_overrides; i++)
		if (def->overrides[i].len == strlen(key) &&
		    memcmp(def->overrides[i].key, key, def->overrides[i].len) ==
		            0) {
			fputs("override:", stdout);
			print_escaped(file, strlen(file));
			printf(":%d", def->overrides[i].line);
			return;
		}
}

static int
cli_route(int argc, char **argv, struct rs_err *err)
{
	static const struct option longopts[] = {
		{"table", required_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *table_name = NULL;
	struct rs_plan *plan = NULL;
	int c, rc, table;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "t:h", longopts, NULL)) != -1) {
		switch (c) {
		case 't':
			table_name = optarg;
			break;
		case 'h':
			cli_print_help(&cli_route_command, stdout);
			return 0;
		default:
			return cli_bad_option(&cli_route_command, longopts,
			                      argc, argv, err);
		}
	}
	if (argc - optind < 2)
		return rs_err_set(err, RS_EUSAGE,
		                  "route needs a plan file and at least one "
		                  "key; see `reshard route --help`");
	rc = cli_load_plan(argv[optind], &plan, err);
	if (rc != 0)
		return rc;
	table = table_name != NULL ? plan_table_index(plan, table_name) : 0;
	if (table < 0) {
		rc = rs_err_set(err, RS_EUSAGE,
		                "--table %s: the plan has no such table",
		                table_name);
		plan_free(plan);
		return rc;
	}
	for (int i = optind + 1; i < argc; i++) {
		const char *key = argv[i];
		uint64_t point;
		struct rs_owner from, to;
		int from_pinned, to_pinned;

		rc = hash_point(plan->hash, key, strlen(key), &point);
		if (rc != 0) {
			char shown[TEXT_KEY_SHOWN_SIZE];

			rs_err_set(err, rc,
			           "key '%s' cannot be hashed with %s%s",
			           text_key_shown(key, strlen(key), shown,
			                          sizeof(shown)),
			           hash_name(plan->hash),
			           plan->hash == RS_HASH_IDENTITY
			                   ? ", which takes only non-negative "
			                     "integers below 2^64"
			                   : ": it is not valid UTF-8");
			break;
		}
		from = map_owner_key(plan->from, key, strlen(key), point,
		                     &from_pinned);
		to = map_owner_key(plan->to, key, strlen(key), point,
		                   &to_pinned);
		print_escaped(key, strlen(key));
		putchar('\t');
		print_owner(plan, plan->from, plan->tables[table].name, from);
		putchar('\t');
		print_owner(plan, plan->to, plan->tables[table].name, to);
		printf("\t%s\t0x%016" PRIx64 "\t",
		       from.shard != to.shard || from.table != to.table
		               ? "moves"
		               : "stays",
		       point);
		print_rule(plan, plan->from, key, from_pinned);
		putchar('\t');
		print_rule(plan, plan->to, key, to_pinned);
		putchar('\n');
	}
	plan_free(plan);
	return rc;
}

const struct rs_command cli_route_command = {
	.name = "route",
	.usage = "PLAN [--table NAME] KEY...",
	.summary = "Print, for each key, its owner under from and under to, "
		   "whether it moves,\nits point, and the rule that decided "
		   "each owner (map:KIND, or override:FILE:LINE\nfor a key "
		   "the map pins): key<TAB>from<TAB>to<TAB>moves|stays<TAB>"
		   "0xPOINT<TAB>\nFROM_RULE<TAB>TO_RULE.",
	.help = "  --table NAME     name slot tables after table NAME "
		"(default: the plan's first)\n"
		"  --               everything after it is a key, even if it "
		"starts with -\n"
		"                   (reshard route PLAN -- -42)\n"
		"\n" CLI_ESCAPING_HELP,
	.operand = "key",
	.run = cli_route,
};
