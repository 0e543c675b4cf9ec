// SPDX-License-Identifier: MIT
/*
 * state — the runtime values of the embedded "local" framework
 * (core.state.getRuntimeValue / setRuntimeValue, which workflows in step mode
 * use to keep step outputs between requests). Values are kept per app, in
 * memory only: a restart drops them, on purpose (a real framework is the
 * place for durable state). Everything a caller chooses is bounded: key and
 * value sizes are refused beyond their caps, an app holds a bounded number
 * of values and all apps together a bounded number of bytes (the least
 * recently written value makes room), and a value expires a while after its
 * last write. Thread-safe.
 */
#ifndef SANDBOXD_FRAMEWORK_STATE_H
#define SANDBOXD_FRAMEWORK_STATE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define STATE_MAX_KEY     2048        /* bytes */
#define STATE_MAX_VALUE   (1u << 20)  /* bytes of the value's JSON text */
#define STATE_MAX_PER_APP 1024        /* values */
#define STATE_MAX_BYTES   (64u << 20) /* all apps, keys and values */
#define STATE_TTL_US      (24LL * 3600 * 1000000)

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
/* {values, bytes, evicted, expired} (new reference). */
json_t *state_store_stats(struct state_store *s);

#endif
