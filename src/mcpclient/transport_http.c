// SPDX-License-Identifier: MIT
/*
 * transport_http — see transport_http.h.
 *
 * send() runs one exchange on the caller's thread: POST the message, read the
 * answer (JSON, or SSE events delivered to the client as they arrive, so a
 * progress notification or a ping from the server reaches us while the
 * request is still running), and return once the answer to the request went
 * through on_message. A ping is answered from inside the SSE callback with a
 * POST of its own on a separate easy handle, which libcurl allows.
 *
 * Sessions: the id comes with the initialize answer and goes on every later
 * request. A 404 on a request that carried it means the server forgot it:
 * the transport drops the id, makes the connection STALE (client_int.h),
 * refuses everything but initialize with -ESTALE until an initialize is
 * answered, and the client initializes again and resends. The id and the
 * state change together, under the transport's lock.
 *
 * Connection reuse: each transport keeps a few idle easy handles, and an
 * easy handle keeps its connections open between transfers. We do not attach
 * httpc's process-wide share: it shares the connection cache, and libcurl
 * does not support a connection cache used by concurrent threads (KNOWN_BUGS
 * "A shared connection cache is not thread-safe"; helgrind shows the races),
 * while concurrent requests from several threads are this transport's normal
 * case. A handle is used by one thread at a time, so nothing is shared.
 */
#include "mcpclient/transport_http.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "proto/jsonrpc.h"
#include "mcpclient/sse.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/url.h"

#define HTTP_CONNECT_TIMEOUT_MS 5000
#define HTTP_DELETE_TIMEOUT_MS  2000
#define HTTP_MAX_SESSION_ID     1024 /* visible ASCII, per the spec */
#define HTTP_MAX_ERROR_BODY     4096 /* kept from a non-2xx answer, for the message */
#define HTTP_MAX_RESUMES        32   /* GET + Last-Event-ID per request */
#define HTTP_DEFAULT_RETRY_MS   500  /* when the server closed a stream without saying */
#define HTTP_IDLE_HANDLES       4    /* kept with their open connections for the next request */

struct http_transport {
    struct mcp_transport base;
    char *name;
    char *url;
    char *shown_url;                  /* url without userinfo and query, for messages */
    struct curl_slist *extra_headers; /* from the configuration */
    struct mcp_client *owner;         /* its connection's state, and where messages go */
    pthread_mutex_t lock;             /* everything below, and the owner's STALE with them */
    char *session_id;
    char *protocol_version;
    atomic_bool aborted; /* every transfer stops (sandboxd is shutting down): not a state, an
                            order, read by libcurl's progress callback without a lock */
    CURL *idle[HTTP_IDLE_HANDLES];
    size_t n_idle;
};

/* An easy handle for one transfer: an idle one (its connections still open) or a new one. */
static CURL *http_handle_get(struct http_transport *t)
{
    pthread_mutex_lock(&t->lock);
    CURL *h = t->n_idle ? t->idle[--t->n_idle] : NULL;
    pthread_mutex_unlock(&t->lock);
    if (!h)
        return curl_easy_init();
    curl_easy_reset(h); /* forgets the options, keeps the connections */
    return h;
}

static void http_handle_put(struct http_transport *t, CURL *h)
{
    pthread_mutex_lock(&t->lock);
    if (t->n_idle < HTTP_IDLE_HANDLES) {
        t->idle[t->n_idle++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&t->lock);
    curl_easy_cleanup(h); /* NULL-safe */
}

enum http_body { HTTP_BODY_UNKNOWN, HTTP_BODY_JSON, HTTP_BODY_SSE, HTTP_BODY_ERROR };

/* One HTTP request and what its answer said. */
struct http_exchange {
    struct http_transport *t;
    const json_t *request_id; /* the id whose answer ends the exchange; NULL for other messages */
    bool answered;            /* that answer went through on_message */
    long status;
    char content_type[128];
    char session_id[HTTP_MAX_SESSION_ID + 1];
    enum http_body mode;
    struct buf body; /* JSON answer, or the start of an error page */
    bool overflow;
    struct sse_reader sse;
    unsigned bad_events;
};

static void http_exchange_init(struct http_exchange *ex, struct http_transport *t,
                               const json_t *request_id)
{
    *ex = (struct http_exchange){.t = t, .request_id = request_id};
    buf_init(&ex->body, MCP_CLIENT_MAX_MESSAGE);
    sse_reader_init(&ex->sse, MCP_CLIENT_MAX_MESSAGE);
}

static void http_exchange_done(struct http_exchange *ex)
{
    buf_free(&ex->body);
    sse_reader_done(&ex->sse);
}

/* Forget one HTTP answer but keep what resuming the stream needs (event id, retry). */
static void http_exchange_rewind(struct http_exchange *ex)
{
    ex->status = 0;
    ex->content_type[0] = '\0';
    ex->session_id[0] = '\0';
    ex->mode = HTTP_BODY_UNKNOWN;
    ex->overflow = false;
    buf_reset(&ex->body);
    sse_reader_rewind(&ex->sse);
}

/* ---- incoming messages ---- */

static bool http_is_answer(const json_t *msg, const json_t *request_id)
{
    if (!request_id)
        return false;
    if (json_is_array(msg)) {
        for (size_t i = 0; i < json_array_size(msg); i++)
            if (http_is_answer(json_array_get(msg, i), request_id))
                return true;
        return false;
    }
    return json_is_object(msg) && !json_object_get(msg, "method") &&
           jsonrpc_id_equal(json_object_get(msg, "id"), request_id);
}

static void http_deliver(struct http_exchange *ex, const char *text, size_t len)
{
    json_t *msg = NULL;
    if (jsonrpc_parse(text, len, &msg) < 0) {
        if (ex->bad_events++ == 0)
            log_warn("MCP server '%s' sent a message that is not JSON (ignored): %.100s",
                     ex->t->name, text);
        return;
    }
    bool answer = http_is_answer(msg, ex->request_id);
    mcp_client_on_message(ex->t->owner, msg);
    json_decref(msg);
    if (answer)
        ex->answered = true;
}

/* An SSE event (mcpclient/sse.h): true when it was the answer, which ends the exchange. */
static bool http_sse_event(void *userdata, const char *data, size_t len)
{
    struct http_exchange *ex = userdata;
    http_deliver(ex, data, len);
    return ex->answered;
}

/* ---- libcurl callbacks ---- */

static bool http_media_is(const char *content_type, const char *media)
{
    size_t n = strlen(media);
    return strncasecmp(content_type, media, n) == 0 &&
           (content_type[n] == '\0' || content_type[n] == ';' || content_type[n] == ' ');
}

static size_t http_header_cb(char *data, size_t size, size_t nmemb, void *userdata)
{
    struct http_exchange *ex = userdata;
    size_t len = size * nmemb;
    if (len >= 5 && memcmp(data, "HTTP/", 5) == 0) {
        /* A new status line (after a 1xx, say): only the last answer's headers count. */
        const char *sp = memchr(data, ' ', len);
        ex->status = sp ? strtol(sp + 1, NULL, 10) : 0;
        ex->content_type[0] = '\0';
        ex->session_id[0] = '\0';
        return len;
    }
    const char *colon = memchr(data, ':', len);
    if (!colon)
        return len;
    size_t nlen = (size_t)(colon - data);
    const char *v = colon + 1;
    const char *end = data + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
        end--;
    size_t vlen = (size_t)(end - v);
    if (nlen == 12 && strncasecmp(data, "content-type", 12) == 0) {
        snprintf(ex->content_type, sizeof(ex->content_type), "%.*s", (int)vlen, v);
    } else if (nlen == 14 && strncasecmp(data, "mcp-session-id", 14) == 0) {
        bool ok = vlen > 0 && vlen <= HTTP_MAX_SESSION_ID;
        for (size_t i = 0; ok && i < vlen; i++)
            ok = v[i] >= 0x21 && v[i] <= 0x7e;
        if (ok)
            snprintf(ex->session_id, sizeof(ex->session_id), "%.*s", (int)vlen, v);
        else
            log_warn("MCP server '%s' sent an invalid session id (ignored)", ex->t->name);
    }
    return len;
}

static size_t http_write_cb(char *data, size_t size, size_t nmemb, void *userdata)
{
    struct http_exchange *ex = userdata;
    size_t len = size * nmemb;
    if (ex->mode == HTTP_BODY_UNKNOWN) {
        if (ex->status < 200 || ex->status > 299) {
            ex->mode = HTTP_BODY_ERROR;
            ex->body.max = HTTP_MAX_ERROR_BODY;
        } else if (http_media_is(ex->content_type, "text/event-stream")) {
            ex->mode = HTTP_BODY_SSE;
        } else {
            ex->mode = HTTP_BODY_JSON;
        }
    }
    switch (ex->mode) {
    case HTTP_BODY_ERROR: {
        bool full = false;
        buf_append_capped(&ex->body, data, len, &full);
        return full ? 0 : len; /* enough for a message: stop reading */
    }
    case HTTP_BODY_SSE:
        if (ex->answered)
            return 0;
        if (sse_reader_feed(&ex->sse, data, len, http_sse_event, ex) < 0) {
            ex->overflow = true;
            return 0;
        }
        /* The answer is in: stop here rather than wait for a server that keeps the stream
         * open (the spec only says it SHOULD close it). */
        return ex->answered ? 0 : len;
    default:
        if (buf_append(&ex->body, data, len) < 0) {
            ex->overflow = true;
            return 0;
        }
        return len;
    }
}

/* ---- one HTTP request ---- */

/* Append "name: value", or the line name as it is when value is NULL. */
static int http_header_add(struct curl_slist **list, const char *name, const char *value)
{
    char *line = NULL;
    if (value ? asprintf(&line, "%s: %s", name, value) < 0 : !(line = strdup(name)))
        return -ENOMEM;
    struct curl_slist *l = curl_slist_append(*list, line);
    free(line);
    if (!l)
        return -ENOMEM;
    *list = l;
    return 0;
}

struct http_call {
    const char *method; /* POST, GET or DELETE */
    const char *body;   /* POST */
    const char *session_id;
    const char *protocol_version;
    const char *last_event_id;
    int64_t deadline_us;
};

/* libcurl's progress callback, at least once a second during a transfer: stop on abort. */
static int http_progress_cb(void *userdata, curl_off_t dltotal, curl_off_t dlnow,
                            curl_off_t ultotal, curl_off_t ulnow)
{
    struct http_transport *t = userdata;
    return atomic_load(&t->aborted) ? 1 : 0;
}

/* Perform one request. Returns the libcurl code, -1 when it could not even be prepared (out of
 * memory), -2 when the deadline had already passed. */
static int http_perform(struct http_transport *t, struct http_exchange *ex,
                        const struct http_call *call, char *errbuf)
{
    int64_t left_ms = (call->deadline_us - clock_mono_us()) / 1000;
    if (left_ms <= 0)
        return -2;
    CURL *h = http_handle_get(t);
    if (!h)
        return -1;
    struct curl_slist *headers = NULL;
    int r = 0;
    if (strcmp(call->method, "POST") == 0) {
        r = r ?: http_header_add(&headers, "Content-Type", "application/json");
        r = r ?: http_header_add(&headers, "Accept", "application/json, text/event-stream");
    } else if (strcmp(call->method, "GET") == 0) {
        r = r ?: http_header_add(&headers, "Accept", "text/event-stream");
    }
    if (call->session_id)
        r = r ?: http_header_add(&headers, "Mcp-Session-Id", call->session_id);
    if (call->protocol_version)
        r = r ?: http_header_add(&headers, "MCP-Protocol-Version", call->protocol_version);
    if (call->last_event_id)
        r = r ?: http_header_add(&headers, "Last-Event-ID", call->last_event_id);
    r = r ?: http_header_add(&headers, "Expect:", NULL); /* no 100-continue round trip */
    for (struct curl_slist *e = t->extra_headers; e && !r; e = e->next)
        r = http_header_add(&headers, e->data, NULL);
    if (r < 0) {
        curl_slist_free_all(headers);
        http_handle_put(t, h);
        return -1;
    }
    curl_easy_setopt(h, CURLOPT_URL, t->url);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)left_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                     (long)(left_ms < HTTP_CONNECT_TIMEOUT_MS ? left_ms : HTTP_CONNECT_TIMEOUT_MS));
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "sandboxd/" SANDBOXD_VERSION);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, http_header_cb);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, ex);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, http_write_cb);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, ex);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, http_progress_cb);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, t);
    errbuf[0] = '\0';
    if (strcmp(call->method, "POST") == 0) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, call->body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(call->body));
    } else if (strcmp(call->method, "DELETE") == 0) {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "DELETE");
    }
    CURLcode cc = curl_easy_perform(h);
    curl_slist_free_all(headers);
    http_handle_put(t, h);
    return (int)cc;
}

static char *http_strdup(const char *s, bool *oom)
{
    char *copy = s ? strdup(s) : NULL;
    if (s && !copy)
        *oom = true;
    return copy;
}

/* Explain a failed exchange in err; returns the errno for it. */
static int http_failure(struct http_transport *t, struct http_exchange *ex, int cc,
                        const char *errbuf, const char *what, struct sbx_error *err)
{
    if (cc == -2 || cc == CURLE_OPERATION_TIMEDOUT) {
        sbx_error_upstream(err, SBX_UP_TIMEOUT, NULL, "MCP server '%s' did not answer %s in time",
                           t->name, what);
        return -ETIMEDOUT;
    }
    if (ex->overflow) {
        sbx_error_upstream(err, SBX_UP_PROTOCOL, NULL,
                           "MCP server '%s' sent a message longer than %u bytes", t->name,
                           MCP_CLIENT_MAX_MESSAGE);
        return -EMSGSIZE;
    }
    if (cc != CURLE_OK && ex->mode != HTTP_BODY_ERROR) {
        sbx_error_upstream(err, SBX_UP_TRANSPORT, NULL, "cannot reach MCP server '%s' (%s): %s",
                           t->name, t->shown_url,
                           cc == -1    ? "out of memory"
                           : errbuf[0] ? errbuf
                                       : curl_easy_strerror(cc));
        return cc == CURLE_COULDNT_CONNECT ? -ECONNREFUSED : -EIO;
    }
    sbx_error_upstream(err, SBX_UP_HTTP, NULL, "MCP server '%s' answered %s with HTTP %ld: %.*s",
                       t->name, what, ex->status, (int)(ex->body.len < 200 ? ex->body.len : 200),
                       ex->body.data ? ex->body.data : "");
    err->upstream_status = ex->status;
    return -EPROTO;
}

static void http_sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* The POST's stream ended before the answer: reconnect with GET + Last-Event-ID (spec
 * 2025-11-25, "Resumability and Redelivery") until the answer comes or the deadline passes. */
static int http_resume(struct http_transport *t, struct http_exchange *ex, struct http_call *call,
                       const char *what, char *errbuf, struct sbx_error *err)
{
    for (unsigned attempt = 0; attempt < HTTP_MAX_RESUMES; attempt++) {
        long wait = ex->sse.retry_ms >= 0 ? ex->sse.retry_ms : HTTP_DEFAULT_RETRY_MS;
        if (clock_mono_us() + wait * 1000 >= call->deadline_us)
            return http_failure(t, ex, -2, errbuf, what, err);
        http_sleep_ms(wait);
        char last_id[sizeof(ex->sse.last_id)];
        memcpy(last_id, ex->sse.last_id, sizeof(last_id));
        http_exchange_rewind(ex);
        call->method = "GET";
        call->last_event_id = last_id;
        int cc = http_perform(t, ex, call, errbuf);
        if (ex->answered)
            return 0;
        if (cc != CURLE_OK || ex->status < 200 || ex->status > 299)
            return http_failure(t, ex, cc, errbuf, what, err);
        if (ex->mode != HTTP_BODY_SSE)
            break;
    }
    sbx_error_upstream(err, SBX_UP_PROTOCOL, NULL,
                       "MCP server '%s' ended its answer to %s without a response", t->name, what);
    return -EPROTO;
}

static int http_send(struct mcp_transport *base, json_t *msg, int64_t deadline_us,
                     struct sbx_error *err)
{
    struct http_transport *t = (struct http_transport *)base;
    struct jsonrpc_message m;
    jsonrpc_classify(msg, &m);
    bool is_request = m.kind == JSONRPC_REQUEST;
    bool is_init = is_request && strcmp(m.method, "initialize") == 0;
    const char *what = m.method ? m.method : "our answer";

    bool oom = false;
    pthread_mutex_lock(&t->lock);
    enum mcp_conn_state st = mcp_client_state(t->owner);
    if (st == MCP_CONN_CLOSING) {
        pthread_mutex_unlock(&t->lock);
        sbx_error_upstream(err, SBX_UP_TRANSPORT, NULL, "MCP server '%s': connection closed",
                           t->name);
        return -ENOTCONN;
    }
    if (st == MCP_CONN_STALE && !is_init) {
        pthread_mutex_unlock(&t->lock);
        sbx_error_upstream(err, SBX_UP_HTTP, NULL, "MCP server '%s' forgot our session", t->name);
        err->upstream_status = 404;
        return -ESTALE;
    }
    _cleanup_free_ char *session = is_init ? NULL : http_strdup(t->session_id, &oom);
    _cleanup_free_ char *version = is_init ? NULL : http_strdup(t->protocol_version, &oom);
    pthread_mutex_unlock(&t->lock);
    _cleanup_free_ char *body = jsonrpc_format(msg);
    if (oom || !body) {
        sbx_error_upstream(err, SBX_UP_PROTOCOL, NULL, "out of memory");
        return -ENOMEM;
    }
    if (strlen(body) > MCP_CLIENT_MAX_MESSAGE) {
        sbx_error_upstream(err, SBX_UP_PROTOCOL, NULL, "the message exceeds %u bytes",
                           MCP_CLIENT_MAX_MESSAGE);
        return -EMSGSIZE;
    }

    struct http_exchange ex;
    http_exchange_init(&ex, t, is_request ? m.id : NULL);
    struct http_call call = {.method = "POST",
                             .body = body,
                             .session_id = session,
                             .protocol_version = version,
                             .deadline_us = deadline_us};
    char errbuf[CURL_ERROR_SIZE];
    int cc = http_perform(t, &ex, &call, errbuf);
    int r = 0;
    if (is_init && ex.status >= 200 && ex.status <= 299 && (cc == CURLE_OK || ex.answered)) {
        pthread_mutex_lock(&t->lock);
        free(t->session_id);
        t->session_id = ex.session_id[0] ? strdup(ex.session_id) : NULL;
        mcp_client_initialize_answered(t->owner);
        pthread_mutex_unlock(&t->lock);
    }
    if (ex.answered) {
        r = 0; /* we may have cut the stream short ourselves */
    } else if (cc != CURLE_OK && !(cc == CURLE_WRITE_ERROR && ex.mode == HTTP_BODY_ERROR)) {
        r = http_failure(t, &ex, cc, errbuf, what, err);
    } else if (ex.status == 404 && session) {
        pthread_mutex_lock(&t->lock);
        if (t->session_id && strcmp(t->session_id, session) == 0) {
            free(t->session_id);
            t->session_id = NULL;
            mcp_client_session_lost(t->owner);
        }
        pthread_mutex_unlock(&t->lock);
        sbx_error_upstream(err, SBX_UP_HTTP, NULL, "MCP server '%s' forgot our session", t->name);
        err->upstream_status = 404;
        r = -ESTALE;
    } else if (ex.status < 200 || ex.status > 299) {
        r = http_failure(t, &ex, CURLE_OK, errbuf, what, err);
    } else {
        if (is_request && ex.mode == HTTP_BODY_JSON && ex.body.len > 0)
            http_deliver(&ex, ex.body.data, ex.body.len);
        if (!is_request || ex.answered)
            r = 0;
        else if (ex.mode == HTTP_BODY_SSE && ex.sse.last_id[0])
            r = http_resume(t, &ex, &call, what, errbuf, err);
        else {
            sbx_error_upstream(err, SBX_UP_PROTOCOL, NULL,
                               "MCP server '%s' answered %s (HTTP %ld, %s) without a response",
                               t->name, what, ex.status,
                               ex.content_type[0] ? ex.content_type : "no content type");
            r = -EPROTO;
        }
    }
    http_exchange_done(&ex);
    return r;
}

static void http_set_protocol_version(struct mcp_transport *base, const char *version)
{
    struct http_transport *t = (struct http_transport *)base;
    char *copy = strdup(version);
    pthread_mutex_lock(&t->lock);
    free(t->protocol_version);
    t->protocol_version = copy; /* NULL (out of memory) only omits the header */
    pthread_mutex_unlock(&t->lock);
}

static void http_abort(struct mcp_transport *base)
{
    struct http_transport *t = (struct http_transport *)base;
    atomic_store(&t->aborted, true);
}

static void http_free(struct http_transport *t)
{
    for (size_t i = 0; i < t->n_idle; i++)
        curl_easy_cleanup(t->idle[i]);
    curl_slist_free_all(t->extra_headers);
    free(t->session_id);
    free(t->protocol_version);
    free(t->name);
    free(t->url);
    free(t->shown_url);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

static void http_close(struct mcp_transport *base)
{
    struct http_transport *t = (struct http_transport *)base;
    if (t->session_id) { /* the client is CLOSING: no other thread uses t any more */
        /* Tell the server it can drop the session; 405 (not supported) or any failure is fine. */
        struct http_exchange ex;
        http_exchange_init(&ex, t, NULL);
        struct http_call call = {.method = "DELETE",
                                 .session_id = t->session_id,
                                 .protocol_version = t->protocol_version,
                                 .deadline_us = clock_mono_us() + HTTP_DELETE_TIMEOUT_MS * 1000};
        char errbuf[CURL_ERROR_SIZE];
        int cc = http_perform(t, &ex, &call, errbuf);
        log_debug("MCP server '%s': DELETE session: curl %d, HTTP %ld", t->name, cc, ex.status);
        http_exchange_done(&ex);
    }
    http_free(t);
}

static const struct mcp_transport_ops http_ops = {
    .name = "http",
    .send = http_send,
    .set_protocol_version = http_set_protocol_version,
    .abort = http_abort,
    .close = http_close,
};

int mcp_transport_http_open(const struct mcp_server_config *cfg, struct mcp_client *owner,
                            struct mcp_transport **ret, struct sbx_error *err)
{
    if (!cfg->url ||
        (strncasecmp(cfg->url, "http://", 7) != 0 && strncasecmp(cfg->url, "https://", 8) != 0)) {
        sbx_error_upstream(err, SBX_UP_TRANSPORT, NULL, "MCP server '%s': the URL must be http(s)",
                           cfg->name);
        return -EINVAL;
    }
    for (char **h = cfg->headers; h && *h; h++)
        if (strpbrk(*h, "\r\n") || !strchr(*h, ':')) {
            sbx_error_upstream(err, SBX_UP_TRANSPORT, NULL,
                               "MCP server '%s': invalid HTTP header line", cfg->name);
            return -EINVAL;
        }
    struct http_transport *t = calloc(1, sizeof(*t));
    if (!t) {
        sbx_error_upstream(err, SBX_UP_TRANSPORT, NULL, "out of memory");
        return -ENOMEM;
    }
    pthread_mutex_init(&t->lock, NULL);
    t->base.ops = &http_ops;
    t->owner = owner;
    t->name = strdup(cfg->name);
    t->url = strdup(cfg->url);
    t->shown_url = url_redact(cfg->url);
    bool oom = !t->name || !t->url || !t->shown_url;
    for (char **h = cfg->headers; h && *h && !oom; h++) {
        struct curl_slist *l = curl_slist_append(t->extra_headers, *h);
        if (l)
            t->extra_headers = l;
        oom = !l;
    }
    if (oom) {
        http_free(t);
        sbx_error_upstream(err, SBX_UP_TRANSPORT, NULL, "out of memory");
        return -ENOMEM;
    }
    *ret = &t->base;
    return 0;
}
