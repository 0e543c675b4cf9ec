// SPDX-License-Identifier: MIT
/*
 * wsshare — a tenant's share of the workspace store (see workspace.h): what
 * all its workspaces hold together and how many there are, against the
 * tenant's quotaMb and maxWorkspaces. The one place that counts per tenant:
 * workspace.c asks it before it makes a workspace and before every write
 * that grows one, and tells it every removal, so a store of another kind
 * (a database) keeps the same rules by moving these functions.
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

#include "session/workspace_int.h"
#include "util/fmt.h"
#include "util/macros.h"

struct ws_space {
    char name[WORKSPACE_MAX_KEY_LEN + 1];
    size_t bytes;
    UT_hash_handle hh;
};

struct ws_account {
    char tenant[WORKSPACE_MAX_KEY_LEN + 1];
    /* Everything below; taken under a workspace's lock or the store's, never the other way. */
    pthread_mutex_t lock;
    size_t max_bytes, max_spaces;
    size_t bytes;
    struct ws_space *spaces; /* added under the store's lock too */
    size_t n_spaces;
    UT_hash_handle hh;
};

static void ws_limits_of(struct ws_account *a, const struct workspace_limits *lim,
                         const struct workspace_share *share)
{
    a->max_bytes = share && share->max_bytes ? share->max_bytes : lim->tenant_bytes;
    a->max_spaces = share && share->max_workspaces ? share->max_workspaces : lim->tenant_workspaces;
}

static int ws_sum_entry(void *userdata, const char *name, const struct stat *st)
{
    (void)name;
    *(size_t *)userdata += (size_t)st->st_size;
    return 0;
}

/* The bytes workspace name (below parent) holds, as its index would count them. */
static size_t ws_space_bytes(int parent, const char *name, const struct workspace_limits *lim)
{
    _cleanup_close_ int wfd = openat(parent, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    size_t bytes = 0;
    for (int k = 0; wfd >= 0 && k < WS_KINDS; k++) {
        _cleanup_close_ int fd =
            openat(wfd, ws_kind_name(k), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        /* A kind missing or unreadable holds nothing the index would count either. */
        if (fd >= 0)
            (void)ws_scan(fd, k, 2 * lim->max_entries, ws_sum_entry, &bytes);
    }
    return bytes;
}

static int ws_space_new(struct ws_account *a, const char *name, size_t bytes, struct ws_space **ret)
{
    struct ws_space *sp = calloc(1, sizeof(*sp));
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
static int ws_account_count(struct ws_account *a, int parent, const struct workspace_limits *lim)
{
    DIR *d = ws_opendir(parent);
    if (!d)
        return -errno;
    int r = 0;
    struct dirent *e;
    while (r == 0 && (e = readdir(d)) && a->n_spaces < 2 * a->max_spaces) {
        struct stat st;
        struct ws_space *sp;
        if (workspace_check_name(e->d_name) ||
            fstatat(parent, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
            continue;
        r = ws_space_new(a, e->d_name, ws_space_bytes(parent, e->d_name, lim), &sp);
    }
    closedir(d);
    return r;
}

static void ws_account_free(struct ws_account *a)
{
    struct ws_space *sp, *tmp;
    HASH_ITER(hh, a->spaces, sp, tmp)
    {
        HASH_DEL(a->spaces, sp);
        free(sp);
    }
    pthread_mutex_destroy(&a->lock);
    free(a);
}

int ws_account_get(struct ws_account **table, const char *tenant, int parent,
                   const struct workspace_limits *lim, const struct workspace_share *share,
                   struct ws_account **ret)
{
    struct ws_account *a = NULL;
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

void ws_account_free_all(struct ws_account **table)
{
    struct ws_account *a, *tmp;
    HASH_ITER(hh, *table, a, tmp)
    {
        HASH_DEL(*table, a);
        ws_account_free(a);
    }
}

int ws_account_space(struct ws_account *a, const char *name, bool create, struct ws_space **ret)
{
    struct ws_space *sp = NULL;
    pthread_mutex_lock(&a->lock);
    HASH_FIND_STR(a->spaces, name, sp);
    int r = sp ? 0 : create && a->n_spaces >= a->max_spaces ? -EDQUOT : -ENOENT;
    pthread_mutex_unlock(&a->lock);
    *ret = sp;
    return r;
}

int ws_account_add(struct ws_account *a, const char *name, struct ws_space **ret)
{
    pthread_mutex_lock(&a->lock);
    int r = ws_space_new(a, name, 0, ret);
    pthread_mutex_unlock(&a->lock);
    return r;
}

int ws_account_reserve(struct ws_account *a, struct ws_space *sp, size_t n, const char *what,
                       char **ret_error)
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
    return fmt_error(ret_error, EDQUOT,
                     "%s: tenant '%s' has stored what its quota allows, all its workspaces "
                     "together (%zu of %zu bytes used; this needs %zu more)",
                     what, a->tenant, used, max, n);
}

void ws_account_refund(struct ws_account *a, struct ws_space *sp, size_t n)
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

void ws_account_recount(struct ws_account *a, struct ws_space *sp, size_t bytes)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->lock);
    a->bytes = a->bytes - sp->bytes + bytes;
    sp->bytes = bytes;
    pthread_mutex_unlock(&a->lock);
}

json_t *ws_account_usage(struct ws_account *a)
{
    pthread_mutex_lock(&a->lock);
    json_t *o = json_pack("{s:I, s:I, s:I, s:I}", "bytes", (json_int_t)a->bytes, "maxBytes",
                          (json_int_t)a->max_bytes, "workspaces", (json_int_t)a->n_spaces,
                          "maxWorkspaces", (json_int_t)a->max_spaces);
    pthread_mutex_unlock(&a->lock);
    return o;
}
