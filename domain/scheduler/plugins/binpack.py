"""binpack: prefer nodes that are already busy in the resources the task asks for, to keep
whole nodes free for big gangs. Volcano's score: per requested resource that has a weight,
(used + request) / allocatable x its weight, summed, over the sum of those weights, x 100 x
``binpack.weight``; zero on a node where any of them would overflow. Weights come from the
arguments ``binpack.cpu``, ``binpack.memory``, ``binpack.resources`` (GPU binpacking is the
common case) and ``binpack.resources.<name>``; each defaults to 1.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from domain import quantity
from domain.scheduler.infos import TaskInfo
from domain.scheduler.node_columns import Rows, Scores
from domain.scheduler.node_table import NodeInfo
from domain.scheduler.plugin_args import BINPACK_RESOURCE_PREFIX, arguments_of, binpack_resources, integer
from domain.scheduler.session import Plugin, Session

NAME = "binpack"
_MAX = 100.0


def weights_of(options: Mapping[str, object]) -> dict[str, int]:
    """Each resource's weight from the arguments: cpu and memory, and those ``binpack.resources`` lists."""

    def positive(key: str) -> int:  # upstream puts a negative weight back to 1
        value = integer(options, key, 1)
        return value if value >= 0 else 1

    listed = binpack_resources(arguments_of(options))
    weights = {name: positive(BINPACK_RESOURCE_PREFIX + name) for name in listed}
    weights[quantity.CPU] = positive("binpack.cpu")
    weights[quantity.MEMORY] = positive("binpack.memory")
    return weights


def score(task: TaskInfo, node: NodeInfo, weights: Mapping[str, int], weight: int) -> float:
    """Volcano's BinPackingScore: 0 .. 100 x ``weight``."""
    total, weight_sum = 0.0, 0
    for name, request in task.request.items():
        resource_weight = weights.get(name)
        if not request or resource_weight is None:
            continue
        allocatable = node.allocatable.get(name, 0)
        used = allocatable - node.idle.get(name, 0) + request
        if allocatable and resource_weight:
            if used > allocatable:
                return 0.0
            total += used * resource_weight / allocatable
        weight_sum += resource_weight  # a resource the node lacks still weighs (upstream)
    return total / weight_sum * _MAX * weight if weight_sum else 0.0


def score_columns(task: TaskInfo, rows: Rows, weights: Mapping[str, int], weight: int) -> Scores | None:
    """``score`` for every node, in the same floating-point operations in the same order; None
    when a quotient could round otherwise than Python's."""
    total = np.zeros(len(rows))
    overflows = np.zeros(len(rows), np.bool_)
    weight_sum = 0
    for name, request in task.request.items():
        resource_weight = weights.get(name)
        if not request or resource_weight is None:
            continue
        allocatable = rows.allocatable(name)
        if resource_weight:
            if not rows.exact(name, request, resource_weight):
                return None
            used = rows.used(name) + request
            weighted = used * resource_weight
            has = allocatable != 0
            if has.all():
                overflows |= used > allocatable
                total = total + weighted / allocatable
            else:
                overflows |= has & (used > allocatable)
                total = total + np.where(has, weighted / np.where(has, allocatable, 1), 0.0)
        weight_sum += resource_weight
    if not weight_sum:
        return np.zeros(len(rows))
    return np.where(overflows, 0.0, total / weight_sum * _MAX * weight)


def build(options: Mapping[str, object]) -> Plugin:
    weight = integer(options, "binpack.weight", 1)
    weights = weights_of(options)

    def on_open(session: Session) -> None:
        if weight:
            session.add_node_order(
                NAME,
                lambda task, node: score(task, node, weights, weight),
                lambda task, rows: score_columns(task, rows, weights, weight),
            )

    return Plugin(NAME, on_open)
