"""priority: higher-priority jobs first, and inside a job higher-priority tasks first; a
job's priority is the highest of its pods' ``spec.priority``. Only a pod of lower priority
may be preempted."""

from __future__ import annotations

from collections.abc import Mapping

from domain.scheduler.session import Key, Plugin, Session
from domain.scheduler.snapshot import JobInfo, TaskInfo

NAME = "priority"


def _job(job: JobInfo) -> Key:
    return (-float(job.priority),)


def _task(task: TaskInfo) -> Key:
    return (-float(task.priority),)


def _lower_priority(preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
    return [t for t in candidates if t.priority < preemptor.priority]


def build(options: Mapping[str, object]) -> Plugin:
    def on_open(session: Session) -> None:
        session.add_job_order(NAME, _job)
        session.add_task_order(NAME, _task)
        session.add_preemptable(NAME, _lower_priority)

    return Plugin(NAME, on_open)
