/* image_recorder.c — the recording reader that `frameproof snapshot` reads
 * through (frameproof/image.h): it passes every read to the reader it
 * wraps, notes the ranges read, rounded to granules, and captures them
 * into an image builder, read again as they are at capture time. */
#include <stdlib.h>
#include <string.h>

#include "frameproof/image.h"
#include "fp_error.h"

/* Ranges are merged in place once this many are pending. */
#define REC_COMPACT_AT 4096u
#define REC_INITIAL_CAP 1024u

typedef struct rec_range {
    uint64_t start, end; /* [start, end) */
} rec_range;

struct fp_recorder {
    fp_reader inner;
    uint64_t granule;
    rec_range *v;
    size_t n, cap;
};

int fp_recorder_new(const fp_reader *inner, uint32_t granule, fp_recorder **out)
{
    if (!inner || !inner->ops || !out)
        return FP_E_INVALID_ARG;
    if (granule == 0)
        granule = FP_RECORD_DEFAULT_GRANULE;
    if (granule < FP_RECORD_MIN_GRANULE || granule > FP_RECORD_MAX_GRANULE || (granule & (granule - 1)))
        return FP_E_INVALID_ARG;
    fp_recorder *r = calloc(1, sizeof *r);
    if (!r)
        return FP_E_NOMEM;
    r->inner = *inner;
    r->granule = granule;
    *out = r;
    return FP_OK;
}

void fp_recorder_free(fp_recorder *r)
{
    if (!r)
        return;
    free(r->v);
    free(r);
}

static int cmp_rec_range(const void *a, const void *b)
{
    const rec_range *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* Sorts and merges overlapping or touching ranges in place. */
static void rec_compact(fp_recorder *r)
{
    if (r->n < 2)
        return;
    qsort(r->v, r->n, sizeof *r->v, cmp_rec_range);
    size_t o = 0;
    for (size_t i = 1; i < r->n; i++) {
        if (r->v[i].start <= r->v[o].end) {
            if (r->v[i].end > r->v[o].end)
                r->v[o].end = r->v[i].end;
        } else {
            r->v[++o] = r->v[i];
        }
    }
    r->n = o + 1;
}

static int rec_note(fp_recorder *r, uint64_t addr, size_t len)
{
    if (len == 0)
        return FP_OK;
    uint64_t g = r->granule;
    uint64_t start = addr & ~(g - 1);
    uint64_t end = (uint64_t)len > UINT64_MAX - addr ? UINT64_MAX : addr + len;
    end = end > UINT64_MAX - (g - 1) ? UINT64_MAX : (end + g - 1) & ~(g - 1);
    if (r->n == r->cap) {
        if (r->n >= REC_COMPACT_AT)
            rec_compact(r);
        if (r->n > r->cap / 2 || r->cap == 0) {
            if (r->cap >= FP_RECORD_MAX_RANGES)
                return FP_E_LIMIT;
            size_t ncap = r->cap ? r->cap * 2 : REC_INITIAL_CAP;
            if (ncap > FP_RECORD_MAX_RANGES)
                ncap = FP_RECORD_MAX_RANGES;
            rec_range *nv = realloc(r->v, ncap * sizeof *nv);
            if (!nv)
                return FP_E_NOMEM;
            r->v = nv;
            r->cap = ncap;
        }
    }
    r->v[r->n++] = (rec_range){start, end};
    return FP_OK;
}

static int rec_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    fp_recorder *r = ctx;
    int rc = fp_reader_read(&r->inner, addr, buf, len);
    if (rc)
        return rc;
    return rec_note(r, addr, len);
}

static int rec_readv(void *ctx, const fp_iov *iov, size_t n)
{
    fp_recorder *r = ctx;
    int rc = fp_reader_readv(&r->inner, iov, n);
    if (rc == FP_OK) {
        for (size_t i = 0; i < n; i++)
            if ((rc = rec_note(r, iov[i].addr, iov[i].len)))
                return rc;
        return FP_OK;
    }
    /* Record the ranges that were readable; report the batch's error. */
    for (size_t i = 0; i < n; i++) {
        int one = rec_read(r, iov[i].addr, iov[i].buf, iov[i].len);
        if (one == FP_E_NOMEM || one == FP_E_LIMIT)
            return one;
    }
    return rc;
}

static const fp_reader_ops recorder_ops = {
    .name = "recorder",
    .read = rec_read,
    .readv = rec_readv,
    .close = NULL,
};

int fp_reader_open_recorder(fp_recorder *r, fp_reader *out)
{
    if (!r || !out)
        return FP_E_INVALID_ARG;
    out->ops = &recorder_ops;
    out->ctx = r;
    return FP_OK;
}

size_t fp_recorder_get_range_count(fp_recorder *r)
{
    if (!r)
        return 0;
    rec_compact(r);
    return r->n;
}

/* Adds the readable granules of [start, end) to b, run by run. */
static int capture_granules(fp_recorder *r, fp_image_builder *b, uint64_t start, uint64_t end, uint8_t *buf)
{
    uint64_t run = start;
    size_t have = 0;
    for (uint64_t a = start; a < end; a += r->granule) {
        size_t n = (size_t)(end - a < r->granule ? end - a : r->granule);
        if (fp_reader_read(&r->inner, a, buf + (a - start), n) == FP_OK) {
            if (have == 0)
                run = a;
            have += n;
            if (a > UINT64_MAX - r->granule)
                break;
            continue;
        }
        if (have) {
            int rc = fp_image_builder_add_region(b, run, buf + (run - start), have);
            if (rc)
                return rc;
        }
        have = 0;
        if (a > UINT64_MAX - r->granule)
            break;
    }
    return have ? fp_image_builder_add_region(b, run, buf + (run - start), have) : FP_OK;
}

int fp_recorder_capture(fp_recorder *r, fp_image_builder *b, char *err, size_t errlen)
{
    if (!r || !b)
        return fpi_msg(err, errlen, FP_E_INVALID_ARG, "recorder: missing recorder or builder");
    rec_compact(r);
    uint64_t total = 0;
    for (size_t i = 0; i < r->n; i++) {
        uint64_t len = r->v[i].end - r->v[i].start;
        if (len > FP_IMAGE_MAX_BYTES - total)
            return fpi_msg(err, errlen, FP_E_LIMIT, "recorder: more than %llu bytes recorded",
                           (unsigned long long)FP_IMAGE_MAX_BYTES);
        total += len;
    }
    for (size_t i = 0; i < r->n; i++) {
        uint64_t start = r->v[i].start, len = r->v[i].end - start;
        uint8_t *buf = malloc((size_t)len);
        if (!buf)
            return fpi_msg(err, errlen, FP_E_NOMEM, "out of memory: capturing %llu bytes at 0x%llx", (unsigned long long)len, (unsigned long long)start);
        int rc;
        if (fp_reader_read(&r->inner, start, buf, (size_t)len) == FP_OK)
            rc = fp_image_builder_add_region(b, start, buf, (size_t)len);
        else
            rc = capture_granules(r, b, start, start + len, buf);
        free(buf);
        if (rc)
            return fpi_msg(err, errlen, rc, "cannot add region 0x%llx (%llu bytes): %s", (unsigned long long)start,
                           (unsigned long long)len, fp_error_describe(rc));
    }
    return FP_OK;
}
