// SPDX-License-Identifier: MIT
/*
 * jsonc — JSON with comments, as VS Code writes its settings.json and
 * mcp.json: `// line` and `/ * block * /` comments and trailing commas
 * before `}` or `]`. jsonc_strip() blanks them out in place, so that a JSON
 * parser reads the rest and its line numbers still point into the file.
 * Text that is plain JSON comes out unchanged. Used by mcpclient/config.c for
 * every configuration file it discovers.
 */
#ifndef SANDBOXD_UTIL_JSONC_H
#define SANDBOXD_UTIL_JSONC_H

#include <stddef.h>

/* Replace the comments and trailing commas of text[0..len) with spaces (newlines inside block
 * comments are kept). Strings are left alone, escapes included; an unterminated string or
 * comment runs to the end, for the JSON parser to report. */
void jsonc_strip(char *text, size_t len);

#endif
