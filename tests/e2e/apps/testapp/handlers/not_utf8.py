def latin(request, context):
    return "é"
