/*
 * Both owners of a point, under `from` and under `to`, with one lookup: the
 * dry-run's hot loop asks this for every key.
 *
 * Two interval maps (ring, ranges) are merged into one interval map whose
 * pieces are owned by (from, to) pairs; two periodic maps (modulo, slots)
 * into one table over the least common multiple of their periods, so that
 * a key costs one remainder (a mask when the period is a power of two)
 * instead of a division or two per map.  Two logical maps that take the
 * same logical shard from a point but repeat too seldom for a table have
 * their assign tables merged over logical shards instead.  Any other pair
 * of maps, or one that would make the table too large, has no pair map:
 * the caller looks up each map (map_owner_batch), which gives the same
 * owners.
 *
 * A logical map is periodic or an interval map (see map_period), so the
 * points that move (pairmap_moving, below) are described as for those;
 * one whose period is too long has no such description.
 */
#ifndef RS_PAIRMAP_H
#define RS_PAIRMAP_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "shardmap/map.h"

struct rs_pairmap;

/* The pair map of FROM and TO (which may be freed afterwards: it keeps
 * what it needs).  Returns NULL with ERR
 * unfilled when there is none for these maps (see above; also when a
 * shard index is above 0x7fff or a range table does not end at
 * UINT64_MAX), or NULL with ERR filled (RS_ENOMEM).  Free with
 * pairmap_free. */
struct rs_pairmap *pairmap_new(const struct rs_map *from,
                               const struct rs_map *to, struct rs_err *err);
void pairmap_free(struct rs_pairmap *pairs);

/* FROM[i] = map_owner(from, POINTS[i]) and TO[i] = map_owner(to,
 * POINTS[i]) for the N points.  Cannot fail.  The maps' overrides are not
 * looked at (they need the keys): a caller that has them applies
 * map_override afterwards. */
void pairmap_owners(const struct rs_pairmap *pairs, const uint64_t *points,
                    size_t n, struct rs_owner *from, struct rs_owner *to);

/*
 * The points that move: those whose owner (shard and table) under FROM is
 * not their owner under TO, described so that a database can test a
 * point against it (a fence that rejects only the writes to rows that
 * move).  For two interval maps (ring, ranges), N sorted, disjoint,
 * non-adjacent inclusive spans SPANS[i][0] … SPANS[i][1]; for two
 * periodic maps (modulo, slots), PERIOD and the N sorted residues modulo
 * PERIOD that move.  N is 0 when nothing moves.
 */
struct rs_moving {
	uint64_t period;      /* 0: spans; else residues modulo it */
	uint64_t (*spans)[2]; /* [n] when period is 0 */
	uint64_t *residues;   /* [n] when period is not 0 */
	size_t n;
};

/* Fill OUT (free with pairmap_moving_free) for FROM and TO.  With SHARD
 * >= 0, the points that do not stay on that shard instead: those that move
 * and those it does not own under FROM (a fence on SHARD lets through only
 * the writes to rows that belong there before and after).  Returns 0;
 * RS_EUSAGE when these maps have no such description (one of each kind,
 * a period longer than 4096, or a map with overrides, whose pinned keys
 * move by key and not by point: the caller then treats every point as
 * moving); RS_ENOMEM with ERR filled. */
int pairmap_moving(const struct rs_map *from, const struct rs_map *to,
                   int shard, struct rs_moving *out, struct rs_err *err);

/* As pairmap_moving, for any set of points chosen by their two owners:
 * those for which IN(owner under FROM, owner under TO, ARG) is not 0. */
int pairmap_points(const struct rs_map *from, const struct rs_map *to,
                   int (*in)(struct rs_owner from, struct rs_owner to,
                             const void *arg),
                   const void *arg, struct rs_moving *out, struct rs_err *err);
/* As pairmap_points, for the maps alone, their overrides aside: for a
 * caller that looks at the pinned keys' own owners too (the pairs of
 * owners verify reads, say). */
int pairmap_points_unpinned(const struct rs_map *from, const struct rs_map *to,
                            int (*in)(struct rs_owner from, struct rs_owner to,
                                      const void *arg),
                            const void *arg, struct rs_moving *out,
                            struct rs_err *err);
void pairmap_moving_free(struct rs_moving *moving);

#endif
