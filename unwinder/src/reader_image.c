/* reader_image.c — the fp_reader over a parsed memory image (regions
 * found by binary search; a read may run on only into a region that starts
 * where the last one ends), the target description an image attaches with
 * (the threads' recorded states), and the fp_image_get_* accessors. */
#include <stdint.h>
#include <string.h>

#include "frameproof/image.h"
#include "image_parsed.h"

/* Index of the last region starting at or below addr; false if none. */
static bool find_region(const fp_image *img, uint64_t addr, size_t *idx)
{
    size_t lo = 0, hi = img->nregions;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (img->regions[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return false;
    *idx = lo - 1;
    return true;
}

static int img_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    const fp_image *img = ctx;
    uint8_t *o = buf;
    size_t i;
    if (len == 0)
        return FP_OK;
    if (!find_region(img, addr, &i))
        return FP_E_READ;
    for (;;) {
        const fpi_img_region *r = &img->regions[i];
        if (addr < r->addr || addr - r->addr >= r->len)
            return FP_E_READ;
        uint64_t off = addr - r->addr, avail = r->len - off;
        size_t n = avail < len ? (size_t)avail : len;
        memcpy(o, r->data + off, n);
        o += n;
        len -= n;
        if (len == 0)
            return FP_OK;
        /* Continues only into a region that starts exactly here. */
        addr += n;
        if (++i >= img->nregions)
            return FP_E_READ;
    }
}

static int img_readv(void *ctx, const fp_iov *iov, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int rc = img_read(ctx, iov[i].addr, iov[i].buf, iov[i].len);
        if (rc)
            return rc;
    }
    return FP_OK;
}

static const fp_reader_ops image_ops = {
    .name = "memory image",
    .read = img_read,
    .readv = img_readv,
    .close = NULL,
};

int fp_reader_open_image(fp_image *img, fp_reader *out)
{
    if (!img || !out)
        return FP_E_INVALID_ARG;
    out->ops = &image_ops;
    out->ctx = img;
    return FP_OK;
}

/* The scheduler state the image recorded for a thread (0 if none). */
static char image_thread_state(void *ctx, uint64_t native_id)
{
    const fp_image *img = ctx;
    for (size_t k = 0; k < img->nthreads; k++)
        if (img->threads[k].native_id == native_id)
            return img->threads[k].state;
    return 0;
}

int fp_image_get_target(const fp_image *img, fp_target_desc *out)
{
    if (!img || !out)
        return FP_E_INVALID_ARG;
    memset(out, 0, sizeof *out);
    out->runtime_addr = img->meta.runtime_addr;
    out->hexversion = img->meta.hexversion;
    out->free_threaded = img->meta.free_threaded;
    out->debug = img->meta.debug;
    out->pid = 0;
    out->thread_state = image_thread_state;
    out->thread_state_ctx = (void *)(uintptr_t)img; /* read only */
    out->asyncio_debug_addr = img->meta.asyncio_debug_addr;
    return FP_OK;
}

int fp_image_get_meta(const fp_image *img, fp_image_meta *out)
{
    if (!img || !out)
        return FP_E_INVALID_ARG;
    *out = img->meta;
    return FP_OK;
}

size_t fp_image_get_thread_count(const fp_image *img)
{
    return img ? img->nthreads : 0;
}

const fp_image_thread *fp_image_get_thread(const fp_image *img, size_t i)
{
    return img && i < img->nthreads ? &img->threads[i] : NULL;
}

size_t fp_image_get_region_count(const fp_image *img)
{
    return img ? img->nregions : 0;
}

uint64_t fp_image_get_region_bytes(const fp_image *img)
{
    return img ? img->region_bytes : 0;
}
