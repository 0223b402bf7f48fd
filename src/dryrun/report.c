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
						"{s:s%, s:I, s:s, s:s}", "key",
						best[i]->key, best[i]->len,
						"rows",
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
		if (n < 0)
			rc = rs_err_set(err, RS_ENOMEM, "out of memory");
	}
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
	}
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
