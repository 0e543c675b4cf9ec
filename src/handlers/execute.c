// SPDX-License-Identifier: MIT
/*
 * execute — the JIT and EXECUTOR handlers of /execute and the common path
 * from a job to a verdict (see app.h); handlers/dispatch.c picks the handler.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handlers/app.h"
#include "exec/cell.h"
#include "egress/proxy.h"
#include "pool/pool.h"
#include "pool/reuse.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/utf8.h"

/* Bytes of an error message that go to the framework log. */
#define APP_LOG_MESSAGE_MAX 2048

void app_run_done(struct app_run *run)
{
    exec_outcome_done(&run->outcome);
}

static int64_t app_clamp(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

/* A cell whose network namespace holds the proxy's listener, attached to the proxy with the
 * execution's allow list; the job learns where the proxy is. The cell is a warm one of
 * run->pool, a network pool (the profile's or the server's, as request_validate() chose), or
 * a fresh one without. */
static int app_egress_cell(struct app *a, struct app_run *run, const struct jail_limits *lim,
                           int64_t deadline_us, struct cell **ret_cell, struct egress_tap **ret_tap)
{
    int listener = -1;
    assert(a->egress); /* request_validate() refuses a policy without --egress-allow */
    int r = run->pool ? pool_acquire(run->pool, lim, deadline_us, ret_cell, &run->pool_hit)
                      : cell_spawn_cold_egress(a->jail, lim, a->opt.max_frame, EGRESS_SANDBOX_PORT,
                                               ret_cell, &listener);
    if (r < 0)
        return r;
    if (listener < 0)
        listener = TAKE_FD((*ret_cell)->egress_fd);
    const struct egress_owner who = {.label = run->label, .share = run->egress_share};
    r = egress_tap_new(a->egress, run->egress, listener, &who, ret_tap);
    if (r < 0) {
        cell_free(*ret_cell);
        *ret_cell = NULL;
        return r;
    }
    json_object_set_new(run->job, "network",
                        egress_proxy_job(a->jail->ca_bundle ? JAIL_CA_BUNDLE : NULL));
    return 0;
}

/* The final frame is a result (not an error frame) and the verdict OK. */
static bool app_run_ok(const struct app_run *run)
{
    const struct verdict *v = &run->outcome.verdict;
    return v->status == VERDICT_OK && run->outcome.final &&
           strcmp(json_string_value(json_object_get(run->outcome.final, "type")) ?: "", "result") ==
               0;
}

/* After an execution that may be reused: keep its interpreter when it ended in a clean result
 * and left nothing unread; otherwise retire it (any error, timeout, limit). Takes c. */
static void app_reuse_keep(struct app *a, struct app_run *run, const char *key, struct cell *c,
                           unsigned uses, int r)
{
    if (r == 0 && run->outcome.cell_alive && app_run_ok(run) && !frame_reader_ready(&c->reader)) {
        reuse_put(a->reuse, run->app_id, key, c, uses + 1);
        return;
    }
    reuse_note_retired_error(a->reuse);
    cell_free(c);
}

int app_run_job(struct app *a, struct app_run *run)
{
    const struct app_options *o = &a->opt;
    int64_t timeout_ms =
        manager_timeout_ms(a->mgr, run->history_key, run->requested_timeout_ms, &run->timeout_rule);
    int64_t memory_mb = run->requested_memory_mb
                            ? app_clamp(run->requested_memory_mb, 16, (int64_t)o->max_memory_mb)
                        : run->default_memory_mb ? (int64_t)run->default_memory_mb
                                                 : (int64_t)o->default_memory_mb;
    run->limits = (struct response_limits){
        .timeout_ms = timeout_ms,
        .memory_mb = (uint64_t)memory_mb,
        .output_bytes = o->output_limit,
        .artifacts = o->artifacts,
    };
    int64_t cpu_s = (timeout_ms + 999) / 1000;
    if (json_object_set_new(run->job, "limits",
                            json_pack("{s:I, s:I, s:I, s:{s:I, s:I}}", "memoryBytes",
                                      (json_int_t)memory_mb << 20, "cpuSeconds", (json_int_t)cpu_s,
                                      "outputBytes", (json_int_t)o->output_limit, "artifacts",
                                      "count", (json_int_t)o->artifacts.max_count, "bytes",
                                      (json_int_t)o->artifacts.max_bytes)) < 0)
        return -ENOMEM; /* a job without its limits must not run */
    _cleanup_free_ char *kept_key =
        run->reuse_key && a->reuse ? reuse_key_limits(run->reuse_key, (uint64_t)memory_mb) : NULL;
    if (kept_key)
        json_object_set_new(run->job, "reuse", json_true());

    int64_t start = clock_mono_us();
    int r = manager_enter(a->mgr, start + timeout_ms * 1000, &run->queue_wait_us);
    if (r < 0)
        return r;
    struct jail_limits lim = jail_limits_default(a->jail);
    lim.nproc = o->nproc;
    lim.nofile = o->nofile;
    lim.memory = (uint64_t)memory_mb << 20;
    struct cell *cell = NULL;
    struct egress_tap *tap = NULL;
    struct pool *pool = run->pool ? run->pool : a->pool;
    unsigned uses = 0;
    /* A kept interpreter has its cgroup limits already: they are part of its key. */
    if (kept_key && (cell = reuse_take(a->reuse, kept_key, &uses)))
        run->outcome.verdict.reused = true;
    else if (run->egress)
        r = app_egress_cell(a, run, &lim, start + timeout_ms * 1000, &cell, &tap);
    else if (pool)
        r = pool_acquire(pool, &lim, start + timeout_ms * 1000, &cell, &run->pool_hit);
    else
        r = cell_spawn_cold(a->jail, &lim, o->max_frame, &cell);
    if (r < 0) {
        manager_leave(a->mgr);
        metrics_isolation_failure(a->metrics);
        return r;
    }
    bool reused = run->outcome.verdict.reused;
    int64_t left_ms = timeout_ms - (clock_mono_us() - start) / 1000;
    struct exec_request req = {
        .job = run->job,
        .timeout_us = (left_ms > 1 ? left_ms : 1) * 1000,
        .cpu_limit_us = (uint64_t)cpu_s * 1000000,
        .output_limit = o->output_limit,
        .keep_alive = kept_key != NULL,
        .raw_path = run->raw_path,
        .hooks = run->hooks,
        .artifacts = o->artifacts,
    };
    struct manager_run mr;
    r = manager_attach(a->mgr, &mr, cell);
    if (r == 0) {
        r = exec_run(cell, &req, &run->outcome);
        if (manager_detach(a->mgr, &mr))
            r = -ESHUTDOWN; /* killed by the server's shutdown, not by what it ran */
    }
    run->outcome.verdict.reused = reused; /* exec_run filled the verdict afresh */
    manager_leave(a->mgr);
    if (kept_key)
        app_reuse_keep(a, run, kept_key, TAKE_PTR(cell), uses, r);
    cell_free(cell);
    if (tap) {
        egress_tap_free(tap, &run->egress_stats);
        run->egress_used = true;
        metrics_egress(a->metrics, &run->egress_stats);
    }
    manager_record(a->mgr, run->history_key, run->outcome.verdict.wall_us, app_run_ok(run));
    return r < 0 ? r : 0;
}

void app_reply_internal(struct app_reply *ret, const char *why)
{
    json_decref(ret->body);
    frame_raw_done(&ret->raw);
    ret->kind = SBX_ERR_INTERNAL;
    ret->body = json_pack("{s:{s:s, s:s}}", "error", "code", "INTERNAL", "message", why);
}

json_t *app_user_context(const struct request_spec *s)
{
    json_t *c = json_pack("{s:s?, s:s?, s:s, s:s?, s:s, s:O?}", "appId", s->app_id, "componentId",
                          s->component_id, "requestId", s->request_id, "traceId", s->trace_id,
                          "handlerType", s->handler_name, "taskDetails", s->task);
    return c;
}

static const char *app_result_label(json_t *body, enum sbx_errkind kind)
{
    if (kind == SBX_ERR_UNAVAILABLE)
        return "rejected";
    if (kind == SBX_ERR_INTERNAL)
        return "internal";
    if (kind != SBX_ERR_NONE)
        return "bad_request";
    const char *rt = json_string_value(json_object_get(body, "resultType"));
    if (!rt || strcmp(rt, "error") != 0)
        return "ok";
    const char *code = json_string_value(json_object_get(json_object_get(body, "data"), "code"));
    if (!code)
        return "error";
    if (strcmp(code, "TIMEOUT") == 0)
        return "timeout";
    if (strcmp(code, "MEMORY_LIMIT") == 0)
        return "memory_limit";
    if (strcmp(code, "OUTPUT_LIMIT") == 0)
        return "output_limit";
    if (strcmp(code, "KILLED") == 0)
        return "killed";
    return "error";
}

void app_finish(struct app *a, const struct request_spec *s, struct app_reply *reply,
                int64_t start_us)
{
    const char *label = app_result_label(reply->body, reply->kind);
    metrics_request(a->metrics, s->handler_name, label, clock_mono_us() - start_us);
    json_t *data = json_object_get(reply->body, "data");
    const char *code = json_string_value(json_object_get(data, "code"));
    if (reply->kind == SBX_ERR_NONE && code) {
        /* The message may be as long as the output limit: the log gets its start. */
        const char *msg = json_string_value(json_object_get(data, "message"));
        size_t mlen = msg ? utf8_cut(msg, strlen(msg), APP_LOG_MESSAGE_MAX) : 0;
        char *text = NULL;
        if (asprintf(&text, "%s failed: %s: %.*s%s", s->handler_name, code, (int)mlen,
                     msg ? msg : "", msg && msg[mlen] ? " [...]" : "") < 0)
            text = NULL;
        framework_log(a->fw, s->endpoint, "warn", text ? text : code,
                      json_pack("{s:s, s:s?, s:s?, s:s?, s:s, s:s}", "requestId", s->request_id,
                                "appId", s->app_id, "componentId", s->component_id, "traceId",
                                s->trace_id, "handlerType", s->handler_name, "code", code));
        free(text);
    }
    log_pack(reply->kind == SBX_ERR_UNAVAILABLE || reply->kind == SBX_ERR_INTERNAL ? LOG_ERROR
                                                                                   : LOG_INFO,
             "execute", "{s:s, s:s, s:s, s:f}", "handler", s->handler_name, "error",
             sbx_errkind_name(reply->kind), "result", label, "durationMs",
             (double)(clock_mono_us() - start_us) / 1000.0);
}

void app_reply_from_run(struct app *a, const struct request_spec *s, struct app_run *run, int r,
                        enum response_kind kind, const struct framework_stats *fst,
                        struct app_reply *ret)
{
    if (r == -EBUSY) {
        ret->kind = SBX_ERR_UNAVAILABLE;
        ret->retry_after = manager_retry_after(a->mgr);
        ret->body = json_pack("{s:{s:s, s:s}}", "error", "code", "OVERLOADED", "message",
                              "the execution queue is full; retry later");
        return;
    }
    if (r == -ESHUTDOWN) {
        ret->kind = SBX_ERR_UNAVAILABLE;
        ret->retry_after = 1;
        ret->body = json_pack("{s:{s:s, s:s}}", "error", "code", "SHUTTING_DOWN", "message",
                              "sandboxd is shutting down: the execution was ended before it "
                              "finished; retry");
        return;
    }
    if (r == -ETIMEDOUT && !run->outcome.final && run->outcome.verdict.status == VERDICT_OK) {
        /* Timed out while still queued. */
        ret->kind = SBX_ERR_NONE;
        ret->body = response_error(
            s->request_id, "TIMEOUT", "the execution waited in the queue past its time limit",
            json_pack("{s:I, s:b}", "timeoutMs", (json_int_t)run->limits.timeout_ms, "queued", 1));
        return;
    }
    struct response_metrics m = {
        .queue_wait_us = run->queue_wait_us,
        .mcp_calls = fst ? fst->calls : 0,
        .mcp_us = fst ? fst->us : 0,
        .pool_hit = run->pool_hit,
        .egress = run->egress_used ? &run->egress_stats : NULL,
    };
    json_t *body =
        r < 0 ? NULL : response_build(s->request_id, kind, &run->outcome, &run->limits, &m);
    if (!body) {
        ret->kind = SBX_ERR_INTERNAL;
        ret->body = json_pack("{s:{s:s, s:s}}", "error", "code", "INTERNAL", "message",
                              run->outcome.internal ? run->outcome.internal
                                                    : "the sandbox could not be started");
        return;
    }
    if (kind == RESPONSE_JIT) {
        json_object_set_new(body, "stdout", response_text(&run->outcome.out));
        json_object_set_new(body, "stderr", response_text(&run->outcome.err));
    }
    json_t *v = json_object_get(body, "verdict");
    if (v && run->timeout_rule)
        json_object_set_new(v, "timeoutRule", json_string(run->timeout_rule));
    ret->kind = SBX_ERR_NONE;
    ret->body = body;
    ret->raw = run->outcome.raw;
    ret->raw_kind = kind;
    run->outcome.raw = (struct frame_raw){0};
}

/* The request's profile (its pool, its default memory), files and collect globs onto run and
 * job, as request_validate() found them. */
static void app_data_work(const struct request_spec *s, json_t *job, struct app_run *run)
{
    run->pool = s->pool;
    run->default_memory_mb = s->profile_memory_mb;
    if (s->files)
        json_object_set(job, "files", s->files);
    if (s->collect)
        json_object_set(job, "collect", s->collect);
}

/* app_jit_call(); with pass_through, the function's value comes back as text in ret->raw. */
static void app_jit_run(struct app *a, const struct request_spec *s, const char *script,
                        const char *function, json_t *request_data, json_t *context,
                        bool pass_through, struct framework_stats *fst, struct app_reply *ret)
{
    *ret = (struct app_reply){0};
    struct defs_result def;
    _cleanup_sbx_error_ struct sbx_error err = {0};
    if (defs_get(a->defs, s->endpoint, s->app_id, script, fst, &def, &err) < 0) {
        bool nf = err.kind == SBX_ERR_NOT_FOUND;
        json_t *details = def.details ? json_incref(def.details) : json_object();
        json_object_set_new(details, "script", json_string(script));
        ret->kind = SBX_ERR_NONE;
        ret->body = response_error(s->request_id, nf ? "SCRIPT_NOT_FOUND" : "MCP_ERROR",
                                   err.message ? err.message : "definition unavailable", details);
        defs_result_done(&def);
        return;
    }
    json_t *job = json_pack("{s:s, s:s, s:s, s:s, s:O, s:O}", "type", "jit", "source",
                            def.content_b64, "path", script, "function", function, "requestData",
                            request_data ? request_data : json_null(), "context",
                            context ? context : json_null());
    /* Warm reuse (CONTRACT §14): only a plain JIT execution of an app that opted in; files
     * and a network policy need a cell of their own. A kept interpreter holds what the last
     * caller left (module globals, /tmp): it serves the same tenant and endpoint only. */
    struct reuse_owner owner = {.tenant = s->tenant, .endpoint = s->endpoint};
    char *reuse = reuse_wants(a->reuse, s->app_id) && !s->egress && !s->files && !s->collect
                      ? reuse_key(&owner, s->app_id, script, def.content_b64, s->profile)
                      : NULL;
    defs_result_done(&def);
    char *key = NULL;
    if (asprintf(&key, "%s/%s#%s", s->app_id, script, function) < 0)
        key = NULL;
    struct app_run run = {
        .job = job,
        .history_key = key,
        .requested_timeout_ms = s->timeout_ms,
        .requested_memory_mb = s->memory_mb,
        .raw_path = pass_through ? response_raw_path(RESPONSE_JIT) : NULL,
        .egress = s->egress,
        .egress_share = s->egress_share,
        .label = s->request_id,
        .app_id = s->app_id,
        .reuse_key = reuse,
    };
    if (job)
        app_data_work(s, job, &run);
    int r = job ? app_run_job(a, &run) : -ENOMEM;
    app_reply_from_run(a, s, &run, r, RESPONSE_JIT, fst, ret);
    app_run_done(&run);
    json_decref(job);
    free(key);
    free(reuse);
}

void app_jit_call(struct app *a, const struct request_spec *s, const char *script,
                  const char *function, json_t *request_data, json_t *context,
                  struct framework_stats *fst, struct app_reply *ret)
{
    app_jit_run(a, s, script, function, request_data, context, false, fst, ret);
}

void app_jit(struct app *a, const struct request_spec *s, struct app_reply *ret)
{
    struct framework_stats fst = {0};
    json_t *ctx = app_user_context(s);
    app_jit_run(a, s, s->script, s->function, s->request_data, ctx, true, &fst, ret);
    json_decref(ctx);
}

void app_executor(struct app *a, const struct request_spec *s, struct app_reply *ret)
{
    json_t *job = json_pack("{s:s, s:s}", "type", "executor", "code", s->code);
    if (job) {
        if (s->class_name) {
            json_object_set_new(job, "className", json_string(s->class_name));
            json_object_set_new(job, "methodName", json_string(s->method_name));
        }
        if (s->function_name)
            json_object_set_new(job, "functionName", json_string(s->function_name));
        json_object_set_new(job, "methodParams",
                            s->method_params ? json_deep_copy(s->method_params) : json_object());
    }
    struct app_run run = {
        .job = job,
        .requested_timeout_ms = s->timeout_ms,
        .requested_memory_mb = s->memory_mb,
        .raw_path = response_raw_path(RESPONSE_EXECUTOR),
        .egress = s->egress,
        .egress_share = s->egress_share,
        .label = s->request_id,
    };
    if (job)
        app_data_work(s, job, &run);
    int r = job ? app_run_job(a, &run) : -ENOMEM;
    app_reply_from_run(a, s, &run, r, RESPONSE_EXECUTOR, NULL, ret);
    app_run_done(&run);
    json_decref(job);
}
