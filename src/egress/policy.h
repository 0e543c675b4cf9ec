// SPDX-License-Identifier: MIT
/*
 * policy — what a sandbox may reach through the egress proxy. The operator
 * sets the ceiling (--egress-allow), pins names to addresses
 * (--egress-resolve) and adds headers to plain-HTTP requests for a host
 * (--egress-header); an execution or a session asks for an allow list
 * within the ceiling. Patterns: "host", "host:port", "*.domain",
 * "*.domain:port", IP literals ("10.0.0.5:8080", "[fd00::1]:443"). A
 * pattern without a port means ports 80 and 443; "*.domain" means every
 * name below domain, not domain itself.
 *
 * Parsing and matching only: no I/O. Everything user-fed is capped.
 */
#ifndef SANDBOXD_EGRESS_POLICY_H
#define SANDBOXD_EGRESS_POLICY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "egress/host.h"
#include "util/error.h"

#define EGRESS_POLICY_MAX  64   /* patterns in one execution's allow list */
#define EGRESS_CEILING_MAX 256  /* --egress-allow, --egress-resolve, --egress-header each */
#define EGRESS_PATTERN_MAX 300  /* characters of one pattern */
#define EGRESS_HEADER_MAX  8192 /* characters of one --egress-header */

struct egress_pattern {
    struct egress_host host; /* for a wildcard, the domain after "*." */
    bool wildcard;
    uint16_t port; /* 0: ports 80 and 443 */
};

/* NULL on success, else why the pattern is malformed (static). */
const char *egress_pattern_parse(const char *s, size_t len, struct egress_pattern *ret);
bool egress_pattern_matches(const struct egress_pattern *p, const struct egress_host *h,
                            uint16_t port);
/* Does inner allow nothing that outer does not? */
bool egress_pattern_within(const struct egress_pattern *inner, const struct egress_pattern *outer);
/* The pattern as the operator would write it; buf of at least EGRESS_PATTERN_MAX bytes. */
void egress_pattern_format(const struct egress_pattern *p, char *buf, size_t len);

struct egress_pin {
    struct egress_host host;
    uint16_t port;
    struct sockaddr_storage addr;
    socklen_t addr_len;
};

struct egress_inject {
    struct egress_host host;
    uint16_t port;   /* 0: written without one, which means 80 (plain HTTP's own) */
    char *line;      /* "Name: value" (owned) */
    size_t name_len; /* of the name at the start of line */
};

/* Does --egress-header in go to a plain-HTTP request for h on port? Only to the host and port
 * it names: another service of the same host (another port) never sees the secret. */
bool egress_inject_applies(const struct egress_inject *in, const struct egress_host *h,
                           uint16_t port);
/* "host:port" (brackets for IPv6), what /healthz shows of it; buf of EGRESS_PATTERN_MAX. */
void egress_inject_format(const struct egress_inject *in, char *buf, size_t len);
/* An RFC 9110 token character (header names, methods). */
bool egress_tchar(unsigned char c);

/* The operator's configuration; read-only once built. */
struct egress_config {
    struct egress_pattern *ceiling;
    size_t n_ceiling;
    struct egress_pin *pins;
    size_t n_pins;
    struct egress_inject *injects;
    size_t n_injects;
};

/* Build from the option values (NULL-terminated lists, any may be NULL). 0, or -EINVAL with
 * *ret_why naming the bad value (caller frees). */
int egress_config_init(struct egress_config *cfg, const char *const *allow,
                       const char *const *resolve, const char *const *headers, char **ret_why);
void egress_config_done(struct egress_config *cfg);
/* The --egress-resolve entry for host:port, or NULL. */
const struct egress_pin *egress_config_pin(const struct egress_config *cfg,
                                           const struct egress_host *h, uint16_t port);
/* The ceiling as an array of pattern strings (new reference). */
json_t *egress_config_ceiling_json(const struct egress_config *cfg);

/* One execution's or session's allow list. */
struct egress_policy {
    size_t n;
    struct egress_pattern pats[];
};

/* Check `allow` (a JSON array of pattern strings, as from taskDetails.network.allow) against
 * the ceiling. 0 and *ret (free with egress_policy_free); -EINVAL with *ret_why (caller
 * frees) when it is malformed or asks for more than the ceiling. */
int egress_policy_parse(const struct egress_config *cfg, json_t *allow, struct egress_policy **ret,
                        char **ret_why);
/* The same for a whole `network` member, {"allow": [patterns]}, the request's member field
 * (static: "network", "context.taskDetails.network"); cfg NULL: a server without
 * --egress-allow, which refuses every policy. 0 and *ret; -EINVAL with *err INVALID,
 * NETWORK_NOT_ALLOWED naming field and saying why ("FIELD: why"), or -ENOMEM (INTERNAL). */
int egress_network_parse(const struct egress_config *cfg, json_t *network, const char *field,
                         struct egress_policy **ret, struct sbx_error *err);
void egress_policy_free(struct egress_policy *p);
struct egress_policy *egress_policy_dup(const struct egress_policy *p);
bool egress_policy_allows(const struct egress_policy *p, const struct egress_host *h,
                          uint16_t port);
/* Is address sa on port named by an IP-literal pattern of the list (so it may be private)? A
 * pattern names its address on its own ports only ("10.0.0.5:8080": 8080; "10.0.0.5": 80 and
 * 443). */
bool egress_policy_names(const struct egress_policy *p, const struct sockaddr *sa, uint16_t port);
/* The allow list as pattern strings (new reference). */
json_t *egress_policy_json(const struct egress_policy *p);

#endif
