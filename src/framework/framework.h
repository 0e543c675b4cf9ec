// SPDX-License-Identifier: MIT
/*
 * framework — sandboxd's side of the Core Framework: calls to framework
 * tools (core.state.*, core.llm.generate, core.framework.*) go to the
 * request's mcp_endpoint with the simple form, or, when the endpoint is the
 * literal "local", to the embedded default implemented here (definitions
 * from --definitions DIR, runtime values in memory (store/state.h), logs to our
 * log, LLM through --llm-url or the offline echo model). A call is always on
 * behalf of the request's app: it never reaches another app's definitions or
 * values.
 *
 * Every call checks the endpoint against the allowlist (--framework-allow,
 * by default loopback URLs only) before anything connects: whatever path a
 * request takes (JIT, EXECUTOR, LLM, WORKFLOW steps, logging), an endpoint
 * outside the list is never reached.
 *
 * framework_log() is fire-and-forget: a bounded queue drained by one
 * thread, so a slow or dead framework never slows or fails a request
 * (messages that do not fit are counted and dropped).
 */
#ifndef SANDBOXD_FRAMEWORK_FRAMEWORK_H
#define SANDBOXD_FRAMEWORK_FRAMEWORK_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "framework/simple.h"

struct url_allowlist;
struct store;

#define FRAMEWORK_LOCAL "local"
/* Bytes of a definition (a script, template or workflow): what the local framework reads of a
 * file, and the definition cache's cap (framework/defs.h max_file). */
#define FRAMEWORK_MAX_DEFINITION (16u << 20)

struct framework_options {
    const char *definitions_dir; /* NULL: "local" serves no definitions */
    const char *llm_url;         /* OpenAI-compatible base URL; NULL: echo model */
    const char *llm_model;
    const char *llm_api_key;
    int64_t timeout_ms; /* per framework call */
    int64_t llm_timeout_ms;
    size_t max_response;
    const struct url_allowlist *allow; /* borrowed, outlives the framework; NULL or empty:
                                          loopback http(s) URLs only */
    struct store *store; /* the local framework's runtime values (borrowed, outlives it);
                            NULL: core.state.*RuntimeValue fail */
};

struct framework_stats {
    unsigned calls;
    int64_t us;
};

struct framework;

int framework_new(const struct framework_options *opt, struct framework **ret);
void framework_free(struct framework *fw);

/* endpoint is "local" or a URL the allowlist admits. */
bool framework_endpoint_allowed(const struct framework *fw, const char *endpoint);
/* Call tool on the framework at endpoint on behalf of a request of app (its appId; NULL when
 * it has none). An endpoint the allowlist refuses fails with SBX_UP_TRANSPORT, code
 * FRAMEWORK_NOT_ALLOWED, -EPERM, and nothing connects. params.app_id, when present, must be
 * that app: another one is refused (-EPERM, tool error APP_MISMATCH) before any call, whatever
 * the endpoint; the local framework's core.state tools always work on app. *ret is a new
 * reference on success. stats (may be NULL) accumulates the number and duration of calls. */
/* Does err (of framework_call) mean that the framework has no such thing, rather than that it
 * failed? HTTP 404, or a tool error whose code says so (NOT_FOUND, ENOENT, "404"). */
bool framework_not_found(const struct sbx_error *err);
int framework_call(struct framework *fw, const char *endpoint, const char *app, const char *tool,
                   json_t *params, json_t **ret, struct sbx_error *err,
                   struct framework_stats *stats);
/* Same with an explicit timeout (LLM calls take longer). */
int framework_call_timeout(struct framework *fw, const char *endpoint, const char *app,
                           const char *tool, json_t *params, int64_t timeout_ms, json_t **ret,
                           struct sbx_error *err, struct framework_stats *stats);
/* Queue core.framework.logFrameworkMessage; fields are stolen (NULL, as from a json_pack that
 * failed: the message goes without them). Never blocks. */
void framework_log(struct framework *fw, const char *endpoint, const char *level,
                   const char *message, json_t *fields);
/* {queued, sent, failed, dropped} */
json_t *framework_log_stats(struct framework *fw);

#endif
