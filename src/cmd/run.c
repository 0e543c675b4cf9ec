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

#include "app/response.h"
#include "cmd/cmd.h"
#include "cmd/common.h"
#include "exec/cell.h"
#include "exec/run.h"
#include "jail/jail.h"
#include "util/b64.h"
#include "util/fdio.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/jdump.h"

#define RUN_MAX_SOURCE (16u << 20)

static const char run_usage[] =
    "Usage: sandboxd run FILE.py [options]\n"
    "Run FILE.py once in a fresh sandbox and print the result as JSON.\n"
    "\n"
    "  --function F        call F(input, context) of the script (JIT mode)\n"
    "  --class C --method M  instantiate C and call M(**input) (executor mode)\n"
    "  --input JSON|@FILE  the request data / method parameters (default {})\n"
    "  --timeout-ms N      wall-clock limit (default 10000)\n"
    "  --memory-mb N       memory limit (default 256)\n"
    "  --max-procs N       processes and threads (default 64)\n"
    "  --output-limit-kb N stdout+stderr limit (default 1024)\n"
    "  --full              print the whole response (resultType, data, metrics, verdict)\n"
    "  -h, --help          this text\n"
    "Without --function or --class the script runs as a program; the value of its last\n"
    "expression, if it ends with one, is the result.\n"
    "\n" COMMON_HELP;

enum {
    RUN_OPT_FUNCTION = COMMON_OPT_LAST + 1,
    RUN_OPT_CLASS,
    RUN_OPT_METHOD,
    RUN_OPT_INPUT,
    RUN_OPT_TIMEOUT,
    RUN_OPT_MEMORY,
    RUN_OPT_PROCS,
    RUN_OPT_OUTPUT,
    RUN_OPT_FULL,
};

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
    if (!job)
        return 2;

    struct jail_options jopt;
    struct jail_config cfg;
    int status = 3;
    if (common_resolve(common, &jopt) < 0 || jail_config_init(&cfg, &jopt) < 0) {
        json_decref(job);
        return 3;
    }
    struct jail_limits lim = jail_limits_default(&cfg);
    lim.nproc = spec->procs;
    lim.memory = spec->memory_mb << 20;
    struct cell *cell = NULL;
    struct exec_outcome o = {0};
    if (cell_spawn_cold(&cfg, &lim, 64u << 20, &cell) < 0)
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
        COMMON_LONG_OPTIONS{"function", required_argument, NULL, RUN_OPT_FUNCTION},
        {"class", required_argument, NULL, RUN_OPT_CLASS},
        {"method", required_argument, NULL, RUN_OPT_METHOD},
        {"input", required_argument, NULL, RUN_OPT_INPUT},
        {"timeout-ms", required_argument, NULL, RUN_OPT_TIMEOUT},
        {"memory-mb", required_argument, NULL, RUN_OPT_MEMORY},
        {"max-procs", required_argument, NULL, RUN_OPT_PROCS},
        {"output-limit-kb", required_argument, NULL, RUN_OPT_OUTPUT},
        {"full", no_argument, NULL, RUN_OPT_FULL},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct common_opts common = {0};
    const char *function = NULL, *class_name = NULL, *method = NULL, *input_arg = NULL;
    uint64_t timeout_ms = 10000, memory_mb = 256, procs = 64, output_kb = 1024;
    bool full = false;
    int status = 2;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        int r = common_opt(&common, c, optarg);
        if (r < 0)
            goto out;
        if (r > 0)
            continue;
        switch (c) {
        case RUN_OPT_FUNCTION:
            function = optarg;
            break;
        case RUN_OPT_CLASS:
            class_name = optarg;
            break;
        case RUN_OPT_METHOD:
            method = optarg;
            break;
        case RUN_OPT_INPUT:
            input_arg = optarg;
            break;
        case RUN_OPT_TIMEOUT:
            if (common_parse_u64("timeout-ms", optarg, 1, 24 * 3600 * 1000, &timeout_ms) < 0)
                goto out;
            break;
        case RUN_OPT_MEMORY:
            if (common_parse_u64("memory-mb", optarg, 8, 1 << 20, &memory_mb) < 0)
                goto out;
            break;
        case RUN_OPT_PROCS:
            if (common_parse_u64("max-procs", optarg, 1, 1 << 20, &procs) < 0)
                goto out;
            break;
        case RUN_OPT_OUTPUT:
            if (common_parse_u64("output-limit-kb", optarg, 1, 1 << 20, &output_kb) < 0)
                goto out;
            break;
        case RUN_OPT_FULL:
            full = true;
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
    if ((class_name && !method) || (method && !class_name) || (function && class_name)) {
        fprintf(stderr, "sandboxd run: use --function F, or --class C with --method M\n");
        goto out;
    }
    struct run_spec spec = {
        .path = argv[optind],
        .function = function,
        .class_name = class_name,
        .method = method,
        .input = input_arg,
        .timeout_ms = timeout_ms,
        .memory_mb = memory_mb,
        .procs = procs,
        .output_kb = output_kb,
        .full = full,
    };
    status = run_file(&spec, &common);
out:
    common_done(&common);
    return status;
}
