/*
 * Walking a physical table in primary-key chunks, with journal checkpoints.
 *
 * walk_table reads TABLE on one shard in chunks of options.batch_rows rows,
 * in key order (with fill_affected, chunks of up to WALK_GROWTH_MAX times
 * that, sized from the chunk before so that each affects about batch_rows
 * rows).  For each chunk it records the intent in the journal
 * (chunk STARTED, with its key range), durable before the step's chunk
 * function is called (or, with intent_async, before its first write),
 * calls that function (which does the side effect: compare, delete …),
 * then records the result (chunk DONE, rows, checksum, rows affected).  Run
 * again after a crash, it resumes after the last chunk the journal records as
 * done for (step, shard, table): finished chunks are never repeated, a chunk
 * that was cut short is done again (chunk functions are idempotent).
 *
 * Write-behind: a chunk function may leave its chunk's last write in
 * flight (walk_defer) and return; the walk then goes on to the next chunk,
 * whose function reads nothing new but works on rows already read ahead
 * (hashing, converting) while the engine takes that write, and settles it
 * (walk_settle) before it writes anything itself.  Settling waits for the
 * write, then records the earlier chunk DONE: chunks still end in order,
 * and a chunk is never DONE before its write is.  A chunk function that
 * writes on a connection no write in flight uses may settle only what it
 * must (walk_settle_for): then two writes are in flight at most
 * (WALK_IN_FLIGHT), on two connections, the older settled first; a copy
 * alternates its loads between two connections to the target so, and the
 * target always has a load to work on (movers_send).  After a crash, the
 * chunks after the last DONE one are done again, whichever of their writes
 * went in.  The walk settles what is left before it returns, on every
 * path.
 *
 * Intent while working (intent_async, for a chunk function that settles
 * before its first write, as the copy's does): the fsync that makes the
 * chunk's STARTED durable runs on a worker thread while the function
 * hashes and converts, and walk_settle waits for it before anything is
 * written.  The journal is still on disk before the side effect; the
 * process only stops waiting for the disk while it has other work.
 */
#ifndef RS_WALK_H
#define RS_WALK_H

#include "engine/await.h"
#include "engine/engine.h"

/* How many times options.batch_rows a chunk of a fill_affected walk reads
 * at most: the keys of 8 batches (a few MB) for a step that changes one
 * row in 8 or fewer. */
#define WALK_GROWTH_MAX 8

struct rs_walk {
	struct rs_run *run;
	const char *step; /* journal step name */
	int shard;        /* the shard walked */
	int table;        /* logical table (plan->tables index) */
	int slot;         /* table index on the shard (slot maps) */
	char physical[RS_PLAN_MAX_NAME + 1]; /* the physical table name */
	struct rs_backend *backend;     /* the shard's control connection */
	const struct rs_table_def *def; /* engine_table's, set by walk_table */
	int key_column;                 /* index of the shard key in def */
	int all_columns;                /* read every column (else pk + key) */
	int restart;                    /* ignore earlier chunks: walk it all */
	int no_effect;      /* the chunk function only reads (journal.h) */
	int intent_async;   /* the chunk function calls walk_settle before
	                       its first write: the intent's fsync runs
	                       while it works (above) */
	int intent_pending; /* that fsync is not waited for yet … */
	int intent_ticket;  /* … and its streams_sync_journal_begin ticket */
	int fill_affected;  /* grow chunks until about batch_rows rows of
	                       each are affected (WALK_GROWTH_MAX at most;
	                       purge, which deletes only the rows that
	                       moved) */
	int open_end;       /* the last chunk's range runs to the table's end
	                       (UPTO NULL), and a walk that ends on an empty
	                       read calls the chunk function once more with
	                       no rows for the range after its last key, not
	                       journaled: for a step that looks at the same
	                       range on another shard, where rows past the
	                       last key here may be (verify) */
	int key_at;         /* index of the shard key in a row read */
	int64_t number;     /* the journal number of the chunk being worked
	                       on (during the chunk function) */
	int64_t step_chunk; /* chunks of this table done in this process,
	                       0 in the first chunk function call */
	int64_t affected;   /* rows the chunk function reported affected in
	                       this process, over the chunks before */
	void *arg;          /* the step's own */
	struct walk_pending *pending; /* walk.c's: the writes left in flight,
	                                 oldest first */
};

/* A write a chunk function leaves in flight, on connection ON:
 * FINISH(CTX, ERR) waits for it (0 or an error: the chunk is then not
 * done), RELEASE(CTX) frees what it holds; each is called once. */
struct walk_tail {
	const struct rs_backend *on; /* the connection it writes on */
	int (*finish)(void *ctx, struct rs_err *err);
	void (*release)(void *ctx);
	void *ctx;
};

/* Work on one chunk: ROWS in key order (pk columns, then the key or every
 * column), the range (AFTER, UPTO] (AFTER NULL at the table's start).
 * Set *AFFECTED to the rows changed and *CHECKSUM to any checksum worth
 * keeping.  Returns 0 or an error (the walk stops; the chunk stays
 * STARTED in the journal). */
typedef int (*rs_chunk_fn)(struct rs_walk *walk, const struct rs_rowbuf *rows,
                           const struct rs_value *after,
                           const struct rs_value *upto, int64_t *affected,
                           uint64_t *checksum, struct rs_err *err);

/* Describe and walk WALK's table (see above).  *ROWS (may be NULL) gets
 * the rows the walk saw in this process.  Returns 0 or the first error. */
int walk_table(struct rs_walk *walk, rs_chunk_fn fn, int64_t *rows,
               struct rs_err *err);

/* At most this many writes in flight a walk (walk_settle_for). */
#define WALK_IN_FLIGHT 2

/* Leave TAIL in flight behind the chunk being worked on (from its chunk
 * function, after walk_settle or walk_settle_for TAIL's connection).  The
 * walk owns TAIL from here on.  Returns 0, or RS_ENOMEM (RS_EINTERNAL when
 * WALK_IN_FLIGHT are in flight already: a bug) with TAIL finished and
 * released. */
int walk_defer(struct rs_walk *walk, const struct walk_tail *tail,
               struct rs_err *err);

/* Wait for the chunk's intent to be durable (intent_async), then finish
 * the write left in flight, if any: wait for it, release it, and when it
 * was an earlier chunk's, record that chunk DONE.  Call it before any
 * write on the walk's connections.  Returns 0 or the write's (or the
 * journal's) error; the write in flight is waited for and released
 * either way. */
int walk_settle(struct rs_walk *walk, struct rs_err *err);

/* As walk_settle, but settle (oldest first) only until no write in flight
 * is on ON and fewer than WALK_IN_FLIGHT are: before a write on ON that
 * walk_defer then leaves in flight beside the other. */
int walk_settle_for(struct rs_walk *walk, const struct rs_backend *on,
                    struct rs_err *err);

/* The owner of a row under MAP from its shard key KEY.  A key is hashed
 * (and placed in a range) by its canonical text, whichever engine holds
 * the row: walk_owner takes KEY as the walk's engine wrote it in a row
 * read (a column after the primary key: engine text) and converts it when
 * the key column's kind has another canonical form (a PostgreSQL char(n)
 * without its padding, bytes as hex, …; integers and text are their own);
 * walk_owner_canonical takes KEY canonical already (a key column of a
 * read, a change log's key, the journal).  Return 0 or RS_EKEY (NULL key,
 * a value with no canonical form, a key the hash refuses) with ERR
 * naming the key. */
int walk_owner(const struct rs_walk *walk, const struct rs_map *map,
               const struct rs_value *key, struct rs_owner *owner,
               struct rs_err *err);
int walk_owner_canonical(const struct rs_walk *walk, const struct rs_map *map,
                         const struct rs_value *key, struct rs_owner *owner,
                         struct rs_err *err);

/* The shard key KEY as BACKEND wrote it in column COLUMN of DEF (-1: KEY
 * is canonical already), in canonical form: appended to BUF with *AT its
 * start when the column's kind has another form, else *AT = SIZE_MAX and
 * KEY is its own canonical text.  Returns 0, or RS_EKEY (a NULL key, a
 * value with no canonical form) or RS_ENOMEM with ERR filled. */
int walk_key_canonical(const struct rs_backend *backend,
                       const struct rs_table_def *def, int column,
                       const struct rs_value *key, struct rs_canon_buf *buf,
                       size_t *at, struct rs_err *err);

/* walk_owner for every row of ROWS (shard key at walk->key_at) into
 * OWNERS (room for ROWS->n_rows), a chunk at a time: with sha256_64 the
 * keys are hashed together (hash_sha256_64_batch, several keys a SHA
 * compression on CPUs that have the instructions).  Returns 0, or
 * walk_owner's error for the first row without an owner (OWNERS then
 * partly filled). */
int walk_owners(const struct rs_walk *walk, const struct rs_map *map,
                const struct rs_rowbuf *rows, struct rs_owner *owners,
                struct rs_err *err);

/* Read the rows of DEF on BACKEND in the key range (AFTER, UPTO], in key
 * order, a page of at most options.batch_rows rows at a time, and call
 * PAGE(ROWS, CTX, ERR) for each: the key columns, then every column unless
 * KEYS_ONLY.  ROWS is the walk's until PAGE returns.  So a range on
 * another shard that holds many more rows than the chunk never needs more
 * memory than one batch.  Returns 0, the first error of a read, or the
 * first non-zero return of PAGE. */
int walk_range_pages(struct rs_run *run, struct rs_backend *backend,
                     const struct rs_table_def *def,
                     const struct rs_value *after, const struct rs_value *upto,
                     int keys_only,
                     int (*page)(const struct rs_rowbuf *rows, void *ctx,
                                 struct rs_err *err),
                     void *ctx, struct rs_err *err);

/* The row hash of ROW (all columns of DEF, engine text form of BACKEND):
 * over the canonical form of each value, or, when NATIVE, over the
 * engine's own text as it is (no conversion: only comparable with another
 * native hash of the same engine and the same columns, see
 * walk_same_layout).  Returns 0 or RS_EVALUE. */
int walk_row_hash(const struct rs_backend *backend, int native,
                  const struct rs_table_def *def, const struct rs_value *row,
                  uint64_t *hash, struct rs_err *err);

/* Whether rows of table A on backend BA and of table B on backend BB can
 * be compared in the engine's own text: the same engine, and the same
 * columns (names and declared types) in the same order. */
int walk_same_layout(const struct rs_backend *ba, const struct rs_table_def *a,
                     const struct rs_backend *bb, const struct rs_table_def *b);

/* A primary key (N values) as a JSON array, as the journal keeps keys: a
 * string per value (a NUL byte in it as \u0000), or {"hex": "…"} for a
 * value whose bytes are not UTF-8 (a BLOB key).  malloc'd (free it), NULL
 * when out of memory. */
char *walk_key_json(const struct rs_value *values, int n);

/* One key value as the journal writes it: a JSON string when its bytes
 * are UTF-8 (what keys nearly always are), else {"hex": "…"}, so that any
 * bytes (a BLOB or VARBINARY key) come back the same; null for NULL.
 * The caller's reference (a jansson json_t *); NULL when out of memory. */
struct json_t *walk_value_json(const struct rs_value *v);

/* Back from walk_key_json: the N values (N <= 16) of TEXT into VALUES,
 * pointing into *BYTES (malloc'd: free it once VALUES are not needed).
 * Returns 0, RS_EIO for a text that is not such a key, RS_ENOMEM. */
int walk_key_from_json(const char *text, int n, struct rs_value *values,
                       char **bytes, struct rs_err *err);

/* A row read by WALK named for people, by shard key and primary key, into
 * BUF: "customer_id 'cust-7' (id 920)", control bytes escaped. */
void walk_describe_row(const struct rs_walk *walk, const struct rs_value *row,
                       char *buf, size_t size);

/* The same for a row of table DEF read elsewhere (key columns, then every
 * column), whose shard key KEY_NAME is its value KEY_AT. */
void walk_describe_row_of(const char *key_name, const struct rs_table_def *def,
                          int key_at, const struct rs_value *row, char *buf,
                          size_t size);

/* Whether two primary keys (N values each) are equal. */
int walk_same_key(const struct rs_value *a, const struct rs_value *b, int n);

#endif
