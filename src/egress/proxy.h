// SPDX-License-Identifier: MIT
/*
 * proxy — the host-side HTTP proxy through which a sandbox with a network
 * policy reaches the outside, and nothing else (docs/NETWORK.md).
 *
 * The sandbox's network namespace holds a listening socket on
 * 127.0.0.1:EGRESS_SANDBOX_PORT that the jail made there and handed to
 * sandboxd (jail.h: egress_port). A tap attaches that listener to the
 * proxy with the execution's allow list; the proxy's one thread accepts on
 * it, reads each request (CONNECT host:port, or GET http://host/...),
 * checks it against the list, resolves the name on the host (or takes the
 * operator's pin), refuses private, loopback, link-local and metadata
 * addresses the operator did not name, checks that a tunnel's TLS
 * ClientHello asks for the same name, and only then connects upstream and
 * relays. Every decision is logged and counted per tap, and the last ones
 * are kept for the operator's /healthz (recent.h); a tap has a byte
 * cap and a connection cap per window (an execution, or one execution of a
 * session).
 *
 * The loop is an epoll event loop over non-blocking sockets with bounded
 * buffers and deadlines; name lookups run on a few threads of their own.
 * Taps are created and freed by other threads (thread-safe); everything
 * else belongs to the loop.
 */
#ifndef SANDBOXD_EGRESS_PROXY_H
#define SANDBOXD_EGRESS_PROXY_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "egress/policy.h"

#define EGRESS_SANDBOX_PORT 3128 /* where the proxy listens inside a sandbox (its own lo) */

#define EGRESS_POOL_DEFAULT       1024 /* connections through the proxy at once, everyone together */
#define EGRESS_TENANT_SHARE(pool) ((pool) / 4) /* a tenant's share by default: a quarter */

struct egress_options {
    const char *const *allow;   /* --egress-allow (NULL-terminated; may be NULL) */
    const char *const *resolve; /* --egress-resolve */
    const char *const *headers; /* --egress-header */
    uint64_t max_bytes;         /* per window, up and down together; 0: no cap */
    unsigned max_connections;   /* per window */
    /* Connections open at once (docs/NETWORK.md, "Shares"); 0 takes the default. The caller
     * sizes them (egress_shares_size) so that what every live session and running execution
     * may hold adds up to no more than the pool: then no one can take another's place. */
    unsigned pool;         /* everyone together (EGRESS_POOL_DEFAULT) */
    unsigned exec_open;    /* one execution */
    unsigned session_open; /* one session, its executions and what they leave running */
    unsigned tenant_open;  /* a tenant's share, unless its own is set (a quarter of the pool) */
};

/* The connection caps for holders: at most `sessions` live sessions and `executions` running
 * executions (0: none, e.g. `sandboxd mcp`). Each kind may hold at most half the pool; a cap
 * given (non-zero) is checked, one left 0 is set to the largest that fits (at most
 * EGRESS_SESSION_OPEN_DEFAULT, EGRESS_EXEC_OPEN_DEFAULT). 0, or -EINVAL with *err (INVALID,
 * INVALID_OPTION) saying which figures do not add up. */
#define EGRESS_EXEC_OPEN_DEFAULT    16
#define EGRESS_SESSION_OPEN_DEFAULT 8
int egress_shares_size(struct egress_options *o, unsigned sessions, unsigned executions,
                       struct sbx_error *err);

/* A tenant's part of the proxy: its connections at once across all its executions and
 * sessions, and its name lookups (EGRESS_RESOLVER_* in proxy_int.h). Owned by the tenant,
 * which outlives every tap of it; the loop counts, anyone may read. */
struct egress_share {
    const char *name;      /* for messages (borrowed) */
    unsigned max_open;     /* 0: the proxy's tenant_open */
    atomic_uint open;      /* connections held now */
    atomic_ullong refused; /* connections refused at the share */
};

enum egress_deny {
    EGRESS_DENY_POLICY,   /* host or port not in the allow list */
    EGRESS_DENY_ADDRESS,  /* the name resolves to an address that is not allowed */
    EGRESS_DENY_SNI,      /* the tunnel's TLS asks for another name */
    EGRESS_DENY_LIMIT,    /* byte or connection cap */
    EGRESS_DENY_PROTOCOL, /* not a proxy request, not TLS in a tunnel */
    EGRESS_DENY_N,
};

struct egress_stats {
    uint64_t bytes_up;   /* sent upstream (request heads, bodies, tunnel data) */
    uint64_t bytes_down; /* relayed back to the sandbox */
    uint64_t requests;   /* requests and tunnels allowed by the policy */
    uint64_t denied;     /* refused, all reasons */
    uint64_t denied_by[EGRESS_DENY_N];
};

struct egress_proxy;
struct egress_tap;

/* Parse the configuration and start the loop. Logs and returns -errno on failure. */
int egress_proxy_new(const struct egress_options *opt, struct egress_proxy **ret);
/* Stop the loop and close everything. Every tap must have been freed. NULL is a no-op. */
void egress_proxy_free(struct egress_proxy *p);
const struct egress_config *egress_proxy_config(const struct egress_proxy *p);
/* For the operator's /healthz: the ceiling, pinned names, hosts that get headers, the caps,
 * and the last decisions, newest first (recent.h) (new ref; NULL when out of memory). */
json_t *egress_proxy_describe(const struct egress_proxy *p);
/* The job's "network" member: {"proxy": "http://127.0.0.1:3128", "caFile": ca_file} (new ref;
 * ca_file: the certificate bundle inside the sandbox, or NULL). */
json_t *egress_proxy_job(const char *ca_file);

/* Whose a tap is. */
struct egress_owner {
    const char *label;          /* names the execution in the log (copied, cut at 300 bytes) */
    struct egress_share *share; /* the tenant's (borrowed); NULL: the operator, no share */
    bool session;               /* a session's tap: session_open, else exec_open */
};

/* Attach listen_fd (taken, closed on every path) with allow list pol (copied) for who. */
int egress_tap_new(struct egress_proxy *p, const struct egress_policy *pol, int listen_fd,
                   const struct egress_owner *who, struct egress_tap **ret);
/* The counts since the tap was made or last taken, and a new window: the caps start over. */
void egress_tap_take(struct egress_tap *t, struct egress_stats *ret);
/* Close the listener and every connection, then free. *ret_final (may be NULL) gets the
 * counts of the last window. NULL is a no-op. */
void egress_tap_free(struct egress_tap *t, struct egress_stats *ret_final);

const char *egress_deny_name(enum egress_deny d);
void egress_stats_add(struct egress_stats *to, const struct egress_stats *s);

#endif
