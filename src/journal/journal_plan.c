/*
 * Plan pinning, behind journal.h: a new journal pins the plan's
 * fingerprint and its canonical text (secrets removed) in its setup row;
 * reopening it with another fingerprint is refused, naming the settings
 * that differ between the pinned text and the new one, so that a resumed
 * run never carries on under a plan it did not start with.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "journal/journal.h"
#include "journal/journal_impl.h"
#include "common/strbuf.h"

/* At most this many differing plan lines are named in a refusal, each cut
 * to this many bytes so that the advice after them fits in the message. */
#define JOURNAL_DIFF_LINES    3
#define JOURNAL_DIFF_LINE_MAX 90
/* Bytes shown before the first difference of two lines alike over their
 * first JOURNAL_DIFF_LINE_MAX bytes. */
#define JOURNAL_DIFF_CONTEXT 30

int
journal_pin_plan(struct rs_journal *journal, const char *fingerprint,
                 const char *plan_text, struct rs_err *err)
{
	sqlite3_stmt *stmt;
	int rc = journal_prepare(journal,
	                         "INSERT INTO setup (id, schema_version, "
	                         "fingerprint, plan_text, created_at) "
	                         "VALUES (1, ?1, ?2, ?3, ?4)",
	                         &stmt, err);

	if (rc != 0)
		return rc;
	rc = journal_bind_int64(stmt, 1, JOURNAL_SCHEMA_VERSION, SQLITE_OK);
	rc = journal_bind_text(stmt, 2, fingerprint, rc);
	rc = journal_bind_text(stmt, 3, plan_text ? plan_text : "", rc);
	rc = journal_bind_int64(stmt, 4, journal_now_ms(), rc);
	return journal_finish(journal, stmt, rc, "record the plan", NULL, err);
}

/* The lines of a plan text, split in place in a copy; empty lines are
 * skipped. */
struct journal_lines {
	char *copy;
	char **line;
	size_t n;
};

/* Split TEXT (NULL is empty) into LINES; RS_ENOMEM on failure, with LINES
 * empty. */
static int
journal_split_lines(const char *text, struct journal_lines *lines)
{
	size_t max = 1;
	char *p, *next;

	lines->n = 0;
	lines->line = NULL;
	lines->copy = strdup(text != NULL ? text : "");
	for (p = lines->copy; p != NULL && *p != '\0'; p++)
		max += *p == '\n';
	if (lines->copy != NULL)
		lines->line = malloc(max * sizeof(*lines->line));
	if (lines->line == NULL) {
		free(lines->copy);
		lines->copy = NULL;
		return RS_ENOMEM;
	}
	for (p = lines->copy; p != NULL; p = next) {
		size_t len;

		next = strchr(p, '\n');
		if (next != NULL)
			*next++ = '\0';
		len = strlen(p);
		if (len > 0 && p[len - 1] == '\r')
			p[--len] = '\0';
		if (len > 0)
			lines->line[lines->n++] = p;
	}
	return 0;
}

static void
journal_lines_free(struct journal_lines *lines)
{
	free(lines->line);
	free(lines->copy);
}

/* Whether LINES holds LINE exactly. */
static int
journal_lines_have(const struct journal_lines *lines, const char *line)
{
	for (size_t i = 0; i < lines->n; i++)
		if (strcmp(lines->line[i], line) == 0)
			return 1;
	return 0;
}

/* The length of LINE's setting name: up to the '=' of "setting = value",
 * without the spaces before it, or the whole line when it has no '='. */
static size_t
journal_line_key(const char *line)
{
	const char *eq = strchr(line, '=');
	size_t len = eq != NULL ? (size_t)(eq - line) : strlen(line);

	while (len > 0 && line[len - 1] == ' ')
		len--;
	return len;
}

/* Append LINE to OUT in quotes, from byte FROM on (after its setting
 * name and "= …" when FROM is not 0), cut to JOURNAL_DIFF_LINE_MAX bytes,
 * or "(not set)" when it is NULL (the line is absent). */
static void
journal_diff_line(struct rs_strbuf *out, const char *line, size_t from)
{
	if (line == NULL) {
		strbuf_str(out, "(not set)");
		return;
	}
	strbuf_str(out, "\"");
	if (from > 0) {
		strbuf_add(out, line, journal_line_key(line));
		strbuf_str(out, " = …");
	}
	strbuf_add(out, line + from,
	           strnlen(line + from, JOURNAL_DIFF_LINE_MAX));
	strbuf_str(out, "\"");
}

/* Where to start showing lines WAS and NOW, both given: 0, or, when they
 * are alike over all the bytes shown of them (a long pinned key that
 * differs near its end), a little before their first difference, on the
 * start of a UTF-8 character, so that the two shown differ. */
static size_t
journal_diff_from(const char *was, const char *now)
{
	size_t same = 0, from;

	while (was[same] != '\0' && was[same] == now[same])
		same++;
	if (same < JOURNAL_DIFF_LINE_MAX)
		return 0;
	from = same - JOURNAL_DIFF_CONTEXT;
	while (from > 0 && ((unsigned char)was[from] & 0xc0) == 0x80)
		from--;
	return from;
}

/* Append one difference (WAS or NOW may be NULL: the line is absent) to
 * OUT. */
static void
journal_diff_add(struct rs_strbuf *out, const char *was, const char *now)
{
	size_t from =
		was != NULL && now != NULL ? journal_diff_from(was, now) : 0;

	if (out->len > 0)
		strbuf_str(out, "; ");
	strbuf_str(out, "was: ");
	journal_diff_line(out, was, from);
	strbuf_str(out, ", now: ");
	journal_diff_line(out, now, from);
}

/* How plan text NEW differs from OLD, setting by setting (a changed value
 * pairs the old and new line of the same setting), naming at most
 * JOURNAL_DIFF_LINES differences and counting the rest: a malloc'd string
 * (free it), "" when no line differs, NULL when out of memory. */
static char *
journal_plan_diff(const char *old, const char *new)
{
	struct rs_strbuf out = {0};
	struct journal_lines was, now;
	size_t shown = 0, more = 0, i, j;
	char *paired;

	if (journal_split_lines(old, &was) != 0)
		return NULL;
	if (journal_split_lines(new, &now) != 0) {
		journal_lines_free(&was);
		return NULL;
	}
	paired = calloc(now.n + 1, 1);
	if (paired == NULL) {
		journal_lines_free(&was);
		journal_lines_free(&now);
		return NULL;
	}
	for (i = 0; i < was.n; i++) {
		const char *match = NULL;
		size_t key = journal_line_key(was.line[i]);

		if (journal_lines_have(&now, was.line[i]))
			continue;
		for (j = 0; j < now.n && match == NULL; j++) {
			if (!paired[j] &&
			    journal_line_key(now.line[j]) == key &&
			    strncmp(now.line[j], was.line[i], key) == 0 &&
			    !journal_lines_have(&was, now.line[j])) {
				paired[j] = 1;
				match = now.line[j];
			}
		}
		if (shown < JOURNAL_DIFF_LINES) {
			journal_diff_add(&out, was.line[i], match);
			shown++;
		} else {
			more++;
		}
	}
	for (j = 0; j < now.n; j++) {
		if (paired[j] || journal_lines_have(&was, now.line[j]))
			continue;
		if (shown < JOURNAL_DIFF_LINES) {
			journal_diff_add(&out, NULL, now.line[j]);
			shown++;
		} else {
			more++;
		}
	}
	if (more > 0) {
		char count[48];

		snprintf(count, sizeof(count), "; and %zu more", more);
		strbuf_str(&out, count);
	}
	free(paired);
	journal_lines_free(&was);
	journal_lines_free(&now);
	return strbuf_finish(&out);
}

int
journal_check_plan(struct rs_journal *journal, const char *fingerprint,
                   const char *plan_text, struct rs_err *err)
{
	sqlite3_stmt *stmt;
	char *diff;
	int rc = journal_prepare(journal,
	                         "SELECT fingerprint, plan_text FROM setup "
	                         "WHERE id = 1",
	                         &stmt, err);

	if (rc != 0)
		return rc;
	rc = sqlite3_step(stmt);
	if (rc != SQLITE_ROW) {
		if (rc == SQLITE_DONE)
			rc = rs_err_set(
				err, RS_EIO,
				"journal %s is damaged: it has no setup "
				"row pinning its plan",
				journal->path);
		else
			rc = journal_fail(journal,
			                  sqlite3_extended_errcode(journal->db),
			                  "read", "the pinned plan", err);
		sqlite3_finalize(stmt);
		return rc;
	}
	const char *pinned = (const char *)sqlite3_column_text(stmt, 0);
	if (pinned != NULL && strcmp(pinned, fingerprint) == 0) {
		sqlite3_finalize(stmt);
		return 0;
	}
	diff = journal_plan_diff((const char *)sqlite3_column_text(stmt, 1),
	                         plan_text);
	sqlite3_finalize(stmt);
	if (diff == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	rc = rs_err_set(err, RS_EPLAN,
	                "journal %s was started with another plan: %s; "
	                "restore the plan that started this run, or move the "
	                "journal %s aside to start a new run",
	                journal->path,
	                diff[0] != '\0' ? diff
	                                : "no setting shown differs, so a "
	                                  "secret or a setting left out of "
	                                  "the plan text changed",
	                journal->path);
	free(diff);
	return rc;
}

/* NULL on any error (a journal that cannot be read, out of memory). */
char *
journal_plan_text(struct rs_journal *journal)
{
	sqlite3_stmt *stmt;
	char *text = NULL;
	int failed = 0; /* out of memory gives NULL, as the header says */

	if (journal == NULL ||
	    journal_prepare(journal, "SELECT plan_text FROM setup WHERE id = 1",
	                    &stmt, NULL) != 0)
		return NULL;
	if (sqlite3_step(stmt) == SQLITE_ROW)
		text = journal_column_dup(stmt, 0, &failed);
	sqlite3_finalize(stmt);
	return text;
}
