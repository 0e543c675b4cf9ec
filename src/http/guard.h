// SPDX-License-Identifier: MIT
/*
 * guard — time limits on what a client sends, which libmicrohttpd does not
 * have: its only timeout is inactivity, so a client trickling one header
 * byte every few seconds keeps a connection forever. The guard tracks every
 * connection and a thread closes, with a 408, one whose request head
 * (request line and headers) is not complete header_timeout after its first
 * byte arrived, or whose body is not complete body_timeout after its head.
 * A connection with nothing received since its last response is idle, not
 * slow: MHD's inactivity timeout ends it. A request being handled or a
 * response being sent is not the guard's business.
 *
 * "First byte" comes from the kernel (TCP_INFO's bytes received), because
 * MHD gives no sign of a request before its request line is complete.
 *
 * Used by http/server.c from MHD's callbacks. Thread-safe.
 */
#ifndef SANDBOXD_HTTP_GUARD_H
#define SANDBOXD_HTTP_GUARD_H

#include <jansson.h>
#include <stdint.h>

struct http_guard;
struct http_conn; /* one tracked connection, owned by the guard */

/* Starts the guard's thread. 0, or -errno. */
/* instance_id: NULL, or the X-Sandboxd-Instance of the refusals the guard writes (borrowed; must
 * outlive the guard). */
int http_guard_new(int64_t header_timeout_us, int64_t body_timeout_us, const char *instance_id,
                   struct http_guard **ret);
/* Stops the thread and frees; every connection must be closed (MHD stopped). NULL-safe. */
void http_guard_free(struct http_guard *g);

/* A new connection on socket fd, waiting for its first request head. NULL when out of memory
 * (the connection then goes unguarded). */
struct http_conn *http_guard_open(struct http_guard *g, int fd);
/* The connection is closing; c is freed. Called before MHD closes the socket, so the guard
 * never touches a socket number that was reused. NULL-safe. */
void http_guard_close(struct http_guard *g, struct http_conn *c);
/* A response was sent: wait for the next request head. NULL-safe. */
void http_guard_head(struct http_guard *g, struct http_conn *c);
/* The head is complete and a body follows. NULL-safe. */
void http_guard_body(struct http_guard *g, struct http_conn *c);
/* The request is complete: no limit of the guard applies until the next http_guard_head().
 * NULL-safe. */
void http_guard_busy(struct http_guard *g, struct http_conn *c);

/* Answer on socket fd with a complete JSON error response (Connection: close) and shut it down
 * both ways, without blocking and without MHD: for refusals MHD cannot queue (while it is
 * reading a request). Best effort: the connection ends either way. */
/* message: plain text without quotes or backslashes; request_id, instance_id: NULL, or printable
 * ASCII. */
void http_guard_refuse(int fd, int status, const char *reason, const char *code,
                       const char *message, const char *request_id, const char *instance_id);

/* {"open": n, "cutHead": n, "cutBody": n}. */
json_t *http_guard_stats(struct http_guard *g);

#endif
