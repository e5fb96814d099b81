/* read.c — the one door of a sample's reads: fpi_read and fpi_readv pass
 * each read to the session's reader and count it (calls and bytes) in
 * s->reads, which fp_session_get_read_stats reports.  While the target is
 * stopped and the caller says so (s->blocks on), fpi_read serves from
 * whole blocks read once (block_cache.h). */
#include "read.h"
#include "block_cache.h"
#include "session.h"

/* Every read a sample makes goes through these two, which count it. */
int fpi_read(fp_session *s, uint64_t addr, void *buf, size_t len)
{
    if (addr == 0)
        return FP_E_READ;
    if (s->blocks.on)
        return fpi_block_cache_read(&s->blocks, s->rd, addr, buf, len, &s->reads);
    s->reads.calls++;
    s->reads.bytes += len;
    return fp_reader_read(s->rd, addr, buf, len);
}

int fpi_readv(fp_session *s, const fp_iov *iov, size_t n)
{
    s->reads.calls++;
    for (size_t i = 0; i < n; i++)
        s->reads.bytes += iov[i].len;
    return fp_reader_readv(s->rd, iov, n);
}
