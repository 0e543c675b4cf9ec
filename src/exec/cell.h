// SPDX-License-Identifier: MIT
/*
 * cell — one live sandboxed interpreter as the host sees it: its pid and
 * pidfd, the protocol socket (fd 3 inside), the read ends of its stdout and
 * stderr, and its cgroup. Cells come from two places behind one interface:
 * cold (jail_spawn of a fresh interpreter, reaped by us) and warm (forked by
 * a pool zygote, reaped by the zygote, which reports the exit to the pool).
 *
 * A cell is owned by exactly one user at a time; cell_free() kills what is
 * left of it and releases everything.
 */
#ifndef SANDBOXD_EXEC_CELL_H
#define SANDBOXD_EXEC_CELL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "jail/cgroup.h"
#include "jail/jail.h"
#include "proto/frame.h"

struct cell_exit {
    int status; /* as from waitpid() */
    uint64_t cpu_us;
    uint64_t maxrss_kb;
};

struct cell;

struct cell_ops {
    /* Block until the process is gone or the deadline passes (-ETIMEDOUT). */
    int (*wait_exit)(struct cell *c, int64_t deadline_us, struct cell_exit *ret);
    /* Drop the backend's hold on the cell (after it was killed). */
    void (*release)(struct cell *c);
};

struct cell {
    const struct cell_ops *ops;
    void *backend; /* the pool's bookkeeping for warm cells */
    pid_t pid;     /* host pid namespace */
    int pidfd;
    int proto_fd;  /* host end of the protocol socket */
    int out_fd;    /* stdout read end */
    int err_fd;    /* stderr read end */
    int egress_fd; /* a network pool's cell: the socket listening in its network namespace,
                    * for the proxy (the acquirer takes it); -1 otherwise */
    struct cgroup_cell *cgroup;
    struct frame_reader reader;
    bool warm;
    bool killed;
    bool reaped;
    struct cell_exit exit_info;
};

/* A fresh interpreter through jail_spawn, running the one-shot worker. */
int cell_spawn_cold(const struct jail_config *cfg, const struct jail_limits *lim, size_t max_frame,
                    struct cell **ret);
/* The same, for an execution with a network policy: its loopback is up, it may create TCP
 * sockets (the TCP filter), and *ret_listener gets the socket listening on 127.0.0.1:port in
 * its network namespace (caller closes; docs/NETWORK.md). When there is no network pool, or a
 * profile is asked for: that pool's cells come with their listener in egress_fd. */
int cell_spawn_cold_egress(const struct jail_config *cfg, const struct jail_limits *lim,
                           size_t max_frame, uint16_t port, struct cell **ret, int *ret_listener);
/* Common constructor for backends; takes ownership of the fds. */
struct cell *cell_new(const struct cell_ops *ops, size_t max_frame);
void cell_kill(struct cell *c);
/* Kill (if alive) and release everything. NULL is a no-op. */
void cell_free(struct cell *c);
int cell_wait_exit(struct cell *c, int64_t deadline_us, struct cell_exit *ret);

#endif
