// SPDX-License-Identifier: MIT
/*
 * store_pg — the PostgreSQL backend (see store.h; tables in
 * store_pg_schema.c, connections in store_pg_conn.c): every instance that
 * names the database shares its workspaces and runtime values.
 *
 * Reads are one statement each. A write is one transaction: it locks the
 * workspace's row (and for a tenant's workspace the tenant's row, which every
 * write of that tenant locks: one tenant's writers queue there, others' do
 * not), reads the item as it is, lets compose make the new data, checks the
 * room with the same rule as the state directory (store_check_room), then
 * writes the item and the counts in one statement and commits. So a quota or
 * an entry count holds with any number of instances writing at once, a memory
 * is kept or replaced whole, and a reader never sees half of a write. A
 * workspace is found by (tenant, name), and every statement on items names
 * the workspace's id found that way: no statement reaches another tenant's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_pg_int.h"
#include "util/fmt.h"
#include "util/log.h"
#include "util/macros.h"

static const struct store_ops store_pg_ops;

struct store_pg_ws {
    struct store_ws base;
    int64_t id;
    size_t tenant_bytes, tenant_workspaces; /* the tenant's share it was opened with */
};

int store_pg_new(const struct store_options *opts, int wait_ms, struct store **ret)
{
    struct store_pg *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->base.ops = &store_pg_ops;
    s->base.lim = opts->lim;
    s->base.run = opts->run;
    s->base.read_only = opts->read_only;
    int r = store_pg_conn_init(s, opts);
    if (r == 0 && opts->state_dir && !(s->state_dir = realpath(opts->state_dir, NULL)))
        r = log_errno(LOG_ERROR, errno, "store: %s", opts->state_dir);
    if (r == 0)
        r = store_pg_conn_start(s, wait_ms);
    if (r < 0) {
        if (r == -ENOTCONN || r == -EPROTONOSUPPORT)
            log_error("store: PostgreSQL %s did not become ready within %d ms: %s", s->location,
                      wait_ms, s->reason[0] ? s->reason : "no answer");
        store_pg_ops.free(&s->base);
        return r;
    }
    log_info("store: workspaces and runtime values in PostgreSQL %s (%u connections at most, "
             "%u ms per statement)",
             s->location, s->n_conns, s->timeout_ms);
    *ret = &s->base;
    return 0;
}

static int store_pg_wait_ready(struct store *base, int wait_ms)
{
    return store_pg_wait((struct store_pg *)base, wait_ms);
}

static void store_pg_free(struct store *base)
{
    struct store_pg *s = (struct store_pg *)base;
    store_pg_conn_done(s);
    free(s->state_dir);
    free(s);
}

/* ---- workspaces ---------------------------------------------------------------------------- */

struct pg_open {
    struct store_pg_ws *w;
    size_t max_workspaces;
    bool create;
};

/* Make the workspace (the tenant's row locked: its count of workspaces holds). */
static int pg_open_txn(struct store_pg *s, struct pg_conn *c, void *userdata, struct sbx_error *err)
{
    struct pg_open *x = userdata;
    struct store_pg_ws *w = x->w;
    struct pg_params t = {0}, tn = {0};
    pg_param_text(&t, w->base.tenant);
    pg_param_text(&tn, w->base.tenant);
    pg_param_text(&tn, w->base.name);
    PGresult *count = NULL, *found = NULL;
    struct pg_stmt first[] = {
        {"BEGIN", NULL, NULL},
        {"INSERT INTO sandboxd_tenants (tenant) VALUES ($1) ON CONFLICT DO NOTHING", &t, NULL},
        {"SELECT workspaces::bigint FROM sandboxd_tenants WHERE tenant = $1 FOR UPDATE", &t,
         &count},
        {"SELECT id FROM sandboxd_workspaces WHERE tenant = $1 AND name = $2", &tn, &found},
    };
    int r = pg_flight(s, c, first, ARRAY_SIZE(first), err);
    if (r < 0)
        return r;
    int64_t n = PQntuples(count) ? pg_int8(count, 0, 0) : 0;
    bool made = PQntuples(found) > 0; /* meanwhile, by another */
    if (made)
        w->id = pg_int8(found, 0, 0);
    PQclear(count);
    PQclear(found);
    if (made)
        return pg_exec(s, c, "COMMIT", NULL, NULL, err);
    if (*w->base.tenant && (size_t)n >= x->max_workspaces) {
        sbx_error_set(err, SBX_ERR_LIMIT, "QUOTA_EXCEEDED", "workspace",
                      "tenant '%s' has %lld workspaces, its maxWorkspaces", w->base.tenant,
                      (long long)n);
        return -EDQUOT;
    }
    pg_param_int8(&tn, store_now_ms());
    PGresult *id = NULL;
    struct pg_stmt last[] = {
        {"INSERT INTO sandboxd_workspaces (tenant, name, created_ms) VALUES ($1, $2, $3) "
         "RETURNING id",
         &tn, &id},
        {"UPDATE sandboxd_tenants SET workspaces = workspaces + 1 WHERE tenant = $1", &t, NULL},
        {"COMMIT", NULL, NULL},
    };
    r = pg_flight(s, c, last, ARRAY_SIZE(last), err);
    if (r == 0)
        w->id = pg_int8(id, 0, 0);
    PQclear(id);
    return r;
}

static int store_pg_ws_open(struct store *base, const char *tenant, const char *name,
                            const struct store_share *share, bool create, struct store_ws **ret,
                            struct sbx_error *err)
{
    struct store_pg *s = (struct store_pg *)base;
    struct store_pg_ws *w = calloc(1, sizeof(*w));
    if (!w)
        return store_fail(err, -ENOMEM, "workspace");
    w->base.store = base;
    snprintf(w->base.tenant, sizeof(w->base.tenant), "%s", tenant);
    snprintf(w->base.name, sizeof(w->base.name), "%s", name);
    w->tenant_bytes = store_tenant_bytes(&base->lim, share);
    w->tenant_workspaces = store_tenant_workspaces(&base->lim, share);
    struct pg_params p = {0};
    pg_param_text(&p, tenant);
    pg_param_text(&p, name);
    PGresult *res = NULL;
    int r = pg_query(s, "SELECT id FROM sandboxd_workspaces WHERE tenant = $1 AND name = $2", &p,
                     &res, err);
    if (r == 0 && PQntuples(res))
        w->id = pg_int8(res, 0, 0);
    else if (r == 0 && !create)
        r = -ENOENT;
    else if (r == 0) {
        struct pg_open x = {.w = w, .max_workspaces = w->tenant_workspaces, .create = create};
        r = pg_txn(s, pg_open_txn, &x, err);
    }
    PQclear(res);
    if (r < 0) {
        if (r == -ENOENT)
            sbx_error_set(err, SBX_ERR_NOT_FOUND, "NOT_FOUND", "workspace", "no workspace %s",
                          name);
        free(w);
        return r;
    }
    *ret = &w->base;
    return 0;
}

static void store_pg_ws_close(struct store_ws *base)
{
    free(base);
}

/* ---- items --------------------------------------------------------------------------------- */

#define PG_ITEM_COLUMNS "name, size, modified_ms, info, rev"

/* Row row of res (PG_ITEM_COLUMNS, then data when with_data) into *it. */
static int pg_item(const PGresult *res, int row, enum store_kind k, bool with_data,
                   struct store_item *it)
{
    *it = (struct store_item){.size = (size_t)pg_int8(res, row, 1),
                              .modified_ms = pg_int8(res, row, 2),
                              .rev = (uint64_t)pg_int8(res, row, 4)};
    it->name = pg_bytes(res, row, 0, NULL);
    if (!it->name)
        return -ENOMEM;
    if (k == STORE_MEMORY && !pg_isnull(res, row, 3)) {
        json_error_t jerr;
        it->info = json_loadb(PQgetvalue(res, row, 3), (size_t)PQgetlength(res, row, 3),
                              JSON_ALLOW_NUL, &jerr);
    }
    if (with_data && !(it->data = pg_bytes(res, row, 5, &it->len)))
        return -ENOMEM;
    return 0;
}

/* The items of kind k of w (name NULL: all of them, by name, at most max_entries; else that
 * one), with their data or not: one statement of four. */
static int pg_select_items(struct store_pg_ws *w, enum store_kind k, const char *name,
                           bool with_data, PGresult **ret, struct sbx_error *err)
{
    static const char *const sql[2][2] = {
        {"SELECT " PG_ITEM_COLUMNS " FROM sandboxd_items "
         "WHERE ws = $1 AND kind = $2 AND name = $3",
         "SELECT " PG_ITEM_COLUMNS ", data FROM sandboxd_items "
         "WHERE ws = $1 AND kind = $2 AND name = $3"},
        {"SELECT " PG_ITEM_COLUMNS " FROM sandboxd_items "
         "WHERE ws = $1 AND kind = $2 ORDER BY name LIMIT $3",
         "SELECT " PG_ITEM_COLUMNS ", data FROM sandboxd_items "
         "WHERE ws = $1 AND kind = $2 ORDER BY name LIMIT $3"},
    };
    struct pg_params p = {0};
    pg_param_int8(&p, w->id);
    pg_param_int8(&p, k);
    if (name)
        pg_param_text(&p, name);
    else
        pg_param_int8(&p, (int64_t)w->base.store->lim.max_entries);
    return pg_query((struct store_pg *)w->base.store, sql[!name][with_data], &p, ret, err);
}

static int store_pg_get(struct store_ws *base, enum store_kind k, const char *name, bool with_data,
                        struct store_item **ret, struct sbx_error *err)
{
    PGresult *res = NULL;
    int r = pg_select_items((struct store_pg_ws *)base, k, name, with_data, &res, err);
    if (r < 0)
        return r;
    struct store_item *it = NULL;
    if (!PQntuples(res))
        r = -ENOENT;
    else if (!(it = calloc(1, sizeof(*it))) || pg_item(res, 0, k, with_data, it) < 0)
        r = store_fail(err, -ENOMEM, "read");
    PQclear(res);
    if (r < 0) {
        store_item_free(it);
        return r;
    }
    *ret = it;
    return 0;
}

static int store_pg_list(struct store_ws *base, enum store_kind k, bool with_data,
                         struct store_item **ret_items, size_t *ret_n, struct sbx_error *err)
{
    PGresult *res = NULL;
    int r = pg_select_items((struct store_pg_ws *)base, k, NULL, with_data, &res, err);
    if (r < 0)
        return r;
    size_t n = (size_t)PQntuples(res), done = 0;
    struct store_item *items = n ? calloc(n, sizeof(*items)) : NULL;
    if (n && !items)
        r = store_fail(err, -ENOMEM, "list");
    for (; r == 0 && done < n; done++)
        if (pg_item(res, (int)done, k, with_data, &items[done]) < 0)
            r = store_fail(err, -ENOMEM, "list");
    PQclear(res);
    if (r < 0) {
        store_items_free(items, done + (done < n));
        return r;
    }
    *ret_items = items;
    *ret_n = n;
    return 0;
}

/* The write of an item and its counts, one statement per kind (column: the kind's counter in
 * sandboxd_workspaces). $1 workspace, $2 kind, $3 name, $4 data, $5 info, $6 size, $7 rev,
 * $8 modified_ms, $9 bytes added, $10 items added, $11 tenant. */
#define PG_PUT_SQL(column)                                                                         \
    "WITH up AS (INSERT INTO sandboxd_items (ws, kind, name, data, info, size, rev, modified_ms) " \
    "VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (ws, kind, name) DO UPDATE SET "          \
    "data = EXCLUDED.data, info = EXCLUDED.info, size = EXCLUDED.size, rev = EXCLUDED.rev, "       \
    "modified_ms = EXCLUDED.modified_ms RETURNING 1), "                                            \
    "w AS (UPDATE sandboxd_workspaces SET bytes = bytes + $9, " column " = " column " + $10 "      \
    "WHERE id = $1 RETURNING 1), "                                                                 \
    "t AS (UPDATE sandboxd_tenants SET bytes = bytes + $9 WHERE tenant = $11 AND $11 <> '' "       \
    "RETURNING 1) "                                                                                \
    "SELECT (SELECT count(*) FROM up), (SELECT count(*) FROM w), (SELECT count(*) FROM t)"

/* The removal of an item: $1 workspace, $2 kind, $3 name, $4 its size, $5 tenant. */
#define PG_DEL_SQL(column)                                                                         \
    "WITH d AS (DELETE FROM sandboxd_items WHERE ws = $1 AND kind = $2 AND name = $3 "             \
    "RETURNING 1), "                                                                               \
    "w AS (UPDATE sandboxd_workspaces SET bytes = bytes - $4, " column " = " column " - 1 "        \
    "WHERE id = $1 RETURNING 1), "                                                                 \
    "t AS (UPDATE sandboxd_tenants SET bytes = bytes - $4 WHERE tenant = $5 AND $5 <> '' "         \
    "RETURNING 1) "                                                                                \
    "SELECT (SELECT count(*) FROM d), (SELECT count(*) FROM w), (SELECT count(*) FROM t)"

struct pg_put {
    struct store_pg_ws *w;
    enum store_kind k;
    const char *name, *what;
    store_compose_fn compose;
    void *userdata;
    int64_t modified_ms;
};

/* pg_begin_item's columns: the workspace's bytes, its counts by kind (1 + kind), the tenant's
 * bytes, then the item's size, modified_ms, info and rev (NULL when there is none). */
#define PG_ITEM_SIZE (2 + STORE_KINDS)

/* BEGIN, lock the workspace's row and, for a tenant's workspace, the tenant's (the operator's
 * workspaces have no total to hold), then read both with the item as it is: one flight. The
 * read is a statement of its own: in READ COMMITTED its snapshot is taken after the locks are
 * held, so it sees every write that committed before (a join in the locking statement could
 * read the item as it was before the write it waited for). */
static int pg_begin_item(struct store_pg *s, struct pg_conn *c, struct store_pg_ws *w,
                         enum store_kind k, const char *name, PGresult **ret, struct sbx_error *err)
{
    struct pg_params lock = {0}, read = {0};
    pg_param_int8(&lock, w->id);
    pg_param_int8(&read, w->id);
    pg_param_int8(&read, k);
    pg_param_text(&read, name);
    PGresult *locked = NULL;
    struct pg_stmt st[] = {
        {"BEGIN", NULL, NULL},
        {*w->base.tenant ? "SELECT 1 FROM sandboxd_workspaces w "
                           "JOIN sandboxd_tenants t ON t.tenant = w.tenant "
                           "WHERE w.id = $1 FOR UPDATE OF w, t"
                         : "SELECT 1 FROM sandboxd_workspaces w WHERE w.id = $1 FOR UPDATE",
         &lock, &locked},
        {"SELECT w.bytes, w.memories::bigint, w.tools::bigint, w.files::bigint, "
         "w.runs::bigint, t.bytes, i.size, i.modified_ms, i.info, i.rev "
         "FROM sandboxd_workspaces w JOIN sandboxd_tenants t ON t.tenant = w.tenant "
         "LEFT JOIN sandboxd_items i ON i.ws = w.id AND i.kind = $2 AND i.name = $3 "
         "WHERE w.id = $1",
         &read, ret},
    };
    int r = pg_flight(s, c, st, ARRAY_SIZE(st), err);
    if (r < 0)
        return r;
    bool gone = !PQntuples(locked) || !PQntuples(*ret);
    PQclear(locked);
    if (gone) {
        PQclear(*ret);
        *ret = NULL;
        sbx_error_set(err, SBX_ERR_NOT_FOUND, "NOT_FOUND", "workspace", "workspace %s is gone",
                      w->base.name);
        return -ENOENT;
    }
    return 0;
}

static int pg_put_txn(struct store_pg *s, struct pg_conn *c, void *userdata, struct sbx_error *err)
{
    struct pg_put *x = userdata;
    struct store_pg_ws *w = x->w;
    const struct store_limits *lim = &s->base.lim;
    PGresult *res = NULL;
    int r = pg_begin_item(s, c, w, x->k, x->name, &res, err);
    if (r < 0)
        return r;
    bool exists = !pg_isnull(res, 0, PG_ITEM_SIZE);
    struct store_item old = {0};
    if (exists) {
        old = (struct store_item){.size = (size_t)pg_int8(res, 0, PG_ITEM_SIZE),
                                  .modified_ms = pg_int8(res, 0, PG_ITEM_SIZE + 1),
                                  .rev = (uint64_t)pg_int8(res, 0, PG_ITEM_SIZE + 3),
                                  .name = (char *)x->name};
        if (!pg_isnull(res, 0, PG_ITEM_SIZE + 2)) {
            json_error_t jerr;
            old.info =
                json_loadb(PQgetvalue(res, 0, PG_ITEM_SIZE + 2),
                           (size_t)PQgetlength(res, 0, PG_ITEM_SIZE + 2), JSON_ALLOW_NUL, &jerr);
        }
    }
    struct store_room room = {.what = x->what,
                              .kind = x->k,
                              .exists = exists,
                              .old_size = old.size,
                              .count = (size_t)pg_int8(res, 0, 1 + x->k),
                              .ws_bytes = (size_t)pg_int8(res, 0, 0),
                              .tenant = *w->base.tenant ? w->base.tenant : NULL,
                              .tenant_bytes = (size_t)pg_int8(res, 0, PG_ITEM_SIZE - 1),
                              .tenant_max = w->tenant_bytes};
    PQclear(res);
    char *data = NULL;
    size_t len = 0;
    r = x->compose(x->userdata, exists ? &old : NULL, &data, &len, err);
    json_decref(old.info);
    if (r < 0)
        return r;
    room.new_size = len;
    r = store_check_room(lim, &room, err);
    _cleanup_free_ char *info = NULL;
    if (r == 0 && x->k == STORE_MEMORY) {
        json_t *head = store_memory_info(data, len, NULL, NULL);
        info = head ? json_dumps(head, JSON_COMPACT) : NULL;
        json_decref(head);
    }
    if (r < 0) {
        free(data);
        return r;
    }
    int64_t delta = (int64_t)len - (int64_t)(exists ? old.size : 0);
    struct pg_params p = {0};
    pg_param_int8(&p, w->id);      /* $1 */
    pg_param_int8(&p, x->k);       /* $2 */
    pg_param_text(&p, x->name);    /* $3 */
    pg_param_bytes(&p, data, len); /* $4 */
    if (info)
        pg_param_text(&p, info); /* $5 */
    else
        pg_param_null(&p, 25 /* text */);
    pg_param_int8(&p, (int64_t)len);                                             /* $6 */
    pg_param_int8(&p, x->k == STORE_MEMORY ? (int64_t)store_rev(data, len) : 0); /* $7 */
    pg_param_int8(&p, x->modified_ms > 0 ? x->modified_ms : store_now_ms());     /* $8 */
    pg_param_int8(&p, delta);                                                    /* $9 */
    pg_param_int8(&p, exists ? 0 : 1);                                           /* $10 */
    pg_param_text(&p, w->base.tenant);                                           /* $11 */
    static const char *const sql[STORE_KINDS] = {
        PG_PUT_SQL("memories"),
        PG_PUT_SQL("tools"),
        PG_PUT_SQL("files"),
        PG_PUT_SQL("runs"),
    };
    struct pg_stmt last[] = {{sql[x->k], &p, NULL}, {"COMMIT", NULL, NULL}};
    r = pg_flight(s, c, last, ARRAY_SIZE(last), err);
    free(data);
    return r;
}

static int store_pg_put(struct store_ws *base, enum store_kind k, const char *name,
                        store_compose_fn compose, void *userdata, int64_t modified_ms,
                        const char *what, struct sbx_error *err)
{
    struct pg_put x = {.w = (struct store_pg_ws *)base,
                       .k = k,
                       .name = name,
                       .what = what,
                       .compose = compose,
                       .userdata = userdata,
                       .modified_ms = modified_ms};
    return pg_txn((struct store_pg *)base->store, pg_put_txn, &x, err);
}

struct pg_del {
    struct store_pg_ws *w;
    enum store_kind k;
    const char *name;
};

static int pg_del_txn(struct store_pg *s, struct pg_conn *c, void *userdata, struct sbx_error *err)
{
    struct pg_del *x = userdata;
    PGresult *res = NULL;
    int r = pg_begin_item(s, c, x->w, x->k, x->name, &res, err);
    if (r < 0)
        return r;
    bool exists = !pg_isnull(res, 0, PG_ITEM_SIZE);
    int64_t size = pg_int8(res, 0, PG_ITEM_SIZE);
    PQclear(res);
    if (!exists)
        return -ENOENT;
    struct pg_params p = {0};
    pg_param_int8(&p, x->w->id);
    pg_param_int8(&p, x->k);
    pg_param_text(&p, x->name);
    pg_param_int8(&p, size);
    pg_param_text(&p, x->w->base.tenant);
    static const char *const sql[STORE_KINDS] = {
        PG_DEL_SQL("memories"),
        PG_DEL_SQL("tools"),
        PG_DEL_SQL("files"),
        PG_DEL_SQL("runs"),
    };
    struct pg_stmt last[] = {{sql[x->k], &p, NULL}, {"COMMIT", NULL, NULL}};
    return pg_flight(s, c, last, ARRAY_SIZE(last), err);
}

static int store_pg_del(struct store_ws *base, enum store_kind k, const char *name,
                        struct sbx_error *err)
{
    struct pg_del x = {.w = (struct store_pg_ws *)base, .k = k, .name = name};
    return pg_txn((struct store_pg *)base->store, pg_del_txn, &x, err);
}

/* A copy of the data in this host's copies/ (the database has no path to give). */
static int store_pg_host_path(struct store_ws *base, enum store_kind k, const char *name,
                              const void *data, size_t len, char **ret, struct sbx_error *err)
{
    struct store_pg *s = (struct store_pg *)base->store;
    if (!s->state_dir) {
        sbx_error_set(err, SBX_ERR_INTERNAL, "INTERNAL", NULL,
                      "no state directory to keep a copy of %s in", name);
        return -EOPNOTSUPP;
    }
    _cleanup_free_ char *item = store_item_relpath(base, k, name);
    _cleanup_free_ char *rel = item ? fmt_str("copies/%s", item) : NULL;
    int r = rel ? store_write_below(s->state_dir, rel, data, len, false) : -ENOMEM;
    if (r == 0 && !(*ret = fmt_str("%s/%s", s->state_dir, rel)))
        r = -ENOMEM;
    return r < 0 ? store_fail(err, r, "the local copy") : 0;
}

static json_t *store_pg_usage(struct store_ws *base, struct sbx_error *err)
{
    struct store_pg_ws *w = (struct store_pg_ws *)base;
    const struct store_limits *lim = &base->store->lim;
    struct pg_params p = {0};
    pg_param_int8(&p, w->id);
    PGresult *res = NULL;
    int r = pg_query((struct store_pg *)base->store,
                     "SELECT w.bytes, w.memories::bigint, w.tools::bigint, w.files::bigint, "
                     "w.runs::bigint, t.bytes, t.workspaces::bigint FROM sandboxd_workspaces w "
                     "JOIN sandboxd_tenants t ON t.tenant = w.tenant WHERE w.id = $1",
                     &p, &res, err);
    if (r < 0)
        return NULL;
    json_t *o = NULL;
    if (PQntuples(res)) {
        o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "bytes", (json_int_t)pg_int8(res, 0, 0),
                      "maxBytes", (json_int_t)lim->max_bytes, "memories",
                      (json_int_t)pg_int8(res, 0, 1), "tools", (json_int_t)pg_int8(res, 0, 2),
                      "files", (json_int_t)pg_int8(res, 0, 3), "runFiles",
                      (json_int_t)pg_int8(res, 0, 4));
        if (o && *base->tenant)
            json_object_set_new(o, "tenant",
                                json_pack("{s:I, s:I, s:I, s:I}", "bytes",
                                          (json_int_t)pg_int8(res, 0, 5), "maxBytes",
                                          (json_int_t)w->tenant_bytes, "workspaces",
                                          (json_int_t)pg_int8(res, 0, 6), "maxWorkspaces",
                                          (json_int_t)w->tenant_workspaces));
    }
    PQclear(res);
    return o;
}

static int store_pg_each_workspace(struct store *base, store_ws_fn fn, void *userdata,
                                   struct sbx_error *err)
{
    PGresult *res = NULL;
    int r = pg_query((struct store_pg *)base,
                     "SELECT tenant, name FROM sandboxd_workspaces ORDER BY tenant, name", NULL,
                     &res, err);
    for (int i = 0; r == 0 && i < PQntuples(res); i++) {
        char *tenant = pg_bytes(res, i, 0, NULL), *name = pg_bytes(res, i, 1, NULL);
        r = tenant && name ? fn(userdata, tenant, name) : store_fail(err, -ENOMEM, "workspaces");
        free(tenant);
        free(name);
    }
    PQclear(res);
    return r;
}

static const struct store_ops store_pg_ops = {
    .backend = "postgresql",
    .free = store_pg_free,
    .ready = store_pg_ready,
    .wait = store_pg_wait_ready,
    .describe = store_pg_describe,
    .ws_open = store_pg_ws_open,
    .ws_close = store_pg_ws_close,
    .get = store_pg_get,
    .list = store_pg_list,
    .put = store_pg_put,
    .del = store_pg_del,
    .host_path = store_pg_host_path,
    .usage = store_pg_usage,
    .run_set = store_pg_run_set,
    .run_get = store_pg_run_get,
    .each_workspace = store_pg_each_workspace,
    .each_run = store_pg_each_run,
};
