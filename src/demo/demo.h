/*
 * `reshard demo [DIR]`: a real doubling migration on SQLite shards made on
 * the spot, to see what reshard does without any server.
 */
#ifndef RS_DEMO_H
#define RS_DEMO_H

#include "common/err.h"

/* Make two SQLite shards with orders in DIR (created if needed; it must
 * not hold an earlier demo's files), write a doubling plan beside them,
 * print the dry-run summary, run the plan to the end, print its status.
 * Returns 0 or the first failure. */
int demo_run(const char *dir, int rows, struct rs_err *err);

#endif
