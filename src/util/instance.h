// SPDX-License-Identifier: MIT
/*
 * instance — the name of one sandboxd among several behind a load balancer
 * (`--instance-id`, CONTRACT §11). Session ids and MCP session ids begin
 * with "ID." so that a proxy can send them to the instance that holds them,
 * and every HTTP response names its instance in X-Sandboxd-Instance.
 *
 * An id is a short DNS label (letters, digits and '-', neither first nor
 * last): it must be usable as a header value, a URL path segment, an HAProxy
 * server name and a DNS name, must not contain the '.' that ends it inside a
 * session id, and must leave a session id ("ID." + 32 hex digits) within 64
 * characters. Pure functions but instance_id_default(); called by
 * cmd/serve.c at start-up.
 */
#ifndef SANDBOXD_UTIL_INSTANCE_H
#define SANDBOXD_UTIL_INSTANCE_H

#define INSTANCE_ID_MAX 31

/* NULL when id is a valid instance id, else a static sentence saying why not. */
const char *instance_id_check(const char *id);

/* The id the host name host stands for: its first label when that is a valid id. Otherwise
 * (too long, characters outside the set, empty) the label with each such character replaced
 * by '-', cut to 22 characters, then '-' and 8 hex digits of a hash of the whole host name,
 * so that two long names that share a beginning still differ. Always a valid id. */
void instance_id_from_host(const char *host, char ret[INSTANCE_ID_MAX + 1]);

/* instance_id_from_host() of this machine's host name. 0, or -errno from gethostname(). */
int instance_id_default(char ret[INSTANCE_ID_MAX + 1]);

#endif
