"""The pool of parked gangs: the rule of ``parked`` asked before allocate orders the jobs, and
kept from cycle to cycle.

When no preemption has pipelined pods in the session, allocate asks the rule before the jobs
are even ordered, too (``Pool``): then the free room only shrinks while allocate places gangs
and holds room for them (a discarded attempt gives back exactly what it took, and room lent was
free at the start), so a gang parked at the start is parked at its turn, and it is left out of
the order at once; a gang the pool let through and its turn passed over (the gangs before it
took the room) joins the pool then. The pool is kept from cycle to cycle (kube-scheduler's pool
of unschedulable pods): a parked gang is not looked at again until one of the inputs of its
answer may have changed (its job, its PodGroup or the status last written, its queue's state,
the copies of its shape that fit, counted once for all the gangs parked with it, or whether
plugins let it hold room), and a pool that missed a renewal of the job table starts afresh.

A gang woken by the room alone (its shape's copies in the free room are enough again) is most
often one the room a gang past its bound holds passes over at its turn, cycle after cycle. Such
gangs wait out of the order (``later``) while the order's first job, which comes before them all
in their one queue, is tried; with the room it holds taken, those still too short stay parked,
asked once per shape, need and holds lent, and the others join the order in their place: the
room only shrinks until their turn, so one too short then is too short at its turn.

It is a cache of the rule, never a fact: a fresh pool, or none, parks the same gangs
(``tests/unit/domain/scheduler/test_parked.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from domain.lifecycle.pod_group import PodGroupPhase
from domain.lifecycle.status import PodGroupStatusView
from domain.objects.meta import ObjectKey
from domain.scheduler import held_room, lending, pipelining, shortfall
from domain.scheduler.extension_points import ExtensionPoint
from domain.scheduler.infos import JobInfo, TaskInfo
from domain.scheduler.parked import active, members_needed, status_of
from domain.scheduler.session import JobQueues, Key, Session

KEPT = "parked"
Later = list[tuple[tuple[Key, float, str], JobInfo]]  # gangs asked after the first job's attempt, with their order keys


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

    def holds(self, job: JobInfo, written: PodGroupStatusView | None) -> bool:
        """Whether this is still what is known of ``job``, its status last written ``written``."""
        return (
            self.job is job
            and self.stamp == job.stamp
            and self.tasks == len(job.tasks)
            and self.group is job.group
            and self.phase is job.phase
            and self.written is written
        )


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
    # parked jobs the room alone would wake, asked once the first job tried has held room
    # (``behind``): they stay parked until then, and when still short
    later: dict[ObjectKey, tuple[str, object, int]] = field(default_factory=dict)

    @classmethod
    def of(cls, session: Session) -> Pool | None:
        """The session's pool, when gangs can be parked before their turn (see the module's docstring)."""
        if not active(session) or session.snapshot.pipelined or session.found.pipelines:
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
            pool.session, pool.renewal, pool.before, pool.now = session, snapshot.renewal, pool.now, {}
            pool.short, pool.later = {}, {}
            for keys in (snapshot.jobs_touched(), last.found.written):
                pool._wake(keys)
            pool._wake_pipelined()  # first: a gang plugins let hold room is never asked ``later``
            pool._wake_by_room()
        else:
            pool = cls(session, snapshot.unsettled, snapshot.renewal, {}, {}, {}, {})
        session.kept[KEPT] = pool
        return pool

    def _wake(self, keys: Iterable[ObjectKey]) -> None:
        """Ask the gangs ``keys`` that are parked afresh in this session."""
        parked = self.parked
        for key in keys:
            if key in parked:
                self.before[key] = self._unpark(key)

    def _unpark(self, key: ObjectKey) -> _Known:
        """Take the parked gang ``key`` out of the pool: what was known of it."""
        queue, shape, need = self.parked.pop(key)
        needs = self.groups[queue, shape]
        known = needs[need].pop(key)
        if not needs[need]:
            del needs[need]
            if not needs:
                del self.groups[queue, shape]
        return known

    def _wake_by_room(self) -> None:
        """Wake the gangs whose queue is no longer open, or whose shape now fits as often as
        they need; of the latter, those still as they were asked (their job, PodGroup and status
        last written) stay parked and wait ``later``, out of the order: the room the first job
        tried holds may leave them as short as before (``behind``)."""
        session = self.session
        snapshot, nodes = session.snapshot, session.snapshot.node_list()
        for (queue_name, shape), needs in list(self.groups.items()):
            queue = snapshot.queues.get(queue_name)
            fit = None
            if queue is not None and queue.is_open:
                anyone = next(iter(next(iter(needs.values())).values()))
                fit = shortfall.copies(session, anyone.job.tally().asking[0], nodes)
            for need in [need for need in needs if fit is None or need <= fit]:
                where = (queue_name, shape, need)
                for key, known in list(needs[need].items()):
                    job = snapshot.jobs.get(key)
                    if (
                        fit is not None
                        and job is not None
                        and key in snapshot.waiting
                        and known.holds(job, status_of(session, job))
                    ):
                        self.later[key] = where
                    else:
                        self.before[key] = self._unpark(key)

    def _wake_pipelined(self) -> None:
        """Wake the gangs plugins now let hold room (a target of ``reservation``, a job past
        ``sla``'s waiting time): those are never parked."""
        session = self.session
        if ExtensionPoint.JOB_PIPELINED in session.points:
            jobs, parked = session.snapshot.jobs, self.parked
            known = pipelining.pipelinable(session)  # the only ones that may be, when the plugins say
            keys = parked.keys() if known is None else [key for key in known if key in parked]
            self._wake([key for key in keys if (job := jobs.get(key)) is None or session.job_pipelined(job)])

    def behind(self, order: JobQueues) -> Later:
        """The gangs waiting ``later``, each with its order key, when ``order``'s first job comes
        before all of them in the one open queue all wait in: they are asked once its attempt is
        over (``ask``). Else none: they are put in the order now, as any gang woken."""
        if not self.later:
            return []
        session = self.session
        jobs = session.snapshot.jobs
        later = [(session.job_key(jobs[key]), jobs[key]) for key in self.later]
        head = order.head()
        queue = None if head is None else session.snapshot.queues.get(head[0])
        if (
            head is None
            or queue is None
            or not queue.is_open
            or min(key for key, _ in later) < head[1]
            or any(job.queue != head[0] for _, job in later)
        ):
            for key, job in later:
                self.now[job.key] = self._unpark(job.key)  # as ``parks`` leaves a gang it lets through
                order.push(job, key)
            return []
        return later

    def ask(self, later: Later, holds: list[held_room.Held], order: JobQueues) -> None:
        """After the first job's attempt, with the room it holds taken, each gang of ``later``
        (from ``behind``) that its turn would pass over (``parked``: too few of its copies fit
        even with the held room lent to it) stays parked; the others are put in the order. Until
        their turn the room only shrinks (see the module's docstring), so a gang too short now
        is as short then. Each shape and need is asked once, and once per set of holds lent."""
        session = self.session
        nodes = session.snapshot.node_list()
        short: dict[tuple[object, int], bool] = {}  # too few copies fit with no room lent
        lent_to: dict[tuple[held_room.Held, ...], Later] = {}
        answers: dict[ObjectKey, bool] = {}
        for key, job in later:
            group = self.later[job.key][1:]
            if (alone := short.get(group)) is None:
                alone = short[group] = shortfall.too_few(session, job.tally().asking, nodes, group[1])
            if alone and (lent := lending.lendable(session, job, holds)):  # room lent can only add copies
                lent_to.setdefault(tuple(lent), []).append((key, job))
            answers[job.key] = alone
        for lent, jobs in lent_to.items():
            asked = {self.later[job.key][1:]: job.tally().asking for _, job in jobs}
            when_lent = short_when_lent(session, list(lent), asked)
            answers.update((job.key, when_lent[self.later[job.key][1:]]) for _, job in jobs)
        for key, job in later:
            if not answers[job.key]:  # the others stay parked
                self.now[job.key] = self._unpark(job.key)
                order.push(job, key)

    def awake(self) -> list[ObjectKey]:
        """The waiting jobs not parked in an earlier session (or woken in this one), in job order."""
        snapshot = self.session.snapshot
        return sorted(snapshot.waiting - self.parked.keys(), key=snapshot.first.__getitem__)

    def parks(self, job: JobInfo) -> bool:
        """Whether ``job``, waiting and not parked, would be parked at its turn: admitted, valid,
        in an open queue, parkable, and too few copies of its shape fit now. It stays parked in
        the sessions after this one until something wakes it, or plugins let it hold room."""
        session = self.session
        written = status_of(session, job)
        known = self.before.get(job.key)
        if known is None or not known.holds(job, written):
            need = 0
            if job.phase is PodGroupPhase.INQUEUE and session.job_valid(job) is None:
                need = members_needed(session, job, written)
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


def short_when_lent(
    session: Session, lent: list[held_room.Held], asked: dict[tuple[object, int], list[TaskInfo]]
) -> dict[tuple[object, int], bool]:
    """For each (shape, need) of ``asked``, with a gang's asking tasks of that shape, whether
    fewer than need copies fit with the room of the holds ``lent`` given back (counted as if
    it were, ``shortfall.too_few``: the holds keep their room)."""
    nodes, more = session.snapshot.node_list(), lending.lent_room(lent)
    return {group: shortfall.too_few(session, tasks, nodes, group[1], more) for group, tasks in asked.items()}
