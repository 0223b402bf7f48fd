/*
 * Progress bars and progress lines on standard error.
 */
#include "common/progress.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "common/text.h"

#define TTY_INTERVAL_NS  200000000ULL  /* 0.2 s */
#define LINE_INTERVAL_NS 5000000000ULL /* 5 s */
#define BAR_WIDTH        30

/* The progress whose bar is on the terminal now (drawn without a newline),
 * for progress_clear; NULL when none is. */
static struct rs_progress *progress_shown;

void
progress_start(struct rs_progress *p, const char *label, uint64_t total)
{
	int quiet = p->quiet;
	void (*note)(void *, const char *) = p->note;
	void *note_arg = p->note_arg;

	if (progress_shown == p)
		progress_clear();
	memset(p, 0, sizeof(*p));
	p->quiet = quiet;
	p->note = note;
	p->note_arg = note_arg;
	snprintf(p->label, sizeof(p->label), "%s", label);
	p->total = total;
	p->tty = isatty(STDERR_FILENO);
	p->started_ns = uv_hrtime();
	p->printed_ns = p->started_ns;
	p->noted_ns = p->started_ns;
}

static double progress_rate(const struct rs_progress *p, uint64_t now);

/* The line of a progress note: "LABEL: N of ~T rows (P%), R rows/s". */
static void
progress_note(struct rs_progress *p, uint64_t now, int last)
{
	char line[256], done[32], total[32], speed[32];

	if (p->note == NULL)
		return;
	text_thousands(p->done, done, sizeof(done));
	text_thousands(p->total, total, sizeof(total));
	text_thousands((uint64_t)progress_rate(p, now), speed, sizeof(speed));
	if (last)
		snprintf(line, sizeof(line),
		         "%s: %s rows in %.1f s (%s rows/s)", p->label, done,
		         (double)(now - p->started_ns) / 1e9, speed);
	else
		snprintf(line, sizeof(line), "%s: %s of ~%s rows, %s rows/s",
		         p->label, done, total, speed);
	p->note(p->note_arg, line);
	p->noted_ns = now;
}

void
progress_resume(struct rs_progress *p, uint64_t rows)
{
	p->before = rows;
	p->done = rows;
}

void
progress_expect(struct rs_progress *p, uint64_t n)
{
	p->total += n;
}

static double
progress_rate(const struct rs_progress *p, uint64_t now)
{
	double seconds = (double)(now - p->started_ns) / 1e9;

	return seconds > 0 ? (double)(p->done - p->before) / seconds : 0;
}

static void
progress_draw(struct rs_progress *p, uint64_t now)
{
	double rate = progress_rate(p, now), share = 0;
	char done[32], total[32], speed[32], left[32] = "?";

	text_thousands(p->done, done, sizeof(done));
	text_thousands(p->total, total, sizeof(total));
	text_thousands((uint64_t)rate, speed, sizeof(speed));
	if (p->total > 0)
		share = p->done >= p->total
		                ? 100.0
		                : 100.0 * (double)p->done / (double)p->total;
	if (p->total > p->done && rate > 0)
		snprintf(left, sizeof(left), "%.0f s",
		         (double)(p->total - p->done) / rate);
	if (p->tty) {
		int filled = (int)(share * BAR_WIDTH / 100);

		fprintf(stderr, "\r\033[K%s [", p->label);
		for (int i = 0; i < BAR_WIDTH; i++)
			fputs(i < filled ? "\u2588" : " ", stderr);
		fprintf(stderr, "] %s / ~%s rows  %s rows/s  %s left", done,
		        total, speed, left);
		progress_shown = p;
	} else {
		fprintf(stderr,
		        "%s: %s of ~%s rows (%.0f%%), %s rows/s, %s left\n",
		        p->label, done, total, share, speed, left);
	}
	fflush(stderr);
	p->printed_ns = now;
}

void
progress_add(struct rs_progress *p, uint64_t n)
{
	uint64_t now;

	p->done += n;
	now = uv_hrtime();
	if (p->note != NULL && now - p->noted_ns >= LINE_INTERVAL_NS)
		progress_note(p, now, 0);
	if (p->quiet)
		return;
	if (now - p->printed_ns >=
	    (p->tty ? TTY_INTERVAL_NS : LINE_INTERVAL_NS))
		progress_draw(p, now);
}

void
progress_finish(struct rs_progress *p)
{
	uint64_t now = uv_hrtime();
	char done[32], before[32], speed[32];

	progress_note(p, now, 1);
	if (p->quiet)
		return;
	if (p->tty)
		fputs("\r\033[K", stderr);
	if (progress_shown == p)
		progress_shown = NULL;
	fprintf(stderr, "%s: %s rows", p->label,
	        text_thousands(p->done, done, sizeof(done)));
	if (p->before > 0)
		fprintf(stderr, " (%s of them before it was resumed)",
		        text_thousands(p->before, before, sizeof(before)));
	fprintf(stderr, " in %.1f s (%s rows/s)\n",
	        (double)(now - p->started_ns) / 1e9,
	        text_thousands((uint64_t)progress_rate(p, now), speed,
	                       sizeof(speed)));
	fflush(stderr);
}

void
progress_clear(void)
{
	if (progress_shown == NULL)
		return;
	fputs("\r\033[K", stderr);
	fflush(stderr);
	progress_shown->printed_ns = 0; /* drawn again at the next add */
	progress_shown = NULL;
}
