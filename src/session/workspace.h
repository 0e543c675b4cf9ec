// SPDX-License-Identifier: MIT
/*
 * workspace — what sessions keep between them, per workspace: memories (JSON
 * values by key, with their times and metadata), saved tools (function
 * definitions loaded into later sessions), files, and the files of sessions'
 * execution folders kept after them (runs). The sandboxed code
 * reaches it only through session RPCs, and operators through
 * /v1/workspaces/..., so every name, size and nesting is checked here before
 * the store (store/store.h: the state directory or PostgreSQL) keeps it;
 * the store holds the quotas, counts and atomic writes, the same for both.
 *
 * A workspace is opened by its key, "name" or "tenant/name"
 * (workspace_key()), so that two tenants' workspaces of one name never meet.
 * A memory is stored as one compact JSON document {key, value, metadata,
 * createdAt, updatedAt}; its size (what the quota counts) is that
 * document's. A save may name the revision it read ("ifRev", from a load):
 * it is written only if the memory is still that one (update_memory's
 * compare-and-swap, atomic across sessions and instances).
 *
 * Errors: -errno and *err: -EINVAL (a bad name or value), -EFBIG (over a
 * size limit), -EDQUOT (the workspace's or the tenant's quota, an entry
 * count or the tenant's workspace count), -ENOTCONN (the store is
 * unavailable: STORE_UNAVAILABLE), -EPROTO (the database refused), any
 * other -errno from the state directory's file system (-ENOSPC: its disk is
 * full).
 *
 * Thread-safe.
 */
#ifndef SANDBOXD_SESSION_WORKSPACE_H
#define SANDBOXD_SESSION_WORKSPACE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "store/store.h"
#include "util/error.h"

#define WORKSPACE_MAX_KEY      256                /* bytes of a memory key */
#define WORKSPACE_MAX_METADATA 4096               /* bytes of a memory's metadata, compact JSON */
#define WORKSPACE_MAX_DEPTH    64                 /* nesting of a memory's value and metadata */
#define WORKSPACE_MAX_TOOL     (256u << 10)       /* bytes of a saved tool's source */
#define WORKSPACE_MAX_NAME     128                /* bytes of a tool or file name */
#define WORKSPACE_MAX_KEY_LEN  STORE_MAX_KEY_LEN  /* bytes of a workspace or tenant name */
#define WORKSPACE_MAX_RUN_NAME STORE_MAX_RUN_NAME /* bytes of a kept file's name (runs) */
#define WORKSPACE_DOC_OVERHEAD 8192 /* a memory document's bytes besides value and metadata */

struct workspace_limits {
    size_t max_value; /* one memory value, compact JSON bytes */
    size_t max_file;  /* one saved file */
};

struct tenant;
struct workspace_store;
struct workspace;

/* The store's limits that fit lim (max_item of each kind) with the quotas given. */
struct store_limits workspace_store_limits(const struct workspace_limits *lim, size_t max_bytes,
                                           size_t max_entries, size_t tenant_bytes,
                                           size_t tenant_workspaces);
/* store: borrowed, outlives the workspace store. */
int workspace_store_new(struct store *store, const struct workspace_limits *lim,
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
struct store_share workspace_share_of(const struct tenant *t);
/* The workspace of key ("name", or "tenant/name" from workspace_key()): -EINVAL for a bad key,
 * -ENOENT when it does not exist and create is false, -EDQUOT when making it would give the
 * tenant more than its maxWorkspaces, -ENOTCONN when the store is unavailable. share: the
 * tenant's (workspace_share_of), NULL for the store's defaults. Close each open. */
int workspace_open(struct workspace_store *s, const char *key, const struct store_share *share,
                   bool create, struct workspace **ret, struct sbx_error *err);
/* The most workspaces a tenant with share may have (for messages). */
size_t workspace_max_workspaces(const struct workspace_store *s, const struct store_share *share);
void workspace_close(struct workspace *w);
/* Its name, without the tenant (borrowed). */
const char *workspace_name(const struct workspace *w);

/* A memory request from a session: {"op": save|load|delete|info|list, "key", "value",
 * "metadata", "ifRev"}. 0 and *ret_payload on success (a save whose "ifRev" no longer holds
 * answers {"saved": false}); -errno and *err when not. */
int workspace_memory(struct workspace *w, json_t *req, json_t **ret_payload, struct sbx_error *err);
/* Store a memory brought from elsewhere (sandboxd migrate) with its own times (ISO 8601 UTC
 * strings; NULL: now). value and metadata are borrowed. -EEXIST when the workspace has that
 * key already: nothing is replaced; other errors as workspace_memory. */
int workspace_import_memory(struct workspace *w, const char *key, json_t *value, json_t *metadata,
                            const char *created_at, const char *updated_at, struct sbx_error *err);
/* {"memories": [{key, metadata, createdAt, updatedAt, size}]} by key. */
int workspace_list_memories(struct workspace *w, json_t **ret_payload, struct sbx_error *err);
/* -ENOENT when there is no such memory. */
int workspace_delete_memory(struct workspace *w, const char *key, struct sbx_error *err);

/* Keep source as the saved tool name: name a Python identifier that is none of the session's
 * own names, source one function definition ("def" or "async def" first; the session runtime
 * checks the rest with ast before it saves and again before it loads). */
int workspace_save_tool(struct workspace *w, const char *name, const char *source,
                        struct sbx_error *err);
/* [{name, source, size, modifiedAt}] of the saved tools, by name (new reference). */
int workspace_tools(struct workspace *w, json_t **ret_tools, struct sbx_error *err);
int workspace_delete_tool(struct workspace *w, const char *name, struct sbx_error *err);

int workspace_save_file(struct workspace *w, const char *name, const void *data, size_t len,
                        json_t **ret_payload, struct sbx_error *err);
/* Keep a file of a session's execution folder (path: relative to the sessions' folder of
 * executions, e.g. "0001-20261126-101500/images/chart.png"; session: a short tag of the
 * session) in the workspace's runs, as "<session>_<path, '/' as '_'>", within the quota, so
 * that it outlives the session. 0 and *ret_payload {name, size, hostPath}: hostPath, absolute,
 * for a file:// URL, is the file in the state directory, or with PostgreSQL this host's copy
 * (store_host_path()). -EINVAL (a path of other characters, or "..", or too long), -EFBIG,
 * -EDQUOT, -ENOTCONN, or the file system's error, with *err. */
int workspace_keep_file(struct workspace *w, const char *session, const char *path,
                        const void *data, size_t len, json_t **ret_payload, struct sbx_error *err);
/* {"files": [{name, size, modifiedAt}]} by name. */
int workspace_files(struct workspace *w, json_t **ret_payload, struct sbx_error *err);
/* {bytes, maxBytes, memories, tools, files, runFiles, and for a tenant's workspace "tenant":
 * {bytes, maxBytes, workspaces, maxWorkspaces}, all its workspaces together} (new reference);
 * {} when the store cannot tell now. */
json_t *workspace_usage(struct workspace *w);

#endif
