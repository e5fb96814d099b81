/* clock.h — the sampler's clock: CLOCK_MONOTONIC in nanoseconds, shared
 * by the sampling loop (sampler.c), colocation's recheck (colocate.c) and
 * the callback thread's timer (offload.c). */
#ifndef FPS_CLOCK_H
#define FPS_CLOCK_H

#include <errno.h>
#include <stdint.h>
#include <time.h>

#define FPS_NS_PER_S 1000000000LL

static inline int64_t fps_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * FPS_NS_PER_S + ts.tv_nsec;
}

/* Sleeps until fps_clock_ns() reaches t_ns (at once when it has); a
 * signal does not end the sleep.  0, or clock_nanosleep's error. */
static inline int fps_sleep_until(int64_t t_ns)
{
    const struct timespec ts = {.tv_sec = (time_t)(t_ns / FPS_NS_PER_S), .tv_nsec = (long)(t_ns % FPS_NS_PER_S)};
    int e;
    while ((e = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL)) == EINTR)
        ;
    return e;
}

#endif
