"""ops/local_kube.py: a real etcd + kube-apiserver (+ kwok) starts, serves the CRDs of CONTRACT
section 1 with their status subresource, takes Pods, and stops without a stray process."""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from ops.local_kube import ENV_KUBECONFIG, KUBE_VERSION, LocalKube

pytestmark = pytest.mark.kube

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p-0", "namespace": "lk"},
    "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]},
}
PODGROUP = {
    "apiVersion": "scheduling.volcano.sh/v1beta1",
    "kind": "PodGroup",
    "metadata": {"name": "pg", "namespace": "lk"},
    "spec": {"minMember": 2, "queue": "default"},
}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    ps = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], check=False, capture_output=True, text=True)
    state = ps.stdout.strip()
    return not state.startswith("Z")


def test_the_server_is_ready_serves_every_crd_and_takes_pods_and_custom_objects(local_kube: LocalKube) -> None:
    context = ssl.create_default_context(cafile=str(local_kube.workdir / "pki" / "serving.crt"))
    with urllib.request.urlopen(f"{local_kube.server}/readyz", context=context) as answer:
        assert answer.read() == b"ok"
    assert json.loads(local_kube.kubectl("version", "-o", "json"))["serverVersion"]["gitVersion"] == KUBE_VERSION

    crds = json.loads(local_kube.kubectl("get", "crd", "-o", "json"))["items"]
    served = {(c["spec"]["group"], c["spec"]["names"]["kind"]) for c in crds}
    for group, kinds in {
        "scheduling.volcano.sh": ("PodGroup", "Queue"),
        "batch.volcano.sh": ("Job",),
        "topology.volcano.sh": ("HyperNode",),
        "kueue.x-k8s.io": ("ResourceFlavor", "Topology", "Cohort", "ClusterQueue", "LocalQueue", "Workload"),
    }.items():
        assert {(group, kind) for kind in kinds} <= served
    assert all(v["subresources"] == {"status": {}} for c in crds for v in c["spec"]["versions"])

    local_kube.kubectl("create", "namespace", "lk")
    local_kube.kubectl("apply", "-f", "-", input=json.dumps(POD))  # no ServiceAccount needed: plugin disabled
    local_kube.kubectl("apply", "-f", "-", input=json.dumps(PODGROUP))
    local_kube.kubectl(
        "patch", "podgroup", "pg", "-n", "lk", "--subresource=status", "--type=merge",
        "-p", '{"status": {"phase": "Inqueue"}}',
    )  # fmt: skip
    pod = json.loads(local_kube.kubectl("get", "pod", "p-0", "-n", "lk", "-o", "json"))
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1"}
    group = json.loads(local_kube.kubectl("get", "podgroup", "pg", "-n", "lk", "-o", "json"))
    assert group["spec"]["minMember"] == 2
    assert group["status"] == {"phase": "Inqueue"}


def test_a_user_bound_to_no_role_is_refused(local_kube: LocalKube) -> None:
    refused = subprocess.run(
        [str(local_kube.kubectl_path), "--kubeconfig", str(local_kube.nobody_kubeconfig), "get", "pods", "-A"],
        check=False,
        capture_output=True,
        text=True,
    )
    assert refused.returncode != 0
    assert "forbidden" in refused.stderr


def test_kwok_makes_nodes_ready_and_runs_bound_pods(local_kube: LocalKube) -> None:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "kwok-lk-0", "annotations": {"kwok.x-k8s.io/node": "fake"}},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
    }
    local_kube.kubectl("apply", "-f", "-", input=json.dumps(node))
    local_kube.kubectl("create", "namespace", "lk-run")
    spec = {**POD["spec"], "nodeName": "kwok-lk-0"}
    bound = {**POD, "metadata": {"name": "bound", "namespace": "lk-run"}, "spec": spec}
    local_kube.kubectl("apply", "-f", "-", input=json.dumps(bound))
    local_kube.kubectl("wait", "--for=condition=Ready", "node/kwok-lk-0", "--timeout=60s")
    local_kube.kubectl("wait", "--for=jsonpath={.status.phase}=Running", "pod/bound", "-n", "lk-run", "--timeout=60s")


def test_stop_leaves_no_process_and_start_again_reuses_the_data(tmp_path: Path) -> None:
    if os.environ.get(ENV_KUBECONFIG):
        pytest.skip(f"{ENV_KUBECONFIG} names your cluster: nothing is built or started here")
    server = LocalKube(tmp_path / "kube", crds=False)
    server.start(timeout=300)
    server.kubectl("create", "namespace", "kept")
    first = server.status()
    assert first is not None
    server.stop()
    assert not _alive(first.etcd_pid) and not _alive(first.apiserver_pid)
    assert server.status() is None

    began = time.monotonic()
    server.start(timeout=300)
    try:
        assert time.monotonic() - began < 120
        assert "kept" in server.kubectl("get", "namespaces", "-o", "name")
    finally:
        server.stop()
