// SPDX-License-Identifier: MIT
/*
 * proxy_int — what proxy.c (the loop, taps, accepting, deadlines), conn.c
 * (one connection's decisions), relay.c (its bytes) and connstate.c (its
 * lifecycle, below) share. Private to src/egress/.
 *
 * The life of a connection (struct egress_conn's st; the loop's alone, so no lock). It is
 * born in HEAD when accepted (egress_conn_accept); every later change goes through
 * egress_conn_set_state(), which asserts the edge (connstate.c holds them as data):
 *
 *   HEAD ----CONNECT, a name to look up [D]-----------------------> RESOLVE
 *   HEAD ----CONNECT, pinned or an IP literal: "200" sent [D]----> HELLO
 *   HEAD ----a plain request, pinned or an IP literal [D]---------> CONNECT
 *   RESOLVE -CONNECT, the addresses allowed: "200" sent [L]------> HELLO
 *   RESOLVE -a plain request, the addresses allowed [L]----------> CONNECT
 *   HELLO ---the ClientHello names the CONNECT host [H]----------> CONNECT
 *   CONNECT -the next address (refused, timed out) [C]-----------> CONNECT
 *   CONNECT -connected [C]---------------------------------------> RELAY
 *
 *   HEAD, RESOLVE, CONNECT --refused or failed: an HTTP answer [A]--> REPLY
 *   HELLO --refused: a fatal TLS alert [A]---------------------------> REPLY
 *   REPLY --the answer written: shut down, drain what still comes [W]--> LINGER
 *   every state but CLOSED --egress_conn_close [X]---------------------> CLOSED
 *
 * [D] conn_decide: the head parsed, the caps and the allow list passed. [L]
 * egress_conn_resolved: a lookup came back. [H] conn_hello. [C] conn_connect, conn_connected.
 * [A] conn_answer, conn_deny_tls. [W] conn_write_reply. [X] the end, logged there: the last
 * byte relayed, EOF, an error, a deadline, the byte cap (relay.c), the tap removed (proxy.c).
 * A tunnel whose upstream cannot be reached is closed, not answered: its "200" is out. RELAY
 * ends in CLOSED only. A CLOSED connection stays allocated until the loop's turn ends
 * (egress_conn_reap), because a later event of the same epoll batch may still point at it.
 *
 * Deadlines: HEAD, RESOLVE, HELLO, CONNECT and REPLY/LINGER have one each;
 * RELAY's is an idle deadline renewed by every byte moved.
 */
#ifndef SANDBOXD_EGRESS_PROXY_INT_H
#define SANDBOXD_EGRESS_PROXY_INT_H

#include <assert.h>
#include <http_parser.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <uthash.h>

#include "egress/head.h"
#include "egress/proxy.h"
#include "egress/recent.h"
#include "egress/resolver.h"
#include "util/lifecycle.h"
#include "util/macros.h"
#include "util/thread.h"

#define EGRESS_TAP_SLACK        8 /* connections of a tap accepted beyond its caps, to be refused */
#define EGRESS_REFUSING_MAX     64 /* such connections of all taps at once */
#define EGRESS_BUF              (32u << 10)
#define EGRESS_STEP_US          (10 * 1000000LL) /* head, lookup, connect, ClientHello */
#define EGRESS_IDLE_US          (60 * 1000000LL) /* a relay without a byte either way */
#define EGRESS_LINGER_US        (2 * 1000000LL)  /* after our answer, for the client to read it */
#define EGRESS_RESOLVER_THREADS 4
#define EGRESS_RESOLVER_QUEUE   256
/* A tenant's (or, for the operator's, one execution's or session's) part of the resolver: names
 * that resolve slowly (any name under an allowed wildcard may) hold at most this many of the
 * threads, so that the others always have some left. */
#define EGRESS_RESOLVER_GROUP_THREADS 2
#define EGRESS_RESOLVER_GROUP_QUEUE   64
#define EGRESS_LABEL_MAX              300 /* bytes of a tap's label: a request id (256) and more */

enum egress_watch_kind { EW_WAKE, EW_LISTEN, EW_CLIENT, EW_UPSTREAM };

struct egress_watch {
    enum egress_watch_kind kind;
    void *obj;
};

struct egress_conn;

struct egress_tap {
    struct egress_proxy *p;
    struct egress_policy *pol;
    struct egress_share *share; /* the tenant's; NULL: the operator's */
    bool session;               /* a session's (for messages) */
    unsigned max_open;          /* connections served at once: exec_open or session_open */
    int listen_fd;
    char label[EGRESS_LABEL_MAX + 1]; /* cut at a character, never inside one */
    struct egress_watch w;
    bool listening;    /* EPOLLIN wanted on the listener (loop) */
    unsigned open;     /* connections served now (loop) */
    unsigned refusing; /* connections accepted to be refused (loop) */
    struct egress_conn *conns;
    /* window counters: the loop adds, egress_tap_take() swaps them for zero */
    _Atomic uint64_t up, down, requests, conns_win;
    _Atomic uint64_t denied[EGRESS_DENY_N];
    atomic_bool over; /* the byte cap was reached in this window */
    /* under p->lock */
    bool queued, remove, closed;
    struct egress_tap *cmd_next;    /* p->cmds */
    struct egress_tap *prev, *next; /* the loop's list (loop) */
};

struct egress_ring {
    char *data;
    size_t cap, off, len;
};

enum egress_conn_state {
    CS_HEAD,    /* reading the request head (and, for a plain request, the body's start) */
    CS_RESOLVE, /* the name is being looked up on the resolver threads */
    CS_HELLO,   /* a tunnel: "200" sent, waiting for the ClientHello's server name */
    CS_CONNECT, /* connecting upstream, one address after the other */
    CS_RELAY,   /* relaying both ways */
    CS_REPLY,   /* writing our answer (an HTTP error, or a TLS alert) */
    CS_LINGER,  /* answered and shut down: draining what the sandbox still sends */
    CS_CLOSED,  /* closed and logged; freed at the end of the loop's turn */
    CS_STATE_COUNT
};

/* Why a connection was accepted only to be refused (its request is read first, so that the
 * answer and the log name it). Such connections hold no place of the caps below. */
enum egress_refusal {
    REFUSE_NONE,
    REFUSE_WINDOW, /* --egress-max-connections in this window (403) */
    REFUSE_TAP,    /* the execution's or session's connections at once (429) */
    REFUSE_SHARE,  /* the tenant's share (429) */
    REFUSE_POOL,   /* the proxy's pool (503) */
};

struct egress_conn {
    uint64_t id;
    UT_hash_handle hh;
    struct egress_proxy *p;
    struct egress_tap *tap;
    struct egress_conn *prev, *next; /* in the tap */
    int cfd, ufd;
    struct egress_watch wc, wu;
    uint32_t ev_c, ev_u; /* registered interest */
    enum egress_conn_state st;
    int64_t start_us, deadline_us;
    struct egress_head head; /* pointers into the head buffer, valid until the relay */
    char *head_buf;          /* the client's head, kept for head's pointers */
    http_parser parser;      /* follows a plain request's body */
    bool body_done;
    struct egress_host host;
    uint16_t port;
    bool tunnel;
    char method[16];
    struct sockaddr_storage addrs[EGRESS_ADDRS_MAX];
    socklen_t lens[EGRESS_ADDRS_MAX];
    unsigned n_addrs, next_addr;
    char addr_text[64];
    struct egress_ring cin; /* client -> upstream */
    struct egress_ring uin; /* upstream -> client */
    char *out;              /* sent upstream first: the rebuilt head (plain HTTP) */
    size_t out_len, out_off;
    size_t out_hidden; /* of out, the operator's injected lines: sent, never counted */
    char *reply;       /* our answer to the client */
    size_t reply_len, reply_off;
    bool reply_then_close;
    bool c_eof, u_eof, c_shut, u_shut;
    bool u_hup; /* the upstream hung up: read what is left as room allows, unwatched */
    enum egress_refusal refusal; /* accepted beyond a cap: refuse its request */
    bool counted;                /* counted as a request */
    bool denied;
    char *why; /* the decision's reason or the failure, for the log (owned) */
    uint64_t up, down;
    struct egress_conn *dead_next;
};

struct egress_proxy {
    struct egress_config cfg;
    uint64_t max_bytes;
    unsigned max_conns;
    unsigned pool, exec_open, session_open, tenant_open; /* egress_options, defaults applied */
    int epfd, evfd;
    struct egress_watch w_wake;
    struct egress_resolver *resolver;
    struct egress_recent *recent; /* the last decisions, for /healthz (its own lock) */
    struct thread_group thread;   /* the loop; its stop is set under lock, wakes evfd */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    /* under lock */
    struct egress_tap *cmds; /* taps to add or remove */
    /* loop only */
    struct egress_tap *taps;
    struct egress_conn *conns; /* by id */
    struct egress_conn *dead;  /* closed this turn */
    unsigned n_open;           /* connections served, all taps (at most pool) */
    unsigned n_refusing;       /* connections being refused, all taps */
    uint64_t next_id;
};

/* connstate.c: the lifecycle drawn above */
bool egress_conn_transition_ok(enum egress_conn_state from, enum egress_conn_state to);
/* Move c to state to; asserts that the diagram has that edge (a programmer error if not). */
void egress_conn_set_state(struct egress_conn *c, enum egress_conn_state to);
const char *egress_conn_state_name(enum egress_conn_state s);
/* Closed (and logged) already: nothing more may be done with it this turn. */
static inline bool egress_conn_closed(const struct egress_conn *c)
{
    return c->st == CS_CLOSED;
}
/* assert_egress_conn_state(c, CS_A, CS_B...): a precondition, c is in one of these. */
#define assert_egress_conn_state(c, ...) assert(LIFECYCLE_IN((c)->st, __VA_ARGS__))

/* relay.c */
int egress_ring_init(struct egress_ring *r, size_t cap);
size_t egress_ring_room(struct egress_ring *r); /* compacts first */
void egress_ring_consume(struct egress_ring *r, size_t n);
/* read() into the free end: >0 bytes, 0 at EOF, -EAGAIN, or -errno. */
ssize_t egress_ring_read(struct egress_ring *r, int fd);
/* send() without SIGPIPE: bytes, or -errno. */
ssize_t egress_send(int fd, const char *data, size_t len);
/* Read what the sandbox sent into cin: the count of new bytes (*ret_before: where they
 * start), 0 at its end, or -1 when nothing came now or the connection failed (closed). */
ssize_t egress_conn_read_client(struct egress_conn *c, size_t *ret_before);
/* An event on a relaying connection. */
void egress_conn_relay(struct egress_conn *c, bool upstream, uint32_t events);

/* conn.c */
/* Watch for what the connection waits for now, from its state and buffers. */
void egress_conn_interest(struct egress_conn *c);
/* Set the reason or failure the log will show. */
void egress_conn_why(struct egress_conn *c, const char *fmt, ...) _printf_(2, 3);
void egress_conn_accept(struct egress_tap *t, int fd, enum egress_refusal refusal);
void egress_conn_event(struct egress_conn *c, bool upstream, uint32_t events);
void egress_conn_resolved(struct egress_conn *c, const struct egress_lookup *l);
void egress_conn_timeout(struct egress_conn *c);
/* Close, log the decision and the bytes; freed by egress_conn_reap() at the end of the turn. */
void egress_conn_close(struct egress_conn *c);
void egress_conn_reap(struct egress_proxy *p);
void egress_tap_deny(struct egress_tap *t, enum egress_deny why);
/* proxy.c: after a connection closed, the tap may accept again. */
void egress_tap_resume(struct egress_tap *t);
/* proxy.c: the share's cap. */
unsigned egress_share_max(const struct egress_proxy *p, const struct egress_share *s);

#endif
