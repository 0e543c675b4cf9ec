// SPDX-License-Identifier: MIT
/*
 * workspace — what sessions keep between them, per workspace, on the host
 * (never inside a sandbox's tmpfs): memories (JSON values by key), saved
 * tools (function definitions loaded into later sessions) and files. The
 * sandboxed code reaches it only through session RPCs, and operators through
 * /v1/workspaces/..., so every name is validated here, every path is
 * resolved relative to directory fds with O_NOFOLLOW, writes are atomic
 * (temp file + rename) and everything is capped.
 *
 * Layout: STATE_DIR/workspaces/<name>/{memory,tools,files,runs}/, and for the
 * workspaces of a tenant STATE_DIR/tenants/<tenant>/workspaces/<name>/...:
 * a workspace is opened by its key, "name" or "tenant/name"
 * (workspace_key()), so that two tenants' workspaces of one name never meet;
 * workspace_open() is the one place that decides where a key leads. Files are
 * compact JSON; the quota counts the bytes stored (values, metadata, keys,
 * timestamps), and is checked and written under one lock per workspace, so
 * concurrent sessions cannot pass it together. An open workspace keeps an
 * index in memory (names, sizes, and for memories key, metadata and times),
 * built once from the directory, so listing and quota checks read no file.
 * One sandboxd process is meant to own a state directory: the index sees
 * another process's writes the next time the workspace is opened here.
 *
 * A tenant's workspaces share one account (wsshare.c): all of them together
 * hold at most the tenant's quota, and a tenant has at most maxWorkspaces of
 * them; the operator's have the per-workspace quota only.
 *
 * Errors: -EINVAL (a bad name or value), -EFBIG (over a size limit),
 * -EDQUOT (the workspace's or the tenant's quota, an entry count or the
 * tenant's workspace count is reached) are sandboxd's
 * rules; any other -errno comes from the file system (-ENOSPC: the state
 * directory's disk is full).
 *
 * Thread-safe.
 */
#ifndef SANDBOXD_SESSION_WORKSPACE_H
#define SANDBOXD_SESSION_WORKSPACE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define WORKSPACE_MAX_KEY      256          /* bytes of a memory key */
#define WORKSPACE_MAX_METADATA 4096         /* bytes of a memory's metadata, compact JSON */
#define WORKSPACE_MAX_DEPTH    64           /* nesting of a memory's value and metadata */
#define WORKSPACE_MAX_TOOL     (256u << 10) /* bytes of a saved tool's source */
#define WORKSPACE_MAX_NAME     128          /* bytes of a tool or file name */
#define WORKSPACE_MAX_KEY_LEN  64           /* bytes of a workspace or tenant name */
#define WORKSPACE_MAX_RUN_NAME 200          /* bytes of a kept execution-folder file's name */

struct workspace_limits {
    size_t max_value;         /* one memory value, compact JSON bytes */
    size_t max_bytes;         /* everything stored in one workspace */
    size_t max_entries;       /* memories, tools or files, each */
    size_t max_file;          /* one saved file */
    size_t tenant_bytes;      /* everything one tenant stores, all its workspaces together */
    size_t tenant_workspaces; /* workspaces one tenant has */
};

/* A tenant's own share (the tenants file's quotaMb and maxWorkspaces); a 0 field takes the
 * store's tenant_bytes or tenant_workspaces. */
struct workspace_share {
    size_t max_bytes;
    size_t max_workspaces;
};

struct tenant;
struct workspace_store;
struct workspace;

/* Creates STATE_DIR (0700) if needed. */
int workspace_store_new(const char *state_dir, const struct workspace_limits *lim,
                        struct workspace_store **ret);
/* Every workspace must be closed first. NULL-safe. */
void workspace_store_free(struct workspace_store *s);
/* NULL when name may be a workspace ([A-Za-z0-9._-], 1-64 bytes, not starting with '.'),
 * else why not (static). */
const char *workspace_check_name(const char *name);
/* The store's key of workspace name of tenant (NULL: the operator's); caller frees, NULL when
 * out of memory. */
char *workspace_key(const char *tenant, const char *name);
/* The workspace name within a key (borrowed from key). */
const char *workspace_key_name(const char *key);

/* The share of tenant (NULL: the operator, who has none) as its tenants file entry sets it. */
struct workspace_share workspace_share_of(const struct tenant *t);
/* The workspace of key ("name", or "tenant/name" from workspace_key()): -EINVAL for a bad key,
 * -ENOENT when it does not exist and create is false, -EDQUOT when making it would give the
 * tenant more than its maxWorkspaces. share: the tenant's (workspace_share_of), NULL for the
 * store's defaults. Opened once per key and shared (reference-counted); close each open. */
int workspace_open(struct workspace_store *s, const char *key, const struct workspace_share *share,
                   bool create, struct workspace **ret);
/* The most workspaces a tenant with share may have (for messages). */
size_t workspace_max_workspaces(const struct workspace_store *s,
                                const struct workspace_share *share);
void workspace_close(struct workspace *w);
/* Its name, without the tenant (borrowed). */
const char *workspace_name(const struct workspace *w);

/* A memory request from a session: {"op": save|load|delete|info|list, "key", "value",
 * "metadata"}. 0 and *ret_payload on success; -errno and *ret_error (caller frees) when not. */
int workspace_memory(struct workspace *w, json_t *req, json_t **ret_payload, char **ret_error);
/* Store a memory brought from elsewhere (sandboxd migrate) with its own times (ISO 8601 UTC
 * strings; NULL: now). value and metadata are borrowed. -EEXIST (and *ret_error) when the
 * workspace has that key already: nothing is replaced; other errors as workspace_memory. */
int workspace_import_memory(struct workspace *w, const char *key, json_t *value, json_t *metadata,
                            const char *created_at, const char *updated_at, char **ret_error);
/* {"memories": [{key, metadata, createdAt, updatedAt, size}]} by key, from the index. */
int workspace_list_memories(struct workspace *w, json_t **ret_payload, char **ret_error);
/* -ENOENT when there is no such memory. */
int workspace_delete_memory(struct workspace *w, const char *key);

/* Keep source as the saved tool name: name a Python identifier that is none of the session's
 * own names, source one function definition ("def" or "async def" first; the session runtime
 * checks the rest with ast before it saves and again before it loads). */
int workspace_save_tool(struct workspace *w, const char *name, const char *source,
                        char **ret_error);
/* [{name, source, size, modifiedAt}] of the saved tools, by name (new reference). */
int workspace_tools(struct workspace *w, json_t **ret_tools, char **ret_error);
int workspace_delete_tool(struct workspace *w, const char *name);

int workspace_save_file(struct workspace *w, const char *name, const void *data, size_t len,
                        json_t **ret_payload, char **ret_error);
/* Keep a file of a session's execution folder (path: relative to the sessions' folder of
 * executions, e.g. "0001-20261126-101500/images/chart.png"; session: a short tag of the
 * session) in the workspace's runs/ directory, as "<session>_<path, '/' as '_'>", within the
 * quota, so that it outlives the session. 0 and *ret_payload {name, size, hostPath (absolute:
 * for a file:// URL)}; -EINVAL (a path of other characters, or "..", or too long), -EFBIG,
 * -EDQUOT, or the file system's error, with *ret_error. */
int workspace_keep_file(struct workspace *w, const char *session, const char *path,
                        const void *data, size_t len, json_t **ret_payload, char **ret_error);
/* {"files": [{name, size, modifiedAt}]} by name. */
int workspace_files(struct workspace *w, json_t **ret_payload, char **ret_error);
/* {bytes, maxBytes, memories, tools, files, runFiles, and for a tenant's workspace "tenant":
 * {bytes, maxBytes, workspaces, maxWorkspaces}, all its workspaces together} (new reference). */
json_t *workspace_usage(struct workspace *w);

#endif
