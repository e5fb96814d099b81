/* image_open.c — opening a memory image (.fpimg, docs/image-format.md):
 * fp_image_open and fp_image_open_mem read the file or copy the buffer,
 * parse_image validates it into a struct fp_image (image_parsed.h), and
 * fp_image_free.
 *
 * Everything in an image is untrusted: every count, length and address is
 * checked against the file size and the FP_IMAGE_* bounds before use, all
 * arithmetic on them is overflow-checked, and integers are decoded byte by
 * byte (little-endian) whatever the host. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frameproof/image.h"
#include "fp_error.h"
#include "image_format.h"
#include "image_parsed.h"

/* Parses img->buf[0..img->len) into img's tables. */
static int parse_image(fp_image *img, char *err, size_t errlen)
{
    const uint8_t *b = img->buf;
    size_t len = img->len;
    if (len < FPI_IMG_PREAMBLE)
        return fpi_msg(err, errlen, FP_E_FORMAT, "image truncated: %zu bytes, no header", len);
    if (memcmp(b, FPI_IMG_MAGIC, FPI_IMG_MAGIC_LEN) != 0)
        return fpi_msg(err, errlen, FP_E_FORMAT, "image: not a frameproof memory image (bad magic)");
    uint32_t format = fpi_le_get_u32(b + FPI_IMG_OFF_FORMAT);
    if (format != FP_IMAGE_FORMAT_VERSION)
        return fpi_msg(err, errlen, FP_E_UNSUPPORTED, "image format version %u: not supported (this reader knows %u)",
                       format, FP_IMAGE_FORMAT_VERSION);
    uint32_t hsize = fpi_le_get_u32(b + FPI_IMG_OFF_HEADER_SIZE);
    if (hsize < FPI_IMG_V1_HEADER_SIZE || hsize > FPI_IMG_MAX_HEADER_SIZE)
        return fpi_msg(err, errlen, FP_E_FORMAT, "image header: size %u is outside %u..%u", hsize,
                       FPI_IMG_V1_HEADER_SIZE, FPI_IMG_MAX_HEADER_SIZE);
    if (len < hsize)
        return fpi_msg(err, errlen, FP_E_FORMAT, "image: truncated inside its %u-byte header (%zu bytes)", hsize, len);
    uint32_t flags = fpi_le_get_u32(b + FPI_IMG_OFF_FLAGS);
    if (flags & ~FPI_IMG_KNOWN_FLAGS)
        return fpi_msg(err, errlen, FP_E_FORMAT, "image header: unknown flags 0x%x", flags);
    uint32_t pid = fpi_le_get_u32(b + FPI_IMG_OFF_PID);
    if (pid > INT32_MAX)
        return fpi_msg(err, errlen, FP_E_FORMAT, "image header: pid %u is out of range", pid);
    const uint8_t *ver = b + FPI_IMG_OFF_PYVERSION;
    if (!memchr(ver, 0, FP_IMAGE_VERSION_LEN))
        return fpi_msg(err, errlen, FP_E_FORMAT, "image header: version string is not terminated");
    fp_image_meta *m = &img->meta;
    m->pid = (int32_t)pid;
    m->hexversion = fpi_le_get_u32(b + FPI_IMG_OFF_HEXVERSION);
    m->free_threaded = (flags & FPI_IMG_FLAG_FREE_THREADED) != 0;
    m->debug = (flags & FPI_IMG_FLAG_DEBUG) != 0;
    m->runtime_addr = fpi_le_get_u64(b + FPI_IMG_OFF_RUNTIME);
    memcpy(m->version, ver, FP_IMAGE_VERSION_LEN);
    m->asyncio_debug_addr = hsize >= FPI_IMG_ASYNCIO_HEADER_SIZE ? fpi_le_get_u64(b + FPI_IMG_OFF_ASYNCIO) : 0;

    uint32_t nthreads = fpi_le_get_u32(b + FPI_IMG_OFF_THREAD_COUNT);
    uint64_t nregions = fpi_le_get_u64(b + FPI_IMG_OFF_REGION_COUNT);
    if (nthreads > FP_IMAGE_MAX_THREADS)
        return fpi_msg(err, errlen, FP_E_LIMIT, "image: %u threads (limit %u)", nthreads, FP_IMAGE_MAX_THREADS);
    if (nregions > FP_IMAGE_MAX_REGIONS)
        return fpi_msg(err, errlen, FP_E_LIMIT, "image: %llu regions (limit %u)", (unsigned long long)nregions,
                       FP_IMAGE_MAX_REGIONS);
    size_t pos = hsize;
    if ((len - pos) / FPI_IMG_THREAD_ENTRY < nthreads)
        return fpi_msg(err, errlen, FP_E_FORMAT, "image: truncated inside its thread table");
    /* Every region takes a header and at least one byte: a count the file
     * cannot hold is rejected before anything is allocated for it. */
    if ((len - pos - (size_t)nthreads * FPI_IMG_THREAD_ENTRY) / (FPI_IMG_REGION_HEADER + 1) < nregions)
        return fpi_msg(err, errlen, FP_E_FORMAT, "image truncated: %llu regions do not fit in its %zu bytes",
                       (unsigned long long)nregions, len);
    img->threads = calloc(nthreads ? nthreads : 1, sizeof *img->threads);
    img->regions = calloc(nregions ? (size_t)nregions : 1, sizeof *img->regions);
    if (!img->threads || !img->regions)
        return fpi_msg(err, errlen, FP_E_NOMEM, "out of memory: tables of %u threads and %llu regions", nthreads, (unsigned long long)nregions);
    for (uint32_t i = 0; i < nthreads; i++, pos += FPI_IMG_THREAD_ENTRY) {
        const uint8_t *t = b + pos;
        uint8_t state = t[FPI_IMG_THREAD_OFF_STATE];
        if (!fpi_img_valid_state(state))
            return fpi_msg(err, errlen, FP_E_FORMAT, "image thread %u: invalid state byte 0x%02x", i, state);
        for (unsigned k = FPI_IMG_THREAD_OFF_STATE + 1; k < FPI_IMG_THREAD_ENTRY; k++)
            if (t[k])
                return fpi_msg(err, errlen, FP_E_FORMAT, "image thread %u: nonzero reserved bytes", i);
        img->threads[i].native_id = fpi_le_get_u64(t);
        img->threads[i].state = (char)state;
    }
    img->nthreads = nthreads;

    uint64_t total = 0, prev_end = 0;
    for (uint64_t i = 0; i < nregions; i++) {
        if (len - pos < FPI_IMG_REGION_HEADER)
            return fpi_msg(err, errlen, FP_E_FORMAT, "image: truncated at the header of region %llu",
                           (unsigned long long)i);
        uint64_t addr = fpi_le_get_u64(b + pos), rlen = fpi_le_get_u64(b + pos + 8);
        pos += FPI_IMG_REGION_HEADER;
        if (rlen == 0)
            return fpi_msg(err, errlen, FP_E_FORMAT, "image region %llu at 0x%llx: empty", (unsigned long long)i,
                           (unsigned long long)addr);
        if (rlen > UINT64_MAX - addr)
            return fpi_msg(err, errlen, FP_E_FORMAT, "image region %llu at 0x%llx: wraps around the address space",
                           (unsigned long long)i, (unsigned long long)addr);
        if (i > 0 && addr < prev_end)
            return fpi_msg(err, errlen, FP_E_FORMAT,
                           "image region %llu at 0x%llx: overlaps or precedes the previous region (ending at 0x%llx)",
                           (unsigned long long)i, (unsigned long long)addr, (unsigned long long)prev_end);
        if (rlen > FP_IMAGE_MAX_BYTES - total)
            return fpi_msg(err, errlen, FP_E_LIMIT, "image: more than %llu bytes of memory",
                           (unsigned long long)FP_IMAGE_MAX_BYTES);
        if (rlen > len - pos)
            return fpi_msg(err, errlen, FP_E_FORMAT, "image region %llu at 0x%llx (%llu bytes): runs past the end of the image",
                           (unsigned long long)i, (unsigned long long)addr, (unsigned long long)rlen);
        img->regions[i] = (fpi_img_region){addr, rlen, b + pos};
        pos += (size_t)rlen;
        total += rlen;
        prev_end = addr + rlen;
    }
    img->nregions = (size_t)nregions;
    img->region_bytes = total;
    if (pos != len)
        return fpi_msg(err, errlen, FP_E_FORMAT, "image: %zu trailing bytes after its last region", len - pos);
    return FP_OK;
}

/* Takes ownership of buf (malloc'd, len bytes). */
static int image_from_buffer(uint8_t *buf, size_t len, fp_image **out, char *err, size_t errlen)
{
    fp_image *img = calloc(1, sizeof *img);
    if (!img) {
        free(buf);
        return fpi_msg(err, errlen, FP_E_NOMEM, "out of memory: an image handle");
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
        return fpi_msg(err, errlen, FP_E_INVALID_ARG, "image: missing buffer or output");
    *out = NULL;
    if ((uint64_t)len > FPI_IMG_MAX_FILE_SIZE)
        return fpi_msg(err, errlen, FP_E_LIMIT, "image of %zu bytes: too large", len);
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy)
        return fpi_msg(err, errlen, FP_E_NOMEM, "out of memory: a copy of the %zu-byte image", len);
    if (len)
        memcpy(copy, buf, len);
    return image_from_buffer(copy, len, out, err, errlen);
}

int fp_image_open(const char *path, fp_image **out, char *err, size_t errlen)
{
    if (!path || !out)
        return fpi_msg(err, errlen, FP_E_INVALID_ARG, "image: missing path or output");
    *out = NULL;
    uint8_t *buf = NULL;
    int rc = FP_OK;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fpi_msg(err, errlen, FP_E_IO, "cannot open %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        rc = fpi_msg(err, errlen, FP_E_IO, "cannot stat %s: %s", path, strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = fpi_msg(err, errlen, FP_E_IO, "%s: not a regular file", path);
        goto out;
    }
    if (st.st_size < 0 || (uint64_t)st.st_size > FPI_IMG_MAX_FILE_SIZE || (uint64_t)st.st_size > SIZE_MAX) {
        rc = fpi_msg(err, errlen, FP_E_LIMIT, "%s: too large for an image (%lld bytes)", path,
                     (long long)st.st_size);
        goto out;
    }
    size_t len = (size_t)st.st_size;
    buf = malloc(len ? len : 1);
    if (!buf) {
        rc = fpi_msg(err, errlen, FP_E_NOMEM, "out of memory: reading %s", path);
        goto out;
    }
    size_t done = 0;
    while (done < len) {
        ssize_t n = read(fd, buf + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = fpi_msg(err, errlen, FP_E_IO, "cannot read %s: %s", path, strerror(errno));
            goto out;
        }
        if (n == 0) {
            rc = fpi_msg(err, errlen, FP_E_IO, "%s: shrank while being read", path);
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
