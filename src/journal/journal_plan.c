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

/* At most this many differing plan lines are named in a refusal, each cut
 * to this many bytes so that the advice after them fits in the message. */
#define JOURNAL_DIFF_LINES    3
#define JOURNAL_DIFF_LINE_MAX 90

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

/* Append one difference (WAS or NOW may be NULL: the line is absent) to
 * OUT. */
static void
journal_diff_add(char *out, size_t size, const char *was, const char *now)
{
	size_t used = strlen(out);

	snprintf(out + used, size - used, "%swas: %s%.*s%s, now: %s%.*s%s",
	         used > 0 ? "; " : "", was ? "\"" : "", JOURNAL_DIFF_LINE_MAX,
	         was ? was : "(not set)", was ? "\"" : "", now ? "\"" : "",
	         JOURNAL_DIFF_LINE_MAX, now ? now : "(not set)",
	         now ? "\"" : "");
}

/* Describe into OUT how plan text NEW differs from OLD, setting by setting
 * (a changed value pairs the old and new line of the same setting), naming
 * at most JOURNAL_DIFF_LINES differences and counting the rest.  RS_ENOMEM
 * on failure. */
static int
journal_plan_diff(const char *old, const char *new, char *out, size_t size)
{
	struct journal_lines was, now;
	size_t shown = 0, more = 0, i, j;
	char *paired;

	out[0] = '\0';
	if (journal_split_lines(old, &was) != 0)
		return RS_ENOMEM;
	if (journal_split_lines(new, &now) != 0) {
		journal_lines_free(&was);
		return RS_ENOMEM;
	}
	paired = calloc(now.n + 1, 1);
	if (paired == NULL) {
		journal_lines_free(&was);
		journal_lines_free(&now);
		return RS_ENOMEM;
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
			journal_diff_add(out, size, was.line[i], match);
			shown++;
		} else {
			more++;
		}
	}
	for (j = 0; j < now.n; j++) {
		if (paired[j] || journal_lines_have(&was, now.line[j]))
			continue;
		if (shown < JOURNAL_DIFF_LINES) {
			journal_diff_add(out, size, NULL, now.line[j]);
			shown++;
		} else {
			more++;
		}
	}
	if (more > 0) {
		size_t used = strlen(out);

		snprintf(out + used, size - used, "; and %zu more", more);
	}
	free(paired);
	journal_lines_free(&was);
	journal_lines_free(&now);
	return 0;
}

int
journal_check_plan(struct rs_journal *journal, const char *fingerprint,
                   const char *plan_text, struct rs_err *err)
{
	sqlite3_stmt *stmt;
	char diff[768];
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
	rc = journal_plan_diff((const char *)sqlite3_column_text(stmt, 1),
	                       plan_text, diff, sizeof(diff));
	sqlite3_finalize(stmt);
	if (rc != 0)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	return rs_err_set(err, RS_EPLAN,
	                  "journal %s was started with another plan: %s; "
	                  "restore the plan that started this run, or move the "
	                  "journal %s aside to start a new run",
	                  journal->path,
	                  diff[0] != '\0' ? diff
	                                  : "no setting shown differs, so a "
	                                    "secret or a setting left out of "
	                                    "the plan text changed",
	                  journal->path);
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
