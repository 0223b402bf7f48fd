/*
 * The SQL text of the MariaDB/MySQL engine (mysql.c), apart from its
 * driver: the statements of describe, read_batch, upsert, delete_keys and
 * the snapshot scan, built from table definitions and values, with the
 * quoting of identifiers, the checking and formatting of values as
 * MariaDB literals, and the packing of an upsert's or delete's rows into
 * statements of bounded size.  Nothing here talks to a server or knows
 * Connector/C or libuv: a unit test builds every statement without one
 * (tests/test_mysql_sql.c).
 *
 * Values enter the SQL text as literals (MariaDB's text protocol has no
 * parameters): numbers once checked to be plain numbers, 1/0 for
 * booleans, X'hex' for bytes, and everything else quoted and escaped by
 * the caller's escape function (struct mysql_sql_escape).  The escaping
 * stays with the driver on purpose: mysql_real_escape_string follows the
 * connection's character set, which an option file may change from
 * utf8mb4 (in GBK or SJIS a byte 0x5c, '\', can end a character), and the
 * server's NO_BACKSLASH_ESCAPES, which the server reports with each
 * statement; only the connection knows both.  Identifiers are quoted with
 * backticks, doubled inside names.
 *
 * The same goes for the statements of count, the fence, the shard
 * marker, the delete log, change capture, reads by key and replication
 * (below), and for reading what
 * a replica's status says (mysql_sql_replica_verdict) and how far behind
 * a GTID position it is (mysql_sql_gtid_behind).
 *
 * Every builder is synchronous.  What it fills is the caller's to free:
 * a strbuf's text (strbuf_clear), a statement list (mysql_sql_stmts_free);
 * a list a failed builder filled is freed and left empty.  The strbuf
 * builders return 0 or -1 (out of memory, or the escape function refused
 * a value: B->failed tells which).  The statement builders return 0 or a
 * negative RS_E… code with ERR (may be NULL) filled with a message that
 * names the table, the row and the column but no shard: the driver adds
 * that.  Requests are taken as the driver checked them (valid primary key
 * and column indexes, N values a row).
 */
#ifndef RS_MYSQL_SQL_H
#define RS_MYSQL_SQL_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "common/strbuf.h"
#include "shardmap/hash.h"

/* An upsert or delete statement grows to about this many bytes before the
 * next one starts (a single larger row gets a statement of its own): far
 * below max_allowed_packet (16 MiB by default in MariaDB 10.2+, 4 MiB in
 * MySQL 5.7, 64 MiB in MySQL 8), and large enough that the round trips
 * do not matter.  A row past max_allowed_packet is refused by the server
 * (error 1153), not here. */
#define MYSQL_SQL_STMT_BYTES ((size_t)1024 * 1024)

/* Keys per DELETE statement.  `(a, b) IN ((…), …)` and `a IN (…)` give the
 * range optimizer one range per key on the primary key (checked with
 * EXPLAIN DELETE on MariaDB 10.11); a few thousand keep it well inside
 * range_optimizer_max_mem_size, past which it would scan the table. */
#define MYSQL_SQL_DELETE_KEYS 1000

/* Escape LEN bytes at FROM into TO (room for 2 × LEN + 1 bytes) for the
 * inside of a '…' literal, as the connection reads it, and NUL-terminate.
 * Returns the bytes written before the NUL, or (size_t)-1 to refuse. */
typedef size_t (*mysql_sql_escape_fn)(void *ctx, char *to, const char *from,
                                      size_t len);

struct mysql_sql_escape {
	mysql_sql_escape_fn fn;
	void *ctx; /* the driver's connection */
};

/* Append NAME as a backtick-quoted identifier, backticks doubled. */
void mysql_sql_ident(struct rs_strbuf *b, const char *name);

/* Append column COL for a SELECT list.  A single-precision FLOAT is read
 * as a DOUBLE: the text protocol prints a FLOAT with 6 digits only, the
 * cast gives its exact value (canonical.h, float4). */
void mysql_sql_column(struct rs_strbuf *b, const struct rs_column *col);

/* Append TEXT (LEN bytes) as a '…' literal escaped by ESC.  Returns 0 or
 * -1. */
int mysql_sql_quoted(struct rs_strbuf *b, const struct mysql_sql_escape *esc,
                     const char *text, size_t len);

/* Append the value V of a column of KIND, given in the canonical form of
 * backend/canonical.h, as MariaDB input (see mysql_sql.c for each kind).
 * Returns 0; -1; or 1 with *WHY saying why the value is not one MariaDB
 * can take (NaN and infinities, years before 0 or after 9999, a value not
 * in the kind's canonical form), nothing usable appended. */
int mysql_sql_canon(struct rs_strbuf *b, const struct mysql_sql_escape *esc,
                    enum rs_col_kind kind, const struct rs_value *v,
                    const char **why);

/* Whether the server (SERVER_INFO from mysql_get_server_info, may be
 * NULL; VERSION from mysql_get_server_version) lists MariaDB's JSON
 * columns in CHECK_CONSTRAINTS with TABLE_NAME: MariaDB 10.2.22+ and
 * 10.3.10+.  MariaDB's JSON is a LONGTEXT with the check
 * json_valid(`col`); MySQL has a real json type. */
int mysql_sql_json_checks(const char *server_info, unsigned long version);

/* Append the catalog query of describe for TABLE (in the URL's database):
 * one row per column in order, with COLUMN_NAME, COLUMN_TYPE, the
 * column's SEQ_IN_INDEX in the primary key (NULL outside it), TABLE_ROWS
 * whether it is a MariaDB JSON column (always 0 unless JSON, see
 * mysql_sql_json_checks) and, the same on every row, the table's foreign
 * keys whose actions change its rows (rs_table_def.cascades; NULL when
 * none).  Returns 0 or -1. */
int mysql_sql_describe(struct rs_strbuf *b, const struct mysql_sql_escape *esc,
                       const char *table, int json);

/* Append the keyset read of REQUEST (its bounds' key values not NULL):
 *   SELECT pk…, cols… FROM `t`
 *   WHERE <after AFTER> AND <up to UPTO>
 *   ORDER BY pk… LIMIT n
 * each condition only when its key is given, as
 *   after:  a >= A AND ((a > A) OR (a = A AND b > B))
 *   upto:   a <= A AND ((a < A) OR (a = A AND b <= B))
 * The leading comparison on the first key column gives the optimizer a
 * range on the key; with one key column it is the whole condition.
 * Bounds are canonical keys, turned into literals by mysql_sql_canon.
 * Returns 0; -1 when memory ran out or the escaping refused a value
 * (B->failed may be 0); or 1 with *WHY saying why the bound of key column
 * *COLUMN is not one MariaDB can take (mysql_sql_canon). */
int mysql_sql_read(struct rs_strbuf *b, const struct mysql_sql_escape *esc,
                   const struct rs_read_request *request, const char **why,
                   const char **column);

/* Append the SELECT of the snapshot scan: COLUMNS (N_COLUMNS >= 1
 * indexes into T's columns) of T, in no order.  B->failed when out of
 * memory. */
void mysql_sql_scan(struct rs_strbuf *b, const struct rs_table_def *t,
                    const int *columns, int n_columns);

/* One statement of an upsert or delete, and the rows it carries (for
 * messages: index of the first, count). */
struct mysql_sql_stmt {
	char *sql;
	size_t len;
	int first_row;
	int n_rows;
};

/* Statements in the order they run.  Start from a zeroed struct. */
struct mysql_sql_stmts {
	struct mysql_sql_stmt *v;
	int n;
	int cap;
};

/* Append the finished statement S (taken over, whatever happens, and left
 * empty) to STMTS.  Returns 0 or -1 (memory, or S->failed; S freed). */
int mysql_sql_push(struct mysql_sql_stmts *stmts, struct rs_strbuf *s,
                   int first_row, int n_rows);

/* Free every statement and empty STMTS. */
void mysql_sql_stmts_free(struct mysql_sql_stmts *stmts);

/*
 * Append to STMTS the upsert of ROWS (canonical values, every column of T
 * in order) into T:
 *   INSERT INTO `t` (`a`, `b`, `c`) VALUES (…), (…)
 *   ON DUPLICATE KEY UPDATE `c` = VALUES(`c`)
 * Rows are packed into one statement while it stays at most
 * MYSQL_SQL_STMT_BYTES long; a row that would take it past that starts
 * the next one, and a row longer than that on its own gets a statement of
 * its own.  A table whose columns are all in the key gets `ON DUPLICATE
 * KEY UPDATE `a` = `a``, which changes nothing: INSERT IGNORE would also
 * turn errors such as a NULL in a NOT NULL column into warnings and store
 * something else.  Returns 0, or RS_EVALUE (a value MariaDB cannot take,
 * naming row and column) / RS_ENOMEM.
 */
int mysql_sql_upsert(struct mysql_sql_stmts *stmts,
                     const struct mysql_sql_escape *esc,
                     const struct rs_table_def *t, const struct rs_rows *rows,
                     struct rs_err *err);

/* A fresh batch's load: into SQL the LOAD DATA LOCAL INFILE statement for
 * ROWS (canonical values, every column of T in order), into DATA the rows
 * in its text format (tab-separated, one a line, \N for NULL, bytes as
 * hex unhexed by the statement's SET).  The file name in SQL is a
 * placeholder: the driver's infile handler serves DATA, never a file.
 * The statement reads like INSERT IGNORE: a key already there makes a
 * warning, not an error, so the caller checks the warning count.
 * Returns 0, RS_EVALUE naming the row and column MariaDB cannot take, or
 * RS_ENOMEM; SQL and DATA are the caller's to clear in every case. */
int mysql_sql_load(struct rs_strbuf *sql, struct rs_strbuf *data,
                   const struct rs_table_def *t, const struct rs_rows *rows,
                   struct rs_err *err);

/*
 * Append to STMTS the delete of KEYS (canonical values, n_pk a row in key
 * order) from T:
 *   DELETE FROM `t` WHERE `a` IN (…, …)                 one key column
 *   DELETE FROM `t` WHERE (`a`, `b`) IN ((…), (…))      several
 * each of at most MYSQL_SQL_DELETE_KEYS keys, packed by size as an
 * upsert.  Both forms are a range scan of the primary key on MariaDB
 * 10.11 (EXPLAIN DELETE), for any number of keys.  Returns 0, or
 * RS_EINTERNAL (a NULL key), RS_EVALUE, RS_ENOMEM.
 */
int mysql_sql_delete(struct mysql_sql_stmts *stmts,
                     const struct mysql_sql_escape *esc,
                     const struct rs_table_def *t, const struct rs_rows *keys,
                     struct rs_err *err);

/* ---- count, the fence, the shard marker, the delete log ------------- */

/* MariaDB's longest identifier, in characters. */
#define MYSQL_SQL_NAME_MAX 64

/* Room for any name built here from a table name that fits
 * (MYSQL_SQL_NAME_MAX characters of up to 4 bytes, a prefix, the NUL). */
#define MYSQL_SQL_NAME_SIZE 320

/* Whether NAME (UTF-8) has at most MYSQL_SQL_NAME_MAX characters: the
 * fence's and the delete log's trigger names, and the delete log's table
 * name, are made from the table's name and must fit too. */
int mysql_sql_name_fits(const char *name);

/* Append SELECT COUNT(*) FROM `table`. */
void mysql_sql_count(struct rs_strbuf *b, const char *table);

/* The statements the fence blocks, one BEFORE trigger each, in this
 * order: "INSERT", "UPDATE", "DELETE". */
#define MYSQL_SQL_FENCE_OPS 3
extern const char *const mysql_sql_fence_ops[MYSQL_SQL_FENCE_OPS];

/* The name of the fence trigger for statement OP (an index into
 * mysql_sql_fence_ops) on TABLE, as SQLite names it:
 * reshard_fence_INSERT_<table>.  Truncated to SIZE. */
void mysql_sql_fence_trigger(char *buf, size_t size, int op, const char *table);

/* Append the query of the fence triggers that exist on the N TABLES: one
 * row (TRIGGER_NAME) per trigger, a block per table joined by UNION ALL,
 * each naming its schema and table as constants so that the server opens
 * only that table's triggers (EXPLAIN: "Scanned 0 databases"):
 *   SELECT TRIGGER_NAME FROM information_schema.TRIGGERS
 *   WHERE EVENT_OBJECT_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = 't'
 *   AND TRIGGER_NAME IN ('reshard_fence_INSERT_t', …UPDATE…, …DELETE…)
 * Returns 0 or -1. */
int mysql_sql_fence_existing(struct rs_strbuf *b,
                             const struct mysql_sql_escape *esc,
                             const char *const *tables, int n);

/* Append the fence trigger for statement OP on TABLE, which rejects every
 * row with SQLSTATE 45000 (error 1644) and MESSAGE, escaped by ESC:
 *   CREATE TRIGGER IF NOT EXISTS `reshard_fence_INSERT_t` BEFORE INSERT
 *   ON `t` FOR EACH ROW SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = '…'
 * With ROWS (NULL: every row), table number T of ROWS (backend_fence): only
 * the rows whose shard key, OLD's or NEW's, has a point that moves, or no
 * point at all:
 *   … FOR EACH ROW BEGIN DECLARE p DECIMAL(65,0);
 *   SET p = <point of NEW.`key`>; IF (<p moves>) IS NOT FALSE THEN
 *   SIGNAL …; END IF; END
 * Returns 0 or -1 (out of memory, escaping refused, or a hash or key kind
 * mysql_sql_point_set cannot compute). */
int mysql_sql_fence_create(struct rs_strbuf *b,
                           const struct mysql_sql_escape *esc, int op,
                           const char *table, const char *message,
                           const struct rs_fence_rows *rows, int t);

/* The name of the ownership guard's trigger for statement OP on TABLE:
 * reshard_guard_INSERT_<table>, as long as the fence's.  Truncated to
 * SIZE. */
void mysql_sql_guard_trigger(char *buf, size_t size, int op, const char *table);

/* Append the ownership guard's trigger for statement OP on TABLE, table
 * number T of GUARD (see backend_guard_sql): unless @reshard_purging is
 * set, the point of OLD's and NEW's key (those the statement has) is
 * placed among GUARD->owned and a write to another owner's row fails
 * with SQLSTATE 45000 and that owner's message:
 *   CREATE TRIGGER IF NOT EXISTS `reshard_guard_INSERT_t` BEFORE INSERT
 *   ON `t` FOR EACH ROW BEGIN DECLARE p DECIMAL(65,0);
 *   IF @reshard_purging IS NULL THEN SET p = <point of NEW.`key`>;
 *   IF <p in owned[0]> THEN SIGNAL … 'message 0'; ELSEIF … END IF;
 *   END IF; END
 * Returns 0 or -1 (out of memory, escaping refused, a hash or key kind
 * mysql_sql_point_set cannot compute). */
int mysql_sql_guard_create(struct rs_strbuf *b,
                           const struct mysql_sql_escape *esc, int op,
                           const char *table, const struct rs_guard *guard,
                           int t);

/* Append DROP TRIGGER IF EXISTS `name`. */
void mysql_sql_drop_trigger(struct rs_strbuf *b, const char *name);

/* The shard marker's table, one row per plan (struct rs_marker), and the
 * query of every row, updated_at as 'YYYY-MM-DD HH:MM:SS' (a DATETIME,
 * written in UTC by the server). */
extern const char mysql_sql_marker_table[];
extern const char mysql_sql_markers[];

/* Append the upsert of MARKER, updated_at the server's UTC_TIMESTAMP():
 *   INSERT INTO `reshard_marker` (…) VALUES ('plan', 'run', 'state', 3,
 *   UTC_TIMESTAMP()) ON DUPLICATE KEY UPDATE run_id = VALUES(run_id), …
 * Returns 0 or -1. */
int mysql_sql_mark(struct rs_strbuf *b, const struct mysql_sql_escape *esc,
                   const struct rs_marker *marker);

/* Append the catalog query the delete log's table is made from: one row
 * per column of TABLE with COLUMN_NAME, COLUMN_TYPE and COLLATION_NAME
 * (NULL for a column without one).  Returns 0 or -1. */
int mysql_sql_log_columns(struct rs_strbuf *b,
                          const struct mysql_sql_escape *esc,
                          const char *table);

/* The names of the delete log's triggers on TABLE, as SQLite names them:
 * reshard_dellog_<table> (after delete), reshard_dellog_u_<table> (after
 * an update; UPDATE 1).  Truncated to SIZE. */
void mysql_sql_log_trigger_name(char *buf, size_t size, const char *table,
                                int update);

/* Append the delete log's table LOG: the N key columns KEYS of the
 * table, in key order, with their COLUMN_TYPEs TYPES and collations
 * COLLATIONS (an entry may be NULL), so that a key compares in the log as
 * it does in the table:
 *   CREATE TABLE IF NOT EXISTS `log` (`a` varchar(10) COLLATE x NOT NULL,
 *   `b` int(11) NOT NULL, PRIMARY KEY (`a`, `b`))
 * Types come from the catalog as they are.  B->failed when out of
 * memory. */
void mysql_sql_log_table(struct rs_strbuf *b, const char *log,
                         const char *const *keys, const char *const *types,
                         const char *const *collations, int n);

/* Append the delete log's trigger on TABLE (UPDATE 0: after delete; 1:
 * after an update that changes the key, byte for byte), which records
 * OLD's key in LOG unless the session variable @reshard_purging is set
 * (backend_purge_keys):
 *   CREATE TRIGGER IF NOT EXISTS `reshard_dellog_t` AFTER DELETE ON `t`
 *   FOR EACH ROW IF @reshard_purging IS NULL THEN
 *   INSERT IGNORE INTO `log` (`a`, `b`) VALUES (OLD.`a`, OLD.`b`); END IF
 * and for an update the condition also has
 *   AND NOT (CAST(OLD.`a` AS BINARY) <=> CAST(NEW.`a` AS BINARY) AND …)
 * B->failed when out of memory. */
void mysql_sql_log_trigger(struct rs_strbuf *b, const char *table,
                           const char *log, const char *const *keys, int n,
                           int update);

/* Set and clear the session variable the delete log's triggers look at,
 * around a purge's deletes. */
extern const char mysql_sql_purging_on[];
extern const char mysql_sql_purging_off[];

/* ---- change capture and reads by key (a split) ---------------------- */

/* Values (keys × key columns) in the IN list of one read by key.  MariaDB
 * 10.3+ turns an IN list of in_predicate_conversion_threshold (1000)
 * values or more, counted column by column, into a join with a table of
 * the values, which on 10.11 scans the whole table with a block join: 156
 * s for 10,000 keys of two columns on a table of 200,000 rows, against
 * 0.06 s for 21 statements of 499 keys (and MySQL's range optimizer
 * gives up on lists past range_optimizer_max_mem_size).  Under the
 * threshold the list is one range a key on the primary key. */
#define MYSQL_SQL_READ_VALUES 999

/* The name of change capture's trigger after statement OP (an index into
 * mysql_sql_fence_ops: INSERT, UPDATE, DELETE) on TABLE, as SQLite names
 * it: reshard_capture_i_<table>, _u_, _d_.  Truncated to SIZE. */
void mysql_sql_capture_trigger(char *buf, size_t size, int op,
                               const char *table);

/* Append the change log LOG: reshard_pos, then the N columns NAMES of
 * the table with their COLUMN_TYPEs TYPES and collations COLLATIONS (an
 * entry may be NULL), the first N_KEYS of them (the primary key) NOT
 * NULL, the others NULL (the shard key, when not in the key):
 *   CREATE TABLE IF NOT EXISTS `log` (`reshard_pos` bigint NOT NULL
 *   AUTO_INCREMENT, `a` varchar(10) COLLATE x NOT NULL, `k` int NULL,
 *   PRIMARY KEY (`reshard_pos`)) ENGINE=InnoDB
 * InnoDB, so that a row logged goes with its writer's transaction.  An
 * explicit NULL, lest a TIMESTAMP column become NOT NULL DEFAULT
 * CURRENT_TIMESTAMP (explicit_defaults_for_timestamp off).  B->failed
 * when out of memory. */
void mysql_sql_change_table(struct rs_strbuf *b, const char *log,
                            const char *const *names, const char *const *types,
                            const char *const *collations, int n, int n_keys);

/* Append change capture's trigger after statement OP on TABLE, which
 * logs the N columns NAMES of the row in LOG: after an insert NEW's,
 * after a delete OLD's,
 *   CREATE TRIGGER IF NOT EXISTS `reshard_capture_i_t` AFTER INSERT ON
 *   `t` FOR EACH ROW INSERT INTO `log` (`a`, `k`) VALUES (NEW.`a`,
 *   NEW.`k`)
 * and after an update OLD's when one of them changed, then NEW's:
 *   … AFTER UPDATE ON `t` FOR EACH ROW BEGIN IF NOT (OLD.`a` <=> NEW.`a`
 *   AND CAST(OLD.`a` AS BINARY) <=> CAST(NEW.`a` AS BINARY) AND …) THEN
 *   INSERT INTO `log` (…) VALUES (OLD.…); END IF; INSERT INTO `log` (…)
 *   VALUES (NEW.…); END
 * A column changes when it changes as its type compares or byte for
 * byte: 'a' to 'A' under a case-insensitive collation moves the row in
 * a hash of its bytes, and a FLOAT's text may not show a change.
 * B->failed when out of memory. */
void mysql_sql_capture_create(struct rs_strbuf *b, int op, const char *table,
                              const char *log, const char *const *names, int n);

/*
 * Append to STMTS the read of the rows of REQUEST->table whose primary
 * keys are REQUEST->keys (canonical values, n_pk a row in key order):
 *   SELECT `a`, `b`, cols… FROM `t` WHERE `a` IN (…, …)     one key column
 *   SELECT … FROM `t` WHERE (`a`, `b`) IN ((…), (…))         several
 * the SELECT list as mysql_sql_read's; each statement of at most
 * MYSQL_SQL_READ_VALUES / n_pk keys (at least one), packed by size as an
 * upsert.  No statement for no keys.  Returns 0, or RS_EINTERNAL (a NULL
 * key), RS_EKEY (a key MariaDB cannot take, naming its column),
 * RS_ENOMEM.
 */
int mysql_sql_read_keys(struct mysql_sql_stmts *stmts,
                        const struct mysql_sql_escape *esc,
                        const struct rs_keys_request *request,
                        struct rs_err *err);

/* ---- replication (a doubling promotes a GTID replica) --------------- */

/* On the primary: its server_id, whether it waits for semi-synchronous
 * acknowledgements ('ON', 'OFF', NULL when the server has no semi-sync),
 * its read_only, and how many replication SQL threads run on it
 * (Slaves_running: it is a replica itself). */
extern const char mysql_sql_primary_facts[];
/* On the replica: every replication connection it has (one row each),
 * its server_id, read_only, slave_skip_errors and slave_exec_mode, and
 * the replicas of its own. */
extern const char mysql_sql_slaves_status[];
/* A split source's facts, needing no privilege: @@read_only and how many
 * replication SQL threads run (Slaves_running; MariaDB only). */
extern const char mysql_sql_source_facts[];
extern const char mysql_sql_replica_facts[];
extern const char mysql_sql_slave_hosts[];
/* The columns of SHOW ALL SLAVES STATUS that filter what a replica
 * applies: set, it leaves some of its primary's events out. */
#define MYSQL_SQL_N_FILTERS 9
extern const char *const mysql_sql_replica_filters[MYSQL_SQL_N_FILTERS];
/* The primary's position; the replica's after a wait that timed out. */
extern const char mysql_sql_position[];
extern const char mysql_sql_slave_pos[];
/* Promotion, in this order, and whether the replica is writable. */
extern const char *const mysql_sql_promote[3];
/* A replica's replication, set up but stopped, started again. */
extern const char mysql_sql_resume[];
/* Before the fence: the relay log started again twice, so that the SQL
 * thread, passing both rotations, deletes the one it applied. */
extern const char *const mysql_sql_promote_ready[2];
extern const char mysql_sql_read_only[];

/* Append the replica's wait for POSITION (a GTID list, escaped by ESC),
 * at most WAIT_MS milliseconds (0: only look), which returns 0 when
 * the replica has applied everything up to it and -1 when it timed out:
 *   SELECT MASTER_GTID_WAIT('0-1-42', 0.500)
 * Returns 0 or -1. */
int mysql_sql_gtid_wait(struct rs_strbuf *b, const struct mysql_sql_escape *esc,
                        const char *position, int wait_ms);

/* How many transactions HAVE (a replica's gtid_slave_pos) lacks of WANT
 * (a primary's position): for each replication domain of WANT, how far
 * its sequence number is past HAVE's in the same domain (all of it when
 * HAVE has none).  Sequence numbers count a domain's transactions, so
 * this is the replica's backlog.  -1 when either is not a GTID list
 * ("domain-server-seq", comma-separated; "" is the empty list). */
int64_t mysql_sql_gtid_behind(const char *want, const char *have);

/* What replica_check has learnt about a primary and its replica.  Text
 * fields are copies, truncated to their size. */
struct mysql_sql_replica {
	/* The shards, for messages: names and masked URLs. */
	const char *primary, *primary_url;
	const char *replica, *replica_url;
	const char *host;      /* the primary's host from its URL; NULL for a
	                          Unix socket or the option files */
	unsigned int port;     /* the primary's port from its URL, 0: 3306 */
	int max_lag_ms;        /* the most the replica may be behind */
	long long primary_id;  /* the primary's @@server_id */
	int semi_sync;         /* rpl_semi_sync_master_enabled is ON */
	int primary_read_only; /* the primary's @@read_only is on */
	long long primary_applying; /* Slaves_running on the primary */
	/* The replica's SHOW ALL SLAVES STATUS: how many connections, then
	 * the columns of the first. */
	int n_sources;
	char connection[72];  /* Connection_name */
	char io_running[16];  /* Slave_IO_Running: Yes, No, Connecting */
	char sql_running[16]; /* Slave_SQL_Running */
	char master_host[256];
	long long master_port;
	long long master_id;  /* Master_Server_Id */
	char using_gtid[16];  /* No, Current_Pos, Slave_Pos */
	long long behind_s;   /* Seconds_Behind_Master, -1 for NULL */
	char last_error[256]; /* Last_IO_Error, else Last_SQL_Error */
	/* The values of mysql_sql_replica_filters, "" for none. */
	char filters[MYSQL_SQL_N_FILTERS][256];
	long long replica_id;  /* the replica's @@server_id */
	int read_only;         /* the replica's @@read_only is on */
	char skip_errors[256]; /* its @@slave_skip_errors, "OFF" for none */
	char exec_mode[16];    /* its @@slave_exec_mode: STRICT, IDEMPOTENT */
	/* The replica's SHOW SLAVE HOSTS: how many, and the first. */
	int n_replicas;
	char first_replica[300]; /* "server_id 3 at host:port" */
};

/* Whether R describes a primary that is one (writable, not a replica
 * itself) and a replica that streams from exactly it by GTID, applies all
 * of it (no filter, no skipped errors, no idempotent mode, read-only so
 * that nothing else writes there: GTIDs advance past what a replica
 * leaves out, so catch-up cannot see it), is no more than max_lag_ms
 * behind, and can be promoted without harm to the primary or to replicas
 * of its own.  Returns 0; or 1
 * with WHY (SIZE bytes) saying, naming both shards, what is wrong and how
 * to fix it. */
int mysql_sql_replica_verdict(const struct mysql_sql_replica *r, char *why,
                              size_t size);

/* Whether VALUE, a MariaDB setting as SELECT @@name gives it, is off:
 * NULL, "", "0" or "OFF" (in any case). */
int mysql_sql_off(const char *value);

/* What the replica R is (backend_promoted's enum rs_replica_state), from
 * its SHOW ALL SLAVES STATUS and, when that is empty, its read_only: a
 * replication connection whose SQL thread runs and whose I/O thread runs
 * or reconnects follows its primary; one with a thread stopped is
 * RS_REPLICA_STOPPED; none at all is RS_REPLICA_PROMOTED when writable,
 * else RS_REPLICA_DETACHED. */
enum rs_replica_state
mysql_sql_replica_state(const struct mysql_sql_replica *r);

/* During catch-up, whether the replica R (its SHOW ALL SLAVES STATUS
 * only) can still reach its primary's position by itself.  Returns 0
 * when both replication threads run; 1 with NOTE (SIZE bytes) saying why
 * it is not receiving now but may again by itself (the I/O thread
 * reconnecting); -1 with NOTE saying what stopped and how to fix it
 * (replication removed, a thread stopped: it never will by itself). */
int mysql_sql_catch_up_verdict(const struct mysql_sql_replica *r, char *note,
                               size_t size);

/* backend_table_sql's statements (backend_engine.h's table_sql_build)
 * from the one row of SHOW CREATE TABLE (Table, Create Table): the table
 * without its secondary indexes (but with the one that leads with its
 * AUTO_INCREMENT column, which InnoDB wants there), each index as ALTER
 * TABLE … ADD … IF NOT EXISTS (index names are the table's own, so
 * exact; a UNIQUE KEY among the uniques, the others among the indexes),
 * foreign keys left out. */
int mysql_sql_table_sql_build(const struct rs_rows *rows, const char *table,
                              const char *as, struct rs_table_sql *out,
                              struct rs_err *err);

/* As pg_sql_point, for MariaDB: the point as BIGINT UNSIGNED (identity
 * of a text key: DECIMAL(65,0)); text keys hashed as utf8mb4 (CONVERT …
 * USING utf8mb4, so a latin1 column's key is hashed as its UTF-8 text). */
int mysql_sql_point(struct rs_strbuf *b, enum rs_hash hash,
                    enum rs_col_kind kind, const char *expr);

/* The point in a compound statement (a trigger's body), for every hash
 * pg_sql_point computes: mysql_sql_point_declare appends the local
 * variables (p, and for fnv1a_64 and java the loop's reshard_b, reshard_i
 * and reshard_h), which must open the BEGIN block; mysql_sql_point_set
 * appends the statements that leave EXPR's point in p (NULL for a NULL
 * key) without a final ";": "SET p = <mysql_sql_point>" for sha256_64
 * and identity, a WHILE loop over the key's UTF-8 bytes (fnv1a_64) or
 * UTF-16 code units (java) for the others.  mysql_sql_point_set returns
 * 0, RS_EUSAGE for a hash or key kind it cannot compute (nothing
 * appended), or -1 out of memory. */
void mysql_sql_point_declare(struct rs_strbuf *b, enum rs_hash hash);
int mysql_sql_point_set(struct rs_strbuf *b, enum rs_hash hash,
                        enum rs_col_kind kind, const char *expr);

#endif
