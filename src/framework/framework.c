// SPDX-License-Identifier: MIT
/*
 * framework — see framework.h.
 */
#include "framework/framework.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "framework/llm.h"
#include "store/store.h"
#include "util/b64.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/path.h"
#include "util/thread.h"
#include "util/url.h"

#define FRAMEWORK_LOG_QUEUE 256

struct framework_log_msg {
    char *endpoint;
    json_t *params;
};

struct framework {
    struct framework_options opt;
    char *definitions_dir;
    int definitions_fd;
    struct llm *llm;

    pthread_mutex_t log_lock;
    pthread_cond_t log_cond;
    struct framework_log_msg log_queue[FRAMEWORK_LOG_QUEUE];
    size_t log_head, log_len;
    struct thread_group log_thread;
    uint64_t log_sent, log_failed, log_dropped;
};

static void *framework_log_worker(void *arg);

int framework_new(const struct framework_options *opt, struct framework **ret)
{
    struct framework *fw = calloc(1, sizeof(*fw));
    if (!fw)
        return -ENOMEM;
    fw->opt = *opt;
    fw->definitions_fd = -1;
    pthread_mutex_init(&fw->log_lock, NULL);
    pthread_cond_init(&fw->log_cond, NULL);
    int r = -ENOMEM;
    if (opt->definitions_dir) {
        fw->definitions_fd = open(opt->definitions_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fw->definitions_fd < 0) {
            r = log_errno(LOG_ERROR, errno, "framework: cannot open --definitions %s",
                          opt->definitions_dir);
            goto fail;
        }
        if (!(fw->definitions_dir = strdup(opt->definitions_dir)))
            goto fail;
    }
    struct llm_options lo = {
        .url = opt->llm_url,
        .model = opt->llm_model,
        .api_key = opt->llm_api_key,
        .timeout_ms = opt->llm_timeout_ms,
        .max_response = opt->max_response,
    };
    if ((r = llm_new(&lo, &fw->llm)) < 0)
        goto fail;
    if ((r = thread_group_init(&fw->log_thread, "framework log", 1, &fw->log_lock, &fw->log_cond,
                               -1)) < 0 ||
        (r = thread_group_start(&fw->log_thread, framework_log_worker, fw)) < 0)
        goto fail;
    *ret = fw;
    return 0;
fail:
    thread_group_done(&fw->log_thread);
    llm_free(fw->llm);
    if (fw->definitions_fd >= 0)
        close(fw->definitions_fd);
    free(fw->definitions_dir);
    free(fw);
    return r;
}

void framework_free(struct framework *fw)
{
    if (!fw)
        return;
    thread_group_stop(&fw->log_thread);
    thread_group_done(&fw->log_thread);
    for (size_t i = 0; i < fw->log_len; i++) {
        struct framework_log_msg *m = &fw->log_queue[(fw->log_head + i) % FRAMEWORK_LOG_QUEUE];
        free(m->endpoint);
        json_decref(m->params);
    }
    llm_free(fw->llm);
    if (fw->definitions_fd >= 0)
        close(fw->definitions_fd);
    free(fw->definitions_dir);
    pthread_mutex_destroy(&fw->log_lock);
    pthread_cond_destroy(&fw->log_cond);
    free(fw);
}

/* ---- the embedded "local" framework ---------------------------------------------------- */

static const char *framework_param_string(json_t *params, const char *key, struct sbx_error *err)
{
    const char *v = json_string_value(json_object_get(params, key));
    if (!v)
        sbx_error_upstream(err, SBX_UP_TOOL, "INVALID_PARAMS", "parameter '%s' must be a string",
                           key);
    return v;
}

static int local_definition(struct framework *fw, const char *app, json_t *params, json_t **ret,
                            struct sbx_error *err)
{
    const char *path = framework_param_string(params, "file_path", err);
    if (!path)
        return -EINVAL;
    const char *why = path_check_component(app, strlen(app));
    if (!why)
        why = path_check_relative(path, strlen(path));
    if (why) {
        sbx_error_upstream(err, SBX_UP_TOOL, "INVALID_PARAMS", "invalid definition path: %s", why);
        return -EINVAL;
    }
    if (fw->definitions_fd < 0) {
        sbx_error_upstream(err, SBX_UP_TOOL, "NOT_FOUND",
                           "no definitions directory is configured (--definitions)");
        return -ENOENT;
    }
    char rel[PATH_REQUEST_MAX + 300];
    snprintf(rel, sizeof(rel), "%s/%s", app, path);
    /* RESOLVE_BENEATH: no "..", absolute symlink or mount crossing can leave the directory. */
    struct open_how how = {.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY,
                           .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS};
    _cleanup_close_ int fd = (int)syscall(SYS_openat2, fw->definitions_fd, rel, &how, sizeof(how));
    if (fd < 0) {
        int e = errno;
        sbx_error_upstream(err, SBX_UP_TOOL,
                           e == ENOENT || e == ENOTDIR ? "NOT_FOUND" : "READ_FAILED",
                           "definition %s of app %s: %s", path, app, strerror(e));
        return -e;
    }
    struct buf b;
    buf_init(&b, FRAMEWORK_MAX_DEFINITION);
    char chunk[16384];
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || (n > 0 && buf_append(&b, chunk, (size_t)n) < 0)) {
            int e = n < 0 ? errno : EFBIG;
            buf_free(&b);
            sbx_error_upstream(err, SBX_UP_TOOL, "READ_FAILED", "definition %s: %s", path,
                               strerror(e));
            return -e;
        }
        if (n == 0)
            break;
    }
    char *enc = b64_encode(b.data ? b.data : "", b.len);
    buf_free(&b);
    if (!enc)
        return -ENOMEM;
    *ret = json_pack("{s:s, s:s}", "content", enc, "encoding", "base64");
    free(enc);
    return *ret ? 0 : -ENOMEM;
}

/* A store failure as the tool's error: STORE_UNAVAILABLE (the database is down or slow: retry
 * later), TOO_LARGE, or INTERNAL. */
static int local_store_error(int r, const struct sbx_error *e, struct sbx_error *err)
{
    sbx_error_upstream(err, SBX_UP_TOOL,
                       e->kind == SBX_ERR_UNAVAILABLE ? STORE_UNAVAILABLE
                       : r == -E2BIG                  ? "TOO_LARGE"
                                                      : "INTERNAL",
                       "%s", e->message ? e->message : strerror(-r));
    return r;
}

static int local_runtime_value(struct framework *fw, const char *app, json_t *params, bool set,
                               json_t **ret, struct sbx_error *err)
{
    const char *key = framework_param_string(params, "key", err);
    if (!key)
        return -EINVAL;
    if (!fw->opt.store) {
        sbx_error_upstream(err, SBX_UP_TOOL, "NOT_FOUND", "this sandboxd keeps no runtime values");
        return -ENOENT;
    }
    _cleanup_sbx_error_ struct sbx_error e = {0};
    if (set) {
        json_t *v = json_object_get(params, "value");
        int r = store_run_set(fw->opt.store, app, key, v ? v : json_null(), &e);
        if (r < 0)
            return local_store_error(r, &e, err);
        *ret = json_pack("{s:b}", "ok", 1);
    } else {
        json_t *v = NULL;
        int r = store_run_get(fw->opt.store, app, key, &v, &e);
        if (r < 0 && r != -ENOENT)
            return local_store_error(r, &e, err);
        *ret = json_pack("{s:o?, s:b}", "value", v, "found", v != NULL);
    }
    return *ret ? 0 : -ENOMEM;
}

/* The app a core.state tool works on: always the request's, which params may repeat but not
 * change (a workflow of one app must not read or write another's files and values). */
static const char *local_app(const char *app, struct sbx_error *err)
{
    if (!app || !*app)
        sbx_error_upstream(err, SBX_UP_TOOL, "INVALID_PARAMS",
                           "core.state tools need the request's appId");
    return app && *app ? app : NULL;
}

static int local_call(struct framework *fw, const char *app, const char *tool, json_t *params,
                      json_t **ret, struct sbx_error *err)
{
    if (!json_is_object(params)) {
        sbx_error_upstream(err, SBX_UP_TOOL, "INVALID_PARAMS", "params must be an object");
        return -EINVAL;
    }
    bool definition = strcmp(tool, "core.state.getDefinitionFileContent") == 0;
    bool get = strcmp(tool, "core.state.getRuntimeValue") == 0;
    bool set = strcmp(tool, "core.state.setRuntimeValue") == 0;
    if ((definition || get || set) && !local_app(app, err))
        return -EINVAL;
    if (definition)
        return local_definition(fw, app, params, ret, err);
    if (get || set)
        return local_runtime_value(fw, app, params, set, ret, err);
    if (strcmp(tool, "core.framework.logFrameworkMessage") == 0) {
        const char *level = json_string_value(json_object_get(params, "level"));
        const char *msg = json_string_value(json_object_get(params, "message"));
        enum log_level lvl = LOG_INFO;
        if (level)
            (void)log_level_parse(level, &lvl);
        if (lvl == LOG_OFF)
            lvl = LOG_INFO;
        json_t *fields = json_deep_copy(params);
        json_object_del(fields, "message");
        json_object_del(fields, "level");
        log_pack(lvl, msg ? msg : "", "{s:s, s:o}", "source", "framework", "framework", fields);
        *ret = json_pack("{s:b}", "ok", 1);
        return *ret ? 0 : -ENOMEM;
    }
    if (strcmp(tool, "core.llm.generate") == 0)
        return llm_generate(fw->llm, params, ret, err);
    sbx_error_upstream(err, SBX_UP_TOOL, "UNKNOWN_TOOL", "the local framework has no tool '%s'",
                       tool);
    return -ENOENT;
}

bool framework_endpoint_allowed(const struct framework *fw, const char *endpoint)
{
    static const struct url_allowlist loopback_only = {0};
    return strcmp(endpoint, FRAMEWORK_LOCAL) == 0 ||
           url_allowed(fw->opt.allow ? fw->opt.allow : &loopback_only, endpoint);
}

int framework_call_timeout(struct framework *fw, const char *endpoint, const char *app,
                           const char *tool, json_t *params, int64_t timeout_ms, json_t **ret,
                           struct sbx_error *err, struct framework_stats *stats)
{
    int64_t start = clock_mono_us();
    int r;
    *ret = NULL;
    const char *named = json_string_value(json_object_get(params, "app_id"));
    if (!framework_endpoint_allowed(fw, endpoint)) {
        char *shown = url_redact(endpoint);
        sbx_error_upstream(err, SBX_UP_TRANSPORT, "FRAMEWORK_NOT_ALLOWED",
                           "%s is not an allowed framework endpoint (see --framework-allow)",
                           shown ? shown : "the endpoint");
        free(shown);
        r = -EPERM;
    } else if (json_object_get(params, "app_id") && (!named || !app || strcmp(named, app) != 0)) {
        sbx_error_upstream(err, SBX_UP_TOOL, "APP_MISMATCH",
                           "params.app_id must be this request's appId%s%s%s", app ? " ('" : "",
                           app ? app : "", app ? "')" : "");
        r = -EPERM;
    } else if (strcmp(endpoint, FRAMEWORK_LOCAL) == 0) {
        r = local_call(fw, app, tool, params, ret, err);
    } else {
        struct mcp_simple_options o = {
            .timeout_ms = timeout_ms,
            .max_response = fw->opt.max_response,
        };
        r = mcp_simple_call(endpoint, tool, params, &o, ret, err);
    }
    if (stats) {
        stats->calls++;
        stats->us += clock_mono_us() - start;
    }
    return r;
}

bool framework_not_found(const struct sbx_error *err)
{
    if (err->upstream_status == 404)
        return true;
    if (err->upstream != SBX_UP_TOOL || !err->upstream_code)
        return false;
    return strstr(err->upstream_code, "NOT_FOUND") || strcmp(err->upstream_code, "ENOENT") == 0 ||
           strcmp(err->upstream_code, "404") == 0;
}

int framework_call(struct framework *fw, const char *endpoint, const char *app, const char *tool,
                   json_t *params, json_t **ret, struct sbx_error *err,
                   struct framework_stats *stats)
{
    return framework_call_timeout(fw, endpoint, app, tool, params, fw->opt.timeout_ms, ret, err,
                                  stats);
}

/* ---- asynchronous framework logging -------------------------------------------------------- */

void framework_log(struct framework *fw, const char *endpoint, const char *level,
                   const char *message, json_t *fields)
{
    json_t *params = fields && json_is_object(fields) ? fields : json_object();
    if (fields && params != fields)
        json_decref(fields);
    json_object_set_new(params, "level", json_string(level));
    json_object_set_new(params, "message", json_string(message));
    char *ep = strdup(endpoint);
    pthread_mutex_lock(&fw->log_lock);
    if (!ep || fw->log_len == FRAMEWORK_LOG_QUEUE || thread_group_stopping(&fw->log_thread)) {
        fw->log_dropped++;
        pthread_mutex_unlock(&fw->log_lock);
        free(ep);
        json_decref(params);
        return;
    }
    struct framework_log_msg *m =
        &fw->log_queue[(fw->log_head + fw->log_len) % FRAMEWORK_LOG_QUEUE];
    m->endpoint = ep;
    m->params = params;
    fw->log_len++;
    pthread_cond_signal(&fw->log_cond);
    pthread_mutex_unlock(&fw->log_lock);
}

static void *framework_log_worker(void *arg)
{
    struct framework *fw = arg;
    pthread_mutex_lock(&fw->log_lock);
    for (;;) {
        while (!fw->log_len && thread_group_wait(&fw->log_thread, 0))
            ;
        if (thread_group_stopping(&fw->log_thread))
            break; /* what is left is freed by framework_free() */
        struct framework_log_msg m = fw->log_queue[fw->log_head];
        fw->log_head = (fw->log_head + 1) % FRAMEWORK_LOG_QUEUE;
        fw->log_len--;
        pthread_mutex_unlock(&fw->log_lock);
        json_t *res = NULL;
        struct sbx_error err = {0};
        const char *app = json_string_value(json_object_get(m.params, "appId"));
        int r = framework_call_timeout(fw, m.endpoint, app, "core.framework.logFrameworkMessage",
                                       m.params, 2000, &res, &err, NULL);
        if (r < 0) {
            char *shown = url_redact(m.endpoint);
            log_debug("framework: log message to %s not delivered: %s", shown ? shown : "?",
                      err.message ? err.message : "?");
            free(shown);
        }
        json_decref(res);
        sbx_error_clear(&err);
        free(m.endpoint);
        json_decref(m.params);
        pthread_mutex_lock(&fw->log_lock);
        if (r < 0)
            fw->log_failed++;
        else
            fw->log_sent++;
    }
    pthread_mutex_unlock(&fw->log_lock);
    return NULL;
}

json_t *framework_log_stats(struct framework *fw)
{
    pthread_mutex_lock(&fw->log_lock);
    json_t *o = json_pack("{s:I, s:I, s:I, s:I}", "queued", (json_int_t)fw->log_len, "sent",
                          (json_int_t)fw->log_sent, "failed", (json_int_t)fw->log_failed, "dropped",
                          (json_int_t)fw->log_dropped);
    pthread_mutex_unlock(&fw->log_lock);
    return o;
}
