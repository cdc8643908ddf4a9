"""Placement: put a job's pending tasks on nodes inside a statement, and choose the network
domain a gang must live in (SEEDS S4). Shared by the allocate and backfill actions.

A task goes to the feasible node with the highest score, ties to the node name. Every pending
task is tried, so a waiting gang's message counts each task that found no node; identical
twins of a task that failed are not tried again, so a hopeless gang still costs little.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from domain import quantity
from domain.reasons import FitSummary, Reason, Verdict
from domain.scheduler.candidates import Ranking
from domain.scheduler.infos import JobInfo, TaskInfo
from domain.scheduler.network_domains import HYPERNODE, Domain, TopologyRequest, where_key
from domain.scheduler.node_table import NodeInfo
from domain.scheduler.session import Session
from domain.scheduler.statement import Statement


@dataclass
class Attempt:
    statement: Statement
    tasks: int = 0  # how many tasks it was given to place
    failed: dict[str, FitSummary] = field(default_factory=dict)  # task key -> why it found no node
    refused: Verdict | None = None  # a queue limit stopped the job

    def failures(self) -> Counter[str]:
        """One word per task that found no node: its most frequent node-level reason."""
        return Counter(summary.top() for summary in self.failed.values())


def best_node(
    session: Session, task: TaskInfo, nodes: Sequence[NodeInfo], where: str = ""
) -> tuple[NodeInfo | None, FitSummary]:
    """The feasible node with the best score (ties to the name) among ``nodes``, named by ``where``."""
    return session.candidates.best(_ranked_as(session, task, where), task, nodes, where)


def standing(session: Session, task: TaskInfo, nodes: Sequence[NodeInfo], *, make: bool = False) -> Ranking | None:
    """The node ranking of ``task``'s shape among ``nodes`` as it stands now (the copies of its
    request each node it fits on holds, the others' reasons counted); None while its shape has
    none, unless ``make`` asks for one."""
    return session.candidates.standing(_ranked_as(session, task, ""), task, nodes, make=make)


def _ranked_as(session: Session, task: TaskInfo, where: str) -> tuple[object, ...]:
    job = session.snapshot.jobs[task.job]
    # Soft topology scores depend on where the job's members already are: rank those per job.
    own = job.key if job.topology is not None and session.snapshot.hyper_domains else ""
    return task.shape(), where, own


def place(
    session: Session,
    job: JobInfo,
    tasks: list[TaskInfo],
    nodes: Sequence[NodeInfo],
    where: str = "",
    *,
    enough: Callable[[int], bool] | None = None,
    covered: bool = False,
) -> Attempt:
    """Place as many of ``tasks`` as fit, in task order, in a new statement (not committed);
    with ``enough``, stop as soon as it holds for the number placed so far. ``covered``: the
    queue was found to take all of ``tasks`` at once, so it takes each on top of those before
    it (quota checks are monotone), and no task is asked about again."""
    attempt = Attempt(Statement(session), len(tasks))
    queue = session.snapshot.queues[job.queue]
    hopeless: dict[tuple[object, ...], FitSummary] = {}
    for task in sorted(tasks, key=session.task_key) if len(tasks) > 1 else tasks:
        refused = None if covered else session.allocatable(queue, task)
        if refused is not None:
            attempt.refused = refused
            break
        # Free resources only shrink during an attempt: a twin of a task that found no node finds none either.
        shape = task.shape()
        summary = hopeless.get(shape)
        node = None
        if summary is None:
            node, summary = best_node(session, task, nodes, where)
        if node is None:
            attempt.failed[task.key] = hopeless[shape] = summary
            continue
        attempt.statement.allocate(task, node.name)
        if enough is not None and enough(attempt.statement.placed()):
            break
    return attempt


_LEFTOVER_RESOURCES = (quantity.CPU, quantity.MEMORY, "nvidia.com/gpu")
_NOTHING: Mapping[str, int] = MappingProxyType({})


def _leftover(session: Session, where: str, less: Mapping[str, int] = _NOTHING) -> float:
    """Free capacity a domain keeps (less ``less``), in units of the cluster's largest node,
    summed over resources. With ``less`` the most a gang may take, the least it can keep once
    the gang has placed: each term is at most the term after any such placement (a resource the
    domain lacks and the gang asks for adds a term of at most 0, where the sum after may have
    none), and rounded division and addition keep that order, so the bound holds in floating
    point too."""
    snapshot = session.snapshot
    idle = snapshot.domain_idle.get(where, {})
    total = 0.0
    for name in _LEFTOVER_RESOURCES:
        unit = snapshot.largest.get(name, 0)
        if unit and (name in idle or name in less):
            total += (idle.get(name, 0) - less.get(name, 0)) / unit
    return total


def candidate_domains(
    session: Session, request: TopologyRequest | None, placed: set[str], inside: frozenset[str] | None = None
) -> list[Domain]:
    """Domains a gang may be placed in: the right kind, allowed tier, holding its ``placed`` nodes,
    and (for a sub-gang of a gang that must live in one domain) lying ``inside`` the gang's domain."""
    if request is None:
        return []
    snapshot = session.snapshot
    if request.label:
        domains = snapshot.ib_domains
    else:
        limit = request.limit(snapshot.hyper_domains)
        domains = [d for d in snapshot.hyper_domains if limit is None or d.tier <= limit]
    return sorted(
        (d for d in domains if placed <= d.nodes and (inside is None or d.nodes <= inside)),
        key=lambda d: (d.tier, d.name),
    )


def place_in_domain(session: Session, job: JobInfo) -> tuple[Attempt | None, Verdict | None]:
    """Place the whole gang inside one domain of its topology request."""
    return place_within(
        session,
        job,
        job.pending(),
        request=job.topology,
        placed=job.nodes(),
        ready=lambda: session.job_ready(job) is None,
    )


def place_within(
    session: Session,
    job: JobInfo,
    tasks: list[TaskInfo],
    *,
    request: TopologyRequest | None,
    placed: set[str],
    ready: Callable[[], bool],
    inside: frozenset[str] | None = None,
) -> tuple[Attempt | None, Verdict | None]:
    """Place ``tasks`` in the best allowed domain (``best_domain``) for real, or say which fell short."""
    domains = candidate_domains(session, request, placed, inside)

    def attempt_in(domain: Domain) -> Attempt:
        where = where_of(request, domain)
        return place(session, job, tasks, session.snapshot.domain_nodes[where], where)

    asks = quantity.sum_lists(task.request for task in tasks)
    best, kept, tries = best_domain(session, request, domains, attempt_in, ready, asks=asks)
    if best is None:
        return None, no_domain(request, len(tasks), domains, tries)
    return (kept if kept is not None else attempt_in(best)), None


def best_domain(
    session: Session,
    request: TopologyRequest | None,
    domains: list[Domain],
    attempt_in: Callable[[Domain], Attempt],
    ready: Callable[[], bool],
    *,
    asks: Mapping[str, int],
) -> tuple[Domain | None, Attempt | None, list[tuple[str, int]]]:
    """Dry-run ``attempt_in`` in the domains, lowest tier first; in the first tier where it succeeds
    (``ready`` holds, no queue limit refused it) the best fit wins: least leftover capacity, then name.
    Also returns the winner's attempt, still applied, when it was the last one tried (else None:
    attempt it again), and how many tasks each try placed, for the reason when none succeeds
    (then every domain of every tier was tried). The attempts take at most ``asks`` from a
    domain, so a domain is tried in the order of the least it could keep (``_leftover`` less ``asks``),
    and once one fits, those that could keep no less (then by name) are not tried: they could
    not win."""
    tries: list[tuple[str, int]] = []
    for tier in sorted({d.tier for d in domains}):
        best: tuple[float, str, Domain] | None = None
        kept: Attempt | None = None  # the best one's attempt, while nothing was tried after it
        order = sorted(
            ((_leftover(session, where_of(request, d), asks), d.name, d) for d in domains if d.tier == tier),
            key=lambda entry: entry[:2],
        )
        for least, name, domain in order:
            if best is not None and (least, name) > best[:2]:
                break
            if kept is not None:
                kept.statement.discard()
                kept = None
            attempt = attempt_in(domain)
            tries.append((name, attempt.statement.placed()))
            # A gang that is ready already (minMember bound) must still place a pending task there:
            # a domain that takes none of them holds nothing for it (upstream's rescheduled tasks).
            placed_any = attempt.statement.placed() > 0 or not attempt.tasks
            if ready() and attempt.refused is None and placed_any:
                fit = (_leftover(session, where_of(request, domain)), name, domain)
                if best is None or fit[:2] < best[:2]:
                    best, kept = fit, attempt
                    continue
            attempt.statement.discard()
        if best is not None:
            return best[2], kept, tries
    return None, None, tries


def where_of(request: TopologyRequest | None, domain: Domain) -> str:
    """The snapshot's key for the nodes of ``domain`` as ``request`` names domains."""
    return where_key(request.label if request and request.label else HYPERNODE, domain)


def no_domain(
    request: TopologyRequest | None, wanted: int, domains: list[Domain], tries: list[tuple[str, int]]
) -> Verdict:
    kind = f"{request.label} value" if request and request.label else "HyperNode"
    if not domains:
        where = f" at tier <= {request.highest_tier}" if request and request.highest_tier is not None else ""
        if request and request.tier_name:
            where = f" up to tier {request.tier_name}"
        return Verdict(Reason.NO_TOPOLOGY_DOMAIN, f"no {kind}{where} holds the gang's nodes", "allocate")
    best = sorted(tries, key=lambda t: (-t[1], t[0]))[:3]
    detail = ", ".join(f"{name} fits {placed}/{wanted}" for name, placed in best)
    message = f"no single {kind} fits all {wanted} pending tasks of the gang: {detail}"
    return Verdict(Reason.NO_TOPOLOGY_DOMAIN, message, "allocate")
