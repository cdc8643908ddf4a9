"""Fixtures of the tests on the API server (the server itself: ``local_kube`` in tests/conftest.py)."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from ops.local_kube import BIN_DIR, LocalKube

APPLY_RBAC = Path(__file__).resolve().parents[2] / "docs" / "apply-rbac.yaml"


@pytest.fixture
def ns(local_kube: LocalKube) -> Iterator[str]:
    """A namespace of the test's own. Its pods, and the nodes named after it, are deleted after the
    test: no controller-manager runs here to empty a deleted namespace, and the server's etcd outlives
    the session, so pods left pending would take the next tests' nodes."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    local_kube.kubectl("create", "namespace", name)
    yield name
    force = ("--force", "--grace-period=0", "--wait=false")
    local_kube.kubectl("delete", "pods", "--all", "-n", name, *force, check=False)
    nodes = [n for n in local_kube.kubectl("get", "nodes", "-o", "name").split() if n.startswith(f"node/{name}-")]
    if nodes:
        local_kube.kubectl("delete", *nodes, check=False)


@pytest.fixture(scope="session")
def apply_kubeconfig(local_kube: LocalKube, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A kubeconfig of a ServiceAccount that holds only the ClusterRole of docs/apply-rbac.yaml:
    apply run with it shows those verbs are enough."""
    local_kube.kubectl("create", "namespace", "schedstream-system", check=False)
    local_kube.kubectl("create", "serviceaccount", "applier", "-n", "schedstream-system", check=False)
    local_kube.kubectl("apply", "-f", str(APPLY_RBAC))
    local_kube.kubectl("create", "clusterrolebinding", "schedstream-apply", "--clusterrole=schedstream-apply",
                       "--serviceaccount=schedstream-system:applier", check=False)  # fmt: skip
    token = local_kube.kubectl("create", "token", "applier", "-n", "schedstream-system", "--duration=2h").strip()
    config = yaml.safe_load(local_kube.kubeconfig.read_text())
    for user in config["users"]:
        user["user"] = {"token": token}
    path = tmp_path_factory.mktemp("apply") / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    can = subprocess.run([str(BIN_DIR / "kubectl"), "--kubeconfig", str(path), "auth", "can-i", "delete", "pods"],
                         capture_output=True, text=True, check=False)  # fmt: skip
    assert can.stdout.strip() == "no", "the applier's kubeconfig must not be an admin's"
    return path
