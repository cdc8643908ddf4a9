"""conformance: critical system pods are never victims of preemption or reclaim."""

from __future__ import annotations

from collections.abc import Mapping

from domain.scheduler.infos import TaskInfo
from domain.scheduler.session import Plugin, Session

NAME = "conformance"
_CRITICAL_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})


def _evictable(preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
    return [
        t
        for t in candidates
        if t.pod.metadata.namespace != "kube-system" and t.pod.spec.priority_class_name not in _CRITICAL_CLASSES
    ]


def build(options: Mapping[str, object]) -> Plugin:
    def on_open(session: Session) -> None:
        session.add_preemptable(NAME, _evictable)
        session.add_reclaimable(NAME, _evictable)

    return Plugin(NAME, on_open)
