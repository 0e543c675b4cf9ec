// SPDX-License-Identifier: MIT
/* Unit tests: framework/simple against a real HTTP server on loopback (libmicrohttpd in-process),
 * covering every way a framework endpoint can fail, what the messages say about the URL and
 * the limit that fired, and the framework client's allowlist (framework/framework). */
#include <errno.h>
#include <microhttpd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <netinet/in.h>

#include <cmocka.h>

#include "framework/defs.h"
#include "framework/framework.h"
#include "framework/httpc.h"
#include "framework/simple.h"
#include "util/log.h"
#include "util/url.h"

static const char *fake_mode = "ok";
static char fake_last_body[4096];
static unsigned fake_requests; /* requests answered */

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
    __atomic_add_fetch(&fake_requests, 1, __ATOMIC_SEQ_CST);
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

static int call(const char *mode, json_t **res, struct sbx_error *err, int64_t timeout_ms)
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
    struct sbx_error err = {0};
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
    struct sbx_error err = {0};
    assert_int_equal(call("tool_error", &res, &err, 5000), -EPROTO);
    assert_int_equal(err.upstream, SBX_UP_TOOL);
    assert_string_equal(err.upstream_code, "NOT_FOUND");
    sbx_error_clear(&err);

    assert_true(call("http500", &res, &err, 5000) < 0);
    assert_int_equal(err.upstream, SBX_UP_HTTP);
    assert_int_equal(err.upstream_status, 500);
    sbx_error_clear(&err);

    assert_true(call("http404_tool", &res, &err, 5000) < 0);
    assert_int_equal(err.upstream, SBX_UP_TOOL);
    assert_int_equal(err.upstream_status, 404);
    sbx_error_clear(&err);

    assert_true(call("garbage", &res, &err, 5000) < 0);
    assert_int_equal(err.upstream, SBX_UP_PROTOCOL);
    sbx_error_clear(&err);

    assert_true(call("no_result", &res, &err, 5000) < 0);
    assert_int_equal(err.upstream, SBX_UP_PROTOCOL);
    sbx_error_clear(&err);

    assert_int_equal(call("huge", &res, &err, 5000), -EMSGSIZE);
    assert_int_equal(err.upstream, SBX_UP_PROTOCOL);
    sbx_error_clear(&err);

    assert_int_equal(call("slow", &res, &err, 300), -ETIMEDOUT);
    assert_int_equal(err.upstream, SBX_UP_TIMEOUT);
    assert_non_null(strstr(err.message, "no answer from"));
    assert_non_null(strstr(err.message, "within 300 ms"));
    json_t *d = sbx_error_details(&err, "t");
    assert_string_equal(json_string_value(json_object_get(d, "kind")), "timeout");
    json_decref(d);
    sbx_error_clear(&err);
    assert_null(res);
}

static void unreachable_endpoint(void **state)
{
    json_t *res = NULL;
    struct sbx_error err = {0};
    struct mcp_simple_options o = {.timeout_ms = 2000, .max_response = 1000};
    assert_true(mcp_simple_call("http://127.0.0.1:9/mcp", "x", NULL, &o, &res, &err) < 0);
    assert_int_equal(err.upstream, SBX_UP_TRANSPORT);
    sbx_error_clear(&err);
    assert_true(mcp_simple_call("file:///etc/passwd", "x", NULL, &o, &res, &err) < 0);
    assert_int_equal(err.upstream, SBX_UP_TRANSPORT); /* scheme refused by libcurl */
    sbx_error_clear(&err);
}

/* A TLS endpoint that accepts (the kernel does, from the backlog) and never answers the
 * handshake: the connect timeout fires, and the message says so with its own limit. */
static void tls_stall_names_the_connect_timeout(void **state)
{
    int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(ls >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(ls, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(ls, 8), 0);
    socklen_t len = sizeof(a);
    assert_int_equal(getsockname(ls, (struct sockaddr *)&a, &len), 0);
    char tls_url[64];
    snprintf(tls_url, sizeof(tls_url), "https://127.0.0.1:%u/mcp", ntohs(a.sin_port));
    json_t *res = NULL;
    struct sbx_error err = {0};
    struct mcp_simple_options o = {
        .timeout_ms = 5000, .connect_timeout_ms = 300, .max_response = 1000};
    assert_int_equal(mcp_simple_call(tls_url, "x", NULL, &o, &res, &err), -ETIMEDOUT);
    assert_int_equal(err.upstream, SBX_UP_TIMEOUT);
    assert_non_null(strstr(err.message, "connect timeout of 300 ms"));
    assert_null(strstr(err.message, "5000"));
    sbx_error_clear(&err);
    close(ls);
}

static void messages_never_show_url_credentials(void **state)
{
    json_t *res = NULL;
    struct sbx_error err = {0};
    struct mcp_simple_options o = {.timeout_ms = 2000, .max_response = 1000};
    assert_true(mcp_simple_call("http://user:PASSWORD@127.0.0.1:9/mcp?api_key=SECRET#x", "x", NULL,
                                &o, &res, &err) < 0);
    assert_non_null(strstr(err.message, "http://127.0.0.1:9/mcp"));
    assert_null(strstr(err.message, "PASSWORD"));
    assert_null(strstr(err.message, "user"));
    assert_null(strstr(err.message, "SECRET"));
    sbx_error_clear(&err);
    /* An HTTP error too. */
    char with_secret[128];
    snprintf(with_secret, sizeof(with_secret), "%s?token=SECRET", url);
    fake_mode = "http500";
    assert_true(mcp_simple_call(with_secret, "x", NULL, &o, &res, &err) < 0);
    assert_int_equal(err.upstream, SBX_UP_HTTP);
    assert_null(strstr(err.message, "SECRET"));
    sbx_error_clear(&err);
}

/* Whatever calls it, the framework client never connects to an endpoint outside the list. */
static void framework_refuses_endpoints_outside_the_allowlist(void **state)
{
    struct url_allowlist allow = {0};
    const char *why = NULL;
    char prefix[96];
    snprintf(prefix, sizeof(prefix), "%s/allowed", url);
    assert_int_equal(url_allowlist_add(&allow, prefix, &why), 0);
    struct framework_options fo = {.timeout_ms = 2000, .max_response = 100000, .allow = &allow};
    struct framework *fw = NULL;
    assert_int_equal(framework_new(&fo, &fw), 0);
    json_t *res = NULL;
    struct sbx_error err = {0};
    fake_mode = "ok";
    unsigned before = __atomic_load_n(&fake_requests, __ATOMIC_SEQ_CST);
    const char *outside[] = {url, "http://192.0.2.1:9/x", "http://127.0.0.1.nip.io/allowed"};
    for (size_t i = 0; i < sizeof(outside) / sizeof(*outside); i++) {
        assert_false(framework_endpoint_allowed(fw, outside[i]));
        assert_int_equal(framework_call(fw, outside[i], "app", "t", NULL, &res, &err, NULL),
                         -EPERM);
        assert_string_equal(err.upstream_code, "FRAMEWORK_NOT_ALLOWED");
        sbx_error_clear(&err);
    }
    assert_int_equal(__atomic_load_n(&fake_requests, __ATOMIC_SEQ_CST), before);
    char inside[128];
    snprintf(inside, sizeof(inside), "%s/x", prefix);
    assert_true(framework_endpoint_allowed(fw, inside));
    assert_int_equal(framework_call(fw, inside, "app", "t", NULL, &res, &err, NULL), 0);
    json_decref(res);
    assert_int_equal(__atomic_load_n(&fake_requests, __ATOMIC_SEQ_CST), before + 1);
    assert_true(framework_endpoint_allowed(fw, "local"));
    framework_free(fw);
    /* No list: loopback only. */
    fo.allow = NULL;
    assert_int_equal(framework_new(&fo, &fw), 0);
    assert_true(framework_endpoint_allowed(fw, url));
    assert_false(framework_endpoint_allowed(fw, "http://192.0.2.1:9/x"));
    framework_free(fw);
    url_allowlist_done(&allow);
}

int main(void)
{
    log_set_level(LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(success_returns_result_and_sends_simple_form),
        cmocka_unit_test(failures_become_mcp_errors),
        cmocka_unit_test(unreachable_endpoint),
        cmocka_unit_test(tls_stall_names_the_connect_timeout),
        cmocka_unit_test(messages_never_show_url_credentials),
        cmocka_unit_test(framework_refuses_endpoints_outside_the_allowlist),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
