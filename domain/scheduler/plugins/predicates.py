"""predicates: a task may run on a node only if the node is schedulable and ready, matches
the pod's selector and required affinity, has no untolerated taint, and has the resources."""

from __future__ import annotations

from collections.abc import Mapping

from domain.scheduler.predicates import fit_failures
from domain.scheduler.session import Plugin, Session
from domain.scheduler.snapshot import NodeInfo, TaskInfo

NAME = "predicates"


def _predicate(task: TaskInfo, node: NodeInfo) -> list[str]:
    return fit_failures(task.pod, task.request, node.node, node.idle)


def build(options: Mapping[str, object]) -> Plugin:
    def on_open(session: Session) -> None:
        session.add_predicate(NAME, _predicate)

    return Plugin(NAME, on_open)
