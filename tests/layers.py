#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The include direction of src/: each top-level folder of src/ is one layer
(one node; a folder inside it belongs to it), the include graph between them
must be a DAG and follow LAYERS (lowest first): a file in one folder may
include headers of its own folder and of folders below it, never above. Every
top-level folder with code must be in LAYERS. Prints every cycle and every
upward include with the #include lines that make it.

Usage: tests/layers.py [--json RESULT_FILE] [SRC_DIR]
       tests/layers.py --self-test   (the check finds a planted cycle and upward include)
Exit status 0 when the include direction holds, 1 otherwise."""
import os
import re
import sys
import tempfile

import srccheck

# Lowest first. A folder may include only folders listed before it (and itself).
LAYERS = [
    "util",
    "proto",
    "jail",
    "exec",
    "zygote",
    "pool",
    "egress",
    "http",
    "store",
    "framework",
    "mcpclient",
    "tenant",
    "metrics",
    "response",
    "session",
    "handlers",
    "mcpserver",
    "e2b",
    "web",
    "api",
    "cmd",
    ".",  # src/main.c, src/server.c
]

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def folder_of(rel):
    """The layer a path is in, relative to src/: its top-level folder ("web" for
    web/console/x.h), "." for a file at the top."""
    parts = rel.replace(os.sep, "/").split("/")
    return parts[0] if len(parts) > 1 else "."


def scan(src, found=None):
    """Return {(from_folder, to_folder): [(file, line_no, text), ...]}; add every layer that
    holds code to found."""
    edges = {}
    for dirpath, _, files in os.walk(src):
        for name in sorted(files):
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, src)
            here = folder_of(rel)
            if found is not None:
                found.add(here)
            with open(path, encoding="utf-8", errors="replace") as f:
                for no, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    target = m.group(1)
                    there = folder_of(target) if "/" in target else here
                    if there == here:
                        continue
                    edges.setdefault((here, there), []).append(
                        (os.path.join("src", rel), no, line.strip()))
    return edges


def cycles(edges):
    """Every strongly connected component with more than one folder (Tarjan)."""
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def check(src):
    found = set()
    edges = scan(src, found)
    problems = []
    for comp in cycles(edges):
        lines = ["include cycle between folders: %s" % " <-> ".join(comp)]
        for (a, b), where in sorted(edges.items()):
            if a in comp and b in comp:
                for f, no, text in where:
                    lines.append("  %s -> %s  %s:%d: %s" % (a, b, f, no, text))
        problems.append("\n".join(lines))
    rank = {name: i for i, name in enumerate(LAYERS)}
    folders = found | {a for a, _ in edges} | {b for _, b in edges}
    for name in sorted(folders - set(rank)):
        problems.append("folder src/%s is not in LAYERS of tests/layers.py" % name)
    for (a, b), where in sorted(edges.items()):
        if a in rank and b in rank and rank[b] > rank[a]:
            lines = ["upward include: %s (layer %d) includes %s (layer %d)" %
                     (a, rank[a], b, rank[b])]
            for f, no, text in where:
                lines.append("  %s:%d: %s" % (f, no, text))
            problems.append("\n".join(lines))
    return problems


def self_test():
    """Plant a cycle (util <-> proto), an upward include (jail -> api), one from a folder inside
    a layer (jail/sub -> api, counted as jail), a folder of two layers (mcp/client below
    session, mcp/server above it: one node "mcp", so a cycle) and an unknown folder without
    includes in a scratch tree; the check must report each, with the #include line, and pass a
    clean tree (a folder inside a layer including its own layer's headers)."""
    def tree(files):
        d = tempfile.mkdtemp(prefix="layers-")
        for rel, text in files.items():
            os.makedirs(os.path.join(d, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(d, rel), "w") as f:
                f.write(text)
        return d

    clean = tree({"util/a.h": "", "proto/b.c": '#include "util/a.h"\n#include "proto/b.h"\n',
                  "mcpclient/c.c": '#include "proto/b.h"\n', "api/d.c": '#include "mcpclient/c.h"\n',
                  "web/console/e.c": '#include "web/web.h"\n#include "util/a.h"\n'})
    bad = tree({"util/a.c": '#include "proto/b.h"\n', "proto/b.c": '#include "util/a.h"\n',
                "jail/j.c": '# include "api/x.h"\n', "jail/sub/k.c": '#include "api/y.h"\n',
                "mcp/client/c.c": '#include "util/a.h"\n',
                "session/s.c": '#include "mcp/client/c.h"\n',
                "mcp/server/m.c": '#include "session/s.h"\n', "nowhere/n.c": ""})
    ok = check(clean)
    problems = "\n".join(check(bad))
    want = ["include cycle between folders: proto <-> util",
            'util -> proto  %s:1: #include "proto/b.h"' % os.path.join("src", "util", "a.c"),
            "upward include: jail (layer 2) includes api",
            '# include "api/x.h"', '%s:1: #include "api/y.h"' % os.path.join("src", "jail", "sub", "k.c"),
            "include cycle between folders: mcp <-> session",
            'mcp -> session  %s:1: #include "session/s.h"' % os.path.join("src", "mcp", "server", "m.c"),
            "folder src/nowhere is not in LAYERS"]
    missing = [w for w in want if w not in problems]
    if ok or missing:
        print("layers self-test FAILED: clean tree: %r; not reported: %r\n%s" % (ok, missing, problems))
        return 1
    print("layers self-test OK")
    return 0


def main(argv):
    return srccheck.main(argv, "include layers", check, self_test,
                         "include direction OK: %s" % " < ".join(LAYERS))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
