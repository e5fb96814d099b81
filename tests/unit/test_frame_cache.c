/* test_frame_cache.c — the frame cache's tables keep keys that hash alike.
 *
 * A sample of 16 threads noted 31 frames outside the data stack, two of
 * which shared a slot of the then direct-mapped table: each evicted the
 * other, and one of them was read again on every sample (4 reads per
 * sample instead of 3 on a parked 16-thread target).  Whatever two keys
 * are stored one after the other, both must be found; a direct-mapped
 * table fails this for the keys that share its slot. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "frame_cache.h"
#include "frameproof/frameproof.h"

#define PAIRS 20000u          /* second keys tried against one first key (a 1024-slot table has ~20 collisions) */
#define FRAME_STRIDE 0x40u    /* spacing of the frame addresses tried */
#define FRAME_BASE 0x7f3bb4c5fc40ull
#define KEPT_BYTES 88u        /* a 3.15 frame */
#define TABLE_ONLY FPI_FRAME_CACHE_RECENT /* a position not kept by position: the table alone */
#define POSITION 7u           /* a position kept by position */

static int store(fpi_frame_cache *fc, size_t at, const fpi_frame_key *k, int32_t unit, const fpi_position *pos)
{
    fpi_resolved_frame r = {.key = *k, .visible = true, .unit = unit, .pos = *pos};
    return fpi_frame_cache_store(fc, at, &r);
}

static void frame_bytes(uint64_t addr, uint8_t *out)
{
    for (size_t i = 0; i < KEPT_BYTES; i++)
        out[i] = (uint8_t)(addr >> (8u * (i % 8u))) ^ (uint8_t)i;
}

static void test_spec_frames_hashing_alike(void **state)
{
    (void)state;
    fpi_frame_cache fc;
    fpi_frame_cache_init(&fc);
    uint8_t a[KEPT_BYTES], b[KEPT_BYTES];
    frame_bytes(FRAME_BASE, a);
    for (uint64_t i = 1; i <= PAIRS; i++) {
        uint64_t other = FRAME_BASE + i * FRAME_STRIDE;
        frame_bytes(other, b);
        fpi_frame_cache_note(&fc, FRAME_BASE, a, sizeof a);
        fpi_frame_cache_note(&fc, other, b, sizeof b);
        const uint8_t *ga = fpi_frame_cache_spec(&fc, FRAME_BASE, sizeof a);
        const uint8_t *gb = fpi_frame_cache_spec(&fc, other, sizeof b);
        if (!ga || !gb || memcmp(ga, a, sizeof a) != 0 || memcmp(gb, b, sizeof b) != 0)
            fail_msg("frames 0x%llx and 0x%llx, noted one after the other: %s lost", (unsigned long long)FRAME_BASE,
                     (unsigned long long)other, !ga ? "the first" : !gb ? "the second" : "bytes");
    }
    /* Noted again with other bytes, a frame gives the new ones. */
    b[0] ^= 0xffu;
    fpi_frame_cache_note(&fc, FRAME_BASE + FRAME_STRIDE, b, sizeof b);
    const uint8_t *g = fpi_frame_cache_spec(&fc, FRAME_BASE + FRAME_STRIDE, sizeof b);
    assert_non_null(g);
    assert_memory_equal(g, b, sizeof b);
    fpi_frame_cache_free(&fc);
}

static void test_resolved_frames_hashing_alike(void **state)
{
    (void)state;
    fpi_frame_cache fc;
    fpi_frame_cache_init(&fc);
    fpi_position pa = {10, 10, 4, 9}, pb = {20, 21, 0, 2};
    fpi_frame_key ka = {FRAME_BASE, 0x7f0000100000ull, 0x7f0000100040ull, 1, false, true};
    for (uint64_t i = 1; i <= PAIRS; i++) {
        fpi_frame_key kb = {FRAME_BASE + i * FRAME_STRIDE, 0x7f0000200000ull, 0x7f0000200020ull, 2, false, true};
        assert_int_equal(store(&fc, TABLE_ONLY, &ka, 32, &pa), FP_OK);
        assert_int_equal(store(&fc, TABLE_ONLY, &kb, 16, &pb), FP_OK);
        const fpi_resolved_frame *ra = fpi_frame_cache_find(&fc, TABLE_ONLY, &ka),
                                 *rb = fpi_frame_cache_find(&fc, TABLE_ONLY, &kb);
        if (!ra || !rb || ra->unit != 32 || rb->unit != 16 || ra->pos.line != 10 || rb->pos.line != 20)
            fail_msg("resolved frames at 0x%llx and 0x%llx, stored one after the other: %s lost",
                     (unsigned long long)ka.addr, (unsigned long long)kb.addr, !ra ? "the first" : "the second");
        /* A key differing in any one field is another frame. */
        fpi_frame_key kc = kb;
        kc.code_serial++;
        assert_null(fpi_frame_cache_find(&fc, TABLE_ONLY, &kc));
    }
    fpi_frame_cache_free(&fc);
}

/* The entry kept by position is handed out only for the same whole key:
 * another frame met at that position (another address, code object,
 * instruction, code cache entry or caller flag: another call chain in the
 * same slots) is looked up in the table, and what it finds there becomes
 * the position's entry. */
static void test_resolved_by_position_whole_key(void **state)
{
    (void)state;
    fpi_frame_cache fc;
    fpi_frame_cache_init(&fc);
    fpi_position pa = {10, 10, 4, 9}, pb = {20, 21, 0, 2};
    fpi_frame_key ka = {FRAME_BASE, 0x7f0000100000ull, 0x7f0000100040ull, 1, false, true};
    fpi_frame_key kb = {FRAME_BASE + FRAME_STRIDE, 0x7f0000200000ull, 0x7f0000200020ull, 2, false, true};
    assert_int_equal(store(&fc, POSITION, &ka, 32, &pa), FP_OK);
    assert_int_equal(store(&fc, POSITION + 1, &kb, 16, &pb), FP_OK);
    const fpi_resolved_frame *r = fpi_frame_cache_find(&fc, POSITION, &ka);
    assert_non_null(r);
    assert_int_equal(r->unit, 32);
    for (int field = 0; field < 6; field++) {
        fpi_frame_key k = ka;
        switch (field) {
        case 0: k.addr += FRAME_STRIDE; break;
        case 1: k.code += 0x100; break;
        case 2: k.instr += 2; break;
        case 3: k.code_serial++; break;
        case 4: k.generator = !k.generator; break;
        default: k.called_directly = !k.called_directly; break;
        }
        if (fpi_frame_cache_find(&fc, POSITION, &k))
            fail_msg("a key differing from the position's entry in field %d was found", field);
    }
    /* kb, met at ka's position: from the table, and kept there since. */
    r = fpi_frame_cache_find(&fc, POSITION, &kb);
    assert_non_null(r);
    assert_int_equal(r->unit, 16);
    assert_int_equal(r->pos.line, 20);
    assert_int_equal(fc.recent[POSITION].key.addr, kb.addr);
    r = fpi_frame_cache_find(&fc, POSITION, &ka);
    assert_non_null(r);
    assert_int_equal(r->unit, 32);
    fpi_frame_cache_free(&fc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_frames_hashing_alike),
        cmocka_unit_test(test_resolved_frames_hashing_alike),
        cmocka_unit_test(test_resolved_by_position_whole_key),
    };
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
