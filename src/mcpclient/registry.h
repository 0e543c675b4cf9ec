// SPDX-License-Identifier: MIT
/*
 * registry — the configured MCP servers by name, each started once (lazily,
 * on first use) and shared by every caller, reconnected when it died, with
 * its tools list cached until the server says it changed (or restarted).
 * A server that failed to start is not retried for a second; callers get
 * the previous error meanwhile. Thread-safe. Created by cmd/serve.c, used by
 * sessions and the API.
 */
#ifndef SANDBOXD_MCPCLIENT_REGISTRY_H
#define SANDBOXD_MCPCLIENT_REGISTRY_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "mcpclient/approval.h"
#include "mcpclient/client.h"
#include "mcpclient/config.h"

#define MCP_REGISTRY_RETRY_US 1000000 /* no new start within this long after a failed one */

struct mcp_registry;

/* cfg is borrowed (copied). 0, or -ENOMEM. Connects nothing. */
int mcp_registry_new(const struct mcp_config *cfg, struct mcp_registry **ret);
/* For shutdown: from now on every call fails at once ("sandboxd is shutting down"), and the calls
 * in flight are aborted (their callers return within about a second). The connections stay
 * open until mcp_registry_free(). Idempotent. */
void mcp_registry_shutdown(struct mcp_registry *r);
/* Closes every connection, stopping stdio servers (stdin closed, then SIGTERM, then SIGKILL);
 * NULL-safe. No call may be running or start. */
void mcp_registry_free(struct mcp_registry *r);
/* NULL when every element of names is the name of a configured server; else a message
 * (caller frees; "servers[i]: 'x' is not a configured MCP server (configured: a, b)"). */
char *mcp_registry_check_names(struct mcp_registry *r, json_t *names);
/* New reference: ["name", ...] in config order. */
json_t *mcp_registry_names(struct mcp_registry *r);
/* New reference: [{name, transport: "stdio"|"http", description, connected: bool, serverInfo?}].
 * Never waits for a connection in progress. */
json_t *mcp_registry_describe(struct mcp_registry *r);
/* The approval policy of tool of server name (approval.h): auto for an unknown server. Never
 * waits. */
enum mcp_approval mcp_registry_approval(struct mcp_registry *r, const char *name, const char *tool);
/* Some server has a rule that is not auto (a person may be asked, or a call refused). */
bool mcp_registry_has_approvals(struct mcp_registry *r);
/* The working directory server name is started in, as configured (a JSON string, new
 * reference), or JSON null when it has none or is unknown; NULL when out of memory. */
json_t *mcp_registry_cwd(struct mcp_registry *r, const char *name);
/* The server's tools (array of Tool objects as the server sent them, a new reference), from a
 * cache refreshed when the server sent tools/list_changed or was restarted. Connects (or
 * reconnects a dead server) on demand; timeout_ms bounds connecting and listing together.
 * <0 with err filled as in client.h; an unknown name is -ENOENT, SBX_UP_TOOL, code
 * "UNKNOWN_SERVER". */
int mcp_registry_tools(struct mcp_registry *r, const char *name, int64_t timeout_ms,
                       json_t **ret_tools, struct sbx_error *err);
/* tools/call on server name; args borrowed, may be NULL. *ret_result: the CallToolResult as sent
 * (isError:true included). Errors as for mcp_registry_tools. A call is never retried: a tool
 * that crashed its server fails with SBX_UP_TRANSPORT, and the next call restarts it. */
int mcp_registry_call(struct mcp_registry *r, const char *name, const char *tool, json_t *args,
                      int64_t timeout_ms, json_t **ret_result, struct sbx_error *err);

#endif
