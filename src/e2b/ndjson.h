// SPDX-License-Identifier: MIT
/*
 * ndjson — the lines of E2B's code-interpreter /execute answer (application/x-ndjson, one JSON
 * object a line; template/server/stream.py and api/models/ of e2b-dev/code-interpreter), made
 * from what a context reported. The context runs the user's code and proves nothing: a line is
 * rebuilt from the members E2B defines, each of its type, and anything else is dropped, so the
 * client gets exactly E2B's shapes and always one object per line (JSON escapes every newline
 * in a string). Pure; the writer takes untrusted input (fuzz/fuzz_e2b.c).
 */
#ifndef SANDBOXD_E2B_NDJSON_H
#define SANDBOXD_E2B_NDJSON_H

#include <jansson.h>
#include <stddef.h>

/* One line, "\n" included (caller frees; *ret_len bytes), for a context's output `out`:
 * {"type": "stdout"|"stderr", "text", "timestamp"?}, {"type": "result", "is_main_result", and
 * any of "text", "html", "markdown", "svg", "png", "jpeg", "pdf", "latex", "javascript"
 * (strings), "json" (any JSON value), "data", "chart", "extra" (objects)}, {"type": "error",
 * "name", "value", "traceback"}, {"type": "number_of_executions", "execution_count"}. NULL
 * when out is none of these (or out of memory): the caller drops it. */
char *ndjson_line(const json_t *out, size_t *ret_len);
/* The lines sandboxd adds itself: {"type": "end_of_execution"} and {"type": "keepalive"}. */
char *ndjson_simple(const char *type, size_t *ret_len);

#endif
