// SPDX-License-Identifier: MIT
/*
 * path — see path.h. The checks are syntactic on purpose: the files are
 * later opened with RESOLVE_BENEATH as well, so a symlink cannot undo them.
 */
#include "util/path.h"

#include <ctype.h>
#include <string.h>

const char *path_check_relative(const char *p, size_t len)
{
    if (len == 0)
        return "must not be empty";
    if (len > PATH_REQUEST_MAX)
        return "is too long";
    if (memchr(p, '\0', len))
        return "must not contain NUL bytes";
    if (p[0] == '/')
        return "must be a relative path";
    const char *seg = p;
    const char *end = p + len;
    while (seg <= end) {
        const char *slash = memchr(seg, '/', (size_t)(end - seg));
        const char *stop = slash ? slash : end;
        size_t n = (size_t)(stop - seg);
        if (n == 2 && seg[0] == '.' && seg[1] == '.')
            return "must not contain '..'";
        if (!slash)
            break;
        seg = slash + 1;
    }
    if (p[len - 1] == '/')
        return "must name a file, not a directory";
    return NULL;
}

const char *path_check_plain(const char *p, size_t len)
{
    const char *why = path_check_relative(p, len);
    if (why)
        return why;
    size_t depth = 0;
    for (const char *seg = p, *end = p + len; seg < end;) {
        const char *slash = memchr(seg, '/', (size_t)(end - seg));
        size_t n = (size_t)((slash ? slash : end) - seg);
        if (n == 0 || (n == 1 && seg[0] == '.'))
            return "must not contain empty or '.' components";
        if (n > 255)
            return "has a component longer than 255 bytes";
        if (++depth > PATH_MAX_DEPTH)
            return "is nested too deeply";
        seg += n + 1;
    }
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
            return "must not contain control characters";
    return NULL;
}

const char *path_check_component(const char *p, size_t len)
{
    if (len == 0)
        return "must not be empty";
    if (len > 255)
        return "is too long";
    if (memchr(p, '\0', len))
        return "must not contain NUL bytes";
    if (memchr(p, '/', len))
        return "must not contain '/'";
    if ((len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
        return "must not be '.' or '..'";
    return NULL;
}

const char *path_check_name(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 64)
        return "must be 1-64 characters";
    if (name[0] == '.')
        return "must not start with '.'";
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)name[i]) && !strchr("._-", name[i]))
            return "may only contain letters, digits, '.', '_' and '-'";
    return NULL;
}

bool path_is_identifier(const char *s)
{
    if (!s || !*s || strlen(s) > 255 || !(isalpha((unsigned char)*s) || *s == '_'))
        return false;
    for (const char *p = s + 1; *p; p++)
        if (!(isalnum((unsigned char)*p) || *p == '_'))
            return false;
    return true;
}
