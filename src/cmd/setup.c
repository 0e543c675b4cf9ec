// SPDX-License-Identifier: MIT
/*
 * setup — see setup.h.
 */
#include "cmd/setup.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "metrics/metrics.h"
#include "egress/proxy.h"
#include "exec/cell.h"
#include "jail/selftest.h"
#include "framework/httpc.h"
#include "mcpclient/approval.h"
#include "mcpclient/registry.h"
#include "pool/pool.h"
#include "session/workspace.h"
#include "util/fmt.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/trust.h"

/* The default of a numeric row with one, as a designated initializer. */
#define SETUP_OPT_INIT_N_(id, name, min, max, field, def, before, after) .field = def,
#define SETUP_OPT_NONE_Z_(id, name, min, max, field, help)

void setup_opts_init(struct setup_opts *o)
{
    *o = (struct setup_opts){
        SETUP_OPTIONS(SETUP_OPT_NONE_X_, SETUP_OPT_INIT_N_, SETUP_OPT_NONE_Z_, SETUP_OPT_NONE_H_)
            .preimport = SETUP_PREIMPORT_DEFAULT,
        .mcp_output = "text",
        .mcp_tools = "lean",
        .mcp_workspace = SESSION_WORKSPACE_DEFAULT,
    };
}

struct store_options setup_store_options(const struct setup_opts *o, const char *state_dir)
{
    struct workspace_limits wl = setup_workspace_limits();
    size_t tenant_mb = o->tenant_quota ? o->tenant_quota : 4 * o->workspace_quota;
    /* A tenant may open any number of workspace names: its total is capped apart. */
    return (struct store_options){
        .url = o->state_store,
        .state_dir = state_dir,
        .password_file = o->state_store_password,
        .connections = (unsigned)o->store_connections,
        .timeout_ms = (unsigned)o->store_timeout,
        .lim = workspace_store_limits(&wl, (size_t)o->workspace_quota << 20, 10000, tenant_mb << 20,
                                      16),
    };
}

void setup_opts_done(struct setup_opts *o)
{
    for (size_t i = 0; i < o->n_profiles; i++)
        profile_spec_done(&o->profiles[i]);
    o->n_profiles = 0;
}

struct workspace_limits setup_workspace_limits(void)
{
    return (struct workspace_limits){.max_value = 1u << 20, .max_file = 16u << 20};
}

struct artifact_caps setup_artifact_caps(const struct setup_opts *o)
{
    return (struct artifact_caps){.max_count = (size_t)o->max_artifacts,
                                  .max_bytes = (size_t)o->max_artifacts_mb << 20};
}

static int setup_list_add(const char **list, size_t *n, const char *name, const char *arg)
{
    if (*n >= EGRESS_CEILING_MAX) {
        fprintf(stderr, "sandboxd: at most %d --%s options\n", EGRESS_CEILING_MAX, name);
        return -1;
    }
    list[(*n)++] = arg;
    list[*n] = NULL;
    return 1;
}

/* The range check of a numeric row of SETUP_OPTIONS; the other rows expand to nothing. */
#define SETUP_OPT_CASE_X_(id, name, has_arg, help)
#define SETUP_OPT_CASE_Z_(id, name, min, max, field, help)                                         \
    case SETUP_OPT_##id:                                                                           \
        return common_parse_u64(name, arg, min, max, &o->field) < 0 ? -1 : 1;
#define SETUP_OPT_CASE_N_(id, name, min, max, field, def, before, after)                           \
    SETUP_OPT_CASE_Z_(id, name, min, max, field, before)

int setup_opt(struct setup_opts *o, int opt, const char *arg)
{
    switch (opt) {
        SETUP_OPTIONS(SETUP_OPT_CASE_X_, SETUP_OPT_CASE_N_, SETUP_OPT_CASE_Z_, SETUP_OPT_NONE_H_)
    case SETUP_OPT_PREIMPORT:
        o->preimport = arg;
        return 1;
    case SETUP_OPT_EGRESS_ALLOW:
        return setup_list_add(o->egress_allow, &o->n_egress_allow, "egress-allow", arg);
    case SETUP_OPT_EGRESS_RESOLVE:
        return setup_list_add(o->egress_resolve, &o->n_egress_resolve, "egress-resolve", arg);
    case SETUP_OPT_EGRESS_HEADER:
        return setup_list_add(o->egress_header, &o->n_egress_header, "egress-header", arg);
    case SETUP_OPT_EGRESS_CA_FILE:
        o->egress_ca_file = arg;
        return 1;
    case SETUP_OPT_APPROVAL:
        if (o->n_approvals == SETUP_MAX_APPROVALS) {
            fprintf(stderr, "sandboxd: --approval: at most %d rules\n", SETUP_MAX_APPROVALS);
            return -1;
        }
        o->approvals[o->n_approvals++] = arg;
        return 1;
    case SETUP_OPT_MCP_CONFIG:
        if (o->n_mcp_configs == SETUP_MAX_MCP_CONFIGS) {
            fprintf(stderr, "sandboxd: --mcp-config: at most %d files\n", SETUP_MAX_MCP_CONFIGS);
            return -1;
        }
        o->mcp_configs[o->n_mcp_configs++] = arg;
        return 1;
    case SETUP_OPT_PROFILE: {
        char *why = NULL;
        if (o->n_profiles >= PROFILE_MAX) {
            fprintf(stderr, "sandboxd: --profile: at most %d profiles\n", PROFILE_MAX);
            return -1;
        }
        if (profile_spec_parse(arg, &o->profiles[o->n_profiles], &why) < 0) {
            fprintf(stderr, "sandboxd: --profile: %s\n", why ? why : "out of memory");
            free(why);
            return -1;
        }
        o->n_profiles++;
        return 1;
    }
    case SETUP_OPT_NO_DISCOVERY:
        o->no_discovery = true;
        return 1;
    case SETUP_OPT_TRUST_PROJECT:
        o->trust_project = true;
        return 1;
    case SETUP_OPT_STATE_DIR:
        o->state_dir = arg;
        return 1;
    case SETUP_OPT_STATE_STORE:
        o->state_store = arg;
        return 1;
    case SETUP_OPT_STATE_STORE_PASSWORD:
        o->state_store_password = arg;
        return 1;
    case SETUP_OPT_MCP_TOOLS:
        if (strcmp(arg, "lean") != 0 && strcmp(arg, "full") != 0) {
            fprintf(stderr, "sandboxd: --mcp-tools: lean or full, not '%s'\n", arg);
            return -1;
        }
        o->mcp_tools = arg;
        return 1;
    case SETUP_OPT_MCP_OUTPUT:
        if (strcmp(arg, "text") != 0 && strcmp(arg, "json") != 0) {
            fprintf(stderr, "sandboxd: --mcp-output: expected text or json, got '%s'\n", arg);
            return -1;
        }
        o->mcp_output = arg;
        return 1;
    case SETUP_OPT_MCP_PROFILE:
        if (strcmp(arg, "default") != 0 && !profile_name_ok(arg)) {
            fprintf(stderr, "sandboxd: --mcp-profile: '%s' is not a profile name\n", arg);
            return -1;
        }
        o->mcp_profile = arg;
        return 1;
    case SETUP_OPT_MCP_WORKSPACE: {
        const char *why = workspace_check_name(arg);
        if (why) {
            fprintf(stderr, "sandboxd: --mcp-workspace: %s\n", why);
            return -1;
        }
        o->mcp_workspace = arg;
        return 1;
    }
    default:
        return 0;
    }
}

void setup_opts_finish(struct setup_opts *o)
{
    const char *env = getenv("SANDBOXD_STATE_STORE");
    if (!o->state_store && env && *env)
        o->state_store = env;
    if (o->session_idle > o->session_max_idle)
        o->session_idle = o->session_max_idle;
    if (o->session_timeout > o->session_max_timeout)
        o->session_timeout = o->session_max_timeout;
    if (o->session_memory > o->max_memory)
        o->session_memory = o->max_memory;
}

char *setup_trust_file(void)
{
    const char *xdg = getenv("XDG_CONFIG_HOME");
    const char *home = getenv("HOME");
    if (xdg && *xdg == '/')
        return fmt_str("%s/sandboxd/trusted-projects", xdg);
    if (home && *home == '/')
        return fmt_str("%s/.config/sandboxd/trusted-projects", home);
    return NULL;
}

/* MCP_BRIDGE_ALLOW_SELF_SERVER (upstream's name) or SANDBOXD_ALLOW_SELF_SERVER: keep
 * configured servers that would start sandboxd mcp (or the upstream bridge) again. */
static bool setup_allow_self(void)
{
    static const char *const vars[] = {"MCP_BRIDGE_ALLOW_SELF_SERVER",
                                       "SANDBOXD_ALLOW_SELF_SERVER"};
    for (size_t i = 0; i < ARRAY_SIZE(vars); i++) {
        const char *v = getenv(vars[i]);
        if (v && (strcmp(v, "1") == 0 || strcasecmp(v, "true") == 0 || strcasecmp(v, "yes") == 0))
            return true;
    }
    return false;
}

int setup_mcp_config(const struct setup_opts *o, struct mcp_config *ret)
{
    char cwd[4096];
    _cleanup_free_ char *trust_file = setup_trust_file();
    _cleanup_free_ char *self_exe = common_front_exe();
    struct mcp_config_options co = {
        .explicit_paths = o->mcp_configs,
        .env_path = getenv("MCP_SERVERS_CONFIG"),
        .self_exe = self_exe,
        .allow_self = setup_allow_self(),
        .discover = !o->no_discovery,
        .trust_project = o->trust_project,
        .cwd = getcwd(cwd, sizeof(cwd)),
        .home = getenv("HOME"),
        .trust_file = trust_file,
    };
    int r = mcp_config_load(&co, ret);
    for (size_t i = 0; r == 0 && i < o->n_approvals; i++) {
        _cleanup_sbx_error_ struct sbx_error why = {0};
        if ((r = mcp_config_add_approval(ret, o->approvals[i], &why)) < 0) {
            log_error("%s", why.message ? why.message : "--approval: out of memory");
            mcp_config_done(ret);
        }
    }
    return r;
}

int setup_pool(struct setup *s, const struct setup_opts *o, const struct setup_pool_kind *k,
               struct pool **ret)
{
    const char *extra = k->extra;
    if (!s->jopt.cell_lib) {
        log_error("libsbxcell.so not found next to the binary (use --cell-lib, or set the "
                  "warm pools' sizes to 0 to run without them)");
        return -ENOENT;
    }
    char *modules = NULL;
    if (asprintf(&modules, "%s%s%s", o->preimport, extra ? "," : "", extra ? extra : "") < 0)
        return -ENOMEM;
    struct pool_options po = {
        .size = k->size,
        .max_size = k->max_size,
        .zygotes = k->zygotes,
        .max_frame = (size_t)o->max_result_mb << 20,
        .nproc = o->procs,
        .nofile = JAIL_DEFAULT_NOFILE,
        .preimport = modules,
        .prepare = k->prepare,
        .egress_port = k->egress_port,
        .refill_delay_us = k->refill_delay_us,
    };
    int r = pool_new(&s->jail, &po, ret);
    free(modules);
    return r;
}

/* Start one sandbox the way an execution with a network policy gets one, so that a machine
 * where that cannot work (the kernel refuses lo or the listener in a user namespace) says so
 * now, by the failing step, instead of with the first such request. */
static int setup_egress_probe(struct setup *s, const char *cmd)
{
    struct jail_limits lim = jail_limits_default(&s->jail);
    struct cell *c = NULL;
    int listener = -1;
    int r = cell_spawn_cold_egress(&s->jail, &lim, 1u << 20, EGRESS_SANDBOX_PORT, &c, &listener);
    if (r < 0)
        return log_errno(LOG_ERROR, r,
                         "%s: a sandbox with a network policy cannot be set up here (the step "
                         "is named above); start without --egress-allow",
                         cmd);
    close(listener);
    cell_free(c);
    return 0;
}

/* One pool of setup_start(), started on a thread of its own. */
struct setup_pool_job {
    struct setup *s;
    const struct setup_opts *o;
    struct setup_pool_kind kind;
    struct pool **ret;  /* where the pool goes */
    const char *what;   /* its name in the error message */
    const char *option; /* the option that turns it off */
    pthread_t thread;
    bool started;
    int r;
};

static void *setup_pool_thread(void *arg)
{
    struct setup_pool_job *j = arg;
    j->r = setup_pool(j->s, j->o, &j->kind, j->ret);
    return NULL;
}

/* The state directory, made or checked (util/trust.h). */
static int setup_state(struct setup *s, const struct setup_opts *o, const char *cmd)
{
    s->state_dir = common_state_dir(o->state_dir);
    if (!s->state_dir)
        return -ENOMEM;
    _cleanup_sbx_error_ struct sbx_error why = {0};
    int r = trust_make_dir(s->state_dir, &why);
    if (r < 0) {
        log_error("%s: refusing the state directory: %s. Use --state-dir DIR with a directory "
                  "of your own that only you can write (mode 0700)",
                  cmd, why.message ? why.message : "it cannot be checked");
        return r;
    }
    return 0;
}

/* The jail configuration, proven by the self-test, and its description. */
static int setup_jail(struct setup *s, const struct setup_opts *o, struct common_opts *common,
                      const char *cmd)
{
    json_t *facts = NULL;
    int r;
    r = common_resolve(common, &s->jopt);
    if (r < 0)
        return r;
    bool oom = false;
    s->cache_dir = common_cache_dir(common, s->state_dir, &oom);
    if (oom)
        return -ENOMEM;
    s->jopt.cache_dir = s->cache_dir;
    s->jopt.egress = o->n_egress_allow > 0;
    s->jopt.ca_file = o->egress_ca_file;
    if (!s->jopt.egress && (o->n_egress_resolve || o->n_egress_header || o->egress_ca_file)) {
        log_error("%s: --egress-resolve, --egress-header and --egress-ca-file need --egress-allow",
                  cmd);
        return -EINVAL;
    }
    r = jail_config_init(&s->jail, &s->jopt);
    if (r < 0)
        return r;
    s->jail_ok = true;
    if (jail_selftest(&s->jail, &facts) < 0) {
        log_error("%s: the sandbox does not work on this machine; see the messages above "
                  "and docs/SECURITY.md",
                  cmd);
        json_decref(facts);
        return -EPERM;
    }
    s->isolation = jail_describe(&s->jail);
    if (!s->isolation) {
        json_decref(facts);
        return -ENOMEM;
    }
    json_object_set_new(s->isolation, "selftest", facts);
    return 0;
}

/* The egress proxy, with --egress-allow. */
static int setup_egress(struct setup *s, const struct setup_opts *o, const char *cmd)
{
    int r;
    if (s->jopt.egress) {
        struct egress_options eo = {
            .allow = o->egress_allow,
            .resolve = o->egress_resolve,
            .headers = o->egress_header,
            .max_bytes = o->egress_max_mb << 20,
            .max_connections = (unsigned)o->egress_max_connections,
            .pool = (unsigned)o->egress_pool,
            .exec_open = (unsigned)o->egress_max_open,
            .session_open = (unsigned)o->egress_session_max_open,
            .tenant_open = (unsigned)o->egress_tenant_connections,
        };
        _cleanup_sbx_error_ struct sbx_error why_shares = {0};
        if (egress_shares_size(&eo, (unsigned)o->max_sessions, (unsigned)o->executions,
                               &why_shares) < 0) {
            log_error("%s: %s", cmd, why_shares.message ? why_shares.message : "out of memory");
            return -EINVAL;
        }
        if ((r = egress_proxy_new(&eo, &s->egress)) < 0 || (r = setup_egress_probe(s, cmd)) < 0)
            return r;
        log_info("egress: %u connections through the proxy at once; an execution holds at most "
                 "%u, a session %u, a tenant %u",
                 eo.pool, eo.exec_open, eo.session_open, eo.tenant_open);
    }
    return 0;
}

/* The warm pools: the main one, the sessions', the templates' (each started on a thread of its
 * own), and the profiles'. */
static int setup_pools(struct setup *s, const struct setup_opts *o, const char *cmd)
{
    int r = 0;
    /* Each pool's zygote is an interpreter importing what its cells need (the session
     * runtime with asyncio, ~25 ms of imports; jinja2 and jsonschema for templates, ~100 ms),
     * and pool_new() returns once it is ready: the pools start together, each on a thread of
     * its own, while the profiles are set up here. Sessions get a zygote of their own so that
     * a session is ready in a few milliseconds without making every JIT interpreter's fork and
     * exit dearer; so do templates. */
    struct setup_pool_job jobs[] = {
        {.kind = {.size = (unsigned)o->pool_size,
                  .max_size = (unsigned)(o->pool_max ? o->pool_max : 2 * o->pool_size),
                  .zygotes = (unsigned)o->zygotes},
         .ret = &s->pool,
         .what = "warm pool",
         .option = "pool-size"},
        /* Its cells prepare a session while they wait (the event loop, the mcp package), and
         * a session's start is over before its replacement begins (~2 ms: docs/internals/
         * session.md). */
        {.kind = {.size = (unsigned)o->session_pool_size,
                  .zygotes = 1,
                  .extra = "sandboxd_runtime.session",
                  .prepare = "session",
                  .refill_delay_us = 5000},
         .ret = &s->session_pool,
         .what = "session pool",
         .option = "session-pool-size"},
        {.kind = {.size = (unsigned)o->template_pool_size,
                  .zygotes = 1,
                  .extra = "jinja2,jinja2.sandbox,jsonschema,sandboxd_runtime.template"},
         .ret = &s->template_pool,
         .what = "template pool",
         .option = "template-pool-size"},
        /* Executions and sessions with a network policy: each cell in a network namespace of
         * its own with the proxy's listener, and the filter's TCP variant (docs/NETWORK.md). */
        {.kind = {.size = s->jopt.egress ? (unsigned)o->network_pool_size : 0,
                  .max_size = 2 * (unsigned)o->network_pool_size,
                  .zygotes = 1,
                  .extra = "sandboxd_runtime.session",
                  .egress_port = EGRESS_SANDBOX_PORT},
         .ret = &s->network_pool,
         .what = "network pool",
         .option = "network-pool-size"},
    };
    for (size_t i = 0; i < ARRAY_SIZE(jobs); i++) {
        jobs[i].s = s;
        jobs[i].o = o;
        unsigned size = jobs[i].kind.size;
        if (size && pthread_create(&jobs[i].thread, NULL, setup_pool_thread, &jobs[i]) == 0)
            jobs[i].started = true;
        else if (size)
            setup_pool_thread(&jobs[i]); /* no thread to be had: here, in turn */
    }
    struct profiles_options pro = {
        .default_size = (unsigned)o->profile_pool_size,
        .preimport = o->preimport,
        .nproc = o->procs,
        .nofile = JAIL_DEFAULT_NOFILE,
        .max_frame = (size_t)o->max_result_mb << 20,
        .max_memory_mb = o->max_memory,
        /* A network pool of --network-pool-size cells for each profile, started on first use */
        .egress_port = s->jopt.egress ? EGRESS_SANDBOX_PORT : 0,
        .network_size = (unsigned)o->network_pool_size,
    };
    if (s->jopt.cell_lib &&
        (r = profiles_new(&s->jail, o->profiles, o->n_profiles, &pro, &s->profiles)) < 0)
        log_error("%s: the profiles could not be set up", cmd);
    struct pool *unused_pool;
    uint64_t unused_mb;
    if (r == 0 && o->mcp_profile && strcmp(o->mcp_profile, "default") != 0 &&
        profiles_lookup(s->profiles, o->mcp_profile, &unused_pool, &unused_mb) < 0) {
        log_error("%s: --mcp-profile %s: no such profile", cmd, o->mcp_profile);
        r = -EINVAL;
    }
    for (size_t i = 0; i < ARRAY_SIZE(jobs); i++) {
        if (jobs[i].started)
            (void)pthread_join(jobs[i].thread, NULL); /* only fails for an unjoinable thread */
        if (jobs[i].r < 0 && r == 0) {
            log_error("%s: the %s could not start (use --%s 0 to run without)", cmd, jobs[i].what,
                      jobs[i].option);
            r = jobs[i].r;
        }
    }
    return r;
}

/* The MCP servers, the state store, the workspaces and the sessions on top of them. */
static int setup_sessions(struct setup *s, const struct setup_opts *o, const char *cmd)
{
    int r;
    r = setup_mcp_config(o, &s->mcfg);
    if (r < 0)
        return r;
    r = mcp_registry_new(&s->mcfg, &s->mcp);
    if (r < 0)
        return r;
    struct store_options so = setup_store_options(o, s->state_dir);
    if ((r = store_new(&so, 0, &s->store)) < 0) {
        log_error("%s: the state store cannot be used (see above)", cmd);
        return r;
    }
    struct workspace_limits wl = setup_workspace_limits();
    r = workspace_store_new(s->store, &wl, &s->wstore);
    if (r < 0)
        return r;
    s->so = (struct sessions_options){
        .max_sessions = (unsigned)o->max_sessions,
        .default_idle_s = (int64_t)o->session_idle,
        .max_idle_s = (int64_t)o->session_max_idle,
        .default_timeout_ms = (int64_t)o->session_timeout,
        .max_timeout_ms = (int64_t)o->session_max_timeout,
        .default_memory_mb = o->session_memory,
        .max_memory_mb = o->max_memory,
        .nproc = o->procs,
        .output_limit = (size_t)o->output_kb << 10,
        .tool_timeout_ms = (int64_t)o->tool_timeout,
        .interrupt_grace_ms = 2000,
        .id_prefix = o->session_id_prefix,
        .max_frame = (size_t)o->max_result_mb << 20,
        .cpu_budget_ms = o->session_cpu_budget,
        .tool_workers = (unsigned)o->tool_workers,
        .max_tool_calls = (unsigned)o->max_tool_calls,
        .session_tool_calls = (unsigned)o->session_tool_calls,
        .host_cpu_ms = o->session_host_cpu,
        .approval_timeout_ms = (int64_t)o->approval_timeout * 1000,
        .profiles = s->profiles,
        .artifacts = setup_artifact_caps(o),
        .egress = s->egress,
        .network_pool = s->network_pool,
    };
    return sessions_new(&s->so, &s->jail, s->session_pool ? s->session_pool : s->pool, s->mcp,
                        s->wstore, s->metrics, &s->sessions);
}

int setup_start(struct setup *s, const struct setup_opts *o, struct common_opts *common,
                const char *cmd)
{
    *s = (struct setup){0};
    /* Saved tools in the state directory run in sessions: a directory someone else made or can
     * write would run their code with our MCP servers. Checked before anything is built. With
     * --state-store the workspaces are in the database (docs/SECURITY.md says who may write it
     * then) and the state directory keeps this instance's caches only (host discovery, the
     * local copies of kept files): under the same rule, as the first decides what is bound. */
    int r = setup_state(s, o, cmd);
    if (r < 0 || (r = setup_jail(s, o, common, cmd)) < 0)
        return r;
    if (httpc_global_init() < 0) {
        log_error("%s: libcurl initialisation failed", cmd);
        return -EIO;
    }
    s->httpc_ok = true;
    r = metrics_new(&s->metrics);
    if (r < 0 || (r = setup_egress(s, o, cmd)) < 0 || (r = setup_pools(s, o, cmd)) < 0)
        return r;
    return setup_sessions(s, o, cmd);
}

void setup_stop(struct setup *s)
{
    /* Sessions first, and all the threads that use them, then what they use. */
    sessions_free(s->sessions);
    profiles_free(s->profiles);
    egress_proxy_free(s->egress); /* after the sessions: they hold taps */
    pool_free(s->template_pool);
    pool_free(s->network_pool);
    pool_free(s->session_pool);
    pool_free(s->pool);
    workspace_store_free(s->wstore);
    store_free(s->store);
    mcp_registry_free(s->mcp);
    mcp_config_done(&s->mcfg);
    free(s->state_dir);
    free(s->cache_dir);
    metrics_free(s->metrics);
    json_decref(s->isolation);
    if (s->httpc_ok)
        httpc_global_done();
    if (s->jail_ok)
        jail_config_done(&s->jail);
    *s = (struct setup){0};
}
