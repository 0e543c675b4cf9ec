// SPDX-License-Identifier: MIT
/*
 * cgroup_int — what the two halves of the cgroup module share (cgroup_setup.c, the
 * one-time configuration, and cgroup.c, the per-cell actions): paths and knob access
 * through the environment's struct cgroup_fs. Not for other modules.
 */
#ifndef SANDBOXD_JAIL_CGROUP_INT_H
#define SANDBOXD_JAIL_CGROUP_INT_H

#include <stdint.h>

#include "jail/cgroup.h"
#include "util/macros.h"

/* Largest knob file read (cgroup.procs of a busy cgroup is the big one). */
#define CGROUP_READ_MAX (1u << 20)
/* cpu.max / cpu.cfs_period_us: the period of the --cpus quota. */
#define CGROUP_CPU_PERIOD_US 100000u

/* The real file system. */
extern const struct cgroup_fs cgroup_fs_real;

/* "a/b" (caller frees), NULL when out of memory. */
char *cgroup_join(const char *a, const char *b);
/* dir/knob through env->fs. */
int cgroup_write(const struct cgroup_env *env, const char *dir, const char *knob,
                 const char *value);
int cgroup_writef(const struct cgroup_env *env, const char *dir, const char *knob, const char *fmt,
                  ...) _printf_(4, 5);
int cgroup_read(const struct cgroup_env *env, const char *dir, const char *knob, char **ret);
/* A number, or "max" as UINT64_MAX. */
int cgroup_read_u64(const struct cgroup_env *env, const char *dir, const char *knob, uint64_t *ret);
/* The value of "key value" lines (memory.events, cpu.stat, memory.oom_control); -ENOENT
 * when the key is missing. */
int cgroup_read_keyed(const struct cgroup_env *env, const char *dir, const char *knob,
                      const char *key, uint64_t *ret);
/* Free what the graveyard still holds, when nothing can be waited for any longer. */
void cgroup_env_bury(struct cgroup_env *env);
/* The --cpus quota as written to cpu.max ("QUOTA PERIOD") or cpu.cfs_quota_us (QUOTA). */
uint64_t cgroup_cpu_quota_us(uint32_t cpus_milli);

#endif
