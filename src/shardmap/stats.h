/*
 * Counting what a plan does to a set of keys: per-shard counts before and
 * after, the flows between shards, the skew, and the keys with most rows.
 *
 * Pure bookkeeping: no I/O.  The dry-run feeds one (from, to) owner pair per
 * row read and prints what these functions computed.
 */
#ifndef RS_STATS_H
#define RS_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "shardmap/map.h"

struct rs_stats {
	int n_shards;     /* the plan's shards */
	uint64_t keys;    /* rows read */
	uint64_t moved;   /* rows whose owner changes */
	uint64_t *before; /* [n_shards] rows per shard under from */
	uint64_t *after;  /* [n_shards] rows per shard under to */
	uint64_t *flows;  /* [n_shards * n_shards] movers from i to j */
	/* What stats_add counts; the fields above are derived from it by
	 * stats_finish.  Two increments a row, no branch: the dry-run's hot
	 * loop calls stats_add once per key. */
	uint64_t *pairs;  /* [n_shards * n_shards] rows owned by i, then j */
	uint64_t *within; /* [n_shards] rows that stay on shard i but change
	                     table (slot maps) */
};

/* Returns 0 or RS_ENOMEM.  Free with stats_clear. */
int stats_init(struct rs_stats *stats, int n_shards);
void stats_clear(struct rs_stats *stats);

/* Count one row with owners FROM and TO.  The counts are read after
 * stats_finish. */
static inline void
stats_add(struct rs_stats *stats, struct rs_owner from, struct rs_owner to)
{
	stats->pairs[(size_t)from.shard * (size_t)stats->n_shards +
	             (size_t)to.shard]++;
	stats->within[from.shard] +=
		(uint64_t)((from.shard == to.shard) & (from.table != to.table));
}

/* Compute keys, moved, before, after and flows from what stats_add
 * counted (again, after more rows).  Cannot fail. */
void stats_finish(struct rs_stats *stats);

/* The skew (max − min) / min of COUNTS over the shards listed in SHARDS
 * (each listed once).  Returns -1 when the minimum is 0 (skew unbounded) or
 * no shard is listed. */
double stats_skew(const uint64_t *counts, const int *shards, int n);

/* The distinct shards of a map, in the order they first appear (ranges may
 * name a shard several times), and after them those only its overrides
 * name (a shard that holds only pinned keys).  Writes at most CAP indices into
 * OUT and returns how many it wrote, never more than CAP (RS_PLAN_MAX_SHARDS
 * takes every shard of a plan). */
int stats_map_shards(const struct rs_map *map, int *out, int cap);

/*
 * Rows per physical table of a slots map (`databases = N; tables_per_db =
 * T`): one count a slot, slot = db * T + table, db the shard's position in
 * the map's nodes.  Both the map's own tables and what an application
 * hashing the database and the table independently (db = point % N,
 * table = point % T) would fill follow from these counts, since both are
 * functions of point % (N * T).
 */
struct rs_slot_rows {
	int databases;  /* N; 0: the map is not a slots map, nothing counted */
	int tables;     /* T */
	int n_shards;   /* the plan's shards */
	int *db_of;     /* [n_shards] the shard's database index, or -1 */
	int *base;      /* [n_shards] db_of * T: its first slot */
	uint64_t *rows; /* [N * T] rows per slot */
};

/* Prepare to count rows per slot of MAP, a plan's map over N_SHARDS
 * shards; a map of another kind counts nothing.  Returns 0 or RS_ENOMEM.
 * Free with slot_rows_clear. */
int slot_rows_init(struct rs_slot_rows *sr, const struct rs_map *map,
                   int n_shards);
void slot_rows_clear(struct rs_slot_rows *sr);

/* Count N rows whose owners under the slots map are OWNERS. */
static inline void
slot_rows_add_batch(struct rs_slot_rows *sr, const struct rs_owner *owners,
                    size_t n)
{
	uint64_t *restrict rows = sr->rows;
	const int *restrict base = sr->base;

	for (size_t i = 0; i < n; i++)
		rows[base[owners[i].shard] + owners[i].table]++;
}

/* The rows per (db, table), OUT[db * T + table], that db = point % N,
 * table = point % T would give for the rows counted in SR.  When N and T
 * share a factor g, only the tables with db % g == table % g get rows. */
void slot_rows_independent(const struct rs_slot_rows *sr, uint64_t *out);

/* How evenly N counts are spread: the emptiest and the fullest (first of
 * equals) and the skew (max - min) / min, -1 when a count is 0. */
struct rs_spread {
	uint64_t min, max;
	int min_at, max_at; /* indices of the counts */
	int empty;          /* counts that are 0 */
	double skew;
};

void stats_spread(const uint64_t *counts, int n, struct rs_spread *out);

/*
 * Rows per distinct key, to report the hottest keys (--top N).  Keys are
 * stored once each; the table grows as needed.
 */
struct rs_keycount {
	char *key; /* owned copy, NUL-terminated */
	size_t len;
	uint64_t point; /* also the hash table's hash */
	uint64_t rows;
	struct rs_owner from, to;
};

struct rs_topkeys {
	struct rs_keycount *slots; /* open addressing, key == NULL is empty */
	size_t cap;                /* a power of two */
	size_t used;
};

int topkeys_init(struct rs_topkeys *top);
void topkeys_clear(struct rs_topkeys *top);

/* Count one row of KEY.  Returns 0 or RS_ENOMEM (nothing counted). */
int topkeys_add(struct rs_topkeys *top, const char *key, size_t len,
                uint64_t point, struct rs_owner from, struct rs_owner to);

/* The N keys with most rows, most first (ties by key bytes), as pointers
 * into TOP (valid until the next topkeys_add or topkeys_clear).  Returns how
 * many were written to OUT (at most N), or RS_ENOMEM. */
int topkeys_best(const struct rs_topkeys *top, size_t n,
                 const struct rs_keycount **out);

/* The keys that alone hold more than 5% of the rows their shard has under
 * `to` (AFTER: rows per shard, as rs_stats.after): hot keys, which no map
 * spreads.  *OUT is a malloc'd array of pointers into TOP, most rows first
 * (ties by key bytes), that the caller frees.  Returns how many, or
 * RS_ENOMEM (*OUT NULL). */
int topkeys_hot(const struct rs_topkeys *top, const uint64_t *after,
                const struct rs_keycount ***out);

#endif
