"""Placing a gang with sub-gangs (``subGroupPolicy``): each sub-gang on its own, whole or not at
all, inside one network domain when its policy asks for one (as the whole-gang placement of
SEEDS S4, per sub-gang); then the members outside any sub-gang on any nodes. When the gang
itself has a hard topology, all of that happens inside one domain of the gang's tier: every
domain is dry-run whole and chosen as a whole gang's is (lowest tier, then best fit, then name),
and the sub-gangs' own domains are the lower ones inside it. The caller commits the combined
statement only when the gang is ready (minMember, minSubGroups)."""

from __future__ import annotations

from collections.abc import Sequence

from domain import quantity
from domain.reasons import Verdict
from domain.scheduler import placement
from domain.scheduler.infos import PLACED, JobInfo, SubGroup, TaskInfo, TaskStatus
from domain.scheduler.network_domains import Domain
from domain.scheduler.node_table import NodeInfo
from domain.scheduler.placement import Attempt
from domain.scheduler.session import Session
from domain.scheduler.statement import Statement


def _placed(sub: SubGroup) -> int:
    return sum(1 for t in sub.tasks if t.status in PLACED)


def _waiting(tasks: list[TaskInfo]) -> list[TaskInfo]:
    return [t for t in tasks if t.status is TaskStatus.PENDING and not t.best_effort]


def place(session: Session, job: JobInfo) -> tuple[Attempt | None, list[Verdict]]:
    """Every sub-gang that fits whole, then the rest, in one statement (not committed); None when
    the gang's hard topology has no domain that holds all of it, with the reason."""
    request = job.topology
    if request is None or not request.hard:
        return _place_in(session, job, None)
    domains = placement.candidate_domains(session, request, job.nodes())

    verdicts: dict[str, list[Verdict]] = {}  # each domain's, beside its attempt

    def attempt_in(domain: Domain) -> Attempt:
        attempt, verdicts[domain.name] = _place_in(session, job, domain)
        return attempt

    ready = lambda: session.job_ready(job) is None  # noqa: E731
    asks = quantity.sum_lists(task.request for task in _waiting(job.tasks))
    best, kept, tries = placement.best_domain(session, request, domains, attempt_in, ready, asks=asks)
    if best is None:
        return None, [placement.no_domain(request, len(_waiting(job.tasks)), domains, tries)]
    return (kept, verdicts[best.name]) if kept is not None else _place_in(session, job, best)


def _place_in(session: Session, job: JobInfo, domain: Domain | None) -> tuple[Attempt, list[Verdict]]:
    """The sub-gangs and the rest, on the nodes of the gang's ``domain`` (any nodes when None)."""
    combined = Attempt(Statement(session), len(_waiting(job.tasks)))
    verdicts: list[Verdict] = []
    grouped: set[int] = set()
    for sub in job.subgroups:
        grouped.update(id(t) for t in sub.tasks)
        if not _waiting(sub.tasks):
            continue
        attempt, verdict = _place_sub(session, job, sub, domain)
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
        nodes, where = _nodes(session, job, domain)
        attempt = placement.place(session, job, rest, nodes, where)
        combined.statement.operations.extend(attempt.statement.operations)
        combined.failed.update(attempt.failed)
        combined.refused = combined.refused or attempt.refused
    return combined, verdicts


def _place_sub(
    session: Session, job: JobInfo, sub: SubGroup, domain: Domain | None
) -> tuple[Attempt | None, Verdict | None]:
    tasks = _waiting(sub.tasks)
    if sub.topology is not None and sub.topology.hard:
        nodes = {t.node for t in sub.tasks if t.status in PLACED and t.node}
        ready = lambda: _placed(sub) >= sub.size  # noqa: E731
        inside = None if domain is None else domain.nodes
        return placement.place_within(
            session, job, tasks, request=sub.topology, placed=nodes, ready=ready, inside=inside
        )
    return placement.place(session, job, tasks, *_nodes(session, job, domain)), None


def _nodes(session: Session, job: JobInfo, domain: Domain | None) -> tuple[Sequence[NodeInfo], str]:
    """The nodes of the gang's domain and their key, or every node."""
    if domain is None:
        return session.snapshot.node_list(), ""
    where = placement.where_of(job.topology, domain)
    return session.snapshot.domain_nodes[where], where
