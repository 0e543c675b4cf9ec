"""Raises: an APPLICATION_ERROR with the exception's type, message and traceback."""


def divide(request, context):
    body = request.get("body") or {}
    return {"quotient": body["a"] / body["b"]}
