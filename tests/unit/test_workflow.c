// SPDX-License-Identifier: MIT
/* Unit tests: handlers/workflow (validation, paths, conditions). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "handlers/workflow.h"
#include "handlers/yaml.h"

static json_t *yaml(const char *text)
{
    json_t *v = NULL;
    char *err = NULL;
    int r = flow_yaml_load(text, strlen(text), NULL, &v, NULL, &err);
    if (r < 0)
        fail_msg("yaml: %s", err ? err : "?");
    free(err);
    return v;
}

static void paths(void **state)
{
    json_t *root = json_loads("{\"steps\": {\"a\": {\"output\": {\"items\": [{\"n\": 1}, "
                              "{\"n\": 2}], \"k k\": 3}}}}",
                              0, NULL);
    assert_int_equal(json_integer_value(workflow_path(root, "$.steps.a.output.items[1].n")), 2);
    assert_int_equal(json_integer_value(workflow_path(root, "$.steps.a.output.items.0.n")), 1);
    assert_int_equal(json_integer_value(workflow_path(root, "$.steps.a.output['k k']")), 3);
    assert_null(workflow_path(root, "$.steps.b.output"));
    assert_null(workflow_path(root, "steps.a"));
    assert_null(workflow_path(root, "$.steps.a.output.items[9]"));
    json_t *v = json_loads("{\"x\": \"$.steps.a.output.items[0]\", \"lit\": \"$not\", "
                           "\"l\": [\"$.steps.a.output['k k']\"]}",
                           0, NULL);
    size_t budget = WORKFLOW_MAX_BUILT_BYTES;
    json_t *r = NULL;
    assert_int_equal(workflow_resolve(root, v, &budget, &r), 0);
    assert_true(budget < WORKFLOW_MAX_BUILT_BYTES);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "x"), "n")), 1);
    assert_string_equal(json_string_value(json_object_get(r, "lit")), "$not");
    assert_int_equal(json_integer_value(json_array_get(json_object_get(r, "l"), 0)), 3);
    json_decref(r);
    json_decref(v);
    json_decref(root);
}

/* Found by fuzz_workflow: a control step whose output holds its own output twice doubled it at
 * every step, and sandboxd's memory with it (20 steps: 200 MB, 30: the host). What references
 * copy is taken from one budget per execution. */
static void references_copy_within_a_budget(void **state)
{
    json_t *root = json_pack("{s:{s:{s:s}}}", "steps", "a", "output", "0123456789");
    json_t *twice = json_pack("[s, s]", "$.steps.a.output", "$.steps.a.output");
    size_t budget = 100000, rounds = 0;
    int r = 0;
    while (r == 0 && rounds < 64) {
        json_t *out = NULL;
        r = workflow_resolve(root, twice, &budget, &out);
        if (r == 0) {
            json_object_set_new(json_object_get(json_object_get(root, "steps"), "a"), "output",
                                out);
            rounds++;
        }
    }
    assert_int_equal(r, -E2BIG);
    /* doubling, a node 64 bytes: 212 bytes, 488, 1040, ... 35264: 69868 in all */
    assert_int_equal(rounds, 8);
    json_t *out = json_true(); /* a constant: overwritten, not leaked */
    assert_int_equal(workflow_resolve(root, twice, &budget, &out), -E2BIG);
    assert_null(out);
    json_decref(twice);
    json_decref(root);
}

static bool when(json_t *root, const char *cond)
{
    json_t *c = json_loads(cond, 0, NULL);
    bool out = false;
    assert_int_equal(workflow_when(root, c, &out), 0);
    json_decref(c);
    return out;
}

static void conditions(void **state)
{
    json_t *root = json_loads("{\"v\": 5, \"s\": \"b\", \"n\": null}", 0, NULL);
    assert_true(when(root, "{\"path\": \"$.v\", \"equals\": 5}"));
    assert_true(when(root, "{\"path\": \"$.v\", \"equals\": 5.0}"));
    assert_false(when(root, "{\"path\": \"$.v\", \"notEquals\": 5}"));
    assert_true(when(root, "{\"path\": \"$.missing\", \"notEquals\": 5}"));
    assert_true(when(root, "{\"path\": \"$.v\", \"lessThan\": 6}"));
    assert_false(when(root, "{\"path\": \"$.v\", \"greaterThan\": 6}"));
    assert_true(when(root, "{\"path\": \"$.s\", \"greaterThan\": \"a\"}"));
    assert_false(when(root, "{\"path\": \"$.s\", \"lessThan\": 3}"));
    assert_true(when(root, "{\"path\": \"$.n\", \"exists\": true}"));
    assert_true(when(root, "{\"path\": \"$.zz\", \"exists\": false}"));
    assert_true(when(root, "{\"path\": \"$.s\", \"in\": [\"a\", \"b\"]}"));
    assert_true(when(root, "{\"and\": [{\"path\": \"$.v\", \"equals\": 5}, {\"path\": \"$.s\", "
                           "\"equals\": \"b\"}]}"));
    assert_true(when(root, "{\"or\": [{\"path\": \"$.v\", \"equals\": 1}, {\"path\": \"$.s\", "
                           "\"equals\": \"b\"}]}"));
    assert_true(when(root, "{\"not\": {\"path\": \"$.v\", \"equals\": 1}}"));
    assert_false(when(root, "{\"not\": [{\"path\": \"$.v\", \"equals\": 5}]}"));
    json_t *bad = json_loads("{\"path\": \"$.v\"}", 0, NULL);
    bool out;
    assert_int_equal(workflow_when(root, bad, &out), -EINVAL);
    json_decref(bad);
    json_decref(root);
}

static const char *invalid(const char *doc, const char **ret_step)
{
    static char msg[512];
    json_t *wf = yaml(doc);
    char *err = NULL;
    int r = workflow_validate(wf, &err, ret_step);
    snprintf(msg, sizeof(msg), "%s", err ? err : "");
    /* the step name points into wf: copy before freeing */
    static char step[128];
    if (*ret_step) {
        snprintf(step, sizeof(step), "%s", *ret_step);
        *ret_step = step;
    }
    free(err);
    json_decref(wf);
    return r < 0 ? msg : NULL;
}

static void validation(void **state)
{
    const char *step;
    assert_null(invalid("startAt: a\nsteps:\n  a: {type: control, next: b}\n"
                        "  b: {type: control, end: true}\n",
                        &step));
    assert_non_null(strstr(invalid("startAt: a\nsteps:\n  a: {type: llm, end: true}\n", &step),
                           "promptTemplate"));
    assert_string_equal(step, "a");
    assert_non_null(
        strstr(invalid("startAt: a\nsteps:\n  a: {type: mcp, end: true}\n", &step), "tool"));
    assert_non_null(
        strstr(invalid("startAt: a\nsteps:\n  a: {type: control, next: a}\n", &step), "no end"));
    /* unreachable steps may loop: only reachable ones must be able to end */
    assert_null(invalid("startAt: a\nsteps:\n  a: {type: control, end: true}\n"
                        "  z: {type: control, next: z}\n",
                        &step));
    assert_non_null(strstr(invalid("startAt: a\nsteps: {}\n", &step), "non-empty"));
    assert_non_null(strstr(invalid("startAt: a\nsteps:\n  a:\n    type: control\n    "
                                   "transitions: []\n",
                                   &step),
                           "non-empty list"));
    assert_non_null(strstr(invalid("startAt: a\nsteps:\n  a:\n    type: control\n    "
                                   "transitions: [{when: {and: []}, next: a}]\n",
                                   &step),
                           "non-empty list"));
    assert_non_null(strstr(invalid("startAt: a\nsteps:\n  a:\n    type: control\n    end: true\n"
                                   "    next: a\n",
                                   &step),
                           "exactly one"));
}

/* n steps s0..s(n-1), each with `transitions` conditional transitions to the next step and a
 * default; the last one ends. Steps are listed in order, which made the old fixed-point
 * reachability take one round per step: 102 s of CPU for 1000 steps of 31 transitions. */
static json_t *chain(int n, int transitions)
{
    json_t *steps = json_object();
    for (int i = 0; i < n; i++) {
        char id[32], next[32];
        snprintf(id, sizeof(id), "s%d", i);
        snprintf(next, sizeof(next), "s%d", i + 1);
        json_t *step = json_pack("{s:s}", "type", "control");
        if (i == n - 1) {
            json_object_set_new(step, "end", json_true());
        } else {
            json_t *list = json_array();
            for (int t = 0; t < transitions - 1; t++)
                json_array_append_new(list,
                                      json_pack("{s:{s:s, s:i}, s:s}", "when", "path",
                                                "$.requestData.x", "equals", t, "next", next));
            json_array_append_new(list, json_pack("{s:s}", "next", next));
            json_object_set_new(step, "transitions", list);
        }
        json_object_set_new(steps, id, step);
    }
    return json_pack("{s:s, s:o}", "startAt", "s0", "steps", steps);
}

static void validation_is_linear(void **state)
{
    /* The shape: 1000 steps with 31 transitions each. The hang guard is the test's
     * timeout (60 s): the old algorithm needed about 100 s. */
    json_t *wf = chain(1000, 31);
    char *err = NULL;
    const char *step = NULL;
    assert_int_equal(workflow_validate(wf, &err, &step), 0);
    json_decref(wf);
    /* a loop that can end is fine; a reachable step that can only loop is found by name */
    wf = chain(50, 3);
    json_t *steps = json_object_get(wf, "steps");
    json_array_insert_new(json_object_get(json_object_get(steps, "s40"), "transitions"), 0,
                          json_pack("{s:{s:s, s:b}, s:s}", "when", "path", "$.requestData.y",
                                    "exists", 1, "next", "s39"));
    assert_int_equal(workflow_validate(wf, &err, &step), 0);
    json_object_set_new(steps, "trap", json_pack("{s:s, s:s}", "type", "control", "next", "trap"));
    json_array_insert_new(json_object_get(json_object_get(steps, "s10"), "transitions"), 0,
                          json_pack("{s:{s:s, s:b}, s:s}", "when", "path", "$.requestData.z",
                                    "exists", 1, "next", "trap"));
    assert_int_equal(workflow_validate(wf, &err, &step), -EINVAL);
    assert_non_null(strstr(err, "step trap can never reach an end"));
    assert_string_equal(step, "trap");
    free(err);
    json_decref(wf);
}

static void transitions_are_capped(void **state)
{
    json_t *wf = chain(3, WORKFLOW_MAX_TRANSITIONS);
    char *err = NULL;
    const char *step = NULL;
    assert_int_equal(workflow_validate(wf, &err, &step), 0);
    json_decref(wf);
    wf = chain(3, WORKFLOW_MAX_TRANSITIONS + 1);
    assert_int_equal(workflow_validate(wf, &err, &step), -EINVAL);
    assert_non_null(strstr(err, "at most 64"));
    assert_string_equal(step, "s0");
    free(err);
    json_decref(wf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(paths),
        cmocka_unit_test(references_copy_within_a_budget),
        cmocka_unit_test(conditions),
        cmocka_unit_test(validation),
        cmocka_unit_test(validation_is_linear),
        cmocka_unit_test(transitions_are_capped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
