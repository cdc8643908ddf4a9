"""One job as the state's objects make it: its fields from its PodGroup (or a lone pod), its
tasks from its pods, each task's status from the pod and what the scheduler decided of it. The
job table (``job_table``) builds the jobs whose objects changed with these, and keeps them.
"""

from __future__ import annotations

from domain import quantity
from domain.lifecycle.job import JobPhase
from domain.lifecycle.pod_group import PodGroupPhase
from domain.lifecycle.status import MachineStatus
from domain.objects.core import Pod, PriorityClass
from domain.objects.meta import ObjectKey
from domain.objects.volcano import PodGroup
from domain.scheduler.config import SchedulerConfig
from domain.scheduler.infos import DEFAULT_QUEUE, HOLDING, JobInfo, TaskInfo, TaskStatus
from domain.scheduler.object_facts import Facts, GroupFacts, group_facts, pod_facts, seconds
from domain.state import ClusterState


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


def _is_terminating(state: ClusterState, phase: object, facts: GroupFacts) -> bool:
    """A PodGroup being deleted, or owned by a Job that is terminating or gone (SEEDS S1)."""
    if phase is PodGroupPhase.TERMINATING:
        return True
    for key, uid in facts.job_owners:
        if uid in state.tombstones or state.phase_of("Job", key) is JobPhase.TERMINATING:
            return True
    return False


def _job(state: ClusterState, key: ObjectKey, group: PodGroup | None, pod: Pod, *, memo: Facts, label: str) -> JobInfo:
    if group is None:
        return JobInfo(key, None, DEFAULT_QUEUE, 1, {}, None, seconds(pod.metadata.creation_timestamp),
                       PodGroupPhase.INQUEUE)  # fmt: skip
    return group_job(state, key, group, memo=memo, label=label)


def group_job(state: ClusterState, key: ObjectKey, group: PodGroup, *, memo: Facts, label: str) -> JobInfo:
    phase = state.phase_of("PodGroup", key)  # a job's key is its PodGroup's
    spec = group.spec
    facts = group_facts(memo, group, label)
    return JobInfo(
        key, group, spec.queue or DEFAULT_QUEUE, spec.min_member, dict(spec.min_task_member),
        None if spec.min_resources is None else dict(spec.min_resources), facts.created,
        phase if isinstance(phase, PodGroupPhase) else PodGroupPhase.PENDING,
        topology=facts.topology, terminating=_is_terminating(state, phase, facts),
    )  # fmt: skip


def class_priority(state: ClusterState, name: str) -> int:
    """The value of the PriorityClass ``name``; for an unknown one, the globalDefault class's value
    (the lowest name when several claim it), else 0, as Volcano's cache gives a PodGroup."""
    classes = state.objects.get("PriorityClass", {})
    named = classes.get(name)
    if isinstance(named, PriorityClass):
        return named.value
    defaults = sorted((k, c.value) for k, c in classes.items() if isinstance(c, PriorityClass) and c.global_default)
    return defaults[0][1] if defaults else 0


def file_pod(
    state: ClusterState, config: SchedulerConfig, memo: Facts, jobs: dict[ObjectKey, JobInfo], pod_key: ObjectKey
) -> None:
    """Add the pod ``pod_key`` to its job in ``jobs`` (making the job), unless it is not ours."""
    pod = state.pods()[pod_key]
    machine = state.machines.get("Pod", {}).get(pod_key)  # ``state.status_of(pod)``, without the key again
    node = state.node_of(pod, pod_key)
    ours = pod.spec.scheduler_name == config.scheduler_name
    facts = pod_facts(memo, pod_key, pod)
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
