"""priority: higher-priority jobs first, and inside a job higher-priority tasks first; a
job's priority is its PodGroup's PriorityClass value, or without one the highest of its pods'
``spec.priority``. As upstream, a pod of another job may be preempted only when its job has the
lower priority, a pod of the preemptor's own job only when the pod has."""

from __future__ import annotations

from collections.abc import Mapping

from domain.scheduler.infos import JobInfo, TaskInfo
from domain.scheduler.session import Key, Plugin, Session

NAME = "priority"


def _job(job: JobInfo) -> Key:
    return (-float(job.priority),)


def _task(task: TaskInfo) -> Key:
    return (-float(task.priority),)


def _lower_priority(session: Session, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
    jobs = session.snapshot.jobs
    mine = jobs[preemptor.job].priority
    return [
        t
        for t in candidates
        if (t.priority < preemptor.priority if t.job == preemptor.job else jobs[t.job].priority < mine)
    ]


def build(options: Mapping[str, object]) -> Plugin:
    def on_open(session: Session) -> None:
        session.add_job_order(NAME, _job)
        session.add_task_order(NAME, _task)
        session.add_preemptable(NAME, lambda preemptor, candidates: _lower_priority(session, preemptor, candidates))

    return Plugin(NAME, on_open)
