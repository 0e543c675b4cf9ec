// SPDX-License-Identifier: MIT
/*
 * guard — see guard.h.
 *
 * A slow connection is ended from the guard's thread by writing a 408 to the
 * socket and shutting it down both ways; MHD then reads end-of-file and
 * closes it on its own thread, which is the only place a connection may be
 * freed. This is safe because the guard only acts on connections waiting for
 * a head or a body, when MHD has nothing of its own to write, and because
 * MHD reports the close (http_guard_close, under the guard's lock) before it
 * closes the socket, so the descriptor the guard holds is never a reused one.
 */
#include "http/guard.h"

#include <errno.h>
#include <linux/tcp.h> /* struct tcp_info with tcpi_bytes_received (glibc's lacks it) */
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <utlist.h>

#include "util/clock.h"
#include "util/log.h"
#include "util/thread.h"

#define GUARD_TICK_US 500000 /* how often connections are checked */

enum http_phase {
    PHASE_HEAD, /* waiting for a request head, or receiving one */
    PHASE_BODY, /* receiving a body */
    PHASE_BUSY, /* handling the request or sending its response */
    PHASE_CUT,  /* ended by the guard, MHD closes it */
};

struct http_conn {
    struct http_conn *prev, *next; /* utlist DL */
    int fd;
    enum http_phase phase;
    int64_t since_us;    /* PHASE_HEAD: since a head was first seen (0: none yet); BODY: head end */
    uint64_t bytes_mark; /* PHASE_HEAD: bytes received when the wait began */
};

struct http_guard {
    pthread_mutex_t lock;
    pthread_cond_t wake; /* stop (thread.stop) */
    struct http_conn *list;
    unsigned open;
    uint64_t cut_head, cut_body;
    int64_t header_us, body_us;
    const char *instance_id; /* borrowed */
    struct thread_group thread;
};

/* Bytes received on the socket so far; false when the kernel does not say. */
static bool guard_bytes_received(int fd, uint64_t *ret)
{
    struct tcp_info ti;
    socklen_t len = sizeof(ti);
    memset(&ti, 0, sizeof(ti));
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0 ||
        len < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(ti.tcpi_bytes_received))
        return false;
    *ret = ti.tcpi_bytes_received;
    return true;
}

void http_guard_refuse(int fd, int status, const char *reason, const char *code,
                       const char *message, const char *request_id, const char *instance_id)
{
    char body[512], head[512];
    int bn = snprintf(body, sizeof(body), "{\"error\":{\"code\":\"%s\",\"message\":\"%s\"}}", code,
                      message);
    if (bn < 0 || (size_t)bn >= sizeof(body))
        bn = snprintf(body, sizeof(body), "{\"error\":{\"code\":\"%s\"}}", code);
    int hn = snprintf(head, sizeof(head),
                      "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                      "Connection: close\r\n%s%.128s%s%s%.64s%s\r\n",
                      status, reason, bn, request_id ? "X-Request-ID: " : "",
                      request_id ? request_id : "", request_id ? "\r\n" : "",
                      instance_id ? "X-Sandboxd-Instance: " : "", instance_id ? instance_id : "",
                      instance_id ? "\r\n" : "");
    /* Best effort and never blocking: the connection ends either way. */
    struct iovec iov[2] = {{head, (size_t)hn}, {body, (size_t)bn}};
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 2};
    (void)sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
    (void)shutdown(fd, SHUT_RDWR); /* MHD sees end-of-file and closes the connection */
}

/* End c, which was too slow (lock held). */
static void guard_cut(struct http_guard *g, struct http_conn *c, bool head)
{
    char msg[128];
    snprintf(msg, sizeof(msg), "the request %s not complete within %lld s",
             head ? "line and headers were" : "body was",
             (long long)((head ? g->header_us : g->body_us) / 1000000));
    log_debug("http: closing a connection: %s", msg);
    http_guard_refuse(c->fd, 408, "Request Timeout", "REQUEST_TIMEOUT", msg, NULL, g->instance_id);
    c->phase = PHASE_CUT;
    if (head)
        g->cut_head++;
    else
        g->cut_body++;
}

static void guard_check(struct http_guard *g, int64_t now)
{
    for (struct http_conn *c = g->list; c; c = c->next) {
        if (c->phase == PHASE_HEAD) {
            uint64_t bytes;
            if (!c->since_us && (!guard_bytes_received(c->fd, &bytes) || bytes > c->bytes_mark))
                c->since_us = now; /* a head began (or we cannot tell: count from now) */
            if (c->since_us && now - c->since_us >= g->header_us)
                guard_cut(g, c, true);
        } else if (c->phase == PHASE_BODY && now - c->since_us >= g->body_us) {
            guard_cut(g, c, false);
        }
    }
}

static void *guard_main(void *arg)
{
    struct http_guard *g = arg;
    pthread_mutex_lock(&g->lock);
    while (thread_group_wait(&g->thread, clock_mono_us() + GUARD_TICK_US))
        guard_check(g, clock_mono_us());
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

int http_guard_new(int64_t header_timeout_us, int64_t body_timeout_us, const char *instance_id,
                   struct http_guard **ret)
{
    struct http_guard *g = calloc(1, sizeof(*g));
    if (!g)
        return -ENOMEM;
    g->header_us = header_timeout_us;
    g->body_us = body_timeout_us;
    g->instance_id = instance_id;
    pthread_mutex_init(&g->lock, NULL);
    clock_cond_init(&g->wake);
    int r = thread_group_init(&g->thread, "http guard", 1, &g->lock, &g->wake, -1);
    if (r == 0)
        r = thread_group_start(&g->thread, guard_main, g);
    if (r < 0) {
        thread_group_done(&g->thread);
        pthread_cond_destroy(&g->wake);
        pthread_mutex_destroy(&g->lock);
        free(g);
        return r;
    }
    *ret = g;
    return 0;
}

void http_guard_free(struct http_guard *g)
{
    if (!g)
        return;
    thread_group_stop(&g->thread);
    thread_group_done(&g->thread);
    while (g->list) { /* none when MHD stopped first; freed all the same */
        struct http_conn *c = g->list;
        g->list = c->next;
        free(c);
    }
    pthread_cond_destroy(&g->wake);
    pthread_mutex_destroy(&g->lock);
    free(g);
}

struct http_conn *http_guard_open(struct http_guard *g, int fd)
{
    struct http_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->fd = fd;
    c->phase = PHASE_HEAD; /* bytes_mark 0: anything received counts, even before accept */
    pthread_mutex_lock(&g->lock);
    DL_PREPEND(g->list, c);
    g->open++;
    pthread_mutex_unlock(&g->lock);
    return c;
}

void http_guard_close(struct http_guard *g, struct http_conn *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&g->lock);
    DL_DELETE(g->list, c);
    g->open--;
    pthread_mutex_unlock(&g->lock);
    free(c);
}

static void guard_set(struct http_guard *g, struct http_conn *c, enum http_phase phase,
                      int64_t since_us, uint64_t mark)
{
    pthread_mutex_lock(&g->lock);
    if (c->phase != PHASE_CUT) {
        c->phase = phase;
        c->since_us = since_us;
        c->bytes_mark = mark;
    }
    pthread_mutex_unlock(&g->lock);
}

void http_guard_head(struct http_guard *g, struct http_conn *c)
{
    if (!c)
        return;
    uint64_t mark = 0;
    /* Without the count the next head is timed from now, idle or not (documented). */
    bool known = guard_bytes_received(c->fd, &mark);
    guard_set(g, c, PHASE_HEAD, known ? 0 : clock_mono_us(), mark);
}

void http_guard_body(struct http_guard *g, struct http_conn *c)
{
    if (c)
        guard_set(g, c, PHASE_BODY, clock_mono_us(), 0);
}

void http_guard_busy(struct http_guard *g, struct http_conn *c)
{
    if (c)
        guard_set(g, c, PHASE_BUSY, 0, 0);
}

json_t *http_guard_stats(struct http_guard *g)
{
    pthread_mutex_lock(&g->lock);
    json_t *j = json_pack("{s:I, s:I, s:I}", "open", (json_int_t)g->open, "cutHead",
                          (json_int_t)g->cut_head, "cutBody", (json_int_t)g->cut_body);
    pthread_mutex_unlock(&g->lock);
    return j;
}
