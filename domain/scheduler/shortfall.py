"""Shortfall: what allocate's attempt finds for a gang of alike tasks that cannot all be placed,
worked out without placing them.

When a gang's pending tasks share one shape and the predicates look at the task and the node
alone, a node takes ``copies`` of them (as many as its free room holds, none when a check of the
node object fails) whatever the order, and each placement takes one copy from exactly one node.
So an attempt places ``min(tasks, sum of copies)`` of them, in task order; when that is fewer
than the gang still needs, the attempt fails, every node is left with its copies taken, and the
first task that finds no node (its twins after it the same) finds each node's reasons for that
left-over room. ``find`` gives those findings (how many were placed, each failed task's fit
summary, the gang's verdict with those tasks placed) at the cost of one look at each node the
shape fits on (its node ranking knows which, and why the others do not), instead of a
placement, a ranking question and an undo per task. Allocate uses it only for a plain attempt
(``retry.can_keep``: node-local predicates and scores, no topology, no pipelined members) whose
queue takes all the tasks at once, so no quota check could stop it earlier.
``tests/unit/domain/scheduler/test_shortfall.py`` checks it against the attempts it stands for.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from domain.reasons import FitSummary, Verdict
from domain.scheduler import placement
from domain.scheduler.infos import JobInfo, TaskInfo, TaskStatus
from domain.scheduler.node_table import NodeInfo
from domain.scheduler.session import Session


@dataclass(frozen=True, slots=True)
class Shortfall:
    placed: int  # how many of the tasks the attempt places before it fails
    failed: dict[str, FitSummary]  # task key -> why it found no node (one summary for all twins)
    verdict: Verdict  # the gang's, with ``placed`` of its tasks placed


def find(
    session: Session, job: JobInfo, tasks: list[TaskInfo], nodes: Sequence[NodeInfo], need: int
) -> Shortfall | None:
    """The findings of placing ``tasks`` (in task order) on ``nodes`` when they are alike and
    fewer than ``need`` of them fit; None otherwise (then only an attempt says where they go)."""
    if len(tasks) < 2 or need <= 0:
        return None
    first = tasks[0]
    if not job.all_alike():
        return None
    wanted = [(name, amount) for name, amount in first.request.items() if amount > 0]
    if not wanted:
        return None
    standing = placement.standing(session, first, nodes)
    if standing is None:
        return None  # a shape asked once at most: the attempt's scan answers
    feasible, others = standing
    copies: list[tuple[NodeInfo, int]] = []  # in no set order: only their sums are read
    total = 0
    for node in feasible:
        idle = node.idle
        copies.append((node, min(idle.get(name, 0) // amount for name, amount in wanted)))
        total += copies[-1][1]
        if total >= need:
            return None  # enough fit: where they go is the attempt's to say
    placed = min(total, len(tasks))
    # The attempt places the first ``placed`` tasks in task order (none: no order to take).
    ordered = sorted(tasks, key=session.task_key) if placed else tasks
    failed: dict[str, FitSummary] = {}
    if placed < len(ordered):
        summary = _left_over(session, first, len(nodes), copies, others)
        failed = dict.fromkeys((t.key for t in ordered[placed:]), summary)
    for task in ordered[:placed]:  # as the attempt leaves them when the gang's readiness is asked
        job.move(task, TaskStatus.ALLOCATED, "")
    try:
        verdict = session.job_ready(job)
    finally:
        for task in ordered[:placed]:
            job.move(task, TaskStatus.PENDING, "")
    if verdict is None:
        return None  # ready with fewer than ``need``: not a case this stands for
    return Shortfall(placed, failed, verdict)


def _left_over(
    session: Session, task: TaskInfo, nodes: int, copies: list[tuple[NodeInfo, int]], others: Counter[str]
) -> FitSummary:
    """Why ``task`` fits none of ``nodes`` nodes once each node it fits on has given its copies
    of the request away (``copies``); the ``others`` say why, counted, as they are."""
    request = task.request
    counts = Counter(others)
    for node, taken in copies:
        idle = dict(node.idle)
        for name, amount in request.items():
            idle[name] = idle.get(name, 0) - taken * amount
        counts.update(session.predicate(task, NodeInfo(node.name, node.node, node.allocatable, idle, node.labels)))
    summary = FitSummary(nodes)
    summary.reasons = Counter({reason: n for reason, n in counts.items() if n > 0})
    return summary
