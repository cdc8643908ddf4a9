"""Session: one cycle's snapshot, the callbacks plugins registered at each extension point,
the dispatchers that combine them by each point's rule, and what the actions found out
(binds, evictions, the verdicts and fit summaries that explain why a job waits)."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, NamedTuple, TypeVar

from domain.objects.meta import ObjectKey
from domain.quantity import ResourceList
from domain.reasons import FitSummary, Verdict
from domain.recorded import HeldRoom
from domain.scheduler import node_columns
from domain.scheduler.candidates import Candidates
from domain.scheduler.config import SchedulerConfig
from domain.scheduler.extension_points import ExtensionPoint, Vote
from domain.scheduler.infos import JobInfo, QueueInfo, TaskInfo
from domain.scheduler.node_table import NodeInfo
from domain.scheduler.snapshot import Snapshot

Key = tuple[float, ...]
F = TypeVar("F")
T = TypeVar("T")
_SWITCH = {point: point.switch for point in ExtensionPoint}  # read once: a property on every registration costs


class Hook(NamedTuple, Generic[F]):
    tier: int
    plugin: str
    fn: F
    columns: Any = None  # ``fn`` over node columns (``node_columns.Fit`` or ``Score``), if the plugin gives it


@dataclass(frozen=True, slots=True)
class Plugin:
    """A plugin as configured: its name and what it registers when a session opens."""

    name: str
    on_open: Callable[[Session], None]


@dataclass
class Findings:
    """What the actions learnt about each job, for the status decisions at close."""

    binds: list[TaskInfo] = field(default_factory=list)  # committed placements, in order
    evictions: list[tuple[TaskInfo, str]] = field(default_factory=list)
    verdicts: dict[ObjectKey, list[Verdict]] = field(default_factory=dict)
    fits: dict[ObjectKey, dict[ObjectKey, FitSummary]] = field(default_factory=dict)  # job -> task -> summary
    tentative: dict[ObjectKey, int] = field(default_factory=dict)  # most members placed in a discarded try
    pipelines: list[TaskInfo] = field(default_factory=list)  # tasks pipelined, or unpipelined, by a commit
    holding: list[HeldRoom] = field(default_factory=list)  # room gangs past their bound hold at allocate's end
    written: list[ObjectKey] = field(default_factory=list)  # PodGroups whose status close wrote, by key

    def refuse(self, job: JobInfo, verdict: Verdict) -> None:
        self.verdicts.setdefault(job.key, []).append(verdict)


@dataclass
class Seen:
    """What a dry run of the cycle (``volcano_cycle.dry_run``, for ``explain``) keeps of
    allocate: the room gangs hold at its end, and for each watched job, as it was last tried,
    the nodes' free room and the room held that it could not use."""

    watch: frozenset[ObjectKey]
    holding: list[HeldRoom] = field(default_factory=list)  # the room gangs hold at allocate's end
    room: dict[ObjectKey, dict[str, ResourceList]] = field(default_factory=dict)
    held_from: dict[ObjectKey, list[HeldRoom]] = field(default_factory=dict)


class Session:
    def __init__(self, snapshot: Snapshot, config: SchedulerConfig) -> None:
        self.snapshot, self.config = snapshot, config
        self.found = Findings()
        self.tier = 0  # the tier of the plugin whose on_open is running
        self.switches: Mapping[str, object] = {}  # that plugin's options: its Enabled* switches
        self._queue_order: list[Hook[Callable[[QueueInfo], Key]]] = []
        self._job_order: list[Hook[Callable[[JobInfo], Key]]] = []
        self._task_order: list[Hook[Callable[[TaskInfo], Key]]] = []
        self._job_valid: list[Hook[Callable[[JobInfo], Verdict | None]]] = []
        self._enqueueable: list[Hook[Callable[[JobInfo], tuple[Vote, Verdict | None]]]] = []
        self._enqueued: list[Hook[Callable[[JobInfo], None]]] = []
        self._allocatable: list[Hook[Callable[[QueueInfo, TaskInfo], Verdict | None]]] = []
        self._predicate: list[Hook[Callable[[TaskInfo, NodeInfo], list[str]]]] = []
        self._node_order: list[Hook[Callable[[TaskInfo, NodeInfo], float]]] = []
        self._job_ready: list[Hook[Callable[[JobInfo], Verdict | None]]] = []
        self._job_pipelined: list[Hook[Callable[[JobInfo], Vote]]] = []
        self._allocated: list[Hook[Callable[[TaskInfo, int], None]]] = []
        self._preemptable: list[Hook[Callable[[TaskInfo, list[TaskInfo]], list[TaskInfo]]]] = []
        self._reclaimable: list[Hook[Callable[[TaskInfo, list[TaskInfo]], list[TaskInfo]]]] = []
        self.points: set[ExtensionPoint] = set()  # points that have at least one callback
        self.node_local = False  # predicates and scores look at the task and the node alone (``registry``)
        self.kept: dict[str, object] = {}  # what actions keep for the next session (``SchedulerCache.kept``)
        self.seen: Seen | None = None  # kept by a dry run only
        self.candidates = Candidates(self.predicate, self.node_score)

    # Registration: one typed method per extension point, as Volcano's AddXxxFn.
    def _add(self, hooks: list[Hook[F]], point: ExtensionPoint, plugin: str, fn: F, columns: Any = None) -> None:
        """Register ``fn`` at ``point``, unless the plugin's configuration switches that point off."""
        if (switch := _SWITCH[point]) is not None and self.switches.get(switch) is False:
            return
        self.points.add(point)
        hooks.append(Hook(self.tier, plugin, fn, columns))

    def add_queue_order(self, plugin: str, fn: Callable[[QueueInfo], Key]) -> None:
        self._add(self._queue_order, ExtensionPoint.QUEUE_ORDER, plugin, fn)

    def add_job_order(self, plugin: str, fn: Callable[[JobInfo], Key]) -> None:
        self._add(self._job_order, ExtensionPoint.JOB_ORDER, plugin, fn)

    def add_task_order(self, plugin: str, fn: Callable[[TaskInfo], Key]) -> None:
        self._add(self._task_order, ExtensionPoint.TASK_ORDER, plugin, fn)

    def add_job_valid(self, plugin: str, fn: Callable[[JobInfo], Verdict | None]) -> None:
        self._add(self._job_valid, ExtensionPoint.JOB_VALID, plugin, fn)

    def add_job_enqueueable(self, plugin: str, fn: Callable[[JobInfo], tuple[Vote, Verdict | None]]) -> None:
        self._add(self._enqueueable, ExtensionPoint.JOB_ENQUEUEABLE, plugin, fn)

    def add_job_enqueued(self, plugin: str, fn: Callable[[JobInfo], None]) -> None:
        self._add(self._enqueued, ExtensionPoint.JOB_ENQUEUED, plugin, fn)

    def add_allocatable(self, plugin: str, fn: Callable[[QueueInfo, TaskInfo], Verdict | None]) -> None:
        self._add(self._allocatable, ExtensionPoint.ALLOCATABLE, plugin, fn)

    def add_predicate(
        self, plugin: str, fn: Callable[[TaskInfo, NodeInfo], list[str]], columns: node_columns.Fit | None = None
    ) -> None:
        """``columns``: ``fn``'s answer for a whole node set at once, exactly (``node_columns``)."""
        self._add(self._predicate, ExtensionPoint.PREDICATE, plugin, fn, columns)

    def add_node_order(
        self, plugin: str, fn: Callable[[TaskInfo, NodeInfo], float], columns: node_columns.Score | None = None
    ) -> None:
        """``columns``: ``fn``'s scores for a whole node set at once, exactly (``node_columns``)."""
        self._add(self._node_order, ExtensionPoint.NODE_ORDER, plugin, fn, columns)

    def add_job_ready(self, plugin: str, fn: Callable[[JobInfo], Verdict | None]) -> None:
        self._add(self._job_ready, ExtensionPoint.JOB_READY, plugin, fn)

    def add_job_pipelined(self, plugin: str, fn: Callable[[JobInfo], Vote]) -> None:
        self._add(self._job_pipelined, ExtensionPoint.JOB_PIPELINED, plugin, fn)

    def add_allocated(self, plugin: str, fn: Callable[[TaskInfo, int], None]) -> None:
        """``fn(task, sign)``: +1 when a task is placed, -1 when that placement is undone."""
        self._add(self._allocated, ExtensionPoint.ALLOCATED, plugin, fn)

    def add_preemptable(self, plugin: str, fn: Callable[[TaskInfo, list[TaskInfo]], list[TaskInfo]]) -> None:
        self._add(self._preemptable, ExtensionPoint.PREEMPTABLE, plugin, fn)

    def add_reclaimable(self, plugin: str, fn: Callable[[TaskInfo, list[TaskInfo]], list[TaskInfo]]) -> None:
        self._add(self._reclaimable, ExtensionPoint.RECLAIMABLE, plugin, fn)

    # Dispatchers: each combines its callbacks by the point's rule.
    def close(self) -> None:
        """End the session (CloseSession): drop the callbacks, which hold it, so it is freed without a GC pass."""
        for hooks in vars(self).values():
            if isinstance(hooks, list) and hooks and isinstance(hooks[0], Hook):
                hooks.clear()

    def queue_key(self, queue: QueueInfo) -> tuple[Key, float, str]:
        # ORDER; ties break by creation time, then name, so the cycle is deterministic.
        return _joined(self._queue_order, queue), queue.created, queue.name

    def job_key(self, job: JobInfo) -> tuple[Key, float, str]:
        return _joined(self._job_order, job), job.created, job.key

    def in_queue_order(self, jobs: Iterable[JobInfo]) -> JobQueues:
        """The jobs, next queue first (queue order is recomputed after every job, as shares
        change), each queue's jobs in job order; a queue missing from the snapshot goes last.
        A job may be put back (``JobQueues.push``) to come again in its new place."""
        return JobQueues(self, jobs)

    def queue_key_of(self, name: str) -> tuple[int, object]:
        queue = self.snapshot.queues.get(name)
        return (1, name) if queue is None else (0, self.queue_key(queue))

    def task_key(self, task: TaskInfo) -> tuple[Key, str]:
        return _joined(self._task_order, task), task.key

    def job_valid(self, job: JobInfo) -> Verdict | None:
        return _first(self._job_valid, job)

    def job_enqueueable(self, job: JobInfo) -> Verdict | None:
        """VOTE: any Reject refuses; a tier with a Permit admits without asking later tiers."""
        permitted_tier: int | None = None
        for hook in self._enqueueable:
            if permitted_tier is not None and hook.tier > permitted_tier:
                break
            vote, verdict = hook.fn(job)
            if vote is Vote.REJECT:
                return verdict
            if vote is Vote.PERMIT:
                permitted_tier = hook.tier
        return None

    def job_pipelined(self, job: JobInfo) -> bool:
        """VOTE: any Reject refuses, a tier with a Permit allows; with no Permit at all, no (upstream
        allows, but its gang plugin rejects every job short of its minimum: the case that asks)."""
        permitted_tier: int | None = None
        for hook in self._job_pipelined:
            if permitted_tier is not None and hook.tier > permitted_tier:
                break
            vote = hook.fn(job)
            if vote is Vote.REJECT:
                return False
            if vote is Vote.PERMIT:
                permitted_tier = hook.tier
        return permitted_tier is not None

    def job_enqueued(self, job: JobInfo) -> None:
        for hook in self._enqueued:
            hook.fn(job)

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> Verdict | None:
        return _first(self._allocatable, queue, task)

    def predicate(self, task: TaskInfo, node: NodeInfo) -> list[str]:
        for hook in self._predicate:
            if failures := hook.fn(task, node):
                return failures
        return []

    def node_score(self, task: TaskInfo, node: NodeInfo) -> float:
        total = 0  # an int start, as ``sum``'s, so the float additions are the same
        for hook in self._node_order:
            total += hook.fn(task, node)
        return total

    def columns(self) -> node_columns.Columns | None:
        """``predicate`` and ``node_score`` over node columns, when every callback gives its own."""
        return node_columns.combined([h.columns for h in self._predicate], [h.columns for h in self._node_order])

    def ranks_by(self, plugins: frozenset[str]) -> bool:
        """Whether every predicate and node-order callback comes from one of ``plugins``."""
        return all(h.plugin in plugins for h in (*self._predicate, *self._node_order))

    def job_ready(self, job: JobInfo) -> Verdict | None:
        return _first(self._job_ready, job)

    def allocated(self, task: TaskInfo, sign: int) -> None:
        for hook in self._allocated:
            hook.fn(task, sign)

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return _intersect(self._preemptable, preemptor, candidates)

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return _intersect(self._reclaimable, reclaimer, candidates)


class JobQueues:
    """Waiting jobs by queue, each queue a heap in job order (a waiting job's order key does not
    change while other jobs are placed, so it is computed once, when the job is put in)."""

    def __init__(self, session: Session, jobs: Iterable[JobInfo]) -> None:
        self._session = session
        self._waiting: dict[str, list[tuple[tuple[Key, float, str], JobInfo]]] = {}
        for job in jobs:
            self._waiting.setdefault(job.queue, []).append((session.job_key(job), job))
        for heap in self._waiting.values():
            heapq.heapify(heap)  # keys end with the job's key: two never tie

    def __iter__(self) -> Iterator[JobInfo]:
        return self

    def __next__(self) -> JobInfo:
        if not self._waiting:
            raise StopIteration
        waiting = self._waiting
        name = next(iter(waiting)) if len(waiting) == 1 else min(waiting, key=self._session.queue_key_of)
        _, job = heapq.heappop(heap := waiting[name])
        if not heap:
            del self._waiting[name]
        return job

    def push(self, job: JobInfo, key: tuple[Key, float, str] | None = None) -> None:
        """Put ``job`` in (back), in the place its order key (``key``, when known) gives it now."""
        heapq.heappush(self._waiting.setdefault(job.queue, []), (key or self._session.job_key(job), job))

    def head(self) -> tuple[str, tuple[Key, float, str]] | None:
        """The queue and order key of the next job when all the jobs waiting are in one queue."""
        return (name := next(iter(self._waiting)), self._waiting[name][0][0]) if len(self._waiting) == 1 else None


def _joined(hooks: Sequence[Hook[Callable[[T], Key]]], item: T) -> Key:
    """ORDER: each plugin's key for ``item``, joined in tier order (tuple concatenation, not a
    nested generator: asked for every waiting job each cycle)."""
    key: Key = ()
    for hook in hooks:
        key += hook.fn(item)
    return key


def _first(hooks: Sequence[Hook[Callable[..., Verdict | None]]], *args: Any) -> Verdict | None:
    """FIRST: the first plugin's verdict that is not None (a loop, not next() over a generator)."""
    for hook in hooks:
        if (verdict := hook.fn(*args)) is not None:
            return verdict
    return None


def _intersect(
    hooks: list[Hook[Callable[[TaskInfo, list[TaskInfo]], list[TaskInfo]]]],
    preemptor: TaskInfo,
    candidates: list[TaskInfo],
) -> list[TaskInfo]:
    """INTERSECT within a tier; the first tier whose plugins leave any victim decides. With no
    plugin registered nobody may be evicted: eviction needs someone's consent."""
    for tier in sorted({h.tier for h in hooks}):
        victims = list(candidates)
        for hook in (h for h in hooks if h.tier == tier):
            allowed = {id(t) for t in hook.fn(preemptor, victims)}
            victims = [t for t in victims if id(t) in allowed]
        if victims:
            return victims
    return []
