"""Closing a session: what the cycle tells the cluster. Binds and evictions in the order they
were committed, then each PodGroup's status and each Queue's status, written only when they
change (CONTRACT section 2), and never for a gang with no tasks or on its way out (SEEDS S1).

A PodGroup's phase follows Volcano's session close: Running once minMember members are placed
(Completed once enough succeeded and all finished), else Inqueue if it was admitted, else
Pending; a gang that waits carries an ``Unschedulable`` condition saying why, with reason
``WaitingForPreemption`` when its members are pipelined onto nodes its victims are leaving.
"""

from __future__ import annotations

from dataclasses import dataclass

from domain import quantity
from domain.decisions import Bind, Condition, Decision, Evict, ObjectRef, PodGroupStatus, QueueStatus
from domain.lifecycle.pod_group import PodGroupPhase
from domain.lifecycle.queue import QueuePhase
from domain.lifecycle.status import MachineStatus, PodGroupStatusView, QueueStatusView
from domain.objects.meta import ObjectKey
from domain.objects.volcano import PodGroup
from domain.reasons import FitSummary, Reason, failed_words, gang_pipelined, gang_unschedulable, most_severe
from domain.recorded import Pipelined
from domain.scheduler import standstill
from domain.scheduler.infos import JobInfo, QueueInfo, TaskInfo, TaskStatus
from domain.scheduler.session import Session
from domain.state import ClusterState

_SCHEDULED = ("Scheduled", "True", "tasks in gang are ready to be scheduled", "")
WORDS = "close-words"


@dataclass(slots=True, eq=False)
class _Words:
    """What ``_words`` said of each waiting gang, this session's and the last one's."""

    session: Session
    before: dict[ObjectKey, tuple[list[TaskInfo], dict[ObjectKey, FitSummary], str]]
    now: dict[ObjectKey, tuple[list[TaskInfo], dict[ObjectKey, FitSummary], str]]


def placements(state: ClusterState, session: Session, seq: int) -> list[Decision]:
    out = []
    for task in session.found.binds:
        bind = Bind.make(state.name, seq, ObjectRef.of(task.pod), "Scheduled", node=task.node)
        if state.record(bind):
            out.append(bind)
    for task, reason in session.found.evictions:
        evict = Evict.make(state.name, seq, ObjectRef.of(task.pod), reason)
        if state.record(evict):
            out.append(evict)
    # Where each pipelined task waits (or that it no longer does) is the state's, for later cycles.
    for task in [*session.snapshot.pipelined, *session.found.pipelines]:
        state.record(Pipelined(ObjectRef.of(task.pod), task.node if task.status is TaskStatus.PIPELINED else ""))
    return out


def _words(session: Session, job: JobInfo, fits: dict[ObjectKey, FitSummary]) -> str:
    """``failed_words`` of the job's tasks that found no node, in the job's (name) order: the
    first gives the node summary. Kept for the next cycle while the job has the same tasks and
    they have the same fit summaries (a kept attempt repeats its own), as summaries never change."""
    kept = session.kept.get(WORDS)
    if not isinstance(kept, _Words) or kept.session is not session:
        before = kept.now if isinstance(kept, _Words) else {}
        kept = session.kept[WORDS] = _Words(session, before, {})  # only the jobs asked last time stay
    entry = kept.now.get(job.key) or kept.before.get(job.key)
    if entry is None or entry[0] is not job.tasks or entry[1] != fits:
        # Every task in ``fits`` is one of the job's (an attempt's findings are its own tasks').
        first = next(((t.pod.metadata.name, fits[t.key]) for t in job.tasks if t.key in fits), None)
        words = failed_words(first, fits.values())
        entry = (job.tasks, dict(fits), words)
    kept.now[job.key] = entry
    return entry[2]


def _waiting(session: Session, job: JobInfo, baseline: PodGroupStatusView, peak: int) -> PodGroupStatusView:
    verdict = most_severe(session.found.verdicts.get(job.key, []))
    short = verdict is not None and verdict.reason is Reason.NOT_ENOUGH_TASKS
    if short and peak >= job.min_member and len(job.tasks) < peak:
        # S1: a gang that had its tasks and is losing them is being deleted (or its controller
        # is recreating them); either way a status write is noise, and would depend on event order.
        # A gang that still has every task it had (one short of a role's minimum) says why.
        return baseline
    # Admitted stays admitted (upstream's jobStatus never moves Inqueue back to Pending): a gang
    # enqueued before its pods exist keeps its room while they arrive.
    phase = "Inqueue" if job.phase is PodGroupPhase.INQUEUE else "Pending"
    if verdict is not None and short:
        return (phase, (("Unschedulable", "True", verdict.reason.value, verdict.message),))
    if verdict is None:
        return (phase, baseline[1])
    if verdict.reason is Reason.NOT_ENOUGH_RESOURCES and session.found.fits.get(job.key):
        fits = session.found.fits[job.key]
        placed = job.placed()
        unready = max(job.min_member - placed - session.found.tentative.get(job.key, 0), len(fits))
        message = gang_unschedulable(unready, len(job.tasks), _words(session, job, fits))
    else:
        message = verdict.message
    return (phase, (("Unschedulable", "True", verdict.reason.value, message),))


def _view(session: Session, job: JobInfo, baseline: PodGroupStatusView, peak: int) -> PodGroupStatusView:
    """The status this cycle gives a PodGroup; ``baseline`` (the last one written) when nothing new is known."""
    tally = job.tally()
    succeeded = tally.count(TaskStatus.SUCCEEDED)
    finished = succeeded + tally.count(TaskStatus.FAILED) == len(job.tasks)
    if succeeded and finished and succeeded >= job.min_member:
        return ("Completed", ())
    placed = tally.placed
    if placed >= job.min_member:
        return ("Running", (_SCHEDULED,))
    pipelined = tally.pipelined
    if pipelined and placed + len(pipelined) >= job.min_member:
        phase = "Inqueue" if job.phase is PodGroupPhase.INQUEUE else "Pending"
        message = gang_pipelined(len(pipelined), len(job.tasks), sorted({t.node for t in pipelined}))
        return (phase, (("Unschedulable", "True", Reason.WAITING_FOR_PREEMPTION.value, message),))
    if not tally.pending and job.key not in session.found.verdicts:
        return baseline  # nothing was tried for it in this cycle: nothing new to say
    return _waiting(session, job, baseline, peak)


def _looked_at(session: Session) -> list[ObjectKey]:
    """The PodGroups whose status may change in this cycle, by key. The others are settled:
    their job is as the last close saw it (the snapshot did not build it again and the session
    did not change it), no action said anything of it, and what was written then is what
    ``_view`` gives again."""
    snapshot, found = session.snapshot, session.found
    keys = snapshot.unsettled | snapshot.spoiled | snapshot.restored | found.verdicts.keys()
    return sorted(k for k in keys if k in snapshot.jobs and snapshot.jobs[k].group is not None)


def pod_group_statuses(state: ClusterState, session: Session, seq: int) -> list[Decision]:
    out = []
    snapshot = session.snapshot
    machines = state.machines.get("PodGroup", {})
    # Only PodGroups get a status: lone pods (most jobs, in a big trace) are not even sorted.
    for key in _looked_at(session):
        job = snapshot.jobs[key]
        group = job.group
        # Settled unless this status is still to be written; an action's verdict may change.
        snapshot.unsettled.discard(key)
        if key in session.found.verdicts:
            snapshot.unsettled.add(key)
        if not isinstance(group, PodGroup) or job.terminating or not job.tasks:
            continue  # S1: a gang with no tasks, or on its way out, gets no status write
        machine = machines.get(key)  # ``state.status_of(group)``: a job's key is its PodGroup's
        if machine is None:
            continue
        machine.peak_tasks = peak = max(machine.peak_tasks, len(job.tasks))
        baseline = _baseline(machine, group)
        view = _view(session, job, baseline, peak)
        if view == baseline:
            continue
        decision = _decision(state, group, view, seq)
        if not state.record(decision):
            snapshot.unsettled.add(key)  # refused now: asked again next cycle
            standstill.now(session)
            continue
        session.found.written.append(key)
        out.append(decision)
    # A PodGroup admitted before it has pods says Inqueue and nothing more: with no task there is
    # no gang to judge (upstream's gang plugin skips it too).
    for job in snapshot.unborn:
        machine = machines.get(job.key)
        if job.phase is not PodGroupPhase.INQUEUE or not isinstance(job.group, PodGroup) or machine is None:
            continue
        baseline = _baseline(machine, job.group)
        view = ("Inqueue", baseline[1])
        if view != baseline and state.record(decision := _decision(state, job.group, view, seq)):
            out.append(decision)
    return out


def _baseline(machine: MachineStatus, group: PodGroup) -> PodGroupStatusView:
    """What we last wrote, else what the cluster reports (built only when needed)."""
    return machine.reported or (
        group.status.phase,
        tuple((c.type, c.status, c.reason, c.message) for c in group.status.conditions),
    )


def _decision(state: ClusterState, group: PodGroup, view: PodGroupStatusView, seq: int) -> PodGroupStatus:
    phase, conditions = view
    reason = "GangScheduled" if phase == "Running" else conditions[0][2] if conditions else phase
    return PodGroupStatus.make(
        state.name, seq, ObjectRef.of(group), reason, phase=phase, conditions=[Condition(*c) for c in conditions]
    )


def _allocated_view(allocated: dict[str, int]) -> tuple[tuple[str, str], ...]:
    return tuple((name, quantity.format_milli(name, amount)) for name, amount in sorted(allocated.items()) if amount)


def _queue_view(session: Session, queue: QueueInfo) -> QueueStatusView:
    return (queue.state.value, _allocated_view(session.snapshot.subtree_allocated(queue.name)))


def queue_statuses(state: ClusterState, session: Session, seq: int) -> list[Decision]:
    out = []
    for _, queue in sorted(session.snapshot.queues.items()):
        obj = queue.queue
        if obj is None or queue.state is QueuePhase.REJECTED:
            continue
        machine = state.status_of(obj)
        if machine is None:
            continue
        view = _queue_view(session, queue)
        # What we last wrote, or else what the queue's status says (read only then: it is dearer).
        reported = machine.queue_reported or (obj.status.state or "Open", _allocated_view(dict(obj.status.allocated)))
        if view == reported:
            continue
        decision = QueueStatus.make(
            state.name, seq, ObjectRef.of(obj), "AllocatedChanged", state=view[0], allocated=dict(view[1])
        )
        if state.record(decision):
            out.append(decision)
    return out
