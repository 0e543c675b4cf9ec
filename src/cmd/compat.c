// SPDX-License-Identifier: MIT
/*
 * compat — see compat.h. Each variable is parsed as strictly as the command
 * line option it stands for: a value sandboxd cannot read stops the start
 * with a message naming the variable, rather than running with something
 * the user did not ask for.
 */
#include "cmd/compat.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/fmt.h"
#include "util/log.h"
#include "util/macros.h"

/* The value of name in env, or NULL. */
static const char *compat_getenv(char **env, const char *name)
{
    size_t n = strlen(name);
    for (char **e = env; e && *e; e++)
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}

static void compat_note(struct compat_env *e, char *msg)
{
    size_t i = 0;
    while (i < ARRAY_SIZE(e->notes) - 1 && e->notes[i])
        i++;
    if (i < ARRAY_SIZE(e->notes) - 1)
        e->notes[i] = msg;
    else
        free(msg);
}

static int compat_bad(const char *name, const char *value, const char *want)
{
    fprintf(stderr, "sandboxd mcp: %s='%.80s': expected %s\n", name, value, want);
    return -1;
}

/* Seconds as a whole number in [min, max]. */
static int compat_seconds(const char *name, const char *v, uint64_t min, uint64_t max,
                          uint64_t *ret)
{
    char *end = NULL;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (!*v || !isdigit((unsigned char)*v) || *end || errno || n < min || n > max) {
        char want[96];
        snprintf(want, sizeof(want), "a whole number of seconds from %llu to %llu",
                 (unsigned long long)min, (unsigned long long)max);
        return compat_bad(name, v, want);
    }
    *ret = n;
    return 0;
}

/* A container memory size ("512m", "1g", "2048k", "1073741824") in MiB, rounded up. */
static int compat_memory(const char *v, uint64_t *ret_mb)
{
    char *end = NULL;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    uint64_t unit = 1;
    if (*end && strchr("bBkKmMgG", *end)) {
        unit = strchr("bB", *end)   ? 1
               : strchr("kK", *end) ? 1u << 10
               : strchr("mM", *end) ? 1u << 20
                                    : 1u << 30;
        end++;
        if ((*end == 'b' || *end == 'B') && unit > 1)
            end++; /* "512mb" */
    }
    uint64_t mb = unit >= (1u << 20) ? n * (unit >> 20) : (n * unit + (1u << 20) - 1) >> 20;
    if (!*v || !isdigit((unsigned char)*v) || *end || errno || n > (1ull << 40) ||
        mb < SETUP_MIN_SESSION_MEMORY || mb > SETUP_MAX_SESSION_MEMORY) {
        char want[96];
        snprintf(want, sizeof(want), "a size such as 512m or 2g, from %um to %ug",
                 (unsigned)SETUP_MIN_SESSION_MEMORY, (unsigned)SETUP_MAX_SESSION_MEMORY >> 10);
        return compat_bad("MCP_BRIDGE_MEMORY", v, want);
    }
    *ret_mb = mb;
    return 0;
}

/* Python's logging levels as ours. */
static const char *compat_log_level(const char *v)
{
    static const char *const map[][2] = {{"DEBUG", "debug"},  {"INFO", "info"},
                                         {"WARNING", "warn"}, {"WARN", "warn"},
                                         {"ERROR", "error"},  {"CRITICAL", "error"}};
    for (size_t i = 0; i < ARRAY_SIZE(map); i++)
        if (strcasecmp(v, map[i][0]) == 0)
            return map[i][1];
    return NULL;
}

int compat_env_apply(char **env, struct setup_opts *o, struct common_opts *common,
                     struct compat_env *ret)
{
    *ret = (struct compat_env){0};
    /* Upstream's limits where they differ from ours. */
    o->session_max_timeout = 120000;
    o->procs = 128;
    const char *v;
    uint64_t n;
    if ((v = compat_getenv(env, "MCP_BRIDGE_TIMEOUT"))) {
        if (compat_seconds("MCP_BRIDGE_TIMEOUT", v, 1, SETUP_MAX_SESSION_TIMEOUT / 1000, &n) < 0)
            return -1;
        o->session_timeout = n * 1000;
    }
    if ((v = compat_getenv(env, "MCP_BRIDGE_MAX_TIMEOUT"))) {
        if (compat_seconds("MCP_BRIDGE_MAX_TIMEOUT", v, 1, SETUP_MAX_SESSION_MAX_TIMEOUT / 1000,
                           &n) < 0)
            return -1;
        o->session_max_timeout = n * 1000;
    }
    if ((v = compat_getenv(env, "MCP_BRIDGE_MEMORY"))) {
        if (compat_memory(v, &n) < 0)
            return -1;
        o->session_memory = n;
        if (o->max_memory < n)
            o->max_memory = n; /* the user asked for it: the ceiling follows */
    }
    if ((v = compat_getenv(env, "MCP_BRIDGE_PIDS"))) {
        if (common_parse_u64("MCP_BRIDGE_PIDS", v, SETUP_MIN_PROCS, SETUP_MAX_PROCS, &o->procs) < 0)
            return -1;
    }
    if ((v = compat_getenv(env, "MCP_BRIDGE_CPUS")) && *v) {
        if (common_opt(common, COMMON_OPT_CPUS, v) < 0)
            return -1;
    }
    if ((v = compat_getenv(env, "MCP_BRIDGE_RUNTIME_IDLE_TIMEOUT"))) {
        /* The container runtime's idle shutdown there; a session's idle end here. */
        if (compat_seconds("MCP_BRIDGE_RUNTIME_IDLE_TIMEOUT", v, 0, SETUP_MAX_SESSION_IDLE, &n) < 0)
            return -1;
        o->session_idle = n ? n : 1;
    }
    if ((v = compat_getenv(env, "MCP_BRIDGE_STATE_DIR")) && *v) {
        const char *home = compat_getenv(env, "HOME");
        ret->state_dir = (v[0] == '~' && (v[1] == '/' || !v[1]) && home)
                             ? fmt_str("%s%s", home, v + 1)
                             : strdup(v);
        if (!ret->state_dir)
            return -1;
        o->state_dir = ret->state_dir;
    }
    if ((v = compat_getenv(env, "MCP_BRIDGE_OUTPUT_MODE"))) {
        if (strcasecmp(v, "toon") == 0)
            ret->toon = true;
        else if (strcasecmp(v, "compact") != 0 && *v)
            compat_note(ret, fmt_str("MCP_BRIDGE_OUTPUT_MODE='%.40s' is neither compact nor toon: "
                                     "compact answers",
                                     v));
    }
    if ((v = compat_getenv(env, "MCP_BRIDGE_LOG_LEVEL")) && *v) {
        const char *level = compat_log_level(v);
        if (!level)
            return compat_bad("MCP_BRIDGE_LOG_LEVEL", v, "DEBUG, INFO, WARNING, ERROR or CRITICAL");
        (void)common_opt(common, COMMON_OPT_LOG_LEVEL, level); /* a level we know */
    }
    static const char *const ignored[] = {"MCP_BRIDGE_RUNTIME", "MCP_BRIDGE_IMAGE",
                                          "MCP_BRIDGE_CONTAINER_USER"};
    for (size_t i = 0; i < ARRAY_SIZE(ignored); i++)
        if ((v = compat_getenv(env, ignored[i])))
            compat_note(ret, fmt_str("%s='%.80s' ignored: sandboxd runs no container (its jail "
                                     "takes the container's place)",
                                     ignored[i], v));
    return 0;
}

void compat_env_log(const struct compat_env *e)
{
    for (size_t i = 0; i < ARRAY_SIZE(e->notes) && e->notes[i]; i++)
        log_info("compat: %s", e->notes[i]);
}

void compat_env_done(struct compat_env *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < ARRAY_SIZE(e->notes); i++)
        free(e->notes[i]);
    free(e->state_dir);
    *e = (struct compat_env){0};
}
