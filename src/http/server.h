// SPDX-License-Identifier: MIT
/*
 * server — the HTTP/1.1 front of sandboxd on libmicrohttpd. A few I/O
 * threads (MHD's epoll thread pool) hold every connection, so thousands of
 * idle or slow clients cost memory, not threads. Request bodies are
 * accumulated under a hard cap (413 as soon as the cap is known to be
 * exceeded), slow heads and bodies are cut (http/guard.c), and every
 * response carries X-Request-ID (the client's, or one we generate) and,
 * when the server has one, X-Sandboxd-Instance (the instance id,
 * util/instance.h).
 *
 * A route runs on a bounded pool of worker threads (util/workpool.c) while
 * its connection is suspended, so a route may block for as long as its work
 * takes; routes the caller declares cheap (http_inline_fn) answer on the I/O
 * thread. Routes answer either a complete reply or a stream (SSE), whose
 * producer runs on the worker and never waits long for a slow client
 * (http/stream.c), or a file read from its descriptor as the client takes
 * it. Every reply's bytes count against the reply budget (http/budget.h)
 * from the moment the route built them until libmicrohttpd frees them (a
 * file and a stream: until the client took them), so clients that do not
 * read cannot grow the process without bound. Draining makes every response
 * close its connection; stopping waits for every route and producer before
 * it returns.
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
    void *conn;                 /* the MHD connection, for header lookups */
    struct http_server *server; /* for http_reply_admit() */
};

/* A header of the request (case-insensitive name), or NULL. */
const char *http_header(const struct http_request *req, const char *name);
/* A query argument of the request (percent-decoded, '+' as a space), or NULL; also NULL when
 * the decoded value holds a NUL byte, which no argument may carry. */
const char *http_query(const struct http_request *req, const char *name);

/* Produces a streamed body with http_stream_write; runs once, on a worker thread. */
typedef int (*http_stream_fn)(void *userdata, struct http_stream *s);
/* Queue one chunk of a streamed body; never blocks longer than the server's stream write
 * timeout. 0, or <0 when the client went away or stopped reading (it is then treated as gone:
 * every later write fails at once, and the producer should just finish its work). */
int http_stream_write(struct http_stream *s, const char *data, size_t len);
/* One Server-Sent Event: "event: <event>\ndata: <data as compact JSON>\n\n" (compact JSON is
 * one line: strings escape their newlines). Caller frees; its length in *ret_len (may be
 * NULL). NULL when out of memory or data cannot be encoded. */
char *http_sse_event(const char *event, const json_t *data, size_t *ret_len);

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
    /* Whose share of the reply budget the body counts against (http/budget.h): a tenant, or
     * NULL (the total only). Compared by pointer; must outlive the server. */
    const void *owner;
    /* A regular file sent as the body (http_reply_file): file_len bytes from offset 0, read
     * from the descriptor as the client takes them; used when body and text are NULL. */
    int file;
    uint64_t file_len;
    bool has_file;
    /* Streaming: when set, the body comes from stream_fn (called once, on a worker thread,
     * after the headers were queued); stream_free(stream_userdata) follows it. */
    http_stream_fn stream_fn;
    void *stream_userdata;
    void (*stream_free)(void *userdata);
};

void http_reply_header(struct http_reply *r, const char *name, const char *value);
/* The body is the first len bytes of the regular file fd (taken: closed with the reply). The
 * file may change meanwhile: a body that ends early closes the connection, one that grew is
 * cut at len. */
void http_reply_file(struct http_reply *r, int fd, uint64_t len);
/* http_reply_file(fd, len) as application/octet-stream, which a browser must not sniff into
 * something it would run: a file of a sandbox, downloaded (the route sets the status). */
void http_reply_download(struct http_reply *r, int fd, uint64_t len);
/* The reply's bytes count against owner's share of the reply budget (and the total). False,
 * with reply filled as 503 REPLY_BUDGET and Retry-After, when the total or that share is
 * already spent by replies their clients have not read: refuse the work before doing it. A
 * reply that would cross the budget once built is refused the same way by the server. */
bool http_reply_admit(const struct http_request *req, struct http_reply *reply, const void *owner);
/* {"error": {"code", "message", "field"?}} with the given status. */
void http_reply_error(struct http_reply *r, int status, const char *code, const char *field,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void http_reply_done(struct http_reply *r);

/* A route fills *reply; it returns nothing (a failure is a reply too). It runs on a worker
 * thread and may block; req and its strings are valid until it returns. */
typedef void (*http_route_fn)(void *userdata, const struct http_request *req,
                              struct http_reply *reply);
/* Does the route of (method, path) answer at once, without waiting for anything but short
 * locks? Those run on the I/O thread, which saves two thread hand-overs; they must not
 * stream. */
typedef bool (*http_inline_fn)(void *userdata, const char *method, const char *path);

/* Defaults of http_server_options (used for zeros). The first four are serve's too, which
 * --help spells: plain literals. */
#define HTTP_DEFAULT_MAX_CONNECTIONS   10000
#define HTTP_DEFAULT_IDLE_TIMEOUT_S    120
#define HTTP_DEFAULT_HEADER_TIMEOUT_S  10
#define HTTP_DEFAULT_BODY_TIMEOUT_S    30
#define HTTP_DEFAULT_MAX_WORKERS       256u
#define HTTP_DEFAULT_STREAM_BUFFER     (1u << 20)
#define HTTP_DEFAULT_STREAM_TIMEOUT_MS 1000u
#define HTTP_DEFAULT_REPLY_BUDGET      (256u << 20)
#define HTTP_DEFAULT_OWNER_BUDGET      (128u << 20)

struct http_server_options {
    const char *host;
    uint16_t port;
    size_t max_body;
    unsigned max_connections;    /* open connections at most; more wait in the listen backlog */
    unsigned idle_timeout_s;     /* a connection with no traffic: keep-alive, unread responses */
    unsigned header_timeout_s;   /* request line + headers, from their first byte */
    unsigned body_timeout_s;     /* the body, from the end of the headers */
    unsigned io_threads;         /* MHD's epoll threads (0: one per core, at most 4) */
    unsigned max_workers;        /* threads running routes and stream producers */
    size_t stream_buffer;        /* bytes a stream buffers for a slow client */
    unsigned stream_timeout_ms;  /* how long a stream write waits for a full buffer to drain */
    http_inline_fn inline_route; /* NULL: every route runs on a worker */
    const char *instance_id;     /* NULL, or X-Sandboxd-Instance on every response; copied */
    size_t reply_budget;         /* bytes of replies held for clients, all together */
    size_t owner_budget;         /* the same, for one owner (http_reply.owner) */
};

/* route and inline_route get userdata, which must outlive the server. Raises nothing itself:
 * the caller sizes RLIMIT_NOFILE for max_connections. */
int http_server_start(const struct http_server_options *opt, http_route_fn route, void *userdata,
                      struct http_server **ret);
uint16_t http_server_port(const struct http_server *s);
/* From now on every response closes its connection (clients reconnect elsewhere). */
void http_server_drain(struct http_server *s);
/* Wait until no request is being handled and no response or stream is being sent: 0, or
 * -ETIMEDOUT at deadline_us (monotonic). Idle keep-alive connections do not count. */
int http_server_wait_idle(struct http_server *s, int64_t deadline_us);
/* {"connections", "requests" (in flight), "workers", "workersBusy", "cutHead", "cutBody",
 * "tooLarge", and the reply budget's "replyBytes", "replyBudgetBytes",
 * "tenantReplyBudgetBytes", "replyRefused"}. */
json_t *http_server_stats(struct http_server *s);
/* Waits for every running route and stream producer (end what they wait for first), then
 * closes every connection and frees. NULL-safe. */
void http_server_stop(struct http_server *s);

#endif
