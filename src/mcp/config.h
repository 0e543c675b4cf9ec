// SPDX-License-Identifier: MIT
/*
 * config — which MCP servers sandboxd may use: the file given with
 * --mcp-config (Claude Desktop format) and, unless discovery is off, the
 * usual places other MCP clients keep theirs. Reads files only (with a size
 * cap), never starts anything; the result feeds the registry. Called once at
 * start-up by cmd/serve.c.
 */
#ifndef SANDBOXD_MCP_CONFIG_H
#define SANDBOXD_MCP_CONFIG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "mcp/client.h"

#define MCP_CONFIG_MAX_FILE    (16u << 20) /* ~/.claude.json grows with history */
#define MCP_CONFIG_MAX_SERVERS 256
#define MCP_CONFIG_MAX_NAME    64
#define MCP_CONFIG_MAX_LIST    256 /* args, env entries, headers per server */

/* Everything is owned by the struct; free with mcp_config_done(). */
struct mcp_config {
    struct mcp_server_config *servers;
    size_t n;
    char **sources; /* files that contributed, NULL-terminated */
};

/* explicit_path: --mcp-config FILE (may be NULL; a missing or invalid explicit file is an error
 * naming the file and the problem). discover: also read the discovery locations relative to cwd
 * and home (either may be NULL), in this order: ./.mcp/<name>.json (sorted by name),
 * ~/.config/mcp/servers/<name>.json (sorted), ~/.claude.json (the "mcpServers" of the project whose
 * key equals cwd under "projects", then the top-level "mcpServers" — the project's entries win,
 * as in Claude Code), ~/.cursor/mcp.json, ./.vscode/mcp.json (VS Code format: top-level
 * "servers", entries with "type": "stdio"|"http" plus command/args/env/cwd or url/headers).
 * Claude format: {"mcpServers": {"name": {"command","args","env","cwd"} | {"url","headers"} |
 * {"type":"http"|"streamable-http",...}}}; the generic files (--mcp-config, ./.mcp, ~/.config)
 * may use either "mcpServers" or "servers". Optional per entry: "description" (string),
 * "disabled": true (skipped). Legacy "type": "sse" servers are skipped (not supported).
 * Precedence: the explicit file wins over discovered ones; among discovered, the first found in
 * the order above wins; duplicates are logged at info level. Unreadable/invalid discovered files
 * are logged (warn) and skipped. Server names must be non-empty, at most 64 bytes, without
 * control characters; invalid entries are skipped (warn). At most MCP_CONFIG_MAX_SERVERS.
 * 0 and *ret filled (possibly with no servers), or -errno after logging the error. */
int mcp_config_load(const char *explicit_path, bool discover, const char *cwd, const char *home,
                    struct mcp_config *ret);
/* NULL-safe; zeroes *cfg. */
void mcp_config_done(struct mcp_config *cfg);
/* Parse one document (borrowed) in the Claude or VS Code format and add its servers to cfg
 * (first name wins). source names it in log lines. Returns the number of servers added, or
 * -EINVAL when the document has neither "mcpServers" nor "servers" (nothing is logged then). */
int mcp_config_add_document(struct mcp_config *cfg, json_t *doc, const char *source);

#endif
