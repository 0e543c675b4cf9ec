// SPDX-License-Identifier: MIT
/*
 * common — options every subcommand shares (interpreter, runtime location,
 * jail knobs, logging), the lookup of the runtime next to the binary, and
 * number parsing that rejects garbage instead of reading it as zero.
 */
#ifndef SANDBOXD_CMD_COMMON_H
#define SANDBOXD_CMD_COMMON_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "jail/jail.h"

struct common_opts {
    const char *python;
    const char *runtime_dir;
    const char *cell_lib;
    const char **binds; /* NULL-terminated, grown by --bind */
    size_t n_binds;
    const char **site_packages; /* NULL-terminated, grown by --site-packages */
    size_t n_site_packages;
    uint64_t tmp_mb;
    uint64_t sandbox_uid;
    bool no_cgroups;
    bool require_cgroups;
    const char *cgroup_root;
    uint64_t cells_memory_mb; /* 0: the default budget */
    uint32_t cpus_milli;      /* --cpus x 1000; 0: no quota */
    bool insecure_no_seccomp;
    bool no_toolbox;          /* --toolbox none */
    const char **toolbox_add; /* NULL-terminated, grown by --toolbox-add */
    size_t n_toolbox_add;
    /* resolved by common_resolve() */
    char *runtime_dir_buf;
    char *cell_lib_buf;
};

enum {
    COMMON_OPT_PYTHON = 1000,
    COMMON_OPT_RUNTIME_DIR,
    COMMON_OPT_CELL_LIB,
    COMMON_OPT_BIND,
    COMMON_OPT_TMP_MB,
    COMMON_OPT_SANDBOX_UID,
    COMMON_OPT_NO_CGROUPS,
    COMMON_OPT_REQUIRE_CGROUPS,
    COMMON_OPT_CGROUP_ROOT,
    COMMON_OPT_CELLS_MEMORY,
    COMMON_OPT_CPUS,
    COMMON_OPT_INSECURE_NO_SECCOMP,
    COMMON_OPT_LOG_LEVEL,
    COMMON_OPT_SITE_PACKAGES,
    COMMON_OPT_TOOLBOX,
    COMMON_OPT_TOOLBOX_ADD,
    COMMON_OPT_LAST,
};

#define COMMON_LONG_OPTIONS                                                                        \
    {"python", required_argument, NULL, COMMON_OPT_PYTHON},                                        \
        {"runtime-dir", required_argument, NULL, COMMON_OPT_RUNTIME_DIR},                          \
        {"cell-lib", required_argument, NULL, COMMON_OPT_CELL_LIB},                                \
        {"bind", required_argument, NULL, COMMON_OPT_BIND},                                        \
        {"tmp-size-mb", required_argument, NULL, COMMON_OPT_TMP_MB},                               \
        {"sandbox-uid", required_argument, NULL, COMMON_OPT_SANDBOX_UID},                          \
        {"no-cgroups", no_argument, NULL, COMMON_OPT_NO_CGROUPS},                                  \
        {"require-cgroups", no_argument, NULL, COMMON_OPT_REQUIRE_CGROUPS},                        \
        {"cgroup-root", required_argument, NULL, COMMON_OPT_CGROUP_ROOT},                          \
        {"cells-memory-mb", required_argument, NULL, COMMON_OPT_CELLS_MEMORY},                     \
        {"cpus", required_argument, NULL, COMMON_OPT_CPUS},                                        \
        {"insecure-no-seccomp", no_argument, NULL, COMMON_OPT_INSECURE_NO_SECCOMP},                \
        {"site-packages", required_argument, NULL, COMMON_OPT_SITE_PACKAGES},                      \
        {"toolbox", required_argument, NULL, COMMON_OPT_TOOLBOX},                                  \
        {"toolbox-add", required_argument, NULL, COMMON_OPT_TOOLBOX_ADD},                          \
    {                                                                                              \
        "log-level", required_argument, NULL, COMMON_OPT_LOG_LEVEL                                 \
    }

#define COMMON_HELP                                                                                \
    "Sandbox options:\n"                                                                           \
    "  --python PATH          interpreter inside the jail (default /usr/bin/python3)\n"            \
    "  --runtime-dir DIR      sandboxd's Python runtime (default: found next to the binary)\n"     \
    "  --cell-lib PATH        libsbxcell.so (default: next to the binary)\n"                       \
    "  --bind SRC[:DST]       extra read-only bind mount (repeatable)\n"                           \
    "  --site-packages DIR    also import from DIR (a virtualenv's site-packages), bound\n"        \
    "                         read-only with what its symlinks reach (repeatable)\n"               \
    "  --toolbox MODE         default: bind sh, bash, coreutils, grep, sed, awk, find, tar,\n"     \
    "                         gzip and the libraries they need read-only, for code that\n"         \
    "                         shells out; none: only the interpreter\n"                            \
    "  --toolbox-add PROG     also bind PROG (a name on the host's PATH or an absolute path)\n"    \
    "                         and its libraries (repeatable; never a setuid program)\n"            \
    "  --tmp-size-mb N        size of the sandbox's writable /tmp (default 64)\n"                  \
    "  --sandbox-uid N        host uid sandboxes run as when sandboxd is root (default 65534)\n"   \
    "  --no-cgroups           do not use cgroups (rlimits only)\n"                                 \
    "  --require-cgroups      refuse to start when the cgroup limits (and the --cpus quota)\n"     \
    "                         cannot be had; without it sandboxd falls back to rlimits and\n"      \
    "                         /healthz says why\n"                                                 \
    "  --cgroup-root DIR      put the sandboxes' cgroups in DIR, a delegated cgroup v2\n"          \
    "                         directory (default: below sandboxd's own cgroup); implies\n"         \
    "                         --require-cgroups\n"                                                 \
    "  --cells-memory-mb N    memory of all sandboxes together (default: 3/4 of the machine's\n"   \
    "                         memory or of the limit of sandboxd's cgroup, if lower)\n"            \
    "  --cpus N               CPU quota of each sandbox, e.g. 0.5 or 2 (default: none)\n"          \
    "  --insecure-no-seccomp  run without the seccomp filter (reported by /healthz)\n"             \
    "  --log-level LEVEL      debug|info|warn|error (default info)\n"

/* 1 when opt was a common option (consumed), 0 when not, -1 on a bad value (printed). */
int common_opt(struct common_opts *c, int opt, const char *arg);
/* Locate the runtime and cell library; fills jail options. */
int common_resolve(struct common_opts *c, struct jail_options *ret);
void common_done(struct common_opts *c);

/* Strict decimal parse into [min, max]; prints "--name: ..." and returns -1 when bad. */
int common_parse_u64(const char *name, const char *s, uint64_t min, uint64_t max, uint64_t *ret);

#endif
