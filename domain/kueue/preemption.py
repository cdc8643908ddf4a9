"""Preemption: the smallest set of admitted workloads whose eviction lets a preemptor fit, by
its ClusterQueue's policies (Kueue's classic preemption).

* ``withinClusterQueue``: Never, LowerPriority, LowerOrNewerEqualPriority (same priority and
  created later);
* ``reclaimWithinCohort``: Never, LowerPriority, Any: workloads of other queues of the same
  cohort tree, only while their queue borrows the resource;
* ``borrowWithinCohort``: LowerPriority (up to ``maxPriorityThreshold``): the preemptor may
  itself borrow while reclaiming.

Candidates from other queues go first, then lower priority, then the most recently admitted.
They are removed one by one until the preemptor fits, then added back in reverse where the
preemptor still fits without them: the set is minimal. Workloads already evicted but still
holding quota are never candidates; if their release alone makes room, there are no new
victims and the preemptor waits for them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from domain.kueue.quota import FlavorResource, QuotaNode
from domain.kueue.snapshot import KueueSnapshot
from domain.kueue.workloads import WorkloadInfo
from domain.objects.kueue import ClusterQueue


@dataclass(frozen=True, slots=True)
class Target:
    victim: WorkloadInfo
    reason: str  # the Preempted condition's reason: InClusterQueue, InCohortReclamation, ...


def _root(node: QuotaNode) -> QuotaNode:
    return ([node, *node.ancestors()])[-1]


def _fits(node: QuotaNode, usage: dict[FlavorResource, int], allow_borrow: bool) -> bool:
    return all(
        amount <= node.available(fr) and (allow_borrow or not node.is_borrowing(fr, amount))
        for fr, amount in usage.items()
    )


def _in_queue_ok(policy: str, preemptor: WorkloadInfo, candidate: WorkloadInfo) -> bool:
    if policy == "LowerPriority":
        return candidate.priority < preemptor.priority
    if policy == "LowerOrNewerEqualPriority":
        return candidate.priority < preemptor.priority or (
            candidate.priority == preemptor.priority and candidate.created > preemptor.created
        )
    return False


def _reclaim_ok(cq: ClusterQueue, preemptor: WorkloadInfo, candidate: WorkloadInfo, borrowing: bool) -> bool:
    policy = cq.spec.preemption
    if borrowing:
        within = policy.borrow_within_cohort
        threshold = within.max_priority_threshold if within else None
        return candidate.priority < preemptor.priority and (threshold is None or candidate.priority <= threshold)
    if policy.reclaim_within_cohort == "Any":
        return True
    return policy.reclaim_within_cohort == "LowerPriority" and candidate.priority < preemptor.priority


def _candidates(
    snap: KueueSnapshot, cq: ClusterQueue, preemptor: WorkloadInfo, frs: set[FlavorResource], borrowing: bool
) -> list[Target]:
    name = cq.metadata.name
    node = snap.tree.queues[name]
    root = _root(node)
    out: list[tuple[tuple[int, int, int, str], Target]] = []
    for info in snap.holders():
        if info.view.is_true("Evicted") or not frs & set(info.usage()):
            continue
        other = snap.tree.queues[info.admitted_to]
        if info.admitted_to == name:
            if not _in_queue_ok(cq.spec.preemption.within_cluster_queue, preemptor, info):
                continue
            reason = "InClusterQueue"
        elif other is not node and _root(other) is root and cq.spec.preemption.reclaim_within_cohort != "Never":
            if not _reclaim_ok(cq, preemptor, info, borrowing):
                continue
            reason = "InCohortReclaimWhileBorrowing" if borrowing else "InCohortReclamation"
        else:
            continue
        status = snap.state.status_of(info.obj)
        since = status.since_seq if status is not None else 0
        rank = (0 if info.admitted_to != name else 1, info.priority, -since, info.key)
        out.append((rank, Target(info, reason)))
    return [t for _, t in sorted(out, key=lambda item: item[0])]


def _is_borrowing(snap: KueueSnapshot, target: Target) -> bool:
    node = snap.tree.queues[target.victim.admitted_to]
    return any(node.is_borrowing(fr) for fr in target.victim.usage())


def _select(
    snap: KueueSnapshot,
    node: QuotaNode,
    usage: dict[FlavorResource, int],
    candidates: Iterable[Target],
    *,
    allow_borrow: bool,
    own: str,
) -> list[Target] | None:
    chosen: list[Target] = []
    for target in candidates:
        if target.victim.admitted_to != own and not _is_borrowing(snap, target):
            continue  # reclaim only what another queue borrows
        snap.charge(target.victim, -1)
        chosen.append(target)
        if _fits(node, usage, allow_borrow):
            break
    else:
        for target in chosen:
            snap.charge(target.victim, +1)
        return None
    for target in reversed(chosen[:-1]):
        snap.charge(target.victim, +1)
        if _fits(node, usage, allow_borrow):
            chosen.remove(target)
        else:
            snap.charge(target.victim, -1)
    for target in chosen:
        snap.charge(target.victim, +1)
    return chosen


def targets(
    snap: KueueSnapshot, cq: ClusterQueue, preemptor: WorkloadInfo, usage: dict[FlavorResource, int]
) -> list[Target] | None:
    """The victims to evict so ``preemptor`` (needing ``usage``) fits; [] when the workloads
    already being evicted make room; None when no allowed set does."""
    name = cq.metadata.name
    node = snap.tree.queues[name]
    leaving = [w for w in snap.holders() if w.view.is_true("Evicted")]
    for info in leaving:
        snap.charge(info, -1)
    try:
        if _fits(node, usage, allow_borrow=True):
            return []
        frs = set(usage)
        within_nominal = all(amount <= node.nominal.get(fr, 0) for fr, amount in usage.items())
        policy = cq.spec.preemption.borrow_within_cohort
        attempts: list[tuple[bool, bool, bool]] = []  # (reclaim from others, others while borrowing, allow borrow)
        if within_nominal:
            attempts.append((True, False, False))
        if policy is not None and policy.policy == "LowerPriority":
            attempts.append((True, True, True))
        attempts.append((False, False, True))
        for others, borrowing, allow_borrow in attempts:
            candidates = [
                t for t in _candidates(snap, cq, preemptor, frs, borrowing) if others or t.victim.admitted_to == name
            ]
            chosen = _select(snap, node, usage, candidates, allow_borrow=allow_borrow, own=name)
            if chosen is not None:
                return chosen
        return None
    finally:
        for info in leaving:
            snap.charge(info, +1)
