// SPDX-License-Identifier: MIT
/*
 * server — sandboxd as an MCP server (CONTRACT §7): the protocol core that
 * both transports share (stdio in cmd/mcp.c, Streamable HTTP in
 * api/mcp_http.c). JSON-RPC 2.0 and MCP's lifecycle (initialize with
 * version negotiation, ping, tools/list with cursors, tools/call,
 * notifications/cancelled, progress, resources/list and read of the
 * capability overview), and the tools: run_python, list_servers,
 * search_tool_docs, reset_session — or, in compat mode, run_python alone.
 *
 * run_python runs in the sessions of session/session.h — the same
 * interpreters, jails and MCP bridge as /v1/sessions; there is no second
 * execution path. A connection (one stdio process, or one MCP-Session-Id)
 * owns the sandbox sessions it creates and ends them when it closes.
 *
 * Never does I/O of its own: a transport hands in parsed messages and gets
 * back the response to write. Thread-safe: one connection may handle many
 * messages at once (a cancellation arrives while its request runs).
 */
#ifndef SANDBOXD_MCPSERVER_SERVER_H
#define SANDBOXD_MCPSERVER_SERVER_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "proto/jsonrpc.h"

struct sessions;
struct mcp_registry;
struct tenant;

/* The protocol versions we speak, preferred first. */
#define MCP_SERVER_VERSION_LATEST    "2025-11-25"
#define MCP_SERVER_MAX_INFLIGHT      32  /* requests one connection may have running at once */
#define MCP_SERVER_MAX_SANDBOXES     16  /* sandbox sessions one connection may hold */
#define MCP_SERVER_MAX_BATCH         64  /* messages in one 2025-03-26 batch */
#define MCP_SERVER_PAGE_SIZE_DEFAULT 100 /* tools per tools/list page (--mcp-page-size) */

struct mcp_server_options {
    bool output_json;           /* default output mode of tool results (else compact text) */
    const char *workspace;      /* workspace of the sessions run_python creates; copied (NULL:
                                 * SESSION_WORKSPACE_DEFAULT) */
    const char *profile;        /* profile of the sessions run_python creates (NULL: default);
                                 * borrowed, must outlive the server */
    unsigned page_size;         /* tools per tools/list page; 0: MCP_SERVER_PAGE_SIZE_DEFAULT */
    int64_t default_timeout_ms; /* of a run_python execution (the sessions' default) */
    int64_t max_timeout_ms;     /* the sessions' maximum: larger timeouts are clamped */
    int64_t lookup_timeout_ms;  /* connecting a server for list_servers / search_tool_docs */
    int64_t approval_timeout_s; /* a call waits this long for its decision (for the texts) */
    const char *transport;      /* "stdio" or "streamable-http", for logs; static */
    /* --compat code-execution-mode: the drop-in for mcp-server-code-execution-mode users (one
     * tool, run_python(code, servers, timeout), its answers shaped as that bridge's). */
    bool compat;
    bool compat_toon; /* compat answers as TOON blocks (MCP_BRIDGE_OUTPUT_MODE=toon) */
    /* --mcp-tools full: list_servers, search_tool_docs and reset_session as MCP tools too (and
     * run_python's full schema); the default is the lean surface (run_python, and approve_call
     * when approvals are configured), discovery being inside the sandbox. */
    bool full_tools;
};

struct mcp_server;
struct mcp_server_conn;

/* sessions and registry are borrowed and must outlive the server. 0, or -ENOMEM. */
int mcp_server_new(const struct mcp_server_options *opt, struct sessions *sessions,
                   struct mcp_registry *registry, struct mcp_server **ret);
/* A server set up behind its first answers (`sandboxd mcp`: a client waits for initialize at
 * every start, and sandboxd's own set-up takes hundreds of milliseconds): initialize, ping and
 * notifications are answered at once; every other request waits until mcp_server_start(), or
 * is refused after mcp_server_fail(). 0, or -ENOMEM. */
int mcp_server_new_pending(const struct mcp_server_options *opt, struct mcp_server **ret);
/* The set-up is done: sessions and registry as for mcp_server_new(). 0, or -ENOMEM (then the
 * server has failed). */
int mcp_server_start(struct mcp_server *s, struct sessions *sessions,
                     struct mcp_registry *registry);
/* The set-up failed (err: -errno): waiting and later requests are refused. */
void mcp_server_fail(struct mcp_server *s, int err);
/* Waits for the server's background work (cancellations being enforced) to end; every
 * connection must be closed before. NULL-safe. */
void mcp_server_free(struct mcp_server *s);

/* A new connection, with one reference held by the caller. 0, or -ENOMEM. */
int mcp_server_conn_new(struct mcp_server *s, struct mcp_server_conn **ret);
void mcp_server_conn_ref(struct mcp_server_conn *c);
/* The tenant (borrowed; it outlives the connection) that owns the sandbox sessions and the
 * workspace this connection uses; call before the first message. Default: the operator. */
void mcp_server_conn_set_tenant(struct mcp_server_conn *c, struct tenant *tenant);
/* NULL-safe. */
void mcp_server_conn_unref(struct mcp_server_conn *c);
/* End the connection: its sandbox sessions are deleted (running executions are killed and
 * report it) and later messages are refused. Idempotent. */
void mcp_server_conn_close(struct mcp_server_conn *c);
/* Start, ahead, the sandbox session the connection's first run_python will use (a person
 * sends code a while after connecting; the session is ready by then): it is taken by the first
 * session the connection makes, and ended when that one asks for a network policy or the
 * connection closes. Blocks while it starts; a no-op when the connection has a session already.
 * After mcp_server_start(). 0, or -errno (logged; the first run_python starts one itself). */
int mcp_server_conn_prepare(struct mcp_server_conn *c);
/* The negotiated protocol version, or NULL before a successful initialize (static string). */
const char *mcp_server_conn_version(struct mcp_server_conn *c);
/* Requests of this connection being handled now. */
unsigned mcp_server_conn_busy(struct mcp_server_conn *c);
/* The client declared form elicitation: a tools/call may send it elicitation/create (a tool
 * call of its code waits for approval) through the call's out->notify, before the answer. */
bool mcp_server_conn_elicits(struct mcp_server_conn *c);

/* Where messages other than the response go while a request is handled: progress
 * notifications. notify is called on the handling thread with a borrowed message; NULL (or a
 * NULL notify) sends none. */
struct mcp_server_out {
    void *userdata;
    void (*notify)(void *userdata, json_t *msg);
};

/* Handle one message (borrowed; any JSON value, including a 2025-03-26 batch array). Returns
 * the response to send (a new reference: an object, or an array for a batch), or NULL when
 * nothing is to be sent: a notification, a response from the client, a cancelled request, a
 * batch of notifications. May block for as long as the request runs. */
json_t *mcp_server_handle(struct mcp_server_conn *c, json_t *msg, const struct mcp_server_out *out);
/* The -32700 response for text that is not JSON (new reference). */
json_t *mcp_server_parse_error(const char *why);

/* What a transport needs to know about a message before handling it. */
struct mcp_server_peek {
    enum jsonrpc_kind kind; /* JSONRPC_INVALID for batches too (see batch) */
    bool batch;             /* a JSON array */
    bool has_request;       /* a request, or a batch with one: a response will come */
    bool initialize;        /* an initialize request */
    bool progress;          /* a tools/call with _meta.progressToken: notifications may come */
    bool tools_call;        /* a tools/call: requests (elicitation) may come when the client
                             * takes them, mcp_server_conn_elicits() */
};
void mcp_server_peek(json_t *msg, struct mcp_server_peek *ret);
/* A protocol version we accept, e.g. in an MCP-Protocol-Version header. */
bool mcp_server_version_supported(const char *version);

#endif
