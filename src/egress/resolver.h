// SPDX-License-Identifier: MIT
/*
 * resolver — host name lookups for the egress proxy, off its event loop:
 * a few threads run getaddrinfo() (which blocks for as long as the host's
 * resolver configuration lets it), a bounded queue holds what waits, and
 * each answer is handed back through a list the loop drains when the
 * eventfd it gave us fires. A lookup whose requester went away is simply
 * dropped by the loop (it looks answers up by id).
 *
 * Lookups belong to groups (the proxy's tenants): a group runs at most
 * group_threads lookups at once and has at most group_pending queued or
 * running, so that slow names of one group (any name under an allowed
 * wildcard may be slow) never hold every thread: a worker takes the oldest
 * lookup whose group is under its share, not simply the oldest.
 */
#ifndef SANDBOXD_EGRESS_RESOLVER_H
#define SANDBOXD_EGRESS_RESOLVER_H

#include <stdint.h>
#include <sys/socket.h>

#include "egress/host.h"

#define EGRESS_ADDRS_MAX 8

struct egress_lookup {
    uint64_t id;
    const void *group; /* whose: compared, never dereferenced */
    char host[EGRESS_NAME_MAX + 1];
    uint16_t port;
    int error; /* 0, or a getaddrinfo EAI_* code */
    unsigned n;
    struct sockaddr_storage addrs[EGRESS_ADDRS_MAX];
    socklen_t lens[EGRESS_ADDRS_MAX];
    struct egress_lookup *next;
};

struct egress_resolver;

struct egress_resolver_limits {
    unsigned threads;       /* workers */
    unsigned max_pending;   /* lookups queued or running, all groups */
    unsigned group_threads; /* lookups of one group running at once */
    unsigned group_pending; /* lookups of one group queued or running */
};

/* wake_fd (an eventfd, borrowed) gets written when answers are ready. */
int egress_resolver_new(const struct egress_resolver_limits *lim, int wake_fd,
                        struct egress_resolver **ret);
/* Stops the workers; waits for lookups in progress (bounded by the host's resolver
 * timeouts). NULL is a no-op. */
void egress_resolver_free(struct egress_resolver *r);
/* Queue a lookup of host:port (TCP, IPv4 and IPv6) for group. -EAGAIN when max_pending are
 * waiting, -EBUSY when group_pending of this group are. */
int egress_resolver_submit(struct egress_resolver *r, uint64_t id, const char *host, uint16_t port,
                           const void *group);
/* The answers ready now, as a list (caller frees each with free()). */
struct egress_lookup *egress_resolver_take(struct egress_resolver *r);

#endif
