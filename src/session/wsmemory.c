// SPDX-License-Identifier: MIT
/*
 * wsmemory — the memories of a workspace (see workspace.h). Keys are free
 * text (up to 256 bytes), a memory one compact JSON document {key, value,
 * metadata, createdAt, updatedAt}, made here inside the store's write (its
 * lock, or its transaction) from the memory as it is then: createdAt and
 * metadata are kept from it, and a save that names the revision it read is
 * refused (-ESTALE) when the memory changed since. What a listing shows
 * (key, metadata, times) is the document without its value, which the store
 * never parses; a value is parsed only when it is loaded.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/jsonscan.h"
#include "session/workspace_int.h"
#include "util/buf.h"
#include "util/jdump.h"
#include "util/macros.h"

/* The current time, ISO 8601 UTC with milliseconds ("2026-11-23T19:53:12.123Z"): two saves
 * of one second keep their order in createdAt and updatedAt. */
static void wsm_now(char out[40])
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(out, 40, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, 40 - n, ".%03ldZ", ts.tv_nsec / 1000000);
}

/* v nests at most `left` levels deep. */
static bool wsm_depth_ok(json_t *v, int left)
{
    if (!json_is_object(v) && !json_is_array(v))
        return true;
    if (left <= 0)
        return false;
    if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
        {
            if (!wsm_depth_ok(x, left - 1))
                return false;
        }
        return true;
    }
    const char *k;
    json_t *x;
    json_object_foreach(v, k, x)
    {
        if (!wsm_depth_ok(x, left - 1))
            return false;
    }
    return true;
}

/* 0 when v is at most cap bytes of compact JSON, -E2BIG when not (the dump stops at the cap,
 * so a huge value costs no more than cap), -ENOMEM. */
static int wsm_fits(const json_t *v, size_t cap)
{
    struct buf b;
    buf_init(&b, cap);
    int r = jdump_buf(v, JSON_COMPACT, &b);
    buf_free(&b);
    return r;
}

static int wsm_invalid(struct sbx_error *err, int r, const char *field, const char *msg)
{
    sbx_error_set(err, r == -EFBIG ? SBX_ERR_TOO_LARGE : SBX_ERR_INVALID,
                  r == -EFBIG ? "TOO_LARGE" : "INVALID_REQUEST", field, "%s", msg);
    return r;
}

/* What a save checks before the store sees it: the value and metadata's nesting and size. */
static int wsm_check(struct workspace *w, const char *key, json_t *value, json_t *meta,
                     struct sbx_error *err)
{
    char msg[512];
    size_t max = w->ws->lim.max_value;
    if (!wsm_depth_ok(value, WORKSPACE_MAX_DEPTH)) {
        snprintf(msg, sizeof(msg), "memory: the value of %.256s nests deeper than %d levels", key,
                 WORKSPACE_MAX_DEPTH);
        return wsm_invalid(err, -EINVAL, "value", msg);
    }
    int r = wsm_fits(value, max);
    if (r == -E2BIG) {
        snprintf(msg, sizeof(msg), "memory: the value of %.256s is over %zu bytes", key, max);
        return wsm_invalid(err, -EFBIG, "value", msg);
    }
    if (r == 0 && meta && !json_is_null(meta)) {
        if (!json_is_object(meta) || !wsm_depth_ok(meta, WORKSPACE_MAX_DEPTH)) {
            snprintf(msg, sizeof(msg),
                     "memory: metadata must be an object nested at most %d levels",
                     WORKSPACE_MAX_DEPTH);
            return wsm_invalid(err, -EINVAL, "metadata", msg);
        }
        r = wsm_fits(meta, WORKSPACE_MAX_METADATA);
        if (r == -E2BIG) {
            snprintf(msg, sizeof(msg), "memory: the metadata of %.256s is over %d bytes", key,
                     WORKSPACE_MAX_METADATA);
            return wsm_invalid(err, -EFBIG, "metadata", msg);
        }
    }
    if (r < 0)
        sbx_error_set(err, SBX_ERR_INTERNAL, "INTERNAL", NULL, "memory: out of memory");
    return r;
}

/* A save, made into a document inside the store's write. */
struct wsm_save {
    const char *key;
    json_t *value, *meta;                /* borrowed; meta NULL or null: kept */
    const char *created_at, *updated_at; /* NULL: kept or now */
    bool only_new;                       /* an import: never over another */
    bool if_rev;                         /* only over revision rev (0: only when there is none) */
    uint64_t rev;
};

static int wsm_compose(void *userdata, const struct store_item *old, char **ret_data,
                       size_t *ret_len, struct sbx_error *err)
{
    struct wsm_save *x = userdata;
    if (old && x->only_new) {
        sbx_error_set(err, SBX_ERR_CONFLICT, "EXISTS", "key",
                      "the workspace has a memory %.256s already", x->key);
        return -EEXIST;
    }
    if (x->if_rev && (old ? old->rev != x->rev : x->rev != 0)) {
        sbx_error_set(err, SBX_ERR_CONFLICT, "CONFLICT", "ifRev",
                      "memory %.256s changed since it was read", x->key);
        return -ESTALE;
    }
    char now[40];
    wsm_now(now);
    json_t *created = json_object_get(old ? old->info : NULL, "createdAt");
    json_t *meta = x->meta && !json_is_null(x->meta)
                       ? x->meta
                       : json_object_get(old ? old->info : NULL, "metadata"); /* kept */
    json_t *doc = json_pack("{s:s, s:O, s:o, s:o, s:s}", "key", x->key, "value",
                            x->value ? x->value : json_null(), "metadata",
                            json_is_object(meta) ? json_incref(meta) : json_object(), "createdAt",
                            x->created_at             ? json_string(x->created_at)
                            : json_is_string(created) ? json_incref(created)
                                                      : json_string(now),
                            "updatedAt", x->updated_at ? x->updated_at : now);
    size_t len = 0;
    char *text = doc ? jdump(doc, JSON_COMPACT, &len) : NULL;
    json_decref(doc);
    if (!text) {
        sbx_error_set(err, SBX_ERR_INTERNAL, "INTERNAL", NULL, "memory: out of memory");
        return -ENOMEM;
    }
    *ret_data = text;
    *ret_len = len;
    return 0;
}

static int wsm_save(struct workspace *w, struct wsm_save *x, struct sbx_error *err)
{
    int r = wsm_check(w, x->key, x->value ? x->value : json_null(), x->meta, err);
    return r < 0 ? r : store_put(w->sw, STORE_MEMORY, x->key, wsm_compose, x, "memory", err);
}

/* The value stored under key (new reference) and its revision, or -ENOENT. */
static int wsm_load(struct workspace *w, const char *key, json_t **ret, uint64_t *ret_rev,
                    struct sbx_error *err)
{
    struct store_item *it = NULL;
    int r = store_get(w->sw, STORE_MEMORY, key, true, &it, err);
    if (r < 0)
        return r;
    static const char *const value_path[] = {"value", NULL};
    struct jsonscan_result sr;
    const char *why;
    json_error_t jerr;
    json_t *v = NULL;
    if (jsonscan(it->data, it->len, WORKSPACE_MAX_DEPTH + 2, value_path, &sr, &why) == 0 &&
        sr.found)
        v = json_loadb(it->data + sr.start, sr.end - sr.start, JSON_DECODE_ANY | JSON_ALLOW_NUL,
                       &jerr);
    *ret_rev = it->rev;
    store_item_free(it);
    if (!v)
        return -ENOENT; /* a document we cannot read is no memory */
    *ret = v;
    return 0;
}

/* {key, metadata, createdAt, updatedAt} of an item's info (new reference). */
static json_t *wsm_info(const struct store_item *it)
{
    json_t *meta = json_object_get(it->info, "metadata");
    return json_pack("{s:O, s:O, s:O?, s:O?}", "key", json_object_get(it->info, "key"), "metadata",
                     json_is_object(meta) ? meta : json_object(), "createdAt",
                     json_object_get(it->info, "createdAt"), "updatedAt",
                     json_object_get(it->info, "updatedAt"));
}

int workspace_list_memories(struct workspace *w, json_t **ret_payload, struct sbx_error *err)
{
    *ret_payload = NULL;
    struct store_item *items = NULL;
    size_t n = 0;
    int r = store_list(w->sw, STORE_MEMORY, false, &items, &n, err);
    if (r < 0)
        return r;
    json_t *list = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *item = wsm_info(&items[i]);
        json_object_set_new(item, "size", json_integer((json_int_t)items[i].size));
        json_array_append_new(list, item);
    }
    store_items_free(items, n);
    *ret_payload = json_pack("{s:o}", "memories", list);
    return 0;
}

int workspace_delete_memory(struct workspace *w, const char *key, struct sbx_error *err)
{
    if (!*key || strlen(key) > WORKSPACE_MAX_KEY)
        return -ENOENT;
    return store_delete(w->sw, STORE_MEMORY, key, err);
}

/* A save's "ifRev": absent (no condition), null (only when there is none), or a revision. */
static int wsm_if_rev(json_t *req, struct wsm_save *x, struct sbx_error *err)
{
    json_t *v = json_object_get(req, "ifRev");
    if (!v)
        return 0;
    x->if_rev = true;
    if (json_is_null(v))
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) <= 0) {
        sbx_error_set(err, SBX_ERR_INVALID, "INVALID_REQUEST", "ifRev",
                      "memory: ifRev is a revision from a load, or null");
        return -EINVAL;
    }
    x->rev = (uint64_t)json_integer_value(v);
    return 0;
}

int workspace_memory(struct workspace *w, json_t *req, json_t **ret_payload, struct sbx_error *err)
{
    *ret_payload = NULL;
    const char *op = json_string_value(json_object_get(req, "op"));
    if (!op) {
        sbx_error_set(err, SBX_ERR_INVALID, "INVALID_REQUEST", "op", "memory: no operation");
        return -EINVAL;
    }
    if (strcmp(op, "list") == 0)
        return workspace_list_memories(w, ret_payload, err);
    const char *key = json_string_value(json_object_get(req, "key"));
    if (!key || !*key || strlen(key) > WORKSPACE_MAX_KEY) {
        sbx_error_set(err, SBX_ERR_INVALID, "INVALID_REQUEST", "key",
                      "memory: the key must be a string of 1-%d bytes", WORKSPACE_MAX_KEY);
        return -EINVAL;
    }
    int r = 0;
    if (strcmp(op, "load") == 0) {
        json_t *v = NULL;
        uint64_t rev = 0;
        r = wsm_load(w, key, &v, &rev, err);
        if (r < 0 && r != -ENOENT)
            return r;
        *ret_payload =
            r == 0 ? json_pack("{s:b, s:o, s:I}", "found", 1, "value", v, "rev", (json_int_t)rev)
                   : json_pack("{s:b}", "found", 0);
        return 0;
    }
    if (strcmp(op, "save") == 0) {
        struct wsm_save x = {.key = key,
                             .value = json_object_get(req, "value"),
                             .meta = json_object_get(req, "metadata")};
        r = wsm_if_rev(req, &x, err);
        if (r == 0)
            r = wsm_save(w, &x, err);
        if (r == -ESTALE) { /* not a failure: the caller reads again and retries */
            sbx_error_clear(err);
            r = 0;
            *ret_payload = json_pack("{s:b, s:b}", "saved", 0, "conflict", 1);
        } else if (r == 0) {
            *ret_payload = json_pack("{s:b}", "saved", 1);
        }
        return r;
    }
    if (strcmp(op, "info") == 0) {
        struct store_item *it = NULL;
        r = store_get(w->sw, STORE_MEMORY, key, false, &it, err);
        if (r < 0 && r != -ENOENT)
            return r;
        *ret_payload =
            json_pack("{s:b, s:o?}", "found", r == 0, "info", r == 0 ? wsm_info(it) : NULL);
        store_item_free(it);
        return 0;
    }
    if (strcmp(op, "delete") == 0) {
        r = store_delete(w->sw, STORE_MEMORY, key, err);
        if (r < 0 && r != -ENOENT)
            return r;
        sbx_error_clear(err);
        *ret_payload = json_pack("{s:b}", "deleted", r == 0);
        return 0;
    }
    sbx_error_set(err, SBX_ERR_INVALID, "INVALID_REQUEST", "op",
                  "memory: unknown operation '%.64s'", op);
    return -EINVAL;
}

int workspace_import_memory(struct workspace *w, const char *key, json_t *value, json_t *metadata,
                            const char *created_at, const char *updated_at, struct sbx_error *err)
{
    if (!*key || strlen(key) > WORKSPACE_MAX_KEY) {
        sbx_error_set(err, SBX_ERR_INVALID, "INVALID_REQUEST", "key",
                      "memory: the key must be a string of 1-%d bytes", WORKSPACE_MAX_KEY);
        return -EINVAL;
    }
    struct wsm_save x = {.key = key,
                         .value = value,
                         .meta = metadata,
                         .created_at = created_at,
                         .updated_at = updated_at,
                         .only_new = true};
    return wsm_save(w, &x, err);
}
