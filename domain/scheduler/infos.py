"""The per-cycle types a scheduling session works on, in Volcano's vocabulary (its ``api``
package): tasks (one per pod), jobs (one per PodGroup, or a lone pod), their sub-gangs, and
queues. ``snapshot.build`` makes them each cycle (sharing the job table's, see ``job_table``);
only a ``Statement`` changes them, and it undoes what it changed on discard.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from domain import quantity
from domain.lifecycle.pod_group import PodGroupPhase
from domain.lifecycle.queue import QueuePhase
from domain.objects.core import Pod
from domain.objects.meta import ObjectKey
from domain.objects.volcano import PodGroup, Queue
from domain.quantity import ResourceList
from domain.scheduler.network_domains import TopologyRequest

ROOT = "root"
DEFAULT_QUEUE = "default"


class TaskStatus(StrEnum):
    """Where a task stands in this cycle, in Volcano's vocabulary."""

    PENDING = "Pending"  # ours, waiting for a node
    PIPELINED = "Pipelined"  # waits on a node whose room preemption is releasing; holds that room
    ALLOCATED = "Allocated"  # placed in this cycle (tentatively until its statement commits)
    BOUND = "Bound"  # has a node, not running yet
    RUNNING = "Running"
    RELEASING = "Releasing"  # being deleted or evicted; still holds its node's resources
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


PLACED = frozenset({TaskStatus.ALLOCATED, TaskStatus.BOUND, TaskStatus.RUNNING, TaskStatus.SUCCEEDED})
"""Statuses that count towards a gang's minimum (Volcano's ReadyTaskNum)."""
HOLDING = frozenset({TaskStatus.ALLOCATED, TaskStatus.BOUND, TaskStatus.RUNNING})
"""Statuses whose requests a job's queue is charged for (Volcano's AllocatedStatus): a finished
pod counts towards its gang, but no longer holds resources."""


@dataclass(slots=True, eq=False)
class TaskInfo:
    key: ObjectKey
    pod: Pod
    job: ObjectKey
    request: ResourceList
    status: TaskStatus
    node: str = ""
    priority: int = 0
    role: str = ""  # Volcano Job task name, for minTaskMember
    best_effort: bool = field(init=False)  # no requests beyond the pod slot itself: only backfill places these
    _shape: tuple[object, ...] | None = field(default=None, init=False)  # ``shape()``, once made
    # what held room reads of it for runtimes, for one user label: (label, given estimate, user,
    # start in seconds), once read (``held_room``)
    runtime: tuple[str, float | None, str | None, float | None] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.best_effort = True
        for name, amount in self.request.items():  # a loop: a generator costs more, once per pod
            if amount and name != quantity.PODS:
                self.best_effort = False
                break

    def shape(self) -> tuple[object, ...]:
        """What predicates look at: requests, selector, affinity, tolerations (made once per task:
        a task's pod and request never change). Past the request, what its node checks look at."""
        if self._shape is None:
            spec = self.pod.spec
            self._shape = (
                tuple(sorted(self.request.items())),
                tuple(sorted(spec.node_selector.items())),
                repr(spec.affinity),
                repr(spec.tolerations),
            )
        return self._shape


@dataclass(slots=True, eq=False)
class SubGroup:
    name: str  # <policy>-<label values>
    policy: str
    size: int  # the sub-gang's minimum: placed whole or not at all
    topology: TopologyRequest | None
    tasks: list[TaskInfo] = field(default_factory=list)


@dataclass(slots=True, eq=False)
class Tally:
    """A job's tasks as they stand at one stamp of the job (``JobInfo.tally``): never change it."""

    stamp: int
    size: int  # how many tasks the job had
    pending: list[TaskInfo]
    asking: list[TaskInfo]  # the pending ones that ask for room (not best effort)
    pipelined: list[TaskInfo]
    statuses: dict[TaskStatus, int]  # how many tasks have each status
    placed: int  # how many count towards the gang's minimum (``PLACED``)
    names: tuple[str, ...] | None = None  # the resources the pending ones ask for, sorted, once asked
    ordered: tuple[object, list[TaskInfo]] | None = None  # ``asking`` in a session's task order, and its key
    whole: TaskInfo | None = None  # ``asking`` as one task (``retry``), once asked
    # what ``asking``'s runtimes are read from, for one user label: (label, each distinct (given
    # estimate, user); None when one has neither), once asked (``held_room``)
    runtimes: tuple[str, tuple[tuple[float | None, str | None], ...] | None] | None = None

    def count(self, *statuses: TaskStatus) -> int:
        if len(statuses) == 1:
            return self.statuses.get(statuses[0], 0)
        return sum(self.statuses.get(status, 0) for status in statuses)

    def asked_names(self) -> tuple[str, ...]:
        if self.names is None:
            self.names = tuple(sorted({name for t in self.pending for name in t.request}))
        return self.names


@dataclass(slots=True, eq=False)
class JobInfo:
    key: ObjectKey
    group: PodGroup | None  # None for a lone pod: a gang of one in the default queue
    queue: str
    min_member: int
    min_task_member: dict[str, int]
    min_resources: ResourceList | None
    created: float
    phase: PodGroupPhase
    tasks: list[TaskInfo] = field(default_factory=list)
    allocated: ResourceList = field(default_factory=dict)
    topology: TopologyRequest | None = None
    terminating: bool = False
    priority: int = 0
    subgroups: list[SubGroup] = field(default_factory=list)  # sub-gangs (subGroupPolicy), by name
    min_sub_groups: dict[str, int] = field(default_factory=dict)  # policy -> sub-gangs needed ready
    alike: bool | None = field(default=None, init=False)  # all its tasks asking for room have one shape
    # moved on whenever a task of it changes status (``move``): what was known at one stamp holds at it
    stamp: int = field(default=0, init=False)
    _moves: int = field(default=0, init=False)  # stamps given: each move takes a new one
    _tally: Tally | None = field(default=None, init=False)

    def all_alike(self) -> bool:
        """Whether all its tasks that ask for room (not best-effort) have one shape (a task's
        shape never changes, so this is known once per job)."""
        if self.alike is None:
            shapes = {t.shape() for t in self.tasks if not t.best_effort}
            self.alike = len(shapes) == 1
        return self.alike

    def move(self, task: TaskInfo, status: TaskStatus, node: str) -> None:
        """Give ``task`` (one of this job's) another status and node: the only way one changes."""
        task.status, task.node = status, node
        self._moves += 1
        self.stamp = self._moves

    def rewind(self, stamp: int) -> None:
        """Back to an earlier ``stamp``: only when every move since has been undone, so its tasks
        are as they were then (later moves still take stamps never given)."""
        self.stamp = stamp

    def tally(self) -> Tally:
        """Its tasks by status, counted once per stamp (a waiting gang is asked every cycle)."""
        tally, tasks = self._tally, self.tasks
        if tally is not None and tally.stamp == self.stamp and tally.size == len(tasks):
            return tally
        pending = [t for t in tasks if t.status is TaskStatus.PENDING]
        statuses: dict[TaskStatus, int] = {}
        for task in tasks:
            statuses[task.status] = statuses.get(task.status, 0) + 1
        self._tally = tally = Tally(
            self.stamp, len(tasks), pending, [t for t in pending if not t.best_effort],
            [t for t in tasks if t.status is TaskStatus.PIPELINED] if TaskStatus.PIPELINED in statuses else [],
            statuses, sum(n for status, n in statuses.items() if status in PLACED),
        )  # fmt: skip
        return tally

    def pending(self) -> list[TaskInfo]:
        """Its pending tasks, in task order (never change the list)."""
        return self.tally().pending

    def asking_in_order(self, config: object, key: Callable[[TaskInfo], Any]) -> list[TaskInfo]:
        """Its pending tasks that ask for room, in ``config``'s task order (``key``: a task's own,
        its priority and name), sorted once per stamp and configuration (never change the list)."""
        tally = self.tally()
        if tally.ordered is None or tally.ordered[0] is not config:
            tally.ordered = (config, sorted(tally.asking, key=key))
        return tally.ordered[1]

    def placed(self) -> int:
        return self.tally().placed

    def ready_members(self) -> int:
        """Its members placed, and its pending best-effort ones (backfill puts them in any idle
        slot): read from the tally when it is current, else counted (a tally is not made for a
        stamp an attempt is about to rewind)."""
        tally = self._tally
        if tally is not None and tally.stamp == self.stamp and tally.size == len(self.tasks):
            return tally.placed + len(tally.pending) - len(tally.asking)
        return sum(1 for t in self.tasks if t.status in PLACED or (t.status is TaskStatus.PENDING and t.best_effort))

    def pipelined(self) -> list[TaskInfo]:
        """Its pipelined tasks, in task order (never change the list)."""
        return self.tally().pipelined

    def nodes(self) -> set[str]:
        """Nodes its placed members run on: a topology domain must hold them too."""
        return {t.node for t in self.tasks if t.status in PLACED and t.node}


@dataclass(slots=True, eq=False)
class QueueInfo:
    name: str
    queue: Queue | None  # None for the implicit root and default queues
    parent: str
    weight: int
    capability: ResourceList
    deserved: ResourceList
    guarantee: ResourceList
    state: QueuePhase
    created: float
    children: list[str] = field(default_factory=list)
    allocated: ResourceList = field(default_factory=dict)  # requests of its jobs' holding tasks
    asked: ResourceList = field(default_factory=dict)  # requests of its jobs' pending and pipelined tasks

    @property
    def is_open(self) -> bool:
        return self.state is QueuePhase.OPEN
