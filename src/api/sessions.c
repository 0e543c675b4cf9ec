// SPDX-License-Identifier: MIT
/*
 * sessions (api) — the /v1/sessions routes of CONTRACT §3:
 *   POST   /v1/sessions                 create   -> 201 {sessionId, ...}
 *   GET    /v1/sessions                 list
 *   GET    /v1/sessions/{id}            state
 *   DELETE /v1/sessions/{id}            end      -> 204
 *   POST   /v1/sessions/{id}/execute    run code -> 200 JSON, or SSE with
 *                                       Accept: text/event-stream (events stdout, stderr,
 *                                       rpc, display, approval_required, execution_done;
 *                                       error when it cannot run)
 *   GET    /v1/sessions/{id}/approvals  the tool calls waiting for a person's decision
 *   POST   /v1/sessions/{id}/approvals/{approvalId}  {"approve": bool} decides one
 *   GET    /v1/approvals                the waiting calls of every session of the caller
 *          /v1/sessions/{id}/files...   api/files.c
 */
#include "api/sessions.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/files.h"
#include "api/status.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/utf8.h"
#include "util/macros.h"

static json_t *api_session_body(const struct http_request *req, struct http_reply *reply,
                                bool allow_empty)
{
    if (allow_empty && req->body_len == 0)
        return json_object();
    if (!api_is_json_type(http_header(req, "Content-Type"))) {
        api_reply_error(reply, SBX_ERR_MEDIA_TYPE, "UNSUPPORTED_MEDIA_TYPE", NULL,
                        "Content-Type must be application/json");
        return NULL;
    }
    json_error_t jerr;
    json_t *body = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
    if (!body) {
        api_reply_error(reply, SBX_ERR_INVALID, "INVALID_JSON", NULL,
                        "malformed JSON at line %d: %s", jerr.line, jerr.text);
        return NULL;
    }
    if (!json_is_object(body)) {
        json_decref(body);
        api_reply_error(reply, SBX_ERR_INVALID, "INVALID_REQUEST", NULL,
                        "the body must be a JSON object");
        return NULL;
    }
    return body;
}

/* An optional positive integer member; false (and a 400) when present but wrong. */
static bool api_opt_int(json_t *body, const char *key, int64_t min, int64_t *ret,
                        struct http_reply *reply)
{
    json_t *v = json_object_get(body, key);
    *ret = 0;
    if (!v || json_is_null(v))
        return true;
    if (!json_is_integer(v) || json_integer_value(v) < min) {
        api_reply_error(reply, SBX_ERR_INVALID, "INVALID_REQUEST", key,
                        "%s: must be an integer >= %lld", key, (long long)min);
        return false;
    }
    *ret = json_integer_value(v);
    return true;
}

static void api_session_create(struct api *api, const struct http_request *req,
                               struct tenant *tenant, struct http_reply *reply)
{
    json_t *body = api_session_body(req, reply, true);
    if (!body)
        return;
    struct session_create c = {.tenant = tenant};
    json_t *servers = json_object_get(body, "servers");
    json_t *ws = json_object_get(body, "workspace");
    if (servers && !json_is_null(servers)) {
        if (!json_is_array(servers)) {
            api_reply_error(reply, SBX_ERR_INVALID, "INVALID_REQUEST", "servers",
                            "servers: must be an array of server names");
            goto out;
        }
        c.servers = servers;
    }
    if (ws && !json_is_null(ws)) {
        if (!json_is_string(ws)) {
            api_reply_error(reply, SBX_ERR_INVALID, "INVALID_REQUEST", "workspace",
                            "workspace: must be a string");
            goto out;
        }
        c.workspace = json_string_value(ws);
    }
    json_t *profile = json_object_get(body, "profile");
    if (profile && !json_is_null(profile)) {
        if (!json_is_string(profile)) {
            api_reply_error(reply, SBX_ERR_INVALID, "INVALID_REQUEST", "profile",
                            "profile: must be a string");
            goto out;
        }
        c.profile = json_string_value(profile);
    }
    if (!api_opt_int(body, "idleTimeoutS", 1, &c.idle_timeout_s, reply) ||
        !api_opt_int(body, "memoryMb", 16, &c.memory_mb, reply))
        goto out;
    json_t *network = json_object_get(body, "network");
    c.network = network && !json_is_null(network) ? network : NULL; /* checked by the session */
    json_t *info = NULL;
    struct sbx_error err;
    if (sessions_create(api->sessions, &c, &info, &err) < 0) {
        api_reply_sbx_error(reply, &err);
        goto out;
    }
    api_reply_json(reply, API_CREATED, info);
    char loc[96];
    snprintf(loc, sizeof(loc), "/v1/sessions/%s",
             json_string_value(json_object_get(info, "sessionId")));
    http_reply_header(reply, "Location", loc);
out:
    json_decref(body);
}

/* ---- server-sent events --------------------------------------------------------------------- */

struct api_sse {
    struct sessions *sessions;
    char *id;
    char *code;
    int64_t timeout_ms;
    pthread_mutex_t lock; /* stdout/stderr from the executing thread, rpc events too */
    struct http_stream *stream;
    bool broken;
    char carry[2][4]; /* an incomplete UTF-8 sequence at the end of the last chunk */
    size_t carry_len[2];
};

static void api_sse_free(void *userdata)
{
    struct api_sse *j = userdata;
    free(j->id);
    free(j->code);
    pthread_mutex_destroy(&j->lock);
    free(j);
}

/* data: borrowed; NULL (an event that could not be built) is reported, not sent. */
static void api_sse_event(struct api_sse *j, const char *event, json_t *data)
{
    size_t n;
    char *line = data ? http_sse_event(event, data, &n) : NULL;
    if (!line) {
        log_warn("session %s: a '%s' event could not be streamed (out of memory)", j->id, event);
        return;
    }
    pthread_mutex_lock(&j->lock);
    if (!j->broken && http_stream_write(j->stream, line, n) < 0)
        j->broken = true; /* the client left; the execution still completes */
    pthread_mutex_unlock(&j->lock);
    free(line);
}

static void api_sse_output(void *userdata, int stream, const char *data, size_t len)
{
    struct api_sse *j = userdata;
    int k = stream == 2 ? 1 : 0;
    struct buf b;
    buf_init(&b, len + 8);
    if (buf_append(&b, j->carry[k], j->carry_len[k]) < 0 || buf_append(&b, data, len) < 0) {
        buf_free(&b);
        return;
    }
    size_t tail = utf8_incomplete_tail((const unsigned char *)b.data, b.len);
    memcpy(j->carry[k], b.data + b.len - tail, tail);
    j->carry_len[k] = tail;
    b.len -= tail;
    if (b.len) {
        json_t *ev = json_pack("{s:o}", "data", response_text(&b));
        api_sse_event(j, stream == 2 ? "stderr" : "stdout", ev);
        json_decref(ev);
    }
    buf_free(&b);
}

static void api_sse_rpc(void *userdata, json_t *summary)
{
    api_sse_event(userdata, "rpc", summary);
}

static void api_sse_display(void *userdata, json_t *artifact)
{
    api_sse_event(userdata, "display", artifact);
}

static void api_sse_approval(void *userdata, json_t *approval)
{
    api_sse_event(userdata, "approval_required", approval);
}

static int api_sse_run(void *userdata, struct http_stream *st)
{
    struct api_sse *j = userdata;
    j->stream = st;
    struct session_stream cb = {.userdata = j,
                                .on_output = api_sse_output,
                                .on_rpc = api_sse_rpc,
                                .on_artifact = api_sse_display,
                                .on_approval = api_sse_approval};
    json_t *result = NULL;
    struct sbx_error err;
    if (sessions_execute(j->sessions, j->id, j->code, j->timeout_ms, &cb, &result, &err) < 0) {
        json_t *e =
            json_pack("{s:s, s:s, s:i}", "code", err.code ? err.code : "INTERNAL", "message",
                      err.message ? err.message : "failed", "status", api_status_of(err.kind));
        api_sse_event(j, "error", e);
        json_decref(e);
        sbx_error_clear(&err);
        return -1;
    }
    api_sse_event(j, "execution_done", result);
    json_decref(result);
    return 0;
}

/* POST .../execute: the body as this API takes it, the code by the session layer's one check
 * (sessions_code_check(), before a stream starts), then one session-layer operation,
 * sessions_execute(), which finds the session (visible to the caller: the route checked). */
static void api_session_execute(struct api *api, const char *id, const struct http_request *req,
                                struct http_reply *reply)
{
    json_t *body = api_session_body(req, reply, false);
    if (!body)
        return;
    json_t *code = json_object_get(body, "code");
    int64_t timeout_ms = 0;
    if (!code || !json_is_string(code)) {
        api_reply_error(reply, SBX_ERR_INVALID, "INVALID_REQUEST", "code",
                        "code: must be a string");
        goto out;
    }
    const char *bad = sessions_code_check(json_string_value(code), json_string_length(code));
    if (bad) {
        api_reply_error(reply, SBX_ERR_INVALID, "INVALID_REQUEST", "code", "%s", bad);
        goto out;
    }
    if (!api_opt_int(body, "timeoutMs", 1, &timeout_ms, reply))
        goto out;
    const char *accept = http_header(req, "Accept");
    bool sse = accept && strstr(accept, "text/event-stream");
    if (sse) {
        /* The route found the session (api_sessions_route()); one that ends before the stream
         * runs is told as its error event, by sessions_execute(). */
        struct api_sse *j = calloc(1, sizeof(*j));
        if (!j || !(j->id = strdup(id)) || !(j->code = strdup(json_string_value(code)))) {
            if (j)
                free(j->id);
            free(j);
            api_reply_error(reply, SBX_ERR_INTERNAL, "INTERNAL", NULL, "out of memory");
            goto out;
        }
        j->sessions = api->sessions;
        j->timeout_ms = timeout_ms;
        pthread_mutex_init(&j->lock, NULL);
        api_reply_ok(reply, API_OK);
        reply->content_type = "text/event-stream";
        http_reply_header(reply, "Cache-Control", "no-cache");
        reply->stream_fn = api_sse_run;
        reply->stream_userdata = j;
        reply->stream_free = api_sse_free;
        goto out;
    }
    if (!api_accepts(accept, "application/json")) {
        api_reply_error(reply, SBX_ERR_NOT_ACCEPTABLE, "NOT_ACCEPTABLE", NULL,
                        "ask for application/json or text/event-stream");
        goto out;
    }
    json_t *result = NULL;
    struct sbx_error err;
    if (sessions_execute(api->sessions, id, json_string_value(code), timeout_ms, NULL, &result,
                         &err) < 0) {
        api_reply_sbx_error(reply, &err);
        goto out;
    }
    api_reply_json(reply, API_OK, result);
out:
    json_decref(body);
}

/* GET .../approvals, POST .../approvals/{approvalId} {"approve": true|false}. */
static void api_session_approvals(struct api *api, const char *id, const char *tail,
                                  const struct http_request *req, struct http_reply *reply)
{
    bool get = strcmp(req->method, "GET") == 0, post = strcmp(req->method, "POST") == 0;
    if (!*tail) {
        json_t *list = NULL;
        int r = get ? sessions_approvals(api->sessions, id, &list) : 0;
        if (!get) {
            api_reply_method(reply, "GET");
        } else if (r == -ENOENT) {
            api_reply_error(reply, SBX_ERR_NOT_FOUND, "NOT_FOUND", NULL, "no session %s", id);
        } else if (r < 0) {
            api_reply_error(reply, SBX_ERR_INTERNAL, "INTERNAL", NULL, "out of memory");
        } else {
            api_reply_json(reply, API_OK, json_pack("{s:o}", "approvals", list));
        }
        return;
    }
    const char *aid = tail + 1;
    if (tail[0] != '/' || !*aid || strchr(aid, '/') || strlen(aid) > 64) {
        api_reply_error(reply, SBX_ERR_NOT_FOUND, "NOT_FOUND", NULL, "no route %s", req->path);
        return;
    }
    if (!post) {
        api_reply_method(reply, "POST");
        return;
    }
    json_t *body = api_session_body(req, reply, false);
    if (!body)
        return;
    json_t *approve = json_object_get(body, "approve");
    if (!json_is_boolean(approve)) {
        api_reply_error(reply, SBX_ERR_INVALID, "INVALID_REQUEST", "approve",
                        "approve: required, true (send the call) or false (refuse it)");
    } else {
        struct sbx_error err;
        if (sessions_approval_decide(api->sessions, id, aid, json_is_true(approve), &err) < 0) {
            api_reply_sbx_error(reply, &err);
        } else {
            api_reply_ok(reply, API_OK);
            reply->body = json_pack("{s:s, s:b}", "id", aid, "approved", json_is_true(approve));
        }
    }
    json_decref(body);
}

void api_approvals_route(struct api *api, struct tenant *tenant, struct http_reply *reply)
{
    json_t *list = NULL;
    struct sbx_error err;
    if (!api->sessions)
        api_reply_error(reply, SBX_ERR_NOT_FOUND, "NOT_FOUND", NULL, "sessions are disabled");
    else if (sessions_approvals_all(api->sessions, tenant, &list, &err) < 0)
        api_reply_sbx_error(reply, &err);
    else
        api_reply_json(reply, API_OK, json_pack("{s:o}", "approvals", list));
}

void api_sessions_route(struct api *api, const struct http_request *req, const char *rest,
                        struct tenant *tenant, struct http_reply *reply)
{
    bool get = strcmp(req->method, "GET") == 0;
    bool post = strcmp(req->method, "POST") == 0;
    bool del = strcmp(req->method, "DELETE") == 0;
    if (!api->sessions) {
        api_reply_error(reply, SBX_ERR_NOT_FOUND, "NOT_FOUND", NULL, "sessions are disabled");
        return;
    }
    if (!*rest || strcmp(rest, "/") == 0) {
        if (post)
            api_session_create(api, req, tenant, reply);
        else if (get) {
            api_reply_json(reply, API_OK,
                           json_pack("{s:o}", "sessions", sessions_list(api->sessions, tenant)));
        } else {
            api_reply_error(reply, SBX_ERR_METHOD, "METHOD_NOT_ALLOWED", NULL, "use GET or POST");
            http_reply_header(reply, "Allow", "GET, POST");
        }
        return;
    }
    if (rest[0] != '/') {
        api_reply_error(reply, SBX_ERR_NOT_FOUND, "NOT_FOUND", NULL, "no route %s", req->path);
        return;
    }
    char id[SESSION_ID_MAX + 1];
    size_t n = strcspn(rest + 1, "/");
    if (n == 0 || n >= sizeof(id)) {
        api_reply_error(reply, SBX_ERR_NOT_FOUND, "NOT_FOUND", NULL, "no session %.*s",
                        (int)(n > SESSION_ID_MAX ? SESSION_ID_MAX : n), rest + 1);
        return;
    }
    memcpy(id, rest + 1, n);
    id[n] = '\0';
    const char *tail = rest + 1 + n;
    /* Every route below names a session: another tenant's does not exist for this caller. */
    bool visible = sessions_visible(api->sessions, id, tenant);
    if (!*tail) {
        if (get) {
            json_t *info = NULL;
            if (!visible || sessions_info(api->sessions, id, &info) == -ENOENT)
                api_reply_error(reply, SBX_ERR_NOT_FOUND, "NOT_FOUND", NULL, "no session %s", id);
            else
                api_reply_json(reply, API_OK, info); /* NULL (-ENOMEM): 500 */
        } else if (del) {
            if (!visible || sessions_delete(api->sessions, id) < 0)
                api_reply_error(reply, SBX_ERR_NOT_FOUND, "NOT_FOUND", NULL, "no session %s", id);
            else
                api_reply_ok(reply, API_NO_CONTENT);
        } else {
            api_reply_error(reply, SBX_ERR_METHOD, "METHOD_NOT_ALLOWED", NULL, "use GET or DELETE");
            http_reply_header(reply, "Allow", "GET, DELETE");
        }
        return;
    }
    if (strncmp(tail, "/files", 6) == 0 && (tail[6] == '\0' || tail[6] == '/')) {
        if (!visible)
            api_reply_error(reply, SBX_ERR_NOT_FOUND, "NOT_FOUND", NULL, "no session %s", id);
        else
            api_session_files_route(api, id, tail + 6, req, reply);
        return;
    }
    if (strncmp(tail, "/approvals", 10) == 0 && (tail[10] == '\0' || tail[10] == '/')) {
        if (!visible)
            api_reply_error(reply, SBX_ERR_NOT_FOUND, "NOT_FOUND", NULL, "no session %s", id);
        else
            api_session_approvals(api, id, tail + 10, req, reply);
        return;
    }
    if (strcmp(tail, "/execute") == 0) {
        if (post && !visible)
            api_reply_error(reply, SBX_ERR_NOT_FOUND, "NOT_FOUND", NULL, "no session %s", id);
        else if (post)
            api_session_execute(api, id, req, reply);
        else {
            api_reply_method(reply, "POST");
        }
        return;
    }
    api_reply_error(reply, SBX_ERR_NOT_FOUND, "NOT_FOUND", NULL, "no route %s", req->path);
}
