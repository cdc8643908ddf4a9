"""capacity: queues with elastic quotas. ``capability`` is a hard cap, ``guarantee`` is kept
for the queue, ``deserved`` orders queues by how much of it they use. With
``enableHierarchy`` queues form a tree under ``root``: a child inherits the limits its parent
sets and it does not, and neither a placement nor an enqueued minimum may take any ancestor
past its real capability (Volcano's hierarchical capacity plugin)."""

from __future__ import annotations

from collections.abc import Mapping

from domain import quantity
from domain.quantity import ResourceList
from domain.reasons import Reason, Verdict
from domain.scheduler.extension_points import Vote
from domain.scheduler.quota import (
    Ledger,
    describe,
    lower,
    real_capabilities,
    reclaimable_beyond_deserved,
    requested,
)
from domain.scheduler.session import Key, Plugin, Session
from domain.scheduler.snapshot import ROOT, JobInfo, QueueInfo, Snapshot, TaskInfo

NAME = "capacity"


def _tree(snapshot: Snapshot) -> dict[str, ResourceList]:
    """Top-down: a child's real capability is its own (inherited where unset), cut to what its
    parent has left after the siblings' guarantees; root is unbounded unless it says otherwise."""
    out: dict[str, ResourceList] = {ROOT: dict(snapshot.queues[ROOT].capability)}
    pending = [ROOT]
    while pending:
        parent = snapshot.queues[pending.pop()]
        guarantees = quantity.sum_lists(snapshot.queues[c].guarantee for c in parent.children)
        for name in sorted(parent.children):
            if name in out:
                continue  # a cycle in spec.parent: the first path wins
            child = snapshot.queues[name]
            room = {n: a - guarantees.get(n, 0) + child.guarantee.get(n, 0) for n, a in out[parent.name].items()}
            out[name] = lower({**out[parent.name], **child.capability}, room)
            pending.append(name)
    return out


def build(options: Mapping[str, object]) -> Plugin:
    hierarchy = bool(options.get("enableHierarchy", False))

    def on_open(session: Session) -> None:
        snapshot = session.snapshot
        ledger = Ledger(snapshot, roll_up=hierarchy)
        real = _tree(snapshot) if hierarchy else real_capabilities(snapshot)

        def deserved(queue: QueueInfo) -> ResourceList:
            return {
                n: max(v, queue.guarantee.get(n, 0)) for n, v in lower(queue.deserved, real.get(queue.name, {})).items()
            }

        def order(queue: QueueInfo) -> Key:
            want = deserved(queue)
            if not want:
                return (1.0, 1.0)  # best-effort queues (no deserved) go after those with one
            used = ledger.used[queue.name]
            return (max((a / want[n] if want.get(n) else 1.0 for n, a in used.items() if a > 0), default=0.0), 0.0)

        # A queue not reachable from root in the tree has no limits of its own: it is unbounded.
        chains = {q: [(name, real[name]) for name in ledger.chain(q) if name in real] for q in snapshot.queues}

        def limits(queue: str) -> list[tuple[str, ResourceList]]:
            return chains.get(queue, [])

        def allocatable(queue: QueueInfo, task: TaskInfo) -> Verdict | None:
            request = task.request
            dims = requested(task)
            for name, limit in limits(queue.name):
                used = ledger.used[name]
                short = sorted(n for n in dims if n in limit and used.get(n, 0) + request[n] > limit[n])
                if short:
                    message = f"queue {name} would exceed its capability: {describe(short)}"
                    return Verdict(Reason.QUEUE_OVER_QUOTA, message, NAME)
            return None

        def enqueueable(job: JobInfo) -> tuple[Vote, Verdict | None]:
            if not job.min_resources:
                return Vote.PERMIT, None
            for name, limit in limits(job.queue):
                short = ledger.enqueue_shortfall(job, name, limit)
                if short:
                    message = f"queue {name} resource quota insufficient: insufficient {describe(short)}"
                    return Vote.REJECT, Verdict(Reason.QUEUE_OVER_QUOTA, message, NAME)
            return Vote.PERMIT, None

        def reclaimable(reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
            return reclaimable_beyond_deserved(
                snapshot, ledger.used, reclaimer, candidates, lambda name: deserved(snapshot.queues[name])
            )

        session.add_queue_order(NAME, order)
        session.add_allocatable(NAME, allocatable)
        session.add_job_enqueueable(NAME, enqueueable)
        session.add_job_enqueued(NAME, ledger.enqueued)
        session.add_allocated(NAME, ledger.allocated)
        session.add_reclaimable(NAME, reclaimable)

    return Plugin(NAME, on_open)
