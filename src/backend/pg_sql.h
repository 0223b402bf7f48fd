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
 * for the driver to hand to PQsendQueryParams.  An upsert is packed into
 * INSERTs of at most PG_SQL_MAX_PARAMS parameters each.
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

/* Bind parameters in one statement: the protocol counts them in 16 bits. */
#define PG_SQL_MAX_PARAMS 65535

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

/* The INSERT … ON CONFLICT of N_ROWS rows of T, every column in the
 * table's order, with placeholders $1 to $(N_ROWS × n_columns) (see
 * pg_sql.c).  Returns the text, or NULL when out of memory. */
char *pg_sql_upsert_text(const struct rs_table_def *t, int n_rows);

/* An upsert packed into statements: every INSERT holds rows_per_stmt
 * rows (PG_SQL_MAX_PARAMS / n_cols, at most n_rows) but the last, which
 * may hold fewer. */
struct pg_sql_upsert {
	int n_rows, n_cols;  /* the batch */
	int rows_per_stmt;   /* rows of every INSERT but maybe the last */
	int n_stmts;         /* INSERTs in all, at least 1 */
	char *sql_full;      /* the INSERT for rows_per_stmt rows */
	char *sql_last;      /* for the last, shorter one; NULL if none */
	char *text;          /* every value's input text, each with a NUL */
	const char **params; /* n_rows × n_cols: into TEXT, NULL for NULL */
};

/* Convert ROWS (canonical values, every column of T in order, at least
 * one row) into PostgreSQL input text and pack them into *U.  The
 * caller's values are not needed afterwards.  0, RS_ENOMEM, or RS_EQUERY
 * for a value holding a NUL byte, which PostgreSQL stores in no type's
 * text (bytes travel as hex). */
int pg_sql_upsert(const struct rs_table_def *t, const struct rs_rows *rows,
                  struct pg_sql_upsert *u, struct rs_err *err);

/* Statement I (0 to n_stmts - 1) of U: its SQL and its N_PARAMS
 * parameters, borrowed from U. */
void pg_sql_upsert_stmt(const struct pg_sql_upsert *u, int i, const char **sql,
                        int *n_params, const char *const **params);

/* Free what U holds and empty it.  Does nothing on an empty U. */
void pg_sql_upsert_free(struct pg_sql_upsert *u);

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

/* The start of the snapshot scan of COLUMNS (N_COLUMNS >= 1 indexes into
 * T's columns): a REPEATABLE READ READ ONLY transaction and the cursor
 * reshard_scan for the SELECT.  Returns the text, or NULL when out of
 * memory. */
char *pg_sql_scan_begin(const struct rs_table_def *t, const int *columns,
                        int n_columns);

/* The fetch of the scan's next LIMIT rows into BUF (64 bytes are
 * enough). */
void pg_sql_scan_fetch(char *buf, size_t size, int limit);

#endif
