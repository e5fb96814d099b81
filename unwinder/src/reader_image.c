/* reader_image.c — memory images (.fpimg, docs/image-format.md): the
 * validating parser and the fp_reader over a parsed image, and the image
 * builder/serialiser (the recording reader that snapshots use:
 * image_recorder.c).
 *
 * Everything in an image is untrusted: every count, length and address is
 * checked against the file size and the FP_IMAGE_* bounds before use, all
 * arithmetic on them is overflow-checked, and integers are decoded byte by
 * byte (little-endian) whatever the host.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frameproof/image.h"
#include "fp_facts.h"
#include "fp_error.h"

/* Fixed header of format version 1 (all integers little-endian); the
 * layout is one of the shared facts (facts/facts.env). */
#define IMG_MAGIC ((const char[IMG_MAGIC_LEN]){FP_FACT_FPIMG_MAGIC}) /* NUL-padded */
#define IMG_MAGIC_LEN FP_FACT_FPIMG_MAGIC_LEN
#define IMG_OFF_FORMAT FP_FACT_FPIMG_OFF_FORMAT
#define IMG_OFF_HEADER_SIZE FP_FACT_FPIMG_OFF_HEADER_SIZE
#define IMG_OFF_FLAGS FP_FACT_FPIMG_OFF_FLAGS
#define IMG_OFF_HEXVERSION FP_FACT_FPIMG_OFF_HEXVERSION
#define IMG_OFF_PID FP_FACT_FPIMG_OFF_PID
#define IMG_OFF_THREAD_COUNT FP_FACT_FPIMG_OFF_THREAD_COUNT
#define IMG_OFF_RUNTIME FP_FACT_FPIMG_OFF_RUNTIME
#define IMG_OFF_REGION_COUNT FP_FACT_FPIMG_OFF_REGION_COUNT
#define IMG_OFF_PYVERSION FP_FACT_FPIMG_OFF_PYVERSION
#define IMG_V1_HEADER_SIZE FP_FACT_FPIMG_HEADER_SIZE
/* Room for fields a later minor revision may append to the header. */
#define IMG_MAX_HEADER_SIZE FP_FACT_FPIMG_MAX_HEADER_SIZE
/* Smallest prefix that tells the magic, format version and header size. */
#define IMG_PREAMBLE (FP_FACT_FPIMG_OFF_HEADER_SIZE + 4u)

#define IMG_FLAG_FREE_THREADED FP_FACT_FPIMG_FLAG_FREE_THREADED
#define IMG_FLAG_DEBUG FP_FACT_FPIMG_FLAG_DEBUG
#define IMG_KNOWN_FLAGS (IMG_FLAG_FREE_THREADED | IMG_FLAG_DEBUG)

/* Thread entry: u64 native id, u8 state, 7 zero bytes. */
#define IMG_THREAD_ENTRY FP_FACT_FPIMG_THREAD_ENTRY
#define IMG_THREAD_OFF_STATE FP_FACT_FPIMG_THREAD_OFF_STATE
/* Region header: u64 address, u64 length; the bytes follow. */
#define IMG_REGION_HEADER FP_FACT_FPIMG_REGION_HEADER

/* The public API states the same facts. */
_Static_assert(FP_IMAGE_FORMAT_VERSION == FP_FACT_FPIMG_FORMAT_VERSION, "image format version");
_Static_assert(FP_IMAGE_VERSION_LEN == FP_FACT_FPIMG_PYVERSION_LEN, "image version field size");
_Static_assert(FP_FACT_FPIMG_OFF_PYVERSION + FP_FACT_FPIMG_PYVERSION_LEN == FP_FACT_FPIMG_HEADER_SIZE,
               "the version string field ends the version 1 header");

/* Largest file fp_image_open accepts. */
#define IMG_MAX_FILE_SIZE                                                                  \
    ((uint64_t)IMG_MAX_HEADER_SIZE + (uint64_t)FP_IMAGE_MAX_THREADS * IMG_THREAD_ENTRY + \
     (uint64_t)FP_IMAGE_MAX_REGIONS * IMG_REGION_HEADER + FP_IMAGE_MAX_BYTES)

#define BUILDER_INITIAL_CAP 64u

typedef struct img_region {
    uint64_t addr;
    uint64_t len;
    const uint8_t *data;
} img_region;

struct fp_image {
    uint8_t *buf; /* the whole file, owned */
    size_t len;
    fp_image_meta meta;
    fp_image_thread *threads;
    size_t nthreads;
    img_region *regions;
    size_t nregions;
    uint64_t region_bytes;
};

__attribute__((format(printf, 4, 5)))
static int img_err(char *err, size_t errlen, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fpi_vmsg(err, errlen, code, fmt, ap);
    va_end(ap);
    return code;
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_u64(const uint8_t *p)
{
    return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

static void put_u32(uint8_t *p, uint32_t v)
{
    for (unsigned i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v)
{
    for (unsigned i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static bool valid_state(uint8_t c)
{
    return c == 0 || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

/* Parses img->buf[0..img->len) into img's tables. */
static int parse_image(fp_image *img, char *err, size_t errlen)
{
    const uint8_t *b = img->buf;
    size_t len = img->len;
    if (len < IMG_PREAMBLE)
        return img_err(err, errlen, FP_E_FORMAT, "image truncated: %zu bytes, no header", len);
    if (memcmp(b, IMG_MAGIC, IMG_MAGIC_LEN) != 0)
        return img_err(err, errlen, FP_E_FORMAT, "image: not a frameproof memory image (bad magic)");
    uint32_t format = get_u32(b + IMG_OFF_FORMAT);
    if (format != FP_IMAGE_FORMAT_VERSION)
        return img_err(err, errlen, FP_E_UNSUPPORTED, "image format version %u: not supported (this reader knows %u)",
                       format, FP_IMAGE_FORMAT_VERSION);
    uint32_t hsize = get_u32(b + IMG_OFF_HEADER_SIZE);
    if (hsize < IMG_V1_HEADER_SIZE || hsize > IMG_MAX_HEADER_SIZE)
        return img_err(err, errlen, FP_E_FORMAT, "image header: size %u is outside %u..%u", hsize, IMG_V1_HEADER_SIZE,
                       IMG_MAX_HEADER_SIZE);
    if (len < hsize)
        return img_err(err, errlen, FP_E_FORMAT, "image: truncated inside its %u-byte header (%zu bytes)", hsize, len);
    uint32_t flags = get_u32(b + IMG_OFF_FLAGS);
    if (flags & ~IMG_KNOWN_FLAGS)
        return img_err(err, errlen, FP_E_FORMAT, "image header: unknown flags 0x%x", flags);
    uint32_t pid = get_u32(b + IMG_OFF_PID);
    if (pid > INT32_MAX)
        return img_err(err, errlen, FP_E_FORMAT, "image header: pid %u is out of range", pid);
    const uint8_t *ver = b + IMG_OFF_PYVERSION;
    if (!memchr(ver, 0, FP_IMAGE_VERSION_LEN))
        return img_err(err, errlen, FP_E_FORMAT, "image header: version string is not terminated");
    fp_image_meta *m = &img->meta;
    m->pid = (int32_t)pid;
    m->hexversion = get_u32(b + IMG_OFF_HEXVERSION);
    m->free_threaded = (flags & IMG_FLAG_FREE_THREADED) != 0;
    m->debug = (flags & IMG_FLAG_DEBUG) != 0;
    m->runtime_addr = get_u64(b + IMG_OFF_RUNTIME);
    memcpy(m->version, ver, FP_IMAGE_VERSION_LEN);

    uint32_t nthreads = get_u32(b + IMG_OFF_THREAD_COUNT);
    uint64_t nregions = get_u64(b + IMG_OFF_REGION_COUNT);
    if (nthreads > FP_IMAGE_MAX_THREADS)
        return img_err(err, errlen, FP_E_LIMIT, "image: %u threads (limit %u)", nthreads, FP_IMAGE_MAX_THREADS);
    if (nregions > FP_IMAGE_MAX_REGIONS)
        return img_err(err, errlen, FP_E_LIMIT, "image: %llu regions (limit %u)", (unsigned long long)nregions,
                       FP_IMAGE_MAX_REGIONS);
    size_t pos = hsize;
    if ((len - pos) / IMG_THREAD_ENTRY < nthreads)
        return img_err(err, errlen, FP_E_FORMAT, "image: truncated inside its thread table");
    /* Every region takes a header and at least one byte: a count the file
     * cannot hold is rejected before anything is allocated for it. */
    if ((len - pos - (size_t)nthreads * IMG_THREAD_ENTRY) / (IMG_REGION_HEADER + 1) < nregions)
        return img_err(err, errlen, FP_E_FORMAT, "image truncated: %llu regions do not fit in its %zu bytes",
                       (unsigned long long)nregions, len);
    img->threads = calloc(nthreads ? nthreads : 1, sizeof *img->threads);
    img->regions = calloc(nregions ? (size_t)nregions : 1, sizeof *img->regions);
    if (!img->threads || !img->regions)
        return img_err(err, errlen, FP_E_NOMEM, "out of memory: tables of %u threads and %llu regions", nthreads, (unsigned long long)nregions);
    for (uint32_t i = 0; i < nthreads; i++, pos += IMG_THREAD_ENTRY) {
        const uint8_t *t = b + pos;
        uint8_t state = t[IMG_THREAD_OFF_STATE];
        if (!valid_state(state))
            return img_err(err, errlen, FP_E_FORMAT, "image thread %u: invalid state byte 0x%02x", i, state);
        for (unsigned k = IMG_THREAD_OFF_STATE + 1; k < IMG_THREAD_ENTRY; k++)
            if (t[k])
                return img_err(err, errlen, FP_E_FORMAT, "image thread %u: nonzero reserved bytes", i);
        img->threads[i].native_id = get_u64(t);
        img->threads[i].state = (char)state;
    }
    img->nthreads = nthreads;

    uint64_t total = 0, prev_end = 0;
    for (uint64_t i = 0; i < nregions; i++) {
        if (len - pos < IMG_REGION_HEADER)
            return img_err(err, errlen, FP_E_FORMAT, "image: truncated at the header of region %llu",
                           (unsigned long long)i);
        uint64_t addr = get_u64(b + pos), rlen = get_u64(b + pos + 8);
        pos += IMG_REGION_HEADER;
        if (rlen == 0)
            return img_err(err, errlen, FP_E_FORMAT, "image region %llu at 0x%llx: empty", (unsigned long long)i,
                           (unsigned long long)addr);
        if (rlen > UINT64_MAX - addr)
            return img_err(err, errlen, FP_E_FORMAT, "image region %llu at 0x%llx: wraps around the address space",
                           (unsigned long long)i, (unsigned long long)addr);
        if (i > 0 && addr < prev_end)
            return img_err(err, errlen, FP_E_FORMAT,
                           "image region %llu at 0x%llx: overlaps or precedes the previous region (ending at 0x%llx)",
                           (unsigned long long)i, (unsigned long long)addr, (unsigned long long)prev_end);
        if (rlen > FP_IMAGE_MAX_BYTES - total)
            return img_err(err, errlen, FP_E_LIMIT, "image: more than %llu bytes of memory",
                           (unsigned long long)FP_IMAGE_MAX_BYTES);
        if (rlen > len - pos)
            return img_err(err, errlen, FP_E_FORMAT, "image region %llu at 0x%llx (%llu bytes): runs past the end of the image",
                           (unsigned long long)i, (unsigned long long)addr, (unsigned long long)rlen);
        img->regions[i] = (img_region){addr, rlen, b + pos};
        pos += (size_t)rlen;
        total += rlen;
        prev_end = addr + rlen;
    }
    img->nregions = (size_t)nregions;
    img->region_bytes = total;
    if (pos != len)
        return img_err(err, errlen, FP_E_FORMAT, "image: %zu trailing bytes after its last region", len - pos);
    return FP_OK;
}

/* Takes ownership of buf (malloc'd, len bytes). */
static int image_from_buffer(uint8_t *buf, size_t len, fp_image **out, char *err, size_t errlen)
{
    fp_image *img = calloc(1, sizeof *img);
    if (!img) {
        free(buf);
        return img_err(err, errlen, FP_E_NOMEM, "out of memory: an image handle");
    }
    img->buf = buf;
    img->len = len;
    int rc = parse_image(img, err, errlen);
    if (rc) {
        fp_image_free(img);
        return rc;
    }
    *out = img;
    return FP_OK;
}

int fp_image_open_mem(const void *buf, size_t len, fp_image **out, char *err, size_t errlen)
{
    if (!out || (!buf && len))
        return img_err(err, errlen, FP_E_INVALID_ARG, "image: missing buffer or output");
    *out = NULL;
    if ((uint64_t)len > IMG_MAX_FILE_SIZE)
        return img_err(err, errlen, FP_E_LIMIT, "image of %zu bytes: too large", len);
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy)
        return img_err(err, errlen, FP_E_NOMEM, "out of memory: a copy of the %zu-byte image", len);
    if (len)
        memcpy(copy, buf, len);
    return image_from_buffer(copy, len, out, err, errlen);
}

int fp_image_open(const char *path, fp_image **out, char *err, size_t errlen)
{
    if (!path || !out)
        return img_err(err, errlen, FP_E_INVALID_ARG, "image: missing path or output");
    *out = NULL;
    uint8_t *buf = NULL;
    int rc = FP_OK;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return img_err(err, errlen, FP_E_IO, "cannot open %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        rc = img_err(err, errlen, FP_E_IO, "cannot stat %s: %s", path, strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = img_err(err, errlen, FP_E_IO, "%s: not a regular file", path);
        goto out;
    }
    if (st.st_size < 0 || (uint64_t)st.st_size > IMG_MAX_FILE_SIZE || (uint64_t)st.st_size > SIZE_MAX) {
        rc = img_err(err, errlen, FP_E_LIMIT, "%s: too large for an image (%lld bytes)", path,
                     (long long)st.st_size);
        goto out;
    }
    size_t len = (size_t)st.st_size;
    buf = malloc(len ? len : 1);
    if (!buf) {
        rc = img_err(err, errlen, FP_E_NOMEM, "out of memory: reading %s", path);
        goto out;
    }
    size_t done = 0;
    while (done < len) {
        ssize_t n = read(fd, buf + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = img_err(err, errlen, FP_E_IO, "cannot read %s: %s", path, strerror(errno));
            goto out;
        }
        if (n == 0) {
            rc = img_err(err, errlen, FP_E_IO, "%s: shrank while being read", path);
            goto out;
        }
        done += (size_t)n;
    }
    close(fd);
    fd = -1;
    rc = image_from_buffer(buf, len, out, err, errlen);
    buf = NULL; /* owned by the image, or freed */
out:
    if (fd >= 0)
        close(fd);
    free(buf);
    return rc;
}

void fp_image_free(fp_image *img)
{
    if (!img)
        return;
    free(img->buf);
    free(img->threads);
    free(img->regions);
    free(img);
}

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
        const img_region *r = &img->regions[i];
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

/* ---- builder ---------------------------------------------------------- */

typedef struct build_region {
    uint64_t addr;
    size_t len;
    uint8_t *data;
} build_region;

struct fp_image_builder {
    fp_image_meta meta;
    fp_image_thread *threads;
    size_t nthreads, threads_cap;
    build_region *regions;
    size_t nregions, regions_cap;
    uint64_t bytes;
};

int fp_image_builder_new(const fp_image_meta *meta, fp_image_builder **out)
{
    if (!meta || !out)
        return FP_E_INVALID_ARG;
    if (meta->pid < 0 || !memchr(meta->version, 0, sizeof meta->version))
        return FP_E_INVALID_ARG;
    fp_image_builder *b = calloc(1, sizeof *b);
    if (!b)
        return FP_E_NOMEM;
    b->meta = *meta;
    *out = b;
    return FP_OK;
}

void fp_image_builder_free(fp_image_builder *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->nregions; i++)
        free(b->regions[i].data);
    free(b->regions);
    free(b->threads);
    free(b);
}

int fp_image_builder_add_thread(fp_image_builder *b, uint64_t native_id, char state)
{
    if (!b || !valid_state((uint8_t)state))
        return FP_E_INVALID_ARG;
    if (b->nthreads >= FP_IMAGE_MAX_THREADS)
        return FP_E_LIMIT;
    if (b->nthreads == b->threads_cap) {
        size_t ncap = b->threads_cap ? b->threads_cap * 2 : BUILDER_INITIAL_CAP;
        fp_image_thread *nt = realloc(b->threads, ncap * sizeof *nt);
        if (!nt)
            return FP_E_NOMEM;
        b->threads = nt;
        b->threads_cap = ncap;
    }
    b->threads[b->nthreads++] = (fp_image_thread){native_id, state};
    return FP_OK;
}

int fp_image_builder_add_region(fp_image_builder *b, uint64_t addr, const void *data, size_t len)
{
    if (!b || (!data && len))
        return FP_E_INVALID_ARG;
    if (len == 0)
        return FP_OK;
    if ((uint64_t)len > UINT64_MAX - addr)
        return FP_E_INVALID_ARG;
    if ((uint64_t)len > FP_IMAGE_MAX_BYTES - b->bytes)
        return FP_E_LIMIT;
    if (b->nregions >= FP_IMAGE_MAX_REGIONS)
        return FP_E_LIMIT;
    if (b->nregions == b->regions_cap) {
        size_t ncap = b->regions_cap ? b->regions_cap * 2 : BUILDER_INITIAL_CAP;
        build_region *nr = realloc(b->regions, ncap * sizeof *nr);
        if (!nr)
            return FP_E_NOMEM;
        b->regions = nr;
        b->regions_cap = ncap;
    }
    uint8_t *copy = malloc(len);
    if (!copy)
        return FP_E_NOMEM;
    memcpy(copy, data, len);
    b->regions[b->nregions++] = (build_region){addr, len, copy};
    b->bytes += len;
    return FP_OK;
}

static int cmp_build_region(const void *a, const void *b)
{
    const build_region *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int fp_image_builder_serialize(fp_image_builder *b, uint8_t **out, size_t *outlen, char *err, size_t errlen)
{
    if (!b || !out || !outlen)
        return img_err(err, errlen, FP_E_INVALID_ARG, "image builder: missing builder or output");
    if (b->nregions)
        qsort(b->regions, b->nregions, sizeof *b->regions, cmp_build_region);
    /* Count the merged regions and check for overlaps. */
    size_t merged = 0;
    for (size_t i = 0; i < b->nregions; i++) {
        if (i > 0) {
            uint64_t prev_end = b->regions[i - 1].addr + b->regions[i - 1].len;
            if (b->regions[i].addr < prev_end)
                return img_err(err, errlen, FP_E_INVALID_ARG, "image builder: regions at 0x%llx and 0x%llx overlap",
                               (unsigned long long)b->regions[i - 1].addr, (unsigned long long)b->regions[i].addr);
            if (b->regions[i].addr == prev_end)
                continue;
        }
        merged++;
    }
    if (merged > FP_IMAGE_MAX_REGIONS)
        return img_err(err, errlen, FP_E_LIMIT, "image builder: too many regions (%zu)", merged);
    uint64_t total = (uint64_t)IMG_V1_HEADER_SIZE + (uint64_t)b->nthreads * IMG_THREAD_ENTRY +
                     (uint64_t)merged * IMG_REGION_HEADER + b->bytes;
    if (total > SIZE_MAX)
        return img_err(err, errlen, FP_E_LIMIT, "image builder: image too large");
    uint8_t *buf = calloc(1, (size_t)total);
    if (!buf)
        return img_err(err, errlen, FP_E_NOMEM, "out of memory: serialising %llu bytes", (unsigned long long)total);
    memcpy(buf, IMG_MAGIC, IMG_MAGIC_LEN);
    put_u32(buf + IMG_OFF_FORMAT, FP_IMAGE_FORMAT_VERSION);
    put_u32(buf + IMG_OFF_HEADER_SIZE, IMG_V1_HEADER_SIZE);
    put_u32(buf + IMG_OFF_FLAGS, (b->meta.free_threaded ? IMG_FLAG_FREE_THREADED : 0u) |
                                     (b->meta.debug ? IMG_FLAG_DEBUG : 0u));
    put_u32(buf + IMG_OFF_HEXVERSION, b->meta.hexversion);
    put_u32(buf + IMG_OFF_PID, (uint32_t)b->meta.pid);
    put_u32(buf + IMG_OFF_THREAD_COUNT, (uint32_t)b->nthreads);
    put_u64(buf + IMG_OFF_RUNTIME, b->meta.runtime_addr);
    put_u64(buf + IMG_OFF_REGION_COUNT, merged);
    /* strncpy semantics: the field is NUL-padded. */
    size_t vlen = strnlen(b->meta.version, FP_IMAGE_VERSION_LEN - 1);
    memcpy(buf + IMG_OFF_PYVERSION, b->meta.version, vlen);
    size_t pos = IMG_V1_HEADER_SIZE;
    for (size_t i = 0; i < b->nthreads; i++, pos += IMG_THREAD_ENTRY) {
        put_u64(buf + pos, b->threads[i].native_id);
        buf[pos + IMG_THREAD_OFF_STATE] = (uint8_t)b->threads[i].state;
    }
    for (size_t i = 0; i < b->nregions;) {
        size_t j = i + 1;
        uint64_t len = b->regions[i].len;
        while (j < b->nregions && b->regions[j].addr == b->regions[j - 1].addr + b->regions[j - 1].len)
            len += b->regions[j++].len;
        put_u64(buf + pos, b->regions[i].addr);
        put_u64(buf + pos + 8, len);
        pos += IMG_REGION_HEADER;
        for (size_t k = i; k < j; k++) {
            memcpy(buf + pos, b->regions[k].data, b->regions[k].len);
            pos += b->regions[k].len;
        }
        i = j;
    }
    *out = buf;
    *outlen = (size_t)total;
    return FP_OK;
}

int fp_image_builder_write(fp_image_builder *b, const char *path, char *err, size_t errlen)
{
    if (!b || !path)
        return img_err(err, errlen, FP_E_INVALID_ARG, "image builder: missing builder or path");
    uint8_t *buf = NULL;
    size_t len = 0;
    char *tmp = NULL;
    int fd = -1;
    int rc = fp_image_builder_serialize(b, &buf, &len, err, errlen);
    if (rc)
        return rc;
    size_t plen = strlen(path) + sizeof ".tmp";
    tmp = malloc(plen);
    if (!tmp) {
        rc = img_err(err, errlen, FP_E_NOMEM, "out of memory: the temporary name for %s", path);
        goto out;
    }
    snprintf(tmp, plen, "%s.tmp", path);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        rc = img_err(err, errlen, FP_E_IO, "cannot create %s: %s", tmp, strerror(errno));
        goto out;
    }
    for (size_t done = 0; done < len;) {
        ssize_t n = write(fd, buf + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rc = img_err(err, errlen, FP_E_IO, "cannot write %s: %s", tmp, n < 0 ? strerror(errno) : "short write");
            goto out;
        }
        done += (size_t)n;
    }
    if (close(fd) != 0) {
        fd = -1;
        rc = img_err(err, errlen, FP_E_IO, "cannot write %s: %s", tmp, strerror(errno));
        goto out;
    }
    fd = -1;
    if (rename(tmp, path) != 0) {
        rc = img_err(err, errlen, FP_E_IO, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        goto out;
    }
    free(tmp);
    tmp = NULL;
out:
    if (fd >= 0)
        close(fd);
    if (tmp) {
        unlink(tmp);
        free(tmp);
    }
    free(buf);
    return rc;
}
