// SPDX-License-Identifier: MIT
/*
 * catalog — what the MCP server offers, as tools/list and
 * resources/list show it: the tools of the native mode (run_python,
 * list_servers, search_tool_docs, reset_session) or of --compat
 * code-execution-mode (run_python alone, upstream's arguments), each in the
 * shape of every protocol version a client may speak (2025-06-18 brought
 * titles and outputSchema, 2025-03-26 annotations); and the capability
 * resource, a short manual of the sandbox's helpers (resources/list, read).
 * Built once by mcp_server_new(); read-only afterwards.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcpclient/registry.h"
#include "mcpserver/server_int.h"
#include "session/session.h"
#include "util/fmt.h"
#include "util/jdump.h"
#include "util/macros.h"

/* Every helper named here exists in the session runtime (runtime/sandboxd_runtime/session.py). */
const char srv_helpers_summary[] =
    "Python sandbox whose variables persist between calls. 1. DISCOVER: `from mcp import "
    "runtime`, then `runtime.discovered_servers()` (`detailed=True` adds descriptions) and "
    "`runtime.search_tool_docs('words')`. 2. CALL: name the servers in `servers`, then `await "
    "mcp_<server>.<tool>(...)`. 3. PERSIST: `save_tool(func)` and `save_memory(key, value)` "
    "outlive the session. `print(runtime.capability_summary())` prints the manual.";

#define SRV_CAPS_URI        "resource://sandboxd/capabilities"
#define SRV_CAPS_COMPAT_URI "resource://mcp-server-code-execution-mode/capabilities"

/* The capability resource: the summary, then how to use it (the native mode's run_python also
 * takes a network allow list and files, and answers with artifacts). */
static char *srv_caps_text(const struct mcp_server *s)
{
    return fmt_str(
        "# Code Execution MCP Capabilities (sandboxd)\n"
        "\n"
        "%s\n"
        "\n"
        "## Quick usage\n"
        "\n"
        "- Pass `servers=[...]` to run_python to get `mcp_<alias>` proxies: `\"my-server\"` "
        "becomes `mcp_my_server`, its tool `get-sum` the method `get_sum`.\n"
        "- `import mcp.runtime as runtime`; `runtime.capability_summary()` prints the servers and "
        "helpers of the session, `runtime.search_tool_docs(query)` finds tools, "
        "`runtime.query_tool_docs(server, tool, detail='full')` shows a schema.\n"
        "- Each MCP server runs on the host in the working directory of its configuration's "
        "`cwd`; without a `cwd`, in the directory sandboxd was started in. `sandboxd servers` "
        "shows every configured server, its `cwd` and where it was found.\n"
        "- The code runs %s, on a read-only filesystem except `/tmp`; `print` what you want to "
        "see.%s\n"
        "\n"
        "Resource URI: %s (also read as %s)\n",
        srv_helpers_summary,
        s->opt.compat ? "without network"
                      : "without network unless run_python's `network` allows hosts (within "
                        "what the server allows, --egress-allow)",
        s->opt.compat ? ""
                      : " `files` puts input files in the working directory; matplotlib figures "
                        "and `display(obj)` come back as images or resources.",
        SRV_CAPS_COMPAT_URI, SRV_CAPS_URI);
}

static json_t *srv_run_python_tool(struct mcp_server *s)
{
    json_t *names = mcp_registry_names(s->registry);
    json_t *items = json_pack("{s:s}", "type", "string");
    json_t *servers =
        json_pack("{s:s, s:o, s:b}", "type", "array", "items", items, "uniqueItems", 1);
    char *list = NULL;
    if (json_array_size(names)) {
        json_object_set(items, "enum", names);
        char *dumped = jdump(names, JSON_COMPACT, NULL);
        if (asprintf(&list,
                     "MCP servers this code may call, as Python objects: \"everything\" "
                     "becomes mcp_everything. Configured: %s.",
                     dumped ? dumped : "?") < 0)
            list = NULL;
        free(dumped);
    } else {
        json_object_set_new(servers, "maxItems", json_integer(0));
    }
    json_object_set_new(servers, "description",
                        json_string(list ? list
                                         : "MCP servers this code may call; none are configured "
                                           "(start sandboxd with --mcp-config FILE)."));
    free(list);
    json_decref(names);
    char timeout_desc[200];
    snprintf(timeout_desc, sizeof(timeout_desc),
             "Time limit in seconds (default %g, at most %g; longer is clamped). At the limit the "
             "code is interrupted and the session survives.",
             (double)s->opt.default_timeout_ms / 1000.0, (double)s->opt.max_timeout_ms / 1000.0);
    json_t *ceiling = sessions_network_ceiling(s->sessions);
    char *ceiling_text = jdump(ceiling, JSON_COMPACT, NULL);
    char *net_desc =
        json_array_size(ceiling)
            ? fmt_str("Hosts this code may reach over HTTP and HTTPS (urllib, requests, pip... go "
                      "through sandboxd's proxy; nothing else is reachable), as patterns: host, "
                      "host:port, *.domain (no port: 80 and 443). Only within what this server "
                      "allows: %s. A session's list is fixed when it is created.",
                      ceiling_text ? ceiling_text : "?")
            : strdup("Network access for this code; this server allows none (it was started "
                     "without --egress-allow), so leave it out.");
    free(ceiling_text);
    json_decref(ceiling);
    json_t *network =
        json_pack("{s:s, s:{s:{s:s, s:{s:s}, s:i, s:i}}, s:[s], s:b, s:s}", "type", "object",
                  "properties", "allow", "type", "array", "items", "type", "string", "minItems", 1,
                  "maxItems", 64, "required", "allow", "additionalProperties", 0, "description",
                  net_desc ? net_desc : "network access");
    free(net_desc);
    json_t *files = json_pack(
        "{s:s, s:s, s:{s:[{s:s}, {s:s, s:{s:{s:s}}, s:[s], s:b}]}}", "type", "object",
        "description",
        "Files to place in the session's working directory before the code runs: relative path "
        "-> text, or {\"base64\": \"...\"} for binary content.",
        "additionalProperties", "anyOf", "type", "string", "type", "object", "properties", "base64",
        "type", "string", "required", "base64", "additionalProperties", 0);
    json_t *input = json_pack(
        "{s:s, s:{s:{s:s, s:s}, s:o, s:{s:s, s:f, s:s}, s:{s:s, s:s, s:s}, s:{s:s, s:[s,s], s:s},"
        " s:o, s:o}, s:[s], s:b}",
        "type", "object", "properties", "code", "type", "string", "description",
        "Python 3 source. Variables, imports and functions persist between calls of the same "
        "session; top-level await works; the value of a final expression is returned as "
        "result.",
        "servers", servers, "timeout", "type", "number", "exclusiveMinimum", 0.0, "description",
        timeout_desc, "session_id", "type", "string", "pattern", "^[A-Za-z0-9._-]{1,64}$",
        "description",
        "A named session of this connection, created on first use. Without it, the "
        "connection's default session is used.",
        "output", "type", "string", "enum", "text", "json", "description",
        "How the result is written: compact text (the server's default unless started with "
        "--mcp-output json) or the JSON of structuredContent.",
        "files", files, "network", network, "required", "code", "additionalProperties", 0);
    json_t *nullable_str = json_pack("{s:[s,s]}", "type", "string", "null");
    json_t *output = json_pack(
        "{s:s, s:{s:{s:s, s:s}, s:{s:s}, s:{s:s}, s:{s:[s,s]}, s:O, s:{s:s}, s:{s:s}, s:{s:s},"
        " s:{s:s}, s:{s:s}, s:{s:s, s:{s:s}}}, s:[s,s,s,s,s,s,s,s]}",
        "type", "object", "properties", "status", "type", "string", "description",
        "ok, error (an uncaught exception), timeout, memory_limit, output_limit, killed or "
        "exited",
        "stdout", "type", "string", "stderr", "type", "string", "error", "type", "object", "null",
        "result", nullable_str, "durationMs", "type", "number", "truncated", "type", "boolean",
        "sessionAlive", "type", "boolean", "session", "type", "string", "mcpCalls", "type",
        "integer", "notes", "type", "array", "items", "type", "string", "required", "status",
        "stdout", "stderr", "error", "result", "durationMs", "truncated", "sessionAlive");
    json_decref(nullable_str);
    if (json_object_set_new(
            json_object_get(output, "properties"), "artifacts",
            json_pack("{s:s, s:s, s:{s:s, s:{s:{s:s}, s:{s:s}, s:{s:s}}}}", "type", "array",
                      "description",
                      "Figures, displayed objects and the like the code produced; their content "
                      "follows as image or resource content blocks",
                      "items", "type", "object", "properties", "name", "type", "string", "mimeType",
                      "type", "string", "size", "type", "integer")) < 0) {
        json_decref(output);
        output = NULL; /* "o" fails on it below: the tool is missing, which the catalog counts */
    }
    return json_pack(
        "{s:s, s:s, s:o, s:o, s:{s:b, s:b, s:b, s:b}}", "title", "Run Python in a sandbox",
        "description",
        "Run Python 3 code in an isolated sandbox (no network unless `network` allows hosts; the "
        "filesystem is read-only except /tmp) and get its stdout, stderr and the value of its "
        "last expression. State persists between calls of one session. MCP servers named in "
        "`servers` are Python objects whose tools are async methods: `await "
        "mcp_everything.get_sum(a=1, b=2)` (dashes become underscores); find tools with "
        "search_tool_docs. save_memory(key, value) and load_memory(key) keep JSON values across "
        "sessions. Matplotlib figures (plt.show(), or left open) and display(obj) come back as "
        "images or resources; `files` puts input files in the working directory.",
        "inputSchema", input, "outputSchema", output, "annotations", "readOnlyHint", 0,
        "destructiveHint", 0, "idempotentHint", 0, "openWorldHint", 0);
}

/* The schema of a `servers` argument: configured names, as an enum when there are any. */
static json_t *srv_servers_schema(struct mcp_server *s, const char *description)
{
    json_t *names = mcp_registry_names(s->registry);
    json_t *items = json_pack("{s:s}", "type", "string");
    if (json_array_size(names))
        json_object_set(items, "enum", names);
    json_decref(names);
    return json_pack("{s:s, s:o, s:b, s:s}", "type", "array", "items", items, "uniqueItems", 1,
                     "description", description);
}

static json_t *srv_list_servers_tool(struct mcp_server *s)
{
    return json_pack("{s:s, s:s, s:{s:s, s:{s:{s:s, s:s}, s:o}, s:b}, s:{s:b, s:b}}", "title",
                     "List MCP servers", "description",
                     "The MCP servers run_python code may use (pass their names in run_python's "
                     "`servers`), with their descriptions; with tools=true also the tool names of "
                     "the servers that are running and of those named in `servers` (which starts "
                     "them).",
                     "inputSchema", "type", "object", "properties", "tools", "type", "boolean",
                     "description", "Also list each server's tools.", "servers",
                     srv_servers_schema(s, "Servers to start if needed and read the tools of."),
                     "additionalProperties", 0, "annotations", "readOnlyHint", 1, "openWorldHint",
                     0);
}

static json_t *srv_search_tool(struct mcp_server *s)
{
    return json_pack(
        "{s:s, s:s, s:{s:s, s:{s:{s:s, s:s}, s:{s:s, s:i, s:i, s:s}, s:o}, s:[s], "
        "s:b}, s:{s:b, s:b}}",
        "title", "Search the tools of the MCP servers", "description",
        "Find tools of the running MCP servers, and of those named in `servers`, by keywords, "
        "best match first, each with its Python signature and docs (the text help() shows in "
        "run_python) — without loading every schema.",
        "inputSchema", "type", "object", "properties", "query", "type", "string", "description",
        "Keywords, e.g. \"sum numbers\".", "limit", "type", "integer", "minimum", 1, "maximum", 50,
        "description", "Most results (default 5).", "servers",
        srv_servers_schema(s, "Servers to start if needed and search too (running ones "
                              "are always searched)."),
        "required", "query", "additionalProperties", 0, "annotations", "readOnlyHint", 1,
        "openWorldHint", 0);
}

static json_t *srv_reset_tool(struct mcp_server *s)
{
    (void)s;
    return json_pack("{s:s, s:s, s:{s:s, s:{s:{s:s, s:s}}, s:b}, s:{s:b, s:b, s:b, s:b}}", "title",
                     "Reset a Python session", "description",
                     "End a session of this connection: its variables are gone and the next "
                     "run_python starts afresh. Without session_id, the default session (and the "
                     "other automatic ones).",
                     "inputSchema", "type", "object", "properties", "session_id", "type", "string",
                     "description", "The named session to end.", "additionalProperties", 0,
                     "annotations", "readOnlyHint", 0, "destructiveHint", 1, "idempotentHint", 1,
                     "openWorldHint", 0);
}

static json_t *srv_approve_call_tool(struct mcp_server *s)
{
    (void)s;
    return json_pack("{s:s, s:{s:s, s:{s:{s:s}, s:{s:s}}, s:[s,s]}, s:{s:b}}", "description",
                     "Decide a tool call that run_python's code waits on (its answer gives the "
                     "approval_id): approve true sends it, false refuses it. Ask the user first. "
                     "Answers with the rest of that run.",
                     "inputSchema", "type", "object", "properties", "approval_id", "type", "string",
                     "approve", "type", "boolean", "required", "approval_id", "approve",
                     "annotations", "destructiveHint", 1);
}

/* run_python of the lean surface: what a model needs to start, nothing it can learn in the
 * sandbox. Its description is the one place the in-sandbox discovery is announced. */
static json_t *srv_run_python_lean(struct mcp_server *s)
{
    json_t *names = mcp_registry_names(s->registry);
    json_t *servers =
        json_array_size(names)
            ? json_pack("{s:s, s:{s:O}}", "type", "array", "items", "enum", names)
            : json_pack("{s:s, s:i}", "type", "array", "maxItems", 0); /* none configured */
    json_decref(names);
    json_t *tool = json_pack(
        "{s:s, s:{s:s, s:{s:{s:s}, s:o, s:{s:s}, s:{s:s, s:s}}, s:[s]}}", "description",
        "Run Python 3 in a sandbox session; variables persist, top-level await works, the last "
        "expression is returned. Servers named in `servers` become objects: "
        "`await mcp_<server>.<tool>(...)`, typed from their schemas. In code: "
        "`help(mcp_<server>)`, `search_tool_docs('words')`, stubs in /tmp/mcp/servers/.",
        "inputSchema", "type", "object", "properties", "code", "type", "string", "servers", servers,
        "session_id", "type", "string", "timeout", "type", "number", "description", "seconds",
        "required", "code");
    /* A network is offered only where the operator allows one: then the model must know the
     * parameter and what it may name (a server without --egress-allow pays nothing for it). */
    json_t *ceiling = sessions_network_ceiling(s->sessions);
    if (tool && json_array_size(ceiling)) {
        char *allowed = jdump(ceiling, JSON_COMPACT, NULL);
        char *desc = fmt_str("Hosts to reach over HTTP(S), within %s", allowed ? allowed : "?");
        json_t *network =
            desc ? json_pack("{s:s, s:{s:{s:s, s:{s:s}}}, s:[s], s:s}", "type", "object",
                             "properties", "allow", "type", "array", "items", "type", "string",
                             "required", "allow", "description", desc)
                 : NULL;
        free(allowed);
        free(desc);
        if (!network ||
            json_object_set_new(json_object_get(json_object_get(tool, "inputSchema"), "properties"),
                                "network", network) < 0) {
            json_decref(tool);
            tool = NULL; /* the tool is missing, which the catalog counts */
        }
    }
    json_decref(ceiling);
    return tool;
}

static json_t *srv_compat_tool(struct mcp_server *s);

/* Every tool sandboxd mcp has, one row each: a tool is named, described and answered here, and
 * nowhere else (its handler learns its name from the call, srv_call_tool()). A row's since is
 * the first protocol version it is listed in; what an entry's keys need is srv_tool_keys'. */
static const struct srv_tool_def srv_tool_table[] = {
    {"run_python", SRV_V_2024_11_05, srv_run_python_lean, srv_run_python, SRV_LEAN},
    {"run_python", SRV_V_2024_11_05, srv_run_python_tool, srv_run_python, SRV_FULL},
    {"run_python", SRV_V_2024_11_05, srv_compat_tool, srv_compat_run, SRV_COMPAT},
    {"list_servers", SRV_V_2024_11_05, srv_list_servers_tool, srv_list_servers, SRV_FULL},
    {"search_tool_docs", SRV_V_2024_11_05, srv_search_tool, srv_search, SRV_FULL},
    {"reset_session", SRV_V_2024_11_05, srv_reset_tool, srv_reset, SRV_FULL},
    {"approve_call", SRV_V_2024_11_05, srv_approve_call_tool, srv_approve_call,
     SRV_LEAN | SRV_FULL | SRV_COMPAT | SRV_APPROVALS},
};

/* The keys of a tools/list entry that came with a protocol version after the first: an older
 * client gets the entry without them. */
static const struct {
    const char *key;
    enum srv_version since;
} srv_tool_keys[] = {
    {"annotations", SRV_V_2025_03_26},
    {"title", SRV_V_2025_06_18},
    {"outputSchema", SRV_V_2025_06_18},
};

const struct srv_tool_def *srv_tool_find(const struct mcp_server *s, const char *name)
{
    for (size_t i = 0; i < s->n_defs; i++)
        if (strcmp(s->defs[i]->name, name) == 0)
            return s->defs[i];
    return NULL;
}

char *srv_tool_names(const struct mcp_server *s)
{
    json_t *names = json_array();
    for (size_t i = 0; i < s->n_defs; i++)
        json_array_append_new(names, json_string(s->defs[i]->name));
    char *text = srv_names_text(names);
    json_decref(names);
    return text;
}

static const char srv_instructions_full[] =
    "sandboxd runs Python in isolated sandboxes. Use run_python to execute code: state "
    "persists between calls of a session (one default session per connection; pass "
    "session_id for separate ones), top-level await works, and the value of the last "
    "expression is returned. To call tools of the configured MCP servers from code, find them "
    "with search_tool_docs (or list_servers), pass the server names in run_python's servers, "
    "and await mcp_<server>.<tool>(...). reset_session starts over.";

static const char srv_instructions_lean[] =
    "Python sandbox with MCP servers as typed Python objects. Discover and call tools from "
    "code in run_python.";

const char *srv_instructions(const struct mcp_server *s)
{
    return s->opt.compat       ? srv_compat_instructions(s)
           : s->opt.full_tools ? srv_instructions_full
                               : srv_instructions_lean;
}

/* The compat run_python: upstream's three arguments, an integer timeout with its limits, the
 * helpers summary in the descriptions (where upstream's clients and tests look for it). */
static json_t *srv_compat_tool(struct mcp_server *s)
{
    char *code_desc = fmt_str("Python source code to execute. %s", srv_helpers_summary);
    char *desc = fmt_str("Execute Python code in an isolated sandbox (no network; the filesystem "
                         "is read-only except /tmp). Use the optional 'servers' array to load MCP "
                         "servers for this execution. %s",
                         srv_helpers_summary);
    json_int_t max_s = (json_int_t)(s->opt.max_timeout_ms / 1000);
    json_int_t def_s = (json_int_t)(s->opt.default_timeout_ms / 1000);
    json_t *t = NULL;
    if (code_desc && desc)
        t = json_pack(
            "{s:s, s:s, s:{s:s, s:{s:{s:s, s:s}, s:o, s:{s:s, s:I, s:I, s:I, s:s}}, s:[s]}}",
            "title", "Run Python in a sandbox", "description", desc, "inputSchema", "type",
            "object", "properties", "code", "type", "string", "description", code_desc, "servers",
            srv_servers_schema(s, "Optional list of MCP servers to make available as "
                                  "mcp_<name> proxies"),
            "timeout", "type", "integer", "minimum", (json_int_t)1, "maximum",
            max_s < 1 ? (json_int_t)1 : max_s, "default", def_s < 1 ? (json_int_t)1 : def_s,
            "description", "Execution timeout in seconds", "required", "code");
    free(code_desc);
    free(desc);
    return t;
}

/* The tools/list entries of version v: the tools it has, without the keys it lacks (new
 * reference; NULL when out of memory). entries are the latest version's, one per s->defs. */
static json_t *srv_tools_of(const struct mcp_server *s, json_t *entries, enum srv_version v)
{
    json_t *list = json_array();
    for (size_t i = 0; list && i < s->n_defs; i++) {
        if (s->defs[i]->since > v)
            continue;
        json_t *t = json_deep_copy(json_array_get(entries, i));
        for (size_t k = 0; t && k < ARRAY_SIZE(srv_tool_keys); k++)
            if (srv_tool_keys[k].since > v)
                json_object_del(t, srv_tool_keys[k].key);
        if (!t || json_array_append_new(list, t) < 0) {
            json_decref(list);
            return NULL;
        }
    }
    return list;
}

/* A tool's tools/list entry in the latest version's shape: its name (the row's), then what its
 * builder says. */
static json_t *srv_tool_entry(struct mcp_server *s, const struct srv_tool_def *d)
{
    json_t *body = d->entry(s);
    json_t *entry = body ? json_pack("{s:s}", "name", d->name) : NULL;
    if (entry && json_object_update(entry, body) < 0) {
        json_decref(entry);
        entry = NULL;
    }
    json_decref(body);
    return entry;
}

int srv_catalog_build(struct mcp_server *s)
{
    unsigned surface = s->opt.compat ? SRV_COMPAT : s->opt.full_tools ? SRV_FULL : SRV_LEAN;
    bool approvals = mcp_registry_has_approvals(s->registry);
    json_t *tools = json_array();
    for (size_t i = 0; i < ARRAY_SIZE(srv_tool_table); i++) {
        const struct srv_tool_def *d = &srv_tool_table[i];
        if (!(d->surfaces & surface) || ((d->surfaces & SRV_APPROVALS) && !approvals))
            continue;
        json_t *entry = srv_tool_entry(s, d);
        if (!entry || s->n_defs == SRV_MAX_TOOLS || json_array_append_new(tools, entry) < 0) {
            json_decref(tools);
            return -ENOMEM;
        }
        s->defs[s->n_defs++] = d;
    }
    bool ok = true;
    for (size_t v = 0; v < SRV_N_VERSIONS; v++)
        ok &= (s->tools[v] = srv_tools_of(s, tools, (enum srv_version)v)) != NULL;
    json_decref(tools);
    char *text = srv_caps_text(s);
    if (text)
        s->resources = json_pack(
            "[{s:s, s:s, s:s, s:s, s:s, s:I}]", "uri",
            s->opt.compat ? SRV_CAPS_COMPAT_URI : SRV_CAPS_URI, "name",
            s->opt.compat ? "code-execution-capabilities" : "sandboxd-capabilities", "title",
            "Code Execution Sandbox Helpers", "description",
            "Capability overview, helper reference and sandbox usage notes (inside the sandbox, "
            "runtime.capability_summary() prints the servers and helpers of the session).",
            "mimeType", "text/markdown", "size", (json_int_t)strlen(text));
    free(text);
    return ok && s->resources ? 0 : -ENOMEM;
}

json_t *srv_tools(const struct mcp_server_conn *c)
{
    return c->srv->tools[srv_version_of(c)];
}

/* ---- resources ------------------------------------------------------------------------------ */

json_t *srv_resources(struct mcp_server_conn *c, json_t *id, const char *method, json_t *params)
{
    json_t *result = NULL;
    if (strcmp(method, "resources/list") == 0) {
        json_t *list = json_deep_copy(c->srv->resources);
        size_t i;
        json_t *r;
        json_array_foreach(list, i, r)
        {
            if (!srv_since(c, SRV_V_2025_06_18))
                json_object_del(r, "title");
        }
        result = json_pack("{s:o}", "resources", list);
    } else if (strcmp(method, "resources/templates/list") == 0) {
        result = json_pack("{s:[]}", "resourceTemplates");
    } else if (strcmp(method, "resources/read") == 0) {
        const char *uri = json_string_value(json_object_get(params, "uri"));
        if (!uri)
            return srv_error(id, JSONRPC_INVALID_PARAMS, NULL,
                             "Invalid params: resources/read needs params.uri (a string)");
        /* Both names of the one document, whichever mode lists it. */
        if (strcmp(uri, SRV_CAPS_URI) != 0 && strcmp(uri, SRV_CAPS_COMPAT_URI) != 0)
            return srv_error(id, JSONRPC_MCP_RESOURCE_NOT_FOUND, json_pack("{s:s}", "uri", uri),
                             "Resource not found: %.200s (resources/list names the resources)",
                             uri);
        char *text = srv_caps_text(c->srv);
        result = text ? json_pack("{s:[{s:s, s:s, s:s}]}", "contents", "uri", uri, "mimeType",
                                  "text/markdown", "text", text)
                      : NULL;
        free(text);
    } else {
        return NULL;
    }
    return srv_result(id, result);
}
