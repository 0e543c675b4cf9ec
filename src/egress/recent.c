// SPDX-License-Identifier: MIT
/*
 * recent — see recent.h. The ring's entries are plain arrays of bytes, so that keeping a
 * decision copies at most a few hundred bytes and reading the ring builds JSON outside the
 * loop; the lock is held only to copy in, or to copy the entries out.
 */
#include "egress/recent.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"
#include "util/utf8.h"

struct recent_entry {
    int64_t time_ms;
    double duration_ms;
    bool denied;
    uint16_t port;
    uint64_t bytes_up, bytes_down;
    /* valid UTF-8, NUL-terminated; "" for none */
    char label[EGRESS_RECENT_LABEL_MAX + 1];
    char tenant[EGRESS_RECENT_TENANT_MAX + 1];
    char method[16];
    char host[EGRESS_RECENT_HOST_MAX + 1];
    char reason[EGRESS_RECENT_REASON_MAX + 1];
};

struct egress_recent {
    pthread_mutex_t lock;
    unsigned next; /* where the next decision goes */
    unsigned n;    /* kept, at most EGRESS_RECENT_MAX */
    struct recent_entry e[EGRESS_RECENT_MAX];
};

struct egress_recent *egress_recent_new(void)
{
    struct egress_recent *r = calloc(1, sizeof(*r));
    if (r)
        pthread_mutex_init(&r->lock, NULL);
    return r;
}

void egress_recent_free(struct egress_recent *r)
{
    if (!r)
        return;
    pthread_mutex_destroy(&r->lock);
    free(r);
}

/* s (any bytes; NULL: none) into dst[size] as valid UTF-8: what is not UTF-8 written \xHH as
 * the log does (utf8_escape), then cut at a character, with "…" where it was cut. */
static void recent_text(char *dst, size_t size, const char *s)
{
    static const char cut_mark[] = "\xE2\x80\xA6"; /* U+2026 */
    dst[0] = '\0';
    if (!s)
        return;
    size_t len = strlen(s);
    char *escaped = NULL;
    if (!utf8_valid(s, len)) {
        escaped = utf8_escape(s, len, &len);
        if (!escaped) {
            /* Out of memory: say so rather than keep bytes that are not text. */
            recent_text(dst, size, "(not UTF-8; out of memory to show it)");
            return;
        }
        s = escaped;
    }
    if (len < size) {
        memcpy(dst, s, len + 1);
    } else {
        size_t n = utf8_cut(s, len, size - sizeof(cut_mark));
        memcpy(dst, s, n);
        memcpy(dst + n, cut_mark, sizeof(cut_mark)); /* and its NUL */
    }
    free(escaped);
}

void egress_recent_add(struct egress_recent *r, const struct egress_decision *d)
{
    struct recent_entry e = {
        .time_ms = d->time_ms,
        .duration_ms = d->duration_ms,
        .denied = d->denied,
        .port = d->port,
        .bytes_up = d->bytes_up,
        .bytes_down = d->bytes_down,
    };
    recent_text(e.label, sizeof(e.label), d->label);
    recent_text(e.tenant, sizeof(e.tenant), d->tenant);
    recent_text(e.method, sizeof(e.method), d->method);
    recent_text(e.host, sizeof(e.host), d->host);
    recent_text(e.reason, sizeof(e.reason), d->reason);
    pthread_mutex_lock(&r->lock);
    r->e[r->next] = e;
    r->next = (r->next + 1) % EGRESS_RECENT_MAX;
    if (r->n < EGRESS_RECENT_MAX)
        r->n++;
    pthread_mutex_unlock(&r->lock);
}

/* "" is none: JSON null. */
static json_t *recent_str(const char *s)
{
    return s[0] ? json_string(s) : json_null();
}

static json_t *recent_entry_json(const struct recent_entry *e)
{
    char when[CLOCK_ISO_SIZE];
    clock_iso_ms(e->time_ms, when);
    return json_pack("{s:s, s:o, s:o, s:s, s:o, s:o, s:o, s:o, s:I, s:I, s:f}", "time", when,
                     "execution", recent_str(e->label), "tenant", recent_str(e->tenant), "decision",
                     e->denied ? "denied" : "allowed", "method", recent_str(e->method), "host",
                     recent_str(e->host), "port", e->port ? json_integer(e->port) : json_null(),
                     "reason", recent_str(e->reason), "bytesUp", (json_int_t)e->bytes_up,
                     "bytesDown", (json_int_t)e->bytes_down, "durationMs", e->duration_ms);
}

json_t *egress_recent_json(struct egress_recent *r)
{
    /* Copied out under the lock (at most 64 entries of under 1 KiB), turned into JSON after. */
    struct recent_entry *copy = malloc(sizeof(r->e));
    json_t *list = json_array();
    if (!copy || !list) {
        free(copy);
        json_decref(list);
        return NULL;
    }
    pthread_mutex_lock(&r->lock);
    unsigned n = r->n, newest = (r->next + EGRESS_RECENT_MAX - 1) % EGRESS_RECENT_MAX;
    for (unsigned i = 0; i < n; i++)
        copy[i] = r->e[(newest + EGRESS_RECENT_MAX - i) % EGRESS_RECENT_MAX];
    pthread_mutex_unlock(&r->lock);
    for (unsigned i = 0; list && i < n; i++)
        if (json_array_append_new(list, recent_entry_json(&copy[i])) < 0) {
            json_decref(list); /* not a list that leaves a decision out */
            list = NULL;
        }
    free(copy);
    return list;
}
