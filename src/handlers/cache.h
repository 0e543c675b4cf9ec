// SPDX-License-Identifier: MIT
/*
 * cache — validated workflow documents by content: the BLAKE2b hash of the
 * YAML text maps to the parsed, validated document, so a workflow that many
 * requests use is parsed and checked once. Bounded by entries and by the
 * documents' expanded sizes; the least recently used goes first. Documents
 * are shared read-only between the requests that use them. Thread-safe.
 */
#ifndef SANDBOXD_HANDLERS_CACHE_H
#define SANDBOXD_HANDLERS_CACHE_H

#include <jansson.h>
#include <stddef.h>

#define FLOW_CACHE_KEY_BYTES 32

struct flow_cache;

/* 0 or -ENOMEM. */
int flow_cache_new(size_t max_entries, size_t max_bytes, struct flow_cache **ret);
/* NULL-safe. */
void flow_cache_free(struct flow_cache *c);
void flow_cache_key(const char *text, size_t len, unsigned char key[FLOW_CACHE_KEY_BYTES]);
/* The document stored under key (new reference), or NULL. c may be NULL (no cache). */
json_t *flow_cache_get(struct flow_cache *c, const unsigned char key[FLOW_CACHE_KEY_BYTES]);
/* Keep doc (borrowed: the cache takes its own reference) under key; bytes is its expanded
 * size. Documents larger than the whole cache are not kept. c may be NULL. */
void flow_cache_put(struct flow_cache *c, const unsigned char key[FLOW_CACHE_KEY_BYTES],
                    json_t *doc, size_t bytes);
/* {entries, bytes, hits, misses} (new reference). */
json_t *flow_cache_stats(struct flow_cache *c);

#endif
