// SPDX-License-Identifier: MIT
/*
 * log — structured logging: one JSON object per line on stderr, written
 * with a single write(2) so lines from concurrent threads never interleave.
 * A thread-local context (request id, app id) is added to every line.
 * Functions that log return nothing or the negative errno they were given,
 * so a caller can `return log_errno(r, ...)` and log exactly once.
 */
#ifndef SANDBOXD_UTIL_LOG_H
#define SANDBOXD_UTIL_LOG_H

#include <jansson.h>
#include <stdbool.h>

#include "util/macros.h"

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR, LOG_OFF };

void log_set_level(enum log_level level);
enum log_level log_get_level(void);
/* Parse "debug|info|warn|error|off"; -EINVAL otherwise. */
int log_level_parse(const char *s, enum log_level *ret);

/* Per-thread context; the strings are copied. NULL clears a field. */
void log_context_set(const char *request_id, const char *app_id);
void log_context_clear(void);

void log_msg(enum log_level level, const char *fmt, ...) _printf_(2, 3);
/* Log with ": <strerror(|err|)>" appended; returns -|err|. */
int log_errno(enum log_level level, int err, const char *fmt, ...) _printf_(3, 4);
/* Log msg with extra structured fields (stolen; may be NULL). */
void log_fields(enum log_level level, const char *msg, json_t *fields);
/* Log msg with the fields json_pack(fmt, ...) builds; when they cannot be built (a NULL for
 * "s", text that is no UTF-8, no memory) the line says so in "logError" instead of losing them
 * unnoticed. Text from outside goes in as "o" (or "o*", "o?") of log_str(). */
void log_pack(enum log_level level, const char *msg, const char *fmt, ...);
/* A JSON string of s whatever its bytes: what is not UTF-8 escaped as \xHH (backslashes
 * doubled), see utf8_escape; NULL for NULL s (and when out of memory). New reference. */
json_t *log_str(const char *s);

#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_INFO, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)

#endif
