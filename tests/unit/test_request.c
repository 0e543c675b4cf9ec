// SPDX-License-Identifier: MIT
/* Unit tests: handlers/request (validation of /execute bodies: their form, then what the server can
 * give them) and the HTTP header helpers. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "api/api.h"
#include "handlers/app.h"
#include "handlers/request.h"
#include "framework/framework.h"

static json_t *base(const char *handler)
{
    return json_pack("{s:s, s:{s:s, s:{}}, s:{s:s, s:s, s:s, s:{s:s, s:s}}}", "requestId", "r1",
                     "requestData", "source", "http", "body", "context", "appId", "demo",
                     "handlerType", handler, "mcp_endpoint", "local", "taskDetails", "script",
                     "h/add.py", "function", "add");
}

static const char *field_of(json_t *body)
{
    struct request_spec s;
    struct sbx_error err = {0};
    int r = request_parse(body, &s, &err);
    json_decref(body);
    const char *field = err.field; /* static */
    if (r < 0) {                   /* the message names the field first, as the API answers it */
        assert_int_equal(err.kind, SBX_ERR_INVALID);
        assert_string_equal(err.code, "INVALID_REQUEST");
        assert_true(strncmp(err.message, field, strlen(field)) == 0);
    }
    sbx_error_clear(&err);
    return r == 0 ? NULL : field;
}

static void valid_jit(void **state)
{
    json_t *b = base("JIT");
    json_object_set_new(json_object_get(json_object_get(b, "context"), "taskDetails"), "timeoutMs",
                        json_integer(500));
    struct request_spec s;
    struct sbx_error err = {0};
    assert_int_equal(request_parse(b, &s, &err), 0);
    assert_int_equal(s.handler, HANDLER_JIT);
    assert_string_equal(s.script, "h/add.py");
    assert_string_equal(s.function, "add");
    assert_int_equal(s.timeout_ms, 500);
    assert_int_equal(s.memory_mb, 0);
    json_decref(b);
}

static json_t *ctx(json_t *b)
{
    return json_object_get(b, "context");
}

static json_t *task(json_t *b)
{
    return json_object_get(ctx(b), "taskDetails");
}

static void missing_and_mistyped_fields_are_named(void **state)
{
    json_t *b;
    b = base("JIT");
    json_object_del(b, "requestId");
    assert_string_equal(field_of(b), "requestId");
    b = base("JIT");
    json_object_set_new(b, "requestData", json_string("x"));
    assert_string_equal(field_of(b), "requestData");
    b = base("JIT");
    json_object_del(json_object_get(b, "requestData"), "source");
    assert_string_equal(field_of(b), "requestData.source");
    b = base("JIT");
    json_object_set_new(ctx(b), "mcp_endpoint", json_string("file:///etc"));
    assert_string_equal(field_of(b), "context.mcp_endpoint");
    b = base("NOPE");
    assert_string_equal(field_of(b), "context.handlerType");
    b = base("JIT");
    json_object_set_new(ctx(b), "appId", json_string("a/b"));
    assert_string_equal(field_of(b), "context.appId");
    b = base("JIT");
    json_object_set_new(task(b), "script", json_string("../x.py"));
    assert_string_equal(field_of(b), "context.taskDetails.script");
    b = base("JIT");
    json_object_set_new(task(b), "function", json_string("1abc"));
    assert_string_equal(field_of(b), "context.taskDetails.function");
    b = base("JIT");
    json_object_set_new(task(b), "memoryMb", json_integer(1));
    assert_string_equal(field_of(b), "context.taskDetails.memoryMb");
    b = base("JIT");
    json_object_set_new(task(b), "timeoutMs", json_real(1.5));
    assert_string_equal(field_of(b), "context.taskDetails.timeoutMs");
    b = base("JIT");
    json_object_set_new(ctx(b), "traceId", json_integer(3));
    assert_string_equal(field_of(b), "context.traceId");
    b = base("JIT");
    json_object_set_new(b, "requestId", json_stringn("a\0b", 3));
    assert_string_equal(field_of(b), "requestId");
    b = base("WORKFLOW");
    assert_string_equal(field_of(b), "context.workflowInfo");
}

/* Every handler type (HANDLER_TYPES) is accepted by its name, and an unknown one is refused
 * with the list of them. */
static void handler_types_by_name(void **state)
{
    (void)state;
    for (int i = 0; i < HANDLER_COUNT; i++) {
        json_t *b = base(handler_name((enum handler_type)i));
        struct request_spec s;
        struct sbx_error err = {0};
        request_parse(b, &s, &err); /* it may fail later, on what that type needs */
        if (err.field)
            assert_string_not_equal(err.field, "context.handlerType");
        else
            assert_int_equal(s.handler, i);
        sbx_error_clear(&err);
        json_decref(b);
    }
    json_t *b = base("PERL");
    struct request_spec s;
    struct sbx_error err = {0};
    assert_int_equal(request_parse(b, &s, &err), -EINVAL);
    assert_string_equal(err.message,
                        "context.handlerType: must be one of JIT, EXECUTOR, LLM, WORKFLOW");
    sbx_error_clear(&err);
    json_decref(b);
}

static void executor_rules(void **state)
{
    json_t *b = base("EXECUTOR");
    json_object_del(ctx(b), "appId"); /* optional for EXECUTOR */
    json_object_set_new(task(b), "code", json_string("x = 1"));
    json_object_set_new(task(b), "className", json_string("C"));
    assert_string_equal(field_of(json_incref(b)), "context.taskDetails.methodName");
    json_object_set_new(task(b), "methodName", json_string("m"));
    json_object_set_new(task(b), "methodParams", json_integer(1));
    assert_string_equal(field_of(json_incref(b)), "context.taskDetails.methodParams");
    json_object_set_new(task(b), "methodParams", json_object());
    assert_null(field_of(b));
}

static void content_type_and_accept(void **state)
{
    assert_true(api_is_json_type("application/json"));
    assert_true(api_is_json_type("application/json; charset=utf-8"));
    assert_true(api_is_json_type("Application/JSON"));
    assert_false(api_is_json_type("application/jsonx"));
    assert_false(api_is_json_type("text/plain"));
    assert_false(api_is_json_type(NULL));
    assert_true(api_accepts(NULL, "application/json"));
    assert_true(api_accepts("*/*", "application/json"));
    assert_true(api_accepts("application/*", "application/json"));
    assert_true(api_accepts("text/html, application/json;q=0.9", "application/json"));
    assert_false(api_accepts("text/html", "application/json"));
    assert_false(api_accepts("application/json;q=0", "application/json"));
    assert_true(api_accepts("text/event-stream", "text/event-stream"));
}

/* What request_validate() says of body against a server with the default framework allowlist
 * (loopback and "local"), no --egress-allow, no profiles and a /tmp of 1 KiB: 0, or the error's
 * code and field in *ret_code and *ret_field (static). */
static int validate(json_t *body, const char **ret_code, const char **ret_field,
                    enum sbx_errkind *ret_kind)
{
    struct framework_options fo = {.timeout_ms = 1000, .max_response = 1000};
    struct jail_config jail = {.tmp_bytes = 1024};
    struct app a = {.jail = &jail};
    assert_int_equal(framework_new(&fo, &a.fw), 0);
    struct request_spec s = {0};
    struct sbx_error err = {0};
    int r = request_validate(&a, body, &s, &err);
    *ret_code = err.code;
    *ret_field = err.field;
    *ret_kind = err.kind;
    if (r < 0) /* the message names the field first, as the API answers it */
        assert_true(strncmp(err.message, err.field, strlen(err.field)) == 0);
    request_done(&s);
    sbx_error_clear(&err);
    framework_free(a.fw);
    json_decref(body);
    return r;
}

static void what_the_server_cannot_give_is_refused(void **state)
{
    (void)state;
    const char *code, *field;
    enum sbx_errkind kind;
    assert_int_equal(validate(base("JIT"), &code, &field, &kind), 0);

    json_t *b = base("JIT");
    json_object_set_new(ctx(b), "mcp_endpoint", json_string("http://192.0.2.1:9/mcp"));
    assert_int_equal(validate(b, &code, &field, &kind), -EPERM);
    assert_int_equal(kind, SBX_ERR_FORBIDDEN);
    assert_string_equal(code, "FRAMEWORK_NOT_ALLOWED");
    assert_string_equal(field, "context.mcp_endpoint");

    b = base("JIT");
    json_object_set_new(task(b), "network", json_pack("{s:[s]}", "allow", "example.com"));
    assert_int_equal(validate(b, &code, &field, &kind), -EINVAL); /* no --egress-allow */
    assert_string_equal(code, "NETWORK_NOT_ALLOWED");
    assert_string_equal(field, "context.taskDetails.network");

    b = base("EXECUTOR");
    json_object_set_new(task(b), "code", json_string("x = 1"));
    json_object_set_new(task(b), "profile", json_string("nonesuch"));
    assert_int_equal(validate(b, &code, &field, &kind), -EINVAL);
    assert_int_equal(kind, SBX_ERR_INVALID);
    assert_string_equal(field, "context.taskDetails.profile");

    b = base("JIT");
    char big[2045];
    memset(big, 'A', sizeof(big) - 1); /* base64 of 1533 bytes: more than the /tmp of 1 KiB */
    big[sizeof(big) - 1] = '\0';
    json_object_set_new(task(b), "files", json_pack("{s:s}", "in.bin", big));
    assert_int_equal(validate(b, &code, &field, &kind), -EFBIG);
    assert_int_equal(kind, SBX_ERR_TOO_LARGE);
    assert_string_equal(code, "FILES_TOO_LARGE");

    /* The form first: a wrong field is named before the endpoint is looked at. */
    b = base("JIT");
    json_object_set_new(ctx(b), "mcp_endpoint", json_string("http://192.0.2.1:9/mcp"));
    json_object_set_new(task(b), "function", json_string("not an identifier"));
    assert_int_equal(validate(b, &code, &field, &kind), -EINVAL);
    assert_string_equal(code, "INVALID_REQUEST");
    assert_string_equal(field, "context.taskDetails.function");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(valid_jit),
        cmocka_unit_test(missing_and_mistyped_fields_are_named),
        cmocka_unit_test(handler_types_by_name),
        cmocka_unit_test(executor_rules),
        cmocka_unit_test(content_type_and_accept),
        cmocka_unit_test(what_the_server_cannot_give_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
