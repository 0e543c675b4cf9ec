// SPDX-License-Identifier: MIT
/*
 * frame — the host side of the runtime protocol: 4-byte big-endian length,
 * then one UTF-8 JSON object. The reader is incremental (feed whatever
 * read() returned, pop complete frames) and bounded: a frame announcing
 * more than max_frame bytes is an error before any of it is buffered.
 * Everything arriving here comes from a sandbox and is untrusted.
 */
#ifndef SANDBOXD_PROTO_FRAME_H
#define SANDBOXD_PROTO_FRAME_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

#define FRAME_HEADER_SIZE 4
#define FRAME_READ_CHUNK  65536 /* most bytes fed at once */

struct frame_reader {
    struct buf in;
    size_t max_frame;
};

void frame_reader_init(struct frame_reader *fr, size_t max_frame);
void frame_reader_done(struct frame_reader *fr);
/* Buffer at most FRAME_READ_CHUNK bytes of input, then pop every complete frame before
 * feeding again. -EMSGSIZE when the pending frame exceeds the limit. */
int frame_reader_feed(struct frame_reader *fr, const void *data, size_t len);
/* 1 and a new reference in *ret when a frame is complete; 0 when more input is needed;
 * -EMSGSIZE (frame too large), -EBADMSG (not a JSON object; *ret_error says why, static). */
int frame_reader_next(struct frame_reader *fr, json_t **ret, const char **ret_error);
/* Encode msg as one frame (caller frees *ret). */
int frame_encode(const json_t *msg, char **ret, size_t *ret_len);
/* Encode and write; deadline as in fd_write_all. */
int frame_write(int fd, const json_t *msg, int64_t deadline_us);

#endif
