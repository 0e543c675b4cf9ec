// SPDX-License-Identifier: MIT
/*
 * process — envd's Connect RPCs (spec/envd/filesystem/filesystem.proto and
 * spec/envd/process/process.proto of e2b-dev/E2B), in the JSON encoding:
 *   filesystem.Filesystem/Stat, ListDir (depth), MakeDir, Move, Remove     unary
 *   process.Process/List, SendSignal, SendInput, CloseStdin                unary
 *   process.Process/Start, Connect                                         server-streamed
 * Each becomes an op of the sandbox's agent (runtime/sandboxd_runtime/e2b.py), which does it
 * inside the jail; what it answers is rebuilt here from the members the protos define.
 * Start streams {"event": {"start": {pid}}}, then {"event": {"data": {"stdout"|"stderr":
 * base64}}} as the command writes, and {"event": {"end": {exitCode, exited, status, error?}}},
 * with {"event": {"keepalive": {}}} every Keepalive-Ping-Interval seconds of silence (envd's
 * default 90); then the end-of-stream message. Connect-Timeout-Ms bounds the call: at the
 * deadline the command is killed (envd does the same) and the stream ends deadline_exceeded. A
 * client that goes away leaves the command running (envd's semantics); Connect reattaches.
 * WatchDir and the watchers, PTYs (Update) and StreamInput are unimplemented.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "e2b/connect.h"
#include "e2b/e2b_int.h"
#include "util/b64.h"
#include "util/clock.h"
#include "util/macros.h"

#define E2B_KEEPALIVE_DEFAULT_S 90 /* envd's, when the client asks for none */
#define E2B_KEEPALIVE_MAX_S     3600
#define E2B_STREAM_START_US     (30LL * 1000000) /* the agent answers a start at once */

/* ---- what the agent answers, rebuilt -------------------------------------------------------- */

static bool e2b_is_b64(const char *s)
{
    return s && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") ==
                    strlen(s);
}

/* An RFC 3339 UTC time as protobuf's JSON Timestamp reads it (the agent writes them). */
static bool e2b_is_timestamp(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    return n >= 20 && n <= 30 && s[n - 1] == 'Z' && strspn(s, "0123456789-T:.Z") == n;
}

static void e2b_copy_string(json_t *to, const json_t *from, const char *key)
{
    json_t *v = json_object_get(from, key);
    if (json_is_string(v))
        json_object_set(to, key, v);
}

/* An EntryInfo (filesystem.proto) from the agent's. */
static json_t *e2b_entry(const json_t *in)
{
    static const char *const types[] = {"FILE_TYPE_UNSPECIFIED", "FILE_TYPE_FILE",
                                        "FILE_TYPE_DIRECTORY", "FILE_TYPE_SYMLINK"};
    json_t *e = json_object();
    if (!e || !json_is_object(in))
        return e;
    static const char *const strings[] = {"name",  "path",  "permissions",
                                          "owner", "group", "symlinkTarget"};
    for (size_t i = 0; i < ARRAY_SIZE(strings); i++)
        e2b_copy_string(e, in, strings[i]);
    const char *type = json_string_value(json_object_get(in, "type"));
    for (size_t i = 0; type && i < ARRAY_SIZE(types); i++)
        if (strcmp(type, types[i]) == 0)
            json_object_set_new(e, "type", json_string(types[i]));
    json_t *size = json_object_get(in, "size"); /* int64: a string in proto3 JSON */
    if (json_is_string(size) &&
        strspn(json_string_value(size), "0123456789") == json_string_length(size) &&
        json_string_length(size) < 20)
        json_object_set(e, "size", size);
    json_t *mode = json_object_get(in, "mode");
    if (json_is_integer(mode) && json_integer_value(mode) >= 0 && json_integer_value(mode) <= 07777)
        json_object_set(e, "mode", mode);
    const char *t = json_string_value(json_object_get(in, "modifiedTime"));
    if (e2b_is_timestamp(t))
        json_object_set_new(e, "modifiedTime", json_string(t));
    return e;
}

/* {"exitCode", "exited", "status", "error"?} (process.proto EndEvent) from the agent's. */
static json_t *e2b_end_event(const json_t *in)
{
    json_t *code = json_object_get(in, "exitCode");
    json_t *end = json_pack("{s:I, s:b}", "exitCode",
                            (json_int_t)(json_is_integer(code) ? json_integer_value(code) : -1),
                            "exited", json_is_true(json_object_get(in, "exited")));
    if (end) {
        e2b_copy_string(end, in, "status");
        e2b_copy_string(end, in, "error");
    }
    return end;
}

/* ---- requests ------------------------------------------------------------------------------ */

/* A uint32 of proto3 JSON: a number, or a string of digits. -1 when it is neither. */
static int64_t e2b_uint32(const json_t *v)
{
    if (json_is_integer(v))
        return json_integer_value(v) >= 0 && json_integer_value(v) <= UINT32_MAX
                   ? json_integer_value(v)
                   : -1;
    const char *s = json_string_value(v);
    if (!s || !*s || strlen(s) > 10 || strspn(s, "0123456789") != strlen(s))
        return -1;
    long long n = strtoll(s, NULL, 10);
    return n <= UINT32_MAX ? n : -1;
}

/* The string member key of msg into op (absent: "", proto3's default); false when mistyped. */
static bool e2b_take_string(json_t *op, const json_t *msg, const char *key)
{
    json_t *v = json_object_get(msg, key);
    if (v && !json_is_string(v) && !json_is_null(v))
        return false;
    return json_object_set_new(op, key,
                               json_string(json_is_string(v) ? json_string_value(v) : "")) == 0;
}

/* A ProcessSelector {"pid": n} | {"tag": s} into op. */
static bool e2b_selector(const json_t *msg, json_t *op)
{
    json_t *sel = json_object_get(msg, "process");
    json_t *pid = json_object_get(sel, "pid"), *tag = json_object_get(sel, "tag");
    if (pid) {
        int64_t p = e2b_uint32(pid);
        return p > 0 && json_object_set_new(op, "pid", json_integer(p)) == 0;
    }
    return json_is_string(tag) && json_object_set(op, "tag", tag) == 0;
}

/* The user of the call (Authorization: Basic base64("user:")), as envd takes it: "user" and
 * "root" are the sandbox's one user; another name is unauthenticated. */
static bool e2b_call_user_ok(const struct http_request *req, struct sbx_error *err)
{
    const char *auth = http_header(req, "Authorization");
    if (!auth || strncasecmp(auth, "Basic ", 6) != 0)
        return true;
    char *raw = NULL;
    size_t len = 0;
    bool ok = b64_decode(auth + 6, strlen(auth + 6), &raw, &len) == 0 &&
              ((len == 5 && memcmp(raw, "user:", 5) == 0) ||
               (len == 5 && memcmp(raw, "root:", 5) == 0) || (len == 1 && raw[0] == ':'));
    free(raw);
    if (!ok)
        sbx_error_set(err, SBX_ERR_INVALID, "unauthenticated", NULL,
                      "invalid user: the sandbox has the users 'user' and 'root' (both its one "
                      "unprivileged user)");
    return ok;
}

static void e2b_unary_reply(struct http_reply *reply, json_t *answer)
{
    if (!answer) {
        e2b_reply_fail(reply, E2B_SURFACE_CONNECT, SBX_ERR_INTERNAL, "internal", "out of memory");
        return;
    }
    reply->status = 200;
    reply->body = answer;
}

/* ---- unary calls --------------------------------------------------------------------------- */

/* The unary methods and the agent's op for each. */
static const struct {
    const char *path;
    const char *op;
} e2b_unary_ops[] = {
    {"/filesystem.Filesystem/Stat", "fs.stat"},
    {"/filesystem.Filesystem/ListDir", "fs.list"},
    {"/filesystem.Filesystem/MakeDir", "fs.mkdir"},
    {"/filesystem.Filesystem/Move", "fs.move"},
    {"/filesystem.Filesystem/Remove", "fs.remove"},
    {"/process.Process/List", "proc.list"},
    {"/process.Process/SendSignal", "proc.signal"},
    {"/process.Process/SendInput", "proc.input"},
    {"/process.Process/CloseStdin", "proc.closeStdin"},
};

/* The members of op for the request msg of the agent's op name; false when msg is malformed
 * (err filled when there is more to say). */
static bool e2b_unary_args(const char *name, const json_t *msg, json_t *op, struct sbx_error *err)
{
    if (strcmp(name, "fs.stat") == 0 || strcmp(name, "fs.mkdir") == 0 ||
        strcmp(name, "fs.remove") == 0)
        return e2b_take_string(op, msg, "path");
    if (strcmp(name, "fs.list") == 0) {
        json_t *depth = json_object_get(msg, "depth");
        int64_t d = depth ? e2b_uint32(depth) : 0;
        return e2b_take_string(op, msg, "path") && d >= 0 &&
               json_object_set_new(op, "depth", json_integer(d > 0 ? d : 1)) == 0;
    }
    if (strcmp(name, "fs.move") == 0)
        return e2b_take_string(op, msg, "source") && e2b_take_string(op, msg, "destination");
    if (strcmp(name, "proc.signal") == 0) {
        json_t *sig = json_object_get(msg, "signal");
        const char *s = json_string_value(sig);
        int64_t n = json_is_integer(sig) ? json_integer_value(sig) : -1;
        if (s && strcmp(s, "SIGNAL_SIGKILL") == 0)
            n = 9;
        else if (s && strcmp(s, "SIGNAL_SIGTERM") == 0)
            n = 15;
        return e2b_selector(msg, op) && (n == 9 || n == 15) &&
               json_object_set_new(op, "signal", json_integer(n)) == 0;
    }
    if (strcmp(name, "proc.input") == 0) {
        json_t *input = json_object_get(msg, "input");
        const char *data = json_string_value(json_object_get(input, "stdin"));
        if (json_object_get(input, "pty")) {
            sbx_error_set(err, SBX_ERR_INVALID, "unimplemented", NULL,
                          "sandboxd serves no pseudo-terminals");
            return false;
        }
        return e2b_selector(msg, op) && e2b_is_b64(data) &&
               json_object_set_new(op, "data", json_string(data)) == 0;
    }
    if (strcmp(name, "proc.closeStdin") == 0)
        return e2b_selector(msg, op);
    return true; /* proc.list */
}

static void e2b_unary(struct e2b_sandbox *sb, const char *path, json_t *msg,
                      struct http_reply *reply)
{
    struct sbx_error err = {0};
    const char *method = strrchr(path, '/') + 1, *name = NULL;
    for (size_t i = 0; i < ARRAY_SIZE(e2b_unary_ops); i++)
        if (strcmp(path, e2b_unary_ops[i].path) == 0)
            name = e2b_unary_ops[i].op;
    json_t *op = json_object();
    bool ok = op && name && e2b_unary_args(name, msg, op, &err);
    if (!ok || !name) {
        if (!err.message)
            sbx_error_set(&err, SBX_ERR_INVALID, name ? "invalid_argument" : "unimplemented", NULL,
                          name ? "the %s request is malformed (see spec/envd/*.proto)"
                               : "%s is not served by sandboxd (no directory watchers, "
                                 "pseudo-terminals or input streams)",
                          method);
        json_decref(op);
        e2b_reply_error(reply, E2B_SURFACE_CONNECT, &err);
        return;
    }
    json_object_set_new(op, "op", json_string(name));
    json_t *answer = NULL;
    int r = e2b_call_unary(sb, op, &answer, &err);
    json_decref(op);
    if (r < 0) {
        e2b_reply_error(reply, E2B_SURFACE_CONNECT, &err);
        return;
    }
    json_t *out = NULL;
    if (json_object_get(answer, "entry")) {
        out = json_pack("{s:o}", "entry", e2b_entry(json_object_get(answer, "entry")));
    } else if (strcmp(name, "fs.list") == 0) {
        json_t *entries = json_array();
        size_t i;
        json_t *v;
        json_array_foreach(json_object_get(answer, "entries"), i, v)
        {
            if (entries && json_array_append_new(entries, e2b_entry(v)) < 0) {
                json_decref(entries); /* a listing that leaves an entry out would lie */
                entries = NULL;
            }
        }
        out = json_pack("{s:o}", "entries", entries);
    } else if (strcmp(name, "proc.list") == 0) {
        json_t *procs = json_array();
        size_t i;
        json_t *v;
        json_array_foreach(json_object_get(answer, "processes"), i, v)
        {
            json_t *cfg = json_object_get(v, "config"), *c = json_object();
            e2b_copy_string(c, cfg, "cmd");
            e2b_copy_string(c, cfg, "cwd");
            json_t *args = json_object_get(cfg, "args"), *envs = json_object_get(cfg, "envs");
            json_object_set_new(c, "args",
                                json_is_array(args) ? json_deep_copy(args) : json_array());
            json_object_set_new(c, "envs",
                                json_is_object(envs) ? json_deep_copy(envs) : json_object());
            json_t *p = json_pack("{s:o, s:I}", "config", c, "pid",
                                  (json_int_t)e2b_uint32(json_object_get(v, "pid")));
            if (p)
                e2b_copy_string(p, v, "tag");
            if (json_array_append_new(procs, p) < 0) { /* takes p, also from a NULL procs */
                json_decref(procs);
                procs = NULL;
            }
        }
        out = json_pack("{s:o}", "processes", procs);
    } else {
        out = json_object();
    }
    json_decref(answer);
    e2b_unary_reply(reply, out);
}

/* ---- streams ------------------------------------------------------------------------------- */

struct e2b_pstream {
    struct e2b_sandbox *sb; /* a reference (e2b_sandbox_put) */
    struct e2b_call *call;
    int64_t pid;
    int64_t deadline_us;  /* 0: none */
    int64_t keepalive_us; /* silence between two events at most */
};

static int e2b_write_named(struct http_stream *st, const char *name, json_t *value)
{
    json_t *inner = json_object();
    if (!inner || !value || json_object_set_new(inner, name, value) < 0) {
        json_decref(inner);
        return -ENOMEM;
    }
    json_t *msg = json_pack("{s:o}", "event", inner);
    size_t n = 0;
    char *env = msg ? connect_envelope(0, msg, &n) : NULL;
    json_decref(msg);
    int r = env ? http_stream_write(st, env, n) : -ENOMEM;
    free(env);
    return r;
}

static void e2b_write_end(struct http_stream *st, struct sbx_error *err)
{
    size_t n = 0;
    char *env = connect_end_stream(err && err->message ? err : NULL, &n);
    if (env)
        (void)http_stream_write(st, env, n); /* a client gone by now misses nothing of use */
    free(env);
    if (err)
        sbx_error_clear(err);
}

static int e2b_pstream_run(void *userdata, struct http_stream *st)
{
    struct e2b_pstream *ps = userdata;
    struct sbx_error err = {0};
    if (e2b_write_named(st, "start", json_pack("{s:I}", "pid", (json_int_t)ps->pid)) < 0)
        return 0;
    int64_t quiet_since = clock_mono_us();
    for (;;) {
        int64_t wake = quiet_since + ps->keepalive_us;
        if (ps->deadline_us && ps->deadline_us < wake)
            wake = ps->deadline_us;
        json_t *msg = NULL;
        int r = e2b_call_next(ps->call, wake, &msg, &err);
        if (r == -ETIMEDOUT) {
            if (ps->deadline_us && clock_mono_us() >= ps->deadline_us) {
                sbx_error_set(&err, SBX_ERR_UNAVAILABLE, "deadline_exceeded", NULL,
                              "the command ran past its timeout (Connect-Timeout-Ms) and was "
                              "killed");
                break;
            }
            if (e2b_write_named(st, "keepalive", json_object()) < 0)
                return 0; /* the client is gone; the command runs on */
            quiet_since = clock_mono_us();
            continue;
        }
        if (r == -EPIPE) {
            char *why = err.message;
            err.message = NULL;
            sbx_error_set(&err, SBX_ERR_UNAVAILABLE, "unavailable", NULL,
                          "the sandbox ended while the command ran: %s", why ? why : "");
            free(why);
            break;
        }
        if (r < 0)
            break;
        json_t *end = json_object_get(msg, "end");
        const char *stream = json_string_value(json_object_get(msg, "stream"));
        const char *data = json_string_value(json_object_get(msg, "data"));
        int w = 0;
        if (json_is_object(end)) {
            w = e2b_write_named(st, "end", e2b_end_event(end));
            json_decref(msg);
            if (w == 0)
                e2b_write_end(st, NULL);
            return 0;
        }
        if (stream && (strcmp(stream, "stdout") == 0 || strcmp(stream, "stderr") == 0) &&
            e2b_is_b64(data))
            w = e2b_write_named(st, "data", json_pack("{s:s}", stream, data));
        json_decref(msg);
        if (w < 0)
            return 0;
        quiet_since = clock_mono_us();
    }
    e2b_write_end(st, &err);
    return 0;
}

static void e2b_pstream_free(void *userdata)
{
    struct e2b_pstream *ps = userdata;
    e2b_call_close(ps->call);
    e2b_sandbox_put(ps->sb);
    free(ps);
}

/* A header's whole number, 0 when absent or malformed. */
static int64_t e2b_header_number(const struct http_request *req, const char *name, int64_t max)
{
    const char *v = http_header(req, name);
    if (!v || !*v || strlen(v) > 10 || strspn(v, "0123456789") != strlen(v))
        return 0;
    long long n = strtoll(v, NULL, 10);
    return n > max ? max : n;
}

static void e2b_stream(struct e2b_sandbox *sb, const struct http_request *req, const char *method,
                       json_t *msg, struct http_reply *reply)
{
    struct sbx_error err = {0};
    bool start = strcmp(method, "Start") == 0;
    json_t *op = json_object();
    int64_t timeout_ms = e2b_header_number(req, "Connect-Timeout-Ms", 9999999999LL);
    bool ok = op != NULL;
    if (start) {
        json_t *proc = json_object_get(msg, "process");
        json_t *args = json_object_get(proc, "args"), *envs = json_object_get(proc, "envs");
        json_t *stdin_ = json_object_get(msg, "stdin"), *tag = json_object_get(msg, "tag");
        if (json_object_get(msg, "pty") && !json_is_null(json_object_get(msg, "pty"))) {
            sbx_error_set(&err, SBX_ERR_INVALID, "unimplemented", NULL,
                          "sandboxd serves no pseudo-terminals (Sandbox.pty); run commands with "
                          "commands.run");
            ok = false;
        }
        ok = ok && json_is_object(proc) && json_is_string(json_object_get(proc, "cmd")) &&
             (!args || json_is_array(args)) && (!envs || json_is_object(envs)) &&
             (!stdin_ || json_is_boolean(stdin_)) && (!tag || json_is_string(tag));
        size_t i;
        json_t *v;
        json_array_foreach(args, i, v) ok = ok && json_is_string(v);
        const char *k;
        json_object_foreach(envs, k, v) ok = ok && json_is_string(v);
        if (ok) {
            json_object_set(op, "cmd", json_object_get(proc, "cmd"));
            json_object_set_new(op, "args", args ? json_deep_copy(args) : json_array());
            json_object_set_new(op, "envs", envs ? json_deep_copy(envs) : json_object());
            ok = e2b_take_string(op, proc, "cwd");
            json_object_set_new(op, "stdin", json_boolean(json_is_true(stdin_)));
            if (tag)
                json_object_set(op, "tag", tag);
            if (timeout_ms > 0)
                json_object_set_new(op, "timeoutMs", json_integer(timeout_ms));
            json_object_set_new(op, "op", json_string("proc.start"));
        }
    } else {
        ok = ok && e2b_selector(msg, op) &&
             json_object_set_new(op, "op", json_string("proc.connect")) == 0;
    }
    if (!ok) {
        if (!err.message)
            sbx_error_set(&err, SBX_ERR_INVALID, "invalid_argument", NULL,
                          "the %s request is malformed (see spec/envd/process/process.proto)",
                          method);
        json_decref(op);
        e2b_stream_error(reply, &err);
        return;
    }
    struct e2b_call *call = e2b_call_open(sb);
    json_t *first = NULL;
    int r = call ? e2b_call_send(call, op, &err) : -ENOMEM;
    json_decref(op);
    if (r == 0)
        r = e2b_call_next(call, clock_mono_us() + E2B_STREAM_START_US, &first, &err);
    json_t *pid = json_object_get(json_object_get(first, "start"), "pid");
    if (r == 0 && !json_is_integer(pid)) {
        json_t *error = json_object_get(first, "error");
        if (json_is_object(error))
            e2b_agent_error(error, &err);
        else
            sbx_error_set(&err, SBX_ERR_INTERNAL, "internal", NULL,
                          "the sandbox answered something else than asked");
        r = -EPROTO;
    } else if (r == -ETIMEDOUT) {
        sbx_error_set(&err, SBX_ERR_UNAVAILABLE, "deadline_exceeded", NULL,
                      "the sandbox did not start the command in time");
    } else if (r == -ENOMEM && !err.message) {
        sbx_error_set(&err, SBX_ERR_INTERNAL, "internal", NULL, "out of memory");
    }
    struct e2b_pstream *ps = r == 0 ? calloc(1, sizeof(*ps)) : NULL;
    if (!ps) {
        if (r == 0)
            sbx_error_set(&err, SBX_ERR_INTERNAL, "internal", NULL, "out of memory");
        json_decref(first);
        e2b_call_close(call);
        e2b_stream_error(reply, &err);
        return;
    }
    int64_t keepalive_s = e2b_header_number(req, "Keepalive-Ping-Interval", E2B_KEEPALIVE_MAX_S);
    pthread_mutex_lock(&sb->e->lock);
    sb->refs++; /* the stream's, put by e2b_pstream_free */
    sb->active++;
    pthread_mutex_unlock(&sb->e->lock);
    *ps = (struct e2b_pstream){
        .sb = sb,
        .call = call,
        .pid = json_integer_value(pid),
        .deadline_us = timeout_ms > 0 ? clock_mono_us() + timeout_ms * 1000 : 0,
        .keepalive_us = (keepalive_s > 0 ? keepalive_s : E2B_KEEPALIVE_DEFAULT_S) * 1000000,
    };
    json_decref(first);
    reply->status = 200;
    reply->content_type = "application/connect+json";
    reply->stream_fn = e2b_pstream_run;
    reply->stream_userdata = ps;
    reply->stream_free = e2b_pstream_free;
}

void e2b_process_route(struct e2b_sandbox *sb, const struct http_request *req, const char *path,
                       struct http_reply *reply)
{
    const char *method = strrchr(path, '/') + 1;
    bool stream = strcmp(path, "/process.Process/Start") == 0 ||
                  strcmp(path, "/process.Process/Connect") == 0;
    struct sbx_error err = {0};
    if (strcmp(req->method, "POST") != 0) {
        e2b_reply_status(reply, E2B_SURFACE_CONNECT, 405, "Connect calls are POST requests");
        return;
    }
    if (strcmp(path, "/filesystem.Filesystem/WatchDir") == 0) {
        sbx_error_set(&err, SBX_ERR_INVALID, "unimplemented", NULL,
                      "sandboxd does not watch directories (WatchDir); list them instead");
        e2b_stream_error(reply, &err);
        return;
    }
    json_t *msg = e2b_connect_body(req, stream, reply);
    if (!msg)
        return;
    if (!e2b_call_user_ok(req, &err)) {
        if (stream)
            e2b_stream_error(reply, &err);
        else
            e2b_reply_error(reply, E2B_SURFACE_CONNECT, &err);
    } else if (stream) {
        e2b_stream(sb, req, method, msg, reply);
    } else {
        e2b_unary(sb, path, msg, reply);
    }
    json_decref(msg);
}
