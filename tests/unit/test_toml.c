// SPDX-License-Identifier: MIT
/* Unit tests: the TOML reader (util/toml.c) on Codex-shaped configuration and on every rule it
 * enforces, fuzz-style mangled inputs (it must refuse or read them, never crash, hang or
 * leak), and the JSON-with-comments stripper (util/jsonc.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "util/jdump.h"
#include "util/jsonc.h"
#include "util/toml.h"

/* The document read from toml must be the JSON want (compared as values). */
static void expect(const char *toml, const char *want)
{
    json_t *v = NULL;
    char *err = NULL;
    int r = toml_parse(toml, strlen(toml), &v, &err);
    if (r < 0)
        fail_msg("refused %s: %s", toml, err ? err : "?");
    json_t *w = json_loads(want, 0, NULL);
    assert_non_null(w);
    if (!json_equal(v, w)) {
        char *got = jdump(v, JSON_COMPACT, NULL);
        fail_msg("%s\n--- got %s\n--- want %s", toml, got, want);
    }
    json_decref(v);
    json_decref(w);
}

/* toml must be refused with a message that contains words. */
static void refuse(const char *toml, size_t len, const char *words)
{
    json_t *v = NULL;
    char *err = NULL;
    char *exact = malloc(len); /* no NUL after the text: a read past its end is an ASan error */
    assert_non_null(exact);
    memcpy(exact, toml, len);
    int r = toml_parse(exact, len, &v, &err);
    free(exact);
    if (r != -EINVAL || !err || !strstr(err, words))
        fail_msg("%.*s: r=%d err=%s (wanted '%s')", (int)len, toml, r, err ? err : "(none)", words);
    assert_null(v);
    free(err);
}

#define REFUSE(text, words) refuse(text, strlen(text), words)

static void codex_config(void **state)
{
    expect("# Codex\nmodel = \"o3\"\nnotify = [\"notify-send\", \"Codex\"]\n\n"
           "[projects.\"/home/u/p\"]\ntrust_level = \"trusted\"\n\n"
           "[mcp_servers.docs]\ncommand = \"npx\"\nargs = [\"-y\", \"mcp-server-docs\",]\n"
           "env = { \"API_KEY\" = \"v\", OTHER = 'x' }\nenabled = true\n"
           "startup_timeout_sec = 20.5\n\n[mcp_servers.docs.more]\nA = \"1\"\n\n"
           "[mcp_servers.\"remote server\"]\nurl = \"https://example.com/mcp\"\n"
           "http_headers = { \"X-Team\" = \"core\" }\n",
           "{\"model\": \"o3\", \"notify\": [\"notify-send\", \"Codex\"],"
           " \"projects\": {\"/home/u/p\": {\"trust_level\": \"trusted\"}},"
           " \"mcp_servers\": {\"docs\": {\"command\": \"npx\", \"args\": [\"-y\","
           " \"mcp-server-docs\"], \"env\": {\"API_KEY\": \"v\", \"OTHER\": \"x\"},"
           " \"enabled\": true, \"startup_timeout_sec\": 20.5, \"more\": {\"A\": \"1\"}},"
           " \"remote server\": {\"url\": \"https://example.com/mcp\","
           " \"http_headers\": {\"X-Team\": \"core\"}}}}");
}

static void values(void **state)
{
    expect("a = 1_000\nb = 0xDEAD_beef\nc = 0o755\nd = 0b1010\ne = -17\nf = +3\n",
           "{\"a\": 1000, \"b\": 3735928559, \"c\": 493, \"d\": 10, \"e\": -17, \"f\": 3}");
    expect("a = 3.25\nb = -1e3\nc = 6.626e-34\nd = 1_000.5\ne = 0.0\n",
           "{\"a\": 3.25, \"b\": -1000.0, \"c\": 6.626e-34, \"d\": 1000.5, \"e\": 0.0}");
    expect("t = true\nf = false\n", "{\"t\": true, \"f\": false}");
    expect("a = 1979-05-27T07:32:00Z\nb = 1979-05-27 07:32:00.999-07:00\nc = 1979-05-27\n"
           "d = 07:32:00\n",
           "{\"a\": \"1979-05-27T07:32:00Z\", \"b\": \"1979-05-27 07:32:00.999-07:00\","
           " \"c\": \"1979-05-27\", \"d\": \"07:32:00\"}");
    expect("s = \"tab\\tquote\\\" back\\\\ u\\u00e9 U\\U0001F600\"\nl = 'C:\\Users\\x'\n",
           "{\"s\": \"tab\\tquote\\\" back\\\\ u\\u00e9 U\\ud83d\\ude00\","
           " \"l\": \"C:\\\\Users\\\\x\"}");
    expect("m = \"\"\"\nRoses are red\\\n   Violets are blue\"\"\"\nq = \"\"\"two "
           "\"\"quotes\"\"\"\"\"\n"
           "r = '''\nraw \\n\nline'''\n",
           "{\"m\": \"Roses are redViolets are blue\", \"q\": \"two \\\"\\\"quotes\\\"\\\"\","
           " \"r\": \"raw \\\\n\\nline\"}");
    expect("a = [ 1, [2, 3], { x = 1 }, \"s\",\n  # comment\n  ]\ne = []\ni = {}\n",
           "{\"a\": [1, [2, 3], {\"x\": 1}, \"s\"], \"e\": [], \"i\": {}}");
    expect("\"quoted key\" = 1\n'lit' = 2\nsite.\"google.com\" = true\n3 = 'three'\n",
           "{\"quoted key\": 1, \"lit\": 2, \"site\": {\"google.com\": true}, \"3\": \"three\"}");
    expect("\xEF\xBB\xBFx = 1\r\ny = 2\r\n", "{\"x\": 1, \"y\": 2}");
    expect("", "{}");
}

static void tables(void **state)
{
    expect("[a.b.c]\nx = 1\n[a]\ny = 2\n", "{\"a\": {\"b\": {\"c\": {\"x\": 1}}, \"y\": 2}}");
    expect("[[p]]\nn = 1\n[[p]]\nn = 2\n[p.q]\nz = 3\n",
           "{\"p\": [{\"n\": 1}, {\"n\": 2, \"q\": {\"z\": 3}}]}");
    expect("[fruit]\napple.color = \"red\"\napple.taste.sweet = true\n[fruit.apple.texture]\n"
           "smooth = true\n",
           "{\"fruit\": {\"apple\": {\"color\": \"red\", \"taste\": {\"sweet\": true},"
           " \"texture\": {\"smooth\": true}}}}");
}

static void invalid(void **state)
{
    REFUSE("a = 1\na = 2\n", "line 2: key 'a' is defined twice");
    REFUSE("[t]\n[t]\n", "line 2: table 't' is defined twice");
    REFUSE("[fruit]\napple.color = 1\n[fruit.apple]\n", "line 3");
    REFUSE("a = { x = 1 }\n[a]\n", "line 2");
    REFUSE("a = { x = 1 }\na.y = 2\n", "line 2");
    REFUSE("a = [1]\n[[a]]\n", "not as an array of tables");
    REFUSE("[a.b]\nx = 1\n[a]\nb.y = 2\n", "line 4");
    REFUSE("a = 01\n", "invalid value");
    REFUSE("a = 1__0\n", "invalid value");
    REFUSE("a = _1\n", "invalid value");
    REFUSE("a = 1.\n", "invalid number");
    REFUSE("a = .5\n", "invalid value");
    REFUSE("a = 0x\n", "invalid");
    REFUSE("a = +0x10\n", "invalid");
    REFUSE("a = 9223372036854775808\n", "out of range");
    REFUSE("a = 1e999\n", "out of range");
    REFUSE("a = inf\n", "no infinities");
    REFUSE("a = nan\n", "no infinities");
    REFUSE("a = \"\\q\"\n", "invalid escape");
    REFUSE("a = \"\\uD800\"\n", "not a Unicode scalar value");
    REFUSE("a = \"\\u0000\"\n", "NUL");
    REFUSE("a = \"\\u12\"\n", "hex digits");
    REFUSE("a = \"open\n", "control character");
    REFUSE("a = \"\"\"never closed\n", "unterminated");
    /* Found by fuzz_config_text: a line-ending backslash whose trimmed newline ends the input
     * read one byte past it. */
    REFUSE("a = \"\"\"x\\\n", "unterminated");
    REFUSE("a = \"\"\"x\\ \r\n\n", "unterminated");
    REFUSE("a = 1 b = 2\n", "end of the line");
    REFUSE("a = 1\rb = 2\n", "line 1");
    REFUSE("a\n", "expected '='");
    REFUSE("= 1\n", "expected a key");
    REFUSE("a = \n", "expected a value");
    REFUSE("a = [1, 2\n", "line 2: expected ',' or ']' in an array");
    REFUSE("a = { x = 1,\n y = 2 }\n", "line 1");
    REFUSE("a = { x = 1, }\n", "line 1");
    REFUSE("[a\n", "end the table header");
    REFUSE("a = 1 # \x01\n", "control character");
    REFUSE("a = 1979-13\n", "invalid");
    REFUSE("x = 1\n\xC3\x28 = 2\n", "line 2: invalid UTF-8");
    refuse("x = 1\n\0 = 2\n", 12, "line 2: a NUL byte");
    /* Depth and width limits. */
    char deep[256] = "a = ";
    for (int i = 0; i < TOML_MAX_DEPTH + 1; i++)
        strcat(deep, "[");
    REFUSE(deep, "nested deeper");
    char *many = malloc((TOML_MAX_TABLES + 2) * 16);
    assert_non_null(many);
    many[0] = '\0';
    size_t n = 0;
    for (int i = 0; i < TOML_MAX_TABLES + 1; i++)
        n += (size_t)sprintf(many + n, "[t%d]\n", i);
    refuse(many, n, "tables");
    free(many);
}

/* Fuzz-style: a valid document cut, flipped and spliced at every position must be read or
 * refused cleanly (ASan and valgrind watch). Deterministic, so that a failure reproduces. */
static void mangled(void **state)
{
    static const char base[] =
        "model = \"o3\"\n[mcp_servers.docs]\ncommand = \"npx\"\nargs = [\"-y\", 'x', 1_0, 2.5]\n"
        "env = { K = \"\"\"v\"\"\" }\n[[arr.t]]\nd = 1979-05-27T07:32:00Z\nb.c = true\n";
    static const char noise[] = "[]{}=.\"'\\#,\n\r\t _-+0x9eE:TZ\xff\xc3";
    size_t len = sizeof(base) - 1;
    char *buf = malloc(len + 2);
    assert_non_null(buf);
    unsigned seed = 12345;
    for (size_t pos = 0; pos <= len; pos++) {
        for (size_t k = 0; k < sizeof(noise) - 1; k += 3) {
            seed = seed * 1103515245u + 12345u;
            memcpy(buf, base, len);
            size_t n = len;
            switch (seed >> 16 & 3) {
            case 0: /* cut */
                n = pos;
                break;
            case 1: /* replace */
                if (pos < len)
                    buf[pos] = noise[k];
                break;
            default: /* insert */
                memmove(buf + pos + 1, base + pos, len - pos);
                buf[pos] = noise[k];
                n = len + 1;
                break;
            }
            json_t *v = NULL;
            char *err = NULL;
            int r = toml_parse(buf, n, &v, &err);
            assert_true(r == 0 || r == -EINVAL);
            assert_true(r == 0 ? v != NULL && err == NULL : v == NULL && err != NULL);
            assert_true(r != 0 || json_is_object(v));
            if (r == -EINVAL)
                assert_non_null(strstr(err, "line "));
            json_decref(v);
            free(err);
        }
    }
    free(buf);
}

static void jsonc(void **state)
{
    char text[] = "{\n  // a comment \"with quotes\"\n  \"a\": \"// not a comment\", /* block\n"
                  "  spans */ \"b\": [1, 2,],\n  \"c\": \"x,]\",\n}\n";
    jsonc_strip(text, strlen(text));
    json_error_t e;
    json_t *v = json_loads(text, 0, &e);
    assert_non_null(v);
    json_t *w = json_loads("{\"a\": \"// not a comment\", \"b\": [1, 2], \"c\": \"x,]\"}", 0, NULL);
    assert_true(json_equal(v, w));
    json_decref(v);
    json_decref(w);
    assert_non_null(strchr(text, '\n'));
    /* Line numbers survive: the block comment's newline is kept. */
    char bad[] = "{ /* one\n two */\n \"a\": }";
    jsonc_strip(bad, strlen(bad));
    assert_null(json_loads(bad, 0, &e));
    assert_int_equal(e.line, 3);
    /* Plain JSON is unchanged; an unterminated comment or string runs to the end. */
    char plain[] = "{\"a\": [1, {\"b\": \"\\\" , ]\"}]}";
    char copy[sizeof(plain)];
    memcpy(copy, plain, sizeof(plain));
    jsonc_strip(plain, strlen(plain));
    assert_string_equal(plain, copy);
    char open[] = "{\"a\": 1} /* never closed";
    jsonc_strip(open, strlen(open));
    assert_string_equal(open, "{\"a\": 1}"
                              "                "); /* the space and 15 blanked characters */
    char str[] = "\"unterminated \\";
    jsonc_strip(str, strlen(str));
    assert_string_equal(str, "\"unterminated \\");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(codex_config), cmocka_unit_test(values),  cmocka_unit_test(tables),
        cmocka_unit_test(invalid),      cmocka_unit_test(mangled), cmocka_unit_test(jsonc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
