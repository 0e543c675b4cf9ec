// SPDX-License-Identifier: MIT
/*
 * serve — `sandboxd serve`: builds the jail configuration, proves it with the
 * isolation self-test, starts the framework client, the execution manager,
 * the warm pool and the HTTP server, then waits for SIGINT/SIGTERM and
 * tears everything down in reverse order.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "app/app.h"
#include "cmd/cmd.h"
#include "cmd/common.h"
#include "http/server.h"
#include "jail/selftest.h"
#include "mcp/framework.h"
#include "mcp/config.h"
#include "mcp/httpc.h"
#include "mcp/registry.h"
#include "pool/pool.h"
#include "session/session.h"
#include "session/workspace.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/macros.h"

static const char serve_usage[] =
    "Usage: sandboxd serve [options]\n"
    "The HTTP server: POST /execute, GET /healthz, GET /metrics, POST /_framework/load_code.\n"
    "\n"
    "  --port N               listen port (default: $UHLP_SANDBOX_PORT, else 8080)\n"
    "  --host ADDR            listen address (default 127.0.0.1)\n"
    "  --definitions DIR      serve DIR/<appId>/<path> to requests whose mcp_endpoint is "
    "\"local\"\n"
    "  --llm-url URL          OpenAI-compatible endpoint for the local core.llm.generate\n"
    "                         (default: the offline echo model); key from $SANDBOXD_LLM_API_KEY\n"
    "  --llm-model NAME       default model for --llm-url\n"
    "  --pool-size N          warm interpreters kept ready (default 16; 0 disables the pool)\n"
    "  --zygotes N            processes forking warm interpreters (default 2)\n"
    "  --preimport MODS       comma-separated modules every warm interpreter starts with\n"
    "                         (default datetime,math,random)\n"
    "  --max-running N        executions at once (default 4 x cores)\n"
    "  --max-queue N          executions waiting before 503 (default 256)\n"
    "  --default-timeout-ms N timeout when a request names none and has no history (10000)\n"
    "  --max-timeout-ms N     largest timeout a request may ask for (60000)\n"
    "  --default-memory-mb N  memory limit when a request names none (256)\n"
    "  --max-memory-mb N      largest memory limit a request may ask for (2048)\n"
    "  --output-limit-kb N    stdout+stderr kept per execution (1024)\n"
    "  --max-procs N          processes/threads per sandbox (64)\n"
    "  --max-body-kb N        largest request body (10240)\n"
    "  --framework-timeout-ms N  timeout of framework MCP calls (10000)\n"
    "\n"
    "Sessions and MCP servers:\n"
    "  --mcp-config FILE      MCP servers, Claude Desktop format ({\"mcpServers\": {...}})\n"
    "  --no-mcp-discovery     do not read ./.mcp, ~/.config/mcp/servers, ~/.claude.json,\n"
    "                         ~/.cursor/mcp.json, ./.vscode/mcp.json\n"
    "  --state-dir DIR        workspaces (memories, saved tools, files); default\n"
    "                         $XDG_STATE_HOME/sandboxd or ~/.local/state/sandboxd\n"
    "  --max-sessions N       live sessions at most (64); more is 503\n"
    "  --session-idle-s N     idle sessions are ended after N s (600; a session may ask for\n"
    "                         up to --session-max-idle-s, 86400)\n"
    "  --session-timeout-ms N default / --session-max-timeout-ms N largest time limit of one\n"
    "                         session execution (30000 / 600000)\n"
    "  --session-memory-mb N  memory of a session (512; at most --max-memory-mb)\n"
    "  --tool-timeout-ms N    one MCP tool call made from a session (60000)\n"
    "  -h, --help\n"
    "\n" COMMON_HELP;

enum {
    SERVE_PORT = COMMON_OPT_LAST + 1,
    SERVE_HOST,
    SERVE_DEFINITIONS,
    SERVE_LLM_URL,
    SERVE_LLM_MODEL,
    SERVE_POOL,
    SERVE_ZYGOTES,
    SERVE_MAX_RUNNING,
    SERVE_MAX_QUEUE,
    SERVE_DEF_TIMEOUT,
    SERVE_MAX_TIMEOUT,
    SERVE_DEF_MEMORY,
    SERVE_MAX_MEMORY,
    SERVE_OUTPUT,
    SERVE_PROCS,
    SERVE_MAX_BODY,
    SERVE_FW_TIMEOUT,
    SERVE_PREIMPORT,
    SERVE_MCP_CONFIG,
    SERVE_NO_DISCOVERY,
    SERVE_STATE_DIR,
    SERVE_MAX_SESSIONS,
    SERVE_SESSION_IDLE,
    SERVE_SESSION_MAX_IDLE,
    SERVE_SESSION_TIMEOUT,
    SERVE_SESSION_MAX_TIMEOUT,
    SERVE_SESSION_MEMORY,
    SERVE_TOOL_TIMEOUT,
};

struct serve_opts {
    uint64_t port;
    const char *host;
    const char *definitions;
    const char *llm_url;
    const char *llm_model;
    uint64_t pool_size, zygotes, max_running, max_queue;
    uint64_t def_timeout, max_timeout, def_memory, max_memory;
    uint64_t output_kb, procs, max_body_kb, fw_timeout;
    const char *preimport;
    const char *mcp_config;
    const char *state_dir;
    bool no_discovery;
    uint64_t max_sessions, session_idle, session_max_idle, session_timeout, session_max_timeout;
    uint64_t session_memory, tool_timeout;
    bool def_timeout_set, def_memory_set;
};

static int serve_parse(int argc, char **argv, struct serve_opts *o, struct common_opts *common)
{
    static const struct option opts[] = {
        COMMON_LONG_OPTIONS,
        {"port", required_argument, NULL, SERVE_PORT},
        {"host", required_argument, NULL, SERVE_HOST},
        {"definitions", required_argument, NULL, SERVE_DEFINITIONS},
        {"llm-url", required_argument, NULL, SERVE_LLM_URL},
        {"llm-model", required_argument, NULL, SERVE_LLM_MODEL},
        {"pool-size", required_argument, NULL, SERVE_POOL},
        {"zygotes", required_argument, NULL, SERVE_ZYGOTES},
        {"max-running", required_argument, NULL, SERVE_MAX_RUNNING},
        {"max-queue", required_argument, NULL, SERVE_MAX_QUEUE},
        {"default-timeout-ms", required_argument, NULL, SERVE_DEF_TIMEOUT},
        {"max-timeout-ms", required_argument, NULL, SERVE_MAX_TIMEOUT},
        {"default-memory-mb", required_argument, NULL, SERVE_DEF_MEMORY},
        {"max-memory-mb", required_argument, NULL, SERVE_MAX_MEMORY},
        {"output-limit-kb", required_argument, NULL, SERVE_OUTPUT},
        {"max-procs", required_argument, NULL, SERVE_PROCS},
        {"max-body-kb", required_argument, NULL, SERVE_MAX_BODY},
        {"framework-timeout-ms", required_argument, NULL, SERVE_FW_TIMEOUT},
        {"preimport", required_argument, NULL, SERVE_PREIMPORT},
        {"mcp-config", required_argument, NULL, SERVE_MCP_CONFIG},
        {"no-mcp-discovery", no_argument, NULL, SERVE_NO_DISCOVERY},
        {"state-dir", required_argument, NULL, SERVE_STATE_DIR},
        {"max-sessions", required_argument, NULL, SERVE_MAX_SESSIONS},
        {"session-idle-s", required_argument, NULL, SERVE_SESSION_IDLE},
        {"session-max-idle-s", required_argument, NULL, SERVE_SESSION_MAX_IDLE},
        {"session-timeout-ms", required_argument, NULL, SERVE_SESSION_TIMEOUT},
        {"session-max-timeout-ms", required_argument, NULL, SERVE_SESSION_MAX_TIMEOUT},
        {"session-memory-mb", required_argument, NULL, SERVE_SESSION_MEMORY},
        {"tool-timeout-ms", required_argument, NULL, SERVE_TOOL_TIMEOUT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    *o = (struct serve_opts){
        .port = 8080,
        .host = "127.0.0.1",
        .pool_size = 16,
        .zygotes = 2,
        .max_running = (uint64_t)(ncpu > 0 ? ncpu : 1) * 4,
        .max_queue = 256,
        .def_timeout = 10000,
        .max_timeout = 60000,
        .def_memory = 256,
        .max_memory = 2048,
        .output_kb = 1024,
        .procs = 64,
        .max_body_kb = 10240,
        .fw_timeout = 10000,
        .preimport = "datetime,math,random",
        .max_sessions = 64,
        .session_idle = 600,
        .session_max_idle = 86400,
        .session_timeout = 30000,
        .session_max_timeout = 600000,
        .session_memory = 512,
        .tool_timeout = 60000,
    };
    const char *env_port = getenv("UHLP_SANDBOX_PORT");
    if (env_port && common_parse_u64("port (UHLP_SANDBOX_PORT)", env_port, 0, 65535, &o->port) < 0)
        return 2;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        int r = common_opt(common, c, optarg);
        if (r < 0)
            return 2;
        if (r > 0)
            continue;
        struct {
            int opt;
            const char *name;
            uint64_t min, max, *dst;
        } nums[] = {
            {SERVE_PORT, "port", 0, 65535, &o->port},
            {SERVE_POOL, "pool-size", 0, 4096, &o->pool_size},
            {SERVE_ZYGOTES, "zygotes", 1, 64, &o->zygotes},
            {SERVE_MAX_RUNNING, "max-running", 1, 65536, &o->max_running},
            {SERVE_MAX_QUEUE, "max-queue", 0, 1 << 20, &o->max_queue},
            {SERVE_DEF_TIMEOUT, "default-timeout-ms", 1, 86400000, &o->def_timeout},
            {SERVE_MAX_TIMEOUT, "max-timeout-ms", 1, 86400000, &o->max_timeout},
            {SERVE_DEF_MEMORY, "default-memory-mb", 16, 1 << 20, &o->def_memory},
            {SERVE_MAX_MEMORY, "max-memory-mb", 16, 1 << 20, &o->max_memory},
            {SERVE_OUTPUT, "output-limit-kb", 1, 1 << 20, &o->output_kb},
            {SERVE_PROCS, "max-procs", 1, 1 << 20, &o->procs},
            {SERVE_MAX_BODY, "max-body-kb", 1, 1 << 20, &o->max_body_kb},
            {SERVE_FW_TIMEOUT, "framework-timeout-ms", 1, 3600000, &o->fw_timeout},
            {SERVE_MAX_SESSIONS, "max-sessions", 0, 1 << 20, &o->max_sessions},
            {SERVE_SESSION_IDLE, "session-idle-s", 1, 86400 * 365, &o->session_idle},
            {SERVE_SESSION_MAX_IDLE, "session-max-idle-s", 1, 86400 * 365, &o->session_max_idle},
            {SERVE_SESSION_TIMEOUT, "session-timeout-ms", 1, 86400000, &o->session_timeout},
            {SERVE_SESSION_MAX_TIMEOUT, "session-max-timeout-ms", 1, 86400000,
             &o->session_max_timeout},
            {SERVE_SESSION_MEMORY, "session-memory-mb", 16, 1 << 20, &o->session_memory},
            {SERVE_TOOL_TIMEOUT, "tool-timeout-ms", 1, 86400000, &o->tool_timeout},
        };
        bool done = false;
        for (size_t i = 0; i < ARRAY_SIZE(nums) && !done; i++)
            if (nums[i].opt == c) {
                if (common_parse_u64(nums[i].name, optarg, nums[i].min, nums[i].max, nums[i].dst) <
                    0)
                    return 2;
                done = true;
            }
        if (done) {
            o->def_timeout_set |= c == SERVE_DEF_TIMEOUT;
            o->def_memory_set |= c == SERVE_DEF_MEMORY;
            continue;
        }
        switch (c) {
        case SERVE_HOST:
            o->host = optarg;
            break;
        case SERVE_DEFINITIONS:
            o->definitions = optarg;
            break;
        case SERVE_LLM_URL:
            o->llm_url = optarg;
            break;
        case SERVE_LLM_MODEL:
            o->llm_model = optarg;
            break;
        case SERVE_PREIMPORT:
            o->preimport = optarg;
            break;
        case SERVE_MCP_CONFIG:
            o->mcp_config = optarg;
            break;
        case SERVE_NO_DISCOVERY:
            o->no_discovery = true;
            break;
        case SERVE_STATE_DIR:
            o->state_dir = optarg;
            break;
        case 'h':
            fputs(serve_usage, stdout);
            return 0;
        default:
            fputs(serve_usage, stderr);
            return 2;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "sandboxd serve: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    /* A maximum below the built-in default lowers the default; explicit values that
     * contradict each other are an error. */
    if (o->def_timeout > o->max_timeout) {
        if (o->def_timeout_set) {
            fprintf(stderr, "sandboxd serve: --default-timeout-ms exceeds --max-timeout-ms\n");
            return 2;
        }
        o->def_timeout = o->max_timeout;
    }
    if (o->def_memory > o->max_memory) {
        if (o->def_memory_set) {
            fprintf(stderr, "sandboxd serve: --default-memory-mb exceeds --max-memory-mb\n");
            return 2;
        }
        o->def_memory = o->max_memory;
    }
    if (o->session_idle > o->session_max_idle)
        o->session_idle = o->session_max_idle;
    if (o->session_timeout > o->session_max_timeout)
        o->session_timeout = o->session_max_timeout;
    if (o->session_memory > o->max_memory)
        o->session_memory = o->max_memory;
    return -1; /* go on */
}

/* $XDG_STATE_HOME/sandboxd, ~/.local/state/sandboxd, else /var/lib/sandboxd (root) or
 * /tmp/sandboxd-<uid>. */
static char *serve_state_dir(const char *opt)
{
    char *dir = NULL;
    const char *xdg = getenv("XDG_STATE_HOME");
    const char *home = getenv("HOME");
    int r;
    if (opt)
        r = asprintf(&dir, "%s", opt);
    else if (xdg && *xdg == '/')
        r = asprintf(&dir, "%s/sandboxd", xdg);
    else if (home && *home == '/' && access(home, W_OK) == 0)
        r = asprintf(&dir, "%s/.local/state/sandboxd", home);
    else if (geteuid() == 0)
        r = asprintf(&dir, "/var/lib/sandboxd");
    else
        r = asprintf(&dir, "/tmp/sandboxd-%u", (unsigned)geteuid());
    return r < 0 ? NULL : dir;
}

int cmd_serve(int argc, char **argv)
{
    struct serve_opts o;
    struct common_opts common = {0};
    int status = serve_parse(argc, argv, &o, &common);
    if (status >= 0) {
        common_done(&common);
        return status;
    }
    status = 1;
    /* Block the shutdown signals before any thread exists; the main thread waits for them. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);

    struct jail_options jopt;
    struct jail_config jail;
    struct framework *fw = NULL;
    struct defs *defs = NULL;
    struct manager *mgr = NULL;
    struct metrics *metrics = NULL;
    struct pool *pool = NULL;
    struct http_server *http = NULL;
    struct mcp_config mcfg = {0};
    struct mcp_registry *mcp = NULL;
    struct workspace_store *wstore = NULL;
    struct sessions *sessions = NULL;
    char *state_dir = NULL;
    char cwd[4096];
    json_t *facts = NULL;
    bool jail_ok = false, httpc_ok = false;
    struct app app = {0};
    if (common_resolve(&common, &jopt) < 0 || jail_config_init(&jail, &jopt) < 0)
        goto out;
    jail_ok = true;
    if (jail_selftest(&jail, &facts) < 0) {
        log_error("serve: the sandbox does not work on this machine; see the messages above "
                  "and docs/SECURITY.md");
        goto out;
    }
    if (httpc_global_init() < 0) {
        log_error("serve: libcurl initialisation failed");
        goto out;
    }
    httpc_ok = true;
    const char *key = getenv("SANDBOXD_LLM_API_KEY");
    struct framework_options fo = {
        .definitions_dir = o.definitions,
        .llm_url = o.llm_url,
        .llm_model = o.llm_model,
        .llm_api_key = key,
        .timeout_ms = (int64_t)o.fw_timeout,
        .llm_timeout_ms = 120000,
        .max_response = 32u << 20,
    };
    struct defs_options dopt = {
        .max_entries = 4096, .max_bytes = 256u << 20, .max_file = 16u << 20};
    struct manager_options mo = {
        .max_running = (unsigned)o.max_running,
        .max_queued = (unsigned)o.max_queue,
        .default_timeout_ms = (int64_t)o.def_timeout,
        .max_timeout_ms = (int64_t)o.max_timeout,
        .adaptive_floor_ms = 1000,
    };
    if (framework_new(&fo, &fw) < 0 || defs_new(fw, &dopt, &defs) < 0 ||
        manager_new(&mo, &mgr) < 0 || metrics_new(&metrics) < 0)
        goto out;
    if (o.pool_size) {
        if (!jopt.cell_lib) {
            log_error("serve: libsbxcell.so not found next to the binary (use --cell-lib, or "
                      "--pool-size 0 to run without the warm pool)");
            goto out;
        }
        struct pool_options po = {
            .size = (unsigned)o.pool_size,
            .zygotes = (unsigned)o.zygotes,
            .max_frame = 64u << 20,
            .nproc = o.procs,
            .nofile = 256,
            .preimport = o.preimport,
        };
        if (pool_new(&jail, &po, &pool) < 0) {
            log_error("serve: the warm pool could not start (use --pool-size 0 to run without)");
            goto out;
        }
    }
    if (mcp_config_load(o.mcp_config, !o.no_discovery, getcwd(cwd, sizeof(cwd)), getenv("HOME"),
                        &mcfg) < 0 ||
        mcp_registry_new(&mcfg, &mcp) < 0)
        goto out;
    state_dir = serve_state_dir(o.state_dir);
    struct workspace_limits wl = {
        .max_value = 1u << 20, .max_bytes = 64u << 20, .max_entries = 10000, .max_file = 16u << 20};
    if (!state_dir || workspace_store_new(state_dir, &wl, &wstore) < 0)
        goto out;
    struct sessions_options so = {
        .max_sessions = (unsigned)o.max_sessions,
        .default_idle_s = (int64_t)o.session_idle,
        .max_idle_s = (int64_t)o.session_max_idle,
        .default_timeout_ms = (int64_t)o.session_timeout,
        .max_timeout_ms = (int64_t)o.session_max_timeout,
        .default_memory_mb = o.session_memory,
        .max_memory_mb = o.max_memory,
        .nproc = o.procs,
        .output_limit = (size_t)o.output_kb << 10,
        .tool_timeout_ms = (int64_t)o.tool_timeout,
        .interrupt_grace_ms = 2000,
    };
    if (sessions_new(&so, &jail, pool, mcp, wstore, metrics, &sessions) < 0)
        goto out;
    json_t *isolation = jail_describe(&jail);
    json_object_set_new(isolation, "selftest", facts);
    facts = NULL;
    app = (struct app){
        .opt =
            {
                .default_timeout_ms = (int64_t)o.def_timeout,
                .max_timeout_ms = (int64_t)o.max_timeout,
                .default_memory_mb = o.def_memory,
                .max_memory_mb = o.max_memory,
                .output_limit = (size_t)o.output_kb << 10,
                .max_frame = 64u << 20,
                .nproc = o.procs,
                .nofile = 256,
            },
        .jail = &jail,
        .fw = fw,
        .defs = defs,
        .mgr = mgr,
        .pool = pool,
        .metrics = metrics,
        .isolation = isolation,
        .started_us = clock_mono_us(),
    };
    struct api api = {.app = &app, .sessions = sessions};
    struct http_server_options ho = {
        .host = o.host,
        .port = (uint16_t)o.port,
        .max_body = (size_t)o.max_body_kb << 10,
        .max_connections = 1024,
        .idle_timeout_s = 120,
    };
    if (http_server_start(&ho, api_route, &api, &http) < 0)
        goto out;
    log_fields(LOG_INFO, "sandboxd listening",
               json_pack("{s:s, s:i, s:O, s:b, s:I, s:o, s:s}", "host", o.host, "port",
                         (int)http_server_port(http), "isolation", app.isolation, "pool",
                         pool != NULL, "maxRunning", (json_int_t)o.max_running, "mcpServers",
                         mcp_registry_names(mcp), "stateDir", state_dir));
    int sig = 0;
    while (sigwait(&sigs, &sig) != 0)
        ;
    log_info("serve: %s received, shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
    status = 0;
out:
    http_server_stop(http);
    sessions_free(sessions);
    pool_free(pool);
    workspace_store_free(wstore);
    mcp_registry_free(mcp);
    mcp_config_done(&mcfg);
    free(state_dir);
    metrics_free(metrics);
    manager_free(mgr);
    defs_free(defs);
    framework_free(fw);
    json_decref(app.isolation);
    json_decref(facts);
    if (httpc_ok)
        httpc_global_done();
    if (jail_ok)
        jail_config_done(&jail);
    common_done(&common);
    return status;
}
