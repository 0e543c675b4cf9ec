// SPDX-License-Identifier: MIT
/*
 * migrate — `sandboxd migrate`: bring the state of mcp-server-code-execution-mode (upstream,
 * and its fork) into a sandboxd workspace: the functions of its user_tools.py become saved
 * tools, its memory JSON files memories (with their created_at and updated_at). Each item is
 * reported imported or skipped with the reason. The source is only read (O_NOFOLLOW, never
 * written); nothing in the workspace is replaced. user_tools.py is parsed (never run) by the
 * runtime's migrate.py under the host's interpreter, with the rules a session applies to
 * saved tools (docs/SESSIONS.md); the memory files are read here.
 *
 * With --from-state-dir or --from-state-store it copies one of sandboxd's own state stores
 * into another instead (cmd/migrate_store.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/common.h"
#include "cmd/migrate_store.h"
#include "cmd/setup.h"
#include "session/workspace.h"
#include "util/fdio.h"
#include "util/fmt.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/proc.h"
#include "util/trust.h"

#define MIGRATE_MAX_REPORT (64u << 20) /* bytes of migrate.py's answer */
#define MIGRATE_MAX_MEMORY (4u << 20)  /* bytes of one memory file */
#define MIGRATE_MAX_FILES  10000       /* memory files looked at */

/*
 * The options of migrate, one row each, generating the enum (MIGRATE_OPT_<ID>), the getopt
 * entries and --help:
 *   X(ID, "name", help)   an option of its own, with an argument: the import's
 *   C(ID, "name", help)   common option ID (cmd/common.h) with migrate's words, common_opt()'s
 *   S(ID, "name", help)   an option of its own, with an argument: the copy between state
 *                         stores (cmd/migrate_store.c), listed in --help's second part
 */
#define MIGRATE_OPTIONS(X, C, S)                                                                   \
    X(FROM, "from",                                                                                \
      "  --from DIR        upstream's state directory: $MCP_BRIDGE_STATE_DIR, else ~/MCPs;\n"      \
      "                    DIR/user_tools.py or DIR/user_tools/user_tools.py, DIR/memory/ or\n"    \
      "                    DIR/user_tools/memory/\n")                                              \
    X(WORKSPACE, "workspace",                                                                      \
      "  --workspace NAME  the workspace to import into (default: " SESSION_WORKSPACE_DEFAULT      \
      ", the one\n"                                                                                \
      "                    `sandboxd mcp` uses)\n")                                                \
    X(STATE_DIR, "state-dir",                                                                      \
      "  --state-dir DIR   sandboxd's state directory (default: $MCP_BRIDGE_STATE_DIR as\n"        \
      "                    `sandboxd mcp --compat code-execution-mode` uses it, else the\n"        \
      "                    usual one, see docs/SESSIONS.md); with --from-state-store, the\n"       \
      "                    state directory copied into\n")                                         \
    C(PYTHON, "python",                                                                            \
      "  --python PATH     the interpreter that reads user_tools.py (default " JAIL_DEFAULT_PYTHON \
      ")\n")                                                                                       \
    C(RUNTIME_DIR, "runtime-dir",                                                                  \
      "  --runtime-dir DIR sandboxd's Python runtime (default: found next to the binary)\n")       \
    C(LOG_LEVEL, "log-level", "  --log-level LEVEL debug|info|warn|error\n")                       \
    S(FROM_STATE_DIR, "from-state-dir",                                                            \
      "  --from-state-dir DIR    copy this state directory into --state-store URL\n")              \
    S(FROM_STATE_STORE, "from-state-store",                                                        \
      "  --from-state-store URL  copy this PostgreSQL (a libpq connection string) into\n"          \
      "                          --state-dir DIR\n")                                               \
    S(STATE_STORE, "state-store",                                                                  \
      "  --state-store URL       the PostgreSQL copied into (a libpq connection string)\n")        \
    S(PASSWORD_FILE, "state-store-password-file",                                                  \
      "  --state-store-password-file FILE  the database's password (else PGPASSWORD or a\n"        \
      "                          passfile, as libpq finds them)\n")

#define MIGRATE_ENUM_X_(id, name, help) MIGRATE_OPT_##id,
#define MIGRATE_NONE_(id, name, help)
#define MIGRATE_LONG_X_(id, name, help) {name, required_argument, NULL, MIGRATE_OPT_##id},
#define MIGRATE_LONG_C_(id, name, help) {name, required_argument, NULL, COMMON_OPT_##id},
#define MIGRATE_HELP_(id, name, help)   help
#define MIGRATE_HELP_IMPORT             MIGRATE_OPTIONS(MIGRATE_HELP_, MIGRATE_HELP_, MIGRATE_NONE_)
#define MIGRATE_HELP_STORES             MIGRATE_OPTIONS(MIGRATE_NONE_, MIGRATE_NONE_, MIGRATE_HELP_)
#define MIGRATE_LONGOPTS                MIGRATE_OPTIONS(MIGRATE_LONG_X_, MIGRATE_LONG_C_, MIGRATE_LONG_X_)
enum {
    MIGRATE_OPT_FIRST_ = COMMON_OPT_LAST,
    MIGRATE_OPTIONS(MIGRATE_ENUM_X_, MIGRATE_NONE_, MIGRATE_ENUM_X_)
};

static const char migrate_usage[] =
    "Usage: sandboxd migrate [--from DIR] [--workspace NAME] [--state-dir DIR]\n"
    "       sandboxd migrate --from-state-dir DIR --state-store URL\n"
    "       sandboxd migrate --from-state-store URL --state-dir DIR\n"
    "\n"
    "Import the state of mcp-server-code-execution-mode into a sandboxd workspace: the\n"
    "functions of its user_tools.py as saved tools, its memory/*.json files as memories\n"
    "(their times kept). Prints each item imported or skipped, and why. DIR is only read;\n"
    "nothing already in the workspace is replaced.\n"
    "\n" MIGRATE_HELP_IMPORT "  -h, --help        this text\n"
    "\n"
    "Move sandboxd's own state between its two stores: every workspace of every tenant\n"
    "(memories with their times, saved tools, files, kept files of execution folders) and the\n"
    "local framework's runtime values, copied as they are, each item reported copied,\n"
    "unchanged (the destination has the same) or skipped (it has another: nothing is\n"
    "replaced). The source is only read; running it again copies only what is new\n"
    "(docs/DEPLOY.md).\n"
    "\n" MIGRATE_HELP_STORES;

struct migrate_count {
    unsigned imported, skipped;
};

static void migrate_item(struct migrate_count *n, const char *kind, const char *name,
                         const char *why)
{
    if (why) {
        printf("skipped %s %s: %s\n", kind, name, why);
        n->skipped++;
    } else {
        printf("imported %s %s\n", kind, name);
        n->imported++;
    }
}

/* The first of DIR/a, DIR/b that exists as kind (S_IFREG or S_IFDIR), not through a symlink
 * at its last component; caller frees; NULL when none. */
static char *migrate_find(const char *dir, const char *a, const char *b, mode_t kind)
{
    const char *rels[] = {a, b};
    for (size_t i = 0; i < ARRAY_SIZE(rels); i++) {
        char *p = fmt_str("%s/%s", dir, rels[i]);
        struct stat st;
        if (p && lstat(p, &st) == 0 && (st.st_mode & S_IFMT) == kind)
            return p;
        free(p);
    }
    return NULL;
}

/* migrate.py's report on file: a JSON array (new reference), or NULL (logged). */
static json_t *migrate_read_tools(const char *python, const char *runtime_dir, const char *file)
{
    _cleanup_free_ char *script = fmt_str("%s/sandboxd_runtime/migrate.py", runtime_dir);
    int pipefd[2];
    if (!script || pipe2(pipefd, O_CLOEXEC) < 0)
        return NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDOUT_FILENO);
    char *argv[] = {(char *)python, "-I", "-S", "-B", script, (char *)file, NULL};
    char *envp[] = {"LANG=C.UTF-8", NULL};
    pid_t pid;
    int r = posix_spawn(&pid, python, &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    close(pipefd[1]);
    if (r != 0) {
        close(pipefd[0]);
        log_errno(LOG_ERROR, r, "migrate: cannot start %s", python);
        return NULL;
    }
    char path[64], *out = NULL;
    size_t len = 0;
    snprintf(path, sizeof(path), "/proc/self/fd/%d", pipefd[0]);
    r = fd_read_file(AT_FDCWD, path, MIGRATE_MAX_REPORT, &out, &len);
    close(pipefd[0]);
    int status = 0;
    (void)proc_wait(pid, &status);
    json_error_t jerr;
    json_t *report = r == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0
                         ? json_loadb(out, len, 0, &jerr)
                         : NULL;
    free(out);
    if (!json_is_array(report)) {
        log_error("migrate: %s could not read %s (%s)", script, file,
                  r < 0 ? strerror(-r) : "it failed; see above");
        json_decref(report);
        return NULL;
    }
    return report;
}

static void migrate_tools(struct workspace *w, const char *python, const char *runtime_dir,
                          const char *file, struct migrate_count *n)
{
    json_t *report = migrate_read_tools(python, runtime_dir, file);
    if (!report) {
        migrate_item(n, "file", file, "it could not be read");
        return;
    }
    json_t *have = NULL;
    struct sbx_error err = {0};
    if (workspace_tools(w, &have, &err) < 0) {
        migrate_item(n, "file", file, err.message ? err.message : "the workspace cannot be read");
        sbx_error_clear(&err);
        json_decref(report);
        return;
    }
    size_t i, k;
    json_t *item, *t;
    json_array_foreach(report, i, item)
    {
        const char *name = json_string_value(json_object_get(item, "name"));
        const char *source = json_string_value(json_object_get(item, "source"));
        const char *skipped = json_string_value(json_object_get(item, "skipped"));
        _cleanup_free_ char *label =
            name ? fmt_str("%s (line %lld)", name,
                           (long long)json_integer_value(json_object_get(item, "line")))
                 : fmt_str("at line %lld of %s",
                           (long long)json_integer_value(json_object_get(item, "line")), file);
        bool exists = false;
        json_array_foreach(have, k, t)
        {
            exists = exists || (name && strcmp(json_string_value(json_object_get(t, "name")) ?: "",
                                               name) == 0);
        }
        if (!source || skipped || exists) {
            migrate_item(n, "tool", label ? label : "?",
                         skipped  ? skipped
                         : exists ? "the workspace has a saved tool of that name already"
                                  : "no source");
            continue;
        }
        int r = workspace_save_tool(w, name, source, &err);
        migrate_item(n, "tool", label ? label : name,
                     r < 0 ? (err.message ? err.message : strerror(-r)) : NULL);
        sbx_error_clear(&err);
    }
    json_decref(have);
    json_decref(report);
}

/* A time of the fork (seconds since the epoch, a JSON number) as the workspace writes times;
 * NULL when it is none. */
static char *migrate_time(json_t *v)
{
    if (!json_is_number(v))
        return NULL;
    double t = json_number_value(v);
    if (!isfinite(t) || t < 0 || t > 253402300799.0) /* up to 9999-12-31 */
        return NULL;
    time_t s = (time_t)t;
    struct tm tm;
    gmtime_r(&s, &tm);
    char day[32];
    strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
    return fmt_str("%s.%03dZ", day, (int)((t - (double)s) * 1000.0) % 1000);
}

static void migrate_memory(struct workspace *w, int dirfd, const char *fname,
                           struct migrate_count *n)
{
    char *text = NULL;
    size_t len = 0;
    int r =
        fd_read_file_flags(dirfd, fname, O_NOFOLLOW | O_NONBLOCK, MIGRATE_MAX_MEMORY, &text, &len);
    if (r < 0) {
        migrate_item(n, "memory", fname,
                     r == -ELOOP   ? "a symbolic link"
                     : r == -EFBIG ? "over 4 MiB"
                                   : strerror(-r));
        return;
    }
    json_error_t jerr;
    json_t *doc = json_loadb(text, len, 0, &jerr);
    free(text);
    if (!json_is_object(doc) || !json_object_get(doc, "value")) {
        migrate_item(n, "memory", fname, "not a memory of the fork ({key, value, ...} as JSON)");
        json_decref(doc);
        return;
    }
    /* As the fork reads it: the key inside, else the file's name without .json. */
    const char *key = json_string_value(json_object_get(doc, "key"));
    _cleanup_free_ char *stem = strndup(fname, strlen(fname) - 5);
    _cleanup_free_ char *created = migrate_time(json_object_get(doc, "created_at"));
    _cleanup_free_ char *updated = migrate_time(json_object_get(doc, "updated_at"));
    json_t *meta = json_object_get(doc, "metadata");
    struct sbx_error err = {0};
    r = stem ? workspace_import_memory(w, key ? key : stem, json_object_get(doc, "value"),
                                       json_is_object(meta) ? meta : NULL, created, updated, &err)
             : -ENOMEM;
    _cleanup_free_ char *label = fmt_str("%s (%s)", key ? key : stem ? stem : "?", fname);
    migrate_item(n, "memory", label ? label : fname,
                 r < 0 ? (err.message ? err.message : strerror(-r)) : NULL);
    sbx_error_clear(&err);
    json_decref(doc);
}

static int migrate_name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void migrate_memories(struct workspace *w, const char *dir, struct migrate_count *n)
{
    _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    int dup_fd = dfd >= 0 ? fcntl(dfd, F_DUPFD_CLOEXEC, 0) : -1;
    DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    if (!d) {
        if (dup_fd >= 0)
            close(dup_fd);
        migrate_item(n, "directory", dir, strerror(errno));
        return;
    }
    char **names = NULL;
    size_t count = 0;
    struct dirent *e;
    while ((e = readdir(d)) && count < MIGRATE_MAX_FILES) {
        size_t l = strlen(e->d_name);
        if (l <= 5 || strcmp(e->d_name + l - 5, ".json") != 0 || e->d_name[0] == '.')
            continue;
        char **grown = realloc(names, (count + 1) * sizeof(*names));
        if (!grown || !(grown[count] = strdup(e->d_name))) {
            names = grown ? grown : names;
            break;
        }
        names = grown;
        count++;
    }
    closedir(d);
    if (count)
        qsort(names, count, sizeof(*names), migrate_name_cmp);
    for (size_t i = 0; i < count; i++) {
        migrate_memory(w, dfd, names[i], n);
        free(names[i]);
    }
    free(names);
}

/* One state store into another (ms: its options, to_dir set): a source and a destination, one
 * of each kind of option; from: --from, which is the import's. The exit status. */
static int migrate_copy(const struct migrate_store_opts *ms, const char *from, bool extra_args)
{
    const char *why = extra_args                       ? "unexpected arguments"
                      : !ms->from_dir == !ms->from_url ? "name one source: "
                                                         "--from-state-dir or "
                                                         "--from-state-store"
                      : !ms->to_dir == !ms->to_url     ? "name one destination: "
                                                         "--state-dir or --state-store"
                      : from                           ? "--from is the import of "
                                                         "mcp-server-code-execution-mode, "
                                                         "not a state store"
                                                       : NULL;
    if (why) {
        fprintf(stderr, "sandboxd migrate: %s\n", why);
        return 2;
    }
    return migrate_stores(ms);
}

int cmd_migrate(int argc, char **argv)
{
    static const struct option longopts[] = {
        MIGRATE_LONGOPTS{"help", no_argument, NULL, 'h'},
        {0},
    };
    struct common_opts common;
    common_opts_init(&common);
    const char *from = NULL, *workspace = SESSION_WORKSPACE_DEFAULT, *state_opt = NULL;
    struct migrate_store_opts ms = {0};
    int opt;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (opt == 'h') {
            fputs(migrate_usage, stdout);
            return 0;
        }
        if (opt == MIGRATE_OPT_FROM)
            from = optarg;
        else if (opt == MIGRATE_OPT_WORKSPACE)
            workspace = optarg;
        else if (opt == MIGRATE_OPT_STATE_DIR)
            state_opt = optarg;
        else if (opt == MIGRATE_OPT_FROM_STATE_DIR)
            ms.from_dir = optarg;
        else if (opt == MIGRATE_OPT_FROM_STATE_STORE)
            ms.from_url = optarg;
        else if (opt == MIGRATE_OPT_STATE_STORE)
            ms.to_url = optarg;
        else if (opt == MIGRATE_OPT_PASSWORD_FILE)
            ms.password_file = optarg;
        else if (common_opt(&common, opt, optarg) != 1) {
            fputs(migrate_usage, stderr);
            return 2;
        }
    }
    if (ms.from_dir || ms.from_url || ms.to_url) {
        ms.to_dir = state_opt;
        int status = migrate_copy(&ms, from, optind < argc);
        common_done(&common);
        return status;
    }
    if (optind < argc || workspace_check_name(workspace)) {
        fprintf(stderr, "sandboxd migrate: %s\n",
                optind < argc ? "unexpected arguments" : "--workspace: not a workspace name");
        return 2;
    }
    const char *bridge = getenv("MCP_BRIDGE_STATE_DIR"), *home = getenv("HOME");
    _cleanup_free_ char *bridge_dir =
        bridge && *bridge
            ? (bridge[0] == '~' && home ? fmt_str("%s%s", home, bridge + 1) : strdup(bridge))
            : NULL;
    _cleanup_free_ char *src = from         ? strdup(from)
                               : bridge_dir ? strdup(bridge_dir)
                               : home       ? fmt_str("%s/MCPs", home)
                                            : NULL;
    _cleanup_free_ char *state = common_state_dir(state_opt ? state_opt : bridge_dir);
    struct jail_options jo;
    if (!src || !state || common_resolve(&common, &jo) < 0) {
        common_done(&common);
        return 1;
    }
    _cleanup_free_ char *tools =
        migrate_find(src, "user_tools.py", "user_tools/user_tools.py", S_IFREG);
    _cleanup_free_ char *memdir = migrate_find(src, "memory", "user_tools/memory", S_IFDIR);
    if (!tools && !memdir) {
        fprintf(stderr,
                "sandboxd migrate: %s holds no user_tools.py and no memory directory of "
                "mcp-server-code-execution-mode; name the directory with --from\n",
                src);
        common_done(&common);
        return 1;
    }
    _cleanup_sbx_error_ struct sbx_error why = {0};
    struct store *store = NULL;
    struct workspace_store *wstore = NULL;
    struct workspace *w = NULL;
    struct setup_opts defaults; /* the store's limits as serve and mcp have them by default */
    setup_opts_init(&defaults);
    struct store_options sto = setup_store_options(&defaults, state);
    struct workspace_limits wl = setup_workspace_limits();
    _cleanup_sbx_error_ struct sbx_error err = {0};
    int r = trust_make_dir(state, &why);
    if (r < 0)
        log_error("migrate: refusing the state directory %s: %s", state,
                  why.message ? why.message : "unsafe");
    else if ((r = store_new(&sto, 0, &store)) < 0 ||
             (r = workspace_store_new(store, &wl, &wstore)) < 0 ||
             (r = workspace_open(wstore, workspace, NULL, true, &w, &err)) < 0)
        log_errno(LOG_ERROR, r, "migrate: the workspace %s in %s is unavailable%s%s", workspace,
                  state, err.message ? ": " : "", err.message ? err.message : "");
    struct migrate_count n = {0};
    if (r == 0) {
        printf("from %s into workspace %s of %s\n", src, workspace, state);
        if (tools)
            migrate_tools(w, jo.python ? jo.python : JAIL_DEFAULT_PYTHON, jo.runtime_dir, tools,
                          &n);
        if (memdir)
            migrate_memories(w, memdir, &n);
        printf("%u imported, %u skipped\n", n.imported, n.skipped);
    }
    workspace_close(w);
    workspace_store_free(wstore);
    store_free(store);
    common_done(&common);
    return r < 0 ? 1 : 0;
}
