/* frameproof/reader.h — the memory-reader interface: a session reads its
 * target only through an fp_reader.  Backends: process_vm_readv,
 * /proc/PID/mem, memory images (image.h); callers may implement their own.
 * A reader is used from one thread at a time.  Conventions as in
 * frameproof.h. */
#ifndef FRAMEPROOF_READER_H
#define FRAMEPROOF_READER_H

#include <stddef.h>
#include <stdint.h>

#include "frameproof/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One range of a batched read. */
typedef struct fp_iov {
    uint64_t addr;
    void *buf;
    size_t len;
} fp_iov;

typedef struct fp_reader_ops {
    const char *name;
    /* Read exactly len bytes at addr.  Returns 0 or a negative FP_E_* code
     * (FP_E_READ for an unmapped or short range, FP_E_PROCESS_GONE,
     * FP_E_PERMISSION). */
    int (*read)(void *ctx, uint64_t addr, void *buf, size_t len);
    /* Read every range exactly; 0 only if all succeeded.  May be NULL, in
     * which case callers loop over read(). */
    int (*readv)(void *ctx, const fp_iov *iov, size_t n);
    /* Release ctx.  May be NULL. */
    void (*close)(void *ctx);
} fp_reader_ops;

typedef struct fp_reader {
    const fp_reader_ops *ops;
    void *ctx;
} fp_reader;

/* Dispatch through r->ops (r open): fp_reader_readv loops over read() when
 * the backend has no readv.  Errors: the backend's. */
FP_API int fp_reader_read(const fp_reader *r, uint64_t addr, void *buf, size_t len);
FP_API int fp_reader_readv(const fp_reader *r, const fp_iov *iov, size_t n);
/* Releases r's context through ops->close and clears r (NULL or a cleared
 * reader: a no-op). */
FP_API void fp_reader_close(fp_reader *r);

/* Open a reader of live process pid with process_vm_readv or with
 * /proc/PID/mem.  The caller owns *out (fp_reader_close).  errbuf (may be
 * NULL) receives the message on failure.  Errors: FP_E_INVALID_ARG,
 * FP_E_PROCESS_GONE, FP_E_PERMISSION, FP_E_IO, FP_E_NOMEM. */
FP_API int fp_reader_open_vm(int pid, fp_reader *out, char *errbuf, size_t errlen);
FP_API int fp_reader_open_mem(int pid, fp_reader *out, char *errbuf, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* FRAMEPROOF_READER_H */
