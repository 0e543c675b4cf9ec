// SPDX-License-Identifier: MIT
/*
 * jsonc — see jsonc.h. One pass with a small state machine; a comma is
 * blanked once the next character that is neither whitespace nor a comment
 * turns out to be a closing bracket.
 */
#include "util/jsonc.h"

#include <stdbool.h>

void jsonc_strip(char *text, size_t len)
{
    size_t comma = (size_t)-1; /* a comma waiting to learn what follows it */
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (c == '"') {
            comma = (size_t)-1;
            for (i++; i < len && text[i] != '"'; i++)
                if (text[i] == '\\')
                    i++;
            continue;
        }
        if (c == '/' && i + 1 < len && text[i + 1] == '/') {
            for (; i < len && text[i] != '\n'; i++)
                text[i] = ' ';
            continue;
        }
        if (c == '/' && i + 1 < len && text[i + 1] == '*') {
            text[i] = text[i + 1] = ' ';
            for (i += 2; i < len && !(text[i] == '*' && i + 1 < len && text[i + 1] == '/'); i++)
                if (text[i] != '\n')
                    text[i] = ' ';
            if (i < len) /* the closing star and slash */
                text[i] = text[i + 1] = ' ';
            i++;
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
            continue;
        if ((c == '}' || c == ']') && comma != (size_t)-1)
            text[comma] = ' ';
        comma = c == ',' ? i : (size_t)-1;
    }
}
