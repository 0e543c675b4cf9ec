// SPDX-License-Identifier: MIT
/*
 * fmt — formatted messages in allocated strings (see fmt.h).
 */
#include "util/fmt.h"

#include <stdio.h>

char *fmt_va(const char *fmt, va_list ap)
{
    char *s = NULL;
    return vasprintf(&s, fmt, ap) < 0 ? NULL : s;
}

char *fmt_str(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = fmt_va(fmt, ap);
    va_end(ap);
    return s;
}

int fmt_error(char **ret_error, int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    *ret_error = fmt_va(fmt, ap);
    va_end(ap);
    return -err;
}
