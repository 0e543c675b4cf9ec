// SPDX-License-Identifier: MIT
/*
 * config — see config.h. Every entry is validated field by field; a bad
 * entry is skipped with a warning that names the file and the server, so
 * one typo in someone's ~/.claude.json never keeps sandboxd from starting.
 * Only the explicit --mcp-config file is fatal when it cannot be used.
 * Every skip is also recorded (config_skip) for `sandboxd servers`.
 */
#include "mcp/config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/fdio.h"
#include "util/fmt.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/trust.h"

#define CONFIG_MAX_SKIPPED 1024 /* records kept; more are only logged */

static void config_strv_free(char **v)
{
    for (char **p = v; p && *p; p++)
        free(*p);
    free(v);
}

void mcp_config_done(struct mcp_config *cfg)
{
    if (!cfg)
        return;
    for (size_t i = 0; i < cfg->n; i++) {
        mcp_server_config_done(&cfg->servers[i]);
        if (cfg->origins) /* a config built by hand may have none */
            free(cfg->origins[i]);
    }
    free(cfg->servers);
    free(cfg->origins);
    config_strv_free(cfg->sources);
    for (size_t i = 0; i < cfg->n_skipped; i++) {
        free(cfg->skipped[i].name);
        free(cfg->skipped[i].source);
        free(cfg->skipped[i].reason);
    }
    free(cfg->skipped);
    *cfg = (struct mcp_config){0};
}

/* The index of the server called name, or -1. */
static ssize_t config_find(const struct mcp_config *cfg, const char *name)
{
    for (size_t i = 0; i < cfg->n; i++)
        if (strcmp(cfg->servers[i].name, name) == 0)
            return (ssize_t)i;
    return -1;
}

/* Record that name (NULL: the whole file) from source was left out; reason is taken (may be
 * NULL when out of memory). Only -ENOMEM fails. */
static int config_skip(struct mcp_config *cfg, const char *name, const char *source,
                       const char *kind, char *reason)
{
    if (cfg->n_skipped >= CONFIG_MAX_SKIPPED) {
        free(reason);
        return 0;
    }
    struct mcp_config_skip *v = realloc(cfg->skipped, (cfg->n_skipped + 1) * sizeof(*v));
    if (!v) {
        free(reason);
        return -ENOMEM;
    }
    cfg->skipped = v;
    struct mcp_config_skip *k = &v[cfg->n_skipped];
    *k = (struct mcp_config_skip){.kind = kind, .reason = reason};
    k->name = name ? strdup(name) : NULL;
    k->source = strdup(source);
    cfg->n_skipped++; /* counted even when a copy failed: done() frees what is there */
    return (name && !k->name) || !k->source || !reason ? -ENOMEM : 0;
}

static int config_add_source(struct mcp_config *cfg, const char *path)
{
    size_t n = 0;
    for (; cfg->sources && cfg->sources[n]; n++)
        if (strcmp(cfg->sources[n], path) == 0)
            return 0;
    char **v = realloc(cfg->sources, (n + 2) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    cfg->sources = v;
    if (!(v[n] = strdup(path)))
        return -ENOMEM; /* v[n] is NULL: the list stays terminated */
    v[n + 1] = NULL;
    return 0;
}

static bool config_name_valid(const char *name)
{
    size_t len = strlen(name);
    if (len == 0 || len > MCP_CONFIG_MAX_NAME)
        return false;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return false;
    return true;
}

static bool config_header_name_valid(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (*s <= 0x20 || *s >= 0x7f || strchr("()<>@,;:\\\"/[]?={}", *s))
            return false;
    return true;
}

/* A JSON array of strings → NULL-terminated vector. */
static const char *config_strings(json_t *arr, char ***ret)
{
    if (!json_is_array(arr))
        return "must be an array of strings";
    size_t n = json_array_size(arr);
    if (n > MCP_CONFIG_MAX_LIST)
        return "has too many elements";
    char **v = calloc(n + 1, sizeof(*v));
    if (!v)
        return "out of memory";
    for (size_t i = 0; i < n; i++) {
        const char *s = json_string_value(json_array_get(arr, i));
        if (!s || !(v[i] = strdup(s))) {
            config_strv_free(v);
            return s ? "out of memory" : "must be an array of strings";
        }
    }
    *ret = v;
    return NULL;
}

/* A JSON object of strings → NULL-terminated vector of "key<sep>value". */
static const char *config_pairs(json_t *obj, bool headers, char ***ret)
{
    if (!json_is_object(obj))
        return "must be an object of strings";
    size_t n = json_object_size(obj);
    if (n > MCP_CONFIG_MAX_LIST)
        return "has too many members";
    char **v = calloc(n + 1, sizeof(*v));
    if (!v)
        return "out of memory";
    const char *key;
    json_t *val;
    size_t i = 0;
    const char *why = NULL;
    json_object_foreach(obj, key, val)
    {
        const char *s = json_string_value(val);
        if (!s)
            why = "must be an object of strings";
        else if (headers && (!config_header_name_valid(key) || strpbrk(s, "\r\n")))
            why = "holds an invalid header";
        else if (!headers && (!*key || strchr(key, '=')))
            why = "holds an invalid variable name";
        else if (asprintf(&v[i], headers ? "%s: %s" : "%s=%s", key, s) < 0) {
            v[i] = NULL;
            why = "out of memory";
        }
        if (why)
            break;
        i++;
    }
    if (why) {
        config_strv_free(v);
        return why;
    }
    *ret = v;
    return NULL;
}

static const char *config_string(json_t *v, bool required, char **ret)
{
    if (!v)
        return required ? "is missing" : NULL;
    if (!json_is_string(v) || json_string_length(v) == 0)
        return "must be a non-empty string";
    *ret = strdup(json_string_value(v));
    return *ret ? NULL : "out of memory";
}

/* Parse one entry. 1: *ret filled; 0: skipped on purpose (disabled); -EINVAL: invalid. Not 1:
 * *ret_why says why (caller frees; NULL when out of memory). */
static int config_entry(const char *name, json_t *e, struct mcp_server_config *ret, char **ret_why)
{
    if (!config_name_valid(name))
        return fmt_error(ret_why, EINVAL,
                         "has an invalid name (1 to %d bytes, no control "
                         "characters)",
                         MCP_CONFIG_MAX_NAME);
    if (!json_is_object(e))
        return fmt_error(ret_why, EINVAL, "is not an object");
    if (json_is_true(json_object_get(e, "disabled"))) {
        *ret_why = strdup("is disabled");
        return 0;
    }
    const char *type = json_string_value(json_object_get(e, "type"));
    if (json_object_get(e, "type") && !type)
        return fmt_error(ret_why, EINVAL, "\"type\" must be a string");
    if (type && strcasecmp(type, "sse") == 0)
        return fmt_error(ret_why, EINVAL,
                         "uses the legacy HTTP+SSE transport, which sandboxd does not support "
                         "(use its Streamable HTTP endpoint)");
    bool want_stdio = type && strcasecmp(type, "stdio") == 0;
    bool want_http =
        type && (strcasecmp(type, "http") == 0 || strcasecmp(type, "streamable-http") == 0 ||
                 strcasecmp(type, "streamableHttp") == 0);
    if (type && !want_stdio && !want_http)
        return fmt_error(ret_why, EINVAL, "has unknown type '%.40s'", type);

    struct mcp_server_config s = {0};
    const char *field = "name";
    const char *why = (s.name = strdup(name)) ? NULL : "out of memory";
    json_t *command = json_object_get(e, "command");
    json_t *url = json_object_get(e, "url");
    if (!why && !!command == !!url) {
        field = NULL;
        why = "needs exactly one of \"command\" and \"url\"";
    } else if (!why && command) {
        if (want_http) {
            field = "type";
            why = "says http, but the entry has a command";
        }
        if (!why && (why = config_string(command, true, &s.command)))
            field = "command";
        if (!why && json_object_get(e, "args") &&
            (why = config_strings(json_object_get(e, "args"), &s.args)))
            field = "args";
        if (!why && json_object_get(e, "env") &&
            (why = config_pairs(json_object_get(e, "env"), false, &s.env)))
            field = "env";
        if (!why && (why = config_string(json_object_get(e, "cwd"), false, &s.cwd)))
            field = "cwd";
    } else if (!why) {
        if (want_stdio) {
            field = "type";
            why = "says stdio, but the entry has a url";
        }
        if (!why && (why = config_string(url, true, &s.url)))
            field = "url";
        if (!why && strncasecmp(s.url, "http://", 7) != 0 &&
            strncasecmp(s.url, "https://", 8) != 0) {
            field = "url";
            why = "must be an http:// or https:// URL";
        }
        if (!why && json_object_get(e, "headers") &&
            (why = config_pairs(json_object_get(e, "headers"), true, &s.headers)))
            field = "headers";
    }
    if (!why && (why = config_string(json_object_get(e, "description"), false, &s.description)))
        field = "description";
    if (why) {
        mcp_server_config_done(&s);
        return field ? fmt_error(ret_why, EINVAL, "\"%s\" %s", field, why)
                     : fmt_error(ret_why, EINVAL, "%s", why);
    }
    *ret = s;
    return 1;
}

/* Where a source stands: the explicit file and the user's own are trusted; a project's files
 * were written by whoever wrote the project. */
enum config_level { CONFIG_USER, CONFIG_PROJECT };

/* Add the entries of one "mcpServers"/"servers" object; returns how many were added. */
static int config_add_servers(struct mcp_config *cfg, json_t *servers, const char *source,
                              enum config_level level)
{
    const char *name;
    json_t *e;
    int added = 0, r = 0;
    json_object_foreach(servers, name, e)
    {
        ssize_t have = config_find(cfg, name);
        if (have >= 0) {
            /* A project file naming a user-level server could put its own program under a
             * trusted name: say so loudly. */
            log_msg(level == CONFIG_PROJECT ? LOG_WARN : LOG_INFO,
                    "%s: MCP server '%s' is already defined by %s: ignored", source, name,
                    cfg->origins[have]);
            r = config_skip(cfg, name, source, "shadowed",
                            fmt_str("shadowed by the definition in %s", cfg->origins[have]));
            if (r < 0)
                return r;
            continue;
        }
        struct mcp_server_config s;
        char *why = NULL;
        int er = config_entry(name, e, &s, &why);
        if (er <= 0) {
            log_msg(er == 0 ? LOG_INFO : LOG_WARN, "%s: MCP server '%.80s' %s: skipped", source,
                    name, why ? why : "is invalid");
            if ((r = config_skip(cfg, name, source, er == 0 ? "disabled" : "invalid", why)) < 0)
                return r;
            continue;
        }
        if (cfg->n >= MCP_CONFIG_MAX_SERVERS) {
            log_warn("%s: more than %d MCP servers: '%s' and the rest skipped", source,
                     MCP_CONFIG_MAX_SERVERS, name);
            mcp_server_config_done(&s);
            r = config_skip(cfg, name, source, "limit",
                            fmt_str("more than %d MCP servers", MCP_CONFIG_MAX_SERVERS));
            return r < 0 ? r : added;
        }
        struct mcp_server_config *v = realloc(cfg->servers, (cfg->n + 1) * sizeof(*v));
        char **o = v ? realloc(cfg->origins, (cfg->n + 1) * sizeof(*o)) : NULL;
        if (v)
            cfg->servers = v;
        if (o)
            cfg->origins = o;
        if (!v || !o || !(o[cfg->n] = strdup(source))) {
            mcp_server_config_done(&s);
            return -ENOMEM;
        }
        cfg->servers[cfg->n++] = s;
        added++;
    }
    return added;
}

static int config_add_document(struct mcp_config *cfg, json_t *doc, const char *source,
                               enum config_level level)
{
    json_t *claude = json_object_get(doc, "mcpServers");
    json_t *vscode = json_object_get(doc, "servers");
    if (!json_is_object(claude) && !json_is_object(vscode))
        return -EINVAL;
    int added = 0;
    json_t *parts[] = {claude, vscode};
    for (size_t i = 0; i < ARRAY_SIZE(parts); i++) {
        if (!json_is_object(parts[i]))
            continue;
        int r = config_add_servers(cfg, parts[i], source, level);
        if (r < 0)
            return r;
        added += r;
    }
    return added;
}

int mcp_config_add_document(struct mcp_config *cfg, json_t *doc, const char *source)
{
    return config_add_document(cfg, doc, source, CONFIG_USER);
}

/* Read and parse path. Quiet for a missing file when !required; otherwise logs at level. */
static int config_read(const char *path, bool required, enum log_level level, json_t **ret)
{
    _cleanup_free_ char *text = NULL;
    size_t len;
    int r = fd_read_file(AT_FDCWD, path, MCP_CONFIG_MAX_FILE, &text, &len);
    if (r == -ENOENT && !required)
        return r;
    if (r == -EFBIG)
        return log_errno(level, r, "MCP configuration %s is larger than %u bytes", path,
                         MCP_CONFIG_MAX_FILE);
    if (r < 0)
        return log_errno(level, r, "cannot read MCP configuration %s", path);
    json_error_t jerr;
    json_t *doc = json_loadb(text, len, 0, &jerr);
    if (!doc) {
        log_msg(level, "MCP configuration %s is not valid JSON: line %d: %s", path, jerr.line,
                jerr.text);
        return -EINVAL;
    }
    *ret = doc;
    return 0;
}

/* A project file of a project we do not trust: its servers are recorded as skipped, never
 * added. */
static int config_untrusted(struct mcp_config *cfg, const char *path, json_t *doc,
                            const char *trust_file)
{
    log_warn("%s: project-level MCP configuration ignored: the project directory is not "
             "trusted (pass --mcp-trust-project, or list the directory in %s)",
             path, trust_file ? trust_file : "the trust file");
    const char *why = "project file not trusted (--mcp-trust-project, or list the project "
                      "directory in the trust file)";
    json_t *parts[] = {json_object_get(doc, "mcpServers"), json_object_get(doc, "servers")};
    int r = 0, n = 0;
    for (size_t i = 0; i < ARRAY_SIZE(parts) && r >= 0; i++) {
        const char *name;
        json_t *e;
        json_object_foreach(parts[i], name, e)
        {
            if (r >= 0)
                r = config_skip(cfg, name, path, "untrusted", strdup(why));
            n++;
        }
    }
    if (r >= 0 && n == 0)
        r = config_skip(cfg, NULL, path, "untrusted", strdup(why));
    return r;
}

/* A discovered file in the Claude/VS Code format. */
static int config_discovered(struct mcp_config *cfg, const char *path, enum config_level level,
                             const char *trust_file)
{
    json_t *doc = NULL;
    int r = config_read(path, false, LOG_WARN, &doc);
    if (r == -ENOENT)
        return 0;
    if (r < 0) /* logged; a discovered file never stops start-up */
        return config_skip(cfg, NULL, path, "invalid", strdup("unreadable or not JSON"));
    if (level == CONFIG_PROJECT && !cfg->project_trusted) {
        r = config_untrusted(cfg, path, doc, trust_file);
        json_decref(doc);
        return r;
    }
    r = config_add_document(cfg, doc, path, level);
    json_decref(doc);
    if (r == -EINVAL) {
        log_warn("MCP configuration %s has no \"mcpServers\" or \"servers\" object: skipped", path);
        return config_skip(cfg, NULL, path, "invalid",
                           strdup("no \"mcpServers\" or \"servers\" object"));
    }
    if (r > 0)
        r = config_add_source(cfg, path);
    return r < 0 ? r : 0;
}

static int config_json_suffix(const struct dirent *d)
{
    size_t n = strlen(d->d_name);
    return d->d_name[0] != '.' && n > 5 && strcmp(d->d_name + n - 5, ".json") == 0;
}

/* Every <dir>/<name>.json, in name order. */
static int config_directory(struct mcp_config *cfg, const char *dir, enum config_level level,
                            const char *trust_file)
{
    struct dirent **list = NULL;
    int n = scandir(dir, &list, config_json_suffix, alphasort);
    if (n < 0) {
        if (errno != ENOENT && errno != ENOTDIR)
            log_errno(LOG_WARN, errno, "cannot list MCP configurations in %s", dir);
        return 0;
    }
    int r = 0;
    for (int i = 0; i < n; i++) {
        char *path = NULL;
        if (r >= 0 && asprintf(&path, "%s/%s", dir, list[i]->d_name) < 0)
            r = -ENOMEM;
        else if (r >= 0)
            r = config_discovered(cfg, path, level, trust_file);
        free(path);
        free(list[i]);
    }
    free(list);
    return r;
}

/* ~/.claude.json: Claude Code keeps per-project servers under projects[<dir>].mcpServers and
 * user-wide ones at the top level; the project's win, as they do in Claude Code. Both are the
 * user's own (the file is in their home), so both are user-level. */
static int config_claude_code(struct mcp_config *cfg, const char *path, const char *cwd)
{
    json_t *doc = NULL;
    int r = config_read(path, false, LOG_WARN, &doc);
    if (r < 0)
        return r == -ENOENT
                   ? 0
                   : config_skip(cfg, NULL, path, "invalid", strdup("unreadable or not JSON"));
    int added = 0;
    r = 0;
    json_t *project = cwd ? json_object_get(json_object_get(doc, "projects"), cwd) : NULL;
    json_t *servers = json_object_get(project, "mcpServers");
    if (json_is_object(servers)) {
        char *source = fmt_str("%s (project %s)", path, cwd);
        r = source ? config_add_servers(cfg, servers, source, CONFIG_USER) : -ENOMEM;
        free(source);
        added += r > 0 ? r : 0;
    }
    servers = json_object_get(doc, "mcpServers");
    if (r >= 0 && json_is_object(servers)) {
        r = config_add_servers(cfg, servers, path, CONFIG_USER);
        added += r > 0 ? r : 0;
    }
    json_decref(doc);
    if (r >= 0 && added > 0)
        r = config_add_source(cfg, path);
    return r < 0 ? r : 0;
}

/* Is cwd a directory listed in trust_file, or below one? The file counts only when nobody but
 * us (or root) can write it and every directory above it. */
static bool config_project_trusted(const char *cwd, const char *trust_file)
{
    if (!cwd || !trust_file)
        return false;
    _cleanup_free_ char *text = NULL;
    size_t len;
    int r = fd_read_file(AT_FDCWD, trust_file, MCP_CONFIG_MAX_FILE, &text, &len);
    if (r == -ENOENT)
        return false;
    _cleanup_free_ char *why = NULL;
    if (r < 0 || trust_check(trust_file, TRUST_FILE, &why) < 0) {
        log_warn("trusted project list %s ignored: %s", trust_file,
                 why ? why : "it cannot be read");
        return false;
    }
    _cleanup_free_ char *here = realpath(cwd, NULL);
    if (!here)
        return false;
    size_t hl = strlen(here);
    bool trusted = false;
    for (char *line = strtok(text, "\n"); line && !trusted; line = strtok(NULL, "\n")) {
        while (*line == ' ' || *line == '\t')
            line++;
        size_t n = strlen(line);
        while (n && (line[n - 1] == ' ' || line[n - 1] == '\t' || line[n - 1] == '\r'))
            line[--n] = '\0';
        if (!n || line[0] == '#' || line[0] != '/')
            continue;
        _cleanup_free_ char *dir = realpath(line, NULL);
        size_t dl = dir ? strlen(dir) : 0;
        trusted = dir && hl >= dl && strncmp(here, dir, dl) == 0 &&
                  (here[dl] == '\0' || here[dl] == '/' || dl == 1);
    }
    return trusted;
}

static int config_discover(struct mcp_config *cfg, const struct mcp_config_options *opt)
{
    const char *cwd = opt->cwd, *home = opt->home;
    char *paths[5] = {NULL};
    int r = 0;
    if (home && asprintf(&paths[0], "%s/.config/mcp/servers", home) < 0)
        r = -ENOMEM;
    if (home && asprintf(&paths[1], "%s/.claude.json", home) < 0)
        r = -ENOMEM;
    if (home && asprintf(&paths[2], "%s/.cursor/mcp.json", home) < 0)
        r = -ENOMEM;
    if (cwd && asprintf(&paths[3], "%s/.mcp", cwd) < 0)
        r = -ENOMEM;
    if (cwd && asprintf(&paths[4], "%s/.vscode/mcp.json", cwd) < 0)
        r = -ENOMEM;
    /* The user's own files first: on a name clash they win over a project's. */
    if (r >= 0 && paths[0])
        r = config_directory(cfg, paths[0], CONFIG_USER, NULL);
    if (r >= 0 && paths[1])
        r = config_claude_code(cfg, paths[1], cwd);
    if (r >= 0 && paths[2])
        r = config_discovered(cfg, paths[2], CONFIG_USER, NULL);
    if (r >= 0 && paths[3])
        r = config_directory(cfg, paths[3], CONFIG_PROJECT, opt->trust_file);
    if (r >= 0 && paths[4])
        r = config_discovered(cfg, paths[4], CONFIG_PROJECT, opt->trust_file);
    for (size_t i = 0; i < ARRAY_SIZE(paths); i++)
        free(paths[i]);
    return r;
}

int mcp_config_load(const struct mcp_config_options *opt, struct mcp_config *ret)
{
    struct mcp_config cfg = {0};
    int r = 0;
    const char *explicit_path = opt->explicit_path;
    if (explicit_path) {
        json_t *doc = NULL;
        r = config_read(explicit_path, true, LOG_ERROR, &doc);
        if (r >= 0) {
            r = mcp_config_add_document(&cfg, doc, explicit_path);
            json_decref(doc);
            if (r == -EINVAL)
                log_error("MCP configuration %s has no \"mcpServers\" object (expected "
                          "{\"mcpServers\": {\"name\": {\"command\": ...} | {\"url\": ...}}})",
                          explicit_path);
            else if (r >= 0)
                r = config_add_source(&cfg, explicit_path);
        }
    }
    cfg.project_trusted =
        opt->discover && (opt->trust_project || config_project_trusted(opt->cwd, opt->trust_file));
    if (r >= 0 && opt->discover)
        r = config_discover(&cfg, opt);
    if (r == -ENOMEM)
        log_error("out of memory while reading the MCP configuration");
    if (r < 0) {
        mcp_config_done(&cfg);
        return r;
    }
    if (!cfg.sources && !(cfg.sources = calloc(1, sizeof(char *)))) {
        mcp_config_done(&cfg);
        return log_errno(LOG_ERROR, ENOMEM, "cannot load the MCP configuration");
    }
    log_info("%zu MCP server(s) configured", cfg.n);
    *ret = cfg;
    return 0;
}
