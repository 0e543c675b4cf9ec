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

#include "cmd/common.h"
#include "egress/policy.h"
#include "jail/jail.h"
#include "exec/artifact.h"
#include "mcp/client/config.h"
#include "pool/profile.h"
#include "session/session.h"

struct pool;
struct egress_proxy;
struct mcp_registry;
struct workspace_store;
struct metrics;

#define SETUP_MAX_MCP_CONFIGS 32 /* --mcp-config given more often is refused */

/* The options of setup; filled by setup_opts_init() and setup_opt(). */
struct setup_opts {
    uint64_t pool_size, zygotes, session_pool_size;
    uint64_t pool_max; /* the main pool grows on misses up to this (0: 2 x pool_size) */
    const char *preimport;
    uint64_t max_memory, output_kb, procs, max_result_mb;
    const char *mcp_configs[SETUP_MAX_MCP_CONFIGS + 1]; /* --mcp-config, NULL-terminated */
    size_t n_mcp_configs;
    const char *state_dir;
    bool no_discovery;
    bool trust_project; /* --mcp-trust-project */
    uint64_t max_sessions, session_idle, session_max_idle, session_timeout, session_max_timeout;
    uint64_t session_memory, tool_timeout;
    uint64_t session_cpu_budget, tool_workers, max_tool_calls, session_tool_calls;
    uint64_t session_host_cpu, workspace_quota;
    /* the MCP server (mcp/server/server.h) of either subcommand */
    const char *mcp_output;        /* "text" or "json" */
    const char *mcp_workspace;     /* workspace of the sessions run_python creates */
    const char *mcp_profile;       /* profile of the sessions run_python creates (NULL: default) */
    uint64_t mcp_page_size;        /* tools per tools/list page */
    const char *session_id_prefix; /* serve's --instance-id (sessions_options.id_prefix) */
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
};

enum {
    SETUP_OPT_POOL = COMMON_OPT_LAST + 100,
    SETUP_OPT_ZYGOTES,
    SETUP_OPT_POOL_MAX,
    SETUP_OPT_PREIMPORT,
    SETUP_OPT_MAX_MEMORY,
    SETUP_OPT_OUTPUT,
    SETUP_OPT_PROCS,
    SETUP_OPT_MCP_CONFIG,
    SETUP_OPT_NO_DISCOVERY,
    SETUP_OPT_STATE_DIR,
    SETUP_OPT_MAX_SESSIONS,
    SETUP_OPT_SESSION_IDLE,
    SETUP_OPT_SESSION_MAX_IDLE,
    SETUP_OPT_SESSION_TIMEOUT,
    SETUP_OPT_SESSION_MAX_TIMEOUT,
    SETUP_OPT_SESSION_MEMORY,
    SETUP_OPT_TOOL_TIMEOUT,
    SETUP_OPT_MCP_OUTPUT,
    SETUP_OPT_MCP_WORKSPACE,
    SETUP_OPT_MCP_PAGE_SIZE,
    SETUP_OPT_SESSION_POOL,
    SETUP_OPT_TRUST_PROJECT,
    SETUP_OPT_MAX_RESULT,
    SETUP_OPT_SESSION_CPU_BUDGET,
    SETUP_OPT_TOOL_WORKERS,
    SETUP_OPT_MAX_TOOL_CALLS,
    SETUP_OPT_SESSION_TOOL_CALLS,
    SETUP_OPT_SESSION_HOST_CPU,
    SETUP_OPT_WORKSPACE_QUOTA,
    SETUP_OPT_PROFILE,
    SETUP_OPT_PROFILE_POOL,
    SETUP_OPT_MAX_ARTIFACTS,
    SETUP_OPT_MAX_ARTIFACTS_MB,
    SETUP_OPT_MCP_PROFILE,
    SETUP_OPT_EGRESS_ALLOW,
    SETUP_OPT_EGRESS_RESOLVE,
    SETUP_OPT_EGRESS_HEADER,
    SETUP_OPT_EGRESS_CA_FILE,
    SETUP_OPT_EGRESS_MAX_MB,
    SETUP_OPT_EGRESS_MAX_CONNECTIONS,
    SETUP_OPT_LAST,
};

#define SETUP_LONG_OPTIONS                                                                         \
    {"pool-size", required_argument, NULL, SETUP_OPT_POOL},                                        \
        {"zygotes", required_argument, NULL, SETUP_OPT_ZYGOTES},                                   \
        {"pool-max", required_argument, NULL, SETUP_OPT_POOL_MAX},                                 \
        {"preimport", required_argument, NULL, SETUP_OPT_PREIMPORT},                               \
        {"max-memory-mb", required_argument, NULL, SETUP_OPT_MAX_MEMORY},                          \
        {"output-limit-kb", required_argument, NULL, SETUP_OPT_OUTPUT},                            \
        {"max-procs", required_argument, NULL, SETUP_OPT_PROCS},                                   \
        {"max-result-mb", required_argument, NULL, SETUP_OPT_MAX_RESULT},                          \
        {"mcp-config", required_argument, NULL, SETUP_OPT_MCP_CONFIG},                             \
        {"no-mcp-discovery", no_argument, NULL, SETUP_OPT_NO_DISCOVERY},                           \
        {"mcp-trust-project", no_argument, NULL, SETUP_OPT_TRUST_PROJECT},                         \
        {"state-dir", required_argument, NULL, SETUP_OPT_STATE_DIR},                               \
        {"max-sessions", required_argument, NULL, SETUP_OPT_MAX_SESSIONS},                         \
        {"session-idle-s", required_argument, NULL, SETUP_OPT_SESSION_IDLE},                       \
        {"session-max-idle-s", required_argument, NULL, SETUP_OPT_SESSION_MAX_IDLE},               \
        {"session-timeout-ms", required_argument, NULL, SETUP_OPT_SESSION_TIMEOUT},                \
        {"session-max-timeout-ms", required_argument, NULL, SETUP_OPT_SESSION_MAX_TIMEOUT},        \
        {"session-memory-mb", required_argument, NULL, SETUP_OPT_SESSION_MEMORY},                  \
        {"tool-timeout-ms", required_argument, NULL, SETUP_OPT_TOOL_TIMEOUT},                      \
        {"session-cpu-budget-ms", required_argument, NULL, SETUP_OPT_SESSION_CPU_BUDGET},          \
        {"tool-workers", required_argument, NULL, SETUP_OPT_TOOL_WORKERS},                         \
        {"max-tool-calls", required_argument, NULL, SETUP_OPT_MAX_TOOL_CALLS},                     \
        {"session-max-tool-calls", required_argument, NULL, SETUP_OPT_SESSION_TOOL_CALLS},         \
        {"session-host-cpu-ms", required_argument, NULL, SETUP_OPT_SESSION_HOST_CPU},              \
        {"workspace-quota-mb", required_argument, NULL, SETUP_OPT_WORKSPACE_QUOTA},                \
        {"mcp-output", required_argument, NULL, SETUP_OPT_MCP_OUTPUT},                             \
        {"mcp-workspace", required_argument, NULL, SETUP_OPT_MCP_WORKSPACE},                       \
        {"session-pool-size", required_argument, NULL, SETUP_OPT_SESSION_POOL},                    \
        {"profile", required_argument, NULL, SETUP_OPT_PROFILE},                                   \
        {"profile-pool-size", required_argument, NULL, SETUP_OPT_PROFILE_POOL},                    \
        {"max-artifacts", required_argument, NULL, SETUP_OPT_MAX_ARTIFACTS},                       \
        {"max-artifacts-mb", required_argument, NULL, SETUP_OPT_MAX_ARTIFACTS_MB},                 \
        {"mcp-profile", required_argument, NULL, SETUP_OPT_MCP_PROFILE},                           \
        {"egress-allow", required_argument, NULL, SETUP_OPT_EGRESS_ALLOW},                         \
        {"egress-resolve", required_argument, NULL, SETUP_OPT_EGRESS_RESOLVE},                     \
        {"egress-header", required_argument, NULL, SETUP_OPT_EGRESS_HEADER},                       \
        {"egress-ca-file", required_argument, NULL, SETUP_OPT_EGRESS_CA_FILE},                     \
        {"egress-max-mb", required_argument, NULL, SETUP_OPT_EGRESS_MAX_MB},                       \
        {"egress-max-connections", required_argument, NULL, SETUP_OPT_EGRESS_MAX_CONNECTIONS},     \
    {                                                                                              \
        "mcp-page-size", required_argument, NULL, SETUP_OPT_MCP_PAGE_SIZE                          \
    }

#define SETUP_HELP_POOL                                                                            \
    "  --pool-size N          warm interpreters kept ready (default 16; 0 disables the pool)\n"    \
    "  --pool-max N           the pool grows on misses (doubling) up to N ready interpreters "     \
    "and\n"                                                                                        \
    "                         shrinks back to --pool-size after 5 s without one (2 x pool-size)\n" \
    "  --zygotes N            processes forking warm interpreters (default 2)\n"                   \
    "  --preimport MODS       comma-separated modules every warm interpreter starts with\n"        \
    "                         (default datetime,math,random)\n"                                    \
    "  --max-memory-mb N      largest memory limit an execution or session may have (2048)\n"      \
    "  --output-limit-kb N    stdout+stderr kept per execution (1024)\n"                           \
    "  --max-procs N          processes/threads per sandbox (64)\n"                                \
    "  --max-result-mb N      largest result (protocol frame) a sandbox may send (64); larger\n"   \
    "                         is INVALID_RESULT\n"                                                 \
    "  --profile NAME=MODS[:size=N][:memory=MB]\n"                                                 \
    "                         a warm pool whose interpreters start with the comma-separated\n"     \
    "                         modules imported, chosen by taskDetails.profile or a session's\n"    \
    "                         profile; started on first use (repeatable; built in when numpy,\n"   \
    "                         pandas and matplotlib are installed: datascience)\n"                 \
    "  --profile-pool-size N  ready interpreters per profile (2)\n"                                \
    "  --max-artifacts N      figures, displayed objects and collected files returned per\n"       \
    "                         execution (32)\n"                                                    \
    "  --max-artifacts-mb N   bytes of them per execution (16)\n"

#define SETUP_HELP_SESSIONS                                                                        \
    "Sessions and MCP servers:\n"                                                                  \
    "  --mcp-config FILE      MCP servers, Claude Desktop format ({\"mcpServers\": {...}});\n"     \
    "                         repeatable, a later file wins for a name it defines again\n"         \
    "  --no-mcp-discovery     read only --mcp-config: not ~/MCPs, $MCP_SERVERS_CONFIG, nor the\n"  \
    "                         files of Claude, Cursor, Windsurf, VS Code, Gemini CLI, Codex,\n"    \
    "                         OpenCode, Antigravity (docs/SESSIONS.md lists them)\n"               \
    "  --mcp-trust-project    also start servers of the current directory's files (./.mcp,\n"      \
    "                         ./mcp-servers, ./.vscode/mcp.json, ./*_config.json; default:\n"      \
    "                         only when it is listed in ~/.config/sandboxd/trusted-projects);\n"   \
    "                         `sandboxd servers` shows what was found and skipped\n"               \
    "  --state-dir DIR        workspaces (memories, saved tools, files); default\n"                \
    "                         $XDG_STATE_HOME/sandboxd, ~/.local/state/sandboxd,\n"                \
    "                         $XDG_RUNTIME_DIR/sandboxd; it must be ours and private\n"            \
    "  --max-sessions N       live sessions at most (64); more is 503\n"                           \
    "  --session-pool-size N  session interpreters kept ready, with asyncio and the session\n"     \
    "                         runtime imported, by a zygote of their own (2; 0: sessions\n"        \
    "                         take interpreters from the main pool and import on start)\n"         \
    "  --session-idle-s N     idle sessions are ended after N s (600; a session may ask for\n"     \
    "                         up to --session-max-idle-s, 86400)\n"                                \
    "  --session-timeout-ms N default / --session-max-timeout-ms N largest time limit of one\n"    \
    "                         session execution (30000 / 600000)\n"                                \
    "  --session-memory-mb N  memory of a session (512; at most --max-memory-mb)\n"                \
    "  --tool-timeout-ms N    one MCP tool call made from a session (60000)\n"                     \
    "  --tool-workers N       threads running sessions' tool calls, all sessions together (16)\n"  \
    "  --max-tool-calls N     tool calls queued or running, all sessions together (1024)\n"        \
    "  --session-max-tool-calls N  tool calls one session may have queued or running (64);\n"      \
    "                         more are refused at once (MCPError)\n"                               \
    "  --session-cpu-budget-ms N  CPU time what an execution leaves running may use before\n"      \
    "                         the session is stopped until its next execution (2000)\n"            \
    "  --session-host-cpu-ms N  sandboxd CPU time one execution's memory/tool/file calls may\n"    \
    "                         use (5000); later calls of that execution are refused\n"             \
    "  --workspace-quota-mb N bytes a workspace may hold: memories, tools and files (64)\n"        \
    "\n"                                                                                           \
    "sandboxd as an MCP server (docs/MCP.md):\n"                                                   \
    "  --mcp-output MODE      text (compact, default) or json: how tool results are written\n"     \
    "                         (run_python's \"output\" argument overrides it per call)\n"          \
    "  --mcp-workspace NAME   workspace of the sessions run_python creates (default)\n"            \
    "  --mcp-profile NAME     profile of the sessions run_python creates (e.g. datascience:\n"     \
    "                         numpy, pandas and matplotlib already imported; default: none)\n"     \
    "  --mcp-page-size N      tools per tools/list page (100)\n"                                   \
    "\n"                                                                                           \
    "Network egress (docs/NETWORK.md; without --egress-allow sandboxes have no network):\n"        \
    "  --egress-allow PATTERN the most an execution or session may ask to reach (repeatable):\n"   \
    "                         host, host:port, *.domain, *.domain:port, an IP (brackets for\n"     \
    "                         IPv6); without a port: 80 and 443\n"                                 \
    "  --egress-resolve HOST:PORT:ADDR  resolve HOST:PORT to ADDR, which may then be private\n"    \
    "                         (repeatable; like curl --resolve)\n"                                 \
    "  --egress-header HOST=Name: value  add this header to plain-HTTP requests for HOST at\n"     \
    "                         the proxy, so a secret never enters the sandbox (repeatable)\n"      \
    "  --egress-ca-file FILE  PEM certificates sandboxes trust besides the host's\n"               \
    "  --egress-max-mb N      bytes up and down per execution, in MiB (256)\n"                     \
    "  --egress-max-connections N  proxied connections per execution (64)\n"

/* Defaults. */
void setup_opts_init(struct setup_opts *o);
/* 1 when opt was a setup option (consumed), 0 when not, -1 on a bad value (printed). */
int setup_opt(struct setup_opts *o, int opt, const char *arg);
/* Reconcile related limits once every option is read: a maximum below a default lowers the
 * default. */
void setup_opts_finish(struct setup_opts *o);
/* Free what the options own (the parsed profiles). */
void setup_opts_done(struct setup_opts *o);
/* The artifact caps the options give. */
struct artifact_caps setup_artifact_caps(const struct setup_opts *o);

/* Everything setup_start() built; owned by the struct. */
struct setup {
    struct jail_options jopt;
    struct jail_config jail;
    json_t *isolation; /* jail_describe() plus the self-test's findings */
    struct metrics *metrics;
    struct pool *pool;         /* NULL with --pool-size 0 */
    struct pool *session_pool; /* NULL with --session-pool-size 0: sessions use pool */
    struct profiles *profiles; /* --profile and the built-in ones (pools started on use) */
    struct mcp_config mcfg;
    struct mcp_registry *mcp;
    char *state_dir;
    struct workspace_store *wstore;
    struct egress_proxy *egress; /* NULL without --egress-allow */
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
/* The state directory: opt (--state-dir) when given, else $XDG_STATE_HOME/sandboxd,
 * ~/.local/state/sandboxd, /var/lib/sandboxd (root), $XDG_RUNTIME_DIR/sandboxd,
 * /tmp/sandboxd-<uid>. Caller frees; NULL when out of memory. Not checked: trust_make_dir(). */
char *setup_state_dir(const char *opt);

/* Build everything in order, logging what fails with the name of cmd ("serve", "mcp"); common
 * is borrowed and must outlive *s. The state directory comes first, and must be ours (see
 * util/trust.h). 0, or -errno with *s partly built (call setup_stop()). */
int setup_start(struct setup *s, const struct setup_opts *o, struct common_opts *common,
                const char *cmd);
/* A warm pool of size cells from zygotes zygotes that import --preimport plus extra
 * (comma-separated, may be NULL) before forking; after setup_start() built the jail. */
int setup_pool(struct setup *s, const struct setup_opts *o, unsigned size, unsigned max_size,
               unsigned zygotes, const char *extra, struct pool **ret);
/* Tear down in reverse order; safe on a zeroed or partly built struct. */
void setup_stop(struct setup *s);

#endif
