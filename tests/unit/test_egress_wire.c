// SPDX-License-Identifier: MIT
/* Unit tests: egress/sni (the server name in a TLS ClientHello, read incrementally and
 * strictly) and egress/head (proxy requests: parsing, the head sent upstream, body ends). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "egress/head.h"
#include "egress/sni.h"

/* ---- ClientHellos built by hand ---------------------------------------------------------- */

enum hello_variant { H_PLAIN, H_NO_SNI, H_TWO_EXTS, H_TWO_NAMES, H_EMPTY_NAME };

static size_t put16(uint8_t *p, size_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
    return 2;
}

static size_t put_sni(uint8_t *p, const char *name, bool twice)
{
    size_t n = strlen(name), k = 0, one = 3 + n;
    k += put16(p + k, 0); /* server_name */
    k += put16(p + k, 2 + one * (twice ? 2 : 1));
    k += put16(p + k, one * (twice ? 2 : 1));
    for (int i = 0; i < (twice ? 2 : 1); i++) {
        p[k++] = 0; /* host_name */
        k += put16(p + k, n);
        memcpy(p + k, name, n);
        k += n;
    }
    return k;
}

/* The handshake message (type 1, 24-bit length, body) into msg; its length. */
static size_t hello_message(uint8_t *msg, const char *sni, enum hello_variant v)
{
    uint8_t *b = msg + 4;
    size_t k = 0;
    k += put16(b + k, 0x0303);
    memset(b + k, 0x42, 32);
    k += 32;
    b[k++] = 32;
    memset(b + k, 0x17, 32);
    k += 32;
    k += put16(b + k, 4);
    k += put16(b + k, 0x1301);
    k += put16(b + k, 0x1302);
    b[k++] = 1;
    b[k++] = 0;
    size_t ext_len_at = k;
    k += 2;
    size_t ext_start = k;
    k += put16(b + k, 0x000a); /* supported_groups */
    k += put16(b + k, 4);
    k += put16(b + k, 2);
    k += put16(b + k, 0x001d);
    if (v != H_NO_SNI)
        k += put_sni(b + k, v == H_EMPTY_NAME ? "" : sni, v == H_TWO_NAMES);
    if (v == H_TWO_EXTS)
        k += put_sni(b + k, "other.example", false);
    k += put16(b + k, 0x002b); /* supported_versions */
    k += put16(b + k, 3);
    b[k++] = 2;
    k += put16(b + k, 0x0304);
    put16(b + ext_len_at, k - ext_start);
    msg[0] = 1;
    msg[1] = (uint8_t)(k >> 16);
    msg[2] = (uint8_t)(k >> 8);
    msg[3] = (uint8_t)k;
    return k + 4;
}

/* The message cut into TLS records of at most `chunk` bytes (the first of `first` if not 0). */
static size_t records(uint8_t *out, const uint8_t *msg, size_t len, size_t first, size_t chunk)
{
    size_t o = 0;
    for (size_t at = 0; at < len;) {
        size_t n = at == 0 && first ? first : chunk;
        if (n > len - at)
            n = len - at;
        out[o++] = 0x16;
        out[o++] = 3;
        out[o++] = 1;
        o += put16(out + o, n);
        memcpy(out + o, msg + at, n);
        o += n;
        at += n;
    }
    return o;
}

static size_t hello(uint8_t *out, const char *sni, enum hello_variant v)
{
    uint8_t msg[4096];
    size_t n = hello_message(msg, sni, v);
    return records(out, msg, n, 0, 16384);
}

static void sni_found_in_one_record(void **state)
{
    uint8_t buf[4096];
    char name[256];
    size_t used = 0;
    size_t n = hello(buf, "api.example.com", H_PLAIN);
    assert_int_equal(egress_sni_parse(buf, n, name, sizeof(name), &used), EGRESS_SNI_FOUND);
    assert_string_equal(name, "api.example.com");
    assert_int_equal(used, n);
    /* every prefix asks for more, never guesses */
    for (size_t k = 0; k < n; k++)
        assert_int_equal(egress_sni_parse(buf, k, name, sizeof(name), NULL), EGRESS_SNI_MORE);
    /* bytes after the hello (0-RTT data) do not matter */
    memcpy(buf + n, "\x17\x03\x03\x00\x01x", 6);
    assert_int_equal(egress_sni_parse(buf, n + 6, name, sizeof(name), &used), EGRESS_SNI_FOUND);
    assert_int_equal(used, n);
}

static void sni_across_records(void **state)
{
    uint8_t msg[4096], buf[8192];
    char name[256];
    size_t m = hello_message(msg, "split.example", H_PLAIN);
    size_t n = records(buf, msg, m, 0, 50);
    assert_int_equal(egress_sni_parse(buf, n, name, sizeof(name), NULL), EGRESS_SNI_FOUND);
    assert_string_equal(name, "split.example");
    /* a first record shorter than the handshake header */
    n = records(buf, msg, m, 2, 100);
    for (size_t k = 0; k < n; k++)
        assert_int_equal(egress_sni_parse(buf, k, name, sizeof(name), NULL), EGRESS_SNI_MORE);
    assert_int_equal(egress_sni_parse(buf, n, name, sizeof(name), NULL), EGRESS_SNI_FOUND);
    /* more than 8 records is not what a client sends */
    n = records(buf, msg, m, 0, 10);
    assert_int_equal(egress_sni_parse(buf, n, name, sizeof(name), NULL), -EMSGSIZE);
}

static void sni_absent_or_malformed(void **state)
{
    uint8_t buf[4096];
    char name[256];
    size_t n = hello(buf, NULL, H_NO_SNI);
    assert_int_equal(egress_sni_parse(buf, n, name, sizeof(name), NULL), EGRESS_SNI_NONE);
    n = hello(buf, "a.example", H_TWO_EXTS);
    assert_int_equal(egress_sni_parse(buf, n, name, sizeof(name), NULL), -EBADMSG);
    n = hello(buf, "a.example", H_TWO_NAMES);
    assert_int_equal(egress_sni_parse(buf, n, name, sizeof(name), NULL), -EBADMSG);
    n = hello(buf, "a.example", H_EMPTY_NAME);
    assert_int_equal(egress_sni_parse(buf, n, name, sizeof(name), NULL), -EBADMSG);
    n = hello(buf, "a\0b", H_PLAIN);
    const char http[] = "GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n";
    assert_int_equal(
        egress_sni_parse((const uint8_t *)http, sizeof(http) - 1, name, sizeof(name), NULL),
        -EBADMSG);
    /* application data, a ServerHello, a record claiming more than TLS allows */
    n = hello(buf, "a.example", H_PLAIN);
    buf[0] = 0x17;
    assert_int_equal(egress_sni_parse(buf, n, name, sizeof(name), NULL), -EBADMSG);
    n = hello(buf, "a.example", H_PLAIN);
    buf[5] = 2;
    assert_int_equal(egress_sni_parse(buf, n, name, sizeof(name), NULL), -EBADMSG);
    n = hello(buf, "a.example", H_PLAIN);
    put16(buf + 3, 16385);
    assert_int_equal(egress_sni_parse(buf, n, name, sizeof(name), NULL), -EBADMSG);
    /* a handshake message longer than the proxy reads */
    n = hello(buf, "a.example", H_PLAIN);
    buf[6] = 0x10;
    assert_int_equal(egress_sni_parse(buf, n, name, sizeof(name), NULL), -EMSGSIZE);
    /* an extension block whose length lies */
    uint8_t msg[4096];
    size_t m = hello_message(msg, "a.example", H_PLAIN);
    msg[4 + 2 + 32 + 1 + 32 + 2 + 4 + 2 + 1] ^= 0x01;
    n = records(buf, msg, m, 0, 16384);
    assert_int_equal(egress_sni_parse(buf, n, name, sizeof(name), NULL), -EBADMSG);
    /* a name too long for the caller's buffer */
    char longname[300];
    memset(longname, 'a', 299);
    longname[299] = '\0';
    n = hello(buf, longname, H_PLAIN);
    assert_int_equal(egress_sni_parse(buf, n, name, sizeof(name), NULL), -EBADMSG);
}

/* ---- proxy requests ------------------------------------------------------------------------- */

static int parse(http_parser *p, const char *text, struct egress_head *h, const char **why)
{
    *why = NULL;
    return egress_head_parse(p, text, strlen(text), h, why);
}

static char *built_hidden(const struct egress_head *h, const struct egress_config *cfg,
                          size_t *ret_hidden)
{
    size_t len;
    char *s = egress_head_build(h, cfg, &len, ret_hidden);
    assert_non_null(s);
    assert_int_equal(strlen(s), len);
    return s;
}

static char *built(const struct egress_head *h, const struct egress_config *cfg)
{
    return built_hidden(h, cfg, NULL);
}

static void head_absolute_get_is_rebuilt(void **state)
{
    http_parser p;
    struct egress_head h;
    const char *why;
    const char req[] = "GET http://API.example.com:8080/v1/x?q=1#frag HTTP/1.1\r\n"
                       "Host: evil.example\r\n"
                       "Accept: */*\r\n"
                       "Proxy-Authorization: Basic eA==\r\n"
                       "Proxy-Connection: keep-alive\r\n"
                       "Proxy-Foo: bar\r\n"
                       "PROXY-Status: x\r\n"
                       "Connection: keep-alive, X-Hop\r\n"
                       "X-Hop: 1\r\n"
                       "Authorization: mine\r\n"
                       "\r\n";
    assert_int_equal(parse(&p, req, &h, &why), 0);
    assert_false(h.tunnel);
    assert_string_equal(h.method, "GET");
    assert_string_equal(h.host.name, "api.example.com");
    assert_int_equal(h.port, 8080);
    assert_true(h.body_done);
    static const char *const allow[] = {"api.example.com:8080", NULL};
    static const char *const headers[] = {
        "api.example.com:8080=Authorization: Bearer from-operator",
        "api.example.com=X-For-Port-80: only", "other.example:8080=X-Other: no", NULL};
    struct egress_config cfg;
    char *cwhy = NULL;
    assert_int_equal(egress_config_init(&cfg, allow, NULL, headers, &cwhy), 0);
    size_t hidden = 0;
    char *out = built_hidden(&h, &cfg, &hidden);
    /* every Proxy-* field dropped; the headers of this host and port only */
    assert_string_equal(out, "GET /v1/x?q=1 HTTP/1.1\r\n"
                             "Host: api.example.com:8080\r\n"
                             "Accept: */*\r\n"
                             "Authorization: Bearer from-operator\r\n"
                             "Connection: close\r\n\r\n");
    assert_int_equal(hidden, strlen("Authorization: Bearer from-operator\r\n"));
    free(out);
    /* the same host on port 80 gets the header written without a port, and keeps the
     * client's Authorization: the operator's is not for it */
    assert_int_equal(parse(&p,
                           "GET http://api.example.com/ HTTP/1.1\r\nAuthorization: mine\r\n"
                           "X-For-Port-80: client\r\n\r\n",
                           &h, &why),
                     0);
    out = built_hidden(&h, &cfg, &hidden);
    assert_string_equal(out, "GET / HTTP/1.1\r\nHost: api.example.com\r\n"
                             "Authorization: mine\r\nX-For-Port-80: only\r\n"
                             "Connection: close\r\n\r\n");
    assert_int_equal(hidden, strlen("X-For-Port-80: only\r\n"));
    free(out);
    /* and on a third port, nothing of the operator's */
    assert_int_equal(parse(&p, "GET http://api.example.com:9/ HTTP/1.1\r\n\r\n", &h, &why), 0);
    out = built_hidden(&h, &cfg, &hidden);
    assert_string_equal(out, "GET / HTTP/1.1\r\nHost: api.example.com:9\r\n"
                             "Connection: close\r\n\r\n");
    assert_int_equal(hidden, 0);
    free(out);
    egress_config_done(&cfg);
    /* no path, a query only, HTTP/1.0, an IPv6 literal, port 80 */
    assert_int_equal(parse(&p, "HEAD http://[::1]?a HTTP/1.0\r\n\r\n", &h, &why), 0);
    out = built(&h, NULL);
    assert_string_equal(out, "HEAD /?a HTTP/1.0\r\nHost: [::1]\r\nConnection: close\r\n\r\n");
    free(out);
    assert_int_equal(parse(&p, "GET http://example.com HTTP/1.1\r\n\r\n", &h, &why), 0);
    out = built(&h, NULL);
    assert_string_equal(out, "GET / HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n");
    free(out);
}

static void head_connect(void **state)
{
    http_parser p;
    struct egress_head h;
    const char *why;
    assert_int_equal(
        parse(&p, "CONNECT Files.PyPI.org:443 HTTP/1.1\r\nHost: files.pypi.org:443\r\n\r\n", &h,
              &why),
        0);
    assert_true(h.tunnel);
    assert_string_equal(h.host.name, "files.pypi.org");
    assert_int_equal(h.port, 443);
    assert_int_equal(parse(&p, "CONNECT [fd00::1]:8443 HTTP/1.1\r\n\r\n", &h, &why), 0);
    assert_int_equal(h.host.family, AF_INET6);
    assert_int_equal(h.port, 8443);
    assert_int_equal(parse(&p, "CONNECT 2130706433:443 HTTP/1.1\r\n\r\n", &h, &why), 0);
    assert_string_equal(h.host.name, "127.0.0.1");
    assert_int_equal(parse(&p, "CONNECT example.com HTTP/1.1\r\n\r\n", &h, &why), 400);
}

static void head_methods_are_a_list(void **state)
{
    http_parser p;
    struct egress_head h;
    const char *why;
    static const char *const ok[] = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        char req[128];
        snprintf(req, sizeof(req), "%s http://example.com/ HTTP/1.1\r\n\r\n", ok[i]);
        if (parse(&p, req, &h, &why) != 0)
            fail_msg("%s refused: %s", ok[i], why);
        assert_string_equal(h.method, ok[i]);
    }
    /* TRACE echoes the request (injected secrets too); TRACK is its twin; the rest nobody needs */
    static const char *const refused[] = {
        "TRACE http://example.com/ HTTP/1.1\r\n\r\n",
        "TRACK http://example.com/ HTTP/1.1\r\n\r\n",
        "trace http://example.com/ HTTP/1.1\r\n\r\n",
        "PROPFIND http://example.com/ HTTP/1.1\r\n\r\n",
        "BREW http://example.com/ HTTP/1.1\r\n\r\n",
        "CONNECT http://example.com:80/ HTTP/1.1\r\n\r\n",
        "CONNECT /x HTTP/1.1\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        int status = parse(&p, refused[i], &h, &why);
        if (status != 405)
            fail_msg("%s: %d, not 405", refused[i], status);
        assert_non_null(why);
        assert_true(h.method[0] != '\0'); /* the log names it */
    }
    assert_int_equal(parse(&p, "TRACE http://example.com/ HTTP/1.1\r\n\r\n", &h, &why), 405);
    assert_string_equal(h.method, "TRACE");
    assert_non_null(strstr(why, "GET, HEAD, POST, PUT, PATCH, DELETE and OPTIONS"));
    assert_int_equal(parse(&p, "CONNECT http://example.com:80/ HTTP/1.1\r\n\r\n", &h, &why), 405);
    assert_non_null(strstr(why, "host:port"));
    /* what is no method token at all stays the parser's 400 */
    assert_int_equal(parse(&p, "GARBAGE\r\n\r\n", &h, &why), 400);
    assert_int_equal(parse(&p, "G(T http://example.com/ HTTP/1.1\r\n\r\n", &h, &why), 400);
}

static void head_refusals(void **state)
{
    http_parser p;
    struct egress_head h;
    const char *why;
    static const struct {
        const char *req;
        int status;
        const char *needle;
    } cases[] = {
        {"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 400, "absolute"},
        {"GET https://example.com/ HTTP/1.1\r\n\r\n", 400, "CONNECT"},
        {"GET ftp://example.com/ HTTP/1.1\r\n\r\n", 400, "http://"},
        {"GET http://u:p@example.com/ HTTP/1.1\r\n\r\n", 400, "credentials"},
        {"GET http://example.com:0/ HTTP/1.1\r\n\r\n", 400, NULL},
        {"GET http://exa mple.com/ HTTP/1.1\r\n\r\n", 400, NULL},
        {"GET http://bad_host!/ HTTP/1.1\r\n\r\n", 400, NULL},
        {"GET http://example.com/ HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
         501, "upgrades"},
        {"POST http://example.com/ HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: "
         "chunked\r\n\r\n",
         400, NULL},
        {"POST http://example.com/ HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 400, NULL},
        /* Found by fuzz_egress: a folded value was forwarded with its line breaks, so the
         * upstream got lines the proxy never checked (a dropped header could ride in one). */
        {"GET http://example.com/ HTTP/1.1\r\nX-A: a\r\n Proxy-Authorization: x\r\n\r\n", 400,
         "obs-fold"},
        {"GET http://example.com/ HTTP/1.1\r\nX-A: a\r\n\tb\r\n\r\n", 400, "obs-fold"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int status = parse(&p, cases[i].req, &h, &why);
        if (status != cases[i].status)
            fail_msg("%s: status %d, not %d (%s)", cases[i].req, status, cases[i].status,
                     why ? why : "");
        assert_non_null(why);
        if (cases[i].needle && !strstr(why, cases[i].needle))
            fail_msg("%s: '%s' lacks '%s'", cases[i].req, why, cases[i].needle);
    }
    char many[8192] = "GET http://example.com/ HTTP/1.1\r\n";
    for (int i = 0; i < EGRESS_HEAD_LINES + 1; i++)
        strcat(many, "X-A: b\r\n");
    strcat(many, "\r\n");
    assert_int_equal(parse(&p, many, &h, &why), 431);
}

static void bodies_end_where_the_request_ends(void **state)
{
    http_parser p;
    struct egress_head h;
    const char *why;
    size_t used;
    bool done;
    assert_int_equal(
        parse(&p, "POST http://api.example.com/ HTTP/1.1\r\nContent-Length: 5\r\n\r\n", &h, &why),
        0);
    assert_false(h.body_done);
    assert_int_equal(egress_body_feed(&p, "hel", 3, &used, &done), 0);
    assert_int_equal(used, 3);
    assert_false(done);
    const char rest[] = "loGET http://evil.example/ HTTP/1.1\r\nHost: evil.example\r\n\r\n";
    assert_int_equal(egress_body_feed(&p, rest, sizeof(rest) - 1, &used, &done), 0);
    assert_int_equal(used, 2);
    assert_true(done);

    /* chunked, fed one byte at a time, with a pipelined request behind it */
    assert_int_equal(
        parse(&p, "PUT http://api.example.com/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", &h,
              &why),
        0);
    const char body[] = "5;ext=1\r\nhello\r\n3\r\nabc\r\n0\r\nX-Trailer: t\r\n\r\nGET http://evil/ "
                        "HTTP/1.1\r\n\r\n";
    size_t end = strstr(body, "GET") - body, total = 0;
    done = false;
    for (size_t i = 0; i < sizeof(body) - 1 && !done; i++) {
        assert_int_equal(egress_body_feed(&p, body + i, 1, &used, &done), 0);
        total += used;
    }
    assert_true(done);
    assert_int_equal(total, end);

    assert_int_equal(
        parse(&p, "PUT http://api.example.com/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", &h,
              &why),
        0);
    assert_int_equal(egress_body_feed(&p, "zz\r\n", 4, &used, &done), -EBADMSG);
    /* an empty feed changes nothing (a zero length would mean the end of the stream) */
    assert_int_equal(egress_body_feed(&p, "", 0, &used, &done), 0);
    assert_int_equal(used, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sni_found_in_one_record),
        cmocka_unit_test(sni_across_records),
        cmocka_unit_test(sni_absent_or_malformed),
        cmocka_unit_test(head_absolute_get_is_rebuilt),
        cmocka_unit_test(head_connect),
        cmocka_unit_test(head_methods_are_a_list),
        cmocka_unit_test(head_refusals),
        cmocka_unit_test(bodies_end_where_the_request_ends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
