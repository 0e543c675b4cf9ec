// SPDX-License-Identifier: MIT
/*
 * workspace_int — shared by workspace.c (the store, the index, tools and
 * files) and wsmemory.c (memories): the open workspace and its index.
 */
#ifndef SANDBOXD_SESSION_WORKSPACE_INT_H
#define SANDBOXD_SESSION_WORKSPACE_INT_H

#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>
#include <uthash.h>

#include "session/workspace.h"

enum ws_kind { WS_MEMORY, WS_TOOLS, WS_FILES, WS_RUNS, WS_KINDS };

/* One stored file of a workspace. */
struct ws_entry {
    char *file;      /* its name in the kind's directory */
    size_t size;     /* bytes on disk */
    time_t modified; /* seconds since the epoch */
    json_t *info;    /* memories: {key, metadata, createdAt, updatedAt}, read when first needed */
    UT_hash_handle hh;
};

struct ws_account;
struct ws_space;

struct workspace {
    struct workspace_store *store;
    struct ws_account *account;              /* its tenant's (wsshare.c), NULL for the operator's */
    struct ws_space *space;                  /* its own part of the account */
    char key[2 * WORKSPACE_MAX_KEY_LEN + 2]; /* "name" or "tenant/name" (workspace_key()) */
    unsigned refs;                           /* under the store's lock */
    pthread_mutex_t lock; /* everything below; held across a quota check and its write */
    int dirfd[WS_KINDS];
    bool indexed;
    struct ws_entry *entries[WS_KINDS];
    size_t count[WS_KINDS];
    size_t bytes;
    UT_hash_handle hh;
};

const struct workspace_limits *ws_limits(const struct workspace *w);
/* The directory name of kind k ("memory", "tools", "files"). */
const char *ws_kind_name(enum ws_kind k);
/* A directory stream of dirfd's directory (any fd of it, O_PATH too) with a file description
 * of its own; NULL with errno set. */
DIR *ws_opendir(int dirfd);
/* Call fn for each stored file of kind k in dirfd (a directory fd opened for reading,
 * borrowed): regular, not hidden, with the kind's suffix; at most cap of them. Stops at fn's
 * first error and returns it; -errno when dirfd cannot be read. */
typedef int (*ws_scan_fn)(void *userdata, const char *name, const struct stat *st);
int ws_scan(int dirfd, enum ws_kind k, size_t cap, ws_scan_fn fn, void *userdata);
/* Build the index if it is not (lock held). */
int ws_index(struct workspace *w);
struct ws_entry *ws_find(struct workspace *w, enum ws_kind k, const char *file);
/* Replace (or create) file of kind k with data, within the quota (lock held, index built).
 * what names the operation in messages. On success the entry (its info is dropped). */
int ws_store(struct workspace *w, enum ws_kind k, const char *file, const void *data, size_t len,
             const char *what, struct ws_entry **ret_entry, char **ret_error);
/* Remove file of kind k: -ENOENT when there is none (lock held, index built). */
int ws_remove(struct workspace *w, enum ws_kind k, const char *file);
/* The same, taking the lock and building the index. */
int ws_delete(struct workspace *w, enum ws_kind k, const char *file);
/* ---- wsshare.c: a tenant's share, all its workspaces together ---- */

/* The account of tenant in *table (the store's lock held): found, or made by counting what
 * parent (the tenant's workspaces directory, an O_PATH fd, borrowed) holds. share NULL: the
 * limits of lim. */
int ws_account_get(struct ws_account **table, const char *tenant, int parent,
                   const struct workspace_limits *lim, const struct workspace_share *share,
                   struct ws_account **ret);
void ws_account_free_all(struct ws_account **table);
/* Workspace name's part of the account (store's lock held): 0, or -ENOENT when it has none,
 * or -EDQUOT when it has none and create would make the tenant's maxWorkspaces + 1. */
int ws_account_space(struct ws_account *a, const char *name, bool create, struct ws_space **ret);
/* A part for a workspace now on disk (store's lock held), counted from 0 until it is indexed. */
int ws_account_add(struct ws_account *a, const char *name, struct ws_space **ret);
/* Charge n more bytes to sp: -EDQUOT (and *ret_error, what naming the operation) when the
 * tenant's quota has no room. NULL a: always room. */
int ws_account_reserve(struct ws_account *a, struct ws_space *sp, size_t n, const char *what,
                       char **ret_error);
/* Give back n bytes of sp (a failed write, a smaller file, a removal). NULL a: nothing. */
void ws_account_refund(struct ws_account *a, struct ws_space *sp, size_t n);
/* sp holds bytes, as its index found (NULL a: nothing). */
void ws_account_recount(struct ws_account *a, struct ws_space *sp, size_t bytes);
/* {bytes, maxBytes, workspaces, maxWorkspaces} (new reference). */
json_t *ws_account_usage(struct ws_account *a);

/* The current time as an ISO 8601 string (UTC, seconds) into out[32]. */
void ws_timestamp(time_t t, char out[32]);

#endif
