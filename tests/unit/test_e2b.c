// SPDX-License-Identifier: MIT
/* Unit tests: e2b — the Connect envelopes and codes, the NDJSON lines of the code interpreter,
 * and E2B's error shapes (src/e2b/connect.c, ndjson.c, error.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "e2b/connect.h"
#include "e2b/error.h"
#include "e2b/ndjson.h"

static json_t *read_env(const char *body, size_t len, int want)
{
    json_t *msg = NULL;
    const char *why = NULL;
    assert_int_equal(connect_read_envelope(body, len, &msg, &why), want);
    if (want < 0)
        assert_non_null(why);
    return msg;
}

static void envelopes(void **state)
{
    (void)state;
    json_t *msg = read_env("\x00\x00\x00\x00\x0c{\"path\":\"a\"}", 17, 0);
    assert_string_equal(json_string_value(json_object_get(msg, "path")), "a");
    size_t n = 0;
    char *out = connect_envelope(0, msg, &n);
    assert_int_equal(n, 17);
    assert_memory_equal(out, "\x00\x00\x00\x00\x0c{\"path\":\"a\"}", 17);
    free(out);
    json_decref(msg);
    read_env("", 0, -EINVAL);                       /* no header */
    read_env("\x00\x00\x00\x00\x03{}", 7, -EINVAL); /* length past the body */
    read_env("\x01\x00\x00\x00\x02{}", 7, -EINVAL); /* compressed */
    read_env("\x02\x00\x00\x00\x02{}", 7, -EINVAL); /* an end-of-stream */
    read_env("\x00\x00\x00\x00\x02[]", 7, -EINVAL); /* not an object */
    read_env("\x00\x00\x00\x00\x02{}\x00\x00\x00\x00\x02{}", 14, -EINVAL); /* two messages */
    read_env("\x00\x7f\xff\xff\xff{}", 7, -EINVAL);                        /* over 4 MiB */
    msg = NULL;
    const char *why = NULL;
    assert_int_equal(connect_read_unary("", 0, &msg, &why), 0); /* an empty body is {} */
    assert_true(json_is_object(msg) && json_object_size(msg) == 0);
    json_decref(msg);
    assert_int_equal(connect_read_unary("{\"a\":1,\"a\":2}", 13, &msg, &why), -EINVAL);
}

static void codes(void **state)
{
    (void)state;
    enum sbx_errkind kind;
    int status;
    assert_true(connect_code_lookup("not_found", &kind, &status));
    assert_int_equal(kind, SBX_ERR_NOT_FOUND);
    assert_int_equal(status, 404);
    assert_false(connect_code_lookup("NotFound", NULL, NULL));
    struct sbx_error e = {.kind = SBX_ERR_LIMIT, .code = "TENANT_LIMIT", .message = "m"};
    assert_string_equal(connect_code_of(&e), "resource_exhausted");
    assert_int_equal(connect_status_of(&e), 429);
    e.code = "already_exists"; /* a Connect code wins over the kind */
    assert_string_equal(connect_code_of(&e), "already_exists");
    assert_int_equal(connect_status_of(&e), 409);
    size_t n = 0;
    char *end = connect_end_stream(&e, &n);
    assert_int_equal((unsigned char)end[0], CONNECT_FLAG_END_STREAM);
    assert_memory_equal(end + 5, "{\"error\":{\"code\":\"already_exists\",\"message\":\"m\"}}",
                        n - 5);
    free(end);
    end = connect_end_stream(NULL, &n);
    assert_int_equal(n, 7);
    assert_memory_equal(end, "\x02\x00\x00\x00\x02{}", 7);
    free(end);
}

static void check_line(const char *in, const char *want)
{
    json_t *j = json_loads(in, JSON_ALLOW_NUL, NULL);
    assert_non_null(j);
    size_t n = 0;
    char *line = ndjson_line(j, &n);
    json_decref(j);
    if (!want) {
        assert_null(line);
        return;
    }
    assert_non_null(line);
    assert_string_equal(line, want);
    assert_int_equal(n, strlen(want));
    free(line);
}

static void lines(void **state)
{
    (void)state;
    check_line("{\"type\": \"stdout\", \"text\": \"a\\nb\", \"junk\": 1}",
               "{\"type\":\"stdout\",\"text\":\"a\\nb\"}\n");
    check_line("{\"type\": \"result\", \"text\": \"2\", \"json\": [1], \"is_main_result\": true, "
               "\"extra\": {}, \"evil\": \"x\"}",
               "{\"type\":\"result\",\"text\":\"2\",\"extra\":{},\"json\":[1],"
               "\"is_main_result\":true}\n");
    check_line("{\"type\": \"error\", \"name\": \"E\", \"value\": \"v\", \"traceback\": \"t\"}",
               "{\"type\":\"error\",\"name\":\"E\",\"value\":\"v\",\"traceback\":\"t\"}\n");
    check_line("{\"type\": \"number_of_executions\", \"execution_count\": 4}",
               "{\"type\":\"number_of_executions\",\"execution_count\":4}\n");
    check_line("{\"type\": \"result\", \"html\": 5, \"is_main_result\": true}", NULL);
    check_line("{\"type\": \"result\", \"text\": \"x\"}", NULL); /* is_main_result missing */
    check_line("{\"type\": \"error\", \"name\": \"E\"}", NULL);
    check_line("{\"type\": \"end_of_execution\"}", NULL); /* sandboxd writes that one */
    check_line("{\"text\": \"x\"}", NULL);
    /* Found by fuzz_e2b: a type with a NUL inside is not the type before it. */
    check_line("{\"type\": \"stdout\\u0000x\", \"text\": \"x\"}", NULL);
    check_line("[1]", NULL);
    size_t n = 0;
    char *end = ndjson_simple("end_of_execution", &n);
    assert_string_equal(end, "{\"type\":\"end_of_execution\"}\n");
    free(end);
}

static void error_shapes(void **state)
{
    (void)state;
    struct http_reply r = {0};
    e2b_reply_fail(&r, E2B_SURFACE_API, SBX_ERR_NOT_FOUND, NULL, "sandbox %s not found", "x");
    assert_int_equal(r.status, 404);
    assert_int_equal(json_integer_value(json_object_get(r.body, "code")), 404);
    assert_string_equal(json_string_value(json_object_get(r.body, "message")),
                        "sandbox x not found");
    http_reply_done(&r);
    r = (struct http_reply){0};
    e2b_reply_fail(&r, E2B_SURFACE_CONNECT, SBX_ERR_GONE, NULL, "gone");
    assert_int_equal(r.status, 404);
    assert_string_equal(json_string_value(json_object_get(r.body, "code")), "not_found");
    http_reply_done(&r);
    r = (struct http_reply){0};
    e2b_reply_fail(&r, E2B_SURFACE_INTERP, SBX_ERR_LIMIT, NULL, "busy");
    assert_int_equal(r.status, 429);
    assert_string_equal(r.text, "busy");
    assert_string_equal(r.headers[0].name, "Retry-After");
    http_reply_done(&r);
    r = (struct http_reply){0};
    /* Found by fuzz_e2b: a message quoting a client's bytes that are not UTF-8 still makes a
     * body (it had none: JSON strings are UTF-8). */
    e2b_reply_fail(&r, E2B_SURFACE_ENVD, SBX_ERR_INVALID, NULL, "bad path: %s",
                   "a\xff\xfe"
                   "b");
    assert_int_equal(r.status, 400);
    assert_string_equal(json_string_value(json_object_get(r.body, "message")),
                        "bad path: a\xef\xbf\xbd\xef\xbf\xbd"
                        "b");
    http_reply_done(&r);
    r = (struct http_reply){0};
    e2b_reply_status(&r, E2B_SURFACE_CONNECT, 401, "no");
    assert_int_equal(r.status, 401);
    assert_string_equal(json_string_value(json_object_get(r.body, "code")), "unauthenticated");
    http_reply_done(&r);
}

/* Every kind of util/error.h has E2B's status and a Connect code: a kind added there without a
 * row in e2b/error.c would answer status 0. */
static void every_kind_has_a_status(void **state)
{
    (void)state;
    for (int k = 0; k < SBX_ERR_KIND_COUNT_; k++) {
        struct sbx_error e = {.kind = (enum sbx_errkind)k};
        int status = e2b_status_of(&e);
        if (status < 200 || status > 599)
            fail_msg("kind %s has E2B status %d", sbx_errkind_name(e.kind), status);
        assert_non_null(connect_code_name(connect_code_of(&e)));
    }
    struct sbx_error e = {.kind = SBX_ERR_UNAUTHORIZED};
    assert_int_equal(e2b_status_of(&e), 401);
    assert_string_equal(connect_code_of(&e), "unauthenticated");
    e.kind = SBX_ERR_METHOD;
    assert_int_equal(e2b_status_of(&e), 405);
    e.kind = SBX_ERR_FORBIDDEN;
    assert_int_equal(e2b_status_of(&e), 403);
    assert_string_equal(connect_code_of(&e), "permission_denied");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(envelopes),
        cmocka_unit_test(codes),
        cmocka_unit_test(lines),
        cmocka_unit_test(error_shapes),
        cmocka_unit_test(every_kind_has_a_status),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
