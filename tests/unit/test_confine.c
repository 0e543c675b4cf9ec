// SPDX-License-Identifier: MIT
/* Unit tests: jail/confine (the one step table of the cold and the warm confinement paths)
 * and libsbxcell's view of it, which the runtime reads (sbx_step_*). A step added to one path
 * only has no action or reason in the other path's column and fails here; a step without a
 * case in jail_child_step() or cell_step() does not build (-Wswitch, -Werror). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "jail/confine.h"

/* libsbxcell's exports (the runtime loads them with ctypes; no header of its own). */
int sbx_step_count(void);
const char *sbx_step_name(int step);
int sbx_step_fds(void);

static const char *const path_names[CONFINE_PATHS] = {"cold", "warm"};

static void every_step_is_named_once(void **state)
{
    for (int i = 0; i < CONFINE_STEP_COUNT; i++) {
        const char *name = confine_steps[i].name;
        assert_non_null(name);
        assert_true(name[0] != '\0');
        for (int j = 0; j < i; j++)
            if (strcmp(confine_steps[j].name, name) == 0)
                fail_msg("steps %d and %d are both named '%s'", j, i, name);
    }
    assert_string_equal(confine_step_name(-1), "?");
    assert_string_equal(confine_step_name(CONFINE_STEP_COUNT), "?");
}

/* The test that a step added to one path only fails: each row must say, for both paths,
 * what the path does there or why it does not run the step. */
static void every_step_has_an_action_or_a_reason_on_both_paths(void **state)
{
    for (int i = 0; i < CONFINE_STEP_COUNT; i++)
        for (int p = 0; p < CONFINE_PATHS; p++) {
            const struct confine_how *how = &confine_steps[i].on[p];
            if (!how->text || strlen(how->text) < 8)
                fail_msg("step '%s' has no %s for the %s path", confine_steps[i].name,
                         how->runs ? "action" : "reason", path_names[p]);
            assert_int_equal(confine_runs((enum confine_path)p, i), how->runs);
        }
    assert_false(confine_runs(CONFINE_COLD, -1));
    assert_false(confine_runs(CONFINE_WARM, CONFINE_STEP_COUNT));
}

/* What takes privileges away runs on both paths, in an order that keeps each step possible
 * and seccomp last: what a path runs after it must be allowed by the filter. */
static void both_paths_shed_the_same_privileges_with_seccomp_last(void **state)
{
    const enum confine_step both[] = {
        CONFINE_STEP_NAMESPACES, CONFINE_STEP_PROC_READONLY, CONFINE_STEP_HOSTNAME,
        CONFINE_STEP_CHDIR_TMP,  CONFINE_STEP_REMAP_FDS,     CONFINE_STEP_RLIMITS,
        CONFINE_STEP_DROP_CAPS,  CONFINE_STEP_NO_NEW_PRIVS,  CONFINE_STEP_SECCOMP,
    };
    for (size_t i = 0; i < sizeof(both) / sizeof(both[0]); i++)
        for (int p = 0; p < CONFINE_PATHS; p++)
            if (!confine_runs((enum confine_path)p, both[i]))
                fail_msg("the %s path skips '%s'", path_names[p], confine_step_name(both[i]));
    assert_true(CONFINE_STEP_REMAP_FDS < CONFINE_STEP_RLIMITS); /* RLIMIT_NOFILE after the close */
    assert_true(CONFINE_STEP_RLIMITS < CONFINE_STEP_DROP_CAPS);
    assert_true(CONFINE_STEP_DROP_CAPS < CONFINE_STEP_NO_NEW_PRIVS);
    assert_true(CONFINE_STEP_NO_NEW_PRIVS < CONFINE_STEP_SECCOMP);
    /* The warm path's user namespace comes after its mounts and hostname (they need the
     * zygote's capabilities) and before it drops them. */
    assert_true(CONFINE_STEP_MOUNT_PROC < CONFINE_STEP_USERNS);
    assert_true(CONFINE_STEP_HOSTNAME < CONFINE_STEP_USERNS);
    assert_true(CONFINE_STEP_GID_MAP < CONFINE_STEP_DROP_CAPS);
    for (int i = CONFINE_STEP_SECCOMP + 1; i < CONFINE_STEP_COUNT; i++) {
        if (confine_runs(CONFINE_WARM, i))
            fail_msg("the warm path runs '%s' after seccomp", confine_step_name(i));
        if (confine_runs(CONFINE_COLD, i) && i != CONFINE_STEP_EXECVE)
            fail_msg("the cold path runs '%s' after seccomp", confine_step_name(i));
    }
    assert_true(confine_runs(CONFINE_COLD, CONFINE_STEP_EXECVE));
}

/* Each path gets every namespace of the list, each from exactly one place. */
static void both_paths_get_every_namespace_once(void **state)
{
    int cold_clone = CONFINE_NAMESPACES & ~CONFINE_NS_COLD_LATE;
    assert_int_equal(cold_clone & CONFINE_NS_COLD_LATE, 0);
    assert_int_equal(cold_clone | CONFINE_NS_COLD_LATE, CONFINE_NAMESPACES);
    int warm_step = CONFINE_NAMESPACES & ~(CONFINE_NS_WARM_PREFORK | CONFINE_NS_WARM_LATE);
    assert_int_equal(CONFINE_NS_WARM_PREFORK & CONFINE_NS_WARM_LATE, 0);
    assert_int_equal(warm_step | CONFINE_NS_WARM_PREFORK | CONFINE_NS_WARM_LATE,
                     CONFINE_NAMESPACES);
    assert_int_equal(__builtin_popcount(CONFINE_NAMESPACES), 7);
}

static void rlimits_always_forbid_core_dumps(void **state)
{
    struct steps_rlimit rl[CONFINE_RLIMITS_MAX];
    struct confine_limits none = {0};
    assert_int_equal(confine_rlimits(&none, rl), 1);
    assert_int_equal(rl[0].resource, RLIMIT_CORE);
    assert_int_equal(rl[0].value, 0);
    struct confine_limits all = {.nofile = 256, .nproc = 64, .fsize = 1 << 20, .cpu_s = 5};
    assert_int_equal(confine_rlimits(&all, rl), CONFINE_RLIMITS_MAX);
    const struct steps_rlimit want[] = {{RLIMIT_CORE, 0},
                                        {RLIMIT_NOFILE, 256},
                                        {RLIMIT_FSIZE, 1 << 20},
                                        {RLIMIT_CPU, 5},
                                        {RLIMIT_NPROC, 64}};
    for (size_t i = 0; i < CONFINE_RLIMITS_MAX; i++) {
        assert_int_equal(rl[i].resource, want[i].resource);
        assert_int_equal(rl[i].value, want[i].value);
    }
}

/* The runtime names a warm failure, and picks the fd it reports it on, from these. */
static void the_cell_library_exports_the_same_table(void **state)
{
    assert_int_equal(sbx_step_count(), CONFINE_STEP_COUNT);
    for (int i = 0; i < CONFINE_STEP_COUNT; i++) {
        assert_non_null(sbx_step_name(i));
        assert_string_equal(sbx_step_name(i), confine_steps[i].name);
    }
    assert_null(sbx_step_name(-1));
    assert_null(sbx_step_name(CONFINE_STEP_COUNT));
    assert_int_equal(sbx_step_fds(), CONFINE_STEP_REMAP_FDS);
    assert_string_equal(sbx_step_name(sbx_step_fds()), "file descriptors");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_step_is_named_once),
        cmocka_unit_test(every_step_has_an_action_or_a_reason_on_both_paths),
        cmocka_unit_test(both_paths_shed_the_same_privileges_with_seccomp_last),
        cmocka_unit_test(both_paths_get_every_namespace_once),
        cmocka_unit_test(rlimits_always_forbid_core_dumps),
        cmocka_unit_test(the_cell_library_exports_the_same_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
