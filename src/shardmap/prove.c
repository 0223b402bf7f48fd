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
 */
#include "shardmap/map.h"

#include <inttypes.h>

#define PROOF_BUDGET (1ULL << 26)

struct proof {
	const int *replica_of;
	const char *const *names;
	struct rs_err *err;
};

/* Check one point's owners; returns 0 or RS_EPLAN with the counterexample. */
static int
proof_check(const struct proof *pf, uint64_t point, struct rs_owner from,
            struct rs_owner to)
{
	const char *f = pf->names[from.shard], *t = pf->names[to.shard];
	int replica = pf->replica_of[from.shard];

	if (from.shard == to.shard && from.table == to.table)
		return 0;
	if (from.table != to.table)
		return rs_err_set(pf->err, RS_EPLAN,
		                  "point %" PRIu64 " moves from %s table %d to "
		                  "%s table %d; a doubling keeps every table "
		                  "index, so use the same tables_per_db in "
		                  "from and to",
		                  point, f, from.table, t, to.table);
	if (to.shard == replica)
		return 0;
	if (replica < 0)
		return rs_err_set(pf->err, RS_EPLAN,
		                  "point %" PRIu64 " moves from %s to %s, but "
		                  "%s declares no replica; a doubling moves "
		                  "rows only to a shard's replica (add replica "
		                  "= \"%s\"; to %s, or use strategy = "
		                  "\"split\")",
		                  point, f, t, f, t, f);
	return rs_err_set(pf->err, RS_EPLAN,
	                  "point %" PRIu64 " moves from %s to %s, but %s's "
	                  "replica is %s; a doubling moves rows only to a "
	                  "shard's replica (give that range to %s, or use "
	                  "strategy = \"split\")",
	                  point, f, t, f, pf->names[replica],
	                  pf->names[replica]);
}

static int
prove_intervals(const struct proof *pf, const struct rs_map *from,
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

static uint64_t
gcd_u64(uint64_t a, uint64_t b)
{
	while (b != 0) {
		uint64_t r = a % b;

		a = b;
		b = r;
	}
	return a;
}

static int
prove_periodic(const struct proof *pf, const struct rs_map *from,
               const struct rs_map *to)
{
	uint64_t mf = map_period(from), mt = map_period(to);
	uint64_t l = mf / gcd_u64(mf, mt);

	if (l > PROOF_BUDGET / mt)
		return rs_err_set(pf->err, RS_EPLAN,
		                  "cannot prove this doubling: the periods "
		                  "%" PRIu64 " and %" PRIu64 " have a common "
		                  "multiple above %llu; double the number of "
		                  "nodes or databases instead",
		                  mf, mt, PROOF_BUDGET);
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
prove_mixed(const struct proof *pf, const struct rs_map *from,
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

int
map_prove_doubling(const struct rs_map *from, const struct rs_map *to,
                   const int *replica_of, const char *const *shard_names,
                   struct rs_err *err)
{
	struct proof pf = {replica_of, shard_names, err};
	int from_periodic = map_period(from) != 0;
	int to_periodic = map_period(to) != 0;

	if (!from_periodic && !to_periodic)
		return prove_intervals(&pf, from, to);
	if (from_periodic && to_periodic)
		return prove_periodic(&pf, from, to);
	return prove_mixed(&pf, from, to);
}
