/*
 * Per-shard counts, flows, skew and the hottest keys of a dry-run.
 */
#include "shardmap/stats.h"

#include <stdlib.h>
#include <string.h>

#include "common/err.h"

int
stats_init(struct rs_stats *stats, int n_shards)
{
	size_t n = (size_t)n_shards;

	memset(stats, 0, sizeof(*stats));
	stats->n_shards = n_shards;
	stats->before = calloc(n, sizeof(uint64_t));
	stats->after = calloc(n, sizeof(uint64_t));
	stats->flows = calloc(n * n, sizeof(uint64_t));
	stats->pairs = calloc(n * n, sizeof(uint64_t));
	stats->within = calloc(n, sizeof(uint64_t));
	if (stats->before == NULL || stats->after == NULL ||
	    stats->flows == NULL || stats->pairs == NULL ||
	    stats->within == NULL) {
		stats_clear(stats);
		return RS_ENOMEM;
	}
	return 0;
}

void
stats_clear(struct rs_stats *stats)
{
	free(stats->before);
	free(stats->after);
	free(stats->flows);
	free(stats->pairs);
	free(stats->within);
	memset(stats, 0, sizeof(*stats));
}

void
stats_finish(struct rs_stats *stats)
{
	size_t n = (size_t)stats->n_shards;

	stats->keys = stats->moved = 0;
	memset(stats->before, 0, n * sizeof(uint64_t));
	memset(stats->after, 0, n * sizeof(uint64_t));
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < n; j++) {
			uint64_t rows = stats->pairs[i * n + j];
			uint64_t movers = i != j ? rows : stats->within[i];

			stats->keys += rows;
			stats->before[i] += rows;
			stats->after[j] += rows;
			stats->flows[i * n + j] = movers;
			stats->moved += movers;
		}
	}
}

double
stats_skew(const uint64_t *counts, const int *shards, int n)
{
	uint64_t min = UINT64_MAX, max = 0;

	for (int i = 0; i < n; i++) {
		uint64_t c = counts[shards[i]];

		if (c < min)
			min = c;
		if (c > max)
			max = c;
	}
	if (n == 0 || min == 0)
		return -1;
	return (double)(max - min) / (double)min;
}

#define STATS_SEEN_BITS 8192

int
stats_map_shards(const struct rs_map *map, int *out, int cap)
{
	const struct rs_map_def *def = map_def(map);
	int listed = def->n_nodes + def->n_ranges;
	/* Shards seen, as bits: overrides may name a million keys. */
	unsigned char seen[STATS_SEEN_BITS / 8] = {0};
	int n = 0;

	/* The map's nodes, then the shards only its overrides name. */
	for (int i = 0; i < listed + def->n_overrides; i++) {
		int shard = i < def->n_nodes ? def->nodes[i]
		            : i < listed ? def->ranges[i - def->n_nodes].shard
		                         : def->overrides[i - listed].shard;
		int known = 0;

		if (shard >= 0 && shard < STATS_SEEN_BITS) {
			known = seen[shard / 8] >> (shard % 8) & 1;
			seen[shard / 8] |= (unsigned char)(1u << (shard % 8));
		} else {
			for (int j = 0; j < n; j++)
				known |= out[j] == shard;
		}
		if (known)
			continue;
		if (n == cap)
			break; /* plans have at most RS_PLAN_MAX_SHARDS */
		out[n++] = shard;
	}
	return n;
}

int
slot_rows_init(struct rs_slot_rows *sr, const struct rs_map *map, int n_shards)
{
	const struct rs_map_def *def = map_def(map);
	size_t slots;

	memset(sr, 0, sizeof(*sr));
	if (def->kind != RS_MAP_SLOTS)
		return 0;
	slots = (size_t)def->databases * (size_t)def->tables_per_db;
	sr->db_of = malloc(sizeof(int) * (size_t)n_shards);
	sr->base = calloc((size_t)n_shards, sizeof(int));
	sr->rows = calloc(slots, sizeof(uint64_t));
	if (sr->db_of == NULL || sr->base == NULL || sr->rows == NULL) {
		slot_rows_clear(sr);
		return RS_ENOMEM;
	}
	sr->databases = def->databases;
	sr->tables = def->tables_per_db;
	sr->n_shards = n_shards;
	for (int s = 0; s < n_shards; s++)
		sr->db_of[s] = -1;
	/* The plan refuses a node named twice in a map. */
	for (int d = 0; d < def->n_nodes && d < def->databases; d++) {
		sr->db_of[def->nodes[d]] = d;
		sr->base[def->nodes[d]] = d * def->tables_per_db;
	}
	return 0;
}

void
slot_rows_clear(struct rs_slot_rows *sr)
{
	free(sr->db_of);
	free(sr->base);
	free(sr->rows);
	memset(sr, 0, sizeof(*sr));
}

void
slot_rows_independent(const struct rs_slot_rows *sr, uint64_t *out)
{
	size_t n = (size_t)sr->databases, t = (size_t)sr->tables;

	memset(out, 0, n * t * sizeof(uint64_t));
	/* Slot s holds the points p with p % (N * T) == s, and N and T both
	 * divide N * T: p % N == s % N, p % T == s % T. */
	for (size_t s = 0; s < n * t; s++)
		out[(s % n) * t + s % t] += sr->rows[s];
}

void
stats_spread(const uint64_t *counts, int n, struct rs_spread *out)
{
	memset(out, 0, sizeof(*out));
	out->min = n > 0 ? UINT64_MAX : 0;
	for (int i = 0; i < n; i++) {
		if (counts[i] < out->min) {
			out->min = counts[i];
			out->min_at = i;
		}
		if (counts[i] > out->max) {
			out->max = counts[i];
			out->max_at = i;
		}
		out->empty += counts[i] == 0;
	}
	out->skew = n == 0 || out->min == 0
	                    ? -1
	                    : (double)(out->max - out->min) / (double)out->min;
}

int
topkeys_init(struct rs_topkeys *top)
{
	top->cap = 1024;
	top->used = 0;
	top->slots = calloc(top->cap, sizeof(*top->slots));
	return top->slots == NULL ? RS_ENOMEM : 0;
}

void
topkeys_clear(struct rs_topkeys *top)
{
	for (size_t i = 0; i < top->cap; i++)
		free(top->slots[i].key);
	free(top->slots);
	memset(top, 0, sizeof(*top));
}

static struct rs_keycount *
topkeys_find(struct rs_keycount *slots, size_t cap, const char *key, size_t len,
             uint64_t point)
{
	size_t i = (size_t)(point ^ (point >> 29)) & (cap - 1);

	for (;;) {
		struct rs_keycount *s = &slots[i];

		if (s->key == NULL || (s->point == point && s->len == len &&
		                       memcmp(s->key, key, len) == 0))
			return s;
		i = (i + 1) & (cap - 1);
	}
}

static int
topkeys_grow(struct rs_topkeys *top)
{
	size_t cap = top->cap * 2;
	struct rs_keycount *slots = calloc(cap, sizeof(*slots));

	if (slots == NULL)
		return RS_ENOMEM;
	for (size_t i = 0; i < top->cap; i++) {
		struct rs_keycount *s = &top->slots[i];

		if (s->key != NULL)
			*topkeys_find(slots, cap, s->key, s->len, s->point) =
				*s;
	}
	free(top->slots);
	top->slots = slots;
	top->cap = cap;
	return 0;
}

int
topkeys_add(struct rs_topkeys *top, const char *key, size_t len, uint64_t point,
            struct rs_owner from, struct rs_owner to)
{
	struct rs_keycount *s;

	if (2 * (top->used + 1) > top->cap && topkeys_grow(top) != 0)
		return RS_ENOMEM;
	s = topkeys_find(top->slots, top->cap, key, len, point);
	if (s->key == NULL) {
		s->key = malloc(len + 1);
		if (s->key == NULL)
			return RS_ENOMEM;
		memcpy(s->key, key, len);
		s->key[len] = '\0';
		s->len = len;
		s->point = point;
		s->from = from;
		s->to = to;
		top->used++;
	}
	s->rows++;
	return 0;
}

static int
keycount_cmp(const void *a, const void *b)
{
	const struct rs_keycount *x = *(const struct rs_keycount *const *)a;
	const struct rs_keycount *y = *(const struct rs_keycount *const *)b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c;

	if (x->rows != y->rows)
		return x->rows > y->rows ? -1 : 1;
	c = memcmp(x->key, y->key, n);
	if (c != 0)
		return c;
	return x->len < y->len ? -1 : x->len > y->len;
}

int
topkeys_best(const struct rs_topkeys *top, size_t n,
             const struct rs_keycount **out)
{
	const struct rs_keycount **all;
	size_t k = 0;

	if (top->used == 0 || n == 0)
		return 0;
	all = malloc(sizeof(*all) * top->used);
	if (all == NULL)
		return RS_ENOMEM;
	for (size_t i = 0; i < top->cap; i++)
		if (top->slots[i].key != NULL)
			all[k++] = &top->slots[i];
	qsort(all, k, sizeof(*all), keycount_cmp);
	if (n > k)
		n = k;
	memcpy(out, all, sizeof(*out) * n);
	free(all);
	return (int)n;
}

int
topkeys_hot(const struct rs_topkeys *top, const uint64_t *after,
            const struct rs_keycount ***out)
{
	size_t n = 0;

	*out = NULL;
	for (size_t i = 0; i < top->cap; i++) {
		const struct rs_keycount *s = &top->slots[i];

		/* rows > after / 20 is rows > 5% of after, in integers. */
		n += s->key != NULL && s->rows > after[s->to.shard] / 20;
	}
	if (n == 0)
		return 0;
	*out = malloc(sizeof(**out) * n);
	if (*out == NULL)
		return RS_ENOMEM;
	n = 0;
	for (size_t i = 0; i < top->cap; i++) {
		const struct rs_keycount *s = &top->slots[i];

		if (s->key != NULL && s->rows > after[s->to.shard] / 20)
			(*out)[n++] = s;
	}
	qsort(*out, n, sizeof(**out), keycount_cmp);
	return (int)n;
}
