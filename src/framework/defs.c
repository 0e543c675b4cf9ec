// SPDX-License-Identifier: MIT
/*
 * defs — see defs.h. uthash keeps insertion order, which is the eviction
 * order: a refetched entry is reinserted at the end.
 */
#include "framework/defs.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "util/b64.h"
#include "util/log.h"
#include "util/macros.h"

#define DEFS_TOOL "core.state.getDefinitionFileContent" /* the framework tool that fetches */

struct defs_entry {
    char *key; /* endpoint \x1f app \x1f path */
    char *app_id;
    char *path;
    char *content; /* base64 */
    size_t size;
    UT_hash_handle hh;
};

struct defs {
    struct framework *fw;
    struct defs_options opt;
    pthread_mutex_t lock;
    struct defs_entry *table;
    size_t bytes;
    unsigned long hits, misses, fetch_errors, invalidations;
};

int defs_new(struct framework *fw, const struct defs_options *opt, struct defs **ret)
{
    struct defs *d = calloc(1, sizeof(*d));
    if (!d)
        return -ENOMEM;
    d->fw = fw;
    d->opt = *opt;
    pthread_mutex_init(&d->lock, NULL);
    *ret = d;
    return 0;
}

static void defs_entry_free(struct defs_entry *e)
{
    free(e->key);
    free(e->app_id);
    free(e->path);
    free(e->content);
    free(e);
}

void defs_free(struct defs *d)
{
    if (!d)
        return;
    struct defs_entry *e, *tmp;
    HASH_ITER(hh, d->table, e, tmp)
    {
        HASH_DEL(d->table, e);
        defs_entry_free(e);
    }
    pthread_mutex_destroy(&d->lock);
    free(d);
}

void defs_result_done(struct defs_result *r)
{
    free(r->content_b64);
    json_decref(r->details);
    *r = (struct defs_result){0};
}

static char *defs_key(const char *endpoint, const char *app, const char *path)
{
    char *k = NULL;
    return asprintf(&k, "%s\x1f%s\x1f%s", endpoint, app, path) < 0 ? NULL : k;
}

int defs_decode(const char *b64, char **ret, size_t *ret_len)
{
    return b64_decode_ignoring(b64, strlen(b64), " \r\n\t", ret, ret_len);
}

static void defs_evict(struct defs *d)
{
    while (d->table && (HASH_COUNT(d->table) > d->opt.max_entries || d->bytes > d->opt.max_bytes)) {
        struct defs_entry *oldest = d->table; /* head = first inserted */
        HASH_DEL(d->table, oldest);
        d->bytes -= oldest->size;
        defs_entry_free(oldest);
    }
}

int defs_get(struct defs *d, const char *endpoint, const char *app_id, const char *path,
             struct framework_stats *stats, struct defs_result *ret, struct sbx_error *err)
{
    *ret = (struct defs_result){0};
    _cleanup_free_ char *key = defs_key(endpoint, app_id, path);
    if (!key) {
        sbx_error_set(err, SBX_ERR_UPSTREAM, "MCP_ERROR", NULL, "out of memory");
        return -ENOMEM;
    }
    pthread_mutex_lock(&d->lock);
    struct defs_entry *e = NULL;
    HASH_FIND_STR(d->table, key, e);
    if (e) {
        ret->content_b64 = strdup(e->content);
        d->hits++;
    } else {
        d->misses++;
    }
    pthread_mutex_unlock(&d->lock);
    if (ret->content_b64) {
        ret->cached = true;
        return 0;
    }

    json_t *params = json_pack("{s:s, s:s}", "app_id", app_id, "file_path", path);
    if (!params) {
        sbx_error_set(err, SBX_ERR_UPSTREAM, "MCP_ERROR", NULL, "out of memory");
        return -ENOMEM;
    }
    json_t *result = NULL;
    struct sbx_error fe = {0};
    int r = framework_call(d->fw, endpoint, app_id, DEFS_TOOL, params, &result, &fe, stats);
    json_decref(params);
    if (r < 0) {
        ret->details = sbx_error_details(&fe, DEFS_TOOL);
        if (framework_not_found(&fe))
            sbx_error_set(err, SBX_ERR_NOT_FOUND, "SCRIPT_NOT_FOUND", NULL, "%s: %s", path,
                          fe.message ? fe.message : "failed");
        else
            sbx_error_set(err, SBX_ERR_UPSTREAM, "MCP_ERROR", NULL, "%s: %s", path,
                          fe.message ? fe.message : "failed");
        sbx_error_clear(&fe);
        pthread_mutex_lock(&d->lock);
        d->fetch_errors++;
        pthread_mutex_unlock(&d->lock);
        return r;
    }
    json_t *content = json_object_get(result, "content");
    const char *b64 = json_string_value(content);
    if (!b64 && json_is_null(content)) {
        sbx_error_set(err, SBX_ERR_NOT_FOUND, "SCRIPT_NOT_FOUND", NULL,
                      "%s: the framework has no such file", path);
        json_decref(result);
        return -ENOENT;
    }
    if (!b64) {
        sbx_error_set(err, SBX_ERR_UPSTREAM, "MCP_ERROR", NULL,
                      "%s: the answer has no base64 'content'", path);
        ret->details = json_pack("{s:s, s:s}", "kind", "protocol", "tool", DEFS_TOOL);
        json_decref(result);
        return -EPROTO;
    }
    size_t size = strlen(b64);
    if (size / 4 * 3 > d->opt.max_file) {
        sbx_error_set(err, SBX_ERR_UPSTREAM, "MCP_ERROR", NULL,
                      "%s: definition larger than %zu bytes", path, d->opt.max_file);
        json_decref(result);
        return -EFBIG;
    }
    ret->content_b64 = strdup(b64);
    json_decref(result);
    if (!ret->content_b64) {
        sbx_error_set(err, SBX_ERR_UPSTREAM, "MCP_ERROR", NULL, "out of memory");
        return -ENOMEM;
    }
    /* Cache it (a concurrent fetch of the same key may have won: then keep theirs). */
    struct defs_entry *n = calloc(1, sizeof(*n));
    if (!n)
        return 0;
    n->key = TAKE_PTR(key);
    n->app_id = strdup(app_id);
    n->path = strdup(path);
    n->content = strdup(ret->content_b64);
    n->size = size;
    if (!n->app_id || !n->path || !n->content) {
        defs_entry_free(n);
        return 0;
    }
    pthread_mutex_lock(&d->lock);
    HASH_FIND_STR(d->table, n->key, e);
    if (e) {
        defs_entry_free(n);
    } else {
        HASH_ADD_KEYPTR(hh, d->table, n->key, strlen(n->key), n);
        d->bytes += size;
        defs_evict(d);
    }
    pthread_mutex_unlock(&d->lock);
    return 0;
}

size_t defs_invalidate(struct defs *d, const char *app_id, const char *const *paths, size_t n)
{
    size_t dropped = 0;
    pthread_mutex_lock(&d->lock);
    struct defs_entry *e, *tmp;
    HASH_ITER(hh, d->table, e, tmp)
    {
        if (strcmp(e->app_id, app_id) != 0)
            continue;
        bool match = n == 0;
        for (size_t i = 0; i < n && !match; i++)
            match = strcmp(e->path, paths[i]) == 0;
        if (!match)
            continue;
        HASH_DEL(d->table, e);
        d->bytes -= e->size;
        defs_entry_free(e);
        dropped++;
    }
    d->invalidations += dropped;
    pthread_mutex_unlock(&d->lock);
    return dropped;
}

json_t *defs_stats(struct defs *d)
{
    pthread_mutex_lock(&d->lock);
    json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "entries",
                          (json_int_t)HASH_COUNT(d->table), "bytes", (json_int_t)d->bytes, "hits",
                          (json_int_t)d->hits, "misses", (json_int_t)d->misses, "fetchErrors",
                          (json_int_t)d->fetch_errors, "invalidated", (json_int_t)d->invalidations);
    pthread_mutex_unlock(&d->lock);
    return o;
}
