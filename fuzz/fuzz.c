// SPDX-License-Identifier: MIT
/*
 * fuzz — see fuzz.h.
 */
#include "fuzz.h"

#include <ftw.h>
#include <sanitizer/common_interface_defs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "proto/frame.h"
#include "util/log.h"

uint8_t fuzz_byte(struct fuzz_input *in)
{
    if (in->len == 0)
        return 0;
    in->len--;
    return *in->data++;
}

size_t fuzz_range(struct fuzz_input *in, size_t max)
{
    size_t v = 0;
    for (size_t span = max; span > 0; span >>= 8)
        v = v << 8 | fuzz_byte(in);
    return max == SIZE_MAX ? v : v % (max + 1);
}

const uint8_t *fuzz_split(struct fuzz_input *in, uint8_t sep, size_t *ret_len)
{
    const uint8_t *start = in->data;
    const uint8_t *end = in->len ? memchr(in->data, sep, in->len) : NULL;
    size_t n = end ? (size_t)(end - start) : in->len;
    *ret_len = n;
    in->data += n + (end ? 1 : 0);
    in->len -= n + (end ? 1 : 0);
    return start;
}

char *fuzz_strndup(const uint8_t *data, size_t len)
{
    char *s = malloc(len + 1);
    if (!s)
        fuzz_fail(__FILE__, __LINE__, "out of memory");
    if (len)
        memcpy(s, data, len);
    s[len] = '\0';
    return s;
}

void fuzz_fail(const char *file, int line, const char *what)
{
    /* Through the sanitizers' report channel: fuzz/run.sh discards the targets' own stderr
     * (-close_fd_mask=2, the logs), never that. */
    char msg[512];
    snprintf(msg, sizeof(msg), "%s:%d: property violated: %s", file, line, what);
    __sanitizer_report_error_summary(msg);
    abort();
}

bool fuzz_json_equal(const json_t *a, const json_t *b)
{
    return a && b && json_typeof(a) == json_typeof(b) && json_equal(a, b);
}

bool fuzz_json_valid_utf8(const json_t *v)
{
    if (json_is_string(v)) {
        json_t *copy = json_stringn(json_string_value(v), json_string_length(v));
        json_decref(copy);
        return copy != NULL;
    }
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            if (!fuzz_json_valid_utf8(json_array_get(v, i)))
                return false;
        return true;
    }
    if (json_is_object(v)) {
        const char *key;
        size_t key_len;
        json_t *member;
        json_object_keylen_foreach((json_t *)v, key, key_len, member)
        {
            json_t *k = json_stringn(key, key_len);
            json_decref(k);
            if (!k || !fuzz_json_valid_utf8(member))
                return false;
        }
    }
    return true;
}

void fuzz_frame_round_trip(const json_t *msg)
{
    char *data;
    size_t len;
    FUZZ_CHECK(frame_encode(msg, &data, &len) == 0);
    struct frame_reader fr;
    frame_reader_init(&fr, len);
    json_t *back = NULL;
    const char *why = NULL;
    int r = 0;
    for (size_t off = 0; off < len && r >= 0; off += FRAME_READ_CHUNK) {
        size_t n = len - off < FRAME_READ_CHUNK ? len - off : FRAME_READ_CHUNK;
        r = frame_reader_feed(&fr, data + off, n);
        if (r == 0 && off + n == len)
            r = frame_reader_next(&fr, &back, &why);
    }
    FUZZ_CHECK(r == 1 && fuzz_json_equal(msg, back));
    json_decref(back);
    frame_reader_done(&fr);
    free(data);
}

static char fuzz_dir[64];

static int fuzz_remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    return remove(path) < 0 ? -1 : 0;
}

static void fuzz_remove_tmpdir(void)
{
    (void)nftw(fuzz_dir, fuzz_remove_one, 8, FTW_DEPTH | FTW_PHYS); /* best effort, at exit */
}

const char *fuzz_tmpdir(void)
{
    if (fuzz_dir[0])
        return fuzz_dir;
    snprintf(fuzz_dir, sizeof(fuzz_dir), "/tmp/sandboxd-fuzz.XXXXXX");
    if (!mkdtemp(fuzz_dir))
        fuzz_fail(__FILE__, __LINE__, "cannot create a temporary directory");
    atexit(fuzz_remove_tmpdir);
    return fuzz_dir;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    log_set_level(LOG_DEBUG);
    if (fuzz_init)
        fuzz_init();
    return 0;
}
