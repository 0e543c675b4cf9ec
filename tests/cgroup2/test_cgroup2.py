# SPDX-License-Identifier: MIT
"""sandboxd as root on a pure cgroup v2 host (the VM of tests/cgroup2/run.sh; guest.sh put
this test, PID 1 and a sibling `sleep` in one cgroup, like a login shell's). Checks what
/healthz reports against the cgroup files themselves, the knobs of a live cell, the --cpus
quota, the cells' budget with a delegated --cgroup-root, --require-cgroups refusing a cgroup
without the memory controller, and records the attack verdicts in the run's output."""
import json
import os
import pathlib
import subprocess
import sys
import threading
import time

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from harness import BIN, Server, executor_request  # noqa: E402

CG = pathlib.Path("/sys/fs/cgroup")
OUT = pathlib.Path(os.environ.get("SANDBOXD_CG2_OUT", "/nonexistent"))
SIBLING = int(os.environ.get("SANDBOXD_SIBLING_PID", "0"))
DELEGATED = pathlib.Path(os.environ.get("SANDBOXD_DELEGATED", "/nonexistent"))
ARGS = ("--pool-size", "2", "--session-pool-size", "0", "--template-pool-size", "0")


def cgroup_of(pid="self"):
    with open("/proc/%s/cgroup" % pid) as f:
        for line in f:
            if line.startswith("0::"):
                return CG / line[3:].strip().lstrip("/")
    raise AssertionError("no cgroup v2 line for %s" % pid)


def procs(cg):
    return [int(p) for p in (cg / "cgroup.procs").read_text().split()]


def record(name, obj):
    (OUT / ("%s.txt" % name)).write_text(json.dumps(obj, indent=1) + "\n")


def execute_together(server, code, n, **task):
    """n executions of code at once, each on its own connection."""
    results = [None] * n

    def one(i):
        results[i] = server.execute(executor_request(code, request_id="r-%d" % i, **task),
                                    fresh=True)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


@pytest.fixture(scope="module")
def shared():
    """sandboxd started from a cgroup it shares with PID 1, the sibling and this test."""
    base = cgroup_of()
    assert {1, SIBLING, os.getpid()} <= set(procs(base))
    s = Server(*ARGS, "--cpus", "0.5")
    yield s, base
    s.stop()


def test_a_shared_cgroup_gets_v2_limits(shared):
    s, base = shared
    iso = s.health()["isolation"]
    cg = iso["cgroup"]
    record("healthz-shared", {"cgroups": iso["cgroups"], "cgroup": cg})
    assert iso["cgroups"] == "v2" and "cgroupsReason" not in iso and "reason" not in cg
    assert sorted(cg["controllers"]) == ["cpu", "memory", "pids"]
    assert cg["base"] == str(base)
    # The kernel refused controllers while processes shared the cgroup: every one of them
    # (PID 1, the sibling, this test, sandboxd) now lives in the leaf, and nothing in base.
    leaf = base / "supervisor"
    assert cg["supervisorLeaf"] == str(leaf)
    assert cg["processesMoved"] >= 4
    assert procs(base) == []
    for pid in (1, SIBLING, os.getpid(), s.proc.pid):
        assert cgroup_of(pid) == leaf, pid
    assert {"memory", "pids", "cpu"} <= set((base / "cgroup.subtree_control").read_text().split())
    cells = base / "cells"
    assert cg["cells"] == str(cells)
    assert int((cells / "memory.max").read_text()) == cg["cellsMemoryBytes"] > 0
    assert cg["cpus"] == 0.5
    assert cg["kill"] == "cgroup.kill" and cg["oomGroup"] is True
    assert cg["memoryPeak"].startswith("memory.peak")
    # The root's settings (a parent's) were left as the host made them.
    assert (CG / "cgroup.subtree_control").read_text().split() == ["cpu", "memory", "pids"]


def test_an_execution_runs_in_a_limited_cell(shared):
    s, base = shared
    cells = base / "cells"
    box = {}
    t = threading.Thread(target=lambda: box.update(r=s.execute(executor_request(
        "import time\ntime.sleep(3)\n'slept'", timeoutMs=20000, memoryMb=96), fresh=True)))
    t.start()
    knobs, deadline = None, time.time() + 20
    while knobs is None and time.time() < deadline:
        for d in cells.iterdir():
            try:
                if d.is_dir() and procs(d) and (d / "memory.max").read_text().strip() == str(96 << 20):
                    knobs = {k: (d / k).read_text().strip() for k in (
                        "memory.max", "memory.swap.max", "memory.oom.group", "pids.max", "cpu.max")}
            except FileNotFoundError:
                pass  # a cell removed while we looked
        time.sleep(0.05)
    t.join()
    record("cell-knobs", knobs)
    assert knobs == {"memory.max": str(96 << 20), "memory.swap.max": "0", "memory.oom.group": "1",
                     "pids.max": "64", "cpu.max": "50000 100000"}
    r = box["r"]
    assert r.status == 200 and r.json["data"]["result"] == "slept", r
    v = r.json["verdict"]
    assert v["status"] == "OK" and v["accounting"] == "cgroup" and "memoryAccounting" not in v
    assert v["memoryPeakBytes"] > 0


def test_cpus_caps_each_sandbox(shared):
    s, _ = shared
    code = "import time\nt = time.time()\nwhile time.time() - t < 1.0:\n    pass\n'spun'"
    r = s.execute(executor_request(code, timeoutMs=10000))
    v = r.json["verdict"]
    record("cpus-0.5", v)
    assert r.json["data"]["result"] == "spun"
    assert v["wallMs"] >= 1000 and v["cpuMs"] < 0.75 * v["wallMs"], v


ATTACKS = {
    "memory bomb": ("chunks = []\nwhile True:\n    chunks.append(b'x' * (8 << 20))\n",
                    "MEMORY_LIMIT"),
    "fork bomb": ("import os, time\nn = 0\ntry:\n    for _ in range(100000):\n"
                  "        if os.fork() == 0:\n            time.sleep(30)\n            os._exit(0)\n"
                  "        n += 1\nexcept OSError as e:\n    err = e.errno\n(n, err)\n", "OK"),
    "OOM verdict (memory spread over processes)": (
        "import os, time\nkids = []\nfor _ in range(4):\n    pid = os.fork()\n    if pid == 0:\n"
        "        block = bytearray(40 << 20)\n        for i in range(0, len(block), 4096):\n"
        "            block[i] = 1\n        time.sleep(3)\n        os._exit(0)\n"
        "    kids.append(pid)\n[os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) for p in kids]\n",
        "MEMORY_LIMIT"),
}


@pytest.mark.parametrize("name", list(ATTACKS))
def test_attack_verdicts(shared, name):
    s, _ = shared
    code, want = ATTACKS[name]
    r = s.execute(executor_request(code, timeoutMs=20000, memoryMb=64))
    j = r.json
    with open(OUT / "verdicts.txt", "a") as f:
        f.write("%s: %s %s\n" % (name, json.dumps(j["verdict"]),
                                 json.dumps(j["data"].get("code") or j["data"].get("result"))))
    assert j["verdict"]["status"] == want, j
    if name == "fork bomb":
        n, err = j["data"]["result"]
        assert err == 11 and n < 64  # EAGAIN at pids.max
    else:
        assert j["data"]["code"] == "MEMORY_LIMIT"


def test_a_delegated_cgroup_root_and_the_cells_budget():
    before = cgroup_of()
    s = Server(*ARGS, "--cgroup-root", str(DELEGATED), "--cells-memory-mb", "160")
    try:
        cg = s.health()["isolation"]["cgroup"]
        record("healthz-delegated", cg)
        assert cg["mode"] == "v2" and cg["required"] is True
        assert cg["base"] == str(DELEGATED) and cg["cells"] == str(DELEGATED / "cells")
        assert cg["supervisorLeaf"] is None and cg["processesMoved"] == 0
        assert cgroup_of() == before and cgroup_of(s.proc.pid) == before  # nobody moved
        assert (DELEGATED / "cells" / "memory.max").read_text().strip() == str(160 << 20)
        assert cg["cellsMemoryBytes"] == 160 << 20 and cg["cellsMemoryFrom"] == "--cells-memory-mb"
        # Each sandbox may have 128 MB, but all of them together only 160 MB.
        code = ("b = bytearray(100 << 20)\nfor i in range(0, len(b), 4096):\n    b[i] = 1\n"
                "import time\ntime.sleep(4)\n'held'")  # long enough to overlap under TCG
        rs = execute_together(s, code, 2, timeoutMs=20000, memoryMb=128)
        statuses = sorted(r.json["verdict"]["status"] for r in rs)
        record("budget-verdicts", statuses)
        assert statuses == ["MEMORY_LIMIT", "OK"], [r.json for r in rs]
    finally:
        s.stop()
    assert not (DELEGATED / "cells").exists()


def test_require_cgroups_refuses_a_cgroup_without_memory(tmp_path):
    parent = CG / "nomem"
    parent.mkdir()
    (parent / "cgroup.subtree_control").write_text("+pids")
    inner = parent / "inner"
    inner.mkdir()
    script = tmp_path / "two.py"
    script.write_text("1 + 1\n")
    os.chmod(tmp_path, 0o755)
    os.chmod(script, 0o644)

    def run(*extra):
        return subprocess.run(["sh", "-c", 'echo $$ >"$0/cgroup.procs" && exec "$@"', str(inner),
                               BIN, "run", str(script), *extra],
                              capture_output=True, text=True, timeout=120)

    try:
        p = run("--require-cgroups")
        record("require-cgroups", {"exit": p.returncode, "stderr": p.stderr[-600:]})
        assert p.returncode == 3, p
        assert "does not offer the memory controller" in p.stderr
        p = run()
        assert p.returncode == 0 and json.loads(p.stdout)["result"] == 2, p
        assert "no cgroup limits (rlimits only)" in p.stderr
        assert (parent / "cgroup.subtree_control").read_text().split() == ["pids"]
        assert sorted(x.name for x in inner.iterdir() if x.is_dir()) == []
    finally:
        inner.rmdir()
        parent.rmdir()
