// SPDX-License-Identifier: MIT
/*
 * pool — see pool.h.
 *
 * Cell states: FORKING (asked a zygote) -> STARTING (forked, setting itself
 * up; we attach its cgroup) -> READY (sent "ready" and is attached) ->
 * TAKEN (handed to an execution). A pool_cell lives in the token table until
 * its exit was reported by the zygote AND its user released it; the exit
 * report is also when its cgroup, now empty, is removed.
 *
 * Locking: one mutex for all pool state. cell_free() of a warm cell takes
 * that mutex (warm_release), so the pool thread collects cells to free and
 * frees them after unlocking.
 */
#include "pool/pool.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <uthash.h>

#include "util/buf.h"
#include "util/clock.h"
#include "util/fdio.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/jdump.h"

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

static void pool_wake(struct pool *p)
{
    uint64_t one = 1;
    ssize_t w = write(p->evfd, &one, sizeof(one));
    (void)w; /* a full eventfd counter still wakes the thread */
}

/* ---- the warm cell backend ------------------------------------------------------------ */

static void pool_cell_destroy(struct pool_cell *pc)
{
    cgroup_cell_free(pc->cgroup);
    free(pc);
}

static int warm_wait_exit(struct cell *c, int64_t deadline_us, struct cell_exit *ret)
{
    struct pool_cell *pc = c->backend;
    struct pool *p = pc->pool;
    struct timespec ts = {.tv_sec = deadline_us / 1000000,
                          .tv_nsec = (deadline_us % 1000000) * 1000};
    pthread_mutex_lock(&p->lock);
    while (!pc->exited)
        if (pthread_cond_timedwait(&p->cond, &p->lock, &ts) == ETIMEDOUT && !pc->exited)
            break;
    int r = pc->exited ? 0 : -ETIMEDOUT;
    if (r == 0)
        *ret = pc->exit_info;
    pthread_mutex_unlock(&p->lock);
    return r;
}

static void warm_release(struct cell *c)
{
    struct pool_cell *pc = c->backend;
    struct pool *p = pc->pool;
    pthread_mutex_lock(&p->lock);
    /* The cgroup may still hold the dying processes: remove it once the exit is reported. */
    pc->cgroup = TAKE_PTR(c->cgroup);
    pc->released = true;
    pc->cell = NULL;
    bool gone = pc->exited;
    if (gone)
        HASH_DEL(p->cells, pc);
    pthread_mutex_unlock(&p->lock);
    if (gone)
        pool_cell_destroy(pc);
}

static const struct cell_ops warm_ops = {
    .wait_exit = warm_wait_exit,
    .release = warm_release,
};

/* ---- zygote control messages ----------------------------------------------------------- */

static int pool_send(int fd, json_t *msg, const int *fds, size_t nfds)
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

/* One message; *ret_fd gets a passed fd (or -1). 0 on EOF. */
static int pool_recv(int fd, json_t **ret, int *ret_fd)
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
    *ret_fd = -1;
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
            if (*ret_fd < 0)
                *ret_fd = fds[i];
            else
                close(fds[i]);
        }
    }
    if (n == 0)
        return 0;
    json_error_t err;
    *ret = json_loadb(data, (size_t)n, 0, &err);
    if (!*ret) {
        if (*ret_fd >= 0)
            close(*ret_fd);
        *ret_fd = -1;
        return -EBADMSG;
    }
    return 1;
}

static pid_t pool_pidfd_pid(int pidfd)
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

static int pool_epoll_add(struct pool *p, int fd, struct pool_watch *w)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = w};
    return epoll_ctl(p->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

static void pool_epoll_del(struct pool *p, int fd)
{
    if (fd >= 0)
        (void)epoll_ctl(p->epfd, EPOLL_CTL_DEL, fd, NULL);
}

static int zygote_start(struct pool *p, struct zygote *z)
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
        json_pack("{s:s, s:I, s:I, s:I, s:I, s:O, s:s?}", "op", "config", "tmpBytes",
                  (json_int_t)p->jail->tmp_bytes, "nofile", (json_int_t)p->opt.nofile, "nproc",
                  (json_int_t)p->opt.nproc, "fsize", (json_int_t)p->jail->tmp_bytes, "preimport",
                  p->preimport, "warmup", p->warmup);
    r = pool_send(z->ctl_fd, cfg, &p->filter_fd, p->filter_fd >= 0 ? 1 : 0);
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
    kill(z->proc.pid, SIGKILL);
    while (waitpid(z->proc.pid, NULL, 0) < 0 && errno == EINTR)
        ;
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
static int zygote_wait_ready(struct zygote *z, int64_t timeout_ms)
{
    int64_t deadline = clock_mono_us() + timeout_ms * 1000;
    for (;;) {
        struct pollfd pfd = {.fd = z->ctl_fd, .events = POLLIN};
        int64_t left = deadline - clock_mono_us();
        if (left <= 0 || poll(&pfd, 1, (int)(left / 1000) + 1) <= 0)
            return log_errno(LOG_ERROR, ETIMEDOUT, "pool: zygote %d did not become ready",
                             z->index);
        json_t *msg;
        int fd;
        int r = pool_recv(z->ctl_fd, &msg, &fd);
        if (r == -EAGAIN)
            continue;
        if (fd >= 0)
            close(fd);
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

/* ---- cells ----------------------------------------------------------------------------- */

/* Cells to free once the lock is dropped (cell_free waits for the process). It grows: a zygote
 * that dies takes every one of its cells with it, up to --pool-size of them. */
struct pool_freelist {
    struct cell **items;
    size_t n, cap;
};

static void pool_defer_free(struct pool_freelist *fl, struct cell *c)
{
    if (!c)
        return;
    if (fl->n == fl->cap) {
        size_t cap = fl->cap ? 2 * fl->cap : 16;
        struct cell **items = realloc(fl->items, cap * sizeof(*items));
        if (!items) {
            cell_free(c); /* out of memory: free it now, under the lock, rather than leak it */
            return;
        }
        fl->items = items;
        fl->cap = cap;
    }
    fl->items[fl->n++] = c;
}

/* Free what was deferred (lock not held) and empty the list, keeping its memory. */
static void pool_free_deferred(struct pool_freelist *fl)
{
    for (size_t i = 0; i < fl->n; i++)
        cell_free(fl->items[i]);
    fl->n = 0;
}

struct pool_attach {
    uint64_t token;
    pid_t pid;
};

struct pool_attachlist {
    struct pool_attach items[64];
    size_t n;
};

static void pool_ready_push(struct pool *p, struct pool_cell *pc)
{
    pc->next = NULL;
    if (p->ready_tail)
        p->ready_tail->next = pc;
    else
        p->ready_head = pc;
    p->ready_tail = pc;
    p->n_ready++;
}

static void pool_ready_remove(struct pool *p, struct pool_cell *pc)
{
    struct pool_cell **pp = &p->ready_head, *prev = NULL;
    while (*pp && *pp != pc) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (!*pp)
        return;
    *pp = pc->next;
    if (p->ready_tail == pc)
        p->ready_tail = prev;
    p->n_ready--;
}

/* Ask zygote z for one more cell (pool lock held). */
static int pool_request_fork(struct pool *p, struct zygote *z)
{
    int sv[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
    struct pool_cell *pc = calloc(1, sizeof(*pc));
    struct cell *c = cell_new(&warm_ops, p->opt.max_frame);
    int r = -ENOMEM;
    if (!pc || !c)
        goto fail;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 || pipe2(out, O_CLOEXEC) < 0 ||
        pipe2(err, O_CLOEXEC) < 0) {
        r = log_errno(LOG_ERROR, errno, "pool: cannot create cell channels");
        goto fail;
    }
    pc->token = ++p->next_token;
    pc->t_request = clock_mono_us();
    pc->pool = p;
    pc->z = z;
    pc->state = PC_FORKING;
    pc->cell = c;
    c->backend = pc;
    c->warm = true;
    c->proto_fd = TAKE_FD(sv[0]);
    c->out_fd = TAKE_FD(out[0]);
    c->err_fd = TAKE_FD(err[0]);
    /* A cell warms itself up (pre-pays its copy-on-write faults) only while the pool has
     * cells to spare; when requests are already waiting it is needed at once. */
    json_t *msg = json_pack("{s:s, s:I, s:b}", "op", "fork", "token", (json_int_t)pc->token, "warm",
                            p->n_ready > 0);
    int fds[3] = {sv[1], out[1], err[1]};
    r = msg ? pool_send(z->ctl_fd, msg, fds, 3) : -ENOMEM;
    json_decref(msg);
    if (r < 0) {
        log_errno(LOG_WARN, r, "pool: cannot ask zygote %d to fork", z->index);
        goto fail;
    }
    fd_closep(&sv[1]);
    fd_closep(&out[1]);
    fd_closep(&err[1]);
    pc->watch = (struct pool_watch){WATCH_CELL, pc};
    (void)fd_set_nonblock(c->proto_fd, true);
    if ((r = pool_epoll_add(p, c->proto_fd, &pc->watch)) < 0)
        log_errno(LOG_WARN, r, "pool: epoll_ctl failed");
    HASH_ADD(hh, p->cells, token, sizeof(pc->token), pc);
    p->n_starting++;
    z->pending++;
    z->forks++;
    return 0;
fail:
    for (int i = 0; i < 2; i++) {
        fd_closep(&sv[i]);
        fd_closep(&out[i]);
        fd_closep(&err[i]);
    }
    if (c) {
        c->ops = NULL; /* not registered anywhere yet: plain free */
        cell_free(c);
    }
    free(pc);
    return r;
}

static void pool_maybe_ready(struct pool *p, struct pool_cell *pc)
{
    if (pc->state != PC_STARTING || !pc->got_ready || !pc->attached)
        return;
    pool_epoll_del(p, pc->cell->proto_fd);
    pc->state = PC_READY;
    pc->t_ready = clock_mono_us();
    log_debug("pool: cell %llu forked after %lld us, attached after %lld us, ready after %lld us",
              (unsigned long long)pc->token, (long long)(pc->t_forked - pc->t_request),
              (long long)(pc->t_attached - pc->t_request),
              (long long)(pc->t_ready - pc->t_request));
    p->n_starting--;
    pool_ready_push(p, pc);
    pthread_cond_broadcast(&p->cond);
}

/* A starting cell failed or died: drop it (lock held; the cell is freed by the caller). */
static struct cell *pool_discard_starting(struct pool *p, struct pool_cell *pc)
{
    struct cell *c = pc->cell;
    if (pc->state == PC_READY) {
        pool_ready_remove(p, pc);
        p->died_idle++;
    } else {
        p->n_starting--;
        p->failed++;
        if (pc->state == PC_FORKING && pc->z->pending)
            pc->z->pending--;
    }
    if (c)
        pool_epoll_del(p, c->proto_fd);
    pc->state = PC_TAKEN; /* owned by the caller now, released through warm_release */
    return c;
}

/* Read a starting cell's protocol socket ("ready" or a setup error). Lock held. */
static struct cell *pool_cell_readable(struct pool *p, struct pool_cell *pc)
{
    struct cell *c = pc->cell;
    char chunk[FRAME_READ_CHUNK];
    ssize_t n = read(c->proto_fd, chunk, sizeof(chunk));
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return NULL;
    if (n <= 0 || frame_reader_feed(&c->reader, chunk, (size_t)n) < 0)
        return pool_discard_starting(p, pc);
    for (;;) {
        json_t *msg = NULL;
        const char *why = NULL;
        int r = frame_reader_next(&c->reader, &msg, &why);
        if (r == 0)
            return NULL;
        if (r < 0)
            return pool_discard_starting(p, pc);
        const char *type = json_string_value(json_object_get(msg, "type"));
        if (type && strcmp(type, "ready") == 0) {
            pc->got_ready = true;
            p->ready_minflt += (uint64_t)json_integer_value(json_object_get(msg, "minFlt"));
            json_decref(msg);
            pool_maybe_ready(p, pc);
            return NULL;
        }
        const char *m = json_string_value(json_object_get(msg, "message"));
        log_error("pool: cell setup failed: %s", m ? m : "unexpected message");
        json_decref(msg);
        return pool_discard_starting(p, pc);
    }
}

/* "forked": the cell exists; it still needs its cgroup (attached by the pool thread after
 * dropping the lock, see pool_attach). Lock held. */
static struct cell *pool_on_forked(struct pool *p, json_t *msg, int pidfd,
                                   struct pool_attachlist *al)
{
    uint64_t token = (uint64_t)json_integer_value(json_object_get(msg, "token"));
    struct pool_cell *pc = NULL;
    HASH_FIND(hh, p->cells, &token, sizeof(token), pc);
    if (!pc || pc->state != PC_FORKING) {
        if (pidfd >= 0)
            close(pidfd);
        return NULL;
    }
    if (pc->z->pending)
        pc->z->pending--;
    struct cell *c = pc->cell;
    c->pidfd = pidfd;
    c->pid = pidfd >= 0 ? pool_pidfd_pid(pidfd) : -1;
    pc->state = PC_STARTING;
    pc->t_forked = clock_mono_us();
    if (c->pid <= 0) {
        log_error("pool: zygote %d sent no usable pidfd", pc->z->index);
        return pool_discard_starting(p, pc);
    }
    if (al->n < ARRAY_SIZE(al->items)) {
        al->items[al->n++] = (struct pool_attach){.token = token, .pid = c->pid};
        return NULL;
    }
    log_error("pool: too many cells to attach at once");
    return pool_discard_starting(p, pc);
}

/* Create and join the cells' cgroups, without the lock: a cgroup v1 migration waits for an
 * RCU grace period (milliseconds when the system is quiet), and acquirers must not wait for
 * that. Then mark them attached, under the lock. */
static void pool_attach(struct pool *p, struct pool_attachlist *al, struct pool_freelist *fl)
{
    struct cgroup_cell *cgs[ARRAY_SIZE(al->items)];
    bool ok[ARRAY_SIZE(al->items)];
    for (size_t i = 0; i < al->n; i++) {
        cgs[i] = NULL;
        ok[i] = cgroup_cell_new(p->jail->cgroups, &cgs[i]) == 0 &&
                (!cgs[i] || cgroup_cell_attach(cgs[i], al->items[i].pid) == 0);
    }
    pthread_mutex_lock(&p->lock);
    for (size_t i = 0; i < al->n; i++) {
        struct pool_cell *pc = NULL;
        HASH_FIND(hh, p->cells, &al->items[i].token, sizeof(uint64_t), pc);
        if (!pc || pc->state != PC_STARTING || !pc->cell) {
            cgroup_cell_free(cgs[i]); /* the cell died meanwhile */
            continue;
        }
        pc->cell->cgroup = cgs[i];
        if (!ok[i]) {
            pool_defer_free(fl, pool_discard_starting(p, pc));
            continue;
        }
        pc->attached = true;
        pc->t_attached = clock_mono_us();
        pool_maybe_ready(p, pc);
    }
    pthread_mutex_unlock(&p->lock);
    al->n = 0;
}

/* Cell pc exited (lock held): record how, wake whoever waits for it; the cell to free, if the
 * pool owns it. */
static struct cell *pool_cell_exited(struct pool *p, struct pool_cell *pc,
                                     const struct cell_exit *info, uint64_t minflt)
{
    pc->exited = true;
    pc->exit_info = *info;
    p->exits++;
    p->exit_minflt += minflt;
    pthread_cond_broadcast(&p->cond);
    if (pc->state != PC_TAKEN)
        return pool_discard_starting(p, pc);
    if (pc->released) {
        HASH_DEL(p->cells, pc);
        pool_cell_destroy(pc);
    }
    return NULL;
}

/* The zygote's "exited" report for one of its cells. */
static struct cell *pool_on_exit(struct pool *p, json_t *msg)
{
    uint64_t token = (uint64_t)json_integer_value(json_object_get(msg, "token"));
    struct pool_cell *pc = NULL;
    HASH_FIND(hh, p->cells, &token, sizeof(token), pc);
    if (!pc)
        return NULL;
    struct cell_exit info = {
        .status = (int)json_integer_value(json_object_get(msg, "status")),
        .cpu_us = (uint64_t)json_integer_value(json_object_get(msg, "cpuUs")),
        .maxrss_kb = (uint64_t)json_integer_value(json_object_get(msg, "maxRssKb")),
    };
    return pool_cell_exited(p, pc, &info,
                            (uint64_t)json_integer_value(json_object_get(msg, "minFlt")));
}

/* ---- the pool thread ------------------------------------------------------------------------ */

static void zygote_drain_log(struct zygote *z)
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

static void zygote_died(struct pool *p, struct zygote *z, struct pool_freelist *fl)
{
    int status = 0;
    while (waitpid(z->proc.pid, &status, WNOHANG) < 0 && errno == EINTR)
        ;
    zygote_drain_log(z);
    log_error("pool: zygote %d (pid %d) died (%s %d); its cells are gone, restarting", z->index,
              (int)z->proc.pid, WIFSIGNALED(status) ? "signal" : "exit",
              WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    pool_epoll_del(p, z->ctl_fd);
    pool_epoll_del(p, z->log_fd);
    pool_epoll_del(p, z->proc.pidfd);
    fd_closep(&z->ctl_fd);
    fd_closep(&z->log_fd);
    fd_closep(&z->proc.pidfd);
    z->alive = false;
    z->pending = 0;
    /* Every cell of this zygote died with its pid namespace. */
    struct pool_cell *pc, *tmp;
    HASH_ITER(hh, p->cells, pc, tmp)
    {
        if (pc->z != z || pc->exited)
            continue;
        const struct cell_exit killed = {.status = SIGKILL};
        pool_defer_free(fl, pool_cell_exited(p, pc, &killed, 0));
    }
    cgroup_cell_free(z->cgroup);
    z->cgroup = NULL;
    unsigned backoff = z->restarts < 5 ? 1u << z->restarts : 30;
    z->restarts++;
    z->restart_at_us = clock_mono_us() + (int64_t)backoff * 1000000;
}

static void pool_handle_zctl(struct pool *p, struct zygote *z, struct pool_freelist *fl,
                             struct pool_attachlist *al)
{
    for (;;) {
        json_t *msg;
        int fd;
        int r = pool_recv(z->ctl_fd, &msg, &fd);
        if (r == -EAGAIN || r == 0)
            return; /* EOF is handled when the pidfd fires */
        if (r < 0) {
            log_errno(LOG_WARN, r, "pool: bad message from zygote %d", z->index);
            return;
        }
        const char *op = json_string_value(json_object_get(msg, "op"));
        if (!op) {
            if (fd >= 0)
                close(fd);
        } else if (strcmp(op, "forked") == 0) {
            pool_defer_free(fl, pool_on_forked(p, msg, fd, al));
        } else {
            if (fd >= 0)
                close(fd);
            if (strcmp(op, "exit") == 0) {
                pool_defer_free(fl, pool_on_exit(p, msg));
            } else if (strcmp(op, "fork_failed") == 0) {
                uint64_t token = (uint64_t)json_integer_value(json_object_get(msg, "token"));
                struct pool_cell *pc = NULL;
                HASH_FIND(hh, p->cells, &token, sizeof(token), pc);
                log_error("pool: zygote %d could not fork: %s", z->index,
                          json_string_value(json_object_get(msg, "error")) ?: "?");
                if (pc) {
                    pc->exited = true;
                    pool_defer_free(fl, pool_discard_starting(p, pc));
                }
            } else if (strcmp(op, "ready") == 0) {
                z->alive = true;
                log_info("pool: zygote %d ready (pid %d)", z->index, (int)z->proc.pid);
            }
        }
        json_decref(msg);
    }
}

static void pool_refill(struct pool *p)
{
    int64_t now = clock_mono_us();
    for (unsigned i = 0; i < p->opt.zygotes; i++) {
        struct zygote *z = &p->zygotes[i];
        if (!z->alive && z->ctl_fd < 0 && z->restart_at_us && now >= z->restart_at_us) {
            if (zygote_start(p, z) < 0) {
                z->restart_at_us = now + 5 * 1000000;
                continue;
            }
            z->restart_at_us = 0;
        }
    }
    while (p->n_ready + p->n_starting < p->target) {
        struct zygote *best = NULL;
        for (unsigned i = 0; i < p->opt.zygotes; i++) {
            struct zygote *z = &p->zygotes[i];
            if (z->alive && (!best || z->pending < best->pending))
                best = z;
        }
        if (!best || pool_request_fork(p, best) < 0)
            break;
    }
}

/* Without misses for a while, halve the target towards the floor and retire the ready cells
 * beyond it (the oldest first). Lock held; the cells go to fl. */
static void pool_shrink(struct pool *p, struct pool_freelist *fl)
{
    int64_t now = clock_mono_us();
    if (p->target <= p->opt.size || now - p->last_miss_us < POOL_SHRINK_AFTER_US ||
        now - p->last_shrink_us < POOL_SHRINK_STEP_US)
        return;
    p->last_shrink_us = now;
    p->target = p->opt.size + (p->target - p->opt.size) / 2;
    while (p->n_ready + p->n_starting > p->target && p->ready_head) {
        struct pool_cell *pc = p->ready_head;
        pool_ready_remove(p, pc);
        pc->state = PC_TAKEN; /* released through warm_release, like a used cell */
        p->retired++;
        pool_defer_free(fl, TAKE_PTR(pc->cell));
    }
}

static void *pool_thread(void *arg)
{
    struct pool *p = arg;
    struct epoll_event evs[32];
    struct pool_freelist fl = {0};
    for (;;) {
        struct pool_attachlist al = {0};
        pthread_mutex_lock(&p->lock);
        if (p->stop) {
            pthread_mutex_unlock(&p->lock);
            break;
        }
        pool_shrink(p, &fl);
        pool_refill(p);
        pthread_mutex_unlock(&p->lock);
        int n = epoll_wait(p->epfd, evs, (int)ARRAY_SIZE(evs), 1000);
        pthread_mutex_lock(&p->lock);
        for (int i = 0; i < n; i++) {
            struct pool_watch *w = evs[i].data.ptr;
            switch (w->kind) {
            case WATCH_WAKE: {
                uint64_t v;
                ssize_t r = read(p->evfd, &v, sizeof(v));
                (void)r;
                break;
            }
            case WATCH_ZCTL:
                pool_handle_zctl(p, w->obj, &fl, &al);
                break;
            case WATCH_ZOUT:
                zygote_drain_log(w->obj);
                break;
            case WATCH_ZPID:
                zygote_died(p, w->obj, &fl);
                break;
            case WATCH_CELL:
                pool_defer_free(&fl, pool_cell_readable(p, w->obj));
                break;
            }
        }
        pthread_mutex_unlock(&p->lock);
        if (al.n)
            pool_attach(p, &al, &fl);
        pool_free_deferred(&fl);
        cgroup_env_sweep(p->jail->cgroups);
    }
    free(fl.items); /* emptied at the end of every turn */
    return NULL;
}

/* ---- public ----------------------------------------------------------------------------- */

static int pool_filter_memfd(const struct jail_config *jail)
{
    if (!jail->filter.len)
        return -1;
    int fd = memfd_create("sandboxd-filter", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t len = jail->filter.len * sizeof(struct sock_filter);
    if (fd_write_all(fd, jail->filter.filter, len, 0) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* "a,b,,c" -> ["a", "b", "c"] */
static json_t *pool_module_list(const char *csv)
{
    json_t *list = json_array();
    for (const char *s = csv ? csv : ""; list && *s;) {
        size_t n = strcspn(s, ",");
        if (n && json_array_append_new(list, json_stringn(s, n)) < 0) {
            json_decref(list);
            return NULL;
        }
        s += n + (s[n] == ',');
    }
    return list;
}

int pool_new(const struct jail_config *jail, const struct pool_options *opt, struct pool **ret)
{
    struct pool *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->jail = jail;
    p->opt = *opt;
    if (p->opt.max_size < p->opt.size)
        p->opt.max_size = p->opt.size;
    p->target = p->opt.size;
    if (!p->opt.zygotes)
        p->opt.zygotes = 1;
    p->epfd = p->evfd = p->filter_fd = -1;
    pthread_mutex_init(&p->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* deadlines are monotonic */
    pthread_cond_init(&p->cond, &ca);
    pthread_condattr_destroy(&ca);
    int r = -ENOMEM;
    p->zygotes = calloc(p->opt.zygotes, sizeof(*p->zygotes));
    p->preimport = pool_module_list(opt->preimport);
    p->opt.preimport = NULL; /* not kept: the list above is */
    p->warmup = opt->warmup ? strdup(opt->warmup) : NULL;
    p->opt.warmup = NULL;
    if (!p->zygotes || !p->preimport || (opt->warmup && !p->warmup))
        goto fail;
    for (unsigned i = 0; i < p->opt.zygotes; i++) {
        p->zygotes[i] = (struct zygote){.pool = p,
                                        .index = (int)i,
                                        .ctl_fd = -1,
                                        .log_fd = -1,
                                        .proc = {.pid = -1, .pidfd = -1}};
        buf_init(&p->zygotes[i].logbuf, 4096);
    }
    if (jail->filter.len && (p->filter_fd = pool_filter_memfd(jail)) < 0) {
        r = log_errno(LOG_ERROR, errno ? errno : EIO, "pool: cannot hand the filter over");
        goto fail;
    }
    p->epfd = epoll_create1(EPOLL_CLOEXEC);
    p->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (p->epfd < 0 || p->evfd < 0) {
        r = log_errno(LOG_ERROR, errno, "pool: epoll/eventfd failed");
        goto fail;
    }
    p->w_wake = (struct pool_watch){WATCH_WAKE, p};
    if ((r = pool_epoll_add(p, p->evfd, &p->w_wake)) < 0)
        goto fail;
    if (!jail->plan.n || !opt->size) {
        r = -EINVAL;
        goto fail;
    }
    for (unsigned i = 0; i < p->opt.zygotes && !opt->lazy; i++) {
        if ((r = zygote_start(p, &p->zygotes[i])) < 0)
            goto fail;
        if ((r = zygote_wait_ready(&p->zygotes[i], 30000)) < 0)
            goto fail;
    }
    p->started = !opt->lazy;
    if ((r = -pthread_create(&p->thread, NULL, pool_thread, p)) < 0)
        goto fail;
    *ret = p;
    return 0;
fail:
    for (unsigned i = 0; p->zygotes && i < p->opt.zygotes; i++) {
        struct zygote *z = &p->zygotes[i];
        if (z->proc.pid > 0) {
            kill(z->proc.pid, SIGKILL);
            while (waitpid(z->proc.pid, NULL, 0) < 0 && errno == EINTR)
                ;
        }
        fd_closep(&z->ctl_fd);
        fd_closep(&z->log_fd);
        fd_closep(&z->proc.pidfd);
        cgroup_cell_free(z->cgroup);
        buf_free(&z->logbuf);
    }
    free(p->zygotes);
    json_decref(p->preimport);
    free(p->warmup);
    fd_closep(&p->epfd);
    fd_closep(&p->evfd);
    fd_closep(&p->filter_fd);
    free(p);
    return r;
}

void pool_free(struct pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = true;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
    pool_wake(p);
    pthread_join(p->thread, NULL);
    /* Killing a zygote (init of its pid namespace) takes every cell it forked with it. */
    for (unsigned i = 0; i < p->opt.zygotes; i++) {
        struct zygote *z = &p->zygotes[i];
        if (z->proc.pid > 0 && z->proc.pidfd >= 0) {
            kill(z->proc.pid, SIGKILL);
            while (waitpid(z->proc.pid, NULL, 0) < 0 && errno == EINTR)
                ;
        }
        fd_closep(&z->ctl_fd);
        fd_closep(&z->log_fd);
        fd_closep(&z->proc.pidfd);
        buf_free(&z->logbuf);
    }
    struct pool_cell *pc, *tmp;
    HASH_ITER(hh, p->cells, pc, tmp)
    {
        HASH_DEL(p->cells, pc);
        pc->exited = true;
        if (pc->cell) {
            struct cell *c = pc->cell;
            c->ops = NULL; /* the pool is going away: free the cell directly */
            c->killed = true;
            cell_free(c);
        }
        if (pc->state != PC_TAKEN || pc->released)
            pool_cell_destroy(pc);
    }
    for (unsigned i = 0; i < p->opt.zygotes; i++)
        cgroup_cell_free(p->zygotes[i].cgroup);
    free(p->zygotes);
    json_decref(p->preimport);
    free(p->warmup);
    close(p->epfd);
    close(p->evfd);
    fd_closep(&p->filter_fd);
    pthread_cond_destroy(&p->cond);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

int pool_acquire(struct pool *p, const struct jail_limits *lim, int64_t deadline_us,
                 struct cell **ret, bool *ret_hit)
{
    struct timespec ts = {.tv_sec = deadline_us / 1000000,
                          .tv_nsec = (deadline_us % 1000000) * 1000};
    pthread_mutex_lock(&p->lock);
    if (!p->started) {
        /* A lazy pool's first user: the pool thread starts the zygotes now (pool_refill). */
        p->started = true;
        for (unsigned i = 0; i < p->opt.zygotes; i++)
            p->zygotes[i].restart_at_us = clock_mono_us();
        log_info("pool: starting on first use (%u zygote(s))", p->opt.zygotes);
    }
    bool hit = p->ready_head != NULL;
    if (hit)
        p->hits++;
    else {
        p->misses++;
        /* Demand outgrew the pool: double it (up to max_size) while the miss is served. */
        p->last_miss_us = clock_mono_us();
        p->target = p->target * 2 < p->opt.max_size ? p->target * 2 : p->opt.max_size;
        pool_wake(p);
    }
    while (!p->ready_head && !p->stop)
        if (pthread_cond_timedwait(&p->cond, &p->lock, &ts) == ETIMEDOUT && !p->ready_head)
            break;
    struct pool_cell *pc = p->ready_head;
    if (!pc) {
        pthread_mutex_unlock(&p->lock);
        log_warn("pool: no warm interpreter became ready before the deadline");
        return p->stop ? -ESHUTDOWN : -ETIMEDOUT;
    }
    p->ready_head = pc->next;
    if (!p->ready_head)
        p->ready_tail = NULL;
    p->n_ready--;
    pc->state = PC_TAKEN;
    struct cell *c = TAKE_PTR(pc->cell);
    pthread_mutex_unlock(&p->lock);
    pool_wake(p);
    int r = cgroup_cell_set_limits(c->cgroup, lim->memory, lim->nproc);
    if (r < 0) {
        cell_free(c);
        return r;
    }
    *ret = c;
    *ret_hit = hit;
    return 0;
}

json_t *pool_stats(struct pool *p)
{
    pthread_mutex_lock(&p->lock);
    json_t *zs = json_array();
    for (unsigned i = 0; i < p->opt.zygotes; i++) {
        struct zygote *z = &p->zygotes[i];
        json_array_append_new(zs, json_pack("{s:i, s:b, s:I, s:I}", "pid", (int)z->proc.pid,
                                            "alive", z->alive, "forks", (json_int_t)z->forks,
                                            "restarts", (json_int_t)z->restarts));
    }
    json_t *o =
        json_pack("{s:b, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
                  "s:I, s:I, s:o}",
                  "enabled", 1, "started", p->started, "target", (json_int_t)p->target, "minSize",
                  (json_int_t)p->opt.size, "maxSize", (json_int_t)p->opt.max_size, "retiredIdle",
                  (json_int_t)p->retired, "ready", (json_int_t)p->n_ready, "starting",
                  (json_int_t)p->n_starting, "hits", (json_int_t)p->hits, "misses",
                  (json_int_t)p->misses, "created", (json_int_t)(p->next_token), "failed",
                  (json_int_t)p->failed, "diedIdle", (json_int_t)p->died_idle, "cellExits",
                  (json_int_t)p->exits, "cellMinorFaults", (json_int_t)p->exit_minflt,
                  "cellReadyMinorFaults", (json_int_t)p->ready_minflt, "zygotes", zs);
    pthread_mutex_unlock(&p->lock);
    return o;
}

/* Rss and Pss of a process in bytes, from /proc/PID/smaps_rollup. */
static int pool_proc_memory(pid_t pid, uint64_t *ret_rss, uint64_t *ret_pss)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
    _cleanup_free_ char *s = NULL;
    int r = fd_read_file(AT_FDCWD, path, 1 << 16, &s, NULL);
    if (r < 0)
        return r;
    const char *rss = strstr(s, "\nRss:");
    const char *pss = strstr(s, "\nPss:");
    if (!rss || !pss)
        return -EBADMSG;
    *ret_rss = strtoull(rss + 5, NULL, 10) * 1024;
    *ret_pss = strtoull(pss + 5, NULL, 10) * 1024;
    return 0;
}

json_t *pool_memory(struct pool *p)
{
    pid_t zpids[64], cpids[256];
    size_t nz = 0, nc = 0;
    pthread_mutex_lock(&p->lock);
    for (unsigned i = 0; i < p->opt.zygotes && nz < ARRAY_SIZE(zpids); i++)
        if (p->zygotes[i].alive)
            zpids[nz++] = p->zygotes[i].proc.pid;
    for (struct pool_cell *pc = p->ready_head; pc && nc < ARRAY_SIZE(cpids); pc = pc->next)
        if (pc->cell && pc->cell->pid > 0)
            cpids[nc++] = pc->cell->pid;
    pthread_mutex_unlock(&p->lock);
    /* Read without the lock: a process that exits meanwhile is simply left out. */
    uint64_t zrss = 0, zpss = 0, cpss = 0, rss, pss;
    size_t cells = 0;
    for (size_t i = 0; i < nz; i++)
        if (pool_proc_memory(zpids[i], &rss, &pss) == 0) {
            zrss += rss;
            zpss += pss;
        }
    for (size_t i = 0; i < nc; i++)
        if (pool_proc_memory(cpids[i], &rss, &pss) == 0) {
            cpss += pss;
            cells++;
        }
    return json_pack("{s:I, s:I, s:I, s:I, s:I}", "zygoteRssBytes", (json_int_t)zrss,
                     "zygotePssBytes", (json_int_t)zpss, "readyCells", (json_int_t)cells,
                     "cellsPssBytes", (json_int_t)cpss, "cellPssBytes",
                     (json_int_t)(cells ? cpss / cells : 0));
}
