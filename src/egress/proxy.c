// SPDX-License-Identifier: MIT
/*
 * proxy — see proxy.h. This file: the loop, the taps (the only objects other threads
 * touch, through a command list under the lock), accepting, deadlines and name lookups
 * coming back. One connection's life is in conn.c.
 *
 * A connection closed during a turn of the loop stays allocated (CLOSED) until the
 * turn ends, because a later event of the same epoll batch may still point at it.
 */
#include "egress/proxy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "egress/proxy_int.h"
#include "util/clock.h"
#include "util/fdio.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/utf8.h"

#define PROXY_TICK_MS 250 /* deadline resolution */

int egress_shares_size(struct egress_options *o, unsigned sessions, unsigned executions,
                       struct sbx_error *err)
{
    unsigned pool = o->pool ? o->pool : EGRESS_POOL_DEFAULT, half = pool / 2;
    /* Sessions and executions each may hold half the pool: sessions' connections outlive
     * their executions (what a session leaves running keeps them), so neither kind can crowd
     * out the other, and within a kind no holder can take more than its cap. */
    const struct {
        unsigned *cap;
        unsigned holders, def;
        const char *holder, *count_opt, *cap_opt;
    } kinds[] = {
        {&o->session_open, sessions, EGRESS_SESSION_OPEN_DEFAULT, "session", "--max-sessions",
         "--egress-session-max-open"},
        {&o->exec_open, executions, EGRESS_EXEC_OPEN_DEFAULT, "execution", "--max-running",
         "--egress-max-open"},
    };
    for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
        unsigned n = kinds[i].holders, *cap = kinds[i].cap;
        if (n == 0) {
            *cap = *cap ? *cap : kinds[i].def;
            continue;
        }
        if (*cap && (uint64_t)*cap * n > half)
            return sbx_error_errno(
                err, EINVAL, SBX_ERR_INVALID, "INVALID_OPTION", NULL,
                "%s %u x %s %u = %llu connections, more than half of --egress-pool "
                "%u: lower one, or raise --egress-pool",
                kinds[i].count_opt, n, kinds[i].cap_opt, *cap, (unsigned long long)*cap * n, pool);
        if (!*cap)
            *cap = half / n < kinds[i].def ? half / n : kinds[i].def;
        if (!*cap)
            return sbx_error_errno(
                err, EINVAL, SBX_ERR_INVALID, "INVALID_OPTION", NULL,
                "%s %u leaves no connection through the egress proxy for a %s (each "
                "kind may hold half of --egress-pool %u): lower it, or raise "
                "--egress-pool",
                kinds[i].count_opt, n, kinds[i].holder, pool);
    }
    if (!o->tenant_open)
        o->tenant_open = EGRESS_TENANT_SHARE(pool);
    if (o->tenant_open > pool)
        return sbx_error_errno(err, EINVAL, SBX_ERR_INVALID, "INVALID_OPTION", NULL,
                               "--egress-tenant-connections %u is more than --egress-pool %u",
                               o->tenant_open, pool);
    o->pool = pool;
    return 0;
}

const char *egress_deny_name(enum egress_deny d)
{
    static const char *const names[] = {"policy", "address", "sni", "limit", "protocol"};
    return (unsigned)d < ARRAY_SIZE(names) ? names[d] : "?";
}

void egress_stats_add(struct egress_stats *to, const struct egress_stats *s)
{
    to->bytes_up += s->bytes_up;
    to->bytes_down += s->bytes_down;
    to->requests += s->requests;
    to->denied += s->denied;
    for (int i = 0; i < EGRESS_DENY_N; i++)
        to->denied_by[i] += s->denied_by[i];
}

static void proxy_wake(struct egress_proxy *p)
{
    uint64_t one = 1;
    ssize_t w = write(p->evfd, &one, sizeof(one));
    (void)w; /* a full eventfd counter still wakes the loop */
}

/* ---- taps ------------------------------------------------------------------------------ */

void egress_tap_deny(struct egress_tap *t, enum egress_deny why)
{
    atomic_fetch_add(&t->denied[why], 1);
}

static void proxy_listen(struct egress_tap *t, bool on)
{
    struct epoll_event ev = {.events = on ? EPOLLIN : 0, .data.ptr = &t->w};
    if (t->listening != on && epoll_ctl(t->p->epfd, EPOLL_CTL_MOD, t->listen_fd, &ev) == 0)
        t->listening = on;
}

unsigned egress_share_max(const struct egress_proxy *p, const struct egress_share *s)
{
    return s->max_open ? s->max_open : p->tenant_open;
}

/* Why t's next connection could not be served now, or REFUSE_NONE. */
static enum egress_refusal proxy_room(const struct egress_tap *t)
{
    const struct egress_proxy *p = t->p;
    if (t->open >= t->max_open)
        return REFUSE_TAP;
    if (t->share && atomic_load(&t->share->open) >= egress_share_max(p, t->share))
        return REFUSE_SHARE;
    if (p->n_open >= p->pool)
        return REFUSE_POOL;
    if (atomic_load(&t->conns_win) >= p->max_conns)
        return REFUSE_WINDOW;
    return REFUSE_NONE;
}

/* A refusal is answered (and logged) on a connection of its own, of which a tap and the proxy
 * hold a few at most; beyond them, connections wait in the listener's backlog. */
static bool proxy_can_refuse(const struct egress_tap *t)
{
    return t->refusing < EGRESS_TAP_SLACK && t->p->n_refusing < EGRESS_REFUSING_MAX;
}

void egress_tap_resume(struct egress_tap *t)
{
    if (!t->listening && t->listen_fd >= 0 && (proxy_room(t) == REFUSE_NONE || proxy_can_refuse(t)))
        proxy_listen(t, true);
}

static void proxy_accept(struct egress_tap *t)
{
    for (;;) {
        enum egress_refusal refusal = proxy_room(t);
        if (refusal != REFUSE_NONE && !proxy_can_refuse(t))
            break;
        int fd = accept4(t->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno != EAGAIN) {
                /* Out of descriptors, most likely: stop listening until the next tick. */
                log_errno(LOG_WARN, errno, "egress: accept for %s failed", t->label);
                proxy_listen(t, false);
            }
            return;
        }
        atomic_fetch_add(&t->conns_win, 1);
        if (refusal == REFUSE_SHARE)
            atomic_fetch_add(&t->share->refused, 1);
        egress_conn_accept(t, fd, refusal);
    }
    proxy_listen(t, false); /* as many as allowed: the backlog waits */
}

/* Close every connection of t and its listener (loop; lock held by the caller or not needed:
 * the loop alone touches conns and the listener). */
static void proxy_tap_close(struct egress_proxy *p, struct egress_tap *t)
{
    while (t->conns)
        egress_conn_close(t->conns);
    if (t->listen_fd >= 0) {
        (void)epoll_ctl(p->epfd, EPOLL_CTL_DEL, t->listen_fd, NULL);
        close(t->listen_fd);
        t->listen_fd = -1;
    }
    t->listening = false;
}

static void proxy_unlink(struct egress_proxy *p, struct egress_tap *t)
{
    if (t->prev)
        t->prev->next = t->next;
    else if (p->taps == t)
        p->taps = t->next;
    if (t->next)
        t->next->prev = t->prev;
    t->prev = t->next = NULL;
}

/* Taps added or removed by other threads. */
static void proxy_commands(struct egress_proxy *p)
{
    pthread_mutex_lock(&p->lock);
    struct egress_tap *t = p->cmds;
    p->cmds = NULL;
    bool signal = false;
    for (struct egress_tap *next; t; t = next) {
        next = t->cmd_next;
        t->cmd_next = NULL;
        t->queued = false;
        if (t->remove) {
            proxy_tap_close(p, t);
            proxy_unlink(p, t);
            t->closed = true;
            signal = true;
            continue;
        }
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &t->w};
        if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, t->listen_fd, &ev) < 0) {
            log_errno(LOG_ERROR, errno, "egress: cannot watch the listener of %s", t->label);
            close(t->listen_fd);
            t->listen_fd = -1;
        }
        t->listening = t->listen_fd >= 0;
        t->next = p->taps;
        if (p->taps)
            p->taps->prev = t;
        p->taps = t;
    }
    if (signal)
        pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
}

static void proxy_lookups(struct egress_proxy *p)
{
    struct egress_lookup *l = egress_resolver_take(p->resolver);
    while (l) {
        struct egress_lookup *next = l->next;
        struct egress_conn *c = NULL;
        HASH_FIND(hh, p->conns, &l->id, sizeof(l->id), c);
        if (c && c->st == CS_RESOLVE)
            egress_conn_resolved(c, l);
        free(l);
        l = next;
    }
}

static void proxy_deadlines(struct egress_proxy *p)
{
    int64_t now = clock_mono_us();
    struct egress_conn *c, *tmp;
    HASH_ITER(hh, p->conns, c, tmp)
    {
        if (!egress_conn_closed(c) && c->deadline_us && now >= c->deadline_us)
            egress_conn_timeout(c);
    }
    for (struct egress_tap *t = p->taps; t; t = t->next)
        egress_tap_resume(t);
}

static void *proxy_loop(void *arg)
{
    struct egress_proxy *p = arg;
    struct epoll_event evs[64];
    int64_t next_tick = clock_mono_us() + PROXY_TICK_MS * 1000;
    for (;;) {
        int n = epoll_wait(p->epfd, evs, (int)ARRAY_SIZE(evs), PROXY_TICK_MS);
        if (n < 0 && errno != EINTR) {
            log_errno(LOG_ERROR, errno, "egress: epoll_wait failed");
            n = 0;
        }
        for (int i = 0; i < n; i++) {
            struct egress_watch *w = evs[i].data.ptr;
            if (w->kind == EW_WAKE) {
                uint64_t v;
                ssize_t r = read(p->evfd, &v, sizeof(v));
                (void)r; /* only the wake-up matters */
            } else if (w->kind == EW_LISTEN) {
                struct egress_tap *t = w->obj;
                if (t->listen_fd >= 0)
                    proxy_accept(t);
            } else {
                struct egress_conn *c = w->obj;
                if (!egress_conn_closed(c))
                    egress_conn_event(c, w->kind == EW_UPSTREAM, evs[i].events);
            }
        }
        proxy_lookups(p);
        int64_t now = clock_mono_us();
        if (now >= next_tick) {
            proxy_deadlines(p);
            next_tick = now + PROXY_TICK_MS * 1000;
        }
        proxy_commands(p);
        egress_conn_reap(p);
        if (thread_group_stopping(&p->thread))
            break;
    }
    /* Shutting down: taps still queued are attached, then every tap is closed (their
     * owners are gone by now). */
    proxy_commands(p);
    pthread_mutex_lock(&p->lock);
    while (p->taps) {
        struct egress_tap *t = p->taps;
        proxy_tap_close(p, t);
        proxy_unlink(p, t);
        t->closed = true;
    }
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
    egress_conn_reap(p);
    return NULL;
}

/* ---- public ----------------------------------------------------------------------------- */

int egress_proxy_new(const struct egress_options *opt, struct egress_proxy **ret)
{
    struct egress_proxy *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->epfd = p->evfd = -1;
    char *why = NULL;
    int r = egress_config_init(&p->cfg, opt->allow, opt->resolve, opt->headers, &why);
    if (r < 0) {
        log_error("egress: %s", why ? why : "out of memory");
        free(why);
        free(p);
        return r;
    }
    p->max_bytes = opt->max_bytes;
    p->max_conns = opt->max_connections ? opt->max_connections : 1;
    p->pool = opt->pool ? opt->pool : EGRESS_POOL_DEFAULT;
    p->exec_open = opt->exec_open ? opt->exec_open : EGRESS_EXEC_OPEN_DEFAULT;
    p->session_open = opt->session_open ? opt->session_open : EGRESS_SESSION_OPEN_DEFAULT;
    p->tenant_open = opt->tenant_open ? opt->tenant_open : EGRESS_TENANT_SHARE(p->pool);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->cond, NULL);
    p->recent = egress_recent_new();
    p->epfd = epoll_create1(EPOLL_CLOEXEC);
    p->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    p->w_wake = (struct egress_watch){EW_WAKE, p};
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &p->w_wake};
    if (!p->recent) {
        r = log_errno(LOG_ERROR, ENOMEM, "egress: cannot start the proxy");
        goto fail;
    }
    if (p->epfd < 0 || p->evfd < 0 || epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->evfd, &ev) < 0) {
        r = log_errno(LOG_ERROR, errno, "egress: epoll/eventfd failed");
        goto fail;
    }
    (void)thread_group_init(&p->thread, "egress proxy", 1, &p->lock, NULL,
                            p->evfd); /* one: no alloc */
    const struct egress_resolver_limits rl = {
        .threads = EGRESS_RESOLVER_THREADS,
        .max_pending = EGRESS_RESOLVER_QUEUE,
        .group_threads = EGRESS_RESOLVER_GROUP_THREADS,
        .group_pending = EGRESS_RESOLVER_GROUP_QUEUE,
    };
    r = egress_resolver_new(&rl, p->evfd, &p->resolver);
    if (r < 0) {
        log_errno(LOG_ERROR, r, "egress: cannot start the resolver threads");
        goto fail;
    }
    if ((r = thread_group_start(&p->thread, proxy_loop, p)) < 0) {
        log_errno(LOG_ERROR, r, "egress: cannot start the proxy thread");
        goto fail;
    }
    *ret = p;
    return 0;
fail:
    egress_proxy_free(p);
    return r;
}

void egress_proxy_free(struct egress_proxy *p)
{
    if (!p)
        return;
    thread_group_stop(&p->thread); /* none started: nothing to join */
    thread_group_done(&p->thread);
    egress_resolver_free(p->resolver);
    egress_recent_free(p->recent);
    fd_closep(&p->epfd);
    fd_closep(&p->evfd);
    egress_config_done(&p->cfg);
    pthread_cond_destroy(&p->cond);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

const struct egress_config *egress_proxy_config(const struct egress_proxy *p)
{
    return &p->cfg;
}

json_t *egress_proxy_describe(const struct egress_proxy *p)
{
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", EGRESS_SANDBOX_PORT);
    json_t *pins = json_array(), *injects = json_array();
    for (size_t i = 0; pins && i < p->cfg.n_pins; i++) {
        char a[64];
        egress_addr_format((const struct sockaddr *)&p->cfg.pins[i].addr, a, sizeof(a));
        if (json_array_append_new(pins,
                                  json_pack("{s:s, s:i, s:s}", "host", p->cfg.pins[i].host.name,
                                            "port", (int)p->cfg.pins[i].port, "address", a)) < 0) {
            json_decref(pins);
            pins = NULL; /* "o" fails on it below: NULL, out of memory */
        }
    }
    /* Which hosts get headers, never the headers: they may be secrets. */
    for (size_t i = 0; i < p->cfg.n_injects; i++) {
        char hp[EGRESS_PATTERN_MAX];
        egress_inject_format(&p->cfg.injects[i], hp, sizeof(hp));
        json_array_append_new(injects, json_string(hp));
    }
    return json_pack("{s:o, s:o, s:o, s:I, s:i, s:s, s:{s:i, s:i, s:i, s:i, s:i, s:i}, s:o}",
                     "allow", egress_config_ceiling_json(&p->cfg), "resolve", pins, "headersFor",
                     injects, "maxBytes", (json_int_t)p->max_bytes, "maxConnections",
                     (int)p->max_conns, "proxy", url, "shares", "pool", (int)p->pool, "execution",
                     (int)p->exec_open, "session", (int)p->session_open, "tenant",
                     (int)p->tenant_open, "resolverThreads", EGRESS_RESOLVER_THREADS,
                     "resolverTenantThreads", EGRESS_RESOLVER_GROUP_THREADS, "recent",
                     egress_recent_json(p->recent));
}

json_t *egress_proxy_job(const char *ca_file)
{
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", EGRESS_SANDBOX_PORT);
    return json_pack("{s:s, s:s?}", "proxy", url, "caFile", ca_file);
}

int egress_tap_new(struct egress_proxy *p, const struct egress_policy *pol, int listen_fd,
                   const struct egress_owner *who, struct egress_tap **ret)
{
    struct egress_tap *t = calloc(1, sizeof(*t));
    if (!t || !(t->pol = egress_policy_dup(pol))) {
        free(t);
        close(listen_fd);
        return -ENOMEM;
    }
    t->p = p;
    t->listen_fd = listen_fd;
    int r = fd_set_nonblock(listen_fd, true);
    if (r < 0) {
        close(listen_fd);
        egress_policy_free(t->pol);
        free(t);
        return r;
    }
    t->w = (struct egress_watch){EW_LISTEN, t};
    t->share = who->share;
    t->session = who->session;
    t->max_open = who->session ? p->session_open : p->exec_open;
    /* Cut at a character boundary: half a character would make the log's text no UTF-8. */
    const char *label = who->label ? who->label : "?";
    size_t n = utf8_cut(label, strlen(label), EGRESS_LABEL_MAX);
    memcpy(t->label, label, n);
    t->label[n] = '\0';
    pthread_mutex_lock(&p->lock);
    if (thread_group_stopping(&p->thread)) {
        pthread_mutex_unlock(&p->lock);
        close(listen_fd);
        egress_policy_free(t->pol);
        free(t);
        return -ESHUTDOWN;
    }
    t->queued = true;
    t->cmd_next = p->cmds;
    p->cmds = t;
    pthread_mutex_unlock(&p->lock);
    proxy_wake(p);
    *ret = t;
    return 0;
}

void egress_tap_take(struct egress_tap *t, struct egress_stats *ret)
{
    *ret = (struct egress_stats){
        .bytes_up = atomic_exchange(&t->up, 0),
        .bytes_down = atomic_exchange(&t->down, 0),
        .requests = atomic_exchange(&t->requests, 0),
    };
    for (int i = 0; i < EGRESS_DENY_N; i++) {
        ret->denied_by[i] = atomic_exchange(&t->denied[i], 0);
        ret->denied += ret->denied_by[i];
    }
    atomic_store(&t->conns_win, 0);
    atomic_store(&t->over, false);
}

void egress_tap_free(struct egress_tap *t, struct egress_stats *ret_final)
{
    if (!t)
        return;
    struct egress_proxy *p = t->p;
    pthread_mutex_lock(&p->lock);
    t->remove = true;
    if (!t->queued && !t->closed) {
        t->queued = true;
        t->cmd_next = p->cmds;
        p->cmds = t;
    }
    pthread_mutex_unlock(&p->lock);
    proxy_wake(p);
    pthread_mutex_lock(&p->lock);
    while (!t->closed)
        pthread_cond_wait(&p->cond, &p->lock);
    pthread_mutex_unlock(&p->lock);
    if (ret_final)
        egress_tap_take(t, ret_final);
    egress_policy_free(t->pol);
    free(t);
}
