// SPDX-License-Identifier: MIT
/*
 * session_int — what the files of the session module share and nobody else
 * sees: the session and sessions structures, and the RPC bridge (bridge.c)
 * that session.c drives. session.c owns the lifecycle (create, execute,
 * delete, reap, shut down), bridge.c the frames between host and interpreter
 * (RPC requests in, answers out through a bounded outbox; tool calls on the
 * worker pool of util/workpool.c), cpu.c the rule for the time between
 * executions, lifecycle.c the states below.
 *
 * The life of a session (struct session's state, under owner->lock):
 *
 *   STARTING --listed [C]--> IDLE (no CPU rule) or ARMED (a CPU budget)
 *   STARTING --failed to start, or shutdown began [C]--> ENDED
 *
 *        +-------------------------- execute [X] ---------------------------+
 *        |                                                                  v
 *   IDLE, ARMED, STOPPED                                                 RUNNING
 *        ^                                                                  |
 *        +-- done, interpreter alive [X]: IDLE (no CPU rule), ARMED --------+
 *            (a budget), STOPPED (a budget of 0: stopped at once)
 *
 *   ARMED --what the last execution left running spent the budget [W]--> STOPPED
 *   IDLE, ARMED, STOPPED, RUNNING --unlisted [E]--> ENDED
 *   ENDED: freed when the last reference goes (session_unref)
 *
 * [C] sessions_create. [X] the executing thread (sessions_execute, exec_lock held: one
 * execution at a time, so RUNNING is never entered twice). [W] the CPU watchdog
 * (sessions_on_budget). [E] an ender: DELETE (sessions_end), the idle reaper (not RUNNING),
 * sessions_shutdown, or [X] when its execution did not leave the interpreter alive. The
 * table holds exactly the sessions from IDLE to RUNNING (session_listed()). An execution
 * may still run in an ENDED session (its thread holds a reference) until its killed
 * interpreter makes it return.
 */
#ifndef SANDBOXD_SESSION_SESSION_INT_H
#define SANDBOXD_SESSION_SESSION_INT_H

#include <assert.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <uthash.h>

#include "egress/proxy.h"
#include "exec/cell.h"
#include "pool/profile.h"
#include "session/cpu.h"
#include "session/links.h"
#include "session/session.h"
#include "util/buf.h"
#include "util/lifecycle.h"
#include "util/macros.h"
#include "util/thread.h"
#include "util/workpool.h"

struct workspace;

#define SESSION_ID_LEN      32          /* hex digits, after the instance prefix */
#define SESSION_ENDED_KEPT  64          /* why the last sessions ended, for late callers */
#define SESSION_OUTBOX_MAX  (64u << 20) /* answers the interpreter has not read yet, at most */
#define SESSION_OUTBOX_FULL (1u << 20)  /* read no more requests while this much waits */
/* The end reason of every session sessions_shutdown() ends; their executions answer 503. */
#define SESSION_SHUTDOWN_REASON "sandboxd is shutting down"

/* The order of the listed states matters: session_listed(). */
enum session_state {
    SESSION_STARTING, /* its interpreter starts; not listed */
    SESSION_IDLE,     /* listed, between executions, no CPU rule */
    SESSION_ARMED,    /* between executions, the CPU budget running */
    SESSION_STOPPED,  /* between executions, stopped: its leftover work spent the budget */
    SESSION_RUNNING,  /* an execution runs */
    SESSION_ENDED,    /* unlisted (or never listed): nothing new runs in it */
    SESSION_STATE_COUNT
};

struct session {
    char id[SESSION_ID_MAX + 1];
    uint64_t serial; /* unique in this process: how the CPU watchdog names the session */
    struct sessions *owner;
    struct tenant *tenant;        /* NULL: the operator's */
    char *workspace;              /* the store's key: "name", or "tenant/name" (workspace_key()) */
    struct workspace *wsh;        /* open while the session lives */
    json_t *servers;              /* names (grows under owner->lock: sessions_add_servers) */
    pthread_mutex_t servers_lock; /* one sessions_add_servers at a time */
    struct cell *cell;
    char link[SESSION_LINK_NAME + 1]; /* its working directory's link (links.h), or "" */
    struct egress_tap *tap; /* a network policy: the proxy's hold on the cell's listener */
    json_t *network;        /* its allow list, for the description; NULL: no network */
    uint64_t memory_mb;
    char profile[PROFILE_NAME_MAX + 1]; /* "default" or the profile it came from */
    const char *agent;                  /* NULL, or the protocol it serves (session.h); static */
    pthread_mutex_t exec_lock;          /* one execution at a time */
    atomic_int refs;
    atomic_uint mcp_calls;
    atomic_uint_fast64_t host_cpu_ns;  /* sandboxd's CPU spent on its workspace calls, in all */
    atomic_uint_fast64_t host_cpu_cap; /* host_cpu_ns the running execution may reach */

    /* bridge.c */
    pthread_mutex_t write_lock; /* out and the writes to the socket */
    struct buf out;             /* frames (or the rest of one) the interpreter has not taken */
    /* The socket failed: nothing more is sent. Not a lifecycle state: it is the socket's,
     * under write_lock, and a session learns of it only when an execution ends. */
    bool broken;
    int wake_fd;                /* eventfd: out became non-empty */
    struct workpool_queue rpcq; /* its tool calls */

    /* approvals.c: calls waiting for a person's decision, the time they held the running
     * execution, and that execution's stream (told of new approvals and sent calls) */
    pthread_mutex_t approvals_lock;
    struct session_approval *approvals;
    unsigned n_approvals;
    int64_t held_since_us; /* > 0: a call has waited since then */
    int64_t held_us;       /* held in the running execution before held_since_us */
    const struct session_stream *stream;

    struct session_cpu cpu;
    /* cpu is set up (the kernel allowed the timer). Not a state: fixed before the session is
     * listed, it decides whether an idle session is IDLE or ARMED. */
    bool cpu_rule;

    /* under owner->lock: */
    int64_t created_us, last_used_us, idle_us;
    uint64_t executions;
    enum session_state state;
    uint64_t stopped_after;              /* STOPPED: the execution whose leftover work it was */
    uint64_t cpu_total_ns;               /* at the end of the last execution */
    uint64_t cpu_idle_ns;                /* used between executions, up to the last one's start */
    char end_reason[128];                /* why it ended, when something ended it */
    struct session *all_prev, *all_next; /* every session allocated, for shutdown */
    UT_hash_handle hh;
};

struct session_ended {
    char id[SESSION_ID_MAX + 1];
    char reason[128];
};

struct sessions {
    struct sessions_options opt;
    const struct jail_config *jail;
    struct pool *pool;
    struct mcp_registry *mcp;
    struct workspace_store *ws;
    struct metrics *metrics;
    struct workpool *rpc; /* the threads behind tool calls */
    struct cpuwatch *cpuw;
    struct session_links *links; /* NULL: the sessions get no host path (hostWorkdir) */
    pthread_mutex_t lock;
    pthread_cond_t cond; /* the reaper's wake-up */
    pthread_cond_t gone; /* a session was freed */
    struct session *table;
    struct session *all; /* every session allocated (listed or not) */
    unsigned allocated;
    unsigned live;
    struct session_ended ended[SESSION_ENDED_KEPT]; /* a ring */
    unsigned ended_next;
    uint64_t next_serial;
    bool stopping;              /* sessions_shutdown() began: nothing new starts */
    struct thread_group reaper; /* its stop: at the start of sessions_shutdown() */
    uint64_t created, reaped;
};

/* ---- lifecycle.c ---- */
/* from -> to is an edge of the diagram above. */
bool session_transition_ok(enum session_state from, enum session_state to);
/* Move s to state `to` (owner->lock held); assert()s that the edge is legal. */
void session_set_state(struct session *s, enum session_state to);
/* The name of a state ("STARTING", ...), for messages. */
const char *session_state_name(enum session_state st);
/* assert_session_state(s, SESSION_A, SESSION_B...): a precondition, s is in one of these. */
#define assert_session_state(s, ...) assert(LIFECYCLE_IN((s)->state, __VA_ARGS__))

/* A session in this state is in the table (IDLE .. RUNNING). */
static inline bool session_listed(enum session_state st)
{
    return st >= SESSION_IDLE && st <= SESSION_RUNNING;
}

void session_ref(struct session *s);
void session_unref(struct session *s);
/* Remove s from the table with the reason it ended (lock held); the table's reference is the
 * caller's to drop. The reason is remembered for a while (sessions_why_ended). */
void session_unlist(struct sessions *ss, struct session *s, const char *reason);
/* Why session id ended, if it did recently (lock held; NULL when unknown). */
const char *sessions_why_ended(const struct sessions *ss, const char *id);
/* End s, unlisted: its interpreter is killed at once (a running execution then reports it) and
 * its queued tool calls are dropped; drops the table's reference. */
void session_end(struct session *s);
/* The listed session id with a reference the caller drops (session_unref), or NULL. */
struct session *sessions_lookup(struct sessions *ss, const char *id);
/* *e: the server is shutting down and ended the session (UNAVAILABLE, SHUTTING_DOWN). */
void session_shut_err(struct sbx_error *e);
/* CPU time of the session so far; walk: look for subprocesses too (they may run only during
 * an execution, so an idle session's count needs no walk). */
uint64_t session_cpu_now(struct session *s, bool walk);

/* ---- servers.c ---- */
/* The init job of a session with the MCP servers names and the saved tools of wsh: {type:
 * "session", servers, discovered, tools} (new reference), or NULL with *err filled. */
json_t *session_init_job(struct sessions *ss, json_t *names, struct workspace *wsh,
                         struct sbx_error *err);
/* name is one of s's servers (takes owner->lock). */
bool session_has_server(struct session *s, const char *name);

/* {sessionId, workspace, servers, ...} of GET /v1/sessions/ID (lock held; new reference). */
json_t *session_describe(struct session *s, const struct sessions *ss);

/* The execution a bridge serves (the exec hooks' userdata). */
struct session_exec {
    struct session *s;
    const struct session_stream *stream;
};

/* ---- approvals.c ---- */
void session_approvals_init(struct session *s);
/* Refuse nothing, free what is left; the session is being freed. */
void session_approvals_done(struct session *s);
/* A tool call whose policy is ask (payload: {type, server, tool, arguments}, id: the request's;
 * both borrowed): it waits for a decision, and the running execution's stream is told. 0;
 * -EBUSY (too many waiting), -ENOMEM, -EIO (no random id): the caller answers the call. */
int session_approval_add(struct session *s, json_t *id, json_t *payload);
/* An execution starts (its stream, may be NULL) / ends (the calls still waiting are refused). */
void session_approvals_begin(struct session *s, const struct session_stream *stream);
void session_approvals_end(struct session *s);
/* The exec hook held() (userdata: struct session_exec): the time held so far; refuses the
 * calls whose time to be decided is up. */
int64_t session_held_us(void *userdata, int64_t now, int64_t *ret_wake_us);
/* Tell the running execution's stream that a tool call goes to its server (any thread). */
void session_notify_rpc(struct session *s, json_t *summary);

int session_bridge_init(struct session *s);
void session_bridge_done(struct session *s);
/* Queue one frame for the interpreter: written at once when the socket takes it, else kept
 * (up to SESSION_OUTBOX_MAX) and written by the executing thread. 0, -EPIPE (gone), -ENOBUFS
 * (no room: the interpreter is not reading), -ENOMEM. */
int session_send(struct session *s, const json_t *msg);
/* An error answer to the interpreter's request id (kind: its errorKind, e.g. "approval_denied";
 * any thread). */
void session_bridge_reply(struct session *s, json_t *id, const char *error, const char *kind);
/* Send a tool call to its server now (counted in mcpCalls, told to the stream as an rpc event),
 * on the worker pool; refused at once beyond the limits. Any thread. */
void session_bridge_send_call(struct session *s, json_t *id, json_t *payload);
/* The exec hooks of an execution (userdata: struct session_exec). */
int session_on_message(void *userdata, struct cell *c, json_t *msg);
unsigned session_pending(void *userdata);
void session_flush(void *userdata, struct cell *c);

#endif
