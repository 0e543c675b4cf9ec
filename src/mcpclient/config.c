// SPDX-License-Identifier: MIT
/*
 * config — see config.h. Every entry is validated field by field; a bad
 * entry is skipped with a warning that names the file and the server, so
 * one typo in someone's ~/.claude.json never keeps sandboxd from starting.
 * Only the explicit --mcp-config file is fatal when it cannot be used.
 * Every skip is also recorded (config_skip) for `sandboxd servers`.
 */
#include "mcpclient/config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mcpclient/approval.h"
#include "mcpclient/config_int.h"
#include "util/fdio.h"
#include "util/fmt.h"
#include "util/jsonc.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/toml.h"
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
    free(cfg->agents);
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

int config_skip(struct mcp_config *cfg, const char *name, const char *source, const char *kind,
                char *reason)
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

int config_add_source(struct mcp_config *cfg, const char *path)
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

/* One member of an object as a string of a vector (*ret, NULL-terminated): NULL, or why the
 * member is invalid (static). */
typedef const char *config_member_fn(const char *key, json_t *val, const void *how, char **ret);

/* A JSON object → NULL-terminated vector, one string per member made by fn; what names the
 * object's kind in the message. */
static const char *config_object_strv(json_t *obj, const char *what, size_t max,
                                      config_member_fn *fn, const void *how, char ***ret)
{
    if (!json_is_object(obj))
        return what;
    size_t n = json_object_size(obj);
    if (n > max)
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
        if ((why = fn(key, val, how, &v[i])))
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

/* "key<sep>value" of an env (how: NULL) or headers (how: non-NULL) member. */
static const char *config_pair(const char *key, json_t *val, const void *how, char **ret)
{
    bool headers = how != NULL;
    const char *s = json_string_value(val);
    if (!s)
        return "must be an object of strings";
    if (headers && (!config_header_name_valid(key) || strpbrk(s, "\r\n")))
        return "holds an invalid header";
    if (!headers && (!*key || strchr(key, '=')))
        return "holds an invalid variable name";
    if (asprintf(ret, headers ? "%s: %s" : "%s=%s", key, s) < 0) {
        *ret = NULL;
        return "out of memory";
    }
    return NULL;
}

/* A JSON object of strings → NULL-terminated vector of "key<sep>value". */
static const char *config_pairs(json_t *obj, bool headers, char ***ret)
{
    return config_object_strv(obj, "must be an object of strings", MCP_CONFIG_MAX_LIST, config_pair,
                              headers ? "" : NULL, ret);
}

/* An "approvals" member, TOOL: POLICY, as a rule "POLICY:TOOL" (approval.h). */
static const char *config_approval(const char *key, json_t *val, const void *how, char **ret)
{
    enum mcp_approval a;
    if (!*key)
        return "has an empty tool name";
    if (mcp_approval_parse(json_string_value(val), &a) < 0)
        return "has a policy that is not \"auto\", \"ask\" or \"deny\"";
    if (asprintf(ret, "%s:%s", mcp_approval_name(a), key) < 0) {
        *ret = NULL;
        return "out of memory";
    }
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
static int config_entry(const char *name, json_t *e, const char *default_desc,
                        struct mcp_server_config *ret, char **ret_why)
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
    if (!why && !s.description && default_desc && *default_desc &&
        !(s.description = strdup(default_desc)))
        why = "out of memory";
    /* An invalid policy skips the whole entry: a server whose approvals cannot be read must
     * not run without them. */
    if (!why && json_object_get(e, "approvals") &&
        (why = config_object_strv(json_object_get(e, "approvals"),
                                  "must be an object of tool name -> \"auto\", \"ask\" or "
                                  "\"deny\"",
                                  MCP_APPROVAL_MAX_RULES, config_approval, NULL, &s.approvals)))
        field = "approvals";
    if (why) {
        mcp_server_config_done(&s);
        return field ? fmt_error(ret_why, EINVAL, "\"%s\" %s", field, why)
                     : fmt_error(ret_why, EINVAL, "%s", why);
    }
    *ret = s;
    return 1;
}

/* Add entry name = s (taken) at the end; its origin is doc's. */
static int config_append(struct mcp_config *cfg, const struct config_doc *doc,
                         struct mcp_server_config *s)
{
    struct mcp_server_config *v = realloc(cfg->servers, (cfg->n + 1) * sizeof(*v));
    if (v)
        cfg->servers = v;
    char **o = v ? realloc(cfg->origins, (cfg->n + 1) * sizeof(*o)) : NULL;
    if (o)
        cfg->origins = o;
    const char **a = o ? realloc(cfg->agents, (cfg->n + 1) * sizeof(*a)) : NULL;
    if (a)
        cfg->agents = a;
    if (!v || !o || !a || !(o[cfg->n] = strdup(doc->source))) {
        mcp_server_config_done(s);
        return -ENOMEM;
    }
    a[cfg->n] = doc->agent;
    cfg->servers[cfg->n++] = *s;
    return 0;
}

int config_add_servers(struct mcp_config *cfg, const struct mcp_config_options *opt,
                       const struct config_doc *doc, json_t *servers)
{
    const char *name;
    json_t *e;
    int added = 0, r = 0;
    json_object_foreach(servers, name, e)
    {
        ssize_t have = config_find(cfg, name);
        if (have >= 0 && doc->level != CONFIG_EXPLICIT) {
            /* A project file naming a user-level server could put its own program under a
             * trusted name: say so loudly. */
            log_msg(doc->level == CONFIG_PROJECT ? LOG_WARN : LOG_INFO,
                    "%s: MCP server '%s' is already defined by %s: ignored", doc->source, name,
                    cfg->origins[have]);
            r = config_skip(cfg, name, doc->source, "shadowed",
                            fmt_str("shadowed by the definition in %s", cfg->origins[have]));
            if (r < 0)
                return r;
            continue;
        }
        struct mcp_server_config s;
        char *why = NULL;
        int er = config_entry(name, e, doc->description, &s, &why);
        if (er <= 0) {
            log_msg(er == 0 ? LOG_INFO : LOG_WARN, "%s: MCP server '%.80s' %s: skipped",
                    doc->source, name, why ? why : "is invalid");
            if ((r = config_skip(cfg, name, doc->source, er == 0 ? "disabled" : "invalid", why)) <
                0)
                return r;
            continue;
        }
        if (!opt->allow_self && config_is_self(name, &s, opt->self_exe)) {
            log_info(
                "%s: MCP server '%.80s' would start sandboxd's MCP server (or "
                "mcp-server-code-execution-mode) again: skipped (MCP_BRIDGE_ALLOW_SELF_SERVER=1 "
                "allows it)",
                doc->source, name);
            mcp_server_config_done(&s);
            r = config_skip(cfg, name, doc->source, "self",
                            strdup("starts sandboxd mcp or the code-execution-mode bridge itself "
                                   "(a loop); MCP_BRIDGE_ALLOW_SELF_SERVER=1 allows it"));
            if (r < 0)
                return r;
            continue;
        }
        if (have >= 0) {
            /* --mcp-config files: a later one wins. */
            log_info("%s: MCP server '%s' replaces its definition in %s", doc->source, name,
                     cfg->origins[have]);
            r = config_skip(cfg, name, cfg->origins[have], "replaced",
                            fmt_str("replaced by the definition in %s (a later --mcp-config wins)",
                                    doc->source));
            char *origin = strdup(doc->source);
            if (r < 0 || !origin) {
                free(origin);
                mcp_server_config_done(&s);
                return -ENOMEM;
            }
            mcp_server_config_done(&cfg->servers[have]);
            cfg->servers[have] = s;
            free(cfg->origins[have]);
            cfg->origins[have] = origin;
            cfg->agents[have] = doc->agent;
            added++;
            continue;
        }
        if (cfg->n >= MCP_CONFIG_MAX_SERVERS) {
            log_warn("%s: more than %d MCP servers: '%s' and the rest skipped", doc->source,
                     MCP_CONFIG_MAX_SERVERS, name);
            mcp_server_config_done(&s);
            r = config_skip(cfg, name, doc->source, "limit",
                            fmt_str("more than %d MCP servers", MCP_CONFIG_MAX_SERVERS));
            return r < 0 ? r : added;
        }
        if ((r = config_append(cfg, doc, &s)) < 0)
            return r;
        added++;
    }
    return added;
}

/* Add the servers of doc (borrowed) as spelled by format. -EINVAL (with *ret_why) when it is
 * not a document of that format. */
static int config_add_doc(struct mcp_config *cfg, const struct mcp_config_options *opt,
                          struct config_doc *d, json_t *doc, char **ret_why)
{
    json_t *servers = NULL;
    int r = config_normalize(doc, d->format, opt->cwd, &servers, ret_why);
    if (r < 0)
        return r;
    d->description = json_string_value(json_object_get(doc, "description"));
    r = config_add_servers(cfg, opt, d, servers);
    json_decref(servers);
    return r;
}

/* Read and parse path (JSON with comments, or TOML). Quiet for a missing file when
 * !required; otherwise logs at level, naming the file and the line. */
static int config_read(const char *path, bool required, enum log_level level, bool toml,
                       json_t **ret)
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
    if (toml) {
        _cleanup_free_ char *why = NULL;
        r = toml_parse(text, len, ret, &why);
        if (r < 0)
            log_msg(level, "MCP configuration %s is not valid TOML: %s", path,
                    why ? why : "out of memory");
        return r;
    }
    jsonc_strip(text, len); /* VS Code's files carry comments and trailing commas */
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
static int config_untrusted(struct mcp_config *cfg, const struct mcp_config_options *opt,
                            const char *path, json_t *doc, enum config_format format)
{
    log_warn("%s: project-level MCP configuration ignored: the project directory is not "
             "trusted (pass --mcp-trust-project, or list the directory in %s)",
             path, opt->trust_file ? opt->trust_file : "the trust file");
    const char *why = "project file not trusted (--mcp-trust-project, or list the project "
                      "directory in the trust file)";
    json_t *servers = NULL;
    char *ignored = NULL;
    (void)config_normalize(doc, format, opt->cwd, &servers, &ignored); /* names, if any */
    free(ignored);
    int r = 0, n = 0;
    const char *name;
    json_t *e;
    json_object_foreach(servers, name, e)
    {
        if (r >= 0)
            r = config_skip(cfg, name, path, "untrusted", strdup(why));
        n++;
    }
    json_decref(servers);
    if (r >= 0 && n == 0)
        r = config_skip(cfg, NULL, path, "untrusted", strdup(why));
    return r;
}

int config_discovered(struct mcp_config *cfg, const struct mcp_config_options *opt,
                      const char *path, enum config_level level, enum config_format format,
                      const char *agent)
{
    json_t *doc = NULL;
    int r = config_read(path, false, LOG_WARN, format == CONFIG_CODEX, &doc);
    if (r == -ENOENT)
        return 0;
    if (r < 0) /* logged; a discovered file never stops start-up */
        return config_skip(
            cfg, NULL, path, "invalid",
            strdup(format == CONFIG_CODEX ? "unreadable or not TOML" : "unreadable or not JSON"));
    if (level == CONFIG_PROJECT && !cfg->project_trusted) {
        r = config_untrusted(cfg, opt, path, doc, format);
        json_decref(doc);
        return r;
    }
    size_t before = cfg->n;
    char *why = NULL;
    if (format == CONFIG_CLAUDE_CODE && opt->cwd) {
        /* Claude Code keeps per-project servers under projects[<dir>].mcpServers and the
         * user's at the top level; the project's win, as they do in Claude Code. Both are the
         * user's own (the file is in their home). */
        json_t *project = json_object_get(json_object_get(doc, "projects"), opt->cwd);
        char *source = fmt_str("%s (project %s)", path, opt->cwd);
        struct config_doc d = {
            .source = source, .level = level, .format = CONFIG_JSON, .agent = agent};
        r = !source ? -ENOMEM
            : json_is_object(json_object_get(project, "mcpServers"))
                ? config_add_servers(cfg, opt, &d, json_object_get(project, "mcpServers"))
                : 0;
        free(source);
    }
    struct config_doc d = {.source = path, .level = level, .format = format, .agent = agent};
    if (r >= 0)
        r = config_add_doc(cfg, opt, &d, doc, &why);
    json_decref(doc);
    if (r == -EINVAL) {
        log_warn("MCP configuration %s: %s: skipped", path, why ? why : "no servers");
        r = config_skip(cfg, NULL, path, "invalid", why);
        why = NULL;
    }
    free(why);
    if (r >= 0 && cfg->n > before)
        r = config_add_source(cfg, path);
    return r < 0 ? r : 0;
}

static int config_json_suffix(const struct dirent *d)
{
    size_t n = strlen(d->d_name);
    return d->d_name[0] != '.' && n > 5 && strcmp(d->d_name + n - 5, ".json") == 0;
}

int config_directory(struct mcp_config *cfg, const struct mcp_config_options *opt, const char *dir,
                     enum config_level level, const char *agent)
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
            r = config_discovered(cfg, opt, path, level, CONFIG_JSON, agent);
        free(path);
        free(list[i]);
    }
    free(list);
    return r;
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
    _cleanup_sbx_error_ struct sbx_error why = {0};
    if (r < 0 || trust_check(trust_file, TRUST_FILE, &why) < 0) {
        log_warn("trusted project list %s ignored: %s", trust_file,
                 why.message ? why.message : "it cannot be read");
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

int config_named(struct mcp_config *cfg, const struct mcp_config_options *opt, const char *path,
                 bool env)
{
    json_t *doc = NULL;
    int r = config_read(path, true, env ? LOG_WARN : LOG_ERROR, false, &doc);
    if (r >= 0) {
        char *why = NULL;
        struct config_doc d = {.source = path,
                               .level = env ? CONFIG_USER : CONFIG_EXPLICIT,
                               .format = CONFIG_JSON,
                               .agent = env ? "MCP_SERVERS_CONFIG" : NULL};
        r = config_add_doc(cfg, opt, &d, doc, &why);
        json_decref(doc);
        if (r == -EINVAL)
            log_msg(env ? LOG_WARN : LOG_ERROR,
                    "MCP configuration %s has no \"mcpServers\" object (expected "
                    "{\"mcpServers\": {\"name\": {\"command\": ...} | {\"url\": ...}}})",
                    path);
        free(why);
        if (r >= 0)
            r = config_add_source(cfg, path);
    }
    if (r < 0 && r != -ENOMEM && env)
        return config_skip(cfg, NULL, path, "invalid",
                           strdup("$MCP_SERVERS_CONFIG: unreadable, not JSON, or no "
                                  "\"mcpServers\""));
    return r;
}

int mcp_config_load(const struct mcp_config_options *opt, struct mcp_config *ret)
{
    struct mcp_config cfg = {0};
    int r = 0;
    for (const char *const *p = opt->explicit_paths; r >= 0 && p && *p; p++)
        r = config_named(&cfg, opt, *p, false);
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
