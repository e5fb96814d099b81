/* bench_floor.h — `frameproof bench --floor`: the cost of one bare
 * process_vm_readv of a given size from the target, the floor under any
 * sample that reads that many bytes. */
#ifndef CLI_BENCH_FLOOR_H
#define CLI_BENCH_FLOOR_H

#include <stddef.h>

/* What cli_bench_floor found. */
enum cli_floor_result {
    CLI_FLOOR_OK = 0,        /* *p50_us holds the median of the timed reads */
    CLI_FLOOR_NO_MAPPING,    /* no readable mapping of at least `bytes` bytes (why says so) */
    CLI_FLOOR_ERROR,         /* /proc/PID/maps unreadable, a read failed, out of memory (why says so) */
};

/* Times CLI_FLOOR_READS single process_vm_readv calls of `bytes` bytes from
 * the start of the first readable mapping of process pid that is at least
 * that large and answers a first read, and stores the median in *p50_us. */
enum cli_floor_result cli_bench_floor(int pid, size_t bytes, double *p50_us, char *why, size_t whylen);

#endif
