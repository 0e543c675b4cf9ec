// SPDX-License-Identifier: MIT
/*
 * agent — agent sessions (see session.h): one thread carries all of an agent session's frames
 * for the session's whole life. It is an execution that never ends by itself: exec_run() with
 * the session's bridge (the outbox of session_send(), its wake-up eventfd) and a final frame the
 * interpreter never sends, so it returns only when the interpreter is gone (killed by
 * sessions_end(), shutdown, or its own death). The session is RUNNING meanwhile, which keeps the
 * idle reaper and a second execution away.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "exec/run.h"
#include "session/session_int.h"
#include "util/log.h"

/* Longer than any agent session lives (its owner ends it first), and short enough that exec_run's
 * poll() timeout in milliseconds fits an int. */
#define AGENT_SERVE_US (7LL * 24 * 3600 * 1000000)
/* What the interpreter itself may write on stdout and stderr (its programs have pipes of their
 * own): more is a runaway agent, and exec_run then ends the session. */
#define AGENT_OUTPUT_MAX (1u << 20)

struct agent_exec {
    struct session_exec x; /* first: the bridge's hooks take it as their userdata */
    const struct session_agent *a;
};

static int agent_on_message(void *userdata, struct cell *c, json_t *msg)
{
    (void)c;
    const struct agent_exec *ax = userdata;
    ax->a->on_frame(ax->a->userdata, msg);
    return 0;
}

static void agent_on_output(void *userdata, int stream, const char *data, size_t len)
{
    const struct agent_exec *ax = userdata;
    if (ax->a->on_output)
        ax->a->on_output(ax->a->userdata, stream, data, len);
}

int sessions_serve(struct sessions *ss, const char *id, const struct session_agent *a,
                   struct sbx_error *err)
{
    *err = (struct sbx_error){0};
    struct session *s = sessions_lookup(ss, id);
    if (!s) {
        sbx_error_set(err, SBX_ERR_NOT_FOUND, "NOT_FOUND", NULL, "no session %s", id);
        return -ENOENT;
    }
    if (!s->agent || pthread_mutex_trylock(&s->exec_lock) != 0) {
        sbx_error_set(err, SBX_ERR_INVALID, "AGENT_SESSION", NULL,
                      "session %s is not an agent session, or is served already", id);
        session_unref(s);
        return -EINVAL;
    }
    pthread_mutex_lock(&ss->lock);
    /* Agent sessions have no CPU rule: IDLE between creation and here, or ENDED meanwhile. */
    assert_session_state(s, SESSION_IDLE, SESSION_ENDED);
    bool alive = s->state == SESSION_IDLE;
    if (alive)
        session_set_state(s, SESSION_RUNNING);
    pthread_mutex_unlock(&ss->lock);
    struct exec_outcome o = {0};
    if (alive) {
        struct agent_exec ax = {.x = {.s = s}, .a = a};
        struct exec_hooks hooks = {
            .userdata = &ax,
            .on_message = agent_on_message,
            .on_output = agent_on_output,
            .pending = session_pending,
            .flush = session_flush,
            .wake_fd = s->wake_fd,
        };
        struct exec_request req = {
            .timeout_us = AGENT_SERVE_US,
            .output_limit = AGENT_OUTPUT_MAX,
            .keep_alive = true,
            .final_type = "agent_exit", /* never sent: the session ends with its interpreter */
            .final_id = 1,
            .hooks = &hooks,
        };
        (void)exec_run(s->cell, &req, &o);
    }
    pthread_mutex_lock(&ss->lock);
    assert_session_state(s, SESSION_RUNNING, SESSION_ENDED);
    bool listed = s->state == SESSION_RUNNING;
    if (listed) { /* the interpreter died (or broke the protocol) on its own */
        char why[160];
        snprintf(why, sizeof(why), "its interpreter ended (%s%s%s)",
                 verdict_status_name(o.verdict.status), o.internal ? ": " : "",
                 o.internal ? o.internal : "");
        session_unlist(ss, s, why);
    }
    sbx_error_set(err, SBX_ERR_GONE, "SESSION_ENDED", NULL, "session %s has ended: %s", id,
                  s->end_reason[0] ? s->end_reason : "it ended");
    pthread_mutex_unlock(&ss->lock);
    pthread_mutex_unlock(&s->exec_lock);
    if (listed) {
        log_info("session %s ended: %s", s->id, verdict_status_name(o.verdict.status));
        session_end(s); /* the table's reference */
    }
    exec_outcome_done(&o);
    session_unref(s);
    return 0;
}

int sessions_send(struct sessions *ss, const char *id, const json_t *msg)
{
    struct session *s = sessions_lookup(ss, id);
    if (!s)
        return -ENOENT;
    int r = s->agent ? session_send(s, msg) : -EINVAL;
    session_unref(s);
    return r;
}
