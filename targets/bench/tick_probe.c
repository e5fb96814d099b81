/* tick_probe.c — parts of a colocated sampler's tick, alone, for
 * ci/overhead --probe: what waking on a target thread's CPU costs it, with
 * and without the hold and a read, apart from frameproof's own sample.
 *
 * usage: tick_probe PID RATE_HZ wake|hold|read [BYTES]
 *
 * Runs at SCHED_FIFO 1 (as record does), pinned to the CPU thread PID last
 * ran on, and wakes there RATE_HZ times a second until PID is gone:
 *   wake  nothing more (PID is pinned to that CPU for the whole run, so
 *         that every wake-up lands where it runs);
 *   hold  narrows PID's affinity to that CPU and gives it back, as record's
 *         hold does (sched_getaffinity, two sched_setaffinity);
 *   read  hold, and between the two calls two process_vm_readv of BYTES
 *         (default 2800) each from PID's heap.
 * Exit status 0 when PID is gone, 1 with a message on any refusal. */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define NS_PER_S 1000000000L
#define MAX_RATE_HZ 100000L
#define MAX_READ_BYTES 65536L
#define DEFAULT_READ_BYTES 2800L
#define STAT_CPU_FIELD 39 /* "processor" in /proc/PID/stat (proc(5)) */
#define LINE_MAX_BYTES 4096
#define START_WAIT_MS 2000 /* a target just launched: how long its heap may take to appear */

enum probe_mode { MODE_WAKE, MODE_HOLD, MODE_READ };

/* The CPU thread pid last ran on, or -1. */
static int cpu_of(pid_t pid)
{
    char path[64], buf[LINE_MAX_BYTES];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t got = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[got] = 0;
    const char *p = strrchr(buf, ')'); /* comm may hold spaces */
    if (!p)
        return -1;
    for (int field = 2; field < STAT_CPU_FIELD && p; field++)
        p = strchr(p + 1, ' ');
    return p ? atoi(p + 1) : -1;
}

/* The start of pid's heap, or 0. */
static unsigned long heap_of(pid_t pid)
{
    char path[64], line[LINE_MAX_BYTES];
    unsigned long start = 0;
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, "[heap]")) {
            start = strtoul(line, NULL, 16);
            break;
        }
    fclose(f);
    return start;
}

/* A failed system call: what, and errno's message. */
static int fail(const char *what)
{
    fprintf(stderr, "tick_probe: %s: %s\n", what, strerror(errno));
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: tick_probe PID RATE_HZ wake|hold|read [BYTES]\n");
        return 2;
    }
    const pid_t pid = (pid_t)atoi(argv[1]);
    const long rate = atol(argv[2]);
    const enum probe_mode mode = !strcmp(argv[3], "wake") ? MODE_WAKE : !strcmp(argv[3], "hold") ? MODE_HOLD
                                 : !strcmp(argv[3], "read") ? MODE_READ : (enum probe_mode)-1;
    const long bytes = argc == 5 ? atol(argv[4]) : DEFAULT_READ_BYTES;
    if (pid < 1 || rate < 1 || rate > MAX_RATE_HZ || (int)mode < 0 || bytes < 1 || bytes > MAX_READ_BYTES) {
        fprintf(stderr, "tick_probe: bad arguments (PID >= 1, 1 <= RATE_HZ <= %ld, 1 <= BYTES <= %ld)\n",
                MAX_RATE_HZ, MAX_READ_BYTES);
        return 2;
    }
    static char buf[MAX_READ_BYTES];
    unsigned long heap = 0;
    for (int waited = 0; mode == MODE_READ && !(heap = heap_of(pid)) && waited < START_WAIT_MS; waited++) {
        const struct timespec ms = {0, NS_PER_S / 1000};
        nanosleep(&ms, NULL); /* launched an instant ago: not yet the interpreter */
    }
    const int cpu = cpu_of(pid);
    if (cpu < 0 || cpu >= CPU_SETSIZE) { /* errno says nothing of a line that did not parse */
        fprintf(stderr, "tick_probe: process %d: no CPU in /proc/%d/stat (gone?)\n", (int)pid, (int)pid);
        return 1;
    }
    if (mode == MODE_READ && !heap) {
        fprintf(stderr, "tick_probe: process %d has no heap after %d ms\n", (int)pid, START_WAIT_MS);
        return 1;
    }
    cpu_set_t one, old;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_getaffinity(pid, sizeof old, &old) != 0)
        return fail("sched_getaffinity");
    if (sched_setaffinity(0, sizeof one, &one) != 0)
        return fail("pinning the probe");
    const struct sched_param sp = {.sched_priority = 1};
    if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) != 0)
        return fail("SCHED_FIFO");
    if (mode == MODE_WAKE && sched_setaffinity(pid, sizeof one, &one) != 0)
        return fail("pinning the target");
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    const long period = NS_PER_S / rate;
    while (kill(pid, 0) == 0) {
        t.tv_nsec += period;
        if (t.tv_nsec >= NS_PER_S) {
            t.tv_nsec -= NS_PER_S;
            t.tv_sec++;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
        if (mode == MODE_WAKE)
            continue;
        cpu_set_t mask;
        if (sched_getaffinity(pid, sizeof mask, &mask) != 0 || sched_setaffinity(pid, sizeof one, &one) != 0)
            continue; /* gone */
        if (mode == MODE_READ) {
            for (int k = 0; k < 2; k++) {
                struct iovec local = {buf, (size_t)bytes};
                struct iovec remote = {(void *)(heap + (unsigned long)k * (unsigned long)bytes), (size_t)bytes};
                (void)process_vm_readv(pid, &local, 1, &remote, 1, 0);
            }
        }
        (void)sched_setaffinity(pid, sizeof mask, &mask);
    }
    return 0;
}
