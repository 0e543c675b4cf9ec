// SPDX-License-Identifier: MIT
/*
 * cell — see cell.h. The cold backend lives here; the warm one in pool/.
 */
#include "exec/cell.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/log.h"
#include "util/macros.h"

struct cell *cell_new(const struct cell_ops *ops, size_t max_frame)
{
    struct cell *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->ops = ops;
    c->pid = -1;
    c->pidfd = c->proto_fd = c->out_fd = c->err_fd = c->egress_fd = -1;
    frame_reader_init(&c->reader, max_frame);
    return c;
}

void cell_kill(struct cell *c)
{
    if (!c || c->killed || c->reaped)
        return;
    c->killed = true;
    /* The cell's main process is init of its pid namespace: when it dies the kernel kills
     * everything else inside, so one signal ends the whole tree. */
    if (c->pidfd >= 0 && syscall(SYS_pidfd_send_signal, c->pidfd, SIGKILL, NULL, 0) < 0 &&
        errno != ESRCH)
        log_errno(LOG_WARN, errno, "cell: cannot kill pid %d", (int)c->pid);
    (void)cgroup_cell_kill(c->cgroup); /* v2 only: also any stragglers */
}

int cell_wait_exit(struct cell *c, int64_t deadline_us, struct cell_exit *ret)
{
    if (c->reaped) {
        *ret = c->exit_info;
        return 0;
    }
    int r = c->ops->wait_exit(c, deadline_us, ret);
    if (r == 0) {
        c->reaped = true;
        c->exit_info = *ret;
    }
    return r;
}

void cell_free(struct cell *c)
{
    if (!c)
        return;
    cell_kill(c);
    if (c->ops && c->ops->release)
        c->ops->release(c);
    fd_closep(&c->pidfd);
    fd_closep(&c->proto_fd);
    fd_closep(&c->out_fd);
    fd_closep(&c->err_fd);
    fd_closep(&c->egress_fd);
    cgroup_cell_free(c->cgroup);
    frame_reader_done(&c->reader);
    free(c);
}

/* ---- cold backend: our own child, reaped with wait4 ----------------------------------- */

static int cold_wait_exit(struct cell *c, int64_t deadline_us, struct cell_exit *ret)
{
    for (;;) {
        struct rusage ru;
        int status;
        pid_t p = wait4(c->pid, &status, WNOHANG, &ru);
        if (p == c->pid) {
            ret->status = status;
            ret->cpu_us = (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000u +
                          (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
            ret->maxrss_kb = (uint64_t)ru.ru_maxrss;
            return 0;
        }
        if (p < 0 && errno != EINTR)
            return -errno;
        int64_t left = deadline_us - clock_mono_us();
        if (left <= 0)
            return -ETIMEDOUT;
        struct pollfd pfd = {.fd = c->pidfd, .events = POLLIN};
        (void)poll(&pfd, 1, (int)((left + 999) / 1000));
    }
}

static void cold_release(struct cell *c)
{
    /* Reap: the process was killed, so this returns promptly. */
    if (!c->reaped && c->pid > 0) {
        struct cell_exit e;
        if (cold_wait_exit(c, clock_mono_us() + 5 * 1000000, &e) < 0)
            log_warn("cell: pid %d did not exit after SIGKILL", (int)c->pid);
        c->reaped = true;
    }
}

static const struct cell_ops cold_ops = {
    .wait_exit = cold_wait_exit,
    .release = cold_release,
};

static int cell_spawn(const struct jail_config *cfg, const struct jail_limits *lim,
                      size_t max_frame, uint16_t egress_port, struct cell **ret, int *ret_listener)
{
    int sv[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
    char **argv = NULL;
    struct cell *c = cell_new(&cold_ops, max_frame);
    int r = -ENOMEM;
    if (!c)
        goto fail;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 || pipe2(out, O_CLOEXEC) < 0 ||
        pipe2(err, O_CLOEXEC) < 0) {
        r = log_errno(LOG_ERROR, errno, "cell: cannot create channels");
        goto fail;
    }
    if ((r = cgroup_cell_new(cfg->cgroups, &c->cgroup)) < 0)
        goto fail;
    if (c->cgroup && (r = cgroup_cell_set_limits(c->cgroup, lim->memory, lim->nproc)) < 0)
        goto fail;
    argv = jail_python_argv(cfg, "oneshot", NULL);
    if (!argv) {
        r = -ENOMEM;
        goto fail;
    }
    struct jail_spawn req = {
        .role = JAIL_ROLE_SANDBOX,
        .argv = argv,
        .stdin_fd = -1,
        .stdout_fd = out[1],
        .stderr_fd = err[1],
        .proto_fd = sv[1],
        .limits = *lim,
        .cgroup = c->cgroup,
        .egress_port = egress_port,
    };
    struct jail_proc proc;
    r = jail_spawn(cfg, &req, &proc);
    if (r < 0)
        goto fail;
    c->pid = proc.pid;
    c->pidfd = proc.pidfd;
    c->proto_fd = TAKE_FD(sv[0]);
    c->out_fd = TAKE_FD(out[0]);
    c->err_fd = TAKE_FD(err[0]);
    jail_argv_free(argv);
    fd_closep(&sv[1]);
    fd_closep(&out[1]);
    fd_closep(&err[1]);
    if (ret_listener)
        *ret_listener = proc.egress_fd;
    *ret = c;
    return 0;
fail:
    jail_argv_free(argv);
    for (int i = 0; i < 2; i++) {
        fd_closep(&sv[i]);
        fd_closep(&out[i]);
        fd_closep(&err[i]);
    }
    cell_free(c);
    return r;
}

int cell_spawn_cold(const struct jail_config *cfg, const struct jail_limits *lim, size_t max_frame,
                    struct cell **ret)
{
    return cell_spawn(cfg, lim, max_frame, 0, ret, NULL);
}

int cell_spawn_cold_egress(const struct jail_config *cfg, const struct jail_limits *lim,
                           size_t max_frame, uint16_t port, struct cell **ret, int *ret_listener)
{
    return cell_spawn(cfg, lim, max_frame, port, ret, ret_listener);
}
