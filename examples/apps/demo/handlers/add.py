"""Adds two numbers from the request body: a generic result."""


def add(request, context):
    body = request.get("body") or {}
    return {"sum": body.get("a", 0) + body.get("b", 0), "app": context["appId"]}
