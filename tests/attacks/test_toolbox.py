# SPDX-License-Identifier: MIT
"""The shell toolbox (sh, bash, coreutils, grep, sed, awk, find, tar, ...) adds programs to the
jail, not ways out of it: every process a shell starts has the interpreter's confinement
(no_new_privs, seccomp, no capabilities, the sandbox uid), no setuid program is handed out
(even one the operator names with --toolbox-add), a shell gets no network, and the process
limit holds for shell fork loops. Each attack runs cold and warm (conftest.py)."""
import os
import platform
import socket
import subprocess

from conftest import loopback_listener, result


def test_shell_children_keep_the_jail(attack):
    code = r"""
import subprocess
out = subprocess.run(["sh", "-c", "grep -E '^(NoNewPrivs|Seccomp|CapEff|CapBnd):' "
                      "/proc/self/status; id -u; bash -c 'id -g'"],
                     capture_output=True, text=True)
(out.returncode, out.stdout.split())
"""
    rc, out = result(attack(code))
    assert rc == 0
    assert dict(zip(out[:8:2], out[1:8:2])) == {
        "NoNewPrivs:": "1", "Seccomp:": "2", "CapEff:": "0000000000000000",
        "CapBnd:": "0000000000000000"}
    assert out[8:] == ["65534", "65534"]


def test_no_setuid_program_is_handed_out(attack, suid_dir):
    """--toolbox-add names a setuid-root program: the toolbox refuses it; no program where the
    toolbox puts them is setuid or setgid."""
    code = r"""
import os, subprocess
found = subprocess.run("find -L /bin/ /usr/bin/ /usr/local/bin/ /sbin/ /usr/sbin/ "
                       "/sandboxd/toolbox/ -perm /6000 -print 2>/dev/null", shell=True,
                       capture_output=True, text=True).stdout.split()
(found, os.path.exists(%r), len(os.listdir("/usr/bin")))
""" % (suid_dir + "/whoami")  # -L: the toolbox's names are symlinks into one tmpfs
    found, at_host_path, programs = result(attack(code))
    assert found == []
    assert at_host_path is False
    assert programs > 50  # the toolbox is there


def test_a_shell_gets_no_network(attack):
    """bash's /dev/tcp and a shell pipeline cannot reach a listener on the host's loopback."""
    srv, port = loopback_listener(0.5)
    code = r"""
import subprocess
p = subprocess.run(["bash", "-c", "echo attack > /dev/tcp/127.0.0.1/%d && echo CONNECTED"],
                   capture_output=True, text=True)
(p.returncode, p.stdout)
""" % port
    try:
        rc, out = result(attack(code))
        assert rc != 0 and "CONNECTED" not in out
        try:
            conn, _ = srv.accept()
            conn.close()
            raise AssertionError("the sandbox's shell connected to the host")
        except socket.timeout:
            pass
    finally:
        srv.close()


def test_shell_fork_loop_is_contained(attack):
    """A shell starting background processes in a loop hits the process limit (32 here)."""
    code = r"""
import os, subprocess
p = subprocess.run(["sh", "-c", "n=0; while [ $n -lt 200 ]; do sleep 20 >/dev/null 2>&1 & "
                    "n=$((n+1)); done; echo started $n"], capture_output=True, text=True,
                   timeout=30)
sleeping = 0
for pid in os.listdir("/proc"):
    try:
        sleeping += pid.isdigit() and open("/proc/%s/comm" % pid).read().strip() == "sleep"
    except OSError:
        pass
(sleeping, p.stdout.strip(), "fork" in p.stderr.lower())
"""
    sleeping, out, refused = result(attack(code, procs=32, timeout_ms=20000))
    assert refused and out == "", "the shell started all 200: %r" % out
    assert 0 < sleeping < 32
    assert subprocess.run(["true"]).returncode == 0  # the host can still fork


def _one_mount_expected():
    """Root on Linux 6.15 or later copies the toolbox into one tmpfs (jail/toolbox.h); elsewhere
    each file is bound on its own."""
    major, minor = (int(x) for x in platform.release().split(".")[:2])
    return os.geteuid() == 0 and (major, minor) >= (6, 15)


def test_the_toolbox_is_one_mount_and_its_programs_run(attack):
    """Every cell copies its mount namespace at fork: the toolbox must not add a mount per
    program. Its programs still run, through the symlinks, with their libraries."""
    code = r"""
import subprocess
mounts = [l.split()[4] for l in open("/proc/self/mountinfo")]
p = subprocess.run(["bash", "-c", "set -e; cd /tmp; printf 'b 2\\na 1\\n' > f; "
                    "sort f | awk '{print $2}' | sed s/1/one/ | tr '\\n' ' '; "
                    "tar czf f.tgz f && tar tzf f.tgz; ls /usr/bin | grep -c . >/dev/null; "
                    "readlink -f /usr/bin/sh; sh -c 'echo dash'"],
                   capture_output=True, text=True)
(mounts, p.returncode, p.stdout.split(), p.stderr)
"""
    mounts, rc, out, err = result(attack(code))
    assert rc == 0, err
    assert out[:3] == ["one", "2", "f"]
    assert out[-1] == "dash"
    toolbox = [m for m in mounts if m == "/sandboxd/toolbox"]
    if _one_mount_expected():
        assert toolbox == ["/sandboxd/toolbox"]
        assert out[3].startswith("/sandboxd/toolbox/"), out  # sh: a symlink into the copies
        assert len(mounts) < 50, "%d mounts in a cell: %s" % (len(mounts), mounts)
    else:
        assert toolbox == []
        assert not out[3].startswith("/sandboxd/toolbox/"), out
