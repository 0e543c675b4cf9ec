// SPDX-License-Identifier: MIT
/*
 * response — see response.h.
 */
#include "response/response.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/jdump.h"
#include "util/macros.h"
#include "util/randid.h"
#include "util/utf8.h"

int response_metric(json_t *metrics, const char *name, const char *unit, double value)
{
    /* json_array_append_new fails (and frees nothing to free) when the pack failed. */
    return json_array_append_new(metrics, json_pack("{s:s, s:s, s:f}", "name", name, "unit", unit,
                                                    "value", value)) < 0
               ? -ENOMEM
               : 0;
}

int response_egress_metrics(json_t *metrics, const struct egress_stats *st)
{
    static const char *const dir[] = {"up", "down"};
    const uint64_t bytes[] = {st->bytes_up, st->bytes_down};
    int r = 0;
    for (size_t i = 0; i < ARRAY_SIZE(dir); i++)
        if (json_array_append_new(metrics,
                                  json_pack("{s:s, s:s, s:I, s:{s:s}}", "name", "net.egress_bytes",
                                            "unit", "By", "value", (json_int_t)bytes[i],
                                            "attributes", "direction", dir[i])) < 0)
            r = -ENOMEM;
    return r ?: response_metric(metrics, "net.egress_requests", "1", (double)st->requests)
               ?: response_metric(metrics, "net.egress_denied", "1", (double)st->denied);
}

json_t *response_error(const char *request_id, const char *code, const char *message,
                       json_t *details)
{
    json_t *data = json_pack("{s:s, s:s, s:o}", "code", code, "message", message, "details",
                             details ? details : json_object());
    if (!data)
        return NULL;
    return json_pack("{s:s, s:s, s:o}", "requestId", request_id, "resultType", "error", "data",
                     data);
}

json_t *response_text(const struct buf *b)
{
    /* Output bytes are not necessarily UTF-8; invalid sequences are replaced so the
     * response stays valid JSON. */
    if (!b->len)
        return json_string("");
    json_t *s = json_stringn(b->data, b->len);
    if (s)
        return s;
    size_t len;
    char *clean = utf8_sanitize(b->data, b->len, &len);
    s = clean ? json_stringn_nocheck(clean, len) : NULL;
    free(clean);
    return s ? s : json_string("");
}

json_t *response_capped_string(const char *s, size_t len, size_t max, bool *ret_cut)
{
    if (len <= max)
        return json_stringn_nocheck(s, len);
    char marker[64];
    int m = snprintf(marker, sizeof(marker), RESPONSE_TRUNCATED_MARKER, len);
    size_t mlen = m > 0 ? (size_t)m : 0;
    size_t keep = utf8_cut(s, len, max > mlen ? max - mlen : 0);
    char *text = malloc(keep + mlen + 1);
    if (!text)
        return NULL;
    memcpy(text, s, keep);
    memcpy(text + keep, marker, mlen + 1);
    json_t *r = json_stringn_nocheck(text, keep + mlen);
    free(text);
    if (ret_cut)
        *ret_cut = true;
    return r;
}

/* Depth-first over objects and arrays; the tree comes from a parsed frame, whose depth
 * jansson caps at 2048. */
static bool response_cap_tree(json_t *v, size_t max)
{
    bool cut = false;
    if (json_is_string(v) && json_string_length(v) > max) {
        json_t *c = response_capped_string(json_string_value(v), json_string_length(v), max, &cut);
        if (c)
            json_string_setn_nocheck(v, json_string_value(c), json_string_length(c));
        json_decref(c);
    } else if (json_is_object(v)) {
        const char *k;
        json_t *m;
        json_object_foreach(v, k, m) cut |= response_cap_tree(m, max);
    } else if (json_is_array(v)) {
        size_t i;
        json_t *m;
        json_array_foreach(v, i, m) cut |= response_cap_tree(m, max);
    }
    return cut;
}

bool response_cap_strings(json_t *v, size_t max)
{
    return response_cap_tree(v, max);
}

static json_t *response_limit_error(const char *rid, const struct exec_outcome *o,
                                    const struct response_limits *lim)
{
    const struct verdict *v = &o->verdict;
    char msg[256];
    json_t *d = json_object();
    json_object_set_new(d, "stdout", response_text(&o->out));
    json_object_set_new(d, "stderr", response_text(&o->err));
    switch (v->status) {
    case VERDICT_TIMEOUT:
        if (v->cpu_limit)
            snprintf(msg, sizeof(msg), "execution exceeded its cpu time limit");
        else
            snprintf(msg, sizeof(msg), "execution exceeded the time limit of %lld ms",
                     (long long)lim->timeout_ms);
        json_object_set_new(d, "timeoutMs", json_integer(lim->timeout_ms));
        json_object_set_new(d, "limit", json_string(v->cpu_limit ? "cpu" : "wall"));
        return response_error(rid, "TIMEOUT", msg, d);
    case VERDICT_MEMORY_LIMIT:
        snprintf(msg, sizeof(msg), "execution exceeded the memory limit of %llu MB",
                 (unsigned long long)lim->memory_mb);
        json_object_set_new(d, "memoryMb", json_integer((json_int_t)lim->memory_mb));
        return response_error(rid, "MEMORY_LIMIT", msg, d);
    case VERDICT_OUTPUT_LIMIT:
        snprintf(msg, sizeof(msg), "stdout and stderr exceeded the limit of %llu bytes",
                 (unsigned long long)lim->output_bytes);
        json_object_set_new(d, "limitBytes", json_integer((json_int_t)lim->output_bytes));
        return response_error(rid, "OUTPUT_LIMIT", msg, d);
    case VERDICT_KILLED: {
        const char *abbrev = sigabbrev_np(v->signal);
        snprintf(msg, sizeof(msg), "the sandboxed process was killed by signal %d (SIG%s)",
                 v->signal, abbrev ? abbrev : "?");
        json_object_set_new(d, "signal", json_integer(v->signal));
        return response_error(rid, "KILLED", msg, d);
    }
    case VERDICT_PROTOCOL:
        json_object_set_new(d, "reason", json_string(o->internal ? o->internal : "protocol"));
        return response_error(rid, "INVALID_RESULT",
                              o->internal ? o->internal : "the sandbox broke the result protocol",
                              d);
    case VERDICT_EXITED:
        snprintf(msg, sizeof(msg),
                 "the sandboxed process exited with code %d before returning a result",
                 v->exit_code);
        json_object_set_new(d, "exitCode", json_integer(v->exit_code));
        json_object_set_new(d, "type", json_string("ProcessExit"));
        return response_error(rid, "APPLICATION_ERROR", msg, d);
    default:
        json_decref(d);
        return NULL;
    }
}

static json_t *response_from_final(const char *rid, enum response_kind kind,
                                   const struct exec_outcome *o, const struct response_limits *lim)
{
    json_t *f = o->final;
    const char *type = json_string_value(json_object_get(f, "type"));
    if (type && strcmp(type, "error") == 0) {
        const char *code = json_string_value(json_object_get(f, "code"));
        json_t *message = json_object_get(f, "message");
        json_t *details = json_object_get(f, "details");
        details = json_is_object(details) ? json_deep_copy(details) : json_object();
        /* Messages and tracebacks come from the sandbox: at most the output limit each. */
        bool cut = false;
        json_t *msg = json_is_string(message) ? response_capped_string(json_string_value(message),
                                                                       json_string_length(message),
                                                                       lim->output_bytes, &cut)
                                              : json_string("");
        cut |= response_cap_strings(details, lim->output_bytes);
        if (cut)
            json_object_set_new(details, "truncated", json_true());
        json_object_set_new(details, "stderr", response_text(&o->err));
        if (code && strcmp(code, "MEMORY_LIMIT") == 0)
            json_object_set_new(details, "memoryMb", json_integer((json_int_t)lim->memory_mb));
        if (kind == RESPONSE_EXECUTOR || !json_object_get(details, "stdout"))
            json_object_set_new(details, "stdout", response_text(&o->out));
        json_t *body = response_error(rid, code ? code : "INTERNAL",
                                      msg ? json_string_value(msg) : "", details);
        json_decref(msg);
        return body;
    }
    const char *rtype = json_string_value(json_object_get(f, "resultType"));
    json_t *data = json_object_get(f, "data");
    if (kind == RESPONSE_EXECUTOR) {
        json_t *res = json_object_get(data, "result");
        json_t *d = json_pack("{s:O, s:o, s:o}", "result", res ? res : json_null(), "stdout",
                              response_text(&o->out), "stderr", response_text(&o->err));
        /* "o" with a NULL d fails the pack: the caller's NULL check covers both */
        return json_pack("{s:s, s:s, s:o}", "requestId", rid, "resultType", "generic", "data", d);
    }
    if (!rtype || (strcmp(rtype, "generic") != 0 && strcmp(rtype, "httpResponse") != 0))
        return response_error(rid, "INTERNAL", "the runtime answered with an unknown result type",
                              NULL);
    return json_pack("{s:s, s:s, s:O}", "requestId", rid, "resultType", rtype, "data",
                     data ? data : json_null());
}

json_t *response_build(const char *rid, enum response_kind kind, const struct exec_outcome *o,
                       const struct response_limits *lim, const struct response_metrics *m)
{
    const struct verdict *v = &o->verdict;
    json_t *resp;
    if (v->status == VERDICT_INTERNAL)
        return NULL;
    /* The answer stands unless a limit overrides it: the output limit, or the memory limit
     * when the OOM killer took part of the tree while the program still answered. */
    const char *code = json_string_value(json_object_get(o->final, "code"));
    bool oom_over_answer =
        v->status == VERDICT_MEMORY_LIMIT && !(code && strcmp(code, "MEMORY_LIMIT") == 0);
    if (o->final && v->status != VERDICT_OUTPUT_LIMIT && !oom_over_answer)
        resp = response_from_final(rid, kind, o, lim);
    else
        resp = response_limit_error(rid, o, lim);
    if (!resp)
        return NULL;
    json_t *metrics = json_array();
    int r = metrics ? 0 : -ENOMEM;
    r = r ?: response_metric(metrics, "sandbox.duration", "ms", (double)v->wall_us / 1000.0);
    r = r ?: response_metric(metrics, "sandbox.cpu_time", "ms", (double)v->cpu_us / 1000.0);
    r = r ?: response_metric(metrics, "sandbox.memory_peak", "By", (double)v->memory_peak);
    if (m) {
        r = r
                ?: response_metric(metrics, "sandbox.queue_wait", "ms",
                                   (double)m->queue_wait_us / 1000.0);
        r = r ?: response_metric(metrics, "sandbox.pool_hit", "1", m->pool_hit ? 1 : 0);
        r = r ?: response_metric(metrics, "sandbox.reused", "1", v->reused ? 1 : 0);
        if (v->have_faults)
            r = r ?: response_metric(metrics, "sandbox.minor_faults", "1", (double)v->minor_faults);
        r = r ?: response_metric(metrics, "mcp.calls", "1", m->mcp_calls);
        r = r ?: response_metric(metrics, "mcp.duration", "ms", (double)m->mcp_us / 1000.0);
        if (m->egress)
            r = r ?: response_egress_metrics(metrics, m->egress);
    }
    if (r < 0 || json_object_set_new(resp, "metrics", metrics) < 0) {
        json_decref(resp);
        return NULL; /* out of memory: the caller answers INTERNAL */
    }
    if (json_object_set_new(resp, "verdict", verdict_to_json(v)) < 0 ||
        artifact_set_report(&o->artifacts, &lim->artifacts, resp, false) < 0) {
        json_decref(resp);
        return NULL;
    }
    return resp;
}

const char *const *response_raw_path(enum response_kind kind)
{
    static const char *const jit[] = {"data", NULL};
    static const char *const executor[] = {"data", "result", NULL};
    return kind == RESPONSE_EXECUTOR ? executor : jit;
}

char *response_render(json_t *resp, enum response_kind kind, const struct frame_raw *raw,
                      bool data_only, size_t *ret_len)
{
    const char *rtype = json_string_value(json_object_get(resp, "resultType"));
    json_t *parent = kind == RESPONSE_EXECUTOR ? json_object_get(resp, "data") : resp;
    const char *key = kind == RESPONSE_EXECUTOR ? "result" : "data";
    bool splice = raw && raw->text && rtype && strcmp(rtype, "error") != 0 &&
                  json_is_null(json_object_get(parent, key));
    json_t *root = data_only ? json_object_get(resp, "data") : resp;
    if (splice && root == json_object_get(parent, key)) {
        /* The value is all there is to show. */
        char *text = strndup(frame_raw_data(raw), raw->len);
        if (text && ret_len)
            *ret_len = raw->len;
        return text;
    }
    if (!splice)
        return jdump(root, JSON_COMPACT, ret_len);
    /* Put a marker the sandbox cannot guess where the value goes, dump the small rest, and
     * replace the marker by the value's text: the value is copied once and never parsed. */
    char marker[64] = "sandboxd-raw-";
    if (randid_hex(marker + 13, sizeof(marker) - 13, 16) < 0)
        return NULL;
    json_object_set_new(parent, key, json_string(marker));
    size_t olen = 0;
    char *outer = jdump(root, JSON_COMPACT, &olen);
    json_object_set_new(parent, key, json_null());
    char quoted[70];
    snprintf(quoted, sizeof(quoted), "\"%s\"", marker);
    char *at = outer ? strstr(outer, quoted) : NULL;
    if (!at) {
        free(outer);
        return NULL;
    }
    size_t head = (size_t)(at - outer), qlen = strlen(quoted);
    size_t total = olen - qlen + raw->len;
    char *text = malloc(total + 1);
    if (text) {
        memcpy(text, outer, head);
        memcpy(text + head, frame_raw_data(raw), raw->len);
        memcpy(text + head + raw->len, at + qlen, olen - head - qlen);
        text[total] = '\0';
        if (ret_len)
            *ret_len = total;
    }
    free(outer);
    return text;
}
