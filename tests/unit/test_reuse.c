// SPDX-License-Identifier: MIT
/* Unit tests: pool/reuse (the app list, keys, keeping and handing out interpreters, the
 * execution and idle caps, dead or chatty interpreters, load_code). Cells are real processes
 * (a sleep), so that retiring one is seen as its death. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

extern char **environ;

#include "exec/cell.h"
#include "pool/reuse.h"

struct child {
    pid_t pid;
    int peer; /* the child's end of the protocol socket, kept by the test */
    struct cell *cell;
};

/* Without a pidfd (valgrind has no pidfd_open) cell_kill() cannot reach the process: the
 * test's backend kills it by pid, as the pool's would through its zygote. */
static void test_release(struct cell *c)
{
    if (c->pidfd < 0)
        kill(c->pid, SIGKILL);
}

static const struct cell_ops test_ops = {.release = test_release};

/* A process that only waits (sleep, run directly: under valgrind it is not instrumented),
 * holding the other end of its protocol socket as fd 3 like a cell; the test keeps a copy
 * (peer) to speak for it. */
static void child_start(struct child *ch)
{
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    posix_spawn_file_actions_t fa;
    assert_int_equal(posix_spawn_file_actions_init(&fa), 0);
    assert_int_equal(posix_spawn_file_actions_adddup2(&fa, sv[1], 3), 0);
    char *const argv[] = {"sleep", "600", NULL};
    assert_int_equal(posix_spawn(&ch->pid, "/bin/sleep", &fa, NULL, argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    ch->peer = sv[1];
    ch->cell = cell_new(&test_ops, 1 << 16);
    assert_non_null(ch->cell);
    ch->cell->pid = ch->pid;
    ch->cell->pidfd = (int)syscall(SYS_pidfd_open, ch->pid, 0);
    ch->cell->proto_fd = sv[0];
}

static void child_wait_killed(struct child *ch)
{
    int status = 0;
    assert_int_equal(waitpid(ch->pid, &status, 0), ch->pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    if (ch->peer >= 0)
        close(ch->peer);
}

static struct reuse *make(const char *apps, unsigned max_exec, unsigned max_idle)
{
    struct reuse_options o = {
        .apps = apps, .max_executions = max_exec, .max_idle = max_idle, .idle_us = 3600000000};
    struct reuse *r = NULL;
    char *why = NULL;
    assert_int_equal(reuse_new(&o, &r, &why), 0);
    assert_null(why);
    return r;
}

static uint64_t stat_of(struct reuse *r, const char *group, const char *name)
{
    json_t *s = reuse_stats(r);
    json_t *o = group ? json_object_get(s, group) : s;
    uint64_t v = (uint64_t)json_integer_value(json_object_get(o, name));
    json_decref(s);
    return v;
}

static void app_lists(void **state)
{
    (void)state;
    struct reuse *r = make("billing,search", 10, 4);
    assert_true(reuse_wants(r, "billing"));
    assert_true(reuse_wants(r, "search"));
    assert_false(reuse_wants(r, "bill"));
    assert_false(reuse_wants(r, ""));
    assert_false(reuse_wants(r, NULL));
    assert_false(reuse_wants(NULL, "billing"));
    reuse_free(r);
    r = make("*", 10, 4);
    assert_true(reuse_wants(r, "anything"));
    reuse_free(r);
    char long_name[REUSE_APP_MAX + 2];
    memset(long_name, 'x', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    const char *bad[] = {"", ",", "a,,b", long_name};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct reuse_options o = {.apps = bad[i], .max_executions = 1, .max_idle = 1};
        char *why = NULL;
        r = NULL;
        assert_int_equal(reuse_new(&o, &r, &why), -EINVAL);
        assert_null(r);
        assert_non_null(why);
        assert_non_null(strstr(why, "--warm-reuse"));
        free(why);
    }
}

static void keys_tell_everything_apart(void **state)
{
    (void)state;
    const struct reuse_owner op = {.endpoint = "local"}, alpha = {"alpha", "local"},
                             beta = {"beta", "local"}, remote = {"alpha", "http://f/mcp"},
                             sep = {"a", "b local"}, sep2 = {"a b", "local"};
    char *keys[] = {
        reuse_key(&op, "a", "s.py", "Y29kZQ==", NULL),
        reuse_key(&op, "b", "s.py", "Y29kZQ==", NULL),
        reuse_key(&op, "a", "t.py", "Y29kZQ==", NULL),
        reuse_key(&op, "a", "s.py", "Y29kZTI=", NULL),
        reuse_key(&op, "a", "s.py", "Y29kZQ==", "datascience"),
        reuse_key(&op, "a b", "c", "Y29kZQ==", NULL), /* a separator inside a name */
        reuse_key(&op, "a", "b c", "Y29kZQ==", NULL),
        /* the tenant and the framework endpoint are parts of the key (CONTRACT §14) */
        reuse_key(&alpha, "a", "s.py", "Y29kZQ==", NULL),
        reuse_key(&beta, "a", "s.py", "Y29kZQ==", NULL),
        reuse_key(&remote, "a", "s.py", "Y29kZQ==", NULL),
        reuse_key(&sep, "a", "s.py", "Y29kZQ==", NULL),
        reuse_key(&sep2, "a", "s.py", "Y29kZQ==", NULL),
    };
    size_t n = sizeof(keys) / sizeof(keys[0]);
    for (size_t i = 0; i < n; i++) {
        assert_non_null(keys[i]);
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(keys[i], keys[j]);
    }
    char *same = reuse_key(&op, "a", "s.py", "Y29kZQ==", "default");
    assert_string_equal(same, keys[0]); /* "default" is the main pool */
    char *m64 = reuse_key_limits(keys[0], 64), *m128 = reuse_key_limits(keys[0], 128);
    assert_string_not_equal(m64, m128);
    free(same);
    free(m64);
    free(m128);
    for (size_t i = 0; i < n; i++)
        free(keys[i]);
}

static void kept_interpreter_is_handed_out_for_its_key_only(void **state)
{
    (void)state;
    struct reuse *r = make("*", 10, 4);
    struct child a;
    child_start(&a);
    unsigned uses = 0;
    assert_null(reuse_take(r, "k1", &uses));
    reuse_put(r, "app", "k1", a.cell, 1);
    assert_int_equal(stat_of(r, NULL, "idle"), 1);
    assert_null(reuse_take(r, "k2", &uses)); /* another key never gets it */
    struct cell *c = reuse_take(r, "k1", &uses);
    assert_ptr_equal(c, a.cell);
    assert_int_equal(uses, 1);
    assert_null(reuse_take(r, "k1", &uses)); /* taken: one user at a time */
    assert_int_equal(stat_of(r, NULL, "reused"), 1);
    assert_int_equal(stat_of(r, NULL, "misses"), 3);
    cell_free(c);
    child_wait_killed(&a);
    reuse_free(r);
}

static void retired_after_max_executions(void **state)
{
    (void)state;
    struct reuse *r = make("*", 3, 4);
    struct child a;
    child_start(&a);
    reuse_put(r, "app", "k", a.cell, 3);
    child_wait_killed(&a);
    unsigned uses;
    assert_null(reuse_take(r, "k", &uses));
    assert_int_equal(stat_of(r, "retired", "executions"), 1);
    reuse_free(r);
}

static void least_recently_used_goes_first(void **state)
{
    (void)state;
    struct reuse *r = make("*", 10, 2);
    struct child a, b, c;
    child_start(&a);
    child_start(&b);
    child_start(&c);
    reuse_put(r, "app", "ka", a.cell, 1);
    reuse_put(r, "app", "kb", b.cell, 1);
    reuse_put(r, "app", "kc", c.cell, 1); /* over --reuse-max-idle 2: a goes */
    child_wait_killed(&a);
    assert_int_equal(stat_of(r, "retired", "lru"), 1);
    assert_int_equal(stat_of(r, NULL, "idle"), 2);
    reuse_free(r); /* kills what is kept */
    child_wait_killed(&b);
    child_wait_killed(&c);
}

static void dead_or_chatty_interpreters_are_not_handed_out(void **state)
{
    (void)state;
    struct reuse *r = make("*", 10, 4);
    struct child dead, chatty;
    child_start(&dead);
    child_start(&chatty);
    reuse_put(r, "app", "k", dead.cell, 1);
    close(dead.peer); /* from now on only the process holds the other end */
    dead.peer = -1;
    kill(dead.pid, SIGKILL);
    child_wait_killed(&dead);
    unsigned uses;
    assert_null(reuse_take(r, "k", &uses));
    reuse_put(r, "app", "k", chatty.cell, 1);
    assert_int_equal(write(chatty.peer, "x", 1), 1); /* said something while idle */
    assert_null(reuse_take(r, "k", &uses));
    child_wait_killed(&chatty);
    assert_int_equal(stat_of(r, "retired", "dead"), 2);
    reuse_free(r);
}

static void load_code_retires_one_app(void **state)
{
    (void)state;
    struct reuse *r = make("*", 10, 4);
    struct child a1, a2, b;
    child_start(&a1);
    child_start(&a2);
    child_start(&b);
    reuse_put(r, "appA", "ka1", a1.cell, 1);
    reuse_put(r, "appB", "kb", b.cell, 1);
    reuse_put(r, "appA", "ka2", a2.cell, 1);
    assert_int_equal(reuse_retire_app(r, "appA"), 2);
    assert_int_equal(reuse_retire_app(NULL, "appA"), 0);
    child_wait_killed(&a1);
    child_wait_killed(&a2);
    unsigned uses;
    struct cell *c = reuse_take(r, "kb", &uses);
    assert_ptr_equal(c, b.cell);
    cell_free(c);
    child_wait_killed(&b);
    assert_int_equal(stat_of(r, "retired", "loadCode"), 2);
    reuse_free(r);
}

static void idle_interpreters_retire(void **state)
{
    (void)state;
    struct reuse_options o = {.apps = "*", .max_executions = 10, .max_idle = 4, .idle_us = 1};
    struct reuse *r;
    char *why = NULL;
    assert_int_equal(reuse_new(&o, &r, &why), 0);
    struct child a;
    child_start(&a);
    reuse_put(r, "app", "k", a.cell, 1);
    child_wait_killed(&a); /* the sweeper retires it (within about a second) */
    assert_int_equal(stat_of(r, "retired", "idle"), 1);
    assert_int_equal(stat_of(r, NULL, "idle"), 0);
    reuse_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(app_lists),
        cmocka_unit_test(keys_tell_everything_apart),
        cmocka_unit_test(kept_interpreter_is_handed_out_for_its_key_only),
        cmocka_unit_test(retired_after_max_executions),
        cmocka_unit_test(least_recently_used_goes_first),
        cmocka_unit_test(dead_or_chatty_interpreters_are_not_handed_out),
        cmocka_unit_test(load_code_retires_one_app),
        cmocka_unit_test(idle_interpreters_retire),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
