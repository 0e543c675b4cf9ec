// SPDX-License-Identifier: MIT
/* Unit tests: the MCP configuration: formats, invalid entries, discovery and its precedence, the
 * compat sources. Shared set-up in mcp_client_fixture.c. */
#include "mcp_client_fixture.h"

/* ---- configuration ---- */

static int load_config(const char *explicit_path, bool discover, bool trust_project,
                       const char *cwd, const char *home, const char *trust_file,
                       struct mcp_config *cfg)
{
    const char *paths[] = {explicit_path, NULL};
    struct mcp_config_options o = {.explicit_paths = paths,
                                   .discover = discover,
                                   .trust_project = trust_project,
                                   .cwd = cwd,
                                   .home = home,
                                   .trust_file = trust_file};
    return mcp_config_load(&o, cfg);
}

static void config_formats_and_invalid_entries(void **state)
{
    fmt(tmpdir, sizeof(tmpdir), "/tmp/mcp-config-XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    write_file("explicit.json",
               "{\"mcpServers\": {"
               " \"files\": {\"command\": \"npx\", \"args\": [\"-y\", \"server\"],"
               "   \"env\": {\"TOKEN\": \"t\"}, \"cwd\": \"/srv\", \"description\": \"Files\"},"
               " \"web\": {\"url\": \"https://example.com/mcp\","
               "   \"headers\": {\"Authorization\": \"Bearer x\"}},"
               " \"typed\": {\"type\": \"http\", \"url\": \"http://localhost:1/mcp\"},"
               " \"\": {\"command\": \"x\"},"
               " \"n2345678901234567890123456789012345678901234567890123456789012345\": "
               "{\"command\": \"x\"},"
               " \"both\": {\"command\": \"x\", \"url\": \"http://a\"},"
               " \"neither\": {\"args\": []},"
               " \"badargs\": {\"command\": \"x\", \"args\": \"nope\"},"
               " \"badenv\": {\"command\": \"x\", \"env\": {\"A\": 1}},"
               " \"ftp\": {\"url\": \"ftp://x\"},"
               " \"legacy\": {\"type\": \"sse\", \"url\": \"http://x/sse\"},"
               " \"off\": {\"command\": \"x\", \"disabled\": true},"
               " \"mismatch\": {\"type\": \"stdio\", \"url\": \"http://x\"},"
               " \"badheader\": {\"url\": \"http://x\", \"headers\": {\"A\": \"b\\r\\nC: d\"}},"
               " \"notobj\": 3"
               "}}");
    char path[PATH_MAX + 32];
    fmt(path, sizeof(path), "%s/explicit.json", tmpdir);
    struct mcp_config cfg = {0};
    assert_int_equal(load_config(path, false, false, NULL, NULL, NULL, &cfg), 0);
    assert_int_equal(cfg.n, 3);
    assert_string_equal(cfg.servers[0].name, "files"); /* config order */
    const struct mcp_server_config *s = find_server(&cfg, "files");
    assert_string_equal(s->command, "npx");
    assert_string_equal(s->args[0], "-y");
    assert_string_equal(s->args[1], "server");
    assert_null(s->args[2]);
    assert_string_equal(s->env[0], "TOKEN=t");
    assert_string_equal(s->cwd, "/srv");
    assert_string_equal(s->description, "Files");
    assert_null(s->url);
    s = find_server(&cfg, "web");
    assert_string_equal(s->url, "https://example.com/mcp");
    assert_string_equal(s->headers[0], "Authorization: Bearer x");
    assert_null(s->command);
    assert_non_null(find_server(&cfg, "typed"));
    assert_string_equal(cfg.sources[0], path);
    assert_null(cfg.sources[1]);

    /* Copy round trip. */
    struct mcp_server_config copy;
    assert_int_equal(mcp_server_config_copy(&cfg.servers[0], &copy), 0);
    assert_string_equal(copy.env[0], "TOKEN=t");
    mcp_server_config_done(&copy);
    mcp_config_done(&cfg);

    /* VS Code format through --mcp-config ("servers"). */
    write_file("vscode-style.json",
               "{\"servers\": {\"v\": {\"type\": \"stdio\", \"command\": \"c\"}}, \"inputs\": []}");
    fmt(path, sizeof(path), "%s/vscode-style.json", tmpdir);
    assert_int_equal(load_config(path, false, false, NULL, NULL, NULL, &cfg), 0);
    assert_int_equal(cfg.n, 1);
    mcp_config_done(&cfg);

    /* A missing, unparsable or shapeless explicit file is an error. */
    fmt(path, sizeof(path), "%s/missing.json", tmpdir);
    assert_int_equal(load_config(path, false, false, NULL, NULL, NULL, &cfg), -ENOENT);
    write_file("broken.json", "{\"mcpServers\": ");
    fmt(path, sizeof(path), "%s/broken.json", tmpdir);
    assert_int_equal(load_config(path, false, false, NULL, NULL, NULL, &cfg), -EINVAL);
    write_file("shapeless.json", "{\"other\": {}}");
    fmt(path, sizeof(path), "%s/shapeless.json", tmpdir);
    assert_int_equal(load_config(path, false, false, NULL, NULL, NULL, &cfg), -EINVAL);

    /* Nothing at all is fine. */
    assert_int_equal(load_config(NULL, false, false, NULL, NULL, NULL, &cfg), 0);
    assert_int_equal(cfg.n, 0);
    assert_non_null(cfg.sources);
    assert_null(cfg.sources[0]);
    mcp_config_done(&cfg);
    mcp_config_done(NULL);
    rm_rf(tmpdir);
}

static const struct mcp_config_skip *find_skip(const struct mcp_config *cfg, const char *name,
                                               const char *source_part)
{
    for (size_t i = 0; i < cfg->n_skipped; i++)
        if (cfg->skipped[i].name && strcmp(cfg->skipped[i].name, name) == 0 &&
            strstr(cfg->skipped[i].source, source_part))
            return &cfg->skipped[i];
    return NULL;
}

static size_t count_sources(const struct mcp_config *cfg)
{
    size_t n = 0;
    while (cfg->sources[n])
        n++;
    return n;
}

/* What mcp-server-code-execution-mode's users bring: several --mcp-config files (a later one
 * wins), ~/MCPs and $MCP_SERVERS_CONFIG, the agents' files in their own spellings, a file-wide
 * description, and entries that would start the bridge itself. */
static const struct mcp_config_skip *find_skip_file(const struct mcp_config *cfg,
                                                    const char *source_part)
{
    for (size_t i = 0; i < cfg->n_skipped; i++)
        if (!cfg->skipped[i].name && strstr(cfg->skipped[i].source, source_part))
            return &cfg->skipped[i];
    return NULL;
}

static void config_compat_sources(void **state)
{
    fmt(tmpdir, sizeof(tmpdir), "/tmp/mcp-compat-XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    char home[PATH_MAX + 16], a[PATH_MAX + 32], b[PATH_MAX + 32], env[PATH_MAX + 32];
    fmt(home, sizeof(home), "%s/home", tmpdir);
    fmt(a, sizeof(a), "%s/a.json", tmpdir);
    fmt(b, sizeof(b), "%s/b.json", tmpdir);
    fmt(env, sizeof(env), "%s/env.json", tmpdir);
    write_file("a.json", "{\"mcpServers\": {\"one\": {\"command\": \"a1\"},"
                         " \"two\": {\"command\": \"a2\"}}}");
    write_file("b.json", "{\"mcpServers\": {\"one\": {\"command\": \"b1\"},"
                         " \"bad\": {\"command\": 3}}}");
    write_file("env.json", "{\"mcpServers\": {\"envsrv\": {\"command\": \"e\"},"
                           " \"mine\": {\"command\": \"from-env\"}}}");
    write_file("home/MCPs/m.json",
               "{\"description\": \"file-wide\", \"mcpServers\": {"
               " \"mine\": {\"command\": \"m\"}, \"own\": {\"command\": \"o\","
               " \"description\": \"its own\"},"
               " \"bridge\": {\"command\": \"uvx\", \"args\": [\"--from\","
               " \"git+https://github.com/elusznik/mcp-server-code-execution-mode\","
               " \"mcp-server-code-execution-mode\", \"run\"]},"
               " \"me\": {\"command\": \"/opt/bin/sandboxd\", \"args\": [\"mcp\"]},"
               " \"serve\": {\"command\": \"/opt/bin/sandboxd\", \"args\": [\"serve\"]},"
               " \"py\": {\"command\": \"python\", \"args\": "
               "[\"/x/MCP_SERVER_CODE_EXECUTION_MODE.PY\"]}}}");
    write_file("home/.codeium/windsurf/mcp_config.json",
               "{\"mcpServers\": {\"surf\": {\"serverUrl\": \"http://localhost:1/mcp\"}}}");
    write_file("home/.gemini/settings.json",
               "{\"mcpServers\": {\"gem\": {\"httpUrl\": \"http://localhost:2/mcp\"},"
               " \"gemsse\": {\"url\": \"http://localhost:2/sse\"}}}");
    write_file("home/.config/Code/User/settings.json",
               "{\n // comment\n \"mcp\": {\"servers\": {\"vsc\": {\"type\": \"stdio\","
               " \"command\": \"node\",},},},\n}");
    write_file("home/.codex/config.toml",
               "[mcp_servers.cdx]\ncommand = \"c\"\nenv_vars = [\"SANDBOXD_TEST_PASS\","
               " \"SANDBOXD_TEST_UNSET\"]\n[mcp_servers.cdxweb]\nurl = \"http://localhost:3/mcp\"\n"
               "bearer_token_env_var = \"SANDBOXD_TEST_PASS\"\n"
               "env_http_headers = { X-Key = \"SANDBOXD_TEST_UNSET\" }\n");
    write_file("home/.opencode.json", "{\"theme\": \"dark\"}"); /* no servers: no noise */
    assert_int_equal(setenv("SANDBOXD_TEST_PASS", "secret", 1), 0);
    unsetenv("SANDBOXD_TEST_UNSET");

    const char *paths[] = {a, b, NULL};
    struct mcp_config_options o = {
        .explicit_paths = paths, .env_path = env, .discover = true, .home = home};
    struct mcp_config cfg = {0};
    assert_int_equal(mcp_config_load(&o, &cfg), 0);
    assert_string_equal(find_server(&cfg, "one")->command, "b1"); /* the later file wins */
    assert_string_equal(cfg.servers[0].name, "one");              /* in its first place */
    assert_string_equal(cfg.origins[0], b);
    assert_string_equal(find_skip(&cfg, "one", "/a.json")->kind, "replaced");
    assert_string_equal(find_server(&cfg, "two")->command, "a2");
    assert_string_equal(find_skip(&cfg, "bad", "/b.json")->kind, "invalid");
    /* ~/MCPs before $MCP_SERVERS_CONFIG; file-wide descriptions fill in. */
    assert_string_equal(find_server(&cfg, "mine")->command, "m");
    assert_string_equal(find_server(&cfg, "mine")->description, "file-wide");
    assert_string_equal(find_server(&cfg, "own")->description, "its own");
    assert_string_equal(find_skip(&cfg, "mine", "/env.json")->kind, "shadowed");
    assert_non_null(find_server(&cfg, "envsrv"));
    assert_null(find_server(&cfg, "bridge"));
    assert_null(find_server(&cfg, "me"));
    assert_null(find_server(&cfg, "py"));
    assert_string_equal(find_skip(&cfg, "bridge", "/m.json")->kind, "self");
    assert_string_equal(find_skip(&cfg, "me", "/m.json")->kind, "self");
    assert_non_null(find_server(&cfg, "serve")); /* not an MCP server of ours: not a loop */
    /* Spellings. */
    assert_string_equal(find_server(&cfg, "surf")->url, "http://localhost:1/mcp");
    assert_string_equal(find_server(&cfg, "gem")->url, "http://localhost:2/mcp");
    assert_null(find_server(&cfg, "gemsse"));
    assert_non_null(strstr(find_skip(&cfg, "gemsse", "settings.json")->reason, "SSE"));
    assert_string_equal(find_server(&cfg, "vsc")->command, "node");
    const struct mcp_server_config *cdx = find_server(&cfg, "cdx");
    assert_string_equal(cdx->env[0], "SANDBOXD_TEST_PASS=secret");
    assert_null(cdx->env[1]);
    const struct mcp_server_config *web = find_server(&cfg, "cdxweb");
    assert_string_equal(web->headers[0], "Authorization: Bearer secret");
    assert_null(web->headers[1]);
    for (size_t i = 0; i < cfg.n; i++)
        if (strcmp(cfg.servers[i].name, "cdx") == 0)
            assert_string_equal(cfg.agents[i], "Codex");
    for (size_t i = 0; i < cfg.n_skipped; i++)
        assert_null(strstr(cfg.skipped[i].source, ".opencode.json"));
    mcp_config_done(&cfg);

    /* The switch keeps them; a bad $MCP_SERVERS_CONFIG is recorded and stops nothing. */
    write_file("env.json", "{\"mcpServers\": ");
    o.allow_self = true;
    assert_int_equal(mcp_config_load(&o, &cfg), 0);
    assert_non_null(find_server(&cfg, "bridge"));
    assert_non_null(find_server(&cfg, "me"));
    assert_null(find_server(&cfg, "envsrv"));
    assert_string_equal(find_skip_file(&cfg, "/env.json")->kind, "invalid");
    mcp_config_done(&cfg);
    unsetenv("SANDBOXD_TEST_PASS");
    rm_rf(tmpdir);
}

static void config_discovery_precedence(void **state)
{
    fmt(tmpdir, sizeof(tmpdir), "/tmp/mcp-discover-XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    char cwd[PATH_MAX + 16], home[PATH_MAX + 16], explicit_path[PATH_MAX + 32];
    fmt(cwd, sizeof(cwd), "%s/project", tmpdir);
    fmt(home, sizeof(home), "%s/home", tmpdir);
    fmt(explicit_path, sizeof(explicit_path), "%s/explicit.json", tmpdir);
    write_file("explicit.json", "{\"mcpServers\": {\"shared\": {\"command\": \"explicit\"}}}");
    /* ./.mcp: b.json after a.json; not-json.txt ignored; broken.json skipped. */
    write_file("project/.mcp/b.json",
               "{\"mcpServers\": {\"shared\": {\"command\": \"dot-mcp-b\"},"
               " \"dotb\": {\"command\": \"b\"}, \"dup\": {\"command\": \"dot-mcp-b\"}}}");
    write_file("project/.mcp/a.json", "{\"mcpServers\": {\"dup\": {\"command\": \"dot-mcp-a\"}}}");
    write_file("project/.mcp/broken.json", "{");
    write_file("project/.mcp/not-json.txt", "{\"mcpServers\": {\"txt\": {\"command\": \"x\"}}}");
    write_file("home/.config/mcp/servers/one.json",
               "{\"mcpServers\": {\"dup\": {\"command\": \"config\"},"
               " \"cfgsrv\": {\"url\": \"http://localhost:9/mcp\"}}}");
    char claude[4096];
    fmt(claude, sizeof(claude),
        "{\"numStartups\": 3, \"mcpServers\": {\"user\": {\"command\": \"top\"},"
        " \"proj\": {\"command\": \"top\"}, \"cfgsrv\": {\"command\": \"claude\"}},"
        " \"projects\": {\"/elsewhere\": {\"mcpServers\": {\"other\": {\"command\": \"o\"}}},"
        " \"%s\": {\"mcpServers\": {\"proj\": {\"command\": \"project\"}}}}}",
        cwd);
    write_file("home/.claude.json", claude);
    write_file("home/.cursor/mcp.json", "{\"mcpServers\": {\"cursor\": {\"command\": \"cur\"},"
                                        " \"user\": {\"command\": \"cursor\"}}}");
    write_file("project/.vscode/mcp.json",
               "{\"servers\": {\"vs\": {\"type\": \"http\", \"url\": \"http://localhost:8/mcp\","
               " \"headers\": {\"X-A\": \"1\"}}, \"vsstdio\": {\"type\": \"stdio\","
               " \"command\": \"node\", \"args\": [\"s.js\"], \"env\": {\"K\": \"V\"}},"
               " \"cursor\": {\"command\": \"vscode\"}, \"legacy\": {\"type\": \"sse\","
               " \"url\": \"http://x\"}}}");

    /* Untrusted project (the default): the user's files only; the project's servers are
     * reported as skipped and never configured. */
    struct mcp_config cfg = {0};
    assert_int_equal(load_config(explicit_path, true, false, cwd, home, NULL, &cfg), 0);
    assert_false(cfg.project_trusted);
    assert_string_equal(find_server(&cfg, "shared")->command, "explicit");
    assert_string_equal(find_server(&cfg, "dup")->command, "config");
    assert_null(find_server(&cfg, "dotb"));
    assert_null(find_server(&cfg, "vs"));
    assert_null(find_server(&cfg, "vsstdio"));
    assert_null(find_server(&cfg, "txt"));
    assert_non_null(find_server(&cfg, "cfgsrv")->url);
    assert_string_equal(find_server(&cfg, "proj")->command, "project");
    assert_string_equal(find_server(&cfg, "user")->command, "top");
    assert_null(find_server(&cfg, "other"));
    assert_string_equal(find_server(&cfg, "cursor")->command, "cur");
    assert_int_equal(cfg.n, 6);
    assert_string_equal(find_skip(&cfg, "dotb", "/.mcp/b.json")->kind, "untrusted");
    assert_string_equal(find_skip(&cfg, "vsstdio", "/.vscode/mcp.json")->kind, "untrusted");
    assert_string_equal(find_skip(&cfg, "user", "/.cursor/mcp.json")->kind, "shadowed");
    assert_non_null(strstr(find_skip(&cfg, "user", "/.cursor/mcp.json")->reason, ".claude.json"));
    for (size_t i = 0; i < cfg.n; i++)
        assert_null(strstr(cfg.origins[i], "/project/")); /* nothing from the project */
    assert_int_equal(count_sources(&cfg), 4);             /* explicit, config, claude, cursor */
    mcp_config_done(&cfg);

    /* Trusted by flag: the project's servers join, but never over a user-level name. */
    assert_int_equal(load_config(explicit_path, true, true, cwd, home, NULL, &cfg), 0);
    assert_true(cfg.project_trusted);
    assert_string_equal(find_server(&cfg, "shared")->command, "explicit");
    assert_string_equal(find_server(&cfg, "dup")->command, "config");
    assert_string_equal(find_server(&cfg, "dotb")->command, "b");
    assert_string_equal(find_server(&cfg, "cursor")->command, "cur");
    const struct mcp_server_config *vs = find_server(&cfg, "vs");
    assert_string_equal(vs->url, "http://localhost:8/mcp");
    assert_string_equal(vs->headers[0], "X-A: 1");
    vs = find_server(&cfg, "vsstdio");
    assert_string_equal(vs->args[0], "s.js");
    assert_string_equal(vs->env[0], "K=V");
    assert_null(find_server(&cfg, "legacy"));
    assert_int_equal(cfg.n, 9);
    assert_string_equal(find_skip(&cfg, "dup", "/.mcp/a.json")->kind, "shadowed");
    assert_string_equal(find_skip(&cfg, "cursor", "/.vscode/mcp.json")->kind, "shadowed");
    assert_string_equal(find_skip(&cfg, "legacy", "/.vscode/mcp.json")->kind, "invalid");
    /* Order: explicit first, then the user's files, then the project's. */
    assert_string_equal(cfg.servers[0].name, "shared");
    assert_string_equal(cfg.servers[1].name, "dup");
    assert_non_null(strstr(cfg.origins[1], "/home/.config/mcp/servers/one.json"));
    /* Sources: explicit, config, claude, cursor, .mcp/b (a only shadowed), vscode. */
    assert_int_equal(count_sources(&cfg), 6);
    assert_string_equal(cfg.sources[0], explicit_path);
    assert_non_null(strstr(cfg.sources[4], "/.mcp/b.json"));
    assert_non_null(strstr(cfg.sources[5], "/.vscode/mcp.json"));
    mcp_config_done(&cfg);

    /* Trusted by the user's list: the project directory, or a directory above it. A list
     * that someone else could write is ignored. */
    char trust[PATH_MAX + 32];
    fmt(trust, sizeof(trust), "%s/trusted-projects", tmpdir);
    char list[PATH_MAX * 2];
    fmt(list, sizeof(list), "# trusted\n/nonexistent\n  %s  \n", tmpdir);
    write_file("trusted-projects", list);
    assert_int_equal(load_config(NULL, true, false, cwd, home, trust, &cfg), 0);
    assert_true(cfg.project_trusted);
    assert_string_equal(find_server(&cfg, "dotb")->command, "b");
    mcp_config_done(&cfg);
    assert_int_equal(chmod(trust, 0620), 0);
    assert_int_equal(load_config(NULL, true, false, cwd, home, trust, &cfg), 0);
    assert_false(cfg.project_trusted);
    assert_null(find_server(&cfg, "dotb"));
    mcp_config_done(&cfg);
    write_file("trusted-projects", "/elsewhere\n");
    assert_int_equal(chmod(trust, 0600), 0);
    assert_int_equal(load_config(NULL, true, false, cwd, home, trust, &cfg), 0);
    assert_false(cfg.project_trusted);
    mcp_config_done(&cfg);

    /* Discovery off: only the explicit file. cwd/home NULL: discovery finds nothing. */
    assert_int_equal(load_config(explicit_path, false, true, cwd, home, NULL, &cfg), 0);
    assert_int_equal(cfg.n, 1);
    mcp_config_done(&cfg);
    assert_int_equal(load_config(NULL, true, false, NULL, NULL, NULL, &cfg), 0);
    assert_int_equal(cfg.n, 0);
    mcp_config_done(&cfg);
    rm_rf(tmpdir);
}

int main(void)
{
    fixture_process_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(config_formats_and_invalid_entries),
        cmocka_unit_test(config_discovery_precedence),
        cmocka_unit_test(config_compat_sources),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
