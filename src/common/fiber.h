/*
 * Fibers: functions that run on their own stack and can pause in the
 * middle, so that several of them make progress on one thread.
 *
 * The engine uses them to run many streams (one per shard, or one per
 * table being walked) on the one libuv loop while each step still reads
 * top to bottom: a fiber that waits for a backend operation yields back to
 * the scheduler that resumed it (engine/streams.c), which runs the loop and
 * resumes whichever fiber's operation has finished.  Nothing here knows
 * about libuv: a fiber waits for an int to reach a value, set by whatever
 * callback it is waiting for.
 *
 * Contract:
 * - fiber_new makes a fiber that has not started; the first fiber_resume
 *   calls FN(ARG) on the fiber's stack.  Only the main context (the thread's
 *   own stack) resumes fibers; a fiber never resumes another.
 * - Inside a fiber, fiber_wait(FLAG, VALUE) returns at once when *FLAG is
 *   VALUE or more, else pauses the fiber until a resume finds *FLAG >=
 *   VALUE (flags only grow: a done flag 0 → 1, a generation counter)
 *   (fiber_ready says whether it would).  fiber_yield pauses it once.
 * - When FN returns, the fiber is done (fiber_done); fiber_free releases
 *   it, which the resumer does; freeing a fiber that is not done is a bug
 *   (its stack may hold live objects).
 * - Stacks are FIBER_STACK_SIZE bytes of address space with a guard page
 *   below (an overflow faults instead of corrupting memory); only the pages
 *   a fiber touches take memory.
 * - Under AddressSanitizer every switch is announced to it
 *   (__sanitizer_start/finish_switch_fiber), so that it tracks the right
 *   stack and reports no false stack overflows.
 *
 * Errors: fiber_new returns RS_ENOMEM when the stack cannot be mapped.
 * Nothing else fails.
 */
#ifndef RS_FIBER_H
#define RS_FIBER_H

#include <stddef.h>

/* 1 MiB: steps keep error messages (1 KiB each) and name buffers on the
 * stack, and the sanitizers' redzones make frames several times larger. */
#define FIBER_STACK_SIZE ((size_t)1024 * 1024)

struct fiber;

/* Make a fiber that will run FN(ARG) when first resumed; *OUT is it.
 * DATA is the caller's, for fiber_data.  Returns 0 or RS_ENOMEM. */
int fiber_new(void (*fn)(void *arg), void *arg, void *data, struct fiber **out);

/* From the main context: run FIBER until it waits, yields or ends. */
void fiber_resume(struct fiber *fiber);

/* Whether FIBER may run: not done, and what it waits for (if anything)
 * has happened. */
int fiber_ready(const struct fiber *fiber);

/* Whether FIBER's function has returned. */
int fiber_done(const struct fiber *fiber);

/* Release a fiber that is done (or never started).  NULL is ignored. */
void fiber_free(struct fiber *fiber);

/* The running fiber, or NULL in the main context. */
struct fiber *fiber_current(void);

/* The DATA FIBER was made with. */
void *fiber_data(const struct fiber *fiber);

/* Inside a fiber: pause until *FLAG >= VALUE (see above). */
void fiber_wait(const int *flag, int value);

/* Inside a fiber: pause once, letting the others run. */
void fiber_yield(void);

#endif
