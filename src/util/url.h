// SPDX-License-Identifier: MIT
/*
 * url — URLs as sandboxd judges them. Parsing is libcurl's URL parser, the
 * one that later makes the connection, so what is checked is what is
 * reached (`http://127.0.0.1@evil/` names host evil, `http://2130706433/`
 * names 127.0.0.1). Allowlists hold URL prefixes matched on parsed parts:
 * scheme, host and port exactly, then the path on whole segments — never as
 * raw string prefixes, which `http://127.0.0.1.evil.com` would pass. And
 * the redaction of a URL for messages and logs: no userinfo, no query, no
 * fragment, whatever the string looks like.
 *
 * Used by the framework client (--framework-allow), the HTTP policy (Host
 * and Origin) and everything that puts a URL into a message.
 */
#ifndef SANDBOXD_UTIL_URL_H
#define SANDBOXD_UTIL_URL_H

#include <stdbool.h>
#include <stddef.h>

#define URL_MAX_LEN 4096 /* longer URLs are refused by the checks */

/* Host as libcurl reports it (brackets around IPv6 allowed): "localhost" (a trailing dot
 * allowed), an IPv4 address in 127.0.0.0/8, "::1", or an IPv4-mapped ::ffff:127.x.y.z. */
bool url_host_is_loopback(const char *host);

struct url_prefix;

/* Prefixes a URL must start with; an empty list admits http(s) URLs whose host is loopback.
 * Owned by the struct: url_allowlist_done() frees it. */
struct url_allowlist {
    struct url_prefix *v;
    size_t n;
};

/* Add "scheme://host[:port][/path]" (http or https; no userinfo, query or fragment). 0, or
 * -EINVAL with *ret_why (static) saying what is wrong, or -ENOMEM. */
int url_allowlist_add(struct url_allowlist *l, const char *prefix, const char **ret_why);
void url_allowlist_done(struct url_allowlist *l);
/* url is an http(s) URL that starts with one of the prefixes (scheme, host and port equal,
 * the path equal to the prefix's or below it on a '/' boundary, compared after
 * percent-decoding; a decoded path with "." or ".." segments never matches a prefix with a
 * path). With an empty list: an http(s) URL whose host is loopback. */
bool url_allowed(const struct url_allowlist *l, const char *url);

/* url without userinfo, query and fragment (caller frees; NULL when out of memory). Works on
 * any string: text that is not a URL loses what follows '?' or '#' and what precedes an '@'
 * before the first '/'. */
char *url_redact(const char *url);

#endif
