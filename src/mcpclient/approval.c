// SPDX-License-Identifier: MIT
/*
 * approval — see approval.h.
 */
#include "mcpclient/approval.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/macros.h"

static const char *const approval_names[] = {
    [MCP_APPROVAL_AUTO] = "auto",
    [MCP_APPROVAL_ASK] = "ask",
    [MCP_APPROVAL_DENY] = "deny",
};

int mcp_approval_parse(const char *word, enum mcp_approval *ret)
{
    for (size_t i = 0; word && i < ARRAY_SIZE(approval_names); i++)
        if (strcmp(word, approval_names[i]) == 0) {
            *ret = (enum mcp_approval)i;
            return 0;
        }
    return -EINVAL;
}

const char *mcp_approval_name(enum mcp_approval a)
{
    return (size_t)a < ARRAY_SIZE(approval_names) ? approval_names[a] : "auto";
}

/* The policy of a rule "POLICY:TOOL", and its tool (borrowed from the rule). */
static enum mcp_approval approval_rule(const char *rule, const char **ret_tool)
{
    const char *colon = strchr(rule, ':');
    *ret_tool = colon ? colon + 1 : "";
    for (size_t i = 0; colon && i < ARRAY_SIZE(approval_names); i++)
        if (strlen(approval_names[i]) == (size_t)(colon - rule) &&
            strncmp(rule, approval_names[i], (size_t)(colon - rule)) == 0)
            return (enum mcp_approval)i;
    return MCP_APPROVAL_DENY; /* cannot happen: rules are made here; fail closed anyway */
}

enum mcp_approval mcp_approval_lookup(char *const *rules, const char *tool)
{
    const char *t;
    for (char *const *r = rules; r && *r; r++) {
        enum mcp_approval a = approval_rule(*r, &t);
        if (tool && strcmp(t, tool) == 0)
            return a;
    }
    for (char *const *r = rules; r && *r; r++) {
        enum mcp_approval a = approval_rule(*r, &t);
        if (strcmp(t, "*") == 0)
            return a;
    }
    return MCP_APPROVAL_AUTO;
}

int mcp_config_add_approval(struct mcp_config *cfg, const char *arg, struct sbx_error *err)
{
    const char *eq = strrchr(arg, '=');
    enum mcp_approval a;
    if (!eq || mcp_approval_parse(eq + 1, &a) < 0)
        return sbx_error_errno(
            err, EINVAL, SBX_ERR_INVALID, "INVALID_OPTION", NULL,
            "--approval %s: expected SERVER.TOOL=POLICY (or SERVER.*=POLICY), the "
            "policy auto, ask or deny",
            arg);
    struct mcp_server_config *server = NULL;
    size_t best = 0;
    for (size_t i = 0; i < cfg->n; i++) {
        size_t len = strlen(cfg->servers[i].name);
        if (len > best && arg + len < eq && strncmp(arg, cfg->servers[i].name, len) == 0 &&
            arg[len] == '.') {
            server = &cfg->servers[i];
            best = len;
        }
    }
    if (!server)
        return sbx_error_errno(
            err, EINVAL, SBX_ERR_INVALID, "INVALID_OPTION", NULL,
            "--approval %s: no configured MCP server is named by what comes before "
            "the '.' (sandboxd servers lists them)",
            arg);
    const char *tool = arg + best + 1;
    if (tool == eq)
        return sbx_error_errno(err, EINVAL, SBX_ERR_INVALID, "INVALID_OPTION", NULL,
                               "--approval %s: no tool name (use SERVER.* for all)", arg);
    size_t n = 0;
    while (server->approvals && server->approvals[n])
        n++;
    if (n >= MCP_APPROVAL_MAX_RULES)
        return sbx_error_errno(err, EINVAL, SBX_ERR_INVALID, "INVALID_OPTION", NULL,
                               "--approval %s: too many rules for server %s", arg, server->name);
    char *rule = NULL;
    char **v = calloc(n + 2, sizeof(*v));
    if (!v || asprintf(&rule, "%s:%.*s", mcp_approval_name(a), (int)(eq - tool), tool) < 0) {
        free(v);
        return sbx_error_errno(err, ENOMEM, SBX_ERR_INTERNAL, "INTERNAL", NULL,
                               "--approval: out of memory");
    }
    /* Before the entry's own rules, and before earlier --approval options of the server would
     * be wrong: on the command line the last word wins, as with every other option. */
    v[0] = rule;
    if (n)
        memcpy(v + 1, server->approvals, n * sizeof(*v));
    free(server->approvals);
    server->approvals = v;
    return 0;
}
