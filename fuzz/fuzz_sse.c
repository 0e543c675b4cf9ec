// SPDX-License-Identifier: MIT
/*
 * fuzz_sse — the Server-Sent Events reader (mcpclient/sse.c) that reads the
 * answers of MCP Streamable HTTP servers. Differential: a stream fed in
 * pieces of any size (as libcurl hands them over, a CRLF split between two)
 * gives the same events, last event id and retry time as the stream fed at
 * once, and both agree with a plain reading of the standard written here
 * (HTML Living Standard, "interpreting an event stream"). A reader whose
 * callback stops it has delivered a prefix; a reader with a small cap
 * stops with -E2BIG exactly when a line or an event's data is over it.
 *
 * Input: a byte for the cap, one for the piece sizes, then the stream.
 */
#include <string.h>

#include "fuzz.h"
#include "mcpclient/sse.h"

#define BIG_CAP (1u << 20)

struct seen {
    json_t *events;
    size_t stop_after; /* 0: never stop */
};

static bool on_event(void *userdata, const char *data, size_t len)
{
    struct seen *s = userdata;
    FUZZ_CHECK(len > 0 && data[len] == '\0');
    json_array_append_new(s->events, json_stringn_nocheck(data, len));
    return s->stop_after && json_array_size(s->events) >= s->stop_after;
}

/* ---- the standard, read plainly ---- */

struct model {
    json_t *events;
    struct buf data;
    char *type;
    size_t type_len;
    char last_id[SSE_MAX_EVENT_ID + 1];
    long retry_ms;
    size_t max_line, max_data;
};

static void model_dispatch(struct model *m)
{
    if (m->data.len > 0) {
        m->data.len--; /* the last "\n" */
        bool message = m->type_len == 0 || (m->type_len == 7 && !memcmp(m->type, "message", 7));
        if (m->data.len > 0 && message)
            json_array_append_new(m->events, json_stringn_nocheck(m->data.data, m->data.len));
    }
    buf_reset(&m->data);
    free(m->type);
    m->type = NULL;
    m->type_len = 0;
}

static void model_line(struct model *m, const char *line, size_t len)
{
    if (len == 0) {
        model_dispatch(m);
        return;
    }
    if (line[0] == ':')
        return;
    const char *colon = memchr(line, ':', len);
    size_t flen = colon ? (size_t)(colon - line) : len;
    const char *v = colon ? colon + 1 : line + len;
    size_t vlen = len - (size_t)(v - line);
    if (vlen > 0 && v[0] == ' ') {
        v++;
        vlen--;
    }
    if (flen == 4 && !memcmp(line, "data", 4)) {
        FUZZ_CHECK(buf_append(&m->data, v, vlen) == 0 && buf_append(&m->data, "\n", 1) == 0);
        m->max_data = m->data.len > m->max_data ? m->data.len : m->max_data;
    } else if (flen == 5 && !memcmp(line, "event", 5)) {
        free(m->type);
        m->type = fuzz_strndup((const uint8_t *)v, vlen);
        m->type_len = vlen;
    } else if (flen == 2 && !memcmp(line, "id", 2)) {
        if (!memchr(v, '\0', vlen) && vlen <= SSE_MAX_EVENT_ID) {
            memcpy(m->last_id, v, vlen);
            m->last_id[vlen] = '\0';
        }
    } else if (flen == 5 && !memcmp(line, "retry", 5)) {
        bool digits = vlen > 0;
        long ms = 0;
        for (size_t i = 0; i < vlen && digits; i++) {
            digits = v[i] >= '0' && v[i] <= '9';
            ms = ms > SSE_MAX_RETRY_MS ? ms : ms * 10 + (v[i] - '0');
        }
        if (digits)
            m->retry_ms = ms < SSE_MAX_RETRY_MS ? ms : SSE_MAX_RETRY_MS;
    }
}

static void model_read(struct model *m, const char *p, size_t n)
{
    *m = (struct model){.events = json_array(), .retry_ms = -1};
    buf_init(&m->data, BIG_CAP);
    size_t i = 0;
    while (i < n) {
        size_t j = i;
        while (j < n && p[j] != '\r' && p[j] != '\n')
            j++;
        m->max_line = j - i > m->max_line ? j - i : m->max_line;
        if (j == n)
            break; /* an unfinished line is not read */
        model_line(m, p + i, j - i);
        if (p[j] == '\r' && j + 1 < n && p[j + 1] == '\n')
            j++;
        i = j + 1;
    }
}

static void model_done(struct model *m)
{
    json_decref(m->events);
    buf_free(&m->data);
    free(m->type);
}

/* ---- the reader ---- */

static int read_in_pieces(struct sse_reader *r, const char *p, size_t n, unsigned pattern,
                          struct seen *s)
{
    int ret = 0;
    for (size_t off = 0, i = 0; off < n && ret == 0; i++) {
        size_t k = pattern == 0 ? n : 1 + (pattern * (i + 3)) % 13;
        k = k < n - off ? k : n - off;
        ret = sse_reader_feed(r, p + off, k, on_event, s);
        off += k;
    }
    return ret;
}

static bool is_prefix(json_t *a, json_t *b)
{
    if (json_array_size(a) > json_array_size(b))
        return false;
    for (size_t i = 0; i < json_array_size(a); i++)
        if (!json_equal(json_array_get(a, i), json_array_get(b, i)))
            return false;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in = {data, size};
    size_t cap = 1 + 2 * (size_t)fuzz_byte(&in);
    unsigned pattern = fuzz_byte(&in);
    const char *p = (const char *)in.data;
    size_t n = in.len;

    struct model m;
    model_read(&m, p, n);

    /* at once, then in pieces: the same as the standard says */
    for (unsigned pass = 0; pass < 2; pass++) {
        struct sse_reader r;
        struct seen s = {.events = json_array()};
        sse_reader_init(&r, BIG_CAP);
        FUZZ_CHECK(read_in_pieces(&r, p, n, pass ? pattern | 1 : 0, &s) == 0);
        FUZZ_CHECK(json_equal(s.events, m.events));
        FUZZ_CHECK(strcmp(r.last_id, m.last_id) == 0 && r.retry_ms == m.retry_ms);
        /* a new stream keeps the id and the retry time */
        sse_reader_rewind(&r);
        FUZZ_CHECK(strcmp(r.last_id, m.last_id) == 0 && r.retry_ms == m.retry_ms);
        sse_reader_done(&r);
        json_decref(s.events);
    }

    /* stopped by the callback: a prefix, and nothing after it */
    size_t events = json_array_size(m.events);
    if (events > 0) {
        struct sse_reader r;
        struct seen s = {.events = json_array(), .stop_after = 1 + pattern % events};
        sse_reader_init(&r, BIG_CAP);
        FUZZ_CHECK(read_in_pieces(&r, p, n, pattern, &s) == 1);
        FUZZ_CHECK(json_array_size(s.events) == s.stop_after && is_prefix(s.events, m.events));
        sse_reader_done(&r);
        json_decref(s.events);
    }

    /* a small cap: refused exactly when something is over it */
    struct sse_reader r;
    struct seen s = {.events = json_array()};
    sse_reader_init(&r, cap);
    int ret = read_in_pieces(&r, p, n, pattern, &s);
    bool over = m.max_line > cap || m.max_data > cap;
    FUZZ_CHECK(ret == (over ? -E2BIG : 0) && is_prefix(s.events, m.events));
    FUZZ_CHECK(over || json_equal(s.events, m.events));
    sse_reader_done(&r);
    json_decref(s.events);
    model_done(&m);
    return 0;
}
