// SPDX-License-Identifier: MIT
/*
 * confine — see confine.h. The step table and the security lists, built
 * into sandboxd (the cold path) and into libsbxcell (the warm path) alike.
 * Constant data and async-signal-safe code only.
 */
#include "jail/confine.h"

#define CONFINE_ROW_(id, step_name, cold, warm)                                                    \
    [CONFINE_STEP_##id] = {.name = step_name, .on = {[CONFINE_COLD] = cold, [CONFINE_WARM] = warm}},

const struct confine_step_info confine_steps[CONFINE_STEP_COUNT] = {CONFINE_STEPS(CONFINE_ROW_)};

bool confine_runs(enum confine_path path, int step)
{
    return step >= 0 && step < CONFINE_STEP_COUNT && path >= 0 && path < CONFINE_PATHS &&
           confine_steps[step].on[path].runs;
}

const char *confine_step_name(int step)
{
    return step >= 0 && step < CONFINE_STEP_COUNT ? confine_steps[step].name : "?";
}

/* The writable corners of /proc (sysctls, sysrq, IRQ affinity, bus devices, PSI triggers):
 * nothing a sandbox has to write. */
const char *const confine_proc_readonly[] = {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq",
                                             "/proc/bus", "/proc/pressure"};
const size_t confine_proc_readonly_n =
    sizeof(confine_proc_readonly) / sizeof(*confine_proc_readonly);

size_t confine_rlimits(const struct confine_limits *l, struct steps_rlimit rl[CONFINE_RLIMITS_MAX])
{
    size_t n = 0;
    rl[n++] = (struct steps_rlimit){RLIMIT_CORE, 0};
    if (l->nofile)
        rl[n++] = (struct steps_rlimit){RLIMIT_NOFILE, l->nofile};
    if (l->fsize)
        rl[n++] = (struct steps_rlimit){RLIMIT_FSIZE, l->fsize};
    if (l->cpu_s)
        rl[n++] = (struct steps_rlimit){RLIMIT_CPU, l->cpu_s};
    if (l->nproc)
        rl[n++] = (struct steps_rlimit){RLIMIT_NPROC, l->nproc};
    return n;
}
