# SPDX-License-Identifier: MIT
"""EXECUTOR: run a code string, then optionally instantiate a class and call
one of its methods, or call a function, with keyword parameters.

Without a class or function, the value of the code's last expression (if
it ends with one) is the result, as in a REPL.
"""
import ast
import sys
import types

from sandboxd_runtime import errors, jit

FILENAME = "<executor>"


def run_code(source, module):
    """Execute source in module; return the value of a trailing expression or None."""
    tree = ast.parse(source, FILENAME, "exec")
    jit.remember_source(FILENAME, source)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, FILENAME, "exec", dont_inherit=True), module.__dict__)
    if last is not None:
        return eval(compile(last, FILENAME, "eval", dont_inherit=True), module.__dict__)
    return None


def run(job):
    source = job.get("code", "")
    module = types.ModuleType("__sandbox__")
    module.__file__ = FILENAME
    sys.modules["__sandbox__"] = module
    params = job.get("methodParams") or {}
    class_name = job.get("className")
    method_name = job.get("methodName")
    function_name = job.get("functionName")
    try:
        value = run_code(source, module)
    except BaseException as exc:
        return errors.from_exception(exc)

    target = None
    if class_name:
        cls = module.__dict__.get(class_name)
        if not isinstance(cls, type):
            return errors.error(
                "FUNCTION_NOT_FOUND", "the code defines no class %r" % class_name,
                {"className": class_name},
            )
        try:
            instance = cls()
        except BaseException as exc:
            return errors.from_exception(exc)
        target = getattr(instance, method_name, None)
        if not callable(target):
            return errors.error(
                "FUNCTION_NOT_FOUND",
                "class %s has no method %r" % (class_name, method_name),
                {"className": class_name, "methodName": method_name},
            )
    elif function_name:
        target = module.__dict__.get(function_name)
        if not callable(target):
            return errors.error(
                "FUNCTION_NOT_FOUND", "the code defines no function %r" % function_name,
                {"functionName": function_name},
            )
    if target is not None:
        try:
            value = jit.call(lambda: target(**params), ())
        except BaseException as exc:
            return errors.from_exception(exc)
    return {"type": "result", "resultType": "executor", "data": {"result": value}}
