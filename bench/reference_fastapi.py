# SPDX-License-Identifier: MIT
"""The seed design's /execute, as seed 000 sketches it: FastAPI, and per request the script
written to a temporary file and run with asyncio.create_subprocess_exec(python, runner,
script, function), the input as JSON on stdin, the result parsed from stdout. No isolation,
or (--bwrap) the subprocess wrapped in bubblewrap.

    python3 reference_fastapi.py --port 9000 --apps DIR [--bwrap]
"""
import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_server import RUNNER, bwrap_prefix  # noqa: E402


def make_app(apps, use_bwrap, python):
    app = FastAPI()

    @app.post("/execute")
    async def execute(request: Request):
        req = await request.json()
        ctx = req["context"]
        details = ctx["taskDetails"]
        with open(os.path.join(apps, ctx["appId"], details["script"]), "rb") as f:
            source = f.read()  # stands in for the MCP fetch
        workdir = tempfile.mkdtemp(prefix="ref-")
        try:
            script = os.path.join(workdir, "script.py")
            runner = os.path.join(workdir, "runner.py")
            with open(script, "wb") as f:
                f.write(source)
            with open(runner, "w") as f:
                f.write(RUNNER)
            cmd = [python, runner, script, details["function"]]
            if use_bwrap:
                cmd = bwrap_prefix(workdir) + cmd
            proc = await asyncio.create_subprocess_exec(
                *cmd, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE)
            out, _ = await asyncio.wait_for(proc.communicate(json.dumps(req).encode()),
                                            details.get("timeoutMs", 10000) / 1000.0)
            res = json.loads(out)
            if res["ok"]:
                return {"requestId": req["requestId"], "resultType": "generic", "data": res["result"]}
            return {"requestId": req["requestId"], "resultType": "error",
                    "data": {"code": "APPLICATION_ERROR", "message": res["error"]["message"],
                             "details": res["error"]}}
        except Exception as e:
            return JSONResponse({"error": str(e)}, status_code=500)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    return app


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--apps", required=True)
    ap.add_argument("--bwrap", action="store_true")
    ap.add_argument("--python", default="/usr/bin/python3")
    a = ap.parse_args()
    uvicorn.run(make_app(a.apps, a.bwrap, a.python), host="127.0.0.1", port=a.port,
                log_level="warning")


if __name__ == "__main__":
    main()
