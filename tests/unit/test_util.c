// SPDX-License-Identifier: MIT
/* Unit tests: util/buf (bounded buffer), util/path (request path checks), util/jdump (JSON text
 * with shortest round-trip reals), util/randid (random hex ids), util/url (parsed allowlists,
 * loopback, redaction), util/trust (who may have written a path), util/utf8's checks and
 * escapes, and util/log's lines whatever bytes they carry. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/buf.h"
#include "util/jdump.h"
#include "util/log.h"
#include "util/path.h"
#include "util/proc.h"
#include "util/randid.h"
#include "util/trust.h"
#include "util/url.h"
#include "util/utf8.h"

static void utf8_valid_and_escaped(void **state)
{
    assert_true(utf8_valid("plain", 5));
    assert_true(utf8_valid("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14));
    assert_true(utf8_valid("", 0));
    assert_false(utf8_valid("\xff", 1));
    assert_false(utf8_valid("caf\xc3", 4));      /* cut inside a character */
    assert_false(utf8_valid("\xc0\xaf", 2));     /* overlong '/' */
    assert_false(utf8_valid("\xed\xa0\x80", 3)); /* a surrogate */
    assert_false(utf8_valid("a\0b", 3));         /* NUL: no C string holds it */
    size_t n;
    static const char in[] = "\xff"
                             "evil\\x.test caf\xc3\xa9 \xc3";
    char *e = utf8_escape(in, sizeof(in) - 1, &n);
    assert_non_null(e);
    /* bad bytes as \xHH, backslashes doubled (so an escape and a literal "\x" stay apart),
     * well-formed characters kept */
    assert_string_equal(e, "\\xffevil\\\\x.test caf\xc3\xa9 \\xc3");
    assert_int_equal(n, strlen(e));
    assert_true(utf8_valid(e, n));
    free(e);
    e = utf8_escape("a\0b", 3, NULL);
    assert_string_equal(e, "a\\x00b");
    free(e);
    /* the worst case: every byte four */
    e = utf8_escape("\x80\x80", 2, &n);
    assert_int_equal(n, 8);
    free(e);
}

/* Run fn with fd 2 in a file; the JSON lines it wrote. */
static json_t *log_capture(void (*fn)(void))
{
    char path[] = "/tmp/sandboxd-logtest-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    int saved = dup(STDERR_FILENO);
    assert_true(saved >= 0);
    assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
    fn();
    assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
    close(saved);
    char text[8192];
    ssize_t len = pread(fd, text, sizeof(text) - 1, 0);
    close(fd);
    assert_true(len > 0);
    text[len] = '\0';
    json_t *lines = json_array();
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        json_error_t err;
        json_t *j = json_loads(line, 0, &err);
        if (!j)
            fail_msg("not a JSON line: %s (%s)", line, err.text);
        json_array_append_new(lines, j);
    }
    return lines;
}

static void log_bad_bytes(void)
{
    log_context_set("rid-\xc3", NULL);
    log_warn("refused Host '%s' on %s",
             "\xff"
             "evil",
             "/healthz");
    log_pack(LOG_INFO, "egress", "{s:o, s:s, s:o*}", "execution",
             log_str("aaaa\xc3" /* a request id cut inside \xc3\xa9 */), "decision", "denied",
             "reason", log_str(NULL));
    log_pack(LOG_INFO, "packed badly", "{s:s}", "host", "\xff"); /* "s" refuses it */
    log_pack(LOG_DEBUG, "below the level", "{s:o}", "x", log_str("freed, not leaked"));
    log_context_clear();
}

static void log_lines_keep_what_bad_bytes_would_lose(void **state)
{
    json_t *lines = log_capture(log_bad_bytes);
    assert_int_equal(json_array_size(lines), 3);
    json_t *a = json_array_get(lines, 0), *b = json_array_get(lines, 1),
           *c = json_array_get(lines, 2);
    /* the message and the context, escaped rather than dropped */
    assert_string_equal(json_string_value(json_object_get(a, "level")), "warn");
    assert_string_equal(json_string_value(json_object_get(a, "msg")),
                        "refused Host '\\xffevil' on /healthz");
    assert_string_equal(json_string_value(json_object_get(a, "requestId")), "rid-\\xc3");
    /* every field of a decision, whatever its text */
    assert_string_equal(json_string_value(json_object_get(b, "execution")), "aaaa\\xc3");
    assert_string_equal(json_string_value(json_object_get(b, "decision")), "denied");
    assert_null(json_object_get(b, "reason"));
    /* fields that could not be built are said to be missing */
    assert_string_equal(json_string_value(json_object_get(c, "msg")), "packed badly");
    assert_non_null(json_object_get(c, "logError"));
    assert_null(json_object_get(c, "host"));
    json_decref(lines);
}

static void buf_caps_and_never_truncates_silently(void **state)
{
    struct buf b;
    buf_init(&b, 8);
    assert_int_equal(buf_append(&b, "12345", 5), 0);
    assert_int_equal(buf_append(&b, "6789", 4), -E2BIG); /* would exceed: refused whole */
    assert_int_equal(b.len, 5);
    assert_string_equal(b.data, "12345");
    bool full = false;
    assert_int_equal(buf_append_capped(&b, "6789", 4, &full), 3);
    assert_true(full);
    assert_string_equal(b.data, "12345678");
    buf_consume(&b, 3);
    assert_string_equal(b.data, "45678");
    size_t n;
    char *s = buf_take(&b, &n);
    assert_int_equal(n, 5);
    assert_string_equal(s, "45678");
    assert_null(b.data);
    free(s);
    buf_free(&b);
}

static void buf_printf_and_empty_take(void **state)
{
    struct buf b;
    buf_init(&b, 1024);
    assert_int_equal(buf_printf(&b, "%d-%s", 42, "x"), 0);
    assert_string_equal(b.data, "42-x");
    buf_reset(&b);
    assert_int_equal(b.len, 0);
    buf_free(&b);
    buf_init(&b, 16);
    char *s = buf_take(&b, NULL);
    assert_non_null(s);
    assert_string_equal(s, "");
    free(s);
    buf_init(&b, 4);
    assert_int_equal(buf_printf(&b, "%s", "too long"), -E2BIG);
    buf_free(&b);
}

static void path_relative_checks(void **state)
{
    assert_null(path_check_relative("handlers/add.py", 15));
    assert_null(path_check_relative("a/./b.py", 8));
    assert_null(path_check_relative("..x/y..", 7)); /* dots inside names are fine */
    assert_non_null(path_check_relative("", 0));
    assert_non_null(path_check_relative("/etc/passwd", 11));
    assert_non_null(path_check_relative("..", 2));
    assert_non_null(path_check_relative("a/../b", 6));
    assert_non_null(path_check_relative("a/..", 4));
    assert_non_null(path_check_relative("dir/", 4));
    assert_non_null(path_check_relative("a\0b", 3));
    char long_path[PATH_REQUEST_MAX + 2];
    memset(long_path, 'a', sizeof(long_path));
    assert_non_null(path_check_relative(long_path, sizeof(long_path)));
}

static void path_component_checks(void **state)
{
    assert_null(path_check_component("demo", 4));
    assert_non_null(path_check_component(".", 1));
    assert_non_null(path_check_component("..", 2));
    assert_non_null(path_check_component("a/b", 3));
    assert_non_null(path_check_component("", 0));
}

static void jdump_reals_are_shortest(void **state)
{
    /* Expected texts are Python's repr() (the shortest round-trip form), exponents written
     * the JSON way. */
    static const struct {
        double v;
        const char *text;
    } cases[] = {
        {0.1, "0.1"},
        {1234567890.123456, "1234567890.123456"},
        {3.141592653589793, "3.141592653589793"},
        {1.0, "1.0"},
        {-0.0, "-0.0"},
        {1e22, "1e22"},
        {1e-7, "1e-7"},
        {-2.5e-300, "-2.5e-300"},
        {5e-324, "5e-324"},
        {1.7976931348623157e308, "1.7976931348623157e308"},
        {0.30000000000000004, "0.30000000000000004"},
        {123456789012345680.0, "1.2345678901234568e17"},
        {100.0, "100.0"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[32];
        size_t n = jdump_real(cases[i].v, out);
        assert_int_equal(n, strlen(out));
        assert_string_equal(out, cases[i].text);
    }
}

static void jdump_reals_round_trip(void **state)
{
    /* Seeded random bit patterns: every finite double reads back exactly and in no more than
     * 17 significant digits. */
    uint64_t x = 0x9E3779B97F4A7C15u;
    for (int i = 0; i < 50000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double d;
        memcpy(&d, &x, sizeof(d));
        if (d != d || d - d != 0)
            continue; /* NaN and infinities are not JSON */
        char out[32];
        jdump_real(d, out);
        if (strtod(out, NULL) != d)
            fail_msg("%.17g printed as %s does not read back", d, out);
        json_error_t e;
        json_t *back = json_loads(out, JSON_DECODE_ANY, &e);
        assert_true(json_is_real(back));
        assert_true(json_real_value(back) == d);
        json_decref(back);
    }
}

static void jdump_layout_matches_jansson(void **state)
{
    json_t *v = json_pack("{s:s, s:[i, b, n, {}, []], s:{s:s, s:I}, s:s}", "text",
                          "quote \" slash / tab \t é \xe2\x82\xac", "list", 1, 1, "nested", "k",
                          "v", "big", (json_int_t)INT64_MAX, "empty", "");
    size_t flags[] = {0,
                      JSON_COMPACT,
                      JSON_INDENT(2),
                      JSON_INDENT(4) | JSON_COMPACT,
                      JSON_COMPACT | JSON_ENSURE_ASCII,
                      JSON_ESCAPE_SLASH};
    for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
        char *ours = jdump(v, flags[i], NULL);
        char *theirs = json_dumps(v, flags[i]);
        assert_non_null(ours);
        assert_string_equal(ours, theirs);
        free(ours);
        free(theirs);
    }
    json_decref(v);
    json_t *r = json_pack("{s:f, s:[f, f]}", "pi", 3.141592653589793, "l", 0.1, 2.0);
    char *text = jdump(r, JSON_COMPACT, NULL);
    assert_string_equal(text, "{\"pi\":3.141592653589793,\"l\":[0.1,2.0]}");
    free(text);
    json_decref(r);
    json_t *s = json_string("scalar");
    text = jdump(s, JSON_COMPACT, NULL);
    assert_string_equal(text, "\"scalar\"");
    free(text);
    json_decref(s);
}

static void jdump_caps(void **state)
{
    json_t *root = json_array(), *cur = root;
    for (int i = 0; i < JDUMP_MAX_DEPTH + 1; i++) {
        json_t *next = json_array();
        json_array_append_new(cur, next);
        cur = next;
    }
    assert_null(jdump(root, JSON_COMPACT, NULL));
    json_decref(root);
    struct buf b;
    buf_init(&b, 8);
    assert_int_equal(buf_append(&b, "ab", 2), 0);
    json_t *long_string = json_string("more than eight bytes");
    assert_int_equal(jdump_buf(long_string, 0, &b), -E2BIG);
    assert_string_equal(b.data, "ab"); /* left as it was */
    json_decref(long_string);
    buf_free(&b);
}

static void randid_hex_ids(void **state)
{
    char a[33], b[33];
    assert_int_equal(randid_hex(a, sizeof(a), 16), 0);
    assert_int_equal(randid_hex(b, sizeof(b), 16), 0);
    assert_int_equal(strlen(a), 32);
    assert_int_equal(strspn(a, "0123456789abcdef"), 32);
    assert_string_not_equal(a, b);
    char small[32];
    assert_int_equal(randid_hex(small, sizeof(small), 16), -EINVAL); /* no room for the NUL */
    assert_string_equal(small, "");
}

static void path_name_checks(void **state)
{
    assert_null(path_check_name("team-a_1.x"));
    assert_non_null(path_check_name(""));
    assert_non_null(path_check_name(".hidden"));
    assert_non_null(path_check_name("a/b"));
    assert_non_null(path_check_name("a b"));
    assert_non_null(
        path_check_name("01234567890123456789012345678901234567890123456789012345678901234"));
}

static void url_loopback_hosts(void **state)
{
    static const char *const yes[] = {"localhost", "LocalHost.", "127.0.0.1",         "127.255.0.9",
                                      "::1",       "[::1]",      "[::ffff:127.0.0.2]"};
    static const char *const no[] = {"127.0.0.1.evil.com",
                                     "localhost.evil",
                                     "10.0.0.1",
                                     "::",
                                     "0.0.0.0",
                                     "[::ffff:10.0.0.1]",
                                     "",
                                     "evil"};
    for (size_t i = 0; i < sizeof(yes) / sizeof(*yes); i++)
        assert_true(url_host_is_loopback(yes[i]));
    for (size_t i = 0; i < sizeof(no) / sizeof(*no); i++)
        assert_false(url_host_is_loopback(no[i]));
}

static void url_default_allowlist_is_loopback(void **state)
{
    struct url_allowlist none = {0};
    static const char *const yes[] = {
        "http://127.0.0.1:9000/mcp", "https://localhost/x", "http://[::1]:8/",
        "http://2130706433/",        "http://127.1/",       "http://u:p@127.0.0.1/"};
    static const char *const no[] = {"http://127.0.0.1.evil.com/",
                                     "http://127.0.0.1@evil.example/",
                                     "http://10.0.0.1/",
                                     "ftp://127.0.0.1/",
                                     "file:///etc/passwd",
                                     "local",
                                     "http://127.0.0.1%2eevil.com/",
                                     "http://[::ffff:10.1.1.1]/",
                                     "not a url",
                                     "http://localhost.evil.example/",
                                     "gopher://127.0.0.1/"};
    for (size_t i = 0; i < sizeof(yes) / sizeof(*yes); i++)
        assert_true(url_allowed(&none, yes[i]));
    for (size_t i = 0; i < sizeof(no) / sizeof(*no); i++)
        assert_false(url_allowed(&none, no[i]));
}

static void url_prefixes_match_on_parsed_parts(void **state)
{
    struct url_allowlist l = {0};
    const char *why = NULL;
    assert_int_equal(url_allowlist_add(&l, "https://fw.example:8443/tenants/a", &why), 0);
    assert_int_equal(url_allowlist_add(&l, "http://Framework.internal", &why), 0);
    static const char *const yes[] = {
        "https://fw.example:8443/tenants/a",
        "https://fw.example:8443/tenants/a/mcp",
        "https://FW.example:8443/tenants/a/?q=1",
        "http://framework.internal/anything",
        "http://framework.internal:80/",
        "http://user@framework.internal/x",
        "https://fw.example:8443/tenants/a/x/../y", /* curl resolves it: /tenants/a/y */
    };
    static const char *const no[] = {
        "https://fw.example:8443/tenants/ab",         /* not on a segment boundary */
        "https://fw.example:8443/tenants",            /* above the prefix */
        "https://fw.example/tenants/a",               /* other port */
        "http://fw.example:8443/tenants/a",           /* other scheme */
        "https://fw.example:8443/tenants/a/%2e%2e/b", /* encoded dot segment */
        "https://fw.example:8443/tenants/a/../b",     /* resolves above the prefix */
        "https://fw.example.evil.com:8443/tenants/a", /* a raw prefix would pass this */
        "https://fw.example:8443@evil.com/tenants/a", /* and this */
        "http://framework.internal.evil.com/",        /* and this */
        "http://framework.internal:8080/",            /* other port */
        "http://127.0.0.1/",                          /* loopback is not implied by a list */
    };
    for (size_t i = 0; i < sizeof(yes) / sizeof(*yes); i++)
        assert_true(url_allowed(&l, yes[i]));
    for (size_t i = 0; i < sizeof(no) / sizeof(*no); i++)
        assert_false(url_allowed(&l, no[i]));
    static const char *const bad[] = {"ftp://x/",  "http://x/?q=1", "http://u@x/",
                                      "x.example", "http://x/#f",   "http://[::1/"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        why = NULL;
        assert_int_equal(url_allowlist_add(&l, bad[i], &why), -EINVAL);
        assert_non_null(why);
    }
    url_allowlist_done(&l);
    url_allowlist_done(&l); /* idempotent */
}

static void url_redaction(void **state)
{
    static const char *const cases[][2] = {
        {"http://127.0.0.1:9/mcp?api_key=SECRET", "http://127.0.0.1:9/mcp"},
        {"https://user:pass@llm.example/v1/chat", "https://llm.example/v1/chat"},
        {"https://a:b@c@host:1/p?x#frag", "https://host:1/p"},
        {"http://host/path@not-userinfo", "http://host/path@not-userinfo"},
        {"http://user:pw@host", "http://host"},
        {"user:pw@host/x?k=v", "host/x"},
        {"no url here", "no url here"},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        char *r = url_redact(cases[i][0]);
        assert_non_null(r);
        assert_string_equal(r, cases[i][1]);
        free(r);
    }
}

static void trust_rules(void **state)
{
    char dir[] = "/tmp/trust-test-XXXXXX";
    assert_non_null(mkdtemp(dir));
    struct sbx_error why = {0};
    /* Ours and private, below root-owned directories and the sticky /tmp: trusted. */
    assert_int_equal(trust_check(dir, TRUST_DIR, &why), 0);
    assert_null(why.message);
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/a/b/c", dir);
    assert_int_equal(trust_make_dir(path, &why), 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    /* Writable by the group, at the leaf or above it: refused, naming the level. */
    assert_int_equal(chmod(path, 0770), 0);
    assert_int_equal(trust_check(path, TRUST_DIR, &why), -EPERM);
    assert_int_equal(why.kind, SBX_ERR_FORBIDDEN);
    assert_string_equal(why.code, "UNTRUSTED_PATH");
    assert_non_null(strstr(why.message, "/a/b/c is writable by its group or by others"));
    sbx_error_clear(&why);
    assert_int_equal(chmod(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/a", dir);
    assert_int_equal(chmod(path, 0777), 0);
    snprintf(path, sizeof(path), "%s/a/b/c", dir);
    assert_int_equal(trust_check(path, TRUST_DIR, &why), -EPERM);
    assert_non_null(strstr(why.message, "/a is writable"));
    sbx_error_clear(&why);
    snprintf(path, sizeof(path), "%s/a", dir);
    assert_int_equal(chmod(path, 0700), 0);
    /* Someone else's: as root, a directory given to another uid; otherwise a root-owned one. */
    snprintf(path, sizeof(path), "%s/other", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    if (geteuid() == 0)
        assert_int_equal(chown(path, 12345, 12345), 0);
    const char *foreign = geteuid() == 0 ? path : "/etc";
    assert_int_equal(trust_check(foreign, TRUST_DIR, &why), -EPERM);
    assert_non_null(strstr(why.message, "is owned by uid"));
    sbx_error_clear(&why);
    /* Through a symlink of ours: judged by what it points to. */
    char link[PATH_MAX];
    snprintf(link, sizeof(link), "%s/link", dir);
    assert_int_equal(symlink(foreign, link), 0);
    assert_int_equal(trust_check(link, TRUST_DIR, &why), -EPERM);
    sbx_error_clear(&why);
    /* Files: ours or root's, not writable by others; a directory is not a file. */
    snprintf(path, sizeof(path), "%s/file", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(chmod(path, 0600), 0);
    assert_int_equal(trust_check(path, TRUST_FILE, &why), 0);
    assert_int_equal(chmod(path, 0602), 0);
    assert_int_equal(trust_check(path, TRUST_FILE, &why), -EPERM);
    sbx_error_clear(&why);
    assert_int_equal(trust_check(dir, TRUST_FILE, &why), -EINVAL);
    assert_int_equal(why.kind, SBX_ERR_INVALID);
    sbx_error_clear(&why);
    snprintf(path, sizeof(path), "%s/missing", dir);
    assert_int_equal(trust_check(path, TRUST_DIR, &why), -ENOENT);
    assert_int_equal(why.kind, SBX_ERR_NOT_FOUND);
    assert_non_null(strstr(why.message, "cannot resolve"));
    sbx_error_clear(&why);
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* proc_wait hands back the child's own exit status; proc_kill_wait ends and reaps a child that
 * would never exit by itself; neither leaves a zombie (a second wait finds no child). */
static void proc_wait_and_kill_wait_reap(void **state)
{
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(7);
    int status = -1;
    assert_int_equal(proc_wait(pid, &status), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 7);
    assert_int_equal(proc_wait(pid, NULL), -ECHILD);

    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        for (;;)
            pause();
    }
    proc_kill_wait(pid);
    assert_int_equal(proc_wait(pid, NULL), -ECHILD);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(buf_caps_and_never_truncates_silently),
        cmocka_unit_test(proc_wait_and_kill_wait_reap),
        cmocka_unit_test(buf_printf_and_empty_take),
        cmocka_unit_test(path_relative_checks),
        cmocka_unit_test(path_component_checks),
        cmocka_unit_test(jdump_reals_are_shortest),
        cmocka_unit_test(jdump_reals_round_trip),
        cmocka_unit_test(jdump_layout_matches_jansson),
        cmocka_unit_test(jdump_caps),
        cmocka_unit_test(randid_hex_ids),
        cmocka_unit_test(path_name_checks),
        cmocka_unit_test(url_loopback_hosts),
        cmocka_unit_test(url_default_allowlist_is_loopback),
        cmocka_unit_test(url_prefixes_match_on_parsed_parts),
        cmocka_unit_test(url_redaction),
        cmocka_unit_test(trust_rules),
        cmocka_unit_test(utf8_valid_and_escaped),
        cmocka_unit_test(log_lines_keep_what_bad_bytes_would_lose),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
