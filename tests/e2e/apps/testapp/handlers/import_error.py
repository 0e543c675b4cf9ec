raise RuntimeError("fails at import")


def fn(request, context):
    return 1
