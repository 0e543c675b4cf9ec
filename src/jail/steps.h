// SPDX-License-Identifier: MIT
/*
 * steps — the privilege-shedding primitives every sandboxed process runs
 * through before it executes untrusted code: fd remapping, rlimits,
 * capability drop, no_new_privs, seccomp. Shared by the jail child (after
 * clone() in a threaded parent) and by libsbxcell (inside a zygote's forked
 * child), so everything here must stay async-signal-safe: raw syscalls only,
 * no allocation, no stdio, no locks. Errors are returned as -errno; the
 * caller knows which named step failed and reports it.
 */
#ifndef SANDBOXD_JAIL_STEPS_H
#define SANDBOXD_JAIL_STEPS_H

#include <linux/filter.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>

struct steps_rlimit {
    int resource;
    uint64_t value; /* soft = hard = value */
};

struct steps_fdmap {
    int src;
    int dst;
};

/* Place every src on its dst (srcs may overlap dsts), then close every fd >= first_free. */
int steps_remap_fds(const struct steps_fdmap *map, size_t n, int first_free);
int steps_set_rlimits(const struct steps_rlimit *rl, size_t n);
/* Empty every capability set, the bounding set and the ambient set; lock securebits so
 * that uid 0 gains nothing on execve. */
int steps_drop_caps(void);
int steps_no_new_privs(void);
/* Default disposition for every signal and an empty signal mask. */
int steps_reset_signals(void);
int steps_load_seccomp(const struct sock_fprog *prog);
/* open(path, O_WRONLY) + one write; for /proc/self/{uid_map,gid_map,setgroups}. */
int steps_write_file(const char *path, const char *data, size_t len);
/* Bind mount of an fd-held or path source (already resolved by the caller). */
int steps_mount(const char *src, const char *dst, const char *type, unsigned long flags,
                const char *data);
/* A read-only view of path (a bind of it on itself, submounts included) remounted with flags
 * (MS_RDONLY and the like). */
int steps_bind_remount(const char *path, unsigned long flags);
/* In the caller's own network namespace (it needs CAP_NET_ADMIN there): bring lo up and listen
 * on 127.0.0.1:port. The listening socket (close-on-exec), or -errno. */
int steps_egress_listen(uint16_t port);
/* steps_egress_listen(), then send the listening socket over the unix socket send_fd and close
 * our copy: the caller keeps no socket it could accept on (the cold path). */
int steps_egress_listener(uint16_t port, int send_fd);

#endif
