// SPDX-License-Identifier: MIT
/*
 * transport_stdio — an MCP server as a child process speaking newline-
 * delimited JSON-RPC on its stdin/stdout (the MCP stdio transport). The
 * child runs in its own process group with default signal dispositions and
 * an empty signal mask and a minimal environment (PATH, HOME, LANG, TZ and
 * the like from ours, plus its config's env: never our tokens or keys);
 * its stderr is drained to our log line by line. One
 * reader thread per connection. It must never leak an fd into the child
 * (all ours are O_CLOEXEC) and never leave a process behind: close() walks
 * stdin EOF → SIGTERM → SIGKILL and reaps. Used by client.c only.
 */
#ifndef SANDBOXD_MCPCLIENT_TRANSPORT_STDIO_H
#define SANDBOXD_MCPCLIENT_TRANSPORT_STDIO_H

#include "mcpclient/client_int.h"

/* Start cfg->command (cfg borrowed); the transport reports to owner (client_int.h). 0 and the
 * transport in *ret, or -errno with err filled (SBX_UP_TRANSPORT when the program cannot be
 * started). Does not log failures. */
int mcp_transport_stdio_open(const struct mcp_server_config *cfg, struct mcp_client *owner,
                             struct mcp_transport **ret, struct sbx_error *err);

#endif
