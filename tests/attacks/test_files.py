# SPDX-License-Identifier: MIT
"""Attacks on the data-work features (CONTRACT §12): code in a session plants symlinks, a FIFO
and crafted paths in its working directory and waits for the host's session file API to
follow them out of the sandbox; a link planted in an operator's --site-packages tries to
expose a private host file to every sandbox. Run as root and again rootless."""
import os
import shutil
import tempfile
import time

import pytest

from harness import Server, executor_request

MARKER = "HOST-ONLY-%d" % os.getpid()


@pytest.fixture(scope="module")
def host_dir():
    """A host directory the server's user may read and write: what must stay out of reach."""
    d = tempfile.mkdtemp(prefix="sandboxd-host-", dir="/var/tmp")
    os.chmod(d, 0o755)
    with open(os.path.join(d, "private.txt"), "w") as f:
        f.write(MARKER)
    os.chmod(os.path.join(d, "private.txt"), 0o600)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def server():
    s = Server("--pool-size", "1", "--session-pool-size", "1", "--tmp-size-mb", "8")
    yield s
    s.stop()


def session(server):
    r = server.request("POST", "/v1/sessions", {})
    assert r.status == 201, r
    return r.json["sessionId"]


def run(server, sid, code):
    r = server.request("POST", "/v1/sessions/%s/execute" % sid, {"code": code})
    assert r.status == 200 and r.json["status"] == "ok", r
    return r.json


def test_a_planted_link_does_not_make_the_host_read_its_own_files(server, host_dir):
    """An absolute link resolved from the host (through /proc/PID/root) would name the host's
    file: the API must refuse links, not follow them."""
    sid = session(server)
    secret = os.path.join(host_dir, "private.txt")
    run(server, sid, "import os\nos.symlink(%r, 'leak')\nos.symlink(%r, 'dir')\n"
                     "os.symlink('/proc/self/root%s', 'magic')" % (secret, host_dir, secret))
    base = "/v1/sessions/%s/files/" % sid
    for path in ("leak", "dir/private.txt", "magic"):
        r = server.request("GET", base + path)
        assert r.status == 409, (path, r)
        assert MARKER.encode() not in r.raw
    listing = server.request("GET", base[:-1]).json
    assert listing["files"] == []
    assert server.request("DELETE", "/v1/sessions/" + sid).status == 204


def test_a_planted_link_does_not_redirect_writes_onto_the_host(server, host_dir):
    sid = session(server)
    secret = os.path.join(host_dir, "private.txt")
    run(server, sid, "import os\nos.symlink(%r, 'out')\nos.symlink(%r, 'victim')"
        % (host_dir, secret))
    base = "/v1/sessions/%s/files/" % sid
    r = server.request("PUT", base + "out/pwned.txt", b"pwned")
    assert r.status == 409, r
    assert not os.path.exists(os.path.join(host_dir, "pwned.txt"))
    # a PUT over a link replaces the link inside the sandbox; the host file is untouched
    assert server.request("PUT", base + "victim", b"replaced").status == 201
    with open(secret) as f:
        assert f.read() == MARKER
    r = run(server, sid, "import os\n[os.path.islink('victim'), open('victim').read()]")
    assert r["result"] == "[False, 'replaced']"
    assert server.request("DELETE", base + "out").status == 204  # the link itself, inside
    assert os.path.isdir(host_dir)
    assert server.request("DELETE", "/v1/sessions/" + sid).status == 204


def test_a_fifo_does_not_hold_the_host(server):
    """A FIFO opened by the host would block it: seccomp denies mknod, and were a FIFO there,
    the API opens non-blocking and refuses anything but a regular file (tests/unit/
    test_files.c plants one directly)."""
    sid = session(server)
    r = run(server, sid, "import os\ntry:\n    os.mkfifo('pipe')\n    fd = os.open('pipe', "
                         "os.O_RDWR)\n    made = True\nexcept PermissionError:\n"
                         "    made = False\nmade")
    start = time.time()
    r2 = server.request("GET", "/v1/sessions/%s/files/pipe" % sid, timeout=30)
    assert r2.status == (400 if r["result"] == "True" else 404), r2
    assert time.time() - start < 10
    assert server.request("PUT", "/v1/sessions/%s/files/pipe" % sid, b"x").status == 201
    assert server.request("DELETE", "/v1/sessions/" + sid).status == 204


def test_crafted_paths_are_refused(server):
    sid = session(server)
    base = "/v1/sessions/%s/files" % sid
    for path in ("/..%2f..%2fetc%2fpasswd", "/%2e%2e/%2e%2e/etc/passwd", "/a/%2e%2e/%2e%2e/x",
                 "/%01", "/a%0Ab"):
        r = server.request("GET", base + path)
        assert r.status in (400, 404), (path, r)
        assert b"root:" not in r.raw
        r = server.request("PUT", base + path, b"x")
        assert r.status in (400, 404), (path, r)
    assert server.request("DELETE", "/v1/sessions/" + sid).status == 204


@pytest.fixture
def planted_site(host_dir):
    """An operator's site directory with a link (planted by whoever can write there) to a
    file only the server's user may read."""
    top = tempfile.mkdtemp(prefix="sandboxd-site-", dir="/var/tmp")
    os.chmod(top, 0o755)
    os.makedirs(os.path.join(top, "pkg"))
    os.chmod(os.path.join(top, "pkg"), 0o755)
    with open(os.path.join(top, "pkg", "__init__.py"), "w") as f:
        f.write("")
    os.chmod(os.path.join(top, "pkg", "__init__.py"), 0o644)
    os.symlink(os.path.join(host_dir, "private.txt"), os.path.join(top, "pkg", "data.txt"))
    yield top
    shutil.rmtree(top, ignore_errors=True)


def test_site_packages_links_do_not_expose_private_files(planted_site, host_dir):
    s = Server("--pool-size", "1", "--site-packages", planted_site)
    try:
        code = ("import os, pkg\np = os.path.join(os.path.dirname(pkg.__file__), 'data.txt')\n"
                "try:\n    v = open(p).read()\nexcept OSError as e:\n    v = type(e).__name__\n"
                "[os.path.islink(p), v]")
        r = s.execute(executor_request(code))
        assert r.status == 200, r
        assert r.json["data"]["result"][0] is True
        assert r.json["data"]["result"][1] != MARKER
        assert MARKER not in r.raw.decode()
    finally:
        s.stop()
