// SPDX-License-Identifier: MIT
/*
 * spawn — a jailed process from a jail_config (see jail.h): the parent's
 * clone(), uid/gid maps and cgroup attach, and the child's steps.
 *
 * The child runs the cold column of the one step table (jail/confine.h),
 * in its order, through jail_child_step(): wait for the parent to write the
 * uid/gid maps and attach the cgroup -> drop supplementary groups -> new
 * cgroup namespace (rooted at the cell's cgroup) -> private mounts -> the new
 * root on a tmpfs -> pivot_root, detach the old root -> remount the root
 * read-only -> hostname -> fds -> rlimits -> capabilities -> no_new_privs ->
 * seccomp -> execve. Only async-signal-safe calls run between clone() and
 * execve(): the parent is multi-threaded.
 */
#include "jail/jail.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/securebits.h>
#include <sys/mount.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "jail/confine.h"
#include "jail/steps.h"
#include "util/clock.h"
#include "util/fdio.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/proc.h"

extern char **environ;

struct jail_child_error {
    int32_t step;   /* enum confine_step */
    int32_t err;    /* positive errno */
    int32_t detail; /* index of the failing mount op, or -1 */
};

/* Where the child builds its new root before pivot_root: a tmpfs mounted over the host's
 * /tmp, visible only inside the child's own mount namespace. */
#define JAIL_STAGING "/tmp"

/* ---- the child (async-signal-safe from here to execve) ------------------------------------ */

struct jail_child_args {
    const struct jail_config *cfg;
    const struct jail_spawn *req;
    int sync_fd;        /* read end: one byte when the parent is done with us */
    int err_fd;         /* write end, O_CLOEXEC: closes on successful execve */
    int fds[4];         /* stdin, stdout, stderr, proto (-1: none) */
    int egress_fd;      /* where to send the egress listener (-1: no network) */
    unsigned inside_id; /* uid and gid inside the namespace */
    int *trees;    /* per plan op: detached bind trees (root), or room for sources (rootless) */
    size_t detail; /* set by a failing mount step: the index of its op */
};

static _Noreturn void jail_child_fail(const struct jail_child_args *a, int step, int err)
{
    struct jail_child_error e = {
        .step = step,
        .err = err < 0 ? -err : err,
        .detail = a->detail == SIZE_MAX ? -1 : (int32_t)a->detail,
    };
    ssize_t w = write(a->err_fd, &e, sizeof(e));
    (void)w; /* the parent sees a short read as a failure either way */
    _exit(127);
}

static int jail_sys(long r)
{
    return r < 0 ? -errno : 0;
}

static int jail_child_wait(int sync_fd)
{
    char c;
    ssize_t n;
    do
        n = read(sync_fd, &c, 1);
    while (n < 0 && errno == EINTR);
    if (n != 1)
        return n < 0 ? -errno : -EPIPE;
    close(sync_fd);
    return 0;
}

/* Become the mapped id. As root our kuid is still host 0, which the map leaves out on
 * purpose; NO_SETUID_FIXUP keeps the namespace capabilities across the switch. Raw
 * syscalls, not the glibc wrappers: glibc applies set*id to every thread of the process (the
 * setxid broadcast) and would wait forever for the parent's other threads, which do not
 * exist in this child. */
static int jail_child_ids(unsigned id)
{
    int r = jail_sys(prctl(PR_SET_SECUREBITS, SECBIT_NO_SETUID_FIXUP, 0, 0, 0));
    if (r == 0)
        r = jail_sys(syscall(SYS_setresgid, id, id, id));
    if (r == 0)
        r = jail_sys(syscall(SYS_setresuid, id, id, id));
    return r;
}

static int jail_child_fds(struct jail_child_args *a)
{
    struct steps_fdmap map[5];
    size_t nmap = 0;
    for (int i = 0; i < 4; i++)
        if (a->fds[i] >= 0)
            map[nmap++] = (struct steps_fdmap){.src = a->fds[i], .dst = i};
    /* The error pipe rides along to the first fd after the protocol ones, stays
     * close-on-exec, and everything above it is closed. */
    int err_dst = a->fds[3] >= 0 ? 4 : 3;
    map[nmap++] = (struct steps_fdmap){.src = a->err_fd, .dst = err_dst};
    int r = steps_remap_fds(map, nmap, err_dst + 1);
    if (r < 0)
        return r;
    a->err_fd = err_dst;
    return jail_sys(fcntl(err_dst, F_SETFD, FD_CLOEXEC));
}

static int jail_child_rlimits(const struct jail_spawn *req)
{
    const struct jail_limits *lim = &req->limits;
    struct confine_limits cl = {
        .nofile = lim->nofile,
        .nproc = req->role == JAIL_ROLE_SANDBOX ? lim->nproc : 0,
        .fsize = lim->fsize,
        .cpu_s = lim->cpu_s,
    };
    struct steps_rlimit rl[CONFINE_RLIMITS_MAX];
    return steps_set_rlimits(rl, confine_rlimits(&cl, rl));
}

/* One step of confine.h's table, as the cold path does it (its CONFINE_COLD column). No
 * default: a step added to the table without a case here does not build. */
static int jail_child_step(struct jail_child_args *a, enum confine_step step)
{
    const struct jail_config *cfg = a->cfg;
    const struct jail_spawn *req = a->req;
    bool sandbox = req->role == JAIL_ROLE_SANDBOX;
    switch (step) {
    case CONFINE_STEP_WAIT_PARENT:
        return jail_child_wait(a->sync_fd);
    case CONFINE_STEP_SETGROUPS:
        return cfg->rootless ? 0 : jail_sys(syscall(SYS_setgroups, 0, NULL));
    case CONFINE_STEP_SETRESUID:
        return jail_child_ids(a->inside_id);
    case CONFINE_STEP_NAMESPACES:
        return jail_sys(unshare(CONFINE_NS_COLD_LATE));
    case CONFINE_STEP_MOUNT_PRIVATE:
        return steps_mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
    case CONFINE_STEP_OPEN_SOURCES:
        return cfg->rootless ? mount_plan_open_sources(&cfg->plan, a->trees, &a->detail) : 0;
    case CONFINE_STEP_ROOT_TMPFS:
        return steps_mount("tmpfs", JAIL_STAGING, "tmpfs", MS_NOSUID | MS_NODEV,
                           "mode=0755,size=4m");
    case CONFINE_STEP_CHDIR_NEWROOT:
        return jail_sys(chdir(JAIL_STAGING));
    case CONFINE_STEP_MOUNT_OPS:
        return mount_plan_apply(&cfg->plan, a->trees, !cfg->rootless, &a->detail);
    case CONFINE_STEP_PROC_READONLY:
        return sandbox ? mount_plan_apply(&cfg->plan_sandbox, NULL, true, &a->detail) : 0;
    case CONFINE_STEP_PIVOT_ROOT:
        /* pivot_root(".", "."): the old root ends up stacked on top of the new one and is
         * detached right away, so nothing of the host tree stays reachable. */
        return jail_sys(syscall(SYS_pivot_root, ".", "."));
    case CONFINE_STEP_DETACH_OLD_ROOT:
        return jail_sys(umount2(".", MNT_DETACH));
    case CONFINE_STEP_CHDIR_ROOT:
        return jail_sys(chdir("/"));
    case CONFINE_STEP_REMOUNT_ROOT_RO:
        return steps_mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV,
                           NULL);
    case CONFINE_STEP_HOSTNAME:
        return jail_sys(sethostname(CONFINE_HOSTNAME, sizeof(CONFINE_HOSTNAME) - 1));
    case CONFINE_STEP_CHDIR_TMP:
        return jail_sys(chdir("/tmp"));
    case CONFINE_STEP_EGRESS:
        /* Still holding CAP_NET_ADMIN in the user namespace that owns our network namespace,
         * so lo can come up; the listener leaves with the parent before user code can run. */
        return sandbox && req->egress_port ? steps_egress_listener(req->egress_port, a->egress_fd)
                                           : 0;
    case CONFINE_STEP_REMAP_FDS:
        return jail_child_fds(a);
    case CONFINE_STEP_RLIMITS:
        return jail_child_rlimits(req);
    case CONFINE_STEP_DROP_CAPS:
        return sandbox ? steps_drop_caps() : 0;
    case CONFINE_STEP_NO_NEW_PRIVS:
        return steps_no_new_privs();
    case CONFINE_STEP_SIGNALS:
        /* sandboxd blocks SIGINT/SIGTERM (it waits for them with sigwait) and ignores SIGPIPE;
         * both a mask and ignored dispositions survive execve. */
        return steps_reset_signals();
    case CONFINE_STEP_SECCOMP: {
        const struct sock_fprog *filter = req->egress_port ? &cfg->filter_tcp : &cfg->filter;
        return sandbox && filter->len ? steps_load_seccomp(filter) : 0;
    }
    case CONFINE_STEP_EXECVE:
        execve(cfg->python, req->argv, cfg->envp);
        return -errno;
    case CONFINE_STEP_MOUNT_TMP:
    case CONFINE_STEP_MOUNT_SHM:
    case CONFINE_STEP_MOUNT_PROC:
    case CONFINE_STEP_USERNS:
    case CONFINE_STEP_DENY_SETGROUPS:
    case CONFINE_STEP_UID_MAP:
    case CONFINE_STEP_GID_MAP:
    case CONFINE_STEP_COUNT:
        break; /* not on this path: confine_steps[step] says why */
    }
    return -ENOSYS;
}

/* The cold path: every step its column runs, in the table's order; the last one, execve,
 * returns only on failure. */
static _Noreturn void jail_child(struct jail_child_args *a)
{
    for (int step = 0; step < CONFINE_STEP_COUNT; step++) {
        if (!confine_steps[step].on[CONFINE_COLD].runs)
            continue;
        int r = jail_child_step(a, (enum confine_step)step);
        if (r < 0)
            jail_child_fail(a, step, r);
    }
    jail_child_fail(a, CONFINE_STEP_EXECVE, ENOEXEC); /* the table lost its execve */
}

/* ---- spawn (parent) ------------------------------------------------------------------------ */

static int jail_write_maps(const struct jail_config *cfg, pid_t pid, enum jail_role role)
{
    char path[64], line[64];
    unsigned inside = role == JAIL_ROLE_ZYGOTE ? 0 : CONFINE_SANDBOX_UID;
    int r;
    if (cfg->rootless) {
        snprintf(path, sizeof(path), "/proc/%d/setgroups", (int)pid);
        if ((r = fd_write_file(path, "deny")) < 0)
            return log_errno(LOG_ERROR, r, "jail: cannot write %s", path);
    }
    snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
    snprintf(line, sizeof(line), "%u %u 1\n", inside, (unsigned)cfg->host_uid);
    if ((r = fd_write_file(path, line)) < 0)
        return log_errno(LOG_ERROR, r, "jail: cannot write %s", path);
    snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
    snprintf(line, sizeof(line), "%u %u 1\n", inside, (unsigned)cfg->host_gid);
    if ((r = fd_write_file(path, line)) < 0)
        return log_errno(LOG_ERROR, r, "jail: cannot write %s", path);
    return 0;
}

/* The egress listener the child sent before it exec'd (already queued on sock). */
static int jail_recv_listener(int sock)
{
    char byte;
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
    ssize_t n;
    do
        n = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return -errno;
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    if (n != 1 || !cm || cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS ||
        cm->cmsg_len != CMSG_LEN(sizeof(int)))
        return -EPROTO;
    int fd;
    memcpy(&fd, CMSG_DATA(cm), sizeof(fd));
    return fd;
}

/* The per-spawn slots of the plan's binds: detached trees cloned now (root), or -1s the child
 * fills with the sources it opens itself (rootless). */
static int jail_trees_new(const struct jail_config *cfg, int **ret)
{
    if (!cfg->rootless)
        return mount_plan_clone_trees(&cfg->plan, ret);
    int *trees = malloc((cfg->plan.n ? cfg->plan.n : 1) * sizeof(int));
    if (!trees)
        return -ENOMEM;
    for (size_t i = 0; i < cfg->plan.n; i++)
        trees[i] = -1;
    *ret = trees;
    return 0;
}

/* Log what the child sent over its error pipe (n bytes of e) by step name; returns -errno. */
static int jail_child_report(const struct jail_config *cfg, const struct jail_child_error *e,
                             ssize_t n)
{
    if (n != (ssize_t)sizeof(*e) || e->step < 0 || e->step >= CONFINE_STEP_COUNT)
        return log_errno(LOG_ERROR, EPROTO, "jail: child failed before reporting a step");
    const char *name = confine_step_name(e->step);
    if (e->detail >= 0 && e->step == CONFINE_STEP_OPEN_SOURCES) {
        const struct mount_op *op =
            (size_t)e->detail < cfg->plan.n ? &cfg->plan.ops[e->detail] : NULL;
        return log_errno(LOG_ERROR, e->err, "jail: step '%s' failed for '%s'", name,
                         op ? op->src : "?");
    }
    if (e->detail >= 0) {
        const struct mount_plan *p =
            e->step == CONFINE_STEP_PROC_READONLY ? &cfg->plan_sandbox : &cfg->plan;
        const struct mount_op *op = (size_t)e->detail < p->n ? &p->ops[e->detail] : NULL;
        return log_errno(LOG_ERROR, e->err, "jail: step '%s' failed at %s of '/%s'", name,
                         op ? mount_op_kind_name(op->kind) : "?", op ? op->dst : "?");
    }
    return log_errno(LOG_ERROR, e->err, "jail: step '%s' failed", name);
}

/* After the parent wrote the maps and attached the cgroup: let the child go on, and wait for
 * its execve (EOF on the close-on-exec error pipe) or its failure report. */
static int jail_child_release(const struct jail_config *cfg, pid_t pid, int sync_fd, int err_fd)
{
    char go = 1;
    if (write(sync_fd, &go, 1) != 1) {
        int r = log_errno(LOG_ERROR, errno, "jail: cannot release the child");
        proc_kill_wait(pid);
        return r;
    }
    struct jail_child_error e;
    ssize_t n;
    do
        n = read(err_fd, &e, sizeof(e));
    while (n < 0 && errno == EINTR);
    if (n == 0)
        return 0;
    (void)proc_wait(pid, NULL);
    return jail_child_report(cfg, &e, n);
}

int jail_spawn(const struct jail_config *cfg, const struct jail_spawn *req, struct jail_proc *ret)
{
    int sync_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, egress_sv[2] = {-1, -1};
    _cleanup_close_ int devnull = -1;
    int *trees = NULL;
    int r = jail_trees_new(cfg, &trees);
    if (r < 0)
        return r;
    if (pipe2(sync_pipe, O_CLOEXEC) < 0 || pipe2(err_pipe, O_CLOEXEC) < 0) {
        r = log_errno(LOG_ERROR, errno, "jail: pipe2 failed");
        goto out;
    }
    if (req->egress_port && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, egress_sv) < 0) {
        r = log_errno(LOG_ERROR, errno, "jail: socketpair for the egress listener failed");
        goto out;
    }
    struct jail_child_args a = {
        .cfg = cfg,
        .req = req,
        .sync_fd = sync_pipe[0],
        .err_fd = err_pipe[1],
        .fds = {req->stdin_fd, req->stdout_fd, req->stderr_fd, req->proto_fd},
        .egress_fd = egress_sv[1],
        .inside_id = req->role == JAIL_ROLE_ZYGOTE ? 0 : CONFINE_SANDBOX_UID,
        .trees = trees,
        .detail = SIZE_MAX,
    };
    if (a.fds[0] < 0 || a.fds[1] < 0 || a.fds[2] < 0) {
        devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (devnull < 0) {
            r = log_errno(LOG_ERROR, errno, "jail: cannot open /dev/null");
            goto out;
        }
        for (int i = 0; i < 3; i++)
            if (a.fds[i] < 0)
                a.fds[i] = devnull;
    }
    int64_t start = clock_mono_us();
    /* All but the late ones, which the child unshares in step 'namespaces' (confine.h). */
    unsigned long flags = (CONFINE_NAMESPACES & ~CONFINE_NS_COLD_LATE) | SIGCHLD;
    pid_t pid = (pid_t)syscall(SYS_clone, flags, NULL, NULL, NULL, 0);
    if (pid < 0) {
        r = log_errno(LOG_ERROR, errno,
                      "jail: clone with new namespaces failed; user namespaces must be "
                      "enabled (sysctl user.max_user_namespaces > 0, and on Ubuntu "
                      "kernel.apparmor_restrict_unprivileged_userns=0)");
        goto out;
    }
    if (pid == 0) {
        close(sync_pipe[1]);
        close(err_pipe[0]);
        jail_child(&a);
    }
    fd_closep(&sync_pipe[0]);
    fd_closep(&err_pipe[1]);
    fd_closep(&egress_sv[1]);

    if ((r = jail_write_maps(cfg, pid, req->role)) < 0 ||
        (req->cgroup && (r = cgroup_cell_attach(req->cgroup, pid)) < 0)) {
        proc_kill_wait(pid);
        goto out;
    }
    if ((r = jail_child_release(cfg, pid, sync_pipe[1], err_pipe[0])) < 0)
        goto out;
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd < 0) {
        r = log_errno(LOG_ERROR, errno, "jail: pidfd_open failed");
        proc_kill_wait(pid);
        goto out;
    }
    (void)fcntl(pidfd, F_SETFD, FD_CLOEXEC); /* pidfds are always close-on-exec; belt and braces */
    int listener = -1;
    if (req->egress_port && (listener = jail_recv_listener(egress_sv[0])) < 0) {
        r = log_errno(LOG_ERROR, listener,
                      "jail: the sandbox did not hand over its egress listener");
        proc_kill_wait(pid);
        close(pidfd);
        goto out;
    }
    *ret = (struct jail_proc){.pid = pid, .pidfd = pidfd, .start_us = start, .egress_fd = listener};
    r = 0;
out:
    for (int i = 0; i < 2; i++) {
        fd_closep(&sync_pipe[i]);
        fd_closep(&err_pipe[i]);
        fd_closep(&egress_sv[i]);
    }
    mount_plan_trees_close(&cfg->plan, trees); /* rootless slots are all -1 in the parent */
    return r;
}
