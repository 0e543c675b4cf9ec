// SPDX-License-Identifier: MIT
/*
 * workers — the bounded thread pool on which the HTTP server runs routes that
 * may block (an execution takes seconds, a session call minutes) and the
 * producers of streamed replies, so that libmicrohttpd's few I/O threads
 * never wait for a sandbox. Threads start on demand up to a maximum and
 * live until the pool is freed; work beyond the maximum waits in FIFO order.
 * The queue needs no bound of its own: each item is a suspended connection,
 * and connections are capped by the server.
 *
 * Used by http/server.c only. Thread-safe.
 */
#ifndef SANDBOXD_HTTP_WORKERS_H
#define SANDBOXD_HTTP_WORKERS_H

#include <stdint.h>

/* One unit of work, embedded in the caller's object (no allocation per item). */
struct http_work {
    struct http_work *next;
    void (*fn)(struct http_work *w); /* runs on a pool thread; may free its container */
};

struct http_workers;

/* 0, or -ENOMEM. No thread starts before the first item. */
int http_workers_new(unsigned max_threads, struct http_workers **ret);
/* Queue w (borrowed until w->fn is called). 0; -EAGAIN when no thread exists and none could be
 * started (w was not queued); -ESHUTDOWN after http_workers_free() began. */
int http_workers_submit(struct http_workers *p, struct http_work *w);
/* Items queued or running now, and threads started so far. */
void http_workers_counts(struct http_workers *p, unsigned *ret_busy, unsigned *ret_threads);
/* Wait until nothing is queued or running: 0, or -ETIMEDOUT at deadline_us (monotonic). */
int http_workers_wait_idle(struct http_workers *p, int64_t deadline_us);
/* Runs what is queued, waits for what runs, joins every thread, frees. NULL-safe. */
void http_workers_free(struct http_workers *p);

#endif
