// SPDX-License-Identifier: MIT
/*
 * api — see api.h.
 */
#include "api/api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/mcp_http.h"
#include "api/policy.h"
#include "api/routes.h"
#include "api/status.h"
#include "api/web.h"
#include "handlers/request.h"
#include "api/sessions.h"
#include "handlers/dispatch.h"
#include "api/workspaces.h"
#include "tenant/tenant.h"
#include "e2b/e2b.h"
#include "egress/proxy.h"
#include "mcpclient/registry.h"
#include "pool/pool.h"
#include "pool/profile.h"
#include "pool/reuse.h"
#include "store/store.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/macros.h"
#include "handlers/cache.h"

bool api_is_json_type(const char *ct)
{
    if (!ct)
        return false;
    while (*ct == ' ')
        ct++;
    size_t n = strcspn(ct, "; ");
    return n == 16 && strncasecmp(ct, "application/json", 16) == 0;
}

/* Does one media range (already split from the list) admit `type`? */
static bool api_range_admits(const char *range, size_t len, const char *type)
{
    while (len && (*range == ' ' || *range == '\t')) {
        range++;
        len--;
    }
    size_t mlen = 0;
    while (mlen < len && range[mlen] != ';' && range[mlen] != ' ')
        mlen++;
    /* q=0 means "not acceptable" */
    const char *q = memmem(range, len, "q=", 2);
    if (q) {
        double v = strtod(q + 2, NULL);
        if (v <= 0.0)
            return false;
    }
    const char *slash = strchr(type, '/');
    size_t major = (size_t)(slash - type);
    if (mlen == 3 && strncmp(range, "*/*", 3) == 0)
        return true;
    if (mlen == major + 2 && strncasecmp(range, type, major + 1) == 0 && range[major + 1] == '*')
        return true;
    return mlen == strlen(type) && strncasecmp(range, type, mlen) == 0;
}

bool api_accepts(const char *accept, const char *type)
{
    if (!accept || !*accept)
        return true;
    const char *p = accept;
    while (*p) {
        size_t n = strcspn(p, ",");
        if (api_range_admits(p, n, type))
            return true;
        p += n;
        if (*p == ',')
            p++;
    }
    return false;
}

static json_t *api_parse_json(const struct http_request *req, struct http_reply *reply)
{
    json_error_t err;
    /* NUL inside strings is accepted by the parser so that validation can name the field
     * that carries it; every string we use is checked for it. */
    json_t *body =
        json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &err);
    if (!body)
        api_reply_error(reply, SBX_ERR_INVALID, "INVALID_JSON", NULL,
                        "malformed JSON at line %d: %s", err.line, err.text);
    return body;
}

static bool api_json_request(const struct http_request *req, struct http_reply *reply)
{
    if (!api_is_json_type(http_header(req, "Content-Type"))) {
        api_reply_error(reply, SBX_ERR_MEDIA_TYPE, "UNSUPPORTED_MEDIA_TYPE", NULL,
                        "Content-Type must be application/json");
        return false;
    }
    if (!api_accepts(http_header(req, "Accept"), "application/json")) {
        api_reply_error(reply, SBX_ERR_NOT_ACCEPTABLE, "NOT_ACCEPTABLE", NULL,
                        "this endpoint answers application/json only");
        return false;
    }
    return true;
}

static void api_execute(struct api *api, const struct http_request *req, struct tenant *tenant,
                        struct http_reply *reply)
{
    if (!api_json_request(req, reply))
        return;
    json_t *body = api_parse_json(req, reply);
    if (!body) {
        metrics_request(api->app->metrics, "JIT", "bad_request", 0);
        return;
    }
    /* The one validation of the request (handlers/request.c): its form and what this server can
     * give it, before anything runs; the handlers trust the spec. */
    struct request_spec spec = {0};
    struct sbx_error err = {0};
    if (request_validate(api->app, body, &spec, &err) < 0) {
        api_reply_sbx_error(reply, &err);
        request_done(&spec);
        json_decref(body);
        return;
    }
    spec.tenant = tenant_name(tenant);
    spec.egress_share = tenant_egress_share(tenant);
    if (!tenant_run_begin(tenant, spec.handler_name)) {
        api_reply_error(reply, SBX_ERR_LIMIT, "TENANT_LIMIT", NULL,
                        "tenant '%s' runs %u executions, its maxRunning; retry later",
                        tenant_name(tenant), tenant_max_running(tenant));
        http_reply_header(reply, "Retry-After", "1");
        request_done(&spec);
        json_decref(body);
        return;
    }
    struct app_reply ar;
    handlers_execute(api->app, &spec, &ar);
    tenant_run_end(tenant);
    request_done(&spec);
    reply->status = api_status_of(ar.kind);
    if (ar.raw.text) {
        /* The result's value passes through as the sandbox sent it (validated, never parsed). */
        reply->text = response_render(ar.body, ar.raw_kind, &ar.raw, false, NULL);
        reply->content_type = "application/json";
        json_decref(ar.body);
        frame_raw_done(&ar.raw);
        if (!reply->text)
            api_reply_error(reply, SBX_ERR_INTERNAL, "INTERNAL", NULL, "out of memory");
    } else if (ar.body) {
        reply->body = ar.body;
    } else { /* not even the handlers' INTERNAL error could be built */
        api_reply_error(reply, SBX_ERR_INTERNAL, "INTERNAL", NULL, "out of memory");
    }
    if (ar.kind == SBX_ERR_UNAVAILABLE) {
        char ra[16];
        snprintf(ra, sizeof(ra), "%u", ar.retry_after ? ar.retry_after : 1);
        http_reply_header(reply, "Retry-After", ra);
    }
    json_decref(body);
}

static json_t *api_pool_stats(struct pool *p)
{
    return p ? pool_stats(p) : json_pack("{s:b}", "enabled", 0);
}

/* SHUTTING_DOWN (UNAVAILABLE) when draining; false when the request may go on. */
static bool api_refuse_when_draining(struct api *api, struct http_reply *reply)
{
    if (!atomic_load(&api->draining))
        return false;
    api_reply_error(reply, SBX_ERR_UNAVAILABLE, "SHUTTING_DOWN", NULL,
                    "sandboxd is shutting down and takes no new work; retry (another instance "
                    "will answer)");
    return true;
}

static void api_healthz(struct api *api, const struct http_request *req, struct http_reply *reply)
{
    struct app *a = api->app;
    if (!policy_operator(api->policy, req)) {
        /* Anyone may probe; only the operator learns about the host (docs/SECURITY.md). */
        bool draining = atomic_load(&api->draining);
        reply->status = api_status_of(draining ? SBX_ERR_UNAVAILABLE : SBX_ERR_NONE);
        reply->body = json_pack("{s:s}", "status", draining ? "draining" : "ok");
        return;
    }
    json_t *isolation = json_deep_copy(a->isolation);
    struct http_server *http = atomic_load(&api->http);
    bool draining = atomic_load(&api->draining);
    reply->status = api_status_of(draining ? SBX_ERR_UNAVAILABLE : SBX_ERR_NONE);
    reply->body = json_pack(
        "{s:s, s:s, s:f, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o*}", "status",
        draining ? "draining" : "ok", "version", SANDBOXD_VERSION, "uptimeS",
        (double)(clock_mono_us() - a->started_us) / 1e6, "isolation",
        isolation ? isolation : json_object(), "pool", api_pool_stats(a->pool), "sessionPool",
        api_pool_stats(a->session_pool), "templatePool", api_pool_stats(a->template_pool),
        "executions", manager_stats(a->mgr), "definitions", defs_stats(a->defs), "frameworkLog",
        framework_log_stats(a->fw), "http", http ? http_server_stats(http) : NULL);
    /* a part that could not be built (out of memory) fails the report */
    int lost = http && reply->body && !json_object_get(reply->body, "http") ? -1 : 0;
    if (reply->body) {
        lost |= json_object_set_new(reply->body, "workflows", flow_cache_stats(a->wf_cache));
        lost |= json_object_set_new(reply->body, "profiles", profiles_stats(a->profiles));
        lost |= json_object_set_new(reply->body, "reuse", reuse_stats(a->reuse));
        lost |= json_object_set_new(reply->body, "networkPool", api_pool_stats(a->network_pool));
        lost |= json_object_set_new(reply->body, "egress",
                                    a->egress ? egress_proxy_describe(a->egress)
                                              : json_pack("{s:[], s:[]}", "allow", "recent"));
    }
    if (reply->body && api->sessions)
        lost |= json_object_set_new(reply->body, "sessions", sessions_stats(api->sessions));
    if (reply->body && api->store)
        lost |= json_object_set_new(reply->body, "stateStore", store_describe(api->store));
    if (!reply->body || lost) {
        json_decref(reply->body);
        reply->body = NULL;
        api_reply_error(reply, SBX_ERR_INTERNAL, "INTERNAL", NULL,
                        "out of memory: the answer could not be built");
    }
}

/* Liveness: the process runs and its HTTP front answers. */
static void api_livez(struct http_reply *reply)
{
    api_reply_json(reply, API_OK, json_pack("{s:s}", "status", "alive"));
}

/* Does the pool report a zygote that can fork interpreters? */
static bool api_pool_can_fork(json_t *stats)
{
    size_t i;
    json_t *z;
    json_array_foreach(json_object_get(stats, "zygotes"), i, z)
    {
        if (json_is_true(json_object_get(z, "alive")))
            return true;
    }
    return false;
}

/* Readiness: 503 while draining, until the state store has answered once, while starting (no
 * warm interpreter was ready yet), or while the warm pool cannot make interpreters (every
 * zygote died and waits for its restart). An empty pool
 * under load is ready: requests wait for a fresh interpreter, which is still the fastest place
 * to send them. */
static void api_readyz(struct api *api, struct http_reply *reply)
{
    const char *status = "ready", *why = NULL;
    json_t *ps = api->app->pool ? pool_stats(api->app->pool) : NULL;
    if (ps && !atomic_load(&api->started) && json_integer_value(json_object_get(ps, "ready")) > 0)
        atomic_store(&api->started, true);
    if (atomic_load(&api->draining)) {
        status = "draining";
        why = "sandboxd is shutting down";
    } else if (api->store && !store_ready(api->store, &why)) {
        /* Until the state store has answered once (a database down at start): sessions and
         * workflows would fail, so the balancer sends nothing here yet. Named before the pool's
         * start, which ends by itself, so an operator reads the cause that needs them. */
        status = "store_unavailable";
    } else if (ps && !atomic_load(&api->started)) {
        status = "starting";
        why = "the warm pool has no ready interpreter yet";
    } else if (ps && !api_pool_can_fork(ps)) {
        status = "degraded";
        why = "the warm pool's zygotes died and are restarting";
    }
    json_decref(ps);
    api_reply_json(reply, API_OK, json_pack("{s:s, s:s*}", "status", status, "reason", why));
    if (why && reply->body) {
        reply->status = api_status_of(SBX_ERR_UNAVAILABLE);
        http_reply_header(reply, "Retry-After", "1");
    }
}

static void api_load_code(struct api *api, const struct http_request *req, struct http_reply *reply)
{
    if (!api_json_request(req, reply))
        return;
    json_t *body = api_parse_json(req, reply);
    if (!body)
        return;
    const char *app_id = json_string_value(json_object_get(body, "appId"));
    json_t *files = json_object_get(body, "files");
    if (!json_is_object(body) || !app_id || !*app_id) {
        api_reply_error(reply, SBX_ERR_INVALID, "INVALID_REQUEST", "appId", "appId: is required");
        json_decref(body);
        return;
    }
    if (files && !json_is_null(files) && !json_is_array(files)) {
        api_reply_error(reply, SBX_ERR_INVALID, "INVALID_REQUEST", "files",
                        "files: must be an array");
        json_decref(body);
        return;
    }
    size_t n = json_array_size(files);
    const char **paths = calloc(n ? n : 1, sizeof(char *));
    if (!paths) {
        api_reply_error(reply, SBX_ERR_INTERNAL, "INTERNAL", NULL, "out of memory");
        json_decref(body);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        paths[i] = json_string_value(json_array_get(files, i));
        if (!paths[i]) {
            api_reply_error(reply, SBX_ERR_INVALID, "INVALID_REQUEST", "files",
                            "files[%zu]: must be a string", i);
            free(paths);
            json_decref(body);
            return;
        }
    }
    size_t dropped = defs_invalidate(api->app->defs, app_id, paths, n);
    free(paths);
    /* New code: the app's kept interpreters hold the old modules (warm reuse). */
    size_t retired = reuse_retire_app(api->app->reuse, app_id);
    log_info("load_code: dropped %zu cached definitions and %zu reused interpreters of app %s",
             dropped, retired, app_id);
    api_reply_json(reply, API_OK, json_pack("{s:I}", "invalidated", (json_int_t)dropped));
    json_decref(body);
}

static void api_metrics(struct api *api, const struct http_request *req, struct tenant *tenant,
                        struct http_reply *reply)
{
    struct app *a = api->app;
    json_t *ms = manager_stats(a->mgr);
    json_t *ps = a->pool ? pool_stats(a->pool) : NULL;
    struct http_server *http = atomic_load(&api->http);
    json_t *hs = http ? http_server_stats(http) : NULL;
    struct metrics_gauge g[] = {
        {"sandboxd_executions_running", "Executions running now.",
         (double)json_integer_value(json_object_get(ms, "running"))},
        {"sandboxd_executions_queued", "Executions waiting for a slot.",
         (double)json_integer_value(json_object_get(ms, "queued"))},
        {"sandboxd_pool_ready", "Warm interpreters ready to take work.",
         (double)json_integer_value(json_object_get(ps, "ready"))},
        {"sandboxd_pool_target", "Configured warm pool size.",
         (double)json_integer_value(json_object_get(ps, "target"))},
        {"sandboxd_pool_hits_total", "Executions served by a ready warm interpreter.",
         (double)json_integer_value(json_object_get(ps, "hits"))},
        {"sandboxd_pool_misses_total", "Executions that had to wait for an interpreter.",
         (double)json_integer_value(json_object_get(ps, "misses"))},
        {"sandboxd_sessions_live", "Live persistent sessions.",
         api->sessions ? (double)sessions_live(api->sessions) : 0},
        {"sandboxd_http_connections", "Open HTTP connections.",
         (double)json_integer_value(json_object_get(hs, "connections"))},
        {"sandboxd_http_requests_in_flight", "HTTP requests being handled or answered.",
         (double)json_integer_value(json_object_get(hs, "requests"))},
    };
    json_decref(ms);
    json_decref(ps);
    json_decref(hs);
    api_reply_ok(reply, API_OK);
    reply->text = metrics_render(a->metrics, g, ARRAY_SIZE(g));
    reply->content_type = "text/plain; version=0.0.4";
    struct tenants *ts = policy_tenants(api->policy);
    if (reply->text && ts) {
        /* A tenant sees its own series only: the other tenants' names are theirs. */
        struct buf b;
        buf_init(&b, 1u << 20);
        if (buf_appends(&b, reply->text) < 0 || tenants_metrics(ts, tenant, &b) < 0) {
            free(reply->text);
            reply->text = NULL;
        } else {
            free(reply->text);
            reply->text = buf_take(&b, NULL);
        }
        buf_free(&b);
    }
    if (!reply->text)
        api_reply_error(reply, SBX_ERR_INTERNAL, "INTERNAL", NULL, "out of memory");
}

/* /e2b: E2B's SDKs send the key as X-API-Key, and to a sandbox (the data plane) none at all:
 * the e2b module checks the sandbox's own token there. A key sent to a sandbox anyway must be
 * right, and then stands for its owner. Refusals in E2B's shapes, so the SDKs raise their own
 * AuthenticationError. */
static void api_e2b(struct api *api, const struct http_request *req, struct http_reply *reply)
{
    struct tenant *tenant = NULL;
    const char *key = http_header(req, "X-API-Key");
    const char *auth = http_header(req, "Authorization");
    if (!key && auth && strncasecmp(auth, "Bearer ", 7) == 0)
        key = auth + 7; /* also a sandboxd client's header; E2B's "Basic" names a user */
    bool data = e2b_is_data_plane(req);
    bool keyed = !data || key;
    enum policy_verdict v = policy_check_source(api->policy, req);
    if (v == POLICY_OK && keyed)
        v = policy_check_key(api->policy, key, &tenant);
    if (v != POLICY_OK) {
        e2b_refuse(req, policy_kind(v), policy_message(v), reply);
        return;
    }
    /* The route table names /e2b/{path} like every other route (E2B's paths are its protocol's,
     * docs/E2B.md; the e2b module answers its own 404s and 405s): what it does not name is
     * refused here, in E2B's shape. */
    const struct api_route_def *rt = api_route_lookup(req->path);
    if (!rt || !(rt->methods & api_method_bit(req->method))) {
        char allow[32] = "";
        if (rt)
            api_methods_format(rt->methods, allow);
        e2b_refuse(req, rt ? SBX_ERR_METHOD : SBX_ERR_NOT_FOUND,
                   rt ? "method not allowed" : "no such route", reply);
        if (rt)
            http_reply_header(reply, "Allow", allow);
        return;
    }
    if (!data && strcmp(req->method, "POST") == 0 && atomic_load(&api->draining)) {
        /* With Retry-After, as every UNAVAILABLE of E2B's surfaces. */
        e2b_refuse(req, SBX_ERR_UNAVAILABLE,
                   "sandboxd is shutting down and takes no new work; retry", reply);
        return;
    }
    e2b_route(api->e2b, req, req->path + 4, tenant, keyed, reply);
}

/* GET /v1/session-options: what POST /v1/sessions may name (servers, profiles). The same for
 * every caller: the configuration is the server's, and an unknown name's 400 lists it too. */
static void api_session_options(struct api *api, struct http_reply *reply)
{
    json_t *servers = api->registry ? mcp_registry_names(api->registry) : json_array();
    json_t *profiles = profiles_names(api->app->profiles);
    json_t *body = servers && profiles
                       ? json_pack("{s:o, s:o}", "servers", servers, "profiles", profiles)
                       : NULL;
    if (!body) {
        if (!servers || !profiles) { /* json_pack took neither */
            json_decref(servers);
            json_decref(profiles);
        }
        api_reply_error(reply, SBX_ERR_INTERNAL, "INTERNAL", NULL, "out of memory");
    } else {
        api_reply_json(reply, API_OK, body);
    }
}

void api_route(void *userdata, const struct http_request *req, struct http_reply *reply)
{
    struct api *api = userdata;
    if (api->e2b && strncmp(req->path, "/e2b", 4) == 0 &&
        (req->path[4] == '/' || req->path[4] == '\0')) {
        api_e2b(api, req, reply);
        return;
    }
    const char *path = req->path;
    bool get = strcmp(req->method, "GET") == 0;
    bool post = strcmp(req->method, "POST") == 0;
    struct tenant *tenant = NULL;
    enum policy_verdict v = policy_check(api->policy, req, &tenant);
    if (v != POLICY_OK) {
        policy_refuse(v, strcmp(path, "/mcp") == 0, reply);
        return;
    }
    /* The route table decides what exists (api/routes.h): the branches below never see a path
     * or a method it does not name. */
    const struct api_route_def *rt = api_route_lookup(path);
    if (!rt) {
        api_reply_error(reply, SBX_ERR_NOT_FOUND, "NOT_FOUND", NULL, "no route %s %s", req->method,
                        path);
        return;
    }
    if (!(rt->methods & api_method_bit(req->method))) {
        char allow[32];
        api_methods_format(rt->methods, allow);
        api_reply_method(reply, allow);
        return;
    }
    /* The reply's bytes count against the caller's share of the reply budget (the operator's
     * against the total only); while unread replies fill it, work is refused before it is
     * done. The probes always answer (small, and the operator's). */
    bool probe = strcmp(path, "/healthz") == 0 || strcmp(path, "/livez") == 0 ||
                 strcmp(path, "/readyz") == 0;
    if (!probe && !http_reply_admit(req, reply, tenant))
        return;
    bool sessions = strncmp(path, "/v1/sessions", 12) == 0 && (path[12] == '\0' || path[12] == '/');
    /* New work while draining: executions, and sessions or session executions (every POST
     * under /v1/sessions); reading state and deleting go on. /mcp decides for itself. */
    if (post && (strcmp(path, "/execute") == 0 || sessions) && api_refuse_when_draining(api, reply))
        return;
    if (strcmp(path, "/execute") == 0) {
        if (post)
            api_execute(api, req, tenant, reply);
        else
            api_reply_method(reply, "POST");
    } else if (strcmp(path, "/healthz") == 0) {
        if (get)
            api_healthz(api, req, reply);
        else
            api_reply_method(reply, "GET");
    } else if (strcmp(path, "/livez") == 0) {
        if (get)
            api_livez(reply);
        else
            api_reply_method(reply, "GET");
    } else if (strcmp(path, "/readyz") == 0) {
        if (get)
            api_readyz(api, reply);
        else
            api_reply_method(reply, "GET");
    } else if (strcmp(path, "/_framework/load_code") == 0) {
        if (post)
            api_load_code(api, req, reply);
        else
            api_reply_method(reply, "POST");
    } else if (strcmp(path, "/metrics") == 0) {
        if (get)
            api_metrics(api, req, tenant, reply);
        else
            api_reply_method(reply, "GET");
    } else if (sessions) {
        api_sessions_route(api, req, path + 12, tenant, reply);
    } else if (strcmp(path, "/v1/approvals") == 0) {
        api_approvals_route(api, tenant, reply);
    } else if (strncmp(path, "/v1/workspaces/", 15) == 0) {
        api_workspaces_route(api, req, path + 14, tenant, reply);
    } else if (strcmp(path, "/mcp") == 0 && api->mcp) {
        mcp_http_route(api->mcp, req, tenant, reply);
    } else if (strcmp(path, "/v1/session-options") == 0) {
        api_session_options(api, reply);
    } else if (strncmp(rt->path, "/ui", 3) == 0 || strcmp(path, "/openapi.json") == 0) {
        api_web_route(req, reply);
    } else {
        api_reply_error(reply, SBX_ERR_NOT_FOUND, "NOT_FOUND", NULL, "no route %s %s", req->method,
                        path);
    }
}

bool api_route_inline(void *userdata, const char *method, const char *path)
{
    static const char *const cheap[] = {"/healthz", "/livez", "/readyz", "/metrics",
                                        "/openapi.json"};
    if (strcmp(method, "GET") != 0)
        return false;
    for (size_t i = 0; i < ARRAY_SIZE(cheap); i++)
        if (strcmp(path, cheap[i]) == 0)
            return true;
    /* a copy of a compiled-in file */
    return strncmp(path, "/ui", 3) == 0 && (path[3] == '\0' || path[3] == '/');
}

void api_drain(struct api *api)
{
    atomic_store(&api->draining, true);
    if (api->mcp)
        mcp_http_drain(api->mcp);
}
