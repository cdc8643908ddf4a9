"""Held plans: the nodes a gang past its bound last held room on (``held_room.hold``) and what
that plan read, kept between cycles, so that a gang whose plans would read the same again holds
the same nodes without planning them again (about half the holds of a gang that waits are as
the one the cycle before).

The plans read the members held for (their pods, in order: a task's request and shape are its
pod's), each node's object, allocatable and free room, the known ends of the pods on each node,
and the cycle's instant; a new configuration is planned afresh too (the predicates read none of
it today, but its switches could). The instant enters in two ways only: a node that holds a
member now frees up for it now, and the ends are worked out at it (none earlier:
``runtimes.ends``). With all else the same and every end later than the new instant, each
comparison the plans make comes out as before (a node free now still ranks beside the nodes free
now as it did, before the nodes that free up at an end; the ends keep their order), so every
member goes to the same node. The shadow time is then the new instant where it was the old one
(every node chosen held its member then), else the same end. With an end at the instant itself,
a node freeing up then would tie with those free now: the gang is planned again. So is one
whose instant is earlier than the plans' (time comes from the stream's markers and never goes
back, but the argument needs it to go forward).
"""

from __future__ import annotations

from dataclasses import dataclass

from domain.objects.core import Node, Pod
from domain.objects.meta import ObjectKey
from domain.quantity import ResourceList
from domain.scheduler import runtimes
from domain.scheduler.config import SchedulerConfig
from domain.scheduler.infos import JobInfo, TaskInfo
from domain.scheduler.runtimes import Ends
from domain.scheduler.session import Session

KEPT = "held-plans"


@dataclass(slots=True, eq=False)
class Plan:
    """What a gang's plans read (all of it, beside the instant, is compared before it is used
    again) and what they chose."""

    config: SchedulerConfig
    pods: list[Pod]  # the members held for, in order
    nodes: list[Node]  # in the snapshot's node order
    allocatable: list[ResourceList]
    idle: list[ResourceList]  # copies, as each node's free room was before the gang held any
    ends: Ends  # as ``runtimes.ends`` gave them (never changed)
    earliest: float  # the earliest of the ends (infinite without)
    now: float  # the instant planned at
    places: list[str]  # each member's node
    shadow: float
    # what the members would hold, node by node, on the nodes as planned on (``held_room.room_of``)
    would_hold: tuple[tuple[str, ResourceList], ...] | None = None


@dataclass(slots=True, eq=False)
class _Kept:
    """The plans of the last session that asked for one and this one's, by job."""

    session: Session
    before: dict[ObjectKey, Plan]
    now: dict[ObjectKey, Plan]


def _kept(session: Session) -> _Kept:
    kept = session.kept.get(KEPT)
    if not isinstance(kept, _Kept) or kept.session is not session:
        before = kept.now if isinstance(kept, _Kept) else {}
        kept = session.kept[KEPT] = _Kept(session, before, {})  # only the gangs asked for last time stay
    return kept


def again(session: Session, job: JobInfo, tasks: list[TaskInfo], ends: Ends) -> tuple[list[str], float] | None:
    """Each of ``tasks``' node and the shadow time, as ``job``'s last plans chose them, when
    planning again would read the same (see the module's docstring); else None."""
    kept = _kept(session)
    plan = kept.now.get(job.key) or kept.before.get(job.key)
    if plan is None or not _same(plan, session, tasks, ends):
        return None
    now = session.snapshot.now
    if plan.shadow == plan.now:
        plan.shadow = now
    plan.now = now
    kept.now[job.key] = plan
    return plan.places, plan.shadow


def current(session: Session, job: JobInfo) -> Plan:
    """The plan ``job`` holds room by in this session (after ``again`` or ``keep``)."""
    return _kept(session).now[job.key]


def _same(plan: Plan, session: Session, tasks: list[TaskInfo], ends: Ends) -> bool:
    snapshot = session.snapshot
    now = snapshot.now
    if plan.config is not session.config or not (plan.now == now or plan.earliest > now > plan.now):
        return False
    if len(plan.pods) != len(tasks) or any(pod is not task.pod for pod, task in zip(plan.pods, tasks, strict=True)):
        return False
    nodes = snapshot.node_list()
    if len(nodes) != len(plan.nodes):
        return False
    for node, obj, allocatable, idle in zip(nodes, plan.nodes, plan.allocatable, plan.idle, strict=True):
        if node.node is not obj or node.idle != idle:
            return False
        if node.allocatable is not allocatable and node.allocatable != allocatable:
            return False
    return plan.ends == ends


def keep(
    session: Session, job: JobInfo, tasks: list[TaskInfo], ends: Ends, *, places: list[str], shadow: float
) -> None:
    """Keep what ``job``'s plans read and chose: called before the gang holds any room."""
    nodes = session.snapshot.node_list()
    earliest = runtimes.earliest(ends, session.kept)
    _kept(session).now[job.key] = Plan(
        session.config, [task.pod for task in tasks], [node.node for node in nodes],
        [node.allocatable for node in nodes], [dict(node.idle) for node in nodes], ends, earliest,
        session.snapshot.now, places, shadow,
    )  # fmt: skip
