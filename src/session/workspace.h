// SPDX-License-Identifier: MIT
/*
 * workspace — what sessions keep between them, per workspace, on the host
 * (never inside a sandbox's tmpfs): memories (JSON values by key), saved
 * tools (function sources loaded into later sessions) and files. The
 * sandboxed code reaches it only through session RPCs, so every name is
 * validated here, every path is resolved relative to directory fds with
 * O_NOFOLLOW, writes are atomic (temp file + rename) and sizes are capped.
 *
 * Layout: STATE_DIR/workspaces/<name>/{memory,tools,files}/, and for the
 * workspaces of a tenant STATE_DIR/tenants/<tenant>/workspaces/<name>/...:
 * every function taking a workspace takes its key, "name" or "tenant/name"
 * (workspace_key()), so that two tenants' workspaces of one name never meet.
 * Thread-safe: the store is immutable after creation; concurrent writers of
 * one key race at rename level (last writer wins, never a torn file).
 */
#ifndef SANDBOXD_SESSION_WORKSPACE_H
#define SANDBOXD_SESSION_WORKSPACE_H

#include <jansson.h>
#include <stddef.h>

struct workspace_limits {
    size_t max_value;   /* one memory value, JSON bytes */
    size_t max_bytes;   /* everything of one workspace */
    size_t max_entries; /* memories, tools or files, each */
    size_t max_file;    /* one saved file */
};

struct workspace_store;

/* Creates STATE_DIR (0700) if needed. */
int workspace_store_new(const char *state_dir, const struct workspace_limits *lim,
                        struct workspace_store **ret);
void workspace_store_free(struct workspace_store *s);
const char *workspace_store_dir(const struct workspace_store *s);
/* NULL when name may be a workspace ([A-Za-z0-9._-], 1-64 bytes, not starting with '.'),
 * else why not (static). */
const char *workspace_check_name(const char *name);
/* The store's key of workspace name of tenant (NULL: the operator's); caller frees, NULL when
 * out of memory. */
char *workspace_key(const char *tenant, const char *name);
/* The workspace name within a key (borrowed from key). */
const char *workspace_key_name(const char *key);

/* A memory request from a session: {"op": save|load|delete|info|list, "key", "value",
 * "metadata"}. 0 and *ret_payload on success; -errno and *ret_error (caller frees) when the
 * request is refused. */
int workspace_memory(struct workspace_store *s, const char *ws, json_t *req, json_t **ret_payload,
                     char **ret_error);
int workspace_save_tool(struct workspace_store *s, const char *ws, const char *name,
                        const char *source, char **ret_error);
/* [{name, source}] of the workspace's saved tools, by name (new reference; [] when none). */
json_t *workspace_tools(struct workspace_store *s, const char *ws);
int workspace_save_file(struct workspace_store *s, const char *ws, const char *name,
                        const void *data, size_t len, json_t **ret_payload, char **ret_error);
/* [{name, size, modifiedAt}] (new reference). */
json_t *workspace_files(struct workspace_store *s, const char *ws);

#endif
