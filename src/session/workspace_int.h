// SPDX-License-Identifier: MIT
/*
 * workspace_int — shared by workspace.c (the store, the index, tools and
 * files) and wsmemory.c (memories): the open workspace and its index.
 */
#ifndef SANDBOXD_SESSION_WORKSPACE_INT_H
#define SANDBOXD_SESSION_WORKSPACE_INT_H

#include <pthread.h>
#include <stdint.h>
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

struct workspace {
    struct workspace_store *store;
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
/* The current time as an ISO 8601 string (UTC, seconds) into out[32]. */
void ws_timestamp(time_t t, char out[32]);

#endif
