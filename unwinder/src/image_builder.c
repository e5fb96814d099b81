/* image_builder.c — fp_image_builder: collects an image's metadata,
 * threads and regions (copied), and serialises them as a memory image
 * (docs/image-format.md) with touching regions merged, to a buffer or,
 * through a temporary file renamed into place, to a file.  The recording
 * reader (image_recorder.c) captures snapshots into a builder. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frameproof/image.h"
#include "fp_error.h"
#include "grow.h"
#include "image_format.h"

/* First capacity of the thread and region tables; they double from there. */
#define BUILDER_INITIAL_CAP 64u

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
    if (!b || !fpi_img_valid_state((uint8_t)state))
        return FP_E_INVALID_ARG;
    if (b->nthreads >= FP_IMAGE_MAX_THREADS)
        return FP_E_LIMIT;
    fp_image_thread *nt = fpi_grow(b->threads, &b->threads_cap, b->nthreads + 1, sizeof *nt, BUILDER_INITIAL_CAP);
    if (!nt)
        return FP_E_NOMEM;
    b->threads = nt;
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
    build_region *nr = fpi_grow(b->regions, &b->regions_cap, b->nregions + 1, sizeof *nr, BUILDER_INITIAL_CAP);
    if (!nr)
        return FP_E_NOMEM;
    b->regions = nr;
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
        return fpi_msg(err, errlen, FP_E_INVALID_ARG, "image builder: missing builder or output");
    if (b->nregions)
        qsort(b->regions, b->nregions, sizeof *b->regions, cmp_build_region);
    /* Count the merged regions and check for overlaps. */
    size_t merged = 0;
    for (size_t i = 0; i < b->nregions; i++) {
        if (i > 0) {
            uint64_t prev_end = b->regions[i - 1].addr + b->regions[i - 1].len;
            if (b->regions[i].addr < prev_end)
                return fpi_msg(err, errlen, FP_E_INVALID_ARG, "image builder: regions at 0x%llx and 0x%llx overlap",
                               (unsigned long long)b->regions[i - 1].addr, (unsigned long long)b->regions[i].addr);
            if (b->regions[i].addr == prev_end)
                continue;
        }
        merged++;
    }
    if (merged > FP_IMAGE_MAX_REGIONS)
        return fpi_msg(err, errlen, FP_E_LIMIT, "image builder: too many regions (%zu)", merged);
    /* The revision's field only where there is something to say in it, so
     * images without a task graph stay byte for byte what they were. */
    uint32_t hsize = b->meta.asyncio_debug_addr ? FPI_IMG_ASYNCIO_HEADER_SIZE : FPI_IMG_V1_HEADER_SIZE;
    uint64_t total = (uint64_t)hsize + (uint64_t)b->nthreads * FPI_IMG_THREAD_ENTRY +
                     (uint64_t)merged * FPI_IMG_REGION_HEADER + b->bytes;
    if (total > SIZE_MAX)
        return fpi_msg(err, errlen, FP_E_LIMIT, "image builder: image too large");
    uint8_t *buf = calloc(1, (size_t)total);
    if (!buf)
        return fpi_msg(err, errlen, FP_E_NOMEM, "out of memory: serialising %llu bytes", (unsigned long long)total);
    memcpy(buf, FPI_IMG_MAGIC, FPI_IMG_MAGIC_LEN);
    fpi_le_put_u32(buf + FPI_IMG_OFF_FORMAT, FP_IMAGE_FORMAT_VERSION);
    fpi_le_put_u32(buf + FPI_IMG_OFF_HEADER_SIZE, hsize);
    fpi_le_put_u32(buf + FPI_IMG_OFF_FLAGS, (b->meta.free_threaded ? FPI_IMG_FLAG_FREE_THREADED : 0u) |
                                                (b->meta.debug ? FPI_IMG_FLAG_DEBUG : 0u));
    fpi_le_put_u32(buf + FPI_IMG_OFF_HEXVERSION, b->meta.hexversion);
    fpi_le_put_u32(buf + FPI_IMG_OFF_PID, (uint32_t)b->meta.pid);
    fpi_le_put_u32(buf + FPI_IMG_OFF_THREAD_COUNT, (uint32_t)b->nthreads);
    fpi_le_put_u64(buf + FPI_IMG_OFF_RUNTIME, b->meta.runtime_addr);
    fpi_le_put_u64(buf + FPI_IMG_OFF_REGION_COUNT, merged);
    /* strncpy semantics: the field is NUL-padded. */
    size_t vlen = strnlen(b->meta.version, FP_IMAGE_VERSION_LEN - 1);
    memcpy(buf + FPI_IMG_OFF_PYVERSION, b->meta.version, vlen);
    if (b->meta.asyncio_debug_addr)
        fpi_le_put_u64(buf + FPI_IMG_OFF_ASYNCIO, b->meta.asyncio_debug_addr);
    size_t pos = hsize;
    for (size_t i = 0; i < b->nthreads; i++, pos += FPI_IMG_THREAD_ENTRY) {
        fpi_le_put_u64(buf + pos, b->threads[i].native_id);
        buf[pos + FPI_IMG_THREAD_OFF_STATE] = (uint8_t)b->threads[i].state;
    }
    for (size_t i = 0; i < b->nregions;) {
        size_t j = i + 1;
        uint64_t len = b->regions[i].len;
        while (j < b->nregions && b->regions[j].addr == b->regions[j - 1].addr + b->regions[j - 1].len)
            len += b->regions[j++].len;
        fpi_le_put_u64(buf + pos, b->regions[i].addr);
        fpi_le_put_u64(buf + pos + 8, len);
        pos += FPI_IMG_REGION_HEADER;
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
        return fpi_msg(err, errlen, FP_E_INVALID_ARG, "image builder: missing builder or path");
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
        rc = fpi_msg(err, errlen, FP_E_NOMEM, "out of memory: the temporary name for %s", path);
        goto out;
    }
    snprintf(tmp, plen, "%s.tmp", path);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        rc = fpi_msg(err, errlen, FP_E_IO, "cannot create %s: %s", tmp, strerror(errno));
        goto out;
    }
    for (size_t done = 0; done < len;) {
        ssize_t n = write(fd, buf + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rc = fpi_msg(err, errlen, FP_E_IO, "cannot write %s: %s", tmp, n < 0 ? strerror(errno) : "short write");
            goto out;
        }
        done += (size_t)n;
    }
    if (close(fd) != 0) {
        fd = -1;
        rc = fpi_msg(err, errlen, FP_E_IO, "cannot write %s: %s", tmp, strerror(errno));
        goto out;
    }
    fd = -1;
    if (rename(tmp, path) != 0) {
        rc = fpi_msg(err, errlen, FP_E_IO, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
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
