// SPDX-License-Identifier: MIT
/*
 * Unit tests: jail/cgroup against a fake cgroupfs. A temp dir holds a cgroup v2 tree (and
 * for one test v1 hierarchies) made of plain files, plus a fake /proc (self/cgroup,
 * self/mountinfo, meminfo) that points at it. The struct cgroup_fs handed to the module
 * models the kernel's rules over those files: mkdir fills in the interface files,
 * controllers flow from a parent's cgroup.subtree_control to its children's
 * cgroup.controllers, enabling a controller that is not offered is ENOENT, a non-root
 * cgroup with processes cannot enable controllers (EBUSY: "no internal processes"), writing
 * a pid to cgroup.procs moves it out of every other cgroup, and rmdir of a cgroup with
 * processes is EBUSY. The tests assert the files the module leaves behind.
 */
#include "cgroup_fixture.h"

/* ---- tests ------------------------------------------------------------------------------- */

/* The shared-cgroup case: enabling controllers in /user.slice/shell is EBUSY while the shell,
 * its sibling and sandboxd are in it; every one of them moves into the leaf, then it works. */
static void v2_moves_every_process_into_a_leaf_on_ebusy(void **state)
{
    struct fake *f = *state;
    struct cgroup_env env;
    struct cgroup_options o = {0};
    struct cgroup_fs fs;
    assert_int_equal(init_env(f, &env, &o, &fs), 0);
    char *shell = path_of(f->root, "user.slice/shell");
    char *leaf = path_of(shell, "supervisor"), *cells = path_of(shell, "cells");
    assert_int_equal(env.mode, CGROUP_V2);
    assert_int_equal(f->ebusy, 1); /* the kernel said no once, before the move */
    assert_string_equal(env.base, shell);
    assert_string_equal(env.leaf, leaf);
    assert_int_equal(env.moved, 3);
    char *want = NULL;
    assert_true(asprintf(&want, "101\n102\n%d\n", (int)getpid()) > 0);
    assert_file(leaf, "cgroup.procs", want);
    assert_file(shell, "cgroup.procs", "");
    assert_file(shell, "cgroup.subtree_control", "memory pids cpu");
    assert_file(cells, "cgroup.subtree_control", "memory pids cpu");
    /* 3/4 of the tightest limit on the way up: user.slice's 4 GiB, not the machine's 8. */
    assert_file(cells, "memory.max", "3221225472");
    assert_int_equal(env.budget, 3221225472ull);
    assert_non_null(strstr(env.budget_from, "user.slice/memory.max"));
    assert_null(env.reason);
    /* Never a parent's knob. */
    char *slice = path_of(f->root, "user.slice");
    assert_file(slice, "cgroup.subtree_control", "cpu memory pids\n");
    assert_file(slice, "memory.max", "4294967296\n");
    json_t *d = cgroup_env_describe(&env);
    assert_string_equal(json_string_value(json_object_get(d, "mode")), "v2");
    assert_int_equal(json_integer_value(json_object_get(d, "processesMoved")), 3);
    assert_true(env.have_peak);
    assert_false(env.peak_resettable); /* a 6.1 kernel: opens for writing, refuses the write */
    assert_non_null(strstr(json_string_value(json_object_get(d, "memoryPeak")), "since the cell"));
    assert_string_equal(json_string_value(json_object_get(d, "supervisorLeaf")), leaf);
    json_decref(d);
    cgroup_env_done(&env);
    assert_false(exists(shell, "cells")); /* removed at the end; the leaf stays */
    assert_true(exists(shell, "supervisor"));
    free(want);
    free(slice);
    free(cells);
    free(leaf);
    free(shell);
}

/* A cell: created with its fixed knobs, limited, attached, measured per period, killed and
 * removed; a removal refused while a process is counted goes to the graveyard. */
static void v2_cell_lifecycle(void **state)
{
    struct fake *f = *state;
    f->peak_reset = true;
    struct cgroup_env env;
    struct cgroup_options o = {.cpus_milli = 500};
    struct cgroup_fs fs;
    assert_int_equal(init_env(f, &env, &o, &fs), 0);
    assert_true(env.cpu_quota && env.have_peak && env.peak_resettable && env.have_kill);
    struct cgroup_cell *c;
    assert_int_equal(cgroup_cell_new(&env, &c), 0);
    char *dir = path_of(env.cells, "c1");
    assert_file(dir, "memory.oom.group", "1");
    assert_file(dir, "memory.swap.max", "0");
    assert_file(dir, "cpu.max", "max 100000\n"); /* not yet: a pool's zygote never gets it */
    assert_int_equal(cgroup_cell_set_limits(c, 64u << 20, 32), 0);
    assert_file(dir, "cpu.max", "50000 100000");
    assert_file(dir, "memory.max", "67108864");
    assert_file(dir, "pids.max", "32");
    assert_int_equal(cgroup_cell_attach(c, 4242), 0);
    assert_file(dir, "cgroup.procs", "4242\n");

    put(dir, "cpu.stat", "usage_usec 700\nuser_usec 500\nsystem_usec 200\n");
    put(dir, "memory.events", "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n");
    assert_int_equal(cgroup_cell_reset_peak(c), 0);
    char *peak = get(dir, "memory.peak");
    assert_int_equal(strncmp(peak, "reset\n", 6), 0); /* the per-fd reset of 6.12+ */
    free(peak);
    put(dir, "cpu.stat", "usage_usec 2200\nuser_usec 1500\nsystem_usec 700\n");
    put(dir, "memory.peak", "12582912\n");
    put(dir, "memory.events", "low 0\nhigh 0\nmax 9\noom 2\noom_kill 3\n");
    struct cgroup_usage u;
    assert_int_equal(cgroup_cell_usage(c, &u), 0);
    assert_true(u.have_cpu && u.have_memory);
    assert_int_equal(u.cpu_ns, 1500000); /* since the reset */
    assert_int_equal(u.memory_peak, 12582912);
    assert_int_equal(u.oom_kills, 2); /* since the reset */

    assert_int_equal(cgroup_cell_kill(c), 0);
    assert_file(dir, "cgroup.kill", "1");
    cgroup_cell_free(c); /* 4242 is still counted: EBUSY, kept in the graveyard */
    assert_non_null(env.graveyard);
    assert_true(exists(env.cells, "c1"));
    put(dir, "cgroup.procs", "");
    cgroup_env_sweep(&env);
    assert_null(env.graveyard);
    assert_false(exists(env.cells, "c1"));
    free(dir);
    cgroup_env_done(&env);
}

/* The true reason: a cgroup whose parent does not hand it the memory controller. Nothing is
 * created or moved, and --require-cgroups turns it into a failure. */
static void v2_missing_controller_gives_the_true_reason(void **state)
{
    struct fake *f = *state;
    char *shell = path_of(f->root, "user.slice/shell");
    char *slice = path_of(f->root, "user.slice");
    put(slice, "cgroup.subtree_control", "cpu pids\n");
    free(slice);
    struct cgroup_env env;
    struct cgroup_options o = {0};
    struct cgroup_fs fs;
    assert_int_equal(init_env(f, &env, &o, &fs), 0);
    assert_int_equal(env.mode, CGROUP_NONE);
    assert_non_null(env.reason);
    assert_non_null(strstr(env.reason, "cgroup v2: "));
    assert_non_null(strstr(env.reason, "does not offer the memory controller"));
    assert_non_null(strstr(env.reason, "\"cpu pids\""));
    assert_null(strstr(env.reason, "v1")); /* a pure v2 host: no word about v1 */
    assert_false(exists(shell, "supervisor"));
    assert_false(exists(shell, "cells"));
    assert_int_equal(f->moves, 0);
    cgroup_env_done(&env);

    o = (struct cgroup_options){.require = true};
    assert_true(init_env(f, &env, &o, &fs) < 0);
    assert_non_null(strstr(env.reason, "memory controller"));
    cgroup_env_done(&env);
    free(shell);
}

/* A cgroup we may not write to (not delegated): the reason says so and what to do. */
static void v2_not_delegated_says_how_to_fix_it(void **state)
{
    struct fake *f = *state;
    f->deny = f->root;
    struct cgroup_env env;
    struct cgroup_options o = {0};
    struct cgroup_fs fs;
    assert_int_equal(init_env(f, &env, &o, &fs), 0);
    assert_int_equal(env.mode, CGROUP_NONE);
    assert_non_null(strstr(env.reason, "Permission denied"));
    assert_non_null(strstr(env.reason, "Delegate=yes"));
    cgroup_env_done(&env);
}

/* --cgroup-root: an empty delegated cgroup; no process to move, the budget and quota as
 * given. */
static void v2_delegated_root(void **state)
{
    struct fake *f = *state;
    char *del = host_cgroup(f, "sandboxd.service", "");
    struct cgroup_env env;
    struct cgroup_options o = {.root = del, .cells_bytes = 512u << 20, .cpus_milli = 1250};
    struct cgroup_fs fs;
    assert_int_equal(init_env(f, &env, &o, &fs), 0);
    assert_int_equal(env.mode, CGROUP_V2);
    assert_true(env.required);
    assert_null(env.leaf);
    assert_int_equal(f->ebusy, 0);
    assert_int_equal(f->moves, 0);
    char *cells = path_of(del, "cells");
    assert_string_equal(env.cells, cells);
    assert_file(cells, "memory.max", "536870912");
    assert_string_equal(env.budget_from, "--cells-memory-mb");
    struct cgroup_cell *c;
    assert_int_equal(cgroup_cell_new(&env, &c), 0);
    assert_int_equal(cgroup_cell_set_limits(c, 0, 0), 0);
    char *dir = path_of(cells, "c1");
    assert_file(dir, "cpu.max", "125000 100000");
    cgroup_cell_free(c);
    cgroup_env_done(&env);
    assert_false(exists(del, "cells"));
    free(dir);
    free(cells);
    free(del);
}

/* A cells directory left by a crashed instance is taken over (its stale cells removed) when
 * empty, and refused while something still runs in it. */
static void v2_stale_cells(void **state)
{
    struct fake *f = *state;
    char *del = host_cgroup(f, "svc", "");
    put(del, "cgroup.subtree_control", "memory pids");
    char *cells = host_cgroup(f, "svc/cells", "");
    put(cells, "cgroup.subtree_control", "memory pids");
    char *stale = host_cgroup(f, "svc/cells/c1", "");
    struct cgroup_env env;
    struct cgroup_options o = {.root = del};
    struct cgroup_fs fs;
    assert_int_equal(init_env(f, &env, &o, &fs), 0);
    assert_int_equal(env.mode, CGROUP_V2);
    assert_false(exists(cells, "c1"));
    cgroup_env_done(&env);

    cells = (free(cells), host_cgroup(f, "svc/cells", ""));
    put(cells, "cgroup.events", "populated 1\nfrozen 0\n");
    assert_true(init_env(f, &env, &o, &fs) < 0); /* --cgroup-root implies --require-cgroups */
    assert_non_null(strstr(env.reason, "holds processes"));
    cgroup_env_done(&env);
    assert_true(exists(del, "cells")); /* someone else's: left alone */
    free(stale);
    free(cells);
    free(del);
}

/* --cpus without a cpu controller: memory and pids limits still work; the quota's absence has
 * its own reason, and is fatal only with --require-cgroups. */
static void v2_cpus_without_cpu_controller(void **state)
{
    struct fake *f = *state;
    char *shell = path_of(f->root, "user.slice/shell");
    char *slice = path_of(f->root, "user.slice");
    put(slice, "cgroup.subtree_control", "memory pids\n");
    free(slice);
    struct cgroup_env env;
    struct cgroup_options o = {.cpus_milli = 500};
    struct cgroup_fs fs;
    assert_int_equal(init_env(f, &env, &o, &fs), 0);
    assert_int_equal(env.mode, CGROUP_V2);
    assert_false(env.cpu_quota);
    assert_non_null(strstr(env.cpu_reason, "does not offer the cpu controller"));
    char *cells = path_of(shell, "cells");
    assert_file(cells, "cgroup.subtree_control", "memory pids");
    cgroup_env_done(&env);
    o.require = true;
    assert_true(init_env(f, &env, &o, &fs) < 0);
    cgroup_env_done(&env);
    free(cells);
    free(shell);
}

/* A kernel before 5.19 has no memory.peak: accounting says it falls back. */
static void v2_old_kernel_without_memory_peak(void **state)
{
    struct fake *f = *state;
    f->no_peak = true;
    struct cgroup_env env;
    struct cgroup_options o = {0};
    struct cgroup_fs fs;
    assert_int_equal(init_env(f, &env, &o, &fs), 0);
    assert_false(env.have_peak);
    struct cgroup_cell *c;
    assert_int_equal(cgroup_cell_new(&env, &c), 0);
    assert_int_equal(cgroup_cell_reset_peak(c), 0);
    struct cgroup_usage u;
    assert_int_equal(cgroup_cell_usage(c, &u), 0);
    assert_true(u.have_cpu);
    assert_false(u.have_memory);
    json_t *d = cgroup_env_describe(&env);
    assert_non_null(strstr(json_string_value(json_object_get(d, "memoryPeak")), "rusage"));
    json_decref(d);
    cgroup_cell_free(c);
    cgroup_env_done(&env);
}

/* A hybrid host (like one with systemd's legacy layout): cgroup2 offers no memory, the v1
 * hierarchies do. v1 is used, with the budget on sandboxd-<pid> and the quota per cell; and
 * when v1 is unwritable too, the reason names both. */
/* A hybrid host as this project's CI machine is: memory, pids, cpuacct and cpu on cgroup v1
 * (under f->tmp/v1, returned), an empty cgroup v2 mount, our cgroups at the v1 roots. Returns
 * the memory hierarchy's directory; *ret_shell the v2 cgroup (caller frees both). */
static char *v1_host(struct fake *f, char *v1, size_t v1_size, char **ret_shell)
{
    put(f->root, "cgroup.controllers", "hugetlb\n");
    *ret_shell = path_of(f->root, "user.slice/shell");
    char *slice = path_of(f->root, "user.slice");
    put(slice, "cgroup.subtree_control", "");
    free(slice);
    char self[PATH_MAX], mi[8192] = "";
    snprintf(self, sizeof(self), "%s/self", f->proc);
    snprintf(v1, v1_size, "%s/v1", f->tmp);
    assert_int_equal(mkdir(v1, 0755), 0);
    const char *hier[] = {"memory", "pids", "cpuacct", "cpu"};
    for (size_t i = 0; i < 4; i++) {
        char *h = path_of(v1, hier[i]);
        assert_int_equal(mkdir(h, 0755), 0);
        snprintf(mi + strlen(mi), sizeof(mi) - strlen(mi),
                 "%zu 22 0:%zu / %s rw - cgroup cgroup rw,%s\n", 40 + i, 40 + i, h, hier[i]);
        free(h);
    }
    snprintf(mi + strlen(mi), sizeof(mi) - strlen(mi),
             "30 22 0:26 / %s/cgroup\\040fs rw - cgroup2 cgroup2 rw\n", f->tmp);
    put(self, "mountinfo", mi);
    put(self, "cgroup", "5:memory:/\n4:pids:/\n3:cpuacct:/\n2:cpu:/\n0::/user.slice/shell\n");
    char *mem = path_of(v1, "memory");
    put(mem, "memory.limit_in_bytes", "2147483648\n");
    return mem;
}

static void v1_on_a_hybrid_host(void **state)
{
    struct fake *f = *state;
    char v1[PATH_MAX], *shell;
    char *mem = v1_host(f, v1, sizeof(v1), &shell);

    struct cgroup_env env;
    struct cgroup_options o = {.cpus_milli = 250};
    struct cgroup_fs fs;
    assert_int_equal(init_env(f, &env, &o, &fs), 0);
    assert_int_equal(env.mode, CGROUP_V1);
    char *base = NULL;
    assert_true(asprintf(&base, "%s/sandboxd-%d", mem, (int)getpid()) > 0);
    assert_string_equal(env.v1_memory, base);
    assert_file(base, "memory.limit_in_bytes", "1610612736"); /* 3/4 of the 2 GiB above */
    assert_file(base, "memory.use_hierarchy", "1");
    assert_true(env.cpu_quota);
    assert_false(exists(shell, "supervisor")); /* v2 was left alone */
    struct cgroup_cell *c;
    assert_int_equal(cgroup_cell_new(&env, &c), 0);
    assert_int_equal(cgroup_cell_set_limits(c, 64u << 20, 16), 0);
    char *cell = path_of(base, "c1");
    assert_file(cell, "memory.limit_in_bytes", "67108864");
    char *cpu = NULL;
    assert_true(asprintf(&cpu, "%s/cpu/sandboxd-%d/c1", v1, (int)getpid()) > 0);
    assert_file(cpu, "cpu.cfs_quota_us", "25000");
    assert_file(cpu, "cpu.cfs_period_us", "100000");
    assert_int_equal(cgroup_cell_attach(c, 777), 0);
    assert_file(cpu, "cgroup.procs", "777\n");
    put(cell, "cgroup.procs", "");
    put(cpu, "cgroup.procs", "");
    char *pids = NULL;
    assert_true(asprintf(&pids, "%s/pids/sandboxd-%d/c1", v1, (int)getpid()) > 0);
    put(pids, "cgroup.procs", "");
    char *acct = NULL;
    assert_true(asprintf(&acct, "%s/cpuacct/sandboxd-%d/c1", v1, (int)getpid()) > 0);
    put(acct, "cgroup.procs", "");
    cgroup_cell_free(c);
    cgroup_env_done(&env);
    assert_false(exists(mem, strrchr(base, '/') + 1));

    f->deny = v1;
    assert_int_equal(init_env(f, &env, &o, &fs), 0);
    assert_int_equal(env.mode, CGROUP_NONE);
    assert_non_null(strstr(env.reason, "cgroup v2: "));
    assert_non_null(strstr(env.reason, "does not offer the memory controller: it is bound to a "
                                       "cgroup v1 hierarchy"));
    assert_non_null(strstr(env.reason, "; cgroup v1: cannot create"));
    assert_non_null(strstr(env.reason, "Permission denied"));
    cgroup_env_done(&env);
    free(acct);
    free(pids);
    free(cpu);
    free(cell);
    free(base);
    free(mem);
    free(shell);
}

/* A sandboxd killed before it cleaned up left sandboxd-<pid> with its cells; a later one that
 * gets the same pid removes them instead of failing on names that are taken. */
static void v1_stale_base_of_a_dead_namesake(void **state)
{
    struct fake *f = *state;
    char v1[PATH_MAX], *shell;
    char *mem = v1_host(f, v1, sizeof(v1), &shell);
    const char *hier[] = {"memory", "pids"};
    for (size_t h = 0; h < ARRAY_SIZE(hier); h++)
        for (int i = 0; i < 12; i++) { /* more than cgroup.c's tries at a free name */
            char *dir = NULL;
            assert_true(asprintf(&dir, "%s/%s/sandboxd-%d/c%d", v1, hier[h], (int)getpid(), i) > 0);
            char *parent = strndup(dir, strrchr(dir, '/') - dir);
            (void)fake_mkdir(f, parent); /* with the knobs the kernel would give them */
            assert_int_equal(fake_mkdir(f, dir), 0);
            free(parent);
            free(dir);
        }
    struct cgroup_env env;
    struct cgroup_options o = {0};
    struct cgroup_fs fs;
    assert_int_equal(init_env(f, &env, &o, &fs), 0);
    assert_int_equal(env.mode, CGROUP_V1);
    assert_false(exists(env.v1_memory, "c5"));
    assert_false(exists(env.v1_pids, "c11"));
    struct cgroup_cell *c;
    assert_int_equal(cgroup_cell_new(&env, &c), 0);
    assert_non_null(c);
    cgroup_cell_free(c);
    cgroup_env_done(&env);
    free(mem);
    free(shell);
}

int main(void)
{
    log_set_level(LOG_OFF);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(v2_moves_every_process_into_a_leaf_on_ebusy, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(v2_cell_lifecycle, setup, teardown),
        cmocka_unit_test_setup_teardown(v2_missing_controller_gives_the_true_reason, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(v2_not_delegated_says_how_to_fix_it, setup, teardown),
        cmocka_unit_test_setup_teardown(v2_delegated_root, setup, teardown),
        cmocka_unit_test_setup_teardown(v2_stale_cells, setup, teardown),
        cmocka_unit_test_setup_teardown(v2_cpus_without_cpu_controller, setup, teardown),
        cmocka_unit_test_setup_teardown(v2_old_kernel_without_memory_peak, setup, teardown),
        cmocka_unit_test_setup_teardown(v1_on_a_hybrid_host, setup, teardown),
        cmocka_unit_test_setup_teardown(v1_stale_base_of_a_dead_namesake, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
