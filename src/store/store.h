// SPDX-License-Identifier: MIT
/*
 * store — what sandboxd keeps for its clients between requests, behind one
 * interface with two backends: the state directory (store_dir.c, the embedded
 * default: one machine, nothing to install) and PostgreSQL (store_pg.c,
 * `--state-store postgresql://...`: every instance that names the database
 * shares it). It holds
 *   - workspaces, per tenant ("" is the operator's), each with items of four
 *     kinds: memories (by key), saved tools (by name), files (by name) and the
 *     kept files of sessions' execution folders (runs, by name); their bytes
 *     and counts are held to the limits, per workspace and per tenant, in the
 *     same step that writes (one lock, or one transaction);
 *   - the local framework's runtime values, (app, key) -> JSON, bounded and
 *     expiring (store/state.h has the bounds).
 *
 * It decides nothing about what an item means (session/workspace.c does:
 * names, sizes, the memory document), with one exception both backends share:
 * a memory's data is a JSON object whose "value" member the store never
 * parses; what a listing shows of it (its "info") is the object without that
 * member, and its revision is a hash of the data (store_rev()).
 *
 * Names and values travel as parameters, never as SQL text; the state
 * directory takes item names of one path component only and resolves every
 * path relative to directory fds with O_NOFOLLOW. Writes are atomic: a reader
 * sees an item as it was before or after a write, never a part of it.
 *
 * Errors: -errno and *err (the kind a front end maps; api/status.c for HTTP):
 * -EINVAL (a bad name), -ENOENT (no such item or workspace), -EDQUOT (a quota,
 * an entry count or the tenant's workspace count), -ENOTCONN with kind
 * SBX_ERR_UNAVAILABLE and code STORE_UNAVAILABLE (the database cannot be
 * reached now, or did not answer in time: retry later), -EIO and others (the
 * file system, or the database refused a statement). Thread-safe.
 */
#ifndef SANDBOXD_STORE_STORE_H
#define SANDBOXD_STORE_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/state.h"
#include "util/error.h"

#define STORE_MAX_NAME     1024 /* bytes of an item's name (a memory key is capped lower above) */
#define STORE_MAX_KEY_LEN  64   /* bytes of a workspace or tenant name */
#define STORE_MAX_RUN_NAME 200  /* bytes of a kept file's name (runs: flat, [A-Za-z0-9._-]) */
#define STORE_UNAVAILABLE  "STORE_UNAVAILABLE"
#define STORE_TIMEOUT_MS   5000 /* default: a database statement, and waiting for a connection */
#define STORE_CONNECTIONS  4    /* default: connections of one instance to the database */
#define STORE_MAX_CONNECTS 256

enum store_kind { STORE_MEMORY, STORE_TOOL, STORE_FILE, STORE_RUN, STORE_KINDS };

struct store_limits {
    size_t max_bytes;             /* everything one workspace holds */
    size_t max_entries;           /* items of one kind in one workspace */
    size_t max_item[STORE_KINDS]; /* the largest item of each kind (bytes read at most) */
    size_t tenant_bytes;          /* everything one tenant holds, its workspaces together */
    size_t tenant_workspaces;     /* workspaces of one tenant */
};

/* A tenant's own share (its tenants file entry); a 0 field takes the limits' default. */
struct store_share {
    size_t max_bytes;
    size_t max_workspaces;
};

struct store_options {
    const char *url;           /* NULL: the state directory; else a libpq connection string */
    const char *state_dir;     /* the state directory (required without url; with it, where
                                  this host's copies of kept files go, NULL: none) */
    const char *password_file; /* PostgreSQL: the password is the file's first line */
    unsigned connections;      /* PostgreSQL: at most this many (0: STORE_CONNECTIONS) */
    unsigned timeout_ms;       /* PostgreSQL: one statement, one wait (0: STORE_TIMEOUT_MS) */
    struct store_limits lim;
    struct state_limits run; /* runtime values (0 fields: their defaults) */
    bool read_only;          /* a source to copy from (sandboxd migrate): nothing is made,
                                changed or removed there, not even a directory; writes fail
                                with -EROFS */
};

struct store;
struct store_ws;

/* One stored item as a listing or a read gives it; every member owned. */
struct store_item {
    char *name;          /* memories: the key */
    size_t size;         /* bytes counted against the limits: the data's length */
    int64_t modified_ms; /* last write, ms since the epoch */
    json_t *info;        /* memories: the data's object without "value"; NULL otherwise */
    uint64_t rev;        /* memories: store_rev() of the data; 0 otherwise */
    char *data;          /* when asked for (NUL-terminated), else NULL */
    size_t len;
};

/*
 * Make the store opts names. The state directory is created (0700) if need be. PostgreSQL:
 * the connection string is checked now (a bad one fails here, -EINVAL); the database itself
 * is reached in the background, so that a database that is down at start leaves sandboxd
 * running and not ready (store_ready()) until it answers; a database whose schema is newer
 * than this sandboxd knows is refused then, and for good (the log says which version).
 * wait_ms > 0: wait up to that long for the first answer, and fail (-ENOTCONN, or -EPROTO for
 * a newer schema) when there is none (`sandboxd migrate`).
 */
int store_new(const struct store_options *opts, int wait_ms, struct store **ret);
/* Every workspace must be closed first. NULL-safe. */
void store_free(struct store *s);
/* true when the store answers; else false and *ret_why (static) says why not. */
bool store_ready(struct store *s, const char **ret_why);
/* Wait up to wait_ms for the store to answer once (a database reached in the background): 0
 * when it is ready, else -ENOTCONN (or -EPROTONOSUPPORT: its schema is newer). */
int store_wait(struct store *s, int wait_ms);
/* {backend: "directory"|"postgresql", location (never a password), state, reason?,
 * connections?} for /healthz (new reference). */
json_t *store_describe(struct store *s);
/* "directory" or "postgresql". */
const char *store_backend(const struct store *s);
/* The limits the store was made with (borrowed). */
const struct store_limits *store_limits_of(const struct store *s);

/* ---- workspaces ---------------------------------------------------------------------------- */

/* Open workspace name of tenant ("": the operator's). -ENOENT when it does not exist and
 * create is false; -EDQUOT when making it would give the tenant more than its maxWorkspaces.
 * share: the tenant's (NULL: the limits' defaults). Close each open. */
int store_ws_open(struct store *s, const char *tenant, const char *name,
                  const struct store_share *share, bool create, struct store_ws **ret,
                  struct sbx_error *err);
void store_ws_close(struct store_ws *w);
/* The most workspaces a tenant with share may have. */
size_t store_max_workspaces(const struct store *s, const struct store_share *share);

/* The item of kind k called name: -ENOENT when there is none. with_data: read its data too. */
int store_get(struct store_ws *w, enum store_kind k, const char *name, bool with_data,
              struct store_item **ret, struct sbx_error *err);
/* Every item of kind k, by name (bytewise), at most max_entries of them; with_data: their data
 * too (an item that goes away meanwhile is left out). */
int store_list(struct store_ws *w, enum store_kind k, bool with_data, struct store_item **ret_items,
               size_t *ret_n, struct sbx_error *err);

/* Make the data of a write from the item as it is now (old: NULL when there is none; borrowed,
 * without its data), inside the write's lock or transaction: *ret_data (malloc'ed, the store
 * frees it) and *ret_len, or -errno and *err to write nothing (e.g. -ESTALE: not the revision
 * the caller read; -EEXIST: there is one already). Pure computation: no I/O, no lock taken. */
typedef int (*store_compose_fn)(void *userdata, const struct store_item *old, char **ret_data,
                                size_t *ret_len, struct sbx_error *err);
/* Write item name of kind k with what compose makes, within every limit (what names the
 * operation in messages: "memory", "save_tool", ...). */
int store_put(struct store_ws *w, enum store_kind k, const char *name, store_compose_fn compose,
              void *userdata, const char *what, struct sbx_error *err);
/* The same with data given (borrowed). */
int store_put_data(struct store_ws *w, enum store_kind k, const char *name, const void *data,
                   size_t len, const char *what, struct sbx_error *err);
/* Keep an item brought from elsewhere (sandboxd migrate) with its own time of last write, within
 * every limit: -EEXIST when the workspace has one of that name already (nothing is replaced). */
int store_import(struct store_ws *w, enum store_kind k, const char *name, const void *data,
                 size_t len, int64_t modified_ms, struct sbx_error *err);
/* Where this host can read the data of item name of kind k, written a moment ago (data, len:
 * what was written), for a file:// URL: *ret, an absolute path (caller frees). The state
 * directory gives its own file. PostgreSQL writes a copy of data (no disk flush) into the state
 * directory's copies/, laid out as the state directory lays out workspaces: this host's alone,
 * a cache that may be removed at any time (the item stays in the database). -EOPNOTSUPP when
 * there is none to give (PostgreSQL without a state directory), or the file system's error,
 * with *err. */
int store_host_path(struct store_ws *w, enum store_kind k, const char *name, const void *data,
                    size_t len, char **ret, struct sbx_error *err);
/* -ENOENT when there is no such item. */
int store_delete(struct store_ws *w, enum store_kind k, const char *name, struct sbx_error *err);
/* {bytes, maxBytes, memories, tools, files, runFiles, and for a tenant's workspace "tenant":
 * {bytes, maxBytes, workspaces, maxWorkspaces}} (new reference), NULL and *err when unavailable. */
json_t *store_usage(struct store_ws *w, struct sbx_error *err);

/* ---- runtime values of the local framework ------------------------------------------------- */

/* Keep value (borrowed) under (app, key): -E2BIG when the key or the value is over its cap. */
int store_run_set(struct store *s, const char *app, const char *key, json_t *value,
                  struct sbx_error *err);
/* The value under (app, key) (new reference), -ENOENT when there is none (or it expired). */
int store_run_get(struct store *s, const char *app, const char *key, json_t **ret,
                  struct sbx_error *err);

/* ---- moving state between stores (sandboxd migrate) ---------------------------------------- */

/* Call fn for each workspace, by tenant then name; stops at fn's first error and returns it. */
typedef int (*store_ws_fn)(void *userdata, const char *tenant, const char *name);
int store_each_workspace(struct store *s, store_ws_fn fn, void *userdata, struct sbx_error *err);
/* Call fn for each runtime value (the value's JSON text, borrowed), oldest first. */
typedef int (*store_run_fn)(void *userdata, const char *app, const char *key, const char *text,
                            int64_t written_ms);
int store_each_run(struct store *s, store_run_fn fn, void *userdata, struct sbx_error *err);
/* Keep a runtime value brought from elsewhere with its own time: -EEXIST when (app, key) has
 * one already (nothing is replaced). */
int store_run_import(struct store *s, const char *app, const char *key, const char *text,
                     int64_t written_ms, struct sbx_error *err);

/* ---- shared by the backends ---------------------------------------------------------------- */

/* "memory", "tools", "files", "runs": also the kinds' directories in the state directory. */
const char *store_kind_name(enum store_kind k);
/* The revision of an item's data: 63 bits of a BLAKE2b hash, never 0. */
uint64_t store_rev(const void *data, size_t len);
/* A memory's info: its data's object without "value" (new reference), NULL when the data is
 * not such an object with a string "key". *ret_value_start/_end: the value's span. */
json_t *store_memory_info(const char *data, size_t len, size_t *ret_value_start,
                          size_t *ret_value_end);
void store_item_free(struct store_item *it);
void store_items_free(struct store_item *items, size_t n);

#endif
