# SPDX-License-Identifier: MIT
"""A host discovery cache planted by someone else adds no bind (jail/hostcache.h,
docs/SECURITY.md). The cache names the host paths every sandbox gets bound; whoever could
write it could hand sandboxes any public directory of the host. The attacker here plants a
genuine cache with one more bind, of a directory every user may read (so that only trust stops
it, not the check that a bind is public): as a file of another user, a file its group or
everyone may write, a file with a second name, a symlink to a file of theirs, and in a state
directory of theirs. Each time the sandbox does not see the directory, and the cache is
discovered again and rewritten as a file of sandboxd's own. The control: the same entry in a
file sandboxd wrote itself is replayed, bind and all, so the attack is a real one."""
import glob
import json
import os
import shutil
import subprocess
import tempfile

import pytest

from harness import BIN

LOOK = "import os\nsorted(os.listdir(%r)) if os.path.isdir(%r) else None\n"


def identity(path):
    """A path's identity as the cache writes it (hostcache_identity)."""
    st = os.lstat(path)
    return "%x:%x:%x:%d.%09d:%d.%09d:%o" % (
        st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns // 10**9, st.st_mtime_ns % 10**9,
        st.st_ctime_ns // 10**9, st.st_ctime_ns % 10**9, st.st_mode)


@pytest.fixture
def planted(tmp_path):
    """A public host directory with a marker, a state directory holding a genuine cache, and
    the text of that cache with one more bind: the directory."""
    secret = tempfile.mkdtemp(prefix="sbx-planted-", dir="/var/tmp")
    os.chmod(secret, 0o755)
    with open(os.path.join(secret, "marker"), "w") as f:
        f.write("the attacker's directory")
    os.chmod(os.path.join(secret, "marker"), 0o644)
    prog = tmp_path / "look.py"
    prog.write_text(LOOK % (secret, secret))
    state = tmp_path / "state"
    run_look(str(prog), str(state))  # a genuine cache
    files = glob.glob(str(state / "cache" / "*.cache"))
    assert len(files) == 1
    with open(files[0], "rb") as f:
        data = f.read()
    head, sep, rest = data.partition(b'"ops":[')
    assert sep, "no operations in the cache"
    bind = json.dumps(["bind", secret, identity(secret)]).encode()
    yield {"secret": secret, "prog": str(prog), "state": str(state), "file": files[0],
           "planted": head + sep + bind + b"," + rest}
    shutil.rmtree(secret, ignore_errors=True)


def run_look(prog, state):
    p = subprocess.run([BIN, "run", prog, "--state-dir", state, "--toolbox", "none"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout)["result"], p.stderr


def plant(path, data, uid=None, mode=0o600):
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)
    if uid is not None:
        os.chown(path, uid, uid)


def assert_refused_and_rewritten(p, seen, log):
    assert seen is None, "the planted bind was made: %r" % (seen,)
    assert "discovering again" in log or "no host discovery cache" in log, log
    st = os.lstat(p["file"])
    assert st.st_uid == os.geteuid() and st.st_mode & 0o7777 == 0o600
    with open(p["file"], "rb") as f:
        assert p["secret"].encode() not in f.read()


def test_control_a_trusted_entry_is_replayed_bind_and_all(planted):
    plant(planted["file"], planted["planted"])
    seen, log = run_look(planted["prog"], planted["state"])
    assert "replayed" in log
    assert seen == ["marker"]  # so the attacks below would work, were the file trusted


def test_a_file_of_another_user(planted):
    plant(planted["file"], planted["planted"], uid=65534, mode=0o644)
    assert_refused_and_rewritten(planted, *run_look(planted["prog"], planted["state"]))


@pytest.mark.parametrize("mode", [0o666, 0o620, 0o602])
def test_a_file_others_may_write(planted, mode):
    plant(planted["file"], planted["planted"], mode=mode)
    assert_refused_and_rewritten(planted, *run_look(planted["prog"], planted["state"]))


def test_a_file_with_a_second_name(planted):
    plant(planted["file"], planted["planted"])
    other = planted["file"] + ".other-name"
    os.link(planted["file"], other)
    try:
        assert_refused_and_rewritten(planted, *run_look(planted["prog"], planted["state"]))
    finally:
        os.unlink(other)


def test_a_symlink_to_a_file_of_the_attacker(planted, tmp_path):
    theirs = tmp_path / "theirs.cache"
    plant(str(theirs), planted["planted"])
    os.unlink(planted["file"])
    os.symlink(str(theirs), planted["file"])
    assert_refused_and_rewritten(planted, *run_look(planted["prog"], planted["state"]))


def test_a_state_directory_of_another_user(planted):
    plant(planted["file"], planted["planted"])
    for d, _, files in os.walk(planted["state"]):
        os.chown(d, 65534, 65534)
        for name in files:
            os.chown(os.path.join(d, name), 65534, 65534)
    seen, log = run_look(planted["prog"], planted["state"])
    assert seen is None, "the planted bind was made: %r" % (seen,)
    assert "no host discovery cache" in log
    with open(planted["file"], "rb") as f:  # not touched: it is not ours to rewrite
        assert f.read() == planted["planted"]
