// SPDX-License-Identifier: MIT
/*
 * resolver — see resolver.h.
 */
#include "egress/resolver.h"

#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/thread.h"

struct egress_resolver {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct egress_lookup *queue, *queue_tail; /* waiting, oldest first */
    struct egress_lookup *done;               /* answered, newest first */
    unsigned pending;                         /* queued or running */
    struct egress_resolver_limits lim;
    int wake_fd;
    unsigned n_threads;
    struct thread_group threads;
    const void **running; /* the group of each worker's lookup; NULL: idle */
};

struct resolver_worker {
    struct egress_resolver *r;
    unsigned index;
};

static void resolver_lookup(struct egress_lookup *l)
{
    char port[8];
    snprintf(port, sizeof(port), "%u", (unsigned)l->port);
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC,
        .ai_socktype = SOCK_STREAM,
        .ai_flags = AI_NUMERICSERV,
    };
    struct addrinfo *res = NULL;
    l->error = getaddrinfo(l->host, port, &hints, &res);
    l->n = 0;
    for (struct addrinfo *ai = res; ai && l->n < EGRESS_ADDRS_MAX; ai = ai->ai_next) {
        if ((ai->ai_family != AF_INET && ai->ai_family != AF_INET6) ||
            ai->ai_addrlen > sizeof(l->addrs[0]))
            continue;
        memcpy(&l->addrs[l->n], ai->ai_addr, ai->ai_addrlen);
        l->lens[l->n++] = ai->ai_addrlen;
    }
    if (res)
        freeaddrinfo(res);
    if (!l->error && !l->n)
        l->error = EAI_NONAME;
}

/* Lookups of group running now (lock held). */
static unsigned resolver_running(const struct egress_resolver *r, const void *group)
{
    unsigned n = 0;
    for (unsigned i = 0; i < r->n_threads; i++)
        n += r->running[i] == group;
    return n;
}

/* Take the oldest queued lookup whose group runs fewer than its share, or NULL (lock held). */
static struct egress_lookup *resolver_next(struct egress_resolver *r)
{
    struct egress_lookup *prev = NULL;
    for (struct egress_lookup *l = r->queue; l; prev = l, l = l->next) {
        if (resolver_running(r, l->group) >= r->lim.group_threads)
            continue;
        if (prev)
            prev->next = l->next;
        else
            r->queue = l->next;
        if (r->queue_tail == l)
            r->queue_tail = prev;
        l->next = NULL;
        return l;
    }
    return NULL;
}

static void *resolver_thread(void *arg)
{
    struct resolver_worker *w = arg;
    struct egress_resolver *r = w->r;
    unsigned me = w->index;
    free(w);
    pthread_mutex_lock(&r->lock);
    for (;;) {
        struct egress_lookup *l = NULL;
        while (!thread_group_stopping(&r->threads) && !(l = resolver_next(r)))
            (void)thread_group_wait(&r->threads, 0); /* the loop checks the flag itself */
        if (thread_group_stopping(&r->threads)) {
            if (l) { /* back where it was taken from: freed with the queue */
                l->next = r->queue;
                r->queue = l;
                if (!r->queue_tail)
                    r->queue_tail = l;
            }
            break;
        }
        r->running[me] = l->group;
        pthread_mutex_unlock(&r->lock);
        resolver_lookup(l);
        pthread_mutex_lock(&r->lock);
        r->running[me] = NULL;
        l->next = r->done;
        r->done = l;
        r->pending--;
        /* A group under its share again: a lookup of it that others passed over may go now. */
        pthread_cond_broadcast(&r->cond);
        uint64_t one = 1;
        ssize_t written = write(r->wake_fd, &one, sizeof(one));
        (void)written; /* a full eventfd counter still wakes the loop */
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

int egress_resolver_new(const struct egress_resolver_limits *lim, int wake_fd,
                        struct egress_resolver **ret)
{
    struct egress_resolver *r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    unsigned threads = lim->threads ? lim->threads : 1;
    r->running = calloc(threads, sizeof(*r->running));
    if (!r->running) {
        free(r);
        return -ENOMEM;
    }
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->cond, NULL);
    int e = thread_group_init(&r->threads, "egress resolver", threads, &r->lock, &r->cond, -1);
    if (e < 0) {
        egress_resolver_free(r);
        return e;
    }
    r->lim = *lim;
    if (!r->lim.group_threads)
        r->lim.group_threads = threads;
    if (!r->lim.group_pending)
        r->lim.group_pending = r->lim.max_pending;
    r->wake_fd = wake_fd;
    /* Only this thread starts them, before r is shared: no lock needed for the count. */
    for (; r->n_threads < threads; r->n_threads++) {
        struct resolver_worker *w = malloc(sizeof(*w));
        e = w ? 0 : -ENOMEM;
        if (w) {
            *w = (struct resolver_worker){r, r->n_threads};
            if ((e = thread_group_start(&r->threads, resolver_thread, w)) < 0)
                free(w);
        }
        if (e < 0) {
            egress_resolver_free(r);
            return e;
        }
    }
    *ret = r;
    return 0;
}

static void resolver_free_list(struct egress_lookup *l)
{
    while (l) {
        struct egress_lookup *next = l->next;
        free(l);
        l = next;
    }
}

void egress_resolver_free(struct egress_resolver *r)
{
    if (!r)
        return;
    thread_group_stop(&r->threads);
    resolver_free_list(r->queue);
    resolver_free_list(r->done);
    pthread_cond_destroy(&r->cond);
    pthread_mutex_destroy(&r->lock);
    thread_group_done(&r->threads);
    free(r->running);
    free(r);
}

/* Lookups of group queued or running (lock held). */
static unsigned resolver_pending(const struct egress_resolver *r, const void *group)
{
    unsigned n = resolver_running(r, group);
    for (const struct egress_lookup *l = r->queue; l; l = l->next)
        n += l->group == group;
    return n;
}

int egress_resolver_submit(struct egress_resolver *r, uint64_t id, const char *host, uint16_t port,
                           const void *group)
{
    struct egress_lookup *l = calloc(1, sizeof(*l));
    if (!l)
        return -ENOMEM;
    l->id = id;
    l->group = group;
    l->port = port;
    snprintf(l->host, sizeof(l->host), "%s", host);
    pthread_mutex_lock(&r->lock);
    int err = r->pending >= r->lim.max_pending || thread_group_stopping(&r->threads) ? -EAGAIN
              : resolver_pending(r, group) >= r->lim.group_pending                   ? -EBUSY
                                                                                     : 0;
    if (err) {
        pthread_mutex_unlock(&r->lock);
        free(l);
        return err;
    }
    if (r->queue_tail)
        r->queue_tail->next = l;
    else
        r->queue = l;
    r->queue_tail = l;
    r->pending++;
    /* Every worker: the one woken must be one that may take it, and all are equal here, but a
     * signal could wake one that finds only lookups of groups at their share. */
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);
    return 0;
}

struct egress_lookup *egress_resolver_take(struct egress_resolver *r)
{
    pthread_mutex_lock(&r->lock);
    struct egress_lookup *l = r->done;
    r->done = NULL;
    pthread_mutex_unlock(&r->lock);
    return l;
}
