// SPDX-License-Identifier: MIT
/*
 * lifecycle — what the state machines of the pool cell (pool/pool_int.h) and of the session
 * (session/session_int.h) share: a machine as data (a set of legal next states per state,
 * and the states' names), the edge check behind their transition functions, and the test
 * behind their assert_*_state() preconditions. The machines themselves, their diagrams and
 * their transition functions live with their modules.
 */
#ifndef SANDBOXD_UTIL_LIFECYCLE_H
#define SANDBOXD_UTIL_LIFECYCLE_H

#include <stdbool.h>
#include <stddef.h>

/* The bit of state s in a set of states (at most 32 states). */
#define LIFECYCLE_BIT(s) (1u << (s))

struct lifecycle {
    const char *what;         /* "pool cell", "session": for messages */
    int count;                /* states 0 .. count - 1 (at most 32) */
    const unsigned *edges;    /* edges[from]: the bits of the states from may go to */
    const char *const *names; /* count names */
};

/* from -> to is an edge of m (false for a state out of range). */
bool lifecycle_edge_ok(const struct lifecycle *m, int from, int to);
/* The name of state s, or "?". */
const char *lifecycle_name(const struct lifecycle *m, int s);
/* A transition about to be made: when from -> to is no edge of m, log it and assert(). */
void lifecycle_check(const struct lifecycle *m, int from, int to);
/* state is one of the n states in set. */
bool lifecycle_in(int state, const int *set, size_t n);
/* LIFECYCLE_IN(state, A, B...): state is A or B or ... */
#define LIFECYCLE_IN(state, ...)                                                                   \
    lifecycle_in((int)(state), (const int[]){__VA_ARGS__},                                         \
                 sizeof((const int[]){__VA_ARGS__}) / sizeof(int))

#endif
