/* read_set.c — a set of ranges read together (read_set.h). */
#include <stdlib.h>

#include "grow.h"
#include "read_set.h"

#define READ_SET_INITIAL 64u /* ranges, first allocation */

void fpi_read_set_free(fpi_read_set *rs)
{
    free(rs->iov);
    *rs = (fpi_read_set){0};
}

bool fpi_read_set_reserve(fpi_read_set *rs, size_t more)
{
    fp_iov *ni = fpi_grow(rs->iov, &rs->cap, rs->n + more, sizeof *ni, READ_SET_INITIAL);
    if (!ni)
        return false;
    rs->iov = ni;
    return true;
}

bool fpi_read_set_add(fpi_read_set *rs, uint64_t addr, void *buf, size_t len)
{
    if (!fpi_read_set_reserve(rs, 1))
        return false;
    rs->iov[rs->n++] = (fp_iov){addr, buf, len};
    return true;
}

bool fpi_read_set_add_at(fpi_read_set *rs, uint64_t addr, size_t off, size_t len)
{
    return fpi_read_set_add(rs, addr, (void *)(uintptr_t)off, len);
}

void fpi_read_set_place(fpi_read_set *rs, size_t first, uint8_t *base)
{
    for (size_t i = first; i < rs->n; i++)
        rs->iov[i].buf = base + (size_t)(uintptr_t)rs->iov[i].buf;
}
