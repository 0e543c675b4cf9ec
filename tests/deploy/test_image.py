# SPDX-License-Identifier: MIT
"""The container image (CONTRACT §11): `make image` builds localhost/sandboxd:latest from
Debian packages (cached: nothing is rebuilt when its inputs did not change),
deploy/podman-run.sh runs it on a loopback port with the least privilege that works here, and
the sandbox inside it holds: /healthz, an execution, a session, and attacks through /execute
(network, writes outside /tmp, host files, the token in the environment, a fork bomb)."""
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from harness import Endpoint, executor_request, free_port  # noqa: E402

TOKEN = "container-test-token-8d1f"
SECRET = "HOST-SECRET-IN-A-BIND-MOUNT"


class Container(Endpoint):
    """sandboxd in a container, with the token a merged build requires."""

    def __init__(self, port, proc, log):
        super().__init__(port)
        self.proc = proc
        self.log = log

    def request(self, method, path, body=None, headers=None, fresh=True, timeout=120):
        # The token a merged build requires (--api-token via SANDBOXD_API_TOKEN, docs/DEPLOY.md).
        h = {"Authorization": "Bearer " + TOKEN, **(headers or {})}
        return super().request(method, path, body, h, fresh=fresh, timeout=timeout)


def make_image():
    t0 = time.time()
    p = subprocess.run(["make", "-s", "-C", str(ROOT), "image"], capture_output=True, text=True,
                       timeout=900)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return p.stdout, time.time() - t0


@pytest.fixture(scope="module")
def image():
    out, seconds = make_image()
    print("make image: %.1f s: %s" % (seconds, out.strip().replace("\n", "; ")))
    return out


@pytest.fixture(scope="module")
def host_dir():
    d = tempfile.mkdtemp(prefix="sandboxd-container-host-")
    os.chmod(d, 0o755)
    p = os.path.join(d, "secret.txt")
    with open(p, "w") as f:
        f.write(SECRET)
    os.chmod(p, 0o644)  # readable by sandboxd's user: only the sandbox must keep it out
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def container(image, host_dir):
    port = free_port()
    name = "sandboxd-test-%d-%d" % (os.getpid(), port)
    log = tempfile.NamedTemporaryFile(prefix="sandboxd-container-", suffix=".txt", delete=False)
    env = dict(os.environ, SANDBOXD_API_TOKEN=TOKEN)
    proc = subprocess.Popen(
        [str(ROOT / "deploy" / "podman-run.sh"), "--port", str(port), "--name", name,
         "--podman-arg", "--volume=%s:/srv/host:ro" % host_dir, "--",
         "--pool-size", "2", "--zygotes", "1", "--session-pool-size", "1",
         "--template-pool-size", "0", "--max-procs", "32", "--no-mcp-discovery"],
        stdout=log, stderr=log, env=env)
    c = Container(port, proc, log)
    deadline = time.time() + 180
    while True:
        assert proc.poll() is None, "the container exited:\n" + c.logs()
        try:
            if c.request("GET", "/healthz", timeout=5).status == 200:
                break
        except OSError:
            pass
        assert time.time() < deadline, "sandboxd in the container did not answer:\n" + c.logs()
        time.sleep(0.2)
    yield c
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)  # podman hands it to sandboxd, which exits 0
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            subprocess.run(["podman", "rm", "--force", name], capture_output=True)
            proc.wait(timeout=60)
    logs = c.logs()
    os.unlink(log.name)
    assert proc.returncode == 0, "the container exited %s:\n%s" % (proc.returncode, logs[-3000:])


def run(container, code, **task):
    r = container.execute(executor_request(code, **task))
    assert r.status == 200, r
    assert r.json["resultType"] == "generic", r.json
    return r.json["data"]["result"]


def test_make_image_is_cached(image):
    assert "localhost/sandboxd:latest" in subprocess.run(
        ["podman", "images", "--format", "{{.Repository}}:{{.Tag}}"], capture_output=True,
        text=True, check=True).stdout
    out, seconds = make_image()
    assert "is up to date" in out and "building" not in out and "making the base" not in out, out
    assert seconds < 120  # hang guard; the cached run measured ~0.3 s (docs/DEPLOY.md)


def test_healthz_reports_every_layer_as_non_root(container):
    r = container.request("GET", "/healthz")
    assert r.status == 200, r
    iso = r.json["isolation"]
    assert set(iso["namespaces"]) >= {"user", "pid", "mount", "net", "ipc", "uts"}, iso
    assert iso["seccomp"] and iso["noNewPrivs"] and iso["capabilitiesDropped"], iso
    assert iso["sandboxUid"] == 10001 and iso["rootless"], iso  # not root in the container
    assert iso["selftest"]["netInterfaces"] == ["lo"], iso
    assert r.header("X-Sandboxd-Instance"), r.headers


def test_execute_and_a_session(container):
    assert run(container, "class C:\n    def twice(self, x):\n        return 2 * x\n",
               className="C", methodName="twice", methodParams={"x": 21}) == 42
    r = container.request("POST", "/v1/sessions", body={})
    assert r.status == 201, r
    sid = r.json["sessionId"]
    for code, want in [("n = 40", None), ("n += 2\nn", "42")]:
        r = container.request("POST", "/v1/sessions/%s/execute" % sid, body={"code": code})
        assert r.status == 200 and r.json["status"] == "ok", r
        assert r.json["result"] == want, r.json
    assert container.request("DELETE", "/v1/sessions/" + sid).status == 204


def test_attack_network(container):
    code = """
import socket
out = []
try:  # sandboxd itself listens there, in the container's network namespace
    socket.create_connection(("127.0.0.1", 8080), timeout=2)
    out.append("connected")
except OSError as e:
    out.append(type(e).__name__)
try:
    socket.getaddrinfo("example.com", 80)
    out.append("resolved")
except OSError as e:
    out.append(type(e).__name__)
out.append([l.split(":")[0].strip() for l in open("/proc/net/dev").readlines()[2:]])
out
"""
    out = run(container, code)
    assert "connected" not in out and "resolved" not in out, out
    assert out[-1] == ["lo"], out


def test_attack_write_outside_tmp(container):
    code = """
import os
out = {}
for path in ["/usr/bin/evil", "/etc/passwd", "/var/lib/sandboxd/evil", "/evil"]:
    try:
        with open(path, "a") as f:
            f.write("x")
        out[path] = "written"
    except OSError as e:
        out[path] = e.errno
with open("/tmp/ok", "w") as f:
    f.write("fine")
out["/tmp/ok"] = open("/tmp/ok").read()
out
"""
    out = run(container, code)
    assert out.pop("/tmp/ok") == "fine"
    assert "written" not in out.values(), out


def test_attack_read_host_files(container):
    code = """
import os
out = {}
for path in ["/srv/host/secret.txt", "/var/lib/sandboxd/state", "/usr/bin/sandboxd"]:
    out[path] = os.path.exists(path)
envs = []
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            raw = open("/proc/%s/environ" % pid, "rb").read()
            envs.append(raw.replace(b"\\0", b"\\n").decode(errors="replace"))
        except OSError:
            pass
out["environ"] = "\\n".join(envs)
out
"""
    out = run(container, code)
    assert TOKEN not in out.pop("environ")
    assert out == {"/srv/host/secret.txt": False, "/var/lib/sandboxd/state": False,
                   "/usr/bin/sandboxd": False}, out


def test_attack_fork_bomb(container):
    code = """
import os, time
n = 0
err = None
try:
    for _ in range(100000):
        pid = os.fork()
        if pid == 0:
            time.sleep(30)
            os._exit(0)
        n += 1
except OSError as e:
    err = e.errno
(n, err)
"""
    n, err = run(container, code, timeoutMs=20000)
    assert err == 11 and n < 32, (n, err)  # EAGAIN at --max-procs
    # The server and the container are unharmed.
    assert container.request("GET", "/healthz").status == 200
    assert run(container, "def f():\n    return 'still here'\n", functionName="f") == "still here"
