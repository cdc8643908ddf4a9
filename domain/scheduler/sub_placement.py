"""Placing a gang with sub-gangs (``subGroupPolicy``): each sub-gang on its own, whole or not at
all, inside one network domain when its policy asks for one (as the whole-gang placement of
SEEDS S4, per sub-gang); then the members outside any sub-gang on any nodes. The caller
commits the combined statement only when the gang is ready (minMember, minSubGroups)."""

from __future__ import annotations

from domain.reasons import Verdict
from domain.scheduler import placement
from domain.scheduler.placement import Attempt
from domain.scheduler.session import Session
from domain.scheduler.snapshot import PLACED, JobInfo, TaskInfo, TaskStatus
from domain.scheduler.statement import Statement
from domain.scheduler.subgroups import SubGroup


def _placed(sub: SubGroup) -> int:
    return sum(1 for t in sub.tasks if t.status in PLACED)


def _waiting(tasks: list[TaskInfo]) -> list[TaskInfo]:
    return [t for t in tasks if t.status is TaskStatus.PENDING and not t.is_best_effort]


def _place_sub(session: Session, job: JobInfo, sub: SubGroup) -> tuple[Attempt | None, Verdict | None]:
    tasks = _waiting(sub.tasks)
    if sub.topology is not None and sub.topology.hard:
        nodes = {t.node for t in sub.tasks if t.status in PLACED and t.node}
        ready = lambda: _placed(sub) >= sub.size  # noqa: E731
        return placement.place_within(session, job, tasks, request=sub.topology, placed=nodes, ready=ready)
    return placement.place(session, job, tasks, list(session.snapshot.nodes.values())), None


def place(session: Session, job: JobInfo) -> tuple[Attempt, list[Verdict]]:
    """Every sub-gang that fits whole, then the rest, in one statement (not committed)."""
    combined = Attempt(Statement(session))
    verdicts: list[Verdict] = []
    grouped: set[int] = set()
    for sub in job.subgroups:
        grouped.update(id(t) for t in sub.tasks)
        if not _waiting(sub.tasks):
            continue
        attempt, verdict = _place_sub(session, job, sub)
        if verdict is not None:
            verdicts.append(Verdict(verdict.reason, f"sub-group {sub.name}: {verdict.message}", verdict.plugin))
        if attempt is None:
            continue
        if _placed(sub) >= sub.size and attempt.refused is None:
            combined.statement.operations.extend(attempt.statement.operations)  # kept, not committed
            continue
        combined.failed.update(attempt.failed)  # never a partial sub-gang
        combined.refused = combined.refused or attempt.refused
        attempt.statement.discard()
    rest = [t for t in _waiting(job.tasks) if id(t) not in grouped]
    if rest:
        attempt = placement.place(session, job, rest, list(session.snapshot.nodes.values()))
        combined.statement.operations.extend(attempt.statement.operations)
        combined.failed.update(attempt.failed)
        combined.refused = combined.refused or attempt.refused
    return combined, verdicts
