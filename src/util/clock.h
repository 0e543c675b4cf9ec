// SPDX-License-Identifier: MIT
/*
 * clock — monotonic time in microseconds, the one time base for deadlines,
 * durations and metrics inside sandboxd.
 */
#ifndef SANDBOXD_UTIL_CLOCK_H
#define SANDBOXD_UTIL_CLOCK_H

#include <stdint.h>

int64_t clock_mono_us(void);
/* Wall clock, microseconds since the epoch (for timestamps shown to users). */
int64_t clock_real_us(void);

#endif
