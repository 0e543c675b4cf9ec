// SPDX-License-Identifier: MIT
/*
 * session — see session.h: one session's life (create, execute, interrupt). The shared
 * structures are in session_int.h, the table of sessions and shutdown in table.c.
 *
 * Threads: the caller's thread runs an execution (exec_run reads the
 * interpreter's frames and output, and writes what the bridge queued); tool
 * calls run on the shared worker pool (util/workpool.c); the reaper ends idle
 * sessions; the CPU watchdog (cpu.c) stops sessions whose leftover work
 * spent its budget. Every thread that uses a session holds a reference, and
 * every session allocated is on the `all` list, so sessions_shutdown() can
 * end them all and wait until the last reference is gone before the pools,
 * the MCP registry and the workspace store they use are freed.
 */
#include "session/session.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "metrics/metrics.h"
#include "response/response.h"
#include "tenant/tenant.h"
#include "egress/proxy.h"
#include "exec/run.h"
#include "mcpclient/alias.h"
#include "mcpclient/registry.h"
#include "pool/pool.h"
#include "pool/profile.h"
#include "session/files.h"
#include "session/session_int.h"
#include "session/workspace.h"
#include "util/clock.h"
#include "util/fmt.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/randid.h"
#include "util/utf8.h"

#define SESSION_READY_TIMEOUT_US (30 * 1000000)

static void session_shut_err(struct sbx_error *e)
{
    sbx_error_set(e, SBX_ERR_UNAVAILABLE, "SHUTTING_DOWN", NULL,
                  "sandboxd is shutting down: the session was ended; retry on a new session");
}

/* ---- reference counting ------------------------------------------------------------------- */

void session_ref(struct session *s)
{
    atomic_fetch_add(&s->refs, 1);
}

void session_unref(struct session *s)
{
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    struct sessions *ss = s->owner;
    /* Off the list first, so that shutdown never touches a cell being freed; counted as
     * allocated until everything it uses (the pool's cell, the cgroup) is released. */
    pthread_mutex_lock(&ss->lock);
    assert_session_state(s, SESSION_ENDED);
    if (s->all_prev)
        s->all_prev->all_next = s->all_next;
    else if (ss->all == s)
        ss->all = s->all_next;
    if (s->all_next)
        s->all_next->all_prev = s->all_prev;
    pthread_mutex_unlock(&ss->lock);
    if (s->cpu_rule)
        session_cpu_done(&s->cpu);
    session_links_remove(ss->links, s->link);
    cell_free(s->cell);
    if (s->tap) {
        struct egress_stats st;
        egress_tap_free(s->tap, &st);
        metrics_egress(ss->metrics, &st);
    }
    json_decref(s->network);
    workspace_close(s->wsh);
    session_bridge_done(s);
    session_approvals_done(s);
    json_decref(s->servers);
    free(s->workspace);
    pthread_mutex_destroy(&s->exec_lock);
    pthread_mutex_destroy(&s->servers_lock);
    free(s);
    pthread_mutex_lock(&ss->lock);
    ss->allocated--;
    pthread_cond_broadcast(&ss->gone);
    pthread_mutex_unlock(&ss->lock);
}

const char *sessions_why_ended(const struct sessions *ss, const char *id)
{
    for (size_t i = 0; i < SESSION_ENDED_KEPT; i++)
        if (ss->ended[i].id[0] && strcmp(ss->ended[i].id, id) == 0)
            return ss->ended[i].reason;
    return NULL;
}

void session_end(struct session *s)
{
    if (s->cell)
        cell_kill(s->cell);
    workpool_cancel(s->owner->rpc, &s->rpcq);
    session_unref(s);
}

struct session *sessions_lookup(struct sessions *ss, const char *id)
{
    struct session *s = NULL;
    pthread_mutex_lock(&ss->lock);
    HASH_FIND_STR(ss->table, id, s);
    if (s)
        session_ref(s);
    pthread_mutex_unlock(&ss->lock);
    return s;
}

/* [prefix "."] + SESSION_ID_LEN hex digits: the prefix lets a proxy find the instance. */
static int session_new_id(const char *prefix, char out[SESSION_ID_MAX + 1])
{
    size_t k = prefix ? (size_t)snprintf(out, SESSION_ID_MAX + 1, "%s.", prefix) : 0;
    return randid_hex(out + k, SESSION_ID_MAX + 1 - k, SESSION_ID_LEN / 2);
}

/* CPU time of the session so far; walk: look for subprocesses too (they may run only during
 * an execution, so an idle session's count needs no walk). */
static uint64_t session_cpu_now(struct session *s, bool walk)
{
    return s->cpu_rule ? session_cpu_used(&s->cpu, walk) : 0;
}

json_t *session_describe(struct session *s, const struct sessions *ss)
{
    int64_t now = clock_mono_us();
    bool busy = s->state == SESSION_RUNNING, stopped = s->state == SESSION_STOPPED;
    uint64_t cpu = busy ? s->cpu_total_ns : session_cpu_now(s, false);
    uint64_t idle_cpu =
        s->cpu_idle_ns + (busy || cpu < s->cpu_total_ns ? 0 : cpu - s->cpu_total_ns);
    char why[160] = "";
    if (stopped)
        snprintf(why, sizeof(why),
                 "what execution %llu left running used the CPU budget of %llu ms; it is "
                 "stopped until the next execution",
                 (unsigned long long)s->stopped_after, (unsigned long long)ss->opt.cpu_budget_ms);
    json_t *d = json_pack(
        "{s:s, s:s, s:s?, s:O, s:f, s:f, s:I, s:I, s:b, s:b, s:I, s:s, s:f, s:f, "
        "s:f, s:I, s:b, s:s?}",
        "sessionId", s->id, "workspace", workspace_key_name(s->workspace), "tenant",
        tenant_name(s->tenant), "servers", s->servers, "ageS", (double)(now - s->created_us) / 1e6,
        "idleS", (double)(now - s->last_used_us) / 1e6, "idleTimeoutS",
        (json_int_t)(s->idle_us / 1000000), "executions", (json_int_t)s->executions, "busy", busy,
        "alive", session_listed(s->state), "memoryMb", (json_int_t)s->memory_mb, "profile",
        s->profile, "cpuMs", (double)cpu / 1e6, "idleCpuMs", (double)idle_cpu / 1e6, "hostCpuMs",
        (double)atomic_load(&s->host_cpu_ns) / 1e6, "cpuBudgetMs",
        (json_int_t)ss->opt.cpu_budget_ms, "stopped", stopped, "stoppedReason",
        stopped ? why : NULL);
    if (d && s->network &&
        json_object_set_new(d, "network", json_pack("{s:O}", "allow", s->network)) < 0) {
        json_decref(d); /* not a session shown without the network it has */
        return NULL;
    }
    return d;
}

/* A session with a network policy: a cell whose listener the proxy takes over (a warm one of
 * pool, the network pool of its profile or the server's; a fresh one without), and the init
 * job learns where the proxy is. */
static int session_egress_cell(struct sessions *ss, struct session *s,
                               const struct egress_policy *pol, const struct jail_limits *lim,
                               struct pool *pool, json_t *job, struct cell **ret_cell,
                               bool *ret_hit)
{
    int listener = -1;
    int r = pool ? pool_acquire(pool, lim, clock_mono_us() + SESSION_READY_TIMEOUT_US, ret_cell,
                                ret_hit)
                 : cell_spawn_cold_egress(ss->jail, lim, ss->opt.max_frame, EGRESS_SANDBOX_PORT,
                                          ret_cell, &listener);
    if (r < 0)
        return r;
    if (listener < 0)
        listener = TAKE_FD((*ret_cell)->egress_fd);
    char label[SESSION_ID_MAX + 16];
    snprintf(label, sizeof(label), "session %s", s->id);
    const struct egress_owner who = {
        .label = label, .share = tenant_egress_share(s->tenant), .session = true};
    if ((r = egress_tap_new(ss->opt.egress, pol, listener, &who, &s->tap)) < 0) {
        cell_free(*ret_cell);
        *ret_cell = NULL;
        return r;
    }
    json_object_set_new(job, "network",
                        egress_proxy_job(ss->jail->ca_bundle ? JAIL_CA_BUNDLE : NULL));
    return 0;
}

static void session_all_add(struct sessions *ss, struct session *s)
{
    s->all_next = ss->all;
    if (ss->all)
        ss->all->all_prev = s;
    ss->all = s;
    ss->allocated++;
}

/* Open s's workspace (made when new) into s->wsh: 0, or -errno and *err (a tenant at its
 * maxWorkspaces is QUOTA_EXCEEDED; a store that cannot be reached stays STORE_UNAVAILABLE, 503,
 * retry later). */
static int session_open_workspace(struct sessions *ss, struct session *s,
                                  const struct session_create *c, const char *workspace,
                                  struct sbx_error *err)
{
    struct store_share share = workspace_share_of(c->tenant);
    _cleanup_sbx_error_ struct sbx_error werr = {0};
    int r = workspace_open(ss->ws, s->workspace, &share, true, &s->wsh, &werr);
    if (r == -EDQUOT)
        sbx_error_set(err, SBX_ERR_TOO_LARGE, "QUOTA_EXCEEDED", "workspace",
                      "workspace %s: tenant '%s' has %zu workspaces, its maxWorkspaces; use one "
                      "of them",
                      workspace, tenant_name(c->tenant), workspace_max_workspaces(ss->ws, &share));
    else if (r < 0 && werr.kind == SBX_ERR_UNAVAILABLE)
        sbx_error_set(err, SBX_ERR_UNAVAILABLE, STORE_UNAVAILABLE, "workspace",
                      "workspace %s is unavailable: %s", workspace,
                      werr.message ? werr.message : strerror(-r));
    else if (r < 0)
        sbx_error_set(err, SBX_ERR_INTERNAL, "INTERNAL", "workspace",
                      "workspace %s is unavailable: %s", workspace,
                      werr.message ? werr.message : strerror(-r));
    return r;
}

/* What sessions_create() made of a request once it is checked, before anything is reserved. */
struct session_plan {
    const char *workspace;
    json_t *names; /* the servers (owned) */
    int64_t idle_s;
    struct pool *pool;
    struct pool *network_pool; /* with pol: the profile's or the server's; NULL: a fresh cell */
    bool named;                /* a profile of its own */
    uint64_t memory_mb;
    struct egress_policy *pol; /* owned; NULL: no network */
};

static void session_plan_done(struct session_plan *p)
{
    json_decref(p->names);
    egress_policy_free(p->pol);
    *p = (struct session_plan){0};
}

/* Check the request c: 0 with *p, or -EINVAL with *err. */
static int session_plan(struct sessions *ss, const struct session_create *c, struct session_plan *p,
                        struct sbx_error *err)
{
    *p = (struct session_plan){.workspace = c->workspace ? c->workspace : SESSION_WORKSPACE_DEFAULT,
                               .pool = ss->pool};
    const char *why = workspace_check_name(p->workspace);
    if (why) {
        sbx_error_set(err, SBX_ERR_INVALID, "INVALID_REQUEST", "workspace", "workspace: %s", why);
        return -EINVAL;
    }
    p->names = c->servers ? json_incref(c->servers) : json_array();
    if (!json_is_array(p->names)) {
        session_plan_done(p);
        sbx_error_set(err, SBX_ERR_INVALID, "INVALID_REQUEST", "servers",
                      "servers: must be an array of names");
        return -EINVAL;
    }
    char *unknown = mcp_registry_check_names(ss->mcp, p->names);
    if (unknown) {
        sbx_error_set(err, SBX_ERR_INVALID, "INVALID_REQUEST", "servers", "%s", unknown);
        free(unknown);
        session_plan_done(p);
        return -EINVAL;
    }
    p->idle_s = c->idle_timeout_s > 0 ? c->idle_timeout_s : ss->opt.default_idle_s;
    if (p->idle_s > ss->opt.max_idle_s)
        p->idle_s = ss->opt.max_idle_s;
    uint64_t profile_mb = 0;
    p->named = c->profile && strcmp(c->profile, "default") != 0;
    if (p->named && profiles_lookup(ss->opt.profiles, c->profile, &p->pool, &profile_mb) < 0) {
        session_plan_done(p);
        sbx_error_set(err, SBX_ERR_INVALID, "INVALID_REQUEST", "profile",
                      "profile: no such profile '%.64s' (GET /healthz lists them)", c->profile);
        return -EINVAL;
    }
    p->network_pool =
        p->named ? profiles_network_pool(ss->opt.profiles, c->profile) : ss->opt.network_pool;
    p->memory_mb = c->memory_mb > 0 ? (uint64_t)c->memory_mb
                   : profile_mb     ? profile_mb
                                    : ss->opt.default_memory_mb;
    if (p->memory_mb > ss->opt.max_memory_mb)
        p->memory_mb = ss->opt.max_memory_mb;
    if (c->network &&
        egress_network_parse(ss->opt.egress ? egress_proxy_config(ss->opt.egress) : NULL,
                             c->network, "network", &p->pol, err) < 0) {
        session_plan_done(p);
        return -EINVAL;
    }
    return 0;
}

/* Reserve a live session's slot, and one of the tenant's: 0, or <0 with *err. */
static int session_reserve(struct sessions *ss, struct tenant *tenant, struct sbx_error *err)
{
    pthread_mutex_lock(&ss->lock);
    bool stopping = ss->stopping, full = ss->live >= ss->opt.max_sessions;
    if (!stopping && !full)
        ss->live++; /* reserve the slot while the interpreter starts */
    pthread_mutex_unlock(&ss->lock);
    if (stopping || full) {
        if (stopping)
            session_shut_err(err);
        else
            sbx_error_set(err, SBX_ERR_UNAVAILABLE, "TOO_MANY_SESSIONS", NULL,
                          "%u sessions are live, the maximum; delete one or retry later",
                          ss->opt.max_sessions);
        return stopping ? -ESHUTDOWN : -EBUSY;
    }
    if (!tenant_session_claim(tenant)) {
        pthread_mutex_lock(&ss->lock);
        ss->live--;
        pthread_mutex_unlock(&ss->lock);
        sbx_error_set(
            err, SBX_ERR_LIMIT, "TENANT_LIMIT", NULL,
            "tenant '%s' has %u live sessions, its maxSessions; delete one or retry later",
            tenant_name(tenant), tenant_max_sessions(tenant));
        return -EBUSY;
    }
    return 0;
}

/* A new session of the plan p (taking its servers), counted among every session; NULL when out
 * of memory. */
static struct session *session_alloc(struct sessions *ss, const struct session_create *c,
                                     struct session_plan *p)
{
    struct session *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->owner = ss;
    s->tenant = c->tenant;
    s->servers = TAKE_PTR(p->names);
    s->memory_mb = p->memory_mb;
    snprintf(s->profile, sizeof(s->profile), "%s", p->named ? c->profile : "default");
    s->wake_fd = -1;
    atomic_init(&s->refs, 1);
    atomic_init(&s->mcp_calls, 0);
    atomic_init(&s->host_cpu_ns, 0);
    atomic_init(&s->host_cpu_cap, 0); /* no workspace call outside an execution */
    pthread_mutex_init(&s->exec_lock, NULL);
    pthread_mutex_init(&s->servers_lock, NULL);
    session_approvals_init(s);
    pthread_mutex_lock(&ss->lock);
    s->serial = ++ss->next_serial;
    session_all_add(ss, s);
    pthread_mutex_unlock(&ss->lock);
    return s;
}

/* Its bridge, id and workspace, and the init job its interpreter starts with (*ret_job): 0, or
 * <0 with *err. */
static int session_prepare(struct sessions *ss, struct session *s, const struct session_create *c,
                           const struct session_plan *p, json_t **ret_job, struct sbx_error *err)
{
    int r;
    if ((r = session_bridge_init(s)) < 0 ||
        !(s->workspace = workspace_key(tenant_name(c->tenant), p->workspace))) {
        sbx_error_set(err, SBX_ERR_INTERNAL, "INTERNAL", NULL, "out of resources");
        return r < 0 ? r : -ENOMEM;
    }
    if ((r = session_new_id(ss->opt.id_prefix, s->id)) < 0) {
        sbx_error_set(err, SBX_ERR_INTERNAL, "INTERNAL", NULL, "cannot draw a random session id");
        return r;
    }
    if ((r = session_open_workspace(ss, s, c, p->workspace, err)) < 0)
        return r;
    json_t *job = session_init_job(ss, s->servers, s->wsh, err);
    if (!job)
        return -EIO;
    *ret_job = job;
    if (json_object_set_new(job, "limits",
                            json_pack("{s:I, s:I, s:{s:I, s:I}}", "memoryBytes",
                                      (json_int_t)(p->memory_mb << 20), "outputBytes",
                                      (json_int_t)ss->opt.output_limit, "artifacts", "count",
                                      (json_int_t)ss->opt.artifacts.max_count, "bytes",
                                      (json_int_t)ss->opt.artifacts.max_bytes)) < 0) {
        sbx_error_set(err, SBX_ERR_INTERNAL, "INTERNAL", NULL, "out of memory");
        return -ENOMEM; /* a session without its limits must not start */
    }
    if (c->compat)
        json_object_set_new(job, "compat", json_string(c->compat));
    if (c->agent) { /* the runtime mode it serves instead of a Python session */
        s->agent = c->agent;
        json_object_set_new(job, "type", json_string(c->agent));
        if (json_is_object(c->agent_init))
            json_object_update(job, c->agent_init);
    }
    return 0;
}

/* Its interpreter: a cell (warm from the pool, or cold with the network), which runs the init
 * job until it says it is ready (*o, *ret_hit: from the pool). 0, or <0 with *err. */
static int session_boot(struct sessions *ss, struct session *s, const struct session_plan *p,
                        json_t *job, struct exec_outcome *o, bool *ret_hit, struct sbx_error *err)
{
    struct jail_limits lim = jail_limits_default(ss->jail);
    lim.memory = p->memory_mb << 20;
    lim.nproc = ss->opt.nproc;
    struct cell *cell = NULL;
    int64_t deadline = clock_mono_us() + SESSION_READY_TIMEOUT_US;
    int r;
    if (p->pol && !(s->network = egress_policy_json(p->pol)))
        r = -ENOMEM;
    else if (p->pol)
        r = session_egress_cell(ss, s, p->pol, &lim, p->network_pool, job, &cell, ret_hit);
    else
        r = p->pool ? pool_acquire(p->pool, &lim, deadline, &cell, ret_hit)
                    : cell_spawn_cold(ss->jail, &lim, ss->opt.max_frame, &cell);
    if (r < 0) {
        metrics_isolation_failure(ss->metrics);
        sbx_error_set(err, SBX_ERR_INTERNAL, "INTERNAL", NULL, "no sandbox could be started: %s",
                      strerror(-r));
        return r;
    }
    pthread_mutex_lock(&ss->lock);
    s->cell = cell; /* from now on shutdown can kill it */
    bool stopping = ss->stopping;
    pthread_mutex_unlock(&ss->lock);
    if (stopping) {
        session_shut_err(err);
        return -ESHUTDOWN;
    }
    /* Where its working directory is on the host (while it lives), for the file:// URLs of
     * the files it saves (runtime/sandboxd_runtime/helpers.py): a link that names no host
     * PID (links.h). */
    char *host_workdir = NULL;
    if (ss->links && session_links_add(ss->links, cell->pid, s->link, &host_workdir) == 0)
        json_object_set_new(job, "hostWorkdir", json_string(host_workdir));
    else if (ss->links)
        log_warn("session %s: no host path for its working directory", s->id);
    free(host_workdir);
    struct exec_request req = {
        .job = job,
        .timeout_us = SESSION_READY_TIMEOUT_US,
        .output_limit = ss->opt.output_limit,
        .keep_alive = true,
        .no_accounting = true, /* the session's executions are billed, not its set-up */
        .final_type = "session_ready",
    };
    r = exec_run(s->cell, &req, o);
    if (r < 0 || !o->final || !o->cell_alive ||
        strcmp(json_string_value(json_object_get(o->final, "type")) ?: "", "session_ready") != 0) {
        const char *m = json_string_value(json_object_get(o->final, "message"));
        sbx_error_set(err, SBX_ERR_INTERNAL, "INTERNAL", NULL,
                      "the session interpreter did not start: %s",
                      m ? m : (o->internal ? o->internal : verdict_status_name(o->verdict.status)));
        return r < 0 ? r : -EIO;
    }
    return 0;
}

/* The started session s in the table, its CPU budget armed: *ret_info, its description. 0, or
 * -ESHUTDOWN with *err when shutdown began while it started. */
static int session_publish(struct sessions *ss, struct session *s, const struct session_plan *p,
                           const struct exec_outcome *o, bool hit, json_t **ret_info,
                           struct sbx_error *err)
{
    /* An agent's work lives between requests by design: no CPU rule (see session.h). */
    int r = s->agent ? -EOPNOTSUPP
                     : session_cpu_init(&s->cpu, ss->cpuw, s->cell->pid, s->cell->pidfd, s->serial,
                                        ss->opt.nproc);
    if (r < 0 && !s->agent)
        log_errno(LOG_WARN, r, "session %s: the CPU budget between executions cannot be enforced",
                  s->id);
    s->cpu_rule = r == 0;
    if (s->cpu_rule)
        session_cpu_quiesce(&s->cpu);
    uint64_t cpu = session_cpu_now(s, false);
    int64_t now = clock_mono_us();
    s->created_us = s->last_used_us = now;
    s->idle_us = p->idle_s * 1000000;
    pthread_mutex_lock(&ss->lock);
    if (ss->stopping) { /* began while the interpreter started */
        pthread_mutex_unlock(&ss->lock);
        session_shut_err(err);
        return -ESHUTDOWN;
    }
    s->cpu_total_ns = cpu;
    if (s->cpu_rule)
        session_cpu_arm(&s->cpu, ss->opt.cpu_budget_ms * 1000000);
    HASH_ADD_STR(ss->table, id, s);
    session_set_state(s, s->cpu_rule ? SESSION_ARMED : SESSION_IDLE);
    ss->created++;
    json_t *info = session_describe(s, ss);
    pthread_mutex_unlock(&ss->lock);
    json_object_set(info, "toolsLoaded", json_object_get(o->final, "toolsLoaded"));
    json_object_set(info, "toolsFailed", json_object_get(o->final, "toolsFailed"));
    json_object_set_new(info, "startMs", json_real((double)o->verdict.wall_us / 1000.0));
    json_object_set_new(info, "poolHit", json_boolean(hit));
    log_pack(LOG_INFO, "session created", "{s:s, s:s, s:O?, s:O?}", "sessionId", s->id, "workspace",
             s->workspace, "servers", s->servers, "toolsFailed",
             json_object_get(info, "toolsFailed"));
    *ret_info = info;
    return 0;
}

int sessions_create(struct sessions *ss, const struct session_create *c, json_t **ret_info,
                    struct sbx_error *err)
{
    *err = (struct sbx_error){0};
    struct session_plan p;
    int r = session_plan(ss, c, &p, err);
    if (r < 0)
        return r;
    if ((r = session_reserve(ss, c->tenant, err)) < 0) {
        session_plan_done(&p);
        return r;
    }
    json_t *job = NULL;
    struct exec_outcome o = {0};
    bool hit = false;
    struct session *s = session_alloc(ss, c, &p);
    if (!s) {
        sbx_error_set(err, SBX_ERR_INTERNAL, "INTERNAL", NULL, "out of memory");
        r = -ENOMEM;
    } else if ((r = session_prepare(ss, s, c, &p, &job, err)) == 0 &&
               (r = session_boot(ss, s, &p, job, &o, &hit, err)) == 0) {
        r = session_publish(ss, s, &p, &o, hit, ret_info, err);
    }
    exec_outcome_done(&o);
    json_decref(job);
    session_plan_done(&p);
    if (r == 0)
        return 0;
    pthread_mutex_lock(&ss->lock);
    ss->live--;
    if (s)
        session_set_state(s, SESSION_ENDED); /* never listed */
    pthread_mutex_unlock(&ss->lock);
    tenant_session_release(c->tenant);
    session_unref(s);
    return r < 0 ? r : -EIO;
}

/* ---- executions --------------------------------------------------------------------------- */

static const char *session_status(const struct exec_outcome *o, bool *ret_alive)
{
    const struct verdict *v = &o->verdict;
    *ret_alive = o->cell_alive;
    switch (v->status) {
    case VERDICT_OK: {
        /* Static strings only: the frame is freed before the caller is done with this. */
        const char *st = json_string_value(json_object_get(o->final, "status"));
        return st && strcmp(st, "ok") == 0 ? "ok" : "error";
    }
    case VERDICT_TIMEOUT:
        return "timeout";
    case VERDICT_MEMORY_LIMIT:
        return "memory_limit";
    case VERDICT_OUTPUT_LIMIT:
        return "output_limit";
    case VERDICT_KILLED:
        return "killed";
    case VERDICT_EXITED:
        return "exited";
    default:
        return "error";
    }
}

static json_t *session_synth_error(const char *status, const struct exec_outcome *o,
                                   int64_t timeout_ms, bool alive, const char *ended)
{
    char msg[320];
    if (strcmp(status, "timeout") == 0)
        snprintf(msg, sizeof(msg), "the execution exceeded its time limit of %lld ms%s",
                 (long long)timeout_ms,
                 alive ? "; it was interrupted and the session is intact"
                       : " and did not stop when interrupted; the session was ended");
    else if (ended && *ended)
        snprintf(msg, sizeof(msg), "the session was ended while the execution ran: %s", ended);
    else if (strcmp(status, "memory_limit") == 0)
        snprintf(msg, sizeof(msg), "the session ran out of memory");
    else if (strcmp(status, "output_limit") == 0)
        snprintf(msg, sizeof(msg),
                 "stdout and stderr exceeded the output limit; the session "
                 "was ended");
    else if (strcmp(status, "killed") == 0)
        snprintf(msg, sizeof(msg), "the session interpreter was killed by signal %d",
                 o->verdict.signal);
    else if (strcmp(status, "exited") == 0)
        snprintf(msg, sizeof(msg), "the session interpreter exited with code %d",
                 o->verdict.exit_code);
    else
        snprintf(msg, sizeof(msg), "%s", o->internal ? o->internal : "the execution failed");
    static const char *const types[][2] = {
        {"timeout", "TimeoutError"},
        {"memory_limit", "MemoryError"},
        {"output_limit", "OutputLimitError"},
        {"killed", "Killed"},
        {"exited", "SystemExit"},
    };
    const char *type = "SandboxError";
    for (size_t i = 0; i < ARRAY_SIZE(types); i++)
        if (strcmp(types[i][0], status) == 0)
            type = types[i][1];
    return json_pack("{s:s, s:s, s:s}", "type", type, "message", msg, "traceback", "");
}

static void session_on_output(void *userdata, int stream, const char *data, size_t len)
{
    const struct session_stream *st = ((struct session_exec *)userdata)->stream;
    if (st && st->on_output)
        st->on_output(st->userdata, stream, data, len);
}

static void session_on_artifact(void *userdata, json_t *artifact)
{
    const struct session_stream *st = ((struct session_exec *)userdata)->stream;
    if (st && st->on_artifact)
        st->on_artifact(st->userdata, artifact);
}

static const char *session_metric_label(const char *status)
{
    static const char *const known[] = {"ok", "timeout", "memory_limit", "output_limit", "killed"};
    for (size_t i = 0; i < ARRAY_SIZE(known); i++)
        if (strcmp(status, known[i]) == 0)
            return known[i];
    return "error";
}

const char *sessions_code_check(const char *code, size_t len)
{
    _Static_assert(EXEC_MAX_CODE == 1u << 20, "the message names the limit");
    if (len > EXEC_MAX_CODE || strlen(code) != len)
        return "code: at most 1 MiB, without NUL bytes";
    if (utf8_blank(code))
        return "code: empty or only whitespace; nothing was run";
    return NULL;
}

/* An execution in a session, from its start to its end. */
struct session_run {
    struct session *s;
    uint64_t n;                                            /* its number in the session */
    char ended[sizeof(((struct session *)0)->end_reason)]; /* why it ended, when it did */
    uint64_t cpu_before, cpu_after;                        /* the session's CPU time around it */
    uint64_t host_before;
    unsigned calls_before;
    struct egress_stats net;
    int64_t start;
};

/* The session id for an execution, RUNNING from now on (exec_lock held, a reference and a run
 * of its tenant taken): 0, or <0 with *err. */
static int session_run_begin(struct sessions *ss, const char *id, struct session_run *x,
                             struct sbx_error *err)
{
    struct session *s = sessions_lookup(ss, id);
    if (!s) {
        pthread_mutex_lock(&ss->lock);
        bool down = ss->stopping;
        const char *why = sessions_why_ended(ss, id);
        if (down)
            session_shut_err(err);
        else if (why)
            sbx_error_set(err, SBX_ERR_NOT_FOUND, "NOT_FOUND", NULL, "session %s has ended: %s", id,
                          why);
        else
            sbx_error_set(err, SBX_ERR_NOT_FOUND, "NOT_FOUND", NULL,
                          "no session %s (it may have ended or been reaped)", id);
        pthread_mutex_unlock(&ss->lock);
        return down ? -ESHUTDOWN : -ENOENT;
    }
    if (s->agent) {
        sbx_error_set(err, SBX_ERR_INVALID, "AGENT_SESSION", NULL,
                      "session %s serves the %s protocol (docs/E2B.md); it runs no /execute", id,
                      s->agent);
        session_unref(s);
        return -EINVAL;
    }
    pthread_mutex_lock(&s->exec_lock);
    if (!tenant_run_begin(s->tenant, "session")) {
        pthread_mutex_unlock(&s->exec_lock);
        sbx_error_set(err, SBX_ERR_LIMIT, "TENANT_LIMIT", NULL,
                      "tenant '%s' runs %u executions, its maxRunning; retry later",
                      tenant_name(s->tenant), tenant_max_running(s->tenant));
        session_unref(s);
        return -EBUSY;
    }
    pthread_mutex_lock(&ss->lock);
    /* Found in the table, perhaps unlisted since; not RUNNING: exec_lock is held. */
    assert_session_state(s, SESSION_IDLE, SESSION_ARMED, SESSION_STOPPED, SESSION_ENDED);
    bool alive = s->state != SESSION_ENDED;
    bool down = ss->stopping;
    memcpy(x->ended, s->end_reason, sizeof(x->ended));
    x->n = alive ? ++s->executions : 0;
    /* Stopped by its budget, or at once with a budget of 0. */
    bool stopped = s->state == SESSION_STOPPED || ss->opt.cpu_budget_ms == 0;
    if (alive)
        session_set_state(s, SESSION_RUNNING);
    pthread_mutex_unlock(&ss->lock);
    if (!alive) {
        tenant_run_end(s->tenant);
        pthread_mutex_unlock(&s->exec_lock);
        session_unref(s);
        if (down)
            session_shut_err(err);
        else
            sbx_error_set(err, SBX_ERR_NOT_FOUND, "NOT_FOUND", NULL, "session %s has ended%s%s", id,
                          x->ended[0] ? ": " : "", x->ended);
        return down ? -ESHUTDOWN : -ENOENT;
    }
    x->s = s;
    if (s->cpu_rule)
        session_cpu_resume(&s->cpu, stopped);
    x->cpu_before = session_cpu_now(s, false);
    pthread_mutex_lock(&ss->lock);
    if (x->cpu_before > s->cpu_total_ns)
        s->cpu_idle_ns += x->cpu_before - s->cpu_total_ns;
    pthread_mutex_unlock(&ss->lock);
    x->calls_before = atomic_load(&s->mcp_calls);
    if (s->tap) {
        /* What the session's code did between executions is counted, not attributed. */
        egress_tap_take(s->tap, &x->net);
        metrics_egress(ss->metrics, &x->net);
    }
    x->host_before = atomic_load(&s->host_cpu_ns);
    atomic_store(&s->host_cpu_cap, x->host_before + ss->opt.host_cpu_ms * 1000000);
    return 0;
}

/* Send the code and run it to its end (*o); the session's status word of it. */
static const char *session_run_code(struct sessions *ss, struct session_run *x, const char *code,
                                    int64_t timeout_ms, const struct session_stream *stream,
                                    struct exec_outcome *o, bool *ret_survived)
{
    struct session *s = x->s;
    json_t *job =
        json_pack("{s:s, s:I, s:s}", "type", "execute", "id", (json_int_t)x->n, "code", code);
    int r = job ? session_send(s, job) : -ENOMEM;
    json_decref(job);
    struct session_exec sx = {.s = s, .stream = stream};
    struct exec_hooks hooks = {
        .userdata = &sx,
        .on_message = session_on_message,
        .on_output = session_on_output,
        .on_artifact = session_on_artifact,
        .pending = session_pending,
        .flush = session_flush,
        .wake_fd = s->wake_fd,
        .held = session_held_us,
    };
    struct exec_request req = {
        .job = NULL,
        .timeout_us = timeout_ms * 1000,
        .output_limit = ss->opt.output_limit,
        .keep_alive = true,
        .interrupt_grace_us = ss->opt.interrupt_grace_ms * 1000,
        .final_type = "execution_done",
        .final_id = (int64_t)x->n,
        .hooks = &hooks,
        .artifacts = ss->opt.artifacts,
    };
    x->start = clock_mono_us();
    session_approvals_begin(s, stream);
    if (r == 0)
        r = exec_run(s->cell, &req, o);
    else
        o->verdict.status = VERDICT_EXITED; /* could not even send: the interpreter is gone */
    session_approvals_end(s);               /* what still waits is refused: its execution is over */
    const char *status = session_status(o, ret_survived);
    if (*ret_survived && s->cpu_rule)
        session_cpu_quiesce(&s->cpu); /* first: its subprocesses stop, then are counted */
    x->cpu_after = *ret_survived ? session_cpu_now(s, true) : x->cpu_before;
    if (s->cpu_rule && *ret_survived)
        o->verdict.cpu_us =
            (x->cpu_after > x->cpu_before ? x->cpu_after - x->cpu_before : 0) / 1000;
    pthread_mutex_lock(&ss->lock);
    memcpy(x->ended, s->end_reason, sizeof(x->ended));
    pthread_mutex_unlock(&ss->lock);
    return status;
}

/* The result of the execution (new reference), NULL when out of memory. */
static json_t *session_run_result(struct sessions *ss, struct session_run *x, const char *status,
                                  struct exec_outcome *o, int64_t timeout_ms, bool survived)
{
    struct session *s = x->s;
    json_t *error = json_object_get(o->final, "error");
    bool answered = strcmp(status, "ok") == 0 || (strcmp(status, "error") == 0 && o->final);
    if (json_is_object(error)) {
        json_incref(error); /* the runtime's own description, at most the output limit each */
        if (response_cap_strings(error, ss->opt.output_limit))
            json_object_set_new(error, "truncated", json_true());
    } else {
        error = answered ? NULL : session_synth_error(status, o, timeout_ms, survived, x->ended);
    }
    json_t *res = json_object_get(o->final, "result");
    (void)response_cap_strings(res, ss->opt.output_limit);
    json_t *result =
        json_pack("{s:I, s:s, s:o, s:o, s:o, s:O?, s:f, s:b, s:b, s:I, s:o, s:f}", "executionId",
                  (json_int_t)x->n, "status", status, "stdout", response_text(&o->out), "stderr",
                  response_text(&o->err), "error", error ? error : json_null(), "result",
                  json_is_string(res) ? res : NULL, "durationMs",
                  (double)(clock_mono_us() - x->start) / 1000.0, "sessionAlive", survived,
                  "truncated", o->verdict.stdout_truncated || o->verdict.stderr_truncated,
                  "mcpCalls", (json_int_t)(atomic_load(&s->mcp_calls) - x->calls_before), "verdict",
                  verdict_to_json(&o->verdict), "sessionCpuMs", (double)x->cpu_after / 1e6);
    if (result)
        json_object_set_new(
            result, "hostCpuMs",
            json_real((double)(atomic_load(&s->host_cpu_ns) - x->host_before) / 1e6));
    if (result && artifact_set_report(&o->artifacts, &ss->opt.artifacts, result, true) < 0) {
        json_decref(result); /* answered INTERNAL below, rather than without the report */
        result = NULL;
    }
    if (s->tap && result) {
        egress_tap_take(s->tap, &x->net);
        metrics_egress(ss->metrics, &x->net);
        json_t *metrics = json_array();
        int mr = response_egress_metrics(metrics, &x->net);
        if (mr < 0)
            json_decref(metrics);
        if (mr < 0 || json_object_set_new(result, "metrics", metrics) < 0) {
            json_decref(result);
            result = NULL;
        }
    }
    return result;
}

/* The execution is over: the session idle again (or stopped, or ended with it), exec_lock and
 * the tenant's run let go, the reference dropped. True when sessions_shutdown() ended it while
 * it ran. */
static bool session_run_end(struct sessions *ss, struct session_run *x, const char *status,
                            bool survived)
{
    struct session *s = x->s;
    pthread_mutex_lock(&ss->lock);
    /* ENDED: it was unlisted while the execution ran (deleted, reaped, shut down). */
    assert_session_state(s, SESSION_RUNNING, SESSION_ENDED);
    bool listed = s->state == SESSION_RUNNING;
    s->last_used_us = clock_mono_us();
    s->cpu_total_ns = x->cpu_after;
    if (survived && s->cpu_rule)
        session_cpu_arm(&s->cpu, ss->opt.cpu_budget_ms * 1000000);
    if (listed && survived) {
        enum session_state idle = !s->cpu_rule                 ? SESSION_IDLE
                                  : ss->opt.cpu_budget_ms == 0 ? SESSION_STOPPED
                                                               : SESSION_ARMED;
        session_set_state(s, idle);
        if (idle == SESSION_STOPPED)
            s->stopped_after = x->n;
    }
    bool drop = !survived && listed;
    if (drop) {
        char why[96];
        snprintf(why, sizeof(why), "execution %llu ended it (%s)", (unsigned long long)x->n,
                 status);
        session_unlist(ss, s, why);
    }
    /* Ended by sessions_shutdown() while it ran: the caller hears why, not "killed". */
    bool shut = !survived && !drop && strcmp(x->ended, SESSION_SHUTDOWN_REASON) == 0;
    pthread_mutex_unlock(&ss->lock);
    pthread_mutex_unlock(&s->exec_lock);
    tenant_run_end(s->tenant);
    metrics_request(ss->metrics, "session", session_metric_label(status),
                    clock_mono_us() - x->start);
    if (drop) {
        log_info("session %s ended: %s", s->id, status);
        session_end(s); /* the table's reference */
    }
    session_unref(s);
    return shut;
}

int sessions_execute(struct sessions *ss, const char *id, const char *code, int64_t timeout_ms,
                     const struct session_stream *stream, json_t **ret_result,
                     struct sbx_error *err)
{
    *err = (struct sbx_error){0};
    struct session_run x = {0};
    int r = session_run_begin(ss, id, &x, err);
    if (r < 0)
        return r;
    if (timeout_ms <= 0)
        timeout_ms = ss->opt.default_timeout_ms;
    if (timeout_ms > ss->opt.max_timeout_ms)
        timeout_ms = ss->opt.max_timeout_ms;
    struct exec_outcome o = {0};
    bool survived;
    const char *status = session_run_code(ss, &x, code, timeout_ms, stream, &o, &survived);
    json_t *result = session_run_result(ss, &x, status, &o, timeout_ms, survived);
    exec_outcome_done(&o);
    if (session_run_end(ss, &x, status, survived)) {
        json_decref(result);
        session_shut_err(err);
        return -ESHUTDOWN;
    }
    if (!result) {
        sbx_error_set(err, SBX_ERR_INTERNAL, "INTERNAL", NULL, "out of memory");
        return -ENOMEM;
    }
    *ret_result = result;
    return 0;
}

int sessions_interrupt(struct sessions *ss, const char *id)
{
    pthread_mutex_lock(&ss->lock);
    struct session *s = NULL;
    HASH_FIND_STR(ss->table, id, s);
    /* Signalled under the lock: the table's reference keeps the cell alive, and RUNNING
     * cannot end (the execution end) without the lock. */
    int r = !s ? -ENOENT : s->agent || s->state != SESSION_RUNNING || !s->cell ? -EALREADY : 0;
    if (r == 0 && syscall(SYS_pidfd_send_signal, s->cell->pidfd, SIGINT, NULL, 0) < 0)
        r = -errno;
    pthread_mutex_unlock(&ss->lock);
    if (r == 0)
        log_info("session %s: execution interrupted on request", id);
    return r;
}

/* ---- the working directory, for session/files.c ------------------------------------------- */

int sessions_workdir(struct sessions *ss, const char *id, int *ret_fd, uid_t *ret_uid,
                     gid_t *ret_gid)
{
    struct session *s = sessions_lookup(ss, id);
    if (!s)
        return -ENOENT;
    pthread_mutex_lock(&ss->lock);
    bool alive = session_listed(s->state) && s->cell && s->cell->pidfd >= 0;
    pid_t pid = alive ? s->cell->pid : -1;
    int pidfd = alive ? fcntl(s->cell->pidfd, F_DUPFD_CLOEXEC, 0) : -1;
    pthread_mutex_unlock(&ss->lock);
    session_unref(s);
    if (!alive || pidfd < 0)
        return -ENOENT;
    int r = session_files_open_root(pid, pidfd, ret_fd);
    close(pidfd);
    if (r < 0)
        return r;
    *ret_uid = ss->jail->host_uid;
    *ret_gid = ss->jail->host_gid;
    return 0;
}
