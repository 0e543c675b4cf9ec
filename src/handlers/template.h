// SPDX-License-Identifier: MIT
/*
 * template — LLM prompt templates (CONTRACT §8, docs/TEMPLATES.md). The
 * template file is fetched like a script and handed to a sandbox (templates
 * are untrusted): it parses the YAML, renders the Jinja2 template, asks the
 * host for the completion through an RPC, and validates it against the
 * outputSchema. The host answers that RPC by calling core.llm.generate on
 * the request's framework endpoint, and counts the tokens.
 */
#ifndef SANDBOXD_HANDLERS_TEMPLATE_H
#define SANDBOXD_HANDLERS_TEMPLATE_H

#include <jansson.h>
#include <stdint.h>

#include "handlers/app.h"

struct flow_tokens {
    int64_t prompt;
    int64_t completion;
    unsigned calls;
};

/* Render template_path with {requestData, context, input} and ask the LLM; *ret as for
 * /execute (generic data, or an error: TEMPLATE_ERROR, SCHEMA_VALIDATION_FAILED, MCP_ERROR...).
 * input and overrides are borrowed and may be NULL. fst and tokens accumulate. */
void flow_llm_call(struct app *a, const struct request_spec *s, const char *template_path,
                   json_t *input, json_t *overrides, struct framework_stats *fst,
                   struct flow_tokens *tokens, struct app_reply *ret);
/* Time allowed for one core.llm.generate call (--llm-timeout-ms, default 60 s). */
int64_t flow_llm_timeout_ms(const struct app *a);
/* The LLM handler of /execute. */
void flow_llm_execute(struct app *a, const struct request_spec *s, struct app_reply *ret);
/* Append llm.calls / llm.tokens.prompt / llm.tokens.completion to a metrics array; -ENOMEM
 * when one could not be. */
int flow_tokens_metrics(json_t *metrics, const struct flow_tokens *t);

#endif
