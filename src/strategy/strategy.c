/*
 * Choosing the strategy a plan asks for (strategy.h).
 */
#include "strategy/strategy.h"

const struct rs_strategy_def *
strategy_for(const struct rs_plan *plan)
{
	switch (plan->strategy) {
	case RS_STRATEGY_DOUBLING:
		return &strategy_doubling;
	case RS_STRATEGY_SPLIT:
		return &strategy_split;
	}
	return NULL;
}
