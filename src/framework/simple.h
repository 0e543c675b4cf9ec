// SPDX-License-Identifier: MIT
/*
 * simple — the Core Framework's simple MCP form: POST {"tool", "params"} to
 * an endpoint, answer {"result": ...} or {"error": {"code", "message"}} or a
 * non-2xx status. libcurl does the HTTP, with a connect and a total
 * timeout, no redirects, http/https only, and a cap on the response size;
 * every failure comes back as a struct mcp_error, never a hang.
 * Thread-safe.
 */
#ifndef SANDBOXD_FRAMEWORK_SIMPLE_H
#define SANDBOXD_FRAMEWORK_SIMPLE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

enum mcp_error_kind {
    MCP_ERR_NONE,
    MCP_ERR_TRANSPORT, /* could not connect / connection broke */
    MCP_ERR_TIMEOUT,
    MCP_ERR_HTTP,     /* non-2xx status */
    MCP_ERR_PROTOCOL, /* the answer is not the expected JSON */
    MCP_ERR_TOOL,     /* the tool answered with an error */
};

struct mcp_error {
    enum mcp_error_kind kind;
    long http_status;
    char *code; /* the tool's error code, when it gave one */
    char *message;
};

void mcp_error_set(struct mcp_error *e, enum mcp_error_kind kind, const char *code, const char *fmt,
                   ...) __attribute__((format(printf, 4, 5)));
void mcp_error_clear(struct mcp_error *e);
const char *mcp_error_kind_name(enum mcp_error_kind k);
/* {kind, httpStatus?, code?, message, tool} (new reference) */
json_t *mcp_error_details(const struct mcp_error *e, const char *tool);

struct mcp_simple_options {
    int64_t timeout_ms;
    int64_t connect_timeout_ms;
    size_t max_response;
};

/* Call tool at endpoint (an http(s) URL). On success *ret_result is a new reference to the
 * "result" member and 0 is returned; on failure err is filled and -EPROTO/-ETIMEDOUT/... */
int mcp_simple_call(const char *endpoint, const char *tool, json_t *params,
                    const struct mcp_simple_options *opt, json_t **ret_result,
                    struct mcp_error *err);

#endif
