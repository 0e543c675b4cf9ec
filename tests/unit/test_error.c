// SPDX-License-Identifier: MIT
/* Unit tests: util/error (the error type modules hand across their boundaries) and
 * api/status (the one place a kind becomes an HTTP status). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/status.h"
#include "util/error.h"

static void kinds_map_to_statuses(void **state)
{
    const struct {
        enum sbx_errkind kind;
        int status;
        const char *name;
    } rows[] = {
        {SBX_ERR_INVALID, 400, "invalid"},
        {SBX_ERR_NOT_FOUND, 404, "not_found"},
        {SBX_ERR_GONE, 410, "gone"},
        {SBX_ERR_LIMIT, 429, "limit"},
        {SBX_ERR_UNAVAILABLE, 503, "unavailable"},
        {SBX_ERR_UPSTREAM, 502, "upstream"},
        {SBX_ERR_INTERNAL, 500, "internal"},
        {SBX_ERR_NONE, 200, "none"},
        {SBX_ERR_TOO_LARGE, 413, "too_large"},
        {SBX_ERR_FORBIDDEN, 403, "forbidden"},
        {SBX_ERR_CONFLICT, 409, "conflict"},
        {SBX_ERR_UNAUTHORIZED, 401, "unauthorized"},
        {SBX_ERR_METHOD, 405, "method"},
        {SBX_ERR_MEDIA_TYPE, 415, "media_type"},
        {SBX_ERR_NOT_ACCEPTABLE, 406, "not_acceptable"},
    };
    /* every kind has a row: a kind added without its status would answer 500 */
    assert_int_equal(sizeof(rows) / sizeof(rows[0]), SBX_ERR_KIND_COUNT_);
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        assert_int_equal(api_status_of(rows[i].kind), rows[i].status);
        assert_string_equal(sbx_errkind_name(rows[i].kind), rows[i].name);
    }
    assert_int_equal(api_status_of((enum sbx_errkind)99), 500); /* not a kind: the server's */
    assert_string_equal(sbx_errkind_name((enum sbx_errkind)99), "internal");
    assert_int_equal(api_status_ok(API_OK), 200);
    assert_int_equal(api_status_ok(API_CREATED), 201);
    assert_int_equal(api_status_ok(API_ACCEPTED), 202);
    assert_int_equal(api_status_ok(API_NO_CONTENT), 204);
}

static void upstream_keeps_how_status_and_code(void **state)
{
    struct sbx_error e = {0};
    sbx_error_upstream(&e, SBX_UP_TOOL, "ENOENT", "no file %s", "a.py");
    assert_int_equal(e.kind, SBX_ERR_UPSTREAM);
    assert_string_equal(e.code, "MCP_ERROR");
    assert_string_equal(e.upstream_code, "ENOENT");
    e.upstream_status = 404;
    json_t *d = sbx_error_details(&e, "core.state.get");
    assert_non_null(d);
    assert_string_equal(json_string_value(json_object_get(d, "kind")), "tool");
    assert_string_equal(json_string_value(json_object_get(d, "message")), "no file a.py");
    assert_string_equal(json_string_value(json_object_get(d, "tool")), "core.state.get");
    assert_string_equal(json_string_value(json_object_get(d, "code")), "ENOENT");
    assert_int_equal(json_integer_value(json_object_get(d, "httpStatus")), 404);
    json_decref(d);
    /* set() after upstream(): the upstream part goes (its code freed: valgrind, ASan) */
    sbx_error_set(&e, SBX_ERR_NOT_FOUND, "SCRIPT_NOT_FOUND", NULL, "%s", e.message);
    assert_int_equal(e.upstream, SBX_UP_NONE);
    assert_null(e.upstream_code);
    assert_int_equal(e.upstream_status, 0);
    assert_string_equal(e.message, "no file a.py"); /* its own old message as the argument */
    d = sbx_error_details(&e, NULL);
    assert_string_equal(json_string_value(json_object_get(d, "kind")), "none");
    assert_null(json_object_get(d, "tool"));
    assert_null(json_object_get(d, "httpStatus"));
    json_decref(d);
    sbx_error_clear(&e);
    assert_int_equal(sbx_error_errno(&e, ENOENT, SBX_ERR_NOT_FOUND, "X", "f", "gone %d", 1),
                     -ENOENT);
    assert_string_equal(e.message, "gone 1");
    assert_string_equal(e.field, "f");
    sbx_error_clear(&e);
    assert_string_equal(sbx_upstream_name(SBX_UP_TRANSPORT), "transport");
    assert_string_equal(sbx_upstream_name(SBX_UP_HTTP), "http");
    assert_string_equal(sbx_upstream_name(SBX_UP_PROTOCOL), "protocol");
    assert_string_equal(sbx_upstream_name((enum sbx_upstream)99), "unknown");
}

static void set_replaces_and_clear_frees(void **state)
{
    struct sbx_error e = {0};
    sbx_error_set(&e, SBX_ERR_NOT_FOUND, "SESSION_NOT_FOUND", NULL, "no session %s", "abc");
    assert_int_equal(e.kind, SBX_ERR_NOT_FOUND);
    assert_string_equal(e.message, "no session abc");
    sbx_error_set(&e, SBX_ERR_INVALID, "INVALID_REQUEST", "servers", "%d unknown", 2);
    assert_int_equal(e.kind, SBX_ERR_INVALID); /* the first message freed (valgrind, ASan) */
    assert_string_equal(e.code, "INVALID_REQUEST");
    assert_string_equal(e.field, "servers");
    assert_string_equal(e.message, "2 unknown");
    sbx_error_clear(&e);
    assert_int_equal(e.kind, SBX_ERR_NONE);
    assert_null(e.message);
    sbx_error_clear(&e); /* again: safe */
    {
        _cleanup_sbx_error_ struct sbx_error scoped = {0};
        sbx_error_set(&scoped, SBX_ERR_INTERNAL, "INTERNAL", NULL, "freed at the brace");
    }
}

static void reply_carries_status_code_and_retry_after(void **state)
{
    struct http_reply r = {0};
    struct sbx_error e = {0};
    sbx_error_set(&e, SBX_ERR_UNAVAILABLE, "SHUTTING_DOWN", NULL, "going away");
    api_reply_sbx_error(&r, &e);
    assert_int_equal(r.status, 503);
    assert_null(e.message); /* consumed */
    bool retry = false;
    for (size_t i = 0; i < r.n_headers; i++)
        retry = retry || strcmp(r.headers[i].name, "Retry-After") == 0;
    assert_true(retry);
    http_reply_done(&r);

    struct http_reply r2 = {0};
    sbx_error_set(&e, SBX_ERR_LIMIT, "TENANT_LIMIT", NULL, "too many");
    api_reply_sbx_error(&r2, &e);
    assert_int_equal(r2.status, 429);
    assert_int_equal(r2.n_headers, 0); /* Retry-After for UNAVAILABLE only */
    http_reply_done(&r2);

    struct http_reply r3 = {0};
    api_reply_method(&r3, "GET, POST");
    assert_int_equal(r3.status, 405);
    assert_int_equal(r3.n_headers, 1);
    assert_string_equal(r3.headers[0].name, "Allow");
    assert_string_equal(r3.headers[0].value, "GET, POST");
    json_t *err = json_object_get(r3.body, "error");
    assert_string_equal(json_string_value(json_object_get(err, "code")), "METHOD_NOT_ALLOWED");
    assert_string_equal(json_string_value(json_object_get(err, "message")), "use GET, POST");
    http_reply_done(&r3);

    struct http_reply r4 = {0};
    api_reply_json(&r4, API_CREATED, NULL); /* could not be built: never an empty success */
    assert_int_equal(r4.status, 500);
    api_reply_json(&r4, API_CREATED, json_object());
    assert_int_equal(r4.status, 201);
    api_reply_jsonrpc(&r4, SBX_ERR_NOT_FOUND, -32001, "Session not found", NULL);
    assert_int_equal(r4.status, 404);
    assert_true(json_is_null(json_object_get(r4.body, "id")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(r4.body, "error"), "code")),
                     -32001);
    http_reply_done(&r4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kinds_map_to_statuses),
        cmocka_unit_test(set_replaces_and_clear_frees),
        cmocka_unit_test(upstream_keeps_how_status_and_code),
        cmocka_unit_test(reply_carries_status_code_and_retry_after),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
