/*
 * `reshard explain PLAN` (strategy/explain.c): what `reshard run PLAN` would
 * do, told before it is done, without writing anything anywhere.
 *
 * It reads the shards of `from` and `to` (and a doubling's replicas),
 * every shard key of the source tables as a live dry-run does (so its row
 * counts and movers are exact), times one chunk read of every source table
 * and one round trip to every shard, and asks a server replica how far
 * behind it is.  Then it prints each step of the strategy: what it does,
 * on which shards and tables, the rows it handles, whether writes are
 * fenced during it, whether it can be undone, and its expected duration by
 * the model of docs/explain.md; the fence each source gets; and the sum of
 * the fenced steps.  With a journal (a run begun earlier) it says which
 * steps are done and estimates only the others.
 *
 * It lives beside the strategies because it speaks of their steps by
 * name (what each one does and costs); the engine runs steps without
 * knowing them.
 *
 * What it never does: create or change the journal (an existing one is
 * opened read-only), open a SQLite shard reshard has yet to make (a
 * doubling's replica file: "made by the run"), or send a shard a statement
 * that writes.
 */
#ifndef RS_STRATEGY_EXPLAIN_H
#define RS_STRATEGY_EXPLAIN_H

#include <stdio.h>

#include "common/err.h"
#include "engine/engine.h"
#include "plan/plan.h"

/*
 * Explain PLAN's run of STRATEGY (strategy_for(PLAN); NULL is refused with
 * RS_EUSAGE) to OUT, as text or (JSON) as one JSON object whose keys
 * docs/explain.md lists.  Progress of the key read goes to stderr.
 * Returns 0; RS_ECONNECT naming a shard that cannot be reached; RS_ESCHEMA
 * for a source table that is missing or has no primary key; RS_EKEY for a
 * shard key the plan's hash cannot take; RS_EIO when the journal cannot be
 * read or OUT written; RS_ENOMEM.  Nothing is left open on failure.
 */
int strategy_explain(const struct rs_plan *plan,
                     const struct rs_strategy_def *strategy, int json,
                     FILE *out, struct rs_err *err);

#endif
