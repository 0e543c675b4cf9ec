// SPDX-License-Identifier: MIT
/*
 * validate — see validate.h.
 */
#include "handlers/validate.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/fmt.h"
#include "util/macros.h"
#include "util/path.h"

static const char *const wf_ops[] = {"equals",      "notEquals", "lessThan",
                                     "greaterThan", "exists",    "in"};

static int wf_check_cond(json_t *cond, int depth, const char **why)
{
    if (depth > WORKFLOW_MAX_COND_DEPTH) {
        *why = "conditions nest too deeply";
        return -EINVAL;
    }
    if (!json_is_object(cond)) {
        *why = "a condition must be an object";
        return -EINVAL;
    }
    json_t *list;
    if ((list = json_object_get(cond, "and")) || (list = json_object_get(cond, "or")) ||
        (list = json_object_get(cond, "not"))) {
        if (json_object_size(cond) != 1) {
            *why = "and/or/not stand alone in their condition";
            return -EINVAL;
        }
        if (json_is_object(list) && json_object_get(cond, "not"))
            return wf_check_cond(list, depth + 1, why);
        if (!json_is_array(list) || json_array_size(list) == 0) {
            *why = "and/or/not take a non-empty list of conditions";
            return -EINVAL;
        }
        size_t i;
        json_t *c;
        json_array_foreach(list, i, c)
        {
            int r = wf_check_cond(c, depth + 1, why);
            if (r < 0)
                return r;
        }
        return 0;
    }
    const char *path = json_string_value(json_object_get(cond, "path"));
    if (!path || strncmp(path, "$.", 2) != 0) {
        *why = "a condition needs a path starting with $.";
        return -EINVAL;
    }
    int ops = 0;
    for (size_t i = 0; i < ARRAY_SIZE(wf_ops); i++)
        ops += json_object_get(cond, wf_ops[i]) != NULL;
    if (ops != 1 || json_object_size(cond) != 2) {
        *why = "a condition has a path and exactly one of equals, notEquals, lessThan, "
               "greaterThan, exists, in";
        return -EINVAL;
    }
    json_t *in = json_object_get(cond, "in");
    json_t *ex = json_object_get(cond, "exists");
    if ((in && !json_is_array(in)) || (ex && !json_is_boolean(ex))) {
        *why = "'in' takes a list and 'exists' takes true or false";
        return -EINVAL;
    }
    return 0;
}

static int wf_check_step(json_t *steps, const char *id, json_t *step, char **ret_error)
{
    if (!json_is_object(step))
        return fmt_error(ret_error, EINVAL, "step %s: must be a mapping", id);
    const char *type = json_string_value(json_object_get(step, "type"));
    if (!type)
        return fmt_error(ret_error, EINVAL, "step %s: has no type", id);
    const char *why;
    if (strcmp(type, "jit") == 0) {
        const char *script = json_string_value(json_object_get(step, "script"));
        const char *fn = json_string_value(json_object_get(step, "function"));
        if (!script || (why = path_check_relative(script, strlen(script))))
            return fmt_error(ret_error, EINVAL, "step %s: script %s", id,
                             script ? why : "is required");
        if (!fn || !path_is_identifier(fn))
            return fmt_error(ret_error, EINVAL, "step %s: function must be a Python identifier",
                             id);
    } else if (strcmp(type, "llm") == 0) {
        const char *t = json_string_value(json_object_get(step, "promptTemplate"));
        if (!t || (why = path_check_relative(t, strlen(t))))
            return fmt_error(ret_error, EINVAL, "step %s: promptTemplate %s", id,
                             t ? why : "is required");
        json_t *o = json_object_get(step, "overrides");
        if (o && !json_is_object(o))
            return fmt_error(ret_error, EINVAL, "step %s: overrides must be a mapping", id);
    } else if (strcmp(type, "mcp") == 0) {
        if (!json_string_value(json_object_get(step, "tool")))
            return fmt_error(ret_error, EINVAL, "step %s: tool is required", id);
        json_t *p = json_object_get(step, "params");
        if (p && !json_is_object(p))
            return fmt_error(ret_error, EINVAL, "step %s: params must be a mapping", id);
    } else if (strcmp(type, "control") != 0) {
        return fmt_error(ret_error, EINVAL, "step %s: unknown type '%s' (jit, llm, mcp or control)",
                         id, type);
    }
    json_t *im = json_object_get(step, "inputMapping");
    if (im && !json_is_object(im))
        return fmt_error(ret_error, EINVAL, "step %s: inputMapping must be a mapping", id);
    json_t *next = json_object_get(step, "next");
    json_t *trans = json_object_get(step, "transitions");
    json_t *end = json_object_get(step, "end");
    int ways = (next != NULL) + (trans != NULL) + (json_is_true(end) ? 1 : 0);
    if (end && !json_is_boolean(end))
        return fmt_error(ret_error, EINVAL, "step %s: end must be true or false", id);
    if (ways != 1)
        return fmt_error(ret_error, EINVAL,
                         "step %s: needs exactly one of next, transitions or end: true", id);
    if (next && (!json_is_string(next) || !json_object_get(steps, json_string_value(next))))
        return fmt_error(ret_error, EINVAL, "step %s: next names no step (%s)", id,
                         json_is_string(next) ? json_string_value(next) : "not a string");
    if (trans) {
        if (!json_is_array(trans) || json_array_size(trans) == 0)
            return fmt_error(ret_error, EINVAL, "step %s: transitions must be a non-empty list",
                             id);
        if (json_array_size(trans) > WORKFLOW_MAX_TRANSITIONS)
            return fmt_error(ret_error, EINVAL, "step %s: has %zu transitions, at most %d", id,
                             json_array_size(trans), WORKFLOW_MAX_TRANSITIONS);
        size_t i;
        json_t *t;
        json_array_foreach(trans, i, t)
        {
            const char *tn = json_string_value(json_object_get(t, "next"));
            if (!json_is_object(t) || !tn || !json_object_get(steps, tn))
                return fmt_error(ret_error, EINVAL,
                                 "step %s: transition %zu needs a next that names a step", id, i);
            json_t *when = json_object_get(t, "when");
            if (when && wf_check_cond(when, 0, &why) < 0)
                return fmt_error(ret_error, EINVAL, "step %s: transition %zu: %s", id, i, why);
        }
    }
    return 0;
}

/* The step graph: steps numbered in document order, edges (next and every transition's next)
 * in compressed rows, forwards (succ) and backwards (pred). */
struct wf_graph {
    size_t n, edges;
    const char **ids; /* borrowed from the document */
    size_t *succ_at, *succ;
    size_t *pred_at, *pred;
};

static void wf_graph_free(struct wf_graph *g)
{
    free(g->ids);
    free(g->succ_at);
    free(g->succ);
    free(g->pred_at);
    free(g->pred);
}

/* The index of each target of step (next, then transitions), through index (name -> n). */
static size_t wf_step_targets(json_t *index, json_t *step, size_t *out)
{
    size_t k = 0;
    json_t *next = json_object_get(step, "next");
    if (next)
        out[k++] = (size_t)json_integer_value(json_object_get(index, json_string_value(next)));
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(step, "transitions"), i, t) out[k++] =
        (size_t)json_integer_value(
            json_object_get(index, json_string_value(json_object_get(t, "next"))));
    return k;
}

/* Build g from steps whose targets were all checked to name steps. */
static int wf_graph_build(json_t *steps, struct wf_graph *g)
{
    *g = (struct wf_graph){.n = json_object_size(steps)};
    json_t *index = json_object();
    g->ids = calloc(g->n, sizeof(*g->ids));
    g->succ_at = calloc(g->n + 1, sizeof(size_t));
    g->pred_at = calloc(g->n + 1, sizeof(size_t));
    int r = -ENOMEM;
    if (!index || !g->ids || !g->succ_at || !g->pred_at)
        goto out;
    const char *id;
    json_t *step;
    size_t k = 0;
    json_object_foreach(steps, id, step)
    {
        g->ids[k] = id;
        if (json_object_set_new(index, id, json_integer((json_int_t)k)) < 0)
            goto out;
        size_t nt = (json_object_get(step, "next") ? 1 : 0) +
                    json_array_size(json_object_get(step, "transitions"));
        g->succ_at[++k] = nt;
        g->edges += nt;
    }
    g->succ = calloc(g->edges + 1, sizeof(size_t));
    g->pred = calloc(g->edges + 1, sizeof(size_t));
    if (!g->succ || !g->pred)
        goto out;
    for (size_t i = 0; i < g->n; i++)
        g->succ_at[i + 1] += g->succ_at[i];
    k = 0;
    json_object_foreach(steps, id, step)
    {
        size_t nt = wf_step_targets(index, step, g->succ + g->succ_at[k]);
        for (size_t e = 0; e < nt; e++)
            g->pred_at[g->succ[g->succ_at[k] + e] + 1]++;
        k++;
    }
    for (size_t i = 0; i < g->n; i++)
        g->pred_at[i + 1] += g->pred_at[i];
    size_t *fill = calloc(g->n + 1, sizeof(size_t));
    if (!fill)
        goto out;
    memcpy(fill, g->pred_at, (g->n + 1) * sizeof(size_t));
    for (size_t i = 0; i < g->n; i++)
        for (size_t e = g->succ_at[i]; e < g->succ_at[i + 1]; e++)
            g->pred[fill[g->succ[e]]++] = i;
    free(fill);
    r = 0;
out:
    json_decref(index);
    return r;
}

/* Mark everything reachable from the marked nodes along rows (at, to); queue has n slots. */
static void wf_graph_spread(size_t n, const size_t *at, const size_t *to, bool *mark, size_t *queue)
{
    size_t head = 0, tail = 0;
    for (size_t i = 0; i < n; i++)
        if (mark[i])
            queue[tail++] = i;
    while (head < tail) {
        size_t i = queue[head++];
        for (size_t e = at[i]; e < at[i + 1]; e++)
            if (!mark[to[e]]) {
                mark[to[e]] = true;
                queue[tail++] = to[e];
            }
    }
}

int workflow_validate(json_t *wf, char **ret_error, const char **ret_step)
{
    *ret_error = NULL;
    *ret_step = NULL;
    if (!json_is_object(wf))
        return fmt_error(ret_error, EINVAL, "a workflow must be a mapping");
    const char *start = json_string_value(json_object_get(wf, "startAt"));
    json_t *steps = json_object_get(wf, "steps");
    if (!json_is_object(steps) || json_object_size(steps) == 0)
        return fmt_error(ret_error, EINVAL, "a workflow needs a non-empty mapping of steps");
    if (json_object_size(steps) > WORKFLOW_LIMIT_MAX_STEPS)
        return fmt_error(ret_error, EINVAL, "a workflow has at most %d steps",
                         WORKFLOW_LIMIT_MAX_STEPS);
    if (!start || !json_object_get(steps, start))
        return fmt_error(ret_error, EINVAL, "startAt must name a step");
    json_t *ms = json_object_get(wf, "maxSteps");
    if (ms && (!json_is_integer(ms) || json_integer_value(ms) < 1 ||
               json_integer_value(ms) > WORKFLOW_LIMIT_MAX_STEPS))
        return fmt_error(ret_error, EINVAL, "maxSteps must be an integer in [1, %d]",
                         WORKFLOW_LIMIT_MAX_STEPS);
    const char *id;
    json_t *step;
    json_object_foreach(steps, id, step)
    {
        int r = wf_check_step(steps, id, step, ret_error);
        if (r < 0) {
            *ret_step = id;
            return r;
        }
    }
    /* Every step reachable from startAt must be able to reach a step with end: true. */
    struct wf_graph g;
    int r = wf_graph_build(steps, &g);
    bool *reach = calloc(g.n, sizeof(bool)), *ends = calloc(g.n, sizeof(bool));
    size_t *queue = calloc(g.n, sizeof(size_t));
    if (r < 0 || !reach || !ends || !queue) {
        r = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < g.n; i++) {
        reach[i] = strcmp(g.ids[i], start) == 0;
        ends[i] = json_is_true(json_object_get(json_object_get(steps, g.ids[i]), "end"));
    }
    wf_graph_spread(g.n, g.succ_at, g.succ, reach, queue);
    wf_graph_spread(g.n, g.pred_at, g.pred, ends, queue);
    for (size_t i = 0; i < g.n; i++)
        if (reach[i] && !ends[i]) {
            *ret_step = g.ids[i];
            r = fmt_error(ret_error, EINVAL,
                          strcmp(g.ids[i], start) == 0
                              ? "no end is reachable from step %s"
                              : "step %s can never reach an end (an endless loop)",
                          g.ids[i]);
            break;
        }
out:
    wf_graph_free(&g);
    free(reach);
    free(ends);
    free(queue);
    return r;
}
