// SPDX-License-Identifier: MIT
/*
 * host — see host.h.
 *
 * Why IPv4 literals go through inet_aton: "2130706433", "0x7f.1" and "017700000001" are all
 * 127.0.0.1 to getaddrinfo, curl and Python alike. Read as DNS names they would slip past
 * the patterns; read as what they are, they meet the address rules like any literal.
 */
#include "egress/host.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "util/macros.h"

static bool host_label_char(unsigned char c)
{
    return isalnum(c) || c == '-' || c == '_';
}

/* A DNS name: labels of 1-63 letters, digits, '-' and '_', at most 253 characters, and a
 * last label that is not all digits (no top-level domain is, and such a name is an address
 * that inet_aton refused). */
static const char *host_parse_name(const char *s, size_t len, struct egress_host *ret)
{
    if (len > EGRESS_NAME_MAX)
        return "the host name is longer than 253 characters";
    size_t label = 0;
    bool digits_only = true;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '.') {
            if (label == 0)
                return "the host name has an empty label";
            label = 0;
            digits_only = true;
            ret->name[i] = '.';
            continue;
        }
        if (!host_label_char(c))
            return "the host name may hold only letters, digits, '-', '_' and '.'";
        if (++label > 63)
            return "a label of the host name is longer than 63 characters";
        digits_only &= isdigit(c) != 0;
        ret->name[i] = (char)tolower(c);
    }
    if (label == 0)
        return "the host name has an empty label";
    if (digits_only)
        return "the host is neither a name nor an IP address";
    ret->name[len] = '\0';
    ret->family = 0;
    return NULL;
}

const char *egress_host_parse(const char *s, size_t len, struct egress_host *ret)
{
    *ret = (struct egress_host){0};
    if (len && s[len - 1] == '.')
        len--; /* the root: "example.com." is "example.com" */
    if (len == 0)
        return "the host is empty";
    if (memchr(s, '\0', len))
        return "the host contains a NUL byte";
    char tmp[EGRESS_NAME_MAX + 1];
    if (len <= EGRESS_NAME_MAX) {
        memcpy(tmp, s, len);
        tmp[len] = '\0';
        if (memchr(tmp, ':', len)) {
            if (inet_pton(AF_INET6, tmp, &ret->addr.v6) != 1)
                return "the host is not a valid IPv6 address";
            ret->family = AF_INET6;
            inet_ntop(AF_INET6, &ret->addr.v6, ret->name, sizeof(ret->name));
            return NULL;
        }
        if (inet_aton(tmp, &ret->addr.v4) == 1) {
            ret->family = AF_INET;
            inet_ntop(AF_INET, &ret->addr.v4, ret->name, sizeof(ret->name));
            return NULL;
        }
    }
    return host_parse_name(s, len, ret);
}

bool egress_host_equal(const struct egress_host *a, const struct egress_host *b)
{
    return a->family == b->family && strcmp(a->name, b->name) == 0;
}

bool egress_host_under(const char *h, const char *d, bool or_equal)
{
    size_t hl = strlen(h), dl = strlen(d);
    if (hl == dl)
        return or_equal && strcmp(h, d) == 0;
    return hl > dl && h[hl - dl - 1] == '.' && strcmp(h + hl - dl, d) == 0;
}

/* ---- address classes ------------------------------------------------------------------ */

struct host_range {
    uint8_t prefix[16];
    unsigned bits;
    const char *class; /* NULL: look at the IPv4 address in the last 4 bytes */
};

/* First match wins: the single metadata addresses come before the ranges that hold them. */
static const struct host_range host_v4[] = {
    {{169, 254, 169, 254}, 32, "metadata"}, /* AWS, GCP, Azure, OpenStack, ... */
    {{169, 254, 170, 2}, 32, "metadata"},   /* AWS ECS task metadata */
    {{100, 100, 100, 200}, 32, "metadata"}, /* Alibaba Cloud */
    {{192, 0, 0, 192}, 32, "metadata"},     /* Oracle Cloud */
    {{0}, 8, "unspecified"},
    {{10}, 8, "private"},
    {{100, 64}, 10, "private"}, /* shared address space (carrier-grade NAT) */
    {{127}, 8, "loopback"},
    {{169, 254}, 16, "link-local"},
    {{172, 16}, 12, "private"},
    {{192, 0, 0}, 24, "reserved"},
    {{192, 0, 2}, 24, "documentation"},
    {{192, 88, 99}, 24, "reserved"},
    {{192, 168}, 16, "private"},
    {{198, 18}, 15, "reserved"}, /* benchmarking */
    {{198, 51, 100}, 24, "documentation"},
    {{203, 0, 113}, 24, "documentation"},
    {{224}, 4, "multicast"},
    {{240}, 4, "reserved"}, /* and the broadcast address */
};

static const struct host_range host_v6[] = {
    {{0}, 128, "unspecified"},
    {{[15] = 1}, 128, "loopback"},
    {{[10] = 0xff, [11] = 0xff}, 96, NULL},          /* IPv4-mapped */
    {{0x00, 0x64, 0xff, 0x9b}, 96, NULL},            /* NAT64 */
    {{0x00, 0x64, 0xff, 0x9b, 0, 1}, 48, "private"}, /* local-use NAT64 */
    {{0}, 8, "reserved"},                            /* IPv4-compatible and the rest of ::/8 */
    {{0x01, 0x00}, 64, "reserved"},                  /* discard */
    {{0x20, 0x01, 0x0d, 0xb8}, 32, "documentation"},
    {{0x20, 0x01, 0x00}, 23, "reserved"}, /* IETF protocol assignments (Teredo, ...) */
    {{0x20, 0x02}, 16, NULL},             /* 6to4: the IPv4 address is in bytes 2-5 */
    {{0xfd, 0x00, 0x0e, 0xc2, [15] = 0x54, [14] = 0x02}, 128, "metadata"}, /* AWS fd00:ec2::254 */
    {{0xfc}, 7, "private"},
    {{0xfe, 0x80}, 10, "link-local"},
    {{0xfe, 0xc0}, 10, "private"}, /* site-local */
    {{0xff}, 8, "multicast"},
};

static bool host_in_range(const uint8_t *a, const struct host_range *r)
{
    unsigned full = r->bits / 8, rest = r->bits % 8;
    if (memcmp(a, r->prefix, full) != 0)
        return false;
    if (!rest)
        return true;
    uint8_t mask = (uint8_t)(0xff << (8 - rest));
    return (a[full] & mask) == (r->prefix[full] & mask);
}

static const char *host_class_v4(const uint8_t *a)
{
    for (size_t i = 0; i < ARRAY_SIZE(host_v4); i++)
        if (host_in_range(a, &host_v4[i]))
            return host_v4[i].class;
    return NULL;
}

const char *egress_addr_class(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return host_class_v4((const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr);
    if (sa->sa_family != AF_INET6)
        return "not an IP address";
    const uint8_t *a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
    for (size_t i = 0; i < ARRAY_SIZE(host_v6); i++) {
        if (!host_in_range(a, &host_v6[i]))
            continue;
        if (host_v6[i].class)
            return host_v6[i].class;
        /* An IPv4 address in disguise: 6to4 carries it in bytes 2-5, the others last. */
        return host_class_v4(a[0] == 0x20 && a[1] == 0x02 ? a + 2 : a + 12);
    }
    return NULL;
}

bool egress_addr_is(const struct sockaddr *sa, const struct egress_host *h)
{
    if (sa->sa_family != h->family)
        return false;
    if (sa->sa_family == AF_INET)
        return memcmp(&((const struct sockaddr_in *)sa)->sin_addr, &h->addr.v4, 4) == 0;
    if (sa->sa_family == AF_INET6)
        return memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr, &h->addr.v6, 16) == 0;
    return false;
}

void egress_addr_format(const struct sockaddr *sa, char *buf, size_t len)
{
    const void *a = sa->sa_family == AF_INET
                        ? (const void *)&((const struct sockaddr_in *)sa)->sin_addr
                        : (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
    if ((sa->sa_family != AF_INET && sa->sa_family != AF_INET6) ||
        !inet_ntop(sa->sa_family, a, buf, (socklen_t)len))
        snprintf(buf, len, "?");
}

void egress_host_sockaddr(const struct egress_host *h, unsigned port, struct sockaddr_storage *ret,
                          socklen_t *ret_len)
{
    memset(ret, 0, sizeof(*ret));
    if (h->family == AF_INET6) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ret;
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)port);
        s6->sin6_addr = h->addr.v6;
        *ret_len = sizeof(*s6);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)ret;
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)port);
        s4->sin_addr = h->addr.v4;
        *ret_len = sizeof(*s4);
    }
}
