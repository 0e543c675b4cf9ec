// SPDX-License-Identifier: MIT
/*
 * response — turn an execution outcome into the /execute response body
 * (CONTRACT §3): resultType, data, metrics, plus the verdict. Shared by the
 * HTTP API and `sandboxd run`, so both print exactly the same objects.
 */
#ifndef SANDBOXD_RESPONSE_RESPONSE_H
#define SANDBOXD_RESPONSE_RESPONSE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "egress/proxy.h"
#include "exec/run.h"

enum response_kind {
    RESPONSE_JIT,      /* data is the function's value */
    RESPONSE_EXECUTOR, /* data is {result, stdout, stderr} */
};

struct response_limits {
    int64_t timeout_ms;
    uint64_t memory_mb;
    uint64_t output_bytes;
    struct artifact_caps artifacts;
};

struct response_metrics {
    int64_t queue_wait_us;
    unsigned mcp_calls;
    int64_t mcp_us;
    bool pool_hit;
    const struct egress_stats *egress; /* an execution with a network policy; else NULL */
};

/* The whole response object {requestId, resultType, data, metrics, verdict, and artifacts /
 * artifactsError when there are any} (new reference).
 * Returns NULL on allocation failure or when the outcome is INTERNAL (the caller answers 500). */
json_t *response_build(const char *request_id, enum response_kind kind,
                       const struct exec_outcome *o, const struct response_limits *lim,
                       const struct response_metrics *m);
/* An error response {requestId, resultType: "error", data: {code, message, details}}. Steals
 * details (may be NULL). */
json_t *response_error(const char *request_id, const char *code, const char *message,
                       json_t *details);
/* Captured output as a JSON string; invalid UTF-8 becomes U+FFFD (new reference). */
json_t *response_text(const struct buf *b);
/* How a text cut at a size limit ends ("%zu": the original size in bytes). */
#define RESPONSE_TRUNCATED_MARKER "\n[... truncated: %zu bytes in all]"
/* s as a JSON string of at most max bytes: longer text is cut on a character boundary and
 * ends with RESPONSE_TRUNCATED_MARKER, and *ret_cut (may be NULL) is set. s is valid UTF-8.
 * New reference; NULL when out of memory. */
json_t *response_capped_string(const char *s, size_t len, size_t max, bool *ret_cut);
/* Cap every string inside v (objects and arrays, at any depth) the same way, in place.
 * Returns true when something was cut. */
bool response_cap_strings(json_t *v, size_t max);
/* The member of a final frame that response_build() leaves to response_render(): a result's
 * value, passed through as text rather than parsed (exec_request.raw_path). */
const char *const *response_raw_path(enum response_kind kind);
/* resp (or with data_only its "data") as compact JSON text (caller frees; NULL when out of
 * memory), with raw spliced in where response_build() left the value of a raw result (null);
 * without raw, or for an error response, just that. May modify resp. */
char *response_render(json_t *resp, enum response_kind kind, const struct frame_raw *raw,
                      bool data_only, size_t *ret_len);
/* Append {name, unit, value} to a metrics array; -ENOMEM when it could not be. */
int response_metric(json_t *metrics, const char *name, const char *unit, double value);
/* Append net.egress_bytes (attributes.direction up and down), net.egress_requests and
 * net.egress_denied; -ENOMEM when one could not be. */
int response_egress_metrics(json_t *metrics, const struct egress_stats *st);

#endif
