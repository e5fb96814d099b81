/* test_image_format.c — the memory-image format's parser, builder,
 * reader and recorder on hand-made images (cmocka, TAP): a valid image
 * round-trips, every truncation and bad header field, overlapping or
 * out-of-file regions and bad arguments are refused, the builder refuses
 * overlap and merges touching regions, the recorder keeps what a session
 * reads, and a session cannot attach to an image with no runtime.
 * (test_images.c replays the captured images.)
 *
 * Usage: test_image_format   (TAP on stdout)
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fp_facts.h"
#include "frameproof/frameproof.h"
#include "frameproof/image.h"

#define ERR_LEN 512

/* Header offsets of format version 1 (facts/facts.env; the captured images
 * under corpora/images keep the layout honest). */
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

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
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

/* The appended field: an image with asyncio's table address has the longer
 * header, the address read back into its meta and target description; one
 * without keeps the version 1 header byte for byte, the address 0. */
static void test_asyncio_field(void **state)
{
    (void)state;
    fp_image_meta m;
    memset(&m, 0, sizeof m);
    m.hexversion = 0x030f00f0;
    m.runtime_addr = BASE_ADDR;
    m.asyncio_debug_addr = 0x7f00deadbee0ull;
    snprintf(m.version, sizeof m.version, "3.15.2");
    fp_image_builder *b = NULL;
    uint8_t a[16] = {1};
    assert_int_equal(fp_image_builder_new(&m, &b), FP_OK);
    assert_int_equal(fp_image_builder_add_region(b, BASE_ADDR, a, sizeof a), FP_OK);
    uint8_t *buf;
    size_t len;
    char err[ERR_LEN];
    assert_int_equal(fp_image_builder_serialize(b, &buf, &len, err, sizeof err), FP_OK);
    fp_image_builder_free(b);
    assert_int_equal(len, FP_FACT_FPIMG_ASYNCIO_HEADER_SIZE + REGION_HEADER + sizeof a);
    assert_int_equal(get32(buf + H_HEADER_SIZE), FP_FACT_FPIMG_ASYNCIO_HEADER_SIZE);
    fp_image *img = NULL;
    assert_int_equal(fp_image_open_mem(buf, len, &img, err, sizeof err), FP_OK);
    fp_image_meta got;
    fp_target_desc d;
    assert_int_equal(fp_image_get_meta(img, &got), FP_OK);
    assert_int_equal(fp_image_get_target(img, &d), FP_OK);
    assert_int_equal(got.asyncio_debug_addr, 0x7f00deadbee0ull);
    assert_int_equal(d.asyncio_debug_addr, 0x7f00deadbee0ull);
    fp_image_free(img);
    free(buf);

    make_valid(&buf, &len);
    assert_int_equal(get32(buf + H_HEADER_SIZE), H_SIZE);
    assert_int_equal(fp_image_open_mem(buf, len, &img, err, sizeof err), FP_OK);
    assert_int_equal(fp_image_get_target(img, &d), FP_OK);
    assert_int_equal(d.asyncio_debug_addr, 0);
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

int main(void)
{
    cmocka_set_message_output(CM_OUTPUT_TAP);
    static const struct CMUnitTest unit[] = {
        cmocka_unit_test(test_valid_roundtrip),
        cmocka_unit_test(test_asyncio_field),
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
    return cmocka_run_group_tests_name("image_format", unit, NULL, NULL) ? 1 : 0;
}
