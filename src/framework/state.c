// SPDX-License-Identifier: MIT
/*
 * state — see state.h. One uthash table of entries keyed by "app\0key" in
 * write order (a write moves the entry to the end), so the head is both the
 * least recently written value and the first to expire; a second table
 * holds each app with its own list of entries in write order (utlist), so
 * making room in a full app is O(1). Values are kept as their JSON text, and
 * each entry counts its text, its key and a fixed overhead against
 * max_bytes: the cap is close to what is really held.
 */
#include "framework/state.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>
#include <utlist.h>

#include "util/fmt.h"
#include "util/jdump.h"

#define STATE_ENTRY_OVERHEAD 160 /* the entry, its hash handle and allocator slack */

struct state_app;

struct state_entry {
    char *id; /* app \0 key */
    size_t id_len;
    size_t app_len;
    char *text;
    size_t size; /* what counts against max_bytes */
    int64_t written_us;
    struct state_app *app;
    struct state_entry *app_prev, *app_next; /* the app's entries in write order */
    UT_hash_handle hh;
};

struct state_app {
    char *name;
    size_t values;
    struct state_entry *list;
    UT_hash_handle hh;
};

struct state_store {
    struct state_limits lim;
    pthread_mutex_t lock;
    struct state_entry *entries;
    struct state_app *apps;
    size_t bytes;
    unsigned long evicted, expired;
};

int state_store_new(const struct state_limits *lim, struct state_store **ret)
{
    struct state_store *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    struct state_limits l = lim ? *lim : (struct state_limits){0};
    s->lim = (struct state_limits){
        .max_key = l.max_key ? l.max_key : STATE_MAX_KEY,
        .max_value = l.max_value ? l.max_value : STATE_MAX_VALUE,
        .max_per_app = l.max_per_app ? l.max_per_app : STATE_MAX_PER_APP,
        .max_bytes = l.max_bytes ? l.max_bytes : STATE_MAX_BYTES,
        .ttl_us = l.ttl_us ? l.ttl_us : STATE_TTL_US,
    };
    pthread_mutex_init(&s->lock, NULL);
    *ret = s;
    return 0;
}

static struct state_app *state_app_of(struct state_store *s, const char *app, size_t len)
{
    struct state_app *a = NULL;
    HASH_FIND(hh, s->apps, app, len, a);
    return a;
}

static void state_drop(struct state_store *s, struct state_entry *e)
{
    struct state_app *a = e->app;
    DL_DELETE2(a->list, e, app_prev, app_next);
    if (--a->values == 0) {
        HASH_DEL(s->apps, a);
        free(a->name);
        free(a);
    }
    HASH_DEL(s->entries, e);
    s->bytes -= e->size;
    free(e->id);
    free(e->text);
    free(e);
}

void state_store_free(struct state_store *s)
{
    if (!s)
        return;
    while (s->entries)
        state_drop(s, s->entries);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static void state_expire(struct state_store *s, int64_t now_us)
{
    while (s->entries && now_us - s->entries->written_us > s->lim.ttl_us) {
        state_drop(s, s->entries);
        s->expired++;
    }
}

/* "app\0key" (caller frees). */
static char *state_id(const char *app, const char *key, size_t *ret_len, size_t *ret_app_len)
{
    size_t al = strlen(app), kl = strlen(key);
    char *id = malloc(al + 1 + kl + 1);
    if (!id)
        return NULL;
    memcpy(id, app, al + 1);
    memcpy(id + al + 1, key, kl + 1);
    *ret_len = al + 1 + kl;
    *ret_app_len = al;
    return id;
}

int state_store_set(struct state_store *s, const char *app, const char *key, json_t *value,
                    int64_t now_us, char **ret_error)
{
    *ret_error = NULL;
    if (strlen(key) > s->lim.max_key)
        return fmt_error(ret_error, E2BIG, "the key is %zu bytes, at most %zu", strlen(key),
                         s->lim.max_key);
    struct buf b;
    buf_init(&b, s->lim.max_value);
    int r = jdump_buf(value, JSON_COMPACT, &b);
    if (r < 0) {
        buf_free(&b);
        return r == -E2BIG ? fmt_error(ret_error, E2BIG, "the value is over %zu bytes of JSON",
                                       s->lim.max_value)
                           : r;
    }
    struct state_entry *e = calloc(1, sizeof(*e));
    if (!e || !(e->id = state_id(app, key, &e->id_len, &e->app_len))) {
        free(e);
        buf_free(&b);
        return -ENOMEM;
    }
    e->text = buf_take(&b, &e->size);
    if (!e->text) {
        free(e->id);
        free(e);
        return -ENOMEM;
    }
    e->size += e->id_len + STATE_ENTRY_OVERHEAD;
    if (e->size > s->lim.max_bytes) { /* it would not fit even in an empty store */
        size_t size = e->size;
        free(e->id);
        free(e->text);
        free(e);
        return fmt_error(ret_error, E2BIG, "the value takes %zu bytes, the store holds %zu", size,
                         s->lim.max_bytes);
    }
    e->written_us = now_us;
    pthread_mutex_lock(&s->lock);
    state_expire(s, now_us);
    struct state_entry *old = NULL;
    HASH_FIND(hh, s->entries, e->id, e->id_len, old);
    if (old)
        state_drop(s, old);
    struct state_app *a = state_app_of(s, app, e->app_len);
    if (a && a->values >= s->lim.max_per_app) { /* the app's least recently written goes */
        state_drop(s, a->list);
        s->evicted++;
        a = state_app_of(s, app, e->app_len);
    }
    while (s->entries && s->bytes + e->size > s->lim.max_bytes) { /* and across apps */
        state_drop(s, s->entries);
        s->evicted++;
        a = state_app_of(s, app, e->app_len);
    }
    if (!a) {
        a = calloc(1, sizeof(*a));
        if (!a || !(a->name = strndup(app, e->app_len))) {
            free(a);
            pthread_mutex_unlock(&s->lock);
            free(e->id);
            free(e->text);
            free(e);
            return -ENOMEM;
        }
        HASH_ADD_KEYPTR(hh, s->apps, a->name, e->app_len, a);
    }
    a->values++;
    e->app = a;
    DL_APPEND2(a->list, e, app_prev, app_next);
    HASH_ADD_KEYPTR(hh, s->entries, e->id, e->id_len, e);
    s->bytes += e->size;
    pthread_mutex_unlock(&s->lock);
    return 0;
}

json_t *state_store_get(struct state_store *s, const char *app, const char *key, int64_t now_us)
{
    size_t len, app_len;
    char *id = state_id(app, key, &len, &app_len);
    if (!id)
        return NULL;
    pthread_mutex_lock(&s->lock);
    state_expire(s, now_us);
    struct state_entry *e = NULL;
    HASH_FIND(hh, s->entries, id, len, e);
    json_error_t jerr;
    /* The text is jdump's: \u0000 in a string is written escaped and must read back. */
    json_t *v = e ? json_loads(e->text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr) : NULL;
    pthread_mutex_unlock(&s->lock);
    free(id);
    return v;
}

json_t *state_store_stats(struct state_store *s)
{
    pthread_mutex_lock(&s->lock);
    json_t *o = json_pack("{s:I, s:I, s:I, s:I}", "values", (json_int_t)HASH_COUNT(s->entries),
                          "bytes", (json_int_t)s->bytes, "evicted", (json_int_t)s->evicted,
                          "expired", (json_int_t)s->expired);
    pthread_mutex_unlock(&s->lock);
    return o;
}
