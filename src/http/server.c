// SPDX-License-Identifier: MIT
/*
 * server — see server.h.
 *
 * Streams: a route that streams returns a producer function. The server runs
 * it on its own thread writing into a pipe, and MHD's content reader (on the
 * connection thread) blocks on the pipe's read end. When the client goes
 * away MHD frees the reader, the read end closes, and the producer's next
 * write fails with EPIPE, which is how it learns to stop.
 */
#include "http/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/fdio.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/fmt.h"
#include "util/jdump.h"

struct http_server {
    struct MHD_Daemon *daemon;
    http_route_fn route;
    void *userdata;
    size_t max_body;
    uint16_t port;
};

struct http_conn_ctx {
    struct buf body;
    bool too_large;
};

struct http_stream {
    int fd; /* write end */
};

struct http_stream_job {
    http_stream_fn fn;
    void *userdata;
    void (*free_fn)(void *);
    struct http_stream stream;
};

const char *http_header(const struct http_request *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
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
    for (size_t i = 0; i < r->n_headers; i++) {
        free(r->headers[i].name);
        free(r->headers[i].value);
    }
    if (r->stream_free && r->stream_userdata)
        r->stream_free(r->stream_userdata);
    *r = (struct http_reply){0};
}

int http_stream_write(struct http_stream *s, const char *data, size_t len)
{
    return fd_write_all(s->fd, data, len, 0);
}

static void *http_stream_thread(void *arg)
{
    struct http_stream_job *job = arg;
    (void)job->fn(job->userdata, &job->stream);
    close(job->stream.fd);
    if (job->free_fn)
        job->free_fn(job->userdata);
    free(job);
    return NULL;
}

static ssize_t http_stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    int fd = (int)(intptr_t)cls;
    for (;;) {
        ssize_t n = read(fd, buf, max);
        if (n > 0)
            return n;
        if (n == 0)
            return MHD_CONTENT_READER_END_OF_STREAM;
        if (errno != EINTR)
            return MHD_CONTENT_READER_END_WITH_ERROR;
    }
}

static void http_stream_read_free(void *cls)
{
    close((int)(intptr_t)cls);
}

static void http_make_request_id(char *out, size_t n)
{
    unsigned char raw[12];
    if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
        memset(raw, 0, sizeof(raw)); /* ids are labels, not secrets */
    static const char hex[] = "0123456789abcdef";
    size_t k = 0;
    for (size_t i = 0; i < sizeof(raw) && k + 2 < n; i++) {
        out[k++] = hex[raw[i] >> 4];
        out[k++] = hex[raw[i] & 15];
    }
    out[k] = '\0';
}

static struct MHD_Response *http_build_response(struct http_reply *reply)
{
    if (reply->stream_fn) {
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
            return NULL;
        struct http_stream_job *job = calloc(1, sizeof(*job));
        if (!job) {
            close(p[0]);
            close(p[1]);
            return NULL;
        }
        *job = (struct http_stream_job){.fn = reply->stream_fn,
                                        .userdata = reply->stream_userdata,
                                        .free_fn = reply->stream_free,
                                        .stream = {.fd = p[1]}};
        pthread_t t;
        if (pthread_create(&t, NULL, http_stream_thread, job) != 0) {
            free(job);
            close(p[0]);
            close(p[1]);
            return NULL;
        }
        pthread_detach(t);
        reply->stream_userdata = NULL; /* the thread owns it now */
        struct MHD_Response *resp =
            MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, http_stream_read,
                                              (void *)(intptr_t)p[0], http_stream_read_free);
        if (!resp)
            close(p[0]);
        return resp;
    }
    char *data = NULL;
    size_t len = 0;
    if (reply->body) {
        data = jdump(reply->body, JSON_COMPACT, NULL);
        if (!data)
            return NULL;
        len = strlen(data);
    } else if (reply->text) {
        data = TAKE_PTR(reply->text);
        len = strlen(data);
    }
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        len, data ? data : (char *)"", data ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!resp)
        free(data);
    return resp;
}

static enum MHD_Result http_send(struct MHD_Connection *conn, struct http_reply *reply,
                                 const char *request_id)
{
    struct MHD_Response *resp = http_build_response(reply);
    if (!resp) {
        http_reply_done(reply);
        return MHD_NO;
    }
    const char *ctype = reply->content_type ? reply->content_type : "application/json";
    if (reply->body || reply->stream_fn || reply->content_type)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    MHD_add_response_header(resp, "X-Request-ID", request_id);
    for (size_t i = 0; i < reply->n_headers; i++)
        MHD_add_response_header(resp, reply->headers[i].name, reply->headers[i].value);
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)reply->status, resp);
    MHD_destroy_response(resp);
    http_reply_done(reply);
    return ret;
}

/* X-Request-ID: the client's when it is sane, else a fresh one. */
static void http_request_id(struct MHD_Connection *conn, char *out, size_t n)
{
    const char *rid = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Request-ID");
    if (rid && *rid && strlen(rid) < n) {
        bool ok = true;
        for (const char *p = rid; *p; p++)
            if ((unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e)
                ok = false;
        if (ok) {
            snprintf(out, n, "%s", rid);
            return;
        }
    }
    http_make_request_id(out, n);
}

static enum MHD_Result http_access(void *cls, struct MHD_Connection *conn, const char *url,
                                   const char *method, const char *version, const char *upload_data,
                                   size_t *upload_size, void **con_cls)
{
    struct http_server *s = cls;
    struct http_conn_ctx *ctx = *con_cls;
    char rid[129];
    if (!ctx) {
        ctx = calloc(1, sizeof(*ctx));
        if (!ctx)
            return MHD_NO;
        buf_init(&ctx->body, s->max_body);
        *con_cls = ctx;
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > s->max_body)
            ctx->too_large = true;
        return MHD_YES;
    }
    if (*upload_size) {
        if (!ctx->too_large && buf_append(&ctx->body, upload_data, *upload_size) < 0)
            ctx->too_large = true;
        *upload_size = 0;
        return MHD_YES;
    }
    http_request_id(conn, rid, sizeof(rid));
    struct http_reply reply = {0};
    if (ctx->too_large) {
        http_reply_error(&reply, 413, "PAYLOAD_TOO_LARGE", NULL,
                         "request body exceeds the limit of %zu bytes", s->max_body);
        return http_send(conn, &reply, rid);
    }
    struct http_request req = {
        .method = method,
        .path = url,
        .body = ctx->body.data ? ctx->body.data : "",
        .body_len = ctx->body.len,
        .request_id = rid,
        .conn = conn,
    };
    s->route(s->userdata, &req, &reply);
    if (!reply.status)
        http_reply_error(&reply, 500, "INTERNAL", NULL, "the route produced no reply");
    return http_send(conn, &reply, rid);
}

static void http_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                           enum MHD_RequestTerminationCode toe)
{
    struct http_conn_ctx *ctx = *con_cls;
    if (!ctx)
        return;
    buf_free(&ctx->body);
    free(ctx);
    *con_cls = NULL;
}

static void http_mhd_log(void *cls, const char *fmt, va_list ap) _printf_(2, 0);
static void http_mhd_log(void *cls, const char *fmt, va_list ap)
{
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0)
        return;
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    log_warn("http: %s", msg);
    free(msg);
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
    s->userdata = userdata;
    s->max_body = opt->max_body;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_POLL | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    s->daemon = MHD_start_daemon(
        flags, opt->port, NULL, NULL, http_access, s, MHD_OPTION_EXTERNAL_LOGGER, http_mhd_log,
        NULL, MHD_OPTION_SOCK_ADDR, ai->ai_addr, MHD_OPTION_NOTIFY_COMPLETED, http_completed, s,
        MHD_OPTION_CONNECTION_LIMIT, opt->max_connections ? opt->max_connections : 1024u,
        MHD_OPTION_CONNECTION_TIMEOUT, opt->idle_timeout_s ? opt->idle_timeout_s : 120u,
        MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!s->daemon) {
        free(s);
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

void http_server_stop(struct http_server *s)
{
    if (!s)
        return;
    MHD_stop_daemon(s->daemon);
    free(s);
}
