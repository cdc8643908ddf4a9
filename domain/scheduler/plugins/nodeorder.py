"""nodeorder: kube-scheduler's resource scores as Volcano's nodeorder plugin weighs them:
least-requested (cpu and memory), most-requested (off unless weighted) and balanced allocation
(cpu, memory and ``nvidia.com/gpu``). Each is kube-scheduler's integer score in 0..100 before
its weight (``leastrequested.weight``, ``mostrequested.weight``, ``balancedresource.weight``),
so two nodes that kube-scheduler tells apart are not tied here, nor the other way round.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np

from domain import quantity
from domain.scheduler.infos import TaskInfo
from domain.scheduler.node_columns import Column, Mask, Rows, Scores
from domain.scheduler.node_table import NodeInfo
from domain.scheduler.plugin_args import integer
from domain.scheduler.session import Plugin, Session

NAME = "nodeorder"
_MAX = 100
_GPU = "nvidia.com/gpu"
_FIT = (quantity.CPU, quantity.MEMORY)


def _requested(task: TaskInfo, node: NodeInfo, name: str) -> tuple[int, int]:
    """What the node holds of ``name`` once the task is placed, and what it has."""
    total = node.allocatable.get(name, 0)
    return total - node.idle.get(name, 0) + task.request.get(name, 0), total


def least_requested(task: TaskInfo, node: NodeInfo) -> int:
    """The mean over cpu and memory of the integer share left free (kube-scheduler's LeastAllocated)."""
    scores = []
    for name in _FIT:
        requested, total = _requested(task, node, name)
        if total > 0:
            scores.append(0 if requested > total else (total - requested) * _MAX // total)
    return sum(scores) // len(scores) if scores else 0


def most_requested(task: TaskInfo, node: NodeInfo) -> int:
    """The mean over cpu and memory of the integer share in use (kube-scheduler's MostAllocated)."""
    scores = []
    for name in _FIT:
        requested, total = _requested(task, node, name)
        if total > 0:
            scores.append(min(requested, total) * _MAX // total)
    return sum(scores) // len(scores) if scores else 0


def balanced(task: TaskInfo, node: NodeInfo) -> int:
    """100 x (1 - the standard deviation of the fractions in use), truncated (BalancedAllocation).
    The GPU counts only for a task that asks for one, and a resource the node lacks not at all."""
    fractions = []
    for name in (*_FIT, _GPU):
        if name == _GPU and not task.request.get(name):
            continue
        requested, total = _requested(task, node, name)
        if total > 0:
            fractions.append(min(requested / total, 1.0))
    std = 0.0
    if len(fractions) == 2:
        std = abs(fractions[0] - fractions[1]) / 2
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) * (f - mean) for f in fractions) / len(fractions))
    return int((1 - std) * _MAX)


def least_requested_balanced(task: TaskInfo, node: NodeInfo) -> int:
    """``least_requested + balanced`` (the default weights, one each) in one pass over the
    resources: the same integers, the same float operations in the same order."""
    request, idle, allocatable = task.request, node.idle, node.allocatable
    least = []
    fractions = []
    for name in _FIT:
        total = allocatable.get(name, 0)
        if total > 0:
            requested = total - idle.get(name, 0) + request.get(name, 0)
            least.append(0 if requested > total else (total - requested) * _MAX // total)
            fractions.append(min(requested / total, 1.0))
    if request.get(_GPU):
        total = allocatable.get(_GPU, 0)
        if total > 0:
            fractions.append(min((total - idle.get(_GPU, 0) + request[_GPU]) / total, 1.0))
    std = 0.0
    if len(fractions) == 2:
        std = abs(fractions[0] - fractions[1]) / 2
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) * (f - mean) for f in fractions) / len(fractions))
    return (sum(least) // len(least) if least else 0) + int((1 - std) * _MAX)


def _requested_columns(task: TaskInfo, rows: Rows, name: str) -> tuple[Column, Column, Mask | None]:
    """``_requested`` for every node: what is requested, the total to divide by (1 where a node
    has none of the resource), and the nodes that have some (None: every one)."""
    requested, total = rows.used(name) + task.request.get(name, 0), rows.allocatable(name)
    has = total > 0
    return (requested, total, None) if has.all() else (requested, np.where(has, total, 1), has)


def _mean_share(task: TaskInfo, rows: Rows, share: Callable[[Column, Column], Column]) -> Column:
    """The integer mean over cpu and memory of ``share(requested, total)``, over the resources
    each node has (``least_requested``, ``most_requested``)."""
    shares, present = [], []
    for name in _FIT:
        requested, total, has = _requested_columns(task, rows, name)
        shares.append(share(requested, total))
        present.append(has)
    if all(has is None for has in present):  # every node has both: the mean of two
        return (shares[0] + shares[1]) // 2
    summed = count = np.zeros(len(rows), np.int64)
    for found, has in zip(shares, present, strict=True):
        if has is None:
            summed, count = summed + found, count + 1
        else:
            summed, count = summed + np.where(has, found, 0), count + has
    return np.where(count > 0, summed // np.maximum(count, 1), 0)


def least_requested_columns(task: TaskInfo, rows: Rows) -> Column:
    """``least_requested`` for every node, in the same integer operations."""
    return _mean_share(task, rows, lambda r, t: np.where(r > t, 0, (t - r) * _MAX // t))


def most_requested_columns(task: TaskInfo, rows: Rows) -> Column:
    """``most_requested`` for every node, in the same integer operations."""
    return _mean_share(task, rows, lambda r, t: np.minimum(r, t) * _MAX // t)


def balanced_columns(task: TaskInfo, rows: Rows) -> Column | None:
    """``balanced`` for every node, in the same floating-point operations in the same order;
    None when a quotient could round otherwise than Python's."""
    fractions: list[Scores] = []
    present: list[Column | None] = []  # None: every node has the resource
    for name in (*_FIT, _GPU):
        if name == _GPU and not task.request.get(name):
            continue
        if not rows.exact(name, task.request.get(name, 0)):
            return None
        requested, total, has = _requested_columns(task, rows, name)
        fractions.append(np.minimum(requested / total, 1.0))
        present.append(has)
    if all(has is None for has in present):  # one count of fractions for every node
        return np.trunc((1 - _std(fractions)) * _MAX).astype(np.int64)
    count = np.zeros(len(rows), np.int64)
    for has in present:
        count = count + (1 if has is None else has)
    std = np.zeros(len(rows))
    if len(fractions) >= 2:
        # Two present: the one missing (if any) picks the pair; abs() makes their order moot.
        a, b = fractions[0], fractions[1]
        pair = np.abs(a - b)
        if len(fractions) == 3:
            c = fractions[2]
            if present[0] is not None:
                pair = np.where(present[0], pair, np.abs(b - c))
            if present[1] is not None:
                pair = np.where(present[1], pair, np.abs(a - c))
            std = np.where(count == 3, _std(fractions), std)
        std = np.where(count == 2, pair / 2, std)
    return np.trunc((1 - std) * _MAX).astype(np.int64)


def _std(fractions: list[Scores]) -> Scores:
    """``balanced``'s standard deviation of every node's fractions, all of them present."""
    if len(fractions) == 2:
        return np.abs(fractions[0] - fractions[1]) / 2
    if len(fractions) == 3:
        a, b, c = fractions
        mean = (a + b + c) / 3
        da, db, dc = a - mean, b - mean, c - mean
        return np.sqrt((da * da + db * db + dc * dc) / 3)
    return np.zeros(len(fractions[0]))


def build(options: Mapping[str, object]) -> Plugin:
    weights = (
        (integer(options, "leastrequested.weight", 1), least_requested),
        (integer(options, "mostrequested.weight", 0), most_requested),
        (integer(options, "balancedresource.weight", 1), balanced),
    )
    scorers = tuple((w, fn) for w, fn in weights if w)

    columns_of = {least_requested: least_requested_columns, most_requested: most_requested_columns,
                  balanced: balanced_columns}  # fmt: skip

    if scorers == ((1, least_requested), (1, balanced)):

        def score(task: TaskInfo, node: NodeInfo) -> float:
            return float(least_requested_balanced(task, node))

    else:

        def score(task: TaskInfo, node: NodeInfo) -> float:
            return float(sum(w * fn(task, node) for w, fn in scorers))

    def score_columns(task: TaskInfo, rows: Rows) -> Scores | None:
        """``score`` for every node: integer sums, made float."""
        summed = np.zeros(len(rows), np.int64)
        for w, fn in scorers:
            scores = columns_of[fn](task, rows)
            if scores is None:
                return None
            summed = summed + w * scores
        return summed.astype(np.float64)

    def on_open(session: Session) -> None:
        if scorers:
            session.add_node_order(NAME, score, score_columns)

    return Plugin(NAME, on_open)
