// SPDX-License-Identifier: MIT
/*
 * llm — see llm.h.
 */
#include "framework/llm.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "framework/httpc.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/jdump.h"
#include "util/url.h"

struct llm {
    char *url;
    char *shown_url; /* url without userinfo and query, for messages */
    char *model;
    char *auth_header;
    int64_t timeout_ms;
    size_t max_response;
};

int llm_new(const struct llm_options *opt, struct llm **ret)
{
    struct llm *l = calloc(1, sizeof(*l));
    if (!l)
        return -ENOMEM;
    l->timeout_ms = opt->timeout_ms ? opt->timeout_ms : LLM_DEFAULT_TIMEOUT_MS;
    l->max_response = opt->max_response;
    if (opt->url) {
        size_t n = strlen(opt->url);
        while (n && opt->url[n - 1] == '/')
            n--;
        if (asprintf(&l->url, "%.*s/chat/completions", (int)n, opt->url) < 0)
            l->url = NULL;
    }
    l->model = strdup(opt->model ? opt->model : (opt->url ? "default" : "echo"));
    if (opt->api_key && *opt->api_key &&
        asprintf(&l->auth_header, "Authorization: Bearer %s", opt->api_key) < 0)
        l->auth_header = NULL;
    if (l->url)
        l->shown_url = url_redact(l->url);
    if ((opt->url && (!l->url || !l->shown_url)) || !l->model) {
        llm_free(l);
        return -ENOMEM;
    }
    *ret = l;
    return 0;
}

void llm_free(struct llm *l)
{
    if (!l)
        return;
    free(l->url);
    free(l->shown_url);
    free(l->model);
    free(l->auth_header);
    free(l);
}

static json_int_t llm_words(const char *s)
{
    json_int_t n = 0;
    bool in = false;
    for (; s && *s; s++) {
        bool sp = isspace((unsigned char)*s);
        if (!sp && !in)
            n++;
        in = !sp;
    }
    return n;
}

static int llm_echo(struct llm *l, const char *prompt, const char *system, const char *model,
                    bool json_format, json_t **ret)
{
    char *completion = NULL;
    if (json_format) {
        json_error_t e;
        json_t *parsed = json_loads(prompt, JSON_DECODE_ANY, &e);
        if (parsed) {
            completion = jdump(parsed, JSON_COMPACT, NULL);
            json_decref(parsed);
        } else {
            json_t *w = json_pack("{s:s}", "echo", prompt);
            completion = w ? jdump(w, JSON_COMPACT, NULL) : NULL;
            json_decref(w);
        }
    } else {
        completion = strdup(prompt);
    }
    if (!completion)
        return -ENOMEM;
    json_int_t ptok = llm_words(prompt) + llm_words(system);
    *ret = json_pack("{s:s, s:s, s:{s:I, s:I}}", "completion", completion, "model",
                     model ? model : l->model, "usage", "promptTokens", ptok, "completionTokens",
                     llm_words(completion));
    free(completion);
    return *ret ? 0 : -ENOMEM;
}

static int llm_remote(struct llm *l, const char *prompt, const char *system, const char *model,
                      json_t *params, bool json_format, json_t **ret, struct sbx_error *err)
{
    json_t *messages = json_array();
    if (messages && system && *system &&
        json_array_append_new(messages,
                              json_pack("{s:s, s:s}", "role", "system", "content", system)) < 0) {
        json_decref(messages);
        messages = NULL;
    }
    if (messages && json_array_append_new(
                        messages, json_pack("{s:s, s:s}", "role", "user", "content", prompt)) < 0) {
        json_decref(messages);
        messages = NULL;
    }
    /* a NULL messages ("o") fails this pack: one check below covers every piece */
    json_t *req = json_pack("{s:s, s:o}", "model", model ? model : l->model, "messages", messages);
    if (!req)
        return -ENOMEM;
    json_t *t = json_object_get(params, "temperature");
    if (json_is_number(t))
        json_object_set(req, "temperature", t);
    json_t *mt = json_object_get(params, "maxTokens");
    if (json_is_integer(mt))
        json_object_set(req, "max_tokens", mt);
    if (json_format && json_object_set_new(req, "response_format",
                                           json_pack("{s:s}", "type", "json_object")) < 0) {
        json_decref(req);
        return -ENOMEM;
    }
    char *body = jdump(req, JSON_COMPACT, NULL);
    json_decref(req);
    if (!body)
        return -ENOMEM;
    const char *headers[] = {l->auth_header, NULL};
    struct httpc_options ho = {.timeout_ms = l->timeout_ms,
                               .max_response = l->max_response,
                               .headers = l->auth_header ? headers : NULL};
    struct httpc_result res;
    int r = httpc_post_json(l->url, body, &ho, &res);
    free(body);
    if (r < 0) {
        if (res.status == HTTPC_TIMEOUT)
            sbx_error_upstream(err, SBX_UP_TIMEOUT, "LLM_UNAVAILABLE",
                               "LLM endpoint %s: no %s within %lld ms", l->shown_url,
                               res.connect_timeout ? "connection" : "answer",
                               (long long)res.timeout_ms);
        else
            sbx_error_upstream(err, SBX_UP_TRANSPORT, "LLM_UNAVAILABLE", "LLM endpoint %s: %s",
                               l->shown_url, res.error ? res.error : "unreachable");
        httpc_result_done(&res);
        return r;
    }
    json_error_t je;
    json_t *doc = json_loadb(res.body.data ? res.body.data : "", res.body.len, JSON_ALLOW_NUL, &je);
    if (res.http_status < 200 || res.http_status > 299 || !doc) {
        sbx_error_upstream(err, SBX_UP_HTTP, "LLM_ERROR", "LLM endpoint answered HTTP %ld",
                           res.http_status);
        err->upstream_status = res.http_status;
        json_decref(doc);
        httpc_result_done(&res);
        return -EPROTO;
    }
    httpc_result_done(&res);
    json_t *msg = json_object_get(json_array_get(json_object_get(doc, "choices"), 0), "message");
    const char *content = json_string_value(json_object_get(msg, "content"));
    if (!content) {
        json_decref(doc);
        sbx_error_upstream(err, SBX_UP_PROTOCOL, "LLM_ERROR",
                           "LLM answer has no choices[0].message");
        return -EPROTO;
    }
    json_t *usage = json_object_get(doc, "usage");
    *ret = json_pack(
        "{s:s, s:s, s:{s:I, s:I}}", "completion", content, "model", model ? model : l->model,
        "usage", "promptTokens", json_integer_value(json_object_get(usage, "prompt_tokens")),
        "completionTokens", json_integer_value(json_object_get(usage, "completion_tokens")));
    json_decref(doc);
    return *ret ? 0 : -ENOMEM;
}

int llm_generate(struct llm *l, json_t *params, json_t **ret, struct sbx_error *err)
{
    const char *prompt = json_string_value(json_object_get(params, "prompt"));
    if (!prompt) {
        sbx_error_upstream(err, SBX_UP_TOOL, "INVALID_PARAMS",
                           "parameter 'prompt' must be a string");
        return -EINVAL;
    }
    const char *system = json_string_value(json_object_get(params, "system"));
    const char *model = json_string_value(json_object_get(params, "model"));
    if (model && strcmp(model, "default") == 0)
        model = NULL;
    const char *fmt = json_string_value(json_object_get(params, "responseFormat"));
    bool json_format = fmt && strcmp(fmt, "json") == 0;
    if (!l->url)
        return llm_echo(l, prompt, system, model, json_format, ret);
    return llm_remote(l, prompt, system, model, params, json_format, ret, err);
}
