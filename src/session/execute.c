// SPDX-License-Identifier: MIT
/*
 * session execute — see session.h: running code in a live session (sessions_execute,
 * sessions_interrupt): the session is taken for the run, the code sent, its output and
 * artifacts streamed, and the verdict turned into the answer; a session that died in it ends.
 * Creating sessions is session.c, the table table.c.
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
