# SPDX-License-Identifier: MIT
"""The host discovery cache (jail/hostcache.h, docs/SECURITY.md): `sandboxd run` and `serve`
replay what discovery found last time while the host is as it was, and discover again when the
cache is corrupt, stale (a walked directory or the package list changed) or a file someone else
could have written. The sandbox sees the same either way: only the time differs."""
import glob
import json
import os
import shutil
import subprocess
import tempfile

import pytest

from harness import BIN, Server

# What a sandbox sees of the file system: the mount points, the top directories, and what the
# site directory's link (which leaves it) leads to.
SEE = r"""
import os
mounts = sorted(l.split()[4] for l in open("/proc/self/mountinfo"))
data = sorted(os.listdir(%(site)r + "/data"))
(mounts, sorted(os.listdir("/")), data, os.path.realpath(%(site)r + "/data"))
"""


@pytest.fixture
def host(tmp_path):
    """A site directory (not under /tmp, which the sandbox has its own of) whose link leaves it
    for one of two public data directories, and a state directory."""
    root = tempfile.mkdtemp(prefix="sbx-cache-", dir="/var/tmp")
    os.chmod(root, 0o755)
    for name, marker in (("share-a", "marker-a"), ("share-b", "marker-b")):
        os.makedirs(os.path.join(root, name))
        with open(os.path.join(root, name, marker), "w") as f:
            f.write(name)
    site = os.path.join(root, "site")
    os.makedirs(site)
    os.symlink(os.path.join(root, "share-a"), os.path.join(site, "data"))
    prog = tmp_path / "see.py"
    prog.write_text(SEE % {"site": site})
    yield {"root": root, "site": site, "state": str(tmp_path / "state"), "prog": str(prog)}
    shutil.rmtree(root, ignore_errors=True)


def run(host, *extra):
    p = subprocess.run([BIN, "run", host["prog"], "--site-packages", host["site"], "--state-dir",
                        host["state"], "--toolbox", "none"] + list(extra),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout)["result"], p.stderr


def cache_file(host):
    files = glob.glob(os.path.join(host["state"], "cache", "*.cache"))
    assert len(files) == 1, files
    return files[0]


def test_a_replay_gives_the_sandbox_discovery_gives(host):
    plain, log = run(host, "--no-host-cache")
    assert "replayed" not in log and not os.path.exists(os.path.join(host["state"], "cache"))
    first, log = run(host)
    assert "host discovery saved" in log
    st = os.stat(cache_file(host))
    assert st.st_mode & 0o777 == 0o600 and st.st_uid == os.geteuid()
    again, log = run(host)
    assert "host discovery replayed" in log and "saved" not in log
    assert plain == first == again
    assert plain[2] == ["marker-a"]


def test_a_corrupt_cache_is_discovered_again(host):
    reference, _ = run(host)
    for garbage in (b"", b"sandboxd-hostcache\n{\"format\": 1", b"\x00\xff" * 64):
        with open(cache_file(host), "wb") as f:
            f.write(garbage)
        seen, log = run(host)
        assert "host discovery saved" in log, log
        assert seen == reference
    with open(cache_file(host), "rb") as f:
        assert f.read(19) == b"sandboxd-hostcache\n"


def test_a_stale_cache_follows_the_host(host):
    before, _ = run(host)
    assert before[2] == ["marker-a"]
    link = os.path.join(host["site"], "data")
    os.unlink(link)
    os.symlink(os.path.join(host["root"], "share-b"), link)
    after, log = run(host)
    assert "changed since the host discovery cache was made" in log
    assert after[2] == ["marker-b"] and after[3].endswith("/share-b")
    again, log = run(host)
    assert "replayed" in log and again == after


def test_a_cache_file_others_could_write_is_ignored(host):
    reference, _ = run(host)
    os.chmod(cache_file(host), 0o666)
    seen, log = run(host)
    assert "ignoring the host discovery cache" in log and "saved" in log
    assert seen == reference
    assert os.stat(cache_file(host)).st_mode & 0o777 == 0o600


def test_serve_replays_it_too(tmp_path):
    state = str(tmp_path / "state")
    for replayed in (False, True):
        s = Server("--pool-size", "1", "--session-pool-size", "0", "--template-pool-size", "0",
                   "--state-dir", state)
        try:
            r = s.execute({"requestId": "c", "requestData": {"source": "t"},
                           "context": {"handlerType": "EXECUTOR", "mcp_endpoint": "local",
                                       "taskDetails": {"code": "6 * 7"}}})
            assert r.status == 200 and r.json["data"]["result"] == 42, r
            assert ("host discovery replayed" in s.logs()) == replayed
        finally:
            s.stop()
