// SPDX-License-Identifier: MIT
/*
 * status — see status.h.
 */
#include "api/status.h"

int api_status_of(enum sbx_errkind kind)
{
    switch (kind) {
    case SBX_ERR_INVALID:
        return 400;
    case SBX_ERR_NOT_FOUND:
        return 404;
    case SBX_ERR_GONE:
        return 410;
    case SBX_ERR_TOO_LARGE:
        return 413;
    case SBX_ERR_LIMIT:
        return 429;
    case SBX_ERR_UNAVAILABLE:
        return 503;
    case SBX_ERR_UPSTREAM:
        return 502;
    case SBX_ERR_NONE:
        return 200;
    case SBX_ERR_INTERNAL:
    case SBX_ERR_KIND_COUNT_:
        break;
    }
    return 500;
}

void api_reply_json(struct http_reply *reply, int status, json_t *body)
{
    if (!body) {
        http_reply_error(reply, 500, "INTERNAL", NULL,
                         "out of memory: the answer could not be built");
        return;
    }
    json_decref(reply->body);
    reply->status = status;
    reply->body = body;
}

void api_reply_sbx_error(struct http_reply *reply, struct sbx_error *e)
{
    http_reply_error(reply, api_status_of(e->kind), e->code ? e->code : "INTERNAL", e->field, "%s",
                     e->message ? e->message : "failed");
    if (e->kind == SBX_ERR_UNAVAILABLE)
        http_reply_header(reply, "Retry-After", "1");
    sbx_error_clear(e);
}
