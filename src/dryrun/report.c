/*
 * The dry-run summary: keys read, movers and their share, rows per shard
 * before and after drawn as bars, the flows between shards, the skew
 * before and after (with a warning above 5%), and the hottest keys — as
 * text for a person or as one JSON object (DESIGN §5) for a script.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/url.h"
#include "common/text.h"
#include "dryrun/dryrun.h"
#include "engine/walk.h"

#define SKEW_WARNING 0.05
#define BAR_WIDTH    30

struct shard_set {
	int before[RS_PLAN_MAX_SHARDS];
	int n_before;
	int after[RS_PLAN_MAX_SHARDS];
	int n_after;
};

/* A plan has at most RS_PLAN_MAX_SHARDS shards (plan_load refuses more),
 * and so has each map. */
static void
shard_set_init(struct shard_set *set, const struct rs_plan *plan)
{
	set->n_before =
		stats_map_shards(plan->from, set->before, RS_PLAN_MAX_SHARDS);
	set->n_after =
		stats_map_shards(plan->to, set->after, RS_PLAN_MAX_SHARDS);
}

/* Key K as JSON, as the journal and status write keys (walk_value_json):
 * a string when its bytes are UTF-8, else {"hex": "…"}.  NULL when out
 * of memory. */
static json_t *
json_key(const struct rs_keycount *k)
{
	struct rs_value v = {k->key, k->len};

	return walk_value_json(&v);
}

static json_t *
json_counts(const struct rs_plan *plan, const uint64_t *counts,
            const int *shards, int n)
{
	json_t *o = json_object();
	int failed = o == NULL;

	for (int i = 0; i < n; i++)
		failed |=
			json_object_set_new(
				o, plan->shards[shards[i]].name,
				json_integer((json_int_t)counts[shards[i]])) !=
			0;
	if (failed) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* {"orders": {"keys": K, "moved": M}, …}: several tables were read. */
static json_t *
json_tables(const struct rs_dryrun_result *r)
{
	const struct rs_plan *plan = r->plan;
	json_t *o = json_object();
	int failed = o == NULL;

	for (int i = 0; i < plan->n_tables && !failed; i++)
		failed |=
			json_object_set_new(
				o, plan->tables[i].name,
				json_pack("{s:I, s:I}", "keys",
		                          (json_int_t)r->table_keys[i], "moved",
		                          (json_int_t)r->table_moved[i])) != 0;
	if (failed) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *
json_skew(double skew)
{
	return skew < 0 ? json_null() : json_real(skew);
}

/* "db0.orders_3": slot table T of database DB of the slots map MAP. */
static void
slot_label(const struct rs_dryrun_result *r, const struct rs_map *map, int db,
           int t, char *buf, size_t size)
{
	char physical[RS_PLAN_MAX_NAME + 1];

	if (map_table_name(map, r->plan->tables[r->table].name, t, physical,
	                   sizeof(physical)) < 0)
		physical[0] = '\0'; /* the plan's limits make every name fit */
	snprintf(buf, size, "%s.%s",
	         r->plan->shards[map_def(map)->nodes[db]].name, physical);
}

/* The rows per physical table that db = point % N, table = point % T
 * gives, as a malloc'd array [N * T], or NULL (out of memory). */
static uint64_t *
independent_rows(const struct rs_slot_rows *sr)
{
	size_t n = (size_t)sr->databases * (size_t)sr->tables;
	uint64_t *rows = n > 0 ? malloc(sizeof(uint64_t) * n) : NULL;

	if (rows != NULL)
		slot_rows_independent(sr, rows);
	return rows;
}

/* {"db0.orders_0": 12, …, "empty": E, "skew": S} for ROWS [N * T]. */
static int
json_slot_rows(json_t *o, const struct rs_dryrun_result *r,
               const struct rs_map *map, const struct rs_slot_rows *sr,
               const uint64_t *rows)
{
	char label[2 * RS_PLAN_MAX_NAME + 2];
	struct rs_spread spread;
	json_t *counts = json_object();
	int failed = counts == NULL;
	int n = sr->databases * sr->tables;

	stats_spread(rows, n, &spread);
	for (int s = 0; s < n && !failed; s++) {
		slot_label(r, map, s / sr->tables, s % sr->tables, label,
		           sizeof(label));
		failed |= json_object_set_new(
				  counts, label,
				  json_integer((json_int_t)rows[s])) != 0;
	}
	failed |= json_object_set_new(o, "empty", json_integer(spread.empty)) !=
	          0;
	failed |= json_object_set_new(o, "skew", json_skew(spread.skew)) != 0;
	failed |= json_object_set_new(o, "rows", counts) != 0;
	return failed;
}

/* The rows per physical table of a slots map, and what hashing the
 * database and the table independently would give: "physical_before" and
 * "physical_after".  NULL when out of memory. */
static json_t *
json_physical(const struct rs_dryrun_result *r, const struct rs_map *map,
              const struct rs_slot_rows *sr)
{
	json_t *o = json_pack("{s:i, s:i}", "databases", sr->databases,
	                      "tables_per_db", sr->tables);
	json_t *independent = json_object();
	uint64_t *rows = independent_rows(sr);
	int failed = o == NULL || independent == NULL || rows == NULL;

	if (!failed)
		failed |= json_slot_rows(o, r, map, sr, sr->rows);
	if (!failed)
		failed |= json_slot_rows(independent, r, map, sr, rows);
	free(rows);
	failed |= json_object_set_new(o, "independent", independent) != 0;
	if (failed) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* "hot": the keys that alone hold more than 5% of their shard under to. */
static json_t *
json_hot(const struct rs_dryrun_result *r)
{
	const struct rs_keycount **hot;
	json_t *a = json_array();
	int n = topkeys_hot(&r->top, r->stats.after, &hot);
	int failed = a == NULL || n < 0;

	for (int i = 0; i < n && !failed; i++) {
		uint64_t shard_rows = r->stats.after[hot[i]->to.shard];

		failed |=
			json_array_append_new(
				a,
				json_pack(
					"{s:o, s:I, s:s, s:f}", "key",
					json_key(hot[i]), "rows",
					(json_int_t)hot[i]->rows, "shard",
					r->plan->shards[hot[i]->to.shard].name,
					"share",
					(double)hot[i]->rows /
						(double)shard_rows)) != 0;
	}
	free(hot);
	if (failed) {
		json_decref(a);
		return NULL;
	}
	return a;
}

static int
report_json(const struct rs_dryrun_result *r, FILE *out, struct rs_err *err)
{
	const struct rs_plan *plan = r->plan;
	const struct rs_stats *st = &r->stats;
	struct shard_set set;
	json_t *root = json_object(), *flows = json_array();
	int failed = root == NULL || flows == NULL;
	int rc = 0;

	shard_set_init(&set, plan);
	failed |= json_object_set_new(root, "keys",
	                              json_integer((json_int_t)st->keys)) != 0;
	failed |= json_object_set_new(root, "moved",
	                              json_integer((json_int_t)st->moved)) != 0;
	if (r->table_keys != NULL)
		failed |= json_object_set_new(root, "tables", json_tables(r)) !=
		          0;
	failed |= json_object_set_new(root, "before",
	                              json_counts(plan, st->before, set.before,
	                                          set.n_before)) != 0;
	failed |= json_object_set_new(root, "after",
	                              json_counts(plan, st->after, set.after,
	                                          set.n_after)) != 0;
	for (int i = 0; i < st->n_shards; i++)
		for (int j = 0; j < st->n_shards; j++) {
			uint64_t n =
				st->flows[(size_t)i * (size_t)st->n_shards +
			                  (size_t)j];

			if (n == 0)
				continue;
			failed |=
				json_array_append_new(
					flows,
					json_pack("{s:s, s:s, s:I}", "from",
			                          plan->shards[i].name, "to",
			                          plan->shards[j].name, "keys",
			                          (json_int_t)n)) != 0;
		}
	failed |= json_object_set_new(root, "flows", flows) != 0;
	failed |=
		json_object_set_new(root, "skew_before",
	                            json_skew(stats_skew(st->before, set.before,
	                                                 set.n_before))) != 0;
	failed |= json_object_set_new(root, "skew_after",
	                              json_skew(stats_skew(st->after, set.after,
	                                                   set.n_after))) != 0;
	if (r->misplaced > 0)
		failed |= json_object_set_new(
				  root, "misplaced",
				  json_integer((json_int_t)r->misplaced)) != 0;
	if (r->n_top > 0) {
		const struct rs_keycount **best =
			malloc(sizeof(*best) * (size_t)r->n_top);
		json_t *top = json_array();
		int n = best ? topkeys_best(&r->top, (size_t)r->n_top, best)
		             : RS_ENOMEM;

		for (int i = 0; i < n; i++)
			failed |=
				json_array_append_new(
					top,
					json_pack(
						"{s:o, s:I, s:s, s:s}", "key",
						json_key(best[i]), "rows",
						(json_int_t)best[i]->rows,
						"from",
						plan->shards[best[i]->from
			                                             .shard]
							.name,
						"to",
						plan->shards[best[i]->to.shard]
							.name)) != 0;
		free(best);
		failed |= json_object_set_new(root, "top", top) != 0;
		failed |= json_object_set_new(root, "hot", json_hot(r)) != 0;
		if (n < 0)
			rc = rs_err_set(err, RS_ENOMEM, "out of memory");
	}
	if (r->slots_before.databases > 0)
		failed |= json_object_set_new(
				  root, "physical_before",
				  json_physical(r, plan->from,
		                                &r->slots_before)) != 0;
	if (r->slots_after.databases > 0)
		failed |= json_object_set_new(root, "physical_after",
		                              json_physical(r, plan->to,
		                                            &r->slots_after)) !=
		          0;
	if (rc == 0 && failed)
		rc = rs_err_set(err, RS_ENOMEM,
		                "out of memory building the JSON summary");
	if (rc == 0 &&
	    (json_dumpf(root, out,
	                JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6)) != 0 ||
	     fputc('\n', out) == EOF || fflush(out) != 0))
		rc = rs_err_set(err, RS_EIO, "cannot write the summary: %s",
		                strerror(errno));
	json_decref(root);
	return rc;
}

static void
print_bar(FILE *out, uint64_t count, uint64_t max)
{
	int width = max ? (int)((count * BAR_WIDTH + max / 2) / max) : 0;

	if (count > 0 && width == 0)
		width = 1;
	for (int i = 0; i < width; i++)
		fputs("\u2588", out);
	fprintf(out, "%*s", BAR_WIDTH - width, "");
}

/* What the run's fence will hold on each shard that gives rows away: only
 * the rows that move where the server computes a key's owner (PostgreSQL,
 * MariaDB, with the plan's hash), else whole tables. */
static void
report_fence(FILE *out, const struct rs_plan *plan, const struct rs_stats *st)
{
	int any = 0;

	for (int i = 0; i < st->n_shards && i < plan->n_shards; i++) {
		struct rs_url url;
		struct rs_err ignored;
		uint64_t out_rows = 0;

		for (int j = 0; j < st->n_shards; j++)
			if (j != i)
				out_rows +=
					st->flows[(size_t)i *
				                          (size_t)st->n_shards +
				                  (size_t)j];
		if (out_rows == 0 ||
		    url_parse(plan->shards[i].url, NULL, &url, &ignored) != 0)
			continue;
		if (!any)
			fputs("\nthe run's fence:\n", out);
		any = 1;
		fprintf(out, "  %s (%s): %s\n", plan->shards[i].name,
		        url_engine_name(url.engine),
		        backend_engine_fences_rows(url.engine, plan->hash)
		                ? "only writes to the rows that move (text "
		                  "or integer shard keys; others: whole "
		                  "tables)"
		                : "whole tables");
		url_clear(&url);
	}
}

static double
share_of(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* Several tables were read: keys read, movers and their share for each. */
static void
report_tables(FILE *out, const struct rs_dryrun_result *r)
{
	const struct rs_plan *plan = r->plan;
	char a[32], b[32];
	int width = 5;

	for (int i = 0; i < plan->n_tables; i++) {
		int len = (int)strlen(plan->tables[i].name);

		if (len > width)
			width = len;
	}
	fprintf(out, "%-*s  %13s  %13s\n", width, "table", "keys read",
	        "movers");
	for (int i = 0; i < plan->n_tables; i++)
		fprintf(out, "%-*s  %13s  %13s (%.2f%%)\n", width,
		        plan->tables[i].name,
		        text_thousands(r->table_keys[i], a, sizeof(a)),
		        text_thousands(r->table_moved[i], b, sizeof(b)),
		        share_of(r->table_moved[i], r->table_keys[i]));
	fputc('\n', out);
}

static void
print_skew(FILE *out, const char *when, double skew)
{
	if (skew < 0)
		fprintf(out, "%s unbounded (a shard has no keys)", when);
	else
		fprintf(out, "%s %.1f%%", when, 100.0 * skew);
}

/* One line of counts per physical table: how many tables are empty, the
 * emptiest and the fullest, the skew. */
static void
print_spread(FILE *out, const struct rs_dryrun_result *r,
             const struct rs_map *map, const struct rs_slot_rows *sr,
             const uint64_t *rows)
{
	char label[2 * RS_PLAN_MAX_NAME + 2], a[32];
	struct rs_spread spread;

	stats_spread(rows, sr->databases * sr->tables, &spread);
	fprintf(out, "%s empty, ",
	        text_thousands((uint64_t)spread.empty, a, sizeof(a)));
	slot_label(r, map, spread.min_at / sr->tables,
	           spread.min_at % sr->tables, label, sizeof(label));
	fprintf(out, "min %s (%s), ", text_thousands(spread.min, a, sizeof(a)),
	        label);
	slot_label(r, map, spread.max_at / sr->tables,
	           spread.max_at % sr->tables, label, sizeof(label));
	fprintf(out, "max %s (%s), ", text_thousands(spread.max, a, sizeof(a)),
	        label);
	if (spread.skew < 0)
		fputs("skew unbounded (a table has no rows)\n", out);
	else
		fprintf(out, "skew %.1f%%\n", 100.0 * spread.skew);
}

/* The rows per physical table of the slots map WHICH ("from" or "to"),
 * and beside them what an application that hashes the database and the
 * table independently would fill: with N and T not coprime, only one
 * table in gcd(N, T) gets rows.  Returns 0 or RS_ENOMEM. */
static int
report_physical(FILE *out, const struct rs_dryrun_result *r, const char *which,
                const struct rs_map *map, const struct rs_slot_rows *sr)
{
	char label[2 * RS_PLAN_MAX_NAME + 2], a[32], b[32], c[32];
	int n = sr->databases * sr->tables;
	int g = (int)map_gcd((uint64_t)sr->databases, (uint64_t)sr->tables);
	uint64_t *rows = independent_rows(sr);
	struct rs_spread spread;
	int shown = 0;

	if (rows == NULL)
		return RS_ENOMEM;
	fprintf(out,
	        "\nrows per physical table under %s (%s databases x %s "
	        "tables = %s):\n  slots (slot = point %% %s):  ",
	        which, text_thousands((uint64_t)sr->databases, a, sizeof(a)),
	        text_thousands((uint64_t)sr->tables, b, sizeof(b)),
	        text_thousands((uint64_t)n, c, sizeof(c)), c);
	print_spread(out, r, map, sr, sr->rows);
	fprintf(out, "  independent (db = point %% %d, table = point %% %d):  ",
	        sr->databases, sr->tables);
	print_spread(out, r, map, sr, rows);
	stats_spread(rows, n, &spread);
	if (g > 1) {
		fprintf(out,
		        "warning: hashing the database and the table "
		        "independently (db = hash %% %d, table = hash %% %d) "
		        "would leave %s of the %s tables under %s empty, as "
		        "%d and %d share the factor %d (only table t of "
		        "database "
		        "d with t %% %d == d %% %d gets rows); empty there:",
		        sr->databases, sr->tables,
		        text_thousands((uint64_t)spread.empty, a, sizeof(a)),
		        text_thousands((uint64_t)n, b, sizeof(b)), which,
		        sr->databases, sr->tables, g, g, g);
		for (int s = 0; s < n && shown < 5; s++) {
			if (rows[s] != 0)
				continue;
			slot_label(r, map, s / sr->tables, s % sr->tables,
			           label, sizeof(label));
			fprintf(out, "%s %s", shown > 0 ? "," : "", label);
			shown++;
		}
		fprintf(out, "%s; every table is a slot of the slots map\n",
		        spread.empty > shown ? ", …" : "");
	}
	free(rows);
	return 0;
}

/* Whether two slots maps put every row in the same table: the same
 * databases on the same shards, the same tables (and so the same counts). */
static int
same_slot_rows(const struct rs_slot_rows *a, const struct rs_slot_rows *b)
{
	return a->databases > 0 && a->databases == b->databases &&
	       a->tables == b->tables &&
	       memcmp(a->db_of, b->db_of, sizeof(int) * (size_t)a->n_shards) ==
	               0 &&
	       memcmp(a->rows, b->rows,
	              sizeof(uint64_t) * (size_t)a->databases *
	                      (size_t)a->tables) == 0;
}

/* The keys that alone hold more than 5% of their shard's rows under to,
 * and what to do about them.  Returns 0 or RS_ENOMEM. */
static int
report_hot(FILE *out, const struct rs_dryrun_result *r)
{
	const struct rs_keycount **hot;
	int n = topkeys_hot(&r->top, r->stats.after, &hot);
	char a[32], b[32];

	if (n <= 0)
		return n;
	fputs("\nhot keys (one key alone holds more than 5% of its shard's "
	      "rows under to):\n",
	      out);
	for (int i = 0; i < n; i++) {
		char shown[TEXT_KEY_SHOWN_SIZE];
		uint64_t shard_rows = r->stats.after[hot[i]->to.shard];

		fprintf(out, "  %-24s %13s rows  %.1f%% of %s (%s rows)\n",
		        text_key_shown(hot[i]->key, hot[i]->len, shown,
		                       sizeof(shown)),
		        text_thousands(hot[i]->rows, a, sizeof(a)),
		        share_of(hot[i]->rows, shard_rows),
		        r->plan->shards[hot[i]->to.shard].name,
		        text_thousands(shard_rows, b, sizeof(b)));
	}
	fputs("warning: no map spreads the rows of one key, so these shards "
	      "stay uneven whatever the plan; isolate a hot key on a shard "
	      "of its own with a directory override (overrides in the map), "
	      "or spread its writes over several keys with a computed "
	      "suffix (key#0 … key#K-1, write sharding as in DynamoDB; "
	      "reads then gather the K keys)\n",
	      out);
	free(hot);
	return 0;
}

static int
report_text(const struct rs_dryrun_result *r, FILE *out, struct rs_err *err)
{
	const struct rs_plan *plan = r->plan;
	const struct rs_stats *st = &r->stats;
	struct shard_set set;
	uint64_t max = 0;
	char a[32], b[32];
	double skew_before, skew_after;
	int name_width = 5;

	shard_set_init(&set, plan);
	for (int i = 0; i < plan->n_shards; i++) {
		int len = (int)strlen(plan->shards[i].name);

		if (len > name_width)
			name_width = len;
		if (st->before[i] > max)
			max = st->before[i];
		if (st->after[i] > max)
			max = st->after[i];
	}
	fprintf(out, "plan %s (%s, %s -> %s, hash %s), ", plan->name,
	        plan_strategy_name(plan->strategy),
	        map_kind_name(map_def(plan->from)->kind),
	        map_kind_name(map_def(plan->to)->kind), hash_name(plan->hash));
	if (r->table >= 0)
		fprintf(out, "table %s\n", plan->tables[r->table].name);
	else
		fprintf(out, "%d tables\n", plan->n_tables);
	fprintf(out, "keys read: %s (one per row)\n",
	        text_thousands(st->keys, a, sizeof(a)));
	fprintf(out, "movers:    %s (%.2f%%)\n\n",
	        text_thousands(st->moved, a, sizeof(a)),
	        st->keys ? 100.0 * (double)st->moved / (double)st->keys : 0.0);
	if (r->table_keys != NULL)
		report_tables(out, r);

	fprintf(out, "%-*s  %13s %-*s  %13s\n", name_width, "shard", "before",
	        BAR_WIDTH, "", "after");
	for (int i = 0; i < plan->n_shards; i++) {
		fprintf(out, "%-*s  %13s ", name_width, plan->shards[i].name,
		        text_thousands(st->before[i], a, sizeof(a)));
		print_bar(out, st->before[i], max);
		fprintf(out, "  %13s ",
		        text_thousands(st->after[i], b, sizeof(b)));
		print_bar(out, st->after[i], max);
		fputc('\n', out);
	}

	fputs("\nflows:\n", out);
	if (st->moved == 0)
		fputs("  (none: no key changes owner)\n", out);
	for (int i = 0; i < st->n_shards; i++)
		for (int j = 0; j < st->n_shards; j++) {
			uint64_t n =
				st->flows[(size_t)i * (size_t)st->n_shards +
			                  (size_t)j];

			if (n > 0)
				fprintf(out, "  %s -> %s: %s\n",
				        plan->shards[i].name,
				        plan->shards[j].name,
				        text_thousands(n, a, sizeof(a)));
		}

	report_fence(out, plan, st);

	skew_before = stats_skew(st->before, set.before, set.n_before);
	skew_after = stats_skew(st->after, set.after, set.n_after);
	fputs("\nskew (max - min) / min: ", out);
	print_skew(out, "before", skew_before);
	print_skew(out, ", after", skew_after);
	fputc('\n', out);
	if (skew_after < 0 || skew_after > SKEW_WARNING)
		fprintf(out,
		        "warning: after the move the shards differ by more "
		        "than 5%%; consider more vnodes, other range ends or "
		        "a hash that spreads these keys\n");

	if (r->misplaced > 0)
		fprintf(out,
		        "warning: %s rows sit on a shard that does not own "
		        "them "
		        "under the from map; they are counted where the map "
		        "puts them — check the from map against the data\n",
		        text_thousands(r->misplaced, a, sizeof(a)));

	if (r->n_top > 0) {
		const struct rs_keycount **best =
			malloc(sizeof(*best) * (size_t)r->n_top);
		int n = best ? topkeys_best(&r->top, (size_t)r->n_top, best)
		             : RS_ENOMEM;

		if (n < 0) {
			free(best);
			return rs_err_set(err, RS_ENOMEM, "out of memory");
		}
		fprintf(out, "\ntop %d keys by rows:\n", r->n_top);
		for (int i = 0; i < n; i++) {
			char shown[TEXT_KEY_SHOWN_SIZE];

			fprintf(out, "  %-24s %13s rows  %s -> %s\n",
			        text_key_shown(best[i]->key, best[i]->len,
			                       shown, sizeof(shown)),
			        text_thousands(best[i]->rows, a, sizeof(a)),
			        plan->shards[best[i]->from.shard].name,
			        plan->shards[best[i]->to.shard].name);
		}
		free(best);
		if (report_hot(out, r) != 0)
			return rs_err_set(err, RS_ENOMEM, "out of memory");
	}
	if ((r->slots_before.databases > 0 &&
	     report_physical(out, r,
	                     same_slot_rows(&r->slots_before, &r->slots_after)
	                             ? "from and to"
	                             : "from",
	                     plan->from, &r->slots_before) != 0) ||
	    (r->slots_after.databases > 0 &&
	     !same_slot_rows(&r->slots_before, &r->slots_after) &&
	     report_physical(out, r, "to", plan->to, &r->slots_after) != 0))
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	if (fflush(out) != 0 || ferror(out))
		return rs_err_set(err, RS_EIO, "cannot write the summary: %s",
		                  strerror(errno));
	return 0;
}

int
dryrun_report(const struct rs_dryrun_result *result, int json, FILE *out,
              struct rs_err *err)
{
	return json ? report_json(result, out, err)
	            : report_text(result, out, err);
}
