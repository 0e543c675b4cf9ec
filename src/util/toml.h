// SPDX-License-Identifier: MIT
/*
 * toml — a strict, bounded reader of TOML 1.0 documents into jansson values,
 * for the configuration files of other programs that sandboxd reads (Codex's
 * ~/.codex/config.toml: its [mcp_servers.NAME] tables). Debian packages no C
 * TOML library, so this is written here, small and strict: anything that is
 * not valid TOML 1.0 is an error naming the line, never a guess.
 *
 * Tables become objects, arrays arrays (arrays of tables too), strings
 * strings, integers integers (64-bit), floats reals (inf and nan are
 * refused: JSON has none), booleans booleans, and dates and times strings
 * as written. Limits: TOML_MAX_DEPTH nested arrays and inline tables, 32
 * parts in a dotted key, TOML_MAX_TABLES tables; the input's size is the
 * caller's to cap. Never touches anything but its arguments; thread-safe.
 */
#ifndef SANDBOXD_UTIL_TOML_H
#define SANDBOXD_UTIL_TOML_H

#include <jansson.h>
#include <stddef.h>

#define TOML_MAX_DEPTH  32
#define TOML_MAX_TABLES 4096

/* Parse text[0..len). 0 and *ret (an object, new reference); -EINVAL with *ret_error ("line 3:
 * ...", caller frees; NULL when out of memory); -ENOMEM. */
int toml_parse(const char *text, size_t len, json_t **ret, char **ret_error);

#endif
