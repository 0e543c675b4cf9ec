// SPDX-License-Identifier: MIT
/*
 * budget — see budget.h.
 *
 * The owners with claims are a small array scanned under the lock: only
 * owners with bytes in flight are in it (an entry goes when its claims reach
 * zero), so it holds at most one entry per tenant with an unread reply.
 */
#include "http/budget.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

struct http_budget_owner {
    const void *owner;
    size_t used;
};

struct http_budget {
    pthread_mutex_t lock;
    size_t total, per_owner;
    size_t used; /* every claim, the operator's included */
    uint64_t refused;
    struct http_budget_owner *owners;
    size_t n_owners, cap_owners;
};

int http_budget_new(size_t total, size_t per_owner, struct http_budget **ret)
{
    struct http_budget *b = calloc(1, sizeof(*b));
    if (!b)
        return -ENOMEM;
    pthread_mutex_init(&b->lock, NULL);
    b->total = total;
    b->per_owner = per_owner;
    *ret = b;
    return 0;
}

void http_budget_free(struct http_budget *b)
{
    if (!b)
        return;
    pthread_mutex_destroy(&b->lock);
    free(b->owners);
    free(b);
}

/* The owner's entry, or NULL (lock held). */
static struct http_budget_owner *http_budget_find(struct http_budget *b, const void *owner)
{
    for (size_t i = 0; i < b->n_owners; i++)
        if (b->owners[i].owner == owner)
            return &b->owners[i];
    return NULL;
}

int http_budget_take(struct http_budget *b, const void *owner, size_t n)
{
    if (n == 0)
        return 0;
    bool small = n <= HTTP_BUDGET_SMALL;
    int r = 0;
    pthread_mutex_lock(&b->lock);
    struct http_budget_owner *o = owner ? http_budget_find(b, owner) : NULL;
    size_t held = o ? o->used : 0;
    if (!small && (n > b->total - (b->used < b->total ? b->used : b->total) ||
                   (owner && n > b->per_owner - (held < b->per_owner ? held : b->per_owner)))) {
        b->refused++;
        r = -ENOBUFS;
    } else if (owner && !o) {
        if (b->n_owners == b->cap_owners) {
            size_t ncap = b->cap_owners ? b->cap_owners * 2 : 8;
            struct http_budget_owner *no = realloc(b->owners, ncap * sizeof(*no));
            if (!no)
                r = -ENOMEM;
            else {
                b->owners = no;
                b->cap_owners = ncap;
            }
        }
        if (r == 0) {
            o = &b->owners[b->n_owners++];
            *o = (struct http_budget_owner){.owner = owner};
        }
    }
    if (r == 0) {
        b->used += n;
        if (o)
            o->used += n;
    }
    pthread_mutex_unlock(&b->lock);
    return r;
}

void http_budget_give(struct http_budget *b, const void *owner, size_t n)
{
    if (!n)
        return;
    pthread_mutex_lock(&b->lock);
    b->used -= n < b->used ? n : b->used;
    struct http_budget_owner *o = owner ? http_budget_find(b, owner) : NULL;
    if (o) {
        o->used -= n < o->used ? n : o->used;
        if (o->used == 0) /* the array holds owners with claims only */
            *o = b->owners[--b->n_owners];
    }
    pthread_mutex_unlock(&b->lock);
}

bool http_budget_spent(struct http_budget *b, const void *owner)
{
    pthread_mutex_lock(&b->lock);
    struct http_budget_owner *o = owner ? http_budget_find(b, owner) : NULL;
    bool spent = b->used + HTTP_BUDGET_SMALL >= b->total ||
                 (o && o->used + HTTP_BUDGET_SMALL >= b->per_owner);
    pthread_mutex_unlock(&b->lock);
    return spent;
}

size_t http_budget_held(struct http_budget *b, const void *owner)
{
    pthread_mutex_lock(&b->lock);
    struct http_budget_owner *o = owner ? http_budget_find(b, owner) : NULL;
    size_t held = o ? o->used : 0;
    pthread_mutex_unlock(&b->lock);
    return held;
}

json_t *http_budget_stats(struct http_budget *b)
{
    pthread_mutex_lock(&b->lock);
    json_t *j = json_pack("{s:I, s:I, s:I, s:I}", "replyBytes", (json_int_t)b->used,
                          "replyBudgetBytes", (json_int_t)b->total, "tenantReplyBudgetBytes",
                          (json_int_t)b->per_owner, "replyRefused", (json_int_t)b->refused);
    pthread_mutex_unlock(&b->lock);
    return j;
}

void http_charge_drop(struct http_charge *c, size_t n)
{
    if (!c || !c->budget)
        return;
    if (n > c->bytes)
        n = c->bytes;
    http_budget_give(c->budget, c->owner, n);
    c->bytes -= n;
}

void http_charge_release(struct http_charge *c)
{
    if (!c || !c->budget)
        return;
    http_budget_give(c->budget, c->owner, c->bytes);
    *c = (struct http_charge){0};
}
