/*
 * The error record: formatting a message and mapping codes to exit codes.
 */
#include "common/err.h"

#include <stdarg.h>
#include <stdio.h>

int
rs_err_set(struct rs_err *err, int code, const char *fmt, ...)
{
	if (err != NULL) {
		va_list ap;

		err->code = code;
		va_start(ap, fmt);
		vsnprintf(err->message, sizeof(err->message), fmt, ap);
		va_end(ap);
	}
	return code;
}

int
rs_err_exit_code(int code)
{
	switch (code) {
	case RS_OK:
		return 0;
	case RS_EUSAGE:
	case RS_EPLAN:
		return 2;
	case RS_EVERIFY:
		return 3;
	default:
		return 1;
	}
}
