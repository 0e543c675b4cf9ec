// SPDX-License-Identifier: MIT
/*
 * pool_int — what the parts of the pool share (pool.c: cells, the pool thread, the public
 * calls; zygote.c: the zygotes and their control channel; stats.c: /healthz figures). Not for
 * use outside src/pool/.
 *
 * Cell states: FORKING (asked a zygote) -> STARTING (forked, setting itself up; the pool
 * thread attaches its cgroup) -> READY (sent "ready" and is attached) -> TAKEN (handed to an
 * execution). All of it is guarded by struct pool's one mutex.
 */
#ifndef SANDBOXD_POOL_POOL_INT_H
#define SANDBOXD_POOL_POOL_INT_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <uthash.h>

#include "exec/cell.h"
#include "jail/jail.h"
#include "pool/pool.h"
#include "util/buf.h"

/* Demand: a pool shrinks after this long without a miss, one step per POOL_SHRINK_STEP_US. */
#define POOL_SHRINK_AFTER_US 5000000
#define POOL_SHRINK_STEP_US  1000000

enum pool_watch_kind { WATCH_WAKE, WATCH_ZCTL, WATCH_ZOUT, WATCH_ZPID, WATCH_CELL };

struct pool_watch {
    enum pool_watch_kind kind;
    void *obj;
};

enum pool_cell_state { PC_FORKING, PC_STARTING, PC_READY, PC_TAKEN };

struct zygote;

struct pool_cell {
    uint64_t token;
    int64_t t_request, t_forked, t_attached, t_ready; /* lifecycle timestamps (us) */
    struct pool *pool;
    struct zygote *z;
    enum pool_cell_state state;
    struct cell *cell;          /* owned by the pool until TAKEN */
    struct cgroup_cell *cgroup; /* to remove once the exit is known (after release) */
    bool got_ready, attached, exited, released;
    struct cell_exit exit_info;
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
    pthread_t thread;
    bool stop;
    int filter_fd;
    json_t *preimport; /* array of module names for the zygotes' config */
    char *warmup;      /* code the zygotes run before forking, or NULL */
    bool started;      /* false while a lazy pool waits for its first acquire */
    unsigned target;   /* ready + starting cells wanted now: opt.size .. opt.max_size */
    int64_t last_miss_us, last_shrink_us;
    uint64_t hits, misses, created, failed, died_idle, retired;
    uint64_t exits, exit_minflt; /* cells reaped, and their minor faults from fork to exit */
    uint64_t ready_minflt;       /* the faults of the cells that became ready, until then */
};

/* Send msg (and fds, SCM_RIGHTS) on a zygote's control socket: 0 or -errno. */
int pool_send(int fd, json_t *msg, const int *fds, size_t nfds);
/* One message from a zygote's control socket, with the fd it carries (or -1): 1, 0 at EOF,
 * -EAGAIN when there is nothing yet, or -errno. */
int pool_recv(int fd, json_t **ret, int *ret_fd);
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
