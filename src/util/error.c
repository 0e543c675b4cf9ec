// SPDX-License-Identifier: MIT
/*
 * error — see error.h.
 */
#include "util/error.h"

#include <stdarg.h>
#include <stdlib.h>

#include "util/fmt.h"

void sbx_error_set(struct sbx_error *e, enum sbx_errkind kind, const char *code, const char *field,
                   const char *fmt, ...)
{
    e->kind = kind;
    e->code = code;
    e->field = field;
    va_list ap;
    va_start(ap, fmt);
    free(e->message);
    e->message = fmt_va(fmt, ap);
    va_end(ap);
}

void sbx_error_clear(struct sbx_error *e)
{
    free(e->message);
    *e = (struct sbx_error){0};
}

const char *sbx_errkind_name(enum sbx_errkind kind)
{
    static const char *const names[SBX_ERR_KIND_COUNT_] = {
        [SBX_ERR_NONE] = "none",
        [SBX_ERR_INVALID] = "invalid",
        [SBX_ERR_NOT_FOUND] = "not_found",
        [SBX_ERR_GONE] = "gone",
        [SBX_ERR_TOO_LARGE] = "too_large",
        [SBX_ERR_LIMIT] = "limit",
        [SBX_ERR_UNAVAILABLE] = "unavailable",
        [SBX_ERR_UPSTREAM] = "upstream",
        [SBX_ERR_INTERNAL] = "internal",
    };
    return (unsigned)kind < SBX_ERR_KIND_COUNT_ ? names[kind] : "internal";
}
