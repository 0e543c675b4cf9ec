def add(request, context):
    body = request["body"]
    return {"sum": body["a"] + body["b"]}
