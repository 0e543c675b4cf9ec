// SPDX-License-Identifier: MIT
/*
 * config — which MCP servers sandboxd may use: the files given with
 * --mcp-config (Claude Desktop format) and, unless discovery is off, the
 * usual places other MCP clients keep theirs (config_sources.c: ~/MCPs,
 * $MCP_SERVERS_CONFIG, Claude, Cursor, Windsurf, VS Code, Gemini CLI, Codex,
 * OpenCode, Antigravity) — the user's own files by default, a project
 * directory's only when the user trusts it. Reads files only (with a size
 * cap), never starts anything; the result feeds the registry, and what was
 * left out is kept for `sandboxd servers`. Called once at start-up by
 * cmd/setup.c and cmd/servers.c.
 */
#ifndef SANDBOXD_MCPCLIENT_CONFIG_H
#define SANDBOXD_MCPCLIENT_CONFIG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "mcpclient/client.h"

#define MCP_CONFIG_MAX_FILE    (16u << 20) /* ~/.claude.json grows with history */
#define MCP_CONFIG_MAX_SERVERS 256
#define MCP_CONFIG_MAX_NAME    64
#define MCP_CONFIG_MAX_LIST    256 /* args, env entries, headers per server */

/* A server entry, or a whole file, that was not taken, and why. */
struct mcp_config_skip {
    char *name;   /* the server's name; NULL for a whole file */
    char *source; /* the file */
    char *reason;
    const char *kind; /* static: "untrusted", "shadowed", "replaced", "invalid", "disabled",
                       * "self", "limit" */
};

/* Everything is owned by the struct; free with mcp_config_done(). */
struct mcp_config {
    struct mcp_server_config *servers;
    char **origins;      /* origins[i]: the file (and part of it) servers[i] came from */
    const char **agents; /* agents[i]: whose file it is ("Cursor"), static, or NULL */
    size_t n;
    char **sources; /* files that contributed, NULL-terminated */
    struct mcp_config_skip *skipped;
    size_t n_skipped;
    bool project_trusted; /* the project-level files were read */
};

struct mcp_config_options {
    const char *const *explicit_paths; /* --mcp-config FILEs, NULL-terminated; may be NULL */
    const char *env_path; /* $MCP_SERVERS_CONFIG, read (when discover) after ~/MCPs; may be NULL */
    bool allow_self;      /* keep entries that start sandboxd mcp or the upstream bridge */
    const char *self_exe; /* our own executable (realpath), to recognise it; may be NULL */
    bool discover;        /* read the discovery locations */
    bool trust_project;   /* --mcp-trust-project: read the project-level files */
    const char *cwd;      /* the project directory; may be NULL */
    const char *home;     /* may be NULL */
    const char *trust_file; /* trusted project directories, one a line; may be NULL */
};

/* Which servers sandboxd may start, from where, in this order of precedence:
 *   1. explicit_paths (Claude format; "mcpServers" or "servers"), in order: a later file's
 *      definition replaces an earlier one of the same name (logged, recorded as "replaced").
 *      A missing or invalid explicit file is an error naming the file and the problem.
 *   2. user-level files, when discover, in the order of config_sources.c: ~/MCPs/<name>.json,
 *      env_path, ~/.config/mcp/servers/<name>.json, ~/.claude.json (the project whose key
 *      equals cwd under "projects" first, then the top level), the agents' files under the
 *      home directory. A file that is unreadable or invalid is a warning naming the file and
 *      the line, recorded, and never stops the others.
 *   3. project-level files, when discover and the project is trusted (trust_project, or cwd
 *      is, or is below, a directory listed in trust_file — a file only we or root can write):
 *      ./.mcp/<name>.json, ./mcp-servers/<name>.json, ./.vscode/mcp.json (VS Code format:
 *      top-level "servers", entries with "type": "stdio"|"http"), ./claude_code_config.json,
 *      ./claude_desktop_config.json, ./opencode_config.json, ./opencode_desktop_config.json.
 *      An untrusted project's files are read only to report their servers as skipped;
 *      nothing in them is ever started (a cloned repository must not run programs as the user).
 * A name defined twice (outside 1.) keeps its first definition; the later one is skipped as
 * shadowed (a warning when a project file tries to shadow a user-level server). An entry that
 * would start sandboxd mcp or the upstream bridge is skipped ("self") unless allow_self. A
 * document's top-level "description" is the description of its entries that have none. Claude
 * format:
 * {"mcpServers": {"name": {"command","args","env","cwd"} | {"url","headers"} |
 * {"type":"http"|"streamable-http",...}}}. Optional per entry: "description" (string),
 * "disabled": true (skipped). Legacy "type": "sse" servers are skipped (not supported).
 * Unreadable/invalid discovered files are logged (warn) and skipped. Server names must be
 * non-empty, at most 64 bytes, without control characters; invalid entries are skipped (warn).
 * At most MCP_CONFIG_MAX_SERVERS. Every skip is recorded in *ret (sandboxd servers shows
 * them). 0 and *ret filled (possibly with no servers), or -errno after logging the error. */
int mcp_config_load(const struct mcp_config_options *opt, struct mcp_config *ret);
/* NULL-safe; zeroes *cfg. */
void mcp_config_done(struct mcp_config *cfg);

#endif
