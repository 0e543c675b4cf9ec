// SPDX-License-Identifier: MIT
/*
 * lifecycle — see lifecycle.h: the edge table lookup, the transition check and the
 * state-set test of the pool cell's and the session's state machines.
 */
#include "util/lifecycle.h"

#include <assert.h>

#include "util/log.h"

bool lifecycle_edge_ok(const struct lifecycle *m, int from, int to)
{
    if (from < 0 || from >= m->count || to < 0 || to >= m->count || to >= 32)
        return false;
    return (m->edges[from] & LIFECYCLE_BIT(to)) != 0;
}

const char *lifecycle_name(const struct lifecycle *m, int s)
{
    return s >= 0 && s < m->count && m->names[s] ? m->names[s] : "?";
}

void lifecycle_check(const struct lifecycle *m, int from, int to)
{
    bool ok = lifecycle_edge_ok(m, from, to);
    if (!ok)
        log_error("%s: no transition from %s to %s", m->what, lifecycle_name(m, from),
                  lifecycle_name(m, to));
    assert(ok);
}

bool lifecycle_in(int state, const int *set, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (set[i] == state)
            return true;
    return false;
}
