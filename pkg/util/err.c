/* err.c: error codes, their names, and the message buffer callers hand down. */
#include "profd/util.h"

#include <stdio.h>
#include <string.h>

const char *pd_strerror(int code)
{
	switch (code) {
	case PD_OK: return "ok";
	case PD_EINVAL: return "invalid argument";
	case PD_ENOMEM: return "out of memory";
	case PD_EIO: return "i/o error";
	case PD_ECORRUPT: return "corrupt data";
	case PD_ETOOBIG: return "size limit exceeded";
	case PD_ENOTFOUND: return "not found";
	case PD_EINCOMPAT: return "incompatible inputs";
	case PD_EFULL: return "full";
	case PD_EUNAVAIL: return "unreachable";
	case PD_ELIMIT: return "limit reached";
	default: return "unknown error";
	}
}

int pd_err_set(struct pd_err *err, int code, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		err->code = code;
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return code;
}

void pd_err_prefix(struct pd_err *err, const char *fmt, ...)
{
	char prefix[PD_ERR_MSG_MAX];
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	size_t pl = strlen(prefix), ml = strnlen(err->msg, sizeof(err->msg) - 1);
	if (pl + 2 >= sizeof(err->msg))
		pl = sizeof(err->msg) - 3;
	if (pl + 2 + ml >= sizeof(err->msg))
		ml = sizeof(err->msg) - 3 - pl;
	memmove(err->msg + pl + 2, err->msg, ml);
	memcpy(err->msg, prefix, pl);
	err->msg[pl] = ':';
	err->msg[pl + 1] = ' ';
	err->msg[pl + 2 + ml] = '\0';
}
