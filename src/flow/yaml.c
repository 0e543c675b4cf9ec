// SPDX-License-Identifier: MIT
/*
 * yaml — see yaml.h. libyaml's events are turned into jansson values on a
 * stack of open mappings and sequences; anchors keep a reference to their
 * value and its expanded size, and an alias is a deep copy that counts with
 * that size. Plain scalars are typed here (null, booleans, integers, reals);
 * anything else, and every quoted scalar, stays a string.
 */
#include "flow/yaml.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "util/macros.h"
#include "util/fmt.h"

#define FLOW_YAML_MAX_DEPTH   64
#define FLOW_YAML_MAX_ANCHORS 1024

struct yaml_frame {
    json_t *node;
    char *key; /* mappings: the key waiting for its value */
    char *anchor;
    size_t size; /* expanded nodes below and including this one */
};

struct yaml_anchor {
    char *name;
    json_t *value;
    size_t size;
};

struct yaml_state {
    struct yaml_frame stack[FLOW_YAML_MAX_DEPTH];
    size_t depth;
    struct yaml_anchor anchors[FLOW_YAML_MAX_ANCHORS];
    size_t n_anchors;
    size_t nodes, max_nodes;
    json_t *root;
};

static bool yaml_match(const char *s, const char *const *words)
{
    for (; *words; words++)
        if (strcmp(s, *words) == 0)
            return true;
    return false;
}

static json_t *yaml_scalar(const yaml_event_t *ev)
{
    const char *v = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    const char *tag = (const char *)ev->data.scalar.tag;
    if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || (tag && strcmp(tag, YAML_STR_TAG) == 0))
        return json_stringn(v, len);
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
    static const char *const trues[] = {"true", "True", "TRUE", NULL};
    static const char *const falses[] = {"false", "False", "FALSE", NULL};
    if (yaml_match(v, nulls))
        return json_null();
    if (yaml_match(v, trues))
        return json_true();
    if (yaml_match(v, falses))
        return json_false();
    char *end;
    errno = 0;
    if (len > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'o')) {
        long long n = strtoll(v + 2, &end, v[1] == 'x' ? 16 : 8);
        if (!errno && *end == '\0')
            return json_integer(n);
    }
    bool digits = len > 0, dot = false;
    for (size_t i = (v[0] == '-' || v[0] == '+') ? 1 : 0; i < len; i++) {
        if (isdigit((unsigned char)v[i]))
            continue;
        if (v[i] == '.' || v[i] == 'e' || v[i] == 'E' ||
            ((v[i] == '-' || v[i] == '+') && i && (v[i - 1] == 'e' || v[i - 1] == 'E'))) {
            dot = true;
            continue;
        }
        digits = false;
        break;
    }
    if (digits && !dot) {
        long long n = strtoll(v, &end, 10);
        if (!errno && *end == '\0')
            return json_integer(n);
    }
    if (digits && dot) {
        double d = strtod(v, &end);
        if (!errno && *end == '\0' && isfinite(d))
            return json_real(d);
    }
    return json_stringn(v, len); /* .inf/.nan and anything else stay text */
}

static int yaml_add(struct yaml_state *st, json_t *value, size_t size, const char *anchor,
                    char **ret_error)
{
    if (!value)
        return fmt_error(ret_error, ENOMEM, "out of memory");
    if (anchor) {
        if (st->n_anchors == FLOW_YAML_MAX_ANCHORS) {
            json_decref(value);
            return fmt_error(ret_error, E2BIG, "too many anchors");
        }
        struct yaml_anchor *a = &st->anchors[st->n_anchors++];
        a->name = strdup(anchor);
        a->value = json_incref(value);
        a->size = size;
    }
    if (st->depth == 0) {
        if (!st->root)
            st->root = value;
        else
            json_decref(value);
        return 0;
    }
    struct yaml_frame *top = &st->stack[st->depth - 1];
    top->size += size;
    if (json_is_array(top->node))
        return json_array_append_new(top->node, value) == 0 ? 0
                                                            : fmt_error(ret_error, ENOMEM, "oom");
    if (!top->key) {
        /* Keys: strings; other scalars are written as their text (YAML "1:" is "1"). */
        if (json_is_string(value))
            top->key = strdup(json_string_value(value));
        else if (json_is_integer(value) || json_is_real(value) || json_is_boolean(value) ||
                 json_is_null(value))
            top->key = json_dumps(value, JSON_ENCODE_ANY);
        json_decref(value);
        if (!top->key)
            return fmt_error(ret_error, EINVAL, "mapping keys must be scalars");
        return 0;
    }
    int r = json_object_set_new(top->node, top->key, value);
    free(top->key);
    top->key = NULL;
    return r == 0 ? 0 : fmt_error(ret_error, ENOMEM, "oom");
}

int flow_yaml_load(const char *text, size_t len, size_t max_nodes, json_t **ret, char **ret_error)
{
    *ret = NULL;
    *ret_error = NULL;
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return fmt_error(ret_error, ENOMEM, "cannot initialise the YAML parser");
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    struct yaml_state *st = calloc(1, sizeof(*st));
    int r = 0;
    if (!st) {
        yaml_parser_delete(&p);
        return -ENOMEM;
    }
    st->max_nodes = max_nodes ? max_nodes : FLOW_YAML_MAX_NODES;
    bool done = false;
    while (!done && r == 0) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            r = fmt_error(ret_error, EINVAL, "YAML error at line %zu: %s",
                          (size_t)p.problem_mark.line + 1, p.problem ? p.problem : "unknown");
            break;
        }
        switch (ev.type) {
        case YAML_MAPPING_START_EVENT:
        case YAML_SEQUENCE_START_EVENT:
            if (st->depth == FLOW_YAML_MAX_DEPTH) {
                r = fmt_error(ret_error, E2BIG, "YAML nested deeper than %d levels",
                              FLOW_YAML_MAX_DEPTH);
                break;
            }
            if (++st->nodes > st->max_nodes) {
                r = fmt_error(ret_error, E2BIG, "YAML document larger than %zu nodes",
                              st->max_nodes);
                break;
            }
            {
                const char *anchor = (const char *)(ev.type == YAML_MAPPING_START_EVENT
                                                        ? ev.data.mapping_start.anchor
                                                        : ev.data.sequence_start.anchor);
                struct yaml_frame *f = &st->stack[st->depth++];
                *f = (struct yaml_frame){
                    .node = ev.type == YAML_MAPPING_START_EVENT ? json_object() : json_array(),
                    .anchor = anchor ? strdup(anchor) : NULL,
                    .size = 1,
                };
            }
            break;
        case YAML_MAPPING_END_EVENT:
        case YAML_SEQUENCE_END_EVENT: {
            struct yaml_frame f = st->stack[--st->depth];
            free(f.key);
            r = yaml_add(st, f.node, f.size, f.anchor, ret_error);
            free(f.anchor);
            break;
        }
        case YAML_SCALAR_EVENT:
            if (++st->nodes > st->max_nodes) {
                r = fmt_error(ret_error, E2BIG, "YAML document larger than %zu nodes",
                              st->max_nodes);
                break;
            }
            r = yaml_add(st, yaml_scalar(&ev), 1, (const char *)ev.data.scalar.anchor, ret_error);
            break;
        case YAML_ALIAS_EVENT: {
            const char *name = (const char *)ev.data.alias.anchor;
            struct yaml_anchor *a = NULL;
            for (size_t i = st->n_anchors; i-- > 0;)
                if (strcmp(st->anchors[i].name, name) == 0) {
                    a = &st->anchors[i];
                    break;
                }
            if (!a) {
                r = fmt_error(ret_error, EINVAL, "YAML alias *%s has no anchor", name);
                break;
            }
            st->nodes += a->size;
            if (st->nodes > st->max_nodes) {
                r = fmt_error(ret_error, E2BIG, "YAML aliases expand beyond %zu nodes",
                              st->max_nodes);
                break;
            }
            r = yaml_add(st, json_deep_copy(a->value), a->size, NULL, ret_error);
            break;
        }
        case YAML_DOCUMENT_END_EVENT:
        case YAML_STREAM_END_EVENT:
            done = true; /* only the first document counts */
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    while (st->depth > 0) {
        struct yaml_frame *f = &st->stack[--st->depth];
        json_decref(f->node);
        free(f->key);
        free(f->anchor);
    }
    for (size_t i = 0; i < st->n_anchors; i++) {
        free(st->anchors[i].name);
        json_decref(st->anchors[i].value);
    }
    if (r == 0)
        *ret = st->root ? st->root : json_null();
    else
        json_decref(st->root);
    free(st);
    yaml_parser_delete(&p);
    return r;
}
