/*
 * The split strategy: the rows that move are copied to shards new in `to`
 * while the application writes (change capture and replay keep the copy
 * current), then, once verified before the fence (pre-verify), a short fenced
 * cutover replays the last changes, compares again what they touched,
 * publishes, and each source purges what it gave away.  Any
 * engine to any other.
 */
#include "steps/steps.h"
#include "strategy/strategy.h"

static const struct rs_step_def *const split_steps[] = {
	&step_preflight,  &step_capture, &step_copy,         &step_replay,
	&step_pre_verify, &step_fence,   &step_final_replay, &step_verify,
	&step_publish,    &step_unfence, &step_purge,        &step_final_check,
};

const struct rs_strategy_def strategy_split = {
	.name = "split",
	.steps = split_steps,
	.n_steps = sizeof(split_steps) / sizeof(*split_steps),
	.copies_movers = 1,
	.copies_after = &step_copy,
	.copies_before_purge = 1,
};
