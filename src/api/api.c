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
#include "api/request.h"
#include "api/sessions.h"
#include "egress/proxy.h"
#include "pool/pool.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/macros.h"
#include "flow/cache.h"

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
        http_reply_error(reply, 400, "INVALID_JSON", NULL, "malformed JSON at line %d: %s",
                         err.line, err.text);
    return body;
}

static bool api_json_request(const struct http_request *req, struct http_reply *reply)
{
    if (!api_is_json_type(http_header(req, "Content-Type"))) {
        http_reply_error(reply, 415, "UNSUPPORTED_MEDIA_TYPE", NULL,
                         "Content-Type must be application/json");
        return false;
    }
    if (!api_accepts(http_header(req, "Accept"), "application/json")) {
        http_reply_error(reply, 406, "NOT_ACCEPTABLE", NULL,
                         "this endpoint answers application/json only");
        return false;
    }
    return true;
}

static void api_execute(struct api *api, const struct http_request *req, struct http_reply *reply)
{
    if (!api_json_request(req, reply))
        return;
    json_t *body = api_parse_json(req, reply);
    if (!body) {
        metrics_request(api->app->metrics, "JIT", "bad_request", 0);
        return;
    }
    struct request_spec spec;
    struct request_error err;
    if (request_parse(body, &spec, &err) < 0) {
        http_reply_error(reply, 400, "INVALID_REQUEST", err.field, "%s%s%s", err.field,
                         *err.field ? ": " : "", err.message);
        json_decref(body);
        return;
    }
    struct egress_policy *egress = NULL;
    char *why = NULL;
    if (spec.network &&
        egress_network_parse(api->app->egress ? egress_proxy_config(api->app->egress) : NULL,
                             spec.network, &egress, &why) < 0) {
        http_reply_error(reply, 400, "NETWORK_NOT_ALLOWED", "context.taskDetails.network",
                         "context.taskDetails.network: %s", why ? why : "out of memory");
        free(why);
        json_decref(body);
        return;
    }
    spec.egress = egress;
    struct app_reply ar;
    app_execute(api->app, &spec, &ar);
    egress_policy_free(egress);
    reply->status = ar.status;
    reply->body = ar.body;
    if (ar.status == 503) {
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

static void api_healthz(struct api *api, const struct http_request *req, struct http_reply *reply)
{
    struct app *a = api->app;
    json_t *isolation = json_deep_copy(a->isolation);
    reply->status = 200;
    reply->body = json_pack(
        "{s:s, s:s, s:f, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "status", "ok", "version",
        SANDBOXD_VERSION, "uptimeS", (double)(clock_mono_us() - a->started_us) / 1e6, "isolation",
        isolation ? isolation : json_object(), "pool", api_pool_stats(a->pool), "sessionPool",
        api_pool_stats(a->session_pool), "templatePool", api_pool_stats(a->template_pool),
        "executions", manager_stats(a->mgr), "definitions", defs_stats(a->defs), "frameworkLog",
        framework_log_stats(a->fw));
    if (reply->body)
        json_object_set_new(reply->body, "workflows", flow_cache_stats(a->wf_cache));
    if (reply->body)
        json_object_set_new(reply->body, "egress",
                            a->egress ? egress_proxy_describe(a->egress)
                                      : json_pack("{s:o}", "allow", json_array()));
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
        http_reply_error(reply, 400, "INVALID_REQUEST", "appId", "appId: is required");
        json_decref(body);
        return;
    }
    if (files && !json_is_null(files) && !json_is_array(files)) {
        http_reply_error(reply, 400, "INVALID_REQUEST", "files", "files: must be an array");
        json_decref(body);
        return;
    }
    size_t n = json_array_size(files);
    const char **paths = calloc(n ? n : 1, sizeof(char *));
    if (!paths) {
        http_reply_error(reply, 500, "INTERNAL", NULL, "out of memory");
        json_decref(body);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        paths[i] = json_string_value(json_array_get(files, i));
        if (!paths[i]) {
            http_reply_error(reply, 400, "INVALID_REQUEST", "files", "files[%zu]: must be a string",
                             i);
            free(paths);
            json_decref(body);
            return;
        }
    }
    size_t dropped = defs_invalidate(api->app->defs, app_id, paths, n);
    free(paths);
    log_info("load_code: dropped %zu cached definitions of app %s", dropped, app_id);
    reply->status = 200;
    reply->body = json_pack("{s:I}", "invalidated", (json_int_t)dropped);
    json_decref(body);
}

static void api_metrics(struct api *api, const struct http_request *req, struct http_reply *reply)
{
    struct app *a = api->app;
    json_t *ms = manager_stats(a->mgr);
    json_t *ps = a->pool ? pool_stats(a->pool) : NULL;
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
    };
    json_decref(ms);
    json_decref(ps);
    reply->status = 200;
    reply->text = metrics_render(a->metrics, g, ARRAY_SIZE(g));
    reply->content_type = "text/plain; version=0.0.4";
    if (!reply->text)
        http_reply_error(reply, 500, "INTERNAL", NULL, "out of memory");
}

static void api_method_not_allowed(struct http_reply *reply, const char *allow)
{
    http_reply_error(reply, 405, "METHOD_NOT_ALLOWED", NULL, "use %s", allow);
    http_reply_header(reply, "Allow", allow);
}

void api_route(void *userdata, const struct http_request *req, struct http_reply *reply)
{
    struct api *api = userdata;
    const char *path = req->path;
    bool get = strcmp(req->method, "GET") == 0;
    bool post = strcmp(req->method, "POST") == 0;
    if (strcmp(path, "/execute") == 0) {
        if (post)
            api_execute(api, req, reply);
        else
            api_method_not_allowed(reply, "POST");
    } else if (strcmp(path, "/healthz") == 0) {
        if (get)
            api_healthz(api, req, reply);
        else
            api_method_not_allowed(reply, "GET");
    } else if (strcmp(path, "/_framework/load_code") == 0) {
        if (post)
            api_load_code(api, req, reply);
        else
            api_method_not_allowed(reply, "POST");
    } else if (strcmp(path, "/metrics") == 0) {
        if (get)
            api_metrics(api, req, reply);
        else
            api_method_not_allowed(reply, "GET");
    } else if (strncmp(path, "/v1/sessions", 12) == 0 && (path[12] == '\0' || path[12] == '/')) {
        api_sessions_route(api, req, path + 12, reply);
    } else if (strcmp(path, "/mcp") == 0 && api->mcp) {
        mcp_http_route(api->mcp, req, reply);
    } else {
        http_reply_error(reply, 404, "NOT_FOUND", NULL, "no route %s %s", req->method, path);
    }
}
