// SPDX-License-Identifier: MIT
/*
 * recent — the egress proxy's last EGRESS_RECENT_MAX decisions, for the operator's /healthz
 * (egress.recent, newest first) and the console's Operate part. A ring of fixed-size entries,
 * allocated once: the proxy's loop writes one where it logs a decision (conn.c, when the
 * connection closes, so its bytes are final), any thread reads them under the ring's lock.
 *
 * Whatever came from outside (a request id as label, the method and host a sandbox sent, a
 * reason that quotes them) is stored as valid UTF-8 — bytes that are not are written \xHH, as
 * the log writes them — and cut at a character to its cap below, ending in "…" when cut. It
 * never holds more than the caps, never allocates on the loop's path but to escape bytes that
 * are not UTF-8, and never decides anything: what it shows is what the log says.
 */
#ifndef SANDBOXD_EGRESS_RECENT_H
#define SANDBOXD_EGRESS_RECENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define EGRESS_RECENT_MAX        64  /* decisions kept */
#define EGRESS_RECENT_LABEL_MAX  128 /* bytes of the execution's or session's label */
#define EGRESS_RECENT_TENANT_MAX 64  /* a tenant's name (path_check_name: 1-64) */
#define EGRESS_RECENT_HOST_MAX   253 /* a host name (EGRESS_NAME_MAX) or an address */
#define EGRESS_RECENT_REASON_MAX 256 /* the reason or failure */

/* One decision as the proxy knows it when it logs it; every text borrowed, NULL for none. */
struct egress_decision {
    int64_t time_ms;    /* when the request came (wall clock, ms since the epoch) */
    double duration_ms; /* from then to the connection's end */
    const char *label;  /* whose: the request id, or "session ID" */
    const char *tenant; /* NULL: the operator's */
    bool denied;
    const char *method;
    const char *host; /* NULL or "": the request named none (it did not parse) */
    uint16_t port;    /* 0: none */
    const char *reason;
    uint64_t bytes_up, bytes_down;
};

struct egress_recent;

/* An empty ring, or NULL when out of memory. */
struct egress_recent *egress_recent_new(void);
/* NULL is a no-op. */
void egress_recent_free(struct egress_recent *r);
/* Keep d (its texts copied as said above), dropping the oldest when full. Any thread. */
void egress_recent_add(struct egress_recent *r, const struct egress_decision *d);
/* [{time, execution, tenant, decision, method, host, port, reason, bytesUp, bytesDown,
 * durationMs}], newest first (new reference), or NULL when out of memory. Any thread. */
json_t *egress_recent_json(struct egress_recent *r);

#endif
