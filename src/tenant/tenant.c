// SPDX-License-Identifier: MIT
/*
 * tenant — see tenant.h.
 */
#include "tenant/tenant.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "egress/proxy.h"
#include "proto/handlers.h"
#include "util/buf.h"
#include "util/fdio.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/path.h"
#include "util/trust.h"

/* /execute's handler types, then sessions */
static const char *const tenant_handlers[] = {HANDLER_TYPE_NAMES "session"};
#define TENANT_NH ARRAY_SIZE(tenant_handlers)

struct tenant {
    char *name;
    unsigned char hash[TENANT_HASH_LEN];
    unsigned max_sessions, max_running; /* 0: no limit of its own */
    unsigned max_mcp_sessions;          /* 0: max_sessions */
    unsigned quota_mb, max_workspaces;  /* 0: the store's defaults */
    atomic_uint running, sessions, mcp_sessions;
    atomic_ullong executions[TENANT_NH];
    atomic_ullong refused_running, refused_sessions, refused_mcp_sessions;
    struct egress_share egress; /* connections through the proxy (counted by its loop) */
};

struct tenants {
    struct tenant *v;
    size_t n;
};

void tenant_token_hash(const char *token, size_t len, unsigned char out[TENANT_HASH_LEN])
{
    crypto_generichash(out, TENANT_HASH_LEN, (const unsigned char *)token, len, NULL, 0);
}

bool tenant_token_matches(const char *token, const unsigned char hash[TENANT_HASH_LEN])
{
    size_t len = token ? strnlen(token, TENANT_MAX_TOKEN + 1) : 0;
    if (len == 0 || len > TENANT_MAX_TOKEN)
        return false;
    unsigned char h[TENANT_HASH_LEN];
    tenant_token_hash(token, len, h);
    return sodium_memcmp(h, hash, TENANT_HASH_LEN) == 0;
}

struct tenant *tenants_find(const struct tenants *t, const unsigned char hash[TENANT_HASH_LEN])
{
    struct tenant *found = NULL;
    /* No early exit: the time taken does not say which tenant, or how many, matched. */
    for (size_t i = 0; t && i < t->n; i++)
        if (sodium_memcmp(t->v[i].hash, hash, TENANT_HASH_LEN) == 0)
            found = &t->v[i];
    return found;
}

const char *tenant_name(const struct tenant *t)
{
    return t ? t->name : NULL;
}

size_t tenants_count(const struct tenants *t)
{
    return t ? t->n : 0;
}

struct egress_share *tenant_egress_share(struct tenant *t)
{
    return t ? &t->egress : NULL;
}

unsigned tenant_max_running(const struct tenant *t)
{
    return t ? t->max_running : 0;
}

unsigned tenant_max_sessions(const struct tenant *t)
{
    return t ? t->max_sessions : 0;
}

unsigned tenant_max_mcp_sessions(const struct tenant *t)
{
    return !t ? 0 : t->max_mcp_sessions ? t->max_mcp_sessions : t->max_sessions;
}

unsigned tenant_quota_mb(const struct tenant *t)
{
    return t ? t->quota_mb : 0;
}

unsigned tenant_max_workspaces(const struct tenant *t)
{
    return t ? t->max_workspaces : 0;
}

/* Take one unit of *count unless it is at max (0: no max). */
static bool tenant_claim(atomic_uint *count, unsigned max)
{
    unsigned cur = atomic_load(count);
    do {
        if (max && cur >= max)
            return false;
    } while (!atomic_compare_exchange_weak(count, &cur, cur + 1));
    return true;
}

bool tenant_run_begin(struct tenant *t, const char *handler)
{
    if (!t)
        return true;
    if (!tenant_claim(&t->running, t->max_running)) {
        atomic_fetch_add(&t->refused_running, 1);
        return false;
    }
    for (size_t i = 0; i < TENANT_NH; i++)
        if (strcmp(tenant_handlers[i], handler) == 0)
            atomic_fetch_add(&t->executions[i], 1);
    return true;
}

void tenant_run_end(struct tenant *t)
{
    if (t)
        atomic_fetch_sub(&t->running, 1);
}

bool tenant_session_claim(struct tenant *t)
{
    if (!t)
        return true;
    if (tenant_claim(&t->sessions, t->max_sessions))
        return true;
    atomic_fetch_add(&t->refused_sessions, 1);
    return false;
}

void tenant_session_release(struct tenant *t)
{
    if (t)
        atomic_fetch_sub(&t->sessions, 1);
}

bool tenant_mcp_session_claim(struct tenant *t)
{
    if (!t)
        return true;
    if (tenant_claim(&t->mcp_sessions, tenant_max_mcp_sessions(t)))
        return true;
    atomic_fetch_add(&t->refused_mcp_sessions, 1);
    return false;
}

void tenant_mcp_session_release(struct tenant *t)
{
    if (t)
        atomic_fetch_sub(&t->mcp_sessions, 1);
}

void tenants_free(struct tenants *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++) {
        free(t->v[i].name);
        sodium_memzero(t->v[i].hash, TENANT_HASH_LEN);
    }
    free(t->v);
    free(t);
}

/* ---- loading ------------------------------------------------------------------------------ */

static bool tenant_token_ok(const char *s, size_t len)
{
    if (len == 0 || len > TENANT_MAX_TOKEN)
        return false;
    for (size_t i = 0; i < len; i++)
        if (s[i] <= 0x20 || s[i] >= 0x7f)
            return false;
    return true;
}

static int tenant_limit(const char *path, const char *name, json_t *entry, const char *key,
                        unsigned max, unsigned *ret)
{
    json_t *v = json_object_get(entry, key);
    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > max) {
        log_error("tenants file %s: tenant '%s': \"%s\" must be an integer from 1 to %u", path,
                  name, key, max);
        return -EINVAL;
    }
    *ret = (unsigned)json_integer_value(v);
    return 0;
}

/* One entry into t (already zeroed). */
static int tenant_parse(const char *path, const char *name, json_t *entry, struct tenant *t)
{
    const char *why = path_check_name(name);
    if (why) {
        log_error("tenants file %s: tenant name '%.80s' %s", path, name, why);
        return -EINVAL;
    }
    if (!json_is_object(entry)) {
        log_error("tenants file %s: tenant '%s' must be an object", path, name);
        return -EINVAL;
    }
    static const char *const keys[] = {
        "token",   "maxSessions",   "maxRunning",       "maxMcpSessions",
        "quotaMb", "maxWorkspaces", "egressConnections"};
    const char *key;
    json_t *v;
    json_object_foreach(entry, key, v)
    {
        size_t i = 0;
        while (i < ARRAY_SIZE(keys) && strcmp(key, keys[i]) != 0)
            i++;
        if (i == ARRAY_SIZE(keys)) {
            log_error("tenants file %s: tenant '%s': unknown key \"%.80s\" (expected token, "
                      "maxSessions, maxRunning, maxMcpSessions, quotaMb, maxWorkspaces, "
                      "egressConnections)",
                      path, name, key);
            return -EINVAL;
        }
    }
    json_t *tok = json_object_get(entry, "token");
    if (!json_is_string(tok) || !tenant_token_ok(json_string_value(tok), json_string_length(tok))) {
        log_error("tenants file %s: tenant '%s': \"token\" must be a string of 1 to %d "
                  "printable ASCII characters without spaces",
                  path, name, TENANT_MAX_TOKEN);
        return -EINVAL;
    }
    if (json_string_length(tok) < 16)
        log_warn("tenants file %s: tenant '%s' has a token of %zu characters; use 32 random "
                 "bytes or more",
                 path, name, json_string_length(tok));
    tenant_token_hash(json_string_value(tok), json_string_length(tok), t->hash);
    if (tenant_limit(path, name, entry, "maxSessions", TENANT_MAX_LIMIT, &t->max_sessions) < 0 ||
        tenant_limit(path, name, entry, "maxRunning", TENANT_MAX_LIMIT, &t->max_running) < 0 ||
        tenant_limit(path, name, entry, "maxMcpSessions", TENANT_MAX_LIMIT, &t->max_mcp_sessions) <
            0 ||
        tenant_limit(path, name, entry, "quotaMb", TENANT_MAX_LIMIT, &t->quota_mb) < 0 ||
        tenant_limit(path, name, entry, "maxWorkspaces", TENANT_MAX_WORKSPACES,
                     &t->max_workspaces) < 0 ||
        tenant_limit(path, name, entry, "egressConnections", TENANT_MAX_LIMIT,
                     &t->egress.max_open) < 0)
        return -EINVAL;
    if (!(t->name = strdup(name)))
        return -ENOMEM;
    t->egress.name = t->name;
    return 0;
}

static int tenants_parse(const char *path, json_t *doc, struct tenants *ts)
{
    if (!json_is_object(doc)) {
        log_error("tenants file %s: expected {\"tenants\": {\"NAME\": {\"token\": ...}}}", path);
        return -EINVAL;
    }
    const char *key;
    json_t *v;
    json_object_foreach(doc, key, v)
    {
        if (strcmp(key, "tenants") != 0) {
            log_error("tenants file %s: unknown key \"%.80s\" (expected only \"tenants\")", path,
                      key);
            return -EINVAL;
        }
    }
    json_t *list = json_object_get(doc, "tenants");
    if (!json_is_object(list) || json_object_size(list) == 0 ||
        json_object_size(list) > TENANT_MAX) {
        log_error("tenants file %s: \"tenants\" must be an object of 1 to %d tenants", path,
                  TENANT_MAX);
        return -EINVAL;
    }
    ts->v = calloc(json_object_size(list), sizeof(*ts->v));
    if (!ts->v)
        return -ENOMEM;
    json_object_foreach(list, key, v)
    {
        struct tenant *t = &ts->v[ts->n];
        int r = tenant_parse(path, key, v, t);
        if (r < 0) {
            free(t->name);
            return r;
        }
        ts->n++;
        for (size_t i = 0; i + 1 < ts->n; i++)
            if (sodium_memcmp(ts->v[i].hash, t->hash, TENANT_HASH_LEN) == 0) {
                log_error("tenants file %s: tenants '%s' and '%s' have the same token", path,
                          ts->v[i].name, t->name);
                return -EINVAL;
            }
    }
    return 0;
}

int tenants_load(const char *path, struct tenants **ret)
{
    /* Whoever can write the file can make themselves a tenant. */
    _cleanup_sbx_error_ struct sbx_error why = {0};
    int r = trust_check(path, TRUST_FILE, &why);
    if (r < 0) {
        log_error("tenants file: %s", why.message ? why.message : "cannot be checked");
        return r == -ENOMEM ? r : -EINVAL;
    }
    struct stat st;
    if (stat(path, &st) == 0 && (st.st_mode & S_IROTH))
        log_warn("tenants file %s is readable by every user (it holds tokens: chmod o-r)", path);
    _cleanup_free_ char *text = NULL;
    size_t len;
    r = fd_read_file(AT_FDCWD, path, TENANT_MAX_FILE, &text, &len);
    if (r < 0)
        return log_errno(LOG_ERROR, r, "tenants file %s: cannot read it (at most %u bytes)", path,
                         TENANT_MAX_FILE);
    json_error_t jerr;
    json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    sodium_memzero(text, len);
    if (!doc) {
        log_error("tenants file %s: line %d: %s", path, jerr.line, jerr.text);
        return -EINVAL;
    }
    struct tenants *ts = calloc(1, sizeof(*ts));
    r = ts ? tenants_parse(path, doc, ts) : -ENOMEM;
    json_decref(doc);
    if (r < 0) {
        tenants_free(ts);
        return r;
    }
    log_info("tenants file %s: %zu tenant(s)", path, ts->n);
    *ret = ts;
    return 0;
}

/* ---- metrics ------------------------------------------------------------------------------ */

/* The value of gauge g of the table in tenants_metrics. */
static unsigned tenant_gauge(const struct tenant *t, size_t g)
{
    return g == 0   ? atomic_load(&t->running)
           : g == 1 ? atomic_load(&t->sessions)
           : g == 2 ? atomic_load(&t->mcp_sessions)
                    : atomic_load(&t->egress.open);
}

int tenants_metrics(const struct tenants *ts, const struct tenant *only, struct buf *out)
{
    int r = 0;
    r = r
            ?: buf_appends(out, "# HELP sandboxd_tenant_executions_total Executions started, by "
                                "tenant and handler.\n"
                                "# TYPE sandboxd_tenant_executions_total counter\n");
    for (size_t i = 0; ts && i < ts->n; i++)
        for (size_t h = 0; h < TENANT_NH; h++)
            if ((!only || only == &ts->v[i]) && atomic_load(&ts->v[i].executions[h]))
                r = r
                        ?: buf_printf(out,
                                      "sandboxd_tenant_executions_total{tenant=\"%s\",handler="
                                      "\"%s\"} %llu\n",
                                      ts->v[i].name, tenant_handlers[h],
                                      (unsigned long long)atomic_load(&ts->v[i].executions[h]));
    r = r
            ?: buf_appends(out, "# HELP sandboxd_tenant_refused_total Requests refused at a "
                                "tenant's limit.\n"
                                "# TYPE sandboxd_tenant_refused_total counter\n");
    for (size_t i = 0; ts && i < ts->n; i++) {
        const struct tenant *t = &ts->v[i];
        if (only && only != t)
            continue;
        r = r
                ?: buf_printf(out,
                              "sandboxd_tenant_refused_total{tenant=\"%s\",limit=\"maxRunning\"} "
                              "%llu\n"
                              "sandboxd_tenant_refused_total{tenant=\"%s\",limit=\"maxSessions\"} "
                              "%llu\n"
                              "sandboxd_tenant_refused_total{tenant=\"%s\",limit="
                              "\"maxMcpSessions\"} %llu\n"
                              "sandboxd_tenant_refused_total{tenant=\"%s\",limit="
                              "\"egressConnections\"} %llu\n",
                              t->name, (unsigned long long)atomic_load(&t->refused_running),
                              t->name, (unsigned long long)atomic_load(&t->refused_sessions),
                              t->name, (unsigned long long)atomic_load(&t->refused_mcp_sessions),
                              t->name, (unsigned long long)atomic_load(&t->egress.refused));
    }
    static const char *const gauges[][2] = {
        {"sandboxd_tenant_running", "Executions of a tenant running now."},
        {"sandboxd_tenant_sessions", "Live sessions of a tenant."},
        {"sandboxd_tenant_mcp_sessions", "MCP sessions (of /mcp) a tenant holds."},
        {"sandboxd_tenant_egress_connections",
         "Connections of a tenant through the egress proxy now."},
    };
    for (size_t g = 0; g < ARRAY_SIZE(gauges); g++) {
        r = r
                ?: buf_printf(out, "# HELP %s %s\n# TYPE %s gauge\n", gauges[g][0], gauges[g][1],
                              gauges[g][0]);
        for (size_t i = 0; ts && i < ts->n; i++)
            if (!only || only == &ts->v[i])
                r = r
                        ?: buf_printf(out, "%s{tenant=\"%s\"} %u\n", gauges[g][0], ts->v[i].name,
                                      tenant_gauge(&ts->v[i], g));
    }
    return r;
}
