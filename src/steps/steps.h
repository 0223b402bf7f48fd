/*
 * The steps of DESIGN §6, one file each.  A step is a struct rs_step_def
 * (engine.h) whose run function reads top to bottom, waiting for each
 * backend operation with the await_… wrappers, and converges when run
 * again after a crash.  Strategies (src/strategy/) only list them.
 */
#ifndef RS_STEPS_H
#define RS_STEPS_H

#include "engine/await.h"
#include "engine/engine.h"
#include "engine/walk.h"

extern const struct rs_step_def step_preflight;
extern const struct rs_step_def step_fence;
extern const struct rs_step_def step_catch_up;
extern const struct rs_step_def step_promote;
extern const struct rs_step_def step_pre_verify;
extern const struct rs_step_def step_verify;
extern const struct rs_step_def step_publish;
extern const struct rs_step_def step_unfence;
extern const struct rs_step_def step_purge;
extern const struct rs_step_def step_final_check;
/* The verify command's pass (engine_run_one): verify's comparison, read
 * only, through every chunk, each difference recorded (pass
 * "verify-on-demand"); done even when it finds differences, which the
 * caller reads from the journal. */
extern const struct rs_step_def step_verify_on_demand;
#define STEPS_VERIFY_PASS "verify-on-demand"
/* The split's own (capture.c, copy.c, changes.c). */
extern const struct rs_step_def step_capture;
extern const struct rs_step_def step_copy;
extern const struct rs_step_def step_replay;       /* "catch-up" */
extern const struct rs_step_def step_final_replay; /* "final-catch-up" */

/* Shared by the steps (steps.c). */

/* The shards of MAP (each once), into OUT (RS_PLAN_MAX_SHARDS long: no
 * plan has more); returns how many. */
int steps_map_shards(const struct rs_map *map, int *out);

/* Whether SHARD is a node of MAP. */
int steps_in_map(const struct rs_map *map, int shard);

/* Call FN for every shard of MAP, all at once (streams.h: each a stream
 * of its own on the run's control connections, so FN may touch only SHARD
 * and that shard's replica).  Returns 0, the first error (the others are
 * printed) or RS_ECANCELED on a stop request. */
int steps_each_shard(struct rs_run *run, const struct rs_map *map,
                     int (*fn)(struct rs_run *run, int shard, void *arg,
                               struct rs_err *err),
                     void *arg, struct rs_err *err);

/* steps_each_shard over the shards of MAP the run changes
 * (engine_touches) when TOUCHED_ONLY, else over all of them. */
int steps_each_shard_of(struct rs_run *run, const struct rs_map *map,
                        int touched_only,
                        int (*fn)(struct rs_run *run, int shard, void *arg,
                                  struct rs_err *err),
                        void *arg, struct rs_err *err);

/* Call FN for every physical table of every logical table on SHARD under
 * MAP; stops at the first non-zero return and returns it. */
int steps_each_table(struct rs_run *run, const struct rs_map *map, int shard,
                     int (*fn)(struct rs_run *run, int shard, int table,
                               int slot, const char *physical, void *arg,
                               struct rs_err *err),
                     void *arg, struct rs_err *err);

/* Set or remove the fence on every source table of SHARD (and say so), in
 * one transaction with MARKER (may be NULL) as the shard's marker.  A
 * lock wait past the engine's lock timeout (a long transaction on a
 * table) is tried STEPS_FENCE_TRIES times in all, 0.5 s, 1 s … apart,
 * unless a stop is requested; then the step fails with nothing fenced. */
#define STEPS_FENCE_TRIES 5

/* Put the ownership guard (backend_guard_sql) on every source table of
 * SHARD (ON), or take it off, where the engine has one and the server can
 * compute the plan's points; elsewhere nothing is done.  Idempotent. */
int steps_guard_shard(struct rs_run *run, int shard, int on,
                      struct rs_err *err);
int steps_fence_shard(struct rs_run *run, int shard, int on,
                      const struct rs_marker *marker, struct rs_err *err);

/* After attempt ATTEMPT of WHAT (trigger DDL: "the fence", "change
 * capture") on SHARD failed with ERR: whether to try again.  Yes for a
 * lock wait past the engine's lock timeout (ERR retryable) while fewer
 * than STEPS_FENCE_TRIES attempts were made and no stop is requested;
 * then it is said (terminal and journal) and waited for, 0.5 s times
 * ATTEMPT. */
int steps_lock_retry(struct rs_run *run, int shard, const char *what,
                     int attempt, const struct rs_err *err);

/* A set of primary keys (rows of a struct rs_rowbuf), to find a row of one
 * shard among the rows of another by key. */
struct steps_keyset {
	const struct rs_rowbuf *rows; /* borrowed */
	int n_pk;
	int *slots; /* row index + 1, 0 when empty; cap is a power of two */
	size_t cap;
};

/* Index ROWS (whose first N_PK values are the key).  Returns 0 or
 * RS_ENOMEM. */
int steps_keyset_init(struct steps_keyset *set, const struct rs_rowbuf *rows,
                      int n_pk);
void steps_keyset_free(struct steps_keyset *set);
/* The index in ROWS of the row whose key is KEY, or -1. */
int steps_keyset_find(const struct steps_keyset *set,
                      const struct rs_value *key);

/* A chunked walk over every physical table of every shard of a map. */
struct steps_walk_spec {
	const char *step;         /* journal step name and progress label */
	const struct rs_map *map; /* whose shards and tables are walked */
	rs_chunk_fn chunk;        /* the step's work on one chunk */
	int all_columns;          /* read every column (else pk + key) */
	int restart;              /* forget earlier chunks, start over */
	int no_effect;            /* CHUNK only reads and compares */
	int intent_async;         /* CHUNK settles before its first write
	                             (walk.h) */
	int fill_affected;        /* size chunks by rows affected (walk.h) */
	int touched_only;         /* skip shards the run leaves alone
	                             (engine_touches) */
	int open_end;             /* the last chunk runs to the table's end
	                             (walk.h) */
	int copies; /* rows expected: this many times the count before the
	               run (for progress) */
	void *arg;  /* handed to CHUNK as walk->arg */
};

/* Walk every table of every shard of SPEC->map with SPEC->chunk, drawing
 * progress: a resumed walk counts the rows of the chunks done before it,
 * a SPEC->restart one forgets those chunks first.  Returns 0 or the first
 * error. */
int steps_walk_all(struct rs_run *run, const struct steps_walk_spec *spec,
                   struct rs_err *err);

/* The owners under MAP of the rows of a chunk (by their shard key, hashed
 * together: walk_owners): *OWNERS is malloc'd (free it).  Returns 0 or
 * RS_EKEY / RS_ENOMEM. */
int steps_owners_under(struct rs_walk *walk, const struct rs_map *map,
                       const struct rs_rowbuf *rows, struct rs_owner **owners,
                       struct rs_err *err);

/* steps_owners_under `to`. */
int steps_owners(struct rs_walk *walk, const struct rs_rowbuf *rows,
                 struct rs_owner **owners, struct rs_err *err);

/* Call FN once for each distinct owner in OWNERS that is not where the
 * walk reads (the rows' new owners), with CTX.  Stops at the first error. */
int steps_each_new_owner(struct rs_walk *walk, const struct rs_rowbuf *rows,
                         const struct rs_owner *owners,
                         int (*fn)(struct rs_walk *walk,
                                   const struct rs_rowbuf *rows,
                                   const struct rs_owner *owners,
                                   struct rs_owner owner, void *ctx,
                                   struct rs_err *err),
                         void *ctx, struct rs_err *err);

/* Change capture on (or off) on every source table of SHARD (capture.c;
 * off also where a table is missing).  Returns 0 or the first error. */
int steps_capture_shard(struct rs_run *run, int shard, int on,
                        struct rs_err *err);

/* Change capture off on REPLICA, a promoted replica of SHARD that got
 * SHARD's capture by replication: SHARD's source tables, there. */
int steps_capture_off_replica(struct rs_run *run, int shard, int replica,
                              struct rs_err *err);

/* Change capture on (or off) on the tables of target SHARD under `to`
 * (a split's copies, for pre-verify). */
int steps_capture_target(struct rs_run *run, int shard, int on,
                         struct rs_err *err);

/* changes.c: a split's catch-up, as the step does it, from inside another
 * step: every source table's change log replayed onto the new owners
 * until a batch comes back short.  Returns 0 or the first error. */
int steps_replay_sources(struct rs_run *run, struct rs_err *err);

/* changes.c: replay the change log of every source table of SHARD onto
 * REPLICA, a copy of SHARD that reshard made (a SQLite doubling): every
 * logged key is upserted there as SHARD has it now, or deleted there
 * when SHARD no longer has it; the log is trimmed as it is applied.
 * Stops at a batch shorter than batch_rows (under the fence: the log is
 * empty).  Returns 0 or the first error. */
int steps_replay_mirror(struct rs_run *run, int shard, int replica,
                        struct rs_err *err);

/* replica.c: for pre-verify, make SHARD's replica when reshard makes it
 * (SQLite), with SHARD's change capture already on: a consistent copy of
 * the file (fence not up), marked as the run's, then brought up to date
 * from the change log (steps_replay_mirror).  A replica made by an
 * earlier attempt of the step is not copied again.  Nothing for a server
 * replica.  Returns 0 or the first error. */
int steps_replica_seed(struct rs_run *run, int shard, struct rs_err *err);

/* replica.c: abort's removal of the replica files reshard made and that
 * carry the run's marker (a SQLite doubling); server replicas are left to
 * catch-up's undo.  Idempotent. */
int steps_replica_remove_made(struct rs_run *run, struct rs_err *err);

/* replica.c: *PROMOTED 1 when the replica REPLICA exists and is a
 * primary of its own now, else 0.  Returns 0 or the error of asking. */
int steps_replica_promoted(struct rs_run *run, int replica, int *promoted,
                           struct rs_err *err);

/* publish.c: OP (RS_DELETE_LOG_ON, _OFF, _EMPTY) on the delete logs of
 * the tables under `to`, on every shard of `to` the run touches; a
 * doubling's replica gets ON and OFF from its primary (by replication, or
 * in the file reshard copies), unless promoted.  pre-verify starts them
 * before the fence, publish empties the new owners' (or starts them all,
 * when pre-verify did not), final-check removes them, abort too.
 * Idempotent. */
int steps_delete_logs(struct rs_run *run, int op, struct rs_err *err);

/* pre_verify.c: take off the change capture pre-verify put up (a
 * doubling's sources and promoted replicas, a split's targets), for
 * purge and abort.  Nothing when there was no pre-verify.  Idempotent. */
int steps_pre_verify_off(struct rs_run *run, struct rs_err *err);

/* verify.c: verify's comparison of every source table with the new
 * owners as a pass named PASS (its journal step): with KEEP_GOING every
 * difference is recorded and the walk goes on (returning 0), else the
 * first chunk that differs stops it (RS_EVERIFY). */
int steps_verify_pass(struct rs_run *run, const char *pass, int keep_going,
                      struct rs_err *err);

/* verify.c: before the fence, a split: compare again the keys its
 * targets logged since pre-verify compared them (what the replay wrote)
 * and those pre-verify found different, record what still differs as
 * pre-verify's, and trim the compared entries from the targets' logs, so
 * that the recheck under the fence has only what changes from now on.
 * *RECHECKED: the keys compared, -1 when the maps' pairs of owners cannot
 * be listed (nothing done).  Returns 0 or the first error. */
int steps_verify_settle(struct rs_run *run, int64_t *rechecked,
                        struct rs_err *err);

/* Whether SHARD is a target of a copy: a node of `to` that is not one of
 * `from` (a split copies only onto such shards). */
int steps_is_target(const struct rs_plan *plan, int shard);

/* Whether PHYSICAL on SHARD is a source table: a table of `from` on one of
 * its shards.  No row moves onto one (a doubling moves rows onto the
 * replicas; a split's preflight refuses plans that would copy onto a
 * source), so purge reads a source table's delete log only for rows the
 * source owned throughout (a doubling's replica removing its copies of
 * the rows its primary keeps), where any delete the log holds is the
 * owner's own.  publish leaves it running: it holds every delete since
 * pre-verify, which final-check counts. */
int steps_is_source_table(const struct rs_plan *plan, int shard,
                          const char *physical);

/* Call FN with the owners under `from` and `to` of every key an override
 * of either map pins (a key that does not hash is skipped: no row can
 * have it), with the override and ARG; stops at, and returns, the first
 * value that is not 0. */
/* Call FN(FROM, TO, ARG) for every pair of owners a point has under
 * `from` and `to` (a pair may come more than once), then for every pinned
 * key's pair.  The pairs come from the pair map; for two periodic maps
 * whose common period it cannot describe, from every point below that
 * period (up to 2^24: a logical map of shift 10 and bits 13 has 2^23, a
 * few tenths of a second).  Returns 0, or RS_EUSAGE when the pairs cannot
 * be listed (FN may have been called for some), or RS_ENOMEM. */
int steps_each_owner_pair(const struct rs_plan *plan,
                          void (*fn)(struct rs_owner from, struct rs_owner to,
                                     void *arg),
                          void *arg, struct rs_err *err);

int steps_each_pin(const struct rs_plan *plan,
                   int (*fn)(struct rs_owner from, struct rs_owner to,
                             const struct rs_map_override *o, void *arg),
                   void *arg);

/* Call FN for every physical table of every shard of MAP, as up to
 * options.parallel streams with connections of their own (streams.h).
 * Returns 0 or the first error. */
int steps_each_table_stream(struct rs_run *run, const struct rs_map *map,
                            int (*fn)(struct rs_run *run, int shard, int table,
                                      int slot, const char *physical, void *arg,
                                      struct rs_err *err),
                            void *arg, struct rs_err *err);

/* The rows of table DEF on BACKEND whose primary keys are KEYS (N keys,
 * W values apart, the first n_pk of each used), every column (the key
 * columns canonical first, as backend_read_keys returns them), into OUT
 * (replacing what it held).  Returns 0 or the error of reading. */
int steps_read_keys(struct rs_run *run, struct rs_backend *backend,
                    const struct rs_table_def *def, const struct rs_value *keys,
                    int n, int w, struct rs_rowbuf *out, struct rs_err *err);

/* steps_read_keys of the keys of the rows of ROWS (a walk's chunk, key
 * columns first) that OWNERS[r] says OWNER owns and SEEN[r] is 0 for:
 * the rows a read of the owner's key range did not show, which an owner
 * of another collation may order into another range.  OUT is emptied
 * and nothing read when there are none.  Returns 0 or the error of
 * reading. */
int steps_read_unseen(struct rs_run *run, struct rs_backend *backend,
                      const struct rs_table_def *def,
                      const struct rs_rowbuf *rows,
                      const struct rs_owner *owners, struct rs_owner owner,
                      const char *seen, struct rs_rowbuf *out,
                      struct rs_err *err);

/* The index of column NAME in DEF, or -1. */
int steps_column(const struct rs_table_def *def, const char *name);

/* Before a write to SHARD's BACKEND: while the replicas streaming from
 * the shard (its own, not the plan's) replay more than
 * max_replica_lag_seconds behind, wait, so that a copy or a purge never
 * floods them further; say so once, naming WHAT waits.  A stop request
 * ends the wait with RS_ECANCELED, the write not to be made.  A lag found
 * within the bound stands for half a second (no query before every
 * batch).  Nothing where the engine cannot tell (RS_CAP_DOWNSTREAM_LAG).
 * Returns 0, RS_ECANCELED or the error of asking. */
int steps_wait_downstream(struct rs_run *run, struct rs_backend *backend,
                          int shard, const char *what, struct rs_err *err);

/* create.c: target tables reshard makes (options.create_tables); see
 * there for which step calls which.  Each returns 0 or the error. */

/* Preflight: whether PHYSICAL, missing on target SHARD, can be made there
 * from logical TABLE's definition on the first source (RS_EUSAGE across
 * engines, RS_ESCHEMA for a definition that cannot be made again); says
 * what will be made (SLOT: its table index in `to`). */
int steps_create_check(struct rs_run *run, int shard, int table, int slot,
                       const char *physical, struct rs_err *err);
/* Capture: make the missing tables of target SHARD. */
int steps_create_tables(struct rs_run *run, int shard, struct rs_err *err);
/* Whether every row that moves to table index TABLE (of `to`) of SHARD
 * comes from one table of one source, by the maps and their pinned keys
 * (0 when the maps' pairs of owners cannot be listed), asked once a run
 * (RUN->sole_source, movers.c): listing the pairs can take a tenth of a
 * second.  Only then is a clash on a unique index of that table sure to
 * be a stale copy (movers_make_room). */
int steps_sole_source(struct rs_run *run, int shard, int table);

/* Copy, once done: the secondary indexes of every table made but the
 * unique ones. */
int steps_create_indexes(struct rs_run *run, struct rs_err *err);
/* Catch-up, once the log is replayed: the unique indexes of the tables
 * made (those made already are skipped). */
int steps_create_uniques(struct rs_run *run, struct rs_err *err);
/* Abort: drop the tables the run made on SHARD, those left empty. */
int steps_create_undo(struct rs_run *run, int shard, struct rs_err *err);

/* movers.c: sending rows to their new owner, across engines. */

/* Whether the table TO_DEF on shard TO_SHARD can receive the rows of
 * FROM_DEF on FROM_SHARD: the same column names, each of the same
 * canonical kind, and the same primary key.  Every difference is
 * printed; then RS_ESCHEMA saying how many, else 0. */
int movers_layout_check(struct rs_run *run, int from_shard,
                        const struct rs_table_def *from_def, int to_shard,
                        const struct rs_table_def *to_def, struct rs_err *err);

/* How the columns of one table map onto another's: for each column of
 * OF, the index of IN's column of the same name into MAP[c] (of's
 * n_columns entries), -1 where IN has none.  Columns go by name, not
 * position: a target may hold the source's columns in another order
 * (movers_layout_check lets it).  The copy puts a source row in the
 * owner's order with it (OF the owner's table), verify reads an owner's
 * row in the source's (OF the source's).  Returns how many columns of OF
 * IN lacks. */
int movers_columns(const struct rs_table_def *of, const struct rs_table_def *in,
                   int *map);

/* Upsert the rows ROWS[IDX[0]] … ROWS[IDX[N-1]], read on SRC from table
 * SRC_DEF (the key columns, then every column, as walks and
 * backend_read_keys return them), into table PHYSICAL on shard SHARD,
 * each value made canonical and put in that table's column order (any
 * engine writes any other's rows).  FRESH: the copy's rows, which the
 * target most likely lacks: loaded with the engine's bulk path
 * (backend_load), upserted only where a key turns out to be there
 * already (a chunk repeated after a crash).  Waits first for the shard's
 * own replicas (steps_wait_downstream) and afterwards for
 * max_rows_per_second.  With BEHIND (a walk, FRESH rows), the write
 * settles the walk's earlier one first (walk_settle) once the rows are
 * converted, and is left in flight behind the walk (walk_defer): the
 * next chunk is prepared while the engine takes it.  TABLE is the owner's
 * table index under `to`, or -1 for a replica the run made (its rows come
 * from its primary alone): before writing, the rows that clash with them
 * on a unique index are deleted where they can only be stale copies
 * (movers.c, movers_make_room).  Returns 0 or the error (RS_EVALUE naming
 * the value that has no canonical form). */
int movers_send(struct rs_run *run, struct rs_backend *src,
                const struct rs_table_def *src_def,
                const struct rs_rowbuf *rows, const int *idx, int n, int shard,
                int table, const char *physical, int fresh,
                struct rs_walk *behind, struct rs_err *err);

/* Delete from table PHYSICAL on shard SHARD the rows whose primary keys
 * are the n_pk values from column AT of ROWS[IDX[0]] … ROWS[IDX[N-1]]
 * (canonical) and, when KEY (the shard key column's name) is not one of
 * them, whose shard key is the value after those: a row that came back
 * with another shard key stays.  Keys not there are ignored.  Returns 0
 * or the error. */
int movers_delete(struct rs_run *run, const struct rs_rowbuf *rows, int at,
                  const int *idx, int n, int shard, const char *physical,
                  const char *key, struct rs_err *err);

#endif
