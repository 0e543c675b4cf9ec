// SPDX-License-Identifier: MIT
/*
 * run — `sandboxd run FILE.py`: one isolated execution from the command line,
 * through the same jail, runtime and response mapping as /execute (a cold
 * interpreter: no pool). Prints the `data` object of the response (or the
 * whole response with --full). Exit 0 on success, 1 on an error result,
 * 2 on bad usage, 3 when the sandbox itself could not run.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "response/response.h"
#include "cmd/cmd.h"
#include "cmd/common.h"
#include "cmd/setup.h"
#include "exec/cell.h"
#include "exec/run.h"
#include "jail/jail.h"
#include "util/b64.h"
#include "util/fdio.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/jdump.h"

#define RUN_MAX_SOURCE (16u << 20)

/*
 * The options of run besides the common ones (cmd/common.h), one row per option, generating
 * the enum, the getopt entries, the defaults, the range checks and --help:
 *   X(ID, "name", has_arg, help)           cmd_run() handles it by hand
 *   N(ID, "name", min, max, field, def, before, after)
 *                                          a decimal in [min, max] into run_spec.field, def when
 *                                          not given (/execute's); --help: before, def, after
 */
#define RUN_OPTIONS(X, N)                                                                          \
    X(FUNCTION, "function", required_argument,                                                     \
      "  --function F        call F(input, context) of the script (JIT mode)\n")                   \
    X(CLASS, "class", required_argument,                                                           \
      "  --class C --method M  instantiate C and call M(**input) (executor mode)\n")               \
    X(METHOD, "method", required_argument, "")                                                     \
    X(INPUT, "input", required_argument,                                                           \
      "  --input JSON|@FILE  the request data / method parameters (default {})\n")                 \
    N(TIMEOUT, "timeout-ms", 1, 24 * 3600 * 1000, timeout_ms, APP_DEFAULT_TIMEOUT_MS,              \
      "  --timeout-ms N      wall-clock limit (default ", ")\n")                                   \
    N(MEMORY, "memory-mb", 8, 1 << 20, memory_mb, APP_DEFAULT_MEMORY_MB,                           \
      "  --memory-mb N       memory limit (default ", ")\n")                                       \
    N(PROCS, "max-procs", 1, 1 << 20, procs, JAIL_DEFAULT_NPROC,                                   \
      "  --max-procs N       processes and threads (default ", ")\n")                              \
    N(OUTPUT, "output-limit-kb", 1, 1 << 20, output_kb, APP_DEFAULT_OUTPUT_KB,                     \
      "  --output-limit-kb N stdout+stderr limit (default ", ")\n")                                \
    X(FULL, "full", no_argument,                                                                   \
      "  --full              print the whole response (resultType, data, metrics, verdict)\n")     \
    X(STATE_DIR, "state-dir", required_argument,                                                   \
      "  --state-dir DIR     where what host discovery found is cached (as for serve: default\n"   \
      "                      $XDG_STATE_HOME/sandboxd, ~/.local/state/sandboxd, ...)\n")

#define RUN_OPT_ENUM_X_(id, name, has_arg, help)                       RUN_OPT_##id,
#define RUN_OPT_ENUM_N_(id, name, min, max, field, def, before, after) RUN_OPT_##id,
enum { RUN_OPT_FIRST_ = COMMON_OPT_LAST, RUN_OPTIONS(RUN_OPT_ENUM_X_, RUN_OPT_ENUM_N_) };

#define RUN_OPT_LONG_X_(id, name, has_arg, help) {name, has_arg, NULL, RUN_OPT_##id},
#define RUN_OPT_LONG_N_(id, name, min, max, field, def, before, after)                             \
    {name, required_argument, NULL, RUN_OPT_##id},
#define RUN_OPT_HELP_X_(id, name, has_arg, help)                       help
#define RUN_OPT_HELP_N_(id, name, min, max, field, def, before, after) before COMMON_STR(def) after
/* The default of a numeric row, as a designated initializer; the other rows expand to nothing. */
#define RUN_OPT_NONE_X_(id, name, has_arg, help)
#define RUN_OPT_INIT_N_(id, name, min, max, field, def, before, after) .field = def,
/* The range check of a numeric row; the other rows expand to nothing. */
#define RUN_OPT_CASE_X_(id, name, has_arg, help)
#define RUN_OPT_CASE_N_(id, name, min, max, field, def, before, after)                             \
    case RUN_OPT_##id:                                                                             \
        if (common_parse_u64(name, optarg, min, max, &spec.field) < 0)                             \
            goto out;                                                                              \
        break;

static const char run_usage[] =
    "Usage: sandboxd run FILE.py [options]\n"
    "Run FILE.py once in a fresh sandbox and print the result as JSON.\n"
    "\n" RUN_OPTIONS(RUN_OPT_HELP_X_,
                     RUN_OPT_HELP_N_) "  -h, --help          this text\n"
                                      "Without --function or --class the script runs as a program; "
                                      "the value of its last\n"
                                      "expression, if it ends with one, is the result.\n"
                                      "\n" COMMON_HELP;

static json_t *run_load_input(const char *arg)
{
    _cleanup_free_ char *data = NULL;
    const char *text = arg;
    size_t len = strlen(arg);
    if (arg[0] == '@') {
        int r = fd_read_file(AT_FDCWD, arg + 1, RUN_MAX_SOURCE, &data, &len);
        if (r < 0) {
            fprintf(stderr, "sandboxd run: --input: cannot read %s: %s\n", arg + 1, strerror(-r));
            return NULL;
        }
        text = data;
    }
    json_error_t err;
    json_t *v = json_loadb(text, len, JSON_DECODE_ANY, &err);
    if (!v)
        fprintf(stderr, "sandboxd run: --input is not JSON: %s (line %d)\n", err.text, err.line);
    return v;
}

struct run_spec {
    const char *path;
    const char *function;
    const char *class_name;
    const char *method;
    const char *input;
    const char *state_dir;
    uint64_t timeout_ms, memory_mb, procs, output_kb;
    bool full;
};

static json_t *run_job(const struct run_spec *spec, const char *src, size_t len, json_t *input)
{
    json_t *limits =
        json_pack("{s:I, s:I, s:I}", "memoryBytes", (json_int_t)(spec->memory_mb << 20),
                  "cpuSeconds", (json_int_t)((spec->timeout_ms + 999) / 1000), "outputBytes",
                  (json_int_t)(spec->output_kb << 10));
    const char *base = strrchr(spec->path, '/');
    base = base ? base + 1 : spec->path;
    if (spec->function) {
        _cleanup_free_ char *b64 = b64_encode(src, len);
        if (!b64)
            return NULL;
        json_t *ctx = json_pack("{s:s, s:s, s:s, s:s, s:{s:s, s:s}}", "appId", "cli", "componentId",
                                base, "requestId", "cli", "traceId", "cli", "taskDetails", "script",
                                base, "function", spec->function);
        /* a NULL ctx or limits ("o") fails this pack too: the caller checks the job */
        return json_pack("{s:s, s:s, s:s, s:s, s:O, s:o, s:o}", "type", "jit", "source", b64,
                         "path", base, "function", spec->function, "requestData", input, "context",
                         ctx, "limits", limits);
    }
    json_t *code = json_stringn(src, len);
    if (!code) {
        fprintf(stderr, "sandboxd run: %s is not UTF-8 text\n", spec->path);
        json_decref(limits);
        return NULL;
    }
    json_t *job = json_pack("{s:s, s:o, s:o}", "type", "executor", "code", code, "limits", limits);
    if (job && spec->class_name) {
        json_object_set_new(job, "className", json_string(spec->class_name));
        json_object_set_new(job, "methodName", json_string(spec->method));
        json_object_set(job, "methodParams", input);
    }
    return job;
}

static int run_file(const struct run_spec *spec, struct common_opts *common)
{
    _cleanup_free_ char *src = NULL;
    size_t len = 0;
    int r = fd_read_file(AT_FDCWD, spec->path, RUN_MAX_SOURCE, &src, &len);
    if (r < 0) {
        fprintf(stderr, "sandboxd run: cannot read %s: %s\n", spec->path, strerror(-r));
        return 2;
    }
    json_t *input = spec->input ? run_load_input(spec->input) : json_object();
    if (!input)
        return 2;
    if (spec->class_name && !json_is_object(input)) {
        fprintf(stderr, "sandboxd run: --input must be a JSON object for --method\n");
        json_decref(input);
        return 2;
    }
    json_t *job = run_job(spec, src, len, input);
    json_decref(input);
    if (!job) {
        fprintf(stderr,
                "sandboxd run: the job for %s could not be built (a name that is not "
                "UTF-8, or out of memory)\n",
                spec->path);
        return 2;
    }

    struct jail_options jopt;
    struct jail_config cfg;
    int status = 3;
    bool oom = false;
    _cleanup_free_ char *state = common_state_dir(spec->state_dir);
    _cleanup_free_ char *cache = common_cache_dir(common, state, &oom);
    if (!state || oom || common_resolve(common, &jopt) < 0) {
        json_decref(job);
        return 3;
    }
    jopt.cache_dir = cache;
    if (jail_config_init(&cfg, &jopt) < 0) {
        json_decref(job);
        return 3;
    }
    struct jail_limits lim = jail_limits_default(&cfg);
    lim.nproc = spec->procs;
    lim.memory = spec->memory_mb << 20;
    struct cell *cell = NULL;
    struct exec_outcome o = {0};
    /* The largest result serve takes by default (--max-result-mb). */
    if (cell_spawn_cold(&cfg, &lim, (size_t)SETUP_DEFAULT_MAX_RESULT << 20, &cell) < 0)
        goto done;
    enum response_kind kind =
        spec->class_name || !spec->function ? RESPONSE_EXECUTOR : RESPONSE_JIT;
    struct artifact_caps caps = {.max_count = ARTIFACT_DEFAULT_COUNT,
                                 .max_bytes = (size_t)ARTIFACT_DEFAULT_MB << 20};
    struct exec_request req = {
        .job = job,
        .timeout_us = (int64_t)spec->timeout_ms * 1000,
        .cpu_limit_us = ((spec->timeout_ms + 999) / 1000) * 1000000,
        .output_limit = spec->output_kb << 10,
        .raw_path = response_raw_path(kind),
        .artifacts = caps,
    };
    (void)exec_run(cell, &req, &o);
    struct response_limits rl = {.timeout_ms = (int64_t)spec->timeout_ms,
                                 .memory_mb = spec->memory_mb,
                                 .output_bytes = spec->output_kb << 10,
                                 .artifacts = caps};
    json_t *resp = response_build("cli", kind, &o, &rl, NULL);
    if (!resp) {
        fprintf(stderr, "sandboxd run: the sandbox failed: %s\n",
                o.internal ? o.internal : "internal error");
        goto done;
    }
    json_t *shown = spec->full ? resp : json_object_get(resp, "data");
    /* A passed-through result is printed as the sandbox sent it, compact. */
    char *text = o.raw.text ? response_render(resp, kind, &o.raw, !spec->full, NULL)
                            : jdump(shown, JSON_INDENT(2), NULL);
    if (text) {
        puts(text);
        free(text);
    }
    const char *rtype = json_string_value(json_object_get(resp, "resultType"));
    status = rtype && strcmp(rtype, "error") == 0 ? 1 : 0;
    json_decref(resp);
done:
    exec_outcome_done(&o);
    cell_free(cell);
    json_decref(job);
    jail_config_done(&cfg);
    return status;
}

int cmd_run(int argc, char **argv)
{
    static const struct option opts[] = {
        COMMON_LONG_OPTIONS RUN_OPTIONS(RUN_OPT_LONG_X_, RUN_OPT_LONG_N_){"help", no_argument, NULL,
                                                                          'h'},
        {NULL, 0, NULL, 0},
    };
    struct common_opts common;
    common_opts_init(&common);
    struct run_spec spec = {RUN_OPTIONS(RUN_OPT_NONE_X_, RUN_OPT_INIT_N_)};
    int status = 2;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        int r = common_opt(&common, c, optarg);
        if (r < 0)
            goto out;
        if (r > 0)
            continue;
        switch (c) {
            RUN_OPTIONS(RUN_OPT_CASE_X_, RUN_OPT_CASE_N_)
        case RUN_OPT_FUNCTION:
            spec.function = optarg;
            break;
        case RUN_OPT_CLASS:
            spec.class_name = optarg;
            break;
        case RUN_OPT_METHOD:
            spec.method = optarg;
            break;
        case RUN_OPT_INPUT:
            spec.input = optarg;
            break;
        case RUN_OPT_FULL:
            spec.full = true;
            break;
        case RUN_OPT_STATE_DIR:
            spec.state_dir = optarg;
            break;
        case 'h':
            fputs(run_usage, stdout);
            status = 0;
            goto out;
        default:
            fputs(run_usage, stderr);
            goto out;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "sandboxd run: expected exactly one FILE.py\n%s", run_usage);
        goto out;
    }
    if ((spec.class_name && !spec.method) || (spec.method && !spec.class_name) ||
        (spec.function && spec.class_name)) {
        fprintf(stderr, "sandboxd run: use --function F, or --class C with --method M\n");
        goto out;
    }
    spec.path = argv[optind];
    if (!common.no_cgroups)
        cgroup_prime(); /* while the host is discovered, not in the middle of the spawn */
    status = run_file(&spec, &common);
out:
    common_done(&common);
    return status;
}
