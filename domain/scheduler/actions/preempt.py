"""preempt: a starving gang may evict lower-priority pods of its own queue.

The victims a task may take are those every plugin of a tier agrees on (priority: lower
priority only; gang: never below a victim gang's minMember; conformance: no critical pods).
Victims are taken on one node at a time, cheapest first, only until the task fits; the
gang's evictions are committed only if the whole gang then fits, so nobody is evicted for a
gang that still could not run. The preemptor binds in a later cycle, once its victims are gone.
"""

from __future__ import annotations

from domain.scheduler import victims
from domain.scheduler.infos import JobInfo, TaskInfo
from domain.scheduler.session import Session

NAME = "preempt"


def _same_queue_lower_priority(session: Session, job: JobInfo) -> list[TaskInfo]:
    return [
        t
        for other in session.snapshot.jobs.values()
        if other.queue == job.queue and other.key != job.key and other.priority < job.priority
        for t in other.tasks
        if t.status in victims.EVICTABLE
    ]


def execute(session: Session) -> None:
    # 1. Starving gangs, in queue then job order; 2. for each, victims in its own queue;
    # 3. commit the evictions only when the whole gang would then fit.
    for job in victims.starving(session):
        victims.evict_for(session, job, _same_queue_lower_priority(session, job), session.preemptable, NAME)
