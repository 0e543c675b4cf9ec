// SPDX-License-Identifier: MIT
/*
 * client_int — what client.c shares with its transports (transport_stdio.c, transport_http.c)
 * and with tests/unit/test_lifecycle.c, and nobody else: the transport interface, the client
 * structure and the life of its connection below. Not for use outside src/mcpclient/.
 *
 * The life of a connection (struct mcp_client's state, under c->lock). Requests may be made
 * from CONNECTING to STALE (mcp_client_alive()); a stdio connection never becomes STALE, an
 * HTTP one never KILLED.
 *
 *                  [K]                 the server forgot our session [H]
 *   CONNECTING ------------> READY ------------------------------------> STALE
 *        |                     ^                                            |
 *        |                     +-------- initialize answered again [H] -----+
 *        +------------------ the server forgot our session [H] ----------> STALE
 *
 *   CONNECTING, READY --the server stopped reading its stdin, we killed it [W]--> KILLED
 *   CONNECTING, READY, STALE, KILLED --the transport ended [T], or abort [A]--> DEAD
 *   every state but CLOSING --mcp_client_close [C]--> CLOSING
 *
 * [K] mcp_client_connect, once its handshake succeeded (a server that already died stays DEAD).
 * [H] the HTTP transport, on the thread that got the answer: a 404 to a message that carried our
 * current session id (one that came for an older id is no news); a 2xx to initialize, sent by the
 * one thread that initializes again (under reinit_lock) while the others wait to resend. In STALE
 * the transport refuses every message but initialize. [W] the stdio transport, on a writer whose
 * deadline passed with part of a line written: the stream cannot carry another message, so the
 * server is killed; its exit is still to come, from the reader. [T] the stdio reader: the server
 * exited, closed its stdout or sent a line over the cap. [A] mcp_client_abort (sandboxd shuts
 * down). In DEAD, every waiting and every later request fails with the kind and reason of the
 * first of [T] and [A]; what comes after is no news. [C] mcp_client_close, once no other thread
 * uses the client: the reports its shutdown causes (the server's exit) are no news either.
 */
#ifndef SANDBOXD_MCPCLIENT_CLIENT_INT_H
#define SANDBOXD_MCPCLIENT_CLIENT_INT_H

#include <assert.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "mcpclient/client.h"
#include "util/lifecycle.h"

/*
 * The transport interface. A transport moves whole JSON-RPC messages. Incoming messages reach the
 * client through mcp_client_on_message(), from the stdio reader thread or, for HTTP, from inside
 * ops->send on the sending thread (the answer to an HTTP request arrives in its own response), so
 * a client must expect a request's answer before send() returns. The transport reports the
 * edges marked [H], [W] and [T] above through the functions below; none is called after
 * ops->close() has returned.
 */
struct mcp_transport;

struct mcp_transport_ops {
    const char *name; /* "stdio" or "http" */
    /* Send one message (borrowed) before deadline_us (monotonic µs). 0, or -errno with err
     * filled. -ESTALE (HTTP only): the server forgot our session (the connection is STALE); the
     * client must initialize again. An HTTP request returns 0 only once its answer went through
     * mcp_client_on_message(). */
    int (*send)(struct mcp_transport *t, json_t *msg, int64_t deadline_us, struct sbx_error *err);
    /* Called after each successful handshake with the negotiated version (borrowed). */
    void (*set_protocol_version)(struct mcp_transport *t, const char *version);
    /* Stop every transfer in progress soon (may be NULL: sends never block long). */
    void (*abort)(struct mcp_transport *t);
    /* Shut down and free. */
    void (*close)(struct mcp_transport *t);
};

struct mcp_transport {
    const struct mcp_transport_ops *ops;
};

/* The states of the diagram above. */
enum mcp_conn_state {
    MCP_CONN_CONNECTING, /* the transport is open, the handshake runs */
    MCP_CONN_READY,      /* initialized */
    MCP_CONN_STALE,      /* (HTTP) the server forgot our session: initialize again */
    MCP_CONN_KILLED,     /* (stdio) we killed the server; its exit is not reported yet */
    MCP_CONN_DEAD,       /* the transport ended, or the client was aborted */
    MCP_CONN_CLOSING,    /* mcp_client_close() runs */
    MCP_CONN_STATE_COUNT
};

struct client_pending;

struct mcp_client {
    struct mcp_server_config cfg;
    struct mcp_transport *t;
    pthread_condattr_t condattr;

    pthread_mutex_t lock; /* everything down to notify_lock */
    enum mcp_conn_state state;
    struct client_pending *pending;
    json_int_t next_id;
    enum sbx_upstream dead_kind; /* DEAD: why */
    char *dead_why;
    json_t *server_info;
    uint64_t tools_generation;
    unsigned invalid_logged;

    pthread_mutex_t notify_lock; /* held while the callback runs */
    mcp_notify_fn notify;
    void *notify_userdata;

    pthread_mutex_t reinit_lock; /* one re-initialization at a time (HTTP) */
};

/* from -> to is an edge of the diagram above. */
bool mcp_client_transition_ok(enum mcp_conn_state from, enum mcp_conn_state to);
/* Move c to state `to` (c->lock held); assert()s that the edge is legal. */
void mcp_client_set_state(struct mcp_client *c, enum mcp_conn_state to);
/* The name of a state ("READY", ...), for messages. */
const char *mcp_client_state_name(enum mcp_conn_state s);
/* The state now (takes c->lock). */
enum mcp_conn_state mcp_client_state(struct mcp_client *c);

/* A client in CONNECTING with a copy of cfg and no transport yet (c->t NULL): what
 * mcp_client_connect() starts from. 0, or -ENOMEM. Freed by mcp_client_close(). */
int mcp_client_alloc(const struct mcp_server_config *cfg, struct mcp_client **ret);

/* The transitions, each named for what happened; each takes c->lock, and a report that finds the
 * connection where it means nothing (said twice, or after DEAD or CLOSING) changes nothing. The
 * transports call them with their own lock held: c->lock is never held while calling into a
 * transport. */
/* [K] CONNECTING -> READY. */
void mcp_client_initialized(struct mcp_client *c);
/* [H] a 404 for our current session: CONNECTING, READY -> STALE. */
void mcp_client_session_lost(struct mcp_client *c);
/* [H] initialize answered with a 2xx: STALE -> READY. */
void mcp_client_initialize_answered(struct mcp_client *c);
/* [W] CONNECTING, READY -> KILLED. */
void mcp_client_stalled(struct mcp_client *c);
/* [T] -> DEAD: every waiting request fails with kind and why (copied). mcp_client_abort() [A]
 * is the same edge. */
void mcp_client_transport_ended(struct mcp_client *c, enum sbx_upstream kind, const char *why);
/* A message from the server (borrowed): an answer, a notification, a request or a batch. */
void mcp_client_on_message(struct mcp_client *c, json_t *msg);

#endif
