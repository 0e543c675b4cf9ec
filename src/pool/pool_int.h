// SPDX-License-Identifier: MIT
/*
 * pool_int — what the parts of the pool share (pool.c: cells, the pool thread, the public
 * calls; zygote.c: the zygotes and their control channel; stats.c: /healthz figures;
 * cellstate.c: the cell lifecycle below). Not for use outside src/pool/.
 *
 * The life of a cell (struct pool_cell), all of it under struct pool's one mutex. A cell
 * becomes READY once it said "ready" on its protocol socket AND its cgroup is attached; the
 * "ready" frame (from the cell) and "forked" (from its zygote) travel on two sockets, so
 * "ready" may even come first. Once handed out (TAKEN) it is gone only when its holder
 * released it AND its zygote reported its exit, in either order.
 *
 *   FORKING ------------"ready"----------> FORKING_SAID_READY
 *      | "forked"                               | "forked"
 *      v                                        v
 *   STARTING -----------"ready"----------> STARTING_SAID_READY
 *      | attached                               | attached
 *      v                                        v
 *   STARTING_ATTACHED --"ready"----------> READY
 *                                               | acquire [A], retire [P]
 *                                               v
 *   FORKING..READY --setup failed [P]----> TAKEN ---------release [R]-------> RELEASED
 *                                               | exit [P]                        | exit [P]
 *                                               v                                 v
 *   FORKING..READY --exit, fork_failed [P]-> TAKEN_EXITED --release [R]-------> GONE
 *
 * [P] the pool thread: the messages it reads ("ready" from the cell; "forked", exit and
 * fork_failed from the zygote, or an exit it makes up when the zygote died), "attached" after
 * it joined the cell's cgroup without the lock, retire when the pool shrinks, and discarding a
 * cell that failed to start. [A] pool_acquire. [R] cell_free of the holder (warm_release):
 * the execution, or the pool thread itself for a retired or discarded cell, whose struct cell
 * goes to its free list. GONE: out of the token table, freed right after. pool_free() frees
 * what the pool holds without these transitions (the pool is going away) and moves a cell
 * still held from TAKEN to TAKEN_EXITED, so that its release frees it.
 */
#ifndef SANDBOXD_POOL_POOL_INT_H
#define SANDBOXD_POOL_POOL_INT_H

#include <assert.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <uthash.h>

#include "exec/cell.h"
#include "jail/jail.h"
#include "pool/pool.h"
#include "util/buf.h"
#include "util/lifecycle.h"
#include "util/thread.h"

/* Demand: a pool shrinks after this long without a miss, one step per POOL_SHRINK_STEP_US. */
#define POOL_SHRINK_AFTER_US 5000000
#define POOL_SHRINK_STEP_US  1000000

enum pool_watch_kind { WATCH_WAKE, WATCH_ZCTL, WATCH_ZOUT, WATCH_ZPID, WATCH_CELL };

struct pool_watch {
    enum pool_watch_kind kind;
    void *obj;
};

/* The order matters: the states before PC_TAKEN are the pool's, see pool_cell_pooled(). */
enum pool_cell_state {
    PC_FORKING,             /* a zygote was asked to fork it */
    PC_FORKING_SAID_READY,  /* it said "ready" before its zygote said "forked" */
    PC_STARTING,            /* forked: setting itself up; its cgroup is being attached */
    PC_STARTING_SAID_READY, /* forked, said "ready"; its cgroup is being attached */
    PC_STARTING_ATTACHED,   /* forked, in its cgroup; it has not said "ready" yet */
    PC_READY,               /* in the ready FIFO */
    PC_TAKEN,               /* handed out (acquired, retired or discarded): held, no exit known */
    PC_TAKEN_EXITED,        /* held, its exit known (warm_wait_exit answers) */
    PC_RELEASED,            /* released; its exit is not known yet */
    PC_GONE,                /* released and exited: out of the token table, being freed */
    PC_STATE_COUNT
};

struct zygote;

struct pool_cell {
    uint64_t token;
    int64_t t_request, t_forked, t_attached, t_ready; /* lifecycle timestamps (us) */
    struct pool *pool;
    struct zygote *z;
    enum pool_cell_state state;
    struct cell *cell;          /* owned by the pool until TAKEN */
    struct cgroup_cell *cgroup; /* to remove once the exit is known (after release) */
    struct cell_exit exit_info; /* valid from PC_TAKEN_EXITED on */
    struct pool_watch watch;
    struct pool_cell *next; /* ready FIFO */
    UT_hash_handle hh;
};

struct zygote {
    struct pool *pool;
    int index;
    struct jail_proc proc;
    int ctl_fd;
    int log_fd; /* stdout and stderr of the zygote, merged */
    struct cgroup_cell *cgroup;
    bool alive;
    unsigned pending;
    unsigned restarts;
    uint64_t forks;
    int64_t restart_at_us; /* 0: not waiting to restart */
    struct buf logbuf;
    struct pool_watch w_ctl, w_log, w_pid;
};

struct pool {
    const struct jail_config *jail;
    struct pool_options opt;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct pool_cell *cells;
    struct pool_cell *ready_head, *ready_tail;
    unsigned n_ready, n_starting;
    struct zygote *zygotes;
    uint64_t next_token;
    int epfd, evfd;
    struct pool_watch w_wake;
    struct thread_group thread; /* its stop also ends pool_acquire()'s waits */
    int filter_fd;
    json_t *preimport;    /* array of module names for the zygotes' config */
    char *warmup;         /* code the zygotes run before forking, or NULL */
    bool started;         /* false while a lazy pool waits for its first acquire */
    unsigned target;      /* ready + starting cells wanted now: opt.size .. opt.max_size */
    int64_t refill_at_us; /* no replacement is forked before (opt.refill_delay_us); 0: none */
    int64_t last_miss_us, last_shrink_us;
    uint64_t hits, misses, created, failed, died_idle, retired;
    uint64_t exits, exit_minflt; /* cells reaped, and their minor faults from fork to exit */
    uint64_t ready_minflt;       /* the faults of the cells that became ready, until then */
};

/* from -> to is an edge of the diagram above. */
bool pool_cell_transition_ok(enum pool_cell_state from, enum pool_cell_state to);
/* Move pc to state `to` (pool lock held); assert()s that the edge is legal. */
void pool_cell_set_state(struct pool_cell *pc, enum pool_cell_state to);
/* The name of a state ("FORKING", ...), for messages. */
const char *pool_cell_state_name(enum pool_cell_state s);
/* assert_pool_cell_state(pc, PC_A, PC_B...): a precondition, pc is in one of these states. */
#define assert_pool_cell_state(pc, ...) assert(LIFECYCLE_IN((pc)->state, __VA_ARGS__))

/* The transitions with their bookkeeping (cellstate.c; pool lock held). */
/* Free pc and the cgroup it kept (the cell is out of the token table). */
void pool_cell_destroy(struct pool_cell *pc);
/* Take pc out of the ready FIFO (a no-op when it is not there). */
void pool_ready_remove(struct pool *p, struct pool_cell *pc);
/* pc said "ready" and its cgroup is attached: READY, at the end of the ready FIFO. */
void pool_cell_make_ready(struct pool *p, struct pool_cell *pc);
/* pc, starting, said "ready": the next state of the diagram (READY when it is attached). */
void pool_cell_said_ready(struct pool *p, struct pool_cell *pc);
/* A cell of the pool failed to start (to: PC_TAKEN) or died (to: PC_TAKEN_EXITED): out of the
 * pool's counters; returns its struct cell, which the caller frees (cell_free releases pc). */
struct cell *pool_cell_discard(struct pool *p, struct pool_cell *pc, enum pool_cell_state to);
/* pc exited (info, and its minor faults): recorded, waiters woken; a cell the pool held is
 * discarded (returned, for the caller to free), a released one freed. */
struct cell *pool_cell_exited(struct pool *p, struct pool_cell *pc, const struct cell_exit *info,
                              uint64_t minflt);

/* The pool still owns a cell in this state (FORKING .. READY). */
static inline bool pool_cell_pooled(enum pool_cell_state s)
{
    return s < PC_TAKEN;
}

/* A cell in this state is starting: its protocol socket is watched (FORKING .. ATTACHED). */
static inline bool pool_cell_starting(enum pool_cell_state s)
{
    return s < PC_READY;
}

/* The processes whose memory pool_memory() reads (stats.c): the live zygotes and the ready
 * cells, every one of them (the arrays are sized to the pool). */
struct pool_pids {
    pid_t *zygotes, *cells; /* owned: pool_pids_done() */
    size_t n_zygotes, n_cells;
};
/* Fill *ret (lock held): 0, or -ENOMEM with nothing to free. */
int pool_memory_pids(const struct pool *p, struct pool_pids *ret);
/* Free the arrays (a zeroed struct too) and zero *pp. */
void pool_pids_done(struct pool_pids *pp);

/* Send msg (and fds, SCM_RIGHTS) on a zygote's control socket: 0 or -errno. */
int pool_send(int fd, json_t *msg, const int *fds, size_t nfds);
/* The most fds a zygote's message carries: "forked" has the cell's pidfd, and a network
 * pool's cell's listener. */
#define POOL_RECV_FDS 2
/* One message from a zygote's control socket, with the fds it carries in ret_fds (-1 for the
 * rest; more are closed): 1, 0 at EOF, -EAGAIN when there is nothing yet, or -errno. */
int pool_recv(int fd, json_t **ret, int ret_fds[POOL_RECV_FDS]);
/* Close what pool_recv() gave (and set them to -1). */
void pool_close_fds(int fds[POOL_RECV_FDS]);
/* The pid behind a pidfd (from /proc/self/fdinfo), or -1. */
pid_t pool_pidfd_pid(int pidfd);
/* Watch fd in the pool thread's epoll set. */
int pool_epoll_add(struct pool *p, int fd, struct pool_watch *w);
void pool_epoll_del(struct pool *p, int fd);
/* Start zygote z: spawn it in the jail, send its configuration, watch its fds (lock held or
 * before the thread runs). 0 or -errno. */
int pool_zygote_start(struct pool *p, struct zygote *z);
/* Wait up to timeout_ms for z's "ready" message: 0 or -errno. */
int pool_zygote_wait_ready(struct zygote *z, int64_t timeout_ms);
/* Read what z printed and log it line by line. */
void pool_zygote_drain_log(struct zygote *z);

#endif
