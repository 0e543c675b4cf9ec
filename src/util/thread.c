// SPDX-License-Identifier: MIT
/*
 * thread — see thread.h.
 */
#include "util/thread.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/log.h"

static pthread_t *thread_slot(struct thread_group *g, unsigned i)
{
    return g->threads ? &g->threads[i] : &g->one;
}

int thread_group_init(struct thread_group *g, const char *name, unsigned max, pthread_mutex_t *lock,
                      pthread_cond_t *cond, int wake_fd)
{
    *g = (struct thread_group){
        .name = name, .lock = lock, .cond = cond, .wake_fd = wake_fd, .max = max ? max : 1};
    atomic_init(&g->stop, false);
    if (g->max > 1 && !(g->threads = calloc(g->max, sizeof(*g->threads)))) {
        g->max = 0; /* as if never set up: nothing starts, a stop does nothing */
        return -ENOMEM;
    }
    return 0;
}

int thread_group_start(struct thread_group *g, void *(*fn)(void *), void *arg)
{
    if (atomic_load(&g->stop))
        return -ESHUTDOWN;
    if (g->n >= g->max)
        return -ENOSPC;
    int r = pthread_create(thread_slot(g, g->n), NULL, fn, arg);
    if (r != 0)
        return -r;
    g->n++;
    return 0;
}

unsigned thread_group_count(const struct thread_group *g)
{
    return g->n;
}

bool thread_group_stopping(const struct thread_group *g)
{
    return atomic_load(&g->stop);
}

bool thread_group_wait(struct thread_group *g, int64_t deadline_us)
{
    if (atomic_load(&g->stop))
        return false;
    if (deadline_us > 0) {
        struct timespec ts = clock_deadline_ts(deadline_us);
        (void)pthread_cond_timedwait(g->cond, g->lock, &ts); /* a timeout is a normal wake */
    } else {
        pthread_cond_wait(g->cond, g->lock);
    }
    return !atomic_load(&g->stop);
}

void thread_group_stop_locked(struct thread_group *g)
{
    if (!g->max)
        return; /* zeroed, never set up: no thread, no lock, and fd 0 is not ours */
    atomic_store(&g->stop, true);
    if (g->cond)
        pthread_cond_broadcast(g->cond);
    if (g->wake_fd >= 0) {
        uint64_t one = 1;
        /* Never blocks (an eventfd); a full counter still wakes the poller. */
        if (write(g->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
            log_errno(LOG_ERROR, errno, "%s: cannot wake its thread", g->name);
    }
}

void thread_group_join(struct thread_group *g)
{
    /* No thread starts once a stop was asked (or, for threads that end on their own, nobody
     * starts one during the join), so n is final. */
    if (g->lock)
        pthread_mutex_lock(g->lock);
    unsigned n = g->n;
    if (g->lock)
        pthread_mutex_unlock(g->lock);
    for (unsigned i = 0; i < n; i++)
        pthread_join(*thread_slot(g, i), NULL);
    if (g->lock)
        pthread_mutex_lock(g->lock);
    g->n = 0;
    if (g->lock)
        pthread_mutex_unlock(g->lock);
}

void thread_group_stop(struct thread_group *g)
{
    if (!g->max)
        return;
    if (g->lock)
        pthread_mutex_lock(g->lock);
    thread_group_stop_locked(g);
    if (g->lock)
        pthread_mutex_unlock(g->lock);
    thread_group_join(g);
}

void thread_group_done(struct thread_group *g)
{
    free(g->threads);
    g->threads = NULL;
    g->max = 0; /* as if never set up: a later stop does nothing */
}
