// SPDX-License-Identifier: MIT
/*
 * path — checks on paths that come from requests. A definition path must be
 * relative, free of NUL bytes and of ".." components; an identifier-like
 * name (app id, workspace, tenant) must not be able to name a directory other
 * than itself.
 */
#ifndef SANDBOXD_UTIL_PATH_H
#define SANDBOXD_UTIL_PATH_H

#include <stdbool.h>
#include <stddef.h>

#define PATH_REQUEST_MAX 1024

/* len is the byte length as received (a NUL inside makes it unsafe). Returns NULL when safe,
 * else a static string saying why not. */
const char *path_check_relative(const char *p, size_t len);
/* A single path component usable as a directory name: not empty, not "." or "..", no '/'. */
const char *path_check_component(const char *p, size_t len);
/* A name sandboxd makes a directory of (workspace, tenant): [A-Za-z0-9._-], 1-64 bytes, not
 * starting with '.'. NULL when it is one, else why not (static). */
const char *path_check_name(const char *name);

#endif
