// SPDX-License-Identifier: MIT
/*
 * relay — the bytes of an allowed connection (proxy_int.h): bounded buffers
 * each way, back-pressure (a side is read only while its buffer has room),
 * each side's end passed on once its data is through, the request body of a
 * plain request followed to its end, and every byte counted against the
 * tap's cap. Runs on the proxy's loop only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "egress/proxy_int.h"
#include "util/clock.h"

/* ---- buffers ------------------------------------------------------------------------------ */

int egress_ring_init(struct egress_ring *r, size_t cap)
{
    r->data = malloc(cap);
    r->cap = r->data ? cap : 0;
    r->off = r->len = 0;
    return r->data ? 0 : -ENOMEM;
}

size_t egress_ring_room(struct egress_ring *r)
{
    if (r->off && r->off + r->len == r->cap) {
        memmove(r->data, r->data + r->off, r->len);
        r->off = 0;
    }
    return r->cap - r->off - r->len;
}

void egress_ring_consume(struct egress_ring *r, size_t n)
{
    r->off += n;
    r->len -= n;
    if (!r->len)
        r->off = 0;
}

/* read() into the free end: >0 bytes, 0 at EOF, -EAGAIN, or -errno. */
ssize_t egress_ring_read(struct egress_ring *r, int fd)
{
    size_t room = egress_ring_room(r);
    if (!room)
        return -EAGAIN;
    ssize_t n;
    do
        n = read(fd, r->data + r->off + r->len, room);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return -errno;
    r->len += (size_t)n;
    return n;
}

ssize_t egress_send(int fd, const char *data, size_t len)
{
    ssize_t n;
    do
        n = send(fd, data, len, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n < 0 ? -errno : n;
}

/* ---- the byte cap --------------------------------------------------------------------------- */

static void conn_count(struct egress_conn *c, bool up, size_t n)
{
    struct egress_tap *t = c->tap;
    if (up) {
        c->up += n;
        atomic_fetch_add(&t->up, n);
    } else {
        c->down += n;
        atomic_fetch_add(&t->down, n);
    }
    c->deadline_us = clock_mono_us() + EGRESS_IDLE_US;
    uint64_t max = c->p->max_bytes;
    if (!max || atomic_load(&t->up) + atomic_load(&t->down) <= max || atomic_load(&t->over))
        return;
    /* Over the cap: every relay of this tap ends now, and later requests are refused. */
    atomic_store(&t->over, true);
    for (struct egress_conn *k = t->conns, *next; k; k = next) {
        next = k->next;
        if (!LIFECYCLE_IN(k->st, CS_RELAY, CS_CONNECT, CS_HELLO))
            continue;
        egress_conn_why(k, "the execution's egress byte cap (%llu bytes) is reached",
                        (unsigned long long)max);
        k->denied = true;
        egress_tap_deny(t, EGRESS_DENY_LIMIT);
        egress_conn_close(k);
    }
}

/* Read what the sandbox sent into cin: the count of new bytes (*ret_before: where they
 * start), 0 at its end, or -1 when nothing came now or the connection failed (then closed). */
ssize_t egress_conn_read_client(struct egress_conn *c, size_t *ret_before)
{
    *ret_before = c->cin.len;
    ssize_t n = egress_ring_read(&c->cin, c->cfd);
    if (n < 0 && n != -EAGAIN)
        egress_conn_close(c);
    return n < 0 ? -1 : n;
}

/* ---- relaying ------------------------------------------------------------------------------- */

static void conn_relay_client_in(struct egress_conn *c)
{
    size_t before;
    ssize_t n = egress_conn_read_client(c, &before);
    c->c_eof |= n == 0;
    if (n <= 0)
        return;
    if (c->tunnel || c->body_done)
        return;
    size_t used;
    bool done;
    if (egress_body_feed(&c->parser, c->cin.data + c->cin.off + before, (size_t)n, &used, &done) <
        0) {
        egress_conn_why(c, "the request body is malformed");
        egress_conn_close(c);
        return;
    }
    if (done) {
        c->cin.len = before + used; /* a pipelined request goes nowhere */
        c->body_done = true;
    }
}

/* Send data[0..len) to fd as far as it goes now: the bytes sent, or -1 when the connection
 * was closed meanwhile (a failed send). Not counted: the caller counts what it sent. */
static ssize_t conn_send(struct egress_conn *c, int fd, bool up, const char *data, size_t len)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = egress_send(fd, data + done, len - done);
        if (n == -EAGAIN)
            break;
        if (n < 0) {
            if (up)
                egress_conn_why(c, "the upstream connection failed: %s", strerror((int)-n));
            egress_conn_close(c); /* down: the sandbox went away */
            return -1;
        }
        done += (size_t)n;
    }
    return (ssize_t)done;
}

/* conn_send, counting what went: -1 when the connection was closed meanwhile (a failed send,
 * or the byte cap). */
static ssize_t conn_push(struct egress_conn *c, int fd, bool up, const char *data, size_t len)
{
    ssize_t n = conn_send(c, fd, up, data, len);
    if (n > 0)
        conn_count(c, up, (size_t)n);
    return egress_conn_closed(c) ? -1 : n;
}

static size_t conn_min(size_t a, size_t b)
{
    return a < b ? a : b;
}

static void conn_relay_upstream_out(struct egress_conn *c)
{
    if (c->u_hup) {
        /* Nothing can reach an upstream that hung up. */
        c->out_off = c->out_len;
        c->cin.len = 0;
        return;
    }
    ssize_t n = conn_send(c, c->ufd, true, c->out + c->out_off, c->out_len - c->out_off);
    if (n < 0)
        return;
    /* The operator's injected lines are sent but not counted: the sandbox sees its counts, and
     * they would tell it the length of the secret. The first out_len - out_hidden bytes count,
     * wherever in the head the lines sit. */
    size_t shown = c->out_len - c->out_hidden;
    size_t counted = conn_min(c->out_off + (size_t)n, shown) - conn_min(c->out_off, shown);
    c->out_off += (size_t)n;
    if (counted) {
        conn_count(c, true, counted);
        if (egress_conn_closed(c))
            return;
    } else if (n) {
        c->deadline_us = clock_mono_us() + EGRESS_IDLE_US;
    }
    if (c->out_off < c->out_len)
        return;
    n = conn_push(c, c->ufd, true, c->cin.data + c->cin.off, c->cin.len);
    if (n > 0)
        egress_ring_consume(&c->cin, (size_t)n);
}

static void conn_relay_upstream_in(struct egress_conn *c)
{
    ssize_t n = egress_ring_read(&c->uin, c->ufd);
    if (n == -EAGAIN)
        return;
    if (n < 0) {
        egress_conn_why(c, "the upstream connection failed: %s", strerror((int)-n));
        egress_conn_close(c);
    } else if (n == 0) {
        c->u_eof = true;
    }
}

static void conn_relay_client_out(struct egress_conn *c)
{
    for (;;) {
        if (!c->uin.len && c->u_hup && !c->u_eof) {
            /* What a hung-up upstream left is all in the kernel's buffer already. */
            conn_relay_upstream_in(c);
            if (egress_conn_closed(c))
                return;
            if (!c->uin.len)
                c->u_eof = true;
        }
        if (!c->uin.len)
            return;
        ssize_t n = conn_push(c, c->cfd, false, c->uin.data + c->uin.off, c->uin.len);
        if (n < 0)
            return;
        egress_ring_consume(&c->uin, (size_t)n);
        if (c->uin.len)
            return; /* the sandbox reads slower: wait until it can take more */
    }
}

/* The upstream hung up (both directions): stop watching it, since epoll would report the
 * hang-up again and again while its last bytes wait for room in uin. */
static void conn_upstream_hup(struct egress_conn *c)
{
    if (c->u_hup || c->ufd < 0)
        return;
    c->u_hup = true;
    c->u_shut = true;
    (void)epoll_ctl(c->p->epfd, EPOLL_CTL_DEL, c->ufd, NULL);
    c->ev_u = 0;
}

/* Pass each side's end on once its data is through; close when both are done. */
static void conn_relay_ends(struct egress_conn *c)
{
    if (c->tunnel && c->c_eof && !c->cin.len && !c->u_shut && c->ufd >= 0) {
        (void)shutdown(c->ufd, SHUT_WR);
        c->u_shut = true;
    }
    if (c->u_eof && !c->uin.len && !c->c_shut) {
        (void)shutdown(c->cfd, SHUT_WR);
        c->c_shut = true;
    }
    /* A plain request is over once its answer is through; a tunnel once both ends are. */
    if (c->c_shut && (!c->tunnel || c->u_shut))
        egress_conn_close(c);
}

void egress_conn_relay(struct egress_conn *c, bool upstream, uint32_t events)
{
    if (events & (EPOLLERR | EPOLLHUP)) {
        /* Read what is left first: a peer that answered and closed at once must not lose
         * its answer. */
        events |= EPOLLIN;
    }
    if (upstream) {
        if (events & EPOLLOUT)
            conn_relay_upstream_out(c);
        if (!egress_conn_closed(c) && (events & EPOLLIN) && !c->u_eof)
            conn_relay_upstream_in(c);
        if (!egress_conn_closed(c) && (events & (EPOLLERR | EPOLLHUP)))
            conn_upstream_hup(c);
    } else {
        if (events & EPOLLOUT)
            conn_relay_client_out(c);
        if (!egress_conn_closed(c) && (events & EPOLLIN) && !c->c_eof &&
            (c->tunnel || !c->body_done))
            conn_relay_client_in(c);
        else if (!egress_conn_closed(c) && (events & (EPOLLERR | EPOLLHUP)))
            egress_conn_close(c);
    }
    /* Move what just arrived right away: the other side is usually writable. */
    if (!egress_conn_closed(c) && upstream)
        conn_relay_client_out(c);
    else if (!egress_conn_closed(c) && !upstream)
        conn_relay_upstream_out(c);
    if (!egress_conn_closed(c))
        conn_relay_ends(c);
    if (!egress_conn_closed(c))
        egress_conn_interest(c);
}
