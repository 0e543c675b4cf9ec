// SPDX-License-Identifier: MIT
/*
 * setup — what `sandboxd serve` and `sandboxd mcp` both build before they
 * answer anyone: the jail configuration proven by the isolation self-test,
 * libcurl, metrics, the warm pool, the configured MCP servers, the
 * workspace store and the sessions on top of them; plus the command-line
 * options that shape these, so that both subcommands spell them the same
 * way. Torn down in reverse order by setup_stop().
 */
#ifndef SANDBOXD_CMD_SETUP_H
#define SANDBOXD_CMD_SETUP_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "handlers/app.h"
#include "cmd/common.h"
#include "egress/policy.h"
#include "egress/proxy.h"
#include "jail/jail.h"
#include "exec/artifact.h"
#include "mcpserver/server.h"
#include "mcpclient/config.h"
#include "pool/profile.h"
#include "session/session.h"
#include "session/workspace.h"
#include "store/store.h"

struct pool;
struct egress_proxy;
struct mcp_registry;
struct workspace_store;
struct metrics;

#define SETUP_MAX_MCP_CONFIGS      32  /* --mcp-config given more often is refused */
#define SETUP_MAX_APPROVALS        256 /* --approval rules */
#define SETUP_PREIMPORT_DEFAULT    "datetime,math,random" /* --preimport */
#define SETUP_SESSION_POOL_DEFAULT 2 /* --session-pool-size, which mcp's --help names too */

/* The options of setup; filled by setup_opts_init() and setup_opt(). */
struct setup_opts {
    uint64_t pool_size, zygotes, session_pool_size;
    uint64_t pool_max; /* the main pool grows on misses up to this (0: 2 x pool_size) */
    const char *preimport;
    uint64_t max_memory, output_kb, procs, max_result_mb;
    const char *mcp_configs[SETUP_MAX_MCP_CONFIGS + 1]; /* --mcp-config, NULL-terminated */
    size_t n_mcp_configs;
    const char *approvals[SETUP_MAX_APPROVALS + 1]; /* --approval, NULL-terminated */
    size_t n_approvals;
    uint64_t approval_timeout; /* --approval-timeout-s */
    const char *state_dir;
    const char *state_store;          /* --state-store, else $SANDBOXD_STATE_STORE; NULL: dir */
    const char *state_store_password; /* --state-store-password-file */
    uint64_t store_connections, store_timeout;
    bool no_discovery;
    bool trust_project; /* --mcp-trust-project */
    uint64_t max_sessions, session_idle, session_max_idle, session_timeout, session_max_timeout;
    uint64_t session_memory, tool_timeout;
    uint64_t session_cpu_budget, tool_workers, max_tool_calls, session_tool_calls;
    uint64_t session_host_cpu, workspace_quota;
    uint64_t tenant_quota; /* serve's --tenant-quota-mb (0: 4 x workspace_quota) */
    /* the MCP server (mcpserver/server.h) of either subcommand */
    const char *mcp_output;        /* "text" or "json" */
    const char *mcp_tools;         /* "lean" or "full" */
    const char *mcp_workspace;     /* workspace of the sessions run_python creates */
    const char *mcp_profile;       /* profile of the sessions run_python creates (NULL: default) */
    uint64_t mcp_page_size;        /* tools per tools/list page */
    const char *session_id_prefix; /* serve's --instance-id (sessions_options.id_prefix) */
    uint64_t template_pool_size;   /* serve's --template-pool-size (0: no template pool) */
    /* data work (CONTRACT §12) */
    struct profile_spec profiles[PROFILE_MAX]; /* --profile, owned (setup_opts_done) */
    size_t n_profiles;
    uint64_t profile_pool_size;
    uint64_t max_artifacts, max_artifacts_mb;
    /* egress (docs/NETWORK.md): NULL-terminated lists of the repeatable options */
    const char *egress_allow[EGRESS_CEILING_MAX + 1];
    const char *egress_resolve[EGRESS_CEILING_MAX + 1];
    const char *egress_header[EGRESS_CEILING_MAX + 1];
    size_t n_egress_allow, n_egress_resolve, n_egress_header;
    const char *egress_ca_file;
    uint64_t egress_max_mb, egress_max_connections;
    /* the proxy's shares (0: sized by egress_shares_size from max_sessions and executions) */
    uint64_t egress_pool, egress_max_open, egress_session_max_open, egress_tenant_connections;
    uint64_t executions; /* serve's --max-running: executions that may hold proxy connections */
    uint64_t network_pool_size; /* --network-pool-size: the network pool (with --egress-allow) */
};

/*
 * The tables of the setup options (shared by serve and mcp), one row per option, from which the
 * enum (SETUP_OPT_<ID>), the getopt entries (SETUP_LONG_OPTIONS), the defaults (setup_opts_init(),
 * SETUP_DEFAULT_<ID>), the range checks of the numeric ones (in setup_opt()) and the lines of
 * --help (SETUP_HELP_POOL, SETUP_HELP_SESSIONS) are generated, as in cmd/common.h:
 *   X(ID, "name", has_arg, help)           setup_opt() handles it by hand
 *   N(ID, "name", min, max, field, def, before, after)
 *                                          a decimal in [min, max] into setup_opts.field, def
 *                                          when not given; --help: before, def, after
 *   Z(ID, "name", min, max, field, help)   the same, 0 when not given (a default that follows
 *                                          from other options, as help says)
 *   H(text)                                a heading of --help, no option
 * A row's lines may end mid-line where the next row's default follows (--session-idle-s and
 * --session-max-idle-s share their lines).
 */
#define SETUP_POOL_OPTIONS(X, N, Z, H)                                                             \
    N(POOL, "pool-size", 0, 4096, pool_size, 16,                                                   \
      "  --pool-size N          warm interpreters kept ready (default ",                           \
      "; 0 disables the pool)\n")                                                                  \
    Z(POOL_MAX, "pool-max", 1, 4096, pool_max,                                                     \
      "  --pool-max N           the pool grows on misses (doubling) up to N ready interpreters "   \
      "and\n                         shrinks back to --pool-size after 5 s without one (2 x "      \
      "pool-size)\n")                                                                              \
    N(ZYGOTES, "zygotes", 1, 64, zygotes, 2,                                                       \
      "  --zygotes N            processes forking warm interpreters (default ", ")\n")             \
    X(PREIMPORT, "preimport", required_argument,                                                   \
      "  --preimport MODS       comma-separated modules every warm interpreter starts with\n"      \
      "                         (default " SETUP_PREIMPORT_DEFAULT ")\n")                          \
    N(MAX_MEMORY, "max-memory-mb", 16, 1 << 20, max_memory, 2048,                                  \
      "  --max-memory-mb N      largest memory limit an execution or session may have (", ")\n")   \
    N(OUTPUT, "output-limit-kb", 1, 1 << 20, output_kb, APP_DEFAULT_OUTPUT_KB,                     \
      "  --output-limit-kb N    stdout+stderr kept per execution (", ")\n")                        \
    N(PROCS, "max-procs", 1, 1 << 20, procs, JAIL_DEFAULT_NPROC,                                   \
      "  --max-procs N          processes/threads per sandbox (", ")\n")                           \
    N(MAX_RESULT, "max-result-mb", 1, 1024, max_result_mb, 64,                                     \
      "  --max-result-mb N      largest result (protocol frame) a sandbox may send (",             \
      "); larger\n                         is INVALID_RESULT\n")                                   \
    X(PROFILE, "profile", required_argument,                                                       \
      "  --profile NAME=MODS[:size=N][:memory=MB]\n"                                               \
      "                         a warm pool whose interpreters start with the comma-separated\n"   \
      "                         modules imported, chosen by taskDetails.profile or a session's\n"  \
      "                         profile; started on first use (repeatable; built in when numpy,\n" \
      "                         pandas and matplotlib are installed: datascience)\n")              \
    N(PROFILE_POOL, "profile-pool-size", 1, 1024, profile_pool_size, 2,                            \
      "  --profile-pool-size N  ready interpreters per profile (", ")\n")                          \
    N(MAX_ARTIFACTS, "max-artifacts", 0, 1024, max_artifacts, ARTIFACT_DEFAULT_COUNT,              \
      "  --max-artifacts N      figures, displayed objects and collected files returned per\n    " \
      "                     execution (",                                                          \
      ")\n")                                                                                       \
    N(MAX_ARTIFACTS_MB, "max-artifacts-mb", 0, 1024, max_artifacts_mb, ARTIFACT_DEFAULT_MB,        \
      "  --max-artifacts-mb N   bytes of them per execution (", ")\n")

#define SETUP_SESSION_OPTIONS(X, N, Z, H)                                                          \
    H("Sessions and MCP servers:\n")                                                               \
    X(MCP_CONFIG, "mcp-config", required_argument,                                                 \
      "  --mcp-config FILE      MCP servers, Claude Desktop format ({\"mcpServers\": {...}});\n"   \
      "                         repeatable, a later file wins for a name it defines again\n")      \
    X(NO_DISCOVERY, "no-mcp-discovery", no_argument,                                               \
      "  --no-mcp-discovery     read only --mcp-config: not ~/MCPs, $MCP_SERVERS_CONFIG, nor "     \
      "the\n"                                                                                      \
      "                         files of Claude, Cursor, Windsurf, VS Code, Gemini CLI, Codex,\n"  \
      "                         OpenCode, Antigravity (docs/SESSIONS.md lists them)\n")            \
    X(TRUST_PROJECT, "mcp-trust-project", no_argument,                                             \
      "  --mcp-trust-project    also start servers of the current directory's files (./.mcp,\n"    \
      "                         ./mcp-servers, ./.vscode/mcp.json, ./*_config.json; default:\n"    \
      "                         only when it is listed in ~/.config/sandboxd/trusted-projects);\n" \
      "                         `sandboxd servers` shows what was found and skipped\n")            \
    X(STATE_DIR, "state-dir", required_argument,                                                   \
      "  --state-dir DIR        workspaces (memories, saved tools, files, kept files) and the\n"   \
      "                         local framework's runtime values (with --state-store: only\n"      \
      "                         this instance's caches); default $XDG_STATE_HOME/sandboxd,\n"      \
      "                         ~/.local/state/sandboxd, $XDG_RUNTIME_DIR/sandboxd; it must be\n"  \
      "                         ours and private\n")                                               \
    X(STATE_STORE, "state-store", required_argument,                                               \
      "  --state-store URL      keep them in PostgreSQL instead, shared by every instance that\n"  \
      "                         names it (a libpq connection string, postgresql://...; or\n"       \
      "                         $SANDBOXD_STATE_STORE); the password from PGPASSWORD, a "          \
      "passfile\n"                                                                                 \
      "                         or --state-store-password-file, never in the URL\n")               \
    X(STATE_STORE_PASSWORD, "state-store-password-file", required_argument,                        \
      "  --state-store-password-file FILE  the database password: the file's first line\n")        \
    N(STATE_STORE_CONNS, "state-store-connections", 1, STORE_MAX_CONNECTS, store_connections,      \
      STORE_CONNECTIONS, "  --state-store-connections N  connections to the database at most (",   \
      ")\n")                                                                                       \
    N(STATE_STORE_TIMEOUT, "state-store-timeout-ms", 100, 600000, store_timeout, STORE_TIMEOUT_MS, \
      "  --state-store-timeout-ms N  one statement, or a wait for a connection, at most (",        \
      ");\n                         past it the call fails with STORE_UNAVAILABLE\n")              \
    N(MAX_SESSIONS, "max-sessions", 0, 1 << 20, max_sessions, 64,                                  \
      "  --max-sessions N       live sessions at most (", "); more is 503\n")                      \
    N(SESSION_POOL, "session-pool-size", 0, 1024, session_pool_size, SETUP_SESSION_POOL_DEFAULT,   \
      "  --session-pool-size N  session interpreters kept ready, with asyncio and the session\n  " \
      "                       runtime imported, by a zygote of their own (",                       \
      "; 0: sessions\n                         take interpreters from the main pool and import "   \
      "on start)\n")                                                                               \
    N(SESSION_IDLE, "session-idle-s", 1, 86400 * 365, session_idle, 600,                           \
      "  --session-idle-s N     idle sessions are ended after N s (",                              \
      "; a session may ask for\n                         up to --session-max-idle-s, ")            \
    N(SESSION_MAX_IDLE, "session-max-idle-s", 1, 86400 * 365, session_max_idle, 86400, "", ")\n")  \
    N(SESSION_TIMEOUT, "session-timeout-ms", 1, 86400000, session_timeout, 30000,                  \
      "  --session-timeout-ms N default / --session-max-timeout-ms N largest time limit of one\n " \
      "                        session execution (",                                               \
      " / ")                                                                                       \
    N(SESSION_MAX_TIMEOUT, "session-max-timeout-ms", 1, 86400000, session_max_timeout, 600000, "", \
      ")\n")                                                                                       \
    N(SESSION_MEMORY, "session-memory-mb", 16, 1 << 20, session_memory, 512,                       \
      "  --session-memory-mb N  memory of a session (", "; at most --max-memory-mb)\n")            \
    N(TOOL_TIMEOUT, "tool-timeout-ms", 1, 86400000, tool_timeout, 60000,                           \
      "  --tool-timeout-ms N    one MCP tool call made from a session (", ")\n")                   \
    N(TOOL_WORKERS, "tool-workers", 1, 1024, tool_workers, 16,                                     \
      "  --tool-workers N       threads running sessions' tool calls, all sessions together (",    \
      ")\n")                                                                                       \
    N(MAX_TOOL_CALLS, "max-tool-calls", 1, 1 << 20, max_tool_calls, 1024,                          \
      "  --max-tool-calls N     tool calls queued or running, all sessions together (", ")\n")     \
    N(SESSION_TOOL_CALLS, "session-max-tool-calls", 1, 1 << 16, session_tool_calls, 64,            \
      "  --session-max-tool-calls N  tool calls one session may have queued or running (",         \
      ");\n                         more are refused at once (MCPError)\n")                        \
    N(SESSION_CPU_BUDGET, "session-cpu-budget-ms", 0, 3600000, session_cpu_budget, 2000,           \
      "  --session-cpu-budget-ms N  CPU time what an execution leaves running may use before\n   " \
      "                      the session is stopped until its next execution (",                   \
      ")\n")                                                                                       \
    N(SESSION_HOST_CPU, "session-host-cpu-ms", 1, 3600000, session_host_cpu, 5000,                 \
      "  --session-host-cpu-ms N  sandboxd CPU time one execution's memory/tool/file calls may\n " \
      "                        use (",                                                             \
      "); later calls of that execution are refused\n")                                            \
    N(WORKSPACE_QUOTA, "workspace-quota-mb", 1, 1 << 20, workspace_quota, 64,                      \
      "  --workspace-quota-mb N bytes a workspace may hold: memories, tools and files (", ")\n")   \
    X(APPROVAL, "approval", required_argument,                                                     \
      "  --approval SERVER.TOOL=POLICY  who decides a tool call made from code: auto (it goes),\n" \
      "                         ask (a person: GET/POST /v1/sessions/ID/approvals, or MCP\n"       \
      "                         elicitation), deny (ApprovalDenied); SERVER.* for all its "        \
      "tools;\n"                                                                                   \
      "                         repeatable, before a config entry's \"approvals\" (auto)\n")       \
    N(APPROVAL_TIMEOUT, "approval-timeout-s", 1, 86400, approval_timeout, 300,                     \
      "  --approval-timeout-s N a call waits this long for its decision, then ApprovalDenied\n   " \
      "                      (",                                                                   \
      "; the wait does not count against the time limit)\n")                                       \
    H("\nsandboxd as an MCP server (docs/MCP.md):\n")                                              \
    X(MCP_TOOLS, "mcp-tools", required_argument,                                                   \
      "  --mcp-tools SURFACE    lean (default): run_python alone (and approve_call with\n"         \
      "                         approvals), discovery inside the sandbox; full: list_servers,\n"   \
      "                         search_tool_docs and reset_session as MCP tools too\n")            \
    X(MCP_OUTPUT, "mcp-output", required_argument,                                                 \
      "  --mcp-output MODE      text (compact, default) or json: how tool results are written\n"   \
      "                         (run_python's \"output\" argument overrides it per call)\n")       \
    X(MCP_WORKSPACE, "mcp-workspace", required_argument,                                           \
      "  --mcp-workspace NAME   workspace of the sessions run_python creates "                     \
      "(" SESSION_WORKSPACE_DEFAULT ")\n")                                                         \
    X(MCP_PROFILE, "mcp-profile", required_argument,                                               \
      "  --mcp-profile NAME     profile of the sessions run_python creates (e.g. datascience:\n"   \
      "                         numpy, pandas and matplotlib already imported; default: none)\n")  \
    N(MCP_PAGE_SIZE, "mcp-page-size", 1, 1000, mcp_page_size, MCP_SERVER_PAGE_SIZE_DEFAULT,        \
      "  --mcp-page-size N      tools per tools/list page (", ")\n")                               \
    H("\nNetwork egress (docs/NETWORK.md; without --egress-allow sandboxes have no network):\n")   \
    X(EGRESS_ALLOW, "egress-allow", required_argument,                                             \
      "  --egress-allow PATTERN the most an execution or session may ask to reach (repeatable):\n" \
      "                         host, host:port, *.domain, *.domain:port, an IP (brackets for\n"   \
      "                         IPv6); without a port: 80 and 443\n")                              \
    X(EGRESS_RESOLVE, "egress-resolve", required_argument,                                         \
      "  --egress-resolve HOST:PORT:ADDR  resolve HOST:PORT to ADDR, which may then be private\n"  \
      "                         (repeatable; like curl --resolve)\n")                              \
    X(EGRESS_HEADER, "egress-header", required_argument,                                           \
      "  --egress-header HOST=Name: value  add this header to plain-HTTP requests for HOST at\n"   \
      "                         the proxy, so a secret never enters the sandbox (repeatable)\n")   \
    X(EGRESS_CA_FILE, "egress-ca-file", required_argument,                                         \
      "  --egress-ca-file FILE  PEM certificates sandboxes trust besides the host's\n")            \
    N(NETWORK_POOL, "network-pool-size", 0, 1024, network_pool_size, 2,                            \
      "  --network-pool-size N  interpreters kept ready for executions and sessions with a\n"      \
      "                         network policy, each in a network namespace of its own; as\n"      \
      "                         many for each profile, started on its first such use (",           \
      "; 0:\n                         each of them starts a fresh sandbox, ~15 x slower)\n")       \
    N(EGRESS_MAX_MB, "egress-max-mb", 1, 1 << 20, egress_max_mb, 256,                              \
      "  --egress-max-mb N      bytes up and down per execution, in MiB (", ")\n")                 \
    N(EGRESS_MAX_CONNECTIONS, "egress-max-connections", 1, 4096, egress_max_connections, 64,       \
      "  --egress-max-connections N  proxied connections per execution (", ")\n")                  \
    N(EGRESS_POOL, "egress-pool", 16, 65536, egress_pool, EGRESS_POOL_DEFAULT,                     \
      "  --egress-pool N        connections through the proxy at once, everyone together (",       \
      ";\n                         two descriptors each); sessions and executions may hold "       \
      "half\n                         each\n")                                                     \
    Z(EGRESS_MAX_OPEN, "egress-max-open", 1, 65536, egress_max_open,                               \
      "  --egress-max-open N    connections one execution holds through the proxy at once\n      " \
      "                   (" COMMON_STR(                                                           \
          EGRESS_EXEC_OPEN_DEFAULT) ", at most half the pool over the executions running at\n    " \
                                    "                     once); more: 429\n")                     \
    Z(EGRESS_SESSION_MAX_OPEN, "egress-session-max-open", 1, 65536, egress_session_max_open,       \
      "  --egress-session-max-open N  the same for a session, its executions and what they\n     " \
      "                    leave running together (" COMMON_STR(                                   \
          EGRESS_SESSION_OPEN_DEFAULT) ", at most half the pool /\n                         "      \
                                       "--max-sessions)\n")                                        \
    Z(EGRESS_TENANT_CONNECTIONS, "egress-tenant-connections", 1, 65536, egress_tenant_connections, \
      "  --egress-tenant-connections N  a tenant's share: connections of all its executions\n    " \
      "                     and sessions at once (a quarter of the pool; the tenants file's\n    " \
      "                     egressConnections sets one tenant's)\n")

#define SETUP_OPTIONS(X, N, Z, H) SETUP_POOL_OPTIONS(X, N, Z, H) SETUP_SESSION_OPTIONS(X, N, Z, H)

#define SETUP_OPT_ENUM_X_(id, name, has_arg, help)                       SETUP_OPT_##id,
#define SETUP_OPT_ENUM_N_(id, name, min, max, field, def, before, after) SETUP_OPT_##id,
#define SETUP_OPT_ENUM_Z_(id, name, min, max, field, help)               SETUP_OPT_##id,
#define SETUP_OPT_NONE_H_(text)
enum {
    SETUP_OPT_FIRST_ = COMMON_OPT_LAST + 99,
    SETUP_OPTIONS(SETUP_OPT_ENUM_X_, SETUP_OPT_ENUM_N_, SETUP_OPT_ENUM_Z_, SETUP_OPT_NONE_H_)
        SETUP_OPT_LAST,
};

/* SETUP_DEFAULT_<ID>, SETUP_MIN_<ID>, SETUP_MAX_<ID>: the default and range of a numeric option,
 * for code that needs them elsewhere (the compat variables of cmd/compat.c). */
#define SETUP_OPT_NONE_X_(id, name, has_arg, help)
#define SETUP_OPT_RANGE_Z_(id, name, min, max, field, help)                                        \
    SETUP_MIN_##id = min, SETUP_MAX_##id = max,
#define SETUP_OPT_RANGE_N_(id, name, min, max, field, def, before, after)                          \
    SETUP_OPT_RANGE_Z_(id, name, min, max, field, before) SETUP_DEFAULT_##id = def,
enum {
    SETUP_OPTIONS(SETUP_OPT_NONE_X_, SETUP_OPT_RANGE_N_, SETUP_OPT_RANGE_Z_, SETUP_OPT_NONE_H_)
};

/* The getopt entries, each followed by a comma (after COMMON_LONG_OPTIONS in an array). */
#define SETUP_OPT_LONG_X_(id, name, has_arg, help) {name, has_arg, NULL, SETUP_OPT_##id},
#define SETUP_OPT_LONG_N_(id, name, min, max, field, def, before, after)                           \
    {name, required_argument, NULL, SETUP_OPT_##id},
#define SETUP_OPT_LONG_Z_(id, name, min, max, field, help)                                         \
    {name, required_argument, NULL, SETUP_OPT_##id},
#define SETUP_LONG_OPTIONS                                                                         \
    SETUP_OPTIONS(SETUP_OPT_LONG_X_, SETUP_OPT_LONG_N_, SETUP_OPT_LONG_Z_, SETUP_OPT_NONE_H_)

#define SETUP_OPT_HELP_X_(id, name, has_arg, help) help
#define SETUP_OPT_HELP_N_(id, name, min, max, field, def, before, after)                           \
    before COMMON_STR(def) after
#define SETUP_OPT_HELP_Z_(id, name, min, max, field, help) help
#define SETUP_OPT_HELP_H_(text)                            text
#define SETUP_HELP_POOL                                                                            \
    SETUP_POOL_OPTIONS(SETUP_OPT_HELP_X_, SETUP_OPT_HELP_N_, SETUP_OPT_HELP_Z_, SETUP_OPT_HELP_H_)
#define SETUP_HELP_SESSIONS                                                                        \
    SETUP_SESSION_OPTIONS(SETUP_OPT_HELP_X_, SETUP_OPT_HELP_N_, SETUP_OPT_HELP_Z_,                 \
                          SETUP_OPT_HELP_H_)

/* The defaults: the numeric rows' and the few others of setup.c, the rest zero (not given). */
void setup_opts_init(struct setup_opts *o);
/* The store's options that o gives (limits included); state_dir: the state directory. */
struct store_options setup_store_options(const struct setup_opts *o, const char *state_dir);
/* 1 when opt was a setup option (consumed), 0 when not, -1 on a bad value (printed). */
int setup_opt(struct setup_opts *o, int opt, const char *arg);
/* Reconcile related limits once every option is read: a maximum below a default lowers the
 * default. */
void setup_opts_finish(struct setup_opts *o);
/* Free what the options own (the parsed profiles). */
void setup_opts_done(struct setup_opts *o);
/* The artifact caps the options give. */
struct artifact_caps setup_artifact_caps(const struct setup_opts *o);
/* The caps on one item of a workspace (a memory's value, a file), written here alone: the store's
 * limits (setup_store_options(), with the quotas the options give) and every workspace store
 * (serve, mcp, cmd/migrate.c) take them from here. */
struct workspace_limits setup_workspace_limits(void);

/* Everything setup_start() built; owned by the struct. */
struct setup {
    struct jail_options jopt;
    struct jail_config jail;
    json_t *isolation; /* jail_describe() plus the self-test's findings */
    struct metrics *metrics;
    struct pool *pool;          /* NULL with --pool-size 0 */
    struct pool *session_pool;  /* NULL with --session-pool-size 0: sessions use pool */
    struct pool *template_pool; /* serve's; NULL with --template-pool-size 0 (or for mcp) */
    struct pool *network_pool;  /* NULL without --egress-allow or with --network-pool-size 0 */
    struct profiles *profiles;  /* --profile and the built-in ones (pools started on use) */
    struct mcp_config mcfg;
    struct mcp_registry *mcp;
    char *state_dir;
    char *cache_dir;                /* host discovery's (jail_options.cache_dir); NULL: none */
    struct store *store;            /* workspaces and runtime values (store/store.h) */
    struct workspace_store *wstore; /* sessions' view of them */
    struct egress_proxy *egress;    /* NULL without --egress-allow */
    struct sessions_options so;
    struct sessions *sessions;
    bool jail_ok, httpc_ok;
};

/* The MCP configuration the options name (--mcp-config, discovery from the current directory
 * and $HOME, --mcp-trust-project and the trusted project list, see setup_trust_file()); what
 * setup_start() loads, and what `sandboxd servers` shows. */
int setup_mcp_config(const struct setup_opts *o, struct mcp_config *ret);
/* The list of trusted project directories: $XDG_CONFIG_HOME/sandboxd/trusted-projects, else
 * ~/.config/sandboxd/trusted-projects (caller frees; NULL without either variable). */
char *setup_trust_file(void);

/* Build everything in order, logging what fails with the name of cmd ("serve", "mcp"); common
 * is borrowed and must outlive *s. The state directory comes first, and must be ours (see
 * util/trust.h); the pools start together, each on a thread of its own. 0, or -errno with *s
 * partly built (call setup_stop()). */
int setup_start(struct setup *s, const struct setup_opts *o, struct common_opts *common,
                const char *cmd);
/* What kind of warm pool setup_pool() starts. */
struct setup_pool_kind {
    unsigned size, max_size, zygotes; /* pool_options' */
    const char *extra;    /* modules imported besides --preimport (comma-separated, may be NULL) */
    const char *prepare;  /* pool_options.prepare (NULL: none) */
    uint16_t egress_port; /* pool_options.egress_port (0: cells without a network) */
    int64_t refill_delay_us; /* pool_options.refill_delay_us */
};
/* A warm pool of that kind; after setup_start() built the jail. */
int setup_pool(struct setup *s, const struct setup_opts *o, const struct setup_pool_kind *k,
               struct pool **ret);
/* Tear down in reverse order; safe on a zeroed or partly built struct. */
void setup_stop(struct setup *s);

#endif
