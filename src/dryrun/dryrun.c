/*
 * The offline dry-run: keys from a file or standard input → owners under
 * `from` and `to` → movers on the output and counts for the summary.
 *
 * This is the hot loop of the `bench/dryrun` benchmark (10 million keys), so
 * the input is read in large blocks and split with memchr, owner labels are
 * formatted once up front, and each mover is written with one unlocked
 * fwrite per piece into a large stdio buffer.
 */
#include "dryrun/dryrun.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define READ_BLOCK (1 << 20)

/* Printable owner names of one map: labels[shard * tables + table]. */
struct labels {
	char **names;
	size_t *lens;
	int tables;
	int count;
};

struct dryrun {
	struct rs_dryrun_result result;
	const struct rs_dryrun_options *options;
	struct labels from_labels, to_labels;
	FILE *movers_out; /* NULL with summary_only */
};

static void
labels_clear(struct labels *l)
{
	for (int i = 0; i < l->count; i++)
		free(l->names[i]);
	free(l->names);
	free(l->lens);
	memset(l, 0, sizeof(*l));
}

/* "db0" for maps without tables, "db0.orders_3" for slot maps. */
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

/* Account for one key (one row).  LINE is for the error message. */
static int
dryrun_key(struct dryrun *dr, const char *key, size_t len,
           unsigned long long line, struct rs_err *err)
{
	const struct rs_plan *plan = dr->result.plan;
	uint64_t point;
	struct rs_owner from, to;

	if (hash_point(plan->hash, key, len, &point) != 0)
		return rs_err_set(err, RS_EKEY,
		                  "%s:%llu: key '%.*s' cannot be hashed with "
		                  "%s%s",
		                  dr->options->keys_path, line,
		                  (int)(len > 200 ? 200 : len), key,
		                  hash_name(plan->hash),
		                  plan->hash == RS_HASH_IDENTITY
		                          ? ", which takes only non-negative "
		                            "integers below 2^64"
		                          : ": it is not valid UTF-8");
	from = map_owner(plan->from, point);
	to = map_owner(plan->to, point);
	stats_add(&dr->result.stats, from, to);
	if (dr->options->top > 0 &&
	    topkeys_add(&dr->result.top, key, len, point, from, to) != 0)
		return rs_err_set(err, RS_ENOMEM,
		                  "out of memory counting rows per key for "
		                  "--top");
	if (dr->movers_out != NULL &&
	    (from.shard != to.shard || from.table != to.table)) {
		FILE *out = dr->movers_out;
		int f = label_index(&dr->from_labels, from);
		int t = label_index(&dr->to_labels, to);

		fwrite_unlocked(key, 1, len, out);
		putc_unlocked('\t', out);
		fwrite_unlocked(dr->from_labels.names[f], 1,
		                dr->from_labels.lens[f], out);
		putc_unlocked('\t', out);
		fwrite_unlocked(dr->to_labels.names[t], 1,
		                dr->to_labels.lens[t], out);
		putc_unlocked('\n', out);
	}
	return 0;
}

/* Read keys from FD, one per line, feeding dryrun_key.  Empty lines are
 * skipped and a trailing "\r" is dropped (files written on Windows). */
static int
dryrun_read_keys(struct dryrun *dr, int fd, struct rs_err *err)
{
	size_t cap = READ_BLOCK, have = 0;
	char *buf = malloc(cap);
	unsigned long long line = 0;
	int rc = 0;

	if (buf == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	for (;;) {
		ssize_t got;

		if (have == cap) { /* one line longer than the buffer */
			char *bigger = realloc(buf, cap * 2);

			if (bigger == NULL) {
				rc = rs_err_set(err, RS_ENOMEM,
				                "out of memory for a %zu-byte "
				                "line",
				                cap);
				break;
			}
			buf = bigger;
			cap *= 2;
		}
		got = read(fd, buf + have, cap - have);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			rc = rs_err_set(err, RS_EIO, "cannot read %s: %s",
			                dr->options->keys_path,
			                strerror(errno));
			break;
		}
		if (got == 0 && have > 0) /* last line without newline */
			buf[have++] = '\n';
		else if (got == 0)
			break;
		else
			have += (size_t)got;

		char *p = buf, *end = buf + have, *nl;
		while ((nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
			size_t len = (size_t)(nl - p);

			line++;
			if (len > 0 && p[len - 1] == '\r')
				len--;
			if (len > 0) {
				rc = dryrun_key(dr, p, len, line, err);
				if (rc != 0)
					goto out;
			}
			p = nl + 1;
		}
		have = (size_t)(end - p);
		memmove(buf, p, have);
	}
out:
	free(buf);
	return rc;
}

static void
dryrun_clear(struct dryrun *dr)
{
	labels_clear(&dr->from_labels);
	labels_clear(&dr->to_labels);
	stats_clear(&dr->result.stats);
	if (dr->result.top.slots != NULL)
		topkeys_clear(&dr->result.top);
}

int
dryrun_run(const struct rs_plan *plan, const struct rs_dryrun_options *options,
           FILE *movers_out, FILE *summary_out, struct rs_err *err)
{
	struct dryrun dr = {0};
	int fd = -1, rc;
	const char *table;

	dr.options = options;
	dr.result.plan = plan;
	dr.result.n_top = options->top;
	dr.result.table = 0;
	if (options->table != NULL) {
		dr.result.table = plan_table_index(plan, options->table);
		if (dr.result.table < 0)
			return rs_err_set(err, RS_EUSAGE,
			                  "--table %s: the plan has no such "
			                  "table (its tables are listed under "
			                  "tables in %s)",
			                  options->table, plan->path);
	}
	table = plan->tables[dr.result.table].name;
	if (stats_init(&dr.result.stats, plan->n_shards) != 0 ||
	    labels_init(&dr.from_labels, plan, plan->from, table) != 0 ||
	    labels_init(&dr.to_labels, plan, plan->to, table) != 0 ||
	    (options->top > 0 && topkeys_init(&dr.result.top) != 0)) {
		dryrun_clear(&dr);
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	}
	dr.movers_out = options->summary_only ? NULL : movers_out;

	if (strcmp(options->keys_path, "-") == 0) {
		fd = STDIN_FILENO;
	} else {
		fd = open(options->keys_path, O_RDONLY);
		if (fd < 0) {
			rc = rs_err_set(err, RS_EIO,
			                "cannot open key file %s: %s",
			                options->keys_path, strerror(errno));
			dryrun_clear(&dr);
			return rc;
		}
		posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	}
	rc = dryrun_read_keys(&dr, fd, err);
	if (fd != STDIN_FILENO)
		close(fd);
	if (rc == 0 && movers_out != NULL && fflush(movers_out) != 0)
		rc = rs_err_set(err, RS_EIO, "cannot write movers: %s",
		                strerror(errno));
	if (rc == 0)
		rc = dryrun_report(
			&dr.result, options->json,
			options->summary_only ? movers_out : summary_out, err);
	dryrun_clear(&dr);
	return rc;
}
