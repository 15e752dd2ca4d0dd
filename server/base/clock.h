#ifndef GHD_BASE_CLOCK_H
#define GHD_BASE_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* The monotonic clock, in the units its readers want. Durations, deadlines
 * and rates are measured on CLOCK_MONOTONIC, which no clock change moves. */

static inline uint64_t ghd_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline double ghd_clock_ms(void)
{
    return (double)ghd_clock_ns() / 1e6;
}

static inline double ghd_clock_s(void)
{
    return (double)ghd_clock_ns() / 1e9;
}

/* The absolute time ms milliseconds from now on `clock`, as
 * pthread_cond_timedwait wants it (CLOCK_REALTIME unless the condition
 * variable was set to another clock). */
static inline struct timespec ghd_clock_deadline(clockid_t clock, unsigned ms)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

/* Initialises `c` for deadlines on CLOCK_MONOTONIC (ghd_clock_deadline's
 * first argument), so that a timed wait is not cut short or stretched when
 * someone sets the wall clock. */
static inline void ghd_cond_init_monotonic(pthread_cond_t *c)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(c, &attr);
    pthread_condattr_destroy(&attr);
}

#endif
