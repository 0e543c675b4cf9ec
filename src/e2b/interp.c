// SPDX-License-Identifier: MIT
/*
 * interp — E2B's code interpreter (template/server/main.py of e2b-dev/code-interpreter; what
 * @e2b/code-interpreter 2.8's sandbox.ts sends), port 49999 of a sandbox:
 *   POST   /execute {code, context_id?, language?, env_vars?}   application/x-ndjson: the
 *          context's lines (ndjson.h) as the code runs, {"type": "keepalive"} every 1 s of
 *          silence, then {"type": "end_of_execution"}
 *   POST   /contexts {language?, cwd?} -> {id, language, cwd}
 *   GET    /contexts                    -> [{id, language, cwd}]
 *   DELETE /contexts/{id}, POST /contexts/{id}/restart
 *   GET    /health                      -> "OK"
 * A context is a Python namespace in a process of its own in the sandbox (e2b_kernel.py);
 * executions of one context run one after the other, contexts side by side, and commands
 * beside them. Python only: another language is an error line of the execution, or a 400 for
 * a context. A client that goes away (or whose timeoutMs ran out) interrupts its execution,
 * as E2B's server does. Errors are text, as E2B's server answers them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "e2b/connect.h"
#include "e2b/e2b_int.h"
#include "e2b/ndjson.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/macros.h"

/* E2B's server writes one every 5 s (KEEPALIVE_INTERVAL) to notice a client that went away,
 * whose execution it then interrupts. Here a write fails only two writes after the client left
 * (the first reaches a closed connection, the second is taken into the stream's buffer before
 * the server notices): 1 s finds it within 3. */
#define E2B_NDJSON_KEEPALIVE_US (1LL * 1000000)
#define E2B_EXECUTE_START_US    (30LL * 1000000)

static void e2b_text_error(struct http_reply *reply, enum sbx_errkind kind, const char *msg)
{
    e2b_reply_fail(reply, E2B_SURFACE_INTERP, kind, NULL, "%s", msg);
}

/* E2B's normalisation (template/server/contexts.py): none is python, "js" javascript. */
static bool e2b_is_python(const char *language)
{
    if (!language || !*language)
        return true;
    while (*language == ' ')
        language++;
    return strncasecmp(language, "python", 6) == 0 &&
           strspn(language + 6, " ") == strlen(language + 6);
}

struct e2b_xstream {
    struct e2b_sandbox *sb;
    struct e2b_call *call;
    const char *language; /* another language than Python: only its error line (static) */
    bool counted;         /* a tenant's running execution */
};

/* Lines are gathered into one write when they come together (a quick execution's count,
 * result and end): a write is a wakeup of the HTTP thread and a TCP segment of its own. */
#define E2B_BATCH_MAX (64u << 10)
/* How long the count of executions, which comes first, waits for what follows it: an
 * execution that ends within this is answered in one write. */
#define E2B_HOLD_US 2000

static int e2b_add_line(struct buf *out, char *line, size_t n)
{
    int r = line ? buf_append(out, line, n) : -ENOMEM;
    free(line);
    return r;
}

static int e2b_add_simple(struct buf *out, const char *type)
{
    size_t n = 0;
    char *line = ndjson_simple(type, &n);
    return e2b_add_line(out, line, n);
}

static int e2b_add_error_line(struct buf *out, const char *name, const char *value)
{
    json_t *line = json_pack("{s:s, s:s, s:o, s:s}", "type", "error", "name", name, "value",
                             connect_text(value ? value : ""), "traceback", "");
    size_t n = 0;
    char *text = line ? ndjson_line(line, &n) : NULL;
    json_decref(line);
    return e2b_add_line(out, text, n);
}

static int e2b_flush(struct http_stream *st, struct buf *out)
{
    if (!out->len)
        return 0;
    int r = http_stream_write(st, out->data, out->len);
    buf_reset(out);
    return r;
}

/* The lines of the execution until its end; false when the client went away. */
static bool e2b_xstream_lines(struct e2b_xstream *xs, struct http_stream *st, struct buf *out)
{
    struct sbx_error err = {0};
    int64_t hold_until = 0; /* out holds only the count of executions, until then */
    for (;;) {
        int64_t now = clock_mono_us();
        int64_t deadline = !out->len    ? now + E2B_NDJSON_KEEPALIVE_US
                           : hold_until ? hold_until
                                        : now;
        json_t *msg = NULL;
        int r = e2b_call_next(xs->call, deadline, &msg, &err);
        if (r == -ETIMEDOUT) {
            hold_until = 0;
            /* Also how a client that went away is found out: the write fails. */
            if ((!out->len && e2b_add_simple(out, "keepalive") < 0) || e2b_flush(st, out) < 0)
                return false;
            continue;
        }
        if (r < 0) {
            (void)e2b_add_error_line(out, r == -EPIPE ? "SandboxEnded" : "OutputDropped",
                                     err.message);
            sbx_error_clear(&err);
            (void)e2b_add_simple(out, "end_of_execution");
            return e2b_flush(st, out) == 0;
        }
        if (json_is_true(json_object_get(msg, "done"))) {
            json_decref(msg);
            (void)e2b_add_simple(out, "end_of_execution");
            return e2b_flush(st, out) == 0;
        }
        const json_t *line = json_object_get(msg, "out");
        hold_until = !out->len && !strcmp(json_string_value(json_object_get(line, "type")) ?: "",
                                          "number_of_executions")
                         ? clock_mono_us() + E2B_HOLD_US
                         : 0;
        size_t n = 0;
        char *text = ndjson_line(line, &n);
        r = e2b_add_line(out, text, n);
        json_decref(msg);
        if (r < 0 || (out->len >= E2B_BATCH_MAX && e2b_flush(st, out) < 0))
            return false;
    }
}

static int e2b_xstream_run(void *userdata, struct http_stream *st)
{
    struct e2b_xstream *xs = userdata;
    _cleanup_(buf_free) struct buf out = {0};
    /* A batch is at most E2B_BATCH_MAX and one line, each line within what the call holds. */
    buf_init(&out, E2B_BATCH_MAX + 2 * E2B_CALL_MAX);
    if (xs->language) {
        (void)e2b_add_error_line(&out, "UnsupportedLanguage", xs->language);
        (void)e2b_add_simple(&out, "end_of_execution");
        (void)e2b_flush(st, &out);
        return 0;
    }
    if (!e2b_xstream_lines(xs, st, &out))
        /* The client is gone: stop the code, as E2B's server interrupts the kernel. */
        e2b_notify(xs->sb, json_pack("{s:s, s:I}", "op", "ci.interrupt", "target",
                                     (json_int_t)xs->call->rid));
    return 0;
}

static void e2b_xstream_free(void *userdata)
{
    struct e2b_xstream *xs = userdata;
    e2b_call_close(xs->call);
    if (xs->counted)
        tenant_run_end(xs->sb->tenant);
    e2b_sandbox_put(xs->sb);
    free(xs);
}

static void e2b_execute(struct e2b_sandbox *sb, const struct http_request *req,
                        struct http_reply *reply)
{
    json_t *body = e2b_json_body(req, E2B_SURFACE_INTERP, reply);
    if (!body)
        return;
    const char *code = json_string_value(json_object_get(body, "code"));
    json_t *context = json_object_get(body, "context_id");
    json_t *language = json_object_get(body, "language");
    json_t *envs = json_object_get(body, "env_vars");
    struct e2b_xstream *xs = NULL;
    struct e2b_call *call = NULL;
    json_t *op = NULL, *first = NULL;
    struct sbx_error err = {0};
    bool ok = code && (!context || json_is_null(context) || json_is_string(context)) &&
              (!language || json_is_null(language) || json_is_string(language)) &&
              (!envs || json_is_null(envs) || json_is_object(envs));
    const char *k;
    json_t *v;
    json_object_foreach(json_is_object(envs) ? envs : NULL, k, v) ok = ok && json_is_string(v);
    if (!ok) {
        e2b_text_error(reply, SBX_ERR_INVALID,
                       "the body is {\"code\": string, \"context_id\"?: string, \"language\"?: "
                       "string, \"env_vars\"?: {string: string}}");
        goto out;
    }
    if (json_is_string(context) && json_is_string(language)) {
        e2b_text_error(reply, SBX_ERR_INVALID,
                       "Only one of context_id or language can be provided");
        goto out;
    }
    if (!(xs = calloc(1, sizeof(*xs))))
        goto oom;
    if (json_is_string(language) && !e2b_is_python(json_string_value(language))) {
        /* An error of the execution, which the SDKs show as such (execution.error). */
        xs->language = "sandboxd's code interpreter runs Python only; this language is not "
                       "served (docs/E2B.md)";
    } else {
        if (!tenant_run_begin(sb->tenant, "e2b")) {
            e2b_reply_fail(reply, E2B_SURFACE_INTERP, SBX_ERR_LIMIT, NULL,
                           "tenant '%s' runs %u executions, its maxRunning; retry later",
                           tenant_name(sb->tenant), tenant_max_running(sb->tenant));
            goto out;
        }
        xs->counted = true;
        op = json_pack("{s:s, s:s, s:O?, s:o}", "op", "ci.execute", "code", code, "context",
                       json_is_string(context) ? context : NULL, "envs",
                       json_is_object(envs) ? json_incref(envs) : json_object());
        if (!op || !(call = e2b_call_open(sb)))
            goto oom;
        int r = e2b_call_send(call, op, &err);
        if (r == 0)
            r = e2b_call_next(call, clock_mono_us() + E2B_EXECUTE_START_US, &first, &err);
        if (r == 0 && !json_is_true(json_object_get(first, "accepted"))) {
            json_t *error = json_object_get(first, "error");
            if (json_is_object(error))
                e2b_agent_error(error, &err);
            else
                sbx_error_set(&err, SBX_ERR_INTERNAL, NULL, NULL,
                              "the sandbox answered something else than asked");
            r = -EPROTO;
        } else if (r == -ETIMEDOUT) {
            sbx_error_set(&err, SBX_ERR_UNAVAILABLE, NULL, NULL,
                          "the sandbox did not take the code in time");
        }
        if (r < 0) {
            e2b_reply_error(reply, E2B_SURFACE_INTERP, &err);
            goto out;
        }
    }
    pthread_mutex_lock(&sb->e->lock);
    sb->refs++; /* the stream's, put by e2b_xstream_free */
    sb->active++;
    pthread_mutex_unlock(&sb->e->lock);
    xs->sb = sb;
    xs->call = TAKE_PTR(call);
    reply->status = 200;
    reply->content_type = "application/x-ndjson";
    reply->stream_fn = e2b_xstream_run;
    reply->stream_userdata = TAKE_PTR(xs);
    reply->stream_free = e2b_xstream_free;
    goto out;
oom:
    e2b_text_error(reply, SBX_ERR_INTERNAL, "out of memory");
out:
    if (xs && xs->counted)
        tenant_run_end(sb->tenant);
    free(xs);
    e2b_call_close(call);
    json_decref(first);
    json_decref(op);
    json_decref(body);
}

/* A context {id, language, cwd} as E2B's Context model, from the agent's. */
static json_t *e2b_context(const json_t *in)
{
    const char *id = json_string_value(json_object_get(in, "id"));
    const char *language = json_string_value(json_object_get(in, "language"));
    const char *cwd = json_string_value(json_object_get(in, "cwd"));
    return json_pack("{s:s, s:s, s:s}", "id", id ? id : "", "language",
                     language ? language : "python", "cwd", cwd ? cwd : "/home/user");
}

static void e2b_contexts(struct e2b_sandbox *sb, const struct http_request *req, const char *rest,
                         struct http_reply *reply)
{
    bool get = strcmp(req->method, "GET") == 0, post = strcmp(req->method, "POST") == 0;
    bool del = strcmp(req->method, "DELETE") == 0;
    json_t *op = NULL, *answer = NULL;
    struct sbx_error err = {0};
    char id[64];
    size_t n = *rest == '/' ? strcspn(rest + 1, "/") : 0;
    const char *action = *rest == '/' ? rest + 1 + n : rest;
    if (n == 0 && *rest) {
        e2b_text_error(reply, SBX_ERR_NOT_FOUND, "Not Found");
        return;
    }
    /* Context ids are UUIDs: anything else names no context (and goes nowhere further). */
    if (n >= sizeof(id) || strspn(rest + 1, "0123456789abcdefABCDEF-") < n) {
        e2b_text_error(reply, SBX_ERR_NOT_FOUND, "Context not found");
        return;
    }
    memcpy(id, rest + 1, n);
    id[n] = '\0';
    if (!*rest && post) {
        json_t *body = e2b_json_body(req, E2B_SURFACE_INTERP, reply);
        if (!body)
            return;
        json_t *language = json_object_get(body, "language"), *cwd = json_object_get(body, "cwd");
        if ((language && !json_is_null(language) && !json_is_string(language)) ||
            (cwd && !json_is_null(cwd) && !json_is_string(cwd))) {
            e2b_text_error(reply, SBX_ERR_INVALID, "language and cwd are strings");
        } else if (json_is_string(language) && !e2b_is_python(json_string_value(language))) {
            e2b_text_error(reply, SBX_ERR_INVALID,
                           "sandboxd's code interpreter runs Python only; this language is not "
                           "served (docs/E2B.md)");
        } else {
            op = json_pack("{s:s, s:O?}", "op", "ci.create", "cwd",
                           json_is_string(cwd) ? cwd : NULL);
        }
        json_decref(body);
    } else if (!*rest && get) {
        op = json_pack("{s:s}", "op", "ci.list");
    } else if (n && !*action && del) {
        op = json_pack("{s:s, s:s}", "op", "ci.delete", "id", id);
    } else if (n && strcmp(action, "/restart") == 0 && post) {
        op = json_pack("{s:s, s:s}", "op", "ci.restart", "id", id);
    } else {
        e2b_reply_status(reply, E2B_SURFACE_INTERP, 405, "Method Not Allowed");
        return;
    }
    if (!op) {
        if (!reply->status)
            e2b_text_error(reply, SBX_ERR_INTERNAL, "out of memory");
        return;
    }
    if (e2b_call_unary(sb, op, &answer, &err) < 0) {
        e2b_reply_error(reply, E2B_SURFACE_INTERP, &err);
    } else if (!*rest && post) {
        e2b_reply_json(reply, E2B_SURFACE_INTERP, 200, e2b_context(answer));
    } else if (!*rest) {
        json_t *list = json_array();
        size_t i;
        json_t *v;
        json_array_foreach(json_object_get(answer, "contexts"), i, v)
        {
            if (list && json_array_append_new(list, e2b_context(v)) < 0) {
                json_decref(list);
                list = NULL;
            }
        }
        e2b_reply_json(reply, E2B_SURFACE_INTERP, 200, list);
    } else {
        e2b_reply_json(reply, E2B_SURFACE_INTERP, 200, json_null());
    }
    json_decref(answer);
    json_decref(op);
}

void e2b_interp_route(struct e2b_sandbox *sb, const struct http_request *req, const char *path,
                      struct http_reply *reply)
{
    if (strcmp(path, "/execute") == 0) {
        if (strcmp(req->method, "POST") == 0)
            e2b_execute(sb, req, reply);
        else
            e2b_reply_status(reply, E2B_SURFACE_INTERP, 405, "Method Not Allowed");
    } else if (strcmp(path, "/contexts") == 0 || strncmp(path, "/contexts/", 10) == 0) {
        e2b_contexts(sb, req, path + 9, reply);
    } else if (strcmp(path, "/health") == 0) {
        e2b_reply_json(reply, E2B_SURFACE_INTERP, 200, json_string("OK"));
    } else {
        e2b_text_error(reply, SBX_ERR_NOT_FOUND, "Not Found");
    }
}
