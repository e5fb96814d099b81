/* corrupt_thread.c — writes a copy of a memory image in which one thread's
 * data-stack top lies below its chunk (chunk 0xfffffffffffffff0, top
 * 0x3fffff0: before the fix, a wrapped 64 MiB copy size):
 * that thread's walk must fail as corrupt data while the others unwind.
 *
 * Usage: corrupt_thread IN.fpimg OUT.fpimg INDEX
 * INDEX counts the main interpreter's thread states from the list head.
 * The thread state is found through the library's own layout of the image;
 * the two words are patched in the image file's bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frameproof/image.h"
#include "read.h"
#include "session.h"

#define BAD_CHUNK 0xfffffffffffffff0ull
#define BAD_TOP 0x3fffff0ull
#define IMG_OFF_HEADER_SIZE 12
#define IMG_OFF_THREAD_COUNT 28
#define IMG_OFF_REGION_COUNT 40
#define IMG_THREAD_ENTRY 16
#define IMG_REGION_HEADER 16

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Writes v at target address addr inside the image file bytes; 0 if done. */
static int patch(uint8_t *b, size_t len, uint64_t addr, uint64_t v)
{
    uint32_t hsize, nthreads;
    memcpy(&hsize, b + IMG_OFF_HEADER_SIZE, 4);
    memcpy(&nthreads, b + IMG_OFF_THREAD_COUNT, 4);
    uint64_t nregions = le64(b + IMG_OFF_REGION_COUNT);
    size_t pos = hsize + (size_t)nthreads * IMG_THREAD_ENTRY;
    for (uint64_t i = 0; i < nregions && pos + IMG_REGION_HEADER <= len; i++) {
        uint64_t start = le64(b + pos), rlen = le64(b + pos + 8);
        pos += IMG_REGION_HEADER;
        if (addr >= start && addr - start + 8 <= rlen && pos + rlen <= len) {
            memcpy(b + pos + (addr - start), &v, 8);
            return 0;
        }
        pos += (size_t)rlen;
    }
    return -1;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: corrupt_thread IN.fpimg OUT.fpimg INDEX\n");
        return 2;
    }
    int status = 1;
    fp_image *img = NULL;
    fp_session *s = NULL;
    uint8_t *bytes = NULL;
    char err[256] = "";
    if (fp_image_open(argv[1], &img, err, sizeof err) || fp_session_new(NULL, &s)) {
        fprintf(stderr, "corrupt_thread: %s\n", err);
        goto out;
    }
    fp_reader rd;
    fp_target_desc desc;
    fp_reader_open_image(img, &rd);
    fp_image_get_target(img, &desc);
    if (fp_session_attach_reader(s, &rd, &desc)) {
        fprintf(stderr, "corrupt_thread: %s\n", fp_session_get_errmsg(s));
        goto out;
    }
    const fpi_layout *l = &s->layout;
    uint64_t interp = 0, ts = 0;
    if (fpi_read(s, desc.runtime_addr + (uint64_t)l->rt_interpreters_head, &interp, 8) ||
        fpi_read(s, interp + (uint64_t)l->interp_threads_head, &ts, 8))
        goto out;
    for (long i = atol(argv[3]); i > 0 && ts; i--)
        if (fpi_read(s, ts + (uint64_t)l->ts_next, &ts, 8))
            goto out;
    if (!ts) {
        fprintf(stderr, "corrupt_thread: no thread %s\n", argv[3]);
        goto out;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f)
        goto out;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    rewind(f);
    bytes = malloc((size_t)len);
    size_t got = bytes ? fread(bytes, 1, (size_t)len, f) : 0;
    fclose(f);
    if (got != (size_t)len || patch(bytes, got, ts + (uint64_t)l->ts_datastack_chunk, BAD_CHUNK) ||
        patch(bytes, got, ts + (uint64_t)l->ts_datastack_top, BAD_TOP)) {
        fprintf(stderr, "corrupt_thread: cannot patch thread state 0x%llx\n", (unsigned long long)ts);
        goto out;
    }
    f = fopen(argv[2], "wb");
    if (!f || fwrite(bytes, 1, got, f) != got || fclose(f) != 0)
        goto out;
    status = 0;
out:
    free(bytes);
    fp_session_free(s);
    fp_image_free(img);
    return status;
}
