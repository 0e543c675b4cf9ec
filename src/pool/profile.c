// SPDX-License-Identifier: MIT
/*
 * profile — see profile.h.
 */
#include "pool/profile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pool/pool.h"
#include "util/fmt.h"
#include "util/log.h"
#include "util/macros.h"

/* The built-in data-science profile. The warm-up runs in the zygote (trusted code, before any
 * fork): pandas' lazily loaded parts, the Agg renderer and its fonts are then ready in every
 * cell instead of being loaded by the first request of each. */
static const char profile_ds_modules[] = "numpy,pandas,matplotlib,matplotlib.pyplot";
static const char *const profile_ds_requires[] = {"numpy", "pandas", "matplotlib"};
static const char profile_ds_warmup[] =
    "import io\n"
    "import numpy as np\n"
    "import pandas as pd\n"
    "import matplotlib.pyplot as plt\n"
    "df = pd.DataFrame({'k': np.arange(12) % 3, 'v': np.linspace(0.0, 1.0, 12)})\n"
    "df.groupby('k').agg(total=('v', 'sum'), mean=('v', 'mean')).reset_index().to_html()\n"
    "df.describe().to_dict()\n"
    "fig, ax = plt.subplots()\n"
    "ax.plot(df['v'], label='v')\n"
    "ax.bar(df['k'], df['v'])\n"
    "ax.set_title('warm-up')\n"
    "ax.legend()\n"
    "fig.savefig(io.BytesIO(), format='png', bbox_inches='tight')\n"
    "plt.close('all')\n";
/* Measured (docs/PERFORMANCE.md): a forked data-science cell that builds a frame and draws a
 * chart is charged ~25 MB (its cgroup's peak: the libraries' pages stay its zygote's), and
 * importing numpy, pandas and matplotlib afresh ~100 MB; the default 256 MB would leave a
 * frame of a few hundred thousand rows little room for its groupby copies. */
#define PROFILE_DS_MEMORY_MB 512

/* The built-in code-interpreter profile: the data-science stack, IPython's display formatter
 * (the text/plain, HTML and PNG of a value, as Jupyter shows it) and the E2B agent, whose
 * sandboxes (docs/E2B.md) are its sessions. Its warm-up formats a frame and a figure too. */
static const char profile_ci_modules[] =
    "numpy,pandas,matplotlib,matplotlib.pyplot,IPython.core.formatters,"
    "IPython.core.display_functions,sandboxd_runtime.e2b";
static const char *const profile_ci_requires[] = {"numpy", "pandas", "matplotlib", "IPython"};
static const char profile_ci_warmup[] =
    "import io\n"
    "import numpy as np\n"
    "import pandas as pd\n"
    "import matplotlib.pyplot as plt\n"
    "from sandboxd_runtime import e2b_kernel\n"
    "df = pd.DataFrame({'k': np.arange(12) % 3, 'v': np.linspace(0.0, 1.0, 12)})\n"
    "df.groupby('k').agg(total=('v', 'sum')).reset_index()\n"
    "fmt = e2b_kernel.make_formatter()\n"
    "fmt.format(df)\n"
    "fmt.format([1, 2.5, 'x', None])\n"
    "fig, ax = plt.subplots()\n"
    "ax.plot(df['v'], label='v')\n"
    "ax.legend()\n"
    "fmt.format(fig)\n"
    "plt.close('all')\n";

static const struct profile_builtin {
    const char *name;
    const char *modules;
    const char *const *requires; /* top-level packages that must be installed */
    size_t n_requires;
    const char *warmup;
    uint64_t memory_mb;
} profile_builtins[] = {
    {PROFILE_DATASCIENCE, profile_ds_modules, profile_ds_requires, ARRAY_SIZE(profile_ds_requires),
     profile_ds_warmup, PROFILE_DS_MEMORY_MB},
    {PROFILE_CODE_INTERPRETER, profile_ci_modules, profile_ci_requires,
     ARRAY_SIZE(profile_ci_requires), profile_ci_warmup, PROFILE_DS_MEMORY_MB},
};

struct profile {
    struct profile_spec spec;
    const char *warmup; /* static */
    bool builtin;
    struct pool *pool;
    struct pool *network_pool; /* NULL: none (profiles_options' network_size 0) */
};

struct profiles {
    struct profile items[PROFILE_MAX];
    size_t n;
    unsigned default_size;
};

bool profile_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > PROFILE_NAME_MAX || strcmp(name, "default") == 0)
        return false;
    return strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

/* A dotted Python module name ("matplotlib.pyplot"). */
static bool profile_module_ok(const char *m, size_t n)
{
    if (n == 0 || n > 255)
        return false;
    bool start = true;
    for (size_t i = 0; i < n; i++) {
        char c = m[i];
        if (c == '.') {
            if (start)
                return false;
            start = true;
            continue;
        }
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        if (!alpha && !(!start && c >= '0' && c <= '9'))
            return false;
        start = false;
    }
    return !start;
}

void profile_spec_done(struct profile_spec *s)
{
    free(s->name);
    free(s->modules);
    *s = (struct profile_spec){0};
}

int profile_spec_parse(const char *arg, struct profile_spec *ret, char **ret_error)
{
    *ret = (struct profile_spec){0};
    const char *eq = strchr(arg, '=');
    if (!eq)
        return fmt_error(ret_error, EINVAL, "expected NAME=mod1,mod2[:size=N][:memory=MB]");
    _cleanup_free_ char *name = strndup(arg, (size_t)(eq - arg));
    if (!name)
        return -ENOMEM;
    if (!profile_name_ok(name))
        return fmt_error(ret_error, EINVAL,
                         "profile name '%s': 1 to %d letters, digits, '_' or '-', not 'default'",
                         name, PROFILE_NAME_MAX);
    const char *mods = eq + 1;
    size_t mlen = strcspn(mods, ":");
    if (mlen == 0)
        return fmt_error(ret_error, EINVAL, "profile '%s' names no modules", name);
    for (const char *m = mods; m < mods + mlen;) {
        size_t n = strcspn(m, ",:");
        if (!profile_module_ok(m, n))
            return fmt_error(ret_error, EINVAL, "profile '%s': '%.*s' is not a module name", name,
                             (int)n, m);
        m += n + (m[n] == ',');
    }
    struct profile_spec s = {0};
    for (const char *o = mods + mlen; *o == ':';) {
        o++;
        size_t n = strcspn(o, ":");
        unsigned long long v = 0;
        char key[16] = "", *end = NULL;
        const char *val = memchr(o, '=', n);
        if (val && (size_t)(val - o) < sizeof(key)) {
            memcpy(key, o, (size_t)(val - o));
            errno = 0;
            v = strtoull(val + 1, &end, 10);
        }
        if (!val || !end || end != o + n || errno || val[1] == '-' || val + 1 == o + n ||
            (strcmp(key, "size") != 0 && strcmp(key, "memory") != 0) ||
            (strcmp(key, "size") == 0 && (v < 1 || v > 1024)) ||
            (strcmp(key, "memory") == 0 && (v < 16 || v > (1u << 20))))
            return fmt_error(ret_error, EINVAL,
                             "profile '%s': '%.*s' is not size=N (1 to 1024) or memory=MB (16 "
                             "and up)",
                             name, (int)n, o);
        if (strcmp(key, "size") == 0)
            s.size = (unsigned)v;
        else
            s.memory_mb = v;
        o += n;
    }
    if (!(s.modules = strndup(mods, mlen)))
        return -ENOMEM;
    s.name = TAKE_PTR(name);
    *ret = s;
    return 0;
}

/* Is top-level package name installed in one of the site directories? */
static bool profile_installed(const struct jail_config *jail, const char *name)
{
    for (char **d = jail->site_dirs; d && *d; d++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s/__init__.py", *d, name);
        if (access(path, R_OK) == 0)
            return true;
    }
    return false;
}

static int profile_add(struct profiles *ps, const struct profile_spec *spec, const char *warmup,
                       bool builtin)
{
    for (size_t i = 0; i < ps->n; i++)
        if (strcmp(ps->items[i].spec.name, spec->name) == 0)
            return builtin
                       ? 0
                       : log_errno(LOG_ERROR, EEXIST, "profile '%s' is defined twice", spec->name);
    if (ps->n >= PROFILE_MAX)
        return log_errno(LOG_ERROR, E2BIG, "at most %d profiles", PROFILE_MAX);
    struct profile *p = &ps->items[ps->n];
    *p = (struct profile){.spec = *spec, .warmup = warmup, .builtin = builtin};
    p->spec.name = strdup(spec->name);
    p->spec.modules = strdup(spec->modules);
    if (!p->spec.name || !p->spec.modules) {
        profile_spec_done(&p->spec);
        return -ENOMEM;
    }
    ps->n++;
    return 0;
}

/* Profile p's pools, made now, started on their first use: its own, and with
 * opt->network_size its network pool. */
static int profile_pools(const struct jail_config *jail, struct profile *p, unsigned default_size,
                         const struct profiles_options *opt)
{
    if (!p->spec.size)
        p->spec.size = default_size;
    if (p->spec.memory_mb > opt->max_memory_mb)
        p->spec.memory_mb = opt->max_memory_mb;
    /* The session runtime too: sessions of the profile come from the same pool. */
    _cleanup_free_ char *mods =
        fmt_str("%s%s%s,sandboxd_runtime.session", opt->preimport ? opt->preimport : "",
                opt->preimport && *opt->preimport ? "," : "", p->spec.modules);
    if (!mods)
        return -ENOMEM;
    struct pool_options po = {
        .size = p->spec.size,
        .zygotes = 1,
        .max_frame = opt->max_frame,
        .nproc = opt->nproc,
        .nofile = opt->nofile,
        .preimport = mods,
        .warmup = p->warmup,
        .lazy = true,
    };
    int r = pool_new(jail, &po, &p->pool);
    if (r < 0) {
        log_errno(LOG_ERROR, r, "profile '%s': cannot create its pool", p->spec.name);
        return r;
    }
    log_info("profile '%s': %s (pool of %u, started on first use)", p->spec.name, p->spec.modules,
             po.size);
    if (!opt->network_size || !opt->egress_port)
        return 0;
    /* As the server's network pool: grows to twice its floor on misses, cells never reused. */
    po.size = opt->network_size;
    po.max_size = 2 * opt->network_size;
    po.egress_port = opt->egress_port;
    if ((r = pool_new(jail, &po, &p->network_pool)) < 0)
        log_errno(LOG_ERROR, r, "profile '%s': cannot create its network pool", p->spec.name);
    return r;
}

int profiles_new(const struct jail_config *jail, const struct profile_spec *specs, size_t n,
                 const struct profiles_options *opt, struct profiles **ret)
{
    struct profiles *ps = calloc(1, sizeof(*ps));
    if (!ps)
        return -ENOMEM;
    ps->default_size = opt->default_size;
    int r = 0;
    for (size_t i = 0; i < n && r == 0; i++)
        r = profile_add(ps, &specs[i], NULL, false);
    for (size_t b = 0; b < ARRAY_SIZE(profile_builtins) && r == 0; b++) {
        const struct profile_builtin *pb = &profile_builtins[b];
        bool installed = true;
        for (size_t i = 0; i < pb->n_requires; i++)
            installed = installed && profile_installed(jail, pb->requires[i]);
        struct profile_spec s = {
            .name = (char *)pb->name, .modules = (char *)pb->modules, .memory_mb = pb->memory_mb};
        if (installed)
            r = profile_add(ps, &s, pb->warmup, true); /* a --profile of that name wins */
    }
    for (size_t i = 0; i < ps->n && r == 0; i++)
        r = profile_pools(jail, &ps->items[i], ps->default_size, opt);
    if (r < 0) {
        profiles_free(ps);
        return r;
    }
    *ret = ps;
    return 0;
}

void profiles_free(struct profiles *ps)
{
    if (!ps)
        return;
    for (size_t i = 0; i < ps->n; i++) {
        pool_free(ps->items[i].network_pool);
        pool_free(ps->items[i].pool);
        profile_spec_done(&ps->items[i].spec);
    }
    free(ps);
}

int profiles_lookup(struct profiles *ps, const char *name, struct pool **ret_pool,
                    uint64_t *ret_memory_mb)
{
    for (size_t i = 0; ps && i < ps->n; i++)
        if (strcmp(ps->items[i].spec.name, name) == 0 && ps->items[i].pool) {
            *ret_pool = ps->items[i].pool;
            *ret_memory_mb = ps->items[i].spec.memory_mb;
            return 0;
        }
    return -ENOENT;
}

struct pool *profiles_network_pool(struct profiles *ps, const char *name)
{
    for (size_t i = 0; ps && i < ps->n; i++)
        if (strcmp(ps->items[i].spec.name, name) == 0)
            return ps->items[i].network_pool;
    return NULL;
}

/* A pool's stats and memory for /healthz; {"enabled": false} for none. */
static json_t *profile_pool_stats(struct pool *pool)
{
    if (!pool)
        return json_pack("{s:b}", "enabled", false);
    json_t *o = pool_stats(pool);
    if (o && json_object_set_new(o, "memory", pool_memory(pool)) < 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *profiles_names(struct profiles *ps)
{
    json_t *a = json_array();
    for (size_t i = 0; a && ps && i < ps->n; i++)
        json_array_append_new(a, json_string(ps->items[i].spec.name));
    return a;
}

json_t *profiles_stats(struct profiles *ps)
{
    json_t *o = json_object();
    for (size_t i = 0; ps && i < ps->n; i++) {
        const struct profile *p = &ps->items[i];
        json_t *pool = profile_pool_stats(p->pool), *net = profile_pool_stats(p->network_pool);
        if (!pool || !net) {
            json_decref(pool);
            json_decref(net);
            json_decref(o);
            return NULL;
        }
        if (json_object_set_new(o, p->spec.name,
                                json_pack("{s:s, s:I, s:I, s:b, s:o, s:o}", "modules",
                                          p->spec.modules, "size", (json_int_t)p->spec.size,
                                          "memoryMb", (json_int_t)p->spec.memory_mb, "builtin",
                                          p->builtin, "pool", pool, "networkPool", net)) < 0) {
            json_decref(o);
            return NULL; /* out of memory */
        }
    }
    return o;
}
