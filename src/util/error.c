// SPDX-License-Identifier: MIT
/*
 * error — see error.h.
 */
#include "util/error.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "util/fmt.h"

static void sbx_error_vset(struct sbx_error *e, enum sbx_errkind kind, const char *code,
                           const char *field, const char *fmt, va_list ap) _printf_(5, 0);
static void sbx_error_vset(struct sbx_error *e, enum sbx_errkind kind, const char *code,
                           const char *field, const char *fmt, va_list ap)
{
    char *message = fmt_va(fmt, ap); /* before the clear: an argument may be e's own message */
    sbx_error_clear(e);
    e->kind = kind;
    e->code = code;
    e->field = field;
    e->message = message;
}

void sbx_error_set(struct sbx_error *e, enum sbx_errkind kind, const char *code, const char *field,
                   const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sbx_error_vset(e, kind, code, field, fmt, ap);
    va_end(ap);
}

int sbx_error_errno(struct sbx_error *e, int err, enum sbx_errkind kind, const char *code,
                    const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sbx_error_vset(e, kind, code, field, fmt, ap);
    va_end(ap);
    return -err;
}

void sbx_error_upstream(struct sbx_error *e, enum sbx_upstream how, const char *code,
                        const char *fmt, ...)
{
    char *copy = code ? strdup(code) : NULL;
    va_list ap;
    va_start(ap, fmt);
    sbx_error_vset(e, SBX_ERR_UPSTREAM, "MCP_ERROR", NULL, fmt, ap);
    va_end(ap);
    e->upstream = how;
    e->upstream_code = copy;
}

void sbx_error_clear(struct sbx_error *e)
{
    free(e->message);
    free(e->upstream_code);
    *e = (struct sbx_error){0};
}

const char *sbx_errkind_name(enum sbx_errkind kind)
{
    static const char *const names[SBX_ERR_KIND_COUNT_] = {
#define SBX_ERRKIND_NAME_(name, text, why) [SBX_ERR_##name] = text,
        SBX_ERRKINDS(SBX_ERRKIND_NAME_)
#undef SBX_ERRKIND_NAME_
    };
    return (unsigned)kind < SBX_ERR_KIND_COUNT_ ? names[kind] : "internal";
}

const char *sbx_upstream_name(enum sbx_upstream how)
{
    static const char *const names[SBX_UP_COUNT_] = {
        [SBX_UP_NONE] = "none", [SBX_UP_TRANSPORT] = "transport", [SBX_UP_TIMEOUT] = "timeout",
        [SBX_UP_HTTP] = "http", [SBX_UP_PROTOCOL] = "protocol",   [SBX_UP_TOOL] = "tool",
    };
    return (unsigned)how < SBX_UP_COUNT_ ? names[how] : "unknown";
}

json_t *sbx_error_details(const struct sbx_error *e, const char *tool)
{
    json_t *d = json_pack("{s:s, s:s}", "kind", sbx_upstream_name(e->upstream), "message",
                          e->message ? e->message : "");
    if (!d)
        return NULL;
    if (tool)
        json_object_set_new(d, "tool", json_string(tool));
    if (e->upstream_status)
        json_object_set_new(d, "httpStatus", json_integer(e->upstream_status));
    if (e->upstream_code)
        json_object_set_new(d, "code", json_string(e->upstream_code));
    return d;
}
