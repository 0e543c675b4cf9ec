// SPDX-License-Identifier: MIT
/*
 * tools — the tools of the MCP server that run code, called by the
 * tools/call dispatch of server.c: run_python in the sandbox sessions of a
 * connection (its stdout streamed as notifications/progress) and
 * reset_session; and the helpers every tool uses (results, errors, argument
 * checks). Arguments come from the client: each is checked, and a bad one is
 * answered with a tool error. list_servers and search_tool_docs are in
 * discovery.c, the connection's sandbox sessions in sandboxes.c.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "response/response.h"
#include "egress/policy.h"
#include "mcpclient/registry.h"
#include "mcpserver/server_int.h"
#include "session/session.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/macros.h"
#include "util/fmt.h"
#include "util/jdump.h"
#include "util/thread.h"
#include "util/utf8.h"

#define SRV_MAX_SERVERS  64     /* entries of run_python's servers */
#define SRV_PROGRESS_US  100000 /* progress notifications at most this often ... */
#define SRV_PROGRESS_MAX 16384  /* ... unless this much output is waiting */

/* ---- tool results ------------------------------------------------------------------------- */

/* The text content is built in capped buffers (struct buf); an append that would pass the cap
 * is dropped, which is why those results are cast to void: the text is a courtesy copy,
 * structuredContent carries everything. */

/* A CallToolResult with one text item; structured is stolen (may be NULL). */
json_t *srv_tool_result(const struct mcp_server_conn *c, const char *text, json_t *structured,
                        bool is_error)
{
    json_t *r = json_pack("{s:[{s:s, s:s}]}", "content", "type", "text", "text", text);
    if (r && is_error)
        json_object_set_new(r, "isError", json_true());
    if (r && structured && srv_since(c, SRV_V_2025_06_18)) /* structuredContent came with it */
        json_object_set_new(r, "structuredContent", json_incref(structured));
    json_decref(structured);
    return r;
}

json_t *srv_tool_error(const struct mcp_server_conn *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = fmt_va(fmt, ap);
    va_end(ap);
    json_t *r = srv_tool_result(c, msg ? msg : "error", NULL, true);
    free(msg);
    return r;
}

/* ---- progress: stdout as notifications/progress --------------------------------------------- */

static void srv_progress_flush(struct srv_progress *p, bool final)
{
    pthread_mutex_lock(&p->send_lock);
    pthread_mutex_lock(&p->lock);
    size_t n =
        p->pending.len -
        (final ? 0 : utf8_incomplete_tail((const unsigned char *)p->pending.data, p->pending.len));
    struct buf chunk;
    buf_init(&chunk, n + 1);
    if (n && buf_append(&chunk, p->pending.data, n) == 0)
        buf_consume(&p->pending, n);
    p->last_us = clock_mono_us();
    json_int_t count = chunk.len ? ++p->count : p->count;
    pthread_mutex_unlock(&p->lock);
    if (chunk.len) {
        /* Before 2025-03-26 progress had no message: a client still sees the call alive. */
        json_t *params = json_pack("{s:O, s:I, s:o*}", "progressToken", p->token, "progress", count,
                                   "message", p->message ? response_text(&chunk) : NULL);
        json_t *msg = params ? jsonrpc_notification_new("notifications/progress", params) : NULL;
        if (msg)
            p->out->notify(p->out->userdata, msg);
        json_decref(msg);
        json_decref(params);
    }
    buf_free(&chunk);
    pthread_mutex_unlock(&p->send_lock);
}

static void *srv_progress_thread(void *arg)
{
    struct srv_progress *p = arg;
    pthread_mutex_lock(&p->lock);
    while (!thread_group_stopping(&p->flusher)) {
        int64_t due = p->last_us + SRV_PROGRESS_US;
        if (p->pending.len && clock_mono_us() >= due) {
            pthread_mutex_unlock(&p->lock);
            srv_progress_flush(p, false);
            pthread_mutex_lock(&p->lock);
            continue;
        }
        (void)thread_group_wait(&p->flusher, p->pending.len ? due : 0); /* due > 0 */
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

void srv_progress_output(void *userdata, int stream, const char *data, size_t len)
{
    struct srv_progress *p = userdata;
    if (stream != 1)
        return; /* stderr comes with the result */
    pthread_mutex_lock(&p->lock);
    bool full = false;
    (void)buf_append_capped(&p->pending, data, len, &full);
    bool now = p->pending.len >= SRV_PROGRESS_MAX || full;
    pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->lock);
    if (now)
        srv_progress_flush(p, false);
}

void srv_progress_start(struct srv_progress *p, const struct mcp_server_out *out, json_t *token,
                        bool message)
{
    *p = (struct srv_progress){.out = out, .token = token, .message = message};
    pthread_mutex_init(&p->send_lock, NULL);
    pthread_mutex_init(&p->lock, NULL);
    clock_cond_init(&p->cond);
    buf_init(&p->pending, 1u << 20);
    /* Without the thread, output still goes out, only in bigger and later chunks. One thread:
     * the init cannot fail. */
    (void)thread_group_init(&p->flusher, "progress flusher", 1, &p->lock, &p->cond, -1);
    (void)thread_group_start(&p->flusher, srv_progress_thread, p);
}

void srv_progress_finish(struct srv_progress *p)
{
    thread_group_stop(&p->flusher); /* none started: nothing to join */
    thread_group_done(&p->flusher);
    srv_progress_flush(p, true);
    buf_free(&p->pending);
    pthread_cond_destroy(&p->cond);
    pthread_mutex_destroy(&p->lock);
    pthread_mutex_destroy(&p->send_lock);
}

/* ---- run_python ---------------------------------------------------------------------------- */

json_t *srv_check_args(const struct mcp_server_conn *c, const char *tool, json_t *args,
                       const char *const *allowed)
{
    const char *key;
    json_t *v;
    json_object_foreach(args, key, v)
    {
        bool ok = false;
        for (size_t i = 0; allowed[i] && !ok; i++)
            ok = strcmp(key, allowed[i]) == 0;
        if (ok)
            continue;
        struct buf names;
        buf_init(&names, 1024);
        for (size_t i = 0; allowed[i]; i++)
            (void)buf_printf(&names, "%s%s", i ? ", " : "", allowed[i]);
        json_t *r = srv_tool_error(c, "%s: unknown argument '%.64s' (arguments: %s)", tool, key,
                                   names.data ? names.data : "");
        buf_free(&names);
        return r;
    }
    return NULL;
}

static bool srv_session_name_ok(const char *n, size_t len)
{
    if (len == 0 || len > 64)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!isalnum((unsigned char)n[i]) && n[i] != '.' && n[i] != '_' && n[i] != '-')
            return false;
    return true;
}

/* The optional session_id argument: *ret_name is NULL when absent; why it is malformed
 * (caller frees), else NULL. */
static char *srv_session_id_arg(json_t *args, const char **ret_name)
{
    json_t *sid = json_object_get(args, "session_id");
    *ret_name = NULL;
    if (!sid || json_is_null(sid))
        return NULL;
    if (!json_is_string(sid) ||
        !srv_session_name_ok(json_string_value(sid), json_string_length(sid)))
        return strdup("session_id: 1 to 64 characters of A-Z, a-z, 0-9, '.', '_' and '-'");
    *ret_name = json_string_value(sid);
    return NULL;
}

static int srv_cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* servers as a sorted array without duplicates; NULL and *ret_error when invalid. */
static json_t *srv_servers_arg(struct mcp_server *s, json_t *v, char **ret_error)
{
    json_t *out = json_array();
    if (!v || json_is_null(v))
        return out;
    if (!json_is_array(v) || json_array_size(v) > SRV_MAX_SERVERS) {
        json_decref(out);
        *ret_error =
            fmt_str("servers: must be an array of at most %d server names", SRV_MAX_SERVERS);
        return NULL;
    }
    if ((*ret_error = mcp_registry_check_names(s->registry, v))) {
        json_decref(out);
        return NULL;
    }
    const char *names[SRV_MAX_SERVERS];
    size_t n = 0;
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e)
    {
        names[n++] = json_string_value(e);
    }
    qsort(names, n, sizeof(names[0]), srv_cmp_str);
    for (size_t k = 0; k < n; k++)
        if (k == 0 || strcmp(names[k], names[k - 1]) != 0)
            json_array_append_new(out, json_string(names[k]));
    return out;
}

/* run_python's network: {"allow": [patterns]} as a sorted array without duplicates in
 * *ret_allow (NULL when absent). NULL, or why it is malformed (caller frees). The patterns
 * themselves are checked against the ceiling when the session is made. */
static char *srv_network_arg(json_t *v, json_t **ret_allow)
{
    *ret_allow = NULL;
    if (!v || json_is_null(v))
        return NULL;
    json_t *allow = json_object_get(v, "allow");
    if (!json_is_object(v) || json_object_size(v) != 1 || !json_is_array(allow) ||
        json_array_size(allow) == 0 || json_array_size(allow) > EGRESS_POLICY_MAX)
        return fmt_str("network: {\"allow\": [1 to %d patterns]}", EGRESS_POLICY_MAX);
    const char *names[EGRESS_POLICY_MAX];
    size_t n = 0, i;
    json_t *e;
    json_array_foreach(allow, i, e)
    {
        if (!json_is_string(e))
            return fmt_str("network.allow[%zu]: must be a string", i);
        names[n++] = json_string_value(e);
    }
    qsort(names, n, sizeof(names[0]), srv_cmp_str);
    json_t *out = json_array();
    for (size_t k = 0; out && k < n; k++)
        if (k == 0 || strcmp(names[k], names[k - 1]) != 0)
            json_array_append_new(out, json_string(names[k]));
    *ret_allow = out;
    return out ? NULL : strdup("out of memory");
}

/* The compact text of a run_python answer; limit_ms is the time limit it ran with. */
static char *srv_run_text(json_t *st, int64_t limit_ms)
{
    struct buf b;
    buf_init(&b, 8u << 20);
    bool full = false;
    const char *status = json_string_value(json_object_get(st, "status"));
    json_t *out = json_object_get(st, "stdout"), *err = json_object_get(st, "stderr");
    json_t *error = json_object_get(st, "error");
    const char *result = json_string_value(json_object_get(st, "result"));
    if (json_string_length(out)) {
        (void)buf_append_capped(&b, json_string_value(out), json_string_length(out), &full);
        if (b.len && b.data[b.len - 1] != '\n')
            (void)buf_appends(&b, "\n");
    }
    if (json_string_length(err)) {
        (void)buf_appends(&b, "[stderr]\n");
        (void)buf_append_capped(&b, json_string_value(err), json_string_length(err), &full);
        if (b.len && b.data[b.len - 1] != '\n')
            (void)buf_appends(&b, "\n");
    }
    if (result)
        (void)buf_printf(&b, "[result] %s\n", result);
    const char *etype = json_string_value(json_object_get(error, "type"));
    const char *emsg = json_string_value(json_object_get(error, "message"));
    const char *tb = json_string_value(json_object_get(error, "traceback"));
    if (status && strcmp(status, "error") == 0) {
        if (tb && *tb)
            (void)buf_printf(&b, "[error]\n%s%s", tb, tb[strlen(tb) - 1] == '\n' ? "" : "\n");
        else
            (void)buf_printf(&b, "[error] %s: %s\n", etype ? etype : "Error", emsg ? emsg : "");
    } else if (status && strcmp(status, "timeout") == 0) {
        (void)buf_printf(&b, "[status] timeout after %g s: %s\n", (double)limit_ms / 1000.0,
                         emsg ? emsg : "the execution was interrupted");
    } else if (status && strcmp(status, "ok") != 0) {
        (void)buf_printf(&b, "[status] %s: %s\n", status, emsg ? emsg : "the execution failed");
    }
    size_t i;
    json_t *note;
    json_array_foreach(json_object_get(st, "artifacts"), i, note)
    {
        (void)buf_printf(&b, "[artifact] %s (%s, %lld bytes)\n",
                         json_string_value(json_object_get(note, "name")),
                         json_string_value(json_object_get(note, "mimeType")),
                         (long long)json_integer_value(json_object_get(note, "size")));
    }
    const char *aerr =
        json_string_value(json_object_get(json_object_get(st, "artifactsError"), "message"));
    if (aerr)
        (void)buf_printf(&b, "[artifacts] %s\n", aerr);
    json_array_foreach(json_object_get(st, "notes"), i, note)
    {
        (void)buf_printf(&b, "[note] %s\n", json_string_value(note));
    }
    if (!b.len)
        (void)buf_appends(&b, "[no output]\n");
    if (b.len && b.data[b.len - 1] == '\n')
        b.data[--b.len] = '\0';
    return buf_take(&b, NULL);
}

void srv_run_done(struct srv_run *r)
{
    json_decref(r->st);
    json_decref(r->result);
    json_decref(r->waiting);
    free(r->error);
    *r = (struct srv_run){0};
}

/* run_python's arguments, checked (srv_run_parse); what they own is freed by
 * srv_run_args_done(). */
struct srv_run_args {
    const char *code;
    const char *name;   /* session_id, or NULL */
    double secs;        /* timeout, 0 when absent */
    json_t *files;      /* checked [{path, content}], or NULL */
    json_t *servers;    /* sorted names */
    json_t *network;    /* sorted patterns, or NULL */
    int64_t timeout_ms; /* what the execution asks for (0: the sessions' default) */
};

static void srv_run_args_done(struct srv_run_args *a)
{
    json_decref(a->files);
    json_decref(a->servers);
    json_decref(a->network);
}

/* NULL with *a filled, or why an argument is bad (caller frees; a->... owns nothing then). */
static char *srv_run_parse(struct mcp_server *s, json_t *args, struct srv_run_args *a)
{
    *a = (struct srv_run_args){0};
    json_t *code = json_object_get(args, "code");
    if (!json_is_string(code))
        return strdup("code: required, a string of Python source");
    const char *bad = sessions_code_check(json_string_value(code), json_string_length(code));
    if (bad)
        return strdup(bad);
    a->code = json_string_value(code);
    char *why = srv_session_id_arg(args, &a->name);
    if (why)
        return why;
    json_t *t = json_object_get(args, "timeout");
    if (t && !json_is_null(t)) {
        a->secs = json_number_value(t);
        if (!json_is_number(t) || !isfinite(a->secs) || a->secs <= 0)
            return strdup("timeout: a number of seconds greater than 0");
    }
    json_t *fa = json_object_get(args, "files");
    if (fa && !json_is_null(fa) && !(a->files = srv_files_arg(fa, &why)))
        return why ? why : strdup("files: invalid");
    a->servers = srv_servers_arg(s, json_object_get(args, "servers"), &why);
    if (!a->servers)
        why = why ? why : strdup("servers: invalid");
    else
        why = srv_network_arg(json_object_get(args, "network"), &a->network);
    if (why)
        srv_run_args_done(a);
    return why;
}

/* The time limit a->secs asks for, clamped to the server's maximum (a note says so). */
static void srv_run_timeout(struct mcp_server *s, struct srv_run_args *a, json_t *notes)
{
    if (a->secs * 1000.0 > (double)s->opt.max_timeout_ms) {
        a->timeout_ms = s->opt.max_timeout_ms;
        srv_note(notes,
                 "timeout %g s exceeds this server's limit; clamped to %g s (the session "
                 "maximum, --session-max-timeout-ms)",
                 a->secs, (double)a->timeout_ms / 1000.0);
    } else if (a->secs > 0) {
        a->timeout_ms = (int64_t)(a->secs * 1000.0 + 0.5); /* no libm: rounding by hand */
        if (a->timeout_ms < 1)
            a->timeout_ms = 1;
    }
}

/* One run_python call as sessions_call() makes it: the hooks' userdata. */
struct srv_try {
    struct mcp_server_conn *c;
    struct srv_call *k;
    const struct srv_run_args *a;
    json_t *notes, *token;
    const struct mcp_server_out *out;
    json_t **waiting;            /* srv_exec_run()'s, when the code waits for a decision */
    char id[SESSION_ID_MAX + 1]; /* the session got last */
    char *label;                 /* how answers name it (caller frees); NULL: none got */
};

/* A reason of this front end's (-errno and why, freed) as the error sessions_call() passes on;
 * no code: only its message is shown (srv_run_code(), as a tool error). */
static int srv_try_fail(struct sbx_error *err, int r, char *why)
{
    enum sbx_errkind kind = r == -EINVAL      ? SBX_ERR_INVALID
                            : r == -EBUSY     ? SBX_ERR_LIMIT
                            : r == -ESHUTDOWN ? SBX_ERR_UNAVAILABLE
                                              : SBX_ERR_INTERNAL;
    sbx_error_set(err, kind, NULL, NULL, "%s", why ? why : strerror(-r));
    free(why);
    return r;
}

/* The connection's session for the call (found, loaded with the servers asked for, or
 * started: srv_sandbox_get()). */
static int srv_try_get(void *userdata, char ret_id[SESSION_ID_MAX + 1], struct sbx_error *err)
{
    struct srv_try *t = userdata;
    const struct srv_run_args *a = t->a;
    char *why = NULL;
    free(t->label);
    t->label = NULL;
    int r =
        srv_sandbox_get(t->c, a->name, a->servers, a->network, t->notes, t->id, &t->label, &why);
    if (r < 0)
        return srv_try_fail(err, r, why);
    memcpy(ret_id, t->id, sizeof(t->id));
    return 0;
}

/* The files put in; refused while an execution of the session waits for a decision (a second
 * one would wait behind it). */
static int srv_try_prepare(void *userdata, const char *id, struct sbx_error *err)
{
    struct srv_try *t = userdata;
    char *why = NULL;
    int r = srv_files_put(t->c->srv, id, t->a->files, &why);
    if (r == -ENOENT)
        return r; /* ended: sessions_call() gets another */
    if (r == 0 && srv_exec_waits(t->c, id)) {
        why = fmt_str("session '%s' has an execution whose tool call waits for approval; "
                      "decide it first with approve_call (the earlier answer names it), or "
                      "use another session_id",
                      t->label);
        r = -EBUSY;
    }
    return r < 0 ? srv_try_fail(err, r, why) : 0;
}

/* notifications/cancelled finds the session of the call by it. */
static bool srv_try_executing(void *userdata, const char *id)
{
    struct srv_try *t = userdata;
    return srv_call_executing(t->c, t->k, id);
}

/* On a thread of its own, so that calls waiting for approval reach this client (approvals.c). */
static int srv_try_execute(void *userdata, const char *id, const char *code, int64_t timeout_ms,
                           json_t **ret_result, struct sbx_error *err)
{
    struct srv_try *t = userdata;
    return srv_exec_run(t->c, t->k, id, t->label, code, timeout_ms, t->notes, t->token, t->out,
                        ret_result, t->waiting, err);
}

/* The session ended before the code could run in it (reaped, reset by a concurrent call):
 * forgotten, and the answer says so. */
static void srv_try_ended(void *userdata, const char *id)
{
    struct srv_try *t = userdata;
    if (t->label) /* none got: the next look finds it ended, says so and forgets it */
        srv_note_ended(t->notes, t->label);
    pthread_mutex_lock(&t->c->create_lock);
    srv_sandbox_forget(t->c, id);
    pthread_mutex_unlock(&t->c->create_lock);
}

int srv_run_code(struct mcp_server_conn *c, json_t *args, json_t *token,
                 const struct mcp_server_out *out, struct srv_call *k, struct srv_run *ret)
{
    *ret = (struct srv_run){0};
    struct srv_run_args a;
    char *why = srv_run_parse(c->srv, args, &a);
    if (why) {
        ret->error = why;
        ret->invalid = true;
        return 0;
    }
    json_t *notes = json_array();
    srv_run_timeout(c->srv, &a, notes);
    ret->timeout_ms = a.timeout_ms ? a.timeout_ms : c->srv->opt.default_timeout_ms;
    struct srv_try t = {.c = c,
                        .k = k,
                        .a = &a,
                        .notes = notes,
                        .token = token,
                        .out = out,
                        .waiting = &ret->waiting};
    const struct session_call call = {.userdata = &t,
                                      .get = srv_try_get,
                                      .prepare = srv_try_prepare,
                                      .executing = srv_try_executing,
                                      .execute = srv_try_execute,
                                      .ended = srv_try_ended};
    json_t *result = NULL;
    struct sbx_error err;
    int r = sessions_call(c->srv->sessions, &call, a.code, a.timeout_ms, NULL, &result, &err);
    srv_run_args_done(&a);
    if (r == -ENOENT) {
        /* Ended twice: say so rather than retry without end. */
        ret->error = fmt_str("session '%s' was ended twice before this call could run in it "
                             "(%s); call again",
                             t.label ? t.label : "?", err.message ? err.message : "it ended");
        r = ret->error ? 0 : -ENOMEM;
    } else if (r < 0 && r != -ECANCELED) {
        ret->error = strdup(err.message ? err.message : "the execution failed");
        r = ret->error ? 0 : -ENOMEM;
    } else if (r == SRV_EXEC_WAITING) {
        /* The code waits for a decision this client cannot be asked for: say which, and how. */
        ret->st = json_pack("{s:s, s:s, s:s, s:O, s:O}", "status", "waiting_approval", "session",
                            t.label, "sessionId", t.id, "approvals", ret->waiting, "notes", notes);
        r = ret->st ? 0 : -ENOMEM;
    } else if (r == 0) {
        r = srv_run_finish(c, k, t.id, t.label, notes, result, ret);
    }
    sbx_error_clear(&err);
    free(t.label);
    json_decref(notes);
    return r;
}

int srv_run_finish(struct mcp_server_conn *c, struct srv_call *k, const char *id, const char *label,
                   json_t *notes, json_t *result, struct srv_run *ret)
{
    bool alive = json_is_true(json_object_get(result, "sessionAlive"));
    /* A cancelled call is not answered: its session stays listed, so that the next call finds
     * it gone and says so. */
    if (!alive && !srv_call_cancelled(c, k)) {
        srv_note(notes,
                 "session '%s' ended with this execution: its variables are gone and the "
                 "next call starts a new one",
                 label);
        pthread_mutex_lock(&c->create_lock);
        srv_sandbox_forget(c, id);
        pthread_mutex_unlock(&c->create_lock);
    }
    if (json_is_true(json_object_get(result, "truncated")))
        srv_note(notes, "stdout/stderr were truncated at the server's output limit");
    json_t *res = json_object_get(result, "result");
    ret->st = json_pack(
        "{s:O, s:O, s:O, s:O, s:O, s:O, s:O, s:b, s:s, s:O, s:O}", "status",
        json_object_get(result, "status"), "stdout", json_object_get(result, "stdout"), "stderr",
        json_object_get(result, "stderr"), "error", json_object_get(result, "error"), "result",
        res ? res : json_null(), "durationMs", json_object_get(result, "durationMs"), "truncated",
        json_object_get(result, "truncated"), "sessionAlive", alive, "session", label, "mcpCalls",
        json_object_get(result, "mcpCalls"), "notes", notes);
    if (!ret->st) {
        json_decref(result);
        return -ENOMEM;
    }
    ret->result = result;
    return 0;
}

json_t *srv_run_python(struct mcp_server_conn *c, json_t *args, json_t *token,
                       const struct mcp_server_out *out, struct srv_call *k)
{
    struct mcp_server *s = c->srv;
    static const char *const allowed[] = {"code",   "servers", "timeout", "session_id",
                                          "output", "files",   "network", NULL};
    json_t *bad = srv_check_args(c, srv_call_tool(k), args, allowed);
    if (bad)
        return bad;
    bool as_json = s->opt.output_json;
    json_t *mode = json_object_get(args, "output");
    if (mode && !json_is_null(mode)) {
        const char *m = json_string_value(mode);
        if (!m || (strcmp(m, "text") != 0 && strcmp(m, "json") != 0))
            return srv_tool_error(c, "%s: output: \"text\" or \"json\"", srv_call_tool(k));
        as_json = strcmp(m, "json") == 0;
    }
    struct srv_run run;
    int r = srv_run_code(c, args, token, out, k, &run);
    if (r == -ECANCELED)
        return NULL;
    if (r < 0)
        return srv_tool_error(c, "%s: out of memory", srv_call_tool(k));
    if (run.error) {
        json_t *e = srv_tool_error(c, "%s: %s", srv_call_tool(k), run.error);
        srv_run_done(&run);
        return e;
    }
    json_t *reply = srv_run_reply(c, &run, as_json);
    srv_run_done(&run);
    return reply;
}

/* The text of an execution that waits for decisions: which calls, and how to decide them. */
static char *srv_waiting_text(struct mcp_server_conn *c, json_t *st)
{
    struct buf b;
    buf_init(&b, 1u << 20);
    const char *sid = json_string_value(json_object_get(st, "sessionId"));
    bool http = strcmp(c->srv->opt.transport ? c->srv->opt.transport : "", "stdio") != 0;
    (void)buf_printf(&b,
                     "[approval] the code in session '%s' waits for a person's decision; its "
                     "output comes with the answer that ends it. Nothing is sent until then.\n",
                     json_string_value(json_object_get(st, "session")));
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(st, "approvals"), i, a)
    {
        char *q = sessions_approval_prompt(a);
        const char *aid = json_string_value(json_object_get(a, "id"));
        (void)buf_printf(&b,
                         "- approval %s: %s\n  decide: approve_call {\"approval_id\": \"%s\", "
                         "\"approve\": true} (false refuses it)",
                         aid, q ? q : "?", aid);
        if (http) /* the HTTP API is on the same server: an operator may decide there */
            (void)buf_printf(&b, ", or POST /v1/sessions/%s/approvals/%s {\"approve\": true}", sid,
                             aid);
        (void)buf_appends(&b, "\n");
        free(q);
    }
    (void)buf_printf(&b, "[note] a call nobody decides is refused after %lld s",
                     (long long)c->srv->opt.approval_timeout_s);
    return buf_take(&b, NULL);
}

json_t *srv_run_reply(struct mcp_server_conn *c, struct srv_run *run, bool as_json)
{
    const char *status = json_string_value(json_object_get(run->st, "status"));
    if (status && strcmp(status, "waiting_approval") == 0) {
        char *text = as_json ? jdump(run->st, JSON_COMPACT, NULL) : srv_waiting_text(c, run->st);
        json_t *reply = srv_tool_result(c, text ? text : "", json_incref(run->st), false);
        free(text);
        return reply;
    }
    srv_artifacts_meta(run->st, run->result);
    char *text =
        as_json ? jdump(run->st, JSON_COMPACT, NULL) : srv_run_text(run->st, run->timeout_ms);
    json_t *reply =
        srv_tool_result(c, text ? text : "", json_incref(run->st), !status || strcmp(status, "ok"));
    free(text);
    if (reply)
        srv_artifacts_blocks(reply, run->result);
    return reply;
}

/* ---- reset_session ------------------------------------------------------------------------- */

json_t *srv_reset(struct mcp_server_conn *c, json_t *args, json_t *token,
                  const struct mcp_server_out *out, struct srv_call *k)
{
    (void)token, (void)out;
    static const char *const allowed[] = {"session_id", NULL};
    const char *name;
    json_t *bad = srv_check_args(c, srv_call_tool(k), args, allowed);
    if (bad)
        return bad;
    char *why = srv_session_id_arg(args, &name);
    if (why) {
        bad = srv_tool_error(c, "%s: %s", srv_call_tool(k), why);
        free(why);
        return bad;
    }
    struct srv_sandbox *gone = NULL;
    unsigned n = 0;
    pthread_mutex_lock(&c->create_lock);
    pthread_mutex_lock(&c->lock);
    struct srv_sandbox *b = c->sandboxes, *next;
    for (; b; b = next) {
        next = b->next;
        if (name ? b->name && strcmp(b->name, name) == 0 : b->name == NULL) {
            srv_sandbox_unlink(c, b);
            b->next = gone;
            gone = b;
            n++;
        }
    }
    pthread_mutex_unlock(&c->lock);
    while (gone) {
        b = gone;
        gone = b->next;
        /* -ENOENT: it had ended on its own */
        (void)sessions_end(c->srv->sessions, b->id, "it was reset (reset_session)");
        srv_sandbox_free(b);
    }
    pthread_mutex_unlock(&c->create_lock);
    if (name && !n)
        return srv_tool_error(c, "%s: this connection has no session named '%s'", srv_call_tool(k),
                              name);
    char text[200];
    if (name)
        snprintf(text, sizeof(text), "session '%s' was reset", name);
    else if (n)
        snprintf(text, sizeof(text), "the default session was reset (%u session%s ended)", n,
                 n == 1 ? "" : "s");
    else
        snprintf(text, sizeof(text), "there was no default session: nothing to reset");
    json_t *st = json_pack("{s:I}", "ended", (json_int_t)n);
    return st ? srv_tool_result(c, text, st, false) : srv_tool_error(c, "out of memory");
}
