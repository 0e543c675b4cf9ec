// SPDX-License-Identifier: MIT
/*
 * store_int — what store.c (the front: checks, shared rules) and the
 * backends (store_dir*.c, store_pg*.c) share: the table of a backend's
 * operations, the store and open workspace they embed, and the rules of a
 * write's room that both apply word for word.
 */
#ifndef SANDBOXD_STORE_STORE_INT_H
#define SANDBOXD_STORE_STORE_INT_H

#include "store/store.h"

struct store_ops {
    const char *backend;
    void (*free)(struct store *s);
    bool (*ready)(struct store *s, const char **ret_why);
    int (*wait)(struct store *s, int wait_ms);
    json_t *(*describe)(struct store *s);
    int (*ws_open)(struct store *s, const char *tenant, const char *name,
                   const struct store_share *share, bool create, struct store_ws **ret,
                   struct sbx_error *err);
    void (*ws_close)(struct store_ws *w);
    int (*get)(struct store_ws *w, enum store_kind k, const char *name, bool with_data,
               struct store_item **ret, struct sbx_error *err);
    int (*list)(struct store_ws *w, enum store_kind k, bool with_data,
                struct store_item **ret_items, size_t *ret_n, struct sbx_error *err);
    /* modified_ms 0: now. */
    int (*put)(struct store_ws *w, enum store_kind k, const char *name, store_compose_fn compose,
               void *userdata, int64_t modified_ms, const char *what, struct sbx_error *err);
    int (*del)(struct store_ws *w, enum store_kind k, const char *name, struct sbx_error *err);
    int (*host_path)(struct store_ws *w, enum store_kind k, const char *name, const void *data,
                     size_t len, char **ret, struct sbx_error *err);
    json_t *(*usage)(struct store_ws *w, struct sbx_error *err);
    /* text: the value's JSON within the caps (store.c checked them); written_ms 0: now. */
    int (*run_set)(struct store *s, const char *app, const char *key, const char *text, size_t len,
                   int64_t written_ms, bool only_new, struct sbx_error *err);
    int (*run_get)(struct store *s, const char *app, const char *key, char **ret_text,
                   size_t *ret_len, struct sbx_error *err);
    int (*each_workspace)(struct store *s, store_ws_fn fn, void *userdata, struct sbx_error *err);
    int (*each_run)(struct store *s, store_run_fn fn, void *userdata, struct sbx_error *err);
};

struct store {
    const struct store_ops *ops;
    struct store_limits lim;
    struct state_limits run; /* every field set (the defaults filled in) */
    bool read_only;
};

/* An open workspace; a backend's own struct begins with it. */
struct store_ws {
    struct store *store;
    char tenant[STORE_MAX_KEY_LEN + 1]; /* "": the operator's */
    char name[STORE_MAX_KEY_LEN + 1];
};

int store_dir_new(const struct store_options *opts, struct store **ret);
int store_pg_new(const struct store_options *opts, int wait_ms, struct store **ret);

/* What a write needs room for, and what there is. */
struct store_room {
    const char *what; /* the operation, for messages */
    enum store_kind kind;
    bool exists; /* the item is there now */
    size_t old_size, new_size;
    size_t count;        /* items of the kind in the workspace */
    size_t ws_bytes;     /* what the workspace holds */
    const char *tenant;  /* NULL: the operator's, no tenant total */
    size_t tenant_bytes; /* what the tenant holds */
    size_t tenant_max;
};
/* 0 when the write fits every limit of lim, else -EDQUOT and *err saying which. */
int store_check_room(const struct store_limits *lim, const struct store_room *room,
                     struct sbx_error *err);
/* The tenant's quota and workspace count with share (NULL: lim's defaults). */
size_t store_tenant_bytes(const struct store_limits *lim, const struct store_share *share);
size_t store_tenant_workspaces(const struct store_limits *lim, const struct store_share *share);
/* 0 when tenant ("" or a name) and name may name a workspace, else -EINVAL and *err. */
int store_check_ws_name(const char *tenant, const char *name, struct sbx_error *err);
/* Fill *err for -errno r of operation what (a file system or memory failure). */
int store_fail(struct sbx_error *err, int r, const char *what);
/* A name of one path component: 1..max bytes of [A-Za-z0-9._-], not starting with '.'. */
bool store_plain_name(const char *name, size_t max);
/* The current time, ms since the epoch. */
int64_t store_now_ms(void);
/* Item w/k/name's path below a state directory's root: "[tenants/<tenant>/]workspaces/<name>/
 * <kind>/<file>" (file: the item's file name there); caller frees, NULL when out of memory. */
char *store_item_relpath(const struct store_ws *w, enum store_kind k, const char *file);
/* Write data as root/rel (rel: store_item_relpath()'s, a file below directories that are made,
 * 0700, when missing; no component followed through a symlink) by a temporary file renamed over
 * it; durable (fdatasync before the rename) when sync. root: an absolute directory. */
int store_write_below(const char *root, const char *rel, const void *data, size_t len, bool sync);

#endif
