/* reader_mem.c — live-process backend over /proc/PID/mem (kernels without
 * process_vm_readv, or when selected explicitly). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frameproof/frameproof.h"
#include "fp_error.h"
#include "proc_state.h"

typedef struct mem_ctx {
    int pid;
    int fd;
} mem_ctx;

static int mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    mem_ctx *c = ctx;
    size_t done = 0;
    if (addr > (uint64_t)INT64_MAX)
        return FP_E_READ;
    while (done < len) {
        ssize_t n = pread(c->fd, (char *)buf + done, len - done, (off_t)(addr + done));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            int err = errno;
            if (fpi_proc_is_gone(c->pid))
                return FP_E_PROCESS_GONE;
            return err == EPERM || err == EACCES ? FP_E_PERMISSION : FP_E_READ;
        }
        if (n == 0)
            return fpi_proc_is_gone(c->pid) ? FP_E_PROCESS_GONE : FP_E_READ;
        done += (size_t)n;
    }
    return FP_OK;
}

static void mem_close(void *ctx)
{
    mem_ctx *c = ctx;
    if (c->fd >= 0)
        close(c->fd);
    free(c);
}

static const fp_reader_ops mem_ops = {
    .name = "/proc/PID/mem",
    .read = mem_read,
    .readv = NULL,
    .close = mem_close,
};

int fp_reader_open_mem(int pid, fp_reader *out, char *errbuf, size_t errlen)
{
    if (pid <= 0)
        return fpi_msg(errbuf, errlen, FP_E_INVALID_ARG, "pid %d: invalid", pid);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/mem", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        return fpi_msg(errbuf, errlen, fpi_errno_code(err), "cannot open %s: %s", path, strerror(err));
    }
    mem_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        return fpi_msg(errbuf, errlen, FP_E_NOMEM, "out of memory: a reader for %s", path);
    }
    c->pid = pid;
    c->fd = fd;
    out->ops = &mem_ops;
    out->ctx = c;
    return FP_OK;
}
