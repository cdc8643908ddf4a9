"""Statement: tentative placements and evictions of one job, applied to the snapshot at once
and either committed (they become decisions) or discarded (undone in reverse order).

This is how a gang is all-or-nothing: allocate places the members one by one in a statement
and commits only when the job is ready (Volcano's framework/statement.go).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from domain import quantity
from domain.scheduler.session import Session
from domain.scheduler.snapshot import TaskInfo, TaskStatus


class Operation(StrEnum):
    ALLOCATE = "Allocate"
    EVICT = "Evict"


@dataclass
class Statement:
    session: Session
    operations: list[tuple[Operation, TaskInfo, str]] = field(default_factory=list)
    _prior: dict[int, TaskStatus] = field(default_factory=dict)  # id(task) -> status before its eviction

    def allocate(self, task: TaskInfo, node: str) -> None:
        self._place(task, node, +1)
        self.operations.append((Operation.ALLOCATE, task, node))

    def evict(self, task: TaskInfo, reason: str) -> None:
        # A victim keeps holding its node until it is gone; its queue and job stop counting it.
        self._account(task, -1)
        self._prior[id(task)] = task.status
        task.status = TaskStatus.RELEASING
        self.operations.append((Operation.EVICT, task, reason))

    def placed(self) -> int:
        return sum(1 for op, _, _ in self.operations if op is Operation.ALLOCATE)

    def commit(self) -> None:
        for op, task, detail in self.operations:
            if op is Operation.ALLOCATE:
                self.session.found.binds.append(task)
            else:
                self.session.found.evictions.append((task, detail))
        self.operations = []

    def discard(self) -> None:
        for op, task, _ in reversed(self.operations):
            if op is Operation.ALLOCATE:
                self._place(task, "", -1)
            else:
                task.status = self._prior.pop(id(task))
                self._account(task, +1)
        self.operations = []

    def _place(self, task: TaskInfo, node: str, sign: int) -> None:
        snapshot = self.session.snapshot
        info = snapshot.nodes[node or task.node]
        delta = {k: -sign * v for k, v in task.request.items()}
        quantity.add(info.idle, delta)
        snapshot.touched.add(info.name)  # the next cycle's snapshot builds this node again
        for where in snapshot.node_domains.get(info.name, ()):
            quantity.add(snapshot.domain_idle[where], delta)
        self.session.candidates.changed(info)
        task.status, task.node = (TaskStatus.ALLOCATED, node) if sign > 0 else (TaskStatus.PENDING, "")
        self._account(task, sign)

    def _account(self, task: TaskInfo, sign: int) -> None:
        snapshot = self.session.snapshot
        delta = {k: sign * v for k, v in task.request.items()}
        job = snapshot.jobs[task.job]
        quantity.add(job.allocated, delta)
        queue = snapshot.queues.get(job.queue)
        if queue is not None:
            quantity.add(queue.allocated, delta)
        self.session.allocated(task, sign)
