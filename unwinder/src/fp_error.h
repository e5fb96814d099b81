/* fp_error.h — the message buffer every fallible internal call writes to. */
#ifndef FP_ERROR_H
#define FP_ERROR_H

#include <stddef.h>

#define FP_ERRMSG_MAX 2048

typedef struct fp_errbuf {
    char msg[FP_ERRMSG_MAX];
} fp_errbuf;

/* Formats the message into eb (when non-NULL) and returns code. */
int fpi_err(fp_errbuf *eb, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Appends to the message already in eb. */
void fpi_err_append(fp_errbuf *eb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Maps an errno from a read or /proc access to an FP_E_* code. */
int fpi_errno_code(int err);

#endif /* FP_ERROR_H */
