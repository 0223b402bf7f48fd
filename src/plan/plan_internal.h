/*
 * Shared between plan.c (reading settings) and plan_check.c (rules that
 * span several settings).  Not for use outside src/plan/.
 */
#ifndef RS_PLAN_INTERNAL_H
#define RS_PLAN_INTERNAL_H

#include <libconfig.h>

#include "plan/plan.h"

struct plan_loader {
	struct rs_plan *plan;
	struct rs_plan_diags *diags;
	int nomem;     /* an allocation failed: report RS_ENOMEM */
	int from_line; /* where `from` and `to` are, for map messages */
	int to_line;
	int strategy_line;
	int hash_line;
};

/* Record one mistake at LINE.  Never fails: on no memory it sets nomem. */
void plan_diag(struct plan_loader *ld, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Rules across settings, run once every setting has been read without
 * error: compiles the maps and proves the doubling rule. */
void plan_check(struct plan_loader *ld);

#endif
