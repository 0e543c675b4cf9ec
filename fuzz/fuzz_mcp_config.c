// SPDX-License-Identifier: MIT
/*
 * fuzz_mcp_config — MCP configuration files (mcpclient/config.c): the input is
 * the text of the --mcp-config file and, with discovery, of ~/.claude.json
 * too (with a "projects" entry for the working directory). A file is
 * refused as a whole only when it is the explicit one; otherwise every
 * server that comes out is well formed (a valid name, exactly one of
 * command and url, an http(s) URL, "K=V" variables, "Name: value" headers,
 * lists within their caps), copies equal, and the registry built from it
 * lists the same names without connecting anything.
 *
 * Input: a byte of choices, then the file's JSON.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fuzz.h"
#include "mcpclient/alias.h"
#include "mcpclient/config.h"
#include "mcpclient/registry.h"

static char file[128];

static void write_file(const char *path, const uint8_t *data, size_t len)
{
    FILE *f = fopen(path, "we");
    FUZZ_CHECK(f && (len == 0 || fwrite(data, len, 1, f) == 1) && fclose(f) == 0);
}

static size_t list_len(char *const *v)
{
    size_t n = 0;
    while (v && v[n])
        n++;
    return n;
}

static bool list_equal(char *const *a, char *const *b)
{
    size_t n = list_len(a);
    if (n != list_len(b) || !a != !b)
        return false;
    for (size_t i = 0; i < n; i++)
        if (strcmp(a[i], b[i]) != 0)
            return false;
    return true;
}

static bool str_equal(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

static void check_server(const struct mcp_server_config *s)
{
    size_t nlen = strlen(s->name);
    FUZZ_CHECK(nlen > 0 && nlen <= MCP_CONFIG_MAX_NAME);
    for (const unsigned char *p = (const unsigned char *)s->name; *p; p++)
        FUZZ_CHECK(*p >= 0x20 && *p != 0x7f);
    FUZZ_CHECK(!s->command != !s->url);
    if (s->url)
        FUZZ_CHECK(strncasecmp(s->url, "http://", 7) == 0 ||
                   strncasecmp(s->url, "https://", 8) == 0);
    if (s->command)
        FUZZ_CHECK(*s->command && !s->headers);
    else
        FUZZ_CHECK(!s->args && !s->env && !s->cwd);
    FUZZ_CHECK(list_len(s->args) <= MCP_CONFIG_MAX_LIST && list_len(s->env) <= MCP_CONFIG_MAX_LIST);
    FUZZ_CHECK(list_len(s->headers) <= MCP_CONFIG_MAX_LIST);
    for (char **e = s->env; e && *e; e++)
        FUZZ_CHECK(**e != '=' && strchr(*e, '='));
    for (char **h = s->headers; h && *h; h++) {
        const char *colon = strstr(*h, ": ");
        FUZZ_CHECK(colon && colon > *h && !strpbrk(*h, "\r\n"));
    }
    struct mcp_server_config copy;
    FUZZ_CHECK(mcp_server_config_copy(s, &copy) == 0);
    FUZZ_CHECK(str_equal(copy.name, s->name) && str_equal(copy.command, s->command) &&
               str_equal(copy.url, s->url) && str_equal(copy.cwd, s->cwd) &&
               str_equal(copy.description, s->description));
    FUZZ_CHECK(list_equal(copy.args, s->args) && list_equal(copy.env, s->env) &&
               list_equal(copy.headers, s->headers));
    mcp_server_config_done(&copy);
    json_t *alias = mcp_alias_json(s->name);
    FUZZ_CHECK(json_is_string(alias));
    json_decref(alias);
}

void fuzz_init(void)
{
    snprintf(file, sizeof(file), "%s/.claude.json", fuzz_tmpdir());
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in = {data, size};
    uint8_t choice = fuzz_byte(&in);
    bool discover = choice & 1;
    write_file(file, in.data, in.len);
    struct mcp_config cfg;
    /* ~/.claude.json as the explicit file too, or only discovered (then never fatal) */
    const char *explicit_paths[] = {file, NULL};
    struct mcp_config_options opt = {.explicit_paths = discover ? NULL : explicit_paths,
                                     .discover = discover,
                                     .cwd = "/p",
                                     .home = fuzz_tmpdir()};
    int r = mcp_config_load(&opt, &cfg);
    if (discover)
        FUZZ_CHECK(r == 0);
    if (r < 0) {
        FUZZ_CHECK(r == -EINVAL || r == -ENOMEM);
        return 0;
    }
    FUZZ_CHECK(cfg.n <= MCP_CONFIG_MAX_SERVERS && cfg.sources);
    FUZZ_CHECK(cfg.n == 0 || (cfg.sources[0] && strcmp(cfg.sources[0], file) == 0));
    for (size_t i = 0; i < cfg.n; i++) {
        check_server(&cfg.servers[i]);
        for (size_t k = 0; k < i; k++)
            FUZZ_CHECK(strcmp(cfg.servers[i].name, cfg.servers[k].name) != 0);
    }
    struct mcp_registry *reg;
    FUZZ_CHECK(mcp_registry_new(&cfg, &reg) == 0);
    json_t *names = mcp_registry_names(reg);
    FUZZ_CHECK(json_array_size(names) == cfg.n);
    for (size_t i = 0; i < cfg.n; i++)
        FUZZ_CHECK(strcmp(json_string_value(json_array_get(names, i)), cfg.servers[i].name) == 0);
    char *unknown = mcp_registry_check_names(reg, names);
    FUZZ_CHECK(unknown == NULL);
    json_t *described = mcp_registry_describe(reg);
    FUZZ_CHECK(json_array_size(described) == cfg.n);
    json_decref(described);
    json_decref(names);
    mcp_registry_free(reg);
    mcp_config_done(&cfg);
    return 0;
}
