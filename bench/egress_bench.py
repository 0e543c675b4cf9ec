# SPDX-License-Identifier: MIT
"""The cost of network egress (docs/NETWORK.md), on loopback: one HTTP request and one HTTPS
request made from a sandbox through sandboxd's proxy, against the same request made straight
from the host, each on a new connection (the proxy carries one request per connection); and
what a network policy adds to a trivial execution (a cold interpreter plus the proxy's
listener instead of a warm one).

Used by bench.py (`make bench`); runs alone too: python3 bench/egress_bench.py."""
import http.client
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.environ.get("BENCH_SANDBOXD", os.path.join(HERE, "..", "build", "sandboxd"))
N = int(os.environ.get("BENCH_EGRESS_N", "300"))

# The same loop runs on the host and in the sandbox; PROXY None means straight to the origin.
CLIENT = r"""
import http.client, socket, ssl, time
def measure(proxy, host, port, tls, n, cafile):
    ctx = ssl.create_default_context(cafile=cafile) if tls else None
    times = []
    for _ in range(n):
        t = time.perf_counter()
        if proxy and tls:
            c = http.client.HTTPSConnection(proxy[0], proxy[1], context=ctx, timeout=10)
            c.set_tunnel(host, port)
        elif proxy:
            c = http.client.HTTPConnection(proxy[0], proxy[1], timeout=10)
        else:  # straight to the origin on 127.0.0.1, TLS for the name it has a certificate for
            c = http.client.HTTPConnection(host, port, timeout=10)
            c.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            if tls:
                c.sock = ctx.wrap_socket(c.sock, server_hostname=host)
        path = "http://%s:%d/" % (host, port) if proxy and not tls else "/"
        c.request("GET", path, headers={"Host": "%s:%d" % (host, port), "Connection": "close"})
        r = c.getresponse()
        r.read()
        c.close()
        assert r.status == 200, r.status
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return {"p50": times[len(times) // 2], "p99": times[min(len(times) - 1, len(times) * 99 // 100)]}
"""


def origin(tls_ctx=None):
    """A minimal origin: one thread, one connection at a time (the clients are sequential),
    the whole answer in one write, so that what is measured is the path, not the server."""
    srv = socket.create_server(("127.0.0.1", 0))
    body = b"ok\n" * 100
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body

    def serve():
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            try:
                if tls_ctx:
                    conn = tls_ctx.wrap_socket(conn, server_side=True)
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                conn.sendall(answer)
            except OSError:
                pass
            finally:
                conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return srv


def certificates(d):
    def run(*args):
        subprocess.run(["openssl"] + list(args), check=True, capture_output=True, cwd=d)
    with open(os.path.join(d, "ext.cnf"), "w") as f:
        f.write("subjectAltName=DNS:bench.test\nbasicConstraints=CA:FALSE\n")
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
        "-days", "2", "-subj", "/CN=bench CA")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "srv.key", "-out", "srv.csr", "-subj",
        "/CN=bench.test")
    run("x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "srv.pem", "-days", "2", "-extfile", "ext.cnf")
    os.chmod(os.path.join(d, "ca.pem"), 0o644)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(d, "srv.pem"), os.path.join(d, "srv.key"))
    return os.path.join(d, "ca.pem"), ctx


def post(port, body, timeout=300):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.request("POST", "/execute", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    data = json.loads(r.read())
    c.close()
    return r.status, data


def executor(code, network=None):
    task = {"code": code, "timeoutMs": 120000}
    if network:
        task["network"] = {"allow": network}
    return {"requestId": "bench", "requestData": {"source": "bench"},
            "context": {"handlerType": "EXECUTOR", "mcp_endpoint": "local", "taskDetails": task}}


def wall(port, body, n=30):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        st, resp = post(port, body)
        assert st == 200 and resp["resultType"] == "generic", resp
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return {"p50": times[len(times) // 2], "p99": times[-1]}


def main(port):
    d = tempfile.mkdtemp(prefix="sandboxd-bench-egress-")
    os.chmod(d, 0o755)
    ca, tls_ctx = certificates(d)
    web, tls = origin(), origin(tls_ctx)
    wp, tp = web.getsockname()[1], tls.getsockname()[1]
    log = tempfile.TemporaryFile()
    p = subprocess.Popen([BIN, "serve", "--port", str(port), "--log-level", "warn",
                          "--no-mcp-discovery", "--state-dir", d,
                          "--egress-allow", "bench.test:%d" % wp, "--egress-allow", "bench.test:%d" % tp,
                          "--egress-resolve", "bench.test:%d:127.0.0.1" % wp,
                          "--egress-resolve", "bench.test:%d:127.0.0.1" % tp,
                          "--egress-ca-file", ca, "--egress-max-connections", "4096"],
                         stdout=log, stderr=log)
    try:
        for _ in range(600):
            try:
                if post(port, executor("1"), timeout=5)[0] == 200:
                    break
            except OSError:
                time.sleep(0.05)
        scope = {}
        exec(CLIENT, scope)
        host_http = scope["measure"](None, "bench.test", wp, False, N, None)
        host_https = scope["measure"](None, "bench.test", tp, True, N, ca)
        code = CLIENT + ("[measure(('127.0.0.1', 3128), 'bench.test', %d, False, %d, None), "
                         "measure(('127.0.0.1', 3128), 'bench.test', %d, True, %d, %r)]"
                         % (wp, N, tp, N, "/etc/ssl/certs/ca-certificates.crt"))
        st, resp = post(port, executor(code, ["bench.test:%d" % wp, "bench.test:%d" % tp]))
        assert st == 200 and resp["resultType"] == "generic", resp
        proxied_http, proxied_https = resp["data"]["result"]
        plain = wall(port, executor("1"))
        networked = wall(port, executor("1", ["bench.test:%d" % wp]))
    finally:
        p.terminate()
        p.wait(30)
        web.close()
        tls.close()
        shutil.rmtree(d, ignore_errors=True)
    rows = [("HTTP GET (absolute URI)", host_http, proxied_http),
            ("HTTPS GET (CONNECT, TLS 1.3)", host_https, proxied_https)]
    lines = ["| one request, new connection, n=%d | straight from the host p50 / p99 ms | "
             "from a sandbox through the proxy p50 / p99 ms | added p50 ms |" % N,
             "| --- | ---: | ---: | ---: |"]
    for name, h, x in rows:
        lines.append("| %s | %.3f / %.3f | %.3f / %.3f | **%+.3f** |"
                     % (name, h["p50"], h["p99"], x["p50"], x["p99"], x["p50"] - h["p50"]))
    lines += ["", "- a trivial EXECUTOR (wall time at the client, n=30): p50 %.1f ms from the warm pool, "
              "%.1f ms with a network policy (a cold interpreter whose loopback holds the proxy's "
              "listener): +%.1f ms" % (plain["p50"], networked["p50"], networked["p50"] - plain["p50"])]
    return "\n".join(lines) + "\n", {"rows": rows, "plain": plain, "networked": networked}


if __name__ == "__main__":
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    print(main(free)[0])
    sys.exit(0)
