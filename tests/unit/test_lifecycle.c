// SPDX-License-Identifier: MIT
/* Unit tests: the lifecycles of a pool cell (pool/cellstate.c), of a session
 * (session/lifecycle.c) and of an egress connection (egress/connstate.c): the transition
 * tables against the diagrams (written out again here),
 * the orders in which a cell's "ready", attach, exit and release arrive, and the pids the
 * pool's memory figures read, for a pool larger than the fixed arrays they once were. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "egress/proxy_int.h"
#include "pool/pool_int.h"
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

/* ---- a cell's messages in their possible orders -------------------------------------------- */

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

/* ---- the pids of the memory figures ---------------------------------------------------------- */

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
        cmocka_unit_test(egress_conn_table_is_the_diagram),
        cmocka_unit_test(ready_before_forked_then_attached),
        cmocka_unit_test(attached_before_ready),
        cmocka_unit_test(setup_failure_while_forking),
        cmocka_unit_test(ready_cell_that_dies_leaves_the_fifo),
        cmocka_unit_test(released_then_exited_is_freed),
        cmocka_unit_test(memory_pids_cover_a_large_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
