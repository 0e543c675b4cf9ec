// SPDX-License-Identifier: MIT
/*
 * server — the HTTP/1.1 front of sandboxd on libmicrohttpd. One thread per
 * connection (an execution may take seconds and must block nobody else),
 * keep-alive handled by MHD, request bodies accumulated under a hard cap
 * (413 beyond it), then handed to a route. Every response carries
 * X-Request-ID (the client's, or one we generate) and, when the server has
 * one, X-Sandboxd-Instance (the instance id, util/instance.h).
 *
 * Routes answer either a complete JSON reply or a stream (SSE): the stream
 * callback runs on the connection's own thread and may block.
 */
#ifndef SANDBOXD_HTTP_SERVER_H
#define SANDBOXD_HTTP_SERVER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct http_server;
struct http_stream;

struct http_request {
    const char *method;
    const char *path;
    const char *body; /* NUL-terminated; body_len bytes */
    size_t body_len;
    const char *request_id;
    void *conn; /* the MHD connection, for header lookups */
};

/* A header of the request (case-insensitive name), or NULL. */
const char *http_header(const struct http_request *req, const char *name);

/* Writes one chunk of a streamed body; returns <0 when the client went away. */
typedef int (*http_stream_fn)(void *userdata, struct http_stream *s);
int http_stream_write(struct http_stream *s, const char *data, size_t len);

struct http_header {
    char *name;
    char *value;
};

struct http_reply {
    int status;
    json_t *body;             /* owned; NULL for an empty body */
    char *text;               /* owned; a non-JSON body (e.g. Prometheus), used when body is NULL */
    size_t text_len;          /* bytes of text when it may hold NULs (a file); 0: strlen(text) */
    const char *content_type; /* static; default application/json */
    struct http_header headers[6];
    size_t n_headers;
    /* Streaming: when set, the body comes from stream_fn (called once, on this thread). */
    http_stream_fn stream_fn;
    void *stream_userdata;
    void (*stream_free)(void *userdata);
};

void http_reply_header(struct http_reply *r, const char *name, const char *value);
/* {"error": {"code", "message", "field"?}} with the given status. */
void http_reply_error(struct http_reply *r, int status, const char *code, const char *field,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void http_reply_done(struct http_reply *r);

/* A route fills *reply; it returns nothing (a failure is a reply too). */
typedef void (*http_route_fn)(void *userdata, const struct http_request *req,
                              struct http_reply *reply);

struct http_server_options {
    const char *host;
    uint16_t port;
    size_t max_body;
    unsigned max_connections;
    unsigned idle_timeout_s;
    const char *instance_id; /* NULL, or X-Sandboxd-Instance on every response; copied */
};

int http_server_start(const struct http_server_options *opt, http_route_fn route, void *userdata,
                      struct http_server **ret);
uint16_t http_server_port(const struct http_server *s);
void http_server_stop(struct http_server *s);

#endif
