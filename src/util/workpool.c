// SPDX-License-Identifier: MIT
/*
 * workpool — see workpool.h.
 *
 * One mutex guards everything. A queue is in the ring while it has queued jobs and fewer than
 * queue_running running; a worker takes the ring's first queue, runs that queue's first job and
 * puts the queue back at the tail if it may run more, so queues take turns. A thread is started
 * when a job arrives and the threads are no more than the jobs already in the pool (a thread that
 * is starting, or between two jobs, will take one), so there is never a thread per job more than
 * needed. Workers are joinable (util/thread.h); at stop they drain what was accepted and leave
 * when no job is left.
 */
#include "util/workpool.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "util/clock.h"
#include "util/log.h"
#include "util/thread.h"

struct workpool {
    struct workpool_options opt;
    pthread_mutex_t lock;
    pthread_cond_t work; /* a queue entered the ring, or stop */
    pthread_cond_t idle; /* jobs reached 0 (monotonic: workpool_wait_idle) */
    struct workpool_queue *ring_head, *ring_tail;
    unsigned jobs;    /* queued or running, all queues */
    unsigned running; /* jobs running */
    uint64_t refused;
    struct thread_group threads;
};

static void ring_push(struct workpool *p, struct workpool_queue *q)
{
    q->in_ring = true;
    q->next = NULL;
    if (p->ring_tail)
        p->ring_tail->next = q;
    else
        p->ring_head = q;
    p->ring_tail = q;
}

static void ring_remove(struct workpool *p, struct workpool_queue *q)
{
    struct workpool_queue **pp = &p->ring_head, *prev = NULL;
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
static void ring_offer(struct workpool *p, struct workpool_queue *q)
{
    if (!q->in_ring && q->head && q->running < p->opt.queue_running) {
        ring_push(p, q);
        pthread_cond_signal(&p->work);
    }
}

/* jobs went down (lock held): wake whoever waits for none. */
static void workpool_jobs_left(struct workpool *p)
{
    if (p->jobs)
        return;
    pthread_cond_broadcast(&p->idle);
    if (thread_group_stopping(&p->threads))
        pthread_cond_broadcast(&p->work); /* the workers may leave */
}

static void *workpool_worker(void *arg)
{
    struct workpool *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        /* Not thread_group_wait(): a stop does not end the wait while jobs are left. */
        while (!p->ring_head && !(thread_group_stopping(&p->threads) && p->jobs == 0))
            pthread_cond_wait(&p->work, &p->lock);
        if (!p->ring_head)
            break; /* stopping, and nothing is left */
        struct workpool_queue *q = p->ring_head;
        p->ring_head = q->next;
        if (!p->ring_head)
            p->ring_tail = NULL;
        q->in_ring = false;
        struct workpool_job *job = q->head;
        q->head = job->next;
        if (!q->head)
            q->tail = NULL;
        q->queued--;
        q->running++;
        p->running++;
        ring_offer(p, q); /* its next job, for whoever is free */
        pthread_mutex_unlock(&p->lock);
        void (*done)(struct workpool_job *, bool) = job->done; /* run() may free a job */
        job->run(job);
        pthread_mutex_lock(&p->lock);
        q->running--;
        p->running--;
        p->jobs--;
        ring_offer(p, q);
        workpool_jobs_left(p);
        pthread_mutex_unlock(&p->lock);
        if (done)
            done(job, true); /* may free q's owner: q is not touched after this */
        pthread_mutex_lock(&p->lock);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

int workpool_new(const struct workpool_options *opt, struct workpool **ret)
{
    struct workpool *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->opt = *opt;
    if (!p->opt.name)
        p->opt.name = "workpool";
    if (p->opt.workers == 0)
        p->opt.workers = 1;
    if (p->opt.queue_running == 0)
        p->opt.queue_running = 1;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    clock_cond_init(&p->idle);
    int r = thread_group_init(&p->threads, p->opt.name, p->opt.workers, &p->lock, &p->work, -1);
    if (r < 0) {
        workpool_free(p);
        return r;
    }
    *ret = p;
    return 0;
}

int workpool_submit(struct workpool *p, struct workpool_queue *q, struct workpool_job *job)
{
    int r = 0;
    pthread_mutex_lock(&p->lock);
    if (thread_group_stopping(&p->threads))
        r = -ESHUTDOWN;
    else if (q->queued + q->running >= p->opt.queue_max)
        r = -EAGAIN;
    else if (p->jobs >= p->opt.max_jobs)
        r = -EBUSY;
    unsigned n = thread_group_count(&p->threads);
    if (r == 0 && n <= p->jobs && n < p->opt.workers) {
        int e = thread_group_start(&p->threads, workpool_worker, p);
        if (e < 0 && n == 0) {
            log_errno(LOG_ERROR, e, "%s: cannot start a worker thread", p->opt.name);
            r = -ENOMEM; /* nobody would ever run it */
        } else if (e < 0) {
            log_errno(LOG_WARN, e, "%s: cannot start another worker thread (%u run)", p->opt.name,
                      n);
        }
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

void workpool_cancel(struct workpool *p, struct workpool_queue *q)
{
    pthread_mutex_lock(&p->lock);
    struct workpool_job *jobs = q->head;
    if (q->in_ring)
        ring_remove(p, q);
    p->jobs -= q->queued;
    q->head = q->tail = NULL;
    q->queued = 0;
    workpool_jobs_left(p);
    pthread_mutex_unlock(&p->lock);
    while (jobs) {
        struct workpool_job *next = jobs->next;
        jobs->done(jobs, false);
        jobs = next;
    }
}

int workpool_wait_idle(struct workpool *p, int64_t deadline_us)
{
    struct timespec ts = clock_deadline_ts(deadline_us);
    int r = 0;
    pthread_mutex_lock(&p->lock);
    while (p->jobs && r == 0)
        if (pthread_cond_timedwait(&p->idle, &p->lock, &ts) == ETIMEDOUT && p->jobs)
            r = -ETIMEDOUT;
    pthread_mutex_unlock(&p->lock);
    return r;
}

void workpool_stop(struct workpool *p)
{
    if (p)
        thread_group_stop(&p->threads);
}

void workpool_free(struct workpool *p)
{
    if (!p)
        return;
    workpool_stop(p);
    thread_group_done(&p->threads);
    pthread_cond_destroy(&p->idle);
    pthread_cond_destroy(&p->work);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

void workpool_stats(struct workpool *p, struct workpool_stats *ret)
{
    pthread_mutex_lock(&p->lock);
    *ret = (struct workpool_stats){.threads = thread_group_count(&p->threads),
                                   .max_threads = p->opt.workers,
                                   .running = p->running,
                                   .jobs = p->jobs,
                                   .refused = p->refused};
    pthread_mutex_unlock(&p->lock);
}
