"""Fixtures of the tests on the API server (the server itself: ``local_kube`` in tests/conftest.py)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from ops.local_kube import LocalKube


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
