# SPDX-License-Identifier: MIT
"""What a caller without the operator's token, or the sandbox itself, learns about the host
(issue 24, item 11). With --api-token set, /healthz used to tell anyone the egress allowlist,
the pinned private addresses, which hosts receive injected headers, zygote PIDs and cgroup
paths; and every session was told /proc/<host PID>/root/tmp as its host working directory.
Now the probes answer anyone with a status and nothing more (docs/API.md), the full report is
the operator's, and a session's host path is a link that names no PID but still leads to its
files (the file:// URLs of save_file work as before)."""
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from harness import Server, write_tenants  # noqa: E402

import pytest  # noqa: E402

OPERATOR = "operator-token-0123456789"
TENANT = "tenant-token-0123456789"
SECRET_HOST = "billing.internal.test"
PINNED = "10.77.66.55"


def auth(token):
    return {"Authorization": "Bearer " + token}


@pytest.fixture(scope="module")
def srv():
    tenants = write_tenants({"tenants": {"acme": {"token": TENANT}}})
    s = Server("--pool-size", "1", "--session-pool-size", "1", "--template-pool-size", "0",
               "--api-token", OPERATOR, "--tenants", tenants,
               "--egress-allow", "%s:443" % SECRET_HOST,
               "--egress-resolve", "%s:443:%s" % (SECRET_HOST, PINNED),
               "--egress-header", "%s=X-Billing-Key: k-not-for-you" % SECRET_HOST)
    yield s
    s.stop()
    os.unlink(tenants)


def host_secrets(report):
    """What the operator's report tells about the host: the strings nobody else may see."""
    text = json.dumps(report)
    assert SECRET_HOST in text and PINNED in text, text[:2000]
    found = [SECRET_HOST, PINNED]
    for pool in ("pool", "sessionPool"):
        found += ['"pid": %d' % z["pid"] for z in report[pool]["zygotes"]]
    cells = (report["isolation"].get("cgroup") or {}).get("cells")
    if cells:
        found.append(cells)
    return found


@pytest.mark.parametrize("who", ["anonymous", "bad token", "tenant"])
def test_healthz_tells_others_the_status_only(srv, who):
    full = srv.request("GET", "/healthz", headers=auth(OPERATOR), fresh=True)
    assert full.status == 200 and full.json["status"] == "ok", full
    secrets = host_secrets(full.json)
    headers = {"anonymous": {}, "bad token": auth("not-the-token"), "tenant": auth(TENANT)}[who]
    r = srv.request("GET", "/healthz", headers=headers, fresh=True)
    assert r.status == 200 and r.json == {"status": "ok"}, r  # CONTRACT §3: no token needed
    text = json.dumps(r.json, separators=(", ", ": "))
    for s in secrets:
        assert s not in text, (s, text)


def test_livez_and_readyz_stay_open_and_minimal(srv):
    r = srv.request("GET", "/livez", fresh=True)
    assert r.status == 200 and r.json == {"status": "alive"}, r
    # The pools start behind /healthz: until one is ready, /readyz says only that.
    deadline = time.time() + 60
    while True:
        r = srv.request("GET", "/readyz", fresh=True)
        if r.status == 200 or time.time() > deadline:
            break
        assert r.status == 503 and r.json == {
            "status": "starting", "reason": "the warm pool has no ready interpreter yet"}, r
        time.sleep(0.05)
    assert r.status == 200 and r.json == {"status": "ready"}, r


def test_a_session_is_not_told_its_host_pid(srv):
    r = srv.request("POST", "/v1/sessions", body={}, headers=auth(TENANT), fresh=True)
    assert r.status == 201, r
    sid = r.json["sessionId"]
    code = ("from sandboxd_runtime import helpers\n"
            "open('/tmp/marker.txt', 'w').write('from the sandbox')\n"
            "print(helpers.STATE['host_workdir'])\n"
            "print(helpers.file_url('/tmp/marker.txt'))")
    r = srv.request("POST", "/v1/sessions/%s/execute" % sid, body={"code": code},
                    headers=auth(TENANT), fresh=True)
    assert r.status == 200 and r.json.get("error") is None, r
    workdir, url = r.json["stdout"].split()
    for seen in (workdir, url):
        assert not re.search(r"/proc/\d+", seen), seen
        assert not re.search(r"\b%d\b" % srv.proc.pid, seen), seen
    # Still a host path to the session's files: the client on the host opens the URL.
    assert url.startswith("file://" + workdir + "/"), (url, workdir)
    with open(url[len("file://"):]) as f:
        assert f.read() == "from the sandbox"
    assert srv.request("DELETE", "/v1/sessions/" + sid, headers=auth(TENANT),
                       fresh=True).status == 204
    assert not os.path.lexists(workdir)  # the link went with the session
