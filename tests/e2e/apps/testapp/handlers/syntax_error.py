def broken(request, context)
    return 1
