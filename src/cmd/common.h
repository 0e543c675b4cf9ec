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
    bool no_host_cache; /* --no-host-cache */
    /* resolved by common_resolve() */
    char *runtime_dir_buf;
    char *cell_lib_buf;
};

#define COMMON_STR_(x) #x
#define COMMON_STR(x)  COMMON_STR_(x) /* a default's digits, for --help */

/*
 * The table of the common options, one row per option, from which the enum (COMMON_OPT_<ID>),
 * the getopt entries (COMMON_LONG_OPTIONS), the defaults (common_opts_init(), COMMON_DEFAULT_<ID>),
 * the range checks of the numeric ones (in common_opt()) and the lines of --help (COMMON_HELP)
 * are generated, in this order:
 *   X(ID, "name", has_arg, help)           common_opt() handles it by hand
 *   N(ID, "name", min, max, field, def, before, after)
 *                                          a decimal in [min, max] into common_opts.field, def
 *                                          when not given (a plain literal, or a macro of one);
 *                                          its lines of --help are before, def, after
 *   Z(ID, "name", min, max, field, help)   the same, 0 when not given: its default follows from
 *                                          other options or the machine, as help says
 * help is the option's lines of --help as printed: "  --name ARG", the description from
 * column 26, continuation lines indented to it.
 */
#define COMMON_OPTIONS(X, N, Z)                                                                    \
    X(PYTHON, "python", required_argument,                                                         \
      "  --python PATH          interpreter inside the jail (default " JAIL_DEFAULT_PYTHON ")\n")  \
    X(RUNTIME_DIR, "runtime-dir", required_argument,                                               \
      "  --runtime-dir DIR      sandboxd's Python runtime (default: found next to the binary)\n")  \
    X(CELL_LIB, "cell-lib", required_argument,                                                     \
      "  --cell-lib PATH        libsbxcell.so (default: next to the binary)\n")                    \
    X(BIND, "bind", required_argument,                                                             \
      "  --bind SRC[:DST]       extra read-only bind mount (repeatable)\n")                        \
    X(SITE_PACKAGES, "site-packages", required_argument,                                           \
      "  --site-packages DIR    also import from DIR (a virtualenv's site-packages), bound\n"      \
      "                         read-only with what its symlinks reach (repeatable)\n")            \
    X(TOOLBOX, "toolbox", required_argument,                                                       \
      "  --toolbox MODE         default: sh, bash, coreutils, grep, sed, awk, find, tar, gzip\n"   \
      "                         and the libraries they need, read-only, for code that shells\n"    \
      "                         out; none: only the interpreter\n")                                \
    X(TOOLBOX_ADD, "toolbox-add", required_argument,                                               \
      "  --toolbox-add PROG     also add PROG (a name on the host's PATH or an absolute path)\n"   \
      "                         and its libraries (repeatable; never a setuid program)\n")         \
    X(NO_HOST_CACHE, "no-host-cache", no_argument,                                                 \
      "  --no-host-cache        discover the host at every start (the interpreter's paths, its\n"  \
      "                         packages' data, the toolbox) instead of replaying what the\n"      \
      "                         state directory's cache kept while the host is unchanged\n")       \
    N(TMP_MB, "tmp-size-mb", 1, 1 << 20, tmp_mb, JAIL_DEFAULT_TMP_MB,                              \
      "  --tmp-size-mb N        size of the sandbox's writable /tmp (default ", ")\n")             \
    N(SANDBOX_UID, "sandbox-uid", 1, UINT32_MAX - 1, sandbox_uid, JAIL_DEFAULT_SANDBOX_UID,        \
      "  --sandbox-uid N        host uid sandboxes run as when sandboxd is root (default ", ")\n") \
    X(NO_CGROUPS, "no-cgroups", no_argument,                                                       \
      "  --no-cgroups           do not use cgroups (rlimits only)\n")                              \
    X(REQUIRE_CGROUPS, "require-cgroups", no_argument,                                             \
      "  --require-cgroups      refuse to start when the cgroup limits (and the --cpus quota)\n"   \
      "                         cannot be had; without it sandboxd falls back to rlimits and\n"    \
      "                         /healthz says why\n")                                              \
    X(CGROUP_ROOT, "cgroup-root", required_argument,                                               \
      "  --cgroup-root DIR      put the sandboxes' cgroups in DIR, a delegated cgroup v2\n"        \
      "                         directory (default: below sandboxd's own cgroup); implies\n"       \
      "                         --require-cgroups\n")                                              \
    Z(CELLS_MEMORY, "cells-memory-mb", 16, 1 << 24, cells_memory_mb,                               \
      "  --cells-memory-mb N    memory of all sandboxes together (default: 3/4 of the machine's\n" \
      "                         memory or of the limit of sandboxd's cgroup, if lower)\n")         \
    X(CPUS, "cpus", required_argument,                                                             \
      "  --cpus N               CPU quota of each sandbox, e.g. 0.5 or 2 (default: none)\n")       \
    X(INSECURE_NO_SECCOMP, "insecure-no-seccomp", no_argument,                                     \
      "  --insecure-no-seccomp  run without the seccomp filter (reported by /healthz)\n")          \
    X(LOG_LEVEL, "log-level", required_argument,                                                   \
      "  --log-level LEVEL      debug|info|warn|error (default info)\n")

#define COMMON_OPT_ENUM_X_(id, name, has_arg, help)                       COMMON_OPT_##id,
#define COMMON_OPT_ENUM_N_(id, name, min, max, field, def, before, after) COMMON_OPT_##id,
#define COMMON_OPT_ENUM_Z_(id, name, min, max, field, help)               COMMON_OPT_##id,
enum {
    COMMON_OPT_FIRST_ = 999,
    COMMON_OPTIONS(COMMON_OPT_ENUM_X_, COMMON_OPT_ENUM_N_, COMMON_OPT_ENUM_Z_) COMMON_OPT_LAST,
};

/* COMMON_DEFAULT_<ID>: the default of a numeric option, for code that needs it elsewhere. */
#define COMMON_OPT_NONE_X_(id, name, has_arg, help)
#define COMMON_OPT_NONE_Z_(id, name, min, max, field, help)
#define COMMON_OPT_DEFAULT_N_(id, name, min, max, field, def, before, after)                       \
    COMMON_DEFAULT_##id = def,
enum { COMMON_OPTIONS(COMMON_OPT_NONE_X_, COMMON_OPT_DEFAULT_N_, COMMON_OPT_NONE_Z_) };

/* The getopt entries, each followed by a comma: put it first in a struct option array. */
#define COMMON_OPT_LONG_X_(id, name, has_arg, help) {name, has_arg, NULL, COMMON_OPT_##id},
#define COMMON_OPT_LONG_N_(id, name, min, max, field, def, before, after)                          \
    {name, required_argument, NULL, COMMON_OPT_##id},
#define COMMON_OPT_LONG_Z_(id, name, min, max, field, help)                                        \
    {name, required_argument, NULL, COMMON_OPT_##id},
#define COMMON_LONG_OPTIONS                                                                        \
    COMMON_OPTIONS(COMMON_OPT_LONG_X_, COMMON_OPT_LONG_N_, COMMON_OPT_LONG_Z_)

#define COMMON_OPT_HELP_X_(id, name, has_arg, help) help
#define COMMON_OPT_HELP_N_(id, name, min, max, field, def, before, after)                          \
    before COMMON_STR(def) after
#define COMMON_OPT_HELP_Z_(id, name, min, max, field, help) help
#define COMMON_HELP                                                                                \
    "Sandbox options:\n" COMMON_OPTIONS(COMMON_OPT_HELP_X_, COMMON_OPT_HELP_N_, COMMON_OPT_HELP_Z_)

/* The binary that holds every command (src/server.c); `sandboxd` (src/main.c) runs `run` itself
 * and execs this one, found next to it, for the others. */
#define COMMON_SERVER_BINARY "sandboxd-server"

/* What both binaries answer before looking at a command: none (the usage on stderr: 2),
 * --version and --help (0). The exit status, or -1 when argv[1] is a command. */
int common_main_preamble(int argc, char **argv);
/* "unknown command" and the usage, on stderr; the exit status (2). */
int common_unknown_command(const char *cmd);
/* The `sandboxd` users run (realpath; caller frees): the one next to this binary, else this
 * binary; NULL when neither resolves. What an MCP configuration names to start us again. */
char *common_front_exe(void);
/* Become COMMON_SERVER_BINARY, next to this binary, with the same arguments. Returns only when
 * that fails: 127, with the reason printed. */
int common_exec_server(char **argv);

/* The defaults: what the numeric rows of COMMON_OPTIONS give, the rest zero (not given). */
void common_opts_init(struct common_opts *c);
/* 1 when opt was a common option (consumed), 0 when not, -1 on a bad value (printed). */
int common_opt(struct common_opts *c, int opt, const char *arg);
/* Locate the runtime and cell library; fills jail options. */
int common_resolve(struct common_opts *c, struct jail_options *ret);
/* The state directory: opt (--state-dir) when given, else $XDG_STATE_HOME/sandboxd,
 * ~/.local/state/sandboxd, /var/lib/sandboxd (root), $XDG_RUNTIME_DIR/sandboxd,
 * /tmp/sandboxd-<uid>. Caller frees; NULL when out of memory. Not checked: trust_make_dir(). */
char *common_state_dir(const char *opt);
/* Where host discovery is cached in state_dir (jail/hostcache.h): "<state_dir>/cache", or NULL
 * with --no-host-cache or when state_dir is NULL. Caller frees; *ret_oom is set when out of
 * memory. */
char *common_cache_dir(const struct common_opts *c, const char *state_dir, bool *ret_oom);
void common_done(struct common_opts *c);

/* Strict decimal parse into [min, max]; prints "--name: ..." and returns -1 when bad. */
int common_parse_u64(const char *name, const char *s, uint64_t min, uint64_t max, uint64_t *ret);

#endif
