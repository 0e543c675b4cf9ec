// SPDX-License-Identifier: MIT
/*
 * workspace — see workspace.h: opening workspaces, saved tools and files.
 * Memories are in wsmemory.c; what is kept, and where, is the store's.
 */
#include "session/workspace.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tenant/tenant.h"
#include "session/workspace_int.h"
#include "util/fmt.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/path.h"

struct store_limits workspace_store_limits(const struct workspace_limits *lim, size_t max_bytes,
                                           size_t max_entries, size_t tenant_bytes,
                                           size_t tenant_workspaces)
{
    return (struct store_limits){
        .max_bytes = max_bytes,
        .max_entries = max_entries,
        .max_item = {[STORE_MEMORY] =
                         lim->max_value + WORKSPACE_MAX_METADATA + WORKSPACE_DOC_OVERHEAD,
                     [STORE_TOOL] = WORKSPACE_MAX_TOOL,
                     [STORE_FILE] = lim->max_file,
                     [STORE_RUN] = lim->max_file},
        .tenant_bytes = tenant_bytes,
        .tenant_workspaces = tenant_workspaces,
    };
}

int workspace_store_new(struct store *store, const struct workspace_limits *lim,
                        struct workspace_store **ret)
{
    struct workspace_store *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->store = store;
    s->lim = *lim;
    *ret = s;
    return 0;
}

void workspace_store_free(struct workspace_store *s)
{
    free(s);
}

struct store_share workspace_share_of(const struct tenant *t)
{
    return (struct store_share){.max_bytes = (size_t)tenant_quota_mb(t) << 20,
                                .max_workspaces = tenant_max_workspaces(t)};
}

size_t workspace_max_workspaces(const struct workspace_store *s, const struct store_share *share)
{
    return store_max_workspaces(s->store, share);
}

const char *workspace_check_name(const char *name)
{
    return path_check_name(name);
}

char *workspace_key(const char *tenant, const char *name)
{
    return tenant ? fmt_str("%s/%s", tenant, name) : strdup(name);
}

const char *workspace_key_name(const char *key)
{
    const char *slash = strchr(key, '/');
    return slash ? slash + 1 : key;
}

/* key is "name" or "tenant/name", each part a valid name: -EINVAL when not. */
static int ws_check_key(const char *key, char ret_tenant[WORKSPACE_MAX_KEY_LEN + 1])
{
    const char *slash = strchr(key, '/');
    size_t n = slash ? (size_t)(slash - key) : 0;
    if (n > WORKSPACE_MAX_KEY_LEN)
        return -EINVAL;
    memcpy(ret_tenant, key, n);
    ret_tenant[n] = '\0';
    if (slash && workspace_check_name(ret_tenant))
        return -EINVAL;
    return workspace_check_name(workspace_key_name(key)) ? -EINVAL : 0;
}

int workspace_open(struct workspace_store *s, const char *key, const struct store_share *share,
                   bool create, struct workspace **ret, struct sbx_error *err)
{
    char tenant[WORKSPACE_MAX_KEY_LEN + 1];
    if (ws_check_key(key, tenant) < 0 || strlen(key) >= sizeof(((struct workspace *)0)->key)) {
        sbx_error_set(err, SBX_ERR_INVALID, "INVALID_REQUEST", "workspace",
                      "workspace: not a workspace name");
        return -EINVAL;
    }
    struct workspace *w = calloc(1, sizeof(*w));
    if (!w) {
        sbx_error_set(err, SBX_ERR_INTERNAL, "INTERNAL", NULL, "out of memory");
        return -ENOMEM;
    }
    w->ws = s;
    snprintf(w->key, sizeof(w->key), "%s", key);
    int r = store_ws_open(s->store, tenant, workspace_key_name(key), share, create, &w->sw, err);
    if (r < 0) {
        free(w);
        return r;
    }
    *ret = w;
    return 0;
}

void workspace_close(struct workspace *w)
{
    if (!w)
        return;
    store_ws_close(w->sw);
    free(w);
}

const char *workspace_name(const struct workspace *w)
{
    return workspace_key_name(w->key);
}

void ws_timestamp(int64_t ms, char out[32])
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

json_t *workspace_usage(struct workspace *w)
{
    _cleanup_sbx_error_ struct sbx_error err = {0};
    json_t *o = store_usage(w->sw, &err);
    return o ? o : json_object();
}

/* ---- saved tools -------------------------------------------------------------------------- */

/* Names a saved tool may not take: the session's own (they would replace what every client of
 * the workspace calls). Python's builtins are refused by the runtime, which knows them. */
static const char *ws_tool_name_problem(const char *name)
{
    static const char *const reserved[] = {"save_memory",
                                           "load_memory",
                                           "delete_memory",
                                           "list_memories",
                                           "update_memory",
                                           "memory_exists",
                                           "get_memory_info",
                                           "save_tool",
                                           "save_file",
                                           "list_execution_files",
                                           "list_tools",
                                           "search_tool_docs",
                                           "query_tool_docs",
                                           "list_servers",
                                           "describe_server",
                                           "capability_summary",
                                           "MCPError",
                                           "mcp",
                                           "mcp_servers",
                                           "LOADED_MCP_SERVERS",
                                           "ApprovalDenied",
                                           "NOT_SENT",
                                           "help"};
    if (!path_is_identifier(name) || strlen(name) > WORKSPACE_MAX_NAME)
        return "is not a Python identifier of at most 128 characters";
    if (strncmp(name, "mcp_", 4) == 0 || strncmp(name, "__", 2) == 0)
        return "is reserved (mcp_* and __* belong to the session)";
    for (size_t i = 0; i < ARRAY_SIZE(reserved); i++)
        if (strcmp(name, reserved[i]) == 0)
            return "is one of the session's own names";
    return NULL;
}

/* The first line that is not blank or a comment starts a function definition. */
static bool ws_tool_looks_like_def(const char *src)
{
    const char *p = src;
    for (;;) {
        p += strspn(p, " \t\r\n\f");
        if (*p != '#')
            break;
        p += strcspn(p, "\n");
    }
    return strncmp(p, "def ", 4) == 0 || strncmp(p, "async def ", 10) == 0;
}

int workspace_save_tool(struct workspace *w, const char *name, const char *source,
                        struct sbx_error *err)
{
    const char *why = ws_tool_name_problem(name);
    if (why) {
        sbx_error_set(err, SBX_ERR_INVALID, "INVALID_REQUEST", "name", "save_tool: '%.128s' %s",
                      name, why);
        return -EINVAL;
    }
    size_t len = strlen(source);
    if (len > WORKSPACE_MAX_TOOL) {
        sbx_error_set(err, SBX_ERR_TOO_LARGE, "TOO_LARGE", "source",
                      "save_tool: the source of %s is %zu bytes (limit %u)", name, len,
                      WORKSPACE_MAX_TOOL);
        return -EFBIG;
    }
    if (!ws_tool_looks_like_def(source)) {
        sbx_error_set(err, SBX_ERR_INVALID, "INVALID_REQUEST", "source",
                      "save_tool: a saved tool is one function definition (def or async def, "
                      "no decorator)");
        return -EINVAL;
    }
    return store_put_data(w->sw, STORE_TOOL, name, source, len, "save_tool", err);
}

int workspace_tools(struct workspace *w, json_t **ret_tools, struct sbx_error *err)
{
    *ret_tools = NULL;
    struct store_item *items = NULL;
    size_t n = 0;
    int r = store_list(w->sw, STORE_TOOL, true, &items, &n, err);
    if (r < 0)
        return r;
    json_t *out = json_array();
    for (size_t i = 0; i < n && out; i++) {
        char when[32];
        ws_timestamp(items[i].modified_ms, when);
        json_t *t =
            json_pack("{s:s, s:s%, s:I, s:s}", "name", items[i].name, "source", items[i].data,
                      items[i].len, "size", (json_int_t)items[i].len, "modifiedAt", when);
        if (t)
            json_array_append_new(out, t);
    }
    store_items_free(items, n);
    if (!out) {
        sbx_error_set(err, SBX_ERR_INTERNAL, "INTERNAL", NULL, "out of memory");
        return -ENOMEM;
    }
    *ret_tools = out;
    return 0;
}

int workspace_delete_tool(struct workspace *w, const char *name, struct sbx_error *err)
{
    if (!path_is_identifier(name) || strlen(name) > WORKSPACE_MAX_NAME)
        return -ENOENT;
    return store_delete(w->sw, STORE_TOOL, name, err);
}

/* ---- files -------------------------------------------------------------------------------- */

int workspace_save_file(struct workspace *w, const char *name, const void *data, size_t len,
                        json_t **ret_payload, struct sbx_error *err)
{
    *ret_payload = NULL;
    const char *why = workspace_check_name(name);
    if (!why && strlen(name) > WORKSPACE_MAX_NAME)
        why = "is too long";
    if (why) {
        sbx_error_set(err, SBX_ERR_INVALID, "INVALID_REQUEST", "name", "save_file: the name %s",
                      why);
        return -EINVAL;
    }
    if (len > w->ws->lim.max_file) {
        sbx_error_set(err, SBX_ERR_TOO_LARGE, "TOO_LARGE", "content",
                      "save_file: %zu bytes is over the limit of %zu", len, w->ws->lim.max_file);
        return -EFBIG;
    }
    int r = store_put_data(w->sw, STORE_FILE, name, data, len, "save_file", err);
    if (r == 0)
        *ret_payload = json_pack("{s:s, s:I}", "path", name, "size", (json_int_t)len);
    return r;
}

/* ---- files of sessions' execution folders ------------------------------------------------ */

int workspace_keep_file(struct workspace *w, const char *session, const char *path,
                        const void *data, size_t len, json_t **ret_payload, struct sbx_error *err)
{
    *ret_payload = NULL;
    /* "<session>_<path with '/' as '_'>": one name of [A-Za-z0-9._-] only, so that nothing the
     * sandbox sends can name another place, in either backend. */
    char name[WORKSPACE_MAX_RUN_NAME + 1];
    int n = snprintf(name, sizeof(name), "%s_%s", session, path);
    const char *why = n <= 0 || (size_t)n >= sizeof(name) ? "is too long" : NULL;
    for (char *p = name; !why && *p; p++) {
        if (*p == '/')
            *p = '_';
        else if (!isalnum((unsigned char)*p) && !strchr("._-", *p))
            why = "may only contain letters, digits, '.', '_', '-' and '/'";
    }
    if (!why && (name[0] == '.' || strstr(path, "..")))
        why = "may not start with '.' nor hold \"..\"";
    if (why) {
        sbx_error_set(err, SBX_ERR_INVALID, "INVALID_REQUEST", "path", "keep_file: the path %s",
                      why);
        return -EINVAL;
    }
    if (len > w->ws->lim.max_file) {
        sbx_error_set(err, SBX_ERR_TOO_LARGE, "TOO_LARGE", "content",
                      "keep_file: %zu bytes is over the limit of %zu", len, w->ws->lim.max_file);
        return -EFBIG;
    }
    int r = store_put_data(w->sw, STORE_RUN, name, data, len, "keep_file", err);
    _cleanup_free_ char *host = NULL;
    if (r == 0)
        r = store_host_path(w->sw, STORE_RUN, name, data, len, &host, err);
    if (r < 0)
        return r;
    *ret_payload =
        json_pack("{s:s, s:I, s:s}", "name", name, "size", (json_int_t)len, "hostPath", host);
    if (!*ret_payload) {
        sbx_error_set(err, SBX_ERR_INTERNAL, "INTERNAL", NULL, "keep_file: out of memory");
        return -ENOMEM;
    }
    return 0;
}

int workspace_files(struct workspace *w, json_t **ret_payload, struct sbx_error *err)
{
    *ret_payload = NULL;
    struct store_item *items = NULL;
    size_t n = 0;
    int r = store_list(w->sw, STORE_FILE, false, &items, &n, err);
    if (r < 0)
        return r;
    json_t *list = json_array();
    for (size_t i = 0; i < n && r == 0; i++) {
        char when[32];
        ws_timestamp(items[i].modified_ms, when);
        if (json_array_append_new(list, json_pack("{s:s, s:I, s:s}", "name", items[i].name, "size",
                                                  (json_int_t)items[i].size, "modifiedAt", when)) <
            0)
            r = -ENOMEM; /* not a listing that leaves a file out */
    }
    store_items_free(items, n);
    *ret_payload = r == 0 ? json_pack("{s:o}", "files", list) : NULL;
    if (!*ret_payload) {
        if (r < 0)
            json_decref(list);
        sbx_error_set(err, SBX_ERR_INTERNAL, "INTERNAL", NULL, "list_files: out of memory");
        return -ENOMEM;
    }
    return 0;
}
