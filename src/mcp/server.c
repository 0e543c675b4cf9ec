// SPDX-License-Identifier: MIT
/*
 * server — see server.h.
 *
 * Sessions of a connection. run_python without session_id uses the
 * connection's automatic sessions: the first one created is "default"; a
 * call whose servers it lacks uses the first automatic session that has
 * them all, or a new one keyed by that server set (a session's servers are
 * fixed at creation, see session.h). With session_id, a named session of
 * this connection (created on first use). A session that ended (idle,
 * killed) is replaced on the next call, and the answer says so.
 *
 * Cancellation. notifications/cancelled interrupts the execution the way a
 * time limit does (SIGINT); a canceller thread repeats the interrupt once
 * (the first is lost if it lands before the interpreter started the code)
 * and ends the session if the code still runs after the grace period.
 *
 * Texts. The text content is built in capped buffers (struct buf); an append
 * that would pass the cap is dropped, which is why those results are cast to
 * void: the text is a courtesy copy, structuredContent carries everything.
 *
 * Locks: create_lock (creating, finding and resetting sandbox sessions)
 * is taken before lock (every other field of a connection); progress
 * output has its own lock. Nothing is called on a transport under a lock.
 */
#include "mcp/server.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app/response.h"
#include "mcp/registry.h"
#include "session/session.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/macros.h"

#ifndef SANDBOXD_VERSION
#define SANDBOXD_VERSION "0.0.0"
#endif

#define SRV_MAX_CODE        (1u << 20) /* bytes of code in one run_python */
#define SRV_MAX_SERVERS     64         /* entries of run_python's servers */
#define SRV_MAX_QUERY       1000       /* bytes of a search_tool_docs query */
#define SRV_CANCEL_GRACE_US 2000000    /* between interrupting and ending a cancelled run */
#define SRV_PROGRESS_US     100000     /* progress notifications at most this often ... */
#define SRV_PROGRESS_MAX    16384      /* ... unless this much output is waiting */
#define SRV_CURSOR_PREFIX   "sandboxd-tools-"

static const char *const srv_versions[] = {MCP_SERVER_VERSION_LATEST, "2025-06-18", "2025-03-26"};

struct mcp_server {
    struct mcp_server_options opt;
    char *workspace;
    struct sessions *sessions;
    struct mcp_registry *registry;
    json_t *tools;        /* tools/list entries */
    json_t *tools_legacy; /* the same for 2025-03-26: no title, no outputSchema */
    pthread_mutex_t bg_lock;
    pthread_cond_t bg_cond;
    unsigned bg_threads; /* cancellers running */
};

/* A sandbox session held by a connection. */
struct srv_sandbox {
    struct srv_sandbox *next;
    char *name;      /* the client's session_id; NULL for an automatic session */
    json_t *servers; /* sorted names */
    char *label;     /* how answers name it: the session_id, "default", "servers:a,b" */
    char id[65];     /* the sandbox session (session.h) */
};

/* A tools/call being handled. */
struct srv_call {
    struct srv_call *next;
    json_t *id;
    char sandbox[65]; /* the sandbox session it executes in, "" when not (yet) executing */
    bool cancelled, done;
    int refs; /* under the connection's lock */
};

struct mcp_server_conn {
    struct mcp_server *srv;
    atomic_int refs;
    pthread_mutex_t create_lock;
    pthread_mutex_t lock;
    pthread_cond_t cond; /* a call is done */
    const char *version; /* static; NULL before initialize, then never changes */
    bool closed;
    struct srv_sandbox *sandboxes; /* creation order; the first automatic one is "default" */
    unsigned n_sandboxes;
    struct srv_call *calls;
    unsigned n_calls;
};

/* ---- small helpers ------------------------------------------------------------------------ */

bool mcp_server_version_supported(const char *version)
{
    for (size_t i = 0; version && i < ARRAY_SIZE(srv_versions); i++)
        if (strcmp(version, srv_versions[i]) == 0)
            return true;
    return false;
}

static bool srv_legacy(const struct mcp_server_conn *c)
{
    return c->version && strcmp(c->version, "2025-03-26") == 0;
}

/* A JSON-RPC error response; data is stolen. */
static json_t *srv_error(json_t *id, int code, json_t *data, const char *fmt, ...) _printf_(4, 5);
static json_t *srv_error(json_t *id, int code, json_t *data, const char *fmt, ...)
{
    char *msg = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&msg, fmt, ap) < 0)
        msg = NULL;
    va_end(ap);
    json_t *e = jsonrpc_error_new(jsonrpc_id_valid(id) ? id : NULL, code, msg, data);
    free(msg);
    json_decref(data);
    return e;
}

json_t *mcp_server_parse_error(const char *why)
{
    return srv_error(NULL, JSONRPC_PARSE_ERROR, NULL, "Parse error: %s", why ? why : "not JSON");
}

/* A CallToolResult with one text item; structured is stolen (may be NULL). */
static json_t *srv_tool_result(const struct mcp_server_conn *c, const char *text,
                               json_t *structured, bool is_error)
{
    json_t *r = json_pack("{s:[{s:s, s:s}]}", "content", "type", "text", "text", text);
    if (r && is_error)
        json_object_set_new(r, "isError", json_true());
    if (r && structured && !srv_legacy(c)) /* structuredContent came with 2025-06-18 */
        json_object_set_new(r, "structuredContent", json_incref(structured));
    json_decref(structured);
    return r;
}

static json_t *srv_tool_error(const struct mcp_server_conn *c, const char *fmt, ...) _printf_(2, 3);
static json_t *srv_tool_error(const struct mcp_server_conn *c, const char *fmt, ...)
{
    char *msg = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&msg, fmt, ap) < 0)
        msg = NULL;
    va_end(ap);
    json_t *r = srv_tool_result(c, msg ? msg : "error", NULL, true);
    free(msg);
    return r;
}

/* A Python identifier for a server or tool name, as the session runtime makes it
 * (runtime/sandboxd_runtime/session.py identifier()): non-word characters become '_', a
 * leading digit gets a '_' in front, a keyword one behind. Bytes of multi-byte UTF-8
 * characters are kept (Python counts most such characters as word characters). */
static void srv_identifier(const char *name, struct buf *out)
{
    static const char *const keywords[] = {
        "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
        "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
        "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
        "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield"};
    size_t start = out->len;
    if (!*name || isdigit((unsigned char)*name))
        (void)buf_appends(out, "_");
    for (const char *p = name; *p; p++) {
        unsigned char ch = (unsigned char)*p;
        char k = isalnum(ch) || ch == '_' || ch >= 0x80 ? (char)ch : '_';
        (void)buf_append(out, &k, 1);
    }
    for (size_t i = 0; i < ARRAY_SIZE(keywords); i++)
        if (out->data && strcmp(out->data + start, keywords[i]) == 0)
            (void)buf_appends(out, "_");
}

/* ---- the tools ---------------------------------------------------------------------------- */

static json_t *srv_run_python_tool(struct mcp_server *s)
{
    json_t *names = mcp_registry_names(s->registry);
    json_t *items = json_pack("{s:s}", "type", "string");
    json_t *servers =
        json_pack("{s:s, s:o, s:b}", "type", "array", "items", items, "uniqueItems", 1);
    char *list = NULL;
    if (json_array_size(names)) {
        json_object_set(items, "enum", names);
        char *dumped = json_dumps(names, JSON_COMPACT);
        if (asprintf(&list,
                     "MCP servers this code may call, as Python objects: \"everything\" "
                     "becomes mcp_everything. Configured: %s.",
                     dumped ? dumped : "?") < 0)
            list = NULL;
        free(dumped);
    } else {
        json_object_set_new(servers, "maxItems", json_integer(0));
    }
    json_object_set_new(servers, "description",
                        json_string(list ? list
                                         : "MCP servers this code may call; none are configured "
                                           "(start sandboxd with --mcp-config FILE)."));
    free(list);
    json_decref(names);
    char timeout_desc[200];
    snprintf(timeout_desc, sizeof(timeout_desc),
             "Time limit in seconds (default %g, at most %g; longer is clamped). At the limit the "
             "code is interrupted and the session survives.",
             (double)s->opt.default_timeout_ms / 1000.0, (double)s->opt.max_timeout_ms / 1000.0);
    json_t *input = json_pack(
        "{s:s, s:{s:{s:s, s:s}, s:o, s:{s:s, s:f, s:s}, s:{s:s, s:s, s:s}, s:{s:s, s:[s,s], s:s}},"
        " s:[s], s:b}",
        "type", "object", "properties", "code", "type", "string", "description",
        "Python 3 source. Variables, imports and functions persist between calls of the same "
        "session; top-level await works; the value of a final expression is returned as "
        "result.",
        "servers", servers, "timeout", "type", "number", "exclusiveMinimum", 0.0, "description",
        timeout_desc, "session_id", "type", "string", "pattern", "^[A-Za-z0-9._-]{1,64}$",
        "description",
        "A named session of this connection, created on first use. Without it, the "
        "connection's default session is used.",
        "output", "type", "string", "enum", "text", "json", "description",
        "How the result is written: compact text (the server's default unless started with "
        "--mcp-output json) or the JSON of structuredContent.",
        "required", "code", "additionalProperties", 0);
    json_t *nullable_str = json_pack("{s:[s,s]}", "type", "string", "null");
    json_t *output = json_pack(
        "{s:s, s:{s:{s:s, s:s}, s:{s:s}, s:{s:s}, s:{s:[s,s]}, s:O, s:{s:s}, s:{s:s}, s:{s:s},"
        " s:{s:s}, s:{s:s}, s:{s:s, s:{s:s}}}, s:[s,s,s,s,s,s,s,s]}",
        "type", "object", "properties", "status", "type", "string", "description",
        "ok, error (an uncaught exception), timeout, memory_limit, output_limit, killed or "
        "exited",
        "stdout", "type", "string", "stderr", "type", "string", "error", "type", "object", "null",
        "result", nullable_str, "durationMs", "type", "number", "truncated", "type", "boolean",
        "sessionAlive", "type", "boolean", "session", "type", "string", "mcpCalls", "type",
        "integer", "notes", "type", "array", "items", "type", "string", "required", "status",
        "stdout", "stderr", "error", "result", "durationMs", "truncated", "sessionAlive");
    json_decref(nullable_str);
    return json_pack(
        "{s:s, s:s, s:s, s:o, s:o, s:{s:b, s:b, s:b, s:b}}", "name", "run_python", "title",
        "Run Python in a sandbox", "description",
        "Run Python 3 code in an isolated sandbox (no network; the filesystem is read-only except "
        "/tmp) and get its stdout, stderr and the value of its last expression. State persists "
        "between calls of one session. MCP servers named in `servers` are Python objects whose "
        "tools are async methods: `await mcp_everything.get_sum(a=1, b=2)` (dashes become "
        "underscores); find tools with search_tool_docs. save_memory(key, value) and "
        "load_memory(key) keep JSON values across sessions.",
        "inputSchema", input, "outputSchema", output, "annotations", "readOnlyHint", 0,
        "destructiveHint", 0, "idempotentHint", 0, "openWorldHint", 0);
}

static json_t *srv_build_tools(struct mcp_server *s)
{
    json_t *tools = json_array();
    json_array_append_new(tools, srv_run_python_tool(s));
    json_array_append_new(
        tools,
        json_pack("{s:s, s:s, s:s, s:{s:s, s:{s:{s:s, s:s}}, s:b}, s:{s:b, s:b}}", "name",
                  "list_servers", "title", "List MCP servers", "description",
                  "The MCP servers run_python code may use (pass their names in run_python's "
                  "`servers`), with their descriptions; with tools=true also their tool names "
                  "(this starts servers that are not running yet).",
                  "inputSchema", "type", "object", "properties", "tools", "type", "boolean",
                  "description", "Also list each server's tools.", "additionalProperties", 0,
                  "annotations", "readOnlyHint", 1, "openWorldHint", 0));
    json_array_append_new(
        tools,
        json_pack("{s:s, s:s, s:s, s:{s:s, s:{s:{s:s, s:s}, s:{s:s, s:i, s:i, s:s}}, s:[s], "
                  "s:b}, s:{s:b, s:b}}",
                  "name", "search_tool_docs", "title", "Search the tools of the MCP servers",
                  "description",
                  "Find tools of the configured MCP servers by keywords, best match first, with "
                  "their parameters and the Python call that reaches them from run_python — "
                  "without loading every schema.",
                  "inputSchema", "type", "object", "properties", "query", "type", "string",
                  "description", "Keywords, e.g. \"sum numbers\".", "limit", "type", "integer",
                  "minimum", 1, "maximum", 50, "description", "Most results (default 5).",
                  "required", "query", "additionalProperties", 0, "annotations", "readOnlyHint", 1,
                  "openWorldHint", 0));
    json_array_append_new(
        tools,
        json_pack("{s:s, s:s, s:s, s:{s:s, s:{s:{s:s, s:s}}, s:b}, s:{s:b, s:b, s:b, s:b}}", "name",
                  "reset_session", "title", "Reset a Python session", "description",
                  "End a session of this connection: its variables are gone and the next "
                  "run_python starts afresh. Without session_id, the default session (and the "
                  "other automatic ones).",
                  "inputSchema", "type", "object", "properties", "session_id", "type", "string",
                  "description", "The named session to end.", "additionalProperties", 0,
                  "annotations", "readOnlyHint", 0, "destructiveHint", 1, "idempotentHint", 1,
                  "openWorldHint", 0));
    return tools;
}

static json_t *srv_legacy_tools(json_t *tools)
{
    json_t *legacy = json_deep_copy(tools);
    size_t i;
    json_t *t;
    json_array_foreach(legacy, i, t)
    {
        json_object_del(t, "title");
        json_object_del(t, "outputSchema");
    }
    return legacy;
}

int mcp_server_new(const struct mcp_server_options *opt, struct sessions *sessions,
                   struct mcp_registry *registry, struct mcp_server **ret)
{
    struct mcp_server *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->opt = *opt;
    if (!s->opt.page_size)
        s->opt.page_size = 100;
    s->workspace = strdup(opt->workspace ? opt->workspace : "default");
    s->sessions = sessions;
    s->registry = registry;
    s->tools = srv_build_tools(s);
    s->tools_legacy = s->tools ? srv_legacy_tools(s->tools) : NULL;
    pthread_mutex_init(&s->bg_lock, NULL);
    pthread_cond_init(&s->bg_cond, NULL);
    if (!s->workspace || json_array_size(s->tools) != 4 || !s->tools_legacy) {
        mcp_server_free(s);
        return -ENOMEM;
    }
    *ret = s;
    return 0;
}

void mcp_server_free(struct mcp_server *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->bg_lock);
    while (s->bg_threads)
        pthread_cond_wait(&s->bg_cond, &s->bg_lock);
    pthread_mutex_unlock(&s->bg_lock);
    pthread_mutex_destroy(&s->bg_lock);
    pthread_cond_destroy(&s->bg_cond);
    json_decref(s->tools);
    json_decref(s->tools_legacy);
    free(s->workspace);
    free(s);
}

/* ---- connections -------------------------------------------------------------------------- */

int mcp_server_conn_new(struct mcp_server *s, struct mcp_server_conn **ret)
{
    struct mcp_server_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->srv = s;
    atomic_init(&c->refs, 1);
    pthread_mutex_init(&c->create_lock, NULL);
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cond, NULL);
    *ret = c;
    return 0;
}

void mcp_server_conn_ref(struct mcp_server_conn *c)
{
    atomic_fetch_add(&c->refs, 1);
}

static void srv_sandbox_free(struct srv_sandbox *b)
{
    if (!b)
        return;
    free(b->name);
    free(b->label);
    json_decref(b->servers);
    free(b);
}

void mcp_server_conn_close(struct mcp_server_conn *c)
{
    pthread_mutex_lock(&c->lock);
    struct srv_sandbox *list = TAKE_PTR(c->sandboxes);
    bool was_closed = c->closed;
    c->closed = true;
    c->n_sandboxes = 0;
    pthread_mutex_unlock(&c->lock);
    while (list) {
        struct srv_sandbox *b = list;
        list = b->next;
        (void)sessions_delete(c->srv->sessions, b->id); /* -ENOENT: it had ended already */
        srv_sandbox_free(b);
    }
    if (!was_closed)
        log_debug("mcp: connection closed");
}

void mcp_server_conn_unref(struct mcp_server_conn *c)
{
    if (!c || atomic_fetch_sub(&c->refs, 1) != 1)
        return;
    mcp_server_conn_close(c);
    pthread_mutex_destroy(&c->create_lock);
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->cond);
    free(c);
}

const char *mcp_server_conn_version(struct mcp_server_conn *c)
{
    pthread_mutex_lock(&c->lock);
    const char *v = c->version;
    pthread_mutex_unlock(&c->lock);
    return v;
}

unsigned mcp_server_conn_busy(struct mcp_server_conn *c)
{
    pthread_mutex_lock(&c->lock);
    unsigned n = c->n_calls;
    pthread_mutex_unlock(&c->lock);
    return n;
}

/* ---- calls in flight and their cancellation ------------------------------------------------ */

/* Register a tools/call; NULL (and *ret_error) when the id is in use or too many run. */
static struct srv_call *srv_call_begin(struct mcp_server_conn *c, json_t *id, json_t **ret_error)
{
    pthread_mutex_lock(&c->lock);
    for (struct srv_call *k = c->calls; k; k = k->next)
        if (jsonrpc_id_equal(k->id, id)) {
            pthread_mutex_unlock(&c->lock);
            *ret_error = srv_error(id, JSONRPC_INVALID_REQUEST, NULL,
                                   "Invalid Request: a request with this id is still running");
            return NULL;
        }
    if (c->n_calls >= MCP_SERVER_MAX_INFLIGHT) {
        pthread_mutex_unlock(&c->lock);
        *ret_error =
            srv_error(id, -32000, NULL, "Server busy: %d requests of this connection are running",
                      MCP_SERVER_MAX_INFLIGHT);
        return NULL;
    }
    struct srv_call *k = calloc(1, sizeof(*k));
    if (k) {
        k->id = json_incref(id);
        k->refs = 1;
        k->next = c->calls;
        c->calls = k;
        c->n_calls++;
    }
    pthread_mutex_unlock(&c->lock);
    if (!k)
        *ret_error = srv_error(id, JSONRPC_INTERNAL_ERROR, NULL, "Internal error: out of memory");
    return k;
}

/* Lock held. */
static void srv_call_unref_locked(struct srv_call *k)
{
    if (--k->refs > 0)
        return;
    json_decref(k->id);
    free(k);
}

/* The call is over; true when it was cancelled (and must not be answered). */
static bool srv_call_end(struct mcp_server_conn *c, struct srv_call *k)
{
    pthread_mutex_lock(&c->lock);
    for (struct srv_call **pp = &c->calls; *pp; pp = &(*pp)->next)
        if (*pp == k) {
            *pp = k->next;
            c->n_calls--;
            break;
        }
    k->done = true;
    bool cancelled = k->cancelled;
    pthread_cond_broadcast(&c->cond);
    srv_call_unref_locked(k);
    pthread_mutex_unlock(&c->lock);
    return cancelled;
}

/* Record which sandbox session the call executes in; false when it was cancelled already. */
static bool srv_call_executing(struct mcp_server_conn *c, struct srv_call *k, const char *sandbox)
{
    pthread_mutex_lock(&c->lock);
    bool go = !k->cancelled;
    /* A cancelled call never runs, so the canceller must not find its session to end. */
    snprintf(k->sandbox, sizeof(k->sandbox), "%s", go && sandbox ? sandbox : "");
    pthread_mutex_unlock(&c->lock);
    return go;
}

static bool srv_call_cancelled(struct mcp_server_conn *c, struct srv_call *k)
{
    pthread_mutex_lock(&c->lock);
    bool cancelled = k->cancelled;
    pthread_mutex_unlock(&c->lock);
    return cancelled;
}

struct srv_canceller {
    struct mcp_server_conn *c;
    struct srv_call *k;
};

/* Wait (lock held) until k is done or timeout_us passed; true when done. */
static bool srv_call_wait(struct mcp_server_conn *c, struct srv_call *k, int64_t timeout_us)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t ns = ts.tv_nsec + (timeout_us % 1000000) * 1000;
    ts.tv_sec += (time_t)(timeout_us / 1000000 + ns / 1000000000);
    ts.tv_nsec = (long)(ns % 1000000000);
    while (!k->done)
        if (pthread_cond_timedwait(&c->cond, &c->lock, &ts) != 0)
            break;
    return k->done;
}

/* Interrupt, interrupt again (the first SIGINT is lost when it arrives before the code runs),
 * then end the session: the same escalation as a time limit. */
static void *srv_canceller_thread(void *arg)
{
    struct srv_canceller *job = arg;
    struct mcp_server_conn *c = job->c;
    struct srv_call *k = job->k;
    struct mcp_server *s = c->srv;
    pthread_mutex_lock(&c->lock);
    for (int step = 0; step < 3 && !k->done; step++) {
        char sandbox[65];
        snprintf(sandbox, sizeof(sandbox), "%s", k->sandbox);
        pthread_mutex_unlock(&c->lock);
        if (*sandbox && step < 2)
            (void)sessions_interrupt(s->sessions, sandbox); /* -EALREADY: not running (yet) */
        else if (*sandbox) {
            log_warn("mcp: a cancelled execution ignored the interrupt; ending its session");
            (void)sessions_delete(s->sessions, sandbox);
        }
        pthread_mutex_lock(&c->lock);
        if (step < 2)
            (void)srv_call_wait(c, k, SRV_CANCEL_GRACE_US);
    }
    srv_call_unref_locked(k);
    pthread_mutex_unlock(&c->lock);
    mcp_server_conn_unref(c);
    free(job);
    pthread_mutex_lock(&s->bg_lock);
    s->bg_threads--;
    pthread_cond_broadcast(&s->bg_cond);
    pthread_mutex_unlock(&s->bg_lock);
    return NULL;
}

static void srv_cancel(struct mcp_server_conn *c, json_t *params)
{
    json_t *id = json_object_get(params, "requestId");
    if (!jsonrpc_id_valid(id))
        return; /* nothing to cancel: malformed notifications get no answer */
    pthread_mutex_lock(&c->lock);
    struct srv_call *k = c->calls;
    while (k && !jsonrpc_id_equal(k->id, id))
        k = k->next;
    if (!k || k->cancelled) {
        pthread_mutex_unlock(&c->lock); /* finished already, or unknown: ignored (spec) */
        return;
    }
    k->cancelled = true;
    k->refs++; /* the canceller's */
    char sandbox[65];
    snprintf(sandbox, sizeof(sandbox), "%s", k->sandbox);
    pthread_mutex_unlock(&c->lock);
    const char *reason = json_string_value(json_object_get(params, "reason"));
    log_info("mcp: request cancelled by the client%s%.200s", reason ? ": " : "",
             reason ? reason : "");
    struct mcp_server *s = c->srv;
    struct srv_canceller *job = calloc(1, sizeof(*job));
    bool started = false;
    if (job) {
        *job = (struct srv_canceller){.c = c, .k = k};
        mcp_server_conn_ref(c);
        pthread_mutex_lock(&s->bg_lock);
        s->bg_threads++;
        pthread_mutex_unlock(&s->bg_lock);
        pthread_attr_t attr;
        pthread_t t;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        started = pthread_create(&t, &attr, srv_canceller_thread, job) == 0;
        pthread_attr_destroy(&attr);
        if (!started) {
            pthread_mutex_lock(&s->bg_lock);
            s->bg_threads--;
            pthread_mutex_unlock(&s->bg_lock);
            mcp_server_conn_unref(c);
            free(job);
        }
    }
    if (!started) {
        /* One interrupt now; without the escalation the execution at worst runs to its time
         * limit, which ends it anyway. */
        log_warn("mcp: cannot start a canceller thread; interrupting once");
        if (*sandbox)
            (void)sessions_interrupt(s->sessions, sandbox);
        pthread_mutex_lock(&c->lock);
        srv_call_unref_locked(k);
        pthread_mutex_unlock(&c->lock);
    }
}

/* ---- the sandbox sessions of a connection -------------------------------------------------- */

/* Every name of want (sorted) is in have (sorted). */
static bool srv_subset(json_t *want, json_t *have)
{
    size_t i, j = 0;
    json_t *w;
    json_array_foreach(want, i, w)
    {
        while (j < json_array_size(have) &&
               strcmp(json_string_value(json_array_get(have, j)), json_string_value(w)) < 0)
            j++;
        if (j == json_array_size(have) ||
            strcmp(json_string_value(json_array_get(have, j)), json_string_value(w)) != 0)
            return false;
    }
    return true;
}

/* "a, b" or "none" (caller frees). */
static char *srv_names_text(json_t *names)
{
    struct buf b;
    buf_init(&b, 1u << 16);
    size_t i;
    json_t *v;
    json_array_foreach(names, i, v)
    {
        (void)buf_printf(&b, "%s%s", i ? ", " : "", json_string_value(v));
    }
    if (!b.len)
        (void)buf_appends(&b, "none");
    return buf_take(&b, NULL);
}

static void srv_note(json_t *notes, const char *fmt, ...) _printf_(2, 3);
static void srv_note(json_t *notes, const char *fmt, ...)
{
    char *msg = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&msg, fmt, ap) < 0)
        msg = NULL;
    va_end(ap);
    if (msg)
        json_array_append_new(notes, json_string(msg));
    free(msg);
}

static void srv_note_ended(json_t *notes, const char *label)
{
    srv_note(notes,
             "session '%s' had ended (idle for too long, reset, or its interpreter died): a new "
             "one was started and earlier variables are gone",
             label);
}

/* Unlink b (lock held). */
static void srv_sandbox_unlink(struct mcp_server_conn *c, struct srv_sandbox *b)
{
    for (struct srv_sandbox **pp = &c->sandboxes; *pp; pp = &(*pp)->next)
        if (*pp == b) {
            *pp = b->next;
            c->n_sandboxes--;
            return;
        }
}

/* Forget the sandbox session id (it ended); create_lock held. */
static void srv_sandbox_forget(struct mcp_server_conn *c, const char *id)
{
    pthread_mutex_lock(&c->lock);
    struct srv_sandbox *b = c->sandboxes;
    while (b && strcmp(b->id, id) != 0)
        b = b->next;
    if (b)
        srv_sandbox_unlink(c, b);
    pthread_mutex_unlock(&c->lock);
    srv_sandbox_free(b);
}

/* The sandbox session run_python uses: named (name) or automatic (NULL) with at least the
 * servers asked for (sorted), created when needed. 0 with ret_id and *ret_label (caller frees),
 * or -errno with *ret_error (caller frees). create_lock is held across the creation, so two
 * first calls of a connection make one default session, not two. */
static int srv_sandbox_get(struct mcp_server_conn *c, const char *name, json_t *servers,
                           json_t *notes, char ret_id[65], char **ret_label, char **ret_error)
{
    struct mcp_server *s = c->srv;
    int r = 0;
    pthread_mutex_lock(&c->create_lock);
    pthread_mutex_lock(&c->lock);
    json_t *want = json_incref(servers);
    struct srv_sandbox *b = c->sandboxes, *next;
    bool automatic_left = false;
    for (; b; b = next) {
        next = b->next;
        if (name ? !b->name || strcmp(b->name, name) != 0 : b->name != NULL)
            continue;
        if (name && !srv_subset(servers, b->servers)) {
            char *have = srv_names_text(b->servers), *asked = srv_names_text(servers);
            if (asprintf(ret_error,
                         "session '%s' was created with the servers %s; it cannot get %s. Use "
                         "another session_id, or reset_session it first.",
                         name, have ? have : "?", asked ? asked : "?") < 0)
                *ret_error = NULL;
            free(have);
            free(asked);
            r = -EINVAL;
            goto out;
        }
        if (!name && !srv_subset(servers, b->servers)) {
            automatic_left = true;
            continue;
        }
        if (sessions_exists(s->sessions, b->id))
            break;
        srv_note_ended(notes, b->label);
        if (name) {
            json_decref(want);
            want = json_incref(b->servers); /* a named session keeps its servers */
        }
        srv_sandbox_unlink(c, b);
        srv_sandbox_free(b);
    }
    for (struct srv_sandbox *k = c->sandboxes; k && !automatic_left; k = k->next)
        automatic_left = k->name == NULL;
    if (b) {
        memcpy(ret_id, b->id, sizeof(b->id));
        *ret_label = strdup(b->label);
        r = *ret_label ? 0 : -ENOMEM;
        goto out;
    }
    if (c->closed) {
        *ret_error = strdup("the MCP connection is closed");
        r = -ESHUTDOWN;
        goto out;
    }
    if (c->n_sandboxes >= MCP_SERVER_MAX_SANDBOXES) {
        if (asprintf(ret_error,
                     "this connection holds %d sessions, the most it may; end one with "
                     "reset_session",
                     MCP_SERVER_MAX_SANDBOXES) < 0)
            *ret_error = NULL;
        r = -EBUSY;
        goto out;
    }
    pthread_mutex_unlock(&c->lock);

    struct srv_sandbox *nb = calloc(1, sizeof(*nb));
    char *names = srv_names_text(want);
    int lr = -1;
    if (nb && names) {
        nb->servers = json_incref(want);
        nb->name = name ? strdup(name) : NULL;
        lr = name              ? asprintf(&nb->label, "%s", name)
             : !automatic_left ? asprintf(&nb->label, "default")
                               : asprintf(&nb->label, "servers:%s", names);
    }
    if (lr < 0 || (name && !nb->name)) {
        if (nb)
            nb->label = lr < 0 ? NULL : nb->label;
        srv_sandbox_free(nb);
        free(names);
        *ret_error = strdup("out of memory");
        pthread_mutex_unlock(&c->create_lock);
        json_decref(want);
        return -ENOMEM;
    }
    struct session_create sc = {.servers = want, .workspace = s->workspace};
    json_t *info = NULL;
    struct session_error err;
    r = sessions_create(s->sessions, &sc, &info, &err);
    if (r < 0) {
        if (asprintf(ret_error, "could not start a Python session: %s",
                     err.message ? err.message : "failed") < 0)
            *ret_error = NULL;
        session_error_done(&err);
        srv_sandbox_free(nb);
        free(names);
        pthread_mutex_lock(&c->lock);
        goto out;
    }
    snprintf(nb->id, sizeof(nb->id), "%s", json_string_value(json_object_get(info, "sessionId")));
    json_decref(info);
    pthread_mutex_lock(&c->lock);
    if (c->closed) {
        pthread_mutex_unlock(&c->lock);
        (void)sessions_delete(s->sessions, nb->id);
        srv_sandbox_free(nb);
        free(names);
        *ret_error = strdup("the MCP connection is closed");
        pthread_mutex_unlock(&c->create_lock);
        json_decref(want);
        return -ESHUTDOWN;
    }
    struct srv_sandbox **tail = &c->sandboxes;
    while (*tail)
        tail = &(*tail)->next;
    *tail = nb;
    c->n_sandboxes++;
    srv_note(notes, "started session '%s' (servers: %s)", nb->label, names);
    free(names);
    memcpy(ret_id, nb->id, sizeof(nb->id));
    *ret_label = strdup(nb->label);
    r = *ret_label ? 0 : -ENOMEM;
out:
    pthread_mutex_unlock(&c->lock);
    pthread_mutex_unlock(&c->create_lock);
    json_decref(want);
    if (r < 0 && !*ret_error)
        *ret_error = strdup("out of memory");
    return r;
}

/* ---- progress: stdout as notifications/progress --------------------------------------------- */

struct srv_progress {
    const struct mcp_server_out *out;
    json_t *token;
    pthread_mutex_t send_lock; /* taken before lock: chunks leave in the order they came */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct buf pending;
    int64_t last_us;
    json_int_t count;
    bool stop;
    pthread_t flusher;
    bool have_flusher;
};

/* How many bytes at the end of p[0..len) start a UTF-8 sequence that is not complete yet. */
static size_t srv_utf8_tail(const unsigned char *p, size_t len)
{
    for (size_t back = 1; back <= 3 && back <= len; back++) {
        unsigned char ch = p[len - back];
        if ((ch & 0xC0) == 0x80)
            continue;
        size_t need = (ch & 0xE0) == 0xC0   ? 2
                      : (ch & 0xF0) == 0xE0 ? 3
                      : (ch & 0xF8) == 0xF0 ? 4
                                            : 1;
        return need > back ? back : 0;
    }
    return 0;
}

static void srv_progress_flush(struct srv_progress *p, bool final)
{
    pthread_mutex_lock(&p->send_lock);
    pthread_mutex_lock(&p->lock);
    size_t n = p->pending.len -
               (final ? 0 : srv_utf8_tail((const unsigned char *)p->pending.data, p->pending.len));
    struct buf chunk;
    buf_init(&chunk, n + 1);
    if (n && buf_append(&chunk, p->pending.data, n) == 0)
        buf_consume(&p->pending, n);
    p->last_us = clock_mono_us();
    json_int_t count = chunk.len ? ++p->count : p->count;
    pthread_mutex_unlock(&p->lock);
    if (chunk.len) {
        json_t *params = json_pack("{s:O, s:I, s:o}", "progressToken", p->token, "progress", count,
                                   "message", response_text(&chunk));
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
    while (!p->stop) {
        int64_t due = p->last_us + SRV_PROGRESS_US;
        if (p->pending.len && clock_mono_us() >= due) {
            pthread_mutex_unlock(&p->lock);
            srv_progress_flush(p, false);
            pthread_mutex_lock(&p->lock);
            continue;
        }
        if (!p->pending.len) {
            pthread_cond_wait(&p->cond, &p->lock);
            continue;
        }
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t wait_ns = (due - clock_mono_us()) * 1000 + ts.tv_nsec;
        ts.tv_sec += (time_t)(wait_ns / 1000000000);
        ts.tv_nsec = (long)(wait_ns % 1000000000);
        pthread_cond_timedwait(&p->cond, &p->lock, &ts);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

static void srv_progress_output(void *userdata, int stream, const char *data, size_t len)
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

static void srv_progress_start(struct srv_progress *p, const struct mcp_server_out *out,
                               json_t *token)
{
    *p = (struct srv_progress){.out = out, .token = token};
    pthread_mutex_init(&p->send_lock, NULL);
    pthread_mutex_init(&p->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->cond, &ca);
    pthread_condattr_destroy(&ca);
    buf_init(&p->pending, 1u << 20);
    /* Without the thread, output still goes out, only in bigger and later chunks. */
    p->have_flusher = pthread_create(&p->flusher, NULL, srv_progress_thread, p) == 0;
}

static void srv_progress_finish(struct srv_progress *p)
{
    pthread_mutex_lock(&p->lock);
    p->stop = true;
    pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->lock);
    if (p->have_flusher)
        pthread_join(p->flusher, NULL);
    srv_progress_flush(p, true);
    buf_free(&p->pending);
    pthread_cond_destroy(&p->cond);
    pthread_mutex_destroy(&p->lock);
    pthread_mutex_destroy(&p->send_lock);
}

/* ---- run_python ---------------------------------------------------------------------------- */

/* Keys of args outside allowed (NULL-terminated): the name of the first, else NULL. */
static const char *srv_unknown_key(json_t *args, const char *const *allowed)
{
    const char *key;
    json_t *v;
    json_object_foreach(args, key, v)
    {
        bool ok = false;
        for (size_t i = 0; allowed[i] && !ok; i++)
            ok = strcmp(key, allowed[i]) == 0;
        if (!ok)
            return key;
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

/* The optional session_id argument of tool: *ret_name is NULL when absent; a tool error
 * result when it is malformed, else NULL. */
static json_t *srv_session_id_arg(const struct mcp_server_conn *c, const char *tool, json_t *args,
                                  const char **ret_name)
{
    json_t *sid = json_object_get(args, "session_id");
    *ret_name = NULL;
    if (!sid || json_is_null(sid))
        return NULL;
    if (!json_is_string(sid) ||
        !srv_session_name_ok(json_string_value(sid), json_string_length(sid)))
        return srv_tool_error(c,
                              "%s: session_id: 1 to 64 characters of A-Z, a-z, 0-9, '.', '_' "
                              "and '-'",
                              tool);
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
        if (asprintf(ret_error, "servers: must be an array of at most %d server names",
                     SRV_MAX_SERVERS) < 0)
            *ret_error = NULL;
        return NULL;
    }
    const char *names[SRV_MAX_SERVERS];
    size_t n = 0;
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e)
    {
        const char *name = json_string_value(e);
        if (!name || !mcp_registry_has(s->registry, name)) {
            json_t *known = mcp_registry_names(s->registry);
            char *list = srv_names_text(known);
            if (asprintf(ret_error,
                         "servers[%zu]: %s%.64s%s is not a configured MCP server "
                         "(configured: %s)",
                         i, name ? "'" : "", name ? name : "(not a string)", name ? "'" : "",
                         list ? list : "?") < 0)
                *ret_error = NULL;
            free(list);
            json_decref(known);
            json_decref(out);
            return NULL;
        }
        names[n++] = name;
    }
    qsort(names, n, sizeof(names[0]), srv_cmp_str);
    for (size_t k = 0; k < n; k++)
        if (k == 0 || strcmp(names[k], names[k - 1]) != 0)
            json_array_append_new(out, json_string(names[k]));
    return out;
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

static json_t *srv_run_python(struct mcp_server_conn *c, json_t *args, json_t *token,
                              const struct mcp_server_out *out, struct srv_call *k)
{
    struct mcp_server *s = c->srv;
    static const char *const allowed[] = {"code",       "servers", "timeout",
                                          "session_id", "output",  NULL};
    const char *unknown = srv_unknown_key(args, allowed);
    if (unknown)
        return srv_tool_error(c,
                              "run_python: unknown argument '%.64s' (arguments: code, servers, "
                              "timeout, session_id, output)",
                              unknown);
    json_t *code = json_object_get(args, "code");
    if (!json_is_string(code))
        return srv_tool_error(c, "run_python: code: required, a string of Python source");
    if (json_string_length(code) > SRV_MAX_CODE ||
        strlen(json_string_value(code)) != json_string_length(code))
        return srv_tool_error(c, "run_python: code: at most 1 MiB, without NUL characters");
    const char *name;
    json_t *bad = srv_session_id_arg(c, "run_python", args, &name);
    if (bad)
        return bad;
    bool as_json = s->opt.output_json;
    json_t *mode = json_object_get(args, "output");
    if (mode && !json_is_null(mode)) {
        const char *m = json_string_value(mode);
        if (!m || (strcmp(m, "text") != 0 && strcmp(m, "json") != 0))
            return srv_tool_error(c, "run_python: output: \"text\" or \"json\"");
        as_json = strcmp(m, "json") == 0;
    }
    json_t *notes = json_array();
    int64_t timeout_ms = 0;
    json_t *t = json_object_get(args, "timeout");
    if (t && !json_is_null(t)) {
        double secs = json_number_value(t);
        if (!json_is_number(t) || !isfinite(secs) || secs <= 0) {
            json_decref(notes);
            return srv_tool_error(c, "run_python: timeout: a number of seconds greater than 0");
        }
        if (secs * 1000.0 > (double)s->opt.max_timeout_ms) {
            timeout_ms = s->opt.max_timeout_ms;
            srv_note(notes,
                     "timeout %g s exceeds this server's limit; clamped to %g s (the session "
                     "maximum, --session-max-timeout-ms)",
                     secs, (double)timeout_ms / 1000.0);
        } else {
            timeout_ms = (int64_t)(secs * 1000.0 + 0.5); /* no libm: rounding by hand */
            if (timeout_ms < 1)
                timeout_ms = 1;
        }
    }
    char *why = NULL;
    json_t *servers = srv_servers_arg(s, json_object_get(args, "servers"), &why);
    if (!servers) {
        json_decref(notes);
        json_t *r = srv_tool_error(c, "run_python: %s", why ? why : "servers: invalid");
        free(why);
        return r;
    }
    json_t *result = NULL;
    char *label = NULL;
    char id[65] = "";
    struct session_error err = {0};
    int r = -EIO;
    for (int attempt = 0; attempt < 2; attempt++) {
        free(label);
        label = NULL;
        r = srv_sandbox_get(c, name, servers, notes, id, &label, &why);
        if (r < 0)
            break;
        if (!srv_call_executing(c, k, id)) {
            r = -ECANCELED;
            break;
        }
        struct srv_progress prog;
        bool streaming = token && out && out->notify;
        if (streaming)
            srv_progress_start(&prog, out, token);
        struct session_stream stream = {.userdata = &prog, .on_output = srv_progress_output};
        r = sessions_execute(s->sessions, id, json_string_value(code), timeout_ms,
                             streaming ? &stream : NULL, &result, &err);
        if (streaming)
            srv_progress_finish(&prog);
        (void)srv_call_executing(c, k, NULL);
        if (r != -ENOENT || srv_call_cancelled(c, k))
            break;
        /* It ended between the lookup and the execution (reaped, deleted): once more. */
        session_error_done(&err);
        srv_note_ended(notes, label);
        pthread_mutex_lock(&c->create_lock);
        srv_sandbox_forget(c, id);
        pthread_mutex_unlock(&c->create_lock);
    }
    json_decref(servers);
    if (r == -ECANCELED) {
        json_decref(notes);
        free(label);
        return NULL;
    }
    if (r < 0) {
        json_t *e = srv_tool_error(c, "run_python: %s",
                                   why           ? why
                                   : err.message ? err.message
                                                 : "the execution failed");
        free(why);
        session_error_done(&err);
        json_decref(notes);
        free(label);
        return e;
    }
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
    json_t *st = json_pack(
        "{s:O, s:O, s:O, s:O, s:O, s:O, s:O, s:b, s:s, s:O, s:O}", "status",
        json_object_get(result, "status"), "stdout", json_object_get(result, "stdout"), "stderr",
        json_object_get(result, "stderr"), "error", json_object_get(result, "error"), "result",
        res ? res : json_null(), "durationMs", json_object_get(result, "durationMs"), "truncated",
        json_object_get(result, "truncated"), "sessionAlive", alive, "session", label, "mcpCalls",
        json_object_get(result, "mcpCalls"), "notes", notes);
    json_decref(notes);
    json_decref(result);
    free(label);
    if (!st)
        return srv_tool_error(c, "run_python: out of memory");
    const char *status = json_string_value(json_object_get(st, "status"));
    char *text = as_json ? json_dumps(st, JSON_COMPACT | JSON_REAL_PRECISION(12))
                         : srv_run_text(st, timeout_ms ? timeout_ms : s->opt.default_timeout_ms);
    json_t *reply = srv_tool_result(c, text ? text : "", st, !status || strcmp(status, "ok"));
    free(text);
    return reply;
}

/* ---- list_servers, search_tool_docs, reset_session ----------------------------------------- */

static json_t *srv_list_servers(struct mcp_server_conn *c, json_t *args)
{
    struct mcp_server *s = c->srv;
    static const char *const allowed[] = {"tools", NULL};
    const char *unknown = srv_unknown_key(args, allowed);
    json_t *want = json_object_get(args, "tools");
    if (unknown)
        return srv_tool_error(c, "list_servers: unknown argument '%.64s' (arguments: tools)",
                              unknown);
    if (want && !json_is_boolean(want) && !json_is_null(want))
        return srv_tool_error(c, "list_servers: tools: true or false");
    json_t *servers = mcp_registry_describe(s->registry);
    struct buf b;
    buf_init(&b, 4u << 20);
    size_t i;
    json_t *d;
    json_array_foreach(servers, i, d)
    {
        const char *name = json_string_value(json_object_get(d, "name"));
        const char *desc = json_string_value(json_object_get(d, "description"));
        struct buf alias;
        buf_init(&alias, 256);
        srv_identifier(name, &alias);
        (void)buf_printf(&b, "%s (%s%s) — Python: mcp_%s%s%s\n", name,
                         json_string_value(json_object_get(d, "transport")),
                         json_is_true(json_object_get(d, "connected")) ? ", running" : "",
                         alias.data ? alias.data : "", desc && *desc ? "; " : "", desc ? desc : "");
        buf_free(&alias);
        if (!json_is_true(want))
            continue;
        json_t *tools = NULL;
        struct mcp_error me = {0};
        if (mcp_registry_tools(s->registry, name, s->opt.lookup_timeout_ms, &tools, &me) < 0) {
            (void)buf_printf(&b, "  unavailable: %s\n", me.message ? me.message : "failed");
            json_object_set_new(d, "error", json_string(me.message ? me.message : "failed"));
            mcp_error_clear(&me);
            continue;
        }
        json_t *names = json_array();
        size_t k;
        json_t *t;
        json_array_foreach(tools, k, t)
        {
            json_t *tn = json_object_get(t, "name");
            if (json_is_string(tn))
                json_array_append(names, tn);
        }
        char *list = srv_names_text(names);
        (void)buf_printf(&b, "  tools: %s\n", list ? list : "?");
        free(list);
        json_object_set_new(d, "tools", names);
        json_decref(tools);
    }
    if (!json_array_size(servers))
        (void)buf_appends(&b, "No MCP servers are configured: start sandboxd with --mcp-config "
                              "FILE (Claude Desktop format).");
    else
        (void)buf_appends(&b, "Pass names in run_python's `servers` to use them from code; "
                              "search_tool_docs finds their tools.");
    json_t *st = json_pack("{s:o}", "servers", servers);
    char *text = s->opt.output_json ? json_dumps(st, JSON_COMPACT) : buf_take(&b, NULL);
    json_t *r = srv_tool_result(c, text ? text : "", st, false);
    free(text);
    buf_free(&b);
    return r;
}

/* How often the words of the query occur in a tool, name matches weighing more (the same
 * scoring as the session runtime's search_tool_docs). */
static long srv_score(json_t *words, const char *name, const char *desc)
{
    long score = 0;
    size_t i;
    json_t *w;
    json_array_foreach(words, i, w)
    {
        const char *word = json_string_value(w);
        for (int pass = 0; pass < 2; pass++) {
            const char *hay = pass ? desc : name;
            for (const char *p = hay; p && (p = strcasestr(p, word)); p += strlen(word))
                score++;
        }
        if (strcasestr(name, word))
            score += 3;
    }
    return score;
}

struct srv_hit {
    long score;
    const char *server;
    json_t *tool; /* borrowed from the server's tools */
};

static int srv_cmp_hit(const void *a, const void *b)
{
    const struct srv_hit *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    int r = strcmp(x->server, y->server);
    return r ? r
             : strcmp(json_string_value(json_object_get(x->tool, "name")),
                      json_string_value(json_object_get(y->tool, "name")));
}

/* "a: number (required) — desc; b: ..." and "a=..., b=..." for one input schema. */
static void srv_params_text(json_t *schema, struct buf *params, struct buf *call)
{
    json_t *props = json_object_get(schema, "properties");
    json_t *req = json_object_get(schema, "required");
    const char *key;
    json_t *p;
    unsigned n = 0;
    json_object_foreach(props, key, p)
    {
        if (n++ >= 32) {
            (void)buf_appends(params, "; ...");
            break;
        }
        bool required = false;
        size_t i;
        json_t *r;
        json_array_foreach(req, i, r)
        {
            required |= json_is_string(r) && strcmp(json_string_value(r), key) == 0;
        }
        json_t *type = json_object_get(p, "type");
        char *types = json_is_array(type) ? srv_names_text(type) : NULL;
        const char *tname = json_is_string(type) ? json_string_value(type) : types;
        const char *desc = json_string_value(json_object_get(p, "description"));
        (void)buf_printf(params, "%s%s: %s%s%s%.200s", n > 1 ? "; " : "", key,
                         tname ? tname : "any", required ? ", required" : "",
                         desc && *desc ? " — " : "", desc ? desc : "");
        free(types);
        (void)buf_printf(call, "%s%s=...", n > 1 ? ", " : "", key);
    }
}

static json_t *srv_search(struct mcp_server_conn *c, json_t *args)
{
    struct mcp_server *s = c->srv;
    static const char *const allowed[] = {"query", "limit", NULL};
    const char *unknown = srv_unknown_key(args, allowed);
    if (unknown)
        return srv_tool_error(c,
                              "search_tool_docs: unknown argument '%.64s' (arguments: query, "
                              "limit)",
                              unknown);
    json_t *q = json_object_get(args, "query");
    json_t *lim = json_object_get(args, "limit");
    if (!json_is_string(q) || json_string_length(q) > SRV_MAX_QUERY)
        return srv_tool_error(c,
                              "search_tool_docs: query: required, a string of at most %d "
                              "bytes",
                              SRV_MAX_QUERY);
    if (lim && !json_is_null(lim) &&
        (!json_is_integer(lim) || json_integer_value(lim) < 1 || json_integer_value(lim) > 50))
        return srv_tool_error(c, "search_tool_docs: limit: an integer from 1 to 50");
    size_t limit = json_is_integer(lim) ? (size_t)json_integer_value(lim) : 5;
    /* The words: runs of letters, digits and '_' (bytes of UTF-8 characters count as letters). */
    json_t *words = json_array();
    const char *p = json_string_value(q);
    while (*p && json_array_size(words) < 32) {
        while (*p && !(isalnum((unsigned char)*p) || *p == '_' || (unsigned char)*p >= 0x80))
            p++;
        const char *start = p;
        while (*p && (isalnum((unsigned char)*p) || *p == '_' || (unsigned char)*p >= 0x80))
            p++;
        if (p > start)
            json_array_append_new(words, json_stringn(start, (size_t)(p - start)));
    }
    json_t *names = mcp_registry_names(s->registry);
    json_t *all = json_object(); /* server -> tools, keeps them alive while hits point in */
    json_t *unavailable = json_array();
    struct srv_hit *hits = NULL;
    size_t n_hits = 0, cap = 0;
    size_t i;
    json_t *nv;
    json_array_foreach(names, i, nv)
    {
        const char *server = json_string_value(nv);
        json_t *tools = NULL;
        struct mcp_error me = {0};
        if (mcp_registry_tools(s->registry, server, s->opt.lookup_timeout_ms, &tools, &me) < 0) {
            json_array_append_new(unavailable, json_pack("{s:s, s:s}", "server", server, "error",
                                                         me.message ? me.message : "failed"));
            mcp_error_clear(&me);
            continue;
        }
        json_object_set_new(all, server, tools);
        size_t k;
        json_t *t;
        json_array_foreach(tools, k, t)
        {
            const char *tn = json_string_value(json_object_get(t, "name"));
            long score =
                tn && json_array_size(words)
                    ? srv_score(words, tn, json_string_value(json_object_get(t, "description")))
                    : 0;
            if (score <= 0)
                continue;
            if (n_hits == cap) {
                size_t ncap = cap ? cap * 2 : 32;
                struct srv_hit *nh = realloc(hits, ncap * sizeof(*nh));
                if (!nh)
                    break;
                hits = nh;
                cap = ncap;
            }
            hits[n_hits++] = (struct srv_hit){.score = score, .server = server, .tool = t};
        }
    }
    if (n_hits)
        qsort(hits, n_hits, sizeof(*hits), srv_cmp_hit);
    json_t *results = json_array();
    struct buf b;
    buf_init(&b, 4u << 20);
    for (size_t h = 0; h < n_hits && h < limit; h++) {
        json_t *t = hits[h].tool;
        const char *tn = json_string_value(json_object_get(t, "name"));
        const char *desc = json_string_value(json_object_get(t, "description"));
        struct buf alias, params, args_text;
        buf_init(&alias, 1024);
        buf_init(&params, 64u << 10);
        buf_init(&args_text, 16u << 10);
        (void)buf_appends(&alias, "await mcp_");
        srv_identifier(hits[h].server, &alias);
        (void)buf_appends(&alias, ".");
        srv_identifier(tn, &alias);
        srv_params_text(json_object_get(t, "inputSchema"), &params, &args_text);
        (void)buf_printf(&alias, "(%s)", args_text.data ? args_text.data : "");
        json_array_append_new(
            results, json_pack("{s:s, s:s, s:s, s:s, s:O*}", "server", hits[h].server, "tool", tn,
                               "python", alias.data ? alias.data : "", "description",
                               desc ? desc : "", "inputSchema", json_object_get(t, "inputSchema")));
        (void)buf_printf(&b, "%s.%s — %.300s\n  python: %s   (run_python with servers=[\"%s\"])\n",
                         hits[h].server, tn, desc ? desc : "", alias.data ? alias.data : "",
                         hits[h].server);
        if (params.len)
            (void)buf_printf(&b, "  parameters: %s\n", params.data);
        buf_free(&alias);
        buf_free(&params);
        buf_free(&args_text);
    }
    if (!json_array_size(results))
        (void)buf_printf(&b, "No tool matches '%.200s'%s\n", json_string_value(q),
                         json_array_size(names) ? "" : " (no MCP servers are configured)");
    json_array_foreach(unavailable, i, nv)
    {
        (void)buf_printf(&b, "[note] server '%s' is unavailable: %s\n",
                         json_string_value(json_object_get(nv, "server")),
                         json_string_value(json_object_get(nv, "error")));
    }
    if (b.len && b.data[b.len - 1] == '\n')
        b.data[--b.len] = '\0';
    json_t *st = json_pack("{s:o, s:o}", "results", results, "unavailable", unavailable);
    char *text = s->opt.output_json ? json_dumps(st, JSON_COMPACT) : buf_take(&b, NULL);
    json_t *r = srv_tool_result(c, text ? text : "", st, false);
    free(text);
    buf_free(&b);
    free(hits);
    json_decref(all);
    json_decref(names);
    json_decref(words);
    return r;
}

static json_t *srv_reset(struct mcp_server_conn *c, json_t *args)
{
    static const char *const allowed[] = {"session_id", NULL};
    const char *unknown = srv_unknown_key(args, allowed);
    if (unknown)
        return srv_tool_error(c, "reset_session: unknown argument '%.64s' (arguments: session_id)",
                              unknown);
    const char *name;
    json_t *bad = srv_session_id_arg(c, "reset_session", args, &name);
    if (bad)
        return bad;
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
        (void)sessions_delete(c->srv->sessions, b->id); /* -ENOENT: it had ended on its own */
        srv_sandbox_free(b);
    }
    pthread_mutex_unlock(&c->create_lock);
    if (name && !n)
        return srv_tool_error(c, "reset_session: this connection has no session named '%s'", name);
    char text[200];
    if (name)
        snprintf(text, sizeof(text), "session '%s' was reset", name);
    else if (n)
        snprintf(text, sizeof(text), "the default session was reset (%u session%s ended)", n,
                 n == 1 ? "" : "s");
    else
        snprintf(text, sizeof(text), "there was no default session: nothing to reset");
    return srv_tool_result(c, text, json_pack("{s:I}", "ended", (json_int_t)n), false);
}

/* ---- the protocol -------------------------------------------------------------------------- */

static const char srv_instructions[] =
    "sandboxd runs Python in isolated sandboxes. Use run_python to execute code: state "
    "persists between calls of a session (one default session per connection; pass "
    "session_id for separate ones), top-level await works, and the value of the last "
    "expression is returned. To call tools of the configured MCP servers from code, find them "
    "with search_tool_docs (or list_servers), pass the server names in run_python's servers, "
    "and await mcp_<server>.<tool>(...). reset_session starts over.";

static json_t *srv_initialize(struct mcp_server_conn *c, json_t *id, json_t *params)
{
    const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
    if (!asked)
        return srv_error(id, JSONRPC_INVALID_PARAMS, NULL,
                         "Invalid params: initialize needs params.protocolVersion (a string)");
    const char *version = NULL;
    for (size_t i = 0; i < ARRAY_SIZE(srv_versions) && !version; i++)
        if (strcmp(asked, srv_versions[i]) == 0)
            version = srv_versions[i];
    if (!version) {
        json_t *supported = json_array();
        for (size_t i = 0; i < ARRAY_SIZE(srv_versions); i++)
            json_array_append_new(supported, json_string(srv_versions[i]));
        return srv_error(id, JSONRPC_INVALID_PARAMS,
                         json_pack("{s:o, s:s}", "supported", supported, "requested", asked),
                         "Unsupported protocol version %.64s (supported: %s, %s, %s)", asked,
                         srv_versions[0], srv_versions[1], srv_versions[2]);
    }
    pthread_mutex_lock(&c->lock);
    bool again = c->version != NULL;
    if (!again)
        c->version = version;
    pthread_mutex_unlock(&c->lock);
    if (again)
        return srv_error(id, JSONRPC_INVALID_REQUEST, NULL,
                         "Invalid Request: this connection is initialized already");
    json_t *client = json_object_get(params, "clientInfo");
    log_fields(LOG_INFO, "mcp: client connected",
               json_pack("{s:s, s:s, s:s?, s:s?}", "transport", c->srv->opt.transport,
                         "protocolVersion", version, "client",
                         json_string_value(json_object_get(client, "name")), "clientVersion",
                         json_string_value(json_object_get(client, "version"))));
    json_t *info = json_pack("{s:s, s:s}", "name", "sandboxd", "version", SANDBOXD_VERSION);
    if (info && !srv_legacy(c))
        json_object_set_new(info, "title", json_string("sandboxd Python sandbox"));
    json_t *result =
        json_pack("{s:s, s:{s:{s:b}}, s:o, s:s}", "protocolVersion", version, "capabilities",
                  "tools", "listChanged", 0, "serverInfo", info, "instructions", srv_instructions);
    json_t *r = jsonrpc_result_new(id, result);
    json_decref(result);
    return r;
}

static json_t *srv_tools_list(struct mcp_server_conn *c, json_t *id, json_t *params)
{
    json_t *all = srv_legacy(c) ? c->srv->tools_legacy : c->srv->tools;
    size_t n = json_array_size(all), start = 0;
    json_t *cursor = json_object_get(params, "cursor");
    if (cursor && !json_is_null(cursor)) {
        /* Opaque to clients; to us the offset of the page. */
        const char *cs = json_string_value(cursor);
        size_t plen = strlen(SRV_CURSOR_PREFIX);
        char *end = NULL;
        unsigned long v = 0;
        bool ok = cs && strncmp(cs, SRV_CURSOR_PREFIX, plen) == 0 &&
                  isdigit((unsigned char)cs[plen]) && strlen(cs + plen) <= 6;
        if (ok) {
            v = strtoul(cs + plen, &end, 10);
            ok = *end == '\0' && v > 0 && v < n;
        }
        if (!ok)
            return srv_error(id, JSONRPC_INVALID_PARAMS, NULL,
                             "Invalid params: invalid cursor (use the nextCursor of a previous "
                             "tools/list, or none)");
        start = v;
    }
    size_t end_i = start + c->srv->opt.page_size < n ? start + c->srv->opt.page_size : n;
    json_t *page = json_array();
    for (size_t i = start; i < end_i; i++)
        json_array_append(page, json_array_get(all, i));
    json_t *result = json_pack("{s:o}", "tools", page);
    if (result && end_i < n) {
        char next[64];
        snprintf(next, sizeof(next), "%s%zu", SRV_CURSOR_PREFIX, end_i);
        json_object_set_new(result, "nextCursor", json_string(next));
    }
    json_t *r = jsonrpc_result_new(id, result);
    json_decref(result);
    return r;
}

static json_t *srv_tools_call(struct mcp_server_conn *c, json_t *id, json_t *params,
                              const struct mcp_server_out *out)
{
    const char *name = json_string_value(json_object_get(params, "name"));
    json_t *args = json_object_get(params, "arguments");
    if (!name)
        return srv_error(id, JSONRPC_INVALID_PARAMS, NULL,
                         "Invalid params: tools/call needs params.name (a string)");
    if (args && !json_is_null(args) && !json_is_object(args))
        return srv_error(id, JSONRPC_INVALID_PARAMS, NULL,
                         "Invalid params: params.arguments must be an object");
    enum { T_RUN, T_LIST, T_SEARCH, T_RESET, T_NONE } tool = T_NONE;
    static const char *const names[] = {"run_python", "list_servers", "search_tool_docs",
                                        "reset_session"};
    for (size_t i = 0; i < ARRAY_SIZE(names); i++)
        if (strcmp(name, names[i]) == 0)
            tool = (int)i;
    if (tool == T_NONE)
        return srv_error(id, JSONRPC_INVALID_PARAMS, NULL,
                         "Invalid params: unknown tool '%.64s' (tools: run_python, "
                         "list_servers, search_tool_docs, reset_session)",
                         name);
    json_t *token = json_object_get(json_object_get(params, "_meta"), "progressToken");
    if (!jsonrpc_id_valid(token))
        token = NULL; /* string or integer, like an id */
    json_t *error = NULL;
    struct srv_call *k = srv_call_begin(c, id, &error);
    if (!k)
        return error;
    json_t *empty = json_object();
    json_t *a = json_is_object(args) ? args : empty;
    int64_t start = clock_mono_us();
    json_t *result = tool == T_RUN      ? srv_run_python(c, a, token, out, k)
                     : tool == T_LIST   ? srv_list_servers(c, a)
                     : tool == T_SEARCH ? srv_search(c, a)
                                        : srv_reset(c, a);
    json_decref(empty);
    bool cancelled = srv_call_end(c, k);
    log_fields(LOG_INFO, "mcp: tools/call",
               json_pack("{s:s, s:f, s:b, s:b}", "tool", name, "durationMs",
                         (double)(clock_mono_us() - start) / 1000.0, "isError",
                         json_is_true(json_object_get(result, "isError")), "cancelled", cancelled));
    if (cancelled) {
        json_decref(result); /* the client gave up on it: no answer (spec) */
        return NULL;
    }
    if (!result)
        return srv_error(id, JSONRPC_INTERNAL_ERROR, NULL, "Internal error: out of memory");
    json_t *r = jsonrpc_result_new(id, result);
    json_decref(result);
    return r;
}

static json_t *srv_handle_one(struct mcp_server_conn *c, json_t *msg,
                              const struct mcp_server_out *out)
{
    struct jsonrpc_message m;
    switch (jsonrpc_classify(msg, &m)) {
    case JSONRPC_INVALID:
        return srv_error(m.id, JSONRPC_INVALID_REQUEST, NULL, "Invalid Request: %s", m.invalid);
    case JSONRPC_RESPONSE:
    case JSONRPC_ERROR_RESPONSE:
        return NULL; /* we send no requests, so no answer is awaited */
    case JSONRPC_NOTIFICATION:
        /* notifications/initialized needs nothing: requests are served from the initialize
         * answer on (clients send it at once anyway). Others (roots/list_changed...) neither. */
        if (strcmp(m.method, "notifications/cancelled") == 0 && json_is_object(m.params))
            srv_cancel(c, m.params);
        return NULL;
    case JSONRPC_REQUEST:
        break;
    }
    if (m.params && !json_is_object(m.params))
        return srv_error(m.id, JSONRPC_INVALID_PARAMS, NULL,
                         "Invalid params: params must be an object");
    pthread_mutex_lock(&c->lock);
    bool closed = c->closed, initialized = c->version != NULL;
    pthread_mutex_unlock(&c->lock);
    if (closed)
        return srv_error(m.id, -32000, NULL, "Connection closed");
    if (strcmp(m.method, "initialize") == 0)
        return srv_initialize(c, m.id, m.params);
    if (strcmp(m.method, "ping") == 0)
        return jsonrpc_result_new(m.id, NULL);
    if (!initialized)
        return srv_error(m.id, JSONRPC_INVALID_REQUEST, NULL,
                         "Invalid Request: the connection is not initialized; send initialize "
                         "first");
    if (strcmp(m.method, "tools/list") == 0)
        return srv_tools_list(c, m.id, m.params);
    if (strcmp(m.method, "tools/call") == 0)
        return srv_tools_call(c, m.id, m.params, out);
    return srv_error(m.id, JSONRPC_METHOD_NOT_FOUND, NULL, "Method not found: %.100s", m.method);
}

json_t *mcp_server_handle(struct mcp_server_conn *c, json_t *msg, const struct mcp_server_out *out)
{
    if (!json_is_array(msg))
        return srv_handle_one(c, msg, out);
    /* Batches were part of 2025-03-26 only (removed in 2025-06-18). */
    const char *version = mcp_server_conn_version(c);
    if (!version || strcmp(version, "2025-03-26") != 0)
        return srv_error(NULL, JSONRPC_INVALID_REQUEST, NULL,
                         "Invalid Request: JSON-RPC batches are accepted with protocol version "
                         "2025-03-26 only");
    if (json_array_size(msg) == 0 || json_array_size(msg) > MCP_SERVER_MAX_BATCH)
        return srv_error(NULL, JSONRPC_INVALID_REQUEST, NULL,
                         "Invalid Request: a batch holds 1 to %d messages", MCP_SERVER_MAX_BATCH);
    json_t *answers = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(msg, i, e)
    {
        /* An initialize is refused as a repeated one: only an initialized connection gets
         * here, and the spec forbids initialize in a batch anyway. */
        json_t *r = srv_handle_one(c, e, out);
        if (r)
            json_array_append_new(answers, r);
    }
    if (json_array_size(answers) == 0) {
        json_decref(answers);
        return NULL;
    }
    return answers;
}

static void srv_peek_one(json_t *msg, struct mcp_server_peek *ret)
{
    struct jsonrpc_message m;
    enum jsonrpc_kind kind = jsonrpc_classify(msg, &m);
    if (!ret->batch)
        ret->kind = kind;
    if (kind != JSONRPC_REQUEST)
        return;
    ret->has_request = true;
    ret->initialize |= strcmp(m.method, "initialize") == 0;
    json_t *token = json_object_get(json_object_get(m.params, "_meta"), "progressToken");
    ret->progress |= strcmp(m.method, "tools/call") == 0 && jsonrpc_id_valid(token);
}

void mcp_server_peek(json_t *msg, struct mcp_server_peek *ret)
{
    *ret = (struct mcp_server_peek){.kind = JSONRPC_INVALID};
    if (!json_is_array(msg)) {
        srv_peek_one(msg, ret);
        return;
    }
    ret->batch = true;
    size_t i;
    json_t *e;
    json_array_foreach(msg, i, e)
    {
        srv_peek_one(e, ret);
    }
}
