// SPDX-License-Identifier: MIT
/*
 * fuzz_egress — what the egress proxy reads from a sandbox (egress/): the
 * first bytes of a CONNECT tunnel (the TLS ClientHello and its server name),
 * the head of a proxy request and the body that follows it, and allow-list
 * patterns a request names.
 *
 * sni: an answer of the documented set; a name found is a NUL-terminated
 * string within the buffer and within the bytes given; any shorter prefix of
 * a complete hello asks for more, never answers differently.
 * head: a complete head parses or is answered with 400/405/431/501; a parsed
 * one has a method of the allow list and is rebuilt for the upstream as one
 * head (no CR or LF inside a line, one blank line, at its end) with one Host,
 * the injected header present once for its host and port (a client's own
 * header of that name dropped), not added for any other port, and never a
 * Proxy-* field; the operator's bytes are what the build says they are; the
 * body that follows is consumed within what was given. pattern: parse, format and parse again give
 * the same pattern, which is within itself.
 *
 * Input: one byte choosing the part, then its bytes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "egress/head.h"
#include "egress/policy.h"
#include "egress/sni.h"
#include "fuzz.h"

static void check_sni(const uint8_t *data, size_t len, size_t cut)
{
    char name[300];
    size_t used = 0;
    int r = egress_sni_parse(data, len, name, sizeof(name), &used);
    FUZZ_CHECK(r == EGRESS_SNI_MORE || r == EGRESS_SNI_FOUND || r == EGRESS_SNI_NONE ||
               r == -EBADMSG || r == -EMSGSIZE);
    if (r == EGRESS_SNI_FOUND) {
        size_t n = strnlen(name, sizeof(name));
        FUZZ_CHECK(n > 0 && n < sizeof(name));
    }
    if (r == EGRESS_SNI_FOUND || r == EGRESS_SNI_NONE) {
        FUZZ_CHECK(used > 0 && used <= len);
        cut %= used;
        FUZZ_CHECK(egress_sni_parse(data, cut, name, sizeof(name), NULL) == EGRESS_SNI_MORE);
    }
}

static const struct egress_config *config(void)
{
    static struct egress_config cfg;
    static bool done;
    if (!done) {
        static const char *const allow[] = {"*.example.com", "api.test:8080", NULL};
        static const char *const headers[] = {"api.example.com=X-Api-Key: secret", NULL};
        char *why = NULL;
        FUZZ_CHECK(egress_config_init(&cfg, allow, NULL, headers, &why) == 0);
        done = true;
    }
    return &cfg;
}

static void check_head(const char *data, size_t len)
{
    const char *end = memmem(data, len, "\r\n\r\n", 4);
    if (!end)
        return;
    size_t head_len = (size_t)(end - data) + 4;
    http_parser parser;
    struct egress_head h;
    const char *why = NULL;
    int r = egress_head_parse(&parser, data, head_len, &h, &why);
    if (r != 0) {
        FUZZ_CHECK((r == 400 || r == 405 || r == 431 || r == 501) && why);
        return;
    }
    FUZZ_CHECK(h.n_fields <= EGRESS_HEAD_LINES && h.host.name[0]);
    FUZZ_CHECK(strcmp(h.method, "TRACE") != 0 && strcmp(h.method, "TRACK") != 0);
    if (h.tunnel)
        return;
    size_t out_len = 0, hidden = 0;
    char *out = egress_head_build(&h, config(), &out_len, &hidden);
    FUZZ_CHECK(out && strlen(out) == out_len && out_len >= 4);
    const char *blank = strstr(out, "\r\n\r\n");
    FUZZ_CHECK(blank && blank + 4 == out + out_len); /* one head, ending there */
    size_t hosts = 0, keys = 0, injected = 0;
    for (const char *line = out; line < blank + 2;) {
        const char *eol = strstr(line, "\r\n");
        FUZZ_CHECK(eol != NULL);
        FUZZ_CHECK(!memchr(line, '\r', (size_t)(eol - line)) &&
                   !memchr(line, '\n', (size_t)(eol - line)));
        if (line != out) {
            FUZZ_CHECK(strncasecmp(line, "Proxy-", 6) != 0);
            hosts += strncasecmp(line, "Host:", 5) == 0;
            keys += strncasecmp(line, "X-Api-Key:", 10) == 0;
            injected += strncmp(line, "X-Api-Key: secret\r\n", 19) == 0;
        }
        line = eol + 2;
    }
    FUZZ_CHECK(hosts == 1);
    bool for_it = strcmp(h.host.name, "api.example.com") == 0 && h.port == 80;
    if (for_it) /* the operator's value, not the client's */
        FUZZ_CHECK(keys == 1 && injected == 1);
    FUZZ_CHECK(hidden == (for_it ? strlen("X-Api-Key: secret\r\n") : 0));
    free(out);
    if (!h.body_done) {
        size_t used = 0;
        bool done = false;
        r = egress_body_feed(&parser, data + head_len, len - head_len, &used, &done);
        FUZZ_CHECK(r == 0 || r == -EBADMSG);
        if (r == 0)
            FUZZ_CHECK(used <= len - head_len);
    }
}

static void check_pattern(const char *data, size_t len)
{
    struct egress_pattern p, q;
    if (len > EGRESS_PATTERN_MAX || egress_pattern_parse(data, len, &p))
        return;
    char text[EGRESS_PATTERN_MAX];
    egress_pattern_format(&p, text, sizeof(text));
    FUZZ_CHECK(egress_pattern_parse(text, strlen(text), &q) == NULL);
    FUZZ_CHECK(egress_host_equal(&p.host, &q.host) && p.wildcard == q.wildcard && p.port == q.port);
    FUZZ_CHECK(egress_pattern_within(&p, &q) && egress_pattern_within(&q, &p));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in = {data, size};
    uint8_t choice = fuzz_byte(&in);
    switch (choice % 3) {
    case 0: {
        size_t cut = fuzz_range(&in, EGRESS_HELLO_MAX + 64);
        check_sni(in.data, in.len, cut);
        break;
    }
    case 1:
        check_head((const char *)in.data, in.len);
        break;
    default:
        check_pattern((const char *)in.data, in.len);
    }
    return 0;
}
