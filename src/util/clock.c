// SPDX-License-Identifier: MIT
/*
 * clock — see clock.h.
 */
#include "util/clock.h"

#include <stdio.h>
#include <time.h>

int64_t clock_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t clock_real_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void clock_iso_ms(int64_t ms, char out[static CLOCK_ISO_SIZE])
{
    time_t sec = (time_t)(ms / 1000);
    struct tm tm;
    if (ms < 0 || !gmtime_r(&sec, &tm)) { /* not from a clock */
        snprintf(out, CLOCK_ISO_SIZE, "1970-01-01T00:00:00.000Z");
        return;
    }
    size_t n = strftime(out, CLOCK_ISO_SIZE, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, CLOCK_ISO_SIZE - n, ".%03dZ", (int)(ms % 1000));
}

void clock_cond_init(pthread_cond_t *cond)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(cond, &ca);
    pthread_condattr_destroy(&ca);
}

struct timespec clock_deadline_ts(int64_t deadline_us)
{
    return (struct timespec){.tv_sec = deadline_us / 1000000,
                             .tv_nsec = (deadline_us % 1000000) * 1000};
}
