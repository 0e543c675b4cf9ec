// SPDX-License-Identifier: MIT
/*
 * sse — the reader of Server-Sent Events (HTML Living Standard, "Server-sent
 * events", interpreting an event stream) for the answers of MCP Streamable
 * HTTP servers (transport_http.c): bytes in pieces as they arrive, lines
 * ending in CRLF, LF or CR (a CRLF may be split between two pieces), the
 * data lines of an event joined with "\n", its type, the last event id and
 * the retry time remembered. What a server sends is untrusted: a line and an
 * event's data are capped. Pure: no I/O, no logging; events go to a callback.
 */
#ifndef SANDBOXD_MCPCLIENT_SSE_H
#define SANDBOXD_MCPCLIENT_SSE_H

#include <stdbool.h>
#include <stddef.h>

#include "util/buf.h"

#define SSE_MAX_EVENT_ID 1024  /* longer ids are ignored */
#define SSE_MAX_RETRY_MS 60000 /* larger retry times are cut to this */

struct sse_reader {
    struct buf line; /* the line being read */
    struct buf data; /* the event being read */
    bool after_cr;   /* the last piece ended with CR: a LF first in the next one ends nothing */
    bool other_type; /* the event's type is neither empty nor "message" */
    char last_id[SSE_MAX_EVENT_ID + 1];
    long retry_ms; /* -1: the server sent none */
};

/* An event of type "message" (or without a type) with non-empty data (borrowed,
 * NUL-terminated, len bytes). Return true to stop reading: feeding ends there. */
typedef bool (*sse_event_fn)(void *userdata, const char *data, size_t len);

/* max caps a line and an event's data (bytes). */
void sse_reader_init(struct sse_reader *r, size_t max);
void sse_reader_done(struct sse_reader *r);
/* A new stream: forget the partial line and event, keep the last event id and retry time. */
void sse_reader_rewind(struct sse_reader *r);
/* Read n bytes of the stream. 0 when all were read, 1 when fn asked to stop (the rest is not
 * read), -E2BIG when a line or an event's data went over the cap (the stream is unusable). */
int sse_reader_feed(struct sse_reader *r, const char *p, size_t n, sse_event_fn fn, void *userdata);

#endif
