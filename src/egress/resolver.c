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
    struct egress_lookup *queue, *queue_tail; /* waiting */
    struct egress_lookup *done;               /* answered, newest first */
    unsigned pending;                         /* queued or running */
    unsigned max_pending;
    int wake_fd;
    struct thread_group threads;
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

static void *resolver_thread(void *arg)
{
    struct egress_resolver *r = arg;
    pthread_mutex_lock(&r->lock);
    for (;;) {
        while (!r->queue && thread_group_wait(&r->threads, 0))
            ;
        if (thread_group_stopping(&r->threads))
            break;
        struct egress_lookup *l = r->queue;
        r->queue = l->next;
        if (!r->queue)
            r->queue_tail = NULL;
        pthread_mutex_unlock(&r->lock);
        resolver_lookup(l);
        pthread_mutex_lock(&r->lock);
        l->next = r->done;
        r->done = l;
        r->pending--;
        uint64_t one = 1;
        ssize_t w = write(r->wake_fd, &one, sizeof(one));
        (void)w; /* a full eventfd counter still wakes the loop */
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

int egress_resolver_new(unsigned threads, unsigned max_pending, int wake_fd,
                        struct egress_resolver **ret)
{
    struct egress_resolver *r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->cond, NULL);
    r->max_pending = max_pending;
    r->wake_fd = wake_fd;
    int e = thread_group_init(&r->threads, "egress resolver", threads, &r->lock, &r->cond, -1);
    for (unsigned i = 0; e == 0 && i < threads; i++)
        e = thread_group_start(&r->threads, resolver_thread, r); /* only this thread counts */
    if (e < 0) {
        egress_resolver_free(r);
        return e;
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
    free(r);
}

int egress_resolver_submit(struct egress_resolver *r, uint64_t id, const char *host, uint16_t port)
{
    struct egress_lookup *l = calloc(1, sizeof(*l));
    if (!l)
        return -ENOMEM;
    l->id = id;
    l->port = port;
    snprintf(l->host, sizeof(l->host), "%s", host);
    pthread_mutex_lock(&r->lock);
    if (r->pending >= r->max_pending || thread_group_stopping(&r->threads)) {
        pthread_mutex_unlock(&r->lock);
        free(l);
        return -EAGAIN;
    }
    if (r->queue_tail)
        r->queue_tail->next = l;
    else
        r->queue = l;
    r->queue_tail = l;
    r->pending++;
    pthread_cond_signal(&r->cond);
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
