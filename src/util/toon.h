// SPDX-License-Identifier: MIT
/*
 * toon — an encoder of TOON, Token-Oriented Object Notation (toon-spec 3.3,
 * https://github.com/toon-format/spec): JSON values as indented lines,
 * arrays with their length, uniform arrays of objects as tables. Used for
 * the answers of `sandboxd mcp --compat code-execution-mode` with
 * MCP_BRIDGE_OUTPUT_MODE=toon, as the upstream bridge writes them. Encodes
 * only (sandboxd never reads TOON); comma delimiter, two-space indentation,
 * no key folding. Strings that start with '#' are quoted as well, so that
 * decoders of toon-spec 4.0, where such lines are comments, read the same.
 */
#ifndef SANDBOXD_UTIL_TOON_H
#define SANDBOXD_UTIL_TOON_H

#include <jansson.h>

#define TOON_MAX_DEPTH 64 /* nesting of arrays and objects */

/* value (borrowed) as a TOON document: no trailing newline, no trailing spaces. 0 and *ret
 * (caller frees), -E2BIG when value nests deeper than TOON_MAX_DEPTH, -ENOMEM. */
int toon_encode(json_t *value, char **ret);

#endif
