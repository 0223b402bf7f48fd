/*
 * The strategies: which steps a plan's strategy runs, in order, and what
 * the steps need to know of it.  The engine runs whatever strategy it is
 * handed; only this file maps a plan's `strategy` to one.
 */
#ifndef RS_STRATEGY_H
#define RS_STRATEGY_H

#include "engine/engine.h"

/* Doubling: each source's replica is promoted and owns half its rows. */
extern const struct rs_strategy_def strategy_doubling;

/* Split: the rows that move are copied onto new shards, changes
 * captured and replayed, then a fenced cutover. */
extern const struct rs_strategy_def strategy_split;

/* The strategy PLAN asks for, or NULL when this version cannot run
 * it. */
const struct rs_strategy_def *strategy_for(const struct rs_plan *plan);

#endif
