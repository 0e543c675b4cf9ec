# SPDX-License-Identifier: MIT
"""`sandboxd migrate`'s reader of mcp-server-code-execution-mode's user_tools.py (the file its
save_tool() appends function sources to): which top-level definitions can become saved tools
of a workspace, under the same rules a session applies (session.check_tool: one plain def,
literal defaults, a name that shadows nothing), and why the rest cannot.

Runs on the host, started by sandboxd with the interpreter of the jail (-I -S -B); it parses
and compiles, never executes, the file. Prints one JSON array on stdout:
  [{"name", "line", "source"} | {"name"?, "line", "skipped": reason}, ...]

    python3 migrate.py USER_TOOLS_PY
"""
import ast
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from sandboxd_runtime.session import check_tool  # noqa: E402

MAX_SOURCE = 4 << 20  # bytes of user_tools.py read at most


def imported_names(tree):
    """Names the file's top-level imports define."""
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                names.add(a.asname or a.name.split(".")[0])
    return names


def needs_imports(fn, imported):
    """The top-level imports fn uses without importing or binding them itself."""
    own = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}
    used = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Name):
            (own.add if isinstance(node.ctx, ast.Store) else used.add)(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and node is not fn:
            own.update(a.asname or a.name.split(".")[0] for a in node.names)
    return sorted((used & imported) - own)


def definitions(text):
    """The report for the source text of a user_tools.py."""
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        return [{"line": exc.lineno or 0,
                 "skipped": "the file is not valid Python: %s" % exc.msg}]
    lines = text.splitlines(True)
    imported = imported_names(tree)
    items = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            source = "".join(lines[first - 1:node.end_lineno])
            item = {"name": node.name, "line": first}
            missing = needs_imports(node, imported)
            try:
                check_tool(node.name, source)
                if missing:
                    raise ValueError("it uses %s, imported at the top of the file; a saved tool "
                                     "is one def: move the import inside the function"
                                     % ", ".join(missing))
                item["source"] = source
            except (ValueError, SyntaxError) as exc:
                item["skipped"] = str(exc)
            items.append(item)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # a docstring or a bare string: nothing to carry over
        else:
            what = "an import" if isinstance(node, (ast.Import, ast.ImportFrom)) else \
                "a %s statement" % type(node).__name__.lower()
            items.append({"line": node.lineno,
                          "skipped": "%s, not a function definition: a saved tool is one "
                                     "def (put imports inside the function)" % what})
    # As when the file runs, a later definition of a name replaces the earlier one.
    last = {i["name"]: n for n, i in enumerate(items) if "name" in i}
    for n, item in enumerate(items):
        if "name" in item and last[item["name"]] != n:
            item.pop("source", None)
            item["skipped"] = "defined again later in the file (line %d); that one is used" \
                % items[last[item["name"]]]["line"]
    return items


def main(argv):
    if len(argv) != 2:
        print("usage: migrate.py USER_TOOLS_PY", file=sys.stderr)
        return 2
    with open(argv[1], "rb") as f:
        data = f.read(MAX_SOURCE + 1)
    if len(data) > MAX_SOURCE:
        report = [{"line": 0, "skipped": "the file is over %d bytes" % MAX_SOURCE}]
    else:
        report = definitions(data.decode("utf-8", "replace"))
    json.dump(report, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
