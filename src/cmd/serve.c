// SPDX-License-Identifier: MIT
/*
 * serve — `sandboxd serve`: builds what every subcommand shares (cmd/setup.c:
 * the jail proven by the self-test, the warm pool, MCP servers, sessions),
 * then the framework client, the execution manager, the MCP server behind
 * /mcp and the HTTP server; waits for SIGINT/SIGTERM and tears everything
 * down in reverse order.
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
#include "api/mcp_http.h"
#include "app/app.h"
#include "cmd/cmd.h"
#include "cmd/common.h"
#include "cmd/setup.h"
#include "flow/cache.h"
#include "http/server.h"
#include "mcp/framework.h"
#include "mcp/registry.h"
#include "mcp/server.h"
#include "pool/pool.h"
#include "session/session.h"
#include "util/clock.h"
#include "util/instance.h"
#include "util/log.h"
#include "util/macros.h"

static const char serve_usage[] =
    "Usage: sandboxd serve [options]\n"
    "The HTTP server: POST /execute, GET /healthz, GET /metrics, POST /_framework/load_code,\n"
    "/v1/sessions, and the MCP endpoint /mcp (docs/MCP.md).\n"
    "\n"
    "  --port N               listen port (default: $UHLP_SANDBOX_PORT, else 8080)\n"
    "  --host ADDR            listen address (default 127.0.0.1)\n"
    "  --definitions DIR      serve DIR/<appId>/<path> to requests whose mcp_endpoint is "
    "\"local\"\n"
    "  --llm-url URL          OpenAI-compatible endpoint for the local core.llm.generate\n"
    "                         (default: the offline echo model); key from $SANDBOXD_LLM_API_KEY\n"
    "  --llm-model NAME       default model for --llm-url\n"
    "  --llm-timeout-ms N     one core.llm.generate call of an LLM handler or step (60000)\n"
    "  --max-workflow-steps N steps a workflow execution may run when the workflow sets\n"
    "                         no maxSteps of its own (100)\n"
    "  --template-pool-size N template interpreters kept ready, with jinja2 and\n"
    "                         jsonschema imported, by a zygote of their own (2; 0: templates\n"
    "                         take interpreters from the main pool and import on "
    "start)\n" SETUP_HELP_POOL "  --max-running N        executions at once (default 4 x cores)\n"
    "  --max-queue N          executions waiting before 503 (default 256)\n"
    "  --default-timeout-ms N timeout when a request names none and has no history (10000)\n"
    "  --max-timeout-ms N     largest timeout a request may ask for (60000)\n"
    "  --default-memory-mb N  memory limit when a request names none (256)\n"
    "  --max-body-kb N        largest request body (10240)\n"
    "  --framework-timeout-ms N  timeout of framework MCP calls (10000)\n"
    "\n" SETUP_HELP_SESSIONS
    "  --mcp-max-sessions N   MCP sessions of /mcp at most (64); idle ones end after\n"
    "                         --session-idle-s\n"
    "  --mcp-allowed-host H   also accept Host H (a name, or name:port) on /mcp (repeatable;\n"
    "                         localhost, 127.0.0.1 and [::1] on any port always are)\n"
    "  --mcp-allowed-origin O also accept Origin O, e.g. https://app.example (repeatable)\n"
    "  --mcp-token TOKEN      require Authorization: Bearer TOKEN on /mcp (default:\n"
    "                         $SANDBOXD_MCP_TOKEN; none when neither is set)\n"
    "  --instance-id ID       this instance's name behind a load balancer (default: the host\n"
    "                         name): session ids begin with \"ID.\", responses carry\n"
    "                         X-Sandboxd-Instance; 1 to 31 letters, digits and '-'\n"
    "  -h, --help\n"
    "\n" COMMON_HELP;

enum {
    SERVE_PORT = COMMON_OPT_LAST + 1,
    SERVE_HOST,
    SERVE_DEFINITIONS,
    SERVE_LLM_URL,
    SERVE_LLM_MODEL,
    SERVE_MAX_RUNNING,
    SERVE_MAX_QUEUE,
    SERVE_DEF_TIMEOUT,
    SERVE_MAX_TIMEOUT,
    SERVE_DEF_MEMORY,
    SERVE_MAX_BODY,
    SERVE_FW_TIMEOUT,
    SERVE_MCP_MAX_SESSIONS,
    SERVE_MCP_ALLOWED_HOST,
    SERVE_MCP_ALLOWED_ORIGIN,
    SERVE_MCP_TOKEN,
    SERVE_LLM_TIMEOUT,
    SERVE_MAX_WORKFLOW_STEPS,
    SERVE_TEMPLATE_POOL,
    SERVE_INSTANCE_ID,
};

#define SERVE_MAX_ALLOWED 32 /* --mcp-allowed-host / --mcp-allowed-origin entries */

struct serve_opts {
    uint64_t port;
    const char *host;
    const char *definitions;
    const char *llm_url;
    const char *llm_model;
    uint64_t max_running, max_queue;
    uint64_t def_timeout, max_timeout, def_memory;
    uint64_t max_body_kb, fw_timeout;
    uint64_t llm_timeout, max_workflow_steps, template_pool_size;
    bool def_timeout_set, def_memory_set;
    uint64_t mcp_max_sessions;
    const char *mcp_hosts[SERVE_MAX_ALLOWED + 1];
    const char *mcp_origins[SERVE_MAX_ALLOWED + 1];
    size_t n_mcp_hosts, n_mcp_origins;
    const char *mcp_token;
    const char *instance_id;
    char instance_buf[INSTANCE_ID_MAX + 1]; /* the default, made of the host name */
    struct setup_opts setup;
};

static int serve_add_allowed(const char **list, size_t *n, const char *what, const char *value)
{
    if (*n >= SERVE_MAX_ALLOWED) {
        fprintf(stderr, "sandboxd serve: at most %d --%s options\n", SERVE_MAX_ALLOWED, what);
        return -1;
    }
    if (!*value || strlen(value) > 255) {
        fprintf(stderr, "sandboxd serve: --%s: expected 1 to 255 characters\n", what);
        return -1;
    }
    list[(*n)++] = value;
    list[*n] = NULL;
    return 0;
}

static int serve_parse(int argc, char **argv, struct serve_opts *o, struct common_opts *common)
{
    static const struct option opts[] = {
        COMMON_LONG_OPTIONS,
        SETUP_LONG_OPTIONS,
        {"port", required_argument, NULL, SERVE_PORT},
        {"host", required_argument, NULL, SERVE_HOST},
        {"definitions", required_argument, NULL, SERVE_DEFINITIONS},
        {"llm-url", required_argument, NULL, SERVE_LLM_URL},
        {"llm-model", required_argument, NULL, SERVE_LLM_MODEL},
        {"llm-timeout-ms", required_argument, NULL, SERVE_LLM_TIMEOUT},
        {"max-workflow-steps", required_argument, NULL, SERVE_MAX_WORKFLOW_STEPS},
        {"template-pool-size", required_argument, NULL, SERVE_TEMPLATE_POOL},
        {"max-running", required_argument, NULL, SERVE_MAX_RUNNING},
        {"max-queue", required_argument, NULL, SERVE_MAX_QUEUE},
        {"default-timeout-ms", required_argument, NULL, SERVE_DEF_TIMEOUT},
        {"max-timeout-ms", required_argument, NULL, SERVE_MAX_TIMEOUT},
        {"default-memory-mb", required_argument, NULL, SERVE_DEF_MEMORY},
        {"max-body-kb", required_argument, NULL, SERVE_MAX_BODY},
        {"framework-timeout-ms", required_argument, NULL, SERVE_FW_TIMEOUT},
        {"mcp-max-sessions", required_argument, NULL, SERVE_MCP_MAX_SESSIONS},
        {"mcp-allowed-host", required_argument, NULL, SERVE_MCP_ALLOWED_HOST},
        {"mcp-allowed-origin", required_argument, NULL, SERVE_MCP_ALLOWED_ORIGIN},
        {"mcp-token", required_argument, NULL, SERVE_MCP_TOKEN},
        {"instance-id", required_argument, NULL, SERVE_INSTANCE_ID},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    *o = (struct serve_opts){
        .port = 8080,
        .host = "127.0.0.1",
        .max_running = (uint64_t)(ncpu > 0 ? ncpu : 1) * 4,
        .max_queue = 256,
        .def_timeout = 10000,
        .max_timeout = 60000,
        .def_memory = 256,
        .max_body_kb = 10240,
        .fw_timeout = 10000,
        .llm_timeout = 60000,
        .max_workflow_steps = 100,
        .template_pool_size = 2,
        .mcp_max_sessions = 64,
        .mcp_token = getenv("SANDBOXD_MCP_TOKEN"),
    };
    setup_opts_init(&o->setup);
    const char *env_port = getenv("UHLP_SANDBOX_PORT");
    if (env_port && common_parse_u64("port (UHLP_SANDBOX_PORT)", env_port, 0, 65535, &o->port) < 0)
        return 2;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        int r = common_opt(common, c, optarg);
        if (r == 0)
            r = setup_opt(&o->setup, c, optarg);
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
            {SERVE_MAX_RUNNING, "max-running", 1, 65536, &o->max_running},
            {SERVE_MAX_QUEUE, "max-queue", 0, 1 << 20, &o->max_queue},
            {SERVE_DEF_TIMEOUT, "default-timeout-ms", 1, 86400000, &o->def_timeout},
            {SERVE_MAX_TIMEOUT, "max-timeout-ms", 1, 86400000, &o->max_timeout},
            {SERVE_DEF_MEMORY, "default-memory-mb", 16, 1 << 20, &o->def_memory},
            {SERVE_MAX_BODY, "max-body-kb", 1, 1 << 20, &o->max_body_kb},
            {SERVE_FW_TIMEOUT, "framework-timeout-ms", 1, 3600000, &o->fw_timeout},
            {SERVE_LLM_TIMEOUT, "llm-timeout-ms", 1, 86400000, &o->llm_timeout},
            {SERVE_MAX_WORKFLOW_STEPS, "max-workflow-steps", 1, 100000, &o->max_workflow_steps},
            {SERVE_TEMPLATE_POOL, "template-pool-size", 0, 1024, &o->template_pool_size},
            {SERVE_MCP_MAX_SESSIONS, "mcp-max-sessions", 1, 1 << 16, &o->mcp_max_sessions},
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
        case SERVE_MCP_ALLOWED_HOST:
            if (serve_add_allowed(o->mcp_hosts, &o->n_mcp_hosts, "mcp-allowed-host", optarg) < 0)
                return 2;
            break;
        case SERVE_MCP_ALLOWED_ORIGIN:
            if (serve_add_allowed(o->mcp_origins, &o->n_mcp_origins, "mcp-allowed-origin", optarg) <
                0)
                return 2;
            break;
        case SERVE_MCP_TOKEN:
            o->mcp_token = optarg;
            break;
        case SERVE_INSTANCE_ID: {
            const char *why = instance_id_check(optarg);
            if (why) {
                fprintf(stderr, "sandboxd serve: --instance-id '%s': %s\n", optarg, why);
                return 2;
            }
            o->instance_id = optarg;
            break;
        }
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
    if (o->mcp_token && (!*o->mcp_token || strlen(o->mcp_token) > 4096)) {
        fprintf(stderr, "sandboxd serve: the MCP token must have 1 to 4096 characters\n");
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
    if (o->def_memory > o->setup.max_memory) {
        if (o->def_memory_set) {
            fprintf(stderr, "sandboxd serve: --default-memory-mb exceeds --max-memory-mb\n");
            return 2;
        }
        o->def_memory = o->setup.max_memory;
    }
    if (!o->instance_id) {
        int r = instance_id_default(o->instance_buf);
        if (r < 0) {
            fprintf(stderr, "sandboxd serve: cannot read the host name (%s); pass --instance-id\n",
                    strerror(-r));
            return 2;
        }
        o->instance_id = o->instance_buf;
    }
    o->setup.session_id_prefix = o->instance_id;
    setup_opts_finish(&o->setup);
    return -1; /* go on */
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

    struct setup su = {0};
    struct framework *fw = NULL;
    struct defs *defs = NULL;
    struct flow_cache *wf_cache = NULL;
    struct manager *mgr = NULL;
    struct http_server *http = NULL;
    struct mcp_server *mcps = NULL;
    struct mcp_http *mcph = NULL;
    struct pool *template_pool = NULL;
    struct app app = {0};
    if (setup_start(&su, &o.setup, &common, "serve") < 0)
        goto out;
    /* Templates import jinja2 and jsonschema (~100 ms): a pool of its own has them
     * imported, as the sessions' pool has asyncio. */
    if (o.template_pool_size &&
        setup_pool(&su, &o.setup, (unsigned)o.template_pool_size, 1,
                   "jinja2,jinja2.sandbox,jsonschema,sandboxd_runtime.template",
                   &template_pool) < 0) {
        log_error("serve: the template pool could not start (use --template-pool-size 0 to "
                  "run without)");
        goto out;
    }
    const char *key = getenv("SANDBOXD_LLM_API_KEY");
    struct framework_options fo = {
        .definitions_dir = o.definitions,
        .llm_url = o.llm_url,
        .llm_model = o.llm_model,
        .llm_api_key = key,
        .timeout_ms = (int64_t)o.fw_timeout,
        .llm_timeout_ms = (int64_t)o.llm_timeout,
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
    if (framework_new(&fo, &fw) < 0 || defs_new(fw, &dopt, &defs) < 0 || manager_new(&mo, &mgr) < 0)
        goto out;
    if (flow_cache_new(256, 64u << 20, &wf_cache) < 0)
        goto out;
    struct mcp_server_options mso = {
        .output_json = strcmp(o.setup.mcp_output, "json") == 0,
        .workspace = o.setup.mcp_workspace,
        .page_size = (unsigned)o.setup.mcp_page_size,
        .default_timeout_ms = su.so.default_timeout_ms,
        .max_timeout_ms = su.so.max_timeout_ms,
        .lookup_timeout_ms = su.so.tool_timeout_ms,
        .transport = "streamable-http",
    };
    if (mcp_server_new(&mso, su.sessions, su.mcp, &mcps) < 0)
        goto out;
    struct mcp_http_options mho = {
        .max_sessions = (unsigned)o.mcp_max_sessions,
        .idle_s = (int64_t)o.setup.session_idle,
        .bind_host = o.host,
        .allowed_hosts = o.mcp_hosts,
        .allowed_origins = o.mcp_origins,
        .token = o.mcp_token,
        .id_prefix = o.instance_id,
    };
    if (mcp_http_new(&mho, mcps, &mcph) < 0)
        goto out;
    app = (struct app){
        .opt =
            {
                .default_timeout_ms = (int64_t)o.def_timeout,
                .max_timeout_ms = (int64_t)o.max_timeout,
                .default_memory_mb = o.def_memory,
                .max_memory_mb = o.setup.max_memory,
                .output_limit = (size_t)o.setup.output_kb << 10,
                .max_frame = 64u << 20,
                .nproc = o.setup.procs,
                .nofile = 256,
                .llm_timeout_ms = (int64_t)o.llm_timeout,
                .max_workflow_steps = (unsigned)o.max_workflow_steps,
            },
        .jail = &su.jail,
        .fw = fw,
        .defs = defs,
        .mgr = mgr,
        .pool = su.pool,
        .session_pool = su.session_pool,
        .template_pool = template_pool,
        .metrics = su.metrics,
        .wf_cache = wf_cache,
        .isolation = su.isolation,
        .started_us = clock_mono_us(),
        .egress = su.egress,
    };
    struct api api = {.app = &app, .sessions = su.sessions, .mcp = mcph};
    struct http_server_options ho = {
        .host = o.host,
        .port = (uint16_t)o.port,
        .max_body = (size_t)o.max_body_kb << 10,
        .max_connections = 1024,
        .idle_timeout_s = 120,
        .instance_id = o.instance_id,
    };
    if (http_server_start(&ho, api_route, &api, &http) < 0)
        goto out;
    log_fields(LOG_INFO, "sandboxd listening",
               json_pack("{s:s, s:i, s:O, s:b, s:I, s:o, s:s, s:b, s:s}", "host", o.host, "port",
                         (int)http_server_port(http), "isolation", app.isolation, "pool",
                         su.pool != NULL, "maxRunning", (json_int_t)o.max_running, "mcpServers",
                         mcp_registry_names(su.mcp), "stateDir", su.state_dir, "mcpToken",
                         o.mcp_token != NULL, "instance", o.instance_id));
    int sig = 0;
    while (sigwait(&sigs, &sig) != 0)
        ;
    log_info("serve: %s received, shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
    status = 0;
out:
    /* MCP sessions first: that ends their running executions, so the HTTP threads waiting
     * for them return and the server can stop. */
    mcp_http_shutdown(mcph);
    http_server_stop(http);
    mcp_http_free(mcph);
    mcp_server_free(mcps);
    manager_free(mgr);
    defs_free(defs);
    flow_cache_free(wf_cache);
    framework_free(fw);
    pool_free(template_pool);
    setup_stop(&su);
    common_done(&common);
    return status;
}
