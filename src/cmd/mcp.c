// SPDX-License-Identifier: MIT
/*
 * mcp — `sandboxd mcp`: sandboxd as an MCP server on stdin/stdout, the way
 * Claude Desktop and other MCP clients start local servers (docs/MCP.md).
 * The stdio transport of MCP: newline-delimited JSON-RPC messages, nothing
 * but protocol on stdout (the real stdout is moved to a private fd and fd 1
 * becomes stderr, so no library or child can write a stray byte into the
 * protocol), logs on stderr. The protocol is mcpserver/server.c, the set-up is
 * the one of `serve` (cmd/setup.c).
 *
 * The main thread reads; tools/call requests and batches run on worker
 * threads so that ping and notifications/cancelled are read while code
 * runs. EOF (or SIGINT/SIGTERM) ends the connection: running executions
 * are killed, their answers written if the client still reads, then
 * everything is torn down.
 *
 * Ready at once: an MCP client waits for the answer to initialize at every start, and the
 * set-up (the jail, its self-test, the session pool's zygote, the MCP servers' configuration)
 * takes hundreds of milliseconds. So the set-up runs on a thread of its own while the main
 * thread answers initialize and ping; other requests wait for it on worker threads. Once it
 * is done, the session the first run_python will use is started too (a person sends code a
 * while after connecting). A set-up that fails ends the process with status 1, as before.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/common.h"
#include "cmd/compat.h"
#include "cmd/setup.h"
#include "proto/jsonrpc.h"
#include "mcpclient/registry.h"
#include "mcpserver/server.h"
#include "util/buf.h"
#include "util/fdio.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/jdump.h"

#define MCP_MAX_LINE (16u << 20) /* one message; a longer line is answered with -32700 */

/*
 * The options of mcp besides the common (cmd/common.h) and setup (cmd/setup.h) ones, one row
 * each, generating the enum (MCP_OPT_<ID>), the getopt entries and their lines of --help:
 *   X(ID, "name", has_arg, help)   parsed by hand
 */
#define MCP_OPTIONS(X)                                                                             \
    X(COMPAT, "compat", required_argument,                                                         \
      "  --compat code-execution-mode\n"                                                           \
      "                         the drop-in for mcp-server-code-execution-mode "                   \
      "(docs/MIGRATING.md):\n"                                                                     \
      "                         one tool, run_python(code, servers, timeout), answered as that\n"  \
      "                         bridge does; its MCP_BRIDGE_* variables are read (TIMEOUT,\n"      \
      "                         MAX_TIMEOUT, MEMORY, PIDS, CPUS, STATE_DIR, OUTPUT_MODE,\n"        \
      "                         LOG_LEVEL, RUNTIME_IDLE_TIMEOUT); options given here win\n")

#define MCP_OPT_ENUM_X_(id, name, has_arg, help) MCP_OPT_##id,
#define MCP_OPT_LONG_X_(id, name, has_arg, help) {name, has_arg, NULL, MCP_OPT_##id},
#define MCP_OPT_HELP_X_(id, name, has_arg, help) help
enum { MCP_OPT_FIRST_ = SETUP_OPT_LAST, MCP_OPTIONS(MCP_OPT_ENUM_X_) };

#define MCP_HELP         MCP_OPTIONS(MCP_OPT_HELP_X_)
#define MCP_SESSION_POOL COMMON_STR(SETUP_SESSION_POOL_DEFAULT)

static const char mcp_usage[] =
    "Usage: sandboxd mcp [options]\n"
    "An MCP server on stdin/stdout: tools run_python, list_servers, search_tool_docs and\n"
    "reset_session for MCP clients such as Claude Desktop (docs/MCP.md). Logs go to stderr.\n"
    "\n" SETUP_HELP_POOL "\n" SETUP_HELP_SESSIONS MCP_HELP "  -h, --help\n"
    "\n"
    "Here run_python's sessions come from the session pool (" MCP_SESSION_POOL "); the JIT pool "
    "is off\n"
    "(--pool-size 0) unless asked for, as nothing here runs /execute jobs.\n"
    "\n" COMMON_HELP;

struct mcp_stdio {
    struct mcp_server_conn *conn;
    int out_fd;
    pthread_mutex_t write_lock;
    bool broken; /* stdout is gone */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    unsigned workers;
    atomic_bool ready; /* the set-up is done: requests need not wait for it on a worker */
};

static void mcp_write(struct mcp_stdio *m, json_t *msg)
{
    /* One line: compact JSON never holds a raw newline (strings escape it). */
    char *line = jdump(msg, JSON_COMPACT, NULL);
    if (!line) {
        log_error("mcp: out of memory formatting a message; it is lost");
        return;
    }
    size_t len = strlen(line);
    line[len] = '\n'; /* the terminator becomes the delimiter */
    pthread_mutex_lock(&m->write_lock);
    if (!m->broken) {
        int r = fd_write_all(m->out_fd, line, len + 1, 0);
        if (r < 0) {
            m->broken = true;
            log_errno(LOG_INFO, r, "mcp: stdout is closed; answers are dropped");
        }
    }
    pthread_mutex_unlock(&m->write_lock);
    free(line);
}

static void mcp_notify(void *userdata, json_t *msg)
{
    mcp_write(userdata, msg);
}

struct mcp_job {
    struct mcp_stdio *m;
    json_t *msg;
};

static void *mcp_worker(void *arg)
{
    struct mcp_job *job = arg;
    struct mcp_stdio *m = job->m;
    struct mcp_server_out out = {.userdata = m, .notify = mcp_notify};
    json_t *answer = mcp_server_handle(m->conn, job->msg, &out);
    if (answer)
        mcp_write(m, answer);
    json_decref(answer);
    json_decref(job->msg);
    free(job);
    pthread_mutex_lock(&m->lock);
    m->workers--;
    pthread_cond_broadcast(&m->cond);
    pthread_mutex_unlock(&m->lock);
    return NULL;
}

/* Handle one line: quick messages here, tools/call and batches on a worker. */
static void mcp_line(struct mcp_stdio *m, const char *line, size_t len)
{
    size_t skip = strspn(line, " \t\r");
    if (skip == len)
        return; /* blank lines are no messages */
    json_t *msg = NULL;
    if (jsonrpc_parse(line, len, &msg) < 0) {
        json_t *e = mcp_server_parse_error("the line is not JSON");
        if (e)
            mcp_write(m, e);
        json_decref(e);
        return;
    }
    struct mcp_server_peek peek;
    mcp_server_peek(msg, &peek);
    /* A batch is refused at once unless the connection speaks 2025-03-26. */
    const char *version = mcp_server_conn_version(m->conn);
    bool slow = peek.batch ? peek.has_request && version && strcmp(version, "2025-03-26") == 0
                           : peek.has_request && !peek.initialize &&
                                 strcmp(json_string_value(json_object_get(msg, "method")) ?: "",
                                        "tools/call") == 0;
    /* Until the set-up is done, every valid request but initialize and ping waits for it: on
     * a worker, so that this thread keeps reading. What is refused for its form (an invalid
     * message, a batch of a version without batches) needs no set-up and is answered at once,
     * in the order it came. */
    if (!slow && !atomic_load(&m->ready) && peek.kind == JSONRPC_REQUEST && !peek.initialize &&
        strcmp(json_string_value(json_object_get(msg, "method")) ?: "", "ping") != 0)
        slow = true;
    pthread_mutex_lock(&m->lock);
    bool room = m->workers < MCP_SERVER_MAX_INFLIGHT;
    pthread_mutex_unlock(&m->lock);
    if (slow && !room) {
        /* Refused at once rather than run on the reading thread, which must stay free. */
        json_t *id = json_object_get(msg, "id");
        json_t *e = jsonrpc_error_new(jsonrpc_id_valid(id) ? id : NULL, JSONRPC_SERVER_ERROR,
                                      "Server busy: too many requests are running", NULL);
        if (e)
            mcp_write(m, e);
        json_decref(e);
        json_decref(msg);
        return;
    }
    if (slow) {
        struct mcp_job *job = calloc(1, sizeof(*job));
        pthread_attr_t attr;
        pthread_t t;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (job) {
            *job = (struct mcp_job){.m = m, .msg = msg};
            pthread_mutex_lock(&m->lock);
            m->workers++;
            pthread_mutex_unlock(&m->lock);
            if (pthread_create(&t, &attr, mcp_worker, job) == 0) {
                pthread_attr_destroy(&attr);
                return;
            }
            pthread_mutex_lock(&m->lock);
            m->workers--;
            pthread_mutex_unlock(&m->lock);
            free(job);
        }
        pthread_attr_destroy(&attr);
        log_warn("mcp: cannot start a worker thread; handling the request inline");
    }
    struct mcp_server_out out = {.userdata = m, .notify = mcp_notify};
    json_t *answer = mcp_server_handle(m->conn, msg, &out);
    if (answer)
        mcp_write(m, answer);
    json_decref(answer);
    json_decref(msg);
}

/* Read messages until EOF, a shutdown signal or a failed set-up (failed_fd readable): 0, or
 * -EIO for the last. */
static int mcp_loop(struct mcp_stdio *m, int in_fd, int sig_fd, int failed_fd)
{
    struct buf line;
    buf_init(&line, MCP_MAX_LINE);
    bool discarding = false; /* the rest of an over-long line */
    char chunk[65536];
    int status = 0;
    for (;;) {
        struct pollfd pfd[3] = {{.fd = in_fd, .events = POLLIN},
                                {.fd = sig_fd, .events = POLLIN},
                                {.fd = failed_fd, .events = POLLIN}};
        if (poll(pfd, 3, -1) < 0) {
            if (errno == EINTR)
                continue;
            log_errno(LOG_ERROR, errno, "mcp: poll");
            break;
        }
        if (pfd[2].revents) {
            status = -EIO; /* the set-up logged why */
            break;
        }
        if (pfd[1].revents) {
            struct signalfd_siginfo si;
            if (read(sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
                log_info("mcp: %s received, shutting down",
                         si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM");
            break;
        }
        if (!pfd[0].revents)
            continue;
        ssize_t n = read(in_fd, chunk, sizeof(chunk));
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0) {
            if (n < 0)
                log_errno(LOG_ERROR, errno, "mcp: reading stdin");
            else
                log_info("mcp: stdin closed, shutting down");
            break;
        }
        const char *p = chunk;
        size_t left = (size_t)n;
        while (left) {
            const char *nl = memchr(p, '\n', left);
            size_t take = nl ? (size_t)(nl - p) : left;
            if (!discarding && buf_append(&line, p, take) < 0) {
                discarding = true;
                buf_reset(&line);
                json_t *e = mcp_server_parse_error("the message exceeds 16 MiB");
                if (e)
                    mcp_write(m, e);
                json_decref(e);
            }
            if (nl) {
                if (!discarding)
                    mcp_line(m, line.data ? line.data : "", line.len);
                discarding = false;
                buf_reset(&line);
                take++;
            }
            p += take;
            left -= take;
        }
    }
    buf_free(&line);
    return status;
}

/* What the set-up thread works on; all borrowed from cmd_mcp, which joins it. */
struct mcp_setup {
    struct setup *su;
    const struct setup_opts *o;
    struct common_opts *common;
    struct mcp_server *srv;
    struct mcp_stdio *m;
    int failed_fd; /* an eventfd written when the set-up fails */
};

static void *mcp_setup_thread(void *arg)
{
    struct mcp_setup *b = arg;
    int r = setup_start(b->su, b->o, b->common, "mcp");
    /* A database is reached in the background: requests wait for its first answer as for the
     * rest of the set-up (a run_python sent at once opens its workspace); one that does not come
     * within the store's time leaves them to report STORE_UNAVAILABLE until it does. */
    if (r == 0)
        (void)store_wait(b->su->store, (int)b->o->store_timeout);
    if (r == 0 && (r = mcp_server_start(b->srv, b->su->sessions, b->su->mcp)) < 0)
        log_error("mcp: out of memory");
    if (r < 0) {
        mcp_server_fail(b->srv, r);
        uint64_t one = 1;
        if (write(b->failed_fd, &one, sizeof(one)) != (ssize_t)sizeof(one))
            log_errno(LOG_ERROR, errno, "mcp: cannot end the connection after the failed set-up");
        return NULL;
    }
    atomic_store(&b->m->ready, true);
    log_pack(LOG_INFO, "sandboxd mcp ready on stdio", "{s:b, s:o, s:o?, s:o}", "pool",
             b->su->pool || b->su->session_pool, "mcpServers", mcp_registry_names(b->su->mcp),
             "stateDir", log_str(b->su->state_dir), "stateStore", store_describe(b->su->store));
    (void)mcp_server_conn_prepare(b->m->conn); /* logged; the first run_python starts one */
    return NULL;
}

/* --compat MODE, looked for before the other options are read: the mode changes defaults, and
 * options on the command line must win over them. */
static int mcp_compat_mode(int argc, char **argv, const struct option *opts, bool *ret)
{
    *ret = false;
    int c, saved = opterr;
    opterr = 0;
    optind = 0; /* glibc: start over */
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c != MCP_OPT_COMPAT)
            continue;
        if (strcmp(optarg, COMPAT_CODE_EXECUTION_MODE) != 0) {
            fprintf(stderr, "sandboxd mcp: --compat: the one mode is %s, not '%s'\n",
                    COMPAT_CODE_EXECUTION_MODE, optarg);
            opterr = saved;
            return -1;
        }
        *ret = true;
    }
    opterr = saved;
    optind = 0;
    return 0;
}

static int mcp_parse(int argc, char **argv, struct setup_opts *o, struct common_opts *common,
                     struct compat_env *compat, bool *ret_compat)
{
    static const struct option opts[] = {
        COMMON_LONG_OPTIONS SETUP_LONG_OPTIONS MCP_OPTIONS(MCP_OPT_LONG_X_){"help", no_argument,
                                                                            NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    setup_opts_init(o);
    o->pool_size = 0; /* only sessions run here: the session pool serves them */
    if (mcp_compat_mode(argc, argv, opts, ret_compat) < 0)
        return 2;
    if (*ret_compat && compat_env_apply(environ, o, common, compat) < 0)
        return 2;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        int r = common_opt(common, c, optarg);
        if (r == 0)
            r = setup_opt(o, c, optarg);
        if (r < 0)
            return 2;
        if (r > 0 || c == MCP_OPT_COMPAT)
            continue;
        if (c == 'h') {
            fputs(mcp_usage, stdout);
            return 0;
        }
        fputs(mcp_usage, stderr);
        return 2;
    }
    if (optind != argc) {
        fprintf(stderr, "sandboxd mcp: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    setup_opts_finish(o);
    return -1; /* go on */
}

/* Keep the protocol's stdin and stdout to ourselves: private close-on-exec copies; fd 0 becomes
 * /dev/null and fd 1 a copy of stderr for everyone else. */
static int mcp_take_stdio(int *ret_in, int *ret_out)
{
    int in = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
    int out = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (in < 0 || out < 0 || null < 0 || dup2(null, STDIN_FILENO) < 0 ||
        dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
        int r = log_errno(LOG_ERROR, errno, "mcp: cannot set up stdin/stdout");
        if (in >= 0)
            close(in);
        if (out >= 0)
            close(out);
        if (null >= 0)
            close(null);
        return r;
    }
    close(null);
    *ret_in = in;
    *ret_out = out;
    return 0;
}

int cmd_mcp(int argc, char **argv)
{
    struct setup_opts o;
    struct common_opts common;
    common_opts_init(&common);
    struct compat_env compat = {0};
    bool compat_mode = false;
    int status = mcp_parse(argc, argv, &o, &common, &compat, &compat_mode);
    if (status >= 0) {
        compat_env_done(&compat);
        common_done(&common);
        setup_opts_done(&o);
        return status;
    }
    status = 1;
    int in_fd = -1, out_fd = -1, sig_fd = -1;
    if (mcp_take_stdio(&in_fd, &out_fd) < 0) {
        compat_env_done(&compat);
        common_done(&common);
        setup_opts_done(&o);
        return 1;
    }
    /* Before any thread exists: the shutdown signals arrive on a signalfd. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    sig_fd = signalfd(-1, &sigs, SFD_CLOEXEC);

    struct setup su = {0};
    struct mcp_server *srv = NULL;
    struct mcp_stdio m = {.out_fd = out_fd};
    pthread_mutex_init(&m.write_lock, NULL);
    pthread_mutex_init(&m.lock, NULL);
    pthread_cond_init(&m.cond, NULL);
    atomic_init(&m.ready, false);
    pthread_t setup_thread;
    bool setup_running = false;
    int failed_fd = eventfd(0, EFD_CLOEXEC);
    if (sig_fd < 0 || failed_fd < 0) {
        log_errno(LOG_ERROR, errno, "mcp: %s", sig_fd < 0 ? "signalfd" : "eventfd");
        goto out;
    }
    if (compat_mode) {
        log_info("compat: --compat %s: one tool, run_python(code, servers, timeout), %s answers",
                 COMPAT_CODE_EXECUTION_MODE, compat.toon ? "TOON" : "compact");
        compat_env_log(&compat);
    }
    /* The sessions' time limits as setup_start() will give them (sessions_options). */
    struct mcp_server_options mso = {
        .output_json = strcmp(o.mcp_output, "json") == 0,
        .full_tools = strcmp(o.mcp_tools, "full") == 0,
        .workspace = o.mcp_workspace,
        .profile = o.mcp_profile,
        .page_size = (unsigned)o.mcp_page_size,
        .default_timeout_ms = (int64_t)o.session_timeout,
        .max_timeout_ms = (int64_t)o.session_max_timeout,
        .lookup_timeout_ms = (int64_t)o.tool_timeout,
        .approval_timeout_s = (int64_t)o.approval_timeout,
        .transport = "stdio",
        .compat = compat_mode,
        .compat_toon = compat.toon,
    };
    if (mcp_server_new_pending(&mso, &srv) < 0 || mcp_server_conn_new(srv, &m.conn) < 0) {
        log_error("mcp: out of memory");
        goto out;
    }
    struct mcp_setup bg = {
        .su = &su, .o = &o, .common = &common, .srv = srv, .m = &m, .failed_fd = failed_fd};
    int pr = pthread_create(&setup_thread, NULL, mcp_setup_thread, &bg);
    if (pr != 0) {
        log_errno(LOG_ERROR, pr, "mcp: cannot start the set-up thread");
        goto out;
    }
    setup_running = true;
    status = mcp_loop(&m, in_fd, sig_fd, failed_fd) < 0 ? 1 : 0;
out:
    if (m.conn)
        mcp_server_conn_close(m.conn); /* running executions end now */
    if (setup_running)
        (void)pthread_join(setup_thread, NULL); /* a set-up under way finishes first */
    sessions_shutdown(su.sessions); /* and every other use of a session, tool calls too */
    pthread_mutex_lock(&m.lock);
    while (m.workers)
        pthread_cond_wait(&m.cond, &m.lock);
    pthread_mutex_unlock(&m.lock);
    mcp_server_conn_unref(m.conn);
    mcp_server_free(srv);
    setup_stop(&su);
    pthread_cond_destroy(&m.cond);
    pthread_mutex_destroy(&m.lock);
    pthread_mutex_destroy(&m.write_lock);
    if (sig_fd >= 0)
        close(sig_fd);
    if (failed_fd >= 0)
        close(failed_fd);
    close(in_fd);
    close(out_fd);
    compat_env_done(&compat);
    common_done(&common);
    setup_opts_done(&o);
    return status;
}
