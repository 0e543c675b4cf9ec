// SPDX-License-Identifier: MIT
/*
 * client — see client.h.
 *
 * Requests are multiplexed by id: each caller puts a pending record (on its
 * own stack, with its own condition variable on the monotonic clock) in a
 * list under the client lock, sends, and sleeps until the transport's thread
 * hands it the answer, the transport dies, or the deadline passes. A waiter
 * always unlinks its record itself, so a late answer finds nothing and is
 * dropped. Server-to-client requests are answered on the thread that
 * delivered them: ping with {}, anything else with -32601. The connection's
 * states (client_int.h) are data here: the edges, one function that moves
 * along them (asserting the edge), and the transitions named for what
 * happened, which the transports call.
 */
#include "mcpclient/client.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mcpclient/client_int.h"
#include "mcpclient/transport_http.h"
#include "mcpclient/transport_stdio.h"
#include "proto/jsonrpc.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/macros.h"

#define CLIENT_REPLY_TIMEOUT_US  (5 * 1000000) /* our answers to the server's requests */
#define CLIENT_CANCEL_TIMEOUT_US (2 * 1000000) /* notifications/cancelled */
#define CLIENT_MAX_BATCH         256           /* messages taken from one JSON-RPC batch */
#define CLIENT_INVALID_LOGGED    10            /* invalid messages reported per connection */
#define CLIENT_MAX_ERROR_MESSAGE 4096          /* bytes of a server's error message kept */

static const char *const client_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26",
                                              "2024-11-05"};

struct client_pending {
    json_int_t id;
    pthread_cond_t cond;
    bool done;
    json_t *answer;              /* the whole message, when one came */
    enum sbx_upstream fail_kind; /* otherwise why not */
    char *fail_why;
    struct client_pending *next;
};

/* ---- the connection's states (client_int.h) ---- */

/* Where each state may go (a set of bits). */
static const unsigned client_edges[MCP_CONN_STATE_COUNT] = {
    [MCP_CONN_CONNECTING] = LIFECYCLE_BIT(MCP_CONN_READY) | LIFECYCLE_BIT(MCP_CONN_STALE) |
                            LIFECYCLE_BIT(MCP_CONN_KILLED) | LIFECYCLE_BIT(MCP_CONN_DEAD) |
                            LIFECYCLE_BIT(MCP_CONN_CLOSING),
    [MCP_CONN_READY] = LIFECYCLE_BIT(MCP_CONN_STALE) | LIFECYCLE_BIT(MCP_CONN_KILLED) |
                       LIFECYCLE_BIT(MCP_CONN_DEAD) | LIFECYCLE_BIT(MCP_CONN_CLOSING),
    [MCP_CONN_STALE] = LIFECYCLE_BIT(MCP_CONN_READY) | LIFECYCLE_BIT(MCP_CONN_DEAD) |
                       LIFECYCLE_BIT(MCP_CONN_CLOSING),
    [MCP_CONN_KILLED] = LIFECYCLE_BIT(MCP_CONN_DEAD) | LIFECYCLE_BIT(MCP_CONN_CLOSING),
    [MCP_CONN_DEAD] = LIFECYCLE_BIT(MCP_CONN_CLOSING),
    [MCP_CONN_CLOSING] = 0,
};

static_assert(MCP_CONN_STATE_COUNT <= 32, "the edge sets are bits of an unsigned");

static const char *const client_state_names[MCP_CONN_STATE_COUNT] = {
    [MCP_CONN_CONNECTING] = "CONNECTING",
    [MCP_CONN_READY] = "READY",
    [MCP_CONN_STALE] = "STALE",
    [MCP_CONN_KILLED] = "KILLED",
    [MCP_CONN_DEAD] = "DEAD",
    [MCP_CONN_CLOSING] = "CLOSING",
};

static const struct lifecycle client_lifecycle = {"MCP client connection", MCP_CONN_STATE_COUNT,
                                                  client_edges, client_state_names};

bool mcp_client_transition_ok(enum mcp_conn_state from, enum mcp_conn_state to)
{
    return lifecycle_edge_ok(&client_lifecycle, (int)from, (int)to);
}

void mcp_client_set_state(struct mcp_client *c, enum mcp_conn_state to)
{
    lifecycle_check(&client_lifecycle, (int)c->state, (int)to);
    c->state = to;
}

const char *mcp_client_state_name(enum mcp_conn_state s)
{
    return lifecycle_name(&client_lifecycle, (int)s);
}

enum mcp_conn_state mcp_client_state(struct mcp_client *c)
{
    pthread_mutex_lock(&c->lock);
    enum mcp_conn_state st = c->state;
    pthread_mutex_unlock(&c->lock);
    return st;
}

void mcp_client_initialized(struct mcp_client *c)
{
    pthread_mutex_lock(&c->lock);
    if (c->state == MCP_CONN_CONNECTING)
        mcp_client_set_state(c, MCP_CONN_READY);
    pthread_mutex_unlock(&c->lock); /* otherwise it died during the handshake: it stays so */
}

void mcp_client_session_lost(struct mcp_client *c)
{
    pthread_mutex_lock(&c->lock);
    if (LIFECYCLE_IN(c->state, MCP_CONN_CONNECTING, MCP_CONN_READY))
        mcp_client_set_state(c, MCP_CONN_STALE);
    pthread_mutex_unlock(&c->lock); /* STALE already, or DEAD (aborted): no news */
}

void mcp_client_initialize_answered(struct mcp_client *c)
{
    pthread_mutex_lock(&c->lock);
    if (c->state == MCP_CONN_STALE)
        mcp_client_set_state(c, MCP_CONN_READY);
    pthread_mutex_unlock(&c->lock); /* CONNECTING: [K] ends the first handshake */
}

void mcp_client_stalled(struct mcp_client *c)
{
    pthread_mutex_lock(&c->lock);
    if (LIFECYCLE_IN(c->state, MCP_CONN_CONNECTING, MCP_CONN_READY))
        mcp_client_set_state(c, MCP_CONN_KILLED);
    pthread_mutex_unlock(&c->lock);
}

/* ---- configuration ---- */

static void strv_free(char **v)
{
    for (char **p = v; p && *p; p++)
        free(*p);
    free(v);
}

static int strv_copy(char *const *src, char ***ret)
{
    *ret = NULL;
    if (!src)
        return 0;
    size_t n = 0;
    while (src[n])
        n++;
    char **v = calloc(n + 1, sizeof(*v));
    if (!v)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        if (!(v[i] = strdup(src[i]))) {
            strv_free(v);
            return -ENOMEM;
        }
    *ret = v;
    return 0;
}

static int str_copy(const char *src, char **ret)
{
    *ret = src ? strdup(src) : NULL;
    return src && !*ret ? -ENOMEM : 0;
}

void mcp_server_config_done(struct mcp_server_config *cfg)
{
    if (!cfg)
        return;
    free(cfg->name);
    free(cfg->command);
    strv_free(cfg->args);
    strv_free(cfg->env);
    free(cfg->cwd);
    free(cfg->url);
    strv_free(cfg->headers);
    free(cfg->description);
    strv_free(cfg->approvals);
    *cfg = (struct mcp_server_config){0};
}

int mcp_server_config_copy(const struct mcp_server_config *src, struct mcp_server_config *ret)
{
    struct mcp_server_config c = {0};
    int r = 0;
    r = r ?: str_copy(src->name, &c.name);
    r = r ?: str_copy(src->command, &c.command);
    r = r ?: strv_copy(src->args, &c.args);
    r = r ?: strv_copy(src->env, &c.env);
    r = r ?: str_copy(src->cwd, &c.cwd);
    r = r ?: str_copy(src->url, &c.url);
    r = r ?: strv_copy(src->headers, &c.headers);
    r = r ?: str_copy(src->description, &c.description);
    r = r ?: strv_copy(src->approvals, &c.approvals);
    if (r < 0) {
        mcp_server_config_done(&c);
        return r;
    }
    *ret = c;
    return 0;
}

/* ---- time ---- */

int64_t mcp_client_deadline(int64_t timeout_ms)
{
    if (timeout_ms <= 0)
        timeout_ms = MCP_CLIENT_DEFAULT_TIMEOUT;
    if (timeout_ms > MCP_CLIENT_MAX_TIMEOUT)
        timeout_ms = MCP_CLIENT_MAX_TIMEOUT;
    return clock_mono_us() + timeout_ms * 1000;
}

static struct timespec client_abstime(int64_t deadline_us)
{
    return (struct timespec){.tv_sec = deadline_us / 1000000,
                             .tv_nsec = (long)(deadline_us % 1000000) * 1000};
}

/* ---- incoming messages (transport thread) ---- */

static void client_complete(struct mcp_client *c, json_int_t id, json_t *answer)
{
    pthread_mutex_lock(&c->lock);
    struct client_pending *p = c->pending;
    while (p && p->id != id)
        p = p->next;
    if (p && !p->done) {
        p->answer = json_incref(answer);
        p->done = true;
        pthread_cond_signal(&p->cond);
    }
    pthread_mutex_unlock(&c->lock);
    if (!p)
        log_debug("MCP server '%s': dropped an answer to request %" JSON_INTEGER_FORMAT
                  " (timed out or unknown)",
                  c->cfg.name, id);
}

static void client_notification(struct mcp_client *c, const char *method, json_t *params)
{
    if (strcmp(method, "notifications/tools/list_changed") == 0) {
        pthread_mutex_lock(&c->lock);
        c->tools_generation++;
        pthread_mutex_unlock(&c->lock);
    }
    log_debug("MCP server '%s': %s", c->cfg.name, method);
    pthread_mutex_lock(&c->notify_lock);
    if (c->notify)
        c->notify(c->notify_userdata, method, params);
    pthread_mutex_unlock(&c->notify_lock);
}

/* We offer no client capabilities (no sampling, roots or elicitation): ping is all we answer. */
static void client_answer_request(struct mcp_client *c, const struct jsonrpc_message *m)
{
    json_t *reply = NULL;
    if (m->kind == JSONRPC_REQUEST && strcmp(m->method, "ping") == 0)
        reply = jsonrpc_result_new(m->id, NULL);
    else if (m->kind == JSONRPC_REQUEST)
        reply = jsonrpc_error_new(m->id, JSONRPC_METHOD_NOT_FOUND, NULL, NULL);
    else
        reply = jsonrpc_error_new(m->id, JSONRPC_INVALID_REQUEST, NULL, NULL);
    if (!reply)
        return;
    log_debug("MCP server '%s' asked %s", c->cfg.name, m->method ? m->method : "(invalid)");
    struct sbx_error e = {0};
    int r = c->t->ops->send(c->t, reply, clock_mono_us() + CLIENT_REPLY_TIMEOUT_US, &e);
    if (r < 0)
        log_debug("MCP server '%s': cannot answer its request: %s", c->cfg.name,
                  e.message ? e.message : strerror(-r));
    sbx_error_clear(&e);
    json_decref(reply);
}

static void client_dispatch(struct mcp_client *c, json_t *msg)
{
    struct jsonrpc_message m;
    switch (jsonrpc_classify(msg, &m)) {
    case JSONRPC_RESPONSE:
    case JSONRPC_ERROR_RESPONSE:
        if (json_is_integer(m.id)) {
            client_complete(c, json_integer_value(m.id), msg);
            return;
        }
        break; /* we only send integer ids; a null id answers something we cannot tell */
    case JSONRPC_NOTIFICATION:
        client_notification(c, m.method, m.params);
        return;
    case JSONRPC_REQUEST:
        client_answer_request(c, &m);
        return;
    case JSONRPC_INVALID:
        if (json_object_get(msg, "method")) {
            if (jsonrpc_id_valid(m.id))
                client_answer_request(c, &m);
        } else if (json_is_integer(m.id)) {
            /* A broken answer to one of ours: its waiter reports the protocol error. */
            client_complete(c, json_integer_value(m.id), msg);
            return;
        }
        break;
    }
    pthread_mutex_lock(&c->lock);
    bool report = c->invalid_logged < CLIENT_INVALID_LOGGED;
    c->invalid_logged += report;
    pthread_mutex_unlock(&c->lock);
    if (report)
        log_warn("MCP server '%s' sent a message we cannot use (%s)", c->cfg.name,
                 m.kind == JSONRPC_INVALID ? m.invalid : "error without a request id");
}

void mcp_client_on_message(struct mcp_client *c, json_t *msg)
{
    if (!json_is_array(msg)) {
        client_dispatch(c, msg);
        return;
    }
    /* Batches were allowed by 2025-03-26. */
    size_t n = json_array_size(msg);
    for (size_t i = 0; i < n && i < CLIENT_MAX_BATCH; i++)
        client_dispatch(c, json_array_get(msg, i));
}

void mcp_client_transport_ended(struct mcp_client *c, enum sbx_upstream kind, const char *why)
{
    pthread_mutex_lock(&c->lock);
    /* DEAD already: reported twice (an abort, then the exit it caused); CLOSING: no news. */
    if (LIFECYCLE_IN(c->state, MCP_CONN_CONNECTING, MCP_CONN_READY, MCP_CONN_STALE,
                     MCP_CONN_KILLED)) {
        mcp_client_set_state(c, MCP_CONN_DEAD);
        c->dead_kind = kind;
        c->dead_why = strdup(why);
    }
    for (struct client_pending *p = c->pending; p; p = p->next) {
        if (p->done)
            continue;
        p->done = true;
        p->fail_kind = kind;
        p->fail_why = strdup(why);
        pthread_cond_signal(&p->cond);
    }
    pthread_mutex_unlock(&c->lock);
}

void mcp_client_abort(struct mcp_client *c, const char *why)
{
    mcp_client_transport_ended(c, SBX_UP_TRANSPORT, why);
    if (c->t && c->t->ops->abort)
        c->t->ops->abort(c->t);
}

/* ---- outgoing ---- */

static int client_errno(enum sbx_upstream kind)
{
    switch (kind) {
    case SBX_UP_TRANSPORT:
        return -ENOTCONN;
    case SBX_UP_TIMEOUT:
        return -ETIMEDOUT;
    default:
        return -EPROTO;
    }
}

static int client_handshake(struct mcp_client *c, int64_t deadline_us, struct sbx_error *err);

/* c is DEAD (c->lock held): err says why, as the first report gave it. */
static int client_dead(struct mcp_client *c, struct sbx_error *err)
{
    sbx_error_upstream(err, c->dead_kind, NULL, "%s", c->dead_why ? c->dead_why : "disconnected");
    return client_errno(c->dead_kind);
}

/* Send msg; when an HTTP server forgot our session, initialize again (once) and resend. */
static int client_send(struct mcp_client *c, json_t *msg, int64_t deadline_us, bool may_reinit,
                       struct sbx_error *err)
{
    int r = c->t->ops->send(c->t, msg, deadline_us, err);
    if (r != -ESTALE)
        return r;
    if (!may_reinit)
        return -EPROTO; /* err already says HTTP 404 */
    sbx_error_clear(err);
    pthread_mutex_lock(&c->reinit_lock);
    /* Whoever got the 404 first initializes; the others find it done (READY) and just resend,
     * or find the connection aborted meanwhile (DEAD). */
    pthread_mutex_lock(&c->lock);
    enum mcp_conn_state st = c->state;
    r = st == MCP_CONN_DEAD ? client_dead(c, err) : 0;
    pthread_mutex_unlock(&c->lock);
    if (st == MCP_CONN_STALE) {
        log_info("MCP server '%s' lost our session: initializing again", c->cfg.name);
        r = client_handshake(c, deadline_us, err);
        if (r >= 0) {
            /* Most likely the server restarted: its tools may have changed too. */
            pthread_mutex_lock(&c->lock);
            c->tools_generation++;
            pthread_mutex_unlock(&c->lock);
        }
    }
    pthread_mutex_unlock(&c->reinit_lock);
    if (r < 0)
        return r;
    r = c->t->ops->send(c->t, msg, deadline_us, err);
    return r == -ESTALE ? -EPROTO : r;
}

static void client_cancel(struct mcp_client *c, json_int_t id, const char *reason)
{
    json_t *params = json_pack("{s:I, s:s}", "requestId", (json_int_t)id, "reason", reason);
    json_t *msg = params ? jsonrpc_notification_new("notifications/cancelled", params) : NULL;
    json_decref(params);
    if (!msg)
        return;
    struct sbx_error e = {0};
    int r = client_send(c, msg, clock_mono_us() + CLIENT_CANCEL_TIMEOUT_US, false, &e);
    if (r < 0)
        log_debug("MCP server '%s': cannot cancel request %" JSON_INTEGER_FORMAT ": %s",
                  c->cfg.name, id, e.message ? e.message : strerror(-r));
    sbx_error_clear(&e);
    json_decref(msg);
}

/* Turn an answer into a result or an error. */
static int client_interpret(struct mcp_client *c, json_t *answer, json_t **ret_result,
                            struct sbx_error *err)
{
    struct jsonrpc_message m;
    switch (jsonrpc_classify(answer, &m)) {
    case JSONRPC_RESPONSE:
        *ret_result = json_incref(m.result);
        return 0;
    case JSONRPC_ERROR_RESPONSE: {
        char code[24];
        snprintf(code, sizeof(code), "%" JSON_INTEGER_FORMAT, m.error_code);
        sbx_error_upstream(err, SBX_UP_TOOL, code, "%.*s", CLIENT_MAX_ERROR_MESSAGE,
                           m.error_message);
        return -EPROTO;
    }
    default:
        sbx_error_upstream(err, SBX_UP_PROTOCOL, NULL, "MCP server '%s' sent an invalid answer: %s",
                           c->cfg.name, m.kind == JSONRPC_INVALID ? m.invalid : "not a response");
        return -EPROTO;
    }
}

/* One request/answer round trip. */
static int client_call(struct mcp_client *c, const char *method, json_t *params,
                       int64_t deadline_us, bool may_reinit, json_t **ret_result,
                       struct sbx_error *err)
{
    struct client_pending p = {0};
    int r = -pthread_cond_init(&p.cond, &c->condattr);
    if (r < 0) {
        sbx_error_upstream(err, SBX_UP_TRANSPORT, NULL, "out of resources");
        return r;
    }
    pthread_mutex_lock(&c->lock);
    if (c->state == MCP_CONN_DEAD) {
        r = client_dead(c, err);
        pthread_mutex_unlock(&c->lock);
        pthread_cond_destroy(&p.cond);
        return r;
    }
    p.id = c->next_id++;
    p.next = c->pending;
    c->pending = &p;
    pthread_mutex_unlock(&c->lock);

    json_t *msg = jsonrpc_request_new_int(p.id, method, params);
    if (msg)
        r = client_send(c, msg, deadline_us, may_reinit, err);
    else {
        sbx_error_upstream(err, SBX_UP_PROTOCOL, NULL, "cannot encode the request");
        r = -ENOMEM;
    }
    json_decref(msg);

    pthread_mutex_lock(&c->lock);
    struct timespec until = client_abstime(deadline_us);
    while (r >= 0 && !p.done)
        if (pthread_cond_timedwait(&p.cond, &c->lock, &until) == ETIMEDOUT)
            break;
    struct client_pending **pp = &c->pending;
    while (*pp != &p)
        pp = &(*pp)->next;
    *pp = p.next;
    pthread_mutex_unlock(&c->lock);

    /* The spec forbids cancelling initialize. */
    bool cancellable = strcmp(method, "initialize") != 0;
    if (r < 0) {
        if (err->upstream == SBX_UP_TIMEOUT && cancellable)
            client_cancel(c, p.id, "timeout");
    } else if (!p.done) {
        if (cancellable)
            client_cancel(c, p.id, "timeout");
        sbx_error_upstream(err, SBX_UP_TIMEOUT, NULL, "MCP server '%s' did not answer %s in time",
                           c->cfg.name, method);
        r = -ETIMEDOUT;
    } else if (!p.answer) {
        sbx_error_upstream(err, p.fail_kind, NULL, "%s", p.fail_why ? p.fail_why : "disconnected");
        r = client_errno(p.fail_kind);
    } else {
        r = client_interpret(c, p.answer, ret_result, err);
    }
    json_decref(p.answer);
    free(p.fail_why);
    pthread_cond_destroy(&p.cond);
    return r;
}

static bool client_version_supported(const char *v)
{
    for (size_t i = 0; i < ARRAY_SIZE(client_versions); i++)
        if (strcmp(v, client_versions[i]) == 0)
            return true;
    return false;
}

static int client_handshake(struct mcp_client *c, int64_t deadline_us, struct sbx_error *err)
{
    _cleanup_json_ json_t *params =
        json_pack("{s:s, s:{}, s:{s:s, s:s}}", "protocolVersion", MCP_CLIENT_PROTOCOL_VERSION,
                  "capabilities", "clientInfo", "name", "sandboxd", "version", SANDBOXD_VERSION);
    if (!params) {
        sbx_error_upstream(err, SBX_UP_PROTOCOL, NULL, "out of memory");
        return -ENOMEM;
    }
    _cleanup_json_ json_t *result = NULL;
    int r = client_call(c, "initialize", params, deadline_us, false, &result, err);
    if (r < 0)
        return r;

    const char *version = json_string_value(json_object_get(result, "protocolVersion"));
    json_t *caps = json_object_get(result, "capabilities");
    json_t *server = json_object_get(result, "serverInfo");
    json_t *instructions = json_object_get(result, "instructions");
    json_t *info = NULL;
    if (!json_is_object(result) || !version) {
        sbx_error_upstream(err, SBX_UP_PROTOCOL, NULL,
                           "MCP server '%s' answered initialize without a protocolVersion",
                           c->cfg.name);
        r = -EPROTO;
    } else if (!client_version_supported(version)) {
        sbx_error_upstream(err, SBX_UP_PROTOCOL, NULL,
                           "MCP server '%s' speaks protocol version '%.40s'; sandboxd supports "
                           "2025-11-25, 2025-06-18, 2025-03-26 and 2024-11-05",
                           c->cfg.name, version);
        r = -EPROTONOSUPPORT;
    } else {
        info =
            json_pack("{s:s, s:o, s:o}", "protocolVersion", version, "serverInfo",
                      json_is_object(server) ? json_deep_copy(server) : json_object(),
                      "capabilities", json_is_object(caps) ? json_deep_copy(caps) : json_object());
        if (info && json_is_string(instructions))
            json_object_set(info, "instructions", instructions);
        if (!info) {
            sbx_error_upstream(err, SBX_UP_PROTOCOL, NULL, "out of memory");
            r = -ENOMEM;
        }
    }
    if (r >= 0 && c->t->ops->set_protocol_version)
        c->t->ops->set_protocol_version(c->t, version);
    if (r < 0)
        return r;

    pthread_mutex_lock(&c->lock);
    json_decref(c->server_info);
    c->server_info = info;
    pthread_mutex_unlock(&c->lock);

    _cleanup_json_ json_t *note = jsonrpc_notification_new("notifications/initialized", NULL);
    if (!note) {
        sbx_error_upstream(err, SBX_UP_PROTOCOL, NULL, "out of memory");
        return -ENOMEM;
    }
    return client_send(c, note, deadline_us, false, err);
}

/* ---- public ---- */

int mcp_client_connect(const struct mcp_server_config *cfg, int64_t timeout_ms,
                       struct mcp_client **ret, struct sbx_error *err)
{
    int64_t deadline = mcp_client_deadline(timeout_ms);
    if (!cfg->name || !!cfg->command == !!cfg->url) {
        sbx_error_upstream(err, SBX_UP_TRANSPORT, NULL,
                           "MCP server '%s' needs exactly one of command and url",
                           cfg->name ? cfg->name : "");
        return -EINVAL;
    }
    struct mcp_client *c;
    if (mcp_client_alloc(cfg, &c) < 0) {
        sbx_error_upstream(err, SBX_UP_TRANSPORT, NULL, "out of memory");
        return -ENOMEM;
    }
    int r = cfg->url ? mcp_transport_http_open(&c->cfg, c, &c->t, err)
                     : mcp_transport_stdio_open(&c->cfg, c, &c->t, err);
    if (r >= 0)
        r = client_handshake(c, deadline, err);
    if (r < 0) {
        mcp_client_close(c);
        return r;
    }
    mcp_client_initialized(c);
    *ret = c;
    return 0;
}

int mcp_client_alloc(const struct mcp_server_config *cfg, struct mcp_client **ret)
{
    struct mcp_client *c = calloc(1, sizeof(*c));
    if (!c || mcp_server_config_copy(cfg, &c->cfg) < 0) {
        free(c);
        return -ENOMEM;
    }
    pthread_condattr_init(&c->condattr);
    pthread_condattr_setclock(&c->condattr, CLOCK_MONOTONIC);
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->notify_lock, NULL);
    pthread_mutex_init(&c->reinit_lock, NULL);
    c->state = MCP_CONN_CONNECTING;
    c->next_id = 1;
    *ret = c;
    return 0;
}

void mcp_client_close(struct mcp_client *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    mcp_client_set_state(c, MCP_CONN_CLOSING);
    pthread_mutex_unlock(&c->lock);
    if (c->t)
        c->t->ops->close(c->t); /* after this the transport reports nothing more */
    json_decref(c->server_info);
    free(c->dead_why);
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->notify_lock);
    pthread_mutex_destroy(&c->reinit_lock);
    pthread_condattr_destroy(&c->condattr);
    mcp_server_config_done(&c->cfg);
    free(c);
}

bool mcp_client_alive(struct mcp_client *c)
{
    return LIFECYCLE_IN(mcp_client_state(c), MCP_CONN_CONNECTING, MCP_CONN_READY, MCP_CONN_STALE);
}

const char *mcp_client_name(struct mcp_client *c)
{
    return c->cfg.name;
}

json_t *mcp_client_server_info(struct mcp_client *c)
{
    pthread_mutex_lock(&c->lock);
    json_t *info = c->server_info ? json_deep_copy(c->server_info) : json_object();
    pthread_mutex_unlock(&c->lock);
    return info;
}

void mcp_client_set_notify(struct mcp_client *c, mcp_notify_fn fn, void *userdata)
{
    pthread_mutex_lock(&c->notify_lock);
    c->notify = fn;
    c->notify_userdata = userdata;
    pthread_mutex_unlock(&c->notify_lock);
}

uint64_t mcp_client_tools_generation(struct mcp_client *c)
{
    pthread_mutex_lock(&c->lock);
    uint64_t g = c->tools_generation;
    pthread_mutex_unlock(&c->lock);
    return g;
}

int mcp_client_request(struct mcp_client *c, const char *method, json_t *params, int64_t timeout_ms,
                       json_t **ret_result, struct sbx_error *err)
{
    return client_call(c, method, params, mcp_client_deadline(timeout_ms), true, ret_result, err);
}

int mcp_client_list_tools(struct mcp_client *c, int64_t timeout_ms, json_t **ret_tools,
                          struct sbx_error *err)
{
    int64_t deadline = mcp_client_deadline(timeout_ms);
    _cleanup_json_ json_t *all = json_array();
    _cleanup_free_ char *cursor = NULL;
    int r = all ? 0 : -ENOMEM;
    if (r < 0)
        sbx_error_upstream(err, SBX_UP_PROTOCOL, NULL, "out of memory");
    for (unsigned page = 0; r >= 0; page++) {
        if (page == MCP_CLIENT_MAX_TOOL_PAGES) {
            sbx_error_upstream(err, SBX_UP_PROTOCOL, NULL,
                               "MCP server '%s' lists tools on more than %d pages", c->cfg.name,
                               MCP_CLIENT_MAX_TOOL_PAGES);
            r = -EPROTO;
            break;
        }
        _cleanup_json_ json_t *params = cursor ? json_pack("{s:s}", "cursor", cursor) : NULL;
        if (cursor && !params) { /* asking again without it would start over */
            sbx_error_upstream(err, SBX_UP_PROTOCOL, NULL, "out of memory");
            r = -ENOMEM;
            break;
        }
        _cleanup_json_ json_t *result = NULL;
        r = client_call(c, "tools/list", params, deadline, true, &result, err);
        free(cursor);
        cursor = NULL;
        if (r < 0)
            break;
        json_t *tools = json_object_get(result, "tools");
        json_t *next = json_object_get(result, "nextCursor");
        bool ok = json_is_array(tools) && (!next || json_is_null(next) || json_is_string(next));
        for (size_t i = 0; ok && i < json_array_size(tools); i++)
            ok = json_is_object(json_array_get(tools, i));
        if (!ok) {
            sbx_error_upstream(err, SBX_UP_PROTOCOL, NULL,
                               "MCP server '%s' answered tools/list without a valid tools array",
                               c->cfg.name);
            r = -EPROTO;
        } else if (json_array_size(all) + json_array_size(tools) > MCP_CLIENT_MAX_TOOLS) {
            sbx_error_upstream(err, SBX_UP_PROTOCOL, NULL, "MCP server '%s' has more than %d tools",
                               c->cfg.name, MCP_CLIENT_MAX_TOOLS);
            r = -EPROTO;
        } else if (json_array_extend(all, tools) < 0) {
            sbx_error_upstream(err, SBX_UP_PROTOCOL, NULL, "out of memory");
            r = -ENOMEM;
        } else if (json_string_length(next) > 0 && !(cursor = strdup(json_string_value(next)))) {
            sbx_error_upstream(err, SBX_UP_PROTOCOL, NULL, "out of memory");
            r = -ENOMEM;
        }
        if (r < 0 || !cursor)
            break;
    }
    if (r < 0)
        return r;
    *ret_tools = TAKE_PTR(all);
    return 0;
}

int mcp_client_call_tool(struct mcp_client *c, const char *tool, json_t *args, int64_t timeout_ms,
                         json_t **ret_result, struct sbx_error *err)
{
    json_t *params = json_pack("{s:s, s:o}", "name", tool, "arguments",
                               args ? json_incref(args) : json_object());
    if (!params) {
        sbx_error_upstream(err, SBX_UP_PROTOCOL, NULL, "cannot encode the tool call");
        return -ENOMEM;
    }
    json_t *result = NULL;
    int r =
        client_call(c, "tools/call", params, mcp_client_deadline(timeout_ms), true, &result, err);
    json_decref(params);
    if (r < 0)
        return r;
    if (!json_is_object(result)) {
        json_decref(result);
        sbx_error_upstream(err, SBX_UP_PROTOCOL, NULL,
                           "MCP server '%s' answered tools/call with something else than an object",
                           c->cfg.name);
        return -EPROTO;
    }
    *ret_result = result;
    return 0;
}
