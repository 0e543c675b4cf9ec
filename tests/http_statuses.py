#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Where src/ may choose an HTTP status. A module below api/ reports a failure as a kind
(util/error.h) and api/status.c is the one place a kind, or a route's success, becomes a
status (docs/internals/layers.md, "Errors"). This check holds that: in the C of src/, outside
the places listed in OWN_STATUSES, no literal that is an HTTP status code (100-511, as IANA
registers them) and no MHD_HTTP_* constant may appear. Comments and string literals are not
code and are skipped; a number inside [ ] (an array's size or index) is not a status.

Usage: tests/http_statuses.py [--json RESULT_FILE] [SRC_DIR]
       tests/http_statuses.py --self-test   (the check finds planted statuses, passes clean code)
Exit status 0 when no status is chosen elsewhere, 1 otherwise."""
import os
import re
import sys
import tempfile

import srccheck

# Paths below src/ (a folder ends with "/") that keep HTTP statuses of their own, and why.
OWN_STATUSES = {
    "api/status.c": "the one table from an error's kind, or a route's success, to a status",
    "http/": "the HTTP layer's own protocol errors (a bad request line, 408, 413, 431, ...)",
    "e2b/": "E2B's API speaks E2B's protocol: its statuses are E2B's (e2b/error.c, from the kinds)",
    "egress/": "the egress proxy speaks HTTP to the sandbox itself (CONNECT, 403, 502, ...)",
    "framework/": "a client: reads the status the Core Framework or an LLM endpoint answered",
    "mcpclient/": "a client: reads the status an MCP server over HTTP answered",
    # Not a status of sandboxd's: a workflow's own HTTP response (resultType httpResponse),
    # passed through in the body when its statusCode is within 100-599.
    "handlers/workflow.c": "a workflow's httpResponse statusCode, checked for range and passed on",
}

STATUSES = (set(range(100, 104)) | set(range(200, 209)) | {226} | set(range(300, 309)) |
            set(range(400, 419)) | set(range(421, 427)) | {428, 429, 431, 451} |
            set(range(500, 509)) | {510, 511})

STATUS_LINE = re.compile(r"status|reply", re.IGNORECASE)
NUMBER = re.compile(r"(?<![\w.])(0[xX][0-9a-fA-F]+|\d+)[uUlL]*(?![\w.])")
MHD = re.compile(r"\bMHD_HTTP_[A-Z0-9_]+")


def strip(text):
    """text with comments, string and character literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def findings(text, strict):
    """[(line, token)] of the statuses text chooses; strict: every status literal counts, not
    only those on a line that speaks of a status or a reply."""
    code = strip(text)
    lines = code.split("\n")
    depth = []  # the bracket depth at each offset
    d = 0
    for ch in code:
        if ch == "[":
            d += 1
        elif ch == "]":
            d = max(d - 1, 0)
        depth.append(d)
    found = []
    for m in NUMBER.finditer(code):
        tok = m.group(1)
        value = int(tok, 16) if tok[:2].lower() == "0x" else int(tok)
        no = code.count("\n", 0, m.start()) + 1
        if value in STATUSES and depth[m.start()] == 0 and (
                strict or STATUS_LINE.search(lines[no - 1])):
            found.append((no, tok))
    for m in MHD.finditer(code):
        found.append((code.count("\n", 0, m.start()) + 1, m.group(0)))
    return sorted(found)


def allowed(rel):
    return any(rel == p or (p.endswith("/") and rel.startswith(p)) for p in OWN_STATUSES)


def check(src):
    problems = []
    for dirpath, _, files in os.walk(src):
        for name in sorted(files):
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, src).replace(os.sep, "/")
            if allowed(rel):
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            lines = text.split("\n")
            for no, tok in findings(text, rel.startswith("api/")):
                problems.append("src/%s:%d: HTTP status %s chosen outside api/status.c: %s" %
                                (rel, no, tok, lines[no - 1].strip()))
    return sorted(problems)


def self_test():
    """Plant statuses in a scratch tree (a literal in a call, an assignment, a ternary, a hex
    one, an MHD constant); the check must report each and pass comments, strings, array sizes,
    other numbers and the places that keep statuses of their own."""
    d = tempfile.mkdtemp(prefix="http-statuses-")
    files = {
        "api/sessions.c": 'void f(void)\n{\n    http_reply_error(reply, 404, "NOT_FOUND", NULL, "x");\n'
                          "    reply->status = 201;\n}\n",
        "api/mcp.c": "int g(bool d) { return d ? 503 : API_OK; }\nint h = 0x1f4;\nint k = MHD_HTTP_OK;\n",
        "session/x.c": "static int s = 429u;\nvoid f(void) { if (e->http_status == 404) reply(e, 400); }\n"
                       "#define MAX_STEPS 100\nint t = 4 * p95 + 500;\n",
        "api/clean.c": '/* answers 404 */\n// or 500\nchar name[256], text[200];\nconst char *m = "HTTP 503";\n'
                       "int n = 256 + 96 + 1000 + 599;\nchar c = '4'; double q = 1.500;\n",
        "api/status.c": "int s = 200;\n",
        "http/server.c": "int bad = 400;\n",
        "mcpclient/t.c": "if (st == 404) return;\n",
    }
    for rel, text in files.items():
        os.makedirs(os.path.join(d, os.path.dirname(rel)), exist_ok=True)
        with open(os.path.join(d, rel), "w") as f:
            f.write(text)
    problems = "\n".join(check(d))
    want = ["src/api/sessions.c:3: HTTP status 404", "src/api/sessions.c:4: HTTP status 201",
            "src/api/mcp.c:1: HTTP status 503", "src/api/mcp.c:2: HTTP status 0x1f4",
            "src/api/mcp.c:3: HTTP status MHD_HTTP_OK", "src/session/x.c:2: HTTP status 404",
            "src/session/x.c:2: HTTP status 400"]
    missing = [w for w in want if w not in problems]
    extra = [p for p in problems.split("\n") if p and not any(p.startswith(w) for w in want)]
    if missing or extra:
        print("http statuses self-test FAILED: not reported: %r; wrongly reported: %r" %
              (missing, extra))
        return 1
    print("http statuses self-test OK")
    return 0


def main(argv):
    return srccheck.main(
        argv, "HTTP statuses (api/status.c only)", check, self_test,
        "HTTP statuses OK: chosen in %s only" % ", ".join(sorted(OWN_STATUSES)),
        "%d HTTP statuses chosen outside api/status.c: give the failure a kind (util/error.h) "
        "or the success an api_ok (api/status.h)")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
