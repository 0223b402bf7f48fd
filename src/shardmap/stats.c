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

int
stats_map_shards(const struct rs_map *map, int *out, int cap)
{
	const struct rs_map_def *def = map_def(map);
	int n = 0;

	for (int i = 0; i < def->n_nodes + def->n_ranges; i++) {
		int shard = i < def->n_nodes
		                    ? def->nodes[i]
		                    : def->ranges[i - def->n_nodes].shard;
		int seen = 0;

		for (int j = 0; j < n; j++)
			seen |= out[j] == shard;
		if (seen)
			continue;
		if (n == cap)
			break; /* plans have at most RS_PLAN_MAX_SHARDS */
		out[n++] = shard;
	}
	return n;
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
