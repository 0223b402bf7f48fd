/*
 * `reshard log`: the events every run of a plan left in its journal —
 * steps begun and ended, progress every few seconds, fences, retries,
 * confirmations, cutovers given back, verify's differences, aborts — as
 * lines for people ("2026-12-04T15:15:00.123Z info step fence done") or
 * as JSON lines ({"at": …, "level": …, "message": …}) for scripts and
 * graphs.  Read-only: the journal is opened without its lock, so the log
 * of a run in progress can be read while it runs.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/text.h"
#include "engine/engine.h"

struct log_out {
	FILE *out;
	int json;
	int64_t n;
};

static int
log_line(int64_t at_ms, const char *level, const char *message, void *arg)
{
	struct log_out *o = arg;
	char when[TEXT_ISO_TIME_SIZE];

	text_iso_time(at_ms, when, sizeof(when));
	o->n++;
	if (!o->json) {
		fprintf(o->out, "%s %-5s %s\n", when, level, message);
		return 0;
	}
	json_t *line = json_pack("{s:s, s:s, s:s}", "at", when, "level", level,
	                         "message", message);
	char *text = line != NULL ? json_dumps(line, JSON_COMPACT) : NULL;

	json_decref(line);
	if (text == NULL)
		return RS_ENOMEM;
	fprintf(o->out, "%s\n", text);
	free(text);
	return 0;
}

int
engine_log(const struct rs_plan *plan, int json, FILE *out, struct rs_err *err)
{
	struct rs_journal *journal = NULL;
	struct log_out o = {out, json, 0};
	struct stat sb;
	int rc;

	if (stat(plan->journal, &sb) != 0 && errno == ENOENT) {
		fprintf(stderr,
		        "reshard: no journal at %s: the plan was never run "
		        "(or its run was aborted and its journal set aside; "
		        "`reshard status %s` says where)\n",
		        plan->journal, plan->path);
		return 0;
	}
	rc = journal_open_readonly(plan->journal, &journal, err);
	if (rc == 0)
		rc = journal_events_each(journal, log_line, &o, err);
	if (rc == RS_ENOMEM)
		rs_err_set(err, RS_ENOMEM, "out of memory");
	journal_close(journal, NULL);
	if (rc == 0 && (fflush(out) != 0 || ferror(out)))
		rc = rs_err_set(err, RS_EIO, "cannot write the log: %s",
		                strerror(errno));
	return rc;
}
