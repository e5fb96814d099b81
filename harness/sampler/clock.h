/* clock.h — the sampler's clock: CLOCK_MONOTONIC in nanoseconds, shared
 * by the sampling loop (sampler.c) and colocation's recheck (colocate.c). */
#ifndef FPS_CLOCK_H
#define FPS_CLOCK_H

#include <stdint.h>
#include <time.h>

#define FPS_NS_PER_S 1000000000LL

static inline int64_t fps_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * FPS_NS_PER_S + ts.tv_nsec;
}

#endif
