"""nodeorder: kube-scheduler's least-requested and balanced-allocation scores (0-100 each),
so by default load spreads over nodes and cpu and memory stay in proportion."""

from __future__ import annotations

from collections.abc import Mapping

from domain import quantity
from domain.scheduler.session import Plugin, Session
from domain.scheduler.snapshot import NodeInfo, TaskInfo

NAME = "nodeorder"
_MAX = 100.0


def _fractions(task: TaskInfo, node: NodeInfo) -> list[float]:
    """Share of cpu and memory in use once the task is placed."""
    out = []
    for name in (quantity.CPU, quantity.MEMORY):
        total = node.allocatable.get(name, 0)
        if total > 0:
            out.append((total - node.idle.get(name, 0) + task.request.get(name, 0)) / total)
    return out


def _score(task: TaskInfo, node: NodeInfo) -> float:
    used = _fractions(task, node)
    if not used:
        return 0.0
    least_requested = sum(_MAX * (1 - u) for u in used) / len(used)
    balanced = _MAX * (1 - (max(used) - min(used)))
    return least_requested + balanced


def build(options: Mapping[str, object]) -> Plugin:
    def on_open(session: Session) -> None:
        session.add_node_order(NAME, _score)

    return Plugin(NAME, on_open)
