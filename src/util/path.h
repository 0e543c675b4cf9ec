// SPDX-License-Identifier: MIT
/*
 * path — checks on paths that come from requests. A definition path must be
 * relative, free of NUL bytes and of ".." components; an identifier-like
 * name (app id, workspace, tenant) must not be able to name a directory other
 * than itself; a Python identifier is one.
 */
#ifndef SANDBOXD_UTIL_PATH_H
#define SANDBOXD_UTIL_PATH_H

#include <stdbool.h>
#include <stddef.h>

#define PATH_REQUEST_MAX 1024

/* len is the byte length as received (a NUL inside makes it unsafe). Returns NULL when safe,
 * else a static string saying why not. */
const char *path_check_relative(const char *p, size_t len);
/* A relative path of plain components, as for files a client puts into or reads from a
 * sandbox: path_check_relative() and moreover no empty or "." component, at most
 * PATH_MAX_DEPTH components of at most 255 bytes, no control characters. */
#define PATH_MAX_DEPTH 32
const char *path_check_plain(const char *p, size_t len);
/* A single path component usable as a directory name: not empty, not "." or "..", no '/'. */
const char *path_check_component(const char *p, size_t len);
/* A name sandboxd makes a directory of (workspace, tenant): [A-Za-z0-9._-], 1-64 bytes, not
 * starting with '.'. NULL when it is one, else why not (static). */
const char *path_check_name(const char *name);
/* A Python identifier (ASCII subset), at most 255 bytes: a function or class a request names,
 * a workspace. */
bool path_is_identifier(const char *s);

#endif
