// SPDX-License-Identifier: MIT
/*
 * bridge — the host side of a session's RPC channel (see session_int.h).
 *
 * In: rpc_request frames, read by the executing thread (exec_run's
 * on_message hook). A tool call meets its approval policy first
 * (mcpclient/approval.h): deny is answered at once, ask goes to
 * approvals.c (on a worker, which checks that the server has such a tool),
 * auto goes on. Tool calls go to the shared worker pool (util/workpool.c),
 * refused at once beyond the session's or the pool's limit; memory, saved
 * tools and files are answered on the executing thread (the workspace store
 * is quick and bounds its own work).
 *
 * Out: every frame to the interpreter (answers, the next execute job) goes
 * through session_send(): written at once when the socket takes it, else the
 * rest waits in the outbox, which the executing thread writes when the socket
 * is writable. No thread ever blocks on an interpreter that does not read;
 * past SESSION_OUTBOX_FULL the executing thread reads no more requests
 * (backpressure), and the outbox never holds more than SESSION_OUTBOX_MAX.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "framework/defs.h"
#include "exec/run.h"
#include "mcpclient/alias.h"
#include "mcpclient/approval.h"
#include "mcpclient/registry.h"
#include "proto/frame.h"
#include "session/session_int.h"
#include "session/workspace.h"
#include "util/fmt.h"
#include "util/log.h"
#include "util/macros.h"

int session_bridge_init(struct session *s)
{
    pthread_mutex_init(&s->write_lock, NULL);
    buf_init(&s->out, SESSION_OUTBOX_MAX);
    s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    return s->wake_fd < 0 ? -errno : 0;
}

void session_bridge_done(struct session *s)
{
    buf_free(&s->out);
    if (s->wake_fd >= 0)
        close(s->wake_fd);
    s->wake_fd = -1;
    pthread_mutex_destroy(&s->write_lock);
}

/* Write what the outbox holds, as far as the socket takes it (write_lock held). */
static void bridge_write_out(struct session *s)
{
    while (s->out.len && !s->broken) {
        ssize_t n = send(s->cell->proto_fd, s->out.data, s->out.len, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n < 0) {
            s->broken = true; /* the interpreter is gone; its exit is judged elsewhere */
            buf_reset(&s->out);
            return;
        }
        buf_consume(&s->out, (size_t)n);
    }
    if (!s->out.len && s->out.cap > 4 * FRAME_READ_CHUNK)
        buf_free(&s->out); /* do not keep the memory of a burst */
}

int session_send(struct session *s, const json_t *msg)
{
    char *data;
    size_t len;
    int r = frame_encode(msg, &data, &len);
    if (r < 0)
        return r;
    pthread_mutex_lock(&s->write_lock);
    bool was_empty = s->out.len == 0;
    if (s->broken)
        r = -EPIPE;
    else if (len > SESSION_OUTBOX_MAX || s->out.len > SESSION_OUTBOX_MAX - len)
        r = -ENOBUFS;
    else
        r = buf_append(&s->out, data, len);
    if (r == 0)
        bridge_write_out(s);
    if (r == 0 && was_empty && s->out.len) {
        uint64_t one = 1;
        ssize_t w = write(s->wake_fd, &one, sizeof(one));
        (void)w; /* a full counter still wakes the executing thread */
    }
    pthread_mutex_unlock(&s->write_lock);
    free(data);
    return r;
}

unsigned session_pending(void *userdata)
{
    struct session *s = ((struct session_exec *)userdata)->s;
    pthread_mutex_lock(&s->write_lock);
    size_t n = s->out.len;
    pthread_mutex_unlock(&s->write_lock);
    return (n ? EXEC_PENDING_WRITE : 0) | (n >= SESSION_OUTBOX_FULL ? EXEC_PENDING_FULL : 0);
}

void session_flush(void *userdata, struct cell *c)
{
    struct session *s = ((struct session_exec *)userdata)->s;
    pthread_mutex_lock(&s->write_lock);
    bridge_write_out(s);
    pthread_mutex_unlock(&s->write_lock);
}

/* ---- answers ------------------------------------------------------------------------------ */

/* An rpc_response; a failure carries error and errorKind (and errno for "os"). */
static void bridge_reply(struct session *s, json_t *id, json_t *payload, const char *error,
                         const char *kind, int err)
{
    json_t *msg = error ? json_pack("{s:s, s:O, s:b, s:s, s:s?}", "type", "rpc_response", "id", id,
                                    "success", 0, "error", error, "errorKind", kind)
                        : json_pack("{s:s, s:O, s:b, s:o}", "type", "rpc_response", "id", id,
                                    "success", 1, "payload", payload ? payload : json_null());
    if (msg && error && err)
        json_object_set_new(msg, "errno", json_integer(err));
    int r = msg ? session_send(s, msg) : -ENOMEM;
    if (r == -ENOBUFS) {
        /* The answer does not fit next to what the interpreter has not read: say so instead. */
        json_decref(msg);
        msg = json_pack("{s:s, s:O, s:b, s:s, s:s}", "type", "rpc_response", "id", id, "success", 0,
                        "error",
                        "the answer does not fit in sandboxd's buffer for this session (the "
                        "session is not reading its answers)",
                        "errorKind", "busy");
        r = msg ? session_send(s, msg) : -ENOMEM;
    }
    if (r < 0 && r != -EPIPE)
        log_errno(LOG_DEBUG, r, "session %s: cannot answer an RPC", s->id);
    json_decref(msg);
}

void session_bridge_reply(struct session *s, json_t *id, const char *error, const char *kind)
{
    bridge_reply(s, id, NULL, error, kind, 0);
}

/* ---- tool calls, on the worker pool -------------------------------------------------------- */

struct bridge_call {
    struct workpool_job job;
    struct session *s;
    json_t *id;
    json_t *payload;
    bool ask; /* not the call: its approval, once the tool is known to exist */
};

/* A call whose policy is ask: the tool must be one the server lists (its name is shown to a
 * person, and an unknown one would only fail), then it waits for a decision. */
static void bridge_ask(struct bridge_call *k)
{
    struct session *s = k->s;
    struct sessions *ss = s->owner;
    const char *server = json_string_value(json_object_get(k->payload, "server"));
    const char *tool = json_string_value(json_object_get(k->payload, "tool"));
    json_t *tools = NULL;
    struct sbx_error err = {0};
    int r = mcp_registry_tools(ss->mcp, server, ss->opt.tool_timeout_ms, &tools, &err);
    bool known = false;
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t)
    {
        known |=
            tool && json_equal(json_object_get(t, "name"), json_object_get(k->payload, "tool"));
    }
    json_decref(tools);
    char *why = NULL;
    if (r < 0)
        why = fmt_str("%s", err.message ? err.message : "the MCP server is unavailable");
    else if (!known)
        why = fmt_str("server '%s' has no tool of that name; nothing was sent", server);
    else if ((r = session_approval_add(s, k->id, k->payload)) < 0)
        why = fmt_str(r == -EBUSY ? "too many calls of this session wait for approval"
                                  : "the call cannot wait for approval: %s",
                      strerror(-r));
    if (why || r < 0)
        bridge_reply(s, k->id, NULL, why ? why : "out of memory",
                     !known && r == 0 ? "unknown_tool"
                     : r == -EBUSY    ? "busy"
                                      : "protocol",
                     0);
    free(why);
    sbx_error_clear(&err);
}

static void bridge_call_run(struct workpool_job *job)
{
    struct bridge_call *k = (struct bridge_call *)job;
    if (k->ask) {
        bridge_ask(k);
        return;
    }
    struct session *s = k->s;
    struct sessions *ss = s->owner;
    const char *type = json_string_value(json_object_get(k->payload, "type"));
    const char *server = json_string_value(json_object_get(k->payload, "server"));
    json_t *result = NULL;
    struct sbx_error err = {0};
    int r;
    if (strcmp(type, "call_tool") == 0) {
        const char *tool = json_string_value(json_object_get(k->payload, "tool"));
        json_t *args = json_object_get(k->payload, "arguments");
        r = tool ? mcp_registry_call(ss->mcp, server, tool, json_is_object(args) ? args : NULL,
                                     ss->opt.tool_timeout_ms, &result, &err)
                 : -EINVAL;
        if (!tool)
            sbx_error_upstream(&err, SBX_UP_PROTOCOL, NULL, "call_tool needs a tool name");
    } else {
        json_t *tools = NULL;
        r = mcp_registry_tools(ss->mcp, server, ss->opt.tool_timeout_ms, &tools, &err);
        if (r == 0) {
            mcp_alias_tools(tools); /* the same aliases as the session's init job */
            if (!(result = json_pack("{s:o}", "tools", tools))) {
                sbx_error_upstream(&err, SBX_UP_PROTOCOL, NULL, "out of memory");
                r = -ENOMEM;
            }
        }
    }
    if (r < 0)
        bridge_reply(s, k->id, NULL, err.message ? err.message : "the MCP call failed",
                     sbx_upstream_name(err.upstream), 0);
    else
        bridge_reply(s, k->id, result, NULL, NULL, 0);
    sbx_error_clear(&err);
}

static void bridge_call_done(struct workpool_job *job, bool ran)
{
    struct bridge_call *k = (struct bridge_call *)job;
    json_decref(k->id);
    json_decref(k->payload);
    session_unref(k->s);
    free(k);
}

static void bridge_submit_call(struct session *s, json_t *id, json_t *payload, bool ask)
{
    struct sessions *ss = s->owner;
    struct bridge_call *k = calloc(1, sizeof(*k));
    int r = -ENOMEM;
    if (k) {
        *k = (struct bridge_call){.job = {.run = bridge_call_run, .done = bridge_call_done},
                                  .s = s,
                                  .id = json_incref(id),
                                  .payload = json_incref(payload),
                                  .ask = ask};
        session_ref(s);
        r = workpool_submit(ss->rpc, &s->rpcq, &k->job);
        if (r < 0)
            bridge_call_done(&k->job, false);
    }
    if (r == 0)
        return;
    char *why = r == -EAGAIN ? fmt_str("too many tool calls in flight in this session: at most %u "
                                       "may be queued or running (--session-max-tool-calls)",
                                       ss->opt.session_tool_calls)
                : r == -EBUSY
                    ? fmt_str("sandboxd is busy: %u tool calls are queued or running, the most it "
                              "takes (--max-tool-calls); retry later",
                              ss->opt.max_tool_calls)
                : r == -ESHUTDOWN ? fmt_str("sandboxd is shutting down")
                                  : fmt_str("sandboxd could not start the call");
    bridge_reply(s, id, NULL, why ? why : "the call was refused", "busy", 0);
    free(why);
}

/* ---- memory, saved tools, files: answered here -------------------------------------------- */

/* How a workspace call's failure reaches the code: the store unavailable (the database is
 * down or slow) as MCPError kind "store_unavailable", a refusal by sandboxd's own rules (bad
 * name, too large, a quota) or a database that refused a statement as MCPError, and a failure
 * of the state directory's file system as OSError with its errno (kind "os"). */
static const char *bridge_ws_kind(int r, const struct sbx_error *err)
{
    if (err->kind == SBX_ERR_UNAVAILABLE)
        return "store_unavailable";
    if (r == -EPROTO)
        return "store";
    return r == -EINVAL || r == -EFBIG || r == -EDQUOT || r == -ENOMEM || r == -EEXIST ? "workspace"
                                                                                       : "os";
}

static uint64_t bridge_thread_cpu_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Files of the execution folders (save_image, render_chart, code.py, ...), [{path, content}]:
 * kept in the workspace where they outlive the session, tagged with the session (its id's last
 * 8 digits); one request for a run's folder. {"files": [{name, size, hostPath}]}, or the first
 * failure (those before it are kept). */
#define BRIDGE_MAX_KEEP 256

static int bridge_keep_files(struct session *s, json_t *files, json_t **ret, struct sbx_error *err)
{
    if (!json_is_array(files) || json_array_size(files) > BRIDGE_MAX_KEEP) {
        sbx_error_set(err, SBX_ERR_INVALID, "INVALID_REQUEST", "files",
                      "keep_files: at most %d files", BRIDGE_MAX_KEEP);
        return -EINVAL;
    }
    size_t idl = strlen(s->id);
    json_t *kept = json_array();
    size_t i;
    json_t *f;
    int r = kept ? 0 : -ENOMEM;
    json_array_foreach(files, i, f)
    {
        if (r < 0)
            break;
        const char *path = json_string_value(json_object_get(f, "path"));
        const char *b64 = json_string_value(json_object_get(f, "content"));
        char *data = NULL;
        size_t len = 0;
        json_t *one = NULL;
        r = path && b64 ? defs_decode(b64, &data, &len) : -EINVAL;
        if (r == 0)
            r = workspace_keep_file(s->wsh, s->id + (idl > 8 ? idl - 8 : 0), path, data, len, &one,
                                    err);
        else
            sbx_error_set(err, SBX_ERR_INVALID, "INVALID_REQUEST", "files",
                          "keep_files: files[%zu] needs path and content", i);
        free(data);
        if (r == 0 && json_array_append_new(kept, one) < 0)
            r = -ENOMEM; /* kept, but the answer would leave it out */
    }
    if (r == -ENOMEM && !err->message)
        sbx_error_set(err, SBX_ERR_INTERNAL, "INTERNAL", NULL, "out of memory");
    if (r < 0) {
        json_decref(kept);
        return r;
    }
    *ret = json_pack("{s:o}", "files", kept);
    return 0; /* NULL *ret: the caller answers out of memory */
}

static void bridge_workspace(struct session *s, json_t *id, json_t *payload, const char *type)
{
    struct workspace *ws = s->wsh;
    json_t *result = NULL;
    _cleanup_sbx_error_ struct sbx_error error = {0};
    int r = 0;
    /* The store bounds each call's work; this bounds their number: what sandboxd spends on one
     * execution's workspace calls is counted, and capped. */
    uint64_t spent = atomic_load(&s->host_cpu_ns), cap = atomic_load(&s->host_cpu_cap);
    if (spent >= cap) {
        char *why = fmt_str("this execution's workspace calls used %llu ms of sandboxd's CPU time, "
                            "the most one execution may (--session-host-cpu-ms)",
                            (unsigned long long)s->owner->opt.host_cpu_ms);
        bridge_reply(s, id, NULL, why ? why : "host work budget exhausted", "busy", 0);
        free(why);
        return;
    }
    uint64_t start = bridge_thread_cpu_ns();
    if (strcmp(type, "memory") == 0) {
        r = workspace_memory(ws, payload, &result, &error);
    } else if (strcmp(type, "save_tool") == 0) {
        const char *name = json_string_value(json_object_get(payload, "name"));
        const char *src = json_string_value(json_object_get(payload, "source"));
        r = name && src ? workspace_save_tool(ws, name, src, &error) : -EINVAL;
        if (r == 0)
            result = json_pack("{s:b}", "saved", 1); /* NULL: saved, the answer lost (below) */
    } else if (strcmp(type, "save_file") == 0) {
        const char *name = json_string_value(json_object_get(payload, "name"));
        const char *b64 = json_string_value(json_object_get(payload, "content"));
        char *data = NULL;
        size_t len = 0;
        r = name && b64 ? defs_decode(b64, &data, &len) : -EINVAL;
        if (r == 0)
            r = workspace_save_file(ws, name, data, len, &result, &error);
        free(data);
    } else if (strcmp(type, "keep_files") == 0) {
        r = bridge_keep_files(s, json_object_get(payload, "files"), &result, &error);
    } else if (strcmp(type, "list_files") == 0) {
        r = workspace_files(ws, &result, &error);
    } else {
        r = -EINVAL;
    }
    atomic_fetch_add(&s->host_cpu_ns, bridge_thread_cpu_ns() - start);
    if (r == 0 && !result) { /* the workspace's answer (json_pack) could not be built */
        r = -ENOMEM;
        sbx_error_clear(&error);
        sbx_error_set(&error, SBX_ERR_INTERNAL, "INTERNAL", NULL, "out of memory");
    }
    if (r < 0) {
        const char *kind = bridge_ws_kind(r, &error);
        /* The code's message names the store's failure as the API does (STORE_UNAVAILABLE). */
        char *msg = error.kind == SBX_ERR_UNAVAILABLE && error.message
                        ? fmt_str("%s: %s", STORE_UNAVAILABLE, error.message)
                        : NULL;
        bridge_reply(s, id, NULL,
                     msg             ? msg
                     : error.message ? error.message
                                     : "invalid request",
                     kind, -r);
        free(msg);
    } else {
        bridge_reply(s, id, result, NULL, NULL, 0);
    }
}

int session_on_message(void *userdata, struct cell *c, json_t *msg)
{
    struct session_exec *x = userdata;
    struct session *s = x->s;
    const char *kind = json_string_value(json_object_get(msg, "type"));
    if (!kind || strcmp(kind, "rpc_request") != 0) {
        /* Unknown frames are ignored, not fatal; so is the end of another execution (forged,
         * or late): results stay with the execution whose id they carry. */
        log_debug("session %s: ignored a frame of type %s", s->id, kind ? kind : "(none)");
        return 0;
    }
    json_t *id = json_object_get(msg, "id");
    json_t *payload = json_object_get(msg, "payload");
    const char *type = json_string_value(json_object_get(payload, "type"));
    if (!id || !type) {
        if (id)
            bridge_reply(s, id, NULL, "malformed RPC request", "protocol", 0);
        return 0;
    }
    if (strcmp(type, "call_tool") != 0 && strcmp(type, "list_tools") != 0) {
        bridge_workspace(s, id, payload, type);
        return 0;
    }
    const char *server = json_string_value(json_object_get(payload, "server"));
    if (!server || !session_has_server(s, server)) {
        char *why =
            fmt_str("server '%.200s' is not available in this session", server ? server : "?");
        bridge_reply(s, id, NULL, why ? why : "unknown server", "unknown_server", 0);
        free(why);
        return 0;
    }
    const char *tool = json_string_value(json_object_get(payload, "tool"));
    enum mcp_approval policy = strcmp(type, "call_tool") == 0
                                   ? mcp_registry_approval(s->owner->mcp, server, tool ? tool : "")
                                   : MCP_APPROVAL_AUTO;
    if (policy == MCP_APPROVAL_DENY) {
        char *why = fmt_str("the approval policy of %.200s.%.200s is deny: the call was refused "
                            "and not sent",
                            server, tool ? tool : "?");
        bridge_reply(s, id, NULL, why ? why : "refused by the approval policy", "approval_denied",
                     0);
        free(why);
        return 0;
    }
    if (policy == MCP_APPROVAL_ASK) {
        bridge_submit_call(s, id, payload, true);
        return 0;
    }
    session_bridge_send_call(s, id, payload);
    return 0;
}

void session_bridge_send_call(struct session *s, json_t *id, json_t *payload)
{
    const char *type = json_string_value(json_object_get(payload, "type"));
    atomic_fetch_add(&s->mcp_calls, 1);
    json_t *summary = json_pack("{s:s, s:O, s:s?, s:O}", "type", type, "server",
                                json_object_get(payload, "server"), "tool",
                                json_string_value(json_object_get(payload, "tool")), "id", id);
    if (summary)
        session_notify_rpc(s, summary);
    else /* the stream misses one event; the call itself goes on */
        log_warn("session %s: an rpc event could not be streamed (out of memory)", s->id);
    json_decref(summary);
    bridge_submit_call(s, id, payload, false);
}
