// SPDX-License-Identifier: MIT
/*
 * approval — who decides whether a tool call made from sandboxed code may go
 * to its server: a policy per tool, auto (it goes), ask (a person decides,
 * session/approvals.c holds the call meanwhile) or deny (it never goes).
 * Rules come from a server's config entry ("approvals": {"TOOL": "ask",
 * "*": "deny"}) and from the command line (--approval SERVER.TOOL=POLICY,
 * SERVER.* for all of a server's tools), which come first. Pure data: never
 * does I/O. Used by config.c (reading "approvals"), cmd/setup.c (the command line) and
 * the registry (the lookup the session bridge asks).
 */
#ifndef SANDBOXD_MCPCLIENT_APPROVAL_H
#define SANDBOXD_MCPCLIENT_APPROVAL_H

#include "mcpclient/config.h"
#include "util/error.h"

#define MCP_APPROVAL_MAX_RULES 256 /* rules of one server */

enum mcp_approval {
    MCP_APPROVAL_AUTO = 0, /* the default: the call goes */
    MCP_APPROVAL_ASK,      /* a person decides (HTTP, or MCP elicitation) */
    MCP_APPROVAL_DENY,     /* never sent: ApprovalDenied */
};

/* "auto", "ask", "deny" -> 0 and *ret; anything else -EINVAL. */
int mcp_approval_parse(const char *word, enum mcp_approval *ret);
/* "auto", "ask" or "deny" (static). */
const char *mcp_approval_name(enum mcp_approval a);

/* Rules are kept as a NULL-terminated vector of "POLICY:TOOL" strings (struct
 * mcp_server_config.approvals), in order of precedence: the first rule naming the tool exactly
 * decides, else the first "*" rule, else auto. */
enum mcp_approval mcp_approval_lookup(char *const *rules, const char *tool);
/* --approval SERVER.TOOL=POLICY (SERVER.* for all its tools) into cfg, before the rules the
 * server's entry has. SERVER is the longest configured name the argument starts with followed
 * by '.'. 0; -EINVAL with *err (INVALID, INVALID_OPTION) for a malformed rule or an unknown
 * server; -ENOMEM (INTERNAL). */
int mcp_config_add_approval(struct mcp_config *cfg, const char *arg, struct sbx_error *err);

#endif
