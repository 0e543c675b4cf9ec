// SPDX-License-Identifier: MIT
/*
 * cache — see cache.h. uthash keeps insertion order, which is the eviction
 * order: a hit is moved to the end.
 */
#include "handlers/cache.h"

#include <errno.h>
#include <pthread.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

struct flow_cache_entry {
    unsigned char key[FLOW_CACHE_KEY_BYTES];
    json_t *doc;
    size_t bytes;
    UT_hash_handle hh;
};

struct flow_cache {
    pthread_mutex_t lock;
    struct flow_cache_entry *table;
    size_t entries, bytes, max_entries, max_bytes;
    unsigned long hits, misses;
};

int flow_cache_new(size_t max_entries, size_t max_bytes, struct flow_cache **ret)
{
    struct flow_cache *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    pthread_mutex_init(&c->lock, NULL);
    c->max_entries = max_entries;
    c->max_bytes = max_bytes;
    *ret = c;
    return 0;
}

static void flow_cache_drop(struct flow_cache *c, struct flow_cache_entry *e)
{
    HASH_DEL(c->table, e);
    c->entries--;
    c->bytes -= e->bytes;
    json_decref(e->doc);
    free(e);
}

void flow_cache_free(struct flow_cache *c)
{
    if (!c)
        return;
    struct flow_cache_entry *e, *tmp;
    HASH_ITER(hh, c->table, e, tmp)
    flow_cache_drop(c, e);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

void flow_cache_key(const char *text, size_t len, unsigned char key[FLOW_CACHE_KEY_BYTES])
{
    crypto_generichash(key, FLOW_CACHE_KEY_BYTES, (const unsigned char *)text, len, NULL, 0);
}

json_t *flow_cache_get(struct flow_cache *c, const unsigned char key[FLOW_CACHE_KEY_BYTES])
{
    if (!c)
        return NULL;
    pthread_mutex_lock(&c->lock);
    struct flow_cache_entry *e = NULL;
    HASH_FIND(hh, c->table, key, FLOW_CACHE_KEY_BYTES, e);
    json_t *doc = NULL;
    if (e) {
        HASH_DEL(c->table, e); /* most recently used: to the end */
        HASH_ADD(hh, c->table, key, FLOW_CACHE_KEY_BYTES, e);
        doc = json_incref(e->doc);
        c->hits++;
    } else {
        c->misses++;
    }
    pthread_mutex_unlock(&c->lock);
    return doc;
}

void flow_cache_put(struct flow_cache *c, const unsigned char key[FLOW_CACHE_KEY_BYTES],
                    json_t *doc, size_t bytes)
{
    if (!c || !c->max_entries || bytes > c->max_bytes)
        return;
    struct flow_cache_entry *e = calloc(1, sizeof(*e));
    if (!e)
        return; /* not caching is always correct */
    memcpy(e->key, key, FLOW_CACHE_KEY_BYTES);
    e->doc = json_incref(doc);
    e->bytes = bytes;
    pthread_mutex_lock(&c->lock);
    struct flow_cache_entry *old = NULL;
    HASH_FIND(hh, c->table, key, FLOW_CACHE_KEY_BYTES, old);
    if (old) /* two requests parsed the same text at once */
        flow_cache_drop(c, old);
    while (c->table && (c->entries >= c->max_entries || c->bytes + bytes > c->max_bytes))
        flow_cache_drop(c, c->table); /* the oldest */
    HASH_ADD(hh, c->table, key, FLOW_CACHE_KEY_BYTES, e);
    c->entries++;
    c->bytes += bytes;
    pthread_mutex_unlock(&c->lock);
}

json_t *flow_cache_stats(struct flow_cache *c)
{
    if (!c)
        return json_null();
    pthread_mutex_lock(&c->lock);
    json_t *o = json_pack("{s:I, s:I, s:I, s:I}", "entries", (json_int_t)c->entries, "bytes",
                          (json_int_t)c->bytes, "hits", (json_int_t)c->hits, "misses",
                          (json_int_t)c->misses);
    pthread_mutex_unlock(&c->lock);
    return o;
}
