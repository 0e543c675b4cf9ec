// SPDX-License-Identifier: MIT
/*
 * store_dir_int — shared by the state directory's backend: store_dir.c (the
 * store, open workspaces, their index and items), store_dir_each.c (every
 * workspace, for sandboxd migrate), store_dir_share.c (a
 * tenant's account, all its workspaces together) and store_dir_run.c (the
 * local framework's runtime values).
 *
 * Layout of STATE_DIR:
 *   workspaces/<name>/{memory,tools,files,runs}/      the operator's workspaces
 *   tenants/<tenant>/workspaces/<name>/...            a tenant's
 *   runstate/<32 hex>.json                            runtime values
 * memory/<sanitised key>-<16 hex>.json (the memory document), tools/<name>.py,
 * files/<name>, runs/<name> (kept files of execution folders: written without a disk flush);
 * every write is a temporary file renamed over the old one.
 */
#ifndef SANDBOXD_STORE_STORE_DIR_INT_H
#define SANDBOXD_STORE_STORE_DIR_INT_H

#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>
#include <uthash.h>

#include "store/store_int.h"

struct store_dir_account;
struct store_dir_space;
struct store_dir_run;

struct store_dir {
    struct store base;
    char *dir;
    int state_fd;         /* STATE_DIR */
    int root_fd;          /* STATE_DIR/workspaces: the operator's workspaces */
    pthread_mutex_t lock; /* open, accounts */
    struct store_dir_ws *open;
    struct store_dir_account *accounts; /* by tenant, made on first use */
    struct store_dir_run *run;
};

/* One stored file of a workspace. */
struct store_dir_entry {
    char *file;          /* its name in the kind's directory */
    size_t size;         /* bytes on disk */
    int64_t modified_ms; /* its mtime */
    json_t *info;        /* memories: read when first needed */
    uint64_t rev;        /* memories: with info */
    UT_hash_handle hh;
};

struct store_dir_ws {
    struct store_ws base;
    struct store_dir_account *account;   /* its tenant's, NULL for the operator's */
    struct store_dir_space *space;       /* its own part of the account */
    char key[2 * STORE_MAX_KEY_LEN + 2]; /* "name" or "tenant/name" */
    unsigned refs;                       /* under the store's lock */
    pthread_mutex_t lock; /* everything below; held across a room check and its write */
    int dirfd[STORE_KINDS];
    bool indexed;
    struct store_dir_entry *entries[STORE_KINDS];
    size_t count[STORE_KINDS];
    size_t bytes;
    UT_hash_handle hh;
};

/* A directory stream of dirfd's directory (any fd of it, O_PATH too) with a file description
 * of its own; NULL with errno set. */
DIR *store_dir_opendir(int dirfd);
/* Call fn for each stored file of kind k in dirfd (a directory fd opened for reading,
 * borrowed): regular, not hidden, with the kind's suffix; at most cap of them. Stops at fn's
 * first error and returns it; -errno when dirfd cannot be read. */
typedef int (*store_dir_scan_fn)(void *userdata, const char *name, const struct stat *st);
int store_dir_scan(int dirfd, enum store_kind k, size_t cap, store_dir_scan_fn fn, void *userdata);
/* Atomic replace of dirfd/name with data: a temporary file, written (and synced when sync),
 * renamed. */
int store_dir_write(int dirfd, const char *name, const void *data, size_t len, bool sync);
/* The directory dirfd/name (O_PATH, a new fd), created first when create is set. */
int store_dir_subdir(int dirfd, const char *name, bool create);
/* The directory holding the workspaces of tenant ("": the operator's), a new fd: a tenant's
 * are under STATE_DIR/tenants/<tenant>/workspaces, so no name can reach another's. */
int store_dir_parent(struct store_dir *ds, const char *tenant, bool create);

/* ---- store_dir_each.c: every workspace, for sandboxd migrate ---- */
int store_dir_each_workspace(struct store *s, store_ws_fn fn, void *userdata,
                             struct sbx_error *err);

/* ---- store_dir_share.c: a tenant's share, all its workspaces together ---- */

/* The account of tenant (the store's lock held): found, or made by counting what parent (the
 * tenant's workspaces directory, an O_PATH fd, borrowed) holds. */
int store_dir_account_get(struct store_dir *ds, const char *tenant, int parent,
                          const struct store_share *share, struct store_dir_account **ret);
void store_dir_account_free_all(struct store_dir *ds);
/* Workspace name's part of the account (store's lock held): 0, or -ENOENT when it has none,
 * or -EDQUOT when it has none and create would make the tenant's maxWorkspaces + 1. */
int store_dir_account_space(struct store_dir_account *a, const char *name, bool create,
                            struct store_dir_space **ret);
/* A part for a workspace now on disk (store's lock held), counted from 0 until it is indexed. */
int store_dir_account_add(struct store_dir_account *a, const char *name,
                          struct store_dir_space **ret);
/* Charge n more bytes to sp: -EDQUOT (and *err, what naming the operation) when the tenant's
 * quota has no room. NULL a: always room. */
int store_dir_account_reserve(struct store_dir_account *a, struct store_dir_space *sp, size_t n,
                              const char *what, struct sbx_error *err);
/* Give back n bytes of sp (a failed write, a smaller file, a removal). NULL a: nothing. */
void store_dir_account_refund(struct store_dir_account *a, struct store_dir_space *sp, size_t n);
/* sp holds bytes, as its index found (NULL a: nothing). */
void store_dir_account_recount(struct store_dir_account *a, struct store_dir_space *sp,
                               size_t bytes);
/* {bytes, maxBytes, workspaces, maxWorkspaces} (new reference). */
json_t *store_dir_account_usage(struct store_dir_account *a);

/* ---- store_dir_run.c: runtime values ---- */

/* Read STATE_DIR/runstate into memory (made if need be). */
int store_dir_run_open(struct store_dir *ds);
void store_dir_run_close(struct store_dir *ds);
int store_dir_run_set(struct store *s, const char *app, const char *key, const char *text,
                      size_t len, int64_t written_ms, bool only_new, struct sbx_error *err);
int store_dir_run_get(struct store *s, const char *app, const char *key, char **ret_text,
                      size_t *ret_len, struct sbx_error *err);
int store_dir_each_run(struct store *s, store_run_fn fn, void *userdata, struct sbx_error *err);

#endif
