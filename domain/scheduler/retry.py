"""Retry: whether a waiting gang's chance can have changed since allocate last tried it.

A gang that did not fit is tried again every cycle, as Volcano's allocate does; on a busy
cluster most of those attempts see exactly what the last one saw and fail the same way. An
attempt's outcome is a function of the job (its PodGroup, phase and tasks: their pods and
statuses), of the nodes (their objects, which the predicates read, and their free room in the
resources the job asks for) and of the queue's quota: when the queue can take all the job's
pending requests at once, it can take each member's on top of those placed before it, so no
quota check refuses in the attempt (``allocatable`` callbacks are monotone: a request that fits
covers every smaller one). So allocate keeps, per job, what its last
failed attempt saw and found (its verdicts, the fit summary of each task that found no node, how
many members it placed tentatively); when a cycle shows it the same job and the same nodes with
the same free room, it gets those findings again instead of a new attempt: same verdicts, same
statuses, same decisions. Only a plain attempt is kept: no network topology, no sub-gangs, no
pipelined members, predicates and scores that look at the task and the node alone, and a queue
that can take the whole job's pending requests. Held room lent to the job
(``lending.lendable``) is part of the free room its attempt sees and is kept with. A gang that
plugins let hold room (JobPipelined) holds it after a kept attempt as after a new one: the hold
reads the nodes as the failed attempt left them, which is as it found them.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field

from domain import quantity
from domain.objects.core import Node, Pod
from domain.objects.volcano import PodGroup
from domain.quantity import ResourceList
from domain.reasons import FitSummary, Verdict
from domain.scheduler.candidates import Candidates
from domain.scheduler.extension_points import ExtensionPoint
from domain.scheduler.infos import JobInfo, TaskInfo, TaskStatus
from domain.scheduler.object_facts import same_but_status
from domain.scheduler.session import Session

MEMO = "retry"
ROOMS = "retry-rooms"


@dataclass(slots=True, eq=False)
class Seen:
    """What one failed attempt saw, and what it found."""

    job: JobInfo  # the job as it was then, at ``stamp``: while it is at that stamp, its tasks are as seen
    stamp: int
    group: PodGroup | None
    phase: str
    tasks: list[tuple[Pod, TaskStatus]]
    nodes: list[Node]
    names: tuple[str, ...]  # the resources the job asks for
    room: tuple[int, ...]  # each node's free room in ``names``, in node order
    verdicts: list[Verdict] = field(default_factory=list)
    fits: dict[str, FitSummary] = field(default_factory=dict)
    tentative: int | None = None

    def same_job(self, job: JobInfo, nodes: list[Node]) -> bool:
        """Whether ``job`` is as seen (its PodGroup, phase, and tasks: pods and statuses) on the same
        node objects; a job built again is compared task by task, and taken as seen when it is."""
        if self.group is not job.group:
            # The same written again with another status is the same to an attempt (it reads no status).
            if self.group is None or job.group is None or not same_but_status(self.group, job.group):
                return False
            self.group = job.group
        if not (
            self.phase == job.phase.value
            and (self.nodes is nodes or (len(self.nodes) == len(nodes) and all(map(operator.is_, self.nodes, nodes))))
        ):
            return False
        if self.job is job and self.stamp == job.stamp:
            return True
        tasks = job.tasks
        if len(self.tasks) != len(tasks) or not all(
            p is t.pod and s == t.status for (p, s), t in zip(self.tasks, tasks, strict=True)
        ):
            return False
        self.job, self.stamp = job, job.stamp
        return True


def _memo(session: Session) -> dict[str, Seen]:
    memo = session.kept.get(MEMO)
    if not isinstance(memo, dict):
        memo = session.kept[MEMO] = {}
    return memo


def can_keep(session: Session, job: JobInfo) -> bool:
    """Whether an attempt for ``job`` is plain enough to be kept (see the module's docstring)."""
    return (
        job.topology is None
        and not job.subgroups
        and not job.pipelined()
        and session.node_local
        and _quota_covers(session, job)
    )


def _quota_covers(session: Session, job: JobInfo) -> bool:
    """Whether the job's queue can take all its pending requests at once."""
    queue = session.snapshot.queues.get(job.queue)
    tally = job.tally()
    pending = tally.asking
    if queue is None or not pending:
        return False
    if ExtensionPoint.ALLOCATABLE not in session.points:
        return True
    first = pending[0]
    if len(pending) == 1:  # the whole is the task (the callbacks read its request, priority and role)
        return session.allocatable(queue, first) is None
    whole = tally.whole
    if whole is None:
        whole = TaskInfo(first.key, first.pod, job.key, quantity.sum_lists(t.request for t in pending), first.status)
        whole.priority, whole.role = first.priority, first.role
        tally.whole = whole
    return session.allocatable(queue, whole) is None


@dataclass(slots=True, eq=False)
class _Rooms:
    """The session's node objects, and their free room per set of resource names while no node
    changes (every change of a node's free room in allocate goes through ``Candidates.changed``,
    which moves its tick on)."""

    session: Session
    nodes: list[Node]
    positions: dict[str, int]  # node name -> its place in ``nodes``
    tick: int  # the candidates' tick when the rooms were read
    rooms: dict[tuple[str, ...], tuple[int, ...]]
    # per set of resource names, the room last read: the candidates and their tick then, the
    # values, brought up to date from the nodes the candidates changed since (kept with ``nodes``),
    # and the tuple made of them (given again while the values are the same)
    known: dict[tuple[str, ...], tuple[Candidates, int, list[int], tuple[int, ...]]]
    # per set of resource names, the last room read with held room lent added: that room, the
    # lent room (per node), and the sum (``_same_room``; the same objects give the same sum)
    lent: dict[tuple[str, ...], tuple[tuple[int, ...], dict[str, ResourceList], tuple[int, ...]]] = field(
        default_factory=dict
    )


def _kept(session: Session) -> _Rooms:
    kept = session.kept.get(ROOMS)
    if not isinstance(kept, _Rooms) or kept.session is not session:
        infos = session.snapshot.node_list()
        nodes = [node.node for node in infos]
        if isinstance(kept, _Rooms) and len(kept.nodes) == len(nodes) and all(map(operator.is_, kept.nodes, nodes)):
            # The same node objects: one list, so ``Seen.same_job`` needs no walk over them.
            nodes, positions, known = kept.nodes, kept.positions, kept.known
        else:
            positions, known = {node.name: n for n, node in enumerate(infos)}, {}
        kept = session.kept[ROOMS] = _Rooms(session, nodes, positions, session.candidates.tick, {}, known)
    elif kept.tick != session.candidates.tick:
        kept.tick, kept.rooms = session.candidates.tick, {}
    return kept


def _room(session: Session, kept: _Rooms, names: tuple[str, ...]) -> tuple[int, ...]:
    """Every node's free room in ``names``, in node order: read again only on the nodes changed
    since it was last read, when the candidates say which."""
    room = kept.rooms.get(names)
    if room is None:
        candidates = session.candidates
        last = kept.known.get(names)
        changed = None if last is None or last[0] is not candidates else candidates.changed_since(last[1])
        if last is None or changed is None or len(changed) > len(kept.positions):
            values = [node.idle.get(name, 0) for node in session.snapshot.node_list() for name in names]
            room = tuple(values)
            if last is not None and room == last[3]:
                room = last[3]
        else:
            values, width, nodes, room = last[2], len(names), session.snapshot.nodes, last[3]
            for node in set(changed):
                start, idle = kept.positions[node] * width, nodes[node].idle
                for k, name in enumerate(names):
                    if values[start + k] != (value := idle.get(name, 0)):
                        values[start + k] = value
                        room = None
            if room is None:
                room = tuple(values)
        # The same values are the same tuple: a kept attempt that saw them compares by identity.
        kept.known[names] = (candidates, candidates.tick, values, room)
        kept.rooms[names] = room
    return room


def _same_room(session: Session, last: Seen, kept: _Rooms, lent: dict[str, ResourceList] | None) -> bool:
    """Whether the nodes have the free room ``last`` saw, with ``lent`` (per node, held room that
    would be lent to the job) added. The room now is read once per tick of the candidates for
    each set of resource names (``_room``), and every gang that saw it is given that same tuple,
    so most gangs compare by identity."""
    room = _room(session, kept, last.names)
    if lent:
        names = last.names
        known = kept.lent.get(names)
        if known is not None and known[0] is room and known[1] is lent:
            return known[2] == last.room
        values = list(room)
        for node, amounts in lent.items():
            start = kept.positions[node] * len(names)
            for k, name in enumerate(names):
                values[start + k] += amounts.get(name, 0)
        kept.lent[names] = (room, lent, tuple(values))
        return kept.lent[names][2] == last.room
    if room is not last.room and room != last.room:
        return False
    last.room = room
    return True


def tried(session: Session, job: JobInfo) -> bool:
    """Whether a failed attempt for ``job`` is kept (only then is it worth a ``repeat``)."""
    return job.key in _memo(session)


def look(session: Session, job: JobInfo) -> Seen:
    """What an attempt for ``job`` sees now (its findings still empty). A failed plain attempt
    leaves the nodes and the job as it found them, so a look after it sees what it saw."""
    names = job.tally().asked_names()
    kept = _kept(session)
    tasks = [(t.pod, t.status) for t in job.tasks]
    room = _room(session, kept, names)
    return Seen(job, job.stamp, job.group, job.phase.value, tasks, kept.nodes, names, room)


def repeat(session: Session, job: JobInfo, lent: dict[str, ResourceList] | None = None) -> bool:
    """If the last failed attempt for ``job`` saw what an attempt would see now (with ``lent``,
    the room held room lent to it would add per node), record its findings again and say so;
    otherwise forget it."""
    memo = _memo(session)
    last = memo.get(job.key)
    kept = _kept(session)
    if last is None or not last.same_job(job, kept.nodes) or not _same_room(session, last, kept, lent):
        memo.pop(job.key, None)
        return False
    found = session.found
    for verdict in last.verdicts:
        found.refuse(job, verdict)
    if last.fits:
        found.fits[job.key] = {**found.fits.get(job.key, {}), **last.fits}
    if last.tentative is not None:
        found.tentative[job.key] = max(found.tentative.get(job.key, 0), last.tentative)
    return True


def remember(session: Session, job: JobInfo, verdicts: int, fits: dict[str, FitSummary]) -> None:
    """Keep what the attempt just made for ``job`` found, if it failed: the verdicts after the
    first ``verdicts``, the fit summaries not in ``fits`` (those from before it)."""
    found = session.found
    if not job.pending() or job.placed() >= job.min_member:
        return
    seen = look(session, job)
    seen.verdicts = found.verdicts.get(job.key, [])[verdicts:]
    now = found.fits.get(job.key, {})
    seen.fits = {k: v for k, v in now.items() if fits.get(k) is not v} if fits else dict(now)
    seen.tentative = found.tentative.get(job.key)
    _memo(session)[job.key] = seen
