// SPDX-License-Identifier: MIT
/*
 * head — see head.h.
 *
 * The upstream never sees the client's Host field: a proxy must take the authority of an
 * absolute URI (RFC 9112 3.2.2), and a Host naming another site behind the same address
 * (a CDN) would otherwise carry the request past the allow list. Hop-by-hop fields, the
 * fields the client's Connection names, every Proxy-* field and the fields the operator injects
 * are dropped; "Connection: close" makes each connection carry exactly one request.
 *
 * Methods are an allow list (EGRESS_METHODS), checked on the request line before the parser
 * runs: TRACE (and Microsoft's TRACK) would make an origin echo the request, injected
 * secrets included (RFC 9110 9.3.8: a client must not send credentials in TRACE), and
 * WebDAV's or unknown methods are nothing a sandbox needs. CONNECT is the tunnel, to
 * host:port only; a CONNECT written as a plain request (an absolute URI) is refused too.
 */
#include "egress/head.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/buf.h"
#include "util/macros.h"

struct head_ctx {
    struct egress_head *h;
    const char *url;
    size_t url_len;
    bool in_value;
    bool overflow;
    bool folded; /* a field continued on another line (obs-fold) */
    bool done;
};

static int head_on_url(http_parser *p, const char *at, size_t len)
{
    struct head_ctx *c = p->data;
    if (!c->url)
        c->url = at;
    c->url_len += len; /* the head is one buffer: pieces are adjacent */
    return 0;
}

static int head_on_field(http_parser *p, const char *at, size_t len)
{
    struct head_ctx *c = p->data;
    struct egress_head *h = c->h;
    if (c->in_value || h->n_fields == 0) {
        if (h->n_fields == EGRESS_HEAD_LINES) {
            c->overflow = true;
            return 1;
        }
        h->fields[h->n_fields++] = (struct egress_field){.name = at};
        c->in_value = false;
    }
    struct egress_field *f = &h->fields[h->n_fields - 1];
    if (f->name + f->name_len != at) {
        c->folded = true; /* only adjacent pieces make one name */
        return 1;
    }
    f->name_len += len;
    return 0;
}

static int head_on_value(http_parser *p, const char *at, size_t len)
{
    struct head_ctx *c = p->data;
    struct egress_field *f = &c->h->fields[c->h->n_fields - 1];
    if (!c->in_value) {
        f->value = at;
    } else if (f->value + f->value_len != at) {
        /* A value folded onto the next line (RFC 9112 5.2's obs-fold): the pieces are not
         * adjacent, and forwarding the span between them would pass the line break on. A proxy
         * must reject it or unfold it; this one rejects. */
        c->folded = true;
        return 1;
    }
    f->value_len += len;
    c->in_value = true;
    return 0;
}

static int head_on_complete(http_parser *p)
{
    struct head_ctx *c = p->data;
    c->done = true;
    http_parser_pause(p, 1); /* stop at the end of this request: nothing after it counts */
    return 0;
}

static const http_parser_settings head_settings = {
    .on_url = head_on_url,
    .on_header_field = head_on_field,
    .on_header_value = head_on_value,
    .on_message_complete = head_on_complete,
};

static const http_parser_settings body_settings = {
    .on_message_complete = head_on_complete,
};

/* Run the parser over data; 0 (and whether the message completed) or -EBADMSG. */
static int head_run(http_parser *p, const http_parser_settings *s, struct head_ctx *ctx,
                    const char *data, size_t len, size_t *ret_used)
{
    p->data = ctx;
    size_t n = http_parser_execute(p, s, data, len);
    enum http_errno e = HTTP_PARSER_ERRNO(p);
    if (e == HPE_PAUSED) {
        http_parser_pause(p, 0);
        e = HPE_OK;
    }
    *ret_used = n;
    return e == HPE_OK ? 0 : -EBADMSG;
}

static bool head_field_is(const struct http_parser_url *u, const char *url, int f, const char *what)
{
    return (u->field_set & (1u << f)) && u->field_data[f].len == strlen(what) &&
           strncasecmp(url + u->field_data[f].off, what, u->field_data[f].len) == 0;
}

/* The target of the request line: authority (CONNECT) or absolute http:// URI. */
static int head_target(struct egress_head *h, const char *url, size_t len, const char **ret_why)
{
    struct http_parser_url u;
    http_parser_url_init(&u);
    if (http_parser_parse_url(url, len, h->tunnel, &u) != 0 || !(u.field_set & (1u << UF_HOST))) {
        *ret_why = h->tunnel ? "CONNECT needs host:port"
                   : url[0] == '/'
                       ? "this is a proxy: the request line needs an absolute http:// URI"
                       : "the request line has no valid absolute URI";
        return 400;
    }
    if (!h->tunnel && !head_field_is(&u, url, UF_SCHEMA, "http")) {
        *ret_why = "only http:// URIs are forwarded; https:// goes through CONNECT";
        return 400;
    }
    if (u.field_set & (1u << UF_USERINFO)) {
        *ret_why = "credentials in the URI are not forwarded; send an Authorization header";
        return 400;
    }
    h->port = (u.field_set & (1u << UF_PORT)) ? u.port : 80;
    if (h->port == 0) {
        *ret_why = "the port must be a number from 1 to 65535";
        return 400;
    }
    const char *why =
        egress_host_parse(url + u.field_data[UF_HOST].off, u.field_data[UF_HOST].len, &h->host);
    if (why) {
        *ret_why = why;
        return 400;
    }
    if (h->tunnel)
        return 0;
    size_t start = len, end = len;
    if (u.field_set & (1u << UF_PATH))
        start = u.field_data[UF_PATH].off;
    else if (u.field_set & (1u << UF_QUERY))
        start = u.field_data[UF_QUERY].off - 1; /* the '?' */
    if (u.field_set & (1u << UF_FRAGMENT))
        end = u.field_data[UF_FRAGMENT].off - 1; /* never sent: the '#' and what follows */
    h->path = url + start;
    h->path_len = end > start ? end - start : 0;
    return 0;
}

static const char *const head_methods[] = {"GET",   "HEAD",   "POST",    "PUT",
                                           "PATCH", "DELETE", "OPTIONS", "CONNECT"};

/* The request line's method, before the parser: 405 for a method token that is not on the
 * list, and for a CONNECT whose target is not host:port; 0 otherwise (what is not a method
 * token at all is left to the parser's 400). */
static int head_method_check(const char *buf, size_t len, struct egress_head *ret,
                             const char **ret_why)
{
    size_t n = 0;
    while (n < len && egress_tchar((unsigned char)buf[n]))
        n++;
    if (n == 0 || n == len || buf[n] != ' ')
        return 0;
    bool known = false;
    for (size_t i = 0; i < ARRAY_SIZE(head_methods) && !known; i++)
        known = strlen(head_methods[i]) == n && memcmp(buf, head_methods[i], n) == 0;
    snprintf(ret->method, sizeof(ret->method), "%.*s", (int)(n < 15 ? n : 15), buf);
    if (!known) {
        *ret_why = "the proxy forwards GET, HEAD, POST, PUT, PATCH, DELETE and OPTIONS "
                   "(https:// through CONNECT host:port), nothing else";
        return 405;
    }
    const char *target = buf + n + 1, *end = memchr(target, ' ', len - n - 1);
    if (n == 7 && memcmp(buf, "CONNECT", 7) == 0 && end &&
        memchr(target, '/', (size_t)(end - target))) {
        *ret_why = "CONNECT takes host:port only; a plain http:// request is sent with its "
                   "own method and the absolute URI";
        return 405;
    }
    return 0;
}

int egress_head_parse(http_parser *parser, const char *buf, size_t len, struct egress_head *ret,
                      const char **ret_why)
{
    *ret = (struct egress_head){0};
    int status = head_method_check(buf, len, ret, ret_why);
    if (status)
        return status;
    struct head_ctx ctx = {.h = ret};
    http_parser_init(parser, HTTP_REQUEST);
    size_t used;
    int r = head_run(parser, &head_settings, &ctx, buf, len, &used);
    if (ctx.overflow) {
        *ret_why = "the request has too many header fields";
        return 431;
    }
    if (ctx.folded) {
        *ret_why = "a header field is folded over several lines (obs-fold), which is not accepted";
        return 400;
    }
    if (r < 0 || !ctx.url) {
        *ret_why =
            r < 0 ? http_errno_description(HTTP_PARSER_ERRNO(parser)) : "the request has no target";
        return 400;
    }
    ret->tunnel = parser->method == HTTP_CONNECT;
    if (parser->upgrade && !ret->tunnel) {
        *ret_why = "protocol upgrades are not forwarded (use wss:// or https://, through CONNECT)";
        return 501;
    }
    snprintf(ret->method, sizeof(ret->method), "%s", http_method_str(parser->method));
    ret->minor = parser->http_major == 1 && parser->http_minor == 0 ? 0 : 1;
    ret->body_done = ctx.done;
    return head_target(ret, ctx.url, ctx.url_len, ret_why);
}

int egress_body_feed(http_parser *parser, const char *data, size_t len, size_t *ret_used,
                     bool *ret_done)
{
    struct head_ctx ctx = {0};
    *ret_used = 0;
    *ret_done = false;
    if (len == 0)
        return 0; /* a zero length would tell the parser the stream ended */
    int r = head_run(parser, &body_settings, &ctx, data, len, ret_used);
    *ret_done = ctx.done;
    return r;
}

static bool head_name_is(const struct egress_field *f, const char *name, size_t len)
{
    return f->name_len == len && strncasecmp(f->name, name, len) == 0;
}

/* Is field f named by a token of one of the Connection fields? */
static bool head_connection_names(const struct egress_head *h, const struct egress_field *f)
{
    for (size_t i = 0; i < h->n_fields; i++) {
        if (!head_name_is(&h->fields[i], "connection", 10))
            continue;
        const char *v = h->fields[i].value, *end = v + h->fields[i].value_len;
        while (v < end) {
            while (v < end && (*v == ' ' || *v == '\t' || *v == ','))
                v++;
            const char *t = v;
            while (v < end && *v != ',' && *v != ' ' && *v != '\t')
                v++;
            if (v > t && head_name_is(f, t, (size_t)(v - t)))
                return true;
        }
    }
    return false;
}

static bool head_dropped(const struct egress_head *h, const struct egress_config *cfg,
                         const struct egress_field *f)
{
    static const char *const hop[] = {"host", "connection", "keep-alive", "te", "upgrade"};
    for (size_t i = 0; i < ARRAY_SIZE(hop); i++)
        if (head_name_is(f, hop[i], strlen(hop[i])))
            return true;
    /* Every Proxy-* field is ours (this proxy's credentials, its connection), never the
     * origin's: Proxy-Authorization, Proxy-Connection, and whatever Proxy-Foo comes next. */
    if (f->name_len >= 6 && strncasecmp(f->name, "proxy-", 6) == 0)
        return true;
    for (size_t i = 0; cfg && i < cfg->n_injects; i++)
        if (egress_inject_applies(&cfg->injects[i], &h->host, h->port) &&
            head_name_is(f, cfg->injects[i].line, cfg->injects[i].name_len))
            return true;
    return head_connection_names(h, f);
}

char *egress_head_build(const struct egress_head *h, const struct egress_config *cfg,
                        size_t *ret_len, size_t *ret_injected)
{
    size_t injected = 0;
    struct buf b;
    /* The client's head fits EGRESS_HEAD_MAX; the injected lines are the operator's. */
    buf_init(&b, EGRESS_HEAD_MAX + (size_t)EGRESS_CEILING_MAX * (EGRESS_HEADER_MAX + 2) + 1024);
    bool slash = h->path_len && h->path[0] == '/';
    bool v6 = h->host.family == AF_INET6;
    int r = buf_printf(&b, "%s %s%.*s HTTP/1.%u\r\nHost: %s%s%s", h->method, slash ? "" : "/",
                       (int)h->path_len, h->path ? h->path : "", h->minor, v6 ? "[" : "",
                       h->host.name, v6 ? "]" : "");
    if (r == 0 && h->port != 80)
        r = buf_printf(&b, ":%u", (unsigned)h->port);
    if (r == 0)
        r = buf_appends(&b, "\r\n");
    for (size_t i = 0; r == 0 && i < h->n_fields; i++) {
        const struct egress_field *f = &h->fields[i];
        if (!head_dropped(h, cfg, f))
            r = buf_printf(&b, "%.*s: %.*s\r\n", (int)f->name_len, f->name, (int)f->value_len,
                           f->value ? f->value : "");
    }
    for (size_t i = 0; r == 0 && cfg && i < cfg->n_injects; i++)
        if (egress_inject_applies(&cfg->injects[i], &h->host, h->port)) {
            r = buf_printf(&b, "%s\r\n", cfg->injects[i].line);
            injected += strlen(cfg->injects[i].line) + 2;
        }
    if (r == 0)
        r = buf_appends(&b, "Connection: close\r\n\r\n");
    if (r < 0) {
        buf_free(&b);
        return NULL;
    }
    if (ret_injected)
        *ret_injected = injected;
    return buf_take(&b, ret_len);
}
