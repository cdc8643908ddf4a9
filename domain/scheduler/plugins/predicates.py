"""predicates: a task may run on a node only if the node is schedulable and ready, matches
the pod's selector and required affinity, has no untolerated taint, and has the resources.
The arguments ``predicate.NodeAffinityEnable`` and ``predicate.TaintTolerationEnable`` (default
true, as upstream) switch the selector/affinity and the taint checks off."""

from __future__ import annotations

from collections.abc import Mapping

from domain.scheduler.infos import TaskInfo
from domain.scheduler.node_table import NodeInfo
from domain.scheduler.plugin_args import switch
from domain.scheduler.predicates import fit_failures
from domain.scheduler.session import Plugin, Session

NAME = "predicates"


def build(options: Mapping[str, object]) -> Plugin:
    node_affinity = switch(options, "predicate.NodeAffinityEnable")
    taints = switch(options, "predicate.TaintTolerationEnable")

    def predicate(task: TaskInfo, node: NodeInfo) -> list[str]:
        return fit_failures(task.pod, task.request, node.node, node.idle, node_affinity=node_affinity, taints=taints)

    def on_open(session: Session) -> None:
        session.add_predicate(NAME, predicate)

    return Plugin(NAME, on_open)
