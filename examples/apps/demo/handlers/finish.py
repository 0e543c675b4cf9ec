"""The last step of flows/triage.yaml: accept the message."""


def finish(request, context):
    return {"accepted": True, "label": request["label"], "chars": len(request["text"])}
