// SPDX-License-Identifier: MIT
/*
 * clock — monotonic time in microseconds, the one time base for deadlines,
 * durations and metrics inside sandboxd; and the wall clock, only to tell a
 * person when something happened.
 */
#ifndef SANDBOXD_UTIL_CLOCK_H
#define SANDBOXD_UTIL_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

int64_t clock_mono_us(void);
/* Wall-clock time in milliseconds since the epoch: only to say when something happened (it
 * may jump; deadlines and durations use clock_mono_us). */
int64_t clock_real_ms(void);
/* ms (clock_real_ms) as ISO 8601 UTC with milliseconds: "2026-11-23T19:53:12.123Z". */
#define CLOCK_ISO_SIZE 32
void clock_iso_ms(int64_t ms, char out[static CLOCK_ISO_SIZE]);
/* A condition variable whose timed waits count in monotonic time, like every deadline here. */
void clock_cond_init(pthread_cond_t *cond);
/* A monotonic deadline (us) as the absolute time pthread_cond_timedwait() wants for such a
 * condition variable. */
struct timespec clock_deadline_ts(int64_t deadline_us);

#endif
