// SPDX-License-Identifier: MIT
/*
 * head — the HTTP side of the egress proxy: parse what a sandbox sends as a
 * proxy client (a CONNECT host:port, or a request with an absolute http://
 * URI), build the head that goes upstream in its place, and find where a
 * request's body ends so that nothing after it (a pipelined second request
 * with another Host) ever reaches the upstream. Parsing is libhttp-parser's
 * (strict: conflicting Content-Length and Transfer-Encoding, bad chunk
 * sizes and malformed heads are errors). No I/O, no logging.
 */
#ifndef SANDBOXD_EGRESS_HEAD_H
#define SANDBOXD_EGRESS_HEAD_H

#include <http_parser.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "egress/host.h"
#include "egress/policy.h"

#define EGRESS_HEAD_MAX   (16u << 10) /* bytes of a request head */
#define EGRESS_HEAD_LINES 100         /* header fields of a request */

struct egress_field {
    const char *name, *value; /* into the parsed buffer */
    size_t name_len, value_len;
};

struct egress_head {
    bool tunnel; /* CONNECT */
    char method[16];
    unsigned minor; /* HTTP/1.minor */
    struct egress_host host;
    uint16_t port;
    const char *path; /* origin-form (path and query) to send upstream; into the buffer */
    size_t path_len;
    struct egress_field fields[EGRESS_HEAD_LINES];
    size_t n_fields;
    bool body_done; /* the request ended with its head (no body) */
};

/* The methods forwarded (the Allow field of a 405). */
#define EGRESS_METHODS_ALLOWED "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, CONNECT"

/* Parse buf[0..len), a complete head (through the blank line), with parser (initialised by
 * this call; keep it to follow the body with egress_body_feed). 0 and *ret (pointing into
 * buf), or the HTTP status to answer (400, 405, 431, 501) with *ret_why (static); ret->method
 * is set whenever the request line had a method token. */
int egress_head_parse(http_parser *parser, const char *buf, size_t len, struct egress_head *ret,
                      const char **ret_why);
/* The head for the upstream: origin-form request line, Host from the URI, the client's fields
 * without hop-by-hop and Proxy-* ones, cfg's --egress-header lines for the host and port, and
 * "Connection: close". Caller frees; NULL when out of memory. *ret_injected (may be NULL):
 * how many of the bytes are the operator's lines, which the sandbox's byte counts leave out
 * (they would tell it the secret's length). */
char *egress_head_build(const struct egress_head *h, const struct egress_config *cfg,
                        size_t *ret_len, size_t *ret_injected);
/* Follow the body: of data[0..len), *ret_used bytes belong to the request; *ret_done when it
 * ended there. -EBADMSG when the body is malformed (a bad chunk). */
int egress_body_feed(http_parser *parser, const char *data, size_t len, size_t *ret_used,
                     bool *ret_done);

#endif
