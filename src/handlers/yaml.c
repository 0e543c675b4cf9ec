// SPDX-License-Identifier: MIT
/*
 * yaml — see yaml.h. libyaml's events are turned into jansson values on a
 * stack of open mappings and sequences. Every node adds to two running
 * totals, nodes and bytes (a scalar its length plus a fixed overhead, a
 * container the overhead), checked at each step; an anchor remembers its
 * value and the totals of its subtree, and an alias adds those totals and a
 * reference to the same value. Anchors are found through a hash table, so
 * a document of many aliases costs linear time.
 */
#include "handlers/yaml.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>
#include <yaml.h>

#include "util/fmt.h"
#include "util/jdump.h"
#include "util/macros.h"

#define YAML_NODE_OVERHEAD 8 /* bytes counted per node besides a scalar's text */

struct yaml_frame {
    json_t *node;
    char *key; /* mappings: the key waiting for its value */
    size_t key_len;
    char *anchor;
    size_t nodes, bytes; /* of the subtree, aliases expanded */
    size_t height;       /* levels of containers below it (its children's greatest height) */
};

struct yaml_anchor {
    char *name;
    json_t *value;
    size_t nodes, bytes;
    size_t height; /* levels of containers in value: 0 for a scalar */
    UT_hash_handle hh;
};

struct yaml_state {
    struct yaml_frame stack[FLOW_YAML_MAX_DEPTH];
    size_t depth;
    struct yaml_anchor *anchors;
    size_t n_anchors;
    size_t nodes, bytes, max_nodes, max_bytes;
    size_t line; /* of the event being handled, for messages */
    json_t *root;
    char **error;
};

/* ---- plain scalars: the YAML 1.2 core schema ---------------------------------------------- */

static bool yaml_is_one_of(const char *s, const char *const *words)
{
    for (; *words; words++)
        if (strcmp(s, *words) == 0)
            return true;
    return false;
}

static size_t yaml_span(const char *s, const char *set)
{
    return strspn(s, set);
}

#define YAML_DIGITS "0123456789"

/* [-+]?[0-9]+ | 0o[0-7]+ | 0x[0-9a-fA-F]+ ; *ret_base is 10, 8 or 16, *ret_digits where the
 * digits (with the sign, for base 10) start. */
static bool yaml_is_int(const char *s, int *ret_base, const char **ret_digits)
{
    if (s[0] == '0' && (s[1] == 'o' || s[1] == 'x')) {
        const char *d = s + 2;
        size_t n = yaml_span(d, s[1] == 'o' ? "01234567" : YAML_DIGITS "abcdefABCDEF");
        *ret_base = s[1] == 'o' ? 8 : 16;
        *ret_digits = d;
        return n > 0 && d[n] == '\0';
    }
    const char *d = s + (s[0] == '-' || s[0] == '+');
    size_t n = yaml_span(d, YAML_DIGITS);
    *ret_base = 10;
    *ret_digits = s;
    return n > 0 && d[n] == '\0';
}

/* [-+]? ( \.[0-9]+ | [0-9]+ ( \.[0-9]* )? ) ( [eE][-+]?[0-9]+ )? */
static bool yaml_is_float(const char *s)
{
    const char *p = s + (s[0] == '-' || s[0] == '+');
    size_t whole = yaml_span(p, YAML_DIGITS);
    p += whole;
    if (*p == '.') {
        size_t frac = yaml_span(p + 1, YAML_DIGITS);
        if (!whole && !frac)
            return false;
        p += 1 + frac;
    } else if (!whole) {
        return false;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        p += (*p == '-' || *p == '+');
        size_t exp = yaml_span(p, YAML_DIGITS);
        if (!exp)
            return false;
        p += exp;
    }
    return *p == '\0';
}

static bool yaml_is_special_float(const char *s)
{
    static const char *const special[] = {".inf",  ".Inf",  ".INF",  "+.inf", "+.Inf",
                                          "+.INF", "-.inf", "-.Inf", "-.INF", ".nan",
                                          ".NaN",  ".NAN",  NULL};
    return yaml_is_one_of(s, special);
}

enum yaml_kind { YAML_ANY, YAML_NULL, YAML_BOOL, YAML_INT, YAML_FLOAT };

/* Resolve plain text v (NUL-terminated: libyaml terminates scalars) as kind; NULL and no
 * error when it is not of that kind (YAML_ANY: a string then). */
static json_t *yaml_resolve(struct yaml_state *st, const char *v, size_t len, enum yaml_kind kind,
                            int *ret_err)
{
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
    static const char *const trues[] = {"true", "True", "TRUE", NULL};
    static const char *const falses[] = {"false", "False", "FALSE", NULL};
    *ret_err = 0;
    if (strlen(v) != len) /* a NUL inside: only a string can hold it */
        return kind == YAML_ANY ? json_stringn(v, len) : NULL;
    if ((kind == YAML_ANY || kind == YAML_NULL) && yaml_is_one_of(v, nulls))
        return json_null();
    if ((kind == YAML_ANY || kind == YAML_BOOL) && yaml_is_one_of(v, trues))
        return json_true();
    if ((kind == YAML_ANY || kind == YAML_BOOL) && yaml_is_one_of(v, falses))
        return json_false();
    int base;
    const char *digits;
    if ((kind == YAML_ANY || kind == YAML_INT) && yaml_is_int(v, &base, &digits)) {
        errno = 0;
        char *end;
        long long n = 0;
        if (base == 10) {
            n = strtoll(digits, &end, 10);
        } else {
            unsigned long long u = strtoull(digits, &end, base);
            if (!errno && u > INT64_MAX)
                errno = ERANGE;
            n = (long long)u;
        }
        if (errno || *end) {
            *ret_err = fmt_error(st->error, EINVAL,
                                 "YAML integer %s at line %zu is outside the 64-bit range "
                                 "(quote it for a string)",
                                 v, st->line);
            return NULL;
        }
        return json_integer(n);
    }
    if ((kind == YAML_ANY || kind == YAML_FLOAT) && yaml_is_float(v)) {
        double d = strtod(v, NULL);
        if (!isfinite(d)) {
            *ret_err =
                fmt_error(st->error, EINVAL, "YAML number %s at line %zu is too large for a double",
                          v, st->line);
            return NULL;
        }
        return json_real(d);
    }
    if ((kind == YAML_ANY || kind == YAML_FLOAT) && yaml_is_special_float(v)) {
        *ret_err = fmt_error(st->error, EINVAL,
                             "YAML value %s at line %zu is not a finite number, which JSON "
                             "cannot carry (quote it for a string)",
                             v, st->line);
        return NULL;
    }
    return kind == YAML_ANY ? json_stringn(v, len) : NULL;
}

static int yaml_scalar(struct yaml_state *st, const yaml_event_t *ev, json_t **ret)
{
    static const struct {
        const char *tag;
        enum yaml_kind kind;
        const char *name;
    } tags[] = {
        {YAML_NULL_TAG, YAML_NULL, "!!null"},
        {YAML_BOOL_TAG, YAML_BOOL, "!!bool"},
        {YAML_INT_TAG, YAML_INT, "!!int"},
        {YAML_FLOAT_TAG, YAML_FLOAT, "!!float"},
    };
    const char *v = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    const char *tag = (const char *)ev->data.scalar.tag;
    int r = 0;
    *ret = NULL;
    if (!tag) { /* quoted, literal and folded scalars are strings; plain ones are resolved */
        *ret = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE
                   ? yaml_resolve(st, v, len, YAML_ANY, &r)
                   : json_stringn(v, len);
    } else if (strcmp(tag, "!") == 0 || strcmp(tag, YAML_STR_TAG) == 0) {
        *ret = json_stringn(v, len);
    } else {
        size_t i = 0;
        while (i < ARRAY_SIZE(tags) && strcmp(tag, tags[i].tag) != 0)
            i++;
        if (i == ARRAY_SIZE(tags))
            return fmt_error(st->error, EINVAL,
                             "YAML tag %s at line %zu is not supported (only the core schema's "
                             "!!str, !!int, !!float, !!bool, !!null)",
                             tag, st->line);
        *ret = yaml_resolve(st, v, len, tags[i].kind, &r);
        if (!*ret && r == 0)
            return fmt_error(st->error, EINVAL, "YAML value '%.64s' at line %zu is not a %s", v,
                             st->line, tags[i].name);
    }
    if (r < 0)
        return r;
    return *ret ? 0 : fmt_error(st->error, ENOMEM, "out of memory");
}

/* ---- building the tree -------------------------------------------------------------------- */

static int yaml_count(struct yaml_state *st, size_t nodes, size_t bytes)
{
    st->nodes += nodes;
    st->bytes += bytes;
    if (st->nodes > st->max_nodes)
        return fmt_error(st->error, E2BIG,
                         "YAML document expands beyond %zu nodes (an alias counts as what it "
                         "repeats; line %zu)",
                         st->max_nodes, st->line);
    if (st->bytes > st->max_bytes)
        return fmt_error(st->error, E2BIG,
                         "YAML document expands beyond %zu bytes (an alias counts as what it "
                         "repeats; line %zu)",
                         st->max_bytes, st->line);
    return 0;
}

static int yaml_remember(struct yaml_state *st, const char *name, json_t *value, size_t nodes,
                         size_t bytes, size_t height)
{
    struct yaml_anchor *a = NULL;
    HASH_FIND_STR(st->anchors, name, a);
    if (!a) { /* a name may be anchored again: the later node wins */
        if (st->n_anchors == FLOW_YAML_MAX_ANCHORS)
            return fmt_error(st->error, E2BIG, "YAML document has more than %d anchors",
                             FLOW_YAML_MAX_ANCHORS);
        if (!(a = calloc(1, sizeof(*a))) || !(a->name = strdup(name))) {
            free(a);
            return fmt_error(st->error, ENOMEM, "out of memory");
        }
        HASH_ADD_KEYPTR(hh, st->anchors, a->name, strlen(a->name), a);
        st->n_anchors++;
    }
    json_decref(a->value);
    a->value = json_incref(value);
    a->nodes = nodes;
    a->bytes = bytes;
    a->height = height;
    return 0;
}

/* A completed node (value stolen; height levels of containers) goes into the open container,
 * or becomes the root. */
static int yaml_add(struct yaml_state *st, json_t *value, size_t nodes, size_t bytes, size_t height,
                    const char *anchor)
{
    int r = anchor ? yaml_remember(st, anchor, value, nodes, bytes, height) : 0;
    if (r < 0 || st->depth == 0) {
        if (r == 0 && !st->root)
            st->root = TAKE_PTR(value);
        json_decref(value);
        return r;
    }
    struct yaml_frame *top = &st->stack[st->depth - 1];
    top->nodes += nodes;
    top->bytes += bytes;
    if (height > top->height)
        top->height = height;
    if (json_is_array(top->node))
        return json_array_append_new(top->node, value) == 0 ? 0
                                                            : fmt_error(st->error, ENOMEM, "oom");
    if (!top->key) {
        /* JSON keys are strings: other scalars become their JSON text (1 -> "1"). */
        if (json_is_string(value)) {
            top->key_len = json_string_length(value);
            top->key = malloc(top->key_len + 1);
            if (top->key)
                memcpy(top->key, json_string_value(value), top->key_len + 1);
        } else if (!json_is_object(value) && !json_is_array(value)) {
            top->key = jdump(value, JSON_COMPACT, &top->key_len);
        } else {
            json_decref(value);
            return fmt_error(st->error, EINVAL, "YAML mapping key at line %zu is not a scalar",
                             st->line);
        }
        json_decref(value);
        return top->key ? 0 : fmt_error(st->error, ENOMEM, "out of memory");
    }
    if (json_object_getn(top->node, top->key, top->key_len)) {
        r = fmt_error(st->error, EINVAL, "YAML mapping has a duplicate key '%.*s' at line %zu",
                      (int)(top->key_len > 64 ? 64 : top->key_len), top->key, st->line);
        json_decref(value);
    } else if (json_object_setn_new(top->node, top->key, top->key_len, value) < 0) {
        r = fmt_error(st->error, ENOMEM, "out of memory");
    }
    free(top->key);
    top->key = NULL;
    return r;
}

static int yaml_open(struct yaml_state *st, const yaml_event_t *ev)
{
    bool map = ev->type == YAML_MAPPING_START_EVENT;
    const char *tag =
        (const char *)(map ? ev->data.mapping_start.tag : ev->data.sequence_start.tag);
    const char *anchor =
        (const char *)(map ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor);
    if (tag && strcmp(tag, "!") != 0 && strcmp(tag, map ? YAML_MAP_TAG : YAML_SEQ_TAG) != 0)
        return fmt_error(st->error, EINVAL, "YAML tag %s at line %zu is not supported", tag,
                         st->line);
    if (st->depth == FLOW_YAML_MAX_DEPTH)
        return fmt_error(st->error, E2BIG, "YAML nested deeper than %d levels (line %zu)",
                         FLOW_YAML_MAX_DEPTH, st->line);
    int r = yaml_count(st, 1, YAML_NODE_OVERHEAD);
    if (r < 0)
        return r;
    struct yaml_frame *f = &st->stack[st->depth];
    *f = (struct yaml_frame){
        .node = map ? json_object() : json_array(),
        .anchor = anchor ? strdup(anchor) : NULL,
        .nodes = 1,
        .bytes = YAML_NODE_OVERHEAD,
    };
    if (!f->node || (anchor && !f->anchor)) {
        json_decref(f->node);
        free(f->anchor);
        return fmt_error(st->error, ENOMEM, "out of memory");
    }
    st->depth++;
    return 0;
}

static int yaml_alias(struct yaml_state *st, const yaml_event_t *ev)
{
    const char *name = (const char *)ev->data.alias.anchor;
    struct yaml_anchor *a = NULL;
    HASH_FIND_STR(st->anchors, name, a);
    if (!a) /* also an alias inside its own anchor's node: that node is not complete yet */
        return fmt_error(st->error, EINVAL, "YAML alias *%s at line %zu names no earlier anchor",
                         name, st->line);
    /* What an alias repeats nests as deep where it is repeated: the depth cap holds for the
     * expanded document, which JSON parsers (jansson's, Python's) must be able to read. */
    if (st->depth + a->height > FLOW_YAML_MAX_DEPTH)
        return fmt_error(st->error, E2BIG,
                         "YAML alias *%s at line %zu nests deeper than %d levels where it is "
                         "repeated",
                         name, st->line, FLOW_YAML_MAX_DEPTH);
    int r = yaml_count(st, a->nodes, a->bytes);
    return r < 0 ? r : yaml_add(st, json_incref(a->value), a->nodes, a->bytes, a->height, NULL);
}

static int yaml_event(struct yaml_state *st, const yaml_event_t *ev, size_t *documents, bool *done)
{
    st->line = (size_t)ev->start_mark.line + 1;
    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT:
        if (++*documents > 1)
            return fmt_error(st->error, EINVAL,
                             "YAML stream holds more than one document (the second starts at "
                             "line %zu)",
                             st->line);
        return 0;
    case YAML_MAPPING_START_EVENT:
    case YAML_SEQUENCE_START_EVENT:
        return yaml_open(st, ev);
    case YAML_MAPPING_END_EVENT:
    case YAML_SEQUENCE_END_EVENT: {
        struct yaml_frame f = st->stack[--st->depth];
        free(f.key);
        int r = yaml_add(st, f.node, f.nodes, f.bytes, f.height + 1, f.anchor);
        free(f.anchor);
        return r;
    }
    case YAML_SCALAR_EVENT: {
        int r = yaml_count(st, 1, ev->data.scalar.length + YAML_NODE_OVERHEAD);
        json_t *v = NULL;
        if (r == 0)
            r = yaml_scalar(st, ev, &v);
        if (r == 0)
            r = yaml_add(st, v, 1, ev->data.scalar.length + YAML_NODE_OVERHEAD, 0,
                         (const char *)ev->data.scalar.anchor);
        return r;
    }
    case YAML_ALIAS_EVENT:
        return yaml_alias(st, ev);
    case YAML_STREAM_END_EVENT:
        *done = true;
        return 0;
    default:
        return 0;
    }
}

int flow_yaml_load(const char *text, size_t len, const struct flow_yaml_limits *lim, json_t **ret,
                   struct flow_yaml_info *ret_info, char **ret_error)
{
    *ret = NULL;
    *ret_error = NULL;
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return fmt_error(ret_error, ENOMEM, "cannot initialise the YAML parser");
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    struct yaml_state *st = calloc(1, sizeof(*st));
    if (!st) {
        yaml_parser_delete(&p);
        return -ENOMEM;
    }
    st->error = ret_error;
    st->max_nodes = lim && lim->max_nodes ? lim->max_nodes : FLOW_YAML_MAX_NODES;
    st->max_bytes = lim && lim->max_bytes ? lim->max_bytes : FLOW_YAML_MAX_BYTES;
    size_t documents = 0;
    bool done = false;
    int r = 0;
    while (!done && r == 0) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            st->line = (size_t)p.problem_mark.line + 1;
            r = fmt_error(ret_error, EINVAL, "YAML error at line %zu: %s", st->line,
                          p.problem ? p.problem : "unknown");
            break;
        }
        r = yaml_event(st, &ev, &documents, &done);
        yaml_event_delete(&ev);
    }
    while (st->depth > 0) {
        struct yaml_frame *f = &st->stack[--st->depth];
        json_decref(f->node);
        free(f->key);
        free(f->anchor);
    }
    struct yaml_anchor *a, *tmp;
    HASH_ITER(hh, st->anchors, a, tmp)
    {
        HASH_DEL(st->anchors, a);
        free(a->name);
        json_decref(a->value);
        free(a);
    }
    if (r == 0)
        *ret = st->root ? st->root : json_null();
    else
        json_decref(st->root);
    if (ret_info)
        *ret_info =
            (struct flow_yaml_info){.bytes = r == 0 ? st->bytes : 0, .line = r == 0 ? 0 : st->line};
    free(st);
    yaml_parser_delete(&p);
    return r;
}
