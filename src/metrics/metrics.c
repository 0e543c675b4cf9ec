// SPDX-License-Identifier: MIT
/*
 * metrics — see metrics.h.
 */
#include "metrics/metrics.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "proto/handlers.h"
#include "util/buf.h"
#include "util/macros.h"

/* /execute's handler types, then the session front ends' executions */
static const char *const metrics_handlers[] = {HANDLER_TYPE_NAMES "session", "mcp"};
static const char *const metrics_results[] = {"ok",           "error",        "timeout",
                                              "memory_limit", "output_limit", "killed",
                                              "internal",     "rejected",     "bad_request"};
static const double metrics_buckets_ms[] = {1,   2,   5,    10,   25,   50,    100,
                                            250, 500, 1000, 2500, 5000, 10000, 30000};

#define NH ARRAY_SIZE(metrics_handlers)
#define NR ARRAY_SIZE(metrics_results)
#define NB ARRAY_SIZE(metrics_buckets_ms)

struct metrics {
    pthread_mutex_t lock;
    uint64_t requests[NH][NR];
    uint64_t buckets[NH][NB];
    uint64_t count[NH];
    double sum_s[NH];
    uint64_t isolation_failures;
    struct egress_stats egress;
};

int metrics_new(struct metrics **ret)
{
    struct metrics *m = calloc(1, sizeof(*m));
    if (!m)
        return -ENOMEM;
    pthread_mutex_init(&m->lock, NULL);
    *ret = m;
    return 0;
}

void metrics_free(struct metrics *m)
{
    if (!m)
        return;
    pthread_mutex_destroy(&m->lock);
    free(m);
}

static int metrics_index(const char *const *names, size_t n, const char *v)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], v) == 0)
            return (int)i;
    return -1;
}

void metrics_request(struct metrics *m, const char *handler, const char *result,
                     int64_t duration_us)
{
    int h = metrics_index(metrics_handlers, NH, handler);
    int r = metrics_index(metrics_results, NR, result);
    if (h < 0 || r < 0)
        return;
    double ms = (double)duration_us / 1000.0;
    pthread_mutex_lock(&m->lock);
    m->requests[h][r]++;
    m->count[h]++;
    m->sum_s[h] += ms / 1000.0;
    for (size_t b = 0; b < NB; b++)
        if (ms <= metrics_buckets_ms[b])
            m->buckets[h][b]++;
    pthread_mutex_unlock(&m->lock);
}

void metrics_isolation_failure(struct metrics *m)
{
    pthread_mutex_lock(&m->lock);
    m->isolation_failures++;
    pthread_mutex_unlock(&m->lock);
}

void metrics_egress(struct metrics *m, const struct egress_stats *st)
{
    pthread_mutex_lock(&m->lock);
    egress_stats_add(&m->egress, st);
    pthread_mutex_unlock(&m->lock);
}

static void metrics_render_egress(struct buf *b, const struct egress_stats *e)
{
    buf_printf(b,
               "# HELP sandboxd_egress_bytes_total Bytes through the egress proxy.\n"
               "# TYPE sandboxd_egress_bytes_total counter\n"
               "sandboxd_egress_bytes_total{direction=\"up\"} %llu\n"
               "sandboxd_egress_bytes_total{direction=\"down\"} %llu\n"
               "# HELP sandboxd_egress_requests_total Requests and tunnels the egress proxy "
               "allowed.\n"
               "# TYPE sandboxd_egress_requests_total counter\n"
               "sandboxd_egress_requests_total %llu\n"
               "# HELP sandboxd_egress_denied_total Requests the egress proxy refused, by "
               "reason.\n"
               "# TYPE sandboxd_egress_denied_total counter\n",
               (unsigned long long)e->bytes_up, (unsigned long long)e->bytes_down,
               (unsigned long long)e->requests);
    for (int i = 0; i < EGRESS_DENY_N; i++)
        buf_printf(b, "sandboxd_egress_denied_total{reason=\"%s\"} %llu\n",
                   egress_deny_name((enum egress_deny)i), (unsigned long long)e->denied_by[i]);
}

char *metrics_render(struct metrics *m, const struct metrics_gauge *gauges, size_t n)
{
    struct buf b;
    buf_init(&b, 1 << 20);
    pthread_mutex_lock(&m->lock);
    buf_appends(&b, "# HELP sandboxd_requests_total Executions by handler and result.\n"
                    "# TYPE sandboxd_requests_total counter\n");
    for (size_t h = 0; h < NH; h++)
        for (size_t r = 0; r < NR; r++)
            if (m->requests[h][r])
                buf_printf(&b, "sandboxd_requests_total{handler=\"%s\",result=\"%s\"} %llu\n",
                           metrics_handlers[h], metrics_results[r],
                           (unsigned long long)m->requests[h][r]);
    buf_appends(&b, "# HELP sandboxd_request_duration_seconds Latency of executions.\n"
                    "# TYPE sandboxd_request_duration_seconds histogram\n");
    for (size_t h = 0; h < NH; h++) {
        if (!m->count[h])
            continue;
        for (size_t i = 0; i < NB; i++)
            buf_printf(&b,
                       "sandboxd_request_duration_seconds_bucket{handler=\"%s\",le=\"%g\"} %llu\n",
                       metrics_handlers[h], metrics_buckets_ms[i] / 1000.0,
                       (unsigned long long)m->buckets[h][i]);
        buf_printf(&b,
                   "sandboxd_request_duration_seconds_bucket{handler=\"%s\",le=\"+Inf\"} %llu\n",
                   metrics_handlers[h], (unsigned long long)m->count[h]);
        buf_printf(&b, "sandboxd_request_duration_seconds_sum{handler=\"%s\"} %.6f\n",
                   metrics_handlers[h], m->sum_s[h]);
        buf_printf(&b, "sandboxd_request_duration_seconds_count{handler=\"%s\"} %llu\n",
                   metrics_handlers[h], (unsigned long long)m->count[h]);
    }
    buf_printf(&b,
               "# HELP sandboxd_isolation_failures_total Sandboxes that could not be set up.\n"
               "# TYPE sandboxd_isolation_failures_total counter\n"
               "sandboxd_isolation_failures_total %llu\n",
               (unsigned long long)m->isolation_failures);
    metrics_render_egress(&b, &m->egress);
    pthread_mutex_unlock(&m->lock);
    for (size_t i = 0; i < n; i++)
        buf_printf(&b, "# HELP %s %s\n# TYPE %s gauge\n%s %g\n", gauges[i].name, gauges[i].help,
                   gauges[i].name, gauges[i].name, gauges[i].value);
    return buf_take(&b, NULL);
}
