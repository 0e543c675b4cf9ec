// SPDX-License-Identifier: MIT
/*
 * pool — see pool.h: the cells (their states in pool_int.h, the transitions
 * in cellstate.c), the pool thread and the public calls; the zygotes are in
 * zygote.c, the /healthz figures in stats.c. A pool_cell lives in the token
 * table until its exit was reported by the zygote AND its user released it;
 * the exit report is also when its cgroup, now empty, is removed.
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
#include "util/proc.h"
#include "util/jdump.h"

#include "pool/pool_int.h"

static void pool_wake(struct pool *p)
{
    uint64_t one = 1;
    ssize_t w = write(p->evfd, &one, sizeof(one));
    (void)w; /* a full eventfd counter still wakes the thread */
}

/* ---- the warm cell backend ------------------------------------------------------------ */

static int warm_wait_exit(struct cell *c, int64_t deadline_us, struct cell_exit *ret)
{
    struct pool_cell *pc = c->backend;
    struct pool *p = pc->pool;
    struct timespec ts = {.tv_sec = deadline_us / 1000000,
                          .tv_nsec = (deadline_us % 1000000) * 1000};
    pthread_mutex_lock(&p->lock);
    assert_pool_cell_state(pc, PC_TAKEN, PC_TAKEN_EXITED);
    while (pc->state != PC_TAKEN_EXITED)
        if (pthread_cond_timedwait(&p->cond, &p->lock, &ts) == ETIMEDOUT &&
            pc->state != PC_TAKEN_EXITED)
            break;
    int r = pc->state == PC_TAKEN_EXITED ? 0 : -ETIMEDOUT;
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
    assert_pool_cell_state(pc, PC_TAKEN, PC_TAKEN_EXITED);
    /* The cgroup may still hold the dying processes: remove it once the exit is reported. */
    pc->cgroup = TAKE_PTR(c->cgroup);
    pc->cell = NULL;
    bool gone = pc->state == PC_TAKEN_EXITED;
    pool_cell_set_state(pc, gone ? PC_GONE : PC_RELEASED);
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

/* Read a starting cell's protocol socket ("ready" or a setup error). Lock held. */
static struct cell *pool_cell_readable(struct pool *p, struct pool_cell *pc)
{
    /* An event of this turn for a cell discarded earlier in it (its zygote died, say): the
     * cell is on the free list already. */
    if (!pool_cell_starting(pc->state))
        return NULL;
    struct cell *c = pc->cell;
    char chunk[FRAME_READ_CHUNK];
    ssize_t n = read(c->proto_fd, chunk, sizeof(chunk));
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return NULL;
    if (n <= 0 || frame_reader_feed(&c->reader, chunk, (size_t)n) < 0)
        return pool_cell_discard(p, pc, PC_TAKEN);
    for (;;) {
        json_t *msg = NULL;
        const char *why = NULL;
        int r = frame_reader_next(&c->reader, &msg, &why);
        if (r == 0)
            return NULL;
        if (r < 0)
            return pool_cell_discard(p, pc, PC_TAKEN);
        const char *type = json_string_value(json_object_get(msg, "type"));
        if (type && strcmp(type, "ready") == 0) {
            p->ready_minflt += (uint64_t)json_integer_value(json_object_get(msg, "minFlt"));
            json_decref(msg);
            pool_cell_said_ready(p, pc);
            return NULL;
        }
        const char *m = json_string_value(json_object_get(msg, "message"));
        log_error("pool: cell setup failed: %s", m ? m : "unexpected message");
        json_decref(msg);
        return pool_cell_discard(p, pc, PC_TAKEN);
    }
}

/* "forked": the cell exists; it still needs its cgroup (attached by the pool thread after
 * dropping the lock, see pool_attach). Lock held. */
static struct cell *pool_on_forked(struct pool *p, json_t *msg, int fds[POOL_RECV_FDS],
                                   struct pool_attachlist *al)
{
    uint64_t token = (uint64_t)json_integer_value(json_object_get(msg, "token"));
    struct pool_cell *pc = NULL;
    HASH_FIND(hh, p->cells, &token, sizeof(token), pc);
    if (!pc || (pc->state != PC_FORKING && pc->state != PC_FORKING_SAID_READY)) {
        pool_close_fds(fds);
        return NULL;
    }
    if (pc->z->pending)
        pc->z->pending--;
    struct cell *c = pc->cell;
    c->pidfd = TAKE_FD(fds[0]);
    c->egress_fd = TAKE_FD(fds[1]); /* a network pool's cell's listener; nothing otherwise */
    c->pid = c->pidfd >= 0 ? pool_pidfd_pid(c->pidfd) : -1;
    pool_cell_set_state(pc, pc->state == PC_FORKING ? PC_STARTING : PC_STARTING_SAID_READY);
    pc->t_forked = clock_mono_us();
    if (c->pid <= 0) {
        log_error("pool: zygote %d sent no usable pidfd", pc->z->index);
        return pool_cell_discard(p, pc, PC_TAKEN);
    }
    if ((c->egress_fd >= 0) != (p->opt.egress_port != 0)) {
        /* A network pool's cell is never handed out without its listener (its execution's
         * requests would go nowhere), nor any other cell with one. */
        log_error("pool: zygote %d sent a cell %s an egress listener", pc->z->index,
                  c->egress_fd >= 0 ? "with" : "without");
        return pool_cell_discard(p, pc, PC_TAKEN);
    }
    if (al->n < ARRAY_SIZE(al->items)) {
        al->items[al->n++] = (struct pool_attach){.token = token, .pid = c->pid};
        return NULL;
    }
    log_error("pool: too many cells to attach at once");
    return pool_cell_discard(p, pc, PC_TAKEN);
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
        if (!pc || (pc->state != PC_STARTING && pc->state != PC_STARTING_SAID_READY)) {
            cgroup_cell_free(cgs[i]); /* the cell died meanwhile */
            continue;
        }
        pc->cell->cgroup = cgs[i];
        if (!ok[i]) {
            pool_defer_free(fl, pool_cell_discard(p, pc, PC_TAKEN));
            continue;
        }
        pc->t_attached = clock_mono_us();
        if (pc->state == PC_STARTING)
            pool_cell_set_state(pc, PC_STARTING_ATTACHED);
        else
            pool_cell_make_ready(p, pc);
    }
    pthread_mutex_unlock(&p->lock);
    al->n = 0;
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

static void zygote_died(struct pool *p, struct zygote *z, struct pool_freelist *fl)
{
    int status = 0;
    while (waitpid(z->proc.pid, &status, WNOHANG) < 0 && errno == EINTR)
        ;
    pool_zygote_drain_log(z);
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
        if (pc->z != z || pc->state == PC_TAKEN_EXITED)
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
        int fds[POOL_RECV_FDS];
        int r = pool_recv(z->ctl_fd, &msg, fds);
        if (r == -EAGAIN || r == 0)
            return; /* EOF is handled when the pidfd fires */
        if (r < 0) {
            log_errno(LOG_WARN, r, "pool: bad message from zygote %d", z->index);
            return;
        }
        const char *op = json_string_value(json_object_get(msg, "op"));
        if (!op) {
            pool_close_fds(fds);
        } else if (strcmp(op, "forked") == 0) {
            pool_defer_free(fl, pool_on_forked(p, msg, fds, al));
        } else {
            pool_close_fds(fds);
            if (strcmp(op, "exit") == 0) {
                pool_defer_free(fl, pool_on_exit(p, msg));
            } else if (strcmp(op, "fork_failed") == 0) {
                uint64_t token = (uint64_t)json_integer_value(json_object_get(msg, "token"));
                struct pool_cell *pc = NULL;
                HASH_FIND(hh, p->cells, &token, sizeof(token), pc);
                log_error("pool: zygote %d could not fork: %s", z->index,
                          json_string_value(json_object_get(msg, "error")) ?: "?");
                /* Only a cell that is being forked can fail to fork; a report for one it
                 * had forked is the zygote's mistake, and its exit report will follow. */
                if (pc && (pc->state == PC_FORKING || pc->state == PC_FORKING_SAID_READY))
                    pool_defer_free(fl, pool_cell_discard(p, pc, PC_TAKEN_EXITED));
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
            if (pool_zygote_start(p, z) < 0) {
                z->restart_at_us = now + 5 * 1000000;
                continue;
            }
            z->restart_at_us = 0;
        }
    }
    /* An acquirer that left cells ready is served first (pool_options.refill_delay_us). */
    if (p->refill_at_us > now && p->n_ready > 0)
        return;
    p->refill_at_us = 0;
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
        pool_cell_set_state(pc, PC_TAKEN); /* released through warm_release, like a used cell */
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
        if (thread_group_stopping(&p->thread)) {
            pthread_mutex_unlock(&p->lock);
            break;
        }
        pool_shrink(p, &fl);
        pool_refill(p);
        int64_t wait_us = p->refill_at_us ? p->refill_at_us - clock_mono_us() : 1000000;
        pthread_mutex_unlock(&p->lock);
        int n = epoll_wait(p->epfd, evs, (int)ARRAY_SIZE(evs),
                           wait_us <= 0         ? 0
                           : wait_us >= 1000000 ? 1000
                                                : (int)(wait_us + 999) / 1000);
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
                pool_zygote_drain_log(w->obj);
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

/* The filter the zygotes load into every cell: the default one, or its TCP variant for a
 * network pool (jail->filter_tcp, built when the jail has egress). */
static int pool_filter_memfd(const struct sock_fprog *filter)
{
    if (!filter->len)
        return -1;
    int fd = memfd_create("sandboxd-filter", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t len = filter->len * sizeof(struct sock_filter);
    if (fd_write_all(fd, filter->filter, len, 0) < 0) {
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
    const struct sock_fprog *filter = opt->egress_port ? &jail->filter_tcp : &jail->filter;
    if (opt->egress_port && !filter->len && jail->filter.len) {
        r = log_errno(LOG_ERROR, EINVAL, "pool: a network pool needs a jail with egress");
        goto fail;
    }
    if (filter->len && (p->filter_fd = pool_filter_memfd(filter)) < 0) {
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
        if ((r = pool_zygote_start(p, &p->zygotes[i])) < 0)
            goto fail;
        if ((r = pool_zygote_wait_ready(&p->zygotes[i], 30000)) < 0)
            goto fail;
    }
    p->started = !opt->lazy;
    (void)thread_group_init(&p->thread, "pool", 1, &p->lock, &p->cond, p->evfd); /* one: no alloc */
    if ((r = thread_group_start(&p->thread, pool_thread, p)) < 0)
        goto fail;
    *ret = p;
    return 0;
fail:
    for (unsigned i = 0; p->zygotes && i < p->opt.zygotes; i++) {
        struct zygote *z = &p->zygotes[i];
        if (z->proc.pid > 0) {
            proc_kill_wait(z->proc.pid);
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
    thread_group_stop(&p->thread);
    thread_group_done(&p->thread);
    /* Killing a zygote (init of its pid namespace) takes every cell it forked with it. */
    for (unsigned i = 0; i < p->opt.zygotes; i++) {
        struct zygote *z = &p->zygotes[i];
        if (z->proc.pid > 0 && z->proc.pidfd >= 0) {
            proc_kill_wait(z->proc.pid);
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
        if (pc->cell) {
            struct cell *c = pc->cell;
            c->ops = NULL; /* the pool is going away: free the cell directly */
            c->killed = true;
            cell_free(c);
        }
        /* A cell still held is freed by its release, which needs to know it exited. */
        if (pc->state == PC_TAKEN)
            pool_cell_set_state(pc, PC_TAKEN_EXITED);
        else if (pc->state != PC_TAKEN_EXITED)
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
    while (!p->ready_head && !thread_group_stopping(&p->thread))
        if (pthread_cond_timedwait(&p->cond, &p->lock, &ts) == ETIMEDOUT && !p->ready_head)
            break;
    struct pool_cell *pc = p->ready_head;
    if (!pc) {
        pthread_mutex_unlock(&p->lock);
        log_warn("pool: no warm interpreter became ready before the deadline");
        return thread_group_stopping(&p->thread) ? -ESHUTDOWN : -ETIMEDOUT;
    }
    p->ready_head = pc->next;
    if (!p->ready_head)
        p->ready_tail = NULL;
    p->n_ready--;
    pool_cell_set_state(pc, PC_TAKEN);
    struct cell *c = TAKE_PTR(pc->cell);
    if (p->opt.refill_delay_us && p->n_ready > 0 && !p->refill_at_us)
        p->refill_at_us = clock_mono_us() + p->opt.refill_delay_us;
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
