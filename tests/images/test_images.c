/* test_images.c — memory images: replays every image file
 * corpora/images/<id>/<scenario>.fpimg with `frameproof replay --json` and compares the output byte for byte
 * with the stored .json (one test case per image), then unit-tests the
 * image parser, builder, reader and recorder on hand-made images.  An image
 * named refused_*.fpimg holds a state no stack may be returned for (a
 * process stopped in the middle of an update of its own): its replay must
 * exit 1, its stored .json saying which thread failed.
 *
 * Usage: test_images FRAMEPROOF_EXE IMAGES_DIR   (TAP on stdout)
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fp_facts.h"
#include "frameproof/frameproof.h"
#include "frameproof/image.h"

#define MAX_IMAGES 4096
#define PATH_MAX_LEN 4096
#define ERR_LEN 512
#define OUT_MAX (64u * 1024u * 1024u)
#define READ_CHUNK 65536
#define REFUSED_PREFIX "refused_"

/* Header offsets of format version 1 (facts/facts.env; the captured images
 * under corpora/images keep the layout honest). */
#define H_FORMAT FP_FACT_FPIMG_OFF_FORMAT
#define H_HEADER_SIZE FP_FACT_FPIMG_OFF_HEADER_SIZE
#define H_FLAGS FP_FACT_FPIMG_OFF_FLAGS
#define H_PID FP_FACT_FPIMG_OFF_PID
#define H_THREAD_COUNT FP_FACT_FPIMG_OFF_THREAD_COUNT
#define H_REGION_COUNT FP_FACT_FPIMG_OFF_REGION_COUNT
#define H_VERSION FP_FACT_FPIMG_OFF_PYVERSION
#define H_SIZE FP_FACT_FPIMG_HEADER_SIZE
#define REGION_HEADER FP_FACT_FPIMG_REGION_HEADER
#define THREAD_ENTRY FP_FACT_FPIMG_THREAD_ENTRY

typedef struct image_case {
    const char *exe; /* the frameproof CLI */
    char path[PATH_MAX_LEN];
    char json[PATH_MAX_LEN];
    char name[PATH_MAX_LEN];
    bool refused; /* refused_*.fpimg: the replay must fail (exit 1) */
} image_case;

/* ---- helpers ------------------------------------------------------------ */

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static int read_file(const char *path, uint8_t **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t cap = READ_CHUNK, n = 0;
    uint8_t *buf = malloc(cap);
    int rc = -1;
    if (!buf)
        goto out;
    for (;;) {
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap * 2);
            if (!nb)
                goto out;
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    if (ferror(f))
        goto out;
    *out = buf;
    *len = n;
    buf = NULL;
    rc = 0;
out:
    free(buf);
    fclose(f);
    return rc;
}

/* Runs argv, collecting stdout; returns the exit status or -1. */
static int run_capture(char *const argv[], uint8_t **out, size_t *len)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(fds[1]);
    size_t cap = READ_CHUNK, n = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf)
            break;
        if (n == cap) {
            uint8_t *nb = cap < OUT_MAX ? realloc(buf, cap * 2) : NULL;
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t got = read(fds[0], buf + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        n += (size_t)got;
    }
    close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    if (!buf)
        return -1;
    *out = buf;
    *len = n;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int cmp_case(const void *a, const void *b)
{
    return strcmp(((const image_case *)a)->name, ((const image_case *)b)->name);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Collects IMAGES_DIR/<id>/<scenario>.fpimg. */
static size_t find_images(const char *exe, const char *dir, image_case *cases, size_t max)
{
    size_t n = 0;
    DIR *top = opendir(dir);
    if (!top)
        return 0;
    struct dirent *de;
    while ((de = readdir(top)) && n < max) {
        if (de->d_name[0] == '.')
            continue;
        char sub[PATH_MAX_LEN];
        int w = snprintf(sub, sizeof sub, "%s/%s", dir, de->d_name);
        if (w < 0 || (size_t)w >= sizeof sub)
            continue;
        DIR *d = opendir(sub);
        if (!d)
            continue;
        struct dirent *fe;
        while ((fe = readdir(d)) && n < max) {
            if (!ends_with(fe->d_name, ".fpimg"))
                continue;
            image_case *c = &cases[n];
            c->exe = exe;
            c->refused = strncmp(fe->d_name, REFUSED_PREFIX, strlen(REFUSED_PREFIX)) == 0;
            int a = snprintf(c->path, sizeof c->path, "%s/%s", sub, fe->d_name);
            int b = snprintf(c->name, sizeof c->name, "replay %s/%s", de->d_name, fe->d_name);
            if (a < 0 || (size_t)a >= sizeof c->path || b < 0 || (size_t)b >= sizeof c->name)
                continue;
            size_t plen = strlen(c->path) - strlen(".fpimg");
            int j = snprintf(c->json, sizeof c->json, "%.*s.json", (int)plen, c->path);
            if (j < 0 || (size_t)j >= sizeof c->json)
                continue;
            n++;
        }
        closedir(d);
    }
    closedir(top);
    qsort(cases, n, sizeof *cases, cmp_case);
    return n;
}

/* ---- replay test cases -------------------------------------------------- */

static void test_replay_image(void **state)
{
    const image_case *c = *state;
    char *argv[] = {(char *)(uintptr_t)c->exe, (char *)"replay", (char *)"--json", (char *)c->path, NULL};
    uint8_t *got = NULL, *want = NULL;
    size_t ngot = 0, nwant = 0;
    int status = run_capture(argv, &got, &ngot);
    assert_int_equal(status, c->refused ? 1 : 0);
    assert_int_equal(read_file(c->json, &want, &nwant), 0);
    if (ngot != nwant || memcmp(got, want, ngot) != 0) {
        size_t i = 0;
        while (i < ngot && i < nwant && got[i] == want[i])
            i++;
        print_error("%s: replay output differs from %s at byte %zu (%zu vs %zu bytes)\n", c->path, c->json, i, ngot,
                    nwant);
        free(got);
        free(want);
        fail();
    }
    free(got);
    free(want);
}

/* ---- image parser unit tests ------------------------------------------- */

#define BASE_ADDR 0x7f0000001000ull

/* A valid image: 2 threads, regions at BASE_ADDR (32 bytes) and
 * BASE_ADDR+0x100 (16 bytes). */
static void make_valid(uint8_t **buf, size_t *len)
{
    fp_image_meta m;
    memset(&m, 0, sizeof m);
    m.pid = 1234;
    m.hexversion = 0x030e00f0;
    m.runtime_addr = BASE_ADDR;
    snprintf(m.version, sizeof m.version, "3.14.0");
    fp_image_builder *b = NULL;
    assert_int_equal(fp_image_builder_new(&m, &b), FP_OK);
    assert_int_equal(fp_image_builder_add_thread(b, 11, 'S'), FP_OK);
    assert_int_equal(fp_image_builder_add_thread(b, 12, 'R'), FP_OK);
    uint8_t a[32], c[16];
    for (size_t i = 0; i < sizeof a; i++)
        a[i] = (uint8_t)i;
    for (size_t i = 0; i < sizeof c; i++)
        c[i] = (uint8_t)(0xA0 + i);
    assert_int_equal(fp_image_builder_add_region(b, BASE_ADDR + 0x100, c, sizeof c), FP_OK);
    assert_int_equal(fp_image_builder_add_region(b, BASE_ADDR, a, sizeof a), FP_OK);
    char err[ERR_LEN];
    assert_int_equal(fp_image_builder_serialize(b, buf, len, err, sizeof err), FP_OK);
    fp_image_builder_free(b);
}

/* Offset of region i's header in make_valid()'s image. */
static size_t region_off(size_t i)
{
    size_t off = H_SIZE + 2 * THREAD_ENTRY;
    return i == 0 ? off : off + REGION_HEADER + 32;
}

static int open_code(const uint8_t *buf, size_t len)
{
    fp_image *img = NULL;
    char err[ERR_LEN] = "";
    int rc = fp_image_open_mem(buf, len, &img, err, sizeof err);
    if (rc == FP_OK) {
        assert_non_null(img);
        fp_image_free(img);
    } else {
        assert_null(img);
        assert_true(err[0] != 0);
    }
    return rc;
}

static void test_valid_roundtrip(void **state)
{
    (void)state;
    uint8_t *buf;
    size_t len;
    make_valid(&buf, &len);
    fp_image *img = NULL;
    char err[ERR_LEN];
    assert_int_equal(fp_image_open_mem(buf, len, &img, err, sizeof err), FP_OK);
    fp_image_meta m;
    assert_int_equal(fp_image_get_meta(img, &m), FP_OK);
    assert_int_equal(m.pid, 1234);
    assert_int_equal(m.hexversion, 0x030e00f0);
    assert_string_equal(m.version, "3.14.0");
    assert_int_equal(fp_image_get_thread_count(img), 2);
    assert_int_equal(fp_image_get_thread(img, 1)->native_id, 12);
    assert_int_equal(fp_image_get_thread(img, 1)->state, 'R');
    assert_null(fp_image_get_thread(img, 2));
    assert_int_equal(fp_image_get_region_count(img), 2);
    assert_int_equal(fp_image_get_region_bytes(img), 48);
    fp_target_desc d;
    assert_int_equal(fp_image_get_target(img, &d), FP_OK);
    assert_int_equal(d.runtime_addr, BASE_ADDR);
    assert_int_equal(d.pid, 0);
    fp_reader r;
    assert_int_equal(fp_reader_open_image(img, &r), FP_OK);
    uint8_t out[32];
    assert_int_equal(fp_reader_read(&r, BASE_ADDR + 4, out, 8), FP_OK);
    assert_int_equal(out[0], 4);
    assert_int_equal(fp_reader_read(&r, BASE_ADDR, out, 32), FP_OK);
    assert_int_equal(fp_reader_read(&r, BASE_ADDR + 0x10F, out, 1), FP_OK);
    assert_int_equal(out[0], 0xAF);
    assert_int_equal(fp_reader_read(&r, BASE_ADDR, out, 0), FP_OK);
    /* Outside every region, partly outside, in the gap, below, above. */
    assert_int_equal(fp_reader_read(&r, BASE_ADDR + 31, out, 2), FP_E_READ);
    assert_int_equal(fp_reader_read(&r, BASE_ADDR + 0x40, out, 1), FP_E_READ);
    assert_int_equal(fp_reader_read(&r, BASE_ADDR - 1, out, 1), FP_E_READ);
    assert_int_equal(fp_reader_read(&r, BASE_ADDR + 0x110, out, 1), FP_E_READ);
    assert_int_equal(fp_reader_read(&r, UINT64_MAX, out, 1), FP_E_READ);
    fp_iov iov[2] = {{BASE_ADDR, out, 4}, {BASE_ADDR + 0x100, out + 4, 4}};
    assert_int_equal(fp_reader_readv(&r, iov, 2), FP_OK);
    iov[1].addr = BASE_ADDR + 0x200;
    assert_int_equal(fp_reader_readv(&r, iov, 2), FP_E_READ);
    fp_reader_close(&r); /* harmless */
    fp_image_free(img);
    free(buf);
}

static void test_truncated_header(void **state)
{
    (void)state;
    uint8_t *buf;
    size_t len;
    make_valid(&buf, &len);
    for (size_t n = 0; n < H_SIZE; n++)
        assert_int_equal(open_code(buf, n), FP_E_FORMAT);
    free(buf);
}

static void test_every_truncation(void **state)
{
    (void)state;
    uint8_t *buf;
    size_t len;
    make_valid(&buf, &len);
    for (size_t n = 0; n < len; n++)
        assert_int_equal(open_code(buf, n), FP_E_FORMAT);
    assert_int_equal(open_code(buf, len), FP_OK);
    free(buf);
}

static void test_bad_magic(void **state)
{
    (void)state;
    uint8_t *buf;
    size_t len;
    make_valid(&buf, &len);
    buf[0] = 'X';
    assert_int_equal(open_code(buf, len), FP_E_FORMAT);
    buf[0] = 'F';
    buf[7] = 1;
    assert_int_equal(open_code(buf, len), FP_E_FORMAT);
    free(buf);
}

static void test_bad_header_fields(void **state)
{
    (void)state;
    uint8_t *buf;
    size_t len;
    make_valid(&buf, &len);
    put32(buf + H_FORMAT, 2);
    assert_int_equal(open_code(buf, len), FP_E_UNSUPPORTED);
    put32(buf + H_FORMAT, FP_IMAGE_FORMAT_VERSION);
    put32(buf + H_HEADER_SIZE, H_SIZE - 1);
    assert_int_equal(open_code(buf, len), FP_E_FORMAT);
    put32(buf + H_HEADER_SIZE, 0xFFFFFFFFu);
    assert_int_equal(open_code(buf, len), FP_E_FORMAT);
    put32(buf + H_HEADER_SIZE, H_SIZE);
    put32(buf + H_FLAGS, 0x80);
    assert_int_equal(open_code(buf, len), FP_E_FORMAT);
    put32(buf + H_FLAGS, 0);
    put32(buf + H_PID, 0x80000000u);
    assert_int_equal(open_code(buf, len), FP_E_FORMAT);
    put32(buf + H_PID, 1);
    memset(buf + H_VERSION, 'x', FP_IMAGE_VERSION_LEN);
    assert_int_equal(open_code(buf, len), FP_E_FORMAT);
    memset(buf + H_VERSION, 0, FP_IMAGE_VERSION_LEN);
    assert_int_equal(open_code(buf, len), FP_OK);
    put32(buf + H_THREAD_COUNT, 0xFFFFFFFFu);
    assert_int_equal(open_code(buf, len), FP_E_LIMIT);
    put32(buf + H_THREAD_COUNT, 3);
    assert_int_equal(open_code(buf, len), FP_E_FORMAT);
    put32(buf + H_THREAD_COUNT, 2);
    buf[H_SIZE + 8] = 0xFF; /* thread state byte */
    assert_int_equal(open_code(buf, len), FP_E_FORMAT);
    buf[H_SIZE + 8] = 'S';
    buf[H_SIZE + 15] = 1; /* reserved */
    assert_int_equal(open_code(buf, len), FP_E_FORMAT);
    buf[H_SIZE + 15] = 0;
    put64(buf + H_REGION_COUNT, UINT64_MAX);
    assert_int_equal(open_code(buf, len), FP_E_LIMIT);
    put64(buf + H_REGION_COUNT, 3);
    assert_int_equal(open_code(buf, len), FP_E_FORMAT);
    put64(buf + H_REGION_COUNT, 1);
    assert_int_equal(open_code(buf, len), FP_E_FORMAT); /* trailing bytes */
    put64(buf + H_REGION_COUNT, 2);
    assert_int_equal(open_code(buf, len), FP_OK);
    free(buf);
}

static void test_overlapping_regions(void **state)
{
    (void)state;
    uint8_t *buf;
    size_t len;
    make_valid(&buf, &len);
    /* Second region starts inside the first. */
    put64(buf + region_off(1), BASE_ADDR + 16);
    assert_int_equal(open_code(buf, len), FP_E_FORMAT);
    /* Same start. */
    put64(buf + region_off(1), BASE_ADDR);
    assert_int_equal(open_code(buf, len), FP_E_FORMAT);
    /* Unsorted. */
    put64(buf + region_off(1), BASE_ADDR - 0x100);
    assert_int_equal(open_code(buf, len), FP_E_FORMAT);
    /* Touching is allowed, and a read may span both. */
    put64(buf + region_off(1), BASE_ADDR + 32);
    fp_image *img = NULL;
    assert_int_equal(fp_image_open_mem(buf, len, &img, NULL, 0), FP_OK);
    fp_reader r;
    fp_reader_open_image(img, &r);
    uint8_t out[8];
    assert_int_equal(fp_reader_read(&r, BASE_ADDR + 28, out, 8), FP_OK);
    assert_int_equal(out[3], 31);
    assert_int_equal(out[4], 0xA0);
    assert_int_equal(fp_reader_read(&r, BASE_ADDR + 44, out, 8), FP_E_READ);
    fp_image_free(img);
    free(buf);
}

static void test_region_past_eof(void **state)
{
    (void)state;
    uint8_t *buf;
    size_t len;
    make_valid(&buf, &len);
    put64(buf + region_off(1) + 8, 17);
    assert_int_equal(open_code(buf, len), FP_E_FORMAT);
    put64(buf + region_off(1) + 8, UINT64_MAX);
    assert_int_equal(open_code(buf, len), FP_E_FORMAT);
    put64(buf + region_off(1) + 8, 0);
    assert_int_equal(open_code(buf, len), FP_E_FORMAT);
    put64(buf + region_off(1) + 8, 16);
    put64(buf + region_off(1), UINT64_MAX - 8); /* wraps */
    assert_int_equal(open_code(buf, len), FP_E_FORMAT);
    put64(buf + region_off(0) + 8, (uint64_t)2 << 30);
    assert_int_equal(open_code(buf, len), FP_E_LIMIT);
    free(buf);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    fp_image *img = (fp_image *)(uintptr_t)1;
    char err[ERR_LEN];
    assert_int_equal(fp_image_open_mem(NULL, 4, &img, err, sizeof err), FP_E_INVALID_ARG);
    assert_int_equal(fp_image_open_mem("", 0, NULL, err, sizeof err), FP_E_INVALID_ARG);
    assert_int_equal(fp_image_open("/nonexistent/dir/x.fpimg", &img, err, sizeof err), FP_E_IO);
    assert_null(img);
    assert_int_equal(fp_image_open("/", &img, err, sizeof err), FP_E_IO);
    assert_int_equal(fp_reader_open_image(NULL, NULL), FP_E_INVALID_ARG);
    fp_image_free(NULL);
}

static void test_builder_rejects_overlap(void **state)
{
    (void)state;
    fp_image_meta m;
    memset(&m, 0, sizeof m);
    fp_image_builder *b = NULL;
    assert_int_equal(fp_image_builder_new(&m, &b), FP_OK);
    uint8_t d[16] = {0};
    assert_int_equal(fp_image_builder_add_region(b, 100, d, 16), FP_OK);
    assert_int_equal(fp_image_builder_add_region(b, 108, d, 16), FP_OK);
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(fp_image_builder_serialize(b, &buf, &len, NULL, 0), FP_E_INVALID_ARG);
    assert_int_equal(fp_image_builder_add_region(b, UINT64_MAX - 4, d, 16), FP_E_INVALID_ARG);
    assert_int_equal(fp_image_builder_add_thread(b, 1, '\x01'), FP_E_INVALID_ARG);
    fp_image_builder_free(b);
}

static void test_builder_merges_touching(void **state)
{
    (void)state;
    fp_image_meta m;
    memset(&m, 0, sizeof m);
    fp_image_builder *b = NULL;
    assert_int_equal(fp_image_builder_new(&m, &b), FP_OK);
    uint8_t d[16];
    memset(d, 7, sizeof d);
    assert_int_equal(fp_image_builder_add_region(b, 116, d, 16), FP_OK);
    assert_int_equal(fp_image_builder_add_region(b, 100, d, 16), FP_OK);
    assert_int_equal(fp_image_builder_add_region(b, 200, d, 16), FP_OK);
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(fp_image_builder_serialize(b, &buf, &len, NULL, 0), FP_OK);
    fp_image *img = NULL;
    assert_int_equal(fp_image_open_mem(buf, len, &img, NULL, 0), FP_OK);
    assert_int_equal(fp_image_get_region_count(img), 2);
    assert_int_equal(fp_image_get_region_bytes(img), 48);
    fp_image_free(img);
    free(buf);
    fp_image_builder_free(b);
}

static void test_recorder(void **state)
{
    (void)state;
    /* Source: one 4 KiB region at 0x10000 holding i & 0xff. */
    fp_image_meta m;
    memset(&m, 0, sizeof m);
    fp_image_builder *b = NULL;
    enum { SRC_ADDR = 0x10000, SRC_LEN = 4096 };
    uint8_t src[SRC_LEN];
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (uint8_t)i;
    assert_int_equal(fp_image_builder_new(&m, &b), FP_OK);
    assert_int_equal(fp_image_builder_add_region(b, SRC_ADDR, src, sizeof src), FP_OK);
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(fp_image_builder_serialize(b, &buf, &len, NULL, 0), FP_OK);
    fp_image_builder_free(b);
    fp_image *img = NULL;
    assert_int_equal(fp_image_open_mem(buf, len, &img, NULL, 0), FP_OK);
    free(buf);
    fp_reader inner, rr;
    fp_reader_open_image(img, &inner);
    fp_recorder *rec = NULL;
    assert_int_equal(fp_recorder_new(&inner, 3, &rec), FP_E_INVALID_ARG);
    assert_int_equal(fp_recorder_new(&inner, 8192, &rec), FP_E_INVALID_ARG);
    assert_int_equal(fp_recorder_new(&inner, 64, &rec), FP_OK);
    fp_reader_open_recorder(rec, &rr);
    uint8_t out[16];
    assert_int_equal(fp_reader_read(&rr, SRC_ADDR + 10, out, 4), FP_OK);   /* -> [0, 64) */
    assert_int_equal(fp_reader_read(&rr, SRC_ADDR + 60, out, 8), FP_OK);   /* -> [0, 128) */
    assert_int_equal(fp_reader_read(&rr, SRC_ADDR + 1000, out, 1), FP_OK); /* -> [960, 1024) */
    assert_int_equal(fp_reader_read(&rr, SRC_ADDR + 5000, out, 1), FP_E_READ);
    fp_iov iov[2] = {{SRC_ADDR + 4095, out, 1}, {SRC_ADDR + 9000, out + 1, 1}};
    assert_int_equal(fp_reader_readv(&rr, iov, 2), FP_E_READ); /* records [4032, 4096) */
    assert_int_equal(fp_recorder_get_range_count(rec), 3);
    m.pid = 5;
    assert_int_equal(fp_image_builder_new(&m, &b), FP_OK);
    assert_int_equal(fp_recorder_capture(rec, b, NULL, 0), FP_OK);
    assert_int_equal(fp_image_builder_serialize(b, &buf, &len, NULL, 0), FP_OK);
    fp_image *cap = NULL;
    assert_int_equal(fp_image_open_mem(buf, len, &cap, NULL, 0), FP_OK);
    assert_int_equal(fp_image_get_region_count(cap), 3);
    assert_int_equal(fp_image_get_region_bytes(cap), 128 + 64 + 64);
    fp_reader cr;
    fp_reader_open_image(cap, &cr);
    assert_int_equal(fp_reader_read(&cr, SRC_ADDR + 127, out, 1), FP_OK);
    assert_int_equal(out[0], 127);
    assert_int_equal(fp_reader_read(&cr, SRC_ADDR + 128, out, 1), FP_E_READ);
    assert_int_equal(fp_reader_read(&cr, SRC_ADDR + 960, out, 1), FP_OK);
    assert_int_equal(out[0], 960 & 0xff);
    fp_image_free(cap);
    free(buf);
    fp_image_builder_free(b);
    fp_recorder_free(rec);
    fp_image_free(img);
}

static void test_attach_without_runtime(void **state)
{
    (void)state;
    uint8_t *buf;
    size_t len;
    make_valid(&buf, &len);
    fp_image *img = NULL;
    assert_int_equal(fp_image_open_mem(buf, len, &img, NULL, 0), FP_OK);
    free(buf);
    fp_reader r;
    fp_target_desc d;
    fp_reader_open_image(img, &r);
    fp_image_get_target(img, &d);
    fp_session *s = NULL;
    assert_int_equal(fp_session_new(NULL, &s), FP_OK);
    int rc = fp_session_attach_reader(s, &r, &d);
    assert_int_not_equal(rc, FP_OK);
    fp_session_free(s);
    fp_image_free(img);
}

static void test_images_present(void **state)
{
    const char *dir = *state;
    print_error("no memory images (*/*.fpimg) found under %s\n", dir);
    fail();
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s FRAMEPROOF_EXE IMAGES_DIR\n", argv[0]);
        return 2;
    }
    cmocka_set_message_output(CM_OUTPUT_TAP);
    static image_case cases[MAX_IMAGES];
    size_t n = find_images(argv[1], argv[2], cases, MAX_IMAGES);
    static const struct CMUnitTest unit[] = {
        cmocka_unit_test(test_valid_roundtrip),
        cmocka_unit_test(test_truncated_header),
        cmocka_unit_test(test_every_truncation),
        cmocka_unit_test(test_bad_magic),
        cmocka_unit_test(test_bad_header_fields),
        cmocka_unit_test(test_overlapping_regions),
        cmocka_unit_test(test_region_past_eof),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_builder_rejects_overlap),
        cmocka_unit_test(test_builder_merges_touching),
        cmocka_unit_test(test_recorder),
        cmocka_unit_test(test_attach_without_runtime),
    };
    size_t nunit = sizeof unit / sizeof unit[0];
    size_t ncases = n ? n : 1; /* no image: one failing case says so */
    struct CMUnitTest *tests = calloc(ncases + nunit, sizeof *tests);
    if (!tests)
        return 1;
    for (size_t i = 0; i < n; i++) {
        tests[i].name = cases[i].name;
        tests[i].test_func = test_replay_image;
        tests[i].initial_state = &cases[i];
    }
    if (n == 0) {
        tests[0].name = "memory images present";
        tests[0].test_func = test_images_present;
        tests[0].initial_state = argv[2];
    }
    memcpy(tests + ncases, unit, sizeof unit);
    int failed = _cmocka_run_group_tests("images", tests, ncases + nunit, NULL, NULL);
    free(tests);
    return failed ? 1 : 0;
}
