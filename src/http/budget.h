// SPDX-License-Identifier: MIT
/*
 * budget — the bytes of replies that sandboxd holds for clients: built and
 * not yet handed to the socket. A client that asks and never reads pins its
 * reply until the connection closes (libmicrohttpd frees a response only when
 * the request completes), so without a bound a few connections asking for
 * large results or files would grow the process until the kernel kills it.
 *
 * Two limits: a total for the process, and a share for each owner (a tenant;
 * NULL, the operator, has no share of its own and is bound by the total).
 * A claim that would cross either is refused and the route answers 503 with
 * Retry-After. Replies up to HTTP_BUDGET_SMALL bytes (errors, small JSON) are
 * counted but never refused: what they pin is of the order of what
 * libmicrohttpd keeps for every connection anyway, bounded by
 * --max-connections, and a refusal must itself be sendable.
 *
 * Owners are compared by pointer; they must outlive their claims. Used by
 * http/server.c and http/stream.c. Thread-safe.
 */
#ifndef SANDBOXD_HTTP_BUDGET_H
#define SANDBOXD_HTTP_BUDGET_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define HTTP_BUDGET_SMALL (16u << 10)

struct http_budget;

/* total: bytes for every reply together; per_owner: for the replies of one owner. 0, or
 * -ENOMEM. */
int http_budget_new(size_t total, size_t per_owner, struct http_budget **ret);
/* Every claim must have been given back. NULL-safe. */
void http_budget_free(struct http_budget *b);

/* Claim n bytes for owner: 0, or -ENOBUFS when the total or the owner's share would be
 * crossed (never for n <= HTTP_BUDGET_SMALL), -ENOMEM. */
int http_budget_take(struct http_budget *b, const void *owner, size_t n);
/* Give back n bytes of owner's claims. */
void http_budget_give(struct http_budget *b, const void *owner, size_t n);
/* Is the total or owner's share already spent, so that no reply beyond the small ones could be
 * claimed? For refusing work before it is done. */
bool http_budget_spent(struct http_budget *b, const void *owner);
/* The owner's claims now, in bytes (0 for an unknown owner). */
size_t http_budget_held(struct http_budget *b, const void *owner);
/* {"replyBytes", "replyBudgetBytes", "tenantReplyBudgetBytes", "replyRefused"}. */
json_t *http_budget_stats(struct http_budget *b);

/* One claim, as it travels with a reply: who holds how many bytes of which budget. */
struct http_charge {
    struct http_budget *budget; /* NULL: nothing claimed */
    const void *owner;
    size_t bytes;
};

/* Give back n bytes of c (at most what it holds). NULL-safe. */
void http_charge_drop(struct http_charge *c, size_t n);
/* Give back all of c. NULL-safe. */
void http_charge_release(struct http_charge *c);

#endif
