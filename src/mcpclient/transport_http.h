// SPDX-License-Identifier: MIT
/*
 * transport_http — the MCP Streamable HTTP transport (spec 2025-11-25): each
 * message we send is its own POST (so concurrent requests run in parallel),
 * answered by one JSON message or an SSE stream of them; the server's
 * session id and the negotiated protocol version ride on every later
 * request; an interrupted stream is resumed with GET + Last-Event-ID. libcurl,
 * http/https only, no redirects, a connect and a total timeout, a cap on
 * every message, keep-alive connections reused per transport (see the .c for
 * why not httpc's process-wide share). Used by client.c.
 */
#ifndef SANDBOXD_MCPCLIENT_TRANSPORT_HTTP_H
#define SANDBOXD_MCPCLIENT_TRANSPORT_HTTP_H

#include "mcpclient/client_int.h"

/* Prepare a transport for cfg->url (cfg borrowed); the transport reports to owner (client_int.h).
 * Nothing is sent yet. 0 and the transport in *ret, or -errno with err filled
 * (-EINVAL/SBX_UP_TRANSPORT for a URL that is not http(s)). Does not log failures. */
int mcp_transport_http_open(const struct mcp_server_config *cfg, struct mcp_client *owner,
                            struct mcp_transport **ret, struct sbx_error *err);

#endif
