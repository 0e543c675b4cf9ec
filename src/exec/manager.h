// SPDX-License-Identifier: MIT
/*
 * manager — admission control for executions (after seed 001's
 * ExecutionManager): at most max_running at once, at most max_queued
 * waiting (beyond that the caller answers 503), the time each waited, and
 * adaptive timeouts: per (app, script) the durations of recent successful
 * runs, so a request without timeoutMs gets a timeout derived from its own
 * history instead of the server maximum.
 *
 * Rule (docs/API.md): requested -> min(requested, max). No request and at
 * least 5 recorded runs -> clamp(4 x p95 + 100 ms, floor, max). Otherwise
 * the server default.
 */
#ifndef SANDBOXD_EXEC_MANAGER_H
#define SANDBOXD_EXEC_MANAGER_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct cell;

struct manager_options {
    unsigned max_running;
    unsigned max_queued;
    int64_t default_timeout_ms;
    int64_t max_timeout_ms;
    int64_t adaptive_floor_ms;
};

struct manager;

int manager_new(const struct manager_options *opt, struct manager **ret);
void manager_free(struct manager *m);
/* Wait for a slot. -EBUSY: the queue is full (answer 503). -ETIMEDOUT: deadline (monotonic us)
 * passed while queued. -ESHUTDOWN: manager_abort() ran. *ret_wait_us: time spent waiting. */
int manager_enter(struct manager *m, int64_t deadline_us, int64_t *ret_wait_us);
void manager_leave(struct manager *m);

/* The cell an execution holding a slot runs in, so that manager_abort() can end it; lives on
 * the caller's stack between manager_attach() and manager_detach(). */
struct manager_run {
    struct cell *cell; /* borrowed */
    bool aborted;
    struct manager_run *prev, *next; /* utlist DL */
};
/* 0; -ESHUTDOWN (nothing attached) when manager_abort() already ran. */
int manager_attach(struct manager *m, struct manager_run *run, struct cell *cell);
/* Before the cell is freed. True when manager_abort() killed it. */
bool manager_detach(struct manager *m, struct manager_run *run);
/* Shutdown, when waiting for executions is over: kill the cell of every attached execution
 * (their runs end at once) and fail queued and later manager_enter() calls with -ESHUTDOWN. */
void manager_abort(struct manager *m);
/* The timeout to apply (ms); *ret_rule says which rule chose it ("requested", "adaptive",
 * "default"). */
int64_t manager_timeout_ms(struct manager *m, const char *key, int64_t requested_ms,
                           const char **ret_rule);
/* Record a finished run of key (only successful runs shape the adaptive timeout). */
void manager_record(struct manager *m, const char *key, int64_t duration_us, bool ok);
json_t *manager_stats(struct manager *m);
/* Seconds a rejected client should wait before retrying. */
unsigned manager_retry_after(struct manager *m);

#endif
