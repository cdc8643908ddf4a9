"""Queue rules of SEEDS S2, applied to each cycle's snapshot before the session opens.

* A child queue may be created under a parent that already has a child; under a parent with
  no child yet, it is refused when the parent itself has allocated pods, since a queue that
  runs jobs must not silently become an inner node (Volcano #4031/#4033). A child whose
  guarantee would take its siblings' past the parent's is refused too.
* Only leaf queues run jobs: a job submitted to a queue with children, or to a refused queue,
  is rejected on its own and leaves the snapshot, so it blocks nobody else.

A refusal is a ``Reject`` decision, made once; a refused queue stays refused (its machine).
"""

from __future__ import annotations

from collections.abc import Callable

from domain import quantity
from domain.decisions import Decision, ObjectRef, Reject
from domain.lifecycle.queue import QueuePhase
from domain.reasons import Reason
from domain.recorded import RejectWithdrawn
from domain.scheduler.infos import PLACED, ROOT, QueueInfo
from domain.scheduler.snapshot import Snapshot

Record = Callable[[Reject | RejectWithdrawn], bool]
"""How a cycle keeps a refusal: the state's ``record`` (True when it takes effect now); a dry
run (``volcano_cycle.dry_run``) keeps none."""


def _own_pods(snapshot: Snapshot, queue: str) -> int:
    return sum(1 for j in snapshot.jobs.values() if j.queue == queue for t in j.tasks if t.status in PLACED)


def _refusal(snapshot: Snapshot, queue: QueueInfo, accepted: list[QueueInfo]) -> str:
    parent = snapshot.queues.get(queue.parent)
    if parent is None or parent.name == ROOT:
        return ""
    siblings = [q for q in accepted if q.parent == parent.name]
    pods = _own_pods(snapshot, parent.name)
    if not siblings and pods:
        return (
            f"queue {parent.name} cannot be the parent queue of queue {queue.name} "
            f"because it has allocated Pods: {pods}"
        )
    if parent.guarantee:
        total = quantity.sum_lists([queue.guarantee, *(q.guarantee for q in siblings)])
        short = quantity.shortfall(total, parent.guarantee)
        if short:
            return f"the guarantees of queue {parent.name}'s children would exceed its own in {', '.join(short)}"
    return ""


def refuse_queues(cluster: str, record: Record, snapshot: Snapshot, seq: int) -> list[Decision]:
    out = []
    accepted: list[QueueInfo] = []
    for queue in sorted(snapshot.queues.values(), key=lambda q: (q.created, q.name)):
        if queue.queue is None or queue.state is QueuePhase.REJECTED:
            continue
        message = _refusal(snapshot, queue, accepted)
        if not message:
            accepted.append(queue)
            continue
        queue.state = QueuePhase.REJECTED
        snapshot.queues[queue.parent].children.remove(queue.name)
        reject = Reject.make(cluster, seq, ObjectRef.of(queue.queue), Reason.QUEUE_REFUSED.value, message=message)
        if record(reject):
            out.append(reject)
    return out


def reject_jobs(cluster: str, record: Record, snapshot: Snapshot, seq: int) -> list[Decision]:
    out = []
    # Jobs in refused or inner queues are rejected; elsewhere, only the Rejects in force are withdrawn.
    keys = set(snapshot.rejected)
    for name, queue in snapshot.queues.items():
        if queue.state is QueuePhase.REJECTED or queue.children:
            keys |= snapshot.queued.get(name, set())
    for key in sorted(k for k in keys if k in snapshot.jobs and snapshot.jobs[k].group is not None):
        job = snapshot.jobs[key]
        queue = snapshot.queues.get(job.queue)
        if job.group is None or queue is None:
            continue
        if queue.state is QueuePhase.REJECTED:
            reason, message = Reason.QUEUE_REFUSED, f"queue {queue.name} was refused and runs no jobs"
        elif queue.children:
            reason, message = Reason.QUEUE_NOT_LEAF, f"queue {queue.name} has child queues; only leaf queues run jobs"
        else:
            record(RejectWithdrawn(ObjectRef.of(job.group)))
            snapshot.rejected.discard(key)
            continue
        snapshot.drop(key)
        snapshot.rejected.add(key)
        reject = Reject.make(cluster, seq, ObjectRef.of(job.group), reason.value, message=message)
        if record(reject):
            out.append(reject)
    return out
