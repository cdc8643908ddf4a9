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

Allocate asks it when a gang's turn comes (``parked``), for any configuration, and, through
``parked_pool``, before the jobs are even ordered.
"""

from __future__ import annotations

from domain.lifecycle.status import PodGroupStatusView
from domain.reasons import Reason
from domain.scheduler import held_room, lending, shortfall
from domain.scheduler.infos import JobInfo
from domain.scheduler.session import Session

_WAITS_FOR_ROOM = ("Unschedulable", "True", Reason.NOT_ENOUGH_RESOURCES.value)


def parked(session: Session, job: JobInfo, lent: list[held_room.Held] | None = None) -> bool:
    """Whether allocate passes ``job`` over at its turn (see the module's docstring), the held
    room ``lent`` to it counted as free (as if given back: ``shortfall.too_few``)."""
    if not active(session):
        return False
    needed = members_needed(session, job, status_of(session, job))
    if not needed or session.job_pipelined(job):
        return False
    more = lending.lent_room(lent) if lent else None
    return shortfall.too_few(session, job.tally().asking, session.snapshot.node_list(), needed, more)


def active(session: Session) -> bool:
    """Whether the configuration parks gangs in this session: not in a dry run, and only with
    node-local predicates and scores (what ``shortfall`` counts copies with)."""
    return session.config.keep_waiting_reasons and session.seen is None and session.node_local


def status_of(session: Session, job: JobInfo) -> PodGroupStatusView | None:
    machine = session.snapshot.written.get(job.key)
    return None if machine is None else machine.reported


def members_needed(session: Session, job: JobInfo, written: PodGroupStatusView | None) -> int:
    """How many more members ``job`` needs placed, when it may be parked for want of room; else 0."""
    if not written or not written[1] or written[1][0][:3] != _WAITS_FOR_ROOM:
        return 0
    if job.group is None or job.topology is not None or job.subgroups or job.pipelined() or not job.all_alike():
        return 0
    return max(job.min_member - job.placed(), 0)
