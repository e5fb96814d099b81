/* fp_error.h — the library's error messages: the per-handle message buffer
 * and the one formatter every message goes through.
 *
 * Convention (every message behind fp_session_get_errmsg(), an image or reader
 * err buffer; tests/unit/check_messages.py checks the format strings):
 *   - one line: no newline, no trailing period;
 *   - starts lower-case, unless it starts with a name spelled as its owner
 *     spells it (CPython, ELF, TLBC, Py_Version, _PyRuntime, _PyCFrame);
 *   - "what failed: why" — the thing or operation that failed first, then
 *     ": " and the reason ("str at 0x…: invalid code point"; a failed read
 *     gets the code's name: "cannot read frame at 0x…: memory read
 *     failed"); context a caller adds goes in front the same way
 *     ("frame 0x7f12…: cannot read code object at 0x…: …");
 *   - numbers: addresses as 0x%llx (lower-case hex, no padding),
 *     PY_VERSION_HEX values as 0x%08x, a byte as 0x%02x, counts and sizes in decimal ("N
 *     bytes"), a bound as "(limit N)";
 *   - out of memory is "out of memory: <what was being allocated>".
 * An error code is never returned without a message. */
#ifndef FPI_ERROR_H
#define FPI_ERROR_H

#include <stdarg.h>
#include <stddef.h>

#define FPI_ERRMSG_MAX 2048

typedef struct fpi_errbuf {
    char msg[FPI_ERRMSG_MAX];
} fpi_errbuf;

/* The formatter: writes the message into buf[0..len) (when buf is non-NULL
 * and len > 0) and returns code. */
int fpi_msg(char *buf, size_t len, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int fpi_vmsg(char *buf, size_t len, int code, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

/* Formats the message into eb (when non-NULL) and returns code. */
int fpi_err(fpi_errbuf *eb, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Appends to the message already in eb (for lists: "a; b; c"). */
void fpi_err_append(fpi_errbuf *eb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The same, then ": " and fp_error_describe(code) as the why: for an operation
 * whose reason only the code knows ("cannot read frame at 0x…: memory read
 * failed"). */
int fpi_err_code(fpi_errbuf *eb, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Puts "<context>: " in front of the message already in eb. */
void fpi_err_prefix(fpi_errbuf *eb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Maps an errno from a read or /proc access to an FP_E_* code. */
int fpi_errno_code(int err);

#endif /* FPI_ERROR_H */
