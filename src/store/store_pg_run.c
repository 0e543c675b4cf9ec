// SPDX-License-Identifier: MIT
/*
 * store_pg_run — the local framework's runtime values in PostgreSQL, with
 * the rules of store/state.c: a value expires a while after its last write
 * (reads skip it at once, the next write removes it), an app keeps at most
 * max_per_app values and all apps together at most max_bytes (sizes counted
 * as state_entry_size() counts them), the least recently written making room.
 * A write is one transaction that locks the one row holding the total, so
 * the bounds hold with any number of instances writing; runtime values are
 * written once per workflow step, which that order costs little.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_pg_int.h"
#include "util/macros.h"

/* How many of the oldest values one write may evict to make room, at most. */
#define PG_RUN_EVICT_BATCH 4096

struct pg_run_set {
    const char *app, *key, *text;
    size_t len;
    int64_t written_ms;
    bool only_new;
};

/* The first column of a statement's one row (0 when none). */
static int64_t pg_first(const PGresult *res)
{
    return res && PQntuples(res) ? pg_int8(res, 0, 0) : 0;
}

static void pg_clear(PGresult **res, size_t n)
{
    for (size_t i = 0; i < n; i++)
        PQclear(res[i]);
}

static int pg_run_set_txn(struct store_pg *s, struct pg_conn *c, void *userdata,
                          struct sbx_error *err)
{
    struct pg_run_set *x = userdata;
    const struct state_limits *lim = &s->base.run;
    int64_t now = store_now_ms(), ttl_ms = lim->ttl_us / 1000;
    int64_t at = x->written_ms > 0 ? x->written_ms : now;
    int64_t size = (int64_t)state_entry_size(x->app, x->key, x->len);
    struct pg_params expiry = {0}, own = {0}, app = {0};
    pg_param_int8(&expiry, now - ttl_ms);
    pg_param_text(&own, x->app);
    pg_param_text(&own, x->key);
    pg_param_text(&app, x->app);
    pg_param_int8(&app, (int64_t)lim->max_per_app - 1);
    /* One flight: the total's row locked (every runtime value's write queues there), what
     * expired gone, the value it replaces gone, the app's least recently written beyond its
     * cap gone. */
    PGresult *res[5] = {0};
    struct pg_stmt first[] = {
        {"BEGIN", NULL, NULL},
        {"SELECT bytes FROM sandboxd_runtime_total WHERE id = 1 FOR UPDATE", NULL, &res[0]},
        {"WITH d AS (DELETE FROM sandboxd_runtime WHERE written_ms < $1 RETURNING size) "
         "SELECT coalesce(sum(size), 0)::bigint FROM d",
         &expiry, &res[1]},
        {"WITH d AS (DELETE FROM sandboxd_runtime WHERE app = $1 AND key = $2 RETURNING size) "
         "SELECT coalesce(sum(size), 0)::bigint, count(*) FROM d",
         &own, &res[2]},
        {"WITH v AS (SELECT app, key FROM sandboxd_runtime WHERE app = $1 "
         "ORDER BY written_ms DESC, key DESC OFFSET $2), "
         "d AS (DELETE FROM sandboxd_runtime r USING v WHERE r.app = v.app AND r.key = v.key "
         "RETURNING r.size) SELECT coalesce(sum(size), 0)::bigint FROM d",
         &app, &res[3]},
    };
    int r = pg_flight(s, c, first, ARRAY_SIZE(first), err);
    if (r < 0)
        return r;
    bool replaced = res[2] && PQntuples(res[2]) && pg_int8(res[2], 0, 1) > 0;
    int64_t total = pg_first(res[0]) - pg_first(res[1]) - pg_first(res[2]) - pg_first(res[3]);
    pg_clear(res, ARRAY_SIZE(res));
    if (replaced && x->only_new) {
        sbx_error_set(err, SBX_ERR_CONFLICT, "EXISTS", NULL,
                      "there is a value of that key already");
        return -EEXIST;
    }
    /* and across apps, the least recently written of all, until it fits */
    int64_t need = total + size - (int64_t)lim->max_bytes, gone = 1;
    while (need > 0 && gone > 0) {
        struct pg_params q = {0};
        pg_param_int8(&q, need);
        pg_param_int8(&q, PG_RUN_EVICT_BATCH);
        PGresult *evicted = NULL;
        struct pg_stmt evict = {
            "WITH o AS (SELECT app, key, size, written_ms FROM sandboxd_runtime "
            "ORDER BY written_ms, app, key LIMIT $2), "
            "v AS (SELECT app, key, sum(size) OVER (ORDER BY written_ms, app, key "
            "ROWS UNBOUNDED PRECEDING) - size AS before FROM o), "
            "d AS (DELETE FROM sandboxd_runtime r USING v WHERE r.app = v.app "
            "AND r.key = v.key AND v.before < $1 RETURNING r.size) "
            "SELECT coalesce(sum(size), 0)::bigint FROM d",
            &q, &evicted};
        if ((r = pg_flight(s, c, &evict, 1, err)) < 0)
            return r;
        gone = pg_first(evicted);
        PQclear(evicted);
        total -= gone;
        need -= gone;
    }
    struct pg_params v = {0}, t = {0};
    pg_param_text(&v, x->app);
    pg_param_text(&v, x->key);
    pg_param_textn(&v, x->text, x->len);
    pg_param_int8(&v, size);
    pg_param_int8(&v, at);
    pg_param_int8(&t, total + size);
    struct pg_stmt last[] = {
        {"INSERT INTO sandboxd_runtime (app, key, value, size, written_ms) "
         "VALUES ($1, $2, $3, $4, $5)",
         &v, NULL},
        {"UPDATE sandboxd_runtime_total SET bytes = $1 WHERE id = 1", &t, NULL},
        {"COMMIT", NULL, NULL},
    };
    return pg_flight(s, c, last, ARRAY_SIZE(last), err);
}

int store_pg_run_set(struct store *base, const char *app, const char *key, const char *text,
                     size_t len, int64_t written_ms, bool only_new, struct sbx_error *err)
{
    struct pg_run_set x = {.app = app,
                           .key = key,
                           .text = text,
                           .len = len,
                           .written_ms = written_ms,
                           .only_new = only_new};
    return pg_txn((struct store_pg *)base, pg_run_set_txn, &x, err);
}

int store_pg_run_get(struct store *base, const char *app, const char *key, char **ret_text,
                     size_t *ret_len, struct sbx_error *err)
{
    struct pg_params p = {0};
    pg_param_text(&p, app);
    pg_param_text(&p, key);
    pg_param_int8(&p, store_now_ms() - base->run.ttl_us / 1000);
    PGresult *res = NULL;
    int r = pg_query((struct store_pg *)base,
                     "SELECT value FROM sandboxd_runtime WHERE app = $1 AND key = $2 "
                     "AND written_ms >= $3",
                     &p, &res, err);
    if (r == 0 && !PQntuples(res))
        r = -ENOENT;
    if (r == 0 && !(*ret_text = pg_bytes(res, 0, 0, ret_len)))
        r = store_fail(err, -ENOMEM, "runtime value");
    PQclear(res);
    return r;
}

int store_pg_each_run(struct store *base, store_run_fn fn, void *userdata, struct sbx_error *err)
{
    struct pg_params p = {0};
    pg_param_int8(&p, store_now_ms() - base->run.ttl_us / 1000);
    PGresult *res = NULL;
    int r = pg_query((struct store_pg *)base,
                     "SELECT app, key, value, written_ms FROM sandboxd_runtime "
                     "WHERE written_ms >= $1 ORDER BY written_ms, app, key",
                     &p, &res, err);
    for (int i = 0; r == 0 && i < PQntuples(res); i++) {
        char *app = pg_bytes(res, i, 0, NULL), *key = pg_bytes(res, i, 1, NULL);
        char *value = pg_bytes(res, i, 2, NULL);
        r = app && key && value ? fn(userdata, app, key, value, pg_int8(res, i, 3))
                                : store_fail(err, -ENOMEM, "runtime values");
        free(app);
        free(key);
        free(value);
    }
    PQclear(res);
    return r;
}
