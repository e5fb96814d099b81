/* test_block_cache.c — reads of a stopped target from whole blocks
 * (block_cache.h): the bytes are those a direct read gives, a block is
 * read once per stop, a new stop forgets every block (the target ran in
 * between: a block kept across stops would give its old bytes back), a
 * block that cannot be read whole is read piece by piece and not tried
 * whole again, and a range larger than a block is read directly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "block_cache.h"
#include "fpi_limits.h"
#include "frameproof/frameproof.h"
#include "frameproof/reader.h"

#define BLK FPI_BLOCK_CACHE_BLOCK
#define BASE 0x7f0000100000ull   /* block-aligned */
#define MEM_BLOCKS 4u
#define RAGGED_START (BASE + 3u * BLK + 100u) /* the last block's memory starts 100 bytes in */

/* A target: MEM_BLOCKS blocks at BASE, of which the last is readable from
 * RAGGED_START on only (as a memory image's region may start mid-block). */
typedef struct fake {
    uint8_t mem[MEM_BLOCKS * BLK];
    unsigned calls;
} fake;

static int fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    fake *f = ctx;
    f->calls++;
    uint64_t start = BASE, end = BASE + MEM_BLOCKS * BLK;
    if (addr >= BASE + 3u * BLK || addr + len > BASE + 3u * BLK)
        start = RAGGED_START;
    if (addr < start || addr + len > end || addr + len < addr)
        return FP_E_READ;
    memcpy(buf, f->mem + (addr - BASE), len);
    return FP_OK;
}

static const fp_reader_ops fake_ops = {.name = "fake", .read = fake_read};

typedef struct fixture {
    fake f;
    fp_reader rd;
    fpi_block_cache c;
    fp_read_stats st;
} fixture;

static int setup(void **state)
{
    static fixture fx;
    memset(&fx, 0, sizeof fx);
    for (size_t i = 0; i < sizeof fx.f.mem; i++)
        fx.f.mem[i] = (uint8_t)(i * 7u + (i >> 8));
    fx.rd = (fp_reader){.ops = &fake_ops, .ctx = &fx.f};
    assert_int_equal(fpi_block_cache_begin(&fx.c), FP_OK);
    *state = &fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    fpi_block_cache_free(&fx->c);
    return 0;
}

static int rd(fixture *fx, uint64_t addr, void *buf, size_t len)
{
    return fpi_block_cache_read(&fx->c, &fx->rd, addr, buf, len, &fx->st);
}

static void test_same_bytes_one_read_per_block(void **state)
{
    fixture *fx = *state;
    uint8_t got[64];
    assert_int_equal(rd(fx, BASE + 40, got, sizeof got), FP_OK);
    assert_memory_equal(got, fx->f.mem + 40, sizeof got);
    assert_int_equal(fx->f.calls, 1);
    assert_int_equal(rd(fx, BASE + 2000, got, 8), FP_OK);   /* the same block: no read */
    assert_memory_equal(got, fx->f.mem + 2000, 8);
    assert_int_equal(fx->f.calls, 1);
    assert_int_equal(rd(fx, BASE + BLK - 10, got, 30), FP_OK); /* across into the next block: one read more */
    assert_memory_equal(got, fx->f.mem + BLK - 10, 30);
    assert_int_equal(fx->f.calls, 2);
    assert_int_equal(fx->st.calls, 2);
    assert_int_equal(fx->st.bytes, 2 * BLK);
}

static void test_new_stop_forgets(void **state)
{
    fixture *fx = *state;
    uint8_t got[8];
    assert_int_equal(rd(fx, BASE + 64, got, 8), FP_OK);
    fpi_block_cache_end(&fx->c);
    fx->f.mem[64] ^= 0xffu; /* the target ran and wrote */
    assert_int_equal(fpi_block_cache_begin(&fx->c), FP_OK);
    assert_int_equal(rd(fx, BASE + 64, got, 8), FP_OK);
    assert_int_equal(got[0], fx->f.mem[64]);
    assert_int_equal(fx->f.calls, 2);
}

static void test_ragged_block(void **state)
{
    fixture *fx = *state;
    uint8_t got[16];
    assert_int_equal(rd(fx, RAGGED_START + 8, got, 16), FP_OK); /* whole block refused, the piece read */
    assert_memory_equal(got, fx->f.mem + (RAGGED_START + 8 - BASE), 16);
    assert_int_equal(fx->f.calls, 2);
    assert_int_equal(rd(fx, RAGGED_START + 40, got, 16), FP_OK); /* the block is not tried whole again */
    assert_memory_equal(got, fx->f.mem + (RAGGED_START + 40 - BASE), 16);
    assert_int_equal(fx->f.calls, 3);
    assert_int_equal(rd(fx, RAGGED_START - 8, got, 16), FP_E_READ); /* bytes not there stay unreadable */
}

static void test_large_range_direct(void **state)
{
    fixture *fx = *state;
    static uint8_t got[BLK + 1];
    assert_int_equal(rd(fx, BASE + 1, got, sizeof got), FP_OK);
    assert_memory_equal(got, fx->f.mem + 1, sizeof got);
    assert_int_equal(fx->f.calls, 1);
    assert_int_equal(rd(fx, BASE + 1, got, 8), FP_OK); /* not kept: a block read now */
    assert_int_equal(fx->f.calls, 2);
}

static void test_unmapped(void **state)
{
    fixture *fx = *state;
    uint8_t got[8];
    assert_int_equal(rd(fx, BASE - BLK, got, 8), FP_E_READ);
    assert_int_equal(rd(fx, UINT64_MAX - 3, got, 8), FP_E_READ);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_same_bytes_one_read_per_block, setup, teardown),
        cmocka_unit_test_setup_teardown(test_new_stop_forgets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ragged_block, setup, teardown),
        cmocka_unit_test_setup_teardown(test_large_range_direct, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unmapped, setup, teardown),
    };
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
