// SPDX-License-Identifier: MIT
/*
 * conn — one connection through the egress proxy, from the sandbox's first
 * byte to the last relayed one (its lifecycle is drawn in proxy_int.h and
 * checked by connstate.c: every state change is egress_conn_set_state). Runs
 * on the proxy's loop only. Every refusal is answered (an HTTP status with
 * the reason in its reason phrase and body, or a TLS alert inside a
 * tunnel), counted on the tap and logged once, when the connection closes.
 *
 * Order of the checks, each before anything is sent anywhere: the request
 * parses -> the caps -> host and port in the allow list -> the name resolved
 * on the host (or pinned by the operator) -> every address refused that is
 * private, loopback, link-local, metadata... unless pinned or named by an
 * IP pattern -> (tunnels) the ClientHello's server name is the CONNECT
 * host -> connect. A plain request's body is followed to its end, and
 * nothing after it is forwarded.
 */
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "egress/proxy_int.h"
#include "egress/sni.h"
#include "util/clock.h"
#include "util/fmt.h"
#include "util/log.h"
#include "util/macros.h"

/* ---- interest, closing, logging ------------------------------------------------------------ */

static void conn_watch(struct egress_conn *c, int fd, struct egress_watch *w, uint32_t *have,
                       uint32_t want)
{
    if (fd < 0 || *have == want)
        return;
    struct epoll_event ev = {.events = want, .data.ptr = w};
    if (epoll_ctl(c->p->epfd, EPOLL_CTL_MOD, fd, &ev) == 0)
        *have = want;
}

/* What the connection waits for now, from its state and buffers. */
void egress_conn_interest(struct egress_conn *c)
{
    uint32_t ce = 0, ue = 0;
    bool reply = c->reply && c->reply_off < c->reply_len;
    switch (c->st) {
    case CS_HEAD:
    case CS_LINGER:
        ce = EPOLLIN;
        break;
    case CS_HELLO:
        ce = (reply ? EPOLLOUT : 0) | EPOLLIN;
        break;
    case CS_REPLY:
        ce = EPOLLOUT;
        break;
    case CS_CONNECT:
        ue = EPOLLOUT;
        break;
    case CS_RELAY:
        if (!c->c_eof && (c->tunnel || !c->body_done) && c->cin.len < c->cin.cap)
            ce |= EPOLLIN;
        if (c->uin.len)
            ce |= EPOLLOUT;
        if (!c->u_eof && c->uin.len < c->uin.cap)
            ue |= EPOLLIN;
        if (c->out_off < c->out_len || c->cin.len)
            ue |= EPOLLOUT;
        break;
    case CS_RESOLVE:
    case CS_CLOSED: /* its descriptors are closed: nothing to watch */
    case CS_STATE_COUNT:
        break;
    }
    conn_watch(c, c->cfd, &c->wc, &c->ev_c, ce);
    if (!c->u_hup)
        conn_watch(c, c->ufd, &c->wu, &c->ev_u, ue);
}

static void conn_log(struct egress_conn *c)
{
    struct egress_tap *t = c->tap;
    const char *decision = c->denied ? "denied" : c->counted ? "allowed" : NULL;
    if (!decision) {
        log_debug("egress: %s: a connection closed before a request (%s)", t->label,
                  c->why ? c->why : "nothing sent");
        return;
    }
    double ms = (double)(clock_mono_us() - c->start_us) / 1000.0;
    /* Every text through log_str: whatever bytes came, the decision is logged whole. */
    log_pack(c->denied ? LOG_WARN : LOG_INFO, "egress",
             "{s:o, s:s, s:o, s:o, s:i, s:s*, s:I, s:I, s:f, s:o*}", "execution", log_str(t->label),
             "decision", decision, "method", log_str(c->method), "host", log_str(c->host.name),
             "port", (int)c->port, "address", c->addr_text[0] ? c->addr_text : NULL, "bytesUp",
             (json_int_t)c->up, "bytesDown", (json_int_t)c->down, "durationMs", ms, "reason",
             log_str(c->why));
    /* And the same for the operator's /healthz, which copies the texts as valid UTF-8. */
    const struct egress_decision d = {
        .time_ms = clock_real_ms() - (int64_t)ms,
        .duration_ms = ms,
        .label = t->label,
        .tenant = t->share ? t->share->name : NULL,
        .denied = c->denied,
        .method = c->method,
        .host = c->host.name,
        .port = c->port,
        .reason = c->why,
        .bytes_up = c->up,
        .bytes_down = c->down,
    };
    egress_recent_add(c->p->recent, &d);
}

static void conn_close_upstream(struct egress_conn *c)
{
    if (c->ufd < 0)
        return;
    (void)epoll_ctl(c->p->epfd, EPOLL_CTL_DEL, c->ufd, NULL);
    close(c->ufd);
    c->ufd = -1;
    c->ev_u = 0;
}

void egress_conn_close(struct egress_conn *c)
{
    if (egress_conn_closed(c))
        return;
    struct egress_proxy *p = c->p;
    struct egress_tap *t = c->tap;
    conn_log(c);
    egress_conn_set_state(c, CS_CLOSED);
    conn_close_upstream(c);
    (void)epoll_ctl(p->epfd, EPOLL_CTL_DEL, c->cfd, NULL);
    close(c->cfd);
    c->cfd = -1;
    HASH_DEL(p->conns, c);
    if (c->prev)
        c->prev->next = c->next;
    else
        t->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    if (c->refusal != REFUSE_NONE) {
        t->refusing--;
        p->n_refusing--;
    } else {
        t->open--;
        p->n_open--;
        if (t->share)
            atomic_fetch_sub(&t->share->open, 1);
    }
    c->dead_next = p->dead;
    p->dead = c;
    egress_tap_resume(t);
}

void egress_conn_reap(struct egress_proxy *p)
{
    while (p->dead) {
        struct egress_conn *c = p->dead;
        p->dead = c->dead_next;
        free(c->cin.data);
        free(c->uin.data);
        free(c->head_buf);
        free(c->out);
        free(c->reply);
        free(c->why);
        free(c);
    }
}

void egress_conn_why(struct egress_conn *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    free(c->why);
    c->why = fmt_va(fmt, ap);
    va_end(ap);
}

/* ---- answers ------------------------------------------------------------------------------ */

static const char *conn_status_text(int status)
{
    switch (status) {
    case 400:
        return "Bad Request";
    case 403:
        return "Forbidden";
    case 405:
        return "Method Not Allowed";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 501:
        return "Not Implemented";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    default:
        return "Gateway Timeout";
    }
}

/* Answer status with c->why (already set) and close after it: the reason phrase carries the
 * message too, because that is what HTTP clients show for a refused CONNECT. */
static void conn_answer(struct egress_conn *c, int status)
{
    const char *msg = c->why ? c->why : "refused";
    char *body = fmt_str("sandboxd egress: %s\n", msg);
    char *text =
        body ? fmt_str("HTTP/1.1 %d %s (sandboxd egress: %s)\r\n"
                       "Content-Type: text/plain; charset=utf-8\r\n"
                       "X-Sandboxd-Egress: %s\r\n%s%s"
                       "Connection: close\r\nContent-Length: %zu\r\n\r\n%s",
                       status, conn_status_text(status), msg, c->denied ? "denied" : "failed",
                       status == 405 ? "Allow: " EGRESS_METHODS_ALLOWED "\r\n" : "",
                       status == 429 || status == 503 ? "Retry-After: 1\r\n" : "", strlen(body),
                       body)
             : NULL;
    free(body);
    conn_close_upstream(c);
    free(c->reply);
    c->reply = text;
    c->reply_len = text ? strlen(text) : 0;
    c->reply_off = 0;
    c->reply_then_close = true;
    egress_conn_set_state(c, CS_REPLY);
    c->deadline_us = clock_mono_us() + EGRESS_LINGER_US;
    if (!text)
        egress_conn_close(c);
    else
        egress_conn_interest(c);
}

static void conn_deny(struct egress_conn *c, enum egress_deny why, int status, const char *fmt, ...)
    _printf_(4, 5);
static void conn_deny(struct egress_conn *c, enum egress_deny why, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    free(c->why);
    c->why = fmt_va(fmt, ap);
    va_end(ap);
    c->denied = true;
    egress_tap_deny(c->tap, why);
    conn_answer(c, status);
}

/* A fatal TLS alert, access_denied (49): what the sandbox's TLS library reports. */
static void conn_deny_tls(struct egress_conn *c, enum egress_deny why)
{
    static const char alert[] = {0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x31};
    c->denied = true;
    egress_tap_deny(c->tap, why);
    free(c->reply);
    c->reply = malloc(sizeof(alert));
    if (!c->reply) {
        egress_conn_close(c);
        return;
    }
    memcpy(c->reply, alert, sizeof(alert));
    c->reply_len = sizeof(alert);
    c->reply_off = 0;
    c->reply_then_close = true;
    egress_conn_set_state(c, CS_REPLY);
    c->deadline_us = clock_mono_us() + EGRESS_LINGER_US;
    egress_conn_interest(c);
}

/* ---- connecting ------------------------------------------------------------------------------ */

static void conn_failed(struct egress_conn *c, int status, int err)
{
    egress_conn_why(c, "cannot connect to %s:%u (%s): %s", c->host.name, (unsigned)c->port,
                    c->addr_text[0] ? c->addr_text : "?", strerror(err));
    if (c->tunnel)
        egress_conn_close(c); /* 200 was sent: the sandbox sees the tunnel close */
    else
        conn_answer(c, status);
}

/* Connect to the next address; on failure move on until none is left. */
static void conn_connect(struct egress_conn *c)
{
    int err = ECONNREFUSED;
    conn_close_upstream(c);
    while (c->next_addr < c->n_addrs) {
        unsigned i = c->next_addr++;
        const struct sockaddr *sa = (const struct sockaddr *)&c->addrs[i];
        egress_addr_format(sa, c->addr_text, sizeof(c->addr_text));
        int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            err = errno;
            continue;
        }
        if (connect(fd, sa, c->lens[i]) < 0 && errno != EINPROGRESS) {
            err = errno;
            close(fd);
            continue;
        }
        struct epoll_event ev = {.events = EPOLLOUT, .data.ptr = &c->wu};
        if (epoll_ctl(c->p->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
            err = errno;
            close(fd);
            continue;
        }
        c->ufd = fd;
        c->ev_u = EPOLLOUT;
        egress_conn_set_state(c, CS_CONNECT);
        c->deadline_us = clock_mono_us() + EGRESS_STEP_US;
        egress_conn_interest(c);
        return;
    }
    conn_failed(c, 502, err);
}

static void conn_connected(struct egress_conn *c)
{
    int err = 0;
    socklen_t len = sizeof(err);
    if (getsockopt(c->ufd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
        err = errno;
    if (err) {
        if (c->next_addr < c->n_addrs)
            conn_connect(c);
        else
            conn_failed(c, 502, err);
        return;
    }
    if (egress_ring_init(&c->uin, EGRESS_BUF) < 0) {
        egress_conn_why(c, "out of memory");
        egress_conn_close(c);
        return;
    }
    egress_conn_set_state(c, CS_RELAY);
    c->deadline_us = clock_mono_us() + EGRESS_IDLE_US;
    egress_conn_interest(c);
}

/* ---- the ClientHello of a tunnel ------------------------------------------------------------ */

static void conn_hello(struct egress_conn *c)
{
    char name[256];
    int r = egress_sni_parse((const uint8_t *)c->cin.data + c->cin.off, c->cin.len, name,
                             sizeof(name), NULL);
    if (r == EGRESS_SNI_MORE) {
        if (egress_ring_room(&c->cin) == 0) {
            egress_conn_why(c, "the TLS ClientHello does not fit the proxy's buffer");
            conn_deny_tls(c, EGRESS_DENY_PROTOCOL);
        }
        return;
    }
    if (r < 0) {
        egress_conn_why(c, "the tunnel does not begin with a TLS ClientHello%s",
                        r == -EMSGSIZE ? " of a size the proxy reads" : "");
        conn_deny_tls(c, EGRESS_DENY_PROTOCOL);
        return;
    }
    if (r == EGRESS_SNI_NONE) {
        if (!c->host.family) {
            egress_conn_why(c, "the TLS ClientHello names no server (SNI) for %s", c->host.name);
            conn_deny_tls(c, EGRESS_DENY_SNI);
            return;
        }
    } else {
        struct egress_host sni;
        if (egress_host_parse(name, strlen(name), &sni)) {
            egress_conn_why(c, "the TLS ClientHello names an invalid server, not %s", c->host.name);
            conn_deny_tls(c, EGRESS_DENY_SNI);
            return;
        }
        if (!egress_host_equal(&sni, &c->host)) {
            egress_conn_why(c, "the TLS ClientHello asks for %s, not %s", sni.name, c->host.name);
            conn_deny_tls(c, EGRESS_DENY_SNI);
            return;
        }
    }
    conn_connect(c);
}

static void conn_write_reply(struct egress_conn *c);

/* ---- the decision --------------------------------------------------------------------------- */

/* The addresses are known and allowed: tunnels get their 200 and wait for the ClientHello,
 * plain requests connect. */
static void conn_addresses_ready(struct egress_conn *c)
{
    if (!c->tunnel) {
        conn_connect(c);
        return;
    }
    static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
    c->reply = strdup(ok);
    if (!c->reply) {
        egress_conn_close(c);
        return;
    }
    c->reply_len = sizeof(ok) - 1;
    c->reply_off = 0;
    c->reply_then_close = false;
    egress_conn_set_state(c, CS_HELLO);
    c->deadline_us = clock_mono_us() + EGRESS_STEP_US;
    conn_write_reply(c);
    if (!egress_conn_closed(c) && c->cin.len)
        conn_hello(c); /* sent right behind the CONNECT */
    if (!egress_conn_closed(c))
        egress_conn_interest(c);
}

static void conn_addr_set(struct egress_conn *c, const struct sockaddr_storage *sa, socklen_t len)
{
    c->addrs[0] = *sa;
    c->lens[0] = len;
    c->n_addrs = 1;
    c->next_addr = 0;
}

void egress_conn_resolved(struct egress_conn *c, const struct egress_lookup *l)
{
    if (l->error) {
        egress_conn_why(c, "cannot resolve %s: %s", c->host.name, gai_strerror(l->error));
        conn_answer(c, 502);
        return;
    }
    const char *refused = NULL;
    char refused_addr[64] = "";
    c->n_addrs = 0;
    for (unsigned i = 0; i < l->n; i++) {
        const struct sockaddr *sa = (const struct sockaddr *)&l->addrs[i];
        const char *cls = egress_addr_class(sa);
        if (cls && !egress_policy_names(c->tap->pol, sa, c->port)) {
            if (!refused) {
                refused = cls;
                egress_addr_format(sa, refused_addr, sizeof(refused_addr));
            }
            continue;
        }
        c->addrs[c->n_addrs] = l->addrs[i];
        c->lens[c->n_addrs++] = l->lens[i];
    }
    if (!c->n_addrs) {
        conn_deny(c, EGRESS_DENY_ADDRESS, 403,
                  "%s resolves to %s, a %s address, which the operator did not name "
                  "(--egress-resolve or an IP pattern)",
                  c->host.name, refused_addr, refused);
        return;
    }
    conn_addresses_ready(c);
}

/* A connection accepted beyond a cap: its answer. */
static void conn_refuse(struct egress_conn *c)
{
    struct egress_tap *t = c->tap;
    struct egress_proxy *p = c->p;
    const char *who = t->session ? "session" : "execution";
    switch (c->refusal) {
    case REFUSE_WINDOW:
        conn_deny(c, EGRESS_DENY_LIMIT, 403, "the execution's cap of %u connections is reached",
                  p->max_conns);
        return;
    case REFUSE_TAP:
        conn_deny(c, EGRESS_DENY_LIMIT, 429,
                  "this %s holds %u connections through the proxy, its cap "
                  "(--egress-%smax-open); retry when one closes",
                  who, t->max_open, t->session ? "session-" : "");
        return;
    case REFUSE_SHARE:
        conn_deny(c, EGRESS_DENY_LIMIT, 429,
                  "tenant '%s' holds %u connections through the proxy, its share "
                  "(egressConnections); retry when one closes",
                  t->share->name, egress_share_max(p, t->share));
        return;
    case REFUSE_POOL:
    case REFUSE_NONE:
        break;
    }
    conn_deny(c, EGRESS_DENY_LIMIT, 503,
              "the proxy holds its maximum of %u connections (--egress-pool); retry", p->pool);
}

static void conn_decide(struct egress_conn *c)
{
    struct egress_tap *t = c->tap;
    const struct egress_config *cfg = &c->p->cfg;
    if (c->refusal != REFUSE_NONE) {
        conn_refuse(c);
        return;
    }
    if (atomic_load(&t->over)) {
        conn_deny(c, EGRESS_DENY_LIMIT, 403,
                  "the execution's egress byte cap (%llu bytes) is reached",
                  (unsigned long long)c->p->max_bytes);
        return;
    }
    bool in_ceiling = false;
    for (size_t i = 0; i < cfg->n_ceiling && !in_ceiling; i++)
        in_ceiling = egress_pattern_matches(&cfg->ceiling[i], &c->host, c->port);
    if (!in_ceiling || !egress_policy_allows(t->pol, &c->host, c->port)) {
        bool v6 = c->host.family == AF_INET6;
        conn_deny(c, EGRESS_DENY_POLICY, 403,
                  "%s%s%s:%u is not in this execution's network allow list", v6 ? "[" : "",
                  c->host.name, v6 ? "]" : "", (unsigned)c->port);
        return;
    }
    c->counted = true;
    atomic_fetch_add(&t->requests, 1);
    if (!c->tunnel) {
        /* Follow the body that came with the head; what lies beyond the request is dropped. */
        size_t used = 0;
        bool done = c->head.body_done;
        if (!done &&
            egress_body_feed(&c->parser, c->cin.data + c->cin.off, c->cin.len, &used, &done) < 0) {
            egress_conn_why(c, "the request body is malformed");
            conn_answer(c, 400);
            return;
        }
        c->cin.len = done ? used : c->cin.len;
        c->body_done = done;
        c->out = egress_head_build(&c->head, cfg, &c->out_len, &c->out_hidden);
        if (!c->out) {
            egress_conn_why(c, "out of memory");
            egress_conn_close(c);
            return;
        }
    }
    const struct egress_pin *pin = egress_config_pin(cfg, &c->host, c->port);
    if (pin) {
        conn_addr_set(c, &pin->addr, pin->addr_len);
        conn_addresses_ready(c);
        return;
    }
    if (c->host.family) {
        /* An IP literal: it matched an IP pattern of the list, so the operator named it. */
        struct sockaddr_storage sa;
        socklen_t len;
        egress_host_sockaddr(&c->host, c->port, &sa, &len);
        conn_addr_set(c, &sa, len);
        conn_addresses_ready(c);
        return;
    }
    /* A tenant's lookups share its part of the resolver; the operator's are apart per tap. */
    const void *group = t->share ? (const void *)t->share : (const void *)t;
    int r = egress_resolver_submit(c->p->resolver, c->id, c->host.name, c->port, group);
    if (r == -EBUSY && t->share) {
        conn_deny(c, EGRESS_DENY_LIMIT, 429,
                  "tenant '%s' has %u name lookups waiting, its share of the proxy's resolver; "
                  "retry",
                  t->share->name, EGRESS_RESOLVER_GROUP_QUEUE);
        return;
    }
    if (r == -EBUSY) {
        conn_deny(c, EGRESS_DENY_LIMIT, 429,
                  "this %s has %u name lookups waiting, its share of the proxy's resolver; retry",
                  t->session ? "session" : "execution", EGRESS_RESOLVER_GROUP_QUEUE);
        return;
    }
    if (r < 0) {
        egress_conn_why(c, "too many name lookups at once; retry");
        conn_answer(c, 503);
        return;
    }
    egress_conn_set_state(c, CS_RESOLVE);
    c->deadline_us = clock_mono_us() + EGRESS_STEP_US;
    egress_conn_interest(c);
}

/* ---- the head ------------------------------------------------------------------------------- */
static void conn_read_head(struct egress_conn *c)
{
    size_t before;
    ssize_t n = egress_conn_read_client(c, &before);
    if (n == 0)
        egress_conn_close(c);
    if (n <= 0)
        return;
    const char *data = c->cin.data + c->cin.off;
    size_t from = before > 3 ? before - 3 : 0;
    const char *end = memmem(data + from, c->cin.len - from, "\r\n\r\n", 4);
    size_t hlen = end ? (size_t)(end - data) + 4 : 0;
    if (!end && c->cin.len < EGRESS_HEAD_MAX)
        return; /* not complete yet */
    if (!end || hlen > EGRESS_HEAD_MAX) {
        conn_deny(c, EGRESS_DENY_PROTOCOL, 431, "the request head is larger than %u bytes",
                  EGRESS_HEAD_MAX);
        return;
    }
    c->head_buf = malloc(hlen);
    if (!c->head_buf) {
        egress_conn_close(c);
        return;
    }
    memcpy(c->head_buf, data, hlen);
    egress_ring_consume(&c->cin, hlen);
    const char *why = NULL;
    int status = egress_head_parse(&c->parser, c->head_buf, hlen, &c->head, &why);
    snprintf(c->method, sizeof(c->method), "%s", c->head.method[0] ? c->head.method : "?");
    if (status) {
        conn_deny(c, EGRESS_DENY_PROTOCOL, status, "%s", why ? why : "malformed request");
        return;
    }
    c->host = c->head.host;
    c->port = c->head.port;
    c->tunnel = c->head.tunnel;
    conn_decide(c);
}

/* ---- events --------------------------------------------------------------------------------- */

static void conn_write_reply(struct egress_conn *c)
{
    while (c->reply_off < c->reply_len) {
        ssize_t n = egress_send(c->cfd, c->reply + c->reply_off, c->reply_len - c->reply_off);
        if (n == -EAGAIN)
            return;
        if (n < 0) {
            egress_conn_close(c);
            return;
        }
        c->reply_off += (size_t)n;
    }
    if (!c->reply_then_close)
        return;
    /* Lingering close: stop sending, drain what the client still sends, so that closing does
     * not answer its unread bytes with a reset that would destroy our answer. */
    (void)shutdown(c->cfd, SHUT_WR);
    egress_conn_set_state(c, CS_LINGER);
    c->deadline_us = clock_mono_us() + EGRESS_LINGER_US;
}

static void conn_linger(struct egress_conn *c)
{
    char sink[4096];
    for (int i = 0; i < 16; i++) {
        ssize_t n = read(c->cfd, sink, sizeof(sink));
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
            egress_conn_close(c);
            return;
        }
        if (n < 0)
            return;
    }
}

void egress_conn_event(struct egress_conn *c, bool upstream, uint32_t events)
{
    /* The sandbox hung up while we were not reading from it: nothing is left to do. */
    if (!upstream && (events & (EPOLLERR | EPOLLHUP)) &&
        (c->st == CS_RESOLVE || c->st == CS_CONNECT)) {
        egress_conn_why(c, "the sandbox closed the connection");
        egress_conn_close(c);
        return;
    }
    switch (c->st) {
    case CS_HEAD:
        if (!upstream)
            conn_read_head(c);
        break;
    case CS_HELLO:
        if (!upstream && (events & EPOLLOUT))
            conn_write_reply(c);
        if (!egress_conn_closed(c) && !upstream && (events & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
            ssize_t n = egress_ring_read(&c->cin, c->cfd);
            if (n == 0 || (n < 0 && n != -EAGAIN)) {
                egress_conn_why(c, "the sandbox closed the tunnel before its ClientHello");
                egress_conn_close(c);
            } else if (n > 0) {
                conn_hello(c);
            }
        }
        break;
    case CS_CONNECT:
        if (upstream)
            conn_connected(c);
        break;
    case CS_RELAY:
        egress_conn_relay(c, upstream, events);
        return;
    case CS_REPLY:
        if (!upstream)
            conn_write_reply(c);
        break;
    case CS_LINGER:
        if (!upstream)
            conn_linger(c);
        break;
    case CS_RESOLVE:
    case CS_CLOSED: /* the loop delivers no events to closed connections */
    case CS_STATE_COUNT:
        break;
    }
    if (!egress_conn_closed(c))
        egress_conn_interest(c);
}

void egress_conn_timeout(struct egress_conn *c)
{
    switch (c->st) {
    case CS_RESOLVE:
        egress_conn_why(c, "the name lookup of %s took too long", c->host.name);
        conn_answer(c, 504);
        return;
    case CS_CONNECT:
        if (c->next_addr < c->n_addrs) {
            conn_connect(c);
            return;
        }
        conn_failed(c, 504, ETIMEDOUT);
        return;
    case CS_HEAD:
        egress_conn_why(c, "no complete request within %lld s", EGRESS_STEP_US / 1000000);
        break;
    case CS_HELLO:
        egress_conn_why(c, "no TLS ClientHello within %lld s", EGRESS_STEP_US / 1000000);
        break;
    case CS_RELAY:
        egress_conn_why(c, "idle for %lld s", EGRESS_IDLE_US / 1000000);
        break;
    case CS_REPLY:
    case CS_LINGER:
        break;
    case CS_CLOSED: /* no deadline runs for it: proxy_deadlines skips it */
    case CS_STATE_COUNT:
        return;
    }
    egress_conn_close(c);
}

void egress_conn_accept(struct egress_tap *t, int fd, enum egress_refusal refusal)
{
    struct egress_proxy *p = t->p;
    struct egress_conn *c = calloc(1, sizeof(*c));
    if (!c || egress_ring_init(&c->cin, EGRESS_BUF) < 0) {
        free(c);
        close(fd);
        return;
    }
    c->p = p;
    c->tap = t;
    c->id = ++p->next_id;
    c->cfd = fd;
    c->ufd = -1;
    c->wc = (struct egress_watch){EW_CLIENT, c};
    c->wu = (struct egress_watch){EW_UPSTREAM, c};
    c->st = CS_HEAD; /* born; every later change goes through egress_conn_set_state */
    c->start_us = clock_mono_us();
    c->deadline_us = c->start_us + EGRESS_STEP_US;
    snprintf(c->method, sizeof(c->method), "?");
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &c->wc};
    if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        log_errno(LOG_WARN, errno, "egress: cannot watch a connection of %s", t->label);
        free(c->cin.data);
        free(c);
        close(fd);
        return;
    }
    c->ev_c = EPOLLIN;
    c->refusal = refusal;
    HASH_ADD(hh, p->conns, id, sizeof(c->id), c);
    c->next = t->conns;
    if (t->conns)
        t->conns->prev = c;
    t->conns = c;
    if (refusal != REFUSE_NONE) {
        t->refusing++;
        p->n_refusing++;
    } else {
        t->open++;
        p->n_open++;
        if (t->share)
            atomic_fetch_add(&t->share->open, 1);
    }
}
