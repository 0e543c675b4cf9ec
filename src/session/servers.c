// SPDX-License-Identifier: MIT
/*
 * servers — the MCP servers of a session as its runtime sees them: the
 * descriptions (aliases, tools, cwd) of the init job, and servers loaded
 * into a live session later (a run_python that names more servers than its
 * session has: the variables stay, the new proxies join them). Called by
 * session.c and by the MCP server's run_python.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mcpclient/alias.h"
#include "mcpclient/registry.h"
#include "session/session_int.h"
#include "session/workspace.h"
#include "util/log.h"
#include "util/macros.h"

/* [{name, alias, aliases?, description, cwd, tools}] of the servers names, for the runtime's
 * proxies (the init job, and servers loaded into a live session); NULL with *err filled. */
static json_t *session_server_infos(struct sessions *ss, json_t *names, struct sbx_error *err)
{
    json_t *servers = json_array();
    json_t *described = mcp_registry_describe(ss->mcp);
    mcp_alias_tools(described); /* server aliases, unique among every configured server */
    size_t i;
    json_t *v;
    json_array_foreach(names, i, v)
    {
        const char *name = json_string_value(v);
        json_t *tools = NULL;
        struct sbx_error me = {0};
        if (mcp_registry_tools(ss->mcp, name, ss->opt.tool_timeout_ms, &tools, &me) < 0) {
            sbx_error_set(err, SBX_ERR_UPSTREAM, "MCP_ERROR", "servers",
                          "MCP server '%s' is unavailable: %s", name,
                          me.message ? me.message : "failed");
            sbx_error_clear(&me);
            json_decref(servers);
            json_decref(described);
            return NULL;
        }
        json_t *d = NULL;
        size_t k;
        json_t *e;
        json_array_foreach(described, k, e)
        {
            if (strcmp(json_string_value(json_object_get(e, "name")) ?: "", name) == 0)
                d = e;
        }
        mcp_alias_tools(tools); /* the sandbox uses these aliases, never its own */
        const char *alias = json_string_value(json_object_get(d, "alias"));
        if (json_array_append_new(
                servers, json_pack("{s:s, s:o*, s:O*, s:s, s:o*, s:o}", "name", name, "alias",
                                   alias ? json_string(alias) : mcp_alias_json(name), "aliases",
                                   json_object_get(d, "aliases"), "description",
                                   json_string_value(json_object_get(d, "description")) ?: "",
                                   "cwd", mcp_registry_cwd(ss->mcp, name), "tools", tools)) < 0) {
            sbx_error_set(err, SBX_ERR_INTERNAL, "INTERNAL", "servers",
                          "MCP server '%s' could not be described to the session (out of memory)",
                          name);
            json_decref(servers);
            json_decref(described);
            return NULL;
        }
    }
    json_decref(described);
    return servers;
}

json_t *session_init_job(struct sessions *ss, json_t *names, struct workspace *wsh,
                         struct sbx_error *err)
{
    json_t *servers = session_server_infos(ss, names, err);
    if (!servers)
        return NULL;
    /* Every configured server, in the session or not (runtime.discovered_servers()). */
    json_t *described = mcp_registry_describe(ss->mcp);
    mcp_alias_tools(described);
    json_t *discovered = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(described, i, v)
    {
        if (json_array_append_new(
                discovered, json_pack("{s:O, s:O?, s:s}", "name", json_object_get(v, "name"),
                                      "alias", json_object_get(v, "alias"), "description",
                                      json_string_value(json_object_get(v, "description")) ?: "")) <
            0) {
            sbx_error_set(err, SBX_ERR_INTERNAL, "INTERNAL", NULL,
                          "the configured servers could not be listed (out of memory)");
            json_decref(servers);
            json_decref(discovered);
            json_decref(described);
            return NULL;
        }
    }
    json_decref(described);
    json_t *tools = NULL;
    _cleanup_sbx_error_ struct sbx_error werr = {0};
    if (workspace_tools(wsh, &tools, &werr) < 0) {
        bool down = werr.kind == SBX_ERR_UNAVAILABLE;
        sbx_error_set(err, down ? SBX_ERR_UNAVAILABLE : SBX_ERR_INTERNAL,
                      down ? STORE_UNAVAILABLE : "INTERNAL", "workspace",
                      "the workspace's saved tools cannot be read: %s",
                      werr.message ? werr.message : "the workspace is unavailable");
        json_decref(servers);
        json_decref(discovered);
        return NULL;
    }
    return json_pack("{s:s, s:o, s:o, s:o}", "type", "session", "servers", servers, "discovered",
                     discovered, "tools", tools);
}

static bool servers_has(json_t *have, const char *name)
{
    size_t i;
    json_t *v;
    json_array_foreach(have, i, v)
    {
        if (strcmp(json_string_value(v), name) == 0)
            return true;
    }
    return false;
}

bool session_has_server(struct session *s, const char *name)
{
    pthread_mutex_lock(&s->owner->lock);
    bool yes = servers_has(s->servers, name);
    pthread_mutex_unlock(&s->owner->lock);
    return yes;
}

int sessions_add_servers(struct sessions *ss, const char *id, json_t *names, struct sbx_error *err)
{
    *err = (struct sbx_error){0};
    char *unknown = mcp_registry_check_names(ss->mcp, names);
    if (unknown) {
        sbx_error_set(err, SBX_ERR_INVALID, "INVALID_REQUEST", "servers", "%s", unknown);
        free(unknown);
        return -EINVAL;
    }
    struct session *s = sessions_lookup(ss, id);
    if (!s) {
        sbx_error_set(err, SBX_ERR_NOT_FOUND, "SESSION_NOT_FOUND", NULL, "no session %s", id);
        return -ENOENT;
    }
    if (s->agent) {
        sbx_error_set(err, SBX_ERR_INVALID, "AGENT_SESSION", NULL,
                      "session %s serves the %s protocol; it loads no MCP servers", id, s->agent);
        session_unref(s);
        return -EINVAL;
    }
    /* One loader at a time per session (exec_lock is not taken: a running execution may go on,
     * and sees the proxies appear): two callers cannot both send the same server. */
    pthread_mutex_lock(&s->servers_lock);
    json_t *missing = json_array();
    size_t i;
    json_t *v;
    pthread_mutex_lock(&ss->lock);
    json_array_foreach(names, i, v)
    {
        if (!servers_has(s->servers, json_string_value(v)) &&
            !servers_has(missing, json_string_value(v)))
            json_array_append(missing, v);
    }
    pthread_mutex_unlock(&ss->lock);
    int r = 0;
    if (json_array_size(missing)) {
        json_t *infos = session_server_infos(ss, missing, err);
        json_t *frame =
            infos ? json_pack("{s:s, s:o}", "type", "add_servers", "servers", infos) : NULL;
        r = !infos ? -EIO : !frame ? -ENOMEM : session_send(s, frame);
        json_decref(frame);
        if (r < 0 && infos)
            sbx_error_set(err, r == -EPIPE ? SBX_ERR_GONE : SBX_ERR_INTERNAL,
                          r == -EPIPE ? "SESSION_DEAD" : "INTERNAL", NULL,
                          "the servers could not be sent to session %s: %s", id, strerror(-r));
    }
    if (r == 0 && json_array_size(missing)) {
        /* Listed once the frame is on its way: a tool call can only come after it. */
        pthread_mutex_lock(&ss->lock);
        json_array_extend(s->servers, missing);
        pthread_mutex_unlock(&ss->lock);
        log_info("session %s: MCP servers loaded into the live session", id);
    }
    pthread_mutex_unlock(&s->servers_lock);
    json_decref(missing);
    session_unref(s);
    return r;
}
