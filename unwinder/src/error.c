/* error.c — error codes, their names, and the one message formatter (the
 * message convention is in fp_error.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "frameproof/frameproof.h"
#include "fp_error.h"

const char *fp_error_describe(int code)
{
    switch (code) {
    case FP_OK: return "success";
    case FP_E_NOMEM: return "out of memory";
    case FP_E_INVALID_ARG: return "invalid argument";
    case FP_E_PROCESS_GONE: return "process does not exist or exited";
    case FP_E_PERMISSION: return "permission denied";
    case FP_E_NOT_PYTHON: return "not a Python process";
    case FP_E_UNSUPPORTED: return "unsupported CPython version or build";
    case FP_E_CORRUPT: return "invalid or corrupt layout or data";
    case FP_E_INCOMPLETE: return "incomplete sample";
    case FP_E_LIMIT: return "limit exceeded";
    case FP_E_READ: return "memory read failed";
    case FP_E_IO: return "I/O error";
    case FP_E_FORMAT: return "malformed file";
    case FP_E_STATE: return "invalid state for this call";
    default: return "unknown error";
    }
}

int fpi_vmsg(char *buf, size_t len, int code, const char *fmt, va_list ap)
{
    if (buf && len)
        vsnprintf(buf, len, fmt, ap);
    return code;
}

int fpi_msg(char *buf, size_t len, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fpi_vmsg(buf, len, code, fmt, ap);
    va_end(ap);
    return code;
}

int fpi_err(fpi_errbuf *eb, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fpi_vmsg(eb ? eb->msg : NULL, eb ? sizeof eb->msg : 0, code, fmt, ap);
    va_end(ap);
    return code;
}

int fpi_err_code(fpi_errbuf *eb, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fpi_vmsg(eb ? eb->msg : NULL, eb ? sizeof eb->msg : 0, code, fmt, ap);
    va_end(ap);
    fpi_err_append(eb, ": %s", fp_error_describe(code));
    return code;
}

void fpi_err_append(fpi_errbuf *eb, const char *fmt, ...)
{
    if (!eb)
        return;
    size_t used = strnlen(eb->msg, sizeof eb->msg);
    if (used + 1 >= sizeof eb->msg)
        return;
    va_list ap;
    va_start(ap, fmt);
    fpi_vmsg(eb->msg + used, sizeof eb->msg - used, 0, fmt, ap);
    va_end(ap);
}

void fpi_err_prefix(fpi_errbuf *eb, const char *fmt, ...)
{
    if (!eb)
        return;
    fpi_errbuf inner = *eb;
    va_list ap;
    va_start(ap, fmt);
    fpi_vmsg(eb->msg, sizeof eb->msg, 0, fmt, ap);
    va_end(ap);
    fpi_err_append(eb, ": %s", inner.msg);
}

int fpi_errno_code(int err)
{
    switch (err) {
    case ESRCH:
    case ENOENT:
        return FP_E_PROCESS_GONE;
    case EPERM:
    case EACCES:
        return FP_E_PERMISSION;
    case ENOMEM:
        return FP_E_NOMEM;
    case EFAULT:
    case EIO:
        return FP_E_READ;
    default:
        return FP_E_IO;
    }
}
