/* test_reader_vm.c — the process_vm_readv backend reads close ranges as one
 * remote range and still fills every buffer exactly.
 *
 * Each remote range costs the kernel a mapping lookup and its own page
 * pinning (about 0.14 us on the project's machines), so a sample's words of
 * one structure are read as one range with the bytes between them thrown
 * away.  The plan is checked range by range; the reads against this
 * process's own memory, byte for byte, with the bytes around every buffer
 * untouched; and a range next to an unreadable page still fails alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "frameproof/frameproof.h"
#include "frameproof/reader.h"
#include "reader_vm.h"

#define SOURCE_BYTES 65536u
#define RANDOM_RANGES 3000u   /* more than one call's vectors */
#define MAX_RANGE 96u
#define GUARD 16u             /* bytes around each buffer that must stay as they were */
#define GUARD_BYTE 0xA5u
#define FAR_GAP (FPI_VM_MERGE_GAP + 1u)

static void test_plan_groups(void **state)
{
    (void)state;
    uint8_t b[8][8], scratch[FPI_VM_MERGE_GAP];
    const uint64_t base = 0x7f0000001000ull;
    fp_iov iov[] = {
        {base, b[0], 8},                               /* 0: starts group 0 */
        {base + 8, b[1], 8},                           /* 1: adjacent: group 0 */
        {base + 16 + FPI_VM_MERGE_GAP, b[2], 8},       /* 2: the largest gap: group 0 */
        {base + 24 + 2 * FPI_VM_MERGE_GAP + 1, b[3], 8}, /* 3: one byte further: group 1 */
        {base + 24 + 2 * FPI_VM_MERGE_GAP - 7, b[4], 8}, /* 4: overlaps 3: group 2 */
        {base, b[5], 8},                               /* 5: before it: group 3 */
    };
    fpi_vm_plan *p = malloc(sizeof *p);
    assert_non_null(p);
    fpi_vm_plan_batch(iov, 6, 0, scratch, p);
    assert_int_equal(p->end, 6);
    assert_int_equal(p->nremote, 4);
    assert_int_equal(p->nlocal, 7); /* six buffers and one gap */
    assert_int_equal((uintptr_t)p->remote[0].iov_base, base);
    assert_int_equal(p->remote[0].iov_len, 24 + FPI_VM_MERGE_GAP);
    assert_int_equal(p->remote[1].iov_len, 8);
    assert_int_equal(p->remote[2].iov_len, 8);
    assert_int_equal(p->remote[3].iov_len, 8);
    assert_int_equal(p->group_first[0], 0);
    assert_int_equal(p->group_first[1], 3);
    assert_int_equal(p->group_first[2], 4);
    assert_int_equal(p->group_first[3], 5);
    assert_ptr_equal(p->local[2].iov_base, scratch);
    assert_int_equal(p->local[2].iov_len, FPI_VM_MERGE_GAP);
    assert_ptr_equal(p->local[3].iov_base, b[2]);
    assert_int_equal(p->bytes, 48 + FPI_VM_MERGE_GAP);
    size_t local_sum = 0, remote_sum = 0;
    for (size_t i = 0; i < p->nlocal; i++)
        local_sum += p->local[i].iov_len;
    for (size_t i = 0; i < p->nremote; i++)
        remote_sum += p->remote[i].iov_len;
    assert_int_equal(local_sum, remote_sum);
    free(p);
}

/* A call holds at most FPI_VM_IOV_MAX vectors on either side: ranges with
 * gaps need two local vectors each, far ones a remote vector each. */
static void test_plan_limits(void **state)
{
    (void)state;
    static fp_iov iov[RANDOM_RANGES];
    static uint8_t b[8], scratch[FPI_VM_MERGE_GAP];
    fpi_vm_plan *p = malloc(sizeof *p);
    assert_non_null(p);
    for (size_t i = 0; i < RANDOM_RANGES; i++)
        iov[i] = (fp_iov){0x10000 + i * 24, b, 8}; /* gaps of 16 */
    fpi_vm_plan_batch(iov, RANDOM_RANGES, 0, scratch, p);
    assert_int_equal(p->nremote, 1);
    assert_int_equal(p->end, (FPI_VM_IOV_MAX + 1) / 2);
    assert_true(p->nlocal <= FPI_VM_IOV_MAX);
    for (size_t i = 0; i < RANDOM_RANGES; i++)
        iov[i] = (fp_iov){0x10000 + i * (8 + FAR_GAP), b, 8};
    fpi_vm_plan_batch(iov, RANDOM_RANGES, 100, scratch, p);
    assert_int_equal(p->nremote, FPI_VM_IOV_MAX);
    assert_int_equal(p->nlocal, FPI_VM_IOV_MAX);
    assert_int_equal(p->end, 100 + FPI_VM_IOV_MAX);
    assert_int_equal(p->group_first[0], 100);
    free(p);
}

static uint64_t next_random(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* Ranges of this process's memory in every relation to each other (adjacent,
 * a small or a large gap, overlapping, going back), read in one readv. */
static void test_reads_exactly(void **state)
{
    (void)state;
    uint8_t *src = malloc(SOURCE_BYTES);
    uint8_t *dst = malloc(RANDOM_RANGES * (MAX_RANGE + 2 * GUARD));
    fp_iov *iov = malloc(RANDOM_RANGES * sizeof *iov);
    assert_true(src && dst && iov);
    for (size_t i = 0; i < SOURCE_BYTES; i++)
        src[i] = (uint8_t)(i * 131u + (i >> 8));
    memset(dst, GUARD_BYTE, RANDOM_RANGES * (MAX_RANGE + 2 * GUARD));
    uint64_t x = 0x9E3779B97F4A7C15ull;
    size_t at = 0;
    for (size_t i = 0; i < RANDOM_RANGES; i++) {
        size_t len = 1 + next_random(&x) % MAX_RANGE;
        switch (next_random(&x) % 5) {
        case 0: break;                                                     /* adjacent */
        case 1: at += 1 + next_random(&x) % FPI_VM_MERGE_GAP; break;       /* a gap merged */
        case 2: at += FAR_GAP + next_random(&x) % 4096; break;             /* a gap not */
        case 3: at = at > 40 ? at - 40 : 0; break;                         /* back over the last */
        default: at = next_random(&x) % (SOURCE_BYTES - MAX_RANGE); break; /* anywhere */
        }
        if (at + len > SOURCE_BYTES)
            at = 0;
        iov[i] = (fp_iov){(uint64_t)(uintptr_t)(src + at), dst + i * (MAX_RANGE + 2 * GUARD) + GUARD, len};
        at += len;
    }
    fp_reader r;
    char err[256];
    assert_int_equal(fp_reader_open_vm((int)getpid(), &r, err, sizeof err), FP_OK);
    assert_int_equal(fp_reader_readv(&r, iov, RANDOM_RANGES), FP_OK);
    for (size_t i = 0; i < RANDOM_RANGES; i++) {
        const uint8_t *slot = dst + i * (MAX_RANGE + 2 * GUARD);
        assert_memory_equal(iov[i].buf, (const void *)(uintptr_t)iov[i].addr, iov[i].len);
        for (size_t k = 0; k < GUARD; k++)
            assert_int_equal(slot[k], GUARD_BYTE);
        for (size_t k = GUARD + iov[i].len; k < MAX_RANGE + 2 * GUARD; k++)
            assert_int_equal(slot[k], GUARD_BYTE);
    }
    fp_reader_close(&r);
    free(iov);
    free(dst);
    free(src);
}

/* Three pages, the middle one unreadable: ranges at the edges of the
 * readable ones are read (no gap spans a page), one in the middle page
 * fails the read. */
static void test_unreadable_page(void **state)
{
    (void)state;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uint8_t *m = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(m != MAP_FAILED);
    memset(m, 0x11, page);
    memset(m + 2 * page, 0x22, page);
    assert_int_equal(mprotect(m + page, page, PROT_NONE), 0);
    uint8_t a[8], b[8], c[8];
    fp_iov edges[] = {{(uint64_t)(uintptr_t)(m + page - 8), a, 8}, {(uint64_t)(uintptr_t)(m + 2 * page), b, 8}};
    fp_reader r;
    char err[256];
    assert_int_equal(fp_reader_open_vm((int)getpid(), &r, err, sizeof err), FP_OK);
    assert_int_equal(fp_reader_readv(&r, edges, 2), FP_OK);
    assert_int_equal(a[0], 0x11);
    assert_int_equal(b[7], 0x22);
    fp_iov middle[] = {edges[0], {(uint64_t)(uintptr_t)(m + page + 64), c, 8}, edges[1]};
    assert_int_equal(fp_reader_readv(&r, middle, 3), FP_E_READ);
    fp_reader_close(&r);
    munmap(m, 3 * page);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_groups),
        cmocka_unit_test(test_plan_limits),
        cmocka_unit_test(test_reads_exactly),
        cmocka_unit_test(test_unreadable_page),
    };
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
