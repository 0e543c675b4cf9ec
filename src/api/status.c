// SPDX-License-Identifier: MIT
/*
 * status — see status.h.
 */
#include "api/status.h"

#include <stdarg.h>
#include <stdlib.h>

#include "proto/jsonrpc.h"
#include "util/fmt.h"
#include "util/macros.h"

int api_status_of(enum sbx_errkind kind)
{
    static const int status[SBX_ERR_KIND_COUNT_] = {
        [SBX_ERR_NONE] = 200,           [SBX_ERR_INVALID] = 400,    [SBX_ERR_UNAUTHORIZED] = 401,
        [SBX_ERR_FORBIDDEN] = 403,      [SBX_ERR_NOT_FOUND] = 404,  [SBX_ERR_METHOD] = 405,
        [SBX_ERR_NOT_ACCEPTABLE] = 406, [SBX_ERR_CONFLICT] = 409,   [SBX_ERR_GONE] = 410,
        [SBX_ERR_TOO_LARGE] = 413,      [SBX_ERR_MEDIA_TYPE] = 415, [SBX_ERR_LIMIT] = 429,
        [SBX_ERR_INTERNAL] = 500,       [SBX_ERR_UPSTREAM] = 502,   [SBX_ERR_UNAVAILABLE] = 503,
    };
    return (unsigned)kind < ARRAY_SIZE(status) && status[kind] ? status[kind] : 500;
}

int api_status_ok(enum api_ok ok)
{
    static const int status[] = {
        [API_OK] = 200,         [API_CREATED] = 201,      [API_ACCEPTED] = 202,
        [API_NO_CONTENT] = 204, [API_NOT_MODIFIED] = 304,
    };
    return (unsigned)ok < ARRAY_SIZE(status) ? status[ok] : 200;
}

void api_reply_error(struct http_reply *reply, enum sbx_errkind kind, const char *code,
                     const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = fmt_va(fmt, ap);
    va_end(ap);
    http_reply_error(reply, api_status_of(kind), code, field, "%s", msg ? msg : code);
    free(msg);
    if (kind == SBX_ERR_UNAVAILABLE)
        http_reply_header(reply, "Retry-After", "1");
}

void api_reply_sbx_error(struct http_reply *reply, struct sbx_error *e)
{
    api_reply_error(reply, e->kind, e->code ? e->code : "INTERNAL", e->field, "%s",
                    e->message ? e->message : "failed");
    sbx_error_clear(e);
}

void api_reply_jsonrpc(struct http_reply *reply, enum sbx_errkind kind, int code,
                       const char *message, json_t *data)
{
    json_decref(reply->body);
    reply->status = api_status_of(kind);
    reply->body = jsonrpc_error_new(NULL, code, message, data);
}

void api_reply_method(struct http_reply *reply, const char *allow)
{
    api_reply_error(reply, SBX_ERR_METHOD, "METHOD_NOT_ALLOWED", NULL, "use %s", allow);
    http_reply_header(reply, "Allow", allow);
}

void api_reply_json(struct http_reply *reply, enum api_ok ok, json_t *body)
{
    if (!body) {
        api_reply_error(reply, SBX_ERR_INTERNAL, "INTERNAL", NULL,
                        "out of memory: the answer could not be built");
        return;
    }
    json_decref(reply->body);
    reply->status = api_status_ok(ok);
    reply->body = body;
}

void api_reply_ok(struct http_reply *reply, enum api_ok ok)
{
    reply->status = api_status_ok(ok);
}
