// SPDX-License-Identifier: MIT
/* Unit tests: the lifecycles of a pool cell (pool/cellstate.c), of a session
 * (session/lifecycle.c), of an MCP client connection (mcpclient/client.c) and of an egress
 * connection (egress/connstate.c): the transition tables against the diagrams (written out again
 * here), the orders in which a cell's "ready", attach, exit and release arrive, the orders in which
 * a connection's handshake, lost session, stalled writer, server exit, abort and close arrive
 * (through a fake transport), and the pids the pool's memory figures read, for a pool larger than
 * the fixed arrays they once were. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcpclient/client_int.h"
#include "egress/proxy_int.h"
#include "pool/pool_int.h"
#include "proto/jsonrpc.h"
#include "session/session_int.h"

/* ---- the tables ------------------------------------------------------------------------- */

struct edge {
    int from, to;
};

/* The arrows of the diagram in pool_int.h. */
static const struct edge pool_diagram[] = {
    {PC_FORKING, PC_FORKING_SAID_READY},
    {PC_FORKING, PC_STARTING},
    {PC_FORKING_SAID_READY, PC_STARTING_SAID_READY},
    {PC_STARTING, PC_STARTING_SAID_READY},
    {PC_STARTING, PC_STARTING_ATTACHED},
    {PC_STARTING_SAID_READY, PC_READY},
    {PC_STARTING_ATTACHED, PC_READY},
    {PC_READY, PC_TAKEN},
    {PC_TAKEN, PC_RELEASED},
    {PC_TAKEN, PC_TAKEN_EXITED},
    {PC_RELEASED, PC_GONE},
    {PC_TAKEN_EXITED, PC_GONE},
    /* FORKING..READY: discarded (setup failed), or exited */
    {PC_FORKING, PC_TAKEN},
    {PC_FORKING_SAID_READY, PC_TAKEN},
    {PC_STARTING, PC_TAKEN},
    {PC_STARTING_SAID_READY, PC_TAKEN},
    {PC_STARTING_ATTACHED, PC_TAKEN},
    {PC_FORKING, PC_TAKEN_EXITED},
    {PC_FORKING_SAID_READY, PC_TAKEN_EXITED},
    {PC_STARTING, PC_TAKEN_EXITED},
    {PC_STARTING_SAID_READY, PC_TAKEN_EXITED},
    {PC_STARTING_ATTACHED, PC_TAKEN_EXITED},
    {PC_READY, PC_TAKEN_EXITED},
};

/* The arrows of the diagram in session_int.h. */
static const struct edge session_diagram[] = {
    {SESSION_STARTING, SESSION_IDLE},   {SESSION_STARTING, SESSION_ARMED},
    {SESSION_STARTING, SESSION_ENDED},  {SESSION_IDLE, SESSION_RUNNING},
    {SESSION_ARMED, SESSION_RUNNING},   {SESSION_STOPPED, SESSION_RUNNING},
    {SESSION_RUNNING, SESSION_IDLE},    {SESSION_RUNNING, SESSION_ARMED},
    {SESSION_RUNNING, SESSION_STOPPED}, {SESSION_ARMED, SESSION_STOPPED},
    {SESSION_IDLE, SESSION_ENDED},      {SESSION_ARMED, SESSION_ENDED},
    {SESSION_STOPPED, SESSION_ENDED},   {SESSION_RUNNING, SESSION_ENDED},
};

/* The arrows of the diagram in mcpclient/client_int.h. */
static const struct edge mcp_diagram[] = {
    {MCP_CONN_CONNECTING, MCP_CONN_READY},   /* [K] */
    {MCP_CONN_CONNECTING, MCP_CONN_STALE},   /* [H] a 404 during the handshake */
    {MCP_CONN_READY, MCP_CONN_STALE},        /* [H] */
    {MCP_CONN_STALE, MCP_CONN_READY},        /* [H] initialize answered again */
    {MCP_CONN_CONNECTING, MCP_CONN_KILLED},  /* [W] */
    {MCP_CONN_READY, MCP_CONN_KILLED},       /* [W] */
    {MCP_CONN_CONNECTING, MCP_CONN_DEAD},    /* [T], [A] */
    {MCP_CONN_READY, MCP_CONN_DEAD},         /* [T], [A] */
    {MCP_CONN_STALE, MCP_CONN_DEAD},         /* [T], [A] */
    {MCP_CONN_KILLED, MCP_CONN_DEAD},        /* [T], [A] */
    {MCP_CONN_CONNECTING, MCP_CONN_CLOSING}, /* [C] */
    {MCP_CONN_READY, MCP_CONN_CLOSING},      /* [C] */
    {MCP_CONN_STALE, MCP_CONN_CLOSING},      /* [C] */
    {MCP_CONN_KILLED, MCP_CONN_CLOSING},     /* [C] */
    {MCP_CONN_DEAD, MCP_CONN_CLOSING},       /* [C] */
};

/* The arrows of the diagram in egress/proxy_int.h. */
static const struct edge egress_diagram[] = {
    {CS_HEAD, CS_RESOLVE},    /* CONNECT, a name to look up */
    {CS_HEAD, CS_HELLO},      /* CONNECT, pinned or an IP literal */
    {CS_HEAD, CS_CONNECT},    /* a plain request, pinned or an IP literal */
    {CS_RESOLVE, CS_HELLO},   /* CONNECT, the addresses allowed */
    {CS_RESOLVE, CS_CONNECT}, /* a plain request, the addresses allowed */
    {CS_HELLO, CS_CONNECT},   /* the ClientHello names the host */
    {CS_CONNECT, CS_CONNECT}, /* the next address */
    {CS_CONNECT, CS_RELAY},   /* connected */
    {CS_HEAD, CS_REPLY},      /* refused or failed: an HTTP answer */
    {CS_RESOLVE, CS_REPLY},   {CS_CONNECT, CS_REPLY},
    {CS_HELLO, CS_REPLY},  /* refused: a TLS alert */
    {CS_REPLY, CS_LINGER}, /* the answer written */
    {CS_HEAD, CS_CLOSED},  /* egress_conn_close, from every state but CLOSED */
    {CS_RESOLVE, CS_CLOSED},  {CS_HELLO, CS_CLOSED},
    {CS_CONNECT, CS_CLOSED},  {CS_RELAY, CS_CLOSED},
    {CS_REPLY, CS_CLOSED},    {CS_LINGER, CS_CLOSED},
};

static bool in_diagram(const struct edge *d, size_t n, int from, int to)
{
    for (size_t i = 0; i < n; i++)
        if (d[i].from == from && d[i].to == to)
            return true;
    return false;
}

static bool pool_ok(int from, int to)
{
    return pool_cell_transition_ok((enum pool_cell_state)from, (enum pool_cell_state)to);
}

static bool egress_ok(int from, int to)
{
    return egress_conn_transition_ok((enum egress_conn_state)from, (enum egress_conn_state)to);
}

static bool session_ok(int from, int to)
{
    return session_transition_ok((enum session_state)from, (enum session_state)to);
}

/* Every pair of states: legal exactly when the diagram has the arrow. */
static void check_table(const struct edge *d, size_t n, int count, bool (*ok)(int, int),
                        const char *(*name)(int))
{
    unsigned legal = 0;
    for (int from = 0; from < count; from++)
        for (int to = 0; to < count; to++) {
            bool want = in_diagram(d, n, from, to);
            if (ok(from, to) != want)
                fail_msg("%s -> %s: %s, the diagram says %s", name(from), name(to),
                         ok(from, to) ? "legal" : "refused", want ? "legal" : "refused");
            legal += want;
        }
    assert_int_equal(legal, n); /* no arrow listed twice */
    /* Nothing goes to or from a state that does not exist. */
    assert_false(ok(count, 0));
    assert_false(ok(0, count));
    assert_false(ok(-1, 0));
}

static bool mcp_ok(int from, int to)
{
    return mcp_client_transition_ok((enum mcp_conn_state)from, (enum mcp_conn_state)to);
}

static const char *mcp_name(int s)
{
    return mcp_client_state_name((enum mcp_conn_state)s);
}

static const char *pool_name(int s)
{
    return pool_cell_state_name((enum pool_cell_state)s);
}

static const char *egress_name(int s)
{
    return egress_conn_state_name((enum egress_conn_state)s);
}

static const char *session_name(int s)
{
    return session_state_name((enum session_state)s);
}

static void pool_cell_table_is_the_diagram(void **state)
{
    (void)state;
    check_table(pool_diagram, ARRAY_SIZE(pool_diagram), PC_STATE_COUNT, pool_ok, pool_name);
    /* Some edges one could think of, refused. */
    assert_false(pool_cell_transition_ok(PC_FORKING, PC_READY)); /* no attach, no pid */
    assert_false(pool_cell_transition_ok(PC_FORKING_SAID_READY, PC_STARTING)); /* "ready" lost */
    assert_false(pool_cell_transition_ok(PC_TAKEN, PC_READY));           /* used, back in pool */
    assert_false(pool_cell_transition_ok(PC_TAKEN, PC_GONE));            /* exit not known */
    assert_false(pool_cell_transition_ok(PC_RELEASED, PC_TAKEN_EXITED)); /* released twice */
    assert_false(pool_cell_transition_ok(PC_GONE, PC_FORKING));
    assert_string_equal(pool_cell_state_name(PC_STARTING_ATTACHED), "STARTING_ATTACHED");
    /* The test behind assert_pool_cell_state(). */
    assert_true(LIFECYCLE_IN(PC_TAKEN_EXITED, PC_TAKEN, PC_TAKEN_EXITED));
    assert_false(LIFECYCLE_IN(PC_READY, PC_TAKEN, PC_TAKEN_EXITED));
    assert_true(LIFECYCLE_IN(PC_GONE, PC_GONE));
    assert_string_equal(pool_cell_state_name(PC_STATE_COUNT), "?");
}

static void session_table_is_the_diagram(void **state)
{
    (void)state;
    check_table(session_diagram, ARRAY_SIZE(session_diagram), SESSION_STATE_COUNT, session_ok,
                session_name);
    assert_false(session_transition_ok(SESSION_RUNNING, SESSION_RUNNING)); /* two at once */
    assert_false(session_transition_ok(SESSION_IDLE, SESSION_STOPPED));    /* no budget runs */
    assert_false(session_transition_ok(SESSION_ENDED, SESSION_RUNNING));
    assert_false(session_transition_ok(SESSION_STARTING, SESSION_RUNNING));
    for (int s = 0; s < SESSION_STATE_COUNT; s++)
        assert_int_equal(session_listed((enum session_state)s),
                         s != SESSION_STARTING && s != SESSION_ENDED);
    assert_string_equal(session_state_name(SESSION_STOPPED), "STOPPED");
}

static void mcp_connection_table_is_the_diagram(void **state)
{
    (void)state;
    check_table(mcp_diagram, ARRAY_SIZE(mcp_diagram), MCP_CONN_STATE_COUNT, mcp_ok, mcp_name);
    assert_false(mcp_client_transition_ok(MCP_CONN_DEAD, MCP_CONN_READY));   /* no resurrection */
    assert_false(mcp_client_transition_ok(MCP_CONN_KILLED, MCP_CONN_READY)); /* a half line */
    assert_false(mcp_client_transition_ok(MCP_CONN_STALE, MCP_CONN_KILLED)); /* HTTP or stdio */
    assert_false(mcp_client_transition_ok(MCP_CONN_STALE, MCP_CONN_CONNECTING));
    assert_false(mcp_client_transition_ok(MCP_CONN_CLOSING, MCP_CONN_DEAD)); /* no news */
    assert_string_equal(mcp_client_state_name(MCP_CONN_KILLED), "KILLED");
    assert_string_equal(mcp_client_state_name(MCP_CONN_STATE_COUNT), "?");
}

static void egress_conn_table_is_the_diagram(void **state)
{
    (void)state;
    check_table(egress_diagram, ARRAY_SIZE(egress_diagram), CS_STATE_COUNT, egress_ok, egress_name);
    /* Some edges one could think of, refused. */
    assert_false(egress_conn_transition_ok(CS_HEAD, CS_RELAY));    /* never unchecked */
    assert_false(egress_conn_transition_ok(CS_RESOLVE, CS_RELAY)); /* not connected yet */
    assert_false(egress_conn_transition_ok(CS_HELLO, CS_RELAY));   /* SNI, then connect */
    assert_false(egress_conn_transition_ok(CS_RELAY, CS_REPLY));   /* the answer is the origin's */
    assert_false(egress_conn_transition_ok(CS_HEAD, CS_LINGER));   /* nothing was answered */
    assert_false(egress_conn_transition_ok(CS_LINGER, CS_REPLY));  /* answered once */
    assert_false(egress_conn_transition_ok(CS_CLOSED, CS_CLOSED)); /* closed and logged once */
    assert_false(egress_conn_transition_ok(CS_CLOSED, CS_HEAD));
    for (int s = 0; s < CS_STATE_COUNT; s++) /* every state ends the same way */
        assert_int_equal(egress_conn_transition_ok((enum egress_conn_state)s, CS_CLOSED),
                         s != CS_CLOSED);
    assert_string_equal(egress_conn_state_name(CS_LINGER), "LINGER");
    assert_string_equal(egress_conn_state_name(CS_STATE_COUNT), "?");
    /* The test behind assert_egress_conn_state() and egress_conn_closed(). */
    struct egress_conn c = {.st = CS_CONNECT};
    assert_true(LIFECYCLE_IN(c.st, CS_RELAY, CS_CONNECT, CS_HELLO));
    assert_false(egress_conn_closed(&c));
    egress_conn_set_state(&c, CS_CONNECT); /* the next address */
    egress_conn_set_state(&c, CS_RELAY);
    egress_conn_set_state(&c, CS_CLOSED);
    assert_true(egress_conn_closed(&c));
}

/* ---- a cell's messages in their possible orders ------------------------------------------ */

/* A pool with no thread and no epoll set (epfd -1: nothing to unwatch). */
static struct pool *fake_pool(void)
{
    struct pool *p = calloc(1, sizeof(*p));
    assert_non_null(p);
    p->epfd = p->evfd = -1;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->cond, NULL);
    return p;
}

static void fake_pool_free(struct pool *p)
{
    struct pool_cell *pc, *tmp;
    HASH_ITER(hh, p->cells, pc, tmp)
    {
        HASH_DEL(p->cells, pc);
        cell_free(pc->cell);
        free(pc);
    }
    pthread_cond_destroy(&p->cond);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

/* A cell the pool just asked for (FORKING, counted as starting). */
static struct pool_cell *fake_cell(struct pool *p, struct zygote *z)
{
    struct pool_cell *pc = calloc(1, sizeof(*pc));
    assert_non_null(pc);
    pc->token = ++p->next_token;
    pc->pool = p;
    pc->z = z;
    pc->state = PC_FORKING;
    pc->cell = cell_new(NULL, 1 << 16);
    assert_non_null(pc->cell);
    HASH_ADD(hh, p->cells, token, sizeof(pc->token), pc);
    p->n_starting++;
    z->pending++;
    return pc;
}

/* Forked, attached, then "ready": READY. */
static void fake_ready(struct pool *p, struct pool_cell *pc)
{
    pool_cell_set_state(pc, PC_STARTING);
    pool_cell_set_state(pc, PC_STARTING_ATTACHED);
    pool_cell_said_ready(p, pc);
    assert_int_equal(pc->state, PC_READY);
}

static void ready_before_forked_then_attached(void **state)
{
    (void)state;
    struct pool *p = fake_pool();
    struct zygote z = {.pool = p};
    struct pool_cell *pc = fake_cell(p, &z);
    pool_cell_said_ready(p, pc); /* "ready" overtook "forked" */
    assert_int_equal(pc->state, PC_FORKING_SAID_READY);
    pool_cell_set_state(pc, PC_STARTING_SAID_READY); /* "forked", as pool_on_forked does */
    assert_int_equal(p->n_ready, 0);
    pool_cell_make_ready(p, pc); /* attached */
    assert_int_equal(pc->state, PC_READY);
    assert_ptr_equal(p->ready_head, pc);
    assert_int_equal(p->n_ready, 1);
    assert_int_equal(p->n_starting, 0);
    fake_pool_free(p);
}

static void attached_before_ready(void **state)
{
    (void)state;
    struct pool *p = fake_pool();
    struct zygote z = {.pool = p};
    struct pool_cell *pc = fake_cell(p, &z);
    pool_cell_set_state(pc, PC_STARTING);
    pool_cell_set_state(pc, PC_STARTING_ATTACHED);
    assert_int_equal(p->n_ready, 0);
    pool_cell_said_ready(p, pc);
    assert_int_equal(pc->state, PC_READY);
    assert_int_equal(p->n_ready, 1);
    pool_cell_said_ready(p, pc); /* said twice: no change */
    assert_int_equal(pc->state, PC_READY);
    assert_int_equal(p->n_ready, 1);
    fake_pool_free(p);
}

static void setup_failure_while_forking(void **state)
{
    (void)state;
    struct pool *p = fake_pool();
    struct zygote z = {.pool = p};
    struct pool_cell *pc = fake_cell(p, &z);
    struct cell *c = pool_cell_discard(p, pc, PC_TAKEN);
    assert_ptr_equal(c, pc->cell);
    assert_int_equal(pc->state, PC_TAKEN);
    assert_int_equal(p->n_starting, 0);
    assert_int_equal(p->failed, 1);
    assert_int_equal(z.pending, 0); /* it will never say "forked" */
    /* Its exit comes later: known, the cell stays until released. */
    const struct cell_exit info = {.status = 9, .cpu_us = 42};
    assert_null(pool_cell_exited(p, pc, &info, 7));
    assert_int_equal(pc->state, PC_TAKEN_EXITED);
    assert_int_equal(pc->exit_info.cpu_us, 42);
    assert_int_equal(p->exits, 1);
    assert_int_equal(p->exit_minflt, 7);
    assert_int_equal(HASH_COUNT(p->cells), 1);
    fake_pool_free(p);
}

static void ready_cell_that_dies_leaves_the_fifo(void **state)
{
    (void)state;
    struct pool *p = fake_pool();
    struct zygote z = {.pool = p};
    struct pool_cell *a = fake_cell(p, &z), *b = fake_cell(p, &z);
    fake_ready(p, a);
    fake_ready(p, b);
    assert_int_equal(p->n_ready, 2);
    const struct cell_exit killed = {.status = 9};
    struct cell *c = pool_cell_exited(p, a, &killed, 0);
    assert_ptr_equal(c, a->cell);
    assert_int_equal(a->state, PC_TAKEN_EXITED);
    assert_int_equal(p->n_ready, 1);
    assert_ptr_equal(p->ready_head, b);
    assert_ptr_equal(p->ready_tail, b);
    assert_int_equal(p->died_idle, 1);
    fake_pool_free(p);
}

static void released_then_exited_is_freed(void **state)
{
    (void)state;
    struct pool *p = fake_pool();
    struct zygote z = {.pool = p};
    struct pool_cell *pc = fake_cell(p, &z);
    fake_ready(p, pc);
    pool_ready_remove(p, pc);
    pool_cell_set_state(pc, PC_TAKEN); /* acquired */
    cell_free(pc->cell);
    pc->cell = NULL;
    pool_cell_set_state(pc, PC_RELEASED); /* as warm_release does before the exit report */
    const struct cell_exit info = {0};
    assert_null(pool_cell_exited(p, pc, &info, 0));
    assert_int_equal(HASH_COUNT(p->cells), 0); /* freed (ASan would see a leak otherwise) */
    assert_int_equal(p->exits, 1);
    fake_pool_free(p);
}

/* ---- an MCP connection's reports in their possible orders
 * ------------------------------------ */

/* A transport that answers nothing (requests wait for what the test makes happen), or, with
 * answer set, answers every request inside send() as an HTTP server does; with forget set, the
 * next message meets a 404 for our session. */
struct fake_transport {
    struct mcp_transport base;
    struct mcp_client *owner;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool answer, forget;
    bool abort_on_forget;      /* sandboxd shuts down right after that 404 */
    json_t *sent;              /* the methods sent, in order ("" for our answers) */
    bool report_exit_on_close; /* close() reports the server's exit, as the stdio reader does */
    int state_after_close;     /* the state after that report */
};

static int fake_send(struct mcp_transport *base, json_t *msg, int64_t deadline_us,
                     struct sbx_error *err)
{
    struct fake_transport *ft = (struct fake_transport *)base;
    const char *method = json_string_value(json_object_get(msg, "method"));
    bool init = method && strcmp(method, "initialize") == 0;
    pthread_mutex_lock(&ft->lock);
    bool forget = ft->forget;
    ft->forget = false;
    if (forget)
        mcp_client_session_lost(ft->owner); /* under the transport's lock, as HTTP does */
    if (forget || (mcp_client_state(ft->owner) == MCP_CONN_STALE && !init)) {
        pthread_mutex_unlock(&ft->lock);
        if (forget && ft->abort_on_forget)
            mcp_client_abort(ft->owner, "sandboxd is shutting down");
        sbx_error_upstream(err, SBX_UP_HTTP, NULL, "the fake server forgot our session");
        return -ESTALE;
    }
    json_array_append_new(ft->sent, json_string(method ? method : ""));
    pthread_cond_broadcast(&ft->cond);
    pthread_mutex_unlock(&ft->lock);
    json_t *id = json_object_get(msg, "id");
    if (ft->answer && method && id) {
        json_t *result = init ? json_pack("{s:s}", "protocolVersion", "2025-11-25") : NULL;
        json_t *answer = jsonrpc_result_new(id, result);
        mcp_client_on_message(ft->owner, answer);
        json_decref(answer);
        json_decref(result);
        if (init) {
            pthread_mutex_lock(&ft->lock);
            mcp_client_initialize_answered(ft->owner);
            pthread_mutex_unlock(&ft->lock);
        }
    }
    return 0;
}

static void fake_close(struct mcp_transport *base)
{
    struct fake_transport *ft = (struct fake_transport *)base;
    if (ft->report_exit_on_close) {
        mcp_client_transport_ended(ft->owner, SBX_UP_TRANSPORT, "MCP server 'fake' exited");
        ft->state_after_close = mcp_client_state(ft->owner);
    }
}

static const struct mcp_transport_ops fake_ops = {
    .name = "fake", .send = fake_send, .close = fake_close};

/* A client in CONNECTING on a fake transport (on the caller's stack). */
static struct mcp_client *fake_client(struct fake_transport *ft)
{
    struct mcp_server_config cfg = {.name = "fake", .command = "fake-server"};
    struct mcp_client *c = NULL;
    assert_int_equal(mcp_client_alloc(&cfg, &c), 0);
    assert_int_equal(mcp_client_state(c), MCP_CONN_CONNECTING);
    *ft = (struct fake_transport){.base.ops = &fake_ops, .owner = c, .sent = json_array()};
    pthread_mutex_init(&ft->lock, NULL);
    pthread_cond_init(&ft->cond, NULL);
    c->t = &ft->base;
    return c;
}

static void fake_done(struct fake_transport *ft)
{
    json_decref(ft->sent);
    pthread_cond_destroy(&ft->cond);
    pthread_mutex_destroy(&ft->lock);
}

/* A request on its own thread, waiting for its answer. */
struct waiter {
    struct mcp_client *c;
    pthread_t thread;
    int r;
    enum sbx_upstream kind;
    char message[128];
};

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    struct sbx_error err = {0};
    json_t *res = NULL;
    w->r = mcp_client_request(w->c, "tools/list", NULL, 20000, &res, &err);
    w->kind = err.upstream;
    snprintf(w->message, sizeof(w->message), "%s", err.message ? err.message : "");
    json_decref(res);
    sbx_error_clear(&err);
    return NULL;
}

/* Start a request and return once the transport has sent it. */
static void waiter_start(struct waiter *w, struct mcp_client *c, struct fake_transport *ft)
{
    *w = (struct waiter){.c = c};
    pthread_mutex_lock(&ft->lock);
    size_t before = json_array_size(ft->sent);
    assert_int_equal(pthread_create(&w->thread, NULL, waiter_main, w), 0);
    while (json_array_size(ft->sent) == before)
        pthread_cond_wait(&ft->cond, &ft->lock);
    pthread_mutex_unlock(&ft->lock);
}

/* Whatever comes after an abort is no news: the waiter and later callers hear the abort. */
static void mcp_abort_then_exit(void **state)
{
    (void)state;
    struct fake_transport ft;
    struct mcp_client *c = fake_client(&ft);
    mcp_client_initialized(c); /* [K] */
    assert_int_equal(mcp_client_state(c), MCP_CONN_READY);
    struct waiter w;
    waiter_start(&w, c, &ft);
    mcp_client_abort(c, "sandboxd is shutting down"); /* [A] */
    pthread_join(w.thread, NULL);
    assert_int_equal(w.r, -ENOTCONN);
    assert_int_equal(w.kind, SBX_UP_TRANSPORT);
    assert_string_equal(w.message, "sandboxd is shutting down");
    assert_int_equal(mcp_client_state(c), MCP_CONN_DEAD);
    assert_false(mcp_client_alive(c));
    mcp_client_transport_ended(c, SBX_UP_TRANSPORT, "MCP server 'fake' exited"); /* [T] */
    mcp_client_session_lost(c);
    mcp_client_initialize_answered(c);
    mcp_client_stalled(c);
    mcp_client_initialized(c);
    assert_int_equal(mcp_client_state(c), MCP_CONN_DEAD);
    /* A later request fails at once, with the first reason, and never reaches the server. */
    struct sbx_error err = {0};
    json_t *res = NULL;
    assert_int_equal(mcp_client_request(c, "tools/list", NULL, 20000, &res, &err), -ENOTCONN);
    assert_string_equal(err.message, "sandboxd is shutting down");
    sbx_error_clear(&err);
    assert_int_equal(json_array_size(ft.sent), 1);
    mcp_client_close(c); /* [C] from DEAD */
    fake_done(&ft);
}

/* The server exits while the handshake waits: the handshake fails with the exit, and the end
 * of mcp_client_connect() [K] leaves a dead connection dead. */
static void mcp_exit_during_handshake(void **state)
{
    (void)state;
    struct fake_transport ft;
    struct mcp_client *c = fake_client(&ft);
    struct waiter w;
    waiter_start(&w, c, &ft);
    mcp_client_transport_ended(c, SBX_UP_TRANSPORT, "MCP server 'fake' exited with status 5");
    pthread_join(w.thread, NULL);
    assert_int_equal(w.r, -ENOTCONN);
    assert_string_equal(w.message, "MCP server 'fake' exited with status 5");
    mcp_client_initialized(c);
    assert_int_equal(mcp_client_state(c), MCP_CONN_DEAD);
    mcp_client_close(c);
    fake_done(&ft);
}

/* A writer that stalled killed the server: the connection is no longer alive, but requests
 * already waiting hear of the exit only when the reader reports it. */
static void mcp_stalled_writer_then_exit(void **state)
{
    (void)state;
    struct fake_transport ft;
    struct mcp_client *c = fake_client(&ft);
    mcp_client_initialized(c);
    mcp_client_stalled(c); /* [W] */
    assert_int_equal(mcp_client_state(c), MCP_CONN_KILLED);
    assert_false(mcp_client_alive(c));
    mcp_client_stalled(c); /* another writer's deadline: no news */
    mcp_client_session_lost(c);
    assert_int_equal(mcp_client_state(c), MCP_CONN_KILLED);
    struct waiter w;
    waiter_start(&w, c, &ft); /* (stdio refuses to write in KILLED; this transport does not) */
    mcp_client_transport_ended(c, SBX_UP_TRANSPORT, "MCP server 'fake' was killed by signal 9");
    pthread_join(w.thread, NULL);
    assert_int_equal(w.kind, SBX_UP_TRANSPORT);
    assert_string_equal(w.message, "MCP server 'fake' was killed by signal 9");
    assert_int_equal(mcp_client_state(c), MCP_CONN_DEAD);
    mcp_client_close(c);
    fake_done(&ft);
}

/* A 404 makes the connection STALE; the request that met it initializes again through the real
 * handshake (initialize answered: READY again), bumps the tools generation and is resent. */
static void mcp_lost_session_is_initialized_again(void **state)
{
    (void)state;
    struct fake_transport ft;
    struct mcp_client *c = fake_client(&ft);
    mcp_client_initialize_answered(c); /* the first handshake's 2xx: [K] comes later */
    assert_int_equal(mcp_client_state(c), MCP_CONN_CONNECTING);
    mcp_client_initialized(c);
    ft.answer = true;
    ft.forget = true;
    struct sbx_error err = {0};
    json_t *res = NULL;
    assert_int_equal(mcp_client_request(c, "tools/list", NULL, 20000, &res, &err), 0);
    json_decref(res);
    assert_int_equal(mcp_client_state(c), MCP_CONN_READY);
    assert_int_equal(mcp_client_tools_generation(c), 1);
    json_t *want = json_pack("[s, s, s]", "initialize", "notifications/initialized", "tools/list");
    assert_true(json_equal(ft.sent, want));
    json_decref(want);
    /* Two reports of the same loss, then one answer. */
    mcp_client_session_lost(c);
    mcp_client_session_lost(c);
    assert_int_equal(mcp_client_state(c), MCP_CONN_STALE);
    assert_true(mcp_client_alive(c)); /* STALE is usable: the next request initializes */
    mcp_client_initialize_answered(c);
    mcp_client_initialize_answered(c);
    assert_int_equal(mcp_client_state(c), MCP_CONN_READY);
    /* Aborted between the 404 and the new initialize: the request that met the 404 hears the
     * abort, and nothing more is sent. */
    ft.forget = ft.abort_on_forget = true;
    size_t sent = json_array_size(ft.sent);
    assert_int_equal(mcp_client_request(c, "tools/list", NULL, 20000, &res, &err), -ENOTCONN);
    assert_string_equal(err.message, "sandboxd is shutting down");
    sbx_error_clear(&err);
    assert_int_equal(mcp_client_state(c), MCP_CONN_DEAD);
    assert_int_equal(json_array_size(ft.sent), sent);
    mcp_client_close(c);
    fake_done(&ft);
}

/* The exit that mcp_client_close() causes (the stdio reader sees it during close) is no news.
 */
static void mcp_exit_caused_by_close_is_no_news(void **state)
{
    (void)state;
    struct fake_transport ft;
    struct mcp_client *c = fake_client(&ft);
    mcp_client_initialized(c);
    mcp_client_session_lost(c); /* closed while STALE */
    ft.report_exit_on_close = true;
    mcp_client_close(c);
    assert_int_equal(ft.state_after_close, MCP_CONN_CLOSING);
    fake_done(&ft);
}

/* ---- the pids of the memory figures
 * ---------------------------------------------------------- */

static void memory_pids_cover_a_large_pool(void **state)
{
    (void)state;
    /* More zygotes and ready cells than the fixed arrays held (64 and 256). */
    enum { ZYGOTES = 70, CELLS = 300 };
    struct pool *p = fake_pool();
    p->opt.zygotes = ZYGOTES;
    p->zygotes = calloc(ZYGOTES, sizeof(*p->zygotes));
    assert_non_null(p->zygotes);
    for (int i = 0; i < ZYGOTES; i++)
        p->zygotes[i] = (struct zygote){.pool = p, .alive = i % 7 != 0, .proc.pid = 1000 + i};
    for (int i = 0; i < CELLS; i++) {
        struct pool_cell *pc = fake_cell(p, &p->zygotes[i % ZYGOTES]);
        pc->cell->pid = 5000 + i;
        fake_ready(p, pc);
    }
    assert_int_equal(p->n_ready, CELLS);
    struct pool_pids pp;
    assert_int_equal(pool_memory_pids(p, &pp), 0);
    assert_int_equal(pp.n_cells, CELLS);
    for (int i = 0; i < CELLS; i++)
        assert_int_equal(pp.cells[i], 5000 + i); /* the FIFO's order */
    assert_int_equal(pp.n_zygotes, ZYGOTES - (ZYGOTES + 6) / 7);
    for (size_t i = 0, k = 0; i < ZYGOTES; i++)
        if (i % 7 != 0)
            assert_int_equal(pp.zygotes[k++], 1000 + (int)i);
    pool_pids_done(&pp);
    assert_null(pp.cells);
    free(p->zygotes);
    fake_pool_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pool_cell_table_is_the_diagram),
        cmocka_unit_test(session_table_is_the_diagram),
        cmocka_unit_test(mcp_connection_table_is_the_diagram),
        cmocka_unit_test(egress_conn_table_is_the_diagram),
        cmocka_unit_test(ready_before_forked_then_attached),
        cmocka_unit_test(attached_before_ready),
        cmocka_unit_test(setup_failure_while_forking),
        cmocka_unit_test(ready_cell_that_dies_leaves_the_fifo),
        cmocka_unit_test(released_then_exited_is_freed),
        cmocka_unit_test(mcp_abort_then_exit),
        cmocka_unit_test(mcp_exit_during_handshake),
        cmocka_unit_test(mcp_stalled_writer_then_exit),
        cmocka_unit_test(mcp_lost_session_is_initialized_again),
        cmocka_unit_test(mcp_exit_caused_by_close_is_no_news),
        cmocka_unit_test(memory_pids_cover_a_large_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
