/*
 * Loading a plan: libconfig → struct rs_plan, with one diagnostic per
 * mistake, each naming its line and what would be right.
 *
 * Every group is checked against the list of settings it may hold, so a
 * misspelt setting is reported (with the closest known name) instead of
 * silently taking its default.  Reading goes on after a mistake so that all
 * mistakes are reported at once; rules that span several settings run in
 * plan_check.c once every setting has been read cleanly.
 */
#include "plan/plan_internal.h"

#include <ctype.h>
#include <errno.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"

void
plan_diag(struct plan_loader *ld, int line, const char *fmt, ...)
{
	struct rs_plan_diags *d = ld->diags;
	char message[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	if (d->n == d->cap) {
		int cap = d->cap ? 2 * d->cap : 8;
		struct rs_plan_diag *items =
			realloc(d->items, sizeof(*items) * (size_t)cap);

		if (items == NULL) {
			ld->nomem = 1;
			return;
		}
		d->items = items;
		d->cap = cap;
	}
	d->items[d->n].line = line;
	d->items[d->n].message = strdup(message);
	d->items[d->n].file =
		ld->diag_file != NULL ? strdup(ld->diag_file) : NULL;
	if (d->items[d->n].message == NULL ||
	    (ld->diag_file != NULL && d->items[d->n].file == NULL)) {
		free(d->items[d->n].message);
		free(d->items[d->n].file);
		ld->nomem = 1;
		return;
	}
	d->n++;
}

static int
setting_line(const config_setting_t *s)
{
	int line = s != NULL ? config_setting_source_line(s) : 0;

	return line > 0 ? line : 1;
}

static char *
dup_or_flag(struct plan_loader *ld, const char *s)
{
	char *copy = strdup(s);

	if (copy == NULL)
		ld->nomem = 1;
	return copy;
}

/* WORDS (NULL-ended) joined with ", " into BUF. */
static const char *
word_list(const char *const *words, char *buf, size_t size)
{
	size_t k = 0;

	buf[0] = '\0';
	for (int i = 0; words[i] != NULL && k < size; i++)
		k += (size_t)snprintf(buf + k, size - k, "%s%s", i ? ", " : "",
		                      words[i]);
	return buf;
}

/* Report every member of GROUP whose name is not in KNOWN (NULL-ended). */
static void
check_known(struct plan_loader *ld, const config_setting_t *group,
            const char *where, const char *const *known)
{
	size_t n_known = 0;

	while (known[n_known] != NULL)
		n_known++;
	for (int i = 0; i < config_setting_length(group); i++) {
		const config_setting_t *m =
			config_setting_get_elem(group, (unsigned)i);
		const char *name = config_setting_name(m);
		const char *close;
		char list[256];
		size_t k;

		if (name == NULL)
			continue;
		for (k = 0; k < n_known; k++)
			if (strcmp(name, known[k]) == 0)
				break;
		if (k < n_known)
			continue;
		close = text_closest(name, known, n_known);
		if (close != NULL)
			plan_diag(ld, setting_line(m),
			          "unknown setting '%s' in %s; did you mean "
			          "'%s'?",
			          name, where, close);
		else
			plan_diag(ld, setting_line(m),
			          "unknown setting '%s' in %s; the settings "
			          "there are %s",
			          name, where,
			          word_list(known, list, sizeof(list)));
	}
}

/* A string setting.  Returns the member, or NULL when it is absent (a
 * mistake if REQUIRED) or not a string (always a mistake). */
static const char *
get_string(struct plan_loader *ld, const config_setting_t *group,
           const char *where, const char *name, int required,
           const char *example)
{
	const config_setting_t *m = config_setting_get_member(group, name);

	if (m == NULL) {
		if (required)
			plan_diag(ld, setting_line(group),
			          "%s has no '%s'; add %s", where, name,
			          example);
		return NULL;
	}
	if (config_setting_type(m) != CONFIG_TYPE_STRING) {
		plan_diag(ld, setting_line(m),
		          "'%s' must be a string in double quotes, e.g. %s",
		          name, example);
		return NULL;
	}
	return config_setting_get_string(m);
}

/* An integer setting in [MIN, MAX], FALLBACK when absent or wrong.  A
 * mistake's message suggests EXAMPLE, a value in [MIN, MAX]. */
static long long
get_int(struct plan_loader *ld, const config_setting_t *group, const char *name,
        long long fallback, long long min, long long max, long long example)
{
	const config_setting_t *m = config_setting_get_member(group, name);
	long long v;

	if (m == NULL)
		return fallback;
	if (config_setting_type(m) != CONFIG_TYPE_INT &&
	    config_setting_type(m) != CONFIG_TYPE_INT64) {
		plan_diag(ld, setting_line(m),
		          "'%s' must be an integer without quotes, e.g. %s = "
		          "%lld;",
		          name, name, example);
		return fallback;
	}
	v = config_setting_get_int64(m);
	if (v < min || v > max) {
		plan_diag(ld, setting_line(m),
		          "'%s' is %lld; it must be between %lld and %lld",
		          name, v, min, max);
		return fallback;
	}
	return v;
}

/* A boolean setting, FALLBACK when absent. */
static int
get_bool(struct plan_loader *ld, const config_setting_t *group,
         const char *name, int fallback)
{
	const config_setting_t *m = config_setting_get_member(group, name);

	if (m == NULL)
		return fallback;
	if (config_setting_type(m) != CONFIG_TYPE_BOOL) {
		plan_diag(ld, setting_line(m),
		          "'%s' must be true or false without quotes, e.g. "
		          "%s = %s;",
		          name, name, fallback ? "true" : "false");
		return fallback;
	}
	return config_setting_get_bool(m);
}

/* A list or array setting; NULL (and a mistake if REQUIRED) otherwise. */
static const config_setting_t *
get_list(struct plan_loader *ld, const config_setting_t *group,
         const char *where, const char *name, int type, int required,
         const char *example)
{
	const config_setting_t *m = config_setting_get_member(group, name);

	if (m == NULL) {
		if (required)
			plan_diag(ld, setting_line(group),
			          "%s has no '%s'; add %s", where, name,
			          example);
		return NULL;
	}
	if (config_setting_type(m) != type) {
		plan_diag(ld, setting_line(m), "'%s' must be %s, e.g. %s", name,
		          type == CONFIG_TYPE_LIST
		                  ? "a list of groups in ( )"
		                  : "an array of strings in [ ]",
		          example);
		return NULL;
	}
	if (config_setting_length(m) == 0) {
		plan_diag(ld, setting_line(m), "'%s' is empty; it needs %s",
		          name, example);
		return NULL;
	}
	return m;
}

static const config_setting_t *
get_group(struct plan_loader *ld, const config_setting_t *parent,
          const char *name, int required, const char *example)
{
	const config_setting_t *m = config_setting_get_member(parent, name);

	if (m == NULL) {
		if (required)
			plan_diag(ld, setting_line(parent),
			          "the plan has no '%s'; add %s", name,
			          example);
		return NULL;
	}
	if (config_setting_type(m) != CONFIG_TYPE_GROUP) {
		plan_diag(ld, setting_line(m),
		          "'%s' must be a group in { }, e.g. %s", name,
		          example);
		return NULL;
	}
	return m;
}

/* Names used in the journal file name and fence messages stay plain. */
static int
is_plain_name(const char *s)
{
	if (*s == '\0' || strlen(s) > 63)
		return 0;
	for (; *s != '\0'; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' ||
		      *s == '.'))
			return 0;
	return 1;
}

/* A long name in a message: its first 100 bytes, then "..." if cut
 * (for "%.*s%s"). */
#define NAME_SHOWN(name, len)                                                  \
	(int)((len) > 100 ? 100 : (len)), (name), (len) > 100 ? "..." : ""

/* Report NAME (a table name or a shard key column, WHAT) at LINE when it
 * is longer than an identifier may be. */
static void
check_name_length(struct plan_loader *ld, int line, const char *what,
                  const char *name)
{
	size_t len = strlen(name);

	if (len > RS_PLAN_MAX_NAME)
		plan_diag(ld, line,
		          "%s '%.*s%s' is %zu bytes; at most %d are allowed, "
		          "the longest identifier PostgreSQL keeps whole",
		          what, NAME_SHOWN(name, len), len, RS_PLAN_MAX_NAME);
}

static const char *
shard_list(const struct rs_plan *plan, char *buf, size_t size)
{
	size_t k = 0;

	buf[0] = '\0';
	for (int i = 0; i < plan->n_shards && k < size; i++)
		if (plan->shards[i].name != NULL && plan->shards[i].name[0])
			k += (size_t)snprintf(buf + k, size - k, "%s%s",
			                      k > 0 ? ", " : "",
			                      plan->shards[i].name);
	return buf;
}

/* Whether NAME is one of TAKEN (N of them, NULLs skipped). */
static int
name_taken(const char *name, const char *const *taken, int n)
{
	for (int i = 0; i < n; i++)
		if (taken[i] != NULL && strcmp(taken[i], name) == 0)
			return 1;
	return 0;
}

/* The index of the shard named NAME, or -1 with a mistake at LINE.  The
 * shard it suggests instead is none of TAKEN (N_TAKEN names): those the
 * same setting names already, which would be a mistake of their own. */
static int
resolve_shard(struct plan_loader *ld, const char *name, int line,
              const char *what, const char *const *taken, int n_taken)
{
	const struct rs_plan *plan = ld->plan;
	int i = plan_shard_index(plan, name);
	const char **free_names;
	const char *close;
	size_t n_free = 0;
	char list[512];

	if (i >= 0)
		return i;
	if (plan->shards == NULL)
		return -1; /* no shards were read: that is reported */
	free_names = malloc(sizeof(char *) * ((size_t)plan->n_shards + 1));
	if (free_names == NULL) {
		ld->nomem = 1;
		return -1;
	}
	for (int k = 0; k < plan->n_shards; k++)
		if (plan->shard_names[k] != NULL && /* not a group */
		    !name_taken(plan->shard_names[k], taken, n_taken))
			free_names[n_free++] = plan->shard_names[k];
	close = text_closest(name, free_names, n_free);
	if (close != NULL)
		plan_diag(ld, line,
		          "%s '%s' is not a shard; did you mean '%s'?", what,
		          name, close);
	else
		plan_diag(ld, line, "%s '%s' is not a shard; the shards are %s",
		          what, name, shard_list(plan, list, sizeof(list)));
	free(free_names);
	return -1;
}

static void
read_tables(struct plan_loader *ld, const config_setting_t *root)
{
	struct rs_plan *plan = ld->plan;
	static const char *const known[] = {"name", "key", NULL};
	const char *example = "tables = ( { name = \"orders\"; key = "
			      "\"customer_id\"; } );";
	const config_setting_t *list = get_list(ld, root, "the plan", "tables",
	                                        CONFIG_TYPE_LIST, 1, example);

	if (list == NULL)
		return;
	plan->n_tables = config_setting_length(list);
	plan->tables = calloc((size_t)plan->n_tables, sizeof(*plan->tables));
	if (plan->tables == NULL) {
		ld->nomem = 1;
		return;
	}
	for (int i = 0; i < plan->n_tables; i++) {
		const config_setting_t *t =
			config_setting_get_elem(list, (unsigned)i);
		struct rs_plan_table *table = &plan->tables[i];
		const char *name, *key;

		table->line = setting_line(t);
		if (config_setting_type(t) != CONFIG_TYPE_GROUP) {
			plan_diag(ld, table->line,
			          "each table must be a group, e.g. %s",
			          example + 11);
			continue;
		}
		check_known(ld, t, "a table", known);
		name = get_string(ld, t, "a table", "name", 1,
		                  "name = \"orders\";");
		key = get_string(
			ld, t, "a table", "key", 1,
			"key = \"customer_id\"; (the shard key column)");
		if (name != NULL) {
			if (*name == '\0')
				plan_diag(ld, table->line,
				          "a table name cannot be empty");
			for (int j = 0; j < i; j++)
				if (plan->tables[j].name != NULL &&
				    strcmp(plan->tables[j].name, name) == 0)
					plan_diag(ld, table->line,
					          "table '%s' is listed twice "
					          "(first on line %d); list "
					          "each table once",
					          name, plan->tables[j].line);
			check_name_length(ld, table->line, "table name", name);
			table->name = dup_or_flag(ld, name);
		}
		if (key != NULL) {
			if (*key == '\0')
				plan_diag(ld, table->line,
				          "a shard key column cannot be empty");
			check_name_length(ld, table->line, "shard key column",
			                  key);
			table->key = dup_or_flag(ld, key);
		}
	}
}

static int
url_scheme_ok(const char *url)
{
	static const char *const schemes[] = {"postgresql://", "postgres://",
	                                      "mysql://", "mariadb://",
	                                      "sqlite://"};

	for (size_t i = 0; i < sizeof(schemes) / sizeof(*schemes); i++)
		if (strncmp(url, schemes[i], strlen(schemes[i])) == 0)
			return 1;
	return 0;
}

static void
read_shards(struct plan_loader *ld, const config_setting_t *root)
{
	struct rs_plan *plan = ld->plan;
	int n_before = ld->diags->n;
	static const char *const known[] = {"name", "url", "replica",
	                                    "password_env", NULL};
	const char *example = "shards = ( { name = \"db0\"; url = "
			      "\"postgresql://app@host:5432/app\"; } );";
	const config_setting_t *list = get_list(ld, root, "the plan", "shards",
	                                        CONFIG_TYPE_LIST, 1, example);
	const char **replica_names;

	if (list == NULL)
		return;
	plan->n_shards = config_setting_length(list);
	if (plan->n_shards > RS_PLAN_MAX_SHARDS)
		plan_diag(ld, setting_line(list),
		          "the plan lists %d shards; a plan may have at most "
		          "%d: split the fleet into plans of at most %d shards",
		          plan->n_shards, RS_PLAN_MAX_SHARDS,
		          RS_PLAN_MAX_SHARDS);
	plan->shards = calloc((size_t)plan->n_shards, sizeof(*plan->shards));
	plan->shard_names = calloc((size_t)plan->n_shards, sizeof(char *));
	replica_names = calloc((size_t)plan->n_shards, sizeof(char *));
	if (plan->shards == NULL || plan->shard_names == NULL ||
	    replica_names == NULL) {
		free(replica_names);
		ld->nomem = 1;
		return;
	}
	for (int i = 0; i < plan->n_shards; i++) {
		const config_setting_t *s =
			config_setting_get_elem(list, (unsigned)i);
		struct rs_plan_shard *shard = &plan->shards[i];
		const char *name, *url, *penv;

		shard->line = setting_line(s);
		shard->replica = -1;
		if (config_setting_type(s) != CONFIG_TYPE_GROUP) {
			plan_diag(ld, shard->line,
			          "each shard must be a group, e.g. { name = "
			          "\"db0\"; url = \"sqlite:///srv/db0.db\"; }");
			continue;
		}
		check_known(ld, s, "a shard", known);
		name = get_string(ld, s, "a shard", "name", 1,
		                  "name = \"db0\";");
		url = get_string(ld, s, "a shard", "url", 1,
		                 "url = \"postgresql://app@host:5432/app\";");
		penv = get_string(ld, s, "a shard", "password_env", 0,
		                  "password_env = \"DB0_PASSWORD\";");
		replica_names[i] = get_string(ld, s, "a shard", "replica", 0,
		                              "replica = \"db2\";");
		if (name != NULL) {
			if (!is_plain_name(name))
				plan_diag(ld, shard->line,
				          "shard name '%s' must be 1 to 63 "
				          "letters, digits, '-', '_' or '.'",
				          name);
			for (int j = 0; j < i; j++)
				if (plan->shards[j].name != NULL &&
				    strcmp(plan->shards[j].name, name) == 0)
					plan_diag(ld, shard->line,
					          "shard '%s' is listed twice "
					          "(first on line %d); give "
					          "each shard its own name",
					          name, plan->shards[j].line);
		}
		shard->name = dup_or_flag(ld, name != NULL ? name : "");
		plan->shard_names[i] = shard->name;
		if (url != NULL) {
			if (!url_scheme_ok(url))
				plan_diag(
					ld,
					setting_line(config_setting_get_member(
						s, "url")),
					"url of shard '%s' must start with "
					"postgresql://, postgres://, "
					"mysql://, mariadb:// or sqlite://",
					shard->name);
			shard->url = dup_or_flag(ld, url);
		}
		if (penv != NULL)
			shard->password_env = dup_or_flag(ld, penv);
	}
	/* Replicas name other shards, so they resolve once all are read. */
	for (int i = 0; i < plan->n_shards && !ld->nomem; i++) {
		struct rs_plan_shard *shard = &plan->shards[i];
		const char *replica = replica_names[i];

		if (replica == NULL)
			continue;
		/* Not itself, nor another shard's replica. */
		replica_names[i] = shard->name;
		shard->replica =
			resolve_shard(ld, replica, shard->line, "replica",
		                      replica_names, plan->n_shards);
		replica_names[i] = replica;
		if (shard->replica == i) {
			plan_diag(ld, shard->line,
			          "shard '%s' names itself as its replica; "
			          "name the shard that replicates from it",
			          shard->name);
			shard->replica = -1;
		}
		for (int j = 0; j < i && shard->replica >= 0; j++)
			if (plan->shards[j].replica == shard->replica)
				plan_diag(ld, shard->line,
				          "shards '%s' and '%s' both name "
				          "'%s' as their replica; a replica "
				          "follows one primary",
				          plan->shards[j].name, shard->name,
				          replica_names[i]);
	}
	free(replica_names);
	ld->shards_ok = ld->diags->n == n_before;
}

/* Parse a range end: "max", "0x…" or decimal text, or a non-negative
 * integer.  Returns 0 or -1. */
static int
parse_range_end(const config_setting_t *m, uint64_t *end)
{
	const char *s;
	char *rest;
	int base = 10;

	if (config_setting_type(m) == CONFIG_TYPE_INT ||
	    config_setting_type(m) == CONFIG_TYPE_INT64) {
		long long v = config_setting_get_int64(m);

		if (v < 0)
			return -1;
		*end = (uint64_t)v;
		return 0;
	}
	if (config_setting_type(m) != CONFIG_TYPE_STRING)
		return -1;
	s = config_setting_get_string(m);
	if (strcmp(s, "max") == 0) {
		*end = UINT64_MAX;
		return 0;
	}
	/* Hex after 0x, else decimal: "010" is ten, not octal eight. */
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		s += 2;
		/* strtoull would take a second 0x: "0x0x5" is no number. */
		if (!isxdigit((unsigned char)*s) ||
		    (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')))
			return -1;
		base = 16;
	} else if (!isdigit((unsigned char)*s)) {
		return -1;
	}
	errno = 0;
	*end = strtoull(s, &rest, base);
	return errno != 0 || *rest != '\0' ? -1 : 0;
}

/* Read the ranges of a ranges map.  Returns 1 when every range names its
 * node (a shard or not), 0 when some node is unknown. */
static int
read_ranges(struct plan_loader *ld, const config_setting_t *group,
            struct rs_map_def *def)
{
	static const char *const known[] = {"end", "node", NULL};
	const char *example =
		"ranges = ( { end = \"0x7fffffffffffffff\"; node "
		"= \"db0\"; }, { end = \"max\"; node = \"db1\"; } );";
	const config_setting_t *list = get_list(ld, group, "a map", "ranges",
	                                        CONFIG_TYPE_LIST, 1, example);
	int all_named = 1;

	if (list == NULL)
		return 0;
	def->n_ranges = config_setting_length(list);
	if (def->n_ranges > RS_PLAN_MAX_RANGES) {
		char n[32], most[32];

		plan_diag(
			ld, setting_line(list),
			"the map lists %s ranges; a ranges map may have at "
			"most %s: merge neighbouring ranges of one node",
			text_thousands((uint64_t)def->n_ranges, n, sizeof(n)),
			text_thousands(RS_PLAN_MAX_RANGES, most, sizeof(most)));
	}
	def->ranges = calloc((size_t)def->n_ranges, sizeof(*def->ranges));
	if (def->ranges == NULL) {
		ld->nomem = 1;
		return 0;
	}
	for (int i = 0; i < def->n_ranges; i++) {
		const config_setting_t *r =
			config_setting_get_elem(list, (unsigned)i);
		const config_setting_t *end;
		const char *node;
		int line = setting_line(r);

		def->ranges[i].shard = -1;
		if (config_setting_type(r) != CONFIG_TYPE_GROUP) {
			plan_diag(ld, line,
			          "each range must be a group, "
			          "e.g. { end = \"max\"; node = "
			          "\"db1\"; }");
			all_named = 0;
			continue;
		}
		check_known(ld, r, "a range", known);
		end = config_setting_get_member(r, "end");
		node = get_string(ld, r, "a range", "node", 1,
		                  "node = \"db0\";");
		if (node != NULL)
			def->ranges[i].shard = resolve_shard(
				ld, node, line, "range node", NULL, 0);
		else
			all_named = 0;
		if (end == NULL) {
			plan_diag(ld, line,
			          "a range has no 'end'; add end = "
			          "\"0x3fffffffffffffff\"; (its last point) "
			          "or end = \"max\";");
			continue;
		}
		if (parse_range_end(end, &def->ranges[i].end) != 0) {
			plan_diag(ld, setting_line(end),
			          "range end must be \"max\", a hex point "
			          "like \"0x3fffffffffffffff\" or a "
			          "non-negative integer");
			continue;
		}
		if (i > 0 && def->ranges[i].end <= def->ranges[i - 1].end)
			plan_diag(ld, setting_line(end),
			          "range ends must be strictly increasing: "
			          "this end is not above the previous one");
		if (i == def->n_ranges - 1 && def->ranges[i].end != UINT64_MAX)
			plan_diag(ld, setting_line(end),
			          "the last range must end at \"max\" so that "
			          "every point has an owner");
	}
	return all_named;
}

/* A logical shard or a count of them: a non-negative integer, or its
 * decimal or 0x text (libconfig wraps an integer above 2^31 - 1 written
 * without its L suffix, so big values may be quoted instead).  Returns 0,
 * or -1 (also for "max", which names a point, not a logical shard). */
static int
parse_logical_number(const config_setting_t *m, uint64_t *v)
{
	if (config_setting_type(m) == CONFIG_TYPE_STRING &&
	    strcmp(config_setting_get_string(m), "max") == 0)
		return -1;
	return parse_range_end(m, v);
}

/* Read the logical shard of a logical map: bits (and shift) or
 * logical_shards, exactly one of the two.  Returns 1 when DEF's
 * logical_shards is known (then 2^bits in the first form), else 0. */
static int
read_logical_shard(struct plan_loader *ld, const config_setting_t *group,
                   struct rs_map_def *def)
{
	const config_setting_t *shift =
		config_setting_get_member(group, "shift");
	const config_setting_t *bits = config_setting_get_member(group, "bits");
	const config_setting_t *count =
		config_setting_get_member(group, "logical_shards");

	if (bits != NULL && count != NULL) {
		plan_diag(ld, setting_line(count),
		          "a logical map takes its logical shard either from "
		          "the point's bits (bits, shift) or as the point "
		          "modulo logical_shards, not both; remove one");
		return 0;
	}
	if (bits == NULL && count == NULL) {
		plan_diag(ld, setting_line(group),
		          "a logical map needs bits = 13; (with shift = 10; "
		          "for the bits below them) to take the logical shard "
		          "from the point's bits, or logical_shards = 4096; "
		          "to take it as the point modulo 4096");
		return 0;
	}
	if (count != NULL) {
		if (shift != NULL)
			plan_diag(ld, setting_line(shift),
			          "'shift' goes with 'bits'; with "
			          "logical_shards the logical shard is the "
			          "point modulo logical_shards: remove shift");
		if (parse_logical_number(count, &def->logical_shards) != 0 ||
		    def->logical_shards < 1 ||
		    def->logical_shards > UINT64_C(1) << 32) {
			plan_diag(ld, setting_line(count),
			          "logical_shards must be a number of logical "
			          "shards from 1 to 4294967296, e.g. "
			          "logical_shards = 4096; (above 2147483647 "
			          "write it with an L, 4294967296L)");
			def->logical_shards = 0;
		}
		return def->logical_shards > 0;
	}
	def->bits = (int)get_int(ld, group, "bits", 0, 1, 32, 13);
	def->shift = (int)get_int(ld, group, "shift", 0, 0, 63, 10);
	if (def->bits == 0)
		return 0;
	if (def->shift + def->bits > 64) {
		plan_diag(ld, setting_line(shift != NULL ? shift : bits),
		          "shift + bits is %d; the logical shard must lie "
		          "within the point's 64 bits: use shift = %d or less",
		          def->shift + def->bits, 64 - def->bits);
		return 0;
	}
	def->logical_shards = UINT64_C(1) << def->bits;
	return 1;
}

/* Read a logical map: its logical shard and its assign table, whose
 * ranges of logical shards reuse DEF's ranges (end: the last logical
 * shard of each).  Returns 1 when every range names its node (a shard or
 * not), 0 when some node is unknown. */
static int
read_logical(struct plan_loader *ld, const config_setting_t *group,
             struct rs_map_def *def)
{
	static const char *const known[] = {"last", "node", NULL};
	const char *example = "assign = ( { last = 2047; node = \"db0\"; }, "
			      "{ last = 4095; node = \"db1\"; } );";
	int sized = read_logical_shard(ld, group, def);
	const config_setting_t *list =
		get_list(ld, group, "a logical map", "assign", CONFIG_TYPE_LIST,
	                 1, example);
	uint64_t top = def->logical_shards - 1;
	int all_named = 1;

	if (list == NULL)
		return 0;
	def->n_ranges = config_setting_length(list);
	if (def->n_ranges == 0) {
		plan_diag(ld, setting_line(list),
		          "the assign table is empty; give every logical "
		          "shard a node, e.g. %s",
		          example);
		return 0;
	}
	if (def->n_ranges > RS_PLAN_MAX_RANGES) {
		char n[32], most[32];

		plan_diag(
			ld, setting_line(list),
			"the map assigns %s ranges; a logical map may have at "
			"most %s: merge neighbouring ranges of one node",
			text_thousands((uint64_t)def->n_ranges, n, sizeof(n)),
			text_thousands(RS_PLAN_MAX_RANGES, most, sizeof(most)));
	}
	def->ranges = calloc((size_t)def->n_ranges, sizeof(*def->ranges));
	if (def->ranges == NULL) {
		ld->nomem = 1;
		return 0;
	}
	for (int i = 0; i < def->n_ranges; i++) {
		const config_setting_t *r =
			config_setting_get_elem(list, (unsigned)i);
		const config_setting_t *last;
		const char *node;
		int line = setting_line(r);
		uint64_t v = 0;

		def->ranges[i].shard = -1;
		if (config_setting_type(r) != CONFIG_TYPE_GROUP) {
			plan_diag(ld, line,
			          "each assigned range must be a group, e.g. "
			          "{ last = 4095; node = \"db1\"; }");
			all_named = 0;
			continue;
		}
		check_known(ld, r, "an assigned range", known);
		last = config_setting_get_member(r, "last");
		node = get_string(ld, r, "an assigned range", "node", 1,
		                  "node = \"db0\";");
		if (node != NULL)
			def->ranges[i].shard = resolve_shard(
				ld, node, line, "assigned node", NULL, 0);
		else
			all_named = 0;
		if (last == NULL) {
			plan_diag(ld, line,
			          "an assigned range has no 'last'; add "
			          "last = 1023; (its last logical shard)");
			continue;
		}
		if (parse_logical_number(last, &v) != 0) {
			plan_diag(ld, setting_line(last),
			          "'last' must be a logical shard: a "
			          "non-negative integer, e.g. last = 1023; "
			          "(above 2147483647 write it with an L, "
			          "last = 4294967295L;)");
			continue;
		}
		def->ranges[i].end = v;
		if (i > 0 && def->ranges[i].end <= def->ranges[i - 1].end)
			plan_diag(
				ld, setting_line(last),
				"the assigned ranges' last logical shards "
				"must be strictly increasing: this one is not "
				"above the previous one");
		if (sized && def->ranges[i].end > top)
			plan_diag(ld, setting_line(last),
			          "last = %llu is past the last logical shard, "
			          "%llu; the logical shards are 0 to %llu",
			          (unsigned long long)v,
			          (unsigned long long)top,
			          (unsigned long long)top);
		else if (sized && i == def->n_ranges - 1 &&
		         def->ranges[i].end != top)
			plan_diag(
				ld, setting_line(last),
				"the last assigned range must end at the last "
				"logical shard (last = %llu;) so that every "
				"logical shard has a node",
				(unsigned long long)top);
	}
	return all_named;
}

/* The distinct shards that DEF names (those that resolved). */
static char *resolve_path(const char *dir, const char *path);

/* FILE as a message shows it: relative to where reshard runs, as the
 * plan's own path PLAN_PATH is.  NULL on no memory. */
static char *
shown_path(const char *plan_path, const char *file)
{
	char *copy, *out;
	const char *dir;

	if (file[0] == '/')
		return strdup(file);
	copy = strdup(plan_path);
	if (copy == NULL)
		return NULL;
	dir = dirname(copy);
	out = strcmp(dir, ".") == 0 ? strdup(file) : resolve_path(dir, file);
	free(copy);
	return out;
}

/* Add KEY (LEN bytes) pinned to SHARD, written at LINE, to DEF. */
static void
add_override(struct plan_loader *ld, struct rs_map_def *def, const char *key,
             size_t len, int shard, int line)
{
	struct rs_map_override *o;

	if (def->n_overrides == RS_PLAN_MAX_OVERRIDES) {
		char most[32];

		if (!ld->overrides_full)
			plan_diag(
				ld, line,
				"a map may pin at most %s keys; isolate fewer "
				"keys, or give the rest a map of their own",
				text_thousands(RS_PLAN_MAX_OVERRIDES, most,
			                       sizeof(most)));
		ld->overrides_full = 1;
		return;
	}
	if (def->n_overrides % 256 == 0) {
		struct rs_map_override *grown = realloc(
			def->overrides,
			sizeof(*grown) * ((size_t)def->n_overrides + 256));

		if (grown == NULL) {
			ld->nomem = 1;
			return;
		}
		def->overrides = grown;
	}
	o = &def->overrides[def->n_overrides];
	o->key = malloc(len + 1);
	if (o->key == NULL) {
		ld->nomem = 1;
		return;
	}
	memcpy(o->key, key, len);
	o->key[len] = '\0';
	o->len = len;
	o->shard = shard;
	o->line = line;
	def->n_overrides++;
}

/* One field of a CSV line at *P: plain up to the next comma, or in double
 * quotes with "" for a quote.  Copies it into FIELD (SIZE bytes), moves
 * *P past it and its comma.  Returns its length, or -1 when it is not
 * closed or too long. */
static long
csv_field(const char **p, char *field, size_t size)
{
	const char *s = *p;
	size_t n = 0;

	if (*s == '"') {
		for (s++;; s++) {
			if (*s == '\0')
				return -1;
			if (*s == '"' && s[1] != '"')
				break;
			if (*s == '"')
				s++;
			if (n + 1 >= size)
				return -1;
			field[n++] = *s;
		}
		s++;
	} else {
		for (; *s != ',' && *s != '\0'; s++) {
			if (n + 1 >= size)
				return -1;
			field[n++] = *s;
		}
	}
	field[n] = '\0';
	*p = *s == ',' ? s + 1 : s;
	return (long)n;
}

/* The overrides file PATH (SHOWN in messages): one `key,node` a line, a
 * first line `key,node` taken as a header, blank lines and lines that
 * begin with # skipped. */
static void
read_overrides_file(struct plan_loader *ld, struct rs_map_def *def,
                    const char *path, const char *shown, int plan_line)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	int number = 0, data = 0;
	ssize_t got;

	if (f == NULL) {
		plan_diag(ld, plan_line,
		          "cannot read overrides file %s: %s; give a readable "
		          "CSV file of key,node lines (relative to the plan's "
		          "folder)",
		          shown, strerror(errno));
		return;
	}
	ld->diag_file = shown;
	while ((got = getline(&line, &cap, f)) != -1) {
		char key[RS_PLAN_MAX_KEY + 1], node[RS_PLAN_MAX_NAME + 2];
		const char *p = line;
		long key_len, node_len;
		int shard;

		number++;
		while (got > 0 &&
		       (line[got - 1] == '\n' || line[got - 1] == '\r'))
			line[--got] = '\0';
		if (got == 0 || line[0] == '#')
			continue;
		key_len = csv_field(&p, key, sizeof(key));
		node_len = key_len < 0 ? -1 : csv_field(&p, node, sizeof(node));
		if (key_len < 0 || node_len < 0 || *p != '\0' ||
		    strchr(line, ',') == NULL) {
			plan_diag(
				ld, number,
				"expected key,node (a key of at most %d bytes, "
				"in double quotes if it holds a comma, then a "
				"shard's name), e.g. cliente:42,db4",
				RS_PLAN_MAX_KEY);
			continue;
		}
		if (data++ == 0 && strcmp(key, "key") == 0 &&
		    strcmp(node, "node") == 0)
			continue; /* the header */
		shard = resolve_shard(ld, node, number, "override node", NULL,
		                      0);
		if (key_len == 0)
			plan_diag(ld, number,
			          "the key is empty; write the shard key's "
			          "value, e.g. cliente:42,db4");
		else if (shard >= 0)
			add_override(ld, def, key, (size_t)key_len, shard,
			             number);
	}
	if (ferror(f))
		plan_diag(ld, number + 1, "cannot read further: %s",
		          strerror(errno));
	ld->diag_file = NULL;
	free(line);
	fclose(f);
}

/* qsort: overrides by key, then by line. */
static int
override_cmp(const void *a, const void *b)
{
	const struct rs_map_override *x =
		*(const struct rs_map_override *const *)a;
	const struct rs_map_override *y =
		*(const struct rs_map_override *const *)b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->key, y->key, n);

	if (c != 0)
		return c;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return (x->line > y->line) - (x->line < y->line);
}

/* Report every key listed twice among DEF's overrides, naming both lines
 * (in FILE's lines when SHOWN is not NULL). */
static void
check_override_keys(struct plan_loader *ld, const struct rs_map_def *def,
                    const char *shown)
{
	const struct rs_map_override **order =
		malloc(sizeof(*order) * ((size_t)def->n_overrides + 1));

	if (order == NULL) {
		ld->nomem = 1;
		return;
	}
	for (int i = 0; i < def->n_overrides; i++)
		order[i] = &def->overrides[i];
	qsort(order, (size_t)def->n_overrides, sizeof(*order), override_cmp);
	ld->diag_file = shown;
	for (int i = 1; i < def->n_overrides; i++) {
		const struct rs_map_override *a = order[i - 1];
		const struct rs_map_override *b = order[i];
		char key[64];

		if (a->len != b->len || memcmp(a->key, b->key, a->len) != 0)
			continue;
		text_key_shown(b->key, b->len, key, sizeof(key));
		plan_diag(ld, b->line,
		          "key '%s' is overridden twice, at lines %d and %d; "
		          "keep one of them",
		          key, a->line, b->line);
	}
	ld->diag_file = NULL;
	free(order);
}

/* Read a map's overrides, keys pinned to a shard before the map: a list
 * ( { key = "cliente:42"; node = "db4"; }, … ) or the name of a CSV file
 * of key,node lines, relative to the plan's folder. */
static void
read_overrides(struct plan_loader *ld, const config_setting_t *group,
               struct rs_map_def *def)
{
	static const char *const known[] = {"key", "node", NULL};
	const char *example =
		"overrides = \"big-customers.csv\"; or overrides "
		"= ( { key = \"cliente:42\"; node = \"db4\"; } );";
	const config_setting_t *list =
		config_setting_get_member(group, "overrides");

	ld->overrides_full = 0;
	if (list == NULL)
		return;
	if (config_setting_type(list) == CONFIG_TYPE_STRING) {
		const char *file = config_setting_get_string(list);

		char *path = resolve_path(ld->plan->dir, file);

		def->overrides_file = shown_path(ld->plan->path, file);
		if (path == NULL || def->overrides_file == NULL)
			ld->nomem = 1;
		else
			read_overrides_file(ld, def, path, def->overrides_file,
			                    setting_line(list));
		if (!ld->nomem)
			check_override_keys(ld, def, def->overrides_file);
		free(path);
		return;
	}
	if (config_setting_type(list) != CONFIG_TYPE_LIST) {
		plan_diag(ld, setting_line(list),
		          "overrides must be a file name in quotes or a list "
		          "in ( ), e.g. %s",
		          example);
		return;
	}
	for (int i = 0; i < config_setting_length(list); i++) {
		const config_setting_t *r =
			config_setting_get_elem(list, (unsigned)i);
		const config_setting_t *k;
		int line = setting_line(r), shard = -1;
		char number[32];
		const char *key = NULL, *node;

		if (config_setting_type(r) != CONFIG_TYPE_GROUP) {
			plan_diag(ld, line,
			          "each override must be a group, e.g. { key = "
			          "\"cliente:42\"; node = \"db4\"; }");
			continue;
		}
		check_known(ld, r, "an override", known);
		k = config_setting_get_member(r, "key");
		if (k != NULL && config_setting_type(k) == CONFIG_TYPE_STRING)
			key = config_setting_get_string(k);
		else if (k != NULL &&
		         (config_setting_type(k) == CONFIG_TYPE_INT ||
		          config_setting_type(k) == CONFIG_TYPE_INT64)) {
			snprintf(number, sizeof(number), "%lld",
			         config_setting_get_int64(k));
			key = number;
		}
		if (key == NULL || key[0] == '\0' ||
		    strlen(key) > RS_PLAN_MAX_KEY)
			plan_diag(ld, k != NULL ? setting_line(k) : line,
			          "an override needs its key: the shard key's "
			          "value as text of 1 to %d bytes, or an "
			          "integer, e.g. key = \"cliente:42\";",
			          RS_PLAN_MAX_KEY);
		node = get_string(ld, r, "an override", "node", 1,
		                  "node = \"db4\";");
		if (node != NULL)
			shard = resolve_shard(ld, node, line, "override node",
			                      NULL, 0);
		if (key != NULL && key[0] != '\0' &&
		    strlen(key) <= RS_PLAN_MAX_KEY && shard >= 0)
			add_override(ld, def, key, strlen(key), shard, line);
	}
	if (!ld->nomem)
		check_override_keys(ld, def, NULL);
}

static int
map_def_distinct_nodes(struct plan_loader *ld, const struct rs_map_def *def)
{
	unsigned char *seen = calloc((size_t)ld->plan->n_shards + 1, 1);
	int n = 0;

	if (seen == NULL) {
		ld->nomem = 1;
		return 0;
	}
	for (int i = 0; i < def->n_nodes + def->n_ranges; i++) {
		int shard = i < def->n_nodes
		                    ? def->nodes[i]
		                    : def->ranges[i - def->n_nodes].shard;

		if (shard >= 0 && !seen[shard]) {
			seen[shard] = 1;
			n++;
		}
	}
	free(seen);
	return n;
}

/* The limits of plan.h on map WHICH (GROUP, read into DEF): ring points,
 * slot tables, the physical tables the map makes and their names. */
static void
check_map_limits(struct plan_loader *ld, const config_setting_t *group,
                 const char *which, const struct rs_map_def *def)
{
	const struct rs_plan *plan = ld->plan;
	uint64_t per_table = (uint64_t)map_def_distinct_nodes(ld, def);
	char a[32], b[32];

	if (def->kind == RS_MAP_RING && def->vnodes > 0) {
		uint64_t points =
			(uint64_t)def->n_nodes * (uint64_t)def->vnodes;

		if (points > RS_PLAN_MAX_RING_POINTS)
			plan_diag(ld,
			          setting_line(config_setting_get_member(
					  group, "vnodes")),
			          "ring map '%s' has %d nodes x %d vnodes = %s "
			          "points; a ring may have at most %s: use "
			          "vnodes = %d or fewer",
			          which, def->n_nodes, def->vnodes,
			          text_thousands(points, a, sizeof(a)),
			          text_thousands(RS_PLAN_MAX_RING_POINTS, b,
			                         sizeof(b)),
			          RS_PLAN_MAX_RING_POINTS / def->n_nodes);
	}
	if (def->kind == RS_MAP_SLOTS && def->databases > 0) {
		const config_setting_t *t =
			config_setting_get_member(group, "tables_per_db");
		const config_setting_t *f =
			config_setting_get_member(group, "table_format");
		const char *format = def->table_format != NULL
		                             ? def->table_format
		                             : RS_TABLE_FORMAT_DEFAULT;
		uint64_t slots =
			(uint64_t)def->databases * (uint64_t)def->tables_per_db;
		char longest[1024] = "";
		size_t longest_len = 0;

		per_table = slots;
		/* An unusable table_format is reported already. */
		if (f != NULL && def->table_format == NULL)
			format = NULL;
		if (slots > RS_PLAN_MAX_SLOT_TABLES)
			plan_diag(ld, setting_line(t != NULL ? t : group),
			          "slots map '%s' has %d databases x %d "
			          "tables_per_db = %s slot tables; a slots map "
			          "may have at most %s: use tables_per_db = %d "
			          "or fewer",
			          which, def->databases, def->tables_per_db,
			          text_thousands(slots, a, sizeof(a)),
			          text_thousands(RS_PLAN_MAX_SLOT_TABLES, b,
			                         sizeof(b)),
			          RS_PLAN_MAX_SLOT_TABLES / def->databases);
		/* The last table index has the most digits: the longest name
		 * of each table.  Names already too long are reported. */
		for (int i = 0; i < plan->n_tables && format != NULL; i++) {
			const char *name = plan->tables[i].name;
			char physical[sizeof(longest)];
			int len;

			if (name == NULL || strlen(name) > RS_PLAN_MAX_NAME)
				continue;
			/* A name too long even for PHYSICAL keeps what fit. */
			memset(physical, 0, sizeof(physical));
			len = map_format_table_name(format, name,
			                            def->tables_per_db - 1,
			                            physical, sizeof(physical));
			if (len < 0)
				len = (int)sizeof(physical);
			if ((size_t)len > RS_PLAN_MAX_NAME &&
			    (size_t)len > longest_len) {
				longest_len = (size_t)len;
				snprintf(longest, sizeof(longest), "%s",
				         physical);
			}
		}
		if (longest_len > 0)
			plan_diag(ld, setting_line(f != NULL ? f : group),
			          "slots map '%s' names a table '%.*s%s' "
			          "(%zu bytes) with table_format \"%s\"; a "
			          "physical table name may have at most %d "
			          "bytes, the longest PostgreSQL keeps whole: "
			          "use a shorter table_format or table name",
			          which, NAME_SHOWN(longest, longest_len),
			          longest_len, format, RS_PLAN_MAX_NAME);
	}
	if ((uint64_t)plan->n_tables * per_table >
	    RS_PLAN_MAX_PHYSICAL_TABLES) {
		char c[32];

		plan_diag(ld, setting_line(group),
		          "map '%s' makes %d tables x %s %s = %s physical "
		          "tables; a map may make at most %s: put fewer tables "
		          "in one plan%s",
		          which, plan->n_tables,
		          text_thousands(per_table, a, sizeof(a)),
		          def->kind == RS_MAP_SLOTS ? "slot tables" : "nodes",
		          text_thousands((uint64_t)plan->n_tables * per_table,
		                         b, sizeof(b)),
		          text_thousands(RS_PLAN_MAX_PHYSICAL_TABLES, c,
		                         sizeof(c)),
		          def->kind == RS_MAP_SLOTS
		                  ? " or use fewer slot tables"
		                  : "");
	}
}

int
plan_doubled_nodes(const struct rs_plan *plan, char *buf, size_t size)
{
	const struct rs_map_def *from = &plan->from_def;
	size_t k = 0;

	buf[0] = '\0';
	if (from->n_nodes == 0)
		return -1;
	for (int i = 0; i < 2 * from->n_nodes; i++) {
		int s = from->nodes[i % from->n_nodes];
		int n;

		if (s >= 0 && i >= from->n_nodes)
			s = plan->shards[s].replica;
		if (s < 0)
			return -1;
		/* A replica that is a node of from is a mistake of its own. */
		for (int j = 0; i >= from->n_nodes && j < from->n_nodes; j++)
			if (from->nodes[j] == s)
				return -1;
		n = snprintf(buf + k, size - k, "%s\"%s\"", i ? ", " : "",
		             plan->shards[s].name);
		if (n < 0 || (size_t)n >= size - k)
			return -1;
		k += (size_t)n;
	}
	return 2 * from->n_nodes;
}

/* The nodes of a suggested `from` or `to` (WHICH) into BUF, so that the
 * suggestion names shards of this plan: for `from` those that are no
 * shard's replica, for `to` from's nodes and then their replicas when
 * every one has one, else every shard; "db0", "db1" when no shard was
 * read.  Returns how many. */
static int
map_example_nodes(struct plan_loader *ld, const char *which, char *buf,
                  size_t size)
{
	const struct rs_plan *plan = ld->plan;
	int to = strcmp(which, "to") == 0;
	unsigned char *is_replica;
	size_t k = 0;
	int n = 0;

	if (to && ld->from_state != PLAN_MAP_UNREAD &&
	    plan->from_def.kind != RS_MAP_RANGES &&
	    (n = plan_doubled_nodes(plan, buf, size)) > 0)
		return n;
	buf[0] = '\0';
	n = 0;
	is_replica = calloc((size_t)plan->n_shards + 1, 1);
	if (is_replica == NULL) {
		ld->nomem = 1;
		return 0;
	}
	for (int i = 0; i < plan->n_shards && plan->shards != NULL; i++)
		if (plan->shards[i].replica >= 0)
			is_replica[plan->shards[i].replica] = 1;
	for (int i = 0; i < plan->n_shards && plan->shards != NULL; i++) {
		const char *name = plan->shards[i].name;

		if (name == NULL || !is_plain_name(name) ||
		    plan_shard_index(plan, name) != i || (!to && is_replica[i]))
			continue;
		if (k + strlen(name) + 16 > size) {
			snprintf(buf + k, size - k, ", ...");
			break;
		}
		k += (size_t)snprintf(buf + k, size - k, "%s\"%s\"",
		                      n > 0 ? ", " : "", name);
		n++;
	}
	free(is_replica);
	if (n == 0) {
		snprintf(buf, size, "\"db0\", \"db1\"");
		n = 2;
	}
	return n;
}

/* Report that the plan has no map WHICH, suggesting one of the kind of
 * OTHER (the map it does have, read as far as OTHER_STATE says), so that
 * the two fit together. */
static void
report_missing_map(struct plan_loader *ld, const char *which,
                   const struct rs_map_def *other,
                   enum plan_map_state other_state)
{
	enum rs_map_kind kind = RS_MAP_MODULO;
	char list[512], settings[96] = "";
	int n = map_example_nodes(ld, which, list, sizeof(list));

	/* A ranges or logical map has no nodes list to follow. */
	if (other_state != PLAN_MAP_UNREAD && other->kind != RS_MAP_RANGES &&
	    other->kind != RS_MAP_LOGICAL)
		kind = other->kind;
	if (kind == RS_MAP_SLOTS)
		snprintf(settings, sizeof(settings),
		         "databases = %d; tables_per_db = %d; ",
		         n <= RS_PLAN_MAX_SHARDS ? n : RS_PLAN_MAX_SHARDS,
		         other->tables_per_db > 0 ? other->tables_per_db : 1);
	else if (kind == RS_MAP_RING)
		snprintf(settings, sizeof(settings), "vnodes = %d; ",
		         other->vnodes > 0 ? other->vnodes : 100);
	plan_diag(ld, 1,
	          "the plan has no '%s', the map that places rows %s; add "
	          "%s = { map = \"%s\"; %snodes = [%s]; };",
	          which, strcmp(which, "from") == 0 ? "now" : "once resharded",
	          which, map_kind_name(kind), settings, list);
}

/* How far a map was read: NAMED says whether every node was a name, and
 * N_BEFORE is how many mistakes were known before it was read. */
static enum plan_map_state
map_state(const struct plan_loader *ld, int named, int n_before)
{
	if (!named || ld->plan->shards == NULL)
		return PLAN_MAP_UNREAD;
	return ld->diags->n == n_before ? PLAN_MAP_OK : PLAN_MAP_READ;
}

static enum plan_map_state
read_map(struct plan_loader *ld, const config_setting_t *root,
         const char *which, struct rs_map_def *def)
{
	static const char *const known[] = {"map",
	                                    "nodes",
	                                    "databases",
	                                    "tables_per_db",
	                                    "table_format",
	                                    "vnodes",
	                                    "ranges",
	                                    "shift",
	                                    "bits",
	                                    "logical_shards",
	                                    "assign",
	                                    "overrides",
	                                    NULL};
	/* Which of known[1..] each kind takes: nodes, databases, tables,
	 * format, vnodes, ranges, shift, bits, logical_shards, assign,
	 * overrides. */
	static const char kind_takes[5][11] = {
		[RS_MAP_MODULO] = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
		[RS_MAP_SLOTS] = {1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1},
		[RS_MAP_RING] = {1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1},
		[RS_MAP_RANGES] = {0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1},
		[RS_MAP_LOGICAL] = {0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1},
	};
	const char *example = "{ map = \"ring\"; vnodes = 100; nodes = "
			      "[\"db0\", \"db1\"]; }";
	const config_setting_t *group;
	const config_setting_t *nodes;
	const char **listed;
	const char *kind;
	char where[32];
	int n_before = ld->diags->n;
	int named = 1;

	def->kind = RS_MAP_MODULO;
	if (config_setting_get_member(root, which) == NULL)
		return PLAN_MAP_UNREAD; /* report_missing_map says so */
	group = get_group(ld, root, which, 1, example);
	if (group == NULL)
		return PLAN_MAP_UNREAD;
	snprintf(where, sizeof(where), "map '%s'", which);
	check_known(ld, group, where, known);
	kind = get_string(ld, group, where, "map", 1,
	                  "map = \"slots\"; (or modulo, ring, ranges, "
	                  "logical)");
	if (kind == NULL)
		return PLAN_MAP_UNREAD;
	if (map_kind_from_name(kind, &def->kind) != 0) {
		static const char *const kinds[] = {"modulo", "slots", "ring",
		                                    "ranges", "logical"};
		const char *close = text_closest(kind, kinds, 5);

		plan_diag(ld,
		          setting_line(config_setting_get_member(group, "map")),
		          "unknown map '%s'%s%s%s; the maps are modulo, slots, "
		          "ring, ranges and logical",
		          kind, close ? " (did you mean '" : "",
		          close ? close : "", close ? "'?)" : "");
		return PLAN_MAP_UNREAD;
	}
	for (int k = 1; known[k] != NULL; k++) {
		const config_setting_t *m =
			config_setting_get_member(group, known[k]);

		if (m != NULL && !kind_takes[def->kind][k - 1])
			plan_diag(ld, setting_line(m),
			          "'%s' is not a setting of a %s map; remove "
			          "it",
			          known[k], kind);
	}
	read_overrides(ld, group, def);
	if (def->kind == RS_MAP_RANGES) {
		named = read_ranges(ld, group, def);
		if (def->ranges != NULL)
			check_map_limits(ld, group, which, def);
		return map_state(ld, named, n_before);
	}
	if (def->kind == RS_MAP_LOGICAL) {
		named = read_logical(ld, group, def);
		if (def->ranges != NULL)
			check_map_limits(ld, group, which, def);
		return map_state(ld, named, n_before);
	}
	nodes = get_list(ld, group, where, "nodes", CONFIG_TYPE_ARRAY, 1,
	                 "nodes = [\"db0\", \"db1\"];");
	if (def->kind == RS_MAP_SLOTS) {
		const config_setting_t *f;
		/* The databases a suggestion names: one per node listed. */
		int per_node = nodes != NULL ? config_setting_length(nodes) : 2;

		if (per_node > RS_PLAN_MAX_SHARDS)
			per_node = RS_PLAN_MAX_SHARDS;
		def->databases = (int)get_int(ld, group, "databases", 0, 1,
		                              RS_PLAN_MAX_SHARDS, per_node);
		def->tables_per_db =
			(int)get_int(ld, group, "tables_per_db", 1, 1,
		                     RS_PLAN_MAX_SLOT_TABLES, 1);
		if (config_setting_get_member(group, "databases") == NULL)
			plan_diag(ld, setting_line(group),
			          "a slots map needs 'databases'; add "
			          "databases = %d; (one per node)",
			          per_node);
		f = config_setting_get_member(group, "table_format");
		if (f != NULL) {
			const char *format =
				get_string(ld, group, where, "table_format", 0,
			                   "table_format = \"%s_%d\";");
			const char *why;

			if (format != NULL &&
			    map_check_table_format(format, &why) != 0)
				plan_diag(ld, setting_line(f),
				          "table_format \"%s\" is not usable: "
				          "%s; e.g. \"%%s_%%d\"",
				          format, why);
			else if (format != NULL)
				def->table_format = dup_or_flag(ld, format);
		}
	}
	if (def->kind == RS_MAP_RING) {
		def->vnodes =
			(int)get_int(ld, group, "vnodes", 0, 1, 100000, 100);
		if (config_setting_get_member(group, "vnodes") == NULL)
			plan_diag(ld, setting_line(group),
			          "a ring map needs 'vnodes'; add vnodes = "
			          "100; (points per node on the ring)");
	}
	if (nodes == NULL)
		return PLAN_MAP_UNREAD;
	def->n_nodes = config_setting_length(nodes);
	def->nodes = calloc((size_t)def->n_nodes, sizeof(int));
	/* A node that is not a shard is told of one not listed yet. */
	listed = calloc((size_t)def->n_nodes, sizeof(char *));
	if (def->nodes == NULL || listed == NULL) {
		free(listed);
		ld->nomem = 1;
		return PLAN_MAP_UNREAD;
	}
	for (int i = 0; i < def->n_nodes; i++) {
		def->nodes[i] = -1;
		listed[i] = config_setting_get_string(
			config_setting_get_elem(nodes, (unsigned)i));
	}
	for (int i = 0; i < def->n_nodes; i++) {
		const char *name = listed[i];

		if (name == NULL) {
			plan_diag(ld, setting_line(nodes),
			          "nodes must be shard names in quotes, e.g. "
			          "nodes = [\"db0\", \"db1\"];");
			named = 0;
			break;
		}
		def->nodes[i] = resolve_shard(ld, name, setting_line(nodes),
		                              "node", listed, def->n_nodes);
		for (int j = 0; j < i && def->nodes[i] >= 0; j++)
			if (def->nodes[j] == def->nodes[i])
				plan_diag(ld, setting_line(nodes),
				          "node '%s' is listed twice in %s; "
				          "list each node once",
				          name, which);
	}
	if (def->kind == RS_MAP_SLOTS && def->databases > 0 &&
	    def->n_nodes != def->databases)
		plan_diag(ld, setting_line(nodes),
		          "a slots map with databases = %d needs %d nodes, "
		          "one per database, but lists %d",
		          def->databases, def->databases, def->n_nodes);
	free(listed);
	check_map_limits(ld, group, which, def);
	return map_state(ld, named, n_before);
}

static void
read_options(struct plan_loader *ld, const config_setting_t *root)
{
	static const char *const known[] = {"batch_rows",
	                                    "parallel",
	                                    "max_rows_per_second",
	                                    "max_replica_lag_seconds",
	                                    "fence_timeout_seconds",
	                                    "lock_timeout_ms",
	                                    "operation_timeout_seconds",
	                                    "create_tables",
	                                    "keep_guard",
	                                    "allow_cascades",
	                                    NULL};
	struct rs_plan_options *o = &ld->plan->options;
	const config_setting_t *g = get_group(
		ld, root, "options", 0, "options = { batch_rows = 5000; };");

	o->batch_rows = 5000;
	o->parallel = 4;
	o->max_rows_per_second = 0;
	o->max_replica_lag_seconds = 5;
	o->fence_timeout_seconds = 30;
	o->lock_timeout_ms = 2000;
	o->operation_timeout_seconds = 60;
	if (g == NULL)
		return;
	check_known(ld, g, "options", known);
	o->batch_rows =
		(int)get_int(ld, g, "batch_rows", 5000, 1, 1000000, 5000);
	o->parallel = (int)get_int(ld, g, "parallel", 4, 1, 256, 4);
	o->max_rows_per_second = (long)get_int(ld, g, "max_rows_per_second", 0,
	                                       0, 1000000000, 0);
	o->max_replica_lag_seconds =
		(int)get_int(ld, g, "max_replica_lag_seconds", 5, 0, 86400, 5);
	o->fence_timeout_seconds =
		(int)get_int(ld, g, "fence_timeout_seconds", 30, 1, 86400, 30);
	o->lock_timeout_ms =
		(int)get_int(ld, g, "lock_timeout_ms", 2000, 1, 3600000, 2000);
	o->operation_timeout_seconds = (int)get_int(
		ld, g, "operation_timeout_seconds", 60, 1, 86400, 60);
	o->create_tables = get_bool(ld, g, "create_tables", 0);
	o->keep_guard = get_bool(ld, g, "keep_guard", 0);
	o->allow_cascades = get_bool(ld, g, "allow_cascades", 0);
}

/* PATH if absolute, else DIR/PATH.  NULL on no memory. */
static char *
resolve_path(const char *dir, const char *path)
{
	size_t n = strlen(dir) + strlen(path) + 2;
	char *out;

	if (path[0] == '/')
		return strdup(path);
	out = malloc(n);
	if (out != NULL)
		snprintf(out, n, "%s/%s", dir, path);
	return out;
}

static void
read_publish(struct plan_loader *ld, const config_setting_t *root)
{
	static const char *const known[] = {"file", "command", NULL};
	struct rs_plan *plan = ld->plan;
	const config_setting_t *g =
		get_group(ld, root, "publish", 0,
	                  "publish = { file = \"routing.cfg\"; };");
	const char *file = NULL, *command = NULL;
	char fallback[128];

	if (g != NULL) {
		check_known(ld, g, "publish", known);
		file = get_string(ld, g, "publish", "file", 0,
		                  "file = \"routing.cfg\";");
		command = get_string(ld, g, "publish", "command", 0,
		                     "command = \"./reload-app.sh\";");
	}
	if (file == NULL) {
		snprintf(fallback, sizeof(fallback), "%s.routing.cfg",
		         plan->name != NULL ? plan->name : "reshard");
		file = fallback;
	}
	ld->publish_line = setting_line(
		g != NULL && config_setting_get_member(g, "file") != NULL
			? config_setting_get_member(g, "file")
			: g);
	plan->publish_file = resolve_path(plan->dir, file);
	if (plan->publish_file == NULL)
		ld->nomem = 1;
	if (command != NULL)
		plan->publish_command = dup_or_flag(ld, command);
}

static void
read_root(struct plan_loader *ld, const config_setting_t *root)
{
	static const char *const known[] = {
		"version", "name", "journal",  "hash",    "tables",  "shards",
		"from",    "to",   "strategy", "options", "publish", NULL};
	struct rs_plan *plan = ld->plan;
	const config_setting_t *m;
	const char *s;
	char fallback[128];

	check_known(ld, root, "the plan", known);

	m = config_setting_get_member(root, "version");
	if (m == NULL)
		plan_diag(ld, 1, "the plan has no 'version'; add version = 1;");
	else
		plan->version = (int)get_int(ld, root, "version", 1, 1, 1, 1);

	s = get_string(ld, root, "the plan", "name", 1,
	               "name = \"orders-2x\";");
	if (s != NULL && !is_plain_name(s))
		plan_diag(ld,
		          setting_line(config_setting_get_member(root, "name")),
		          "name '%s' must be 1 to 63 letters, digits, '-', "
		          "'_' or '.'; it names the run in fence messages and "
		          "the journal",
		          s);
	else if (s != NULL)
		plan->name = dup_or_flag(ld, s);

	plan->hash = RS_HASH_SHA256_64;
	m = config_setting_get_member(root, "hash");
	ld->hash_line = setting_line(m);
	s = get_string(ld, root, "the plan", "hash", 0,
	               "hash = \"sha256_64\";");
	ld->hash_ok =
		m == NULL || (s != NULL && hash_from_name(s, &plan->hash) == 0);
	if (s != NULL && !ld->hash_ok) {
		static const char *const names[] = {"sha256_64", "java",
		                                    "fnv1a_64", "identity"};
		const char *close = text_closest(s, names, 4);

		plan_diag(ld, ld->hash_line,
		          "unknown hash '%s'%s%s%s; the hashes are %s", s,
		          close ? " (did you mean '" : "", close ? close : "",
		          close ? "'?)" : "", hash_names());
	}

	ld->journal_line =
		setting_line(config_setting_get_member(root, "journal"));
	s = get_string(ld, root, "the plan", "journal", 0,
	               "journal = \"orders-2x.journal\";");
	if (s == NULL) {
		snprintf(fallback, sizeof(fallback), "%s.journal",
		         plan->name != NULL ? plan->name : "reshard");
		s = fallback;
	}
	plan->journal = resolve_path(plan->dir, s);
	if (plan->journal == NULL)
		ld->nomem = 1;

	read_tables(ld, root);
	read_shards(ld, root);
	/* Read without shards too, so that every other mistake in the maps
	 * (and a missing map) is reported in the same run. */
	if (!ld->nomem) {
		ld->from_line =
			setting_line(config_setting_get_member(root, "from"));
		ld->to_line =
			setting_line(config_setting_get_member(root, "to"));
		ld->from_state = read_map(ld, root, "from", &plan->from_def);
		ld->to_state = read_map(ld, root, "to", &plan->to_def);
		if (config_setting_get_member(root, "from") == NULL)
			report_missing_map(ld, "from", &plan->to_def,
			                   ld->to_state);
		if (config_setting_get_member(root, "to") == NULL)
			report_missing_map(ld, "to", &plan->from_def,
			                   ld->from_state);
	}

	m = config_setting_get_member(root, "strategy");
	ld->strategy_line = setting_line(m);
	s = get_string(ld, root, "the plan", "strategy", 1,
	               "strategy = \"doubling\"; (or \"split\")");
	ld->strategy_ok = s != NULL && (strcmp(s, "doubling") == 0 ||
	                                strcmp(s, "split") == 0);
	if (s != NULL && strcmp(s, "doubling") == 0)
		plan->strategy = RS_STRATEGY_DOUBLING;
	else if (s != NULL && strcmp(s, "split") == 0)
		plan->strategy = RS_STRATEGY_SPLIT;
	else if (s != NULL)
		plan_diag(ld, ld->strategy_line,
		          "unknown strategy '%s'; use \"doubling\" (promote "
		          "replicas) or \"split\" (copy movers)",
		          s);

	read_options(ld, root);
	read_publish(ld, root);
}

/* A mistake and the order it was found in, for a stable sort. */
struct diag_found {
	struct rs_plan_diag diag;
	int order;
};

static int
diag_cmp(const void *a, const void *b)
{
	const struct diag_found *x = a, *y = b;
	const char *fx = x->diag.file, *fy = y->diag.file;

	if ((fx == NULL) != (fy == NULL))
		return fx == NULL ? -1 : 1;
	if (fx != NULL && strcmp(fx, fy) != 0)
		return strcmp(fx, fy);
	if (x->diag.line != y->diag.line)
		return (x->diag.line > y->diag.line) -
		       (x->diag.line < y->diag.line);
	return (x->order > y->order) - (x->order < y->order);
}

/* Sort DIAGS by line, mistakes of one line in the order they were found.
 * Returns 0 or RS_ENOMEM (DIAGS then unchanged). */
static int
diags_sort(struct rs_plan_diags *diags)
{
	struct diag_found *found = malloc(sizeof(*found) * (size_t)diags->n);

	if (found == NULL)
		return RS_ENOMEM;
	for (int i = 0; i < diags->n; i++) {
		found[i].diag = diags->items[i];
		found[i].order = i;
	}
	qsort(found, (size_t)diags->n, sizeof(*found), diag_cmp);
	for (int i = 0; i < diags->n; i++)
		diags->items[i] = found[i].diag;
	free(found);
	return 0;
}

/* Whether C may be part of a name or a number (a digit after it is not the
 * start of an integer). */
static int
word_char(int c)
{
	return isalnum(c) || c == '_' || c == '.';
}

/* The integer at *P, in TEXT on line LINE: said when it is written
 * without the L suffix and is outside 32 bits.  *P is left after it. */
static void
check_plain_integer(struct plan_loader *ld, const char *text, const char **p,
                    int line)
{
	const char *start = *p, *s = start;
	int hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X'), wide = 0;
	int negative = start > text && start[-1] == '-';
	uint64_t v = 0, base = hex ? 16 : 10;

	for (s += hex ? 2 : 0;
	     hex ? isxdigit((unsigned char)*s) : isdigit((unsigned char)*s);
	     s++) {
		uint64_t d = isdigit((unsigned char)*s)
		                     ? (uint64_t)(*s - '0')
		                     : (uint64_t)(tolower((unsigned char)*s) -
		                                  'a' + 10);

		wide |= v > (UINT64_MAX - d) / base;
		v = v * base + d;
	}
	/* A float (1.5, 2e9), or a 64-bit integer (5000000000L): fine. */
	if (!hex && (*s == '.' || *s == 'e' || *s == 'E')) {
		while (word_char((unsigned char)*s) ||
		       ((*s == '+' || *s == '-') &&
		        (s[-1] == 'e' || s[-1] == 'E')))
			s++;
		*p = s;
		return;
	}
	*p = s;
	if (*s == 'L')
		return;
	/* A minus sign allows one more: -2147483648. */
	if (wide || v > (uint64_t)INT32_MAX + (uint64_t)(negative && !hex))
		plan_diag(ld, line,
		          "integer %.*s does not fit in 32 bits, and the plan "
		          "reader takes an integer written without L in 32 "
		          "bits (a larger one would silently become another "
		          "number): write it %.*sL",
		          (int)(s - start), start, (int)(s - start), start);
}

static void check_plain_integers(struct plan_loader *ld, const char *path,
                                 int depth);

/* At P, "@include": look through the file it names too (as libconfig
 * finds it: from the working directory), its mistakes named by its path.
 * *P is left after the directive's name. */
static void
check_included_integers(struct plan_loader *ld, const char **p, int depth)
{
	const char *s = *p + strlen("@include"), *end;
	const char *outer = ld->diag_file;
	char *name;

	*p = s;
	while (*s == ' ' || *s == '\t')
		s++;
	if (*s != '"' || (end = strchr(s + 1, '"')) == NULL ||
	    (name = strndup(s + 1, (size_t)(end - s - 1))) == NULL)
		return; /* libconfig says what is wrong with it */
	ld->diag_file = name;
	check_plain_integers(ld, name, depth + 1);
	ld->diag_file = outer;
	free(name);
}

/* libconfig (1.5, Debian 12's) reads an integer written without the L
 * suffix in 32 bits: `end = 5000000000;` becomes 705032704, with no
 * error.  Look through the plan's text (outside strings and comments),
 * and the files it includes, for such integers, and say how to write
 * them. */
static void
check_plain_integers(struct plan_loader *ld, const char *path, int depth)
{
	FILE *f = depth < 10 ? fopen(path, "r") : NULL;
	char *text = NULL;
	size_t size = 0;
	int line = 1;

	if (f == NULL)
		return; /* read a moment ago: nothing new to say */
	if (getdelim(&text, &size, '\0', f) < 0) {
		free(text);
		fclose(f);
		return;
	}
	fclose(f);
	for (const char *p = text; *p != '\0';) {
		if (*p == '\n') {
			line++;
			p++;
		} else if (*p == '"') {
			for (p++; *p != '\0' && *p != '"'; p++) {
				if (*p == '\\' && p[1] != '\0')
					p++;
				line += *p == '\n';
			}
			p += *p == '"';
		} else if (*p == '#' || (p[0] == '/' && p[1] == '/')) {
			while (*p != '\0' && *p != '\n')
				p++;
		} else if (p[0] == '/' && p[1] == '*') {
			for (p += 2;
			     *p != '\0' && !(p[0] == '*' && p[1] == '/'); p++)
				line += *p == '\n';
			p += *p != '\0' ? 2 : 0;
		} else if (isdigit((unsigned char)*p) &&
		           (p == text || !word_char((unsigned char)p[-1]))) {
			check_plain_integer(ld, text, &p, line);
		} else if (strncmp(p, "@include", strlen("@include")) == 0) {
			check_included_integers(ld, &p, depth);
		} else {
			p++;
		}
	}
	free(text);
}

int
plan_load(const char *path, struct rs_plan **planp, struct rs_plan_diags *diags,
          struct rs_err *err)
{
	struct plan_loader ld = {0};
	struct rs_plan *plan;
	config_t cfg;
	char *copy;
	int rc = 0;

	*planp = NULL;
	memset(diags, 0, sizeof(*diags));
	plan = calloc(1, sizeof(*plan));
	/* Relative paths in the plan are taken from its folder, made
	 * absolute so that they do not depend on where reshard runs. */
	copy = realpath(path, NULL);
	if (copy == NULL && errno != ENOMEM)
		copy = strdup(path);
	if (plan == NULL || copy == NULL) {
		free(plan);
		free(copy);
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	}
	plan->path = strdup(path);
	plan->dir = strdup(dirname(copy));
	free(copy);
	if (plan->path == NULL || plan->dir == NULL) {
		plan_free(plan);
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	}

	config_init(&cfg);
	if (config_read_file(&cfg, path) != CONFIG_TRUE) {
		if (config_error_type(&cfg) == CONFIG_ERR_FILE_IO) {
			rc = rs_err_set(err, RS_EPLAN,
			                "cannot read plan %s: %s", path,
			                strerror(errno));
		} else {
			ld.diags = diags;
			ld.plan = plan;
			plan_diag(&ld, config_error_line(&cfg),
			          "%s; check the syntax: settings are written "
			          "name = value; with strings in double "
			          "quotes, lists in ( ) and arrays in [ ]",
			          config_error_text(&cfg));
			rc = rs_err_set(err, RS_EPLAN,
			                "plan %s has a syntax error", path);
		}
		config_destroy(&cfg);
		plan_free(plan);
		return rc;
	}
	ld.plan = plan;
	ld.diags = diags;
	check_plain_integers(&ld, path, 0);
	read_root(&ld, config_root_setting(&cfg));
	if (!ld.nomem)
		plan_check(&ld);
	config_destroy(&cfg);
	if (!ld.nomem && diags->n > 0 && diags_sort(diags) != 0)
		ld.nomem = 1;

	if (ld.nomem) {
		plan_free(plan);
		plan_diags_clear(diags);
		return rs_err_set(err, RS_ENOMEM, "out of memory reading %s",
		                  path);
	}
	if (diags->n > 0) {
		plan_free(plan);
		return rs_err_set(err, RS_EPLAN, "plan %s has %d mistake%s",
		                  path, diags->n, diags->n == 1 ? "" : "s");
	}
	*planp = plan;
	return 0;
}

void
plan_free(struct rs_plan *plan)
{
	if (plan == NULL)
		return;
	for (int i = 0; i < plan->n_tables; i++) {
		free(plan->tables[i].name);
		free(plan->tables[i].key);
	}
	free(plan->tables);
	for (int i = 0; i < plan->n_shards; i++) {
		free(plan->shards[i].name);
		free(plan->shards[i].url);
		free(plan->shards[i].password_env);
	}
	free(plan->shards);
	free(plan->shard_names);
	map_def_clear(&plan->from_def);
	map_def_clear(&plan->to_def);
	map_free(plan->from);
	map_free(plan->to);
	free(plan->path);
	free(plan->dir);
	free(plan->name);
	free(plan->journal);
	free(plan->publish_file);
	free(plan->publish_command);
	free(plan);
}

void
plan_diags_print(const struct rs_plan_diags *diags, const char *path, FILE *out)
{
	for (int i = 0; i < diags->n; i++)
		fprintf(out, "%s:%d: %s\n",
		        diags->items[i].file != NULL ? diags->items[i].file
		                                     : path,
		        diags->items[i].line, diags->items[i].message);
}

void
plan_diags_clear(struct rs_plan_diags *diags)
{
	for (int i = 0; i < diags->n; i++) {
		free(diags->items[i].message);
		free(diags->items[i].file);
	}
	free(diags->items);
	memset(diags, 0, sizeof(*diags));
}

int
plan_shard_index(const struct rs_plan *plan, const char *name)
{
	for (int i = 0; i < plan->n_shards; i++)
		if (plan->shards[i].name != NULL &&
		    strcmp(plan->shards[i].name, name) == 0)
			return i;
	return -1;
}

int
plan_primary_of(const struct rs_plan *plan, int shard)
{
	for (int i = 0; i < plan->n_shards; i++)
		if (plan->shards[i].replica == shard)
			return i;
	return -1;
}

int
plan_table_index(const struct rs_plan *plan, const char *name)
{
	for (int i = 0; i < plan->n_tables; i++)
		if (plan->tables[i].name != NULL &&
		    strcmp(plan->tables[i].name, name) == 0)
			return i;
	return -1;
}

const char *
plan_strategy_name(enum rs_strategy strategy)
{
	return strategy == RS_STRATEGY_DOUBLING ? "doubling" : "split";
}
