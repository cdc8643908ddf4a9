"""Fair sharing (``kueue: {fairSharing: {enable: true}}``): Kueue's weighted dominant
resource share (DRS) of ClusterQueues and Cohorts, the admission order by lowest share, and
fair-sharing preemption within a cohort.

The share of a node with a parent is, over resources, the largest of (usage above its subtree
quota, summed over flavors) / (what its parent could lend of that resource), in thousandths,
divided by its ``fairSharing.weight`` (default 1). Weight 0 is an infinite share while
borrowing, above every finite share; two such shares compare by their unweighted ratios (as
Kueue's ``CompareDRS``), so the share is encoded as ``INFINITE`` plus the unweighted ratio.
Shares are compared level by level from the root, as Kueue's tournament does.

Preemption (``preemptionStrategies``, default LessThanOrEqualToFinalShare then
LessThanInitialShare) visits the candidate queues furthest over their share first; a workload
of another queue is taken only if the preemptor's share with its request is at most the
target's share after the removal (first strategy) or below its share before it (second).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from domain.kueue.cohort_tree import FlavorResource, QuotaNode
from domain.kueue.cycle_view import KueueSnapshot

INFINITE = 1 << 62
Strategy = Callable[[int, int, int], bool]
STRATEGIES: dict[str, Strategy] = {
    "LessThanOrEqualToFinalShare": lambda preemptor_new, _target_old, target_new: preemptor_new <= target_new,
    "LessThanInitialShare": lambda preemptor_new, target_old, _target_new: preemptor_new < target_old,
}


def weight(snap: KueueSnapshot, node: QuotaNode) -> int:
    """The node's ``fairSharing.weight`` in thousandths (default 1000)."""
    obj = (snap.queues if node.is_queue else snap.cohorts).get(node.name)
    fair = obj.spec.fair_sharing if obj is not None else None
    return 1000 if fair is None or fair.weight is None else int(fair.weight)


def share(snap: KueueSnapshot, node: QuotaNode) -> int:
    """The node's weighted dominant resource share now (0 at the root or when not borrowing)."""
    parent = node.parent
    if parent is None:
        return 0
    borrowed: dict[str, int] = {}
    for fr, quota in node.subtree.items():
        above = node.usage.get(fr, 0) - quota
        if above > 0:
            borrowed[fr[1]] = borrowed.get(fr[1], 0) + above
    if not borrowed:
        return 0
    lendable: dict[str, int] = {}
    for fr in parent.subtree:
        lendable[fr[1]] = lendable.get(fr[1], 0) + max(0, parent.potential(fr))
    ratio = max((amount * 1000 // lendable[r] for r, amount in borrowed.items() if lendable.get(r, 0) > 0), default=0)
    node_weight = weight(snap, node)
    if node_weight <= 0:
        return INFINITE + ratio
    return ratio * 1000 // node_weight


def path(node: QuotaNode) -> list[QuotaNode]:
    """The node and its ancestors below the root, root side first."""
    return [n for n in reversed([node, *node.ancestors()]) if n.parent is not None]


def shares(snap: KueueSnapshot, node: QuotaNode) -> tuple[int, ...]:
    """The shares along the path from the root down to ``node``: the tournament key."""
    return tuple(share(snap, n) for n in path(node))


def shares_with(snap: KueueSnapshot, node: QuotaNode, usage: Mapping[FlavorResource, int]) -> tuple[int, ...]:
    """``shares`` as if ``usage`` were added to ``node``."""
    for fr, amount in usage.items():
        node.add_usage(fr, amount)
    try:
        return shares(snap, node)
    finally:
        for fr, amount in usage.items():
            node.add_usage(fr, -amount)


def compared(a: QuotaNode, b: QuotaNode) -> tuple[QuotaNode, QuotaNode]:
    """The ancestors-or-selves of ``a`` and ``b`` that are children of their lowest common
    ancestor: the nodes whose shares fair-sharing preemption compares."""
    a_path, b_path = [*reversed(a.ancestors()), a], [*reversed(b.ancestors()), b]
    index = 0
    while index < min(len(a_path), len(b_path)) - 1 and a_path[index] is b_path[index]:
        index += 1
    return a_path[index], b_path[index]
