"""The Helm chart applied to the real local API server (ops/local_kube.py): the server takes
every manifest with strict field validation, and its RBAC authorizer gives each service
account exactly what watch and apply need (asked with `kubectl auth can-i --as`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ops.local_kube import LocalKube
from tests.integration.test_helm_chart import render, tools  # noqa: F401 - tools is a fixture

pytestmark = pytest.mark.kube
NAMESPACE = "schedstream-chart"

CAN = [
    ("watch", "list", "pods", ""),
    ("watch", "watch", "nodes", ""),
    ("watch", "watch", "namespaces", ""),
    ("watch", "list", "priorityclasses.scheduling.k8s.io", ""),
    ("watch", "watch", "podgroups.scheduling.volcano.sh", ""),
    ("watch", "watch", "queues.scheduling.volcano.sh", ""),
    ("watch", "watch", "jobs.batch.volcano.sh", ""),
    ("watch", "watch", "hypernodes.topology.volcano.sh", ""),
    ("watch", "watch", "workloads.kueue.x-k8s.io", ""),
    ("watch", "watch", "clusterqueues.kueue.x-k8s.io", ""),
    ("apply", "create", "pods", "binding"),
    ("apply", "create", "pods", "eviction"),
    ("apply", "create", "events", ""),
    ("apply", "patch", "podgroups.scheduling.volcano.sh", "status"),
    ("apply", "update", "queues.scheduling.volcano.sh", "status"),
    ("apply", "patch", "workloads.kueue.x-k8s.io", "status"),
    ("apply", "patch", "jobs.batch.volcano.sh", "status"),
]
CANNOT = [
    ("watch", "create", "pods", ""),
    ("watch", "patch", "podgroups.scheduling.volcano.sh", "status"),
    ("watch", "get", "secrets", ""),
    ("apply", "delete", "pods", ""),
    ("apply", "update", "workloads.kueue.x-k8s.io", ""),
    ("apply", "create", "pods", ""),
    ("worker", "list", "pods", ""),
]


def can_i(server: LocalKube, account: str, verb: str, resource: str, subresource: str) -> bool:
    args = ["auth", "can-i", verb, resource, f"--as=system:serviceaccount:{NAMESPACE}:sched-{account}"]
    if subresource:
        args.append(f"--subresource={subresource}")
    return server.kubectl(*args, check=False).strip() == "yes"


def test_the_api_server_takes_the_chart_and_its_rbac_allows_exactly_what_is_needed(
    local_kube: LocalKube,
    tools: dict[str, Path],  # noqa: F811 - the fixture imported above
    tmp_path: Path,
) -> None:
    rendered = render(tools, {}, tmp_path).replace("namespace: batch", f"namespace: {NAMESPACE}")
    manifests = tmp_path / "chart.yaml"
    manifests.write_text(rendered)
    local_kube.kubectl("create", "namespace", NAMESPACE)
    try:
        applied = local_kube.kubectl("apply", "-n", NAMESPACE, "--validate=strict", "-f", str(manifests))
        assert applied.count("created") == 13, applied
        deployments = local_kube.kubectl("get", "deployments", "-n", NAMESPACE, "-o", "name").split()
        assert sorted(deployments) == [f"deployment.apps/sched-{c}" for c in ("apply", "watch", "worker")]
        granted = {case: can_i(local_kube, *case) for case in CAN + CANNOT}
        assert [case for case in CAN if not granted[case]] == []
        assert [case for case in CANNOT if granted[case]] == []
    finally:
        local_kube.kubectl("delete", "-f", str(manifests), "-n", NAMESPACE, "--wait=false", check=False)
        local_kube.kubectl("delete", "namespace", NAMESPACE, "--wait=false", check=False)
