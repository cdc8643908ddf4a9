"""gang: a job is placed all-or-nothing. It is valid only with at least minMember tasks (and
minTaskMember per task role), ready only when that many are placed, and jobs that are not
yet ready go first so a half-placed gang is completed before fresh ones start. Eviction never
cuts a running gang below its minimum."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping

from domain.objects.meta import ObjectKey
from domain.reasons import Reason, Verdict
from domain.scheduler.infos import PLACED, JobInfo, TaskInfo, TaskStatus
from domain.scheduler.session import Key, Plugin, Session
from domain.scheduler.snapshot import Snapshot

NAME = "gang"


def _role_minimums(job: JobInfo) -> list[tuple[str, int]]:
    """Each role's minTaskMember, by role; none when minMember is below their sum: then, as
    upstream's CheckTaskValid and CheckTaskReady, only the gang's own minimum counts."""
    if not job.min_task_member or job.min_member < sum(job.min_task_member.values()):
        return []
    return sorted(job.min_task_member.items())


def _valid(job: JobInfo) -> Verdict | None:
    valid = len(job.tasks) - job.tally().count(TaskStatus.FAILED)
    if valid < job.min_member:
        message = f"Not enough valid tasks for gang-scheduling, valid: {valid}, min: {job.min_member}"
        return Verdict(Reason.NOT_ENOUGH_TASKS, message, NAME)
    minimums = _role_minimums(job)
    roles = Counter(t.role for t in job.tasks if t.status is not TaskStatus.FAILED) if minimums else {}
    for role, minimum in minimums:
        if roles[role] < minimum:
            message = f"Not enough valid pods of task {role}, valid: {roles[role]}, min: {minimum}"
            return Verdict(Reason.NOT_ENOUGH_TASKS, message, NAME)
    return _sub_groups(job, lambda t: t.status is not TaskStatus.FAILED, Reason.NOT_ENOUGH_TASKS, "valid")


def _sub_groups(job: JobInfo, counts: Callable[[TaskInfo], bool], reason: Reason, what: str) -> Verdict | None:
    """Fewer than minSubGroups sub-gangs of a policy with subGroupSize members that ``counts``."""
    if not job.min_sub_groups:
        return None
    for policy, minimum in sorted(job.min_sub_groups.items()):
        whole = sum(1 for s in job.subgroups if s.policy == policy and sum(map(counts, s.tasks)) >= s.size)
        if whole < minimum:
            message = f"{whole}/{minimum} sub-groups of policy {policy} {what}"
            return Verdict(reason, message, NAME)
    return None


def _ready(job: JobInfo) -> Verdict | None:
    # Pending best-effort members count: backfill places them into any idle slot (Volcano's IsReady).
    ready = job.ready_members()
    if ready < job.min_member:
        return Verdict(Reason.NOT_ENOUGH_RESOURCES, f"{ready}/{job.min_member} members placed", NAME)
    minimums = _role_minimums(job)
    placed = Counter(t.role for t in job.tasks if t.status in PLACED) if minimums else Counter()
    for role, minimum in minimums:
        if placed[role] < minimum:
            return Verdict(Reason.NOT_ENOUGH_RESOURCES, f"{placed[role]}/{minimum} pods of task {role} placed", NAME)
    return _sub_groups(job, lambda t: t.status in PLACED, Reason.NOT_ENOUGH_RESOURCES, "placed")


def _order(job: JobInfo) -> Key:
    return (0.0 if job.placed() < job.min_member else 1.0,)


def _keeps_minimum(snapshot: Snapshot) -> Callable[[TaskInfo, list[TaskInfo]], list[TaskInfo]]:
    """Victims, in the order given, while each victim's gang keeps at least minMember placed."""

    def victims(preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        spare: dict[ObjectKey, int] = {}
        out = []
        for task in candidates:
            job = snapshot.jobs[task.job]
            # A gang of one may go whole (as Volcano allows); a larger one keeps its minimum.
            left = spare.setdefault(job.key, job.placed() if job.min_member <= 1 else job.placed() - job.min_member)
            if left > 0:
                spare[job.key] = left - 1
                out.append(task)
        return out

    return victims


def build(options: Mapping[str, object]) -> Plugin:
    def on_open(session: Session) -> None:
        session.add_job_valid(NAME, _valid)
        session.add_job_ready(NAME, _ready)
        session.add_job_order(NAME, _order)
        session.add_preemptable(NAME, _keeps_minimum(session.snapshot))
        session.add_reclaimable(NAME, _keeps_minimum(session.snapshot))

    return Plugin(NAME, on_open)
