// SPDX-License-Identifier: MIT
/*
 * state — the runtime values of the embedded "local" framework
 * (core.state.getRuntimeValue / setRuntimeValue, which workflows in step mode
 * use to keep step outputs between requests), as a table in memory: the
 * state directory's backend keeps it (store_dir_run.c writes each value to a
 * file as well and reads them back at start), and the rules here are the ones
 * the PostgreSQL backend applies in SQL. Everything a caller chooses is
 * bounded: key and value sizes are refused beyond their caps, an app holds a
 * bounded number of values and all apps together a bounded number of bytes
 * (the least recently written value makes room), and a value expires a while
 * after its last write. Times are the caller's (microseconds of one clock).
 * Thread-safe.
 */
#ifndef SANDBOXD_FRAMEWORK_STATE_H
#define SANDBOXD_FRAMEWORK_STATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STATE_MAX_KEY        2048        /* bytes */
#define STATE_MAX_VALUE      (1u << 20)  /* bytes of the value's JSON text */
#define STATE_MAX_PER_APP    1024        /* values */
#define STATE_MAX_BYTES      (64u << 20) /* all apps, keys and values */
#define STATE_TTL_US         (24LL * 3600 * 1000000)
#define STATE_ENTRY_OVERHEAD 160 /* bytes counted for a value besides its text, app and key */

struct state_limits {
    size_t max_key, max_value, max_per_app, max_bytes; /* 0: the defaults above */
    int64_t ttl_us;
};

struct state_store;

/* lim may be NULL. 0 or -ENOMEM. */
int state_store_new(const struct state_limits *lim, struct state_store **ret);
/* NULL-safe. */
void state_store_free(struct state_store *s);
/* Keep value (borrowed) under (app, key). 0; -E2BIG when the key or the value is over its cap
 * (a message in *ret_error, caller frees); -ENOMEM. now_us is the monotonic clock. */
int state_store_set(struct state_store *s, const char *app, const char *key, json_t *value,
                    int64_t now_us, char **ret_error);
/* The value under (app, key) as a new reference, or NULL when there is none (or it expired). */
json_t *state_store_get(struct state_store *s, const char *app, const char *key, int64_t now_us);
/* The JSON text under (app, key) (caller frees): 0, -ENOENT (none, or expired), -ENOMEM. */
int state_store_get_text(struct state_store *s, const char *app, const char *key, int64_t now_us,
                         char **ret_text, size_t *ret_len);
/* The value's compact JSON text within lim's caps (0 fields: the defaults): 0 and *ret_text
 * (caller frees); -E2BIG (and *ret_error) when the key or the text is over its cap. */
int state_store_text(const struct state_limits *lim, const char *key, json_t *value,
                     char **ret_text, size_t *ret_len, char **ret_error);
/* The bytes a value of text_len bytes under (app, key) counts against max_bytes. */
size_t state_entry_size(const char *app, const char *key, size_t text_len);
/* Keep text (JSON, taken over even on failure) under (app, key) as written at now_us; only_new:
 * -EEXIST when (app, key) holds a value already. */
int state_store_put_text(struct state_store *s, const char *app, const char *key, char *text,
                         size_t len, int64_t now_us, bool only_new, char **ret_error);
/* Forget the value under (app, key): -ENOENT when there is none. */
int state_store_remove(struct state_store *s, const char *app, const char *key);
/* Told, under the store's lock, of each value evicted or expired (never of one replaced). */
typedef void (*state_drop_fn)(void *userdata, const char *app, const char *key);
void state_store_on_drop(struct state_store *s, state_drop_fn fn, void *userdata);
/* fn for every value, least recently written first (under the store's lock: fn must not call
 * the store); stops at fn's first error and returns it. */
typedef int (*state_each_fn)(void *userdata, const char *app, const char *key, const char *text,
                             int64_t written_us);
int state_store_each(struct state_store *s, int64_t now_us, state_each_fn fn, void *userdata);
/* {values, bytes, evicted, expired} (new reference). */
json_t *state_store_stats(struct state_store *s);

#endif
