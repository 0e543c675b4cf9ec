// SPDX-License-Identifier: MIT
/*
 * workflow — YAML workflows modelled on Amazon States Language (CONTRACT §8,
 * docs/WORKFLOWS.md). The workflow file is data, parsed with handlers/yaml.h
 * and validated before anything runs (missing steps, unknown types, no
 * reachable end, steps that can never reach one: WORKFLOW_ERROR naming the
 * step). Steps run one after another on the request's thread: jit steps in
 * a sandbox like /execute JIT, llm steps like the LLM handler, mcp steps as
 * framework tool calls, control steps as pure data. At most maxSteps steps
 * run per execution (default 100), which is what stops loops.
 */
#ifndef SANDBOXD_HANDLERS_WORKFLOW_H
#define SANDBOXD_HANDLERS_WORKFLOW_H

#include <jansson.h>
#include <stdbool.h>

#include "handlers/app.h"
#include "handlers/validate.h"

#define WORKFLOW_DEFAULT_MAX_STEPS 100

/* The WORKFLOW handler of /execute. */
void flow_workflow_execute(struct app *a, const struct request_spec *s, struct app_reply *ret);

/* Resolve "$.a.b[0].c" against root (borrowed result, NULL when absent). */
json_t *workflow_path(json_t *root, const char *path);
/* Evaluate a transition condition; -EINVAL for a malformed one. */
int workflow_when(json_t *root, json_t *cond, bool *ret);
/* The values one execution builds from references (inputs, control outputs, mcp params:
 * a "$." string is replaced by a copy of what it points to) hold at most this much, counting
 * a node as WORKFLOW_NODE_BYTES (about what jansson takes for one) plus its text and keys:
 * references to references would otherwise double a value at every step. */
#define WORKFLOW_MAX_BUILT_BYTES (64u << 20)
#define WORKFLOW_NODE_BYTES      64
/* Copy of value (NULL: null) with every string starting with "$." replaced by a copy of what it
 * points to (null when nothing). What the copy costs is taken from *budget. 0 and *ret (new
 * reference), or -E2BIG when the budget runs out (*budget is then smaller, *ret NULL), -ENOMEM. */
int workflow_resolve(json_t *root, json_t *value, size_t *budget, json_t **ret);

#endif
