// SPDX-License-Identifier: MIT
/*
 * request — see request.h.
 */
#include "handlers/request.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "handlers/app.h"
#include "egress/proxy.h"
#include "exec/run.h"
#include "pool/profile.h"
#include "util/b64.h"
#include "util/macros.h"
#include "util/path.h"
#include "util/url.h"

const char *handler_name(enum handler_type h)
{
    static const char *const names[] = {HANDLER_TYPE_NAMES};
    return names[h];
}

/* INVALID_REQUEST naming field ("": the body itself) and what is wrong with it. */
static int request_fail(struct sbx_error *err, const char *field, const char *message)
{
    sbx_error_set(err, SBX_ERR_INVALID, "INVALID_REQUEST", field, "%s%s%s", field,
                  *field ? ": " : "", message);
    return -EINVAL;
}

/* A string member: required or optional; never empty, never with NUL inside. */
static int request_string(json_t *obj, const char *key, const char *field, bool required,
                          size_t max, const char **ret, struct sbx_error *err)
{
    json_t *v = json_object_get(obj, key);
    *ret = NULL;
    if (!v || json_is_null(v))
        return required ? request_fail(err, field, "is required") : 0;
    if (!json_is_string(v))
        return request_fail(err, field, "must be a string");
    size_t len = json_string_length(v);
    if (len == 0)
        return request_fail(err, field, "must not be empty");
    if (len > max)
        return request_fail(err, field, "is too long");
    if (memchr(json_string_value(v), '\0', len))
        return request_fail(err, field, "must not contain NUL bytes");
    *ret = json_string_value(v);
    return 0;
}

static int request_positive(json_t *obj, const char *key, const char *field, int64_t min,
                            int64_t *ret, struct sbx_error *err)
{
    json_t *v = json_object_get(obj, key);
    *ret = 0;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v))
        return request_fail(err, field, "must be an integer");
    if (json_integer_value(v) < min)
        return request_fail(err, field, min > 1 ? "is below the minimum" : "must be positive");
    *ret = json_integer_value(v);
    return 0;
}

static int request_identifier(json_t *obj, const char *key, const char *field, bool required,
                              const char **ret, struct sbx_error *err)
{
    int r = request_string(obj, key, field, required, 255, ret, err);
    if (r < 0)
        return r;
    if (*ret && !path_is_identifier(*ret))
        return request_fail(err, field, "must be a Python identifier");
    return 0;
}

static int request_path(json_t *obj, const char *key, const char *field, bool required,
                        const char **ret, struct sbx_error *err)
{
    json_t *v = json_object_get(obj, key);
    *ret = NULL;
    if (!v || json_is_null(v))
        return required ? request_fail(err, field, "is required") : 0;
    if (!json_is_string(v))
        return request_fail(err, field, "must be a string");
    const char *why = path_check_relative(json_string_value(v), json_string_length(v));
    if (why)
        return request_fail(err, field, why);
    *ret = json_string_value(v);
    return 0;
}

/* taskDetails.files, taskDetails.collect and taskDetails.profile (JIT and EXECUTOR). */
static int request_data_work(struct request_spec *s, struct sbx_error *err)
{
    json_t *t = s->task;
    json_t *profile = json_object_get(t, "profile");
    if (profile && !json_is_null(profile)) {
        if (!json_is_string(profile))
            return request_fail(err, "context.taskDetails.profile", "must be a string");
        s->profile = json_string_value(profile);
        if (strcmp(s->profile, "default") != 0 && !profile_name_ok(s->profile))
            return request_fail(err, "context.taskDetails.profile", "is not a profile name");
    }
    json_t *files = json_object_get(t, "files");
    if (files && !json_is_null(files)) {
        if (!json_is_object(files))
            return request_fail(err, "context.taskDetails.files",
                                "must be an object of relative path: base64");
        if (json_object_size(files) > REQUEST_MAX_FILES)
            return request_fail(err, "context.taskDetails.files", "has too many entries");
        const char *path;
        json_t *v;
        json_object_foreach(files, path, v)
        {
            if (path_check_plain(path, strlen(path)))
                return request_fail(err, "context.taskDetails.files",
                                    "names must be plain relative paths (no '..', '.', '//' "
                                    "or leading '/')");
            char *data = NULL;
            size_t n = 0;
            if (!json_is_string(v) ||
                b64_decode(json_string_value(v), json_string_length(v), &data, &n) < 0)
                return request_fail(err, "context.taskDetails.files",
                                    "each value must be a base64 string");
            free(data);
            s->files_bytes += n;
        }
        s->files = files;
    }
    json_t *collect = json_object_get(t, "collect");
    if (collect && !json_is_null(collect)) {
        if (!json_is_array(collect) || json_array_size(collect) > REQUEST_MAX_COLLECT)
            return request_fail(err, "context.taskDetails.collect",
                                "must be an array of at most 64 glob patterns");
        size_t i;
        json_t *g;
        json_array_foreach(collect, i, g)
        {
            if (!json_is_string(g) ||
                path_check_relative(json_string_value(g), json_string_length(g)))
                return request_fail(err, "context.taskDetails.collect",
                                    "each pattern must be a relative path without '..'");
        }
        s->collect = collect;
    }
    return 0;
}

static int request_endpoint(const char *ep, struct sbx_error *err)
{
    if (strcmp(ep, "local") == 0 || strncmp(ep, "http://", 7) == 0 ||
        strncmp(ep, "https://", 8) == 0)
        return 0;
    return request_fail(err, "context.mcp_endpoint", "must be an http(s) URL or \"local\"");
}

static int request_task(struct request_spec *s, struct sbx_error *err)
{
    json_t *t = s->task;
    int r = 0;
    switch (s->handler) {
    case HANDLER_JIT:
        if ((r = request_path(t, "script", "context.taskDetails.script", true, &s->script, err)) ||
            (r = request_identifier(t, "function", "context.taskDetails.function", true,
                                    &s->function, err)))
            return r;
        break;
    case HANDLER_EXECUTOR: {
        json_t *code = json_object_get(t, "code");
        if (!code || json_is_null(code))
            return request_fail(err, "context.taskDetails.code", "is required");
        if (!json_is_string(code))
            return request_fail(err, "context.taskDetails.code", "must be a string");
        if (json_string_length(code) > EXEC_MAX_CODE)
            return request_fail(err, "context.taskDetails.code", "is too long");
        if (memchr(json_string_value(code), '\0', json_string_length(code)))
            return request_fail(err, "context.taskDetails.code", "must not contain NUL bytes");
        s->code = json_string_value(code);
        if ((r = request_identifier(t, "className", "context.taskDetails.className", false,
                                    &s->class_name, err)) ||
            (r = request_identifier(t, "methodName", "context.taskDetails.methodName", false,
                                    &s->method_name, err)) ||
            (r = request_identifier(t, "functionName", "context.taskDetails.functionName", false,
                                    &s->function_name, err)))
            return r;
        if (s->class_name && !s->method_name)
            return request_fail(err, "context.taskDetails.methodName",
                                "is required with className");
        if (s->method_name && !s->class_name)
            return request_fail(err, "context.taskDetails.className",
                                "is required with methodName");
        if (s->class_name && s->function_name)
            return request_fail(err, "context.taskDetails.functionName",
                                "cannot be combined with className");
        json_t *p = json_object_get(t, "methodParams");
        if (p && !json_is_null(p) && !json_is_object(p))
            return request_fail(err, "context.taskDetails.methodParams", "must be an object");
        s->method_params = p && json_is_object(p) ? p : NULL;
        break;
    }
    case HANDLER_LLM: {
        if ((r = request_path(t, "promptTemplate", "context.taskDetails.promptTemplate", true,
                              &s->prompt_template, err)))
            return r;
        json_t *o = json_object_get(t, "overrides");
        if (o && !json_is_null(o) && !json_is_object(o))
            return request_fail(err, "context.taskDetails.overrides", "must be an object");
        s->overrides = o && json_is_object(o) ? o : NULL;
        break;
    }
    case HANDLER_WORKFLOW:
        break;
    }
    json_t *net = json_object_get(t, "network");
    if (net && !json_is_null(net)) {
        if (s->handler != HANDLER_JIT && s->handler != HANDLER_EXECUTOR)
            return request_fail(err, "context.taskDetails.network",
                                "only JIT and EXECUTOR executions may have a network policy");
        if (!json_is_object(net))
            return request_fail(err, "context.taskDetails.network",
                                "must be an object {\"allow\": [patterns]}");
        s->network = net;
    }
    if ((s->handler == HANDLER_JIT || s->handler == HANDLER_EXECUTOR) &&
        (r = request_data_work(s, err)))
        return r;
    if (t && ((r = request_positive(t, "timeoutMs", "context.taskDetails.timeoutMs", 1,
                                    &s->timeout_ms, err)) ||
              (r = request_positive(t, "memoryMb", "context.taskDetails.memoryMb", 16,
                                    &s->memory_mb, err))))
        return r;
    return 0;
}

int request_parse(json_t *body, struct request_spec *s, struct sbx_error *err)
{
    *s = (struct request_spec){0};
    int r;
    if (!json_is_object(body))
        return request_fail(err, "", "the body must be a JSON object");
    if ((r = request_string(body, "requestId", "requestId", true, REQUEST_MAX_ID, &s->request_id,
                            err)))
        return r;
    s->request_data = json_object_get(body, "requestData");
    if (!s->request_data)
        return request_fail(err, "requestData", "is required");
    if (!json_is_object(s->request_data))
        return request_fail(err, "requestData", "must be an object");
    const char *source;
    if ((r = request_string(s->request_data, "source", "requestData.source", true, 256, &source,
                            err)))
        return r;
    s->context = json_object_get(body, "context");
    if (!s->context)
        return request_fail(err, "context", "is required");
    if (!json_is_object(s->context))
        return request_fail(err, "context", "must be an object");
    if ((r = request_string(s->context, "mcp_endpoint", "context.mcp_endpoint", true, 2048,
                            &s->endpoint, err)) ||
        (r = request_endpoint(s->endpoint, err)))
        return r;
    const char *ht;
    if ((r = request_string(s->context, "handlerType", "context.handlerType", true, 32, &ht, err)))
        return r;
    bool known = false;
    for (int i = 0; i < HANDLER_COUNT; i++)
        if (strcmp(ht, handler_name((enum handler_type)i)) == 0) {
            s->handler = (enum handler_type)i;
            known = true;
        }
    if (!known) {
#define HANDLER_LISTED(name) ", " #name
        static const char listed[] = HANDLER_TYPES(HANDLER_LISTED); /* ", JIT, EXECUTOR, ..." */
#undef HANDLER_LISTED
        sbx_error_set(err, SBX_ERR_INVALID, "INVALID_REQUEST", "context.handlerType",
                      "context.handlerType: must be one of %s", listed + 2);
        return -EINVAL;
    }
    s->handler_name = handler_name(s->handler);
    bool needs_app = s->handler != HANDLER_EXECUTOR;
    if ((r = request_string(s->context, "appId", "context.appId", needs_app, 256, &s->app_id, err)))
        return r;
    if (s->app_id && path_check_component(s->app_id, strlen(s->app_id)))
        return request_fail(err, "context.appId", "must not contain '/' or be '.' or '..'");
    if ((r = request_string(s->context, "componentId", "context.componentId", false, 256,
                            &s->component_id, err)) ||
        (r = request_string(s->context, "traceId", "context.traceId", false, 256, &s->trace_id,
                            err)))
        return r;
    s->task = json_object_get(s->context, "taskDetails");
    if (s->task && json_is_null(s->task))
        s->task = NULL;
    if (s->task && !json_is_object(s->task))
        return request_fail(err, "context.taskDetails", "must be an object");
    if (!s->task && s->handler != HANDLER_WORKFLOW)
        return request_fail(err, "context.taskDetails", "is required");
    if (s->handler == HANDLER_WORKFLOW) {
        json_t *wi = json_object_get(s->context, "workflowInfo");
        if (!wi)
            return request_fail(err, "context.workflowInfo", "is required");
        if (!json_is_object(wi))
            return request_fail(err, "context.workflowInfo", "must be an object");
        if ((r = request_path(wi, "workflowId", "context.workflowInfo.workflowId", true,
                              &s->workflow_id, err)) ||
            (r = request_string(wi, "stepId", "context.workflowInfo.stepId", false, 256,
                                &s->step_id, err)) ||
            (r = request_string(wi, "runId", "context.workflowInfo.runId", false, 256, &s->run_id,
                                err)))
            return r;
        json_t *st = json_object_get(wi, "state");
        if (st && !json_is_null(st) && !json_is_object(st))
            return request_fail(err, "context.workflowInfo.state", "must be an object");
        s->workflow_state = st && json_is_object(st) ? st : NULL;
    }
    return request_task(s, err);
}

/* What this server can give: a framework endpoint it may call, a network policy within its
 * ceiling, a profile it has, files that fit in a sandbox's /tmp. */
static int request_check_server(struct app *a, struct request_spec *s, struct sbx_error *err)
{
    /* No connection is made: an endpoint is where sandboxd fetches code and sends results, and
     * a request must not aim it anywhere. */
    if (!framework_endpoint_allowed(a->fw, s->endpoint)) {
        _cleanup_free_ char *shown = url_redact(s->endpoint);
        return sbx_error_errno(err, EPERM, SBX_ERR_FORBIDDEN, "FRAMEWORK_NOT_ALLOWED",
                               "context.mcp_endpoint",
                               "context.mcp_endpoint: %s is not an allowed framework endpoint "
                               "(see --framework-allow)",
                               shown ? shown : "the endpoint");
    }
    int r;
    if (s->network &&
        (r = egress_network_parse(a->egress ? egress_proxy_config(a->egress) : NULL, s->network,
                                  "context.taskDetails.network", &s->egress, err)) < 0)
        return r;
    if (s->profile && strcmp(s->profile, "default") != 0 &&
        profiles_lookup(a->profiles, s->profile, &s->pool, &s->profile_memory_mb) < 0)
        return sbx_error_errno(err, EINVAL, SBX_ERR_INVALID, "INVALID_REQUEST",
                               "context.taskDetails.profile",
                               "context.taskDetails.profile: no such profile (GET /healthz lists "
                               "them under \"profiles\")");
    /* With a network policy, the pool is one of network cells: the profile's or the server's
     * (NULL: a fresh cell). */
    if (s->egress)
        s->pool = s->pool ? profiles_network_pool(a->profiles, s->profile) : a->network_pool;
    if (s->files_bytes > a->jail->tmp_bytes)
        return sbx_error_errno(err, EFBIG, SBX_ERR_TOO_LARGE, "FILES_TOO_LARGE",
                               "context.taskDetails.files",
                               "context.taskDetails.files: the files do not fit in the sandbox's "
                               "/tmp (--tmp-size-mb)");
    return 0;
}

int request_validate(struct app *a, json_t *body, struct request_spec *s, struct sbx_error *err)
{
    int r = request_parse(body, s, err);
    return r < 0 ? r : request_check_server(a, s, err);
}

void request_done(struct request_spec *s)
{
    egress_policy_free(s->egress);
    s->egress = NULL;
}
