// SPDX-License-Identifier: MIT
/*
 * sandbox — the E2B sandboxes (see e2b_int.h): the table, each sandbox's agent worker, the
 * calls that wait for the agent, and the reaper of timeouts (a util/thread.h group of one).
 *
 * Every sandbox holds a worker of the agents' pool (util/workpool.h, as many workers as there
 * may be sandboxes) for its whole life: sessions_serve() carries its agent's frames and calls
 * e2b_on_frame() for each, which hands it to the call it is for. The job ends when the session
 * does (killed, timed out, shut down, its interpreter died); then the sandbox leaves the table
 * and every call waiting on it is woken to say so. The worker stays for the next sandbox.
 */
#include <errno.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "e2b/connect.h"
#include "e2b/e2b_int.h"
#include "session/session.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/thread.h"
#include "util/workpool.h"

/* ---- references ---------------------------------------------------------------------------- */

void e2b_sandbox_free(struct e2b_sandbox *sb)
{
    if (!sb)
        return;
    free(sb->template_id);
    json_decref(sb->metadata);
    json_decref(sb->network);
    sodium_memzero(sb->token, sizeof(sb->token));
    free(sb);
}

/* Drop one reference (e->lock held); true when it was the last (the caller frees, unlocked). */
static bool e2b_unref_locked(struct e2b_sandbox *sb)
{
    return --sb->refs == 0;
}

void e2b_sandbox_put(struct e2b_sandbox *sb)
{
    if (!sb)
        return;
    struct e2b *e = sb->e;
    pthread_mutex_lock(&e->lock);
    sb->active--;
    sb->last_used_us = clock_mono_us();
    bool last = e2b_unref_locked(sb);
    pthread_mutex_unlock(&e->lock);
    if (last)
        e2b_sandbox_free(sb);
}

struct e2b_sandbox *e2b_sandbox_get(struct e2b *e, const char *id, bool tenant_check,
                                    const struct tenant *tenant)
{
    struct e2b_sandbox *sb = NULL;
    pthread_mutex_lock(&e->lock);
    HASH_FIND_STR(e->table, id, sb);
    if (sb && tenant_check && tenant && sb->tenant != tenant)
        sb = NULL; /* another tenant's: it does not exist for this caller */
    if (sb) {
        sb->refs++;
        sb->active++;
        sb->last_used_us = clock_mono_us();
    }
    pthread_mutex_unlock(&e->lock);
    return sb;
}

void e2b_not_found(struct e2b *e, const char *id, struct sbx_error *err)
{
    char why[sizeof(e->ended[0].why)] = "";
    pthread_mutex_lock(&e->lock);
    for (size_t i = 0; i < E2B_ENDED_KEPT; i++)
        if (e->ended[i].id[0] && strcmp(e->ended[i].id, id) == 0)
            memcpy(why, e->ended[i].why, sizeof(why));
    pthread_mutex_unlock(&e->lock);
    if (why[0])
        sbx_error_set(err, SBX_ERR_NOT_FOUND, "not_found", NULL, "sandbox %.64s not found: %s", id,
                      why);
    else
        sbx_error_set(err, SBX_ERR_NOT_FOUND, "not_found", NULL, "sandbox %.64s not found", id);
}

bool e2b_token_ok(const struct e2b_sandbox *sb, const char *token)
{
    return tenant_token_matches(token, sb->token_hash);
}

/* ---- times --------------------------------------------------------------------------------- */

static int64_t e2b_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* RFC 3339 in UTC with milliseconds, as E2B's API writes its dates. */
static json_t *e2b_time_json(int64_t ms)
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    char out[40];
    gmtime_r(&s, &tm);
    size_t n = strftime(out, sizeof(out), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, sizeof(out) - n, ".%03dZ", (int)(ms % 1000));
    return json_string(out);
}

void e2b_sandbox_set_timeout(struct e2b_sandbox *sb, int64_t seconds, bool only_extend)
{
    struct e2b *e = sb->e;
    if (seconds > e->opt.max_timeout_s)
        seconds = e->opt.max_timeout_s;
    int64_t end = clock_mono_us() + seconds * 1000000;
    pthread_mutex_lock(&e->lock);
    if (!only_extend || end > sb->end_us)
        sb->end_us = end;
    pthread_cond_broadcast(&e->cond);
    pthread_mutex_unlock(&e->lock);
}

/* ---- descriptions -------------------------------------------------------------------------- */

json_t *e2b_sandbox_json(struct e2b_sandbox *sb)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:n}", "sandboxID", sb->id, "templateID",
                     sb->template_id, "alias", sb->template_id, "clientID", "sandboxd",
                     "envdVersion", E2B_ENVD_VERSION, "envdAccessToken", sb->token,
                     "trafficAccessToken", sb->token, "domain");
}

json_t *e2b_sandbox_detail(struct e2b_sandbox *sb, bool listed)
{
    struct e2b *e = sb->e;
    pthread_mutex_lock(&e->lock);
    int64_t left_ms = (sb->end_us - clock_mono_us()) / 1000;
    pthread_mutex_unlock(&e->lock);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    json_t *d =
        json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:s, s:I, s:I, s:I, s:O, s:s}", "sandboxID",
                  sb->id, "templateID", sb->template_id, "alias", sb->template_id, "clientID",
                  "sandboxd", "startedAt", e2b_time_json(sb->started_ms), "endAt",
                  e2b_time_json(e2b_wall_ms() + (left_ms > 0 ? left_ms : 0)), "envdVersion",
                  E2B_ENVD_VERSION, "cpuCount", (json_int_t)(cpus > 0 ? cpus : 1), "memoryMB",
                  (json_int_t)sb->memory_mb, "diskSizeMB", (json_int_t)(e->opt.file_max >> 20),
                  "metadata", sb->metadata, "state", "running");
    if (d && !listed) {
        json_object_set_new(d, "envdAccessToken", json_string(sb->token));
        json_object_set_new(d, "allowInternetAccess", json_boolean(sb->network != NULL));
        json_object_set_new(d, "domain", json_null());
        if (sb->network)
            json_object_set(d, "network", sb->network);
    }
    return d;
}

static int e2b_newest_first(const void *a, const void *b)
{
    const struct e2b_sandbox *x = *(struct e2b_sandbox *const *)a;
    const struct e2b_sandbox *y = *(struct e2b_sandbox *const *)b;
    return x->started_ms < y->started_ms ? 1 : x->started_ms > y->started_ms ? -1 : 0;
}

int e2b_sandbox_list(struct e2b *e, const struct tenant *tenant, struct e2b_sandbox ***ret,
                     size_t *ret_n)
{
    pthread_mutex_lock(&e->lock);
    size_t n = HASH_COUNT(e->table), k = 0;
    struct e2b_sandbox **v = calloc(n ? n : 1, sizeof(*v));
    if (!v) {
        pthread_mutex_unlock(&e->lock);
        return -ENOMEM;
    }
    for (struct e2b_sandbox *sb = e->table; sb; sb = sb->hh.next)
        if (!tenant || sb->tenant == tenant) {
            sb->refs++;
            sb->active++;
            v[k++] = sb;
        }
    pthread_mutex_unlock(&e->lock);
    qsort(v, k, sizeof(*v), e2b_newest_first);
    *ret = v;
    *ret_n = k;
    return 0;
}

/* ---- calls --------------------------------------------------------------------------------- */

struct e2b_call *e2b_call_open(struct e2b_sandbox *sb)
{
    struct e2b_call *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    clock_cond_init(&c->cond);
    c->sb = sb;
    pthread_mutex_lock(&sb->e->lock);
    c->rid = ++sb->next_rid;
    HASH_ADD(hh, sb->calls, rid, sizeof(c->rid), c);
    pthread_mutex_unlock(&sb->e->lock);
    return c;
}

void e2b_call_close(struct e2b_call *c)
{
    if (!c)
        return;
    struct e2b *e = c->sb->e;
    pthread_mutex_lock(&e->lock);
    HASH_DELETE(hh, c->sb->calls, c);
    pthread_mutex_unlock(&e->lock);
    for (struct e2b_event *ev = c->head, *next; ev; ev = next) {
        next = ev->next;
        json_decref(ev->msg);
        free(ev);
    }
    pthread_cond_destroy(&c->cond);
    free(c);
}

static void e2b_send_error(int r, const char *id, struct sbx_error *err)
{
    if (r == -ENOENT || r == -EPIPE)
        sbx_error_set(err, SBX_ERR_GONE, "not_found", NULL, "sandbox %s has ended", id);
    else if (r == -ENOBUFS)
        sbx_error_set(err, SBX_ERR_UNAVAILABLE, "unavailable", NULL,
                      "sandbox %s does not take requests fast enough; retry", id);
    else
        sbx_error_set(err, SBX_ERR_INTERNAL, "internal", NULL, "cannot reach sandbox %s: %s", id,
                      strerror(-r));
}

int e2b_call_send(struct e2b_call *c, json_t *op, struct sbx_error *err)
{
    int r = json_object_set_new(op, "type", json_string("e2b")) == 0 &&
                    json_object_set_new(op, "rid", json_integer((json_int_t)c->rid)) == 0
                ? sessions_send(c->sb->e->opt.sessions, c->sb->id, op)
                : -ENOMEM;
    if (r < 0)
        e2b_send_error(r, c->sb->id, err);
    return r;
}

void e2b_notify(struct e2b_sandbox *sb, json_t *op)
{
    if (op && json_object_set_new(op, "type", json_string("e2b")) == 0)
        (void)sessions_send(sb->e->opt.sessions, sb->id, op); /* gone: nothing to tell */
    json_decref(op);
}

int e2b_call_next(struct e2b_call *c, int64_t deadline_us, json_t **ret, struct sbx_error *err)
{
    struct e2b *e = c->sb->e;
    int r = 0;
    pthread_mutex_lock(&e->lock);
    for (;;) {
        struct e2b_event *ev = c->head;
        if (ev) {
            c->head = ev->next;
            if (!c->head)
                c->tail = NULL;
            c->bytes -= ev->bytes;
            *ret = ev->msg;
            free(ev);
            break;
        }
        if (c->overflow) {
            r = -ENOBUFS;
            break;
        }
        if (!c->sb->listed) {
            r = -EPIPE;
            break;
        }
        if (clock_mono_us() >= deadline_us) {
            r = -ETIMEDOUT;
            break;
        }
        struct timespec ts = clock_deadline_ts(deadline_us);
        pthread_cond_timedwait(&c->cond, &e->lock, &ts);
    }
    pthread_mutex_unlock(&e->lock);
    if (r == -EPIPE)
        e2b_not_found(e, c->sb->id, err);
    else if (r == -ENOBUFS)
        sbx_error_set(err, SBX_ERR_LIMIT, "resource_exhausted", NULL,
                      "the client read the output more slowly than sandbox %s wrote it: %u MiB "
                      "were waiting, and the rest was dropped",
                      c->sb->id, E2B_CALL_MAX >> 20);
    return r;
}

void e2b_agent_error(const json_t *error, struct sbx_error *err)
{
    const char *message = json_string_value(json_object_get(error, "message"));
    /* Only a name of connect.c's table travels on (static): the agent's string is freed. */
    const char *code = connect_code_name(json_string_value(json_object_get(error, "code")));
    enum sbx_errkind kind = SBX_ERR_INTERNAL;
    if (!code)
        code = "internal";
    (void)connect_code_lookup(code, &kind, NULL);
    sbx_error_set(err, kind, code, NULL, "%.2000s",
                  message ? message : "the sandbox refused the request");
}

int e2b_call_unary(struct e2b_sandbox *sb, json_t *op, json_t **ret_ok, struct sbx_error *err)
{
    struct e2b_call *c = e2b_call_open(sb);
    if (!c) {
        sbx_error_set(err, SBX_ERR_INTERNAL, "internal", NULL, "out of memory");
        return -ENOMEM;
    }
    int r = e2b_call_send(c, op, err);
    json_t *msg = NULL;
    if (r == 0)
        r = e2b_call_next(c, clock_mono_us() + E2B_UNARY_TIMEOUT_US, &msg, err);
    if (r == -ETIMEDOUT)
        sbx_error_set(err, SBX_ERR_UNAVAILABLE, "deadline_exceeded", NULL,
                      "sandbox %s did not answer within %lld s", sb->id,
                      E2B_UNARY_TIMEOUT_US / 1000000);
    e2b_call_close(c);
    if (r < 0)
        return r;
    json_t *ok = json_object_get(msg, "ok"), *error = json_object_get(msg, "error");
    if (json_is_object(ok)) {
        *ret_ok = json_incref(ok);
    } else {
        if (json_is_object(error))
            e2b_agent_error(error, err);
        else
            sbx_error_set(err, SBX_ERR_INTERNAL, "internal", NULL,
                          "sandbox %s answered something else than asked", sb->id);
        r = -EPROTO;
    }
    json_decref(msg);
    return r;
}

/* ---- the agent's frames -------------------------------------------------------------------- */

/* What an event weighs against E2B_CALL_MAX: its strings, two levels deep (output is base64 in
 * "data", or the strings of an "out" line). */
static size_t e2b_msg_bytes(const json_t *msg, int depth)
{
    size_t n = 16;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)msg, key, v)
    {
        if (json_is_string(v))
            n += json_string_length(v);
        else if (json_is_object(v) && depth > 0)
            n += e2b_msg_bytes(v, depth - 1);
        else
            n += 16;
    }
    return n;
}

static void e2b_push(struct e2b_call *c, json_t *msg, size_t bytes)
{
    if (c->overflow)
        return;
    struct e2b_event *ev = malloc(sizeof(*ev));
    if (!ev || c->bytes + bytes > E2B_CALL_MAX) {
        free(ev);
        c->overflow = true;
    } else {
        *ev = (struct e2b_event){.msg = json_incref(msg), .bytes = bytes};
        if (c->tail)
            c->tail->next = ev;
        else
            c->head = ev;
        c->tail = ev;
        c->bytes += bytes;
    }
    pthread_cond_signal(&c->cond);
}

/* On the sandbox's agent worker: never blocks (a slow reader only loses its own events). */
static void e2b_on_frame(void *userdata, json_t *msg)
{
    struct e2b_sandbox *sb = userdata;
    const char *type = json_string_value(json_object_get(msg, "type"));
    if (!type || strcmp(type, "e2b") != 0)
        return;
    json_t *rid = json_object_get(msg, "rid"), *pid = json_object_get(msg, "pid");
    size_t bytes = e2b_msg_bytes(msg, 2);
    pthread_mutex_lock(&sb->e->lock);
    if (json_is_integer(rid)) {
        uint64_t r = (uint64_t)json_integer_value(rid);
        struct e2b_call *c = NULL;
        HASH_FIND(hh, sb->calls, &r, sizeof(r), c);
        /* A process started (or connected to) for this call: its output, which may follow
         * in the very next frame, is the call's from now on. */
        json_t *started = json_object_get(json_object_get(msg, "start"), "pid");
        if (c && json_is_integer(started) && json_integer_value(started) > 0)
            c->pid = json_integer_value(started);
        if (c)
            e2b_push(c, msg, bytes);
    } else if (json_is_integer(pid)) {
        int64_t p = json_integer_value(pid);
        for (struct e2b_call *c = sb->calls; c; c = c->hh.next)
            if (c->pid == p && p > 0)
                e2b_push(c, msg, bytes);
    }
    pthread_mutex_unlock(&sb->e->lock);
}

static void e2b_on_output(void *userdata, int stream, const char *data, size_t len)
{
    struct e2b_sandbox *sb = userdata;
    /* The agent's own diagnostics (its programs have pipes of their own). */
    log_info("e2b sandbox %s: agent %s: %.*s", sb->id, stream == 2 ? "stderr" : "stdout",
             (int)(len > 2000 ? 2000 : len), data);
}

static void e2b_remember_end(struct e2b *e, const char *id, const char *why)
{
    struct e2b_ended *x = &e->ended[e->ended_next++ % E2B_ENDED_KEPT];
    snprintf(x->id, sizeof(x->id), "%s", id);
    snprintf(x->why, sizeof(x->why), "%s", why);
}

/* Take sb out of the table (e->lock held): from now on it is unknown, and the calls waiting on it
 * hear that it ended. The table's reference is dropped (never the last: the agent's worker holds
 * one until its session is gone). */
static void e2b_unlist_locked(struct e2b *e, struct e2b_sandbox *sb, const char *why)
{
    if (!sb->listed)
        return;
    HASH_DEL(e->table, sb);
    sb->listed = false;
    sb->refs--;
    e2b_remember_end(e, sb->id, why);
    for (struct e2b_call *c = sb->calls; c; c = c->hh.next)
        pthread_cond_broadcast(&c->cond);
}

void e2b_sandbox_end(struct e2b_sandbox *sb, const char *why)
{
    struct e2b *e = sb->e;
    pthread_mutex_lock(&e->lock);
    e2b_unlist_locked(e, sb, why);
    pthread_mutex_unlock(&e->lock);
    (void)sessions_end(e->opt.sessions, sb->id, why);
}

/* On a worker of e->agents, for the sandbox's whole life. */
static void e2b_agent_run(struct workpool_job *job)
{
    struct e2b_sandbox *sb = (struct e2b_sandbox *)job; /* its first member */
    struct e2b *e = sb->e;
    struct session_agent a = {.userdata = sb, .on_frame = e2b_on_frame, .on_output = e2b_on_output};
    struct sbx_error err = {0};
    (void)sessions_serve(e->opt.sessions, sb->id, &a, &err);
    const char *why = err.message ? strstr(err.message, "ended: ") : NULL;
    why = why ? why + 7 : "it ended";
    log_info("e2b sandbox %s ended: %s", sb->id, why);
    pthread_mutex_lock(&e->lock);
    e2b_unlist_locked(e, sb, why);
    bool last = e2b_unref_locked(sb); /* the agent's own */
    pthread_mutex_unlock(&e->lock);
    sbx_error_clear(&err);
    if (last)
        e2b_sandbox_free(sb);
}

int e2b_sandbox_start(struct e2b *e, struct e2b_sandbox *sb)
{
    pthread_mutex_lock(&e->lock);
    sb->e = e;
    sb->refs = 2; /* the table's and the agent's */
    sb->listed = true;
    sb->last_used_us = clock_mono_us();
    HASH_ADD_STR(e->table, id, sb);
    pthread_mutex_unlock(&e->lock);
    sb->agent_job = (struct workpool_job){.run = e2b_agent_run};
    int r = workpool_submit(e->agents, &e->agentq, &sb->agent_job);
    if (r == 0)
        return 0;
    pthread_mutex_lock(&e->lock);
    HASH_DEL(e->table, sb);
    sb->listed = false;
    sb->refs = 1;
    pthread_mutex_unlock(&e->lock);
    (void)sessions_end(e->opt.sessions, sb->id, "no thread could carry its agent's messages");
    return r;
}

/* ---- the reaper ---------------------------------------------------------------------------- */

#define E2B_WHY_TIMEOUT "its timeout ran out (E2B timeoutMs / setTimeout)"
#define E2B_WHY_IDLE    "it was idle longer than --session-idle-s"

static void *e2b_reaper(void *arg)
{
    struct e2b *e = arg;
    pthread_mutex_lock(&e->lock);
    /* Woken early when a timeout changes (e2b_sandbox_set_timeout). */
    while (thread_group_wait(&e->reaper, clock_mono_us() + 1000000)) {
        int64_t now = clock_mono_us();
        struct {
            char id[E2B_ID_MAX + 1];
            bool timeout;
        } due[32];
        size_t n = 0;
        for (struct e2b_sandbox *sb = e->table; sb && n < ARRAY_SIZE(due); sb = sb->hh.next) {
            bool timeout = now >= sb->end_us;
            bool idle = sb->active == 0 && now - sb->last_used_us > e->opt.idle_s * 1000000;
            if (timeout || idle) {
                memcpy(due[n].id, sb->id, sizeof(due[n].id));
                due[n++].timeout = timeout;
            }
        }
        for (size_t i = 0; i < n; i++) {
            struct e2b_sandbox *sb = NULL;
            HASH_FIND_STR(e->table, due[i].id, sb);
            if (sb)
                e2b_unlist_locked(e, sb, due[i].timeout ? E2B_WHY_TIMEOUT : E2B_WHY_IDLE);
        }
        pthread_mutex_unlock(&e->lock);
        for (size_t i = 0; i < n; i++)
            (void)sessions_end(e->opt.sessions, due[i].id,
                               due[i].timeout ? E2B_WHY_TIMEOUT : E2B_WHY_IDLE);
        pthread_mutex_lock(&e->lock);
    }
    pthread_mutex_unlock(&e->lock);
    return NULL;
}

int e2b_threads_start(struct e2b *e)
{
    /* A worker per sandbox that can live at once (each is a session): one that is still
     * ending holds its worker a moment longer, and a new sandbox's agent waits for it. */
    unsigned n = e->opt.max_sandboxes ? e->opt.max_sandboxes : 1;
    struct workpool_options wo = {
        .name = "e2b agents",
        .workers = n,
        .max_jobs = 2 * n,
        .queue_max = 2 * n,
        .queue_running = n,
    };
    int r = thread_group_init(&e->reaper, "e2b reaper", 1, &e->lock, &e->cond, -1);
    if (r == 0)
        r = workpool_new(&wo, &e->agents);
    if (r == 0)
        r = thread_group_start(&e->reaper, e2b_reaper, e);
    return r;
}

bool e2b_stopping(struct e2b *e)
{
    pthread_mutex_lock(&e->lock);
    bool stopping = thread_group_stopping(&e->reaper);
    pthread_mutex_unlock(&e->lock);
    return stopping;
}

void e2b_shutdown(struct e2b *e)
{
    if (e)
        thread_group_stop(&e->reaper);
}

void e2b_free(struct e2b *e)
{
    if (!e)
        return;
    e2b_shutdown(e);
    /* Their sessions ended (sessions_shutdown()): every agent returns, and the pool joins its
     * workers. */
    workpool_free(e->agents);
    thread_group_done(&e->reaper);
    pthread_cond_destroy(&e->cond);
    pthread_mutex_destroy(&e->lock);
    free(e);
}
