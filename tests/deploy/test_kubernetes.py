# SPDX-License-Identifier: MIT
"""deploy/kubernetes/*.yaml (CONTRACT §11): every document validates against the Kubernetes
schemas with a real validator (tests/node/k8s-validate.mjs: kubernetes-models' JSON schemas
plus a strict unknown-field check), broken manifests are refused with the reason, and the
manifests agree with each other and with sandboxd (probes, draining, selectors, the router)."""
import pathlib
import re
import shutil
import subprocess
import tempfile

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "kubernetes"
NODE = ROOT / "tests" / "node" / "node_modules" / ".bin" / "node"
VALIDATE = ROOT / "tests" / "node" / "k8s-validate.mjs"


def validate(*files):
    assert NODE.exists(), "tests/node has no node_modules: npm ci there (tests/run.sh does)"
    p = subprocess.run([str(NODE), str(VALIDATE)] + [str(f) for f in files],
                       capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout + p.stderr


def manifests():
    docs = []
    for path in sorted(K8S.glob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def find(kind, name):
    found = [d for d in manifests() if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, (kind, name)
    return found[0]


def test_manifests_are_valid():
    files = sorted(K8S.glob("*.yaml"))
    assert [f.name for f in files] == ["configmap.yaml", "deployment.yaml", "hpa.yaml",
                                       "namespace.yaml", "pdb.yaml", "router.yaml",
                                       "service.yaml"]
    rc, out = validate(*files)
    assert rc == 0, out
    assert out.strip().endswith("%d documents valid" % len(manifests())), out


def broken(mutate):
    doc = find("Deployment", "sandboxd")
    mutate(doc)
    return yaml.safe_dump(doc)


def container(doc):
    return doc["spec"]["template"]["spec"]["containers"][0]


@pytest.mark.parametrize("name, text, reason", [
    ("wrong type", broken(lambda d: d["spec"].update(replicas="two")),
     "spec/replicas must be integer"),
    ("missing required field", broken(lambda d: d["spec"].pop("selector")),
     "must have required property selector"),
    ("value outside an enum", broken(lambda d: container(d)["securityContext"].update(
        procMount="Unmaskd")), "procMount must be equal to one of the allowed values"),
    ("misspelt field", broken(lambda d: container(d).update(
        readinesProbe=container(d).pop("readinessProbe"))),
     "'\"readinesProbe\"' does not exist in type 'IContainer'"),
    ("unknown kind", broken(lambda d: d.update(kind="Deploymnet")),
     "no schema for apiVersion apps/v1, kind Deploymnet"),
    ("not YAML", "kind: Deployment\n  apiVersion: [apps/v1\n", "YAML"),
])
def test_broken_manifests_are_refused(name, text, reason):
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
        f.write(text)
        f.flush()
        rc, out = validate(K8S / "service.yaml", f.name)
    assert rc == 1, out
    assert reason in out, out
    assert "1 problem(s)" in out, out  # the good file beside it is not blamed


def test_manifests_agree_with_sandboxd_and_each_other():
    docs = manifests()
    assert {d["metadata"].get("namespace") for d in docs if d["kind"] != "Namespace"} == \
        {find("Namespace", "sandboxd")["metadata"]["name"]}
    dep = find("Deployment", "sandboxd")
    pod = dep["spec"]["template"]
    labels = pod["metadata"]["labels"]
    c = pod["spec"]["containers"][0]
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert c["livenessProbe"]["httpGet"]["path"] == "/livez"
    assert c["startupProbe"]["httpGet"]["path"] == "/livez"
    assert "memory" in c["resources"]["limits"] and "cpu" in c["resources"]["requests"]
    # SIGKILL must not cut a drain short: grace >= preStop + --drain-timeout-s.
    args = dict(a[2:].split("=", 1) for a in c["args"] if "=" in a)
    drain = int(args["drain-timeout-s"])
    pre_stop = c["lifecycle"]["preStop"]["sleep"]["seconds"]
    assert pod["spec"]["terminationGracePeriodSeconds"] >= pre_stop + drain + 5
    # The instance id is the pod IP with dashes: what the router resolves.
    assert '--instance-id "$(echo "$POD_IP" | tr . -)"' in " ".join(c["command"])
    assert {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}} in c["env"]
    assert args["host"] == "0.0.0.0" and "SANDBOXD_API_TOKEN" in [e["name"] for e in c["env"]]
    # The security context docs/SECURITY.md and docs/DEPLOY.md explain.
    sc = c["securityContext"]
    assert sc["procMount"] == "Unmasked" and pod["spec"]["hostUsers"] is False
    assert sc["seccompProfile"]["type"] == "Unconfined" and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"] and sc["readOnlyRootFilesystem"] is True
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    # Everything that selects the pods selects these labels.
    for kind, name in [("Service", "sandboxd"), ("Service", "sandboxd-pods")]:
        assert find(kind, name)["spec"]["selector"] == labels
    assert find("PodDisruptionBudget", "sandboxd")["spec"]["selector"]["matchLabels"] == labels
    assert dep["spec"]["selector"]["matchLabels"] == labels
    hpa = find("HorizontalPodAutoscaler", "sandboxd")["spec"]
    assert hpa["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment",
                                     "name": "sandboxd"}
    # The HPA scales on metrics sandboxd exports (src/api/api.c).
    api = (ROOT / "src" / "api" / "api.c").read_text()
    for m in hpa["metrics"]:
        if m["type"] == "Pods":
            assert '"%s' % m["pods"]["metric"]["name"] in api, m
    assert find("Service", "sandboxd-pods")["spec"]["clusterIP"] == "None"
    # The state store: the URL and the password from the Secret docs/DEPLOY.md makes, both
    # optional (without it, the state directory), never a literal in the manifest.
    env = {e["name"]: e for e in c["env"]}
    for name, key in [("SANDBOXD_STATE_STORE", "url"), ("PGPASSWORD", "password")]:
        assert env[name]["valueFrom"]["secretKeyRef"] == {"name": "sandboxd-state-store",
                                                          "key": key, "optional": True}
    docs_md = (ROOT / "docs" / "DEPLOY.md").read_text()
    assert "create secret generic sandboxd-state-store" in docs_md
    # The mounted --mcp-config is the ConfigMap's file.
    assert args["mcp-config"] == "/etc/sandboxd/mcp.json"
    assert "mcp.json" in find("ConfigMap", "sandboxd-config")["data"]


def test_router_config_is_valid_haproxy_and_names_the_pods():
    cfg = find("ConfigMap", "sandboxd-router")["data"]["haproxy.cfg"]
    assert "sandboxd-pods.sandboxd.svc.cluster.local" in cfg
    # The owner pattern is the instance-id rule (util/instance.h), and nothing wider.
    assert re.search(r"\[0-9a-z-\]\{1,31\}\\\.\[0-9a-f\]\{32\}", cfg), cfg
    haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
    with tempfile.NamedTemporaryFile("w", suffix=".cfg") as f:
        f.write(cfg)
        f.flush()
        p = subprocess.run([haproxy, "-c", "-f", f.name], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
