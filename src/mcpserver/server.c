// SPDX-License-Identifier: MIT
/*
 * server — see server.h. The protocol core: the server and its connections,
 * the tools/call requests in flight and their cancellation, and the protocol
 * (initialize, ping, tools/list, the tools/call dispatch, batches, peeking).
 * The tools themselves are in server_tools.c; what the two files share is in
 * server_int.h. Nothing is called on a transport under a lock.
 */
#include "mcpserver/server.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mcpclient/registry.h"
#include "mcpserver/server_int.h"
#include "session/session.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/fmt.h"
#include "util/jdump.h"

#ifndef SANDBOXD_VERSION
#define SANDBOXD_VERSION "0.0.0"
#endif

#define SRV_CANCEL_GRACE_US 2000000 /* between interrupting and ending a cancelled run */
#define SRV_CURSOR_PREFIX   "sandboxd-tools-"

/* Each protocol version's name; c->version points to one of them. */
static const char *const srv_versions[SRV_N_VERSIONS] = {
    [SRV_V_2024_11_05] = "2024-11-05",
    [SRV_V_2025_03_26] = "2025-03-26",
    [SRV_V_2025_06_18] = "2025-06-18",
    [SRV_V_2025_11_25] = MCP_SERVER_VERSION_LATEST,
};

/* A tools/call being handled. */
struct srv_call {
    struct srv_call *next;
    json_t *id;
    const char *tool;                 /* its name (the tool table's, static) */
    char sandbox[SESSION_ID_MAX + 1]; /* the session it executes in, "" when not (yet) executing */
    bool cancelled, done;
    int refs; /* under the connection's lock */
};

/* ---- small helpers ------------------------------------------------------------------------ */

bool mcp_server_version_supported(const char *version)
{
    for (size_t i = 0; version && i < ARRAY_SIZE(srv_versions); i++)
        if (strcmp(version, srv_versions[i]) == 0)
            return true;
    return false;
}

enum srv_version srv_version_of(const struct mcp_server_conn *c)
{
    for (size_t v = 0; c->version && v < SRV_N_VERSIONS; v++)
        if (c->version == srv_versions[v])
            return (enum srv_version)v;
    return SRV_N_VERSIONS - 1;
}

bool srv_since(const struct mcp_server_conn *c, enum srv_version v)
{
    return srv_version_of(c) >= v;
}

json_t *srv_error(json_t *id, int code, json_t *data, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = fmt_va(fmt, ap);
    va_end(ap);
    json_t *e = jsonrpc_error_new(jsonrpc_id_valid(id) ? id : NULL, code, msg, data);
    free(msg);
    json_decref(data);
    return e;
}

json_t *srv_result(json_t *id, json_t *result)
{
    if (!result)
        return srv_error(id, JSONRPC_INTERNAL_ERROR, NULL, "Internal error: out of memory");
    json_t *r = jsonrpc_result_new(id, result);
    json_decref(result);
    return r;
}

json_t *mcp_server_parse_error(const char *why)
{
    return srv_error(NULL, JSONRPC_PARSE_ERROR, NULL, "Parse error: %s", why ? why : "not JSON");
}

int mcp_server_new_pending(const struct mcp_server_options *opt, struct mcp_server **ret)
{
    struct mcp_server *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->opt = *opt;
    if (!s->opt.page_size)
        s->opt.page_size = MCP_SERVER_PAGE_SIZE_DEFAULT;
    s->workspace = strdup(opt->workspace ? opt->workspace : SESSION_WORKSPACE_DEFAULT);
    pthread_mutex_init(&s->bg_lock, NULL);
    pthread_cond_init(&s->bg_cond, NULL);
    pthread_cond_init(&s->ready_cond, NULL);
    if (!s->workspace) {
        mcp_server_free(s);
        return -ENOMEM;
    }
    *ret = s;
    return 0;
}

int mcp_server_start(struct mcp_server *s, struct sessions *sessions, struct mcp_registry *registry)
{
    s->sessions = sessions;
    s->registry = registry;
    int r = srv_catalog_build(s) < 0 ? -ENOMEM : 1;
    pthread_mutex_lock(&s->bg_lock);
    s->ready = r;
    pthread_cond_broadcast(&s->ready_cond);
    pthread_mutex_unlock(&s->bg_lock);
    return r < 0 ? r : 0;
}

void mcp_server_fail(struct mcp_server *s, int err)
{
    pthread_mutex_lock(&s->bg_lock);
    s->ready = err < 0 ? err : -EIO;
    pthread_cond_broadcast(&s->ready_cond);
    pthread_mutex_unlock(&s->bg_lock);
}

int mcp_server_new(const struct mcp_server_options *opt, struct sessions *sessions,
                   struct mcp_registry *registry, struct mcp_server **ret)
{
    struct mcp_server *s = NULL;
    int r = mcp_server_new_pending(opt, &s);
    if (r == 0 && (r = mcp_server_start(s, sessions, registry)) < 0)
        mcp_server_free(s);
    if (r == 0)
        *ret = s;
    return r;
}

/* Wait for the set-up: NULL when the server is ready, else the error response for id. */
static json_t *srv_wait_ready(struct mcp_server *s, json_t *id)
{
    pthread_mutex_lock(&s->bg_lock);
    while (!s->ready)
        pthread_cond_wait(&s->ready_cond, &s->bg_lock);
    int r = s->ready;
    pthread_mutex_unlock(&s->bg_lock);
    return r > 0 ? NULL
                 : srv_error(id, JSONRPC_INTERNAL_ERROR, NULL,
                             "Internal error: sandboxd could not start (%s); see its log",
                             strerror(-r));
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
    pthread_cond_destroy(&s->ready_cond);
    for (size_t i = 0; i < ARRAY_SIZE(s->tools); i++)
        json_decref(s->tools[i]);
    json_decref(s->resources);
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

void mcp_server_conn_set_tenant(struct mcp_server_conn *c, struct tenant *tenant)
{
    c->tenant = tenant;
}

void mcp_server_conn_close(struct mcp_server_conn *c)
{
    pthread_mutex_lock(&c->lock);
    struct srv_sandbox *list = TAKE_PTR(c->sandboxes);
    bool was_closed = c->closed;
    c->closed = true;
    c->n_sandboxes = 0;
    char spare[sizeof(c->spare)];
    memcpy(spare, c->spare, sizeof(spare));
    c->spare[0] = '\0';
    pthread_mutex_unlock(&c->lock);
    if (*spare)
        (void)sessions_end(c->srv->sessions, spare, "its MCP connection closed");
    while (list) {
        struct srv_sandbox *b = list;
        list = b->next;
        /* -ENOENT: it had ended already */
        (void)sessions_end(c->srv->sessions, b->id, "its MCP connection closed");
        srv_sandbox_free(b);
    }
    srv_approvals_close(c); /* their executions end with their sessions */
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

bool mcp_server_conn_elicits(struct mcp_server_conn *c)
{
    pthread_mutex_lock(&c->lock);
    bool e = c->elicit;
    pthread_mutex_unlock(&c->lock);
    return e;
}

unsigned mcp_server_conn_busy(struct mcp_server_conn *c)
{
    pthread_mutex_lock(&c->lock);
    unsigned n = c->n_calls;
    pthread_mutex_unlock(&c->lock);
    return n;
}

/* ---- calls in flight and their cancellation ------------------------------------------------ */

/* notifications/cancelled interrupts the execution the way a time limit does (SIGINT); a
 * canceller thread repeats the interrupt once (the first is lost if it lands before the
 * interpreter started the code) and ends the session if the code still runs after the grace
 * period. */

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
        *ret_error = srv_error(id, JSONRPC_SERVER_ERROR, NULL,
                               "Server busy: %d requests of this connection are running",
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
bool srv_call_executing(struct mcp_server_conn *c, struct srv_call *k, const char *sandbox)
{
    pthread_mutex_lock(&c->lock);
    bool go = !k->cancelled;
    /* A cancelled call never runs, so the canceller must not find its session to end. */
    snprintf(k->sandbox, sizeof(k->sandbox), "%s", go && sandbox ? sandbox : "");
    pthread_mutex_unlock(&c->lock);
    return go;
}

const char *srv_call_tool(const struct srv_call *k)
{
    return k->tool;
}

bool srv_call_cancelled(struct mcp_server_conn *c, struct srv_call *k)
{
    pthread_mutex_lock(&c->lock);
    bool cancelled = k->cancelled;
    pthread_mutex_unlock(&c->lock);
    return cancelled;
}

int srv_bg_start(struct mcp_server *s, void *(*fn)(void *), void *arg)
{
    pthread_mutex_lock(&s->bg_lock);
    s->bg_threads++;
    pthread_mutex_unlock(&s->bg_lock);
    pthread_attr_t attr;
    pthread_t t;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int r = pthread_create(&t, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    if (r != 0)
        srv_bg_done(s);
    return -r;
}

void srv_bg_done(struct mcp_server *s)
{
    pthread_mutex_lock(&s->bg_lock);
    s->bg_threads--;
    pthread_cond_broadcast(&s->bg_cond);
    pthread_mutex_unlock(&s->bg_lock);
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
        char sandbox[SESSION_ID_MAX + 1];
        snprintf(sandbox, sizeof(sandbox), "%s", k->sandbox);
        pthread_mutex_unlock(&c->lock);
        if (*sandbox && step < 2)
            (void)sessions_interrupt(s->sessions, sandbox); /* -EALREADY: not running (yet) */
        else if (*sandbox) {
            log_warn("mcp: a cancelled execution ignored the interrupt; ending its session");
            (void)sessions_end(s->sessions, sandbox,
                               "its execution was cancelled and ignored the interrupt");
        }
        pthread_mutex_lock(&c->lock);
        if (step < 2)
            (void)srv_call_wait(c, k, SRV_CANCEL_GRACE_US);
    }
    srv_call_unref_locked(k);
    pthread_mutex_unlock(&c->lock);
    mcp_server_conn_unref(c);
    free(job);
    srv_bg_done(s);
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
    char sandbox[SESSION_ID_MAX + 1];
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
        started = srv_bg_start(s, srv_canceller_thread, job) == 0;
        if (!started) {
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

/* ---- the protocol -------------------------------------------------------------------------- */

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
        for (size_t i = SRV_N_VERSIONS; i-- > 0;) /* newest first */
            json_array_append_new(supported, json_string(srv_versions[i]));
        char *list = srv_names_text(supported);
        json_t *e = srv_error(id, JSONRPC_INVALID_PARAMS,
                              json_pack("{s:o, s:s}", "supported", supported, "requested", asked),
                              "Unsupported protocol version %.64s (supported: %s)", asked,
                              list ? list : MCP_SERVER_VERSION_LATEST);
        free(list);
        return e;
    }
    pthread_mutex_lock(&c->lock);
    bool again = c->version != NULL;
    if (!again) {
        c->version = version;
        /* Whether a waiting tool call can be put to the client (approvals.c). */
        c->elicit = srv_elicit_declared(json_object_get(params, "capabilities"), version);
    }
    pthread_mutex_unlock(&c->lock);
    if (again)
        return srv_error(id, JSONRPC_INVALID_REQUEST, NULL,
                         "Invalid Request: this connection is initialized already");
    json_t *client = json_object_get(params, "clientInfo");
    log_pack(LOG_INFO, "mcp: client connected", "{s:s, s:s, s:s?, s:s?}", "transport",
             c->srv->opt.transport, "protocolVersion", version, "client",
             json_string_value(json_object_get(client, "name")), "clientVersion",
             json_string_value(json_object_get(client, "version")));
    json_t *info = json_pack("{s:s, s:s}", "name", "sandboxd", "version", SANDBOXD_VERSION);
    if (info && srv_since(c, SRV_V_2025_06_18))
        json_object_set_new(info, "title", json_string("sandboxd Python sandbox"));
    json_t *result =
        json_pack("{s:s, s:{s:{s:b}, s:{s:b, s:b}}, s:o, s:s}", "protocolVersion", version,
                  "capabilities", "tools", "listChanged", 0, "resources", "subscribe", 0,
                  "listChanged", 0, "serverInfo", info, "instructions", srv_instructions(c->srv));
    return srv_result(id, result);
}

static json_t *srv_tools_list(struct mcp_server_conn *c, json_t *id, json_t *params)
{
    json_t *all = srv_tools(c);
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
    return srv_result(id, result);
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
    const struct srv_tool_def *tool = srv_tool_find(c->srv, name);
    if (!tool) {
        char *names = srv_tool_names(c->srv);
        json_t *e = srv_error(id, JSONRPC_INVALID_PARAMS, NULL,
                              "Invalid params: unknown tool '%.64s' (tools: %s)", name,
                              names ? names : "run_python");
        free(names);
        return e;
    }
    json_t *token = json_object_get(json_object_get(params, "_meta"), "progressToken");
    if (!jsonrpc_id_valid(token))
        token = NULL; /* string or integer, like an id */
    json_t *error = NULL;
    struct srv_call *k = srv_call_begin(c, id, &error);
    if (!k)
        return error;
    k->tool = tool->name;
    json_t *empty = json_object();
    json_t *a = json_is_object(args) ? args : empty;
    int64_t start = clock_mono_us();
    json_t *result = tool->call(c, a, token, out, k);
    json_decref(empty);
    bool cancelled = srv_call_end(c, k);
    log_pack(LOG_INFO, "mcp: tools/call", "{s:s, s:f, s:b, s:b}", "tool", name, "durationMs",
             (double)(clock_mono_us() - start) / 1000.0, "isError",
             json_is_true(json_object_get(result, "isError")), "cancelled", cancelled);
    if (cancelled) {
        json_decref(result); /* the client gave up on it: no answer (spec) */
        return NULL;
    }
    return srv_result(id, result);
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
        /* The only requests we send are elicitations of approvals (approvals.c). */
        srv_elicit_answer(c, msg);
        return NULL;
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
        return srv_error(m.id, JSONRPC_SERVER_ERROR, NULL, "Connection closed");
    if (strcmp(m.method, "initialize") == 0)
        return srv_initialize(c, m.id, m.params);
    if (strcmp(m.method, "ping") == 0)
        return jsonrpc_result_new(m.id, NULL);
    if (!initialized)
        return srv_error(m.id, JSONRPC_INVALID_REQUEST, NULL,
                         "Invalid Request: the connection is not initialized; send initialize "
                         "first");
    json_t *not_ready = srv_wait_ready(c->srv, m.id);
    if (not_ready)
        return not_ready;
    if (strcmp(m.method, "tools/list") == 0)
        return srv_tools_list(c, m.id, m.params);
    if (strcmp(m.method, "tools/call") == 0)
        return srv_tools_call(c, m.id, m.params, out);
    json_t *answer = srv_resources(c, m.id, m.method, m.params);
    if (answer)
        return answer;
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
    ret->tools_call |= strcmp(m.method, "tools/call") == 0;
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
