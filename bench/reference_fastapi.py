# SPDX-License-Identifier: MIT
"""The seed design's /execute, as seed 000 sketches it: FastAPI, and per request the script
written to a temporary file and run with asyncio.create_subprocess_exec(python, runner,
script, function), the input as JSON on stdin, the result parsed from stdout. No isolation,
or (--bwrap) the subprocess wrapped in bubblewrap.

    python3 reference_fastapi.py --port 9000 --apps DIR [--bwrap]
"""
import asyncio
import json
import os
import shutil
import sys

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_server import parse_args, prepare, response, timeout_s  # noqa: E402


def make_app(apps, use_bwrap, python):
    app = FastAPI()

    @app.post("/execute")
    async def execute(request: Request):
        req = await request.json()
        workdir = None
        try:
            cmd, workdir = prepare(apps, req, use_bwrap, python)  # small files: not worth a thread
            proc = await asyncio.create_subprocess_exec(
                *cmd, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE)
            out, _ = await asyncio.wait_for(proc.communicate(json.dumps(req).encode()),
                                            timeout_s(req))
            return response(req, out)
        except Exception as e:
            return JSONResponse({"error": str(e)}, status_code=500)
        finally:
            if workdir:
                shutil.rmtree(workdir, ignore_errors=True)

    return app


def main():
    a = parse_args()
    uvicorn.run(make_app(a.apps, a.bwrap, a.python), host="127.0.0.1", port=a.port,
                log_level="warning")


if __name__ == "__main__":
    main()
