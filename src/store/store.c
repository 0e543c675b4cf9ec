// SPDX-License-Identifier: MIT
/*
 * store — see store.h: the front every caller goes through. It picks the
 * backend, checks what both backends would check alike (names, caps of
 * runtime values) and holds the rules they share word for word (the room of
 * a write, a memory's info, an item's revision), so that moving from one
 * backend to the other changes no message and no limit.
 */
#include "store/store.h"

#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/jsonscan.h"
#include "store/store_int.h"
#include "util/fmt.h"
#include "util/macros.h"
#include "util/path.h"

#define STORE_MEMORY_DEPTH 66 /* a memory's document: its value and metadata nest 64 deep */

int store_new(const struct store_options *opts, int wait_ms, struct store **ret)
{
    struct store_options o = *opts;
    const struct state_limits *l = &opts->run;
    o.run = (struct state_limits){
        .max_key = l->max_key ? l->max_key : STATE_MAX_KEY,
        .max_value = l->max_value ? l->max_value : STATE_MAX_VALUE,
        .max_per_app = l->max_per_app ? l->max_per_app : STATE_MAX_PER_APP,
        .max_bytes = l->max_bytes ? l->max_bytes : STATE_MAX_BYTES,
        .ttl_us = l->ttl_us ? l->ttl_us : STATE_TTL_US,
    };
    /* Each backend keeps o.lim and o.run in its struct store before it reads anything. */
    return o.url ? store_pg_new(&o, wait_ms, ret) : store_dir_new(&o, ret);
}

void store_free(struct store *s)
{
    if (s)
        s->ops->free(s);
}

bool store_ready(struct store *s, const char **ret_why)
{
    return s->ops->ready(s, ret_why);
}

int store_wait(struct store *s, int wait_ms)
{
    return s->ops->wait(s, wait_ms);
}

json_t *store_describe(struct store *s)
{
    return s->ops->describe(s);
}

const char *store_backend(const struct store *s)
{
    return s->ops->backend;
}

const struct store_limits *store_limits_of(const struct store *s)
{
    return &s->lim;
}

const char *store_kind_name(enum store_kind k)
{
    static const char *const names[STORE_KINDS] = {"memory", "tools", "files", "runs"};
    return (unsigned)k < STORE_KINDS ? names[k] : "?";
}

int64_t store_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int store_fail(struct sbx_error *err, int r, const char *what)
{
    sbx_error_set(err, SBX_ERR_INTERNAL, "INTERNAL", NULL, "%s: %s", what, strerror(-r));
    return r;
}

/* ---- workspaces ---------------------------------------------------------------------------- */

static int store_read_only(struct sbx_error *err)
{
    sbx_error_set(err, SBX_ERR_INTERNAL, "INTERNAL", NULL, "this store is only read here");
    return -EROFS;
}

int store_check_ws_name(const char *tenant, const char *name, struct sbx_error *err)
{
    const char *why = *tenant ? path_check_name(tenant) : NULL;
    if (!why && strlen(tenant) > STORE_MAX_KEY_LEN)
        why = "is too long";
    if (why) {
        sbx_error_set(err, SBX_ERR_INVALID, "INVALID_REQUEST", "tenant", "tenant: %s", why);
        return -EINVAL;
    }
    why = path_check_name(name);
    if (!why && strlen(name) > STORE_MAX_KEY_LEN)
        why = "is too long";
    if (why) {
        sbx_error_set(err, SBX_ERR_INVALID, "INVALID_REQUEST", "workspace", "workspace: %s", why);
        return -EINVAL;
    }
    return 0;
}

/* An item name: 1..STORE_MAX_NAME bytes, no NUL (C strings have none). The backends add
 * their own rules (one path component for the state directory). */
static int store_check_item(enum store_kind k, const char *name, struct sbx_error *err)
{
    size_t n = strlen(name);
    if ((unsigned)k >= STORE_KINDS || n == 0 || n > STORE_MAX_NAME) {
        sbx_error_set(err, SBX_ERR_INVALID, "INVALID_REQUEST", NULL,
                      "an item name is 1 to %d bytes", STORE_MAX_NAME);
        return -EINVAL;
    }
    return 0;
}

size_t store_tenant_bytes(const struct store_limits *lim, const struct store_share *share)
{
    return share && share->max_bytes ? share->max_bytes : lim->tenant_bytes;
}

size_t store_tenant_workspaces(const struct store_limits *lim, const struct store_share *share)
{
    return share && share->max_workspaces ? share->max_workspaces : lim->tenant_workspaces;
}

size_t store_max_workspaces(const struct store *s, const struct store_share *share)
{
    return store_tenant_workspaces(&s->lim, share);
}

int store_check_room(const struct store_limits *lim, const struct store_room *room,
                     struct sbx_error *err)
{
    if (!room->exists && room->count >= lim->max_entries) {
        sbx_error_set(err, SBX_ERR_LIMIT, "QUOTA_EXCEEDED", NULL,
                      "%s: the workspace holds %zu %s, the limit", room->what, room->count,
                      store_kind_name(room->kind));
        return -EDQUOT;
    }
    size_t old = room->exists ? room->old_size : 0;
    size_t after = room->ws_bytes - (old < room->ws_bytes ? old : room->ws_bytes) + room->new_size;
    if (after > lim->max_bytes) {
        sbx_error_set(err, SBX_ERR_LIMIT, "QUOTA_EXCEEDED", NULL,
                      "%s: the workspace is full (%zu of %zu bytes used; this needs %zu)",
                      room->what, room->ws_bytes, lim->max_bytes, room->new_size);
        return -EDQUOT;
    }
    size_t grows = room->new_size > old ? room->new_size - old : 0;
    if (room->tenant && grows &&
        (grows > room->tenant_max || room->tenant_bytes > room->tenant_max - grows)) {
        sbx_error_set(err, SBX_ERR_LIMIT, "QUOTA_EXCEEDED", NULL,
                      "%s: tenant '%s' has stored what its quota allows, all its workspaces "
                      "together (%zu of %zu bytes used; this needs %zu more)",
                      room->what, room->tenant, room->tenant_bytes, room->tenant_max, grows);
        return -EDQUOT;
    }
    return 0;
}

int store_ws_open(struct store *s, const char *tenant, const char *name,
                  const struct store_share *share, bool create, struct store_ws **ret,
                  struct sbx_error *err)
{
    int r = store_check_ws_name(tenant, name, err);
    if (r == 0 && create && s->read_only)
        r = store_read_only(err);
    return r < 0 ? r : s->ops->ws_open(s, tenant, name, share, create, ret, err);
}

void store_ws_close(struct store_ws *w)
{
    if (w)
        w->store->ops->ws_close(w);
}

int store_get(struct store_ws *w, enum store_kind k, const char *name, bool with_data,
              struct store_item **ret, struct sbx_error *err)
{
    int r = store_check_item(k, name, err);
    return r < 0 ? r : w->store->ops->get(w, k, name, with_data, ret, err);
}

int store_list(struct store_ws *w, enum store_kind k, bool with_data, struct store_item **ret_items,
               size_t *ret_n, struct sbx_error *err)
{
    *ret_items = NULL;
    *ret_n = 0;
    if ((unsigned)k >= STORE_KINDS)
        return -EINVAL;
    return w->store->ops->list(w, k, with_data, ret_items, ret_n, err);
}

int store_put(struct store_ws *w, enum store_kind k, const char *name, store_compose_fn compose,
              void *userdata, const char *what, struct sbx_error *err)
{
    if (w->store->read_only)
        return store_read_only(err);
    int r = store_check_item(k, name, err);
    return r < 0 ? r : w->store->ops->put(w, k, name, compose, userdata, 0, what, err);
}

struct store_given {
    const void *data;
    size_t len;
    bool only_new;
};

static int store_compose_given(void *userdata, const struct store_item *old, char **ret_data,
                               size_t *ret_len, struct sbx_error *err)
{
    struct store_given *g = userdata;
    if (old && g->only_new) {
        sbx_error_set(err, SBX_ERR_CONFLICT, "EXISTS", NULL, "there is one of that name already");
        return -EEXIST;
    }
    char *copy = malloc(g->len + 1);
    if (!copy)
        return store_fail(err, -ENOMEM, "write");
    if (g->len)
        memcpy(copy, g->data, g->len);
    copy[g->len] = '\0';
    *ret_data = copy;
    *ret_len = g->len;
    return 0;
}

int store_put_data(struct store_ws *w, enum store_kind k, const char *name, const void *data,
                   size_t len, const char *what, struct sbx_error *err)
{
    struct store_given g = {.data = data, .len = len};
    return store_put(w, k, name, store_compose_given, &g, what, err);
}

int store_import(struct store_ws *w, enum store_kind k, const char *name, const void *data,
                 size_t len, int64_t modified_ms, struct sbx_error *err)
{
    struct store_given g = {.data = data, .len = len, .only_new = true};
    if (w->store->read_only)
        return store_read_only(err);
    int r = store_check_item(k, name, err);
    return r < 0 ? r
                 : w->store->ops->put(w, k, name, store_compose_given, &g,
                                      modified_ms > 0 ? modified_ms : 0, "import", err);
}

int store_delete(struct store_ws *w, enum store_kind k, const char *name, struct sbx_error *err)
{
    if (w->store->read_only)
        return store_read_only(err);
    int r = store_check_item(k, name, err);
    return r < 0 ? r : w->store->ops->del(w, k, name, err);
}

int store_host_path(struct store_ws *w, enum store_kind k, const char *name, const void *data,
                    size_t len, char **ret, struct sbx_error *err)
{
    *ret = NULL;
    /* Only kept files have a path: their names are one path component in either backend. */
    if (k != STORE_RUN || !store_plain_name(name, STORE_MAX_RUN_NAME)) {
        sbx_error_set(err, SBX_ERR_INVALID, "INVALID_REQUEST", NULL,
                      "only a kept file of a name [A-Za-z0-9._-] has a path on the host");
        return -EINVAL;
    }
    return w->store->ops->host_path(w, k, name, data, len, ret, err);
}

bool store_plain_name(const char *name, size_t max)
{
    size_t n = strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-");
    return n > 0 && n <= max && name[n] == '\0' && name[0] != '.';
}

char *store_item_relpath(const struct store_ws *w, enum store_kind k, const char *file)
{
    return fmt_str("%s%s%sworkspaces/%s/%s/%s", *w->tenant ? "tenants/" : "", w->tenant,
                   *w->tenant ? "/" : "", w->name, store_kind_name(k), file);
}

json_t *store_usage(struct store_ws *w, struct sbx_error *err)
{
    return w->store->ops->usage(w, err);
}

int store_each_workspace(struct store *s, store_ws_fn fn, void *userdata, struct sbx_error *err)
{
    return s->ops->each_workspace(s, fn, userdata, err);
}

/* ---- runtime values ------------------------------------------------------------------------ */

static int store_run_error(struct sbx_error *err, int r, char *why)
{
    if (r == -E2BIG)
        sbx_error_set(err, SBX_ERR_TOO_LARGE, "TOO_LARGE", NULL, "%s",
                      why ? why : "the key or the value is too large");
    else
        store_fail(err, r, "runtime value");
    free(why);
    return r;
}

int store_run_set(struct store *s, const char *app, const char *key, json_t *value,
                  struct sbx_error *err)
{
    if (s->read_only)
        return store_read_only(err);
    char *text = NULL, *why = NULL;
    size_t len = 0;
    int r = state_store_text(&s->run, key, value, &text, &len, &why);
    if (r < 0)
        return store_run_error(err, r, why);
    if (state_entry_size(app, key, len) > s->run.max_bytes) {
        free(text);
        return store_run_error(err, -E2BIG,
                               fmt_str("the value takes %zu bytes, the store holds %zu",
                                       state_entry_size(app, key, len), s->run.max_bytes));
    }
    r = s->ops->run_set(s, app, key, text, len, 0, false, err);
    free(text);
    return r;
}

int store_run_get(struct store *s, const char *app, const char *key, json_t **ret,
                  struct sbx_error *err)
{
    *ret = NULL;
    if (strlen(key) > s->run.max_key)
        return -ENOENT; /* nothing can be stored under it */
    char *text = NULL;
    size_t len = 0;
    int r = s->ops->run_get(s, app, key, &text, &len, err);
    if (r < 0)
        return r;
    json_error_t jerr;
    /* The text is jdump's: \u0000 in a string is written escaped and must read back. */
    json_t *v = json_loadb(text, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
    free(text);
    if (!v)
        return store_fail(err, -EBADMSG, "runtime value");
    *ret = v;
    return 0;
}

int store_each_run(struct store *s, store_run_fn fn, void *userdata, struct sbx_error *err)
{
    return s->ops->each_run(s, fn, userdata, err);
}

int store_run_import(struct store *s, const char *app, const char *key, const char *text,
                     int64_t written_ms, struct sbx_error *err)
{
    if (s->read_only)
        return store_read_only(err);
    size_t len = strlen(text);
    json_error_t jerr;
    json_t *v = json_loadb(text, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
    if (!v) {
        sbx_error_set(err, SBX_ERR_INVALID, "INVALID_REQUEST", NULL, "not JSON: %s", jerr.text);
        return -EINVAL;
    }
    json_decref(v);
    if (strlen(key) > s->run.max_key || len > s->run.max_value ||
        state_entry_size(app, key, len) > s->run.max_bytes)
        return store_run_error(err, -E2BIG, NULL);
    return s->ops->run_set(s, app, key, text, len, written_ms, true, err);
}

/* ---- shared rules -------------------------------------------------------------------------- */

uint64_t store_rev(const void *data, size_t len)
{
    unsigned char h[8];
    crypto_generichash(h, sizeof(h), data, len, NULL, 0);
    uint64_t v = 0;
    for (size_t i = 0; i < sizeof(h); i++)
        v = v << 8 | h[i];
    v &= INT64_MAX; /* a bigint column holds it, JSON carries it exactly */
    return v ? v : 1;
}

json_t *store_memory_info(const char *data, size_t len, size_t *ret_value_start,
                          size_t *ret_value_end)
{
    static const char *const value_path[] = {"value", NULL};
    struct jsonscan_result sr;
    const char *why;
    json_t *head = NULL;
    if (jsonscan(data, len, STORE_MEMORY_DEPTH, value_path, &sr, &why) == 0 && sr.found)
        head = jsonscan_load_without(data, len, sr.start, sr.end);
    if (!json_is_object(head) || !json_is_string(json_object_get(head, "key"))) {
        json_decref(head);
        return NULL;
    }
    json_object_del(head, "value");
    if (ret_value_start) {
        *ret_value_start = sr.start;
        *ret_value_end = sr.end;
    }
    return head;
}

void store_item_free(struct store_item *it)
{
    if (!it)
        return;
    store_items_free(it, 1);
}

void store_items_free(struct store_item *items, size_t n)
{
    for (size_t i = 0; items && i < n; i++) {
        free(items[i].name);
        json_decref(items[i].info);
        free(items[i].data);
    }
    free(items);
}
