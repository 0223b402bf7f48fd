/*
 * The differences verify recorded in the journal (journal.h, struct
 * rs_difference), told to people and to programs: by `reshard verify`
 * after its pass and by `reshard status` (engine.h).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"
#include "engine/engine.h"
#include "engine/walk.h"

/* Differences listed in text and in JSON; all are counted. */
#define DIFFERENCES_LISTED 1000

/* The JSON text TEXT as a JSON value, or as a string when it is not JSON
 * (NULL gives null). */
static json_t *
differences_json_value(const char *text)
{
	json_t *v;

	if (text == NULL)
		return json_null();
	v = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	return v != NULL ? v : json_string(text);
}

/* A shard key as JSON, as the journal writes key values (walk.h). */
static json_t *
differences_key_json(const char *key)
{
	struct rs_value v = {key, key != NULL ? strlen(key) : 0};

	return walk_value_json(&v);
}

json_t *
engine_differences_json(const struct rs_difference *d, int n)
{
	json_t *array = json_array();
	int failed = array == NULL;

	for (int i = 0; !failed && i < n; i++) {
		char iso[TEXT_ISO_TIME_SIZE];

		text_iso_time(d[i].found_at, iso, sizeof(iso));
		failed |=
			json_array_append_new(
				array,
				json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, "
		                          "s:s, s:o, s:s}",
		                          "pass", d[i].pass, "kind", d[i].kind,
		                          "shard", d[i].shard, "table",
		                          d[i].table, "shard_key",
		                          differences_key_json(d[i].shard_key),
		                          "primary_key",
		                          differences_json_value(d[i].pk),
		                          "owner", d[i].owner, "columns",
		                          differences_json_value(d[i].columns),
		                          "found_at", iso)) != 0;
	}
	if (failed) {
		json_decref(array);
		return NULL;
	}
	return array;
}

void
engine_differences_text(FILE *out, const struct rs_difference *d, int n,
                        int64_t total, int passes)
{
	for (int i = 0; i < n; i++) {
		char key[TEXT_KEY_SHOWN_SIZE];

		if (passes && (i == 0 || strcmp(d[i].pass, d[i - 1].pass) != 0))
			fprintf(out, "  found by step %s:\n", d[i].pass);
		fprintf(out, "  %-7s %s.%s key %s%s%s pk %s -> %s%s%s\n",
		        d[i].kind, d[i].shard, d[i].table,
		        d[i].shard_key != NULL ? "'" : "",
		        d[i].shard_key != NULL
		                ? text_key_shown(d[i].shard_key,
		                                 strlen(d[i].shard_key), key,
		                                 sizeof(key))
		                : "NULL",
		        d[i].shard_key != NULL ? "'" : "", d[i].pk, d[i].owner,
		        d[i].columns != NULL ? ", columns " : "",
		        d[i].columns != NULL ? d[i].columns : "");
	}
	if (total > n)
		fprintf(out, "  … and %lld more (--format json lists %d)\n",
		        (long long)(total - n), DIFFERENCES_LISTED);
}

int
engine_differences_read(struct rs_journal *journal, const char *pass, int text,
                        struct rs_difference **diffs, int *n, int64_t *total,
                        struct rs_err *err)
{
	return journal_differences(journal, pass,
	                           text ? 20 : DIFFERENCES_LISTED, diffs, n,
	                           total, err);
}

int
engine_verify_report(const struct rs_plan *plan, const char *pass, int json,
                     FILE *out, struct rs_err *err)
{
	struct rs_journal *journal;
	struct rs_difference *d = NULL;
	struct rs_step_record rec;
	int64_t total = 0, movers = 0;
	int n = 0, rc = journal_open_readonly(plan->journal, &journal, err);

	if (rc != 0)
		return rc;
	rc = journal_step_get(journal, pass, &rec, err);
	if (rc == 0)
		rc = journal_step_affected(journal, pass, &movers, err);
	if (rc == 0)
		rc = engine_differences_read(journal, pass, !json, &d, &n,
		                             &total, err);
	if (rc == 0 && json) {
		char iso[TEXT_ISO_TIME_SIZE];
		json_t *list = engine_differences_json(d, n);
		json_t *root =
			list == NULL
				? NULL
				: json_pack("{s:s, s:s, s:o, s:I, s:I, s:I, "
		                            "s:o}",
		                            "plan", plan->name, "result",
		                            total > 0 ? "differences" : "same",
		                            "finished_at",
		                            rec.finished_at > 0
		                                    ? json_string(text_iso_time(
							      rec.finished_at,
							      iso, sizeof(iso)))
		                                    : json_null(),
		                            "rows_read", (json_int_t)rec.rows,
		                            "movers_compared",
		                            (json_int_t)movers,
		                            "differences_total",
		                            (json_int_t)total, "differences",
		                            list);

		if (root == NULL)
			rc = rs_err_set(err, RS_ENOMEM, "out of memory");
		else if (json_dumpf(root, out, JSON_PRESERVE_ORDER) != 0)
			rc = rs_err_set(err, RS_EIO,
			                "cannot write the differences");
		else
			fputc('\n', out);
		json_decref(root);
	} else if (rc == 0) {
		char rows[32], compared[32];

		text_thousands((uint64_t)rec.rows, rows, sizeof(rows));
		text_thousands((uint64_t)movers, compared, sizeof(compared));
		if (total == 0)
			fprintf(out,
			        "verify: the %s rows that move are the same on "
			        "their new owners (%s rows read on the old "
			        "owners)\n",
			        compared, rows);
		else
			fprintf(out,
			        "verify: %lld differences between the %s rows "
			        "that move and their copies (%s rows read on "
			        "the old owners); recorded in the journal, "
			        "`reshard status %s` lists them:\n",
			        (long long)total, compared, rows, plan->path);
		engine_differences_text(out, d, n, total, 0);
	}
	journal_differences_free(d, n);
	journal_close(journal, NULL);
	if (rc == 0 && total > 0)
		rc = rs_err_set(err, RS_EVERIFY,
		                "verify found %lld differences; nothing was "
		                "changed",
		                (long long)total);
	return rc;
}
