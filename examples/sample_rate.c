/* sample_rate — samples a running CPython process at a fixed rate and counts
 * the samples kept and those refused because the target changed under them
 * (torn): how often a profiler built on libframeproof would get a stack.
 *
 *   cc sample_rate.c $(pkg-config --cflags --libs frameproof) -o sample_rate
 *   ./sample_rate PID RATE_HZ SAMPLES
 *
 * Prints "samples N kept K torn T" and the library's read statistics.
 * Exit status: 0 when every sample was kept or torn, 1 on any other error
 * (the process exited, not Python, ...), 2 on bad usage. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <frameproof/frameproof.h>

#define NS_PER_S 1000000000LL
#define MAX_RATE_HZ 100000L
#define MAX_SAMPLES 100000000L

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* t += ns, in place. */
static void advance(struct timespec *t, long long ns)
{
    long long total = t->tv_nsec + ns;
    t->tv_sec += (time_t)(total / NS_PER_S);
    t->tv_nsec = (long)(total % NS_PER_S);
}

int main(int argc, char **argv)
{
    long pid, rate, count;
    if (argc != 4 || parse_long(argv[1], 1, 0x7fffffffL, &pid) || parse_long(argv[2], 1, MAX_RATE_HZ, &rate) ||
        parse_long(argv[3], 1, MAX_SAMPLES, &count)) {
        fprintf(stderr, "usage: sample_rate PID RATE_HZ SAMPLES (rate 1-%ld)\n", MAX_RATE_HZ);
        return 2;
    }

    int status = 1;
    fp_session *s = NULL;
    fp_sample *sm = NULL;
    /* NULL options: the defaults. */
    int rc = fp_session_new(NULL, &s);
    if (rc == FP_OK)
        rc = fp_session_attach_pid(s, (int)pid);
    if (rc == FP_OK)
        rc = fp_sample_new(&sm);
    if (rc) {
        const char *why = s ? fp_session_get_errmsg(s) : "";
        fprintf(stderr, "sample_rate: %s\n", *why ? why : fp_error_describe(rc));
        goto out;
    }

    long kept = 0, torn = 0;
    struct timespec tick;
    clock_gettime(CLOCK_MONOTONIC, &tick);
    for (long i = 0; i < count; i++) {
        rc = fp_session_sample(s, sm);
        if (fp_sample_is_usable(sm, rc)) {
            kept++;
        } else if (rc == FP_E_INCOMPLETE || rc == FP_E_READ) {
            torn++;
        } else {
            fprintf(stderr, "sample_rate: sample %ld: %s\n", i, fp_session_get_errmsg(s));
            goto out;
        }
        /* Absolute ticks: a late sample does not shift the ones after it. */
        advance(&tick, NS_PER_S / rate);
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &tick, NULL) == EINTR)
            ;
    }
    fp_read_stats st;
    fp_session_get_read_stats(s, &st);
    printf("samples %ld kept %ld torn %ld\n", count, kept, torn);
    printf("reads %llu bytes %llu torn walks %llu\n", (unsigned long long)st.calls, (unsigned long long)st.bytes,
           (unsigned long long)st.torn);
    status = 0;
out:
    fp_sample_free(sm);
    fp_session_free(s);
    return status;
}
