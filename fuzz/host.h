// SPDX-License-Identifier: MIT
/*
 * host — the host side of sandboxd as the workflow and template targets
 * need it, built from the real modules: the embedded "local" framework
 * serving definitions from a private temporary directory, the definition
 * cache, and an execution manager that admits nothing, so a step that would
 * start a sandbox is refused (503) instead. Everything that runs on the host
 * alone (YAML, validation, control and mcp steps, core.state, the echo LLM)
 * runs for real. Test code only.
 */
#ifndef SANDBOXD_FUZZ_HOST_H
#define SANDBOXD_FUZZ_HOST_H

#include <stddef.h>

#include "handlers/app.h"

#define FUZZ_HOST_APP "fuzz"

struct fuzz_host {
    struct app app;
    struct framework *fw;
    struct defs *defs;
    struct manager *mgr;
};

/* A fresh host (nothing carried over from an earlier input, so runs are deterministic); aborts
 * when it cannot be built. */
void fuzz_host_init(struct fuzz_host *h);
void fuzz_host_done(struct fuzz_host *h);
/* Write the definition file path (relative, one directory level at most) of FUZZ_HOST_APP. */
void fuzz_host_put(const char *path, const void *data, size_t len);

#endif
