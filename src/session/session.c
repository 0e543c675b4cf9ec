// SPDX-License-Identifier: MIT
/*
 * session — see session.h: one session's life (create; executions are execute.c). The
 * shared structures are in session_int.h, the table of sessions and shutdown in table.c.
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

void session_shut_err(struct sbx_error *e)
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

uint64_t session_cpu_now(struct session *s, bool walk)
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
