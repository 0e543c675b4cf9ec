// SPDX-License-Identifier: MIT
/*
 * cgroup — per-sandbox control groups for memory and process limits and for
 * exact accounting (cpu time, peak memory, OOM kills). Detects at start-up
 * whether cgroup v2 (a delegated, writable subtree with the memory and pids
 * controllers) or v1 hierarchies are usable, and creates everything only
 * beneath the cgroup sandboxd itself runs in; it never writes a parent's
 * knobs. When neither works the environment says why, and the jail falls
 * back to rlimits (reported by /healthz).
 *
 * Thread-safe: the environment is immutable after init; each cell is owned
 * by one execution at a time.
 */
#ifndef SANDBOXD_JAIL_CGROUP_H
#define SANDBOXD_JAIL_CGROUP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum cgroup_mode { CGROUP_NONE, CGROUP_V1, CGROUP_V2 };

struct cgroup_env {
    enum cgroup_mode mode;
    char *v2_cells;  /* v2: directory under which cells are created */
    char *v1_memory; /* v1: per-controller base directories (NULL: not usable) */
    char *v1_pids;
    char *v1_cpuacct;
    char *reason; /* NONE: why cgroups are not used */
    atomic_uint_fast64_t next_id;
    pthread_mutex_t graveyard_lock;
    struct cgroup_cell *graveyard; /* removal refused (EBUSY): retried, never waited for */
};

struct cgroup_usage {
    uint64_t cpu_ns;
    uint64_t memory_peak;
    uint64_t oom_kills;
    bool have_cpu, have_memory;
};

struct cgroup_cell;

/* Detect and prepare. want=false records "disabled by configuration". Never fails hard:
 * an unusable cgroup setup yields mode NONE with a reason. */
void cgroup_env_init(struct cgroup_env *env, bool want);
void cgroup_env_done(struct cgroup_env *env);
const char *cgroup_mode_name(enum cgroup_mode m);

/* A fresh cgroup for one sandbox; NULL *ret when mode is NONE. */
int cgroup_cell_new(struct cgroup_env *env, struct cgroup_cell **ret);
/* Removes the cgroup without ever waiting: when the kernel still counts a dying process in
 * it, the cell goes to the environment's graveyard and a later sweep removes it. */
void cgroup_cell_free(struct cgroup_cell *cell);
/* Retry removing the cells in the graveyard (non-blocking). */
void cgroup_env_sweep(struct cgroup_env *env);
/* Retry removing the cells in the graveyard (non-blocking). */
void cgroup_env_sweep(struct cgroup_env *env);
int cgroup_cell_attach(struct cgroup_cell *cell, pid_t pid);
/* 0 leaves a limit unchanged. */
int cgroup_cell_set_limits(struct cgroup_cell *cell, uint64_t memory_bytes, uint64_t max_pids);
/* Start a new accounting period (resets the peak where the kernel allows). */
int cgroup_cell_reset_peak(struct cgroup_cell *cell);
int cgroup_cell_usage(struct cgroup_cell *cell, struct cgroup_usage *ret);
/* Kill every process of the cell (v2 cgroup.kill); -EOPNOTSUPP on v1. */
int cgroup_cell_kill(struct cgroup_cell *cell);

#endif
