// SPDX-License-Identifier: MIT
/*
 * server — see server.h.
 *
 * One request, as libmicrohttpd (0.9.75) drives it on an I/O thread:
 *   first call of the access handler (head complete): the request's context;
 *     a declared Content-Length over the cap is answered 413 here, before
 *     the body is read (MHD then discards the body and closes);
 *   upload calls: the body grows under its cap; a chunked body that crosses
 *     it cannot be answered through MHD (0.9.75 queues responses only before
 *     or after the body), so a 413 is written to the socket directly and the
 *     connection closed;
 *   final call: inline routes answer at once; the others suspend the
 *     connection and go to a worker, which fills the reply and resumes it;
 *     MHD calls the handler again, and the reply is queued there.
 * A streamed reply's producer keeps running on the worker (http/stream.c).
 *
 * Shutdown: MHD must not be stopped while a connection is suspended, so
 * stopping refuses new dispatches, waits for every job (route and producer)
 * it counted, and only then stops MHD and joins the workers.
 */
#include "http/server.h"

#include <errno.h>
#include <limits.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "http/budget.h"
#include "http/guard.h"
#include "http/stream.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/fmt.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/jdump.h"
#include "util/randid.h"
#include "util/workpool.h"

#define HTTP_RID_MAX 128
/* A file body goes to the socket through a buffer of this size (per response). */
#define HTTP_FILE_BLOCK (32u << 10)

struct http_server {
    struct MHD_Daemon *daemon;
    http_route_fn route;
    http_inline_fn inline_route;
    void *userdata;
    size_t max_body;
    size_t stream_buffer;
    int64_t stream_timeout_us;
    uint16_t port;
    char *instance_id; /* NULL or X-Sandboxd-Instance */
    struct http_guard *guard;
    struct workpool *workers;   /* one queue (FIFO), no cap but threads: connections are capped */
    struct workpool_queue jobq; /* every route and producer */
    struct http_budget *budget;
    pthread_mutex_t lock;
    pthread_cond_t cond; /* requests or jobs went down */
    unsigned requests;   /* dispatched, response not delivered yet */
    unsigned jobs;       /* dispatched to a worker, route or producer not finished */
    uint64_t too_large;
    int64_t last_warn_us; /* MHD's warnings, rate-limited */
    bool draining, stopping;
};

enum http_req_state { REQ_READING, REQ_RUNNING, REQ_READY };

/* One request: MHD's per-request context. */
struct http_req {
    struct workpool_job work; /* first: the worker hands this back */
    struct http_server *s;
    struct MHD_Connection *conn;
    struct http_conn *guarded;
    const char *method, *url; /* MHD's, valid for the request */
    struct buf body;
    enum http_req_state state;
    bool counted;               /* in s->requests */
    struct http_reply reply;    /* REQ_READY: filled by the worker */
    struct http_stream *stream; /* REQ_READY: the reader's side of a streamed reply */
    bool sealed;                /* the reply's body is final and claimed in charge */
    struct http_charge charge;  /* the reply's bytes until a response holds them */
    char rid[HTTP_RID_MAX + 1];
};

const char *http_header(const struct http_request *req, const char *name)
{
    /* Also from a worker: the connection is suspended, MHD does not touch its headers. */
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

const char *http_query(const struct http_request *req, const char *name)
{
    const char *value = NULL;
    size_t len = 0;
    if (MHD_lookup_connection_value_n(req->conn, MHD_GET_ARGUMENT_KIND, name, strlen(name), &value,
                                      &len) != MHD_YES ||
        !value)
        return NULL;
    return strlen(value) == len ? value : NULL;
}

void http_reply_header(struct http_reply *r, const char *name, const char *value)
{
    if (r->n_headers >= ARRAY_SIZE(r->headers))
        return;
    struct http_header *h = &r->headers[r->n_headers];
    h->name = strdup(name);
    h->value = strdup(value);
    if (h->name && h->value)
        r->n_headers++;
    else {
        free(h->name);
        free(h->value);
    }
}

void http_reply_file(struct http_reply *r, int fd, uint64_t len)
{
    if (r->has_file)
        close(r->file);
    r->file = fd;
    r->file_len = len;
    r->has_file = true;
}

void http_reply_download(struct http_reply *r, int fd, uint64_t len)
{
    http_reply_file(r, fd, len);
    r->content_type = "application/octet-stream";
    http_reply_header(r, "X-Content-Type-Options", "nosniff");
}

/* Refuse for the reply budget: what r held goes, its owner stays (lock-free: r is the
 * caller's). */
static void http_reply_refuse_budget(struct http_reply *r, size_t bytes)
{
    const void *owner = r->owner;
    http_reply_done(r);
    r->owner = owner;
    if (bytes)
        http_reply_error(r, 503, "REPLY_BUDGET", NULL,
                         "the reply (%zu bytes) was ready, but sandboxd holds as many bytes of "
                         "replies as it may for clients that have not read theirs; what was "
                         "asked was done, only its answer is lost; retry later",
                         bytes);
    else
        http_reply_error(r, 503, "REPLY_BUDGET", NULL,
                         "sandboxd holds as many bytes of replies as it may for clients that "
                         "have not read theirs (yours or others'); nothing was done; retry "
                         "later");
    http_reply_header(r, "Retry-After", "1");
}

bool http_reply_admit(const struct http_request *req, struct http_reply *reply, const void *owner)
{
    reply->owner = owner;
    if (!req->server || !http_budget_spent(req->server->budget, owner))
        return true;
    http_reply_refuse_budget(reply, 0);
    return false;
}

void http_reply_error(struct http_reply *r, int status, const char *code, const char *field,
                      const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = fmt_va(fmt, ap);
    va_end(ap);
    json_t *err = json_pack("{s:s, s:s}", "code", code, "message", msg ? msg : code);
    if (err && field)
        json_object_set_new(err, "field", json_string(field));
    free(msg);
    json_decref(r->body);
    r->status = status;
    r->body = err ? json_pack("{s:o}", "error", err) : NULL;
}

void http_reply_done(struct http_reply *r)
{
    json_decref(r->body);
    free(r->text);
    if (r->has_file)
        close(r->file);
    for (size_t i = 0; i < r->n_headers; i++) {
        free(r->headers[i].name);
        free(r->headers[i].value);
    }
    if (r->stream_free && r->stream_userdata)
        r->stream_free(r->stream_userdata);
    *r = (struct http_reply){0};
}

/* ---- replies ------------------------------------------------------------------------------- */

/* X-Request-ID: the client's when it is sane, else a fresh one. */
/* 0, or -errno when no id could be drawn (randid_hex() fails closed; so does the request). */
static int http_request_id(struct MHD_Connection *conn, char *out, size_t n)
{
    const char *rid = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Request-ID");
    if (rid && *rid && strlen(rid) < n) {
        bool ok = true;
        for (const char *p = rid; *p; p++)
            if ((unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e)
                ok = false;
        if (ok) {
            snprintf(out, n, "%s", rid);
            return 0;
        }
    }
    return randid_hex(out, n, 12);
}

/* The bytes a sealed reply holds (a stream claims its own as it goes). */
static size_t http_reply_bytes(const struct http_reply *r)
{
    if (r->stream_fn)
        return 0;
    if (r->has_file) /* and the block it is read through */
        return (size_t)r->file_len + (r->file_len ? HTTP_FILE_BLOCK : 0);
    if (r->text)
        return r->text_len ? r->text_len : strlen(r->text);
    return 0;
}

/* A JSON body becomes its text. */
static void http_reply_serialise(struct http_reply *reply)
{
    if (!reply->body || reply->stream_fn)
        return;
    char *data = jdump(reply->body, JSON_COMPACT, NULL);
    if (!data) {
        const void *owner = reply->owner;
        http_reply_done(reply);
        reply->owner = owner;
        reply->status = 500; /* no body: even an error's JSON could not be made */
        return;
    }
    json_decref(TAKE_PTR(reply->body));
    free(reply->text);
    reply->text = data;
    reply->text_len = 0;
    if (!reply->content_type)
        reply->content_type = "application/json";
}

/* Make req's reply final: its JSON serialised (on a worker, when the route ran on one) and its
 * bytes claimed for its owner, or the reply replaced by a 503 when they do not fit. */
static void http_seal(struct http_req *req, struct http_reply *reply)
{
    if (req->sealed)
        return;
    req->sealed = true;
    http_reply_serialise(reply);
    size_t n = http_reply_bytes(reply);
    int r = http_budget_take(req->s->budget, reply->owner, n);
    if (r == -ENOBUFS) {
        log_info("http: %s %s: a reply of %zu bytes does not fit in the reply budget", req->method,
                 req->url, n);
        http_reply_refuse_budget(reply, n);
        http_reply_serialise(reply);
        n = http_reply_bytes(reply);
        r = http_budget_take(req->s->budget, reply->owner, n); /* small: never refused */
    }
    if (r < 0) /* out of memory for the owner's entry: the reply goes out unclaimed */
        return;
    req->charge = (struct http_charge){.budget = req->s->budget, .owner = reply->owner, .bytes = n};
}

/* A buffer body and its claim, given back when libmicrohttpd frees the response. */
struct http_body {
    char *data;
    struct http_charge charge;
};

static void http_body_free(void *cls)
{
    struct http_body *b = cls;
    http_charge_release(&b->charge);
    free(b->data);
    free(b);
}

/* A file body: read as the client takes it; each block read gives its bytes back. */
struct http_file {
    int fd;
    uint64_t len;
    struct http_charge charge;
};

static ssize_t http_file_read(void *cls, uint64_t pos, char *out, size_t max)
{
    struct http_file *f = cls;
    if (pos >= f->len)
        return MHD_CONTENT_READER_END_OF_STREAM;
    size_t want = f->len - pos < max ? (size_t)(f->len - pos) : max;
    ssize_t n;
    do
        n = pread(f->fd, out, want, (off_t)pos);
    while (n < 0 && errno == EINTR);
    if (n <= 0) /* shorter than it was (the sandbox cut it), or unreadable: end the connection */
        return MHD_CONTENT_READER_END_WITH_ERROR;
    http_charge_drop(&f->charge, (size_t)n);
    return n;
}

static void http_file_free(void *cls)
{
    struct http_file *f = cls;
    http_charge_release(&f->charge);
    close(f->fd);
    free(f);
}

static struct MHD_Response *http_build_response(struct http_req *req, struct http_reply *reply)
{
    if (reply->stream_fn)
        return req->stream ? http_stream_response(TAKE_PTR(req->stream), req->conn) : NULL;
    http_seal(req, reply);
    http_reply_serialise(reply); /* an error made after the seal (small, unclaimed) */
    if (reply->has_file && reply->file_len) {
        struct http_file *f = malloc(sizeof(*f));
        if (!f)
            return NULL;
        *f = (struct http_file){.fd = reply->file, .len = reply->file_len, .charge = req->charge};
        struct MHD_Response *resp = MHD_create_response_from_callback(
            f->len, HTTP_FILE_BLOCK, http_file_read, f, http_file_free);
        if (resp) { /* the fd and the claim are the response's now */
            reply->has_file = false;
            req->charge = (struct http_charge){0};
        } else {
            free(f);
        }
        return resp;
    }
    if (!reply->text)
        return MHD_create_response_from_buffer(0, (char *)"", MHD_RESPMEM_PERSISTENT);
    struct http_body *b = malloc(sizeof(*b));
    if (!b)
        return NULL;
    size_t len = reply->text_len ? reply->text_len : strlen(reply->text);
    *b = (struct http_body){.data = reply->text, .charge = req->charge};
    struct MHD_Response *resp =
        MHD_create_response_from_buffer_with_free_callback_cls(len, b->data, http_body_free, b);
    if (resp) {
        reply->text = NULL;
        req->charge = (struct http_charge){0};
    } else {
        free(b);
    }
    return resp;
}

/* Queue reply (consumed) on req's connection; on the I/O thread. */
static enum MHD_Result http_send(struct http_req *req, struct http_reply *reply)
{
    struct http_server *s = req->s;
    struct MHD_Response *resp = http_build_response(req, reply);
    if (!resp) {
        http_reply_done(reply);
        return MHD_NO;
    }
    const char *ctype = reply->content_type ? reply->content_type : "application/json";
    if (reply->body || reply->stream_fn || reply->content_type)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    MHD_add_response_header(resp, "X-Request-ID", req->rid);
    if (s->instance_id)
        MHD_add_response_header(resp, "X-Sandboxd-Instance", s->instance_id);
    for (size_t i = 0; i < reply->n_headers; i++)
        MHD_add_response_header(resp, reply->headers[i].name, reply->headers[i].value);
    pthread_mutex_lock(&s->lock);
    bool draining = s->draining;
    pthread_mutex_unlock(&s->lock);
    if (draining) /* the client's next request goes to a fresh connection, elsewhere */
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result ret = MHD_queue_response(req->conn, (unsigned)reply->status, resp);
    MHD_destroy_response(resp);
    http_reply_done(reply);
    return ret;
}

/* ---- routes -------------------------------------------------------------------------------- */

static void http_run_route(struct http_req *req, struct http_reply *reply)
{
    struct http_server *s = req->s;
    struct http_request r = {
        .method = req->method,
        .path = req->url,
        .body = req->body.data ? req->body.data : "",
        .body_len = req->body.len,
        .request_id = req->rid,
        .conn = req->conn,
        .server = s,
    };
    s->route(s->userdata, &r, reply);
    if (!reply->status)
        http_reply_error(reply, 500, "INTERNAL", NULL, "the route produced no reply");
}

static void http_job_done(struct http_server *s)
{
    pthread_mutex_lock(&s->lock);
    s->jobs--;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

/* On a worker: run the route, hand the reply to the I/O thread, then produce the stream. */
static void http_job(struct workpool_job *w)
{
    struct http_req *req = (struct http_req *)w;
    struct http_server *s = req->s;
    struct http_reply reply = {0};
    http_run_route(req, &reply);
    http_seal(req, &reply); /* serialised and claimed here, not on the I/O thread */
    http_stream_fn fn = reply.stream_fn;
    void *userdata = TAKE_PTR(reply.stream_userdata);
    void (*userdata_free)(void *) = reply.stream_free;
    struct http_stream *st = NULL;
    if (fn &&
        !(st = http_stream_new(s->stream_buffer, s->stream_timeout_us, s->budget, reply.owner))) {
        http_reply_done(&reply);
        http_reply_error(&reply, 500, "INTERNAL", NULL, "out of memory");
        if (userdata_free)
            userdata_free(userdata);
        fn = NULL;
    }
    req->reply = reply;
    req->stream = st;
    req->state = REQ_READY;
    MHD_resume_connection(req->conn); /* req is MHD's again: not touched below */
    if (fn) {
        (void)fn(userdata, st); /* its failures went into the stream */
        http_stream_finish(st);
        if (userdata_free)
            userdata_free(userdata);
    }
    http_job_done(s);
}

/* The request is complete: answer it inline, or on a worker. */
static enum MHD_Result http_dispatch(struct http_req *req)
{
    struct http_server *s = req->s;
    struct http_reply reply = {0};
    http_guard_busy(s->guard, req->guarded);
    bool inline_ok =
        s->inline_route && s->inline_route(s->userdata, req->method, req->url ? req->url : "");
    pthread_mutex_lock(&s->lock);
    bool stopping = s->stopping;
    s->requests++;
    req->counted = true;
    if (!stopping && !inline_ok)
        s->jobs++; /* before suspending: http_server_stop() waits for it */
    pthread_mutex_unlock(&s->lock);
    if (stopping) {
        http_reply_error(&reply, 503, "SHUTTING_DOWN", NULL, "sandboxd is shutting down");
        http_reply_header(&reply, "Retry-After", "1");
        return http_send(req, &reply);
    }
    if (inline_ok) {
        http_run_route(req, &reply);
        if (reply.stream_fn) { /* a programming error of the inline table */
            log_error("http: the inline route %s %s tried to stream", req->method, req->url);
            http_reply_done(&reply);
            http_reply_error(&reply, 500, "INTERNAL", NULL, "this route cannot stream");
        }
        return http_send(req, &reply);
    }
    req->state = REQ_RUNNING;
    req->work = (struct workpool_job){.run = http_job}; /* it frees the request */
    MHD_suspend_connection(req->conn);
    int r = workpool_submit(s->workers, &s->jobq, &req->work);
    if (r == 0)
        return MHD_YES; /* the worker resumes the connection */
    req->state = REQ_READY;
    http_reply_error(&req->reply, 503, "OVERLOADED", NULL, "no worker thread could be started");
    http_reply_header(&req->reply, "Retry-After", "1");
    MHD_resume_connection(req->conn); /* MHD calls again for the reply */
    http_job_done(s);
    return MHD_YES;
}

/* ---- libmicrohttpd callbacks --------------------------------------------------------------- */

/* A body is announced by the head (Content-Length > 0, or chunked). */
static bool http_has_body(struct MHD_Connection *conn)
{
    const char *te =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
    const char *cl =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    return te || (cl && strspn(cl, "0") != strlen(cl));
}

static void http_count_too_large(struct http_server *s)
{
    pthread_mutex_lock(&s->lock);
    s->too_large++;
    pthread_mutex_unlock(&s->lock);
}

/* First call: the head is complete. */
static enum MHD_Result http_begin(struct http_server *s, struct MHD_Connection *conn,
                                  const char *url, const char *method, void **con_cls)
{
    struct http_req *req = calloc(1, sizeof(*req));
    if (!req)
        return MHD_NO;
    req->s = s;
    req->conn = conn;
    req->method = method;
    req->url = url;
    buf_init(&req->body, s->max_body);
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    req->guarded = ci ? ci->socket_context : NULL;
    *con_cls = req; /* freed by http_completed, whatever happens next */
    if (http_request_id(conn, req->rid, sizeof(req->rid)) < 0)
        return MHD_NO;
    const char *cl =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    errno = 0; /* MHD checked that it is a number; it may still not fit */
    unsigned long long declared = cl ? strtoull(cl, NULL, 10) : 0;
    if (cl && (errno == ERANGE || declared > s->max_body)) {
        /* Refused before the body is read: MHD skips "100 Continue", discards what the
         * client sends anyway and closes the connection after this answer. */
        http_count_too_large(s);
        struct http_reply reply = {0};
        http_reply_error(&reply, 413, "PAYLOAD_TOO_LARGE", NULL,
                         "the request body (%s bytes) exceeds the limit of %zu bytes", cl,
                         s->max_body);
        http_guard_busy(s->guard, req->guarded);
        return http_send(req, &reply);
    }
    if (http_has_body(conn))
        http_guard_body(s->guard, req->guarded);
    else
        http_guard_busy(s->guard, req->guarded);
    return MHD_YES;
}

static enum MHD_Result http_access(void *cls, struct MHD_Connection *conn, const char *url,
                                   const char *method, const char *version, const char *upload_data,
                                   size_t *upload_size, void **con_cls)
{
    struct http_server *s = cls;
    struct http_req *req = *con_cls;
    if (!req)
        return http_begin(s, conn, url, method, con_cls);
    if (*upload_size) {
        if (req->state == REQ_READING && buf_append(&req->body, upload_data, *upload_size) < 0) {
            http_count_too_large(s);
            char msg[96];
            snprintf(msg, sizeof(msg), "the request body exceeds the limit of %zu bytes",
                     s->max_body);
            const union MHD_ConnectionInfo *ci =
                MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
            if (ci)
                http_guard_refuse(ci->connect_fd, 413, "Content Too Large", "PAYLOAD_TOO_LARGE",
                                  msg, req->rid, s->instance_id);
            return MHD_NO; /* MHD closes the connection */
        }
        *upload_size = 0;
        return MHD_YES;
    }
    switch (req->state) {
    case REQ_READING:
        return http_dispatch(req);
    case REQ_RUNNING:
        return MHD_YES; /* not resumed yet */
    case REQ_READY:
        break;
    }
    struct http_reply reply = req->reply;
    req->reply = (struct http_reply){0};
    return http_send(req, &reply);
}

static void http_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                           enum MHD_RequestTerminationCode toe)
{
    struct http_server *s = cls;
    struct http_req *req = *con_cls;
    if (!req)
        return;
    *con_cls = NULL;
    if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
        http_guard_head(s->guard, req->guarded); /* keep-alive: the next head is timed */
    if (req->stream)                             /* the response was never made */
        http_stream_abandon(req->stream);
    http_reply_done(&req->reply);
    http_charge_release(&req->charge); /* no response took it */
    buf_free(&req->body);
    if (req->counted) {
        pthread_mutex_lock(&s->lock);
        s->requests--;
        pthread_cond_broadcast(&s->cond);
        pthread_mutex_unlock(&s->lock);
    }
    free(req);
}

static void http_notify_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                                   enum MHD_ConnectionNotificationCode toe)
{
    struct http_server *s = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        *socket_context = ci ? http_guard_open(s->guard, ci->connect_fd) : NULL;
    } else {
        http_guard_close(s->guard, *socket_context);
        *socket_context = NULL;
    }
}

static void http_mhd_log(void *cls, const char *fmt, va_list ap) _printf_(2, 0);
static void http_mhd_log(void *cls, const char *fmt, va_list ap)
{
    struct http_server *s = cls;
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0)
        return;
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    /* Most of what MHD says is about clients that left or sent garbage: not the operator's
     * concern, and a flood under attack. A full server and its own failures are, once a
     * second at most. */
    bool serious =
        strncmp(msg, "Server reached connection limit", 31) == 0 || strncmp(msg, "Failed", 6) == 0;
    int64_t now = clock_mono_us();
    pthread_mutex_lock(&s->lock);
    bool say = serious && now - s->last_warn_us >= 1000000;
    if (say)
        s->last_warn_us = now;
    pthread_mutex_unlock(&s->lock);
    if (say)
        log_warn("http: %s", msg);
    else
        log_debug("http: %s", msg);
    free(msg);
}

/* ---- the server ---------------------------------------------------------------------------- */

static unsigned http_or(unsigned v, unsigned dflt)
{
    return v ? v : dflt;
}

static void http_server_free(struct http_server *s)
{
    free(s->instance_id);
    http_budget_free(s->budget);
    workpool_free(s->workers);
    http_guard_free(s->guard);
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

int http_server_start(const struct http_server_options *opt, http_route_fn route, void *userdata,
                      struct http_server **ret)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    char port[8];
    snprintf(port, sizeof(port), "%u", opt->port);
    int gr = getaddrinfo(opt->host, port, &hints, &ai);
    if (gr != 0) {
        log_error("http: cannot resolve listen address '%s': %s", opt->host, gai_strerror(gr));
        return -EINVAL;
    }
    struct http_server *s = calloc(1, sizeof(*s));
    if (!s) {
        freeaddrinfo(ai);
        return -ENOMEM;
    }
    s->route = route;
    s->inline_route = opt->inline_route;
    s->userdata = userdata;
    s->max_body = opt->max_body;
    if (opt->instance_id && !(s->instance_id = strdup(opt->instance_id))) {
        freeaddrinfo(ai);
        free(s);
        return -ENOMEM;
    }
    s->stream_buffer = opt->stream_buffer ? opt->stream_buffer : HTTP_DEFAULT_STREAM_BUFFER;
    s->stream_timeout_us =
        (int64_t)http_or(opt->stream_timeout_ms, HTTP_DEFAULT_STREAM_TIMEOUT_MS) * 1000;
    pthread_mutex_init(&s->lock, NULL);
    clock_cond_init(&s->cond);
    int r = http_guard_new(
        (int64_t)http_or(opt->header_timeout_s, HTTP_DEFAULT_HEADER_TIMEOUT_S) * 1000000,
        (int64_t)http_or(opt->body_timeout_s, HTTP_DEFAULT_BODY_TIMEOUT_S) * 1000000,
        s->instance_id, &s->guard);
    if (r == 0)
        r = workpool_new(&(struct workpool_options){.name = "http",
                                                    .workers = http_or(opt->max_workers,
                                                                       HTTP_DEFAULT_MAX_WORKERS),
                                                    .max_jobs = UINT_MAX,
                                                    .queue_max = UINT_MAX,
                                                    .queue_running = UINT_MAX},
                         &s->workers);
    if (r == 0)
        r = http_budget_new(opt->reply_budget ? opt->reply_budget : HTTP_DEFAULT_REPLY_BUDGET,
                            opt->owner_budget ? opt->owner_budget : HTTP_DEFAULT_OWNER_BUDGET,
                            &s->budget);
    if (r < 0) {
        freeaddrinfo(ai);
        http_server_free(s);
        return log_errno(LOG_ERROR, r, "http: cannot start");
    }
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned io = http_or(opt->io_threads, ncpu > 4 ? 4 : ncpu > 1 ? (unsigned)ncpu : 1);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    struct MHD_OptionItem mo[] = {
        {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)http_mhd_log, s},
        {MHD_OPTION_SOCK_ADDR, 0, ai->ai_addr},
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)http_completed, s},
        {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)http_notify_connection, s},
        {MHD_OPTION_CONNECTION_LIMIT, http_or(opt->max_connections, HTTP_DEFAULT_MAX_CONNECTIONS),
         NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, http_or(opt->idle_timeout_s, HTTP_DEFAULT_IDLE_TIMEOUT_S),
         NULL},
        {io > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END, io, NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    s->daemon = MHD_start_daemon(flags, opt->port, NULL, NULL, http_access, s, MHD_OPTION_ARRAY, mo,
                                 MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!s->daemon) {
        http_server_free(s);
        return log_errno(LOG_ERROR, EADDRINUSE, "http: cannot listen on %s:%u", opt->host,
                         opt->port);
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : opt->port;
    *ret = s;
    return 0;
}

uint16_t http_server_port(const struct http_server *s)
{
    return s->port;
}

void http_server_drain(struct http_server *s)
{
    pthread_mutex_lock(&s->lock);
    s->draining = true;
    pthread_mutex_unlock(&s->lock);
}

int http_server_wait_idle(struct http_server *s, int64_t deadline_us)
{
    struct timespec ts = clock_deadline_ts(deadline_us);
    int r = 0;
    pthread_mutex_lock(&s->lock);
    while ((s->requests || s->jobs) && r == 0)
        if (pthread_cond_timedwait(&s->cond, &s->lock, &ts) == ETIMEDOUT &&
            (s->requests || s->jobs))
            r = -ETIMEDOUT;
    pthread_mutex_unlock(&s->lock);
    return r;
}

json_t *http_server_stats(struct http_server *s)
{
    json_t *g = http_guard_stats(s->guard);
    struct workpool_stats ws;
    workpool_stats(s->workers, &ws);
    pthread_mutex_lock(&s->lock);
    json_t *j = json_pack("{s:O, s:I, s:I, s:I, s:I, s:O, s:O, s:I, s:b}", "connections",
                          json_object_get(g, "open"), "requests", (json_int_t)s->requests, "jobs",
                          (json_int_t)s->jobs, "workers", (json_int_t)ws.threads, "workersBusy",
                          (json_int_t)ws.jobs, "cutHead", json_object_get(g, "cutHead"), "cutBody",
                          json_object_get(g, "cutBody"), "tooLarge", (json_int_t)s->too_large,
                          "draining", s->draining);
    pthread_mutex_unlock(&s->lock);
    json_decref(g);
    json_t *b = http_budget_stats(s->budget);
    if (j && b)
        json_object_update(j, b);
    json_decref(b);
    return j;
}

void http_server_stop(struct http_server *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    s->stopping = true; /* no connection is suspended for a new job from now on */
    while (s->jobs)
        pthread_cond_wait(&s->cond, &s->lock);
    pthread_mutex_unlock(&s->lock);
    /* Every job resumed its connection, and a stream's reader only suspends while its
     * producer (a job) runs: no connection is suspended, as MHD_stop_daemon requires. */
    MHD_stop_daemon(s->daemon);
    http_server_free(s);
}
