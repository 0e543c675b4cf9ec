// SPDX-License-Identifier: MIT
/* Unit tests: tenant/tenant — the strict loading of a tenants file (every kind of mistake refuses
 * the start), finding a tenant by token, the per-tenant limits and the metrics. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tenant/tenant.h"
#include "util/buf.h"
#include "util/log.h"

static char dir[] = "/tmp/tenant-test-XXXXXX";
static char path[PATH_MAX];

static void put(const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
}

static struct tenant *find(struct tenants *ts, const char *token)
{
    unsigned char h[TENANT_HASH_LEN];
    tenant_token_hash(token, strlen(token), h);
    return tenants_find(ts, h);
}

static void tenants_valid_file(void **state)
{
    put("{\"tenants\": {\"team-a\": {\"token\": \"aaaaaaaaaaaaaaaaaaaa\", \"maxSessions\": 1, "
        "\"maxRunning\": 2}, \"team-b\": {\"token\": \"bbbbbbbbbbbbbbbbbbbb\"}}}",
        0600);
    struct tenants *ts = NULL;
    assert_int_equal(tenants_load(path, &ts), 0);
    assert_int_equal(tenants_count(ts), 2);
    struct tenant *a = find(ts, "aaaaaaaaaaaaaaaaaaaa");
    struct tenant *b = find(ts, "bbbbbbbbbbbbbbbbbbbb");
    assert_non_null(a);
    assert_non_null(b);
    assert_string_equal(tenant_name(a), "team-a");
    assert_string_equal(tenant_name(b), "team-b");
    assert_null(find(ts, "aaaaaaaaaaaaaaaaaaa"));   /* a prefix is not the token */
    assert_null(find(ts, "aaaaaaaaaaaaaaaaaaaaa")); /* nor a longer one */
    assert_null(tenant_name(NULL));

    /* maxSessions 1, maxRunning 2; team-b has no limits of its own; NULL is the operator. */
    assert_int_equal(tenant_max_sessions(a), 1);
    assert_true(tenant_session_claim(a));
    assert_false(tenant_session_claim(a));
    tenant_session_release(a);
    assert_true(tenant_session_claim(a));
    assert_true(tenant_run_begin(a, "JIT"));
    assert_true(tenant_run_begin(a, "session"));
    assert_false(tenant_run_begin(a, "JIT"));
    tenant_run_end(a);
    assert_true(tenant_run_begin(a, "EXECUTOR"));
    for (int i = 0; i < 100; i++)
        assert_true(tenant_run_begin(b, "JIT"));
    assert_true(tenant_run_begin(NULL, "JIT"));
    assert_true(tenant_session_claim(NULL));

    /* Metrics: all tenants for the operator, one tenant's own series for that tenant. */
    struct buf out;
    buf_init(&out, 1 << 20);
    assert_int_equal(tenants_metrics(ts, NULL, &out), 0);
    assert_non_null(strstr(
        out.data, "sandboxd_tenant_executions_total{tenant=\"team-a\",handler=\"JIT\"} 1\n"));
    assert_non_null(strstr(out.data, "sandboxd_tenant_running{tenant=\"team-a\"} 2\n"));
    assert_non_null(strstr(out.data, "sandboxd_tenant_sessions{tenant=\"team-a\"} 1\n"));
    assert_non_null(strstr(
        out.data, "sandboxd_tenant_refused_total{tenant=\"team-a\",limit=\"maxRunning\"} 1\n"));
    assert_non_null(strstr(
        out.data, "sandboxd_tenant_refused_total{tenant=\"team-a\",limit=\"maxSessions\"} 1\n"));
    assert_non_null(strstr(out.data, "sandboxd_tenant_running{tenant=\"team-b\"} 100\n"));
    buf_reset(&out);
    assert_int_equal(tenants_metrics(ts, b, &out), 0);
    assert_null(strstr(out.data, "team-a"));
    assert_non_null(strstr(out.data, "team-b"));
    buf_free(&out);
    tenants_free(ts);
    tenants_free(NULL);
}

static void tenants_shares(void **state)
{
    (void)state;
    put("{\"tenants\": {\"a\": {\"token\": \"aaaaaaaaaaaaaaaaaaaa\", \"maxSessions\": 2}, "
        "\"b\": {\"token\": \"bbbbbbbbbbbbbbbbbbbb\", \"maxSessions\": 2, \"maxMcpSessions\": 3, "
        "\"quotaMb\": 5, \"maxWorkspaces\": 4096}, \"c\": {\"token\": \"cccccccccccccccccccc\"}}}",
        0600);
    struct tenants *ts = NULL;
    assert_int_equal(tenants_load(path, &ts), 0);
    struct tenant *a = find(ts, "aaaaaaaaaaaaaaaaaaaa"), *b = find(ts, "bbbbbbbbbbbbbbbbbbbb");
    struct tenant *c = find(ts, "cccccccccccccccccccc");
    /* MCP sessions: maxMcpSessions, else maxSessions, counted apart from live sessions */
    assert_int_equal(tenant_max_mcp_sessions(a), 2);
    assert_int_equal(tenant_max_mcp_sessions(b), 3);
    assert_int_equal(tenant_max_mcp_sessions(c), 0);
    assert_true(tenant_session_claim(a));
    assert_true(tenant_session_claim(a));
    assert_true(tenant_mcp_session_claim(a));
    assert_true(tenant_mcp_session_claim(a));
    assert_false(tenant_mcp_session_claim(a));
    tenant_mcp_session_release(a);
    assert_true(tenant_mcp_session_claim(a));
    for (int i = 0; i < 100; i++)
        assert_true(tenant_mcp_session_claim(c));
    assert_true(tenant_mcp_session_claim(NULL));
    /* the store's shares: 0 where the file sets none */
    assert_int_equal(tenant_quota_mb(a), 0);
    assert_int_equal(tenant_max_workspaces(a), 0);
    assert_int_equal(tenant_quota_mb(b), 5);
    assert_int_equal(tenant_max_workspaces(b), TENANT_MAX_WORKSPACES);
    struct buf out;
    buf_init(&out, 1 << 20);
    assert_int_equal(tenants_metrics(ts, a, &out), 0);
    assert_non_null(strstr(out.data, "sandboxd_tenant_mcp_sessions{tenant=\"a\"} 2\n"));
    assert_non_null(strstr(
        out.data, "sandboxd_tenant_refused_total{tenant=\"a\",limit=\"maxMcpSessions\"} 1\n"));
    buf_free(&out);
    tenants_free(ts);
}

static void tenants_refuse_mistakes(void **state)
{
    static const char *const bad[] = {
        "",                                                        /* not JSON */
        "[]",                                                      /* not an object */
        "{\"tenants\": {}}",                                       /* no tenant */
        "{\"tenants\": {\"a\": {\"token\": \"t1\"}}, \"x\": 1}",   /* unknown top-level key */
        "{\"tenants\": {\"a\": {\"token\": \"t1\", \"max\": 1}}}", /* unknown tenant key */
        "{\"tenants\": {\"a\": {}}}",                              /* no token */
        "{\"tenants\": {\"a\": {\"token\": \"\"}}}",               /* empty token */
        "{\"tenants\": {\"a\": {\"token\": \"has space\"}}}",      /* unusable in a header */
        "{\"tenants\": {\"a\": {\"token\": 5}}}",                  /* not a string */
        "{\"tenants\": {\"a\": {\"token\": \"t1\"}, \"b\": {\"token\": \"t1\"}}}", /* same token */
        "{\"tenants\": {\"a\": {\"token\": \"t1\"}, \"a\": {\"token\": \"t2\"}}}", /* same name */
        "{\"tenants\": {\"../x\": {\"token\": \"t1\"}}}",                  /* name that is a path */
        "{\"tenants\": {\".a\": {\"token\": \"t1\"}}}",                    /* hidden name */
        "{\"tenants\": {\"a\": {\"token\": \"t1\", \"maxSessions\": 0}}}", /* limit too small */
        "{\"tenants\": {\"a\": {\"token\": \"t1\", \"maxRunning\": \"2\"}}}", /* limit not int */
        "{\"tenants\": {\"a\": \"t1\"}}", /* entry not an object */
        "{\"tenants\": {\"a\": {\"token\": \"t1\", \"maxWorkspaces\": 4097}}}", /* too many */
        "{\"tenants\": {\"a\": {\"token\": \"t1\", \"quotaMb\": 0}}}",
        "{\"tenants\": {\"a\": {\"token\": \"t1\", \"maxMcpSessions\": -1}}}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        put(bad[i], 0600);
        struct tenants *ts = NULL;
        assert_int_equal(tenants_load(path, &ts), -EINVAL);
        assert_null(ts);
    }
    /* A file that others may write: whoever can write it can make themselves a tenant. */
    put("{\"tenants\": {\"a\": {\"token\": \"t1\"}}}", 0622);
    struct tenants *ts = NULL;
    assert_int_equal(tenants_load(path, &ts), -EINVAL);
    char missing[PATH_MAX + 16];
    snprintf(missing, sizeof(missing), "%s/missing.json", dir);
    assert_int_equal(tenants_load(missing, &ts), -EINVAL);
}

int main(void)
{
    log_set_level(LOG_OFF);
    if (!mkdtemp(dir))
        return 1;
    snprintf(path, sizeof(path), "%s/tenants.json", dir);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tenants_valid_file),
        cmocka_unit_test(tenants_refuse_mistakes),
        cmocka_unit_test(tenants_shares),
    };
    int r = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(path);
    rmdir(dir);
    return r;
}
