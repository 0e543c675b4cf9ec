import json


def work(request, context):
    """About a millisecond of CPU: JSON round trips of a small document."""
    doc = {"items": [{"id": i, "name": "item-%d" % i, "tags": ["a", "b"]} for i in range(40)]}
    for _ in range(12):
        doc = json.loads(json.dumps(doc))
    return {"n": len(doc["items"])}
