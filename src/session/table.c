// SPDX-License-Identifier: MIT
/*
 * table — the sessions as a whole (see session.h): the table of live
 * sessions and what reads it (info, list), ending sessions (delete, the
 * idle reaper, the CPU watchdog's stop), and the life of struct sessions
 * itself, shutdown included. One session's operations are in session.c.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "egress/proxy.h"
#include "mcpclient/registry.h"
#include "session/session_int.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/macros.h"

/* ---- inspection, deletion, reaping -------------------------------------------------------- */

int sessions_info(struct sessions *ss, const char *id, json_t **ret_info)
{
    pthread_mutex_lock(&ss->lock);
    struct session *s = NULL;
    HASH_FIND_STR(ss->table, id, s);
    *ret_info = s ? session_describe(s, ss) : NULL;
    pthread_mutex_unlock(&ss->lock);
    return !s ? -ENOENT : *ret_info ? 0 : -ENOMEM;
}

bool sessions_visible(struct sessions *ss, const char *id, const struct tenant *tenant)
{
    pthread_mutex_lock(&ss->lock);
    struct session *s = NULL;
    HASH_FIND_STR(ss->table, id, s);
    bool visible = s && (!tenant || s->tenant == tenant);
    pthread_mutex_unlock(&ss->lock);
    return visible;
}

bool sessions_exists(struct sessions *ss, const char *id)
{
    return sessions_visible(ss, id, NULL);
}

json_t *sessions_list(struct sessions *ss, const struct tenant *tenant)
{
    json_t *list = json_array();
    pthread_mutex_lock(&ss->lock);
    for (struct session *s = ss->table; list && s; s = s->hh.next)
        if ((!tenant || s->tenant == tenant) &&
            json_array_append_new(list, session_describe(s, ss)) < 0) {
            json_decref(list); /* not a list that leaves a session out */
            list = NULL;
        }
    pthread_mutex_unlock(&ss->lock);
    return list;
}

unsigned sessions_live(struct sessions *ss)
{
    pthread_mutex_lock(&ss->lock);
    unsigned n = ss->live;
    pthread_mutex_unlock(&ss->lock);
    return n;
}

json_t *sessions_stats(struct sessions *ss)
{
    struct workpool_stats ws;
    workpool_stats(ss->rpc, &ws);
    return json_pack("{s:I, s:{s:I, s:I, s:I, s:I, s:I}}", "live", (json_int_t)sessions_live(ss),
                     "toolCalls", "workers", (json_int_t)ws.threads, "maxWorkers",
                     (json_int_t)ws.max_threads, "busy", (json_int_t)ws.running, "jobs",
                     (json_int_t)ws.jobs, "refused", (json_int_t)ws.refused);
}

json_t *sessions_network_ceiling(struct sessions *ss)
{
    return ss->opt.egress ? egress_config_ceiling_json(egress_proxy_config(ss->opt.egress))
                          : json_array();
}

int sessions_end(struct sessions *ss, const char *id, const char *reason)
{
    pthread_mutex_lock(&ss->lock);
    struct session *s = NULL;
    HASH_FIND_STR(ss->table, id, s);
    if (s)
        session_unlist(ss, s, reason);
    pthread_mutex_unlock(&ss->lock);
    if (!s)
        return -ENOENT;
    log_info("session %s ended: %s", id, reason);
    session_end(s);
    return 0;
}

int sessions_delete(struct sessions *ss, const char *id)
{
    return sessions_end(ss, id, "it was deleted");
}

static void *sessions_reaper(void *arg)
{
    struct sessions *ss = arg;
    pthread_mutex_lock(&ss->lock);
    while (thread_group_wait(&ss->reaper, clock_mono_us() + 1000000)) {
        int64_t now = clock_mono_us();
        struct session *expired[64];
        size_t n = 0;
        struct session *s, *tmp;
        HASH_ITER(hh, ss->table, s, tmp)
        {
            if (n < ARRAY_SIZE(expired) && s->state != SESSION_RUNNING &&
                now - s->last_used_us > s->idle_us) {
                session_unlist(ss, s, "its idle time ran out");
                expired[n++] = s;
                ss->reaped++;
            }
        }
        pthread_mutex_unlock(&ss->lock);
        for (size_t i = 0; i < n; i++) {
            log_info("session %s reaped after %lld s idle", expired[i]->id,
                     (long long)(expired[i]->idle_us / 1000000));
            session_end(expired[i]);
        }
        pthread_mutex_lock(&ss->lock);
    }
    pthread_mutex_unlock(&ss->lock);
    return NULL;
}

/* The CPU watchdog: the budget of session `serial` ran out. */
static void sessions_on_budget(void *ctx, uint64_t serial)
{
    struct sessions *ss = ctx;
    pthread_mutex_lock(&ss->lock);
    struct session *s = ss->table;
    while (s && s->serial != serial)
        s = s->hh.next;
    /* Under the lock: an execution starting now waits, then continues the session. */
    if (s && s->state == SESSION_ARMED && session_cpu_expired(&s->cpu)) {
        session_set_state(s, SESSION_STOPPED);
        s->stopped_after = s->executions;
        log_info("session %s: what execution %llu left running used its CPU budget of %llu ms; "
                 "stopped until the next execution",
                 s->id, (unsigned long long)s->executions,
                 (unsigned long long)ss->opt.cpu_budget_ms);
    }
    pthread_mutex_unlock(&ss->lock);
}

int sessions_new(const struct sessions_options *opt, const struct jail_config *jail,
                 struct pool *pool, struct mcp_registry *mcp, struct workspace_store *ws,
                 struct metrics *metrics, struct sessions **ret)
{
    if (opt->id_prefix && strlen(opt->id_prefix) + 1 + SESSION_ID_LEN > SESSION_ID_MAX)
        return -ENAMETOOLONG;
    struct sessions *ss = calloc(1, sizeof(*ss));
    if (!ss)
        return -ENOMEM;
    ss->opt = *opt;
    ss->jail = jail;
    ss->pool = pool;
    ss->mcp = mcp;
    ss->ws = ws;
    ss->metrics = metrics;
    pthread_mutex_init(&ss->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ss->cond, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&ss->gone, NULL);
    int r = thread_group_init(&ss->reaper, "session reaper", 1, &ss->lock, &ss->cond, -1);
    struct workpool_options ro = {
        .name = "tool calls",
        .workers = opt->tool_workers,
        .max_jobs = opt->max_tool_calls,
        .queue_max = opt->session_tool_calls,
        .queue_running = opt->tool_workers > 1 ? opt->tool_workers / 2 : 1,
    };
    if (r == 0)
        r = workpool_new(&ro, &ss->rpc);
    if (r == 0)
        r = cpuwatch_new(sessions_on_budget, ss, &ss->cpuw);
    /* Without it sessions still run; only their file:// URLs name paths inside the sandbox. */
    if (r == 0 && session_links_new(&ss->links) < 0)
        log_warn("sessions: no host paths for the sessions' working directories");
    if (r == 0)
        r = thread_group_start(&ss->reaper, sessions_reaper, ss);
    if (r < 0) {
        sessions_free(ss);
        return r;
    }
    *ret = ss;
    return 0;
}

void sessions_shutdown(struct sessions *ss)
{
    if (!ss)
        return;
    pthread_mutex_lock(&ss->lock);
    bool first = !ss->stopping;
    ss->stopping = true;
    thread_group_stop_locked(&ss->reaper);
    /* Unlist every session (their table references come with them) and kill every cell,
     * also of sessions still starting or already unlisted but in use. */
    size_t n = HASH_COUNT(ss->table), k = 0;
    struct session **ended = n ? calloc(n, sizeof(*ended)) : NULL;
    struct session *s, *tmp;
    HASH_ITER(hh, ss->table, s, tmp)
    {
        if (!ended)
            break; /* out of memory: their cells are killed below, the table freed later */
        session_unlist(ss, s, SESSION_SHUTDOWN_REASON);
        ended[k++] = s;
    }
    for (s = ss->all; s; s = s->all_next) {
        if (!s->end_reason[0])
            snprintf(s->end_reason, sizeof(s->end_reason), "%s", SESSION_SHUTDOWN_REASON);
        if (s->cell)
            cell_kill(s->cell);
    }
    pthread_mutex_unlock(&ss->lock);
    if (first)
        log_info("sessions: ending %zu sessions", n);
    /* Tool calls in flight fail at once instead of at their timeout. */
    mcp_registry_shutdown(ss->mcp);
    for (size_t i = 0; i < k; i++)
        session_end(ended[i]);
    free(ended);
    workpool_stop(ss->rpc);
    thread_group_join(&ss->reaper);
    /* Every thread that still uses a session holds a reference: wait for the last one. */
    pthread_mutex_lock(&ss->lock);
    while (ss->allocated > HASH_COUNT(ss->table))
        pthread_cond_wait(&ss->gone, &ss->lock);
    pthread_mutex_unlock(&ss->lock);
}

void sessions_free(struct sessions *ss)
{
    if (!ss)
        return;
    sessions_shutdown(ss);
    struct session *s, *tmp;
    HASH_ITER(hh, ss->table, s, tmp)
    {
        session_unlist(ss, s, NULL);
        session_end(s);
    }
    workpool_free(ss->rpc);
    cpuwatch_free(ss->cpuw);
    session_links_free(ss->links);
    thread_group_done(&ss->reaper);
    pthread_cond_destroy(&ss->gone);
    pthread_cond_destroy(&ss->cond);
    pthread_mutex_destroy(&ss->lock);
    free(ss);
}
