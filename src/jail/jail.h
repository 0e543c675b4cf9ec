// SPDX-License-Identifier: MIT
/*
 * jail — the one way sandboxd starts untrusted code. jail_spawn() clones a
 * child into new user, pid, mount, net, ipc, uts and cgroup namespaces,
 * gives it a fresh read-only root with only the interpreter bound in, a
 * size-limited /tmp, rlimits, no capabilities, no_new_privs and the seccomp
 * filter, then execs the Python runtime. The child reports a failure as
 * {step, errno} over a close-on-exec pipe; the parent logs it by step name.
 *
 * Two roles: SANDBOX (runs untrusted code: everything above) and ZYGOTE
 * (the pool's pre-initialised interpreter: same namespaces and filesystem,
 * but it keeps its capabilities inside its own user namespace so it can
 * give each forked cell new namespaces; it never runs untrusted code).
 *
 * The config is built once at start-up and is read-only afterwards, so
 * jail_spawn() may be called from any thread.
 */
#ifndef SANDBOXD_JAIL_JAIL_H
#define SANDBOXD_JAIL_JAIL_H

#include <jansson.h>
#include <linux/filter.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "jail/cgroup.h"
#include "jail/confine.h"
#include "jail/mount.h"

#define JAIL_RUNTIME_DIR          "/sandboxd/runtime"
#define JAIL_CELL_LIB             "/sandboxd/lib/libsbxcell.so"
#define JAIL_COPY_MAX             (2u << 20) /* bytes of the runtime (and of the cell library) */
#define JAIL_HOSTDEPS_MAX_ENTRIES 2000000    /* directory entries walked for symlinks at start-up */
#define JAIL_HOME                 "/home/user" /* a symlink to /tmp, the working directory */
/* The certificates sandboxes trust when egress is on: the host's bundle plus --egress-ca-file */
#define JAIL_CA_BUNDLE "/etc/ssl/certs/ca-certificates.crt"
#define JAIL_CA_MAX    (2u << 20) /* bytes of each source of the bundle */

/* What a sandbox gets when nobody says otherwise: jail_config_init() for options left 0 (NULL),
 * jail_limits_default(), and the command line's defaults (cmd/common.h spells them in --help,
 * so each is a plain literal). */
#define JAIL_DEFAULT_PYTHON      "/usr/bin/python3" /* --python */
#define JAIL_DEFAULT_TMP_MB      64                 /* --tmp-size-mb: the writable /tmp */
#define JAIL_DEFAULT_SANDBOX_UID 65534              /* --sandbox-uid: "nobody" */
#define JAIL_DEFAULT_NOFILE      256                /* open files of a sandbox */
#define JAIL_DEFAULT_NPROC       64                 /* --max-procs: processes and threads */

enum jail_insecure {
    JAIL_INSECURE_NO_SECCOMP = 1u << 0,
};

struct jail_options {
    const char *python;         /* interpreter on the host; NULL: JAIL_DEFAULT_PYTHON */
    const char *runtime_dir;    /* host path of runtime/ */
    const char *cell_lib;       /* host path of libsbxcell.so */
    const char **binds;         /* extra read-only binds "SRC[:DST]", NULL-terminated */
    const char **site_packages; /* extra site directories (a virtualenv's), bound at their own
                                 * path and first on sys.path; NULL-terminated, may be NULL */
    const char *dpkg_dir;       /* package database for jail/dpkg.h; NULL: /var/lib/dpkg */
    uint64_t tmp_bytes;         /* size of the writable /tmp; 0: JAIL_DEFAULT_TMP_MB */
    uid_t sandbox_uid;          /* host uid sandboxes run as when sandboxd is root; 0: the
                                 * default */
    /* cgroup limits: wanted, required, --cgroup-root, the cells' budget, --cpus */
    struct cgroup_options cgroup;
    unsigned insecure; /* enum jail_insecure */
    /* egress (docs/NETWORK.md): sandboxes may get a network policy; they then load the TCP
     * variant of the filter, and every sandbox finds JAIL_CA_BUNDLE */
    bool egress;
    const char *ca_file; /* PEM certificates trusted besides the host's; may be NULL */
    /* the shell toolbox (jail/toolbox.h): off with no_toolbox; toolbox lists programs added
     * to it (names or absolute paths, NULL-terminated, may be NULL) */
    bool no_toolbox;
    const char *const *toolbox;
    /* where what host discovery finds is kept between starts (jail/hostcache.h): a directory
     * of the state directory; NULL: discover at every start */
    const char *cache_dir;
};

struct jail_config {
    char *python; /* resolved interpreter path (same path inside) */
    char *python_version;
    char **site_dirs;               /* extra sys.path entries, NULL-terminated */
    struct mount_plan plan;         /* every jail */
    struct mount_plan plan_sandbox; /* SANDBOX role only, applied after plan */
    char **envp;                    /* the whole environment of sandboxed processes */
    uid_t host_uid;
    gid_t host_gid;
    bool rootless;
    uint64_t tmp_bytes;
    struct sock_fprog filter;
    struct sock_fprog filter_tcp; /* with egress: may create TCP sockets (its own lo only) */
    bool ca_bundle;               /* JAIL_CA_BUNDLE exists in sandboxes */
    unsigned insecure;
    /* Owned (jail_config_done frees it), and mutable through a const config: the cells are
     * created in it and its graveyard swept (its own lock) by every spawner. Set by a
     * successful jail_config_init. */
    struct cgroup_env *cgroups;
};

enum jail_role { JAIL_ROLE_SANDBOX, JAIL_ROLE_ZYGOTE };

struct jail_limits {
    uint64_t nofile; /* open files */
    uint64_t nproc;  /* processes and threads of the sandbox uid */
    uint64_t fsize;  /* largest file written */
    uint64_t cpu_s;  /* RLIMIT_CPU, 0 = none */
    uint64_t memory; /* cgroup memory limit (0 = none) */
};

struct jail_spawn {
    enum jail_role role;
    char *const *argv; /* argv for the interpreter; argv[0] is shown to the program */
    int stdin_fd;      /* -1: /dev/null */
    int stdout_fd;     /* -1: /dev/null */
    int stderr_fd;     /* -1: /dev/null */
    int proto_fd;      /* becomes fd 3; -1: none */
    struct jail_limits limits;
    struct cgroup_cell *cgroup; /* attached before the child goes on (borrowed, may be NULL) */
    /* SANDBOX role with a network policy: the child brings its loopback up, listens on
     * 127.0.0.1:egress_port and hands the listener to us (jail_proc.egress_fd); it gets the
     * TCP filter. 0: no network at all. */
    uint16_t egress_port;
};

struct jail_proc {
    pid_t pid;
    int pidfd;
    int64_t start_us;
    int egress_fd; /* the listener in the sandbox's network namespace (caller closes), or -1 */
};

/* Build the config; logs and returns -errno when the interpreter or a bind is unusable. */
int jail_config_init(struct jail_config *cfg, const struct jail_options *opt);
void jail_config_done(struct jail_config *cfg);
/* The active layers, for the start-up log and /healthz (new reference; NULL when out of
 * memory). */
json_t *jail_describe(const struct jail_config *cfg);
struct jail_limits jail_limits_default(const struct jail_config *cfg);

/* Start a jailed interpreter. On success *ret holds the pid and a pidfd (caller closes),
 * and the child has exec'd. */
int jail_spawn(const struct jail_config *cfg, const struct jail_spawn *req, struct jail_proc *ret);
/* argv for "python -I -S -B /sandboxd/runtime/boot.py <mode> [args...]"; NULL-terminated,
 * caller frees with jail_argv_free. */
char **jail_python_argv(const struct jail_config *cfg, const char *mode, const char *const *args);
void jail_argv_free(char **argv);

#endif
