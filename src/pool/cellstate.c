// SPDX-License-Identifier: MIT
/*
 * cellstate — the lifecycle of a pool cell: the legal edges of the diagram in pool_int.h as
 * data, the one function that moves a cell along them (asserting the edge), and the
 * transitions that also move a cell in or out of the pool's ready FIFO and counters. The
 * callers (pool.c, the pool thread and the acquirer) hold the pool lock; nothing here takes it.
 */
#include <assert.h>
#include <stdlib.h>
#include <uthash.h>

#include "pool/pool_int.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/macros.h"

/* Where each state may go (a set of bits). */
static const unsigned pool_cell_edges[PC_STATE_COUNT] = {
    [PC_FORKING] = LIFECYCLE_BIT(PC_FORKING_SAID_READY) | LIFECYCLE_BIT(PC_STARTING) |
                   LIFECYCLE_BIT(PC_TAKEN) | LIFECYCLE_BIT(PC_TAKEN_EXITED),
    [PC_FORKING_SAID_READY] = LIFECYCLE_BIT(PC_STARTING_SAID_READY) | LIFECYCLE_BIT(PC_TAKEN) |
                              LIFECYCLE_BIT(PC_TAKEN_EXITED),
    [PC_STARTING] = LIFECYCLE_BIT(PC_STARTING_SAID_READY) | LIFECYCLE_BIT(PC_STARTING_ATTACHED) |
                    LIFECYCLE_BIT(PC_TAKEN) | LIFECYCLE_BIT(PC_TAKEN_EXITED),
    [PC_STARTING_SAID_READY] =
        LIFECYCLE_BIT(PC_READY) | LIFECYCLE_BIT(PC_TAKEN) | LIFECYCLE_BIT(PC_TAKEN_EXITED),
    [PC_STARTING_ATTACHED] =
        LIFECYCLE_BIT(PC_READY) | LIFECYCLE_BIT(PC_TAKEN) | LIFECYCLE_BIT(PC_TAKEN_EXITED),
    [PC_READY] = LIFECYCLE_BIT(PC_TAKEN) | LIFECYCLE_BIT(PC_TAKEN_EXITED),
    [PC_TAKEN] = LIFECYCLE_BIT(PC_TAKEN_EXITED) | LIFECYCLE_BIT(PC_RELEASED),
    [PC_TAKEN_EXITED] = LIFECYCLE_BIT(PC_GONE),
    [PC_RELEASED] = LIFECYCLE_BIT(PC_GONE),
    [PC_GONE] = 0,
};

static_assert(PC_STATE_COUNT <= 32, "the edge sets are bits of an unsigned");

static const char *const pool_cell_names[PC_STATE_COUNT] = {
    [PC_FORKING] = "FORKING",
    [PC_FORKING_SAID_READY] = "FORKING_SAID_READY",
    [PC_STARTING] = "STARTING",
    [PC_STARTING_SAID_READY] = "STARTING_SAID_READY",
    [PC_STARTING_ATTACHED] = "STARTING_ATTACHED",
    [PC_READY] = "READY",
    [PC_TAKEN] = "TAKEN",
    [PC_TAKEN_EXITED] = "TAKEN_EXITED",
    [PC_RELEASED] = "RELEASED",
    [PC_GONE] = "GONE",
};

static const struct lifecycle pool_cell_lifecycle = {"pool cell", PC_STATE_COUNT, pool_cell_edges,
                                                     pool_cell_names};

bool pool_cell_transition_ok(enum pool_cell_state from, enum pool_cell_state to)
{
    return lifecycle_edge_ok(&pool_cell_lifecycle, (int)from, (int)to);
}

void pool_cell_set_state(struct pool_cell *pc, enum pool_cell_state to)
{
    lifecycle_check(&pool_cell_lifecycle, (int)pc->state, (int)to);
    pc->state = to;
}

const char *pool_cell_state_name(enum pool_cell_state s)
{
    return lifecycle_name(&pool_cell_lifecycle, (int)s);
}

/* ---- the transitions that move cells in and out of the pool's lists -------------------- */

void pool_cell_destroy(struct pool_cell *pc)
{
    cgroup_cell_free(pc->cgroup);
    free(pc);
}

static void pool_ready_push(struct pool *p, struct pool_cell *pc)
{
    pc->next = NULL;
    if (p->ready_tail)
        p->ready_tail->next = pc;
    else
        p->ready_head = pc;
    p->ready_tail = pc;
    p->n_ready++;
}

void pool_ready_remove(struct pool *p, struct pool_cell *pc)
{
    struct pool_cell **pp = &p->ready_head, *prev = NULL;
    while (*pp && *pp != pc) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (!*pp)
        return;
    *pp = pc->next;
    if (p->ready_tail == pc)
        p->ready_tail = prev;
    p->n_ready--;
}

/* Cell pc said "ready" and its cgroup is attached: into the ready FIFO. */
void pool_cell_make_ready(struct pool *p, struct pool_cell *pc)
{
    assert_pool_cell_state(pc, PC_STARTING_SAID_READY, PC_STARTING_ATTACHED);
    pool_epoll_del(p, pc->cell->proto_fd);
    pool_cell_set_state(pc, PC_READY);
    pc->t_ready = clock_mono_us();
    log_debug("pool: cell %llu forked after %lld us, attached after %lld us, ready after %lld us",
              (unsigned long long)pc->token, (long long)(pc->t_forked - pc->t_request),
              (long long)(pc->t_attached - pc->t_request),
              (long long)(pc->t_ready - pc->t_request));
    p->n_starting--;
    pool_ready_push(p, pc);
    pthread_cond_broadcast(&p->cond);
}

/* A cell of the pool failed to start (to: PC_TAKEN) or died (to: PC_TAKEN_EXITED): drop it
 * (lock held; the cell is freed by the caller, which releases it through warm_release). */
struct cell *pool_cell_discard(struct pool *p, struct pool_cell *pc, enum pool_cell_state to)
{
    assert(pool_cell_pooled(pc->state));
    struct cell *c = pc->cell;
    if (pc->state == PC_READY) {
        pool_ready_remove(p, pc);
        p->died_idle++;
    } else {
        p->n_starting--;
        p->failed++;
        if ((pc->state == PC_FORKING || pc->state == PC_FORKING_SAID_READY) && pc->z->pending)
            pc->z->pending--;
    }
    if (c)
        pool_epoll_del(p, c->proto_fd);
    pool_cell_set_state(pc, to);
    return c;
}

/* A starting cell said "ready" (lock held). */
void pool_cell_said_ready(struct pool *p, struct pool_cell *pc)
{
    switch (pc->state) {
    case PC_FORKING:
        pool_cell_set_state(pc, PC_FORKING_SAID_READY);
        break;
    case PC_STARTING:
        pool_cell_set_state(pc, PC_STARTING_SAID_READY);
        break;
    case PC_STARTING_ATTACHED:
        pool_cell_make_ready(p, pc);
        break;
    default: /* said twice: nothing more to do */
        break;
    }
}

/* Cell pc exited (lock held): record how, wake whoever waits for it; the cell to free, if the
 * pool owns it. */
struct cell *pool_cell_exited(struct pool *p, struct pool_cell *pc, const struct cell_exit *info,
                              uint64_t minflt)
{
    pc->exit_info = *info;
    p->exits++;
    p->exit_minflt += minflt;
    pthread_cond_broadcast(&p->cond);
    switch (pc->state) {
    case PC_TAKEN:
        pool_cell_set_state(pc, PC_TAKEN_EXITED);
        return NULL;
    case PC_TAKEN_EXITED: /* reported twice: nothing more to do */
        return NULL;
    case PC_RELEASED:
        pool_cell_set_state(pc, PC_GONE);
        HASH_DEL(p->cells, pc);
        pool_cell_destroy(pc);
        return NULL;
    default:
        return pool_cell_discard(p, pc, PC_TAKEN_EXITED);
    }
}
