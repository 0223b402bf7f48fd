/*
 * Error codes and the error record that every fallible function fills.
 *
 * A fallible function returns 0 or a negative RS_E… code and, when the
 * caller passed a struct rs_err, writes the one message that describes the
 * failure.  Callers pass the code up without logging it again; only main()
 * prints it and turns it into an exit code (DESIGN §5).  The numbers never
 * change: scripts and the journal store them.
 */
#ifndef RS_ERR_H
#define RS_ERR_H

#include <stddef.h>

enum rs_code {
	RS_OK = 0,
	RS_ENOMEM = -1,     /* out of memory: nothing was changed */
	RS_EIO = -2,        /* a local file could not be read or written */
	RS_EUSAGE = -3,     /* bad command line: see `reshard COMMAND --help` */
	RS_EPLAN = -4,      /* the plan is invalid: every mistake was listed */
	RS_EKEY = -5,       /* a key the plan's hash cannot take (identity) */
	RS_EINTERNAL = -6,  /* a bug: please report it with the message */
	RS_EVERIFY = -7,    /* verification found differences */
	RS_ECONNECT = -8,   /* a shard cannot be reached or the link was lost */
	RS_EQUERY = -9,     /* a statement failed on a shard */
	RS_ESCHEMA = -10,   /* a table is missing or has no primary key */
	RS_EBUSY = -11,     /* the object is in use by another operation */
	RS_EVALUE = -12,    /* a stored value is not in its type's text form */
	RS_ECANCELED = -13, /* stopped on request (a signal, a "no" at a
	                       prompt) at a checkpoint: `run` resumes */
	RS_EDATA = -14,     /* the data does not fit the plan: rows on a shard
	                       that does not own them under `from` */
	RS_EGIVEBACK = -15, /* the cutover would outlast fence_timeout_seconds
	                       before its first irreversible step: the fence
	                       is given back and the cutover tried again */
};

struct rs_err {
	int code;           /* one of enum rs_code, 0 when unset */
	char message[1024]; /* one line, no trailing newline */
	char sqlstate[6];   /* PostgreSQL / MariaDB SQLSTATE, "" if none */
	int server_errno;   /* MariaDB errno or SQLite result code, 0 if none */
	int retryable; /* 1 when trying again may succeed (rs_err_retryable) */
};

/* Record CODE and a printf-style message in ERR (which may be NULL) and
 * return CODE, so that `return rs_err_set(err, RS_EIO, "...")` reads well. */
int rs_err_set(struct rs_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#ifdef __clang_analyzer__
/* The static analyzer reads one file at a time: show it that the result
 * is CODE, so that `rc = rs_err_set(…)` is known to stop what follows. */
#define rs_err_set(err, code, ...)                                             \
	(rs_err_set((err), (code), __VA_ARGS__), (code))
#endif

/* Append TEXT to ERR's message (ERR may be NULL), TEXT whole: a message
 * too long for both keeps its start, cut at the start of a character and
 * ended with an ellipsis.  A TEXT longer than half the message is not
 * appended (the cause comes first).  Returns 1 when appended, else 0. */
int rs_err_append(struct rs_err *err, const char *text);

/* The process exit code for an error code: 2 for usage, plan and data
 * errors, a key the plan's hash cannot take among them (fix the input,
 * nothing was changed by the refusal), 3 for rows that could not be
 * proven on their owner (verification differences, rows purge kept), 4 for a
 * deliberate stop (a signal, a "no" at a prompt; `reshard run` resumes), 1 for
 * everything else. */
int rs_err_exit_code(int code);

/* Whether a failure with SQLSTATE (may be NULL or "") or MariaDB errno /
 * SQLite result code SERVER_ERRNO is worth retrying: a lost connection
 * (class 08, MariaDB 2006/2013), a serialization failure or deadlock
 * (40001, 40P01, MariaDB 1205/1213), a server shutting down or starting
 * (57P01–57P03), SQLITE_BUSY.  The one place where
 * retryable and fatal errors are told apart. */
int rs_err_retryable(const char *sqlstate, int server_errno);

#endif
