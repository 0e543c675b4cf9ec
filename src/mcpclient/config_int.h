// SPDX-License-Identifier: MIT
/*
 * config_int — what config.c (reading and checking entries, precedence,
 * trust) and config_sources.c (where other MCP clients keep their
 * configuration, and the spellings of each) share. Private to those two.
 */
#ifndef SANDBOXD_MCPCLIENT_CONFIG_INT_H
#define SANDBOXD_MCPCLIENT_CONFIG_INT_H

#include <jansson.h>

#include "mcpclient/config.h"

/* Where a source stands: --mcp-config files (a later one wins per name), the user's own files,
 * and a project's (read only when the project is trusted). */
enum config_level { CONFIG_EXPLICIT, CONFIG_USER, CONFIG_PROJECT };

/* How a file spells its servers. */
enum config_format {
    CONFIG_JSON,        /* "mcpServers" (Claude and most clients) or "servers" (VS Code) */
    CONFIG_SETTINGS,    /* a program's settings, which may hold "mcpServers" or not */
    CONFIG_GEMINI,      /* Gemini CLI: "httpUrl" is Streamable HTTP, "url" the legacy SSE */
    CONFIG_VSCODE_USER, /* VS Code's settings.json: "mcp": {"servers": ...} */
    CONFIG_CODEX,       /* Codex's config.toml: [mcp_servers.NAME] tables */
    CONFIG_CLAUDE_CODE, /* ~/.claude.json: the current project's servers, then the user's */
};

/* One document being read. */
struct config_doc {
    const char *source; /* the file (and part of it), for messages and records */
    enum config_level level;
    const char *description; /* the document's "description": its entries' default; may be NULL */
    enum config_format format;
    const char *agent; /* the program whose file it is ("Cursor"), static; may be NULL */
};

/* Record that name (NULL: the whole file) from source was left out; reason is taken (may be
 * NULL when out of memory). Only -ENOMEM fails. */
int config_skip(struct mcp_config *cfg, const char *name, const char *source, const char *kind,
                char *reason);
/* Remember that path contributed servers. */
int config_add_source(struct mcp_config *cfg, const char *path);
/* Add the entries of one "mcpServers"-style object (borrowed). The number added, or -ENOMEM. */
int config_add_servers(struct mcp_config *cfg, const struct mcp_config_options *opt,
                       const struct config_doc *doc, json_t *servers);
/* One discovered file in format, at level; a missing file is nothing, a bad one a warning and a
 * record. agent names the program the file belongs to ("Cursor"), for `sandboxd servers`. */
int config_discovered(struct mcp_config *cfg, const struct mcp_config_options *opt,
                      const char *path, enum config_level level, enum config_format format,
                      const char *agent);
/* A file the user named: an --mcp-config (a problem is an error), or $MCP_SERVERS_CONFIG when
 * env (a warning and a record, as upstream only logs it). */
int config_named(struct mcp_config *cfg, const struct mcp_config_options *opt, const char *path,
                 bool env);
/* Every <dir>/<name>.json, in name order, as config_discovered(). */
int config_directory(struct mcp_config *cfg, const struct mcp_config_options *opt, const char *dir,
                     enum config_level level, const char *agent);

/* config_sources.c: every discovery location, in order of precedence. */
int config_discover(struct mcp_config *cfg, const struct mcp_config_options *opt);
/* The "mcpServers" object that stands for the document of format (a new reference; an empty
 * object when it names none), entries spelled as Claude's. -EINVAL with *ret_why (caller frees)
 * when the document is not of that shape. */
int config_normalize(json_t *doc, enum config_format format, const char *cwd, json_t **ret,
                     char **ret_why);
/* Does the entry start sandboxd's MCP server or the upstream bridge (a loop)? */
bool config_is_self(const char *name, const struct mcp_server_config *s, const char *self_exe);

#endif
