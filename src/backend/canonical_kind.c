/*
 * The kinds of the canonical form: their names and those of the sources,
 * for messages, and each engine's column type name → enum rs_col_kind
 * (canonical_kind_pg, _mysql, _sqlite of canonical.h).  A name is first
 * normalised (lower case, blanks folded, typmods dropped where the engine
 * puts them) and then looked up in the engine's table; SQLite falls back
 * on its affinity rules.  Pure functions over static tables.
 */
#include "backend/canonical_impl.h"

#include <string.h>

static const char *const kind_names[] = {
	[RS_COL_INTEGER] = "integer",     [RS_COL_DECIMAL] = "decimal",
	[RS_COL_FLOAT] = "float",         [RS_COL_FLOAT4] = "float4",
	[RS_COL_BOOL] = "boolean",        [RS_COL_TEXT] = "text",
	[RS_COL_CHAR] = "char",           [RS_COL_BYTES] = "bytes",
	[RS_COL_DATE] = "date",           [RS_COL_TIME] = "time",
	[RS_COL_TIMESTAMP] = "timestamp", [RS_COL_TIMESTAMPTZ] = "timestamptz",
	[RS_COL_JSON] = "json",           [RS_COL_UUID] = "uuid",
	[RS_COL_OTHER] = "other",
};

#define KIND_COUNT (sizeof(kind_names) / sizeof(kind_names[0]))

const char *
canonical_kind_name(enum rs_col_kind kind)
{
	if ((unsigned)kind >= KIND_COUNT)
		return "?";
	return kind_names[kind];
}

int
canonical_kind_as_is(enum rs_col_kind kind)
{
	return kind == RS_COL_INTEGER || kind == RS_COL_TEXT ||
	       kind == RS_COL_OTHER;
}

const char *
canonical_src_name(enum rs_canon_src src)
{
	switch (src) {
	case RS_SRC_PG:
		return "PostgreSQL";
	case RS_SRC_MYSQL:
		return "MariaDB";
	case RS_SRC_SQLITE:
		return "SQLite";
	}
	return "?";
}

/* ---- Type names → kinds ---------------------------------------------- */

/* NAME in lower case with blanks trimmed, runs of blanks made one space
 * and, when DROP_PARENS, every "(…)" removed (PostgreSQL puts typmods in
 * the middle: "timestamp(3) with time zone").  Returns false when NAME
 * does not fit in SIZE bytes. */
static bool
type_name_normalise(const char *name, bool drop_parens, char *buf, size_t size)
{
	size_t n = 0;
	int depth = 0;
	bool blank = false;

	if (name == NULL)
		name = "";
	for (const char *p = name; *p != '\0'; p++) {
		unsigned char c = (unsigned char)*p;

		if (drop_parens && c == '(') {
			depth++;
			continue;
		}
		if (drop_parens && c == ')' && depth > 0) {
			depth--;
			continue;
		}
		if (depth > 0)
			continue;
		if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
			blank = n > 0;
			continue;
		}
		if (blank) {
			if (n + 1 >= size)
				return false;
			buf[n++] = ' ';
			blank = false;
		}
		if (n + 1 >= size)
			return false;
		buf[n++] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
	}
	buf[n] = '\0';
	return true;
}

struct kind_name {
	const char *name;
	enum rs_col_kind kind;
};

static bool
kind_lookup(const struct kind_name *table, size_t n, const char *name,
            enum rs_col_kind *kind)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(table[i].name, name) == 0) {
			*kind = table[i].kind;
			return true;
		}
	}
	return false;
}

/* format_type() output with typmods removed, and the internal names. */
static const struct kind_name pg_kinds[] = {
	{"smallint", RS_COL_INTEGER},
	{"integer", RS_COL_INTEGER},
	{"bigint", RS_COL_INTEGER},
	{"int", RS_COL_INTEGER},
	{"int2", RS_COL_INTEGER},
	{"int4", RS_COL_INTEGER},
	{"int8", RS_COL_INTEGER},
	{"smallserial", RS_COL_INTEGER},
	{"serial", RS_COL_INTEGER},
	{"bigserial", RS_COL_INTEGER},
	{"oid", RS_COL_INTEGER},
	{"numeric", RS_COL_DECIMAL},
	{"decimal", RS_COL_DECIMAL},
	{"real", RS_COL_FLOAT4},
	{"double precision", RS_COL_FLOAT},
	{"float", RS_COL_FLOAT},
	{"float4", RS_COL_FLOAT4},
	{"float8", RS_COL_FLOAT},
	{"boolean", RS_COL_BOOL},
	{"bool", RS_COL_BOOL},
	{"text", RS_COL_TEXT},
	{"character varying", RS_COL_TEXT},
	{"varchar", RS_COL_TEXT},
	{"name", RS_COL_TEXT},
	{"\"char\"", RS_COL_TEXT},
	{"citext", RS_COL_TEXT},
	{"xml", RS_COL_TEXT},
	{"character", RS_COL_CHAR},
	{"char", RS_COL_CHAR},
	{"bpchar", RS_COL_CHAR},
	{"bytea", RS_COL_BYTES},
	{"date", RS_COL_DATE},
	{"time without time zone", RS_COL_TIME},
	{"time", RS_COL_TIME},
	{"timestamp without time zone", RS_COL_TIMESTAMP},
	{"timestamp", RS_COL_TIMESTAMP},
	{"timestamp with time zone", RS_COL_TIMESTAMPTZ},
	{"timestamptz", RS_COL_TIMESTAMPTZ},
	{"json", RS_COL_JSON},
	{"jsonb", RS_COL_JSON},
	{"uuid", RS_COL_UUID},
};

enum rs_col_kind
canonical_kind_pg(const char *format_type)
{
	char name[256];
	size_t n;
	enum rs_col_kind kind;

	if (!type_name_normalise(format_type, true, name, sizeof(name)))
		return RS_COL_OTHER;
	n = strlen(name);
	if (n >= 2 && name[n - 2] == '[' && name[n - 1] == ']')
		return RS_COL_OTHER; /* an array */
	if (kind_lookup(pg_kinds, ARRAY_LEN(pg_kinds), name, &kind))
		return kind;
	return RS_COL_OTHER;
}

/* COLUMN_TYPE's first word without its "(…)". */
static const struct kind_name mysql_kinds[] = {
	{"bool", RS_COL_BOOL},
	{"boolean", RS_COL_BOOL},
	{"tinyint", RS_COL_INTEGER},
	{"smallint", RS_COL_INTEGER},
	{"mediumint", RS_COL_INTEGER},
	{"int", RS_COL_INTEGER},
	{"integer", RS_COL_INTEGER},
	{"bigint", RS_COL_INTEGER},
	{"year", RS_COL_INTEGER},
	{"decimal", RS_COL_DECIMAL},
	{"numeric", RS_COL_DECIMAL},
	{"dec", RS_COL_DECIMAL},
	{"fixed", RS_COL_DECIMAL},
	{"float", RS_COL_FLOAT4},
	{"double", RS_COL_FLOAT},
	{"real", RS_COL_FLOAT},
	{"char", RS_COL_CHAR},
	{"varchar", RS_COL_TEXT},
	{"tinytext", RS_COL_TEXT},
	{"text", RS_COL_TEXT},
	{"mediumtext", RS_COL_TEXT},
	{"longtext", RS_COL_TEXT},
	{"enum", RS_COL_TEXT},
	{"set", RS_COL_TEXT},
	{"binary", RS_COL_BYTES},
	{"varbinary", RS_COL_BYTES},
	{"tinyblob", RS_COL_BYTES},
	{"blob", RS_COL_BYTES},
	{"mediumblob", RS_COL_BYTES},
	{"longblob", RS_COL_BYTES},
	{"bit", RS_COL_BYTES},
	{"geometry", RS_COL_BYTES},
	{"point", RS_COL_BYTES},
	{"linestring", RS_COL_BYTES},
	{"polygon", RS_COL_BYTES},
	{"multipoint", RS_COL_BYTES},
	{"multilinestring", RS_COL_BYTES},
	{"multipolygon", RS_COL_BYTES},
	{"geometrycollection", RS_COL_BYTES},
	{"date", RS_COL_DATE},
	{"time", RS_COL_TIME},
	{"datetime", RS_COL_TIMESTAMP},
	{"timestamp", RS_COL_TIMESTAMPTZ},
	{"json", RS_COL_JSON},
	{"uuid", RS_COL_UUID},
};

enum rs_col_kind
canonical_kind_mysql(const char *column_type)
{
	char name[256];
	size_t base;
	enum rs_col_kind kind;

	/* Keep the parentheses: enum('a b') holds blanks, and tinyint(1) is
	 * the one type whose width matters. */
	if (!type_name_normalise(column_type, false, name, sizeof(name)))
		return RS_COL_OTHER;
	if (strcmp(name, "tinyint(1)") == 0)
		return RS_COL_BOOL;
	base = strcspn(name, "( ");
	name[base] = '\0';
	if (kind_lookup(mysql_kinds, ARRAY_LEN(mysql_kinds), name, &kind))
		return kind;
	return RS_COL_OTHER;
}

/* Declared names whose meaning SQLite's affinity does not capture. */
static const struct kind_name sqlite_kinds[] = {
	{"float4", RS_COL_FLOAT4},
	{"boolean", RS_COL_BOOL},
	{"bool", RS_COL_BOOL},
	{"date", RS_COL_DATE},
	{"time", RS_COL_TIME},
	{"datetime", RS_COL_TIMESTAMP},
	{"timestamp", RS_COL_TIMESTAMP},
	{"timestamp without time zone", RS_COL_TIMESTAMP},
	{"timestamptz", RS_COL_TIMESTAMPTZ},
	{"timestamp with time zone", RS_COL_TIMESTAMPTZ},
	{"numeric", RS_COL_DECIMAL},
	{"decimal", RS_COL_DECIMAL},
	{"char", RS_COL_CHAR},
	{"character", RS_COL_CHAR},
	{"nchar", RS_COL_CHAR},
	{"native character", RS_COL_CHAR},
	{"json", RS_COL_JSON},
	{"jsonb", RS_COL_JSON},
	{"uuid", RS_COL_UUID},
};

enum rs_col_kind
canonical_kind_sqlite(const char *declared_type)
{
	char name[256];
	enum rs_col_kind kind;

	if (!type_name_normalise(declared_type, true, name, sizeof(name)))
		return RS_COL_OTHER;
	if (kind_lookup(sqlite_kinds, ARRAY_LEN(sqlite_kinds), name, &kind))
		return kind;
	/* Exact decimals: "DECIMAL(30,0)" (NUMERIC affinity: SQLite keeps 15
	 * digits) or "DECIMAL TEXT" (TEXT affinity: every digit kept). */
	if (strstr(name, "decimal") != NULL || strstr(name, "numeric") != NULL)
		return RS_COL_DECIMAL;
	/* SQLite's affinity rules (datatype3.html §3.1), in their order. */
	if (strstr(name, "int") != NULL)
		return RS_COL_INTEGER;
	if (strstr(name, "char") != NULL || strstr(name, "clob") != NULL ||
	    strstr(name, "text") != NULL)
		return RS_COL_TEXT;
	if (strstr(name, "blob") != NULL)
		return RS_COL_BYTES;
	if (strstr(name, "real") != NULL || strstr(name, "floa") != NULL ||
	    strstr(name, "doub") != NULL)
		return RS_COL_FLOAT;
	return RS_COL_OTHER;
}
