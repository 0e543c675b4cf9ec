// SPDX-License-Identifier: MIT
/*
 * e2b — see e2b.h: the module's life, and the front door of /e2b: which surface a request is
 * for, who may touch the sandbox it names, and the body parsers every route shares.
 */
#include "e2b/e2b.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "e2b/connect.h"
#include "e2b/e2b_int.h"
#include "util/clock.h"
#include "util/log.h"

int e2b_new(const struct e2b_options *opt, struct e2b **ret)
{
    struct e2b *e = calloc(1, sizeof(*e));
    if (!e)
        return -ENOMEM;
    e->opt = *opt;
    pthread_mutex_init(&e->lock, NULL);
    clock_cond_init(&e->cond);
    int r = e2b_threads_start(e);
    if (r < 0) {
        e2b_free(e);
        return r;
    }
    *ret = e;
    return 0;
}

bool e2b_is_data_plane(const struct http_request *req)
{
    return http_header(req, "E2b-Sandbox-Id") != NULL;
}

/* The service a data plane request is for: the port it names, else the one its path belongs
 * to (a request made by hand may leave the header out). 0 for a port nothing listens on. */
static int e2b_port_of(const struct http_request *req, const char *path)
{
    const char *port = http_header(req, "E2b-Sandbox-Port");
    if (port)
        return strcmp(port, "49983") == 0   ? E2B_ENVD_PORT
               : strcmp(port, "49999") == 0 ? E2B_INTERP_PORT
                                            : 0;
    return strcmp(path, "/execute") == 0 || strncmp(path, "/contexts", 9) == 0 ? E2B_INTERP_PORT
                                                                               : E2B_ENVD_PORT;
}

static bool e2b_is_connect_path(const char *path)
{
    return strncmp(path, "/process.Process/", 17) == 0 ||
           strncmp(path, "/filesystem.Filesystem/", 23) == 0;
}

/* The Connect methods that stream their answer (an error is then an end-of-stream message). */
static bool e2b_is_stream_path(const char *path)
{
    return strcmp(path, "/process.Process/Start") == 0 ||
           strcmp(path, "/process.Process/Connect") == 0 ||
           strcmp(path, "/filesystem.Filesystem/WatchDir") == 0;
}

static enum e2b_surface e2b_surface_of(int port, const char *path)
{
    if (port == E2B_INTERP_PORT)
        return E2B_SURFACE_INTERP;
    return e2b_is_connect_path(path) ? E2B_SURFACE_CONNECT : E2B_SURFACE_ENVD;
}

/* An error answered as a stream: 200, then only the end-of-stream message (what connect-web
 * reads as the call's error: a non-200 status would lose the code). */
void e2b_stream_error(struct http_reply *reply, struct sbx_error *err)
{
    size_t n = 0;
    reply->text = connect_end_stream(err, &n);
    reply->text_len = n;
    reply->status = reply->text ? 200 : 500;
    reply->content_type = "application/connect+json";
    sbx_error_clear(err);
}

void e2b_refuse(const struct http_request *req, enum sbx_errkind kind, const char *message,
                struct http_reply *reply)
{
    const char *path = req->path + 4; /* after "/e2b" */
    int status = e2b_status_of(&(struct sbx_error){.kind = kind});
    if (!e2b_is_data_plane(req)) {
        e2b_reply_status(reply, E2B_SURFACE_API, status, message);
        return;
    }
    e2b_reply_status(reply, e2b_surface_of(e2b_port_of(req, path), path), status, message);
}

/* The request proves access to sb: its token, or (keyed) its owner's key. */
static bool e2b_authorized(const struct e2b_sandbox *sb, const struct http_request *req,
                           const struct tenant *tenant, bool keyed)
{
    if (keyed)
        return !tenant || sb->tenant == tenant;
    return e2b_token_ok(sb, http_header(req, "X-Access-Token")) ||
           e2b_token_ok(sb, http_header(req, "E2B-Traffic-Access-Token"));
}

/* The reply's bytes count against the caller's share of the reply budget (http/budget.h): the
 * tenant of its key, or the owner of the sandbox whose token it showed. While unread replies
 * fill that share, the work is refused before it is done, in the shape of the surface. */
static bool e2b_admit(const struct http_request *req, struct http_reply *reply,
                      const struct tenant *owner, enum e2b_surface surface, bool stream)
{
    if (http_reply_admit(req, reply, owner))
        return true;
    http_reply_done(reply); /* sandboxd's REPLY_BUDGET refusal, which E2B's SDKs would not read */
    reply->owner = owner;
    struct sbx_error err = {0};
    sbx_error_set(&err, SBX_ERR_UNAVAILABLE, "unavailable", NULL,
                  "sandboxd holds as many bytes of replies as it may for clients that have not "
                  "read theirs (REPLY_BUDGET); nothing was done; retry later");
    if (stream)
        e2b_stream_error(reply, &err);
    else
        e2b_reply_error(reply, surface, &err);
    return false;
}

void e2b_route(struct e2b *e, const struct http_request *req, const char *path,
               struct tenant *tenant, bool keyed, struct http_reply *reply)
{
    if (!e2b_is_data_plane(req)) {
        if (e2b_admit(req, reply, tenant, E2B_SURFACE_API, false))
            e2b_control_route(e, req, path, tenant, reply);
        return;
    }
    const char *id = http_header(req, "E2b-Sandbox-Id");
    int port = e2b_port_of(req, path);
    enum e2b_surface surface = e2b_surface_of(port, path);
    bool health = strcmp(path, "/health") == 0;
    struct e2b_sandbox *sb = e2b_sandbox_get(e, id, false, NULL);
    if (sb && !e2b_authorized(sb, req, tenant, keyed)) {
        /* Someone else's, or a forged token: it does not exist for this caller. */
        e2b_sandbox_put(sb);
        sb = NULL;
    }
    if (!sb || port == 0) {
        struct sbx_error err = {0};
        if (!sb)
            e2b_not_found(e, id, &err);
        else
            sbx_error_set(&err, SBX_ERR_UPSTREAM, NULL, NULL,
                          "sandbox %s has no service on port %.16s (49983: envd, 49999: the "
                          "code interpreter)",
                          id, http_header(req, "E2b-Sandbox-Port"));
        if (health || port == 0) {
            /* E2B's proxy answers 502 for a sandbox that is not running: isRunning() is false. */
            err.kind = SBX_ERR_UPSTREAM;
            err.code = NULL;
            e2b_reply_error(reply, surface == E2B_SURFACE_CONNECT ? E2B_SURFACE_ENVD : surface,
                            &err);
        } else if (surface == E2B_SURFACE_CONNECT && e2b_is_stream_path(path)) {
            e2b_stream_error(reply, &err);
        } else {
            e2b_reply_error(reply, surface, &err);
        }
        e2b_sandbox_put(sb);
        return;
    }
    bool stream = surface == E2B_SURFACE_CONNECT && e2b_is_stream_path(path);
    if (e2b_admit(req, reply, keyed ? tenant : sb->tenant, surface, stream)) {
        if (port == E2B_INTERP_PORT)
            e2b_interp_route(sb, req, path, reply);
        else if (e2b_is_connect_path(path))
            e2b_process_route(sb, req, path, reply);
        else
            e2b_envd_route(sb, req, path, reply);
    }
    e2b_sandbox_put(sb);
}

/* ---- bodies -------------------------------------------------------------------------------- */

void e2b_reply_json(struct http_reply *reply, enum e2b_surface surface, int status, json_t *body)
{
    if (!body) {
        e2b_reply_fail(reply, surface, SBX_ERR_INTERNAL, NULL, "out of memory");
        return;
    }
    json_decref(reply->body);
    reply->status = status;
    reply->body = body;
}

json_t *e2b_json_body(const struct http_request *req, enum e2b_surface surface,
                      struct http_reply *reply)
{
    json_t *body;
    if (req->body_len == 0) {
        body = json_object();
    } else {
        json_error_t jerr;
        body = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
        if (!body) {
            e2b_reply_fail(reply, surface, SBX_ERR_INVALID, NULL,
                           "Error when parsing request: malformed JSON at line %d: %s", jerr.line,
                           jerr.text);
            return NULL;
        }
    }
    if (!json_is_object(body)) {
        json_decref(body);
        e2b_reply_fail(reply, surface, SBX_ERR_INVALID, NULL,
                       "Error when parsing request: the body must be a JSON object");
        return NULL;
    }
    return body;
}

/* Content-Type is type (parameters allowed). */
static bool e2b_content_type_is(const struct http_request *req, const char *type)
{
    const char *ct = http_header(req, "Content-Type");
    if (!ct)
        return false;
    while (*ct == ' ')
        ct++;
    size_t n = strcspn(ct, "; ");
    return n == strlen(type) && strncasecmp(ct, type, n) == 0;
}

json_t *e2b_connect_body(const struct http_request *req, bool stream, struct http_reply *reply)
{
    const char *want = stream ? "application/connect+json" : "application/json";
    const char *version = http_header(req, "Connect-Protocol-Version");
    struct sbx_error err = {0};
    if (!e2b_content_type_is(req, want)) {
        sbx_error_set(&err, SBX_ERR_INVALID, "invalid_argument", NULL,
                      "Content-Type must be %s (the JSON encoding of the Connect protocol; "
                      "sandboxd serves no binary protobuf)",
                      want);
    } else if (version && strcmp(version, "1") != 0) {
        sbx_error_set(&err, SBX_ERR_INVALID, "invalid_argument", NULL,
                      "Connect-Protocol-Version must be 1");
    } else {
        json_t *msg = NULL;
        const char *why = "malformed";
        int r = stream ? connect_read_envelope(req->body, req->body_len, &msg, &why)
                       : connect_read_unary(req->body, req->body_len, &msg, &why);
        if (r == 0)
            return msg;
        sbx_error_set(&err, r == -ENOMEM ? SBX_ERR_INTERNAL : SBX_ERR_INVALID,
                      r == -ENOMEM ? "internal" : "invalid_argument", NULL, "%s", why);
    }
    if (stream)
        e2b_stream_error(reply, &err);
    else
        e2b_reply_error(reply, E2B_SURFACE_CONNECT, &err);
    return NULL;
}
