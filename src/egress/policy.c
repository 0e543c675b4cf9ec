// SPDX-License-Identifier: MIT
/*
 * policy — see policy.h.
 */
#include "egress/policy.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/fmt.h"
#include "util/macros.h"

/* "1".."65535", digits only; 0 when malformed. */
static uint16_t policy_port(const char *s, size_t len)
{
    if (len == 0 || len > 5)
        return 0;
    unsigned v = 0;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i]))
            return 0;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    return v <= 65535 ? (uint16_t)v : 0;
}

/* Split "host", "host:port", "[v6]" or "[v6]:port". */
static const char *policy_split(const char *s, size_t len, const char **ret_host, size_t *ret_hlen,
                                uint16_t *ret_port)
{
    const char *colon;
    *ret_port = 0;
    if (len && s[0] == '[') {
        const char *end = memchr(s, ']', len);
        if (!end)
            return "an IPv6 address lacks its closing ']'";
        *ret_host = s + 1;
        *ret_hlen = (size_t)(end - s - 1);
        size_t rest = len - (size_t)(end - s) - 1;
        if (rest == 0)
            return NULL;
        if (end[1] != ':' || !(*ret_port = policy_port(end + 2, rest - 1)))
            return "the port must be a number from 1 to 65535";
        return NULL;
    }
    colon = memchr(s, ':', len);
    if (colon && memchr(colon + 1, ':', len - (size_t)(colon - s) - 1))
        return "an IPv6 address must be written in brackets, e.g. [2001:db8::1]:443";
    *ret_host = s;
    *ret_hlen = colon ? (size_t)(colon - s) : len;
    if (colon && !(*ret_port = policy_port(colon + 1, len - (size_t)(colon - s) - 1)))
        return "the port must be a number from 1 to 65535";
    return NULL;
}

const char *egress_pattern_parse(const char *s, size_t len, struct egress_pattern *ret)
{
    *ret = (struct egress_pattern){0};
    if (len == 0)
        return "the pattern is empty";
    if (len > EGRESS_PATTERN_MAX)
        return "the pattern is too long";
    if (len >= 2 && s[0] == '*' && s[1] == '.') {
        ret->wildcard = true;
        s += 2;
        len -= 2;
    } else if (memchr(s, '*', len)) {
        return "'*' may only stand first, as in *.example.com";
    }
    const char *host;
    size_t hlen;
    const char *why = policy_split(s, len, &host, &hlen, &ret->port);
    if (!why)
        why = egress_host_parse(host, hlen, &ret->host);
    if (!why && ret->wildcard && ret->host.family)
        why = "a wildcard needs a domain name, not an address";
    return why;
}

static bool policy_port_in(uint16_t port, uint16_t pattern_port)
{
    return pattern_port ? port == pattern_port : port == 80 || port == 443;
}

bool egress_pattern_matches(const struct egress_pattern *p, const struct egress_host *h,
                            uint16_t port)
{
    if (!policy_port_in(port, p->port))
        return false;
    if (p->wildcard)
        return h->family == 0 && egress_host_under(h->name, p->host.name, false);
    return egress_host_equal(&p->host, h);
}

bool egress_pattern_within(const struct egress_pattern *inner, const struct egress_pattern *outer)
{
    bool ports = outer->port ? inner->port == outer->port
                             : inner->port == 0 || inner->port == 80 || inner->port == 443;
    if (!ports)
        return false;
    if (!outer->wildcard)
        return !inner->wildcard && egress_host_equal(&inner->host, &outer->host);
    return inner->host.family == 0 &&
           egress_host_under(inner->host.name, outer->host.name, inner->wildcard);
}

void egress_pattern_format(const struct egress_pattern *p, char *buf, size_t len)
{
    bool v6 = p->host.family == AF_INET6;
    int n = snprintf(buf, len, "%s%s%s%s", p->wildcard ? "*." : "", v6 ? "[" : "", p->host.name,
                     v6 ? "]" : "");
    if (p->port && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, ":%u", (unsigned)p->port);
}

/* ---- the operator's configuration ------------------------------------------------------ */

static size_t policy_count(const char *const *list)
{
    size_t n = 0;
    while (list && list[n])
        n++;
    return n;
}

/* HOST:PORT:ADDR, as curl's --resolve. */
static const char *policy_pin_parse(const char *s, struct egress_pin *ret)
{
    *ret = (struct egress_pin){0};
    const char *c1 = strchr(s, ':');
    const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c1 || !c2)
        return "expected HOST:PORT:ADDRESS";
    const char *why = egress_host_parse(s, (size_t)(c1 - s), &ret->host);
    if (why)
        return why;
    if (!(ret->port = policy_port(c1 + 1, (size_t)(c2 - c1 - 1))))
        return "the port must be a number from 1 to 65535";
    const char *a = c2 + 1;
    size_t alen = strlen(a);
    if (alen >= 2 && a[0] == '[' && a[alen - 1] == ']') {
        a++;
        alen -= 2;
    }
    struct egress_host addr;
    why = egress_host_parse(a, alen, &addr);
    if (!why && !addr.family)
        why = "the address must be an IP address";
    if (why)
        return why;
    egress_host_sockaddr(&addr, ret->port, &ret->addr, &ret->addr_len);
    return NULL;
}

bool egress_tchar(unsigned char c)
{
    return isalnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* HOST[:PORT]=Name: value. No port: port 80, where a plain-HTTP URI without one goes. */
static const char *policy_inject_parse(const char *s, struct egress_inject *ret)
{
    *ret = (struct egress_inject){0};
    if (strlen(s) > EGRESS_HEADER_MAX)
        return "the header is too long";
    const char *eq = strchr(s, '=');
    if (!eq)
        return "expected HOST[:PORT]=Name: value";
    const char *host;
    size_t hlen;
    const char *why = policy_split(s, (size_t)(eq - s), &host, &hlen, &ret->port);
    if (!why)
        why = egress_host_parse(host, hlen, &ret->host);
    if (why)
        return why;
    const char *name = eq + 1, *colon = strchr(name, ':');
    if (!colon || colon == name)
        return "expected HOST[:PORT]=Name: value";
    for (const char *p = name; p < colon; p++)
        if (!egress_tchar((unsigned char)*p))
            return "the header name has a character HTTP does not allow";
    static const char *const framing[] = {"host",       "content-length",   "transfer-encoding",
                                          "connection", "proxy-connection", "upgrade",
                                          "te"};
    size_t nlen = (size_t)(colon - name);
    for (size_t i = 0; i < ARRAY_SIZE(framing); i++)
        if (nlen == strlen(framing[i]) && strncasecmp(name, framing[i], nlen) == 0)
            return "that header is the proxy's to set";
    const char *value = colon + 1;
    while (*value == ' ' || *value == '\t')
        value++;
    for (const char *p = value; *p; p++)
        if ((unsigned char)*p < 0x20 && *p != '\t')
            return "the header value has a control character";
    ret->name_len = nlen;
    ret->line = fmt_str("%.*s: %s", (int)nlen, name, value);
    return ret->line ? NULL : "out of memory";
}

int egress_config_init(struct egress_config *cfg, const char *const *allow,
                       const char *const *resolve, const char *const *headers, char **ret_why)
{
    *cfg = (struct egress_config){0};
    size_t na = policy_count(allow), nr = policy_count(resolve), nh = policy_count(headers);
    *ret_why = NULL;
    if (na > EGRESS_CEILING_MAX || nr > EGRESS_CEILING_MAX || nh > EGRESS_CEILING_MAX)
        return fmt_error(ret_why, EINVAL, "at most %d values of each --egress-* option",
                         EGRESS_CEILING_MAX);
    cfg->ceiling = calloc(na ? na : 1, sizeof(*cfg->ceiling));
    cfg->pins = calloc(nr ? nr : 1, sizeof(*cfg->pins));
    cfg->injects = calloc(nh ? nh : 1, sizeof(*cfg->injects));
    if (!cfg->ceiling || !cfg->pins || !cfg->injects) {
        egress_config_done(cfg);
        return -ENOMEM;
    }
    const char *why = NULL, *bad = NULL, *opt = NULL;
    for (size_t i = 0; i < na && !why; i++, cfg->n_ceiling++)
        if ((why = egress_pattern_parse(allow[i], strlen(allow[i]), &cfg->ceiling[i])))
            bad = allow[i], opt = "--egress-allow";
    for (size_t i = 0; i < nr && !why; i++, cfg->n_pins++)
        if ((why = policy_pin_parse(resolve[i], &cfg->pins[i])))
            bad = resolve[i], opt = "--egress-resolve";
    for (size_t i = 0; i < nh && !why; i++, cfg->n_injects++)
        if ((why = policy_inject_parse(headers[i], &cfg->injects[i])))
            bad = headers[i], opt = "--egress-header";
    if (!why)
        return 0;
    /* A header value may be a secret: name the option and the host, never the value. */
    int r =
        strcmp(opt, "--egress-header") == 0
            ? fmt_error(ret_why, EINVAL, "%s %.*s=...: %s", opt, (int)strcspn(bad, "="), bad, why)
            : fmt_error(ret_why, EINVAL, "%s '%.300s': %s", opt, bad, why);
    egress_config_done(cfg);
    return r;
}

void egress_config_done(struct egress_config *cfg)
{
    if (!cfg)
        return;
    for (size_t i = 0; cfg->injects && i < cfg->n_injects; i++)
        free(cfg->injects[i].line);
    free(cfg->ceiling);
    free(cfg->pins);
    free(cfg->injects);
    *cfg = (struct egress_config){0};
}

bool egress_inject_applies(const struct egress_inject *in, const struct egress_host *h,
                           uint16_t port)
{
    return port == (in->port ? in->port : 80) && egress_host_equal(&in->host, h);
}

void egress_inject_format(const struct egress_inject *in, char *buf, size_t len)
{
    bool v6 = in->host.family == AF_INET6;
    snprintf(buf, len, "%s%s%s:%u", v6 ? "[" : "", in->host.name, v6 ? "]" : "",
             in->port ? (unsigned)in->port : 80u);
}

const struct egress_pin *egress_config_pin(const struct egress_config *cfg,
                                           const struct egress_host *h, uint16_t port)
{
    for (size_t i = 0; i < cfg->n_pins; i++)
        if (cfg->pins[i].port == port && egress_host_equal(&cfg->pins[i].host, h))
            return &cfg->pins[i];
    return NULL;
}

static json_t *policy_patterns_json(const struct egress_pattern *pats, size_t n)
{
    json_t *a = json_array();
    char buf[EGRESS_PATTERN_MAX];
    for (size_t i = 0; a && i < n; i++) {
        egress_pattern_format(&pats[i], buf, sizeof(buf));
        json_array_append_new(a, json_string(buf));
    }
    return a;
}

json_t *egress_config_ceiling_json(const struct egress_config *cfg)
{
    return policy_patterns_json(cfg->ceiling, cfg->n_ceiling);
}

/* ---- one execution's allow list -------------------------------------------------------- */

int egress_policy_parse(const struct egress_config *cfg, json_t *allow, struct egress_policy **ret,
                        char **ret_why)
{
    *ret = NULL;
    *ret_why = NULL;
    if (!cfg || cfg->n_ceiling == 0)
        return fmt_error(ret_why, EINVAL,
                         "this server allows no network access (it has no --egress-allow)");
    if (!json_is_array(allow) || json_array_size(allow) == 0 ||
        json_array_size(allow) > EGRESS_POLICY_MAX)
        return fmt_error(ret_why, EINVAL, "allow: must be an array of 1 to %d patterns",
                         EGRESS_POLICY_MAX);
    size_t n = json_array_size(allow);
    struct egress_policy *p = calloc(1, sizeof(*p) + n * sizeof(p->pats[0]));
    if (!p)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(allow, i);
        if (!json_is_string(v)) {
            free(p);
            return fmt_error(ret_why, EINVAL, "allow[%zu]: must be a string", i);
        }
        const char *why =
            egress_pattern_parse(json_string_value(v), json_string_length(v), &p->pats[i]);
        if (why) {
            free(p);
            return fmt_error(ret_why, EINVAL, "allow[%zu]: %s", i, why);
        }
        bool within = false;
        for (size_t k = 0; k < cfg->n_ceiling && !within; k++)
            within = egress_pattern_within(&p->pats[i], &cfg->ceiling[k]);
        if (!within) {
            char buf[EGRESS_PATTERN_MAX];
            egress_pattern_format(&p->pats[i], buf, sizeof(buf));
            bool any_port = p->pats[i].port == 0;
            free(p);
            return fmt_error(ret_why, EINVAL,
                             "allow[%zu]: '%s' is not within what this server allows "
                             "(--egress-allow; GET /healthz lists it under egress.allow)%s",
                             i, buf,
                             any_port ? "; a pattern without a port means ports 80 and 443" : "");
        }
        p->n++;
    }
    *ret = p;
    return 0;
}

/* egress_network_parse() with the reason as a string (caller frees). */
static int egress_network_check(const struct egress_config *cfg, json_t *network,
                                struct egress_policy **ret, char **ret_why)
{
    *ret = NULL;
    *ret_why = NULL;
    if (!json_is_object(network))
        return fmt_error(ret_why, EINVAL, "must be an object {\"allow\": [patterns]}");
    const char *key;
    json_t *v;
    json_object_foreach(network, key, v)
    {
        if (strcmp(key, "allow") != 0)
            return fmt_error(ret_why, EINVAL, "unknown member '%.64s' (only \"allow\")", key);
    }
    return egress_policy_parse(cfg, json_object_get(network, "allow"), ret, ret_why);
}

int egress_network_parse(const struct egress_config *cfg, json_t *network, const char *field,
                         struct egress_policy **ret, struct sbx_error *err)
{
    _cleanup_free_ char *why = NULL;
    int r = egress_network_check(cfg, network, ret, &why);
    if (r == -EINVAL && why)
        return sbx_error_errno(err, EINVAL, SBX_ERR_INVALID, "NETWORK_NOT_ALLOWED", field, "%s: %s",
                               field, why);
    if (r < 0)
        return sbx_error_errno(err, -r, SBX_ERR_INTERNAL, "INTERNAL", NULL, "%s: out of memory",
                               field);
    return 0;
}

void egress_policy_free(struct egress_policy *p)
{
    free(p);
}

struct egress_policy *egress_policy_dup(const struct egress_policy *p)
{
    size_t size = sizeof(*p) + p->n * sizeof(p->pats[0]);
    struct egress_policy *d = malloc(size);
    if (d)
        memcpy(d, p, size);
    return d;
}

bool egress_policy_allows(const struct egress_policy *p, const struct egress_host *h, uint16_t port)
{
    for (size_t i = 0; i < p->n; i++)
        if (egress_pattern_matches(&p->pats[i], h, port))
            return true;
    return false;
}

bool egress_policy_names(const struct egress_policy *p, const struct sockaddr *sa, uint16_t port)
{
    /* The port too: "10.0.0.5:8080" names that service, not every port of that machine. A
     * name allowed on another port that resolves to 10.0.0.5 must not reach 10.0.0.5 there. */
    for (size_t i = 0; i < p->n; i++)
        if (!p->pats[i].wildcard && policy_port_in(port, p->pats[i].port) &&
            egress_addr_is(sa, &p->pats[i].host))
            return true;
    return false;
}

json_t *egress_policy_json(const struct egress_policy *p)
{
    return policy_patterns_json(p->pats, p->n);
}
