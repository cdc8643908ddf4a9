"""The real API server for tests/kube/: etcd + kube-apiserver + kwok (ops/local_kube.py), or
yours from SCHEDSTREAM_KUBECONFIG. Outside CI a server that cannot start skips these tests with
the reason; with CI=true it fails the run."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from ops.local_kube import ENV_KUBECONFIG, LocalKube
from tests.conftest import WORK, _unavailable


@pytest.fixture(scope="session")
def local_kube() -> Iterator[LocalKube]:
    if os.environ.get(ENV_KUBECONFIG):
        pytest.skip("tests/kube/ create and delete nodes: they run on the local API server only")
    server = LocalKube(WORK / "kube", kwok=os.environ.get("KA_KWOK", "1") == "1")
    try:
        server.start(replace=True)
    except Exception as exc:
        _unavailable("the Kubernetes API server", exc)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def kubeconfig(local_kube: LocalKube) -> Path:
    return local_kube.kubeconfig
