// SPDX-License-Identifier: MIT
/*
 * fuzz_state — the runtime values of the local framework (framework/state.c),
 * which workflows in step mode and sandboxed code fill with values of
 * their choosing. Against a model (the last value written under each app
 * and key): a value read back is the one last written (equal as JSON) or
 * gone (evicted or expired), never another; a value written and read at
 * once is there unless it was refused for a cap; an app never holds more
 * values than its cap and the store never more bytes.
 *
 * Input: a byte choosing the caps, then a JSON array of operations:
 * [app, key, value] writes, [app, key] reads, a number advances the clock
 * by that many hours.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "store/state.h"

#define HOUR_US (3600LL * 1000000)

/* The model's key of (app, key): "app\0key", *ret_len bytes (caller frees). */
static char *model_key(const char *app, const char *key, size_t *ret_len)
{
    size_t a = strlen(app), k = strlen(key);
    char *s = malloc(a + k + 2);
    FUZZ_CHECK(s != NULL);
    memcpy(s, app, a + 1);
    memcpy(s + a + 1, key, k + 1);
    *ret_len = a + 1 + k;
    return s;
}

/* What the store may answer for (app, key): the model's value or nothing. */
static void check_read(struct state_store *st, json_t *model, const char *app, const char *key,
                       int64_t now)
{
    json_t *got = state_store_get(st, app, key, now);
    size_t mk_len;
    char *mk = model_key(app, key, &mk_len);
    json_t *want = json_object_getn(model, mk, mk_len);
    FUZZ_CHECK(!got || fuzz_json_equal(got, want));
    json_decref(got);
    free(mk);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in = {data, size};
    uint8_t caps = fuzz_byte(&in);
    json_t *ops = json_loadb((const char *)in.data, in.len, JSON_ALLOW_NUL, NULL);
    if (!json_is_array(ops)) {
        json_decref(ops);
        return 0;
    }
    struct state_limits lim = {0};
    if (caps & 1)
        lim = (struct state_limits){
            .max_key = 1 + (caps >> 4),
            .max_value = 8 + 4 * (size_t)(caps >> 1),
            .max_per_app = 1 + ((caps >> 1) & 3),
            .max_bytes = 400 + 8 * (size_t)caps,
            .ttl_us = 2 * HOUR_US,
        };
    struct state_store *st;
    FUZZ_CHECK(state_store_new(&lim, &st) == 0);
    json_t *model = json_object();
    int64_t now = 1000000;
    size_t i;
    json_t *op;
    json_array_foreach(ops, i, op)
    {
        if (json_is_integer(op)) {
            json_int_t h = json_integer_value(op);
            now += (h > 0 && h < 1000 ? h : 0) * HOUR_US;
            continue;
        }
        const char *app = json_string_value(json_array_get(op, 0));
        const char *key = json_string_value(json_array_get(op, 1));
        if (!json_is_array(op) || !app || !key)
            continue;
        json_t *value = json_array_get(op, 2);
        if (value) {
            char *why = NULL;
            int r = state_store_set(st, app, key, value, now, &why);
            size_t mk_len;
            char *mk = model_key(app, key, &mk_len);
            if (r == 0) {
                FUZZ_CHECK(!why);
                json_object_setn(model, mk, mk_len, value);
                /* written just now: it is there, and equal */
                json_t *got = state_store_get(st, app, key, now);
                FUZZ_CHECK(fuzz_json_equal(got, value));
                json_decref(got);
            } else {
                FUZZ_CHECK(r == -E2BIG && why);
                free(why);
            }
            free(mk);
        }
        check_read(st, model, app, key, now);
        json_t *stats = state_store_stats(st);
        json_int_t bytes = json_integer_value(json_object_get(stats, "bytes"));
        FUZZ_CHECK(bytes >= 0 &&
                   (size_t)bytes <= (lim.max_bytes ? lim.max_bytes : STATE_MAX_BYTES));
        json_decref(stats);
    }
    /* everything written is what the model says, or gone */
    const char *mk;
    size_t mk_len;
    json_t *v;
    json_object_keylen_foreach(model, mk, mk_len, v)
    {
        check_read(st, model, mk, mk + strlen(mk) + 1, now); /* "app\0key" */
    }
    json_decref(model);
    json_decref(ops);
    state_store_free(st);
    return 0;
}
