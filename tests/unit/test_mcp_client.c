// SPDX-License-Identifier: MIT
/* Unit tests: the MCP client proper: JSON-RPC helpers and the stdio transport against fake servers
 * written in Python (tests/unit/fixtures/). Shared set-up in mcp_client_fixture.c. */
#include "mcp_client_fixture.h"

/* ---- JSON-RPC ---- */

static void jsonrpc_builds_and_classifies(void **state)
{
    struct jsonrpc_message m;
    json_t *params = json_pack("{s:i}", "a", 1);
    json_t *req = jsonrpc_request_new_int(7, "tools/list", params);
    assert_int_equal(jsonrpc_classify(req, &m), JSONRPC_REQUEST);
    assert_string_equal(m.method, "tools/list");
    assert_int_equal(json_integer_value(m.id), 7);
    assert_ptr_equal(m.params, json_object_get(req, "params"));
    char *text = jsonrpc_format(req);
    assert_null(strchr(text, '\n'));
    json_t *back = NULL;
    assert_int_equal(jsonrpc_parse(text, strlen(text), &back), 0);
    assert_true(json_equal(back, req));
    json_decref(back);
    free(text);
    json_decref(req);

    json_t *sid = json_string("abc");
    req = jsonrpc_request_new(sid, "ping", NULL);
    assert_int_equal(jsonrpc_classify(req, &m), JSONRPC_REQUEST);
    assert_true(jsonrpc_id_equal(m.id, sid));
    assert_null(json_object_get(req, "params"));
    json_decref(req);

    json_t *note = jsonrpc_notification_new("notifications/initialized", NULL);
    assert_int_equal(jsonrpc_classify(note, &m), JSONRPC_NOTIFICATION);
    assert_null(m.id);
    json_decref(note);

    json_t *res = jsonrpc_result_new(sid, NULL);
    assert_int_equal(jsonrpc_classify(res, &m), JSONRPC_RESPONSE);
    assert_true(json_is_object(m.result) && json_object_size(m.result) == 0);
    json_decref(res);

    json_t *er = jsonrpc_error_new(NULL, JSONRPC_METHOD_NOT_FOUND, NULL, params);
    assert_int_equal(jsonrpc_classify(er, &m), JSONRPC_ERROR_RESPONSE);
    assert_true(json_is_null(m.id));
    assert_int_equal(m.error_code, -32601);
    assert_string_equal(m.error_message, "Method not found");
    assert_ptr_equal(m.error_data, params);
    json_decref(er);
    json_decref(params);

    assert_string_equal(jsonrpc_error_text(JSONRPC_PARSE_ERROR), "Parse error");
    assert_string_equal(jsonrpc_error_text(JSONRPC_INVALID_REQUEST), "Invalid Request");
    assert_string_equal(jsonrpc_error_text(JSONRPC_INVALID_PARAMS), "Invalid params");
    assert_string_equal(jsonrpc_error_text(JSONRPC_INTERNAL_ERROR), "Internal error");

    /* Integer and string ids never match each other. */
    json_t *one = json_integer(1), *sone = json_string("1");
    assert_false(jsonrpc_id_equal(one, sone));
    assert_true(jsonrpc_id_equal(one, one));
    assert_false(jsonrpc_id_equal(NULL, one));
    json_decref(one);
    json_decref(sone);
    json_decref(sid);

    static const char *const invalid[] = {
        "[1]",
        "{\"id\": 1, \"result\": {}}",                                     /* no jsonrpc */
        "{\"jsonrpc\": \"1.0\", \"id\": 1, \"result\": {}}",               /* wrong version */
        "{\"jsonrpc\": \"2.0\", \"id\": 1}",                               /* nothing */
        "{\"jsonrpc\": \"2.0\", \"id\": 1, \"result\": 1, \"error\": {}}", /* both */
        "{\"jsonrpc\": \"2.0\", \"id\": 1.5, \"result\": {}}",             /* fractional id */
        "{\"jsonrpc\": \"2.0\", \"id\": null, \"method\": \"x\"}",         /* null request id */
        "{\"jsonrpc\": \"2.0\", \"method\": 3}",
        "{\"jsonrpc\": \"2.0\", \"method\": \"x\", \"params\": 3}",
        "{\"jsonrpc\": \"2.0\", \"id\": 2, \"error\": {\"code\": \"x\", \"message\": \"m\"}}",
        "{\"jsonrpc\": \"2.0\", \"id\": 2, \"error\": {\"code\": 1}}",
    };
    for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
        json_t *v = NULL;
        assert_int_equal(jsonrpc_parse(invalid[i], strlen(invalid[i]), &v), 0);
        assert_int_equal(jsonrpc_classify(v, &m), JSONRPC_INVALID);
        assert_non_null(m.invalid);
        json_decref(v);
    }
    /* An invalid answer still exposes its id so the waiter can be failed. */
    json_t *v = NULL;
    assert_int_equal(jsonrpc_parse("{\"jsonrpc\":\"2.0\",\"id\":4}", 24, &v), 0);
    jsonrpc_classify(v, &m);
    assert_int_equal(json_integer_value(m.id), 4);
    json_decref(v);
    assert_int_equal(jsonrpc_parse("{nope", 5, &v), -EBADMSG);
    assert_string_equal(jsonrpc_kind_name(JSONRPC_ERROR_RESPONSE), "error response");
}

/* ---- stdio ---- */

static void stdio_handshake_and_paginated_tools(void **state)
{
    struct mcp_client *c = connect_stdio("normal");
    assert_true(mcp_client_alive(c));
    assert_string_equal(mcp_client_name(c), "fake");
    json_t *info = mcp_client_server_info(c);
    assert_string_equal(json_string_value(json_object_get(info, "protocolVersion")), "2025-11-25");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(info, "serverInfo"), "name")),
        "fake-stdio");
    assert_true(json_is_object(json_object_get(info, "capabilities")));
    assert_string_equal(json_string_value(json_object_get(info, "instructions")), "be nice");
    json_decref(info);
    /* tools/list_changed came before the initialize answer and was not lost. */
    assert_int_equal(mcp_client_tools_generation(c), 1);

    json_t *tools = NULL;
    struct sbx_error err = {0};
    assert_int_equal(mcp_client_list_tools(c, 5000, &tools, &err), 0);
    assert_int_equal(json_array_size(tools), 7);
    static const char *const names[] = {"alpha",   "beta", "gamma", "delta",
                                        "epsilon", "zeta", "eta"};
    for (size_t i = 0; i < 7; i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(tools, i), "name")),
                            names[i]);
    json_decref(tools);

    /* The server saw notifications/initialized, and the request API works for any method. */
    json_t *st = stats(c);
    assert_true(has_notification(st, "notifications/initialized"));
    assert_int_equal(json_integer_value(json_object_get(st, "tools_list")), 3);
    json_decref(st);
    json_t *res = NULL;
    assert_int_equal(mcp_client_request(c, "ping", NULL, 5000, &res, &err), 0);
    assert_true(json_is_object(res));
    json_decref(res);
    assert_int_equal(mcp_client_request(c, "resources/list", NULL, 5000, &res, &err), -EPROTO);
    assert_int_equal(err.upstream, SBX_UP_TOOL);
    assert_string_equal(err.upstream_code, "-32601");
    sbx_error_clear(&err);
    int64_t start = clock_mono_us();
    mcp_client_close(c);
    assert_true(ms_since(start) < 1500); /* it exits on stdin EOF */
}

static void stdio_tool_results_and_errors(void **state)
{
    struct mcp_client *c = connect_stdio("normal");
    struct sbx_error err = {0};
    json_t *args = json_pack("{s:s, s:i}", "msg", "hi", "n", 2);
    json_t *res = NULL;
    assert_int_equal(mcp_client_call_tool(c, "echo", args, 5000, &res, &err), 0);
    assert_true(json_equal(json_object_get(res, "structuredContent"), args));
    json_decref(res);
    json_decref(args);

    /* isError:true is a result, not a failure. */
    assert_int_equal(mcp_client_call_tool(c, "is_error", NULL, 5000, &res, &err), 0);
    assert_true(json_is_true(json_object_get(res, "isError")));
    json_decref(res);

    /* A JSON-RPC error: SBX_UP_TOOL with the numeric code and the server's message. */
    res = NULL;
    assert_int_equal(mcp_client_call_tool(c, "fail", NULL, 5000, &res, &err), -EPROTO);
    assert_null(res);
    assert_int_equal(err.upstream, SBX_UP_TOOL);
    assert_string_equal(err.upstream_code, "-32602");
    assert_string_equal(err.message, "bad arguments for fail");
    sbx_error_clear(&err);

    /* An answer with neither result nor error: protocol error, the connection survives. */
    assert_int_equal(mcp_client_call_tool(c, "bad_response", NULL, 5000, &res, &err), -EPROTO);
    assert_int_equal(err.upstream, SBX_UP_PROTOCOL);
    sbx_error_clear(&err);

    /* A garbage line on stdout is skipped; the answer after it arrives. */
    char *t = call_text(c, "garbage", NULL, 5000, &err);
    assert_string_equal(t, "after garbage");
    free(t);

    /* A batch (2025-03-26) is taken apart. */
    t = call_text(c, "batch", NULL, 5000, &err);
    assert_string_equal(t, "batched");
    free(t);
    assert_true(mcp_client_alive(c));
    mcp_client_close(c);
    mcp_client_close(NULL);
}

/* Found by fuzz_mcp_server: U+0000 is valid JSON, and an answer holding it ("\u0000") was
 * dropped as "not JSON", so the call waited until its timeout. Over stdio, over HTTP (a JSON
 * answer) and over SSE; the servers echo the arguments as structuredContent. */
static void answers_holding_nul_arrive(void **state)
{
    struct mcp_client *clients[] = {connect_stdio("normal"), connect_http()};
    const char *const tools[] = {"echo", "sse_echo"};
    json_t *args = json_pack("{s:s%}", "k", "a\0b", (size_t)3);
    for (size_t i = 0; i < 2; i++)
        for (size_t t = 0; t < (i ? 2u : 1u); t++) {
            struct sbx_error err = {0};
            json_t *res = NULL;
            if (mcp_client_call_tool(clients[i], tools[t], args, 20000, &res, &err) < 0)
                fail_msg("%s over %s: %s", tools[t], i ? "http" : "stdio",
                         err.message ? err.message : "?");
            assert_true(json_equal(json_object_get(res, "structuredContent"), args));
            json_decref(res);
        }
    json_decref(args);
    for (size_t i = 0; i < 2; i++)
        mcp_client_close(clients[i]);
}

static void stdio_notifications_and_server_requests(void **state)
{
    struct mcp_client *c = connect_stdio("normal");
    struct notes n = {.seen = json_array()};
    pthread_mutex_init(&n.lock, NULL);
    mcp_client_set_notify(c, note_cb, &n);
    struct sbx_error err = {0};
    char *t = call_text(c, "progress", NULL, 5000, &err);
    assert_string_equal(t, "done");
    free(t);
    /* Notifications are delivered in order, before the answer that follows them. */
    assert_true(noted(&n, "notifications/progress"));
    assert_true(noted(&n, "notifications/message"));

    /* The server pings us and asks for sampling: {} and -32601. */
    json_t *res = NULL;
    assert_int_equal(mcp_client_call_tool(c, "ping_me", NULL, 5000, &res, &err), 0);
    json_t *sc = json_object_get(res, "structuredContent");
    json_t *ping = json_object_get(sc, "srv-ping");
    assert_string_equal(json_string_value(json_object_get(ping, "id")), "srv-ping");
    assert_true(json_is_object(json_object_get(ping, "result")));
    assert_int_equal(json_object_size(json_object_get(ping, "result")), 0);
    json_t *sampling = json_object_get(sc, "77");
    assert_int_equal(json_integer_value(json_object_get(sampling, "id")), 77);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(sampling, "error"), "code")), -32601);
    json_decref(res);

    /* tools/list_changed bumps the generation and reaches the callback too. */
    uint64_t g = mcp_client_tools_generation(c);
    t = call_text(c, "change_tools", NULL, 5000, &err);
    free(t);
    assert_int_equal(mcp_client_tools_generation(c), g + 1);
    assert_true(noted(&n, "notifications/tools/list_changed"));

    mcp_client_set_notify(c, NULL, NULL);
    mcp_client_close(c);
    json_decref(n.seen);
    pthread_mutex_destroy(&n.lock);
}

static void stdio_timeout_cancels_and_drops_late_answer(void **state)
{
    struct mcp_client *c = connect_stdio("normal");
    struct sbx_error err = {0};
    json_t *res = NULL;
    int64_t start = clock_mono_us();
    assert_int_equal(mcp_client_call_tool(c, "slow", NULL, 300, &res, &err), -ETIMEDOUT);
    assert_int_equal(err.upstream, SBX_UP_TIMEOUT);
    assert_true(ms_since(start) >= 290);
    sbx_error_clear(&err);

    /* "late" answers after 400 ms, long after we gave up: the answer must be dropped and must
     * not be taken for the answer to a later request. */
    json_t *args = json_pack("{s:i}", "ms", 400);
    assert_int_equal(mcp_client_call_tool(c, "late", args, 100, &res, &err), -ETIMEDOUT);
    json_decref(args);
    sbx_error_clear(&err);
    sleep_ms(600);
    char *t = call_text(c, "echo", NULL, 5000, &err);
    assert_string_equal(t, "{}");
    free(t);

    /* notifications/cancelled reached the server for both, with the reason. */
    json_t *st = stats(c);
    json_t *list = json_object_get(st, "notifications");
    int cancelled = 0;
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *e = json_array_get(list, i);
        if (strcmp(json_string_value(json_object_get(e, "method")), "notifications/cancelled"))
            continue;
        json_t *p = json_object_get(e, "params");
        assert_true(json_is_integer(json_object_get(p, "requestId")));
        assert_string_equal(json_string_value(json_object_get(p, "reason")), "timeout");
        cancelled++;
    }
    assert_int_equal(cancelled, 2);
    json_decref(st);
    assert_true(mcp_client_alive(c));
    mcp_client_close(c);
}

struct slow_call {
    struct mcp_client *c;
    const char *tool;
    int64_t timeout_ms;
    int r;
    enum sbx_upstream kind;
    int64_t took_ms;
};

static void *slow_call_thread(void *arg)
{
    struct slow_call *s = arg;
    struct sbx_error err = {0};
    json_t *res = NULL;
    int64_t start = clock_mono_us();
    s->r = mcp_client_call_tool(s->c, s->tool, NULL, s->timeout_ms, &res, &err);
    s->took_ms = ms_since(start);
    s->kind = err.upstream;
    json_decref(res);
    sbx_error_clear(&err);
    return NULL;
}

static void stdio_crash_fails_pending_at_once(void **state)
{
    struct mcp_client *c = connect_stdio("normal");
    struct slow_call waiting = {.c = c, .tool = "slow", .timeout_ms = 20000};
    pthread_t th;
    pthread_create(&th, NULL, slow_call_thread, &waiting);
    sleep_ms(200);
    struct sbx_error err = {0};
    json_t *res = NULL;
    assert_true(mcp_client_call_tool(c, "crash", NULL, 20000, &res, &err) < 0);
    assert_int_equal(err.upstream, SBX_UP_TRANSPORT);
    assert_non_null(strstr(err.message, "exited with status 5"));
    sbx_error_clear(&err);
    pthread_join(th, NULL);
    assert_true(waiting.r < 0);
    assert_int_equal(waiting.kind, SBX_UP_TRANSPORT);
    assert_true(waiting.took_ms < 10000);
    assert_false(mcp_client_alive(c));
    /* Later requests fail at once. */
    int64_t start = clock_mono_us();
    assert_int_equal(mcp_client_call_tool(c, "echo", NULL, 20000, &res, &err), -ENOTCONN);
    assert_int_equal(err.upstream, SBX_UP_TRANSPORT);
    assert_true(ms_since(start) < 1000);
    sbx_error_clear(&err);
    mcp_client_close(c);
}

static void stdio_startup_failures(void **state)
{
    struct mcp_server_config cfg = {0};
    cfg.name = strdup("missing");
    cfg.command = strdup("/nonexistent/mcp-server");
    connect_fails(&cfg, 5000, SBX_UP_TRANSPORT);
    free(cfg.command);
    cfg.command = strdup("no-such-mcp-server-in-path");
    connect_fails(&cfg, 5000, SBX_UP_TRANSPORT);
    mcp_server_config_done(&cfg);

    cfg_stdio(&cfg, "x", "exit_early");
    connect_fails(&cfg, 5000, SBX_UP_TRANSPORT);
    mcp_server_config_done(&cfg);

    cfg_stdio(&cfg, "x", "bad_version");
    connect_fails(&cfg, 5000, SBX_UP_PROTOCOL);
    mcp_server_config_done(&cfg);

    cfg_stdio(&cfg, "x", "init_error");
    connect_fails(&cfg, 5000, SBX_UP_TOOL);
    mcp_server_config_done(&cfg);

    int64_t start = clock_mono_us();
    cfg_stdio(&cfg, "x", "mute");
    connect_fails(&cfg, 300, SBX_UP_TIMEOUT);
    mcp_server_config_done(&cfg);
    assert_true(ms_since(start) < 3000);

    /* Both or neither of command and url. */
    cfg = (struct mcp_server_config){.name = strdup("x")};
    connect_fails(&cfg, 300, SBX_UP_TRANSPORT);
    mcp_server_config_done(&cfg);

    /* An older accepted protocol version. */
    struct mcp_client *c = connect_stdio("old_version");
    json_t *info = mcp_client_server_info(c);
    assert_string_equal(json_string_value(json_object_get(info, "protocolVersion")), "2025-03-26");
    json_decref(info);
    mcp_client_close(c);
}

static void stdio_path_env_cwd_and_stderr(void **state)
{
    /* "env" is looked up in PATH; the server itself writes 300 KB to stderr before answering
     * initialize, which only works if stderr is drained. */
    struct mcp_server_config cfg = {0};
    cfg.name = strdup("chatty");
    cfg.command = strdup("env");
    cfg.args = strv("/usr/bin/python3", stdio_script, "chatty", NULL);
    cfg.env = strv("FAKE_MCP_VAR=hello", "HOME=/overridden", NULL);
    cfg.cwd = strdup("/tmp");
    /* Ours reach the server only when they are of the minimal set (PATH, LANG, ...): never a
     * token or a key of sandboxd's. */
    setenv("FAKE_MCP_INHERITED", "yes", 1);
    setenv("SANDBOXD_API_TOKEN", "host-secret", 1);
    setenv("LANG", "C.UTF-8", 1);
    struct capture cap;
    capture_start(&cap);
    struct mcp_client *c = connect_ok(&cfg);
    mcp_server_config_done(&cfg);
    struct sbx_error err = {0};
    static const char *const cases[][2] = {{"FAKE_MCP_VAR", "hello"},
                                           {"HOME", "/overridden"},
                                           {"LANG", "C.UTF-8"},
                                           {"FAKE_MCP_INHERITED", "<unset>"},
                                           {"SANDBOXD_API_TOKEN", "<unset>"}};
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        json_t *args = json_pack("{s:s}", "name", cases[i][0]);
        char *t = call_text(c, "env", args, 5000, &err);
        assert_string_equal(t, cases[i][1]);
        free(t);
        json_decref(args);
    }
    char *t = call_text(c, "cwd", NULL, 5000, &err);
    assert_string_equal(t, "/tmp");
    free(t);
    /* By now (several reader rounds later) the start of stderr has been read: it is logged line
     * by line with the server's name, at a bounded rate. */
    char *logged = capture_end(&cap);
    assert_non_null(strstr(logged, "MCP server 'chatty': fake server starting in mode chatty"));
    assert_non_null(strstr(logged, "MCP server 'chatty': chatter line 0 yyy"));
    assert_null(strstr(logged, "chatter line 2999"));
    free(logged);
    mcp_client_close(c);
    unsetenv("FAKE_MCP_INHERITED");
    unsetenv("SANDBOXD_API_TOKEN");
}

static void stdio_oversized_line_kills_server(void **state)
{
    struct mcp_client *c = connect_stdio("normal");
    struct sbx_error err = {0};
    json_t *res = NULL;
    assert_true(mcp_client_call_tool(c, "huge", NULL, 20000, &res, &err) < 0);
    assert_int_equal(err.upstream, SBX_UP_PROTOCOL);
    sbx_error_clear(&err);
    assert_false(mcp_client_alive(c));
    mcp_client_close(c);
}

static void stdio_close_escalates_to_sigkill(void **state)
{
    /* Ignores stdin EOF: SIGTERM after 2 s. */
    struct mcp_client *c = connect_stdio("ignore_eof");
    int64_t start = clock_mono_us();
    mcp_client_close(c);
    int64_t took = ms_since(start);
    assert_true(took >= 1900 && took < 3500);

    /* Ignores SIGTERM as well: SIGKILL 2 s later. */
    c = connect_stdio("ignore_term");
    start = clock_mono_us();
    mcp_client_close(c);
    took = ms_since(start);
    assert_true(took >= 3800 && took < 6000);
}

/* The server pings us, stops reading its stdin while we write 1 MiB into it, then writes 1 MiB
 * to its stdout. Our reader must keep reading while a caller is stuck writing, and answer the
 * ping once stdin is free again. */
static void stdio_reader_never_blocks_on_stdin(void **state)
{
    struct mcp_client *c = connect_stdio("normal");
    struct slow_call flood = {.c = c, .tool = "ping_then_flood", .timeout_ms = 10000};
    pthread_t th;
    pthread_create(&th, NULL, slow_call_thread, &flood);
    sleep_ms(100);
    size_t big = 1 << 20;
    char *payload = malloc(big + 1);
    memset(payload, 'q', big);
    payload[big] = '\0';
    json_t *args = json_pack("{s:s}", "payload", payload);
    free(payload);
    struct sbx_error err = {0};
    json_t *res = NULL;
    int64_t start = clock_mono_us();
    assert_int_equal(mcp_client_call_tool(c, "echo", args, 10000, &res, &err), 0);
    assert_true(json_equal(json_object_get(res, "structuredContent"), args));
    json_decref(res);
    json_decref(args);
    pthread_join(th, NULL);
    assert_int_equal(flood.r, 0);
    assert_true(ms_since(start) < 8000);
    assert_true(mcp_client_alive(c));
    mcp_client_close(c);
}

static void stdio_concurrent_requests(void **state)
{
    struct mcp_client *c = connect_stdio("normal");
    run_concurrently(c, "echo", 8, 25);
    mcp_client_close(c);
}

static void stdio_tools_list_limits(void **state)
{
    struct mcp_client *c = connect_stdio("endless");
    struct sbx_error err = {0};
    json_t *tools = NULL;
    assert_int_equal(mcp_client_list_tools(c, 20000, &tools, &err), -EPROTO);
    assert_int_equal(err.upstream, SBX_UP_PROTOCOL);
    assert_non_null(strstr(err.message, "100 pages"));
    sbx_error_clear(&err);
    json_t *st = stats(c);
    assert_int_equal(json_integer_value(json_object_get(st, "tools_list")), 100);
    json_decref(st);
    mcp_client_close(c);

    c = connect_stdio("bad_tools");
    assert_int_equal(mcp_client_list_tools(c, 5000, &tools, &err), -EPROTO);
    assert_int_equal(err.upstream, SBX_UP_PROTOCOL);
    sbx_error_clear(&err);
    mcp_client_close(c);
}

int main(void)
{
    fixture_process_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(jsonrpc_builds_and_classifies),
        cmocka_unit_test(stdio_handshake_and_paginated_tools),
        cmocka_unit_test(stdio_tool_results_and_errors),
        cmocka_unit_test(answers_holding_nul_arrive),
        cmocka_unit_test(stdio_notifications_and_server_requests),
        cmocka_unit_test(stdio_timeout_cancels_and_drops_late_answer),
        cmocka_unit_test(stdio_crash_fails_pending_at_once),
        cmocka_unit_test(stdio_startup_failures),
        cmocka_unit_test(stdio_path_env_cwd_and_stderr),
        cmocka_unit_test(stdio_oversized_line_kills_server),
        cmocka_unit_test(stdio_close_escalates_to_sigkill),
        cmocka_unit_test(stdio_reader_never_blocks_on_stdin),
        cmocka_unit_test(stdio_concurrent_requests),
        cmocka_unit_test(stdio_tools_list_limits),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
