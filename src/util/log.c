// SPDX-License-Identifier: MIT
/*
 * log — JSON-lines logger; see log.h. The level is process-wide (set once at
 * start-up, read racily afterwards, which is harmless for an int); the
 * context is per thread because each HTTP connection runs on its own thread.
 *
 * Text from outside (a Host header, a request id cut short, a name a sandbox sent) may be no
 * UTF-8, which a JSON string cannot hold: jansson refuses it, and a line would lose its
 * message or every field. So every text the logger writes goes through log_str(), which
 * escapes the bytes that are not UTF-8 instead, and log_pack() reports fields it could not
 * build rather than dropping them silently.
 */
#include "util/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/jdump.h"
#include "util/utf8.h"

static enum log_level log_min_level = LOG_INFO;

static _Thread_local char *log_ctx_request_id;
static _Thread_local char *log_ctx_app_id;

static const char *const log_level_names[] = {"debug", "info", "warn", "error", "off"};

void log_set_level(enum log_level level)
{
    log_min_level = level;
}

enum log_level log_get_level(void)
{
    return log_min_level;
}

int log_level_parse(const char *s, enum log_level *ret)
{
    for (size_t i = 0; i < ARRAY_SIZE(log_level_names); i++)
        if (strcmp(s, log_level_names[i]) == 0) {
            *ret = (enum log_level)i;
            return 0;
        }
    return -EINVAL;
}

static void log_replace(char **slot, const char *v)
{
    free(*slot);
    *slot = v ? strdup(v) : NULL; /* a failed copy only loses a log field */
}

void log_context_set(const char *request_id, const char *app_id)
{
    log_replace(&log_ctx_request_id, request_id);
    log_replace(&log_ctx_app_id, app_id);
}

void log_context_clear(void)
{
    log_context_set(NULL, NULL);
}

json_t *log_str(const char *s)
{
    if (!s)
        return NULL;
    size_t len = strlen(s);
    if (utf8_valid(s, len))
        return json_stringn(s, len);
    size_t elen;
    char *e = utf8_escape(s, len, &elen);
    json_t *j = e ? json_stringn(e, elen) : NULL;
    free(e);
    return j;
}

static void log_emit(enum log_level level, const char *msg, json_t *fields)
{
    struct timespec ts;
    struct tm tm;
    char when[40];
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(when, sizeof(when) - 8, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(when + n, sizeof(when) - n, ".%03ldZ", ts.tv_nsec / 1000000);

    json_t *o = json_object();
    if (!o)
        goto out;
    json_object_set_new(o, "ts", json_string(when));
    json_object_set_new(o, "level", json_string(log_level_names[level]));
    json_object_set_new(o, "msg", log_str(msg ? msg : ""));
    if (log_ctx_request_id)
        json_object_set_new(o, "requestId", log_str(log_ctx_request_id));
    if (log_ctx_app_id)
        json_object_set_new(o, "appId", log_str(log_ctx_app_id));
    if (fields)
        json_object_update(o, fields);
    char *line = jdump(o, JSON_COMPACT | JSON_ENSURE_ASCII, NULL);
    json_decref(o);
    if (!line)
        goto out;
    size_t len = strlen(line);
    line[len] = '\n'; /* jdump gave us len+1 bytes; the NUL becomes the newline */
    const char *p = line;
    size_t left = len + 1;
    while (left > 0) {
        ssize_t w = write(STDERR_FILENO, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break; /* stderr gone: nowhere left to report it */
        p += w;
        left -= (size_t)w;
    }
    free(line);
out:
    json_decref(fields);
}

static void log_vmsg(enum log_level level, int err, const char *fmt, va_list ap) _printf_(3, 0);
static void log_vmsg(enum log_level level, int err, const char *fmt, va_list ap)
{
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0)
        msg = NULL;
    if (err && msg) {
        char *with = NULL;
        if (asprintf(&with, "%s: %s", msg, strerror(err)) >= 0) {
            free(msg);
            msg = with;
        }
    }
    log_emit(level, msg ? msg : fmt, NULL);
    free(msg);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    if (level < log_min_level)
        return;
    int saved = errno;
    va_list ap;
    va_start(ap, fmt);
    log_vmsg(level, 0, fmt, ap);
    va_end(ap);
    errno = saved;
}

int log_errno(enum log_level level, int err, const char *fmt, ...)
{
    err = err < 0 ? -err : err;
    if (level >= log_min_level) {
        va_list ap;
        va_start(ap, fmt);
        log_vmsg(level, err, fmt, ap);
        va_end(ap);
    }
    return -err;
}

void log_fields(enum log_level level, const char *msg, json_t *fields)
{
    if (level < log_min_level) {
        json_decref(fields);
        return;
    }
    log_emit(level, msg, fields);
}

void log_pack(enum log_level level, const char *msg, const char *fmt, ...)
{
    int saved = errno;
    json_error_t err;
    va_list ap;
    va_start(ap, fmt);
    /* Packed even below the level: the format's "o" values are stolen and must be freed. */
    json_t *fields = json_vpack_ex(&err, 0, fmt, ap);
    va_end(ap);
    if (level < log_min_level) {
        json_decref(fields);
        errno = saved;
        return;
    }
    if (!fields)
        fields = json_pack("{s:s, s:o*}", "logError", "this line's fields could not be built",
                           "logErrorDetail", log_str(err.text));
    log_emit(level, msg, fields);
    errno = saved;
}
