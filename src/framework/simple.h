// SPDX-License-Identifier: MIT
/*
 * simple — the Core Framework's simple MCP form: POST {"tool", "params"} to
 * an endpoint, answer {"result": ...} or {"error": {"code", "message"}} or a
 * non-2xx status. libcurl does the HTTP, with a connect and a total
 * timeout, no redirects, http/https only, and a cap on the response size;
 * every failure comes back as a struct sbx_error (kind UPSTREAM), never a
 * hang.
 * Thread-safe.
 */
#ifndef SANDBOXD_FRAMEWORK_SIMPLE_H
#define SANDBOXD_FRAMEWORK_SIMPLE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

struct mcp_simple_options {
    int64_t timeout_ms;
    int64_t connect_timeout_ms;
    size_t max_response;
};

/* Call tool at endpoint (an http(s) URL). On success *ret_result is a new reference to the
 * "result" member and 0 is returned; on failure err is filled and -EPROTO/-ETIMEDOUT/... */
int mcp_simple_call(const char *endpoint, const char *tool, json_t *params,
                    const struct mcp_simple_options *opt, json_t **ret_result,
                    struct sbx_error *err);

#endif
