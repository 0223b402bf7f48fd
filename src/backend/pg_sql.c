/*
 * The SQL text of the PostgreSQL engine: see pg_sql.h.  Moved out of pg.c
 * unchanged, so that the statements pg.c sends are byte for byte what they
 * were.
 */
#include "backend/pg_sql.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Columns in attnum order with their types and primary key positions, and
 * the relation's kind and row estimate on every row.  No row: no such
 * relation.  The name is one identifier, exactly as written, looked up on
 * the search_path.  reltuples is -1 until the first ANALYZE (PostgreSQL
 * 14+; before, 0); a partitioned table's is the sum of its leaves'.
 * Needs PostgreSQL 12+ (pg_partition_tree). */
const char pg_sql_describe[] =
	"SELECT c.relkind, "
	"  CASE WHEN c.relkind = 'p' THEN "
	"    (SELECT CASE WHEN count(*) FILTER (WHERE p.reltuples >= 0) = 0 "
	"                 THEN -1 "
	"                 ELSE sum(greatest(p.reltuples, 0))::bigint END "
	"       FROM pg_catalog.pg_partition_tree(c.oid) AS t "
	"       JOIN pg_catalog.pg_class AS p ON p.oid = t.relid "
	"      WHERE t.isleaf) "
	"    WHEN c.reltuples < 0 THEN -1 "
	"    ELSE c.reltuples::bigint END, "
	"  a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod), "
	"  k.ord "
	"FROM pg_catalog.pg_class AS c "
	"LEFT JOIN pg_catalog.pg_attribute AS a "
	"  ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped "
	"LEFT JOIN (SELECT u.attnum, u.ord "
	"             FROM pg_catalog.pg_index AS i, "
	"                  unnest(i.indkey) WITH ORDINALITY AS u(attnum, ord) "
	"            WHERE i.indisprimary "
	"              AND i.indrelid = pg_catalog.to_regclass("
	"                                 pg_catalog.quote_ident($1))) AS k "
	"  ON k.attnum = a.attnum "
	"WHERE c.oid = pg_catalog.to_regclass(pg_catalog.quote_ident($1)) "
	"ORDER BY a.attnum";

void
pg_sql_ident(struct rs_strbuf *buf, const char *name)
{
	strbuf_quoted(buf, name, '"');
}

/* Append to BUF the input text of a date, timestamp or timestamptz whose
 * canonical TEXT (LEN bytes) has an astronomical year of 0 or less:
 * PostgreSQL reads no negative years, so "-0043-03-15…" becomes
 * "0044-03-15… BC" and "0000-…" "0001-… BC".  Returns 1 when done, 0
 * (nothing appended) for any other value. */
static int
pg_buf_bc(struct rs_strbuf *buf, const char *text, size_t len)
{
	size_t start = len > 0 && text[0] == '-' ? 1 : 0, i = start;
	long long year = 0;
	char digits[32];

	while (i < len && i - start < 12 && text[i] >= '0' && text[i] <= '9')
		year = year * 10 + (text[i++] - '0');
	if (i - start < 4 || i >= len || text[i] != '-' ||
	    (start == 0 && year != 0))
		return 0;
	snprintf(digits, sizeof(digits), "%04lld", start == 1 ? year + 1 : 1);
	strbuf_str(buf, digits);
	strbuf_add(buf, text + i, len - i);
	strbuf_str(buf, " BC");
	return 1;
}

/* Every canonical text but bytes and years before 1 is PostgreSQL input
 * as it is: t/f, "Infinity" and "NaN", ISO dates and times with or
 * without 'Z', "infinity", uuid, JSON. */
void
pg_sql_input(struct rs_strbuf *buf, enum rs_col_kind kind, const char *text,
             size_t len)
{
	switch (kind) {
	case RS_COL_BYTES:
		strbuf_add(buf, "\\x", 2);
		break;
	case RS_COL_DATE:
	case RS_COL_TIMESTAMP:
	case RS_COL_TIMESTAMPTZ:
		if (pg_buf_bc(buf, text, len))
			return;
		break;
	default:
		break;
	}
	strbuf_add(buf, text, len);
}

void
pg_sql_json(struct rs_strbuf *buf, const char *text, size_t len)
{
	size_t run = 0;
	char escape[8];

	strbuf_add(buf, "\"", 1);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)text[i];

		if (c != '"' && c != '\\' && c >= 0x20)
			continue;
		strbuf_add(buf, text + run, i - run);
		if (c == '"' || c == '\\')
			snprintf(escape, sizeof(escape), "\\%c", c);
		else
			snprintf(escape, sizeof(escape), "\\u%04x", c);
		strbuf_str(buf, escape);
		run = i + 1;
	}
	strbuf_add(buf, text + run, len - run);
	strbuf_add(buf, "\"", 1);
}

/* Check value V of COLUMN in row ROW (from 0) of a batch for TABLE:
 * PostgreSQL stores no NUL byte in any type's text (bytes travel as hex).
 * Returns 0, or RS_EQUERY with SQLSTATE 22021 as the server would, ERR
 * filled. */
static int
pg_check_value(const struct rs_table_def *t, int column, int row,
               const struct rs_value *v, struct rs_err *err)
{
	if (v->text == NULL || memchr(v->text, '\0', v->len) == NULL)
		return 0;
	rs_err_set(err, RS_EQUERY,
	           "table %s, row %d of the batch: column %s holds a NUL "
	           "byte, which PostgreSQL cannot store in %s",
	           t->name, row + 1, t->columns[column].name,
	           t->columns[column].type);
	if (err != NULL) {
		snprintf(err->sqlstate, sizeof(err->sqlstate), "22021");
		err->retryable = rs_err_retryable(err->sqlstate, 0);
	}
	return RS_EQUERY;
}

void
pg_sql_query_free(struct pg_sql_query *q)
{
	free(q->sql);
	free(q->params);
	free(q->text);
	*q = (struct pg_sql_query){0};
}

int
pg_sql_read(const struct rs_read_request *request, struct pg_sql_query *q,
            struct rs_err *err)
{
	const struct rs_table_def *t = request->table;
	const struct rs_value *bound[2] = {request->after, request->upto};
	static const char *const compare[2] = {") > (", ") <= ("};
	struct rs_strbuf sql = {0}, keys = {0}, values = {0};
	const char **params = NULL;
	char number[32];
	size_t *starts = calloc(2 * (size_t)t->n_pk + 1, sizeof(*starts));
	int n_params = 0;

	*q = (struct pg_sql_query){0};
	if (starts == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	for (int i = 0; i < t->n_pk; i++) {
		if (i > 0)
			strbuf_str(&keys, ", ");
		pg_sql_ident(&keys, t->columns[t->pk[i]].name);
	}
	strbuf_str(&sql, "SELECT ");
	strbuf_str(&sql, keys.text != NULL ? keys.text : "");
	for (int i = 0; i < request->n_columns; i++) {
		strbuf_str(&sql, ", ");
		pg_sql_ident(&sql, t->columns[request->columns[i]].name);
	}
	strbuf_str(&sql, " FROM ");
	pg_sql_ident(&sql, t->name);
	for (int b = 0; b < 2; b++) {
		if (bound[b] == NULL)
			continue;
		strbuf_str(&sql, n_params == 0 ? " WHERE (" : " AND (");
		strbuf_str(&sql, keys.text != NULL ? keys.text : "");
		strbuf_str(&sql, compare[b]);
		for (int i = 0; i < t->n_pk; i++) {
			const struct rs_value *v = &bound[b][i];

			snprintf(number, sizeof(number), "%s$%d",
			         i > 0 ? ", " : "", n_params + i + 1);
			strbuf_str(&sql, number);
			/* The values are canonical and need not end in NUL;
			 * libpq wants PostgreSQL input text params that do.
			 * Convert them one after another, each with its NUL;
			 * the pointers are taken once the buffer stops
			 * moving. */
			starts[n_params + i] = values.len;
			if (v->text != NULL)
				pg_sql_input(&values, t->columns[t->pk[i]].kind,
				             v->text, v->len);
			strbuf_add(&values, "", 1);
		}
		strbuf_str(&sql, ")");
		n_params += t->n_pk;
	}
	strbuf_str(&sql, " ORDER BY ");
	strbuf_str(&sql, keys.text != NULL ? keys.text : "");
	snprintf(number, sizeof(number), " LIMIT %d", request->limit);
	strbuf_str(&sql, number);
	free(keys.text);
	if (n_params > 0)
		params = calloc((size_t)n_params, sizeof(*params));
	if (sql.failed || keys.failed || values.failed ||
	    (n_params > 0 && params == NULL)) {
		free(params);
		free(starts);
		free(sql.text);
		free(values.text);
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	}
	n_params = 0;
	for (int b = 0; b < 2; b++) {
		if (bound[b] == NULL)
			continue;
		for (int i = 0; i < t->n_pk; i++, n_params++)
			params[n_params] =
				bound[b][i].text != NULL
					? values.text + starts[n_params]
					: NULL;
	}
	free(starts);
	q->sql = sql.text;
	q->n_params = n_params;
	q->params = params;
	q->text = values.text;
	return 0;
}

/* Whether column COLUMN of TABLE is in its primary key. */
static int
pg_in_key(const struct rs_table_def *t, int column)
{
	for (int i = 0; i < t->n_pk; i++)
		if (t->pk[i] == column)
			return 1;
	return 0;
}

/* The upsert of N_ROWS rows of TABLE, every column in the table's order:
 *
 *   INSERT INTO "t" AS "target" ("c1", …) OVERRIDING SYSTEM VALUE
 *   VALUES ($1, …), … ON CONFLICT ("k1", …)
 *   DO UPDATE SET "c" = EXCLUDED."c", …
 *
 * or DO NOTHING when every column is in the key.  The parameters are
 * untyped: INSERT gives each its column's type and converts it as an
 * assignment, by the type's input function, so a value too long for a
 * varchar(n) fails instead of being cut as a cast would.  The alias keeps
 * EXCLUDED unambiguous for a table named "excluded"; OVERRIDING SYSTEM
 * VALUE writes the given key into a GENERATED ALWAYS identity column.
 * Returns the text, or NULL when out of memory. */
char *
pg_sql_upsert_text(const struct rs_table_def *t, int n_rows)
{
	struct rs_strbuf sql = {0};
	char number[24];
	int n = 0, n_set = 0;

	strbuf_str(&sql, "INSERT INTO ");
	pg_sql_ident(&sql, t->name);
	strbuf_str(&sql, " AS \"target\" (");
	for (int c = 0; c < t->n_columns; c++) {
		if (c > 0)
			strbuf_str(&sql, ", ");
		pg_sql_ident(&sql, t->columns[c].name);
	}
	strbuf_str(&sql, ") OVERRIDING SYSTEM VALUE VALUES ");
	for (int r = 0; r < n_rows; r++) {
		strbuf_str(&sql, r > 0 ? ", (" : "(");
		for (int c = 0; c < t->n_columns; c++) {
			snprintf(number, sizeof(number), "%s$%d",
			         c > 0 ? ", " : "", ++n);
			strbuf_str(&sql, number);
		}
		strbuf_str(&sql, ")");
	}
	strbuf_str(&sql, " ON CONFLICT (");
	for (int i = 0; i < t->n_pk; i++) {
		if (i > 0)
			strbuf_str(&sql, ", ");
		pg_sql_ident(&sql, t->columns[t->pk[i]].name);
	}
	strbuf_str(&sql, ") DO ");
	for (int c = 0; c < t->n_columns; c++) {
		if (pg_in_key(t, c))
			continue;
		strbuf_str(&sql, n_set++ > 0 ? ", " : "UPDATE SET ");
		pg_sql_ident(&sql, t->columns[c].name);
		strbuf_str(&sql, " = EXCLUDED.");
		pg_sql_ident(&sql, t->columns[c].name);
	}
	if (n_set == 0)
		strbuf_str(&sql, "NOTHING");
	if (sql.failed) {
		free(sql.text);
		return NULL;
	}
	return sql.text;
}

void
pg_sql_upsert_free(struct pg_sql_upsert *u)
{
	free(u->sql_full);
	free(u->sql_last);
	free(u->text);
	free(u->params);
	*u = (struct pg_sql_upsert){0};
}

int
pg_sql_upsert(const struct rs_table_def *t, const struct rs_rows *rows,
              struct pg_sql_upsert *u, struct rs_err *err)
{
	struct rs_strbuf text = {0};
	size_t n_values, offset = 0;
	int remainder, rc;

	*u = (struct pg_sql_upsert){0};
	n_values = (size_t)rows->n_rows * (size_t)rows->n_cols;
	for (size_t i = 0; i < n_values; i++) {
		const struct rs_value *v = &rows->values[i];
		int column = (int)(i % (size_t)rows->n_cols);

		rc = pg_check_value(t, column, (int)(i / (size_t)rows->n_cols),
		                    v, err);
		if (rc != 0) {
			free(text.text);
			return rc;
		}
		if (v->text == NULL)
			continue;
		pg_sql_input(&text, t->columns[column].kind, v->text, v->len);
		strbuf_add(&text, "", 1);
	}
	if (text.failed ||
	    (u->params = calloc(n_values + 1, sizeof(*u->params))) == NULL)
		goto nomem;
	u->text = text.text;
	text.text = NULL;
	for (size_t i = 0; i < n_values; i++) {
		if (rows->values[i].text == NULL)
			continue;
		u->params[i] = u->text + offset;
		offset += strlen(u->text + offset) + 1;
	}
	u->n_rows = rows->n_rows;
	u->n_cols = rows->n_cols;
	u->rows_per_stmt = PG_SQL_MAX_PARAMS / u->n_cols;
	if (u->rows_per_stmt > u->n_rows)
		u->rows_per_stmt = u->n_rows;
	u->n_stmts = (u->n_rows + u->rows_per_stmt - 1) / u->rows_per_stmt;
	remainder = u->n_rows % u->rows_per_stmt;
	u->sql_full = pg_sql_upsert_text(t, u->rows_per_stmt);
	if (u->sql_full == NULL ||
	    (remainder > 0 &&
	     (u->sql_last = pg_sql_upsert_text(t, remainder)) == NULL))
		goto nomem;
	return 0;
nomem:
	free(text.text);
	pg_sql_upsert_free(u);
	return rs_err_set(err, RS_ENOMEM, "out of memory");
}

void
pg_sql_upsert_stmt(const struct pg_sql_upsert *u, int i, const char **sql,
                   int *n_params, const char *const **params)
{
	int first = i * u->rows_per_stmt, n = u->n_rows - first;

	if (n > u->rows_per_stmt)
		n = u->rows_per_stmt;
	*sql = n == u->rows_per_stmt ? u->sql_full : u->sql_last;
	*n_params = n * u->n_cols;
	*params = u->params + (size_t)first * (size_t)u->n_cols;
}

int
pg_sql_delete(const struct rs_table_def *t, const struct rs_rows *keys,
              char **sql_out, char **json_out, struct rs_err *err)
{
	struct rs_strbuf sql = {0}, json = {0}, input = {0};
	int rc = 0;

	*sql_out = NULL;
	*json_out = NULL;
	strbuf_str(&json, "[");
	for (int r = 0; r < keys->n_rows; r++) {
		strbuf_str(&json, r > 0 ? ",{" : "{");
		for (int i = 0; i < t->n_pk; i++) {
			const struct rs_column *column = &t->columns[t->pk[i]];
			const struct rs_value *v =
				&keys->values[(size_t)r * (size_t)t->n_pk + i];

			rc = pg_check_value(t, t->pk[i], r, v, err);
			if (rc != 0)
				goto out;
			if (i > 0)
				strbuf_str(&json, ",");
			pg_sql_json(&json, column->name, strlen(column->name));
			strbuf_str(&json, ":");
			if (v->text == NULL) {
				strbuf_str(&json, "null");
				continue;
			}
			input.len = 0;
			pg_sql_input(&input, column->kind, v->text, v->len);
			if (!input.failed)
				pg_sql_json(&json, input.text, input.len);
		}
		strbuf_str(&json, "}");
	}
	strbuf_str(&json, "]");
	strbuf_str(&sql, "DELETE FROM ");
	pg_sql_ident(&sql, t->name);
	strbuf_str(&sql, " WHERE (");
	for (int i = 0; i < t->n_pk; i++) {
		if (i > 0)
			strbuf_str(&sql, ", ");
		pg_sql_ident(&sql, t->columns[t->pk[i]].name);
	}
	strbuf_str(&sql, ") IN (SELECT ");
	for (int i = 0; i < t->n_pk; i++) {
		strbuf_str(&sql, i > 0 ? ", \"k\"." : "\"k\".");
		pg_sql_ident(&sql, t->columns[t->pk[i]].name);
	}
	strbuf_str(&sql, " FROM pg_catalog.json_to_recordset("
	                 "$1::pg_catalog.json) AS \"k\" (");
	for (int i = 0; i < t->n_pk; i++) {
		const struct rs_column *column = &t->columns[t->pk[i]];

		if (i > 0)
			strbuf_str(&sql, ", ");
		pg_sql_ident(&sql, column->name);
		strbuf_str(&sql, " ");
		strbuf_str(&sql, column->type);
	}
	strbuf_str(&sql, "))");
	if (sql.failed || json.failed || input.failed) {
		rc = rs_err_set(err, RS_ENOMEM, "out of memory");
		goto out;
	}
	*sql_out = sql.text;
	*json_out = json.text;
	sql.text = NULL;
	json.text = NULL;
out:
	free(sql.text);
	free(json.text);
	free(input.text);
	return rc;
}

char *
pg_sql_scan_begin(const struct rs_table_def *t, const int *columns,
                  int n_columns)
{
	struct rs_strbuf sql = {0};

	strbuf_str(&sql, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; "
	                 "DECLARE reshard_scan NO SCROLL CURSOR FOR SELECT ");
	for (int i = 0; i < n_columns; i++) {
		if (i > 0)
			strbuf_str(&sql, ", ");
		pg_sql_ident(&sql, t->columns[columns[i]].name);
	}
	strbuf_str(&sql, " FROM ");
	pg_sql_ident(&sql, t->name);
	if (sql.failed) {
		free(sql.text);
		return NULL;
	}
	return sql.text;
}

void
pg_sql_scan_fetch(char *buf, size_t size, int limit)
{
	snprintf(buf, size, "FETCH FORWARD %d FROM reshard_scan", limit);
}
