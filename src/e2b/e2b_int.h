// SPDX-License-Identifier: MIT
/*
 * e2b_int — what the files of the e2b module share: the sandboxes (sandbox.c: the table, each
 * sandbox's worker carrying its agent's frames, the reaper of timeouts), the calls that wait
 * for the agent's answers, and the routes (control.c, envd.c, process.c, interp.c).
 *
 * A call is one request's mailbox: it sends an op to the sandbox's agent with a request id
 * (rid) and receives the frames carrying that rid, or, once it subscribed to a process, that
 * process's output and end. The agent's worker only appends (never blocks, a call holds at most
 * E2B_CALL_MAX bytes and is marked overflowing beyond); the request's thread takes them.
 *
 * Locking: one lock, e2b->lock, over the table, every sandbox's mutable fields and every call.
 * A sandbox is reference-counted (the table, its agent's worker and each request hold one).
 */
#ifndef SANDBOXD_E2B_E2B_INT_H
#define SANDBOXD_E2B_E2B_INT_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <uthash.h>

#include "tenant/tenant.h"
#include "e2b/e2b.h"
#include "e2b/error.h"
#include "util/error.h"
#include "util/thread.h"
#include "util/workpool.h"

#define E2B_ID_MAX           64               /* a session id (session_int.h SESSION_ID_MAX) */
#define E2B_TOKEN_BYTES      32               /* of randomness in a sandbox's access token */
#define E2B_CALL_MAX         (16u << 20)      /* what one call may hold unread */
#define E2B_ENVD_VERSION     "0.5.7"          /* the envd features served (docs/internals/e2b.md) */
#define E2B_ENDED_KEPT       64               /* why the last sandboxes ended, for late callers */
#define E2B_UNARY_TIMEOUT_US (60LL * 1000000) /* an op the agent answers at once */

struct e2b_event {
    struct e2b_event *next;
    json_t *msg; /* the agent's frame (owned) */
    size_t bytes;
};

struct e2b_sandbox;

struct e2b_call {
    uint64_t rid;
    int64_t pid; /* > 0: the process whose output and end it receives */
    struct e2b_sandbox *sb;
    pthread_cond_t cond; /* an event came, or the sandbox ended */
    struct e2b_event *head, *tail;
    size_t bytes;
    bool overflow; /* the reader fell behind by E2B_CALL_MAX: events were dropped */
    UT_hash_handle hh;
};

struct e2b_sandbox {
    struct workpool_job agent_job; /* first: the job is the sandbox (sandbox.c) */
    char id[E2B_ID_MAX + 1];       /* the session's */
    struct e2b *e;
    unsigned refs;
    struct tenant *tenant; /* the owner; NULL: the operator */
    char token[2 * E2B_TOKEN_BYTES + 1];
    unsigned char token_hash[TENANT_HASH_LEN];
    char *template_id; /* as the client named it */
    json_t *metadata;  /* object of strings */
    json_t *network;   /* {"allowOut": [...]} as served, or NULL: none */
    uint64_t memory_mb;
    int64_t started_ms;   /* wall clock, ms since the epoch */
    int64_t end_us;       /* monotonic: the E2B timeout */
    int64_t last_used_us; /* monotonic: the last request */
    unsigned active;      /* requests in progress (a sandbox in use is not idle) */
    bool listed;          /* in the table; false once its session ended */
    uint64_t next_rid;
    struct e2b_call *calls; /* by rid */
    UT_hash_handle hh;
};

struct e2b_ended {
    char id[E2B_ID_MAX + 1];
    char why[128];
};

struct e2b {
    struct e2b_options opt;
    pthread_mutex_t lock;
    pthread_cond_t cond; /* the reaper's wake-up: a timeout changed, or stop */
    struct e2b_sandbox *table;
    struct thread_group reaper; /* its stop is the module's: no new sandbox from then on */
    struct workpool *agents;    /* a worker per sandbox carries its agent's frames */
    struct workpool_queue agentq;
    struct e2b_ended ended[E2B_ENDED_KEPT];
    unsigned ended_next;
};

/* ---- sandbox.c ---- */
/* The reaper (the thread that ends sandboxes past their timeout or idle time) and the agents'
 * worker pool. -errno; e2b_free() undoes what was done. */
int e2b_threads_start(struct e2b *e);
/* e2b_shutdown() was called: no new sandbox. */
bool e2b_stopping(struct e2b *e);
/* Hand sandbox sb (just created; takes the caller's reference on success as the table's) to a
 * worker that carries its agent's frames, and list it. -errno when no worker takes it (the
 * session is ended). */
int e2b_sandbox_start(struct e2b *e, struct e2b_sandbox *sb);
void e2b_sandbox_free(struct e2b_sandbox *sb);
/* Kill sb: unknown at once, its session ended (its agent's worker then finishes). */
void e2b_sandbox_end(struct e2b_sandbox *sb, const char *why);
/* The listed sandbox id with a reference (e2b_sandbox_put()), or NULL. With tenant_check, only
 * when it is the tenant's (any when tenant is NULL: the operator). Counts as a use. */
struct e2b_sandbox *e2b_sandbox_get(struct e2b *e, const char *id, bool tenant_check,
                                    const struct tenant *tenant);
void e2b_sandbox_put(struct e2b_sandbox *sb);
/* Fill *err: NOT_FOUND for sandbox id, saying why it ended when that is known. */
void e2b_not_found(struct e2b *e, const char *id, struct sbx_error *err);
/* The token (hex) matches sb's, in constant time. */
bool e2b_token_ok(const struct e2b_sandbox *sb, const char *token);
/* Set sb's timeout to now + seconds (capped at max_timeout_s); only_extend keeps a later one. */
void e2b_sandbox_set_timeout(struct e2b_sandbox *sb, int64_t seconds, bool only_extend);
/* {"sandboxID", "templateID", "clientID", "envdVersion", "envdAccessToken",
 * "trafficAccessToken", ...} of create and connect; or the detail of GET (new references). */
json_t *e2b_sandbox_json(struct e2b_sandbox *sb);
json_t *e2b_sandbox_detail(struct e2b_sandbox *sb, bool listed);
/* The sandboxes tenant sees (all for NULL), newest first, with a reference each (put them);
 * *ret_n of them in *ret (caller frees the array). */
int e2b_sandbox_list(struct e2b *e, const struct tenant *tenant, struct e2b_sandbox ***ret,
                     size_t *ret_n);

/* Open a call on sb (registers a new rid). NULL when out of memory. A call whose op started a
 * process (the agent answers {"start": {"pid"}}) receives that process's output and end. */
struct e2b_call *e2b_call_open(struct e2b_sandbox *sb);
/* Send op (its "type" and "rid" are set here) to the agent. 0, or <0 with *err filled. */
int e2b_call_send(struct e2b_call *c, json_t *op, struct sbx_error *err);
/* The next event until deadline_us: 0 and *ret (owned); -ETIMEDOUT; -EPIPE when the sandbox
 * ended (*err says why); -ENOBUFS when the reader fell behind. */
int e2b_call_next(struct e2b_call *c, int64_t deadline_us, json_t **ret, struct sbx_error *err);
void e2b_call_close(struct e2b_call *c);
/* Send op and wait for its answer: 0 and *ret_ok (its "ok" member, new reference), or <0 and
 * *err (the agent's Connect error, or why the sandbox could not answer). */
int e2b_call_unary(struct e2b_sandbox *sb, json_t *op, json_t **ret_ok, struct sbx_error *err);
/* Tell the agent something that needs no answer (no rid); takes op (NULL: nothing). */
void e2b_notify(struct e2b_sandbox *sb, json_t *op);

/* ---- the routes ---- */
void e2b_control_route(struct e2b *e, const struct http_request *req, const char *path,
                       struct tenant *tenant, struct http_reply *reply);
/* sb is the sandbox the data plane request named, already authorized (a reference the route
 * keeps or puts). */
void e2b_envd_route(struct e2b_sandbox *sb, const struct http_request *req, const char *path,
                    struct http_reply *reply);
void e2b_process_route(struct e2b_sandbox *sb, const struct http_request *req, const char *method,
                       struct http_reply *reply);
void e2b_interp_route(struct e2b_sandbox *sb, const struct http_request *req, const char *path,
                      struct http_reply *reply);

/* ---- helpers (e2b.c) ---- */
/* The body of req as a JSON object (an empty body is {}); NULL with reply filled on failure. */
json_t *e2b_json_body(const struct http_request *req, enum e2b_surface surface,
                      struct http_reply *reply);
/* A Connect request of method kind stream (enveloped) or unary: its message, or NULL with
 * reply filled. */
json_t *e2b_connect_body(const struct http_request *req, bool stream, struct http_reply *reply);
/* Answer a streaming Connect call with its error: 200, the end-of-stream message alone (a
 * non-200 status would lose the code on the way to connect-web). Consumes err. */
void e2b_stream_error(struct http_reply *reply, struct sbx_error *err);
/* Answer status with body (taken); a NULL body (what json_pack gives when out of memory) is
 * the surface's 500 instead. */
void e2b_reply_json(struct http_reply *reply, enum e2b_surface surface, int status, json_t *body);
/* The agent's error {"code", "message"} as an sbx_error (Connect code kept when it is one). */
void e2b_agent_error(const json_t *error, struct sbx_error *err);

#endif
