// SPDX-License-Identifier: MIT
/*
 * zygote — the pool's zygotes (pool_int.h): starting one in the jail with its configuration,
 * waiting for it to be ready, the control channel (JSON messages with file descriptors over a
 * unix socket) and what it prints.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pool/pool_int.h"
#include "util/clock.h"
#include "util/fdio.h"
#include "util/jdump.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/proc.h"

/* ---- zygote control messages ----------------------------------------------------------- */

int pool_send(int fd, json_t *msg, const int *fds, size_t nfds)
{
    char *data = jdump(msg, JSON_COMPACT, NULL);
    if (!data)
        return -ENOMEM;
    struct iovec iov = {.iov_base = data, .iov_len = strlen(data)};
    union {
        char buf[CMSG_SPACE(sizeof(int) * 4)];
        struct cmsghdr align;
    } u;
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    if (nfds) {
        mh.msg_control = u.buf;
        mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
        memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
    }
    ssize_t n;
    do
        n = sendmsg(fd, &mh, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    free(data);
    return n < 0 ? -errno : 0;
}

/* One message; ret_fds get the fds it carries (-1 for those it does not). 0 on EOF. */
int pool_recv(int fd, json_t **ret, int ret_fds[POOL_RECV_FDS])
{
    char data[65536];
    union {
        char buf[CMSG_SPACE(sizeof(int) * 4)];
        struct cmsghdr align;
    } u;
    struct iovec iov = {.iov_base = data, .iov_len = sizeof(data) - 1};
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
    ssize_t n;
    do
        n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    size_t got = 0;
    for (size_t i = 0; i < POOL_RECV_FDS; i++)
        ret_fds[i] = -1;
    *ret = NULL;
    if (n < 0)
        return -errno;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        int fds[4];
        memcpy(fds, CMSG_DATA(cm), sizeof(int) * (k < 4 ? k : 4));
        for (size_t i = 0; i < k && i < 4; i++) {
            if (got < POOL_RECV_FDS)
                ret_fds[got++] = fds[i];
            else
                close(fds[i]);
        }
    }
    if (n == 0)
        return 0;
    json_error_t err;
    *ret = json_loadb(data, (size_t)n, 0, &err);
    if (!*ret) {
        pool_close_fds(ret_fds);
        return -EBADMSG;
    }
    return 1;
}

void pool_close_fds(int fds[POOL_RECV_FDS])
{
    for (size_t i = 0; i < POOL_RECV_FDS; i++)
        fd_closep(&fds[i]);
}

pid_t pool_pidfd_pid(int pidfd)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
    _cleanup_free_ char *s = NULL;
    if (fd_read_file(AT_FDCWD, path, 4096, &s, NULL) < 0)
        return -1;
    const char *p = strstr(s, "\nPid:");
    return p ? (pid_t)strtol(p + 5, NULL, 10) : -1;
}

/* ---- zygote lifecycle ----------------------------------------------------------------- */

int pool_epoll_add(struct pool *p, int fd, struct pool_watch *w)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = w};
    return epoll_ctl(p->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

void pool_epoll_del(struct pool *p, int fd)
{
    if (fd >= 0)
        (void)epoll_ctl(p->epfd, EPOLL_CTL_DEL, fd, NULL);
}

int pool_zygote_start(struct pool *p, struct zygote *z)
{
    int sv[2] = {-1, -1}, lp[2] = {-1, -1};
    char **argv = NULL;
    int r;
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0 || pipe2(lp, O_CLOEXEC) < 0) {
        r = log_errno(LOG_ERROR, errno, "pool: cannot create zygote channels");
        goto fail;
    }
    if ((r = cgroup_cell_new(p->jail->cgroups, &z->cgroup)) < 0)
        goto fail;
    argv = jail_python_argv(p->jail, "zygote", NULL);
    if (!argv) {
        r = -ENOMEM;
        goto fail;
    }
    struct jail_spawn req = {
        .role = JAIL_ROLE_ZYGOTE,
        .argv = argv,
        .stdin_fd = -1,
        .stdout_fd = lp[1],
        .stderr_fd = lp[1],
        .proto_fd = sv[1],
        .limits = jail_limits_default(p->jail),
        .cgroup = z->cgroup,
    };
    req.limits.nofile = 1024;
    r = jail_spawn(p->jail, &req, &z->proc);
    jail_argv_free(argv);
    argv = NULL;
    if (r < 0)
        goto fail;
    close(sv[1]);
    close(lp[1]);
    sv[1] = lp[1] = -1;
    z->ctl_fd = sv[0];
    z->log_fd = lp[0];
    json_t *cfg =
        json_pack("{s:s, s:I, s:I, s:I, s:I, s:O, s:s?, s:s?}", "op", "config", "tmpBytes",
                  (json_int_t)p->jail->tmp_bytes, "nofile", (json_int_t)p->opt.nofile, "nproc",
                  (json_int_t)p->opt.nproc, "fsize", (json_int_t)p->jail->tmp_bytes, "preimport",
                  p->preimport, "warmup", p->warmup, "prepare", p->opt.prepare);
    if (cfg && p->opt.egress_port &&
        json_object_set_new(cfg, "egressPort", json_integer(p->opt.egress_port)) < 0) {
        json_decref(cfg); /* a network pool's zygote without its port would fork plain cells */
        cfg = NULL;
    }
    r = cfg ? pool_send(z->ctl_fd, cfg, &p->filter_fd, p->filter_fd >= 0 ? 1 : 0) : -ENOMEM;
    json_decref(cfg);
    if (r < 0) {
        log_errno(LOG_ERROR, r, "pool: cannot configure zygote %d", z->index);
        goto fail_started;
    }
    (void)fd_set_nonblock(z->log_fd, true);
    z->w_ctl = (struct pool_watch){WATCH_ZCTL, z};
    z->w_log = (struct pool_watch){WATCH_ZOUT, z};
    z->w_pid = (struct pool_watch){WATCH_ZPID, z};
    if ((r = pool_epoll_add(p, z->ctl_fd, &z->w_ctl)) < 0 ||
        (r = pool_epoll_add(p, z->log_fd, &z->w_log)) < 0 ||
        (r = pool_epoll_add(p, z->proc.pidfd, &z->w_pid)) < 0)
        goto fail_started;
    z->pending = 0;
    z->restart_at_us = 0;
    return 0;
fail_started:
    proc_kill_wait(z->proc.pid);
    fd_closep(&z->proc.pidfd);
    fd_closep(&z->ctl_fd);
    fd_closep(&z->log_fd);
fail:
    jail_argv_free(argv);
    for (int i = 0; i < 2; i++) {
        fd_closep(&sv[i]);
        fd_closep(&lp[i]);
    }
    cgroup_cell_free(z->cgroup);
    z->cgroup = NULL;
    return r;
}

/* Wait (synchronously, at start-up) for a zygote's "ready". */
int pool_zygote_wait_ready(struct zygote *z, int64_t timeout_ms)
{
    int64_t deadline = clock_mono_us() + timeout_ms * 1000;
    for (;;) {
        struct pollfd pfd = {.fd = z->ctl_fd, .events = POLLIN};
        int64_t left = deadline - clock_mono_us();
        if (left <= 0 || poll(&pfd, 1, (int)(left / 1000) + 1) <= 0)
            return log_errno(LOG_ERROR, ETIMEDOUT, "pool: zygote %d did not become ready",
                             z->index);
        json_t *msg;
        int fds[POOL_RECV_FDS];
        int r = pool_recv(z->ctl_fd, &msg, fds);
        if (r == -EAGAIN)
            continue;
        pool_close_fds(fds);
        if (r <= 0)
            return log_errno(LOG_ERROR, r ? r : EPIPE, "pool: zygote %d died while starting",
                             z->index);
        const char *op = json_string_value(json_object_get(msg, "op"));
        bool ready = op && strcmp(op, "ready") == 0;
        json_decref(msg);
        if (ready) {
            z->alive = true;
            return 0;
        }
    }
}

void pool_zygote_drain_log(struct zygote *z)
{
    char chunk[4096];
    for (;;) {
        ssize_t n = read(z->log_fd, chunk, sizeof(chunk));
        if (n <= 0)
            break;
        bool full = false;
        buf_append_capped(&z->logbuf, chunk, (size_t)n, &full);
        char *nl;
        while ((nl = memchr(z->logbuf.data, '\n', z->logbuf.len)) || full) {
            size_t len = nl ? (size_t)(nl - z->logbuf.data) : z->logbuf.len;
            log_warn("zygote %d: %.*s", z->index, (int)len, z->logbuf.data);
            buf_consume(&z->logbuf, nl ? len + 1 : len);
            full = false;
        }
    }
}
