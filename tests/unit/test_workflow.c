// SPDX-License-Identifier: MIT
/* Unit tests: flow/workflow (validation, paths, conditions). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "flow/workflow.h"
#include "flow/yaml.h"

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
    json_t *r = workflow_resolve(root, v);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "x"), "n")), 1);
    assert_string_equal(json_string_value(json_object_get(r, "lit")), "$not");
    assert_int_equal(json_integer_value(json_array_get(json_object_get(r, "l"), 0)), 3);
    json_decref(r);
    json_decref(v);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(paths),
        cmocka_unit_test(conditions),
        cmocka_unit_test(validation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
