// SPDX-License-Identifier: MIT
/* Unit tests: util/workpool, the one bounded worker pool, as sessions use it (a queue per
 * session: caps, refusals, turns, cancel) and as the HTTP server does (one FIFO queue, threads
 * capped, waiting for idle, stop runs what is queued). */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/clock.h"
#include "util/workpool.h"

/* Jobs that block until released, recording the order in which they ran. */
struct world {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool open; /* running jobs may finish */
    unsigned running, peak, ran, cancelled;
    int order[64];
};

struct job {
    struct workpool_job base;
    struct world *w;
    int tag;
};

static void job_run(struct workpool_job *j)
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

static void job_done(struct workpool_job *j, bool ran)
{
    struct job *x = (struct job *)j;
    if (!ran) {
        pthread_mutex_lock(&x->w->lock);
        x->w->cancelled++;
        pthread_mutex_unlock(&x->w->lock);
    }
    free(x);
}

static struct workpool_job *job_new(struct world *w, int tag)
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

static int submit(struct workpool *p, struct workpool_queue *q, struct world *w, int tag)
{
    struct workpool_job *j = job_new(w, tag);
    int r = workpool_submit(p, q, j);
    if (r < 0)
        free(j);
    return r;
}

static void workpool_limits_refuse_at_once(void **state)
{
    struct workpool_options o = {.workers = 2, .max_jobs = 5, .queue_max = 3, .queue_running = 2};
    struct workpool *p;
    assert_int_equal(workpool_new(&o, &p), 0);
    struct world w;
    world_init(&w);
    struct workpool_queue a = {0}, b = {0};
    for (int i = 0; i < 3; i++)
        assert_int_equal(submit(p, &a, &w, i), 0);
    assert_int_equal(submit(p, &a, &w, 9), -EAGAIN); /* a's own limit */
    assert_int_equal(submit(p, &b, &w, 10), 0);
    assert_int_equal(submit(p, &b, &w, 11), 0);
    assert_int_equal(submit(p, &b, &w, 12), -EBUSY); /* the pool's */
    world_wait_ran(&w, 2);
    struct workpool_stats st;
    workpool_stats(p, &st);
    assert_int_equal(st.threads, 2); /* never more */
    assert_int_equal(st.max_threads, 2);
    assert_int_equal(st.jobs, 5);
    assert_int_equal(st.running, 2);
    assert_int_equal(st.refused, 2);
    world_open(&w);
    workpool_stop(p); /* drains what was taken */
    assert_int_equal(w.ran, 5);
    assert_true(w.peak <= 2);
    assert_int_equal(submit(p, &a, &w, 13), -ESHUTDOWN);
    workpool_stats(p, &st);
    assert_int_equal(st.threads, 0); /* joined */
    assert_int_equal(st.jobs, 0);
    assert_int_equal(st.refused, 3);
    workpool_stop(p); /* idempotent */
    workpool_free(p);
}

/* Queues take turns, and one queue may not hold every worker. */
static void workpool_is_fair(void **state)
{
    struct workpool_options o = {.workers = 2, .max_jobs = 64, .queue_max = 32, .queue_running = 1};
    struct workpool *p;
    assert_int_equal(workpool_new(&o, &p), 0);
    struct world w;
    world_init(&w);
    struct workpool_queue a = {0}, b = {0};
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
    workpool_stop(p);
    assert_int_equal(w.ran, 8);
    assert_true(w.peak <= 2);
    workpool_free(p);
}

static void workpool_cancel_takes_back_queued_jobs(void **state)
{
    struct workpool_options o = {.workers = 1, .max_jobs = 64, .queue_max = 32, .queue_running = 1};
    struct workpool *p;
    assert_int_equal(workpool_new(&o, &p), 0);
    struct world w;
    world_init(&w);
    struct workpool_queue a = {0};
    for (int i = 0; i < 5; i++)
        assert_int_equal(submit(p, &a, &w, i), 0);
    world_wait_ran(&w, 1);
    workpool_cancel(p, &a);
    assert_int_equal(w.cancelled, 4);
    assert_int_equal(a.queued, 0);
    world_open(&w);
    workpool_free(p);
    assert_int_equal(w.ran, 1);
}

/* ---- one FIFO queue, as the HTTP server uses it ------------------------------------------- */

struct gate {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool open;
    unsigned ran;
    int order[16];
};

struct item {
    struct workpool_job work; /* first */
    struct gate *gate;
    int id;
};

static void item_run(struct workpool_job *w)
{
    struct item *it = (struct item *)w;
    pthread_mutex_lock(&it->gate->lock);
    while (!it->gate->open)
        pthread_cond_wait(&it->gate->cond, &it->gate->lock);
    it->gate->order[it->gate->ran++] = it->id;
    pthread_mutex_unlock(&it->gate->lock);
}

static void gate_open(struct gate *g)
{
    pthread_mutex_lock(&g->lock);
    g->open = true;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);
}

/* The options of http/server.c: threads capped, nothing else. */
static struct workpool *fifo_new(unsigned threads)
{
    struct workpool *p;
    struct workpool_options o = {.name = "test",
                                 .workers = threads,
                                 .max_jobs = UINT_MAX,
                                 .queue_max = UINT_MAX,
                                 .queue_running = UINT_MAX};
    assert_int_equal(workpool_new(&o, &p), 0);
    return p;
}

static void fifo_caps_threads_and_queues_the_rest(void **state)
{
    struct gate g = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
    struct workpool *p = fifo_new(2);
    struct workpool_queue q = {0};
    struct workpool_stats st;
    workpool_stats(p, &st);
    assert_int_equal(st.threads, 0); /* none before the first item */
    struct item items[6];
    for (int i = 0; i < 6; i++) {
        items[i] = (struct item){.work.run = item_run, .gate = &g, .id = i};
        assert_int_equal(workpool_submit(p, &q, &items[i].work), 0);
    }
    workpool_stats(p, &st);
    assert_int_equal(st.threads, 2);
    assert_int_equal(st.jobs, 6);
    assert_int_equal(workpool_wait_idle(p, clock_mono_us() + 50000), -ETIMEDOUT);
    gate_open(&g);
    assert_int_equal(workpool_wait_idle(p, clock_mono_us() + 30000000), 0);
    assert_int_equal(g.ran, 6);
    workpool_stats(p, &st);
    assert_int_equal(st.jobs, 0);
    assert_int_equal(st.refused, 0);
    workpool_free(p);
}

static void fifo_runs_in_order_and_reuses_idle_threads(void **state)
{
    struct gate g = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
    g.open = true;
    struct workpool *p = fifo_new(1);
    struct workpool_queue q = {0};
    struct item items[8];
    for (int i = 0; i < 8; i++) {
        items[i] = (struct item){.work.run = item_run, .gate = &g, .id = i};
        assert_int_equal(workpool_submit(p, &q, &items[i].work), 0);
        if (i == 3) /* an idle thread takes later work: no second thread */
            assert_int_equal(workpool_wait_idle(p, clock_mono_us() + 30000000), 0);
    }
    assert_int_equal(workpool_wait_idle(p, clock_mono_us() + 30000000), 0);
    struct workpool_stats st;
    workpool_stats(p, &st);
    assert_int_equal(st.threads, 1);
    for (int i = 0; i < 8; i++)
        assert_int_equal(g.order[i], i);
    workpool_free(p);
}

/* A thread per job at most: jobs that come one after another are served by the same one, even
 * with room for more. */
static void fifo_starts_no_thread_it_does_not_need(void **state)
{
    struct gate g = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
    g.open = true;
    struct workpool *p = fifo_new(8);
    struct workpool_queue q = {0};
    struct item items[5];
    for (int i = 0; i < 5; i++) {
        items[i] = (struct item){.work.run = item_run, .gate = &g, .id = i};
        assert_int_equal(workpool_submit(p, &q, &items[i].work), 0);
        assert_int_equal(workpool_wait_idle(p, clock_mono_us() + 30000000), 0);
    }
    struct workpool_stats st;
    workpool_stats(p, &st);
    assert_int_equal(st.threads, 1);
    workpool_free(p);
}

/* A job that frees itself in run() (done NULL), as an HTTP request does. */
static void heap_item_run(struct workpool_job *w)
{
    struct item *it = (struct item *)w;
    item_run(w);
    free(it);
}

static void fifo_stop_runs_what_is_queued(void **state)
{
    struct gate g = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
    g.open = true;
    struct workpool *p = fifo_new(1);
    struct workpool_queue q = {0};
    for (int i = 0; i < 4; i++) {
        struct item *it = calloc(1, sizeof(*it));
        assert_non_null(it);
        *it = (struct item){.work.run = heap_item_run, .gate = &g, .id = i};
        assert_int_equal(workpool_submit(p, &q, &it->work), 0);
    }
    workpool_free(p); /* ASan/valgrind: every item was run, and so freed */
    assert_int_equal(g.ran, 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(g.order[i], i);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(workpool_limits_refuse_at_once),
        cmocka_unit_test(workpool_is_fair),
        cmocka_unit_test(workpool_cancel_takes_back_queued_jobs),
        cmocka_unit_test(fifo_caps_threads_and_queues_the_rest),
        cmocka_unit_test(fifo_runs_in_order_and_reuses_idle_threads),
        cmocka_unit_test(fifo_starts_no_thread_it_does_not_need),
        cmocka_unit_test(fifo_stop_runs_what_is_queued),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
