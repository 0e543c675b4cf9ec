// SPDX-License-Identifier: MIT
/*
 * web (api) — see web.h.
 */
#include "api/web.h"

#include <stdlib.h>
#include <string.h>

#include "api/status.h"
#include "web/web.h"

/* Does an If-None-Match header name etag? (Weak comparison, as RFC 9110 wants for it: a
 * W/ prefix does not matter; "*" names any.) */
static bool api_web_fresh(const char *inm, const char *etag)
{
    if (!inm)
        return false;
    inm += strspn(inm, " \t");
    return strcmp(inm, "*") == 0 || strstr(inm, etag) != NULL;
}

void api_web_route(const struct http_request *req, struct http_reply *reply)
{
    const char *path = strcmp(req->path, "/ui/") == 0 ? "/ui" : req->path;
    const struct web_asset *a = web_asset_find(path);
    if (!a) {
        api_reply_error(reply, SBX_ERR_NOT_FOUND, "NOT_FOUND", NULL, "no file %.200s", req->path);
        return;
    }
    bool fresh = api_web_fresh(http_header(req, "If-None-Match"), a->etag);
    if (!fresh) {
        reply->text = malloc(a->len);
        if (!reply->text) {
            api_reply_error(reply, SBX_ERR_INTERNAL, "INTERNAL", NULL, "out of memory");
            return;
        }
        memcpy(reply->text, a->data, a->len);
        reply->text_len = a->len;
        reply->content_type = a->content_type;
    }
    api_reply_ok(reply, fresh ? API_NOT_MODIFIED : API_OK);
    /* Six headers fit a reply (http_reply.headers): these are the six. */
    http_reply_header(reply, "Content-Security-Policy", API_WEB_CSP);
    http_reply_header(reply, "X-Frame-Options", "DENY");
    http_reply_header(reply, "X-Content-Type-Options", "nosniff");
    http_reply_header(reply, "Referrer-Policy", "no-referrer");
    /* Revalidated on every load (a new binary may serve new files): 304 while they are the
     * same. */
    http_reply_header(reply, "Cache-Control", "no-cache");
    http_reply_header(reply, "ETag", a->etag);
}
