// SPDX-License-Identifier: MIT
/*
 * rpcpool — see rpcpool.h.
 *
 * One mutex guards everything. A queue is in the ring while it has queued
 * jobs and fewer than queue_running running; a worker takes the ring's first
 * queue, runs that queue's first job and puts the queue back at the tail if
 * it may run more, so queues take turns. Workers are joinable and counted;
 * at stop they drain what was accepted and leave when no job is left.
 */
#include "session/rpcpool.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "util/log.h"

struct rpcpool {
    struct rpcpool_options opt;
    pthread_mutex_t lock;
    pthread_cond_t work; /* a queue entered the ring, or stop */
    struct rpcpool_queue *ring_head, *ring_tail;
    unsigned jobs; /* queued or running, all queues */
    unsigned busy; /* workers running a job */
    unsigned idle; /* workers waiting for work */
    unsigned nthreads;
    pthread_t *threads;
    uint64_t refused;
    bool stop;
};

static void ring_push(struct rpcpool *p, struct rpcpool_queue *q)
{
    q->in_ring = true;
    q->next = NULL;
    if (p->ring_tail)
        p->ring_tail->next = q;
    else
        p->ring_head = q;
    p->ring_tail = q;
}

static void ring_remove(struct rpcpool *p, struct rpcpool_queue *q)
{
    struct rpcpool_queue **pp = &p->ring_head, *prev = NULL;
    while (*pp && *pp != q) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (!*pp)
        return;
    *pp = q->next;
    if (p->ring_tail == q)
        p->ring_tail = prev;
    q->in_ring = false;
    q->next = NULL;
}

/* Put q in the ring if it has work it may start (lock held). */
static void ring_offer(struct rpcpool *p, struct rpcpool_queue *q)
{
    if (!q->in_ring && q->head && q->running < p->opt.queue_running) {
        ring_push(p, q);
        pthread_cond_signal(&p->work);
    }
}

static void *rpcpool_worker(void *arg)
{
    struct rpcpool *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->ring_head && !(p->stop && p->jobs == 0)) {
            p->idle++;
            pthread_cond_wait(&p->work, &p->lock);
            p->idle--;
        }
        if (!p->ring_head)
            break; /* stopping, and nothing is left */
        struct rpcpool_queue *q = p->ring_head;
        p->ring_head = q->next;
        if (!p->ring_head)
            p->ring_tail = NULL;
        q->in_ring = false;
        struct rpcpool_job *job = q->head;
        q->head = job->next;
        if (!q->head)
            q->tail = NULL;
        q->queued--;
        q->running++;
        p->busy++;
        ring_offer(p, q); /* its next job, for whoever is free */
        pthread_mutex_unlock(&p->lock);
        job->run(job);
        pthread_mutex_lock(&p->lock);
        q->running--;
        p->busy--;
        p->jobs--;
        ring_offer(p, q);
        if (p->stop && p->jobs == 0)
            pthread_cond_broadcast(&p->work); /* the others may leave too */
        pthread_mutex_unlock(&p->lock);
        job->done(job, true); /* may free q's owner: q is not touched after this */
        pthread_mutex_lock(&p->lock);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

int rpcpool_new(const struct rpcpool_options *opt, struct rpcpool **ret)
{
    struct rpcpool *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->opt = *opt;
    if (p->opt.workers == 0)
        p->opt.workers = 1;
    if (p->opt.queue_running == 0)
        p->opt.queue_running = 1;
    p->threads = calloc(p->opt.workers, sizeof(*p->threads));
    if (!p->threads) {
        free(p);
        return -ENOMEM;
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    *ret = p;
    return 0;
}

int rpcpool_submit(struct rpcpool *p, struct rpcpool_queue *q, struct rpcpool_job *job)
{
    int r = 0;
    pthread_mutex_lock(&p->lock);
    if (p->stop)
        r = -ESHUTDOWN;
    else if (q->queued + q->running >= p->opt.queue_max)
        r = -EAGAIN;
    else if (p->jobs >= p->opt.max_jobs)
        r = -EBUSY;
    /* Another thread when the idle ones (woken or not yet) are fewer than the jobs waiting,
     * this one included. */
    if (r == 0 && p->jobs + 1 - p->busy > p->idle && p->nthreads < p->opt.workers) {
        int e = pthread_create(&p->threads[p->nthreads], NULL, rpcpool_worker, p);
        if (e == 0)
            p->nthreads++;
        else if (p->nthreads == 0)
            r = -ENOMEM; /* nobody would ever run it */
        else
            log_errno(LOG_WARN, e, "rpcpool: cannot start a worker; %u are running", p->nthreads);
    }
    if (r < 0) {
        p->refused++;
        pthread_mutex_unlock(&p->lock);
        return r;
    }
    job->next = NULL;
    if (q->tail)
        q->tail->next = job;
    else
        q->head = job;
    q->tail = job;
    q->queued++;
    p->jobs++;
    ring_offer(p, q);
    pthread_mutex_unlock(&p->lock);
    return 0;
}

void rpcpool_cancel(struct rpcpool *p, struct rpcpool_queue *q)
{
    pthread_mutex_lock(&p->lock);
    struct rpcpool_job *jobs = q->head;
    if (q->in_ring)
        ring_remove(p, q);
    p->jobs -= q->queued;
    q->head = q->tail = NULL;
    q->queued = 0;
    if (p->stop && p->jobs == 0)
        pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    while (jobs) {
        struct rpcpool_job *next = jobs->next;
        jobs->done(jobs, false);
        jobs = next;
    }
}

void rpcpool_stop(struct rpcpool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = true;
    pthread_cond_broadcast(&p->work);
    unsigned n = p->nthreads;
    pthread_mutex_unlock(&p->lock);
    /* No thread is started once stop is set, so n is final. */
    for (unsigned i = 0; i < n; i++)
        pthread_join(p->threads[i], NULL);
    pthread_mutex_lock(&p->lock);
    p->nthreads = 0;
    pthread_mutex_unlock(&p->lock);
}

void rpcpool_free(struct rpcpool *p)
{
    if (!p)
        return;
    rpcpool_stop(p);
    pthread_cond_destroy(&p->work);
    pthread_mutex_destroy(&p->lock);
    free(p->threads);
    free(p);
}

json_t *rpcpool_stats(struct rpcpool *p)
{
    pthread_mutex_lock(&p->lock);
    json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I}", "workers", (json_int_t)p->nthreads,
                          "maxWorkers", (json_int_t)p->opt.workers, "busy", (json_int_t)p->busy,
                          "jobs", (json_int_t)p->jobs, "refused", (json_int_t)p->refused);
    pthread_mutex_unlock(&p->lock);
    return o;
}
