"""Snapshot: the per-cycle copy of a cluster that a scheduling session works on.

Built once per cycle from ``ClusterState``, whose objects it never touches, and the scheduler's
cache (``SchedulerCache``: what it derives from them, renewed where they changed): nodes with their idle
resources and labels, queues as a tree under ``root``, jobs (one per PodGroup, or a lone pod)
with their tasks, and the network domains (InfiniBand clusters by node label, HyperNodes by
tier). Only a ``Statement`` changes placements in it, and it undoes them on discard.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from domain import quantity
from domain.changes import Changes
from domain.lifecycle.pod_group import PodGroupPhase
from domain.lifecycle.queue import QueuePhase
from domain.lifecycle.status import MachineStatus
from domain.objects.meta import ObjectKey
from domain.objects.volcano import Queue
from domain.quantity import ResourceList
from domain.runtime_history import RuntimeHistory
from domain.scheduler import job_table
from domain.scheduler.cache import SchedulerCache
from domain.scheduler.config import SchedulerConfig
from domain.scheduler.infos import DEFAULT_QUEUE, ROOT, JobInfo, QueueInfo, TaskInfo, TaskStatus
from domain.scheduler.network_domains import Domain
from domain.scheduler.node_table import NodeInfo, idle_nodes, node_table
from domain.scheduler.object_facts import forget_gone, seconds
from domain.state import ClusterState


@dataclass(slots=True, eq=False)
class Snapshot:
    nodes: dict[str, NodeInfo]
    queues: dict[str, QueueInfo]
    jobs: dict[ObjectKey, JobInfo]  # the job table's own dict until a job is dropped: never change it otherwise
    ib_domains: list[Domain]
    hyper_domains: list[Domain]
    total: ResourceList
    domain_idle: dict[str, ResourceList] = field(default_factory=dict)  # where-key -> free resources in it
    node_domains: dict[str, list[str]] = field(default_factory=dict)  # node -> where-keys of its domains
    largest: ResourceList = field(default_factory=dict)  # the most any one node offers, per resource
    domain_nodes: dict[str, list[NodeInfo]] = field(default_factory=dict)  # where-key -> its nodes, by name
    touched: set[str] = field(default_factory=set)  # nodes whose idle a statement changed
    rebuilt: set[str] | None = None  # nodes built again since the last snapshot; None: all of them
    pipelined: list[TaskInfo] = field(default_factory=list)  # tasks pipelined by earlier cycles, in key order
    # Jobs with a pending or pipelined task (the job table's: never change it), and the same in
    # job order, as (first pod, job) pairs
    waiting: set[ObjectKey] = field(default_factory=set)
    in_order: list[tuple[ObjectKey, ObjectKey]] = field(default_factory=list)
    first: Mapping[ObjectKey, ObjectKey] = field(default_factory=dict)  # job -> its first pod (job order's key)
    best_effort: list[ObjectKey] = field(default_factory=list)  # those with such a task asking for nothing
    unadmitted: list[ObjectKey] = field(default_factory=list)  # those Pending (not yet enqueued), in job order
    reserving: list[ObjectKey] = field(default_factory=list)  # Inqueue jobs with minResources, in job order
    # PodGroups that never had a pod yet, Pending or Inqueue, by key: Volcano's job controller makes
    # a Job's pods only once its PodGroup is Inqueue, so enqueue must admit them without tasks.
    unborn: list[JobInfo] = field(default_factory=list)
    dropped: list[JobInfo] = field(default_factory=list)  # jobs the queue rules took out of the snapshot
    spoiled: set[ObjectKey] = field(default_factory=set)  # jobs this session changed (see ``JobTable``)
    restored: set[ObjectKey] = field(default_factory=set)  # jobs placed tentatively and restored exactly
    # job -> its placements neither committed nor discarded yet, its ``allocated`` and stamp before the first
    _open: dict[ObjectKey, tuple[int, ResourceList, int]] = field(default_factory=dict)
    _own_jobs: bool = False  # ``jobs`` is its own dict, not the job table's (see ``drop``)
    unsettled: set[ObjectKey] = field(default_factory=set)  # PodGroups whose status close must look at
    rejected: set[ObjectKey] = field(default_factory=set)  # PodGroups with a Reject in force
    # Jobs built again, put back or with a changed PodGroup since the renewal of the job table
    # before this one (its ``changed`` and ``renewals``; never change it)
    changed: set[ObjectKey] = field(default_factory=set)
    renewal: int = 0
    # The state's PodGroup machines, by key, each with the status last written (never change them).
    written: Mapping[ObjectKey, MachineStatus] = field(default_factory=dict)
    queued: dict[str, set[ObjectKey]] = field(default_factory=dict)  # queue -> its jobs (never change it)
    now: float = 0.0  # the cycle's instant (its SCHEDULE marker), in seconds since the epoch, as ``created``
    runtime_history: RuntimeHistory = field(default_factory=RuntimeHistory)  # the state's own (never change it)
    history_label: str = ""  # the pod label that names users in it (the config's); empty: none kept
    _node_list: list[NodeInfo] | None = None

    def node_list(self) -> list[NodeInfo]:
        """The nodes, in snapshot order, as one list made once per session (never change it)."""
        if self._node_list is None:
            self._node_list = list(self.nodes.values())
        return self._node_list

    def waiting_keys(self) -> list[ObjectKey]:
        """The keys of the jobs with a pending or pipelined task at the start of the session, in job order."""
        return [key for _, key in self.in_order]

    def waiting_jobs(self) -> list[JobInfo]:
        """The jobs with a pending or pipelined task at the start of the session, in job order."""
        return [job for _, key in self.in_order if (job := self.jobs.get(key)) is not None]

    def idle(self) -> bool:
        """Whether no job waits (none has a pending or pipelined task) and no PodGroup without
        pods waits to be enqueued: then no action has anything to do, and none asks a plugin."""
        return not self.waiting and all(job.phase is not PodGroupPhase.PENDING for job in self.unborn)

    def follows(self, unsettled: set[ObjectKey], renewal: int) -> bool:
        """Whether this snapshot takes the renewal after ``renewal`` of the job table whose
        ``unsettled`` set that was (its identity says the table is the same one), with no job
        dropped: then only the jobs ``jobs_touched`` gives may differ from what that renewal's
        session saw."""
        return unsettled is self.unsettled and renewal + 1 == self.renewal and not self.dropped

    def jobs_touched(self) -> set[ObjectKey]:
        """The jobs the last renewal built again, put back or gave a changed PodGroup, and those
        the session before changed."""
        return self.changed | self.spoiled | self.restored

    def drop(self, key: ObjectKey) -> None:
        """Take the job ``key`` out of this snapshot (the queue rules). ``jobs`` starts as the
        job table's own dict, shared; it is copied before the first job leaves it."""
        if not self._own_jobs:
            self.jobs, self._own_jobs = dict(self.jobs), True
        self.dropped.append(self.jobs.pop(key))

    def spoil(self, key: ObjectKey) -> None:
        """The job ``key`` (or one of its tasks) is about to change: the next snapshot builds it again."""
        self.spoiled.add(key)

    def opened(self, job: JobInfo) -> None:
        """A pending task of ``job`` is placed tentatively (its statement is still open)."""
        count, before, stamp = self._open.get(job.key, (0, job.allocated, job.stamp))
        self._open[job.key] = (count + 1, dict(before) if count == 0 else before, stamp)

    def closed(self, job: JobInfo, *, committed: bool) -> None:
        """A tentative placement of ``job`` is committed (the next snapshot builds the job again)
        or discarded. When its last open one is discarded and nothing else changed the job, the
        job is as it was before them, once its ``allocated`` is too (adding and taking back a
        request leaves zero amounts behind): the next snapshot keeps it, and only close looks at
        it again, as it looks at a job built again."""
        count, before, stamp = self._open.pop(job.key)
        if committed:
            self.spoil(job.key)
        if count > 1:
            self._open[job.key] = (count - 1, before, stamp)
        elif job.key not in self.spoiled:
            job.allocated.clear()
            job.allocated.update(before)
            job.rewind(stamp)  # its tasks too are as they were
            self.restored.add(job.key)

    def ancestors(self, name: str) -> list[QueueInfo]:
        """The queue itself, then its parents up to root; a cycle or a missing parent stops the walk."""
        out: list[QueueInfo] = []
        seen: set[str] = set()
        current = self.queues.get(name)
        while current is not None and current.name not in seen:
            out.append(current)
            seen.add(current.name)
            current = self.queues.get(current.parent) if current.parent else None
        return out

    def subtree_allocated(self, name: str) -> ResourceList:
        queue = self.queues[name]
        return quantity.sum_lists([queue.allocated, *(self.subtree_allocated(c) for c in queue.children)])


def _queue_info(queue: Queue, phase: object) -> QueueInfo:
    spec = queue.spec
    parent = spec.parent or ROOT
    state = phase if isinstance(phase, QueuePhase) else QueuePhase.OPEN
    return QueueInfo(
        queue.metadata.name, queue, parent, max(spec.weight, 1), dict(spec.capability), dict(spec.deserved),
        dict(spec.guarantee.resource), state, seconds(queue.metadata.creation_timestamp),
    )  # fmt: skip


def _queues(state: ClusterState) -> dict[str, QueueInfo]:
    queues: dict[str, QueueInfo] = {}
    for name, queue in sorted(state.objects.get("Queue", {}).items()):
        if isinstance(queue, Queue):
            queues[name] = _queue_info(queue, state.phase_of("Queue", name))
    for implicit in (ROOT, DEFAULT_QUEUE):
        # Volcano always has these two; a stream need not carry them.
        if implicit not in queues:
            parent = "" if implicit == ROOT else ROOT
            queues[implicit] = QueueInfo(implicit, None, parent, 1, {}, {}, {}, QueuePhase.OPEN, 0.0)
    queues[ROOT].parent = ""
    for queue in queues.values():
        if queue.parent in queues and queue.state is not QueuePhase.REJECTED:
            queues[queue.parent].children.append(queue.name)
    return queues


def _hold_pipelined(snapshot: Snapshot, pipelined: list[TaskInfo]) -> None:
    """A pipelined task takes its room on its node now, so nobody else uses what its victims
    release; one whose node is gone waits as a pending task again."""
    for task in pipelined:
        node = snapshot.nodes.get(task.node)
        if node is None:
            snapshot.spoil(task.job)
            snapshot.jobs[task.job].move(task, TaskStatus.PENDING, "")
            continue
        quantity.add(node.idle, {k: -v for k, v in task.request.items()})
        snapshot.touched.add(node.name)  # the next cycle's snapshot builds this node again
        snapshot.pipelined.append(task)


def build(state: ClusterState, config: SchedulerConfig, cache: SchedulerCache, changes: Changes) -> Snapshot:
    """The cycle's snapshot. Its jobs are the job table's own: a session that changes a job or a
    task says so first (``Snapshot.spoil``), and the next snapshot builds that job again."""
    memo, facts = cache.nodes, cache.facts
    table = node_table(state, memo, changes, config.ib_cluster_label)
    changed = changes.take("Pod")  # pods changed since the last snapshot, by events or decisions
    nodes = idle_nodes(state, memo, facts, table, changed)
    queues = _queues(state)
    jobs = cache.jobs = job_table.renew(cache.jobs, state, config=config, memo=facts, changes=changes, pods=changed)
    forget_gone(facts, state.objects.get("Pod", {}), changed, state.objects.get("PodGroup", {}))
    for name, queue in queues.items():
        queue.allocated = dict(jobs.held.get(name, {}))
        queue.asked = dict(jobs.asked.get(name, {}))
    snapshot = Snapshot(nodes, queues, jobs.templates, table.ib, table.hyper, dict(table.total))
    snapshot.largest = dict(table.largest)
    snapshot.node_domains = table.node_domains
    snapshot.touched = memo.touched
    snapshot.rebuilt = memo.rebuilt
    snapshot.waiting, snapshot.in_order, snapshot.first = jobs.waiting, jobs.in_order, jobs.first
    snapshot.best_effort = sorted(jobs.best_effort, key=jobs.first.__getitem__)
    snapshot.unadmitted = sorted(jobs.unadmitted, key=jobs.first.__getitem__)
    snapshot.reserving = sorted(jobs.reserving, key=jobs.first.__getitem__)
    snapshot.unborn = job_table.unborn(state, facts, jobs, config.ib_cluster_label) if jobs.childless else []
    snapshot.spoiled, snapshot.unsettled, snapshot.rejected = jobs.spoiled, jobs.unsettled, jobs.rejected
    snapshot.restored = jobs.restored
    snapshot.changed, snapshot.renewal = jobs.changed, jobs.renewals
    snapshot.queued = jobs.queued
    snapshot.now = seconds(state.clock)
    snapshot.runtime_history, snapshot.history_label = state.runtime_history, config.runtime_history_label
    snapshot.written = state.machines.get("PodGroup", {})
    _hold_pipelined(snapshot, job_table.pipelined(jobs))
    # Free resources per domain, kept current by statements: best fit compares them per gang.
    for where, names in table.members.items():
        members = snapshot.domain_nodes[where] = [nodes[n] for n in names]
        snapshot.domain_idle[where] = quantity.sum_lists({k: max(v, 0) for k, v in n.idle.items()} for n in members)
    return snapshot


def fresh(state: ClusterState, config: SchedulerConfig) -> Snapshot:
    """A snapshot built from scratch, for readers outside the cycle (``explain``): the one the
    cycle would build, without touching the cache the cycle keeps."""
    return build(state, config, SchedulerCache(), Changes())
