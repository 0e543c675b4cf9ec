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
 * Host work is bounded: tool calls run on a shared pool of worker threads
 * with per-session and global limits (refused beyond them), answers wait in
 * a bounded outbox rather than block a thread, and between executions a
 * session may use only a small CPU budget (cpu.h). Results are matched to
 * executions by id.
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
#include <sys/types.h>

#include "exec/artifact.h"
#include "jail/jail.h"
#include "util/error.h"

struct pool;
struct profiles;
struct egress_proxy;
struct egress_policy;
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
    size_t output_limit;            /* stdout + stderr per execution */
    int64_t tool_timeout_ms;        /* one MCP call made from a session */
    int64_t interrupt_grace_ms;     /* SIGINT first, SIGKILL this much later */
    size_t max_frame;               /* largest frame an interpreter may send */
    uint64_t cpu_budget_ms;         /* CPU what an execution leaves running may use (cpu.h) */
    unsigned tool_workers;          /* threads running tool calls, all sessions together */
    unsigned max_tool_calls;        /* tool calls queued or running, all sessions together */
    unsigned session_tool_calls;    /* tool calls queued or running, one session */
    uint64_t host_cpu_ms;           /* sandboxd CPU time one execution's workspace calls may use */
    int64_t approval_timeout_ms;    /* a call waits this long for a person's decision (ask) */
    const char *id_prefix;          /* NULL, or ids are "PREFIX." + 32 hex digits (an instance id,
                                     * util/instance.h: at most 31 characters); borrowed */
    struct profiles *profiles;      /* pools a session may ask for by name; borrowed, may be NULL */
    struct artifact_caps artifacts; /* per execution */
    struct egress_proxy *egress;    /* borrowed; NULL: sessions get no network */
    struct pool *network_pool;      /* warm cells for sessions with a network policy (borrowed;
                                     * NULL: such a session starts a fresh sandbox) */
};

#define SESSION_WORKSPACE_DEFAULT "default" /* the workspace of a session that names none */
/* Bytes of a session id: "ID." (an instance id, util/instance.h: at most 31 + 1) and 32 hex
 * digits. */
#define SESSION_ID_MAX 64

struct session_create {
    json_t *servers;        /* borrowed array of server names, may be NULL */
    const char *workspace;  /* may be NULL: SESSION_WORKSPACE_DEFAULT */
    int64_t idle_timeout_s; /* 0: default */
    int64_t memory_mb;      /* 0: default (the profile's, else the server's) */
    struct tenant *tenant;  /* the owner (borrowed, outlives the session); NULL: the operator */
    const char *profile;    /* NULL or "default": the sessions' pool; else a profile's */
    json_t *network;        /* borrowed {"allow": [patterns]} (docs/NETWORK.md), may be NULL */
    const char *compat;     /* NULL, or "code-execution-mode": the runtime answers as the
                             * upstream bridge does (its init job says so); static */
    /* NULL: a Python session (CONTRACT §9). Else an agent session: its interpreter serves this
     * runtime mode instead ("e2b": runtime/sandboxd_runtime/e2b.py), a protocol of its own that
     * sessions_serve() and sessions_send() carry; the init job has this type. Static. */
    const char *agent;
    json_t *agent_init; /* borrowed object merged into an agent's init job, may be NULL */
};

/* Streaming of one execution; callbacks run on the executing thread. */
struct session_stream {
    void *userdata;
    void (*on_output)(void *userdata, int stream, const char *data, size_t len);
    void (*on_rpc)(void *userdata, json_t *summary);
    void (*on_artifact)(void *userdata, json_t *artifact); /* a figure or display(); borrowed */
    /* A tool call waits for a person's decision: {id, server, tool, arguments} (borrowed). Runs
     * on any thread, under a lock of the session: it must not call back into sessions_*; it may
     * block briefly (write to a client). */
    void (*on_approval)(void *userdata, json_t *approval);
};

struct sessions;

/* pool, mcp, ws and metrics are borrowed: they must outlive sessions_shutdown(). */
int sessions_new(const struct sessions_options *opt, const struct jail_config *jail,
                 struct pool *pool, struct mcp_registry *mcp, struct workspace_store *ws,
                 struct metrics *metrics, struct sessions **ret);
/* Shutdown: end every session and wait for every thread that uses one. From now on no session
 * is created and no execution or tool call starts (503 SHUTTING_DOWN); running executions end
 * (their interpreters are killed, also of sessions still starting) and their callers get 503
 * SHUTTING_DOWN "sandboxd is shutting down: the session was ended", as do queued ones; tool
 * calls in flight are aborted (the MCP registry is shut down); the worker pool and the reaper
 * are joined; and it returns once no reference to any session is left, so that the pools, the
 * registry and the workspace store may then be freed. serve calls it at the drain deadline
 * and again before freeing, mcp when the connection closes, setup_stop() always. Idempotent;
 * NULL-safe. */
void sessions_shutdown(struct sessions *s);
/* sessions_shutdown(), then free. NULL-safe. */
void sessions_free(struct sessions *s);

/* Errors are util/error.h's: a kind, never an HTTP status (api/ chooses those).
 * 0 and the new session's description in *ret_info; <0 with *err filled (LIMIT TENANT_LIMIT
 * at the tenant's maxSessions, UNAVAILABLE SHUTTING_DOWN or TOO_MANY_SESSIONS). The session's
 * workspace is the tenant's own of that name. */
int sessions_create(struct sessions *s, const struct session_create *c, json_t **ret_info,
                    struct sbx_error *err);
/* Make the MCP servers names (borrowed array of names) reachable from live session id as well:
 * their descriptions go to its interpreter, whose namespace gains their proxies before the
 * next execution starts (variables stay). Names it has already are skipped. 0; <0 with *err
 * filled: an unconfigured (INVALID) or unavailable (UPSTREAM) server, an unknown (NOT_FOUND) or
 * dead (GONE) session. */
int sessions_add_servers(struct sessions *s, const char *id, json_t *names, struct sbx_error *err);
/* -ENOENT for an unknown id, -ENOMEM when its description could not be built. */
int sessions_info(struct sessions *s, const char *id, json_t **ret_info);
/* The sessions tenant may see: its own, or with tenant NULL (the operator) all of them (NULL
 * when out of memory). */
json_t *sessions_list(struct sessions *s, const struct tenant *tenant);
int sessions_delete(struct sessions *s, const char *id);
/* sessions_delete() saying why (reason: what a running execution and later calls report,
 * e.g. "it was reset"). -ENOENT for an unknown id. */
int sessions_end(struct sessions *s, const char *id, const char *reason);
bool sessions_exists(struct sessions *s, const char *id);
/* Session id exists and belongs to tenant (any tenant's when tenant is NULL). Ids are never
 * reused, so a true answer stays true for as long as the session lives. */
bool sessions_visible(struct sessions *s, const char *id, const struct tenant *tenant);
unsigned sessions_live(struct sessions *s);
/* {live, toolCalls: {workers, maxWorkers, busy, jobs, refused}} (new reference). */
json_t *sessions_stats(struct sessions *s);
/* What a session may ask to reach (the --egress-allow patterns, new reference); an empty
 * array when sessions get no network. */
json_t *sessions_network_ceiling(struct sessions *s);
/* Why code (len bytes, NUL-terminated) may not run in a session: more than EXEC_MAX_CODE bytes,
 * a NUL inside, or nothing but whitespace (nothing would run: more likely code lost on the way
 * than a wish to do nothing); NULL when it may. Static text, "code: ..." (field "code" of an
 * INVALID_REQUEST). The one check of a session's code: the front ends ask here before
 * anything starts (an event stream, a session made for the code), as sessions_execute()'s
 * callers must. */
const char *sessions_code_check(const char *code, size_t len);
/* Run code in session id. 0 and *ret_result {executionId, status, stdout, stderr, error, result,
 * durationMs, sessionAlive, truncated, mcpCalls, verdict, sessionCpuMs, hostCpuMs, artifacts[,
 * artifactsError][, metrics (net.egress_*: sessions with a network policy)]}; <0 with *err (unknown
 * session, dead session, the owner's maxRunning reached (LIMIT), shutdown (UNAVAILABLE), sandbox
 * failure (INTERNAL)). */
int sessions_execute(struct sessions *s, const char *id, const char *code, int64_t timeout_ms,
                     const struct session_stream *stream, json_t **ret_result,
                     struct sbx_error *err);
/* The tool calls of session id that wait for a person's decision (policy ask), oldest first:
 * [{id, server, tool, arguments}] in *ret (new reference); -ENOENT for an unknown session,
 * -ENOMEM. */
int sessions_approvals(struct sessions *s, const char *id, json_t **ret);
/* The same over every session tenant may see (its own; NULL: the operator, all of them), oldest
 * first, each with its sessionId: [{id, sessionId, server, tool, arguments}] in *ret (new
 * reference). 0, or -ENOMEM with *err (INTERNAL). */
int sessions_approvals_all(struct sessions *s, const struct tenant *tenant, json_t **ret,
                           struct sbx_error *err);
/* Decide the waiting call aid of session id: approve sends it to its server, refuse answers the
 * code with ApprovalDenied. 0; -ENOENT with *err (NOT_FOUND: no such session; or
 * APPROVAL_NOT_FOUND: no such call waits, it was decided, timed out, or its execution ended). */
int sessions_approval_decide(struct sessions *s, const char *id, const char *aid, bool approve,
                             struct sbx_error *err);
/* The question a person is asked about a waiting call (one of sessions_approvals()), written by
 * sandboxd alone: the server and tool names quoted, the arguments as JSON with long values cut
 * and secrets redacted (caller frees; NULL when out of memory). */
char *sessions_approval_prompt(json_t *approval);
/* The docs of MCP tools as sessions show them (the typed stubs' renderer), rendered in a
 * sandbox: servers is [{name, alias, tools}] (borrowed; tools with their aliases), detail
 * "summary" (signature and first sentence) or "full" (the stub's def and docstring). 0 and
 * *ret_docs {server: {tool: text}} (new reference); <0 with *err (INTERNAL). */
int sessions_tool_docs(struct sessions *s, json_t *servers, const char *detail, json_t **ret_docs,
                       struct sbx_error *err);
/* Interrupt the execution running in session id as its time limit would (SIGINT: the code sees
 * an exception, pending tasks are cancelled, the session survives and the execution reports
 * status "timeout"). The signal is lost if it lands before the interpreter has started running
 * the code, so a caller that must stop an execution repeats it and finally deletes the session.
 * 0 when sent, -ENOENT for an unknown id, -EALREADY when no execution is running. */
int sessions_interrupt(struct sessions *s, const char *id);
/* ---- agent sessions (session_create.agent) ----
 * An agent session's interpreter is not driven one execution at a time: it serves a protocol of
 * its own, and what it runs (commands, interpreters) lives as long as the session. So the CPU
 * rule between executions (cpu.h) does not apply; its owner bounds its life instead (the E2B
 * layer: its timeout, sessions_end()). It counts as busy while it is served, and the idle
 * reaper leaves it alone; /execute, interrupt and add_servers refuse it. */
struct session_agent {
    void *userdata;
    /* A frame of the interpreter (borrowed; untrusted: the sandbox wrote it). Runs on the
     * serving thread and must not block. */
    void (*on_frame)(void *userdata, json_t *msg);
    /* What the interpreter itself wrote on stdout or stderr (1, 2); may be NULL. */
    void (*on_output)(void *userdata, int stream, const char *data, size_t len);
};

/* Carry agent session id's frames on the calling thread until the session ends: every frame the
 * interpreter sends goes to a->on_frame, and what sessions_send() queued is written as the
 * interpreter reads. Returns 0 once the session ended (deleted, reaped by its owner, shut down,
 * or its interpreter died), with why in *err (GONE); <0 with *err when it cannot be served
 * (NOT_FOUND: unknown; INVALID: not an agent session, or served already). */
int sessions_serve(struct sessions *s, const char *id, const struct session_agent *a,
                   struct sbx_error *err);
/* Queue one frame for agent session id's interpreter; never blocks (session_send()). 0,
 * -ENOENT (no such live session), -EPIPE (its interpreter is gone), -ENOBUFS, -ENOMEM. */
int sessions_send(struct sessions *s, const char *id, const json_t *msg);
/* ---- one call of a front end: get or create a session, then execute ----------------------
 * A front end that keeps sessions of its own naming (the MCP server: a connection's automatic
 * and named sessions) runs code with sessions_call(): the session is got or created, made ready,
 * and the code runs in it; when the session ended before the code could run in it (reaped,
 * ended by a concurrent call, its interpreter died), the front end is told to forget it and the
 * call is made once more, in the session got next. What is the front end's own comes as hooks,
 * each called on the calling thread. */
struct session_call {
    void *userdata;
    /* The session to run in: the front end's, found, or created (sessions_create()) when it has
     * none. 0 with ret_id; <0 with *err (a -ENOENT: it ended meanwhile, try again). Required. */
    int (*get)(void *userdata, char ret_id[SESSION_ID_MAX + 1], struct sbx_error *err);
    /* Make session id ready for the code, e.g. put files in; may be NULL. 0; -ENOENT when the
     * session ended (try again); <0 with *err. */
    int (*prepare)(void *userdata, const char *id, struct sbx_error *err);
    /* The call executes in session id from now on (NULL: no longer), for the front end's
     * cancellation to find it; false when the call was cancelled (before: nothing runs; while
     * it ran: its session's end is no reason to try again). May be NULL. */
    bool (*executing)(void *userdata, const char *id);
    /* Run the execution: sessions_execute() on this thread when NULL; a front end that runs it
     * on a thread of its own (approvals that wait for a person) returns as sessions_execute()
     * does, or a value > 0 of its own, which sessions_call() passes on. */
    int (*execute)(void *userdata, const char *id, const char *code, int64_t timeout_ms,
                   json_t **ret_result, struct sbx_error *err);
    /* Session id (perhaps "": none was got) ended before the code could run in it: the front
     * end forgets it, and the next get() finds or makes another. May be NULL. */
    void (*ended)(void *userdata, const char *id);
};

/* Run code (passed by sessions_code_check()) in the session call->get() gives, as described
 * above; stream is sessions_execute()'s (unused with call->execute). What call->execute
 * returns, or sessions_execute()'s 0 and *ret_result; -ECANCELED (call->executing said so: no
 * answer is due); -ENOENT with *err when the session ended before the code ran in it twice;
 * another -errno with *err from a hook or the execution. */
int sessions_call(struct sessions *s, const struct session_call *call, const char *code,
                  int64_t timeout_ms, const struct session_stream *stream, json_t **ret_result,
                  struct sbx_error *err);

/* The working directory (/tmp) of session id as the host reaches it: an O_PATH directory fd
 * opened through /proc/PID/root of the live interpreter (caller closes; session/files.h works
 * beneath it), and the host ids its sandbox runs as (owner of what the host creates there).
 * -ENOENT for an unknown or ended session. */
int sessions_workdir(struct sessions *s, const char *id, int *ret_fd, uid_t *ret_uid,
                     gid_t *ret_gid);

#endif
