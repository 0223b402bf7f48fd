/*
 * reshard: grow a sharded relational database without losing a row.
 *
 * main() picks the command from the table below, runs it, prints the one
 * error message it returns, and turns the error code into the exit status
 * of DESIGN §5: 0 done, 1 failed, 2 bad usage or invalid plan, 3
 * verification found differences.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "cli/cli.h"
#include "common/progress.h"
#include "common/text.h"
#include "shardmap/hash.h"

static const struct rs_command *const commands[] = {
	&cli_dryrun_command, &cli_route_command,  &cli_explain_command,
	&cli_run_command,    &cli_verify_command, &cli_status_command,
	&cli_log_command,    &cli_abort_command,  &cli_demo_command,
};

#define N_COMMANDS (sizeof(commands) / sizeof(*commands))

static void
print_usage(FILE *out)
{
	fputs("usage: reshard COMMAND [ARGS]\n\n"
	      "Grow a sharded database without losing a row.\n\n"
	      "commands:\n",
	      out);
	for (size_t i = 0; i < N_COMMANDS; i++)
		fprintf(out, "  %-8s %s\n", commands[i]->name,
		        commands[i]->usage);
	fputs("\n`reshard COMMAND --help` describes a command; "
	      "`reshard --version` prints the version.\n",
	      out);
}

/* RESHARD_SHA256=NAME picks the SHA-256 implementation of sha256_64 batches
 * instead of the fastest this CPU has (for benchmarks and for a CPU where
 * another one measures faster; all give the same points).  Returns 0, or
 * -1 after a message. */
static int
use_sha256(const char *name)
{
	enum rs_sha256_impl impl;

	if (hash_sha256_impl_from_name(name, &impl) != 0) {
		fprintf(stderr,
		        "reshard: RESHARD_SHA256=%s: not an implementation; "
		        "use avx512, sha-ni or openssl, or unset it\n",
		        name);
		return -1;
	}
	if (hash_sha256_use(impl) != 0) {
		fprintf(stderr,
		        "reshard: RESHARD_SHA256=%s: this CPU cannot run it; "
		        "unset it to use the fastest it has\n",
		        name);
		return -1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	const char *sha256 = getenv("RESHARD_SHA256");
	int sha256_set = sha256 != NULL && sha256[0] != '\0';
	struct rs_err err = {0};
	const char *names[N_COMMANDS];
	const char *close;
	int rc;

#ifdef __GLIBC__
	/* A chunk's buffers (rows read, a statement's data: hundreds of KB)
	 * are freed and made again every chunk.  Left to its defaults, glibc
	 * gives that memory back to the kernel (munmap, a trimmed heap) and
	 * faults it in again, page by page, for the next chunk: a fifth of a
	 * copy's CPU time.  Keeping it costs nothing: the peak is the same. */
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
	if (argc < 2) {
		print_usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		print_usage(stdout);
		return 0;
	}
	if (sha256_set && use_sha256(sha256) != 0)
		return 2;
	if (strcmp(argv[1], "--version") == 0) {
		printf("reshard %s\nsha256_64 batches: %s (%s)\n",
		       RESHARD_VERSION,
		       hash_sha256_impl_name(hash_sha256_impl()),
		       sha256_set ? "set by RESHARD_SHA256"
		                  : "the fastest this CPU has");
		return 0;
	}
	for (size_t i = 0; i < N_COMMANDS; i++) {
		names[i] = commands[i]->name;
		if (strcmp(argv[1], commands[i]->name) != 0)
			continue;
		rc = commands[i]->run(argc - 1, argv + 1, &err);
		if (rc != 0) {
			/* A step that failed left its bar drawn. */
			progress_clear();
			if (err.message[0] != '\0')
				fprintf(stderr, "reshard: %s\n", err.message);
			return rs_err_exit_code(rc);
		}
		if (fflush(stdout) != 0) {
			perror("reshard: cannot write the output");
			return 1;
		}
		return 0;
	}
	if (argv[1][0] == '-') {
		static const struct option options[] = {
			{"help", no_argument, NULL, 'h'},
			{"version", no_argument, NULL, 'V'},
			{NULL, 0, NULL, 0},
		};

		close = cli_closest_option(argv[1], options);
		fprintf(stderr,
		        "reshard: unknown option '%s'%s%s%s; see `reshard "
		        "--help`\n",
		        argv[1], close ? " (did you mean '--" : "",
		        close ? close : "", close ? "'?)" : "");
		return 2;
	}
	close = text_closest(argv[1], names, N_COMMANDS);
	fprintf(stderr,
	        "reshard: unknown command '%s'%s%s%s; see `reshard --help`\n",
	        argv[1], close ? " (did you mean '" : "", close ? close : "",
	        close ? "'?)" : "");
	return 2;
}
