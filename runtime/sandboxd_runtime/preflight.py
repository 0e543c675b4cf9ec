# SPDX-License-Identifier: MIT
"""The pre-flight of a session execution: before the first statement runs, the calls of the
submitted code that certainly reach a known MCP tool are checked against the tool's schema,
the way the call itself would check them (checks.wire_arguments), so that a wrong argument
stops the code before anything is printed or sent.

Conservative by construction: a call is checked only when its target is sure and it would run
as written. The target is ``mcp_<alias>.<tool>(...)`` or ``mcp_<alias>.sync.<tool>(...)`` where
``mcp_<alias>`` is the session's proxy now and the code never binds that name, nor assigns to
an attribute of it; its arguments are keywords (a ``*args`` or ``**kwargs`` makes it unknown,
and it is left alone), whose values are checked when they are literals and only counted when
not. Calls inside a function, lambda or class body (they may never run) and inside a ``try``
that handles exceptions (the code may expect the error) are left alone.
"""
import ast

from sandboxd_runtime import checks


class PreflightError(Exception):
    """A call that would fail: the TypeError or ValueError it would raise, and its line."""

    def __init__(self, error, line):
        super().__init__(str(error))
        self.error = error
        self.line = line


def _bound_names(tree):
    """Names the code binds anywhere (then they may not be the proxy when the call runs), and
    names whose attributes it assigns or deletes."""
    bound, touched = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                bound.add((a.asname or a.name).split(".")[0])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound.update(node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
        elif isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name):
                touched.add(base.id)
    return bound, touched


class _Calls(ast.NodeVisitor):
    """The calls of the code that run as it runs (not in bodies that may never run)."""

    def __init__(self):
        self.calls = []

    def visit_FunctionDef(self, node):
        for d in node.decorator_list:  # decorators and defaults run at definition
            self.visit(d)
        self.visit(node.args)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        self.visit(node.args)

    def visit_ClassDef(self, node):
        for d in node.decorator_list + node.bases + [k.value for k in node.keywords]:
            self.visit(d)

    def visit_Try(self, node):
        if not node.handlers:
            for stmt in node.body:
                self.visit(stmt)
        for stmt in node.handlers + node.orelse + node.finalbody:
            self.visit(stmt)

    visit_TryStar = visit_Try

    def visit_Call(self, node):
        self.calls.append(node)
        self.generic_visit(node)


def _target(func, ns, bound, touched, proxy_type):
    """The ToolSpec a call's func surely reaches, or None."""
    if not isinstance(func, ast.Attribute):
        return None
    base = func.value
    if isinstance(base, ast.Attribute) and base.attr == "sync":
        base = base.value
    if not isinstance(base, ast.Name) or base.id in bound or base.id in touched:
        return None
    proxy = ns.get(base.id)
    if not isinstance(proxy, proxy_type):
        return None
    tool = proxy.TOOL_MAP.get(func.attr)
    return proxy._specs.get(tool["name"]) if tool else None


def check(tree, ns, proxy_type):
    """Raise PreflightError for the first call of tree (a module) that would fail."""
    finder = _Calls()
    for stmt in tree.body:
        finder.visit(stmt)
    # Most code calls no tool at all: the second walk of the tree (the names it binds) only for
    # code with a call that may reach one (the same calls are then judged again, with them).
    nothing = frozenset()
    calls = [c for c in finder.calls if _target(c.func, ns, nothing, nothing, proxy_type)]
    if not calls:
        return
    bound, touched = _bound_names(tree)
    for call in calls:
        spec = _target(call.func, ns, bound, touched, proxy_type)
        if spec is None:
            continue
        if any(isinstance(a, ast.Starred) for a in call.args) or \
                any(k.arg is None for k in call.keywords):
            continue
        kwargs = {}
        for k in call.keywords:
            try:
                kwargs[k.arg] = ast.literal_eval(k.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                kwargs[k.arg] = checks.UNKNOWN
        try:
            checks.wire_arguments(spec, kwargs, tuple(call.args))
        except (TypeError, ValueError) as exc:
            raise PreflightError(exc, call.lineno) from None
