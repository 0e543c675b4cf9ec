// SPDX-License-Identifier: MIT
/*
 * spawn — a jailed process from a jail_config (see jail.h): the parent's
 * clone(), uid/gid maps and cgroup attach, and the child's steps.
 *
 * The child's steps, in order (STYLE.md, "The sandbox child"): wait for the
 * parent to write the uid/gid maps and attach the cgroup -> drop
 * supplementary groups -> new cgroup namespace (now rooted at the cell's
 * cgroup) -> make every mount private -> build the new root on a tmpfs ->
 * pivot_root and detach the old root -> remount the root read-only ->
 * hostname -> fds -> rlimits -> capabilities -> no_new_privs -> seccomp ->
 * execve. Only async-signal-safe calls run between clone() and execve():
 * the parent is multi-threaded.
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

#include "jail/steps.h"
#include "util/clock.h"
#include "util/fdio.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/proc.h"

extern char **environ;

enum jail_step {
    JAIL_STEP_WAIT_PARENT,
    JAIL_STEP_SETGROUPS,
    JAIL_STEP_SETRESUID,
    JAIL_STEP_CGROUP_NS,
    JAIL_STEP_MOUNT_PRIVATE,
    JAIL_STEP_OPEN_SOURCES,
    JAIL_STEP_ROOT_TMPFS,
    JAIL_STEP_CHDIR_NEWROOT,
    JAIL_STEP_MOUNT_OPS,
    JAIL_STEP_SANDBOX_MOUNTS,
    JAIL_STEP_PIVOT_ROOT,
    JAIL_STEP_DETACH_OLD_ROOT,
    JAIL_STEP_CHDIR_ROOT,
    JAIL_STEP_REMOUNT_ROOT_RO,
    JAIL_STEP_HOSTNAME,
    JAIL_STEP_CHDIR_TMP,
    JAIL_STEP_EGRESS,
    JAIL_STEP_REMAP_FDS,
    JAIL_STEP_RLIMITS,
    JAIL_STEP_DROP_CAPS,
    JAIL_STEP_NO_NEW_PRIVS,
    JAIL_STEP_SIGNALS,
    JAIL_STEP_SECCOMP,
    JAIL_STEP_EXECVE,
};

static const char *const jail_step_names[] = {
    [JAIL_STEP_WAIT_PARENT] = "wait-for-parent",
    [JAIL_STEP_SETGROUPS] = "setgroups",
    [JAIL_STEP_SETRESUID] = "setresuid/setresgid",
    [JAIL_STEP_CGROUP_NS] = "unshare(CLONE_NEWCGROUP)",
    [JAIL_STEP_MOUNT_PRIVATE] = "mount(/, MS_REC|MS_PRIVATE)",
    [JAIL_STEP_OPEN_SOURCES] = "open bind sources",
    [JAIL_STEP_ROOT_TMPFS] = "mount(tmpfs, new root)",
    [JAIL_STEP_CHDIR_NEWROOT] = "chdir(new root)",
    [JAIL_STEP_MOUNT_OPS] = "filesystem",
    [JAIL_STEP_SANDBOX_MOUNTS] = "filesystem (sandbox-only)",
    [JAIL_STEP_PIVOT_ROOT] = "pivot_root",
    [JAIL_STEP_DETACH_OLD_ROOT] = "umount2(old root, MNT_DETACH)",
    [JAIL_STEP_CHDIR_ROOT] = "chdir(/)",
    [JAIL_STEP_REMOUNT_ROOT_RO] = "mount(/, MS_REMOUNT|MS_RDONLY)",
    [JAIL_STEP_HOSTNAME] = "sethostname",
    [JAIL_STEP_CHDIR_TMP] = "chdir(/tmp)",
    [JAIL_STEP_EGRESS] = "loopback up and egress listener",
    [JAIL_STEP_REMAP_FDS] = "file descriptors",
    [JAIL_STEP_RLIMITS] = "setrlimit",
    [JAIL_STEP_DROP_CAPS] = "drop capabilities",
    [JAIL_STEP_NO_NEW_PRIVS] = "prctl(PR_SET_NO_NEW_PRIVS)",
    [JAIL_STEP_SIGNALS] = "reset signal mask and handlers",
    [JAIL_STEP_SECCOMP] = "seccomp",
    [JAIL_STEP_EXECVE] = "execve",
};

struct jail_child_error {
    int32_t step;
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
    int *trees; /* per plan op: detached bind trees (root), or room for sources (rootless) */
};

static _Noreturn void jail_child_fail(const struct jail_child_args *a, enum jail_step step, int err,
                                      int detail)
{
    struct jail_child_error e = {.step = step, .err = err < 0 ? -err : err, .detail = detail};
    ssize_t w = write(a->err_fd, &e, sizeof(e));
    (void)w; /* the parent sees a short read as a failure either way */
    _exit(127);
}

#define CHILD_STEP(a, step, expr)                                                                  \
    do {                                                                                           \
        int r_ = (expr);                                                                           \
        if (r_ < 0)                                                                                \
            jail_child_fail((a), (step), r_, -1);                                                  \
    } while (0)

static int jail_sys(long r)
{
    return r < 0 ? -errno : 0;
}

static _Noreturn void jail_child(struct jail_child_args *a)
{
    const struct jail_config *cfg = a->cfg;
    const struct jail_spawn *req = a->req;
    char c;
    ssize_t n;
    do
        n = read(a->sync_fd, &c, 1);
    while (n < 0 && errno == EINTR);
    if (n != 1)
        jail_child_fail(a, JAIL_STEP_WAIT_PARENT, n < 0 ? errno : EPIPE, -1);
    close(a->sync_fd);

    /* As root, the supplementary groups still carry host gid 0; drop them. Rootless, the
     * kernel forbids setgroups (it was denied before gid_map was written). */
    /* Raw syscalls, not the glibc wrappers: glibc applies set*id to every thread of the
     * process (the setxid broadcast) and would wait forever for the parent's other threads,
     * which do not exist in this child. */
    if (!cfg->rootless)
        CHILD_STEP(a, JAIL_STEP_SETGROUPS, jail_sys(syscall(SYS_setgroups, 0, NULL)));
    /* Become the mapped id. As root our kuid is still host 0, which the map leaves out on
     * purpose; NO_SETUID_FIXUP keeps the namespace capabilities across the switch. */
    CHILD_STEP(a, JAIL_STEP_SETRESUID,
               jail_sys(prctl(PR_SET_SECUREBITS, SECBIT_NO_SETUID_FIXUP, 0, 0, 0)));
    CHILD_STEP(a, JAIL_STEP_SETRESUID,
               jail_sys(syscall(SYS_setresgid, a->inside_id, a->inside_id, a->inside_id)));
    CHILD_STEP(a, JAIL_STEP_SETRESUID,
               jail_sys(syscall(SYS_setresuid, a->inside_id, a->inside_id, a->inside_id)));
    CHILD_STEP(a, JAIL_STEP_CGROUP_NS, jail_sys(unshare(CLONE_NEWCGROUP)));
    CHILD_STEP(a, JAIL_STEP_MOUNT_PRIVATE, steps_mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
    size_t idx = 0;
    int r;
    if (cfg->rootless && (r = mount_plan_open_sources(&cfg->plan, a->trees, &idx)) < 0)
        jail_child_fail(a, JAIL_STEP_OPEN_SOURCES, r, (int)idx);
    CHILD_STEP(
        a, JAIL_STEP_ROOT_TMPFS,
        steps_mount("tmpfs", JAIL_STAGING, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=4m"));
    CHILD_STEP(a, JAIL_STEP_CHDIR_NEWROOT, jail_sys(chdir(JAIL_STAGING)));
    r = mount_plan_apply(&cfg->plan, a->trees, !cfg->rootless, &idx);
    if (r < 0)
        jail_child_fail(a, JAIL_STEP_MOUNT_OPS, r, (int)idx);
    if (req->role == JAIL_ROLE_SANDBOX &&
        (r = mount_plan_apply(&cfg->plan_sandbox, NULL, true, &idx)) < 0)
        jail_child_fail(a, JAIL_STEP_SANDBOX_MOUNTS, r, (int)idx);
    /* pivot_root(".", "."): the old root ends up stacked on top of the new one and is
     * detached right away, so nothing of the host tree stays reachable. */
    CHILD_STEP(a, JAIL_STEP_PIVOT_ROOT, jail_sys(syscall(SYS_pivot_root, ".", ".")));
    CHILD_STEP(a, JAIL_STEP_DETACH_OLD_ROOT, jail_sys(umount2(".", MNT_DETACH)));
    CHILD_STEP(a, JAIL_STEP_CHDIR_ROOT, jail_sys(chdir("/")));
    CHILD_STEP(a, JAIL_STEP_REMOUNT_ROOT_RO,
               steps_mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV,
                           NULL));
    CHILD_STEP(a, JAIL_STEP_HOSTNAME,
               jail_sys(sethostname(JAIL_HOSTNAME, sizeof(JAIL_HOSTNAME) - 1)));
    CHILD_STEP(a, JAIL_STEP_CHDIR_TMP, jail_sys(chdir("/tmp")));
    /* Still holding CAP_NET_ADMIN in the user namespace that owns our network namespace, so
     * lo can come up; the listener leaves with the parent before user code can run. */
    if (req->role == JAIL_ROLE_SANDBOX && req->egress_port)
        CHILD_STEP(a, JAIL_STEP_EGRESS, steps_egress_listener(req->egress_port, a->egress_fd));

    struct steps_fdmap map[5];
    size_t nmap = 0;
    for (int i = 0; i < 4; i++)
        if (a->fds[i] >= 0)
            map[nmap++] = (struct steps_fdmap){.src = a->fds[i], .dst = i};
    /* The error pipe rides along to the first fd after the protocol ones, stays
     * close-on-exec, and everything above it is closed. */
    int err_dst = a->fds[3] >= 0 ? 4 : 3;
    map[nmap++] = (struct steps_fdmap){.src = a->err_fd, .dst = err_dst};
    int rr = steps_remap_fds(map, nmap, err_dst + 1);
    if (rr == 0) {
        a->err_fd = err_dst;
        rr = fcntl(err_dst, F_SETFD, FD_CLOEXEC) < 0 ? -errno : 0;
    }
    if (rr < 0)
        jail_child_fail(a, JAIL_STEP_REMAP_FDS, rr, -1);

    struct steps_rlimit rl[6];
    size_t nrl = 0;
    const struct jail_limits *lim = &req->limits;
    rl[nrl++] = (struct steps_rlimit){RLIMIT_CORE, 0};
    if (lim->nofile)
        rl[nrl++] = (struct steps_rlimit){RLIMIT_NOFILE, lim->nofile};
    if (lim->fsize)
        rl[nrl++] = (struct steps_rlimit){RLIMIT_FSIZE, lim->fsize};
    if (lim->cpu_s)
        rl[nrl++] = (struct steps_rlimit){RLIMIT_CPU, lim->cpu_s};
    if (lim->nproc && req->role == JAIL_ROLE_SANDBOX)
        rl[nrl++] = (struct steps_rlimit){RLIMIT_NPROC, lim->nproc};
    CHILD_STEP(a, JAIL_STEP_RLIMITS, steps_set_rlimits(rl, nrl));
    if (req->role == JAIL_ROLE_SANDBOX)
        CHILD_STEP(a, JAIL_STEP_DROP_CAPS, steps_drop_caps());
    CHILD_STEP(a, JAIL_STEP_NO_NEW_PRIVS, steps_no_new_privs());
    /* sandboxd blocks SIGINT/SIGTERM (it waits for them with sigwait) and ignores SIGPIPE;
     * both a mask and ignored dispositions survive execve. */
    CHILD_STEP(a, JAIL_STEP_SIGNALS, steps_reset_signals());
    const struct sock_fprog *filter = req->egress_port ? &cfg->filter_tcp : &cfg->filter;
    if (req->role == JAIL_ROLE_SANDBOX && filter->len)
        CHILD_STEP(a, JAIL_STEP_SECCOMP, steps_load_seccomp(filter));
    execve(cfg->python, req->argv, cfg->envp);
    jail_child_fail(a, JAIL_STEP_EXECVE, errno, -1);
}

/* ---- spawn (parent) ------------------------------------------------------------------------ */

static int jail_write_maps(const struct jail_config *cfg, pid_t pid, enum jail_role role)
{
    char path[64], line[64];
    unsigned inside = role == JAIL_ROLE_ZYGOTE ? 0 : JAIL_SANDBOX_UID;
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

int jail_spawn(const struct jail_config *cfg, const struct jail_spawn *req, struct jail_proc *ret)
{
    int sync_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, egress_sv[2] = {-1, -1};
    _cleanup_close_ int devnull = -1;
    int *trees = NULL;
    int r;
    if (cfg->rootless) {
        /* The child opens the sources itself into these slots. */
        trees = malloc((cfg->plan.n ? cfg->plan.n : 1) * sizeof(int));
        if (!trees)
            return -ENOMEM;
        for (size_t i = 0; i < cfg->plan.n; i++)
            trees[i] = -1;
    } else if ((r = mount_plan_clone_trees(&cfg->plan, &trees)) < 0) {
        return r;
    }
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
        .inside_id = req->role == JAIL_ROLE_ZYGOTE ? 0 : JAIL_SANDBOX_UID,
        .trees = trees,
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
    unsigned long flags = CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC |
                          CLONE_NEWUTS | SIGCHLD;
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
    close(sync_pipe[0]);
    sync_pipe[0] = -1;
    close(err_pipe[1]);
    err_pipe[1] = -1;
    fd_closep(&egress_sv[1]);

    if ((r = jail_write_maps(cfg, pid, req->role)) < 0 ||
        (req->cgroup && (r = cgroup_cell_attach(req->cgroup, pid)) < 0)) {
        proc_kill_wait(pid);
        goto out;
    }
    char go = 1;
    if (write(sync_pipe[1], &go, 1) != 1) {
        r = log_errno(LOG_ERROR, errno, "jail: cannot release the child");
        proc_kill_wait(pid);
        goto out;
    }
    struct jail_child_error e;
    ssize_t n;
    do
        n = read(err_pipe[0], &e, sizeof(e));
    while (n < 0 && errno == EINTR);
    if (n != 0) {
        (void)proc_wait(pid, NULL);
        if (n != (ssize_t)sizeof(e) || e.step < 0 ||
            (size_t)e.step >= ARRAY_SIZE(jail_step_names)) {
            r = log_errno(LOG_ERROR, EPROTO, "jail: child failed before reporting a step");
            goto out;
        }
        if (e.detail >= 0 && e.step == JAIL_STEP_OPEN_SOURCES) {
            const struct mount_op *op =
                (size_t)e.detail < cfg->plan.n ? &cfg->plan.ops[e.detail] : NULL;
            r = log_errno(LOG_ERROR, e.err, "jail: step '%s' failed for '%s'",
                          jail_step_names[e.step], op ? op->src : "?");
        } else if (e.detail >= 0) {
            const struct mount_plan *p =
                e.step == JAIL_STEP_SANDBOX_MOUNTS ? &cfg->plan_sandbox : &cfg->plan;
            const struct mount_op *op = (size_t)e.detail < p->n ? &p->ops[e.detail] : NULL;
            r = log_errno(LOG_ERROR, e.err, "jail: step '%s' failed at %s of '/%s'",
                          jail_step_names[e.step], op ? mount_op_kind_name(op->kind) : "?",
                          op ? op->dst : "?");
        } else {
            r = log_errno(LOG_ERROR, e.err, "jail: step '%s' failed", jail_step_names[e.step]);
        }
        goto out;
    }
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
        if (sync_pipe[i] >= 0)
            close(sync_pipe[i]);
        if (err_pipe[i] >= 0)
            close(err_pipe[i]);
        fd_closep(&egress_sv[i]);
    }
    mount_plan_trees_close(&cfg->plan, trees); /* rootless slots are all -1 in the parent */
    return r;
}
