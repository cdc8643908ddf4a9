"""Preemption: the smallest set of admitted workloads whose eviction lets a preemptor fit, by
its ClusterQueue's policies (Kueue's classic preemption).

* ``withinClusterQueue``: Never, LowerPriority, LowerOrNewerEqualPriority (same priority and
  created later);
* ``reclaimWithinCohort``: Never, LowerPriority, Any: workloads of other queues of the same
  cohort tree, only while their queue borrows the resource;
* ``borrowWithinCohort``: LowerPriority (up to ``maxPriorityThreshold``): the preemptor may
  itself borrow while reclaiming from a workload of lower priority; any other workload of
  another queue may be reclaimed only if the preemptor then fits without borrowing.

Candidates from other queues go first, then lower priority, then the most recent quota
reservation (the ``QuotaReserved`` condition's time), then UID. They are removed one by one
until the preemptor fits, then added back in reverse where the preemptor still fits without
them: the set is minimal. Which attempts are made (the preemptor allowed to borrow or not)
depends, as in Kueue, on whether the ClusterQueue's usage is under its nominal quota in the
resources needing preemption. Workloads already evicted but still holding quota are never
candidates; if their release alone makes room, there are no new victims and the preemptor
waits for them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from domain.kueue.cohort_tree import FlavorResource, QuotaNode
from domain.kueue.cycle_view import KueueSnapshot
from domain.kueue.reasons import KueueReason as R
from domain.kueue.workloads import WorkloadInfo
from domain.lifecycle.workload import HOLDS_QUOTA
from domain.lifecycle.workload import ConditionType as C
from domain.objects.kueue import ClusterQueue


@dataclass(frozen=True, slots=True)
class Target:
    victim: WorkloadInfo
    reason: str  # the Preempted condition's reason: InClusterQueue, InCohortReclamation, ...
    while_borrowing: bool = True  # may be taken while the preemptor borrows (Kueue's ReclaimWithoutBorrowing: no)


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
    return policy == "Any"


def borrow_within_cohort_forbidden(cq: ClusterQueue) -> bool:
    within = cq.spec.preemption.borrow_within_cohort
    return within is None or within.policy == "Never"


def _reclaimable_while_borrowing(cq: ClusterQueue, preemptor: WorkloadInfo, candidate: WorkloadInfo) -> bool:
    """Whether the preemptor may borrow while reclaiming ``candidate`` (``borrowWithinCohort``)."""
    if borrow_within_cohort_forbidden(cq) or candidate.priority >= preemptor.priority:
        return False
    within = cq.spec.preemption.borrow_within_cohort
    threshold = within.max_priority_threshold if within else None
    return threshold is None or candidate.priority <= threshold


def reserved_at(snap: KueueSnapshot, info: WorkloadInfo) -> datetime:
    """When ``info`` got its quota reservation: the ``QuotaReserved`` condition's time as the
    cluster shows it, else the scheduler clock at which its machine entered a quota-holding
    phase (our own reservation, or the first sight of a reserved workload), else now (as Kueue
    does for a condition without a time)."""
    status = snap.state.status_of(info.obj)
    if status is None or status.workload is None:  # the cluster's status is in force
        found = next((c for c in info.obj.status.conditions if c.type == C.QUOTA_RESERVED), None)
        if found is not None and found.status == "True" and found.last_transition_time is not None:
            return found.last_transition_time
    if status is not None and status.phase in HOLDS_QUOTA and status.since is not None:
        return status.since
    return snap.clock


def _candidates(
    snap: KueueSnapshot, cq: ClusterQueue, preemptor: WorkloadInfo, frs: set[FlavorResource]
) -> list[Target]:
    name = cq.metadata.name
    node = snap.tree.queues[name]
    root = _root(node)
    policy = cq.spec.preemption
    out: list[tuple[tuple[int, int, float, str], Target]] = []
    in_tree: dict[str, bool] = {}  # per queue: in the preemptor's cohort tree
    for info in snap.holders():
        if info.view.is_true(C.EVICTED) or frs.isdisjoint(info.usage()):
            continue
        queue = info.admitted_to
        if queue not in in_tree:
            other = snap.tree.queues[queue]
            in_tree[queue] = other is not node and _root(other) is root
        if queue == name:
            if not _in_queue_ok(policy.within_cluster_queue, preemptor, info):
                continue
            target = Target(info, R.IN_CLUSTER_QUEUE)
        elif in_tree[queue] and policy.reclaim_within_cohort != "Never":
            if not _in_queue_ok(policy.reclaim_within_cohort, preemptor, info):
                continue
            if _reclaimable_while_borrowing(cq, preemptor, info):
                target = Target(info, R.IN_COHORT_RECLAIM_WHILE_BORROWING)
            else:
                target = Target(info, R.IN_COHORT_RECLAMATION, while_borrowing=False)
        else:
            continue
        since = reserved_at(snap, info).timestamp()
        rank = (0 if queue != name else 1, info.priority, -since, info.obj.metadata.uid or "")
        out.append((rank, target))
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


def _attempts(cq: ClusterQueue, under_nominal: bool, candidates: list[Target]) -> list[bool]:
    """Whether each attempt lets the preemptor borrow, in order (Kueue's classical preemption):
    only borrowing when no other queue has candidates, or when borrowing within the cohort is
    forbidden and the queue's usage is not under its nominal quota; else both."""
    name = cq.metadata.name
    others = any(t.victim.admitted_to != name for t in candidates)
    forbidden = borrow_within_cohort_forbidden(cq)
    if not others or (forbidden and not under_nominal):
        return [True]
    return [False, True] if forbidden else [True, False]


def targets(
    snap: KueueSnapshot, cq: ClusterQueue, preemptor: WorkloadInfo, usage: dict[FlavorResource, int]
) -> list[Target] | None:
    """The victims to evict so ``preemptor`` (needing ``usage``) fits; [] when the workloads
    already being evicted make room; None when no allowed set does."""
    name = cq.metadata.name
    node = snap.tree.queues[name]
    needing = {fr for fr, amount in usage.items() if amount > node.available(fr)} or set(usage)
    under_nominal = all(node.usage.get(fr, 0) < node.nominal.get(fr, 0) for fr in needing)
    leaving = [w for w in snap.holders() if w.view.is_true(C.EVICTED)]
    for info in leaving:
        snap.charge(info, -1)
    try:
        if _fits(node, usage, allow_borrow=True):
            return []
        candidates = _candidates(snap, cq, preemptor, needing)
        for allow_borrow in _attempts(cq, under_nominal, candidates):
            allowed = [t for t in candidates if not allow_borrow or t.while_borrowing or t.victim.admitted_to == name]
            chosen = _select(snap, node, usage, allowed, allow_borrow=allow_borrow, own=name)
            if chosen is not None:
                return chosen
        return None
    finally:
        for info in leaving:
            snap.charge(info, +1)
