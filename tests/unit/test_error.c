// SPDX-License-Identifier: MIT
/* Unit tests: util/error (the error type modules hand across their boundaries) and
 * api/status (the one place a kind becomes an HTTP status). */
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
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        assert_int_equal(api_status_of(rows[i].kind), rows[i].status);
        assert_string_equal(sbx_errkind_name(rows[i].kind), rows[i].name);
    }
    assert_int_equal(api_status_of((enum sbx_errkind)99), 500); /* not a kind: the server's */
    assert_string_equal(sbx_errkind_name((enum sbx_errkind)99), "internal");
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
    http_reply_done(&r2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kinds_map_to_statuses),
        cmocka_unit_test(set_replaces_and_clear_frees),
        cmocka_unit_test(reply_carries_status_code_and_retry_after),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
