// SPDX-License-Identifier: MIT
/* Unit tests: mcp/simple against a real HTTP server on loopback (libmicrohttpd in-process),
 * covering every way a framework endpoint can fail. */
#include <errno.h>
#include <microhttpd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "app/defs.h"
#include "mcp/httpc.h"
#include "mcp/simple.h"

static const char *fake_mode = "ok";
static char fake_last_body[4096];

struct upload {
    char data[4096];
    size_t len;
};

static enum MHD_Result fake_handler(void *cls, struct MHD_Connection *c, const char *url,
                                    const char *method, const char *version, const char *up,
                                    size_t *up_size, void **con_cls)
{
    struct upload *u = *con_cls;
    if (!u) {
        *con_cls = calloc(1, sizeof(*u));
        return MHD_YES;
    }
    if (*up_size) {
        size_t n =
            *up_size < sizeof(u->data) - u->len - 1 ? *up_size : sizeof(u->data) - u->len - 1;
        memcpy(u->data + u->len, up, n);
        u->len += n;
        *up_size = 0;
        return MHD_YES;
    }
    snprintf(fake_last_body, sizeof(fake_last_body), "%s", u->data);
    free(u);
    *con_cls = NULL;
    unsigned status = 200;
    const char *body = "{\"result\": {\"content\": \"aGVsbG8=\"}}";
    char *big = NULL;
    if (strcmp(fake_mode, "tool_error") == 0)
        body = "{\"error\": {\"code\": \"NOT_FOUND\", \"message\": \"no such file\"}}";
    else if (strcmp(fake_mode, "http500") == 0) {
        status = 500;
        body = "boom";
    } else if (strcmp(fake_mode, "http404_tool") == 0) {
        status = 404;
        body = "{\"error\": {\"code\": \"NOT_FOUND\", \"message\": \"gone\"}}";
    } else if (strcmp(fake_mode, "garbage") == 0)
        body = "<html>";
    else if (strcmp(fake_mode, "no_result") == 0)
        body = "{\"other\": 1}";
    else if (strcmp(fake_mode, "slow") == 0)
        sleep(2);
    else if (strcmp(fake_mode, "huge") == 0) {
        big = malloc(300000);
        memset(big, 'a', 299999);
        big[299999] = '\0';
        body = big;
    }
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    free(big);
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static struct MHD_Daemon *daemon_;
static char url[64];

static int setup(void **state)
{
    daemon_ =
        MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL,
                         NULL, fake_handler, NULL, MHD_OPTION_SOCK_ADDR, NULL, MHD_OPTION_END);
    if (!daemon_)
        return -1;
    const union MHD_DaemonInfo *i = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_BIND_PORT);
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/mcp", i->port);
    return httpc_global_init();
}

static int teardown(void **state)
{
    MHD_stop_daemon(daemon_);
    httpc_global_done();
    return 0;
}

static int call(const char *mode, json_t **res, struct mcp_error *err, int64_t timeout_ms)
{
    fake_mode = mode;
    struct mcp_simple_options o = {.timeout_ms = timeout_ms, .max_response = 100000};
    json_t *params = json_pack("{s:s}", "app_id", "demo");
    int r = mcp_simple_call(url, "core.state.getDefinitionFileContent", params, &o, res, err);
    json_decref(params);
    return r;
}

static void success_returns_result_and_sends_simple_form(void **state)
{
    json_t *res = NULL;
    struct mcp_error err = {0};
    assert_int_equal(call("ok", &res, &err, 5000), 0);
    assert_string_equal(json_string_value(json_object_get(res, "content")), "aGVsbG8=");
    json_t *sent = json_loads(fake_last_body, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(sent, "tool")),
                        "core.state.getDefinitionFileContent");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(sent, "params"), "app_id")), "demo");
    json_decref(sent);
    json_decref(res);
    char *decoded;
    size_t n;
    assert_int_equal(defs_decode("aGVsbG8=", &decoded, &n), 0);
    assert_int_equal(n, 5);
    assert_string_equal(decoded, "hello");
    free(decoded);
    assert_int_equal(defs_decode("not base64!", &decoded, &n), -EBADMSG);
}

static void failures_become_mcp_errors(void **state)
{
    json_t *res = NULL;
    struct mcp_error err = {0};
    assert_int_equal(call("tool_error", &res, &err, 5000), -EPROTO);
    assert_int_equal(err.kind, MCP_ERR_TOOL);
    assert_string_equal(err.code, "NOT_FOUND");
    mcp_error_clear(&err);

    assert_true(call("http500", &res, &err, 5000) < 0);
    assert_int_equal(err.kind, MCP_ERR_HTTP);
    assert_int_equal(err.http_status, 500);
    mcp_error_clear(&err);

    assert_true(call("http404_tool", &res, &err, 5000) < 0);
    assert_int_equal(err.kind, MCP_ERR_TOOL);
    assert_int_equal(err.http_status, 404);
    mcp_error_clear(&err);

    assert_true(call("garbage", &res, &err, 5000) < 0);
    assert_int_equal(err.kind, MCP_ERR_PROTOCOL);
    mcp_error_clear(&err);

    assert_true(call("no_result", &res, &err, 5000) < 0);
    assert_int_equal(err.kind, MCP_ERR_PROTOCOL);
    mcp_error_clear(&err);

    assert_int_equal(call("huge", &res, &err, 5000), -EMSGSIZE);
    assert_int_equal(err.kind, MCP_ERR_PROTOCOL);
    mcp_error_clear(&err);

    assert_int_equal(call("slow", &res, &err, 300), -ETIMEDOUT);
    assert_int_equal(err.kind, MCP_ERR_TIMEOUT);
    json_t *d = mcp_error_details(&err, "t");
    assert_string_equal(json_string_value(json_object_get(d, "kind")), "timeout");
    json_decref(d);
    mcp_error_clear(&err);
    assert_null(res);
}

static void unreachable_endpoint(void **state)
{
    json_t *res = NULL;
    struct mcp_error err = {0};
    struct mcp_simple_options o = {.timeout_ms = 2000, .max_response = 1000};
    assert_true(mcp_simple_call("http://127.0.0.1:9/mcp", "x", NULL, &o, &res, &err) < 0);
    assert_int_equal(err.kind, MCP_ERR_TRANSPORT);
    mcp_error_clear(&err);
    assert_true(mcp_simple_call("file:///etc/passwd", "x", NULL, &o, &res, &err) < 0);
    assert_int_equal(err.kind, MCP_ERR_TRANSPORT); /* scheme refused by libcurl */
    mcp_error_clear(&err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(success_returns_result_and_sends_simple_form),
        cmocka_unit_test(failures_become_mcp_errors),
        cmocka_unit_test(unreachable_endpoint),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
