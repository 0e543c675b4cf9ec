// SPDX-License-Identifier: MIT
/*
 * url — see url.h.
 */
#include "util/url.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/macros.h"

struct url_prefix {
    char *scheme; /* "http" or "https" */
    char *host;   /* lower case, no brackets, no trailing dot */
    long port;    /* explicit or the scheme's default */
    char *path;   /* percent-decoded, "/" at least */
};

/* The parts of an http(s) URL; everything owned. */
struct url_parts {
    char *scheme, *host, *path;
    long port;
    bool extra; /* userinfo, query or fragment present */
};

static void url_parts_done(struct url_parts *p)
{
    free(p->scheme);
    free(p->host);
    free(p->path);
    *p = (struct url_parts){0};
}

/* "[::1]" -> "::1", "LocalHost." -> "localhost"; in place. */
static void url_host_normalize(char *host)
{
    size_t n = strlen(host);
    if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
        memmove(host, host + 1, n - 2);
        host[n - 2] = '\0';
        n -= 2;
    }
    if (n > 1 && host[n - 1] == '.')
        host[--n] = '\0';
    for (char *c = host; *c; c++)
        *c = (char)tolower((unsigned char)*c);
}

static int url_parse(const char *s, struct url_parts *ret, const char **ret_why)
{
    *ret = (struct url_parts){0};
    if (strlen(s) > URL_MAX_LEN) {
        *ret_why = "is too long";
        return -EINVAL;
    }
    CURLU *u = curl_url();
    if (!u)
        return -ENOMEM;
    int r = -EINVAL;
    char *port = NULL, *extra = NULL;
    if (curl_url_set(u, CURLUPART_URL, s, 0) != CURLUE_OK) {
        *ret_why = "is not a URL";
        goto out;
    }
    if (curl_url_get(u, CURLUPART_SCHEME, &ret->scheme, 0) != CURLUE_OK ||
        (strcmp(ret->scheme, "http") != 0 && strcmp(ret->scheme, "https") != 0)) {
        *ret_why = "must be an http:// or https:// URL";
        goto out;
    }
    /* A path that does not decode (an encoded NUL) is refused rather than compared raw. */
    if (curl_url_get(u, CURLUPART_HOST, &ret->host, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PATH, &ret->path, CURLU_URLDECODE) != CURLUE_OK) {
        *ret_why = "has no usable host, port or path";
        goto out;
    }
    url_host_normalize(ret->host);
    ret->port = strtol(port, NULL, 10);
    static const CURLUPart extras[] = {CURLUPART_USER, CURLUPART_PASSWORD, CURLUPART_QUERY,
                                       CURLUPART_FRAGMENT};
    for (size_t i = 0; i < ARRAY_SIZE(extras) && !ret->extra; i++) {
        if (curl_url_get(u, extras[i], &extra, 0) == CURLUE_OK)
            ret->extra = true;
        curl_free(extra);
        extra = NULL;
    }
    r = 0;
out:
    curl_free(port);
    curl_url_cleanup(u);
    if (r < 0)
        url_parts_done(ret);
    return r;
}

bool url_host_is_loopback(const char *host)
{
    char buf[256];
    size_t n = strlen(host);
    if (n == 0 || n >= sizeof(buf))
        return false;
    memcpy(buf, host, n + 1);
    url_host_normalize(buf);
    if (strcmp(buf, "localhost") == 0)
        return true;
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, buf, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, buf, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6) || (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127);
    return false;
}

int url_allowlist_add(struct url_allowlist *l, const char *prefix, const char **ret_why)
{
    struct url_parts p;
    int r = url_parse(prefix, &p, ret_why);
    if (r < 0)
        return r;
    if (p.extra) {
        url_parts_done(&p);
        *ret_why = "must be scheme://host[:port][/path], without user, query or fragment";
        return -EINVAL;
    }
    struct url_prefix *v = realloc(l->v, (l->n + 1) * sizeof(*v));
    if (!v) {
        url_parts_done(&p);
        return -ENOMEM;
    }
    l->v = v;
    v[l->n++] =
        (struct url_prefix){.scheme = p.scheme, .host = p.host, .port = p.port, .path = p.path};
    return 0;
}

void url_allowlist_done(struct url_allowlist *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].scheme);
        free(l->v[i].host);
        free(l->v[i].path);
    }
    free(l->v);
    *l = (struct url_allowlist){0};
}

/* A "." or ".." segment in a decoded path: "/a/%2e%2e/b" is "/a/../b" to many servers. */
static bool url_has_dot_segment(const char *path)
{
    for (const char *seg = path; seg; seg = strchr(seg, '/')) {
        seg++;
        size_t n = strcspn(seg, "/");
        if ((n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
            return true;
    }
    return false;
}

static bool url_under(const struct url_prefix *pre, const struct url_parts *u)
{
    if (strcmp(pre->scheme, u->scheme) != 0 || strcmp(pre->host, u->host) != 0 ||
        pre->port != u->port)
        return false;
    size_t n = strlen(pre->path);
    if (n <= 1)
        return true; /* "/" (or none): the whole origin */
    if (url_has_dot_segment(u->path) || strncmp(u->path, pre->path, n) != 0)
        return false;
    return pre->path[n - 1] == '/' || u->path[n] == '\0' || u->path[n] == '/';
}

bool url_allowed(const struct url_allowlist *l, const char *url)
{
    struct url_parts u;
    const char *why;
    if (url_parse(url, &u, &why) < 0)
        return false;
    bool ok = false;
    if (l->n == 0)
        ok = url_host_is_loopback(u.host);
    for (size_t i = 0; i < l->n && !ok; i++)
        ok = url_under(&l->v[i], &u);
    url_parts_done(&u);
    return ok;
}

char *url_redact(const char *url)
{
    size_t len = strcspn(url, "?#"); /* query and fragment go */
    const char *sep = strstr(url, "://");
    const char *auth = sep && sep < url + len ? sep + 3 : url;
    size_t alen = strcspn(auth, "/?#");
    const char *host = auth;
    for (const char *c = auth; c < auth + alen; c++)
        if (*c == '@')
            host = c + 1; /* userinfo goes: the last '@' of the authority ends it */
    size_t head = (size_t)(auth - url), tail = len - (size_t)(host - url);
    char *out = malloc(head + tail + 1);
    if (!out)
        return NULL;
    memcpy(out, url, head);
    memcpy(out + head, host, tail);
    out[head + tail] = '\0';
    return out;
}
