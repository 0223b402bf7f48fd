/*
 * The maps (modulo, slots, ring, ranges, logical): a point → its owner, a
 * shard and a table index.
 *
 * A map is described by a struct rs_map_def (what the plan says, with node
 * names resolved to shard indices) and compiled by map_new into a struct
 * rs_map that answers map_owner in a few nanoseconds: a ring is sorted once
 * and indexed by the top bits of the point, so a lookup touches one or two
 * cache lines instead of binary-searching the whole ring.
 *
 * Shard indices are positions in the plan's `shards` list, so that owners
 * under `from` and `to` compare directly.
 *
 * Any map may carry overrides (directory entries): keys pinned to a shard,
 * consulted before the map.  They are looked up by the key's text, not by
 * its point, so the functions that take a point alone (map_owner, the
 * proofs, the pair maps) answer for the map without its overrides; callers
 * that hold the key ask map_owner_key, or map_override after a batch.
 */
#ifndef RS_MAP_H
#define RS_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "shardmap/hash.h"

enum rs_map_kind {
	RS_MAP_MODULO,
	RS_MAP_SLOTS,
	RS_MAP_RING,
	RS_MAP_RANGES,
	RS_MAP_LOGICAL,
};

#define RS_TABLE_FORMAT_DEFAULT "%s_%d"

struct rs_map_range {
	uint64_t end; /* last point of the range, inclusive; in a logical
	                 map's assign table, its last logical shard */
	int shard;    /* owner: index into the plan's shards */
};

/* A key pinned to a shard, consulted before the map. */
struct rs_map_override {
	char *key; /* the shard key's text, as it is hashed */
	size_t len;
	int shard; /* its owner: index into the plan's shards */
	int line;  /* where it is written (the plan's line or the file's) */
};

struct rs_map_def {
	enum rs_map_kind kind;
	int *nodes; /* shard indices; databases for slots, in order */
	int n_nodes;
	int databases;      /* slots: N */
	int tables_per_db;  /* slots: T */
	char *table_format; /* slots: physical table name, "%s_%d" by default */
	int vnodes;         /* ring: V points per node */
	struct rs_map_range *ranges; /* ranges: strictly increasing ends;
	                                logical: the assign table */
	int n_ranges;
	/* logical: the logical shard of a point is (point >> shift) &
	 * (2^bits - 1) when bits > 0, else point % logical_shards; either
	 * way logical_shards counts them (2^bits in the first form). */
	int shift;
	int bits;
	uint64_t logical_shards;
	/* Any map: keys pinned to a shard, each once; from the plan or from
	 * overrides_file (NULL when written inline; else the file's path as
	 * messages show it, relative to where reshard runs). */
	struct rs_map_override *overrides;
	int n_overrides;
	char *overrides_file;
};

struct rs_owner {
	int shard; /* index into the plan's shards */
	int table; /* table index: 0 except for slot maps */
};

struct rs_map; /* compiled, immutable; see map_new */

const char *map_kind_name(enum rs_map_kind kind);
int map_kind_from_name(const char *name, enum rs_map_kind *kind);

/* Compile DEF into a map.  SHARD_NAMES gives each shard's name, needed by
 * the ring (its points are hash("name#i") under HASH, ties ordered by name).
 * DEF and SHARD_NAMES are copied as needed; the caller keeps ownership.
 * Returns NULL with ERR filled when the ring cannot be built (a hash that
 * does not take text) or on allocation failure.  Free with map_free. */
struct rs_map *map_new(const struct rs_map_def *def, enum rs_hash hash,
                       const char *const *shard_names, struct rs_err *err);
void map_free(struct rs_map *map);

const struct rs_map_def *map_def(const struct rs_map *map);

/* The logical shard of POINT under a logical map (see rs_map_def); 0
 * under any other map. */
uint64_t map_logical_shard(const struct rs_map *map, uint64_t point);

/* The least point whose logical shard is LOGICAL (below logical_shards),
 * for messages and proofs: LOGICAL << shift, or LOGICAL itself. */
uint64_t map_logical_first_point(const struct rs_map *map, uint64_t logical);

/* Whether logical maps A and B take the same logical shard from every
 * point (the same shift and bits, or the same logical_shards): then they
 * differ only by their assign tables.  0 when either is not logical. */
int map_same_logical(const struct rs_map *a, const struct rs_map *b);

/* The owner of POINT.  Never fails on a compiled map. */
struct rs_owner map_owner(const struct rs_map *map, uint64_t point);

/* Whether SHARD owns anything under MAP: a node of it, or the shard of one
 * of its overrides.  Constant time. */
int map_uses_shard(const struct rs_map *map, int shard);

/* Whether MAP has overrides, and the shard KEY (LEN bytes) is pinned to,
 * or -1 when it is not.  An override keeps the map's table index (a slot
 * map's table is the key's, whichever database holds it). */
int map_has_overrides(const struct rs_map *map);
int map_override(const struct rs_map *map, const char *key, size_t len);

/* The owner of KEY, whose point is POINT: its override, else the map's.
 * *BY_OVERRIDE (when not NULL) tells which rule decided. */
struct rs_owner map_owner_key(const struct rs_map *map, const char *key,
                              size_t len, uint64_t point, int *by_override);

/* The owners of N points at once: OWNERS[i] = map_owner(MAP, POINTS[i]).
 * Faster than N calls in a hot loop (the map's kind is looked at once and
 * the lookups' cache misses overlap). */
void map_owner_batch(const struct rs_map *map, const uint64_t *points, size_t n,
                     struct rs_owner *owners);

/* Whether the map has more than one table per shard (slot maps), which is
 * when owners are written as `db.table`. */
int map_has_tables(const struct rs_map *map);

/* Write the physical name of table index TABLE of logical table LOGICAL into
 * BUF.  For slot maps this is format(table_format, LOGICAL, TABLE); for the
 * others it is LOGICAL.  Returns the length, or -1 if BUF is too small. */
int map_table_name(const struct rs_map *map, const char *logical, int table,
                   char *buf, size_t size);

/* The same for a slot map's table_format FORMAT (checked by
 * map_check_table_format) before the map is compiled. */
int map_format_table_name(const char *format, const char *logical, int table,
                          char *buf, size_t size);

/* Check a slot map's table_format: only %s (once, first), %d (once) and
 * %% are allowed.  Returns 0, or -1 with a reason in WHY. */
int map_check_table_format(const char *format, const char **why);

/* Release what a def points to (nodes, table_format, ranges,
 * overrides). */
void map_def_clear(struct rs_map_def *def);

/*
 * The shape of a map over the point space, for proofs and reports.
 * map_period is M for periodic maps (modulo: nodes, slots: N·T, logical:
 * logical_shards, or 2^(shift + bits) below 2^64), whose owner depends
 * only on point mod M, and 0 for interval maps.  Interval maps (ring,
 * ranges, and a logical map whose shift + bits is 64) are map_n_pieces
 * consecutive pieces covering [0, 2^64) in order; map_piece gives piece
 * I's inclusive upper end and its owner (a ring's last piece wraps to its
 * first point's owner and ends at UINT64_MAX).  A piece may be empty (its
 * end equal to the previous one).
 */
uint64_t map_period(const struct rs_map *map);
/* The greatest common divisor of A and B (A when B is 0): two periodic
 * maps repeat together every A / map_gcd(A, B) * B points. */
uint64_t map_gcd(uint64_t a, uint64_t b);
int map_n_pieces(const struct rs_map *map);
void map_piece(const struct rs_map *map, int i, uint64_t *end,
               struct rs_owner *owner);

/*
 * Proofs over the whole point space, used by plan validation.
 *
 * map_prove_doubling checks, for every point in [0, 2^64), that the owner
 * under TO is either the owner under FROM or REPLICA_OF[owner under FROM],
 * with the same table index.  It does so exactly, not by sampling: interval
 * maps (ring, ranges) are compared piece by piece over their breakpoints,
 * periodic maps (modulo, slots) over every residue of their period, and
 * two logical maps that take the same logical shard from a point over
 * their assign tables, logical shard range by range (the counterexample
 * is then the least point of the first logical shard that breaks it).
 * Returns 0 when the rule holds; otherwise RS_EPLAN with ERR naming the
 * first counterexample point and its owners; RS_EPLAN too if the proof
 * would need more than a bounded amount of work, or if a point changes its
 * table index (ERR says so and what would keep it).
 *
 * With FOUND NULL the proof stops at the first counterexample.  Otherwise
 * FOUND has one entry per shard (as REPLICA_OF, set by the caller to
 * {-1, 0, -1, 0}), each filled with what the proof saw of that shard's
 * points under FROM, and the proof goes on past a point that moves to the
 * wrong shard, so that every shard that breaks the rule is known, not only
 * the first: it then returns RS_EPLAN with ERR untouched.  ERR is filled
 * only when the proof stops (a table index, the bound on its work).
 */
struct rs_doubling_found {
	int moves_to;       /* the first shard its points move to, -1: none */
	int spread;         /* 1 when its points move to more than one shard */
	int bad_to;         /* the first shard a point moves to that is not its
	                       replica, -1 when none does */
	uint64_t bad_point; /* the least such point */
};

int map_prove_doubling(const struct rs_map *from, const struct rs_map *to,
                       const int *replica_of, const char *const *shard_names,
                       struct rs_doubling_found *found, struct rs_err *err);

#endif
