// SPDX-License-Identifier: MIT
/*
 * wsmemory — the memories of a workspace (see workspace.h). Keys are free
 * text (up to 256 bytes); on disk each is "<readable part>-<hash>.json", so
 * two keys never share a file and no key can name a path. A file is one
 * compact JSON object {key, value, metadata, createdAt, updatedAt}. What a
 * listing shows (key, metadata, times) is cached in the index the first time
 * a file is read; a value is read from its file each time.
 */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/jsonscan.h"
#include "session/workspace_int.h"
#include "util/fdio.h"
#include "util/buf.h"
#include "util/fmt.h"
#include "util/jdump.h"
#include "util/macros.h"

#define WSM_OVERHEAD 8192 /* a file's bytes besides value and metadata (key, times, names) */

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

/* "<up to 40 safe chars>-<16 hex of BLAKE2b(key)>.json" */
static void wsm_key_file(const char *key, char out[96])
{
    unsigned char h[8];
    crypto_generichash(h, sizeof(h), (const unsigned char *)key, strlen(key), NULL, 0);
    size_t k = 0;
    for (const char *p = key; *p && k < 40; p++) {
        char c = *p;
        bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
        out[k++] = safe ? c : '_';
    }
    out[k++] = '-';
    sodium_bin2hex(out + k, 2 * sizeof(h) + 1, h, sizeof(h));
    strcpy(out + k + 2 * sizeof(h), ".json");
}

static size_t wsm_max_file(const struct workspace *w)
{
    return ws_limits(w)->max_value + WORKSPACE_MAX_METADATA + WSM_OVERHEAD;
}

/* The file's object without its value (value null) and the value's span: the value is never
 * parsed for a listing. */
static int wsm_read(struct workspace *w, const char *file, char **ret_text, size_t *ret_len,
                    json_t **ret_head, size_t *ret_start, size_t *ret_end)
{
    static const char *const value_path[] = {"value", NULL};
    char *text = NULL;
    size_t len = 0;
    int r = fd_read_file_flags(w->dirfd[WS_MEMORY], file, O_NOFOLLOW, wsm_max_file(w), &text, &len);
    if (r < 0)
        return r;
    struct jsonscan_result sr;
    const char *why;
    json_t *head = NULL;
    if (jsonscan(text, len, WORKSPACE_MAX_DEPTH + 2, value_path, &sr, &why) == 0 && sr.found)
        head = jsonscan_load_without(text, len, sr.start, sr.end);
    if (!json_is_object(head) || !json_is_string(json_object_get(head, "key"))) {
        json_decref(head);
        free(text);
        return -EBADMSG;
    }
    *ret_head = head;
    *ret_start = sr.start;
    *ret_end = sr.end;
    if (ret_text) {
        *ret_text = text;
        *ret_len = len;
    } else {
        free(text);
    }
    return 0;
}

/* {key, metadata, createdAt, updatedAt} of entry e, read once (borrowed; NULL: unreadable). */
static json_t *wsm_info(struct workspace *w, struct ws_entry *e)
{
    if (e->info)
        return e->info;
    json_t *head = NULL;
    size_t start, end;
    if (wsm_read(w, e->file, NULL, NULL, &head, &start, &end) < 0)
        return NULL;
    json_t *meta = json_object_get(head, "metadata");
    e->info = json_pack("{s:O, s:O, s:O?, s:O?}", "key", json_object_get(head, "key"), "metadata",
                        json_is_object(meta) ? meta : json_object(), "createdAt",
                        json_object_get(head, "createdAt"), "updatedAt",
                        json_object_get(head, "updatedAt"));
    json_decref(head);
    return e->info;
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

/* Save value under key; created and updated (ISO 8601 strings) are the times to record, NULL:
 * now, and the first save's time kept as createdAt. */
static int wsm_save(struct workspace *w, const char *key, const char *file, json_t *value,
                    json_t *meta, const char *created_at, const char *updated_at,
                    json_t **ret_payload, char **ret_error)
{
    const struct workspace_limits *lim = ws_limits(w);
    if (!value)
        value = json_null();
    if (!wsm_depth_ok(value, WORKSPACE_MAX_DEPTH))
        return fmt_error(ret_error, EINVAL, "memory: the value of %s nests deeper than %d levels",
                         key, WORKSPACE_MAX_DEPTH);
    int r = wsm_fits(value, lim->max_value);
    if (r == -E2BIG)
        return fmt_error(ret_error, EFBIG, "memory: the value of %s is over %zu bytes", key,
                         lim->max_value);
    if (r < 0)
        return fmt_error(ret_error, ENOMEM, "memory: out of memory");
    if (meta && !json_is_null(meta)) {
        if (!json_is_object(meta) || !wsm_depth_ok(meta, WORKSPACE_MAX_DEPTH))
            return fmt_error(ret_error, EINVAL,
                             "memory: metadata must be an object nested at most %d levels",
                             WORKSPACE_MAX_DEPTH);
        r = wsm_fits(meta, WORKSPACE_MAX_METADATA);
        if (r == -E2BIG)
            return fmt_error(ret_error, EFBIG, "memory: the metadata of %s is over %d bytes", key,
                             WORKSPACE_MAX_METADATA);
        if (r < 0)
            return fmt_error(ret_error, ENOMEM, "memory: out of memory");
    }
    char now[40];
    wsm_now(now);
    struct ws_entry *e = ws_find(w, WS_MEMORY, file);
    json_t *old = e ? wsm_info(w, e) : NULL;
    json_t *created = json_object_get(old, "createdAt");
    if (!meta || json_is_null(meta))
        meta = json_object_get(old, "metadata"); /* kept unless replaced */
    json_t *doc = json_pack("{s:s, s:O, s:o, s:o, s:s}", "key", key, "value", value, "metadata",
                            json_is_object(meta) ? json_incref(meta) : json_object(), "createdAt",
                            created_at ? json_string(created_at)
                            : created  ? json_incref(created)
                                       : json_string(now),
                            "updatedAt", updated_at ? updated_at : now);
    size_t tlen = 0;
    char *text = doc ? jdump(doc, JSON_COMPACT, &tlen) : NULL;
    if (!text) {
        json_decref(doc);
        return fmt_error(ret_error, ENOMEM, "memory: out of memory");
    }
    r = ws_store(w, WS_MEMORY, file, text, tlen, "memory", &e, ret_error);
    free(text);
    if (r == 0) {
        json_object_del(doc, "value");
        e->info = doc; /* the listing's view of it, without reading the file again */
        *ret_payload = json_pack("{s:b}", "saved", 1);
    } else {
        json_decref(doc);
    }
    return r;
}

/* The value stored under key (new reference), or -ENOENT. */
static int wsm_load(struct workspace *w, const char *key, const char *file, json_t **ret)
{
    char *text = NULL;
    size_t len = 0, start, end;
    json_t *head = NULL;
    int r = wsm_read(w, file, &text, &len, &head, &start, &end);
    if (r < 0)
        return r == -EBADMSG ? -ENOENT : r; /* a file we cannot read is no memory */
    bool same = strcmp(json_string_value(json_object_get(head, "key")), key) == 0;
    json_decref(head);
    json_error_t jerr;
    json_t *v = same
                    ? json_loadb(text + start, end - start, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr)
                    : NULL;
    free(text);
    if (!v)
        return -ENOENT;
    *ret = v;
    return 0;
}

static int wsm_cmp_key(const struct ws_entry *a, const struct ws_entry *b)
{
    const char *ka = json_string_value(json_object_get(a->info, "key"));
    const char *kb = json_string_value(json_object_get(b->info, "key"));
    return strcmp(ka ? ka : "", kb ? kb : "");
}

int workspace_list_memories(struct workspace *w, json_t **ret_payload, char **ret_error)
{
    *ret_payload = NULL;
    *ret_error = NULL;
    json_t *list = json_array();
    pthread_mutex_lock(&w->lock);
    int r = ws_index(w);
    if (r == 0) {
        for (struct ws_entry *e = w->entries[WS_MEMORY]; e; e = e->hh.next)
            (void)wsm_info(w, e); /* an unreadable file is listed without a key: skipped */
        HASH_SORT(w->entries[WS_MEMORY], wsm_cmp_key);
        for (struct ws_entry *e = w->entries[WS_MEMORY]; e; e = e->hh.next) {
            if (!e->info)
                continue;
            json_t *item = json_deep_copy(e->info);
            json_object_set_new(item, "size", json_integer((json_int_t)e->size));
            json_array_append_new(list, item);
        }
    }
    pthread_mutex_unlock(&w->lock);
    if (r < 0) {
        json_decref(list);
        return fmt_error(ret_error, -r, "memory: workspace unavailable: %s", strerror(-r));
    }
    *ret_payload = json_pack("{s:o}", "memories", list);
    return 0;
}

int workspace_delete_memory(struct workspace *w, const char *key)
{
    if (!*key || strlen(key) > WORKSPACE_MAX_KEY)
        return -ENOENT;
    char file[96];
    wsm_key_file(key, file);
    return ws_delete(w, WS_MEMORY, file);
}

int workspace_memory(struct workspace *w, json_t *req, json_t **ret_payload, char **ret_error)
{
    *ret_payload = NULL;
    *ret_error = NULL;
    const char *op = json_string_value(json_object_get(req, "op"));
    if (!op)
        return fmt_error(ret_error, EINVAL, "memory: no operation");
    if (strcmp(op, "list") == 0)
        return workspace_list_memories(w, ret_payload, ret_error);
    const char *key = json_string_value(json_object_get(req, "key"));
    if (!key || !*key || strlen(key) > WORKSPACE_MAX_KEY)
        return fmt_error(ret_error, EINVAL, "memory: the key must be a string of 1-%d bytes",
                         WORKSPACE_MAX_KEY);
    char file[96];
    wsm_key_file(key, file);
    if (strcmp(op, "load") == 0) {
        /* From the file, not the index: another process's write is seen too. */
        json_t *v = NULL;
        int r = wsm_load(w, key, file, &v);
        if (r < 0 && r != -ENOENT)
            return fmt_error(ret_error, -r, "memory: cannot read %s: %s", key, strerror(-r));
        *ret_payload = json_pack("{s:b, s:o?}", "found", r == 0, "value", v);
        return 0;
    }
    pthread_mutex_lock(&w->lock);
    int r = ws_index(w);
    if (r < 0) {
        pthread_mutex_unlock(&w->lock);
        return fmt_error(ret_error, -r, "memory: workspace unavailable: %s", strerror(-r));
    }
    struct ws_entry *e = ws_find(w, WS_MEMORY, file);
    if (strcmp(op, "save") == 0) {
        r = wsm_save(w, key, file, json_object_get(req, "value"), json_object_get(req, "metadata"),
                     NULL, NULL, ret_payload, ret_error);
    } else if (strcmp(op, "info") == 0) {
        json_t *info = e ? wsm_info(w, e) : NULL;
        *ret_payload = json_pack("{s:b, s:o?}", "found", info != NULL, "info",
                                 info ? json_deep_copy(info) : NULL);
    } else if (strcmp(op, "delete") == 0) {
        r = e ? ws_remove(w, WS_MEMORY, file) : -ENOENT;
        if (r < 0 && r != -ENOENT)
            r = fmt_error(ret_error, -r, "memory: cannot delete %s: %s", key, strerror(-r));
        else {
            *ret_payload = json_pack("{s:b}", "deleted", r == 0);
            r = 0;
        }
    } else {
        r = fmt_error(ret_error, EINVAL, "memory: unknown operation '%s'", op);
    }
    pthread_mutex_unlock(&w->lock);
    return r;
}

int workspace_import_memory(struct workspace *w, const char *key, json_t *value, json_t *metadata,
                            const char *created_at, const char *updated_at, char **ret_error)
{
    *ret_error = NULL;
    if (!*key || strlen(key) > WORKSPACE_MAX_KEY)
        return fmt_error(ret_error, EINVAL, "memory: the key must be a string of 1-%d bytes",
                         WORKSPACE_MAX_KEY);
    char file[96];
    wsm_key_file(key, file);
    pthread_mutex_lock(&w->lock);
    int r = ws_index(w);
    json_t *payload = NULL;
    if (r < 0)
        r = fmt_error(ret_error, -r, "memory: workspace unavailable: %s", strerror(-r));
    else if (ws_find(w, WS_MEMORY, file))
        r = fmt_error(ret_error, EEXIST, "the workspace has a memory %s already", key);
    else
        r = wsm_save(w, key, file, value, metadata, created_at, updated_at, &payload, ret_error);
    pthread_mutex_unlock(&w->lock);
    json_decref(payload);
    return r;
}
