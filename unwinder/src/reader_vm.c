/* reader_vm.c — live-process backend over process_vm_readv, with batched
 * iovecs so a walk costs few system calls. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/uio.h>

#include "frameproof/frameproof.h"
#include "fp_error.h"
#include "proc_state.h"

/* The kernel's limit on iovecs per call. */
#define VM_IOV_BATCH 1024

typedef struct vm_ctx {
    int pid;
} vm_ctx;

static int vm_fail(vm_ctx *c, int err)
{
    if (err == ESRCH || fpi_proc_is_gone(c->pid))
        return FP_E_PROCESS_GONE;
    if (err == ENOSYS)
        return FP_E_UNSUPPORTED;
    if (err == EPERM || err == EACCES)
        return FP_E_PERMISSION;
    return FP_E_READ;
}

static int vm_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    vm_ctx *c = ctx;
    struct iovec local = {buf, len};
    struct iovec remote = {(void *)(uintptr_t)addr, len};
    ssize_t n = process_vm_readv(c->pid, &local, 1, &remote, 1, 0);
    if (n < 0)
        return vm_fail(c, errno);
    if ((size_t)n != len)
        return vm_fail(c, EFAULT);
    return FP_OK;
}

static int vm_readv(void *ctx, const fp_iov *iov, size_t n)
{
    vm_ctx *c = ctx;
    struct iovec local[VM_IOV_BATCH], remote[VM_IOV_BATCH];
    size_t done = 0;
    while (done < n) {
        size_t batch = n - done < VM_IOV_BATCH ? n - done : VM_IOV_BATCH;
        size_t want = 0;
        for (size_t i = 0; i < batch; i++) {
            local[i].iov_base = iov[done + i].buf;
            local[i].iov_len = iov[done + i].len;
            remote[i].iov_base = (void *)(uintptr_t)iov[done + i].addr;
            remote[i].iov_len = iov[done + i].len;
            want += iov[done + i].len;
        }
        ssize_t got = process_vm_readv(c->pid, local, batch, remote, batch, 0);
        if (got < 0)
            return vm_fail(c, errno);
        if ((size_t)got != want) {
            /* The ranges before the point of failure were read whole; find
             * which one failed: re-read the others one by one. */
            size_t i = 0, whole = 0;
            while (i < batch && whole + iov[done + i].len <= (size_t)got)
                whole += iov[done + i++].len;
            for (; i < batch; i++) {
                int rc = vm_read(c, iov[done + i].addr, iov[done + i].buf, iov[done + i].len);
                if (rc)
                    return rc;
            }
        }
        done += batch;
    }
    return FP_OK;
}

static void vm_close(void *ctx)
{
    free(ctx);
}

static const fp_reader_ops vm_ops = {
    .name = "process_vm_readv",
    .read = vm_read,
    .readv = vm_readv,
    .close = vm_close,
};

int fp_reader_open_vm(int pid, fp_reader *out, char *errbuf, size_t errlen)
{
    if (pid <= 0)
        return fpi_msg(errbuf, errlen, FP_E_INVALID_ARG, "pid %d: invalid", pid);
    vm_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return fpi_msg(errbuf, errlen, FP_E_NOMEM, "out of memory: a reader for process %d", pid);
    c->pid = pid;
    out->ops = &vm_ops;
    out->ctx = c;
    return FP_OK;
}
