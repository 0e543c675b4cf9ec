// SPDX-License-Identifier: MIT
/*
 * fmt — formatted messages in allocated strings: the one place that turns a
 * printf format and its arguments into a string an error or a reply carries.
 * Out of memory gives NULL, which callers treat as "no message".
 */
#ifndef SANDBOXD_UTIL_FMT_H
#define SANDBOXD_UTIL_FMT_H

#include <stdarg.h>

#include "util/macros.h"

/* The formatted string (caller frees), or NULL when out of memory. */
char *fmt_va(const char *fmt, va_list ap) _printf_(1, 0);
char *fmt_str(const char *fmt, ...) _printf_(1, 2);
/* Set *ret_error to the formatted message (caller frees; NULL when out of memory) and return
 * -err: `return fmt_error(ret_error, EINVAL, "...", ...);`. */
int fmt_error(char **ret_error, int err, const char *fmt, ...) _printf_(3, 4);

#endif
