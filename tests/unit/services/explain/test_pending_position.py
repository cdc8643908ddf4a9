"""Kueue pending positions (``services.explain.position``), as the visibility API gives them:
a ClusterQueue's waiting workloads from all its LocalQueues in admission order (priority,
creation, name), each with its place in the ClusterQueue and in its LocalQueue, from 0."""

from __future__ import annotations

import json
from typing import Any

from domain.engine import Engine
from domain.events import parse_event
from domain.kueue.settings import KueueSettings
from domain.scheduler.config import SchedulerConfig
from services.explain.position import PendingPosition, pending_positions

KUEUE = "kueue.x-k8s.io/v1beta1"


def added(obj: dict[str, Any]) -> str:
    return json.dumps({"type": "ADDED", "cluster": "c1", "object": obj})


def workload(name: str, queue: str, created: str, priority: int = 0, cpu: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE, "kind": "Workload",
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "creationTimestamp": created},
        "spec": {"queueName": queue, "priority": priority, "podSets": [{"name": "main", "count": cpu,
                 "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}]},
    }  # fmt: skip


def test_positions_follow_admission_order_across_local_queues() -> None:
    # No quota: every workload waits; priority first, then creation, across both LocalQueues.
    lines = [
        added({"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "default", "uid": "f"}}),
        added({"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": "cq", "uid": "cq"},
               "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"],
                        "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": "0"}]}]}]}}),
        *(added({"apiVersion": KUEUE, "kind": "LocalQueue", "metadata": {"name": lq, "namespace": "ns", "uid": lq},
                 "spec": {"clusterQueue": "cq"}}) for lq in ("a", "b")),
        added(workload("big", "a", "2026-01-01T00:00:00Z", cpu=2)),
        added(workload("late", "a", "2026-01-01T00:00:09Z")),
        added(workload("urgent", "b", "2026-01-01T00:00:08Z", priority=10)),
        added(workload("early", "a", "2026-01-01T00:00:05Z")),
        json.dumps({"type": "SCHEDULE", "cluster": "c1", "time": "2026-01-01T00:01:00Z"}),
    ]  # fmt: skip
    engine = Engine(SchedulerConfig(), on_markers=lambda _: True)
    for line in lines:
        engine.handle(parse_event(line))
    positions = pending_positions(engine.state("c1"), KueueSettings())
    assert positions == {
        "ns/urgent": PendingPosition("cq", "ns/b", 0, 0, 4),
        "ns/big": PendingPosition("cq", "ns/a", 1, 0, 4),
        "ns/early": PendingPosition("cq", "ns/a", 2, 1, 4),
        "ns/late": PendingPosition("cq", "ns/a", 3, 2, 4),
    }
    assert pending_positions(engine.state("c1"), KueueSettings()) == positions  # reading changes nothing
