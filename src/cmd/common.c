// SPDX-License-Identifier: MIT
/*
 * common — see common.h.
 */
#include "cmd/common.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jail/toolbox.h"
#include "util/fmt.h"
#include "util/log.h"
#include "util/macros.h"

#ifndef SANDBOXD_RUNTIME_DIR
#define SANDBOXD_RUNTIME_DIR ""
#endif

int common_parse_u64(const char *name, const char *s, uint64_t min, uint64_t max, uint64_t *ret)
{
    char *end;
    errno = 0;
    if (!s || !*s || *s == '-' || *s == '+') {
        fprintf(stderr, "sandboxd: --%s: expected a number, got '%s'\n", name, s ? s : "");
        return -1;
    }
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < min || v > max) {
        fprintf(stderr, "sandboxd: --%s: '%s' is not a number in [%llu, %llu]\n", name, s,
                (unsigned long long)min, (unsigned long long)max);
        return -1;
    }
    *ret = v;
    return 0;
}

/* A decimal with up to three digits after the point ("0.5", "2") in thousandths. */
static int common_parse_milli(const char *name, const char *s, uint32_t min, uint32_t max,
                              uint32_t *ret)
{
    uint64_t v = 0;
    size_t digits = 0, decimals = 0;
    bool point = false, ok = s && *s;
    for (const char *p = s; ok && *p; p++) {
        if (*p == '.' && !point && digits) {
            point = true;
        } else if (*p >= '0' && *p <= '9' && decimals < 3 && v <= UINT32_MAX) {
            v = v * 10 + (uint64_t)(*p - '0');
            digits++;
            decimals += point;
        } else {
            ok = false;
        }
    }
    ok = ok && digits && (!point || decimals);
    for (; ok && decimals < 3; decimals++)
        v *= 10;
    if (!ok || v < min || v > max) {
        fprintf(stderr,
                "sandboxd: --%s: '%s' is not a number in [%u.%03u, %u] (at most three "
                "decimals)\n",
                name, s ? s : "", min / 1000, min % 1000, max / 1000);
        return -1;
    }
    *ret = (uint32_t)v;
    return 0;
}

/* Append arg to a NULL-terminated list; 1, or -1 when out of memory. */
static int common_list_add(const char ***list, size_t *n, const char *arg)
{
    const char **l = realloc(*list, (*n + 2) * sizeof(*l));
    if (!l)
        return -1;
    *list = l;
    l[(*n)++] = arg;
    l[*n] = NULL;
    return 1;
}

/* The range check of a numeric row of COMMON_OPTIONS; the other rows expand to nothing. */
#define COMMON_OPT_CASE_X_(id, name, has_arg, help)
#define COMMON_OPT_CASE_Z_(id, name, min, max, field, help)                                        \
    case COMMON_OPT_##id:                                                                          \
        return common_parse_u64(name, arg, min, max, &c->field) < 0 ? -1 : 1;
#define COMMON_OPT_CASE_N_(id, name, min, max, field, def, before, after)                          \
    COMMON_OPT_CASE_Z_(id, name, min, max, field, before)
/* The default of a numeric row with one, as a designated initializer. */
#define COMMON_OPT_INIT_N_(id, name, min, max, field, def, before, after) .field = def,

void common_opts_init(struct common_opts *c)
{
    *c = (struct common_opts){
        COMMON_OPTIONS(COMMON_OPT_NONE_X_, COMMON_OPT_INIT_N_, COMMON_OPT_NONE_Z_)};
}

int common_opt(struct common_opts *c, int opt, const char *arg)
{
    switch (opt) {
        COMMON_OPTIONS(COMMON_OPT_CASE_X_, COMMON_OPT_CASE_N_, COMMON_OPT_CASE_Z_)
    case COMMON_OPT_PYTHON:
        c->python = arg;
        return 1;
    case COMMON_OPT_RUNTIME_DIR:
        c->runtime_dir = arg;
        return 1;
    case COMMON_OPT_CELL_LIB:
        c->cell_lib = arg;
        return 1;
    case COMMON_OPT_BIND:
        return common_list_add(&c->binds, &c->n_binds, arg);
    case COMMON_OPT_SITE_PACKAGES:
        if (arg[0] != '/') {
            fprintf(stderr, "sandboxd: --site-packages: '%s' is not an absolute path\n", arg);
            return -1;
        }
        return common_list_add(&c->site_packages, &c->n_site_packages, arg);
    case COMMON_OPT_TOOLBOX:
        if (strcmp(arg, "none") != 0 && strcmp(arg, "default") != 0) {
            fprintf(stderr, "sandboxd: --toolbox: 'default' or 'none', not '%s'\n", arg);
            return -1;
        }
        c->no_toolbox = strcmp(arg, "none") == 0;
        return 1;
    case COMMON_OPT_TOOLBOX_ADD:
        if (!*arg || c->n_toolbox_add >= TOOLBOX_MAX_EXTRA) {
            if (*arg)
                fprintf(stderr, "sandboxd: --toolbox-add: at most %d programs\n",
                        TOOLBOX_MAX_EXTRA);
            else
                fprintf(stderr, "sandboxd: --toolbox-add: a program name or path, not ''\n");
            return -1;
        }
        return common_list_add(&c->toolbox_add, &c->n_toolbox_add, arg);
    case COMMON_OPT_NO_HOST_CACHE:
        c->no_host_cache = true;
        return 1;
    case COMMON_OPT_NO_CGROUPS:
        c->no_cgroups = true;
        return 1;
    case COMMON_OPT_REQUIRE_CGROUPS:
        c->require_cgroups = true;
        return 1;
    case COMMON_OPT_CGROUP_ROOT:
        if (arg[0] != '/') {
            fprintf(stderr, "sandboxd: --cgroup-root: expected an absolute path, got '%s'\n", arg);
            return -1;
        }
        c->cgroup_root = arg;
        return 1;
    case COMMON_OPT_CPUS:
        return common_parse_milli("cpus", arg, CGROUP_CPUS_MILLI_MIN, CGROUP_CPUS_MILLI_MAX,
                                  &c->cpus_milli) < 0
                   ? -1
                   : 1;
    case COMMON_OPT_INSECURE_NO_SECCOMP:
        c->insecure_no_seccomp = true;
        return 1;
    case COMMON_OPT_LOG_LEVEL: {
        enum log_level lvl;
        if (log_level_parse(arg, &lvl) < 0) {
            fprintf(stderr, "sandboxd: --log-level: unknown level '%s'\n", arg);
            return -1;
        }
        log_set_level(lvl);
        return 1;
    }
    default:
        return 0;
    }
}

static char *common_exe_dir(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return NULL;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return NULL;
    *slash = '\0';
    return strdup(exe);
}

static char *common_find(const char *dir, const char *const *rels, bool want_dir)
{
    for (size_t i = 0; rels[i]; i++) {
        char path[PATH_MAX], real[PATH_MAX];
        if (rels[i][0] == '/')
            snprintf(path, sizeof(path), "%s", rels[i]);
        else if (dir)
            snprintf(path, sizeof(path), "%s/%s", dir, rels[i]);
        else
            continue;
        if (!*path || !realpath(path, real))
            continue;
        if (want_dir && access(real, X_OK) < 0)
            continue;
        return strdup(real);
    }
    return NULL;
}

#ifndef SANDBOXD_VERSION
#define SANDBOXD_VERSION "0.0.0"
#endif

static const char common_usage[] =
    "Usage: sandboxd COMMAND [options]\n"
    "\n"
    "Commands:\n"
    "  serve   the HTTP server (/execute, sessions, /mcp)\n"
    "  run     run one Python file in a sandbox and print the result\n"
    "  mcp     an MCP server on stdin/stdout (run_python for MCP "
    "clients)\n"
    "  servers the MCP servers sandboxd would use from here, and what "
    "it skipped\n"
    "  migrate import mcp-server-code-execution-mode's saved tools "
    "and memories\n"
    "\n"
    "  sandboxd COMMAND --help   options of a command\n"
    "  sandboxd --version\n";

int common_main_preamble(int argc, char **argv)
{
    if (argc < 2) {
        fputs(common_usage, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("sandboxd %s\n", SANDBOXD_VERSION);
        return 0;
    }
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        fputs(common_usage, stdout);
        return 0;
    }
    return -1;
}

int common_unknown_command(const char *cmd)
{
    fprintf(stderr, "sandboxd: unknown command '%s'\n\n%s", cmd, common_usage);
    return 2;
}

char *common_front_exe(void)
{
    _cleanup_free_ char *dir = common_exe_dir();
    _cleanup_free_ char *front = dir ? fmt_str("%s/sandboxd", dir) : NULL;
    char *real = front ? realpath(front, NULL) : NULL;
    return real ? real : realpath("/proc/self/exe", NULL);
}

int common_exec_server(char **argv)
{
    _cleanup_free_ char *dir = common_exe_dir();
    _cleanup_free_ char *server = dir ? fmt_str("%s/%s", dir, COMMON_SERVER_BINARY) : NULL;
    if (!server) {
        fprintf(stderr, "sandboxd: cannot find where this binary lies (/proc/self/exe)\n");
        return 127;
    }
    fflush(NULL);
    execv(server, argv);
    fprintf(stderr,
            "sandboxd: cannot start %s: %s (the commands other than run are in %s, "
            "which must lie next to sandboxd)\n",
            server, strerror(errno), COMMON_SERVER_BINARY);
    return 127;
}

int common_resolve(struct common_opts *c, struct jail_options *ret)
{
    if (c->no_cgroups && (c->require_cgroups || c->cgroup_root || c->cpus_milli))
        return log_errno(LOG_ERROR, EINVAL,
                         "--no-cgroups contradicts --require-cgroups, --cgroup-root and --cpus");
    _cleanup_free_ char *dir = common_exe_dir();
    if (!c->runtime_dir) {
        const char *rels[] = {"../runtime", "runtime", "../share/sandboxd/runtime",
                              SANDBOXD_RUNTIME_DIR, NULL};
        c->runtime_dir_buf = common_find(dir, rels, true);
        if (!c->runtime_dir_buf)
            return log_errno(LOG_ERROR, ENOENT,
                             "cannot find the runtime directory next to the binary; "
                             "use --runtime-dir");
        c->runtime_dir = c->runtime_dir_buf;
    }
    if (!c->cell_lib) {
        const char *rels[] = {"libsbxcell.so", "../lib/sandboxd/libsbxcell.so", NULL};
        c->cell_lib_buf = common_find(dir, rels, false);
        c->cell_lib = c->cell_lib_buf; /* optional: the pool needs it, `run` does not */
    }
    *ret = (struct jail_options){
        .python = c->python,
        .runtime_dir = c->runtime_dir,
        .cell_lib = c->cell_lib,
        .binds = c->binds,
        .site_packages = c->site_packages,
        .tmp_bytes = c->tmp_mb << 20,
        .sandbox_uid = (uid_t)c->sandbox_uid,
        .cgroup =
            {
                .want = !c->no_cgroups,
                .require = c->require_cgroups,
                .root = c->cgroup_root,
                .cells_bytes = c->cells_memory_mb << 20,
                .cpus_milli = c->cpus_milli,
            },
        .insecure = c->insecure_no_seccomp ? JAIL_INSECURE_NO_SECCOMP : 0,
        .no_toolbox = c->no_toolbox,
        .toolbox = c->toolbox_add,
    };
    return 0;
}

/* --state-dir, else $XDG_STATE_HOME/sandboxd, ~/.local/state/sandboxd, /var/lib/sandboxd
 * (root), $XDG_RUNTIME_DIR/sandboxd (private to the user by design), and only then
 * /tmp/sandboxd-<uid>, where anyone could have made that directory first: whichever it is,
 * it must pass trust_make_dir() (ours, not writable by others, nor any level above). */
char *common_state_dir(const char *opt)
{
    const char *xdg = getenv("XDG_STATE_HOME");
    const char *home = getenv("HOME");
    const char *run = getenv("XDG_RUNTIME_DIR");
    if (opt)
        return strdup(opt);
    if (xdg && *xdg == '/')
        return fmt_str("%s/sandboxd", xdg);
    if (home && *home == '/' && access(home, W_OK) == 0)
        return fmt_str("%s/.local/state/sandboxd", home);
    if (geteuid() == 0)
        return strdup("/var/lib/sandboxd");
    if (run && *run == '/' && access(run, W_OK) == 0)
        return fmt_str("%s/sandboxd", run);
    return fmt_str("/tmp/sandboxd-%u", (unsigned)geteuid());
}

char *common_cache_dir(const struct common_opts *c, const char *state_dir, bool *ret_oom)
{
    *ret_oom = false;
    if (c->no_host_cache || !state_dir)
        return NULL;
    char *dir = fmt_str("%s/cache", state_dir);
    *ret_oom = !dir;
    return dir;
}

void common_done(struct common_opts *c)
{
    free(c->binds);
    free(c->site_packages);
    free(c->toolbox_add);
    free(c->runtime_dir_buf);
    free(c->cell_lib_buf);
    *c = (struct common_opts){0};
}
