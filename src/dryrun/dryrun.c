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

#include "common/text.h"
#include "shardmap/pairmap.h"

#define BATCH 128

/* The widest piece of a mover line that is copied as one fixed-size block
 * (a key, or a label with its tab and newline). */
#define PIECE 32

/* Printable owner names of one map for one logical table, escaped like
 * keys (common/text.h): names[rows[shard] * tables + table], a row for
 * each shard the map names (a plan's other shards take no room: a slots
 * map of one database with many tables beside a map of many shards would
 * otherwise need shards × tables names).  PIECES holds each name again as
 * the piece of a mover line it becomes ("\tdb0" under from, "\tdb2\n"
 * under to), padded to PIECE bytes so that it is copied with one
 * fixed-size memcpy; piece_lens says how much of it counts, 0 for a name
 * too long for that (copied the slow way). */
struct labels {
	char **names;
	size_t *lens;
	char (*pieces)[PIECE];
	size_t *piece_lens;
	int *rows; /* [n_shards]: the shard's row, -1 if the map has none */
	int tables;
	int count;
};

struct rs_dryrun {
	struct rs_dryrun_result result;
	const struct rs_dryrun_options *options;
	struct labels *from_labels; /* [plan->n_tables] */
	struct labels *to_labels;
	int overrides; /* a map pins keys: looked up after the maps */
	struct rs_pairmap *pairs; /* both owners in one lookup, or NULL:
	                             see pairmap.h */
	FILE *movers_out;         /* NULL with summary_only */
	FILE *out;                /* where the summary goes with summary_only */
	char *line_buf; /* movers waiting to be written to movers_out */
	size_t line_len;
	/* Several tables read: "\torders" ends each mover line of table i
	 * (before its newline), escaped like keys; NULL with one table. */
	char **suffixes; /* [plan->n_tables] */
	size_t *suffix_lens;
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
	free(l->pieces);
	free(l->piece_lens);
	free(l->rows);
	memset(l, 0, sizeof(*l));
}

/* "db0" for maps without tables, "db0.orders_3" for slot maps; LAST is 1
 * for the `to` labels, which end a mover line.  Returns 0 or RS_ENOMEM. */
static int
labels_init(struct labels *l, const struct rs_plan *plan,
            const struct rs_map *map, const char *table, int last)
{
	char physical[RS_PLAN_MAX_NAME + 1];
	char label[2 * RS_PLAN_MAX_NAME + 2];
	char escaped[TEXT_ESCAPE_GROWTH * sizeof(label)];
	int shards[RS_PLAN_MAX_SHARDS];
	int n_shards = stats_map_shards(map, shards, RS_PLAN_MAX_SHARDS);

	if (n_shards > RS_PLAN_MAX_SHARDS)
		return RS_EINTERNAL; /* plan_load refuses such plans */
	l->tables = map_has_tables(map) ? map_def(map)->tables_per_db : 1;
	l->count = n_shards * l->tables;
	l->names = calloc((size_t)l->count, sizeof(char *));
	l->lens = calloc((size_t)l->count, sizeof(size_t));
	l->pieces = calloc((size_t)l->count, sizeof(*l->pieces));
	l->piece_lens = calloc((size_t)l->count, sizeof(size_t));
	l->rows = malloc(sizeof(int) * (size_t)plan->n_shards);
	if (l->names == NULL || l->lens == NULL || l->pieces == NULL ||
	    l->piece_lens == NULL || l->rows == NULL)
		return RS_ENOMEM;
	for (int s = 0; s < plan->n_shards; s++)
		l->rows[s] = -1;
	for (int r = 0; r < n_shards; r++) {
		const char *shard = plan->shards[shards[r]].name;

		l->rows[shards[r]] = r;
		for (int t = 0; t < l->tables; t++) {
			int i = r * l->tables + t;
			size_t n;

			if (map_has_tables(map)) {
				/* The plan's limits make every name fit. */
				if (map_table_name(map, table, t, physical,
				                   sizeof(physical)) < 0)
					return RS_EINTERNAL;
				snprintf(label, sizeof(label), "%s.%s", shard,
				         physical);
			} else {
				snprintf(label, sizeof(label), "%s", shard);
			}
			n = text_escape_key(label, strlen(label), escaped);
			l->names[i] = malloc(n + 1);
			if (l->names[i] == NULL)
				return RS_ENOMEM;
			memcpy(l->names[i], escaped, n);
			l->names[i][n] = '\0';
			l->lens[i] = n;
			if (n + 2 <= PIECE) {
				l->pieces[i][0] = '\t';
				memcpy(l->pieces[i] + 1, escaped, n);
				l->pieces[i][n + 1] = '\n';
				l->piece_lens[i] = n + 1 + (size_t)last;
			}
		}
	}
	return 0;
}

static inline int
label_index(const struct labels *l, struct rs_owner o)
{
	return l->rows[o.shard] * l->tables + o.table;
}

/* Several tables are read: per-table counts, and the table column of the
 * mover lines.  Returns 0 or RS_ENOMEM. */
static int
dryrun_tables_init(struct rs_dryrun *dr)
{
	const struct rs_plan *plan = dr->result.plan;
	size_t n = (size_t)plan->n_tables;

	dr->result.table_keys = calloc(n, sizeof(uint64_t));
	dr->result.table_moved = calloc(n, sizeof(uint64_t));
	if (dr->result.table_keys == NULL || dr->result.table_moved == NULL)
		return RS_ENOMEM;
	if (dr->movers_out == NULL)
		return 0;
	dr->suffixes = calloc(n, sizeof(char *));
	dr->suffix_lens = calloc(n, sizeof(size_t));
	if (dr->suffixes == NULL || dr->suffix_lens == NULL)
		return RS_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const char *name = plan->tables[i].name;
		size_t len = strlen(name);

		dr->suffixes[i] = malloc(TEXT_ESCAPE_GROWTH * len + 2);
		if (dr->suffixes[i] == NULL)
			return RS_ENOMEM;
		dr->suffixes[i][0] = '\t';
		len = text_escape_key(name, len, dr->suffixes[i] + 1);
		dr->suffixes[i][len + 1] = '\0';
		dr->suffix_lens[i] = len + 1;
	}
	return 0;
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
	if (dr->suffixes != NULL)
		for (int i = 0; i < dr->result.plan->n_tables; i++)
			free(dr->suffixes[i]);
	free(dr->suffixes);
	free(dr->suffix_lens);
	free(dr->result.table_keys);
	free(dr->result.table_moved);
	pairmap_free(dr->pairs);
	free(dr->line_buf);
	stats_clear(&dr->result.stats);
	slot_rows_clear(&dr->result.slots_before);
	slot_rows_clear(&dr->result.slots_after);
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
	struct rs_err pairs_err = {0};
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
	dr->pairs = pairmap_new(plan->from, plan->to, &pairs_err);
	dr->overrides =
		map_has_overrides(plan->from) || map_has_overrides(plan->to);
	if (dr->pairs == NULL && pairs_err.code != 0)
		goto nomem;
	if (dr->result.table < 0 && dryrun_tables_init(dr) != 0)
		goto nomem;
	/* Rows per slot table when one table is read: several tables would
	 * each fill their own physical tables. */
	if (dr->result.table >= 0 &&
	    (slot_rows_init(&dr->result.slots_before, plan->from,
	                    plan->n_shards) != 0 ||
	     slot_rows_init(&dr->result.slots_after, plan->to,
	                    plan->n_shards) != 0))
		goto nomem;
	/* Labels only for mover lines, and only for the tables whose keys
	 * are read: a key file's one, or the live shards' (all, or
	 * --table). */
	for (int i = 0; i < plan->n_tables && dr->movers_out != NULL; i++) {
		int rc;

		if (options->keys_path != NULL ? i != dr->result.table
		                               : only >= 0 && i != only)
			continue;
		rc = labels_init(&dr->from_labels[i], plan, plan->from,
		                 plan->tables[i].name, 0);
		if (rc == 0)
			rc = labels_init(&dr->to_labels[i], plan, plan->to,
			                 plan->tables[i].name,
			                 dr->suffixes == NULL);
		if (rc == RS_EINTERNAL) {
			dryrun_free(dr);
			return rs_err_set(err, rc,
			                  "table %s: an owner name does not "
			                  "fit the plan's limits (a bug)",
			                  plan->tables[i].name);
		}
		if (rc != 0)
			goto nomem;
	}
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
	char shown[TEXT_KEY_SHOWN_SIZE];

	return rs_err_set(err, RS_EKEY,
	                  "%s: key '%s' cannot be hashed with %s%s", where,
	                  text_key_shown(key, len, shown, sizeof(shown)),
	                  hash_name(plan->hash),
	                  plan->hash == RS_HASH_IDENTITY
	                          ? ", which takes only non-negative integers "
	                            "below 2^64"
	                          : ": it is not valid UTF-8");
}

/* Copy the LEN bytes of KEY (LEN at most PIECE) to DST, reading no byte
 * past the key and writing exactly LEN: two overlapping fixed-size copies,
 * which the compiler turns into a few loads and stores instead of a call
 * to memcpy. */
static inline void
copy_short(char *dst, const char *key, size_t len)
{
	if (len >= 16) {
		memcpy(dst, key, 16);
		memcpy(dst + len - 16, key + len - 16, 16);
	} else if (len >= 8) {
		memcpy(dst, key, 8);
		memcpy(dst + len - 8, key + len - 8, 8);
	} else if (len >= 4) {
		memcpy(dst, key, 4);
		memcpy(dst + len - 4, key + len - 4, 4);
	} else if (len > 0) {
		dst[0] = key[0];
		dst[len / 2] = key[len / 2];
		dst[len - 1] = key[len - 1];
	}
}

/* Write a mover line whose key is too long for the line buffer (a huge
 * key, or one that escaping makes huge).  Returns 0 or RS_EIO / RS_ENOMEM. */
static int
dryrun_huge_mover(struct rs_dryrun *dr, const char *key, size_t len, int escape,
                  const char *from, const char *to, const char *suffix,
                  struct rs_err *err)
{
	char *escaped = NULL;

	if (escape) {
		escaped = malloc(TEXT_ESCAPE_GROWTH * len);
		if (escaped == NULL)
			return rs_err_set(err, RS_ENOMEM,
			                  "out of memory for a %zu-byte key",
			                  len);
		len = text_escape_key(key, len, escaped);
		key = escaped;
	}
	if (fwrite(key, 1, len, dr->movers_out) != len ||
	    fprintf(dr->movers_out, "\t%s\t%s%s\n", from, to, suffix) < 0) {
		free(escaped);
		return rs_err_set(err, RS_EIO, "cannot write movers: %s",
		                  strerror(errno));
	}
	free(escaped);
	return 0;
}

/* Append one mover line to the buffer, the key escaped if it holds a byte
 * that needs it (common/text.h).  Returns 0 or RS_EIO / RS_ENOMEM. */
static int
dryrun_mover(struct rs_dryrun *dr, int table, const char *key, size_t len,
             struct rs_owner from, struct rs_owner to, struct rs_err *err)
{
	const struct labels *fl = &dr->from_labels[table];
	const struct labels *tl = &dr->to_labels[table];
	int f = label_index(fl, from), t = label_index(tl, to);
	int escape = text_key_needs_escape(key, len);
	size_t key_room = escape ? TEXT_ESCAPE_GROWTH * len : len;
	const char *suffix = dr->suffixes != NULL ? dr->suffixes[table] : "";
	size_t suffix_len = dr->suffixes != NULL ? dr->suffix_lens[table] : 0;
	size_t need = key_room + fl->lens[f] + tl->lens[t] + 3 + suffix_len;
	char *p;

	/* PIECE bytes of room past the line: the fixed-size copies write
	 * that far. */
	if (dr->line_len + need + PIECE > LINE_BUF_SIZE) {
		int rc = dryrun_flush_movers(dr, err);

		if (rc != 0)
			return rc;
		if (need + PIECE > LINE_BUF_SIZE)
			return dryrun_huge_mover(dr, key, len, escape,
			                         fl->names[f], tl->names[t],
			                         suffix, err);
	}
	p = dr->line_buf + dr->line_len;
	if (len <= PIECE && !escape && fl->piece_lens[f] != 0 &&
	    tl->piece_lens[t] != 0) {
		dr->line_len += need;
		copy_short(p, key, len);
		p += len;
		memcpy(p, fl->pieces[f], PIECE);
		p += fl->piece_lens[f];
		memcpy(p, tl->pieces[t], PIECE);
		if (suffix_len > 0) {
			/* The `to` pieces end without the newline. */
			p += tl->piece_lens[t];
			memcpy(p, suffix, suffix_len);
			p[suffix_len] = '\n';
		}
		return 0;
	}
	if (escape) {
		len = text_escape_key(key, len, p);
		need = len + fl->lens[f] + tl->lens[t] + 3 + suffix_len;
	} else {
		memcpy(p, key, len);
	}
	dr->line_len += need;
	p += len;
	*p++ = '\t';
	memcpy(p, fl->names[f], fl->lens[f]);
	p += fl->lens[f];
	*p++ = '\t';
	memcpy(p, tl->names[t], tl->lens[t]);
	p += tl->lens[t];
	memcpy(p, suffix, suffix_len);
	p += suffix_len;
	*p = '\n';
	return 0;
}

/* The keys among KEYS that a map pins: their owners FROM and TO set to
 * the overrides' shards (the maps' table index kept). */
static void
dryrun_overrides(const struct rs_plan *plan, const char *const *keys,
                 const size_t *lens, size_t count, struct rs_owner *from,
                 struct rs_owner *to)
{
	for (size_t i = 0; i < count; i++) {
		int f = map_override(plan->from, keys[i], lens[i]);
		int t = map_override(plan->to, keys[i], lens[i]);

		if (f >= 0)
			from[i].shard = f;
		if (t >= 0)
			to[i].shard = t;
	}
}

/* Account for COUNT rows whose keys hash to POINTS: one pass for the
 * counts, which every dry-run needs, and one for each thing that only some
 * need (misplaced rows, --top, mover lines), so that the common loops carry
 * no test they do not use. */
static int
dryrun_points(struct rs_dryrun *dr, int table, const struct rs_owner *found_on,
              const char *const *keys, const size_t *lens,
              const uint64_t *points, size_t count, struct rs_err *err)
{
	const struct rs_plan *plan = dr->result.plan;
	struct rs_owner from[BATCH], to[BATCH];
	size_t i;

	if (dr->pairs != NULL) {
		pairmap_owners(dr->pairs, points, count, from, to);
	} else {
		map_owner_batch(plan->from, points, count, from);
		map_owner_batch(plan->to, points, count, to);
	}
	if (dr->overrides)
		dryrun_overrides(plan, keys, lens, count, from, to);
	for (i = 0; i < count; i++)
		stats_add(&dr->result.stats, from[i], to[i]);
	if (dr->result.slots_before.databases > 0)
		slot_rows_add_batch(&dr->result.slots_before, from, count);
	if (dr->result.slots_after.databases > 0)
		slot_rows_add_batch(&dr->result.slots_after, to, count);
	if (dr->result.table_keys != NULL) {
		uint64_t moved = 0;

		for (i = 0; i < count; i++)
			moved += (uint64_t)((from[i].shard != to[i].shard) |
			                    (from[i].table != to[i].table));
		dr->result.table_keys[table] += count;
		dr->result.table_moved[table] += moved;
	}
	if (found_on != NULL)
		for (i = 0; i < count; i++)
			dr->result.misplaced +=
				(uint64_t)(found_on->shard != from[i].shard ||
			                   found_on->table != from[i].table);
	if (dr->options->top > 0)
		for (i = 0; i < count; i++)
			if (topkeys_add(&dr->result.top, keys[i], lens[i],
			                points[i], from[i], to[i]) != 0)
				return rs_err_set(err, RS_ENOMEM,
				                  "out of memory counting rows "
				                  "per key for --top");
	if (dr->movers_out != NULL) {
		/* The movers' indices first, without a branch: whether a key
		 * moves is a coin toss the branch predictor loses. */
		size_t movers[BATCH], n_movers = 0;

		for (i = 0; i < count; i++) {
			movers[n_movers] = i;
			n_movers += (size_t)((from[i].shard != to[i].shard) |
			                     (from[i].table != to[i].table));
		}
		for (size_t k = 0; k < n_movers; k++) {
			size_t m = movers[k];
			int rc = dryrun_mover(dr, table, keys[m], lens[m],
			                      from[m], to[m], err);

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
	stats_finish(&dr->result.stats);
	if (dr->options->counts != NULL) {
		dr->options->counts->stats = dr->result.stats;
		dr->options->counts->misplaced = dr->result.misplaced;
		memset(&dr->result.stats, 0, sizeof(dr->result.stats));
		return 0;
	}
	return dryrun_report(&dr->result, dr->options->json,
	                     dr->options->summary_only ? dr->out : summary_out,
	                     err);
}
