// SPDX-License-Identifier: MIT
/*
 * compat — the run_python of `sandboxd mcp --compat
 * code-execution-mode`, the drop-in for users of the Python bridge
 * mcp-server-code-execution-mode: its arguments (code, servers, an integer
 * timeout in seconds, clamped to 1..the maximum; anything else ignored) and
 * its answers — a payload of status, summary, exitCode, servers, stdout and
 * stderr as lists of lines (blank and "()" lines dropped), error and
 * timeoutSeconds, empty fields left out — written as compact text (stdout,
 * then "stderr:", with "status:" and "exit:" lines first when they apply)
 * with a trimmed structuredContent, or as a TOON block with the whole
 * payload (MCP_BRIDGE_OUTPUT_MODE=toon). The code runs exactly as the native
 * run_python runs it (server_tools.c); only the words around it differ.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcpclient/registry.h"
#include "mcpserver/server_int.h"
#include "util/buf.h"
#include "util/fmt.h"
#include "util/jdump.h"
#include "util/toon.h"
#include "util/utf8.h"

#define COMPAT_TEXT_MAX (16u << 20)

static const char compat_instructions[] =
    "sandboxd runs Python in isolated sandboxes through one tool, run_python(code, servers, "
    "timeout). Variables persist between calls. To use the configured MCP servers from code, "
    "find them with runtime.discovered_servers() and runtime.search_tool_docs('...') after "
    "`from mcp import runtime`, pass their names in servers, and await mcp_<server>.<tool>(...).";

const char *srv_compat_instructions(const struct mcp_server *s)
{
    (void)s;
    return compat_instructions;
}

/* A stream as the lines upstream keeps: split at line ends, blank and "()" lines dropped. */
static json_t *compat_lines(const char *text)
{
    json_t *lines = json_array();
    for (const char *p = text; p && *p;) {
        size_t n = strcspn(p, "\r\n");
        size_t lead = 0, end = n;
        while (lead < n && strchr(" \t\f\v", p[lead]))
            lead++;
        while (end > lead && strchr(" \t\f\v", p[end - 1]))
            end--;
        bool noise = end == lead || (end - lead == 2 && memcmp(p + lead, "()", 2) == 0);
        if (!noise)
            json_array_append_new(lines, json_stringn(p, n));
        p += n;
        p += *p == '\r' && p[1] == '\n' ? 2 : *p ? 1 : 0;
    }
    return lines;
}

/* What an answer says, before it is written out. */
struct compat_answer {
    const char *status; /* success, error, timeout, validation_error */
    char *summary;
    json_int_t exit_code; /* -1: none */
    json_t *servers;      /* borrowed, may be NULL */
    const char *out, *err;
    char *error;
    json_int_t timeout_s; /* 0: none */
};

/* The payload, fields in upstream's order, empty ones left out. */
static json_t *compat_payload(const struct compat_answer *a)
{
    json_t *p = json_object();
    json_object_set_new(p, "status", json_string(a->status));
    json_object_set_new(p, "summary", json_string(a->summary ? a->summary : ""));
    if (a->exit_code >= 0)
        json_object_set_new(p, "exitCode", json_integer(a->exit_code));
    if (json_array_size(a->servers))
        json_object_set(p, "servers", a->servers);
    json_t *out = compat_lines(a->out), *err = compat_lines(a->err);
    if (strcmp(a->status, "success") == 0 && !json_array_size(out) && !json_array_size(err) &&
        a->summary && strcmp(a->summary, "Success") == 0)
        json_object_set_new(p, "summary", json_string("Success (no output)"));
    if (json_array_size(out))
        json_object_set(p, "stdout", out);
    if (json_array_size(err))
        json_object_set(p, "stderr", err);
    json_decref(out);
    json_decref(err);
    if (a->error && *a->error)
        json_object_set_new(p, "error", json_string(a->error));
    if (a->timeout_s)
        json_object_set_new(p, "timeoutSeconds", json_integer(a->timeout_s));
    if (!json_string_length(json_object_get(p, "summary")))
        json_object_del(p, "summary");
    return p;
}

static void compat_join(struct buf *b, json_t *lines)
{
    size_t i;
    json_t *l;
    json_array_foreach(lines, i, l)
    {
        (void)buf_printf(b, "%s%s", i ? "\n" : "", json_string_value(l));
    }
}

/* The compact text: stdout, "stderr:" and its lines, the summary when nothing else was
 * said, "error:" unless the streams already tell, "exit:" and "status:" lines in front. */
static char *compat_text(json_t *p)
{
    const char *status = json_string_value(json_object_get(p, "status"));
    json_t *out = json_object_get(p, "stdout"), *err = json_object_get(p, "stderr");
    const char *summary = json_string_value(json_object_get(p, "summary"));
    const char *error = json_string_value(json_object_get(p, "error"));
    json_t *exit = json_object_get(p, "exitCode");
    struct buf body, b;
    buf_init(&body, COMPAT_TEXT_MAX);
    buf_init(&b, COMPAT_TEXT_MAX);
    compat_join(&body, out);
    if (json_array_size(err)) {
        (void)buf_appends(&body, body.len ? "\nstderr:\n" : "stderr:\n");
        compat_join(&body, err);
    }
    if (!body.len && summary)
        (void)buf_appends(&body, summary);
    if (error && (!body.len || strcmp(status, "error") != 0))
        (void)buf_printf(&body, "%serror: %s", body.len ? "\n" : "", error);
    if (strcmp(status, "success") != 0)
        (void)buf_printf(&b, "status: %s\n", status);
    if (exit && json_integer_value(exit) != 0)
        (void)buf_printf(&b, "exit: %" JSON_INTEGER_FORMAT "\n", json_integer_value(exit));
    if (body.len)
        (void)buf_append(&b, body.data, body.len);
    while (b.len && strchr(" \t\r\n", b.data[b.len - 1]))
        b.data[--b.len] = '\0';
    buf_free(&body);
    if (!b.len)
        (void)buf_appends(&b, status);
    return buf_take(&b, NULL);
}

/* The trimmed structuredContent of compact answers: what the text did not make obvious. */
static json_t *compat_trimmed(json_t *p)
{
    json_t *t = json_object();
    const char *status = json_string_value(json_object_get(p, "status"));
    bool success = strcmp(status, "success") == 0;
    json_t *exit = json_object_get(p, "exitCode");
    if (!success)
        json_object_set(t, "status", json_object_get(p, "status"));
    if (exit && json_integer_value(exit) != 0)
        json_object_set(t, "exitCode", exit);
    static const char *const keep[] = {"stdout", "stderr", "servers", "timeoutSeconds", "error"};
    for (size_t i = 0; i < ARRAY_SIZE(keep); i++)
        if (json_object_get(p, keep[i]))
            json_object_set(t, keep[i], json_object_get(p, keep[i]));
    json_t *summary = json_object_get(p, "summary");
    if (summary && (!success || !json_object_get(t, "stdout")))
        json_object_set(t, "summary", summary);
    return t;
}

static json_t *compat_reply(struct mcp_server_conn *c, const struct compat_answer *a)
{
    json_t *p = compat_payload(a);
    bool is_error = strcmp(a->status, "success") != 0;
    char *text = NULL;
    json_t *structured;
    if (c->srv->opt.compat_toon) {
        char *body = NULL;
        if (toon_encode(p, &body) == 0)
            text = fmt_str("```toon\n%s\n```", body);
        free(body);
        structured = json_incref(p);
    } else {
        text = compat_text(p);
        structured = compat_trimmed(p);
    }
    json_decref(p);
    json_t *r = srv_tool_result(c, text ? text : "error: out of memory", structured, is_error);
    free(text);
    return r;
}

/* A failure before anything ran; the summary is prefix and msg. */
static json_t *compat_fail(struct mcp_server_conn *c, const char *status, const char *prefix,
                           const char *msg, json_t *servers)
{
    struct compat_answer a = {.status = status,
                              .summary = fmt_str("%s%s", prefix, msg),
                              .exit_code = -1,
                              .servers = servers,
                              .error = strdup(msg)};
    json_t *r = compat_reply(c, &a);
    free(a.summary);
    free(a.error);
    return r;
}

/* The first name of servers that is not configured, or NULL. */
static const char *compat_unknown(struct mcp_server *s, json_t *servers)
{
    json_t *names = mcp_registry_names(s->registry);
    const char *unknown = NULL;
    size_t i, k;
    json_t *v, *n;
    json_array_foreach(servers, i, v)
    {
        bool found = false;
        json_array_foreach(names, k, n)
        {
            found = found || strcmp(json_string_value(n), json_string_value(v)) == 0;
        }
        if (!found) {
            unknown = json_string_value(v);
            break;
        }
    }
    json_decref(names);
    return unknown;
}

json_t *srv_compat_run(struct mcp_server_conn *c, json_t *args, json_t *token,
                       const struct mcp_server_out *out, struct srv_call *k)
{
    struct mcp_server *s = c->srv;
    json_t *code = json_object_get(args, "code");
    json_t *servers = json_object_get(args, "servers");
    json_t *timeout = json_object_get(args, "timeout");
    if (!json_is_string(code) || utf8_blank(json_string_value(code)))
        return compat_fail(c, "validation_error", "", "Missing 'code' argument", NULL);
    if (servers && !json_is_null(servers) && !json_is_array(servers))
        return compat_fail(c, "validation_error", "", "'servers' must be a list", NULL);
    size_t i;
    json_t *v;
    json_array_foreach(servers, i, v)
    {
        if (!json_is_string(v))
            return compat_fail(c, "validation_error", "",
                               "'servers' must be a list of server names", NULL);
    }
    json_int_t max_s = s->opt.max_timeout_ms / 1000 > 0 ? s->opt.max_timeout_ms / 1000 : 1;
    json_int_t secs = s->opt.default_timeout_ms / 1000 > 0 ? s->opt.default_timeout_ms / 1000 : 1;
    if (timeout && !json_is_null(timeout)) {
        if (!json_is_integer(timeout))
            return compat_fail(c, "validation_error", "", "'timeout' must be an integer", NULL);
        secs = json_integer_value(timeout);
    }
    secs = secs < 1 ? 1 : secs > max_s ? max_s : secs;
    const char *unknown = compat_unknown(s, servers);
    if (unknown) {
        char *msg = fmt_str("Unknown MCP server: %s", unknown);
        json_t *r =
            compat_fail(c, "error", "Sandbox error: ", msg ? msg : "unknown server", servers);
        free(msg);
        return r;
    }
    json_t *native =
        json_pack("{s:O, s:O*, s:I}", "code", code, "servers", servers, "timeout", secs);
    struct srv_run run;
    int r = native ? srv_run_code(c, native, token, out, k, &run) : -ENOMEM;
    json_decref(native);
    if (r == -ECANCELED)
        return NULL;
    if (r < 0)
        return compat_fail(c, "error", "Sandbox error: ", "out of memory", servers);
    if (run.error) {
        json_t *e = compat_fail(c, run.invalid ? "validation_error" : "error",
                                run.invalid ? "" : "Sandbox error: ", run.error, servers);
        srv_run_done(&run);
        return e;
    }
    const char *status = json_string_value(json_object_get(run.st, "status"));
    if (strcmp(status, "waiting_approval") == 0) {
        /* Upstream has no approvals: this is sandboxd's own answer, which says how to decide. */
        json_t *w = srv_run_reply(c, &run, false);
        srv_run_done(&run);
        return w;
    }
    json_t *error = json_object_get(run.st, "error");
    const char *etype = json_string_value(json_object_get(error, "type"));
    const char *emsg = json_string_value(json_object_get(error, "message"));
    const char *tb = json_string_value(json_object_get(error, "traceback"));
    struct compat_answer a = {.status = "error",
                              .exit_code = -1,
                              .servers = servers,
                              .out = json_string_value(json_object_get(run.st, "stdout"))};
    struct buf err;
    buf_init(&err, COMPAT_TEXT_MAX);
    (void)buf_appends(&err, json_string_value(json_object_get(run.st, "stderr")));
    if (strcmp(status, "ok") == 0) {
        a.status = "success";
        a.summary = strdup("Success");
        a.exit_code = 0;
    } else if (strcmp(status, "timeout") == 0) {
        a.status = "timeout";
        a.summary = fmt_str("Timeout: execution exceeded %" JSON_INTEGER_FORMAT "s", secs);
        a.error = fmt_str("Execution timed out after %" JSON_INTEGER_FORMAT " seconds%s", secs,
                          json_is_true(json_object_get(run.st, "sessionAlive"))
                              ? " (interrupted; the session and its variables survive)"
                              : "");
        a.timeout_s = secs;
    } else {
        /* An uncaught exception ends a Python process with status 1 and its traceback on
         * stderr; sys.exit(n) with n. Other failures (memory, output, a kill) have no code. */
        json_t *code_v = json_object_get(error, "exitCode");
        if (strcmp(status, "error") == 0)
            a.exit_code = json_is_integer(code_v) ? json_integer_value(code_v) : 1;
        if (tb && *tb)
            (void)buf_printf(&err, "%s%s", err.len && err.data[err.len - 1] != '\n' ? "\n" : "",
                             tb);
        a.error = etype ? fmt_str("%s: %s", etype, emsg ? emsg : "") : strdup(emsg ? emsg : status);
        a.summary = fmt_str("Sandbox error: %s", a.error ? a.error : status);
    }
    a.err = err.data ? err.data : "";
    json_t *reply = compat_reply(c, &a);
    buf_free(&err);
    free(a.summary);
    free(a.error);
    srv_run_done(&run);
    return reply;
}
