// SPDX-License-Identifier: MIT
/*
 * frame — the host side of the runtime protocol: 4-byte big-endian length,
 * then one UTF-8 JSON object. The reader is incremental (feed whatever
 * read() returned, pop complete frames) and bounded: a frame announcing
 * more than max_frame bytes is an error before any of it is buffered.
 * Everything arriving here comes from a sandbox and is untrusted.
 *
 * Memory: a frame is validated (proto/jsonscan.h) before it is parsed, and
 * refused when its parsed form would cost more than max(FRAME_TREE_FACTOR x
 * its size, FRAME_TREE_FLOOR); so holding a frame costs at most its bytes
 * plus that. One member (a result's data) may instead be handed over as
 * validated text, never parsed: a large result then costs its bytes once.
 */
#ifndef SANDBOXD_PROTO_FRAME_H
#define SANDBOXD_PROTO_FRAME_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

#define FRAME_HEADER_SIZE 4
#define FRAME_READ_CHUNK  65536       /* most bytes fed at once */
#define FRAME_TREE_FACTOR 4           /* a parsed frame may cost this many times its size ... */
#define FRAME_TREE_FLOOR  (16u << 20) /* ... or this much, whichever is more */

struct frame_reader {
    struct buf in;
    size_t max_frame;
    size_t refused_len; /* the length a frame refused as too large announced */
};

/* A member kept as JSON text: text[off, off + len) of the owned buffer text. */
struct frame_raw {
    char *text;
    size_t off, len;
};

/* Free the text; NULL-safe, leaves *raw empty. */
void frame_raw_done(struct frame_raw *raw);
static inline const char *frame_raw_data(const struct frame_raw *raw)
{
    return raw->text ? raw->text + raw->off : NULL;
}

void frame_reader_init(struct frame_reader *fr, size_t max_frame);
void frame_reader_done(struct frame_reader *fr);
/* Buffer at most FRAME_READ_CHUNK bytes of input, then pop every complete frame before
 * feeding again. -EMSGSIZE when the pending frame exceeds the limit. */
int frame_reader_feed(struct frame_reader *fr, const void *data, size_t len);
/* 1 and a new reference in *ret when a frame is complete; 0 when more input is needed;
 * -EMSGSIZE (frame too large), -EBADMSG (not a JSON object; *ret_error says why, static),
 * -E2BIG (its parsed form would be too large for its size; *ret_error says so). */
int frame_reader_next(struct frame_reader *fr, json_t **ret, const char **ret_error);
/* The same; when raw_path (a NULL-terminated list of member names from the top) names a member
 * the frame has, that member's value is not parsed: it is null in *ret and its validated text is
 * handed over in *ret_raw (call frame_raw_done). *ret_raw is left empty otherwise. */
int frame_reader_next_raw(struct frame_reader *fr, const char *const *raw_path, json_t **ret,
                          struct frame_raw *ret_raw, const char **ret_error);
/* True when frame_reader_next() has something to say without more input: a complete frame is
 * buffered, or one announcing more than the limit. */
bool frame_reader_ready(const struct frame_reader *fr);
/* Encode msg as one frame (caller frees *ret). */
int frame_encode(const json_t *msg, char **ret, size_t *ret_len);
/* Encode and write; deadline as in fd_write_all. */
int frame_write(int fd, const json_t *msg, int64_t deadline_us);

#endif
