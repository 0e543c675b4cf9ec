// SPDX-License-Identifier: MIT
/*
 * workspaces (api) — saved tools and memories of a workspace, for the
 * people who run sandboxd (a saved tool runs in every later session of its
 * workspace, so it must be possible to see it and remove it without a
 * session):
 *   GET    /v1/workspaces/{name}/tools            [{name, source, size, modifiedAt}]
 *   DELETE /v1/workspaces/{name}/tools/{tool}     204, 404
 *   GET    /v1/workspaces/{name}/memories         [{key, metadata, createdAt, updatedAt, size}]
 *   DELETE /v1/workspaces/{name}/memories/{key}   204, 404 (the key percent-encoded)
 * Every request has passed the policy (api/policy.h) before it gets here.
 * A tenant reaches only its own workspaces: the workspace is opened by the
 * key workspace_key(tenant, name), and the store (workspace_open) is the one
 * place that decides where a key leads, so another tenant's workspace of the
 * same name is never seen (404 when the caller has none of that name).
 */
#include "api/workspaces.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/status.h"
#include "tenant/tenant.h"
#include "session/workspace.h"
#include "util/log.h"
#include "util/macros.h"

/* A failed workspace call: its error as the store reported it (UNAVAILABLE for a database that
 * cannot be reached: 503 STORE_UNAVAILABLE), INTERNAL when it reported none. */
static void api_ws_fail(struct http_reply *reply, struct sbx_error *err, int r, const char *what)
{
    if (err->kind == SBX_ERR_NONE)
        sbx_error_set(err, SBX_ERR_INTERNAL, "INTERNAL", NULL, "%s: %s", what, strerror(-r));
    api_reply_sbx_error(reply, err);
}

static void api_ws_list(struct workspace *w, bool tools, struct http_reply *reply)
{
    json_t *out = NULL;
    struct sbx_error err = {0};
    int r = tools ? workspace_tools(w, &out, &err) : workspace_list_memories(w, &out, &err);
    if (r < 0) {
        api_ws_fail(reply, &err, r, "workspace unavailable");
        return;
    }
    api_reply_json(reply, API_OK,
                   tools
                       ? json_pack("{s:s, s:o, s:o}", "workspace", workspace_name(w), "tools", out,
                                   "usage", workspace_usage(w))
                       : json_pack("{s:s, s:O, s:o}", "workspace", workspace_name(w), "memories",
                                   json_object_get(out, "memories"), "usage", workspace_usage(w)));
    if (!tools)
        json_decref(out);
}

/* key: the workspace's key in the store, for the log ("tenant/name" names the tenant). */
static void api_ws_delete(struct workspace *w, const char *key, bool tools, const char *item,
                          struct http_reply *reply)
{
    struct sbx_error err = {0};
    int r = tools ? workspace_delete_tool(w, item, &err) : workspace_delete_memory(w, item, &err);
    if (r == -ENOENT) {
        sbx_error_clear(&err);
        api_reply_error(reply, SBX_ERR_NOT_FOUND, "NOT_FOUND", NULL,
                        "workspace %s has no %s %.256s", workspace_name(w),
                        tools ? "tool" : "memory", item);
        return;
    }
    if (r < 0) {
        api_ws_fail(reply, &err, r, "cannot delete it");
        return;
    }
    log_info("workspace %s: %s %.256s deleted over the API", key, tools ? "tool" : "memory", item);
    api_reply_ok(reply, API_NO_CONTENT);
}

void api_workspaces_route(struct api *api, const struct http_request *req, const char *rest,
                          const struct tenant *tenant, struct http_reply *reply)
{
    bool get = strcmp(req->method, "GET") == 0;
    bool del = strcmp(req->method, "DELETE") == 0;
    if (!api->wstore) {
        api_reply_error(reply, SBX_ERR_NOT_FOUND, "NOT_FOUND", NULL, "workspaces are disabled");
        return;
    }
    /* "/NAME/KIND" or "/NAME/KIND/ITEM" (the item may hold '/': a memory key). */
    char name[65];
    size_t n = rest[0] == '/' ? strcspn(rest + 1, "/") : 0;
    if (n == 0 || n >= sizeof(name)) {
        api_reply_error(reply, SBX_ERR_NOT_FOUND, "NOT_FOUND", NULL, "no route %s", req->path);
        return;
    }
    memcpy(name, rest + 1, n);
    name[n] = '\0';
    const char *kind = rest + 1 + n;
    bool tools = strncmp(kind, "/tools", 6) == 0 && (kind[6] == '\0' || kind[6] == '/');
    bool memories = strncmp(kind, "/memories", 9) == 0 && (kind[9] == '\0' || kind[9] == '/');
    if (!tools && !memories) {
        api_reply_error(reply, SBX_ERR_NOT_FOUND, "NOT_FOUND", NULL, "no route %s", req->path);
        return;
    }
    const char *item = kind + (tools ? 6 : 9);
    item = *item ? item + 1 : NULL;
    if (item && !*item) {
        api_reply_error(reply, SBX_ERR_NOT_FOUND, "NOT_FOUND", NULL, "no route %s", req->path);
        return;
    }
    if (!item && !get) {
        api_reply_method(reply, "GET");
        return;
    }
    if (item && !del) {
        api_reply_method(reply, "DELETE");
        return;
    }
    const char *why = workspace_check_name(name);
    if (why) {
        api_reply_error(reply, SBX_ERR_INVALID, "INVALID_REQUEST", "workspace", "workspace: %s",
                        why);
        return;
    }
    _cleanup_free_ char *key = workspace_key(tenant_name(tenant), name);
    if (!key) {
        api_reply_error(reply, SBX_ERR_INTERNAL, "INTERNAL", NULL, "out of memory");
        return;
    }
    struct workspace *w = NULL;
    struct store_share share = workspace_share_of(tenant);
    struct sbx_error err = {0};
    int r = workspace_open(api->wstore, key, &share, false, &w, &err);
    if (r == -ENOENT) {
        sbx_error_clear(&err);
        api_reply_error(reply, SBX_ERR_NOT_FOUND, "NOT_FOUND", NULL, "no workspace %s", name);
        return;
    }
    if (r < 0) {
        api_ws_fail(reply, &err, r, "workspace unavailable");
        return;
    }
    if (item)
        api_ws_delete(w, key, tools, item, reply);
    else
        api_ws_list(w, tools, reply);
    workspace_close(w);
}
