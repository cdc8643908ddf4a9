"""Statement: tentative placements, pipelines and evictions of one job, applied to the snapshot
at once and either committed (they become decisions) or discarded (undone in reverse order).

This is how a gang is all-or-nothing: allocate places the members one by one in a statement
and commits only when the job is ready (Volcano's framework/statement.go). A pipelined task
holds room on a node that evicted pods are still releasing: its node's idle shrinks as for a
placement, but its queue is not charged until it binds (as Volcano's Pipelined status).
A Hold (``held_room``) keeps a waiting task's room from later jobs; it is given back for a job
it is lent to and taken again after that job's attempt, at once on the nodes the attempt left
as they were.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from domain import quantity
from domain.quantity import ResourceList
from domain.scheduler.infos import TaskInfo, TaskStatus
from domain.scheduler.session import Session


class Operation(StrEnum):
    ALLOCATE = "Allocate"
    EVICT = "Evict"
    PIPELINE = "Pipeline"
    UNPIPELINE = "Unpipeline"  # a pipelined task gives its room back, to be placed afresh
    HOLD = "Hold"  # a waiting task keeps what its node has free of its request from later jobs (``held_room``)


@dataclass
class Statement:
    session: Session
    operations: list[tuple[Operation, TaskInfo, str]] = field(default_factory=list)
    _prior: dict[int, TaskStatus] = field(default_factory=dict)  # id(task) -> status before its eviction
    _held: list[ResourceList] = field(default_factory=list)  # what each Hold took, in order
    _returned: dict[str, ResourceList] = field(default_factory=dict)  # per node, its free room once given back
    _totals: dict[str, ResourceList] | None = None  # per node, what its Holds took (``held_totals``)

    def allocate(self, task: TaskInfo, node: str) -> None:
        snapshot = self.session.snapshot
        snapshot.opened(snapshot.jobs[task.job])  # a discard puts the job back as it was, unless spoiled
        if task.status is not TaskStatus.PENDING or task.node:
            snapshot.spoil(task.job)  # a discard would leave it pending: not as it was
        self._place(task, node, +1)
        self.operations.append((Operation.ALLOCATE, task, node))

    def evict(self, task: TaskInfo, reason: str) -> None:
        # A victim keeps holding its node until it is gone; its queue and job stop counting it.
        self._account(task, -1)
        self._prior[id(task)] = task.status
        self._move(task, TaskStatus.RELEASING, task.node)
        self.operations.append((Operation.EVICT, task, reason))

    def pipeline(self, task: TaskInfo, node: str) -> None:
        self._hold(task, node, +1)
        self._move(task, TaskStatus.PIPELINED, node)
        self.operations.append((Operation.PIPELINE, task, node))

    def unpipeline(self, task: TaskInfo) -> None:
        node = task.node
        self._hold(task, node, -1)
        self._move(task, TaskStatus.PENDING, "")
        self.operations.append((Operation.UNPIPELINE, task, node))

    def hold(self, task: TaskInfo, node: str) -> None:
        """``task`` keeps what ``node`` has free of its request, up to all of it, from every later
        placement of the session; it stays pending and its queue is not charged."""
        taken = _free_of(self.session.snapshot.nodes[node].idle, task.request)
        self._take(node, taken, +1)
        self.operations.append((Operation.HOLD, task, node))
        self._held.append(taken)
        self._totals = None

    def would_hold(self, places: list[tuple[TaskInfo, str]]) -> list[tuple[str, ResourceList]]:
        """What ``hold`` would take for each of ``places`` (task, node) in turn, were they held
        now one after the other, without taking it."""
        nodes = self.session.snapshot.nodes
        free: dict[str, ResourceList] = {}  # node -> its free room once the places before took theirs
        taken: list[tuple[str, ResourceList]] = []
        for task, node in places:
            if node not in free:
                free[node] = dict(nodes[node].idle)
            room = _free_of(free[node], task.request)
            quantity.add(free[node], {name: -amount for name, amount in room.items()})
            taken.append((node, room))
        return taken

    def holding(self) -> list[tuple[str, ResourceList]]:
        """Each Hold's node and what it took there, in order."""
        nodes = [node for op, _, node in self.operations if op is Operation.HOLD]
        return list(zip(nodes, self._held, strict=True))

    def held_totals(self) -> dict[str, ResourceList]:
        """Per node, what its Holds took: the same dict until a Hold takes otherwise (never change it)."""
        if self._totals is None:
            self._totals = {}
            for node, taken in self.holding():
                quantity.add(self._totals.setdefault(node, {}), taken)
        return self._totals

    def give_back(self) -> None:
        """The Holds' room comes back to their nodes for a while (``hold_again`` takes it again)."""
        totals, nodes = self.held_totals(), self.session.snapshot.nodes
        for node, total in reversed(totals.items()):
            self._take(node, total, -1)
        self._returned = {node: dict(nodes[node].idle) for node in totals}

    def hold_again(self) -> None:
        """After ``give_back``: each Hold takes again what its node has free of its request, in the
        same order. On a node whose free room is what the give back left, each takes what it took,
        at once: the give back is undone, whatever other statements' Holds took there since this
        one's (statements lent together give back in reverse order and hold again in order, so
        each finds the room its own give back left)."""
        nodes = self.session.snapshot.nodes
        again: set[str] = set()  # the nodes whose free room changed: their Holds take afresh
        for node, total in self.held_totals().items():
            if _same(nodes[node].idle, self._returned[node]):
                self._take(node, total, +1)
            else:
                again.add(node)
        if not again:
            return
        self._totals = None
        held = (item for item in self.operations if item[0] is Operation.HOLD)
        for index, (_, task, node) in enumerate(held):
            if node in again:
                taken = _free_of(nodes[node].idle, task.request)
                self._take(node, taken, +1)
                self._held[index] = taken

    def placed(self) -> int:
        return sum(1 for op, _, _ in self.operations if op is Operation.ALLOCATE)

    def commit(self) -> None:
        found, snapshot = self.session.found, self.session.snapshot
        for op, task, detail in self.operations:
            if op is Operation.ALLOCATE:
                found.binds.append(task)
                snapshot.closed(snapshot.jobs[task.job], committed=True)
            elif op is Operation.EVICT:
                found.evictions.append((task, detail))
            elif op is Operation.HOLD:
                continue  # room is held for one session: nothing for the cluster to do
            else:
                found.pipelines.append(task)  # close records where it waits, or that it no longer does
        self.operations = []

    def discard(self) -> None:
        snapshot = self.session.snapshot
        for op, task, node in reversed(self.operations):
            if op is Operation.ALLOCATE:
                self._place(task, "", -1)
                snapshot.closed(snapshot.jobs[task.job], committed=False)
            elif op is Operation.EVICT:
                self._move(task, self._prior.pop(id(task)), task.node)
                self._account(task, +1)
            elif op is Operation.PIPELINE:
                self._hold(task, node, -1)
                self._move(task, TaskStatus.PENDING, "")
            elif op is Operation.HOLD:
                self._take(node, self._held.pop(), -1)
            else:
                self._hold(task, node, +1)
                self._move(task, TaskStatus.PIPELINED, node)
        self.operations, self._returned, self._totals = [], {}, None

    def _place(self, task: TaskInfo, node: str, sign: int) -> None:
        """Place (+1) or take back (-1) an allocation; ``allocate``, ``commit`` and ``discard``
        tell the snapshot whether the job changed."""
        self._take(node or task.node, task.request, sign)
        self._move(task, *((TaskStatus.ALLOCATED, node) if sign > 0 else (TaskStatus.PENDING, "")))
        self._charge(task, sign)

    def _move(self, task: TaskInfo, status: TaskStatus, node: str) -> None:
        self.session.snapshot.jobs[task.job].move(task, status, node)

    def _hold(self, task: TaskInfo, node: str, sign: int) -> None:
        """The task takes (+1) or gives back (-1) its request on ``node`` and in its domains."""
        self.session.snapshot.spoil(task.job)
        self._take(node, task.request, sign)

    def _take(self, node: str, amounts: ResourceList, sign: int) -> None:
        """``amounts`` leave (+1) or come back to (-1) the free room of ``node`` and its domains."""
        snapshot = self.session.snapshot
        info = snapshot.nodes[node]
        delta = {k: -sign * v for k, v in amounts.items()}
        quantity.add(info.idle, delta)
        snapshot.touched.add(info.name)  # the next cycle's snapshot builds this node again
        for where in snapshot.node_domains.get(info.name, ()):
            quantity.add(snapshot.domain_idle[where], delta)
        self.session.candidates.changed(info)

    def _account(self, task: TaskInfo, sign: int) -> None:
        self.session.snapshot.spoil(task.job)
        self._charge(task, sign)

    def _charge(self, task: TaskInfo, sign: int) -> None:
        """The task's job and queue count (+1) or stop counting (-1) its request."""
        snapshot = self.session.snapshot
        delta = {k: sign * v for k, v in task.request.items()}
        job = snapshot.jobs[task.job]
        quantity.add(job.allocated, delta)
        queue = snapshot.queues.get(job.queue)
        if queue is not None:
            quantity.add(queue.allocated, delta)
        self.session.allocated(task, sign)


def _same(room: ResourceList, other: ResourceList) -> bool:
    """Whether two free rooms are equal, a resource missing from one being none of it."""
    return room == other or all(room.get(name, 0) == other.get(name, 0) for name in room.keys() | other.keys())


def _free_of(idle: ResourceList, request: ResourceList) -> ResourceList:
    """What a Hold takes: of each resource ``request`` asks for, what ``idle`` has free, up to the request."""
    return {name: min(amount, max(idle.get(name, 0), 0)) for name, amount in request.items()}
