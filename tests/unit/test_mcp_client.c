// SPDX-License-Identifier: MIT
/* Unit tests: the MCP client proper — JSON-RPC helpers, the stdio and Streamable HTTP
 * transports against fake servers written in Python (tests/unit/fixtures/), configuration
 * discovery, and the registry. The fixtures are found through MESON_SOURCE_ROOT when set, else
 * next to this source file (its compile-time path, resolved from the working directory or the
 * build directory). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "mcp/client/client.h"
#include "mcp/client/config.h"
#include "framework/httpc.h"
#include "proto/jsonrpc.h"
#include "mcp/client/registry.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/macros.h"

extern char **environ;

static char fixtures[PATH_MAX];
static char stdio_script[PATH_MAX];
static char http_url[128];
static pid_t http_pid;
static int http_stdin = -1;

/* ---- helpers ---- */

/* snprintf that fails the test on truncation (paths built here must fit). */
static void fmt(char *buf, size_t size, const char *f, ...) __attribute__((format(printf, 3, 4)));
static void fmt(char *buf, size_t size, const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    int n = vsnprintf(buf, size, f, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= size) {
        fprintf(stderr, "path too long\n");
        abort();
    }
}

static bool file_exists(const char *path)
{
    return access(path, R_OK) == 0;
}

static bool try_fixtures(const char *dir)
{
    char probe[PATH_MAX];
    fmt(probe, sizeof(probe), "%s/fake_stdio_server.py", dir);
    if (!file_exists(probe) || !realpath(dir, fixtures))
        return false;
    fmt(stdio_script, sizeof(stdio_script), "%s/fake_stdio_server.py", fixtures);
    return true;
}

static int find_fixtures(void)
{
    char dir[PATH_MAX];
    const char *root = getenv("MESON_SOURCE_ROOT");
    if (root) {
        fmt(dir, sizeof(dir), "%s/tests/unit/fixtures", root);
        if (try_fixtures(dir))
            return 0;
    }
    /* __FILE__ is the path the compiler was given: absolute, or relative to the build dir. */
    char src[PATH_MAX];
    fmt(src, sizeof(src), "%s", __FILE__);
    char *slash = strrchr(src, '/');
    if (slash)
        *slash = '\0';
    else
        fmt(src, sizeof(src), ".");
    fmt(dir, sizeof(dir), "%s/fixtures", src);
    if (try_fixtures(dir))
        return 0;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        for (int i = 0; i < 3; i++) { /* <build>/tests/unit/test_mcp_client → <build> */
            char *s = strrchr(exe, '/');
            if (s)
                *s = '\0';
        }
        fmt(dir, sizeof(dir), "%s/%s/fixtures", exe, src);
        if (try_fixtures(dir))
            return 0;
    }
    if (try_fixtures("tests/unit/fixtures"))
        return 0;
    fprintf(stderr, "cannot find tests/unit/fixtures; set MESON_SOURCE_ROOT\n");
    return -1;
}

static char **strv(const char *first, ...)
{
    char **v = calloc(16, sizeof(*v));
    va_list ap;
    va_start(ap, first);
    size_t n = 0;
    for (const char *s = first; s && n < 15; s = va_arg(ap, const char *))
        v[n++] = strdup(s);
    va_end(ap);
    return v;
}

static void cfg_stdio(struct mcp_server_config *c, const char *name, const char *mode)
{
    *c = (struct mcp_server_config){0};
    c->name = strdup(name);
    c->command = strdup("/usr/bin/python3");
    c->args = strv(stdio_script, mode, NULL);
}

static void cfg_http(struct mcp_server_config *c, const char *name)
{
    *c = (struct mcp_server_config){0};
    c->name = strdup(name);
    c->url = strdup(http_url);
    c->headers = strv("X-Test: yes", NULL);
}

static struct mcp_client *connect_ok(struct mcp_server_config *cfg)
{
    struct mcp_client *c = NULL;
    struct sbx_error err = {0};
    int r = mcp_client_connect(cfg, 10000, &c, &err);
    if (r < 0)
        fprintf(stderr, "connect: %s\n", err.message);
    assert_int_equal(r, 0);
    assert_non_null(c);
    sbx_error_clear(&err);
    return c;
}

static struct mcp_client *connect_stdio(const char *mode)
{
    struct mcp_server_config cfg;
    cfg_stdio(&cfg, "fake", mode);
    struct mcp_client *c = connect_ok(&cfg);
    mcp_server_config_done(&cfg);
    return c;
}

static struct mcp_client *connect_http(void)
{
    struct mcp_server_config cfg;
    cfg_http(&cfg, "web");
    struct mcp_client *c = connect_ok(&cfg);
    mcp_server_config_done(&cfg);
    return c;
}

/* Expect connect to fail with kind; returns the error message's presence. */
static void connect_fails(struct mcp_server_config *cfg, int64_t timeout_ms, enum sbx_upstream kind)
{
    struct mcp_client *c = NULL;
    struct sbx_error err = {0};
    assert_true(mcp_client_connect(cfg, timeout_ms, &c, &err) < 0);
    assert_null(c);
    assert_int_equal(err.upstream, kind);
    assert_non_null(err.message);
    sbx_error_clear(&err);
}

/* tools/call and the text of its first content item (caller frees), or NULL on error. */
static char *call_text(struct mcp_client *c, const char *tool, json_t *args, int64_t timeout_ms,
                       struct sbx_error *err)
{
    json_t *res = NULL;
    if (mcp_client_call_tool(c, tool, args, timeout_ms, &res, err) < 0)
        return NULL;
    const char *t = json_string_value(
        json_object_get(json_array_get(json_object_get(res, "content"), 0), "text"));
    char *copy = strdup(t ? t : "");
    json_decref(res);
    return copy;
}

/* The fake server's "stats" tool: its structuredContent (new reference). */
static json_t *stats(struct mcp_client *c)
{
    json_t *res = NULL;
    struct sbx_error err = {0};
    assert_int_equal(mcp_client_call_tool(c, "stats", NULL, 5000, &res, &err), 0);
    json_t *s = json_incref(json_object_get(res, "structuredContent"));
    json_decref(res);
    assert_non_null(s);
    return s;
}

static bool has_notification(json_t *st, const char *method)
{
    json_t *list = json_object_get(st, "notifications");
    for (size_t i = 0; i < json_array_size(list); i++)
        if (strcmp(json_string_value(json_object_get(json_array_get(list, i), "method")), method) ==
            0)
            return true;
    return false;
}

static int64_t ms_since(int64_t start_us)
{
    return (clock_mono_us() - start_us) / 1000;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Log lines written while capturing go to a temporary file instead of stderr. */
struct capture {
    int saved;
    int fd;
    enum log_level level;
};

static void capture_start(struct capture *cap)
{
    char path[] = "/tmp/mcp-log-XXXXXX";
    cap->fd = mkostemp(path, O_CLOEXEC);
    assert_true(cap->fd >= 0);
    unlink(path);
    cap->saved = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
    assert_true(cap->saved >= 0);
    dup2(cap->fd, STDERR_FILENO);
    cap->level = log_get_level();
    log_set_level(LOG_INFO);
}

/* Stop capturing; returns what was logged (caller frees). */
static char *capture_end(struct capture *cap)
{
    log_set_level(cap->level);
    dup2(cap->saved, STDERR_FILENO);
    close(cap->saved);
    off_t size = lseek(cap->fd, 0, SEEK_END);
    char *text = calloc(1, (size_t)size + 1);
    assert_int_equal(pread(cap->fd, text, (size_t)size, 0), size);
    close(cap->fd);
    return text;
}

struct notes {
    pthread_mutex_t lock;
    json_t *seen; /* [[method, params], ...] */
};

static void note_cb(void *userdata, const char *method, json_t *params)
{
    struct notes *n = userdata;
    pthread_mutex_lock(&n->lock);
    json_array_append_new(n->seen, json_pack("[s, O?]", method, params));
    pthread_mutex_unlock(&n->lock);
}

static bool noted(struct notes *n, const char *method)
{
    pthread_mutex_lock(&n->lock);
    bool found = false;
    for (size_t i = 0; i < json_array_size(n->seen) && !found; i++)
        found =
            strcmp(json_string_value(json_array_get(json_array_get(n->seen, i), 0)), method) == 0;
    pthread_mutex_unlock(&n->lock);
    return found;
}

/* ---- JSON-RPC ---- */

static void jsonrpc_builds_and_classifies(void **state)
{
    struct jsonrpc_message m;
    json_t *params = json_pack("{s:i}", "a", 1);
    json_t *req = jsonrpc_request_new_int(7, "tools/list", params);
    assert_int_equal(jsonrpc_classify(req, &m), JSONRPC_REQUEST);
    assert_string_equal(m.method, "tools/list");
    assert_int_equal(json_integer_value(m.id), 7);
    assert_ptr_equal(m.params, json_object_get(req, "params"));
    char *text = jsonrpc_format(req);
    assert_null(strchr(text, '\n'));
    json_t *back = NULL;
    assert_int_equal(jsonrpc_parse(text, strlen(text), &back), 0);
    assert_true(json_equal(back, req));
    json_decref(back);
    free(text);
    json_decref(req);

    json_t *sid = json_string("abc");
    req = jsonrpc_request_new(sid, "ping", NULL);
    assert_int_equal(jsonrpc_classify(req, &m), JSONRPC_REQUEST);
    assert_true(jsonrpc_id_equal(m.id, sid));
    assert_null(json_object_get(req, "params"));
    json_decref(req);

    json_t *note = jsonrpc_notification_new("notifications/initialized", NULL);
    assert_int_equal(jsonrpc_classify(note, &m), JSONRPC_NOTIFICATION);
    assert_null(m.id);
    json_decref(note);

    json_t *res = jsonrpc_result_new(sid, NULL);
    assert_int_equal(jsonrpc_classify(res, &m), JSONRPC_RESPONSE);
    assert_true(json_is_object(m.result) && json_object_size(m.result) == 0);
    json_decref(res);

    json_t *er = jsonrpc_error_new(NULL, JSONRPC_METHOD_NOT_FOUND, NULL, params);
    assert_int_equal(jsonrpc_classify(er, &m), JSONRPC_ERROR_RESPONSE);
    assert_true(json_is_null(m.id));
    assert_int_equal(m.error_code, -32601);
    assert_string_equal(m.error_message, "Method not found");
    assert_ptr_equal(m.error_data, params);
    json_decref(er);
    json_decref(params);

    assert_string_equal(jsonrpc_error_text(JSONRPC_PARSE_ERROR), "Parse error");
    assert_string_equal(jsonrpc_error_text(JSONRPC_INVALID_REQUEST), "Invalid Request");
    assert_string_equal(jsonrpc_error_text(JSONRPC_INVALID_PARAMS), "Invalid params");
    assert_string_equal(jsonrpc_error_text(JSONRPC_INTERNAL_ERROR), "Internal error");

    /* Integer and string ids never match each other. */
    json_t *one = json_integer(1), *sone = json_string("1");
    assert_false(jsonrpc_id_equal(one, sone));
    assert_true(jsonrpc_id_equal(one, one));
    assert_false(jsonrpc_id_equal(NULL, one));
    json_decref(one);
    json_decref(sone);
    json_decref(sid);

    static const char *const invalid[] = {
        "[1]",
        "{\"id\": 1, \"result\": {}}",                                     /* no jsonrpc */
        "{\"jsonrpc\": \"1.0\", \"id\": 1, \"result\": {}}",               /* wrong version */
        "{\"jsonrpc\": \"2.0\", \"id\": 1}",                               /* nothing */
        "{\"jsonrpc\": \"2.0\", \"id\": 1, \"result\": 1, \"error\": {}}", /* both */
        "{\"jsonrpc\": \"2.0\", \"id\": 1.5, \"result\": {}}",             /* fractional id */
        "{\"jsonrpc\": \"2.0\", \"id\": null, \"method\": \"x\"}",         /* null request id */
        "{\"jsonrpc\": \"2.0\", \"method\": 3}",
        "{\"jsonrpc\": \"2.0\", \"method\": \"x\", \"params\": 3}",
        "{\"jsonrpc\": \"2.0\", \"id\": 2, \"error\": {\"code\": \"x\", \"message\": \"m\"}}",
        "{\"jsonrpc\": \"2.0\", \"id\": 2, \"error\": {\"code\": 1}}",
    };
    for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
        json_t *v = NULL;
        assert_int_equal(jsonrpc_parse(invalid[i], strlen(invalid[i]), &v), 0);
        assert_int_equal(jsonrpc_classify(v, &m), JSONRPC_INVALID);
        assert_non_null(m.invalid);
        json_decref(v);
    }
    /* An invalid answer still exposes its id so the waiter can be failed. */
    json_t *v = NULL;
    assert_int_equal(jsonrpc_parse("{\"jsonrpc\":\"2.0\",\"id\":4}", 24, &v), 0);
    jsonrpc_classify(v, &m);
    assert_int_equal(json_integer_value(m.id), 4);
    json_decref(v);
    assert_int_equal(jsonrpc_parse("{nope", 5, &v), -EBADMSG);
    assert_string_equal(jsonrpc_kind_name(JSONRPC_ERROR_RESPONSE), "error response");
}

/* ---- stdio ---- */

static void stdio_handshake_and_paginated_tools(void **state)
{
    struct mcp_client *c = connect_stdio("normal");
    assert_true(mcp_client_alive(c));
    assert_string_equal(mcp_client_name(c), "fake");
    json_t *info = mcp_client_server_info(c);
    assert_string_equal(json_string_value(json_object_get(info, "protocolVersion")), "2025-11-25");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(info, "serverInfo"), "name")),
        "fake-stdio");
    assert_true(json_is_object(json_object_get(info, "capabilities")));
    assert_string_equal(json_string_value(json_object_get(info, "instructions")), "be nice");
    json_decref(info);
    /* tools/list_changed came before the initialize answer and was not lost. */
    assert_int_equal(mcp_client_tools_generation(c), 1);

    json_t *tools = NULL;
    struct sbx_error err = {0};
    assert_int_equal(mcp_client_list_tools(c, 5000, &tools, &err), 0);
    assert_int_equal(json_array_size(tools), 7);
    static const char *const names[] = {"alpha",   "beta", "gamma", "delta",
                                        "epsilon", "zeta", "eta"};
    for (size_t i = 0; i < 7; i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(tools, i), "name")),
                            names[i]);
    json_decref(tools);

    /* The server saw notifications/initialized, and the request API works for any method. */
    json_t *st = stats(c);
    assert_true(has_notification(st, "notifications/initialized"));
    assert_int_equal(json_integer_value(json_object_get(st, "tools_list")), 3);
    json_decref(st);
    json_t *res = NULL;
    assert_int_equal(mcp_client_request(c, "ping", NULL, 5000, &res, &err), 0);
    assert_true(json_is_object(res));
    json_decref(res);
    assert_int_equal(mcp_client_request(c, "resources/list", NULL, 5000, &res, &err), -EPROTO);
    assert_int_equal(err.upstream, SBX_UP_TOOL);
    assert_string_equal(err.upstream_code, "-32601");
    sbx_error_clear(&err);
    int64_t start = clock_mono_us();
    mcp_client_close(c);
    assert_true(ms_since(start) < 1500); /* it exits on stdin EOF */
}

static void stdio_tool_results_and_errors(void **state)
{
    struct mcp_client *c = connect_stdio("normal");
    struct sbx_error err = {0};
    json_t *args = json_pack("{s:s, s:i}", "msg", "hi", "n", 2);
    json_t *res = NULL;
    assert_int_equal(mcp_client_call_tool(c, "echo", args, 5000, &res, &err), 0);
    assert_true(json_equal(json_object_get(res, "structuredContent"), args));
    json_decref(res);
    json_decref(args);

    /* isError:true is a result, not a failure. */
    assert_int_equal(mcp_client_call_tool(c, "is_error", NULL, 5000, &res, &err), 0);
    assert_true(json_is_true(json_object_get(res, "isError")));
    json_decref(res);

    /* A JSON-RPC error: SBX_UP_TOOL with the numeric code and the server's message. */
    res = NULL;
    assert_int_equal(mcp_client_call_tool(c, "fail", NULL, 5000, &res, &err), -EPROTO);
    assert_null(res);
    assert_int_equal(err.upstream, SBX_UP_TOOL);
    assert_string_equal(err.upstream_code, "-32602");
    assert_string_equal(err.message, "bad arguments for fail");
    sbx_error_clear(&err);

    /* An answer with neither result nor error: protocol error, the connection survives. */
    assert_int_equal(mcp_client_call_tool(c, "bad_response", NULL, 5000, &res, &err), -EPROTO);
    assert_int_equal(err.upstream, SBX_UP_PROTOCOL);
    sbx_error_clear(&err);

    /* A garbage line on stdout is skipped; the answer after it arrives. */
    char *t = call_text(c, "garbage", NULL, 5000, &err);
    assert_string_equal(t, "after garbage");
    free(t);

    /* A batch (2025-03-26) is taken apart. */
    t = call_text(c, "batch", NULL, 5000, &err);
    assert_string_equal(t, "batched");
    free(t);
    assert_true(mcp_client_alive(c));
    mcp_client_close(c);
    mcp_client_close(NULL);
}

/* Found by fuzz_mcp_server: U+0000 is valid JSON, and an answer holding it ("\u0000") was
 * dropped as "not JSON", so the call waited until its timeout. Over stdio, over HTTP (a JSON
 * answer) and over SSE; the servers echo the arguments as structuredContent. */
static void answers_holding_nul_arrive(void **state)
{
    struct mcp_client *clients[] = {connect_stdio("normal"), connect_http()};
    const char *const tools[] = {"echo", "sse_echo"};
    json_t *args = json_pack("{s:s%}", "k", "a\0b", (size_t)3);
    for (size_t i = 0; i < 2; i++)
        for (size_t t = 0; t < (i ? 2u : 1u); t++) {
            struct sbx_error err = {0};
            json_t *res = NULL;
            if (mcp_client_call_tool(clients[i], tools[t], args, 20000, &res, &err) < 0)
                fail_msg("%s over %s: %s", tools[t], i ? "http" : "stdio",
                         err.message ? err.message : "?");
            assert_true(json_equal(json_object_get(res, "structuredContent"), args));
            json_decref(res);
        }
    json_decref(args);
    for (size_t i = 0; i < 2; i++)
        mcp_client_close(clients[i]);
}

static void stdio_notifications_and_server_requests(void **state)
{
    struct mcp_client *c = connect_stdio("normal");
    struct notes n = {.seen = json_array()};
    pthread_mutex_init(&n.lock, NULL);
    mcp_client_set_notify(c, note_cb, &n);
    struct sbx_error err = {0};
    char *t = call_text(c, "progress", NULL, 5000, &err);
    assert_string_equal(t, "done");
    free(t);
    /* Notifications are delivered in order, before the answer that follows them. */
    assert_true(noted(&n, "notifications/progress"));
    assert_true(noted(&n, "notifications/message"));

    /* The server pings us and asks for sampling: {} and -32601. */
    json_t *res = NULL;
    assert_int_equal(mcp_client_call_tool(c, "ping_me", NULL, 5000, &res, &err), 0);
    json_t *sc = json_object_get(res, "structuredContent");
    json_t *ping = json_object_get(sc, "srv-ping");
    assert_string_equal(json_string_value(json_object_get(ping, "id")), "srv-ping");
    assert_true(json_is_object(json_object_get(ping, "result")));
    assert_int_equal(json_object_size(json_object_get(ping, "result")), 0);
    json_t *sampling = json_object_get(sc, "77");
    assert_int_equal(json_integer_value(json_object_get(sampling, "id")), 77);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(sampling, "error"), "code")), -32601);
    json_decref(res);

    /* tools/list_changed bumps the generation and reaches the callback too. */
    uint64_t g = mcp_client_tools_generation(c);
    t = call_text(c, "change_tools", NULL, 5000, &err);
    free(t);
    assert_int_equal(mcp_client_tools_generation(c), g + 1);
    assert_true(noted(&n, "notifications/tools/list_changed"));

    mcp_client_set_notify(c, NULL, NULL);
    mcp_client_close(c);
    json_decref(n.seen);
    pthread_mutex_destroy(&n.lock);
}

static void stdio_timeout_cancels_and_drops_late_answer(void **state)
{
    struct mcp_client *c = connect_stdio("normal");
    struct sbx_error err = {0};
    json_t *res = NULL;
    int64_t start = clock_mono_us();
    assert_int_equal(mcp_client_call_tool(c, "slow", NULL, 300, &res, &err), -ETIMEDOUT);
    assert_int_equal(err.upstream, SBX_UP_TIMEOUT);
    assert_true(ms_since(start) >= 290);
    sbx_error_clear(&err);

    /* "late" answers after 400 ms, long after we gave up: the answer must be dropped and must
     * not be taken for the answer to a later request. */
    json_t *args = json_pack("{s:i}", "ms", 400);
    assert_int_equal(mcp_client_call_tool(c, "late", args, 100, &res, &err), -ETIMEDOUT);
    json_decref(args);
    sbx_error_clear(&err);
    sleep_ms(600);
    char *t = call_text(c, "echo", NULL, 5000, &err);
    assert_string_equal(t, "{}");
    free(t);

    /* notifications/cancelled reached the server for both, with the reason. */
    json_t *st = stats(c);
    json_t *list = json_object_get(st, "notifications");
    int cancelled = 0;
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *e = json_array_get(list, i);
        if (strcmp(json_string_value(json_object_get(e, "method")), "notifications/cancelled"))
            continue;
        json_t *p = json_object_get(e, "params");
        assert_true(json_is_integer(json_object_get(p, "requestId")));
        assert_string_equal(json_string_value(json_object_get(p, "reason")), "timeout");
        cancelled++;
    }
    assert_int_equal(cancelled, 2);
    json_decref(st);
    assert_true(mcp_client_alive(c));
    mcp_client_close(c);
}

struct slow_call {
    struct mcp_client *c;
    const char *tool;
    int64_t timeout_ms;
    int r;
    enum sbx_upstream kind;
    int64_t took_ms;
};

static void *slow_call_thread(void *arg)
{
    struct slow_call *s = arg;
    struct sbx_error err = {0};
    json_t *res = NULL;
    int64_t start = clock_mono_us();
    s->r = mcp_client_call_tool(s->c, s->tool, NULL, s->timeout_ms, &res, &err);
    s->took_ms = ms_since(start);
    s->kind = err.upstream;
    json_decref(res);
    sbx_error_clear(&err);
    return NULL;
}

static void stdio_crash_fails_pending_at_once(void **state)
{
    struct mcp_client *c = connect_stdio("normal");
    struct slow_call waiting = {.c = c, .tool = "slow", .timeout_ms = 20000};
    pthread_t th;
    pthread_create(&th, NULL, slow_call_thread, &waiting);
    sleep_ms(200);
    struct sbx_error err = {0};
    json_t *res = NULL;
    assert_true(mcp_client_call_tool(c, "crash", NULL, 20000, &res, &err) < 0);
    assert_int_equal(err.upstream, SBX_UP_TRANSPORT);
    assert_non_null(strstr(err.message, "exited with status 5"));
    sbx_error_clear(&err);
    pthread_join(th, NULL);
    assert_true(waiting.r < 0);
    assert_int_equal(waiting.kind, SBX_UP_TRANSPORT);
    assert_true(waiting.took_ms < 10000);
    assert_false(mcp_client_alive(c));
    /* Later requests fail at once. */
    int64_t start = clock_mono_us();
    assert_int_equal(mcp_client_call_tool(c, "echo", NULL, 20000, &res, &err), -ENOTCONN);
    assert_int_equal(err.upstream, SBX_UP_TRANSPORT);
    assert_true(ms_since(start) < 1000);
    sbx_error_clear(&err);
    mcp_client_close(c);
}

static void stdio_startup_failures(void **state)
{
    struct mcp_server_config cfg = {0};
    cfg.name = strdup("missing");
    cfg.command = strdup("/nonexistent/mcp-server");
    connect_fails(&cfg, 5000, SBX_UP_TRANSPORT);
    free(cfg.command);
    cfg.command = strdup("no-such-mcp-server-in-path");
    connect_fails(&cfg, 5000, SBX_UP_TRANSPORT);
    mcp_server_config_done(&cfg);

    cfg_stdio(&cfg, "x", "exit_early");
    connect_fails(&cfg, 5000, SBX_UP_TRANSPORT);
    mcp_server_config_done(&cfg);

    cfg_stdio(&cfg, "x", "bad_version");
    connect_fails(&cfg, 5000, SBX_UP_PROTOCOL);
    mcp_server_config_done(&cfg);

    cfg_stdio(&cfg, "x", "init_error");
    connect_fails(&cfg, 5000, SBX_UP_TOOL);
    mcp_server_config_done(&cfg);

    int64_t start = clock_mono_us();
    cfg_stdio(&cfg, "x", "mute");
    connect_fails(&cfg, 300, SBX_UP_TIMEOUT);
    mcp_server_config_done(&cfg);
    assert_true(ms_since(start) < 3000);

    /* Both or neither of command and url. */
    cfg = (struct mcp_server_config){.name = strdup("x")};
    connect_fails(&cfg, 300, SBX_UP_TRANSPORT);
    mcp_server_config_done(&cfg);

    /* An older accepted protocol version. */
    struct mcp_client *c = connect_stdio("old_version");
    json_t *info = mcp_client_server_info(c);
    assert_string_equal(json_string_value(json_object_get(info, "protocolVersion")), "2025-03-26");
    json_decref(info);
    mcp_client_close(c);
}

static void stdio_path_env_cwd_and_stderr(void **state)
{
    /* "env" is looked up in PATH; the server itself writes 300 KB to stderr before answering
     * initialize, which only works if stderr is drained. */
    struct mcp_server_config cfg = {0};
    cfg.name = strdup("chatty");
    cfg.command = strdup("env");
    cfg.args = strv("/usr/bin/python3", stdio_script, "chatty", NULL);
    cfg.env = strv("FAKE_MCP_VAR=hello", "HOME=/overridden", NULL);
    cfg.cwd = strdup("/tmp");
    /* Ours reach the server only when they are of the minimal set (PATH, LANG, ...): never a
     * token or a key of sandboxd's. */
    setenv("FAKE_MCP_INHERITED", "yes", 1);
    setenv("SANDBOXD_API_TOKEN", "host-secret", 1);
    setenv("LANG", "C.UTF-8", 1);
    struct capture cap;
    capture_start(&cap);
    struct mcp_client *c = connect_ok(&cfg);
    mcp_server_config_done(&cfg);
    struct sbx_error err = {0};
    static const char *const cases[][2] = {{"FAKE_MCP_VAR", "hello"},
                                           {"HOME", "/overridden"},
                                           {"LANG", "C.UTF-8"},
                                           {"FAKE_MCP_INHERITED", "<unset>"},
                                           {"SANDBOXD_API_TOKEN", "<unset>"}};
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        json_t *args = json_pack("{s:s}", "name", cases[i][0]);
        char *t = call_text(c, "env", args, 5000, &err);
        assert_string_equal(t, cases[i][1]);
        free(t);
        json_decref(args);
    }
    char *t = call_text(c, "cwd", NULL, 5000, &err);
    assert_string_equal(t, "/tmp");
    free(t);
    /* By now (several reader rounds later) the start of stderr has been read: it is logged line
     * by line with the server's name, at a bounded rate. */
    char *logged = capture_end(&cap);
    assert_non_null(strstr(logged, "MCP server 'chatty': fake server starting in mode chatty"));
    assert_non_null(strstr(logged, "MCP server 'chatty': chatter line 0 yyy"));
    assert_null(strstr(logged, "chatter line 2999"));
    free(logged);
    mcp_client_close(c);
    unsetenv("FAKE_MCP_INHERITED");
    unsetenv("SANDBOXD_API_TOKEN");
}

static void stdio_oversized_line_kills_server(void **state)
{
    struct mcp_client *c = connect_stdio("normal");
    struct sbx_error err = {0};
    json_t *res = NULL;
    assert_true(mcp_client_call_tool(c, "huge", NULL, 20000, &res, &err) < 0);
    assert_int_equal(err.upstream, SBX_UP_PROTOCOL);
    sbx_error_clear(&err);
    assert_false(mcp_client_alive(c));
    mcp_client_close(c);
}

static void stdio_close_escalates_to_sigkill(void **state)
{
    /* Ignores stdin EOF: SIGTERM after 2 s. */
    struct mcp_client *c = connect_stdio("ignore_eof");
    int64_t start = clock_mono_us();
    mcp_client_close(c);
    int64_t took = ms_since(start);
    assert_true(took >= 1900 && took < 3500);

    /* Ignores SIGTERM as well: SIGKILL 2 s later. */
    c = connect_stdio("ignore_term");
    start = clock_mono_us();
    mcp_client_close(c);
    took = ms_since(start);
    assert_true(took >= 3800 && took < 6000);
}

struct echo_worker {
    struct mcp_client *c;
    int id;
    int calls;
    const char *tool;
    int ok;
};

static void *echo_thread(void *arg)
{
    struct echo_worker *w = arg;
    for (int i = 0; i < w->calls; i++) {
        json_t *args = json_pack("{s:i, s:i}", "worker", w->id, "i", i);
        struct sbx_error err = {0};
        char *got = call_text(w->c, w->tool, args, 10000, &err);
        json_t *g = got ? json_loads(got, 0, NULL) : NULL;
        if (g && json_equal(g, args))
            w->ok++;
        json_decref(g);
        free(got);
        sbx_error_clear(&err);
        json_decref(args);
    }
    return NULL;
}

static void run_concurrently(struct mcp_client *c, const char *tool, int threads, int calls)
{
    pthread_t th[8];
    struct echo_worker w[8];
    for (int i = 0; i < threads; i++) {
        w[i] = (struct echo_worker){.c = c, .id = i, .calls = calls, .tool = tool};
        pthread_create(&th[i], NULL, echo_thread, &w[i]);
    }
    for (int i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].ok, calls);
    }
}

/* The server pings us, stops reading its stdin while we write 1 MiB into it, then writes 1 MiB
 * to its stdout. Our reader must keep reading while a caller is stuck writing, and answer the
 * ping once stdin is free again. */
static void stdio_reader_never_blocks_on_stdin(void **state)
{
    struct mcp_client *c = connect_stdio("normal");
    struct slow_call flood = {.c = c, .tool = "ping_then_flood", .timeout_ms = 10000};
    pthread_t th;
    pthread_create(&th, NULL, slow_call_thread, &flood);
    sleep_ms(100);
    size_t big = 1 << 20;
    char *payload = malloc(big + 1);
    memset(payload, 'q', big);
    payload[big] = '\0';
    json_t *args = json_pack("{s:s}", "payload", payload);
    free(payload);
    struct sbx_error err = {0};
    json_t *res = NULL;
    int64_t start = clock_mono_us();
    assert_int_equal(mcp_client_call_tool(c, "echo", args, 10000, &res, &err), 0);
    assert_true(json_equal(json_object_get(res, "structuredContent"), args));
    json_decref(res);
    json_decref(args);
    pthread_join(th, NULL);
    assert_int_equal(flood.r, 0);
    assert_true(ms_since(start) < 8000);
    assert_true(mcp_client_alive(c));
    mcp_client_close(c);
}

static void stdio_concurrent_requests(void **state)
{
    struct mcp_client *c = connect_stdio("normal");
    run_concurrently(c, "echo", 8, 25);
    mcp_client_close(c);
}

static void stdio_tools_list_limits(void **state)
{
    struct mcp_client *c = connect_stdio("endless");
    struct sbx_error err = {0};
    json_t *tools = NULL;
    assert_int_equal(mcp_client_list_tools(c, 20000, &tools, &err), -EPROTO);
    assert_int_equal(err.upstream, SBX_UP_PROTOCOL);
    assert_non_null(strstr(err.message, "100 pages"));
    sbx_error_clear(&err);
    json_t *st = stats(c);
    assert_int_equal(json_integer_value(json_object_get(st, "tools_list")), 100);
    json_decref(st);
    mcp_client_close(c);

    c = connect_stdio("bad_tools");
    assert_int_equal(mcp_client_list_tools(c, 5000, &tools, &err), -EPROTO);
    assert_int_equal(err.upstream, SBX_UP_PROTOCOL);
    sbx_error_clear(&err);
    mcp_client_close(c);
}

/* ---- Streamable HTTP ---- */

static void http_session_sse_and_tools(void **state)
{
    struct mcp_client *c = connect_http();
    json_t *info = mcp_client_server_info(c);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(info, "serverInfo"), "name")),
        "fake-http");
    json_decref(info);
    struct notes n = {.seen = json_array()};
    pthread_mutex_init(&n.lock, NULL);
    mcp_client_set_notify(c, note_cb, &n);

    struct sbx_error err = {0};
    json_t *tools = NULL;
    assert_int_equal(mcp_client_list_tools(c, 5000, &tools, &err), 0);
    assert_int_equal(json_array_size(tools), 3); /* two pages */
    json_decref(tools);

    json_t *args = json_pack("{s:s}", "k", "v");
    char *t = call_text(c, "echo", args, 5000, &err);
    assert_string_equal(t, "{\"k\": \"v\"}");
    free(t);
    /* SSE: priming event and comment skipped, notification delivered, then the answer. */
    t = call_text(c, "sse_echo", args, 5000, &err);
    assert_string_equal(t, "{\"k\": \"v\"}");
    free(t);
    assert_true(noted(&n, "notifications/message"));
    /* Data over several lines, CRLF line ends, "event: message". */
    t = call_text(c, "multiline", args, 5000, &err);
    assert_string_equal(t, "{\"k\": \"v\"}");
    free(t);
    json_decref(args);

    /* Keep-alive: consecutive requests from one thread go over the same connection. */
    char *port1 = call_text(c, "port", NULL, 5000, &err);
    char *port2 = call_text(c, "port", NULL, 5000, &err);
    assert_non_null(port1);
    assert_string_equal(port1, port2);
    free(port1);
    free(port2);

    /* The session id and protocol version went with every request after initialize (the server
     * answers 400 otherwise); notifications/initialized arrived. */
    json_t *st = stats(c);
    assert_true(has_notification(st, "notifications/initialized"));
    json_t *versions = json_object_get(st, "versions");
    assert_true(json_array_size(versions) >= 5);
    for (size_t i = 0; i < json_array_size(versions); i++)
        assert_string_equal(json_string_value(json_array_get(versions, i)), "2025-11-25");
    /* The configured headers go with every POST. */
    json_t *xt = json_object_get(st, "x_test");
    for (size_t i = 0; i < json_array_size(xt); i++)
        assert_string_equal(json_string_value(json_array_get(xt, i)), "yes");
    json_decref(st);
    mcp_client_set_notify(c, NULL, NULL);
    mcp_client_close(c);
    json_decref(n.seen);
    pthread_mutex_destroy(&n.lock);
}

static void http_lost_session_reinitializes(void **state)
{
    struct mcp_client *c = connect_http();
    struct sbx_error err = {0};
    json_t *st = stats(c);
    json_int_t inits = json_integer_value(json_object_get(st, "initialize"));
    json_decref(st);
    char *t = call_text(c, "forget", NULL, 5000, &err);
    assert_non_null(t);
    free(t);
    /* 404 → initialize again → resend, invisibly. */
    t = call_text(c, "echo", NULL, 5000, &err);
    assert_string_equal(t, "{}");
    free(t);
    st = stats(c);
    assert_int_equal(json_integer_value(json_object_get(st, "initialize")), inits + 1);
    json_decref(st);

    /* Concurrent requests after a forget: one re-initialization serves all. */
    t = call_text(c, "forget", NULL, 5000, &err);
    free(t);
    run_concurrently(c, "echo", 4, 3);
    st = stats(c);
    json_int_t after = json_integer_value(json_object_get(st, "initialize"));
    assert_true(after >= inits + 2 && after <= inits + 5);
    json_decref(st);
    mcp_client_close(c);
}

static void http_timeouts_errors_ping_and_resume(void **state)
{
    struct mcp_client *c = connect_http();
    struct sbx_error err = {0};
    json_t *res = NULL;
    int64_t start = clock_mono_us();
    assert_int_equal(mcp_client_call_tool(c, "slow", NULL, 300, &res, &err), -ETIMEDOUT);
    assert_int_equal(err.upstream, SBX_UP_TIMEOUT);
    assert_true(ms_since(start) < 1400);
    sbx_error_clear(&err);
    json_t *st = stats(c);
    assert_true(has_notification(st, "notifications/cancelled"));
    json_decref(st);

    assert_int_equal(mcp_client_call_tool(c, "http500", NULL, 5000, &res, &err), -EPROTO);
    assert_int_equal(err.upstream, SBX_UP_HTTP);
    assert_int_equal(err.upstream_status, 500);
    sbx_error_clear(&err);

    assert_int_equal(mcp_client_call_tool(c, "redirect", NULL, 5000, &res, &err), -EPROTO);
    assert_int_equal(err.upstream, SBX_UP_HTTP);
    assert_int_equal(err.upstream_status, 307);
    sbx_error_clear(&err);

    assert_int_equal(mcp_client_call_tool(c, "no_answer", NULL, 5000, &res, &err), -EPROTO);
    assert_int_equal(err.upstream, SBX_UP_PROTOCOL);
    sbx_error_clear(&err);

    assert_int_equal(mcp_client_call_tool(c, "unknown", NULL, 5000, &res, &err), -EPROTO);
    assert_int_equal(err.upstream, SBX_UP_TOOL);
    assert_string_equal(err.upstream_code, "-32602");
    sbx_error_clear(&err);

    /* The server pings us in the middle of the SSE answer; our reply is a POST of its own. */
    assert_int_equal(mcp_client_call_tool(c, "ping_me", NULL, 10000, &res, &err), 0);
    json_t *ping = json_object_get(json_object_get(res, "structuredContent"), "ping");
    assert_string_equal(json_string_value(json_object_get(ping, "id")), "ping-1");
    assert_true(json_is_object(json_object_get(ping, "result")));
    json_decref(res);

    /* The stream closes after a priming event; the answer comes on GET + Last-Event-ID. */
    json_t *args = json_pack("{s:b}", "resumed", 1);
    char *t = call_text(c, "resume", args, 5000, &err);
    assert_string_equal(t, "{\"resumed\": true}");
    free(t);
    json_decref(args);
    mcp_client_close(c);
}

static void http_concurrent_requests(void **state)
{
    struct mcp_client *c = connect_http();
    run_concurrently(c, "echo", 4, 10);
    run_concurrently(c, "sse_echo", 4, 10);
    mcp_client_close(c);
}

static void http_close_deletes_session_and_bad_urls(void **state)
{
    struct mcp_client *probe = connect_http();
    json_t *st = stats(probe);
    json_int_t deletes = json_integer_value(json_object_get(st, "delete"));
    json_decref(st);
    struct mcp_client *c = connect_http();
    mcp_client_close(c);
    st = stats(probe);
    assert_int_equal(json_integer_value(json_object_get(st, "delete")), deletes + 1);
    json_decref(st);
    mcp_client_close(probe);

    struct mcp_server_config cfg = {0};
    cfg.name = strdup("down");
    cfg.url = strdup("http://127.0.0.1:1/mcp");
    connect_fails(&cfg, 3000, SBX_UP_TRANSPORT);
    free(cfg.url);
    cfg.url = strdup("file:///etc/passwd");
    connect_fails(&cfg, 3000, SBX_UP_TRANSPORT);
    mcp_server_config_done(&cfg);
}

/* ---- configuration ---- */

static char tmpdir[PATH_MAX];

static void write_file(const char *rel, const char *content)
{
    char path[PATH_MAX * 2];
    fmt(path, sizeof(path), "%s/%s", tmpdir, rel);
    /* mkdir -p of the parents */
    for (char *p = path + strlen(tmpdir) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        mkdir(path, 0700);
        *p = '/';
    }
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(content, f);
    fclose(f);
}

static const struct mcp_server_config *find_server(const struct mcp_config *cfg, const char *name)
{
    for (size_t i = 0; i < cfg->n; i++)
        if (strcmp(cfg->servers[i].name, name) == 0)
            return &cfg->servers[i];
    return NULL;
}

static void rm_rf(const char *dir)
{
    char *cmd = NULL;
    if (asprintf(&cmd, "rm -rf '%s'", dir) > 0 && system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
    free(cmd);
}

static int load_config(const char *explicit_path, bool discover, bool trust_project,
                       const char *cwd, const char *home, const char *trust_file,
                       struct mcp_config *cfg)
{
    const char *paths[] = {explicit_path, NULL};
    struct mcp_config_options o = {.explicit_paths = paths,
                                   .discover = discover,
                                   .trust_project = trust_project,
                                   .cwd = cwd,
                                   .home = home,
                                   .trust_file = trust_file};
    return mcp_config_load(&o, cfg);
}

static void config_formats_and_invalid_entries(void **state)
{
    fmt(tmpdir, sizeof(tmpdir), "/tmp/mcp-config-XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    write_file("explicit.json",
               "{\"mcpServers\": {"
               " \"files\": {\"command\": \"npx\", \"args\": [\"-y\", \"server\"],"
               "   \"env\": {\"TOKEN\": \"t\"}, \"cwd\": \"/srv\", \"description\": \"Files\"},"
               " \"web\": {\"url\": \"https://example.com/mcp\","
               "   \"headers\": {\"Authorization\": \"Bearer x\"}},"
               " \"typed\": {\"type\": \"http\", \"url\": \"http://localhost:1/mcp\"},"
               " \"\": {\"command\": \"x\"},"
               " \"n2345678901234567890123456789012345678901234567890123456789012345\": "
               "{\"command\": \"x\"},"
               " \"both\": {\"command\": \"x\", \"url\": \"http://a\"},"
               " \"neither\": {\"args\": []},"
               " \"badargs\": {\"command\": \"x\", \"args\": \"nope\"},"
               " \"badenv\": {\"command\": \"x\", \"env\": {\"A\": 1}},"
               " \"ftp\": {\"url\": \"ftp://x\"},"
               " \"legacy\": {\"type\": \"sse\", \"url\": \"http://x/sse\"},"
               " \"off\": {\"command\": \"x\", \"disabled\": true},"
               " \"mismatch\": {\"type\": \"stdio\", \"url\": \"http://x\"},"
               " \"badheader\": {\"url\": \"http://x\", \"headers\": {\"A\": \"b\\r\\nC: d\"}},"
               " \"notobj\": 3"
               "}}");
    char path[PATH_MAX + 32];
    fmt(path, sizeof(path), "%s/explicit.json", tmpdir);
    struct mcp_config cfg = {0};
    assert_int_equal(load_config(path, false, false, NULL, NULL, NULL, &cfg), 0);
    assert_int_equal(cfg.n, 3);
    assert_string_equal(cfg.servers[0].name, "files"); /* config order */
    const struct mcp_server_config *s = find_server(&cfg, "files");
    assert_string_equal(s->command, "npx");
    assert_string_equal(s->args[0], "-y");
    assert_string_equal(s->args[1], "server");
    assert_null(s->args[2]);
    assert_string_equal(s->env[0], "TOKEN=t");
    assert_string_equal(s->cwd, "/srv");
    assert_string_equal(s->description, "Files");
    assert_null(s->url);
    s = find_server(&cfg, "web");
    assert_string_equal(s->url, "https://example.com/mcp");
    assert_string_equal(s->headers[0], "Authorization: Bearer x");
    assert_null(s->command);
    assert_non_null(find_server(&cfg, "typed"));
    assert_string_equal(cfg.sources[0], path);
    assert_null(cfg.sources[1]);

    /* Copy round trip. */
    struct mcp_server_config copy;
    assert_int_equal(mcp_server_config_copy(&cfg.servers[0], &copy), 0);
    assert_string_equal(copy.env[0], "TOKEN=t");
    mcp_server_config_done(&copy);
    mcp_config_done(&cfg);

    /* VS Code format through --mcp-config ("servers"). */
    write_file("vscode-style.json",
               "{\"servers\": {\"v\": {\"type\": \"stdio\", \"command\": \"c\"}}, \"inputs\": []}");
    fmt(path, sizeof(path), "%s/vscode-style.json", tmpdir);
    assert_int_equal(load_config(path, false, false, NULL, NULL, NULL, &cfg), 0);
    assert_int_equal(cfg.n, 1);
    mcp_config_done(&cfg);

    /* A missing, unparsable or shapeless explicit file is an error. */
    fmt(path, sizeof(path), "%s/missing.json", tmpdir);
    assert_int_equal(load_config(path, false, false, NULL, NULL, NULL, &cfg), -ENOENT);
    write_file("broken.json", "{\"mcpServers\": ");
    fmt(path, sizeof(path), "%s/broken.json", tmpdir);
    assert_int_equal(load_config(path, false, false, NULL, NULL, NULL, &cfg), -EINVAL);
    write_file("shapeless.json", "{\"other\": {}}");
    fmt(path, sizeof(path), "%s/shapeless.json", tmpdir);
    assert_int_equal(load_config(path, false, false, NULL, NULL, NULL, &cfg), -EINVAL);

    /* Nothing at all is fine. */
    assert_int_equal(load_config(NULL, false, false, NULL, NULL, NULL, &cfg), 0);
    assert_int_equal(cfg.n, 0);
    assert_non_null(cfg.sources);
    assert_null(cfg.sources[0]);
    mcp_config_done(&cfg);
    mcp_config_done(NULL);
    rm_rf(tmpdir);
}

static const struct mcp_config_skip *find_skip(const struct mcp_config *cfg, const char *name,
                                               const char *source_part)
{
    for (size_t i = 0; i < cfg->n_skipped; i++)
        if (cfg->skipped[i].name && strcmp(cfg->skipped[i].name, name) == 0 &&
            strstr(cfg->skipped[i].source, source_part))
            return &cfg->skipped[i];
    return NULL;
}

static size_t count_sources(const struct mcp_config *cfg)
{
    size_t n = 0;
    while (cfg->sources[n])
        n++;
    return n;
}

/* What mcp-server-code-execution-mode's users bring: several --mcp-config files (a later one
 * wins), ~/MCPs and $MCP_SERVERS_CONFIG, the agents' files in their own spellings, a file-wide
 * description, and entries that would start the bridge itself. */
static const struct mcp_config_skip *find_skip_file(const struct mcp_config *cfg,
                                                    const char *source_part)
{
    for (size_t i = 0; i < cfg->n_skipped; i++)
        if (!cfg->skipped[i].name && strstr(cfg->skipped[i].source, source_part))
            return &cfg->skipped[i];
    return NULL;
}

static void config_compat_sources(void **state)
{
    fmt(tmpdir, sizeof(tmpdir), "/tmp/mcp-compat-XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    char home[PATH_MAX + 16], a[PATH_MAX + 32], b[PATH_MAX + 32], env[PATH_MAX + 32];
    fmt(home, sizeof(home), "%s/home", tmpdir);
    fmt(a, sizeof(a), "%s/a.json", tmpdir);
    fmt(b, sizeof(b), "%s/b.json", tmpdir);
    fmt(env, sizeof(env), "%s/env.json", tmpdir);
    write_file("a.json", "{\"mcpServers\": {\"one\": {\"command\": \"a1\"},"
                         " \"two\": {\"command\": \"a2\"}}}");
    write_file("b.json", "{\"mcpServers\": {\"one\": {\"command\": \"b1\"},"
                         " \"bad\": {\"command\": 3}}}");
    write_file("env.json", "{\"mcpServers\": {\"envsrv\": {\"command\": \"e\"},"
                           " \"mine\": {\"command\": \"from-env\"}}}");
    write_file("home/MCPs/m.json",
               "{\"description\": \"file-wide\", \"mcpServers\": {"
               " \"mine\": {\"command\": \"m\"}, \"own\": {\"command\": \"o\","
               " \"description\": \"its own\"},"
               " \"bridge\": {\"command\": \"uvx\", \"args\": [\"--from\","
               " \"git+https://github.com/elusznik/mcp-server-code-execution-mode\","
               " \"mcp-server-code-execution-mode\", \"run\"]},"
               " \"me\": {\"command\": \"/opt/bin/sandboxd\", \"args\": [\"mcp\"]},"
               " \"serve\": {\"command\": \"/opt/bin/sandboxd\", \"args\": [\"serve\"]},"
               " \"py\": {\"command\": \"python\", \"args\": "
               "[\"/x/MCP_SERVER_CODE_EXECUTION_MODE.PY\"]}}}");
    write_file("home/.codeium/windsurf/mcp_config.json",
               "{\"mcpServers\": {\"surf\": {\"serverUrl\": \"http://localhost:1/mcp\"}}}");
    write_file("home/.gemini/settings.json",
               "{\"mcpServers\": {\"gem\": {\"httpUrl\": \"http://localhost:2/mcp\"},"
               " \"gemsse\": {\"url\": \"http://localhost:2/sse\"}}}");
    write_file("home/.config/Code/User/settings.json",
               "{\n // comment\n \"mcp\": {\"servers\": {\"vsc\": {\"type\": \"stdio\","
               " \"command\": \"node\",},},},\n}");
    write_file("home/.codex/config.toml",
               "[mcp_servers.cdx]\ncommand = \"c\"\nenv_vars = [\"SANDBOXD_TEST_PASS\","
               " \"SANDBOXD_TEST_UNSET\"]\n[mcp_servers.cdxweb]\nurl = \"http://localhost:3/mcp\"\n"
               "bearer_token_env_var = \"SANDBOXD_TEST_PASS\"\n"
               "env_http_headers = { X-Key = \"SANDBOXD_TEST_UNSET\" }\n");
    write_file("home/.opencode.json", "{\"theme\": \"dark\"}"); /* no servers: no noise */
    assert_int_equal(setenv("SANDBOXD_TEST_PASS", "secret", 1), 0);
    unsetenv("SANDBOXD_TEST_UNSET");

    const char *paths[] = {a, b, NULL};
    struct mcp_config_options o = {
        .explicit_paths = paths, .env_path = env, .discover = true, .home = home};
    struct mcp_config cfg = {0};
    assert_int_equal(mcp_config_load(&o, &cfg), 0);
    assert_string_equal(find_server(&cfg, "one")->command, "b1"); /* the later file wins */
    assert_string_equal(cfg.servers[0].name, "one");              /* in its first place */
    assert_string_equal(cfg.origins[0], b);
    assert_string_equal(find_skip(&cfg, "one", "/a.json")->kind, "replaced");
    assert_string_equal(find_server(&cfg, "two")->command, "a2");
    assert_string_equal(find_skip(&cfg, "bad", "/b.json")->kind, "invalid");
    /* ~/MCPs before $MCP_SERVERS_CONFIG; file-wide descriptions fill in. */
    assert_string_equal(find_server(&cfg, "mine")->command, "m");
    assert_string_equal(find_server(&cfg, "mine")->description, "file-wide");
    assert_string_equal(find_server(&cfg, "own")->description, "its own");
    assert_string_equal(find_skip(&cfg, "mine", "/env.json")->kind, "shadowed");
    assert_non_null(find_server(&cfg, "envsrv"));
    assert_null(find_server(&cfg, "bridge"));
    assert_null(find_server(&cfg, "me"));
    assert_null(find_server(&cfg, "py"));
    assert_string_equal(find_skip(&cfg, "bridge", "/m.json")->kind, "self");
    assert_string_equal(find_skip(&cfg, "me", "/m.json")->kind, "self");
    assert_non_null(find_server(&cfg, "serve")); /* not an MCP server of ours: not a loop */
    /* Spellings. */
    assert_string_equal(find_server(&cfg, "surf")->url, "http://localhost:1/mcp");
    assert_string_equal(find_server(&cfg, "gem")->url, "http://localhost:2/mcp");
    assert_null(find_server(&cfg, "gemsse"));
    assert_non_null(strstr(find_skip(&cfg, "gemsse", "settings.json")->reason, "SSE"));
    assert_string_equal(find_server(&cfg, "vsc")->command, "node");
    const struct mcp_server_config *cdx = find_server(&cfg, "cdx");
    assert_string_equal(cdx->env[0], "SANDBOXD_TEST_PASS=secret");
    assert_null(cdx->env[1]);
    const struct mcp_server_config *web = find_server(&cfg, "cdxweb");
    assert_string_equal(web->headers[0], "Authorization: Bearer secret");
    assert_null(web->headers[1]);
    for (size_t i = 0; i < cfg.n; i++)
        if (strcmp(cfg.servers[i].name, "cdx") == 0)
            assert_string_equal(cfg.agents[i], "Codex");
    for (size_t i = 0; i < cfg.n_skipped; i++)
        assert_null(strstr(cfg.skipped[i].source, ".opencode.json"));
    mcp_config_done(&cfg);

    /* The switch keeps them; a bad $MCP_SERVERS_CONFIG is recorded and stops nothing. */
    write_file("env.json", "{\"mcpServers\": ");
    o.allow_self = true;
    assert_int_equal(mcp_config_load(&o, &cfg), 0);
    assert_non_null(find_server(&cfg, "bridge"));
    assert_non_null(find_server(&cfg, "me"));
    assert_null(find_server(&cfg, "envsrv"));
    assert_string_equal(find_skip_file(&cfg, "/env.json")->kind, "invalid");
    mcp_config_done(&cfg);
    unsetenv("SANDBOXD_TEST_PASS");
    rm_rf(tmpdir);
}

static void config_discovery_precedence(void **state)
{
    fmt(tmpdir, sizeof(tmpdir), "/tmp/mcp-discover-XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    char cwd[PATH_MAX + 16], home[PATH_MAX + 16], explicit_path[PATH_MAX + 32];
    fmt(cwd, sizeof(cwd), "%s/project", tmpdir);
    fmt(home, sizeof(home), "%s/home", tmpdir);
    fmt(explicit_path, sizeof(explicit_path), "%s/explicit.json", tmpdir);
    write_file("explicit.json", "{\"mcpServers\": {\"shared\": {\"command\": \"explicit\"}}}");
    /* ./.mcp: b.json after a.json; not-json.txt ignored; broken.json skipped. */
    write_file("project/.mcp/b.json",
               "{\"mcpServers\": {\"shared\": {\"command\": \"dot-mcp-b\"},"
               " \"dotb\": {\"command\": \"b\"}, \"dup\": {\"command\": \"dot-mcp-b\"}}}");
    write_file("project/.mcp/a.json", "{\"mcpServers\": {\"dup\": {\"command\": \"dot-mcp-a\"}}}");
    write_file("project/.mcp/broken.json", "{");
    write_file("project/.mcp/not-json.txt", "{\"mcpServers\": {\"txt\": {\"command\": \"x\"}}}");
    write_file("home/.config/mcp/servers/one.json",
               "{\"mcpServers\": {\"dup\": {\"command\": \"config\"},"
               " \"cfgsrv\": {\"url\": \"http://localhost:9/mcp\"}}}");
    char claude[4096];
    fmt(claude, sizeof(claude),
        "{\"numStartups\": 3, \"mcpServers\": {\"user\": {\"command\": \"top\"},"
        " \"proj\": {\"command\": \"top\"}, \"cfgsrv\": {\"command\": \"claude\"}},"
        " \"projects\": {\"/elsewhere\": {\"mcpServers\": {\"other\": {\"command\": \"o\"}}},"
        " \"%s\": {\"mcpServers\": {\"proj\": {\"command\": \"project\"}}}}}",
        cwd);
    write_file("home/.claude.json", claude);
    write_file("home/.cursor/mcp.json", "{\"mcpServers\": {\"cursor\": {\"command\": \"cur\"},"
                                        " \"user\": {\"command\": \"cursor\"}}}");
    write_file("project/.vscode/mcp.json",
               "{\"servers\": {\"vs\": {\"type\": \"http\", \"url\": \"http://localhost:8/mcp\","
               " \"headers\": {\"X-A\": \"1\"}}, \"vsstdio\": {\"type\": \"stdio\","
               " \"command\": \"node\", \"args\": [\"s.js\"], \"env\": {\"K\": \"V\"}},"
               " \"cursor\": {\"command\": \"vscode\"}, \"legacy\": {\"type\": \"sse\","
               " \"url\": \"http://x\"}}}");

    /* Untrusted project (the default): the user's files only; the project's servers are
     * reported as skipped and never configured. */
    struct mcp_config cfg = {0};
    assert_int_equal(load_config(explicit_path, true, false, cwd, home, NULL, &cfg), 0);
    assert_false(cfg.project_trusted);
    assert_string_equal(find_server(&cfg, "shared")->command, "explicit");
    assert_string_equal(find_server(&cfg, "dup")->command, "config");
    assert_null(find_server(&cfg, "dotb"));
    assert_null(find_server(&cfg, "vs"));
    assert_null(find_server(&cfg, "vsstdio"));
    assert_null(find_server(&cfg, "txt"));
    assert_non_null(find_server(&cfg, "cfgsrv")->url);
    assert_string_equal(find_server(&cfg, "proj")->command, "project");
    assert_string_equal(find_server(&cfg, "user")->command, "top");
    assert_null(find_server(&cfg, "other"));
    assert_string_equal(find_server(&cfg, "cursor")->command, "cur");
    assert_int_equal(cfg.n, 6);
    assert_string_equal(find_skip(&cfg, "dotb", "/.mcp/b.json")->kind, "untrusted");
    assert_string_equal(find_skip(&cfg, "vsstdio", "/.vscode/mcp.json")->kind, "untrusted");
    assert_string_equal(find_skip(&cfg, "user", "/.cursor/mcp.json")->kind, "shadowed");
    assert_non_null(strstr(find_skip(&cfg, "user", "/.cursor/mcp.json")->reason, ".claude.json"));
    for (size_t i = 0; i < cfg.n; i++)
        assert_null(strstr(cfg.origins[i], "/project/")); /* nothing from the project */
    assert_int_equal(count_sources(&cfg), 4);             /* explicit, config, claude, cursor */
    mcp_config_done(&cfg);

    /* Trusted by flag: the project's servers join, but never over a user-level name. */
    assert_int_equal(load_config(explicit_path, true, true, cwd, home, NULL, &cfg), 0);
    assert_true(cfg.project_trusted);
    assert_string_equal(find_server(&cfg, "shared")->command, "explicit");
    assert_string_equal(find_server(&cfg, "dup")->command, "config");
    assert_string_equal(find_server(&cfg, "dotb")->command, "b");
    assert_string_equal(find_server(&cfg, "cursor")->command, "cur");
    const struct mcp_server_config *vs = find_server(&cfg, "vs");
    assert_string_equal(vs->url, "http://localhost:8/mcp");
    assert_string_equal(vs->headers[0], "X-A: 1");
    vs = find_server(&cfg, "vsstdio");
    assert_string_equal(vs->args[0], "s.js");
    assert_string_equal(vs->env[0], "K=V");
    assert_null(find_server(&cfg, "legacy"));
    assert_int_equal(cfg.n, 9);
    assert_string_equal(find_skip(&cfg, "dup", "/.mcp/a.json")->kind, "shadowed");
    assert_string_equal(find_skip(&cfg, "cursor", "/.vscode/mcp.json")->kind, "shadowed");
    assert_string_equal(find_skip(&cfg, "legacy", "/.vscode/mcp.json")->kind, "invalid");
    /* Order: explicit first, then the user's files, then the project's. */
    assert_string_equal(cfg.servers[0].name, "shared");
    assert_string_equal(cfg.servers[1].name, "dup");
    assert_non_null(strstr(cfg.origins[1], "/home/.config/mcp/servers/one.json"));
    /* Sources: explicit, config, claude, cursor, .mcp/b (a only shadowed), vscode. */
    assert_int_equal(count_sources(&cfg), 6);
    assert_string_equal(cfg.sources[0], explicit_path);
    assert_non_null(strstr(cfg.sources[4], "/.mcp/b.json"));
    assert_non_null(strstr(cfg.sources[5], "/.vscode/mcp.json"));
    mcp_config_done(&cfg);

    /* Trusted by the user's list: the project directory, or a directory above it. A list
     * that someone else could write is ignored. */
    char trust[PATH_MAX + 32];
    fmt(trust, sizeof(trust), "%s/trusted-projects", tmpdir);
    char list[PATH_MAX * 2];
    fmt(list, sizeof(list), "# trusted\n/nonexistent\n  %s  \n", tmpdir);
    write_file("trusted-projects", list);
    assert_int_equal(load_config(NULL, true, false, cwd, home, trust, &cfg), 0);
    assert_true(cfg.project_trusted);
    assert_string_equal(find_server(&cfg, "dotb")->command, "b");
    mcp_config_done(&cfg);
    assert_int_equal(chmod(trust, 0620), 0);
    assert_int_equal(load_config(NULL, true, false, cwd, home, trust, &cfg), 0);
    assert_false(cfg.project_trusted);
    assert_null(find_server(&cfg, "dotb"));
    mcp_config_done(&cfg);
    write_file("trusted-projects", "/elsewhere\n");
    assert_int_equal(chmod(trust, 0600), 0);
    assert_int_equal(load_config(NULL, true, false, cwd, home, trust, &cfg), 0);
    assert_false(cfg.project_trusted);
    mcp_config_done(&cfg);

    /* Discovery off: only the explicit file. cwd/home NULL: discovery finds nothing. */
    assert_int_equal(load_config(explicit_path, false, true, cwd, home, NULL, &cfg), 0);
    assert_int_equal(cfg.n, 1);
    mcp_config_done(&cfg);
    assert_int_equal(load_config(NULL, true, false, NULL, NULL, NULL, &cfg), 0);
    assert_int_equal(cfg.n, 0);
    mcp_config_done(&cfg);
    rm_rf(tmpdir);
}

/* ---- registry ---- */

static void registry_lazy_shared_restart_and_cache(void **state)
{
    struct mcp_config cfg = {0};
    cfg.servers = calloc(2, sizeof(*cfg.servers));
    cfg.n = 2;
    cfg_stdio(&cfg.servers[0], "local", "normal");
    cfg.servers[0].description = strdup("a local server");
    cfg_http(&cfg.servers[1], "remote");
    struct mcp_registry *r = NULL;
    assert_int_equal(mcp_registry_new(&cfg, &r), 0);
    mcp_config_done(&cfg); /* the registry has its own copy */

    json_t *names = mcp_registry_names(r);
    assert_int_equal(json_array_size(names), 2);
    assert_string_equal(json_string_value(json_array_get(names, 0)), "local");
    assert_string_equal(json_string_value(json_array_get(names, 1)), "remote");
    json_decref(names);
    json_t *ok = json_pack("[s, s]", "remote", "local");
    assert_null(mcp_registry_check_names(r, ok));
    json_decref(ok);
    json_t *bad = json_pack("[s, s, i]", "remote", "nope", 3);
    char *why = mcp_registry_check_names(r, bad);
    assert_string_equal(why, "servers[1]: 'nope' is not a configured MCP server "
                             "(configured: local, remote)");
    free(why);
    json_array_remove(bad, 1);
    why = mcp_registry_check_names(r, bad);
    assert_string_equal(why, "servers[1]: (not a string) is not a configured MCP server "
                             "(configured: local, remote)");
    free(why);
    json_decref(bad);

    /* Nothing is started before first use. */
    json_t *d = mcp_registry_describe(r);
    json_t *d0 = json_array_get(d, 0);
    assert_false(json_is_true(json_object_get(d0, "connected")));
    assert_string_equal(json_string_value(json_object_get(d0, "transport")), "stdio");
    assert_string_equal(json_string_value(json_object_get(d0, "description")), "a local server");
    assert_string_equal(json_string_value(json_object_get(json_array_get(d, 1), "transport")),
                        "http");
    json_decref(d);

    struct sbx_error err = {0};
    json_t *tools = NULL;
    assert_int_equal(mcp_registry_tools(r, "local", 10000, &tools, &err), 0);
    assert_int_equal(json_array_size(tools), 7);
    json_decref(tools);
    d = mcp_registry_describe(r);
    d0 = json_array_get(d, 0);
    assert_true(json_is_true(json_object_get(d0, "connected")));
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(d0, "serverInfo"), "serverInfo"), "name")),
        "fake-stdio");
    json_decref(d);

    /* Cached: the second listing does not reach the server (3 pages were asked once). */
    assert_int_equal(mcp_registry_tools(r, "local", 10000, &tools, &err), 0);
    json_decref(tools);
    json_t *res = NULL;
    assert_int_equal(mcp_registry_call(r, "local", "stats", NULL, 5000, &res, &err), 0);
    assert_int_equal(json_integer_value(
                         json_object_get(json_object_get(res, "structuredContent"), "tools_list")),
                     3);
    json_decref(res);

    /* tools/list_changed refreshes the cache. */
    assert_int_equal(mcp_registry_call(r, "local", "change_tools", NULL, 5000, &res, &err), 0);
    json_decref(res);
    assert_int_equal(mcp_registry_tools(r, "local", 10000, &tools, &err), 0);
    assert_int_equal(json_array_size(tools), 8);
    json_decref(tools);

    /* A crash is reported, not retried; the next call restarts the server and the tools are
     * listed again from the new process. */
    assert_true(mcp_registry_call(r, "local", "crash", NULL, 5000, &res, &err) < 0);
    assert_int_equal(err.upstream, SBX_UP_TRANSPORT);
    sbx_error_clear(&err);
    d = mcp_registry_describe(r);
    assert_false(json_is_true(json_object_get(json_array_get(d, 0), "connected")));
    json_decref(d);
    assert_int_equal(mcp_registry_tools(r, "local", 10000, &tools, &err), 0);
    assert_int_equal(json_array_size(tools), 7); /* the restarted server has not changed */
    json_decref(tools);

    assert_int_equal(mcp_registry_call(r, "remote", "echo", NULL, 5000, &res, &err), 0);
    json_decref(res);
    assert_int_equal(mcp_registry_tools(r, "remote", 5000, &tools, &err), 0);
    assert_int_equal(json_array_size(tools), 3);
    json_decref(tools);

    /* Unknown server. */
    assert_int_equal(mcp_registry_call(r, "nope", "x", NULL, 5000, &res, &err), -ENOENT);
    assert_int_equal(err.upstream, SBX_UP_TOOL);
    assert_string_equal(err.upstream_code, "UNKNOWN_SERVER");
    sbx_error_clear(&err);
    assert_int_equal(mcp_registry_tools(r, "nope", 5000, &tools, &err), -ENOENT);
    assert_string_equal(err.upstream_code, "UNKNOWN_SERVER");
    sbx_error_clear(&err);
    mcp_registry_free(r);
    mcp_registry_free(NULL);
}

struct reg_worker {
    struct mcp_registry *r;
    int ok;
};

static void *reg_thread(void *arg)
{
    struct reg_worker *w = arg;
    for (int i = 0; i < 5; i++) {
        json_t *res = NULL;
        struct sbx_error err = {0};
        if (mcp_registry_call(w->r, "local", "cwd", NULL, 10000, &res, &err) == 0)
            w->ok++;
        json_decref(res);
        sbx_error_clear(&err);
    }
    return NULL;
}

static void registry_one_process_for_all_and_backoff(void **state)
{
    fmt(tmpdir, sizeof(tmpdir), "/tmp/mcp-registry-XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    char starts[PATH_MAX + 16], script[2 * PATH_MAX + 64];
    fmt(starts, sizeof(starts), "%s/starts", tmpdir);
    struct mcp_config cfg = {0};
    cfg.servers = calloc(2, sizeof(*cfg.servers));
    cfg.n = 2;
    /* "local" counts its starts in a file, then runs the fake server. */
    fmt(script, sizeof(script), "echo start >> '%s'; exec /usr/bin/python3 '%s' normal", starts,
        stdio_script);
    cfg.servers[0].name = strdup("local");
    cfg.servers[0].command = strdup("/bin/sh");
    cfg.servers[0].args = strv("-c", script, NULL);
    /* "broken" counts its starts too, and exits at once. */
    fmt(script, sizeof(script), "echo start >> '%s.broken'; exit 1", starts);
    cfg.servers[1].name = strdup("broken");
    cfg.servers[1].command = strdup("/bin/sh");
    cfg.servers[1].args = strv("-c", script, NULL);
    struct mcp_registry *r = NULL;
    assert_int_equal(mcp_registry_new(&cfg, &r), 0);
    mcp_config_done(&cfg);

    pthread_t th[6];
    struct reg_worker w[6];
    for (int i = 0; i < 6; i++) {
        w[i] = (struct reg_worker){.r = r};
        pthread_create(&th[i], NULL, reg_thread, &w[i]);
    }
    for (int i = 0; i < 6; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].ok, 5);
    }
    FILE *f = fopen(starts, "r");
    assert_non_null(f);
    char line[64];
    int n = 0;
    while (fgets(line, sizeof(line), f))
        n++;
    fclose(f);
    assert_int_equal(n, 1); /* started once, shared by 30 calls */

    /* A server that fails to start is not retried within a second: same error, no new start. */
    struct sbx_error err = {0};
    json_t *res = NULL;
    assert_true(mcp_registry_call(r, "broken", "x", NULL, 5000, &res, &err) < 0);
    assert_int_equal(err.upstream, SBX_UP_TRANSPORT);
    char *first = strdup(err.message);
    sbx_error_clear(&err);
    assert_true(mcp_registry_call(r, "broken", "x", NULL, 5000, &res, &err) < 0);
    assert_int_equal(err.upstream, SBX_UP_TRANSPORT);
    assert_string_equal(err.message, first);
    sbx_error_clear(&err);
    json_t *d = mcp_registry_describe(r);
    assert_non_null(json_object_get(json_array_get(d, 1), "lastError"));
    json_decref(d);
    char broken[PATH_MAX + 32];
    fmt(broken, sizeof(broken), "%s.broken", starts);
    f = fopen(broken, "r");
    n = 0;
    while (f && fgets(line, sizeof(line), f))
        n++;
    if (f)
        fclose(f);
    assert_int_equal(n, 1);
    sleep_ms(1100);
    assert_true(mcp_registry_call(r, "broken", "x", NULL, 5000, &res, &err) < 0);
    sbx_error_clear(&err);
    f = fopen(broken, "r");
    n = 0;
    while (f && fgets(line, sizeof(line), f))
        n++;
    if (f)
        fclose(f);
    assert_int_equal(n, 2);
    free(first);
    mcp_registry_free(r);
    rm_rf(tmpdir);
}

/* ---- set-up ---- */

static int start_http_server(void)
{
    char script[PATH_MAX + 32];
    fmt(script, sizeof(script), "%s/fake_http_server.py", fixtures);
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
        return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    char *argv[] = {"/usr/bin/python3", script, NULL};
    int r = posix_spawn(&http_pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    close(out[1]);
    if (r != 0)
        return -1;
    http_stdin = in[1];
    char port[32] = {0};
    size_t n = 0;
    while (n < sizeof(port) - 1) {
        ssize_t k = read(out[0], port + n, 1);
        if (k <= 0 || port[n] == '\n')
            break;
        n++;
    }
    close(out[0]);
    port[n] = '\0';
    if (n == 0)
        return -1;
    fmt(http_url, sizeof(http_url), "http://127.0.0.1:%s/mcp", port);
    return 0;
}

static int setup(void **state)
{
    if (find_fixtures() < 0)
        return -1;
    if (httpc_global_init() < 0)
        return -1;
    return start_http_server();
}

static int teardown(void **state)
{
    if (http_stdin >= 0)
        close(http_stdin); /* the fake server exits when its stdin closes */
    if (http_pid > 0)
        waitpid(http_pid, NULL, 0);
    httpc_global_done();
    return 0;
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN); /* as sandboxd's main() does */
    enum log_level level = LOG_ERROR;
    const char *l = getenv("SANDBOXD_TEST_LOG");
    if (l)
        (void)log_level_parse(l, &level); /* an unknown name keeps the default */
    log_set_level(level);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(jsonrpc_builds_and_classifies),
        cmocka_unit_test(stdio_handshake_and_paginated_tools),
        cmocka_unit_test(stdio_tool_results_and_errors),
        cmocka_unit_test(answers_holding_nul_arrive),
        cmocka_unit_test(stdio_notifications_and_server_requests),
        cmocka_unit_test(stdio_timeout_cancels_and_drops_late_answer),
        cmocka_unit_test(stdio_crash_fails_pending_at_once),
        cmocka_unit_test(stdio_startup_failures),
        cmocka_unit_test(stdio_path_env_cwd_and_stderr),
        cmocka_unit_test(stdio_oversized_line_kills_server),
        cmocka_unit_test(stdio_close_escalates_to_sigkill),
        cmocka_unit_test(stdio_reader_never_blocks_on_stdin),
        cmocka_unit_test(stdio_concurrent_requests),
        cmocka_unit_test(stdio_tools_list_limits),
        cmocka_unit_test(http_session_sse_and_tools),
        cmocka_unit_test(http_lost_session_reinitializes),
        cmocka_unit_test(http_timeouts_errors_ping_and_resume),
        cmocka_unit_test(http_concurrent_requests),
        cmocka_unit_test(http_close_deletes_session_and_bad_urls),
        cmocka_unit_test(config_formats_and_invalid_entries),
        cmocka_unit_test(config_discovery_precedence),
        cmocka_unit_test(config_compat_sources),
        cmocka_unit_test(registry_lazy_shared_restart_and_cache),
        cmocka_unit_test(registry_one_process_for_all_and_backoff),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
