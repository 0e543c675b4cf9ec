// SPDX-License-Identifier: MIT
/*
 * workflow — see workflow.h.
 *
 * The document is untrusted: the YAML conversion (handlers/yaml.c) caps depth
 * and the expanded size (aliases count with the size of what they repeat, so
 * a "billion laughs" document is refused instead of exploding later), paths
 * and conditions are checked before anything runs (handlers/validate.c, in
 * linear time; handlers/cache.c keeps what passed, by content), and every run is
 * bounded by maxSteps.
 */
#include "handlers/workflow.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "framework/defs.h"
#include "response/response.h"
#include "handlers/cache.h"
#include "handlers/template.h"
#include "handlers/yaml.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/fmt.h"

/* ---- paths and conditions ----------------------------------------------------------------- */

json_t *workflow_path(json_t *root, const char *path)
{
    if (!path || path[0] != '$')
        return NULL;
    json_t *cur = root;
    const char *p = path + 1;
    char key[256];
    while (*p && cur) {
        if (*p == '.') {
            p++;
            size_t n = strcspn(p, ".[");
            if (n == 0 || n >= sizeof(key))
                return NULL;
            memcpy(key, p, n);
            key[n] = '\0';
            p += n;
            if (json_is_array(cur) && isdigit((unsigned char)key[0])) {
                char *end;
                unsigned long idx = strtoul(key, &end, 10);
                cur = *end ? NULL : json_array_get(cur, idx);
            } else {
                cur = json_object_get(cur, key);
            }
        } else if (*p == '[') {
            p++;
            if (*p == '\'' || *p == '"') {
                char q = *p++;
                const char *close = strchr(p, q);
                if (!close || close[1] != ']' || (size_t)(close - p) >= sizeof(key))
                    return NULL;
                memcpy(key, p, (size_t)(close - p));
                key[close - p] = '\0';
                cur = json_object_get(cur, key);
                p = close + 2;
            } else {
                char *end;
                unsigned long idx = strtoul(p, &end, 10);
                if (end == p || *end != ']')
                    return NULL;
                cur = json_array_get(cur, idx);
                p = end + 1;
            }
        } else {
            return NULL;
        }
    }
    return cur;
}

static bool wf_is_ref(json_t *v)
{
    const char *s = json_string_value(v);
    return s && s[0] == '$' && s[1] == '.';
}

/* What v costs against a budget (a node WORKFLOW_NODE_BYTES, plus its text and its keys);
 * SIZE_MAX as soon as it exceeds max, so that a large value is not walked to its end. */
static size_t wf_cost(const json_t *v, size_t max)
{
    size_t cost = WORKFLOW_NODE_BYTES;
    if (json_is_string(v))
        cost += json_string_length(v);
    const char *k;
    size_t klen, i;
    json_t *m;
    if (json_is_object(v)) {
        json_object_keylen_foreach((json_t *)v, k, klen, m)
        {
            size_t c = cost > max ? SIZE_MAX : wf_cost(m, max - cost);
            if (c == SIZE_MAX || klen > max - cost - c)
                return SIZE_MAX;
            cost += c + klen;
        }
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, m)
        {
            size_t c = cost > max ? SIZE_MAX : wf_cost(m, max - cost);
            if (c == SIZE_MAX || c > max - cost)
                return SIZE_MAX;
            cost += c;
        }
    }
    return cost > max ? SIZE_MAX : cost;
}

static int wf_take(size_t *budget, size_t cost)
{
    if (cost > *budget)
        return -E2BIG;
    *budget -= cost;
    return 0;
}

int workflow_resolve(json_t *root, json_t *value, size_t *budget, json_t **ret)
{
    *ret = NULL;
    json_t *out = NULL;
    int r = 0;
    if (!value || wf_is_ref(value)) {
        json_t *found = value ? workflow_path(root, json_string_value(value)) : NULL;
        r = wf_take(budget, found ? wf_cost(found, *budget) : WORKFLOW_NODE_BYTES);
        if (r == 0)
            out = found ? json_deep_copy(found) : json_null();
    } else if (json_is_object(value)) {
        const char *k;
        size_t klen;
        json_t *v, *c;
        r = wf_take(budget, WORKFLOW_NODE_BYTES);
        out = r == 0 ? json_object() : NULL;
        json_object_keylen_foreach(value, k, klen, v)
        {
            if (!out || (r = wf_take(budget, klen)) < 0 ||
                (r = workflow_resolve(root, v, budget, &c)) < 0)
                break;
            json_object_setn_new_nocheck(out, k, klen, c);
        }
    } else if (json_is_array(value)) {
        size_t i;
        json_t *v, *c;
        r = wf_take(budget, WORKFLOW_NODE_BYTES);
        out = r == 0 ? json_array() : NULL;
        json_array_foreach(value, i, v)
        {
            if (!out || (r = workflow_resolve(root, v, budget, &c)) < 0)
                break;
            json_array_append_new(out, c);
        }
    } else {
        r = wf_take(budget, wf_cost(value, *budget));
        if (r == 0)
            out = json_deep_copy(value);
    }
    if (r == 0 && !out)
        r = -ENOMEM;
    if (r < 0) {
        json_decref(out);
        return r;
    }
    *ret = out;
    return 0;
}

static bool wf_equal(json_t *a, json_t *b)
{
    if (!a || !b)
        return false;
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b);
    return json_equal(a, b);
}

/* and (is_and) or or of the conditions in list */
static int wf_when_list(json_t *root, json_t *list, bool is_and, bool *ret)
{
    if (!json_is_array(list))
        return -EINVAL;
    bool acc = is_and;
    size_t i;
    json_t *c;
    json_array_foreach(list, i, c)
    {
        bool v;
        int r = workflow_when(root, c, &v);
        if (r < 0)
            return r;
        acc = is_and ? acc && v : acc || v;
    }
    *ret = acc;
    return 0;
}

int workflow_when(json_t *root, json_t *cond, bool *ret)
{
    if (!json_is_object(cond))
        return -EINVAL;
    json_t *list;
    if ((list = json_object_get(cond, "and")) || (list = json_object_get(cond, "or")))
        return wf_when_list(root, list, json_object_get(cond, "and") != NULL, ret);
    if ((list = json_object_get(cond, "not"))) {
        bool v = false; /* not: [a, b] is "not (a and b)" */
        int r = json_is_array(list) ? wf_when_list(root, list, true, &v)
                                    : workflow_when(root, list, &v);
        *ret = !v;
        return r;
    }
    const char *path = json_string_value(json_object_get(cond, "path"));
    if (!path)
        return -EINVAL;
    json_t *v = workflow_path(root, path);
    json_t *arg;
    if ((arg = json_object_get(cond, "equals")))
        *ret = wf_equal(v, arg);
    else if ((arg = json_object_get(cond, "notEquals")))
        *ret = !wf_equal(v, arg);
    else if ((arg = json_object_get(cond, "lessThan")) ||
             (arg = json_object_get(cond, "greaterThan"))) {
        bool less = json_object_get(cond, "lessThan") != NULL;
        int cmp;
        if (v && json_is_number(v) && json_is_number(arg))
            cmp = (json_number_value(v) > json_number_value(arg)) -
                  (json_number_value(v) < json_number_value(arg));
        else if (json_is_string(v) && json_is_string(arg))
            cmp = strcmp(json_string_value(v), json_string_value(arg));
        else {
            *ret = false;
            return 0;
        }
        *ret = less ? cmp < 0 : cmp > 0;
    } else if ((arg = json_object_get(cond, "exists")))
        *ret = (v != NULL) == json_is_true(arg);
    else if ((arg = json_object_get(cond, "in"))) {
        if (!json_is_array(arg))
            return -EINVAL;
        bool found = false;
        size_t i;
        json_t *x;
        json_array_foreach(arg, i, x) found = found || wf_equal(v, x);
        *ret = found;
    } else
        return -EINVAL;
    return 0;
}

/* ---- running ------------------------------------------------------------------------------ */

struct wf_run {
    struct app *a;
    const struct request_spec *s;
    json_t *wf;
    json_t *root;     /* {requestData, context, steps, state} */
    json_t *trace;    /* [{stepId, type, status, durationMs}] */
    size_t built_max; /* what references may copy in all (WORKFLOW_MAX_BUILT_BYTES) */
    size_t budget;    /* what they may still copy */
    struct framework_stats fst;
    struct flow_tokens tokens;
    int64_t start_us;
};

static json_t *wf_error_body(struct wf_run *w, const char *code, const char *step, json_t *details,
                             const char *fmt, ...) _printf_(5, 6);
static json_t *wf_error_body(struct wf_run *w, const char *code, const char *step, json_t *details,
                             const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = fmt_va(fmt, ap);
    va_end(ap);
    if (!details)
        details = json_object();
    json_object_set_new(details, "workflowId", json_string(w->s->workflow_id));
    if (step)
        json_object_set_new(details, "stepId", json_string(step));
    json_t *body = response_error(w->s->request_id, code, msg ? msg : code, details);
    free(msg);
    return body;
}

/* Outcome of one step. */
struct wf_step_result {
    json_t *output;        /* on success */
    json_t *error;         /* on failure: the error response body to return */
    enum sbx_errkind kind; /* NONE, or the step's request failed (UNAVAILABLE, INTERNAL) */
};

static json_t *wf_step_context(struct wf_run *w, const char *id)
{
    json_t *ctx = app_user_context(w->s);
    json_object_set_new(ctx, "workflowId", json_string(w->s->workflow_id));
    json_object_set_new(ctx, "stepId", json_string(id));
    json_object_set(ctx, "state", json_object_get(w->root, "state"));
    return ctx;
}

/* Turn a JIT/LLM reply into a step result. */
static void wf_from_reply(struct wf_run *w, const char *id, struct app_reply *rep,
                          struct wf_step_result *res)
{
    if (!rep->body) /* the step's reply could not be built: not a step that returned null */
        app_reply_internal(rep, "out of memory: the step's reply could not be built");
    if (rep->kind != SBX_ERR_NONE) {
        res->kind = rep->kind;
        res->error = TAKE_PTR(rep->body);
        return;
    }
    const char *rt = json_string_value(json_object_get(rep->body, "resultType"));
    json_t *data = json_object_get(rep->body, "data");
    if (rt && strcmp(rt, "error") == 0) {
        json_t *details = json_object_get(data, "details");
        details = json_is_object(details) ? json_deep_copy(details) : json_object();
        const char *code = json_string_value(json_object_get(data, "code"));
        const char *msg = json_string_value(json_object_get(data, "message"));
        res->error = wf_error_body(w, code ? code : "WORKFLOW_ERROR", id, details, "step %s: %s",
                                   id, msg ? msg : "failed");
    } else {
        res->output = json_incref(data ? data : json_null());
    }
    json_decref(rep->body);
    rep->body = NULL;
}

/* A reference could not be copied: over the budget, or out of memory. */
static json_t *wf_build_error(struct wf_run *w, const char *id, int r)
{
    if (r == -E2BIG)
        return wf_error_body(w, "WORKFLOW_ERROR", id,
                             json_pack("{s:I}", "limitBytes", (json_int_t)w->built_max),
                             "step %s: the values this workflow builds exceed %g MiB (every "
                             "$. reference copies what it points to)",
                             id, (double)w->built_max / (1 << 20));
    return wf_error_body(w, "WORKFLOW_ERROR", id, NULL, "step %s: out of memory", id);
}

static void wf_run_step(struct wf_run *w, const char *id, json_t *step, struct wf_step_result *res)
{
    *res = (struct wf_step_result){.kind = SBX_ERR_NONE};
    const char *type = json_string_value(json_object_get(step, "type"));
    json_t *mapping = json_object_get(step, "inputMapping");
    json_t *input = NULL;
    int r = mapping ? workflow_resolve(w->root, mapping, &w->budget, &input) : 0;
    if (r < 0) {
        res->error = wf_build_error(w, id, r);
        return;
    }
    struct app_reply rep = {0};
    if (strcmp(type, "jit") == 0) {
        json_t *ctx = wf_step_context(w, id);
        app_jit_call(w->a, w->s, json_string_value(json_object_get(step, "script")),
                     json_string_value(json_object_get(step, "function")),
                     input ? input : w->s->request_data, ctx, &w->fst, &rep);
        json_decref(ctx);
        wf_from_reply(w, id, &rep, res);
    } else if (strcmp(type, "llm") == 0) {
        flow_llm_call(w->a, w->s, json_string_value(json_object_get(step, "promptTemplate")),
                      input ? input : json_object_get(w->s->request_data, "body"),
                      json_object_get(step, "overrides"), &w->fst, &w->tokens, &rep);
        wf_from_reply(w, id, &rep, res);
    } else if (strcmp(type, "mcp") == 0) {
        const char *tool = json_string_value(json_object_get(step, "tool"));
        json_t *params = NULL;
        r = workflow_resolve(w->root, json_object_get(step, "params"), &w->budget, &params);
        if (r == 0 && json_is_null(params)) {
            json_decref(params);
            params = json_object();
        }
        json_t *result = NULL;
        struct sbx_error err = {0};
        if (r < 0)
            res->error = wf_build_error(w, id, r);
        else if (framework_call(w->a->fw, w->s->endpoint, w->s->app_id, tool, params, &result, &err,
                                &w->fst) < 0)
            res->error =
                wf_error_body(w, "MCP_ERROR", id, sbx_error_details(&err, tool),
                              "step %s: %s failed: %s", id, tool, err.message ? err.message : "?");
        else
            res->output = result ? result : json_null();
        sbx_error_clear(&err);
        json_decref(params);
    } else { /* control */
        json_t *out = json_object_get(step, "output");
        r = out ? workflow_resolve(w->root, out, &w->budget, &res->output) : 0;
        if (r < 0)
            res->error = wf_build_error(w, id, r);
        else if (!out)
            res->output = input ? json_incref(input) : json_null();
    }
    json_decref(input);
}

/* The next step after id, or NULL at the end; -EINVAL when no transition applies. */
static int wf_next(struct wf_run *w, json_t *step, const char **ret_next)
{
    *ret_next = NULL;
    if (json_is_true(json_object_get(step, "end")))
        return 0;
    const char *next = json_string_value(json_object_get(step, "next"));
    if (next) {
        *ret_next = next;
        return 0;
    }
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(step, "transitions"), i, t)
    {
        json_t *when = json_object_get(t, "when");
        bool match = true;
        if (when && workflow_when(w->root, when, &match) < 0)
            return -EINVAL;
        if (match) {
            *ret_next = json_string_value(json_object_get(t, "next"));
            return 0;
        }
    }
    return -ENOENT;
}

static json_t *wf_final_body(struct wf_run *w, json_t *output)
{
    json_t *code = json_object_get(output, "statusCode");
    if (json_is_object(output) && json_is_integer(code) && json_integer_value(code) >= 100 &&
        json_integer_value(code) <= 599) {
        json_t *headers = json_object_get(output, "headers");
        const char *enc = json_string_value(json_object_get(output, "bodyEncoding"));
        json_t *body = json_object_get(output, "body");
        json_t *data =
            json_pack("{s:O, s:o, s:o, s:s}", "statusCode", code, "headers",
                      json_is_object(headers) ? json_incref(headers) : json_object(), "body",
                      body ? json_incref(body) : json_null(), "bodyEncoding", enc ? enc : "utf-8");
        return json_pack("{s:s, s:s, s:o}", "requestId", w->s->request_id, "resultType",
                         "httpResponse", "data", data);
    }
    return json_pack("{s:s, s:s, s:O}", "requestId", w->s->request_id, "resultType", "generic",
                     "data", output);
}

/* -ENOMEM when a part could not be added (the caller answers INTERNAL). */
static int wf_add_metrics(struct wf_run *w, json_t *body)
{
    if (!body)
        return 0;
    json_t *metrics = json_array();
    int r = metrics ? 0 : -ENOMEM;
    r = r
            ?: response_metric(metrics, "sandbox.duration", "ms",
                               (double)(clock_mono_us() - w->start_us) / 1000.0);
    r = r ?: response_metric(metrics, "workflow.steps", "1", (double)json_array_size(w->trace));
    r = r ?: response_metric(metrics, "mcp.calls", "1", w->fst.calls);
    r = r ?: response_metric(metrics, "mcp.duration", "ms", (double)w->fst.us / 1000.0);
    r = r ?: flow_tokens_metrics(metrics, &w->tokens);
    if (r < 0) {
        json_decref(metrics);
        return r;
    }
    if (json_object_set_new(body, "metrics", metrics) < 0 ||
        json_object_set_new(
            body, "workflow",
            json_pack("{s:s, s:O}", "workflowId", w->s->workflow_id, "steps", w->trace)) < 0)
        return -ENOMEM;
    return 0;
}

/* Step mode keeps the outputs of earlier steps through core.state.*RuntimeValue. */
static char *wf_state_key(struct wf_run *w)
{
    const char *run = w->s->run_id     ? w->s->run_id
                      : w->s->trace_id ? w->s->trace_id
                                       : w->s->request_id;
    char *key = NULL;
    return asprintf(&key, "sandboxd/workflow/%s/%s", w->s->workflow_id, run) < 0 ? NULL : key;
}

static void wf_load_steps(struct wf_run *w)
{
    _cleanup_free_ char *key = wf_state_key(w);
    json_t *params = json_pack("{s:s, s:s?}", "key", key ? key : "", "app_id", w->s->app_id);
    if (!params) {
        log_warn("workflow: the earlier steps of %s cannot be asked for (out of memory)",
                 key ? key : "?");
        return;
    }
    json_t *res = NULL;
    struct sbx_error err = {0};
    if (framework_call(w->a->fw, w->s->endpoint, w->s->app_id, "core.state.getRuntimeValue", params,
                       &res, &err, &w->fst) == 0) {
        json_t *steps = json_object_get(json_object_get(res, "value"), "steps");
        if (json_is_object(steps))
            json_object_set(w->root, "steps", steps);
    } else {
        log_info("workflow: no earlier steps of %s (%s)", key ? key : "?",
                 err.message ? err.message : "?");
    }
    json_decref(res);
    json_decref(params);
    sbx_error_clear(&err);
}

static void wf_save_steps(struct wf_run *w)
{
    _cleanup_free_ char *key = wf_state_key(w);
    json_t *params = json_pack("{s:s, s:{s:O}, s:s?}", "key", key ? key : "", "value", "steps",
                               json_object_get(w->root, "steps"), "app_id", w->s->app_id);
    if (!params) {
        log_warn("workflow: cannot keep the step outputs of %s (out of memory)", key ? key : "?");
        return;
    }
    json_t *res = NULL;
    struct sbx_error err = {0};
    if (framework_call(w->a->fw, w->s->endpoint, w->s->app_id, "core.state.setRuntimeValue", params,
                       &res, &err, &w->fst) < 0)
        log_warn("workflow: cannot keep the step outputs of %s: %s", key ? key : "?",
                 err.message ? err.message : "?");
    json_decref(res);
    json_decref(params);
    sbx_error_clear(&err);
}

static void wf_execute(struct wf_run *w, struct app_reply *ret)
{
    const struct request_spec *s = w->s;
    json_t *steps = json_object_get(w->wf, "steps");
    json_t *ms = json_object_get(w->wf, "maxSteps");
    int64_t max_steps = ms                             ? json_integer_value(ms)
                        : w->a->opt.max_workflow_steps ? (int64_t)w->a->opt.max_workflow_steps
                                                       : WORKFLOW_DEFAULT_MAX_STEPS;
    const char *cur =
        s->step_id ? s->step_id : json_string_value(json_object_get(w->wf, "startAt"));
    if (s->step_id && !json_object_get(steps, s->step_id)) {
        ret->body = wf_error_body(w, "WORKFLOW_ERROR", s->step_id, NULL,
                                  "the workflow has no step %s", s->step_id);
        return;
    }
    if (s->step_id)
        wf_load_steps(w);
    for (int64_t count = 1;; count++) {
        if (count > max_steps) {
            ret->body = wf_error_body(w, "WORKFLOW_ERROR", cur, NULL,
                                      "the workflow ran %lld steps, its limit (maxSteps)",
                                      (long long)max_steps);
            return;
        }
        json_t *step = json_object_get(steps, cur);
        int64_t t0 = clock_mono_us();
        struct wf_step_result res;
        wf_run_step(w, cur, step, &res);
        json_t *entry = json_pack("{s:s, s:s, s:s, s:f}", "stepId", cur, "type",
                                  json_string_value(json_object_get(step, "type")), "status",
                                  res.error ? "failed" : "completed", "durationMs",
                                  (double)(clock_mono_us() - t0) / 1000.0);
        if (json_array_append_new(w->trace, entry) < 0) { /* not a trace missing a step */
            json_decref(res.output);
            json_decref(res.error);
            app_reply_internal(ret, "out of memory: the workflow's trace could not be kept");
            return;
        }
        if (res.kind != SBX_ERR_NONE) {
            ret->kind = res.kind;
            ret->body = res.error;
            return;
        }
        if (res.error) {
            if (s->step_id) { /* step mode reports the failure as the step's outcome */
                json_t *data = json_object_get(res.error, "data");
                ret->body = json_pack("{s:s, s:s, s:{s:s, s:s, s:n, s:n, s:O}}", "requestId",
                                      s->request_id, "resultType", "workflowStep", "data", "stepId",
                                      cur, "status", "failed", "output", "nextStep", "error", data);
                json_decref(res.error);
            } else {
                ret->body = res.error;
            }
            return;
        }
        if (json_object_set_new(json_object_get(w->root, "steps"), cur,
                                json_pack("{s:O}", "output", res.output)) < 0) {
            /* later $.steps references to it would fail, for a reason they could not tell */
            json_decref(res.output);
            app_reply_internal(ret, "out of memory: a step's output could not be kept");
            return;
        }
        const char *next;
        int r = wf_next(w, step, &next);
        if (r < 0) {
            json_decref(res.output);
            ret->body = wf_error_body(w, "WORKFLOW_ERROR", cur, NULL,
                                      r == -ENOENT ? "step %s: no transition matched"
                                                   : "step %s: a condition is malformed",
                                      cur);
            return;
        }
        if (s->step_id) {
            wf_save_steps(w);
            ret->body =
                json_pack("{s:s, s:s, s:{s:s, s:s, s:o, s:s?, s:b}}", "requestId", s->request_id,
                          "resultType", "workflowStep", "data", "stepId", cur, "status",
                          "completed", "output", res.output, "nextStep", next, "end", next == NULL);
            return;
        }
        if (!next) {
            ret->body = wf_final_body(w, res.output);
            json_decref(res.output);
            return;
        }
        json_decref(res.output);
        cur = next;
    }
}

void flow_workflow_execute(struct app *a, const struct request_spec *s, struct app_reply *ret)
{
    *ret = (struct app_reply){.kind = SBX_ERR_NONE};
    struct wf_run w = {.a = a,
                       .s = s,
                       .start_us = clock_mono_us(),
                       .trace = json_array(),
                       .built_max = a->opt.workflow_max_built ? a->opt.workflow_max_built
                                                              : WORKFLOW_MAX_BUILT_BYTES};
    w.budget = w.built_max;
    struct defs_result def;
    _cleanup_sbx_error_ struct sbx_error err = {0};
    if (defs_get(a->defs, s->endpoint, s->app_id, s->workflow_id, &w.fst, &def, &err) < 0) {
        json_t *details = def.details ? json_incref(def.details) : json_object();
        ret->body =
            wf_error_body(&w, err.kind == SBX_ERR_NOT_FOUND ? "SCRIPT_NOT_FOUND" : "MCP_ERROR",
                          NULL, details, "%s", err.message ? err.message : "workflow unavailable");
        defs_result_done(&def);
        goto out;
    }
    char *text = NULL, *why = NULL;
    size_t len = 0;
    int r = defs_decode(def.content_b64, &text, &len);
    defs_result_done(&def);
    if (r < 0) {
        ret->body = wf_error_body(&w, "MCP_ERROR", NULL, NULL,
                                  "the definition of %s is not valid base64", s->workflow_id);
        goto out;
    }
    /* A document already validated (same bytes) is taken from the cache as it is. */
    unsigned char key[FLOW_CACHE_KEY_BYTES];
    flow_cache_key(text, len, key);
    w.wf = flow_cache_get(a->wf_cache, key);
    struct flow_yaml_info info = {0};
    const char *bad_step = NULL;
    if (!w.wf) {
        r = flow_yaml_load(text, len, NULL, &w.wf, &info, &why);
        if (r == 0)
            r = workflow_validate(w.wf, &why, &bad_step);
        if (r == 0)
            flow_cache_put(a->wf_cache, key, w.wf, info.bytes);
    }
    free(text);
    if (r < 0) {
        ret->body = wf_error_body(&w, "WORKFLOW_ERROR", bad_step, NULL, "%s: %s", s->workflow_id,
                                  why ? why : "invalid workflow");
        free(why);
        goto out;
    }
    w.root = json_pack("{s:O, s:O, s:{}, s:o}", "requestData", s->request_data, "context",
                       s->context, "steps", "state",
                       s->workflow_state ? json_incref(s->workflow_state) : json_object());
    if (w.root)
        wf_execute(&w, ret);
    else
        app_reply_internal(ret, "out of memory: the workflow's state could not be built");
out:
    if (ret->kind == SBX_ERR_NONE && wf_add_metrics(&w, ret->body) < 0)
        app_reply_internal(ret, "out of memory: the workflow's metrics could not be added");
    json_decref(w.wf);
    json_decref(w.root);
    json_decref(w.trace);
}
