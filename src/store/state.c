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
#include "store/state.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>
#include <utlist.h>

#include "util/fmt.h"
#include "util/jdump.h"

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
    state_drop_fn on_drop; /* told of every value evicted or expired */
    void *drop_userdata;
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

/* Remove e; told tells on_drop (an eviction or expiry, not a replacement). */
static void state_drop(struct state_store *s, struct state_entry *e, bool told)
{
    if (told && s->on_drop)
        s->on_drop(s->drop_userdata, e->id, e->id + e->app_len + 1);
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
        state_drop(s, s->entries, false);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static void state_expire(struct state_store *s, int64_t now_us)
{
    while (s->entries && now_us - s->entries->written_us > s->lim.ttl_us) {
        state_drop(s, s->entries, true);
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

void state_store_on_drop(struct state_store *s, state_drop_fn fn, void *userdata)
{
    s->on_drop = fn;
    s->drop_userdata = userdata;
}

int state_store_set(struct state_store *s, const char *app, const char *key, json_t *value,
                    int64_t now_us, char **ret_error)
{
    *ret_error = NULL;
    char *text = NULL;
    size_t len = 0;
    int r = state_store_text(&s->lim, key, value, &text, &len, ret_error);
    return r < 0 ? r : state_store_put_text(s, app, key, text, len, now_us, false, ret_error);
}

int state_store_text(const struct state_limits *lim, const char *key, json_t *value,
                     char **ret_text, size_t *ret_len, char **ret_error)
{
    *ret_error = NULL;
    size_t max_key = lim->max_key ? lim->max_key : STATE_MAX_KEY;
    size_t max_value = lim->max_value ? lim->max_value : STATE_MAX_VALUE;
    if (strlen(key) > max_key)
        return fmt_error(ret_error, E2BIG, "the key is %zu bytes, at most %zu", strlen(key),
                         max_key);
    struct buf b;
    buf_init(&b, max_value);
    int r = jdump_buf(value, JSON_COMPACT, &b);
    if (r < 0) {
        buf_free(&b);
        return r == -E2BIG
                   ? fmt_error(ret_error, E2BIG, "the value is over %zu bytes of JSON", max_value)
                   : r;
    }
    *ret_text = buf_take(&b, ret_len);
    return *ret_text ? 0 : -ENOMEM;
}

size_t state_entry_size(const char *app, const char *key, size_t text_len)
{
    return text_len + strlen(app) + 1 + strlen(key) + STATE_ENTRY_OVERHEAD;
}

int state_store_put_text(struct state_store *s, const char *app, const char *key, char *text,
                         size_t len, int64_t now_us, bool only_new, char **ret_error)
{
    *ret_error = NULL;
    if (strlen(key) > s->lim.max_key || len > s->lim.max_value) {
        free(text);
        return fmt_error(ret_error, E2BIG, "the key or the value is over its cap");
    }
    struct state_entry *e = calloc(1, sizeof(*e));
    if (!e || !(e->id = state_id(app, key, &e->id_len, &e->app_len))) {
        free(e);
        free(text);
        return -ENOMEM;
    }
    e->text = text;
    e->size = state_entry_size(app, key, len);
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
    if (old && only_new) {
        pthread_mutex_unlock(&s->lock);
        free(e->id);
        free(e->text);
        free(e);
        return fmt_error(ret_error, EEXIST, "there is a value of that key already");
    }
    if (old)
        state_drop(s, old, false);
    struct state_app *a = state_app_of(s, app, e->app_len);
    if (a && a->values >= s->lim.max_per_app) { /* the app's least recently written goes */
        state_drop(s, a->list, true);
        s->evicted++;
        a = state_app_of(s, app, e->app_len);
    }
    while (s->entries && s->bytes + e->size > s->lim.max_bytes) { /* and across apps */
        state_drop(s, s->entries, true);
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

int state_store_remove(struct state_store *s, const char *app, const char *key)
{
    size_t len, app_len;
    char *id = state_id(app, key, &len, &app_len);
    if (!id)
        return -ENOMEM;
    pthread_mutex_lock(&s->lock);
    struct state_entry *e = NULL;
    HASH_FIND(hh, s->entries, id, len, e);
    if (e)
        state_drop(s, e, false);
    pthread_mutex_unlock(&s->lock);
    free(id);
    return e ? 0 : -ENOENT;
}

int state_store_each(struct state_store *s, int64_t now_us, state_each_fn fn, void *userdata)
{
    int r = 0;
    pthread_mutex_lock(&s->lock);
    state_expire(s, now_us);
    for (struct state_entry *e = s->entries; e && r == 0; e = e->hh.next)
        r = fn(userdata, e->id, e->id + e->app_len + 1, e->text, e->written_us);
    pthread_mutex_unlock(&s->lock);
    return r;
}

/* The entry of (app, key) after expiring what is due (lock held), or NULL. */
static struct state_entry *state_find(struct state_store *s, const char *app, const char *key,
                                      int64_t now_us, bool *ret_oom)
{
    size_t len, app_len;
    char *id = state_id(app, key, &len, &app_len);
    *ret_oom = !id;
    if (!id)
        return NULL;
    state_expire(s, now_us);
    struct state_entry *e = NULL;
    HASH_FIND(hh, s->entries, id, len, e);
    free(id);
    return e;
}

json_t *state_store_get(struct state_store *s, const char *app, const char *key, int64_t now_us)
{
    bool oom;
    pthread_mutex_lock(&s->lock);
    struct state_entry *e = state_find(s, app, key, now_us, &oom);
    json_error_t jerr;
    /* The text is jdump's: \u0000 in a string is written escaped and must read back. */
    json_t *v = e ? json_loads(e->text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr) : NULL;
    pthread_mutex_unlock(&s->lock);
    return v;
}

int state_store_get_text(struct state_store *s, const char *app, const char *key, int64_t now_us,
                         char **ret_text, size_t *ret_len)
{
    bool oom;
    pthread_mutex_lock(&s->lock);
    struct state_entry *e = state_find(s, app, key, now_us, &oom);
    size_t len = e ? strlen(e->text) : 0;
    char *text = e ? strndup(e->text, len) : NULL;
    pthread_mutex_unlock(&s->lock);
    if (oom || (e && !text))
        return -ENOMEM;
    if (!e)
        return -ENOENT;
    *ret_text = text;
    *ret_len = len;
    return 0;
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
