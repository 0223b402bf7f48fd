/*
 * The SQL text of the MariaDB/MySQL engine: see mysql_sql.h.  Moved out
 * of mysql.c unchanged but for the escaping, now the caller's function,
 * and the hex of X'…' key literals, written here as mysql_hex_string
 * did, so that the statements mysql.c sends are byte for byte what they
 * were.
 */
#include "backend/mysql_sql.h"

#include "backend/backend_engine.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void
mysql_sql_ident(struct rs_strbuf *b, const char *name)
{
	strbuf_quoted(b, name, '`');
}

void
mysql_sql_column(struct rs_strbuf *b, const struct rs_column *col)
{
	if (col->kind == RS_COL_FLOAT4) {
		strbuf_str(b, "CAST(");
		mysql_sql_ident(b, col->name);
		strbuf_str(b, " AS DOUBLE)");
		return;
	}
	mysql_sql_ident(b, col->name);
}

/* The escaping is the driver's, for the connection's character set and
 * sql_mode (see mysql_sql.h). */
int
mysql_sql_quoted(struct rs_strbuf *b, const struct mysql_sql_escape *esc,
                 const char *text, size_t len)
{
	size_t n;

	if (len > (SIZE_MAX - 4) / 2 || strbuf_reserve(b, 2 * len + 3) != 0)
		return -1;
	b->text[b->len++] = '\'';
	n = esc->fn(esc->ctx, b->text + b->len, text, len);
	if (n == (size_t)-1)
		return -1;
	b->len += n;
	b->text[b->len++] = '\'';
	b->text[b->len] = '\0';
	return 0;
}

/* Whether V is a plain integer: optional '-', then digits. */
static int
my_is_integer(const struct rs_value *v)
{
	size_t i = v->len > 0 && v->text[0] == '-' ? 1 : 0;

	if (i == v->len)
		return 0;
	for (; i < v->len; i++)
		if (v->text[i] < '0' || v->text[i] > '9')
			return 0;
	return 1;
}

int
mysql_sql_json_checks(const char *server_info, unsigned long version)
{
	return server_info != NULL && strstr(server_info, "MariaDB") != NULL &&
	       (version >= 100310 || (version >= 100222 && version < 100300));
}

int
mysql_sql_describe(struct rs_strbuf *b, const struct mysql_sql_escape *esc,
                   const char *table, int json)
{
	struct rs_strbuf lit = {NULL, 0, 0, 0};

	if (mysql_sql_quoted(&lit, esc, table, strlen(table)) != 0) {
		free(lit.text);
		return -1;
	}
	/* Every catalog table is read in its own query block whose WHERE
	 * names the schema and the table as constants, so that the server
	 * opens only this table's metadata ("Scanned 0 databases" in
	 * EXPLAIN) instead of every table of every database: constants in a
	 * LEFT JOIN's ON clause are not used for that.  DISTINCT keeps the
	 * derived tables from being merged into the outer query (which would
	 * move their conditions into the ON clause again); the keys they are
	 * joined on are unique anyway. */
	strbuf_str(b, "SELECT c.COLUMN_NAME, c.COLUMN_TYPE, s.SEQ_IN_INDEX, "
	              "(SELECT t.TABLE_ROWS FROM information_schema.TABLES t "
	              "WHERE t.TABLE_SCHEMA = DATABASE() AND t.TABLE_NAME = ");
	strbuf_str(b, lit.text);
	strbuf_str(b, "), ");
	strbuf_str(b, json ? "k.CONSTRAINT_NAME IS NOT NULL" : "0");
	/* The foreign keys InnoDB changes this table's rows through,
	 * without firing its triggers (rs_table_def.cascades); an
	 * uncorrelated subquery, evaluated once. */
	strbuf_str(b, ", (SELECT GROUP_CONCAT(CONCAT(r.CONSTRAINT_NAME, "
	              "' (references ', r.REFERENCED_TABLE_NAME, "
	              "': ON DELETE ', r.DELETE_RULE, ', ON UPDATE ', "
	              "r.UPDATE_RULE, ')') ORDER BY r.CONSTRAINT_NAME "
	              "SEPARATOR ', ') FROM "
	              "information_schema.REFERENTIAL_CONSTRAINTS r WHERE "
	              "r.CONSTRAINT_SCHEMA = DATABASE() AND r.TABLE_NAME = ");
	strbuf_str(b, lit.text);
	strbuf_str(b, " AND (r.DELETE_RULE IN ('CASCADE', 'SET NULL', "
	              "'SET DEFAULT') OR r.UPDATE_RULE IN ('CASCADE', "
	              "'SET NULL', 'SET DEFAULT')))");
	/* A column the server computes (VIRTUAL or STORED GENERATED; not
	 * MySQL's DEFAULT_GENERATED, a default). */
	strbuf_str(b, ", c.EXTRA REGEXP '(VIRTUAL|STORED|PERSISTENT) "
	              "GENERATED'");
	/* The unique indexes other than the primary key this column is a
	 * key part of, as backend_table_uniques reads them: an id (the
	 * CRC-32 of the index's name), the position (0 for a prefix), the
	 * index's parts (a MySQL functional part counts, matching no
	 * column). */
	strbuf_str(b, ", (SELECT GROUP_CONCAT(CONCAT(CRC32(u.INDEX_NAME), "
	              "':', IF(u.SUB_PART IS NULL, u.SEQ_IN_INDEX, 0), ':', "
	              "(SELECT COUNT(*) FROM information_schema.STATISTICS v "
	              "WHERE v.TABLE_SCHEMA = DATABASE() AND v.TABLE_NAME = ");
	strbuf_str(b, lit.text);
	strbuf_str(b, " AND v.INDEX_NAME = u.INDEX_NAME)) SEPARATOR ',') "
	              "FROM information_schema.STATISTICS u WHERE "
	              "u.TABLE_SCHEMA = DATABASE() AND u.TABLE_NAME = ");
	strbuf_str(b, lit.text);
	strbuf_str(b, " AND u.NON_UNIQUE = 0 AND u.INDEX_NAME <> 'PRIMARY' "
	              "AND u.COLUMN_NAME = c.COLUMN_NAME)");
	strbuf_str(b, " FROM information_schema.COLUMNS c "
	              "LEFT JOIN (SELECT DISTINCT s.COLUMN_NAME, "
	              "s.SEQ_IN_INDEX FROM information_schema.STATISTICS s "
	              "WHERE s.TABLE_SCHEMA = DATABASE() AND s.TABLE_NAME = ");
	strbuf_str(b, lit.text);
	strbuf_str(b, " AND s.INDEX_NAME = 'PRIMARY') s "
	              "ON s.COLUMN_NAME = c.COLUMN_NAME");
	if (json) {
		strbuf_str(b, " LEFT JOIN (SELECT DISTINCT k.CONSTRAINT_NAME "
		              "FROM information_schema.CHECK_CONSTRAINTS k "
		              "WHERE k.CONSTRAINT_SCHEMA = DATABASE() "
		              "AND k.TABLE_NAME = ");
		strbuf_str(b, lit.text);
		strbuf_str(b, " AND k.CHECK_CLAUSE = CONCAT('json_valid(`', "
		              "REPLACE(k.CONSTRAINT_NAME, '`', '``'), '`)')) k "
		              "ON k.CONSTRAINT_NAME = c.COLUMN_NAME");
	}
	strbuf_str(b, " WHERE c.TABLE_SCHEMA = DATABASE() AND "
	              "c.TABLE_NAME = ");
	strbuf_str(b, lit.text);
	strbuf_str(b, " ORDER BY c.ORDINAL_POSITION");
	free(lit.text);
	return b->failed ? -1 : 0;
}

/* Append to B the condition that keeps T's rows after the key KEY
 * (LOWER, exclusive) or up to it (inclusive), KEY being the n_pk values in
 * canonical form (mysql_sql_canon turns them into literals):
 *   after:  a >= A AND ((a > A) OR (a = A AND b > B))
 *   upto:   a <= A AND ((a < A) OR (a = A AND b <= B))
 * The leading comparison on the first key column gives the optimizer a
 * range on the key; with one key column it is the whole condition.
 * Returns 0; -1 (memory, or the escaping refused a value); or 1 with
 * *WHY and *COLUMN naming a value mysql_sql_canon refused. */
static int
my_buf_bound(struct rs_strbuf *b, const struct mysql_sql_escape *esc,
             const struct rs_table_def *t, const struct rs_value *key,
             int lower, const char **why, const char **column)
{
	struct rs_strbuf *lits = calloc((size_t)t->n_pk, sizeof(*lits));
	const char *strict = lower ? " > " : " < ";
	const char *last = lower ? " > " : " <= ";
	int rc;

	if (lits == NULL)
		return -1;
	for (int i = 0; i < t->n_pk; i++) {
		rc = mysql_sql_canon(&lits[i], esc, t->columns[t->pk[i]].kind,
		                     &key[i], why);
		if (rc == 1)
			*column = t->columns[t->pk[i]].name;
		if (rc != 0 || lits[i].failed) {
			rc = rc == 1 ? 1 : -1;
			goto out;
		}
	}
	if (t->n_pk > 1) {
		mysql_sql_ident(b, t->columns[t->pk[0]].name);
		strbuf_str(b, lower ? " >= " : " <= ");
		strbuf_str(b, lits[0].text);
		strbuf_str(b, " AND (");
	}
	for (int i = 0; i < t->n_pk; i++) {
		if (i > 0)
			strbuf_str(b, " OR ");
		strbuf_str(b, "(");
		for (int j = 0; j <= i; j++) {
			if (j > 0)
				strbuf_str(b, " AND ");
			mysql_sql_ident(b, t->columns[t->pk[j]].name);
			strbuf_str(b, j < i             ? " = "
			              : i < t->n_pk - 1 ? strict
			                                : last);
			strbuf_str(b, lits[j].text);
		}
		strbuf_str(b, ")");
	}
	if (t->n_pk > 1)
		strbuf_str(b, ")");
	rc = b->failed ? -1 : 0;
out:
	for (int i = 0; i < t->n_pk; i++)
		free(lits[i].text);
	free(lits);
	return rc;
}

/* Append "SELECT keys…, COLUMNS… FROM `t`" for a read of T: its key
 * columns as they compare (backend.c makes their text canonical), then
 * the N_COLUMNS COLUMNS (indexes into T's) as mysql_sql_column reads
 * them. */
static void
my_select(struct rs_strbuf *b, const struct rs_table_def *t, const int *columns,
          int n_columns)
{
	strbuf_str(b, "SELECT ");
	for (int i = 0; i < t->n_pk + n_columns; i++) {
		int col = i < t->n_pk ? t->pk[i] : columns[i - t->n_pk];

		if (i > 0)
			strbuf_str(b, ", ");
		if (i < t->n_pk) /* keys come back as they compare */
			mysql_sql_ident(b, t->columns[col].name);
		else
			mysql_sql_column(b, &t->columns[col]);
	}
	strbuf_str(b, " FROM ");
	mysql_sql_ident(b, t->name);
}

/* The conditions are my_buf_bound's. */
int
mysql_sql_read(struct rs_strbuf *b, const struct mysql_sql_escape *esc,
               const struct rs_read_request *request, const char **why,
               const char **column)
{
	const struct rs_table_def *t = request->table;
	char limit[32];
	int rc;

	my_select(b, t, request->columns, request->n_columns);
	if (request->after != NULL) {
		strbuf_str(b, " WHERE ");
		rc = my_buf_bound(b, esc, t, request->after, 1, why, column);
		if (rc != 0)
			return rc;
	}
	if (request->upto != NULL) {
		strbuf_str(b, request->after != NULL ? " AND " : " WHERE ");
		rc = my_buf_bound(b, esc, t, request->upto, 0, why, column);
		if (rc != 0)
			return rc;
	}
	strbuf_str(b, " ORDER BY ");
	for (int i = 0; i < t->n_pk; i++) {
		if (i > 0)
			strbuf_str(b, ", ");
		mysql_sql_ident(b, t->columns[t->pk[i]].name);
	}
	snprintf(limit, sizeof(limit), " LIMIT %d", request->limit);
	strbuf_str(b, limit);
	return b->failed ? -1 : 0;
}

void
mysql_sql_scan(struct rs_strbuf *b, const struct rs_table_def *t,
               const int *columns, int n_columns)
{
	strbuf_str(b, "SELECT ");
	for (int i = 0; i < n_columns; i++) {
		if (i > 0)
			strbuf_str(b, ", ");
		mysql_sql_column(b, &t->columns[columns[i]]);
	}
	strbuf_str(b, " FROM ");
	mysql_sql_ident(b, t->name);
}

/* Whether the LEN bytes at P are all decimal digits (and LEN > 0). */
static int
my_digits(const char *p, size_t len)
{
	if (len == 0)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (p[i] < '0' || p[i] > '9')
			return 0;
	return 1;
}

/* Whether V is a plain decimal: -digits[.digits], and with EXPONENT also
 * e[+-]digits after it. */
static int
my_is_decimal(const struct rs_value *v, int exponent)
{
	size_t i = v->len > 0 && v->text[0] == '-' ? 1 : 0;
	size_t start = i;

	while (i < v->len && v->text[i] >= '0' && v->text[i] <= '9')
		i++;
	if (i == start)
		return 0;
	if (i < v->len && v->text[i] == '.') {
		start = ++i;
		while (i < v->len && v->text[i] >= '0' && v->text[i] <= '9')
			i++;
		if (i == start)
			return 0;
	}
	if (exponent && i < v->len &&
	    (v->text[i] == 'e' || v->text[i] == 'E')) {
		i++;
		if (i < v->len && (v->text[i] == '+' || v->text[i] == '-'))
			i++;
		start = i;
		while (i < v->len && v->text[i] >= '0' && v->text[i] <= '9')
			i++;
		if (i == start)
			return 0;
	}
	return i == v->len;
}

/* Whether V is NaN or an infinity, as the canonical form spells them. */
static int
my_is_nonfinite(const struct rs_value *v)
{
	static const char *const names[] = {"NaN", "Infinity", "-Infinity"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (v->len == strlen(names[i]) &&
		    memcmp(v->text, names[i], v->len) == 0)
			return 1;
	return 0;
}

/* Whether the LEN bytes at P are YYYY-MM-DD (a year MariaDB can store). */
static int
my_is_date(const char *p, size_t len)
{
	return len == 10 && my_digits(p, 4) && p[4] == '-' &&
	       my_digits(p + 5, 2) && p[7] == '-' && my_digits(p + 8, 2);
}

/* Whether the LEN bytes at P are HH:MM:SS[.f…], or with DURATION (a
 * MariaDB TIME, up to ±838 hours) [-]HH[H]:MM:SS[.f…]. */
static int
my_is_time(const char *p, size_t len, int duration)
{
	size_t i = duration && len > 0 && p[0] == '-' ? 1 : 0;
	size_t h = i;

	while (i < len && p[i] >= '0' && p[i] <= '9')
		i++;
	if (i - h < 2 || i - h > (duration ? 3u : 2u) || len - i < 6 ||
	    p[i] != ':' || !my_digits(p + i + 1, 2) || p[i + 3] != ':' ||
	    !my_digits(p + i + 4, 2))
		return 0;
	i += 6;
	if (i == len)
		return 1;
	return p[i] == '.' && my_digits(p + i + 1, len - i - 1);
}

/* Append to B the value V of a column of KIND, given in the canonical form
 * of backend/canonical.h, as MariaDB input:
 *   NULL                    NULL
 *   integer, decimal        as they are, once checked to be plain numbers
 *                           (a decimal literal stays exact; a quoted
 *                           number compared with a key would go through
 *                           a double)
 *   float                   the same with "e0" appended, which makes it a
 *                           double literal read exactly (a long decimal
 *                           literal would be rounded to 38 places first)
 *   bool                    t/f as 1/0
 *   bytes                   lowercase hex as X'…'
 *   date, time              quoted as they are
 *   timestamp, timestamptz  quoted, 'T' turned into ' ' and the 'Z'
 *                           dropped (the session's time zone is UTC)
 *   others                  quoted
 * Quoted text is escaped by ESC. */
/* Append TEXT (LEN bytes) as a field of LOAD DATA's text format (fields
 * ended by a tab, lines by a newline, escapes by a backslash): a
 * backslash, tab, newline and NUL escaped.  Returns 0 or -1. */
static int
my_load_text(struct rs_strbuf *b, const char *text, size_t len)
{
	size_t from = 0;

	for (size_t i = 0; i < len; i++) {
		const char *esc;

		switch (text[i]) {
		case '\\':
			esc = "\\\\";
			break;
		case '\t':
			esc = "\\t";
			break;
		case '\n':
			esc = "\\n";
			break;
		case '\0':
			esc = "\\0";
			break;
		default:
			continue;
		}
		strbuf_add(b, text + from, i - from);
		strbuf_add(b, esc, 2);
		from = i + 1;
	}
	strbuf_add(b, text + from, len - from);
	return b->failed ? -1 : 0;
}

/* mysql_sql_canon, or with FIELD the same value as a field of LOAD DATA
 * (mysql_sql_load): NULL as \N, bytes as bare hex (the load's SET
 * unhexes them), quoted text bare with LOAD DATA's escapes. */
static int
my_canon(struct rs_strbuf *b, const struct mysql_sql_escape *esc,
         enum rs_col_kind kind, const struct rs_value *v, const char **why,
         int field)
{
	const char *p = v->text;
	size_t len = v->len;
	char stamp[64];

	if (p == NULL) {
		strbuf_str(b, field ? "\\N" : "NULL");
		return b->failed ? -1 : 0;
	}
	switch (kind) {
	case RS_COL_INTEGER:
		if (!my_is_integer(v)) {
			*why = "is not an integer";
			return 1;
		}
		strbuf_add(b, p, len);
		return b->failed ? -1 : 0;
	case RS_COL_DECIMAL:
	case RS_COL_FLOAT:
	case RS_COL_FLOAT4:
		if (my_is_nonfinite(v)) {
			*why = "is not finite: MariaDB stores no NaN or "
			       "infinity";
			return 1;
		}
		if (!my_is_decimal(v, kind != RS_COL_DECIMAL)) {
			*why = kind != RS_COL_DECIMAL
			               ? "is not a number"
			               : "is not a plain decimal";
			return 1;
		}
		strbuf_add(b, p, len);
		if (kind != RS_COL_DECIMAL && memchr(p, 'e', len) == NULL &&
		    memchr(p, 'E', len) == NULL)
			strbuf_str(b, "e0");
		return b->failed ? -1 : 0;
	case RS_COL_BOOL:
		if (len != 1 || (p[0] != 't' && p[0] != 'f')) {
			*why = "is not a boolean (t or f)";
			return 1;
		}
		strbuf_str(b, p[0] == 't' ? "1" : "0");
		return b->failed ? -1 : 0;
	case RS_COL_BYTES:
		if (len % 2 != 0 || len > SIZE_MAX - 4) {
			*why = "is not hex (two digits a byte)";
			return 1;
		}
		for (size_t i = 0; i < len; i++)
			if (!((p[i] >= '0' && p[i] <= '9') ||
			      (p[i] >= 'a' && p[i] <= 'f') ||
			      (p[i] >= 'A' && p[i] <= 'F'))) {
				*why = "is not hex (two digits a byte)";
				return 1;
			}
		if (!field)
			strbuf_add(b, "X'", 2);
		strbuf_add(b, p, len);
		if (!field)
			strbuf_add(b, "'", 1);
		return b->failed ? -1 : 0;
	case RS_COL_DATE:
		if (!my_is_date(p, len)) {
			*why = "is not a date MariaDB can store (YYYY-MM-DD, "
			       "years 0000 to 9999)";
			return 1;
		}
		break;
	case RS_COL_TIME:
		if (!my_is_time(p, len, 1)) {
			*why = "is not a time ([-]HH:MM:SS[.ffffff])";
			return 1;
		}
		break;
	case RS_COL_TIMESTAMP:
	case RS_COL_TIMESTAMPTZ:
		if (kind == RS_COL_TIMESTAMPTZ) {
			if (len == 0 || p[len - 1] != 'Z') {
				*why = "is not a timestamp in UTC "
				       "(YYYY-MM-DDTHH:MM:SS.ffffffZ, years "
				       "0000 to 9999)";
				return 1;
			}
			len--;
		}
		if (len < 11 || len >= sizeof(stamp) || !my_is_date(p, 10) ||
		    (p[10] != 'T' && p[10] != ' ') ||
		    !my_is_time(p + 11, len - 11, 0)) {
			*why = kind == RS_COL_TIMESTAMPTZ
			               ? "is not a timestamp in UTC "
			                 "(YYYY-MM-DDTHH:MM:SS.ffffffZ, years "
			                 "0000 to 9999)"
			               : "is not a timestamp "
			                 "(YYYY-MM-DDTHH:MM:SS.ffffff, years "
			                 "0000 to 9999)";
			return 1;
		}
		memcpy(stamp, p, len);
		stamp[10] = ' ';
		p = stamp;
		break;
	default: /* text, char, json, uuid, other */
		break;
	}
	if (field)
		return my_load_text(b, p, len);
	return mysql_sql_quoted(b, esc, p, len) != 0 || b->failed ? -1 : 0;
}

int
mysql_sql_canon(struct rs_strbuf *b, const struct mysql_sql_escape *esc,
                enum rs_col_kind kind, const struct rs_value *v,
                const char **why)
{
	return my_canon(b, esc, kind, v, why, 0);
}

/* Fill ERR for value V of row ROW (from 0) of a batch for TABLE, column
 * COL, that mysql_sql_canon could not convert (RC 1, with WHY) or that ran
 * out of memory (RC -1 with OOM set) or that the escaping refused. */
static int
my_canon_fail(struct rs_err *err, const char *what,
              const struct rs_table_def *t, int row, int col,
              const struct rs_value *v, int rc, const char *why, int oom)
{
	const struct rs_column *c = &t->columns[col];
	int shown = v->len > 40 ? 40 : (int)v->len;

	if (rc < 0 && oom)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	if (rc < 0)
		why = "was refused by the MariaDB driver's escaping";
	return rs_err_set(err, RS_EVALUE,
	                  "%s table %s: row %d, column %s (%s, %s): value "
	                  "'%.*s'%s %s",
	                  what, t->name, row + 1, c->name, c->type,
	                  canonical_kind_name(c->kind), shown, v->text,
	                  v->len > 40 ? "…" : "", why);
}

int
mysql_sql_push(struct mysql_sql_stmts *stmts, struct rs_strbuf *s,
               int first_row, int n_rows)
{
	if (s->failed) {
		strbuf_clear(s);
		return -1;
	}
	if (stmts->n == stmts->cap) {
		int cap = stmts->cap > 0 ? stmts->cap * 2 : 4;
		struct mysql_sql_stmt *more =
			realloc(stmts->v, (size_t)cap * sizeof(*more));

		if (more == NULL) {
			strbuf_clear(s);
			return -1;
		}
		stmts->v = more;
		stmts->cap = cap;
	}
	stmts->v[stmts->n++] =
		(struct mysql_sql_stmt){s->text, s->len, first_row, n_rows};
	*s = (struct rs_strbuf){0};
	return 0;
}

void
mysql_sql_stmts_free(struct mysql_sql_stmts *stmts)
{
	for (int i = 0; i < stmts->n; i++)
		free(stmts->v[i].sql);
	free(stmts->v);
	*stmts = (struct mysql_sql_stmts){0};
}

/* Rows packed into multi-row statements (an upsert's VALUES, a delete's IN
 * list): each statement is HEAD, rows separated by ", ", then CLOSE, and
 * is queued with mysql_sql_push once one more row would take it past
 * MYSQL_SQL_STMT_BYTES or MAX_ROWS rows.  FAILED is sticky, as in a strbuf. */
struct my_pack {
	struct mysql_sql_stmts *stmts;
	struct rs_strbuf head;  /* opens a statement */
	struct rs_strbuf close; /* ends one */
	int max_rows;
	struct rs_strbuf stmt; /* the statement being packed */
	int first;             /* its first row */
	int failed;            /* out of memory */
};

/* Add ROW, the text of row R. */
static void
my_pack_row(struct my_pack *p, const struct rs_strbuf *row, int r)
{
	p->failed |= p->head.failed || p->close.failed || row->failed;
	if (p->failed)
		return;
	if (p->stmt.len > 0 && (r - p->first >= p->max_rows ||
	                        p->stmt.len + 2 + row->len + p->close.len >
	                                MYSQL_SQL_STMT_BYTES)) {
		strbuf_add(&p->stmt, p->close.text, p->close.len);
		if (mysql_sql_push(p->stmts, &p->stmt, p->first,
		                   r - p->first) != 0)
			p->failed = 1;
	}
	if (p->stmt.len == 0) {
		p->first = r;
		strbuf_add(&p->stmt, p->head.text, p->head.len);
	} else {
		strbuf_add(&p->stmt, ", ", 2);
	}
	strbuf_add(&p->stmt, row->text, row->len);
	p->failed |= p->stmt.failed;
}

/* Queue the last statement (N_ROWS rows in all) unless QUEUE is 0, and
 * free P's buffers.  Returns 0, or -1 when out of memory. */
static int
my_pack_finish(struct my_pack *p, int n_rows, int queue)
{
	p->failed |= p->head.failed || p->close.failed;
	if (queue && !p->failed && p->stmt.len > 0) {
		strbuf_add(&p->stmt, p->close.text, p->close.len);
		if (mysql_sql_push(p->stmts, &p->stmt, p->first,
		                   n_rows - p->first) != 0)
			p->failed = 1;
	}
	strbuf_clear(&p->head);
	strbuf_clear(&p->close);
	strbuf_clear(&p->stmt);
	return p->failed ? -1 : 0;
}

int
mysql_sql_upsert(struct mysql_sql_stmts *stmts,
                 const struct mysql_sql_escape *esc,
                 const struct rs_table_def *t, const struct rs_rows *rows,
                 struct rs_err *err)
{
	struct my_pack pack = {.stmts = stmts, .max_rows = INT_MAX};
	struct rs_strbuf *head = &pack.head, *tail = &pack.close;
	struct rs_strbuf row = {0};
	int n_updated = 0;
	int rc = 0;

	strbuf_str(head, "INSERT INTO ");
	mysql_sql_ident(head, t->name);
	strbuf_str(head, " (");
	strbuf_str(tail, " ON DUPLICATE KEY UPDATE ");
	/* ON DUPLICATE KEY fires on any unique index: with one besides the
	 * primary key, a row that clashes there would be updated in the
	 * place of a row of another key.  The first assignment keeps the
	 * key where it is the row's own, and else fails the statement (a
	 * subquery of two rows, error 1242, in every sql_mode), which
	 * my_error_to words as the clash it is.  Only where describe found
	 * such an index (whole columns: a prefix index is not listed, and
	 * is not guarded). */
	if (t->n_uniques > 0) {
		mysql_sql_ident(tail, t->columns[t->pk[0]].name);
		strbuf_str(tail, " = IF(");
		for (int k = 0; k < t->n_pk; k++) {
			if (k > 0)
				strbuf_str(tail, " AND ");
			mysql_sql_ident(tail, t->columns[t->pk[k]].name);
			strbuf_str(tail, " <=> VALUES(");
			mysql_sql_ident(tail, t->columns[t->pk[k]].name);
			strbuf_str(tail, ")");
		}
		strbuf_str(tail, ", ");
		mysql_sql_ident(tail, t->columns[t->pk[0]].name);
		strbuf_str(tail, ", (SELECT 1 UNION ALL SELECT 1))");
		n_updated++;
	}
	for (int i = 0, n = 0; i < t->n_columns; i++) {
		int in_key = 0;

		if (t->columns[i].generated)
			continue; /* the server computes it */
		if (n++ > 0)
			strbuf_str(head, ", ");
		mysql_sql_ident(head, t->columns[i].name);
		for (int k = 0; k < t->n_pk; k++)
			in_key |= t->pk[k] == i;
		if (in_key)
			continue;
		if (n_updated++ > 0)
			strbuf_str(tail, ", ");
		mysql_sql_ident(tail, t->columns[i].name);
		strbuf_str(tail, " = VALUES(");
		mysql_sql_ident(tail, t->columns[i].name);
		strbuf_str(tail, ")");
	}
	if (n_updated == 0) {
		mysql_sql_ident(tail, t->columns[t->pk[0]].name);
		strbuf_str(tail, " = ");
		mysql_sql_ident(tail, t->columns[t->pk[0]].name);
	}
	strbuf_str(head, ") VALUES ");
	for (int r = 0; r < rows->n_rows && rc == 0 && !pack.failed; r++) {
		const struct rs_value *v =
			&rows->values[(size_t)r * (size_t)rows->n_cols];

		row.len = 0;
		strbuf_add(&row, "(", 1);
		for (int i = 0, n = 0; i < t->n_columns; i++) {
			const char *why = NULL;
			int c;

			if (t->columns[i].generated)
				continue;
			if (n++ > 0)
				strbuf_add(&row, ", ", 2);
			c = mysql_sql_canon(&row, esc, t->columns[i].kind,
			                    &v[i], &why);
			if (c != 0 || row.failed) {
				rc = my_canon_fail(err, "upsert into", t, r, i,
				                   &v[i], c != 0 ? c : -1, why,
				                   row.failed);
				break;
			}
		}
		if (rc != 0)
			break;
		strbuf_add(&row, ")", 1);
		my_pack_row(&pack, &row, r);
	}
	strbuf_clear(&row);
	if (my_pack_finish(&pack, rows->n_rows, rc == 0) != 0 && rc == 0)
		rc = rs_err_set(err, RS_ENOMEM, "out of memory");
	if (rc != 0)
		mysql_sql_stmts_free(stmts);
	return rc;
}

int
mysql_sql_load(struct rs_strbuf *sql, struct rs_strbuf *data,
               const struct rs_table_def *t, const struct rs_rows *rows,
               struct rs_err *err)
{
	int n_bytes = 0, rc = 0;

	strbuf_str(sql, "LOAD DATA LOCAL INFILE 'reshard' INTO TABLE ");
	mysql_sql_ident(sql, t->name);
	strbuf_str(sql, " CHARACTER SET utf8mb4 FIELDS TERMINATED BY X'09' "
	                "ESCAPED BY X'5C' LINES TERMINATED BY X'0A' (");
	for (int i = 0, n = 0; i < t->n_columns; i++) {
		if (t->columns[i].generated)
			continue; /* the server computes it */
		if (n++ > 0)
			strbuf_str(sql, ", ");
		if (t->columns[i].kind == RS_COL_BYTES)
			strbuf_printf(sql, "@reshard_%d", i);
		else
			mysql_sql_ident(sql, t->columns[i].name);
	}
	strbuf_str(sql, ")");
	for (int i = 0; i < t->n_columns; i++) {
		if (t->columns[i].kind != RS_COL_BYTES ||
		    t->columns[i].generated)
			continue;
		strbuf_str(sql, n_bytes++ > 0 ? ", " : " SET ");
		mysql_sql_ident(sql, t->columns[i].name);
		strbuf_printf(sql, " = UNHEX(@reshard_%d)", i);
	}
	for (int r = 0; r < rows->n_rows && rc == 0; r++) {
		const struct rs_value *v =
			&rows->values[(size_t)r * (size_t)rows->n_cols];

		for (int i = 0, n = 0; i < t->n_columns && rc == 0; i++) {
			const char *why = NULL;
			int c;

			if (t->columns[i].generated)
				continue;
			if (n++ > 0)
				strbuf_add(data, "\t", 1);
			/* LOAD DATA takes a YEAR field of fewer than four
			 * digits as a two-digit year: 0 would be 2000. */
			if (v[i].text != NULL && v[i].len == 1 &&
			    v[i].text[0] == '0' && t->columns[i].type != NULL &&
			    strncasecmp(t->columns[i].type, "year", 4) == 0) {
				strbuf_str(data, "0000");
				continue;
			}
			c = my_canon(data, NULL, t->columns[i].kind, &v[i],
			             &why, 1);
			if (c != 0 || data->failed)
				rc = my_canon_fail(err, "load into", t, r, i,
				                   &v[i], c != 0 ? c : -1, why,
				                   data->failed);
		}
		strbuf_add(data, "\n", 1);
	}
	if (rc == 0 && (sql->failed || data->failed))
		rc = rs_err_set(err, RS_ENOMEM, "out of memory");
	return rc;
}

/* Pack KEYS (canonical values, n_pk a row in key order) of T into
 * statements of P (its head holding what comes before the key columns,
 * "… WHERE "), at most P->max_rows keys each:
 *   head `a` IN (…, …)                 one key column
 *   head (`a`, `b`) IN ((…), (…))      several
 * WHAT begins messages ("delete from").  Returns 0, or RS_EINTERNAL (a
 * NULL key), RS_EVALUE, RS_ENOMEM with STMTS freed. */
static int
my_keys_in(struct my_pack *p, const struct mysql_sql_escape *esc,
           const struct rs_table_def *t, const struct rs_rows *keys,
           const char *what, struct rs_err *err)
{
	struct rs_strbuf *head = &p->head;
	struct rs_strbuf row = {0};
	int rc = 0;

	strbuf_str(head, t->n_pk > 1 ? "(" : "");
	for (int k = 0; k < t->n_pk; k++) {
		if (k > 0)
			strbuf_str(head, ", ");
		mysql_sql_ident(head, t->columns[t->pk[k]].name);
	}
	strbuf_str(head, t->n_pk > 1 ? ") IN (" : " IN (");
	strbuf_str(&p->close, ")");
	for (int r = 0; r < keys->n_rows && rc == 0 && !p->failed; r++) {
		const struct rs_value *v =
			&keys->values[(size_t)r * (size_t)keys->n_cols];

		row.len = 0;
		if (t->n_pk > 1)
			strbuf_add(&row, "(", 1);
		for (int k = 0; k < t->n_pk; k++) {
			const char *why = NULL;
			int c;

			if (v[k].text == NULL) {
				rc = rs_err_set(err, RS_EINTERNAL,
				                "%s table %s: key %d has a "
				                "NULL in column %s (a bug in "
				                "the caller)",
				                what, t->name, r + 1,
				                t->columns[t->pk[k]].name);
				break;
			}
			if (k > 0)
				strbuf_add(&row, ", ", 2);
			c = mysql_sql_canon(&row, esc,
			                    t->columns[t->pk[k]].kind, &v[k],
			                    &why);
			if (c != 0 || row.failed) {
				rc = my_canon_fail(err, what, t, r, t->pk[k],
				                   &v[k], c != 0 ? c : -1, why,
				                   row.failed);
				break;
			}
		}
		if (rc != 0)
			break;
		if (t->n_pk > 1)
			strbuf_add(&row, ")", 1);
		my_pack_row(p, &row, r);
	}
	strbuf_clear(&row);
	if (my_pack_finish(p, keys->n_rows, rc == 0) != 0 && rc == 0)
		rc = rs_err_set(err, RS_ENOMEM, "out of memory");
	if (rc != 0)
		mysql_sql_stmts_free(p->stmts);
	return rc;
}

int
mysql_sql_delete(struct mysql_sql_stmts *stmts,
                 const struct mysql_sql_escape *esc,
                 const struct rs_table_def *t, const struct rs_rows *keys,
                 struct rs_err *err)
{
	struct my_pack pack = {.stmts = stmts,
	                       .max_rows = MYSQL_SQL_DELETE_KEYS};

	strbuf_str(&pack.head, "DELETE FROM ");
	mysql_sql_ident(&pack.head, t->name);
	strbuf_str(&pack.head, " WHERE ");
	return my_keys_in(&pack, esc, t, keys, "delete from", err);
}

/* ---- count, the fence, the shard marker, the delete log ------------- */

int
mysql_sql_name_fits(const char *name)
{
	size_t chars = 0;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		chars += (*p & 0xc0) != 0x80; /* not a continuation byte */
	return chars <= MYSQL_SQL_NAME_MAX;
}

void
mysql_sql_count(struct rs_strbuf *b, const char *table)
{
	strbuf_str(b, "SELECT COUNT(*) FROM ");
	mysql_sql_ident(b, table);
}

const char *const mysql_sql_fence_ops[MYSQL_SQL_FENCE_OPS] = {
	"INSERT",
	"UPDATE",
	"DELETE",
};

void
mysql_sql_fence_trigger(char *buf, size_t size, int op, const char *table)
{
	snprintf(buf, size, "reshard_fence_%s_%s", mysql_sql_fence_ops[op],
	         table);
}

int
mysql_sql_fence_existing(struct rs_strbuf *b,
                         const struct mysql_sql_escape *esc,
                         const char *const *tables, int n)
{
	char name[MYSQL_SQL_NAME_SIZE];

	for (int t = 0; t < n; t++) {
		if (t > 0)
			strbuf_str(b, " UNION ALL ");
		strbuf_str(b, "SELECT TRIGGER_NAME FROM "
		              "information_schema.TRIGGERS WHERE "
		              "EVENT_OBJECT_SCHEMA = DATABASE() AND "
		              "EVENT_OBJECT_TABLE = ");
		if (mysql_sql_quoted(b, esc, tables[t], strlen(tables[t])) != 0)
			return -1;
		strbuf_str(b, " AND TRIGGER_NAME IN (");
		for (int op = 0; op < MYSQL_SQL_FENCE_OPS; op++) {
			mysql_sql_fence_trigger(name, sizeof(name), op,
			                        tables[t]);
			if (op > 0)
				strbuf_str(b, ", ");
			if (mysql_sql_quoted(b, esc, name, strlen(name)) != 0)
				return -1;
		}
		strbuf_str(b, ")");
	}
	return b->failed ? -1 : 0;
}

/* Append "CREATE TRIGGER IF NOT EXISTS `NAME` BEFORE OP ON `TABLE`". */
static void
mysql_sql_trigger_head(struct rs_strbuf *b, const char *name, int op,
                       const char *table)
{
	strbuf_str(b, "CREATE TRIGGER IF NOT EXISTS ");
	mysql_sql_ident(b, name);
	strbuf_str(b, " BEFORE ");
	strbuf_str(b, mysql_sql_fence_ops[op]);
	strbuf_str(b, " ON ");
	mysql_sql_ident(b, table);
}

/* Whether a trigger for statement OP sees OLD (SIDE 0: UPDATE, DELETE) or
 * NEW (SIDE 1: INSERT, UPDATE). */
static int
mysql_sql_op_has(int op, int side)
{
	return side == 0 ? op != 0 : op != 2;
}

/* Append "SET p = <point of OLD.`key` or NEW.`key`>" for SIDE (0: OLD),
 * or the loop that leaves it in p (mysql_sql_point_set).  0, or -1 when
 * the point cannot be computed (or out of memory). */
static int
mysql_sql_set_point(struct rs_strbuf *b, int side, const char *column,
                    enum rs_hash hash, enum rs_col_kind kind)
{
	struct rs_strbuf key = {0};
	int rc;

	strbuf_str(&key, side == 0 ? "OLD." : "NEW.");
	mysql_sql_ident(&key, column);
	rc = key.failed ? -1 : mysql_sql_point_set(b, hash, kind, key.text);
	strbuf_clear(&key);
	return rc != 0 ? -1 : 0;
}

int
mysql_sql_fence_create(struct rs_strbuf *b, const struct mysql_sql_escape *esc,
                       int op, const char *table, const char *message,
                       const struct rs_fence_rows *rows, int t)
{
	char name[MYSQL_SQL_NAME_SIZE];

	mysql_sql_fence_trigger(name, sizeof(name), op, table);
	mysql_sql_trigger_head(b, name, op, table);
	if (rows == NULL) {
		strbuf_str(b, " FOR EACH ROW SIGNAL SQLSTATE '45000' "
		              "SET MESSAGE_TEXT = ");
		if (mysql_sql_quoted(b, esc, message, strlen(message)) != 0)
			return -1;
		return b->failed ? -1 : 0;
	}
	/* The point is computed once a row, into p, then tested against
	 * every span or residue. */
	strbuf_str(b, " FOR EACH ROW BEGIN ");
	mysql_sql_point_declare(b, rows->hash);
	for (int side = 0; side < 2; side++) {
		if (!mysql_sql_op_has(op, side))
			continue;
		if (mysql_sql_set_point(b, side, rows->keys[t], rows->hash,
		                        rows->kinds[t]) != 0)
			return -1;
		strbuf_str(b, "; IF ");
		backend_sql_moves(b, rows->moving, "p");
		strbuf_str(b, " IS NOT FALSE THEN SIGNAL SQLSTATE '45000' "
		              "SET MESSAGE_TEXT = ");
		if (mysql_sql_quoted(b, esc, message, strlen(message)) != 0)
			return -1;
		strbuf_str(b, "; END IF; ");
	}
	strbuf_str(b, "END");
	return b->failed ? -1 : 0;
}

void
mysql_sql_guard_trigger(char *buf, size_t size, int op, const char *table)
{
	snprintf(buf, size, "reshard_guard_%s_%s", mysql_sql_fence_ops[op],
	         table);
}

int
mysql_sql_guard_create(struct rs_strbuf *b, const struct mysql_sql_escape *esc,
                       int op, const char *table, const struct rs_guard *guard,
                       int t)
{
	char name[MYSQL_SQL_NAME_SIZE];

	mysql_sql_guard_trigger(name, sizeof(name), op, table);
	mysql_sql_trigger_head(b, name, op, table);
	strbuf_str(b, " FOR EACH ROW BEGIN ");
	mysql_sql_point_declare(b, guard->hash);
	strbuf_str(b, "IF @reshard_purging IS NULL THEN ");
	for (int side = 0; side < 2; side++) {
		if (!mysql_sql_op_has(op, side))
			continue;
		if (mysql_sql_set_point(b, side, guard->keys[t], guard->hash,
		                        guard->kinds[t]) != 0)
			return -1;
		for (int i = 0; i < guard->n_owners; i++) {
			strbuf_str(b, i == 0 ? "; IF " : " ELSEIF ");
			backend_sql_moves(b, &guard->owned[i], "p");
			strbuf_str(b, " THEN SIGNAL SQLSTATE '45000' "
			              "SET MESSAGE_TEXT = ");
			if (mysql_sql_quoted(b, esc, guard->messages[i],
			                     strlen(guard->messages[i])) != 0)
				return -1;
			strbuf_str(b, ";");
		}
		strbuf_str(b, guard->n_owners > 0 ? " END IF; " : "; ");
	}
	strbuf_str(b, "END IF; END");
	return b->failed ? -1 : 0;
}

void
mysql_sql_drop_trigger(struct rs_strbuf *b, const char *name)
{
	strbuf_str(b, "DROP TRIGGER IF EXISTS ");
	mysql_sql_ident(b, name);
}

/* Sized as struct rs_marker's fields (without their NULs). */
const char mysql_sql_marker_table[] =
	"CREATE TABLE IF NOT EXISTS `reshard_marker` ("
	"`plan` varchar(127) NOT NULL, `run_id` varchar(39) NOT NULL, "
	"`state` varchar(15) NOT NULL, `epoch` bigint NOT NULL, "
	"`updated_at` datetime NOT NULL, PRIMARY KEY (`plan`)) "
	"DEFAULT CHARSET=utf8mb4";

const char mysql_sql_markers[] =
	"SELECT `plan`, `run_id`, `state`, `epoch`, `updated_at` "
	"FROM `reshard_marker` ORDER BY `plan`";

int
mysql_sql_mark(struct rs_strbuf *b, const struct mysql_sql_escape *esc,
               const struct rs_marker *marker)
{
	const char *const texts[] = {marker->plan, marker->run_id,
	                             marker->state};
	char epoch[32];

	strbuf_str(b, "INSERT INTO `reshard_marker` (`plan`, `run_id`, "
	              "`state`, `epoch`, `updated_at`) VALUES (");
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		if (mysql_sql_quoted(b, esc, texts[i], strlen(texts[i])) != 0)
			return -1;
		strbuf_str(b, ", ");
	}
	snprintf(epoch, sizeof(epoch), "%lld, ", (long long)marker->epoch);
	strbuf_str(b, epoch);
	strbuf_str(b, "UTC_TIMESTAMP()) ON DUPLICATE KEY UPDATE "
	              "`run_id` = VALUES(`run_id`), `state` = VALUES(`state`), "
	              "`epoch` = VALUES(`epoch`), "
	              "`updated_at` = VALUES(`updated_at`)");
	return b->failed ? -1 : 0;
}

int
mysql_sql_log_columns(struct rs_strbuf *b, const struct mysql_sql_escape *esc,
                      const char *table)
{
	strbuf_str(b, "SELECT COLUMN_NAME, COLUMN_TYPE, COLLATION_NAME "
	              "FROM information_schema.COLUMNS "
	              "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ");
	if (mysql_sql_quoted(b, esc, table, strlen(table)) != 0)
		return -1;
	strbuf_str(b, " ORDER BY ORDINAL_POSITION");
	return b->failed ? -1 : 0;
}

void
mysql_sql_log_trigger_name(char *buf, size_t size, const char *table,
                           int update)
{
	snprintf(buf, size, "reshard_dellog_%s%s", update ? "u_" : "", table);
}

/* Append the definition of a log's column NAME, of the catalog's TYPE
 * and COLLATION (may be NULL), then ", ":
 *   `a` varchar(10) COLLATE x NOT NULL, */
static void
my_log_column(struct rs_strbuf *b, const char *name, const char *type,
              const char *collation, int not_null)
{
	mysql_sql_ident(b, name);
	strbuf_str(b, " ");
	strbuf_str(b, type);
	if (collation != NULL) {
		strbuf_str(b, " COLLATE ");
		strbuf_str(b, collation);
	}
	strbuf_str(b, not_null ? " NOT NULL, " : " NULL, ");
}

void
mysql_sql_log_table(struct rs_strbuf *b, const char *log,
                    const char *const *keys, const char *const *types,
                    const char *const *collations, int n)
{
	strbuf_str(b, "CREATE TABLE IF NOT EXISTS ");
	mysql_sql_ident(b, log);
	strbuf_str(b, " (");
	for (int k = 0; k < n; k++)
		my_log_column(b, keys[k], types[k], collations[k], 1);
	strbuf_str(b, "PRIMARY KEY (");
	for (int k = 0; k < n; k++) {
		if (k > 0)
			strbuf_str(b, ", ");
		mysql_sql_ident(b, keys[k]);
	}
	strbuf_str(b, "))");
}

/* Append "PREFIX`a`, PREFIX`b`" for the N KEYS. */
static void
my_key_list(struct rs_strbuf *b, const char *prefix, const char *const *keys,
            int n)
{
	for (int k = 0; k < n; k++) {
		if (k > 0)
			strbuf_str(b, ", ");
		strbuf_str(b, prefix);
		mysql_sql_ident(b, keys[k]);
	}
}

void
mysql_sql_log_trigger(struct rs_strbuf *b, const char *table, const char *log,
                      const char *const *keys, int n, int update)
{
	char name[MYSQL_SQL_NAME_SIZE];

	mysql_sql_log_trigger_name(name, sizeof(name), table, update);
	strbuf_str(b, "CREATE TRIGGER IF NOT EXISTS ");
	mysql_sql_ident(b, name);
	strbuf_str(b, update ? " AFTER UPDATE ON " : " AFTER DELETE ON ");
	mysql_sql_ident(b, table);
	strbuf_str(b, " FOR EACH ROW IF @reshard_purging IS NULL");
	if (update) {
		/* Byte for byte: under a case-insensitive or PAD SPACE
		 * collation 'a' = 'A ', but the key read back changed. */
		strbuf_str(b, " AND NOT (");
		for (int k = 0; k < n; k++) {
			if (k > 0)
				strbuf_str(b, " AND ");
			strbuf_str(b, "CAST(OLD.");
			mysql_sql_ident(b, keys[k]);
			strbuf_str(b, " AS BINARY) <=> CAST(NEW.");
			mysql_sql_ident(b, keys[k]);
			strbuf_str(b, " AS BINARY)");
		}
		strbuf_str(b, ")");
	}
	strbuf_str(b, " THEN INSERT IGNORE INTO ");
	mysql_sql_ident(b, log);
	strbuf_str(b, " (");
	my_key_list(b, "", keys, n);
	strbuf_str(b, ") VALUES (");
	my_key_list(b, "OLD.", keys, n);
	strbuf_str(b, "); END IF");
}

const char mysql_sql_purging_on[] = "SET @reshard_purging = 1";
const char mysql_sql_purging_off[] = "SET @reshard_purging = NULL";

/* ---- change capture and reads by key -------------------------------- */

void
mysql_sql_capture_trigger(char *buf, size_t size, int op, const char *table)
{
	static const char tags[MYSQL_SQL_FENCE_OPS] = {'i', 'u', 'd'};

	snprintf(buf, size, "reshard_capture_%c_%s", tags[op], table);
}

void
mysql_sql_change_table(struct rs_strbuf *b, const char *log,
                       const char *const *names, const char *const *types,
                       const char *const *collations, int n, int n_keys)
{
	strbuf_str(b, "CREATE TABLE IF NOT EXISTS ");
	mysql_sql_ident(b, log);
	strbuf_str(b, " (`reshard_pos` bigint NOT NULL AUTO_INCREMENT, ");
	for (int i = 0; i < n; i++)
		my_log_column(b, names[i], types[i], collations[i], i < n_keys);
	strbuf_str(b, "PRIMARY KEY (`reshard_pos`)) ENGINE=InnoDB");
}

/* Append "INSERT INTO `log` (`a`, …) VALUES (ROW.`a`, …)". */
static void
my_change_insert(struct rs_strbuf *b, const char *log, const char *const *names,
                 int n, const char *row)
{
	strbuf_str(b, "INSERT INTO ");
	mysql_sql_ident(b, log);
	strbuf_str(b, " (");
	my_key_list(b, "", names, n);
	strbuf_str(b, ") VALUES (");
	my_key_list(b, row, names, n);
	strbuf_str(b, ")");
}

void
mysql_sql_capture_create(struct rs_strbuf *b, int op, const char *table,
                         const char *log, const char *const *names, int n)
{
	char name[MYSQL_SQL_NAME_SIZE];

	mysql_sql_capture_trigger(name, sizeof(name), op, table);
	strbuf_str(b, "CREATE TRIGGER IF NOT EXISTS ");
	mysql_sql_ident(b, name);
	strbuf_str(b, " AFTER ");
	strbuf_str(b, mysql_sql_fence_ops[op]);
	strbuf_str(b, " ON ");
	mysql_sql_ident(b, table);
	strbuf_str(b, " FOR EACH ROW ");
	if (op != 1) {
		my_change_insert(b, log, names, n, op == 0 ? "NEW." : "OLD.");
		return;
	}
	strbuf_str(b, "BEGIN IF NOT (");
	for (int i = 0; i < n; i++) {
		if (i > 0)
			strbuf_str(b, " AND ");
		strbuf_str(b, "OLD.");
		mysql_sql_ident(b, names[i]);
		strbuf_str(b, " <=> NEW.");
		mysql_sql_ident(b, names[i]);
		strbuf_str(b, " AND CAST(OLD.");
		mysql_sql_ident(b, names[i]);
		strbuf_str(b, " AS BINARY) <=> CAST(NEW.");
		mysql_sql_ident(b, names[i]);
		strbuf_str(b, " AS BINARY)");
	}
	strbuf_str(b, ") THEN ");
	my_change_insert(b, log, names, n, "OLD.");
	strbuf_str(b, "; END IF; ");
	my_change_insert(b, log, names, n, "NEW.");
	strbuf_str(b, "; END");
}

int
mysql_sql_read_keys(struct mysql_sql_stmts *stmts,
                    const struct mysql_sql_escape *esc,
                    const struct rs_keys_request *request, struct rs_err *err)
{
	const struct rs_table_def *t = request->table;
	int per = MYSQL_SQL_READ_VALUES / t->n_pk;
	struct my_pack pack = {.stmts = stmts, .max_rows = per > 0 ? per : 1};
	int rc;

	my_select(&pack.head, t, request->columns, request->n_columns);
	strbuf_str(&pack.head, " WHERE ");
	rc = my_keys_in(&pack, esc, t, request->keys, "read by key from", err);
	if (rc == RS_EVALUE) {
		/* The contract's code for a key the engine cannot hold. */
		if (err != NULL)
			err->code = RS_EKEY;
		rc = RS_EKEY;
	}
	return rc;
}

/* ---- replication ---------------------------------------------------- */

const char mysql_sql_primary_facts[] =
	"SELECT @@server_id, (SELECT VARIABLE_VALUE FROM "
	"information_schema.GLOBAL_VARIABLES WHERE "
	"VARIABLE_NAME = 'RPL_SEMI_SYNC_MASTER_ENABLED'), @@read_only, "
	"(SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS "
	"WHERE VARIABLE_NAME = 'SLAVES_RUNNING')";
const char mysql_sql_slaves_status[] = "SHOW ALL SLAVES STATUS";
const char mysql_sql_source_facts[] =
	"SELECT @@read_only, (SELECT VARIABLE_VALUE FROM "
	"information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = "
	"'SLAVES_RUNNING')";
const char mysql_sql_replica_facts[] =
	"SELECT @@server_id, @@read_only, @@slave_skip_errors, "
	"@@slave_exec_mode";
const char *const mysql_sql_replica_filters[MYSQL_SQL_N_FILTERS] = {
	"Replicate_Do_DB",
	"Replicate_Ignore_DB",
	"Replicate_Do_Table",
	"Replicate_Ignore_Table",
	"Replicate_Wild_Do_Table",
	"Replicate_Wild_Ignore_Table",
	"Replicate_Do_Domain_Ids",
	"Replicate_Ignore_Domain_Ids",
	"Replicate_Ignore_Server_Ids",
};
/* How each of mysql_sql_replica_filters is cleared, with the
 * replication threads stopped: the first six are dynamic variables (that
 * stay in the option file, if set there); the domain and server ids
 * belong to the connection. */
static const char *const my_filter_fixes[MYSQL_SQL_N_FILTERS] = {
	"SET GLOBAL replicate_do_db = ''",
	"SET GLOBAL replicate_ignore_db = ''",
	"SET GLOBAL replicate_do_table = ''",
	"SET GLOBAL replicate_ignore_table = ''",
	"SET GLOBAL replicate_wild_do_table = ''",
	"SET GLOBAL replicate_wild_ignore_table = ''",
	"CHANGE MASTER TO DO_DOMAIN_IDS = ()",
	"CHANGE MASTER TO IGNORE_DOMAIN_IDS = ()",
	"CHANGE MASTER TO IGNORE_SERVER_IDS = ()",
};
const char mysql_sql_slave_hosts[] = "SHOW SLAVE HOSTS";
const char mysql_sql_position[] = "SELECT @@gtid_binlog_pos";
const char mysql_sql_slave_pos[] = "SELECT @@gtid_slave_pos";
const char *const mysql_sql_promote[3] = {
	"STOP SLAVE",
	"RESET SLAVE ALL",
	"SET GLOBAL read_only = 0",
};
const char mysql_sql_resume[] = "START SLAVE";
const char *const mysql_sql_promote_ready[2] = {
	"FLUSH NO_WRITE_TO_BINLOG RELAY LOGS",
	"FLUSH NO_WRITE_TO_BINLOG RELAY LOGS",
};
const char mysql_sql_read_only[] = "SELECT @@read_only";

int
mysql_sql_gtid_wait(struct rs_strbuf *b, const struct mysql_sql_escape *esc,
                    const char *position, int wait_ms)
{
	char timeout[32];

	if (wait_ms < 0)
		wait_ms = 0;
	strbuf_str(b, "SELECT MASTER_GTID_WAIT(");
	if (mysql_sql_quoted(b, esc, position, strlen(position)) != 0)
		return -1;
	snprintf(timeout, sizeof(timeout), ", %d.%03d)", wait_ms / 1000,
	         wait_ms % 1000);
	strbuf_str(b, timeout);
	return b->failed ? -1 : 0;
}

/* Read one unsigned decimal number at *P into *OUT, moving *P past it.
 * Returns 0, or -1 when there is none or it is too large. */
static int
my_gtid_number(const char **p, uint64_t *out)
{
	uint64_t v = 0;
	const char *s = *p;

	if (*s < '0' || *s > '9')
		return -1;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > (UINT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*p = s;
	*out = v;
	return 0;
}

/* Parse the next GTID "domain-server-seq" of the list at *P, skipping the
 * white space and the comma around it.  Returns 1 with *DOMAIN and *SEQ,
 * 0 at the end of the list, -1 when it is not a GTID list. */
static int
my_gtid_next(const char **p, uint64_t *domain, uint64_t *seq)
{
	const char *s = *p;
	uint64_t server;

	while (*s == ' ' || *s == ',' || *s == '\n')
		s++;
	if (*s == '\0') {
		*p = s;
		return 0;
	}
	if (my_gtid_number(&s, domain) != 0 || *s++ != '-' ||
	    my_gtid_number(&s, &server) != 0 || *s++ != '-' ||
	    my_gtid_number(&s, seq) != 0)
		return -1;
	if (*s != '\0' && *s != ',' && *s != ' ' && *s != '\n')
		return -1;
	*p = s;
	return 1;
}

/* Whether the GTID list LIST is well formed. */
static int
my_gtid_list_ok(const char *list)
{
	uint64_t d, s;
	int rc;

	while ((rc = my_gtid_next(&list, &d, &s)) == 1)
		;
	return rc == 0;
}

int64_t
mysql_sql_gtid_behind(const char *want, const char *have)
{
	uint64_t domain, seq, behind = 0;
	int rc;

	if (want == NULL || have == NULL || !my_gtid_list_ok(want) ||
	    !my_gtid_list_ok(have))
		return -1;
	while ((rc = my_gtid_next(&want, &domain, &seq)) == 1) {
		const char *h = have;
		uint64_t hd, hs, got = 0;

		while (my_gtid_next(&h, &hd, &hs) == 1)
			if (hd == domain && hs > got)
				got = hs;
		if (seq > got && seq - got > (uint64_t)INT64_MAX - behind)
			return -1;
		if (seq > got)
			behind += seq - got;
	}
	return rc == 0 ? (int64_t)behind : -1;
}

/* The fix for a replica that is not a replica of the primary: replicate
 * from it by GTID. */
static void
my_point_at(const struct mysql_sql_replica *r, char *fix, size_t size)
{
	if (r->host != NULL)
		snprintf(fix, size,
		         "point it at the primary (STOP SLAVE; CHANGE MASTER "
		         "TO MASTER_HOST = '%s', MASTER_PORT = %u, "
		         "MASTER_USE_GTID = slave_pos; START SLAVE) or fix "
		         "the plan's replica",
		         r->host, r->port != 0 ? r->port : 3306);
	else
		snprintf(fix, size,
		         "point it at the primary (CHANGE MASTER TO … "
		         "MASTER_USE_GTID = slave_pos) or fix the plan's "
		         "replica");
}

int
mysql_sql_replica_verdict(const struct mysql_sql_replica *r, char *why,
                          size_t size)
{
	unsigned int port = r->port != 0 ? r->port : 3306;
	char rep[600], fix[300];

	snprintf(rep, sizeof(rep), "replica %s (%s) of primary %s", r->replica,
	         r->replica_url, r->primary);
	/* The primary first: a replica of a server that is not one is no
	 * use, whatever its own state. */
	if (r->primary_applying > 0) {
		snprintf(why, size,
		         "primary %s (%s), whose replica %s (%s) would be "
		         "promoted, is itself a replica: %lld replication "
		         "SQL thread%s run%s on it (Slaves_running), applying "
		         "another server's writes, which the fence does not "
		         "stop (replicated rows fire no triggers by default) "
		         "and %s "
		         "stops receiving once promoted: point "
		         "shard %s's url at the server that takes the writes, "
		         "or stop that replication for the doubling (STOP "
		         "ALL SLAVES on %s)",
		         r->primary, r->primary_url, r->replica, r->replica_url,
		         r->primary_applying,
		         r->primary_applying > 1 ? "s" : "",
		         r->primary_applying > 1 ? "" : "s", r->replica,
		         r->primary, r->primary);
		return 1;
	}
	if (r->primary_read_only) {
		snprintf(why, size,
		         "primary %s (%s), whose replica %s (%s) would be "
		         "promoted, is read-only (@@read_only = 1), so it is "
		         "not where the applications write: point shard %s's "
		         "url at the server that takes the writes, or, if it "
		         "is that server, SET GLOBAL read_only = 0 on it",
		         r->primary, r->primary_url, r->replica, r->replica_url,
		         r->primary);
		return 1;
	}
	if (r->n_sources == 0) {
		my_point_at(r, fix, sizeof(fix));
		snprintf(why, size,
		         "%s does not replicate at all (SHOW ALL SLAVES STATUS "
		         "is empty): %s",
		         rep, fix);
		return 1;
	}
	if (r->n_sources > 1 || r->connection[0] != '\0') {
		snprintf(why, size,
		         "%s replicates through %d connection%s (the first: "
		         "'%s'); reshard promotes a replica of exactly one "
		         "primary, through the default connection: remove "
		         "the others (STOP SLAVE 'name'; RESET SLAVE 'name' "
		         "ALL)",
		         rep, r->n_sources, r->n_sources > 1 ? "s" : "",
		         r->connection);
		return 1;
	}
	if (strcmp(r->io_running, "Yes") != 0 ||
	    strcmp(r->sql_running, "Yes") != 0) {
		snprintf(why, size,
		         "%s is not replicating (Slave_IO_Running: %s, "
		         "Slave_SQL_Running: %s%s%s): fix the cause and START "
		         "SLAVE on it",
		         rep, r->io_running, r->sql_running,
		         r->last_error[0] != '\0' ? "; last error: " : "",
		         r->last_error);
		return 1;
	}
	if (r->host != NULL && (strcasecmp(r->master_host, r->host) != 0 ||
	                        r->master_port != (long long)port)) {
		my_point_at(r, fix, sizeof(fix));
		snprintf(why, size,
		         "%s streams from %s:%lld (Master_Host, Master_Port), "
		         "but the primary's URL says %s:%u: %s",
		         rep, r->master_host, r->master_port, r->host, port,
		         fix);
		return 1;
	}
	if (strcasecmp(r->using_gtid, "No") == 0) {
		snprintf(why, size,
		         "%s replicates by binlog file and position "
		         "(Using_Gtid: No), and reshard waits for GTIDs: on "
		         "the replica STOP SLAVE; CHANGE MASTER TO "
		         "MASTER_USE_GTID = slave_pos; START SLAVE",
		         rep);
		return 1;
	}
	if (r->replica_id == r->primary_id) {
		snprintf(why, size,
		         "%s has the primary's server_id %lld: give it a "
		         "server_id of its own (server-id in its option file)",
		         rep, r->replica_id);
		return 1;
	}
	if (r->master_id != r->primary_id) {
		snprintf(why, size,
		         "%s streams from the server with server_id %lld "
		         "(Master_Server_Id), but primary %s (%s) has "
		         "server_id %lld: it replicates from another server; "
		         "fix the plan's replica or the primary's URL",
		         rep, r->master_id, r->primary, r->primary_url,
		         r->primary_id);
		return 1;
	}
	/* What it leaves out of its primary's events, or takes from
	 * elsewhere: the GTID position moves past either, so catch-up
	 * would end and the promoted replica differ. */
	for (int i = 0; i < MYSQL_SQL_N_FILTERS; i++)
		if (r->filters[i][0] != '\0') {
			snprintf(why, size,
			         "%s leaves part of %s's writes out: %s is "
			         "'%.120s' (SHOW SLAVE STATUS), and its GTID "
			         "position moves past them, so once promoted "
			         "its rows would differ unseen: clear it (STOP "
			         "SLAVE; %s; START SLAVE, and from its option "
			         "file if set there), make it again from %s if "
			         "it left anything out, or use a replica "
			         "without filters",
			         rep, r->primary, mysql_sql_replica_filters[i],
			         r->filters[i], my_filter_fixes[i], r->primary);
			return 1;
		}
	if (!mysql_sql_off(r->skip_errors)) {
		snprintf(why, size,
		         "%s goes on past events that fail with some errors "
		         "(@@slave_skip_errors = '%.120s'), and its GTID "
		         "position moves past them, so its rows may differ "
		         "from %s's unseen: set slave_skip_errors = OFF in its "
		         "option file and restart it (it is not dynamic), make "
		         "it again from %s if it skipped anything, or use "
		         "another replica",
		         rep, r->skip_errors, r->primary, r->primary);
		return 1;
	}
	if (strcasecmp(r->exec_mode, "IDEMPOTENT") == 0) {
		snprintf(why, size,
		         "%s goes on past row events that find a row missing "
		         "or already there (@@slave_exec_mode = IDEMPOTENT), "
		         "and its GTID position moves past them, so its rows "
		         "may differ from %s's unseen: SET GLOBAL "
		         "slave_exec_mode = 'STRICT' on it (and in its option "
		         "file if set there), make it again from %s if it "
		         "went past anything, or use another replica",
		         rep, r->primary, r->primary);
		return 1;
	}
	if (!r->read_only) {
		snprintf(why, size,
		         "%s is writable (@@read_only = 0): a write made on it "
		         "directly is not on %s, and nothing tells it from "
		         "what it replicated, so once promoted its rows may "
		         "differ unseen: SET GLOBAL read_only = 1 on it (and "
		         "read_only = ON in its option file), once you know "
		         "nothing has written to it",
		         rep, r->primary);
		return 1;
	}
	if (r->behind_s < 0) {
		snprintf(why, size,
		         "%s does not say how far behind it is "
		         "(Seconds_Behind_Master is NULL): check that it "
		         "replicates, then run again",
		         rep);
		return 1;
	}
	if (r->behind_s * 1000 > (long long)r->max_lag_ms) {
		if (r->max_lag_ms % 1000 == 0)
			snprintf(fix, sizeof(fix), "%d s",
			         r->max_lag_ms / 1000);
		else
			snprintf(fix, sizeof(fix), "%d ms", r->max_lag_ms);
		snprintf(why, size,
		         "%s is %lld s behind (Seconds_Behind_Master), more "
		         "than the %s allowed "
		         "(options.max_replica_lag_seconds): "
		         "let it catch up, or raise the option",
		         rep, r->behind_s, fix);
		return 1;
	}
	if (r->n_replicas > 0) {
		snprintf(why, size,
		         "%s has %d replica%s of its own (SHOW SLAVE HOSTS: "
		         "%s): promoted, it becomes a new shard, and they "
		         "would follow it instead of %s: point them at the "
		         "primary (CHANGE MASTER TO … on each) or stop them "
		         "first",
		         rep, r->n_replicas, r->n_replicas > 1 ? "s" : "",
		         r->first_replica, r->primary);
		return 1;
	}
	if (r->semi_sync) {
		snprintf(
			why, size,
			"primary %s (%s) waits for semi-synchronous "
			"acknowledgements (rpl_semi_sync_master_enabled = ON), "
			"which replica %s stops sending once promoted: every "
			"commit on %s would then wait "
			"rpl_semi_sync_master_timeout; turn it off on %s for "
			"the doubling (SET GLOBAL rpl_semi_sync_master_enabled "
			"= OFF)",
			r->primary, r->primary_url, r->replica, r->primary,
			r->primary);
		return 1;
	}
	return 0;
}

int
mysql_sql_off(const char *value)
{
	return value == NULL || value[0] == '\0' || strcmp(value, "0") == 0 ||
	       strcasecmp(value, "OFF") == 0;
}

enum rs_replica_state
mysql_sql_replica_state(const struct mysql_sql_replica *r)
{
	if (r->n_sources > 0)
		return strcmp(r->sql_running, "Yes") != 0 ||
		                       strcmp(r->io_running, "No") == 0
		               ? RS_REPLICA_STOPPED
		               : RS_REPLICA_FOLLOWS;
	return r->read_only ? RS_REPLICA_DETACHED : RS_REPLICA_PROMOTED;
}

int
mysql_sql_catch_up_verdict(const struct mysql_sql_replica *r, char *note,
                           size_t size)
{
	const char *error = r->last_error[0] != '\0' ? r->last_error : NULL;

	note[0] = '\0';
	if (r->n_sources == 0) {
		snprintf(
			note, size,
			"replica %s no longer replicates from %s (SHOW ALL "
			"SLAVES STATUS is empty), so it cannot reach the "
			"position of the fence: make it a replica of %s again "
			"(CHANGE MASTER TO …, MASTER_USE_GTID = slave_pos; "
			"START SLAVE), then `reshard run` again; writes stay "
			"fenced until then, or `reshard abort` lifts the fence",
			r->replica, r->primary, r->primary);
		return -1;
	}
	if (strcmp(r->sql_running, "Yes") != 0 ||
	    strcmp(r->io_running, "No") == 0) {
		snprintf(
			note, size,
			"replica %s stopped replicating from %s "
			"(Slave_IO_Running: %s, Slave_SQL_Running: %s%s%s), so "
			"it cannot reach the position of the fence: fix the "
			"cause and START SLAVE on it, then `reshard run` "
			"again; writes stay fenced until then, or `reshard "
			"abort` lifts the fence",
			r->replica, r->primary, r->io_running, r->sql_running,
			error != NULL ? "; last error: " : "",
			error != NULL ? error : "");
		return -1;
	}
	if (strcmp(r->io_running, "Yes") != 0) {
		snprintf(note, size,
		         "it is not receiving from %s (Slave_IO_Running: "
		         "%s%s%s)",
		         r->primary, r->io_running,
		         error != NULL ? "; last error: " : "",
		         error != NULL ? error : "");
		return 1;
	}
	return 0;
}

/* ---- making a table again ------------------------------------------- */

/* Whether LINE (an element line of SHOW CREATE TABLE, LEN bytes) starts
 * with PREFIX. */
static int
mysql_sql_starts(const char *line, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);

	return len >= n && memcmp(line, prefix, n) == 0;
}

/* Of a secondary index line ("UNIQUE KEY `u` (`a`,`b`)"), the length of
 * its kind ("UNIQUE KEY "), or 0 when LINE is not one. */
static size_t
mysql_sql_index_kind(const char *line, size_t len)
{
	static const char *const kinds[] = {"KEY ", "UNIQUE KEY ",
	                                    "FULLTEXT KEY ", "SPATIAL KEY ",
	                                    "VECTOR KEY "};

	for (size_t i = 0; i < sizeof(kinds) / sizeof(*kinds); i++)
		if (mysql_sql_starts(line, len, kinds[i]))
			return strlen(kinds[i]);
	return 0;
}

/* Whether the index LINE (LEN bytes) has AUTO (a quoted column name,
 * "`id`") as its first column: InnoDB wants the AUTO_INCREMENT column at
 * the start of some index, so such an index is made with the table. */
static int
mysql_sql_index_leads(const char *line, size_t len, const char *auto_col)
{
	const char *open = memchr(line, '(', len);
	size_t n = strlen(auto_col);

	return auto_col[0] != '\0' && open != NULL &&
	       (size_t)(line + len - open) > n &&
	       memcmp(open + 1, auto_col, n) == 0 &&
	       (open[1 + n] == ',' || open[1 + n] == ')' || open[1 + n] == '(');
}

int
mysql_sql_table_sql_build(const struct rs_rows *rows, const char *table,
                          const char *as, struct rs_table_sql *out,
                          struct rs_err *err)
{
	struct rs_strbuf create = {0}, stmt = {0};
	const char *text, *end, *line, *tail;
	char auto_col[200] = "";
	int rc = 0, elements = 0;

	if (rows->n_rows != 1 || rows->n_cols != 2 ||
	    rows->values[1].text == NULL)
		return rs_err_set(err, RS_ESCHEMA, "table %s does not exist",
		                  table);
	text = rows->values[1].text;
	end = text + rows->values[1].len;
	/* "CREATE TABLE `name` (\n", the element lines "  …,\n", then
	 * ") ENGINE=…" (the table options) last. */
	line = memchr(text, '\n', (size_t)(end - text));
	tail = end;
	while (tail > text && tail[-1] != '\n')
		tail--;
	if (line == NULL ||
	    !mysql_sql_starts(text, (size_t)(end - text), "CREATE TABLE ") ||
	    line[-1] != '(' || tail <= line || *tail != ')')
		return rs_err_set(
			err, RS_ESCHEMA,
			"table %s: SHOW CREATE TABLE says what reshard "
			"does not read (not a plain table?): %.60s",
			table, text);
	line++;
	/* The AUTO_INCREMENT column, whose index goes with the table. */
	for (const char *l = line; l < tail;) {
		const char *nl = memchr(l, '\n', (size_t)(tail - l));
		size_t len = (size_t)(nl - l);
		const char *q;

		if (mysql_sql_starts(l, len, "  `") &&
		    memmem(l, len, " AUTO_INCREMENT", 15) != NULL &&
		    (q = memchr(l + 3, '`', len - 3)) != NULL &&
		    (size_t)(q - l) < sizeof(auto_col))
			snprintf(auto_col, sizeof(auto_col), "%.*s",
			         (int)(q - l - 1), l + 2);
		l = nl + 1;
	}
	strbuf_str(&create, "CREATE TABLE ");
	mysql_sql_ident(&create, as);
	strbuf_str(&create, " (\n");
	while (line < tail && rc == 0) {
		const char *nl = memchr(line, '\n', (size_t)(tail - line));
		const char *e = line + 2;
		size_t len = (size_t)(nl - e), kind;

		line = nl + 1;
		if (len > 0 && e[len - 1] == ',')
			len--;
		kind = mysql_sql_index_kind(e, len);
		if (mysql_sql_starts(e, len, "CONSTRAINT ") &&
		    memmem(e, len, " FOREIGN KEY ", 13) != NULL) {
			rc = backend_table_sql_put(out, RS_SQL_LEFT_OUT, e, len,
			                           err);
		} else if (kind > 0 &&
		           !mysql_sql_index_leads(e, len, auto_col)) {
			strbuf_str(&stmt, "ALTER TABLE ");
			mysql_sql_ident(&stmt, as);
			strbuf_str(&stmt, " ADD ");
			strbuf_add(&stmt, e, kind);
			strbuf_str(&stmt, "IF NOT EXISTS ");
			strbuf_add(&stmt, e + kind, len - kind);
			rc = stmt.failed ? rs_err_set(err, RS_ENOMEM,
			                              "out of memory")
			                 : backend_table_sql_put(
						   out,
						   e[0] == 'U' ? RS_SQL_UNIQUE
							       : RS_SQL_INDEX,
						   stmt.text, stmt.len, err);
			strbuf_clear(&stmt);
		} else {
			if (elements++ > 0)
				strbuf_str(&create, ",\n");
			strbuf_str(&create, "  ");
			strbuf_add(&create, e, len);
		}
	}
	strbuf_str(&create, "\n");
	strbuf_add(&create, tail, (size_t)(end - tail));
	strbuf_str(&stmt, "DROP TABLE ");
	mysql_sql_ident(&stmt, as);
	if (rc == 0 && (create.failed || stmt.failed))
		rc = rs_err_set(err, RS_ENOMEM, "out of memory");
	if (rc == 0)
		rc = backend_table_sql_put(out, RS_SQL_CREATE, create.text,
		                           create.len, err);
	if (rc == 0)
		rc = backend_table_sql_put(out, RS_SQL_DROP, stmt.text,
		                           stmt.len, err);
	strbuf_clear(&create);
	strbuf_clear(&stmt);
	return rc;
}

/* ---- a key's point, computed by the server -------------------------- */

int
mysql_sql_point(struct rs_strbuf *b, enum rs_hash hash, enum rs_col_kind kind,
                const char *expr)
{
	int text = kind == RS_COL_TEXT;

	if (kind != RS_COL_TEXT && kind != RS_COL_INTEGER)
		return RS_EUSAGE;
	switch (hash) {
	case RS_HASH_SHA256_64:
		/* CONV works in 64-bit unsigned precision. */
		strbuf_str(b, "CAST(CONV(LEFT(SHA2(CONVERT(");
		if (!text)
			strbuf_str(b, "CAST(");
		strbuf_str(b, expr);
		/* + 0: the digits alone, not a ZEROFILL column's padding. */
		if (!text)
			strbuf_str(b, " + 0 AS CHAR)");
		strbuf_str(b,
		           " USING utf8mb4), 256), 16), 16, 10) AS UNSIGNED)");
		return 0;
	case RS_HASH_IDENTITY:
		strbuf_str(b, "(CASE WHEN ");
		strbuf_str(b, expr);
		if (text) {
			/* Leading zeros off first, so that no digit string
			 * is cut by the cast. */
			strbuf_str(b, " REGEXP '^[0-9]+$' THEN CASE WHEN "
			              "LENGTH(TRIM(LEADING '0' FROM ");
			strbuf_str(b, expr);
			strbuf_str(b,
			           ")) <= 20 THEN CASE WHEN CAST(CONCAT('0', "
			           "TRIM(LEADING '0' FROM ");
			strbuf_str(b, expr);
			strbuf_str(b,
			           ")) AS DECIMAL(21,0)) <= "
			           "18446744073709551615 THEN CAST(CONCAT('0', "
			           "TRIM(LEADING '0' FROM ");
			strbuf_str(b, expr);
			strbuf_str(b, ")) AS DECIMAL(21,0)) END END END)");
		} else {
			strbuf_str(b, " >= 0 THEN CAST(");
			strbuf_str(b, expr);
			strbuf_str(b, " AS UNSIGNED) END)");
		}
		return 0;
	default:
		return RS_EUSAGE;
	}
}

/* Whether HASH's point is a loop over the key's code units, which MariaDB
 * runs only in a compound statement: its recursive CTEs cannot refer to
 * the row of an outer query. */
static int
mysql_sql_point_loops(enum rs_hash hash)
{
	return hash == RS_HASH_FNV1A_64 || hash == RS_HASH_JAVA;
}

void
mysql_sql_point_declare(struct rs_strbuf *b, enum rs_hash hash)
{
	strbuf_str(b, "DECLARE p DECIMAL(65,0); ");
	if (mysql_sql_point_loops(hash))
		strbuf_str(b, "DECLARE reshard_b LONGBLOB; DECLARE reshard_i "
		              "INT; DECLARE reshard_h DECIMAL(65,0); ");
}

int
mysql_sql_point_set(struct rs_strbuf *b, enum rs_hash hash,
                    enum rs_col_kind kind, const char *expr)
{
	int text = kind == RS_COL_TEXT;

	if (!mysql_sql_point_loops(hash)) {
		struct rs_strbuf point = {0};
		int rc = mysql_sql_point(&point, hash, kind, expr);

		if (rc == 0) {
			strbuf_str(b, "SET p = ");
			strbuf_add(b, point.text, point.len);
		}
		strbuf_clear(&point);
		return rc != 0 ? rc : b->failed ? -1 : 0;
	}
	if (kind != RS_COL_TEXT && kind != RS_COL_INTEGER)
		return RS_EUSAGE;
	/* The key's text as bytes: UTF-8 for fnv1a_64, UTF-16 (big-endian
	 * code units, a code point past U+FFFF as its two surrogates) for
	 * java; an integer key as its decimal digits. */
	strbuf_str(b, "SET reshard_b = CAST(CONVERT(");
	strbuf_str(b, text ? "" : "CAST(");
	strbuf_str(b, expr);
	strbuf_str(b, text ? "" : " + 0 AS CHAR)"); /* as above */
	if (hash == RS_HASH_FNV1A_64) {
		/* h XOR byte in 64-bit unsigned, the product exact in
		 * DECIMAL(65,0), then mod 2^64. */
		strbuf_str(b,
		           " USING utf8mb4) AS BINARY), reshard_h = "
		           "14695981039346656037, reshard_i = 1; WHILE "
		           "reshard_i <= LENGTH(reshard_b) DO SET reshard_h "
		           "= MOD(CAST(reshard_h ^ ASCII(SUBSTRING("
		           "reshard_b, reshard_i, 1)) AS DECIMAL(65,0)) * "
		           "1099511628211, 18446744073709551616), reshard_i "
		           "= reshard_i + 1; END WHILE; SET p = IF(reshard_b "
		           "IS NULL, NULL, reshard_h)");
	} else {
		/* String.hashCode(), wrapping at 2^32, then Math.abs of it
		 * as a signed int (as pg_sql_point). */
		strbuf_str(b,
		           " USING utf16) AS BINARY), reshard_h = 0, "
		           "reshard_i = 1; WHILE reshard_i < LENGTH("
		           "reshard_b) DO SET reshard_h = MOD(31 * reshard_h "
		           "+ ASCII(SUBSTRING(reshard_b, reshard_i, 1)) * 256 "
		           "+ ASCII(SUBSTRING(reshard_b, reshard_i + 1, 1)), "
		           "4294967296), reshard_i = reshard_i + 2; END "
		           "WHILE; SET p = CASE WHEN reshard_b IS NULL THEN "
		           "NULL WHEN reshard_h >= 2147483648 THEN 4294967296 "
		           "- reshard_h ELSE reshard_h END");
	}
	return b->failed ? -1 : 0;
}
