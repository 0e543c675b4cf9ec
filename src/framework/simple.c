// SPDX-License-Identifier: MIT
/*
 * simple — see simple.h.
 */
#include "framework/simple.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "framework/httpc.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/fmt.h"
#include "util/jdump.h"
#include "util/url.h"

/* Interpret the body of a 2xx answer. */
static int simple_parse(const struct buf *body, json_t **ret, struct sbx_error *err)
{
    json_error_t jerr;
    json_t *doc = json_loadb(body->data ? body->data : "", body->len, JSON_ALLOW_NUL, &jerr);
    if (!doc || !json_is_object(doc)) {
        json_decref(doc);
        sbx_error_upstream(err, SBX_UP_PROTOCOL, NULL, "the endpoint did not answer a JSON object");
        return -EPROTO;
    }
    json_t *e = json_object_get(doc, "error");
    if (e && !json_is_null(e)) {
        const char *code = json_string_value(json_object_get(e, "code"));
        const char *msg = json_string_value(json_object_get(e, "message"));
        if (!msg && json_is_string(e))
            msg = json_string_value(e);
        sbx_error_upstream(err, SBX_UP_TOOL, code, "%s", msg ? msg : "the tool reported an error");
        json_decref(doc);
        return -EPROTO;
    }
    json_t *result = json_object_get(doc, "result");
    if (!result) {
        json_decref(doc);
        sbx_error_upstream(err, SBX_UP_PROTOCOL, NULL, "the answer has neither result nor error");
        return -EPROTO;
    }
    *ret = json_incref(result);
    json_decref(doc);
    return 0;
}

int mcp_simple_call(const char *endpoint, const char *tool, json_t *params,
                    const struct mcp_simple_options *opt, json_t **ret_result,
                    struct sbx_error *err)
{
    *ret_result = NULL;
    json_t *req = json_pack("{s:s, s:o}", "tool", tool, "params",
                            params ? json_incref(params) : json_object());
    char *payload = req ? jdump(req, JSON_COMPACT, NULL) : NULL;
    json_decref(req);
    if (!payload) {
        sbx_error_upstream(err, SBX_UP_PROTOCOL, NULL, "cannot encode the request");
        return -ENOMEM;
    }
    struct httpc_options ho = {
        .timeout_ms = opt->timeout_ms,
        .connect_timeout_ms = opt->connect_timeout_ms,
        .max_response = opt->max_response,
    };
    struct httpc_result res;
    int r = httpc_post_json(endpoint, payload, &ho, &res);
    free(payload);
    /* The endpoint may carry credentials (userinfo, a query): messages name it without. */
    _cleanup_free_ char *shown = url_redact(endpoint);
    if (!shown) {
        httpc_result_done(&res);
        sbx_error_upstream(err, SBX_UP_PROTOCOL, NULL, "out of memory");
        return -ENOMEM;
    }
    if (r < 0) {
        switch (res.status) {
        case HTTPC_TOO_LARGE:
            sbx_error_upstream(err, SBX_UP_PROTOCOL, NULL,
                               "the answer exceeds the limit of %zu bytes", opt->max_response);
            break;
        case HTTPC_TIMEOUT:
            if (res.connect_timeout)
                sbx_error_upstream(err, SBX_UP_TIMEOUT, NULL,
                                   "no connection to %s within the connect timeout of %lld ms "
                                   "(TLS handshake included)",
                                   shown, (long long)res.timeout_ms);
            else
                sbx_error_upstream(err, SBX_UP_TIMEOUT, NULL, "no answer from %s within %lld ms",
                                   shown, (long long)res.timeout_ms);
            break;
        default:
            sbx_error_upstream(err, SBX_UP_TRANSPORT, NULL, "cannot reach %s: %s", shown,
                               res.error ? res.error : "transport error");
        }
    } else if (res.http_status < 200 || res.http_status > 299) {
        /* Keep the tool's own error when the endpoint sent one along with the status. */
        json_t *ignored = NULL;
        struct sbx_error inner = {0};
        if (simple_parse(&res.body, &ignored, &inner) < 0 && inner.upstream == SBX_UP_TOOL) {
            sbx_error_upstream(err, SBX_UP_TOOL, inner.upstream_code, "%s",
                               inner.message ? inner.message : "");
        } else {
            size_t n = res.body.len < 200 ? res.body.len : 200;
            sbx_error_upstream(err, SBX_UP_HTTP, NULL, "%s answered HTTP %ld: %.*s", shown,
                               res.http_status, (int)n, res.body.data ? res.body.data : "");
        }
        json_decref(ignored);
        sbx_error_clear(&inner);
        err->upstream_status = res.http_status;
        r = -EPROTO;
    } else {
        r = simple_parse(&res.body, ret_result, err);
        if (r < 0)
            err->upstream_status = res.http_status;
    }
    httpc_result_done(&res);
    return r;
}
