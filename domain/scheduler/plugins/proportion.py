"""proportion: each queue deserves a share of the cluster by ``spec.weight`` (water-filling:
what a queue does not ask for goes to the others), never above its ``capability`` and never
below its ``guarantee``. A queue may not allocate past what it deserves, and may enqueue a gang
only while its minimum fits the queue's real capability."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from domain.quantity import ResourceList
from domain.reasons import Reason, Verdict
from domain.scheduler.extension_points import Vote
from domain.scheduler.infos import ROOT, JobInfo, QueueInfo, TaskInfo
from domain.scheduler.queue_shares import (
    Ledger,
    describe,
    over_after,
    priority,
    real_capabilities,
    reclaimable_beyond_deserved,
    requests,
    water_fill,
)
from domain.scheduler.session import Key, Plugin, Session
from domain.scheduler.snapshot import Snapshot

NAME = "proportion"
KEPT = "proportion-shares"  # the last session's ``_Shares``


def _leaves(snapshot: Snapshot) -> list[QueueInfo]:
    return [q for q in snapshot.queues.values() if q.name != ROOT and not q.children]


def deserved_shares(snapshot: Snapshot, real: Mapping[str, ResourceList]) -> dict[str, ResourceList]:
    """The whole cluster, water-filled by weight among the leaf queues."""
    return water_fill(_leaves(snapshot), snapshot.total, requests(snapshot), real)


@dataclass(slots=True, eq=False)
class _Shares:
    """The last session's water-filling: what it read, and the shares and limits it gave."""

    read: tuple[object, ...]
    deserved: dict[str, ResourceList]
    limits: dict[str, ResourceList]


def _shares(session: Session, real: dict[str, ResourceList]) -> tuple[dict[str, ResourceList], dict[str, ResourceList]]:
    """``deserved_shares``, and the limits they set (a share of the whole cluster is no limit: then
    the nodes say why a task does not fit). Water-filling reads only the leaf queues' names,
    weights and guarantees, the cluster's total, the queues' requests and ``real``: when all are
    as the last session read them (in about half the cycles), its shares are these (read only)."""
    snapshot = session.snapshot
    leaves, total = _leaves(snapshot), dict(snapshot.total)
    read = ([(q.name, q.weight, dict(q.guarantee)) for q in leaves], total, requests(snapshot), real)
    last = session.kept.get(KEPT)
    if isinstance(last, _Shares) and last.read == read:
        return last.deserved, last.limits
    deserved = water_fill(leaves, total, read[2], real)
    limits = {name: {n: a for n, a in shares.items() if a < total.get(n, 0)} for name, shares in deserved.items()}
    session.kept[KEPT] = _Shares(read, deserved, limits)
    return deserved, limits


def share(allocated: Mapping[str, int], deserved: Mapping[str, int]) -> float:
    """The largest fraction of its deserved amount a queue uses (1 when it deserves none of it)."""
    shares = [a / deserved[n] if deserved.get(n) else 1.0 for n, a in allocated.items() if a > 0]
    return max(shares, default=0.0)


def build(options: Mapping[str, object]) -> Plugin:
    def on_open(session: Session) -> None:
        snapshot = session.snapshot
        ledger = Ledger(snapshot, roll_up=False)
        real = real_capabilities(snapshot)
        deserved, limits = _shares(session, real)

        def order(queue: QueueInfo) -> Key:
            return priority(queue), share(ledger.used[queue.name], deserved.get(queue.name, {}))

        def allocatable(queue: QueueInfo, task: TaskInfo) -> Verdict | None:
            limit = limits.get(queue.name)
            if not limit:
                return None
            short = over_after(ledger.used[queue.name], task.request, limit)
            if not short:
                return None
            return Verdict(
                Reason.QUEUE_OVER_QUOTA, f"queue {queue.name} is at its deserved share: {describe(short)}", NAME
            )

        def enqueueable(job: JobInfo) -> tuple[Vote, Verdict | None]:
            if not job.min_resources:
                return Vote.PERMIT, None
            short = ledger.enqueue_shortfall(job, job.queue, real[job.queue])
            if not short:
                return Vote.PERMIT, None
            message = f"queue {job.queue} resource quota insufficient: insufficient {describe(short)}"
            return Vote.REJECT, Verdict(Reason.QUEUE_OVER_QUOTA, message, NAME)

        def reclaimable(reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
            return reclaimable_beyond_deserved(
                snapshot, ledger.used, reclaimer, candidates, lambda name: deserved.get(name, {})
            )

        session.add_queue_order(NAME, order)
        session.add_allocatable(NAME, allocatable)
        session.add_job_enqueueable(NAME, enqueueable)
        session.add_job_enqueued(NAME, ledger.enqueued)
        session.add_allocated(NAME, ledger.allocated)
        session.add_reclaimable(NAME, reclaimable)

    return Plugin(NAME, on_open)
