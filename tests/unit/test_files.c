// SPDX-License-Identifier: MIT
/* Unit tests: session/files (a session's files put, read, listed and deleted beneath its
 * working directory without following anything the sandbox planted: links to outside, a FIFO,
 * a directory where a file is expected). The working directory here is a temporary directory
 * of the test's own; the e2e tests use a session's. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "session/files.h"

static char base[256];
static int workdir = -1;

static int setup(void **state)
{
    snprintf(base, sizeof(base), "/tmp/sbx-files-XXXXXX");
    assert_non_null(mkdtemp(base));
    char path[300];
    snprintf(path, sizeof(path), "%s/work", base);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/outside", base);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/outside/secret", base);
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    assert_int_equal(write(fd, "SECRET", 6), 6);
    close(fd);
    snprintf(path, sizeof(path), "%s/work", base);
    workdir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(workdir >= 0);
    return 0;
}

static int teardown(void **state)
{
    close(workdir);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
    assert_int_equal(system(cmd), 0);
    return 0;
}

/* What GET .../files/{path} sends: the file read from the fd session_files_open() gives. */
static int get(const char *path, size_t max, char **ret, size_t *ret_len)
{
    int fd = -1;
    uint64_t size = 0;
    int r = session_files_open(workdir, path, max, getuid(), getgid(), &fd, &size);
    if (r < 0)
        return r;
    char *buf = calloc(1, (size_t)size + 1);
    assert_non_null(buf);
    assert_int_equal(pread(fd, buf, (size_t)size, 0), (ssize_t)size);
    assert_int_equal(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    close(fd);
    *ret = buf;
    *ret_len = (size_t)size;
    return 0;
}

static void files_put_get_list_delete(void **state)
{
    uid_t u = getuid();
    gid_t g = getgid();
    static const char data[] = "a\0b\xff";
    assert_int_equal(session_files_put(workdir, "in/deep/data.bin", data, 4, u, g), 0);
    assert_int_equal(session_files_put(workdir, "in/deep/data.bin", "new", 3, u, g), 0);
    assert_int_equal(session_files_put(workdir, "in/deep/data.bin", data, 4, u, g), 0);
    char *got = NULL;
    size_t len = 0;
    assert_int_equal(get("in/deep/data.bin", 1024, &got, &len), 0);
    assert_int_equal(len, 4);
    assert_memory_equal(got, data, 4);
    free(got);
    assert_int_equal(get("in/deep/data.bin", 3, &got, &len), -EFBIG);
    json_t *list = NULL;
    assert_int_equal(session_files_list(workdir, u, g, &list), 0);
    json_t *files = json_object_get(list, "files");
    assert_int_equal(json_array_size(files), 1);
    json_t *f = json_array_get(files, 0);
    assert_string_equal(json_string_value(json_object_get(f, "path")), "in/deep/data.bin");
    assert_int_equal(json_integer_value(json_object_get(f, "size")), 4);
    assert_false(json_is_true(json_object_get(list, "truncated")));
    json_decref(list);
    assert_int_equal(session_files_delete(workdir, "in/deep", u, g), -EISDIR);
    assert_int_equal(session_files_put(workdir, "in/deep", "x", 1, u, g), -EISDIR);
    assert_int_equal(session_files_delete(workdir, "in/deep/data.bin", u, g), 0);
    assert_int_equal(get("in/deep/data.bin", 1024, &got, &len), -ENOENT);
    assert_int_equal(session_files_delete(workdir, "in/deep/data.bin", u, g), -ENOENT);
    const char *bad[] = {"../outside/secret", "/etc/passwd", "a//b", "./a", "a/./b", "", "x/"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(session_files_put(workdir, bad[i], "x", 1, u, g), -EINVAL);
}

static void files_never_follow_what_the_sandbox_planted(void **state)
{
    uid_t u = getuid();
    gid_t g = getgid();
    char link[300], target[300], outside[300];
    snprintf(outside, sizeof(outside), "%s/outside", base);
    snprintf(target, sizeof(target), "%s/outside/secret", base);
    /* a directory link to outside: neither read nor written through */
    snprintf(link, sizeof(link), "%s/work/escape", base);
    assert_int_equal(symlink(outside, link), 0);
    char *got = NULL;
    size_t len = 0;
    int r = get("escape/secret", 1024, &got, &len);
    assert_true(r == -ELOOP || r == -ENOTDIR);
    r = session_files_put(workdir, "escape/new", "x", 1, u, g);
    assert_true(r == -ELOOP || r == -ENOTDIR);
    char probe[320];
    snprintf(probe, sizeof(probe), "%s/outside/new", base);
    assert_int_equal(access(probe, F_OK), -1);
    /* a file link to outside: not read; replaced (not written through) by a put */
    snprintf(link, sizeof(link), "%s/work/secret-link", base);
    assert_int_equal(symlink(target, link), 0);
    assert_int_equal(get("secret-link", 1024, &got, &len), -ELOOP);
    assert_int_equal(session_files_put(workdir, "secret-link", "mine", 4, u, g), 0);
    assert_int_equal(get("secret-link", 1024, &got, &len), 0);
    assert_string_equal(got, "mine");
    free(got);
    assert_int_equal(get("../outside/secret", 1024, &got, &len), -EINVAL);
    char secret[16] = "";
    int fd = open(target, O_RDONLY);
    assert_int_equal(read(fd, secret, sizeof(secret) - 1), 6);
    close(fd);
    assert_string_equal(secret, "SECRET");
    /* a FIFO answers at once instead of holding the caller */
    snprintf(link, sizeof(link), "%s/work/fifo", base);
    assert_int_equal(mkfifo(link, 0666), 0);
    assert_int_equal(get("fifo", 1024, &got, &len), -EINVAL);
    /* the listing names regular files only and walks no link */
    json_t *list = NULL;
    assert_int_equal(session_files_list(workdir, u, g, &list), 0);
    json_t *files = json_object_get(list, "files");
    assert_int_equal(json_array_size(files), 1); /* the put over secret-link */
    assert_string_equal(json_string_value(json_object_get(json_array_get(files, 0), "path")),
                        "secret-link");
    json_decref(list);
}

/* The path as the listing shows it: UTF-8 as it is, anything else percent-encoded and marked. */
static void files_paths_that_are_not_utf8(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"plain/a%b.txt", "plain/a%b.txt"},
        {"caf\xc3\xa9", "caf\xc3\xa9"},
        {"\xff\xfe.bin", "%FF%FE.bin"},
        {"d\xe9/a%b", "d%E9/a%25b"},
        {"new\xc3(.txt", "new%C3(.txt"},
        {"\xed\xa0\x80", "%ED%A0%80"}, /* a surrogate is not UTF-8 */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *o = json_object();
        assert_int_equal(session_files_path_set(o, cases[i][0]), 0);
        assert_string_equal(json_string_value(json_object_get(o, "path")), cases[i][1]);
        bool encoded = strcmp(cases[i][0], cases[i][1]) != 0;
        assert_int_equal(json_object_get(o, "pathEncoding") != NULL, encoded);
        json_decref(o);
    }
}

/* A listing visits at most SESSION_FILES_MAX_LIST entries, directories included. */
static void files_listing_is_bounded(void **state)
{
    (void)state;
    uid_t u = getuid();
    gid_t g = getgid();
    char path[400];
    snprintf(path, sizeof(path), "%s/work/many", base);
    assert_int_equal(mkdir(path, 0755), 0);
    for (int i = 0; i < SESSION_FILES_MAX_LIST + 5; i++) {
        snprintf(path, sizeof(path), "%s/work/many/d%05d", base, i);
        assert_int_equal(mkdir(path, 0755), 0);
    }
    json_t *list = NULL;
    assert_int_equal(session_files_list(workdir, u, g, &list), 0);
    assert_true(json_is_true(json_object_get(list, "truncated")));
    json_decref(list);
    for (int i = 0; i < SESSION_FILES_MAX_LIST + 5; i++) {
        snprintf(path, sizeof(path), "%s/work/many/d%05d", base, i);
        assert_int_equal(rmdir(path), 0);
    }
    assert_int_equal(session_files_list(workdir, u, g, &list), 0);
    assert_true(json_is_false(json_object_get(list, "truncated")));
    json_decref(list);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(files_put_get_list_delete),
        cmocka_unit_test(files_never_follow_what_the_sandbox_planted),
        cmocka_unit_test(files_paths_that_are_not_utf8),
        cmocka_unit_test(files_listing_is_bounded),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
