# SPDX-License-Identifier: MIT
"""MCP servers as Python inside a session: the ``mcp_<alias>`` proxies, ``mcp.runtime``,
``mcp.servers.<alias>`` modules and the discovery helpers, with the signatures and shapes of
mcp-server-code-execution-mode (upstream), so that code written for it runs unchanged.

The host describes the servers (names, aliases, tools, cwd) in the init job and in
``add_servers`` frames; aliases are the host's (src/mcpclient/alias.c), never computed here. Tool
calls travel to the host through the session's channel (session.py). In compat mode
(``sandboxd mcp --compat code-execution-mode``) a tool's answer is upstream's raw
CallToolResult dict, its ``isError`` returned; otherwise the value (structuredContent, or the
text parsed as JSON), and a tool error raised as MCPError.
"""
import json
import re
import sys
import types

from sandboxd_runtime import stubs
from sandboxd_runtime.checks import NOT_SENT, wire_arguments


class MCPError(RuntimeError):
    """An MCP tool or server reported an error (the message is the server's)."""

    def __init__(self, message, *, server=None, tool=None, kind=None):
        super().__init__(message)
        self.server = server
        self.tool = tool
        self.kind = kind


class ApprovalDenied(MCPError):
    """A tool call was refused by an approval policy (deny), by the person asked (ask), or
    because nobody decided in time; nothing was sent to the server."""


# Shown to user code (and in tracebacks) as names of its namespace, not of the runtime.
MCPError.__module__ = "builtins"
ApprovalDenied.__module__ = "builtins"

CHANNEL = None     # the session's channel to the host (session.serve sets it)
SERVERS = {}       # name -> info {name, alias, aliases?, description, cwd, tools}
DISCOVERED = []    # every configured server {name, alias, description}, from the init job
COMPAT = {}        # {"mode": "code-execution-mode"} in sandboxd mcp --compat, from the init job


def compat():
    return bool(COMPAT.get("mode"))


# ---- values that work both awaited and not --------------------------------------------------

async def _ready(value):
    return value


def _awaitable(base):
    """base, whose values may also be awaited (upstream's async helpers are awaited, sandboxd's
    were not: both kinds of code work)."""
    class Awaitable(base):
        def __await__(self):
            return _ready(base(self)).__await__()
    Awaitable.__name__ = Awaitable.__qualname__ = "Awaitable" + base.__name__.capitalize()
    return Awaitable


AwaitableList = _awaitable(list)
AwaitableTuple = _awaitable(tuple)
AwaitableDict = _awaitable(dict)
AwaitableStr = _awaitable(str)


# ---- names --------------------------------------------------------------------------------

def alias_of(info):
    """The Python identifier of a server or tool, as the host computed it (a name is its own
    alias only if the host sent none)."""
    return info.get("alias") or info["name"]


def spellings(info):
    """The alias, then the earlier spellings the host sent (code written for them runs)."""
    return [alias_of(info)] + [a for a in info.get("aliases") or [] if isinstance(a, str)]


def _server(name):
    """The server's info by name or alias; MCPError when the session lacks it."""
    info = SERVERS.get(name)
    if info is None:
        for candidate in SERVERS.values():
            if name in spellings(candidate):
                return candidate
        raise MCPError("Server %r is not loaded in this session (loaded: %s); name it in "
                       "run_python's servers" % (name, ", ".join(SERVERS) or "none"), server=name)
    return info


def _tool(info, tool):
    """The tool's info by name, else by alias, else either case-insensitive (as upstream), or
    None. A name wins over another tool's alias ("a_b" is the tool a_b, not a.b's alias)."""
    tools = info.get("tools", [])
    target = str(tool)
    for match in (lambda t: target == t["name"], lambda t: target in spellings(t),
                  lambda t: target.lower() in [n.lower() for n in [t["name"]] + spellings(t)]):
        for t in tools:
            if match(t):
                return t
    return None


# ---- tool calls -----------------------------------------------------------------------------

def convert_result(result, server, tool):
    """A CallToolResult as Python code gets it: the raw dict in compat mode; otherwise
    structuredContent when present, text that holds JSON parsed, an error raised as MCPError."""
    if not isinstance(result, dict) or compat():
        return result
    texts = [c.get("text", "") for c in result.get("content") or [] if c.get("type") == "text"]
    if result.get("isError"):
        raise MCPError("\n".join(texts) or "the tool reported an error", server=server, tool=tool,
                       kind="tool")
    if result.get("structuredContent") is not None:
        return result["structuredContent"]
    values = []
    for item in result.get("content") or []:
        if item.get("type") == "text":
            text = item.get("text", "")
            try:
                values.append(json.loads(text))
            except ValueError:
                values.append(text)
        else:
            values.append(item)
    if len(values) == 1:
        return values[0]
    return values


def _spec(server, tool):
    """The ToolSpec of tool (name or alias) of server (name or alias), or None."""
    info = SERVERS.get(server)
    if info is None:
        info = next((i for i in SERVERS.values() if server in spellings(i)), None)
    t = _tool(info, tool) if info else None
    if t is None:
        return info, None
    return info, next((x for x in stubs.specs_for(info) if x.name == t["name"]), None)


def _call_request(server, tool, arguments, kwargs):
    if arguments is not None and not isinstance(arguments, dict):
        raise TypeError("call_tool(server, tool, arguments): arguments must be a dict, not %s"
                        % type(arguments).__name__)
    args = dict(arguments or {})
    args.update(kwargs)
    info, spec = _spec(server, tool)
    name = info["name"] if info else server
    if spec is not None:
        return _request(name, spec.name, wire_arguments(spec, args))
    t = _tool(info, tool) if info else None
    return _request(name, t["name"] if t else tool, args)


def _request(server, tool, args):
    return {"type": "call_tool", "server": server, "tool": tool, "arguments": args}


async def call_tool(server, tool, arguments=None, **kwargs):
    """Call tool of server with arguments (a dict) and/or keyword arguments, checked against
    the tool's schema before anything is sent."""
    req = _call_request(server, tool, arguments, kwargs)
    return convert_result(await CHANNEL.call(req), req["server"], req["tool"])


def call_tool_sync(server, tool, arguments=None, **kwargs):
    req = _call_request(server, tool, arguments, kwargs)
    return convert_result(CHANNEL.call_sync(req), req["server"], req["tool"])


async def _invoke(spec, args):
    """A stub's call: args are checked and in wire names already."""
    req = _request(spec.server, spec.name, args)
    return convert_result(await CHANNEL.call(req), spec.server, spec.name)


def _invoke_sync(spec, args):
    req = _request(spec.server, spec.name, args)
    return convert_result(CHANNEL.call_sync(req), spec.server, spec.name)


async def list_tools_live(server):
    """Ask the server again (after it changed its tools): the proxy's functions and the stub
    files follow."""
    name = _server(server)["name"]
    reply = await CHANNEL.call({"type": "list_tools", "server": name})
    tools = reply.get("tools", [])
    SERVERS[name]["tools"] = tools
    proxy = sys.modules.get("mcp.servers." + alias_of(SERVERS[name]))
    if isinstance(proxy, ServerProxy):
        proxy._install(SERVERS[name])
    return [_tool_entry(SERVERS[name], t) for t in tools]


# ---- discovery ------------------------------------------------------------------------------

def _detail(value):
    detail = str(value).lower() if value is not None else "summary"
    return detail if detail in ("summary", "full") else "summary"


def _tool_doc(info, tool, detail):
    """upstream's doc entry {server, serverAlias, tool, toolAlias, description?, inputSchema
    (full)}, plus sandboxd's alias, the Python signature and the doc text (the renderer of the
    stubs: the same text sandboxd mcp's search shows)."""
    doc = {"server": info["name"], "serverAlias": alias_of(info), "tool": tool["name"],
           "toolAlias": alias_of(tool), "alias": alias_of(tool),
           "description": tool.get("description") or ""}
    spec = None if compat() else \
        next((x for x in stubs.specs_for(info) if x.name == tool["name"]), None)
    if spec is not None:  # upstream's exact keys in compat mode
        doc["signature"] = spec.signature_text("mcp_%s." % alias_of(info))
        doc["doc"] = stubs.render(spec, detail)
    if detail == "full":
        doc["inputSchema"] = tool.get("inputSchema")
        if tool.get("outputSchema") is not None:
            doc["outputSchema"] = tool["outputSchema"]
    return doc


class DocList(list):
    """Doc entries that print as their docs (print(search_tool_docs(...)) reads well); they
    are a list of dicts all the same, with or without await."""

    def __str__(self):
        return "\n\n".join(d.get("doc") or "%s.%s" % (d["server"], d["tool"]) for d in self) \
            or "(no tool matches)"

    def __await__(self):
        return _ready(self).__await__()


def _tool_entry(info, tool):
    """A tool as list_tools shows it: the MCP Tool keys (name, description, inputSchema) and
    the doc keys."""
    entry = _tool_doc(info, tool, "full")
    entry["name"] = tool["name"]
    entry["input_schema"] = tool.get("inputSchema")
    return entry


def list_tools(server=None):
    """Tools of one server (or, without one, of every server of the session)."""
    infos = [_server(server)] if server is not None else list(SERVERS.values())
    return AwaitableList(_tool_entry(i, t) for i in infos for t in i.get("tools", []))


def list_tools_sync(server=None):
    if server is None:
        raise MCPError("list_tools_sync(server) requires a server name")
    return tuple(list_tools(server))


def query_tool_docs(server, tool=None, detail="summary"):
    """Docs of one tool (a dict) or of every tool of server (a list)."""
    docs = query_tool_docs_sync(server, tool, detail)
    return AwaitableDict(docs[0]) if tool is not None else DocList(docs)


def query_tool_docs_sync(server, tool=None, detail="summary"):
    info = _server(server)
    detail = _detail(detail)
    if tool is None:
        return [_tool_doc(info, t, detail) for t in info.get("tools", [])]
    if not isinstance(tool, str):
        raise MCPError("'tool' must be a string when provided", server=info["name"])
    t = _tool(info, tool)
    if t is None:
        raise MCPError("Tool %r not found for server %s" % (tool, info["name"]),
                       server=info["name"], tool=tool)
    return [_tool_doc(info, t, detail)]


def search_tool_docs(query, *, limit=5, detail="summary"):
    """Tools whose names or description hold the words of query, best first (at most limit,
    1 to 20)."""
    words = [w for w in re.split(r"\W+", str(query).lower()) if w]
    try:
        limit = max(1, min(20, int(limit)))
    except (TypeError, ValueError):
        limit = 5
    scored = []
    for info in SERVERS.values():
        for t in info.get("tools", []):
            names = " ".join([t["name"]] + spellings(t)).lower()
            hay = names + " " + (t.get("description") or "").lower() + " " + \
                " ".join(spellings(info)).lower()
            score = sum(hay.count(w) for w in words) + sum(3 for w in words if w in names)
            if score:
                scored.append((-score, info["name"], t["name"], info, t))
    scored.sort(key=lambda x: x[:3])
    return DocList(_tool_doc(i, t, _detail(detail)) for _, _, _, i, t in scored[:limit])


def search_tool_docs_sync(query, *, limit=5, detail="summary"):
    return DocList(search_tool_docs(query, limit=limit, detail=detail))


def list_servers():
    """The servers of this session, by name."""
    return AwaitableTuple(SERVERS)


def list_servers_sync():
    return tuple(SERVERS)


def discovered_servers(detailed=False):
    """Every configured server, in this session or not (detailed: with descriptions)."""
    if detailed:
        return AwaitableTuple({"name": d["name"], "description": d.get("description") or ""}
                              for d in DISCOVERED)
    return AwaitableTuple(d["name"] for d in DISCOVERED)


def describe_server(name):
    """A server of this session: upstream's metadata {name, alias, tools, cwd} (tools as
    {name, alias, description, input_schema}) in compat mode; otherwise tools as names."""
    info = _server(name)
    if compat():
        tools = [{"name": t["name"], "alias": alias_of(t), "description": t.get("description")
                  or "", "input_schema": t.get("inputSchema")} for t in info.get("tools", [])]
    else:
        tools = [t["name"] for t in info.get("tools", [])]
    return AwaitableDict({"name": info["name"], "alias": alias_of(info),
                          "description": info.get("description") or "", "tools": tools,
                          "cwd": info.get("cwd")})


def list_loaded_server_metadata():
    return tuple(dict(describe_server(n)) for n in SERVERS)


def capability_summary():
    lines = ["MCP servers in this session (call with `await mcp_<alias>.<tool>(**args)`, or "
             "`await runtime.call_tool(server, tool, {...})`):"]
    for name, info in SERVERS.items():
        tools = ", ".join(alias_of(t) for t in info.get("tools", []))
        desc = info.get("description") or ""
        lines.append("- mcp_%s%s: %s" % (alias_of(info), " (%s)" % desc if desc else "", tools))
    if not SERVERS:
        lines.append("- (none)")
    lines.append("Discovery: help(mcp_<alias>) and help(mcp_<alias>.<tool>) (typed signatures "
                 "and docstrings), print(search_tool_docs('words')), the stub files under "
                 "%s; `import mcp.runtime as runtime`: runtime.discovered_servers(), "
                 "runtime.query_tool_docs(server, tool)." % stubs.TREE)
    lines.append("Helpers: save_memory/load_memory/list_memories/update_memory/delete_memory, "
                 "save_tool, save_file/save_image/render_chart, execution_folder(), "
                 "now/convert_time/list_timezones.")
    return AwaitableStr("\n".join(lines))


# ---- the proxies ----------------------------------------------------------------------------

def _make_tool(server, tool, alias, sync=False):
    """A function for a tool the session has no schema of (called by a name its list lacks):
    the arguments go as they are."""
    if sync:
        def invoke(**arguments):
            return call_tool_sync(server, tool, arguments)
    else:
        async def invoke(**arguments):
            return await call_tool(server, tool, arguments)
    invoke.__name__ = alias
    invoke.__qualname__ = alias
    return invoke


_PROXY_NAMES = ("sync", "list_tools", "TOOLS", "TOOL_MAP")


class ServerProxy(types.ModuleType):
    """``mcp_<alias>`` and the module ``mcp.servers.<alias>`` at once: each tool is an async
    function typed from its schemas (stubs.py; ``from mcp.servers.x import tool`` works);
    ``.sync`` has blocking variants."""

    def __init__(self, info):
        super().__init__("mcp.servers." + alias_of(info),
                         "MCP server %r wrappers" % info["name"])
        self._name = info["name"]
        self.sync = _SyncProxy(self)
        self._install(info)

    def _install(self, info):
        """(Re)define the tools of info: the stub files now, each function (typed from the
        stubs) when it is first looked up."""
        for a in self.__dict__.get("TOOL_MAP", {}):
            self.__dict__.pop(a, None)
        self._info = info
        self.__all__ = []
        self.TOOLS = info.get("tools", [])
        self.TOOL_MAP = {}
        self._specs = {s.name: s for s in stubs.specs_for(info)}
        self._functions = {}
        self.sync._functions = {}
        desc = (info.get("description") or "").strip()
        self.__doc__ = "MCP server %r%s. Its tools are the functions below (await them); " \
            "help(tool) shows one, search_tool_docs(words) finds them." % (
                info["name"], ": " + desc if desc else "")
        self.__file__ = "%s/%s/__init__.py" % (stubs.TREE, alias_of(info))
        stubs.write_tree(info, list(self._specs.values()))
        for t in self.TOOLS:
            for a in spellings(t):
                if a in self.TOOL_MAP or a in _PROXY_NAMES:
                    continue
                self.TOOL_MAP[a] = t
                if a == alias_of(t):
                    self.__all__.append(a)

    def _function(self, spec, sync):
        return stubs.make_function(spec, _invoke_sync if sync else _invoke, sync=sync)

    def _tool_function(self, tool):
        """The (async) function of tool, made on first use."""
        fn = self._functions.get(tool["name"])
        if fn is None:
            spec = self._specs.get(tool["name"])
            if spec is not None:
                fn = self._function(spec, sync=False)
            else:
                fn = _make_tool(self._name, tool["name"], alias_of(tool))
                fn.__doc__ = (tool.get("description") or "").strip() or \
                    "MCP tool %s from %s" % (tool["name"], self._name)
            self._functions[tool["name"]] = fn
        return fn

    def _target(self, alias):
        t = _tool(self._info, alias)
        return (t["name"] if t else alias), t

    def __getattr__(self, alias):
        # Only names not defined yet get here: a tool's alias or earlier spelling (its function
        # is made now and kept), its exact name, or a name the session does not know (called as
        # it is).
        if alias.startswith("__") or "_specs" not in self.__dict__:
            raise AttributeError(alias)
        tool = self.TOOL_MAP.get(alias)
        if tool is not None:
            fn = self._tool_function(tool)
            setattr(self, alias, fn)
            return fn
        target, tool = self._target(alias)
        if tool is not None:
            return self._tool_function(tool)
        invoke = _make_tool(self._name, target, alias)
        invoke.__doc__ = None
        return invoke

    def __dir__(self):
        return sorted(self.TOOL_MAP) + ["list_tools", "sync"]

    def __repr__(self):
        return "<MCP server %r: %d tools>" % (self._name, len(self.TOOLS))

    async def list_tools(self):
        return await list_tools_live(self._name)


class _SyncProxy:
    def __init__(self, proxy):
        self._proxy = proxy
        self._functions = {}

    def __getattr__(self, alias):
        if alias.startswith("__"):
            raise AttributeError(alias)
        target, _ = self._proxy._target(alias)
        spec = self._proxy._specs.get(target)
        if spec is None:
            return _make_tool(self._proxy._name, target, alias, sync=True)
        fn = self._functions.get(spec.name)
        if fn is None:
            fn = self._functions[spec.name] = self._proxy._function(spec, sync=True)
        return fn

    def __dir__(self):
        return dir(self._proxy)


RUNTIME_ALL = [
    "MCPError", "ApprovalDenied", "NOT_SENT", "call_tool", "call_tool_sync", "list_tools", "list_tools_sync",
    "list_tools_live", "list_servers", "list_servers_sync", "discovered_servers",
    "describe_server", "list_loaded_server_metadata", "query_tool_docs", "query_tool_docs_sync",
    "search_tool_docs", "search_tool_docs_sync", "capability_summary",
]


def install_modules(helpers):
    """``import mcp``, ``mcp.runtime`` (upstream's functions and the helpers) and the package
    ``mcp.servers``, whose modules add_servers() makes."""
    pkg = types.ModuleType("mcp")
    pkg.__path__ = []
    pkg.__all__ = ["runtime", "servers"]
    rt = types.ModuleType("mcp.runtime")
    servers = types.ModuleType("mcp.servers")
    servers.__path__ = []
    servers.__all__ = []
    pkg.runtime = rt
    pkg.servers = servers
    g = dict(globals(), NOT_SENT=NOT_SENT)
    for name in RUNTIME_ALL:
        setattr(rt, name, g[name])
    for name, fn in helpers.items():
        setattr(rt, name, fn)
    rt.__all__ = RUNTIME_ALL + sorted(n for n in helpers if n not in RUNTIME_ALL)
    sys.modules["mcp"] = pkg
    sys.modules["mcp.runtime"] = rt
    sys.modules["mcp.servers"] = servers
    return pkg


def add_servers(infos, ns):
    """Define the servers infos in namespace ns (the init job's, or more later): proxies,
    ``mcp_servers``, ``LOADED_MCP_SERVERS`` and the ``mcp.servers`` modules."""
    servers = sys.modules["mcp.servers"]
    proxies = ns.setdefault("mcp_servers", {})
    for info in infos:
        name = info["name"]
        SERVERS[name] = info
        proxy = ServerProxy(info)  # the module mcp.servers.<alias> as well
        proxies[name] = proxy
        for i, a in enumerate(spellings(info)):
            if i and ("mcp_" + a in ns or a in servers.__dict__):
                continue  # an earlier spelling never hides another server's alias
            ns["mcp_" + a] = proxy
            setattr(servers, a, proxy)
            sys.modules["mcp.servers." + a] = proxy
            if i == 0 and a not in servers.__all__:
                servers.__all__.append(a)
    ns["LOADED_MCP_SERVERS"] = tuple(proxies)
