/* read.h — every read a sample makes of the target, counted
 * (fp_read_stats). */
#ifndef FPI_READ_H
#define FPI_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frameproof/frameproof.h"
#include "frameproof/reader.h"
#include "read_set.h"

/* One range (addr 0 is never read: FP_E_READ), or n ranges in one batched
 * read, through the session's reader; 0 or the reader's negative FP_E_*
 * code. */
int fpi_read(fp_session *s, uint64_t addr, void *buf, size_t len);
int fpi_readv(fp_session *s, const fp_iov *iov, size_t n);

/* Every range of a read set in one batched read (fpi_readv). */
static inline int fpi_read_all(fp_session *s, const fpi_read_set *rs)
{
    return fpi_readv(s, rs->iov, rs->n);
}

/* A read failure inside a walk: the process vanishing or permissions are
 * fatal for the sample; anything else makes this thread's walk incomplete. */
static inline bool fpi_walk_fatal(int rc)
{
    return rc == FP_E_PROCESS_GONE || rc == FP_E_PERMISSION || rc == FP_E_NOMEM;
}

#endif
