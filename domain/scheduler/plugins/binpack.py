"""binpack: prefer nodes that are already busy in the resources the task asks for (0-100),
to keep whole nodes free for big gangs; Volcano's default weights (cpu 1, memory 1)."""

from __future__ import annotations

from collections.abc import Mapping

from domain import quantity
from domain.scheduler.session import Plugin, Session
from domain.scheduler.snapshot import NodeInfo, TaskInfo

NAME = "binpack"
_MAX = 100.0


def _score(task: TaskInfo, node: NodeInfo) -> float:
    scores = []
    for name in (quantity.CPU, quantity.MEMORY):
        request, total = task.request.get(name, 0), node.allocatable.get(name, 0)
        if request and total:
            scores.append((total - node.idle.get(name, 0) + request) / total)
    return _MAX * sum(scores) / len(scores) if scores else 0.0


def build(options: Mapping[str, object]) -> Plugin:
    def on_open(session: Session) -> None:
        session.add_node_order(NAME, _score)

    return Plugin(NAME, on_open)
