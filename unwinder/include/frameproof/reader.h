/* reader.h — the one memory-reader interface every backend implements.
 *
 * The walker never touches a target directly: it asks an fp_reader for
 * byte ranges.  Backends: process_vm_readv, /proc/PID/mem, memory images;
 * callers may add their own (a recording reader, a core file) without the
 * walker changing.  Like a session, a reader is used from one thread at a
 * time.
 */
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

/* Helpers that dispatch through ops. */
FP_API int fp_reader_read(const fp_reader *r, uint64_t addr, void *buf, size_t len);
FP_API int fp_reader_readv(const fp_reader *r, const fp_iov *iov, size_t n);
FP_API void fp_reader_close(fp_reader *r);

/* Live-process backends.  They fill *out; fp_reader_close releases them.
 * errbuf (may be NULL) receives a message on failure. */
FP_API int fp_reader_open_vm(int pid, fp_reader *out, char *errbuf, size_t errlen);
FP_API int fp_reader_open_mem(int pid, fp_reader *out, char *errbuf, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* FRAMEPROOF_READER_H */
