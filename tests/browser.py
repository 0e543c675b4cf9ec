# SPDX-License-Identifier: MIT
"""Run a scenario of tests/node/console.mjs (the console in headless Chromium through
puppeteer-core) and answer its steps: the script prints {"step": NAME} lines and waits for
one answer line each; on_step[NAME](message) does what the step asks (start executions, stop
the server...) and its return value is sent back. Returns the scenario's observations.

Screenshots go to tests/artifacts/console/ (kept after the run, ignored by git), or to
$SANDBOXD_ARTIFACTS/console when set."""
import json
import os
import pathlib
import subprocess
import threading

ROOT = pathlib.Path(__file__).resolve().parents[1]
NODE_DIR = ROOT / "tests" / "node"
NODE = NODE_DIR / "node_modules" / ".bin" / "node"
DRIVER = NODE_DIR / "console.mjs"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
SHOTS = pathlib.Path(os.environ.get("SANDBOXD_ARTIFACTS", ROOT / "tests" / "artifacts")) / "console"


def available():
    """Why the browser tests cannot run here, or None when they can."""
    if not (NODE_DIR / "node_modules" / "puppeteer-core").exists():
        return "tests/node has no puppeteer-core: npm ci there (tests/run.sh does)"
    if not os.access(CHROMIUM, os.X_OK):
        return "no Chromium at %s: make deps installs Debian's chromium" % CHROMIUM
    return None


def drive(scenario, config, on_step=None, timeout=300):
    """The scenario's {"result": ...} object (with "seen": requests, console, pageErrors,
    dialogs, shots). Raises AssertionError when the driver fails or says nothing."""
    why = available()
    assert why is None, why
    config = dict(config)
    config.setdefault("shots", str(SHOTS))
    proc = subprocess.Popen([str(NODE), str(DRIVER), scenario, json.dumps(config)],
                            cwd=NODE_DIR, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    result = None
    try:
        for line in proc.stdout:
            msg = json.loads(line)
            if "result" in msg:
                result = msg["result"]
                break
            handler = (on_step or {}).get(msg["step"])
            assert handler, "the driver asked for step %r, which this test does not answer" % msg
            proc.stdin.write(json.dumps(handler(msg)) + "\n")
            proc.stdin.flush()
        proc.stdin.close()
        proc.wait(60)
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = proc.stderr.read()
    assert result is not None, "console.mjs %s gave no result (exit %s):\n%s" % (
        scenario, proc.returncode, err[-5000:])
    assert "failed" not in result, "console.mjs %s failed:\n%s\nconsole: %s\npage errors: %s\n" \
        "stderr: %s" % (scenario, result["failed"], result["seen"]["console"][-20:],
                        result["seen"]["pageErrors"], err[-3000:])
    return result


def console_errors(seen, allowed=()):
    """The console messages of type error, less those matching one of allowed (substrings)."""
    return [m for m in seen["console"]
            if m["type"] == "error" and not any(a in m["text"] for a in allowed)]
