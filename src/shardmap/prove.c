/*
 * Exact proofs over the whole 64-bit point space, for plan validation.
 *
 * A doubling plan is valid only if every mover goes from a shard to that
 * shard's declared replica (DESIGN §3).  Sampling points could miss a thin
 * ring slice, so the rule is proven instead, using the shape of each map
 * (map_period / map_piece): interval maps are walked piece by piece over
 * the union of their breakpoints; periodic maps over every residue of their
 * period, which is exhaustive because every residue of a period ≤ 2^64
 * occurs somewhere in [0, 2^64).  The work is bounded: a plan whose proof
 * would take more than PROOF_BUDGET owner pairs is refused with a message.
 * Two logical maps that take the same logical shard from a point are
 * compared over their assign tables instead, range by range: every logical
 * shard occurs at some point (its first point), and a point's owners are
 * those of its logical shard, so the walk is exact and as long as the two
 * tables.
 * Asked to, the proof walks on past a point that breaks the rule and notes
 * for each shard where its points go, so that plan validation can name
 * every shard that breaks it, with advice that fits.
 */
#include "shardmap/map.h"

#include <inttypes.h>
#include <stdio.h>

#define PROOF_BUDGET (1ULL << 26)

struct proof {
	const struct rs_map *from, *to;
	const int *replica_of;
	const char *const *names;
	struct rs_doubling_found *found; /* NULL: stop at the first break */
	int broken;                      /* a point broke the rule */
	struct rs_err *err;
};

/* A point that changes its table index: what would keep every index,
 * fitting the kinds of the two maps. */
static int
proof_table_moves(struct proof *pf, uint64_t point, struct rs_owner from,
                  struct rs_owner to)
{
	const struct rs_map_def *f = map_def(pf->from), *t = map_def(pf->to);
	char fix[160];

	if (f->kind == RS_MAP_SLOTS && t->kind == RS_MAP_SLOTS)
		snprintf(fix, sizeof(fix),
		         "use the same tables_per_db in from and to");
	else if (f->kind == RS_MAP_SLOTS)
		snprintf(fix, sizeof(fix),
		         "make to a slots map with tables_per_db = %d, as "
		         "from's",
		         f->tables_per_db);
	else
		snprintf(fix, sizeof(fix),
		         "use tables_per_db = 1 in to: from has one table a "
		         "shard");
	return rs_err_set(pf->err, RS_EPLAN,
	                  "point %" PRIu64 " moves from %s table %d to %s "
	                  "table %d; a doubling keeps every table index, so %s",
	                  point, pf->names[from.shard], from.table,
	                  pf->names[to.shard], to.table, fix);
}

/* Check one point's owners: returns 0, or RS_EPLAN when the proof stops
 * (ERR says why). */
static int
proof_check(struct proof *pf, uint64_t point, struct rs_owner from,
            struct rs_owner to)
{
	const char *f = pf->names[from.shard], *t = pf->names[to.shard];
	int replica = pf->replica_of[from.shard];
	struct rs_doubling_found *seen =
		pf->found != NULL ? &pf->found[from.shard] : NULL;

	if (from.shard == to.shard && from.table == to.table)
		return 0;
	if (from.table != to.table)
		return proof_table_moves(pf, point, from, to);
	if (seen != NULL && seen->moves_to < 0)
		seen->moves_to = to.shard;
	else if (seen != NULL && seen->moves_to != to.shard)
		seen->spread = 1;
	if (to.shard == replica)
		return 0;
	pf->broken = 1;
	if (seen == NULL && replica < 0)
		return rs_err_set(pf->err, RS_EPLAN,
		                  "point %" PRIu64 " moves from %s to %s, but "
		                  "%s declares no replica",
		                  point, f, t, f);
	if (seen == NULL)
		return rs_err_set(pf->err, RS_EPLAN,
		                  "point %" PRIu64 " moves from %s to %s, but "
		                  "%s's replica is %s",
		                  point, f, t, f, pf->names[replica]);
	if (seen->bad_to < 0) {
		seen->bad_to = to.shard;
		seen->bad_point = point;
	}
	return 0;
}

static int
prove_intervals(struct proof *pf, const struct rs_map *from,
                const struct rs_map *to)
{
	int i = 0, j = 0, ni = map_n_pieces(from), nj = map_n_pieces(to);
	uint64_t lo = 0;

	while (i < ni && j < nj) {
		uint64_t end_f, end_t;
		struct rs_owner of, ot;

		map_piece(from, i, &end_f, &of);
		map_piece(to, j, &end_t, &ot);
		if (end_f < lo) { /* an empty piece */
			i++;
			continue;
		}
		if (end_t < lo) {
			j++;
			continue;
		}
		int rc = proof_check(pf, lo, of, ot);
		if (rc != 0)
			return rc;
		uint64_t end = end_f < end_t ? end_f : end_t;
		if (end == UINT64_MAX)
			break;
		lo = end + 1;
	}
	return 0;
}

/* What a periodic map's period counts, for messages. */
static const char *
period_of(const struct rs_map *map)
{
	return map_def(map)->kind == RS_MAP_SLOTS
	               ? "its databases x tables_per_db"
	               : "its nodes";
}

static int
prove_periodic(struct proof *pf, const struct rs_map *from,
               const struct rs_map *to)
{
	uint64_t mf = map_period(from), mt = map_period(to);
	uint64_t l = mf / map_gcd(mf, mt);

	if (l > PROOF_BUDGET / mt)
		return rs_err_set(pf->err, RS_EPLAN,
		                  "cannot prove this doubling: from repeats "
		                  "every %" PRIu64 " points (%s) and to every "
		                  "%" PRIu64 " (%s), whose common multiple is "
		                  "above %llu; a doubling's to repeats every "
		                  "%" PRIu64 " points, twice from's",
		                  mf, period_of(from), mt, period_of(to),
		                  PROOF_BUDGET, 2 * mf);
	l *= mt;
	for (uint64_t r = 0; r < l; r++) {
		int rc = proof_check(pf, r, map_owner(from, r),
		                     map_owner(to, r));
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* One map periodic (period M), the other made of pieces: inside a piece of
 * at least M points every residue occurs; a shorter piece is walked point
 * by point. */
static int
prove_mixed(struct proof *pf, const struct rs_map *from,
            const struct rs_map *to)
{
	const struct rs_map *pieces = map_period(from) == 0 ? from : to;
	const struct rs_map *periodic = pieces == from ? to : from;
	uint64_t m = map_period(periodic), lo = 0, work = 0;
	int n = map_n_pieces(pieces);

	for (int i = 0; i < n; i++) {
		uint64_t end, count;
		struct rs_owner piece_owner;

		map_piece(pieces, i, &end, &piece_owner);
		if (end < lo && i > 0)
			continue; /* empty */
		count = end - lo < m ? end - lo + 1 : m;
		work += count;
		if (work > PROOF_BUDGET)
			return rs_err_set(pf->err, RS_EPLAN,
			                  "cannot prove this doubling within "
			                  "%llu steps: use the same kind of "
			                  "map for from and to",
			                  PROOF_BUDGET);
		for (uint64_t k = 0; k < count; k++) {
			/* The point of residue (lo + k) mod m in this piece. */
			uint64_t point = lo + k;
			struct rs_owner po = map_owner(periodic, point);
			int rc = pieces == from ? proof_check(pf, point,
			                                      piece_owner, po)
			                        : proof_check(pf, point, po,
			                                      piece_owner);
			if (rc != 0)
				return rc;
		}
		if (end == UINT64_MAX)
			break;
		lo = end + 1;
	}
	return 0;
}

/* Both maps logical, with the same logical shard for every point: their
 * assign tables walked together, ranges of logical shards at a time, each
 * stood for by its least point. */
static int
prove_logical(struct proof *pf, const struct rs_map *from,
              const struct rs_map *to)
{
	const struct rs_map_def *f = map_def(from), *t = map_def(to);
	uint64_t lo = 0;
	int i = 0, j = 0;

	while (i < f->n_ranges && j < t->n_ranges) {
		uint64_t end_f = f->ranges[i].end, end_t = t->ranges[j].end;
		struct rs_owner of = {f->ranges[i].shard, 0};
		struct rs_owner ot = {t->ranges[j].shard, 0};
		uint64_t end = end_f < end_t ? end_f : end_t;
		int rc = proof_check(pf, map_logical_first_point(from, lo), of,
		                     ot);

		if (rc != 0)
			return rc;
		i += end_f == end;
		j += end_t == end;
		lo = end + 1;
	}
	return 0;
}

int
map_prove_doubling(const struct rs_map *from, const struct rs_map *to,
                   const int *replica_of, const char *const *shard_names,
                   struct rs_doubling_found *found, struct rs_err *err)
{
	struct proof pf = {from, to, replica_of, shard_names, found, 0, err};
	int from_periodic = map_period(from) != 0;
	int to_periodic = map_period(to) != 0;
	int rc;

	if (map_same_logical(from, to))
		rc = prove_logical(&pf, from, to);
	else if (!from_periodic && !to_periodic)
		rc = prove_intervals(&pf, from, to);
	else if (from_periodic && to_periodic)
		rc = prove_periodic(&pf, from, to);
	else
		rc = prove_mixed(&pf, from, to);
	return rc != 0 ? rc : pf.broken ? RS_EPLAN : 0;
}
