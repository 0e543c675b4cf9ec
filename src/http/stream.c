// SPDX-License-Identifier: MIT
/*
 * stream — see stream.h.
 *
 * Locking: s->lock is taken before libmicrohttpd's own locks (the reader
 * suspends and the producer resumes the connection while holding it); MHD
 * calls the reader with the response's mutex held and the free callback
 * with no lock held, so the order is the same everywhere. The connection
 * stays valid while it is suspended (MHD neither reads it nor frees it), and
 * only a suspended connection is ever resumed here.
 */
#include "http/stream.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http/budget.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/jdump.h"
#include "util/log.h"

struct http_stream {
    pthread_mutex_t lock;
    pthread_cond_t room; /* the reader took data, or left */
    struct buf data;     /* data.data[off..data.len) is written and not read yet */
    size_t off;
    size_t max;
    int64_t write_timeout_us;
    struct MHD_Connection *conn; /* the reader's connection, NULL before and after */
    bool suspended;              /* the reader suspended conn and waits for data */
    bool done;                   /* the producer finished */
    bool gone;                   /* the reader left, or was too slow */
    unsigned refs;
    struct http_charge charge; /* the bytes written and not read yet, on the reply budget */
};

struct http_stream *http_stream_new(size_t max, int64_t write_timeout_us,
                                    struct http_budget *budget, const void *owner)
{
    struct http_stream *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    /* The bound is enforced by http_stream_write (max, or one event larger than that when
     * nothing else is buffered: producers write whole events, each already bounded by the
     * output limits of what produced it), not by the buffer's own cap. */
    buf_init(&s->data, SIZE_MAX / 2);
    s->max = max;
    s->write_timeout_us = write_timeout_us;
    s->refs = 2;
    s->charge = (struct http_charge){.budget = budget, .owner = owner};
    pthread_mutex_init(&s->lock, NULL);
    clock_cond_init(&s->room);
    return s;
}

static void http_stream_unref_locked(struct http_stream *s)
{
    bool last = --s->refs == 0;
    pthread_mutex_unlock(&s->lock);
    if (!last)
        return;
    http_charge_release(&s->charge);
    buf_free(&s->data);
    pthread_cond_destroy(&s->room);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* Wake the reader if it waits for data (lock held). */
static void http_stream_wake_locked(struct http_stream *s)
{
    if (!s->suspended)
        return;
    s->suspended = false;
    MHD_resume_connection(s->conn);
}

/* Must a write of len wait (lock held)? */
static bool http_stream_full(const struct http_stream *s, size_t len)
{
    size_t pending = s->data.len - s->off;
    return pending && pending + len > s->max;
}

int http_stream_write(struct http_stream *s, const char *data, size_t len)
{
    int64_t deadline = clock_mono_us() + s->write_timeout_us;
    struct timespec ts = clock_deadline_ts(deadline);
    int r = 0;
    pthread_mutex_lock(&s->lock);
    while (!s->gone && http_stream_full(s, len)) {
        if (pthread_cond_timedwait(&s->room, &s->lock, &ts) == ETIMEDOUT && !s->gone &&
            http_stream_full(s, len)) {
            /* The client stopped reading: it is treated as gone, so that the producer (an
             * execution, with its own time limit) is never held by it. */
            log_info("http: a stream's client read nothing for %lld ms with %zu bytes waiting; "
                     "treating it as gone",
                     (long long)(s->write_timeout_us / 1000), s->data.len - s->off);
            s->gone = true;
        }
    }
    if (!s->gone && s->charge.budget &&
        http_budget_take(s->charge.budget, s->charge.owner, len) < 0) {
        /* The replies nobody reads fill the budget: this client is one of them, or waits
         * behind them; either way the producer must not hold what it cannot send. */
        log_info("http: a stream's %zu bytes do not fit in the reply budget; treating its "
                 "client as gone",
                 len);
        s->gone = true;
    }
    if (s->gone) {
        r = -EPIPE;
    } else {
        s->charge.bytes += s->charge.budget ? len : 0;
        buf_consume(&s->data, s->off); /* one move per write, not per read */
        s->off = 0;
        if ((r = buf_append(&s->data, data, len)) == 0)
            http_stream_wake_locked(s);
        else
            http_charge_drop(&s->charge, len);
    }
    pthread_mutex_unlock(&s->lock);
    return r;
}

static ssize_t http_stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
    struct http_stream *s = cls;
    pthread_mutex_lock(&s->lock);
    ssize_t n;
    size_t pending = s->data.len - s->off;
    if (pending) {
        n = (ssize_t)(pending < max ? pending : max);
        memcpy(out, s->data.data + s->off, (size_t)n);
        s->off += (size_t)n;
        http_charge_drop(&s->charge, (size_t)n);
        if (s->off == s->data.len) {
            buf_reset(&s->data);
            s->off = 0;
        }
        pthread_cond_broadcast(&s->room);
    } else if (s->done) {
        n = MHD_CONTENT_READER_END_OF_STREAM;
    } else {
        /* Nothing yet: returning 0 without suspending would make MHD call again at once. */
        s->suspended = true;
        MHD_suspend_connection(s->conn);
        n = 0;
    }
    pthread_mutex_unlock(&s->lock);
    return n;
}

void http_stream_abandon(struct http_stream *s)
{
    pthread_mutex_lock(&s->lock);
    s->gone = true;
    s->conn = NULL;
    s->suspended = false;
    pthread_cond_broadcast(&s->room);
    http_stream_unref_locked(s);
}

static void http_stream_read_free(void *cls)
{
    http_stream_abandon(cls);
}

struct MHD_Response *http_stream_response(struct http_stream *s, struct MHD_Connection *conn)
{
    pthread_mutex_lock(&s->lock);
    s->conn = conn;
    pthread_mutex_unlock(&s->lock);
    struct MHD_Response *resp = MHD_create_response_from_callback(
        MHD_SIZE_UNKNOWN, 16384, http_stream_read, s, http_stream_read_free);
    if (!resp)
        http_stream_abandon(s);
    return resp;
}

void http_stream_finish(struct http_stream *s)
{
    pthread_mutex_lock(&s->lock);
    s->done = true;
    http_stream_wake_locked(s);
    http_stream_unref_locked(s);
}

char *http_sse_event(const char *event, const json_t *data, size_t *ret_len)
{
    char *text = jdump(data, JSON_COMPACT, NULL);
    if (!text)
        return NULL;
    char *ev = NULL;
    int n = asprintf(&ev, "event: %s\ndata: %s\n\n", event, text);
    free(text);
    if (n < 0)
        return NULL;
    if (ret_len)
        *ret_len = (size_t)n;
    return ev;
}
