"""binpack: prefer nodes that are already busy in the resources the task asks for, to keep
whole nodes free for big gangs. Volcano's score: per requested resource that has a weight,
(used + request) / allocatable x its weight, summed, over the sum of those weights, x 100 x
``binpack.weight``; zero on a node where any of them would overflow. Weights come from the
arguments ``binpack.cpu``, ``binpack.memory``, ``binpack.resources`` (GPU binpacking is the
common case) and ``binpack.resources.<name>``; each defaults to 1.
"""

from __future__ import annotations

from collections.abc import Mapping

from domain import quantity
from domain.scheduler.plugin_args import BINPACK_RESOURCE_PREFIX, arguments_of, binpack_resources, integer
from domain.scheduler.session import Plugin, Session
from domain.scheduler.snapshot import NodeInfo, TaskInfo

NAME = "binpack"
_MAX = 100.0


def _weights(options: Mapping[str, object]) -> dict[str, int]:
    def positive(key: str) -> int:  # upstream puts a negative weight back to 1
        value = integer(options, key, 1)
        return value if value >= 0 else 1

    listed = binpack_resources(arguments_of(options))
    weights = {name: positive(BINPACK_RESOURCE_PREFIX + name) for name in listed}
    weights[quantity.CPU] = positive("binpack.cpu")
    weights[quantity.MEMORY] = positive("binpack.memory")
    return weights


def build(options: Mapping[str, object]) -> Plugin:
    weight = integer(options, "binpack.weight", 1)
    weights = _weights(options)

    def score(task: TaskInfo, node: NodeInfo) -> float:
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
            weight_sum += resource_weight
        return total / weight_sum * _MAX * weight if weight_sum else 0.0

    def on_open(session: Session) -> None:
        if weight:
            session.add_node_order(NAME, score)

    return Plugin(NAME, on_open)
