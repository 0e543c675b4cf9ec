# SPDX-License-Identifier: MIT
"""Stand-ins for "the internet" in the egress tests (docs/NETWORK.md): an HTTP origin and a TLS
origin on the host's loopback, reached from sandboxes through sandboxd's proxy by names the
tests pin with --egress-resolve. The TLS origin's certificate (and its CA) are made with the
openssl command at test time. Each origin records what reached it, so a test can insist that
a refused request never did."""
import hashlib
import http.server
import json
import os
import shutil
import socket
import socketserver
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.parse


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _answer(self, status, body, ctype="application/json", headers=()):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _serve(self):
        origin = self.server.origin
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        origin.seen.append({"method": self.command, "path": self.path,
                            "headers": {k: v for k, v in self.headers.items()},
                            "body": body[:4096].decode(errors="replace")})
        if url.path in origin.files:
            ctype, data = origin.files[url.path]
            self._answer(200, data, ctype)
        elif url.path == "/redirect":
            self._answer(302, b"", "text/plain", [("Location", query["to"])])
        elif url.path == "/slow":  # a slow origin: the answer after s seconds
            time.sleep(float(query["s"]))
            self._answer(200, b"slow", "text/plain")
        elif url.path == "/bytes":
            self._answer(200, b"x" * int(query["n"]), "application/octet-stream")
        elif url.path == "/sha256":
            self._answer(200, {"sha256": hashlib.sha256(body).hexdigest(), "length": len(body)})
        elif url.path == "/pattern":  # n bytes of a pattern a client can check
            n = int(query["n"])
            self._answer(200, (bytes(range(256)) * (n // 256 + 1))[:n], "application/octet-stream")
        else:
            self._answer(200, {"origin": origin.name, "method": self.command, "path": self.path,
                               "headers": {k: v for k, v in self.headers.items()},
                               "body": body.decode(errors="replace")})

    def do_TRACE(self):
        # Apache's default (TraceEnable On): the request comes back as the body, every field of
        # it, whatever a proxy added on the way.
        origin = self.server.origin
        head = self.requestline + "\r\n" + "".join(
            "%s: %s\r\n" % kv for kv in self.headers.items()) + "\r\n"
        origin.seen.append({"method": "TRACE", "path": self.path,
                            "headers": {k: v for k, v in self.headers.items()}, "body": ""})
        self._answer(200, head.encode(), "message/http")

    do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = do_OPTIONS = do_PATCH = _serve


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024  # a proxy may open many connections at once (the egress shares)

    def handle_error(self, request, client_address):
        pass  # a client that gives up mid-way (a refused TLS handshake) is not news here


class Origin:
    """An HTTP (or, with tls, HTTPS) server on 127.0.0.1; .seen lists the requests it got and
    .accepted counts the TCP connections it accepted."""

    def __init__(self, name, tls=None):
        self.name = name
        self.files = {}  # path -> (content type, bytes), served as they are
        self.seen = []
        self.accepted = 0
        origin = self
        parent = _Server

        class Counting(parent):
            def get_request(self):
                conn, addr = super().get_request()
                origin.accepted += 1
                if tls is not None:
                    conn = tls.wrap_socket(conn, server_side=True, do_handshake_on_connect=False)
                return conn, addr

        self.httpd = Counting(("127.0.0.1", 0), _Handler)
        self.httpd.origin = self
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class Certificates:
    """A CA and a server certificate for the given names, made with openssl."""

    def __init__(self, *names):
        self.dir = tempfile.mkdtemp(prefix="sandboxd-certs-")
        os.chmod(self.dir, 0o755)
        self.ca = os.path.join(self.dir, "ca.pem")
        self.cert = os.path.join(self.dir, "server.pem")
        self.key = os.path.join(self.dir, "server.key")
        ca_key = os.path.join(self.dir, "ca.key")
        csr = os.path.join(self.dir, "server.csr")
        ext = os.path.join(self.dir, "ext.cnf")
        with open(ext, "w") as f:
            f.write("subjectAltName=" + ",".join("DNS:" + n for n in names) + "\n"
                    "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")

        def run(*args):
            subprocess.run(["openssl"] + list(args), check=True, capture_output=True)

        run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", self.ca,
            "-days", "2", "-subj", "/CN=sandboxd test CA")
        run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", self.key, "-out", csr, "-subj",
            "/CN=" + names[0])
        run("x509", "-req", "-in", csr, "-CA", self.ca, "-CAkey", ca_key, "-CAcreateserial",
            "-out", self.cert, "-days", "2", "-extfile", ext)
        for p in (self.ca, self.cert):
            os.chmod(p, 0o644)

    def server_context(self):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.cert, self.key)
        return ctx

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fixtures():
    """The module-scoped pytest fixtures certs (a CA and a certificate for tls.test), web (an
    HTTP origin) and tls (an HTTPS origin for tls.test), for a test module to take in with
    `certs, web, tls = origins.fixtures()`."""
    import pytest

    @pytest.fixture(scope="module")
    def certs():
        c = Certificates("tls.test")
        yield c
        c.close()

    @pytest.fixture(scope="module")
    def web():
        o = Origin("web")
        yield o
        o.close()

    @pytest.fixture(scope="module")
    def tls(certs):
        o = Origin("tls", tls=certs.server_context())
        yield o
        o.close()

    return certs, web, tls
