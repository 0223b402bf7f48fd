/*
 * The dry-run sink: keys → owners under `from` and `to` → movers on the
 * output and counts for the summary.
 *
 * This is the hot loop of the `bench/dryrun` benchmark (10 million keys):
 * keys arrive in batches so that their SHA-256 blocks are compressed
 * together (hash_sha256_64_batch), owner labels are formatted once up
 * front, and each mover is written with unlocked stdio calls into a large
 * buffer.
 */
#include "dryrun/dryrun.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 128

/* Printable owner names of one map for one logical table:
 * names[shard * tables + table]. */
struct labels {
	char **names;
	size_t *lens;
	int tables;
	int count;
};

struct rs_dryrun {
	struct rs_dryrun_result result;
	const struct rs_dryrun_options *options;
	struct labels *from_labels; /* [plan->n_tables] */
	struct labels *to_labels;
	FILE *movers_out; /* NULL with summary_only */
	FILE *out;        /* where the summary goes with summary_only */
	char *line_buf;   /* movers waiting to be written to movers_out */
	size_t line_len;
};

#define LINE_BUF_SIZE (1 << 16)

/* Write the buffered movers.  Returns 0 or RS_EIO. */
static int
dryrun_flush_movers(struct rs_dryrun *dr, struct rs_err *err)
{
	if (dr->line_len > 0 && fwrite(dr->line_buf, 1, dr->line_len,
	                               dr->movers_out) != dr->line_len)
		return rs_err_set(err, RS_EIO, "cannot write movers: %s",
		                  strerror(errno));
	dr->line_len = 0;
	return 0;
}

static void
labels_clear(struct labels *l)
{
	for (int i = 0; i < l->count; i++)
		free(l->names[i]);
	free(l->names);
	free(l->lens);
	memset(l, 0, sizeof(*l));
}

/* "db0" for maps without tables, "db0.orders_3" for slot maps.  Returns 0
 * or RS_ENOMEM. */
static int
labels_init(struct labels *l, const struct rs_plan *plan,
            const struct rs_map *map, const char *table)
{
	char physical[256], label[512];

	l->tables = map_has_tables(map) ? map_def(map)->tables_per_db : 1;
	l->count = plan->n_shards * l->tables;
	l->names = calloc((size_t)l->count, sizeof(char *));
	l->lens = calloc((size_t)l->count, sizeof(size_t));
	if (l->names == NULL || l->lens == NULL)
		return RS_ENOMEM;
	for (int s = 0; s < plan->n_shards; s++) {
		for (int t = 0; t < l->tables; t++) {
			int i = s * l->tables + t;
			int n;

			if (map_has_tables(map)) {
				if (map_table_name(map, table, t, physical,
				                   sizeof(physical)) < 0)
					return RS_ENOMEM;
				n = snprintf(label, sizeof(label), "%s.%s",
				             plan->shards[s].name, physical);
			} else {
				n = snprintf(label, sizeof(label), "%s",
				             plan->shards[s].name);
			}
			l->names[i] = strdup(label);
			if (l->names[i] == NULL)
				return RS_ENOMEM;
			l->lens[i] = (size_t)n;
		}
	}
	return 0;
}

static inline int
label_index(const struct labels *l, struct rs_owner o)
{
	return o.shard * l->tables + o.table;
}

void
dryrun_free(struct rs_dryrun *dr)
{
	if (dr == NULL)
		return;
	for (int i = 0; i < dr->result.plan->n_tables; i++) {
		if (dr->from_labels != NULL)
			labels_clear(&dr->from_labels[i]);
		if (dr->to_labels != NULL)
			labels_clear(&dr->to_labels[i]);
	}
	free(dr->from_labels);
	free(dr->to_labels);
	free(dr->line_buf);
	stats_clear(&dr->result.stats);
	if (dr->result.top.slots != NULL)
		topkeys_clear(&dr->result.top);
	free(dr);
}

int
dryrun_begin(const struct rs_plan *plan,
             const struct rs_dryrun_options *options, FILE *movers_out,
             struct rs_dryrun **out, struct rs_err *err)
{
	struct rs_dryrun *dr = calloc(1, sizeof(*dr));
	int only = -1;

	*out = NULL;
	if (options->table != NULL) {
		only = plan_table_index(plan, options->table);
		if (only < 0) {
			free(dr);
			return rs_err_set(err, RS_EUSAGE,
			                  "--table %s: the plan has no such "
			                  "table (its tables are listed under "
			                  "tables in %s)",
			                  options->table, plan->path);
		}
	}
	if (dr == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	dr->options = options;
	dr->result.plan = plan;
	dr->result.n_top = options->top;
	dr->result.table = only >= 0 ? only : (plan->n_tables == 1 ? 0 : -1);
	if (options->keys_path != NULL && only < 0)
		dr->result.table = 0; /* key files belong to the first table */
	dr->movers_out = options->summary_only ? NULL : movers_out;
	dr->out = movers_out;
	dr->line_buf = malloc(LINE_BUF_SIZE);
	dr->from_labels = calloc((size_t)plan->n_tables, sizeof(struct labels));
	dr->to_labels = calloc((size_t)plan->n_tables, sizeof(struct labels));
	if (dr->line_buf == NULL || dr->from_labels == NULL ||
	    dr->to_labels == NULL ||
	    stats_init(&dr->result.stats, plan->n_shards) != 0 ||
	    (options->top > 0 && topkeys_init(&dr->result.top) != 0))
		goto nomem;
	for (int i = 0; i < plan->n_tables; i++)
		if (labels_init(&dr->from_labels[i], plan, plan->from,
		                plan->tables[i].name) != 0 ||
		    labels_init(&dr->to_labels[i], plan, plan->to,
		                plan->tables[i].name) != 0)
			goto nomem;
	*out = dr;
	return 0;
nomem:
	dryrun_free(dr);
	return rs_err_set(err, RS_ENOMEM, "out of memory");
}

int
dryrun_key_error(const struct rs_plan *plan, const char *where, const char *key,
                 size_t len, struct rs_err *err)
{
	return rs_err_set(
		err, RS_EKEY, "%s: key '%.*s' cannot be hashed with %s%s",
		where, (int)(len > 200 ? 200 : len), key, hash_name(plan->hash),
		plan->hash == RS_HASH_IDENTITY
			? ", which takes only non-negative integers "
			  "below 2^64"
			: ": it is not valid UTF-8");
}

/* Append one mover line to the buffer.  Returns 0 or RS_EIO. */
static int
dryrun_mover(struct rs_dryrun *dr, int table, const char *key, size_t len,
             struct rs_owner from, struct rs_owner to, struct rs_err *err)
{
	const struct labels *fl = &dr->from_labels[table];
	const struct labels *tl = &dr->to_labels[table];
	int f = label_index(fl, from), t = label_index(tl, to);
	size_t need = len + fl->lens[f] + tl->lens[t] + 3;
	char *p;

	if (dr->line_len + need > LINE_BUF_SIZE) {
		int rc = dryrun_flush_movers(dr, err);

		if (rc != 0)
			return rc;
		if (need > LINE_BUF_SIZE) { /* a huge key: write it as is */
			fprintf(dr->movers_out, "%.*s\t%s\t%s\n", (int)len, key,
			        fl->names[f], tl->names[t]);
			return 0;
		}
	}
	p = dr->line_buf + dr->line_len;
	memcpy(p, key, len);
	p += len;
	*p++ = '\t';
	memcpy(p, fl->names[f], fl->lens[f]);
	p += fl->lens[f];
	*p++ = '\t';
	memcpy(p, tl->names[t], tl->lens[t]);
	p += tl->lens[t];
	*p++ = '\n';
	dr->line_len += need;
	return 0;
}

/* Account for COUNT rows whose keys hash to POINTS. */
static int
dryrun_points(struct rs_dryrun *dr, int table, const struct rs_owner *found_on,
              const char *const *keys, const size_t *lens,
              const uint64_t *points, size_t count, struct rs_err *err)
{
	const struct rs_plan *plan = dr->result.plan;
	struct rs_owner from[BATCH], to[BATCH];

	map_owner_batch(plan->from, points, count, from);
	map_owner_batch(plan->to, points, count, to);
	for (size_t i = 0; i < count; i++) {
		stats_add(&dr->result.stats, from[i], to[i]);
		if (found_on != NULL && (found_on->shard != from[i].shard ||
		                         found_on->table != from[i].table))
			dr->result.misplaced++;
		if (dr->options->top > 0 &&
		    topkeys_add(&dr->result.top, keys[i], lens[i], points[i],
		                from[i], to[i]) != 0)
			return rs_err_set(err, RS_ENOMEM,
			                  "out of memory counting rows per key "
			                  "for --top");
		if (dr->movers_out != NULL && (from[i].shard != to[i].shard ||
		                               from[i].table != to[i].table)) {
			int rc = dryrun_mover(dr, table, keys[i], lens[i],
			                      from[i], to[i], err);
			if (rc != 0)
				return rc;
		}
	}
	return 0;
}

int
dryrun_add_keys(struct rs_dryrun *dr, int table,
                const struct rs_owner *found_on, const char *const *keys,
                const size_t *lens, size_t n, size_t *bad, struct rs_err *err)
{
	const struct rs_plan *plan = dr->result.plan;
	uint64_t points[BATCH];

	for (size_t start = 0; start < n; start += BATCH) {
		size_t count = n - start < BATCH ? n - start : BATCH;
		int rc;

		if (plan->hash == RS_HASH_SHA256_64) {
			hash_sha256_64_batch(keys + start, lens + start, count,
			                     points);
		} else {
			for (size_t i = 0; i < count; i++) {
				if (hash_point(plan->hash, keys[start + i],
				               lens[start + i],
				               &points[i]) == 0)
					continue;
				/* Count the keys before the bad one. */
				rc = dryrun_points(dr, table, found_on,
				                   keys + start, lens + start,
				                   points, i, err);
				*bad = start + i;
				return rc != 0 ? rc : RS_EKEY;
			}
		}
		rc = dryrun_points(dr, table, found_on, keys + start,
		                   lens + start, points, count, err);
		if (rc != 0)
			return rc;
	}
	return 0;
}

int
dryrun_finish(struct rs_dryrun *dr, FILE *summary_out, struct rs_err *err)
{
	if (dr->movers_out != NULL &&
	    (dryrun_flush_movers(dr, err) != 0 || fflush(dr->movers_out) != 0))
		return rs_err_set(err, RS_EIO, "cannot write movers: %s",
		                  strerror(errno));
	return dryrun_report(&dr->result, dr->options->json,
	                     dr->options->summary_only ? dr->out : summary_out,
	                     err);
}
