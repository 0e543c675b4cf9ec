// SPDX-License-Identifier: MIT
/*
 * cgroup — per-sandbox control groups: memory, pids and (with --cpus) cpu limits,
 * kernel-measured accounting (cpu time, peak memory, OOM kills) and killing a sandbox's
 * whole tree. Split like nsjail's config and subproc: cgroup_setup.c discovers once, at
 * start-up, what the host offers (cgroup v2 in our own cgroup or a delegated
 * --cgroup-root, else the v1 hierarchies) and prepares one parent for every cell with a
 * total memory budget; cgroup.c creates, limits, measures, kills and removes one cell.
 *
 * Never: create a cgroup outside the one sandboxd runs in (or the one it is given), or
 * write a knob of a cgroup it did not create, except enabling controllers in that base
 * cgroup for its own children, and cgroup_prime's move of a thread to where it is. When
 * limits cannot be had, the environment carries the true reason (shown by /healthz) and the
 * jail falls back to rlimits.
 *
 * Thread-safe: the environment is immutable after init, but for the cell counter and the
 * graveyard, which synchronise themselves; each cell is owned by one user at a time.
 */
#ifndef SANDBOXD_JAIL_CGROUP_H
#define SANDBOXD_JAIL_CGROUP_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum cgroup_mode { CGROUP_NONE, CGROUP_V1, CGROUP_V2 };

/* How the module touches cgroupfs. The default is the real file system; a unit test passes
 * its own to model the kernel's rules over a fake tree. Each returns 0 (open: an fd) or
 * -errno. */
struct cgroup_fs {
    int (*write)(void *ctx, const char *path, const char *value);
    int (*read)(void *ctx, const char *path, char **ret); /* NUL-terminated; caller frees */
    int (*mkdir)(void *ctx, const char *path);            /* -EEXIST when present */
    int (*rmdir)(void *ctx, const char *path);
    int (*open)(void *ctx, const char *path, int flags); /* O_CLOEXEC is added */
    void *ctx;
};

/* --cpus: the largest quota and its granularity (thousandths of a CPU). */
#define CGROUP_CPUS_MILLI_MIN 10u
#define CGROUP_CPUS_MILLI_MAX (1024u * 1000u)

struct cgroup_options {
    bool want;            /* false: --no-cgroups */
    bool require;         /* fail init when a requested limit cannot be had */
    const char *root;     /* --cgroup-root: a delegated cgroup v2 directory (implies require) */
    uint64_t cells_bytes; /* --cells-memory-mb: memory of every cell together; 0: the default */
    uint32_t cpus_milli;  /* --cpus x 1000 for each sandbox; 0: no quota */
    /* For tests; NULL: the real ones. */
    const char *proc;           /* where procfs is ("/proc") */
    const struct cgroup_fs *fs; /* borrowed; must outlive the environment */
};

struct cgroup_env {
    enum cgroup_mode mode;
    struct cgroup_fs fs;
    char *base;      /* v2: the cgroup prepared (our own, or --cgroup-root) */
    char *leaf;      /* v2: where base's processes were moved; NULL when none had to be */
    unsigned moved;  /* how many processes were moved there */
    char *cells;     /* v2: the parent of every cell */
    char *v1_memory; /* v1: per-hierarchy parents of the cells (sandboxd-<pid>) */
    char *v1_pids;
    char *v1_cpuacct;  /* NULL when the hierarchy is missing: cpu time from rusage */
    char *v1_cpu;      /* only with --cpus; NULL when co-mounted with cpuacct, whose
                        * directories then take the quota */
    char *controllers; /* what the cells get, e.g. "memory pids cpu" */
    uint64_t budget;   /* the cells' memory together, bytes; 0: none could be set */
    char *budget_from; /* how the budget was chosen, for /healthz */
    uint32_t cpus_milli;
    bool cpu_quota;       /* cpus_milli is applied to every sandbox */
    bool have_peak;       /* v2 memory.peak (kernel 5.19+); else the peak comes from rusage */
    bool peak_resettable; /* v2 memory.peak can be reset per open file (kernel 6.12+) */
    bool have_kill;       /* v2 cgroup.kill (kernel 5.14+) */
    bool have_oom_group;  /* v2 memory.oom.group (kernel 4.19+) */
    bool required;
    char *reason;     /* mode NONE: why no cgroups; NULL otherwise */
    char *cpu_reason; /* --cpus given but no quota possible: why */
    atomic_uint_fast64_t next_id;
    pthread_mutex_t graveyard_lock;
    struct cgroup_cell *graveyard; /* removal refused (EBUSY): retried, never waited for */
};

struct cgroup_usage {
    uint64_t cpu_ns;      /* since the last cgroup_cell_reset_peak() */
    uint64_t memory_peak; /* bytes */
    uint64_t oom_kills;   /* since the last cgroup_cell_reset_peak() */
    bool have_cpu, have_memory;
};

struct cgroup_cell;

/* Detect and prepare (cgroup_setup.c). Without opt->require it never fails: unusable
 * cgroups give mode NONE with env->reason. With it, -EPERM (or the error met) when a
 * requested limit cannot be had; env->reason (or env->cpu_reason) says why. Either way
 * call cgroup_env_done(). */
int cgroup_env_init(struct cgroup_env *env, const struct cgroup_options *opt);
/* Remove the cells' parents (best effort) and free everything. NULL is a no-op. */
void cgroup_env_done(struct cgroup_env *env);
const char *cgroup_mode_name(enum cgroup_mode m);
/* What /healthz shows under isolation.cgroup (new reference; NULL when out of memory). */
json_t *cgroup_env_describe(const struct cgroup_env *env);

/* For a process that starts one sandbox and exits (`sandboxd run`): pay the kernel's wait for
 * the first move between cgroups now, on a thread of its own, instead of in the middle of the
 * spawn. The first migration after a quiet spell waits for an RCU grace period (the
 * cgroup_threadgroup_rwsem's rcu_sync: 5 to 15 ms on a loaded machine) and every migration
 * within about a grace period of one does not; so the thread moves itself to the cgroup it is
 * already in (a move that changes nothing) while the caller discovers the host, and the cell's
 * attach milliseconds later finds the lock warm. Best effort, never fails, never waits; the
 * one write it makes is that no-op move, the only write to a cgroup sandboxd did not create. */
void cgroup_prime(void);

/* A fresh cgroup for one sandbox or zygote (v2: memory.oom.group and no swap already set);
 * *ret is NULL when mode is NONE. */
int cgroup_cell_new(struct cgroup_env *env, struct cgroup_cell **ret);
/* Removes the cgroup without ever waiting: when the kernel still counts a dying process in
 * it, the cell goes to the environment's graveyard and a later sweep removes it. NULL is a
 * no-op. */
void cgroup_cell_free(struct cgroup_cell *cell);
/* Retry removing the cells in the graveyard (non-blocking). */
void cgroup_env_sweep(struct cgroup_env *env);
int cgroup_cell_attach(struct cgroup_cell *cell, pid_t pid);
/* For cells that run untrusted code: memory and pids (0 leaves one unchanged), and the
 * --cpus quota. */
int cgroup_cell_set_limits(struct cgroup_cell *cell, uint64_t memory_bytes, uint64_t max_pids);
/* Start a new accounting period: cpu time and OOM kills count from here, and the peak
 * memory too where the kernel can reset it. */
int cgroup_cell_reset_peak(struct cgroup_cell *cell);
int cgroup_cell_usage(struct cgroup_cell *cell, struct cgroup_usage *ret);
/* Kill every process of the cell (v2 cgroup.kill); -EOPNOTSUPP without it. */
int cgroup_cell_kill(struct cgroup_cell *cell);

#endif
