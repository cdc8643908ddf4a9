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
no sub-gangs, no pipelined members, not let hold room (JobPipelined), node-local predicates and
scores; and never in a dry run (``explain`` shows what an attempt sees). Held room lent to a
gang counts as free for it: lent room was free room, so a gang too few of whose copies fit even
with it fails its attempt alike. The rule reads the state alone (the status last written, the
job, the nodes' free room), not a memo of earlier cycles, so a worker restored from a snapshot
parks the same gangs as one that never stopped.

Allocate asks it twice. When its turn comes (``parked``), for any configuration. And, when no
preemption has pipelined pods in the session, before the jobs are even ordered (``Pool``): then
the free room only shrinks while allocate places gangs and holds room for them (a discarded
attempt gives back exactly what it took, and room lent was free at the start), so a gang parked
at the start is parked at its turn, and it is left out of the order at once; a gang the pool
let through and its turn passed over (the gangs before it took the room) joins the pool then.
The pool is kept from cycle to cycle (kube-scheduler's pool of unschedulable pods): a parked
gang is not looked at again until one of the inputs of its answer may have changed (its job,
its PodGroup or the status last written, its queue's state, the copies of its shape that fit,
counted once for all the gangs parked with it, or whether plugins let it hold room), and a
pool that missed a renewal of the job table starts afresh. It is a cache of the rule, never a
fact: a fresh one parks the same gangs (``tests/unit/domain/scheduler/test_parked.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from domain.lifecycle.pod_group import PodGroupPhase
from domain.lifecycle.status import PodGroupStatusView
from domain.objects.meta import ObjectKey
from domain.reasons import Reason
from domain.scheduler import held_room, shortfall
from domain.scheduler.extension_points import ExtensionPoint
from domain.scheduler.infos import JobInfo
from domain.scheduler.session import Session

KEPT = "parked"
_WAITS_FOR_ROOM = ("Unschedulable", "True", Reason.NOT_ENOUGH_RESOURCES.value)


def parked(session: Session, job: JobInfo, lent: list[held_room.Held] | None = None) -> bool:
    """Whether allocate passes ``job`` over at its turn (see the module's docstring), the held
    room ``lent`` to it counted as free: at once when too few copies would fit even if each
    lent node held all the copies its free room and the lent room do (``shortfall.too_few``),
    else asked with the room lent."""
    if not _on(session):
        return False
    need = _need(session, job, _written(session, job))
    if not need or session.job_pipelined(job):
        return False
    asking, nodes = job.tally().asking, session.snapshot.node_list()
    if not lent:
        return shortfall.too_few(session, asking, nodes, need)
    if shortfall.too_few(session, asking, nodes, need, held_room.lent_room(lent)):
        return True
    held_room.lend(lent)
    try:
        return shortfall.too_few(session, asking, nodes, need)
    finally:
        held_room.hold_again(lent)


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
    if job.group is None or job.topology is not None or job.subgroups or job.pipelined() or not job.all_alike():
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
    """The gangs left out of allocate's order, kept from session to session while each
    renewal of the job table is seen (kube-scheduler's pool of unschedulable pods), and what
    was known of each job asked. A parked gang is not looked at again until something its
    answer reads may have changed: its job or PodGroup (the renewal's ``changed``, or this
    session's own changes so far), the status last written (what close wrote last session),
    its queue's state, the copies of its shape that fit (counted once per queue and shape, for
    every gang parked there), or whether plugins let it hold room. Each of those wakes it,
    and it is asked afresh."""

    session: Session
    unsettled: set[ObjectKey]  # the job table's (whose identity says the table is the same one)
    renewal: int  # the job table's renewal this session took
    before: dict[ObjectKey, _Known]  # jobs asked last session, and the ones woken in this one
    now: dict[ObjectKey, _Known]  # jobs asked in this session and not parked
    parked: dict[ObjectKey, tuple[str, object, int]]  # job -> its queue, shape and need
    # (queue, shape) -> members still needed -> the gangs parked there
    groups: dict[tuple[str, object], dict[int, dict[ObjectKey, _Known]]]
    # (shape, members needed) -> whether too few copies fit: the room is the same for every job
    # asked, as all are asked before allocate places any
    short: dict[tuple[object, int], bool] = field(default_factory=dict)

    @classmethod
    def of(cls, session: Session) -> Pool | None:
        """The session's pool, when gangs can be parked before their turn (see the module's docstring)."""
        if not _on(session) or session.snapshot.pipelined or session.found.pipelines:
            session.kept.pop(KEPT, None)  # the next pool starts afresh: this session is not seen
            return None
        snapshot = session.snapshot
        pool = session.kept.get(KEPT)
        if (
            isinstance(pool, Pool)
            and pool.session.config is session.config
            and snapshot.follows(pool.unsettled, pool.renewal)
        ):
            last = pool.session
            pool.session, pool.renewal, pool.before, pool.now, pool.short = session, snapshot.renewal, pool.now, {}, {}
            for keys in (snapshot.jobs_touched(), last.found.written):
                pool._wake(keys)
            pool._wake_by_room()
            pool._wake_pipelined()
        else:
            pool = cls(session, snapshot.unsettled, snapshot.renewal, {}, {}, {}, {})
        session.kept[KEPT] = pool
        return pool

    def _wake(self, keys: Iterable[ObjectKey]) -> None:
        """Ask the gangs ``keys`` that are parked afresh in this session."""
        parked = self.parked
        for key in keys:
            where = parked.pop(key, None)
            if where is not None:
                queue, shape, need = where
                needs = self.groups[queue, shape]
                self.before[key] = needs[need].pop(key)
                if not needs[need]:
                    del needs[need]
                    if not needs:
                        del self.groups[queue, shape]

    def _wake_by_room(self) -> None:
        """Wake the gangs whose queue is no longer open, or whose shape now fits as often as they need."""
        session = self.session
        nodes = session.snapshot.node_list()
        for (queue_name, _), needs in list(self.groups.items()):
            queue = session.snapshot.queues.get(queue_name)
            fit = None
            if queue is not None and queue.is_open:
                anyone = next(iter(next(iter(needs.values())).values()))
                fit = shortfall.copies(session, anyone.job.tally().asking[0], nodes)
            woken = [key for need, gangs in needs.items() if fit is None or need <= fit for key in gangs]
            self._wake(woken)

    def _wake_pipelined(self) -> None:
        """Wake the gangs plugins now let hold room (a target of ``reservation``, a job past
        ``sla``'s waiting time): those are never parked."""
        session = self.session
        if ExtensionPoint.JOB_PIPELINED in session.points:
            jobs, parked = session.snapshot.jobs, self.parked
            known = held_room.pipelinable(session)  # the only ones that may be, when the plugins say
            keys = parked.keys() if known is None else [key for key in known if key in parked]
            self._wake([key for key in keys if (job := jobs.get(key)) is None or session.job_pipelined(job)])

    def awake(self) -> list[ObjectKey]:
        """The waiting jobs not parked in an earlier session (or woken in this one), in job order."""
        snapshot = self.session.snapshot
        return sorted(snapshot.waiting - self.parked.keys(), key=snapshot.first.__getitem__)

    def parks(self, job: JobInfo) -> bool:
        """Whether ``job``, waiting and not parked, would be parked at its turn: admitted, valid,
        in an open queue, parkable, and too few copies of its shape fit now. It stays parked in
        the sessions after this one until something wakes it, or plugins let it hold room."""
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
        if known.need and not session.job_pipelined(job):
            queue = session.snapshot.queues.get(job.queue)
            if queue is not None and queue.is_open:
                asking = job.tally().asking
                shape = asking[0].shape()
                short = self.short.get((shape, known.need))
                if short is None:
                    nodes = session.snapshot.node_list()
                    short = self.short[shape, known.need] = shortfall.too_few(session, asking, nodes, known.need)
                if short:
                    self._park(job, shape, known)
                    return True
        self.now[job.key] = known
        return False

    def park(self, job: JobInfo) -> None:
        """``job``, asked at the start of this session and not parked then, was passed over at
        its turn (``parked``): it stays parked from the next session on until something wakes
        it, as if it had been asked there. What the next session's start would ask it is what
        wakes it: the room then (``_wake_by_room``), its job, PodGroup, written status and
        queue; a job that was not parkable at the start (``need`` 0, as a Pending one) is left
        to be asked."""
        known = self.now.get(job.key)
        if known is not None and known.need and known.job is job and known.stamp == job.stamp:
            del self.now[job.key]
            self._park(job, job.tally().asking[0].shape(), known)

    def _park(self, job: JobInfo, shape: object, known: _Known) -> None:
        self.parked[job.key] = (job.queue, shape, known.need)
        self.groups.setdefault((job.queue, shape), {}).setdefault(known.need, {})[job.key] = known
