"""Recording: what our own decisions, and the notes the scheduler keeps for its later cycles,
do to a ``ClusterState``; the one path by which a cycle changes the state (the eventsourcing
library's single ``mutate``). ``ClusterState.record`` takes the very decision that is emitted,
and says whether it takes effect: one that would be an illegal transition now, or that is in
force already, is recorded nowhere and not emitted.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from domain.decisions import (
    AnyDecision,
    Bind,
    Evict,
    JobStatus,
    ObjectRef,
    PodGroupStatus,
    PodStatus,
    QueueStatus,
    Reject,
    WorkloadStatus,
)
from domain.kinds import KubeObject
from domain.lifecycle import job, pod_group, queue, workload
from domain.lifecycle.pod import PodFact
from domain.lifecycle.status import LocalQueueUsage, MachineStatus
from domain.lifecycle.workload import WorkloadView
from domain.objects.kueue import Workload
from domain.objects.meta import ObjectKey
from domain.quantity import ResourceList


@dataclass(frozen=True, slots=True)
class Pipelined:
    """A pod waits on ``node`` (or, with "", no longer does) for the room preemption releases."""

    pod: ObjectRef
    node: str


@dataclass(frozen=True, slots=True)
class SecondPassBackoff:
    """A workload's failed second pass (S3): ``failures`` so far; the next waits for ``at``."""

    workload: ObjectRef
    failures: int
    at: datetime


@dataclass(frozen=True, slots=True)
class LocalQueueSample:
    """A LocalQueue's Admission Fair Sharing usage, sampled or charged an entry penalty."""

    key: ObjectKey
    usage: LocalQueueUsage


@dataclass(frozen=True, slots=True)
class RejectWithdrawn:
    target: ObjectRef


@dataclass(frozen=True, slots=True)
class HeldRoom:
    """Room a gang past its waiting bound holds in a cycle: per node, what it takes there, and
    when it starts at the latest (its shadow time, seconds since the epoch; infinite without
    runtimes)."""

    gang: ObjectKey
    nodes: tuple[tuple[str, ResourceList], ...]
    shadow: float

    def starts_by(self) -> datetime | None:
        """Its shadow time as a moment; None when runtimes do not tell it."""
        return None if math.isinf(self.shadow) else datetime.fromtimestamp(self.shadow, UTC)


@dataclass(frozen=True, slots=True)
class HeldRooms:
    """The room gangs held in the last cycle, for operators: held room lives only inside a cycle,
    and decides nothing after it."""

    rooms: tuple[HeldRoom, ...]


Note = Pipelined | SecondPassBackoff | LocalQueueSample | RejectWithdrawn | HeldRooms


def view_of(d: WorkloadStatus) -> WorkloadView:
    """The workload status a WorkloadStatus decision writes, as the scheduler reads it."""
    state = d.requeue_state
    return WorkloadView(
        conditions=tuple(c.as_tuple() for c in d.conditions),
        admission=d.admission,
        unhealthy_nodes=tuple(n.name for n in d.unhealthy_nodes or ()),
        admission_checks=tuple((c.name, c.state) for c in d.admission_checks or ()),
        requeue_count=state.count if state is not None else 0,
        requeue_at=d.requeue_at,
    )


class Recording:
    """``ClusterState``'s half that folds our decisions and notes."""

    objects: dict[str, dict[ObjectKey, KubeObject]]
    machines: dict[str, dict[ObjectKey, MachineStatus]]
    local_queue_usage: dict[ObjectKey, LocalQueueUsage]
    held: tuple[HeldRoom, ...]

    def _step(self, status: MachineStatus, fact: StrEnum, seq: int) -> bool:
        raise NotImplementedError

    def _note_change(self, kind: str, key: ObjectKey) -> None:
        raise NotImplementedError

    @staticmethod
    def _sync_second_pass(status: MachineStatus, view: WorkloadView) -> None:
        raise NotImplementedError

    def record(self, fact: AnyDecision | Note) -> bool:
        """Fold one decision of ours, or a note the scheduler keeps for its later cycles: the one
        path by which a cycle changes the state. False when it cannot take effect now (an illegal
        transition, or the same already in force): such a decision is not emitted."""
        return _RECORD[type(fact)](self, fact)

    def _status(self, ref: ObjectRef) -> MachineStatus | None:
        return self.machines.get(ref.kind, {}).get(ObjectKey(ref.key))

    def _bind(self, d: Bind) -> bool:
        """The pod is Bound to ``d.node`` until the cluster confirms it."""
        status = self._status(d.target)
        if status is None or not self._step(status, PodFact.BIND_DECIDED, d.seq):
            return False
        status.node, status.nominated = d.node, ""
        self._note_change("Pod", ObjectKey(d.target.key))
        return True

    def _pipelined(self, n: Pipelined) -> bool:
        """The pod waits on ``n.node`` (or, with "", no longer does) for room preemption releases."""
        status = self._status(n.pod)
        if status is None or status.nominated == n.node:
            return False
        status.nominated = n.node
        self._note_change("Pod", ObjectKey(n.pod.key))
        return True

    def _pod_group_status(self, d: PodGroupStatus) -> bool:
        status = self._status(d.target)
        fact = pod_group.DECIDED[pod_group.PodGroupPhase(d.phase)]
        before = status.phase if status is not None else None
        if status is None or not self._step(status, fact, d.seq):
            return False
        status.reported = (d.phase, tuple(c.as_tuple() for c in d.conditions))
        if status.phase != before:  # the scheduler's jobs read the phase, not the conditions
            self._note_change("PodGroup", ObjectKey(d.target.key))
        return True

    def _pod_status(self, d: PodStatus) -> bool:
        status = self._status(d.target)
        view = ("Pending", tuple(c.as_tuple() for c in d.conditions))
        if status is None or status.reported == view:
            return False
        status.reported = view  # only pod_status reads it for a pod: no other state changes
        return True

    def _job_status(self, d: JobStatus) -> bool:
        """False when the job may not take ``d.phase`` from where it is."""
        status, phase = self._status(d.target), job.JobPhase(d.phase)
        if status is None or status.phase not in job.DECIDED.get(phase, ()):
            return False
        return self._step(status, job.FACT_OF[phase], d.seq)

    def _workload_status(self, d: WorkloadStatus) -> bool:
        status = self._status(d.target)
        wl = self.objects.get("Workload", {}).get(ObjectKey(d.target.key))
        view = view_of(d)
        if status is None or not isinstance(wl, Workload):
            return False
        if not self._step(status, workload.fact_of(wl.spec.active, view), d.seq):
            return False
        status.workload = view
        self._sync_second_pass(status, view)
        return True

    def _second_pass_backoff(self, n: SecondPassBackoff) -> bool:
        """A failed second pass (S3): ``n.failures`` so far; the next waits for ``n.at``."""
        status = self._status(n.workload)
        if status is None or not status.needs_second_pass:
            return False
        status.second_pass_failures, status.second_pass_at = n.failures, n.at
        return True

    def _evict(self, d: Evict) -> bool:
        """A pod's eviction, once; a Workload's is in the status decided with it."""
        if d.target.kind != "Pod":
            return True
        status = self._status(d.target)
        if status is None or status.evicted:
            return False
        status.evicted = True
        self._note_change("Pod", ObjectKey(d.target.key))
        return True

    def _queue_status(self, d: QueueStatus) -> bool:
        """The queue's state as reported, and what it holds."""
        status = self._status(d.target)
        fact = queue.DECIDED.get(d.state)
        if status is None or fact is None or not self._step(status, fact, d.seq):
            return False
        status.queue_reported = (d.state, tuple(d.allocated.items()))
        return True

    def _reject(self, d: Reject) -> bool:
        """A refused Queue (S2), once; or a job's Reject, when that reason is not in force yet."""
        status = self._status(d.target)
        if status is None:
            return False
        if d.target.kind == "Queue":
            return status.phase is not queue.QueuePhase.REJECTED and self._step(
                status, queue.QueueFact.CREATION_REFUSED, d.seq
            )
        if status.rejected == d.message:
            return False
        status.rejected = d.message
        return True

    def _reject_withdrawn(self, n: RejectWithdrawn) -> bool:
        """The reason for a Reject no longer applies (its queue became a leaf, or it moved)."""
        status = self._status(n.target)
        if status is not None:
            status.rejected = ""
        return True

    def _local_queue_sample(self, n: LocalQueueSample) -> bool:
        """A LocalQueue's new Admission Fair Sharing usage (a sample or an entry penalty)."""
        self.local_queue_usage[n.key] = n.usage
        return True

    def _held_rooms(self, n: HeldRooms) -> bool:
        """The room gangs held in the cycle just run (the last cycle's is forgotten)."""
        if self.held == n.rooms:
            return False
        self.held = n.rooms
        return True


_RECORD: dict[type, Callable[[Any, Any], bool]] = {
    Bind: Recording._bind,
    PodGroupStatus: Recording._pod_group_status,
    PodStatus: Recording._pod_status,
    JobStatus: Recording._job_status,
    QueueStatus: Recording._queue_status,
    WorkloadStatus: Recording._workload_status,
    Evict: Recording._evict,
    Reject: Recording._reject,
    Pipelined: Recording._pipelined,
    SecondPassBackoff: Recording._second_pass_backoff,
    LocalQueueSample: Recording._local_queue_sample,
    RejectWithdrawn: Recording._reject_withdrawn,
    HeldRooms: Recording._held_rooms,
}
