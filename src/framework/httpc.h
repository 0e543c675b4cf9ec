// SPDX-License-Identifier: MIT
/*
 * httpc — one JSON POST over libcurl with the limits every outbound call of
 * sandboxd needs: total and connect timeouts, http/https only, no
 * redirects, a cap on the answer. DNS answers are shared process-wide (a curl
 * share with locks); connections are not (libcurl cannot share them between
 * threads safely). Used by the simple MCP form and the LLM client.
 */
#ifndef SANDBOXD_FRAMEWORK_HTTPC_H
#define SANDBOXD_FRAMEWORK_HTTPC_H

#include <curl/curl.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

struct httpc_options {
    int64_t timeout_ms;
    int64_t connect_timeout_ms; /* 0: 5 s */
    size_t max_response;
    const char *const *headers; /* extra "Name: value" lines, NULL-terminated, may be NULL */
};

enum httpc_status {
    HTTPC_OK,
    HTTPC_TIMEOUT,
    HTTPC_TRANSPORT,
    HTTPC_TOO_LARGE,
};

struct httpc_result {
    enum httpc_status status;
    long http_status;
    struct buf body; /* caller frees with httpc_result_done */
    char *error;     /* transport error text */
    /* HTTPC_TIMEOUT: the limit that fired, and whether it was the connect timeout (the
     * connection, TLS handshake included, was not up yet) or the total one. */
    int64_t timeout_ms;
    bool connect_timeout;
};

int httpc_global_init(void);
void httpc_global_done(void);
/* The share to attach to other easy handles of ours (NULL before init). */
CURLSH *httpc_share(void);
/* POST body (JSON text) to url. Always fills *ret; returns 0 when an HTTP answer arrived. */
int httpc_post_json(const char *url, const char *body, const struct httpc_options *opt,
                    struct httpc_result *ret);
void httpc_result_done(struct httpc_result *r);

#endif
