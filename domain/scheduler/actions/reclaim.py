"""reclaim: a starving gang in a queue below its deserved share may evict pods of other queues
that are above theirs (the queue plugins say which), never cutting a gang below minMember and
never evicting critical pods; committed only when the whole gang would then fit."""

from __future__ import annotations

from domain.scheduler import victims
from domain.scheduler.infos import JobInfo, TaskInfo
from domain.scheduler.session import Session

NAME = "reclaim"


def _other_queues(session: Session, job: JobInfo) -> list[TaskInfo]:
    return [
        t
        for other in session.snapshot.jobs.values()
        if other.queue != job.queue
        for t in other.tasks
        if t.status in victims.EVICTABLE
    ]


def execute(session: Session) -> None:
    # 1. Starving gangs, in queue then job order; 2. for each, victims in other queues;
    # 3. commit the evictions only when the whole gang would then fit.
    for job in victims.starving(session):
        victims.evict_for(session, job, _other_queues(session, job), session.reclaimable, NAME)
