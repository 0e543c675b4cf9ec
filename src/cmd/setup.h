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
#include "mcp/config.h"
#include "session/session.h"

struct pool;
struct egress_proxy;
struct mcp_registry;
struct workspace_store;
struct metrics;

/* The options of setup; filled by setup_opts_init() and setup_opt(). */
struct setup_opts {
    uint64_t pool_size, zygotes, session_pool_size;
    const char *preimport;
    uint64_t max_memory, output_kb, procs;
    const char *mcp_config;
    const char *state_dir;
    bool no_discovery;
    uint64_t max_sessions, session_idle, session_max_idle, session_timeout, session_max_timeout;
    uint64_t session_memory, tool_timeout;
    /* the MCP server (mcp/server.h) of either subcommand */
    const char *mcp_output;        /* "text" or "json" */
    const char *mcp_workspace;     /* workspace of the sessions run_python creates */
    uint64_t mcp_page_size;        /* tools per tools/list page */
    const char *session_id_prefix; /* serve's --instance-id (sessions_options.id_prefix) */
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
        {"preimport", required_argument, NULL, SETUP_OPT_PREIMPORT},                               \
        {"max-memory-mb", required_argument, NULL, SETUP_OPT_MAX_MEMORY},                          \
        {"output-limit-kb", required_argument, NULL, SETUP_OPT_OUTPUT},                            \
        {"max-procs", required_argument, NULL, SETUP_OPT_PROCS},                                   \
        {"mcp-config", required_argument, NULL, SETUP_OPT_MCP_CONFIG},                             \
        {"no-mcp-discovery", no_argument, NULL, SETUP_OPT_NO_DISCOVERY},                           \
        {"state-dir", required_argument, NULL, SETUP_OPT_STATE_DIR},                               \
        {"max-sessions", required_argument, NULL, SETUP_OPT_MAX_SESSIONS},                         \
        {"session-idle-s", required_argument, NULL, SETUP_OPT_SESSION_IDLE},                       \
        {"session-max-idle-s", required_argument, NULL, SETUP_OPT_SESSION_MAX_IDLE},               \
        {"session-timeout-ms", required_argument, NULL, SETUP_OPT_SESSION_TIMEOUT},                \
        {"session-max-timeout-ms", required_argument, NULL, SETUP_OPT_SESSION_MAX_TIMEOUT},        \
        {"session-memory-mb", required_argument, NULL, SETUP_OPT_SESSION_MEMORY},                  \
        {"tool-timeout-ms", required_argument, NULL, SETUP_OPT_TOOL_TIMEOUT},                      \
        {"mcp-output", required_argument, NULL, SETUP_OPT_MCP_OUTPUT},                             \
        {"mcp-workspace", required_argument, NULL, SETUP_OPT_MCP_WORKSPACE},                       \
        {"session-pool-size", required_argument, NULL, SETUP_OPT_SESSION_POOL},                    \
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
    "  --zygotes N            processes forking warm interpreters (default 2)\n"                   \
    "  --preimport MODS       comma-separated modules every warm interpreter starts with\n"        \
    "                         (default datetime,math,random)\n"                                    \
    "  --max-memory-mb N      largest memory limit an execution or session may have (2048)\n"      \
    "  --output-limit-kb N    stdout+stderr kept per execution (1024)\n"                           \
    "  --max-procs N          processes/threads per sandbox (64)\n"

#define SETUP_HELP_SESSIONS                                                                        \
    "Sessions and MCP servers:\n"                                                                  \
    "  --mcp-config FILE      MCP servers, Claude Desktop format ({\"mcpServers\": {...}})\n"      \
    "  --no-mcp-discovery     do not read ./.mcp, ~/.config/mcp/servers, ~/.claude.json,\n"        \
    "                         ~/.cursor/mcp.json, ./.vscode/mcp.json\n"                            \
    "  --state-dir DIR        workspaces (memories, saved tools, files); default\n"                \
    "                         $XDG_STATE_HOME/sandboxd or ~/.local/state/sandboxd\n"               \
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
    "\n"                                                                                           \
    "sandboxd as an MCP server (docs/MCP.md):\n"                                                   \
    "  --mcp-output MODE      text (compact, default) or json: how tool results are written\n"     \
    "                         (run_python's \"output\" argument overrides it per call)\n"          \
    "  --mcp-workspace NAME   workspace of the sessions run_python creates (default)\n"            \
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

/* Everything setup_start() built; owned by the struct. */
struct setup {
    struct jail_options jopt;
    struct jail_config jail;
    json_t *isolation; /* jail_describe() plus the self-test's findings */
    struct metrics *metrics;
    struct pool *pool;         /* NULL with --pool-size 0 */
    struct pool *session_pool; /* NULL with --session-pool-size 0: sessions use pool */
    struct mcp_config mcfg;
    struct mcp_registry *mcp;
    char *state_dir;
    struct workspace_store *wstore;
    struct egress_proxy *egress; /* NULL without --egress-allow */
    struct sessions_options so;
    struct sessions *sessions;
    bool jail_ok, httpc_ok;
};

/* Build everything in order, logging what fails with the name of cmd ("serve", "mcp"); common
 * is borrowed and must outlive *s. 0, or -errno with *s partly built (call setup_stop()). */
int setup_start(struct setup *s, const struct setup_opts *o, struct common_opts *common,
                const char *cmd);
/* A warm pool of size cells from zygotes zygotes that import --preimport plus extra
 * (comma-separated, may be NULL) before forking; after setup_start() built the jail. */
int setup_pool(struct setup *s, const struct setup_opts *o, unsigned size, unsigned zygotes,
               const char *extra, struct pool **ret);
/* Tear down in reverse order; safe on a zeroed or partly built struct. */
void setup_stop(struct setup *s);

#endif
