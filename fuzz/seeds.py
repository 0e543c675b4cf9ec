#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Write the seed corpora of the fuzz targets (fuzz/corpus/<target>/seed-*).

Seeds are ordinary inputs in each target's format (see the comment at the top of
fuzz/fuzz_<target>.c); this script keeps them readable and reproducible. Files named
regress-* are inputs that once found a bug: they are kept by hand, never rewritten here.
Run it after changing a target's input format: /usr/bin/python3 fuzz/seeds.py
"""
import glob
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEMO = os.path.join(ROOT, "examples", "apps", "demo")


def frame(msg):
    body = json.dumps(msg, separators=(",", ":")).encode()
    return struct.pack(">I", len(body)) + body


def demo(path):
    with open(os.path.join(DEMO, path), "rb") as f:
        return f.read()


REQUESTS = [
    {"requestId": "r-1", "requestData": {"source": "http", "body": {"a": 2, "b": 3}},
     "context": {"appId": "demo", "handlerType": "JIT", "mcp_endpoint": "local",
                 "taskDetails": {"script": "handlers/add.py", "function": "add",
                                 "timeoutMs": 5000, "memoryMb": 256}}},
    {"requestId": "r-5", "requestData": {"source": "api"},
     "context": {"handlerType": "EXECUTOR", "mcp_endpoint": "http://127.0.0.1:9000/mcp",
                 "taskDetails": {"code": "class C:\n    def twice(self, x):\n        return 2 * x\n",
                                 "className": "C", "methodName": "twice",
                                 "methodParams": {"x": 21}}}},
    {"requestId": "r-6", "requestData": {"source": "http", "body": {"text": "Sandboxes isolate."}},
     "context": {"appId": "demo", "handlerType": "LLM", "mcp_endpoint": "local",
                 "taskDetails": {"promptTemplate": "prompts/summarize.yaml",
                                 "overrides": {"maxTokens": 5}}}},
    {"requestId": "r-7", "requestData": {"source": "http", "body": {"text": "BUY NOW"}},
     "context": {"appId": "demo", "handlerType": "WORKFLOW", "mcp_endpoint": "local",
                 "componentId": "c", "traceId": "t",
                 "workflowInfo": {"workflowId": "flows/triage.yaml", "stepId": "classify",
                                  "runId": "run-1", "state": {"n": 1}}}},
    {"requestId": "r-8", "requestData": {"source": "x"},
     "context": {"appId": "..", "handlerType": "JIT", "mcp_endpoint": "local",
                 "taskDetails": {"script": "a/../b.py", "function": "f"}}},
]

FRAMES = [
    [{"type": "ready"}, {"type": "result", "resultType": "generic", "data": {"sum": 5}}],
    [{"type": "rpc_request", "id": 1, "payload": {"type": "mcp_call", "server": "e", "tool": "t",
                                                  "arguments": {}}},
     {"type": "result", "resultType": "httpResponse",
      "data": {"statusCode": 200, "headers": {}, "body": "hi", "bodyEncoding": "utf-8"}}],
    [{"type": "error", "code": "APPLICATION_ERROR", "message": "ZeroDivisionError: " + "x" * 300,
      "details": {"type": "ZeroDivisionError", "traceback": "Traceback\n" * 20}}],
    [{"type": "result", "data": {"result": [1.5, -0.0, 1e300, "\u00e9"]},
      "usage": {"cpuUs": 10, "maxRssKb": 100}}],
]

YAML_DOCS = [
    demo("flows/triage.yaml"), demo("prompts/summarize.yaml"), demo("prompts/triage.yaml"),
    b"a: &x [1, 2, {b: c}]\nd: *x\ne: !!str 12\nf: !!int 0x1F\ng: 0o17\nh: 1.5e3\ni: ~\n"
    b"j: [true, False, NULL]\nk: \"\\0\\u00e9\"\nl: |\n  block\n  text\nm: >-\n  folded\n",
    b"- &a {x: 1}\n- &b [*a, *a]\n- [*b, *b]\n",
    b"? [complex, key]\n: value\n1: one\n",
    b"x: .inf\n",
    b"---\na: 1\n---\nb: 2\n",
]

WORKFLOWS = [
    b"startAt: a\nsteps:\n  a:\n    type: control\n    output: {statusCode: 201, body: $.requestData.body}\n"
    b"    end: true\n",
    b"startAt: a\nsteps:\n  a:\n    type: mcp\n    tool: core.state.setRuntimeValue\n"
    b"    params: {key: k, value: $.requestData.body}\n    next: b\n"
    b"  b:\n    type: mcp\n    tool: core.state.getRuntimeValue\n    params: {key: k}\n"
    b"    transitions:\n      - when: {path: $.steps.b.output.value.n, greaterThan: 2}\n        next: c\n"
    b"      - when: {or: [{path: $.state.n, exists: true}, {not: {path: $.x, in: [1]}}]}\n"
    b"        next: d\n      - next: d\n"
    b"  c:\n    type: mcp\n    tool: core.llm.generate\n    params: {prompt: $.requestData.body.text}\n"
    b"    next: d\n"
    b"  d:\n    type: control\n    inputMapping: {all: $.steps, first: $.requestData.body.list[0]}\n"
    b"    end: true\n",
    b"startAt: a\nmaxSteps: 5\nsteps:\n  a:\n    type: control\n    output: [$.steps.a.output]\n"
    b"    transitions:\n      - when: {path: $.steps.a.output[0][0], exists: true}\n        next: b\n"
    b"      - next: a\n  b: {type: control, end: true}\n",
    b"startAt: a\nsteps:\n  a: {type: jit, script: handlers/x.py, function: f, next: b}\n"
    b"  b: {type: llm, promptTemplate: prompts/t.yaml, end: true}\n",
    b"startAt: a\nsteps:\n  a:\n    type: mcp\n    tool: core.framework.logFrameworkMessage\n"
    b"    params: {level: warn, message: $.requestData.body.text}\n    end: true\n",
    demo("flows/triage.yaml"),
]

CONFIGS = [
    {"mcpServers": {"everything": {"command": "npx", "args": ["-y", "@mcp/everything"],
                                   "env": {"A": "1"}, "cwd": "/tmp", "description": "demo"},
                    "remote": {"url": "https://example.com/mcp", "headers": {"X-Key": "v"}},
                    "typed": {"type": "streamable-http", "url": "http://127.0.0.1:1/mcp"},
                    "off": {"command": "x", "disabled": True},
                    "legacy": {"type": "sse", "url": "http://x"},
                    "bad": {"command": "x", "url": "http://y"}}},
    {"servers": {"vs": {"type": "stdio", "command": "node", "args": ["s.js"]},
                 "web": {"type": "http", "url": "http://localhost:3000/mcp"}}},
    {"projects": {"/p": {"mcpServers": {"proj": {"command": "p"}}}},
     "mcpServers": {"user": {"command": "u"}, "proj": {"command": "other"}}},
]

MCP_SESSIONS = [
    [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
      "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                 "clientInfo": {"name": "fuzz", "version": "1"}}},
     {"jsonrpc": "2.0", "method": "notifications/initialized"},
     {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
     {"jsonrpc": "2.0", "id": 3, "method": "tools/list",
      "params": {"cursor": "sandboxd-tools-2"}},
     {"jsonrpc": "2.0", "id": "c", "method": "tools/call",
      "params": {"name": "run_python", "arguments": {"code": "1+1", "timeout": 1.5,
                                                      "session_id": "s1", "output": "json",
                                                      "servers": []},
                 "_meta": {"progressToken": 7}}},
     {"jsonrpc": "2.0", "id": 5, "method": "tools/call",
      "params": {"name": "list_servers", "arguments": {"tools": True}}},
     {"jsonrpc": "2.0", "id": 6, "method": "tools/call",
      "params": {"name": "search_tool_docs", "arguments": {"query": "sum", "limit": 3}}},
     {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
      "params": {"name": "reset_session", "arguments": {"session_id": "s1"}}},
     {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "c"}},
     {"jsonrpc": "2.0", "id": 8, "method": "ping"},
     {"jsonrpc": "2.0", "id": 9, "result": {}}],
    [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
      "params": {"protocolVersion": "2025-03-26"}},
     [{"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
      {"jsonrpc": "2.0", "method": "notifications/initialized"},
      {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
       "params": {"name": "run_python", "arguments": {"code": "x", "bogus": 1}}}],
     {"jsonrpc": "2.0", "id": 4, "method": "initialize",
      "params": {"protocolVersion": "1999-01-01"}}],
    [{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {"jsonrpc": "1.0", "id": None},
     {"jsonrpc": "2.0", "id": 1.5, "method": "x"}, {"jsonrpc": "2.0", "id": None, "error":
                                                     {"code": -1, "message": "m"}}],
]

SSE = [
    b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
    b": comment\r\nid: 42\r\nretry: 1500\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n",
    b"id: p\ndata:\n\nevent: ping\ndata: x\n\nretry: 99999999\n\ndata: last\rdata: cr\r\r",
    b"data:no-space\n\nevent:message\ndata:  two spaces\n\n",
]


JSON_DOCS = [
    b'{"type": "result", "data": {"result": [1, 2.5, "x\\u0000y"], "stdout": ""}}',
    b'{"data": "\\ud83d\\ude00", "data2": [], "n": -0.0e+1}',
    b'[{"a": null}, true, false, 12345678901234567890]',
    b'{"data": 1, "data": 2}',
    b'"lone \\ud800"',
]

TOML = b"""# Codex
model = "o3"
[mcp_servers.fs]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", '/tmp']
env = { "KEY" = "v", nested.deep = 1.5e3 }
[[profiles]]
name = 'x'
when = 1979-05-27T07:32:00Z
big = 0x7fff_ffff
"""

JSONC = b"""{
  // VS Code settings
  "mcp": {"servers": {"x": {"command": "node", "args": ["a//b", "/* not */"],},},},
  /* block
     comment */
  "editor.tabSize": 2,
}
"""

TOON_DOCS = [
    {"users": [{"id": 1, "name": "Ada", "admin": True}, {"id": 2, "name": "Bob", "admin": False}]},
    {"content": [{"type": "text", "text": "line\nbreak, \"quoted\""}], "isError": False,
     "structuredContent": {"tags": ["a", "b,c", "", " pad "], "n": 1e-7, "empty": {}, "list": []}},
    [1, [2, 3], {"k": None}, "-", "#x", "true"],
]

HEADS = [
    b"GET http://api.example.com/v1/x?q=1 HTTP/1.1\r\nHost: evil\r\nProxy-Authorization: Basic eA==\r\n"
    b"Connection: keep-alive, X-Hop\r\nX-Hop: 1\r\n\r\n",
    b"POST http://api.test:8080/p HTTP/1.1\r\nHost: api.test:8080\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"5\r\nhello\r\n0\r\n\r\nGET http://other/ HTTP/1.1\r\n\r\n",
    b"CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n",
    b"PUT http://[::1]:81/ HTTP/1.0\r\nContent-Length: 3\r\n\r\nabcdef",
]


def client_hello(name):
    """The first bytes a TLS client sends (Python's own ssl, so a real ClientHello)."""
    import ssl
    ctx = ssl.create_default_context()
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ctx.wrap_bio(incoming, outgoing, server_hostname=name)
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


def envelope(msg, flags=0):
    body = json.dumps(msg, separators=(",", ":")).encode()
    return struct.pack(">BI", flags, len(body)) + body


E2B_REQUESTS = [
    {"process": {"cmd": "/bin/bash", "args": ["-l", "-c", "echo hi"], "envs": {"A": "b"},
                 "cwd": "/home/user"}, "stdin": False},
    {"process": {"pid": 42}},
    {"path": "/home/user", "depth": 2},
    {"process": {"tag": "t"}, "input": {"stdin": "aGkK"}},
]

E2B_LINES = [
    {"type": "stdout", "text": "hi\n", "timestamp": "2026-01-01T00:00:00.000000+00:00"},
    {"type": "result", "text": "2", "html": "<b>2</b>", "json": [1, {"a": None}], "extra": {},
     "is_main_result": True},
    {"type": "error", "name": "ZeroDivisionError", "value": "division by zero",
     "traceback": "Traceback...\n"},
    {"type": "number_of_executions", "execution_count": 3},
    {"type": "result", "png": "iVBORw0KGgo=", "is_main_result": "no"},
]


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


def main():
    for old in glob.glob(os.path.join(HERE, "corpus", "*", "seed-*")):
        os.remove(old)
    for i, r in enumerate(REQUESTS):
        body = json.dumps(r).encode()
        write("request", "%d" % i, b"application/json; charset=utf-8\napplication/json, */*;q=0.1\n"
              + body)
        write("request", "%d-accept" % i, b"text/plain\ntext/*;q=0\n" + body)
    for i, frames in enumerate(FRAMES):
        stream = b"".join(frame(m) for m in frames)
        write("frame", "%d" % i, bytes([i * 40, 0x10, 0x00, 0x40, i]) + stream)
    write("frame", "bad", b"\x07\x00\x10\x10\x01" + struct.pack(">I", 3) + b"[1]" +
          struct.pack(">I", 99999))
    for i, text in enumerate([b"0.1", b"[1, 2.5, -0.0, 1e22, 5e-324, \"\\u00e9\\n\\u0000\"]",
                              b"{\"a\": {\"b\": [true, null, {}]}, \"c\": 12345678901234}"]):
        write("jdump", "%d" % i, bytes([i, 0x10]) + struct.pack("<d", 0.1 * (i + 1)) + text)
    for i, text in enumerate(["h\u00e9llo \u2603 \U0001f600".encode(), b"bad \xff\xfe \xc3( \xed\xa0\x80",
                              b"[\"" + b"x" * 100 + b"\", {\"k\": \"\\u00e9\"}]"]):
        write("utf8", "%d" % i, bytes([8 * i + 3]) + text)
    for i, name in enumerate([b"get-sum", b"class", b"2fa", "get\u2014sum".encode(), b"",
                              b"\xff\xfeabc"]):
        tools = json.dumps([{"name": "a-b"}, {"name": "None"}, {"title": "x"}, 3]).encode()
        write("alias", "%d" % i, name + b"\0" + tools)
    for i, s in enumerate(SSE):
        write("sse", "%d" % i, bytes([i * 60 + 5, i * 3 + 1]) + s)
    write("state", "0", b"\x07" + json.dumps([["a", "k", {"v": [1, 2]}], ["a", "k"], 3,
                                                ["b", "k", "x" * 50], ["a", "k2", 1.5],
                                                ["a", "k3", None], 30, ["a", "k"]]).encode())
    write("state", "1", b"\x00" + json.dumps([["app", "key", "value"], ["app", "key"]]).encode())
    for i, doc in enumerate(YAML_DOCS):
        write("yaml", "%d" % i, bytes([i * 2]) + doc)
    for i, doc in enumerate(WORKFLOWS):
        rd = json.dumps({"source": "s", "body": {"text": "BUY NOW", "n": 3, "list": [4, 5]}})
        write("workflow", "%d" % i, bytes([i]) + b"a\n" + rd.encode() + b"\n" + doc)
    for i, doc in enumerate(YAML_DOCS[:3] + [b"template: '{{ x }}'\noutputSchema: {type: object}\n"]):
        write("template", "%d" % i, bytes([i]) + doc)
    for i, cfg in enumerate(CONFIGS):
        write("mcp_config", "%d" % i, bytes([i]) + json.dumps(cfg).encode())
    for i, msgs in enumerate(MCP_SESSIONS):
        write("mcp_server", "%d" % i, b"\n".join(json.dumps(m).encode() for m in msgs) + b"\nnot json\n")
    for i, doc in enumerate(JSON_DOCS):
        write("jsonscan", "%d" % i, bytes([i]) + doc)
    write("config_text", "toml", b"\x00" + TOML)
    write("config_text", "jsonc", b"\x01" + JSONC)
    for i, doc in enumerate(TOON_DOCS):
        write("toon", "%d" % i, json.dumps(doc).encode())
    for i, name in enumerate(["api.example.com", "xn--bcher-kva.example"]):
        write("egress", "hello-%d" % i, b"\x00\x01\x00" + client_hello(name))
    for i, head in enumerate(HEADS):
        write("egress", "head-%d" % i, b"\x01" + head)
    for i, pat in enumerate([b"*.example.com", b"api.test:8080", b"[::1]:443", b"10.0.0.1"]):
        write("egress", "pattern-%d" % i, b"\x02" + pat)
    for i, msg in enumerate(E2B_REQUESTS):
        write("e2b", "envelope-%d" % i, b"\x00" + envelope(msg))
        write("e2b", "unary-%d" % i, b"\x01" + json.dumps(msg).encode())
    write("e2b", "envelope-end", b"\x00" + envelope({}, flags=2))
    for i, line in enumerate(E2B_LINES):
        write("e2b", "line-%d" % i, b"\x02" + json.dumps(line).encode())
    for code in ["not_found", "deadline_exceeded", "nonsense"]:
        write("e2b", "end-" + code, b"\x03" + code.encode())


if __name__ == "__main__":
    main()
