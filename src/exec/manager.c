// SPDX-License-Identifier: MIT
/*
 * manager — see manager.h.
 */
#include "exec/manager.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uthash.h>
#include <utlist.h>

#include "exec/cell.h"
#include "util/clock.h"
#include "util/macros.h"

#define MANAGER_HISTORY     32
#define MANAGER_MAX_KEYS    4096
#define MANAGER_MIN_SAMPLES 5

struct manager_history {
    char *key;
    int64_t samples[MANAGER_HISTORY]; /* microseconds, ring */
    unsigned n, next;
    UT_hash_handle hh;
};

struct manager {
    struct manager_options opt;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    unsigned running, queued;
    bool aborted;               /* manager_abort() ran */
    struct manager_run *active; /* attached executions */
    uint64_t admitted, rejected, timed_out;
    int64_t wait_us_total;
    struct manager_history *history;
};

int manager_new(const struct manager_options *opt, struct manager **ret)
{
    struct manager *m = calloc(1, sizeof(*m));
    if (!m)
        return -ENOMEM;
    m->opt = *opt;
    pthread_mutex_init(&m->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&m->cond, &ca);
    pthread_condattr_destroy(&ca);
    *ret = m;
    return 0;
}

void manager_free(struct manager *m)
{
    if (!m)
        return;
    struct manager_history *h, *tmp;
    HASH_ITER(hh, m->history, h, tmp)
    {
        HASH_DEL(m->history, h);
        free(h->key);
        free(h);
    }
    pthread_cond_destroy(&m->cond);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

int manager_enter(struct manager *m, int64_t deadline_us, int64_t *ret_wait_us)
{
    int64_t start = clock_mono_us();
    pthread_mutex_lock(&m->lock);
    if (m->aborted) {
        pthread_mutex_unlock(&m->lock);
        *ret_wait_us = 0;
        return -ESHUTDOWN;
    }
    if (m->running < m->opt.max_running) {
        m->running++;
        m->admitted++;
        pthread_mutex_unlock(&m->lock);
        *ret_wait_us = 0;
        return 0;
    }
    if (m->queued >= m->opt.max_queued) {
        m->rejected++;
        pthread_mutex_unlock(&m->lock);
        *ret_wait_us = 0;
        return -EBUSY;
    }
    m->queued++;
    int r = 0;
    struct timespec ts = {.tv_sec = deadline_us / 1000000,
                          .tv_nsec = (deadline_us % 1000000) * 1000};
    while (m->running >= m->opt.max_running && !m->aborted) {
        if (pthread_cond_timedwait(&m->cond, &m->lock, &ts) == ETIMEDOUT &&
            m->running >= m->opt.max_running) {
            r = -ETIMEDOUT;
            break;
        }
    }
    if (m->aborted)
        r = -ESHUTDOWN;
    m->queued--;
    *ret_wait_us = clock_mono_us() - start;
    if (r == 0) {
        m->running++;
        m->admitted++;
        m->wait_us_total += *ret_wait_us;
    } else if (r == -ETIMEDOUT) {
        m->timed_out++;
    }
    pthread_mutex_unlock(&m->lock);
    return r;
}

int manager_attach(struct manager *m, struct manager_run *run, struct cell *cell)
{
    *run = (struct manager_run){.cell = cell};
    pthread_mutex_lock(&m->lock);
    int r = m->aborted ? -ESHUTDOWN : 0;
    if (r == 0)
        DL_PREPEND(m->active, run);
    pthread_mutex_unlock(&m->lock);
    return r;
}

bool manager_detach(struct manager *m, struct manager_run *run)
{
    pthread_mutex_lock(&m->lock);
    DL_DELETE(m->active, run);
    bool aborted = run->aborted;
    pthread_mutex_unlock(&m->lock);
    return aborted;
}

void manager_abort(struct manager *m)
{
    pthread_mutex_lock(&m->lock);
    m->aborted = true;
    /* Killed under the lock: an attached cell is not freed before it is detached. */
    for (struct manager_run *run = m->active; run; run = run->next) {
        run->aborted = true;
        cell_kill(run->cell);
    }
    pthread_cond_broadcast(&m->cond);
    pthread_mutex_unlock(&m->lock);
}

void manager_leave(struct manager *m)
{
    pthread_mutex_lock(&m->lock);
    m->running--;
    pthread_cond_signal(&m->cond);
    pthread_mutex_unlock(&m->lock);
}

static int manager_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int64_t manager_timeout_ms(struct manager *m, const char *key, int64_t requested_ms,
                           const char **ret_rule)
{
    if (requested_ms > 0) {
        *ret_rule = "requested";
        return requested_ms < m->opt.max_timeout_ms ? requested_ms : m->opt.max_timeout_ms;
    }
    int64_t samples[MANAGER_HISTORY];
    unsigned n = 0;
    pthread_mutex_lock(&m->lock);
    struct manager_history *h = NULL;
    if (key)
        HASH_FIND_STR(m->history, key, h);
    if (h) {
        n = h->n;
        memcpy(samples, h->samples, n * sizeof(int64_t));
    }
    pthread_mutex_unlock(&m->lock);
    if (n < MANAGER_MIN_SAMPLES) {
        *ret_rule = "default";
        return m->opt.default_timeout_ms;
    }
    qsort(samples, n, sizeof(int64_t), manager_cmp);
    unsigned idx = (n * 95 + 99) / 100; /* nearest-rank p95 */
    int64_t p95_ms = (samples[idx ? idx - 1 : 0] + 999) / 1000;
    int64_t t = 4 * p95_ms + 100;
    if (t < m->opt.adaptive_floor_ms)
        t = m->opt.adaptive_floor_ms;
    if (t > m->opt.max_timeout_ms)
        t = m->opt.max_timeout_ms;
    *ret_rule = "adaptive";
    return t;
}

void manager_record(struct manager *m, const char *key, int64_t duration_us, bool ok)
{
    if (!ok || !key)
        return;
    pthread_mutex_lock(&m->lock);
    struct manager_history *h = NULL;
    HASH_FIND_STR(m->history, key, h);
    if (!h) {
        if (HASH_COUNT(m->history) >= MANAGER_MAX_KEYS) {
            struct manager_history *oldest = m->history;
            HASH_DEL(m->history, oldest);
            free(oldest->key);
            free(oldest);
        }
        h = calloc(1, sizeof(*h));
        if (!h || !(h->key = strdup(key))) {
            free(h);
            pthread_mutex_unlock(&m->lock);
            return;
        }
        HASH_ADD_KEYPTR(hh, m->history, h->key, strlen(h->key), h);
    }
    h->samples[h->next] = duration_us;
    h->next = (h->next + 1) % MANAGER_HISTORY;
    if (h->n < MANAGER_HISTORY)
        h->n++;
    pthread_mutex_unlock(&m->lock);
}

unsigned manager_retry_after(struct manager *m)
{
    (void)m;
    return 1;
}

json_t *manager_stats(struct manager *m)
{
    pthread_mutex_lock(&m->lock);
    json_t *o =
        json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "running", (json_int_t)m->running,
                  "queued", (json_int_t)m->queued, "maxRunning", (json_int_t)m->opt.max_running,
                  "maxQueued", (json_int_t)m->opt.max_queued, "admitted", (json_int_t)m->admitted,
                  "rejected", (json_int_t)m->rejected, "queueTimeouts", (json_int_t)m->timed_out,
                  "adaptiveKeys", (json_int_t)HASH_COUNT(m->history));
    pthread_mutex_unlock(&m->lock);
    return o;
}
