// SPDX-License-Identifier: MIT
/* Unit tests: the Streamable HTTP transport of the MCP client against a fake server written in
 * Python. Shared set-up in mcp_client_fixture.c. */
#include "mcp_client_fixture.h"

/* ---- Streamable HTTP ---- */

static void http_session_sse_and_tools(void **state)
{
    struct mcp_client *c = connect_http();
    json_t *info = mcp_client_server_info(c);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(info, "serverInfo"), "name")),
        "fake-http");
    json_decref(info);
    struct notes n = {.seen = json_array()};
    pthread_mutex_init(&n.lock, NULL);
    mcp_client_set_notify(c, note_cb, &n);

    struct sbx_error err = {0};
    json_t *tools = NULL;
    assert_int_equal(mcp_client_list_tools(c, 5000, &tools, &err), 0);
    assert_int_equal(json_array_size(tools), 3); /* two pages */
    json_decref(tools);

    json_t *args = json_pack("{s:s}", "k", "v");
    char *t = call_text(c, "echo", args, 5000, &err);
    assert_string_equal(t, "{\"k\": \"v\"}");
    free(t);
    /* SSE: priming event and comment skipped, notification delivered, then the answer. */
    t = call_text(c, "sse_echo", args, 5000, &err);
    assert_string_equal(t, "{\"k\": \"v\"}");
    free(t);
    assert_true(noted(&n, "notifications/message"));
    /* Data over several lines, CRLF line ends, "event: message". */
    t = call_text(c, "multiline", args, 5000, &err);
    assert_string_equal(t, "{\"k\": \"v\"}");
    free(t);
    json_decref(args);

    /* Keep-alive: consecutive requests from one thread go over the same connection. */
    char *port1 = call_text(c, "port", NULL, 5000, &err);
    char *port2 = call_text(c, "port", NULL, 5000, &err);
    assert_non_null(port1);
    assert_string_equal(port1, port2);
    free(port1);
    free(port2);

    /* The session id and protocol version went with every request after initialize (the server
     * answers 400 otherwise); notifications/initialized arrived. */
    json_t *st = stats(c);
    assert_true(has_notification(st, "notifications/initialized"));
    json_t *versions = json_object_get(st, "versions");
    assert_true(json_array_size(versions) >= 5);
    for (size_t i = 0; i < json_array_size(versions); i++)
        assert_string_equal(json_string_value(json_array_get(versions, i)), "2025-11-25");
    /* The configured headers go with every POST. */
    json_t *xt = json_object_get(st, "x_test");
    for (size_t i = 0; i < json_array_size(xt); i++)
        assert_string_equal(json_string_value(json_array_get(xt, i)), "yes");
    json_decref(st);
    mcp_client_set_notify(c, NULL, NULL);
    mcp_client_close(c);
    json_decref(n.seen);
    pthread_mutex_destroy(&n.lock);
}

static void http_lost_session_reinitializes(void **state)
{
    struct mcp_client *c = connect_http();
    struct sbx_error err = {0};
    json_t *st = stats(c);
    json_int_t inits = json_integer_value(json_object_get(st, "initialize"));
    json_decref(st);
    char *t = call_text(c, "forget", NULL, 5000, &err);
    assert_non_null(t);
    free(t);
    /* 404 → initialize again → resend, invisibly. */
    t = call_text(c, "echo", NULL, 5000, &err);
    assert_string_equal(t, "{}");
    free(t);
    st = stats(c);
    assert_int_equal(json_integer_value(json_object_get(st, "initialize")), inits + 1);
    json_decref(st);

    /* Concurrent requests after a forget: one re-initialization serves all. */
    t = call_text(c, "forget", NULL, 5000, &err);
    free(t);
    run_concurrently(c, "echo", 4, 3);
    st = stats(c);
    json_int_t after = json_integer_value(json_object_get(st, "initialize"));
    assert_true(after >= inits + 2 && after <= inits + 5);
    json_decref(st);
    mcp_client_close(c);
}

static void http_timeouts_errors_ping_and_resume(void **state)
{
    struct mcp_client *c = connect_http();
    struct sbx_error err = {0};
    json_t *res = NULL;
    int64_t start = clock_mono_us();
    assert_int_equal(mcp_client_call_tool(c, "slow", NULL, 300, &res, &err), -ETIMEDOUT);
    assert_int_equal(err.upstream, SBX_UP_TIMEOUT);
    assert_true(ms_since(start) < 1400);
    sbx_error_clear(&err);
    json_t *st = stats(c);
    assert_true(has_notification(st, "notifications/cancelled"));
    json_decref(st);

    assert_int_equal(mcp_client_call_tool(c, "http500", NULL, 5000, &res, &err), -EPROTO);
    assert_int_equal(err.upstream, SBX_UP_HTTP);
    assert_int_equal(err.upstream_status, 500);
    sbx_error_clear(&err);

    assert_int_equal(mcp_client_call_tool(c, "redirect", NULL, 5000, &res, &err), -EPROTO);
    assert_int_equal(err.upstream, SBX_UP_HTTP);
    assert_int_equal(err.upstream_status, 307);
    sbx_error_clear(&err);

    assert_int_equal(mcp_client_call_tool(c, "no_answer", NULL, 5000, &res, &err), -EPROTO);
    assert_int_equal(err.upstream, SBX_UP_PROTOCOL);
    sbx_error_clear(&err);

    assert_int_equal(mcp_client_call_tool(c, "unknown", NULL, 5000, &res, &err), -EPROTO);
    assert_int_equal(err.upstream, SBX_UP_TOOL);
    assert_string_equal(err.upstream_code, "-32602");
    sbx_error_clear(&err);

    /* The server pings us in the middle of the SSE answer; our reply is a POST of its own. */
    assert_int_equal(mcp_client_call_tool(c, "ping_me", NULL, 10000, &res, &err), 0);
    json_t *ping = json_object_get(json_object_get(res, "structuredContent"), "ping");
    assert_string_equal(json_string_value(json_object_get(ping, "id")), "ping-1");
    assert_true(json_is_object(json_object_get(ping, "result")));
    json_decref(res);

    /* The stream closes after a priming event; the answer comes on GET + Last-Event-ID. */
    json_t *args = json_pack("{s:b}", "resumed", 1);
    char *t = call_text(c, "resume", args, 5000, &err);
    assert_string_equal(t, "{\"resumed\": true}");
    free(t);
    json_decref(args);
    mcp_client_close(c);
}

static void http_concurrent_requests(void **state)
{
    struct mcp_client *c = connect_http();
    run_concurrently(c, "echo", 4, 10);
    run_concurrently(c, "sse_echo", 4, 10);
    mcp_client_close(c);
}

static void http_close_deletes_session_and_bad_urls(void **state)
{
    struct mcp_client *probe = connect_http();
    json_t *st = stats(probe);
    json_int_t deletes = json_integer_value(json_object_get(st, "delete"));
    json_decref(st);
    struct mcp_client *c = connect_http();
    mcp_client_close(c);
    st = stats(probe);
    assert_int_equal(json_integer_value(json_object_get(st, "delete")), deletes + 1);
    json_decref(st);
    mcp_client_close(probe);

    struct mcp_server_config cfg = {0};
    cfg.name = strdup("down");
    cfg.url = strdup("http://127.0.0.1:1/mcp");
    connect_fails(&cfg, 3000, SBX_UP_TRANSPORT);
    free(cfg.url);
    cfg.url = strdup("file:///etc/passwd");
    connect_fails(&cfg, 3000, SBX_UP_TRANSPORT);
    mcp_server_config_done(&cfg);
}

int main(void)
{
    fixture_process_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(http_session_sse_and_tools),
        cmocka_unit_test(http_lost_session_reinitializes),
        cmocka_unit_test(http_timeouts_errors_ping_and_resume),
        cmocka_unit_test(http_concurrent_requests),
        cmocka_unit_test(http_close_deletes_session_and_bad_urls),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
