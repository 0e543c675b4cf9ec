// SPDX-License-Identifier: MIT
/*
 * store_dir_share — a tenant's share of the state directory (see store.h):
 * what all its workspaces hold together and how many there are, against the
 * tenant's quotaMb and maxWorkspaces. The one place of this backend that
 * counts per tenant: store_dir.c asks it before it makes a workspace and
 * before every write that grows one, and tells it every removal (the
 * PostgreSQL backend keeps the same rules in a row per tenant).
 *
 * An account is made the first time one of the tenant's workspaces is
 * opened, by reading what the tenant's directory holds (every workspace,
 * memories, saved tools and files), and kept until the store is freed: a
 * tenant's next session costs no scan. Bytes are charged before a write
 * (the reservation is the check, so two sessions of one tenant cannot pass
 * the quota together) and refunded when the write fails or a file shrinks
 * or goes. When a workspace's index is built, its count replaces what the
 * account had for it, so writes of another process are caught up then.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store_dir_int.h"
#include "util/path.h"
#include "util/macros.h"

struct store_dir_space {
    char name[STORE_MAX_KEY_LEN + 1];
    size_t bytes;
    UT_hash_handle hh;
};

struct store_dir_account {
    char tenant[STORE_MAX_KEY_LEN + 1];
    /* Everything below; taken under a workspace's lock or the store's, never the other way. */
    pthread_mutex_t lock;
    size_t max_bytes, max_spaces;
    size_t bytes;
    struct store_dir_space *spaces; /* added under the store's lock too */
    size_t n_spaces;
    UT_hash_handle hh;
};

static void ws_limits_of(struct store_dir_account *a, const struct store_limits *lim,
                         const struct store_share *share)
{
    a->max_bytes = store_tenant_bytes(lim, share);
    a->max_spaces = store_tenant_workspaces(lim, share);
}

static int ws_sum_entry(void *userdata, const char *name, const struct stat *st)
{
    (void)name;
    *(size_t *)userdata += (size_t)st->st_size;
    return 0;
}

/* The bytes workspace name (below parent) holds, as its index would count them. */
static size_t ws_space_bytes(int parent, const char *name, const struct store_limits *lim)
{
    _cleanup_close_ int wfd = openat(parent, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    size_t bytes = 0;
    for (int k = 0; wfd >= 0 && k < STORE_KINDS; k++) {
        _cleanup_close_ int fd =
            openat(wfd, store_kind_name(k), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        /* A kind missing or unreadable holds nothing the index would count either. */
        if (fd >= 0)
            (void)store_dir_scan(fd, k, 2 * lim->max_entries, ws_sum_entry, &bytes);
    }
    return bytes;
}

static int ws_space_new(struct store_dir_account *a, const char *name, size_t bytes,
                        struct store_dir_space **ret)
{
    struct store_dir_space *sp = calloc(1, sizeof(*sp));
    if (!sp)
        return -ENOMEM;
    snprintf(sp->name, sizeof(sp->name), "%s", name);
    sp->bytes = bytes;
    HASH_ADD_STR(a->spaces, name, sp);
    a->n_spaces++;
    a->bytes += bytes;
    *ret = sp;
    return 0;
}

/* Count what parent (the tenant's workspaces directory) holds into a fresh account. A
 * directory filled behind our back is read only so far: twice the cap of workspaces. */
static int ws_account_count(struct store_dir_account *a, int parent, const struct store_limits *lim)
{
    DIR *d = store_dir_opendir(parent);
    if (!d)
        return -errno;
    int r = 0;
    struct dirent *e;
    while (r == 0 && (e = readdir(d)) && a->n_spaces < 2 * a->max_spaces) {
        struct stat st;
        struct store_dir_space *sp;
        if (path_check_name(e->d_name) ||
            fstatat(parent, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
            continue;
        r = ws_space_new(a, e->d_name, ws_space_bytes(parent, e->d_name, lim), &sp);
    }
    closedir(d);
    return r;
}

static void ws_account_free(struct store_dir_account *a)
{
    struct store_dir_space *sp, *tmp;
    HASH_ITER(hh, a->spaces, sp, tmp)
    {
        HASH_DEL(a->spaces, sp);
        free(sp);
    }
    pthread_mutex_destroy(&a->lock);
    free(a);
}

int store_dir_account_get(struct store_dir *ds, const char *tenant, int parent,
                          const struct store_share *share, struct store_dir_account **ret)
{
    struct store_dir_account **table = &ds->accounts;
    const struct store_limits *lim = &ds->base.lim;
    struct store_dir_account *a = NULL;
    HASH_FIND_STR(*table, tenant, a);
    if (a) {
        if (share) { /* a tenant's share is fixed, but an open without one took the defaults */
            pthread_mutex_lock(&a->lock);
            ws_limits_of(a, lim, share);
            pthread_mutex_unlock(&a->lock);
        }
        *ret = a;
        return 0;
    }
    a = calloc(1, sizeof(*a));
    if (!a)
        return -ENOMEM;
    snprintf(a->tenant, sizeof(a->tenant), "%s", tenant);
    pthread_mutex_init(&a->lock, NULL);
    ws_limits_of(a, lim, share);
    int r = ws_account_count(a, parent, lim);
    if (r < 0) {
        ws_account_free(a);
        return r;
    }
    HASH_ADD_STR(*table, tenant, a);
    *ret = a;
    return 0;
}

void store_dir_account_free_all(struct store_dir *ds)
{
    struct store_dir_account **table = &ds->accounts;
    struct store_dir_account *a, *tmp;
    HASH_ITER(hh, *table, a, tmp)
    {
        HASH_DEL(*table, a);
        ws_account_free(a);
    }
}

int store_dir_account_space(struct store_dir_account *a, const char *name, bool create,
                            struct store_dir_space **ret)
{
    struct store_dir_space *sp = NULL;
    pthread_mutex_lock(&a->lock);
    HASH_FIND_STR(a->spaces, name, sp);
    int r = sp ? 0 : create && a->n_spaces >= a->max_spaces ? -EDQUOT : -ENOENT;
    pthread_mutex_unlock(&a->lock);
    *ret = sp;
    return r;
}

int store_dir_account_add(struct store_dir_account *a, const char *name,
                          struct store_dir_space **ret)
{
    pthread_mutex_lock(&a->lock);
    int r = ws_space_new(a, name, 0, ret);
    pthread_mutex_unlock(&a->lock);
    return r;
}

int store_dir_account_reserve(struct store_dir_account *a, struct store_dir_space *sp, size_t n,
                              const char *what, struct sbx_error *err)
{
    if (!a || !n)
        return 0;
    pthread_mutex_lock(&a->lock);
    size_t used = a->bytes, max = a->max_bytes;
    bool fits = n <= max && used <= max - n;
    if (fits) {
        a->bytes += n;
        sp->bytes += n;
    }
    pthread_mutex_unlock(&a->lock);
    if (fits)
        return 0;
    struct store_room room = {.what = what,
                              .exists = true,
                              .new_size = n,
                              .tenant = a->tenant,
                              .tenant_bytes = used,
                              .tenant_max = max};
    struct store_limits unbounded = {.max_bytes = SIZE_MAX, .max_entries = SIZE_MAX};
    return store_check_room(&unbounded, &room, err);
}

void store_dir_account_refund(struct store_dir_account *a, struct store_dir_space *sp, size_t n)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->lock);
    /* Clamped: a workspace another process emptied may give back more than was counted. */
    if (n > sp->bytes)
        n = sp->bytes;
    sp->bytes -= n;
    a->bytes -= n;
    pthread_mutex_unlock(&a->lock);
}

void store_dir_account_recount(struct store_dir_account *a, struct store_dir_space *sp,
                               size_t bytes)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->lock);
    a->bytes = a->bytes - sp->bytes + bytes;
    sp->bytes = bytes;
    pthread_mutex_unlock(&a->lock);
}

json_t *store_dir_account_usage(struct store_dir_account *a)
{
    pthread_mutex_lock(&a->lock);
    json_t *o = json_pack("{s:I, s:I, s:I, s:I}", "bytes", (json_int_t)a->bytes, "maxBytes",
                          (json_int_t)a->max_bytes, "workspaces", (json_int_t)a->n_spaces,
                          "maxWorkspaces", (json_int_t)a->max_spaces);
    pthread_mutex_unlock(&a->lock);
    return o;
}
