// SPDX-License-Identifier: MIT
/*
 * fuzz — what the libFuzzer targets of fuzz/ share: taking typed values off
 * the front of an input (so one input drives several choices), checking a
 * property (a failed check aborts, which libFuzzer reports as a crash with
 * the input that caused it), and the process set-up every target wants.
 * Test code only: linked into the fuzz targets, never into sandboxd.
 */
#ifndef SANDBOXD_FUZZ_FUZZ_H
#define SANDBOXD_FUZZ_FUZZ_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The input being consumed: bytes are taken from the front; what is left is the payload. */
struct fuzz_input {
    const uint8_t *data;
    size_t len;
};

/* The next byte, or 0 when the input is exhausted. */
uint8_t fuzz_byte(struct fuzz_input *in);
/* A number in [0, max], from as many bytes as max needs (0 when exhausted). */
size_t fuzz_range(struct fuzz_input *in, size_t max);
/* Up to the next `sep` byte (not included; it is consumed): a piece of the input and its length.
 * Without a separator, everything that is left. */
const uint8_t *fuzz_split(struct fuzz_input *in, uint8_t sep, size_t *ret_len);
/* A NUL-terminated copy of len bytes (caller frees); aborts when out of memory. */
char *fuzz_strndup(const uint8_t *data, size_t len);

/* Abort with a message naming the failed property when cond is false. */
#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond))                                                                               \
            fuzz_fail(__FILE__, __LINE__, #cond);                                                  \
    } while (0)
_Noreturn void fuzz_fail(const char *file, int line, const char *what);

/* a and b hold equal JSON values (a real and an integer are never equal; neither is NULL). */
bool fuzz_json_equal(const json_t *a, const json_t *b);
/* Every string of v (keys and values, at any depth) is valid UTF-8 by jansson's own check. */
bool fuzz_json_valid_utf8(const json_t *v);

/* msg written as a runtime frame (proto/frame.c) reads back as an equal value. */
void fuzz_frame_round_trip(const json_t *msg);

/* A private temporary directory, made on first use and removed at exit. */
const char *fuzz_tmpdir(void);

/* What each target defines: libFuzzer calls it with every input. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* What a target may define: set-up once per process, after fuzz.c's own (logging at debug
 * level, so that every message a finding provokes is formatted too; fuzz/run.sh discards the
 * targets' stderr with -close_fd_mask=2). */
void fuzz_init(void) __attribute__((weak));

#endif
