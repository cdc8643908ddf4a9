"""JobTable: each job as the state's objects make it, kept between cycles in the scheduler's
cache (``SchedulerCache.jobs``), with the sums a snapshot takes over them. Only the jobs whose
pods, PodGroup or priority classes changed, and those the last session changed (``spoiled``),
are built again: a snapshot shares the others, so a cycle costs what changed, not what runs.
A fresh table gives the same snapshot (``tests/unit/domain/scheduler/test_kept_snapshot.py``).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from dataclasses import dataclass, field

from domain import quantity
from domain.changes import Changes
from domain.lifecycle.pod_group import PodGroupPhase
from domain.objects.core import Pod
from domain.objects.meta import ObjectKey
from domain.objects.volcano import PodGroup
from domain.quantity import ResourceList
from domain.scheduler.config import SchedulerConfig
from domain.scheduler.infos import JobInfo, TaskInfo, TaskStatus
from domain.scheduler.job_build import class_priority, file_pod, group_job
from domain.scheduler.object_facts import Facts, group_facts, pod_facts, same_but_status
from domain.scheduler.subgroups import split
from domain.state import ClusterState


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
    in_order: list[tuple[ObjectKey, ObjectKey]] = field(default_factory=list)  # (first pod, job) of those, sorted
    best_effort: set[ObjectKey] = field(default_factory=set)  # those with such a task that asks for nothing
    unadmitted: set[ObjectKey] = field(default_factory=set)  # those Pending (not yet enqueued)
    reserving: set[ObjectKey] = field(default_factory=set)  # Inqueue jobs with minResources
    childless: set[ObjectKey] = field(default_factory=set)  # PodGroups without a pod filed under them
    # job -> (its queue, what it adds to ``held`` and to ``asked`` there)
    sums: dict[ObjectKey, tuple[str, ResourceList, ResourceList]] = field(default_factory=dict)
    held: dict[str, ResourceList] = field(default_factory=dict)  # queue -> its jobs' holding tasks' requests
    asked: dict[str, ResourceList] = field(default_factory=dict)  # queue -> their pending and pipelined ones'
    spoiled: set[ObjectKey] = field(default_factory=set)  # jobs the last session changed
    restored: set[ObjectKey] = field(default_factory=set)  # jobs the last session changed and put back
    unsettled: set[ObjectKey] = field(default_factory=set)  # PodGroups whose status close must look at
    rejected: set[ObjectKey] = field(default_factory=set)  # PodGroups with a Reject in force
    queued: dict[str, set[ObjectKey]] = field(default_factory=dict)  # queue -> its jobs
    renewals: int = 0  # how many times ``renew`` took it (``parked_pool.Pool`` misses no renewal's changes)
    # The jobs the last renewal built again, put back or gave a changed PodGroup: the only ones
    # whose tasks, PodGroup or phase may differ from the renewal before
    changed: set[ObjectKey] = field(default_factory=set)


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
        if key in table.waiting:
            table.in_order.pop(bisect_left(table.in_order, (first, key)))
        queue, held, asked = table.sums.pop(key)
        _shift(table.held, queue, held, -1)
        _shift(table.asked, queue, asked, -1)
        table.queued[queue].discard(key)
    kept_sets = (table.owned, table.pipelining, table.waiting, table.best_effort, table.unadmitted, table.reserving)
    for kept in (*kept_sets, table.unsettled, table.rejected):
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
            if task.best_effort:
                table.best_effort.add(key)
    if key in table.waiting:
        insort(table.in_order, (first, key))
        if job.phase is PodGroupPhase.PENDING:
            table.unadmitted.add(key)
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


def _renew(state: ClusterState, config: SchedulerConfig, memo: Facts, table: JobTable, dirty: set[ObjectKey]) -> None:
    """Build the ``dirty`` jobs again from their pods, each into its place in job order."""
    built: dict[ObjectKey, JobInfo] = {}
    before: dict[ObjectKey, ObjectKey] = {}  # job -> its first pod's key, for the jobs the table had
    for key in dirty:  # any order: the built jobs are put in job order below
        first = _forget(table, key)
        if first is not None:
            before[key] = first
        for pod_key in sorted(table.members.get(key, ())):
            file_pod(state, config, memo, built, pod_key)
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
                job.priority = class_priority(state, job.group.spec.priority_class_name)
        machine = machines.get(key)
        _remember(table, job, machine is not None and bool(machine.rejected))
    # A job goes where its first pod's key puts it (the pods are walked in key order). A job
    # built again under the same first pod kept its place; new jobs went to the end, which is
    # their place when they are last in order (a trace's new pods mostly are).
    tail = [key for _, key in table.order[len(table.order) - len(added) :]]
    if moved or tail != added:
        keys = [key for _, key in table.order]
        table.templates = dict(zip(keys, map(table.templates.__getitem__, keys), strict=True))


def _status_only(state: ClusterState, table: JobTable, key: ObjectKey, group: object) -> bool:
    """Whether the job ``key``, whose PodGroup changed and nothing else, takes the new object as
    it is (its status written, as a status decision comes back): then the job keeps its tasks,
    and close looks at its status again, as at a job built again."""
    job = table.templates.get(key)
    if job is None or job.group is None or not isinstance(group, PodGroup) or key in table.owned:
        return False
    phase = state.phase_of("PodGroup", key)
    if (phase if isinstance(phase, PodGroupPhase) else PodGroupPhase.PENDING) is not job.phase:
        return False
    if not same_but_status(job.group, group):
        return False
    job.group = group
    table.unsettled.add(key)
    machine = state.machines.get("PodGroup", {}).get(key)
    if machine is not None and machine.rejected:
        table.rejected.add(key)
    else:
        table.rejected.discard(key)
    return True


def renew(
    table: JobTable | None,
    state: ClusterState,
    *,
    config: SchedulerConfig,
    memo: Facts,
    changes: Changes,
    pods: set[ObjectKey],
) -> JobTable:
    """``table`` (the last cycle's, or None) with the jobs whose objects changed since then
    (``pods``, the pods changed since then, and the PodGroups ``changes`` has), and those the
    last session changed, built again; a new table when there was none or its source changed."""
    groups = changes.take("PodGroup")
    classes = changes.take("PriorityClass")
    source = (config.scheduler_name, config.ib_cluster_label)
    if table is None or table.source != source or classes:
        table = JobTable(source)
        pods = set(state.objects.get("Pod", {}))
        groups = set(state.objects.get("PodGroup", {}))
    live = state.objects.get("Pod", {})
    dirty = table.owned | table.spoiled
    table.spoiled.clear()
    # A job put back as it was needs no new build; close looks at it again, as at a new one.
    table.unsettled.update(k for k in table.restored if k in table.templates and table.templates[k].group)
    table.renewals += 1
    table.changed = groups | table.restored
    table.restored.clear()
    for pod_key in pods:
        old = table.pod_jobs.pop(pod_key, None)
        if old is not None:
            table.members[old].discard(pod_key)
            if not table.members[old]:
                del table.members[old]
            dirty.add(old)
        pod = live.get(pod_key)
        if isinstance(pod, Pod):
            key = pod_facts(memo, pod_key, pod).job or pod_key
            table.pod_jobs[pod_key] = key
            table.members.setdefault(key, set()).add(pod_key)
            dirty.add(key)
    present = state.objects.get("PodGroup", {})
    for key in sorted(groups - dirty):
        if not _status_only(state, table, key, present.get(key)):
            dirty.add(key)
    for key in groups | dirty:
        if key in present and key not in table.members:
            table.childless.add(key)
        else:
            table.childless.discard(key)
    table.changed |= dirty
    if dirty:
        _renew(state, config, memo, table, dirty)
    return table


def unborn(state: ClusterState, memo: Facts, table: JobTable, label: str) -> list[JobInfo]:
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
        job = group_job(state, key, group, memo=memo, label=label)
        if not job.terminating:
            if group.spec.priority_class_name:
                job.priority = class_priority(state, group.spec.priority_class_name)
            out.append(job)
    return out


def pipelined(table: JobTable) -> list[TaskInfo]:
    """Tasks pipelined by earlier cycles, in pod key order (as the pods are walked)."""
    tasks = table.templates
    held = [t for key in table.pipelining for t in tasks[key].tasks if t.node and t.status is TaskStatus.PIPELINED]
    return sorted(held, key=lambda t: t.key)
