"""Pipelining: the callbacks of the plugins that let a gang past its waiting bound hold room
(``reservation``, ``sla``: Volcano's JobPipelined), and which jobs they may let hold it in a
session, when each of them says (the pool of parked gangs wakes only those: ``parked_pool``)."""

from __future__ import annotations

from collections.abc import Callable, Collection

from domain.objects.meta import ObjectKey
from domain.scheduler.extension_points import Vote
from domain.scheduler.infos import JobInfo
from domain.scheduler.session import Key, Session

PIPELINABLE = "pipelinable"  # (session, the jobs its plugins may let hold room, or None: any)


def register(
    session: Session,
    plugin: str,
    order: Callable[[JobInfo], Key],
    permit: Callable[[JobInfo], Vote],
    only: Collection[ObjectKey] | None = None,
) -> None:
    """A waiting-bound plugin's callbacks: its job order, and ``permit`` (Permit for a job past
    its bound, else Abstain) at both JobEnqueueable (enqueued at once) and JobPipelined (holds
    room); ``only``: the jobs ``permit`` may permit in this session, when the plugin knows them
    (``pipelinable``)."""
    session.add_job_order(plugin, order)
    session.add_job_enqueueable(plugin, lambda job: (permit(job), None))
    session.add_job_pipelined(plugin, permit)
    known = session.kept.get(PIPELINABLE)
    before = known[1] if isinstance(known, tuple) and known[0] is session else frozenset()
    session.kept[PIPELINABLE] = (session, None if only is None or before is None else before | set(only))


def pipelinable(session: Session) -> frozenset[ObjectKey] | None:
    """The only jobs this session's waiting-bound plugins may let hold room (JobPipelined), when
    each of them said which; None when any job may be."""
    known = session.kept.get(PIPELINABLE)
    return known[1] if isinstance(known, tuple) and known[0] is session else None
