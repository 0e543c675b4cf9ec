// SPDX-License-Identifier: MIT
/*
 * clock — monotonic time in microseconds, the one time base for deadlines,
 * durations and metrics inside sandboxd.
 */
#ifndef SANDBOXD_UTIL_CLOCK_H
#define SANDBOXD_UTIL_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

int64_t clock_mono_us(void);
/* A condition variable whose timed waits count in monotonic time, like every deadline here. */
void clock_cond_init(pthread_cond_t *cond);
/* A monotonic deadline (us) as the absolute time pthread_cond_timedwait() wants for such a
 * condition variable. */
struct timespec clock_deadline_ts(int64_t deadline_us);

#endif
