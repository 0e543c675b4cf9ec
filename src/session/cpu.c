// SPDX-License-Identifier: MIT
/*
 * cpu — see cpu.h.
 *
 * The watchdog owns one real-time signal: each session's timer is created
 * with SIGEV_THREAD_ID aimed at the watchdog thread, which blocks the signal
 * and reads it from a signalfd, so no other thread ever sees it. The signal
 * carries the session's serial, not a pointer: a signal queued before its
 * timer was deleted may still arrive, and then names nobody.
 */
#include "session/cpu.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/fdio.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/thread.h"

#define CPU_SIGNAL      (SIGRTMIN + 6)
#define CPU_MAX_PROCS   4096 /* processes of one session looked at */
#define CPU_CHILDREN_SZ 65536

struct cpuwatch {
    cpuwatch_fn fn;
    void *ctx;
    struct thread_group thread; /* stopped through stop_fd: it sleeps in poll() */
    pid_t tid;
    int stop_fd;
    pthread_mutex_t lock;
    pthread_cond_t ready;
    int start_error; /* 1: still starting */
};

static void *cpuwatch_thread(void *arg)
{
    struct cpuwatch *w = arg;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, CPU_SIGNAL);
    int r = -pthread_sigmask(SIG_BLOCK, &set, NULL);
    int sfd = r < 0 ? -1 : signalfd(-1, &set, SFD_CLOEXEC);
    if (r == 0 && sfd < 0)
        r = -errno;
    pthread_mutex_lock(&w->lock);
    w->tid = gettid();
    w->start_error = r;
    pthread_cond_signal(&w->ready);
    pthread_mutex_unlock(&w->lock);
    if (r < 0)
        return NULL;
    for (;;) {
        struct pollfd pfd[2] = {{.fd = sfd, .events = POLLIN},
                                {.fd = w->stop_fd, .events = POLLIN}};
        if (poll(pfd, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            log_errno(LOG_ERROR, errno, "session cpu watchdog: poll");
            break;
        }
        if (pfd[1].revents)
            break;
        struct signalfd_siginfo si;
        if (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
            w->fn(w->ctx, (uint64_t)si.ssi_ptr);
    }
    close(sfd);
    return NULL;
}

static void cpuwatch_release(struct cpuwatch *w)
{
    thread_group_done(&w->thread);
    close(w->stop_fd);
    pthread_cond_destroy(&w->ready);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

int cpuwatch_new(cpuwatch_fn fn, void *ctx, struct cpuwatch **ret)
{
    struct cpuwatch *w = calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    w->fn = fn;
    w->ctx = ctx;
    w->start_error = 1;
    w->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (w->stop_fd < 0) {
        int r = -errno;
        free(w);
        return r;
    }
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->ready, NULL);
    int r = thread_group_init(&w->thread, "session cpu watchdog", 1, NULL, NULL, w->stop_fd);
    if (r == 0)
        r = thread_group_start(&w->thread, cpuwatch_thread, w);
    if (r == 0) {
        pthread_mutex_lock(&w->lock);
        while (w->start_error == 1)
            pthread_cond_wait(&w->ready, &w->lock);
        r = w->start_error;
        pthread_mutex_unlock(&w->lock);
        if (r < 0)
            thread_group_join(&w->thread); /* it returned on its own */
    }
    if (r < 0) {
        cpuwatch_release(w);
        return r;
    }
    *ret = w;
    return 0;
}

void cpuwatch_free(struct cpuwatch *w)
{
    if (!w)
        return;
    thread_group_stop(&w->thread);
    cpuwatch_release(w);
}

/* ---- the session's processes ------------------------------------------------------------ */

/* A pidfd for pid when it is (still) a process of the session's pid namespace, else -1.
 * Opened before the check, so a pid reused after the check names a dead process, not a
 * stranger. */
static int cpu_pidfd(const struct session_cpu *c, pid_t pid)
{
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd < 0)
        return -1;
    char path[64];
    struct stat st;
    snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
    if (stat(path, &st) < 0 || st.st_dev != c->ns_dev || st.st_ino != c->ns_ino) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Fields 14-17 (utime, stime, cutime, cstime, in clock ticks) and 20 (threads) of a
 * /proc/PID/stat text. */
static bool cpu_parse_stat(const char *text, unsigned long long v[4], long *ret_threads)
{
    const char *p = strrchr(text, ')'); /* the name may hold anything but ends there */
    long threads = 0;
    if (!p || sscanf(p + 1,
                     " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu %*d %*d %ld",
                     &v[0], &v[1], &v[2], &v[3], &threads) != 5)
        return false;
    if (ret_threads)
        *ret_threads = threads;
    return true;
}

static uint64_t cpu_ticks_ns(unsigned long long ticks)
{
    long hz = sysconf(_SC_CLK_TCK);
    return ticks * (1000000000u / (uint64_t)(hz > 0 ? hz : 100));
}

/* Append the pids listed in a children file's text to the stack pending (room for cap). */
static void cpu_push_children(const char *list, pid_t *pending, size_t *top, size_t cap)
{
    for (const char *p = list; *p;) {
        char *end;
        long child = strtol(p, &end, 10);
        if (end == p)
            break;
        if (child > 0 && *top < cap)
            pending[(*top)++] = (pid_t)child;
        p = end;
    }
}

/* The interpreter's children (at most cap): with one thread (the common case) from the
 * children file kept open, with no path to walk; else from every thread's. */
static void cpu_interpreter_children(const struct session_cpu *c, pid_t *pending, size_t *top,
                                     size_t cap)
{
    char buf[4096];
    long threads = 0;
    unsigned long long v[4];
    ssize_t n = pread(c->stat_fd, buf, sizeof(buf) - 1, 0);
    if (n > 0) {
        buf[n] = '\0';
        if (!cpu_parse_stat(buf, v, &threads))
            threads = 0;
    }
    if (threads == 1 && (n = pread(c->children_fd, buf, sizeof(buf) - 1, 0)) >= 0 &&
        (size_t)n < sizeof(buf) - 1) {
        buf[n] = '\0';
        cpu_push_children(buf, pending, top, cap);
        return;
    }
    char path[96];
    snprintf(path, sizeof(path), "/proc/%d/task", (int)c->pid);
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char *list = NULL;
        size_t len = 0;
        snprintf(path, sizeof(path), "/proc/%d/task/%.16s/children", (int)c->pid, e->d_name);
        if (e->d_name[0] == '.' || fd_read_file(AT_FDCWD, path, CPU_CHILDREN_SZ, &list, &len) < 0)
            continue;
        cpu_push_children(list, pending, top, cap);
        free(list);
    }
    if (d)
        closedir(d);
}

typedef void (*cpu_visit_fn)(const struct session_cpu *c, pid_t pid, void *ctx);

/* Visit the interpreter's descendants, each before its children are listed (a process stopped
 * by visit cannot add one meanwhile); returns how many were visited. */
static size_t cpu_walk(const struct session_cpu *c, cpu_visit_fn visit, void *ctx)
{
    pid_t pending[64]; /* most sessions have no subprocess at all: no allocation then */
    pid_t *stack = pending;
    size_t top = 0, visited = 0;
    cpu_interpreter_children(c, pending, &top, ARRAY_SIZE(pending)); /* RLIMIT_NPROC is 64 */
    if (top && !(stack = malloc(CPU_MAX_PROCS * sizeof(*stack))))
        return 0;
    if (stack != pending)
        memcpy(stack, pending, top * sizeof(*stack));
    while (top && visited < CPU_MAX_PROCS) {
        pid_t pid = stack[--top];
        visit(c, pid, ctx);
        visited++;
        char path[96];
        snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
        DIR *d = opendir(path);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            char *list = NULL;
            size_t len = 0;
            snprintf(path, sizeof(path), "/proc/%d/task/%.16s/children", (int)pid, e->d_name);
            if (e->d_name[0] == '.' ||
                fd_read_file(AT_FDCWD, path, CPU_CHILDREN_SZ, &list, &len) < 0)
                continue;
            cpu_push_children(list, stack, &top, CPU_MAX_PROCS);
            free(list);
        }
        if (d)
            closedir(d);
    }
    if (stack != pending)
        free(stack);
    return visited;
}

static void cpu_visit_signal(const struct session_cpu *c, pid_t pid, void *ctx)
{
    int sig = *(const int *)ctx;
    int fd = cpu_pidfd(c, pid);
    if (fd < 0)
        return;
    if (syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0) < 0 && errno != ESRCH)
        log_errno(LOG_WARN, errno, "session: cannot signal pid %d", (int)pid);
    close(fd);
}

static size_t cpu_signal_all(const struct session_cpu *c, int sig)
{
    return cpu_walk(c, cpu_visit_signal, &sig);
}

/* The interpreter exited (then its pid may belong to someone else by now). */
static bool cpu_gone(const struct session_cpu *c)
{
    struct pollfd pfd = {.fd = c->pidfd, .events = POLLIN};
    return poll(&pfd, 1, 0) != 0;
}

/* Only the soft limit moves (anyone may lower it, and raise it back up to the hard one). */
static void cpu_set_nproc(const struct session_cpu *c, uint64_t soft)
{
    struct rlimit lim = {.rlim_cur = soft < c->nproc_hard ? soft : c->nproc_hard,
                         .rlim_max = c->nproc_hard};
    if (prlimit(c->pid, RLIMIT_NPROC, &lim, NULL) < 0 && errno != ESRCH)
        log_errno(LOG_WARN, errno, "session: cannot set RLIMIT_NPROC of pid %d", (int)c->pid);
}

static void cpu_signal_interpreter(const struct session_cpu *c, int sig)
{
    /* Through the cell's pidfd: from our pid namespace SIGSTOP reaches even the init of the
     * session's, and SIGCONT resumes it (it is ignored as a signal, not as a resumption). */
    if (syscall(SYS_pidfd_send_signal, c->pidfd, sig, NULL, 0) < 0 && errno != ESRCH)
        log_errno(LOG_WARN, errno, "session: cannot signal pid %d", (int)c->pid);
}

static uint64_t cpu_clock_ns(const struct session_cpu *c)
{
    struct timespec ts;
    if (clock_gettime(c->clock, &ts) < 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int session_cpu_init(struct session_cpu *c, struct cpuwatch *w, pid_t pid, int pidfd,
                     uint64_t serial, uint64_t nproc)
{
    *c = (struct session_cpu){
        .pid = pid, .pidfd = pidfd, .nproc = nproc, .stat_fd = -1, .children_fd = -1};
    char path[64];
    struct stat st;
    snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
    if (stat(path, &st) < 0)
        return -errno;
    /* Kept open: read each execution without walking a path (pid reuse is no concern: the
     * cell holds the process while the session lives). */
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    c->stat_fd = open(path, O_RDONLY | O_CLOEXEC);
    snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
    c->children_fd = open(path, O_RDONLY | O_CLOEXEC);
    if (c->stat_fd < 0 || c->children_fd < 0) {
        int r = -errno;
        session_cpu_done(c);
        return r;
    }
    c->ns_dev = st.st_dev;
    c->ns_ino = st.st_ino;
    int r = clock_getcpuclockid(pid, &c->clock);
    struct rlimit lim;
    if (r == 0 && prlimit(pid, RLIMIT_NPROC, NULL, &lim) < 0)
        r = errno;
    if (r != 0) {
        session_cpu_done(c);
        return -r;
    }
    c->nproc_hard = lim.rlim_max;
    struct sigevent ev = {
        .sigev_notify = SIGEV_THREAD_ID,
        .sigev_signo = CPU_SIGNAL,
        .sigev_value.sival_ptr = (void *)(uintptr_t)serial,
    };
    ev._sigev_un._tid = w->tid; /* glibc spells sigev_notify_thread_id only from 2.41 */
    if (timer_create(c->clock, &ev, &c->timer) < 0) {
        r = -errno;
        session_cpu_done(c);
        return r;
    }
    c->have_timer = true;
    return 0;
}

void session_cpu_done(struct session_cpu *c)
{
    if (c->have_timer)
        (void)timer_delete(c->timer); /* only fails for a timer that does not exist */
    c->have_timer = false;
    fd_closep(&c->stat_fd);
    fd_closep(&c->children_fd);
}

static void cpu_arm(struct session_cpu *c, uint64_t ns)
{
    struct itimerspec its = {
        .it_value = {.tv_sec = (time_t)(ns / 1000000000u), .tv_nsec = (long)(ns % 1000000000u)}};
    if (c->have_timer && timer_settime(c->timer, 0, &its, NULL) < 0)
        log_errno(LOG_WARN, errno, "session: cannot set the CPU budget timer");
}

void session_cpu_resume(struct session_cpu *c, bool stopped)
{
    cpu_arm(c, 0);
    if (cpu_gone(c))
        return;
    cpu_set_nproc(c, c->nproc);
    if (stopped)
        cpu_signal_interpreter(c, SIGCONT);
    /* Nothing can have been started since the quiescence: only what it stopped is there. */
    if (c->stopped_procs)
        cpu_signal_all(c, SIGCONT);
    c->stopped_procs = 0;
}

void session_cpu_quiesce(struct session_cpu *c)
{
    /* No new task from here on (a soft RLIMIT_NPROC of 0: every task count is over it), then
     * the subprocesses stop; a process being forked right now may appear late, hence a second
     * look when there are subprocesses at all. */
    cpu_set_nproc(c, 0);
    c->stopped_procs = cpu_signal_all(c, SIGSTOP);
    if (c->stopped_procs)
        c->stopped_procs += cpu_signal_all(c, SIGSTOP);
}

void session_cpu_arm(struct session_cpu *c, uint64_t budget_ns)
{
    c->armed_at = cpu_clock_ns(c);
    c->budget_ns = budget_ns;
    if (budget_ns == 0)
        cpu_signal_interpreter(c, SIGSTOP);
    else
        cpu_arm(c, budget_ns);
}

bool session_cpu_expired(struct session_cpu *c)
{
    /* A signal of an earlier arming may arrive late: only the one for this budget counts. */
    if (cpu_gone(c) || cpu_clock_ns(c) + 1000000 < c->armed_at + c->budget_ns)
        return false;
    cpu_signal_interpreter(c, SIGSTOP);
    return true;
}

/* A descendant's own CPU time (utime + stime), added to *ctx. */
static void cpu_visit_sum(const struct session_cpu *c, pid_t pid, void *ctx)
{
    char path[64], *text = NULL;
    size_t len = 0;
    unsigned long long v[4];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    if (fd_read_file(AT_FDCWD, path, 4096, &text, &len) == 0 && cpu_parse_stat(text, v, NULL))
        *(uint64_t *)ctx += cpu_ticks_ns(v[0] + v[1]);
    free(text);
}

uint64_t session_cpu_used(struct session_cpu *c, bool walk)
{
    /* The interpreter to the nanosecond, the children it reaped, and the live ones. */
    uint64_t total = cpu_clock_ns(c);
    char buf[4096];
    unsigned long long v[4];
    ssize_t n = pread(c->stat_fd, buf, sizeof(buf) - 1, 0);
    if (n > 0) {
        buf[n] = '\0';
        if (cpu_parse_stat(buf, v, NULL))
            total += cpu_ticks_ns(v[2] + v[3]);
    }
    if (walk) {
        c->descendants_ns = 0;
        /* Right after a quiescence that found no subprocess, and none can be started. */
        if (c->stopped_procs)
            (void)cpu_walk(c, cpu_visit_sum, &c->descendants_ns);
    }
    return total + c->descendants_ns;
}
