/* reader_vm.h — how the process_vm_readv backend lays a batch of ranges
 * out as the kernel's remote and local vectors (reader_vm.c). */
#ifndef FPI_READER_VM_H
#define FPI_READER_VM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "frameproof/reader.h"

/* The kernel's limit on iovecs per call, on each side. */
#define FPI_VM_IOV_MAX 1024u
/* Consecutive ranges this close are one remote range, the bytes between
 * them read into a scratch buffer: the kernel pays per remote range (a
 * mapping lookup and page pinning each), while a gap's copy costs a few
 * nanoseconds.  Under a page, a gap touches only pages the two ranges touch,
 * so it cannot make a read fail that would not fail without it. */
#define FPI_VM_MERGE_GAP 1024u

/* One call's vectors: ranges iov[first .. end) as nremote remote ranges
 * (group_first[g]: the first of iov's ranges in remote range g) and nlocal
 * local buffers whose lengths add up to the remote ranges'. */
typedef struct fpi_vm_plan {
    struct iovec remote[FPI_VM_IOV_MAX], local[FPI_VM_IOV_MAX];
    size_t group_first[FPI_VM_IOV_MAX];
    size_t nremote, nlocal, end;
    size_t bytes;
} fpi_vm_plan;

/* Plans the call that reads iov[first ..] in order, as many ranges as the
 * limits allow (at least one).  A range joins the remote range before it
 * when it starts at or after that one's end, at most FPI_VM_MERGE_GAP
 * bytes after; the gap goes to scratch (FPI_VM_MERGE_GAP bytes). */
void fpi_vm_plan_batch(const fp_iov *iov, size_t n, size_t first, void *scratch, fpi_vm_plan *p);

#endif
