/* bench_floor.c — `frameproof bench --floor`: times repeated single
 * process_vm_readv calls of one size from one readable mapping of the
 * target (found in /proc/PID/maps), the floor under a sample that reads
 * that many bytes. */
#include "bench_floor.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#define CLI_FLOOR_READS 2001          /* timed reads; odd, so the median is one of them */
#define CLI_FLOOR_WARMUP 100          /* untimed reads before them */
#define CLI_FLOOR_MAPS_LINE 4096      /* longest /proc/PID/maps line kept whole */
#define CLI_FLOOR_MAX_BYTES (64u << 20) /* the largest read bench times */
#define CLI_FLOOR_NS_PER_US 1000.0

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* One read of len bytes at addr into buf; 0 when every byte came back. */
static int read_once(int pid, uintptr_t addr, void *buf, size_t len)
{
    struct iovec local = {.iov_base = buf, .iov_len = len};
    struct iovec remote = {.iov_base = (void *)addr, .iov_len = len};
    return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -1;
}

/* The start of the first readable mapping of pid of at least len bytes
 * whose first len bytes one read returns; 0 in *addr when there is none. */
static enum cli_floor_result find_mapping(int pid, size_t len, void *buf, uintptr_t *addr, char *why,
                                         size_t whylen)
{
    char path[64], line[CLI_FLOOR_MAPS_LINE];
    snprintf(path, sizeof path, "/proc/%d/maps", pid);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(why, whylen, "cannot open %s: %s", path, strerror(errno));
        return CLI_FLOOR_ERROR;
    }
    *addr = 0;
    while (!*addr && fgets(line, sizeof line, f)) {
        uintptr_t lo, hi;
        char perms[5];
        if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %4s", &lo, &hi, perms) != 3)
            continue;
        if (perms[0] == 'r' && hi - lo >= len && read_once(pid, lo, buf, len) == 0)
            *addr = lo;
    }
    fclose(f);
    if (!*addr) {
        snprintf(why, whylen, "no readable mapping of at least %zu bytes in process %d", len, pid);
        return CLI_FLOOR_NO_MAPPING;
    }
    return CLI_FLOOR_OK;
}

enum cli_floor_result cli_bench_floor(int pid, size_t bytes, double *p50_us, char *why, size_t whylen)
{
    if (bytes == 0 || bytes > CLI_FLOOR_MAX_BYTES) {
        snprintf(why, whylen, "cannot time a read of %zu bytes (1..%u)", bytes, CLI_FLOOR_MAX_BYTES);
        return CLI_FLOOR_ERROR;
    }
    enum cli_floor_result rc = CLI_FLOOR_ERROR;
    char *buf = malloc(bytes);
    int64_t *ns = malloc(CLI_FLOOR_READS * sizeof *ns);
    if (!buf || !ns) {
        snprintf(why, whylen, "out of memory");
        goto out;
    }
    uintptr_t addr;
    rc = find_mapping(pid, bytes, buf, &addr, why, whylen);
    if (rc != CLI_FLOOR_OK)
        goto out;
    rc = CLI_FLOOR_ERROR;
    for (int i = 0; i < CLI_FLOOR_WARMUP + CLI_FLOOR_READS; i++) {
        int64_t t0 = now_ns();
        if (read_once(pid, addr, buf, bytes)) {
            snprintf(why, whylen, "process_vm_readv of %zu bytes at 0x%" PRIxPTR " failed: %s", bytes, addr,
                     strerror(errno));
            goto out;
        }
        if (i >= CLI_FLOOR_WARMUP)
            ns[i - CLI_FLOOR_WARMUP] = now_ns() - t0;
    }
    qsort(ns, CLI_FLOOR_READS, sizeof *ns, cmp_i64);
    *p50_us = (double)ns[CLI_FLOOR_READS / 2] / CLI_FLOOR_NS_PER_US;
    rc = CLI_FLOOR_OK;
out:
    free(buf);
    free(ns);
    return rc;
}
