"""sla: a job that has waited longer than its ``sla-waiting-time`` goes first and holds its room.

As upstream's plugins/sla: the waiting time is the plugin argument ``sla-waiting-time``, or a
job's own annotation of that name on its PodGroup (which wins); both are Go durations
("1h30m", "90s"). Jobs with a waiting time come before jobs without one, the earliest deadline
(creation + waiting time) first; a job past its deadline may be enqueued at once (a Permit at
JobEnqueueable) and may pipeline (a Permit at JobPipelined): allocate then holds, for the rest
of the cycle, the room it waits for (``held_room``). A deadline that passes between two cycles
counts at the next one: time comes from the SCHEDULE markers only. An argument or annotation
that is not a positive duration is ignored, as upstream logs and ignores it.
"""

from __future__ import annotations

from collections.abc import Mapping

from domain.durations import positive_seconds
from domain.scheduler import pipelining, standstill
from domain.scheduler.extension_points import Vote
from domain.scheduler.infos import JobInfo
from domain.scheduler.plugin_args import arguments_of
from domain.scheduler.session import Key, Plugin, Session

NAME = "sla"
WAITING_TIME = "sla-waiting-time"


def waiting_time(job: JobInfo, default: float | None) -> float | None:
    """The job's own annotation, else the plugin's argument."""
    own = positive_seconds(job.group.metadata.annotations.get(WAITING_TIME)) if job.group is not None else None
    return own if own is not None else default


def build(options: Mapping[str, object]) -> Plugin:
    default = positive_seconds(arguments_of(options).get(WAITING_TIME))

    def on_open(session: Session) -> None:
        now = session.snapshot.now

        def order(job: JobInfo) -> Key:
            wait = waiting_time(job, default)
            return (1.0, 0.0) if wait is None else (0.0, job.created + wait)

        def past(job: JobInfo) -> Vote:
            wait = waiting_time(job, default)
            if wait is None:
                return Vote.ABSTAIN
            if now - job.created >= wait:
                return Vote.PERMIT
            standstill.until(session, job.created + wait)  # a job passes its waiting time then
            return Vote.ABSTAIN

        pipelining.register(session, NAME, order, past)

    return Plugin(NAME, on_open)
