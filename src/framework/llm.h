// SPDX-License-Identifier: MIT
/*
 * llm — core.llm.generate for the embedded "local" framework: an
 * OpenAI-compatible chat-completions endpoint (--llm-url), or, when none is
 * configured, the offline echo model (the completion is the prompt; with
 * responseFormat "json" a prompt that is JSON is returned as is, anything
 * else as {"echo": prompt}). Token usage is the endpoint's, or a word count
 * for the echo model.
 */
#ifndef SANDBOXD_FRAMEWORK_LLM_H
#define SANDBOXD_FRAMEWORK_LLM_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "framework/simple.h"

#define LLM_DEFAULT_TIMEOUT_MS 60000 /* one call (serve's --llm-timeout-ms) */

struct llm_options {
    const char *url;     /* base URL, e.g. http://127.0.0.1:8000/v1; NULL: echo */
    const char *model;   /* default model name */
    const char *api_key; /* bearer token, may be NULL */
    int64_t timeout_ms;  /* 0: LLM_DEFAULT_TIMEOUT_MS */
    size_t max_response;
};

struct llm;

int llm_new(const struct llm_options *opt, struct llm **ret);
void llm_free(struct llm *l);
/* params {prompt, system?, model?, temperature?, maxTokens?, responseFormat?};
 * *ret {completion, usage: {promptTokens, completionTokens}, model}. */
int llm_generate(struct llm *l, json_t *params, json_t **ret, struct sbx_error *err);

#endif
