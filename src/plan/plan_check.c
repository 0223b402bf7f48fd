/*
 * Plan rules that span several settings: every shard is used, maps compile
 * under the plan's hash, and a doubling moves rows only from a shard to its
 * declared replica — proven over the whole point space by
 * map_prove_doubling, never sampled.
 *
 * Each rule runs when the settings it looks at were read well enough, even
 * if other settings have mistakes, so that one run reports them all.  A
 * doubling that breaks its rule is reported once for each shard whose
 * points go astray, with advice that fits the kind of the `to` map.
 */
#include "plan/plan_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "backend/url.h"
#include "common/text.h"

static int
map_uses(const struct rs_map_def *def, int shard)
{
	for (int i = 0; i < def->n_nodes; i++)
		if (def->nodes[i] == shard)
			return 1;
	for (int i = 0; i < def->n_ranges; i++)
		if (def->ranges[i].shard == shard)
			return 1;
	for (int i = 0; i < def->n_overrides; i++)
		if (def->overrides[i].shard == shard)
			return 1;
	return 0;
}

static void
check_shards_used(struct plan_loader *ld)
{
	const struct rs_plan *plan = ld->plan;

	/* A shard that is not a group, has no name or one taken already
	 * cannot be in a map: that mistake is reported already. */
	for (int i = 0; i < plan->n_shards; i++)
		if (plan->shards[i].name != NULL &&
		    plan->shards[i].name[0] != '\0' &&
		    plan_shard_index(plan, plan->shards[i].name) == i &&
		    !map_uses(&plan->from_def, i) &&
		    !map_uses(&plan->to_def, i))
			plan_diag(ld, plan->shards[i].line,
			          "shard '%s' is in neither the from nor the "
			          "to map; add it to a map or remove it",
			          plan->shards[i].name);
}

static void
check_doubling_shapes(struct plan_loader *ld)
{
	const struct rs_plan *plan = ld->plan;

	for (int i = 0; i < plan->n_shards; i++) {
		int replica = plan->shards[i].replica;

		if (replica >= 0 && map_uses(&plan->from_def, replica))
			plan_diag(ld, plan->shards[i].line,
			          "replica '%s' of shard '%s' is also a node "
			          "of the from map; a doubling promotes a "
			          "replica that owns nothing yet",
			          plan->shards[replica].name,
			          plan->shards[i].name);
	}
}

/* A doubling keeps every shard of `from`: its delete logs, purge and
 * final-check go over the shards of `to`, so a shard left out would keep
 * a stale copy of every row, fenced for good. */
static void
check_doubling_keeps(struct plan_loader *ld)
{
	const struct rs_plan *plan = ld->plan;

	for (int i = 0; i < plan->n_shards; i++)
		if (map_uses(&plan->from_def, i) && !map_uses(&plan->to_def, i))
			plan_diag(ld, ld->to_line,
			          "strategy \"doubling\" (line %d): shard '%s' "
			          "is a node of the from map but not of the to "
			          "map; a doubling keeps every shard and hands "
			          "part of its rows to its replica, it cannot "
			          "retire one: add '%s' to the to map",
			          ld->strategy_line, plan->shards[i].name,
			          plan->shards[i].name);
}

/* PATH made comparable with another: the real path of its folder and its
 * name (the file itself may not exist yet), malloc'd; NULL when the
 * folder cannot be resolved (PATH is then compared as it is). */
static char *
comparable_path(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir, *real, *out = NULL;

	if (slash == NULL) /* in the working directory */
		dir = strdup(".");
	else
		dir = strndup(path, (size_t)(slash - path) + (slash == path));
	real = dir != NULL ? realpath(dir, NULL) : NULL;
	if (real != NULL &&
	    asprintf(&out, "%s/%s", strcmp(real, "/") == 0 ? "" : real,
	             slash != NULL ? slash + 1 : path) < 0)
		out = NULL;
	free(real);
	free(dir);
	return out;
}

/* Whether paths A and B name one file. */
static int
same_file(const char *a, const char *b)
{
	char *ca = comparable_path(a), *cb = comparable_path(b);
	int same = strcmp(ca != NULL ? ca : a, cb != NULL ? cb : b) == 0;

	free(ca);
	free(cb);
	return same;
}

/* The files reshard writes (the routing file, the journal) must not be
 * the plan or a SQLite shard: publish would write the routing text over
 * a shard's database, the journal would put its tables in one. */
static void
check_files_apart(struct plan_loader *ld)
{
	const struct rs_plan *plan = ld->plan;
	const struct {
		const char *what, *path, *setting;
		int line;
	} written[] = {
		{"the routing file", plan->publish_file, "publish.file",
	         ld->publish_line},
		{"the journal", plan->journal, "journal", ld->journal_line},
	};

	if (plan->journal != NULL && plan->publish_file != NULL &&
	    same_file(plan->journal, plan->publish_file))
		plan_diag(
			ld, ld->publish_line,
			"the routing file %s is also the journal: publish "
			"would write over the run's record; give publish.file "
			"a name of its own",
			plan->publish_file);
	for (size_t w = 0; w < sizeof(written) / sizeof(written[0]); w++) {
		if (written[w].path == NULL)
			continue;
		if (same_file(written[w].path, plan->path))
			plan_diag(ld, written[w].line,
			          "%s %s is the plan itself; give %s a name of "
			          "its own",
			          written[w].what, written[w].path,
			          written[w].setting);
		for (int s = 0; s < plan->n_shards; s++) {
			struct rs_url url;

			if (plan->shards[s].url == NULL ||
			    url_parse(plan->shards[s].url, plan->dir, &url,
			              NULL) != 0)
				continue;
			if (url.engine == RS_ENGINE_SQLITE &&
			    url.database != NULL &&
			    same_file(written[w].path, url.database))
				plan_diag(ld, written[w].line,
				          "%s %s is the database file of shard "
				          "'%s'; give %s a name of its own",
				          written[w].what, written[w].path,
				          plan->shards[s].name,
				          written[w].setting);
			url_clear(&url);
		}
	}
}

/* One physical table a map makes: its name, and the plan table and table
 * index it holds. */
struct physical_name {
	char name[RS_PLAN_MAX_NAME + 1];
	int table, index;
};

static int
physical_name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct physical_name *)a)->name,
	              ((const struct physical_name *)b)->name);
}

/* Say, at LINE, when map WHICH gives two of its physical tables one name
 * (a table_format without %s, or one whose digits run into a name): the
 * rows of two tables, keyed by two shard keys, would share a table. */
static void
check_names_unique(struct plan_loader *ld, const struct rs_map *map,
                   const char *which, int line)
{
	const struct rs_plan *plan = ld->plan;
	int slots = map_has_tables(map) ? map_def(map)->tables_per_db : 1;
	size_t n = (size_t)plan->n_tables * (size_t)slots, k = 0;
	struct physical_name *names = calloc(n + 1, sizeof(*names));

	if (names == NULL) {
		ld->nomem = 1;
		return;
	}
	for (int t = 0; t < plan->n_tables; t++)
		for (int i = 0; i < slots; i++, k++) {
			if (plan->tables[t].name == NULL ||
			    map_table_name(map, plan->tables[t].name, i,
			                   names[k].name,
			                   sizeof(names[k].name)) < 0)
				names[k].name[0] = '\0'; /* too long: said */
			names[k].table = t;
			names[k].index = i;
		}
	qsort(names, n, sizeof(*names), physical_name_cmp);
	for (k = 1; k < n; k++) {
		const struct physical_name *a = &names[k - 1], *b = &names[k];

		if (a->name[0] == '\0' || strcmp(a->name, b->name) != 0)
			continue;
		plan_diag(ld, line,
		          "the %s map names two tables '%s': table '%s' index "
		          "%d and table '%s' index %d; a physical table holds "
		          "the rows of one table index of one plan table: "
		          "give table_format a %%s and a %%d that cannot run "
		          "into each other (the default is \"%s\")",
		          which, a->name, plan->tables[a->table].name, a->index,
		          plan->tables[b->table].name, b->index,
		          RS_TABLE_FORMAT_DEFAULT);
		break;
	}
	free(names);
}

/* An owner is a shard and a table index, and a row whose owner stays is
 * not moved, so both maps must give each table index the same physical
 * name: reshard moves rows, it does not rename the table they stay in.
 * And neither map may give two physical tables one name. */
static void
check_physical_names(struct plan_loader *ld)
{
	const struct rs_plan *plan = ld->plan;
	int from_slots = map_has_tables(plan->from)
	                         ? map_def(plan->from)->tables_per_db
	                         : 1;
	int to_slots =
		map_has_tables(plan->to) ? map_def(plan->to)->tables_per_db : 1;
	int n = from_slots < to_slots ? from_slots : to_slots, said = 0;

	for (int t = 0; t < plan->n_tables && !said; t++)
		for (int i = 0; i < n && !said; i++) {
			char a[RS_PLAN_MAX_NAME + 1], b[RS_PLAN_MAX_NAME + 1];

			if (plan->tables[t].name == NULL ||
			    map_table_name(plan->from, plan->tables[t].name, i,
			                   a, sizeof(a)) < 0 ||
			    map_table_name(plan->to, plan->tables[t].name, i, b,
			                   sizeof(b)) < 0 ||
			    strcmp(a, b) == 0)
				continue;
			plan_diag(
				ld, ld->to_line,
				"table '%s' index %d is '%s' under the from "
				"map and '%s' under the to map; a row that "
				"stays on its shard stays in its table, so "
				"both maps must name the table alike: give "
				"them the same table_format, both or neither "
				"a slots map, or rename the tables before the "
				"run",
				plan->tables[t].name, i, a, b);
			said = 1;
		}
	check_names_unique(ld, plan->from, "from", ld->from_line);
	check_names_unique(ld, plan->to, "to", ld->to_line);
}

/*
 * Whether `replica = "T";` on shard F is a suggestion the plan would take
 * and that fixes F: F's points all move to T, F has no replica yet, T is
 * not a node of `from`, no shard names T as its replica, and no other
 * shard would be told to take T too.
 */
static int
replica_fits(const struct rs_plan *plan, const struct rs_doubling_found *found,
             int f)
{
	int t = found[f].bad_to;

	if (found[f].spread || plan->shards[f].replica >= 0 ||
	    map_uses(&plan->from_def, t))
		return 0;
	for (int g = 0; g < plan->n_shards; g++) {
		if (plan->shards[g].replica == t)
			return 0;
		if (g != f && found[g].bad_to == t && !found[g].spread &&
		    plan->shards[g].replica < 0)
			return 0;
	}
	return 1;
}

/* Whether shard S is a node of the nodes list of DEF. */
static int
nodes_hold(const struct rs_map_def *def, int s)
{
	for (int i = 0; i < def->n_nodes; i++)
		if (def->nodes[i] == s)
			return 1;
	return 0;
}

/* What would make shard F's points follow the doubling rule, into BUF,
 * fitting the kind of the `to` map. */
static void
doubling_advice(const struct rs_plan *plan,
                const struct rs_doubling_found *found, int f, char *buf,
                size_t size)
{
	const char *name = plan->shards[f].name;
	const char *t = plan->shards[found[f].bad_to].name;
	int replica = plan->shards[f].replica;
	const char *r = replica >= 0 ? plan->shards[replica].name : NULL;
	const struct rs_map_def *from = &plan->from_def, *to = &plan->to_def;
	int periodic_from =
		from->kind == RS_MAP_MODULO || from->kind == RS_MAP_SLOTS;
	char list[400], databases[48];

	snprintf(databases, sizeof(databases), " with databases = %d",
	         2 * from->n_nodes);

	if (replica_fits(plan, found, f)) {
		snprintf(buf, size, "add replica = \"%s\"; to shard '%s'", t,
		         name);
		return;
	}
	switch (to->kind) {
	case RS_MAP_RING:
		snprintf(buf, size,
		         "use strategy = \"split\" (a new ring node takes "
		         "points from several nodes, which one replica cannot "
		         "follow)");
		return;
	case RS_MAP_RANGES:
		if (r != NULL && !found[f].spread)
			snprintf(buf, size,
			         "give that range to %s in to, or use strategy "
			         "= \"split\"",
			         r);
		else if (r != NULL)
			snprintf(buf, size,
			         "give every range that %s loses to %s in to, "
			         "or use strategy = \"split\"",
			         name, r);
		else
			snprintf(buf, size,
			         "give every range that %s loses to one shard "
			         "that is not in from and name that shard as "
			         "its replica, or use strategy = \"split\"",
			         name);
		return;
	case RS_MAP_LOGICAL:
		if (r != NULL && !found[f].spread)
			snprintf(buf, size,
			         "assign those logical shards to %s in to, or "
			         "use strategy = \"split\"",
			         r);
		else if (r != NULL)
			snprintf(buf, size,
			         "assign every logical shard that %s loses to "
			         "%s in to, or use strategy = \"split\"",
			         name, r);
		else
			snprintf(buf, size,
			         "assign every logical shard that %s loses to "
			         "one shard that is not in from and name that "
			         "shard as its replica, or use strategy = "
			         "\"split\"",
			         name);
		return;
	case RS_MAP_MODULO:
	case RS_MAP_SLOTS:
		/* A periodic map doubles by listing from's nodes and then
		 * their replicas: the whole answer, when every node has one. */
		if (periodic_from &&
		    plan_doubled_nodes(plan, list, sizeof(list)) > 0)
			snprintf(buf, size,
			         "list to's nodes as [%s]%s, from's nodes and "
			         "then their replicas in the same order",
			         list,
			         to->kind == RS_MAP_SLOTS ? databases : "");
		else if (r != NULL && !found[f].spread &&
		         nodes_hold(to, replica))
			snprintf(buf, size, "swap %s and %s in to's nodes", r,
			         t);
		else if (r != NULL && !found[f].spread)
			snprintf(buf, size,
			         "put %s in %s's place in to's nodes", r, t);
		else if (periodic_from)
			snprintf(buf, size,
			         "give every node of from a replica, then list "
			         "from's nodes in to and their replicas after "
			         "them in the same order; or use strategy = "
			         "\"split\"");
		else
			snprintf(buf, size, "use strategy = \"split\"");
		return;
	}
}

/* The doubling rule for the keys either map pins (the proof of the maps
 * covers every other key): each key's owner under to is its owner under
 * from or that shard's replica.  Each key that breaks it is reported at
 * its override's line. */
static void
check_doubling_overrides(struct plan_loader *ld)
{
	const struct rs_plan *plan = ld->plan;

	for (int m = 0; m < 2; m++) {
		const struct rs_map_def *def =
			m == 0 ? map_def(plan->from) : map_def(plan->to);

		ld->diag_file = def->overrides_file;
		for (int i = 0; i < def->n_overrides; i++) {
			const struct rs_map_override *o = &def->overrides[i];
			char key[TEXT_KEY_SHOWN_SIZE];
			struct rs_owner f, t;
			uint64_t point;
			int replica;

			if (hash_point(plan->hash, o->key, o->len, &point) !=
			    0) {
				plan_diag(ld, o->line,
				          "key '%s' cannot be hashed with %s; "
				          "an override's key is a shard key's "
				          "value",
				          text_key_shown(o->key, o->len, key,
				                         sizeof(key)),
				          hash_name(plan->hash));
				continue;
			}
			f = map_owner_key(plan->from, o->key, o->len, point,
			                  NULL);
			t = map_owner_key(plan->to, o->key, o->len, point,
			                  NULL);
			replica = plan->shards[f.shard].replica;
			if (t.shard == f.shard || t.shard == replica)
				continue;
			plan_diag(ld, o->line,
			          "strategy \"doubling\" (line %d): key '%s' "
			          "moves from %s to %s, but a doubling moves a "
			          "shard's rows only to its replica (%s); pin "
			          "it to %s%s%s in to, or use strategy = "
			          "\"split\"",
			          ld->strategy_line,
			          text_key_shown(o->key, o->len, key,
			                         sizeof(key)),
			          plan->shards[f.shard].name,
			          plan->shards[t.shard].name,
			          replica >= 0 ? plan->shards[replica].name
			                       : "none declared",
			          plan->shards[f.shard].name,
			          replica >= 0 ? " or " : "",
			          replica >= 0 ? plan->shards[replica].name
			                       : "");
		}
		ld->diag_file = NULL;
	}
}

/* Prove the doubling rule and report every shard that breaks it. */
static void
check_doubling_moves(struct plan_loader *ld)
{
	struct rs_plan *plan = ld->plan;
	const char *const *names = (const char *const *)plan->shard_names;
	struct rs_doubling_found *found;
	struct rs_err err = {0};
	int *replica_of;

	replica_of = malloc(sizeof(int) * (size_t)plan->n_shards);
	found = malloc(sizeof(*found) * (size_t)plan->n_shards);
	if (replica_of == NULL || found == NULL) {
		free(replica_of);
		free(found);
		ld->nomem = 1;
		return;
	}
	for (int i = 0; i < plan->n_shards; i++) {
		replica_of[i] = plan->shards[i].replica;
		found[i].moves_to = found[i].bad_to = -1;
		found[i].spread = 0;
		found[i].bad_point = 0;
	}
	if (map_prove_doubling(plan->from, plan->to, replica_of, names, found,
	                       &err) == 0)
		goto done;
	/* A table index that changes or a proof too long stops the proof:
	 * then ERR says it all, and what FOUND holds is not the whole. */
	if (err.code != 0) {
		plan_diag(ld, ld->to_line,
		          "strategy \"doubling\" (line %d): %s",
		          ld->strategy_line, err.message);
		goto done;
	}
	for (int f = 0; f < plan->n_shards; f++) {
		const char *t;
		char advice[768], whose[512], logical[48] = "";

		if (found[f].bad_to < 0)
			continue;
		t = plan->shards[found[f].bad_to].name;
		doubling_advice(plan, found, f, advice, sizeof(advice));
		if (plan->shards[f].replica < 0)
			snprintf(whose, sizeof(whose), "%s declares no replica",
			         plan->shards[f].name);
		else
			snprintf(whose, sizeof(whose), "%s's replica is %s",
			         plan->shards[f].name,
			         plan->shards[plan->shards[f].replica].name);
		if (map_def(plan->from)->kind == RS_MAP_LOGICAL)
			snprintf(logical, sizeof(logical),
			         " (logical shard %" PRIu64 ")",
			         map_logical_shard(plan->from,
			                           found[f].bad_point));
		plan_diag(ld, plan->shards[f].line,
		          "strategy \"doubling\" (line %d): point %" PRIu64
		          "%s moves from %s to %s, but %s; a doubling moves a "
		          "shard's rows only to its replica: %s",
		          ld->strategy_line, found[f].bad_point, logical,
		          plan->shards[f].name, t, whose, advice);
	}
done:
	free(replica_of);
	free(found);
}

void
plan_check(struct plan_loader *ld)
{
	struct rs_plan *plan = ld->plan;
	const char *const *names = (const char *const *)plan->shard_names;
	int doubling =
		ld->strategy_ok && plan->strategy == RS_STRATEGY_DOUBLING;
	struct rs_err err = {0};
	int n_before;

	/* A map whose nodes are not all known could use any shard. */
	if (ld->from_state != PLAN_MAP_UNREAD &&
	    ld->to_state != PLAN_MAP_UNREAD)
		check_shards_used(ld);
	n_before = ld->diags->n;
	if (doubling && ld->from_state != PLAN_MAP_UNREAD)
		check_doubling_shapes(ld);
	if (doubling && ld->from_state != PLAN_MAP_UNREAD &&
	    ld->to_state != PLAN_MAP_UNREAD)
		check_doubling_keeps(ld);

	/* A map compiles when it was read without a mistake under a known
	 * hash, whatever else the plan gets wrong. */
	if (ld->hash_ok && ld->from_state == PLAN_MAP_OK) {
		plan->from = map_new(&plan->from_def, plan->hash, names, &err);
		if (plan->from == NULL && err.code == RS_ENOMEM)
			ld->nomem = 1;
		else if (plan->from == NULL)
			plan_diag(ld, ld->from_line, "%s", err.message);
	}
	if (ld->hash_ok && ld->to_state == PLAN_MAP_OK) {
		plan->to = map_new(&plan->to_def, plan->hash, names, &err);
		if (plan->to == NULL && err.code == RS_ENOMEM)
			ld->nomem = 1;
		else if (plan->to == NULL)
			plan_diag(ld, ld->to_line, "%s", err.message);
	}
	if (plan->from != NULL && plan->to != NULL && plan->n_tables > 0)
		check_physical_names(ld);
	check_files_apart(ld);
	if (doubling && plan->from != NULL && plan->to != NULL &&
	    ld->shards_ok && ld->diags->n == n_before) {
		check_doubling_moves(ld);
		check_doubling_overrides(ld);
	}
}
