// SPDX-License-Identifier: MIT
/*
 * servers — `sandboxd servers`: which MCP servers sandboxd would use, read
 * exactly as `serve` and `mcp` read them (cmd/setup.c), each with the file
 * it came from; and what was left out and why (an untrusted project file, a
 * name shadowed by an earlier definition, an invalid or disabled entry). As
 * text, or as JSON with --json. Starts nothing: it is how a user checks
 * what a directory would make sandboxd run before trusting it. Secrets stay
 * out of the listing: URLs lose userinfo and query, env and header values
 * are not shown.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/setup.h"
#include "mcpclient/config.h"
#include "util/jdump.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/url.h"

/*
 * The options of servers, one row each, generating the enum (SERVERS_OPT_<ID>), the getopt
 * entries and --help:
 *   X(ID, "name", has_arg, help)   an option of its own
 *   S(ID, "name", has_arg, help)   setup option ID (cmd/setup.h) with servers' words, setup_opt()'s
 *   C(ID, "name", has_arg, help)   common option ID (cmd/common.h), parsed here
 */
#define SERVERS_OPTIONS(X, S, C)                                                                   \
    X(JSON, "json", no_argument, "  --json                 one JSON object instead of text\n")     \
    S(MCP_CONFIG, "mcp-config", required_argument,                                                 \
      "  --mcp-config FILE      as for serve and mcp (repeatable)\n")                              \
    S(NO_DISCOVERY, "no-mcp-discovery", no_argument,                                               \
      "  --no-mcp-discovery     only --mcp-config\n")                                              \
    S(TRUST_PROJECT, "mcp-trust-project", no_argument,                                             \
      "  --mcp-trust-project    read this directory's files too (./.mcp, ./mcp-servers,\n"         \
      "                         ./.vscode/mcp.json, ./*_config.json)\n"                            \
      "                         (default: only when it is listed in\n"                             \
      "                         ~/.config/sandboxd/trusted-projects)\n")                           \
    C(LOG_LEVEL, "log-level", required_argument,                                                   \
      "  --log-level LEVEL      debug|info|warn|error (default warn)\n")

#define SERVERS_ENUM_X_(id, name, has_arg, help) SERVERS_OPT_##id,
#define SERVERS_NONE_(id, name, has_arg, help)
#define SERVERS_LONG_X_(id, name, has_arg, help) {name, has_arg, NULL, SERVERS_OPT_##id},
#define SERVERS_LONG_S_(id, name, has_arg, help) {name, has_arg, NULL, SETUP_OPT_##id},
#define SERVERS_LONG_C_(id, name, has_arg, help) {name, has_arg, NULL, COMMON_OPT_##id},
#define SERVERS_HELP_(id, name, has_arg, help)   help
enum {
    SERVERS_OPT_FIRST_ = SETUP_OPT_LAST,
    SERVERS_OPTIONS(SERVERS_ENUM_X_, SERVERS_NONE_, SERVERS_NONE_)
};

static const char servers_usage[] =
    "Usage: sandboxd servers [options]\n"
    "The MCP servers sandboxd would use from here, the file each comes from (and whose file\n"
    "it is: Claude, Cursor, Codex...), and what was skipped and why (untrusted project file,\n"
    "shadowed, replaced by a later --mcp-config, invalid entry, disabled, one that would\n"
    "start sandboxd itself).\n"
    "\n" SERVERS_OPTIONS(SERVERS_HELP_, SERVERS_HELP_, SERVERS_HELP_) "  -h, --help\n";

/* The keys of a NULL-terminated "KEY=value" (sep '=') or "Name: value" (sep ':') vector. */
static json_t *servers_keys(char **v, char sep)
{
    json_t *keys = json_array();
    for (size_t i = 0; v && v[i]; i++)
        json_array_append_new(keys, json_stringn(v[i], strcspn(v[i], (char[]){sep, 0})));
    return keys;
}

static json_t *servers_describe(const struct mcp_config *cfg, const char *cwd,
                                const char *trust_file)
{
    /* Paths (a source file, the directory) are any bytes: log_str escapes what is not UTF-8
     * rather than failing the whole description. */
    json_t *list = json_array();
    for (size_t i = 0; list && i < cfg->n; i++) {
        const struct mcp_server_config *s = &cfg->servers[i];
        json_t *d =
            json_pack("{s:s, s:s, s:o, s:s?, s:s?}", "name", s->name, "transport",
                      s->url ? "http" : "stdio", "source", log_str(cfg->origins[i]), "agent",
                      cfg->agents ? cfg->agents[i] : NULL, "description", s->description);
        if (!d) {
            json_decref(list);
            return NULL;
        }
        if (s->url) {
            char *shown = url_redact(s->url);
            json_object_set_new(d, "url", json_string(shown ? shown : "?"));
            free(shown);
            json_object_set_new(d, "headers", servers_keys(s->headers, ':'));
        } else {
            json_t *args = json_array();
            for (size_t k = 0; s->args && s->args[k]; k++)
                json_array_append_new(args, json_string(s->args[k]));
            json_object_set_new(d, "command", json_string(s->command));
            json_object_set_new(d, "args", args);
            json_object_set_new(d, "env", servers_keys(s->env, '='));
            if (s->cwd)
                json_object_set_new(d, "cwd", json_string(s->cwd));
        }
        json_array_append_new(list, d);
    }
    json_t *skipped = json_array();
    for (size_t i = 0; skipped && i < cfg->n_skipped; i++) {
        const struct mcp_config_skip *k = &cfg->skipped[i];
        if (json_array_append_new(skipped,
                                  json_pack("{s:o?, s:o?, s:s, s:o?}", "name", log_str(k->name),
                                            "source", log_str(k->source), "kind", k->kind, "reason",
                                            log_str(k->reason))) < 0) {
            json_decref(skipped);
            skipped = NULL;
        }
    }
    /* "o" fails on a NULL list or skipped: the caller's NULL check covers them too */
    return json_pack("{s:o, s:o, s:{s:o?, s:b, s:o?}}", "servers", list, "skipped", skipped,
                     "project", "directory", log_str(cwd), "trusted", cfg->project_trusted,
                     "trustFile", log_str(trust_file));
}

/* Text for people: control characters of names from files become '?'. */
static void servers_put(const char *s)
{
    for (; s && *s; s++)
        putchar((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s);
}

static void servers_print(json_t *doc)
{
    json_t *list = json_object_get(doc, "servers");
    json_t *skipped = json_object_get(doc, "skipped");
    printf("MCP servers (%zu):\n", json_array_size(list));
    size_t i;
    json_t *d;
    json_array_foreach(list, i, d)
    {
        printf("  ");
        servers_put(json_string_value(json_object_get(d, "name")));
        const char *url = json_string_value(json_object_get(d, "url"));
        printf("  [%s]  ", json_string_value(json_object_get(d, "transport")));
        if (url) {
            servers_put(url);
        } else {
            servers_put(json_string_value(json_object_get(d, "command")));
            size_t k;
            json_t *a;
            json_array_foreach(json_object_get(d, "args"), k, a)
            {
                putchar(' ');
                servers_put(json_string_value(a));
            }
        }
        printf("\n      from ");
        servers_put(json_string_value(json_object_get(d, "source")));
        const char *agent = json_string_value(json_object_get(d, "agent"));
        if (agent) {
            printf(" (");
            servers_put(agent);
            putchar(')');
        }
        putchar('\n');
    }
    printf("Skipped (%zu):\n", json_array_size(skipped));
    json_array_foreach(skipped, i, d)
    {
        const char *name = json_string_value(json_object_get(d, "name"));
        printf("  ");
        servers_put(name ? name : "(whole file)");
        printf("  [%s]  ", json_string_value(json_object_get(d, "kind")));
        servers_put(json_string_value(json_object_get(d, "reason")));
        printf("\n      in ");
        servers_put(json_string_value(json_object_get(d, "source")));
        putchar('\n');
    }
    json_t *p = json_object_get(doc, "project");
    const char *dir = json_string_value(json_object_get(p, "directory"));
    const char *tf = json_string_value(json_object_get(p, "trustFile"));
    printf("Project directory ");
    servers_put(dir ? dir : "?");
    if (json_is_true(json_object_get(p, "trusted"))) {
        printf(": trusted\n");
    } else {
        printf(": not trusted (pass --mcp-trust-project, or add it to ");
        servers_put(tf ? tf : "the trusted project list");
        printf(")\n");
    }
}

int cmd_servers(int argc, char **argv)
{
    static const struct option opts[] = {
        SERVERS_OPTIONS(SERVERS_LONG_X_, SERVERS_LONG_S_, SERVERS_LONG_C_){"help", no_argument,
                                                                           NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct setup_opts o;
    setup_opts_init(&o);
    bool as_json = false;
    /* Problems only, unless asked: the listing itself is the report. */
    log_set_level(LOG_WARN);
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        enum log_level level;
        if (c == SERVERS_OPT_JSON) {
            as_json = true;
        } else if (c == COMMON_OPT_LOG_LEVEL) {
            if (log_level_parse(optarg, &level) < 0) {
                fprintf(stderr, "sandboxd servers: --log-level: expected debug, info, warn or "
                                "error\n");
                return 2;
            }
            log_set_level(level);
        } else if (c == 'h') {
            fputs(servers_usage, stdout);
            return 0;
        } else if (setup_opt(&o, c, optarg) <= 0) {
            fputs(servers_usage, stderr);
            return 2;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "sandboxd servers: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    struct mcp_config cfg = {0};
    if (setup_mcp_config(&o, &cfg) < 0)
        return 1;
    char cwd[4096];
    _cleanup_free_ char *trust_file = setup_trust_file();
    json_t *doc = servers_describe(&cfg, getcwd(cwd, sizeof(cwd)), trust_file);
    mcp_config_done(&cfg);
    if (!doc) {
        fprintf(stderr, "sandboxd servers: out of memory\n");
        return 1;
    }
    int status = 0;
    if (as_json) {
        char *text = jdump(doc, JSON_INDENT(2), NULL);
        if (text)
            puts(text);
        else
            status = 1;
        free(text);
    } else {
        servers_print(doc);
    }
    json_decref(doc);
    if (fflush(stdout) != 0)
        status = 1;
    return status;
}
