/*
 * The error record: formatting a message and mapping codes to exit codes.
 */
#include "common/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#undef rs_err_set /* the analyzer's view of it, in the header */

int
rs_err_set(struct rs_err *err, int code, const char *fmt, ...)
{
	if (err != NULL) {
		va_list ap;

		err->code = code;
		err->sqlstate[0] = '\0';
		err->server_errno = 0;
		err->retryable = 0;
		va_start(ap, fmt);
		vsnprintf(err->message, sizeof(err->message), fmt, ap);
		va_end(ap);
	}
	return code;
}

int
rs_err_append(struct rs_err *err, const char *text)
{
	static const char ellipsis[] = "\u2026";
	size_t len, n = strlen(text);

	if (err == NULL || n > sizeof(err->message) / 2)
		return 0;
	len = strlen(err->message);
	if (len + n >= sizeof(err->message)) {
		len = sizeof(err->message) - n - sizeof(ellipsis);
		/* Not inside a UTF-8 sequence: back to its lead byte. */
		while (len > 0 &&
		       ((unsigned char)err->message[len] & 0xC0) == 0x80)
			len--;
		memcpy(err->message + len, ellipsis, sizeof(ellipsis) - 1);
		len += sizeof(ellipsis) - 1;
	}
	memcpy(err->message + len, text, n + 1);
	return 1;
}

int
rs_err_exit_code(int code)
{
	switch (code) {
	case RS_OK:
		return 0;
	case RS_EUSAGE:
	case RS_EPLAN:
	case RS_EDATA:
	case RS_EKEY: /* bad input: fixing the key or the plan's hash helps,
	                 running again does not */
		return 2;
	case RS_EVERIFY:
		return 3;
	case RS_ECANCELED:
		return 4;
	default:
		return 1;
	}
}

int
rs_err_retryable(const char *sqlstate, int server_errno)
{
	if (server_errno == 1153) /* packet too large: 08S01, but a retry
	                             fails the same way */
		return 0;
	if (sqlstate != NULL && sqlstate[0] != '\0') {
		/* Connection exceptions, serialization failures, deadlocks,
		 * a lock timeout (55P03: a long transaction holds the lock)
		 * and a server shutting down or starting (57P01–57P03). */
		if (strncmp(sqlstate, "08", 2) == 0 ||
		    strcmp(sqlstate, "40001") == 0 ||
		    strcmp(sqlstate, "40P01") == 0 ||
		    strcmp(sqlstate, "55P03") == 0 ||
		    strcmp(sqlstate, "57P01") == 0 ||
		    strcmp(sqlstate, "57P02") == 0 ||
		    strcmp(sqlstate, "57P03") == 0)
			return 1;
	}
	switch (server_errno) {
	case 1205: /* ER_LOCK_WAIT_TIMEOUT */
	case 1213: /* ER_LOCK_DEADLOCK */
	case 2006: /* CR_SERVER_GONE_ERROR */
	case 2013: /* CR_SERVER_LOST */
	case 1927: /* ER_CONNECTION_KILLED */
	case 5:    /* SQLITE_BUSY */
		return 1;
	default:
		return 0;
	}
}
