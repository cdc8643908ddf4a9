"""overcommit: the enqueue action admits a gang only while the whole cluster, inflated by
``overcommit-factor`` (default 1.2, below 1 taken as the default, as upstream), still holds the
minimum resources of every admitted gang beside what is in use. It bounds how many admitted
gangs may wait for room at once; allocation itself is never overcommitted."""

from __future__ import annotations

from collections.abc import Mapping

from domain import quantity
from domain.lifecycle.pod_group import PodGroupPhase
from domain.quantity import ResourceList
from domain.reasons import Reason, Verdict
from domain.scheduler.extension_points import Vote
from domain.scheduler.infos import JobInfo
from domain.scheduler.plugin_args import number
from domain.scheduler.queue_shares import describe, over
from domain.scheduler.session import Plugin, Session
from domain.scheduler.snapshot import Snapshot

NAME = "overcommit"
DEFAULT_FACTOR = 1.2


def _inqueue(snapshot: Snapshot) -> ResourceList:
    """What admitted gangs reserve: an Inqueue gang its whole minimum; a Running one with its
    minimum placed, the part of its minimum it does not hold yet."""
    out: ResourceList = {}
    for job in [*snapshot.jobs.values(), *snapshot.unborn]:
        if not job.min_resources:
            continue
        if job.phase is PodGroupPhase.INQUEUE:
            quantity.add(out, job.min_resources)
        elif job.phase is PodGroupPhase.RUNNING and job.placed() >= job.min_member:
            quantity.add(out, {n: a - job.allocated.get(n, 0) for n, a in job.min_resources.items()
                               if a > job.allocated.get(n, 0)})  # fmt: skip
    return out


def build(options: Mapping[str, object]) -> Plugin:
    factor = number(options, "overcommit-factor", DEFAULT_FACTOR)
    factor = factor if factor >= 1.0 else DEFAULT_FACTOR

    def on_open(session: Session) -> None:
        snapshot = session.snapshot
        used = quantity.sum_lists({n: node.allocatable.get(n, 0) - node.idle.get(n, 0) for n in node.allocatable}
                                  for node in snapshot.node_list())  # fmt: skip
        idle = {n: int(a * factor) - used.get(n, 0) for n, a in snapshot.total.items()}
        inqueue = _inqueue(snapshot)

        def enqueueable(job: JobInfo) -> tuple[Vote, Verdict | None]:
            minimum = job.min_resources
            if not minimum:
                return Vote.PERMIT, None
            asked = {n for n, a in minimum.items() if a > 0}
            # A resource the cluster does not have at all is overused by any demand for it.
            short = over(quantity.sum_lists([inqueue, minimum]), {n: idle.get(n, 0) for n in asked}, asked)
            if not short:
                return Vote.PERMIT, None
            message = f"resource in cluster is overused: overused {describe(short)}"
            return Vote.REJECT, Verdict(Reason.QUEUE_OVER_QUOTA, message, NAME)

        def enqueued(job: JobInfo) -> None:
            quantity.add(inqueue, job.min_resources or {})

        session.add_job_enqueueable(NAME, enqueueable)
        session.add_job_enqueued(NAME, enqueued)

    return Plugin(NAME, on_open)
