// SPDX-License-Identifier: MIT
/* See mcp_client_fixture.h. */
#include "mcp_client_fixture.h"

char fixtures[PATH_MAX];
char stdio_script[PATH_MAX];
char http_url[128];
pid_t http_pid;
int http_stdin = -1;

/* ---- helpers ---- */

void fixture_process_init(void)
{
    signal(SIGPIPE, SIG_IGN); /* as sandboxd's main() does */
    enum log_level level = LOG_ERROR;
    const char *l = getenv("SANDBOXD_TEST_LOG");
    if (l)
        (void)log_level_parse(l, &level); /* an unknown name keeps the default */
    log_set_level(level);
}

/* snprintf that fails the test on truncation (paths built here must fit). */
void fmt(char *buf, size_t size, const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    int n = vsnprintf(buf, size, f, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= size) {
        fprintf(stderr, "path too long\n");
        abort();
    }
}

bool file_exists(const char *path)
{
    return access(path, R_OK) == 0;
}

bool try_fixtures(const char *dir)
{
    char probe[PATH_MAX];
    fmt(probe, sizeof(probe), "%s/fake_stdio_server.py", dir);
    if (!file_exists(probe) || !realpath(dir, fixtures))
        return false;
    fmt(stdio_script, sizeof(stdio_script), "%s/fake_stdio_server.py", fixtures);
    return true;
}

int find_fixtures(void)
{
    char dir[PATH_MAX];
    const char *root = getenv("MESON_SOURCE_ROOT");
    if (root) {
        fmt(dir, sizeof(dir), "%s/tests/unit/fixtures", root);
        if (try_fixtures(dir))
            return 0;
    }
    /* __FILE__ is the path the compiler was given: absolute, or relative to the build dir. */
    char src[PATH_MAX];
    fmt(src, sizeof(src), "%s", __FILE__);
    char *slash = strrchr(src, '/');
    if (slash)
        *slash = '\0';
    else
        fmt(src, sizeof(src), ".");
    fmt(dir, sizeof(dir), "%s/fixtures", src);
    if (try_fixtures(dir))
        return 0;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        for (int i = 0; i < 3; i++) { /* <build>/tests/unit/test_mcp_client → <build> */
            char *s = strrchr(exe, '/');
            if (s)
                *s = '\0';
        }
        fmt(dir, sizeof(dir), "%s/%s/fixtures", exe, src);
        if (try_fixtures(dir))
            return 0;
    }
    if (try_fixtures("tests/unit/fixtures"))
        return 0;
    fprintf(stderr, "cannot find tests/unit/fixtures; set MESON_SOURCE_ROOT\n");
    return -1;
}

char **strv(const char *first, ...)
{
    char **v = calloc(16, sizeof(*v));
    va_list ap;
    va_start(ap, first);
    size_t n = 0;
    for (const char *s = first; s && n < 15; s = va_arg(ap, const char *))
        v[n++] = strdup(s);
    va_end(ap);
    return v;
}

void cfg_stdio(struct mcp_server_config *c, const char *name, const char *mode)
{
    *c = (struct mcp_server_config){0};
    c->name = strdup(name);
    c->command = strdup("/usr/bin/python3");
    c->args = strv(stdio_script, mode, NULL);
}

void cfg_http(struct mcp_server_config *c, const char *name)
{
    *c = (struct mcp_server_config){0};
    c->name = strdup(name);
    c->url = strdup(http_url);
    c->headers = strv("X-Test: yes", NULL);
}

struct mcp_client *connect_ok(struct mcp_server_config *cfg)
{
    struct mcp_client *c = NULL;
    struct sbx_error err = {0};
    int r = mcp_client_connect(cfg, 10000, &c, &err);
    if (r < 0)
        fprintf(stderr, "connect: %s\n", err.message);
    assert_int_equal(r, 0);
    assert_non_null(c);
    sbx_error_clear(&err);
    return c;
}

struct mcp_client *connect_stdio(const char *mode)
{
    struct mcp_server_config cfg;
    cfg_stdio(&cfg, "fake", mode);
    struct mcp_client *c = connect_ok(&cfg);
    mcp_server_config_done(&cfg);
    return c;
}

struct mcp_client *connect_http(void)
{
    struct mcp_server_config cfg;
    cfg_http(&cfg, "web");
    struct mcp_client *c = connect_ok(&cfg);
    mcp_server_config_done(&cfg);
    return c;
}

/* Expect connect to fail with kind; returns the error message's presence. */
void connect_fails(struct mcp_server_config *cfg, int64_t timeout_ms, enum sbx_upstream kind)
{
    struct mcp_client *c = NULL;
    struct sbx_error err = {0};
    assert_true(mcp_client_connect(cfg, timeout_ms, &c, &err) < 0);
    assert_null(c);
    assert_int_equal(err.upstream, kind);
    assert_non_null(err.message);
    sbx_error_clear(&err);
}

/* tools/call and the text of its first content item (caller frees), or NULL on error. */
char *call_text(struct mcp_client *c, const char *tool, json_t *args, int64_t timeout_ms,
                struct sbx_error *err)
{
    json_t *res = NULL;
    if (mcp_client_call_tool(c, tool, args, timeout_ms, &res, err) < 0)
        return NULL;
    const char *t = json_string_value(
        json_object_get(json_array_get(json_object_get(res, "content"), 0), "text"));
    char *copy = strdup(t ? t : "");
    json_decref(res);
    return copy;
}

/* The fake server's "stats" tool: its structuredContent (new reference). */
json_t *stats(struct mcp_client *c)
{
    json_t *res = NULL;
    struct sbx_error err = {0};
    assert_int_equal(mcp_client_call_tool(c, "stats", NULL, 5000, &res, &err), 0);
    json_t *s = json_incref(json_object_get(res, "structuredContent"));
    json_decref(res);
    assert_non_null(s);
    return s;
}

bool has_notification(json_t *st, const char *method)
{
    json_t *list = json_object_get(st, "notifications");
    for (size_t i = 0; i < json_array_size(list); i++)
        if (strcmp(json_string_value(json_object_get(json_array_get(list, i), "method")), method) ==
            0)
            return true;
    return false;
}

int64_t ms_since(int64_t start_us)
{
    return (clock_mono_us() - start_us) / 1000;
}

void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

void capture_start(struct capture *cap)
{
    char path[] = "/tmp/mcp-log-XXXXXX";
    cap->fd = mkostemp(path, O_CLOEXEC);
    assert_true(cap->fd >= 0);
    unlink(path);
    cap->saved = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
    assert_true(cap->saved >= 0);
    dup2(cap->fd, STDERR_FILENO);
    cap->level = log_get_level();
    log_set_level(LOG_INFO);
}

/* Stop capturing; returns what was logged (caller frees). */
char *capture_end(struct capture *cap)
{
    log_set_level(cap->level);
    dup2(cap->saved, STDERR_FILENO);
    close(cap->saved);
    off_t size = lseek(cap->fd, 0, SEEK_END);
    char *text = calloc(1, (size_t)size + 1);
    assert_int_equal(pread(cap->fd, text, (size_t)size, 0), size);
    close(cap->fd);
    return text;
}

void note_cb(void *userdata, const char *method, json_t *params)
{
    struct notes *n = userdata;
    pthread_mutex_lock(&n->lock);
    json_array_append_new(n->seen, json_pack("[s, O?]", method, params));
    pthread_mutex_unlock(&n->lock);
}

bool noted(struct notes *n, const char *method)
{
    pthread_mutex_lock(&n->lock);
    bool found = false;
    for (size_t i = 0; i < json_array_size(n->seen) && !found; i++)
        found =
            strcmp(json_string_value(json_array_get(json_array_get(n->seen, i), 0)), method) == 0;
    pthread_mutex_unlock(&n->lock);
    return found;
}

/* threads threads each make calls calls of tool (an echo) at once; every answer must be its
 * arguments. */
struct echo_worker {
    struct mcp_client *c;
    int id;
    int calls;
    const char *tool;
    int ok;
};

static void *echo_thread(void *arg)
{
    struct echo_worker *w = arg;
    for (int i = 0; i < w->calls; i++) {
        json_t *args = json_pack("{s:i, s:i}", "worker", w->id, "i", i);
        struct sbx_error err = {0};
        char *got = call_text(w->c, w->tool, args, 10000, &err);
        json_t *g = got ? json_loads(got, 0, NULL) : NULL;
        if (g && json_equal(g, args))
            w->ok++;
        json_decref(g);
        free(got);
        sbx_error_clear(&err);
        json_decref(args);
    }
    return NULL;
}

void run_concurrently(struct mcp_client *c, const char *tool, int threads, int calls)
{
    pthread_t th[8];
    struct echo_worker w[8];
    for (int i = 0; i < threads; i++) {
        w[i] = (struct echo_worker){.c = c, .id = i, .calls = calls, .tool = tool};
        pthread_create(&th[i], NULL, echo_thread, &w[i]);
    }
    for (int i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].ok, calls);
    }
}

/* ---- files ---- */

char tmpdir[PATH_MAX];

void write_file(const char *rel, const char *content)
{
    char path[PATH_MAX * 2];
    fmt(path, sizeof(path), "%s/%s", tmpdir, rel);
    /* mkdir -p of the parents */
    for (char *p = path + strlen(tmpdir) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        mkdir(path, 0700);
        *p = '/';
    }
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(content, f);
    fclose(f);
}

const struct mcp_server_config *find_server(const struct mcp_config *cfg, const char *name)
{
    for (size_t i = 0; i < cfg->n; i++)
        if (strcmp(cfg->servers[i].name, name) == 0)
            return &cfg->servers[i];
    return NULL;
}

void rm_rf(const char *dir)
{
    char *cmd = NULL;
    if (asprintf(&cmd, "rm -rf '%s'", dir) > 0 && system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
    free(cmd);
}

/* ---- set-up ---- */

int start_http_server(void)
{
    char script[PATH_MAX + 32];
    fmt(script, sizeof(script), "%s/fake_http_server.py", fixtures);
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
        return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    char *argv[] = {"/usr/bin/python3", script, NULL};
    int r = posix_spawn(&http_pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    close(out[1]);
    if (r != 0)
        return -1;
    http_stdin = in[1];
    char port[32] = {0};
    size_t n = 0;
    while (n < sizeof(port) - 1) {
        ssize_t k = read(out[0], port + n, 1);
        if (k <= 0 || port[n] == '\n')
            break;
        n++;
    }
    close(out[0]);
    port[n] = '\0';
    if (n == 0)
        return -1;
    fmt(http_url, sizeof(http_url), "http://127.0.0.1:%s/mcp", port);
    return 0;
}

int setup(void **state)
{
    if (find_fixtures() < 0)
        return -1;
    if (httpc_global_init() < 0)
        return -1;
    return start_http_server();
}

int teardown(void **state)
{
    if (http_stdin >= 0)
        close(http_stdin); /* the fake server exits when its stdin closes */
    if (http_pid > 0)
        waitpid(http_pid, NULL, 0);
    httpc_global_done();
    return 0;
}
