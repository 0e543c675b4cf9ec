// SPDX-License-Identifier: MIT
/*
 * session — persistent interpreters for agents ("code mode", CONTRACT §3 and
 * §9). A session is a warm cell switched into the runtime's session mode: a
 * namespace that survives between executions, top-level await, and MCP tools
 * as Python objects whose calls travel as RPC frames to the host, which calls
 * the real server through the MCP registry. Only the servers named at
 * creation are reachable. Memories, saved tools and files go to the
 * workspace store.
 *
 * One execution at a time per session (later ones wait their turn). A time
 * limit first interrupts the execution (SIGINT) and only kills the session
 * if that does not work; the result says whether the session survived. Idle
 * sessions are reaped; the number of live sessions is capped.
 *
 * Thread-safe. Sessions are reference-counted: deleting one that is running
 * kills its interpreter and the running execution reports it.
 */
#ifndef SANDBOXD_SESSION_SESSION_H
#define SANDBOXD_SESSION_SESSION_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jail/jail.h"

struct pool;
struct mcp_registry;
struct workspace_store;
struct metrics;
struct tenant;

struct sessions_options {
    unsigned max_sessions;
    int64_t default_idle_s;
    int64_t max_idle_s;
    int64_t default_timeout_ms; /* per execution */
    int64_t max_timeout_ms;
    uint64_t default_memory_mb; /* per session */
    uint64_t max_memory_mb;
    uint64_t nproc;
    size_t output_limit;        /* stdout + stderr per execution */
    int64_t tool_timeout_ms;    /* one MCP call made from a session */
    int64_t interrupt_grace_ms; /* SIGINT first, SIGKILL this much later */
    const char *id_prefix;      /* NULL, or ids are "PREFIX." + 32 hex digits (an instance id,
                                 * util/instance.h: at most 31 characters); borrowed */
};

struct session_error {
    int status;        /* HTTP status to answer */
    const char *code;  /* static */
    const char *field; /* static or NULL */
    char *message;     /* owned */
};

struct session_create {
    json_t *servers;        /* borrowed array of server names, may be NULL */
    const char *workspace;  /* may be NULL: "default" */
    int64_t idle_timeout_s; /* 0: default */
    int64_t memory_mb;      /* 0: default */
    struct tenant *tenant;  /* the owner (borrowed, outlives the session); NULL: the operator */
    const char *compat;     /* NULL, or "code-execution-mode": the runtime answers as the
                             * upstream bridge does (its init job says so); static */
};

/* Streaming of one execution; callbacks run on the executing thread, except on_rpc, which
 * may run on an RPC worker thread (serialise your writes). */
struct session_stream {
    void *userdata;
    void (*on_output)(void *userdata, int stream, const char *data, size_t len);
    void (*on_rpc)(void *userdata, json_t *summary);
};

struct sessions;

int sessions_new(const struct sessions_options *opt, const struct jail_config *jail,
                 struct pool *pool, struct mcp_registry *mcp, struct workspace_store *ws,
                 struct metrics *metrics, struct sessions **ret);
/* Ends every session. */
void sessions_free(struct sessions *s);
/* Shutdown: end every session now (a running execution is killed and its caller gets 503
 * SHUTTING_DOWN, as do queued ones) and refuse new sessions and executions the same way.
 * NULL-safe. */
void sessions_shutdown(struct sessions *s);
void session_error_done(struct session_error *e);

/* 0 and the new session's description in *ret_info; <0 with *err filled (429 TENANT_LIMIT at
 * the tenant's maxSessions). The session's workspace is the tenant's own of that name. */
int sessions_create(struct sessions *s, const struct session_create *c, json_t **ret_info,
                    struct session_error *err);
/* -ENOENT for an unknown id. */
int sessions_info(struct sessions *s, const char *id, json_t **ret_info);
/* The sessions tenant may see: its own, or with tenant NULL (the operator) all of them. */
json_t *sessions_list(struct sessions *s, const struct tenant *tenant);
int sessions_delete(struct sessions *s, const char *id);
bool sessions_exists(struct sessions *s, const char *id);
/* Session id exists and belongs to tenant (any tenant's when tenant is NULL). Ids are never
 * reused, so a true answer stays true for as long as the session lives. */
bool sessions_visible(struct sessions *s, const char *id, const struct tenant *tenant);
unsigned sessions_live(struct sessions *s);
/* Run code in session id. 0 and *ret_result {executionId, status, stdout, stderr, error, result,
 * durationMs, sessionAlive, truncated, mcpCalls, verdict}; <0 with *err (unknown session,
 * dead session, the owner's maxRunning reached (429), sandbox failure). */
int sessions_execute(struct sessions *s, const char *id, const char *code, int64_t timeout_ms,
                     const struct session_stream *stream, json_t **ret_result,
                     struct session_error *err);
/* Interrupt the execution running in session id as its time limit would (SIGINT: the code sees
 * an exception, pending tasks are cancelled, the session survives and the execution reports
 * status "timeout"). The signal is lost if it lands before the interpreter has started running
 * the code, so a caller that must stop an execution repeats it and finally deletes the session.
 * 0 when sent, -ENOENT for an unknown id, -EALREADY when no execution is running. */
int sessions_interrupt(struct sessions *s, const char *id);

#endif
