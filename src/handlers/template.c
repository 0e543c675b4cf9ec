// SPDX-License-Identifier: MIT
/*
 * template — see template.h.
 */
#include "handlers/template.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "response/response.h"
#include "exec/cell.h"
#include "framework/llm.h"
#include "proto/frame.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/fmt.h"
#include "util/macros.h"
#include "handlers/yaml.h"

#define FLOW_MAX_LLM_CALLS 4 /* per template job: the runtime makes one */
int64_t flow_llm_timeout_ms(const struct app *a)
{
    return a->opt.llm_timeout_ms > 0 ? a->opt.llm_timeout_ms : LLM_DEFAULT_TIMEOUT_MS;
}

struct flow_llm_ctx {
    struct app *a;
    const struct request_spec *s;
    struct framework_stats *fst;
    struct flow_tokens *tokens;
};

static void flow_rpc_reply(struct cell *c, json_t *id, json_t *payload, const struct sbx_error *e)
{
    json_t *msg;
    if (e)
        msg = json_pack("{s:s, s:O, s:b, s:s, s:s, s:o?}", "type", "rpc_response", "id", id,
                        "success", 0, "error", e->message ? e->message : "failed", "errorKind",
                        sbx_upstream_name(e->upstream), "details",
                        sbx_error_details(e, "core.llm.generate"));
    else
        msg = json_pack("{s:s, s:O, s:b, s:O}", "type", "rpc_response", "id", id, "success", 1,
                        "payload", payload);
    if (msg && frame_write(c->proto_fd, msg, clock_mono_us() + 10 * 1000000) < 0)
        log_debug("template: the sandbox went away before the completion arrived");
    json_decref(msg);
}

static int flow_llm_on_message(void *userdata, struct cell *c, json_t *msg)
{
    struct flow_llm_ctx *x = userdata;
    const char *type = json_string_value(json_object_get(msg, "type"));
    if (!type || strcmp(type, "rpc_request") != 0)
        return 0;
    json_t *id = json_object_get(msg, "id");
    json_t *payload = json_object_get(msg, "payload");
    json_t *params = json_object_get(payload, "params");
    const char *what = json_string_value(json_object_get(payload, "type"));
    struct sbx_error err = {0};
    if (!id || !what || strcmp(what, "llm_generate") != 0 || !json_is_object(params)) {
        sbx_error_upstream(&err, SBX_UP_PROTOCOL, NULL, "a template may only ask for a completion");
        if (id)
            flow_rpc_reply(c, id, NULL, &err);
        sbx_error_clear(&err);
        return 0;
    }
    if (x->tokens->calls >= FLOW_MAX_LLM_CALLS) {
        sbx_error_upstream(&err, SBX_UP_PROTOCOL, NULL, "too many completions for one template");
        flow_rpc_reply(c, id, NULL, &err);
        sbx_error_clear(&err);
        return 0;
    }
    x->tokens->calls++;
    json_t *result = NULL;
    int r = framework_call_timeout(x->a->fw, x->s->endpoint, x->s->app_id, "core.llm.generate",
                                   params, flow_llm_timeout_ms(x->a), &result, &err, x->fst);
    if (r < 0) {
        flow_rpc_reply(c, id, NULL, &err);
    } else {
        json_t *usage = json_object_get(result, "usage");
        x->tokens->prompt += json_integer_value(json_object_get(usage, "promptTokens"));
        x->tokens->completion += json_integer_value(json_object_get(usage, "completionTokens"));
        flow_rpc_reply(c, id, result, NULL);
    }
    json_decref(result);
    sbx_error_clear(&err);
    return 0;
}

int flow_tokens_metrics(json_t *metrics, const struct flow_tokens *t)
{
    return response_metric(metrics, "llm.calls", "1", t->calls)
               ?: response_metric(metrics, "llm.tokens.prompt", "1", (double)t->prompt)
               ?: response_metric(metrics, "llm.tokens.completion", "1", (double)t->completion);
}

/* The template file parsed; on failure *ret is the TEMPLATE_ERROR (or MCP_ERROR) answer. */
static int flow_template_document(const struct request_spec *s, const char *path,
                                  const char *content_b64, json_t **ret_doc, struct app_reply *ret)
{
    _cleanup_free_ char *text = NULL, *why = NULL;
    size_t len = 0;
    if (defs_decode(content_b64, &text, &len) < 0) {
        ret->kind = SBX_ERR_NONE;
        ret->body = response_error(s->request_id, "MCP_ERROR", "the template is not valid base64",
                                   json_pack("{s:s}", "promptTemplate", path));
        return -EINVAL;
    }
    struct flow_yaml_info info;
    int r = flow_yaml_load(text, len, NULL, ret_doc, &info, &why);
    if (r < 0) {
        json_t *details = json_pack("{s:s, s:s}", "path", path, "reason", "yaml");
        if (info.line)
            json_object_set_new(details, "line", json_integer((json_int_t)info.line));
        char *msg = fmt_str("%s is not valid YAML: %s", path, why ? why : "out of memory");
        ret->kind = SBX_ERR_NONE;
        ret->body =
            response_error(s->request_id, "TEMPLATE_ERROR", msg ? msg : "invalid YAML", details);
        free(msg);
    }
    return r;
}

void flow_llm_call(struct app *a, const struct request_spec *s, const char *template_path,
                   json_t *input, json_t *overrides, struct framework_stats *fst,
                   struct flow_tokens *tokens, struct app_reply *ret)
{
    *ret = (struct app_reply){0};
    struct defs_result def;
    _cleanup_sbx_error_ struct sbx_error err = {0};
    if (defs_get(a->defs, s->endpoint, s->app_id, template_path, fst, &def, &err) < 0) {
        bool nf = err.kind == SBX_ERR_NOT_FOUND;
        json_t *details = def.details ? json_incref(def.details) : json_object();
        json_object_set_new(details, "promptTemplate", json_string(template_path));
        ret->kind = SBX_ERR_NONE;
        ret->body = response_error(s->request_id, nf ? "SCRIPT_NOT_FOUND" : "MCP_ERROR",
                                   err.message ? err.message : "template unavailable", details);
        defs_result_done(&def);
        return;
    }
    /* The YAML is read here, by the same loader as workflows (one dialect, docs/TEMPLATES.md);
     * the sandbox gets the document. */
    json_t *doc = NULL;
    int r = flow_template_document(s, template_path, def.content_b64, &doc, ret);
    defs_result_done(&def);
    if (r < 0)
        return;
    json_t *ctx = app_user_context(s);
    json_t *job = json_pack("{s:s, s:o, s:s, s:O, s:o, s:O, s:o}", "type", "template", "document",
                            doc, "path", template_path, "requestData", s->request_data, "context",
                            ctx, "input", input ? input : json_null(), "overrides",
                            overrides ? json_incref(overrides) : json_object());
    struct flow_llm_ctx x = {.a = a, .s = s, .fst = fst, .tokens = tokens};
    struct exec_hooks hooks = {.userdata = &x, .on_message = flow_llm_on_message};
    /* The time limit covers the completion, which may take a while. */
    int64_t timeout = s->timeout_ms ? s->timeout_ms : flow_llm_timeout_ms(a) + 10000;
    struct app_run run = {
        .job = job,
        .requested_timeout_ms = timeout,
        .requested_memory_mb = s->memory_mb,
        .hooks = &hooks,
        .pool = a->template_pool,
    };
    r = job ? app_run_job(a, &run) : -ENOMEM;
    app_reply_from_run(a, s, &run, r, RESPONSE_JIT, fst, ret);
    app_run_done(&run);
    json_decref(job);
    if (ret->kind == SBX_ERR_NONE && ret->body) {
        json_object_del(ret->body, "stdout"); /* a template prints nothing */
        json_object_del(ret->body, "stderr");
    }
}

void flow_llm_execute(struct app *a, const struct request_spec *s, struct app_reply *ret)
{
    struct framework_stats fst = {0};
    struct flow_tokens tokens = {0};
    json_t *input = json_object_get(s->task, "input");
    if (!input)
        input = json_object_get(s->request_data, "body");
    flow_llm_call(a, s, s->prompt_template, input, s->overrides, &fst, &tokens, ret);
    json_t *metrics = json_object_get(ret->body, "metrics");
    if (json_is_array(metrics) && flow_tokens_metrics(metrics, &tokens) < 0)
        app_reply_internal(ret, "out of memory");
}
