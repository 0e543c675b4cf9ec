// SPDX-License-Identifier: MIT
/*
 * jail — see jail.h.
 *
 * The child's steps, in order (STYLE.md, "The sandbox child"): wait for the
 * parent to write the uid/gid maps and attach the cgroup -> drop
 * supplementary groups -> new cgroup namespace (now rooted at the cell's
 * cgroup) -> make every mount private -> build the new root on a tmpfs ->
 * pivot_root and detach the old root -> remount the root read-only ->
 * hostname -> fds -> rlimits -> capabilities -> no_new_privs -> seccomp ->
 * execve. Only async-signal-safe calls run between clone() and execve():
 * the parent is multi-threaded.
 */
#include "jail/jail.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/securebits.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jail/hostdeps.h"
#include "jail/toolbox.h"
#include "jail/seccomp.h"
#include "jail/steps.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/fdio.h"
#include "util/log.h"
#include "util/macros.h"

extern char **environ;

enum jail_step {
    JAIL_STEP_WAIT_PARENT,
    JAIL_STEP_SETGROUPS,
    JAIL_STEP_SETRESUID,
    JAIL_STEP_CGROUP_NS,
    JAIL_STEP_MOUNT_PRIVATE,
    JAIL_STEP_OPEN_SOURCES,
    JAIL_STEP_ROOT_TMPFS,
    JAIL_STEP_CHDIR_NEWROOT,
    JAIL_STEP_MOUNT_OPS,
    JAIL_STEP_SANDBOX_MOUNTS,
    JAIL_STEP_PIVOT_ROOT,
    JAIL_STEP_DETACH_OLD_ROOT,
    JAIL_STEP_CHDIR_ROOT,
    JAIL_STEP_REMOUNT_ROOT_RO,
    JAIL_STEP_HOSTNAME,
    JAIL_STEP_CHDIR_TMP,
    JAIL_STEP_EGRESS,
    JAIL_STEP_REMAP_FDS,
    JAIL_STEP_RLIMITS,
    JAIL_STEP_DROP_CAPS,
    JAIL_STEP_NO_NEW_PRIVS,
    JAIL_STEP_SIGNALS,
    JAIL_STEP_SECCOMP,
    JAIL_STEP_EXECVE,
};

static const char *const jail_step_names[] = {
    [JAIL_STEP_WAIT_PARENT] = "wait-for-parent",
    [JAIL_STEP_SETGROUPS] = "setgroups",
    [JAIL_STEP_SETRESUID] = "setresuid/setresgid",
    [JAIL_STEP_CGROUP_NS] = "unshare(CLONE_NEWCGROUP)",
    [JAIL_STEP_MOUNT_PRIVATE] = "mount(/, MS_REC|MS_PRIVATE)",
    [JAIL_STEP_OPEN_SOURCES] = "open bind sources",
    [JAIL_STEP_ROOT_TMPFS] = "mount(tmpfs, new root)",
    [JAIL_STEP_CHDIR_NEWROOT] = "chdir(new root)",
    [JAIL_STEP_MOUNT_OPS] = "filesystem",
    [JAIL_STEP_SANDBOX_MOUNTS] = "filesystem (sandbox-only)",
    [JAIL_STEP_PIVOT_ROOT] = "pivot_root",
    [JAIL_STEP_DETACH_OLD_ROOT] = "umount2(old root, MNT_DETACH)",
    [JAIL_STEP_CHDIR_ROOT] = "chdir(/)",
    [JAIL_STEP_REMOUNT_ROOT_RO] = "mount(/, MS_REMOUNT|MS_RDONLY)",
    [JAIL_STEP_HOSTNAME] = "sethostname",
    [JAIL_STEP_CHDIR_TMP] = "chdir(/tmp)",
    [JAIL_STEP_EGRESS] = "loopback up and egress listener",
    [JAIL_STEP_REMAP_FDS] = "file descriptors",
    [JAIL_STEP_RLIMITS] = "setrlimit",
    [JAIL_STEP_DROP_CAPS] = "drop capabilities",
    [JAIL_STEP_NO_NEW_PRIVS] = "prctl(PR_SET_NO_NEW_PRIVS)",
    [JAIL_STEP_SIGNALS] = "reset signal mask and handlers",
    [JAIL_STEP_SECCOMP] = "seccomp",
    [JAIL_STEP_EXECVE] = "execve",
};

struct jail_child_error {
    int32_t step;
    int32_t err;    /* positive errno */
    int32_t detail; /* index of the failing mount op, or -1 */
};

/* Where the child builds its new root before pivot_root: a tmpfs mounted over the host's
 * /tmp, visible only inside the child's own mount namespace. */
#define JAIL_STAGING "/tmp"

/* ---- configuration (parent, start-up) --------------------------------------------------- */

static const char jail_python_query[] =
    "import json, os, site, sys, sysconfig\n"
    "p = sysconfig.get_paths()\n"
    "dirs = site.getsitepackages() + [p['purelib'], p['platlib']]\n"
    "print(json.dumps({'executable': os.path.realpath(sys.executable),\n"
    "  'version': sys.version.split()[0], 'stdlib': p['stdlib'],\n"
    "  'platstdlib': p['platstdlib'], 'site': [d for d in dirs if os.path.isdir(d)],\n"
    "  'multiarch': sysconfig.get_config_var('MULTIARCH') or '',\n"
    "  'libdir': sysconfig.get_config_var('LIBDIR') or ''}))\n";

/* Ask the configured interpreter where it keeps its files. It is the operator's trusted
 * interpreter running a fixed script; no untrusted code runs here. */
static int jail_query_python(const char *python, json_t **ret)
{
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) < 0)
        return -errno;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pfd[1], STDOUT_FILENO);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    char *argv[] = {(char *)python, "-I", "-S", "-c", (char *)jail_python_query, NULL};
    char *envp[] = {"LANG=C.UTF-8", NULL};
    pid_t pid;
    int r = posix_spawn(&pid, python, &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    close(pfd[1]);
    if (r != 0) {
        close(pfd[0]);
        return -r;
    }
    struct buf out;
    buf_init(&out, 1 << 20);
    char chunk[4096];
    ssize_t n;
    while ((n = read(pfd[0], chunk, sizeof(chunk))) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || buf_append(&out, chunk, (size_t)n) < 0)
            break;
    }
    close(pfd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        buf_free(&out);
        return -ENOEXEC;
    }
    json_error_t jerr;
    *ret = json_loadb(out.data ? out.data : "", out.len, 0, &jerr);
    buf_free(&out);
    return *ret ? 0 : -EBADMSG;
}

static bool jail_path_within(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/* Bind a host directory read-only at the same path unless it is missing or already
 * covered by an earlier bind. */
static int jail_bind_dir(struct jail_config *cfg, struct hostdeps_binds *b, const char *path)
{
    char real[PATH_MAX];
    if (!path || !*path || !realpath(path, real))
        return 0;
    struct stat st;
    if (stat(real, &st) < 0 || !S_ISDIR(st.st_mode) || hostdeps_covered(b, real))
        return 0;
    if (hostdeps_covers_any(b, real))
        return log_errno(LOG_ERROR, EINVAL,
                         "jail: bind %s would cover an earlier bind; list parents first", real);
    int r = mount_plan_bind_ro(&cfg->plan, real, NULL);
    return r < 0 ? r : hostdeps_binds_add(b, real);
}

static int jail_plan_etc(struct jail_config *cfg)
{
    static const struct {
        const char *path;
        const char *content;
    } files[] = {
        {"/etc/passwd", "root:x:0:0:root:/tmp:/bin/false\n"
                        "nobody:x:65534:65534:nobody:/tmp:/bin/false\n"},
        {"/etc/group", "root:x:0:\nnogroup:x:65534:\n"},
        {"/etc/hosts", "127.0.0.1 localhost " JAIL_HOSTNAME "\n::1 localhost\n"},
        {"/etc/hostname", JAIL_HOSTNAME "\n"},
        {"/etc/nsswitch.conf", "passwd: files\ngroup: files\nhosts: files\n"},
        {"/etc/resolv.conf", "# no network inside the sandbox\n"},
    };
    for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
        int r = mount_plan_file(&cfg->plan, files[i].path, files[i].content, 0644);
        if (r < 0)
            return r;
    }
    if (access("/usr/share/zoneinfo/UTC", R_OK) == 0)
        return mount_plan_symlink(&cfg->plan, "/usr/share/zoneinfo/UTC", "/etc/localtime");
    return 0;
}

static int jail_plan_dev(struct jail_config *cfg)
{
    int r = mount_plan_tmpfs(&cfg->plan, "/dev", "mode=0755,size=64k", MS_NOSUID | MS_NOEXEC);
    if (r < 0)
        return r;
    static const char *const nodes[] = {"null", "zero", "full", "random", "urandom"};
    for (size_t i = 0; i < ARRAY_SIZE(nodes); i++) {
        char src[32];
        snprintf(src, sizeof(src), "/dev/%s", nodes[i]);
        if ((r = mount_plan_bind_dev(&cfg->plan, src, src)) < 0)
            return r;
    }
    static const char *const links[][2] = {{"/proc/self/fd", "/dev/fd"},
                                           {"/proc/self/fd/0", "/dev/stdin"},
                                           {"/proc/self/fd/1", "/dev/stdout"},
                                           {"/proc/self/fd/2", "/dev/stderr"}};
    for (size_t i = 0; i < ARRAY_SIZE(links); i++)
        if ((r = mount_plan_symlink(&cfg->plan, links[i][0], links[i][1])) < 0)
            return r;
    char opts[64];
    snprintf(opts, sizeof(opts), "mode=1777,size=%llu", (unsigned long long)cfg->tmp_bytes);
    if ((r = mount_plan_tmpfs(&cfg->plan, "/dev/shm", opts, MS_NOSUID | MS_NODEV | MS_NOEXEC)) < 0)
        return r;
    /* /dev belongs to the sandbox uid; read-only so nothing can be left there for the next
     * cell of a zygote (its /dev/shm is replaced per cell). */
    return mount_plan_seal(&cfg->plan, "/dev", MS_NOSUID | MS_NOEXEC);
}

#define JAIL_LIB_DIRS 6

/* The directories of the system's shared libraries (bound whole): the multiarch ones first.
 * Returns how many were written to libs. */
static size_t jail_lib_dirs(json_t *info, char libs[JAIL_LIB_DIRS][PATH_MAX])
{
    const char *multiarch = json_string_value(json_object_get(info, "multiarch"));
    size_t n = 0;
    if (multiarch && *multiarch) {
        snprintf(libs[n++], PATH_MAX, "/usr/lib/%s", multiarch);
        snprintf(libs[n++], PATH_MAX, "/lib/%s", multiarch);
    }
    snprintf(libs[n++], PATH_MAX, "/usr/lib64");
    snprintf(libs[n++], PATH_MAX, "/lib64");
    return n;
}

static int jail_plan_python(struct jail_config *cfg, struct hostdeps_binds *b, json_t *info,
                            const char *const *extra_site)
{
    const char *exe = json_string_value(json_object_get(info, "executable"));
    if (!exe || exe[0] != '/')
        return log_errno(LOG_ERROR, EINVAL, "jail: the interpreter did not report its path");
    if (!(cfg->python = strdup(exe)))
        return -ENOMEM;
    const char *ver = json_string_value(json_object_get(info, "version"));
    if (!(cfg->python_version = strdup(ver ? ver : "?")))
        return -ENOMEM;

    /* Top-level symlinks of merged-/usr systems (/lib64 -> usr/lib64) keep their shape. */
    static const char *const toplinks[] = {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};
    for (size_t i = 0; i < ARRAY_SIZE(toplinks); i++) {
        char target[PATH_MAX];
        ssize_t n = readlink(toplinks[i], target, sizeof(target) - 1);
        if (n <= 0)
            continue;
        target[n] = '\0';
        int r = mount_plan_symlink(&cfg->plan, target, toplinks[i]);
        if (r < 0)
            return r;
    }

    char libs[JAIL_LIB_DIRS][PATH_MAX];
    size_t nlibs = jail_lib_dirs(info, libs);
    int r;
    for (size_t i = 0; i < nlibs; i++)
        if ((r = jail_bind_dir(cfg, b, libs[i])) < 0)
            return r;
    const char *keys[] = {"stdlib", "platstdlib", "libdir"};
    for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
        if ((r = jail_bind_dir(cfg, b, json_string_value(json_object_get(info, keys[i])))) < 0)
            return r;

    /* The operator's site directories (a virtualenv's) come first on sys.path. */
    json_t *site = json_object_get(info, "site");
    size_t nextra = 0;
    while (extra_site && extra_site[nextra])
        nextra++;
    size_t nsite = json_array_size(site);
    cfg->site_dirs = calloc(nextra + nsite + 1, sizeof(char *));
    if (!cfg->site_dirs)
        return -ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < nextra; i++) {
        char real[PATH_MAX];
        if (!realpath(extra_site[i], real))
            return log_errno(LOG_ERROR, errno, "jail: --site-packages '%s'", extra_site[i]);
        static const char *const hidden[] = {"/tmp", "/dev", "/proc", "/sys", "/run", "/sandboxd"};
        for (size_t h = 0; h < ARRAY_SIZE(hidden); h++)
            if (jail_path_within(real, hidden[h]))
                return log_errno(LOG_ERROR, EINVAL,
                                 "jail: --site-packages '%s' lies under %s, which the sandbox "
                                 "has its own of; move it elsewhere",
                                 real, hidden[h]);
        if ((r = jail_bind_dir(cfg, b, real)) < 0)
            return r;
        if (!(cfg->site_dirs[k++] = strdup(real)))
            return -ENOMEM;
    }
    for (size_t i = 0; i < nsite; i++) {
        const char *d = json_string_value(json_array_get(site, i));
        char real[PATH_MAX];
        if (!d || !realpath(d, real))
            continue;
        if ((r = jail_bind_dir(cfg, b, real)) < 0)
            return r;
        if (!(cfg->site_dirs[k++] = strdup(real)))
            return -ENOMEM;
    }
    if ((r = jail_bind_dir(cfg, b, "/usr/share/zoneinfo")) < 0)
        return r;

    /* The interpreter binary itself, plus the usual names for it next to it. */
    if (!hostdeps_covered(b, cfg->python)) {
        if ((r = mount_plan_bind_ro(&cfg->plan, cfg->python, NULL)) < 0)
            return r;
        _cleanup_free_ char *dir = strdup(cfg->python);
        if (!dir)
            return -ENOMEM;
        char *slash = strrchr(dir, '/');
        const char *base = slash + 1;
        *slash = '\0';
        const char *aliases[] = {"python3", "python"};
        for (size_t i = 0; i < ARRAY_SIZE(aliases); i++) {
            if (strcmp(base, aliases[i]) == 0)
                continue;
            char alias[PATH_MAX];
            snprintf(alias, sizeof(alias), "%s/%s", *dir ? dir : "", aliases[i]);
            if (!mount_plan_has(&cfg->plan, alias) &&
                (r = mount_plan_symlink(&cfg->plan, base, alias)) < 0)
                return r;
        }
    }
    return 0;
}

static int jail_plan_build(struct jail_config *cfg, const struct jail_options *opt, json_t *pyinfo)
{
    struct hostdeps_binds b = {0};
    int r = jail_plan_python(cfg, &b, pyinfo, opt->site_packages);
    if (r < 0)
        goto out;
    if ((r = jail_plan_etc(cfg)) < 0 || (r = jail_plan_dev(cfg)) < 0)
        goto out;
    if ((r = mount_plan_proc(&cfg->plan, "/proc")) < 0)
        goto out;
    char opts[64];
    snprintf(opts, sizeof(opts), "mode=1777,size=%llu", (unsigned long long)cfg->tmp_bytes);
    if ((r = mount_plan_tmpfs(&cfg->plan, "/tmp", opts, MS_NOSUID | MS_NODEV)) < 0)
        goto out;
    /* Copied, not bound: a bind shows its host path in /proc/self/mountinfo (the root field
     * is the path within the source filesystem, whatever the bind's own source path), and
     * where sandboxd is installed is none of the sandbox's business. */
    if ((r = mount_plan_copy(&cfg->plan, opt->runtime_dir, JAIL_RUNTIME_DIR, JAIL_COPY_MAX)) < 0)
        goto out;
    if (opt->cell_lib &&
        (r = mount_plan_copy(&cfg->plan, opt->cell_lib, JAIL_CELL_LIB, JAIL_COPY_MAX)) < 0)
        goto out;
    /* After /etc, /dev, /proc and /tmp are planned: nothing may be bound under those. */
    if ((r = hostdeps_add(&cfg->plan, &b, opt->dpkg_dir ? opt->dpkg_dir : "/var/lib/dpkg",
                          cfg->site_dirs)) < 0)
        goto out;
    /* The shell toolbox after the interpreter's packages: what they bound is not bound twice. */
    char libs[JAIL_LIB_DIRS][PATH_MAX];
    size_t nlibs = jail_lib_dirs(pyinfo, libs);
    const char *libdirs[JAIL_LIB_DIRS + 1] = {0};
    for (size_t i = 0; i < nlibs; i++)
        libdirs[i] = libs[i];
    if ((r = toolbox_add(&cfg->plan, &b, !opt->no_toolbox, opt->toolbox, libdirs)) < 0)
        goto out;
    for (const char **e = opt->binds; e && *e; e++) {
        _cleanup_free_ char *spec = strdup(*e);
        if (!spec) {
            r = -ENOMEM;
            goto out;
        }
        char *colon = strchr(spec, ':');
        if (colon)
            *colon++ = '\0';
        const char *dst = colon && *colon ? colon : spec;
        if (spec[0] != '/' || dst[0] != '/') {
            r = log_errno(LOG_ERROR, EINVAL, "jail: bind '%s' needs absolute paths", *e);
            goto out;
        }
        if ((r = mount_plan_bind_ro(&cfg->plan, spec, dst)) < 0)
            goto out;
    }
out:
    hostdeps_binds_free(&b);
    return r;
}

/* The sandbox-only part of the filesystem: read-only views of the writable corners of
 * /proc. Kept out of the zygote because a proc mount with anything mounted over it no
 * longer counts as "fully visible", and the zygote's cells must mount their own /proc. */
static int jail_sandbox_plan(struct mount_plan *p)
{
    static const char *const ro[] = {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus",
                                     "/proc/pressure"};
    for (size_t i = 0; i < ARRAY_SIZE(ro); i++) {
        if (access(ro[i], F_OK) < 0)
            continue;
        int r = mount_plan_remount_ro(p, ro[i]);
        if (r < 0)
            return r;
    }
    return 0;
}

/* The certificates of sandboxes with egress: the host's bundle and the operator's file, in
 * one file at JAIL_CA_BUNDLE (read now, written into each root). */
static int jail_plan_certs(struct jail_config *cfg, const char *ca_file)
{
    _cleanup_free_ char *host = NULL, *extra = NULL, *all = NULL;
    size_t hlen = 0, elen = 0;
    int r = fd_read_file(AT_FDCWD, JAIL_CA_BUNDLE, JAIL_CA_MAX, &host, &hlen);
    if (r < 0 && r != -ENOENT)
        return log_errno(LOG_ERROR, r, "jail: cannot read the host's certificates %s",
                         JAIL_CA_BUNDLE);
    if (ca_file && (r = fd_read_file(AT_FDCWD, ca_file, JAIL_CA_MAX, &extra, &elen)) < 0)
        return log_errno(LOG_ERROR, r, "jail: cannot read --egress-ca-file %s (at most %u bytes)",
                         ca_file, JAIL_CA_MAX);
    if ((host && strlen(host) != hlen) || (extra && strlen(extra) != elen))
        return log_errno(LOG_ERROR, EINVAL, "jail: a certificate file holds a NUL byte");
    if (!hlen && !elen)
        return 0; /* nothing to trust: TLS in sandboxes verifies nothing but fails closed */
    if (asprintf(&all, "%s%s%s", host ? host : "", hlen && host[hlen - 1] != '\n' ? "\n" : "",
                 extra ? extra : "") < 0)
        return -ENOMEM;
    r = mount_plan_file(&cfg->plan, JAIL_CA_BUNDLE, all, 0644);
    cfg->ca_bundle = r == 0;
    return r;
}

static int jail_build_env(struct jail_config *cfg)
{
    static const char *const env[] = {
        "PATH=/usr/local/bin:/usr/bin:/bin",
        "HOME=/tmp",
        "TMPDIR=/tmp",
        "LANG=C.UTF-8",
        "LC_ALL=C.UTF-8",
        "MALLOC_ARENA_MAX=2", /* thread arenas reserve 64 MiB of address space each */
        "SANDBOXD=1",
        /* One execution, one core: BLAS and OpenMP would start a thread per host core (in
         * the zygote too, before it forks) and reserve memory for each. */
        "OPENBLAS_NUM_THREADS=1",
        "OMP_NUM_THREADS=1",
        /* matplotlib: figures render with Agg and plt.show() hands them to sandboxd as
         * artifacts (runtime/sandboxd_runtime/mplbackend.py); its cache and configuration go
         * to the per-sandbox /dev/shm, not into the working directory. */
        "MPLBACKEND=module://sandboxd_runtime.mplbackend",
        "MPLCONFIGDIR=/dev/shm/matplotlib",
    };
    cfg->envp = calloc(ARRAY_SIZE(env) + 1, sizeof(char *));
    if (!cfg->envp)
        return -ENOMEM;
    for (size_t i = 0; i < ARRAY_SIZE(env); i++)
        if (!(cfg->envp[i] = strdup(env[i])))
            return -ENOMEM;
    return 0;
}

int jail_config_init(struct jail_config *cfg, const struct jail_options *opt)
{
    *cfg = (struct jail_config){0};
    mount_plan_init(&cfg->plan);
    mount_plan_init(&cfg->plan_sandbox);
    cfg->tmp_bytes = opt->tmp_bytes ? opt->tmp_bytes : 64ull << 20;
    cfg->insecure = opt->insecure;
    cfg->rootless = geteuid() != 0;
    if (cfg->rootless) {
        cfg->host_uid = geteuid();
        cfg->host_gid = getegid();
    } else {
        cfg->host_uid = opt->sandbox_uid ? opt->sandbox_uid : 65534;
        cfg->host_gid = cfg->host_uid;
    }
    const char *python = opt->python ? opt->python : "/usr/bin/python3";
    if (!opt->runtime_dir)
        return log_errno(LOG_ERROR, EINVAL, "jail: no runtime directory configured");

    json_t *info = NULL;
    int r = jail_query_python(python, &info);
    if (r < 0) {
        log_errno(LOG_ERROR, r, "jail: cannot run the interpreter '%s' (set --python)", python);
        goto fail;
    }
    r = jail_plan_build(cfg, opt, info);
    json_decref(info);
    if (r < 0)
        goto fail;
    if ((r = jail_build_env(cfg)) < 0 || (r = jail_sandbox_plan(&cfg->plan_sandbox)) < 0)
        goto fail;
    if (opt->egress && (r = jail_plan_certs(cfg, opt->ca_file)) < 0)
        goto fail;
    if (!(cfg->insecure & JAIL_INSECURE_NO_SECCOMP) &&
        ((r = jail_seccomp_build(&cfg->filter, false)) < 0 ||
         (opt->egress && (r = jail_seccomp_build(&cfg->filter_tcp, true)) < 0)))
        goto fail;
    if (!(cfg->cgroups = calloc(1, sizeof(*cfg->cgroups)))) {
        r = -ENOMEM;
        log_errno(LOG_ERROR, r, "jail: the cgroup environment");
        goto fail;
    }
    if ((r = cgroup_env_init(cfg->cgroups, &opt->cgroup)) < 0) {
        const char *why = cfg->cgroups->reason ? cfg->cgroups->reason : cfg->cgroups->cpu_reason;
        log_errno(LOG_ERROR, r, "jail: cgroup limits are required but cannot be had (%s)",
                  why ? why : "see above");
        goto fail;
    }
    return 0;
fail:
    jail_config_done(cfg);
    return r;
}

void jail_config_done(struct jail_config *cfg)
{
    if (!cfg)
        return;
    free(cfg->python);
    free(cfg->python_version);
    for (char **p = cfg->site_dirs; p && *p; p++)
        free(*p);
    free(cfg->site_dirs);
    for (char **p = cfg->envp; p && *p; p++)
        free(*p);
    free(cfg->envp);
    mount_plan_done(&cfg->plan);
    mount_plan_done(&cfg->plan_sandbox);
    jail_seccomp_free(&cfg->filter);
    jail_seccomp_free(&cfg->filter_tcp);
    cgroup_env_done(cfg->cgroups);
    free(cfg->cgroups);
    *cfg = (struct jail_config){0};
}

struct jail_limits jail_limits_default(const struct jail_config *cfg)
{
    return (struct jail_limits){
        .nofile = 256,
        .nproc = 64,
        .fsize = cfg->tmp_bytes,
        .cpu_s = 0,
        .memory = 0,
    };
}

json_t *jail_describe(const struct jail_config *cfg)
{
    json_t *layers = json_pack(
        "{s:[s,s,s,s,s,s,s], s:b, s:s, s:b, s:b, s:s, s:s*, s:s, s:s, s:I, s:b, s:I}", "namespaces",
        "user", "pid", "mount", "net", "ipc", "uts", "cgroup", "seccomp", cfg->filter.len > 0,
        "seccompMode", cfg->filter.len > 0 ? "allowlist" : "off", "noNewPrivs", 1,
        "capabilitiesDropped", 1, "cgroups", cgroup_mode_name(cfg->cgroups->mode), "cgroupsReason",
        cfg->cgroups->reason, "python", cfg->python, "pythonVersion", cfg->python_version,
        "sandboxUid", (json_int_t)cfg->host_uid, "rootless", cfg->rootless, "tmpBytes",
        (json_int_t)cfg->tmp_bytes);
    if (!layers)
        return NULL;
    json_t *rl = json_pack("[s,s,s,s,s]", "nofile", "nproc", "fsize", "cpu", "core");
    json_object_set_new(layers, "rlimits", rl);
    json_object_set_new(layers, "cgroup", cgroup_env_describe(cfg->cgroups));
    json_t *ins = json_array();
    if (cfg->insecure & JAIL_INSECURE_NO_SECCOMP)
        json_array_append_new(ins, json_string("no-seccomp"));
    json_object_set_new(layers, "insecure", ins);
    return layers;
}

char **jail_python_argv(const struct jail_config *cfg, const char *mode, const char *const *args)
{
    size_t n = 0;
    while (args && args[n])
        n++;
    char **argv = calloc(n + 9, sizeof(char *));
    if (!argv)
        return NULL;
    size_t k = 0;
    const char *fixed[] = {"python3", "-I", "-S", "-B", JAIL_RUNTIME_DIR "/boot.py", mode};
    for (size_t i = 0; i < ARRAY_SIZE(fixed); i++)
        if (!(argv[k++] = strdup(fixed[i])))
            goto fail;
    /* Site directories travel as one ':'-joined argument for the runtime's sys.path. */
    struct buf sp;
    buf_init(&sp, 1 << 16);
    for (char **d = cfg->site_dirs; d && *d; d++)
        if ((d != cfg->site_dirs && buf_appends(&sp, ":") < 0) || buf_appends(&sp, *d) < 0) {
            buf_free(&sp);
            goto fail;
        }
    if (!(argv[k++] = buf_take(&sp, NULL)))
        goto fail;
    for (size_t i = 0; i < n; i++)
        if (!(argv[k++] = strdup(args[i])))
            goto fail;
    return argv;
fail:
    jail_argv_free(argv);
    return NULL;
}

void jail_argv_free(char **argv)
{
    for (char **p = argv; p && *p; p++)
        free(*p);
    free(argv);
}

/* ---- the child (async-signal-safe from here to execve) ------------------------------------ */

struct jail_child_args {
    const struct jail_config *cfg;
    const struct jail_spawn *req;
    int sync_fd;        /* read end: one byte when the parent is done with us */
    int err_fd;         /* write end, O_CLOEXEC: closes on successful execve */
    int fds[4];         /* stdin, stdout, stderr, proto (-1: none) */
    int egress_fd;      /* where to send the egress listener (-1: no network) */
    unsigned inside_id; /* uid and gid inside the namespace */
    int *trees; /* per plan op: detached bind trees (root), or room for sources (rootless) */
};

static _Noreturn void jail_child_fail(const struct jail_child_args *a, enum jail_step step, int err,
                                      int detail)
{
    struct jail_child_error e = {.step = step, .err = err < 0 ? -err : err, .detail = detail};
    ssize_t w = write(a->err_fd, &e, sizeof(e));
    (void)w; /* the parent sees a short read as a failure either way */
    _exit(127);
}

#define CHILD_STEP(a, step, expr)                                                                  \
    do {                                                                                           \
        int r_ = (expr);                                                                           \
        if (r_ < 0)                                                                                \
            jail_child_fail((a), (step), r_, -1);                                                  \
    } while (0)

static int jail_sys(long r)
{
    return r < 0 ? -errno : 0;
}

static _Noreturn void jail_child(struct jail_child_args *a)
{
    const struct jail_config *cfg = a->cfg;
    const struct jail_spawn *req = a->req;
    char c;
    ssize_t n;
    do
        n = read(a->sync_fd, &c, 1);
    while (n < 0 && errno == EINTR);
    if (n != 1)
        jail_child_fail(a, JAIL_STEP_WAIT_PARENT, n < 0 ? errno : EPIPE, -1);
    close(a->sync_fd);

    /* As root, the supplementary groups still carry host gid 0; drop them. Rootless, the
     * kernel forbids setgroups (it was denied before gid_map was written). */
    /* Raw syscalls, not the glibc wrappers: glibc applies set*id to every thread of the
     * process (the setxid broadcast) and would wait forever for the parent's other threads,
     * which do not exist in this child. */
    if (!cfg->rootless)
        CHILD_STEP(a, JAIL_STEP_SETGROUPS, jail_sys(syscall(SYS_setgroups, 0, NULL)));
    /* Become the mapped id. As root our kuid is still host 0, which the map leaves out on
     * purpose; NO_SETUID_FIXUP keeps the namespace capabilities across the switch. */
    CHILD_STEP(a, JAIL_STEP_SETRESUID,
               jail_sys(prctl(PR_SET_SECUREBITS, SECBIT_NO_SETUID_FIXUP, 0, 0, 0)));
    CHILD_STEP(a, JAIL_STEP_SETRESUID,
               jail_sys(syscall(SYS_setresgid, a->inside_id, a->inside_id, a->inside_id)));
    CHILD_STEP(a, JAIL_STEP_SETRESUID,
               jail_sys(syscall(SYS_setresuid, a->inside_id, a->inside_id, a->inside_id)));
    CHILD_STEP(a, JAIL_STEP_CGROUP_NS, jail_sys(unshare(CLONE_NEWCGROUP)));
    CHILD_STEP(a, JAIL_STEP_MOUNT_PRIVATE, steps_mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
    size_t idx = 0;
    int r;
    if (cfg->rootless && (r = mount_plan_open_sources(&cfg->plan, a->trees, &idx)) < 0)
        jail_child_fail(a, JAIL_STEP_OPEN_SOURCES, r, (int)idx);
    CHILD_STEP(
        a, JAIL_STEP_ROOT_TMPFS,
        steps_mount("tmpfs", JAIL_STAGING, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=4m"));
    CHILD_STEP(a, JAIL_STEP_CHDIR_NEWROOT, jail_sys(chdir(JAIL_STAGING)));
    r = mount_plan_apply(&cfg->plan, a->trees, !cfg->rootless, &idx);
    if (r < 0)
        jail_child_fail(a, JAIL_STEP_MOUNT_OPS, r, (int)idx);
    if (req->role == JAIL_ROLE_SANDBOX &&
        (r = mount_plan_apply(&cfg->plan_sandbox, NULL, true, &idx)) < 0)
        jail_child_fail(a, JAIL_STEP_SANDBOX_MOUNTS, r, (int)idx);
    /* pivot_root(".", "."): the old root ends up stacked on top of the new one and is
     * detached right away, so nothing of the host tree stays reachable. */
    CHILD_STEP(a, JAIL_STEP_PIVOT_ROOT, jail_sys(syscall(SYS_pivot_root, ".", ".")));
    CHILD_STEP(a, JAIL_STEP_DETACH_OLD_ROOT, jail_sys(umount2(".", MNT_DETACH)));
    CHILD_STEP(a, JAIL_STEP_CHDIR_ROOT, jail_sys(chdir("/")));
    CHILD_STEP(a, JAIL_STEP_REMOUNT_ROOT_RO,
               steps_mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV,
                           NULL));
    CHILD_STEP(a, JAIL_STEP_HOSTNAME,
               jail_sys(sethostname(JAIL_HOSTNAME, sizeof(JAIL_HOSTNAME) - 1)));
    CHILD_STEP(a, JAIL_STEP_CHDIR_TMP, jail_sys(chdir("/tmp")));
    /* Still holding CAP_NET_ADMIN in the user namespace that owns our network namespace, so
     * lo can come up; the listener leaves with the parent before user code can run. */
    if (req->role == JAIL_ROLE_SANDBOX && req->egress_port)
        CHILD_STEP(a, JAIL_STEP_EGRESS, steps_egress_listener(req->egress_port, a->egress_fd));

    struct steps_fdmap map[5];
    size_t nmap = 0;
    for (int i = 0; i < 4; i++)
        if (a->fds[i] >= 0)
            map[nmap++] = (struct steps_fdmap){.src = a->fds[i], .dst = i};
    /* The error pipe rides along to the first fd after the protocol ones, stays
     * close-on-exec, and everything above it is closed. */
    int err_dst = a->fds[3] >= 0 ? 4 : 3;
    map[nmap++] = (struct steps_fdmap){.src = a->err_fd, .dst = err_dst};
    int rr = steps_remap_fds(map, nmap, err_dst + 1);
    if (rr == 0) {
        a->err_fd = err_dst;
        rr = fcntl(err_dst, F_SETFD, FD_CLOEXEC) < 0 ? -errno : 0;
    }
    if (rr < 0)
        jail_child_fail(a, JAIL_STEP_REMAP_FDS, rr, -1);

    struct steps_rlimit rl[6];
    size_t nrl = 0;
    const struct jail_limits *lim = &req->limits;
    rl[nrl++] = (struct steps_rlimit){RLIMIT_CORE, 0};
    if (lim->nofile)
        rl[nrl++] = (struct steps_rlimit){RLIMIT_NOFILE, lim->nofile};
    if (lim->fsize)
        rl[nrl++] = (struct steps_rlimit){RLIMIT_FSIZE, lim->fsize};
    if (lim->cpu_s)
        rl[nrl++] = (struct steps_rlimit){RLIMIT_CPU, lim->cpu_s};
    if (lim->nproc && req->role == JAIL_ROLE_SANDBOX)
        rl[nrl++] = (struct steps_rlimit){RLIMIT_NPROC, lim->nproc};
    CHILD_STEP(a, JAIL_STEP_RLIMITS, steps_set_rlimits(rl, nrl));
    if (req->role == JAIL_ROLE_SANDBOX)
        CHILD_STEP(a, JAIL_STEP_DROP_CAPS, steps_drop_caps());
    CHILD_STEP(a, JAIL_STEP_NO_NEW_PRIVS, steps_no_new_privs());
    /* sandboxd blocks SIGINT/SIGTERM (it waits for them with sigwait) and ignores SIGPIPE;
     * both a mask and ignored dispositions survive execve. */
    CHILD_STEP(a, JAIL_STEP_SIGNALS, steps_reset_signals());
    const struct sock_fprog *filter = req->egress_port ? &cfg->filter_tcp : &cfg->filter;
    if (req->role == JAIL_ROLE_SANDBOX && filter->len)
        CHILD_STEP(a, JAIL_STEP_SECCOMP, steps_load_seccomp(filter));
    execve(cfg->python, req->argv, cfg->envp);
    jail_child_fail(a, JAIL_STEP_EXECVE, errno, -1);
}

/* ---- spawn (parent) ------------------------------------------------------------------------ */

static int jail_write_maps(const struct jail_config *cfg, pid_t pid, enum jail_role role)
{
    char path[64], line[64];
    unsigned inside = role == JAIL_ROLE_ZYGOTE ? 0 : JAIL_SANDBOX_UID;
    int r;
    if (cfg->rootless) {
        snprintf(path, sizeof(path), "/proc/%d/setgroups", (int)pid);
        if ((r = fd_write_file(path, "deny")) < 0)
            return log_errno(LOG_ERROR, r, "jail: cannot write %s", path);
    }
    snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
    snprintf(line, sizeof(line), "%u %u 1\n", inside, (unsigned)cfg->host_uid);
    if ((r = fd_write_file(path, line)) < 0)
        return log_errno(LOG_ERROR, r, "jail: cannot write %s", path);
    snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
    snprintf(line, sizeof(line), "%u %u 1\n", inside, (unsigned)cfg->host_gid);
    if ((r = fd_write_file(path, line)) < 0)
        return log_errno(LOG_ERROR, r, "jail: cannot write %s", path);
    return 0;
}

/* The egress listener the child sent before it exec'd (already queued on sock). */
static int jail_recv_listener(int sock)
{
    char byte;
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
    ssize_t n;
    do
        n = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return -errno;
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    if (n != 1 || !cm || cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS ||
        cm->cmsg_len != CMSG_LEN(sizeof(int)))
        return -EPROTO;
    int fd;
    memcpy(&fd, CMSG_DATA(cm), sizeof(fd));
    return fd;
}

int jail_spawn(const struct jail_config *cfg, const struct jail_spawn *req, struct jail_proc *ret)
{
    int sync_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, egress_sv[2] = {-1, -1};
    _cleanup_close_ int devnull = -1;
    int *trees = NULL;
    int r;
    if (cfg->rootless) {
        /* The child opens the sources itself into these slots. */
        trees = malloc((cfg->plan.n ? cfg->plan.n : 1) * sizeof(int));
        if (!trees)
            return -ENOMEM;
        for (size_t i = 0; i < cfg->plan.n; i++)
            trees[i] = -1;
    } else if ((r = mount_plan_clone_trees(&cfg->plan, &trees)) < 0) {
        return r;
    }
    if (pipe2(sync_pipe, O_CLOEXEC) < 0 || pipe2(err_pipe, O_CLOEXEC) < 0) {
        r = log_errno(LOG_ERROR, errno, "jail: pipe2 failed");
        goto out;
    }
    if (req->egress_port && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, egress_sv) < 0) {
        r = log_errno(LOG_ERROR, errno, "jail: socketpair for the egress listener failed");
        goto out;
    }
    struct jail_child_args a = {
        .cfg = cfg,
        .req = req,
        .sync_fd = sync_pipe[0],
        .err_fd = err_pipe[1],
        .fds = {req->stdin_fd, req->stdout_fd, req->stderr_fd, req->proto_fd},
        .egress_fd = egress_sv[1],
        .inside_id = req->role == JAIL_ROLE_ZYGOTE ? 0 : JAIL_SANDBOX_UID,
        .trees = trees,
    };
    if (a.fds[0] < 0 || a.fds[1] < 0 || a.fds[2] < 0) {
        devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (devnull < 0) {
            r = log_errno(LOG_ERROR, errno, "jail: cannot open /dev/null");
            goto out;
        }
        for (int i = 0; i < 3; i++)
            if (a.fds[i] < 0)
                a.fds[i] = devnull;
    }
    int64_t start = clock_mono_us();
    unsigned long flags = CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC |
                          CLONE_NEWUTS | SIGCHLD;
    pid_t pid = (pid_t)syscall(SYS_clone, flags, NULL, NULL, NULL, 0);
    if (pid < 0) {
        r = log_errno(LOG_ERROR, errno,
                      "jail: clone with new namespaces failed; user namespaces must be "
                      "enabled (sysctl user.max_user_namespaces > 0, and on Ubuntu "
                      "kernel.apparmor_restrict_unprivileged_userns=0)");
        goto out;
    }
    if (pid == 0) {
        close(sync_pipe[1]);
        close(err_pipe[0]);
        jail_child(&a);
    }
    close(sync_pipe[0]);
    sync_pipe[0] = -1;
    close(err_pipe[1]);
    err_pipe[1] = -1;
    fd_closep(&egress_sv[1]);

    if ((r = jail_write_maps(cfg, pid, req->role)) < 0 ||
        (req->cgroup && (r = cgroup_cell_attach(req->cgroup, pid)) < 0)) {
        kill(pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        goto out;
    }
    char go = 1;
    if (write(sync_pipe[1], &go, 1) != 1) {
        r = log_errno(LOG_ERROR, errno, "jail: cannot release the child");
        kill(pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        goto out;
    }
    struct jail_child_error e;
    ssize_t n;
    do
        n = read(err_pipe[0], &e, sizeof(e));
    while (n < 0 && errno == EINTR);
    if (n != 0) {
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        if (n != (ssize_t)sizeof(e) || e.step < 0 ||
            (size_t)e.step >= ARRAY_SIZE(jail_step_names)) {
            r = log_errno(LOG_ERROR, EPROTO, "jail: child failed before reporting a step");
            goto out;
        }
        if (e.detail >= 0 && e.step == JAIL_STEP_OPEN_SOURCES) {
            const struct mount_op *op =
                (size_t)e.detail < cfg->plan.n ? &cfg->plan.ops[e.detail] : NULL;
            r = log_errno(LOG_ERROR, e.err, "jail: step '%s' failed for '%s'",
                          jail_step_names[e.step], op ? op->src : "?");
        } else if (e.detail >= 0) {
            const struct mount_plan *p =
                e.step == JAIL_STEP_SANDBOX_MOUNTS ? &cfg->plan_sandbox : &cfg->plan;
            const struct mount_op *op = (size_t)e.detail < p->n ? &p->ops[e.detail] : NULL;
            r = log_errno(LOG_ERROR, e.err, "jail: step '%s' failed at %s of '/%s'",
                          jail_step_names[e.step], op ? mount_op_kind_name(op->kind) : "?",
                          op ? op->dst : "?");
        } else {
            r = log_errno(LOG_ERROR, e.err, "jail: step '%s' failed", jail_step_names[e.step]);
        }
        goto out;
    }
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd < 0) {
        r = log_errno(LOG_ERROR, errno, "jail: pidfd_open failed");
        kill(pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        goto out;
    }
    (void)fcntl(pidfd, F_SETFD, FD_CLOEXEC); /* pidfds are always close-on-exec; belt and braces */
    int listener = -1;
    if (req->egress_port && (listener = jail_recv_listener(egress_sv[0])) < 0) {
        r = log_errno(LOG_ERROR, listener,
                      "jail: the sandbox did not hand over its egress listener");
        kill(pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        close(pidfd);
        goto out;
    }
    *ret = (struct jail_proc){.pid = pid, .pidfd = pidfd, .start_us = start, .egress_fd = listener};
    r = 0;
out:
    for (int i = 0; i < 2; i++) {
        if (sync_pipe[i] >= 0)
            close(sync_pipe[i]);
        if (err_pipe[i] >= 0)
            close(err_pipe[i]);
        fd_closep(&egress_sv[i]);
    }
    mount_plan_trees_close(&cfg->plan, trees); /* rootless slots are all -1 in the parent */
    return r;
}
