"""Deterministic synthetic event streams for tests and benchmarks: GPU nodes, Volcano gangs
(PodGroup + Pods) arriving over time, SCHEDULE markers, pods finishing, and Job deletion
cascades in the Pod-before-PodGroup order of SEEDS S1. No randomness: the same arguments
always give the same lines."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Shape:
    nodes: int = 20
    gpus_per_node: int = 8
    gangs: int = 100
    gang_sizes: tuple[int, ...] = (1, 2, 4, 8)
    gpus_per_pod: tuple[int, ...] = (1, 2, 1, 4)
    marker_every: int | None = 25
    finish_after: int = 3
    delete_every: int = 7


def _line(obj: dict) -> str:
    return json.dumps(obj, separators=(",", ":"))


class _Writer:
    def __init__(self, cluster: str, shape: Shape) -> None:
        self.cluster = cluster
        self.shape = shape
        self.lines: list[str] = []
        self.version = 0
        self.markers = 0

    def watch(self, kind: str, obj: dict) -> None:
        self.version += 1
        obj["metadata"]["resourceVersion"] = str(self.version)
        self.lines.append(_line({"type": kind, "cluster": self.cluster, "object": obj}))
        every = self.shape.marker_every
        if every and len(self.lines) % every == 0:
            self.marker()

    def marker(self) -> None:
        self.markers += 1
        at = (T0 + timedelta(seconds=self.markers)).isoformat().replace("+00:00", "Z")
        self.lines.append(_line({"type": "SCHEDULE", "cluster": self.cluster, "time": at}))


def _node(i: int, gpus: int) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"node-{i:04d}", "uid": f"node-{i}", "labels": {"volcano.sh/ib-cluster": f"ib-{i % 4}"}},
        "status": {"allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}},
    }


def _pod(gang: int, index: int, gpus: int, *, phase: str = "Pending", node: str = "", deleting: bool = False) -> dict:
    meta: dict = {
        "name": f"job-{gang}-{index}",
        "namespace": f"team-{gang % 3}",
        "uid": f"pod-{gang}-{index}",
        "annotations": {"scheduling.k8s.io/group-name": f"job-{gang}"},
        "ownerReferences": [{"kind": "Job", "name": f"job-{gang}", "uid": f"job-{gang}"}],
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    request = {"cpu": "4", "memory": "32Gi", "nvidia.com/gpu": str(gpus)}
    spec: dict = {"schedulerName": "volcano", "containers": [{"name": "main", "resources": {"requests": request}}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": phase}}


def _pod_group(gang: int, size: int) -> dict:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": f"job-{gang}",
            "namespace": f"team-{gang % 3}",
            "uid": f"pg-{gang}",
            "ownerReferences": [{"kind": "Job", "name": f"job-{gang}", "uid": f"job-{gang}"}],
        },
        "spec": {"minMember": size, "queue": "default"},
    }


def synthetic_stream(cluster: str = "c1", shape: Shape = Shape()) -> list[str]:
    """A cluster's life: nodes, then gangs arriving; older gangs finish or are deleted."""
    w = _Writer(cluster, shape)
    for i in range(shape.nodes):
        w.watch("ADDED", _node(i, shape.gpus_per_node))
    for gang in range(shape.gangs):
        size = shape.gang_sizes[gang % len(shape.gang_sizes)]
        gpus = shape.gpus_per_pod[gang % len(shape.gpus_per_pod)]
        w.watch("ADDED", _pod_group(gang, size))
        for index in range(size):
            w.watch("ADDED", _pod(gang, index, gpus))
        old = gang - shape.finish_after
        if old >= 0:
            old_size = shape.gang_sizes[old % len(shape.gang_sizes)]
            old_gpus = shape.gpus_per_pod[old % len(shape.gpus_per_pod)]
            if old % shape.delete_every == 0:
                # S1 cascade: the pods go first, the PodGroup after.
                for index in range(old_size):
                    w.watch("DELETED", _pod(old, index, old_gpus, deleting=True))
                w.watch("DELETED", _pod_group(old, old_size))
            else:
                for index in range(old_size):
                    w.watch("MODIFIED", _pod(old, index, old_gpus, phase="Succeeded"))
    if shape.marker_every:
        w.marker()
    return w.lines
