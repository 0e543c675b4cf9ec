// SPDX-License-Identifier: MIT
/*
 * sse — see sse.h.
 */
#include "mcpclient/sse.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

void sse_reader_init(struct sse_reader *r, size_t max)
{
    *r = (struct sse_reader){.retry_ms = -1};
    buf_init(&r->line, max);
    buf_init(&r->data, max);
}

void sse_reader_done(struct sse_reader *r)
{
    buf_free(&r->line);
    buf_free(&r->data);
}

void sse_reader_rewind(struct sse_reader *r)
{
    r->after_cr = false;
    r->other_type = false;
    buf_reset(&r->line);
    buf_reset(&r->data);
}

/* A blank line ends the event. 1 when fn asked to stop. */
static int sse_dispatch(struct sse_reader *r, sse_event_fn fn, void *userdata)
{
    bool stop = false;
    if (r->data.len > 0)
        r->data.data[--r->data.len] = '\0'; /* the last data line's "\n" */
    /* An event with empty data is a "priming" event (it only carries an id) or a keep-alive. */
    if (r->data.len > 0 && !r->other_type)
        stop = fn(userdata, r->data.data, r->data.len);
    buf_reset(&r->data);
    r->other_type = false;
    return stop ? 1 : 0;
}

/* One complete line (without its end). 1 when fn asked to stop, -E2BIG over the cap. */
static int sse_line(struct sse_reader *r, sse_event_fn fn, void *userdata)
{
    const char *line = r->line.data ? r->line.data : "";
    size_t len = r->line.len;
    if (len == 0)
        return sse_dispatch(r, fn, userdata);
    if (line[0] == ':')
        return 0; /* comment */
    const char *colon = memchr(line, ':', len);
    size_t flen = colon ? (size_t)(colon - line) : len;
    const char *value = colon ? colon + 1 : line + len;
    size_t vlen = len - (size_t)(value - line);
    if (vlen && *value == ' ') {
        value++;
        vlen--;
    }
    if (flen == 4 && memcmp(line, "data", 4) == 0) {
        if (buf_append(&r->data, value, vlen) < 0 || buf_append(&r->data, "\n", 1) < 0)
            return -E2BIG;
    } else if (flen == 5 && memcmp(line, "event", 5) == 0) {
        /* compared by length: "message\0..." is another type */
        r->other_type = vlen != 0 && !(vlen == 7 && memcmp(value, "message", 7) == 0);
    } else if (flen == 2 && memcmp(line, "id", 2) == 0) {
        if (vlen <= SSE_MAX_EVENT_ID && !memchr(value, '\0', vlen))
            snprintf(r->last_id, sizeof(r->last_id), "%.*s", (int)vlen, value);
    } else if (flen == 5 && memcmp(line, "retry", 5) == 0) {
        /* Only ASCII digits set it; any number of them (a large one is cut to the cap). */
        long ms = 0;
        size_t i = 0;
        for (; i < vlen && value[i] >= '0' && value[i] <= '9'; i++)
            ms = ms > SSE_MAX_RETRY_MS ? ms : ms * 10 + (value[i] - '0');
        if (vlen && i == vlen)
            r->retry_ms = ms < SSE_MAX_RETRY_MS ? ms : SSE_MAX_RETRY_MS;
    }
    return 0;
}

int sse_reader_feed(struct sse_reader *r, const char *p, size_t n, sse_event_fn fn, void *userdata)
{
    while (n > 0) {
        if (r->after_cr) {
            r->after_cr = false;
            if (*p == '\n') {
                p++;
                n--;
                continue;
            }
        }
        size_t i = 0;
        while (i < n && p[i] != '\r' && p[i] != '\n')
            i++;
        if (buf_append(&r->line, p, i) < 0)
            return -E2BIG;
        if (i == n)
            return 0;
        r->after_cr = p[i] == '\r';
        int s = sse_line(r, fn, userdata);
        buf_reset(&r->line);
        if (s != 0)
            return s;
        p += i + 1;
        n -= i + 1;
    }
    return 0;
}
