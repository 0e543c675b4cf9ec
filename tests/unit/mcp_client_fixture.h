// SPDX-License-Identifier: MIT
/* What the unit tests of the MCP client share (mcp_client_fixture.c): the fake servers of
 * tests/unit/fixtures/ (found through MESON_SOURCE_ROOT when set, else next to this source
 * file), the Streamable HTTP one started by setup_http(), configurations, connections, captured
 * logs and notifications. */
#ifndef SANDBOXD_TESTS_MCP_CLIENT_FIXTURE_H
#define SANDBOXD_TESTS_MCP_CLIENT_FIXTURE_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "mcpclient/client.h"
#include "mcpclient/config.h"
#include "framework/httpc.h"
#include "proto/jsonrpc.h"
#include "mcpclient/registry.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/macros.h"

extern char **environ;

extern char fixtures[PATH_MAX];
extern char stdio_script[PATH_MAX];
extern char http_url[128];
extern pid_t http_pid;
extern int http_stdin;
extern char tmpdir[PATH_MAX]; /* a test's scratch directory */

/* Log lines written while capturing go to a temporary file instead of stderr. */
struct capture {
    int saved;
    int fd;
    enum log_level level;
};
struct notes {
    pthread_mutex_t lock;
    json_t *seen; /* [[method, params], ...] */
};

/* What each test program's main() does first, as sandboxd's does: SIGPIPE ignored; the log
 * level LOG_ERROR, or SANDBOXD_TEST_LOG's. */
void fixture_process_init(void);
void fmt(char *buf, size_t size, const char *f, ...) __attribute__((format(printf, 3, 4)));
bool file_exists(const char *path);
bool try_fixtures(const char *dir);
int find_fixtures(void);
char **strv(const char *first, ...);
void cfg_stdio(struct mcp_server_config *c, const char *name, const char *mode);
void cfg_http(struct mcp_server_config *c, const char *name);
struct mcp_client *connect_ok(struct mcp_server_config *cfg);
struct mcp_client *connect_stdio(const char *mode);
struct mcp_client *connect_http(void);
void connect_fails(struct mcp_server_config *cfg, int64_t timeout_ms, enum sbx_upstream kind);
char *call_text(struct mcp_client *c, const char *tool, json_t *args, int64_t timeout_ms, struct sbx_error *err);
json_t *stats(struct mcp_client *c);
bool has_notification(json_t *st, const char *method);
int64_t ms_since(int64_t start_us);
void sleep_ms(long ms);
void capture_start(struct capture *cap);
char *capture_end(struct capture *cap);
void note_cb(void *userdata, const char *method, json_t *params);
bool noted(struct notes *n, const char *method);
int start_http_server(void);
int setup(void **state);
int teardown(void **state);
void run_concurrently(struct mcp_client *c, const char *tool, int threads, int calls);
/* Write content to tmpdir/rel, making its directories. */
void write_file(const char *rel, const char *content);
const struct mcp_server_config *find_server(const struct mcp_config *cfg, const char *name);
void rm_rf(const char *dir);

#endif
