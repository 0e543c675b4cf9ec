// SPDX-License-Identifier: MIT
/*
 * connstate — the lifecycle of an egress connection: the legal edges of the diagram in
 * proxy_int.h as data, and the one function that moves a connection along them (asserting
 * the edge). Runs on the proxy's loop, which alone touches connections; nothing here locks.
 */
#include <assert.h>

#include "egress/proxy_int.h"
#include "util/macros.h"

/* Where each state may go (a set of bits). */
static const unsigned egress_conn_edges[CS_STATE_COUNT] = {
    [CS_HEAD] = LIFECYCLE_BIT(CS_RESOLVE) | LIFECYCLE_BIT(CS_HELLO) | LIFECYCLE_BIT(CS_CONNECT) |
                LIFECYCLE_BIT(CS_REPLY) | LIFECYCLE_BIT(CS_CLOSED),
    [CS_RESOLVE] = LIFECYCLE_BIT(CS_HELLO) | LIFECYCLE_BIT(CS_CONNECT) | LIFECYCLE_BIT(CS_REPLY) |
                   LIFECYCLE_BIT(CS_CLOSED),
    [CS_HELLO] = LIFECYCLE_BIT(CS_CONNECT) | LIFECYCLE_BIT(CS_REPLY) | LIFECYCLE_BIT(CS_CLOSED),
    [CS_CONNECT] = LIFECYCLE_BIT(CS_CONNECT) | LIFECYCLE_BIT(CS_RELAY) | LIFECYCLE_BIT(CS_REPLY) |
                   LIFECYCLE_BIT(CS_CLOSED),
    [CS_RELAY] = LIFECYCLE_BIT(CS_CLOSED),
    [CS_REPLY] = LIFECYCLE_BIT(CS_LINGER) | LIFECYCLE_BIT(CS_CLOSED),
    [CS_LINGER] = LIFECYCLE_BIT(CS_CLOSED),
    [CS_CLOSED] = 0,
};

static_assert(CS_STATE_COUNT <= 32, "the edge sets are bits of an unsigned");

static const char *const egress_conn_names[CS_STATE_COUNT] = {
    [CS_HEAD] = "HEAD",       [CS_RESOLVE] = "RESOLVE", [CS_HELLO] = "HELLO",
    [CS_CONNECT] = "CONNECT", [CS_RELAY] = "RELAY",     [CS_REPLY] = "REPLY",
    [CS_LINGER] = "LINGER",   [CS_CLOSED] = "CLOSED",
};

static const struct lifecycle egress_conn_lifecycle = {"egress connection", CS_STATE_COUNT,
                                                       egress_conn_edges, egress_conn_names};

bool egress_conn_transition_ok(enum egress_conn_state from, enum egress_conn_state to)
{
    return lifecycle_edge_ok(&egress_conn_lifecycle, (int)from, (int)to);
}

void egress_conn_set_state(struct egress_conn *c, enum egress_conn_state to)
{
    lifecycle_check(&egress_conn_lifecycle, (int)c->st, (int)to);
    c->st = to;
}

const char *egress_conn_state_name(enum egress_conn_state s)
{
    return lifecycle_name(&egress_conn_lifecycle, (int)s);
}
