// SPDX-License-Identifier: MIT
/*
 * frame — see frame.h.
 */
#include "proto/frame.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/fdio.h"
#include "util/jdump.h"

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
        frame_length((const unsigned char *)fr->in.data) > fr->max_frame)
        return -EMSGSIZE;
    return 0;
}

int frame_reader_next(struct frame_reader *fr, json_t **ret, const char **ret_error)
{
    *ret = NULL;
    if (fr->in.len < FRAME_HEADER_SIZE)
        return 0;
    uint32_t len = frame_length((const unsigned char *)fr->in.data);
    if (len > fr->max_frame) {
        *ret_error = "frame larger than the limit";
        return -EMSGSIZE;
    }
    if (fr->in.len - FRAME_HEADER_SIZE < len)
        return 0;
    json_error_t jerr;
    /* \u0000 is valid JSON: a function may return a string holding it, as a request may. */
    json_t *v = json_loadb(fr->in.data + FRAME_HEADER_SIZE, len,
                           JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    buf_consume(&fr->in, FRAME_HEADER_SIZE + (size_t)len);
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
