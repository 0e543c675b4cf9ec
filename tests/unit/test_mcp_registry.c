// SPDX-License-Identifier: MIT
/* Unit tests: the MCP registry: lazy, shared connections, restarts, the cache and the back-off.
 * Shared set-up in mcp_client_fixture.c. */
#include "mcp_client_fixture.h"

/* ---- registry ---- */

static void registry_lazy_shared_restart_and_cache(void **state)
{
    struct mcp_config cfg = {0};
    cfg.servers = calloc(2, sizeof(*cfg.servers));
    cfg.n = 2;
    cfg_stdio(&cfg.servers[0], "local", "normal");
    cfg.servers[0].description = strdup("a local server");
    cfg_http(&cfg.servers[1], "remote");
    struct mcp_registry *r = NULL;
    assert_int_equal(mcp_registry_new(&cfg, &r), 0);
    mcp_config_done(&cfg); /* the registry has its own copy */

    json_t *names = mcp_registry_names(r);
    assert_int_equal(json_array_size(names), 2);
    assert_string_equal(json_string_value(json_array_get(names, 0)), "local");
    assert_string_equal(json_string_value(json_array_get(names, 1)), "remote");
    json_decref(names);
    json_t *ok = json_pack("[s, s]", "remote", "local");
    assert_null(mcp_registry_check_names(r, ok));
    json_decref(ok);
    json_t *bad = json_pack("[s, s, i]", "remote", "nope", 3);
    char *why = mcp_registry_check_names(r, bad);
    assert_string_equal(why, "servers[1]: 'nope' is not a configured MCP server "
                             "(configured: local, remote)");
    free(why);
    json_array_remove(bad, 1);
    why = mcp_registry_check_names(r, bad);
    assert_string_equal(why, "servers[1]: (not a string) is not a configured MCP server "
                             "(configured: local, remote)");
    free(why);
    json_decref(bad);

    /* Nothing is started before first use. */
    json_t *d = mcp_registry_describe(r);
    json_t *d0 = json_array_get(d, 0);
    assert_false(json_is_true(json_object_get(d0, "connected")));
    assert_string_equal(json_string_value(json_object_get(d0, "transport")), "stdio");
    assert_string_equal(json_string_value(json_object_get(d0, "description")), "a local server");
    assert_string_equal(json_string_value(json_object_get(json_array_get(d, 1), "transport")),
                        "http");
    json_decref(d);

    struct sbx_error err = {0};
    json_t *tools = NULL;
    assert_int_equal(mcp_registry_tools(r, "local", 10000, &tools, &err), 0);
    assert_int_equal(json_array_size(tools), 7);
    json_decref(tools);
    d = mcp_registry_describe(r);
    d0 = json_array_get(d, 0);
    assert_true(json_is_true(json_object_get(d0, "connected")));
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(d0, "serverInfo"), "serverInfo"), "name")),
        "fake-stdio");
    json_decref(d);

    /* Cached: the second listing does not reach the server (3 pages were asked once). */
    assert_int_equal(mcp_registry_tools(r, "local", 10000, &tools, &err), 0);
    json_decref(tools);
    json_t *res = NULL;
    assert_int_equal(mcp_registry_call(r, "local", "stats", NULL, 5000, &res, &err), 0);
    assert_int_equal(json_integer_value(
                         json_object_get(json_object_get(res, "structuredContent"), "tools_list")),
                     3);
    json_decref(res);

    /* tools/list_changed refreshes the cache. */
    assert_int_equal(mcp_registry_call(r, "local", "change_tools", NULL, 5000, &res, &err), 0);
    json_decref(res);
    assert_int_equal(mcp_registry_tools(r, "local", 10000, &tools, &err), 0);
    assert_int_equal(json_array_size(tools), 8);
    json_decref(tools);

    /* A crash is reported, not retried; the next call restarts the server and the tools are
     * listed again from the new process. */
    assert_true(mcp_registry_call(r, "local", "crash", NULL, 5000, &res, &err) < 0);
    assert_int_equal(err.upstream, SBX_UP_TRANSPORT);
    sbx_error_clear(&err);
    d = mcp_registry_describe(r);
    assert_false(json_is_true(json_object_get(json_array_get(d, 0), "connected")));
    json_decref(d);
    assert_int_equal(mcp_registry_tools(r, "local", 10000, &tools, &err), 0);
    assert_int_equal(json_array_size(tools), 7); /* the restarted server has not changed */
    json_decref(tools);

    assert_int_equal(mcp_registry_call(r, "remote", "echo", NULL, 5000, &res, &err), 0);
    json_decref(res);
    assert_int_equal(mcp_registry_tools(r, "remote", 5000, &tools, &err), 0);
    assert_int_equal(json_array_size(tools), 3);
    json_decref(tools);

    /* Unknown server. */
    assert_int_equal(mcp_registry_call(r, "nope", "x", NULL, 5000, &res, &err), -ENOENT);
    assert_int_equal(err.upstream, SBX_UP_TOOL);
    assert_string_equal(err.upstream_code, "UNKNOWN_SERVER");
    sbx_error_clear(&err);
    assert_int_equal(mcp_registry_tools(r, "nope", 5000, &tools, &err), -ENOENT);
    assert_string_equal(err.upstream_code, "UNKNOWN_SERVER");
    sbx_error_clear(&err);
    mcp_registry_free(r);
    mcp_registry_free(NULL);
}

struct reg_worker {
    struct mcp_registry *r;
    int ok;
};

static void *reg_thread(void *arg)
{
    struct reg_worker *w = arg;
    for (int i = 0; i < 5; i++) {
        json_t *res = NULL;
        struct sbx_error err = {0};
        if (mcp_registry_call(w->r, "local", "cwd", NULL, 10000, &res, &err) == 0)
            w->ok++;
        json_decref(res);
        sbx_error_clear(&err);
    }
    return NULL;
}

static void registry_one_process_for_all_and_backoff(void **state)
{
    fmt(tmpdir, sizeof(tmpdir), "/tmp/mcp-registry-XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    char starts[PATH_MAX + 16], script[2 * PATH_MAX + 64];
    fmt(starts, sizeof(starts), "%s/starts", tmpdir);
    struct mcp_config cfg = {0};
    cfg.servers = calloc(2, sizeof(*cfg.servers));
    cfg.n = 2;
    /* "local" counts its starts in a file, then runs the fake server. */
    fmt(script, sizeof(script), "echo start >> '%s'; exec /usr/bin/python3 '%s' normal", starts,
        stdio_script);
    cfg.servers[0].name = strdup("local");
    cfg.servers[0].command = strdup("/bin/sh");
    cfg.servers[0].args = strv("-c", script, NULL);
    /* "broken" counts its starts too, and exits at once. */
    fmt(script, sizeof(script), "echo start >> '%s.broken'; exit 1", starts);
    cfg.servers[1].name = strdup("broken");
    cfg.servers[1].command = strdup("/bin/sh");
    cfg.servers[1].args = strv("-c", script, NULL);
    struct mcp_registry *r = NULL;
    assert_int_equal(mcp_registry_new(&cfg, &r), 0);
    mcp_config_done(&cfg);

    pthread_t th[6];
    struct reg_worker w[6];
    for (int i = 0; i < 6; i++) {
        w[i] = (struct reg_worker){.r = r};
        pthread_create(&th[i], NULL, reg_thread, &w[i]);
    }
    for (int i = 0; i < 6; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].ok, 5);
    }
    FILE *f = fopen(starts, "r");
    assert_non_null(f);
    char line[64];
    int n = 0;
    while (fgets(line, sizeof(line), f))
        n++;
    fclose(f);
    assert_int_equal(n, 1); /* started once, shared by 30 calls */

    /* A server that fails to start is not retried within a second: same error, no new start. */
    struct sbx_error err = {0};
    json_t *res = NULL;
    assert_true(mcp_registry_call(r, "broken", "x", NULL, 5000, &res, &err) < 0);
    assert_int_equal(err.upstream, SBX_UP_TRANSPORT);
    char *first = strdup(err.message);
    sbx_error_clear(&err);
    assert_true(mcp_registry_call(r, "broken", "x", NULL, 5000, &res, &err) < 0);
    assert_int_equal(err.upstream, SBX_UP_TRANSPORT);
    assert_string_equal(err.message, first);
    sbx_error_clear(&err);
    json_t *d = mcp_registry_describe(r);
    assert_non_null(json_object_get(json_array_get(d, 1), "lastError"));
    json_decref(d);
    char broken[PATH_MAX + 32];
    fmt(broken, sizeof(broken), "%s.broken", starts);
    f = fopen(broken, "r");
    n = 0;
    while (f && fgets(line, sizeof(line), f))
        n++;
    if (f)
        fclose(f);
    assert_int_equal(n, 1);
    sleep_ms(1100);
    assert_true(mcp_registry_call(r, "broken", "x", NULL, 5000, &res, &err) < 0);
    sbx_error_clear(&err);
    f = fopen(broken, "r");
    n = 0;
    while (f && fgets(line, sizeof(line), f))
        n++;
    if (f)
        fclose(f);
    assert_int_equal(n, 2);
    free(first);
    mcp_registry_free(r);
    rm_rf(tmpdir);
}

int main(void)
{
    fixture_process_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(registry_lazy_shared_restart_and_cache),
        cmocka_unit_test(registry_one_process_for_all_and_backoff),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
