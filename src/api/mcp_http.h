// SPDX-License-Identifier: MIT
/*
 * mcp_http — the Streamable HTTP transport (MCP 2025-11-25) of the MCP
 * server on `sandboxd serve`: one endpoint, /mcp. POST carries one JSON-RPC
 * message (or a 2025-03-26 batch) and is answered with JSON, or with SSE
 * when the request will send progress notifications or the client accepts
 * only text/event-stream; notifications and responses get 202. An
 * MCP-Session-Id is issued at initialize and required afterwards (400
 * without, 404 when unknown, ended or expired); DELETE ends a session and
 * its sandbox sessions; GET is 405 (we never send unsolicited messages).
 *
 * Who may call is decided before: api_route applies the policy of
 * api/policy.h (Host, Origin, token) and names the caller's tenant. An MCP
 * session belongs to the tenant that initialized it; to any other it does
 * not exist (404). Sessions are capped and expire when idle. Called by
 * api.c's route table; the protocol itself is mcpserver/server.c.
 */
#ifndef SANDBOXD_API_MCP_HTTP_H
#define SANDBOXD_API_MCP_HTTP_H

#include <stdint.h>

#include "http/server.h"

struct mcp_server;
struct tenant;

#define API_MCP_MAX_SESSIONS_DEFAULT 64 /* serve's --mcp-max-sessions */

struct mcp_http_options {
    unsigned max_sessions; /* 0: API_MCP_MAX_SESSIONS_DEFAULT */
    int64_t idle_s;        /* a session unused this long ends */
    const char *id_prefix; /* NULL, or session ids are "PREFIX." + 32 hex digits (an instance
                            * id, util/instance.h: at most 31 characters); copied */
};

struct mcp_http;

/* core is borrowed and must outlive the endpoint. 0, or -ENOMEM. */
int mcp_http_new(const struct mcp_http_options *opt, struct mcp_server *core,
                 struct mcp_http **ret);
/* tenant: the caller's, as the policy found it (NULL: the operator, who may use any session). */
void mcp_http_route(struct mcp_http *h, const struct http_request *req, struct tenant *tenant,
                    struct http_reply *reply);
/* Take no new work: requests (initialize included) get 503 from now on, while requests under way
 * go on and notifications (cancellations) still reach them. NULL-safe. */
void mcp_http_drain(struct mcp_http *h);
/* Close every session (running executions end) and answer 503 from now on; call before the HTTP
 * server stops, so that no request thread waits for an execution. NULL-safe. */
void mcp_http_shutdown(struct mcp_http *h);
/* After the HTTP server stopped: waits for SSE streams still running, frees. NULL-safe. */
void mcp_http_free(struct mcp_http *h);

#endif
