// SPDX-License-Identifier: MIT
/* Unit tests: egress/host and egress/policy — host names and IP literals, address classes,
 * patterns, the ceiling, pins, injected headers and per-execution allow lists. */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "egress/host.h"
#include "egress/policy.h"
#include "egress/proxy.h"

static const char *host_of(const char *s)
{
    static struct egress_host h;
    return egress_host_parse(s, strlen(s), &h) ? NULL : h.name;
}

static void host_names_are_canonical(void **state)
{
    assert_string_equal(host_of("Example.COM."), "example.com");
    assert_string_equal(host_of("a-b_c.example"), "a-b_c.example");
    assert_string_equal(host_of("1.2.3.4.nip.io"), "1.2.3.4.nip.io");
    /* IPv4 in every form inet_aton reads is the address it means */
    assert_string_equal(host_of("2130706433"), "127.0.0.1");
    assert_string_equal(host_of("0x7f.1"), "127.0.0.1");
    assert_string_equal(host_of("017700000001"), "127.0.0.1");
    assert_string_equal(host_of("127.1"), "127.0.0.1");
    assert_string_equal(host_of("0:0:0:0:0:0:0:1"), "::1");
    assert_string_equal(host_of("FD00:EC2::254"), "fd00:ec2::254");
    struct egress_host h;
    assert_null(egress_host_parse("10.0.0.1", 8, &h));
    assert_int_equal(h.family, AF_INET);
    assert_null(egress_host_parse("example.com", 11, &h));
    assert_int_equal(h.family, 0);
}

static void host_rejects_what_is_no_host(void **state)
{
    static const char *const bad[] = {"",     ".",         "a..b",      ".a",    "a b", "a/b",
                                      "a:b:", "é.example", "1.2.3.4.5", "[::1]", "::g", "a%2fb"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_null(host_of(bad[i]));
    char label[80];
    memset(label, 'a', 64);
    strcpy(label + 64, ".com");
    assert_null(host_of(label));
    char longname[300];
    for (int i = 0; i < 254; i += 2)
        memcpy(longname + i, "a.", 2);
    memcpy(longname + 254, "ab", 3);
    assert_null(host_of(longname));
    struct egress_host h;
    assert_non_null(egress_host_parse("a\0b.com", 7, &h));
}

static const char *class_of(const char *text)
{
    struct sockaddr_storage ss = {0};
    if (strchr(text, ':')) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        s6->sin6_family = AF_INET6;
        assert_int_equal(inet_pton(AF_INET6, text, &s6->sin6_addr), 1);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        s4->sin_family = AF_INET;
        assert_int_equal(inet_pton(AF_INET, text, &s4->sin_addr), 1);
    }
    return egress_addr_class((struct sockaddr *)&ss);
}

static void address_classes(void **state)
{
    static const struct {
        const char *addr, *class;
    } cases[] = {
        {"8.8.8.8", NULL},
        {"1.1.1.1", NULL},
        {"172.15.255.255", NULL},
        {"172.32.0.0", NULL},
        {"100.63.255.255", NULL},
        {"2001:4860:4860::8888", NULL},
        {"::ffff:8.8.8.8", NULL},
        {"127.0.0.1", "loopback"},
        {"127.255.0.9", "loopback"},
        {"10.1.2.3", "private"},
        {"172.16.0.1", "private"},
        {"172.31.255.255", "private"},
        {"192.168.1.1", "private"},
        {"100.64.0.1", "private"},
        {"169.254.169.254", "metadata"},
        {"169.254.170.2", "metadata"},
        {"100.100.100.200", "metadata"},
        {"192.0.0.192", "metadata"},
        {"169.254.1.1", "link-local"},
        {"0.0.0.0", "unspecified"},
        {"224.0.0.1", "multicast"},
        {"255.255.255.255", "reserved"},
        {"240.0.0.1", "reserved"},
        {"198.18.0.1", "reserved"},
        {"192.0.2.1", "documentation"},
        {"::", "unspecified"},
        {"::1", "loopback"},
        {"::ffff:127.0.0.1", "loopback"},
        {"::ffff:169.254.169.254", "metadata"},
        {"64:ff9b::a00:1", "private"}, /* NAT64 of 10.0.0.1 */
        {"2002:7f00:1::", "loopback"}, /* 6to4 of 127.0.0.1 */
        {"fe80::1", "link-local"},
        {"fd00:ec2::254", "metadata"},
        {"fd12:3456::1", "private"},
        {"fec0::1", "private"},
        {"ff02::1", "multicast"},
        {"2001:db8::1", "documentation"},
        {"::127.0.0.1", "reserved"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *got = class_of(cases[i].addr);
        if (cases[i].class == NULL)
            assert_null(got);
        else if (!got || strcmp(got, cases[i].class) != 0)
            fail_msg("%s: expected %s, got %s", cases[i].addr, cases[i].class,
                     got ? got : "(public)");
    }
}

static struct egress_pattern pat(const char *s)
{
    struct egress_pattern p;
    const char *why = egress_pattern_parse(s, strlen(s), &p);
    if (why)
        fail_msg("pattern '%s': %s", s, why);
    return p;
}

static bool matches(const char *pattern, const char *host, uint16_t port)
{
    struct egress_pattern p = pat(pattern);
    struct egress_host h;
    assert_null(egress_host_parse(host, strlen(host), &h));
    return egress_pattern_matches(&p, &h, port);
}

static void patterns_parse_and_format(void **state)
{
    static const char *const same[] = {
        "example.com", "example.com:8080", "*.example.com", "*.example.com:443",
        "10.0.0.5",    "10.0.0.5:8080",    "[fd00::1]:443", "[::1]"};
    char buf[EGRESS_PATTERN_MAX];
    for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
        struct egress_pattern p = pat(same[i]);
        egress_pattern_format(&p, buf, sizeof(buf));
        assert_string_equal(buf, same[i]);
    }
    struct egress_pattern p = pat("API.Example.COM.:443");
    egress_pattern_format(&p, buf, sizeof(buf));
    assert_string_equal(buf, "api.example.com:443");
    static const char *const bad[] = {
        "",         "*",   "*.",   "a.*.com", "*example.com", "x.com:", "x.com:0", "x.com:65536",
        "x.com:8o", "::1", "[::1", "[::1]x",  "*.10.0.0.1",   "a b"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (!egress_pattern_parse(bad[i], strlen(bad[i]), &p))
            fail_msg("'%s' was accepted", bad[i]);
}

static void patterns_match(void **state)
{
    assert_true(matches("example.com", "example.com", 443));
    assert_true(matches("example.com", "EXAMPLE.com.", 80));
    assert_false(matches("example.com", "example.com", 8080)); /* no port: 80 and 443 */
    assert_false(matches("example.com", "www.example.com", 443));
    assert_true(matches("example.com:8080", "example.com", 8080));
    assert_false(matches("example.com:8080", "example.com", 443));
    assert_true(matches("*.example.com", "a.example.com", 443));
    assert_true(matches("*.example.com", "a.b.example.com", 80));
    assert_false(matches("*.example.com", "example.com", 443)); /* not the apex */
    assert_false(matches("*.example.com", "aexample.com", 443));
    assert_false(matches("*.example.com:8443", "a.example.com", 443));
    assert_true(matches("10.0.0.5:8080", "10.0.0.5", 8080));
    assert_true(matches("10.0.0.5:8080", "0xa.0.0.5", 8080));
    assert_false(matches("10.0.0.5:8080", "10.0.0.6", 8080));
    assert_true(matches("[fd00::1]:443", "fd00:0::1", 443));
}

static bool within(const char *inner, const char *outer)
{
    struct egress_pattern i = pat(inner), o = pat(outer);
    return egress_pattern_within(&i, &o);
}

static void patterns_within_the_ceiling(void **state)
{
    assert_true(within("example.com", "example.com"));
    assert_true(within("example.com:443", "example.com"));
    assert_true(within("example.com:80", "example.com"));
    assert_false(within("example.com:8080", "example.com"));
    assert_false(within("example.com", "example.com:443")); /* 80 too */
    assert_true(within("example.com:443", "example.com:443"));
    assert_true(within("a.example.com", "*.example.com"));
    assert_true(within("*.a.example.com", "*.example.com"));
    assert_true(within("*.example.com", "*.example.com"));
    assert_false(within("example.com", "*.example.com"));
    assert_false(within("*.example.com", "example.com"));
    assert_false(within("*.com", "*.example.com"));
    assert_false(within("10.0.0.1", "*.example.com"));
    assert_true(within("10.0.0.1:80", "10.0.0.1"));
    assert_false(within("10.0.0.2", "10.0.0.1"));
}

static int policy_of(const char *const *ceiling, const char *allow_json, struct egress_policy **ret,
                     char **ret_why)
{
    struct egress_config cfg;
    char *why = NULL;
    assert_int_equal(egress_config_init(&cfg, ceiling, NULL, NULL, &why), 0);
    json_error_t e;
    json_t *allow = json_loads(allow_json, JSON_DECODE_ANY, &e);
    assert_non_null(allow);
    int r = egress_policy_parse(&cfg, allow, ret, ret_why);
    json_decref(allow);
    egress_config_done(&cfg);
    return r;
}

static void policies_stay_within_the_ceiling(void **state)
{
    static const char *const ceiling[] = {"api.example.com:443", "*.pypi.org", "10.0.0.5:8080",
                                          NULL};
    struct egress_policy *p = NULL;
    char *why = NULL;
    assert_int_equal(policy_of(ceiling, "[\"api.example.com:443\", \"files.pypi.org\"]", &p, &why),
                     0);
    assert_int_equal(p->n, 2);
    struct egress_host h;
    assert_null(egress_host_parse("files.pypi.org", 14, &h));
    assert_true(egress_policy_allows(p, &h, 443));
    assert_false(egress_policy_allows(p, &h, 8443));
    json_t *j = egress_policy_json(p);
    assert_string_equal(json_string_value(json_array_get(j, 1)), "files.pypi.org");
    json_decref(j);
    egress_policy_free(p);

    static const struct {
        const char *allow, *needle;
    } bad[] = {
        {"[\"api.example.com\"]", "a pattern without a port means ports 80 and 443"},
        {"[\"evil.example\"]", "allow[0]: 'evil.example' is not within"},
        {"[\"api.example.com:443\", \"pypi.org\"]", "allow[1]"},
        {"[\"10.0.0.5\"]", "allow[0]"},
        {"[]", "1 to 64 patterns"},
        {"[42]", "allow[0]: must be a string"},
        {"[\"a b\"]", "allow[0]:"},
        {"\"api.example.com:443\"", "must be an array"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(policy_of(ceiling, bad[i].allow, &p, &why), -EINVAL);
        assert_null(p);
        if (!why || !strstr(why, bad[i].needle))
            fail_msg("%s: '%s' lacks '%s'", bad[i].allow, why ? why : "(null)", bad[i].needle);
        free(why);
    }
    /* at most 64 patterns */
    json_t *many = json_array();
    for (int i = 0; i < 65; i++)
        json_array_append_new(many, json_string("x.pypi.org"));
    char *text = json_dumps(many, 0);
    assert_int_equal(policy_of(ceiling, text, &p, &why), -EINVAL);
    free(text);
    free(why);
    json_decref(many);
}

static void a_server_without_a_ceiling_allows_nothing(void **state)
{
    struct egress_policy *p = NULL;
    char *why = NULL;
    struct sbx_error err = {0};
    json_t *net = json_pack("{s:[s]}", "allow", "example.com");
    assert_int_equal(egress_network_parse(NULL, net, "network", &p, &err), -EINVAL);
    assert_int_equal(err.kind, SBX_ERR_INVALID);
    assert_string_equal(err.code, "NETWORK_NOT_ALLOWED");
    assert_string_equal(err.field, "network");
    assert_non_null(strstr(err.message, "network: this server allows no network access"));
    assert_non_null(strstr(err.message, "no --egress-allow"));
    json_decref(net);
    static const char *const ceiling[] = {"example.com", NULL};
    struct egress_config cfg;
    assert_int_equal(egress_config_init(&cfg, ceiling, NULL, NULL, &why), 0);
    net = json_pack("{s:[s], s:b}", "allow", "example.com", "alow", 1);
    assert_int_equal(egress_network_parse(&cfg, net, "context.taskDetails.network", &p, &err),
                     -EINVAL);
    assert_string_equal(err.field, "context.taskDetails.network");
    assert_string_equal(err.message,
                        "context.taskDetails.network: unknown member 'alow' (only \"allow\")");
    sbx_error_clear(&err);
    json_decref(net);
    net = json_pack("{s:[s]}", "allow", "example.com");
    assert_int_equal(egress_network_parse(&cfg, net, "network", &p, &err), 0);
    assert_null(err.message);
    egress_policy_free(p);
    json_decref(net);
    egress_config_done(&cfg);
}

static void pins_headers_and_their_errors(void **state)
{
    static const char *const allow[] = {"api.test:8080", NULL};
    static const char *const pins[] = {"api.test:8080:127.0.0.1", "v6.test:443:[::1]", NULL};
    static const char *const headers[] = {"api.test=Authorization: Bearer s3cret",
                                          "api.test:8080=X-Key:value2", "[fd00::1]:8443=X-V6: v",
                                          NULL};
    struct egress_config cfg;
    char *why = NULL;
    assert_int_equal(egress_config_init(&cfg, allow, pins, headers, &why), 0);
    struct egress_host h;
    assert_null(egress_host_parse("API.test", 8, &h));
    const struct egress_pin *pin = egress_config_pin(&cfg, &h, 8080);
    assert_non_null(pin);
    char a[64];
    egress_addr_format((const struct sockaddr *)&pin->addr, a, sizeof(a));
    assert_string_equal(a, "127.0.0.1");
    assert_null(egress_config_pin(&cfg, &h, 8081));
    assert_null(egress_host_parse("v6.test", 7, &h));
    pin = egress_config_pin(&cfg, &h, 443);
    assert_non_null(pin);
    assert_int_equal(pin->addr.ss_family, AF_INET6);
    assert_int_equal(cfg.n_injects, 3);
    assert_string_equal(cfg.injects[0].line, "Authorization: Bearer s3cret");
    assert_int_equal(cfg.injects[0].name_len, 13);
    assert_string_equal(cfg.injects[1].line, "X-Key: value2");
    /* a header goes to its host and port only; written without a port: port 80 */
    assert_null(egress_host_parse("api.test", 8, &h));
    assert_true(egress_inject_applies(&cfg.injects[0], &h, 80));
    assert_false(egress_inject_applies(&cfg.injects[0], &h, 8080));
    assert_false(egress_inject_applies(&cfg.injects[0], &h, 443));
    assert_true(egress_inject_applies(&cfg.injects[1], &h, 8080));
    assert_false(egress_inject_applies(&cfg.injects[1], &h, 80));
    assert_null(egress_host_parse("api.test2", 9, &h));
    assert_false(egress_inject_applies(&cfg.injects[1], &h, 8080));
    assert_null(egress_host_parse("fd00::1", 7, &h));
    assert_true(egress_inject_applies(&cfg.injects[2], &h, 8443));
    char hp[EGRESS_PATTERN_MAX];
    egress_inject_format(&cfg.injects[0], hp, sizeof(hp));
    assert_string_equal(hp, "api.test:80");
    egress_inject_format(&cfg.injects[2], hp, sizeof(hp));
    assert_string_equal(hp, "[fd00::1]:8443");
    egress_config_done(&cfg);

    static const char *const bad_pins[][2] = {
        {"api.test:8080", "expected HOST:PORT:ADDRESS"},
        {"api.test:0:127.0.0.1", "port"},
        {"api.test:80:localhost", "must be an IP address"},
    };
    for (size_t i = 0; i < sizeof(bad_pins) / sizeof(bad_pins[0]); i++) {
        const char *list[] = {bad_pins[i][0], NULL};
        assert_int_equal(egress_config_init(&cfg, allow, list, NULL, &why), -EINVAL);
        if (!strstr(why, "--egress-resolve") || !strstr(why, bad_pins[i][1]))
            fail_msg("'%s': %s", bad_pins[i][0], why);
        free(why);
    }
    static const char *const bad_headers[] = {"api.test",
                                              "api.test=NoColon",
                                              "api.test=Host: evil.example",
                                              "api.test=Content-Length: 0",
                                              "api.test=Bad Name: x",
                                              "api.test:0=X: y",
                                              "api.test:http=X: y",
                                              "fd00::1=X: y",
                                              "*.api.test=X: y",
                                              "api.test=X: a\rb"};
    for (size_t i = 0; i < sizeof(bad_headers) / sizeof(bad_headers[0]); i++) {
        const char *list[] = {bad_headers[i], NULL};
        assert_int_equal(egress_config_init(&cfg, allow, NULL, list, &why), -EINVAL);
        assert_non_null(strstr(why, "--egress-header"));
        /* a header value may be a secret: the message names the host only */
        const char *eq = strchr(bad_headers[i], '=');
        if (eq && strlen(eq) > 4)
            assert_null(strstr(why, eq + 1));
        free(why);
    }
    static const char *const bad_allow[] = {"*.10.0.0.1", NULL};
    assert_int_equal(egress_config_init(&cfg, bad_allow, NULL, NULL, &why), -EINVAL);
    assert_non_null(strstr(why, "--egress-allow '*.10.0.0.1'"));
    free(why);
}

static void ip_patterns_name_their_address(void **state)
{
    static const char *const ceiling[] = {"10.0.0.5:8080", "10.0.0.7", "*.corp.example", NULL};
    struct egress_policy *p = NULL;
    char *why = NULL;
    assert_int_equal(
        policy_of(ceiling, "[\"10.0.0.5:8080\", \"10.0.0.7\", \"*.corp.example\"]", &p, &why), 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    inet_pton(AF_INET, "10.0.0.5", &sa.sin_addr);
    assert_true(egress_policy_names(p, (struct sockaddr *)&sa, 8080));
    /* named on 8080 only: a name allowed on 443 that resolves there does not reach it on 443 */
    assert_false(egress_policy_names(p, (struct sockaddr *)&sa, 443));
    assert_false(egress_policy_names(p, (struct sockaddr *)&sa, 80));
    /* a pattern without a port names its address on 80 and 443, nowhere else */
    inet_pton(AF_INET, "10.0.0.7", &sa.sin_addr);
    assert_true(egress_policy_names(p, (struct sockaddr *)&sa, 80));
    assert_true(egress_policy_names(p, (struct sockaddr *)&sa, 443));
    assert_false(egress_policy_names(p, (struct sockaddr *)&sa, 8080));
    inet_pton(AF_INET, "10.0.0.6", &sa.sin_addr);
    assert_false(egress_policy_names(p, (struct sockaddr *)&sa, 8080));
    egress_policy_free(p);
}

static void shares_add_up_to_the_pool(void **state)
{
    struct sbx_error why = {0};
    /* the defaults: 64 sessions x 8 and 8 executions x 16 within half of 1024 each */
    struct egress_options o = {0};
    assert_int_equal(egress_shares_size(&o, 64, 8, &why), 0);
    assert_int_equal(o.pool, 1024);
    assert_int_equal(o.session_open, 8);
    assert_int_equal(o.exec_open, 16);
    assert_int_equal(o.tenant_open, 256);
    /* more holders: smaller caps, never more than half the pool together */
    static const unsigned holders[][2] = {{128, 256}, {512, 512}, {1, 1}, {300, 33}};
    for (size_t i = 0; i < sizeof(holders) / sizeof(holders[0]); i++) {
        o = (struct egress_options){0};
        assert_int_equal(egress_shares_size(&o, holders[i][0], holders[i][1], &why), 0);
        assert_true(o.session_open >= 1 && o.session_open <= 8);
        assert_true(o.exec_open >= 1 && o.exec_open <= 16);
        assert_true(o.session_open * holders[i][0] + o.exec_open * holders[i][1] <= o.pool);
    }
    /* `sandboxd mcp`: no executions; a cap given that fits is kept */
    o = (struct egress_options){.exec_open = 40};
    assert_int_equal(egress_shares_size(&o, 64, 0, &why), 0);
    assert_int_equal(o.exec_open, 40);
    /* caps given that do not fit, and limits that leave nothing, are refused with the figures */
    o = (struct egress_options){.session_open = 9};
    assert_int_equal(egress_shares_size(&o, 64, 8, &why), -EINVAL);
    assert_int_equal(why.kind, SBX_ERR_INVALID);
    assert_string_equal(why.message,
                        "--max-sessions 64 x --egress-session-max-open 9 = 576 connections, "
                        "more than half of --egress-pool 1024: lower one, or raise "
                        "--egress-pool");
    sbx_error_clear(&why);
    o = (struct egress_options){0};
    assert_int_equal(egress_shares_size(&o, 64, 600, &why), -EINVAL);
    assert_non_null(strstr(why.message, "--max-running 600 leaves no connection"));
    sbx_error_clear(&why);
    o = (struct egress_options){.pool = 4096};
    assert_int_equal(egress_shares_size(&o, 64, 600, &why), 0); /* a larger pool makes room */
    assert_int_equal(o.exec_open, 3);
    o = (struct egress_options){.tenant_open = 2000};
    assert_int_equal(egress_shares_size(&o, 64, 8, &why), -EINVAL);
    sbx_error_clear(&why);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(host_names_are_canonical),
        cmocka_unit_test(host_rejects_what_is_no_host),
        cmocka_unit_test(address_classes),
        cmocka_unit_test(patterns_parse_and_format),
        cmocka_unit_test(patterns_match),
        cmocka_unit_test(patterns_within_the_ceiling),
        cmocka_unit_test(policies_stay_within_the_ceiling),
        cmocka_unit_test(a_server_without_a_ceiling_allows_nothing),
        cmocka_unit_test(pins_headers_and_their_errors),
        cmocka_unit_test(ip_patterns_name_their_address),
        cmocka_unit_test(shares_add_up_to_the_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
