// SPDX-License-Identifier: MIT
/*
 * alias — the one rule that turns an MCP server or tool name into the
 * Python identifier session code uses (`await mcp_<server>.<tool>()`). The
 * host applies it everywhere a name is shown (list_servers, search_tool_docs)
 * and hands the aliases to the sandbox with the server descriptions, so the
 * session runtime never computes one of its own: both sides cannot disagree.
 *
 * The rule (docs/SESSIONS.md): every character but an ASCII letter, digit or
 * '_' becomes one '_' (a multi-byte UTF-8 character is one character); an
 * empty name or one that starts with a digit gets '_' in front; a Python
 * keyword gets '_' behind. "get-sum" -> get_sum, "get—sum" -> get_sum,
 * "class" -> class_, "2fa" -> _2fa. Changing the rule means changing
 * mcp_alias() only.
 */
#ifndef SANDBOXD_MCP_ALIAS_H
#define SANDBOXD_MCP_ALIAS_H

#include <jansson.h>

#include "util/buf.h"

/* Append the alias of name to out: 0, or the buffer's -E2BIG / -ENOMEM. */
int mcp_alias(const char *name, struct buf *out);
/* The alias as a JSON string (new reference; NULL when out of memory). */
json_t *mcp_alias_json(const char *name);
/* Set "alias" on every tool object (with a string "name") of the array tools, in place. */
void mcp_alias_tools(json_t *tools);

#endif
