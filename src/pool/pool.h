// SPDX-License-Identifier: MIT
/*
 * pool — warm, pre-started sandboxes. One or more zygotes (jailed Pythons
 * with the runtime imported, see runtime/sandboxd_runtime/zygote.py) fork
 * cells ahead of demand; each cell is already confined (own namespaces,
 * fresh /tmp, no privileges, seccomp) and waits for its one job. An
 * execution takes a ready cell, the pool immediately forks a replacement,
 * and the used cell is killed afterwards: nothing of one request is visible
 * to the next. A pool thread owns the zygotes' sockets, attaches new cells
 * to their cgroups, reaps exits and restarts a zygote that dies.
 *
 * The number of ready cells follows demand: a miss (an acquirer found none ready) doubles the
 * target, up to max_size; after POOL_SHRINK_AFTER_US without a miss it halves towards size,
 * and ready cells beyond it are retired.
 */
#ifndef SANDBOXD_POOL_POOL_H
#define SANDBOXD_POOL_POOL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "exec/cell.h"
#include "jail/jail.h"

struct pool_options {
    unsigned size;     /* ready cells to keep when idle (the floor) */
    unsigned max_size; /* the most it grows to on misses (<= size: fixed at size) */
    unsigned zygotes;  /* forking processes */
    size_t max_frame;  /* largest frame a cell may send */
    uint64_t nproc;    /* per-cell process/thread rlimit */
    uint64_t nofile;
    const char *preimport;   /* comma-separated modules the zygotes import (may be NULL;
                              * copied) */
    const char *warmup;      /* trusted Python the zygotes run after the imports, before they
                              * fork (a profile's warm-up; may be NULL; copied) */
    const char *prepare;     /* what the cells prepare while they wait: "session" for the
                              * sessions' pool (session.prepare in the runtime), or NULL; a
                              * constant string, not copied */
    uint16_t egress_port;    /* a network pool: every cell in a network namespace of its own
                              * (never reused), lo up, a socket listening on 127.0.0.1:port
                              * there (its struct cell's egress_fd), and the filter's TCP
                              * variant (docs/NETWORK.md); 0: cells without a network */
    int64_t refill_delay_us; /* an acquire that leaves cells ready has its replacement forked
                              * this much later: on a busy machine a new cell's start (fork,
                              * confinement, warm-up: milliseconds of CPU) would compete with
                              * the acquirer's own (a session's set-up); 0: at once */
    bool lazy;               /* start the zygotes on the first pool_acquire, not in pool_new */
};

struct pool;

/* Start the zygotes and begin filling (lazy: on the first pool_acquire). Fails (logged) when a
 * zygote cannot start. */
int pool_new(const struct jail_config *jail, const struct pool_options *opt, struct pool **ret);
void pool_free(struct pool *p);
/* A ready cell (waits for one until deadline_us). *ret_hit: one was ready at once.
 * The cell's cgroup gets lim->memory and lim->nproc. Free with cell_free(). A network pool's
 * cell comes with its listener in (*ret)->egress_fd, for the caller to take. */
int pool_acquire(struct pool *p, const struct jail_limits *lim, int64_t deadline_us,
                 struct cell **ret, bool *ret_hit);
/* Figures for /healthz (new reference; NULL when out of memory). */
json_t *pool_stats(struct pool *p);
/* The memory of the zygotes and of the ready cells, from /proc/PID/smaps_rollup:
 * {zygoteRssBytes, zygotePssBytes, readyCells, cellsPssBytes, cellPssBytes (their average)}
 * (new reference; NULL when out of memory). A cell's PSS is what it costs besides the pages
 * it shares. */
json_t *pool_memory(struct pool *p);

#endif
