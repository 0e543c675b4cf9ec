// SPDX-License-Identifier: MIT
/*
 * host — see host.h. The definitions directory is made once per process,
 * in fuzz_tmpdir().
 */
#include "host.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "util/fdio.h"

static const char *host_definitions(void)
{
    static char dir[128];
    if (!dir[0]) {
        snprintf(dir, sizeof(dir), "%s/definitions", fuzz_tmpdir());
        char app[192];
        snprintf(app, sizeof(app), "%s/%s", dir, FUZZ_HOST_APP);
        FUZZ_CHECK(mkdir(dir, 0700) == 0 && mkdir(app, 0700) == 0);
    }
    return dir;
}

void fuzz_host_put(const char *path, const void *data, size_t len)
{
    char full[512];
    snprintf(full, sizeof(full), "%s/%s/%s", host_definitions(), FUZZ_HOST_APP, path);
    char *slash = strrchr(full, '/');
    *slash = '\0';
    (void)mkdir(full, 0700); /* EEXIST after the first input */
    *slash = '/';
    int fd = open(full, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    FUZZ_CHECK(fd >= 0);
    FUZZ_CHECK(fd_write_all(fd, data, len, 0) == 0);
    close(fd);
}

void fuzz_host_init(struct fuzz_host *h)
{
    *h = (struct fuzz_host){0};
    struct framework_options fo = {
        .definitions_dir = host_definitions(),
        .timeout_ms = 1000,
        .max_response = 1 << 20,
    };
    struct defs_options dopt = {.max_entries = 16, .max_bytes = 1 << 22, .max_file = 1 << 20};
    struct manager_options mo = {.default_timeout_ms = 1000, .max_timeout_ms = 1000};
    FUZZ_CHECK(framework_new(&fo, &h->fw) == 0);
    FUZZ_CHECK(defs_new(h->fw, &dopt, &h->defs) == 0);
    FUZZ_CHECK(manager_new(&mo, &h->mgr) == 0);
    h->app = (struct app){
        .opt =
            {
                .default_timeout_ms = 1000,
                .max_timeout_ms = 1000,
                .default_memory_mb = 64,
                .max_memory_mb = 64,
                .output_limit = 4096,
                .max_frame = 1 << 20,
                .llm_timeout_ms = 1000,
                .workflow_max_built = 1 << 20, /* reached fast: the fuzzer explores past it */
            },
        .fw = h->fw,
        .defs = h->defs,
        .mgr = h->mgr,
    };
}

void fuzz_host_done(struct fuzz_host *h)
{
    manager_free(h->mgr);
    defs_free(h->defs);
    framework_free(h->fw);
    *h = (struct fuzz_host){0};
}
