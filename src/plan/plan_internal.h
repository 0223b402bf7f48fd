/*
 * Shared between plan.c (reading settings) and plan_check.c (rules that
 * span several settings).  Not for use outside src/plan/.
 */
#ifndef RS_PLAN_INTERNAL_H
#define RS_PLAN_INTERNAL_H

#include <libconfig.h>

#include "plan/plan.h"

/* How far a map (`from` or `to`) was read, which decides the checks that
 * may look at it. */
enum plan_map_state {
	PLAN_MAP_UNREAD, /* absent, of no known kind, or a node not a name:
	                    which shards it means is not known */
	PLAN_MAP_READ, /* every node read (some may not be shards, reported) */
	PLAN_MAP_OK,   /* read without a mistake: it can be compiled */
};

struct plan_loader {
	struct rs_plan *plan;
	struct rs_plan_diags *diags;
	int nomem; /* an allocation failed: report RS_ENOMEM */
	/* NULL, or the file being read other than the plan (an overrides
	 * file): plan_diag's lines are then that file's */
	const char *diag_file;
	int overrides_full; /* the map read has RS_PLAN_MAX_OVERRIDES */
	int from_line;      /* where `from` and `to` are, for map messages */
	int to_line;
	int strategy_line;
	int journal_line; /* 1 when the setting is absent (the default) */
	int publish_line;
	int hash_line;
	int hash_ok;   /* the hash is known (or absent: the default) */
	int shards_ok; /* the shards and their replicas read without mistake */
	int strategy_ok; /* the strategy is known */
	enum plan_map_state from_state, to_state;
};

/* Record one mistake at LINE.  Never fails: on no memory it sets nomem. */
void plan_diag(struct plan_loader *ld, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The nodes of `to` that double `from` into BUF, quoted and separated by
 * ", ": from's nodes, then the replica of each in the same order.  Returns
 * how many, or -1 when a node of from is not a shard or has no replica
 * outside from, or the list does not fit. */
int plan_doubled_nodes(const struct rs_plan *plan, char *buf, size_t size);

/* Rules across settings, run once every setting has been read, mistakes
 * or not: each runs when the settings it looks at were read well enough
 * (see enum plan_map_state), so that one run reports every mistake.  It
 * checks that every shard is used, compiles the maps and proves the
 * doubling rule. */
void plan_check(struct plan_loader *ld);

#endif
