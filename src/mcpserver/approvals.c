// SPDX-License-Identifier: MIT
/*
 * approvals (MCP server) — the tool calls of run_python's code that wait for
 * a person (session/approvals.c holds them), as an MCP client meets them:
 *
 * - a client that declared the elicitation capability is asked while the
 *   run_python call runs: elicitation/create, with a message sandboxd writes
 *   (sessions_approval_prompt()) and a flat schema of one boolean, approve;
 *   its answer decides the call (accept with approve: true lets it go,
 *   anything else refuses it);
 * - a client that cannot be asked gets run_python's answer at once, saying
 *   which call waits and how to decide it (the tool approve_call, or the HTTP
 *   API), while the execution goes on, held; approve_call decides and answers
 *   with the rest of the execution, as run_python would have.
 *
 * So the execution runs on a thread of its own (struct srv_exec), and the
 * tools/call that listens to it (run_python, then approve_call) attaches
 * itself as the listener: stdout goes to its progress, approvals to its
 * client. Sandboxed code takes no part: it only waits for its answer.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcpserver/server_int.h"
#include "proto/jsonrpc.h"
#include "session/session.h"
#include "util/fmt.h"
#include "util/log.h"
#include "util/macros.h"

#define SRV_MAX_ELICITS 64 /* elicitations of one connection not answered yet */

/* Who listens to an execution: the tools/call waiting for it. */
struct srv_listener {
    struct mcp_server_conn *c;
    const struct mcp_server_out *out; /* NULL: nothing can be sent but the answer */
    struct srv_progress *prog;        /* NULL: no progress */
    bool elicit;                      /* the client can be asked */
};

struct srv_exec {
    struct srv_exec *next; /* on c->execs while it waits with nobody asked */
    pthread_mutex_t lock;
    pthread_cond_t cond; /* done, or a call waits that the listener cannot ask about */
    atomic_int refs;     /* the thread's, the listener's, c->execs' */
    struct mcp_server *srv;
    char id[SESSION_ID_MAX + 1]; /* the sandbox session */
    char *label;                 /* its name in answers */
    json_t *notes;               /* for the answer that ends it */
    char *code;
    int64_t timeout_ms;
    atomic_bool done; /* set under lock too, so that waiters see it with the result */
    int r;
    json_t *result;
    struct sbx_error err;
    json_t *waiting; /* calls no listener could ask about: [{id, server, tool, arguments}] */
    json_t *ids;     /* every approval id of this execution, for approve_call */
    struct srv_listener *listener;
};

/* An elicitation/create sent and not answered yet. */
struct srv_elicit {
    struct srv_elicit *next;
    char rpc_id[96];                  /* our request's id */
    char sandbox[SESSION_ID_MAX + 1]; /* the session of the call */
    char approval[65];                /* its approval id */
};

/* ---- asking a client ------------------------------------------------------------------------ */

bool srv_elicit_declared(json_t *capabilities, const char *version)
{
    json_t *e = json_object_get(capabilities, "elicitation");
    if (!version || strcmp(version, "2025-06-18") < 0 || !json_is_object(e))
        return false;
    /* 2025-11-25: {"form": {}, "url": {}}; an empty object is form (the spec's backward
     * compatibility); url alone is no form. */
    return json_object_size(e) == 0 || json_object_get(e, "form") != NULL;
}

/* Send elicitation/create for approval (of sandbox session sandbox) to the listener's client
 * (e->lock held). False when it could not be sent: the caller lets it wait unasked. */
static bool srv_elicit_send(struct srv_listener *l, const char *sandbox, json_t *approval)
{
    struct mcp_server_conn *c = l->c;
    const char *aid = json_string_value(json_object_get(approval, "id"));
    struct srv_elicit *q = calloc(1, sizeof(*q));
    char *message = sessions_approval_prompt(approval);
    if (!q || !message || !aid) {
        free(q);
        free(message);
        return false;
    }
    snprintf(q->rpc_id, sizeof(q->rpc_id), "sandboxd-approval-%s", aid);
    snprintf(q->sandbox, sizeof(q->sandbox), "%s", sandbox);
    snprintf(q->approval, sizeof(q->approval), "%s", aid);
    json_t *params = json_pack("{s:s, s:{s:s, s:{s:{s:s, s:s, s:s}}, s:[s]}}", "message", message,
                               "requestedSchema", "type", "object", "properties", "approve", "type",
                               "boolean", "title", "Approve", "description",
                               "true lets this tool call go to its server; false refuses it",
                               "required", "approve");
    free(message);
    if (params && srv_since(c, SRV_V_2025_11_25))
        json_object_set_new(params, "mode", json_string("form"));
    json_t *id = json_string(q->rpc_id);
    json_t *req = params && id ? jsonrpc_request_new(id, "elicitation/create", params) : NULL;
    json_decref(id);
    json_decref(params);
    pthread_mutex_lock(&c->lock);
    bool room = c->n_elicits < SRV_MAX_ELICITS && !c->closed;
    if (room && req) {
        q->next = c->elicits;
        c->elicits = q;
        c->n_elicits++;
    }
    pthread_mutex_unlock(&c->lock);
    if (!room || !req) {
        json_decref(req);
        free(q);
        return false;
    }
    l->out->notify(l->out->userdata, req);
    json_decref(req);
    return true;
}

void srv_elicit_answer(struct mcp_server_conn *c, json_t *msg)
{
    const char *rid = json_string_value(json_object_get(msg, "id"));
    if (!rid)
        return;
    pthread_mutex_lock(&c->lock);
    struct srv_elicit **pp = &c->elicits, *q = NULL;
    for (; *pp; pp = &(*pp)->next)
        if (strcmp((*pp)->rpc_id, rid) == 0) {
            q = *pp;
            *pp = q->next;
            c->n_elicits--;
            break;
        }
    pthread_mutex_unlock(&c->lock);
    if (!q)
        return; /* not ours, or answered already: responses to nothing are ignored */
    json_t *result = json_object_get(msg, "result");
    const char *action = json_string_value(json_object_get(result, "action"));
    bool approve = action && strcmp(action, "accept") == 0 &&
                   json_is_true(json_object_get(json_object_get(result, "content"), "approve"));
    struct sbx_error err;
    if (sessions_approval_decide(c->srv->sessions, q->sandbox, q->approval, approve, &err) < 0) {
        log_info("mcp: an elicitation answer came for a call no longer waiting: %s",
                 err.message ? err.message : "gone");
        sbx_error_clear(&err);
    }
    free(q);
}

/* ---- the execution's thread ------------------------------------------------------------------ */

/* Locks: c->lock (the lists) is never taken with an execution's lock held, except by
 * srv_elicit_send, which is why nothing here takes an execution's lock under c->lock: the
 * references and `done` are atomics. */

static void srv_exec_ref(struct srv_exec *e)
{
    atomic_fetch_add(&e->refs, 1);
}

static void srv_exec_unref(struct srv_exec *e)
{
    if (atomic_fetch_sub(&e->refs, 1) != 1)
        return;
    pthread_mutex_destroy(&e->lock);
    pthread_cond_destroy(&e->cond);
    free(e->label);
    free(e->code);
    json_decref(e->notes);
    json_decref(e->result);
    json_decref(e->waiting);
    json_decref(e->ids);
    sbx_error_clear(&e->err);
    free(e);
}

static void srv_exec_output(void *userdata, int stream, const char *data, size_t len)
{
    struct srv_exec *e = userdata;
    pthread_mutex_lock(&e->lock);
    if (e->listener && e->listener->prog)
        srv_progress_output(e->listener->prog, stream, data, len);
    pthread_mutex_unlock(&e->lock);
}

static void srv_exec_approval(void *userdata, json_t *approval)
{
    struct srv_exec *e = userdata;
    pthread_mutex_lock(&e->lock);
    json_array_append(e->ids, json_object_get(approval, "id"));
    struct srv_listener *l = e->listener;
    if (!(l && l->elicit && srv_elicit_send(l, e->id, approval))) {
        json_array_append(e->waiting, approval);
        pthread_cond_broadcast(&e->cond);
    }
    pthread_mutex_unlock(&e->lock);
}

static void *srv_exec_thread(void *arg)
{
    struct srv_exec *e = arg;
    struct mcp_server *s = e->srv;
    struct session_stream stream = {
        .userdata = e, .on_output = srv_exec_output, .on_approval = srv_exec_approval};
    json_t *result = NULL;
    struct sbx_error err = {0};
    int r = sessions_execute(s->sessions, e->id, e->code, e->timeout_ms, &stream, &result, &err);
    pthread_mutex_lock(&e->lock);
    atomic_store(&e->done, true);
    e->r = r;
    e->result = result;
    e->err = err;
    pthread_cond_broadcast(&e->cond);
    pthread_mutex_unlock(&e->lock);
    srv_exec_unref(e);
    srv_bg_done(s);
    return NULL;
}

/* Listen to e until it ends or waits for a call listener l cannot ask about. 0 and
 * *ret_result when it ended (taken from e: nobody listens after); SRV_EXEC_WAITING and
 * *ret_waiting; <0 with *err (the execution's failure). */
static int srv_exec_listen(struct srv_exec *e, struct srv_listener *l, json_t **ret_result,
                           json_t **ret_waiting, struct sbx_error *err)
{
    pthread_mutex_lock(&e->lock);
    e->listener = l;
    if (l->elicit) {
        /* Calls that waited with nobody asked: this client can be asked now. */
        json_t *left = json_array();
        size_t i;
        json_t *a;
        json_array_foreach(e->waiting, i, a)
        {
            if (!srv_elicit_send(l, e->id, a))
                json_array_append(left, a);
        }
        json_decref(e->waiting);
        e->waiting = left;
    }
    while (!atomic_load(&e->done) && !json_array_size(e->waiting))
        pthread_cond_wait(&e->cond, &e->lock);
    e->listener = NULL;
    int r;
    if (atomic_load(&e->done)) {
        r = e->r;
        *ret_result = TAKE_PTR(e->result);
        *err = e->err;
        e->err = (struct sbx_error){0};
    } else {
        r = SRV_EXEC_WAITING;
        *ret_waiting = TAKE_PTR(e->waiting);
        e->waiting = json_array();
    }
    pthread_mutex_unlock(&e->lock);
    return r;
}

/* Put e on the connection's list of waiting executions (it holds a reference). */
static void srv_exec_park(struct mcp_server_conn *c, struct srv_exec *e)
{
    pthread_mutex_lock(&e->lock);
    json_decref(e->notes); /* told with the answer that said it waits */
    e->notes = json_array();
    pthread_mutex_unlock(&e->lock);
    srv_exec_ref(e);
    pthread_mutex_lock(&c->lock);
    e->next = c->execs;
    c->execs = e;
    pthread_mutex_unlock(&c->lock);
}

/* Take e off the list, dropping its reference, if it is on it. */
static void srv_exec_unpark(struct mcp_server_conn *c, struct srv_exec *e)
{
    bool found = false;
    pthread_mutex_lock(&c->lock);
    for (struct srv_exec **pp = &c->execs; *pp; pp = &(*pp)->next)
        if (*pp == e) {
            *pp = e->next;
            found = true;
            break;
        }
    pthread_mutex_unlock(&c->lock);
    if (found)
        srv_exec_unref(e);
}

bool srv_exec_waits(struct mcp_server_conn *c, const char *id)
{
    pthread_mutex_lock(&c->lock);
    struct srv_exec *e = c->execs;
    while (e && strcmp(e->id, id) != 0)
        e = e->next;
    bool waits = e && !atomic_load(&e->done);
    if (e)
        srv_exec_ref(e);
    pthread_mutex_unlock(&c->lock);
    if (e && !waits)
        srv_exec_unpark(c, e); /* it ended meanwhile (its calls timed out, or were decided
                                * over HTTP): the session is free again */
    if (e)
        srv_exec_unref(e);
    return waits;
}

/* The listener of a tools/call: progress when there is a token. */
static void srv_listener_init(struct srv_listener *l, struct mcp_server_conn *c, json_t *token,
                              const struct mcp_server_out *out, struct srv_progress *prog)
{
    bool can_send = out && out->notify;
    *l = (struct srv_listener){.c = c,
                               .out = can_send ? out : NULL,
                               .prog = token && can_send ? prog : NULL,
                               .elicit = c->elicit && can_send};
    if (l->prog)
        srv_progress_start(prog, out, token, srv_since(c, SRV_V_2025_03_26));
}

int srv_exec_run(struct mcp_server_conn *c, struct srv_call *k, const char *id, const char *label,
                 const char *code, int64_t timeout_ms, json_t *notes, json_t *token,
                 const struct mcp_server_out *out, json_t **ret_result, json_t **ret_waiting,
                 struct sbx_error *err)
{
    (void)k;
    *err = (struct sbx_error){0};
    struct mcp_server *s = c->srv;
    struct srv_exec *e = calloc(1, sizeof(*e));
    if (!e || !(e->label = strdup(label)) || !(e->code = strdup(code)) ||
        !(e->waiting = json_array()) || !(e->ids = json_array())) {
        if (e) {
            free(e->label);
            free(e->code);
            json_decref(e->waiting);
            free(e);
        }
        sbx_error_set(err, SBX_ERR_INTERNAL, "INTERNAL", NULL, "out of memory");
        return -ENOMEM;
    }
    pthread_mutex_init(&e->lock, NULL);
    pthread_cond_init(&e->cond, NULL);
    atomic_init(&e->refs, 2); /* the thread's and ours */
    atomic_init(&e->done, false);
    e->srv = s;
    e->timeout_ms = timeout_ms;
    e->notes = json_incref(notes);
    snprintf(e->id, sizeof(e->id), "%s", id);
    int pr = srv_bg_start(s, srv_exec_thread, e);
    if (pr < 0) {
        atomic_store(&e->refs, 1);
        srv_exec_unref(e);
        sbx_error_set(err, SBX_ERR_INTERNAL, "INTERNAL", NULL,
                      "cannot start a thread for the execution: %s", strerror(-pr));
        return pr;
    }
    struct srv_progress prog;
    struct srv_listener l;
    srv_listener_init(&l, c, token, out, &prog);
    int r = srv_exec_listen(e, &l, ret_result, ret_waiting, err);
    if (l.prog)
        srv_progress_finish(&prog);
    if (r == SRV_EXEC_WAITING)
        srv_exec_park(c, e);
    srv_exec_unref(e);
    return r;
}

/* ---- approve_call ------------------------------------------------------------------------------
 */

json_t *srv_approve_call(struct mcp_server_conn *c, json_t *args, json_t *token,
                         const struct mcp_server_out *out, struct srv_call *k)
{
    static const char *const allowed[] = {"approval_id", "approve", NULL};
    json_t *bad = srv_check_args(c, srv_call_tool(k), args, allowed);
    if (bad)
        return bad;
    const char *aid = json_string_value(json_object_get(args, "approval_id"));
    json_t *approve = json_object_get(args, "approve");
    if (!aid || !json_is_boolean(approve))
        return srv_tool_error(c,
                              "%s: approval_id (a string, from run_python's answer) "
                              "and approve (true lets the call go, false refuses it) are "
                              "required",
                              srv_call_tool(k));
    /* The execution of this connection whose code made the call: the waiting ones are
     * referenced under c->lock, then looked into under their own locks. */
    struct srv_exec *found[MCP_SERVER_MAX_SANDBOXES], *e = NULL;
    size_t n = 0;
    pthread_mutex_lock(&c->lock);
    for (struct srv_exec *x = c->execs; x && n < ARRAY_SIZE(found); x = x->next) {
        srv_exec_ref(x);
        found[n++] = x;
    }
    pthread_mutex_unlock(&c->lock);
    for (size_t j = 0; j < n; j++) {
        struct srv_exec *x = found[j];
        pthread_mutex_lock(&x->lock);
        size_t i;
        json_t *v;
        json_array_foreach(x->ids, i, v)
        {
            if (!e && strcmp(json_string_value(v), aid) == 0)
                e = x;
        }
        pthread_mutex_unlock(&x->lock);
        if (x != e)
            srv_exec_unref(x);
    }
    if (!e)
        return srv_tool_error(c,
                              "%s: no execution of this connection waits for approval "
                              "'%.64s' (it was decided, timed out, or its execution ended)",
                              srv_call_tool(k), aid);
    struct sbx_error err;
    char *already = NULL;
    if (sessions_approval_decide(c->srv->sessions, e->id, aid, json_is_true(approve), &err) < 0) {
        /* Decided over HTTP, or timed out: the execution goes on all the same, and this answers
         * with what it does next. */
        already = fmt_str("approval %.64s no longer waited (%s)", aid,
                          err.message ? err.message : "decided or timed out");
        sbx_error_clear(&err);
    }
    if (!srv_call_executing(c, k, e->id)) {
        srv_exec_unref(e);
        return NULL; /* cancelled already */
    }
    struct srv_progress prog;
    struct srv_listener l;
    srv_listener_init(&l, c, token, out, &prog);
    json_t *result = NULL, *waiting = NULL;
    int r = srv_exec_listen(e, &l, &result, &waiting, &err);
    if (l.prog)
        srv_progress_finish(&prog);
    (void)srv_call_executing(c, k, NULL);
    struct srv_run run = {.timeout_ms = e->timeout_ms};
    json_t *reply = NULL;
    if (already) {
        pthread_mutex_lock(&e->lock);
        srv_note(e->notes, "%s", already);
        pthread_mutex_unlock(&e->lock);
        free(already);
    }
    if (r != SRV_EXEC_WAITING)
        srv_exec_unpark(c, e); /* it ended: nothing of it waits any more */
    if (srv_call_cancelled(c, k)) {
        json_decref(result);
        json_decref(waiting);
    } else if (r == SRV_EXEC_WAITING) {
        run.waiting = waiting;
        run.st = json_pack("{s:s, s:s, s:s, s:O, s:O}", "status", "waiting_approval", "session",
                           e->label, "sessionId", e->id, "approvals", waiting, "notes", e->notes);
        reply = run.st ? srv_run_reply(c, &run, c->srv->opt.output_json) : NULL;
    } else if (r < 0) {
        reply = srv_tool_error(c, "%s: the execution failed: %s", srv_call_tool(k),
                               err.message ? err.message : strerror(-r));
    } else if (srv_run_finish(c, k, e->id, e->label, e->notes, result, &run) == 0) {
        reply = srv_run_reply(c, &run, c->srv->opt.output_json);
    }
    sbx_error_clear(&err);
    srv_run_done(&run);
    srv_exec_unref(e);
    return reply;
}

void srv_approvals_close(struct mcp_server_conn *c)
{
    pthread_mutex_lock(&c->lock);
    struct srv_elicit *q = TAKE_PTR(c->elicits);
    struct srv_exec *e = TAKE_PTR(c->execs);
    c->n_elicits = 0;
    pthread_mutex_unlock(&c->lock);
    while (q) {
        struct srv_elicit *next = q->next;
        free(q);
        q = next;
    }
    while (e) {
        struct srv_exec *next = e->next;
        srv_exec_unref(e); /* its thread ends with its session, which the caller ends */
        e = next;
    }
}
