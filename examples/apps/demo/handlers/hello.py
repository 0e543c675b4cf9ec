"""Greets by name: an httpResponse result with a status code and headers."""


def hello(request):
    name = (request.get("query") or {}).get("name", "world")
    return {
        "statusCode": 200,
        "headers": {"Content-Type": "text/plain"},
        "body": "Hello, %s!" % name,
    }
