// SPDX-License-Identifier: MIT
/*
 * metrics — process-wide counters for GET /metrics (Prometheus text
 * format): requests by handler and result, a latency histogram per
 * handler, and isolation failures. Gauges (pool, queue, sessions) are read
 * from their owners at render time. Thread-safe.
 */
#ifndef SANDBOXD_METRICS_METRICS_H
#define SANDBOXD_METRICS_METRICS_H

#include <jansson.h>
#include <stdint.h>

#include "egress/proxy.h"

struct metrics;

struct metrics_gauge {
    const char *name; /* full metric name */
    const char *help;
    double value;
};

int metrics_new(struct metrics **ret);
void metrics_free(struct metrics *m);
/* handler: JIT, EXECUTOR, LLM, WORKFLOW, session, mcp. result: ok, error, timeout,
 * memory_limit, output_limit, killed, internal, rejected, bad_request. */
void metrics_request(struct metrics *m, const char *handler, const char *result,
                     int64_t duration_us);
void metrics_isolation_failure(struct metrics *m);
/* Add what the egress proxy counted for one execution (or session execution). */
void metrics_egress(struct metrics *m, const struct egress_stats *st);
/* Prometheus exposition (caller frees). */
char *metrics_render(struct metrics *m, const struct metrics_gauge *gauges, size_t n);

#endif
