# SPDX-License-Identifier: MIT
"""LLM prompt templates: a YAML file with a Jinja2 template, defaults for
core.llm.generate and an optional JSON Schema for the answer.

Runs inside the jail because templates are untrusted: the template is
rendered by Jinja2's SandboxedEnvironment with StrictUndefined (an undefined
variable is an error with its line number), the answer validated with
jsonschema (draft 2020-12). The YAML file itself is read by the host, with
the same YAML 1.2 loader as workflows (one dialect), and arrives as
"document". The LLM call goes to the host as an RPC, which calls
core.llm.generate on the framework.

Job: {"type": "template", "document": the parsed YAML, "path", "requestData",
      "context", "input", "overrides"}
"""
import json

from sandboxd_runtime import errors, proto

SETTINGS = ("model", "temperature", "maxTokens", "system", "outputSchema")


def template_error(message, **details):
    return errors.error("TEMPLATE_ERROR", message, details)


def load(job):
    """The template document with overrides applied, or an error frame."""
    path = job["path"]
    doc = job.get("document")
    if not isinstance(doc, dict) or not isinstance(doc.get("template"), str):
        return None, template_error("%s must be a mapping with a string 'template'" % path,
                                    path=path)
    overrides = job.get("overrides") or {}
    for key, value in overrides.items():
        if key == "template":
            return None, template_error("overrides may not replace the template", path=path)
        doc[key] = value
    checks = (("model", str), ("system", str), ("maxTokens", int), ("outputSchema", dict))
    for key, kind in checks:
        if doc.get(key) is not None and not isinstance(doc[key], kind):
            return None, template_error("%s: %s must be a %s" % (path, key, kind.__name__),
                                        path=path, field=key)
    t = doc.get("temperature")
    if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float))):
        return None, template_error("%s: temperature must be a number" % path, path=path,
                                    field="temperature")
    return doc, None


def _template_line(exc, name):
    """Line of the template where rendering failed, from Jinja2's rewritten traceback."""
    line = getattr(exc, "lineno", None)
    tb = exc.__traceback__
    while tb is not None:
        # Jinja2 rewrites the traceback so that template lines appear as frames of their own
        # (named "<template>" when the template has no file).
        if tb.tb_frame.f_code.co_filename in (name, "<template>"):
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def render(doc, variables, path):
    import jinja2
    from jinja2.sandbox import SandboxedEnvironment

    sources = {"%s:%s" % (path, f): doc[f] for f in ("template", "system") if doc.get(f) is not None}
    # Loaded by name so that Jinja2's traceback frames carry it (for the line number).
    env = SandboxedEnvironment(undefined=jinja2.StrictUndefined, autoescape=False,
                               keep_trailing_newline=False, loader=jinja2.DictLoader(sources))
    out = {}
    for field in ("template", "system"):
        if doc.get(field) is None:
            continue
        name = "%s:%s" % (path, field)
        try:
            out[field] = env.get_template(name).render(**variables)
            continue
        except jinja2.TemplateSyntaxError as exc:
            kind, exc_ = "syntax error", exc
        except jinja2.UndefinedError as exc:
            kind, exc_ = "undefined variable", exc
        except jinja2.exceptions.SecurityError as exc:
            kind, exc_ = "unsafe operation", exc
        except Exception as exc:  # errors raised by filters or by the data itself
            kind, exc_ = type(exc).__name__, exc
        line = _template_line(exc_, name) if not isinstance(exc_, jinja2.TemplateSyntaxError) \
            else exc_.lineno
        return None, template_error("%s (%s, line %s): %s" % (path, field, line, exc_),
                                    path=path, field=field, line=line, reason=kind)
    return out, None


def _json_path(error):
    path = "$"
    for part in error.absolute_path:
        path += "[%d]" % part if isinstance(part, int) else ".%s" % part
    return path


def validate(completion, schema):
    """(value, None) or (None, error frame)."""
    try:
        value = json.loads(completion)
    except ValueError as exc:
        return None, errors.error("SCHEMA_VALIDATION_FAILED",
                                  "the completion is not JSON: %s" % exc,
                                  {"path": "$", "completion": completion[:2000]})
    import jsonschema

    try:
        validator = jsonschema.Draft202012Validator(schema)
        validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return None, template_error("the outputSchema is not a valid JSON Schema: %s"
                                    % exc.message, field="outputSchema")
    best = jsonschema.exceptions.best_match(validator.iter_errors(value))
    if best is not None:
        return None, errors.error("SCHEMA_VALIDATION_FAILED",
                                  "the completion does not match the outputSchema at %s: %s"
                                  % (_json_path(best), best.message),
                                  {"path": _json_path(best), "message": best.message,
                                   "validator": best.validator,
                                   "completion": completion[:2000]})
    return value, None


def run(job):
    doc, err = load(job)
    if err:
        return err
    variables = {"requestData": job.get("requestData"), "context": job.get("context"),
                 "input": job.get("input")}
    rendered, err = render(doc, variables, job["path"])
    if err:
        return err
    schema = doc.get("outputSchema")
    params = {"prompt": rendered["template"]}
    for key in ("model", "temperature", "maxTokens"):
        if doc.get(key) is not None:
            params[key] = doc[key]
    if "system" in rendered:
        params["system"] = rendered["system"]
    if schema is not None:
        params["responseFormat"] = "json"
    try:
        answer = proto.rpc_call({"type": "llm_generate", "params": params})
    except proto.RpcError as exc:
        return errors.error("MCP_ERROR", "core.llm.generate failed: %s" % exc,
                            dict(exc.details, kind=exc.kind))
    completion = answer.get("completion") if isinstance(answer, dict) else None
    if not isinstance(completion, str):
        return errors.error("MCP_ERROR", "core.llm.generate answered without a completion",
                            {"kind": "protocol"})
    if schema is None:
        value = completion
    else:
        value, err = validate(completion, schema)
        if err:
            return err
    return {"type": "result", "resultType": "generic", "data": value,
            "llm": {"model": answer.get("model") or params.get("model"), "prompt": params["prompt"]}}
