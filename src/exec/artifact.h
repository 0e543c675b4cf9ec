// SPDX-License-Identifier: MIT
/*
 * artifact — the rich outputs of one execution (figures, display() of
 * objects, collected files; runtime/sandboxd_runtime/artifacts.py) as the
 * host takes them: each arrives as a frame {"type": "display", "artifact":
 * {name, mimeType, data}} and is checked (a plain relative name, a MIME
 * type, valid base64) and counted against the caps before it is kept. The
 * sandbox's own "size" is never believed: the host decodes and measures.
 * What is over the caps or malformed is dropped and reported as
 * artifactsError, next to the artifacts that were kept.
 */
#ifndef SANDBOXD_EXEC_ARTIFACT_H
#define SANDBOXD_EXEC_ARTIFACT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define ARTIFACT_MAX_NAME      1024 /* bytes of a name (a relative path) */
#define ARTIFACT_MAX_MIME      127
#define ARTIFACT_DEFAULT_COUNT 32 /* --max-artifacts */
#define ARTIFACT_DEFAULT_MB    16 /* --max-artifacts-mb */

struct artifact_caps {
    size_t max_count; /* artifacts kept per execution */
    size_t max_bytes; /* decoded bytes kept per execution */
};

struct artifact_set {
    json_t *list; /* [{name, mimeType, data, size}], NULL until the first one */
    size_t bytes;
    size_t dropped;       /* over the caps (the host's count plus what the sandbox reported) */
    size_t dropped_bytes; /* their size, as far as known */
    size_t invalid;       /* malformed frames */
};

void artifact_set_done(struct artifact_set *s);
/* Take one "display" frame (borrowed). Returns the clean artifact that was kept (borrowed from
 * the set), or NULL when it was dropped or malformed (counted either way). */
json_t *artifact_set_add(struct artifact_set *s, const struct artifact_caps *caps, json_t *frame);
/* Count what the sandbox says it left out itself ("artifactsDropped" of its final frame). */
void artifact_set_note_final(struct artifact_set *s, json_t *final);
/* Add "artifacts" to obj (always when always is set, else only when there are any) and
 * "artifactsError" when something was left out; -ENOMEM when either could not be added. */
int artifact_set_report(const struct artifact_set *s, const struct artifact_caps *caps, json_t *obj,
                        bool always);

#endif
