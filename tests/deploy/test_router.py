# SPDX-License-Identifier: MIT
"""The Kubernetes router (deploy/kubernetes/router.yaml) run for real: its HAProxy
configuration, with loopback addresses for the cluster's, in front of two sandboxd "pods" on
127.0.0.2 and 127.0.0.3 whose instance ids are their IPs with dashes, and a DNS server that
answers as CoreDNS does for the headless Service sandboxd-pods (each ready endpoint by its
dashed IP, the Service name with all of them). Sessions follow their pod, stateless work
spreads, a prefix naming no ready pod is refused without a connection, and a pod that goes
away leaves its sessions answering 404 INSTANCE_UNAVAILABLE."""
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import http.client

import pytest
import yaml
from dnslib import QTYPE, RCODE, RR, A
from dnslib.server import BaseResolver, DNSLogger, DNSServer

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from harness import Endpoint, McpHttp, Server, executor_request, free_port  # noqa: E402

SERVICE = "sandboxd-pods.sandboxd.svc.cluster.local"
PODS = ["127.0.0.2", "127.0.0.3"]


class CoreDns(BaseResolver):
    """A records of a headless Service as CoreDNS serves them: the Service name resolves to
    every ready endpoint, <a-b-c-d>.<service> to that endpoint while it is ready."""

    def __init__(self):
        self.ready = set()

    def resolve(self, request, handler):
        reply = request.reply()
        name = str(request.q.qname).rstrip(".").lower()
        if name == SERVICE:
            found = sorted(self.ready)
        elif name.endswith("." + SERVICE) and name[:-len(SERVICE) - 1].replace("-", ".") in self.ready:
            found = [name[:-len(SERVICE) - 1].replace("-", ".")]
        else:
            reply.header.rcode = RCODE.NXDOMAIN
            return reply
        if request.q.qtype == QTYPE.A:
            for ip in found:
                reply.add_answer(RR(request.q.qname, QTYPE.A, rdata=A(ip), ttl=1))
        return reply


class Pod(Server):
    """sandboxd listening on ip:port, named after its IP as the Deployment names it."""

    def __init__(self, ip, port, *args):
        self.ip = ip
        super().__init__("--host", ip, "--port", str(port), "--instance-id", ip.replace(".", "-"),
                         "--pool-size", "1", "--zygotes", "1", "--session-pool-size", "1",
                         "--template-pool-size", "0", *args, wait=False)
        self.port = port
        self.wait_ready()

    def connection(self, fresh=False, timeout=120):
        if fresh or self.conn is None:
            conn = http.client.HTTPConnection(self.ip, self.port, timeout=timeout)
            if fresh:
                return conn
            self.conn = conn
        return self.conn


def router_config(router_port, pod_port, dns_port, check_path):
    docs = yaml.safe_load_all((ROOT / "deploy" / "kubernetes" / "router.yaml").read_text())
    cfg = [d for d in docs if d["kind"] == "ConfigMap"][0]["data"]["haproxy.cfg"]
    for old, new in [("bind :8080", "bind 127.0.0.1:%d" % router_port),
                     ("parse-resolv-conf", "nameserver dns 127.0.0.1:%d" % dns_port),
                     ("server owner 0.0.0.0:8080", "server owner 0.0.0.0:%d" % pod_port),
                     (SERVICE + ":8080", "%s:%d" % (SERVICE, pod_port)),
                     ("uri /readyz ", "uri %s " % check_path)]:
        assert cfg.count(old) == 1, old
        cfg = cfg.replace(old, new)
    return cfg


@pytest.fixture(scope="module")
def cluster():
    dns = CoreDns()
    dns_port = free_port()
    dns_server = DNSServer(dns, port=dns_port, address="127.0.0.1",
                           logger=DNSLogger("-request,-reply,-truncated,-error", prefix=False))
    dns_server.start_thread()
    pod_port = free_port()
    pods = {}
    work = tempfile.mkdtemp(prefix="sandboxd-router-")
    proc = None
    try:
        for ip in PODS:
            pods[ip] = Pod(ip, pod_port)
            dns.ready.add(ip)
        port = free_port()
        cfg = pathlib.Path(work) / "haproxy.cfg"
        # Health checks ask /readyz; a sandboxd without it (404) has /healthz, the best there is.
        ready = pods[PODS[0]].request("GET", "/readyz", fresh=True).status == 200
        cfg.write_text(router_config(port, pod_port, dns_port, "/readyz" if ready else "/healthz"))
        log = open(pathlib.Path(work) / "haproxy.log", "w")
        proc = subprocess.Popen([shutil.which("haproxy") or "/usr/sbin/haproxy", "-db", "-f",
                                 str(cfg)], stdout=log, stderr=log)
        router = Endpoint(port)
        deadline = time.time() + 30
        while True:  # until server-template has resolved the pods and checked them
            assert proc.poll() is None, (pathlib.Path(work) / "haproxy.log").read_text()
            try:
                if execute(router, timeout=5) in {ip.replace(".", "-") for ip in PODS}:
                    break
            except (OSError, AssertionError):
                pass
            assert time.time() < deadline, (pathlib.Path(work) / "haproxy.log").read_text()
            time.sleep(0.2)
        yield router, pods, dns
    finally:
        if proc:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
        for p in pods.values():
            if p.proc.poll() is None:
                p.stop()
        dns_server.stop()
        shutil.rmtree(work, ignore_errors=True)


def execute(router, timeout=60):
    r = router.execute(executor_request("def f():\n    return 7\n", functionName="f"), fresh=True,
                       timeout=timeout)
    assert r.status == 200 and r.json["data"]["result"] == 7, r
    return r.header("X-Sandboxd-Instance")


def session_run(router, sid, code):
    r = router.request("POST", "/v1/sessions/%s/execute" % sid, body={"code": code}, fresh=True,
                       timeout=60)
    assert r.status == 200 and r.json["status"] == "ok", r
    assert r.header("X-Sandboxd-Instance") == sid.split(".")[0], r.headers
    return r.json["result"]


def test_router_routes_sessions_to_their_pod(cluster):
    router, pods, dns = cluster
    names = {ip.replace(".", "-") for ip in PODS}
    deadline = time.time() + 20
    seen = set()
    while seen != names:  # both pods take stateless work
        seen.add(execute(router))
        assert time.time() < deadline, seen
    sids = {}
    while set(sids) != names:
        r = router.request("POST", "/v1/sessions", body={}, fresh=True)
        assert r.status == 201, r
        sids[r.json["sessionId"].split(".")[0]] = r.json["sessionId"]
    for sid in sids.values():
        session_run(router, sid, "n = 1")
    for sid in sids.values():
        assert session_run(router, sid, "n += 1\nn") == "2"
    mcp = McpHttp(router)
    assert mcp.session.split(".")[0] in names
    for _ in range(3):
        assert "run_python" in [t["name"] for t in mcp.request("tools/list")["result"]["tools"]]

    # A prefix naming no ready pod (here: this machine's own loopback) is never connected to.
    bogus = "127-0-0-1." + "0" * 32
    r = router.request("GET", "/v1/sessions/" + bogus, fresh=True, timeout=10)
    assert r.status == 404 and r.json["error"]["code"] == "INSTANCE_UNAVAILABLE", r

    # One pod goes away (scale-in): it drains and leaves DNS; its sessions get a clear answer.
    gone = "127.0.0.3"
    dns.ready.discard(gone)
    pods[gone].stop()
    victim = sids[gone.replace(".", "-")]
    deadline = time.time() + 15
    while True:
        r = router.request("GET", "/v1/sessions/" + victim, fresh=True, timeout=10)
        if r.status == 404 and r.json["error"]["code"] == "INSTANCE_UNAVAILABLE":
            break
        assert time.time() < deadline, r  # the router's DNS cache holds a name for 2 s
        time.sleep(0.2)
    if mcp.session.startswith(gone.replace(".", "-")):
        r = mcp.post({"jsonrpc": "2.0", "id": 9, "method": "tools/list"})
        assert r.status == 404 and r.json["error"]["code"] == -32001, r
    survivor = sids["127-0-0-2"]
    assert session_run(router, survivor, "n") == "2"
    assert {execute(router) for _ in range(6)} == {"127-0-0-2"}
