/*
 * The SQL text of the PostgreSQL engine (pg.c), apart from its driver:
 * the statements of read_batch, upsert, delete_keys, the snapshot scan and
 * describe, built from table definitions and values, with the quoting of
 * identifiers and the conversion of canonical values (backend/canonical.h)
 * into PostgreSQL input text.  Nothing here talks to a server or knows
 * libpq or libuv: a unit test builds every statement without one
 * (tests/test_pg_sql.c).
 *
 * Values never enter the SQL text (DESIGN §7 rule 6): a statement holds
 * quoted identifiers, $n placeholders, type names from the catalog and
 * numbers of our own, and the values travel as text parameters, untyped,
 * for the driver to hand to PQsendQueryParams.  The rows of an upsert and
 * the keys of a delete or a read by key travel as one JSON parameter,
 * whatever their number.
 *
 * Every builder is synchronous.  What it returns or fills is the caller's
 * to free, with the matching free function (or free for a string); on
 * failure nothing is left to free.  A builder returns 0, or RS_ENOMEM
 * with "out of memory" in ERR, or RS_EQUERY (SQLSTATE 22021, as the server
 * would say) for a value PostgreSQL cannot hold, with a message naming
 * the table, the row of the batch and the column but no shard: the driver
 * adds that.  ERR may be NULL.  Requests are taken as the driver checked
 * them (valid primary key and column indexes, N values a row).
 */
#ifndef RS_PG_SQL_H
#define RS_PG_SQL_H

#include <stddef.h>

#include "backend/backend.h"
#include "common/strbuf.h"
#include "shardmap/hash.h"

/* The cursor of the snapshot scan, and how the scan ends. */
#define PG_SQL_SCAN_END "CLOSE reshard_scan; COMMIT"

/*
 * The catalog query of describe, with the table name as its one text
 * parameter ($1): one row per column in attnum order, each with the
 * relation's kind (0), row estimate (1), then the column's name (2),
 * format_type() (3) and position in the primary key, NULL outside it (4).
 * A relation without columns has one row with NULLs from column 2 on; no
 * row: no such relation.
 */
extern const char pg_sql_describe[];

/* The catalog query of backend_table_sql ($1 the table, $2 the new
 * name; malloc'd, NULL on no memory), and the statements made from its
 * rows (backend_engine.h's table_sql_build). */
char *pg_sql_table_sql(void);
int pg_sql_table_sql_build(const struct rs_rows *rows, const char *table,
                           const char *as, struct rs_table_sql *out,
                           struct rs_err *err);

/* Append NAME as one quoted identifier: "…" with every '"' doubled, so
 * that any name, `a"b` or `t; drop table z`, stays one identifier. */
void pg_sql_ident(struct rs_strbuf *buf, const char *name);

/* Append to BUF (no NUL) what the input function of a column of KIND
 * reads for the canonical TEXT (LEN bytes): the text itself, but "\x" and
 * the hex for bytes and " BC" years for years before 1. */
void pg_sql_input(struct rs_strbuf *buf, enum rs_col_kind kind,
                  const char *text, size_t len);

/* Append TEXT (LEN bytes) to BUF as a JSON string: '"', '\' and control
 * characters escaped, everything else as it is. */
void pg_sql_json(struct rs_strbuf *buf, const char *text, size_t len);

/* A statement and its text parameters. */
struct pg_sql_query {
	char *sql;
	int n_params;
	const char **params; /* n_params of them, into TEXT, NULL for SQL
	                        NULL; NULL itself when n_params is 0 */
	char *text;          /* the parameters' bytes, each with a NUL */
};

/* Free what Q holds and empty it.  Does nothing on an empty Q. */
void pg_sql_query_free(struct pg_sql_query *q);

/*
 * The keyset read of REQUEST (backend_read_batch):
 *
 *   SELECT "k1", "k2", "c" FROM "t" WHERE ("k1", "k2") > ($1, $2)
 *   AND ("k1", "k2") <= ($3, $4) ORDER BY "k1", "k2" LIMIT n
 *
 * each bound only when given, its values the parameters.  Row comparisons
 * follow the primary key's index.  Into *Q; 0 or RS_ENOMEM.
 */
int pg_sql_read(const struct rs_read_request *request, struct pg_sql_query *q,
                struct rs_err *err);

/*
 * The upsert of ROWS (canonical values, every column of T in order, at
 * least one row), one statement whatever their number, into *SQL, with its
 * one parameter, the rows as JSON in PostgreSQL input text, into *JSON:
 *
 *   INSERT INTO "t" AS "target" ("c1", …) OVERRIDING SYSTEM VALUE
 *   SELECT "r"."c1", … FROM pg_catalog.json_to_recordset(
 *     $1::pg_catalog.json) AS "r" ("c1" TYPE1, …)
 *   ON CONFLICT ("k1", …) DO UPDATE SET "c" = EXCLUDED."c", …
 *
 * or DO NOTHING when every column is in the key.  json_to_recordset reads
 * each value with its column's input function and type modifier, as an
 * INSERT would (a value too long for a varchar(n) fails, it is not cut);
 * a json or jsonb column is read as text and cast, since the function
 * would keep a JSON string as one.  The server parses one JSON text
 * instead of a VALUES list of thousands of parameters: 5,000 rows of
 * four columns took 33 ms instead of 73 (parse, bind and execute).  The alias
 * keeps EXCLUDED unambiguous for a table named "excluded"; OVERRIDING SYSTEM
 * VALUE writes the given key into a GENERATED ALWAYS identity column.  0,
 * RS_ENOMEM, or RS_EQUERY for a value holding a NUL byte, which PostgreSQL
 * stores in no type's text (bytes travel as hex).
 */
int pg_sql_upsert(const struct rs_table_def *t, const struct rs_rows *rows,
                  char **sql, char **json, struct rs_err *err);

/*
 * The bulk load of ROWS (as pg_sql_upsert's) into T, for rows none of
 * which T holds yet (backend_load): the statement
 *
 *   COPY "t" ("c1", …) FROM STDIN
 *
 * into *SQL and the rows in COPY's text format into DATA (a tab between
 * fields, a newline after each row, NULL as \N, backslash, tab, newline
 * and carriage return escaped, each value PostgreSQL input text as for an
 * upsert).  COPY reads each value with its column's input function and
 * type modifier, like INSERT; a key that exists already fails it whole
 * (SQLSTATE 23505).  The server spends a third of the upsert's time on it
 * (5,000 rows of 100 bytes: 13 ms, against 35).  DATA is emptied first
 * and keeps the room it had (the caller frees it, strbuf_clear).  0,
 * RS_ENOMEM or RS_EQUERY (a NUL byte) with ERR filled, *SQL NULL and DATA
 * emptied.
 */
int pg_sql_load(const struct rs_table_def *t, const struct rs_rows *rows,
                char **sql, struct rs_strbuf *data, struct rs_err *err);

/*
 * The delete of KEYS (n_pk canonical values a row, in key order, at least
 * one row) from T, one statement whatever their number, into *SQL, with
 * its one parameter, the keys as JSON, into *JSON:
 *
 *   DELETE FROM "t" WHERE ("k1", …) IN (SELECT "k"."k1", …
 *     FROM pg_catalog.json_to_recordset($1::pg_catalog.json)
 *       AS "k" ("k1" TYPE1, …))
 *
 * with $1 = [{"k1": "input text", …}, …].  The key columns must have a
 * name and a type (the driver checks).  0, RS_ENOMEM, or RS_EQUERY for a
 * key holding a NUL byte.
 */
int pg_sql_delete(const struct rs_table_def *t, const struct rs_rows *keys,
                  char **sql, char **json, struct rs_err *err);

/* The read of REQUEST (backend_read_keys) with the same key condition:
 *
 *   SELECT "k1", …, "c", … FROM "t" WHERE ("k1", …) IN (SELECT … FROM
 *     pg_catalog.json_to_recordset($1::pg_catalog.json) AS "k" (…))
 *
 * into *SQL and its parameter into *JSON; as pg_sql_delete. */
int pg_sql_read_keys(const struct rs_keys_request *request, char **sql,
                     char **json, struct rs_err *err);

/* The start of the snapshot scan of COLUMNS (N_COLUMNS >= 1 indexes into
 * T's columns): a REPEATABLE READ READ ONLY transaction and the cursor
 * reshard_scan for the SELECT.  Returns the text, or NULL when out of
 * memory. */
char *pg_sql_scan_begin(const struct rs_table_def *t, const int *columns,
                        int n_columns);

/* The fetch of the scan's next LIMIT rows into BUF (64 bytes are
 * enough). */
void pg_sql_scan_fetch(char *buf, size_t size, int limit);

/* ---- fence, marker, delete log ----
 *
 * PostgreSQL trigger names belong to their table, so reshard's carry no
 * table name (and are never cut at 63 bytes): the fence is the
 * statement-level triggers reshard_fence (BEFORE INSERT OR UPDATE OR
 * DELETE) and reshard_fence_truncate (BEFORE TRUNCATE) on each table, both
 * calling the plpgsql function reshard_fence(MESSAGE), which raises
 * SQLSTATE PG_SQL_FENCE_SQLSTATE with MESSAGE as its message and nothing
 * else.  The triggers are ENABLE ALWAYS, so that a session with
 * session_replication_role = replica is fenced too.  The delete log of
 * table T is the table reshard_del_T (backend_delete_log_name) with T's
 * key columns, the function reshard_del_T() that inserts OLD's key there,
 * and the row-level triggers reshard_dellog (AFTER DELETE) and
 * reshard_dellog_u (AFTER UPDATE OF the key columns, when the key
 * changes) on T, both skipped while reshard.purging is 'on'
 * (backend_purge_keys sets it, SET LOCAL, in its own transaction).
 */

/* The SQLSTATE of a write the fence rejects ("RS" is no standard class). */
#define PG_SQL_FENCE_SQLSTATE "RS001"

/* The longest identifier PostgreSQL keeps (NAMEDATALEN - 1 bytes). */
#define PG_SQL_NAME_MAX 63

/* Appends TEXT to BUF as one SQL string literal, escaped for the
 * connection (pg.c: PQescapeLiteral), or returns -1 (out of memory, text
 * not valid in the connection's encoding) with the reason in WHY. */
struct pg_sql_literal {
	int (*fn)(void *ctx, struct rs_strbuf *buf, const char *text, char *why,
	          size_t why_size);
	void *ctx;
};

/* SELECT count(*) FROM "TABLE".  NULL when out of memory. */
char *pg_sql_count(const char *table);

/* Whether the server is a standby, and which of the tables of $1 (a JSON
 * array of names) exist: one row per name in order, (in recovery, ordinal,
 * exists); one row (in recovery, NULL, NULL) for an empty array. */
extern const char pg_sql_fence_inventory[];

/* CREATE OR REPLACE FUNCTION reshard_fence() … */
extern const char pg_sql_fence_function[];

/* DROP FUNCTION reshard_fence() when no trigger uses it any more, and
 * so the functions of a fence of rows (reshard_fence_rows(),
 * reshard_moves(text)). */
extern const char pg_sql_fence_function_drop[];

/* Append the two functions of a fence of the rows that move (see
 * backend_fence), as one simple-query text:
 *   reshard_moves(k text) RETURNS boolean: whether the key whose canonical
 *     text is K has a point (pg_sql_point of HASH) in MOVING; NULL when
 *     it has none;
 *   reshard_fence_rows(): the row trigger, with the message and the key
 *     column's name as arguments, that raises the fence's error when the
 *     key of OLD or NEW moves or has no point, and lets the row through
 *     otherwise.  The key's text comes from to_jsonb(row) ->> column,
 *     which for a text or integer column is its canonical text.
 * Returns 0, or RS_EUSAGE for a hash pg_sql_point cannot compute (nothing
 * appended). */
int pg_sql_fence_rows_functions(struct rs_strbuf *b, enum rs_hash hash,
                                const struct rs_moving *moving);

/* The statements that put the fence on TABLE (ON) or take it off, as one
 * simple-query text, MESSAGE a literal made by LITERAL.  With KEY (NULL:
 * every row), the fence of the rows that move: reshard_fence is a row
 * trigger calling reshard_fence_rows(MESSAGE, KEY), and
 * pg_sql_fence_rows_functions must come first.  Into *SQL; 0, RS_ENOMEM,
 * or RS_EQUERY when LITERAL refuses MESSAGE or KEY (ERR filled). */
int pg_sql_fence_table(const char *table, int on, const char *message,
                       const char *key, const struct pg_sql_literal *literal,
                       char **sql, struct rs_err *err);

/* The SQLSTATE of a write the ownership guard rejects. */
#define PG_SQL_GUARD_SQLSTATE "RS002"

/* The ownership guard (backend_guard_sql) on the N TABLES as one
 * simple-query text, one implicit transaction, into *SQL:
 *   reshard_owner(k text) RETURNS integer: i when the key whose canonical
 *     text is K has a point of GUARD->owned[i - 1], else 0 (also for a
 *     key with no point);
 *   reshard_guard_rows(): the row trigger, its arguments the key column
 *     and the messages, that raises SQLSTATE PG_SQL_GUARD_SQLSTATE with
 *     message i for a row (OLD's or NEW's key) whose owner is i, unless
 *     reshard.purging is 'on' (backend_purge_keys);
 *   per table: DROP TRIGGER IF EXISTS reshard_guard, CREATE TRIGGER
 *     reshard_guard BEFORE INSERT OR UPDATE OR DELETE … FOR EACH ROW,
 *     ENABLE ALWAYS.
 * With GUARD NULL, the triggers dropped and then both functions once no
 * trigger uses them.  0, RS_ENOMEM, RS_EUSAGE (a hash pg_sql_point cannot
 * compute), or RS_EQUERY when LITERAL refuses a name or a message. */
int pg_sql_guard(const char *const *tables, int n, const struct rs_guard *guard,
                 const struct pg_sql_literal *literal, char **sql,
                 struct rs_err *err);

/* The number of fence triggers on the table named $1 (2: fenced). */
extern const char pg_sql_fenced[];

/* The marker table, made if missing; its upsert with plan, run_id, state
 * and epoch as $1 … $4 (updated_at: the server's UTC time); whether it
 * exists; all its rows (plan, run_id, state, epoch, updated_at). */
extern const char pg_sql_marker_table[];
extern const char pg_sql_marker_upsert[];
extern const char pg_sql_marker_exists[];
extern const char pg_sql_markers[];

/* The delete log of T on (ON) or off, as one simple-query text (one
 * implicit transaction).  Its function, like the change log's
 * (pg_sql_capture), runs with its owner's rights (SECURITY DEFINER) and
 * a search_path of pg_catalog, the log's schema and pg_temp last, so
 * that a writer with no right on reshard's logs is logged, not refused.
 * Into *SQL; 0, RS_ENOMEM, or RS_ESCHEMA when the log's name would be
 * longer than PG_SQL_NAME_MAX (ERR filled). */
int pg_sql_delete_log(const struct rs_table_def *t, int on, char **sql,
                      struct rs_err *err);

/*
 * Change capture of T (backend_capture) on (ON) or off, as one
 * simple-query text, so one implicit transaction: the change log
 * reshard_chg_T (backend_change_log_name) with reshard_pos, a bigint
 * identity primary key, then T's key columns and, unless it is one of
 * them, the shard key column T->columns[KEY_COLUMN], each of its declared
 * type; the plpgsql function reshard_chg_T() that logs NEW on insert, OLD
 * on delete, and on update OLD (when a logged column changes) then NEW;
 * the row-level trigger reshard_capture (AFTER INSERT OR UPDATE OR
 * DELETE) on T, and the statement-level reshard_capture_truncate (BEFORE
 * TRUNCATE, which the function refuses with SQLSTATE 55000: a TRUNCATE
 * fires no row trigger, so its rows would never leave the copies), both
 * ENABLE ALWAYS so that sessions in replica mode are captured too.
 * CREATE TRIGGER takes T's SHARE ROW EXCLUSIVE lock, which waits for
 * every writer under way: once the text has committed, every later write
 * to T is logged.  Off: the triggers, function and log dropped, each IF
 * EXISTS.  Into *SQL; 0, RS_ENOMEM, or RS_ESCHEMA when the log's name
 * would be longer than PG_SQL_NAME_MAX (ERR filled).
 */
int pg_sql_capture(const struct rs_table_def *t, int key_column, int on,
                   char **sql, struct rs_err *err);

/* The start of purge_keys' transaction. */
#define PG_SQL_PURGE_BEGIN "BEGIN; SET LOCAL reshard.purging = 'on'"

/* Append BODY to BUF between dollar quotes whose tag BODY does not
 * hold ($reshard$, $reshard1$, …). */
void pg_sql_dollar_quote(struct rs_strbuf *buf, const char *body);

/* ---- replication ---- */

/* replica_check on the replica: (0) in recovery, (1) system identifier,
 * (2) server_version_num, from pg_stat_wal_receiver (3) status,
 * (4) sender_host, (5) sender_port, (6) slot_name, (7) conninfo, then
 * (8) the number of its own standbys, (9) them as "app@address, …",
 * (10) whether a WAL receiver runs.  One row. */
extern const char pg_sql_replica_facts[];

/* replica_check on the primary, $1 the replica's slot ('' for none), $2
 * its application_name: (0) in recovery, (1) system identifier,
 * (2) server_version_num, (3) pg_current_wal_flush_lsn (NULL on a standby),
 * (4) synchronous_standby_names, then over the walsenders serving the
 * replica (the slot's, else those of that application_name): (5) how
 * many, (6) whether one is 'sync' or 'quorum', (7) an
 * application_name.  One row. */
extern const char pg_sql_primary_facts[];

/* replica_check on the replica, $1 the primary's flush LSN: (0) bytes of
 * WAL not replayed yet (at least 0), (1) ms since the last replayed
 * transaction's commit, (2) whether replay is paused.  One row. */
extern const char pg_sql_replica_lag[];

/* position: pg_current_wal_flush_lsn() as text. */
extern const char pg_sql_position[];

/* catch_up on the replica, $1 the position: (0) no replay position at
 * all (never a standby), (1) replayed up to $1, (2) bytes still to
 * replay (at least 0), (3) replay paused, (4) a WAL receiver runs. */
extern const char pg_sql_catch_up[];

/* pg_is_in_recovery(). */
extern const char pg_sql_in_recovery[];
/* An rs_source_state: 1 in recovery (a standby), 2 read-only, else 0. */
extern const char pg_sql_source_check[];

/* downstream_lag: the largest replay lag in milliseconds of the standbys
 * streaming from this server that have not replayed its flushed WAL
 * (pg_stat_replication: replay_lag plus the time since their last
 * report), -1 when none streams or none lags. */
extern const char pg_sql_downstream_lag[];

/* Into BUF (PG_SQL_PROMOTE_SIZE bytes are enough): the statement that
 * promotes a standby (pg_promote without waiting) and then looks every
 * 5 ms, for up to WAIT_S seconds, whether it has left recovery; its one
 * value is true when it has. */
#define PG_SQL_PROMOTE_SIZE 512
void pg_sql_promote(char *buf, size_t size, int wait_s);

/* release: on the replica (0) in recovery, (1) primary_slot_name; on the
 * primary, $1 the slot: (0) active, (1) active_pid of that physical
 * slot, no row when there is none; and its drop when inactive (one row
 * when dropped). */
extern const char pg_sql_slot_name[];
extern const char pg_sql_slot_state[];
extern const char pg_sql_slot_drop[];

/* Whether the standby called NAME is listed in synchronous_standby_names
 * NAMES ("a, b", "FIRST 2 (a, \"B c\")", "ANY 1 (*)"): names compare
 * without regard to case, as the server compares them, and '*' lists
 * every standby.  1 or 0. */
int pg_sql_sync_listed(const char *names, const char *name);

/* The value of KEY in the libpq connection string CONNINFO
 * ("key=value key='quoted \' value'") into BUF.  1 when found, else 0
 * (BUF empty). */
int pg_sql_conninfo_value(const char *conninfo, const char *key, char *buf,
                          size_t size);

/* Whether the host a replica streams from, SENDER as the replica reports
 * it, is the primary's host PRIMARY as reshard reaches it.  A loopback
 * address, "localhost" or a socket directory means "this machine": for
 * SENDER, the replica's (which reshard reaches as REPLICA); for PRIMARY,
 * reshard's.  Otherwise the names compare without regard to case (no
 * name is looked up).  1 or 0. */
int pg_sql_same_host(const char *sender, const char *replica,
                     const char *primary);

/* Append to B an expression that computes, in PostgreSQL, the point
 * (DESIGN's hash of the key's canonical text; as numeric, 0 to 2^64 - 1)
 * of the key EXPR (SQL already quoted, e.g. NEW."customer") of a column
 * of KIND, exactly as hash_point does; NULL for a key hash_point refuses
 * (identity: not a non-negative integer that fits 64 bits) and for NULL.
 * Text keys are hashed as UTF-8 (convert_to), integers as their decimal
 * text.  Every hash: sha256_64 with sha256(); identity with a cast;
 * fnv1a_64 and java as a loop over the key's bytes or characters in a
 * recursive CTE (java needs a UTF8 database: ascii() gives code points).
 * Returns 0, or RS_EUSAGE (nothing appended) for a key kind this version
 * cannot compute in SQL (other than text and integers, whose canonical
 * text is not the server's). */
int pg_sql_point(struct rs_strbuf *b, enum rs_hash hash, enum rs_col_kind kind,
                 const char *expr);

#endif
