// SPDX-License-Identifier: MIT
/*
 * alias — the one rule that turns an MCP server or tool name into the
 * Python identifier session code uses (`await mcp_<server>.<tool>()`,
 * `from mcp.servers.<server> import <tool>`). The host applies it everywhere
 * a name is shown (list_servers, search_tool_docs) and hands the aliases to
 * the sandbox with the server descriptions, so the session runtime never
 * computes one of its own: both sides cannot disagree.
 *
 * The rule is upstream's (mcp-server-code-execution-mode, docs/SESSIONS.md):
 * spaces around the name are dropped; every run of characters other than an
 * ASCII letter, digit or '_' becomes one '_' (a multi-byte UTF-8 character
 * is one character); the result is lowercased; an empty name or one that
 * starts with a digit gets '_' in front; a Python keyword gets '_' behind.
 * Within one list (the tools of a server, the configured servers) the second
 * name with an alias already given gets "_2", the third "_3". "Get-Time" ->
 * get_time, "a.b" and "a_b" -> a_b and a_b_2, "class" -> class_, "2fa" -> _2fa.
 *
 * sandboxd's earlier spelling (one '_' per character, case kept: "Get-Time"
 * -> Get_Time) is sent too, as a second name, so that code written for it
 * still runs. Changing the rule means changing this file only.
 */
#ifndef SANDBOXD_MCPCLIENT_ALIAS_H
#define SANDBOXD_MCPCLIENT_ALIAS_H

#include <jansson.h>

#include "util/buf.h"

/* Append the alias of name (without the collision suffix) to out: 0, or the buffer's -E2BIG /
 * -ENOMEM. */
int mcp_alias(const char *name, struct buf *out);
/* Append sandboxd's earlier spelling of name to out (see above): 0, -E2BIG or -ENOMEM. */
int mcp_alias_earlier(const char *name, struct buf *out);
/* The alias as a JSON string (new reference; NULL when out of memory). */
json_t *mcp_alias_json(const char *name);
/* On every object of the array items with a string "name", in order and in place: "alias"
 * (the rule, with "_2", "_3" for later names of the same alias), and "aliases": [earlier
 * spelling] when that differs and no other object has it as its alias. */
void mcp_alias_tools(json_t *items);
/* The "alias" mcp_alias_tools() gave the object of items named name, or NULL (borrowed from
 * items). */
const char *mcp_alias_of(json_t *items, const char *name);

#endif
