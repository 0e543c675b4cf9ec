// SPDX-License-Identifier: MIT
/*
 * serve — `sandboxd serve`: builds what every subcommand shares (cmd/setup.c:
 * the jail proven by the self-test, the warm pool, MCP servers, sessions),
 * then the framework client, the execution manager, the MCP server behind
 * /mcp and the HTTP server; waits for SIGINT/SIGTERM, drains (no new work,
 * what runs finishes until --drain-timeout-s or a second signal), ends what
 * is left, and tears everything down in reverse order once no thread of the
 * HTTP server uses it any more.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "e2b/e2b.h"
#include "api/mcp_http.h"
#include "api/policy.h"
#include "tenant/tenant.h"
#include "handlers/app.h"
#include "cmd/cmd.h"
#include "cmd/common.h"
#include "cmd/setup.h"
#include "handlers/cache.h"
#include "handlers/workflow.h"
#include "http/server.h"
#include "framework/framework.h"
#include "framework/llm.h"
#include "mcpclient/registry.h"
#include "mcpserver/server.h"
#include "pool/pool.h"
#include "pool/reuse.h"
#include "session/session.h"
#include "util/clock.h"
#include "util/instance.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/url.h"

#define SERVE_HOST_DEFAULT "127.0.0.1" /* --host */

/*
 * The options of serve besides the common (cmd/common.h) and setup (cmd/setup.h) ones, one row
 * per option, generating the enum, the getopt entries, the defaults (serve_opts_init()), the
 * range checks and --help:
 *   X(ID, "name", has_arg, help)           serve_parse() handles it by hand
 *   N(ID, "name", min, max, field, def, before, after)
 *                                          a decimal in [min, max] into serve_opts.field, def
 *                                          when not given; --help: before, def, after
 *   Z(ID, "name", min, max, field, help)   the same, 0 when not given (a default that follows
 *                                          from other options or the machine, as help says)
 *   H(text)                                a heading of --help, no option
 *   A(ID, "name")                          another name of option ID (its help says so)
 * Four tables, for where their lines go in --help around the setup options'.
 */
#define SERVE_OPTIONS_HTTP(X, N, Z, H, A)                                                          \
    N(PORT, "port", 0, 65535, port, 8080,                                                          \
      "  --port N               listen port (default: $UHLP_SANDBOX_PORT, else ", ")\n")           \
    X(HOST, "host", required_argument,                                                             \
      "  --host ADDR            listen address (default " SERVE_HOST_DEFAULT ")\n")                \
    X(DEFINITIONS, "definitions", required_argument,                                               \
      "  --definitions DIR      serve DIR/<appId>/<path> to requests whose mcp_endpoint is "       \
      "\"local\"\n")                                                                               \
    X(LLM_URL, "llm-url", required_argument,                                                       \
      "  --llm-url URL          OpenAI-compatible endpoint for the local core.llm.generate\n"      \
      "                         (default: the offline echo model); key from "                      \
      "$SANDBOXD_LLM_API_KEY\n")                                                                   \
    X(LLM_MODEL, "llm-model", required_argument,                                                   \
      "  --llm-model NAME       default model for --llm-url\n")                                    \
    N(LLM_TIMEOUT, "llm-timeout-ms", 1, 86400000, llm_timeout, LLM_DEFAULT_TIMEOUT_MS,             \
      "  --llm-timeout-ms N     one core.llm.generate call of an LLM handler or step (", ")\n")    \
    N(MAX_WORKFLOW_STEPS, "max-workflow-steps", 1, 100000, max_workflow_steps,                     \
      WORKFLOW_DEFAULT_MAX_STEPS,                                                                  \
      "  --max-workflow-steps N steps a workflow execution may run when the workflow sets\n      " \
      "                   no maxSteps of its own (",                                               \
      ")\n")                                                                                       \
    N(TEMPLATE_POOL, "template-pool-size", 0, 1024, template_pool_size, 2,                         \
      "  --template-pool-size N template interpreters kept ready, with jinja2 and\n              " \
      "           jsonschema imported, by a zygote of their own (",                                \
      "; 0: templates\n                         take interpreters from the main pool and import "  \
      "on start)\n")

#define SERVE_OPTIONS_LIMITS(X, N, Z, H, A)                                                        \
    Z(MAX_RUNNING, "max-running", 1, 65536, max_running,                                           \
      "  --max-running N        executions at once (default 4 x cores)\n")                         \
    N(MAX_QUEUE, "max-queue", 0, 1 << 20, max_queue, 256,                                          \
      "  --max-queue N          executions waiting before 503 (default ", ")\n")                   \
    N(DEF_TIMEOUT, "default-timeout-ms", 1, 86400000, def_timeout, APP_DEFAULT_TIMEOUT_MS,         \
      "  --default-timeout-ms N timeout when a request names none and has no history (", ")\n")    \
    N(MAX_TIMEOUT, "max-timeout-ms", 1, 86400000, max_timeout, 60000,                              \
      "  --max-timeout-ms N     largest timeout a request may ask for (", ")\n")                   \
    N(DEF_MEMORY, "default-memory-mb", 16, 1 << 20, def_memory, APP_DEFAULT_MEMORY_MB,             \
      "  --default-memory-mb N  memory limit when a request names none (", ")\n")                  \
    N(MAX_BODY, "max-body-kb", 1, 1 << 20, max_body_kb, 10240,                                     \
      "  --max-body-kb N        largest request body (",                                           \
      "); a larger one is refused with 413\n                         as soon as that is known (a " \
      "declared Content-Length: at once)\n")                                                       \
    N(MAX_CONNECTIONS, "max-connections", 1, 1000000, max_connections,                             \
      HTTP_DEFAULT_MAX_CONNECTIONS, "  --max-connections N    open HTTP connections at most (",    \
      "); RLIMIT_NOFILE's soft\n                         limit is raised to the hard limit to "    \
      "make room for them\n")                                                                      \
    Z(REPLY_BUDGET, "reply-budget-mb", 1, 1 << 20, reply_budget_mb,                                \
      "  --reply-budget-mb N    MiB of replies held for clients that have not read them yet,\n   " \
      "                      all together (default 4 x the larger of --max-result-mb and\n       " \
      "                  --tmp-size-mb: 256); a reply beyond it is 503 REPLY_BUDGET\n")            \
    Z(TENANT_REPLY, "tenant-reply-mb", 1, 1 << 20, tenant_reply_mb,                                \
      "  --tenant-reply-mb N    the same for one tenant (default 2 x that larger: 128); at\n     " \
      "                    least that larger, at most --reply-budget-mb\n")                        \
    N(HEADER_TIMEOUT, "header-timeout-s", 1, 3600, header_timeout_s,                               \
      HTTP_DEFAULT_HEADER_TIMEOUT_S,                                                               \
      "  --header-timeout-s N   a request's line and headers must arrive within N s of their\n   " \
      "                      first byte, else 408 and the connection closes (",                    \
      ")\n")                                                                                       \
    N(BODY_TIMEOUT, "body-timeout-s", 1, 86400, body_timeout_s, HTTP_DEFAULT_BODY_TIMEOUT_S,       \
      "  --body-timeout-s N     a request's body must arrive within N s of its headers (", ")\n")  \
    N(IDLE_TIMEOUT, "idle-timeout-s", 1, 86400, idle_timeout_s, HTTP_DEFAULT_IDLE_TIMEOUT_S,       \
      "  --idle-timeout-s N     a connection without traffic (keep-alive, or a client that\n     " \
      "                    does not read its response) closes after N s (",                        \
      ")\n")                                                                                       \
    N(DRAIN_TIMEOUT, "drain-timeout-s", 0, 3600, drain_timeout_s, 30,                              \
      "  --drain-timeout-s N    on SIGTERM/SIGINT: no new work (503 SHUTTING_DOWN), /readyz "      \
      "503,\n                         and what runs gets up to N s to finish before it is ended; " \
      "a\n                         second signal ends it at once (",                               \
      ")\n")                                                                                       \
    X(WARM_REUSE, "warm-reuse", required_argument,                                                 \
      "  --warm-reuse APPS      JIT executions of these apps (comma-separated appIds, or *)\n"     \
      "                         may run in an interpreter that already ran the same app,\n"        \
      "                         script and definition: module globals persist (docs/API.md)\n")    \
    N(REUSE_MAX_EXECUTIONS, "reuse-max-executions", 1, 1000000, reuse_max_executions, 1000,        \
      "  --reuse-max-executions N  executions one kept interpreter serves at most (", ")\n")       \
    N(REUSE_MAX_IDLE, "reuse-max-idle", 0, 4096, reuse_max_idle, 64,                               \
      "  --reuse-max-idle N     kept interpreters at most, least recently used retired (", ")\n")  \
    N(REUSE_IDLE, "reuse-idle-s", 1, 86400, reuse_idle_s, 60,                                      \
      "  --reuse-idle-s N       a kept interpreter unused for N s is retired (", ")\n")            \
    N(FW_TIMEOUT, "framework-timeout-ms", 1, 3600000, fw_timeout, 10000,                           \
      "  --framework-timeout-ms N  timeout of framework MCP calls (", ")\n")                       \
    X(FRAMEWORK_ALLOW, "framework-allow", required_argument,                                       \
      "  --framework-allow URL  a request's mcp_endpoint must be \"local\" or start with one of\n" \
      "                         these scheme://host[:port][/path] prefixes (repeatable; "          \
      "default:\n"                                                                                 \
      "                         loopback http(s) URLs only); otherwise 403 "                       \
      "FRAMEWORK_NOT_ALLOWED\n")

#define SERVE_OPTIONS_CALLERS(X, N, Z, H, A)                                                       \
    H("\nWho may call (docs/SECURITY.md):\n")                                                      \
    X(API_TOKEN, "api-token", required_argument,                                                   \
      "  --api-token TOKEN      every endpoint but /healthz, /livez, /readyz requires\n"           \
      "                         Authorization: Bearer TOKEN (default: $SANDBOXD_API_TOKEN;\n"      \
      "                         --mcp-token and $SANDBOXD_MCP_TOKEN are older names)\n")           \
    A(API_TOKEN, "mcp-token")                                                                      \
    X(TENANTS, "tenants", required_argument,                                                       \
      "  --tenants FILE         tenants with tokens and limits: {\"tenants\": {\"NAME\":\n"        \
      "                         {\"token\": \"...\", \"maxSessions\": n, \"maxRunning\": n}}}\n"   \
      "                         (also maxMcpSessions, quotaMb, maxWorkspaces; "                    \
      "docs/SECURITY.md)\n")                                                                       \
    Z(TENANT_QUOTA, "tenant-quota-mb", 1, 1 << 20, tenant_quota,                                   \
      "  --tenant-quota-mb N    MiB one tenant stores in all its workspaces together, when its\n " \
      "                        quotaMb does not say (4 x --workspace-quota-mb)\n")                 \
    X(ALLOWED_HOST, "allowed-host", required_argument,                                             \
      "  --allowed-host H       also accept Host H (a name, or name:port; repeatable; loopback\n"  \
      "                         names and addresses always are); alias --mcp-allowed-host\n")      \
    A(ALLOWED_HOST, "mcp-allowed-host")                                                            \
    X(ALLOWED_ORIGIN, "allowed-origin", required_argument,                                         \
      "  --allowed-origin O     also accept Origin O, e.g. https://app.example (repeatable);\n"    \
      "                         alias --mcp-allowed-origin\n")                                     \
    A(ALLOWED_ORIGIN, "mcp-allowed-origin")                                                        \
    X(INSECURE_NO_AUTH, "insecure-no-auth", no_argument,                                           \
      "  --insecure-no-auth     listen on a non-loopback --host without --api-token or\n"          \
      "                         --tenants (only behind a layer that authenticates)\n")

#define SERVE_OPTIONS_INSTANCE(X, N, Z, H, A)                                                      \
    N(MCP_MAX_SESSIONS, "mcp-max-sessions", 1, 1 << 16, mcp_max_sessions,                          \
      API_MCP_MAX_SESSIONS_DEFAULT, "  --mcp-max-sessions N   MCP sessions of /mcp at most (",     \
      "); idle ones end after\n                         --session-idle-s\n")                       \
    N(E2B_MAX_TIMEOUT, "e2b-max-timeout-s", 1, 86400, e2b_max_timeout_s,                           \
      E2B_MAX_TIMEOUT_DEFAULT_S,                                                                   \
      "  --e2b-max-timeout-s N  the longest timeout an E2B sandbox may have, at create or\n"       \
      "                         setTimeout (",                                                     \
      "; E2B's API under /e2b, docs/E2B.md)\n")                                                    \
    X(INSTANCE_ID, "instance-id", required_argument,                                               \
      "  --instance-id ID       this instance's name behind a load balancer (default: the host\n"  \
      "                         name): session ids begin with \"ID.\", responses carry\n"          \
      "                         X-Sandboxd-Instance; 1 to 31 letters, digits and '-'\n")

#define SERVE_OPTIONS(X, N, Z, H, A)                                                               \
    SERVE_OPTIONS_HTTP(X, N, Z, H, A)                                                              \
    SERVE_OPTIONS_LIMITS(X, N, Z, H, A)                                                            \
    SERVE_OPTIONS_CALLERS(X, N, Z, H, A) SERVE_OPTIONS_INSTANCE(X, N, Z, H, A)

#define SERVE_ENUM_X_(id, name, has_arg, help)                       SERVE_##id,
#define SERVE_ENUM_N_(id, name, min, max, field, def, before, after) SERVE_##id,
#define SERVE_ENUM_Z_(id, name, min, max, field, help)               SERVE_##id,
#define SERVE_NONE_X_(id, name, has_arg, help)
#define SERVE_NONE_Z_(id, name, min, max, field, help)
#define SERVE_NONE_H_(text)
#define SERVE_NONE_A_(id, name)
enum {
    SERVE_FIRST_ = SETUP_OPT_LAST,
    SERVE_OPTIONS(SERVE_ENUM_X_, SERVE_ENUM_N_, SERVE_ENUM_Z_, SERVE_NONE_H_, SERVE_NONE_A_)
};

#define SERVE_LONG_X_(id, name, has_arg, help) {name, has_arg, NULL, SERVE_##id},
#define SERVE_LONG_N_(id, name, min, max, field, def, before, after)                               \
    {name, required_argument, NULL, SERVE_##id},
#define SERVE_LONG_Z_(id, name, min, max, field, help) {name, required_argument, NULL, SERVE_##id},
#define SERVE_LONG_A_(id, name)                        {name, required_argument, NULL, SERVE_##id},

#define SERVE_HELP_X_(id, name, has_arg, help)                       help
#define SERVE_HELP_N_(id, name, min, max, field, def, before, after) before COMMON_STR(def) after
#define SERVE_HELP_Z_(id, name, min, max, field, help)               help
#define SERVE_HELP_H_(text)                                          text
#define SERVE_HELP(table)                                                                          \
    table(SERVE_HELP_X_, SERVE_HELP_N_, SERVE_HELP_Z_, SERVE_HELP_H_, SERVE_NONE_A_)

/* The reply budgets' defaults follow other options' (serve_reply_budget()): --help shows what
 * the defaults of those make of them. */
#define SERVE_LARGEST_DEFAULT_MB                                                                   \
    ((int)SETUP_DEFAULT_MAX_RESULT > (int)COMMON_DEFAULT_TMP_MB ? (int)SETUP_DEFAULT_MAX_RESULT    \
                                                                : (int)COMMON_DEFAULT_TMP_MB)
_Static_assert(4 * SERVE_LARGEST_DEFAULT_MB == 256, "--reply-budget-mb's help");
_Static_assert(2 * SERVE_LARGEST_DEFAULT_MB == 128, "--tenant-reply-mb's help");

static const char serve_usage[] =
    "Usage: sandboxd serve [options]\n"
    "The HTTP server: POST /execute, GET /healthz, /livez, /readyz, /metrics,\n"
    "POST /_framework/load_code, /v1/sessions, the MCP endpoint /mcp (docs/MCP.md), and\n"
    "E2B's API under /e2b (docs/E2B.md).\n"
    "\n" SERVE_HELP(SERVE_OPTIONS_HTTP) SETUP_HELP_POOL SERVE_HELP(SERVE_OPTIONS_LIMITS)
        SERVE_HELP(SERVE_OPTIONS_CALLERS) "\n" SETUP_HELP_SESSIONS SERVE_HELP(
            SERVE_OPTIONS_INSTANCE) "  -h, --help\n"
                                    "\n" COMMON_HELP;

#define SERVE_MAX_ALLOWED    32 /* --allowed-host / --allowed-origin entries */
#define SERVE_FD_RESERVE     1024
#define SERVE_DRAIN_STEP_US  100000  /* how often a drain looks for a second signal */
#define SERVE_REPLY_GRACE_US 2000000 /* for the answers of what was ended to reach clients */

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
    uint64_t max_connections, header_timeout_s, body_timeout_s, idle_timeout_s, drain_timeout_s;
    uint64_t reply_budget_mb, tenant_reply_mb; /* 0 until serve_reply_budget() */
    bool def_timeout_set, def_memory_set;
    uint64_t mcp_max_sessions;
    uint64_t e2b_max_timeout_s;
    const char *warm_reuse; /* NULL: no warm reuse */
    uint64_t reuse_max_executions, reuse_max_idle, reuse_idle_s;
    const char *allowed_hosts[SERVE_MAX_ALLOWED + 1];
    const char *allowed_origins[SERVE_MAX_ALLOWED + 1];
    size_t n_allowed_hosts, n_allowed_origins;
    const char *api_token;
    const char *tenants;
    uint64_t tenant_quota; /* 0: 4 x --workspace-quota-mb */
    bool insecure_no_auth;
    struct url_allowlist framework_allow; /* owned: url_allowlist_done() */
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

/* A token must survive an Authorization header unchanged. */
static bool serve_token_ok(const char *t)
{
    size_t n = strlen(t);
    if (n == 0 || n > 4096)
        return false;
    for (size_t i = 0; i < n; i++)
        if (t[i] <= 0x20 || t[i] >= 0x7f)
            return false;
    return true;
}

/* The range check of a numeric row of SERVE_OPTIONS; the other rows expand to nothing. */
#define SERVE_CASE_X_(id, name, has_arg, help)
#define SERVE_CASE_Z_(id, name, min, max, field, help)                                             \
    case SERVE_##id:                                                                               \
        if (common_parse_u64(name, optarg, min, max, &o->field) < 0)                               \
            return 2;                                                                              \
        break;
#define SERVE_CASE_N_(id, name, min, max, field, def, before, after)                               \
    SERVE_CASE_Z_(id, name, min, max, field, before)
/* The default of a numeric row with one, as a designated initializer. */
#define SERVE_INIT_N_(id, name, min, max, field, def, before, after) .field = def,

/* The reply budget's defaults follow the largest single reply (a result, a session file), which
 * a tenant's share must always hold; 0 on success, else 2 after saying why. */
static int serve_reply_budget(struct serve_opts *o, const struct common_opts *common)
{
    uint64_t tmp_mb = common->tmp_mb;
    uint64_t largest = o->setup.max_result_mb > tmp_mb ? o->setup.max_result_mb : tmp_mb;
    if (!o->tenant_reply_mb)
        o->tenant_reply_mb = 2 * largest;
    if (!o->reply_budget_mb)
        o->reply_budget_mb = 4 * largest > o->tenant_reply_mb ? 4 * largest : o->tenant_reply_mb;
    if (o->tenant_reply_mb < largest) {
        fprintf(stderr,
                "sandboxd serve: --tenant-reply-mb %llu is below the largest reply (%llu MiB: "
                "--max-result-mb, --tmp-size-mb), which could then never be sent\n",
                (unsigned long long)o->tenant_reply_mb, (unsigned long long)largest);
        return 2;
    }
    if (o->tenant_reply_mb > o->reply_budget_mb) {
        fprintf(stderr, "sandboxd serve: --tenant-reply-mb exceeds --reply-budget-mb\n");
        return 2;
    }
    return 0;
}

/* An option of serve parsed by hand: 0, -1 after saying why it is bad, or 1 when it is none
 * of them. */
static int serve_opt(struct serve_opts *o, int c, const char *arg)
{
    switch (c) {
    case SERVE_HOST:
        o->host = arg;
        break;
    case SERVE_DEFINITIONS:
        o->definitions = arg;
        break;
    case SERVE_LLM_URL:
        o->llm_url = arg;
        break;
    case SERVE_LLM_MODEL:
        o->llm_model = arg;
        break;
    case SERVE_ALLOWED_HOST:
        if (serve_add_allowed(o->allowed_hosts, &o->n_allowed_hosts, "allowed-host", arg) < 0)
            return -1;
        break;
    case SERVE_ALLOWED_ORIGIN:
        if (serve_add_allowed(o->allowed_origins, &o->n_allowed_origins, "allowed-origin", arg) < 0)
            return -1;
        break;
    case SERVE_API_TOKEN:
        o->api_token = arg;
        break;
    case SERVE_TENANTS:
        o->tenants = arg;
        break;
    case SERVE_WARM_REUSE:
        o->warm_reuse = arg;
        break;
    case SERVE_INSECURE_NO_AUTH:
        o->insecure_no_auth = true;
        break;
    case SERVE_FRAMEWORK_ALLOW: {
        const char *why = "out of memory";
        if (url_allowlist_add(&o->framework_allow, arg, &why) < 0) {
            fprintf(stderr, "sandboxd serve: --framework-allow '%s' %s\n", arg, why);
            return -1;
        }
        break;
    }
    case SERVE_INSTANCE_ID: {
        const char *why = instance_id_check(arg);
        if (why) {
            fprintf(stderr, "sandboxd serve: --instance-id '%s': %s\n", arg, why);
            return -1;
        }
        o->instance_id = arg;
        break;
    }
    default:
        return 1;
    }
    return 0;
}

/* The defaults: the numeric rows' (the tables above), the others here. */
static void serve_opts_init(struct serve_opts *o)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    *o = (struct serve_opts){
        SERVE_OPTIONS(SERVE_NONE_X_, SERVE_INIT_N_, SERVE_NONE_Z_, SERVE_NONE_H_, SERVE_NONE_A_)
            .host = SERVE_HOST_DEFAULT,
        .max_running = (uint64_t)(ncpu > 0 ? ncpu : 1) * 4,
        .api_token = getenv("SANDBOXD_API_TOKEN") ? getenv("SANDBOXD_API_TOKEN")
                                                  : getenv("SANDBOXD_MCP_TOKEN"),
    };
    setup_opts_init(&o->setup);
}

/* What the options say together, once every one is read: 0, or 2 after saying why not. */
static int serve_finish(struct serve_opts *o, const struct common_opts *common)
{
    if (o->api_token && !serve_token_ok(o->api_token)) {
        fprintf(stderr, "sandboxd serve: the API token must have 1 to 4096 printable ASCII "
                        "characters without spaces\n");
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
    return serve_reply_budget(o, common);
}

static int serve_parse(int argc, char **argv, struct serve_opts *o, struct common_opts *common)
{
    static const struct option opts[] = {
        COMMON_LONG_OPTIONS SETUP_LONG_OPTIONS SERVE_OPTIONS(
            SERVE_LONG_X_, SERVE_LONG_N_, SERVE_LONG_Z_, SERVE_NONE_H_,
            SERVE_LONG_A_){"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    serve_opts_init(o);
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
        o->def_timeout_set |= c == SERVE_DEF_TIMEOUT;
        o->def_memory_set |= c == SERVE_DEF_MEMORY;
        switch (c) {
            SERVE_OPTIONS(SERVE_CASE_X_, SERVE_CASE_N_, SERVE_CASE_Z_, SERVE_NONE_H_, SERVE_NONE_A_)
        case 'h':
            fputs(serve_usage, stdout);
            return 0;
        default:
            r = serve_opt(o, c, optarg);
            if (r == 0)
                break;
            if (r > 0) /* an option of none of the tables */
                fputs(serve_usage, stderr);
            return 2;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "sandboxd serve: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (serve_finish(o, common) != 0)
        return 2;
    return -1; /* go on */
}

/* Room for the connections: the soft RLIMIT_NOFILE (often 1024) goes up to the hard limit.
 * Sandboxes are unaffected: each gets its own limit and closes every inherited fd. */
static void serve_raise_nofile(uint64_t max_connections)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
        log_errno(LOG_WARN, errno, "serve: getrlimit(RLIMIT_NOFILE)");
        return;
    }
    if (rl.rlim_cur < rl.rlim_max) {
        rlim_t was = rl.rlim_cur;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
            log_errno(LOG_WARN, errno, "serve: cannot raise RLIMIT_NOFILE from %llu to %llu",
                      (unsigned long long)was, (unsigned long long)rl.rlim_max);
            rl.rlim_cur = was;
        }
    }
    /* Besides the sockets: pools, sessions, MCP servers, logs. */
    if (rl.rlim_cur < max_connections + SERVE_FD_RESERVE)
        log_warn("serve: RLIMIT_NOFILE is %llu, too low for --max-connections %llu (raise the "
                 "hard limit, e.g. LimitNOFILE= or ulimit -Hn)",
                 (unsigned long long)rl.rlim_cur, (unsigned long long)max_connections);
}

/* After SIGTERM/SIGINT: take no new work and wait for what runs, until it is done, the deadline
 * passes or a second signal comes. True when everything finished. */
static bool serve_drain(struct api *api, struct http_server *http, uint64_t timeout_s,
                        const sigset_t *sigs)
{
    api_drain(api);
    http_server_drain(http);
    int64_t deadline = clock_mono_us() + (int64_t)timeout_s * 1000000;
    for (;;) {
        int64_t step = clock_mono_us() + SERVE_DRAIN_STEP_US;
        if (http_server_wait_idle(http, step < deadline ? step : deadline) == 0) {
            log_info("serve: drained: every request was answered");
            return true;
        }
        if (clock_mono_us() >= deadline) {
            log_warn("serve: --drain-timeout-s %llu passed: ending what still runs",
                     (unsigned long long)timeout_s);
            return false;
        }
        struct timespec now = {0};
        int sig = sigtimedwait(sigs, NULL, &now);
        if (sig > 0) {
            log_warn("serve: %s during the drain: ending what still runs",
                     sig == SIGINT ? "SIGINT" : "SIGTERM");
            return false;
        }
    }
}

/* What serve builds, torn down by serve_stop() in reverse order. */
struct serve_run {
    struct setup su;
    struct framework *fw;
    struct defs *defs;
    struct flow_cache *wf_cache;
    struct manager *mgr;
    struct http_server *http;
    struct mcp_server *mcps;
    struct mcp_http *mcph;
    struct pool *template_pool;
    struct policy *policy;
    struct reuse *reuse;
    struct e2b *e2b;
    struct app app;
    struct api api;
};

/* Who may call, and the warm reuse: settled first, so that a start that would be refused does
 * not build pools. 0, or -1 (said why). */
static int serve_callers(struct serve_opts *o, struct serve_run *v)
{
    struct policy_options pol = {
        .bind_host = o->host,
        .allowed_hosts = o->allowed_hosts,
        .allowed_origins = o->allowed_origins,
        .api_token = o->api_token,
        .tenants_file = o->tenants,
        .insecure_no_auth = o->insecure_no_auth,
    };
    if (policy_new(&pol, &v->policy) < 0)
        return -1;
    if (o->warm_reuse) {
        struct reuse_options ro = {
            .apps = o->warm_reuse,
            .max_executions = (unsigned)o->reuse_max_executions,
            .max_idle = (unsigned)o->reuse_max_idle,
            .idle_us = (int64_t)o->reuse_idle_s * 1000000,
        };
        char *why = NULL;
        int r = reuse_new(&ro, &v->reuse, &why);
        if (r < 0) {
            log_error("serve: %s", why ? why : strerror(-r));
            free(why);
            return -1;
        }
    }
    return 0;
}

/* The template pool, the framework client, the definitions, the execution manager and the
 * workflow cache: what /execute needs besides setup's. 0, or -1. */
static int serve_executors(struct serve_opts *o, struct serve_run *v)
{
    v->template_pool = v->su.template_pool; /* started by setup_start() with the others */
    const char *key = getenv("SANDBOXD_LLM_API_KEY");
    struct framework_options fo = {
        .definitions_dir = o->definitions,
        .llm_url = o->llm_url,
        .llm_model = o->llm_model,
        .llm_api_key = key,
        .timeout_ms = (int64_t)o->fw_timeout,
        .llm_timeout_ms = (int64_t)o->llm_timeout,
        .max_response = 32u << 20,
        .allow = &o->framework_allow,
        .store = v->su.store,
    };
    struct defs_options dopt = {
        .max_entries = 4096, .max_bytes = 256u << 20, .max_file = FRAMEWORK_MAX_DEFINITION};
    struct manager_options mo = {
        .max_running = (unsigned)o->max_running,
        .max_queued = (unsigned)o->max_queue,
        .default_timeout_ms = (int64_t)o->def_timeout,
        .max_timeout_ms = (int64_t)o->max_timeout,
        .adaptive_floor_ms = 1000,
    };
    if (framework_new(&fo, &v->fw) < 0 || defs_new(v->fw, &dopt, &v->defs) < 0 ||
        manager_new(&mo, &v->mgr) < 0)
        return -1;
    return flow_cache_new(256, 64u << 20, &v->wf_cache) < 0 ? -1 : 0;
}

/* The MCP server behind /mcp. 0, or -1. */
static int serve_mcp(struct serve_opts *o, struct serve_run *v)
{
    struct mcp_server_options mso = {
        .output_json = strcmp(o->setup.mcp_output, "json") == 0,
        .full_tools = strcmp(o->setup.mcp_tools, "full") == 0,
        .workspace = o->setup.mcp_workspace,
        .profile = o->setup.mcp_profile,
        .page_size = (unsigned)o->setup.mcp_page_size,
        .default_timeout_ms = v->su.so.default_timeout_ms,
        .max_timeout_ms = v->su.so.max_timeout_ms,
        .lookup_timeout_ms = v->su.so.tool_timeout_ms,
        .approval_timeout_s = v->su.so.approval_timeout_ms / 1000,
        .transport = "streamable-http",
    };
    if (mcp_server_new(&mso, v->su.sessions, v->su.mcp, &v->mcps) < 0)
        return -1;
    struct mcp_http_options mho = {
        .max_sessions = (unsigned)o->mcp_max_sessions,
        .idle_s = (int64_t)o->setup.session_idle,
        .id_prefix = o->instance_id,
    };
    return mcp_http_new(&mho, v->mcps, &v->mcph) < 0 ? -1 : 0;
}

/* E2B's API (docs/E2B.md): its sandboxes are sessions. The default timeout is E2B's documented
 * one (5 minutes). 0, or -1. */
static int serve_e2b(struct serve_opts *o, struct serve_run *v)
{
    struct e2b_options eo = {
        .sessions = v->su.sessions,
        .profiles = v->su.profiles,
        .default_timeout_s = o->e2b_max_timeout_s < E2B_TIMEOUT_DEFAULT_S
                                 ? (int64_t)o->e2b_max_timeout_s
                                 : E2B_TIMEOUT_DEFAULT_S,
        .max_timeout_s = (int64_t)o->e2b_max_timeout_s,
        .idle_s = (int64_t)o->setup.session_idle,
        .file_max = v->su.jail.tmp_bytes,
        .max_sandboxes = (unsigned)o->setup.max_sessions,
    };
    return e2b_new(&eo, &v->e2b) < 0 ? -1 : 0;
}

/* The app every /execute handler runs in, and the API over everything. */
static void serve_app(struct serve_opts *o, struct serve_run *v)
{
    v->app = (struct app){
        .opt =
            {
                .default_timeout_ms = (int64_t)o->def_timeout,
                .max_timeout_ms = (int64_t)o->max_timeout,
                .default_memory_mb = o->def_memory,
                .max_memory_mb = o->setup.max_memory,
                .output_limit = (size_t)o->setup.output_kb << 10,
                .max_frame = (size_t)o->setup.max_result_mb << 20,
                .nproc = o->setup.procs,
                .nofile = JAIL_DEFAULT_NOFILE,
                .artifacts = setup_artifact_caps(&o->setup),
                .llm_timeout_ms = (int64_t)o->llm_timeout,
                .max_workflow_steps = (unsigned)o->max_workflow_steps,
            },
        .jail = &v->su.jail,
        .fw = v->fw,
        .defs = v->defs,
        .mgr = v->mgr,
        .pool = v->su.pool,
        .session_pool = v->su.session_pool,
        .template_pool = v->template_pool,
        .network_pool = v->su.network_pool,
        .profiles = v->su.profiles,
        .metrics = v->su.metrics,
        .wf_cache = v->wf_cache,
        .isolation = v->su.isolation,
        .started_us = clock_mono_us(),
        .egress = v->su.egress,
        .reuse = v->reuse,
    };
    v->api = (struct api){.app = &v->app,
                          .policy = v->policy,
                          .sessions = v->su.sessions,
                          .mcp = v->mcph,
                          .wstore = v->su.wstore,
                          .registry = v->su.mcp,
                          .e2b = v->e2b,
                          .store = v->su.store};
}

/* The HTTP server, listening. 0, or -1. */
static int serve_listen(struct serve_opts *o, struct serve_run *v)
{
    /* Every execution slot and queue place, every session and MCP session may hold a worker
     * thread while it waits; the rest answer quickly. Threads start only when needed. */
    uint64_t workers =
        o->max_running + o->max_queue + o->setup.max_sessions + o->mcp_max_sessions + 64;
    struct http_server_options ho = {
        .host = o->host,
        .port = (uint16_t)o->port,
        .max_body = (size_t)o->max_body_kb << 10,
        .max_connections = (unsigned)o->max_connections,
        .idle_timeout_s = (unsigned)o->idle_timeout_s,
        .header_timeout_s = (unsigned)o->header_timeout_s,
        .body_timeout_s = (unsigned)o->body_timeout_s,
        .max_workers = (unsigned)(workers < 4096 ? workers : 4096),
        .inline_route = api_route_inline,
        .instance_id = o->instance_id,
        .reply_budget = (size_t)o->reply_budget_mb << 20,
        .owner_budget = (size_t)o->tenant_reply_mb << 20,
    };
    if (http_server_start(&ho, api_route, &v->api, &v->http) < 0)
        return -1;
    atomic_store(&v->api.http, v->http);
    /* The state directory is a path (any bytes) and the instance id optional: as "s" either
     * would have cost the line every field. */
    log_pack(
        LOG_INFO, "sandboxd listening", "{s:o, s:i, s:O, s:b, s:I, s:o, s:o?, s:o, s:b, s:I, s:o?}",
        "host", log_str(o->host), "port", (int)http_server_port(v->http), "isolation",
        v->app.isolation, "pool", v->su.pool != NULL, "maxRunning", (json_int_t)o->max_running,
        "mcpServers", mcp_registry_names(v->su.mcp), "stateDir", log_str(v->su.state_dir),
        "stateStore", store_describe(v->su.store), "apiToken", o->api_token != NULL, "tenants",
        (json_int_t)tenants_count(policy_tenants(v->policy)), "instance", log_str(o->instance_id));
    return 0;
}

/* Wait for SIGTERM/SIGINT, then drain; what is left after the deadline is ended. */
static void serve_wait(struct serve_opts *o, struct serve_run *v, const sigset_t *sigs)
{
    int sig = 0;
    while (sigwait(sigs, &sig) != 0)
        ;
    log_info("serve: %s received: draining (up to %llu s; a second signal ends it at once)",
             sig == SIGINT ? "SIGINT" : "SIGTERM", (unsigned long long)o->drain_timeout_s);
    if (!serve_drain(&v->api, v->http, o->drain_timeout_s, sigs)) {
        /* End what still runs, so that the HTTP threads waiting for it return with a clear
         * "shutting down" answer: sessions first (an MCP run_python in one then reports that),
         * then MCP sessions, then /execute runs. */
        sessions_shutdown(v->su.sessions);
        mcp_http_shutdown(v->mcph);
        manager_abort(v->mgr);
        (void)http_server_wait_idle(v->http, clock_mono_us() + SERVE_REPLY_GRACE_US);
    }
}

/* Drained (or past the deadline, where what still ran was ended): end the MCP sessions, then
 * every session, waiting for every thread that uses one (tool calls in flight are aborted);
 * then stop the server, which waits for every route and stream. Nothing below is freed while
 * any of them could still use it. */
static void serve_stop(struct serve_run *v)
{
    mcp_http_shutdown(v->mcph);
    e2b_shutdown(v->e2b); /* no new sandbox; those that live end with their sessions */
    sessions_shutdown(v->su.sessions);
    http_server_stop(v->http);
    e2b_free(v->e2b); /* after the routes and streams that used it */
    mcp_http_free(v->mcph);
    mcp_server_free(v->mcps);
    manager_free(v->mgr);
    defs_free(v->defs);
    flow_cache_free(v->wf_cache);
    framework_free(v->fw);
    reuse_free(v->reuse); /* before the pools: a kept warm cell is released to its pool */
    setup_stop(&v->su);   /* the template pool too */
    policy_free(v->policy);
}

int cmd_serve(int argc, char **argv)
{
    struct serve_opts o;
    struct common_opts common;
    common_opts_init(&common);
    int status = serve_parse(argc, argv, &o, &common);
    if (status < 0) {
        status = 1;
        serve_raise_nofile(o.max_connections);
        /* Block the shutdown signals before any thread exists; the main thread waits for
         * them. */
        sigset_t sigs;
        sigemptyset(&sigs);
        sigaddset(&sigs, SIGINT);
        sigaddset(&sigs, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &sigs, NULL);
        struct serve_run v = {0};
        o.setup.tenant_quota = o.tenant_quota;
        o.setup.executions = o.max_running;
        /* Templates import jinja2 and jsonschema (~100 ms): a pool of its own has them
         * imported, as the sessions' pool has asyncio; setup_start() starts it with the others. */
        o.setup.template_pool_size = o.template_pool_size;
        if (serve_callers(&o, &v) == 0 && setup_start(&v.su, &o.setup, &common, "serve") == 0 &&
            serve_executors(&o, &v) == 0 && serve_mcp(&o, &v) == 0 && serve_e2b(&o, &v) == 0) {
            serve_app(&o, &v);
            if (serve_listen(&o, &v) == 0) {
                serve_wait(&o, &v, &sigs);
                status = 0;
            }
        }
        serve_stop(&v);
    }
    url_allowlist_done(&o.framework_allow);
    common_done(&common);
    setup_opts_done(&o.setup);
    return status;
}
