/*
 * Progress of a long operation on standard error: on a terminal a bar
 * redrawn a few times a second (rows, rate, time left), elsewhere one line
 * every few seconds, and a closing line either way.  Callers report work
 * with progress_add; nothing runs in the background.  A message printed
 * while a bar is drawn calls progress_clear first.
 */
#ifndef RS_PROGRESS_H
#define RS_PROGRESS_H

#include <stdint.h>

struct rs_progress {
	char label[48];      /* "verify", "dry-run" … */
	uint64_t done;       /* rows so far, BEFORE included */
	uint64_t before;     /* rows done before this start (a resumed
	                        step): counted, not in the rate */
	uint64_t total;      /* expected rows, 0 when unknown */
	uint64_t started_ns; /* uv_hrtime() at progress_start */
	uint64_t printed_ns; /* when the last bar or line was drawn */
	int tty;             /* standard error is a terminal */
	int quiet;           /* draw nothing (tests, --summary pipes) */
	/* Called with the progress line every few seconds and at the end,
	 * terminal or not, quiet or not (the run's log): NULL for none.
	 * Kept by progress_start. */
	void (*note)(void *arg, const char *line);
	void *note_arg;
	uint64_t noted_ns; /* when NOTE was last called */
};

/* Start counting rows of LABEL, TOTAL expected (0: unknown). */
void progress_start(struct rs_progress *p, const char *label, uint64_t total);

/* Count ROWS as done before this start (by an earlier attempt of a
 * resumed step): they are in the count and the share of the total, not
 * in the rate.  Call it right after progress_start. */
void progress_resume(struct rs_progress *p, uint64_t rows);

/* Raise the expected total by N (when it is learnt piece by piece). */
void progress_expect(struct rs_progress *p, uint64_t n);

/* Count N more rows; redraw if it is time. */
void progress_add(struct rs_progress *p, uint64_t n);

/* Clear the bar and print "LABEL: N rows in S s (R rows/s)", with how
 * many of the N were done before a resume. */
void progress_finish(struct rs_progress *p);

/* Erase the bar on the terminal, if one is drawn, so that a message
 * written to standard error next starts on a clean line; the bar is drawn
 * again, below the message, at the next progress_add.  Call it before
 * every message that may be printed while a bar is drawn. */
void progress_clear(void);

#endif
