/* reader_vm.c — live-process backend over process_vm_readv, with batched
 * iovecs so a walk costs few system calls, and close ranges read as one
 * remote range so each call costs the kernel few mapping lookups. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/uio.h>

#include "frameproof/frameproof.h"
#include "fp_error.h"
#include "proc_state.h"
#include "reader_vm.h"

typedef struct vm_ctx {
    int pid;
    uint8_t scratch[FPI_VM_MERGE_GAP]; /* the bytes between merged ranges */
    fpi_vm_plan plan;                  /* the vectors of one call */
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

void fpi_vm_plan_batch(const fp_iov *iov, size_t n, size_t first, void *scratch, fpi_vm_plan *p)
{
    p->nremote = p->nlocal = p->bytes = 0;
    uint64_t end = 0; /* end of the last remote range */
    size_t i = first;
    for (; i < n; i++) {
        const fp_iov *v = &iov[i];
        uint64_t stop = v->addr + v->len;
        bool join = p->nremote > 0 && stop >= v->addr && v->addr >= end && v->addr - end <= FPI_VM_MERGE_GAP;
        size_t gap = join ? (size_t)(v->addr - end) : 0;
        if (p->nlocal + (gap ? 2u : 1u) > FPI_VM_IOV_MAX || (!join && p->nremote == FPI_VM_IOV_MAX))
            break;
        if (join) {
            if (gap) {
                p->local[p->nlocal++] = (struct iovec){scratch, gap};
                p->remote[p->nremote - 1].iov_len += gap;
            }
            p->remote[p->nremote - 1].iov_len += v->len;
        } else {
            p->group_first[p->nremote] = i;
            p->remote[p->nremote++] = (struct iovec){(void *)(uintptr_t)v->addr, v->len};
        }
        p->local[p->nlocal++] = (struct iovec){v->buf, v->len};
        p->bytes += gap + v->len;
        end = stop;
    }
    p->end = i;
}

static int vm_readv(void *ctx, const fp_iov *iov, size_t n)
{
    vm_ctx *c = ctx;
    fpi_vm_plan *p = &c->plan;
    int rc = FP_OK;
    for (size_t done = 0; done < n && rc == FP_OK; done = p->end) {
        fpi_vm_plan_batch(iov, n, done, c->scratch, p);
        ssize_t got = process_vm_readv(c->pid, p->local, p->nlocal, p->remote, p->nremote, 0);
        if (got < 0) {
            rc = vm_fail(c, errno);
        } else if ((size_t)got != p->bytes) {
            /* The remote ranges before the point of failure were read
             * whole; find which range failed: read the rest one by one. */
            size_t g = 0, whole = 0;
            while (g < p->nremote && whole + p->remote[g].iov_len <= (size_t)got)
                whole += p->remote[g++].iov_len;
            for (size_t i = g < p->nremote ? p->group_first[g] : p->end; i < p->end && rc == FP_OK; i++)
                rc = vm_read(c, iov[i].addr, iov[i].buf, iov[i].len);
        }
    }
    return rc;
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
