// SPDX-License-Identifier: MIT
/*
 * fuzz_request — the /execute request as a client sends it: the
 * Content-Type and Accept headers (api/api.c) and the JSON body, parsed as
 * the API parses it and validated by request_parse() (handlers/request.c). A
 * refused body names a field and a reason, and becomes an INVALID (400) body
 * that can be written; an accepted one holds only what validation promises (ids and
 * paths within their caps, relative paths without "..", identifiers, an
 * appId that names one directory), and the job frame that carries the
 * requestData and the context to the sandbox reads back equal on the host
 * (a function may return what it was given).
 *
 * Input: the Content-Type line, the Accept line, then the body.
 */
#include <string.h>
#include <strings.h>

#include "api/api.h"
#include "api/status.h"
#include "handlers/app.h"
#include "handlers/request.h"
#include "exec/run.h"
#include "fuzz.h"
#include "http/server.h"
#include "util/path.h"

/* A definition path as validation promises it: relative, no "..", no NUL, names a file. */
static void check_path(const char *p, json_t *from)
{
    FUZZ_CHECK(p && *p && strlen(p) == json_string_length(from));
    FUZZ_CHECK(p[0] != '/' && strlen(p) <= 1024 && p[strlen(p) - 1] != '/');
    for (const char *seg = p;;) {
        size_t n = strcspn(seg, "/");
        FUZZ_CHECK(!(n == 2 && seg[0] == '.' && seg[1] == '.'));
        if (!seg[n])
            break;
        seg += n + 1;
    }
}

/* A string member as validation promises it: present, not empty, no NUL, within max. */
static void check_string(const char *s, json_t *from, size_t max)
{
    FUZZ_CHECK(s && *s && strlen(s) == json_string_length(from) && strlen(s) <= max);
}

static void check_accepted(json_t *body, const struct request_spec *s)
{
    check_string(s->request_id, json_object_get(body, "requestId"), REQUEST_MAX_ID);
    FUZZ_CHECK(json_is_object(s->request_data) && json_is_object(s->context));
    FUZZ_CHECK(strcmp(s->handler_name,
                      json_string_value(json_object_get(s->context, "handlerType"))) == 0);
    check_string(s->endpoint, json_object_get(s->context, "mcp_endpoint"), 2048);
    if (s->app_id) {
        check_string(s->app_id, json_object_get(s->context, "appId"), 256);
        FUZZ_CHECK(!strchr(s->app_id, '/') && strcmp(s->app_id, ".") && strcmp(s->app_id, ".."));
    }
    FUZZ_CHECK(s->handler == HANDLER_EXECUTOR || s->app_id);
    FUZZ_CHECK(s->timeout_ms >= 0 && (s->memory_mb == 0 || s->memory_mb >= 16));
    switch (s->handler) {
    case HANDLER_JIT:
        check_path(s->script, json_object_get(s->task, "script"));
        FUZZ_CHECK(path_is_identifier(s->function));
        break;
    case HANDLER_EXECUTOR:
        /* empty code is Python too */
        FUZZ_CHECK(s->code &&
                   strlen(s->code) == json_string_length(json_object_get(s->task, "code")));
        FUZZ_CHECK(strlen(s->code) <= EXEC_MAX_CODE);
        FUZZ_CHECK(!s->class_name == !s->method_name);
        FUZZ_CHECK(!(s->class_name && s->function_name));
        FUZZ_CHECK(!s->class_name || path_is_identifier(s->class_name));
        FUZZ_CHECK(!s->function_name || path_is_identifier(s->function_name));
        break;
    case HANDLER_LLM:
        check_path(s->prompt_template, json_object_get(s->task, "promptTemplate"));
        FUZZ_CHECK(!s->overrides || json_is_object(s->overrides));
        break;
    case HANDLER_WORKFLOW:
        check_path(s->workflow_id,
                   json_object_get(json_object_get(s->context, "workflowInfo"), "workflowId"));
        FUZZ_CHECK(!s->run_id || strlen(s->run_id) <= 256);
        break;
    }
    /* What the user's function gets, sent to the sandbox as part of a frame. */
    json_t *ctx = app_user_context(s);
    FUZZ_CHECK(ctx != NULL);
    json_t *job =
        json_pack("{s:s, s:O, s:o}", "type", "jit", "requestData", s->request_data, "context", ctx);
    FUZZ_CHECK(job != NULL);
    fuzz_frame_round_trip(job);
    json_decref(job);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in = {data, size};
    size_t ct_len, accept_len;
    const uint8_t *ct_raw = fuzz_split(&in, '\n', &ct_len);
    const uint8_t *accept_raw = fuzz_split(&in, '\n', &accept_len);
    char *ct = fuzz_strndup(ct_raw, ct_len);
    char *accept = fuzz_strndup(accept_raw, accept_len);
    bool json_type = api_is_json_type(ct);
    FUZZ_CHECK(!json_type || strncasecmp(ct + strspn(ct, " "), "application/json", 16) == 0);
    (void)api_accepts(accept, "application/json");
    (void)api_accepts(accept, "text/event-stream");
    FUZZ_CHECK(api_accepts("", "application/json") && api_accepts(NULL, "text/event-stream"));

    /* The body as api_parse_json reads it. */
    json_t *body =
        json_loadb((const char *)in.data, in.len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
    if (body) {
        struct request_spec spec;
        struct sbx_error err = {0};
        if (request_parse(body, &spec, &err) == 0) {
            check_accepted(body, &spec);
        } else {
            FUZZ_CHECK(err.kind == SBX_ERR_INVALID && err.field && err.message && *err.message);
            struct http_reply reply = {0};
            api_reply_sbx_error(&reply, &err);
            FUZZ_CHECK(reply.status == api_status_of(SBX_ERR_INVALID) &&
                       json_is_object(reply.body));
            http_reply_done(&reply);
        }
        json_decref(body);
    }
    free(ct);
    free(accept);
    return 0;
}
