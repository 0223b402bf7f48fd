/*
 * The pair maps of pairmap.h: both owners of a point with one lookup.
 */
#include "shardmap/pairmap.h"

#include <stdlib.h>
#include <string.h>

/* The largest period table: 4096 residues of 16 bytes, 64 KiB, which stays
 * in the cache beside the rest of the dry-run. */
#define PAIRMAP_MAX_PERIOD 4096

/* A (from, to) pair of shard indices as one non-negative int, the owner of
 * a merged interval map's piece. */
#define PAIR_MAX_SHARD  0x7fff
#define PAIR(from, to)  ((from) << 16 | (to))
#define PAIR_FROM(pair) ((pair) >> 16)
#define PAIR_TO(pair)   ((pair)&0xffff)

struct rs_pairmap {
	struct rs_map *merged; /* interval maps: pieces owned by PAIR()s;
	                          logical maps: over their logical shards */
	int logical;           /* merged is looked up by logical shard: */
	int shift;             /* (point >> shift) & mask when mask is not 0, */
	uint64_t mask;         /* else point % divisor */
	uint64_t divisor;
	uint64_t period;      /* periodic maps: the table's length */
	uint64_t period_mask; /* period - 1 when it is a power of two, else 0 */
	struct rs_owner (*owners)[2]; /* [period]: from and to of a residue */
};

void
pairmap_free(struct rs_pairmap *pairs)
{
	if (pairs == NULL)
		return;
	map_free(pairs->merged);
	free(pairs->owners);
	free(pairs);
}

/* Whether every owner of interval map MAP fits PAIR(). */
static int
pairmap_shards_fit(const struct rs_map *map)
{
	for (int i = 0; i < map_n_pieces(map); i++) {
		uint64_t end;
		struct rs_owner owner;

		map_piece(map, i, &end, &owner);
		if (owner.shard > PAIR_MAX_SHARD)
			return 0;
	}
	return 1;
}

/* One merged piece at a time, both maps' pieces walked in order of their
 * ends: the merged piece ends at the nearer end and is owned by the pair of
 * the pieces it lies in.  A map's empty pieces (equal ends) are passed like
 * any other; a lookup takes the first end at or above the point, so the
 * duplicates it makes are never chosen.  Returns 0 (PAIRS->merged NULL:
 * these maps have no merged map) or RS_ENOMEM with ERR filled. */
static int
pairmap_merge(struct rs_pairmap *pairs, const struct rs_map *from,
              const struct rs_map *to, struct rs_err *err)
{
	int nf = map_n_pieces(from), nt = map_n_pieces(to), i = 0, j = 0;
	struct rs_map_def def = {.kind = RS_MAP_RANGES};
	uint64_t last_f, last_t;
	struct rs_owner ignored;

	if (nf == 0 || nt == 0)
		return 0; /* an empty map: nothing to merge */
	/* Plans end every range table at "max"; a map that ends below it
	 * wraps to its first owner past the end, which the walk below does
	 * not model. */
	map_piece(from, nf - 1, &last_f, &ignored);
	map_piece(to, nt - 1, &last_t, &ignored);
	if (last_f != UINT64_MAX || last_t != UINT64_MAX ||
	    !pairmap_shards_fit(from) || !pairmap_shards_fit(to))
		return 0;
	def.ranges = malloc(sizeof(*def.ranges) * (size_t)(nf + nt));
	if (def.ranges == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory for a map");
	while (i < nf && j < nt) {
		uint64_t end_f, end_t;
		struct rs_owner of, ot;
		struct rs_map_range *r = &def.ranges[def.n_ranges++];

		map_piece(from, i, &end_f, &of);
		map_piece(to, j, &end_t, &ot);
		r->end = end_f < end_t ? end_f : end_t;
		r->shard = PAIR(of.shard, ot.shard);
		i += end_f == r->end;
		j += end_t == r->end;
	}
	/* Both maps end at UINT64_MAX, so both walks end together. */
	pairs->merged = map_new(&def, RS_HASH_IDENTITY, NULL, err);
	free(def.ranges);
	return pairs->merged == NULL ? RS_ENOMEM : 0;
}

/* Two logical maps that take the same logical shard from a point: their
 * assign tables merged into one over logical shards, as pairmap_merge
 * merges interval maps over points.  Returns 0 (PAIRS->merged NULL when a
 * shard does not fit PAIR()) or RS_ENOMEM with ERR filled. */
static int
pairmap_logical(struct rs_pairmap *pairs, const struct rs_map *from,
                const struct rs_map *to, struct rs_err *err)
{
	const struct rs_map_def *f = map_def(from), *t = map_def(to);
	struct rs_map_def def = {.kind = RS_MAP_RANGES};
	int i = 0, j = 0;

	for (int k = 0; k < f->n_ranges + t->n_ranges; k++) {
		const struct rs_map_range *r =
			k < f->n_ranges ? &f->ranges[k]
					: &t->ranges[k - f->n_ranges];

		if (r->shard > PAIR_MAX_SHARD)
			return 0;
	}
	def.ranges = malloc(sizeof(*def.ranges) *
	                    (size_t)(f->n_ranges + t->n_ranges));
	if (def.ranges == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory for a map");
	/* Both tables end at the last logical shard: they end together. */
	while (i < f->n_ranges && j < t->n_ranges) {
		uint64_t end_f = f->ranges[i].end, end_t = t->ranges[j].end;
		struct rs_map_range *r = &def.ranges[def.n_ranges++];

		r->end = end_f < end_t ? end_f : end_t;
		r->shard = PAIR(f->ranges[i].shard, t->ranges[j].shard);
		i += end_f == r->end;
		j += end_t == r->end;
	}
	pairs->merged = map_new(&def, RS_HASH_IDENTITY, NULL, err);
	free(def.ranges);
	if (pairs->merged == NULL)
		return RS_ENOMEM;
	pairs->logical = 1;
	pairs->shift = f->shift;
	pairs->mask = f->bits > 0 ? (UINT64_C(1) << f->bits) - 1 : 0;
	pairs->divisor = f->logical_shards;
	return 0;
}

/* The owners of every residue of lcm(periods), when it is at most
 * PAIRMAP_MAX_PERIOD.  A periodic map's owner depends only on the point
 * modulo its period, which divides the lcm, so the residue's own value
 * stands for every point with that residue.  Returns 0 (PAIRS->owners NULL
 * when the period is too long) or RS_ENOMEM with ERR filled. */
static int
pairmap_table(struct rs_pairmap *pairs, const struct rs_map *from,
              const struct rs_map *to, struct rs_err *err)
{
	uint64_t pf = map_period(from), pt = map_period(to);
	uint64_t period = pf / map_gcd(pf, pt);

	if (period > PAIRMAP_MAX_PERIOD / pt)
		return 0;
	period *= pt;
	pairs->owners = malloc(sizeof(*pairs->owners) * period);
	if (pairs->owners == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory for a map");
	for (uint64_t r = 0; r < period; r++) {
		pairs->owners[r][0] = map_owner(from, r);
		pairs->owners[r][1] = map_owner(to, r);
	}
	pairs->period = period;
	pairs->period_mask = (period & (period - 1)) == 0 ? period - 1 : 0;
	return 0;
}

struct rs_pairmap *
pairmap_new(const struct rs_map *from, const struct rs_map *to,
            struct rs_err *err)
{
	struct rs_pairmap *pairs = calloc(1, sizeof(*pairs));
	int periodic = map_period(from) != 0, rc;

	if (pairs == NULL) {
		rs_err_set(err, RS_ENOMEM, "out of memory for a map");
		return NULL;
	}
	if (periodic != (map_period(to) != 0))
		rc = 0; /* one of each kind: no pair map */
	else if (periodic)
		rc = pairmap_table(pairs, from, to, err);
	else
		rc = pairmap_merge(pairs, from, to, err);
	if (map_same_logical(from, to) && rc == 0 && pairs->owners == NULL &&
	    pairs->merged == NULL)
		rc = pairmap_logical(pairs, from, to, err);
	if (rc != 0 || (pairs->merged == NULL && pairs->owners == NULL)) {
		pairmap_free(pairs);
		return NULL;
	}
	return pairs;
}

/* pairmap_owners for a pair map over logical shards: a block of logical
 * shards at a time, looked up in the merged assign tables. */
static void
pairmap_logical_owners(const struct rs_pairmap *pairs, const uint64_t *points,
                       size_t n, struct rs_owner *from, struct rs_owner *to)
{
	uint64_t logical[256];

	for (size_t at = 0; at < n; at += 256) {
		size_t k = n - at < 256 ? n - at : 256;

		if (pairs->mask != 0)
			for (size_t i = 0; i < k; i++)
				logical[i] = (points[at + i] >> pairs->shift) &
				             pairs->mask;
		else
			for (size_t i = 0; i < k; i++)
				logical[i] = points[at + i] % pairs->divisor;
		map_owner_batch(pairs->merged, logical, k, from + at);
		for (size_t i = at; i < at + k; i++) {
			int pair = from[i].shard;

			from[i] = (struct rs_owner){PAIR_FROM(pair), 0};
			to[i] = (struct rs_owner){PAIR_TO(pair), 0};
		}
	}
}

void
pairmap_owners(const struct rs_pairmap *pairs, const uint64_t *points, size_t n,
               struct rs_owner *from, struct rs_owner *to)
{
	if (pairs->logical) {
		pairmap_logical_owners(pairs, points, n, from, to);
	} else if (pairs->merged != NULL) {
		/* The pairs land in from[].shard, then are taken apart. */
		map_owner_batch(pairs->merged, points, n, from);
		for (size_t i = 0; i < n; i++) {
			int pair = from[i].shard;

			from[i] = (struct rs_owner){PAIR_FROM(pair), 0};
			to[i] = (struct rs_owner){PAIR_TO(pair), 0};
		}
	} else if (pairs->period_mask != 0 || pairs->period == 1) {
		for (size_t i = 0; i < n; i++) {
			uint64_t r = points[i] & pairs->period_mask;

			from[i] = pairs->owners[r][0];
			to[i] = pairs->owners[r][1];
		}
	} else {
		for (size_t i = 0; i < n; i++) {
			uint64_t r = points[i] % pairs->period;

			from[i] = pairs->owners[r][0];
			to[i] = pairs->owners[r][1];
		}
	}
}

/* ---- the points that move ------------------------------------------- */

/* pairmap_moving's set: the point moves, or (SHARD >= 0, ARG) it is not
 * SHARD's under from. */
static int
pairmap_not_staying(struct rs_owner a, struct rs_owner b, const void *arg)
{
	int shard = *(const int *)arg;

	return a.shard != b.shard || a.table != b.table ||
	       (shard >= 0 && a.shard != shard);
}

/* Add the span LO … HI to M, joined to the last one when adjacent. */
static int
pairmap_span(struct rs_moving *m, size_t *cap, uint64_t lo, uint64_t hi)
{
	if (m->n > 0 && m->spans[m->n - 1][1] + 1 == lo) {
		m->spans[m->n - 1][1] = hi;
		return 0;
	}
	if (m->n == *cap) {
		size_t more = *cap * 2 + 16;
		uint64_t(*s)[2] = realloc(m->spans, sizeof(*s) * more);

		if (s == NULL)
			return RS_ENOMEM;
		m->spans = s;
		*cap = more;
	}
	m->spans[m->n][0] = lo;
	m->spans[m->n][1] = hi;
	m->n++;
	return 0;
}

/* Both maps' pieces walked in order of their ends, as pairmap_merge does:
 * each merged piece (after the previous end, up to the nearer end) moves
 * when its two owners differ. */
static int
pairmap_moving_spans(const struct rs_map *from, const struct rs_map *to,
                     int (*in)(struct rs_owner, struct rs_owner, const void *),
                     const void *arg, struct rs_moving *m, struct rs_err *err)
{
	int nf = map_n_pieces(from), nt = map_n_pieces(to), i = 0, j = 0;
	uint64_t start = 0;
	size_t cap = 0;
	int done = 0;

	while (!done && i < nf && j < nt) {
		uint64_t end_f, end_t, end;
		struct rs_owner of, ot;

		map_piece(from, i, &end_f, &of);
		map_piece(to, j, &end_t, &ot);
		end = end_f < end_t ? end_f : end_t;
		if (end >= start && in(of, ot, arg) &&
		    pairmap_span(m, &cap, start, end) != 0)
			return rs_err_set(err, RS_ENOMEM, "out of memory");
		i += end_f == end;
		j += end_t == end;
		done = end == UINT64_MAX;
		if (end >= start)
			start = end + 1;
	}
	return 0;
}

int
pairmap_moving(const struct rs_map *from, const struct rs_map *to, int shard,
               struct rs_moving *out, struct rs_err *err)
{
	return pairmap_points(from, to, pairmap_not_staying, &shard, out, err);
}

int
pairmap_points(const struct rs_map *from, const struct rs_map *to,
               int (*in)(struct rs_owner from, struct rs_owner to,
                         const void *arg),
               const void *arg, struct rs_moving *out, struct rs_err *err)
{
	memset(out, 0, sizeof(*out));
	/* A pinned key goes where its override says, whatever its point:
	 * points alone no longer tell which rows move. */
	if (map_has_overrides(from) || map_has_overrides(to))
		return RS_EUSAGE;
	return pairmap_points_unpinned(from, to, in, arg, out, err);
}

int
pairmap_points_unpinned(const struct rs_map *from, const struct rs_map *to,
                        int (*in)(struct rs_owner from, struct rs_owner to,
                                  const void *arg),
                        const void *arg, struct rs_moving *out,
                        struct rs_err *err)
{
	uint64_t pf = map_period(from), pt = map_period(to), period;
	size_t n = 0;

	memset(out, 0, sizeof(*out));
	if ((pf != 0) != (pt != 0))
		return RS_EUSAGE;
	if (pf == 0) {
		struct rs_owner ignored;
		uint64_t last_f = 0, last_t = 0;
		int rc;

		/* As pairmap_merge: the walk models maps that end at the
		 * top of the point space, as plans' do. */
		if (map_n_pieces(from) > 0)
			map_piece(from, map_n_pieces(from) - 1, &last_f,
			          &ignored);
		if (map_n_pieces(to) > 0)
			map_piece(to, map_n_pieces(to) - 1, &last_t, &ignored);
		if (last_f != UINT64_MAX || last_t != UINT64_MAX)
			return RS_EUSAGE;
		rc = pairmap_moving_spans(from, to, in, arg, out, err);

		if (rc != 0)
			pairmap_moving_free(out);
		return rc;
	}
	period = pf / map_gcd(pf, pt);
	if (period > PAIRMAP_MAX_PERIOD / pt)
		return RS_EUSAGE;
	period *= pt;
	out->residues = malloc(sizeof(*out->residues) * period);
	if (out->residues == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	for (uint64_t r = 0; r < period; r++)
		if (in(map_owner(from, r), map_owner(to, r), arg))
			out->residues[n++] = r;
	out->period = period;
	out->n = n;
	return 0;
}

void
pairmap_moving_free(struct rs_moving *moving)
{
	free(moving->spans);
	free(moving->residues);
	memset(moving, 0, sizeof(*moving));
}
