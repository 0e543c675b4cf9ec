// SPDX-License-Identifier: MIT
/* Unit tests: store — the state directory's backend through the store interface: items of each
 * kind round-trip and list by name, a write's room is checked against the workspace's and the
 * tenant's limits, compose sees the item as it is (and can refuse), a tenant's workspaces are
 * apart from another's, item names cannot name paths, a kept file's host path is its own
 * file, and runtime values survive a reopen of the directory (the PostgreSQL backend runs the same
 * scenarios end to end: tests/e2e). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "store/store.h"

static char dir[64];

static int setup_dir(void **state)
{
    snprintf(dir, sizeof(dir), "/tmp/sandboxd-store-XXXXXX");
    assert_non_null(mkdtemp(dir));
    return 0;
}

static int remove_dir(void **state)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static struct store *open_store(size_t max_bytes, size_t tenant_bytes)
{
    struct store_options o = {
        .state_dir = dir,
        .lim = {.max_bytes = max_bytes,
                .max_entries = 3,
                .max_item = {1 << 20, 1 << 20, 1 << 20, 1 << 20},
                .tenant_bytes = tenant_bytes,
                .tenant_workspaces = 2},
    };
    struct store *s = NULL;
    assert_int_equal(store_new(&o, 0, &s), 0);
    return s;
}

static struct store_ws *open_ws(struct store *s, const char *tenant, const char *name)
{
    struct store_ws *w = NULL;
    struct sbx_error err = {0};
    assert_int_equal(store_ws_open(s, tenant, name, NULL, true, &w, &err), 0);
    return w;
}

static void put(struct store_ws *w, enum store_kind k, const char *name, const char *data)
{
    struct sbx_error err = {0};
    int r = store_put_data(w, k, name, data, strlen(data), "test", &err);
    if (r < 0)
        fail_msg("put %s: %s", name, err.message);
    sbx_error_clear(&err);
}

static char *get(struct store_ws *w, enum store_kind k, const char *name)
{
    struct store_item *it = NULL;
    struct sbx_error err = {0};
    if (store_get(w, k, name, true, &it, &err) < 0) {
        sbx_error_clear(&err);
        return NULL;
    }
    char *d = strdup(it->data);
    store_item_free(it);
    return d;
}

static void items_round_trip_and_list_by_name(void **state)
{
    struct store *s = open_store(1 << 20, 1 << 20);
    struct store_ws *w = open_ws(s, "", "w1");
    put(w, STORE_FILE, "b.txt", "bee");
    put(w, STORE_FILE, "a.txt", "ay");
    put(w, STORE_TOOL, "f", "def f():\n    pass\n");
    put(w, STORE_MEMORY, "k/1", "{\"key\":\"k/1\",\"value\":[1,2],\"metadata\":{}}");
    char *d = get(w, STORE_FILE, "a.txt");
    assert_string_equal(d, "ay");
    free(d);
    d = get(w, STORE_MEMORY, "k/1");
    assert_non_null(strstr(d, "[1,2]"));
    free(d);
    struct store_item *items;
    size_t n;
    struct sbx_error err = {0};
    assert_int_equal(store_list(w, STORE_FILE, false, &items, &n, &err), 0);
    assert_int_equal(n, 2);
    assert_string_equal(items[0].name, "a.txt");
    assert_string_equal(items[1].name, "b.txt");
    assert_int_equal(items[1].size, 3);
    store_items_free(items, n);
    assert_int_equal(store_list(w, STORE_MEMORY, false, &items, &n, &err), 0);
    assert_int_equal(n, 1);
    assert_string_equal(items[0].name, "k/1");
    assert_null(json_object_get(items[0].info, "value")); /* the info never holds the value */
    assert_string_equal(json_string_value(json_object_get(items[0].info, "key")), "k/1");
    store_items_free(items, n);
    /* a path is no item name here, and reads nothing */
    assert_int_equal(store_put_data(w, STORE_FILE, "../x", "x", 1, "test", &err), -EINVAL);
    sbx_error_clear(&err);
    assert_null(get(w, STORE_FILE, "../w1/files/a.txt"));
    assert_int_equal(store_delete(w, STORE_FILE, "a.txt", &err), 0);
    assert_int_equal(store_delete(w, STORE_FILE, "a.txt", &err), -ENOENT);
    store_ws_close(w);
    store_free(s);
}

static void rooms_are_checked(void **state)
{
    struct store *s = open_store(10, 14);
    struct store_ws *w = open_ws(s, "t1", "w1");
    struct sbx_error err = {0};
    put(w, STORE_FILE, "a", "12345678");
    /* the workspace holds 10 bytes */
    assert_int_equal(store_put_data(w, STORE_FILE, "b", "123", 3, "save_file", &err), -EDQUOT);
    assert_non_null(strstr(err.message, "the workspace is full"));
    sbx_error_clear(&err);
    /* a replacement counts its growth only */
    put(w, STORE_FILE, "a", "1234567890");
    /* the tenant holds 14 bytes, its workspaces together */
    struct store_ws *w2 = open_ws(s, "t1", "w2");
    put(w2, STORE_FILE, "x", "1234");
    assert_int_equal(store_put_data(w2, STORE_FILE, "y", "1", 1, "save_file", &err), -EDQUOT);
    assert_non_null(strstr(err.message, "tenant 't1'"));
    sbx_error_clear(&err);
    /* entries of a kind: 3 */
    struct store_ws *w3 = open_ws(s, "", "many");
    put(w3, STORE_TOOL, "a", "1");
    put(w3, STORE_TOOL, "b", "1");
    put(w3, STORE_TOOL, "c", "1");
    assert_int_equal(store_put_data(w3, STORE_TOOL, "d", "1", 1, "save_tool", &err), -EDQUOT);
    sbx_error_clear(&err);
    /* a tenant's workspaces: 2 */
    struct store_ws *w4 = NULL;
    assert_int_equal(store_ws_open(s, "t1", "w3", NULL, true, &w4, &err), -EDQUOT);
    sbx_error_clear(&err);
    /* another tenant's workspace of the same name is another */
    struct store_ws *other = open_ws(s, "t2", "w1");
    assert_null(get(other, STORE_FILE, "a"));
    store_ws_close(other);
    store_ws_close(w3);
    store_ws_close(w2);
    store_ws_close(w);
    store_free(s);
}

struct expect {
    bool saw_old;
    uint64_t rev;
};

static int compose_if(void *userdata, const struct store_item *old, char **ret_data,
                      size_t *ret_len, struct sbx_error *err)
{
    struct expect *e = userdata;
    e->saw_old = old != NULL;
    if (old && e->rev && old->rev != e->rev) {
        sbx_error_set(err, SBX_ERR_CONFLICT, "CONFLICT", NULL, "changed");
        return -ESTALE;
    }
    *ret_data = strdup("{\"key\":\"c\",\"value\":2}");
    *ret_len = strlen(*ret_data);
    return 0;
}

static void compose_sees_the_item_and_may_refuse(void **state)
{
    struct store *s = open_store(1 << 20, 1 << 20);
    struct store_ws *w = open_ws(s, "", "cas");
    const char *v1 = "{\"key\":\"c\",\"value\":1}";
    put(w, STORE_MEMORY, "c", v1);
    struct sbx_error err = {0};
    struct expect e = {.rev = store_rev(v1, strlen(v1)) ^ 1};
    assert_int_equal(store_put(w, STORE_MEMORY, "c", compose_if, &e, "memory", &err), -ESTALE);
    sbx_error_clear(&err);
    assert_true(e.saw_old);
    char *d = get(w, STORE_MEMORY, "c");
    assert_string_equal(d, v1); /* refused: nothing written */
    free(d);
    e.rev = store_rev(v1, strlen(v1));
    assert_int_equal(store_put(w, STORE_MEMORY, "c", compose_if, &e, "memory", &err), 0);
    d = get(w, STORE_MEMORY, "c");
    assert_non_null(strstr(d, "\"value\":2"));
    free(d);
    store_ws_close(w);
    store_free(s);
}

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char buf[256];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strdup(buf);
}

static void kept_files_have_their_own_host_path(void **state)
{
    struct store *s = open_store(1 << 20, 1 << 20);
    struct store_ws *w = open_ws(s, "", "w1"), *t = open_ws(s, "acme", "w1");
    struct sbx_error err = {0};
    char real[4096], *want = NULL, *path = NULL, *d = NULL;
    assert_non_null(realpath(dir, real));
    /* a kept file's name may be longer than a file's (the session, the run, the path) */
    const char *name = "12345678_0001-20261126-101500_images_a_chart_with_a_long_name_of_"
                       "its_own_to_keep.png";
    put(w, STORE_RUN, name, "png");
    assert_int_equal(store_host_path(w, STORE_RUN, name, "png", 3, &path, &err), 0);
    assert_true(asprintf(&want, "%s/workspaces/w1/runs/%s", real, name) > 0);
    assert_string_equal(path, want);
    assert_string_equal(d = read_all(path), "png");
    free(d);
    free(path);
    free(want);
    /* a tenant's, below its tenant */
    put(t, STORE_RUN, "x_y.txt", "t");
    assert_int_equal(store_host_path(t, STORE_RUN, "x_y.txt", "t", 1, &path, &err), 0);
    assert_true(asprintf(&want, "%s/tenants/acme/workspaces/w1/runs/x_y.txt", real) > 0);
    assert_string_equal(path, want);
    free(path);
    free(want);
    json_t *usage = store_usage(w, &err);
    assert_int_equal(json_integer_value(json_object_get(usage, "runFiles")), 1);
    json_decref(usage);
    /* no path for other kinds, nor for a name that is not one plain component */
    assert_int_equal(store_host_path(w, STORE_FILE, "a.txt", "", 0, &path, &err), -EINVAL);
    assert_null(path);
    sbx_error_clear(&err);
    const char *bad[] = {"../x", ".hidden", "a/b", "", "x\ny"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(store_host_path(w, STORE_RUN, bad[i], "", 0, &path, &err), -EINVAL);
        sbx_error_clear(&err);
        assert_int_not_equal(store_put_data(w, STORE_RUN, bad[i], "x", 1, "keep_file", &err), 0);
        sbx_error_clear(&err);
    }
    store_ws_close(t);
    store_ws_close(w);
    store_free(s);
}

static void runtime_values_survive_a_reopen(void **state)
{
    struct store *s = open_store(1 << 20, 1 << 20);
    struct sbx_error err = {0};
    json_t *v = json_pack("{s:s%}", "x", "a\0b", (size_t)3);
    assert_int_equal(store_run_set(s, "app", "k", v, &err), 0);
    assert_int_equal(store_run_import(s, "app", "k", "1", 0, &err), -EEXIST);
    sbx_error_clear(&err);
    store_free(s);
    s = open_store(1 << 20, 1 << 20);
    json_t *back = NULL;
    assert_int_equal(store_run_get(s, "app", "k", &back, &err), 0);
    assert_true(json_equal(v, back));
    json_decref(back);
    assert_int_equal(store_run_get(s, "other", "k", &back, &err), -ENOENT);
    json_decref(v);
    store_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(items_round_trip_and_list_by_name, setup_dir, remove_dir),
        cmocka_unit_test_setup_teardown(rooms_are_checked, setup_dir, remove_dir),
        cmocka_unit_test_setup_teardown(compose_sees_the_item_and_may_refuse, setup_dir,
                                        remove_dir),
        cmocka_unit_test_setup_teardown(kept_files_have_their_own_host_path, setup_dir, remove_dir),
        cmocka_unit_test_setup_teardown(runtime_values_survive_a_reopen, setup_dir, remove_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
