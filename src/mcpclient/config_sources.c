// SPDX-License-Identifier: MIT
/*
 * config_sources — where other MCP clients keep their servers, and how each
 * spells them, so that a user's servers are found wherever they were set
 * up: the list the Python bridge mcp-server-code-execution-mode reads
 * (~/MCPs first, $MCP_SERVERS_CONFIG, then Claude Desktop and Code,
 * OpenCode, Gemini CLI, Codex, Cursor, Windsurf, VS Code, Antigravity; the
 * macOS paths are read too, harmlessly absent here) plus the Linux places
 * of the same programs. Files under the home directory are the user's; the
 * ones found relative to the current directory belong to the project and
 * are read only when it is trusted (config.c). Spellings are turned into
 * Claude's "mcpServers" entries here; config.c checks every entry.
 */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mcpclient/config_int.h"
#include "util/fmt.h"
#include "util/log.h"
#include "util/macros.h"

enum config_base { BASE_HOME, BASE_CWD, BASE_ENV };

/* The discovery locations in order of precedence (the first definition of a name wins). */
static const struct config_source {
    enum config_base base;
    const char *path; /* below the base; for BASE_ENV unused */
    bool directory;   /* every <name>.json in it */
    enum config_format format;
    const char *agent;
} config_sources[] = {
    {BASE_HOME, "MCPs", true, CONFIG_JSON, "~/MCPs"},
    {BASE_ENV, NULL, false, CONFIG_JSON, "MCP_SERVERS_CONFIG"},
    {BASE_HOME, ".config/mcp/servers", true, CONFIG_JSON, "MCP servers directory"},
    {BASE_HOME, "Library/Application Support/Claude Code/mcp/servers", true, CONFIG_JSON,
     "Claude Code"},
    {BASE_HOME, "Library/Application Support/Claude/mcp/servers", true, CONFIG_JSON,
     "Claude Desktop"},
    {BASE_HOME, ".claude.json", false, CONFIG_CLAUDE_CODE, "Claude Code"},
    {BASE_HOME, "Library/Application Support/Claude Code/claude_code_config.json", false,
     CONFIG_SETTINGS, "Claude Code"},
    {BASE_HOME, "Library/Application Support/Claude/claude_code_config.json", false,
     CONFIG_SETTINGS, "Claude Code"},
    {BASE_HOME, "Library/Application Support/Claude/claude_desktop_config.json", false,
     CONFIG_SETTINGS, "Claude Desktop"},
    {BASE_HOME, ".config/Claude/claude_desktop_config.json", false, CONFIG_SETTINGS,
     "Claude Desktop"},
    {BASE_HOME, ".opencode.json", false, CONFIG_SETTINGS, "OpenCode"},
    {BASE_HOME, "Library/Application Support/OpenCode/opencode_config.json", false, CONFIG_SETTINGS,
     "OpenCode"},
    {BASE_HOME, "Library/Application Support/OpenCode/opencode_desktop_config.json", false,
     CONFIG_SETTINGS, "OpenCode"},
    {BASE_HOME, ".gemini/settings.json", false, CONFIG_GEMINI, "Gemini CLI"},
    {BASE_HOME, ".codex/config.toml", false, CONFIG_CODEX, "Codex"},
    {BASE_HOME, ".cursor/mcp.json", false, CONFIG_JSON, "Cursor"},
    {BASE_HOME, ".codeium/windsurf/mcp_config.json", false, CONFIG_JSON, "Windsurf"},
    {BASE_HOME, "Library/Application Support/Code/User/settings.json", false, CONFIG_VSCODE_USER,
     "VS Code"},
    {BASE_HOME, ".config/Code/User/settings.json", false, CONFIG_VSCODE_USER, "VS Code"},
    {BASE_HOME, ".antigravity/settings.json", false, CONFIG_SETTINGS, "Antigravity"},
    {BASE_HOME, ".antigravity/mcp.json", false, CONFIG_JSON, "Antigravity"},
    /* The project's, read only when it is trusted. */
    {BASE_CWD, ".mcp", true, CONFIG_JSON, "project"},
    {BASE_CWD, "mcp-servers", true, CONFIG_JSON, "project"},
    {BASE_CWD, ".vscode/mcp.json", false, CONFIG_JSON, "VS Code (project)"},
    {BASE_CWD, "claude_code_config.json", false, CONFIG_SETTINGS, "project"},
    {BASE_CWD, "claude_desktop_config.json", false, CONFIG_SETTINGS, "project"},
    {BASE_CWD, "opencode_config.json", false, CONFIG_SETTINGS, "project"},
    {BASE_CWD, "opencode_desktop_config.json", false, CONFIG_SETTINGS, "project"},
};

int config_discover(struct mcp_config *cfg, const struct mcp_config_options *opt)
{
    int r = 0;
    for (size_t i = 0; r >= 0 && i < ARRAY_SIZE(config_sources); i++) {
        const struct config_source *src = &config_sources[i];
        if (src->base == BASE_ENV) {
            if (opt->env_path && *opt->env_path)
                r = config_named(cfg, opt, opt->env_path, true);
            continue;
        }
        const char *base = src->base == BASE_HOME ? opt->home : opt->cwd;
        if (!base)
            continue;
        char *path = fmt_str("%s/%s", base, src->path);
        if (!path)
            return -ENOMEM;
        enum config_level level = src->base == BASE_HOME ? CONFIG_USER : CONFIG_PROJECT;
        r = src->directory ? config_directory(cfg, opt, path, level, src->agent)
                           : config_discovered(cfg, opt, path, level, src->format, src->agent);
        free(path);
    }
    return r;
}

/* ---- spellings ------------------------------------------------------------------------------ */

/* Gemini CLI: "httpUrl" is a Streamable HTTP endpoint, "url" an SSE one. */
static json_t *config_gemini_entry(json_t *e)
{
    json_t *c = json_copy(e);
    if (!c || !json_is_object(c))
        return c;
    json_t *http = json_object_get(c, "httpUrl");
    if (http && !json_object_get(c, "url")) {
        json_object_set(c, "url", http);
        json_object_del(c, "httpUrl");
    } else if (json_object_get(c, "url") && !json_object_get(c, "type")) {
        json_object_set_new(c, "type", json_string("sse")); /* refused with its reason */
    }
    return c;
}

/* Windsurf names a remote server's endpoint "serverUrl". */
static json_t *config_json_entry(json_t *e)
{
    json_t *c = json_copy(e);
    json_t *url = json_object_get(c, "serverUrl");
    if (json_is_object(c) && url && !json_object_get(c, "url")) {
        json_object_set(c, "url", url);
        json_object_del(c, "serverUrl");
    }
    return c;
}

/* A header whose value is the environment variable var; not added when it is unset. */
static void config_env_header(json_t *headers, const char *name, const char *prefix,
                              const char *var)
{
    const char *v = var ? getenv(var) : NULL;
    if (!v) {
        log_warn("Codex MCP configuration: header %s: $%.80s is not set: not sent", name,
                 var ? var : "?");
        return;
    }
    char *value = fmt_str("%s%s", prefix, v);
    if (value)
        json_object_set_new(headers, name, json_string(value));
    free(value);
}

/* Codex: [mcp_servers.NAME] with command, args, env, env_vars (names passed through from our
 * environment), cwd; or url, http_headers, env_http_headers (header -> variable),
 * bearer_token_env_var; enabled = false disables it. Timeouts and tool filters are Codex's
 * own business and are left out. */
static json_t *config_codex_entry(json_t *e)
{
    if (!json_is_object(e))
        return json_incref(e); /* config.c reports it */
    json_t *c = json_object();
    static const char *const same[] = {"command", "args", "env", "cwd", "url", "description"};
    for (size_t i = 0; i < ARRAY_SIZE(same); i++)
        if (json_object_get(e, same[i]))
            json_object_set(c, same[i], json_object_get(e, same[i]));
    json_t *pass = json_object_get(e, "env_vars");
    if (json_is_array(pass) && json_array_size(pass)) {
        json_t *env = json_is_object(json_object_get(c, "env"))
                          ? json_deep_copy(json_object_get(c, "env"))
                          : json_object();
        size_t i;
        json_t *v;
        json_array_foreach(pass, i, v)
        {
            const char *val = json_string_value(v) ? getenv(json_string_value(v)) : NULL;
            if (val && !json_object_get(env, json_string_value(v)))
                json_object_set_new(env, json_string_value(v), json_string(val));
        }
        json_object_set_new(c, "env", env);
    }
    json_t *fixed = json_object_get(e, "http_headers");
    json_t *from_env = json_object_get(e, "env_http_headers");
    const char *bearer = json_string_value(json_object_get(e, "bearer_token_env_var"));
    if (fixed || from_env || bearer) {
        json_t *headers = json_is_object(fixed) ? json_deep_copy(fixed) : json_object();
        const char *name;
        json_t *v;
        json_object_foreach(from_env, name, v)
        {
            config_env_header(headers, name, "", json_string_value(v));
        }
        if (bearer)
            config_env_header(headers, "Authorization", "Bearer ", bearer);
        json_object_set_new(c, "headers",
                            fixed && !json_is_object(fixed) ? json_incref(fixed) : headers);
        if (fixed && !json_is_object(fixed))
            json_decref(headers);
    }
    if (json_is_false(json_object_get(e, "enabled")))
        json_object_set_new(c, "disabled", json_true());
    return c;
}

int config_normalize(json_t *doc, enum config_format format, const char *cwd, json_t **ret,
                     char **ret_why)
{
    (void)cwd; /* ~/.claude.json's project part is read by config.c */
    *ret_why = NULL;
    if (!json_is_object(doc)) {
        *ret_why = strdup("the document is not an object");
        return -EINVAL;
    }
    json_t *parts[2] = {NULL, NULL};
    json_t *(*fix)(json_t *) = config_json_entry;
    switch (format) {
    case CONFIG_JSON:
    case CONFIG_SETTINGS:
    case CONFIG_CLAUDE_CODE:
        parts[0] = json_object_get(doc, "mcpServers");
        parts[1] = format == CONFIG_JSON ? json_object_get(doc, "servers") : NULL;
        break;
    case CONFIG_GEMINI:
        parts[0] = json_object_get(doc, "mcpServers");
        fix = config_gemini_entry;
        break;
    case CONFIG_VSCODE_USER: /* "mcp": {"servers"}, or "mcpServers" as upstream reads it */
        parts[0] = json_object_get(json_object_get(doc, "mcp"), "servers");
        parts[1] = json_object_get(doc, "mcpServers");
        break;
    case CONFIG_CODEX:
        parts[0] = json_object_get(doc, "mcp_servers");
        fix = config_codex_entry;
        break;
    }
    bool any = false;
    for (size_t i = 0; i < ARRAY_SIZE(parts); i++)
        any = any || json_is_object(parts[i]);
    if (!any && format == CONFIG_JSON) {
        *ret_why = strdup("no \"mcpServers\" or \"servers\" object");
        return -EINVAL;
    }
    json_t *out = json_object();
    for (size_t i = 0; i < ARRAY_SIZE(parts); i++) {
        const char *name;
        json_t *e;
        json_object_foreach(json_is_object(parts[i]) ? parts[i] : NULL, name, e)
        {
            if (!json_object_get(out, name)) /* the first spelling of a name counts */
                json_object_set_new(out, name, fix(e));
        }
    }
    *ret = out;
    return out ? 0 : -ENOMEM;
}

/* ---- entries that start sandboxd itself ---------------------------------------------------- */

/* The names the upstream bridge goes by (its own check looks for the same). */
static bool config_upstream_token(const char *s)
{
    char lower[256];
    size_t n = strlen(s);
    if (n >= sizeof(lower))
        return false;
    for (size_t i = 0; i <= n; i++)
        lower[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
    const char *base = strrchr(lower, '/') ? strrchr(lower, '/') + 1 : lower;
    size_t bn = strlen(base);
    const char *py = "mcp_server_code_execution_mode.py";
    return strcmp(base, "mcp-server-code-execution-mode") == 0 ||
           strcmp(base, "mcp_server_code_execution_mode") == 0 ||
           (bn >= strlen(py) && strcmp(base + bn - strlen(py), py) == 0);
}

/* path names our executable: by its name, or as the same file. */
static bool config_sandboxd(const char *path, const char *self_exe)
{
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    if (strcmp(base, "sandboxd") == 0)
        return true;
    if (!self_exe || !strchr(path, '/'))
        return false;
    char *real = realpath(path, NULL);
    bool same = real && strcmp(real, self_exe) == 0;
    free(real);
    return same;
}

bool config_is_self(const char *name, const struct mcp_server_config *s, const char *self_exe)
{
    if (config_upstream_token(name))
        return true;
    if (!s->command)
        return false;
    if (config_upstream_token(s->command))
        return true;
    bool sandboxd = config_sandboxd(s->command, self_exe), mcp = false;
    for (size_t i = 0; s->args && s->args[i]; i++) {
        if (config_upstream_token(s->args[i]))
            return true;
        sandboxd = sandboxd || config_sandboxd(s->args[i], self_exe);
        mcp = mcp || strcmp(s->args[i], "mcp") == 0;
    }
    return sandboxd && mcp;
}
