// SPDX-License-Identifier: MIT
/*
 * compat — `sandboxd mcp --compat code-execution-mode`, the drop-in for
 * users of the Python bridge mcp-server-code-execution-mode: its defaults
 * (a 120 s maximum timeout, 128 processes) and its environment variables
 * (MCP_BRIDGE_TIMEOUT, _MAX_TIMEOUT, _MEMORY, _PIDS, _CPUS, _STATE_DIR,
 * _OUTPUT_MODE, _LOG_LEVEL, _RUNTIME_IDLE_TIMEOUT) read into sandboxd's
 * options before the command line, which wins. The container-only ones
 * (_RUNTIME, _IMAGE, _CONTAINER_USER) have no meaning here and are reported
 * as ignored. Called by cmd/mcp.c only.
 */
#ifndef SANDBOXD_CMD_COMPAT_H
#define SANDBOXD_CMD_COMPAT_H

#include <stdbool.h>

#include "cmd/common.h"
#include "cmd/setup.h"

#define COMPAT_CODE_EXECUTION_MODE "code-execution-mode"

struct compat_env {
    bool toon;       /* MCP_BRIDGE_OUTPUT_MODE=toon */
    char *notes[16]; /* what to log once logging is set up (owned, NULL-terminated) */
    char *state_dir; /* MCP_BRIDGE_STATE_DIR with ~ expanded (owned), or NULL */
};

/* Apply the compat defaults and the MCP_BRIDGE_* variables of env (envp-style, borrowed) to o
 * and common. 0, or -1 after printing which variable is bad. */
int compat_env_apply(char **env, struct setup_opts *o, struct common_opts *common,
                     struct compat_env *ret);
/* Log the notes (ignored variables, the mode) at info level. */
void compat_env_log(const struct compat_env *e);
/* NULL-safe. */
void compat_env_done(struct compat_env *e);

#endif
