"""Shortfall: what allocate's attempt finds for a gang of alike tasks that cannot all be placed,
worked out without placing them.

When a gang's pending tasks share one shape and the predicates look at the task and the node
alone, a node takes ``copies`` of them (as many as its free room holds, none when a check of the
node object fails) whatever the order, and each placement takes one copy from exactly one node.
So an attempt places ``min(tasks, sum of copies)`` of them, in task order; when that is fewer
than the gang still needs, the attempt fails, every node is left with its copies taken, and the
first task that finds no node (its twins after it the same) finds each node's reasons for that
left-over room. ``find`` gives those findings (how many were placed, each failed task's fit
summary, the gang's verdict with those tasks placed) at the cost of one look at each node the
shape fits on (its node ranking knows which, and why the others do not), instead of a
placement, a ranking question and an undo per task. Allocate uses it only for a plain attempt
(``retry.can_keep``: node-local predicates and scores, no topology, no pipelined members) whose
queue takes all the tasks at once, so no quota check could stop it earlier. The copies depend
on the shape and the nodes' room alone: the shape's node ranking keeps each node's count and
their sum, counting a node again when it is re-ranked after a change, and the left-over summary
is worked out once per shape while no node changes (the candidates' ``tick``), for every gang
of it that waits.
``tests/unit/domain/scheduler/test_shortfall.py`` checks it against the attempts it stands for.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from domain import quantity
from domain.quantity import ResourceList
from domain.reasons import FitSummary, Verdict
from domain.scheduler import placement
from domain.scheduler.candidates import Candidates, Ranking, copies_of
from domain.scheduler.infos import JobInfo, TaskInfo, TaskStatus
from domain.scheduler.node_table import NodeInfo
from domain.scheduler.session import Session

ROOMS = "shortfall-rooms"


@dataclass(frozen=True, slots=True)
class Shortfall:
    placed: int  # how many of the tasks the attempt places before it fails
    failed: dict[str, FitSummary]  # task key -> why it found no node (one summary for all twins)
    verdict: Verdict  # the gang's, with ``placed`` of its tasks placed


def find(
    session: Session, job: JobInfo, tasks: list[TaskInfo], nodes: Sequence[NodeInfo], need: int
) -> Shortfall | None:
    """The findings of placing ``tasks`` (in task order) on ``nodes`` when they are alike and
    fewer than ``need`` of them fit; None otherwise (then only an attempt says where they go)."""
    if len(tasks) < 2 or need <= 0:
        return None
    first = tasks[0]
    if not job.all_alike():
        return None
    room = _room(session, first, nodes)
    if room is None or room.total >= need:
        return None  # a shape asked once at most (the attempt's scan answers), or enough fit
    placed = min(room.total, len(tasks))
    # The attempt places the first ``placed`` tasks in task order (none: no order to take).
    ordered = _in_task_order(session, job, tasks) if placed else tasks
    failed: dict[str, FitSummary] = {}
    if placed < len(ordered):
        if room.summary is None:
            room.summary = _left_over(session, first, len(nodes), room.ranking)
        summary = room.summary
        failed = dict.fromkeys((t.key for t in ordered[placed:]), summary)
    stamp = job.stamp
    for task in ordered[:placed]:  # as the attempt leaves them when the gang's readiness is asked
        job.move(task, TaskStatus.ALLOCATED, "")
    try:
        verdict = session.job_ready(job)
    finally:
        for task in ordered[:placed]:
            job.move(task, TaskStatus.PENDING, "")
        job.rewind(stamp)
    if verdict is None:
        return None  # ready with fewer than ``need``: not a case this stands for
    return Shortfall(placed, failed, verdict)


def too_few(
    session: Session,
    tasks: list[TaskInfo],
    nodes: Sequence[NodeInfo],
    need: int,
    more: Mapping[str, ResourceList] | None = None,
) -> bool:
    """Whether ``nodes`` hold fewer than ``need`` copies of the shape of ``tasks`` (alike, of a
    job whose predicates are node-local), so that no attempt can place enough of them. The
    shape's node ranking is made if it has none (a fresh cache answers as a kept one). With
    ``more`` (per node, room given back to its free room: held room lent), each such node is
    asked again as a node with that free room (its checks, then its copies), the others count
    as they stand, without changing any node; counted once per ``more`` (the same dict while
    the lent room is the same: ``lending.lent_room``) while no node changes."""
    if not tasks or need <= 0:
        return False
    room = _room(session, tasks[0], nodes, make=True)
    if room is None or not more:
        return room is not None and room.total < need
    if room.more is None or room.more[0] is not more:
        room.more = (more, _given_copies(session, tasks[0], room, more))
    return room.more[1] < need


def _given_copies(session: Session, task: TaskInfo, room: _Room, more: Mapping[str, ResourceList]) -> int:
    """The copies of ``task``'s shape ``room``'s nodes hold once each node of ``more`` has its
    room there added to its free room."""
    by_name, counted = session.snapshot.nodes, room.ranking.copies or {}
    total = room.total
    for name, given in more.items():
        node = by_name[name]
        idle = dict(node.idle)
        quantity.add(idle, given)
        probe = node.with_idle(idle)
        total += (0 if session.predicate(task, probe) else copies_of(task, probe)) - counted.get(name, 0)
    return total


def copies(session: Session, task: TaskInfo, nodes: Sequence[NodeInfo]) -> int | None:
    """How many copies of ``task``'s shape ``nodes`` hold; None for a shape that asks for
    nothing. The shape's node ranking is made if it has none (a fresh cache answers as a kept
    one)."""
    room = _room(session, task, nodes, make=True)
    return None if room is None else room.total


def _in_task_order(session: Session, job: JobInfo, tasks: list[TaskInfo]) -> list[TaskInfo]:
    """``tasks`` (some of the job's asking ones, in job order) in the session's task order:
    all of them are sorted once per stamp of the job and configuration (a task's key is its
    own: its priority and name)."""
    if len(tasks) != len(job.tally().asking):
        return sorted(tasks, key=session.task_key)
    return job.asking_in_order(session.config, session.task_key)


@dataclass(slots=True, eq=False)
class _Room:
    """How many copies of one shape the nodes it fits on take, in all, and the shape's node
    ranking, which keeps each node's count (``Candidates.standing``) as nodes change."""

    nodes: Sequence[NodeInfo]
    total: int
    ranking: Ranking  # as it stands at the tick the room was counted at
    summary: FitSummary | None = None  # why a copy more fits nowhere (``_left_over``), once asked
    more: tuple[Mapping[str, ResourceList], int] | None = None  # the last room ``too_few`` added, its copies


@dataclass(slots=True, eq=False)
class _Rooms:
    """Each shape's ``_Room`` while no node changes (the candidates' ``tick``): every gang of
    that shape that cannot fit in a cycle asks the same."""

    candidates: Candidates
    tick: int
    shapes: dict[tuple[object, ...], _Room]


def _room(session: Session, task: TaskInfo, nodes: Sequence[NodeInfo], *, make: bool = False) -> _Room | None:
    """The copies of ``task``'s shape that ``nodes`` hold now; None for a shape that asks for
    nothing or has no node ranking yet (unless ``make``)."""
    kept, candidates = session.kept.get(ROOMS), session.candidates
    if not isinstance(kept, _Rooms) or kept.candidates is not candidates or kept.tick != candidates.tick:
        kept = session.kept[ROOMS] = _Rooms(candidates, candidates.tick, {})
    shape = task.shape()
    room = kept.shapes.get(shape)
    if room is not None and room.nodes is nodes:
        return room
    asks = any(amount > 0 for amount in task.request.values())
    ranking = placement.standing(session, task, nodes, make=make) if asks else None
    if ranking is None:
        return None
    room = kept.shapes[shape] = _Room(nodes, ranking.total, ranking)
    return room


def _left_over(session: Session, task: TaskInfo, nodes: int, ranking: Ranking) -> FitSummary:
    """Why ``task`` fits none of ``nodes`` nodes once each node it fits on has given its copies
    of the request away (the ``ranking``'s counts); the other nodes' reasons say why, as they are."""
    request = task.request
    counts = Counter(ranking.counts)
    for node_name, taken in (ranking.copies or {}).items():
        node = ranking.nodes[node_name]
        idle = dict(node.idle)
        for name, amount in request.items():
            idle[name] = idle.get(name, 0) - taken * amount
        counts.update(session.predicate(task, node.with_idle(idle)))
    return FitSummary(nodes, Counter({reason: n for reason, n in counts.items() if n > 0}))
