// SPDX-License-Identifier: MIT
/*
 * session — see session.h.
 *
 * Threads: the caller's thread runs an execution (exec_run reads the
 * interpreter's frames and output); MCP calls requested by the code run on
 * short-lived worker threads, so that asyncio.gather() of several calls
 * really runs them at once; the reaper thread ends idle sessions. Frames to
 * the interpreter are written under the session's write lock, because late
 * RPC answers of a previous execution may still be on their way.
 */
#include "session/session.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <uthash.h>

#include "app/defs.h"
#include "app/metrics.h"
#include "app/response.h"
#include "app/tenant.h"
#include "exec/cell.h"
#include "exec/run.h"
#include "mcp/alias.h"
#include "mcp/registry.h"
#include "pool/pool.h"
#include "proto/frame.h"
#include "session/workspace.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/fmt.h"
#include "util/randid.h"

#define SESSION_ID_LEN           32 /* hex digits, after the instance prefix */
#define SESSION_ID_MAX           64 /* "ID." (instance.h: at most 31 + 1) + SESSION_ID_LEN */
#define SESSION_READY_TIMEOUT_US (30 * 1000000)

struct session {
    char id[SESSION_ID_MAX + 1];
    struct sessions *owner;
    struct tenant *tenant; /* NULL: the operator's */
    char *workspace;       /* the store's key: "name", or "tenant/name" */
    json_t *servers;       /* names */
    struct cell *cell;
    uint64_t memory_mb;
    pthread_mutex_t exec_lock;  /* one execution at a time */
    pthread_mutex_t write_lock; /* frames to the interpreter */
    atomic_int refs;
    atomic_uint mcp_calls;
    /* under owner->lock: */
    int64_t created_us, last_used_us, idle_us;
    uint64_t executions;
    bool busy, alive, listed;
    UT_hash_handle hh;
};

struct sessions {
    struct sessions_options opt;
    const struct jail_config *jail;
    struct pool *pool;
    struct mcp_registry *mcp;
    struct workspace_store *ws;
    struct metrics *metrics;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct session *table;
    unsigned live;
    bool stop;
    bool shutting_down; /* sessions_shutdown(): no new sessions or executions */
    pthread_t reaper;
    uint64_t created, reaped;
};

static void session_err(struct session_error *e, int status, const char *code, const char *field,
                        const char *fmt, ...) _printf_(5, 6);
static void session_err(struct session_error *e, int status, const char *code, const char *field,
                        const char *fmt, ...)
{
    e->status = status;
    e->code = code;
    e->field = field;
    va_list ap;
    va_start(ap, fmt);
    free(e->message);
    e->message = fmt_va(fmt, ap);
    va_end(ap);
}

void session_error_done(struct session_error *e)
{
    free(e->message);
    *e = (struct session_error){0};
}

static void session_shut_err(struct session_error *e)
{
    session_err(e, 503, "SHUTTING_DOWN", NULL,
                "sandboxd is shutting down: the session was ended; retry on a new session");
}

/* ---- reference counting ------------------------------------------------------------------- */

static void session_ref(struct session *s)
{
    atomic_fetch_add(&s->refs, 1);
}

static void session_unref(struct session *s)
{
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    cell_free(s->cell);
    json_decref(s->servers);
    free(s->workspace);
    pthread_mutex_destroy(&s->exec_lock);
    pthread_mutex_destroy(&s->write_lock);
    free(s);
}

/* Remove from the table (lock held); the table's reference is the caller's to drop. */
static void session_unlist(struct sessions *ss, struct session *s)
{
    if (!s->listed)
        return;
    HASH_DEL(ss->table, s);
    s->listed = false;
    s->alive = false;
    ss->live--;
    tenant_session_release(s->tenant);
}

static struct session *sessions_lookup(struct sessions *ss, const char *id)
{
    struct session *s = NULL;
    pthread_mutex_lock(&ss->lock);
    HASH_FIND_STR(ss->table, id, s);
    if (s)
        session_ref(s);
    pthread_mutex_unlock(&ss->lock);
    return s;
}

static int session_send(struct session *s, json_t *msg)
{
    pthread_mutex_lock(&s->write_lock);
    int r = frame_write(s->cell->proto_fd, msg, clock_mono_us() + 10 * 1000000);
    pthread_mutex_unlock(&s->write_lock);
    return r;
}

/* ---- the host side of the RPC bridge ------------------------------------------------------ */

static void session_reply(struct session *s, json_t *id, json_t *payload, const char *error,
                          const char *kind)
{
    json_t *msg = error ? json_pack("{s:s, s:O, s:b, s:s, s:s?}", "type", "rpc_response", "id", id,
                                    "success", 0, "error", error, "errorKind", kind)
                        : json_pack("{s:s, s:O, s:b, s:o}", "type", "rpc_response", "id", id,
                                    "success", 1, "payload", payload ? payload : json_null());
    if (!msg)
        return;
    int r = session_send(s, msg);
    if (r < 0 && r != -EPIPE)
        log_errno(LOG_DEBUG, r, "session %s: cannot answer an RPC", s->id);
    json_decref(msg);
}

static bool session_has_server(struct session *s, const char *name)
{
    size_t i;
    json_t *v;
    json_array_foreach(s->servers, i, v)
    {
        if (strcmp(json_string_value(v), name) == 0)
            return true;
    }
    return false;
}

struct session_rpc {
    struct session *s;
    json_t *id;
    json_t *payload;
};

static void *session_rpc_thread(void *arg)
{
    struct session_rpc *job = arg;
    struct session *s = job->s;
    struct sessions *ss = s->owner;
    const char *type = json_string_value(json_object_get(job->payload, "type"));
    const char *server = json_string_value(json_object_get(job->payload, "server"));
    json_t *result = NULL;
    struct mcp_error err = {0};
    int r;
    if (strcmp(type, "call_tool") == 0) {
        const char *tool = json_string_value(json_object_get(job->payload, "tool"));
        json_t *args = json_object_get(job->payload, "arguments");
        r = tool ? mcp_registry_call(ss->mcp, server, tool, json_is_object(args) ? args : NULL,
                                     ss->opt.tool_timeout_ms, &result, &err)
                 : -EINVAL;
        if (!tool)
            mcp_error_set(&err, MCP_ERR_PROTOCOL, NULL, "call_tool needs a tool name");
    } else {
        json_t *tools = NULL;
        r = mcp_registry_tools(ss->mcp, server, ss->opt.tool_timeout_ms, &tools, &err);
        mcp_alias_tools(tools);
        if (r == 0)
            result = json_pack("{s:o}", "tools", tools);
    }
    if (r < 0)
        session_reply(s, job->id, NULL, err.message ? err.message : "the MCP call failed",
                      mcp_error_kind_name(err.kind));
    else
        session_reply(s, job->id, result, NULL, NULL);
    mcp_error_clear(&err);
    json_decref(job->id);
    json_decref(job->payload);
    session_unref(s);
    free(job);
    return NULL;
}

static void session_workspace_rpc(struct session *s, json_t *id, json_t *payload, const char *type)
{
    struct workspace_store *ws = s->owner->ws;
    json_t *result = NULL;
    char *error = NULL;
    int r = 0;
    if (strcmp(type, "memory") == 0) {
        r = workspace_memory(ws, s->workspace, payload, &result, &error);
    } else if (strcmp(type, "save_tool") == 0) {
        const char *name = json_string_value(json_object_get(payload, "name"));
        const char *src = json_string_value(json_object_get(payload, "source"));
        r = name && src ? workspace_save_tool(ws, s->workspace, name, src, &error) : -EINVAL;
        if (r == 0)
            result = json_pack("{s:b}", "saved", 1);
    } else if (strcmp(type, "save_file") == 0) {
        const char *name = json_string_value(json_object_get(payload, "name"));
        const char *b64 = json_string_value(json_object_get(payload, "content"));
        char *data = NULL;
        size_t len = 0;
        r = name && b64 ? defs_decode(b64, &data, &len) : -EINVAL;
        if (r == 0)
            r = workspace_save_file(ws, s->workspace, name, data, len, &result, &error);
        free(data);
    } else if (strcmp(type, "list_files") == 0) {
        result = json_pack("{s:o}", "files", workspace_files(ws, s->workspace));
    } else {
        r = -EINVAL;
    }
    if (r < 0)
        session_reply(s, id, NULL, error ? error : "invalid request", "workspace");
    else
        session_reply(s, id, result, NULL, NULL);
    free(error);
}

struct session_exec {
    struct session *s;
    const struct session_stream *stream;
};

static int session_on_message(void *userdata, struct cell *c, json_t *msg)
{
    struct session_exec *x = userdata;
    struct session *s = x->s;
    const char *kind = json_string_value(json_object_get(msg, "type"));
    if (!kind || strcmp(kind, "rpc_request") != 0)
        return 0; /* unknown frames are ignored, not fatal */
    json_t *id = json_object_get(msg, "id");
    json_t *payload = json_object_get(msg, "payload");
    const char *type = json_string_value(json_object_get(payload, "type"));
    if (!id || !type) {
        if (id)
            session_reply(s, id, NULL, "malformed RPC request", "protocol");
        return 0;
    }
    if (strcmp(type, "call_tool") == 0 || strcmp(type, "list_tools") == 0) {
        const char *server = json_string_value(json_object_get(payload, "server"));
        if (!server || !session_has_server(s, server)) {
            char *why = NULL;
            if (asprintf(&why, "server '%s' is not available in this session",
                         server ? server : "?") < 0)
                why = NULL;
            session_reply(s, id, NULL, why ? why : "unknown server", "unknown_server");
            free(why);
            return 0;
        }
        atomic_fetch_add(&s->mcp_calls, 1);
        if (x->stream && x->stream->on_rpc) {
            json_t *summary =
                json_pack("{s:s, s:s, s:s?, s:O}", "type", type, "server", server, "tool",
                          json_string_value(json_object_get(payload, "tool")), "id", id);
            x->stream->on_rpc(x->stream->userdata, summary);
            json_decref(summary);
        }
        struct session_rpc *job = calloc(1, sizeof(*job));
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (job) {
            session_ref(s);
            *job = (struct session_rpc){
                .s = s, .id = json_incref(id), .payload = json_incref(payload)};
        }
        if (!job || pthread_create(&t, &attr, session_rpc_thread, job) != 0) {
            if (job) {
                json_decref(job->id);
                json_decref(job->payload);
                session_unref(s);
                free(job);
            }
            session_reply(s, id, NULL, "sandboxd could not start the call", "internal");
        }
        pthread_attr_destroy(&attr);
        return 0;
    }
    session_workspace_rpc(s, id, payload, type);
    return 0;
}

static void session_on_output(void *userdata, int stream, const char *data, size_t len)
{
    struct session_exec *x = userdata;
    if (x->stream && x->stream->on_output)
        x->stream->on_output(x->stream->userdata, stream, data, len);
}

/* ---- creation ----------------------------------------------------------------------------- */

/* [prefix "."] + SESSION_ID_LEN hex digits: the prefix lets a proxy find the instance. */
static int session_new_id(const char *prefix, char out[SESSION_ID_MAX + 1])
{
    size_t k = prefix ? (size_t)snprintf(out, SESSION_ID_MAX + 1, "%s.", prefix) : 0;
    return randid_hex(out + k, SESSION_ID_MAX + 1 - k, SESSION_ID_LEN / 2);
}

static json_t *session_describe(struct session *s, const struct sessions *ss)
{
    int64_t now = clock_mono_us();
    return json_pack(
        "{s:s, s:s, s:s?, s:O, s:f, s:f, s:I, s:I, s:b, s:b, s:I}", "sessionId", s->id, "workspace",
        workspace_key_name(s->workspace), "tenant", tenant_name(s->tenant), "servers", s->servers,
        "ageS", (double)(now - s->created_us) / 1e6, "idleS", (double)(now - s->last_used_us) / 1e6,
        "idleTimeoutS", (json_int_t)(s->idle_us / 1000000), "executions", (json_int_t)s->executions,
        "busy", s->busy, "alive", s->alive, "memoryMb", (json_int_t)s->memory_mb);
}

/* The init job: servers with their tools, the workspace's saved tools. */
static json_t *session_init_job(struct sessions *ss, json_t *names, const char *workspace,
                                struct session_error *err)
{
    json_t *servers = json_array();
    json_t *described = mcp_registry_describe(ss->mcp);
    size_t i;
    json_t *v;
    json_array_foreach(names, i, v)
    {
        const char *name = json_string_value(v);
        json_t *tools = NULL;
        struct mcp_error me = {0};
        if (mcp_registry_tools(ss->mcp, name, ss->opt.tool_timeout_ms, &tools, &me) < 0) {
            session_err(err, 502, "MCP_ERROR", "servers", "MCP server '%s' is unavailable: %s",
                        name, me.message ? me.message : "failed");
            mcp_error_clear(&me);
            json_decref(servers);
            json_decref(described);
            return NULL;
        }
        const char *desc = NULL;
        size_t k;
        json_t *d;
        json_array_foreach(described, k, d)
        {
            if (strcmp(json_string_value(json_object_get(d, "name")) ?: "", name) == 0)
                desc = json_string_value(json_object_get(d, "description"));
        }
        mcp_alias_tools(tools); /* the sandbox uses these aliases, never its own */
        json_array_append_new(servers, json_pack("{s:s, s:o*, s:s, s:o}", "name", name, "alias",
                                                 mcp_alias_json(name), "description",
                                                 desc ? desc : "", "tools", tools));
    }
    /* Every configured server, in the session or not (runtime.discovered_servers()). */
    json_t *discovered = json_array();
    json_array_foreach(described, i, v)
    {
        const char *name = json_string_value(json_object_get(v, "name"));
        json_array_append_new(
            discovered,
            json_pack("{s:s, s:o*, s:s}", "name", name, "alias", mcp_alias_json(name),
                      "description", json_string_value(json_object_get(v, "description")) ?: ""));
    }
    json_decref(described);
    return json_pack("{s:s, s:o, s:o, s:o}", "type", "session", "servers", servers, "discovered",
                     discovered, "tools", workspace_tools(ss->ws, workspace));
}

int sessions_create(struct sessions *ss, const struct session_create *c, json_t **ret_info,
                    struct session_error *err)
{
    *err = (struct session_error){0};
    const char *workspace = c->workspace ? c->workspace : "default";
    const char *why = workspace_check_name(workspace);
    if (why) {
        session_err(err, 400, "INVALID_REQUEST", "workspace", "workspace: %s", why);
        return -EINVAL;
    }
    json_t *names = c->servers ? json_incref(c->servers) : json_array();
    if (!json_is_array(names)) {
        json_decref(names);
        session_err(err, 400, "INVALID_REQUEST", "servers", "servers: must be an array of names");
        return -EINVAL;
    }
    char *unknown = mcp_registry_check_names(ss->mcp, names);
    if (unknown) {
        session_err(err, 400, "INVALID_REQUEST", "servers", "%s", unknown);
        free(unknown);
        json_decref(names);
        return -EINVAL;
    }
    int64_t idle_s = c->idle_timeout_s > 0 ? c->idle_timeout_s : ss->opt.default_idle_s;
    if (idle_s > ss->opt.max_idle_s)
        idle_s = ss->opt.max_idle_s;
    uint64_t memory_mb = c->memory_mb > 0 ? (uint64_t)c->memory_mb : ss->opt.default_memory_mb;
    if (memory_mb > ss->opt.max_memory_mb)
        memory_mb = ss->opt.max_memory_mb;

    pthread_mutex_lock(&ss->lock);
    bool down = ss->shutting_down;
    bool full = !down && ss->live >= ss->opt.max_sessions;
    if (!full && !down)
        ss->live++; /* reserve the slot while the interpreter starts */
    pthread_mutex_unlock(&ss->lock);
    if (down) {
        json_decref(names);
        session_shut_err(err);
        return -ESHUTDOWN;
    }
    if (full) {
        json_decref(names);
        session_err(err, 503, "TOO_MANY_SESSIONS", NULL,
                    "%u sessions are live, the maximum; delete one or retry later",
                    ss->opt.max_sessions);
        return -EBUSY;
    }
    if (!tenant_session_claim(c->tenant)) {
        pthread_mutex_lock(&ss->lock);
        ss->live--;
        pthread_mutex_unlock(&ss->lock);
        json_decref(names);
        session_err(err, 429, "TENANT_LIMIT", NULL,
                    "tenant '%s' has %u live sessions, its maxSessions; delete one or retry later",
                    tenant_name(c->tenant), tenant_max_sessions(c->tenant));
        return -EBUSY;
    }
    int r = -ENOMEM;
    struct session *s = calloc(1, sizeof(*s));
    json_t *job = NULL;
    struct exec_outcome o = {0};
    if (!s || !(s->workspace = workspace_key(tenant_name(c->tenant), workspace))) {
        session_err(err, 500, "INTERNAL", NULL, "out of memory");
        goto fail;
    }
    s->owner = ss;
    s->tenant = c->tenant;
    s->servers = TAKE_PTR(names);
    s->memory_mb = memory_mb;
    atomic_init(&s->refs, 1);
    atomic_init(&s->mcp_calls, 0);
    pthread_mutex_init(&s->exec_lock, NULL);
    pthread_mutex_init(&s->write_lock, NULL);
    if ((r = session_new_id(ss->opt.id_prefix, s->id)) < 0) {
        session_err(err, 500, "INTERNAL", NULL, "cannot draw a random session id");
        goto fail;
    }
    job = session_init_job(ss, s->servers, s->workspace, err);
    if (!job) {
        r = -EIO;
        goto fail;
    }
    json_object_set_new(job, "limits",
                        json_pack("{s:I, s:I}", "memoryBytes", (json_int_t)(memory_mb << 20),
                                  "outputBytes", (json_int_t)ss->opt.output_limit));
    if (c->compat)
        json_object_set_new(job, "compat", json_string(c->compat));
    struct jail_limits lim = jail_limits_default(ss->jail);
    lim.memory = memory_mb << 20;
    lim.nproc = ss->opt.nproc;
    bool hit = false;
    int64_t deadline = clock_mono_us() + SESSION_READY_TIMEOUT_US;
    r = ss->pool ? pool_acquire(ss->pool, &lim, deadline, &s->cell, &hit)
                 : cell_spawn_cold(ss->jail, &lim, 64u << 20, &s->cell);
    if (r < 0) {
        metrics_isolation_failure(ss->metrics);
        session_err(err, 500, "INTERNAL", NULL, "no sandbox could be started: %s", strerror(-r));
        goto fail;
    }
    struct exec_request req = {
        .job = job,
        .timeout_us = SESSION_READY_TIMEOUT_US,
        .output_limit = ss->opt.output_limit,
        .keep_alive = true,
        .final_type = "session_ready",
    };
    r = exec_run(s->cell, &req, &o);
    if (r < 0 || !o.final || !o.cell_alive ||
        strcmp(json_string_value(json_object_get(o.final, "type")) ?: "", "session_ready") != 0) {
        const char *m = json_string_value(json_object_get(o.final, "message"));
        session_err(err, 500, "INTERNAL", NULL, "the session interpreter did not start: %s",
                    m ? m : (o.internal ? o.internal : verdict_status_name(o.verdict.status)));
        r = r < 0 ? r : -EIO;
        goto fail;
    }
    int64_t now = clock_mono_us();
    s->created_us = s->last_used_us = now;
    s->idle_us = idle_s * 1000000;
    s->alive = true;
    pthread_mutex_lock(&ss->lock);
    if (ss->shutting_down) { /* began while the interpreter started */
        pthread_mutex_unlock(&ss->lock);
        session_shut_err(err);
        r = -ESHUTDOWN;
        goto fail;
    }
    HASH_ADD_STR(ss->table, id, s);
    s->listed = true;
    ss->created++;
    json_t *info = session_describe(s, ss);
    pthread_mutex_unlock(&ss->lock);
    json_object_set(info, "toolsLoaded", json_object_get(o.final, "toolsLoaded"));
    json_object_set(info, "toolsFailed", json_object_get(o.final, "toolsFailed"));
    json_object_set_new(info, "startMs", json_real((double)o.verdict.wall_us / 1000.0));
    json_object_set_new(info, "poolHit", json_boolean(hit));
    exec_outcome_done(&o);
    json_decref(job);
    log_fields(LOG_INFO, "session created",
               json_pack("{s:s, s:s, s:O}", "sessionId", s->id, "workspace", s->workspace,
                         "servers", s->servers));
    *ret_info = info;
    return 0;
fail:
    exec_outcome_done(&o);
    json_decref(job);
    json_decref(names);
    pthread_mutex_lock(&ss->lock);
    ss->live--;
    pthread_mutex_unlock(&ss->lock);
    tenant_session_release(c->tenant);
    if (s) {
        if (!s->servers)
            s->servers = json_array();
        atomic_init(&s->refs, 1);
        session_unref(s);
    }
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
                                   int64_t timeout_ms, bool alive)
{
    char msg[256];
    if (strcmp(status, "timeout") == 0)
        snprintf(msg, sizeof(msg), "the execution exceeded its time limit of %lld ms%s",
                 (long long)timeout_ms,
                 alive ? "; it was interrupted and the session is intact"
                       : " and did not stop when interrupted; the session was ended");
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

int sessions_execute(struct sessions *ss, const char *id, const char *code, int64_t timeout_ms,
                     const struct session_stream *stream, json_t **ret_result,
                     struct session_error *err)
{
    *err = (struct session_error){0};
    struct session *s = sessions_lookup(ss, id);
    if (!s) {
        session_err(err, 404, "NOT_FOUND", NULL,
                    "no session %s (it may have ended or been "
                    "reaped)",
                    id);
        return -ENOENT;
    }
    if (timeout_ms <= 0)
        timeout_ms = ss->opt.default_timeout_ms;
    if (timeout_ms > ss->opt.max_timeout_ms)
        timeout_ms = ss->opt.max_timeout_ms;
    pthread_mutex_lock(&s->exec_lock);
    if (!tenant_run_begin(s->tenant, "session")) {
        pthread_mutex_unlock(&s->exec_lock);
        session_err(err, 429, "TENANT_LIMIT", NULL,
                    "tenant '%s' runs %u executions, its maxRunning; retry later",
                    tenant_name(s->tenant), tenant_max_running(s->tenant));
        session_unref(s);
        return -EBUSY;
    }
    pthread_mutex_lock(&ss->lock);
    bool alive = s->alive;
    bool down = ss->shutting_down;
    uint64_t n = ++s->executions;
    s->busy = alive;
    pthread_mutex_unlock(&ss->lock);
    if (!alive) {
        tenant_run_end(s->tenant);
        pthread_mutex_unlock(&s->exec_lock);
        session_unref(s);
        if (down)
            session_shut_err(err);
        else
            session_err(err, 404, "NOT_FOUND", NULL, "session %s has ended", id);
        return down ? -ESHUTDOWN : -ENOENT;
    }
    unsigned calls_before = atomic_load(&s->mcp_calls);
    json_t *job =
        json_pack("{s:s, s:I, s:s}", "type", "execute", "id", (json_int_t)n, "code", code);
    int r = job ? session_send(s, job) : -ENOMEM;
    json_decref(job);
    struct session_exec x = {.s = s, .stream = stream};
    struct exec_hooks hooks = {
        .userdata = &x,
        .on_message = session_on_message,
        .on_output = session_on_output,
    };
    struct exec_request req = {
        .job = NULL,
        .timeout_us = timeout_ms * 1000,
        .output_limit = ss->opt.output_limit,
        .keep_alive = true,
        .interrupt_grace_us = ss->opt.interrupt_grace_ms * 1000,
        .final_type = "execution_done",
        .hooks = &hooks,
    };
    struct exec_outcome o = {0};
    int64_t start = clock_mono_us();
    if (r == 0)
        r = exec_run(s->cell, &req, &o);
    else
        o.verdict.status = VERDICT_EXITED; /* could not even send: the interpreter is gone */
    bool survived;
    const char *status = session_status(&o, &survived);
    json_t *error = json_object_get(o.final, "error");
    bool answered = strcmp(status, "ok") == 0 || (strcmp(status, "error") == 0 && o.final);
    if (json_is_object(error)) {
        json_incref(error); /* the runtime's own description, at most the output limit each */
        if (response_cap_strings(error, ss->opt.output_limit))
            json_object_set_new(error, "truncated", json_true());
    } else {
        error = answered ? NULL : session_synth_error(status, &o, timeout_ms, survived);
    }
    (void)response_cap_strings(json_object_get(o.final, "result"), ss->opt.output_limit);
    json_t *result = json_pack(
        "{s:I, s:s, s:o, s:o, s:o, s:O?, s:f, s:b, s:b, s:I, s:o}", "executionId", (json_int_t)n,
        "status", status, "stdout", response_text(&o.out), "stderr", response_text(&o.err), "error",
        error ? error : json_null(), "result", json_object_get(o.final, "result"), "durationMs",
        (double)(clock_mono_us() - start) / 1000.0, "sessionAlive", survived, "truncated",
        o.verdict.stdout_truncated || o.verdict.stderr_truncated, "mcpCalls",
        (json_int_t)(atomic_load(&s->mcp_calls) - calls_before), "verdict",
        verdict_to_json(&o.verdict));
    exec_outcome_done(&o);
    pthread_mutex_lock(&ss->lock);
    s->busy = false;
    s->last_used_us = clock_mono_us();
    bool drop = !survived && s->listed;
    if (drop)
        session_unlist(ss, s);
    /* Ended by sessions_shutdown() while it ran: the caller hears why, not "killed". */
    bool shut = !survived && !drop && ss->shutting_down;
    pthread_mutex_unlock(&ss->lock);
    pthread_mutex_unlock(&s->exec_lock);
    tenant_run_end(s->tenant);
    metrics_request(ss->metrics, "session",
                    strcmp(status, "ok") == 0             ? "ok"
                    : strcmp(status, "timeout") == 0      ? "timeout"
                    : strcmp(status, "memory_limit") == 0 ? "memory_limit"
                    : strcmp(status, "output_limit") == 0 ? "output_limit"
                    : strcmp(status, "killed") == 0       ? "killed"
                                                          : "error",
                    clock_mono_us() - start);
    if (drop) {
        log_info("session %s ended: %s", s->id, status);
        session_unref(s); /* the table's reference */
    }
    session_unref(s);
    if (shut) {
        json_decref(result);
        session_shut_err(err);
        return -ESHUTDOWN;
    }
    if (!result) {
        session_err(err, 500, "INTERNAL", NULL, "out of memory");
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
    /* Signalled under the lock: the table's reference keeps the cell alive, and busy cannot
     * turn false (the execution end) without the lock. */
    int r = !s ? -ENOENT : !s->busy || !s->cell ? -EALREADY : 0;
    if (r == 0 && syscall(SYS_pidfd_send_signal, s->cell->pidfd, SIGINT, NULL, 0) < 0)
        r = -errno;
    pthread_mutex_unlock(&ss->lock);
    if (r == 0)
        log_info("session %s: execution interrupted on request", id);
    return r;
}

/* ---- inspection, deletion, reaping -------------------------------------------------------- */

int sessions_info(struct sessions *ss, const char *id, json_t **ret_info)
{
    pthread_mutex_lock(&ss->lock);
    struct session *s = NULL;
    HASH_FIND_STR(ss->table, id, s);
    *ret_info = s ? session_describe(s, ss) : NULL;
    pthread_mutex_unlock(&ss->lock);
    return s ? 0 : -ENOENT;
}

bool sessions_exists(struct sessions *ss, const char *id)
{
    pthread_mutex_lock(&ss->lock);
    struct session *s = NULL;
    HASH_FIND_STR(ss->table, id, s);
    pthread_mutex_unlock(&ss->lock);
    return s != NULL;
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

json_t *sessions_list(struct sessions *ss, const struct tenant *tenant)
{
    json_t *list = json_array();
    pthread_mutex_lock(&ss->lock);
    for (struct session *s = ss->table; s; s = s->hh.next)
        if (!tenant || s->tenant == tenant)
            json_array_append_new(list, session_describe(s, ss));
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

/* End s: its interpreter is killed at once (a running execution then reports it). */
static void session_end(struct session *s)
{
    if (s->cell)
        cell_kill(s->cell);
    session_unref(s);
}

int sessions_delete(struct sessions *ss, const char *id)
{
    pthread_mutex_lock(&ss->lock);
    struct session *s = NULL;
    HASH_FIND_STR(ss->table, id, s);
    if (s)
        session_unlist(ss, s);
    pthread_mutex_unlock(&ss->lock);
    if (!s)
        return -ENOENT;
    log_info("session %s deleted", id);
    session_end(s);
    return 0;
}

static void *sessions_reaper(void *arg)
{
    struct sessions *ss = arg;
    pthread_mutex_lock(&ss->lock);
    while (!ss->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&ss->cond, &ss->lock, &ts);
        if (ss->stop)
            break;
        int64_t now = clock_mono_us();
        struct session *expired[64];
        size_t n = 0;
        struct session *s, *tmp;
        HASH_ITER(hh, ss->table, s, tmp)
        {
            if (n < ARRAY_SIZE(expired) && !s->busy && now - s->last_used_us > s->idle_us) {
                session_unlist(ss, s);
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
    int r = pthread_create(&ss->reaper, NULL, sessions_reaper, ss);
    if (r != 0) {
        free(ss);
        return -r;
    }
    *ret = ss;
    return 0;
}

void sessions_shutdown(struct sessions *ss)
{
    if (!ss)
        return;
    for (;;) {
        pthread_mutex_lock(&ss->lock);
        ss->shutting_down = true;
        struct session *s = ss->table;
        if (s)
            session_unlist(ss, s);
        pthread_mutex_unlock(&ss->lock);
        if (!s)
            break;
        log_info("session %s ended: sandboxd is shutting down", s->id);
        session_end(s);
    }
}

void sessions_free(struct sessions *ss)
{
    if (!ss)
        return;
    pthread_mutex_lock(&ss->lock);
    ss->stop = true;
    pthread_cond_broadcast(&ss->cond);
    pthread_mutex_unlock(&ss->lock);
    pthread_join(ss->reaper, NULL);
    struct session *s, *tmp;
    HASH_ITER(hh, ss->table, s, tmp)
    {
        session_unlist(ss, s);
        session_end(s);
    }
    pthread_cond_destroy(&ss->cond);
    pthread_mutex_destroy(&ss->lock);
    free(ss);
}
