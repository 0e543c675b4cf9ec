// SPDX-License-Identifier: MIT
/*
 * error — see error.h.
 */
#include "e2b/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2b/connect.h"
#include "util/fmt.h"
#include "util/macros.h"
#include "util/utf8.h"

/* The status of each kind on E2B's surfaces. Not api/status.c's: E2B has no 410, a sandbox
 * that ended is simply not found (the SDKs raise NotFoundError for 404 only). */
static const int e2b_kind_status[SBX_ERR_KIND_COUNT_] = {
    [SBX_ERR_NONE] = 200,        [SBX_ERR_INVALID] = 400,    [SBX_ERR_NOT_FOUND] = 404,
    [SBX_ERR_GONE] = 404,        [SBX_ERR_TOO_LARGE] = 413,  [SBX_ERR_LIMIT] = 429,
    [SBX_ERR_UNAVAILABLE] = 503, [SBX_ERR_UPSTREAM] = 502,   [SBX_ERR_INTERNAL] = 500,
    [SBX_ERR_FORBIDDEN] = 403,   [SBX_ERR_CONFLICT] = 409,   [SBX_ERR_UNAUTHORIZED] = 401,
    [SBX_ERR_METHOD] = 405,      [SBX_ERR_MEDIA_TYPE] = 415, [SBX_ERR_NOT_ACCEPTABLE] = 406,
};

int e2b_status_of(const struct sbx_error *e)
{
    int status;
    if (connect_code_lookup(e->code, NULL, &status))
        return status;
    return e->kind < SBX_ERR_KIND_COUNT_ ? e2b_kind_status[e->kind] : 500;
}

static void e2b_reply_body(struct http_reply *reply, enum e2b_surface surface, int status,
                           const struct sbx_error *e)
{
    const char *message = e->message ? e->message : "failed";
    json_decref(reply->body);
    reply->body = NULL;
    free(reply->text);
    reply->text = NULL;
    reply->status = status;
    switch (surface) {
    case E2B_SURFACE_API:
    case E2B_SURFACE_ENVD:
        reply->body = json_pack("{s:i, s:o}", "code", status, "message", connect_text(message));
        break;
    case E2B_SURFACE_CONNECT:
        reply->body = connect_error_json(e);
        break;
    case E2B_SURFACE_INTERP:
        reply->text = utf8_sanitize(message, strlen(message), NULL);
        reply->content_type = "text/plain; charset=utf-8";
        break;
    }
    if (!reply->body && !reply->text) {
        reply->status = 500;
        reply->text = NULL; /* an empty body: out of memory */
    }
    if (status == 429 || status == 503)
        http_reply_header(reply, "Retry-After", "1");
}

void e2b_reply_error(struct http_reply *reply, enum e2b_surface surface, struct sbx_error *e)
{
    int status = surface == E2B_SURFACE_CONNECT ? connect_status_of(e) : e2b_status_of(e);
    e2b_reply_body(reply, surface, status, e);
    sbx_error_clear(e);
}

void e2b_reply_fail(struct http_reply *reply, enum e2b_surface surface, enum sbx_errkind kind,
                    const char *code, const char *fmt, ...)
{
    struct sbx_error e = {.kind = kind, .code = code};
    va_list ap;
    va_start(ap, fmt);
    e.message = fmt_va(fmt, ap);
    va_end(ap);
    e2b_reply_error(reply, surface, &e);
}

/* The Connect code a plain HTTP status stands for (the inverse of connect.c's table where it is
 * one-to-one; what the SDKs read back). */
static const char *e2b_code_of_status(int status)
{
    static const struct {
        int status;
        const char *code;
    } map[] = {{400, "invalid_argument"},   {401, "unauthenticated"},  {403, "permission_denied"},
               {404, "not_found"},          {405, "unimplemented"},    {409, "already_exists"},
               {413, "resource_exhausted"}, {415, "invalid_argument"}, {429, "resource_exhausted"},
               {501, "unimplemented"},      {502, "unavailable"},      {503, "unavailable"},
               {504, "deadline_exceeded"}};
    for (size_t i = 0; i < ARRAY_SIZE(map); i++)
        if (map[i].status == status)
            return map[i].code;
    return "internal";
}

void e2b_reply_status(struct http_reply *reply, enum e2b_surface surface, int status,
                      const char *message)
{
    struct sbx_error e = {
        .kind = SBX_ERR_INVALID, .code = e2b_code_of_status(status), .message = (char *)message};
    /* CONNECT: the status of the code, which for these statuses is the status itself. */
    e2b_reply_body(reply, surface, surface == E2B_SURFACE_CONNECT ? connect_status_of(&e) : status,
                   &e);
}
