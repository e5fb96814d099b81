/* reader.c — dispatch helpers of the fp_reader interface. */
#include "frameproof/frameproof.h"

int fp_reader_read(const fp_reader *r, uint64_t addr, void *buf, size_t len)
{
    if (len == 0)
        return FP_OK;
    return r->ops->read(r->ctx, addr, buf, len);
}

int fp_reader_readv(const fp_reader *r, const fp_iov *iov, size_t n)
{
    if (r->ops->readv)
        return r->ops->readv(r->ctx, iov, n);
    for (size_t i = 0; i < n; i++) {
        int rc = fp_reader_read(r, iov[i].addr, iov[i].buf, iov[i].len);
        if (rc)
            return rc;
    }
    return FP_OK;
}

void fp_reader_close(fp_reader *r)
{
    if (r && r->ops && r->ops->close)
        r->ops->close(r->ctx);
    if (r) {
        r->ops = NULL;
        r->ctx = NULL;
    }
}
