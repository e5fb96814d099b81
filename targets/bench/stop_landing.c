/* stop_landing.c — where a ptrace stop asked from another CPU lands: the
 * measurement behind record --blocking's hold (docs/profiling.md).
 *
 * usage: stop_landing [SYSCALL_EVERY_US [STOPS]]
 *
 * A child on CPU 1 writes its clock to shared memory in a loop and, when
 * SYSCALL_EVERY_US > 0 (default 0: never), makes a getppid() system call
 * that often, counting them.  The parent, on CPU 0, STOPS times (default
 * 500, 1 ms apart): seizes the child, asks for its stop (PTRACE_INTERRUPT),
 * waits for it and detaches.  It prints the percentiles of how long after
 * the request the child's last clock write came (where the stop landed),
 * of the request-to-waitpid time, and in how many stops a system call came
 * between the request and the stop.  Needs two CPUs and ptrace rights.
 * Exit status 0, 1 on a refusal, 2 on a usage error. */
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_STOPS 100000
#define SETTLE_US 100000 /* the child's loop running before the first stop */
#define GAP_US 1000      /* between stops */

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b)
{
    const double d = *(const double *)a - *(const double *)b;
    return d < 0 ? -1 : d > 0;
}

static int pin(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    return sched_setaffinity(0, sizeof s, &s);
}

/* Shared with the child: its last clock reading and its system calls. */
typedef struct {
    volatile double clock_us;
    volatile long syscalls;
} shared;

static _Noreturn void child_loop(shared *sh, long every_us)
{
    double last = now_us();
    for (;;) {
        const double t = now_us();
        sh->clock_us = t;
        if (every_us > 0 && t - last > (double)every_us) {
            sh->syscalls++;
            (void)getppid();
            last = t;
        }
    }
}

int main(int argc, char **argv)
{
    const long every_us = argc > 1 ? atol(argv[1]) : 0;
    const long stops = argc > 2 ? atol(argv[2]) : 500;
    if (argc > 3 || every_us < 0 || stops < 1 || stops > MAX_STOPS) {
        fprintf(stderr, "usage: stop_landing [SYSCALL_EVERY_US [STOPS (1..%d)]]\n", MAX_STOPS);
        return 2;
    }
    shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    double *landed = malloc((size_t)stops * sizeof *landed), *waited = malloc((size_t)stops * sizeof *waited);
    if (sh == MAP_FAILED || !landed || !waited) {
        perror("stop_landing: memory");
        return 1;
    }
    const pid_t child = fork();
    if (child < 0) {
        perror("stop_landing: fork");
        return 1;
    }
    if (child == 0) {
        if (pin(1) != 0)
            _exit(1);
        child_loop(sh, every_us);
    }
    int rc = 0;
    long with_syscall = 0;
    if (pin(0) != 0) {
        perror("stop_landing: pinning to CPU 0");
        rc = 1;
        goto out;
    }
    usleep(SETTLE_US);
    for (long k = 0; k < stops; k++) {
        if (ptrace(PTRACE_SEIZE, child, NULL, NULL) != 0) {
            perror("stop_landing: PTRACE_SEIZE");
            rc = 1;
            goto out;
        }
        const long calls = sh->syscalls;
        const double t0 = now_us();
        int status;
        if (ptrace(PTRACE_INTERRUPT, child, NULL, NULL) != 0 || waitpid(child, &status, __WALL) != child) {
            perror("stop_landing: the stop");
            rc = 1;
            goto out;
        }
        waited[k] = now_us() - t0;
        landed[k] = sh->clock_us - t0;
        with_syscall += sh->syscalls != calls;
        ptrace(PTRACE_DETACH, child, NULL, NULL);
        usleep(GAP_US);
    }
    qsort(landed, (size_t)stops, sizeof *landed, by_value);
    qsort(waited, (size_t)stops, sizeof *waited, by_value);
    printf("system call every %ld us (0: none), %ld stops\n", every_us, stops);
    printf("stop landed after the request, us: p10 %.1f  p50 %.1f  p90 %.1f  max %.1f\n", landed[stops / 10],
           landed[stops / 2], landed[stops * 9 / 10], landed[stops - 1]);
    printf("request to waitpid, us: p50 %.1f  p90 %.1f\n", waited[stops / 2], waited[stops * 9 / 10]);
    printf("a system call between request and stop: %ld of %ld\n", with_syscall, stops);
out:
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    free(landed);
    free(waited);
    return rc;
}
