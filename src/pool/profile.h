// SPDX-License-Identifier: MIT
/*
 * profile — named warm pools whose zygotes start with heavy modules
 * imported (CONTRACT §12): `--profile NAME=mod1,mod2[:size=N][:memory=MB]`,
 * and the built-in "datascience" (numpy, pandas, matplotlib.pyplot on the
 * sandbox's Agg backend, warmed up by building a frame and drawing a
 * figure) when numpy, pandas and matplotlib are installed in a site
 * directory, and "code-interpreter-v1" (the same with IPython's display
 * formatter and the E2B agent: E2B's code-interpreter template) when
 * IPython is too. A request picks one with taskDetails.profile, a session with
 * "profile"; the name "default" is the main pool.
 *
 * Each profile has a pool of its own, started on its first use (a
 * data-science zygote takes about a second to import and ~100 MB), whose
 * zygote also has the session runtime imported, so that JIT, EXECUTOR and
 * sessions share it. Thread-safe after profiles_new().
 */
#ifndef SANDBOXD_POOL_PROFILE_H
#define SANDBOXD_POOL_PROFILE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jail/jail.h"

struct pool;

#define PROFILE_NAME_MAX    64
#define PROFILE_MAX         16 /* profiles per server */
#define PROFILE_DATASCIENCE "datascience"
/* The data-science stack with IPython's formatters and the E2B agent (docs/E2B.md). */
#define PROFILE_CODE_INTERPRETER "code-interpreter-v1"

struct profile_spec {
    char *name;         /* [A-Za-z0-9_-], 1 to PROFILE_NAME_MAX, not "default" */
    char *modules;      /* comma-separated module names */
    unsigned size;      /* ready cells (1 to 1024); 0: profiles_options.default_size */
    uint64_t memory_mb; /* memory of an execution that names none; 0: the server's default */
};

/* Parse "NAME=mod1,mod2[:size=N][:memory=MB]". 0, or -EINVAL with *ret_error (caller frees). */
int profile_spec_parse(const char *arg, struct profile_spec *ret, char **ret_error);
void profile_spec_done(struct profile_spec *s);
/* Is name well-formed for a profile (it may still be unknown)? */
bool profile_name_ok(const char *name);

struct profiles_options {
    unsigned default_size;  /* ready cells per profile pool */
    const char *preimport;  /* --preimport: what every zygote imports (may be NULL) */
    uint64_t nproc, nofile; /* per-cell rlimits */
    size_t max_frame;       /* largest frame a cell may send */
    uint64_t max_memory_mb; /* a profile's memory is at most this */
    /* A network pool for each profile (its cells as a network pool's, pool_options'
     * egress_port), of network_size ready cells, started on its first use: executions and
     * sessions of the profile with a network policy. 0: none; they get a fresh cell. */
    uint16_t egress_port;
    unsigned network_size;
};

struct profiles;

/* The profiles of specs (borrowed, copied) plus the built-in ones that are installed and not
 * redefined by specs. Nothing starts yet. */
int profiles_new(const struct jail_config *jail, const struct profile_spec *specs, size_t n,
                 const struct profiles_options *opt, struct profiles **ret);
void profiles_free(struct profiles *p);
/* The pool of profile name (borrowed, started on its first pool_acquire) and the memory an
 * execution gets when it names none (0: the server's default). -ENOENT when there is no such
 * profile. p may be NULL (no profiles). */
int profiles_lookup(struct profiles *p, const char *name, struct pool **ret_pool,
                    uint64_t *ret_memory_mb);
/* {"NAME": {modules, size, memoryMb, builtin, pool: pool_stats + memory, networkPool: the same
 * or {"enabled": false}}} (new reference; NULL when out of memory). */
json_t *profiles_stats(struct profiles *p);
/* The network pool of profile name (borrowed, started on its first pool_acquire), or NULL when
 * there is none (no such profile, or profiles_options' network_size 0). */
struct pool *profiles_network_pool(struct profiles *p, const char *name);
/* ["NAME", ...] in the order profiles were defined (new reference; [] for NULL). */
json_t *profiles_names(struct profiles *p);

#endif
