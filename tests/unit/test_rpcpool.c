// SPDX-License-Identifier: MIT
/* Unit tests: session/rpcpool, the bounded worker pool behind sessions' tool calls. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "session/rpcpool.h"

/* Jobs that block until released, recording the order in which they ran. */
struct world {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool open; /* running jobs may finish */
    unsigned running, peak, ran, cancelled;
    int order[64];
};

struct job {
    struct rpcpool_job base;
    struct world *w;
    int tag;
};

static void job_run(struct rpcpool_job *j)
{
    struct job *x = (struct job *)j;
    struct world *w = x->w;
    pthread_mutex_lock(&w->lock);
    w->running++;
    if (w->running > w->peak)
        w->peak = w->running;
    if (w->ran < 64)
        w->order[w->ran] = x->tag;
    w->ran++;
    pthread_cond_broadcast(&w->cond);
    while (!w->open)
        pthread_cond_wait(&w->cond, &w->lock);
    w->running--;
    pthread_mutex_unlock(&w->lock);
}

static void job_done(struct rpcpool_job *j, bool ran)
{
    struct job *x = (struct job *)j;
    if (!ran) {
        pthread_mutex_lock(&x->w->lock);
        x->w->cancelled++;
        pthread_mutex_unlock(&x->w->lock);
    }
    free(x);
}

static struct rpcpool_job *job_new(struct world *w, int tag)
{
    struct job *x = calloc(1, sizeof(*x));
    *x = (struct job){.base = {.run = job_run, .done = job_done}, .w = w, .tag = tag};
    return &x->base;
}

static void world_init(struct world *w)
{
    *w = (struct world){0};
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->cond, NULL);
}

static void world_wait_ran(struct world *w, unsigned n)
{
    pthread_mutex_lock(&w->lock);
    while (w->ran < n)
        pthread_cond_wait(&w->cond, &w->lock);
    pthread_mutex_unlock(&w->lock);
}

static void world_open(struct world *w)
{
    pthread_mutex_lock(&w->lock);
    w->open = true;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

static int submit(struct rpcpool *p, struct rpcpool_queue *q, struct world *w, int tag)
{
    struct rpcpool_job *j = job_new(w, tag);
    int r = rpcpool_submit(p, q, j);
    if (r < 0)
        free(j);
    return r;
}

static void rpcpool_limits_refuse_at_once(void **state)
{
    struct rpcpool_options o = {.workers = 2, .max_jobs = 5, .queue_max = 3, .queue_running = 2};
    struct rpcpool *p;
    assert_int_equal(rpcpool_new(&o, &p), 0);
    struct world w;
    world_init(&w);
    struct rpcpool_queue a = {0}, b = {0};
    for (int i = 0; i < 3; i++)
        assert_int_equal(submit(p, &a, &w, i), 0);
    assert_int_equal(submit(p, &a, &w, 9), -EAGAIN); /* a's own limit */
    assert_int_equal(submit(p, &b, &w, 10), 0);
    assert_int_equal(submit(p, &b, &w, 11), 0);
    assert_int_equal(submit(p, &b, &w, 12), -EBUSY); /* the pool's */
    world_wait_ran(&w, 2);
    json_t *st = rpcpool_stats(p);
    assert_int_equal(json_integer_value(json_object_get(st, "workers")), 2); /* never more */
    assert_int_equal(json_integer_value(json_object_get(st, "refused")), 2);
    json_decref(st);
    world_open(&w);
    rpcpool_stop(p); /* drains what was taken */
    assert_int_equal(w.ran, 5);
    assert_true(w.peak <= 2);
    assert_int_equal(submit(p, &a, &w, 13), -ESHUTDOWN);
    rpcpool_free(p);
}

/* Queues take turns, and one queue may not hold every worker. */
static void rpcpool_is_fair(void **state)
{
    struct rpcpool_options o = {.workers = 2, .max_jobs = 64, .queue_max = 32, .queue_running = 1};
    struct rpcpool *p;
    assert_int_equal(rpcpool_new(&o, &p), 0);
    struct world w;
    world_init(&w);
    struct rpcpool_queue a = {0}, b = {0};
    for (int i = 0; i < 4; i++)
        assert_int_equal(submit(p, &a, &w, 100 + i), 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(submit(p, &b, &w, 200 + i), 0);
    /* a runs one job at a time: the second worker serves b although a came first. */
    world_wait_ran(&w, 2);
    pthread_mutex_lock(&w.lock);
    int first = w.order[0], second = w.order[1];
    pthread_mutex_unlock(&w.lock);
    assert_true((first / 100) != (second / 100));
    world_open(&w);
    rpcpool_stop(p);
    assert_int_equal(w.ran, 8);
    assert_true(w.peak <= 2);
    rpcpool_free(p);
}

static void rpcpool_cancel_takes_back_queued_jobs(void **state)
{
    struct rpcpool_options o = {.workers = 1, .max_jobs = 64, .queue_max = 32, .queue_running = 1};
    struct rpcpool *p;
    assert_int_equal(rpcpool_new(&o, &p), 0);
    struct world w;
    world_init(&w);
    struct rpcpool_queue a = {0};
    for (int i = 0; i < 5; i++)
        assert_int_equal(submit(p, &a, &w, i), 0);
    world_wait_ran(&w, 1);
    rpcpool_cancel(p, &a);
    assert_int_equal(w.cancelled, 4);
    assert_int_equal(a.queued, 0);
    world_open(&w);
    rpcpool_free(p);
    assert_int_equal(w.ran, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rpcpool_limits_refuse_at_once),
        cmocka_unit_test(rpcpool_is_fair),
        cmocka_unit_test(rpcpool_cancel_takes_back_queued_jobs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
