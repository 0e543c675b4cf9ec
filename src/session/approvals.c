// SPDX-License-Identifier: MIT
/*
 * approvals — tool calls made from a session's code that wait for a
 * person's decision (the "ask" policy of mcpclient/approval.h), on the host
 * side: the sandbox sends an ordinary call_tool request and simply gets no
 * answer until the call is decided, so sandboxed code can neither word the
 * question nor answer it. The decision comes from GET/POST
 * /v1/sessions/{id}/approvals and GET /v1/approvals (api/sessions.c) or an MCP client's
 * elicitation answer (mcpserver/), through sessions_approval_decide(); a
 * call nobody decides within --approval-timeout-s is refused. While a call
 * waits the execution is held: exec_run's held() hook moves its deadline, so
 * the wait does not count against the time limit. An execution that ends
 * refuses the calls still waiting.
 *
 * Called by bridge.c (a call whose policy is ask), session.c (an execution's
 * start and end, the held hook) and the front ends (list one session's or all
 * of a caller's, decide, prompt).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "session/session_int.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/fmt.h"
#include "util/jdump.h"
#include "util/log.h"
#include "util/randid.h"

#define APPROVAL_ID_BYTES    16      /* 32 hex digits: unguessable, never sent into the sandbox */
#define APPROVAL_MAX_WAITING 64      /* calls of one session waiting at once; more are refused */
#define APPROVAL_WAKE_US     1000000 /* an execution on hold looks at the deadlines this often */
#define PROMPT_STRING_MAX    200     /* characters of one string argument shown in a prompt */
#define PROMPT_ARGS_MAX      1000    /* bytes of the arguments shown in a prompt */
#define PROMPT_DEPTH_MAX     8

struct session_approval {
    struct session_approval *next;
    char id[2 * APPROVAL_ID_BYTES + 1];
    json_t *rpc_id;   /* the request's id (owned reference) */
    json_t *payload;  /* {type, server, tool, arguments} as the sandbox sent it (owned) */
    int64_t asked_us; /* when it began to wait: the lists are oldest first */
    int64_t deadline_us;
};

void session_approvals_init(struct session *s)
{
    pthread_mutex_init(&s->approvals_lock, NULL);
}

static void approval_free(struct session_approval *a)
{
    json_decref(a->rpc_id);
    json_decref(a->payload);
    free(a);
}

/* Unlink a (approvals_lock held) and account for the time held. */
static void approval_unlink(struct session *s, struct session_approval *a, int64_t now)
{
    for (struct session_approval **pp = &s->approvals; *pp; pp = &(*pp)->next)
        if (*pp == a) {
            *pp = a->next;
            break;
        }
    if (--s->n_approvals == 0 && s->held_since_us) {
        s->held_us += now - s->held_since_us;
        s->held_since_us = 0;
    }
}

void session_approvals_done(struct session *s)
{
    while (s->approvals) {
        struct session_approval *a = s->approvals;
        s->approvals = a->next;
        approval_free(a);
    }
    pthread_mutex_destroy(&s->approvals_lock);
}

/* {id, server, tool, arguments} of a waiting call (new reference). */
static json_t *approval_json(const struct session_approval *a)
{
    json_t *args = json_object_get(a->payload, "arguments");
    return json_pack("{s:s, s:O, s:O, s:o}", "id", a->id, "server",
                     json_object_get(a->payload, "server"), "tool",
                     json_object_get(a->payload, "tool"), "arguments",
                     json_is_object(args) ? json_incref(args) : json_object());
}

static void approval_refuse(struct session *s, struct session_approval *a, const char *why)
{
    session_bridge_reply(s, a->rpc_id, why, "approval_denied");
    approval_free(a);
}

int session_approval_add(struct session *s, json_t *id, json_t *payload)
{
    struct session_approval *a = calloc(1, sizeof(*a));
    if (!a)
        return -ENOMEM;
    int r = randid_hex(a->id, sizeof(a->id), APPROVAL_ID_BYTES);
    if (r < 0) {
        free(a);
        return r;
    }
    a->rpc_id = json_incref(id);
    a->payload = json_incref(payload);
    int64_t now = clock_mono_us();
    a->asked_us = now;
    a->deadline_us = now + s->owner->opt.approval_timeout_ms * 1000;
    json_t *shown = approval_json(a);
    char aid[sizeof(a->id)];
    memcpy(aid, a->id, sizeof(aid)); /* a is another thread's to free once it is listed */
    pthread_mutex_lock(&s->approvals_lock);
    bool full = s->n_approvals >= APPROVAL_MAX_WAITING;
    if (!full) {
        a->next = s->approvals;
        s->approvals = a;
        if (s->n_approvals++ == 0)
            s->held_since_us = now;
        /* Told under the lock: the execution cannot end (and its stream go) meanwhile. */
        if (shown && s->stream && s->stream->on_approval)
            s->stream->on_approval(s->stream->userdata, shown);
    }
    pthread_mutex_unlock(&s->approvals_lock);
    json_decref(shown);
    if (full) {
        approval_free(a);
        return -EBUSY;
    }
    /* The executing thread may be in poll() for the rest of the time limit: it must look at
     * the hold (and this call's deadline) now. */
    uint64_t one = 1;
    ssize_t w = write(s->wake_fd, &one, sizeof(one));
    (void)w; /* a full counter still wakes it */
    log_fields(LOG_INFO, "session: a tool call waits for approval",
               json_pack("{s:s, s:s, s:O, s:O}", "sessionId", s->id, "approvalId", aid, "server",
                         json_object_get(payload, "server"), "tool",
                         json_object_get(payload, "tool")));
    return 0;
}

int64_t session_held_us(void *userdata, int64_t now, int64_t *ret_wake_us)
{
    struct session *s = ((struct session_exec *)userdata)->s;
    struct session_approval *expired = NULL;
    pthread_mutex_lock(&s->approvals_lock);
    int64_t wake = 0;
    for (struct session_approval *a = s->approvals, *next; a; a = next) {
        next = a->next;
        if (a->deadline_us <= now) {
            approval_unlink(s, a, now);
            a->next = expired;
            expired = a;
        } else if (!wake || a->deadline_us < wake) {
            wake = a->deadline_us;
        }
    }
    if (s->n_approvals && (!wake || wake > now + APPROVAL_WAKE_US))
        wake = now + APPROVAL_WAKE_US;
    int64_t held = s->held_us + (s->held_since_us ? now - s->held_since_us : 0);
    pthread_mutex_unlock(&s->approvals_lock);
    *ret_wake_us = s->n_approvals ? wake : 0;
    while (expired) {
        struct session_approval *a = expired;
        expired = a->next;
        char *why = fmt_str("nobody decided the call of %s.%s within %lld s "
                            "(--approval-timeout-s): it timed out and was not sent",
                            json_string_value(json_object_get(a->payload, "server")),
                            json_string_value(json_object_get(a->payload, "tool")),
                            (long long)(s->owner->opt.approval_timeout_ms / 1000));
        log_info("session %s: approval %s timed out", s->id, a->id);
        approval_refuse(s, a, why ? why : "the approval timed out");
        free(why);
    }
    return held;
}

void session_approvals_begin(struct session *s, const struct session_stream *stream)
{
    pthread_mutex_lock(&s->approvals_lock);
    s->stream = stream;
    s->held_us = 0;
    s->held_since_us = 0;
    pthread_mutex_unlock(&s->approvals_lock);
}

void session_approvals_end(struct session *s)
{
    pthread_mutex_lock(&s->approvals_lock);
    struct session_approval *list = s->approvals;
    s->approvals = NULL;
    s->n_approvals = 0;
    s->held_since_us = 0;
    s->stream = NULL;
    pthread_mutex_unlock(&s->approvals_lock);
    while (list) {
        struct session_approval *a = list;
        list = a->next;
        approval_refuse(s, a, "the execution ended before the call was decided; it was not sent");
    }
}

void session_notify_rpc(struct session *s, json_t *summary)
{
    pthread_mutex_lock(&s->approvals_lock);
    if (s->stream && s->stream->on_rpc)
        s->stream->on_rpc(s->stream->userdata, summary);
    pthread_mutex_unlock(&s->approvals_lock);
}

/* ---- the lists of waiting calls ----------------------------------------------------------- */

/* A waiting call as a list shows it, and when it was asked. */
struct approval_row {
    int64_t asked_us;
    json_t *shown;
};

struct approval_rows {
    struct approval_row *v;
    size_t n, cap;
};

static void approval_rows_free(struct approval_rows *rows)
{
    for (size_t i = 0; i < rows->n; i++)
        json_decref(rows->v[i].shown);
    free(rows->v);
    *rows = (struct approval_rows){0};
}

/* Append the calls waiting in s to rows, each with its sessionId when with_session. 0, or
 * -ENOMEM (rows keeps what it had; the caller frees it). */
static int approvals_collect(struct session *s, bool with_session, struct approval_rows *rows)
{
    int r = 0;
    pthread_mutex_lock(&s->approvals_lock);
    for (const struct session_approval *a = s->approvals; a && r == 0; a = a->next) {
        if (rows->n == rows->cap) {
            size_t cap = rows->cap ? 2 * rows->cap : 16;
            struct approval_row *v = realloc(rows->v, cap * sizeof(*v));
            if (!v) {
                r = -ENOMEM;
                break;
            }
            rows->v = v;
            rows->cap = cap;
        }
        json_t *shown = approval_json(a);
        if (!shown ||
            (with_session && json_object_set_new(shown, "sessionId", json_string(s->id)) < 0)) {
            json_decref(shown);
            r = -ENOMEM;
            break;
        }
        rows->v[rows->n++] = (struct approval_row){a->asked_us, shown};
    }
    pthread_mutex_unlock(&s->approvals_lock);
    return r;
}

static int approval_row_cmp(const void *x, const void *y)
{
    const struct approval_row *a = x, *b = y;
    return (a->asked_us > b->asked_us) - (a->asked_us < b->asked_us);
}

/* The rows oldest first, as a JSON array (new reference; NULL when out of memory); rows is
 * emptied either way. */
static json_t *approvals_sorted(struct approval_rows *rows)
{
    if (rows->n)
        qsort(rows->v, rows->n, sizeof(rows->v[0]), approval_row_cmp);
    json_t *list = json_array();
    for (size_t i = 0; list && i < rows->n; i++)
        if (json_array_append(list, rows->v[i].shown) < 0) {
            json_decref(list); /* not a list that leaves a call out */
            list = NULL;
        }
    approval_rows_free(rows);
    return list;
}

int sessions_approvals(struct sessions *ss, const char *id, json_t **ret)
{
    struct session *s = sessions_lookup(ss, id);
    if (!s)
        return -ENOENT;
    struct approval_rows rows = {0};
    int r = approvals_collect(s, false, &rows);
    session_unref(s);
    json_t *list = r < 0 ? NULL : approvals_sorted(&rows);
    approval_rows_free(&rows);
    if (!list)
        return -ENOMEM;
    *ret = list;
    return 0;
}

int sessions_approvals_all(struct sessions *ss, const struct tenant *tenant, json_t **ret,
                           struct sbx_error *err)
{
    *err = (struct sbx_error){0};
    /* The caller's sessions, held, so that their calls are read without the table's lock (a
     * session's unref takes it). */
    pthread_mutex_lock(&ss->lock);
    size_t n = 0, count = HASH_COUNT(ss->table);
    struct session **held = calloc(count ? count : 1, sizeof(*held));
    for (struct session *s = ss->table; held && s; s = s->hh.next)
        if (!tenant || s->tenant == tenant) {
            session_ref(s);
            held[n++] = s;
        }
    pthread_mutex_unlock(&ss->lock);
    struct approval_rows rows = {0};
    int r = held ? 0 : -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if (r == 0)
            r = approvals_collect(held[i], true, &rows);
        session_unref(held[i]);
    }
    free(held);
    json_t *list = r < 0 ? NULL : approvals_sorted(&rows);
    approval_rows_free(&rows);
    if (!list)
        return sbx_error_errno(err, ENOMEM, SBX_ERR_INTERNAL, "INTERNAL", NULL,
                               "out of memory: the list of waiting calls could not be built");
    *ret = list;
    return 0;
}

int sessions_approval_decide(struct sessions *ss, const char *id, const char *aid, bool approve,
                             struct sbx_error *err)
{
    *err = (struct sbx_error){0};
    struct session *s = sessions_lookup(ss, id);
    if (!s) {
        sbx_error_set(err, SBX_ERR_NOT_FOUND, "NOT_FOUND", NULL, "no session %s", id);
        return -ENOENT;
    }
    pthread_mutex_lock(&s->approvals_lock);
    struct session_approval *a = s->approvals;
    while (a && strcmp(a->id, aid) != 0)
        a = a->next;
    if (a)
        approval_unlink(s, a, clock_mono_us());
    pthread_mutex_unlock(&s->approvals_lock);
    if (!a) {
        session_unref(s);
        sbx_error_set(err, SBX_ERR_NOT_FOUND, "APPROVAL_NOT_FOUND", NULL,
                      "session %s has no call waiting for approval %.64s (it was decided, timed "
                      "out, or its execution ended)",
                      id, aid);
        return -ENOENT;
    }
    log_info("session %s: approval %s %s", id, aid, approve ? "granted" : "refused");
    if (approve) {
        session_bridge_send_call(s, a->rpc_id, a->payload);
        approval_free(a);
    } else {
        char *why = fmt_str("a person refused the call of %s.%s; it was not sent",
                            json_string_value(json_object_get(a->payload, "server")),
                            json_string_value(json_object_get(a->payload, "tool")));
        approval_refuse(s, a, why ? why : "the call was refused");
        free(why);
    }
    session_unref(s);
    return 0;
}

/* ---- the prompt a person reads ------------------------------------------------------------ */

/* A key whose value is not shown: it names a secret. */
static bool approval_secret_key(const char *key)
{
    static const char *const words[] = {"password", "passwd",  "passphrase", "secret", "token",
                                        "apikey",   "api_key", "api-key",    "auth",   "credential",
                                        "private",  "cookie",  "signature"};
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (strcasestr(key, words[i]))
            return true;
    return false;
}

/* A value that looks like a secret whatever its key: a known token prefix, a PEM block, or a
 * long run of token characters with letters and digits mixed. */
static bool approval_secret_value(const char *v, size_t len)
{
    static const char *const prefixes[] = {"sk-",  "sk_",         "pk_",    "ghp_",      "gho_",
                                           "ghs_", "github_pat_", "xox",    "AKIA",      "ASIA",
                                           "AIza", "Bearer ",     "Basic ", "-----BEGIN"};
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
        if (strncmp(v, prefixes[i], strlen(prefixes[i])) == 0)
            return true;
    if (len < 32)
        return false;
    bool digit = false, alpha = false;
    for (size_t i = 0; i < len; i++) {
        char c = v[i];
        if (c >= '0' && c <= '9')
            digit = true;
        else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
            alpha = true;
        else if (!strchr("+/=_-.", c))
            return false;
    }
    return digit && alpha;
}

/* A copy of v for a person to read: secrets redacted, long strings cut (new reference). */
static json_t *approval_shown(json_t *v, int depth)
{
    if (depth > PROMPT_DEPTH_MAX)
        return json_string("...");
    if (json_is_string(v)) {
        const char *str = json_string_value(v);
        size_t len = json_string_length(v);
        if (approval_secret_value(str, len))
            return json_string("[redacted]");
        if (len <= PROMPT_STRING_MAX)
            return json_incref(v);
        size_t cut = PROMPT_STRING_MAX;
        while (cut > 0 && ((unsigned char)str[cut] & 0xC0) == 0x80)
            cut--; /* not inside a UTF-8 character */
        char *s = fmt_str("%.*s... (%zu bytes more)", (int)cut, str, len - cut);
        json_t *out = json_string(s ? s : "...");
        free(s);
        return out;
    }
    if (json_is_object(v)) {
        json_t *out = json_object();
        const char *key;
        json_t *x;
        json_object_foreach(v, key, x)
        {
            json_object_set_new(out, key,
                                approval_secret_key(key) ? json_string("[redacted]")
                                                         : approval_shown(x, depth + 1));
        }
        return out;
    }
    if (json_is_array(v)) {
        json_t *out = json_array();
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
        {
            json_array_append_new(out, approval_shown(x, depth + 1));
        }
        return out;
    }
    return json_incref(v);
}

char *sessions_approval_prompt(json_t *approval)
{
    json_t *shown = approval_shown(json_object_get(approval, "arguments"), 0);
    char *args = shown ? jdump(shown, JSON_COMPACT | JSON_ENSURE_ASCII, NULL) : NULL;
    json_decref(shown);
    if (args && strlen(args) > PROMPT_ARGS_MAX)
        strcpy(args + PROMPT_ARGS_MAX - 3, "...");
    /* Names are quoted as JSON strings: the server's name is the operator's, the tool's one the
     * server listed (bridge.c checks it), and neither can break the sentence. */
    json_t *server = json_object_get(approval, "server"), *tool = json_object_get(approval, "tool");
    char *s = jdump(server, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_ENCODE_ANY, NULL);
    char *t = jdump(tool, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_ENCODE_ANY, NULL);
    char *text = fmt_str("sandboxd: code running in a sandbox wants to call the tool %s of the "
                         "MCP server %s with the arguments %s (long values cut, secrets "
                         "redacted). Approve this call?",
                         t ? t : "?", s ? s : "?", args ? args : "{}");
    free(args);
    free(s);
    free(t);
    return text;
}
