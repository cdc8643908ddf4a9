"""Parked: a waiting gang that has said why and still cannot fit is not tried again.

With ``keepWaitingReasons: true`` in the configuration, allocate passes over a gang whose
status already says it waits for room (condition ``Unschedulable`` with reason
``NotEnoughResources``, as last written) while the nodes hold fewer copies of its one shape
than it still needs. Such an attempt cannot place it: with node-local predicates a node takes
its copies whatever the order (``shortfall``), so fewer copies than members fail alike, and a
failed attempt binds, evicts and holds nothing. Skipping it changes no placement; what it
changes is the status: the gang keeps the message of its last attempt instead of a new one
each time the free room shrinks, as kube-scheduler keeps a pod's until its queueing hints
retry it. Volcano rewrites the message every cycle, which is the default here: on a deep
backlog those rewrites (and their echoes) are most of the work.

Only a plain gang is parked: admitted (Inqueue), valid, in an open queue, no network topology,
no sub-gangs, no pipelined members, no room held by it or lent to it, node-local predicates and
scores; and never in a dry run (``explain`` shows what an attempt sees). The rule reads the
state alone (the status last written, the job, the nodes' free room), not a memo of earlier
cycles, so a worker restored from a snapshot parks the same gangs as one that never stopped.

Allocate asks it twice. When its turn comes (``parked``), for any configuration. And, when no
room is held or pipelined in the session, before the jobs are even ordered (``Pool``): then the
free room only shrinks while allocate places gangs (a discarded attempt gives back exactly what
it took), so a gang parked at the start is parked at its turn, and it is left out of the order
at once. What makes a gang parkable whatever the room is worked out once per state of the job
and of its written status, and kept for the next cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from domain.lifecycle.pod_group import PodGroupPhase
from domain.lifecycle.status import PodGroupStatusView
from domain.objects.meta import ObjectKey
from domain.reasons import Reason
from domain.scheduler import shortfall
from domain.scheduler.extension_points import ExtensionPoint
from domain.scheduler.infos import JobInfo
from domain.scheduler.session import Session

KEPT = "parked"
_WAITS_FOR_ROOM = ("Unschedulable", "True", Reason.NOT_ENOUGH_RESOURCES.value)


def parked(session: Session, job: JobInfo) -> bool:
    """Whether allocate passes ``job`` over at its turn (see the module's docstring); room lent
    to it is the caller's to rule out."""
    if not _on(session):
        return False
    need = _need(session, job, _written(session, job))
    if not need or session.job_pipelined(job):
        return False
    return shortfall.too_few(session, job.tally().asking, session.snapshot.node_list(), need)


def _on(session: Session) -> bool:
    """Whether the configuration parks gangs in this session: not in a dry run, and only with
    node-local predicates and scores (what ``shortfall`` counts copies with)."""
    return session.config.keep_waiting_reasons and session.seen is None and session.node_local


def _written(session: Session, job: JobInfo) -> PodGroupStatusView | None:
    machine = session.snapshot.written.get(job.key)
    return None if machine is None else machine.reported


def _need(session: Session, job: JobInfo, written: PodGroupStatusView | None) -> int:
    """How many more members ``job`` needs placed, when it may be parked for want of room; else 0."""
    if not written or not written[1] or written[1][0][:3] != _WAITS_FOR_ROOM:
        return 0
    if job.topology is not None or job.subgroups or job.pipelined() or not job.all_alike():
        return 0
    return max(job.min_member - job.placed(), 0)


@dataclass(slots=True, eq=False)
class _Known:
    """What makes a job parkable whatever the room, at one state of it and of its written status."""

    job: JobInfo
    stamp: int
    tasks: int
    group: object
    phase: PodGroupPhase
    written: PodGroupStatusView | None
    need: int  # 0: never parked at this state


@dataclass(slots=True, eq=False)
class Pool:
    """The gangs left out of allocate's order in one session, and what was known of each job
    asked (this session's, and the last one's for the jobs asked again)."""

    session: Session
    before: dict[ObjectKey, _Known]
    now: dict[ObjectKey, _Known]
    # (shape, members needed) -> whether too few copies fit: the room is the same for every job
    # asked, as all are asked before allocate places any
    short: dict[tuple[object, int], bool] = field(default_factory=dict)

    @classmethod
    def of(cls, session: Session) -> Pool | None:
        """The session's pool, when gangs can be parked before their turn (see the module's docstring)."""
        if (
            not _on(session)
            or ExtensionPoint.JOB_PIPELINED in session.points
            or session.snapshot.pipelined
            or session.found.pipelines
        ):
            return None
        kept = session.kept.get(KEPT)
        before = kept.now if isinstance(kept, Pool) and kept.session.config is session.config else {}
        pool = session.kept[KEPT] = cls(session, before, {})  # only the jobs asked last time stay
        return pool

    def parks(self, job: JobInfo) -> bool:
        """Whether ``job``, waiting, would be parked at its turn: admitted, valid, in an open
        queue, parkable, and too few copies of its shape fit now."""
        session = self.session
        written = _written(session, job)
        known = self.before.get(job.key)
        if (
            known is None
            or known.job is not job
            or known.stamp != job.stamp
            or known.tasks != len(job.tasks)
            or known.group is not job.group
            or known.phase is not job.phase
            or known.written is not written
        ):
            need = 0
            if job.phase is PodGroupPhase.INQUEUE and session.job_valid(job) is None:
                need = _need(session, job, written)
            known = _Known(job, job.stamp, len(job.tasks), job.group, job.phase, written, need)
        self.now[job.key] = known
        if not known.need:
            return False
        queue = session.snapshot.queues.get(job.queue)
        if queue is None or not queue.is_open:
            return False
        asking = job.tally().asking
        key = (asking[0].shape(), known.need)
        short = self.short.get(key)
        if short is None:
            short = self.short[key] = shortfall.too_few(session, asking, session.snapshot.node_list(), known.need)
        return short
