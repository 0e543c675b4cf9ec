// SPDX-License-Identifier: MIT
/*
 * validate — checks a workflow document before anything runs (see
 * workflow.h and docs/WORKFLOWS.md): every step's fields, every condition,
 * the names that next and transitions use, and that every step reachable
 * from startAt can reach an end. Runs on the request's thread over an
 * untrusted document, so it is linear in the document's size: steps are
 * indexed by name, reachability is one breadth-first search forwards and
 * one backwards, and the counts that drive it are capped (steps,
 * transitions per step, condition depth).
 */
#ifndef SANDBOXD_HANDLERS_VALIDATE_H
#define SANDBOXD_HANDLERS_VALIDATE_H

#include <jansson.h>

#define WORKFLOW_LIMIT_MAX_STEPS 1000 /* steps in a document, and maxSteps at most */
#define WORKFLOW_MAX_TRANSITIONS 64   /* transitions of one step */
#define WORKFLOW_MAX_COND_DEPTH  32   /* and/or/not nesting of one condition */

/* Check a workflow document; 0, or -EINVAL with a message (caller frees) and the step it is
 * about (static or inside wf; NULL when about the whole workflow); -ENOMEM. */
int workflow_validate(json_t *wf, char **ret_error, const char **ret_step);

#endif
