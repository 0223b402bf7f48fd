/*
 * The SQL text of the PostgreSQL engine: see pg_sql.h.  Moved out of pg.c
 * unchanged, so that the statements pg.c sends are byte for byte what they
 * were.
 */
#include "backend/pg_sql.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

/* Append the upsert of T's rows, every column in the table's order, read
 * from $1 (see pg_sql.h) to SQL. */
static void
pg_upsert_text(struct rs_strbuf *sql, const struct rs_table_def *t)
{
	int n_set = 0;

	strbuf_str(sql, "INSERT INTO ");
	pg_sql_ident(sql, t->name);
	strbuf_str(sql, " AS \"target\" (");
	for (int c = 0; c < t->n_columns; c++) {
		if (c > 0)
			strbuf_str(sql, ", ");
		pg_sql_ident(sql, t->columns[c].name);
	}
	strbuf_str(sql, ") OVERRIDING SYSTEM VALUE SELECT ");
	for (int c = 0; c < t->n_columns; c++) {
		strbuf_str(sql, c > 0 ? ", \"r\"." : "\"r\".");
		pg_sql_ident(sql, t->columns[c].name);
		if (t->columns[c].kind == RS_COL_JSON) {
			strbuf_str(sql, "::");
			strbuf_str(sql, t->columns[c].type);
		}
	}
	strbuf_str(sql, " FROM pg_catalog.json_to_recordset("
	                "$1::pg_catalog.json) AS \"r\" (");
	for (int c = 0; c < t->n_columns; c++) {
		if (c > 0)
			strbuf_str(sql, ", ");
		pg_sql_ident(sql, t->columns[c].name);
		strbuf_str(sql, " ");
		strbuf_str(sql, t->columns[c].kind == RS_COL_JSON
		                        ? "text"
		                        : t->columns[c].type);
	}
	strbuf_str(sql, ") ON CONFLICT (");
	for (int i = 0; i < t->n_pk; i++) {
		if (i > 0)
			strbuf_str(sql, ", ");
		pg_sql_ident(sql, t->columns[t->pk[i]].name);
	}
	strbuf_str(sql, ") DO ");
	for (int c = 0; c < t->n_columns; c++) {
		if (pg_in_key(t, c))
			continue;
		strbuf_str(sql, n_set++ > 0 ? ", " : "UPDATE SET ");
		pg_sql_ident(sql, t->columns[c].name);
		strbuf_str(sql, " = EXCLUDED.");
		pg_sql_ident(sql, t->columns[c].name);
	}
	if (n_set == 0)
		strbuf_str(sql, "NOTHING");
}

/* ROWS, each of N values of T's columns COLS (NULL: every column, in
 * order), as the JSON array of objects json_to_recordset reads:
 * [{"c1": "input text", "c2": null, …}, …], into *OUT.  Returns 0,
 * RS_ENOMEM, or RS_EQUERY (a value with a NUL byte), ERR filled. */
static int
pg_rows_json(const struct rs_table_def *t, const struct rs_rows *rows,
             const int *cols, int n, char **out, struct rs_err *err)
{
	struct rs_strbuf json = {0}, input = {0};
	int rc = 0;

	*out = NULL;
	strbuf_str(&json, "[");
	for (int r = 0; r < rows->n_rows && rc == 0; r++) {
		strbuf_str(&json, r > 0 ? ",{" : "{");
		for (int i = 0; i < n && rc == 0; i++) {
			int c = cols != NULL ? cols[i] : i;
			const struct rs_column *column = &t->columns[c];
			const struct rs_value *v =
				&rows->values[(size_t)r * (size_t)n + i];

			rc = pg_check_value(t, c, r, v, err);
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
	if (rc == 0 && (json.failed || input.failed))
		rc = rs_err_set(err, RS_ENOMEM, "out of memory");
	free(input.text);
	if (rc != 0) {
		free(json.text);
		return rc;
	}
	*out = json.text;
	return 0;
}

int
pg_sql_upsert(const struct rs_table_def *t, const struct rs_rows *rows,
              char **sql_out, char **json_out, struct rs_err *err)
{
	struct rs_strbuf sql = {0};
	int rc = pg_rows_json(t, rows, NULL, t->n_columns, json_out, err);

	*sql_out = NULL;
	if (rc != 0)
		return rc;
	pg_upsert_text(&sql, t);
	if ((*sql_out = strbuf_finish(&sql)) == NULL) {
		free(*json_out);
		*json_out = NULL;
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	}
	return 0;
}

/* Append the condition that T's key is one of the keys in $1 (made by
 * pg_rows_json):
 *
 *   ("k1", …) IN (SELECT "k"."k1", … FROM pg_catalog.json_to_recordset(
 *     $1::pg_catalog.json) AS "k" ("k1" TYPE1, …))
 */
static void
pg_keys_in(struct rs_strbuf *sql, const struct rs_table_def *t)
{
	strbuf_str(sql, "(");
	for (int i = 0; i < t->n_pk; i++) {
		if (i > 0)
			strbuf_str(sql, ", ");
		pg_sql_ident(sql, t->columns[t->pk[i]].name);
	}
	strbuf_str(sql, ") IN (SELECT ");
	for (int i = 0; i < t->n_pk; i++) {
		strbuf_str(sql, i > 0 ? ", \"k\"." : "\"k\".");
		pg_sql_ident(sql, t->columns[t->pk[i]].name);
	}
	strbuf_str(sql, " FROM pg_catalog.json_to_recordset("
	                "$1::pg_catalog.json) AS \"k\" (");
	for (int i = 0; i < t->n_pk; i++) {
		const struct rs_column *column = &t->columns[t->pk[i]];

		if (i > 0)
			strbuf_str(sql, ", ");
		pg_sql_ident(sql, column->name);
		strbuf_str(sql, " ");
		strbuf_str(sql, column->type);
	}
	strbuf_str(sql, "))");
}

/* The statement HEAD, then "WHERE" and pg_keys_in, with KEYS as its JSON
 * parameter: into *SQL_OUT and *JSON_OUT, or RS_ENOMEM / RS_EQUERY with
 * ERR filled and both NULL. */
static int
pg_keys_statement(const struct rs_table_def *t, const struct rs_rows *keys,
                  struct rs_strbuf *head, char **sql_out, char **json_out,
                  struct rs_err *err)
{
	int rc = pg_rows_json(t, keys, t->pk, t->n_pk, json_out, err);

	*sql_out = NULL;
	if (rc != 0) {
		strbuf_clear(head);
		return rc;
	}
	strbuf_str(head, " WHERE ");
	pg_keys_in(head, t);
	if ((*sql_out = strbuf_finish(head)) == NULL) {
		free(*json_out);
		*json_out = NULL;
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	}
	return 0;
}

/* Append TEXT (LEN bytes) to BUF as one field of COPY's text format:
 * backslash, tab, newline and carriage return escaped. */
static void
pg_copy_field(struct rs_strbuf *buf, const char *text, size_t len)
{
	size_t run = 0;

	for (size_t i = 0; i < len; i++) {
		const char *escape;

		switch (text[i]) {
		case '\\':
			escape = "\\\\";
			break;
		case '\t':
			escape = "\\t";
			break;
		case '\n':
			escape = "\\n";
			break;
		case '\r':
			escape = "\\r";
			break;
		default:
			continue;
		}
		strbuf_add(buf, text + run, i - run);
		strbuf_str(buf, escape);
		run = i + 1;
	}
	strbuf_add(buf, text + run, len - run);
}

int
pg_sql_load(const struct rs_table_def *t, const struct rs_rows *rows,
            char **sql_out, struct rs_strbuf *data, struct rs_err *err)
{
	struct rs_strbuf sql = {0}, input = {0};
	int rc = 0;

	*sql_out = NULL;
	*data = (struct rs_strbuf){0};
	for (int r = 0; r < rows->n_rows && rc == 0; r++) {
		for (int c = 0; c < t->n_columns && rc == 0; c++) {
			const struct rs_value *v =
				&rows->values[(size_t)r * (size_t)t->n_columns +
			                      (size_t)c];

			rc = pg_check_value(t, c, r, v, err);
			if (c > 0)
				strbuf_add(data, "\t", 1);
			if (v->text == NULL) {
				strbuf_str(data, "\\N");
				continue;
			}
			input.len = 0;
			pg_sql_input(&input, t->columns[c].kind, v->text,
			             v->len);
			if (!input.failed)
				pg_copy_field(data, input.text, input.len);
		}
		strbuf_add(data, "\n", 1);
	}
	strbuf_str(&sql, "COPY ");
	pg_sql_ident(&sql, t->name);
	strbuf_str(&sql, " (");
	for (int c = 0; c < t->n_columns; c++) {
		if (c > 0)
			strbuf_str(&sql, ", ");
		pg_sql_ident(&sql, t->columns[c].name);
	}
	strbuf_str(&sql, ") FROM STDIN");
	free(input.text);
	if (rc == 0 && (data->failed || input.failed || sql.failed))
		rc = rs_err_set(err, RS_ENOMEM, "out of memory");
	if (rc != 0) {
		strbuf_clear(data);
		free(sql.text);
		return rc;
	}
	*sql_out = sql.text;
	return 0;
}

int
pg_sql_delete(const struct rs_table_def *t, const struct rs_rows *keys,
              char **sql_out, char **json_out, struct rs_err *err)
{
	struct rs_strbuf sql = {0};

	strbuf_str(&sql, "DELETE FROM ");
	pg_sql_ident(&sql, t->name);
	return pg_keys_statement(t, keys, &sql, sql_out, json_out, err);
}

int
pg_sql_read_keys(const struct rs_keys_request *request, char **sql_out,
                 char **json_out, struct rs_err *err)
{
	const struct rs_table_def *t = request->table;
	struct rs_strbuf sql = {0};

	strbuf_str(&sql, "SELECT ");
	for (int i = 0; i < t->n_pk; i++) {
		if (i > 0)
			strbuf_str(&sql, ", ");
		pg_sql_ident(&sql, t->columns[t->pk[i]].name);
	}
	for (int i = 0; i < request->n_columns; i++) {
		strbuf_str(&sql, ", ");
		pg_sql_ident(&sql, t->columns[request->columns[i]].name);
	}
	strbuf_str(&sql, " FROM ");
	pg_sql_ident(&sql, t->name);
	return pg_keys_statement(t, request->keys, &sql, sql_out, json_out,
	                         err);
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

/* ---- fence, marker, delete log ---- */

char *
pg_sql_count(const char *table)
{
	struct rs_strbuf sql = {0};

	strbuf_str(&sql, "SELECT count(*) FROM ");
	pg_sql_ident(&sql, table);
	return strbuf_finish(&sql);
}

const char pg_sql_fence_inventory[] =
	"SELECT r.recovery, t.ord, "
	"  pg_catalog.to_regclass(pg_catalog.quote_ident(t.name)) IS NOT NULL "
	"FROM (SELECT pg_catalog.pg_is_in_recovery() AS recovery) AS r "
	"LEFT JOIN LATERAL pg_catalog.json_array_elements_text("
	"  $1::pg_catalog.json) WITH ORDINALITY AS t(name, ord) ON true "
	"ORDER BY t.ord";

/* The message is the trigger's argument: nothing else reaches it. */
const char pg_sql_fence_function[] =
	"CREATE OR REPLACE FUNCTION reshard_fence() RETURNS trigger "
	"LANGUAGE plpgsql AS $reshard$BEGIN "
	"RAISE EXCEPTION USING MESSAGE = TG_ARGV[0], "
	"ERRCODE = '" PG_SQL_FENCE_SQLSTATE "'; "
	"END$reshard$";

const char pg_sql_fence_function_drop[] =
	"DO $reshard$BEGIN "
	"IF pg_catalog.to_regprocedure('reshard_fence()') IS NOT NULL "
	"AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger "
	"WHERE tgfoid = pg_catalog.to_regprocedure('reshard_fence()')) THEN "
	"DROP FUNCTION reshard_fence(); END IF; END$reshard$";

int
pg_sql_fence_table(const char *table, int on, const char *message,
                   const struct pg_sql_literal *literal, char **out,
                   struct rs_err *err)
{
	static const char *const names[2] = {"reshard_fence",
	                                     "reshard_fence_truncate"};
	static const char *const events[2] = {"INSERT OR UPDATE OR DELETE",
	                                      "TRUNCATE"};
	struct rs_strbuf sql = {0}, lit = {0};
	char why[256] = "";

	*out = NULL;
	if (on &&
	    literal->fn(literal->ctx, &lit, message, why, sizeof(why)) != 0) {
		strbuf_clear(&lit);
		return rs_err_set(err, RS_EQUERY,
		                  "the fence's message cannot be written as "
		                  "a literal: %s",
		                  why);
	}
	for (int i = 0; i < 2; i++) {
		strbuf_str(&sql, i > 0 ? "; DROP TRIGGER IF EXISTS "
		                       : "DROP TRIGGER IF EXISTS ");
		strbuf_str(&sql, names[i]);
		strbuf_str(&sql, " ON ");
		pg_sql_ident(&sql, table);
		if (!on)
			continue;
		strbuf_str(&sql, "; CREATE TRIGGER ");
		strbuf_str(&sql, names[i]);
		strbuf_str(&sql, " BEFORE ");
		strbuf_str(&sql, events[i]);
		strbuf_str(&sql, " ON ");
		pg_sql_ident(&sql, table);
		strbuf_str(&sql, " FOR EACH STATEMENT EXECUTE FUNCTION "
		                 "reshard_fence(");
		strbuf_add(&sql, lit.text != NULL ? lit.text : "''",
		           lit.text != NULL ? lit.len : 2);
		strbuf_str(&sql, "); ALTER TABLE ");
		pg_sql_ident(&sql, table);
		strbuf_str(&sql, " ENABLE ALWAYS TRIGGER ");
		strbuf_str(&sql, names[i]);
	}
	strbuf_clear(&lit);
	if (lit.failed || (*out = strbuf_finish(&sql)) == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	return 0;
}

const char pg_sql_fenced[] =
	"SELECT count(*) FROM pg_catalog.pg_trigger "
	"WHERE tgrelid = pg_catalog.to_regclass(pg_catalog.quote_ident($1)) "
	"AND tgname IN ('reshard_fence', 'reshard_fence_truncate')";

const char pg_sql_marker_table[] =
	"CREATE TABLE IF NOT EXISTS reshard_marker (plan text PRIMARY KEY, "
	"run_id text NOT NULL, state text NOT NULL, epoch bigint NOT NULL, "
	"updated_at text NOT NULL)";

const char pg_sql_marker_upsert[] =
	"INSERT INTO reshard_marker AS m (plan, run_id, state, epoch, "
	"updated_at) VALUES ($1, $2, $3, $4::bigint, pg_catalog.to_char("
	"pg_catalog.now() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')) "
	"ON CONFLICT (plan) DO UPDATE SET run_id = EXCLUDED.run_id, "
	"state = EXCLUDED.state, epoch = EXCLUDED.epoch, "
	"updated_at = EXCLUDED.updated_at";

const char pg_sql_marker_exists[] =
	"SELECT pg_catalog.to_regclass('reshard_marker') IS NOT NULL";

const char pg_sql_markers[] = "SELECT plan, run_id, state, epoch, updated_at "
			      "FROM reshard_marker ORDER BY plan";

void
pg_sql_dollar_quote(struct rs_strbuf *buf, const char *body)
{
	char tag[32] = "$reshard$";

	for (int n = 1; strstr(body, tag) != NULL; n++)
		snprintf(tag, sizeof(tag), "$reshard%d$", n);
	strbuf_str(buf, tag);
	strbuf_str(buf, body);
	strbuf_str(buf, tag);
}

/* Append T's key columns, each as PREFIX"name", separated by ", ". */
static void
pg_key_list(struct rs_strbuf *buf, const struct rs_table_def *t,
            const char *prefix)
{
	for (int i = 0; i < t->n_pk; i++) {
		if (i > 0)
			strbuf_str(buf, ", ");
		strbuf_str(buf, prefix);
		pg_sql_ident(buf, t->columns[t->pk[i]].name);
	}
}

/* RS_ESCHEMA: the name LOG of T's WHAT ("delete log") does not fit. */
static int
pg_log_name_too_long(const struct rs_table_def *t, const char *what,
                     const char *log, struct rs_err *err)
{
	return rs_err_set(err, RS_ESCHEMA,
	                  "table %s: the name of its %s, %s, is longer than "
	                  "PostgreSQL's %d bytes; rename the table (at most "
	                  "%d bytes) to reshard it",
	                  t->name, what, log, PG_SQL_NAME_MAX,
	                  PG_SQL_NAME_MAX - (int)strlen(log) +
	                          (int)strlen(t->name));
}

int
pg_sql_delete_log(const struct rs_table_def *t, int on, char **out,
                  struct rs_err *err)
{
	struct rs_strbuf sql = {0}, body = {0};
	char log[PG_SQL_NAME_MAX * 2 + 16];

	*out = NULL;
	backend_delete_log_name(t->name, log, sizeof(log));
	if (strlen(log) > PG_SQL_NAME_MAX)
		return pg_log_name_too_long(t, "delete log", log, err);
	if (!on) {
		strbuf_str(&sql, "DROP TRIGGER IF EXISTS reshard_dellog ON ");
		pg_sql_ident(&sql, t->name);
		strbuf_str(&sql,
		           "; DROP TRIGGER IF EXISTS reshard_dellog_u ON ");
		pg_sql_ident(&sql, t->name);
		strbuf_str(&sql, "; DROP FUNCTION IF EXISTS ");
		pg_sql_ident(&sql, log);
		strbuf_str(&sql, "(); DROP TABLE IF EXISTS ");
		pg_sql_ident(&sql, log);
		goto done;
	}
	strbuf_str(&sql, "CREATE TABLE IF NOT EXISTS ");
	pg_sql_ident(&sql, log);
	strbuf_str(&sql, " (");
	for (int i = 0; i < t->n_pk; i++) {
		if (i > 0)
			strbuf_str(&sql, ", ");
		pg_sql_ident(&sql, t->columns[t->pk[i]].name);
		strbuf_str(&sql, " ");
		strbuf_str(&sql, t->columns[t->pk[i]].type);
	}
	strbuf_str(&sql, ", PRIMARY KEY (");
	pg_key_list(&sql, t, "");
	/* The function runs with the search_path it was made with, so that
	 * an application whose own search_path lacks the log's schema
	 * still logs its deletes. */
	strbuf_str(&sql, ")); CREATE OR REPLACE FUNCTION ");
	pg_sql_ident(&sql, log);
	strbuf_str(&sql, "() RETURNS trigger LANGUAGE plpgsql "
	                 "SET search_path FROM CURRENT AS ");
	strbuf_str(&body, "BEGIN INSERT INTO ");
	pg_sql_ident(&body, log);
	strbuf_str(&body, " (");
	pg_key_list(&body, t, "");
	strbuf_str(&body, ") VALUES (");
	pg_key_list(&body, t, "OLD.");
	strbuf_str(&body, ") ON CONFLICT DO NOTHING; RETURN NULL; END");
	pg_sql_dollar_quote(&sql, body.text != NULL ? body.text : "");
	strbuf_str(&sql, "; DROP TRIGGER IF EXISTS reshard_dellog ON ");
	pg_sql_ident(&sql, t->name);
	strbuf_str(&sql, "; CREATE TRIGGER reshard_dellog AFTER DELETE ON ");
	pg_sql_ident(&sql, t->name);
	strbuf_str(&sql, " FOR EACH ROW WHEN (pg_catalog.current_setting("
	                 "'reshard.purging', true) IS DISTINCT FROM 'on') "
	                 "EXECUTE FUNCTION ");
	pg_sql_ident(&sql, log);
	strbuf_str(&sql, "(); DROP TRIGGER IF EXISTS reshard_dellog_u ON ");
	pg_sql_ident(&sql, t->name);
	strbuf_str(&sql, "; CREATE TRIGGER reshard_dellog_u AFTER UPDATE OF ");
	pg_key_list(&sql, t, "");
	strbuf_str(&sql, " ON ");
	pg_sql_ident(&sql, t->name);
	strbuf_str(&sql, " FOR EACH ROW WHEN ((");
	pg_key_list(&sql, t, "OLD.");
	strbuf_str(&sql, ") IS DISTINCT FROM (");
	pg_key_list(&sql, t, "NEW.");
	strbuf_str(&sql, ") AND pg_catalog.current_setting('reshard.purging', "
	                 "true) IS DISTINCT FROM 'on') EXECUTE FUNCTION ");
	pg_sql_ident(&sql, log);
	strbuf_str(&sql, "()");
done:
	if (body.failed)
		sql.failed = 1;
	strbuf_clear(&body);
	if ((*out = strbuf_finish(&sql)) == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	return 0;
}

/* Append "INSERT INTO log (cols…) VALUES (ROW.cols…); " to BODY. */
static void
pg_capture_insert(struct rs_strbuf *body, const char *log,
                  const struct rs_table_def *t, const int *cols, int n,
                  const char *row)
{
	strbuf_str(body, "INSERT INTO ");
	pg_sql_ident(body, log);
	strbuf_str(body, " (");
	for (int i = 0; i < n; i++) {
		if (i > 0)
			strbuf_str(body, ", ");
		pg_sql_ident(body, t->columns[cols[i]].name);
	}
	strbuf_str(body, ") VALUES (");
	for (int i = 0; i < n; i++) {
		strbuf_str(body, i > 0 ? ", " : "");
		strbuf_str(body, row);
		strbuf_str(body, ".");
		pg_sql_ident(body, t->columns[cols[i]].name);
	}
	strbuf_str(body, "); ");
}

/* Append "(ROW."c1", …)" for the logged columns to BUF. */
static void
pg_capture_row(struct rs_strbuf *buf, const struct rs_table_def *t,
               const int *cols, int n, const char *row)
{
	strbuf_str(buf, "(");
	for (int i = 0; i < n; i++) {
		strbuf_str(buf, i > 0 ? ", " : "");
		strbuf_str(buf, row);
		strbuf_str(buf, ".");
		pg_sql_ident(buf, t->columns[cols[i]].name);
	}
	strbuf_str(buf, ")");
}

int
pg_sql_capture(const struct rs_table_def *t, int key_column, int on, char **out,
               struct rs_err *err)
{
	struct rs_strbuf sql = {0}, body = {0};
	char log[PG_SQL_NAME_MAX * 2 + 16];
	int *cols, n = 0, in_pk = 0;

	*out = NULL;
	backend_change_log_name(t->name, log, sizeof(log));
	if (strlen(log) > PG_SQL_NAME_MAX)
		return pg_log_name_too_long(t, "change log", log, err);
	if ((cols = malloc(sizeof(*cols) * ((size_t)t->n_pk + 1))) == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	for (int i = 0; i < t->n_pk; i++) {
		cols[n++] = t->pk[i];
		in_pk |= t->pk[i] == key_column;
	}
	if (!in_pk)
		cols[n++] = key_column;
	if (!on) {
		strbuf_str(&sql, "DROP TRIGGER IF EXISTS reshard_capture ON ");
		pg_sql_ident(&sql, t->name);
		strbuf_str(&sql, "; DROP FUNCTION IF EXISTS ");
		pg_sql_ident(&sql, log);
		strbuf_str(&sql, "(); DROP TABLE IF EXISTS ");
		pg_sql_ident(&sql, log);
		goto done;
	}
	strbuf_str(&sql, "CREATE TABLE IF NOT EXISTS ");
	pg_sql_ident(&sql, log);
	strbuf_str(&sql, " (reshard_pos bigint GENERATED ALWAYS AS IDENTITY "
	                 "PRIMARY KEY");
	for (int i = 0; i < n; i++) {
		strbuf_str(&sql, ", ");
		pg_sql_ident(&sql, t->columns[cols[i]].name);
		strbuf_str(&sql, " ");
		strbuf_str(&sql, t->columns[cols[i]].type);
	}
	strbuf_str(&sql, "); CREATE OR REPLACE FUNCTION ");
	pg_sql_ident(&sql, log);
	strbuf_str(&sql, "() RETURNS trigger LANGUAGE plpgsql "
	                 "SET search_path FROM CURRENT AS ");
	/* OLD is NULL in an insert's trigger, NEW in a delete's. */
	strbuf_str(&body, "BEGIN IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' "
	                  "AND ");
	pg_capture_row(&body, t, cols, n, "OLD");
	strbuf_str(&body, " IS DISTINCT FROM ");
	pg_capture_row(&body, t, cols, n, "NEW");
	strbuf_str(&body, ") THEN ");
	pg_capture_insert(&body, log, t, cols, n, "OLD");
	strbuf_str(&body, "END IF; IF TG_OP <> 'DELETE' THEN ");
	pg_capture_insert(&body, log, t, cols, n, "NEW");
	strbuf_str(&body, "END IF; RETURN NULL; END");
	pg_sql_dollar_quote(&sql, body.text != NULL ? body.text : "");
	strbuf_str(&sql, "; DROP TRIGGER IF EXISTS reshard_capture ON ");
	pg_sql_ident(&sql, t->name);
	strbuf_str(&sql, "; CREATE TRIGGER reshard_capture AFTER INSERT OR "
	                 "UPDATE OR DELETE ON ");
	pg_sql_ident(&sql, t->name);
	strbuf_str(&sql, " FOR EACH ROW EXECUTE FUNCTION ");
	pg_sql_ident(&sql, log);
	strbuf_str(&sql, "(); ALTER TABLE ");
	pg_sql_ident(&sql, t->name);
	strbuf_str(&sql, " ENABLE ALWAYS TRIGGER reshard_capture");
done:
	free(cols);
	if (body.failed)
		sql.failed = 1;
	strbuf_clear(&body);
	if ((*out = strbuf_finish(&sql)) == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	return 0;
}

/* ---- replication ---- */

const char pg_sql_replica_facts[] =
	"SELECT pg_catalog.pg_is_in_recovery(), "
	"  (pg_catalog.pg_control_system()).system_identifier::text, "
	"  pg_catalog.current_setting('server_version_num')::int, "
	"  w.status, w.sender_host, w.sender_port, w.slot_name, w.conninfo, "
	"  (SELECT count(*) FROM pg_catalog.pg_stat_replication), "
	"  (SELECT pg_catalog.string_agg(coalesce(r.application_name, '') "
	"     || '@' || coalesce(r.client_addr::text, 'local'), ', ') "
	"     FROM pg_catalog.pg_stat_replication AS r), "
	"  w.pid IS NOT NULL "
	"FROM (SELECT 1) AS one "
	"LEFT JOIN pg_catalog.pg_stat_wal_receiver AS w ON true";

const char pg_sql_primary_facts[] =
	"SELECT pg_catalog.pg_is_in_recovery(), "
	"  (pg_catalog.pg_control_system()).system_identifier::text, "
	"  pg_catalog.current_setting('server_version_num')::int, "
	"  CASE WHEN pg_catalog.pg_is_in_recovery() THEN NULL "
	"       ELSE pg_catalog.pg_current_wal_flush_lsn()::text END, "
	"  pg_catalog.current_setting('synchronous_standby_names'), "
	"  s.found, s.sync, s.app "
	"FROM (SELECT count(*) AS found, "
	"        coalesce(bool_or(r.sync_state IN ('sync', 'quorum')), false) "
	"          AS sync, "
	"        min(r.application_name) AS app "
	"      FROM pg_catalog.pg_stat_replication AS r "
	"      WHERE CASE WHEN $1::text <> '' "
	"        THEN r.pid = (SELECT p.active_pid "
	"                      FROM pg_catalog.pg_replication_slots AS p "
	"                      WHERE p.slot_name::text = $1::text) "
	"        ELSE r.application_name = $2::text END) AS s";

const char pg_sql_replica_lag[] =
	"SELECT LEAST(GREATEST(pg_catalog.pg_wal_lsn_diff("
	"  $1::pg_catalog.pg_lsn, pg_catalog.pg_last_wal_replay_lsn()), 0), "
	"  9223372036854775807)::bigint, "
	"  (extract(epoch FROM pg_catalog.now() - "
	"    pg_catalog.pg_last_xact_replay_timestamp()) * 1000)::bigint, "
	"  pg_catalog.pg_is_wal_replay_paused()";

const char pg_sql_position[] =
	"SELECT pg_catalog.pg_current_wal_flush_lsn()::text";

/* Bytes behind are at most 2^63 - 1: a position can be 2^64 - 1. */
const char pg_sql_catch_up[] =
	"SELECT pg_catalog.pg_last_wal_replay_lsn() IS NULL, "
	"  pg_catalog.pg_last_wal_replay_lsn() >= $1::pg_catalog.pg_lsn, "
	"  LEAST(GREATEST(pg_catalog.pg_wal_lsn_diff($1::pg_catalog.pg_lsn, "
	"    pg_catalog.pg_last_wal_replay_lsn()), 0), "
	"    9223372036854775807)::bigint, "
	"  CASE WHEN pg_catalog.pg_is_in_recovery() "
	"    THEN pg_catalog.pg_is_wal_replay_paused() ELSE false END, "
	"  EXISTS (SELECT 1 FROM pg_catalog.pg_stat_wal_receiver)";

const char pg_sql_in_recovery[] = "SELECT pg_catalog.pg_is_in_recovery()";

/* replay_lag is measured when a standby reports and stays as it was
 * until the next report: a standby that stopped replaying while the
 * primary was quiet keeps the small lag of its last report, for up to
 * wal_receiver_status_interval and longer.  So a standby that has not
 * reported the primary's flushed WAL as replayed is behind by its last
 * lag plus the time since that report (exact for one that replays
 * nothing, an upper bound otherwise), and one that has is not behind,
 * however late its last lag was measured.  Walsenders without a replay
 * position (pg_basebackup, pg_receivewal) are no standbys. */
const char pg_sql_downstream_lag[] =
	"SELECT coalesce(max((extract(epoch FROM "
	"  coalesce(replay_lag, interval '0') + "
	"  greatest(pg_catalog.clock_timestamp() - reply_time, interval '0')) "
	"  * 1000)::bigint), -1) "
	"FROM pg_catalog.pg_stat_replication "
	"WHERE replay_lsn < pg_catalog.pg_current_wal_flush_lsn()";

void
pg_sql_promote(char *buf, size_t size, int wait_s)
{
	snprintf(buf, size, "SELECT pg_catalog.pg_promote(true, %d)",
	         wait_s > 0 ? wait_s : 1);
}

const char pg_sql_slot_name[] =
	"SELECT pg_catalog.pg_is_in_recovery(), "
	"  pg_catalog.current_setting('primary_slot_name', true)";

const char pg_sql_slot_state[] =
	"SELECT active, active_pid FROM pg_catalog.pg_replication_slots "
	"WHERE slot_name::text = $1::text AND slot_type = 'physical'";

const char pg_sql_slot_drop[] =
	"SELECT pg_catalog.pg_drop_replication_slot(slot_name) "
	"FROM pg_catalog.pg_replication_slots "
	"WHERE slot_name::text = $1::text AND slot_type = 'physical' "
	"AND NOT active";

/* The next token of synchronous_standby_names at *P into TOK (SIZE
 * bytes): a name (quoted or not), a number, or one of "(),", with
 * *QUOTED set for a quoted name.  0 at the end. */
static int
pg_ssn_token(const char **p, char *tok, size_t size, int *quoted)
{
	const char *s = *p;
	size_t n = 0;

	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	*quoted = 0;
	if (*s == '\0')
		return 0;
	if (*s == '(' || *s == ')' || *s == ',') {
		tok[0] = *s;
		tok[1] = '\0';
		*p = s + 1;
		return 1;
	}
	if (*s == '"') {
		*quoted = 1;
		for (s++; *s != '\0'; s++) {
			if (*s == '"' && s[1] == '"')
				s++;
			else if (*s == '"')
				break;
			if (n + 1 < size)
				tok[n++] = *s;
		}
		if (*s == '"')
			s++;
	} else {
		for (; *s != '\0' && strchr(" \t\n\r(),\"", *s) == NULL; s++)
			if (n + 1 < size)
				tok[n++] = *s;
	}
	tok[n] = '\0';
	*p = s;
	return 1;
}

static int
pg_all_digits(const char *s)
{
	if (*s == '\0')
		return 0;
	for (; *s != '\0'; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

int
pg_sql_sync_listed(const char *names, const char *name)
{
	char tok[64][128];
	int quoted[64], n = 0, first = 0;
	const char *p = names != NULL ? names : "";

	while (n < 64 && pg_ssn_token(&p, tok[n], sizeof(tok[n]), &quoted[n]))
		n++;
	/* "FIRST 2 (…)", "ANY 1 (…)", "2 (…)": syntax, not names. */
	if (n > 1 && !quoted[0] &&
	    (strcasecmp(tok[0], "FIRST") == 0 ||
	     strcasecmp(tok[0], "ANY") == 0) &&
	    pg_all_digits(tok[1]))
		first = 1;
	if (first + 1 < n && pg_all_digits(tok[first]) &&
	    strcmp(tok[first + 1], "(") == 0)
		first += 2;
	for (int i = first; i < n; i++) {
		if (!quoted[i] &&
		    (strcmp(tok[i], "(") == 0 || strcmp(tok[i], ")") == 0 ||
		     strcmp(tok[i], ",") == 0 || tok[i][0] == '\0'))
			continue;
		if ((!quoted[i] && strcmp(tok[i], "*") == 0) ||
		    (name != NULL && strcasecmp(tok[i], name) == 0))
			return 1;
	}
	return 0;
}

int
pg_sql_conninfo_value(const char *conninfo, const char *key, char *buf,
                      size_t size)
{
	const char *s = conninfo != NULL ? conninfo : "";
	size_t klen = strlen(key);

	if (size > 0)
		buf[0] = '\0';
	while (*s != '\0') {
		const char *name;
		size_t nlen, n = 0;
		int match;

		while (*s == ' ' || *s == '\t' || *s == '\n')
			s++;
		name = s;
		while (*s != '\0' && *s != '=' && *s != ' ' && *s != '\t')
			s++;
		nlen = (size_t)(s - name);
		while (*s == ' ' || *s == '\t')
			s++;
		if (*s != '=')
			return 0; /* not a connection string */
		s++;
		while (*s == ' ' || *s == '\t')
			s++;
		match = nlen == klen && strncmp(name, key, klen) == 0;
		if (*s == '\'') {
			for (s++; *s != '\0' && *s != '\''; s++) {
				if (*s == '\\' && s[1] != '\0')
					s++;
				if (match && n + 1 < size)
					buf[n++] = *s;
			}
			if (*s == '\'')
				s++;
		} else {
			for (; *s != '\0' && *s != ' ' && *s != '\t' &&
			       *s != '\n';
			     s++) {
				if (*s == '\\' && s[1] != '\0')
					s++;
				if (match && n + 1 < size)
					buf[n++] = *s;
			}
		}
		if (match) {
			if (size > 0)
				buf[n] = '\0';
			return 1;
		}
	}
	return 0;
}

/* Whether HOST means "the machine one is on": empty (the default socket),
 * a socket directory, "localhost", 127.0.0.0/8 or ::1. */
static int
pg_host_local(const char *host)
{
	return host == NULL || host[0] == '\0' || host[0] == '/' ||
	       host[0] == '@' || strcasecmp(host, "localhost") == 0 ||
	       strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0 ||
	       strcasecmp(host, "localhost.localdomain") == 0;
}

int
pg_sql_same_host(const char *sender, const char *replica, const char *primary)
{
	/* The replica's "this machine" is reshard's only when reshard
	 * reaches the replica on its own machine. */
	if (pg_host_local(sender) && !pg_host_local(replica))
		sender = replica;
	if (pg_host_local(sender) || pg_host_local(primary))
		return pg_host_local(sender) && pg_host_local(primary);
	return strcasecmp(sender, primary) == 0;
}
