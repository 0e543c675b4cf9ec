// SPDX-License-Identifier: MIT
/*
 * host — the names and addresses of the egress proxy: a target host as a
 * sandbox writes it (a DNS name or an IP literal in any form inet_aton or
 * inet_pton accepts), reduced to one canonical text, and the classes of
 * addresses a sandbox must not reach unless the operator names them
 * (loopback, private, link-local, cloud metadata, ...). Pure functions on
 * caller-owned memory; no allocation, no logging, no I/O.
 */
#ifndef SANDBOXD_EGRESS_HOST_H
#define SANDBOXD_EGRESS_HOST_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#define EGRESS_NAME_MAX 253 /* a DNS name, without the trailing dot */

struct egress_host {
    /* Canonical text: a lower-case name without trailing dot, a dotted quad, or an IPv6
     * address in inet_ntop's form without brackets. */
    char name[EGRESS_NAME_MAX + 1];
    int family; /* 0: a DNS name; AF_INET or AF_INET6: an IP literal */
    union {
        struct in_addr v4;
        struct in6_addr v6;
    } addr;
};

/* Parse s[0..len): "Example.COM.", "10.0.0.1", "0x7f.1" (an IPv4 literal, as inet_aton reads
 * it), "2130706433", "::1" (no brackets). NULL on success, else why not (static). */
const char *egress_host_parse(const char *s, size_t len, struct egress_host *ret);
bool egress_host_equal(const struct egress_host *a, const struct egress_host *b);
/* Is name h (a DNS name) equal to domain d or below it ("a.b.d")? */
bool egress_host_under(const char *h, const char *d, bool or_equal);

/* Why the address must not be reached unless named explicitly: "loopback", "private",
 * "link-local", "metadata", "multicast", "reserved", "unspecified", ..., or NULL for a
 * global unicast address. IPv4-mapped and NAT64 IPv6 addresses are judged by the IPv4
 * address inside. */
const char *egress_addr_class(const struct sockaddr *sa);
/* Is sa the address of IP literal h? */
bool egress_addr_is(const struct sockaddr *sa, const struct egress_host *h);
/* The address as text ("1.2.3.4", "::1"); buf of at least INET6_ADDRSTRLEN bytes. */
void egress_addr_format(const struct sockaddr *sa, char *buf, size_t len);
/* Fill *ret (and *ret_len) with the address of literal h and port. */
void egress_host_sockaddr(const struct egress_host *h, unsigned port, struct sockaddr_storage *ret,
                          socklen_t *ret_len);

#endif
