// SPDX-License-Identifier: MIT
/*
 * test_approval — mcpclient/approval.c: the policy words, the precedence of rules (the first
 * rule naming the tool, then the first "*", else auto), --approval against the configured
 * servers (the longest name, dotted names, the command line before the entry), and the
 * malformed rules that must stop the start.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcpclient/approval.h"

static void test_words(void **state)
{
    (void)state;
    enum mcp_approval a;
    assert_int_equal(mcp_approval_parse("auto", &a), 0);
    assert_int_equal(a, MCP_APPROVAL_AUTO);
    assert_int_equal(mcp_approval_parse("ask", &a), 0);
    assert_int_equal(a, MCP_APPROVAL_ASK);
    assert_int_equal(mcp_approval_parse("deny", &a), 0);
    assert_int_equal(a, MCP_APPROVAL_DENY);
    assert_int_equal(mcp_approval_parse("Deny", &a), -EINVAL);
    assert_int_equal(mcp_approval_parse("", &a), -EINVAL);
    assert_int_equal(mcp_approval_parse(NULL, &a), -EINVAL);
    assert_string_equal(mcp_approval_name(MCP_APPROVAL_ASK), "ask");
}

static void test_lookup_precedence(void **state)
{
    (void)state;
    char *rules[] = {"deny:*", "ask:write", "auto:write", "auto:*", NULL};
    assert_int_equal(mcp_approval_lookup(rules, "write"), MCP_APPROVAL_ASK); /* named first */
    assert_int_equal(mcp_approval_lookup(rules, "read"), MCP_APPROVAL_DENY); /* then "*" */
    assert_int_equal(mcp_approval_lookup(NULL, "read"), MCP_APPROVAL_AUTO);
    char *none[] = {"ask:a.b", NULL};
    assert_int_equal(mcp_approval_lookup(none, "a"), MCP_APPROVAL_AUTO); /* exact names only */
    assert_int_equal(mcp_approval_lookup(none, "a.b"), MCP_APPROVAL_ASK);
}

static struct mcp_config two_servers(void)
{
    struct mcp_config cfg = {.n = 3};
    cfg.servers = calloc(3, sizeof(*cfg.servers));
    assert_non_null(cfg.servers);
    cfg.servers[0].name = strdup("fs");
    cfg.servers[1].name = strdup("fs.v2"); /* a name with a dot: the longest match wins */
    cfg.servers[2].name = strdup("mem");
    cfg.servers[2].approvals = calloc(2, sizeof(char *));
    cfg.servers[2].approvals[0] = strdup("auto:read_graph");
    return cfg;
}

static void test_command_line_rules(void **state)
{
    (void)state;
    struct mcp_config cfg = two_servers();
    struct sbx_error why = {0};
    assert_int_equal(mcp_config_add_approval(&cfg, "fs.write_file=ask", &why), 0);
    assert_int_equal(mcp_config_add_approval(&cfg, "fs.v2.*=deny", &why), 0);
    assert_int_equal(mcp_config_add_approval(&cfg, "mem.read_graph=deny", &why), 0);
    assert_int_equal(mcp_config_add_approval(&cfg, "mem.*=ask", &why), 0);
    assert_int_equal(mcp_approval_lookup(cfg.servers[0].approvals, "write_file"), MCP_APPROVAL_ASK);
    assert_int_equal(mcp_approval_lookup(cfg.servers[0].approvals, "read_file"), MCP_APPROVAL_AUTO);
    assert_int_equal(mcp_approval_lookup(cfg.servers[1].approvals, "anything"), MCP_APPROVAL_DENY);
    /* The command line comes before the entry's own rule (auto:read_graph). */
    assert_int_equal(mcp_approval_lookup(cfg.servers[2].approvals, "read_graph"),
                     MCP_APPROVAL_DENY);
    assert_int_equal(mcp_approval_lookup(cfg.servers[2].approvals, "other"), MCP_APPROVAL_ASK);
    /* The later option wins over the earlier one. */
    assert_int_equal(mcp_config_add_approval(&cfg, "fs.write_file=auto", &why), 0);
    assert_int_equal(mcp_approval_lookup(cfg.servers[0].approvals, "write_file"),
                     MCP_APPROVAL_AUTO);
    static const char *const bad[] = {
        "fs.write_file", "fs.write_file=maybe", "nope.x=ask", "fs=ask", "fs.=ask",
        "=ask",          "fsx.tool=ask"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(mcp_config_add_approval(&cfg, bad[i], &why), -EINVAL);
        assert_int_equal(why.kind, SBX_ERR_INVALID);
        assert_non_null(why.message);
        assert_non_null(strstr(why.message, bad[i]));
        sbx_error_clear(&why);
    }
    mcp_config_done(&cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_words),
        cmocka_unit_test(test_lookup_precedence),
        cmocka_unit_test(test_command_line_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
