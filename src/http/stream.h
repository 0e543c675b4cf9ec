// SPDX-License-Identifier: MIT
/*
 * stream — the buffer between the producer of a streamed reply (a route's
 * http_stream_fn, on a worker thread) and libmicrohttpd's content reader (on
 * an I/O thread). The producer never blocks an I/O thread and an I/O thread
 * never blocks on the producer: the reader suspends the connection when the
 * buffer is empty and the producer resumes it when it writes.
 *
 * A reader that falls behind (a client that stops reading) must not pin the
 * producer, which runs inside a session's execution: a write waits at most
 * write_timeout for room in the bounded buffer, after which the client is
 * treated as gone and every later write fails at once.
 *
 * Two references: the producer's (http_stream_finish) and the reader's
 * (the MHD response's free callback, or http_stream_abandon when no response
 * was made). Used by http/server.c only; http_stream_write is in server.h.
 */
#ifndef SANDBOXD_HTTP_STREAM_H
#define SANDBOXD_HTTP_STREAM_H

#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

#include "http/server.h"

struct http_budget;

/* max: bytes buffered at most (one write larger than that is taken when the buffer is empty);
 * write_timeout_us: how long a write waits for room; budget (NULL: none) and owner: what is
 * buffered counts against owner's share of it until the reader takes it, and a write it has no
 * room for fails as if the client were gone. NULL when out of memory. */
struct http_stream *http_stream_new(size_t max, int64_t write_timeout_us,
                                    struct http_budget *budget, const void *owner);
/* The reader side: a chunked MHD response reading from s, on connection conn (which the
 * reader suspends while s is empty). Takes the reader's reference, also on failure (NULL). */
struct MHD_Response *http_stream_response(struct http_stream *s, struct MHD_Connection *conn);
/* The reader side when no response will be made. */
void http_stream_abandon(struct http_stream *s);
/* The producer is done: the reader ends the body once it drained the buffer. Drops the
 * producer's reference. */
void http_stream_finish(struct http_stream *s);

#endif
