// SPDX-License-Identifier: MIT
/*
 * client — one live, initialized connection to one MCP server (JSON-RPC 2.0,
 * protocol 2025-11-25, also 2025-06-18, 2025-03-26 and 2024-11-05) over a transport:
 * a child process on stdio (transport_stdio.c) or a Streamable HTTP
 * endpoint (transport_http.c). Any number of threads may issue requests at
 * once; answers are matched to their waiter by id, every wait has a
 * monotonic deadline, and a timed-out request is cancelled at the server.
 * It never hangs and never trusts the server: every failure comes back as a
 * struct sbx_error. Used by the registry (registry.c), which shares one
 * client per configured server among all sessions. The life of a connection
 * and the transport interface: client_int.h.
 */
#ifndef SANDBOXD_MCPCLIENT_CLIENT_H
#define SANDBOXD_MCPCLIENT_CLIENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/error.h"

/* Limits on what a server may send us. */
#define MCP_CLIENT_MAX_MESSAGE     (16u << 20) /* one JSON-RPC message (a stdio line, an SSE event) */
#define MCP_CLIENT_MAX_TOOL_PAGES  100         /* tools/list pages followed */
#define MCP_CLIENT_MAX_TOOLS       10000       /* tools over all pages */
#define MCP_CLIENT_DEFAULT_TIMEOUT 30000       /* ms, used when a timeout_ms argument is <= 0 */
#define MCP_CLIENT_MAX_TIMEOUT     86400000    /* ms; longer timeouts are cut to this */

/* The monotonic deadline (us) of an operation given timeout_ms, with the rules above. */
int64_t mcp_client_deadline(int64_t timeout_ms);
#define MCP_CLIENT_PROTOCOL_VERSION "2025-11-25"

/* One server as configured (config.c). Every member is owned by the struct. */
struct mcp_server_config {
    char *name;
    char *command; /* stdio: program (looked up in PATH if it has no '/') */
    char **args;   /* NULL-terminated, may be NULL */
    char **env; /* "KEY=VALUE", NULL-terminated: the server's environment is PATH, HOME, LANG, LC_*,
                   TZ and the like from ours, plus (overriding) these; never the rest of ours */
    char *cwd;  /* may be NULL */
    char *url;  /* Streamable HTTP endpoint; exactly one of command/url is set */
    char **headers; /* "Name: value" lines sent with every HTTP request, NULL-terminated, may be
                       NULL */
    char *description;
    char **approvals; /* "POLICY:TOOL" rules, in precedence order (approval.h); may be NULL */
};

/* Free every member and zero *cfg; NULL-safe. */
void mcp_server_config_done(struct mcp_server_config *cfg);
/* Deep copy of src into *ret (written only on success); -ENOMEM. */
int mcp_server_config_copy(const struct mcp_server_config *src, struct mcp_server_config *ret);

struct mcp_client;

/* A notification from the server: every notification is passed (tools/list_changed after the
 * generation was bumped, progress, message, ...). method and params are borrowed for the call;
 * params may be NULL. Runs on the transport's thread (the stdio reader, or the thread whose
 * HTTP request carried the notification): it must not block and must not call back into the
 * client, except mcp_client_alive / mcp_client_tools_generation. */
typedef void (*mcp_notify_fn)(void *userdata, const char *method, json_t *params);

/* Start/connect and run the initialize handshake (protocol 2025-11-25 offered; 2025-06-18,
 * 2025-03-26 and 2024-11-05 accepted from the server; anything else: error), then send
 * notifications/initialized. cfg is borrowed (copied). timeout_ms bounds the whole handshake.
 * 0 and a client in *ret; <0 (-errno) with err filled: SBX_UP_TRANSPORT when the server cannot
 * be started or reached, SBX_UP_TIMEOUT, SBX_UP_PROTOCOL (bad answer, unsupported protocol
 * version), SBX_UP_HTTP, SBX_UP_TOOL (initialize answered with an error). Does not log. */
int mcp_client_connect(const struct mcp_server_config *cfg, int64_t timeout_ms,
                       struct mcp_client **ret, struct sbx_error *err);
/* Shut down and free; NULL-safe. stdio: close the server's stdin, wait up to 2 s, SIGTERM its
 * process group, wait up to 2 s, SIGKILL, reap (so this may take 4 s). HTTP: DELETE the
 * session. No other thread may use c during or after this call (the registry counts its
 * users for that). */
void mcp_client_close(struct mcp_client *c);
/* stdio: false once the server exited, closed its stdout or broke the protocol for good (its
 * pending requests failed at that moment). HTTP: true until closed; every request stands on its
 * own, and a server that lost our session is initialized again transparently. */
bool mcp_client_alive(struct mcp_client *c);
/* The configured name (borrowed, lives as long as c). */
const char *mcp_client_name(struct mcp_client *c);
/* New reference (a copy): {protocolVersion, serverInfo, capabilities, instructions?}. */
json_t *mcp_client_server_info(struct mcp_client *c);
/* Install (or with fn NULL remove) the notification callback. When this returns, no call of the
 * previous callback is running. Must not be called from inside the callback. */
void mcp_client_set_notify(struct mcp_client *c, mcp_notify_fn fn, void *userdata);

/* Send a request and wait for its answer. params is borrowed and may be NULL. On success 0 and a
 * new reference to the "result" member in *ret_result. On failure -errno and err filled:
 * -ETIMEDOUT/SBX_UP_TIMEOUT (the server is sent notifications/cancelled and a late answer is
 * dropped), -EPROTO/SBX_UP_TOOL with code = the JSON-RPC error code in decimal and message = the
 * server's, -ENOTCONN (or another transport errno)/SBX_UP_TRANSPORT, -EPROTO/SBX_UP_PROTOCOL,
 * -EPROTO/SBX_UP_HTTP. Thread-safe. */
int mcp_client_request(struct mcp_client *c, const char *method, json_t *params, int64_t timeout_ms,
                       json_t **ret_result, struct sbx_error *err);
/* tools/list, following nextCursor (at most MCP_CLIENT_MAX_TOOL_PAGES pages, one deadline for
 * all of them). *ret_tools is a new array holding every Tool object as the server sent it. */
int mcp_client_list_tools(struct mcp_client *c, int64_t timeout_ms, json_t **ret_tools,
                          struct sbx_error *err);
/* tools/call. args is borrowed and may be NULL ({}). *ret_result is the CallToolResult as sent
 * (a new reference); isError:true is a result, not a failure. */
int mcp_client_call_tool(struct mcp_client *c, const char *tool, json_t *args, int64_t timeout_ms,
                         json_t **ret_result, struct sbx_error *err);
/* Fail every request waiting for an answer now, and every later one, with SBX_UP_TRANSPORT and
 * why (copied); the connection counts as dead. Transfers in progress (HTTP) stop within about a
 * second. For shutdown: c must still be closed with mcp_client_close(). */
void mcp_client_abort(struct mcp_client *c, const char *why);
/* Incremented on every notifications/tools/list_changed (also those before initialize ended). */
uint64_t mcp_client_tools_generation(struct mcp_client *c);

#endif
