// SPDX-License-Identifier: MIT
/*
 * frame — see frame.h.
 */
#include "proto/frame.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto/jsonscan.h"
#include "util/fdio.h"
#include "util/jdump.h"
#include "util/macros.h"

void frame_reader_init(struct frame_reader *fr, size_t max_frame)
{
    fr->max_frame = max_frame;
    /* At most one incomplete frame plus one read chunk is ever buffered, because the
     * caller pops every complete frame after each feed. */
    buf_init(&fr->in, max_frame + FRAME_HEADER_SIZE + FRAME_READ_CHUNK);
}

void frame_reader_done(struct frame_reader *fr)
{
    buf_free(&fr->in);
}

static uint32_t frame_length(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int frame_reader_feed(struct frame_reader *fr, const void *data, size_t len)
{
    if (len > FRAME_READ_CHUNK)
        return -EINVAL;
    int r = buf_append(&fr->in, data, len);
    if (r < 0)
        return r == -E2BIG ? -EMSGSIZE : r;
    if (fr->in.len >= FRAME_HEADER_SIZE &&
        frame_length((const unsigned char *)fr->in.data) > fr->max_frame) {
        fr->refused_len = frame_length((const unsigned char *)fr->in.data);
        return -EMSGSIZE;
    }
    return 0;
}

void frame_raw_done(struct frame_raw *raw)
{
    if (!raw)
        return;
    free(raw->text);
    *raw = (struct frame_raw){0};
}

/* Drop the frame of len bytes at the front; a buffer grown for a large frame is given back
 * once it is empty, so a long-lived reader does not keep its largest frame's memory. */
static void frame_consume(struct frame_reader *fr, size_t len)
{
    buf_consume(&fr->in, FRAME_HEADER_SIZE + len);
    if (fr->in.len == 0 && fr->in.cap > 4 * FRAME_READ_CHUNK)
        buf_free(&fr->in);
}

int frame_reader_next_raw(struct frame_reader *fr, const char *const *raw_path, json_t **ret,
                          struct frame_raw *ret_raw, const char **ret_error)
{
    *ret = NULL;
    if (ret_raw)
        *ret_raw = (struct frame_raw){0};
    if (fr->in.len < FRAME_HEADER_SIZE)
        return 0;
    uint32_t len = frame_length((const unsigned char *)fr->in.data);
    if (len > fr->max_frame) {
        fr->refused_len = len;
        *ret_error = "frame larger than the limit";
        return -EMSGSIZE;
    }
    if (fr->in.len - FRAME_HEADER_SIZE < len)
        return 0;
    const char *text = fr->in.data + FRAME_HEADER_SIZE;
    struct jsonscan_result sr;
    const char *why = NULL;
    if (jsonscan(text, len, 0, ret_raw ? raw_path : NULL, &sr, &why) < 0) {
        frame_consume(fr, len);
        *ret_error = why ? why : "frame is not valid JSON";
        return -EBADMSG;
    }
    /* What will be parsed: everything but the raw member (which becomes one null). */
    struct jsonscan_counts tree = sr.total;
    if (sr.found) {
        tree.values -= sr.found_counts.values - 1;
        tree.containers -= sr.found_counts.containers;
        tree.members -= sr.found_counts.members;
        tree.strings -= sr.found_counts.strings;
        tree.string_bytes -= sr.found_counts.string_bytes;
    }
    size_t budget = (size_t)len * FRAME_TREE_FACTOR;
    if (budget < FRAME_TREE_FLOOR)
        budget = FRAME_TREE_FLOOR;
    if (jsonscan_tree_cost(&tree) > budget) {
        frame_consume(fr, len);
        *ret_error = "frame holds too many values for its size";
        return -E2BIG;
    }
    json_error_t jerr;
    json_t *v = sr.found ? jsonscan_load_without(text, len, sr.start, sr.end)
                         : json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (v && json_is_object(v) && sr.found) {
        /* The text of the member: the whole buffer when it holds just this frame (a final
         * frame, usually), else a copy. */
        size_t rlen = sr.end - sr.start;
        if (fr->in.len == FRAME_HEADER_SIZE + (size_t)len) {
            ret_raw->text = buf_take(&fr->in, NULL);
            ret_raw->off = FRAME_HEADER_SIZE + sr.start;
        } else if ((ret_raw->text = malloc(rlen + 1))) {
            memcpy(ret_raw->text, text + sr.start, rlen);
            ret_raw->text[rlen] = '\0';
        }
        ret_raw->len = rlen;
        if (!ret_raw->text) {
            json_decref(v);
            v = NULL;
        }
    }
    if (fr->in.data)
        frame_consume(fr, len);
    if (!v) {
        *ret_error = "frame is not valid JSON";
        return -EBADMSG;
    }
    if (!json_is_object(v)) {
        json_decref(v);
        *ret_error = "frame is not a JSON object";
        return -EBADMSG;
    }
    *ret = v;
    return 1;
}

bool frame_reader_ready(const struct frame_reader *fr)
{
    if (fr->in.len < FRAME_HEADER_SIZE)
        return false;
    uint32_t len = frame_length((const unsigned char *)fr->in.data);
    return len > fr->max_frame || fr->in.len - FRAME_HEADER_SIZE >= len;
}

int frame_reader_next(struct frame_reader *fr, json_t **ret, const char **ret_error)
{
    return frame_reader_next_raw(fr, NULL, ret, NULL, ret_error);
}

int frame_encode(const json_t *msg, char **ret, size_t *ret_len)
{
    struct buf b;
    buf_init(&b, (size_t)UINT32_MAX + FRAME_HEADER_SIZE);
    static const char header[FRAME_HEADER_SIZE] = {0};
    int r = buf_append(&b, header, sizeof(header));
    if (r == 0)
        r = jdump_buf(msg, JSON_COMPACT, &b);
    if (r < 0) {
        buf_free(&b);
        return r == -ENOMEM ? r : -EINVAL;
    }
    size_t len;
    char *out = buf_take(&b, &len);
    size_t need = len - FRAME_HEADER_SIZE;
    out[0] = (char)(need >> 24);
    out[1] = (char)(need >> 16);
    out[2] = (char)(need >> 8);
    out[3] = (char)need;
    *ret = out;
    *ret_len = len;
    return 0;
}

int frame_write(int fd, const json_t *msg, int64_t deadline_us)
{
    char *data;
    size_t len;
    int r = frame_encode(msg, &data, &len);
    if (r < 0)
        return r;
    r = fd_write_all(fd, data, len, deadline_us);
    free(data);
    return r;
}
