// SPDX-License-Identifier: MIT
/*
 * httpc — see httpc.h.
 */
#include "framework/httpc.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/macros.h"

/* Process-wide on purpose: a cache is only useful when shared. Only DNS is shared: libcurl's
 * shared connection cache is not safe with concurrent users on several threads (curl issues
 * #4915 and #9404: "shared connections between threads has never worked"), so each call
 * makes its own connection; on loopback that is a few tens of microseconds. */
static CURLSH *httpc_shared;
static pthread_mutex_t httpc_locks[CURL_LOCK_DATA_LAST];

static void httpc_lock(CURL *h, curl_lock_data data, curl_lock_access access, void *u)
{
    pthread_mutex_lock(&httpc_locks[data]);
}

static void httpc_unlock(CURL *h, curl_lock_data data, void *u)
{
    pthread_mutex_unlock(&httpc_locks[data]);
}

int httpc_global_init(void)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return -EIO;
    for (size_t i = 0; i < ARRAY_SIZE(httpc_locks); i++)
        pthread_mutex_init(&httpc_locks[i], NULL);
    httpc_shared = curl_share_init();
    if (!httpc_shared)
        return -ENOMEM;
    curl_share_setopt(httpc_shared, CURLSHOPT_LOCKFUNC, httpc_lock);
    curl_share_setopt(httpc_shared, CURLSHOPT_UNLOCKFUNC, httpc_unlock);
    curl_share_setopt(httpc_shared, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    return 0;
}

void httpc_global_done(void)
{
    if (httpc_shared)
        curl_share_cleanup(httpc_shared);
    httpc_shared = NULL;
    curl_global_cleanup();
}

CURLSH *httpc_share(void)
{
    return httpc_shared;
}

struct httpc_sink {
    struct buf *body;
    bool overflow;
};

static size_t httpc_write(char *data, size_t size, size_t nmemb, void *userdata)
{
    struct httpc_sink *sink = userdata;
    size_t n = size * nmemb;
    if (buf_append(sink->body, data, n) < 0) {
        sink->overflow = true;
        return 0; /* curl aborts with CURLE_WRITE_ERROR */
    }
    return n;
}

void httpc_result_done(struct httpc_result *r)
{
    buf_free(&r->body);
    free(r->error);
    r->error = NULL;
}

int httpc_post_json(const char *url, const char *body, const struct httpc_options *opt,
                    struct httpc_result *ret)
{
    *ret = (struct httpc_result){0};
    buf_init(&ret->body, opt->max_response);
    CURL *h = curl_easy_init();
    if (!h) {
        ret->status = HTTPC_TRANSPORT;
        ret->error = strdup("cannot create an HTTP handle");
        return -ENOMEM;
    }
    struct httpc_sink sink = {.body = &ret->body};
    struct curl_slist *headers = NULL;
    headers = curl_slist_append(headers, "Content-Type: application/json");
    headers = curl_slist_append(headers, "Accept: application/json");
    for (const char *const *hp = opt->headers; hp && *hp; hp++)
        headers = curl_slist_append(headers, *hp);
    curl_easy_setopt(h, CURLOPT_URL, url);
    if (httpc_shared)
        curl_easy_setopt(h, CURLOPT_SHARE, httpc_shared);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    int64_t connect_ms = opt->connect_timeout_ms ? opt->connect_timeout_ms : 5000;
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)opt->timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)connect_ms);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, httpc_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "sandboxd/" SANDBOXD_VERSION);
    CURLcode cr = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &ret->http_status);
    int r = 0;
    if (sink.overflow) {
        ret->status = HTTPC_TOO_LARGE;
        r = -EMSGSIZE;
    } else if (cr == CURLE_OPERATION_TIMEDOUT) {
        ret->status = HTTPC_TIMEOUT;
        r = -ETIMEDOUT;
        /* Which limit fired: curl's connect timeout covers the TLS handshake too, so a
         * connection counts as up once the handshake is done (https) or TCP is (http). */
        curl_off_t tcp_us = 0, tls_us = 0;
        char *scheme = NULL;
        curl_easy_getinfo(h, CURLINFO_CONNECT_TIME_T, &tcp_us);
        curl_easy_getinfo(h, CURLINFO_APPCONNECT_TIME_T, &tls_us);
        curl_easy_getinfo(h, CURLINFO_SCHEME, &scheme);
        bool tls = scheme && strcasecmp(scheme, "https") == 0;
        bool up = tcp_us > 0 && (!tls || tls_us > 0);
        ret->connect_timeout = !up && connect_ms < opt->timeout_ms;
        ret->timeout_ms = ret->connect_timeout ? connect_ms : opt->timeout_ms;
    } else if (cr != CURLE_OK) {
        ret->status = HTTPC_TRANSPORT;
        ret->error = strdup(curl_easy_strerror(cr));
        r = -ECONNREFUSED;
    }
    curl_slist_free_all(headers);
    curl_easy_cleanup(h);
    return r;
}
