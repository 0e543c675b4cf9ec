// SPDX-License-Identifier: MIT
/*
 * store_dir — the state directory's backend (see store.h, store_dir_int.h
 * for the layout): the embedded default, for one sandboxd process per
 * directory. An open workspace keeps an index in memory (file names, sizes,
 * times, and for memories their info), built once from the directory, so
 * that listings and room checks read no file; a room check and its write
 * happen under one lock per workspace, and the tenant's account is charged
 * in the same step (store_dir_share.c). Another process's writes are seen
 * by reads at once and by the index the next time the workspace is opened
 * here. Every path is resolved relative to directory fds with O_NOFOLLOW;
 * item names are single path components (memory keys are hashed into one).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store_dir_int.h"
#include "util/fdio.h"
#include "util/fmt.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/path.h"
#include "util/randid.h"
#include "util/trust.h"

static const struct store_ops store_dir_ops;

static const char *store_dir_suffix(enum store_kind k)
{
    return k == STORE_MEMORY ? ".json" : k == STORE_TOOL ? ".py" : "";
}

/* The file of item name of kind k into out: memories "<up to 40 safe chars>-<16 hex of
 * BLAKE2b(key)>.json" (two keys never share a file and no key can name a path), tools
 * "<name>.py", files the name (path_check_name()'s), kept files the name (up to
 * STORE_MAX_RUN_NAME bytes). -EINVAL when name cannot be one (a path, too long). */
static int store_dir_file(enum store_kind k, const char *name, char out[STORE_MAX_NAME + 8])
{
    if (k == STORE_MEMORY) {
        unsigned char h[8];
        crypto_generichash(h, sizeof(h), (const unsigned char *)name, strlen(name), NULL, 0);
        size_t n = 0;
        for (const char *p = name; *p && n < 40; p++) {
            char c = *p;
            bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '_' || c == '-';
            out[n++] = safe ? c : '_';
        }
        out[n++] = '-';
        sodium_bin2hex(out + n, 2 * sizeof(h) + 1, h, sizeof(h));
        strcpy(out + n + 2 * sizeof(h), ".json");
        return 0;
    }
    if (k == STORE_RUN ? !store_plain_name(name, STORE_MAX_RUN_NAME)
                       : path_check_name(name) || strlen(name) > 128)
        return -EINVAL;
    snprintf(out, STORE_MAX_NAME + 8, "%s%s", name, store_dir_suffix(k));
    return 0;
}

static int store_dir_bad_name(struct sbx_error *err)
{
    sbx_error_set(err, SBX_ERR_INVALID, "INVALID_REQUEST", NULL,
                  "the state directory keeps items of names [A-Za-z0-9._-] only");
    return -EINVAL;
}

/* ---- the store ----------------------------------------------------------------------------- */

int store_dir_new(const struct store_options *opts, struct store **ret)
{
    _cleanup_free_ char *root = NULL;
    if (!opts->state_dir || asprintf(&root, "%s/workspaces", opts->state_dir) < 0)
        return -ENOMEM;
    _cleanup_sbx_error_ struct sbx_error why = {0};
    /* Saved tools found here run in sessions: the directory is ours and private even when it
     * is only read (docs/SECURITY.md "The state directory"). */
    int r = opts->read_only ? trust_check(opts->state_dir, TRUST_DIR, &why)
                            : trust_make_dir(root, &why);
    if (r < 0)
        return log_errno(LOG_ERROR, r, "store: %s (set --state-dir)",
                         why.message ? why.message : "cannot create the state directory");
    struct store_dir *ds = calloc(1, sizeof(*ds));
    if (!ds)
        return -ENOMEM;
    ds->base.ops = &store_dir_ops;
    ds->base.lim = opts->lim;
    ds->base.run = opts->run;
    ds->base.read_only = opts->read_only;
    pthread_mutex_init(&ds->lock, NULL);
    ds->state_fd = open(opts->state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    ds->root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    /* Absolute: the file:// URLs of kept files are made of it (store_dir_host_path). */
    ds->dir = realpath(opts->state_dir, NULL);
    /* A state directory only read may have no workspaces at all. */
    bool no_root = ds->root_fd < 0 && errno == ENOENT && opts->read_only;
    if (ds->state_fd < 0 || (ds->root_fd < 0 && !no_root) || !ds->dir) {
        r = ds->state_fd < 0 || ds->root_fd < 0
                ? log_errno(LOG_ERROR, errno, "store: cannot open %s", root)
                : -ENOMEM;
        store_dir_ops.free(&ds->base);
        return r;
    }
    if ((r = store_dir_run_open(ds)) < 0) {
        store_dir_ops.free(&ds->base);
        return r;
    }
    *ret = &ds->base;
    return 0;
}

static void store_dir_free(struct store *s)
{
    struct store_dir *ds = (struct store_dir *)s;
    if (ds->open)
        log_warn("store: %u workspaces still open at exit", HASH_COUNT(ds->open));
    store_dir_run_close(ds);
    store_dir_account_free_all(ds);
    if (ds->root_fd >= 0)
        close(ds->root_fd);
    if (ds->state_fd >= 0)
        close(ds->state_fd);
    pthread_mutex_destroy(&ds->lock);
    free(ds->dir);
    free(ds);
}

static bool store_dir_ready(struct store *s, const char **ret_why)
{
    (void)s;
    *ret_why = NULL;
    return true;
}

static int store_dir_wait(struct store *s, int wait_ms)
{
    (void)s;
    (void)wait_ms;
    return 0; /* the file system answers at once */
}

static json_t *store_dir_describe(struct store *s)
{
    struct store_dir *ds = (struct store_dir *)s;
    return json_pack("{s:s, s:s, s:s}", "backend", "directory", "location", ds->dir, "state",
                     "ready");
}

/* ---- opening ------------------------------------------------------------------------------- */

static void store_dir_entry_free(struct store_dir_entry *e)
{
    if (!e)
        return;
    free(e->file);
    json_decref(e->info);
    free(e);
}

static void store_dir_forget_index(struct store_dir_ws *w)
{
    for (int k = 0; k < STORE_KINDS; k++) {
        struct store_dir_entry *e, *tmp;
        HASH_ITER(hh, w->entries[k], e, tmp)
        {
            HASH_DEL(w->entries[k], e);
            store_dir_entry_free(e);
        }
        w->count[k] = 0;
    }
    w->bytes = 0;
    w->indexed = false;
}

static void store_dir_ws_free(struct store_dir_ws *w)
{
    store_dir_forget_index(w);
    for (int k = 0; k < STORE_KINDS; k++)
        if (w->dirfd[k] >= 0)
            close(w->dirfd[k]);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

int store_dir_subdir(int dirfd_, const char *name, bool create)
{
    if (create && mkdirat(dirfd_, name, 0700) < 0 && errno != EEXIST)
        return -errno;
    int fd = openat(dirfd_, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

int store_dir_parent(struct store_dir *ds, const char *tenant, bool create)
{
    if (!*tenant) {
        int fd = ds->root_fd < 0 ? -1 : fcntl(ds->root_fd, F_DUPFD_CLOEXEC, 3);
        return ds->root_fd < 0 ? -ENOENT : fd < 0 ? -errno : fd;
    }
    _cleanup_close_ int all = store_dir_subdir(ds->state_fd, "tenants", create);
    if (all < 0)
        return all;
    _cleanup_close_ int mine = store_dir_subdir(all, tenant, create);
    return mine < 0 ? mine : store_dir_subdir(mine, "workspaces", create);
}

static int store_dir_opendirs(struct store_dir_ws *w, int parent, bool create)
{
    bool read_only = w->base.store->read_only;
    _cleanup_close_ int wfd = store_dir_subdir(parent, w->base.name, create);
    if (wfd < 0)
        return wfd;
    for (int k = 0; k < STORE_KINDS; k++) {
        if (!read_only && mkdirat(wfd, store_kind_name(k), 0700) < 0 && errno != EEXIST)
            return -errno;
        w->dirfd[k] =
            openat(wfd, store_kind_name(k), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        /* only read: a kind it never had holds nothing (dirfd -1) */
        if (w->dirfd[k] < 0 && !(read_only && errno == ENOENT))
            return -errno;
    }
    return 0;
}

/* Open w's directories below the directory of its tenant (store's lock held), and for a
 * tenant's workspace its part of the tenant's account: a workspace the tenant does not have
 * yet is made only within its maxWorkspaces. */
static int store_dir_open_locked(struct store_dir *ds, struct store_dir_ws *w,
                                 const struct store_share *share, bool create)
{
    const char *tenant = w->base.tenant;
    _cleanup_close_ int parent = store_dir_parent(ds, tenant, create);
    if (parent < 0)
        return parent;
    if (!*tenant)
        return store_dir_opendirs(w, parent, create);
    int r = store_dir_account_get(ds, tenant, parent, share, &w->account);
    if (r < 0)
        return r;
    r = store_dir_account_space(w->account, w->base.name, create, &w->space);
    if (r == -EDQUOT)
        return r;
    bool counted = r == 0;
    r = store_dir_opendirs(w, parent, create);
    if (r == 0 && !counted) /* made now, or by someone else since the account was counted */
        r = store_dir_account_add(w->account, w->base.name, &w->space);
    return r;
}

static int store_dir_ws_open(struct store *s, const char *tenant, const char *name,
                             const struct store_share *share, bool create, struct store_ws **ret,
                             struct sbx_error *err)
{
    struct store_dir *ds = (struct store_dir *)s;
    char key[sizeof(((struct store_dir_ws *)0)->key)];
    snprintf(key, sizeof(key), "%s%s%s", tenant, *tenant ? "/" : "", name);
    pthread_mutex_lock(&ds->lock);
    struct store_dir_ws *w = NULL;
    HASH_FIND_STR(ds->open, key, w);
    if (w) {
        w->refs++;
        pthread_mutex_unlock(&ds->lock);
        *ret = &w->base;
        return 0;
    }
    int r = -ENOMEM;
    w = calloc(1, sizeof(*w));
    if (w) {
        w->base.store = s;
        snprintf(w->base.tenant, sizeof(w->base.tenant), "%s", tenant);
        snprintf(w->base.name, sizeof(w->base.name), "%s", name);
        snprintf(w->key, sizeof(w->key), "%s", key);
        w->refs = 1;
        for (int k = 0; k < STORE_KINDS; k++)
            w->dirfd[k] = -1;
        pthread_mutex_init(&w->lock, NULL);
        r = store_dir_open_locked(ds, w, share, create);
    }
    if (r < 0) {
        pthread_mutex_unlock(&ds->lock);
        if (w)
            store_dir_ws_free(w);
        if (r == -EDQUOT)
            sbx_error_set(err, SBX_ERR_LIMIT, "QUOTA_EXCEEDED", "workspace",
                          "tenant '%s' has %zu workspaces, its maxWorkspaces", tenant,
                          store_tenant_workspaces(&s->lim, share));
        else if (r == -ENOENT)
            sbx_error_set(err, SBX_ERR_NOT_FOUND, "NOT_FOUND", "workspace", "no workspace %s",
                          name);
        else
            sbx_error_set(err, SBX_ERR_INTERNAL, "INTERNAL", "workspace",
                          "workspace %s is unavailable: %s", name, strerror(-r));
        return r;
    }
    HASH_ADD_STR(ds->open, key, w);
    pthread_mutex_unlock(&ds->lock);
    *ret = &w->base;
    return 0;
}

static void store_dir_ws_close(struct store_ws *base)
{
    struct store_dir_ws *w = (struct store_dir_ws *)base;
    struct store_dir *ds = (struct store_dir *)base->store;
    pthread_mutex_lock(&ds->lock);
    bool last = --w->refs == 0;
    if (last)
        HASH_DEL(ds->open, w);
    pthread_mutex_unlock(&ds->lock);
    /* The index goes with the last user: a workspace nobody uses costs no memory. */
    if (last)
        store_dir_ws_free(w);
}

/* ---- the index ----------------------------------------------------------------------------- */

static bool store_dir_has_suffix(const char *name, const char *suffix)
{
    size_t l = strlen(name), sl = strlen(suffix);
    return l > sl && strcmp(name + l - sl, suffix) == 0;
}

DIR *store_dir_opendir(int dirfd)
{
    /* A file description of its own: reading it moves no offset another reader shares. */
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d && fd >= 0) {
        int saved = errno;
        close(fd);
        errno = saved;
    }
    return d;
}

int store_dir_scan(int dirfd, enum store_kind k, size_t cap, store_dir_scan_fn fn, void *userdata)
{
    if (dirfd < 0) /* a kind a workspace only read never had */
        return 0;
    DIR *d = store_dir_opendir(dirfd);
    if (!d)
        return -errno;
    int r = 0;
    size_t n = 0;
    struct dirent *e;
    /* A directory filled behind our back is read only so far. */
    while (r == 0 && n < cap && (e = readdir(d))) {
        struct stat st;
        if (e->d_name[0] == '.' || !store_dir_has_suffix(e->d_name, store_dir_suffix(k)) ||
            fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
            continue;
        r = fn(userdata, e->d_name, &st);
        n++;
    }
    closedir(d);
    return r;
}

static int64_t store_dir_mtime_ms(const struct stat *st)
{
    return (int64_t)st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000;
}

struct store_dir_index_scan {
    struct store_dir_ws *w;
    enum store_kind k;
};

static int store_dir_index_entry(void *userdata, const char *name, const struct stat *st)
{
    struct store_dir_index_scan *x = userdata;
    struct store_dir_entry *e = calloc(1, sizeof(*e));
    if (!e || !(e->file = strdup(name))) {
        free(e);
        return -ENOMEM;
    }
    e->size = (size_t)st->st_size;
    e->modified_ms = store_dir_mtime_ms(st);
    HASH_ADD_KEYPTR(hh, x->w->entries[x->k], e->file, strlen(e->file), e);
    x->w->count[x->k]++;
    x->w->bytes += e->size;
    return 0;
}

/* Build the index if it is not (w's lock held). */
static int store_dir_index(struct store_dir_ws *w, struct sbx_error *err)
{
    if (w->indexed)
        return 0;
    const struct store_limits *lim = &w->base.store->lim;
    for (int k = 0; k < STORE_KINDS; k++) {
        struct store_dir_index_scan x = {.w = w, .k = k};
        int r = store_dir_scan(w->dirfd[k], k, 2 * lim->max_entries, store_dir_index_entry, &x);
        if (r < 0) {
            store_dir_forget_index(w);
            sbx_error_set(err, SBX_ERR_INTERNAL, "INTERNAL", NULL, "workspace unavailable: %s",
                          strerror(-r));
            return r;
        }
    }
    w->indexed = true;
    /* What is on disk now is what the tenant's account has for this workspace. */
    store_dir_account_recount(w->account, w->space, w->bytes);
    return 0;
}

static struct store_dir_entry *store_dir_find(struct store_dir_ws *w, enum store_kind k,
                                              const char *file)
{
    struct store_dir_entry *e = NULL;
    HASH_FIND_STR(w->entries[k], file, e);
    return e;
}

/* Read file of kind k (at most the kind's largest item): 0 and *ret_data, or -errno. */
static int store_dir_read(struct store_dir_ws *w, enum store_kind k, const char *file,
                          char **ret_data, size_t *ret_len)
{
    if (w->dirfd[k] < 0) /* a kind a workspace only read never had */
        return -ENOENT;
    return fd_read_file_flags(w->dirfd[k], file, O_NOFOLLOW, w->base.store->lim.max_item[k],
                              ret_data, ret_len);
}

/* A memory entry's info and revision, read from its file once (w's lock held). -EBADMSG when
 * the file holds no memory document. */
static int store_dir_info(struct store_dir_ws *w, struct store_dir_entry *e)
{
    if (e->info)
        return 0;
    char *data = NULL;
    size_t len = 0;
    int r = store_dir_read(w, STORE_MEMORY, e->file, &data, &len);
    if (r < 0)
        return r;
    e->info = store_memory_info(data, len, NULL, NULL);
    e->rev = store_rev(data, len);
    free(data);
    return e->info ? 0 : -EBADMSG;
}

/* The listing's name of e (borrowed from e). */
static const char *store_dir_name_of(enum store_kind k, struct store_dir_entry *e, char *buf,
                                     size_t size)
{
    if (k == STORE_MEMORY)
        return json_string_value(json_object_get(e->info, "key"));
    size_t n = strlen(e->file) - strlen(store_dir_suffix(k));
    snprintf(buf, size, "%.*s", (int)n, e->file);
    return buf;
}

static int store_dir_item(enum store_kind k, struct store_dir_entry *e, struct store_item *it)
{
    char buf[STORE_MAX_NAME + 8];
    const char *name = store_dir_name_of(k, e, buf, sizeof(buf));
    *it = (struct store_item){.size = e->size,
                              .modified_ms = e->modified_ms,
                              .rev = e->rev,
                              .info = json_incref(e->info),
                              .name = name ? strdup(name) : NULL};
    return it->name ? 0 : -ENOMEM;
}

/* ---- items --------------------------------------------------------------------------------- */

static int store_dir_get(struct store_ws *base, enum store_kind k, const char *name, bool with_data,
                         struct store_item **ret, struct sbx_error *err)
{
    struct store_dir_ws *w = (struct store_dir_ws *)base;
    char file[STORE_MAX_NAME + 8];
    if (store_dir_file(k, name, file) < 0)
        return -ENOENT; /* no such name can be stored here */
    struct store_item *it = calloc(1, sizeof(*it));
    if (!it)
        return store_fail(err, -ENOMEM, "read");
    int r = 0;
    if (with_data) {
        /* From the file, not the index: another process's write is seen too. */
        r = store_dir_read(w, k, file, &it->data, &it->len);
        struct stat st;
        if (r == 0 && fstatat(w->dirfd[k], file, &st, AT_SYMLINK_NOFOLLOW) == 0)
            it->modified_ms = store_dir_mtime_ms(&st);
        if (r == 0 && k == STORE_MEMORY) {
            it->info = store_memory_info(it->data, it->len, NULL, NULL);
            it->rev = store_rev(it->data, it->len);
            /* a file we cannot read, or of another key, is no memory of this one */
            if (!it->info || strcmp(json_string_value(json_object_get(it->info, "key")), name))
                r = -ENOENT;
        }
        it->size = it->len;
        if (r == 0 && !(it->name = strdup(name)))
            r = -ENOMEM;
        if (r == -ELOOP || r == -EBADMSG)
            r = -ENOENT;
    } else {
        pthread_mutex_lock(&w->lock);
        r = store_dir_index(w, err);
        struct store_dir_entry *e = r == 0 ? store_dir_find(w, k, file) : NULL;
        if (r == 0 && !e)
            r = -ENOENT;
        if (r == 0 && k == STORE_MEMORY && store_dir_info(w, e) < 0)
            r = -ENOENT;
        if (r == 0 && k == STORE_MEMORY &&
            strcmp(json_string_value(json_object_get(e->info, "key")), name) != 0)
            r = -ENOENT;
        if (r == 0)
            r = store_dir_item(k, e, it);
        pthread_mutex_unlock(&w->lock);
    }
    if (r < 0) {
        store_item_free(it);
        if (r != -ENOENT && !err->message)
            store_fail(err, r, "read");
        return r;
    }
    *ret = it;
    return 0;
}

static int store_dir_cmp_file(const struct store_dir_entry *a, const struct store_dir_entry *b)
{
    return strcmp(a->file, b->file);
}

static int store_dir_cmp_item(const void *a, const void *b)
{
    return strcmp(((const struct store_item *)a)->name, ((const struct store_item *)b)->name);
}

static int store_dir_list(struct store_ws *base, enum store_kind k, bool with_data,
                          struct store_item **ret_items, size_t *ret_n, struct sbx_error *err)
{
    struct store_dir_ws *w = (struct store_dir_ws *)base;
    pthread_mutex_lock(&w->lock);
    int r = store_dir_index(w, err);
    size_t n = 0;
    struct store_item *items = NULL;
    if (r == 0 && w->count[k] && !(items = calloc(w->count[k], sizeof(*items))))
        r = store_fail(err, -ENOMEM, "list");
    if (r == 0 && k != STORE_MEMORY)
        HASH_SORT(w->entries[k], store_dir_cmp_file);
    for (struct store_dir_entry *e = r == 0 ? w->entries[k] : NULL; e && r == 0; e = e->hh.next) {
        /* An unreadable memory file is no memory: left out. */
        if (k == STORE_MEMORY && store_dir_info(w, e) < 0)
            continue;
        struct store_item *it = &items[n];
        if (store_dir_item(k, e, it) < 0) {
            r = store_fail(err, -ENOMEM, "list");
            break;
        }
        n++;
        if (with_data && store_dir_read(w, k, e->file, &it->data, &it->len) < 0) {
            /* removed or replaced behind our back: not an item now */
            free(it->name);
            json_decref(it->info);
            *it = (struct store_item){0};
            n--;
        }
    }
    pthread_mutex_unlock(&w->lock);
    if (r < 0) {
        store_items_free(items, n);
        return r;
    }
    if (k == STORE_MEMORY && n > 1) /* by key, as the other kinds are by name */
        qsort(items, n, sizeof(*items), store_dir_cmp_item);
    *ret_items = items;
    *ret_n = n;
    return 0;
}

static int store_dir_put(struct store_ws *base, enum store_kind k, const char *name,
                         store_compose_fn compose, void *userdata, int64_t modified_ms,
                         const char *what, struct sbx_error *err)
{
    struct store_dir_ws *w = (struct store_dir_ws *)base;
    const struct store_limits *lim = &base->store->lim;
    char file[STORE_MAX_NAME + 8];
    if (store_dir_file(k, name, file) < 0)
        return store_dir_bad_name(err);
    pthread_mutex_lock(&w->lock);
    int r = store_dir_index(w, err);
    struct store_dir_entry *e = r == 0 ? store_dir_find(w, k, file) : NULL;
    struct store_item old = {0};
    /* A memory file of another key (or none readable) is replaced as if absent. */
    bool exists = e && (k != STORE_MEMORY || store_dir_info(w, e) == 0);
    if (exists && store_dir_item(k, e, &old) < 0)
        r = store_fail(err, -ENOMEM, what);
    char *data = NULL;
    size_t len = 0;
    if (r == 0)
        r = compose(userdata, exists ? &old : NULL, &data, &len, err);
    free(old.name);
    json_decref(old.info);
    struct store_room room = {.what = what,
                              .kind = k,
                              .exists = e != NULL,
                              .old_size = e ? e->size : 0,
                              .new_size = len,
                              .count = w->count[k],
                              .ws_bytes = w->bytes};
    if (r == 0)
        r = store_check_room(lim, &room, err);
    size_t old_size = e ? e->size : 0, grows = len > old_size ? len - old_size : 0;
    /* The tenant's share is charged first: the charge is the check (store_dir_share.c). */
    if (r == 0)
        r = store_dir_account_reserve(w->account, w->space, grows, what, err);
    struct store_dir_entry *fresh = NULL;
    if (r == 0 && !e && (!(fresh = calloc(1, sizeof(*fresh))) || !(fresh->file = strdup(file)))) {
        free(fresh);
        fresh = NULL;
        store_dir_account_refund(w->account, w->space, grows);
        r = store_fail(err, -ENOMEM, what);
    }
    /* The copies of execution folders are not worth a disk flush each (one or two per run of
     * --compat code-execution-mode): a crash of the machine may lose the last ones. */
    if (r == 0 && (r = store_dir_write(w->dirfd[k], file, data, len, k != STORE_RUN)) < 0) {
        store_dir_entry_free(fresh);
        store_dir_account_refund(w->account, w->space, grows);
        sbx_error_set(err, SBX_ERR_INTERNAL, "INTERNAL", NULL, "%s: %s", what, strerror(-r));
    }
    if (r == 0) {
        if (modified_ms > 0) {
            struct timespec ts[2] = {
                {.tv_nsec = UTIME_OMIT},
                {.tv_sec = modified_ms / 1000, .tv_nsec = (modified_ms % 1000) * 1000000}};
            (void)utimensat(w->dirfd[k], file, ts, AT_SYMLINK_NOFOLLOW); /* a time, not data */
        }
        store_dir_account_refund(w->account, w->space, old_size > len ? old_size - len : 0);
        if (fresh) {
            e = fresh;
            HASH_ADD_KEYPTR(hh, w->entries[k], e->file, strlen(e->file), e);
            w->count[k]++;
        }
        w->bytes = w->bytes - old_size + len;
        e->size = len;
        e->modified_ms = modified_ms > 0 ? modified_ms : store_now_ms();
        json_decref(e->info);
        e->info = k == STORE_MEMORY ? store_memory_info(data, len, NULL, NULL) : NULL;
        e->rev = k == STORE_MEMORY ? store_rev(data, len) : 0;
    }
    pthread_mutex_unlock(&w->lock);
    free(data);
    return r;
}

static int store_dir_del(struct store_ws *base, enum store_kind k, const char *name,
                         struct sbx_error *err)
{
    struct store_dir_ws *w = (struct store_dir_ws *)base;
    char file[STORE_MAX_NAME + 8];
    if (store_dir_file(k, name, file) < 0)
        return -ENOENT;
    pthread_mutex_lock(&w->lock);
    int r = store_dir_index(w, err);
    struct store_dir_entry *e = r == 0 ? store_dir_find(w, k, file) : NULL;
    if (r == 0 && !e)
        r = -ENOENT;
    if (r == 0 && unlinkat(w->dirfd[k], file, 0) < 0 && errno != ENOENT) {
        r = -errno;
        sbx_error_set(err, SBX_ERR_INTERNAL, "INTERNAL", NULL, "cannot delete it: %s",
                      strerror(-r));
    }
    if (r == 0) {
        HASH_DEL(w->entries[k], e);
        w->count[k]--;
        w->bytes -= e->size;
        store_dir_account_refund(w->account, w->space, e->size);
        store_dir_entry_free(e);
    }
    pthread_mutex_unlock(&w->lock);
    return r;
}

static json_t *store_dir_usage(struct store_ws *base, struct sbx_error *err)
{
    struct store_dir_ws *w = (struct store_dir_ws *)base;
    pthread_mutex_lock(&w->lock);
    json_t *o =
        store_dir_index(w, err) < 0
            ? NULL
            : json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "bytes", (json_int_t)w->bytes, "maxBytes",
                        (json_int_t)base->store->lim.max_bytes, "memories",
                        (json_int_t)w->count[STORE_MEMORY], "tools",
                        (json_int_t)w->count[STORE_TOOL], "files", (json_int_t)w->count[STORE_FILE],
                        "runFiles", (json_int_t)w->count[STORE_RUN]);
    if (o && w->account)
        json_object_set_new(o, "tenant", store_dir_account_usage(w->account));
    pthread_mutex_unlock(&w->lock);
    return o;
}

/* The item's own file: the state directory is absolute (store_dir_new). */
static int store_dir_host_path(struct store_ws *base, enum store_kind k, const char *name,
                               const void *data, size_t len, char **ret, struct sbx_error *err)
{
    (void)data;
    (void)len;
    char file[STORE_MAX_NAME + 8];
    if (k == STORE_MEMORY || store_dir_file(k, name, file) < 0)
        return store_dir_bad_name(err);
    _cleanup_free_ char *rel = store_item_relpath(base, k, file);
    *ret = rel ? fmt_str("%s/%s", ((struct store_dir *)base->store)->dir, rel) : NULL;
    return *ret ? 0 : store_fail(err, -ENOMEM, "path");
}

int store_dir_write(int dirfd, const char *name, const void *data, size_t len, bool sync)
{
    char tmp[32] = ".tmp-";
    int r = randid_hex(tmp + 5, sizeof(tmp) - 5, 8);
    if (r < 0)
        return r;
    int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    r = fd_write_all(fd, data, len, 0);
    if (r == 0 && sync && fdatasync(fd) < 0)
        r = -errno;
    if (close(fd) < 0 && r == 0)
        r = -errno; /* a full disk may only show here (NFS, some FUSE) */
    if (r == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
        r = -errno;
    if (r < 0)
        (void)unlinkat(dirfd, tmp, 0); /* best effort: the write already failed */
    return r;
}

int store_write_below(const char *root, const char *rel, const void *data, size_t len, bool sync)
{
    int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    _cleanup_free_ char *dirs = strdup(rel);
    char *file = dirs ? strrchr(dirs, '/') : NULL;
    int r = !dirs ? -ENOMEM : !file ? -EINVAL : 0;
    if (r == 0)
        *file++ = '\0';
    /* Each directory below root in turn, made when missing, never through a symlink. */
    char *save = NULL;
    for (char *d = r == 0 ? strtok_r(dirs, "/", &save) : NULL; d && r == 0;
         d = strtok_r(NULL, "/", &save)) {
        if (!store_plain_name(d, NAME_MAX)) {
            r = -EINVAL; /* no "..": every part of rel is a name */
            break;
        }
        int next = store_dir_subdir(fd, d, true);
        close(fd);
        fd = next;
        r = next < 0 ? next : 0;
    }
    if (r == 0)
        r = store_plain_name(file, NAME_MAX) ? store_dir_write(fd, file, data, len, sync) : -EINVAL;
    if (fd >= 0)
        close(fd);
    return r;
}

static const struct store_ops store_dir_ops = {
    .backend = "directory",
    .free = store_dir_free,
    .ready = store_dir_ready,
    .wait = store_dir_wait,
    .describe = store_dir_describe,
    .ws_open = store_dir_ws_open,
    .ws_close = store_dir_ws_close,
    .get = store_dir_get,
    .list = store_dir_list,
    .put = store_dir_put,
    .del = store_dir_del,
    .host_path = store_dir_host_path,
    .usage = store_dir_usage,
    .run_set = store_dir_run_set,
    .run_get = store_dir_run_get,
    .each_workspace = store_dir_each_workspace,
    .each_run = store_dir_each_run,
};
