// SPDX-License-Identifier: MIT
/* Unit tests: exec/artifact (display frames checked, measured and capped by the host; what is
 * dropped is reported) and pool/profile (the --profile syntax). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "exec/artifact.h"
#include "pool/profile.h"

static json_t *frame(const char *name, const char *mime, const char *data)
{
    return json_pack("{s:s, s:{s:s, s:s, s:s, s:i}}", "type", "display", "artifact", "name", name,
                     "mimeType", mime, "data", data, "size", 999999);
}

static json_t *add(struct artifact_set *s, const struct artifact_caps *caps, const char *name,
                   const char *mime, const char *data)
{
    json_t *f = frame(name, mime, data);
    json_t *kept = artifact_set_add(s, caps, f);
    json_decref(f);
    return kept;
}

static void artifacts_are_measured_by_the_host_not_the_sandbox(void **state)
{
    struct artifact_set s = {0};
    struct artifact_caps caps = {.max_count = 8, .max_bytes = 1 << 20};
    json_t *kept = add(&s, &caps, "figure-1.png", "image/png", "aGVsbG8="); /* "hello" */
    assert_non_null(kept);
    assert_int_equal(json_integer_value(json_object_get(kept, "size")), 5);
    assert_string_equal(json_string_value(json_object_get(kept, "data")), "aGVsbG8=");
    kept = add(&s, &caps, "out/table.csv", "text/csv", "");
    assert_non_null(kept);
    assert_int_equal(json_integer_value(json_object_get(kept, "size")), 0);
    json_t *obj = json_object();
    artifact_set_report(&s, &caps, obj, false);
    assert_int_equal(json_array_size(json_object_get(obj, "artifacts")), 2);
    assert_null(json_object_get(obj, "artifactsError"));
    json_decref(obj);
    artifact_set_done(&s);
}

static void malformed_artifacts_are_dropped(void **state)
{
    struct artifact_set s = {0};
    struct artifact_caps caps = {.max_count = 8, .max_bytes = 1 << 20};
    assert_null(add(&s, &caps, "../escape.png", "image/png", "aGVsbG8="));
    assert_null(add(&s, &caps, "/abs.png", "image/png", "aGVsbG8="));
    assert_null(add(&s, &caps, "a//b.png", "image/png", "aGVsbG8="));
    assert_null(add(&s, &caps, "x.png", "image png", "aGVsbG8="));
    assert_null(add(&s, &caps, "x.png", "image/png/x", "aGVsbG8="));
    assert_null(add(&s, &caps, "x.png", "image/png", "not base64!"));
    assert_null(add(&s, &caps, "x.png", "image/png", "aGVsbG8"));
    json_t *bad = json_pack("{s:s, s:{s:i}}", "type", "display", "artifact", "name", 3);
    assert_null(artifact_set_add(&s, &caps, bad));
    json_decref(bad);
    assert_int_equal(s.invalid, 8);
    json_t *obj = json_object();
    artifact_set_report(&s, &caps, obj, true);
    assert_int_equal(json_array_size(json_object_get(obj, "artifacts")), 0);
    json_t *err = json_object_get(obj, "artifactsError");
    assert_string_equal(json_string_value(json_object_get(err, "code")), "INVALID_ARTIFACT");
    json_decref(obj);
    artifact_set_done(&s);
}

static void caps_on_count_and_bytes_are_reported(void **state)
{
    struct artifact_set s = {0};
    struct artifact_caps caps = {.max_count = 2, .max_bytes = 8};
    assert_non_null(add(&s, &caps, "a.txt", "text/plain", "aGVsbG8=")); /* 5 bytes */
    assert_null(add(&s, &caps, "b.txt", "text/plain", "aGVsbG8="));     /* 10 > 8 */
    assert_non_null(add(&s, &caps, "c.txt", "text/plain", "aGk="));     /* 7 */
    assert_null(add(&s, &caps, "d.txt", "text/plain", ""));             /* count */
    json_t *final = json_pack("{s:s, s:{s:i, s:i}}", "type", "result", "artifactsDropped", "count",
                              3, "bytes", 300);
    artifact_set_note_final(&s, final);
    json_decref(final);
    json_t *obj = json_object();
    artifact_set_report(&s, &caps, obj, false);
    assert_int_equal(json_array_size(json_object_get(obj, "artifacts")), 2);
    json_t *err = json_object_get(obj, "artifactsError");
    assert_string_equal(json_string_value(json_object_get(err, "code")), "ARTIFACT_LIMIT");
    assert_int_equal(json_integer_value(json_object_get(err, "dropped")), 5);
    assert_int_equal(json_integer_value(json_object_get(err, "droppedBytes")), 305);
    assert_int_equal(json_integer_value(json_object_get(err, "maxCount")), 2);
    assert_non_null(strstr(json_string_value(json_object_get(err, "message")), "--max-artifacts"));
    json_decref(obj);
    artifact_set_done(&s);
}

static void profile_specs_parse(void **state)
{
    struct profile_spec s;
    char *why = NULL;
    assert_int_equal(profile_spec_parse("ml=numpy,sklearn.linear_model", &s, &why), 0);
    assert_string_equal(s.name, "ml");
    assert_string_equal(s.modules, "numpy,sklearn.linear_model");
    assert_int_equal(s.size, 0);
    assert_int_equal(s.memory_mb, 0);
    profile_spec_done(&s);
    assert_int_equal(profile_spec_parse("ds-2=pandas:size=4:memory=768", &s, &why), 0);
    assert_int_equal(s.size, 4);
    assert_int_equal(s.memory_mb, 768);
    assert_string_equal(s.modules, "pandas");
    profile_spec_done(&s);
    const char *bad[] = {"noequals",
                         "=numpy",
                         "default=numpy",
                         "a b=numpy",
                         "x=",
                         "x=nump y",
                         "x=numpy..linalg",
                         "x=1abc",
                         "x=numpy:size=0",
                         "x=numpy:size=-1",
                         "x=numpy:memory=8",
                         "x=numpy:color=red",
                         "x=numpy:size=",
                         "x=numpy:"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why = NULL;
        assert_int_equal(profile_spec_parse(bad[i], &s, &why), -EINVAL);
        assert_non_null(why);
        free(why);
    }
    assert_true(profile_name_ok("datascience"));
    assert_false(profile_name_ok("default"));
    assert_false(profile_name_ok("../x"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(artifacts_are_measured_by_the_host_not_the_sandbox),
        cmocka_unit_test(malformed_artifacts_are_dropped),
        cmocka_unit_test(caps_on_count_and_bytes_are_reported),
        cmocka_unit_test(profile_specs_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
