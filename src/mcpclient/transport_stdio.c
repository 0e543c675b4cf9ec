// SPDX-License-Identifier: MIT
/*
 * transport_stdio — see transport_stdio.h.
 *
 * Threads: the caller's threads write to the child's stdin (serialised by
 * write_lock, non-blocking with a deadline so a server that stops reading
 * cannot hang us); one reader thread polls stdout, stderr and a wake-up
 * eventfd, splits lines and hands messages to the client. Only close()
 * reaps the child, so its pid (and process group id) cannot be recycled
 * while we may still signal it.
 *
 * The reader never blocks on stdin. Its own messages (answers to the
 * server's pings) go to an outbox that it drains with non-blocking writes
 * when write_lock is free, and that every other writer drains first. If it
 * waited for write_lock instead, a caller stuck writing a large request to a
 * server that is itself stuck writing to its stdout — which only the reader
 * empties — would deadlock the three of them until the caller's deadline.
 *
 * Relies on SIGPIPE being ignored in the process (main.c does it): a write to
 * a server that exited must come back as EPIPE.
 */
#include "mcpclient/transport_stdio.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto/jsonrpc.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/fdio.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/proc.h"
#include "util/thread.h"

extern char **environ;

#define STDIO_STOP_GRACE_MS   2000 /* after stdin EOF, and again after SIGTERM */
#define STDIO_STDERR_LINE     4096 /* longer stderr lines are logged in pieces */
#define STDIO_STDERR_PER_SEC  100  /* stderr lines logged per second; the rest are counted */
#define STDIO_GARBAGE_LOGGED  10   /* non-JSON stdout lines reported per connection */
#define STDIO_READ_CHUNK      65536
#define STDIO_OUTBOX_MAX      (1u << 20) /* the reader's queued answers */
#define STDIO_OUTBOX_RETRY_MS 20         /* how often the reader retries a blocked outbox */

struct stdio_transport {
    struct mcp_transport base;
    char *name;
    struct mcp_client *owner; /* its connection's state, and where messages go */
    pid_t pid;
    int in_fd; /* our end of the child's stdin; -1 once closed */
    int out_fd;
    int err_fd;
    int wake_fd;                /* eventfd: close() tells the reader to stop */
    struct thread_group reader; /* stopped through wake_fd: it sleeps in poll() */
    pthread_mutex_t write_lock; /* in_fd and the bytes written to it */
    pthread_mutex_t lock;       /* outbox */
    struct buf outbox;          /* bytes for stdin from the reader thread, not yet written */
    /* Reader-thread state. */
    struct buf line;
    struct buf errline;
    unsigned garbage;
    int64_t err_window_us;
    unsigned err_window_lines;
    unsigned err_dropped;
};

/* Set on the reader thread: tells stdio_send() it must not block. */
static _Thread_local struct stdio_transport *stdio_reader_of;

/* The server may still be written to: not KILLED (by a stalled write) nor DEAD (it exited). */
static bool stdio_writable(struct stdio_transport *t)
{
    return !LIFECYCLE_IN(mcp_client_state(t->owner), MCP_CONN_KILLED, MCP_CONN_DEAD);
}

/* Has the child exited? Peeks (WNOWAIT) so that only close() reaps. A child we cannot wait for
 * (ECHILD: someone set SIGCHLD to SIG_IGN and the kernel reaped it) counts as exited. */
static bool stdio_exited(struct stdio_transport *t, siginfo_t *ret_info)
{
    siginfo_t si = {0};
    if (waitid(P_PID, (id_t)t->pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
        return errno == ECHILD;
    if (si.si_pid != t->pid)
        return false;
    if (ret_info)
        *ret_info = si;
    return true;
}

static void stdio_sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static bool stdio_wait_exit(struct stdio_transport *t, int64_t ms, siginfo_t *ret_info)
{
    int64_t deadline = clock_mono_us() + ms * 1000;
    for (;;) {
        if (stdio_exited(t, ret_info))
            return true;
        if (clock_mono_us() >= deadline)
            return false;
        stdio_sleep_ms(10);
    }
}

static void stdio_describe_exit(const siginfo_t *si, char *out, size_t size)
{
    if (si->si_pid == 0)
        snprintf(out, size, "closed its stdout");
    else if (si->si_code == CLD_EXITED)
        snprintf(out, size, "exited with status %d", si->si_status);
    else
        snprintf(out, size, "was killed by signal %d (%s)", si->si_status,
                 strsignal(si->si_status));
}

/* ---- reader thread ---- */

static void stdio_stderr_line(struct stdio_transport *t)
{
    if (t->errline.len == 0)
        return;
    int64_t now = clock_mono_us();
    if (now - t->err_window_us >= 1000000) {
        if (t->err_dropped)
            log_warn("MCP server '%s': %u stderr lines not logged (more than %d per second)",
                     t->name, t->err_dropped, STDIO_STDERR_PER_SEC);
        t->err_window_us = now;
        t->err_window_lines = 0;
        t->err_dropped = 0;
    }
    if (t->err_window_lines++ < STDIO_STDERR_PER_SEC)
        log_info("MCP server '%s': %s", t->name, t->errline.data);
    else
        t->err_dropped++;
    buf_reset(&t->errline);
}

static void stdio_stderr_data(struct stdio_transport *t, const char *p, size_t n)
{
    while (n > 0) {
        const char *nl = memchr(p, '\n', n);
        size_t take = nl ? (size_t)(nl - p) : n;
        bool full = false;
        size_t used = buf_append_capped(&t->errline, p, take, &full);
        if (full) {
            stdio_stderr_line(t); /* an over-long line goes out in pieces */
            p += used;
            n -= used;
            continue;
        }
        p += take;
        n -= take;
        if (nl) {
            if (t->errline.len && t->errline.data[t->errline.len - 1] == '\r')
                t->errline.data[--t->errline.len] = '\0';
            stdio_stderr_line(t);
            p++;
            n--;
        }
    }
}

static void stdio_stdout_line(struct stdio_transport *t, char *s, size_t len)
{
    if (len && s[len - 1] == '\r')
        len--;
    if (len == 0)
        return;
    json_t *msg = NULL;
    if (jsonrpc_parse(s, len, &msg) < 0) {
        /* The spec forbids it, but servers do print banners to stdout; the official SDKs skip
         * such lines too. A request it was meant to answer then times out. */
        if (t->garbage++ < STDIO_GARBAGE_LOGGED)
            log_warn("MCP server '%s' wrote a line that is not JSON to stdout (ignored): %.100s",
                     t->name, s);
        return;
    }
    mcp_client_on_message(t->owner, msg);
    json_decref(msg);
}

/* Returns false when the line cap was exceeded. */
static bool stdio_stdout_data(struct stdio_transport *t, const char *p, size_t n)
{
    while (n > 0) {
        const char *nl = memchr(p, '\n', n);
        size_t take = nl ? (size_t)(nl - p) : n;
        if (buf_append(&t->line, p, take) < 0)
            return false;
        if (!nl)
            return true;
        stdio_stdout_line(t, t->line.data, t->line.len);
        buf_reset(&t->line);
        p += take + 1;
        n -= take + 1;
    }
    return true;
}

static void stdio_stdout_closed(struct stdio_transport *t)
{
    /* close() asked the server to stop: its exit is no news. */
    bool closing = mcp_client_state(t->owner) == MCP_CONN_CLOSING;
    /* The kernel closes a dying process's files a moment before it becomes a zombie: give the
     * exit status a short while to appear, so the error can say what happened. */
    siginfo_t si = {0};
    if (!closing)
        (void)stdio_wait_exit(t, 200, &si);
    char what[96];
    stdio_describe_exit(&si, what, sizeof(what));
    log_msg(closing ? LOG_DEBUG : LOG_WARN, "MCP server '%s' %s", t->name, what);
    char *why = NULL;
    if (asprintf(&why, "MCP server '%s' %s", t->name, what) < 0)
        why = NULL;
    mcp_client_transport_ended(t->owner, SBX_UP_TRANSPORT, why ? why : "MCP server exited");
    free(why);
}

static bool stdio_outbox_pending(struct stdio_transport *t)
{
    pthread_mutex_lock(&t->lock);
    bool pending = t->outbox.len > 0;
    pthread_mutex_unlock(&t->lock);
    return pending;
}

/* Reader thread: write what the outbox holds without blocking, if no one else is writing (they
 * drain the outbox themselves). A partial write is fine: the rest stays first in line. */
static void stdio_outbox_try(struct stdio_transport *t)
{
    if (pthread_mutex_trylock(&t->write_lock) != 0)
        return;
    pthread_mutex_lock(&t->lock);
    if (t->in_fd < 0) {
        buf_reset(&t->outbox);
    } else if (t->outbox.len > 0) {
        ssize_t n = write(t->in_fd, t->outbox.data, t->outbox.len);
        if (n > 0)
            buf_consume(&t->outbox, (size_t)n);
        else if (n < 0 && errno != EAGAIN && errno != EINTR)
            buf_reset(&t->outbox); /* EPIPE: the server is gone, the reader will see EOF */
    }
    pthread_mutex_unlock(&t->lock);
    pthread_mutex_unlock(&t->write_lock);
}

/* Writers, under write_lock: the reader's queued bytes go before anything else. */
static int stdio_outbox_drain(struct stdio_transport *t, int64_t deadline_us)
{
    pthread_mutex_lock(&t->lock);
    size_t n = t->outbox.len;
    char *data = n ? buf_take(&t->outbox, NULL) : NULL;
    pthread_mutex_unlock(&t->lock);
    if (n && !data)
        return -ENOMEM;
    int r = n ? fd_write_all(t->in_fd, data, n, deadline_us) : 0;
    free(data);
    return r;
}

static void *stdio_reader(void *arg)
{
    struct stdio_transport *t = arg;
    stdio_reader_of = t;
    char *chunk = malloc(STDIO_READ_CHUNK);
    struct pollfd pfd[3] = {
        {.fd = t->out_fd, .events = POLLIN},
        {.fd = t->err_fd, .events = POLLIN},
        {.fd = t->wake_fd, .events = POLLIN},
    };
    if (!chunk) {
        mcp_client_transport_ended(t->owner, SBX_UP_TRANSPORT, "out of memory");
        return NULL;
    }
    while (pfd[0].fd >= 0 || pfd[1].fd >= 0) {
        bool pending = stdio_outbox_pending(t);
        if (pending)
            stdio_outbox_try(t);
        if (poll(pfd, ARRAY_SIZE(pfd), pending ? STDIO_OUTBOX_RETRY_MS : -1) < 0) {
            if (errno == EINTR)
                continue;
            log_errno(LOG_ERROR, errno, "MCP server '%s': poll", t->name);
            break;
        }
        for (int i = 0; i < 2; i++) {
            if (pfd[i].fd < 0 || !pfd[i].revents)
                continue;
            ssize_t n = read(pfd[i].fd, chunk, STDIO_READ_CHUNK);
            if (n < 0 && (errno == EINTR || errno == EAGAIN))
                continue;
            if (i == 1) {
                if (n > 0) {
                    stdio_stderr_data(t, chunk, (size_t)n);
                } else {
                    stdio_stderr_line(t);
                    pfd[1].fd = -1;
                }
                continue;
            }
            if (n <= 0) {
                pfd[0].fd = -1;
                stdio_stdout_closed(t);
            } else if (!stdio_stdout_data(t, chunk, (size_t)n)) {
                pfd[0].fd = -1;
                char why[160];
                snprintf(why, sizeof(why),
                         "MCP server '%s' sent a message longer than %u bytes; it was killed",
                         t->name, MCP_CLIENT_MAX_MESSAGE);
                /* Dead before the kill: no one writes to it in between. */
                mcp_client_transport_ended(t->owner, SBX_UP_PROTOCOL, why);
                (void)killpg(t->pid, SIGKILL); /* it cannot be resynchronised; close() reaps */
                log_warn("%s", why);
            }
        }
        /* Checked last, so the output that came with the child's exit still gets read. */
        if (pfd[2].revents)
            break;
    }
    free(chunk);
    return NULL;
}

/* ---- writing ---- */

static int stdio_send(struct mcp_transport *base, json_t *msg, int64_t deadline_us,
                      struct sbx_error *err)
{
    struct stdio_transport *t = (struct stdio_transport *)base;
    _cleanup_free_ char *text = jsonrpc_format(msg);
    if (!text) {
        sbx_error_upstream(err, SBX_UP_PROTOCOL, NULL, "cannot encode the message");
        return -ENOMEM;
    }
    size_t len = strlen(text);
    if (len > MCP_CLIENT_MAX_MESSAGE) {
        sbx_error_upstream(err, SBX_UP_PROTOCOL, NULL, "the message (%zu bytes) exceeds %u bytes",
                           len, MCP_CLIENT_MAX_MESSAGE);
        return -EMSGSIZE;
    }
    text[len] = '\n'; /* jsonrpc_format gave len+1 bytes: the NUL becomes the delimiter */

    if (stdio_reader_of == t) {
        pthread_mutex_lock(&t->lock);
        int r = buf_append(&t->outbox, text, len + 1);
        pthread_mutex_unlock(&t->lock);
        if (r < 0) {
            sbx_error_upstream(err, SBX_UP_TRANSPORT, NULL,
                               "MCP server '%s' does not read its stdin: answer dropped", t->name);
            return r;
        }
        stdio_outbox_try(t);
        return 0;
    }

    pthread_mutex_lock(&t->write_lock);
    int r = -ENOTCONN;
    if (t->in_fd >= 0 && stdio_writable(t))
        r = stdio_outbox_drain(t, deadline_us);
    if (r >= 0 && t->in_fd >= 0)
        r = fd_write_all(t->in_fd, text, len + 1, deadline_us);
    if (r == -ETIMEDOUT) {
        /* Part of the line may be written: the stream cannot carry another message. */
        mcp_client_stalled(t->owner);
        (void)killpg(t->pid, SIGKILL);
    }
    pthread_mutex_unlock(&t->write_lock);

    if (r == -ETIMEDOUT)
        sbx_error_upstream(err, SBX_UP_TIMEOUT, NULL,
                           "MCP server '%s' stopped reading its stdin; it was killed", t->name);
    else if (r < 0)
        sbx_error_upstream(err, SBX_UP_TRANSPORT, NULL, "MCP server '%s' is not running: %s",
                           t->name, strerror(-r));
    return r;
}

/* ---- start and stop ---- */

static void stdio_close(struct mcp_transport *base)
{
    struct stdio_transport *t = (struct stdio_transport *)base;
    if (!t)
        return;
    if (t->pid > 0) {
        pthread_mutex_lock(&t->write_lock);
        fd_closep(&t->in_fd); /* EOF on stdin: the polite way to ask an MCP server to exit */
        pthread_mutex_unlock(&t->write_lock);
        if (!stdio_wait_exit(t, STDIO_STOP_GRACE_MS, NULL)) {
            log_warn("MCP server '%s' still runs %d ms after its stdin was closed: SIGTERM",
                     t->name, STDIO_STOP_GRACE_MS);
            (void)killpg(t->pid, SIGTERM);
            if (!stdio_wait_exit(t, STDIO_STOP_GRACE_MS, NULL)) {
                log_warn("MCP server '%s' ignored SIGTERM: SIGKILL", t->name);
                (void)killpg(t->pid, SIGKILL);
            }
        }
        /* The leader is a zombie or dying, so its group id cannot have been reused: take down
         * whatever it left behind in its group, which could hold our pipes open. */
        (void)killpg(t->pid, SIGKILL);
        (void)proc_wait(t->pid, NULL);
        log_info("MCP server '%s' (pid %d) stopped", t->name, (int)t->pid);
    }
    thread_group_stop(&t->reader); /* none started: nothing to join */
    thread_group_done(&t->reader);
    fd_closep(&t->in_fd);
    fd_closep(&t->out_fd);
    fd_closep(&t->err_fd);
    fd_closep(&t->wake_fd);
    buf_free(&t->line);
    buf_free(&t->errline);
    buf_free(&t->outbox);
    pthread_mutex_destroy(&t->write_lock);
    pthread_mutex_destroy(&t->lock);
    free(t->name);
    free(t);
}

static const struct mcp_transport_ops stdio_ops = {
    .name = "stdio",
    .send = stdio_send,
    .close = stdio_close,
};

/* What a server inherits from us: what any program needs to run in the user's session, and
 * nothing that could be a secret (our tokens, API keys, proxies with credentials), as the
 * reference MCP clients do. Everything else comes from the server's "env". */
static bool stdio_inherited(const char *var, size_t klen)
{
    static const char *const names[] = {"PATH",  "HOME",   "LOGNAME",        "USER",
                                        "SHELL", "TERM",   "LANG",           "LANGUAGE",
                                        "TZ",    "TMPDIR", "XDG_RUNTIME_DIR"};
    for (size_t i = 0; i < ARRAY_SIZE(names); i++)
        if (klen == strlen(names[i]) && strncmp(var, names[i], klen) == 0)
            return true;
    return klen > 3 && strncmp(var, "LC_", 3) == 0;
}

/* The environment of the child: the inherited part of ours, then cfg->env added or
 * overriding. The strings are borrowed; only the array is allocated. */
static char **stdio_environment(char *const *extra)
{
    size_t n = 0, m = 0;
    while (environ && environ[n])
        n++;
    while (extra && extra[m])
        m++;
    char **env = calloc(n + m + 1, sizeof(*env));
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        size_t klen = strcspn(environ[i], "=");
        /* Values that start with "()" are shell functions: never passed (shellshock). */
        if (!stdio_inherited(environ[i], klen) || strncmp(environ[i] + klen, "=()", 3) == 0)
            continue;
        bool overridden = false;
        for (size_t j = 0; j < m && !overridden; j++)
            overridden = strncmp(extra[j], environ[i], klen) == 0 && extra[j][klen] == '=';
        if (!overridden)
            env[k++] = environ[i];
    }
    for (size_t j = 0; j < m; j++)
        env[k++] = extra[j];
    return env;
}

/* Keep our pipe ends off 0..2: if sandboxd runs with a standard fd closed, a pipe could land
 * there and the child's dup2 sequence would clobber one end with another. */
static int stdio_fd_high(int fd)
{
    if (fd > STDERR_FILENO)
        return fd;
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
    int r = moved < 0 ? -errno : moved;
    (void)close(fd); /* the original is replaced either way */
    return r;
}

static int stdio_pipe(int ret[2])
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -errno;
    p[0] = stdio_fd_high(p[0]);
    p[1] = stdio_fd_high(p[1]);
    if (p[0] < 0 || p[1] < 0) {
        int r = p[0] < 0 ? p[0] : p[1];
        fd_closep(&p[0]);
        fd_closep(&p[1]);
        return r;
    }
    ret[0] = p[0];
    ret[1] = p[1];
    return 0;
}

static int stdio_spawn(struct stdio_transport *t, const struct mcp_server_config *cfg,
                       const int in[2], const int out[2], const int err[2])
{
    size_t nargs = 0;
    while (cfg->args && cfg->args[nargs])
        nargs++;
    _cleanup_free_ char **argv = calloc(nargs + 2, sizeof(*argv));
    _cleanup_free_ char **envp = stdio_environment(cfg->env);
    if (!argv || !envp)
        return -ENOMEM;
    argv[0] = cfg->command;
    for (size_t i = 0; i < nargs; i++)
        argv[i + 1] = cfg->args[i];

    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    int r = posix_spawn_file_actions_init(&fa);
    if (r)
        return -r;
    r = posix_spawnattr_init(&attr);
    if (r) {
        posix_spawn_file_actions_destroy(&fa);
        return -r;
    }
    /* dup2 clears O_CLOEXEC on the targets only; every other fd of ours stays out. */
    if (!r)
        r = posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
    if (!r)
        r = posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
    if (!r)
        r = posix_spawn_file_actions_adddup2(&fa, err[1], STDERR_FILENO);
    if (!r && cfg->cwd)
        r = posix_spawn_file_actions_addchdir_np(&fa, cfg->cwd);
    /* sandboxd blocks signals for sigwait and ignores SIGPIPE; an exec'd program inherits both,
     * so reset them. Its own process group lets close() signal the server and its helpers. */
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    sigdelset(&all, SIGKILL);
    sigdelset(&all, SIGSTOP);
    if (!r)
        r = posix_spawnattr_setsigmask(&attr, &none);
    if (!r)
        r = posix_spawnattr_setsigdefault(&attr, &all);
    if (!r)
        r = posix_spawnattr_setpgroup(&attr, 0);
    if (!r)
        r = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                                POSIX_SPAWN_SETSIGDEF);
    /* glibc reports exec and chdir failures of the child as posix_spawn's result. */
    if (!r)
        r = strchr(cfg->command, '/') ? posix_spawn(&t->pid, cfg->command, &fa, &attr, argv, envp)
                                      : posix_spawnp(&t->pid, cfg->command, &fa, &attr, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (r)
        t->pid = 0;
    return -r;
}

int mcp_transport_stdio_open(const struct mcp_server_config *cfg, struct mcp_client *owner,
                             struct mcp_transport **ret, struct sbx_error *err)
{
    if (!cfg->command || !*cfg->command) {
        sbx_error_upstream(err, SBX_UP_TRANSPORT, NULL, "MCP server '%s' has no command",
                           cfg->name);
        return -EINVAL;
    }
    struct stdio_transport *t = calloc(1, sizeof(*t));
    if (!t || !(t->name = strdup(cfg->name))) {
        free(t);
        sbx_error_upstream(err, SBX_UP_TRANSPORT, NULL, "out of memory");
        return -ENOMEM;
    }
    t->base.ops = &stdio_ops;
    t->owner = owner;
    t->in_fd = t->out_fd = t->err_fd = t->wake_fd = -1;
    pthread_mutex_init(&t->write_lock, NULL);
    pthread_mutex_init(&t->lock, NULL);
    buf_init(&t->line, MCP_CLIENT_MAX_MESSAGE);
    buf_init(&t->errline, STDIO_STDERR_LINE);
    buf_init(&t->outbox, STDIO_OUTBOX_MAX);

    int in[2] = {-1, -1}, out[2] = {-1, -1}, errp[2] = {-1, -1};
    const char *step = "pipe";
    int r = stdio_pipe(in);
    if (r >= 0)
        r = stdio_pipe(out);
    if (r >= 0)
        r = stdio_pipe(errp);
    if (r >= 0) {
        step = "eventfd";
        t->wake_fd = eventfd(0, EFD_CLOEXEC);
        if (t->wake_fd < 0)
            r = -errno;
        else /* one thread: cannot fail */
            (void)thread_group_init(&t->reader, "MCP stdio reader", 1, NULL, NULL, t->wake_fd);
    }
    if (r >= 0) {
        step = "start";
        r = stdio_spawn(t, cfg, in, out, errp);
    }
    fd_closep(&in[0]);
    fd_closep(&out[1]);
    fd_closep(&errp[1]);
    t->in_fd = TAKE_FD(in[1]);
    t->out_fd = TAKE_FD(out[0]);
    t->err_fd = TAKE_FD(errp[0]);
    if (r < 0) {
        if (strcmp(step, "start") == 0)
            sbx_error_upstream(err, SBX_UP_TRANSPORT, NULL, "cannot start MCP server '%s' (%s): %s",
                               cfg->name, cfg->command, strerror(-r));
        else
            sbx_error_upstream(err, SBX_UP_TRANSPORT, NULL, "cannot start MCP server '%s': %s: %s",
                               cfg->name, step, strerror(-r));
        stdio_close(&t->base);
        return r;
    }
    /* Non-blocking: writes are bounded by deadlines, reads by the reader's poll. */
    (void)fd_set_nonblock(t->in_fd, true);  /* cannot fail on a pipe we just made */
    (void)fd_set_nonblock(t->out_fd, true); /* idem */
    (void)fd_set_nonblock(t->err_fd, true); /* idem */
    r = thread_group_start(&t->reader, stdio_reader, t);
    if (r < 0) {
        /* No reader to join: stop the child by hand, then let close() do the rest. */
        (void)killpg(t->pid, SIGKILL);
        (void)proc_wait(t->pid, NULL);
        t->pid = 0;
        sbx_error_upstream(err, SBX_UP_TRANSPORT, NULL,
                           "MCP server '%s': cannot start a thread: %s", cfg->name, strerror(-r));
        stdio_close(&t->base);
        return r;
    }
    log_info("started MCP server '%s' (%s, pid %d)", cfg->name, cfg->command, (int)t->pid);
    *ret = &t->base;
    return 0;
}
