"""Snapshot: the per-cycle copy of a cluster that a scheduling session works on.

Built once per cycle from ``ClusterState``, whose objects it never touches (it only memoises
what it derives from them in ``state.derived``, see ``node_table``): nodes with their idle
resources and labels, queues as a tree under ``root``, jobs (one per PodGroup, or a lone pod)
with their tasks, and the network domains (InfiniBand clusters by node label, HyperNodes by
tier). Only a ``Statement`` changes placements in it, and it undoes them on discard.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from dataclasses import dataclass, field
from enum import StrEnum

from domain import quantity
from domain.lifecycle.job import JobPhase
from domain.lifecycle.pod_group import PodGroupPhase
from domain.lifecycle.queue import QueuePhase
from domain.lifecycle.status import MachineStatus
from domain.objects.core import Pod, PriorityClass
from domain.objects.meta import ObjectKey
from domain.objects.volcano import PodGroup, Queue
from domain.quantity import ResourceList
from domain.scheduler.config import SchedulerConfig
from domain.scheduler.network_domains import Domain, TopologyRequest
from domain.scheduler.node_table import (
    GroupFacts,
    Memo,
    NodeInfo,
    forget_gone,
    group_facts,
    idle_nodes,
    node_table,
    pod_facts,
    seconds,
)
from domain.scheduler.subgroups import SubGroup, split
from domain.state import ClusterState

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
    shape: tuple[object, ...] | None = field(default=None, init=False)  # ``placement.shape``, once known

    def __post_init__(self) -> None:
        self.best_effort = not any(amount for name, amount in self.request.items() if name != quantity.PODS)


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

    def pending(self) -> list[TaskInfo]:
        return [t for t in self.tasks if t.status is TaskStatus.PENDING]

    def placed(self) -> int:
        return sum(1 for t in self.tasks if t.status in PLACED)

    def pipelined(self) -> list[TaskInfo]:
        return [t for t in self.tasks if t.status is TaskStatus.PIPELINED]

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


@dataclass(slots=True, eq=False)
class Snapshot:
    nodes: dict[str, NodeInfo]
    queues: dict[str, QueueInfo]
    jobs: dict[ObjectKey, JobInfo]
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
    waiting: list[ObjectKey] = field(default_factory=list)  # jobs with a pending or pipelined task, in job order
    reserving: list[ObjectKey] = field(default_factory=list)  # Inqueue jobs with minResources, in job order
    # PodGroups that never had a pod yet, Pending or Inqueue, by key: Volcano's job controller makes
    # a Job's pods only once its PodGroup is Inqueue, so enqueue must admit them without tasks.
    unborn: list[JobInfo] = field(default_factory=list)
    dropped: list[JobInfo] = field(default_factory=list)  # jobs the queue rules took out of the snapshot
    spoiled: set[ObjectKey] = field(default_factory=set)  # jobs this session changed (see ``JobTable``)
    unsettled: set[ObjectKey] = field(default_factory=set)  # PodGroups whose status close must look at
    rejected: set[ObjectKey] = field(default_factory=set)  # PodGroups with a Reject in force
    queued: dict[str, set[ObjectKey]] = field(default_factory=dict)  # queue -> its jobs (never change it)
    now: float = 0.0  # the cycle's instant (its SCHEDULE marker), in seconds since the epoch, as ``created``
    _node_list: list[NodeInfo] | None = None

    def node_list(self) -> list[NodeInfo]:
        """The nodes, in snapshot order, as one list made once per session (never change it)."""
        if self._node_list is None:
            self._node_list = list(self.nodes.values())
        return self._node_list

    def waiting_jobs(self) -> list[JobInfo]:
        """The jobs with a pending or pipelined task at the start of the session, in job order."""
        return [job for key in self.waiting if (job := self.jobs.get(key)) is not None]

    def spoil(self, key: ObjectKey) -> None:
        """The job ``key`` (or one of its tasks) is about to change: the next snapshot builds it again."""
        self.spoiled.add(key)

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


def _task_status(pod: Pod, machine: MachineStatus | None, node: str) -> TaskStatus | None:
    phase = pod.status.phase
    if phase == "Succeeded":
        return TaskStatus.SUCCEEDED
    if phase == "Failed":
        return TaskStatus.FAILED
    if pod.metadata.deletion_timestamp is not None or (machine is not None and machine.evicted):
        return TaskStatus.RELEASING if node else None
    if node:
        return TaskStatus.RUNNING if phase == "Running" else TaskStatus.BOUND
    return TaskStatus.PENDING if phase == "Pending" else None


def _memo(state: ClusterState) -> Memo:
    memo = state.derived.get("scheduler")
    if not isinstance(memo, Memo):
        memo = state.derived["scheduler"] = Memo()
    return memo


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


def _is_terminating(state: ClusterState, phase: object, facts: GroupFacts) -> bool:
    """A PodGroup being deleted, or owned by a Job that is terminating or gone (SEEDS S1)."""
    if phase is PodGroupPhase.TERMINATING:
        return True
    for key, uid in facts.job_owners:
        if uid in state.tombstones or state.phase_of("Job", key) is JobPhase.TERMINATING:
            return True
    return False


def _job(state: ClusterState, key: ObjectKey, group: PodGroup | None, pod: Pod, *, memo: Memo, label: str) -> JobInfo:
    if group is None:
        return JobInfo(key, None, DEFAULT_QUEUE, 1, {}, None, seconds(pod.metadata.creation_timestamp),
                       PodGroupPhase.INQUEUE)  # fmt: skip
    return _group_job(state, key, group, memo=memo, label=label)


def _group_job(state: ClusterState, key: ObjectKey, group: PodGroup, *, memo: Memo, label: str) -> JobInfo:
    phase = state.phase_of("PodGroup", key)  # a job's key is its PodGroup's
    spec = group.spec
    facts = group_facts(memo, group, label)
    return JobInfo(
        key, group, spec.queue or DEFAULT_QUEUE, spec.min_member, dict(spec.min_task_member),
        None if spec.min_resources is None else dict(spec.min_resources), facts.created,
        phase if isinstance(phase, PodGroupPhase) else PodGroupPhase.PENDING,
        topology=facts.topology, terminating=_is_terminating(state, phase, facts),
    )  # fmt: skip


def _class_priority(state: ClusterState, name: str) -> int:
    """The value of the PriorityClass ``name``; for an unknown one, the globalDefault class's value
    (the lowest name when several claim it), else 0, as Volcano's cache gives a PodGroup."""
    classes = state.objects.get("PriorityClass", {})
    named = classes.get(name)
    if isinstance(named, PriorityClass):
        return named.value
    defaults = sorted((k, c.value) for k, c in classes.items() if isinstance(c, PriorityClass) and c.global_default)
    return defaults[0][1] if defaults else 0


@dataclass(slots=True, eq=False)
class JobTable:
    """Each job as the state's objects make it, kept between cycles, and the sums a snapshot
    takes over them. Only the jobs whose pods, PodGroup or priority classes changed, and those
    the last session changed (``spoiled``), are built again: a snapshot shares the others, so
    a cycle costs what changed, not what runs. A fresh table gives the same snapshot."""

    source: tuple[str, str]  # the scheduler name and IB label it was built for
    templates: dict[ObjectKey, JobInfo] = field(default_factory=dict)  # by key, in job order
    order: list[tuple[ObjectKey, ObjectKey]] = field(default_factory=list)  # (first pod, job), sorted
    first: dict[ObjectKey, ObjectKey] = field(default_factory=dict)  # job key -> its first pod's key
    members: dict[ObjectKey, set[ObjectKey]] = field(default_factory=dict)  # job key -> its pods' keys
    pod_jobs: dict[ObjectKey, ObjectKey] = field(default_factory=dict)  # pod key -> its job's key
    owned: set[ObjectKey] = field(default_factory=set)  # jobs owned by Volcano Jobs: built every cycle
    pipelining: set[ObjectKey] = field(default_factory=set)  # jobs with a pipelined task
    waiting: set[ObjectKey] = field(default_factory=set)  # jobs with a pending or pipelined task
    reserving: set[ObjectKey] = field(default_factory=set)  # Inqueue jobs with minResources
    childless: set[ObjectKey] = field(default_factory=set)  # PodGroups without a pod filed under them
    # job -> (its queue, what it adds to ``held`` and to ``asked`` there)
    sums: dict[ObjectKey, tuple[str, ResourceList, ResourceList]] = field(default_factory=dict)
    held: dict[str, ResourceList] = field(default_factory=dict)  # queue -> its jobs' holding tasks' requests
    asked: dict[str, ResourceList] = field(default_factory=dict)  # queue -> their pending and pipelined ones'
    spoiled: set[ObjectKey] = field(default_factory=set)  # jobs the last session changed
    unsettled: set[ObjectKey] = field(default_factory=set)  # PodGroups whose status close must look at
    rejected: set[ObjectKey] = field(default_factory=set)  # PodGroups with a Reject in force
    queued: dict[str, set[ObjectKey]] = field(default_factory=dict)  # queue -> its jobs


def _shift(sums: dict[str, ResourceList], queue: str, amount: ResourceList, sign: int) -> None:
    """Add ``sign`` times ``amount`` to ``queue``'s sum, keeping no zero amounts (so a sum kept
    across cycles and one made afresh are equal)."""
    total = sums.setdefault(queue, {})
    for name, value in amount.items():
        left = total.get(name, 0) + sign * value
        if left:
            total[name] = left
        else:
            total.pop(name, None)
    if not total:
        del sums[queue]


def _forget(table: JobTable, key: ObjectKey) -> ObjectKey | None:
    """Take the job ``key`` out of the table's order, sums and sets (its template stays, for
    ``_renew`` to replace or drop); the key of its first pod, or None if it was not there."""
    first = table.first.pop(key, None)
    if first is not None:
        table.order.pop(bisect_left(table.order, (first, key)))
        queue, held, asked = table.sums.pop(key)
        _shift(table.held, queue, held, -1)
        _shift(table.asked, queue, asked, -1)
        table.queued[queue].discard(key)
    for kept in (table.owned, table.pipelining, table.waiting, table.reserving, table.unsettled, table.rejected):
        kept.discard(key)
    return first


def _remember(table: JobTable, job: JobInfo, rejected: bool) -> None:
    """Put the newly built ``job`` in the table, in job order, and in its sums."""
    key = job.key
    table.templates[key] = job
    table.first[key] = first = job.tasks[0].key
    insort(table.order, (first, key))
    table.queued.setdefault(job.queue, set()).add(key)
    asked: ResourceList = {}
    for task in job.tasks:
        if task.status is TaskStatus.PENDING or task.status is TaskStatus.PIPELINED:
            quantity.add(asked, task.request)
            table.waiting.add(key)
            if task.status is TaskStatus.PIPELINED:
                table.pipelining.add(key)
    table.sums[key] = (job.queue, dict(job.allocated), asked)
    _shift(table.held, job.queue, job.allocated, +1)
    _shift(table.asked, job.queue, asked, +1)
    if job.phase is PodGroupPhase.INQUEUE and job.min_resources:
        table.reserving.add(key)
    if job.group is not None:
        table.unsettled.add(key)  # a new template: close looks at its status again
        job.subgroups, job.min_sub_groups = split(job.group, job.tasks)
        if rejected:
            table.rejected.add(key)


def _file(
    state: ClusterState, config: SchedulerConfig, memo: Memo, jobs: dict[ObjectKey, JobInfo], pod_key: ObjectKey
) -> None:
    """Add the pod ``pod_key`` to its job in ``jobs`` (making the job), unless it is not ours."""
    pod = state.pods()[pod_key]
    machine = state.machines.get("Pod", {}).get(pod_key)  # ``state.status_of(pod)``, without the key again
    node = state.node_of(pod, pod_key)
    ours = pod.spec.scheduler_name == config.scheduler_name
    facts = pod_facts(memo, pod)
    group_name, key = facts.group, facts.job or pod_key
    group = state.objects.get("PodGroup", {}).get(key) if group_name else None
    status = _task_status(pod, machine, node)
    if status is None or (status is TaskStatus.PENDING and not ours) or (group_name and group is None):
        return  # not ours to place, or a member waiting for its PodGroup to exist
    if not ours and not group_name:
        return  # another scheduler's pod: it only takes up its node's resources
    job = jobs.get(key)
    if job is None:
        if group_name:
            group_or_none = group if isinstance(group, PodGroup) else None
            job = _job(state, key, group_or_none, pod, memo=memo, label=config.ib_cluster_label)
        else:
            job = JobInfo(key, None, DEFAULT_QUEUE, 1, {}, None, facts.created, PodGroupPhase.INQUEUE)
        jobs[key] = job
    request = facts.request
    if status is TaskStatus.PENDING:
        # Pipelined by an earlier cycle's preemption: it holds the room being released for it.
        node = machine.nominated if machine is not None and machine.uid == pod.metadata.uid else ""
        status = TaskStatus.PIPELINED if node else status
    job.tasks.append(TaskInfo(pod_key, pod, key, request, status, node, facts.priority, facts.role))
    job.priority = max(job.priority, facts.priority)
    if status in HOLDING:
        quantity.add(job.allocated, request)


def _renew(state: ClusterState, config: SchedulerConfig, memo: Memo, table: JobTable, dirty: set[ObjectKey]) -> None:
    """Build the ``dirty`` jobs again from their pods, each into its place in job order."""
    built: dict[ObjectKey, JobInfo] = {}
    before: dict[ObjectKey, ObjectKey] = {}  # job -> its first pod's key, for the jobs the table had
    for key in dirty:  # any order: the built jobs are put in job order below
        first = _forget(table, key)
        if first is not None:
            before[key] = first
        for pod_key in sorted(table.members.get(key, ())):
            _file(state, config, memo, built, pod_key)
    for key in before.keys() - built.keys():
        del table.templates[key]
    machines = state.machines.get("PodGroup", {})
    moved = False  # a job the table had, built again with another first pod
    added: list[ObjectKey] = []  # new jobs, in the order they were put at the end of ``templates``
    for job in sorted(built.values(), key=lambda j: j.tasks[0].key):
        key = job.key
        if key in before:
            moved = moved or before[key] != job.tasks[0].key
        else:
            added.append(key)
        if job.group is not None:
            if group_facts(memo, job.group, config.ib_cluster_label).job_owners:
                table.owned.add(key)
            if job.group.spec.priority_class_name:
                # Volcano's priority plugin orders by the PodGroup's class; without one, by the
                # highest of its pods' priorities (which admission resolves from the same classes).
                job.priority = _class_priority(state, job.group.spec.priority_class_name)
        machine = machines.get(key)
        _remember(table, job, machine is not None and bool(machine.rejected))
    # A job goes where its first pod's key puts it (the pods are walked in key order). A job
    # built again under the same first pod kept its place; new jobs went to the end, which is
    # their place when they are last in order (a trace's new pods mostly are).
    tail = [key for _, key in table.order[len(table.order) - len(added) :]]
    if moved or tail != added:
        keys = [key for _, key in table.order]
        table.templates = dict(zip(keys, map(table.templates.__getitem__, keys), strict=True))


def _job_table(state: ClusterState, config: SchedulerConfig, memo: Memo, pods: set[ObjectKey]) -> JobTable:
    """The state's job table, with the jobs whose objects changed since the last cycle (``pods``,
    the pods changed since then), and those the last session changed, built again."""
    groups = state.take_changed("PodGroup")
    classes = state.take_changed("PriorityClass")
    source = (config.scheduler_name, config.ib_cluster_label)
    table = state.derived.get("jobs")
    if not isinstance(table, JobTable) or table.source != source or classes:
        table = state.derived["jobs"] = JobTable(source)
        pods = set(state.objects.get("Pod", {}))
        groups = set(state.objects.get("PodGroup", {}))
    live = state.objects.get("Pod", {})
    dirty = groups | table.owned | table.spoiled
    table.spoiled.clear()
    for pod_key in pods:
        old = table.pod_jobs.pop(pod_key, None)
        if old is not None:
            table.members[old].discard(pod_key)
            if not table.members[old]:
                del table.members[old]
            dirty.add(old)
        pod = live.get(pod_key)
        if isinstance(pod, Pod):
            key = pod_facts(memo, pod).job or pod_key
            table.pod_jobs[pod_key] = key
            table.members.setdefault(key, set()).add(pod_key)
            dirty.add(key)
    present = state.objects.get("PodGroup", {})
    for key in groups | dirty:
        if key in present and key not in table.members:
            table.childless.add(key)
        else:
            table.childless.discard(key)
    if dirty:
        _renew(state, config, memo, table, dirty)
    return table


def _unborn(state: ClusterState, memo: Memo, table: JobTable, label: str) -> list[JobInfo]:
    """The PodGroups that never had a pod, Pending or Inqueue, as jobs without tasks. One that had
    pods (``peak_tasks``) and lost them is on its way out (SEEDS S1): not a job to admit."""
    out = []
    machines = state.machines.get("PodGroup", {})
    for key in sorted(table.childless):
        machine = machines.get(key)
        group = state.objects.get("PodGroup", {}).get(key)
        if machine is None or machine.peak_tasks or not isinstance(group, PodGroup):
            continue
        if machine.phase not in (PodGroupPhase.PENDING, PodGroupPhase.INQUEUE):
            continue
        job = _group_job(state, key, group, memo=memo, label=label)
        if not job.terminating:
            if group.spec.priority_class_name:
                job.priority = _class_priority(state, group.spec.priority_class_name)
            out.append(job)
    return out


def _pipelined(table: JobTable) -> list[TaskInfo]:
    """Tasks pipelined by earlier cycles, in pod key order (as the pods are walked)."""
    tasks = table.templates
    held = [t for key in table.pipelining for t in tasks[key].tasks if t.node and t.status is TaskStatus.PIPELINED]
    return sorted(held, key=lambda t: t.key)


def _hold_pipelined(snapshot: Snapshot, pipelined: list[TaskInfo]) -> None:
    """A pipelined task takes its room on its node now, so nobody else uses what its victims
    release; one whose node is gone waits as a pending task again."""
    for task in pipelined:
        node = snapshot.nodes.get(task.node)
        if node is None:
            snapshot.spoil(task.job)
            task.status, task.node = TaskStatus.PENDING, ""
            continue
        quantity.add(node.idle, {k: -v for k, v in task.request.items()})
        snapshot.touched.add(node.name)  # the next cycle's snapshot builds this node again
        snapshot.pipelined.append(task)


def build(state: ClusterState, config: SchedulerConfig) -> Snapshot:
    """The cycle's snapshot. Its jobs are the job table's own: a session that changes a job or a
    task says so first (``Snapshot.spoil``), and the next snapshot builds that job again."""
    memo = _memo(state)
    table = node_table(state, memo, config.ib_cluster_label)
    changed = state.take_changed("Pod")  # pods changed since the last snapshot, by events or decisions
    nodes = idle_nodes(state, memo, table, changed)
    queues = _queues(state)
    jobs = _job_table(state, config, memo, changed)
    forget_gone(memo, state.objects.get("Pod", {}), state.objects.get("PodGroup", {}))
    for name, queue in queues.items():
        queue.allocated = dict(jobs.held.get(name, {}))
        queue.asked = dict(jobs.asked.get(name, {}))
    snapshot = Snapshot(nodes, queues, dict(jobs.templates), table.ib, table.hyper, dict(table.total))
    snapshot.largest = dict(table.largest)
    snapshot.node_domains = table.node_domains
    snapshot.touched = memo.touched
    snapshot.rebuilt = memo.rebuilt
    snapshot.waiting = sorted(jobs.waiting, key=jobs.first.__getitem__)
    snapshot.reserving = sorted(jobs.reserving, key=jobs.first.__getitem__)
    snapshot.unborn = _unborn(state, memo, jobs, config.ib_cluster_label) if jobs.childless else []
    snapshot.spoiled, snapshot.unsettled, snapshot.rejected = jobs.spoiled, jobs.unsettled, jobs.rejected
    snapshot.queued = jobs.queued
    snapshot.now = seconds(state.clock)
    _hold_pipelined(snapshot, _pipelined(jobs))
    # Free resources per domain, kept current by statements: best fit compares them per gang.
    for where, names in table.members.items():
        members = snapshot.domain_nodes[where] = [nodes[n] for n in names]
        snapshot.domain_idle[where] = quantity.sum_lists({k: max(v, 0) for k, v in n.idle.items()} for n in members)
    return snapshot
