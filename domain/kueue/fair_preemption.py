"""Fair-sharing preemption (Kueue's ``fairPreemptions``): candidates are those of classic
preemption (own queue by ``withinClusterQueue``, other queues of the cohort tree by
``reclaimWithinCohort`` while they borrow), visited queue by queue, the queue with the highest
share first. A workload of the preemptor's own queue is simply taken; one of another queue only
if the first strategy holds, else it is kept for the second strategy, tried afterwards on the
retry candidates. A queue is a target only while it borrows. The chosen set is then
minimised by adding back, in reverse, every target the preemptor does not need.
"""

from __future__ import annotations

from domain.kueue import fair_sharing
from domain.kueue.cohort_tree import FlavorResource, QuotaNode
from domain.kueue.cycle_view import KueueSnapshot
from domain.kueue.fair_sharing import STRATEGIES
from domain.kueue.preemption import Target, _candidates, _fits, _is_borrowing
from domain.kueue.reasons import KueueReason as R
from domain.kueue.settings import FairSharing
from domain.kueue.workloads import WorkloadInfo
from domain.lifecycle.workload import ConditionType as C
from domain.objects.kueue import ClusterQueue


class _Search:
    def __init__(self, snap: KueueSnapshot, node: QuotaNode, usage: dict[FlavorResource, int]) -> None:
        self.snap, self.node, self.usage = snap, node, usage
        self.chosen: list[Target] = []

    def fits(self) -> bool:
        return _fits(self.node, self.usage, allow_borrow=True)

    def take(self, target: Target) -> bool:
        self.snap.charge(target.victim, -1)
        self.chosen.append(target)
        return self.fits()

    def shares(self, queue: str) -> tuple[int, int]:
        """(the preemptor's share with its request, the target queue's share), compared below
        their lowest common ancestor."""
        mine, theirs = fair_sharing.compared(self.node, self.snap.tree.queues[queue])
        for fr, amount in self.usage.items():
            self.node.add_usage(fr, amount)
        try:
            return fair_sharing.share(self.snap, mine), fair_sharing.share(self.snap, theirs)
        finally:
            for fr, amount in self.usage.items():
                self.node.add_usage(fr, -amount)

    def target_share(self, queue: str) -> int:
        return fair_sharing.share(self.snap, fair_sharing.compared(self.node, self.snap.tree.queues[queue])[1])

    def furthest(self, groups: dict[str, list[Target]]) -> str:
        """The queue with candidates left whose share (root side first) is the highest; ties by name."""
        ranked = sorted(groups, key=lambda q: fair_sharing.shares(self.snap, self.snap.tree.queues[q]), reverse=True)
        top = fair_sharing.shares(self.snap, self.snap.tree.queues[ranked[0]])
        return min(q for q in ranked if fair_sharing.shares(self.snap, self.snap.tree.queues[q]) == top)


def _grouped(targets: list[Target]) -> dict[str, list[Target]]:
    groups: dict[str, list[Target]] = {}
    for target in targets:
        groups.setdefault(target.victim.admitted_to, []).append(target)
    return groups


def _first(search: _Search, own: str, candidates: list[Target], strategy: str) -> tuple[bool, list[Target]]:
    groups, retry = _grouped(candidates), []
    while groups:
        queue = search.furthest(groups)
        pending = groups[queue]
        if queue == own:
            if search.take(pending.pop(0)):
                return True, retry
        else:
            while pending:
                target = pending.pop(0)
                if not _is_borrowing(search.snap, target):
                    continue  # earlier victims brought the queue back within its nominal quota
                preemptor_new, target_old = search.shares(queue)
                search.snap.charge(target.victim, -1)
                target_new = search.target_share(queue)
                search.snap.charge(target.victim, +1)
                if STRATEGIES[strategy](preemptor_new, target_old, target_new):
                    if search.take(Target(target.victim, R.IN_COHORT_FAIR_SHARING)):
                        return True, retry
                    break  # shares changed: pick the queue again
                retry.append(target)
        if not pending:
            del groups[queue]
    return False, retry


def _second(search: _Search, retry: list[Target], strategy: str) -> bool:
    groups = _grouped(retry)
    while groups:
        queue = search.furthest(groups)
        preemptor_new, target_old = search.shares(queue)
        borrowing = _is_borrowing(search.snap, groups[queue][0])
        if not borrowing or not STRATEGIES[strategy](preemptor_new, target_old, 0):
            del groups[queue]
            continue
        if search.take(Target(groups[queue].pop(0).victim, R.IN_COHORT_FAIR_SHARING)):
            return True
        if not groups[queue]:
            del groups[queue]
    return False


def targets(
    snap: KueueSnapshot,
    cq: ClusterQueue,
    preemptor: WorkloadInfo,
    usage: dict[FlavorResource, int],
    fair: FairSharing,
) -> list[Target] | None:
    """The victims to evict so ``preemptor`` fits, by fair sharing; [] when the workloads
    already being evicted make room; None when the strategies allow no set."""
    name = cq.metadata.name
    search = _Search(snap, snap.tree.queues[name], usage)
    leaving = [w for w in snap.holders() if w.view.is_true(C.EVICTED)]
    for info in leaving:
        snap.charge(info, -1)
    try:
        if search.fits():
            return []
        candidates = [
            t
            for t in _candidates(snap, cq, preemptor, set(usage))
            if t.victim.admitted_to == name or _is_borrowing(snap, t)
        ]
        fits, retry = _first(search, name, candidates, fair.strategies[0])
        if not fits and len(fair.strategies) > 1:
            fits = _second(search, retry, fair.strategies[1])
        if fits:
            for target in reversed(search.chosen[:-1]):
                snap.charge(target.victim, +1)
                if search.fits():
                    search.chosen.remove(target)
                else:
                    snap.charge(target.victim, -1)
        for target in search.chosen:
            snap.charge(target.victim, +1)
        return search.chosen if fits else None
    finally:
        for info in leaving:
            snap.charge(info, +1)
