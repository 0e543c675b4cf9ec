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
 * untrusted code. The network namespace may be one the zygote reuses (sbx_netns_create).
 *
 * Plain C ABI (no Python headers) so any Python 3 can load it. The forked
 * child is single-threaded (the zygote never starts threads), but the steps
 * shared with jail/ are async-signal-safe anyway.
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

#include "jail/steps.h"

#define SBX_EXPORT __attribute__((visibility("default")))

/* Step numbers reported through *ret_step; the zygote maps them to names. */
enum sbx_step {
    SBX_STEP_UNSHARE,
    SBX_STEP_MOUNT_TMP,
    SBX_STEP_MOUNT_SHM,
    SBX_STEP_MOUNT_PROC,
    SBX_STEP_PROC_READONLY,
    SBX_STEP_HOSTNAME,
    SBX_STEP_USERNS,
    SBX_STEP_SETGROUPS,
    SBX_STEP_UID_MAP,
    SBX_STEP_GID_MAP,
    SBX_STEP_CHDIR,
    SBX_STEP_FDS,
    SBX_STEP_RLIMITS,
    SBX_STEP_DROP_CAPS,
    SBX_STEP_NO_NEW_PRIVS,
    SBX_STEP_SECCOMP,
};

SBX_EXPORT int sbx_cell_prefork(void);
SBX_EXPORT int sbx_cell_postfork(int pidns_fd);
SBX_EXPORT int sbx_netns_create(int self_netns_fd);
SBX_EXPORT int sbx_cell_enter(uint64_t tmp_bytes, int proto_fd, int out_fd, int err_fd,
                              int netns_fd, const void *filter, size_t filter_len, uint64_t nofile,
                              uint64_t nproc, uint64_t fsize, int *ret_step);

/* The next child becomes init of a new pid namespace. */
int sbx_cell_prefork(void)
{
    return unshare(CLONE_NEWPID) < 0 ? -errno : 0;
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

#define STEP(n, expr)                                                                              \
    do {                                                                                           \
        int r_ = (expr);                                                                           \
        if (r_ < 0) {                                                                              \
            *ret_step = (n);                                                                       \
            return r_;                                                                             \
        }                                                                                          \
    } while (0)

static int sys(int r)
{
    return r < 0 ? -errno : 0;
}

static int cell_proc_readonly(void)
{
    static const char *const ro[] = {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus",
                                     "/proc/pressure"};
    for (size_t i = 0; i < sizeof(ro) / sizeof(ro[0]); i++) {
        if (access(ro[i], F_OK) < 0)
            continue;
        int r = steps_mount(ro[i], ro[i], NULL, MS_BIND | MS_REC, NULL);
        if (r < 0)
            return r;
        r = steps_mount(NULL, ro[i], NULL,
                        MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
        if (r < 0)
            return r;
    }
    return 0;
}

int sbx_cell_enter(uint64_t tmp_bytes, int proto_fd, int out_fd, int err_fd, int netns_fd,
                   const void *filter, size_t filter_len, uint64_t nofile, uint64_t nproc,
                   uint64_t fsize, int *ret_step)
{
    char opts[64];
    int flags = CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP;
    if (netns_fd >= 0)
        STEP(SBX_STEP_UNSHARE, sys(setns(netns_fd, CLONE_NEWNET)));
    else
        flags |= CLONE_NEWNET;
    STEP(SBX_STEP_UNSHARE, sys(unshare(flags)));
    /* Fresh writable filesystems: nothing written by one cell is visible to the next. */
    snprintf(opts, sizeof(opts), "mode=1777,size=%llu", (unsigned long long)tmp_bytes);
    STEP(SBX_STEP_MOUNT_TMP, steps_mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, opts));
    STEP(SBX_STEP_MOUNT_SHM,
         steps_mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts));
    STEP(SBX_STEP_MOUNT_PROC,
         steps_mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL));
    STEP(SBX_STEP_PROC_READONLY, cell_proc_readonly());
    STEP(SBX_STEP_HOSTNAME, sys(sethostname("sandbox", 7)));

    /* A user namespace of its own in which it is "nobody": the zygote's uid 0 becomes 65534
     * here, and every capability it is given in the new namespace is dropped below. */
    STEP(SBX_STEP_USERNS, sys(unshare(CLONE_NEWUSER)));
    STEP(SBX_STEP_SETGROUPS, steps_write_file("/proc/self/setgroups", "deny", 4));
    STEP(SBX_STEP_UID_MAP, steps_write_file("/proc/self/uid_map", "65534 0 1\n", 11));
    STEP(SBX_STEP_GID_MAP, steps_write_file("/proc/self/gid_map", "65534 0 1\n", 11));
    STEP(SBX_STEP_CHDIR, sys(chdir("/tmp")));

    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    STEP(SBX_STEP_FDS, devnull < 0 ? -errno : 0);
    struct steps_fdmap map[] = {{devnull, 0}, {out_fd, 1}, {err_fd, 2}, {proto_fd, 3}};
    STEP(SBX_STEP_FDS, steps_remap_fds(map, 4, 4));
    STEP(SBX_STEP_FDS, sys(fcntl(3, F_SETFD, FD_CLOEXEC)));

    struct steps_rlimit rl[] = {
        {RLIMIT_CORE, 0},
        {RLIMIT_NOFILE, nofile},
        {RLIMIT_NPROC, nproc},
        {RLIMIT_FSIZE, fsize},
    };
    STEP(SBX_STEP_RLIMITS, steps_set_rlimits(rl, sizeof(rl) / sizeof(rl[0])));
    STEP(SBX_STEP_DROP_CAPS, steps_drop_caps());
    STEP(SBX_STEP_NO_NEW_PRIVS, steps_no_new_privs());
    if (filter && filter_len) {
        struct sock_fprog prog = {
            .len = (unsigned short)(filter_len / sizeof(struct sock_filter)),
            .filter = (struct sock_filter *)filter,
        };
        STEP(SBX_STEP_SECCOMP, steps_load_seccomp(&prog));
    }
    return 0;
}
