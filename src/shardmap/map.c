/*
 * The maps of map.h, compiled for fast lookups.
 *
 * Ring and ranges are both "interval maps": a sorted array of inclusive
 * upper ends, a point belonging to the first end ≥ it (a ring wraps past its
 * last point to the first; a range table ends with "max" so it never does).
 * Both share one lookup: the top bits of the point within the span of the
 * ends select a bucket that stores the first end in that bucket, and a
 * short forward scan finishes.  The span is what the ends need, not all 64
 * bits: a java hash puts every point below 2^32 and identity ranges may
 * end at a few million, and indexing those by the top bits of 64 would put
 * every end in bucket 0 and make each lookup a linear scan.
 * The index has enough buckets that no bucket holds more than a few ends
 * (max_scan), and the scan always takes exactly max_scan branch-free steps
 * over ends padded with a UINT64_MAX sentinel, whose owner is the first
 * point's (a ring wraps there).  Ends that cluster (a java-hashed ring puts
 * "s0#10" … "s0#19" within a few hundred of each other) can crowd a bucket
 * whatever its width; past MAP_MAX_SCAN ends in one bucket, the bucket is
 * binary-searched without branches instead.  A lookup is a couple of cache hits
 * and no unpredictable branch, instead of a cold binary search through the
 * ring.
 *
 * Modulo and slots are "periodic maps": the owner depends on point mod M.
 *
 * A logical map first takes the point's logical shard (a few of its bits,
 * or a remainder), then looks that up in its assign table with the same
 * interval lookup, the table's last logical shards standing for ends.  Over
 * the point space it is periodic (the remainder's divisor, or 2^(shift +
 * bits)), except when its bits reach the top of the point (shift + bits =
 * 64): then it is an interval map whose pieces are the assign table's
 * ranges, each 2^shift points a logical shard.
 */
#include "shardmap/map.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAP_MAX_SCAN 4 /* most ends a lookup scans one by one */

struct rs_map {
	struct rs_map_def def; /* own copy */
	/* Interval maps (ring, ranges). */
	uint64_t *ends;  /* sorted inclusive upper ends */
	int *end_shards; /* owner of the interval ending at ends[i]; both
	                    arrays have n_ends + 1 entries (the sentinel) */
	int n_ends;
	uint32_t *bucket_first; /* first i with ends[i] >= bucket start, for
	                           bucket_last + 2 buckets (the last: n_ends) */
	int bucket_shift;       /* point >> bucket_shift is its bucket... */
	uint32_t bucket_last;   /* ...up to this one, which also takes every
	                           point past the indexed span */
	int max_scan;           /* most ends in one bucket: scanned when at most
	                           MAP_MAX_SCAN, else binary-searched */
	uint64_t logical_mask;  /* logical, bits form: 2^bits - 1 */
	/* Overrides: an open-addressing table of indices + 1 into
	 * def.overrides (0: empty), override_mask + 1 slots, at most half
	 * full; NULL when the map has none. */
	uint32_t *override_slots;
	uint64_t override_mask;
	unsigned char *uses; /* [n_uses]: 1 for a shard the map names */
	int n_uses;
};

static const char *const map_kind_names[] = {
	[RS_MAP_MODULO] = "modulo",   [RS_MAP_SLOTS] = "slots",
	[RS_MAP_RING] = "ring",       [RS_MAP_RANGES] = "ranges",
	[RS_MAP_LOGICAL] = "logical",
};

const char *
map_kind_name(enum rs_map_kind kind)
{
	return map_kind_names[kind];
}

int
map_kind_from_name(const char *name, enum rs_map_kind *kind)
{
	for (size_t i = 0; i < sizeof(map_kind_names) / sizeof(*map_kind_names);
	     i++) {
		if (strcmp(name, map_kind_names[i]) == 0) {
			*kind = (enum rs_map_kind)i;
			return 0;
		}
	}
	return -1;
}

void
map_def_clear(struct rs_map_def *def)
{
	free(def->nodes);
	free(def->table_format);
	free(def->ranges);
	for (int i = 0; i < def->n_overrides; i++)
		free(def->overrides[i].key);
	free(def->overrides);
	free(def->overrides_file);
	memset(def, 0, sizeof(*def));
}

/* Deep copy of the N overrides of SRC into *DST.  0 or RS_ENOMEM (*DST
 * then holds the keys copied so far, its count in *N_COPIED). */
static int
map_overrides_copy(struct rs_map_override **dst, int *n_copied,
                   const struct rs_map_override *src, int n)
{
	*n_copied = 0;
	*dst = n > 0 ? malloc(sizeof(**dst) * (size_t)n) : NULL;
	if (n > 0 && *dst == NULL)
		return RS_ENOMEM;
	for (int i = 0; i < n; i++) {
		(*dst)[i] = src[i];
		(*dst)[i].key = malloc(src[i].len + 1);
		if ((*dst)[i].key == NULL)
			return RS_ENOMEM;
		memcpy((*dst)[i].key, src[i].key, src[i].len);
		(*dst)[i].key[src[i].len] = '\0';
		(*n_copied)++;
	}
	return 0;
}

/* Deep copy of SRC into DST.  Returns 0 or RS_ENOMEM (DST then cleared). */
static int
map_def_copy(struct rs_map_def *dst, const struct rs_map_def *src)
{
	*dst = *src;
	dst->nodes = NULL;
	dst->table_format = NULL;
	dst->ranges = NULL;
	dst->overrides = NULL;
	dst->n_overrides = 0;
	dst->overrides_file = NULL;
	if (map_overrides_copy(&dst->overrides, &dst->n_overrides,
	                       src->overrides, src->n_overrides) != 0)
		goto fail;
	if (src->overrides_file != NULL &&
	    (dst->overrides_file = strdup(src->overrides_file)) == NULL)
		goto fail;
	if (src->n_nodes > 0) {
		dst->nodes = malloc(sizeof(int) * (size_t)src->n_nodes);
		if (dst->nodes == NULL)
			goto fail;
		memcpy(dst->nodes, src->nodes,
		       sizeof(int) * (size_t)src->n_nodes);
	}
	if (src->n_ranges > 0) {
		dst->ranges =
			malloc(sizeof(*src->ranges) * (size_t)src->n_ranges);
		if (dst->ranges == NULL)
			goto fail;
		memcpy(dst->ranges, src->ranges,
		       sizeof(*src->ranges) * (size_t)src->n_ranges);
	}
	dst->table_format =
		strdup(src->table_format != NULL ? src->table_format
	                                         : RS_TABLE_FORMAT_DEFAULT);
	if (dst->table_format == NULL)
		goto fail;
	return 0;
fail:
	map_def_clear(dst);
	return RS_ENOMEM;
}

struct ring_point {
	uint64_t position;
	int shard;
	const char *name; /* for ordering equal positions */
};

static int
ring_point_cmp(const void *a, const void *b)
{
	const struct ring_point *x = a, *y = b;

	if (x->position != y->position)
		return x->position < y->position ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The bucket of POINT: its bits above SHIFT, past LAST all in LAST. */
static inline uint32_t
map_bucket_of(uint64_t point, int shift, uint32_t last)
{
	uint64_t b = point >> shift;

	return b < last ? (uint32_t)b : last;
}

/* The most ends that fall into one bucket of buckets 0..LAST (see
 * map_bucket_of). */
static int
map_bucket_occupancy(const struct rs_map *map, int shift, uint32_t last)
{
	int most = 0, run = 0;
	uint64_t bucket = UINT64_MAX;

	for (int i = 0; i < map->n_ends; i++) {
		uint32_t b = map_bucket_of(map->ends[i], shift, last);

		run = b == bucket ? run + 1 : 1;
		bucket = b;
		if (run > most)
			most = run;
	}
	return most;
}

/* Add the sentinel and build the bucket index over map->ends: 2^BITS
 * buckets over [0, 2^SPAN), SPAN the bits of the largest end below
 * UINT64_MAX, as many as keep every bucket to at most 2 ends, but fewer
 * than 128 a end (at least 256; ends that crowd together would otherwise
 * take 2^20 buckets, 4 MB that miss the cache, and still crowd), 2^20 in
 * all, and no more once a bucket is one point wide (more cannot split
 * anything).
 * Returns 0 or RS_ENOMEM. */
static int
map_index_ends(struct rs_map *map)
{
	uint64_t top = 0;
	int bits = 8, span = 1, most_bits = 8;
	uint32_t last;

	map->ends[map->n_ends] = UINT64_MAX;
	map->end_shards[map->n_ends] = map->end_shards[0];
	for (int i = map->n_ends - 1; i >= 0 && top == 0; i--)
		if (map->ends[i] != UINT64_MAX)
			top = map->ends[i];
	while (span < 64 && top >> span != 0)
		span++;
	while (most_bits < 20 && (UINT64_C(1) << most_bits) <
	                                 UINT64_C(64) * (uint64_t)map->n_ends)
		most_bits++;
	for (;;) {
		map->bucket_shift = span > bits ? span - bits : 0;
		last = (uint32_t)((UINT64_C(1) << bits) - 1);
		if (bits >= most_bits || span <= bits ||
		    ((UINT64_C(1) << bits) >=
		             UINT64_C(4) * (uint64_t)map->n_ends &&
		     map_bucket_occupancy(map, map->bucket_shift, last) <= 2))
			break;
		bits++;
	}
	map->bucket_last = last;
	map->max_scan = map_bucket_occupancy(map, map->bucket_shift, last);
	map->bucket_first = malloc(sizeof(uint32_t) * ((size_t)last + 2));
	if (map->bucket_first == NULL)
		return RS_ENOMEM;
	uint32_t i = 0;
	for (uint64_t b = 0; b <= last; b++) {
		uint64_t start = b << map->bucket_shift;

		while (i < (uint32_t)map->n_ends && map->ends[i] < start)
			i++;
		map->bucket_first[b] = i;
	}
	map->bucket_first[last + 1] = (uint32_t)map->n_ends;
	return 0;
}

static int
map_build_ring(struct rs_map *map, enum rs_hash hash,
               const char *const *shard_names, struct rs_err *err)
{
	const struct rs_map_def *def = &map->def;
	size_t n = (size_t)def->n_nodes * (size_t)def->vnodes;
	struct ring_point *points = malloc(sizeof(*points) * n);
	char label[512];
	size_t k = 0;

	if (points == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory for the ring");
	for (int i = 0; i < def->n_nodes; i++) {
		/* nodes is NULL only when n_nodes is 0 (map_def_copy): the
		 * analyzer does not carry that through the copy. */
		// NOLINTNEXTLINE(clang-analyzer-core.NullDereference)
		const char *name = shard_names[def->nodes[i]];

		for (int v = 0; v < def->vnodes; v++) {
			int len = snprintf(label, sizeof(label), "%s#%d", name,
			                   v);
			uint64_t position;

			if (len < 0 || (size_t)len >= sizeof(label) ||
			    hash_point(hash, label, (size_t)len, &position) !=
			            0) {
				free(points);
				return rs_err_set(err, RS_EPLAN,
				                  "the ring cannot place node "
				                  "%s: hash %s cannot take its "
				                  "point name \"%s\"",
				                  name, hash_name(hash), label);
			}
			points[k].position = position;
			points[k].shard = def->nodes[i];
			points[k].name = name;
			k++;
		}
	}
	qsort(points, n, sizeof(*points), ring_point_cmp);
	map->ends = malloc(sizeof(uint64_t) * (n + 1));
	map->end_shards = malloc(sizeof(int) * (n + 1));
	if (map->ends == NULL || map->end_shards == NULL) {
		free(points);
		return rs_err_set(err, RS_ENOMEM, "out of memory for the ring");
	}
	for (size_t i = 0; i < n; i++) {
		map->ends[i] = points[i].position;
		map->end_shards[i] = points[i].shard;
	}
	map->n_ends = (int)n;
	free(points);
	return 0;
}

static int
map_build_ranges(struct rs_map *map, struct rs_err *err)
{
	const struct rs_map_def *def = &map->def;

	map->ends = malloc(sizeof(uint64_t) * ((size_t)def->n_ranges + 1));
	map->end_shards = malloc(sizeof(int) * ((size_t)def->n_ranges + 1));
	if (map->ends == NULL || map->end_shards == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory for ranges");
	for (int i = 0; i < def->n_ranges; i++) {
		/* As in map_build_ring: ranges is NULL only when empty. */
		// NOLINTNEXTLINE(clang-analyzer-core.NullDereference)
		map->ends[i] = def->ranges[i].end;
		map->end_shards[i] = def->ranges[i].shard;
	}
	map->n_ends = def->n_ranges;
	return 0;
}

/* The assign table of a logical map as interval ends over its logical
 * shards (the last one is logical_shards - 1, so the sentinel is never
 * reached). */
static int
map_build_logical(struct rs_map *map, struct rs_err *err)
{
	const struct rs_map_def *def = &map->def;
	int bits_ok = def->bits >= 0 && def->bits <= 32 && def->shift >= 0 &&
	              def->shift + def->bits <= 64;

	/* The plan checks all this; a def made elsewhere is refused here
	 * rather than looked up out of its table. */
	if (!bits_ok || def->logical_shards == 0 ||
	    (def->bits > 0 && def->logical_shards != UINT64_C(1)
	                                                     << def->bits) ||
	    def->n_ranges == 0 || def->ranges == NULL ||
	    def->ranges[def->n_ranges - 1].end != def->logical_shards - 1)
		return rs_err_set(err, RS_EPLAN,
		                  "a logical map needs 1 to 32 bits (shift + "
		                  "bits at most 64) or logical_shards >= 1, "
		                  "and an assign table ending at its last "
		                  "logical shard");
	if (map_build_ranges(map, err) != 0)
		return RS_ENOMEM;
	if (def->bits > 0)
		map->logical_mask = (UINT64_C(1) << def->bits) - 1;
	return 0;
}

/* FNV-1a of a key's text: where it starts looking in override_slots. */
static uint64_t
map_key_hash(const char *key, size_t len)
{
	uint64_t h = UINT64_C(14695981039346656037);

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)key[i];
		h *= UINT64_C(1099511628211);
	}
	return h;
}

/* Index the overrides by key (the plan lists each key once). */
static int
map_build_overrides(struct rs_map *map, struct rs_err *err)
{
	size_t size = 16;

	if (map->def.n_overrides == 0)
		return 0;
	while (size < 2 * (size_t)map->def.n_overrides)
		size *= 2;
	map->override_slots = calloc(size, sizeof(*map->override_slots));
	if (map->override_slots == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory for a map");
	map->override_mask = size - 1;
	for (int i = 0; i < map->def.n_overrides; i++) {
		const struct rs_map_override *o = &map->def.overrides[i];
		uint64_t at = map_key_hash(o->key, o->len) & map->override_mask;

		while (map->override_slots[at] != 0)
			at = (at + 1) & map->override_mask;
		map->override_slots[at] = (uint32_t)i + 1;
	}
	return 0;
}

/* The shards the map names, for map_uses_shard: its nodes, its ranges'
 * owners and its overrides' shards. */
static int
map_build_uses(struct rs_map *map, struct rs_err *err)
{
	const struct rs_map_def *def = &map->def;
	int n = def->n_nodes + def->n_ranges + def->n_overrides, k = 0, top = 0;
	int *shards = malloc(sizeof(int) * ((size_t)n + 1));

	if (shards == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory for a map");
	for (int i = 0; def->nodes != NULL && i < def->n_nodes; i++)
		shards[k++] = def->nodes[i];
	for (int i = 0; def->ranges != NULL && i < def->n_ranges; i++)
		shards[k++] = def->ranges[i].shard;
	for (int i = 0; def->overrides != NULL && i < def->n_overrides; i++)
		shards[k++] = def->overrides[i].shard;
	for (int i = 0; i < k; i++)
		if (shards[i] >= top)
			top = shards[i] + 1;
	map->uses = calloc((size_t)top + 1, 1);
	if (map->uses == NULL) {
		free(shards);
		return rs_err_set(err, RS_ENOMEM, "out of memory for a map");
	}
	map->n_uses = top;
	for (int i = 0; i < k; i++)
		if (shards[i] >= 0)
			map->uses[shards[i]] = 1;
	free(shards);
	return 0;
}

int
map_uses_shard(const struct rs_map *map, int shard)
{
	return shard >= 0 && shard < map->n_uses && map->uses[shard];
}

int
map_has_overrides(const struct rs_map *map)
{
	return map->override_slots != NULL;
}

int
map_override(const struct rs_map *map, const char *key, size_t len)
{
	uint64_t at;

	if (map->override_slots == NULL)
		return -1;
	at = map_key_hash(key, len) & map->override_mask;
	for (uint32_t i; (i = map->override_slots[at]) != 0;
	     at = (at + 1) & map->override_mask) {
		const struct rs_map_override *o = &map->def.overrides[i - 1];

		if (o->len == len && memcmp(o->key, key, len) == 0)
			return o->shard;
	}
	return -1;
}

struct rs_map *
map_new(const struct rs_map_def *def, enum rs_hash hash,
        const char *const *shard_names, struct rs_err *err)
{
	struct rs_map *map = calloc(1, sizeof(*map));
	int rc = 0;

	if (map == NULL || map_def_copy(&map->def, def) != 0) {
		free(map);
		rs_err_set(err, RS_ENOMEM, "out of memory for a map");
		return NULL;
	}
	if (def->kind == RS_MAP_RING)
		rc = map_build_ring(map, hash, shard_names, err);
	else if (def->kind == RS_MAP_RANGES)
		rc = map_build_ranges(map, err);
	else if (def->kind == RS_MAP_LOGICAL)
		rc = map_build_logical(map, err);
	if (rc == 0 && map->n_ends > 0 && map_index_ends(map) != 0)
		rc = rs_err_set(err, RS_ENOMEM, "out of memory for a map");
	if (rc == 0)
		rc = map_build_overrides(map, err);
	if (rc == 0)
		rc = map_build_uses(map, err);
	if (rc != 0) {
		map_free(map);
		return NULL;
	}
	return map;
}

void
map_free(struct rs_map *map)
{
	if (map == NULL)
		return;
	map_def_clear(&map->def);
	free(map->ends);
	free(map->end_shards);
	free(map->bucket_first);
	free(map->override_slots);
	free(map->uses);
	free(map);
}

const struct rs_map_def *
map_def(const struct rs_map *map)
{
	return &map->def;
}

/* The owner of the interval holding POINT: the first end ≥ POINT, or the
 * sentinel (the first point's owner) past the last end.  The answer lies in
 * POINT's bucket or is the first end after it (bucket_first of the next
 * bucket, or the sentinel), which is ≥ POINT. */
static inline int
map_interval_shard(const struct rs_map *map, uint64_t point)
{
	uint32_t b = map_bucket_of(point, map->bucket_shift, map->bucket_last);
	uint32_t i = map->bucket_first[b];

	if (map->max_scan <= MAP_MAX_SCAN) {
		for (int k = 0; k < map->max_scan; k++)
			i += map->ends[i] < point;
		return map->end_shards[i];
	}
	/* Lower bound in ends[i .. next], whose last element is ≥ POINT. */
	const uint64_t *base = map->ends + i;
	uint32_t n = map->bucket_first[b + 1] - i + 1;

	while (n > 1) {
		uint32_t half = n / 2;

		base = base[half] < point ? base + half : base;
		n -= half;
	}
	i = (uint32_t)(base - map->ends) + (*base < point);
	return map->end_shards[i];
}

static inline uint64_t
map_logical_of(const struct rs_map *map, uint64_t point)
{
	if (map->def.bits > 0)
		return (point >> map->def.shift) & map->logical_mask;
	return point % map->def.logical_shards;
}

uint64_t
map_logical_shard(const struct rs_map *map, uint64_t point)
{
	return map->def.kind == RS_MAP_LOGICAL ? map_logical_of(map, point) : 0;
}

uint64_t
map_logical_first_point(const struct rs_map *map, uint64_t logical)
{
	return map->def.bits > 0 ? logical << map->def.shift : logical;
}

int
map_same_logical(const struct rs_map *a, const struct rs_map *b)
{
	const struct rs_map_def *x = &a->def, *y = &b->def;

	return x->kind == RS_MAP_LOGICAL && y->kind == RS_MAP_LOGICAL &&
	       x->bits == y->bits && x->logical_shards == y->logical_shards &&
	       (x->bits == 0 || x->shift == y->shift);
}

struct rs_owner
map_owner(const struct rs_map *map, uint64_t point)
{
	const struct rs_map_def *def = &map->def;
	struct rs_owner owner = {0, 0};

	switch (def->kind) {
	case RS_MAP_MODULO:
		owner.shard = def->nodes[point % (uint64_t)def->n_nodes];
		break;
	case RS_MAP_SLOTS: {
		uint64_t t = (uint64_t)def->tables_per_db;
		uint64_t slot = point % ((uint64_t)def->databases * t);

		owner.shard = def->nodes[slot / t];
		owner.table = (int)(slot % t);
		break;
	}
	case RS_MAP_RING:
	case RS_MAP_RANGES:
		owner.shard = map_interval_shard(map, point);
		break;
	case RS_MAP_LOGICAL:
		owner.shard =
			map_interval_shard(map, map_logical_of(map, point));
		break;
	}
	return owner;
}

struct rs_owner
map_owner_key(const struct rs_map *map, const char *key, size_t len,
              uint64_t point, int *by_override)
{
	struct rs_owner owner = map_owner(map, point);
	int shard = map_override(map, key, len);

	if (by_override != NULL)
		*by_override = shard >= 0;
	if (shard >= 0)
		owner.shard = shard;
	return owner;
}

void
map_owner_batch(const struct rs_map *map, const uint64_t *points, size_t n,
                struct rs_owner *owners)
{
	const struct rs_map_def *def = &map->def;

	switch (def->kind) {
	case RS_MAP_RING:
	case RS_MAP_RANGES:
		for (size_t i = 0; i < n; i++) {
			owners[i].shard = map_interval_shard(map, points[i]);
			owners[i].table = 0;
		}
		break;
	case RS_MAP_LOGICAL:
		for (size_t i = 0; i < n; i++) {
			owners[i].shard = map_interval_shard(
				map, map_logical_of(map, points[i]));
			owners[i].table = 0;
		}
		break;
	default:
		for (size_t i = 0; i < n; i++)
			owners[i] = map_owner(map, points[i]);
		break;
	}
}

int
map_has_tables(const struct rs_map *map)
{
	return map->def.kind == RS_MAP_SLOTS;
}

int
map_check_table_format(const char *format, const char **why)
{
	int seen_s = 0, seen_d = 0;

	for (const char *p = format; *p != '\0'; p++) {
		if (*p != '%')
			continue;
		p++;
		if (*p == '%')
			continue;
		if (*p == 's' && !seen_s && !seen_d) {
			seen_s = 1;
		} else if (*p == 'd' && !seen_d) {
			seen_d = 1;
		} else {
			*why = "only one %s (the table name, first), one %d "
			       "(the table index) and %% are allowed";
			return -1;
		}
	}
	if (!seen_d) {
		*why = "it must contain %d for the table index, or every slot "
		       "table would get the same name";
		return -1;
	}
	return 0;
}

int
map_format_table_name(const char *format, const char *logical, int table,
                      char *buf, size_t size)
{
	size_t n = 0;

	/* The format was checked by map_check_table_format: only %s, %d, %%. */
	for (const char *p = format; *p != '\0'; p++) {
		char digits[16];
		const char *piece = p;
		size_t len = 1;

		if (*p == '%') {
			p++;
			if (*p == 's') {
				piece = logical;
				len = strlen(logical);
			} else if (*p == 'd') {
				len = (size_t)snprintf(digits, sizeof(digits),
				                       "%d", table);
				piece = digits;
			}
		}
		if (n + len >= size)
			return -1;
		memcpy(buf + n, piece, len);
		n += len;
	}
	buf[n] = '\0';
	return (int)n;
}

int
map_table_name(const struct rs_map *map, const char *logical, int table,
               char *buf, size_t size)
{
	size_t n;

	if (map->def.kind == RS_MAP_SLOTS)
		return map_format_table_name(map->def.table_format, logical,
		                             table, buf, size);
	n = strlen(logical);
	if (n >= size)
		return -1;
	memcpy(buf, logical, n + 1);
	return (int)n;
}

uint64_t
map_period(const struct rs_map *map)
{
	switch (map->def.kind) {
	case RS_MAP_MODULO:
		return (uint64_t)map->def.n_nodes;
	case RS_MAP_SLOTS:
		return (uint64_t)map->def.databases *
		       (uint64_t)map->def.tables_per_db;
	case RS_MAP_LOGICAL:
		if (map->def.bits == 0)
			return map->def.logical_shards;
		if (map->def.shift + map->def.bits < 64)
			return UINT64_C(1) << (map->def.shift + map->def.bits);
		return 0; /* the top bits: an interval map */
	default:
		return 0;
	}
}

uint64_t
map_gcd(uint64_t a, uint64_t b)
{
	while (b != 0) {
		uint64_t r = a % b;

		a = b;
		b = r;
	}
	return a;
}

int
map_n_pieces(const struct rs_map *map)
{
	if (map_period(map) != 0)
		return 0;
	return map->def.kind == RS_MAP_RING ? map->n_ends + 1 : map->n_ends;
}

void
map_piece(const struct rs_map *map, int i, uint64_t *end,
          struct rs_owner *owner)
{
	owner->table = 0;
	if (map->def.kind == RS_MAP_LOGICAL) {
		/* shift + bits = 64: logical shard L is the points
		 * [L << shift, ((L + 1) << shift) - 1]. */
		uint64_t last = map->ends[i];

		*end = last + 1 < map->def.logical_shards
		               ? ((last + 1) << map->def.shift) - 1
		               : UINT64_MAX;
		owner->shard = map->end_shards[i];
		return;
	}
	if (i == map->n_ends) { /* a ring's wrap-around piece */
		*end = UINT64_MAX;
		owner->shard = map->end_shards[0];
		return;
	}
	*end = map->ends[i];
	owner->shard = map->end_shards[i];
}
