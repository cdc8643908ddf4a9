"""Held room: a gang that waits past its bound keeps, for the rest of the cycle, what its nodes
have free of what it needs, so later jobs (and backfill) cannot take the room it is waiting for.

Volcano's allocate leaves a pipelined job's statement neither committed nor discarded (JobPipelined,
used by the ``sla`` plugin); its old ``reserve`` action locked whole nodes for one elected job.
Here, without runtime estimates, the nodes chosen are those closest to holding the gang's
tasks: each task, in task order, goes to the node (of those it could run on once they are
empty) whose free room covers most of its request, ties to node order; a node takes as many
tasks as its allocatable holds. On each one the task holds what is free of its request, up to
all of it; the gang stays pending and its queue is not charged. Running pods on those nodes
finish and no one else starts there, so the room the gang needs only grows: the next cycle, it
goes first again and either fits or holds again, on the nodes then closest (whose free room is
at least what the ones held now will have). Nothing is decided by a hold: the cycle's
decisions are those of the placements it leaves to the other jobs.
"""

from __future__ import annotations

from collections.abc import Callable

from domain import quantity
from domain.quantity import ResourceList
from domain.scheduler.extension_points import Vote
from domain.scheduler.infos import JobInfo, TaskInfo
from domain.scheduler.node_table import NodeInfo
from domain.scheduler.predicates import fit_failures
from domain.scheduler.session import Key, Session
from domain.scheduler.statement import Statement


def _covered(task: TaskInfo, node: NodeInfo) -> float:
    """How much of the task's request the node's free room covers, summed over its resources (0 to one each)."""
    return sum(
        min(max(node.idle.get(name, 0), 0), amount) / amount for name, amount in task.request.items() if amount > 0
    )


def hold(session: Session, job: JobInfo) -> list[str]:
    """Hold room for the members ``job`` still needs to reach its minimum (its pending tasks with
    requests, in task order); returns the nodes held, in the order taken."""
    short = job.min_member - job.placed()
    tasks = sorted((t for t in job.pending() if not t.best_effort), key=session.task_key)[: max(short, 0)]
    statement = Statement(session)
    nodes = session.snapshot.node_list()
    budget: dict[str, ResourceList] = {}  # node -> allocatable less the tasks of this job planned there
    held: list[str] = []
    for task in tasks:
        best: NodeInfo | None = None
        best_cover = -1.0
        for node in nodes:
            room = budget.get(node.name, node.allocatable)
            if fit_failures(task.pod, task.request, node.node, room):
                continue
            cover = _covered(task, node)
            if cover > best_cover:
                best, best_cover = node, cover
        if best is None:
            statement.discard()  # the cluster could never hold the gang: nothing to wait for
            return []
        room = budget[best.name] = dict(budget.get(best.name, best.allocatable))
        quantity.add(room, {name: -amount for name, amount in task.request.items()})
        statement.hold(task, best.name)
        held.append(best.name)
    return held


def register(session: Session, plugin: str, order: Callable[[JobInfo], Key], permit: Callable[[JobInfo], Vote]) -> None:
    """A waiting-bound plugin's callbacks: its job order, and ``permit`` (Permit for a job past
    its bound, else Abstain) at both JobEnqueueable (enqueued at once) and JobPipelined (holds room)."""
    session.add_job_order(plugin, order)
    session.add_job_enqueueable(plugin, lambda job: (permit(job), None))
    session.add_job_pipelined(plugin, permit)
