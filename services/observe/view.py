"""ClusterView: what an operator looks at, read from a cluster's state: Volcano queues with what
they hold against their deserved share and capability, Kueue ClusterQueues with their usage
against nominal quota, and the gangs and workloads still waiting, with the reason of the last
status we decided for them.

Read-only and outside the domain: it reads objects and the statuses our decisions left in
``ClusterState`` and never runs a scheduling step, so looking cannot change a decision. A
queue's deserved share is its ``spec.deserved`` (what the capacity plugin schedules by); the
share proportion computes inside a cycle is not kept between cycles.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from domain import quantity
from domain.engine import Failing
from domain.kueue.cohort_tree import build as build_quota_tree
from domain.kueue.workloads import WorkloadIndex
from domain.lifecycle import workload as workload_lifecycle
from domain.lifecycle.pod_group import PodGroupPhase
from domain.lifecycle.workload import ConditionType as C
from domain.objects.core import GROUP_NAME_ANNOTATION, Pod
from domain.objects.kueue import ClusterQueue, Cohort, LocalQueue, Workload
from domain.objects.meta import key_of
from domain.objects.volcano import PodGroup, Queue
from domain.quantity import ResourceList
from domain.state import ClusterState

WAITING_GROUPS = frozenset({PodGroupPhase.PENDING, PodGroupPhase.INQUEUE})


@dataclass(frozen=True, slots=True)
class QueueRow:
    name: str
    state: str
    weight: int
    allocated: ResourceList  # milli-units, from the last QueueStatus decision
    deserved: ResourceList
    capability: ResourceList

    @property
    def share(self) -> float | None:
        """Volcano's share: the largest allocated/deserved ratio over the deserved resources."""
        ratios = [self.allocated.get(name, 0) / amount for name, amount in self.deserved.items() if amount > 0]
        return max(ratios) if ratios else None


@dataclass(frozen=True, slots=True)
class ClusterQueueRow:
    name: str
    cohort: str
    usage: dict[tuple[str, str], int]  # (flavor, resource) -> milli-units reserved by admitted workloads
    nominal: dict[tuple[str, str], int]
    pending: Counter[str] = field(default_factory=Counter)  # Kueue's status: active / inadmissible
    admitted: int = 0  # workloads holding quota in it


@dataclass(frozen=True, slots=True)
class WaitingRow:
    kind: str  # PodGroup or Workload
    key: str
    queue: str
    phase: str
    reason: str
    message: str
    since_seq: int
    unplaced: int = 0  # PodGroup: its pods without a node


@dataclass(frozen=True, slots=True)
class HeldRow:
    """Room a gang past its waiting bound held in the last cycle: later jobs could not use it."""

    gang: str
    nodes: int  # nodes where it holds something
    held: ResourceList  # milli-units, summed over those nodes
    starts_by: datetime | None  # its shadow time, when runtimes tell


@dataclass(frozen=True, slots=True)
class ClusterView:
    cluster: str
    next_seq: int
    queues: list[QueueRow]
    cluster_queues: list[ClusterQueueRow]
    waiting: list[WaitingRow]
    held: list[HeldRow] = field(default_factory=list)
    failing: Failing | None = None  # its cycles raising in a row (``Engine.failing``)


def view_of(state: ClusterState, failing: Failing | None = None) -> ClusterView:
    """``state`` as operators see it; ``failing``, the engine's word on its cycles raising."""
    return ClusterView(
        state.name,
        state.next_seq,
        _queues(state),
        _cluster_queues(state),
        _groups(state) + _workloads(state),
        _held(state),
        failing,
    )


def _held(state: ClusterState) -> list[HeldRow]:
    rows = []
    for room in state.held:
        taken = [amounts for _, amounts in room.nodes if any(amounts.values())]
        rows.append(HeldRow(str(room.gang), len(taken), _milli(quantity.sum_lists(taken)), room.starts_by()))
    return rows


def _milli(values: dict[str, int]) -> ResourceList:
    return {name: int(amount) for name, amount in sorted(values.items())}


def _queues(state: ClusterState) -> list[QueueRow]:
    rows = []
    for key, obj in sorted(state.of_kind("Queue").items()):
        if not isinstance(obj, Queue):
            continue
        status = state.machines.get("Queue", {}).get(key)
        reported = status.queue_reported if status is not None else None
        allocated = {name: int(quantity.parse_milli(value)) for name, value in (reported[1] if reported else ())}
        phase = reported[0] if reported else (status.phase.value if status is not None else obj.status.state)
        spec = obj.spec
        rows.append(
            QueueRow(obj.metadata.name, phase, spec.weight, allocated, _milli(spec.deserved), _milli(spec.capability))
        )
    return rows


def _cluster_queues(state: ClusterState) -> list[ClusterQueueRow]:
    queues = {o.metadata.name: o for o in state.of_kind("ClusterQueue").values() if isinstance(o, ClusterQueue)}
    if not queues:
        return []
    cohorts = {o.metadata.name: o for o in state.of_kind("Cohort").values() if isinstance(o, Cohort)}
    tree = build_quota_tree(queues, cohorts)
    index = WorkloadIndex()  # a fresh one: the cycles' own index is left alone
    for key in sorted(state.of_kind("Workload")):
        index.renew(state, key)
    usage: dict[str, Counter[tuple[str, str]]] = {name: Counter() for name in queues}
    admitted: Counter[str] = Counter()
    for info in index.holding.values():
        if info.admitted_to in usage:
            usage[info.admitted_to].update(info.usage())
            admitted[info.admitted_to] += 1
    pending: dict[str, Counter[str]] = {name: Counter() for name in queues}
    local = {key_of(o.metadata): o for o in state.of_kind("LocalQueue").values() if isinstance(o, LocalQueue)}
    for row in _workloads(state):
        local_queue = local.get(row.queue)
        if local_queue is not None and local_queue.spec.cluster_queue in pending:
            status = "inadmissible" if row.reason else "active"
            pending[local_queue.spec.cluster_queue][status] += 1
    return [
        ClusterQueueRow(
            name,
            cq.spec.cohort_of(),
            dict(sorted(usage[name].items())),
            dict(sorted(tree.queues[name].nominal.items())),
            pending[name],
            admitted[name],
        )
        for name, cq in sorted(queues.items())
    ]


def _groups(state: ClusterState) -> list[WaitingRow]:
    unplaced: Counter[str] = Counter()
    for pod in state.pods().values():
        group = pod.metadata.annotations.get(GROUP_NAME_ANNOTATION)
        if group and isinstance(pod, Pod) and pod.status.phase == "Pending" and not state.node_of(pod):
            unplaced[f"{pod.metadata.namespace}/{group}"] += 1
    rows = []
    for key, obj in sorted(state.of_kind("PodGroup").items()):
        status = state.machines.get("PodGroup", {}).get(key)
        if not isinstance(obj, PodGroup) or status is None or status.phase not in WAITING_GROUPS:
            continue
        conditions = status.reported[1] if status.reported else ()
        reason, message = next(((r, m) for t, s, r, m in conditions if t == "Unschedulable" and s == "True"), ("", ""))
        rows.append(
            WaitingRow(
                "PodGroup", key, obj.spec.queue, status.phase.value, reason, message, status.since_seq, unplaced[key]
            )
        )
    return rows


def _workloads(state: ClusterState) -> list[WaitingRow]:
    rows = []
    for key, obj in sorted(state.of_kind("Workload").items()):
        status = state.machines.get("Workload", {}).get(key)
        if not isinstance(obj, Workload) or status is None or status.phase not in workload_lifecycle.WAITS:
            continue
        if status.phase is workload_lifecycle.WorkloadPhase.QUOTA_RESERVED:
            continue  # holds its quota; admission checks are what it waits for
        condition = state.workload_view(obj).condition(C.QUOTA_RESERVED)
        reason, message = (
            (condition.reason, condition.message) if condition and condition.status == "False" else ("", "")
        )
        queue = f"{obj.metadata.namespace}/{obj.spec.queue_name}"
        rows.append(WaitingRow("Workload", key, queue, status.phase.value, reason, message, status.since_seq))
    return rows
