// SPDX-License-Identifier: MIT
/*
 * workers — see workers.h.
 *
 * A thread is started when an item arrives and no thread is idle, until
 * max_threads exist; threads then stay (a short-lived thread per request
 * would cost a clone and an exit each time, and the pool is freed only at
 * shutdown). The thread array is allocated once at its maximum size so that
 * every thread can be joined.
 */
#include "http/workers.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "util/clock.h"
#include "util/log.h"

struct http_workers {
    pthread_mutex_t lock;
    pthread_cond_t work; /* an item was queued, or stopping */
    pthread_cond_t idle; /* busy reached 0 */
    struct http_work *head, *tail;
    unsigned busy; /* queued + running */
    unsigned idle_threads;
    unsigned n_threads, max_threads;
    pthread_t *threads;
    bool stopping;
};

static void *http_workers_main(void *arg)
{
    struct http_workers *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->head && !p->stopping) {
            p->idle_threads++;
            pthread_cond_wait(&p->work, &p->lock);
            p->idle_threads--;
        }
        struct http_work *w = p->head;
        if (!w)
            break; /* stopping, and the queue is empty */
        p->head = w->next;
        if (!p->head)
            p->tail = NULL;
        pthread_mutex_unlock(&p->lock);
        w->fn(w); /* may free w */
        pthread_mutex_lock(&p->lock);
        if (--p->busy == 0)
            pthread_cond_broadcast(&p->idle);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

int http_workers_new(unsigned max_threads, struct http_workers **ret)
{
    struct http_workers *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->max_threads = max_threads ? max_threads : 1;
    p->threads = calloc(p->max_threads, sizeof(*p->threads));
    if (!p->threads) {
        free(p);
        return -ENOMEM;
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    clock_cond_init(&p->idle);
    *ret = p;
    return 0;
}

int http_workers_submit(struct http_workers *p, struct http_work *w)
{
    pthread_mutex_lock(&p->lock);
    if (p->stopping) {
        pthread_mutex_unlock(&p->lock);
        return -ESHUTDOWN;
    }
    /* Idle threads are owed the items already queued before this one (a thread that was just
     * started and has not taken its item yet counts as busy, hence signed arithmetic). */
    long queued = (long)p->busy - (long)(p->n_threads - p->idle_threads);
    if ((long)p->idle_threads <= queued && p->n_threads < p->max_threads) {
        int r = pthread_create(&p->threads[p->n_threads], NULL, http_workers_main, p);
        if (r == 0)
            p->n_threads++;
        else if (p->n_threads == 0) {
            pthread_mutex_unlock(&p->lock);
            return log_errno(LOG_ERROR, r, "http: cannot start a worker thread");
        } else
            log_errno(LOG_WARN, r, "http: cannot start another worker thread (%u run)",
                      p->n_threads);
    }
    w->next = NULL;
    if (p->tail)
        p->tail->next = w;
    else
        p->head = w;
    p->tail = w;
    p->busy++;
    pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&p->lock);
    return 0;
}

void http_workers_counts(struct http_workers *p, unsigned *ret_busy, unsigned *ret_threads)
{
    pthread_mutex_lock(&p->lock);
    *ret_busy = p->busy;
    *ret_threads = p->n_threads;
    pthread_mutex_unlock(&p->lock);
}

int http_workers_wait_idle(struct http_workers *p, int64_t deadline_us)
{
    struct timespec ts = clock_deadline_ts(deadline_us);
    int r = 0;
    pthread_mutex_lock(&p->lock);
    while (p->busy && r == 0)
        if (pthread_cond_timedwait(&p->idle, &p->lock, &ts) == ETIMEDOUT && p->busy)
            r = -ETIMEDOUT;
    pthread_mutex_unlock(&p->lock);
    return r;
}

void http_workers_free(struct http_workers *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    pthread_cond_broadcast(&p->work);
    unsigned n = p->n_threads;
    pthread_mutex_unlock(&p->lock);
    for (unsigned i = 0; i < n; i++)
        pthread_join(p->threads[i], NULL);
    pthread_cond_destroy(&p->idle);
    pthread_cond_destroy(&p->work);
    pthread_mutex_destroy(&p->lock);
    free(p->threads);
    free(p);
}
