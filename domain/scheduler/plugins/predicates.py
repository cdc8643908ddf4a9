"""predicates: a task may run on a node only if the node is schedulable and ready, matches
the pod's selector and required affinity, has no untolerated taint, and has the resources.
The arguments ``predicate.NodeAffinityEnable`` and ``predicate.TaintTolerationEnable`` (default
true, as upstream) switch the selector/affinity and the taint checks off.

The checks of the node object (all but the resources) give the same answer for the same node
object and the same selector, affinity and tolerations, so their answers are kept between
sessions, per node, until the node object changes: a node whose free room changed is checked
again on its room alone."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from domain.objects.core import Node
from domain.scheduler.infos import TaskInfo
from domain.scheduler.node_columns import EXACT, MASKS, Mask, NodeColumns, plain
from domain.scheduler.node_table import NodeInfo
from domain.scheduler.plugin_args import switch
from domain.scheduler.predicates import node_failures, room_failures
from domain.scheduler.session import Plugin, Session

NAME = "predicates"

# node name -> (the node object checked, the answers per task shape past its request)
Answers = dict[str, tuple[Node, dict[tuple[object, ...], list[str]]]]


def build(options: Mapping[str, object]) -> Plugin:
    node_affinity = switch(options, "predicate.NodeAffinityEnable")
    taints = switch(options, "predicate.TaintTolerationEnable")
    kept_as = f"{NAME}:{node_affinity}:{taints}"

    def on_open(session: Session) -> None:
        answers = session.kept.get(kept_as)
        if not isinstance(answers, dict):
            answers = session.kept[kept_as] = {}
        known: Answers = answers
        nodes = session.snapshot.nodes
        if len(known) > len(nodes):  # nodes left the cluster: their answers go (kept for at most twice the nodes)
            for name in [name for name in known if name not in nodes]:
                del known[name]

        def predicate(task: TaskInfo, node: NodeInfo) -> list[str]:
            entry = known.get(node.name)
            if entry is None or entry[0] is not node.node:
                entry = known[node.name] = (node.node, {})
            key = task.shape()[1:]
            failures = entry[1].get(key)
            if failures is None:
                failures = entry[1][key] = node_failures(
                    task.pod, node.node, node_affinity=node_affinity, taints=taints
                )
            return failures or room_failures(task.request, node.idle)

        def fit(task: TaskInfo, columns: NodeColumns) -> Mask | None:
            """``predicate``'s answer for every node at once: the node checks once per kind of
            node for a plain task, else once per node and shape, kept until a node object changes."""
            if plain(task):
                kinds = [not node_failures(task.pod, node, node_affinity=node_affinity, taints=taints)
                         for node in columns.kinds]  # fmt: skip
                fits = np.array(kinds, np.bool_)[columns.kind]
            else:
                key = (kept_as, task.shape()[1:])
                mask = columns.masks.get(key)
                if mask is None:
                    nodes = columns.nodes
                    checks = [not node_failures(task.pod, nodes[name].node, node_affinity=node_affinity, taints=taints)
                              for name in columns.names]  # fmt: skip
                    mask = columns.masks[key] = np.array(checks, np.bool_)
                    if len(columns.masks) > MASKS:
                        del columns.masks[next(iter(columns.masks))]
                fits = mask.copy()
            for name, amount in task.request.items():
                if amount > 0:
                    if amount >= EXACT:
                        return None
                    fits &= columns.column(columns.idle, name) >= amount
            return fits

        session.add_predicate(NAME, predicate, fit)

    return Plugin(NAME, on_open)
