# SPDX-License-Identifier: MIT
"""Several instances behind HAProxy (CONTRACT §11), driven through the real
deploy/local-cluster.sh: stateless work spreads over the instances, sessions and MCP sessions
stay with the instance that holds them, killing one instance leaves the others serving and
its sessions answer a clear error at once, and SIGTERM stops everything the script started."""
import os
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from cluster import INSTANCES, ROOT, Cluster
from harness import SANITIZER_MARKERS, McpHttp, executor_request


@pytest.fixture(scope="module")
def cluster():
    c = Cluster()
    yield c
    c.stop()


def execute(proxy):
    r = proxy.execute(executor_request("def f():\n    return 7\n", functionName="f"), fresh=True,
                      timeout=60)
    assert r.status == 200 and r.json["data"]["result"] == 7, r
    return r.header("X-Sandboxd-Instance")


def create_session(proxy):
    r = proxy.request("POST", "/v1/sessions", body={}, fresh=True, timeout=60)
    assert r.status == 201, r
    sid = r.json["sessionId"]
    assert sid.split(".")[0] == r.header("X-Sandboxd-Instance"), (sid, r.headers)
    return sid


def session_run(proxy, sid, code):
    r = proxy.request("POST", "/v1/sessions/%s/execute" % sid, body={"code": code}, fresh=True,
                      timeout=60)
    assert r.status == 200 and r.json["status"] == "ok", r
    assert r.header("X-Sandboxd-Instance") == sid.split(".")[0], r.headers
    return r.json["result"]


def test_stateless_work_spreads_over_the_instances(cluster):
    seen = [execute(cluster.proxy) for _ in range(12)]
    assert set(seen) == set(INSTANCES), seen


def test_sessions_stay_with_their_instance(cluster):
    sids = [create_session(cluster.proxy) for _ in range(6)]
    assert {s.split(".")[0] for s in sids} == set(INSTANCES), sids
    for sid in sids:
        session_run(cluster.proxy, sid, "n = 0")
    for step in range(1, 4):
        for sid in sids:  # interleaved: each request is routed on its own
            assert session_run(cluster.proxy, sid, "n += 1\nn") == str(step)
    for sid in sids:
        r = cluster.proxy.request("GET", "/v1/sessions/" + sid, fresh=True)
        assert r.status == 200 and r.json["executions"] == 4, r
        assert cluster.proxy.request("DELETE", "/v1/sessions/" + sid, fresh=True).status == 204


def test_mcp_sessions_stay_with_their_instance(cluster):
    clients = [McpHttp(cluster.proxy) for _ in range(3)]
    assert {c.session.split(".")[0] for c in clients} == set(INSTANCES)
    for _ in range(3):
        for c in clients:
            tools = c.request("tools/list")["result"]["tools"]
            assert "run_python" in [t["name"] for t in tools]
    out = clients[0].call("run_python", {"code": "x = 6 * 7\nprint(x)"})
    assert not out.get("isError") and "42" in out["content"][0]["text"], out
    out = clients[0].call("run_python", {"code": "print(x + 1)"})  # same sandbox session
    assert "43" in out["content"][0]["text"], out
    for c in clients:
        assert c.delete().status in (200, 204)


def test_killing_an_instance_leaves_the_others_serving(cluster):
    proxy = cluster.proxy
    victim = "i2"
    held = {}
    while set(held) != set(INSTANCES):
        sid = create_session(proxy)
        held[sid.split(".")[0]] = sid
    mcp = McpHttp(proxy)
    while mcp.session.split(".")[0] != victim:
        mcp.delete()
        mcp = McpHttp(proxy)
    for sid in held.values():
        session_run(proxy, sid, "alive = True")
    os.kill(cluster.instances[victim][0], signal.SIGKILL)
    # The script notices, and goes on.
    deadline = time.time() + 10
    while not any("instance %s exited" % victim in line for line in cluster.output):
        assert time.time() < deadline, "".join(cluster.output)
        time.sleep(0.05)
    assert cluster.proc.poll() is None

    # Stateless work goes on at once, on the others only.
    seen = [execute(proxy) for _ in range(9)]
    assert victim not in seen and set(seen) == set(INSTANCES) - {victim}, seen
    # The victim's sessions answer a clear error, quickly: no hang, no wrong instance.
    deadline = time.time() + 15
    while True:
        r = proxy.request("GET", "/v1/sessions/" + held[victim], fresh=True, timeout=10)
        assert r.status == 404, r
        if r.json["error"]["code"] == "INSTANCE_UNAVAILABLE" or time.time() > deadline:
            break
        time.sleep(0.2)  # until HAProxy's health check has seen it go
    assert r.json["error"]["code"] == "INSTANCE_UNAVAILABLE", r
    assert victim in r.json["error"]["message"]
    r = proxy.request("POST", "/v1/sessions/%s/execute" % held[victim], body={"code": "1"},
                      fresh=True, timeout=10)
    assert r.status == 404 and r.json["error"]["code"] == "INSTANCE_UNAVAILABLE", r
    r = mcp.post({"jsonrpc": "2.0", "id": 9, "method": "tools/list"})
    assert r.status == 404 and r.json["error"]["code"] == -32001, r
    # The others' sessions are untouched.
    for inst, sid in held.items():
        if inst != victim:
            assert session_run(proxy, sid, "alive") == "True"


def test_sigterm_stops_everything(cluster):
    pids = [pid for pid, _ in cluster.instances.values()]
    cluster.proc.send_signal(signal.SIGTERM)
    assert cluster.proc.wait(timeout=120) == 0, "".join(cluster.output)
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    with pytest.raises(OSError):
        cluster.proxy.request("GET", "/healthz", fresh=True, timeout=5)
    logs = cluster.logs()
    for marker in SANITIZER_MARKERS:
        assert marker not in logs, logs
    assert "sandboxd-cluster." not in " ".join(os.listdir(tempfile.gettempdir()))


def test_checked_in_haproxy_config_is_the_generators_and_valid():
    """deploy/haproxy/haproxy.cfg is what deploy/haproxy/haproxy-cfg.sh prints for its three
    example instances, and HAProxy accepts it."""
    cfg = ROOT / "deploy" / "haproxy" / "haproxy.cfg"
    out = subprocess.run([str(ROOT / "deploy" / "haproxy" / "haproxy-cfg.sh"), "--bind",
                          "0.0.0.0:8080", "--instance", "node1=192.0.2.11:8080", "--instance",
                          "node2=192.0.2.12:8080", "--instance", "node3=192.0.2.13:8080"],
                         capture_output=True, text=True, check=True).stdout
    assert out == cfg.read_text()
    haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
    p = subprocess.run([haproxy, "-c", "-f", str(cfg)], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    # A bad instance id never makes it into a configuration.
    p = subprocess.run([str(ROOT / "deploy" / "haproxy" / "haproxy-cfg.sh"), "--bind", ":1",
                        "--instance", "a.b=127.0.0.1:1"], capture_output=True, text=True)
    assert p.returncode == 2 and "instance id" in p.stderr, p.stderr
