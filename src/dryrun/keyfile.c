/*
 * Keys from a key file or standard input, one per line, into the dry-run.
 *
 * The file is read in 1 MiB blocks and split into lines 16 bytes at a time
 * with SSE2 (keys are short: a memchr call per line cost 7% of a dry-run);
 * keys are handed to the dry-run in batches that point into the block, so
 * nothing is copied.  Reading is a small share of a dry-run's time
 * (bench/dryrun measures it).
 */
#include <errno.h>
#include <fcntl.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dryrun/dryrun.h"

#define READ_BLOCK (1 << 20)
#define BATCH      256

struct key_batch {
	const char *keys[BATCH]; /* point into the read buffer */
	size_t lens[BATCH];
	unsigned long long lines[BATCH]; /* for error messages */
	size_t n;
};

/* Hand the batch to the dry-run and empty it.  Returns 0, RS_EKEY naming
 * the key and its line, or RS_ENOMEM. */
static int
keyfile_flush(struct rs_dryrun *dr, const struct rs_plan *plan,
              const char *path, int table, struct key_batch *batch,
              struct rs_err *err)
{
	size_t bad = 0;
	int rc = dryrun_add_keys(dr, table, NULL, batch->keys, batch->lens,
	                         batch->n, &bad, err);

	if (rc == RS_EKEY) {
		char where[4096];

		snprintf(where, sizeof(where), "%s:%llu", path,
		         batch->lines[bad]);
		return dryrun_key_error(plan, where, batch->keys[bad],
		                        batch->lens[bad], err);
	}
	batch->n = 0;
	return rc;
}

struct keyfile {
	struct rs_dryrun *dr;
	const struct rs_plan *plan;
	const char *path;
	int table;
	struct key_batch batch;
	unsigned long long line;
};

/* One line from START to NL (the newline).  Returns 0 or an error. */
static inline int
keyfile_line(struct keyfile *kf, const char *start, const char *nl,
             struct rs_err *err)
{
	size_t len = (size_t)(nl - start);
	struct key_batch *batch = &kf->batch;

	kf->line++;
	if (len > 0 && start[len - 1] == '\r')
		len--;
	if (len == 0)
		return 0;
	batch->keys[batch->n] = start;
	batch->lens[batch->n] = len;
	batch->lines[batch->n] = kf->line;
	if (++batch->n == BATCH)
		return keyfile_flush(kf->dr, kf->plan, kf->path, kf->table,
		                     batch, err);
	return 0;
}

/* Every complete line of [P, END); *REST is where the unfinished last
 * line starts.  Returns 0 or the first line's error. */
static int
keyfile_lines(struct keyfile *kf, const char *p, const char *end,
              const char **rest, struct rs_err *err)
{
	int rc;
	const char *nl;
#if defined(__SSE2__)
	const __m128i newline = _mm_set1_epi8('\n');
	const char *scan = p;

	for (; end - scan >= 16; scan += 16) {
		__m128i chunk = _mm_loadu_si128((const __m128i *)scan);
		unsigned mask = (unsigned)_mm_movemask_epi8(
			_mm_cmpeq_epi8(chunk, newline));

		while (mask != 0) {
			nl = scan + __builtin_ctz(mask);
			mask &= mask - 1;
			if ((rc = keyfile_line(kf, p, nl, err)) != 0)
				return rc;
			p = nl + 1;
		}
	}
#endif
	while ((nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		if ((rc = keyfile_line(kf, p, nl, err)) != 0)
			return rc;
		p = nl + 1;
	}
	*rest = p;
	return 0;
}

/* Read keys from FD.  Empty lines are skipped and a trailing "\r" is
 * dropped (files written on Windows). */
static int
keyfile_read(struct rs_dryrun *dr, const struct rs_plan *plan, const char *path,
             int table, int fd, struct rs_err *err)
{
	size_t cap = READ_BLOCK, have = 0;
	char *buf = malloc(cap);
	struct keyfile kf = {dr, plan, path, table, {.n = 0}, 0};
	int rc = 0;

	if (buf == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	for (;;) {
		ssize_t got;

		if (have == cap) { /* one line longer than the buffer */
			char *bigger = realloc(buf, cap * 2);

			if (bigger == NULL) {
				rc = rs_err_set(err, RS_ENOMEM,
				                "out of memory for a %zu-byte "
				                "line",
				                cap);
				break;
			}
			buf = bigger;
			cap *= 2;
		}
		got = read(fd, buf + have, cap - have);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			rc = rs_err_set(err, RS_EIO, "cannot read %s: %s", path,
			                strerror(errno));
			break;
		}
		if (got == 0 && have > 0) /* last line without newline */
			buf[have++] = '\n';
		else if (got == 0)
			break;
		else
			have += (size_t)got;

		const char *end = buf + have, *p = buf;

		rc = keyfile_lines(&kf, buf, end, &p, err);
		/* The batch points into BUF: finish it before BUF moves. */
		if (rc == 0 && kf.batch.n > 0)
			rc = keyfile_flush(dr, plan, path, table, &kf.batch,
			                   err);
		if (rc != 0)
			goto out;
		have = (size_t)(end - p);
		memmove(buf, p, have);
	}
out:
	free(buf);
	return rc;
}

int
dryrun_run_keyfile(const struct rs_plan *plan,
                   const struct rs_dryrun_options *options, FILE *movers_out,
                   FILE *summary_out, struct rs_err *err)
{
	struct rs_dryrun *dr = NULL;
	const char *path = options->keys_path;
	int fd, rc, table;

	rc = dryrun_begin(plan, options, movers_out, &dr, err);
	if (rc != 0)
		return rc;
	table = options->table != NULL ? plan_table_index(plan, options->table)
	                               : 0;
	if (strcmp(path, "-") == 0) {
		fd = STDIN_FILENO;
	} else {
		fd = open(path, O_RDONLY);
		if (fd < 0) {
			rc = rs_err_set(err, RS_EIO,
			                "cannot open key file %s: %s", path,
			                strerror(errno));
			dryrun_free(dr);
			return rc;
		}
		posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	}
	rc = keyfile_read(dr, plan, path, table, fd, err);
	if (fd != STDIN_FILENO)
		close(fd);
	if (rc == 0)
		rc = dryrun_finish(dr, summary_out, err);
	dryrun_free(dr);
	return rc;
}
