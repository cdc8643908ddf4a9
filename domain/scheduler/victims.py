"""Eviction: the shared mechanics of the preempt and reclaim actions. Which gangs starve, and
how victims are chosen on a node (cheapest first, only until the task fits, resources of pods
already on their way out counted as free) so that the set of victims stays small. A pod
annotated (or labelled) ``volcano.sh/preemptable: "false"`` is never a victim, and a pod with
``spec.preemptionPolicy: Never`` never preempts or reclaims for itself (it may still be a victim),
as upstream.

The preemptor's tasks are pipelined onto the nodes being released (Volcano's Pipelined): each
holds its room there from now on, so no other job, in this cycle or a later one, takes what
its victims release; it binds in a later cycle, once the victims are gone."""

from __future__ import annotations

from collections.abc import Callable

from domain import quantity
from domain.lifecycle.pod_group import PodGroupPhase
from domain.scheduler.infos import JobInfo, TaskInfo, TaskStatus
from domain.scheduler.node_table import NodeInfo
from domain.scheduler.session import Session
from domain.scheduler.statement import Statement

EVICTABLE = frozenset({TaskStatus.RUNNING, TaskStatus.BOUND})
PREEMPTABLE = "volcano.sh/preemptable"
Victims = Callable[[TaskInfo, list[TaskInfo]], list[TaskInfo]]


def starving(session: Session) -> list[JobInfo]:
    """Admitted gangs in open queues with pending tasks needing resources whose placed and
    pipelined members do not yet make up their minMember."""
    out = []
    for job in session.snapshot.jobs.values():
        queue = session.snapshot.queues.get(job.queue)
        if job.phase is PodGroupPhase.PENDING or job.terminating or queue is None or not queue.is_open:
            continue
        if _has_minimum(job):
            continue  # as upstream's gang: only a gang below its minMember starves, not its extra members
        if any(not t.best_effort for t in job.pending()) and session.job_valid(job) is None:
            out.append(job)
    return sorted(out, key=lambda j: (session.queue_key(session.snapshot.queues[j.queue]), session.job_key(j)))


def is_preemptable(task: TaskInfo) -> bool:
    """The pod's ``volcano.sh/preemptable`` (annotation first, then label); true when unset,
    false when it is not a boolean (upstream's GetPodPreemptable)."""
    meta = task.pod.metadata
    value = meta.annotations.get(PREEMPTABLE, meta.labels.get(PREEMPTABLE))
    if value is None:
        return True
    return value in _TRUE


_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})  # what Go's strconv.ParseBool reads as true


def can_preempt(task: TaskInfo) -> bool:
    """Whether the pod may evict others for itself: not with ``preemptionPolicy: Never``."""
    return task.pod.spec.preemption_policy != "Never"


def _has_minimum(job: JobInfo) -> bool:
    """Whether the gang's placed and pipelined members make up its minMember."""
    return job.placed() + len(job.pipelined()) >= job.min_member


def _releasing(session: Session, node: NodeInfo) -> dict[str, int]:
    """Resources of pods leaving the node (what pipelined tasks hold is already out of its idle)."""
    freed: dict[str, int] = {}
    for job in session.snapshot.jobs.values():
        for task in job.tasks:
            if task.status is TaskStatus.RELEASING and task.node == node.name:
                quantity.add(freed, task.request)
    return freed


def _fits(session: Session, task: TaskInfo, node: NodeInfo, extra: dict[str, int]) -> bool:
    idle = node.idle
    node.idle = quantity.sum_lists([idle, extra])
    try:
        return not session.predicate(task, node)
    finally:
        node.idle = idle


def _victims_on(session: Session, task: TaskInfo, node: NodeInfo, allowed: list[TaskInfo]) -> list[TaskInfo] | None:
    freed = _releasing(session, node)
    chosen: list[TaskInfo] = []
    jobs = session.snapshot.jobs
    # Cheapest first, as upstream's victim queue: the pods of the lowest-priority job, then the
    # lowest-priority pods inside a job.
    on_node = (v for v in allowed if v.node == node.name)
    for victim in sorted(on_node, key=lambda v: (jobs[v.job].priority, v.priority, v.key)):
        if _fits(session, task, node, freed):
            break
        chosen.append(victim)
        quantity.add(freed, victim.request)
    return chosen if _fits(session, task, node, freed) else None


def evict_for(session: Session, job: JobInfo, candidates: list[TaskInfo], victims: Victims, reason: str) -> None:
    statement = Statement(session)
    evicted = False
    for task in sorted(job.pending(), key=session.task_key):
        if _has_minimum(job):
            break  # evict for the gang's minimum, never for the members beyond it
        if task.best_effort or not can_preempt(task):
            continue
        for node in session.snapshot.nodes.values():
            # The plugins judge each node's candidates on their own, as upstream asks them per node:
            # a victim on a node where the task cannot fit must not use up its queue's spare share.
            on_node = [c for c in candidates if c.node == node.name and c.status in EVICTABLE and is_preemptable(c)]
            chosen = _victims_on(session, task, node, victims(task, on_node) if on_node else [])
            if chosen is None:
                continue
            for victim in chosen:
                statement.evict(victim, f"{reason}: for {task.key}")
            evicted = evicted or bool(chosen)
            # Its room on the node is held from now on: no other preemptor counts it.
            statement.pipeline(task, node.name)
            break
    if evicted and _has_minimum(job):
        statement.commit()
    else:
        statement.discard()
