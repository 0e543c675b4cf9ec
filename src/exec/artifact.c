// SPDX-License-Identifier: MIT
/*
 * artifact — see artifact.h.
 */
#include "exec/artifact.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/b64.h"
#include "util/log.h"
#include "util/path.h"

void artifact_set_done(struct artifact_set *s)
{
    json_decref(s->list);
    *s = (struct artifact_set){0};
}

/* "type/subtype" of RFC 6838 characters. */
static bool artifact_mime_ok(const char *m, size_t len)
{
    if (len == 0 || len > ARTIFACT_MAX_MIME)
        return false;
    size_t slashes = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)m[i];
        if (c == '/')
            slashes++;
        else if (!isalnum(c) && !strchr("!#$&^_.+-", c))
            return false;
    }
    return slashes == 1 && m[0] != '/' && m[len - 1] != '/';
}

json_t *artifact_set_add(struct artifact_set *s, const struct artifact_caps *caps, json_t *frame)
{
    json_t *a = json_object_get(frame, "artifact");
    json_t *name = json_object_get(a, "name");
    json_t *mime = json_object_get(a, "mimeType");
    json_t *data = json_object_get(a, "data");
    if (!json_is_string(name) || !json_is_string(mime) || !json_is_string(data) ||
        json_string_length(name) > ARTIFACT_MAX_NAME ||
        path_check_plain(json_string_value(name), json_string_length(name)) ||
        !artifact_mime_ok(json_string_value(mime), json_string_length(mime))) {
        s->invalid++;
        log_debug("artifact: a malformed display frame was dropped");
        return NULL;
    }
    /* Decoded to check it and to learn its real size; the text is what is kept. */
    size_t len = json_string_length(data);
    char *bytes = NULL;
    size_t n = 0;
    if (len % 4 != 0 || b64_decode(json_string_value(data), len, &bytes, &n) < 0) {
        s->invalid++;
        log_debug("artifact: '%s' is not valid base64; dropped", json_string_value(name));
        return NULL;
    }
    free(bytes);
    size_t count = s->list ? json_array_size(s->list) : 0;
    if (count >= caps->max_count || n > caps->max_bytes || s->bytes > caps->max_bytes - n) {
        s->dropped++;
        s->dropped_bytes += n;
        return NULL;
    }
    json_t *clean = json_pack("{s:O, s:O, s:O, s:I}", "name", name, "mimeType", mime, "data", data,
                              "size", (json_int_t)n);
    if (!clean || (!s->list && !(s->list = json_array())) ||
        json_array_append_new(s->list, clean) < 0) {
        s->dropped++;
        s->dropped_bytes += n;
        return NULL;
    }
    s->bytes += n;
    return clean;
}

void artifact_set_note_final(struct artifact_set *s, json_t *final)
{
    json_t *d = json_object_get(final, "artifactsDropped");
    json_int_t count = json_integer_value(json_object_get(d, "count"));
    json_int_t bytes = json_integer_value(json_object_get(d, "bytes"));
    if (count > 0 && count < INT32_MAX) {
        s->dropped += (size_t)count;
        if (bytes > 0)
            s->dropped_bytes += (size_t)bytes;
    }
}

int artifact_set_report(const struct artifact_set *s, const struct artifact_caps *caps, json_t *obj,
                        bool always)
{
    int r = 0;
    if (s->list && json_array_size(s->list))
        r = json_object_set(obj, "artifacts", s->list);
    else if (always)
        r = json_object_set_new(obj, "artifacts", json_array());
    if (r < 0)
        return -ENOMEM;
    if (!s->dropped && !s->invalid)
        return 0;
    char msg[512];
    if (s->dropped)
        snprintf(msg, sizeof(msg),
                 "%zu artifact(s) of %zu bytes were not returned: an execution returns at most "
                 "%zu artifacts and %zu bytes of them (--max-artifacts, --max-artifacts-mb)%s",
                 s->dropped, s->dropped_bytes, caps->max_count, caps->max_bytes,
                 s->invalid ? "; malformed ones were dropped too" : "");
    else
        snprintf(msg, sizeof(msg),
                 "%zu malformed artifact(s) were dropped (a name must be a relative path, the "
                 "MIME type type/subtype, the data base64)",
                 s->invalid);
    /* an answer that lost artifacts must say so: a report that cannot be made fails it */
    return json_object_set_new(obj, "artifactsError",
                               json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I}", "code",
                                         s->dropped ? "ARTIFACT_LIMIT" : "INVALID_ARTIFACT",
                                         "message", msg, "dropped", (json_int_t)s->dropped,
                                         "droppedBytes", (json_int_t)s->dropped_bytes, "invalid",
                                         (json_int_t)s->invalid, "maxCount",
                                         (json_int_t)caps->max_count, "maxBytes",
                                         (json_int_t)caps->max_bytes)) < 0
               ? -ENOMEM
               : 0;
}
