// SPDX-License-Identifier: MIT
/*
 * server_int — what the parts of the MCP server share: server.c (the
 * protocol core), server_catalog.c (the tools as tools/list shows them, per
 * mode and protocol version, and the capability resource), server_tools.c
 * (run_python, reset_session and the tool helpers), server_discovery.c
 * (list_servers, search_tool_docs) and server_compat.c (the run_python of
 * --compat code-execution-mode). Private: included by those files only;
 * everyone else uses mcpserver/server.h.
 */
#ifndef SANDBOXD_MCPSERVER_SERVER_INT_H
#define SANDBOXD_MCPSERVER_SERVER_INT_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "mcpserver/server.h"
#include "session/session.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/macros.h"
#include "util/thread.h"

struct srv_call;
struct mcp_server_conn;

/* A tool's handler: a CallToolResult (new reference; a tool error for bad arguments), or NULL
 * when out of memory or when the call k was cancelled. args is an object (borrowed); token is
 * the call's progress token or NULL; out where notifications and requests to the client go. */
typedef json_t *srv_tool_fn(struct mcp_server_conn *c, json_t *args, json_t *token,
                            const struct mcp_server_out *out, struct srv_call *k);

/* The protocol versions sandboxd mcp speaks, oldest first (server.c spells each): what came
 * with one is asked for with srv_since(), never by comparing version strings. */
enum srv_version {
    SRV_V_2024_11_05,
    SRV_V_2025_03_26, /* tool annotations, progress messages, batches (this version only) */
    SRV_V_2025_06_18, /* titles, outputSchema, structuredContent, form elicitation */
    SRV_V_2025_11_25, /* MCP_SERVER_VERSION_LATEST */
    SRV_N_VERSIONS,
};

/* The surfaces a tool is listed in (catalog.c's table). */
#define SRV_LEAN      1u /* the default: run_python, discovery inside the sandbox */
#define SRV_FULL      2u /* --mcp-tools full: the discovery tools as MCP tools too */
#define SRV_COMPAT    4u /* --compat code-execution-mode */
#define SRV_APPROVALS 8u /* only when some server has an approval policy */
#define SRV_MAX_TOOLS 8

/* One row of the tool table: a tool of sandboxd mcp, where it is listed, how it is described
 * and who answers it. */
struct srv_tool_def {
    const char *name;
    enum srv_version since;                 /* the first version that lists it */
    json_t *(*entry)(struct mcp_server *s); /* its tools/list entry but the name (latest shape) */
    srv_tool_fn *call;
    unsigned surfaces;
};

struct mcp_server {
    struct mcp_server_options opt;
    char *workspace;
    struct sessions *sessions;
    struct mcp_registry *registry;
    const struct srv_tool_def *defs[SRV_MAX_TOOLS]; /* the tools listed, in order */
    size_t n_defs;
    json_t *tools[SRV_N_VERSIONS]; /* tools/list entries for each version */
    json_t *resources;             /* resources/list entries */
    pthread_mutex_t bg_lock;
    pthread_cond_t bg_cond;
    unsigned bg_threads; /* cancellers running */
    /* Set up behind the first answers (mcp_server_new_pending): sessions, registry and the
     * catalog are there once ready is 1; -errno when the set-up failed. Under bg_lock. */
    int ready;
    pthread_cond_t ready_cond;
};

struct srv_exec;
struct srv_elicit;

/* A sandbox session held by a connection. */
struct srv_sandbox {
    struct srv_sandbox *next;
    char *name;      /* the client's session_id; NULL for an automatic session */
    json_t *servers; /* sorted names */
    char *label;     /* how answers name it: the session_id, "default", "servers:a,b" */
    json_t *network; /* its allow list (sorted) when run_python asked for one; else NULL */
    char id[SESSION_ID_MAX + 1]; /* the sandbox session (session.h) */
};

/* A tools/call being handled (server.c). */
struct srv_call;

/* Locks: create_lock (creating, finding and resetting sandbox sessions) is taken before lock
 * (every other field of a connection); progress output has its own lock. Nothing is called
 * on a transport under a lock. */
struct mcp_server_conn {
    struct mcp_server *srv;
    atomic_int refs;
    pthread_mutex_t create_lock;
    pthread_mutex_t lock;
    pthread_cond_t cond;   /* a call is done */
    const char *version;   /* static; NULL before initialize, then never changes */
    struct tenant *tenant; /* owner of the sessions it creates (NULL: the operator) */
    bool closed;
    struct srv_sandbox *sandboxes; /* creation order; the first automatic one is "default" */
    unsigned n_sandboxes;
    char spare[SESSION_ID_MAX + 1]; /* a session made ahead for the first sandbox
                                     * (mcp_server_conn_prepare) */
    struct srv_call *calls;
    unsigned n_calls;
    bool elicit;                /* the client declared form elicitation (2025-06-18 and later) */
    struct srv_elicit *elicits; /* elicitation/create requests not answered yet */
    unsigned n_elicits;
    struct srv_exec *execs; /* executions whose calls wait for a decision nobody was asked for */
};

/* ---- server.c ----------------------------------------------------------------------------- */

/* The connection's protocol version (the latest before initialize). */
enum srv_version srv_version_of(const struct mcp_server_conn *c);
/* The connection's protocol version is v or later. */
bool srv_since(const struct mcp_server_conn *c, enum srv_version v);
/* A JSON-RPC error response (new reference); data is stolen and optional (NULL: none, also when
 * it could not be built: the error itself is what matters). */
json_t *srv_error(json_t *id, int code, json_t *data, const char *fmt, ...) _printf_(4, 5);
/* The JSON-RPC response carrying result (stolen); NULL result (it could not be built): an
 * internal error response instead. */
json_t *srv_result(json_t *id, json_t *result);
/* Record which sandbox session the call executes in (NULL: none any more); false when it was
 * cancelled already. */
bool srv_call_executing(struct mcp_server_conn *c, struct srv_call *k, const char *sandbox);
bool srv_call_cancelled(struct mcp_server_conn *c, struct srv_call *k);
/* The name of the tool the call is for (the tool table's: handlers name their tool with it). */
const char *srv_call_tool(const struct srv_call *k);
/* Start fn(arg) on a detached thread that mcp_server_free() waits for; the thread calls
 * srv_bg_done(s) last. 0, or -errno (nothing started). */
int srv_bg_start(struct mcp_server *s, void *(*fn)(void *), void *arg);
void srv_bg_done(struct mcp_server *s);

/* ---- server_catalog.c --------------------------------------------------------------------- */

/* Build s->defs, s->tools and s->resources for s->opt. 0 or -ENOMEM. */
int srv_catalog_build(struct mcp_server *s);
/* The listed tool called name, or NULL. */
const struct srv_tool_def *srv_tool_find(const struct mcp_server *s, const char *name);
/* "a, b, c": the names of the listed tools (caller frees). */
char *srv_tool_names(const struct mcp_server *s);
/* initialize's instructions for s's surface (static, or owned by s). */
const char *srv_instructions(const struct mcp_server *s);
/* The tools/list entries for the connection's version (borrowed). */
json_t *srv_tools(const struct mcp_server_conn *c);
/* The answer to a resources/... request (list, read, templates/list) as a response (new
 * reference), or NULL when method is none of them. */
json_t *srv_resources(struct mcp_server_conn *c, json_t *id, const char *method, json_t *params);
/* What a model needs to know to use the sandbox from code: the helpers in one paragraph (the
 * compat run_python's description carries it, the capability resource starts with it). */
extern const char srv_helpers_summary[];

/* ---- server_tools.c ----------------------------------------------------------------------- */

struct buf;

/* A CallToolResult with one text item; structured is stolen (may be NULL). */
json_t *srv_tool_result(const struct mcp_server_conn *c, const char *text, json_t *structured,
                        bool is_error);
json_t *srv_tool_error(const struct mcp_server_conn *c, const char *fmt, ...) _printf_(2, 3);
/* A tool error naming the first key of args not in allowed (NULL-terminated) and the keys
 * tool takes, else NULL. */
json_t *srv_check_args(const struct mcp_server_conn *c, const char *tool, json_t *args,
                       const char *const *allowed);
/* "a, b" or "none" (caller frees). */
char *srv_names_text(json_t *names);

/* NULL-safe; the sandbox session itself is not touched. */
void srv_sandbox_free(struct srv_sandbox *b);
/* The sandbox sessions of a connection (sandboxes.c). srv_sandbox_get: the session run_python
 * uses, named (name) or automatic (NULL), with at least the servers asked for (sorted),
 * created or loaded when needed; 0 with ret_id and *ret_label (caller frees), or -errno with
 * *ret_error (caller frees). Unlink b from c (c->lock held); forget the session id (it
 * ended; create_lock held). */
int srv_sandbox_get(struct mcp_server_conn *c, const char *name, json_t *servers, json_t *network,
                    json_t *notes, char ret_id[SESSION_ID_MAX + 1], char **ret_label,
                    char **ret_error);
void srv_sandbox_unlink(struct mcp_server_conn *c, struct srv_sandbox *b);
void srv_sandbox_forget(struct mcp_server_conn *c, const char *id);
/* Append a note for the client (what happened to its sessions) to the array notes. */
void srv_note(json_t *notes, const char *fmt, ...) _printf_(2, 3);
void srv_note_ended(json_t *notes, const char *label);

/* The tools: a CallToolResult (new reference; a tool error for bad arguments), or NULL when
 * out of memory, or (run_python) when the call k was cancelled. args is an object (borrowed).
 * run_python sends its stdout as progress through out->notify when there is a token. */
json_t *srv_run_python(struct mcp_server_conn *c, json_t *args, json_t *token,
                       const struct mcp_server_out *out, struct srv_call *k);
json_t *srv_reset(struct mcp_server_conn *c, json_t *args, json_t *token,
                  const struct mcp_server_out *out, struct srv_call *k);

/* What run_python ran, for the formatters of either mode. */
struct srv_run {
    json_t *st;         /* structuredContent of the native mode (status, stdout, ...), or NULL */
    json_t *result;     /* the session's result (artifacts and all) when st is set and the
                         * execution ended; NULL while it waits (st.status "waiting_approval") */
    json_t *waiting;    /* the calls it waits for: [{id, server, tool, arguments}], or NULL */
    char *error;        /* NULL, or why it did not run: a bad argument, no session (caller frees) */
    bool invalid;       /* error is about the arguments */
    int64_t timeout_ms; /* the time limit it ran with */
};
/* Run code as run_python does (sandbox session, files, progress, cancellation); args are the
 * native run_python's (code, servers, timeout, session_id, files, network), already checked
 * for unknown keys. 0 with ret filled (st and result, or error), or -ECANCELED when the call
 * was cancelled (nothing to answer). */
int srv_run_code(struct mcp_server_conn *c, json_t *args, json_t *token,
                 const struct mcp_server_out *out, struct srv_call *k, struct srv_run *ret);
/* ret filled from result (stolen), the session's answer to an execution that ended in sandbox
 * session id (label: how answers name it; notes: appended to, borrowed). 0 or -ENOMEM. */
int srv_run_finish(struct mcp_server_conn *c, struct srv_call *k, const char *id, const char *label,
                   json_t *notes, json_t *result, struct srv_run *ret);
/* The CallToolResult of run: compact text or JSON of st, artifacts as blocks (new reference). */
json_t *srv_run_reply(struct mcp_server_conn *c, struct srv_run *run, bool as_json);
void srv_run_done(struct srv_run *r);

/* stdout as notifications/progress while a call runs (tools.c). */
struct srv_progress {
    const struct mcp_server_out *out;
    json_t *token;
    bool message;              /* progress notifications carry a message (2025-03-26 and later) */
    pthread_mutex_t send_lock; /* taken before lock: chunks leave in the order they came */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct buf pending;
    int64_t last_us;
    json_int_t count;
    struct thread_group flusher; /* none started: output goes out at the next chunk or the end */
};
void srv_progress_start(struct srv_progress *p, const struct mcp_server_out *out, json_t *token,
                        bool message);
/* A session_stream on_output: userdata is the struct srv_progress. */
void srv_progress_output(void *userdata, int stream, const char *data, size_t len);
void srv_progress_finish(struct srv_progress *p);

/* ---- approvals.c -------------------------------------------------------------------------- */

#define SRV_EXEC_WAITING 1 /* srv_exec_run(): the code waits for a decision */

/* Run code in sandbox session id (label: its name in answers; notes: kept for the answer that
 * ends it) as run_python does: stdout as progress when token (and out) allow, and tool calls
 * that wait for approval put to the client as elicitation/create when it can be asked. 0 and
 * *ret_result when the execution ended; SRV_EXEC_WAITING and *ret_waiting ([{id, server, tool,
 * arguments}], new reference) when it waits for a decision this client cannot be asked for
 * (the execution goes on, held; approve_call or the HTTP API decides); <0 with *err as
 * sessions_execute. */
int srv_exec_run(struct mcp_server_conn *c, struct srv_call *k, const char *id, const char *label,
                 const char *code, int64_t timeout_ms, json_t *notes, json_t *token,
                 const struct mcp_server_out *out, json_t **ret_result, json_t **ret_waiting,
                 struct sbx_error *err);
/* The sandbox session id has an execution that waits for a decision nobody was asked for. */
bool srv_exec_waits(struct mcp_server_conn *c, const char *id);
/* approve_call: decide a waiting call, then answer as run_python once the execution ends or
 * waits again. */
json_t *srv_approve_call(struct mcp_server_conn *c, json_t *args, json_t *token,
                         const struct mcp_server_out *out, struct srv_call *k);
/* initialize's params.capabilities: whether the client takes form elicitation at version. */
bool srv_elicit_declared(json_t *capabilities, const char *version);
/* A response or error response from the client (m.id borrowed): the answer to an elicitation
 * of ours decides its call; others are ignored. */
void srv_elicit_answer(struct mcp_server_conn *c, json_t *msg);
/* The connection closes: forget its elicitations and waiting executions (their sessions are
 * ended by the caller, which ends the executions). */
void srv_approvals_close(struct mcp_server_conn *c);

/* ---- server_compat.c ---------------------------------------------------------------------- */

/* The run_python of --compat code-execution-mode: upstream's arguments and answers. */
json_t *srv_compat_run(struct mcp_server_conn *c, json_t *args, json_t *token,
                       const struct mcp_server_out *out, struct srv_call *k);
const char *srv_compat_instructions(const struct mcp_server *s);

/* ---- server_data.c ------------------------------------------------------------------------ */

/* run_python's files argument checked: [{path, content}] (new reference), or NULL with
 * *ret_error (caller frees). */
json_t *srv_files_arg(json_t *files, char **ret_error);
/* Write the checked files into session id's working directory. 0; -ENOENT when the session
 * ended; -EINVAL with *ret_error (caller frees) when one cannot be written. */
int srv_files_put(struct mcp_server *s, const char *id, json_t *files, char **ret_error);
/* st.artifacts = [{name, mimeType, size}] (and st.artifactsError) from a session result. */
void srv_artifacts_meta(json_t *st, json_t *result);
/* The result's artifacts appended to the reply's content: images as image blocks, the rest
 * as embedded resources. */
void srv_artifacts_blocks(json_t *reply, json_t *result);

/* ---- server_discovery.c ------------------------------------------------------------------- */

json_t *srv_list_servers(struct mcp_server_conn *c, json_t *args, json_t *token,
                         const struct mcp_server_out *out, struct srv_call *k);
json_t *srv_search(struct mcp_server_conn *c, json_t *args, json_t *token,
                   const struct mcp_server_out *out, struct srv_call *k);

#endif
