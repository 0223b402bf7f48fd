/*
 * The plan as the journal pins it: one "setting = value" line per setting
 * that decides what a run does, with every URL's password masked.  Its
 * SHA-256 is the plan's fingerprint (DESIGN §7 rule 5).  Options (batch
 * size, parallelism, throttle, timeouts) are left out on purpose: changing
 * how fast a run goes must not stop it from resuming.
 */
#ifndef RS_PLAN_TEXT_H
#define RS_PLAN_TEXT_H

#include "journal/journal.h"
#include "plan/plan.h"

/* A malloc'd string (free it), or NULL when out of memory. */
char *engine_plan_text(const struct rs_plan *plan);

/* The fingerprint of TEXT: its SHA-256 in hex, into HEX. */
void engine_plan_fingerprint(const char *text, char hex[65]);

/* Open PLAN's journal for COMMAND ("run", "abort", "verify"): pins or
 * checks its fingerprint and takes the run lock (journal_open_as). */
int engine_open_journal(const struct rs_plan *plan, const char *command,
                        struct rs_journal **journal, struct rs_err *err);

#endif
