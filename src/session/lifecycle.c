// SPDX-License-Identifier: MIT
/*
 * lifecycle — the states of a session (the diagram in session_int.h) as data: the legal
 * edges, the one function that moves a session along them (asserting the edge), and
 * session_unlist(), the way into ENDED for a listed session. Callers hold owner->lock.
 */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "tenant/tenant.h"
#include "session/session_int.h"
#include "util/macros.h"

/* Where each state may go (a set of bits). */
static const unsigned session_edges[SESSION_STATE_COUNT] = {
    [SESSION_STARTING] =
        LIFECYCLE_BIT(SESSION_IDLE) | LIFECYCLE_BIT(SESSION_ARMED) | LIFECYCLE_BIT(SESSION_ENDED),
    [SESSION_IDLE] = LIFECYCLE_BIT(SESSION_RUNNING) | LIFECYCLE_BIT(SESSION_ENDED),
    [SESSION_ARMED] = LIFECYCLE_BIT(SESSION_RUNNING) | LIFECYCLE_BIT(SESSION_STOPPED) |
                      LIFECYCLE_BIT(SESSION_ENDED),
    [SESSION_STOPPED] = LIFECYCLE_BIT(SESSION_RUNNING) | LIFECYCLE_BIT(SESSION_ENDED),
    [SESSION_RUNNING] = LIFECYCLE_BIT(SESSION_IDLE) | LIFECYCLE_BIT(SESSION_ARMED) |
                        LIFECYCLE_BIT(SESSION_STOPPED) | LIFECYCLE_BIT(SESSION_ENDED),
    [SESSION_ENDED] = 0,
};

static_assert(SESSION_STATE_COUNT <= 32, "the edge sets are bits of an unsigned");

static const char *const session_names[SESSION_STATE_COUNT] = {
    [SESSION_STARTING] = "STARTING", [SESSION_IDLE] = "IDLE",       [SESSION_ARMED] = "ARMED",
    [SESSION_STOPPED] = "STOPPED",   [SESSION_RUNNING] = "RUNNING", [SESSION_ENDED] = "ENDED",
};

static const struct lifecycle session_lifecycle = {"session", SESSION_STATE_COUNT, session_edges,
                                                   session_names};

bool session_transition_ok(enum session_state from, enum session_state to)
{
    return lifecycle_edge_ok(&session_lifecycle, (int)from, (int)to);
}

void session_set_state(struct session *s, enum session_state to)
{
    lifecycle_check(&session_lifecycle, (int)s->state, (int)to);
    s->state = to;
}

const char *session_state_name(enum session_state st)
{
    return lifecycle_name(&session_lifecycle, (int)st);
}

void session_unlist(struct sessions *ss, struct session *s, const char *reason)
{
    if (!session_listed(s->state))
        return;
    HASH_DEL(ss->table, s);
    session_set_state(s, SESSION_ENDED);
    ss->live--;
    tenant_session_release(s->tenant);
    if (reason && !s->end_reason[0])
        snprintf(s->end_reason, sizeof(s->end_reason), "%s", reason);
    if (s->end_reason[0]) {
        struct session_ended *e = &ss->ended[ss->ended_next++ % SESSION_ENDED_KEPT];
        memcpy(e->id, s->id, sizeof(e->id));
        memcpy(e->reason, s->end_reason, sizeof(e->reason));
    }
}
