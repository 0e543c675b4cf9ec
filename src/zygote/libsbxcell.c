// SPDX-License-Identifier: MIT
/*
 * libsbxcell — the per-execution confinement of a cell, loaded with ctypes
 * into the pool's zygote (a jailed, pre-initialised Python). For every cell
 * the zygote calls sbx_cell_prefork() (new pid namespace for the next
 * child), os.fork(), then sbx_cell_postfork() in itself and
 * sbx_cell_enter() in the child. The child leaves sbx_cell_enter() in new
 * mount, net, ipc, uts, cgroup and user namespaces, with a fresh /tmp,
 * /dev/shm and /proc, its fds placed, rlimits set, no capabilities,
 * no_new_privs and the seccomp filter loaded: from then on it may run
 * untrusted code. The network namespace may be one the zygote reuses (sbx_netns_create), or,
 * in a network pool, one the zygote made for this cell alone with its egress listener
 * (sbx_netns_egress).
 *
 * Plain C ABI (no Python headers) so any Python 3 can load it. The forked
 * child is single-threaded (the zygote never starts threads), but the steps
 * shared with jail/ are async-signal-safe anyway. Which steps a cell goes
 * through, in which order, is jail/confine.h's table (its warm column), the
 * same table the cold path (jail/spawn.c) runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <unistd.h>

#include "jail/confine.h"
#include "jail/steps.h"

#define SBX_EXPORT __attribute__((visibility("default")))

SBX_EXPORT int sbx_cell_prefork(void);
SBX_EXPORT int sbx_cell_postfork(int pidns_fd);
SBX_EXPORT int sbx_netns_create(int self_netns_fd);
SBX_EXPORT int sbx_netns_egress(int self_netns_fd, int port, int *ret_listener);
SBX_EXPORT int sbx_cell_enter(uint64_t tmp_bytes, int proto_fd, int out_fd, int err_fd,
                              int netns_fd, const void *filter, size_t filter_len, uint64_t nofile,
                              uint64_t nproc, uint64_t fsize, int *ret_step);
/* The step table (jail/confine.h), for the runtime: how many steps, the name of step (NULL out
 * of range) and the step that places the file descriptors (a failure after it is reported on
 * fd 3, before it on the proto fd the zygote handed over). */
SBX_EXPORT int sbx_step_count(void);
SBX_EXPORT const char *sbx_step_name(int step);
SBX_EXPORT int sbx_step_fds(void);

int sbx_step_count(void)
{
    return CONFINE_STEP_COUNT;
}

const char *sbx_step_name(int step)
{
    return step >= 0 && step < CONFINE_STEP_COUNT ? confine_steps[step].name : NULL;
}

int sbx_step_fds(void)
{
    return CONFINE_STEP_REMAP_FDS;
}

/* The next child becomes init of a new pid namespace. */
int sbx_cell_prefork(void)
{
    return unshare(CONFINE_NS_WARM_PREFORK) < 0 ? -errno : 0;
}

/* Point the zygote's "pid namespace for children" back at its own, so the next prefork can
 * create a fresh one again (unshare refuses while the two differ). */
int sbx_cell_postfork(int pidns_fd)
{
    return setns(pidns_fd, CLONE_NEWPID) < 0 ? -errno : 0;
}

/* A new network namespace (loopback only, down), held by the returned fd; the zygote itself
 * stays in its own. Network namespaces are the most expensive part of a cell (creation and
 * the kernel's asynchronous cleanup, ~0.7 ms together), so the zygote reuses them: one at a
 * time, for cell after cell. That leaks nothing between executions: a cell has no
 * capability in the namespace (it cannot bring lo up, add routes or change sysctls), may
 * only create AF_UNIX sockets (seccomp), and every socket it had dies with it before the
 * zygote sees it exit. */
int sbx_netns_create(int self_netns_fd)
{
    if (unshare(CLONE_NEWNET) < 0)
        return -errno;
    int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    int err = fd < 0 ? errno : 0;
    if (setns(self_netns_fd, CLONE_NEWNET) < 0) {
        /* The zygote would stay in the new namespace: unusable for further cells. */
        if (fd >= 0)
            close(fd);
        return -errno;
    }
    return fd < 0 ? -err : fd;
}

/* The network namespace of one cell of a network pool (its zygote's config has an egressPort):
 * a new one, never reused, with lo up and a socket listening on 127.0.0.1:port in it
 * (*ret_listener), which the zygote hands to sandboxd with "forked" and closes. The zygote
 * makes it, not the cell: the zygote holds CAP_NET_ADMIN in the user namespace that owns the
 * new network namespace, and the cell's own user namespace, made later (step 'unshare(user)'),
 * owns none of its namespaces. The cell joins it in step 'namespaces' and closes its copy of
 * the listener in step 'file descriptors', before any code of a job runs. Returns the
 * namespace's fd, or -errno (the zygote back in its own namespace either way). */
int sbx_netns_egress(int self_netns_fd, int port, int *ret_listener)
{
    if (port <= 0 || port > 65535)
        return -EINVAL;
    if (unshare(CLONE_NEWNET) < 0)
        return -errno;
    int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    int r = fd < 0 ? -errno : 0;
    int listener = r == 0 ? steps_egress_listen((uint16_t)port) : -1;
    if (r == 0 && listener < 0)
        r = listener;
    if (setns(self_netns_fd, CLONE_NEWNET) < 0)
        r = -errno; /* the zygote would stay in the new namespace: unusable for further cells */
    if (r < 0) {
        if (fd >= 0)
            close(fd);
        if (listener >= 0)
            close(listener);
        return r;
    }
    *ret_listener = listener;
    return fd;
}

/* What sbx_cell_enter was given. */
struct cell {
    int proto_fd, out_fd, err_fd;
    int netns_fd; /* a reused network namespace, or -1: a new one */
    const void *filter;
    size_t filter_len;
    uint64_t nofile, nproc, fsize;
    char tmpfs_opts[64]; /* of /tmp and /dev/shm */
};

static int sys(int r)
{
    return r < 0 ? -errno : 0;
}

static int cell_namespaces(int netns_fd)
{
    int flags = CONFINE_NAMESPACES & ~(CONFINE_NS_WARM_PREFORK | CONFINE_NS_WARM_LATE);
    if (netns_fd >= 0) {
        if (setns(netns_fd, CLONE_NEWNET) < 0)
            return -errno;
        flags &= ~CLONE_NEWNET;
    }
    return sys(unshare(flags));
}

static int cell_proc_readonly(void)
{
    for (size_t i = 0; i < confine_proc_readonly_n; i++) {
        if (access(confine_proc_readonly[i], F_OK) < 0)
            continue;
        int r = steps_bind_remount(confine_proc_readonly[i], CONFINE_PROC_RO_FLAGS);
        if (r < 0)
            return r;
    }
    return 0;
}

#define CELL_STR_(x) #x
#define CELL_STR(x)  CELL_STR_(x)
/* The cell's id inside its user namespace is the zygote's 0 outside. */
static const char cell_id_map[] = CELL_STR(CONFINE_SANDBOX_UID) " 0 1\n";

static int cell_fds(const struct cell *c)
{
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (devnull < 0)
        return -errno;
    struct steps_fdmap map[] = {{devnull, 0}, {c->out_fd, 1}, {c->err_fd, 2}, {c->proto_fd, 3}};
    int r = steps_remap_fds(map, 4, 4);
    return r < 0 ? r : sys(fcntl(3, F_SETFD, FD_CLOEXEC));
}

static int cell_rlimits(const struct cell *c)
{
    struct confine_limits cl = {.nofile = c->nofile, .nproc = c->nproc, .fsize = c->fsize};
    struct steps_rlimit rl[CONFINE_RLIMITS_MAX];
    return steps_set_rlimits(rl, confine_rlimits(&cl, rl));
}

static int cell_seccomp(const struct cell *c)
{
    if (!c->filter || !c->filter_len)
        return 0;
    struct sock_fprog prog = {
        .len = (unsigned short)(c->filter_len / sizeof(struct sock_filter)),
        .filter = (struct sock_filter *)c->filter,
    };
    return steps_load_seccomp(&prog);
}

/* One step of confine.h's table, as the warm path does it (its CONFINE_WARM column). No
 * default: a step added to the table without a case here does not build. */
static int cell_step(const struct cell *c, enum confine_step step)
{
    switch (step) {
    case CONFINE_STEP_NAMESPACES:
        return cell_namespaces(c->netns_fd);
    /* Fresh writable filesystems: nothing written by one cell is visible to the next. */
    case CONFINE_STEP_MOUNT_TMP:
        return steps_mount("tmpfs", "/tmp", "tmpfs", CONFINE_TMP_FLAGS, c->tmpfs_opts);
    case CONFINE_STEP_MOUNT_SHM:
        return steps_mount("tmpfs", "/dev/shm", "tmpfs", CONFINE_SHM_FLAGS, c->tmpfs_opts);
    case CONFINE_STEP_MOUNT_PROC:
        return steps_mount("proc", "/proc", "proc", CONFINE_PROC_FLAGS, NULL);
    case CONFINE_STEP_PROC_READONLY:
        return cell_proc_readonly();
    case CONFINE_STEP_HOSTNAME:
        return sys(sethostname(CONFINE_HOSTNAME, sizeof(CONFINE_HOSTNAME) - 1));
    /* A user namespace of its own in which it is "nobody": the zygote's uid 0 becomes 65534
     * here, and every capability it is given in the new namespace is dropped below. */
    case CONFINE_STEP_USERNS:
        return sys(unshare(CONFINE_NS_WARM_LATE));
    case CONFINE_STEP_DENY_SETGROUPS:
        return steps_write_file("/proc/self/setgroups", "deny", 4);
    case CONFINE_STEP_UID_MAP:
        return steps_write_file("/proc/self/uid_map", cell_id_map, sizeof(cell_id_map) - 1);
    case CONFINE_STEP_GID_MAP:
        return steps_write_file("/proc/self/gid_map", cell_id_map, sizeof(cell_id_map) - 1);
    case CONFINE_STEP_CHDIR_TMP:
        return sys(chdir("/tmp"));
    case CONFINE_STEP_REMAP_FDS:
        return cell_fds(c);
    case CONFINE_STEP_RLIMITS:
        return cell_rlimits(c);
    case CONFINE_STEP_DROP_CAPS:
        return steps_drop_caps();
    case CONFINE_STEP_NO_NEW_PRIVS:
        return steps_no_new_privs();
    case CONFINE_STEP_SECCOMP:
        return cell_seccomp(c);
    case CONFINE_STEP_WAIT_PARENT:
    case CONFINE_STEP_SETGROUPS:
    case CONFINE_STEP_SETRESUID:
    case CONFINE_STEP_MOUNT_PRIVATE:
    case CONFINE_STEP_OPEN_SOURCES:
    case CONFINE_STEP_ROOT_TMPFS:
    case CONFINE_STEP_CHDIR_NEWROOT:
    case CONFINE_STEP_MOUNT_OPS:
    case CONFINE_STEP_PIVOT_ROOT:
    case CONFINE_STEP_DETACH_OLD_ROOT:
    case CONFINE_STEP_CHDIR_ROOT:
    case CONFINE_STEP_REMOUNT_ROOT_RO:
    case CONFINE_STEP_EGRESS:
    case CONFINE_STEP_SIGNALS:
    case CONFINE_STEP_EXECVE:
    case CONFINE_STEP_COUNT:
        break; /* not on this path: confine_steps[step] says why */
    }
    return -ENOSYS;
}

/* The warm path: every step its column runs, in the table's order. */
int sbx_cell_enter(uint64_t tmp_bytes, int proto_fd, int out_fd, int err_fd, int netns_fd,
                   const void *filter, size_t filter_len, uint64_t nofile, uint64_t nproc,
                   uint64_t fsize, int *ret_step)
{
    struct cell c = {
        .proto_fd = proto_fd,
        .out_fd = out_fd,
        .err_fd = err_fd,
        .netns_fd = netns_fd,
        .filter = filter,
        .filter_len = filter_len,
        .nofile = nofile,
        .nproc = nproc,
        .fsize = fsize,
    };
    snprintf(c.tmpfs_opts, sizeof(c.tmpfs_opts), CONFINE_TMPFS_OPTIONS,
             (unsigned long long)tmp_bytes);
    for (int step = 0; step < CONFINE_STEP_COUNT; step++) {
        if (!confine_steps[step].on[CONFINE_WARM].runs)
            continue;
        int r = cell_step(&c, (enum confine_step)step);
        if (r < 0) {
            *ret_step = step;
            return r;
        }
    }
    return 0;
}
