"""Admission: one head per ClusterQueue per cycle, processed against a snapshot that every
admission updates, so two queues can never both take the same cohort capacity.

StrictFIFO: the head is the first workload; if it does not fit it blocks its queue.
BestEffortFIFO: a workload that does not fit is passed over (parked; it is looked at again
every cycle, when capacity may have been freed) and the next one may be the head.
Heads are processed by the number of cohort levels they borrow through (none first), then by
priority, creation and name. A head that fits is admitted (QuotaReserved and Admitted, with its
admission); one that needs preemption evicts its victims and gets quota only in a later cycle,
once they released it. A head that needs preemption but has no candidates, in a ClusterQueue
that cannot always reclaim what it lends (``reclaimWithinCohort`` other than Any), reserves in
its turn what it could take of its quota, so no other queue borrows it meanwhile (Kueue's
``reserveCapacityForUnreclaimablePreempt``); as Kueue parks such a head and lets the next one of
its queue go in the next cycle, it reserves only when no workload behind it can go.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from domain.kueue import admission_fair_sharing, fair_preemption, fair_sharing, preemption, tas
from domain.kueue.cycle_view import KueueSnapshot
from domain.kueue.flavor_assigner import Assignment, Mode, assign
from domain.kueue.queue import backing_off, waiting_by_queue
from domain.kueue.reasons import KueueReason as R
from domain.kueue.settings import AdmissionFairSharing, FairSharing
from domain.kueue.workload_status import Outbox, admitted, waiting
from domain.kueue.workloads import Quiet, Walk, WorkloadInfo
from domain.lifecycle.workload import ConditionType as C
from domain.objects.kueue import ClusterQueue
from domain.objects.meta import ObjectKey

_PREEMPTED_BECAUSE = {
    R.IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
    R.IN_COHORT_RECLAMATION: "reclamation within the cohort",
    R.IN_COHORT_RECLAIM_WHILE_BORROWING: "reclamation within the cohort while borrowing",
    R.IN_COHORT_FAIR_SHARING: "Fair Sharing within the cohort",
}


@dataclass
class Entry:
    info: WorkloadInfo
    cq: ClusterQueue
    assignment: Assignment
    blocked: bool = False  # needs preemption without candidates: only reserves capacity

    def order(self) -> tuple[int, int, datetime, str]:
        return (self.assignment.borrowing, -self.info.priority, self.info.created, self.info.key)


def run(
    snap: KueueSnapshot, box: Outbox, fair: FairSharing | None = None, afs: AdmissionFairSharing | None = None
) -> None:
    # 1. Gather each ClusterQueue's waiting workloads (with Admission Fair Sharing, the least
    #    used LocalQueue's first); those without a usable queue wait with why.
    queues = waiting_by_queue(snap, box, afs)
    # 2. Nominate at most one head per queue, by its queueing strategy.
    entries = [e for name in sorted(queues) if (e := _nominate(snap, box, snap.queues[name], queues[name], fair))]
    # 3. Process the heads in order against the snapshot, which each admission updates; with
    #    fair sharing the next head is the one whose queue's share with it is lowest now.
    targeted: set[ObjectKey] = set()
    entries.sort(key=Entry.order)
    while entries:
        entry = entries.pop(0) if fair is None else _lowest_share(snap, entries)
        if entry.blocked:
            _reserve(snap, entry)
        else:
            _process(snap, box, entry, targeted, fair=fair, afs=afs)


def _reserve(snap: KueueSnapshot, entry: Entry) -> None:
    """Charge the blocked head's queue with what it could take of its quota, for this cycle."""
    node = snap.tree.queues[entry.cq.metadata.name]
    for fr, amount in entry.assignment.usage().items():
        used, nominal = node.usage.get(fr, 0), node.nominal.get(fr, 0)
        if entry.assignment.borrowing > 0:
            limit = node.borrowing_limit.get(fr)
            reserved = amount if limit is None else min(amount, nominal + limit - used)
        else:
            reserved = min(amount, nominal - used)
        if reserved > 0:
            node.add_usage(fr, reserved)


def _lowest_share(snap: KueueSnapshot, entries: list[Entry]) -> Entry:
    def key(entry: Entry) -> tuple[int, ...]:
        return fair_sharing.shares_with(snap, snap.tree.queues[entry.cq.metadata.name], entry.assignment.usage())

    best = min(range(len(entries)), key=lambda i: (key(entries[i]), i))
    return entries.pop(best)


def _targets(
    snap: KueueSnapshot, cq: ClusterQueue, info: WorkloadInfo, assignment: Assignment, fair: FairSharing | None
) -> list[preemption.Target] | None:
    if assignment.targets_known:
        return assignment.targets
    if fair is not None:
        return fair_preemption.targets(snap, cq, info, assignment.usage(), fair)
    return preemption.targets(snap, cq, info, assignment.usage())


def _can_go(
    snap: KueueSnapshot, cq: ClusterQueue, info: WorkloadInfo, assignment: Assignment, fair: FairSharing | None
) -> bool | None:
    """True when the workload can go now; None when it needs preemption without candidates."""
    if assignment.mode >= Mode.BORROW:
        return True
    if assignment.mode is not Mode.PREEMPT:
        return False
    return True if _targets(snap, cq, info, assignment, fair) is not None else None


def _nominate(
    snap: KueueSnapshot, box: Outbox, cq: ClusterQueue, infos: Iterator[WorkloadInfo], fair: FairSharing | None
) -> Entry | None:
    strict = cq.spec.queueing_strategy == "StrictFIFO"
    # One LocalQueue's walk (not a merge, not StrictFIFO) passes over the runs its last walk found quiet.
    walk = infos if isinstance(infos, Walk) and not strict else None
    runs = _Runs(walk) if walk is not None else None
    try:
        return _walk(snap, box, cq, infos, fair, strict=strict, runs=runs)
    finally:
        if runs is not None:
            runs.keep()


def _walk(
    snap: KueueSnapshot,
    box: Outbox,
    cq: ClusterQueue,
    infos: Iterator[WorkloadInfo],
    fair: FairSharing | None,
    *,
    strict: bool,
    runs: _Runs | None,
) -> Entry | None:
    failed: dict[str, str] = {}  # shapes that did not fit this cycle, and why
    blocked: Entry | None = None  # the first head that needs preemption without candidates
    for info in infos:
        message = failed.get(info.shape)
        if runs is not None:
            if runs.passed(failed, info, message):
                continue
        elif message is not None and _says(info, message):
            continue  # its shape failed and its status says so already: nothing to write, whatever else holds
        if info.key in box.touched or backing_off(snap, info):
            continue
        if message is None:
            assignment = assign(snap, info, cq, fair)
            go = _can_go(snap, cq, info, assignment, fair)
            if go:
                return Entry(info, cq, assignment)
            if go is None and blocked is None and cq.spec.preemption.reclaim_within_cohort != "Any":
                blocked = Entry(info, cq, assignment, blocked=True)
            message = failed[info.shape] = assignment.message
        if not _says(info, message):
            view = waiting(info.view, R.PENDING, message)
            if view is info.view:  # it says so already: so it will next cycle, while the view and message hold
                info.said = (view, message)
            else:
                box.status(info, view, R.PENDING)
        if strict:
            message = f"Waiting behind the head of StrictFIFO ClusterQueue {cq.metadata.name}"
            for behind in infos:
                if not backing_off(snap, behind):
                    box.status(behind, waiting(behind.view, R.PENDING, message), R.PENDING)
            return blocked
    return blocked


def _says(info: WorkloadInfo, message: str) -> bool:
    """Whether ``info``'s status says already that it waits with ``message`` (``waiting`` would
    give its view back): then it has nothing to write, whether or not it is touched or backing off."""
    said = info.said
    return said is not None and said[0] is info.view and said[1] == message


class _Runs:
    """The runs of a walk whose workloads have nothing to write: their shape failed and their
    status says so already. They are kept on the queue (``Quiet``), and the next walk passes
    over one when it reaches it with the same messages for those shapes: each of its workloads
    would be passed one by one (none entered, left or changed inside it since)."""

    __slots__ = ("messages", "runs", "start", "walk")

    def __init__(self, walk: Walk) -> None:
        self.walk = walk
        self.start: int | None = None  # where the current run began
        self.messages: dict[str, str] = {}
        self.runs: dict[int, Quiet] = {}

    def passed(self, failed: dict[str, str], info: WorkloadInfo, message: str | None) -> bool:
        """Whether ``info`` (just read) is passed: at the start of a quiet run of the last walk,
        reached with its messages (the walk then goes on after the run), or with nothing to
        write itself."""
        at = self.walk.index - 1
        last = self.walk.queued.quiet.get(at)  # kept in place as the queue changes
        if last is not None and all(failed.get(s) == m for s, m in last.messages.items()):
            self._open(at).update(last.messages)
            self.walk.index = last.end
            return True
        if message is not None and _says(info, message):
            self._open(at)[info.shape] = message
            return True
        self._close(at)
        return False

    def _open(self, at: int) -> dict[str, str]:
        """The messages of the run going on, one begun at ``at`` if none is."""
        if self.start is None:
            self.start, self.messages = at, {}
        return self.messages

    def _close(self, end: int) -> None:
        if self.start is not None:
            self.runs[self.start] = Quiet(self.start, end, self.messages)
            self.start = None

    def keep(self) -> None:
        """At the walk's end: its runs are what the next walk may pass over."""
        self._close(self.walk.index)
        self.walk.queued.quiet = self.runs


def _backoff_ended(info: WorkloadInfo) -> bool:
    requeued = info.view.condition(C.REQUEUED)
    return requeued is not None and requeued.status == "False" and info.view.requeue_at is not None


def _process(
    snap: KueueSnapshot,
    box: Outbox,
    entry: Entry,
    targeted: set[ObjectKey],
    *,
    fair: FairSharing | None,
    afs: AdmissionFairSharing | None,
) -> None:
    info, cq = entry.info, entry.cq
    assignment = assign(snap, info, cq, fair)
    if assignment.mode >= Mode.BORROW:
        flavors = {f for psa in assignment.pod_sets for f in psa.flavors.values()}
        admission = assignment.admission(cq.metadata.name)
        view = admitted(info.view, cq.metadata.name, admission, _backoff_ended(info), cq.spec.checks_for(flavors))
        if box.status(info, view, R.QUOTA_RESERVED):
            snap.charge(info, +1)
            if afs is not None and admission_fair_sharing.applies(cq):
                admission_fair_sharing.penalize(snap, afs, info)
            full = {p.name: p.per_pod for p in info.pod_sets}
            for psa in assignment.pod_sets:
                if psa.placement is not None:
                    tas.reserve(snap, psa.placement, full[psa.pod_set.name])
        return
    found = _targets(snap, cq, info, assignment, fair) if assignment.mode is Mode.PREEMPT else None
    if found is None:
        box.status(info, waiting(info.view, R.PENDING, assignment.message), R.PENDING)
        return
    if any(t.victim.key in targeted for t in found):
        return  # another head of this cycle preempts the same workloads: try again next cycle
    for target in found:
        targeted.add(target.victim.key)
        because = _PREEMPTED_BECAUSE[target.reason]
        message = f"Preempted to accommodate a workload ({info.key}) due to {because}"
        box.evict(target.victim, R.PREEMPTED, message, ("True", target.reason, message), preemptor=info.key)
    pending = (
        f"{assignment.message}. Pending the preemption of {len(found)} workload(s)"
        if found
        else (f"{assignment.message}. Waiting for preempted workloads to release their quota")
    )
    box.status(info, waiting(info.view, R.PENDING, pending), R.PENDING)
