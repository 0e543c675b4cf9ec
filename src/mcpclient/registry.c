// SPDX-License-Identifier: MIT
/*
 * registry — see registry.h.
 *
 * Each server has a reference-counted connection: the registry holds one
 * reference, every call in flight another, so replacing a dead connection
 * never frees a client under a caller's feet; the last one out closes it.
 * Two locks per server: connect_lock serialises (slow) connection attempts,
 * lock guards the pointers for the quick paths, so describe() and calls on a
 * healthy connection never wait behind a server that is starting.
 */
#include "mcpclient/registry.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/clock.h"
#include "util/fmt.h"
#include "util/log.h"
#include "util/macros.h"

struct reg_conn {
    struct mcp_client *client;
    unsigned refs;  /* under the server's lock */
    uint64_t epoch; /* which connection of the server this is */
};

struct reg_server {
    struct mcp_server_config cfg;
    pthread_mutex_t connect_lock;
    pthread_mutex_t lock; /* everything below */
    struct reg_conn *conn;
    uint64_t epoch;
    int64_t failed_at_us; /* last failed start, 0 after a success */
    int failed_r;
    struct sbx_error failed_err;
    json_t *tools; /* cache for connection tools_epoch at generation tools_generation */
    uint64_t tools_epoch;
    uint64_t tools_generation;
};

struct mcp_registry {
    struct reg_server *servers;
    size_t n;
    atomic_bool stopping;
};

#define REG_SHUTDOWN_MESSAGE "sandboxd is shutting down"

static void reg_error_copy(struct sbx_error *dst, const struct sbx_error *src)
{
    sbx_error_upstream(dst, src->upstream, src->upstream_code, "%s",
                       src->message ? src->message : "");
    dst->upstream_status = src->upstream_status;
}

static void reg_release(struct reg_server *s, struct reg_conn *conn)
{
    if (!conn)
        return;
    pthread_mutex_lock(&s->lock);
    bool last = --conn->refs == 0;
    pthread_mutex_unlock(&s->lock);
    if (last) {
        mcp_client_close(conn->client);
        free(conn);
    }
}

/* A reference to a live connection, starting or restarting the server if needed. */
static int reg_acquire(struct mcp_registry *reg, struct reg_server *s, int64_t deadline_us,
                       struct reg_conn **ret, struct sbx_error *err)
{
    if (atomic_load(&reg->stopping)) {
        sbx_error_upstream(err, SBX_UP_TRANSPORT, NULL, REG_SHUTDOWN_MESSAGE);
        return -ESHUTDOWN;
    }
    pthread_mutex_lock(&s->lock);
    if (s->conn && mcp_client_alive(s->conn->client)) {
        s->conn->refs++;
        *ret = s->conn;
        pthread_mutex_unlock(&s->lock);
        return 0;
    }
    pthread_mutex_unlock(&s->lock);

    pthread_mutex_lock(&s->connect_lock);
    pthread_mutex_lock(&s->lock);
    /* Someone may have connected while we waited for connect_lock. */
    if (s->conn && mcp_client_alive(s->conn->client)) {
        s->conn->refs++;
        *ret = s->conn;
        pthread_mutex_unlock(&s->lock);
        pthread_mutex_unlock(&s->connect_lock);
        return 0;
    }
    int64_t now = clock_mono_us();
    if (s->failed_at_us && now - s->failed_at_us < MCP_REGISTRY_RETRY_US) {
        reg_error_copy(err, &s->failed_err);
        int r = s->failed_r;
        pthread_mutex_unlock(&s->lock);
        pthread_mutex_unlock(&s->connect_lock);
        return r;
    }
    /* The dead connection is released only after the new one is up: closing it may take
     * seconds (a server that ignores stdin EOF and SIGTERM), and nobody should wait for that. */
    struct reg_conn *old = TAKE_PTR(s->conn);
    pthread_mutex_unlock(&s->lock);
    if (old)
        log_warn("MCP server '%s' is no longer running: restarting it", s->cfg.name);

    struct mcp_client *c = NULL;
    int64_t left_ms = (deadline_us - now) / 1000;
    int r = -ETIMEDOUT;
    if (left_ms > 0)
        r = mcp_client_connect(&s->cfg, left_ms, &c, err);
    else
        sbx_error_upstream(err, SBX_UP_TIMEOUT, NULL, "no time left to start MCP server '%s'",
                           s->cfg.name);
    struct reg_conn *conn = NULL;
    if (r >= 0 && !(conn = calloc(1, sizeof(*conn)))) {
        mcp_client_close(c);
        sbx_error_upstream(err, SBX_UP_TRANSPORT, NULL, "out of memory");
        r = -ENOMEM;
    }

    pthread_mutex_lock(&s->lock);
    if (r < 0) {
        s->failed_at_us = clock_mono_us();
        s->failed_r = r;
        reg_error_copy(&s->failed_err, err);
    } else {
        conn->client = c;
        conn->refs = 2; /* the registry's and the caller's */
        conn->epoch = ++s->epoch;
        s->conn = conn;
        s->failed_at_us = 0;
        sbx_error_clear(&s->failed_err);
        *ret = conn;
    }
    pthread_mutex_unlock(&s->lock);
    pthread_mutex_unlock(&s->connect_lock);
    reg_release(s, old);
    if (r < 0)
        log_warn("cannot start MCP server '%s': %s", s->cfg.name,
                 err->message ? err->message : "unknown error");
    else
        log_info("MCP server '%s' connected", s->cfg.name);
    return r;
}

static struct reg_server *reg_find(struct mcp_registry *r, const char *name)
{
    for (size_t i = 0; name && i < r->n; i++)
        if (strcmp(r->servers[i].cfg.name, name) == 0)
            return &r->servers[i];
    return NULL;
}

static int reg_unknown(const char *name, struct sbx_error *err)
{
    sbx_error_upstream(err, SBX_UP_TOOL, "UNKNOWN_SERVER", "unknown MCP server '%s'",
                       name ? name : "");
    return -ENOENT;
}

static int64_t reg_left_ms(int64_t deadline_us)
{
    int64_t left = (deadline_us - clock_mono_us()) / 1000;
    return left > 0 ? left : 1; /* the client turns 1 ms into a clean timeout */
}

/* The server called name, with a live connection (release with reg_release) and the deadline
 * of the whole operation. */
static int reg_open(struct mcp_registry *r, const char *name, int64_t timeout_ms,
                    struct reg_server **ret_server, struct reg_conn **ret_conn,
                    int64_t *ret_deadline, struct sbx_error *err)
{
    struct reg_server *s = reg_find(r, name);
    if (!s)
        return reg_unknown(name, err);
    *ret_server = s;
    *ret_deadline = mcp_client_deadline(timeout_ms);
    return reg_acquire(r, s, *ret_deadline, ret_conn, err);
}

int mcp_registry_new(const struct mcp_config *cfg, struct mcp_registry **ret)
{
    struct mcp_registry *r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    if (cfg->n && !(r->servers = calloc(cfg->n, sizeof(*r->servers)))) {
        free(r);
        return -ENOMEM;
    }
    for (size_t i = 0; i < cfg->n; i++) {
        struct reg_server *s = &r->servers[i];
        if (mcp_server_config_copy(&cfg->servers[i], &s->cfg) < 0) {
            mcp_registry_free(r);
            return -ENOMEM;
        }
        pthread_mutex_init(&s->connect_lock, NULL);
        pthread_mutex_init(&s->lock, NULL);
        r->n++;
    }
    *ret = r;
    return 0;
}

enum mcp_approval mcp_registry_approval(struct mcp_registry *r, const char *name, const char *tool)
{
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->servers[i].cfg.name, name) == 0)
            return mcp_approval_lookup(r->servers[i].cfg.approvals, tool);
    return MCP_APPROVAL_AUTO;
}

bool mcp_registry_has_approvals(struct mcp_registry *r)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->servers[i].cfg.approvals && r->servers[i].cfg.approvals[0])
            return true;
    return false;
}

void mcp_registry_shutdown(struct mcp_registry *r)
{
    if (!r || atomic_exchange(&r->stopping, true))
        return;
    for (size_t i = 0; i < r->n; i++) {
        struct reg_server *s = &r->servers[i];
        pthread_mutex_lock(&s->lock);
        struct reg_conn *conn = s->conn;
        if (conn)
            conn->refs++;
        pthread_mutex_unlock(&s->lock);
        if (conn)
            mcp_client_abort(conn->client, REG_SHUTDOWN_MESSAGE);
        reg_release(s, conn);
    }
}

void mcp_registry_free(struct mcp_registry *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        struct reg_server *s = &r->servers[i];
        reg_release(s, TAKE_PTR(s->conn));
        json_decref(s->tools);
        sbx_error_clear(&s->failed_err);
        mcp_server_config_done(&s->cfg);
        pthread_mutex_destroy(&s->connect_lock);
        pthread_mutex_destroy(&s->lock);
    }
    free(r->servers);
    free(r);
}

char *mcp_registry_check_names(struct mcp_registry *r, json_t *names)
{
    size_t i;
    json_t *v;
    json_array_foreach(names, i, v)
    {
        const char *name = json_string_value(v);
        if (name && reg_find(r, name))
            continue;
        struct buf known;
        buf_init(&known, 1u << 16);
        for (size_t k = 0; k < r->n; k++)
            (void)buf_printf(&known, "%s%s", k ? ", " : "", r->servers[k].cfg.name);
        char *msg = fmt_str("servers[%zu]: %s%.64s%s is not a configured MCP server "
                            "(configured: %s)",
                            i, name ? "'" : "", name ? name : "(not a string)", name ? "'" : "",
                            r->n && known.data ? known.data : "none");
        buf_free(&known);
        return msg ? msg : strdup("servers: not all configured MCP servers");
    }
    return NULL;
}

json_t *mcp_registry_names(struct mcp_registry *r)
{
    json_t *names = json_array();
    for (size_t i = 0; names && i < r->n; i++)
        json_array_append_new(names, json_string(r->servers[i].cfg.name));
    return names;
}

json_t *mcp_registry_describe(struct mcp_registry *r)
{
    json_t *list = json_array();
    for (size_t i = 0; list && i < r->n; i++) {
        struct reg_server *s = &r->servers[i];
        pthread_mutex_lock(&s->lock);
        struct reg_conn *conn = s->conn;
        if (conn)
            conn->refs++;
        char *last_error =
            s->failed_at_us && s->failed_err.message ? strdup(s->failed_err.message) : NULL;
        pthread_mutex_unlock(&s->lock);
        bool connected = conn && mcp_client_alive(conn->client);
        json_t *d = json_pack("{s:s, s:s, s:s?, s:b}", "name", s->cfg.name, "transport",
                              s->cfg.url ? "http" : "stdio", "description", s->cfg.description,
                              "connected", connected);
        if (d && connected)
            json_object_set_new(d, "serverInfo", mcp_client_server_info(conn->client));
        if (d && last_error)
            json_object_set_new(d, "lastError", json_string(last_error));
        free(last_error);
        reg_release(s, conn);
        if (!d || json_array_append_new(list, d) < 0)
            log_warn("mcp: server %s is missing from the list of servers (out of memory)",
                     s->cfg.name);
    }
    return list;
}

json_t *mcp_registry_cwd(struct mcp_registry *r, const char *name)
{
    struct reg_server *s = reg_find(r, name); /* the configuration never changes */
    return s && s->cfg.cwd ? json_string(s->cfg.cwd) : json_null();
}

int mcp_registry_tools(struct mcp_registry *r, const char *name, int64_t timeout_ms,
                       json_t **ret_tools, struct sbx_error *err)
{
    struct reg_server *s;
    struct reg_conn *conn = NULL;
    int64_t deadline;
    int rc = reg_open(r, name, timeout_ms, &s, &conn, &deadline, err);
    if (rc < 0)
        return rc;

    /* Read the generation before listing: a change announced during the listing makes the
     * next caller list again rather than trust what we got. */
    uint64_t generation = mcp_client_tools_generation(conn->client);
    json_t *tools = NULL;
    pthread_mutex_lock(&s->lock);
    if (s->tools && s->tools_epoch == conn->epoch && s->tools_generation == generation)
        tools = json_deep_copy(s->tools); /* callers may modify theirs */
    pthread_mutex_unlock(&s->lock);
    if (!tools) {
        json_t *fresh = NULL;
        rc = mcp_client_list_tools(conn->client, reg_left_ms(deadline), &fresh, err);
        if (rc >= 0) {
            tools = json_deep_copy(fresh);
            pthread_mutex_lock(&s->lock);
            if (conn->epoch >= s->tools_epoch) {
                json_decref(s->tools);
                s->tools = TAKE_PTR(fresh);
                s->tools_epoch = conn->epoch;
                s->tools_generation = generation;
            }
            pthread_mutex_unlock(&s->lock);
            json_decref(fresh);
        }
    }
    reg_release(s, conn);
    if (rc < 0)
        return rc;
    if (!tools) {
        sbx_error_upstream(err, SBX_UP_PROTOCOL, NULL, "out of memory");
        return -ENOMEM;
    }
    *ret_tools = tools;
    return 0;
}

int mcp_registry_call(struct mcp_registry *r, const char *name, const char *tool, json_t *args,
                      int64_t timeout_ms, json_t **ret_result, struct sbx_error *err)
{
    struct reg_server *s;
    struct reg_conn *conn = NULL;
    int64_t deadline;
    int rc = reg_open(r, name, timeout_ms, &s, &conn, &deadline, err);
    if (rc < 0)
        return rc;
    rc = mcp_client_call_tool(conn->client, tool, args, reg_left_ms(deadline), ret_result, err);
    reg_release(s, conn);
    return rc;
}
