// SPDX-License-Identifier: MIT
/*
 * jail — see jail.h. The configuration, discovered once at start-up: the
 * interpreter and where it keeps its files, the mount plans, the environment,
 * the seccomp filters and the cgroup environment; and the argv and limits
 * derived from it. spawn.c starts jailed processes from it.
 */
#include "jail/jail.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "jail/hostcache.h"
#include "jail/hostdeps.h"
#include "jail/seccomp.h"
#include "jail/toolbox.h"
#include "util/b64.h"
#include "util/buf.h"
#include "util/fdio.h"
#include "util/fmt.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/proc.h"

/* ---- configuration (parent, start-up) --------------------------------------------------- */

/* Where the interpreter keeps its files; with two arguments (the runtime directory on the host
 * and the runtime package's directory in the jail) also the runtime package compiled to
 * checked hash-based bytecode (PEP 552: the interpreter in the jail compares it with the source
 * at every import and compiles the source itself when they differ), for hostcache.h. */
static const char jail_python_query[] =
    "import json, os, site, sys, sysconfig\n"
    "p = sysconfig.get_paths()\n"
    "dirs = site.getsitepackages() + [p['purelib'], p['platlib']]\n"
    "out = {'executable': os.path.realpath(sys.executable),\n"
    "  'version': sys.version.split()[0], 'stdlib': p['stdlib'],\n"
    "  'platstdlib': p['platstdlib'], 'site': [d for d in dirs if os.path.isdir(d)],\n"
    "  'candidates': dirs,\n"
    "  'multiarch': sysconfig.get_config_var('MULTIARCH') or '',\n"
    "  'libdir': sysconfig.get_config_var('LIBDIR') or ''}\n"
    "tag = sys.implementation.cache_tag\n"
    "if len(sys.argv) == 3 and tag:\n"
    "    import base64, importlib.util, marshal\n"
    "    pkg, pyc = os.path.join(sys.argv[1], 'sandboxd_runtime'), {}\n"
    "    for name in sorted(os.listdir(pkg)):\n"
    "        if not name.endswith('.py'):\n"
    "            continue\n"
    "        with open(os.path.join(pkg, name), 'rb') as f:\n"
    "            src = f.read()\n"
    "        try:\n"
    "            code = compile(src, sys.argv[2] + '/' + name, 'exec', dont_inherit=True)\n"
    "        except (SyntaxError, ValueError):\n"
    "            continue\n"
    "        pyc['%s.%s.pyc' % (name[:-3], tag)] = base64.b64encode(importlib.util.MAGIC_NUMBER\n"
    "            + (3).to_bytes(4, 'little') + importlib.util.source_hash(src)\n"
    "            + marshal.dumps(code)).decode()\n"
    "    out['pyc'] = pyc\n"
    "print(json.dumps(out))\n";

#define JAIL_QUERY_MAX (16u << 20) /* bytes of the interpreter's answer, bytecode included */
#define JAIL_PYCACHE   JAIL_RUNTIME_DIR "/sandboxd_runtime/__pycache__"

/* Ask the configured interpreter where it keeps its files (and, given runtime_dir, to compile
 * the runtime). It is the operator's trusted interpreter running a fixed script; no untrusted
 * code runs here. */
static int jail_query_python(const char *python, const char *runtime_dir, json_t **ret)
{
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) < 0)
        return -errno;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pfd[1], STDOUT_FILENO);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    char *argv[] = {(char *)python,
                    "-I",
                    "-S",
                    "-c",
                    (char *)jail_python_query,
                    (char *)runtime_dir,
                    runtime_dir ? JAIL_RUNTIME_DIR "/sandboxd_runtime" : NULL,
                    NULL};
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
    buf_init(&out, JAIL_QUERY_MAX);
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
    (void)proc_wait(pid, &status);
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
        {"/etc/hosts", "127.0.0.1 localhost " CONFINE_HOSTNAME "\n::1 localhost\n"},
        {"/etc/hostname", CONFINE_HOSTNAME "\n"},
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
    snprintf(opts, sizeof(opts), CONFINE_TMPFS_OPTIONS, (unsigned long long)cfg->tmp_bytes);
    if ((r = mount_plan_tmpfs(&cfg->plan, "/dev/shm", opts, CONFINE_SHM_FLAGS)) < 0)
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

/* What discovery reads besides the paths it binds and copies (recorded with those): the
 * interpreter, the candidates for its site directories, the directories it walks (b, before
 * discovery adds to them), the package database, where the toolbox looks for programs. */
static int jail_cache_watch(struct hostcache *hc, const struct jail_config *cfg,
                            const struct jail_options *opt, json_t *pyinfo,
                            const struct hostdeps_binds *b)
{
    const char *dpkg = opt->dpkg_dir ? opt->dpkg_dir : "/var/lib/dpkg";
    _cleanup_free_ char *status = fmt_str("%s/status", dpkg);
    _cleanup_free_ char *lists = fmt_str("%s/info", dpkg);
    if (!status || !lists)
        return -ENOMEM;
    const char *fixed[] = {opt->python,      cfg->python, status, lists,
                           "/usr/local/bin", "/usr/bin",  "/bin"};
    int r = 0;
    for (size_t i = 0; i < ARRAY_SIZE(fixed) && r == 0; i++)
        if (fixed[i] && fixed[i][0] == '/')
            r = hostcache_watch(hc, fixed[i]);
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(pyinfo, "candidates"), i, v)
    {
        const char *d = json_string_value(v);
        if (r == 0 && d && d[0] == '/')
            r = hostcache_watch(hc, d);
    }
    for (i = 0; i < b->n && r == 0; i++)
        r = hostcache_watch(hc, b->paths[i]);
    for (const char *const *t = opt->toolbox; t && *t && r == 0; t++)
        if ((*t)[0] == '/')
            r = hostcache_watch(hc, *t);
    return r;
}

/* Discovery proper: the package data, the links that leave the interpreter's directories and
 * the toolbox; recorded into hc when there is one. */
static int jail_plan_discover(struct jail_config *cfg, const struct jail_options *opt,
                              json_t *pyinfo, struct hostdeps_binds *b, struct hostcache *hc)
{
    size_t first = cfg->plan.n;
    int r = hc ? jail_cache_watch(hc, cfg, opt, pyinfo, b) : 0;
    if (r < 0)
        return r;
    if ((r = hostdeps_add(&cfg->plan, b, opt->dpkg_dir ? opt->dpkg_dir : "/var/lib/dpkg",
                          cfg->site_dirs)) < 0)
        return r;
    /* The shell toolbox after the interpreter's packages: what they bound is not bound twice. */
    char libs[JAIL_LIB_DIRS][PATH_MAX];
    size_t nlibs = jail_lib_dirs(pyinfo, libs);
    const char *libdirs[JAIL_LIB_DIRS + 1] = {0};
    for (size_t i = 0; i < nlibs; i++)
        libdirs[i] = libs[i];
    if ((r = toolbox_add(&cfg->plan, b, !opt->no_toolbox, opt->toolbox, libdirs, !cfg->rootless)) <
        0)
        return r;
    r = hc ? hostcache_record(hc, &cfg->plan, first) : 0;
    return r == -ENOMEM ? r : 0; /* anything else: not cached, and that is all */
}

static int jail_plan_build(struct jail_config *cfg, const struct jail_options *opt, json_t *pyinfo,
                           struct hostcache *hc, bool replay)
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
    snprintf(opts, sizeof(opts), CONFINE_TMPFS_OPTIONS, (unsigned long long)cfg->tmp_bytes);
    if ((r = mount_plan_tmpfs(&cfg->plan, "/tmp", opts, CONFINE_TMP_FLAGS)) < 0)
        goto out;
    /* E2B's home (docs/E2B.md): the working directory by the name its SDKs and users give it. */
    if ((r = mount_plan_symlink(&cfg->plan, "/tmp", JAIL_HOME)) < 0)
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
    r = replay ? hostcache_replay(hc, &cfg->plan) : jail_plan_discover(cfg, opt, pyinfo, &b, hc);
    if (r < 0 || (r = hostcache_add_bytecode(hc, &cfg->plan, JAIL_PYCACHE)) < 0)
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
    for (size_t i = 0; i < confine_proc_readonly_n; i++) {
        if (access(confine_proc_readonly[i], F_OK) < 0)
            continue;
        int r = mount_plan_remount_ro(p, confine_proc_readonly[i]);
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

/* The options that shape discovery, for hostcache.h (which adds our binary). */
static char *jail_cache_fingerprint(const struct jail_options *opt, const char *python,
                                    bool rootless)
{
    struct buf b;
    buf_init(&b, 1 << 20);
    int r = buf_printf(&b,
                       "python=%s\nruntime=%s\ncell-lib=%s\ndpkg=%s\ntoolbox=%s\n"
                       "rootless=%d\nuid=%u\n",
                       python, opt->runtime_dir, opt->cell_lib ? opt->cell_lib : "",
                       opt->dpkg_dir ? opt->dpkg_dir : "/var/lib/dpkg",
                       opt->no_toolbox ? "none" : "default", rootless, (unsigned)geteuid());
    for (const char **d = opt->site_packages; d && *d && r == 0; d++)
        r = buf_printf(&b, "site=%s\n", *d);
    for (const char *const *t = opt->toolbox; t && *t && r == 0; t++)
        r = buf_printf(&b, "toolbox-add=%s\n", *t);
    if (r < 0) {
        buf_free(&b);
        return NULL;
    }
    return buf_take(&b, NULL);
}

/* Keep the interpreter's answer in hc: its bytecode files decoded, the rest as it is. */
static int jail_cache_python(struct hostcache *hc, json_t *info)
{
    const char *name;
    json_t *v;
    json_object_foreach(json_object_get(info, "pyc"), name, v)
    {
        char *data = NULL;
        size_t len = 0;
        int r = json_is_string(v)
                    ? b64_decode(json_string_value(v), json_string_length(v), &data, &len)
                    : -EBADMSG;
        if (r == 0)
            r = hostcache_add_pyc(hc, name, data, len);
        free(data);
        if (r == -ENOMEM)
            return r;
        if (r < 0)
            log_debug("jail: no bytecode of %s kept: %s", name, strerror(-r));
    }
    json_object_del(info, "pyc");
    hostcache_set_python(hc, info);
    return 0;
}

/* What a discovery that is thrown away left in cfg. */
static void jail_discovery_reset(struct jail_config *cfg)
{
    free(cfg->python);
    free(cfg->python_version);
    for (char **p = cfg->site_dirs; p && *p; p++)
        free(*p);
    free(cfg->site_dirs);
    cfg->python = cfg->python_version = NULL;
    cfg->site_dirs = NULL;
    mount_plan_done(&cfg->plan);
    mount_plan_init(&cfg->plan);
}

/* The interpreter's answer and the plan: replayed from hc, or discovered (and recorded into hc
 * when there is one). Replaying returns -ESTALE when the host no longer matches the cache. */
static int jail_discover(struct jail_config *cfg, const struct jail_options *opt,
                         const char *python, struct hostcache *hc, bool replay)
{
    json_t *info = NULL;
    int r;
    if (replay) {
        info = json_incref(hostcache_python(hc));
    } else {
        if ((r = jail_query_python(python, hc ? opt->runtime_dir : NULL, &info)) < 0)
            return log_errno(LOG_ERROR, r, "jail: cannot run the interpreter '%s' (set --python)",
                             python);
        if (hc && (r = jail_cache_python(hc, info)) < 0) {
            json_decref(info);
            return r;
        }
    }
    r = jail_plan_build(cfg, opt, info, hc, replay);
    json_decref(info);
    return r;
}

/* Discover afresh (after a replay that found the host changed), and keep what was found. */
static int jail_rediscover(struct jail_config *cfg, const struct jail_options *opt,
                           const char *python, struct hostcache *hc)
{
    (void)hostcache_copy_wait(hc); /* nothing of a replay is used, its thread neither */
    jail_discovery_reset(cfg);
    int r = jail_discover(cfg, opt, python, hc, false);
    if (r == 0 && hc)
        (void)hostcache_save(hc); /* logged; the next start discovers again */
    return r;
}

int jail_config_init(struct jail_config *cfg, const struct jail_options *opt)
{
    *cfg = (struct jail_config){0};
    mount_plan_init(&cfg->plan);
    mount_plan_init(&cfg->plan_sandbox);
    cfg->tmp_bytes = opt->tmp_bytes ? opt->tmp_bytes : (uint64_t)JAIL_DEFAULT_TMP_MB << 20;
    cfg->insecure = opt->insecure;
    cfg->rootless = geteuid() != 0;
    if (cfg->rootless) {
        cfg->host_uid = geteuid();
        cfg->host_gid = getegid();
    } else {
        cfg->host_uid = opt->sandbox_uid ? opt->sandbox_uid : JAIL_DEFAULT_SANDBOX_UID;
        cfg->host_gid = cfg->host_uid;
    }
    const char *python = opt->python ? opt->python : JAIL_DEFAULT_PYTHON;
    if (!opt->runtime_dir)
        return log_errno(LOG_ERROR, EINVAL, "jail: no runtime directory configured");

    /* What discovery found last time, when the host still matches it (hostcache.h); the
     * toolbox's files are copied meanwhile, on a thread of their own. */
    struct hostcache *hc = NULL;
    int r = 0;
    if (opt->cache_dir) {
        _cleanup_free_ char *fp = jail_cache_fingerprint(opt, python, cfg->rootless);
        if (!fp || hostcache_open(opt->cache_dir, fp, &hc) == -ENOMEM)
            r = -ENOMEM;
    }
    bool replay = r == 0 && hostcache_fresh(hc);
    if (replay && (r = hostcache_copy_start(hc)) == -ENOMEM)
        goto fail;
    r = replay ? jail_discover(cfg, opt, python, hc, true) : r < 0 ? r : -ESTALE;
    if (r == -ESTALE)
        r = jail_rediscover(cfg, opt, python, hc);
    if (r < 0)
        goto fail;
    if ((r = jail_build_env(cfg)) < 0 || (r = jail_sandbox_plan(&cfg->plan_sandbox)) < 0)
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
    /* The plan is whole once the toolbox's copies are; a file that changed meanwhile makes
     * it a discovery after all. */
    if (replay && (r = hostcache_copy_wait(hc)) == -ESTALE)
        r = jail_rediscover(cfg, opt, python, hc);
    if (r < 0)
        goto fail;
    if (opt->egress && (r = jail_plan_certs(cfg, opt->ca_file)) < 0)
        goto fail;
    hostcache_free(hc);
    return 0;
fail:
    hostcache_free(hc); /* first: it waits for its copying thread */
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
        .nofile = JAIL_DEFAULT_NOFILE,
        .nproc = JAIL_DEFAULT_NPROC,
        .fsize = cfg->tmp_bytes,
        .cpu_s = 0,
        .memory = 0,
    };
}

json_t *jail_describe(const struct jail_config *cfg)
{
    json_t *ns = json_array();
#define JAIL_NS_NAME_(flag, name) json_array_append_new(ns, json_string(name));
    CONFINE_NAMESPACE_LIST(JAIL_NS_NAME_)
#undef JAIL_NS_NAME_
    json_t *layers = json_pack(
        "{s:o, s:b, s:s, s:b, s:b, s:s, s:s*, s:s, s:s, s:I, s:b, s:I}", "namespaces", ns,
        "seccomp", cfg->filter.len > 0, "seccompMode", cfg->filter.len > 0 ? "allowlist" : "off",
        "noNewPrivs", 1, "capabilitiesDropped", 1, "cgroups", cgroup_mode_name(cfg->cgroups->mode),
        "cgroupsReason", cfg->cgroups->reason, "python", cfg->python, "pythonVersion",
        cfg->python_version, "sandboxUid", (json_int_t)cfg->host_uid, "rootless", cfg->rootless,
        "tmpBytes", (json_int_t)cfg->tmp_bytes);
    if (!layers)
        return NULL;
    if (json_object_set_new(layers, "rlimits",
                            json_pack("[s,s,s,s,s]", "nofile", "nproc", "fsize", "cpu", "core")) <
        0) {
        json_decref(layers);
        return NULL;
    }
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
