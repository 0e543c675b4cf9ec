// SPDX-License-Identifier: MIT
/*
 * migrate_store — `sandboxd migrate --from-state-dir DIR --state-store URL` (and the other way,
 * --from-state-store URL --state-dir DIR): copy what one state store holds into another —
 * every workspace of every tenant with its memories (their documents as they are, times
 * included), saved tools, files and kept files of execution folders (their times of last
 * write kept), and the local
 * framework's runtime values (their times kept) — reporting each item. The source is opened
 * only to read (store_options.read_only: nothing is made, changed or removed there). Nothing
 * in the destination is replaced: an item it has already is "unchanged" when it holds the
 * same bytes, else "skipped" with the reason, so running it again copies only what is new.
 * The destination takes every item whatever its quotas, which are the operator's to set for
 * what comes next; only the caps on one item apply, as for any write.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/migrate_store.h"
#include "cmd/setup.h"
#include "util/log.h"
#include "util/macros.h"

#define MIGRATE_WAIT_MS 10000 /* for a database to answer */

struct ms_count {
    unsigned copied, unchanged, skipped, failed;
};

struct ms_run {
    struct store *from, *to;
    struct ms_count n;
};

static void ms_report(struct ms_count *n, const char *outcome, const char *kind, const char *tenant,
                      const char *ws, const char *name, const char *why)
{
    printf("%s %s %s%s%s%s%s%s%s\n", outcome, kind, tenant, *tenant ? "/" : "", ws, *ws ? "/" : "",
           name, why ? ": " : "", why ? why : "");
    if (strcmp(outcome, "copied") == 0)
        n->copied++;
    else if (strcmp(outcome, "unchanged") == 0)
        n->unchanged++;
    else if (strcmp(outcome, "skipped") == 0)
        n->skipped++;
    else
        n->failed++;
}

static const char *ms_kind(enum store_kind k)
{
    static const char *const names[STORE_KINDS] = {"memory", "tool", "file", "run-file"};
    return names[k];
}

/* One item into dst (opened): copied, unchanged or skipped. */
static void ms_item(struct ms_run *m, struct store_ws *dst, enum store_kind k, const char *tenant,
                    const char *ws, const struct store_item *it)
{
    _cleanup_sbx_error_ struct sbx_error err = {0};
    int r = store_import(dst, k, it->name, it->data, it->len, it->modified_ms, &err);
    if (r == 0) {
        ms_report(&m->n, "copied", ms_kind(k), tenant, ws, it->name, NULL);
        return;
    }
    if (r != -EEXIST) {
        ms_report(&m->n, "failed", ms_kind(k), tenant, ws, it->name,
                  err.message ? err.message : strerror(-r));
        return;
    }
    sbx_error_clear(&err);
    struct store_item *have = NULL;
    r = store_get(dst, k, it->name, true, &have, &err);
    bool same = r == 0 && have->len == it->len && memcmp(have->data, it->data, it->len) == 0;
    store_item_free(have);
    if (same)
        ms_report(&m->n, "unchanged", ms_kind(k), tenant, ws, it->name, NULL);
    else
        ms_report(&m->n, "skipped", ms_kind(k), tenant, ws, it->name,
                  r == 0        ? "the destination has another of that name (nothing was replaced)"
                  : err.message ? err.message
                                : strerror(-r));
}

static int ms_workspace(void *userdata, const char *tenant, const char *ws)
{
    struct ms_run *m = userdata;
    struct store_ws *src = NULL, *dst = NULL;
    _cleanup_sbx_error_ struct sbx_error err = {0};
    int r = store_ws_open(m->from, tenant, ws, NULL, false, &src, &err);
    if (r == 0)
        r = store_ws_open(m->to, tenant, ws, NULL, true, &dst, &err);
    if (r < 0) {
        ms_report(&m->n, "failed", "workspace", tenant, ws, "",
                  err.message ? err.message : strerror(-r));
        store_ws_close(src);
        return r == -ENOTCONN ? r : 0; /* a database gone: stop; else the next workspace */
    }
    for (int k = 0; r == 0 && k < STORE_KINDS; k++) {
        struct store_item *items = NULL;
        size_t n = 0;
        r = store_list(src, k, true, &items, &n, &err);
        if (r < 0) {
            ms_report(&m->n, "failed", store_kind_name(k), tenant, ws, "",
                      err.message ? err.message : strerror(-r));
            break;
        }
        for (size_t i = 0; i < n; i++)
            ms_item(m, dst, k, tenant, ws, &items[i]);
        store_items_free(items, n);
    }
    store_ws_close(dst);
    store_ws_close(src);
    return r == -ENOTCONN ? r : 0;
}

static int ms_run_value(void *userdata, const char *app, const char *key, const char *text,
                        int64_t written_ms)
{
    struct ms_run *m = userdata;
    _cleanup_sbx_error_ struct sbx_error err = {0};
    int r = store_run_import(m->to, app, key, text, written_ms, &err);
    if (r == 0) {
        ms_report(&m->n, "copied", "runtime-value", app, "", key, NULL);
        return 0;
    }
    if (r == -EEXIST) {
        sbx_error_clear(&err);
        json_t *have = NULL, *want = NULL;
        json_error_t jerr;
        r = store_run_get(m->to, app, key, &have, &err);
        want = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
        bool same = r == 0 && want && json_equal(have, want);
        json_decref(have);
        json_decref(want);
        ms_report(&m->n, same ? "unchanged" : "skipped", "runtime-value", app, "", key,
                  same ? NULL : "the destination has another value of that key");
        return 0;
    }
    ms_report(&m->n, "failed", "runtime-value", app, "", key,
              err.message ? err.message : strerror(-r));
    return r == -ENOTCONN ? r : 0;
}

/* The options of one side: a state directory, or a database. */
static int ms_open(const char *dir, const char *url, const char *password_file, bool read_only,
                   struct store **ret)
{
    struct setup_opts so;
    setup_opts_init(&so);
    so.state_store = url;
    so.state_store_password = password_file;
    struct store_options o = setup_store_options(&so, dir);
    o.read_only = read_only;
    if (!read_only) {
        /* what is there already comes whole, whatever the quotas (the operator's to set) */
        o.lim.max_bytes = o.lim.tenant_bytes = SIZE_MAX / 4;
        o.lim.max_entries = o.lim.tenant_workspaces = 1u << 30;
    }
    int r = store_new(&o, url ? MIGRATE_WAIT_MS : 0, ret);
    if (r < 0)
        log_errno(LOG_ERROR, r, "migrate: the %s %s cannot be used",
                  url ? "state store"
                      : "state "
                        "directory",
                  url ? "(see above)" : dir);
    return r;
}

int migrate_stores(const struct migrate_store_opts *o)
{
    struct ms_run m = {0};
    int r = ms_open(o->from_dir, o->from_url, o->password_file, true, &m.from);
    if (r == 0)
        r = ms_open(o->to_dir, o->to_url, o->password_file, false, &m.to);
    if (r < 0) {
        store_free(m.from);
        return 1;
    }
    _cleanup_sbx_error_ struct sbx_error err = {0};
    json_t *from = store_describe(m.from), *to = store_describe(m.to);
    printf("from %s %s into %s %s\n", store_backend(m.from),
           json_string_value(json_object_get(from, "location")), store_backend(m.to),
           json_string_value(json_object_get(to, "location")));
    json_decref(from);
    json_decref(to);
    r = store_each_workspace(m.from, ms_workspace, &m, &err);
    if (r == 0)
        r = store_each_run(m.from, ms_run_value, &m, &err);
    if (r < 0)
        log_error("migrate: stopped: %s", err.message ? err.message : strerror(-r));
    printf("%u copied, %u unchanged, %u skipped, %u failed\n", m.n.copied, m.n.unchanged,
           m.n.skipped, m.n.failed);
    store_free(m.to);
    store_free(m.from);
    return r < 0 || m.n.failed ? 1 : 0;
}
