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

Only a plain gang is parked: no network topology, no sub-gangs, no pipelined members, no
room held by it or lent to it, node-local predicates and scores; and never in a dry run
(``explain`` shows what an attempt sees). The rule reads the state alone (the status last
written, the nodes' free room), not a memo of earlier cycles, so a worker restored from a
snapshot parks the same gangs as one that never stopped.
"""

from __future__ import annotations

from domain.reasons import Reason
from domain.scheduler import shortfall
from domain.scheduler.infos import JobInfo
from domain.scheduler.session import Session

_WAITS_FOR_ROOM = ("Unschedulable", "True", Reason.NOT_ENOUGH_RESOURCES.value)


def parked(session: Session, job: JobInfo) -> bool:
    """Whether allocate passes ``job`` over (see the module's docstring); room lent to it is
    the caller's to rule out."""
    if not session.config.keep_waiting_reasons or session.seen is not None or not session.node_local:
        return False
    if job.topology is not None or job.subgroups or job.pipelined() or not job.all_alike():
        return False
    machine = session.snapshot.written.get(job.key)
    written = None if machine is None else machine.reported
    if not written or not written[1] or written[1][0][:3] != _WAITS_FOR_ROOM:
        return False
    if session.job_pipelined(job):
        return False
    return shortfall.too_few(session, job.tally().asking, session.snapshot.node_list(), job.min_member - job.placed())
