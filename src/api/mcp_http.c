// SPDX-License-Identifier: MIT
/*
 * mcp_http — see mcp_http.h.
 *
 * Threads: every request runs on its MHD connection thread, except the
 * handling of a request whose progress is streamed, which runs on the
 * stream thread of http/server.c (counted, so that mcp_http_free() can wait
 * for it). A session is referenced while a request uses it, and does not
 * expire while one does.
 */
#include "api/mcp_http.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <uthash.h>

#include "api/api.h"
#include "api/status.h"
#include "tenant/tenant.h"
#include "proto/jsonrpc.h"
#include "mcpserver/server.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/randid.h"

#define MH_ID_LEN         32 /* hex digits, after the instance prefix */
#define MH_ID_MAX         64 /* "ID." (util/instance.h: at most 31 + 1) + MH_ID_LEN */
#define MH_SWEEP_EVERY_US 1000000

/* Referenced by the table and by each request using it (under the endpoint's lock). */
struct mh_session {
    char id[MH_ID_MAX + 1];
    struct tenant *tenant;        /* who initialized it (NULL: the operator) */
    struct mcp_server_conn *conn; /* owned */
    int64_t last_us;
    unsigned active; /* requests using it now */
    unsigned refs;
    struct mh_session *gone_next; /* on a list of unlinked sessions */
    UT_hash_handle hh;
};

struct mcp_http {
    struct mcp_server *core;
    unsigned max_sessions;
    int64_t idle_us;
    char *id_prefix; /* NULL, or "ID." */
    pthread_mutex_t lock;
    pthread_cond_t cond; /* streams reached 0 */
    struct mh_session *table;
    unsigned n_sessions; /* in the table, plus initializes under way */
    unsigned streams;
    bool draining; /* new requests are refused; notifications and responses still go in */
    bool stopping;
    int64_t last_sweep_us;
};

/* ---- replies ------------------------------------------------------------------------------- */

/* An HTTP error whose body is a JSON-RPC error response without id (as the spec suggests). */
static void mh_fail(struct http_reply *reply, enum sbx_errkind kind, int code, const char *message)
{
    api_reply_jsonrpc(reply, kind, code, message, NULL);
}

/* A JSON-RPC message (stolen) as the body: the answer (NONE), or one that says the message
 * sent could not be read or accepted (INVALID). */
static void mh_json(struct http_reply *reply, enum sbx_errkind kind, json_t *msg)
{
    reply->status = api_status_of(kind);
    reply->body = msg;
}

/* One SSE event carrying a message. */
static char *mh_event(json_t *msg)
{
    return http_sse_event("message", msg, NULL);
}

/* ---- sessions ------------------------------------------------------------------------------ */

static bool mh_expired(const struct mcp_http *h, struct mh_session *s, int64_t now)
{
    return !s->active && now - s->last_us > h->idle_us && !mcp_server_conn_busy(s->conn);
}

/* Take s out of the table (lock held) onto *gone; the table's reference goes with it. */
static void mh_unlink_locked(struct mcp_http *h, struct mh_session *s, struct mh_session **gone)
{
    HASH_DEL(h->table, s);
    h->n_sessions--;
    s->gone_next = *gone;
    *gone = s;
}

static void mh_put(struct mcp_http *h, struct mh_session *s)
{
    pthread_mutex_lock(&h->lock);
    bool last = --s->refs == 0;
    pthread_mutex_unlock(&h->lock);
    if (!last)
        return;
    mcp_server_conn_unref(s->conn);
    free(s);
}

/* Unlink expired sessions (lock held) onto *gone. */
static void mh_sweep_locked(struct mcp_http *h, struct mh_session **gone, bool force)
{
    int64_t now = clock_mono_us();
    if (!force && now - h->last_sweep_us < MH_SWEEP_EVERY_US)
        return;
    h->last_sweep_us = now;
    struct mh_session *s, *tmp;
    HASH_ITER(hh, h->table, s, tmp)
    {
        if (mh_expired(h, s, now))
            mh_unlink_locked(h, s, gone);
    }
}

/* End unlinked sessions: their sandbox sessions go now, the memory with the last request. */
static void mh_end(struct mcp_http *h, struct mh_session *list, const char *why)
{
    while (list) {
        struct mh_session *s = list;
        list = s->gone_next;
        log_info("mcp http: session %.8s... ended (%s)", s->id, why);
        mcp_server_conn_close(s->conn);
        tenant_mcp_session_release(s->tenant);
        mh_put(h, s);
    }
}

/* The session named by the request's MCP-Session-Id, referenced; NULL with the reply filled
 * (INVALID without header, NOT_FOUND unknown, or another tenant's). */
static struct mh_session *mh_acquire(struct mcp_http *h, const struct http_request *req,
                                     struct tenant *tenant, struct http_reply *reply)
{
    const char *id = http_header(req, "MCP-Session-Id");
    if (!id || !*id) {
        mh_fail(reply, SBX_ERR_INVALID, JSONRPC_INVALID_REQUEST,
                "Bad Request: the MCP-Session-Id header is required (send initialize first)");
        return NULL;
    }
    struct mh_session *s = NULL, *gone = NULL;
    pthread_mutex_lock(&h->lock);
    if (strlen(id) <= MH_ID_MAX)
        HASH_FIND_STR(h->table, id, s);
    if (s && tenant && s->tenant != tenant)
        s = NULL; /* another tenant's: it does not exist for this caller */
    if (s && mh_expired(h, s, clock_mono_us())) {
        mh_unlink_locked(h, s, &gone);
        s = NULL;
    }
    if (s) {
        s->active++;
        s->refs++;
        s->last_us = clock_mono_us();
    }
    mh_sweep_locked(h, &gone, false);
    pthread_mutex_unlock(&h->lock);
    mh_end(h, gone, "idle");
    if (!s)
        mh_fail(reply, SBX_ERR_NOT_FOUND, JSONRPC_MCP_SESSION_NOT_FOUND,
                "Session not found: it ended or expired; initialize a new one");
    return s;
}

static void mh_release(struct mcp_http *h, struct mh_session *s)
{
    pthread_mutex_lock(&h->lock);
    s->active--;
    s->last_us = clock_mono_us();
    pthread_mutex_unlock(&h->lock);
    mh_put(h, s);
}

/* ---- POST ---------------------------------------------------------------------------------- */

/* A session that initialize made but does not keep: its reservations go back. */
static void mh_discard(struct mcp_http *h, struct mh_session *s, struct tenant *tenant)
{
    pthread_mutex_lock(&h->lock);
    h->n_sessions--;
    pthread_mutex_unlock(&h->lock);
    tenant_mcp_session_release(tenant);
    if (s)
        mcp_server_conn_unref(s->conn);
    free(s);
}

/* initialize: a new session of tenant, kept when the answer is a success. A tenant holds at
 * most its maxMcpSessions, so that one tenant cannot take every session of the endpoint and
 * leave the others refused (UNAVAILABLE) until theirs expire (docs/SECURITY.md). */
static void mh_initialize(struct mcp_http *h, json_t *msg, struct tenant *tenant,
                          struct http_reply *reply)
{
    struct mh_session *gone = NULL;
    pthread_mutex_lock(&h->lock);
    mh_sweep_locked(h, &gone, true);
    pthread_mutex_unlock(&h->lock);
    mh_end(h, gone, "idle");
    if (!tenant_mcp_session_claim(tenant)) {
        char text[200];
        snprintf(text, sizeof(text),
                 "Too Many Requests: tenant '%s' holds %u MCP sessions, its maxMcpSessions; "
                 "end one (DELETE /mcp) or retry later",
                 tenant_name(tenant), tenant_max_mcp_sessions(tenant));
        json_t *data = json_pack("{s:s}", "code", "TENANT_LIMIT"); /* borrowed below */
        api_reply_jsonrpc(reply, SBX_ERR_LIMIT, JSONRPC_SERVER_ERROR, text, data);
        json_decref(data);
        http_reply_header(reply, "Retry-After", "1");
        return;
    }
    pthread_mutex_lock(&h->lock);
    bool full = h->n_sessions >= h->max_sessions;
    if (!full)
        h->n_sessions++; /* reserved while initialize runs */
    pthread_mutex_unlock(&h->lock);
    if (full) {
        tenant_mcp_session_release(tenant);
        mh_fail(reply, SBX_ERR_UNAVAILABLE, JSONRPC_SERVER_ERROR,
                "Service Unavailable: too many MCP sessions; retry later");
        http_reply_header(reply, "Retry-After", "5");
        return;
    }
    struct mh_session *s = calloc(1, sizeof(*s));
    json_t *answer = NULL;
    if (s && mcp_server_conn_new(h->core, &s->conn) == 0) {
        s->tenant = tenant;
        mcp_server_conn_set_tenant(s->conn, tenant);
        answer = mcp_server_handle(s->conn, msg, NULL);
    }
    bool ok = answer && json_object_get(answer, "result");
    size_t k = ok && h->id_prefix ? (size_t)snprintf(s->id, sizeof(s->id), "%s", h->id_prefix) : 0;
    if (ok && randid_hex(s->id + k, sizeof(s->id) - k, MH_ID_LEN / 2) < 0)
        ok = false; /* session ids must be unguessable: no fallback */
    if (!ok) {
        mh_discard(h, s, tenant);
        if (answer)
            mh_json(reply, SBX_ERR_NONE, answer); /* e.g. an unsupported protocol version */
        else
            mh_fail(reply, SBX_ERR_INTERNAL, JSONRPC_INTERNAL_ERROR,
                    "Internal error: out of memory");
        return;
    }
    s->last_us = clock_mono_us();
    s->refs = 1; /* the table's */
    pthread_mutex_lock(&h->lock);
    bool stopping = h->stopping;
    if (!stopping)
        HASH_ADD_STR(h->table, id, s);
    pthread_mutex_unlock(&h->lock);
    if (stopping) {
        mh_discard(h, s, tenant);
        json_decref(answer);
        mh_fail(reply, SBX_ERR_UNAVAILABLE, JSONRPC_SERVER_ERROR,
                "Service Unavailable: sandboxd is shutting down");
        return;
    }
    http_reply_header(reply, "MCP-Session-Id", s->id);
    mh_json(reply, SBX_ERR_NONE, answer);
}

/* A request whose progress is streamed: handled on the stream thread. */
struct mh_stream {
    struct mcp_http *h;
    struct mh_session *session;
    json_t *msg;
    struct http_stream *stream;
    bool broken;
};

static void mh_stream_send(struct mh_stream *j, json_t *msg)
{
    char *ev = mh_event(msg);
    /* The client may leave; the request still completes (disconnection is not cancellation). */
    if (ev && !j->broken && http_stream_write(j->stream, ev, strlen(ev)) < 0)
        j->broken = true;
    free(ev);
}

static void mh_stream_notify(void *userdata, json_t *msg)
{
    mh_stream_send(userdata, msg);
}

static int mh_stream_run(void *userdata, struct http_stream *st)
{
    struct mh_stream *j = userdata;
    j->stream = st;
    struct mcp_server_out out = {.userdata = j, .notify = mh_stream_notify};
    json_t *answer = mcp_server_handle(j->session->conn, j->msg, &out);
    if (answer)
        mh_stream_send(j, answer);
    json_decref(answer); /* NULL: cancelled, the stream just ends */
    return 0;
}

static void mh_stream_free(void *userdata)
{
    struct mh_stream *j = userdata;
    struct mcp_http *h = j->h;
    mh_release(h, j->session);
    json_decref(j->msg);
    free(j);
    pthread_mutex_lock(&h->lock);
    h->streams--;
    pthread_cond_broadcast(&h->cond);
    pthread_mutex_unlock(&h->lock);
}

static void mh_post(struct mcp_http *h, const struct http_request *req, struct tenant *tenant,
                    struct http_reply *reply)
{
    if (!api_is_json_type(http_header(req, "Content-Type"))) {
        mh_fail(reply, SBX_ERR_MEDIA_TYPE, JSONRPC_INVALID_REQUEST,
                "Unsupported Media Type: Content-Type must be application/json");
        return;
    }
    const char *accept = http_header(req, "Accept");
    bool json_ok = api_accepts(accept, "application/json");
    bool sse_ok = accept && api_accepts(accept, "text/event-stream");
    if (!json_ok && !sse_ok) {
        mh_fail(reply, SBX_ERR_NOT_ACCEPTABLE, JSONRPC_INVALID_REQUEST,
                "Not Acceptable: accept application/json and text/event-stream");
        return;
    }
    json_error_t jerr;
    json_t *msg = json_loadb(req->body, req->body_len,
                             JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (!msg) {
        mh_json(reply, SBX_ERR_INVALID, mcp_server_parse_error(jerr.text));
        return;
    }
    struct mcp_server_peek peek;
    mcp_server_peek(msg, &peek);
    pthread_mutex_lock(&h->lock);
    bool draining = h->draining;
    pthread_mutex_unlock(&h->lock);
    if (draining && peek.has_request) {
        /* No new work; a cancellation (a notification) of work under way still gets through. */
        mh_fail(reply, SBX_ERR_UNAVAILABLE, JSONRPC_SERVER_ERROR,
                "Service Unavailable: sandboxd is shutting down");
        http_reply_header(reply, "Retry-After", "1");
        json_decref(msg);
        return;
    }
    if (peek.initialize && !peek.batch) {
        /* An initialize inside a session would be that session's second one (docs/MCP.md):
         * refused, and no new session is made on the side. */
        if (http_header(req, "MCP-Session-Id"))
            mh_fail(reply, SBX_ERR_INVALID, JSONRPC_INVALID_REQUEST,
                    "Bad Request: initialize must not carry an MCP-Session-Id (the session is "
                    "initialized already; send initialize without it for a new session)");
        else
            mh_initialize(h, msg, tenant, reply);
        json_decref(msg);
        return;
    }
    struct mh_session *s = mh_acquire(h, req, tenant, reply);
    if (!s) {
        json_decref(msg);
        return;
    }
    const char *negotiated = mcp_server_conn_version(s->conn);
    const char *pv = http_header(req, "MCP-Protocol-Version");
    if (pv && (!mcp_server_version_supported(pv) || (negotiated && strcmp(pv, negotiated)))) {
        char text[200];
        snprintf(text, sizeof(text),
                 "Bad Request: unsupported MCP-Protocol-Version %.32s (this session speaks %s)", pv,
                 negotiated ? negotiated : "nothing yet");
        mh_fail(reply, SBX_ERR_INVALID, JSONRPC_INVALID_REQUEST, text);
        mh_release(h, s);
        json_decref(msg);
        return;
    }
    /* Streamed when notifications may come (progress), or requests (the elicitation of a call
     * waiting for approval): they go on this request's SSE stream, before its answer. */
    bool stream = peek.progress || (peek.tools_call && mcp_server_conn_elicits(s->conn));
    if (stream && sse_ok && !peek.batch) {
        struct mh_stream *j = calloc(1, sizeof(*j));
        if (!j) {
            mh_fail(reply, SBX_ERR_INTERNAL, JSONRPC_INTERNAL_ERROR,
                    "Internal error: out of memory");
            mh_release(h, s);
            json_decref(msg);
            return;
        }
        *j = (struct mh_stream){.h = h, .session = s, .msg = msg};
        pthread_mutex_lock(&h->lock);
        h->streams++;
        pthread_mutex_unlock(&h->lock);
        api_reply_ok(reply, API_OK);
        reply->content_type = "text/event-stream";
        http_reply_header(reply, "Cache-Control", "no-cache");
        reply->stream_fn = mh_stream_run;
        reply->stream_userdata = j;
        reply->stream_free = mh_stream_free; /* runs even if the stream never starts */
        return;
    }
    json_t *answer = mcp_server_handle(s->conn, msg, NULL);
    mh_release(h, s);
    if (!answer)
        api_reply_ok(reply,
                     API_ACCEPTED); /* notifications, responses, and requests cancelled meanwhile */
    else if (!peek.has_request)
        mh_json(reply, SBX_ERR_INVALID, answer); /* a message we could not accept */
    else if (json_ok)
        mh_json(reply, SBX_ERR_NONE, answer);
    else {
        api_reply_ok(reply, API_OK);
        reply->content_type = "text/event-stream";
        reply->text = mh_event(answer);
        json_decref(answer);
        if (!reply->text)
            mh_fail(reply, SBX_ERR_INTERNAL, JSONRPC_INTERNAL_ERROR,
                    "Internal error: out of memory");
    }
    json_decref(msg);
}

/* ---- the endpoint --------------------------------------------------------------------------- */

static void mh_delete(struct mcp_http *h, const struct http_request *req, struct tenant *tenant,
                      struct http_reply *reply)
{
    struct mh_session *s = mh_acquire(h, req, tenant, reply);
    if (!s)
        return;
    struct mh_session *gone = NULL;
    pthread_mutex_lock(&h->lock);
    struct mh_session *listed = NULL;
    HASH_FIND_STR(h->table, s->id, listed);
    if (listed == s) /* a concurrent DELETE may have been first */
        mh_unlink_locked(h, s, &gone);
    pthread_mutex_unlock(&h->lock);
    mh_end(h, gone, "deleted by the client");
    mh_release(h, s);
    api_reply_ok(reply, API_NO_CONTENT);
}

void mcp_http_route(struct mcp_http *h, const struct http_request *req, struct tenant *tenant,
                    struct http_reply *reply)
{
    pthread_mutex_lock(&h->lock);
    bool stopping = h->stopping;
    pthread_mutex_unlock(&h->lock);
    if (stopping) {
        mh_fail(reply, SBX_ERR_UNAVAILABLE, JSONRPC_SERVER_ERROR,
                "Service Unavailable: sandboxd is shutting down");
        return;
    }
    if (strcmp(req->method, "POST") == 0)
        mh_post(h, req, tenant, reply);
    else if (strcmp(req->method, "DELETE") == 0)
        mh_delete(h, req, tenant, reply);
    else {
        /* GET included: we send nothing the client did not ask for, so there is no stream to
         * listen to (the spec allows 405, METHOD). */
        mh_fail(reply, SBX_ERR_METHOD, JSONRPC_INVALID_REQUEST,
                "Method Not Allowed: POST messages; DELETE ends a session");
        http_reply_header(reply, "Allow", "POST, DELETE");
    }
}

int mcp_http_new(const struct mcp_http_options *opt, struct mcp_server *core, struct mcp_http **ret)
{
    struct mcp_http *h = calloc(1, sizeof(*h));
    if (!h)
        return -ENOMEM;
    h->core = core;
    h->max_sessions = opt->max_sessions ? opt->max_sessions : API_MCP_MAX_SESSIONS_DEFAULT;
    h->idle_us = (opt->idle_s > 0 ? opt->idle_s : 600) * 1000000;
    pthread_mutex_init(&h->lock, NULL);
    pthread_cond_init(&h->cond, NULL);
    int r = 0;
    if (opt->id_prefix) {
        if (strlen(opt->id_prefix) + 1 + MH_ID_LEN > MH_ID_MAX)
            r = -ENAMETOOLONG;
        else if (asprintf(&h->id_prefix, "%s.", opt->id_prefix) < 0) {
            h->id_prefix = NULL;
            r = -ENOMEM;
        }
    }
    if (r < 0) {
        mcp_http_free(h);
        return r;
    }
    *ret = h;
    return 0;
}

void mcp_http_drain(struct mcp_http *h)
{
    if (!h)
        return;
    pthread_mutex_lock(&h->lock);
    h->draining = true;
    pthread_mutex_unlock(&h->lock);
}

void mcp_http_shutdown(struct mcp_http *h)
{
    if (!h)
        return;
    struct mh_session *gone = NULL, *s, *tmp;
    pthread_mutex_lock(&h->lock);
    h->stopping = true;
    HASH_ITER(hh, h->table, s, tmp)
    {
        mh_unlink_locked(h, s, &gone);
    }
    pthread_mutex_unlock(&h->lock);
    mh_end(h, gone, "shutdown");
}

void mcp_http_free(struct mcp_http *h)
{
    if (!h)
        return;
    pthread_mutex_lock(&h->lock);
    while (h->streams)
        pthread_cond_wait(&h->cond, &h->lock);
    pthread_mutex_unlock(&h->lock);
    struct mh_session *gone = NULL, *s, *tmp;
    HASH_ITER(hh, h->table, s, tmp)
    {
        mh_unlink_locked(h, s, &gone); /* only without mcp_http_shutdown() */
    }
    mh_end(h, gone, "shutdown");
    free(h->id_prefix);
    pthread_cond_destroy(&h->cond);
    pthread_mutex_destroy(&h->lock);
    free(h);
}
